/* Block test of comp, the completer (model/comp.h), alone: each test plays the requester — it
 * writes the in-flight records of the WQEs it "sent" and starts their progress marks with
 * hm_comp_track — then feeds hand-made responses through hm_comp_rx and checks the CQEs
 * posted, the wires raised (sq_retired, sq_wake, sq_retry), the QP errors, what READ
 * responses and atomic results left in the fake memory, the completer's part of the QP and the
 * steps the engine traced. The local ACK timer runs on the fixture's kernel. The last test
 * checks that every step of COMP_STEPS is reached. */
#include "model/comp.h"
#include "testbench/blocks/stubs.h"

#include <string.h>

#define STRIDE 256u
#define LOCAL 0x9000u /* the READ's and atomic's local buffer */

static struct hm_qp *comp_qp(void)
{
	struct hm_qp *qp = blk_qp(6, HCA_QPT_RC, HCA_QPS_RTS, 8, STRIDE, 4);

	qp->attr.retry_cnt = 3;
	qp->attr.rnr_retry = 2;
	qp->attr.timeout = 10;
	qp->comp.retry_left = 3;
	qp->comp.rnr_left = 2;
	qp->req.sq_psn = qp->req.sent_psn = 10;
	return qp;
}

/* As the requester would: WQE sq_next of op, len bytes over npsn PSNs from sq_psn, sent
 * whole (one local scatter entry of len bytes at LOCAL). */
static void sent(struct hm_qp *qp, uint8_t op, uint32_t len, uint32_t npsn, bool signaled)
{
	uint32_t w = qp->req.sq_next, slot = w % qp->sq_entries;
	struct hca_wqe_ctrl *c = (void *)(qp->fetch.wqe_buf + (size_t)slot * STRIDE);
	struct hca_wqe_data *sg = (void *)((uint8_t *)c + HCA_WQE_BASE_BYTES);

	c->opcode = op;
	c->num_sge = 1;
	*sg = (struct hca_wqe_data){ .addr = LOCAL, .lkey = 1, .length = len };
	qp->req.flight[slot] = (struct hm_flight){ .wqe = w, .first_psn = qp->req.sq_psn,
						   .last_psn = qp->req.sq_psn + npsn - 1, .op = op,
						   .signaled = signaled, .len = len };
	hm_comp_track(qp, w, qp->req.sq_psn);
	qp->req.sq_psn += npsn;
	qp->req.sent_psn = qp->req.sq_psn;
	qp->req.sq_next++;
	qp->sq_pi = qp->req.sq_next;
}

static struct hm_pkt rsp(uint8_t op, uint32_t psn, uint8_t syn)
{
	static uint8_t data[4096];

	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i ^ 0x5a);
	return (struct hm_pkt){ .opcode = op, .psn = psn, .aeth_syndrome = syn, .payload = data };
}

/* hm_comp_rx at t, marking DONE, where the engine always stops (not traced). */
static void rx_at(struct hm_qp *qp, struct hm_pkt p, sim_time_t t)
{
	blk_steps_clear();
	hm_comp_rx(blk_dev, qp, &p, t);
	blk_reach("comp", "DONE");
}

static void rx(struct hm_qp *qp, struct hm_pkt p)
{
	rx_at(qp, p, 0);
}

#define PATH "CHK_STATE CHK_WINDOW IMPLIED_ACKS CHK_PROGRESS CHK_GAP CLASSIFY"

BLK_TEST(comp, an_ack_retires_the_send_it_covers_with_its_cqe)
{
	struct hm_qp *qp = comp_qp();

	sent(qp, HCA_WQE_OP_SEND, 100, 1, true);
	hm_comp_timer(blk_dev, qp, 0);
	cr_assert(qp->tmr.on);
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 10, HM_AETH_ACK));
	cr_assert_str_eq(blk_steps(), PATH " ACK");
	cr_assert_eq(blk.nack_rcvd, 1);
	cr_assert_eq(blk.nretired, 1);
	cr_assert_eq(blk.retired[0].a, 0);
	cr_assert_eq(blk.retired[0].b, HCA_WC_SUCCESS);
	cr_assert_eq(blk.ncqes, 1);
	cr_assert_eq(blk.cqes[0].cqn, 1, "the send CQ");
	cr_assert_eq(blk.cqes[0].cqe.opcode, BLK_CQE_OP(HCA_WQE_OP_SEND));
	cr_assert_eq(blk.cqes[0].cqe.status, HCA_WC_SUCCESS);
	cr_assert_eq(blk.cqes[0].cqe.is_send, 1);
	cr_assert_eq(blk.cqes[0].cqe.wqe_index, 0);
	cr_assert_lt(blk_called("wire.sq_retired", 0), blk_called("hm_cqe_post", 0),
		     "the requester lets go first");
	cr_assert_eq(qp->comp.sq_done, 1);
	cr_assert_eq(blk.ndrained, 1);
	cr_assert_eq(blk.nwake, 0, "a SEND frees no max_rd_atomic slot");
	cr_assert_not(qp->tmr.on, "nothing outstanding: the timer stops");
	cr_assert_eq(qp->comp.acked_psn, 10);
	cr_assert_str_eq(blk_event("comp.done", 0), "qpn=0x6 wqe=0 status=0");
}

BLK_TEST(comp, an_unsignaled_wqe_retires_without_a_cqe)
{
	struct hm_qp *qp = comp_qp();

	sent(qp, HCA_WQE_OP_RDMA_WRITE, 100, 1, false);
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 10, HM_AETH_ACK));
	cr_assert_eq(blk.nretired, 1);
	cr_assert_eq(blk.ncqes, 0);
}

BLK_TEST(comp, responses_outside_the_window_or_the_state_are_ignored)
{
	struct hm_qp *qp = comp_qp();

	sent(qp, HCA_WQE_OP_SEND, 100, 1, true);
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 9, HM_AETH_ACK));
	cr_assert_str_eq(blk_steps(), "CHK_STATE CHK_WINDOW", "before the oldest WQE");
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 11, HM_AETH_ACK));
	cr_assert_str_eq(blk_steps(), "CHK_STATE CHK_WINDOW", "not sent yet");
	qp->state = HCA_QPS_ERR;
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 10, HM_AETH_ACK));
	cr_assert_str_eq(blk_steps(), "CHK_STATE");
	cr_assert_eq(blk.nretired + blk.ncqes, 0);
	cr_assert_eq(blk.nack_rcvd, 3, "counted all the same");
}

BLK_TEST(comp, an_ack_implies_the_earlier_sends_but_not_a_read)
{
	struct hm_qp *qp = comp_qp();

	sent(qp, HCA_WQE_OP_SEND, 8, 1, true);  /* 10 */
	sent(qp, HCA_WQE_OP_SEND, 8, 1, true);  /* 11 */
	sent(qp, HCA_WQE_OP_RDMA_READ, 8, 1, true); /* 12 */
	sent(qp, HCA_WQE_OP_SEND, 8, 1, true);  /* 13 */
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 11, HM_AETH_ACK));
	cr_assert_eq(qp->comp.sq_done, 2);
	cr_assert_eq(blk.ncqes, 2);
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 13, HM_AETH_ACK));
	cr_assert_str_eq(blk_steps(), "CHK_STATE CHK_WINDOW IMPLIED_ACKS CHK_PROGRESS CHK_GAP",
			 "past the READ's response: it was lost");
	cr_assert_eq(qp->comp.sq_done, 2, "the READ is not implied");
	cr_assert_eq(blk.nretry, 1);
	cr_assert_eq(blk.retry[0].a, 12, "asked again from it");
	cr_assert_eq(qp->comp.retry_left, 2);
	cr_assert(qp->comp.rd_gap);
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 13, HM_AETH_ACK));
	cr_assert_eq(blk.nretry, 1, "once per gap");
}

BLK_TEST(comp, read_responses_are_scattered_in_order_and_retire_the_read)
{
	struct hm_qp *qp = comp_qp();
	struct hm_pkt r;

	sent(qp, HCA_WQE_OP_RDMA_READ, 600, 3, true); /* 10..12 */
	r = rsp(HM_OP_READ_RESPONSE_FIRST, 10, HM_AETH_ACK);
	r.paylen = 256;
	rx(qp, r);
	cr_assert_str_eq(blk_steps(), PATH " READ");
	cr_assert_eq(memcmp(blk_mem + LOCAL, r.payload, 256), 0);
	cr_assert_eq(qp->comp.next_rsp[0], 11);
	rx(qp, r);
	cr_assert_eq(blk.nsges, 1, "a duplicate is dropped");
	r = rsp(HM_OP_READ_RESPONSE_LAST, 12, HM_AETH_ACK);
	r.paylen = 88;
	rx(qp, r);
	cr_assert_eq(blk.nretry, 1, "11 is missing");
	cr_assert_eq(blk.retry[0].a, 11);
	cr_assert_eq(blk.nsges, 1, "not taken out of order");
	r = rsp(HM_OP_READ_RESPONSE_MIDDLE, 11, HM_AETH_ACK);
	r.paylen = 256;
	rx(qp, r);
	r = rsp(HM_OP_READ_RESPONSE_LAST, 12, HM_AETH_ACK);
	r.paylen = 88;
	rx(qp, r);
	cr_assert_eq(blk.sges[2].off, 512, "at the response's place in the message");
	cr_assert_eq(blk.ncqes, 1);
	cr_assert_eq(blk.cqes[0].cqe.opcode, BLK_CQE_OP(HCA_WQE_OP_RDMA_READ));
	cr_assert_eq(blk.cqes[0].cqe.byte_len, 600);
	cr_assert_eq(blk.nwake, 1, "a max_rd_atomic slot is free");
	cr_assert_eq(qp->comp.sq_done, 1);
}

BLK_TEST(comp, a_read_response_that_cannot_be_scattered_fails_the_read)
{
	struct hm_qp *qp = comp_qp();
	struct hm_pkt r = rsp(HM_OP_READ_RESPONSE_ONLY, 10, HM_AETH_ACK);

	sent(qp, HCA_WQE_OP_RDMA_READ, 8, 1, false);
	r.paylen = 8;
	blk_do.sge_fail = true;
	rx(qp, r);
	cr_assert_eq(blk.cqes[0].cqe.status, HCA_WC_LOC_PROT_ERR, "unsignaled, but failed");
	cr_assert_eq(blk.qp_error[0].a, HCA_QPS_ERR);
}

BLK_TEST(comp, an_atomic_acknowledgement_returns_the_original_value)
{
	struct hm_qp *qp = comp_qp();
	struct hm_pkt a = rsp(HM_OP_ATOMIC_ACKNOWLEDGE, 10, HM_AETH_ACK);
	uint64_t got;

	sent(qp, HCA_WQE_OP_ATOMIC_FETCH_ADD, 8, 1, true);
	a.atomic_orig = 0x1122334455667788ull;
	rx(qp, rsp(HM_OP_ATOMIC_ACKNOWLEDGE, 11, HM_AETH_ACK));
	cr_assert_eq(blk.nretired, 0, "not its PSN");
	rx(qp, a);
	cr_assert_str_eq(blk_steps(), PATH " ATOMIC");
	memcpy(&got, blk_mem + LOCAL, 8);
	cr_assert_eq(got, 0x1122334455667788ull);
	cr_assert_eq(blk.cqes[0].cqe.byte_len, 8);
	cr_assert_eq(blk.cqes[0].cqe.opcode, BLK_CQE_OP(HCA_WQE_OP_ATOMIC_FETCH_ADD));
	cr_assert_eq(blk.nwake, 1);
}

BLK_TEST(comp, a_sequence_nak_goes_back_at_the_cost_of_a_retry)
{
	struct hm_qp *qp = comp_qp();

	sent(qp, HCA_WQE_OP_SEND, 768, 3, true); /* 10..12 */
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 11, HM_AETH_NAK_SEQ));
	cr_assert_str_eq(blk_steps(), PATH " SEQ_NAK");
	cr_assert_eq(qp->comp.next_rsp[0], 11, "10 is acknowledged: progress");
	cr_assert_eq(blk.nretry, 1);
	cr_assert_eq(blk.retry[0].a, 11);
	cr_assert_eq(qp->comp.retry_left, 2, "reloaded to 3 by the progress, then one used");
	cr_assert(qp->comp.nak_seen);
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 11, HM_AETH_NAK_SEQ));
	cr_assert_eq(blk.nretry, 1, "a duplicate NAK changes nothing");
	qp->comp.nak_seen = false;
	qp->comp.retry_left = 0;
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 11, HM_AETH_NAK_SEQ));
	cr_assert_eq(blk.ncqes, 1);
	cr_assert_eq(blk.cqes[0].cqe.status, HCA_WC_RETRY_EXC_ERR);
	cr_assert_eq(blk.qp_error[0].a, HCA_QPS_ERR);
	cr_assert_str_eq(blk_event("comp.retry", 1),
			 "qpn=0x6 psn=11 cause=seq_nak retries_left=0 exhausted=1");
}

BLK_TEST(comp, an_rnr_nak_waits_its_timer_then_wakes_the_qp)
{
	struct hm_qp *qp = comp_qp();
	sim_time_t wait = 10 * SIM_PS_PER_US; /* RNR timer code 1 */

	sent(qp, HCA_WQE_OP_SEND, 8, 1, true);
	rx_at(qp, rsp(HM_OP_ACKNOWLEDGE, 10, HM_AETH_RNR | 1), 1000);
	cr_assert_str_eq(blk_steps(), PATH " RNR_NAK");
	cr_assert_eq(blk.retry[0].a, 10);
	cr_assert(qp->comp.rnr_wait);
	cr_assert_eq(qp->comp.rnr_left, 1);
	cr_assert(qp->tmr.on);
	cr_assert_gt(qp->tmr.at, wait, "no timeout while waiting");
	sim_run_until(sim_kernel(), wait);
	cr_assert_eq(blk.nwake, 0);
	sim_run_until(sim_kernel(),
		      sim_clock_after(&blk_dev->core, 1000, blk_dev->cfg.comp_cycles) + wait);
	cr_assert_eq(blk.nwake, 1, "woken when the RNR timer ends");
	cr_assert_not(qp->comp.rnr_wait);
	qp->comp.rnr_left = 0;
	rx_at(qp, rsp(HM_OP_ACKNOWLEDGE, 10, HM_AETH_RNR | 1), sim_now(sim_kernel()));
	cr_assert_eq(blk.cqes[0].cqe.status, HCA_WC_RNR_RETRY_EXC_ERR);
	cr_assert_eq(blk.nretry, 1);
}

BLK_TEST(comp, rnr_retry_7_retries_for_ever)
{
	struct hm_qp *qp = comp_qp();

	qp->attr.rnr_retry = 7;
	qp->comp.rnr_left = 0;
	sent(qp, HCA_WQE_OP_SEND, 8, 1, true);
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 10, HM_AETH_RNR | 1));
	cr_assert_eq(blk.nretry, 1);
	cr_assert_eq(blk.ncqes, 0);
}

BLK_TEST(comp, a_fatal_nak_ends_the_wqe_it_names_after_the_ones_before_it)
{
	struct hm_qp *qp = comp_qp();

	sent(qp, HCA_WQE_OP_SEND, 8, 1, true);       /* 10 */
	sent(qp, HCA_WQE_OP_RDMA_WRITE, 8, 1, true); /* 11 */
	sent(qp, HCA_WQE_OP_SEND, 8, 1, true);       /* 12 */
	rx(qp, rsp(HM_OP_ACKNOWLEDGE, 11, HM_AETH_NAK_REM_ACCESS));
	cr_assert_str_eq(blk_steps(), PATH " ERR_NAK");
	cr_assert_eq(blk.ncqes, 2);
	cr_assert_eq(blk.cqes[0].cqe.status, HCA_WC_SUCCESS, "10 was acknowledged");
	cr_assert_eq(blk.cqes[1].cqe.wqe_index, 1);
	cr_assert_eq(blk.cqes[1].cqe.status, HCA_WC_REM_ACCESS_ERR);
	cr_assert_eq(blk.qp_error[0].a, HCA_QPS_ERR, "the rest is flushed by the QP's error flow");
}

BLK_TEST(comp, the_ack_timer_resends_from_the_oldest_then_gives_up)
{
	struct hm_qp *qp = comp_qp();
	sim_time_t to = 4096000ull << 10;

	sent(qp, HCA_WQE_OP_SEND, 8, 1, true);
	qp->comp.retry_left = 1;
	hm_comp_timer(blk_dev, qp, 0);
	sim_run_until(sim_kernel(), to - 1);
	cr_assert_eq(blk.nretry, 0);
	sim_run_until(sim_kernel(), to);
	cr_assert_eq(blk.nretry, 1);
	cr_assert_eq(blk.retry[0].a, 10);
	cr_assert_eq(blk.nqpc_get, 1, "the context, through the cache");
	cr_assert_eq(blk.ctr_qp[0].a, HM_CTR_SQ_TO);
	cr_assert_eq(qp->comp.retry_left, 0);
	hm_comp_timer(blk_dev, qp, to);
	sim_run_until(sim_kernel(), 2 * to);
	cr_assert_eq(blk.cqes[0].cqe.status, HCA_WC_RETRY_EXC_ERR);
	cr_assert_eq(blk.nretry, 1);
}

BLK_TEST(comp, exhausted_retries_migrate_an_armed_path)
{
	struct hm_qp *qp = comp_qp();

	sent(qp, HCA_WQE_OP_SEND, 8, 1, true);
	qp->attr.path_mig_state = HCA_MIG_ARMED;
	qp->comp.retry_left = 0;
	blk_do.migrate_ok = true;
	hm_comp_timer(blk_dev, qp, 0);
	sim_run_until(sim_kernel(), SIM_PS_PER_S);
	cr_assert_eq(blk.nmigrate, 1);
	cr_assert_eq(blk.nretry, 1);
	cr_assert_eq(qp->comp.retry_left, 3, "reloaded");
	cr_assert_eq(blk.ncqes, 0);
}

BLK_TEST(comp, a_restarted_timer_keeps_one_event)
{
	struct hm_qp *qp = comp_qp();
	sim_time_t to = 4096000ull << 10;

	sent(qp, HCA_WQE_OP_SEND, 8, 1, true);
	hm_comp_timer(blk_dev, qp, 0);
	hm_comp_timer(blk_dev, qp, 1000);
	cr_assert_eq(sim_events_pending(sim_kernel()), 1);
	sim_run_until(sim_kernel(), to);
	cr_assert_eq(blk.nretry, 0, "restarted: not yet");
	sim_run_until(sim_kernel(), to + 1000);
	cr_assert_eq(blk.nretry, 1);
}

BLK_TEST(comp, local_completions_failures_and_flushes_keep_wqe_order)
{
	struct hm_qp *qp = comp_qp();
	struct hm_flight f = { .wqe = 2, .op = HCA_WQE_OP_SEND, .signaled = true };

	hm_comp_sent(blk_dev, qp, &f, 5);
	cr_assert_eq(qp->comp.sq_done, 3);
	cr_assert_eq(blk.cqes[0].cqe.wqe_index, 2);
	cr_assert_eq(blk.cqes[0].t, 5);
	f.signaled = false;
	f.wqe = 3;
	hm_comp_sent(blk_dev, qp, &f, 5);
	cr_assert_eq(blk.ncqes, 1);
	hm_comp_fail_local(blk_dev, qp, 6, HCA_WQE_OP_RDMA_WRITE, HCA_VERR_LKEY_BOUNDS, 7);
	cr_assert_eq(blk.ncqes, 4, "5 and 4 flushed, then 6");
	cr_assert_eq(blk.cqes[1].cqe.status, HCA_WC_WR_FLUSH_ERR);
	cr_assert_eq(blk.cqes[3].cqe.status, HCA_WC_LOC_PROT_ERR);
	cr_assert_eq(blk.cqes[3].cqe.opcode, BLK_CQE_OP(HCA_WQE_OP_RDMA_WRITE));
	qp->sq_pi = 9;
	hm_comp_flush(blk_dev, qp, 8);
	cr_assert_eq(blk.ncqes, 6);
	cr_assert_eq(qp->comp.sq_done, 9);
	hm_comp_modify(qp, &(struct hca_qp_attr){ .sq_psn = 0, .retry_cnt = 5, .rnr_retry = 6 },
		       HCA_QPA_SQ_PSN | HCA_QPA_RETRY_CNT | HCA_QPA_RNR_RETRY);
	cr_assert_eq(qp->comp.acked_psn, HCA_PSN_MASK, "the PSN before");
	cr_assert_eq(qp->comp.retry_left, 5);
	cr_assert_eq(qp->comp.rnr_left, 6);
	hm_comp_reset(qp);
	cr_assert_eq(qp->comp.sq_done, 0);
	hm_comp_destroy(qp);
	cr_assert_null(qp->comp.next_rsp);
	hm_comp_create(qp);
	cr_assert_not_null(qp->comp.next_rsp);
}

Test(comp, every_step_is_reached)
{
	size_t n;
	const char *const *names = hm_comp_step_names(&n);

	cr_assert_str_eq(names[n - 1], "DONE");
	blk_every_step("comp", names, n);
}
