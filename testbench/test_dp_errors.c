/* dp_errors: every completion error the data path can produce through the verbs API, on the side
 * that must report it, with the QP state afterwards (ibv_query_qp) and the flush that follows:
 * in ERR every later send WR and every posted receive WR completes IBV_WC_WR_FLUSH_ERR,
 * signaled or not, in order, with its wr_id (ib-facts.md, "QP states and traffic").
 *
 * Conventions: send wr_ids are below RECV_ID, receive wr_ids at or above it, so completions of
 * one CQ can be split into their queues and each queue's order checked. Each test boots a
 * fresh system (Criterion forks per test).
 *
 * Not covered: IBV_WC_LOC_QP_OP_ERR. The model raises it for a WQE it cannot fetch, an opcode
 * the QP type does not allow, or more SGEs / inline bytes than the WQE stride holds; the
 * driver refuses all of those in ibv_post_send (EINVAL), and a receive WQE with a bad lkey is
 * a protection error, not a malformed WQE. No honest verbs-level way to provoke it exists yet
 * (it needs fault injection on the WQE fetch). */
#include "model/hw/hca_hw.h"
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECV_ID 0x2000u /* wr_ids >= RECV_ID are receive WRs */
#define NS 1000ull	/* ps */
#define US (1000ull * NS)
#define MS (1000ull * US)
#define ACCESS_ALL                                                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define QP_ACCESS_ALL (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* ---- fixtures ---- */

struct pair {
	struct tb_dev a, b;
	struct ibv_qp *qa, *qb;
};

static void devs_open(struct pair *p)
{
	memset(p, 0, sizeof(*p));
	tb_open(&p->a, 0);
	tb_open(&p->b, 1);
}

/* New qa on a and qb on b, connected to each other (RTS). */
static void qps_connect(struct pair *p, enum ibv_qp_type type, enum ibv_mtu mtu)
{
	p->qa = tb_create_qp(&p->a, type);
	p->qb = tb_create_qp(&p->b, type);
	tb_connect(&p->a, p->qa, &p->b, p->qb->qp_num, mtu);
	tb_connect(&p->b, p->qb, &p->a, p->qa->qp_num, mtu);
}

static void qps_destroy(struct pair *p)
{
	cr_assert_eq(ibv_destroy_qp(p->qa), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(p->qb), 0, "%s", hcasim_last_error());
	p->qa = p->qb = NULL;
}

static void pair_open(struct pair *p, enum ibv_qp_type type, enum ibv_mtu mtu)
{
	devs_open(p);
	qps_connect(p, type, mtu);
}

static void pair_close(struct pair *p)
{
	if (p->qa)
		qps_destroy(p);
	tb_close(&p->a);
	tb_close(&p->b);
}

/* Register the first len bytes of a zeroed 2*len buffer (what lies "beyond" the MR is still
 * ours) with access. */
static struct ibv_mr *reg(struct ibv_pd *pd, size_t len, int access)
{
	void *buf = NULL;
	struct ibv_mr *mr;

	cr_assert_eq(posix_memalign(&buf, 4096, 2 * len), 0);
	memset(buf, 0, 2 * len);
	mr = ibv_reg_mr(pd, buf, len, access);
	cr_assert_not_null(mr, "ibv_reg_mr: %s", hcasim_last_error());
	return mr;
}

static void free_mr(struct ibv_mr *mr)
{
	void *buf = mr->addr;

	cr_assert_eq(ibv_dereg_mr(mr), 0, "%s", hcasim_last_error());
	free(buf);
}

static struct ibv_ah *make_ah(struct tb_dev *t, struct tb_dev *peer)
{
	struct ibv_ah_attr a;
	struct ibv_ah *ah;

	memset(&a, 0, sizeof(a));
	a.dlid = peer->port.lid;
	a.port_num = 1;
	if (t->port.link_layer == IBV_LINK_LAYER_ETHERNET) {
		cr_assert_eq(ibv_query_gid(peer->ctx, 1, 0, &a.grh.dgid), 0);
		a.is_global = 1;
		a.grh.hop_limit = 1;
	}
	ah = ibv_create_ah(t->pd, &a);
	cr_assert_not_null(ah, "ibv_create_ah: %s", hcasim_last_error());
	return ah;
}

/* ---- work requests ---- */

struct wr {
	struct ibv_send_wr w;
	struct ibv_sge s;
};

/* A send WR of len bytes at addr/lkey (num_sge 0 when len is 0). */
static void mk_send(struct wr *x, uint64_t id, enum ibv_wr_opcode op, bool signaled, uint64_t addr,
		    uint32_t len, uint32_t lkey)
{
	memset(x, 0, sizeof(*x));
	x->s = (struct ibv_sge){addr, len, lkey};
	x->w.wr_id = id;
	x->w.opcode = op;
	x->w.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	x->w.sg_list = &x->s;
	x->w.num_sge = 1;
}

static void chain(struct wr *x, int n)
{
	for (int i = 0; i < n; i++)
		x[i].w.next = i + 1 < n ? &x[i + 1].w : NULL;
}

static void post_send_ok(struct ibv_qp *qp, struct wr *x, int n)
{
	struct ibv_send_wr *bad = NULL;
	int rc;

	chain(x, n);
	rc = ibv_post_send(qp, &x[0].w, &bad);
	cr_assert_eq(rc, 0, "ibv_post_send: %d (%s): %s", rc, strerror(rc), hcasim_last_error());
}

static void post_recv_ok(struct ibv_qp *qp, uint64_t id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = {addr, len, lkey};
	struct ibv_recv_wr w = {.wr_id = id, .sg_list = &s, .num_sge = 1}, *bad = NULL;
	int rc = ibv_post_recv(qp, &w, &bad);

	cr_assert_eq(rc, 0, "ibv_post_recv: %d (%s): %s", rc, strerror(rc), hcasim_last_error());
}

static void post_srq_recv_ok(struct ibv_srq *srq, uint64_t id, uint64_t addr, uint32_t len,
			     uint32_t lkey)
{
	struct ibv_sge s = {addr, len, lkey};
	struct ibv_recv_wr w = {.wr_id = id, .sg_list = &s, .num_sge = 1}, *bad = NULL;
	int rc = ibv_post_srq_recv(srq, &w, &bad);

	cr_assert_eq(rc, 0, "ibv_post_srq_recv: %d: %s", rc, hcasim_last_error());
}

/* ---- completions ---- */

struct exp {
	uint64_t wr_id;
	enum ibv_wc_status status;
	uint32_t verr; /* the check vendor_err names (HCA_VERR_*, model/hw/verr.def); 0: any of
			* the status's */
};

static void describe(char *buf, size_t len, const struct ibv_wc *wc, int n)
{
	size_t o = 0;

	buf[0] = 0;
	for (int i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s[wr_id 0x%" PRIx64 " qp 0x%x %s]",
				      i ? " " : "", wc[i].wr_id, wc[i].qp_num,
				      ibv_wc_status_str(wc[i].status));
}

/* Poll cq until n completions arrived, stepping the simulation (10 ms simulated at most). */
static void poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, const char *who)
{
	uint64_t start = hcasim_now_ps();
	char got_s[2048];
	int got = 0;

	for (;;) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		cr_assert_geq(r, 0, "ibv_poll_cq: %s", hcasim_last_error());
		got += r;
		if (got == n)
			return;
		if (hcasim_now_ps() - start > 10 * MS) {
			describe(got_s, sizeof(got_s), wc, got);
			cr_assert_fail("%s: only %d of %d completions after 10 ms simulated: %s "
				       "(last error: %s)",
				       who, got, n, got_s, hcasim_last_error());
		}
		hcasim_run_for_ps(1 * US);
	}
}

/* Nothing more arrives on cq within 100 us simulated. */
static void expect_no_more(struct ibv_cq *cq, const char *who)
{
	struct ibv_wc wc[8];
	char s[1024];
	int r;

	hcasim_run_for_ps(100 * US);
	r = ibv_poll_cq(cq, 8, wc);
	cr_assert_geq(r, 0);
	describe(s, sizeof(s), wc, r);
	cr_assert_eq(r, 0, "%s: unexpected completions: %s", who, s);
}

/* An error completion names the check that failed: a vendor_err of verr.def that goes with its
 * status (a flush: FLUSHED), and verr when one is expected. */
static void expect_verr(const struct ibv_wc *wc, uint32_t verr, const char *who)
{
	if (wc->status == IBV_WC_SUCCESS)
		return;
	cr_assert_not_null(hca_verr_name(wc->vendor_err),
			   "%s: wr_id 0x%" PRIx64 " vendor_err 0x%x is no code of verr.def", who,
			   wc->wr_id, wc->vendor_err);
	cr_assert_eq(hca_verr_status(wc->vendor_err), (uint8_t)wc->status,
		     "%s: wr_id 0x%" PRIx64 " '%s' with vendor_err %s, which is %s's", who,
		     wc->wr_id, ibv_wc_status_str(wc->status), hca_verr_name(wc->vendor_err),
		     hca_wc_name(hca_verr_status(wc->vendor_err)));
	if (wc->status == IBV_WC_WR_FLUSH_ERR)
		verr = HCA_VERR_FLUSHED;
	if (verr)
		cr_assert_eq(wc->vendor_err, verr, "%s: wr_id 0x%" PRIx64 " vendor_err %s, expected %s",
			     who, wc->wr_id, hca_verr_name(wc->vendor_err), hca_verr_name(verr));
}

/* Exactly the n completions of e arrive on cq, all of QP qpn, each queue (send: wr_id below
 * RECV_ID, receive: the others) in the order of e. */
static void expect_wcs(struct ibv_cq *cq, uint32_t qpn, const char *who, const struct exp *e, int n)
{
	struct ibv_wc wc[64];
	char all[2048];
	int next[2] = {0, 0}; /* next expected send, receive index into e */

	cr_assert_leq(n, 64);
	poll_n(cq, wc, n, who);
	describe(all, sizeof(all), wc, n);
	for (int i = 0; i < n; i++) {
		int q = wc[i].wr_id >= RECV_ID;
		int *k = &next[q];

		while (*k < n && (e[*k].wr_id >= RECV_ID) != q)
			(*k)++;
		cr_assert_lt(*k, n, "%s: unexpected %s completion wr_id 0x%" PRIx64 " (all: %s)",
			     who, q ? "receive" : "send", wc[i].wr_id, all);
		cr_assert_eq(wc[i].wr_id, e[*k].wr_id,
			     "%s: completion %d is wr_id 0x%" PRIx64 ", expected 0x%" PRIx64
			     " next on that queue (all: %s)",
			     who, i, wc[i].wr_id, e[*k].wr_id, all);
		cr_assert_eq(wc[i].status, e[*k].status,
			     "%s: wr_id 0x%" PRIx64 " completed '%s', expected '%s' (all: %s; "
			     "last error: %s)",
			     who, wc[i].wr_id, ibv_wc_status_str(wc[i].status),
			     ibv_wc_status_str(e[*k].status), all, hcasim_last_error());
		expect_verr(&wc[i], e[*k].verr, who);
		cr_assert_eq(wc[i].qp_num, qpn,
			     "%s: wr_id 0x%" PRIx64 " reports qp_num 0x%x, not 0x%x", who,
			     wc[i].wr_id, wc[i].qp_num, qpn);
		(*k)++;
	}
	expect_no_more(cq, who);
}

/* ---- QP state ---- */

static const char *qps_name(enum ibv_qp_state s)
{
	static const char *const n[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

	return (unsigned)s < 7 ? n[s] : "?";
}

static enum ibv_qp_state qstate(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;

	cr_assert_eq(ibv_query_qp(qp, &a, IBV_QP_STATE, &i), 0, "ibv_query_qp: %s",
		     hcasim_last_error());
	return a.qp_state;
}

#define EXPECT_STATE(qp, st, why)                                                                  \
	do {                                                                                       \
		enum ibv_qp_state s_ = qstate(qp);                                                 \
		cr_assert_eq(s_, (st), "%s: QP 0x%x is in %s, expected %s (last error: %s)",       \
			     (why), (qp)->qp_num, qps_name(s_), qps_name(st),                      \
			     hcasim_last_error());                                                 \
	} while (0)

static void modify_state(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a = {.qp_state = st};

	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0, "modify to %s: %s", qps_name(st),
		     hcasim_last_error());
}

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* ================= IBV_WC_LOC_LEN_ERR ================= */

/* UD: a send longer than the path MTU fails on the sender (ib-facts: "a UD send longer than
 * the path MTU is an error for the sender"); UD send errors take the QP to SQE, flushing the
 * later sends but not the receive queue; SQE->RTS recovers it. */
Test(dp_errors, ud_send_longer_than_mtu_is_loc_len_err_then_sqe_to_rts_recovers)
{
	struct pair p;
	struct ibv_mr *sa, *ra, *rb;
	struct ibv_ah *ah_ab, *ah_ba;
	struct wr x[3];
	struct ibv_wc wc;
	uint32_t mtu;

	pair_open(&p, IBV_QPT_UD, IBV_MTU_4096);
	mtu = 128u << p.a.port.active_mtu;
	sa = reg(p.a.pd, 2 * mtu, ACCESS_ALL);
	ra = reg(p.a.pd, 2 * mtu, ACCESS_ALL);
	rb = reg(p.b.pd, 2 * mtu, ACCESS_ALL);
	ah_ab = make_ah(&p.a, &p.b);
	ah_ba = make_ah(&p.b, &p.a);
	memset(sa->addr, 0x5a, 2 * mtu);
	post_recv_ok(p.qa, RECV_ID + 0, (uintptr_t)ra->addr, mtu + 40, ra->lkey);
	post_recv_ok(p.qb, RECV_ID + 0x100, (uintptr_t)rb->addr, mtu + 40, rb->lkey);

	mk_send(&x[0], 0x1000, IBV_WR_SEND, true, (uintptr_t)sa->addr, mtu + 1, sa->lkey);
	mk_send(&x[1], 0x1001, IBV_WR_SEND, false, (uintptr_t)sa->addr, 16, sa->lkey);
	mk_send(&x[2], 0x1002, IBV_WR_SEND, true, (uintptr_t)sa->addr, 16, sa->lkey);
	for (int i = 0; i < 3; i++) {
		x[i].w.wr.ud.ah = ah_ab;
		x[i].w.wr.ud.remote_qpn = p.qb->qp_num;
		x[i].w.wr.ud.remote_qkey = TB_QKEY;
	}
	post_send_ok(p.qa, x, 3);
	{
		const struct exp e[] = {{0x1000, IBV_WC_LOC_LEN_ERR, HCA_VERR_WQE_MSG_LEN},
					{0x1001, IBV_WC_WR_FLUSH_ERR, 0},
					{0x1002, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "sender", e, 3);
	}
	EXPECT_STATE(p.qa, IBV_QPS_SQE, "UD sender after a send error");
	expect_no_more(p.b.cq, "receiver (nothing may have been sent)");

	/* SQE -> RTS (UD: no attribute required) and the QP sends again. */
	modify_state(p.qa, IBV_QPS_RTS);
	EXPECT_STATE(p.qa, IBV_QPS_RTS, "after SQE->RTS");
	mk_send(&x[0], 0x1003, IBV_WR_SEND, true, (uintptr_t)sa->addr, 16, sa->lkey);
	x[0].w.wr.ud.ah = ah_ab;
	x[0].w.wr.ud.remote_qpn = p.qb->qp_num;
	x[0].w.wr.ud.remote_qkey = TB_QKEY;
	post_send_ok(p.qa, x, 1);
	{
		const struct exp e[] = {{0x1003, IBV_WC_SUCCESS, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "sender after recovery", e, 1);
	}
	poll_n(p.b.cq, &wc, 1, "receiver after recovery");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, RECV_ID + 0x100);
	cr_assert_eq(wc.byte_len, 16 + 40, "UD: 40-byte GRH slot + 16 bytes");
	cr_assert_eq(wc.src_qp, p.qa->qp_num);
	/* The receive queue survived SQE: a's receive, posted before the error, still works. */
	mk_send(&x[0], 0x1100, IBV_WR_SEND, true, (uintptr_t)rb->addr, 32, rb->lkey);
	x[0].w.wr.ud.ah = ah_ba;
	x[0].w.wr.ud.remote_qpn = p.qa->qp_num;
	x[0].w.wr.ud.remote_qkey = TB_QKEY;
	post_send_ok(p.qb, x, 1);
	poll_n(p.b.cq, &wc, 1, "b's send");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	poll_n(p.a.cq, &wc, 1, "a's receive posted before SQE");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "a's receive: %s (SQE must not flush the RQ)",
		     ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, RECV_ID + 0);
	cr_assert_eq(wc.byte_len, 32 + 40);

	cr_assert_eq(ibv_destroy_ah(ah_ab), 0);
	cr_assert_eq(ibv_destroy_ah(ah_ba), 0);
	free_mr(sa);
	free_mr(ra);
	free_mr(rb);
	pair_close(&p);
}

/* The UD path MTU is the port's active MTU (UD QPs have no path_mtu attribute): with
 * link.mtu = 1024, a 1024-byte send goes and a 1025-byte one is LOC_LEN_ERR. */
Test(dp_errors, ud_limit_is_the_port_active_mtu)
{
	struct pair p;
	struct ibv_mr *sa, *rb;
	struct ibv_ah *ah;
	struct wr x[2];
	struct ibv_wc wc;

	tb_config("link.mtu", "1024");
	pair_open(&p, IBV_QPT_UD, IBV_MTU_1024);
	cr_assert_eq(p.a.port.active_mtu, IBV_MTU_1024);
	sa = reg(p.a.pd, 4096, ACCESS_ALL);
	rb = reg(p.b.pd, 4096, ACCESS_ALL);
	ah = make_ah(&p.a, &p.b);
	post_recv_ok(p.qb, RECV_ID, (uintptr_t)rb->addr, 4096, rb->lkey);
	mk_send(&x[0], 0x1000, IBV_WR_SEND, true, (uintptr_t)sa->addr, 1024, sa->lkey);
	mk_send(&x[1], 0x1001, IBV_WR_SEND, true, (uintptr_t)sa->addr, 1025, sa->lkey);
	for (int i = 0; i < 2; i++) {
		x[i].w.wr.ud.ah = ah;
		x[i].w.wr.ud.remote_qpn = p.qb->qp_num;
		x[i].w.wr.ud.remote_qkey = TB_QKEY;
	}
	post_send_ok(p.qa, x, 2);
	{
		const struct exp e[] = {{0x1000, IBV_WC_SUCCESS, 0}, {0x1001, IBV_WC_LOC_LEN_ERR, HCA_VERR_WQE_MSG_LEN}};

		expect_wcs(p.a.cq, p.qa->qp_num, "sender (port MTU 1024)", e, 2);
	}
	EXPECT_STATE(p.qa, IBV_QPS_SQE, "UD sender after a send longer than the port MTU");
	poll_n(p.b.cq, &wc, 1, "receiver");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 1024 + 40);
	expect_no_more(p.b.cq, "receiver: the 1025-byte datagram must not arrive");
	cr_assert_eq(ibv_destroy_ah(ah), 0);
	free_mr(sa);
	free_mr(rb);
	pair_close(&p);
}

/* ib-facts state table: in SQE, post send is allowed and send processing is "flushed with
 * error": a WR posted while in SQE completes WR_FLUSH_ERR (signaled or not) and is never sent,
 * not even after SQE->RTS. */
Test(dp_errors, ud_send_posted_in_sqe_is_flushed)
{
	struct pair p;
	struct ibv_mr *sa, *rb;
	struct ibv_ah *ah;
	struct wr x[2];

	pair_open(&p, IBV_QPT_UD, IBV_MTU_4096);
	sa = reg(p.a.pd, 8192, ACCESS_ALL);
	rb = reg(p.b.pd, 8192, ACCESS_ALL);
	ah = make_ah(&p.a, &p.b);
	post_recv_ok(p.qb, RECV_ID, (uintptr_t)rb->addr, 8192, rb->lkey);
	mk_send(&x[0], 0x1000, IBV_WR_SEND, true, (uintptr_t)sa->addr, 8192, sa->lkey);
	x[0].w.wr.ud.ah = ah;
	x[0].w.wr.ud.remote_qpn = p.qb->qp_num;
	x[0].w.wr.ud.remote_qkey = TB_QKEY;
	post_send_ok(p.qa, x, 1);
	{
		const struct exp e[] = {{0x1000, IBV_WC_LOC_LEN_ERR, HCA_VERR_WQE_MSG_LEN}};

		expect_wcs(p.a.cq, p.qa->qp_num, "sender", e, 1);
	}
	EXPECT_STATE(p.qa, IBV_QPS_SQE, "UD sender after a send error");
	mk_send(&x[0], 0x1001, IBV_WR_SEND, false, (uintptr_t)sa->addr, 16, sa->lkey);
	mk_send(&x[1], 0x1002, IBV_WR_SEND, true, (uintptr_t)sa->addr, 16, sa->lkey);
	for (int i = 0; i < 2; i++) {
		x[i].w.wr.ud.ah = ah;
		x[i].w.wr.ud.remote_qpn = p.qb->qp_num;
		x[i].w.wr.ud.remote_qkey = TB_QKEY;
	}
	post_send_ok(p.qa, x, 2);
	{
		const struct exp e[] = {{0x1001, IBV_WC_WR_FLUSH_ERR, 0},
					{0x1002, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "sends posted in SQE", e, 2);
	}
	modify_state(p.qa, IBV_QPS_RTS);
	expect_no_more(p.a.cq, "sender after SQE->RTS");
	expect_no_more(p.b.cq, "receiver: WRs posted in SQE must never be sent");
	cr_assert_eq(ibv_destroy_ah(ah), 0);
	free_mr(sa);
	free_mr(rb);
	pair_close(&p);
}

/* UC: a message longer than the receive buffer completes that receive LOC_LEN_ERR on the
 * responder (class D on UC: no NAK exists, the sender completed when its packets left). A
 * receive WR completed in error takes the QP to ERR (IBA 10.3.1 QP state diagram; only *send*
 * errors on UC/UD stop at SQE, ib-facts "RC errors take the QP to ERR; send errors on UC/UD
 * take it to SQE"), so the next posted receive is flushed. */
Test(dp_errors, uc_receive_buffer_too_small_is_loc_len_err_on_the_responder)
{
	struct pair p;
	struct ibv_mr *sa, *rb;
	struct wr x[1];

	pair_open(&p, IBV_QPT_UC, IBV_MTU_1024);
	sa = reg(p.a.pd, 4096, ACCESS_ALL);
	rb = reg(p.b.pd, 4096, ACCESS_ALL);
	post_recv_ok(p.qb, RECV_ID + 0, (uintptr_t)rb->addr, 100, rb->lkey);
	post_recv_ok(p.qb, RECV_ID + 1, (uintptr_t)rb->addr + 1024, 2048, rb->lkey);
	mk_send(&x[0], 0x1000, IBV_WR_SEND, true, (uintptr_t)sa->addr, 200, sa->lkey);
	post_send_ok(p.qa, x, 1);
	{
		const struct exp e[] = {{0x1000, IBV_WC_SUCCESS, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "UC sender (completes when sent)", e, 1);
	}
	EXPECT_STATE(p.qa, IBV_QPS_RTS, "UC sender");
	{
		const struct exp e[] = {{RECV_ID + 0, IBV_WC_LOC_LEN_ERR, HCA_VERR_RECV_LEN},
					{RECV_ID + 1, IBV_WC_WR_FLUSH_ERR, 0}};
		struct ibv_wc wc;

		/* First the failing receive, then the state, then the flush of the other one. */
		poll_n(p.b.cq, &wc, 1, "UC responder");
		cr_assert_eq(wc.wr_id, e[0].wr_id, "wr_id 0x%" PRIx64, wc.wr_id);
		cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR, "UC responder: %s",
			     ibv_wc_status_str(wc.status));
		cr_assert_eq(wc.qp_num, p.qb->qp_num);
		EXPECT_STATE(p.qb, IBV_QPS_ERR, "UC responder after a receive completed in error");
		expect_wcs(p.b.cq, p.qb->qp_num, "UC responder flush", e + 1, 1);
	}
	free_mr(sa);
	free_mr(rb);
	pair_close(&p);
}

/* UC: a 3-packet RDMA WRITE with immediate whose LAST packet finds no receive WQE loses only
 * itself: the LAST is dropped and counted, and the SENDs behind it arrive once receives are
 * posted. Both QPs stay in RTS. */
Test(dp_errors, uc_write_imm_without_a_receive_loses_only_itself)
{
	struct pair p;
	struct ibv_mr *sa, *rb;
	struct wr x[4];
	struct hcasim_dev_counters c0, c1;
	struct ibv_wc wc;

	pair_open(&p, IBV_QPT_UC, IBV_MTU_1024);
	sa = reg(p.a.pd, 4096, ACCESS_ALL);
	rb = reg(p.b.pd, 8192, ACCESS_ALL);
	cr_assert_eq(hcasim_dev_counters(1, &c0), 0);
	mk_send(&x[0], 0x1000, IBV_WR_RDMA_WRITE_WITH_IMM, true, (uintptr_t)sa->addr, 3000,
		sa->lkey);
	x[0].w.imm_data = htobe32(0x1234);
	x[0].w.wr.rdma.remote_addr = (uintptr_t)rb->addr + 4096;
	x[0].w.wr.rdma.rkey = rb->rkey;
	post_send_ok(p.qa, x, 1);
	poll_n(p.a.cq, &wc, 1, "UC sender");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(hcasim_dev_counters(1, &c1), 0);
	cr_assert_eq(c1.rx_dropped - c0.rx_dropped, 1, "frames dropped: %llu",
		     (unsigned long long)(c1.rx_dropped - c0.rx_dropped));
	expect_no_more(p.b.cq, "UC responder without a receive");
	for (int i = 0; i < 3; i++) {
		post_recv_ok(p.qb, RECV_ID + (uint64_t)i, (uintptr_t)rb->addr + 128 * (uint64_t)i,
			     128, rb->lkey);
		mk_send(&x[1 + i], 0x2000 + (uint64_t)i, IBV_WR_SEND, true,
			(uintptr_t)sa->addr + 100 * (uint64_t)i, 100, sa->lkey);
	}
	chain(x + 1, 3);
	post_send_ok(p.qa, x + 1, 3);
	{
		const struct exp s[] = {{0x2000, IBV_WC_SUCCESS, 0}, {0x2001, IBV_WC_SUCCESS, 0},
					{0x2002, IBV_WC_SUCCESS, 0}};
		const struct exp r[] = {{RECV_ID + 0, IBV_WC_SUCCESS, 0}, {RECV_ID + 1, IBV_WC_SUCCESS, 0},
					{RECV_ID + 2, IBV_WC_SUCCESS, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "UC sender", s, 3);
		expect_wcs(p.b.cq, p.qb->qp_num, "UC responder", r, 3);
	}
	for (int i = 0; i < 3; i++)
		cr_assert(!memcmp((uint8_t *)rb->addr + 128 * i, (uint8_t *)sa->addr + 100 * i, 100),
			  "SEND %d differs", i);
	EXPECT_STATE(p.qa, IBV_QPS_RTS, "UC sender");
	EXPECT_STATE(p.qb, IBV_QPS_RTS, "UC responder");
	free_mr(sa);
	free_mr(rb);
	pair_close(&p);
}

/* ================= IBV_WC_LOC_PROT_ERR ================= */

enum prot_case { PROT_OTHER_PD, PROT_DEREGISTERED, PROT_BEYOND_MR };

/* RC: a send gathering through a bad lkey fails with LOC_PROT_ERR on the sender; RC errors take
 * the QP to ERR: the later sends (signaled or not) and the posted receives are flushed. The
 * peer saw nothing and stays in RTS. */
static void loc_prot(enum prot_case c)
{
	struct pair p;
	struct ibv_mr *sa, *ra, *rb, *bad_mr = NULL;
	struct ibv_pd *pd2 = NULL;
	struct wr x[3];
	uint64_t addr;
	uint32_t lkey, len = 64;
	/* the check that fails, as vendor_err names it */
	const uint32_t want = c == PROT_OTHER_PD	       ? HCA_VERR_LKEY_PD
			      : c == PROT_DEREGISTERED ? HCA_VERR_LKEY_INVALID
						       : HCA_VERR_LKEY_BOUNDS;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	sa = reg(p.a.pd, 4096, ACCESS_ALL);
	ra = reg(p.a.pd, 4096, ACCESS_ALL);
	rb = reg(p.b.pd, 4096, ACCESS_ALL);
	addr = (uintptr_t)sa->addr;
	lkey = sa->lkey;
	switch (c) {
	case PROT_OTHER_PD:
		pd2 = ibv_alloc_pd(p.a.ctx);
		cr_assert_not_null(pd2, "%s", hcasim_last_error());
		bad_mr = reg(pd2, 4096, ACCESS_ALL);
		addr = (uintptr_t)bad_mr->addr;
		lkey = bad_mr->lkey;
		break;
	case PROT_DEREGISTERED: {
		struct ibv_mr *m = reg(p.a.pd, 4096, ACCESS_ALL);

		lkey = m->lkey;
		addr = (uintptr_t)sa->addr; /* still our memory; only the key is gone */
		free_mr(m);
		break;
	}
	case PROT_BEYOND_MR:
		addr = (uintptr_t)sa->addr + 4096 - 8; /* 56 of the 64 bytes lie past the MR */
		break;
	}
	post_recv_ok(p.qa, RECV_ID + 0, (uintptr_t)ra->addr, 1024, ra->lkey);
	post_recv_ok(p.qa, RECV_ID + 1, (uintptr_t)ra->addr + 1024, 1024, ra->lkey);
	post_recv_ok(p.qb, RECV_ID + 0x100, (uintptr_t)rb->addr, 1024, rb->lkey);
	post_recv_ok(p.qb, RECV_ID + 0x101, (uintptr_t)rb->addr + 1024, 1024, rb->lkey);

	/* A good send first: the QP works. */
	mk_send(&x[0], 0x0fff, IBV_WR_SEND, true, (uintptr_t)sa->addr, 16, sa->lkey);
	post_send_ok(p.qa, x, 1);
	{
		const struct exp ea[] = {{0x0fff, IBV_WC_SUCCESS, 0}};
		const struct exp eb[] = {{RECV_ID + 0x100, IBV_WC_SUCCESS, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "good send", ea, 1);
		expect_wcs(p.b.cq, p.qb->qp_num, "good send's receive", eb, 1);
	}

	mk_send(&x[0], 0x1000, IBV_WR_SEND, true, addr, len, lkey);
	mk_send(&x[1], 0x1001, IBV_WR_SEND, false, (uintptr_t)sa->addr, 16, sa->lkey);
	mk_send(&x[2], 0x1002, IBV_WR_SEND, true, (uintptr_t)sa->addr, 16, sa->lkey);
	post_send_ok(p.qa, x, 3);
	{
		const struct exp e[] = {{0x1000, IBV_WC_LOC_PROT_ERR, want},
					{0x1001, IBV_WC_WR_FLUSH_ERR, 0},
					{0x1002, IBV_WC_WR_FLUSH_ERR, 0},
					{RECV_ID + 0, IBV_WC_WR_FLUSH_ERR, 0},
					{RECV_ID + 1, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "sender", e, 5);
	}
	EXPECT_STATE(p.qa, IBV_QPS_ERR, "RC sender after LOC_PROT_ERR");
	expect_no_more(p.b.cq, "peer (nothing reached it)");
	EXPECT_STATE(p.qb, IBV_QPS_RTS, "peer");

	if (bad_mr)
		free_mr(bad_mr);
	if (pd2)
		cr_assert_eq(ibv_dealloc_pd(pd2), 0, "%s", hcasim_last_error());
	free_mr(sa);
	free_mr(ra);
	free_mr(rb);
	pair_close(&p);
}

Test(dp_errors, rc_send_gathering_from_another_pd_is_loc_prot_err)
{
	loc_prot(PROT_OTHER_PD);
}

Test(dp_errors, rc_send_gathering_from_a_deregistered_lkey_is_loc_prot_err)
{
	loc_prot(PROT_DEREGISTERED);
}

Test(dp_errors, rc_send_gathering_beyond_the_mr_is_loc_prot_err)
{
	loc_prot(PROT_BEYOND_MR);
}

/* The other direction of a local protection check: a READ whose local scatter list names a
 * deregistered lkey completes LOC_PROT_ERR on the requester (whether the device checks it
 * before sending or when the response arrives), nothing is written locally, the requester goes
 * to ERR and flushes; the responder did nothing wrong and stays in RTS. */
Test(dp_errors, rc_read_scattering_into_a_deregistered_lkey_is_loc_prot_err)
{
	struct pair p;
	struct ibv_mr *la, *rm, *gone;
	uint32_t gone_lkey;
	struct wr x[2];

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	la = reg(p.a.pd, 4096, ACCESS_ALL);
	rm = reg(p.b.pd, 4096, ACCESS_ALL);
	memset(rm->addr, 0x77, 4096);
	gone = reg(p.a.pd, 4096, ACCESS_ALL);
	gone_lkey = gone->lkey;
	free_mr(gone);
	mk_send(&x[0], 0x1000, IBV_WR_RDMA_READ, true, (uintptr_t)la->addr, 2000, gone_lkey);
	x[0].w.wr.rdma.remote_addr = (uintptr_t)rm->addr;
	x[0].w.wr.rdma.rkey = rm->rkey;
	mk_send(&x[1], 0x1001, IBV_WR_RDMA_WRITE, false, (uintptr_t)la->addr, 16, la->lkey);
	x[1].w.wr.rdma.remote_addr = (uintptr_t)rm->addr;
	x[1].w.wr.rdma.rkey = rm->rkey;
	post_send_ok(p.qa, x, 2);
	{
		const struct exp e[] = {{0x1000, IBV_WC_LOC_PROT_ERR, HCA_VERR_LKEY_INVALID},
					{0x1001, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "READ requester", e, 2);
	}
	EXPECT_STATE(p.qa, IBV_QPS_ERR, "READ requester after LOC_PROT_ERR");
	cr_assert(all_zero(la->addr, 4096), "the READ wrote through a deregistered lkey");
	expect_no_more(p.b.cq, "READ responder");
	EXPECT_STATE(p.qb, IBV_QPS_RTS, "READ responder");
	free_mr(la);
	free_mr(rm);
	pair_close(&p);
}

/* ================= IBV_WC_REM_ACCESS_ERR ================= */

enum acc_case { ACC_BAD_RKEY, ACC_NO_RIGHT, ACC_BEYOND_MR, ACC_QP_FLAG, ACC_NCASES };
static const char *const acc_name[] = {"bad rkey", "rkey lacking the right", "beyond the remote MR",
				       "QP without the access flag"};

/* One rkey violation by op on a fresh QP pair of p's devices: the responder NAKs (remote
 * access error, class C), the requester completes the WR REM_ACCESS_ERR and both QPs go to ERR
 * flushing everything else; the target memory is untouched. */
static void rem_access(struct pair *p, enum ibv_wr_opcode op, enum acc_case c)
{
	int need = op == IBV_WR_RDMA_WRITE  ? IBV_ACCESS_REMOTE_WRITE
		   : op == IBV_WR_RDMA_READ ? IBV_ACCESS_REMOTE_READ
					    : IBV_ACCESS_REMOTE_ATOMIC;
	bool atomic = op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
	struct ibv_mr *la, *ra, *rm;
	struct wr x[3];
	uint64_t raddr;
	uint32_t rkey, len = atomic ? 8 : 64;
	char who[160];

	qps_connect(p, IBV_QPT_RC, IBV_MTU_1024);
	la = reg(p->a.pd, 4096, ACCESS_ALL);
	ra = reg(p->a.pd, 4096, ACCESS_ALL);
	/* Remote target: lacking the right only in ACC_NO_RIGHT (LOCAL_WRITE always: verbs
	 * requires it with remote write/atomic). */
	rm = reg(p->b.pd, 4096, c == ACC_NO_RIGHT ? ACCESS_ALL & ~need : ACCESS_ALL);
	memset(la->addr, 0xab, 4096);
	raddr = (uintptr_t)rm->addr;
	rkey = rm->rkey;
	if (c == ACC_BAD_RKEY)
		rkey ^= 0x80; /* same index, another variant: a key never issued */
	if (c == ACC_BEYOND_MR)
		raddr += atomic ? 4096 : 4096 - 32; /* the buffer goes on: only the MR ends */
	if (c == ACC_QP_FLAG) {
		struct ibv_qp_attr a = {.qp_access_flags = QP_ACCESS_ALL & ~need};

		cr_assert_eq(ibv_modify_qp(p->qb, &a, IBV_QP_ACCESS_FLAGS), 0,
			     "RTS->RTS access flags: %s", hcasim_last_error());
	}
	snprintf(who, sizeof(who), "op %d, %s: requester", op, acc_name[c]);
	post_recv_ok(p->qa, RECV_ID + 0, (uintptr_t)ra->addr, 1024, ra->lkey);
	post_recv_ok(p->qb, RECV_ID + 0x100, (uintptr_t)rm->addr + 2048, 1024, rm->lkey);

	mk_send(&x[0], 0x1000, op, true, (uintptr_t)la->addr, len, la->lkey);
	if (atomic) {
		x[0].w.wr.atomic.remote_addr = raddr;
		x[0].w.wr.atomic.rkey = rkey;
		x[0].w.wr.atomic.compare_add = 0; /* CAS: matches the zeroed target */
		x[0].w.wr.atomic.swap = 0x1234;
		if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			x[0].w.wr.atomic.compare_add = 5;
	} else {
		x[0].w.wr.rdma.remote_addr = raddr;
		x[0].w.wr.rdma.rkey = rkey;
	}
	mk_send(&x[1], 0x1001, IBV_WR_SEND, false, (uintptr_t)la->addr, 16, la->lkey);
	mk_send(&x[2], 0x1002, IBV_WR_SEND, true, (uintptr_t)la->addr, 16, la->lkey);
	post_send_ok(p->qa, x, 3);
	{
		const struct exp e[] = {{0x1000, IBV_WC_REM_ACCESS_ERR, HCA_VERR_NAK_REM_ACCESS},
					{0x1001, IBV_WC_WR_FLUSH_ERR, 0},
					{0x1002, IBV_WC_WR_FLUSH_ERR, 0},
					{RECV_ID + 0, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p->a.cq, p->qa->qp_num, who, e, 4);
	}
	EXPECT_STATE(p->qa, IBV_QPS_ERR, who);
	snprintf(who, sizeof(who), "op %d, %s: responder", op, acc_name[c]);
	{
		/* No receive WQE was in use: the posted one is flushed. */
		const struct exp e[] = {{RECV_ID + 0x100, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p->b.cq, p->qb->qp_num, who, e, 1);
	}
	EXPECT_STATE(p->qb, IBV_QPS_ERR, who);
	cr_assert(all_zero(rm->addr, 2048), "%s: the target memory was modified", who);
	if (c == ACC_BEYOND_MR)
		cr_assert(all_zero((uint8_t *)rm->addr + 4096, 64),
			  "%s: memory past the MR was modified", who);
	if (op == IBV_WR_RDMA_READ)
		cr_assert_eq(((uint8_t *)la->addr)[0], 0xab, "%s: the READ buffer was written",
			     who);
	free_mr(la);
	free_mr(ra);
	free_mr(rm);
	qps_destroy(p);
}

static void rem_access_all(enum ibv_wr_opcode op)
{
	struct pair p;

	devs_open(&p);
	for (int c = 0; c < ACC_NCASES; c++)
		rem_access(&p, op, (enum acc_case)c);
	pair_close(&p);
}

Test(dp_errors, rc_write_rkey_violations_are_rem_access_err)
{
	rem_access_all(IBV_WR_RDMA_WRITE);
}

Test(dp_errors, rc_read_rkey_violations_are_rem_access_err)
{
	rem_access_all(IBV_WR_RDMA_READ);
}

Test(dp_errors, rc_compare_swap_rkey_violations_are_rem_access_err)
{
	rem_access_all(IBV_WR_ATOMIC_CMP_AND_SWP);
}

Test(dp_errors, rc_fetch_add_rkey_violations_are_rem_access_err)
{
	rem_access_all(IBV_WR_ATOMIC_FETCH_AND_ADD);
}

/* ================= IBV_WC_REM_INV_REQ_ERR ================= */

/* RC SEND longer than the receive buffer (a "bad length", class C): NAK invalid request; the
 * requester completes REM_INV_REQ_ERR, the responder's receive (in use) completes
 * REM_INV_REQ_ERR (ib-facts, "Responder"), both QPs go to ERR and flush. The message is three
 * packets: the first two fit, the third does not. */
Test(dp_errors, rc_send_longer_than_the_receive_buffer_is_rem_inv_req_err)
{
	struct pair p;
	struct ibv_mr *sa, *ra, *rb;
	struct wr x[2];

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	sa = reg(p.a.pd, 4096, ACCESS_ALL);
	ra = reg(p.a.pd, 4096, ACCESS_ALL);
	rb = reg(p.b.pd, 8192, ACCESS_ALL);
	post_recv_ok(p.qa, RECV_ID + 0, (uintptr_t)ra->addr, 1024, ra->lkey);
	post_recv_ok(p.qb, RECV_ID + 0x100, (uintptr_t)rb->addr, 2048, rb->lkey);
	post_recv_ok(p.qb, RECV_ID + 0x101, (uintptr_t)rb->addr + 4096, 4096, rb->lkey);
	mk_send(&x[0], 0x1000, IBV_WR_SEND, true, (uintptr_t)sa->addr, 3000, sa->lkey);
	mk_send(&x[1], 0x1001, IBV_WR_SEND, false, (uintptr_t)sa->addr, 16, sa->lkey);
	post_send_ok(p.qa, x, 2);
	{
		const struct exp e[] = {{0x1000, IBV_WC_REM_INV_REQ_ERR, HCA_VERR_NAK_INV_REQ},
					{0x1001, IBV_WC_WR_FLUSH_ERR, 0},
					{RECV_ID + 0, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "requester", e, 3);
	}
	EXPECT_STATE(p.qa, IBV_QPS_ERR, "requester");
	{
		const struct exp e[] = {{RECV_ID + 0x100, IBV_WC_REM_INV_REQ_ERR, HCA_VERR_REQ_LEN},
					{RECV_ID + 0x101, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p.b.cq, p.qb->qp_num, "responder", e, 2);
	}
	EXPECT_STATE(p.qb, IBV_QPS_ERR, "responder");
	free_mr(sa);
	free_mr(ra);
	free_mr(rb);
	pair_close(&p);
}

/* A misaligned atomic (remote_addr not 8-byte aligned) is an invalid request: NAK 0x61, the
 * requester completes REM_INV_REQ_ERR, both QPs go to ERR. The atomic used no receive WQE, so
 * the responder's posted receive is flushed (rxe: do_complete has no WQE to complete), and the
 * target is untouched. */
static void misaligned_atomic(struct pair *p, enum ibv_wr_opcode op)
{
	struct ibv_mr *la, *rm;
	struct wr x[2];

	qps_connect(p, IBV_QPT_RC, IBV_MTU_1024);
	la = reg(p->a.pd, 4096, ACCESS_ALL);
	rm = reg(p->b.pd, 4096, ACCESS_ALL);
	post_recv_ok(p->qb, RECV_ID + 0x100, (uintptr_t)rm->addr + 2048, 1024, rm->lkey);
	mk_send(&x[0], 0x1000, op, true, (uintptr_t)la->addr, 8, la->lkey);
	x[0].w.wr.atomic.remote_addr = (uintptr_t)rm->addr + 4;
	x[0].w.wr.atomic.rkey = rm->rkey;
	x[0].w.wr.atomic.compare_add = op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 5 : 0;
	x[0].w.wr.atomic.swap = 0x1234;
	mk_send(&x[1], 0x1001, IBV_WR_RDMA_WRITE, false, (uintptr_t)la->addr, 16, la->lkey);
	x[1].w.wr.rdma.remote_addr = (uintptr_t)rm->addr;
	x[1].w.wr.rdma.rkey = rm->rkey;
	post_send_ok(p->qa, x, 2);
	{
		const struct exp e[] = {{0x1000, IBV_WC_REM_INV_REQ_ERR, HCA_VERR_NAK_INV_REQ},
					{0x1001, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p->a.cq, p->qa->qp_num, "misaligned atomic: requester", e, 2);
	}
	EXPECT_STATE(p->qa, IBV_QPS_ERR, "misaligned atomic: requester");
	{
		const struct exp e[] = {{RECV_ID + 0x100, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p->b.cq, p->qb->qp_num, "misaligned atomic: responder", e, 1);
	}
	EXPECT_STATE(p->qb, IBV_QPS_ERR, "misaligned atomic: responder");
	cr_assert(all_zero(rm->addr, 2048), "misaligned atomic: target memory modified");
	free_mr(la);
	free_mr(rm);
	qps_destroy(p);
}

Test(dp_errors, rc_misaligned_atomic_is_rem_inv_req_err)
{
	struct pair p;

	devs_open(&p);
	misaligned_atomic(&p, IBV_WR_ATOMIC_CMP_AND_SWP);
	misaligned_atomic(&p, IBV_WR_ATOMIC_FETCH_AND_ADD);
	pair_close(&p);
}

/* ================= IBV_WC_REM_OP_ERR ================= */

/* The responder's receive WQE names memory it may not write (the lkey of a deregistered MR):
 * NAK remote operational error; the requester completes REM_OP_ERR. On the responder the
 * receive completes LOC_PROT_ERR ("S/G entries don't point to a valid MR", seed 003) and the QP
 * goes to ERR, flushing the next receive. */
Test(dp_errors, rc_receive_into_a_deregistered_mr_is_rem_op_err)
{
	struct pair p;
	struct ibv_mr *sa, *rb, *gone;
	uint32_t gone_lkey;
	struct wr x[2];

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	sa = reg(p.a.pd, 4096, ACCESS_ALL);
	rb = reg(p.b.pd, 4096, ACCESS_ALL);
	gone = reg(p.b.pd, 4096, ACCESS_ALL);
	gone_lkey = gone->lkey;
	free_mr(gone);
	post_recv_ok(p.qb, RECV_ID + 0x100, (uintptr_t)rb->addr, 1024, gone_lkey);
	post_recv_ok(p.qb, RECV_ID + 0x101, (uintptr_t)rb->addr + 1024, 1024, rb->lkey);
	mk_send(&x[0], 0x1000, IBV_WR_SEND, true, (uintptr_t)sa->addr, 100, sa->lkey);
	mk_send(&x[1], 0x1001, IBV_WR_SEND, false, (uintptr_t)sa->addr, 16, sa->lkey);
	post_send_ok(p.qa, x, 2);
	{
		const struct exp e[] = {{0x1000, IBV_WC_REM_OP_ERR, HCA_VERR_NAK_REM_OP},
					{0x1001, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "requester", e, 2);
	}
	EXPECT_STATE(p.qa, IBV_QPS_ERR, "requester");
	{
		const struct exp e[] = {{RECV_ID + 0x100, IBV_WC_LOC_PROT_ERR, HCA_VERR_LKEY_INVALID},
					{RECV_ID + 0x101, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p.b.cq, p.qb->qp_num, "responder", e, 2);
	}
	EXPECT_STATE(p.qb, IBV_QPS_ERR, "responder");
	cr_assert(all_zero(rb->addr, 4096), "nothing may have been written");
	free_mr(sa);
	free_mr(rb);
	pair_close(&p);
}

/* ================= IBV_WC_WR_FLUSH_ERR ================= */

/* Modify to ERR with sends outstanding (the peer stays in RESET: no ACK ever comes) and
 * receives posted: every WR completes WR_FLUSH_ERR with its wr_id, signaled or not, in order.
 * Then posting to the QP in ERR is allowed and completes flushed (ib-facts state table). */
Test(dp_errors, modify_to_err_flushes_everything_and_posts_in_err_complete_flushed)
{
	struct pair p;
	struct ibv_mr *sa, *ra;
	struct wr x[4];
	uint32_t max_wr;

	devs_open(&p);
	p.qa = tb_create_qp(&p.a, IBV_QPT_RC);
	p.qb = tb_create_qp(&p.b, IBV_QPT_RC); /* left in RESET: drops everything */
	tb_connect(&p.a, p.qa, &p.b, p.qb->qp_num, IBV_MTU_1024);
	sa = reg(p.a.pd, 4096, ACCESS_ALL);
	ra = reg(p.a.pd, 4096, ACCESS_ALL);
	{
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr i;

		cr_assert_eq(ibv_query_qp(p.qa, &a, IBV_QP_CAP, &i), 0);
		max_wr =
		    a.cap.max_send_wr < a.cap.max_recv_wr ? a.cap.max_send_wr : a.cap.max_recv_wr;
		cr_assert_geq(max_wr, 4);
	}
	for (int i = 0; i < 4; i++)
		post_recv_ok(p.qa, RECV_ID + i, (uintptr_t)ra->addr + 256 * i, 256, ra->lkey);
	for (int i = 0; i < 4; i++)
		mk_send(&x[i], 0x1000 + i, i == 1 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, !(i & 1),
			(uintptr_t)sa->addr, 100, sa->lkey);
	x[1].w.wr.rdma.remote_addr = 0x10000;
	x[1].w.wr.rdma.rkey = 0x1234;
	post_send_ok(p.qa, x, 4);
	expect_no_more(p.a.cq, "before the modify (the peer never answers)");
	EXPECT_STATE(p.qa, IBV_QPS_RTS, "before the modify");

	modify_state(p.qa, IBV_QPS_ERR);
	{
		const struct exp e[] = {
		    {0x1000, IBV_WC_WR_FLUSH_ERR, 0},	{0x1001, IBV_WC_WR_FLUSH_ERR, 0},
		    {0x1002, IBV_WC_WR_FLUSH_ERR, 0},	{0x1003, IBV_WC_WR_FLUSH_ERR, 0},
		    {RECV_ID + 0, IBV_WC_WR_FLUSH_ERR, 0}, {RECV_ID + 1, IBV_WC_WR_FLUSH_ERR, 0},
		    {RECV_ID + 2, IBV_WC_WR_FLUSH_ERR, 0}, {RECV_ID + 3, IBV_WC_WR_FLUSH_ERR, 0},
		};

		expect_wcs(p.a.cq, p.qa->qp_num, "modify to ERR", e, 8);
	}
	EXPECT_STATE(p.qa, IBV_QPS_ERR, "after the modify");

	/* Posting in ERR: accepted, completes flushed (an unsignaled send too). */
	mk_send(&x[0], 0x1010, IBV_WR_SEND, false, (uintptr_t)sa->addr, 16, sa->lkey);
	mk_send(&x[1], 0x1011, IBV_WR_SEND, true, (uintptr_t)sa->addr, 16, sa->lkey);
	post_send_ok(p.qa, x, 2);
	post_recv_ok(p.qa, RECV_ID + 0x10, (uintptr_t)ra->addr, 256, ra->lkey);
	{
		const struct exp e[] = {{0x1010, IBV_WC_WR_FLUSH_ERR, 0},
					{0x1011, IBV_WC_WR_FLUSH_ERR, 0},
					{RECV_ID + 0x10, IBV_WC_WR_FLUSH_ERR, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "posted in ERR", e, 3);
	}
	EXPECT_STATE(p.qa, IBV_QPS_ERR, "after posting in ERR");
	expect_no_more(p.b.cq, "peer in RESET");
	free_mr(sa);
	free_mr(ra);
	pair_close(&p);
}

/* With an SRQ, a QP going to ERR flushes no receive (they belong to the SRQ) and raises
 * IBV_EVENT_QP_LAST_WQE_REACHED naming the QP; the SRQ's receives still serve another QP. */
Test(dp_errors, srq_receives_are_not_flushed_and_last_wqe_reached_is_raised)
{
	struct pair p;
	struct ibv_srq_init_attr sinit = {.attr = {.max_wr = 8, .max_sge = 1}};
	struct ibv_srq *srq;
	struct ibv_qp *qc, *qd;
	struct ibv_mr *sa, *rb;
	struct ibv_async_event ev;
	struct wr x[1];
	struct ibv_wc wc;
	bool seen = false;

	devs_open(&p);
	srq = ibv_create_srq(p.b.pd, &sinit);
	cr_assert_not_null(srq, "ibv_create_srq: %s", hcasim_last_error());
	{
		struct ibv_qp_init_attr init = {
		    .send_cq = p.b.cq,
		    .recv_cq = p.b.cq,
		    .srq = srq,
		    .qp_type = IBV_QPT_RC,
		    .cap = {.max_send_wr = 4, .max_send_sge = 1},
		};

		p.qb = ibv_create_qp(p.b.pd, &init);
		cr_assert_not_null(p.qb, "%s", hcasim_last_error());
		qc = ibv_create_qp(p.b.pd, &init);
		cr_assert_not_null(qc, "%s", hcasim_last_error());
	}
	p.qa = tb_create_qp(&p.a, IBV_QPT_RC);
	qd = tb_create_qp(&p.a, IBV_QPT_RC);
	tb_connect(&p.a, p.qa, &p.b, p.qb->qp_num, IBV_MTU_1024);
	tb_connect(&p.b, p.qb, &p.a, p.qa->qp_num, IBV_MTU_1024);
	tb_connect(&p.a, qd, &p.b, qc->qp_num, IBV_MTU_1024);
	tb_connect(&p.b, qc, &p.a, qd->qp_num, IBV_MTU_1024);
	sa = reg(p.a.pd, 4096, ACCESS_ALL);
	rb = reg(p.b.pd, 4096, ACCESS_ALL);
	for (int i = 0; i < 4; i++)
		post_srq_recv_ok(srq, 0x3000 + i, (uintptr_t)rb->addr + 1024 * i, 1024, rb->lkey);

	mk_send(&x[0], 0x1000, IBV_WR_SEND, true, (uintptr_t)sa->addr, 100, sa->lkey);
	post_send_ok(p.qa, x, 1);
	{
		const struct exp ea[] = {{0x1000, IBV_WC_SUCCESS, 0}};
		const struct exp eb[] = {{0x3000, IBV_WC_SUCCESS, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "send to the SRQ QP", ea, 1);
		expect_wcs(p.b.cq, p.qb->qp_num, "SRQ receive", eb, 1);
	}

	modify_state(p.qb, IBV_QPS_ERR);
	expect_no_more(p.b.cq, "SRQ receives must not be flushed by the QP's ERR");
	EXPECT_STATE(p.qb, IBV_QPS_ERR, "SRQ QP");
	for (int i = 0; i < 16 && !seen; i++) {
		int rc = ibv_get_async_event(p.b.ctx, &ev);

		cr_assert_eq(rc, 0, "ibv_get_async_event: no IBV_EVENT_QP_LAST_WQE_REACHED (%s)",
			     hcasim_last_error());
		if (ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED) {
			cr_assert_eq(ev.element.qp, p.qb, "LAST_WQE_REACHED names QP %p, not %p",
				     (void *)ev.element.qp, (void *)p.qb);
			seen = true;
		}
		ibv_ack_async_event(&ev);
	}
	cr_assert(seen, "IBV_EVENT_QP_LAST_WQE_REACHED not raised");

	/* The SRQ's receives are intact: the next one serves qc. */
	mk_send(&x[0], 0x1100, IBV_WR_SEND, true, (uintptr_t)sa->addr, 200, sa->lkey);
	post_send_ok(qd, x, 1);
	{
		const struct exp ea[] = {{0x1100, IBV_WC_SUCCESS, 0}};

		expect_wcs(p.a.cq, qd->qp_num, "send to the other SRQ QP", ea, 1);
	}
	poll_n(p.b.cq, &wc, 1, "SRQ receive after the other QP's ERR");
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 0x3001, "the SRQ's next receive, wr_id 0x%" PRIx64, wc.wr_id);
	cr_assert_eq(wc.qp_num, qc->qp_num);
	cr_assert_eq(wc.byte_len, 200);

	cr_assert_eq(ibv_destroy_qp(qc), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(qd), 0, "%s", hcasim_last_error());
	qps_destroy(&p);
	cr_assert_eq(ibv_destroy_srq(srq), 0, "%s", hcasim_last_error());
	free_mr(sa);
	free_mr(rb);
	pair_close(&p);
}

/* ================= posting where the state forbids it ================= */

static void expect_post_send_einval(struct ibv_qp *qp, struct ibv_mr *mr, const char *st)
{
	struct wr x[2];
	struct ibv_send_wr *bad = NULL;
	int rc;

	mk_send(&x[0], 0x1000, IBV_WR_SEND, true, (uintptr_t)mr->addr, 16, mr->lkey);
	mk_send(&x[1], 0x1001, IBV_WR_SEND, true, (uintptr_t)mr->addr, 16, mr->lkey);
	chain(x, 2);
	rc = ibv_post_send(qp, &x[0].w, &bad);
	cr_assert_eq(rc, EINVAL, "ibv_post_send in %s returned %d, expected EINVAL", st, rc);
	cr_assert_eq(bad, &x[0].w, "ibv_post_send in %s: *bad_wr is not the first WR", st);
}

/* ib-facts state table: post send needs RTS/SQD/SQE/ERR, post receive anything but RESET. */
Test(dp_errors, posting_in_a_state_that_forbids_it_is_einval_with_bad_wr_first)
{
	struct pair p;
	struct ibv_mr *mr;
	struct ibv_qp_attr a;
	union ibv_gid gid;
	struct ibv_sge s;
	struct ibv_recv_wr r[2], *rbad = NULL;
	int rc;

	devs_open(&p);
	p.qa = tb_create_qp(&p.a, IBV_QPT_RC);
	p.qb = tb_create_qp(&p.b, IBV_QPT_RC);
	mr = reg(p.a.pd, 4096, ACCESS_ALL);

	/* RESET: no send, no receive. */
	expect_post_send_einval(p.qa, mr, "RESET");
	s = (struct ibv_sge){(uintptr_t)mr->addr, 256, mr->lkey};
	memset(r, 0, sizeof(r));
	r[0] = (struct ibv_recv_wr){.wr_id = RECV_ID, .next = &r[1], .sg_list = &s, .num_sge = 1};
	r[1] = (struct ibv_recv_wr){.wr_id = RECV_ID + 1, .sg_list = &s, .num_sge = 1};
	rc = ibv_post_recv(p.qa, &r[0], &rbad);
	cr_assert_eq(rc, EINVAL, "ibv_post_recv in RESET returned %d, expected EINVAL", rc);
	cr_assert_eq(rbad, &r[0], "ibv_post_recv in RESET: *bad_wr is not the first WR");

	/* INIT: receives yes, sends no. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = QP_ACCESS_ALL;
	cr_assert_eq(
	    ibv_modify_qp(p.qa, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	    0, "INIT: %s", hcasim_last_error());
	expect_post_send_einval(p.qa, mr, "INIT");
	post_recv_ok(p.qa, RECV_ID + 2, (uintptr_t)mr->addr, 256, mr->lkey);

	/* RTR: receives yes, sends no. */
	memset(&a, 0, sizeof(a));
	cr_assert_eq(ibv_query_gid(p.b.ctx, 1, 0, &gid), 0);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = p.qb->qp_num;
	a.rq_psn = 0x100;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.dlid = p.b.port.lid;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = p.a.port.link_layer == IBV_LINK_LAYER_ETHERNET;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.hop_limit = 1;
	cr_assert_eq(ibv_modify_qp(p.qa, &a,
				   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER),
		     0, "RTR: %s", hcasim_last_error());
	expect_post_send_einval(p.qa, mr, "RTR");
	post_recv_ok(p.qa, RECV_ID + 3, (uintptr_t)mr->addr + 256, 256, mr->lkey);

	/* None of the refused WRs reached the device: no completion. */
	expect_no_more(p.a.cq, "refused posts");
	free_mr(mr);
	pair_close(&p);
}

/* A full queue: ENOMEM with *bad_wr at the first WR that did not fit; the ones before it were
 * posted and complete normally. */
Test(dp_errors, full_queues_are_enomem_with_bad_wr_at_the_first_that_did_not_fit)
{
	struct pair p;
	struct ibv_mr *la, *rm, *ra;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	uint32_t nsend, nrecv;
	struct wr *x;
	struct ibv_send_wr *bad = NULL;
	struct ibv_recv_wr *r, *rbad = NULL;
	struct ibv_sge *rs;
	struct exp *e;
	int rc;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	cr_assert_eq(ibv_query_qp(p.qa, &qa, IBV_QP_CAP, &qi), 0);
	nsend = qa.cap.max_send_wr;
	nrecv = qa.cap.max_recv_wr;
	cr_assert(nsend >= 1 && nsend <= 32 && nrecv >= 1 && nrecv <= 32, "caps %u/%u", nsend,
		  nrecv);
	la = reg(p.a.pd, 4096, ACCESS_ALL);
	ra = reg(p.a.pd, 4096, ACCESS_ALL);
	rm = reg(p.b.pd, 4096, ACCESS_ALL);
	x = calloc(nsend + 2, sizeof(*x));
	e = calloc(nsend + nrecv + 2, sizeof(*e));
	for (uint32_t i = 0; i < nsend + 2; i++) {
		mk_send(&x[i], 0x1000 + i, IBV_WR_RDMA_WRITE, true, (uintptr_t)la->addr, 64,
			la->lkey);
		x[i].w.wr.rdma.remote_addr = (uintptr_t)rm->addr + 64 * i;
		x[i].w.wr.rdma.rkey = rm->rkey;
	}
	chain(x, (int)nsend + 2);
	rc = ibv_post_send(p.qa, &x[0].w, &bad);
	cr_assert_eq(rc, ENOMEM, "ibv_post_send of %u WRs on a %u-WR queue returned %d", nsend + 2,
		     nsend, rc);
	cr_assert_eq(bad, &x[nsend].w, "*bad_wr is WR %d, expected %u",
		     bad ? (int)(((char *)bad - (char *)&x[0].w) / (long)sizeof(*x)) : -1, nsend);
	for (uint32_t i = 0; i < nsend; i++)
		e[i] = (struct exp){0x1000 + i, IBV_WC_SUCCESS, 0};
	expect_wcs(p.a.cq, p.qa->qp_num, "the WRs that fit", e, (int)nsend);

	r = calloc(nrecv + 2, sizeof(*r));
	rs = calloc(nrecv + 2, sizeof(*rs));
	for (uint32_t i = 0; i < nrecv + 2; i++) {
		rs[i] = (struct ibv_sge){(uintptr_t)ra->addr + 128 * i, 128, ra->lkey};
		r[i] = (struct ibv_recv_wr){.wr_id = RECV_ID + i,
					    .next = i + 1 < nrecv + 2 ? &r[i + 1] : NULL,
					    .sg_list = &rs[i],
					    .num_sge = 1};
	}
	rc = ibv_post_recv(p.qa, &r[0], &rbad);
	cr_assert_eq(rc, ENOMEM, "ibv_post_recv of %u WRs on a %u-WR queue returned %d", nrecv + 2,
		     nrecv, rc);
	cr_assert_eq(rbad, &r[nrecv], "ibv_post_recv: *bad_wr is not the first that did not fit");
	/* The posted receives complete: b sends one message to each. */
	for (uint32_t i = 0; i < nrecv; i++) {
		struct wr y;
		struct ibv_wc wc;

		mk_send(&y, 0x1100 + i, IBV_WR_SEND, true, (uintptr_t)rm->addr, 8 + i, rm->lkey);
		post_send_ok(p.qb, &y, 1);
		poll_n(p.b.cq, &wc, 1, "b's send");
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "b's send %u: %s", i,
			     ibv_wc_status_str(wc.status));
		e[i] = (struct exp){RECV_ID + i, IBV_WC_SUCCESS, 0};
	}
	expect_wcs(p.a.cq, p.qa->qp_num, "the receives that fit", e, (int)nrecv);
	free(x);
	free(e);
	free(r);
	free(rs);
	free_mr(la);
	free_mr(ra);
	free_mr(rm);
	pair_close(&p);
}

/* ================= bad packets ================= */

static void counters(int dev, struct hcasim_dev_counters *c)
{
	cr_assert_eq(hcasim_dev_counters(dev, c), 0, "%s", hcasim_last_error());
}

/* No fault injection yet: a clean RC workload (SEND, WRITE, READ, atomic) leaves the CRC error
 * and drop counters at 0 on both devices while packets were received. */
Test(dp_errors, clean_workload_has_no_crc_errors_and_no_drops)
{
	struct pair p;
	struct ibv_mr *la, *rm;
	struct wr x[4];
	struct hcasim_dev_counters c[2];

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	la = reg(p.a.pd, 16384, ACCESS_ALL);
	rm = reg(p.b.pd, 16384, ACCESS_ALL);
	post_recv_ok(p.qb, RECV_ID, (uintptr_t)rm->addr + 8192, 8192, rm->lkey);
	mk_send(&x[0], 0x1000, IBV_WR_SEND, true, (uintptr_t)la->addr, 5000, la->lkey);
	mk_send(&x[1], 0x1001, IBV_WR_RDMA_WRITE, true, (uintptr_t)la->addr, 5000, la->lkey);
	x[1].w.wr.rdma.remote_addr = (uintptr_t)rm->addr;
	x[1].w.wr.rdma.rkey = rm->rkey;
	mk_send(&x[2], 0x1002, IBV_WR_RDMA_READ, true, (uintptr_t)la->addr + 8192, 5000, la->lkey);
	x[2].w.wr.rdma.remote_addr = (uintptr_t)rm->addr;
	x[2].w.wr.rdma.rkey = rm->rkey;
	mk_send(&x[3], 0x1003, IBV_WR_ATOMIC_FETCH_AND_ADD, true, (uintptr_t)la->addr + 16000, 8,
		la->lkey);
	x[3].w.wr.atomic.remote_addr = (uintptr_t)rm->addr + 6000;
	x[3].w.wr.atomic.rkey = rm->rkey;
	x[3].w.wr.atomic.compare_add = 1;
	post_send_ok(p.qa, x, 4);
	{
		const struct exp ea[] = {{0x1000, IBV_WC_SUCCESS, 0},
					 {0x1001, IBV_WC_SUCCESS, 0},
					 {0x1002, IBV_WC_SUCCESS, 0},
					 {0x1003, IBV_WC_SUCCESS, 0}};
		const struct exp eb[] = {{RECV_ID, IBV_WC_SUCCESS, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "workload", ea, 4);
		expect_wcs(p.b.cq, p.qb->qp_num, "workload receive", eb, 1);
	}
	counters(0, &c[0]);
	counters(1, &c[1]);
	for (int d = 0; d < 2; d++) {
		cr_assert_gt(c[d].rx_pkts, 0, "dev %d received nothing", d);
		cr_assert_eq(c[d].rx_crc_errors, 0, "dev %d: %" PRIu64 " CRC errors", d,
			     c[d].rx_crc_errors);
		cr_assert_eq(c[d].rx_dropped, 0, "dev %d: %" PRIu64 " frames dropped", d,
			     c[d].rx_dropped);
	}
	free_mr(la);
	free_mr(rm);
	pair_close(&p);
}

/* ib-facts state table: incoming packets to a QP in RESET are dropped. a (UC) sends a
 * three-packet message to b, which was moved back to RESET: b drops every packet and counts it
 * in rx_dropped (not in rx_crc_errors); nothing completes on b. */
Test(dp_errors, packets_for_a_qp_in_reset_are_dropped_and_counted)
{
	struct pair p;
	struct ibv_mr *sa, *rb;
	struct wr x[1];
	struct hcasim_dev_counters before, after;

	pair_open(&p, IBV_QPT_UC, IBV_MTU_1024);
	sa = reg(p.a.pd, 4096, ACCESS_ALL);
	rb = reg(p.b.pd, 4096, ACCESS_ALL);
	modify_state(p.qb, IBV_QPS_RESET);
	EXPECT_STATE(p.qb, IBV_QPS_RESET, "b");
	counters(1, &before);
	mk_send(&x[0], 0x1000, IBV_WR_SEND, true, (uintptr_t)sa->addr, 3000, sa->lkey);
	post_send_ok(p.qa, x, 1);
	{
		const struct exp e[] = {{0x1000, IBV_WC_SUCCESS, 0}};

		expect_wcs(p.a.cq, p.qa->qp_num, "UC sender", e, 1);
	}
	expect_no_more(p.b.cq, "b in RESET");
	counters(1, &after);
	cr_assert_eq(after.rx_pkts - before.rx_pkts, 3, "b received %" PRIu64 " frames, expected 3",
		     after.rx_pkts - before.rx_pkts);
	cr_assert_eq(after.rx_dropped - before.rx_dropped, 3,
		     "b dropped %" PRIu64 " frames, expected 3",
		     after.rx_dropped - before.rx_dropped);
	cr_assert_eq(after.rx_crc_errors, 0, "CRC errors: %" PRIu64, after.rx_crc_errors);
	free_mr(sa);
	free_mr(rb);
	pair_close(&p);
}

/* RESET empties both queues (IBA 10.3.1), for the driver as for the device: a receive queue
 * filled to the brim, taken to ERR and straight on to RESET without its flush completions
 * polled, leaves no completion behind (the driver cleans them from the CQ, as mlx5 does),
 * takes as many receives again once reconnected, and the first of them is the one the next
 * SEND lands in. (Found by the fuzz target `frame`: the driver kept counting the receives
 * the device had dropped, and refused new ones as a full queue.) */
Test(dp_errors, reset_empties_the_queues_for_the_driver_too)
{
	struct tb_pair p;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;
	int n = 0;

	tb_pair_open(&p, IBV_QPT_RC, 4096, 3);
	for (;; n++) {
		struct ibv_sge s = { (uintptr_t)p.dst->addr, 64, p.dst->lkey };
		struct ibv_recv_wr w = { .wr_id = 100 + n, .sg_list = &s, .num_sge = 1 }, *bad;

		if (ibv_post_recv(p.qb, &w, &bad))
			break;
	}
	cr_assert_gt(n, 0);
	cr_assert_eq(ibv_modify_qp(p.qb, &a, IBV_QP_STATE), 0, "%s", hcasim_last_error());
	a.qp_state = IBV_QPS_RESET;
	cr_assert_eq(ibv_modify_qp(p.qb, &a, IBV_QP_STATE), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_poll_cq(p.b.cq, 1, &wc), 0, "a completion of the QP outlived its RESET: "
		     "wr_id %" PRIu64 " %s", wc.wr_id, ibv_wc_status_str(wc.status));
	tb_connect(&p.b, p.qb, &p.a, p.qa->qp_num, IBV_MTU_1024);
	for (int i = 0; i < n; i++) {
		struct ibv_sge s = { (uintptr_t)p.dst->addr, 4096, p.dst->lkey };
		struct ibv_recv_wr w = { .wr_id = 1000 + i, .sg_list = &s, .num_sge = 1 }, *bad;

		cr_assert_eq(ibv_post_recv(p.qb, &w, &bad), 0, "receive %d of %d after RESET: %s", i,
			     n, hcasim_last_error());
	}
	{
		struct ibv_sge s = { (uintptr_t)p.src->addr, 100, p.src->lkey };
		struct ibv_send_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		cr_assert_eq(ibv_post_send(p.qa, &w, &bad), 0, "%s", hcasim_last_error());
	}
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	tb_poll(p.b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 1000, "the SEND landed in receive wr_id %" PRIu64, wc.wr_id);
	cr_assert_eq(wc.byte_len, 100);
	tb_pair_close(&p);
}

/* A flush that overruns its CQ: a UD QP in SQE flushes the sends posted to it, and the
 * overrun moves the QP on to ERR from inside the flush's own CQE post, which starts a flush of
 * its own; both must end (the outer one used to count past the queue's end and ran 2^32
 * times). Found by the fuzz target `mmio`. The CQ goes to error (IBV_EVENT_CQ_ERR), the QP is
 * in ERR, and another QP of the device still works. */
Test(dp_errors, a_flush_that_overruns_its_cq_ends)
{
	struct tb_pair p;
	struct ibv_cq *small;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_ah_attr aa = { .dlid = 1, .port_num = 1 };
	struct ibv_ah *ah;
	struct ibv_async_event ev;
	struct ibv_port_attr pa;
	int posted = 0;

	tb_pair_open(&p, IBV_QPT_RC, 8192, 5);
	small = ibv_create_cq(p.a.ctx, 1, NULL, NULL, 0);
	cr_assert_not_null(small, "%s", hcasim_last_error());
	ia.send_cq = ia.recv_cq = small;
	qp = ibv_create_qp(p.a.pd, &ia);
	cr_assert_not_null(qp, "%s", hcasim_last_error());
	tb_connect(&p.a, qp, &p.b, p.qb->qp_num, IBV_MTU_1024);
	cr_assert_eq(ibv_query_port(p.a.ctx, 1, &pa), 0);
	ah = ibv_create_ah(p.a.pd, &aa);
	cr_assert_not_null(ah, "%s", hcasim_last_error());
	for (int i = 0; i < 16; i++) {
		/* the first longer than the MTU: LOC_LEN_ERR, and the QP goes to SQE */
		struct ibv_sge s = { (uintptr_t)p.src->addr, i ? 64 : 8000, p.src->lkey };
		struct ibv_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
					 .wr.ud = { .ah = ah, .remote_qpn = 0x99,
						    .remote_qkey = 0x11111111 } },
				   *bad;

		if (ibv_post_send(qp, &w, &bad))
			break;
		posted++;
		hcasim_run_for_ps(1000000ull); /* each doorbell meets the QP in SQE */
	}
	cr_assert_gt(posted, (int)small->cqe + 1, "more sends (%d) than the CQ holds (%d)", posted,
		     small->cqe);
	hcasim_run_for_ps(10000000ull);
	cr_assert_null(hcasim_halted(), "%s", hcasim_halted());
	do
		cr_assert_eq(ibv_get_async_event(p.a.ctx, &ev), 0, "no CQ error event");
	while (ev.event_type != IBV_EVENT_CQ_ERR && (ibv_ack_async_event(&ev), 1));
	cr_assert_eq(ev.element.cq, small);
	ibv_ack_async_event(&ev);
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qi;

		cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi), 0, "%s", hcasim_last_error());
		cr_assert_eq(qa.qp_state, IBV_QPS_ERR, "state %d", qa.qp_state);
	}
	{
		/* every send WR but the failed one flushed once: the re-entered flush counted on
		 * past the queue's end, posting (and counting) 2^32 flushes */
		uint64_t wrfe = 0;

		cr_assert_eq(hcasim_port_counter(0, 1, "sq_num_wrfe", &wrfe), 0, "%s",
			     hcasim_last_error());
		cr_assert_eq(wrfe, (uint64_t)posted - 1, "sq_num_wrfe %" PRIu64 ", %d WRs posted",
			     wrfe, posted);
	}
	tb_pair_send(&p, 100); /* the pair on the same devices is untouched */
	cr_assert_eq(ibv_destroy_ah(ah), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(qp), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_cq(small), 0, "%s", hcasim_last_error());
	tb_pair_close(&p);
}
