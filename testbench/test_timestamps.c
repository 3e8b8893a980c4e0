/* timestamps: device time through standard verbs — hca_core_clock and
 * completion_timestamp_mask (ibv_query_device_ex), the raw core-cycle clock
 * (ibv_query_rt_values_ex), and completion timestamps on CQs from ibv_create_cq_ex read with the
 * extended poll API (ibv_start_poll(3), ibv_wc_read_*). Expected values come from the
 * configuration and from hcasim_now_ps(), never from the model's state.
 *
 * Rules: ibv_create_cq_ex(3), ibv_query_rt_values_ex(3), ibv_query_device_ex(3); a raw clock
 * is a cycle count in raw_clock.tv_nsec with tv_sec 0, as rdma-core's mlx4/mlx5 report it. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define US ((uint64_t)1000000) /* picoseconds per microsecond */
#define TS_LIMIT_PS (1000 * US) /* a workload step that takes longer has hung */

/* Every flag an hcasim CQ can report. */
#define ALL_WC (IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)

/* ---- helpers ---- */

static uint64_t cfg_u64(const char *key)
{
	char buf[32];

	cr_assert_eq(hcasim_config_get(key, buf, sizeof(buf)), 0, "%s", hcasim_last_error());
	return strtoull(buf, NULL, 0);
}

/* The core clock period in ps, rounded to 1 ps as docs/config.md says clock periods are. */
static uint64_t core_period_ps(void)
{
	uint64_t mhz = cfg_u64("clock.core_mhz");

	return (1000000 + mhz / 2) / mhz;
}

/* One ibv_query_rt_values_ex for the raw clock, checked for form. */
static uint64_t raw_clock(struct ibv_context *ctx)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	cr_assert_eq(ibv_query_rt_values_ex(ctx, &v), 0, "ibv_query_rt_values_ex: %s",
		     hcasim_last_error());
	cr_assert_eq(v.comp_mask, IBV_VALUES_MASK_RAW_CLOCK, "comp_mask back 0x%x", v.comp_mask);
	cr_assert_eq(v.raw_clock.tv_sec, 0, "tv_sec %lld", (long long)v.raw_clock.tv_sec);
	cr_assert_geq(v.raw_clock.tv_nsec, 0);
	return (uint64_t)v.raw_clock.tv_nsec;
}

static struct ibv_cq_ex *mk_cq_ex(struct tb_dev *t, uint64_t wc_flags, struct ibv_comp_channel *ch)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 64, .channel = ch, .wc_flags = wc_flags };
	struct ibv_cq_ex *x = ibv_create_cq_ex(t->ctx, &a);

	cr_assert_not_null(x, "ibv_create_cq_ex: %s", hcasim_last_error());
	return x;
}

/* Give t a new CQ in place of tb_open's (tb_close destroys it): an extended CQ with wc_flags
 * and channel ch, or with wc_flags 0 a plain one made the same way, so that two runs of a
 * workload issue the same commands. */
static void swap_cq(struct tb_dev *t, uint64_t wc_flags, struct ibv_comp_channel *ch)
{
	cr_assert_eq(ibv_destroy_cq(t->cq), 0, "%s", hcasim_last_error());
	t->cq = wc_flags ? ibv_cq_ex_to_cq(mk_cq_ex(t, wc_flags, ch))
			 : ibv_create_cq(t->ctx, 64, NULL, ch, 0);
	cr_assert_not_null(t->cq, "%s", hcasim_last_error());
}

/* Two devices with RC QPs connected to each other on CQs from swap_cq. */
struct rig {
	struct tb_dev a, b;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *ma, *mb;
	struct ibv_comp_channel *ch; /* a's CQ's completion channel, if asked for */
};

static void rig_open(struct rig *r, uint64_t wc_flags, bool chan)
{
	memset(r, 0, sizeof(*r));
	tb_open(&r->a, 0);
	tb_open(&r->b, 1);
	if (chan) {
		r->ch = ibv_create_comp_channel(r->a.ctx);
		cr_assert_not_null(r->ch, "%s", hcasim_last_error());
	}
	swap_cq(&r->a, wc_flags, r->ch);
	swap_cq(&r->b, wc_flags, NULL);
	r->qa = tb_create_qp(&r->a, IBV_QPT_RC);
	r->qb = tb_create_qp(&r->b, IBV_QPT_RC);
	tb_connect(&r->a, r->qa, &r->b, r->qb->qp_num, IBV_MTU_1024);
	tb_connect(&r->b, r->qb, &r->a, r->qa->qp_num, IBV_MTU_1024);
	r->ma = tb_mr(&r->a, 4096);
	r->mb = tb_mr(&r->b, 4096);
}

static void rig_close(struct rig *r)
{
	void *ba = r->ma->addr, *bb = r->mb->addr;

	if (r->qa)
		cr_assert_eq(ibv_destroy_qp(r->qa), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(r->qb), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_dereg_mr(r->ma), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_dereg_mr(r->mb), 0, "%s", hcasim_last_error());
	free(ba);
	free(bb);
	if (r->ch) {
		cr_assert_eq(ibv_destroy_cq(r->a.cq), 0, "%s", hcasim_last_error());
		r->a.cq = NULL;
		cr_assert_eq(ibv_destroy_comp_channel(r->ch), 0, "%s", hcasim_last_error());
	}
	tb_close(&r->a);
	tb_close(&r->b);
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, size_t off, uint32_t len,
		      uint64_t wr_id)
{
	struct ibv_sge s = { (uintptr_t)mr->addr + off, len, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;

	cr_assert_eq(ibv_post_recv(qp, &wr, &bad), 0, "ibv_post_recv: %s", hcasim_last_error());
}

/* One signaled WR from local bytes [off, off+len) of mr. */
static void post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_mr *mr, size_t off,
		      uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)mr->addr + off, len, mr->lkey };
	struct ibv_send_wr *bad;

	wr->sg_list = &s;
	wr->num_sge = 1;
	wr->send_flags |= IBV_SEND_SIGNALED;
	cr_assert_eq(ibv_post_send(qp, wr, &bad), 0, "ibv_post_send: %s", hcasim_last_error());
}

/* A completion as a user sees it, from either API. */
struct rec {
	uint64_t wr_id;
	int status, opcode;
	uint32_t vendor_err, byte_len, imm, qp_num, src_qp, wc_flags, slid, sl, dlid_path_bits;
	uint64_t ts;    /* extended CQs only: the completion timestamp */
	uint64_t at_ps; /* hcasim_now_ps() when the poll returned it */
};

/* Take the completion the extended poll stands on; the CQ must report every field. */
static void rec_ex(struct ibv_cq_ex *x, struct rec *r)
{
	*r = (struct rec){
		.wr_id = x->wr_id,
		.status = x->status,
		.opcode = ibv_wc_read_opcode(x),
		.vendor_err = ibv_wc_read_vendor_err(x),
		.byte_len = ibv_wc_read_byte_len(x),
		.imm = ibv_wc_read_imm_data(x),
		.qp_num = ibv_wc_read_qp_num(x),
		.src_qp = ibv_wc_read_src_qp(x),
		.wc_flags = ibv_wc_read_wc_flags(x),
		.slid = ibv_wc_read_slid(x),
		.sl = ibv_wc_read_sl(x),
		.dlid_path_bits = ibv_wc_read_dlid_path_bits(x),
		.ts = ibv_wc_read_completion_ts(x),
	};
}

static void rec_wc(const struct ibv_wc *w, struct rec *r)
{
	*r = (struct rec){
		.wr_id = w->wr_id,
		.status = w->status,
		.opcode = w->opcode,
		.vendor_err = w->vendor_err,
		.byte_len = w->byte_len,
		.imm = w->imm_data,
		.qp_num = w->qp_num,
		.src_qp = w->src_qp,
		.wc_flags = w->wc_flags,
		.slid = w->slid,
		.sl = w->sl,
		.dlid_path_bits = w->dlid_path_bits,
		.at_ps = hcasim_now_ps(),
	};
}

/* Poll n completions from cq, in batches of at most what is still missing: with ibv_poll_cq,
 * or (ex) with start/next/end_poll, which cost the host the same. */
static void collect(struct ibv_cq *cq, bool ex, struct rec *out, int n)
{
	uint64_t start = hcasim_now_ps();
	int got = 0;

	while (got < n) {
		cr_assert_lt(hcasim_now_ps() - start, TS_LIMIT_PS, "only %d of %d completions",
			     got, n);
		if (!ex) {
			struct ibv_wc wc[16];
			int k = ibv_poll_cq(cq, n - got < 16 ? n - got : 16, wc);

			cr_assert_geq(k, 0, "ibv_poll_cq: %s", hcasim_last_error());
			for (int i = 0; i < k; i++)
				rec_wc(&wc[i], &out[got++]);
			continue;
		}
		struct ibv_cq_ex *x = (struct ibv_cq_ex *)cq;
		struct ibv_poll_cq_attr pa = { 0 };
		int rc = ibv_start_poll(x, &pa);

		if (rc == ENOENT)
			continue;
		cr_assert_eq(rc, 0, "ibv_start_poll: %d %s", rc, hcasim_last_error());
		int first = got;

		do
			rec_ex(x, &out[got++]);
		while (got < n && (rc = ibv_next_poll(x)) == 0);
		cr_assert(rc == 0 || rc == ENOENT, "ibv_next_poll: %d", rc);
		ibv_end_poll(x);
		/* A batch returns when ibv_end_poll does, as ibv_poll_cq's returns at its end. */
		while (first < got)
			out[first++].at_ps = hcasim_now_ps();
	}
}

/* ---- device attributes and the raw clock ---- */

Test(timestamps, hca_core_clock_is_the_configured_clock)
{
	static const char *const mhz[] = { "500", "350" };

	for (unsigned i = 0; i < 2; i++) {
		struct ibv_device_attr_ex ex;
		struct tb_dev t;

		tb_config("clock.core_mhz", mhz[i]);
		tb_open(&t, 1);
		memset(&ex, 0xa5, sizeof(ex));
		cr_assert_eq(ibv_query_device_ex(t.ctx, NULL, &ex), 0, "%s", hcasim_last_error());
		cr_assert_eq(ex.hca_core_clock, strtoull(mhz[i], NULL, 10) * 1000,
			     "hca_core_clock %llu kHz at %s MHz",
			     (unsigned long long)ex.hca_core_clock, mhz[i]);
		/* Timestamps are the 64-bit cycle count: every bit is significant. */
		cr_assert_eq(ex.completion_timestamp_mask, UINT64_MAX, "mask 0x%llx",
			     (unsigned long long)ex.completion_timestamp_mask);
		tb_close(&t);
		hcasim_shutdown();
	}
}

Test(timestamps, raw_clock_is_the_core_cycle_when_the_read_reaches_the_device)
{
	struct tb_dev t;
	uint64_t period, rd_ps, prev = 0;

	tb_config("clock.core_mhz", "400");
	tb_config("pcie.mmio_read_ns", "700");
	tb_open(&t, 0);
	period = core_period_ps();
	rd_ps = cfg_u64("pcie.mmio_read_ns") * 1000;
	cr_assert_eq(period, 2500);
	hcasim_run_for_ps(10 * US); /* no posted write still in flight to delay the read */
	for (uint64_t i = 0; i < 6; i++) {
		uint64_t t0 = hcasim_now_ps(), c = raw_clock(t.ctx), t1 = hcasim_now_ps();

		/* Two MMIO reads (LO latches HI, then HI); the counter is sampled when the
		 * first reaches the device, half a round trip after the call. */
		cr_assert_eq(t1 - t0, 2 * rd_ps, "the call took %llu ps",
			     (unsigned long long)(t1 - t0));
		cr_assert_eq(c, (t0 + rd_ps / 2) / period, "raw clock %llu at t=%llu ps",
			     (unsigned long long)c, (unsigned long long)t0);
		cr_assert_gt(c, prev);
		prev = c;
		hcasim_run_for_ps(i * 1234567 + 1); /* uneven gaps: not multiples of a cycle */
		if (i == 3) /* past 2^32 cycles: the upper half counts too */
			hcasim_run_for_ps((1ull << 32) * period);
	}
	cr_assert_gt(prev, 1ull << 32);
	tb_close(&t);
}

Test(timestamps, rt_values_unknown_comp_mask_is_einval_and_changes_nothing)
{
	struct ibv_values_ex v;
	struct tb_dev t;
	uint64_t before;

	tb_open(&t, 0);
	memset(&v, 0x5a, sizeof(v));
	v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK | IBV_VALUES_MASK_RESERVED;
	before = hcasim_now_ps();
	cr_assert_eq(ibv_query_rt_values_ex(t.ctx, &v), EINVAL);
	cr_assert_not_null(strstr(hcasim_last_error(), "comp_mask"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_now_ps(), before, "a refused query read the device");
	cr_assert_eq(v.comp_mask, IBV_VALUES_MASK_RAW_CLOCK | IBV_VALUES_MASK_RESERVED);
	for (size_t i = 0; i < sizeof(v.raw_clock); i++)
		cr_assert_eq(((uint8_t *)&v.raw_clock)[i], 0x5a, "raw_clock byte %zu written", i);
	/* Nothing asked, nothing read. */
	v.comp_mask = 0;
	cr_assert_eq(ibv_query_rt_values_ex(t.ctx, &v), 0, "%s", hcasim_last_error());
	cr_assert_eq(v.comp_mask, 0);
	cr_assert_eq(hcasim_now_ps(), before);
	tb_close(&t);
}

/* ---- completion timestamps ---- */

/* rounds × 4 SENDs a -> b; every completion polled with the extended API into sends/recvs, and
 * the raw clock of each device read before the first post and after the last poll. */
static void send_rounds(struct rig *r, int rounds, struct rec *sends, struct rec *recvs,
			uint64_t clk_before[2], uint64_t clk_after[2])
{
	clk_before[0] = raw_clock(r->a.ctx);
	clk_before[1] = raw_clock(r->b.ctx);
	for (int k = 0; k < rounds; k++) {
		for (int i = 0; i < 4; i++)
			post_recv(r->qb, r->mb, (size_t)i * 512, 512, 100 + (uint64_t)(k * 4 + i));
		for (int i = 0; i < 4; i++) {
			struct ibv_send_wr wr = { .wr_id = (uint64_t)(k * 4 + i),
						  .opcode = IBV_WR_SEND };

			post_send(r->qa, &wr, r->ma, 0, 64u * (uint32_t)(i + 1));
		}
		collect(r->b.cq, true, &recvs[k * 4], 4);
		collect(r->a.cq, true, &sends[k * 4], 4);
	}
	clk_after[0] = raw_clock(r->a.ctx);
	clk_after[1] = raw_clock(r->b.ctx);
}

static void check_ts_order(const struct rec *v, int n, const char *what, uint64_t lo, uint64_t hi,
			   uint64_t period)
{
	for (int i = 0; i < n; i++) {
		cr_assert_eq(v[i].status, IBV_WC_SUCCESS, "%s %d: %s", what, i,
			     ibv_wc_status_str(v[i].status));
		cr_assert(v[i].ts > lo && v[i].ts < hi,
			  "%s %d: timestamp %llu outside the clock reads %llu..%llu", what, i,
			  (unsigned long long)v[i].ts, (unsigned long long)lo,
			  (unsigned long long)hi);
		/* Written before the poll that found it. */
		cr_assert_leq(v[i].ts, v[i].at_ps / period, "%s %d: timestamp after its poll",
			      what, i);
		if (i)
			cr_assert_gt(v[i].ts, v[i - 1].ts, "%s %d: timestamps not increasing", what,
				     i);
	}
}

Test(timestamps, completion_timestamps_increase_and_lie_between_clock_reads)
{
	struct rec sends[12], recvs[12];
	uint64_t before[2], after[2], period;
	struct rig r;

	rig_open(&r, ALL_WC, false);
	period = core_period_ps();
	send_rounds(&r, 3, sends, recvs, before, after);
	check_ts_order(sends, 12, "send", before[0], after[0], period);
	check_ts_order(recvs, 12, "recv", before[1], after[1], period);
	for (int i = 0; i < 12; i++) {
		cr_assert_eq(sends[i].wr_id, (uint64_t)i);
		cr_assert_eq(recvs[i].wr_id, 100 + (uint64_t)i);
		cr_assert_eq(recvs[i].byte_len, 64u * (uint32_t)(i % 4 + 1));
		/* Both core clocks count from t = 0 at the same rate: the receive CQE is written
		 * before the ACK that completes the send leaves the responder. */
		cr_assert_lt(recvs[i].ts, sends[i].ts, "message %d: recv %llu, send %llu", i,
			     (unsigned long long)recvs[i].ts, (unsigned long long)sends[i].ts);
	}
	rig_close(&r);
}

Test(timestamps, completion_timestamps_count_cycles_of_the_configured_clock)
{
	static const char *const mhz[] = { "250", "1000" };
	uint64_t span[2];

	for (int c = 0; c < 2; c++) {
		struct rec sends[4], recvs[4];
		uint64_t before[2], after[2], post_ps;
		struct ibv_device_attr_ex ex;
		struct rig r;

		tb_config("clock.core_mhz", mhz[c]);
		rig_open(&r, ALL_WC, false);
		cr_assert_eq(ibv_query_device_ex(r.a.ctx, NULL, &ex), 0, "%s", hcasim_last_error());
		post_ps = hcasim_now_ps();
		send_rounds(&r, 1, sends, recvs, before, after);
		for (int i = 0; i < 4; i++) {
			/* What a user does: cycles / hca_core_clock is time. The CQE was
			 * written after the posts began and before the poll that found it. */
			uint64_t at_ps = sends[i].ts * 1000000000ull / ex.hca_core_clock;

			cr_assert(at_ps >= post_ps && at_ps <= sends[i].at_ps,
				  "%s MHz send %d: timestamp %llu cycles = %llu ps, outside "
				  "%llu..%llu ps", mhz[c], i, (unsigned long long)sends[i].ts,
				  (unsigned long long)at_ps, (unsigned long long)post_ps,
				  (unsigned long long)sends[i].at_ps);
		}
		span[c] = sends[3].ts - recvs[0].ts;
		rig_close(&r);
		hcasim_shutdown();
	}
	/* The same four messages span more cycles of a 4x faster clock (the link's time does
	 * not shrink with the core clock). */
	cr_assert_gt(span[1], 2 * span[0], "span %llu cycles at 1000 MHz, %llu at 250 MHz",
		     (unsigned long long)span[1], (unsigned long long)span[0]);
}

/* ---- the extended poll API against ibv_poll_cq ---- */

#define WL_A 7 /* completions on a's CQ in the workload */
#define WL_B 3 /* on b's CQ */

/* A workload touching every field: SEND with immediate, RDMA WRITE with immediate, RDMA READ,
 * fetch-and-add (RC), a UD SEND with a GRH and SL 3, then a send with a bad lkey (an error
 * completion) and the flush of a posted receive. Polled with the chosen API; the simulated
 * time at the end in *end_ps. */
static void workload(bool ex, struct rec *ra, struct rec *rb, uint64_t *end_ps)
{
	struct ibv_ah_attr aa = { .sl = 3, .port_num = 1, .is_global = 1 };
	struct ibv_qp *ua, *ub;
	struct ibv_ah *ah;
	struct rig r;

	rig_open(&r, ex ? ALL_WC : 0, false);
	ua = tb_create_qp(&r.a, IBV_QPT_UD);
	ub = tb_create_qp(&r.b, IBV_QPT_UD);
	tb_connect(&r.a, ua, &r.b, 0, IBV_MTU_1024);
	tb_connect(&r.b, ub, &r.a, 0, IBV_MTU_1024);
	aa.dlid = r.b.port.lid;
	aa.grh.hop_limit = 64;
	cr_assert_eq(ibv_query_gid(r.b.ctx, 1, 0, &aa.grh.dgid), 0);
	ah = ibv_create_ah(r.a.pd, &aa);
	cr_assert_not_null(ah, "%s", hcasim_last_error());

	post_recv(r.qb, r.mb, 0, 256, 0xb0);
	post_recv(r.qb, r.mb, 256, 16, 0xb1);
	post_recv(ub, r.mb, 1024, 40 + 256, 0xb2);
	post_recv(r.qa, r.ma, 2048, 64, 0xa9); /* flushed at the end */
	{
		struct ibv_send_wr w[4] = {
			{ .wr_id = 0xa0, .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = 0x12345678 },
			{ .wr_id = 0xa1, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .imm_data = 0x9abc,
			  .wr.rdma = { (uintptr_t)r.mb->addr + 2048, r.mb->rkey } },
			{ .wr_id = 0xa2, .opcode = IBV_WR_RDMA_READ,
			  .wr.rdma = { (uintptr_t)r.mb->addr, r.mb->rkey } },
			{ .wr_id = 0xa3, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
			  .wr.atomic = { .remote_addr = (uintptr_t)r.mb->addr + 3072,
					 .compare_add = 5, .rkey = r.mb->rkey } },
		};
		const uint32_t len[4] = { 100, 64, 32, 8 };
		const size_t off[4] = { 0, 128, 512, 768 };

		for (int i = 0; i < 4; i++)
			post_send(r.qa, &w[i], r.ma, off[i], len[i]);
	}
	collect(r.b.cq, ex, rb, 2);
	collect(r.a.cq, ex, ra, 4);
	{
		struct ibv_send_wr w = { .wr_id = 0xa4, .opcode = IBV_WR_SEND,
					 .wr.ud = { ah, ub->qp_num, TB_QKEY } };

		post_send(ua, &w, r.ma, 0, 256);
	}
	collect(r.b.cq, ex, rb + 2, 1);
	collect(r.a.cq, ex, ra + 4, 1);
	{
		struct ibv_send_wr w = { .wr_id = 0xa5, .opcode = IBV_WR_SEND };
		struct ibv_sge s = { (uintptr_t)r.ma->addr, 16, r.ma->lkey ^ 0x5a5a00 };
		struct ibv_send_wr *bad;

		w.sg_list = &s;
		w.num_sge = 1;
		w.send_flags = IBV_SEND_SIGNALED;
		cr_assert_eq(ibv_post_send(r.qa, &w, &bad), 0, "%s", hcasim_last_error());
	}
	collect(r.a.cq, ex, ra + 5, WL_A - 5);
	*end_ps = hcasim_now_ps();
	cr_assert_eq(ibv_destroy_ah(ah), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(ua), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(ub), 0, "%s", hcasim_last_error());
	rig_close(&r);
}

static void rec_same(const struct rec *p, const struct rec *x, const char *what, int i)
{
#define SAME(f)                                                                                    \
	cr_assert_eq(x->f, p->f, "%s completion %d: " #f " %llu from the extended API, %llu "      \
		     "from ibv_poll_cq", what, i, (unsigned long long)x->f,                        \
		     (unsigned long long)p->f)
	SAME(wr_id);
	SAME(status);
	SAME(opcode);
	SAME(vendor_err);
	SAME(byte_len);
	SAME(imm);
	SAME(qp_num);
	SAME(src_qp);
	SAME(wc_flags);
	SAME(slid);
	SAME(sl);
	SAME(dlid_path_bits);
	SAME(at_ps);
#undef SAME
}

Test(timestamps, every_read_accessor_matches_ibv_poll_cq_for_the_same_workload)
{
	struct rec pa[WL_A], pb[WL_B], xa[WL_A], xb[WL_B];
	uint64_t pend, xend;
	bool imm = false, grh = false, err = false, flush = false;

	workload(false, pa, pb, &pend);
	hcasim_shutdown(); /* the same boot again: the same QP numbers, LIDs and times */
	workload(true, xa, xb, &xend);
	for (int i = 0; i < WL_A; i++)
		rec_same(&pa[i], &xa[i], "a", i);
	for (int i = 0; i < WL_B; i++)
		rec_same(&pb[i], &xb[i], "b", i);
	cr_assert_eq(xend, pend, "the extended poll cost the host differently");
	/* The workload exercised what it claims to. */
	for (int i = 0; i < WL_B; i++) {
		imm |= (pb[i].wc_flags & IBV_WC_WITH_IMM) != 0;
		grh |= (pb[i].wc_flags & IBV_WC_GRH) && pb[i].sl == 3 && pb[i].src_qp != 0;
	}
	for (int i = 0; i < WL_A; i++) {
		err |= pa[i].status == IBV_WC_LOC_PROT_ERR && pa[i].wr_id == 0xa5;
		flush |= pa[i].status == IBV_WC_WR_FLUSH_ERR && pa[i].wr_id == 0xa9;
	}
	cr_assert(imm && grh && err && flush, "imm %d grh %d err %d flush %d", imm, grh, err,
		  flush);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(pa[i].status, IBV_WC_SUCCESS, "a completion %d: %s", i,
			     ibv_wc_status_str(pa[i].status));
	cr_assert_eq(pa[2].byte_len, 32);
	cr_assert_eq(pa[3].byte_len, 8);
	cr_assert_eq(pb[0].imm, 0x12345678);
}

/* ---- an extended CQ is a CQ ---- */

Test(timestamps, cq_ex_polls_arms_resizes_and_destroys_as_a_plain_cq)
{
	struct ibv_comp_channel *ch;
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq *ev_cq;
	struct ibv_cq_ex *x;
	struct ibv_wc wc[4];
	uint64_t resize_ps;
	void *ev_ctx;
	struct rig r;

	/* Only timestamps asked: the other optional accessors stay unset. */
	rig_open(&r, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, true);
	ch = r.ch;
	x = (struct ibv_cq_ex *)r.a.cq;
	cr_assert_null(x->read_byte_len);
	cr_assert_null(x->read_src_qp);
	cr_assert_not_null(x->read_completion_ts);
	cr_assert_not_null(x->read_wc_flags);
	for (int i = 0; i < 4; i++)
		post_recv(r.qb, r.mb, (size_t)i * 64, 64, 0xb0 + (uint64_t)i);

	/* Armed, one SEND: the completion event names the CQ; ibv_poll_cq reads it. */
	cr_assert_eq(ibv_req_notify_cq(r.a.cq, 0), 0, "%s", hcasim_last_error());
	{
		struct ibv_send_wr w = { .wr_id = 1, .opcode = IBV_WR_SEND };

		post_send(r.qa, &w, r.ma, 0, 8);
	}
	cr_assert_eq(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0, "%s", hcasim_last_error());
	cr_assert_eq(ev_cq, r.a.cq);
	ibv_ack_cq_events(ev_cq, 1);
	cr_assert_eq(ibv_poll_cq(r.a.cq, 4, wc), 1, "%s", hcasim_last_error());
	cr_assert_eq(wc[0].wr_id, 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	cr_assert_eq(ibv_start_poll(x, &pa), ENOENT, "ibv_poll_cq's completion seen twice");

	/* Three SENDs: resize while they are unread, then one by the extended API and the rest
	 * by ibv_poll_cq, from the one consumer index. */
	for (uint64_t i = 2; i <= 4; i++) {
		struct ibv_send_wr w = { .wr_id = i, .opcode = IBV_WR_SEND };

		post_send(r.qa, &w, r.ma, 0, 8);
	}
	hcasim_run_for_ps(100 * US);
	resize_ps = hcasim_now_ps();
	cr_assert_eq(ibv_resize_cq(r.a.cq, 200), 0, "%s", hcasim_last_error());
	cr_assert_geq(r.a.cq->cqe, 200);
	cr_assert_eq(ibv_start_poll(x, &pa), 0);
	cr_assert_eq(x->wr_id, 2);
	cr_assert_eq(x->status, IBV_WC_SUCCESS);
	cr_assert_eq(ibv_wc_read_opcode(x), IBV_WC_SEND);
	/* The CQE moved to the new ring keeps the cycle it was first written at. */
	cr_assert_gt(ibv_wc_read_completion_ts(x), 0);
	cr_assert_lt(ibv_wc_read_completion_ts(x), resize_ps / core_period_ps(),
		     "timestamp %llu not before the resize",
		     (unsigned long long)ibv_wc_read_completion_ts(x));
	ibv_end_poll(x);
	cr_assert_eq(ibv_poll_cq(r.a.cq, 4, wc), 2, "%s", hcasim_last_error());
	cr_assert_eq(wc[0].wr_id, 3);
	cr_assert_eq(wc[1].wr_id, 4);

	/* Destroy: the QP first, then the CQ, then the channel it held. */
	cr_assert_eq(ibv_destroy_qp(r.qa), 0, "%s", hcasim_last_error());
	r.qa = NULL;
	cr_assert_neq(ibv_destroy_comp_channel(ch), 0, "destroyed while the CQ uses it");
	cr_assert_eq(ibv_destroy_cq(r.a.cq), 0, "%s", hcasim_last_error());
	r.a.cq = NULL;
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0, "%s", hcasim_last_error());
	r.ch = NULL;
	rig_close(&r);
}

/* ---- refused requests ---- */

/* The last command the driver ran on ctx (submit time), to show none ran since. */
static uint64_t last_cmd_ps(struct ibv_context *ctx)
{
	struct hcasim_cmd_record rec;

	cr_assert_eq(hcasim_cmd_log(ctx, &rec, 1), 1);
	return rec.submit_ps;
}

Test(timestamps, create_cq_ex_refuses_what_it_cannot_do_and_changes_nothing)
{
	static const struct {
		uint64_t wc_flags;
		uint32_t comp_mask, flags;
		bool pd;         /* parent_domain set */
		int err;
		const char *name; /* in the message */
	} bad[] = {
		{ IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, 0, 0, false, EOPNOTSUPP,
		  "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK" },
		{ IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_CVLAN, 0, 0, false, EOPNOTSUPP,
		  "IBV_WC_EX_WITH_CVLAN" },
		{ IBV_WC_EX_WITH_FLOW_TAG, 0, 0, false, EOPNOTSUPP, "IBV_WC_EX_WITH_FLOW_TAG" },
		{ IBV_WC_EX_WITH_TM_INFO, 0, 0, false, EOPNOTSUPP, "IBV_WC_EX_WITH_TM_INFO" },
		{ 1ull << 40, 0, 0, false, EOPNOTSUPP, "wc_flags" },
		{ 0, 1u << 2, 0, false, EINVAL, "comp_mask" },
		{ 0, IBV_CQ_INIT_ATTR_MASK_PD, 0, true, EOPNOTSUPP, "parent_domain" },
		{ 0, IBV_CQ_INIT_ATTR_MASK_FLAGS, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN, false,
		  EOPNOTSUPP, "flags" },
	};
	struct ibv_cq_init_attr_ex a;
	struct ibv_cq_ex *x;
	struct tb_dev t;
	uint64_t before;

	tb_open(&t, 0);
	before = last_cmd_ps(t.ctx);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = (struct ibv_cq_init_attr_ex){ .cqe = 16, .wc_flags = bad[i].wc_flags,
						  .comp_mask = bad[i].comp_mask,
						  .flags = bad[i].flags,
						  .parent_domain = bad[i].pd ? t.pd : NULL };
		errno = 0;
		cr_assert_null(ibv_create_cq_ex(t.ctx, &a), "case %u accepted", i);
		cr_assert_eq(errno, bad[i].err, "case %u: errno %d, expected %d (%s)", i, errno,
			     bad[i].err, hcasim_last_error());
		cr_assert_not_null(strstr(hcasim_last_error(), bad[i].name),
				   "case %u: message '%s' does not name %s", i,
				   hcasim_last_error(), bad[i].name);
	}
	a = (struct ibv_cq_init_attr_ex){ .cqe = 0, .wc_flags = ALL_WC };
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(t.ctx, &a));
	cr_assert_eq(errno, EINVAL);
	cr_assert_not_null(strstr(hcasim_last_error(), "cqe"), "%s", hcasim_last_error());
	errno = 0;
	cr_assert_null(ibv_create_cq_ex(t.ctx, NULL));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(last_cmd_ps(t.ctx), before, "a refused ibv_create_cq_ex ran a command");

	/* The single-threaded hint is accepted; the CQ works. */
	a = (struct ibv_cq_init_attr_ex){ .cqe = 16, .wc_flags = ALL_WC,
					  .comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
					  .flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED };
	x = ibv_create_cq_ex(t.ctx, &a);
	cr_assert_not_null(x, "%s", hcasim_last_error());
	cr_assert_geq(x->cqe, 16);
	cr_assert_eq(ibv_destroy_cq(ibv_cq_ex_to_cq(x)), 0, "%s", hcasim_last_error());
	tb_close(&t);
}

Test(timestamps, start_poll_with_a_comp_mask_is_einval_and_consumes_nothing)
{
	struct ibv_poll_cq_attr pa = { .comp_mask = 1 };
	struct rec got;
	struct rig r;

	rig_open(&r, ALL_WC, false);
	post_recv(r.qb, r.mb, 0, 64, 0xb0);
	{
		struct ibv_send_wr w = { .wr_id = 7, .opcode = IBV_WR_SEND };

		post_send(r.qa, &w, r.ma, 0, 8);
	}
	hcasim_run_for_ps(100 * US);
	cr_assert_eq(ibv_start_poll((struct ibv_cq_ex *)r.a.cq, &pa), EINVAL);
	cr_assert_not_null(strstr(hcasim_last_error(), "comp_mask"), "%s", hcasim_last_error());
	collect(r.a.cq, true, &got, 1); /* still there */
	cr_assert_eq(got.wr_id, 7);
	collect(r.b.cq, true, &got, 1);
	cr_assert_eq(got.wr_id, 0xb0);
	rig_close(&r);
}
