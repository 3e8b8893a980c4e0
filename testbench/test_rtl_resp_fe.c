/* Block test of the responder's front end (model/twin.h "resp_fe", rtl/resp_fe.sv): the same
 * directed cases — every verdict: a PSN sequence error with and without its NAK, duplicates,
 * a lost UC message, each invalid request (opcode sequence, XRC SRQ, opcode for the QP type,
 * atomic alignment, WRITE length), each remote access error (access flags, each rkey
 * refusal) and the requests that pass — on the C twin and on the RTL, each against the
 * expected answer; seeded random requests on both compared transaction by transaction; and in
 * the running system, resp_fe=lockstep clean over WRITEs and SENDs, and the injected RTL bug
 * (HCASIM_RTL_BUG=resp_fe) halting the run with block, cycle and field. */
#include "testbench/tb.h"
#include "model/pkt.h"
#include "model/twin.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;
static uint32_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static const struct hm_resp_fe_ops *fe_impl(bool rtl)
{
	const void *ops = rtl ? hm_twin_rtl(HM_TWIN_RESP_FE) : hm_twin_model(HM_TWIN_RESP_FE);

	if (!ops)
		cr_skip_test("this build has no RTL twin of resp_fe (no Verilator)");
	return ops;
}

/* The directed cases' QP and region: expected PSN 100, every remote right; the rkey is index
 * 3 of 16, variant 0x11, PD 7, [0x10000, +0x10000) at device address 0x900000. */
#define FE_KEY ((3u << 8) | 0x11u)
#define FE_VA 0x10000ull
#define FE_IOVA 0x900000ull
#define FE_RIGHTS (HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ | HCA_ACCESS_REMOTE_ATOMIC)

static struct hm_resp_fe_in fe_base(uint8_t qpt, uint8_t pos, uint8_t cls, uint32_t paylen)
{
	return (struct hm_resp_fe_in){
		.pos = pos, .cls = cls, .psn = 100, .paylen = paylen, .reth_va = FE_VA + 0x100,
		.reth_rkey = FE_KEY, .reth_len = paylen, .atomic_va = FE_VA + 0x40,
		.atomic_rkey = FE_KEY, .qp_type = qpt, .qpn = 0x42, .qp_access = FE_RIGHTS,
		.epsn = 100, .wr_va = FE_VA + 0x800, .wr_rkey = FE_KEY, .pdn = 7, .nkeys = 16,
		.key = { true, 0x11, 0, false, 7, FE_RIGHTS, 0, FE_VA, 0x10000, FE_IOVA }
	};
}

struct fe_case {
	struct hm_resp_fe_in in;
	struct hm_resp_fe_out want;
};

/* want: verdict, kind, psn class, send_nak, nak_sent, key, iova (cycle set by the caller). */
#define W(v, k, c, s, n, key, iova) ((struct hm_resp_fe_out){ 0, v, k, c, s, n, key, iova })
#define EX HM_RESP_FE_EXECUTE
#define EXP HM_PSN_EXPECTED

/* The PSN stage, the sequence and the opcode: the verdicts before a request's kind. */
static size_t fe_cases_seq(struct fe_case *c)
{
	size_t n = 0;
	const uint8_t RC = HCA_QPT_RC, UC = HCA_QPT_UC, XRC = HCA_QPT_XRC_RECV;

#define C(in_, want_) (c[n++] = (struct fe_case){ in_, want_ })
	C(fe_base(RC, HM_POS_ONLY, HM_OPC_SEND, 8), W(EX, HM_RESP_FE_SEND, EXP, 0, 0, 0, 0));
	/* a gap: the first earns the NAK, the next not; a duplicate keeps the flag */
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_SEND, 8),
				 W(HM_RESP_FE_AHEAD, 0, HM_PSN_AHEAD, 1, 1, 0, 0) };
	c[n++].in.psn = 101;
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_SEND, 8),
				 W(HM_RESP_FE_AHEAD, 0, HM_PSN_AHEAD, 0, 1, 0, 0) };
	c[n].in.psn = 0x7fffff + 100;
	c[n++].in.nak_sent = true;
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_WRITE, 8),
				 W(HM_RESP_FE_DUPLICATE, 0, HM_PSN_DUPLICATE, 0, 1, 0, 0) };
	c[n].in.psn = 99;
	c[n++].in.nak_sent = true;
	/* the expected PSN clears the flag */
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_SEND, 8),
				 W(EX, HM_RESP_FE_SEND, EXP, 0, 0, 0, 0) };
	c[n++].in.nak_sent = true;
	/* the opcode sequence: a MIDDLE outside a message, a FIRST inside one, a WRITE's
	 * packet inside a SEND */
	C(fe_base(RC, HM_POS_MIDDLE, HM_OPC_SEND, 8),
	  W(HM_RESP_FE_OPCODE_SEQ, 0, EXP, 0, 0, 0, 0));
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_FIRST, HM_OPC_SEND, 8),
				 W(HM_RESP_FE_OPCODE_SEQ, 0, EXP, 0, 0, 0, 0) };
	c[n++].in.in_msg = true;
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_LAST, HM_OPC_WRITE, 8),
				 W(HM_RESP_FE_OPCODE_SEQ, 0, EXP, 0, 0, 0, 0) };
	c[n++].in.in_msg = true;
	/* no request of the QP's type: a READ on UC, an opcode of no request class */
	C(fe_base(UC, HM_POS_ONLY, HM_OPC_READ_REQ, 0), W(HM_RESP_FE_OPCODE, 0, EXP, 0, 0, 0, 0));
	C(fe_base(RC, HM_POS_ONLY, 0, 0), W(HM_RESP_FE_OPCODE, 0, EXP, 0, 0, 0, 0));
	/* UC: a gap inside a message loses it (also behind), a FIRST after a gap starts afresh,
	 * a lost message's packets go */
	c[n] = (struct fe_case){ fe_base(UC, HM_POS_MIDDLE, HM_OPC_SEND, 8),
				 W(HM_RESP_FE_UC_LOST, 0, HM_PSN_AHEAD, 0, 0, 0, 0) };
	c[n].in.in_msg = true;
	c[n++].in.psn = 103;
	c[n] = (struct fe_case){ fe_base(UC, HM_POS_LAST, HM_OPC_SEND, 8),
				 W(HM_RESP_FE_UC_LOST, 0, HM_PSN_DUPLICATE, 0, 0, 0, 0) };
	c[n].in.in_msg = true;
	c[n++].in.psn = 90;
	c[n] = (struct fe_case){ fe_base(UC, HM_POS_FIRST, HM_OPC_WRITE, 64),
				 W(EX, HM_RESP_FE_WRITE, HM_PSN_AHEAD, 0, 0, 0, FE_IOVA + 0x100) };
	c[n].in.in_msg = true;
	c[n++].in.psn = 105;
	c[n] = (struct fe_case){ fe_base(UC, HM_POS_MIDDLE, HM_OPC_SEND, 8),
				 W(HM_RESP_FE_UC_LOST, 0, EXP, 0, 0, 0, 0) };
	c[n++].in.uc_drop = true;
	/* XRC: no SRQ, an SRQ of another domain, within a message another SRQ; and one that
	 * passes */
	c[n] = (struct fe_case){ fe_base(XRC, HM_POS_ONLY, HM_OPC_SEND, 8),
				 W(HM_RESP_FE_XRC_SRQ, 0, EXP, 0, 0, 0, 0) };
	c[n++].in.qp_xrcd = 5;
	c[n] = (struct fe_case){ fe_base(XRC, HM_POS_ONLY, HM_OPC_SEND, 8),
				 W(HM_RESP_FE_XRC_SRQ, 0, EXP, 0, 0, 0, 0) };
	c[n].in.qp_xrcd = 5;
	c[n++].in.srq_xrcd = 6;
	c[n] = (struct fe_case){ fe_base(XRC, HM_POS_LAST, HM_OPC_SEND, 8),
				 W(HM_RESP_FE_XRC_SRQ, 0, EXP, 0, 0, 0, 0) };
	c[n].in.qp_xrcd = c[n].in.srq_xrcd = 5;
	c[n].in.in_msg = true;
	c[n].in.pkt_srqn = 9;
	c[n++].in.xrc_srqn = 8;
	c[n] = (struct fe_case){ fe_base(XRC, HM_POS_LAST, HM_OPC_SEND, 8),
				 W(EX, HM_RESP_FE_SEND, EXP, 0, 0, 0, 0) };
	c[n].in.qp_xrcd = c[n].in.srq_xrcd = 5;
	c[n].in.in_msg = true;
	c[n].in.pkt_srqn = c[n].in.xrc_srqn = 8;
	n++;
#undef C
	return n;
}

/* By kind: access flags, alignment, length, and the key stage. */
static size_t fe_cases_kind(struct fe_case *c)
{
	size_t n = 0;
	const uint8_t RC = HCA_QPT_RC, R = HM_RESP_FE_READ, A = HM_RESP_FE_ATOMIC,
		      WR = HM_RESP_FE_WRITE;

	/* READ: passes (its address translated), of length 0 (no key), without the right */
	c[n++] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_READ_REQ, 0),
				   W(EX, R, EXP, 0, 0, 0, FE_IOVA + 0x100) };
	c[n - 1].in.reth_len = 600;
	c[n++] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_READ_REQ, 0),
				   W(EX, R, EXP, 0, 0, 0, 0) };
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_READ_REQ, 0),
				 W(HM_RESP_FE_NO_ACCESS, R, EXP, 0, 0, 0, 0) };
	c[n].in.reth_len = 8;
	c[n++].in.qp_access = HCA_ACCESS_REMOTE_WRITE;
	/* READ through a key of another PD, beyond the table */
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_READ_REQ, 0),
				 W(HM_RESP_FE_RKEY, R, EXP, 0, 0, HM_MKEY_BAD_PD, 0) };
	c[n].in.reth_len = 8;
	c[n++].in.pdn = 8;
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_READ_REQ, 0),
				 W(HM_RESP_FE_RKEY, R, EXP, 0, 0, HM_MKEY_BAD_KEY, 0) };
	c[n].in.reth_len = 8;
	c[n++].in.reth_rkey = (16u << 8) | 0x11;
	/* atomics: passes, unaligned, without the right (alignment first) */
	c[n++] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_ATOMIC, 0),
				   W(EX, A, EXP, 0, 0, 0, FE_IOVA + 0x40) };
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_ATOMIC, 0),
				 W(HM_RESP_FE_ALIGN, A, EXP, 0, 0, 0, 0) };
	c[n].in.qp_access = 0;
	c[n++].in.atomic_va = FE_VA + 0x44;
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_ATOMIC, 0),
				 W(HM_RESP_FE_NO_ACCESS, A, EXP, 0, 0, 0, 0) };
	c[n++].in.qp_access = HCA_ACCESS_REMOTE_READ;
	/* an atomic through a key without the atomic right */
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_ATOMIC, 0),
				 W(HM_RESP_FE_RKEY, A, EXP, 0, 0, HM_MKEY_BAD_ACCESS, 0) };
	c[n++].in.key.access = HCA_ACCESS_REMOTE_WRITE;
	/* WRITE: ONLY passes; a short ONLY, a FIRST beyond its RETH, a MIDDLE beyond what is
	 * left, a short LAST; a FIRST without the right; a range beyond the key's */
	c[n++] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_WRITE, 256),
				   W(EX, WR, EXP, 0, 0, 0, FE_IOVA + 0x100) };
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_WRITE, 200),
				 W(HM_RESP_FE_LENGTH, WR, EXP, 0, 0, 0, 0) };
	c[n++].in.reth_len = 256;
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_FIRST, HM_OPC_WRITE, 300),
				 W(HM_RESP_FE_LENGTH, WR, EXP, 0, 0, 0, 0) };
	c[n++].in.reth_len = 256;
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_MIDDLE, HM_OPC_WRITE, 128),
				 W(HM_RESP_FE_LENGTH, WR, EXP, 0, 0, 0, 0) };
	c[n].in.in_msg = c[n].in.msg_write = true;
	c[n++].in.wr_left = 100;
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_LAST, HM_OPC_WRITE, 64),
				 W(HM_RESP_FE_LENGTH, WR, EXP, 0, 0, 0, 0) };
	c[n].in.in_msg = c[n].in.msg_write = true;
	c[n++].in.wr_left = 128;
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_LAST, HM_OPC_WRITE, 128),
				 W(EX, WR, EXP, 0, 0, 0, FE_IOVA + 0x800) };
	c[n].in.in_msg = c[n].in.msg_write = true;
	c[n++].in.wr_left = 128;
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_FIRST, HM_OPC_WRITE, 64),
				 W(HM_RESP_FE_NO_ACCESS, WR, EXP, 0, 0, 0, 0) };
	c[n++].in.qp_access = HCA_ACCESS_REMOTE_READ;
	c[n] = (struct fe_case){ fe_base(RC, HM_POS_ONLY, HM_OPC_WRITE, 256),
				 W(HM_RESP_FE_RKEY, WR, EXP, 0, 0, HM_MKEY_BAD_RANGE, 0) };
	c[n++].in.reth_va = FE_VA + 0x10000 - 0x80;
	return n;
}

static void fe_check(const char *who, size_t n, const struct hm_resp_fe_out *w,
		     const struct hm_resp_fe_out *g)
{
	cr_assert_eq(g->cycle, w->cycle, "%s #%zu: cycle %llu, expected %llu", who, n,
		     (unsigned long long)g->cycle, (unsigned long long)w->cycle);
	cr_assert_eq(g->verdict, w->verdict, "%s #%zu: verdict %u, expected %u", who, n,
		     g->verdict, w->verdict);
	cr_assert_eq(g->kind, w->kind, "%s #%zu: kind %u, expected %u", who, n, g->kind, w->kind);
	cr_assert_eq(g->psn_cls, w->psn_cls, "%s #%zu: psn class %u, expected %u", who, n,
		     g->psn_cls, w->psn_cls);
	cr_assert(g->send_nak == w->send_nak && g->nak_sent == w->nak_sent,
		  "%s #%zu: send_nak %d nak_sent %d, expected %d %d", who, n, g->send_nak,
		  g->nak_sent, w->send_nak, w->nak_sent);
	cr_assert_eq(g->key, w->key, "%s #%zu: key %u, expected %u", who, n, g->key, w->key);
	cr_assert_eq(g->iova, w->iova, "%s #%zu: iova 0x%llx, expected 0x%llx", who, n,
		     (unsigned long long)g->iova, (unsigned long long)w->iova);
}

static void fe_directed(bool rtl)
{
	const struct hm_resp_fe_ops *ops = fe_impl(rtl);
	void *b = ops->base.create(NULL, 0);
	struct fe_case c[64];
	size_t n = fe_cases_seq(c);
	unsigned seen = 0;

	n += fe_cases_kind(c + n);
	cr_assert_leq(n, 64);
	for (size_t i = 0; i < n; i++) {
		struct hm_resp_fe_out got;

		/* every other case in the cycle after the one before: back to back */
		c[i].in.cycle = 1000 + i * 3 / 2;
		c[i].want.cycle = c[i].in.cycle + HM_RESP_FE_LATENCY;
		ops->check(b, &c[i].in, &got);
		fe_check(rtl ? "rtl" : "model", i, &c[i].want, &got);
		seen |= 1u << c[i].want.verdict;
	}
	cr_assert_eq(seen, 0x7ffu, "every verdict among the cases (0x%x)", seen);
	ops->base.destroy(b);
}

Test(rtl_resp_fe, model_directed_every_verdict) { fe_directed(false); }
Test(rtl_resp_fe, rtl_directed_every_verdict) { fe_directed(true); }

/* A random request near the directed ones: each field drawn from a few values that matter. */
static void fe_random_in(struct hm_resp_fe_in *in, uint64_t cycle)
{
	static const uint8_t qpt[] = { HCA_QPT_RC, HCA_QPT_RC, HCA_QPT_UC, HCA_QPT_XRC_RECV };
	static const uint8_t cls[] = { HM_OPC_SEND, HM_OPC_WRITE, HM_OPC_READ_REQ, HM_OPC_ATOMIC,
				       0 };
	uint32_t r = rng();

	*in = fe_base(qpt[r % 4], (r >> 2) % 4, cls[(r >> 4) % 5], (r >> 8) % 4 * 96);
	in->cycle = cycle;
	in->psn = (in->epsn + rng() % 5 - 2) & HCA_PSN_MASK;
	r = rng();
	in->nak_sent = r & 1;
	in->in_msg = r & 2;
	in->msg_write = r & 4;
	in->uc_drop = r & 8;
	in->qp_access = (r >> 4) & 0xe;
	in->reth_len = (r >> 8) % 3 * 200;
	in->wr_left = (r >> 10) % 3 * 96;
	in->atomic_va += (r >> 12) % 2 * 4;
	in->pdn = 7 + (r >> 13) % 8 / 7;
	in->key.variant = (uint8_t)(0x11 + (r >> 16) % 9 / 8);
	in->key.access = (r >> 20) & 0xe;
	in->qp_xrcd = (r >> 24) % 3;
	in->srq_xrcd = (r >> 26) % 3;
	in->pkt_srqn = (r >> 28) % 2;
	in->reth_va += (r >> 29) % 2 * 0xff80;
}

Test(rtl_resp_fe, lockstep_random_model_and_rtl_agree_transaction_by_transaction)
{
	const struct hm_resp_fe_ops *m = fe_impl(false), *r = fe_impl(true);
	void *bm = m->base.create(NULL, 0), *br = r->base.create(NULL, 0);
	uint64_t cycle = 10, counts[11] = { 0 };

	rng_state = 0x9e3779b97f4a7c15ull * 5 + 1;
	for (size_t n = 0; n < 30000; n++) {
		struct hm_resp_fe_in in;
		struct hm_resp_fe_out a, b;

		cycle += rng() % 3; /* a third in the cycle of the one before */
		fe_random_in(&in, cycle);
		m->check(bm, &in, &a);
		r->check(br, &in, &b);
		fe_check("lockstep", n, &a, &b);
		counts[a.verdict < 11 ? a.verdict : 0]++;
	}
	for (int v = 0; v < 11; v++)
		cr_assert_gt(counts[v], 30, "verdict %d only %llu times in 30000", v,
			     (unsigned long long)counts[v]);
	m->base.destroy(bm);
	r->base.destroy(br);
}

/* ---- in the running system ---- */

/* resp_fe=lockstep (with the RTL's test bug, or "none") and no waves. */
static void fe_lockstep_env(const char *bug)
{
	fe_impl(true);
	setenv("HCASIM_IMPL", "resp_fe=lockstep", 1);
	setenv("HCASIM_RTL_BUG", bug, 1);
	unsetenv("WAVES");
	unsetenv("HCASIM_WAVES_DIR");
	unsetenv("WAVES_DIR");
}

/* WRITEs of one and of several packets and SENDs into receives: every request packet through
 * the front end in lockstep; no mismatch. */
Test(rtl_resp_fe, system_writes_and_sends_run_clean_in_lockstep)
{
	struct tb_pair p;

	fe_lockstep_env("none");
	tb_pair_open(&p, IBV_QPT_RC, 16384, 3);
	for (int i = 0; i < 20; i++) {
		uint32_t len = i % 4 == 0 ? 5000 : 64 * (uint32_t)(i + 1);

		tb_pair_write(&p, len);
		tb_pair_send(&p, len);
		cr_assert_null(hcasim_halted(), "no mismatch: %s", hcasim_halted());
	}
	tb_pair_close(&p);
	hcasim_shutdown();
}

/* The injected bug (rtl/resp_fe.sv, HCA_RTL_BUG_RESP_FE) measures a WRITE ONLY against the
 * message before it (none: 0 bytes left) instead of its RETH: the first WRITE's packet is
 * refused for its length by the RTL, not by the C twin, and lockstep halts there naming block,
 * op, cycle and field. */
Test(rtl_resp_fe, injected_bug_halts_with_block_cycle_and_field)
{
	struct tb_pair p;
	struct ibv_sge s;
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;
	const char *why;
	uint64_t start;
	int r = 0;

	fe_lockstep_env("resp_fe");
	tb_stderr_capture();
	tb_pair_open(&p, IBV_QPT_RC, 4096, 1);
	s = (struct ibv_sge){ (uintptr_t)p.src->addr, 64, p.src->lkey };
	wr.wr.rdma.remote_addr = (uintptr_t)p.dst->addr;
	wr.wr.rdma.rkey = p.dst->rkey;
	cr_assert_eq(ibv_post_send(p.qa, &wr, &bad), 0);
	start = hcasim_now_ps();
	while (r == 0 && !hcasim_halted() && hcasim_now_ps() - start < 1000000000ull)
		r = ibv_poll_cq(p.a.cq, 1, &wc);
	cr_assert(r != 1, "the WRITE completed: lockstep missed the bug");
	why = tb_expect_halt_reported();
	cr_assert(strstr(why, "block resp_fe (check)") && strstr(why, "field verdict") &&
			  strstr(why, "at cycle ") && strstr(why, "expected 0x0 (model) got 0x9 (rtl)"),
		  "the report names block, op, cycle and field: %s", why);
	ibv_free_device_list(p.a.list);
	ibv_free_device_list(p.b.list);
}
