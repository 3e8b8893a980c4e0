/* Block test of req, the requester (model/req.h), alone: each test posts WQEs into the
 * fetcher's buffer (the fetcher is a stub that answers HM_WQE_READY), runs the engine one
 * packet at a time through hm_req_run and checks the packets handed to the port stub, the
 * calls to the completer and the QP-wide flows, the requester's part of the QP and the steps
 * the engine traced. The last test checks that every step of REQ_STEPS is reached. */
#include "model/req.h"
#include "model/wqe_fetch.h" /* HM_WQE_*: what the fetcher stub answers */
#include "testbench/blocks/stubs.h"

#include <endian.h>
#include <string.h>

#define DATA 0x2000u /* gather buffers in the fake memory */
#define STRIDE 256u
#define DEST 0x55u   /* the QP's remote QPN */

static struct hm_qp *rc_qp(uint8_t type)
{
	struct hm_qp *qp = blk_qp(3, type, HCA_QPS_RTS, 8, STRIDE, 4);

	qp->attr.dest_qpn = DEST;
	qp->attr.max_rd_atomic = 4;
	qp->attr.qkey = 0x1234;
	qp->attr.path_mig_state = HCA_MIG_ARMED;
	qp->req.sq_psn = qp->req.sent_psn = 10;
	for (unsigned i = 0; i < 4096; i++)
		blk_mem[DATA + i] = (uint8_t)(i * 7 + 1);
	return qp;
}

/* Post a WQE (one gather entry of len bytes at DATA, or inline) at sq_pi and ring for it. */
static struct hca_wqe_ctrl *post(struct hm_qp *qp, uint8_t op, uint8_t flags, uint32_t len)
{
	uint8_t *w = qp->fetch.wqe_buf + (size_t)(qp->sq_pi % qp->sq_entries) * STRIDE;
	struct hca_wqe_ctrl *c = (void *)w;
	struct hca_wqe_rdma *rd = (void *)(w + 16);
	struct hca_wqe_data *sg = (void *)(w + HCA_WQE_BASE_BYTES);

	memset(w, 0, STRIDE);
	c->opcode = op;
	c->flags = flags;
	c->wqe_index = (uint16_t)qp->sq_pi;
	if (flags & HCA_WQE_F_INLINE) {
		c->inline_len = len;
		memcpy(w + HCA_WQE_BASE_BYTES, blk_mem + DATA, len);
	} else {
		c->num_sge = 1;
		*sg = (struct hca_wqe_data){ .addr = DATA, .lkey = 0x100, .length = len };
	}
	rd->remote_addr = 0xabc000;
	rd->rkey = 0x777;
	rd->compare_add = 5;
	rd->swap = 9;
	qp->sq_pi++;
	return c;
}

/* hm_req_run from *t, marking the state the engine stopped in (not traced) from its result:
 * false SKIP; true with a packet SENT, without one FAILED. */
static bool run(struct hm_qp *qp, sim_time_t *t)
{
	unsigned n = blk.npkts;
	bool r;

	blk_steps_clear();
	r = hm_req_run(blk_dev, qp, t);
	blk_reach("req", !r ? "SKIP" : blk.npkts > n ? "SENT" : "FAILED");
	return r;
}

/* When the port stub says p's last bit leaves. */
static sim_time_t end_of(const struct blk_pkt *p)
{
	return (p->need > p->t ? p->need : p->t) + blk_do.wire_ps;
}

static bool run0(struct hm_qp *qp)
{
	sim_time_t t = 0;

	return run(qp, &t);
}

#define FIRST_STEPS "CHK_QUEUE CHK_STATE FETCH CHK_RD_ATOMIC CHK_FENCE HEADERS"
#define NEXT_STEPS "CHK_QUEUE CHK_STATE CHK_RD_ATOMIC CHK_FENCE HEADERS"

BLK_TEST(req, an_rc_send_goes_out_one_mtu_per_packet)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);
	struct blk_pkt *p;

	post(qp, HCA_WQE_OP_SEND, HCA_WQE_F_SIGNALED | HCA_WQE_F_SOLICITED, 300);
	cr_assert(run0(qp));
	cr_assert_str_eq(blk_steps(), FIRST_STEPS " BUILD_SEND XMIT ARM_TIMER");
	cr_assert_eq(blk.nfetch, 1);
	cr_assert_eq(blk.fetch[0].a, 0, "WQE 0 fetched");
	cr_assert_eq(blk.ntrack, 1);
	cr_assert_eq(blk.track[0].a, 0);
	cr_assert_eq(blk.track[0].b, 10, "its progress mark starts at its first PSN");
	cr_assert_eq(blk.npkts, 1);
	p = &blk.pkts[0];
	cr_assert_eq(p->port, 1);
	cr_assert_eq(p->p.opcode, HM_OP_SEND_FIRST);
	cr_assert_eq(p->p.psn, 10);
	cr_assert_eq(p->p.dqpn, DEST);
	cr_assert_eq(p->p.slid, 1);
	cr_assert_eq(p->p.paylen, 256);
	cr_assert_eq(memcmp(p->payload, blk_mem + DATA, 256), 0, "gathered byte-exact");
	cr_assert_not(p->p.ackreq);
	cr_assert_not(p->p.se);
	cr_assert_not(p->p.migreq, "path ARMED");
	cr_assert_eq(blk.ntimer, 1, "the ACK timer, from the packet's departure");
	cr_assert_eq(blk.timer[0].a, end_of(p));
	cr_assert_eq(qp->req.flight[0].first_psn, 10);
	cr_assert_eq(qp->req.flight[0].last_psn, 11);
	cr_assert_eq(qp->req.flight[0].len, 300);
	cr_assert(qp->req.flight[0].signaled);
	cr_assert(qp->req.cur_started);
	cr_assert_eq(qp->req.cur_off, 256);
	cr_assert_eq(qp->req.sq_psn, 11);
	cr_assert_eq(qp->req.sent_psn, 11);
	cr_assert_eq(qp->stats.tx_pkts, 1);
	cr_assert(hm_req_more(qp));

	qp->tmr.on = true; /* the completer's timer runs now */
	cr_assert(run0(qp));
	cr_assert_str_eq(blk_steps(), NEXT_STEPS " BUILD_SEND XMIT ADVANCE ARM_TIMER");
	p = &blk.pkts[1];
	cr_assert_eq(p->p.opcode, HM_OP_SEND_LAST);
	cr_assert_eq(p->p.psn, 11);
	cr_assert_eq(p->p.paylen, 44);
	cr_assert_eq(memcmp(p->payload, blk_mem + DATA + 256, 44), 0);
	cr_assert(p->p.ackreq, "the last packet of an RC message asks for an ACK");
	cr_assert(p->p.se);
	cr_assert_eq(blk.ntimer, 1, "a running timer is left alone");
	cr_assert_eq(blk.nsent, 0, "RC waits for the completer");
	cr_assert_eq(qp->req.sq_next, 1);
	cr_assert_not(qp->req.cur_started);
	cr_assert_eq(qp->req.sent_psn, 12);
	cr_assert_not(hm_req_more(qp));

	cr_assert_not(run0(qp), "nothing to send");
	cr_assert_str_eq(blk_steps(), "CHK_QUEUE");
}

BLK_TEST(req, a_uc_send_with_immediate_completes_when_it_has_left)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_UC);
	struct hca_wqe_ctrl *c = post(qp, HCA_WQE_OP_SEND_IMM, HCA_WQE_F_INLINE, 100);

	c->imm_data = htobe32(0xcafe);
	cr_assert(run0(qp));
	cr_assert_str_eq(blk_steps(), FIRST_STEPS " BUILD_SEND XMIT ADVANCE ARM_TIMER");
	cr_assert_eq(blk.pkts[0].p.opcode, HM_OP_UC | HM_OP_SEND_ONLY_IMM);
	cr_assert_eq(blk.pkts[0].p.imm, 0xcafe);
	cr_assert_eq(blk.pkts[0].p.paylen, 100);
	cr_assert_eq(memcmp(blk.pkts[0].payload, blk_mem + DATA, 100), 0, "inline data");
	cr_assert_eq(blk.nsges, 0, "inline: no gather");
	cr_assert_not(blk.pkts[0].p.ackreq);
	cr_assert_eq(blk.nsent, 1);
	cr_assert_eq(blk.sent[0].a, 0, "WQE 0 completes locally");
	cr_assert_eq(blk.sent[0].b, end_of(&blk.pkts[0]), "when its last bit leaves");
	cr_assert_eq(blk.ntimer, 0, "no ACK timer on UC");
}

BLK_TEST(req, a_ud_send_carries_its_deth_and_the_qps_own_qkey_when_privileged)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_UD);
	struct hca_wqe_ctrl *c = post(qp, HCA_WQE_OP_SEND, 0, 64);
	struct hca_wqe_ud *ud = (void *)(c + 1);

	memset(ud, 0, sizeof(*ud));
	ud->remote_qpn = 0x99;
	ud->remote_qkey = HCA_QKEY_PRIVILEGED | 1;
	ud->av.dlid = 0x22;
	ud->av.sl = 3;
	ud->av.src_path_bits = 2;
	cr_assert(run0(qp));
	cr_assert_eq(blk.pkts[0].p.opcode, HM_OP_UD_SEND_ONLY);
	cr_assert_eq(blk.pkts[0].p.dqpn, 0x99);
	cr_assert_eq(blk.pkts[0].p.deth_qkey, 0x1234);
	cr_assert_eq(blk.pkts[0].p.deth_sqpn, 3);
	cr_assert_eq(blk.pkts[0].p.dlid, 0x22);
	cr_assert_eq(blk.pkts[0].p.sl, 3);
	cr_assert_eq(blk.pkts[0].p.slid, 1 | 2, "the port's LID with the path bits");
	cr_assert_eq(blk.pkts[0].p.hop_limit, 64);
	cr_assert_eq(blk.nsent, 1);
	ud->remote_qkey = 0x42;
	post(qp, HCA_WQE_OP_SEND, 0, 64);
	memcpy(qp->fetch.wqe_buf + STRIDE + 16, ud, sizeof(*ud));
	cr_assert(run0(qp));
	cr_assert_eq(blk.pkts[1].p.deth_qkey, 0x42, "the WQE's own");
}

BLK_TEST(req, an_rdma_write_names_its_target_on_the_first_packet)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);

	qp->attr.path_mig_state = HCA_MIG_MIGRATED;
	qp->attr.pkey_index = 1;
	blk_dev->ports[0].pkeys[1] = 0x8001;
	post(qp, HCA_WQE_OP_RDMA_WRITE, 0, 600);
	for (int i = 0; i < 3; i++)
		cr_assert(run0(qp));
	cr_assert_eq(blk.npkts, 3);
	cr_assert_eq(blk.pkts[0].p.opcode, HM_OP_WRITE_FIRST);
	cr_assert_eq(blk.pkts[0].p.reth_va, 0xabc000);
	cr_assert_eq(blk.pkts[0].p.reth_rkey, 0x777);
	cr_assert_eq(blk.pkts[0].p.reth_dmalen, 600);
	cr_assert(blk.pkts[0].p.migreq);
	cr_assert_eq(blk.pkts[0].p.pkey, 0x8001);
	cr_assert_eq(blk.pkts[1].p.opcode, HM_OP_WRITE_MIDDLE);
	cr_assert_eq(blk.pkts[1].p.reth_dmalen, 0, "no RETH after the first");
	cr_assert_eq(blk.pkts[1].p.psn, 11);
	cr_assert_eq(blk.pkts[2].p.opcode, HM_OP_WRITE_LAST);
	cr_assert_eq(blk.pkts[2].p.paylen, 600 - 512);
	cr_assert_eq(memcmp(blk.pkts[2].payload, blk_mem + DATA + 512, 88), 0);
	cr_assert_eq(blk.sges[2].off, 512, "the gather from the message offset");
}

BLK_TEST(req, a_read_is_one_request_reserving_a_psn_per_response)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);

	post(qp, HCA_WQE_OP_RDMA_READ, 0, 600);
	cr_assert(run0(qp));
	cr_assert_str_eq(blk_steps(), FIRST_STEPS " BUILD_READ XMIT ADVANCE ARM_TIMER");
	cr_assert_eq(blk.pkts[0].p.opcode, HM_OP_READ_REQUEST);
	cr_assert_eq(blk.pkts[0].p.psn, 10);
	cr_assert_eq(blk.pkts[0].p.reth_va, 0xabc000);
	cr_assert_eq(blk.pkts[0].p.reth_dmalen, 600);
	cr_assert(blk.pkts[0].p.ackreq);
	cr_assert_eq(blk.pkts[0].p.paylen, 0);
	cr_assert_eq(qp->req.sq_psn, 13, "three responses of 256 bytes");
	cr_assert_eq(qp->req.flight[0].last_psn, 12);
	cr_assert_eq(qp->req.rd_out, 1);
	cr_assert_eq(blk.nsges, 0, "nothing gathered");
}

BLK_TEST(req, atomics_carry_their_operands)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);

	post(qp, HCA_WQE_OP_ATOMIC_CMP_SWP, 0, 8);
	post(qp, HCA_WQE_OP_ATOMIC_FETCH_ADD, 0, 8);
	cr_assert(run0(qp));
	cr_assert_str_eq(blk_steps(), FIRST_STEPS " BUILD_ATOMIC XMIT ADVANCE ARM_TIMER");
	cr_assert(run0(qp));
	cr_assert_eq(blk.pkts[0].p.opcode, HM_OP_COMPARE_SWAP);
	cr_assert_eq(blk.pkts[0].p.atomic_va, 0xabc000);
	cr_assert_eq(blk.pkts[0].p.atomic_rkey, 0x777);
	cr_assert_eq(blk.pkts[0].p.atomic_compare, 5);
	cr_assert_eq(blk.pkts[0].p.atomic_swap_add, 9);
	cr_assert_eq(blk.pkts[1].p.opcode, HM_OP_FETCH_ADD);
	cr_assert_eq(blk.pkts[1].p.atomic_swap_add, 5, "the add operand");
	cr_assert_eq(blk.pkts[1].p.psn, 11, "one PSN each");
	cr_assert_eq(qp->req.rd_out, 2);
}

BLK_TEST(req, max_rd_atomic_and_fences_hold_a_wqe_back)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);

	qp->attr.max_rd_atomic = 1;
	post(qp, HCA_WQE_OP_RDMA_READ, 0, 64);
	post(qp, HCA_WQE_OP_RDMA_READ, 0, 64);
	cr_assert(run0(qp));
	cr_assert_not(run0(qp));
	cr_assert_str_eq(blk_steps(), "CHK_QUEUE CHK_STATE FETCH CHK_RD_ATOMIC", "max_rd_atomic 1");
	cr_assert_eq(blk.npkts, 1);
	qp->attr.max_rd_atomic = 4;
	cr_assert(run0(qp));
	post(qp, HCA_WQE_OP_SEND, HCA_WQE_F_FENCE, 64);
	cr_assert_not(run0(qp));
	cr_assert_str_eq(blk_steps(), "CHK_QUEUE CHK_STATE FETCH CHK_RD_ATOMIC CHK_FENCE",
			 "the fence waits for the READs");
	/* the completer retires both READs (the sq_retired wire) */
	hm_req_retired(blk_dev, qp, &qp->req.flight[0], HCA_WC_SUCCESS);
	hm_req_retired(blk_dev, qp, &qp->req.flight[1], HCA_WC_SUCCESS);
	cr_assert_eq(qp->req.rd_out, 0);
	cr_assert(run0(qp));
	cr_assert_eq(blk.pkts[2].p.opcode, HM_OP_SEND_ONLY);
}

BLK_TEST(req, a_bind_waits_for_the_wqes_before_it_then_runs_in_the_key_block)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);

	post(qp, HCA_WQE_OP_SEND, 0, 64);
	post(qp, HCA_WQE_OP_BIND_MW, HCA_WQE_F_SIGNALED, 0);
	cr_assert(run0(qp));
	cr_assert_not(run0(qp), "the SEND before it is not acknowledged");
	cr_assert_str_eq(blk_steps(), "CHK_QUEUE CHK_STATE FETCH CHK_RD_ATOMIC CHK_FENCE LOCAL");
	cr_assert(qp->req.local_wait);
	cr_assert_eq(blk.nmw, 0, "the window is not touched before the SEND completes");
	cr_assert_eq(qp->req.flight[1].last_psn, 10, "no PSN of its own: the one before");
	qp->comp.sq_done = 1; /* the completer retired the SEND */
	cr_assert(run0(qp));
	cr_assert_str_eq(blk_steps(), "CHK_QUEUE CHK_STATE CHK_RD_ATOMIC CHK_FENCE LOCAL");
	cr_assert_eq(blk.nmw, 1);
	cr_assert_eq(blk.npkts, 1, "a bind sends nothing");
	cr_assert_eq(blk.nsent, 1);
	cr_assert_eq(blk.sent[0].a, 1, "completed at once");
	cr_assert_eq(qp->req.sq_next, 2);
	cr_assert_eq(qp->req.sq_psn, 11);
	cr_assert_not(qp->req.local_wait);
	/* an invalidation the key block refuses fails its WQE and takes the QP out of RTS */
	post(qp, HCA_WQE_OP_LOCAL_INV, 0, 0);
	qp->comp.sq_done = 2;
	blk_do.mw_verr = HCA_VERR_INV_NOT_BOUND;
	cr_assert(run0(qp));
	cr_assert_eq(blk.nfail_local, 1);
	cr_assert_eq(blk.fail_local[0].a, 2);
	cr_assert_eq(blk.fail_local[0].c, HCA_VERR_INV_NOT_BOUND);
	cr_assert_eq(blk.nqp_error, 1);
}

BLK_TEST(req, only_rts_starts_a_wqe_and_sqd_finishes_the_one_begun)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);

	post(qp, HCA_WQE_OP_SEND, 0, 512);
	qp->state = HCA_QPS_SQD;
	cr_assert_not(run0(qp));
	cr_assert_str_eq(blk_steps(), "CHK_QUEUE CHK_STATE");
	qp->state = HCA_QPS_RTS;
	cr_assert(run0(qp));
	qp->state = HCA_QPS_SQD;
	cr_assert(hm_req_more(qp));
	cr_assert(run0(qp), "the rest of the message");
	cr_assert_eq(blk.pkts[1].p.opcode, HM_OP_SEND_LAST);
	post(qp, HCA_WQE_OP_SEND, 0, 8);
	qp->state = HCA_QPS_SQE;
	cr_assert_not(run0(qp));
	qp->state = HCA_QPS_RTS;
	qp->comp.rnr_wait = true;
	cr_assert_not(run0(qp));
	cr_assert_str_eq(blk_steps(), "CHK_QUEUE", "an RNR wait holds the QP");
	cr_assert_eq(blk.npkts, 2);
}

BLK_TEST(req, a_wqe_being_read_passes_the_qp_by_and_an_unreadable_one_is_fatal)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);

	post(qp, HCA_WQE_OP_SEND, 0, 8);
	blk_do.fetch_result = HM_WQE_WAIT;
	cr_assert_not(run0(qp));
	cr_assert_str_eq(blk_steps(), "CHK_QUEUE CHK_STATE FETCH");
	cr_assert_not(qp->req.cur_started);
	cr_assert_eq(blk.nqp_fatal, 0);
	blk_do.fetch_result = HM_WQE_FAILED;
	cr_assert_not(run0(qp));
	cr_assert_eq(blk.nqp_fatal, 1, "a catastrophic error, no completion of its own");
	cr_assert_eq(blk.nfail_local, 0);
	cr_assert_eq(blk.npkts, 0);
}

BLK_TEST(req, a_wqe_failing_its_check_completes_in_error_and_the_qp_leaves_rts)
{
	struct hm_qp *rc = rc_qp(HCA_QPT_RC);

	post(rc, HCA_WQE_OP_SEND, 0, 8);
	blk_do.check_status = HCA_WC_LOC_LEN_ERR;
	cr_assert_not(run0(rc));
	cr_assert_eq(blk.nfail_local, 1);
	cr_assert_eq(blk.fail_local[0].a, 0, "WQE 0");
	cr_assert_eq(blk.fail_local[0].b, HCA_WQE_OP_SEND);
	cr_assert_eq(hca_verr_status((uint32_t)blk.fail_local[0].c), HCA_WC_LOC_LEN_ERR);
	cr_assert_eq(blk.nqp_error, 1);
	cr_assert_eq(blk.qp_error[0].a, HCA_QPS_ERR, "RC to ERR");
	cr_assert_eq(rc->req.sq_next, 1);
	cr_assert_str_eq(blk_event("req.fail", 0), "qpn=0x3 wqe=0 status=1");
	cr_assert_eq(blk.npkts, 0);
}

BLK_TEST(req, a_gather_that_fails_spends_the_step_on_a_failed_wqe)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_UC);

	post(qp, HCA_WQE_OP_RDMA_WRITE, 0, 64);
	blk_do.sge_fail = true;
	cr_assert(run0(qp), "the step is spent");
	cr_assert_str_eq(blk_steps(), FIRST_STEPS " BUILD_SEND");
	cr_assert_eq(blk.npkts, 0);
	cr_assert_eq(blk.fail_local[0].c, HCA_VERR_LKEY_INVALID);
	cr_assert_eq(blk.qp_error[0].a, HCA_QPS_SQE, "UC to SQE");
	cr_assert_lt(blk_called("hm_comp_fail_local", 0), blk_called("hm_qp_error", 0),
		     "the CQE before the flush");
}

BLK_TEST(req, a_rewind_resends_a_send_from_inside_the_message)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);

	post(qp, HCA_WQE_OP_SEND, 0, 700);
	for (int i = 0; i < 3; i++)
		run0(qp);
	cr_assert_eq(qp->req.sq_next, 1);
	cr_assert_not(hm_req_rewind(blk_dev, qp, 13), "nothing sent at or after 13");
	cr_assert(hm_req_rewind(blk_dev, qp, 11));
	cr_assert_eq(qp->req.sq_next, 0);
	cr_assert(qp->req.cur_started);
	cr_assert_eq(qp->req.cur_off, 256);
	cr_assert_eq(qp->req.sq_psn, 11);
	cr_assert_eq(qp->req.sent_psn, 13, "what was sent still counts");
	cr_assert_str_eq(blk_event("req.rewind", 0), "qpn=0x3 psn=11 wqe=0");
	cr_assert(run0(qp));
	cr_assert_str_eq(blk_steps(), NEXT_STEPS " BUILD_SEND XMIT ARM_TIMER", "no second fetch");
	cr_assert_eq(blk.pkts[3].p.opcode, HM_OP_SEND_MIDDLE);
	cr_assert_eq(blk.pkts[3].p.psn, 11);
	cr_assert_eq(memcmp(blk.pkts[3].payload, blk_mem + DATA + 256, 256), 0);
}

BLK_TEST(req, a_rewind_inside_a_read_asks_for_the_rest_from_the_first_missing_response)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);

	post(qp, HCA_WQE_OP_RDMA_READ, 0, 600);
	run0(qp);
	qp->comp.next_rsp[0] = 11; /* the completer took the response at 10 */
	cr_assert(hm_req_rewind(blk_dev, qp, 12));
	cr_assert_eq(qp->req.sq_psn, 11, "from the first missing response");
	cr_assert_eq(qp->req.cur_off, 256);
	cr_assert_eq(qp->req.rd_out, 0, "recounted before the rewind point");
	cr_assert(run0(qp));
	cr_assert_eq(blk.pkts[1].p.opcode, HM_OP_READ_REQUEST);
	cr_assert_eq(blk.pkts[1].p.psn, 11);
	cr_assert_eq(blk.pkts[1].p.reth_va, 0xabc000 + 256);
	cr_assert_eq(blk.pkts[1].p.reth_dmalen, 344);
	cr_assert_eq(qp->req.sq_psn, 13, "its last PSN is the same");
	qp->comp.next_rsp[0] = 10;
	cr_assert(hm_req_rewind(blk_dev, qp, 10));
	cr_assert_eq(qp->req.cur_off, 0, "no response taken: asked again whole");
}

BLK_TEST(req, a_retired_wqe_being_resent_stays_unsent)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);

	post(qp, HCA_WQE_OP_RDMA_READ, 0, 600);
	post(qp, HCA_WQE_OP_SEND, 0, 8);
	run0(qp);
	hm_req_rewind(blk_dev, qp, 10);
	cr_assert(qp->req.cur_started);
	hm_req_retired(blk_dev, qp, &qp->req.flight[0], HCA_WC_SUCCESS);
	cr_assert_not(qp->req.cur_started);
	cr_assert_eq(qp->req.sq_next, 1);
	cr_assert_eq(qp->req.sq_psn, 13, "after the READ's PSNs");
	cr_assert_eq(qp->req.rd_out, 0);
	cr_assert(run0(qp));
	cr_assert_eq(blk.pkts[1].p.opcode, HM_OP_SEND_ONLY);
	cr_assert_eq(blk.pkts[1].p.psn, 13);
}

BLK_TEST(req, the_qp_commands_change_the_requesters_part)
{
	struct hm_qp *qp = rc_qp(HCA_QPT_RC);
	struct hca_qp_attr a = { .sq_psn = 0x1000005 };

	hm_req_destroy(qp);
	cr_assert_null(qp->req.flight);
	hm_req_create(qp);
	cr_assert_not_null(qp->req.flight);
	hm_req_modify(qp, &a, HCA_QPA_SQ_PSN);
	cr_assert_eq(qp->req.sq_psn, 5, "24 bits");
	cr_assert_eq(qp->req.sent_psn, 5);
	hm_req_modify(qp, &(struct hca_qp_attr){ .sq_psn = 9 }, 0);
	cr_assert_eq(qp->req.sq_psn, 5, "not in the mask");
	post(qp, HCA_WQE_OP_RDMA_READ, 0, 8);
	post(qp, HCA_WQE_OP_SEND, 0, 8);
	run0(qp);
	hm_req_flush(qp);
	cr_assert_eq(qp->req.sq_next, 2);
	cr_assert_eq(qp->req.rd_out, 0);
	cr_assert_not(qp->req.cur_started);
	hm_req_reset(qp);
	cr_assert_eq(qp->req.sq_next + qp->req.sq_psn + qp->req.cur_off, 0);
}

Test(req, every_step_is_reached)
{
	size_t n;
	const char *const *names = hm_req_step_names(&n);

	cr_assert_str_eq(names[0], "CHK_QUEUE");
	blk_every_step("req", names, n);
}
