/* Suite mw: memory windows (docs/memory-windows.md). Every rule of IBA 10.6.7 accepted and
 * broken, each broken one with its completion status and vendor_err (model/hw/verr.def):
 * type 1 windows bound with ibv_bind_mw, type 2 windows bound with IBV_WR_BIND_MW and
 * invalidated with IBV_WR_LOCAL_INV or a received SEND with Invalidate, the same through the
 * extended API, and sq_num_mwbe counting the MW_BIND_ERR completions. Windows are on host 1
 * (the pair's responder, qb); host 0's qa reaches its memory through them. */
#include <criterion/criterion.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>

#include "sim/hcasim.h"
#include "testbench/tb.h"
#include "testbench/tb_expect.h"

#define BUF 8192u
#define WIN_OFF 1024u /* the window starts here in the region */
#define WIN_LEN 2048u

/* A pair whose responder has a region that windows may be bound to (LOCAL_WRITE and MW_BIND,
 * and no remote right of its own: what a remote access may do is the window's alone). */
struct mwf {
	struct tb_pair p;
	struct ibv_mr *reg;   /* on host 1, in its PD */
	struct ibv_mr *extra; /* another region a test registered, freed by mwf_close */
	struct ibv_pd *pd2;   /* another PD of host 1, freed by mwf_close (after extra) */
};

/* The last vendor_err of each traced check: a responder's (resp.error), a bind's (mw.bind), an
 * invalidation's (mw.inv), with how many binds and invalidations were traced. */
static struct {
	uint64_t resp, bind, inv;
	unsigned nbind, ninv;
} seen;

static void observe(void *arg, uint64_t t, int dev, const char *event, const char *fields)
{
	(void)arg, (void)t, (void)dev;
	if (!strcmp(event, "resp.error"))
		hcasim_trace_field(fields, "verr", &seen.resp);
	if (!strcmp(event, "mw.bind") && hcasim_trace_field(fields, "verr", &seen.bind))
		seen.nbind++;
	if (!strcmp(event, "mw.inv") && hcasim_trace_field(fields, "verr", &seen.inv))
		seen.ninv++;
}

static struct ibv_mr *reg_mr(struct ibv_pd *pd, unsigned access)
{
	void *buf = NULL;
	struct ibv_mr *mr;

	cr_assert_eq(posix_memalign(&buf, 4096, BUF), 0);
	memset(buf, 0, BUF);
	mr = ibv_reg_mr(pd, buf, BUF, access);
	cr_assert_not_null(mr, "ibv_reg_mr: %s", hcasim_last_error());
	return mr;
}

static void mwf_open(struct mwf *f)
{
	memset(&seen, 0, sizeof(seen));
	cr_assert_eq(hcasim_trace_observe("mw,resp", observe, NULL), 0);
	tb_pair_open(&f->p, IBV_QPT_RC, BUF, 3);
	f->reg = reg_mr(f->p.b.pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	f->extra = NULL;
	f->pd2 = NULL;
}

static void dereg(struct ibv_mr *mr)
{
	void *buf = mr->addr;

	EXPECT_OK(ibv_dereg_mr(mr));
	free(buf);
}

/* Free window mw (if any), the regions and the second PD, then the pair. */
static void mwf_close(struct mwf *f, struct ibv_mw *mw)
{
	if (mw)
		EXPECT_OK(ibv_dealloc_mw(mw));
	if (f->extra)
		dereg(f->extra);
	if (f->pd2)
		EXPECT_OK(ibv_dealloc_pd(f->pd2));
	dereg(f->reg);
	tb_pair_close(&f->p);
}

static uint64_t win(const struct mwf *f, uint64_t off)
{
	return (uintptr_t)f->reg->addr + off;
}

static uint64_t mwbe(int dev)
{
	uint64_t v = ~0ull;

	cr_assert_eq(hcasim_port_counter(dev, 1, "sq_num_mwbe", &v), 0);
	return v;
}

/* One completion on cq, checked for status (and for vendor_err when not 0). */
static struct ibv_wc one(struct ibv_cq *cq, enum ibv_wc_status status, uint32_t verr)
{
	struct ibv_wc wc;

	tb_poll(cq, &wc, 1);
	cr_assert_eq(wc.status, status, "status %s (vendor_err 0x%x), expected %s",
		     ibv_wc_status_str(wc.status), wc.vendor_err, ibv_wc_status_str(status));
	if (verr)
		cr_assert_eq(wc.vendor_err, verr, "vendor_err 0x%x, expected 0x%x", wc.vendor_err,
			     verr);
	return wc;
}

/* Bind type 1 window mw with ibv_bind_mw on qb: [WIN_OFF, +len) of mr with access. */
static void bind1(struct mwf *f, struct ibv_mw *mw, struct ibv_mr *mr, uint64_t off,
		  uint64_t len, unsigned access)
{
	struct ibv_mw_bind b = { .wr_id = 0xb1, .send_flags = IBV_SEND_SIGNALED };

	b.bind_info = (struct ibv_mw_bind_info){ mr, mr ? (uintptr_t)mr->addr + off : 0, len,
						 access };
	EXPECT_OK(ibv_bind_mw(f->p.qb, mw, &b));
}

/* Post one signaled WR of opcode on qp with rkey (a bind_info with mr for BIND_MW). */
static void post(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mw *mw, uint32_t rkey,
		 struct ibv_mr *mr, uint64_t off, uint64_t len, unsigned access)
{
	struct ibv_send_wr w = { .wr_id = 0xb2, .opcode = op, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;

	if (op == IBV_WR_BIND_MW) {
		w.bind_mw.mw = mw;
		w.bind_mw.rkey = rkey;
		w.bind_mw.bind_info = (struct ibv_mw_bind_info){ mr, (uintptr_t)mr->addr + off, len,
								 access };
	} else {
		w.invalidate_rkey = rkey;
	}
	EXPECT_OK(ibv_post_send(qp, &w, &bad));
}

/* qa reads (READ) or writes (WRITE) len bytes at va of host 1 with rkey; its completion. */
static struct ibv_wc remote(struct mwf *f, enum ibv_wr_opcode op, uint32_t rkey, uint64_t va,
			    uint32_t len, enum ibv_wc_status status, uint32_t verr)
{
	struct ibv_sge s = { (uintptr_t)f->p.src->addr, len, f->p.src->lkey };
	struct ibv_send_wr w = { .wr_id = 0xa1, .sg_list = &s, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;

	w.wr.rdma.remote_addr = va;
	w.wr.rdma.rkey = rkey;
	EXPECT_OK(ibv_post_send(f->p.qa, &w, &bad));
	return one(f->p.a.cq, status, verr);
}

static enum ibv_qp_state state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	EXPECT_OK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia));
	return a.qp_state;
}

Test(mw, the_device_has_type_1_and_type_2b_windows)
{
	struct tb_dev t;
	struct ibv_mw *m1, *m2;

	tb_open(&t, 0);
	cr_assert(t.attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	cr_assert(t.attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	cr_assert_eq(t.attr.max_mw, t.attr.max_mr, "windows share the key table");
	m1 = ibv_alloc_mw(t.pd, IBV_MW_TYPE_1);
	m2 = ibv_alloc_mw(t.pd, IBV_MW_TYPE_2);
	cr_assert(m1 && m2, "%s", hcasim_last_error());
	cr_assert_eq(m1->type, IBV_MW_TYPE_1);
	cr_assert_eq(m2->type, IBV_MW_TYPE_2);
	cr_assert_eq(m1->pd, t.pd);
	cr_assert_neq(m1->rkey >> 8, m2->rkey >> 8, "two keys of the table");
	/* bad input: a clear error, nothing allocated */
	EXPECT_NULL_ERR(ibv_alloc_mw(t.pd, (enum ibv_mw_type)3), EINVAL);
	EXPECT_MSG("type 3");
	EXPECT_OK(ibv_dealloc_mw(m1));
	EXPECT_OK(ibv_dealloc_mw(m2));
	tb_close(&t);
}

Test(mw, type1_bind_grants_remote_access_within_the_window_and_completes_as_bind_mw)
{
	struct mwf f;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t key0;

	mwf_open(&f);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_1);
	cr_assert_not_null(mw, "%s", hcasim_last_error());
	key0 = mw->rkey;
	bind1(&f, mw, f.reg, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cr_assert_eq(mw->rkey, ibv_inc_rkey(key0), "the window takes the next key");
	wc = one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	cr_assert_eq(wc.opcode, IBV_WC_BIND_MW);
	cr_assert_eq(wc.wr_id, 0xb1);
	cr_assert_eq(wc.qp_num, f.p.qb->qp_num);
	/* a WRITE and a READ through the window, both ends of it */
	remote(&f, IBV_WR_RDMA_WRITE, mw->rkey, win(&f, WIN_OFF), 1024, IBV_WC_SUCCESS, 0);
	remote(&f, IBV_WR_RDMA_WRITE, mw->rkey, win(&f, WIN_OFF + WIN_LEN - 512), 512,
	       IBV_WC_SUCCESS, 0);
	cr_assert_eq(memcmp((uint8_t *)f.reg->addr + WIN_OFF, f.p.src->addr, 1024), 0);
	cr_assert_eq(memcmp((uint8_t *)f.reg->addr + WIN_OFF + WIN_LEN - 512, f.p.src->addr, 512),
		     0);
	memset(f.p.src->addr, 0, 1024);
	remote(&f, IBV_WR_RDMA_READ, mw->rkey, win(&f, WIN_OFF), 1024, IBV_WC_SUCCESS, 0);
	cr_assert_eq(memcmp((uint8_t *)f.reg->addr + WIN_OFF, f.p.src->addr, 1024), 0);
	/* the key before the bind names nothing now */
	remote(&f, IBV_WR_RDMA_READ, key0, win(&f, WIN_OFF), 8, IBV_WC_REM_ACCESS_ERR, 0);
	cr_assert_eq(mwbe(1), 0);
	mwf_close(&f, mw);
}

Test(mw, access_beyond_the_window_or_without_its_right_is_rem_access_err)
{
	struct mwf f;
	struct ibv_mw *mw;

	mwf_open(&f);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_1);
	bind1(&f, mw, f.reg, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_READ);
	one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	/* inside the region, but one byte past the window */
	remote(&f, IBV_WR_RDMA_READ, mw->rkey, win(&f, WIN_OFF + 1), WIN_LEN,
	       IBV_WC_REM_ACCESS_ERR, 0x31 /* NAK_REM_ACCESS */);
	mwf_close(&f, mw);

	mwf_open(&f);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_1);
	bind1(&f, mw, f.reg, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_READ);
	one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	/* a WRITE through a read-only window, although the region could be written locally */
	remote(&f, IBV_WR_RDMA_WRITE, mw->rkey, win(&f, WIN_OFF), 64, IBV_WC_REM_ACCESS_ERR,
	       0x31);
	cr_assert_eq(((uint8_t *)f.reg->addr)[WIN_OFF], 0, "nothing written");
	mwf_close(&f, mw);
}

Test(mw, bind_beyond_the_mr_is_mw_bind_err_and_counts_sq_num_mwbe)
{
	struct mwf f;
	struct ibv_mw *mw;
	struct ibv_wc wc;

	mwf_open(&f);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_1);
	cr_assert_eq(mwbe(1), 0);
	bind1(&f, mw, f.reg, BUF - 1024, 2048, IBV_ACCESS_REMOTE_READ);
	wc = one(f.p.b.cq, IBV_WC_MW_BIND_ERR, 0x57 /* MW_BOUNDS */);
	cr_assert_eq(wc.opcode, IBV_WC_BIND_MW);
	cr_assert_eq(seen.nbind, 1, "the trace shows the bind");
	cr_assert_eq(seen.bind, 0x57, "with the rule it broke");
	cr_assert_eq(mwbe(1), 1);
	cr_assert_eq(mwbe(0), 0, "counted on the binding QP's port only");
	cr_assert_eq(state(f.p.qb), IBV_QPS_ERR, "a failed bind takes the QP to ERR");
	cr_assert_str_eq(ibv_wc_status_str(IBV_WC_MW_BIND_ERR), "memory management operation error");
	mwf_close(&f, mw);
}

Test(mw, bind_without_ibv_access_mw_bind_is_mw_bind_err)
{
	struct mwf f;
	struct ibv_mw *mw;
	struct ibv_mr *plain;

	mwf_open(&f);
	plain = f.extra = reg_mr(f.p.b.pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_1);
	bind1(&f, mw, plain, 0, 64, IBV_ACCESS_REMOTE_READ);
	one(f.p.b.cq, IBV_WC_MW_BIND_ERR, 0x56 /* MW_MR_NO_BIND */);
	cr_assert_eq(mwbe(1), 1);
	mwf_close(&f, mw);
}

Test(mw, remote_write_through_a_window_needs_local_write_on_its_region)
{
	struct mwf f;
	struct ibv_mw *mw;
	struct ibv_mr *ro;

	mwf_open(&f);
	ro = f.extra = reg_mr(f.p.b.pd, IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_1);
	bind1(&f, mw, ro, 0, 64, IBV_ACCESS_REMOTE_WRITE);
	one(f.p.b.cq, IBV_WC_MW_BIND_ERR, 0x58 /* MW_ACCESS */);
	mwf_close(&f, mw);
}

Test(mw, type1_bind_from_a_qp_of_another_pd_is_mw_bind_err)
{
	struct mwf f;
	struct ibv_pd *pd2;
	struct ibv_mw *mw;
	struct ibv_mr *mr2;
	struct ibv_mw_bind b = { .wr_id = 1, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;

	mwf_open(&f);
	pd2 = f.pd2 = ibv_alloc_pd(f.p.b.ctx);
	cr_assert_not_null(pd2);
	mr2 = f.extra = reg_mr(pd2, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	mw = ibv_alloc_mw(pd2, IBV_MW_TYPE_1);
	/* libibverbs refuses a region of another PD than the window's itself, posting nothing */
	b.bind_info = (struct ibv_mw_bind_info){ f.reg, (uintptr_t)f.reg->addr, 64,
						 IBV_ACCESS_REMOTE_READ };
	cr_assert_eq(ibv_bind_mw(f.p.qb, mw, &b), EPERM);
	hcasim_run_for_ps(10000000ull);
	cr_assert_eq(ibv_poll_cq(f.p.b.cq, 1, &wc), 0, "nothing was posted");
	/* window and region in pd2, the QP in the pair's PD: the device's key block refuses */
	bind1(&f, mw, mr2, 0, 64, IBV_ACCESS_REMOTE_READ);
	one(f.p.b.cq, IBV_WC_MW_BIND_ERR, 0x51 /* MW_PD */);
	cr_assert_eq(mwbe(1), 1);
	mwf_close(&f, mw);
}

Test(mw, type1_unbind_and_dealloc_invalidate_the_window)
{
	struct mwf f;
	struct ibv_mw *mw;
	uint32_t key;

	mwf_open(&f);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_1);
	bind1(&f, mw, f.reg, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_READ);
	one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	remote(&f, IBV_WR_RDMA_READ, mw->rkey, win(&f, WIN_OFF), 64, IBV_WC_SUCCESS, 0);
	/* bound: the region stays registered */
	EXPECT_RC_ERR(ibv_dereg_mr(f.reg), EBUSY);
	/* length 0 and no region: unbound */
	bind1(&f, mw, NULL, 0, 0, 0);
	one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	EXPECT_OK(ibv_dereg_mr(f.reg));
	f.reg = reg_mr(f.p.b.pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	bind1(&f, mw, f.reg, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_READ);
	one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	key = mw->rkey;
	remote(&f, IBV_WR_RDMA_READ, key, win(&f, WIN_OFF), 64, IBV_WC_SUCCESS, 0);
	EXPECT_OK(ibv_dealloc_mw(mw));
	remote(&f, IBV_WR_RDMA_READ, key, win(&f, WIN_OFF), 64, IBV_WC_REM_ACCESS_ERR, 0x31);
	mwf_close(&f, NULL);
}

Test(mw, ibv_bind_mw_takes_type_1_windows_and_live_handles_only)
{
	struct mwf f;
	struct ibv_mw *m2;
	struct ibv_mw_bind b = { .wr_id = 1, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr w = { .opcode = IBV_WR_BIND_MW }, *bad;
	struct ibv_wc wc;

	mwf_open(&f);
	m2 = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_2);
	b.bind_info = (struct ibv_mw_bind_info){ f.reg, (uintptr_t)f.reg->addr, 64,
						 IBV_ACCESS_REMOTE_READ };
	cr_assert_eq(ibv_bind_mw(f.p.qb, m2, &b), EINVAL, "type 2: IBV_WR_BIND_MW");
	w.bind_mw.mw = (struct ibv_mw *)(void *)f.reg; /* not a window */
	w.bind_mw.bind_info = b.bind_info;
	EXPECT_RC_ERR(ibv_post_send(f.p.qb, &w, &bad), EINVAL);
	EXPECT_MSG("bind_mw.mw");
	cr_assert_eq(bad, &w);
	hcasim_run_for_ps(10000000ull);
	cr_assert_eq(ibv_poll_cq(f.p.b.cq, 1, &wc), 0, "nothing was posted");
	cr_assert_eq(state(f.p.qb), IBV_QPS_RTS);
	mwf_close(&f, m2);
}

Test(mw, type2_window_invalidated_locally_refuses_access)
{
	struct mwf f;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t rkey;

	mwf_open(&f);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_2);
	rkey = ibv_inc_rkey(mw->rkey);
	post(f.p.qb, IBV_WR_BIND_MW, mw, rkey, f.reg, WIN_OFF, WIN_LEN,
	     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	wc = one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	cr_assert_eq(wc.opcode, IBV_WC_BIND_MW);
	remote(&f, IBV_WR_RDMA_WRITE, rkey, win(&f, WIN_OFF), 256, IBV_WC_SUCCESS, 0);
	cr_assert_eq(memcmp((uint8_t *)f.reg->addr + WIN_OFF, f.p.src->addr, 256), 0);
	post(f.p.qb, IBV_WR_LOCAL_INV, NULL, rkey, NULL, 0, 0, 0);
	wc = one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	cr_assert_eq(wc.opcode, IBV_WC_LOCAL_INV);
	memset((uint8_t *)f.reg->addr + WIN_OFF, 0, 256);
	remote(&f, IBV_WR_RDMA_WRITE, rkey, win(&f, WIN_OFF), 256, IBV_WC_REM_ACCESS_ERR, 0x31);
	cr_assert_eq(((uint8_t *)f.reg->addr)[WIN_OFF], 0, "nothing written");
	cr_assert_eq(mwbe(1), 0);
	mwf_close(&f, mw);
}

Test(mw, type2_rules_bound_twice_invalid_key_and_unbound_invalidation)
{
	static const struct {
		int step;      /* 0: bind twice; 1: LOCAL_INV of a region's key; 2: of a free window */
		uint32_t verr; /* what the key block says */
	} rows[] = { { 0, 0x52 /* MW_IN_USE */ }, { 1, 0x59 /* INV_KEY */ },
		     { 2, 0x5b /* INV_NOT_BOUND */ } };

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct mwf f;
		struct ibv_mw *mw;
		uint32_t rkey;
		uint64_t before;

		mwf_open(&f);
		before = mwbe(1);
		mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_2);
		rkey = ibv_inc_rkey(mw->rkey);
		if (rows[i].step == 0) {
			post(f.p.qb, IBV_WR_BIND_MW, mw, rkey, f.reg, 0, 64, IBV_ACCESS_REMOTE_READ);
			one(f.p.b.cq, IBV_WC_SUCCESS, 0);
			post(f.p.qb, IBV_WR_BIND_MW, mw, ibv_inc_rkey(rkey), f.reg, 0, 64,
			     IBV_ACCESS_REMOTE_READ);
		} else {
			/* a free window's own key: allocated, never bound */
			post(f.p.qb, IBV_WR_LOCAL_INV, NULL,
			     rows[i].step == 1 ? f.reg->rkey : mw->rkey, NULL, 0, 0, 0);
		}
		struct ibv_wc wc = one(f.p.b.cq, IBV_WC_MW_BIND_ERR, rows[i].verr);

		cr_assert_eq(wc.opcode, rows[i].step ? IBV_WC_LOCAL_INV : IBV_WC_BIND_MW);
		cr_assert_eq(mwbe(1), before + 1, "row %zu", i);
		mwf_close(&f, mw);
	}
}

Test(mw, send_with_invalidate_invalidates_the_window_at_the_responder)
{
	struct mwf f;
	struct ibv_mw *mw;
	struct ibv_sge s;
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	uint32_t rkey;

	mwf_open(&f);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_2);
	rkey = ibv_inc_rkey(mw->rkey);
	post(f.p.qb, IBV_WR_BIND_MW, mw, rkey, f.reg, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_READ);
	one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	remote(&f, IBV_WR_RDMA_READ, rkey, win(&f, WIN_OFF), 64, IBV_WC_SUCCESS, 0);
	tb_pair_post_recv(&f.p, 0, BUF, 0x77);
	s = (struct ibv_sge){ (uintptr_t)f.p.src->addr, 2000, f.p.src->lkey };
	w.invalidate_rkey = rkey;
	EXPECT_OK(ibv_post_send(f.p.qa, &w, &bad));
	wc = one(f.p.a.cq, IBV_WC_SUCCESS, 0);
	cr_assert_eq(wc.opcode, IBV_WC_SEND);
	wc = one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.wr_id, 0x77);
	cr_assert_eq(wc.byte_len, 2000, "two packets: SEND FIRST, SEND LAST with Invalidate");
	cr_assert_eq(wc.wc_flags & (IBV_WC_WITH_INV | IBV_WC_WITH_IMM), IBV_WC_WITH_INV);
	cr_assert_eq(wc.invalidated_rkey, rkey);
	cr_assert_eq(memcmp(f.p.dst->addr, f.p.src->addr, 2000), 0);
	cr_assert_eq(seen.ninv, 1, "one invalidation, remote, done");
	cr_assert_eq(seen.inv, 0);
	remote(&f, IBV_WR_RDMA_READ, rkey, win(&f, WIN_OFF), 64, IBV_WC_REM_ACCESS_ERR, 0x31);
	mwf_close(&f, mw);
}

Test(mw, send_with_invalidate_of_a_key_that_is_no_window_is_rem_inv_req_err)
{
	struct mwf f;
	struct ibv_sge s;
	struct ibv_send_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	mwf_open(&f);
	tb_pair_post_recv(&f.p, 0, BUF, 0x77);
	s = (struct ibv_sge){ (uintptr_t)f.p.src->addr, 64, f.p.src->lkey };
	w.invalidate_rkey = f.reg->rkey; /* a region's key: only windows are invalidated */
	EXPECT_OK(ibv_post_send(f.p.qa, &w, &bad));
	one(f.p.a.cq, IBV_WC_REM_INV_REQ_ERR, 0x30 /* NAK_INV_REQ */);
	wc = one(f.p.b.cq, IBV_WC_REM_INV_REQ_ERR, 0x2a /* REQ_INV_RKEY */);
	cr_assert_eq(wc.wr_id, 0x77);
	/* on UC there is no SEND with Invalidate (IBA 9.4.1.1: RC opcodes only) */
	EXPECT_OK(ibv_destroy_qp(f.p.qa));
	f.p.qa = tb_create_qp(&f.p.a, IBV_QPT_UC);
	tb_connect(&f.p.a, f.p.qa, &f.p.b, f.p.qb->qp_num, IBV_MTU_1024);
	EXPECT_RC_ERR(ibv_post_send(f.p.qa, &w, &bad), EINVAL);
	EXPECT_MSG("not valid on this QP type");
	mwf_close(&f, NULL);
}

Test(mw, a_type2_window_serves_only_the_qp_it_is_bound_to)
{
	struct mwf f;
	struct ibv_mw *mw;
	struct ibv_qp *qa2, *qb2;
	uint32_t rkey;

	mwf_open(&f);
	qa2 = tb_create_qp(&f.p.a, IBV_QPT_RC);
	qb2 = tb_create_qp(&f.p.b, IBV_QPT_RC);
	tb_connect(&f.p.a, qa2, &f.p.b, qb2->qp_num, IBV_MTU_1024);
	tb_connect(&f.p.b, qb2, &f.p.a, qa2->qp_num, IBV_MTU_1024);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_2);
	rkey = ibv_inc_rkey(mw->rkey);
	post(f.p.qb, IBV_WR_BIND_MW, mw, rkey, f.reg, WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_READ);
	one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	remote(&f, IBV_WR_RDMA_READ, rkey, win(&f, WIN_OFF), 64, IBV_WC_SUCCESS, 0);
	/* the same key through another QP of the same PD (type 2B: IBA 10.6.7.3) */
	{
		struct ibv_sge s = { (uintptr_t)f.p.src->addr, 64, f.p.src->lkey };
		struct ibv_send_wr w = { .wr_id = 9, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_READ,
					 .send_flags = IBV_SEND_SIGNALED }, *bad;

		w.wr.rdma.remote_addr = win(&f, WIN_OFF);
		w.wr.rdma.rkey = rkey;
		EXPECT_OK(ibv_post_send(qa2, &w, &bad));
		one(f.p.a.cq, IBV_WC_REM_ACCESS_ERR, 0x31);
	}
	cr_assert_eq(seen.resp, 0x2b, "the responder's check: RKEY_QP (0x%llx)",
		     (unsigned long long)seen.resp);
	cr_assert_eq(state(qb2), IBV_QPS_ERR, "the responder's QP took the access error");
	cr_assert_eq(state(f.p.qb), IBV_QPS_RTS);
	EXPECT_OK(ibv_destroy_qp(qa2));
	EXPECT_OK(ibv_destroy_qp(qb2));
	mwf_close(&f, mw);
}

/* An extended QP pair: qb binds and invalidates through ibv_wr_bind_mw / ibv_wr_local_inv,
 * qa sends with invalidate through ibv_wr_send_inv. */
static struct ibv_qp *ex_qp(struct tb_dev *t, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = { 0 };
	struct ibv_qp *qp;

	a.qp_type = IBV_QPT_RC;
	a.send_cq = a.recv_cq = t->cq;
	a.cap = (struct ibv_qp_cap){ 8, 8, 1, 1, 0 };
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.pd = t->pd;
	a.send_ops_flags = ops;
	qp = ibv_create_qp_ex(t->ctx, &a);
	cr_assert_not_null(qp, "%s", hcasim_last_error());
	return qp;
}

Test(mw, extended_api_binds_invalidates_and_sends_with_invalidate)
{
	struct mwf f;
	struct ibv_qp_ex *xa, *xb;
	struct ibv_mw *mw;
	struct ibv_mw_bind_info bi;
	struct ibv_wc wc;
	uint32_t rkey;

	mwf_open(&f);
	EXPECT_OK(ibv_destroy_qp(f.p.qa));
	EXPECT_OK(ibv_destroy_qp(f.p.qb));
	f.p.qa = ex_qp(&f.p.a, IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_RDMA_READ);
	f.p.qb = ex_qp(&f.p.b, IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV);
	tb_connect(&f.p.a, f.p.qa, &f.p.b, f.p.qb->qp_num, IBV_MTU_1024);
	tb_connect(&f.p.b, f.p.qb, &f.p.a, f.p.qa->qp_num, IBV_MTU_1024);
	xa = ibv_qp_to_qp_ex(f.p.qa);
	xb = ibv_qp_to_qp_ex(f.p.qb);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_2);
	rkey = ibv_inc_rkey(mw->rkey);
	bi = (struct ibv_mw_bind_info){ f.reg, win(&f, WIN_OFF), WIN_LEN, IBV_ACCESS_REMOTE_READ };
	/* bind, then invalidate, then bind again with the next key: one batch, in order */
	ibv_wr_start(xb);
	xb->wr_id = 1;
	xb->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(xb, mw, rkey, &bi);
	xb->wr_id = 2;
	ibv_wr_local_inv(xb, rkey);
	xb->wr_id = 3;
	ibv_wr_bind_mw(xb, mw, ibv_inc_rkey(rkey), &bi);
	EXPECT_OK(ibv_wr_complete(xb));
	for (uint64_t i = 1; i <= 3; i++) {
		wc = one(f.p.b.cq, IBV_WC_SUCCESS, 0);
		cr_assert_eq(wc.wr_id, i);
		cr_assert_eq(wc.opcode, i == 2 ? IBV_WC_LOCAL_INV : IBV_WC_BIND_MW);
	}
	rkey = ibv_inc_rkey(rkey);
	remote(&f, IBV_WR_RDMA_READ, rkey, win(&f, WIN_OFF), 64, IBV_WC_SUCCESS, 0);
	/* a setter after a bind has no WR to set: the batch fails, nothing posted */
	ibv_wr_start(xb);
	ibv_wr_local_inv(xb, rkey);
	ibv_wr_set_sge(xb, f.reg->lkey, (uintptr_t)f.reg->addr, 8);
	cr_assert_eq(ibv_wr_complete(xb), EINVAL);
	EXPECT_MSG("no work request to set");
	/* SEND with Invalidate from the extended API */
	tb_pair_post_recv(&f.p, 0, 64, 0x78);
	ibv_wr_start(xa);
	xa->wr_id = 4;
	xa->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send_inv(xa, rkey);
	ibv_wr_set_sge(xa, f.p.src->lkey, (uintptr_t)f.p.src->addr, 64);
	EXPECT_OK(ibv_wr_complete(xa));
	wc = one(f.p.a.cq, IBV_WC_SUCCESS, 0);
	cr_assert_eq(wc.wr_id, 4);
	wc = one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	cr_assert(wc.wc_flags & IBV_WC_WITH_INV);
	cr_assert_eq(wc.invalidated_rkey, rkey);
	remote(&f, IBV_WR_RDMA_READ, rkey, win(&f, WIN_OFF), 64, IBV_WC_REM_ACCESS_ERR, 0x31);
	mwf_close(&f, mw);
}

Test(mw, destroying_the_qp_of_a_type2_window_invalidates_it)
{
	struct mwf f;
	struct ibv_mw *mw;

	mwf_open(&f);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_2);
	post(f.p.qb, IBV_WR_BIND_MW, mw, ibv_inc_rkey(mw->rkey), f.reg, 0, 64,
	     IBV_ACCESS_REMOTE_READ);
	one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	EXPECT_RC_ERR(ibv_dereg_mr(f.reg), EBUSY);
	EXPECT_OK(ibv_destroy_qp(f.p.qb));
	f.p.qb = tb_create_qp(&f.p.b, IBV_QPT_RC);
	/* no window is bound to the region any more */
	EXPECT_OK(ibv_dereg_mr(f.reg));
	f.reg = reg_mr(f.p.b.pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	mwf_close(&f, mw);
}

/* The other rules, each broken by what a program (or a buggy one) can hand the device: a
 * window key changed under the driver, a new key of another window, a region key changed, a
 * region or a window of another PD than the window or the QP. */
Test(mw, every_other_bind_and_invalidation_rule_has_its_vendor_err)
{
	enum { STALE, NEW_KEY, MR_KEY, MR_PD, INV_PD };
	static const uint32_t verr[] = { [STALE] = 0x50 /* MW_INVALID */,
					 [NEW_KEY] = 0x53 /* MW_NEW_KEY */,
					 [MR_KEY] = 0x54 /* MW_MR_INVALID */,
					 [MR_PD] = 0x55 /* MW_MR_PD */, [INV_PD] = 0x5a /* INV_PD */ };

	for (int r = STALE; r <= INV_PD; r++) {
		struct mwf f;
		struct ibv_mw *mw;
		struct ibv_wc wc;
		uint32_t lkey;

		mwf_open(&f);
		f.pd2 = ibv_alloc_pd(f.p.b.ctx);
		f.extra = reg_mr(f.pd2, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
		mw = ibv_alloc_mw(r == INV_PD ? f.pd2 : f.p.b.pd,
				  r == STALE ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
		cr_assert_not_null(mw, "%s", hcasim_last_error());
		switch (r) {
		case STALE:
			mw->rkey ^= 0x80; /* not the window's key any more */
			bind1(&f, mw, f.reg, 0, 64, IBV_ACCESS_REMOTE_READ);
			break;
		case NEW_KEY:
			post(f.p.qb, IBV_WR_BIND_MW, mw, mw->rkey + 0x100, f.reg, 0, 64,
			     IBV_ACCESS_REMOTE_READ);
			break;
		case MR_KEY:
			lkey = f.reg->lkey;
			f.reg->lkey ^= 0x80; /* a variant the region does not have */
			post(f.p.qb, IBV_WR_BIND_MW, mw, ibv_inc_rkey(mw->rkey), f.reg, 0, 64,
			     IBV_ACCESS_REMOTE_READ);
			f.reg->lkey = lkey;
			break;
		case MR_PD: /* IBV_WR_BIND_MW has no inline check of the region's PD */
			post(f.p.qb, IBV_WR_BIND_MW, mw, ibv_inc_rkey(mw->rkey), f.extra, 0, 64,
			     IBV_ACCESS_REMOTE_READ);
			break;
		case INV_PD:
			post(f.p.qb, IBV_WR_LOCAL_INV, NULL, mw->rkey, NULL, 0, 0, 0);
			break;
		}
		wc = one(f.p.b.cq, IBV_WC_MW_BIND_ERR, verr[r]);
		cr_assert_eq(wc.opcode, r == INV_PD ? IBV_WC_LOCAL_INV : IBV_WC_BIND_MW);
		cr_assert_eq(state(f.p.qb), IBV_QPS_ERR, "rule %d", r);
		mwf_close(&f, mw);
	}
}

/* A zero-based type 2 window (IBV_ACCESS_ZERO_BASED in the bind's rights, as mlx5 binds one):
 * an access names the offset in the window, not the region's address; the window's length
 * still bounds it, and the bytes go to the region where the window starts. */
Test(mw, a_zero_based_type2_window_is_addressed_from_0)
{
	struct mwf f;
	struct ibv_mw *mw;
	uint32_t rkey;
	uint8_t *at = NULL;

	mwf_open(&f);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_2);
	cr_assert_not_null(mw, "%s", hcasim_last_error());
	rkey = ibv_inc_rkey(mw->rkey);
	post(f.p.qb, IBV_WR_BIND_MW, mw, rkey, f.reg, WIN_OFF, WIN_LEN,
	     IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cr_assert_eq(one(f.p.b.cq, IBV_WC_SUCCESS, 0).opcode, IBV_WC_BIND_MW);
	at = (uint8_t *)f.reg->addr + WIN_OFF;
	remote(&f, IBV_WR_RDMA_WRITE, rkey, 256, 512, IBV_WC_SUCCESS, 0);
	cr_assert_eq(memcmp(at + 256, f.p.src->addr, 512), 0, "offset 256 of the window");
	cr_assert_eq(at[255], 0, "nothing before it");
	remote(&f, IBV_WR_RDMA_WRITE, rkey, WIN_LEN - 64, 64, IBV_WC_SUCCESS, 0);
	memset(f.p.src->addr, 0, 1024);
	remote(&f, IBV_WR_RDMA_READ, rkey, 0, 1024, IBV_WC_SUCCESS, 0);
	cr_assert_eq(memcmp(at, f.p.src->addr, 1024), 0);
	/* the region's own address is outside a window that starts at 0 */
	remote(&f, IBV_WR_RDMA_READ, rkey, win(&f, WIN_OFF), 8, IBV_WC_REM_ACCESS_ERR, 0x31);
	cr_assert_eq(mwbe(1), 0);
	mwf_close(&f, mw);
}

/* ... and one byte past its length is a remote access error. */
Test(mw, a_zero_based_window_ends_at_its_length)
{
	struct mwf f;
	struct ibv_mw *mw;
	uint32_t rkey;

	mwf_open(&f);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_2);
	rkey = ibv_inc_rkey(mw->rkey);
	post(f.p.qb, IBV_WR_BIND_MW, mw, rkey, f.reg, WIN_OFF, WIN_LEN,
	     IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE);
	one(f.p.b.cq, IBV_WC_SUCCESS, 0);
	remote(&f, IBV_WR_RDMA_WRITE, rkey, WIN_LEN - 63, 64, IBV_WC_REM_ACCESS_ERR, 0x31);
	cr_assert_eq(((uint8_t *)f.reg->addr)[WIN_OFF + WIN_LEN - 63], 0, "nothing written");
	mwf_close(&f, mw);
}

/* Type 1 windows are never zero-based: ibv_bind_mw refuses the flag, and a region registered
 * zero-based, with EINVAL as rdma-core's providers (mlx5, rxe) and posts nothing; a type 1
 * bind WQE that asks for it anyway (IBV_WR_BIND_MW) ends in MW_BIND_ERR, MW_ACCESS. */
Test(mw, a_type1_window_is_never_zero_based)
{
	struct mwf f;
	struct ibv_mw *mw;
	struct ibv_mw_bind b = { .wr_id = 1, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;
	uint32_t key0;

	mwf_open(&f);
	mw = ibv_alloc_mw(f.p.b.pd, IBV_MW_TYPE_1);
	key0 = mw->rkey;
	b.bind_info = (struct ibv_mw_bind_info){ f.reg, win(&f, WIN_OFF), 64,
						 IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_READ };
	EXPECT_RC_ERR(ibv_bind_mw(f.p.qb, mw, &b), EINVAL);
	EXPECT_MSG("IBV_ACCESS_ZERO_BASED");
	f.extra = reg_mr(f.p.b.pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND |
					   IBV_ACCESS_ZERO_BASED);
	b.bind_info = (struct ibv_mw_bind_info){ f.extra, (uintptr_t)f.extra->addr, 64,
						 IBV_ACCESS_REMOTE_READ };
	EXPECT_RC_ERR(ibv_bind_mw(f.p.qb, mw, &b), EINVAL);
	EXPECT_MSG("registered with IBV_ACCESS_ZERO_BASED");
	cr_assert_eq(mw->rkey, key0, "nothing bound");
	cr_assert_eq(ibv_poll_cq(f.p.b.cq, 1, &wc), 0, "nothing posted");
	post(f.p.qb, IBV_WR_BIND_MW, mw, ibv_inc_rkey(mw->rkey), f.reg, WIN_OFF, 64,
	     IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_READ);
	wc = one(f.p.b.cq, IBV_WC_MW_BIND_ERR, 0x58 /* MW_ACCESS */);
	cr_assert_eq(wc.opcode, IBV_WC_BIND_MW);
	mwf_close(&f, mw);
}
