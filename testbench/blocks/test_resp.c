/* Block test of resp, the responder (model/resp.h), alone: hand-made request packets go in
 * through hm_resp_rx; the tests check the ACKs, NAKs and READ responses handed to the port
 * stub, the receive CQEs and affiliated events posted, what reached the fake host memory, the
 * QP errors raised, the responder's part of the QP and the steps the engine traced. Receive
 * WQEs are read from the fake memory; key checks pass unless a test scripts a failure. The
 * last test checks that every step of RESP_STEPS is reached. */
#include "model/resp.h"
#include "testbench/blocks/stubs.h"

#include <string.h>

#define RQ 0x8000u   /* the receive ring */
#define RBUF 0x3000u /* the receive buffer its WQEs name */
#define MEM 0x4000u  /* READ, WRITE and atomic targets */
#define DEST 0x66u

static uint8_t data[4096];

/* A QP (QPN 4, or the next free one) of type in state, expecting PSN 5, with receive WQEs
 * 0..nrecv-1 posted, each one scatter entry of 512 bytes at RBUF + 512 * i. */
static struct hm_qp *resp_qp(uint8_t type, uint8_t state, uint32_t nrecv)
{
	uint32_t qpn = 4;
	struct hm_qp *qp;

	while (blk_dev->dp->qps[qpn])
		qpn++; /* a second QP of a test takes the next QPN */
	qp = blk_qp(qpn, type, state, 4, 128, 8);

	qp->rq = RQ;
	qp->attr.dest_qpn = DEST;
	qp->attr.access_flags = HCA_ACCESS_REMOTE_READ | HCA_ACCESS_REMOTE_WRITE |
				HCA_ACCESS_REMOTE_ATOMIC;
	qp->attr.qkey = 0x11;
	qp->attr.min_rnr_timer = 12;
	qp->attr.path_mig_state = HCA_MIG_ARMED;
	qp->resp.epsn = 5;
	for (uint32_t i = 0; i < 8; i++) {
		struct hca_wqe_data *sg = (void *)(blk_mem + RQ + i * qp->rq_stride);

		sg[0] = (struct hca_wqe_data){ .addr = RBUF + 512 * i, .lkey = 1, .length = 512 };
		sg[1] = (struct hca_wqe_data){ .lkey = HCA_LKEY_END };
	}
	qp->rq_pi = nrecv;
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + 5);
	for (unsigned i = 0; i < 4096; i++)
		blk_mem[MEM + i] = (uint8_t)(i * 3 + 1);
	return qp;
}

static struct hm_pkt pkt(uint8_t op, uint32_t psn, uint32_t len)
{
	return (struct hm_pkt){ .opcode = op, .psn = psn, .slid = 9, .sl = 2, .dqpn = 4,
				.payload = data, .paylen = len, .ackreq = true };
}

/* hm_resp_rx from t = 0, marking DONE, where the engine always stops (not traced). */
static sim_time_t rx(struct hm_qp *qp, struct hm_pkt p)
{
	sim_time_t t;

	blk_steps_clear();
	t = hm_resp_rx(blk_dev, qp, &p, 0);
	blk_reach("resp", "DONE");
	return t;
}

#define PATH "CHK_TYPE COMM_EST CHK_PSN CHK_OP_SEQ CLASSIFY"

BLK_TEST(resp, an_rc_send_is_scattered_completed_and_acknowledged)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 1);
	struct hm_pkt p = pkt(HM_OP_SEND_ONLY, 5, 100);
	sim_time_t t;

	p.se = true;
	t = rx(qp, p);
	cr_assert_str_eq(blk_steps(), PATH " SEND COMPLETE");
	cr_assert_geq(t, sim_clock_after(&blk_dev->core, 0, blk_dev->cfg.resp_cycles));
	cr_assert_eq(blk.ndma, 1, "the receive WQE read");
	cr_assert_eq(blk.dma[0].kind, BLK_DMA_WQE);
	cr_assert_eq(blk.dma[0].client, 1 /* HM_DMA_RQ_WQE */);
	cr_assert_eq(blk.dma[0].addr, RQ);
	cr_assert_eq(memcmp(blk_mem + RBUF, data, 100), 0, "scattered byte-exact");
	cr_assert_eq(blk.ncqes, 1);
	cr_assert_eq(blk.cqes[0].cqn, 2, "the receive CQ");
	cr_assert_eq(blk.cqes[0].cqe.opcode, HCA_CQE_OP_RECV);
	cr_assert_eq(blk.cqes[0].cqe.status, HCA_WC_SUCCESS);
	cr_assert_eq(blk.cqes[0].cqe.byte_len, 100);
	cr_assert_eq(blk.cqes[0].cqe.wqe_index, 0);
	cr_assert_eq(blk.cqes[0].cqe.src_qp, DEST);
	cr_assert_eq(blk.cqes[0].cqe.slid, 9);
	cr_assert_eq(blk.cqes[0].cqe.sl, 2);
	cr_assert(blk.cqes[0].solicited);
	cr_assert_eq(blk.npkts, 1);
	cr_assert_eq(blk.pkts[0].p.opcode, HM_OP_ACKNOWLEDGE);
	cr_assert_eq(blk.pkts[0].p.psn, 5);
	cr_assert_eq(blk.pkts[0].p.aeth_syndrome, HM_AETH_ACK);
	cr_assert_eq(blk.pkts[0].p.aeth_msn, 1);
	cr_assert_eq(blk.pkts[0].p.dlid, 9, "back to the requester");
	cr_assert_eq(blk.pkts[0].p.dqpn, DEST);
	cr_assert_lt(blk_called("hm_cqe_post", 0), blk_called("hm_port_send", 0), "CQE, then ACK");
	cr_assert_eq(qp->resp.epsn, 6);
	cr_assert_eq(qp->resp.msn, 1);
	cr_assert_eq(qp->resp.rq_ci, 1);
	cr_assert_not(qp->resp.in_msg);
	cr_assert_eq(blk.neqes, 0, "no COMM_EST in RTS");
}

BLK_TEST(resp, the_first_packet_in_rtr_raises_comm_est_once)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTR, 2);

	rx(qp, pkt(HM_OP_SEND_ONLY, 5, 8));
	rx(qp, pkt(HM_OP_SEND_ONLY, 6, 8));
	cr_assert_eq(blk.neqes, 1);
	cr_assert_eq(blk.eqes[0].type, HCA_EQE_QP_EVENT);
	cr_assert_eq(blk.eqes[0].subtype, HCA_QP_EV_COMM_EST);
	cr_assert_eq(blk.eqes[0].data0, 4);
	cr_assert(qp->resp.comm_est);
}

BLK_TEST(resp, a_multi_packet_send_fills_one_receive_wqe)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 1);
	struct hm_pkt p = pkt(HM_OP_SEND_FIRST, 5, 256);

	p.ackreq = false;
	rx(qp, p);
	cr_assert(qp->resp.in_msg);
	cr_assert_eq(blk.npkts + blk.ncqes, 0);
	p = pkt(HM_OP_SEND_LAST_IMM, 6, 100);
	p.payload = data + 256;
	p.imm = 0xbeef;
	rx(qp, p);
	cr_assert_eq(memcmp(blk_mem + RBUF, data, 356), 0);
	cr_assert_eq(blk.cqes[0].cqe.byte_len, 356);
	cr_assert_eq(blk.cqes[0].cqe.wc_flags & HCA_WC_F_IMM, HCA_WC_F_IMM);
	cr_assert_eq(blk.cqes[0].cqe.imm_data, __builtin_bswap32(0xbeef), "wire bytes");
	cr_assert_eq(blk.pkts[0].p.psn, 6);
}

BLK_TEST(resp, a_gap_earns_one_sequence_nak_then_silence)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 1);

	rx(qp, pkt(HM_OP_SEND_ONLY, 7, 8));
	cr_assert_str_eq(blk_steps(), "CHK_TYPE COMM_EST CHK_PSN");
	cr_assert_eq(blk.npsn, 1);
	cr_assert_eq(blk.psn_in[0].psn, 7);
	cr_assert_eq(blk.psn_in[0].epsn, 5);
	cr_assert_eq(blk.npkts, 1);
	cr_assert_eq(blk.pkts[0].p.aeth_syndrome, HM_AETH_NAK_SEQ);
	cr_assert_eq(blk.pkts[0].p.psn, 5, "the PSN expected");
	cr_assert_eq(blk.nack_sent, 1);
	cr_assert_eq(blk.ctr_qp[0].a, HM_CTR_RQ_OOS);
	cr_assert(qp->resp.nak_sent);
	rx(qp, pkt(HM_OP_SEND_ONLY, 8, 8));
	cr_assert_eq(blk.npkts, 1, "one NAK per gap");
	cr_assert(blk.psn_in[1].nak_sent);
	rx(qp, pkt(HM_OP_SEND_ONLY, 5, 8));
	cr_assert_not(qp->resp.nak_sent, "the expected PSN clears it");
	cr_assert_eq(qp->stats.naks_sent, 1);
}

BLK_TEST(resp, duplicates_are_answered_again_never_executed)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 1);
	struct hm_pkt r = pkt(HM_OP_READ_REQUEST, 5, 0), a = pkt(HM_OP_FETCH_ADD, 6, 0);

	r.reth_va = MEM;
	r.reth_dmalen = 100;
	rx(qp, r);
	a.atomic_va = MEM + 1024;
	a.atomic_swap_add = 1;
	rx(qp, a);
	cr_assert_eq(qp->resp.epsn, 7);
	cr_assert_eq(qp->resp.msn, 2);
	rx(qp, r);
	cr_assert_str_eq(blk_steps(), "CHK_TYPE COMM_EST CHK_PSN DUPLICATE");
	cr_assert_eq(blk.ctr_qp[0].a, HM_CTR_RQ_DUP);
	cr_assert_eq(blk.pkts[2].p.opcode, HM_OP_READ_RESPONSE_ONLY, "read again");
	cr_assert_eq(qp->resp.epsn, 7, "unchanged");
	cr_assert_eq(qp->resp.msn, 2);
	rx(qp, a);
	cr_assert_eq(blk.pkts[3].p.opcode, HM_OP_ATOMIC_ACKNOWLEDGE);
	cr_assert_eq(blk.pkts[3].p.atomic_orig, blk.pkts[1].p.atomic_orig, "the saved result");
	cr_assert_eq(blk.pkts[3].p.aeth_msn, 2);
	cr_assert_eq(blk_mem[MEM + 1024], 0x01 + 1, "added once");
	rx(qp, pkt(HM_OP_SEND_ONLY, 4, 8));
	cr_assert_eq(blk.pkts[4].p.opcode, HM_OP_ACKNOWLEDGE);
	cr_assert_eq(blk.pkts[4].p.psn, 6, "the last PSN executed");
	cr_assert_eq(blk.ncqes, 0);
}

BLK_TEST(resp, a_read_is_answered_one_mtu_per_response_or_nakd_without_access)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 0);
	struct hm_pkt r = pkt(HM_OP_READ_REQUEST, 5, 0);

	r.reth_va = MEM;
	r.reth_rkey = 0x77;
	r.reth_dmalen = 600;
	rx(qp, r);
	cr_assert_str_eq(blk_steps(), PATH " READ");
	cr_assert_eq(blk.npkts, 3);
	cr_assert_eq(blk.pkts[0].p.opcode, HM_OP_READ_RESPONSE_FIRST);
	cr_assert_eq(blk.pkts[1].p.opcode, HM_OP_READ_RESPONSE_MIDDLE);
	cr_assert_eq(blk.pkts[2].p.opcode, HM_OP_READ_RESPONSE_LAST);
	cr_assert_eq(blk.pkts[2].p.psn, 7);
	cr_assert_eq(blk.pkts[2].p.paylen, 88);
	cr_assert_eq(memcmp(blk.pkts[1].payload, blk_mem + MEM + 256, 256), 0);
	cr_assert_eq(blk.pkts[0].p.aeth_msn, 1);
	cr_assert_eq(qp->resp.epsn, 8);
	cr_assert_eq(blk.nmkey, 1);
	qp->attr.access_flags = 0;
	r.psn = 8;
	rx(qp, r);
	cr_assert_eq(blk.pkts[3].p.aeth_syndrome, HM_AETH_NAK_REM_ACCESS);
	cr_assert_eq(blk.eqes[0].subtype, HCA_QP_EV_ACCESS_ERR);
	cr_assert_eq(blk.qp_error[0].a, HCA_QPS_ERR);
	cr_assert_eq(blk.ncqes, 0, "no receive WQE in use");
}

BLK_TEST(resp, an_atomic_executes_once_and_checks_alignment)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 0);
	struct hm_pkt a = pkt(HM_OP_COMPARE_SWAP, 5, 0);
	uint64_t v = 42, got;

	memcpy(blk_mem + MEM, &v, 8);
	a.atomic_va = MEM;
	a.atomic_compare = 42;
	a.atomic_swap_add = 7;
	rx(qp, a);
	cr_assert_str_eq(blk_steps(), PATH " ATOMIC");
	memcpy(&got, blk_mem + MEM, 8);
	cr_assert_eq(got, 7, "swapped");
	cr_assert_eq(blk.pkts[0].p.atomic_orig, 42);
	cr_assert_eq(blk.pkts[0].p.psn, 5);
	cr_assert(qp->resp.atomics[0].valid);
	cr_assert_eq(qp->resp.atomic_next, 1);
	a.psn = 6;
	a.atomic_va = MEM + 4;
	rx(qp, a);
	cr_assert_eq(blk.pkts[1].p.aeth_syndrome, HM_AETH_NAK_INV_REQ, "not 8-byte aligned");
	cr_assert_eq(blk.eqes[0].subtype, HCA_QP_EV_REQ_ERR);
}

BLK_TEST(resp, a_failed_atomic_read_is_a_remote_operational_error)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 0);
	struct hm_pkt a = pkt(HM_OP_FETCH_ADD, 5, 0);

	a.atomic_va = MEM;
	blk_do.dma_fail = true;
	rx(qp, a);
	cr_assert_eq(blk.pkts[0].p.aeth_syndrome, HM_AETH_NAK_REM_OP);
	blk_do.dma_fail = false;
	blk_do.mkey = HM_MKEY_BAD_KEY;
	a.psn = 5;
	qp->state = HCA_QPS_RTS;
	rx(qp, a);
	cr_assert_eq(blk.pkts[1].p.aeth_syndrome, HM_AETH_NAK_REM_ACCESS, "a bad rkey");
}

BLK_TEST(resp, a_write_lands_where_its_reth_says)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 1);
	struct hm_pkt w = pkt(HM_OP_WRITE_FIRST, 5, 256);

	w.reth_va = MEM + 100;
	w.reth_rkey = 0x88;
	w.reth_dmalen = 300;
	w.ackreq = false;
	rx(qp, w);
	cr_assert_str_eq(blk_steps(), PATH " WRITE COMPLETE");
	cr_assert_eq(qp->resp.wr_left, 44);
	w = pkt(HM_OP_WRITE_LAST_IMM, 6, 44);
	w.payload = data + 256;
	w.imm = 3;
	rx(qp, w);
	cr_assert_eq(memcmp(blk_mem + MEM + 100, data, 300), 0);
	cr_assert_eq(blk.dma[0].kind, BLK_DMA_WR_CT, "written as it comes");
	cr_assert_eq(blk.ncqes, 1, "WRITE with immediate consumes a receive WQE");
	cr_assert_eq(blk.cqes[0].cqe.opcode, HCA_CQE_OP_RECV_RDMA_WITH_IMM);
	cr_assert_eq(blk.cqes[0].cqe.byte_len, 300);
	cr_assert_eq(blk.pkts[0].p.psn, 6);
	/* a WRITE longer than its RETH said */
	w = pkt(HM_OP_WRITE_ONLY, 7, 100);
	w.reth_va = MEM;
	w.reth_dmalen = 50;
	rx(qp, w);
	cr_assert_eq(blk.pkts[1].p.aeth_syndrome, HM_AETH_NAK_INV_REQ);
	cr_assert_eq(qp->state, HCA_QPS_ERR);
}

BLK_TEST(resp, a_write_without_remote_write_access_or_a_good_rkey_is_refused)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 0);
	struct hm_pkt w = pkt(HM_OP_WRITE_ONLY, 5, 8);

	w.reth_dmalen = 8;
	qp->attr.access_flags = HCA_ACCESS_REMOTE_READ;
	rx(qp, w);
	cr_assert_eq(blk.pkts[0].p.aeth_syndrome, HM_AETH_NAK_REM_ACCESS);
	qp->state = HCA_QPS_RTS;
	qp->attr.access_flags = HCA_ACCESS_REMOTE_WRITE;
	blk_do.mkey = HM_MKEY_BAD_RANGE;
	rx(qp, w);
	cr_assert_eq(blk.pkts[1].p.aeth_syndrome, HM_AETH_NAK_REM_ACCESS);
	cr_assert_eq(blk.ndma, 0, "nothing written");
}

BLK_TEST(resp, an_opcode_out_of_sequence_is_an_invalid_request)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 1);

	rx(qp, pkt(HM_OP_SEND_MIDDLE, 5, 256));
	cr_assert_str_eq(blk_steps(), "CHK_TYPE COMM_EST CHK_PSN CHK_OP_SEQ");
	cr_assert_eq(blk.pkts[0].p.aeth_syndrome, HM_AETH_NAK_INV_REQ);
	cr_assert_eq(blk.pkts[0].p.psn, 5);
	cr_assert_eq(blk.eqes[0].subtype, HCA_QP_EV_REQ_ERR);
	cr_assert_eq(blk.qp_error[0].a, HCA_QPS_ERR);
}

BLK_TEST(resp, a_send_longer_than_its_receive_wqe_fails_it)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 1);

	rx(qp, pkt(HM_OP_SEND_ONLY, 5, 600));
	cr_assert_eq(blk.pkts[0].p.aeth_syndrome, HM_AETH_NAK_INV_REQ);
	cr_assert_eq(blk.ncqes, 1);
	cr_assert_eq(blk.cqes[0].cqe.status, HCA_WC_REM_INV_REQ_ERR);
	cr_assert_eq(qp->resp.rq_ci, 1, "the receive WQE is consumed");
}

BLK_TEST(resp, no_receive_wqe_is_an_rnr_nak_on_rc_and_a_drop_on_uc)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 0);

	rx(qp, pkt(HM_OP_SEND_ONLY, 5, 8));
	cr_assert_eq(blk.pkts[0].p.aeth_syndrome, HM_AETH_RNR | 12, "its own min_rnr_timer");
	cr_assert_eq(blk.pkts[0].p.psn, 5);
	cr_assert_eq(qp->resp.epsn, 5, "refused before any effect");
	cr_assert_eq(blk.nqp_error, 0);
	qp = resp_qp(HCA_QPT_UC, HCA_QPS_RTS, 0);
	rx(qp, pkt(HM_OP_UC | HM_OP_SEND_ONLY, 5, 8));
	cr_assert_eq(blk.npkts, 1, "UC never NAKs");
	cr_assert_eq(blk_dev->dp->rx_dropped, 1);
	cr_assert(qp->resp.uc_drop);
}

BLK_TEST(resp, an_unreadable_receive_wqe_is_fatal)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 1);

	blk_do.wqe_read_fail = true;
	rx(qp, pkt(HM_OP_SEND_ONLY, 5, 8));
	cr_assert_eq(blk.nqp_fatal, 1);
	cr_assert_eq(blk.npkts, 0, "no RNR NAK from a QP in ERR");
}

BLK_TEST(resp, a_uc_gap_loses_the_message_up_to_the_next_first)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_UC, HCA_QPS_RTS, 2);

	rx(qp, pkt(HM_OP_UC | HM_OP_SEND_MIDDLE, 7, 256));
	cr_assert_str_eq(blk_steps(), "CHK_TYPE COMM_EST CHK_PSN");
	cr_assert(qp->resp.uc_drop);
	cr_assert_eq(blk_dev->dp->rx_dropped, 1);
	cr_assert_eq(qp->resp.epsn, 8);
	rx(qp, pkt(HM_OP_UC | HM_OP_SEND_ONLY, 8, 8));
	cr_assert_not(qp->resp.uc_drop);
	cr_assert_eq(blk.ncqes, 1);
	cr_assert_eq(blk.npkts, 0, "no ACKs on UC");
}

BLK_TEST(resp, a_uc_read_request_is_invalid_and_dropped)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_UC, HCA_QPS_RTS, 0);

	rx(qp, pkt(HM_OP_READ_REQUEST, 5, 0));
	cr_assert_str_eq(blk_steps(), PATH);
	cr_assert_eq(blk.npkts, 0);
	cr_assert(qp->resp.uc_drop);
	cr_assert_eq(blk.nqp_error, 0, "no receive WQE in use: only dropped");
}

BLK_TEST(resp, a_ud_datagram_takes_a_receive_wqe_behind_its_grh_room)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_UD, HCA_QPS_RTS, 1);
	struct hm_pkt p = pkt(HM_OP_UD_SEND_ONLY, 99, 64);

	p.deth_qkey = 0x11;
	p.deth_sqpn = 0x321;
	rx(qp, p);
	cr_assert_str_eq(blk_steps(), "CHK_TYPE");
	cr_assert_eq(memcmp(blk_mem + RBUF + 40, data, 64), 0, "after the 40 bytes of GRH room");
	cr_assert_eq(blk.cqes[0].cqe.byte_len, 104);
	cr_assert_eq(blk.cqes[0].cqe.src_qp, 0x321);
	p.deth_qkey = 0x12;
	rx(qp, p);
	cr_assert_eq(blk.ncqes, 1, "a Q_Key mismatch drops it");
	cr_assert_eq(blk_dev->dp->rx_dropped, 1);
	p.deth_qkey = 0x11;
	rx(qp, p);
	cr_assert_eq(blk_dev->dp->rx_dropped, 2, "no receive WQE left");
}

BLK_TEST(resp, the_next_receive_wqe_is_prefetched_and_used)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 2);

	hm_rwqe_prefetch(blk_dev, qp, 0);
	cr_assert_eq(blk.ndma, 1);
	cr_assert(qp->resp.rpf_valid);
	cr_assert_eq(qp->resp.rpf_idx, 0);
	hm_rwqe_prefetch(blk_dev, qp, 0);
	cr_assert_eq(blk.ndma, 1, "held already");
	rx(qp, pkt(HM_OP_SEND_ONLY, 5, 8));
	cr_assert_eq(blk.ndma, 2, "no read for WQE 0, the prefetch of WQE 1");
	cr_assert_eq(blk.dma[1].addr, RQ + qp->rq_stride);
	cr_assert_eq(qp->resp.rpf_idx, 1);
	cr_assert_eq(memcmp(blk_mem + RBUF, data, 8), 0);
}

BLK_TEST(resp, an_srq_below_its_limit_raises_its_event)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 0);
	struct hm_srq srq = { .valid = true, .pdn = 7, .ring = RQ, .entries = 8, .stride = 64,
			      .pi = 3, .limit = 3 };

	qp->has_srq = true;
	qp->srqn = 2;
	blk_do.srq = &srq;
	rx(qp, pkt(HM_OP_SEND_ONLY, 5, 8));
	cr_assert_eq(srq.ci, 1);
	cr_assert_eq(srq.limit, 0, "disarmed");
	cr_assert_eq(blk.eqes[0].type, HCA_EQE_SRQ_LIMIT);
	cr_assert_eq(blk.eqes[0].data0, 2);
	cr_assert_eq(blk.dma[0].client, 2 /* HM_DMA_SRQ_WQE */);
	cr_assert_eq(blk.sges[0].pdn, 7, "the SRQ's PD");
	cr_assert_eq(blk.cqes[0].cqe.srqn, 2);
	blk_do.wqe_read_fail = true;
	rx(qp, pkt(HM_OP_SEND_ONLY, 6, 8));
	cr_assert_eq(blk.nsrq_fatal, 1);
}

BLK_TEST(resp, a_flush_completes_posted_receives_or_raises_last_wqe_reached)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_ERR, 3);

	qp->resp.rq_ci = 1;
	hm_resp_flush(blk_dev, qp, 0);
	cr_assert_eq(blk.ncqes, 2);
	cr_assert_eq(blk.cqes[0].cqe.wqe_index, 1);
	cr_assert_eq(blk.cqes[1].cqe.wqe_index, 2);
	cr_assert_eq(blk.cqes[1].cqe.status, HCA_WC_WR_FLUSH_ERR);
	cr_assert_eq(qp->resp.rq_ci, 3);
	qp->has_srq = true;
	hm_resp_flush(blk_dev, qp, 0);
	hm_resp_flush(blk_dev, qp, 0);
	cr_assert_eq(blk.neqes, 1, "once");
	cr_assert_eq(blk.eqes[0].subtype, HCA_QP_EV_LAST_WQE_REACHED);
}

BLK_TEST(resp, the_qp_commands_change_the_responders_part)
{
	struct hm_qp *qp = resp_qp(HCA_QPT_RC, HCA_QPS_RTS, 1);

	hm_resp_modify(qp, &(struct hca_qp_attr){ .rq_psn = 0x2000010 }, HCA_QPA_RQ_PSN);
	cr_assert_eq(qp->resp.epsn, 0x10);
	qp->resp.msn = 4;
	qp->resp.atomics[3].valid = true;
	hm_resp_reset(qp);
	cr_assert_eq(qp->resp.epsn + qp->resp.msn + qp->resp.rq_ci, 0);
	cr_assert_not(qp->resp.atomics[3].valid, "no result survives a reset");
	hm_resp_destroy(qp);
	cr_assert_null(qp->resp.rsge);
	hm_resp_create(qp);
	cr_assert_not_null(qp->resp.rpf_buf);
}

Test(resp, every_step_is_reached)
{
	size_t n;
	const char *const *names = hm_resp_step_names(&n);

	cr_assert_str_eq(names[n - 1], "DONE");
	blk_every_step("resp", names, n);
}
