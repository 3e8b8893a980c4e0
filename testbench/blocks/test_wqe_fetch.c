/* Block test of wqe_fetch, the WQE fetcher (model/wqe_fetch.h), alone: windows of posted WQEs
 * read in one DMA read, the wake-up on the sq_wake wire when a read completes, the next window
 * read while the last WQE of one is taken, the doorbell's prefetch, BlueFlame WQEs taken into
 * the buffer, and the checks of a fetched WQE. WQE reads come from the stubs' fake memory. */
#include "model/wqe_fetch.h"
#include "testbench/blocks/stubs.h"

#include <string.h>

#define SQ 0x10000u /* the send ring in the fake memory */
#define STRIDE 128u

/* An RC QP in RTS with an SQ of entries WQEs at SQ, posted up to pi; WQE i's opcode byte is
 * 0x80 + i in memory, so a copy shows where it came from. */
static struct hm_qp *sq_qp(uint32_t entries, uint32_t pi)
{
	struct hm_qp *qp = blk_qp(7, HCA_QPT_RC, HCA_QPS_RTS, entries, STRIDE, 4);

	qp->sq = SQ;
	qp->sq_pi = pi;
	for (uint32_t i = 0; i < entries; i++)
		blk_mem[SQ + i * STRIDE] = (uint8_t)(0x80 + i);
	return qp;
}

BLK_TEST(wqe_fetch, a_fetch_reads_a_window_and_wakes_the_qp_when_it_is_in)
{
	struct hm_qp *qp = sq_qp(16, 6);
	sim_time_t t = 0;

	cr_assert_eq(hm_wqe_fetch(blk_dev, qp, 0, &t), HM_WQE_WAIT);
	cr_assert_eq(blk.ndma, 1, "one read for the window");
	cr_assert_eq(blk.dma[0].kind, BLK_DMA_WQE);
	cr_assert_eq(blk.dma[0].client, 0 /* HM_DMA_SQ_WQE */);
	cr_assert_eq(blk.dma[0].num, 7);
	cr_assert_eq(blk.dma[0].addr, SQ);
	cr_assert_eq(blk.dma[0].len, blk_dev->cfg.wqe_prefetch * STRIDE, "hca.wqe_prefetch WQEs");
	cr_assert_eq(qp->fetch.sq_fetch_lo, 0);
	cr_assert_eq(qp->fetch.sq_fetched, blk_dev->cfg.wqe_prefetch);
	cr_assert_eq(qp->fetch.sq_fetch_ready, blk_do.dma_ps);
	cr_assert_eq(hm_wqe_fetch(blk_dev, qp, 1, &t), HM_WQE_WAIT, "inside the window, not in yet");
	cr_assert_eq(blk.ndma, 1, "no second read");
	cr_assert_eq(blk.nwake, 0);
	sim_run_until(sim_kernel(), blk_do.dma_ps);
	cr_assert_eq(blk.nwake, 1, "one wake-up for the two waits");
	cr_assert_eq(blk.wake[0].qpn, 7);
	cr_assert_eq(blk.wake[0].a, blk_do.dma_ps);
	cr_assert_eq(qp->fetch.sq_wake_at, 0);
	t = blk_do.dma_ps;
	cr_assert_eq(hm_wqe_fetch(blk_dev, qp, 0, &t), HM_WQE_READY);
	cr_assert_eq(t, sim_clock_after(&blk_dev->core, blk_do.dma_ps, blk_dev->cfg.wqe_cycles),
		     "the decode");
	cr_assert_eq(qp->fetch.wqe_buf[0], 0x80);
	cr_assert_eq(qp->fetch.wqe_buf[3 * STRIDE], 0x83);
	cr_assert_str_eq(blk_event("req.fetch", 0),
			 "qpn=0x7 wqe=0 last=3 ready=500000 failed=0");
}

BLK_TEST(wqe_fetch, taking_the_last_wqe_of_a_window_reads_the_next_posted_ones)
{
	struct hm_qp *qp = sq_qp(16, 6);
	sim_time_t t = 0;

	hm_wqe_fetch(blk_dev, qp, 0, &t);
	t = blk_do.dma_ps;
	cr_assert_eq(hm_wqe_fetch(blk_dev, qp, 2, &t), HM_WQE_READY);
	cr_assert_eq(blk.ndma, 1);
	cr_assert_eq(hm_wqe_fetch(blk_dev, qp, 3, &t), HM_WQE_READY);
	cr_assert_eq(blk.ndma, 2, "the last of the window starts the next read");
	cr_assert_eq(blk.dma[1].addr, SQ + 4 * STRIDE);
	cr_assert_eq(blk.dma[1].len, 2 * STRIDE, "only what is posted: 4 and 5");
	cr_assert_eq(qp->fetch.sq_fetch_lo, 4);
	cr_assert_eq(qp->fetch.sq_fetched, 6);
}

BLK_TEST(wqe_fetch, a_read_stops_at_the_end_of_the_ring)
{
	struct hm_qp *qp = sq_qp(8, 10);
	sim_time_t t = 0;

	qp->fetch.sq_fetch_lo = qp->fetch.sq_fetched = 6;
	hm_wqe_fetch(blk_dev, qp, 6, &t);
	cr_assert_eq(blk.dma[0].addr, SQ + 6 * STRIDE);
	cr_assert_eq(blk.dma[0].len, 2 * STRIDE, "slots 6 and 7; 8 and 9 wrap, read next");
	cr_assert_eq(qp->fetch.sq_fetched, 8);
}

BLK_TEST(wqe_fetch, a_wqe_before_the_window_is_read_again)
{
	struct hm_qp *qp = sq_qp(16, 8);
	sim_time_t t = 0;

	hm_wqe_fetch(blk_dev, qp, 4, &t);
	cr_assert_eq(qp->fetch.sq_fetch_lo, 4);
	t = blk_do.dma_ps;
	cr_assert_eq(hm_wqe_fetch(blk_dev, qp, 2, &t), HM_WQE_WAIT, "a rewind to before it");
	cr_assert_eq(blk.ndma, 2);
	cr_assert_eq(blk.dma[1].addr, SQ + 2 * STRIDE);
	cr_assert_eq(qp->fetch.sq_fetch_lo, 2);
}

BLK_TEST(wqe_fetch, a_failed_read_fails_the_wqe)
{
	struct hm_qp *qp = sq_qp(16, 2);
	sim_time_t t = 0;

	blk_do.wqe_read_fail = true;
	cr_assert_eq(hm_wqe_fetch(blk_dev, qp, 0, &t), HM_WQE_FAILED);
	cr_assert(qp->fetch.sq_fetch_err);
	cr_assert_str_eq(blk_event("req.fetch", 0), "qpn=0x7 wqe=0 last=1 ready=500000 failed=1");
	sim_run_until(sim_kernel(), SIM_PS_PER_MS);
	cr_assert_eq(blk.nwake, 0, "nothing to wake for");
}

BLK_TEST(wqe_fetch, a_doorbell_prefetches_only_when_nothing_is_fetched_ahead)
{
	struct hm_qp *qp = sq_qp(16, 3);

	qp->req.cur_started = true; /* the requester is inside WQE 0 */
	hm_wqe_prefetch(blk_dev, qp, 0);
	cr_assert_eq(blk.ndma, 0, "a WQE is being sent");
	qp->req.cur_started = false;
	hm_wqe_prefetch(blk_dev, qp, 0);
	cr_assert_eq(blk.ndma, 1);
	cr_assert_eq(blk.dma[0].len, 3 * STRIDE);
	qp->sq_pi = 5;
	hm_wqe_prefetch(blk_dev, qp, 0);
	cr_assert_eq(blk.ndma, 1, "WQEs are fetched ahead already");
}

BLK_TEST(wqe_fetch, a_blueflame_wqe_alone_is_a_window_ready_now)
{
	struct hm_qp *qp = sq_qp(4, 5);
	uint8_t wqe[STRIDE];

	memset(wqe, 0x5a, sizeof(wqe));
	qp->req.sq_next = 5;
	qp->comp.sq_done = 5;
	qp->fetch.sq_fetch_lo = qp->fetch.sq_fetched = 5;
	qp->fetch.sq_fetch_err = true;
	hm_fetch_take(blk_dev, qp, wqe, 64, 3000);
	cr_assert_eq(qp->fetch.wqe_buf[1 * STRIDE], 0x5a, "slot 5 % 4");
	cr_assert_eq(qp->fetch.wqe_buf[1 * STRIDE + 63], 0x5a);
	cr_assert_eq(qp->fetch.wqe_buf[1 * STRIDE + 64], 0, "len bytes only");
	cr_assert_eq(qp->fetch.sq_fetch_lo, 5);
	cr_assert_eq(qp->fetch.sq_fetched, 6);
	cr_assert_eq(qp->fetch.sq_fetch_ready, 3000);
	cr_assert_not(qp->fetch.sq_fetch_err);
	cr_assert_str_eq(blk_event("req.bf", 0), "qpn=0x7 wqe=5 bytes=64");
	cr_assert_eq(blk.ndma, 0);
	qp->sq_pi = 6;
	{
		sim_time_t t = 3000;

		cr_assert_eq(hm_wqe_fetch(blk_dev, qp, 5, &t), HM_WQE_READY, "no read");
		cr_assert_eq(blk.ndma, 0);
	}
}

BLK_TEST(wqe_fetch, a_blueflame_wqe_is_appended_to_the_window_or_refused)
{
	struct hm_qp *qp = sq_qp(4, 2);
	uint8_t wqe[2 * STRIDE] = { 0x11 };

	/* WQEs 0 and 1 fetched, the requester inside 0 */
	qp->fetch.sq_fetch_lo = 0;
	qp->fetch.sq_fetched = 2;
	qp->req.cur_started = true;
	hm_fetch_take(blk_dev, qp, wqe, STRIDE, 0);
	cr_assert_eq(qp->fetch.sq_fetch_lo, 0, "appended");
	cr_assert_eq(qp->fetch.sq_fetched, 3);
	cr_assert_eq(qp->fetch.wqe_buf[2 * STRIDE], 0x11);
	/* refused: a read of more is under way (fetched != pi), longer than a slot, ring full */
	hm_fetch_take(blk_dev, qp, wqe, STRIDE, 0);
	cr_assert_eq(qp->fetch.sq_fetched, 3, "fetched is past sq_pi");
	qp->sq_pi = 3;
	hm_fetch_take(blk_dev, qp, wqe, 2 * STRIDE, 0);
	cr_assert_eq(qp->fetch.sq_fetched, 3, "longer than the stride");
	qp->sq_pi = 4;
	qp->fetch.sq_fetched = 4;
	hm_fetch_take(blk_dev, qp, wqe, STRIDE, 0);
	cr_assert_eq(qp->fetch.sq_fetched, 4, "slot 4 is WQE 0's, not completed");
	cr_assert_null(blk_event("req.bf", 1));
}

BLK_TEST(wqe_fetch, the_window_never_holds_more_than_the_ring)
{
	struct hm_qp *qp = sq_qp(4, 3);
	uint8_t wqe[STRIDE] = { 0 };

	qp->comp.sq_done = 1;
	qp->req.sq_next = 1;
	qp->req.cur_started = true;
	qp->fetch.sq_fetch_lo = 0;
	qp->fetch.sq_fetched = 3;
	qp->sq_pi = 3;
	hm_fetch_take(blk_dev, qp, wqe, STRIDE, 0);
	qp->sq_pi = 4;
	hm_fetch_take(blk_dev, qp, wqe, STRIDE, 0);
	cr_assert_eq(qp->fetch.sq_fetched, 5);
	cr_assert_eq(qp->fetch.sq_fetch_lo, 1, "WQE 0's slot holds WQE 4 now");
}

/* A WQE of opcode op with flags, its data: inline_len bytes inline, or nsge entries of len. */
static void wqe(uint8_t *w, uint8_t op, uint8_t flags, uint32_t inline_len, uint8_t nsge,
		uint32_t len)
{
	struct hca_wqe_ctrl *c = (void *)w;
	struct hca_wqe_data *sg = (void *)(w + HCA_WQE_BASE_BYTES);

	memset(w, 0, 512);
	c->opcode = op;
	c->flags = flags;
	c->inline_len = inline_len;
	c->num_sge = nsge;
	for (unsigned i = 0; i < nsge && i < (512 - HCA_WQE_BASE_BYTES) / HCA_SGE_BYTES; i++)
		sg[i] = (struct hca_wqe_data){ .addr = 0x100, .lkey = 1, .length = len };
}

BLK_TEST(wqe_fetch, the_check_validates_what_software_wrote)
{
	struct hm_qp *rc = blk_qp(1, HCA_QPT_RC, HCA_QPS_RTS, 4, 256, 4);
	struct hm_qp *ud = blk_qp(2, HCA_QPT_UD, HCA_QPS_RTS, 4, 256, 4);
	uint8_t w[512];
	uint64_t len;
	uint32_t verr;

	wqe(w, HCA_WQE_OP_SEND, 0, 0, 3, 100);
	cr_assert_eq(hm_wqe_check(blk_dev, rc, w, &len, &verr), HCA_WC_SUCCESS);
	cr_assert_eq(len, 300, "the gather entries' sum");
	cr_assert_eq(verr, HCA_VERR_NONE);
	wqe(w, HCA_WQE_OP_SEND, HCA_WQE_F_INLINE, 150, 0, 0);
	cr_assert_eq(hm_wqe_check(blk_dev, rc, w, &len, &verr), HCA_WC_SUCCESS);
	cr_assert_eq(len, 150);
	wqe(w, HCA_WQE_OP_SEND, HCA_WQE_F_INLINE, 256 - HCA_WQE_BASE_BYTES + 1, 0, 0);
	cr_assert_eq(hm_wqe_check(blk_dev, rc, w, &len, &verr), HCA_WC_LOC_QP_OP_ERR, "inline past the stride");
	cr_assert_eq(verr, HCA_VERR_WQE_INLINE_LEN, "%s", hca_verr_name(verr));
	wqe(w, HCA_WQE_OP_SEND, 0, 0, (256 - HCA_WQE_BASE_BYTES) / HCA_SGE_BYTES + 1, 1);
	cr_assert_eq(hm_wqe_check(blk_dev, rc, w, &len, &verr), HCA_WC_LOC_QP_OP_ERR, "gather past the stride");
	cr_assert_eq(verr, HCA_VERR_WQE_NUM_SGE, "%s", hca_verr_name(verr));
	wqe(w, HCA_WQE_OP_ATOMIC_FETCH_ADD, 0, 0, 1, 4);
	cr_assert_eq(hm_wqe_check(blk_dev, rc, w, &len, &verr), HCA_WC_LOC_LEN_ERR, "an atomic is 8 bytes");
	cr_assert_eq(verr, HCA_VERR_WQE_ATOMIC_LEN, "%s", hca_verr_name(verr));
	wqe(w, HCA_WQE_OP_ATOMIC_FETCH_ADD, 0, 0, 1, 8);
	cr_assert_eq(hm_wqe_check(blk_dev, rc, w, &len, &verr), HCA_WC_SUCCESS);
	wqe(w, HCA_WQE_OP_SEND, 0, 0, 2, 0x40000001);
	cr_assert_eq(hm_wqe_check(blk_dev, rc, w, &len, &verr), HCA_WC_LOC_LEN_ERR, "past 2^31 bytes");
	cr_assert_eq(verr, HCA_VERR_WQE_MSG_LEN, "%s", hca_verr_name(verr));
	wqe(w, HCA_WQE_OP_RDMA_WRITE, 0, 0, 1, 8);
	cr_assert_eq(hm_wqe_check(blk_dev, ud, w, &len, &verr), HCA_WC_LOC_QP_OP_ERR, "no WRITE on UD");
	cr_assert_eq(verr, HCA_VERR_WQE_OPCODE, "%s", hca_verr_name(verr));
	wqe(w, HCA_WQE_OP_SEND, 0, 0, 1, blk_do.mtu);
	cr_assert_eq(hm_wqe_check(blk_dev, ud, w, &len, &verr), HCA_WC_SUCCESS, "UD within the MTU");
	wqe(w, HCA_WQE_OP_SEND, 0, 0, 1, blk_do.mtu + 1);
	cr_assert_eq(hm_wqe_check(blk_dev, ud, w, &len, &verr), HCA_WC_LOC_LEN_ERR, "UD past the MTU");
	cr_assert_eq(verr, HCA_VERR_WQE_MSG_LEN, "%s", hca_verr_name(verr));
	wqe(w, HCA_WQE_OP_SEND, 0, 0, 1, 8);
	((struct hca_wqe_ud *)(w + 16))->av.sl = 16;
	cr_assert_eq(hm_wqe_check(blk_dev, ud, w, &len, &verr), HCA_WC_LOC_QP_OP_ERR, "SL 16 in the AV");
	cr_assert_eq(verr, HCA_VERR_WQE_UD_AV, "%s", hca_verr_name(verr));
	wqe(w, HCA_WQE_OP_SEND, 0, 0, 1, 8);
	((struct hca_wqe_ud *)(w + 16))->av.port_num = 2;
	cr_assert_eq(hm_wqe_check(blk_dev, ud, w, &len, &verr), HCA_WC_LOC_QP_OP_ERR, "no port 2");
	cr_assert_eq(verr, HCA_VERR_WQE_UD_AV, "%s", hca_verr_name(verr));
}

BLK_TEST(wqe_fetch, reset_and_flush_empty_the_window)
{
	struct hm_qp *qp = sq_qp(8, 6);

	qp->fetch.sq_fetch_lo = 2;
	qp->fetch.sq_fetched = 5;
	qp->fetch.sq_fetch_err = true;
	hm_fetch_flush(qp);
	cr_assert_eq(qp->fetch.sq_fetch_lo, 6);
	cr_assert_eq(qp->fetch.sq_fetched, 6);
	cr_assert_not(qp->fetch.sq_fetch_err);
	qp->fetch.sq_fetch_ready = 99;
	hm_fetch_reset(qp);
	cr_assert_eq(qp->fetch.sq_fetch_lo + qp->fetch.sq_fetched + qp->fetch.sq_fetch_ready, 0);
}
