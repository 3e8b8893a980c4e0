/* verbs_errors: bad input on every verbs entry point (modify_qp excepted: the conformance suite
 * covers it). Each test checks the errno the verb reports AND that nothing changed: the
 * objects involved still work, query results are unchanged, output buffers are untouched and
 * no reference leaked in the device (a leaked reference would make a later destroy fail with
 * EBUSY). Limits are configured small before boot where a test exhausts them.
 *
 * Destroyed-handle tests pass a destroyed object on purpose: the driver's live-handle registry
 * refuses it with EINVAL without reading through it, so they run under ASan too. */
#include "testbench/tb.h"
#include "testbench/tb_expect.h"

#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* NULL outputs for the verbs.h inline wrappers: opaque to the compiler, whose inlined legacy
 * path (never taken here: the driver provides the extended ops) would memset them. */
static struct ibv_port_attr *volatile null_port_attr;
static struct ibv_device_attr_ex *volatile null_attr_ex;

/* ---- fixtures ---- */

/* A context without the PD and CQ tb_open creates (for exact limit counting). */
struct bare {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
};

static void bare_open(struct bare *b, int index)
{
	int n = 0;

	memset(b, 0, sizeof(*b));
	b->list = ibv_get_device_list(&n);
	cr_assert_not_null(b->list, "ibv_get_device_list: %s", hcasim_last_error());
	cr_assert_gt(n, index);
	b->ctx = ibv_open_device(b->list[index]);
	cr_assert_not_null(b->ctx, "ibv_open_device: %s", hcasim_last_error());
	EXPECT_OK(ibv_query_device(b->ctx, &b->attr));
}

static void bare_close(struct bare *b)
{
	EXPECT_OK(ibv_close_device(b->ctx));
	ibv_free_device_list(b->list);
}

/* Configured limits (as read back from the configuration). */
static unsigned cfg_u(const char *key)
{
	char buf[32];

	cr_assert_eq(hcasim_config_get(key, buf, sizeof(buf)), 0, "%s", hcasim_last_error());
	return (unsigned)strtoul(buf, NULL, 0);
}

/* Move a QP to INIT so that its attributes are not all zero (modify_qp as a tool only). */
static void qp_to_init(struct tb_dev *t, struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	tb_valid_attrs(t, &a);
	a.qp_state = IBV_QPS_INIT;
	mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	EXPECT_OK(ibv_modify_qp(qp, &a, mask));
}

static void expect_qp_unchanged(struct ibv_qp *qp, const struct tb_qp_snap *before)
{
	struct tb_qp_snap after;
	char why[128] = "";

	tb_qp_snap(qp, &after);
	cr_assert(tb_qp_snap_equal(before, &after, why, sizeof(why)), "QP changed: %s", why);
}

static struct ibv_srq *make_srq(struct ibv_pd *pd, uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = max_wr, .max_sge = max_sge } };
	struct ibv_srq *srq = ibv_create_srq(pd, &init);

	cr_assert_not_null(srq, "ibv_create_srq: %s", hcasim_last_error());
	return srq;
}

static struct ibv_qp *make_srq_qp(struct tb_dev *t, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = t->cq,
		.recv_cq = t->cq,
		.srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(t->pd, &init);

	cr_assert_not_null(qp, "ibv_create_qp with SRQ: %s", hcasim_last_error());
	return qp;
}

static void ah_attr_valid(struct tb_dev *t, struct ibv_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->dlid = t->port.lid ? t->port.lid : 1;
	a->port_num = 1;
	a->sl = 0;
}

static void expect_srq_attr(struct ibv_srq *srq, const struct ibv_srq_attr *want)
{
	struct ibv_srq_attr got;

	memset(&got, 0xa5, sizeof(got));
	EXPECT_OK(ibv_query_srq(srq, &got));
	cr_assert_eq(got.max_wr, want->max_wr, "max_wr %u, expected %u", got.max_wr, want->max_wr);
	cr_assert_eq(got.max_sge, want->max_sge, "max_sge %u, expected %u", got.max_sge,
		     want->max_sge);
	cr_assert_eq(got.srq_limit, want->srq_limit, "srq_limit %u, expected %u", got.srq_limit,
		     want->srq_limit);
}

/* A PD can still be used: a region registers and deregisters on it. */
static void expect_pd_usable(struct ibv_pd *pd)
{
	static char buf[4096];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

	cr_assert_not_null(mr, "PD no longer usable: ibv_reg_mr: %s", hcasim_last_error());
	EXPECT_OK(ibv_dereg_mr(mr));
}

/* The device can still allocate: a PD and a CQ come and go. */
static void expect_dev_allocates(struct ibv_context *ctx)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq;

	cr_assert_not_null(pd, "device no longer allocates PDs: %s", hcasim_last_error());
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	cr_assert_not_null(cq, "device no longer allocates CQs: %s", hcasim_last_error());
	EXPECT_OK(ibv_destroy_cq(cq));
	EXPECT_OK(ibv_dealloc_pd(pd));
}

/* ================= device list, names, GUIDs ================= */

Test(verbs_errors, get_device_list_accepts_null_count)
{
	struct ibv_device **list = ibv_get_device_list(NULL), **again;
	int n = -1;

	cr_assert_not_null(list, "ibv_get_device_list(NULL): %s", hcasim_last_error());
	cr_assert_not_null(list[0]);
	cr_assert_not_null(list[1]);
	cr_assert_null(list[2], "list is not NULL-terminated after the 2 devices");
	again = ibv_get_device_list(&n);
	cr_assert_eq(n, 2);
	cr_assert_eq(again[0], list[0], "a second list names other devices");
	ibv_free_device_list(again);
	ibv_free_device_list(list);
}

Test(verbs_errors, free_device_list_accepts_null)
{
	struct ibv_device **list;
	int n = 0;

	ibv_free_device_list(NULL); /* must not crash */
	list = ibv_get_device_list(&n);
	cr_assert_not_null(list);
	cr_assert_eq(n, 2);
	ibv_free_device_list(list);
}

Test(verbs_errors, get_device_name_rejects_null_and_foreign_device)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device fake;
	const char *name;

	memset(&fake, 0, sizeof(fake));
	snprintf(fake.name, sizeof(fake.name), "hcasim0");
	EXPECT_NULL_ERR(ibv_get_device_name(NULL), EINVAL);
	EXPECT_NULL_ERR(ibv_get_device_name(&fake), EINVAL);
	name = ibv_get_device_name(list[0]);
	cr_assert_not_null(name);
	cr_assert_str_eq(name, "hcasim0");
	cr_assert_str_eq(ibv_get_device_name(list[1]), "hcasim1");
	ibv_free_device_list(list);
}

Test(verbs_errors, get_device_guid_rejects_null_and_foreign_device)
{
	struct tb_dev t;
	struct ibv_device fake;
	__be64 g;

	tb_open(&t, 0);
	memset(&fake, 0, sizeof(fake));
	errno = 0;
	g = ibv_get_device_guid(NULL);
	cr_assert_eq(g, 0);
	cr_assert_eq(errno, EINVAL, "errno %d", errno);
	errno = 0;
	g = ibv_get_device_guid(&fake);
	cr_assert_eq(g, 0);
	cr_assert_eq(errno, EINVAL, "errno %d", errno);
	g = ibv_get_device_guid(t.list[0]);
	cr_assert_neq(g, 0);
	cr_assert_eq(g, t.attr.node_guid, "GUID differs from query_device's node_guid");
	cr_assert_neq(ibv_get_device_guid(t.list[1]), g, "both devices have the same GUID");
	tb_close(&t);
}

/* ================= open / close ================= */

Test(verbs_errors, open_device_rejects_null_and_foreign_device)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device fake;
	struct ibv_context *ctx;

	memset(&fake, 0, sizeof(fake));
	EXPECT_NULL_ERR(ibv_open_device(NULL), EINVAL);
	EXPECT_NULL_ERR(ibv_open_device(&fake), EINVAL);
	ctx = ibv_open_device(list[0]);
	cr_assert_not_null(ctx, "open after rejections: %s", hcasim_last_error());
	cr_assert_eq(ctx->device, list[0]);
	cr_assert_geq(ctx->num_comp_vectors, 1);
	expect_dev_allocates(ctx);
	EXPECT_OK(ibv_close_device(ctx));
	ibv_free_device_list(list);
}

Test(verbs_errors, close_device_rejects_null)
{
	struct tb_dev t;

	tb_open(&t, 0);
	EXPECT_M1_ERR(ibv_close_device(NULL), EINVAL);
	expect_dev_allocates(t.ctx);
	tb_close(&t);
}

Test(verbs_errors, close_device_rejects_closed_context)
{
	struct tb_dev t;
	struct ibv_context *ctx2;

	tb_open(&t, 0);
	ctx2 = ibv_open_device(t.list[0]);
	cr_assert_not_null(ctx2);
	EXPECT_OK(ibv_close_device(ctx2));
	EXPECT_M1_ERR(ibv_close_device(ctx2), EINVAL);
	/* the other context of the same device is unaffected */
	expect_dev_allocates(t.ctx);
	expect_pd_usable(t.pd);
	tb_close(&t);
}

/* ================= device, port, GID, P_Key queries ================= */

Test(verbs_errors, query_device_rejects_null_context_and_attr)
{
	struct tb_dev t;
	struct ibv_device_attr a;

	tb_open(&t, 0);
	EXPECT_RC_ERR(ibv_query_device(NULL, &a), EINVAL);
	EXPECT_RC_ERR(ibv_query_device(t.ctx, NULL), EINVAL);
	EXPECT_MSG("attr");
	memset(&a, 0, sizeof(a));
	EXPECT_OK(ibv_query_device(t.ctx, &a));
	cr_assert_eq(memcmp(&a, &t.attr, sizeof(a)), 0, "device attributes changed");
	tb_close(&t);
}

Test(verbs_errors, query_device_ex_rejects_comp_mask_and_null_attr)
{
	struct tb_dev t;
	struct ibv_device_attr_ex ex;
	struct ibv_query_device_ex_input in = { .comp_mask = 1 };
	int rc;

	tb_open(&t, 0);
	memset(&ex, 0x5a, sizeof(ex));
	rc = ibv_query_device_ex(t.ctx, &in, &ex);
	cr_assert_eq(rc, EINVAL, "unknown input comp_mask: %d", rc);
	cr_assert_eq(((unsigned char *)&ex)[0], 0x5a, "attr written on failure");
	EXPECT_RC_ERR(ibv_query_device_ex(t.ctx, NULL, null_attr_ex), EINVAL);
	/* positive: the extended query agrees with the plain one */
	memset(&ex, 0, sizeof(ex));
	in.comp_mask = 0;
	EXPECT_OK(ibv_query_device_ex(t.ctx, &in, &ex));
	cr_assert_eq(memcmp(&ex.orig_attr, &t.attr, sizeof(t.attr)), 0,
		     "orig_attr differs from ibv_query_device");
	cr_assert_eq(ex.phys_port_cnt_ex, t.attr.phys_port_cnt);
	cr_assert_gt(ex.hca_core_clock, 0);
	EXPECT_OK(ibv_query_device_ex(t.ctx, NULL, &ex));
	tb_close(&t);
}

Test(verbs_errors, query_port_rejects_port_0_and_2)
{
	struct tb_dev t;
	struct ibv_port_attr pa, ref;
	const uint8_t bad[] = { 0, 2, 255 };

	tb_open(&t, 0);
	cr_assert_eq(t.attr.phys_port_cnt, 1, "test assumes one port (hca.ports default)");
	for (size_t i = 0; i < sizeof(bad); i++) {
		memset(&pa, 0xa5, sizeof(pa));
		EXPECT_RC_ERR(ibv_query_port(t.ctx, bad[i], &pa), EINVAL);
		EXPECT_MSG("port");
		cr_assert_eq(((unsigned char *)&pa)[sizeof(pa) - 1], 0xa5,
			     "port attr written for port %u", bad[i]);
	}
	EXPECT_RC_ERR(ibv_query_port(t.ctx, 1, null_port_attr), EINVAL);
	memset(&ref, 0, sizeof(ref));
	EXPECT_OK(ibv_query_port(t.ctx, 1, &ref));
	cr_assert_eq(ref.state, IBV_PORT_ACTIVE);
	cr_assert_eq(ref.lid, t.port.lid);
	cr_assert_eq(ref.gid_tbl_len, t.port.gid_tbl_len);
	tb_close(&t);
}

Test(verbs_errors, query_gid_rejects_bad_port_index_and_null)
{
	struct tb_dev t;
	union ibv_gid g, zero;

	tb_open(&t, 0);
	cr_assert_gt(t.port.gid_tbl_len, 0);
	memset(&zero, 0, sizeof(zero));
	memset(&g, 0xa5, sizeof(g));
	EXPECT_M1_ERR(ibv_query_gid(t.ctx, 0, 0, &g), EINVAL);
	EXPECT_MSG("port");
	EXPECT_M1_ERR(ibv_query_gid(t.ctx, 2, 0, &g), EINVAL);
	EXPECT_M1_ERR(ibv_query_gid(t.ctx, 1, -1, &g), EINVAL);
	EXPECT_MSG("index");
	EXPECT_M1_ERR(ibv_query_gid(t.ctx, 1, t.port.gid_tbl_len, &g), EINVAL);
	EXPECT_M1_ERR(ibv_query_gid(t.ctx, 1, 0, NULL), EINVAL);
	EXPECT_M1_ERR(ibv_query_gid(NULL, 1, 0, &g), EINVAL);
	cr_assert_eq(g.raw[0], 0xa5, "gid written on failure");
	EXPECT_OK(ibv_query_gid(t.ctx, 1, 0, &g));
	cr_assert_neq(memcmp(&g, &zero, sizeof(g)), 0, "GID 0 is empty");
	/* the last valid index is accepted (it may be unpopulated) */
	EXPECT_OK(ibv_query_gid(t.ctx, 1, t.port.gid_tbl_len - 1, &g));
	tb_close(&t);
}

Test(verbs_errors, query_pkey_rejects_bad_port_index_and_null)
{
	struct tb_dev t;
	__be16 pk = 0x1234;

	tb_open(&t, 0);
	cr_assert_gt(t.port.pkey_tbl_len, 0);
	EXPECT_M1_ERR(ibv_query_pkey(t.ctx, 0, 0, &pk), EINVAL);
	EXPECT_MSG("port");
	EXPECT_M1_ERR(ibv_query_pkey(t.ctx, 2, 0, &pk), EINVAL);
	EXPECT_M1_ERR(ibv_query_pkey(t.ctx, 1, -1, &pk), EINVAL);
	EXPECT_MSG("index");
	EXPECT_M1_ERR(ibv_query_pkey(t.ctx, 1, t.port.pkey_tbl_len, &pk), EINVAL);
	EXPECT_M1_ERR(ibv_query_pkey(t.ctx, 1, t.attr.max_pkeys, &pk), EINVAL);
	EXPECT_M1_ERR(ibv_query_pkey(t.ctx, 1, 0, NULL), EINVAL);
	EXPECT_M1_ERR(ibv_query_pkey(NULL, 1, 0, &pk), EINVAL);
	cr_assert_eq(pk, 0x1234, "pkey written on failure");
	EXPECT_OK(ibv_query_pkey(t.ctx, 1, 0, &pk));
	cr_assert_eq(be16toh(pk), 0xffff, "P_Key 0 is 0x%04x, expected the default 0xffff",
		     be16toh(pk));
	EXPECT_OK(ibv_query_pkey(t.ctx, 1, t.port.pkey_tbl_len - 1, &pk));
	tb_close(&t);
}

/* ================= PD ================= */

Test(verbs_errors, alloc_pd_rejects_null_context)
{
	struct tb_dev t;

	tb_open(&t, 0);
	EXPECT_NULL_ERR(ibv_alloc_pd(NULL), EINVAL);
	expect_dev_allocates(t.ctx);
	tb_close(&t);
}

Test(verbs_errors, dealloc_pd_rejects_null)
{
	struct tb_dev t;

	tb_open(&t, 0);
	EXPECT_RC_ERR(ibv_dealloc_pd(NULL), EINVAL);
	expect_pd_usable(t.pd);
	tb_close(&t);
}

Test(verbs_errors, dealloc_pd_rejects_deallocated_pd)
{
	struct tb_dev t;
	struct ibv_pd *pd;

	tb_open(&t, 0);
	pd = ibv_alloc_pd(t.ctx);
	cr_assert_not_null(pd);
	EXPECT_OK(ibv_dealloc_pd(pd));
	EXPECT_RC_ERR(ibv_dealloc_pd(pd), EINVAL);
	expect_pd_usable(t.pd);
	expect_dev_allocates(t.ctx);
	tb_close(&t);
}

Test(verbs_errors, dealloc_pd_busy_with_mr)
{
	struct tb_dev t;
	static char buf[8192];
	struct ibv_mr *mr;

	tb_open(&t, 0);
	mr = ibv_reg_mr(t.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr, "%s", hcasim_last_error());
	EXPECT_RC_ERR(ibv_dealloc_pd(t.pd), EBUSY);
	EXPECT_MSG("in use");
	/* nothing changed: the PD and the MR still work */
	expect_pd_usable(t.pd);
	cr_assert_eq(mr->pd, t.pd);
	EXPECT_OK(ibv_dereg_mr(mr));
	tb_close(&t); /* the PD deallocates now */
}

Test(verbs_errors, dealloc_pd_busy_with_qp)
{
	struct tb_dev t;
	struct tb_qp_snap before;
	struct ibv_qp *qp;

	tb_open(&t, 0);
	qp = tb_create_qp(&t, IBV_QPT_RC);
	qp_to_init(&t, qp);
	tb_qp_snap(qp, &before);
	EXPECT_RC_ERR(ibv_dealloc_pd(t.pd), EBUSY);
	expect_qp_unchanged(qp, &before);
	expect_pd_usable(t.pd);
	EXPECT_OK(ibv_destroy_qp(qp));
	tb_close(&t);
}

Test(verbs_errors, dealloc_pd_busy_with_srq)
{
	struct tb_dev t;
	struct ibv_srq *srq;
	struct ibv_srq_attr a;

	tb_open(&t, 0);
	srq = make_srq(t.pd, 16, 1);
	EXPECT_OK(ibv_query_srq(srq, &a));
	EXPECT_RC_ERR(ibv_dealloc_pd(t.pd), EBUSY);
	expect_srq_attr(srq, &a);
	expect_pd_usable(t.pd);
	EXPECT_OK(ibv_destroy_srq(srq));
	tb_close(&t);
}

Test(verbs_errors, dealloc_pd_busy_with_ah)
{
	struct tb_dev t;
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;

	tb_open(&t, 0);
	ah_attr_valid(&t, &aa);
	ah = ibv_create_ah(t.pd, &aa);
	cr_assert_not_null(ah, "%s", hcasim_last_error());
	EXPECT_RC_ERR(ibv_dealloc_pd(t.pd), EBUSY);
	EXPECT_MSG("address handle");
	expect_pd_usable(t.pd);
	EXPECT_OK(ibv_destroy_ah(ah));
	tb_close(&t);
}

/* ================= MR ================= */

Test(verbs_errors, reg_mr_rejects_null_pd)
{
	struct tb_dev t;
	static char buf[4096];

	tb_open(&t, 0);
	EXPECT_NULL_ERR(ibv_reg_mr(NULL, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE), EINVAL);
	expect_pd_usable(t.pd);
	tb_close(&t);
}

Test(verbs_errors, reg_mr_remote_write_or_atomic_require_local_write)
{
	struct tb_dev t;
	static char buf[4096];

	tb_open(&t, 0);
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE), EINVAL);
	EXPECT_MSG("LOCAL_WRITE");
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_ATOMIC), EINVAL);
	EXPECT_MSG("LOCAL_WRITE");
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, buf, sizeof(buf),
				   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
			EINVAL);
	/* nothing leaked: the PD is usable and (in tb_close) deallocates */
	expect_pd_usable(t.pd);
	{
		struct ibv_mr *mr = ibv_reg_mr(t.pd, buf, sizeof(buf),
					       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ);

		cr_assert_not_null(mr, "all four rights with LOCAL_WRITE: %s", hcasim_last_error());
		EXPECT_OK(ibv_dereg_mr(mr));
	}
	tb_close(&t);
}

Test(verbs_errors, reg_mr_rejects_unknown_access_bit)
{
	struct tb_dev t;
	static char buf[4096];
	volatile int bit = 1 << 12; /* not constant: through ibv_reg_mr_iova2 */

	tb_open(&t, 0);
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | (1 << 12)),
			EINVAL);
	EXPECT_MSG("access");
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | bit), EINVAL);
	expect_pd_usable(t.pd);
	tb_close(&t);
}

Test(verbs_errors, reg_mr_rejects_zero_length)
{
	struct tb_dev t;
	static char buf[4096];

	tb_open(&t, 0);
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, buf, 0, IBV_ACCESS_LOCAL_WRITE), EINVAL);
	EXPECT_MSG("length");
	expect_pd_usable(t.pd);
	tb_close(&t);
}

Test(verbs_errors, reg_mr_rejects_range_wrapping_the_address_space)
{
	struct tb_dev t;

	tb_open(&t, 0);
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, (void *)(UINTPTR_MAX - 100), 4096, IBV_ACCESS_LOCAL_WRITE),
			EINVAL);
	EXPECT_MSG("wraps");
	expect_pd_usable(t.pd);
	tb_close(&t);
}

Test(verbs_errors, reg_mr_rejects_unmapped_address)
{
	struct tb_dev t;
	long pg = sysconf(_SC_PAGESIZE);
	void *gone;

	/* The hole is made after boot, so that nothing boot allocates can land in it. */
	tb_open(&t, 0);
	gone = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		    0);
	cr_assert_neq(gone, MAP_FAILED);
	cr_assert_eq(munmap(gone, (size_t)pg * 2), 0);
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, (void *)0x10, 4096, IBV_ACCESS_LOCAL_WRITE), EFAULT);
	EXPECT_MSG("not mapped");
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, gone, (size_t)pg, IBV_ACCESS_LOCAL_WRITE), EFAULT);
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, NULL, 4096, IBV_ACCESS_LOCAL_WRITE), EFAULT);
	expect_pd_usable(t.pd);
	tb_close(&t);
}

Test(verbs_errors, reg_mr_rejects_range_ending_in_unmapped_page)
{
	struct tb_dev t;
	long pg = sysconf(_SC_PAGESIZE);
	char *two;

	tb_open(&t, 0); /* first: nothing boot allocates can land in the hole */
	two = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(two, MAP_FAILED);
	cr_assert_eq(munmap(two + pg, (size_t)pg), 0); /* second page gone */
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, two, (size_t)pg * 2, IBV_ACCESS_LOCAL_WRITE), EFAULT);
	{
		struct ibv_mr *mr = ibv_reg_mr(t.pd, two, (size_t)pg, IBV_ACCESS_LOCAL_WRITE);

		cr_assert_not_null(mr, "the mapped page alone: %s", hcasim_last_error());
		EXPECT_OK(ibv_dereg_mr(mr));
	}
	tb_close(&t);
	munmap(two, (size_t)pg);
}

Test(verbs_errors, reg_mr_returns_keys_and_region)
{
	struct tb_dev t;
	static char buf[3 * 4096];
	struct ibv_mr *a, *b;

	tb_open(&t, 0);
	a = ibv_reg_mr(t.pd, buf + 100, 5000, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	cr_assert_not_null(a, "%s", hcasim_last_error());
	b = ibv_reg_mr(t.pd, buf, sizeof(buf), 0);
	cr_assert_not_null(b, "read-only MR: %s", hcasim_last_error());
	cr_assert_eq(a->addr, buf + 100);
	cr_assert_eq(a->length, 5000);
	cr_assert_eq(a->pd, t.pd);
	cr_assert_eq(a->context, t.ctx);
	cr_assert_eq(a->lkey, a->rkey);
	cr_assert_neq(a->lkey, b->lkey, "two MRs share a key");
	EXPECT_OK(ibv_dereg_mr(b));
	EXPECT_OK(ibv_dereg_mr(a));
	tb_close(&t);
}

Test(verbs_errors, dereg_mr_rejects_null)
{
	struct tb_dev t;

	tb_open(&t, 0);
	EXPECT_RC_ERR(ibv_dereg_mr(NULL), EINVAL);
	expect_pd_usable(t.pd);
	tb_close(&t);
}

Test(verbs_errors, dereg_mr_rejects_deregistered_mr)
{
	struct tb_dev t;
	static char buf[4096];
	struct ibv_mr *mr;

	tb_open(&t, 0);
	mr = ibv_reg_mr(t.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr);
	EXPECT_OK(ibv_dereg_mr(mr));
	EXPECT_RC_ERR(ibv_dereg_mr(mr), EINVAL);
	expect_pd_usable(t.pd);
	tb_close(&t);
}

/* ================= CQ ================= */

Test(verbs_errors, create_cq_rejects_zero_cqe)
{
	struct tb_dev t;

	tb_open(&t, 0);
	EXPECT_NULL_ERR(ibv_create_cq(t.ctx, 0, NULL, NULL, 0), EINVAL);
	EXPECT_MSG("cqe");
	EXPECT_NULL_ERR(ibv_create_cq(t.ctx, -1, NULL, NULL, 0), EINVAL);
	EXPECT_MSG("cqe");
	cr_assert_geq(t.cq->cqe, 64, "fixture CQ changed");
	expect_dev_allocates(t.ctx);
	tb_close(&t);
}

Test(verbs_errors, create_cq_rejects_cqe_above_max_cqe)
{
	struct tb_dev t;

	tb_open(&t, 0);
	cr_assert_gt(t.attr.max_cqe, 0);
	EXPECT_NULL_ERR(ibv_create_cq(t.ctx, t.attr.max_cqe + 1, NULL, NULL, 0), EINVAL);
	EXPECT_MSG("cqe");
	expect_dev_allocates(t.ctx);
	tb_close(&t);
}

Test(verbs_errors, create_cq_rejects_comp_vector_out_of_range)
{
	struct tb_dev t;

	tb_open(&t, 0);
	EXPECT_NULL_ERR(ibv_create_cq(t.ctx, 8, NULL, NULL, -1), EINVAL);
	EXPECT_MSG("comp_vector");
	EXPECT_NULL_ERR(ibv_create_cq(t.ctx, 8, NULL, NULL, t.ctx->num_comp_vectors), EINVAL);
	expect_dev_allocates(t.ctx);
	tb_close(&t);
}

Test(verbs_errors, create_cq_rejects_null_context)
{
	struct tb_dev t;

	tb_open(&t, 0);
	EXPECT_NULL_ERR(ibv_create_cq(NULL, 8, NULL, NULL, 0), EINVAL);
	expect_dev_allocates(t.ctx);
	tb_close(&t);
}

Test(verbs_errors, create_cq_rejects_channel_of_other_device)
{
	struct tb_dev t0, t1;
	struct ibv_comp_channel *ch1;
	struct ibv_cq *cq;

	tb_open(&t0, 0);
	tb_open(&t1, 1);
	ch1 = ibv_create_comp_channel(t1.ctx);
	cr_assert_not_null(ch1, "%s", hcasim_last_error());
	EXPECT_NULL_ERR(ibv_create_cq(t0.ctx, 8, NULL, ch1, 0), EINVAL);
	EXPECT_MSG("channel");
	cr_assert_eq(ch1->refcnt, 0, "failed create_cq took a channel reference");
	/* the channel works on its own device, and device 0 still allocates */
	cq = ibv_create_cq(t1.ctx, 8, NULL, ch1, 0);
	cr_assert_not_null(cq, "%s", hcasim_last_error());
	EXPECT_OK(ibv_destroy_cq(cq));
	EXPECT_OK(ibv_destroy_comp_channel(ch1));
	expect_dev_allocates(t0.ctx);
	tb_close(&t1);
	tb_close(&t0);
}

Test(verbs_errors, create_cq_rejects_channel_of_other_context)
{
	struct tb_dev t;
	struct ibv_context *ctx2;
	struct ibv_comp_channel *ch2;

	tb_open(&t, 0);
	ctx2 = ibv_open_device(t.list[0]);
	cr_assert_not_null(ctx2);
	ch2 = ibv_create_comp_channel(ctx2);
	cr_assert_not_null(ch2);
	EXPECT_NULL_ERR(ibv_create_cq(t.ctx, 8, NULL, ch2, 0), EINVAL);
	cr_assert_eq(ch2->refcnt, 0);
	EXPECT_OK(ibv_destroy_comp_channel(ch2));
	EXPECT_OK(ibv_close_device(ctx2));
	tb_close(&t);
}

Test(verbs_errors, create_cq_returns_cqe_at_least_requested)
{
	struct tb_dev t;
	struct ibv_comp_channel *ch;
	const int req[] = { 1, 2, 7, 8, 100, 1000 };
	int ctxval;

	tb_config("hca.max_cqe", "5000"); /* keeps the max_cqe ring small */
	tb_open(&t, 0);
	cr_assert_eq(t.attr.max_cqe, 5000);
	ch = ibv_create_comp_channel(t.ctx);
	cr_assert_not_null(ch);
	for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		struct ibv_cq *cq = ibv_create_cq(t.ctx, req[i], &ctxval, ch, 0);

		cr_assert_not_null(cq, "cqe %d: %s", req[i], hcasim_last_error());
		cr_assert_geq(cq->cqe, req[i], "cqe %d gave %d", req[i], cq->cqe);
		cr_assert_eq(cq->context, t.ctx);
		cr_assert_eq(cq->channel, ch);
		cr_assert_eq(cq->cq_context, &ctxval);
		cr_assert_eq(ch->refcnt, 1);
		EXPECT_OK(ibv_destroy_cq(cq));
		cr_assert_eq(ch->refcnt, 0);
	}
	{
		struct ibv_cq *cq = ibv_create_cq(t.ctx, t.attr.max_cqe, NULL, NULL, 0);

		cr_assert_not_null(cq, "cqe = max_cqe %d: %s", t.attr.max_cqe, hcasim_last_error());
		cr_assert_geq(cq->cqe, t.attr.max_cqe);
		EXPECT_OK(ibv_destroy_cq(cq));
	}
	EXPECT_OK(ibv_destroy_comp_channel(ch));
	tb_close(&t);
}

Test(verbs_errors, resize_cq_rejects_bad_cqe_and_keeps_size)
{
	struct tb_dev t;
	int before;

	tb_open(&t, 0);
	before = t.cq->cqe;
	EXPECT_RC_ERR(ibv_resize_cq(t.cq, 0), EINVAL);
	EXPECT_MSG("cqe");
	cr_assert_eq(t.cq->cqe, before, "cqe changed to %d after a rejected resize", t.cq->cqe);
	EXPECT_RC_ERR(ibv_resize_cq(t.cq, -5), EINVAL);
	EXPECT_RC_ERR(ibv_resize_cq(t.cq, t.attr.max_cqe + 1), EINVAL);
	cr_assert_eq(t.cq->cqe, before);
	EXPECT_RC_ERR(ibv_resize_cq(NULL, 16), EINVAL);
	/* the CQ still resizes and is still usable by a QP */
	EXPECT_OK(ibv_resize_cq(t.cq, 200));
	cr_assert_geq(t.cq->cqe, 200);
	EXPECT_OK(ibv_destroy_qp(tb_create_qp(&t, IBV_QPT_UD)));
	tb_close(&t);
}

Test(verbs_errors, resize_cq_grows_and_shrinks_to_at_least_requested)
{
	struct tb_dev t;
	const int req[] = { 1000, 3, 64, 65, 4096 };

	tb_open(&t, 0);
	for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		EXPECT_OK(ibv_resize_cq(t.cq, req[i]));
		cr_assert_geq(t.cq->cqe, req[i], "resize to %d gave %d", req[i], t.cq->cqe);
		cr_assert_lt(t.cq->cqe, 2 * req[i] + 2, "resize to %d gave %d (too large)", req[i],
			     t.cq->cqe);
	}
	tb_close(&t);
}

Test(verbs_errors, destroy_cq_rejects_null)
{
	struct tb_dev t;

	tb_open(&t, 0);
	EXPECT_RC_ERR(ibv_destroy_cq(NULL), EINVAL);
	cr_assert_geq(t.cq->cqe, 64);
	EXPECT_OK(ibv_destroy_qp(tb_create_qp(&t, IBV_QPT_RC)));
	tb_close(&t);
}

Test(verbs_errors, destroy_cq_rejects_destroyed_cq)
{
	struct tb_dev t;
	struct ibv_cq *cq;

	tb_open(&t, 0);
	cq = ibv_create_cq(t.ctx, 8, NULL, NULL, 0);
	cr_assert_not_null(cq);
	EXPECT_OK(ibv_destroy_cq(cq));
	EXPECT_RC_ERR(ibv_destroy_cq(cq), EINVAL);
	expect_dev_allocates(t.ctx);
	tb_close(&t);
}

Test(verbs_errors, destroy_cq_busy_with_qp)
{
	struct tb_dev t;
	struct ibv_cq *scq;
	struct ibv_qp *qp;
	struct tb_qp_snap before;
	struct ibv_qp_init_attr init = {
		.recv_cq = NULL,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	tb_open(&t, 0);
	scq = ibv_create_cq(t.ctx, 16, NULL, NULL, 0);
	cr_assert_not_null(scq);
	init.send_cq = scq;
	init.recv_cq = t.cq;
	qp = ibv_create_qp(t.pd, &init);
	cr_assert_not_null(qp, "%s", hcasim_last_error());
	qp_to_init(&t, qp);
	tb_qp_snap(qp, &before);
	EXPECT_RC_ERR(ibv_destroy_cq(scq), EBUSY);
	EXPECT_MSG("in use");
	EXPECT_RC_ERR(ibv_destroy_cq(t.cq), EBUSY);
	expect_qp_unchanged(qp, &before);
	cr_assert_geq(scq->cqe, 16, "busy CQ lost its size");
	EXPECT_OK(ibv_resize_cq(scq, 32)); /* still a working CQ */
	EXPECT_OK(ibv_destroy_qp(qp));
	EXPECT_OK(ibv_destroy_cq(scq));
	tb_close(&t);
}

/* ================= completion channels ================= */

Test(verbs_errors, create_comp_channel_rejects_null_context)
{
	struct tb_dev t;
	struct ibv_comp_channel *ch;

	tb_open(&t, 0);
	EXPECT_NULL_ERR(ibv_create_comp_channel(NULL), EINVAL);
	ch = ibv_create_comp_channel(t.ctx);
	cr_assert_not_null(ch, "%s", hcasim_last_error());
	cr_assert_geq(ch->fd, 0);
	cr_assert_eq(ch->context, t.ctx);
	EXPECT_OK(ibv_destroy_comp_channel(ch));
	tb_close(&t);
}

Test(verbs_errors, destroy_comp_channel_rejects_null)
{
	struct tb_dev t;

	tb_open(&t, 0);
	EXPECT_RC_ERR(ibv_destroy_comp_channel(NULL), EINVAL);
	tb_close(&t);
}

Test(verbs_errors, destroy_comp_channel_rejects_destroyed_channel)
{
	struct tb_dev t;
	struct ibv_comp_channel *ch;

	tb_open(&t, 0);
	ch = ibv_create_comp_channel(t.ctx);
	cr_assert_not_null(ch);
	EXPECT_OK(ibv_destroy_comp_channel(ch));
	EXPECT_RC_ERR(ibv_destroy_comp_channel(ch), EINVAL);
	ch = ibv_create_comp_channel(t.ctx);
	cr_assert_not_null(ch);
	EXPECT_OK(ibv_destroy_comp_channel(ch));
	tb_close(&t);
}

Test(verbs_errors, destroy_comp_channel_busy_with_cq)
{
	struct tb_dev t;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	int fd;

	tb_open(&t, 0);
	ch = ibv_create_comp_channel(t.ctx);
	cr_assert_not_null(ch);
	fd = ch->fd;
	cq = ibv_create_cq(t.ctx, 8, NULL, ch, 0);
	cr_assert_not_null(cq, "%s", hcasim_last_error());
	EXPECT_RC_ERR(ibv_destroy_comp_channel(ch), EBUSY);
	EXPECT_MSG("CQ");
	cr_assert_eq(ch->refcnt, 1);
	cr_assert_eq(ch->fd, fd);
	cr_assert_neq(fcntl(fd, F_GETFD), -1, "channel fd closed by a rejected destroy");
	cr_assert_eq(cq->channel, ch);
	EXPECT_OK(ibv_destroy_cq(cq));
	EXPECT_OK(ibv_destroy_comp_channel(ch));
	tb_close(&t);
}

/* ================= QP ================= */

Test(verbs_errors, create_qp_rejects_null_pd_and_attr)
{
	struct tb_dev t;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	tb_open(&t, 0);
	init.send_cq = init.recv_cq = t.cq;
	EXPECT_NULL_ERR(ibv_create_qp(NULL, &init), EINVAL);
	EXPECT_NULL_ERR(ibv_create_qp(t.pd, NULL), EINVAL);
	EXPECT_OK(ibv_destroy_qp(tb_create_qp(&t, IBV_QPT_RC)));
	tb_close(&t);
}

Test(verbs_errors, create_qp_rejects_unknown_qp_type)
{
	struct tb_dev t;
	const int bad[] = { 0, 1, 5, 7, 77, -1 };
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	tb_open(&t, 0);
	init.send_cq = init.recv_cq = t.cq;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		init.qp_type = (enum ibv_qp_type)bad[i];
		EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), EINVAL);
		EXPECT_MSG("qp_type");
	}
	tb_close(&t); /* no QP leaked: the CQ and the PD go */
}

Test(verbs_errors, create_qp_rejects_unsupported_qp_types)
{
	struct tb_dev t;
	const enum ibv_qp_type unsup[] = { IBV_QPT_RAW_PACKET, IBV_QPT_DRIVER };
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	tb_open(&t, 0);
	init.send_cq = init.recv_cq = t.cq;
	for (size_t i = 0; i < sizeof(unsup) / sizeof(unsup[0]); i++) {
		init.qp_type = unsup[i];
		EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), EOPNOTSUPP);
		EXPECT_MSG("not supported");
	}
	/* XRC_RECV has no PD: only ibv_create_qp_ex with an XRC domain makes one (suite xrc). */
	init.qp_type = IBV_QPT_XRC_RECV;
	EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), EINVAL);
	EXPECT_MSG("IBV_QP_INIT_ATTR_XRCD");
	tb_close(&t);
}

Test(verbs_errors, create_qp_rejects_caps_above_device_limits)
{
	struct tb_dev t;
	struct ibv_qp_init_attr ok = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	}, init;
	unsigned max_inline;

	tb_config("hca.max_qp_wr", "1024"); /* keeps the rings at the limits small */
	tb_open(&t, 0);
	max_inline = cfg_u("hca.max_inline");
	cr_assert_eq(t.attr.max_qp_wr, 1024);
	ok.send_cq = ok.recv_cq = t.cq;
	init = ok;
	init.cap.max_send_wr = (uint32_t)t.attr.max_qp_wr + 1;
	EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), EINVAL);
	EXPECT_MSG("max_send_wr");
	init = ok;
	init.cap.max_recv_wr = (uint32_t)t.attr.max_qp_wr + 1;
	EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), EINVAL);
	EXPECT_MSG("max_recv_wr");
	init = ok;
	init.cap.max_send_sge = (uint32_t)t.attr.max_sge + 1;
	EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), EINVAL);
	EXPECT_MSG("sge");
	init = ok;
	init.cap.max_recv_sge = (uint32_t)t.attr.max_sge + 1;
	EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), EINVAL);
	EXPECT_MSG("sge");
	init = ok;
	init.cap.max_inline_data = max_inline + 1;
	EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), EINVAL);
	EXPECT_MSG("max_inline_data");
	init = ok;
	init.cap.max_send_wr = UINT32_MAX;
	EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), EINVAL);
	/* exactly at the limits is accepted */
	init = ok;
	init.cap.max_send_wr = (uint32_t)t.attr.max_qp_wr;
	init.cap.max_recv_wr = (uint32_t)t.attr.max_qp_wr;
	init.cap.max_send_sge = (uint32_t)t.attr.max_sge;
	init.cap.max_recv_sge = (uint32_t)t.attr.max_sge;
	init.cap.max_inline_data = max_inline;
	{
		struct ibv_qp *qp = ibv_create_qp(t.pd, &init);

		cr_assert_not_null(qp, "caps at the device limits: %s", hcasim_last_error());
		cr_assert_eq(init.cap.max_send_wr, (uint32_t)t.attr.max_qp_wr);
		EXPECT_OK(ibv_destroy_qp(qp));
	}
	tb_close(&t); /* nothing leaked: PD and CQ still go */
}

Test(verbs_errors, create_qp_rejects_missing_cqs)
{
	struct tb_dev t;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	tb_open(&t, 0);
	init.recv_cq = t.cq;
	EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), EINVAL);
	EXPECT_MSG("send_cq");
	init.send_cq = t.cq;
	init.recv_cq = NULL;
	EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), EINVAL);
	EXPECT_MSG("recv_cq");
	tb_close(&t);
}

Test(verbs_errors, create_qp_rejects_cq_and_srq_of_other_device)
{
	struct tb_dev t0, t1;
	struct ibv_srq *srq1;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	tb_open(&t0, 0);
	tb_open(&t1, 1);
	srq1 = make_srq(t1.pd, 8, 1);
	init.send_cq = t1.cq;
	init.recv_cq = t0.cq;
	EXPECT_NULL_ERR(ibv_create_qp(t0.pd, &init), EINVAL);
	EXPECT_MSG("send_cq");
	init.send_cq = t0.cq;
	init.recv_cq = t1.cq;
	EXPECT_NULL_ERR(ibv_create_qp(t0.pd, &init), EINVAL);
	EXPECT_MSG("recv_cq");
	init.recv_cq = t0.cq;
	init.srq = srq1;
	EXPECT_NULL_ERR(ibv_create_qp(t0.pd, &init), EINVAL);
	EXPECT_MSG("srq");
	/* nothing leaked on either device: every object still goes */
	EXPECT_OK(ibv_destroy_srq(srq1));
	EXPECT_OK(ibv_destroy_qp(tb_create_qp(&t0, IBV_QPT_RC)));
	tb_close(&t1);
	tb_close(&t0);
}

Test(verbs_errors, create_qp_returns_caps_at_least_requested)
{
	struct tb_dev t;
	const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	const struct ibv_qp_cap req[] = {
		{ 1, 1, 1, 1, 0 },
		{ 5, 3, 2, 3, 40 },
		{ 100, 1, 7, 1, 200 },
		{ 0, 0, 0, 0, 0 },
	};
	int qpctx;

	tb_open(&t, 0);
	for (size_t ti = 0; ti < 3; ti++) {
		for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
			struct ibv_qp_init_attr init = {
				.qp_context = &qpctx,
				.send_cq = t.cq,
				.recv_cq = t.cq,
				.qp_type = types[ti],
				.sq_sig_all = 1,
				.cap = req[i],
			};
			struct ibv_qp *qp = ibv_create_qp(t.pd, &init);
			struct tb_qp_snap s;

			cr_assert_not_null(qp, "type %d caps #%zu: %s", types[ti], i,
					   hcasim_last_error());
			cr_assert_geq(init.cap.max_send_wr, req[i].max_send_wr);
			cr_assert_geq(init.cap.max_recv_wr, req[i].max_recv_wr);
			cr_assert_geq(init.cap.max_send_sge, req[i].max_send_sge);
			cr_assert_geq(init.cap.max_recv_sge, req[i].max_recv_sge);
			cr_assert_geq(init.cap.max_inline_data, req[i].max_inline_data);
			cr_assert_geq(qp->qp_num, 2u, "QPN %u is a special QP", qp->qp_num);
			cr_assert_eq(qp->qp_type, types[ti]);
			cr_assert_eq(qp->state, IBV_QPS_RESET);
			cr_assert_eq(qp->pd, t.pd);
			cr_assert_eq(qp->qp_context, &qpctx);
			tb_qp_snap(qp, &s);
			cr_assert_eq(s.attr.qp_state, IBV_QPS_RESET);
			cr_assert_eq(memcmp(&s.init.cap, &init.cap, sizeof(init.cap)), 0,
				     "query_qp caps differ from the caps create_qp returned");
			cr_assert_eq(s.init.qp_type, types[ti]);
			cr_assert_eq(s.init.sq_sig_all, 1);
			cr_assert_eq(s.init.send_cq, t.cq);
			EXPECT_OK(ibv_destroy_qp(qp));
		}
	}
	tb_close(&t);
}

Test(verbs_errors, create_qp_with_srq_ignores_receive_caps)
{
	struct tb_dev t;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1, .max_recv_wr = 1u << 30,
			 .max_recv_sge = 1000 },
	};
	struct tb_qp_snap s;

	tb_open(&t, 0);
	srq = make_srq(t.pd, 16, 1);
	init.send_cq = init.recv_cq = t.cq;
	init.srq = srq;
	qp = ibv_create_qp(t.pd, &init);
	cr_assert_not_null(qp, "receive caps must be ignored with an SRQ: %s",
			   hcasim_last_error());
	cr_assert_eq(qp->srq, srq);
	cr_assert_eq(init.cap.max_recv_wr, 0);
	tb_qp_snap(qp, &s);
	cr_assert_eq(s.init.srq, srq);
	EXPECT_OK(ibv_destroy_qp(qp));
	EXPECT_OK(ibv_destroy_srq(srq));
	tb_close(&t);
}

Test(verbs_errors, query_qp_rejects_null_args_and_ignores_unknown_mask_bits)
{
	struct tb_dev t;
	struct ibv_qp *qp;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct tb_qp_snap before;

	tb_open(&t, 0);
	qp = tb_create_qp(&t, IBV_QPT_UD);
	qp_to_init(&t, qp);
	tb_qp_snap(qp, &before);
	EXPECT_RC_ERR(ibv_query_qp(NULL, &a, IBV_QP_STATE, &ia), EINVAL);
	EXPECT_RC_ERR(ibv_query_qp(qp, NULL, IBV_QP_STATE, &ia), EINVAL);
	EXPECT_RC_ERR(ibv_query_qp(qp, &a, IBV_QP_STATE, NULL), EINVAL);
	/* The kernel ignores mask bits it does not know (every attribute is returned). */
	memset(&a, 0xa5, sizeof(a));
	EXPECT_OK(ibv_query_qp(qp, &a, 1 << 21, &ia));
	cr_assert_eq(a.qp_state, IBV_QPS_INIT);
	cr_assert_eq(a.qkey, before.attr.qkey);
	EXPECT_OK(ibv_query_qp(qp, &a, IBV_QP_STATE | (1 << 30), &ia));
	cr_assert_eq(a.qp_state, IBV_QPS_INIT);
	cr_assert_eq(ia.qp_type, IBV_QPT_UD);
	expect_qp_unchanged(qp, &before);
	EXPECT_OK(ibv_destroy_qp(qp));
	tb_close(&t);
}

Test(verbs_errors, destroy_qp_rejects_null)
{
	struct tb_dev t;
	struct ibv_qp *qp;
	struct tb_qp_snap before;

	tb_open(&t, 0);
	qp = tb_create_qp(&t, IBV_QPT_RC);
	tb_qp_snap(qp, &before);
	EXPECT_RC_ERR(ibv_destroy_qp(NULL), EINVAL);
	expect_qp_unchanged(qp, &before);
	EXPECT_OK(ibv_destroy_qp(qp));
	tb_close(&t);
}

Test(verbs_errors, destroy_qp_rejects_destroyed_qp)
{
	struct tb_dev t;
	struct ibv_qp *qp, *other;
	struct tb_qp_snap before;

	tb_open(&t, 0);
	other = tb_create_qp(&t, IBV_QPT_RC);
	tb_qp_snap(other, &before);
	qp = tb_create_qp(&t, IBV_QPT_RC);
	EXPECT_OK(ibv_destroy_qp(qp));
	EXPECT_RC_ERR(ibv_destroy_qp(qp), EINVAL);
	expect_qp_unchanged(other, &before);
	EXPECT_OK(ibv_destroy_qp(other));
	tb_close(&t);
}

/* ================= SRQ ================= */

Test(verbs_errors, create_srq_rejects_null_pd_and_attr)
{
	struct tb_dev t;
	struct ibv_srq_init_attr init = { .attr = { .max_wr = 8, .max_sge = 1 } };

	tb_open(&t, 0);
	EXPECT_NULL_ERR(ibv_create_srq(NULL, &init), EINVAL);
	EXPECT_NULL_ERR(ibv_create_srq(t.pd, NULL), EINVAL);
	cr_assert_eq(init.attr.max_wr, 8, "init attr written on failure");
	tb_close(&t);
}

Test(verbs_errors, create_srq_rejects_bad_sizes)
{
	struct tb_dev t;
	struct ibv_srq_init_attr init = { .attr = { .max_wr = 0, .max_sge = 1 } };

	tb_config("hca.max_srq_wr", "1000"); /* keeps the ring at the limit small */
	tb_open(&t, 0);
	cr_assert_eq(t.attr.max_srq_wr, 1000);
	EXPECT_NULL_ERR(ibv_create_srq(t.pd, &init), EINVAL);
	EXPECT_MSG("max_wr");
	init.attr.max_wr = (uint32_t)t.attr.max_srq_wr + 1;
	EXPECT_NULL_ERR(ibv_create_srq(t.pd, &init), EINVAL);
	EXPECT_MSG("max_wr");
	cr_assert_eq(init.attr.max_wr, (uint32_t)t.attr.max_srq_wr + 1,
		     "init attr written on failure");
	init.attr.max_wr = 8;
	init.attr.max_sge = (uint32_t)t.attr.max_srq_sge + 1;
	EXPECT_NULL_ERR(ibv_create_srq(t.pd, &init), EINVAL);
	EXPECT_MSG("max_sge");
	/* at the limits it works, and nothing leaked (tb_close deallocates the PD) */
	init.attr.max_wr = (uint32_t)t.attr.max_srq_wr;
	init.attr.max_sge = (uint32_t)t.attr.max_srq_sge;
	{
		struct ibv_srq *srq = ibv_create_srq(t.pd, &init);

		cr_assert_not_null(srq, "SRQ at the limits: %s", hcasim_last_error());
		cr_assert_geq(init.attr.max_wr, (uint32_t)t.attr.max_srq_wr);
		EXPECT_OK(ibv_destroy_srq(srq));
	}
	tb_close(&t);
}

Test(verbs_errors, create_srq_returns_what_query_srq_reports)
{
	struct tb_dev t;
	const uint32_t wr[] = { 1, 7, 8, 100 }, sge[] = { 0, 1, 3, 4 };
	int sctx;

	tb_open(&t, 0);
	for (size_t i = 0; i < 4; i++) {
		struct ibv_srq_init_attr init = {
			.srq_context = &sctx,
			.attr = { .max_wr = wr[i], .max_sge = sge[i], .srq_limit = 3 },
		};
		struct ibv_srq *srq = ibv_create_srq(t.pd, &init);

		cr_assert_not_null(srq, "max_wr %u max_sge %u: %s", wr[i], sge[i],
				   hcasim_last_error());
		cr_assert_geq(init.attr.max_wr, wr[i]);
		cr_assert_geq(init.attr.max_sge, sge[i]);
		cr_assert_eq(init.attr.srq_limit, 0, "srq_limit is not armed at creation");
		cr_assert_eq(srq->pd, t.pd);
		cr_assert_eq(srq->context, t.ctx);
		cr_assert_eq(srq->srq_context, &sctx);
		expect_srq_attr(srq, &init.attr);
		EXPECT_OK(ibv_destroy_srq(srq));
	}
	tb_close(&t);
}

Test(verbs_errors, modify_srq_rejects_limit_above_max_wr)
{
	struct tb_dev t;
	struct ibv_srq *srq;
	struct ibv_srq_attr a, bad;

	tb_open(&t, 0);
	srq = make_srq(t.pd, 16, 1);
	EXPECT_OK(ibv_query_srq(srq, &a));
	bad = a;
	bad.srq_limit = a.max_wr + 1;
	EXPECT_RC_ERR(ibv_modify_srq(srq, &bad, IBV_SRQ_LIMIT), EINVAL);
	EXPECT_MSG("srq_limit");
	expect_srq_attr(srq, &a);
	/* the limit itself (== max_wr) is accepted, and it arms */
	bad.srq_limit = a.max_wr;
	EXPECT_OK(ibv_modify_srq(srq, &bad, IBV_SRQ_LIMIT));
	a.srq_limit = a.max_wr;
	expect_srq_attr(srq, &a);
	EXPECT_OK(ibv_destroy_srq(srq));
	tb_close(&t);
}

Test(verbs_errors, modify_srq_rejects_resize)
{
	struct tb_dev t;
	struct ibv_srq *srq;
	struct ibv_srq_attr a, req;

	tb_open(&t, 0);
	cr_assert_eq(t.attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE, 0,
		     "device advertises SRQ_RESIZE; this test expects it not to");
	srq = make_srq(t.pd, 16, 1);
	EXPECT_OK(ibv_query_srq(srq, &a));
	req = a;
	req.max_wr = a.max_wr * 2;
	EXPECT_RC_ERR(ibv_modify_srq(srq, &req, IBV_SRQ_MAX_WR), EINVAL);
	EXPECT_MSG("IBV_SRQ_MAX_WR");
	expect_srq_attr(srq, &a);
	req.srq_limit = 2;
	EXPECT_RC_ERR(ibv_modify_srq(srq, &req, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT), EINVAL);
	expect_srq_attr(srq, &a); /* the limit part did not apply either */
	EXPECT_OK(ibv_destroy_srq(srq));
	tb_close(&t);
}

Test(verbs_errors, modify_srq_rejects_null_args_and_ignores_unknown_mask_bits)
{
	struct tb_dev t;
	struct ibv_srq *srq;
	struct ibv_srq_attr a, req;

	tb_open(&t, 0);
	srq = make_srq(t.pd, 16, 1);
	EXPECT_OK(ibv_query_srq(srq, &a));
	req = a;
	req.srq_limit = 1;
	EXPECT_RC_ERR(ibv_modify_srq(NULL, &req, IBV_SRQ_LIMIT), EINVAL);
	EXPECT_RC_ERR(ibv_modify_srq(srq, NULL, IBV_SRQ_LIMIT), EINVAL);
	expect_srq_attr(srq, &a);
	/* Unknown mask bits alone change nothing (the kernel's providers ignore them) */
	EXPECT_OK(ibv_modify_srq(srq, &req, 1 << 5));
	expect_srq_attr(srq, &a);
	/* and beside a known one, the known one is applied */
	EXPECT_OK(ibv_modify_srq(srq, &req, IBV_SRQ_LIMIT | (1 << 5)));
	a.srq_limit = 1;
	expect_srq_attr(srq, &a);
	EXPECT_OK(ibv_destroy_srq(srq));
	tb_close(&t);
}

Test(verbs_errors, query_srq_rejects_null_args)
{
	struct tb_dev t;
	struct ibv_srq *srq;
	struct ibv_srq_attr a;

	tb_open(&t, 0);
	srq = make_srq(t.pd, 16, 2);
	EXPECT_RC_ERR(ibv_query_srq(NULL, &a), EINVAL);
	EXPECT_RC_ERR(ibv_query_srq(srq, NULL), EINVAL);
	EXPECT_OK(ibv_query_srq(srq, &a));
	cr_assert_geq(a.max_wr, 16);
	cr_assert_geq(a.max_sge, 2);
	EXPECT_OK(ibv_destroy_srq(srq));
	tb_close(&t);
}

Test(verbs_errors, destroy_srq_rejects_null)
{
	struct tb_dev t;
	struct ibv_srq *srq;
	struct ibv_srq_attr a;

	tb_open(&t, 0);
	srq = make_srq(t.pd, 16, 1);
	EXPECT_OK(ibv_query_srq(srq, &a));
	EXPECT_RC_ERR(ibv_destroy_srq(NULL), EINVAL);
	expect_srq_attr(srq, &a);
	EXPECT_OK(ibv_destroy_srq(srq));
	tb_close(&t);
}

Test(verbs_errors, destroy_srq_rejects_destroyed_srq)
{
	struct tb_dev t;
	struct ibv_srq *srq;

	tb_open(&t, 0);
	srq = make_srq(t.pd, 16, 1);
	EXPECT_OK(ibv_destroy_srq(srq));
	EXPECT_RC_ERR(ibv_destroy_srq(srq), EINVAL);
	expect_pd_usable(t.pd);
	tb_close(&t);
}

Test(verbs_errors, destroy_srq_busy_with_qp)
{
	struct tb_dev t;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_srq_attr a;
	struct tb_qp_snap before;

	tb_open(&t, 0);
	srq = make_srq(t.pd, 16, 1);
	qp = make_srq_qp(&t, srq);
	qp_to_init(&t, qp);
	tb_qp_snap(qp, &before);
	EXPECT_OK(ibv_query_srq(srq, &a));
	EXPECT_RC_ERR(ibv_destroy_srq(srq), EBUSY);
	expect_srq_attr(srq, &a);
	expect_qp_unchanged(qp, &before);
	EXPECT_OK(ibv_destroy_qp(qp));
	EXPECT_OK(ibv_destroy_srq(srq));
	tb_close(&t);
}

/* ================= AH ================= */

Test(verbs_errors, create_ah_rejects_null_pd_and_attr)
{
	struct tb_dev t;
	struct ibv_ah_attr a;

	tb_open(&t, 0);
	ah_attr_valid(&t, &a);
	EXPECT_NULL_ERR(ibv_create_ah(NULL, &a), EINVAL);
	EXPECT_NULL_ERR(ibv_create_ah(t.pd, NULL), EINVAL);
	tb_close(&t); /* no AH counted in the PD: it deallocates */
}

Test(verbs_errors, create_ah_rejects_bad_attributes)
{
	struct tb_dev t;
	struct ibv_ah_attr ok, a;
	struct ibv_ah *ah;

	tb_open(&t, 0);
	ah_attr_valid(&t, &ok);
	a = ok;
	a.port_num = 0;
	EXPECT_NULL_ERR(ibv_create_ah(t.pd, &a), EINVAL);
	EXPECT_MSG("port");
	a.port_num = 2;
	EXPECT_NULL_ERR(ibv_create_ah(t.pd, &a), EINVAL);
	a = ok;
	a.sl = 16;
	EXPECT_NULL_ERR(ibv_create_ah(t.pd, &a), EINVAL);
	EXPECT_MSG("sl");
	a = ok;
	a.static_rate = (uint8_t)(IBV_RATE_1200_GBPS + 1);
	EXPECT_NULL_ERR(ibv_create_ah(t.pd, &a), EINVAL);
	EXPECT_MSG("static_rate");
	a = ok;
	a.dlid = 0;
	EXPECT_NULL_ERR(ibv_create_ah(t.pd, &a), EINVAL);
	EXPECT_MSG("dlid");
	a = ok;
	a.is_global = 1;
	a.grh.sgid_index = (uint8_t)t.port.gid_tbl_len;
	a.grh.hop_limit = 1;
	EXPECT_NULL_ERR(ibv_create_ah(t.pd, &a), EINVAL);
	EXPECT_MSG("sgid_index");
	a.grh.sgid_index = 0;
	a.grh.flow_label = 0x100000;
	EXPECT_NULL_ERR(ibv_create_ah(t.pd, &a), EINVAL);
	EXPECT_MSG("flow_label");
	/* nothing counted: a valid AH still works and the PD still deallocates */
	ah = ibv_create_ah(t.pd, &ok);
	cr_assert_not_null(ah, "%s", hcasim_last_error());
	cr_assert_eq(ah->pd, t.pd);
	cr_assert_eq(ah->context, t.ctx);
	EXPECT_OK(ibv_destroy_ah(ah));
	a.grh.flow_label = 0xfffff;
	ah = ibv_create_ah(t.pd, &a);
	cr_assert_not_null(ah, "global AH with sgid 0: %s", hcasim_last_error());
	EXPECT_OK(ibv_destroy_ah(ah));
	tb_close(&t);
}

Test(verbs_errors, create_ah_on_roce_port_requires_grh)
{
	struct tb_dev t;
	struct ibv_ah_attr a;
	struct ibv_ah *ah;

	tb_config("hca.link_layer", "roce");
	tb_open(&t, 0);
	cr_assert_eq(t.port.link_layer, IBV_LINK_LAYER_ETHERNET);
	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	a.dlid = 0;
	EXPECT_NULL_ERR(ibv_create_ah(t.pd, &a), EINVAL);
	EXPECT_MSG("GRH");
	a.is_global = 1;
	a.grh.sgid_index = 0;
	a.grh.hop_limit = 64;
	EXPECT_OK(ibv_query_gid(t.ctx, 1, 1, &a.grh.dgid));
	ah = ibv_create_ah(t.pd, &a);
	cr_assert_not_null(ah, "RoCE AH with a GRH: %s", hcasim_last_error());
	EXPECT_OK(ibv_destroy_ah(ah));
	tb_close(&t);
}

Test(verbs_errors, destroy_ah_rejects_null)
{
	struct tb_dev t;

	tb_open(&t, 0);
	EXPECT_RC_ERR(ibv_destroy_ah(NULL), EINVAL);
	tb_close(&t);
}

Test(verbs_errors, destroy_ah_rejects_destroyed_ah)
{
	struct tb_dev t;
	struct ibv_ah_attr a;
	struct ibv_ah *ah, *keep;

	tb_open(&t, 0);
	ah_attr_valid(&t, &a);
	keep = ibv_create_ah(t.pd, &a);
	cr_assert_not_null(keep);
	ah = ibv_create_ah(t.pd, &a);
	cr_assert_not_null(ah);
	EXPECT_OK(ibv_destroy_ah(ah));
	EXPECT_RC_ERR(ibv_destroy_ah(ah), EINVAL);
	/* the count was not decremented twice: the PD is still busy with `keep` */
	EXPECT_RC_ERR(ibv_dealloc_pd(t.pd), EBUSY);
	EXPECT_OK(ibv_destroy_ah(keep));
	tb_close(&t);
}

/* ================= async events ================= */

Test(verbs_errors, get_async_event_nonblocking_without_event_is_eagain)
{
	struct tb_dev t;
	struct ibv_async_event ev;
	int fl;

	tb_open(&t, 0);
	fl = fcntl(t.ctx->async_fd, F_GETFL);
	cr_assert_neq(fl, -1);
	cr_assert_eq(fcntl(t.ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
	EXPECT_M1_ERR(ibv_get_async_event(t.ctx, &ev), EAGAIN);
	EXPECT_M1_ERR(ibv_get_async_event(t.ctx, &ev), EAGAIN); /* and again */
	expect_dev_allocates(t.ctx);
	tb_close(&t);
}

Test(verbs_errors, get_async_event_blocking_on_idle_simulation_is_edeadlk)
{
	struct tb_dev t;
	struct ibv_async_event ev;

	tb_open(&t, 0);
	EXPECT_M1_ERR(ibv_get_async_event(t.ctx, &ev), EDEADLK);
	EXPECT_MSG("idle");
	expect_dev_allocates(t.ctx);
	tb_close(&t);
}

Test(verbs_errors, get_async_event_rejects_null_args)
{
	struct tb_dev t;
	struct ibv_async_event ev;

	tb_open(&t, 0);
	EXPECT_M1_ERR(ibv_get_async_event(NULL, &ev), EINVAL);
	EXPECT_M1_ERR(ibv_get_async_event(t.ctx, NULL), EINVAL);
	tb_close(&t);
}

/* ================= exhausted limits ================= */

Test(verbs_errors, alloc_pd_fails_with_enomem_at_max_pd)
{
	struct bare b;
	struct ibv_pd *pd[8];
	int n = 0;

	tb_config("hca.max_pd", "2");
	bare_open(&b, 0);
	cr_assert_eq(b.attr.max_pd, 2);
	while (n < 8 && (pd[n] = ibv_alloc_pd(b.ctx)) != NULL)
		n++;
	cr_assert_eq(n, 2, "allocated %d PDs with max_pd 2", n);
	cr_assert_eq(errno, ENOMEM, "errno %d (%s); last error: %s", errno, strerror(errno),
		     hcasim_last_error());
	EXPECT_MSG("limit");
	EXPECT_NULL_ERR(ibv_alloc_pd(b.ctx), ENOMEM); /* stays exhausted */
	expect_pd_usable(pd[0]);
	EXPECT_OK(ibv_dealloc_pd(pd[1]));
	pd[1] = ibv_alloc_pd(b.ctx);
	cr_assert_not_null(pd[1], "after freeing one: %s", hcasim_last_error());
	for (int i = 0; i < 2; i++)
		EXPECT_OK(ibv_dealloc_pd(pd[i]));
	bare_close(&b);
}

Test(verbs_errors, create_qp_fails_with_enomem_at_max_qp)
{
	struct tb_dev t;
	struct ibv_qp *qp[16];
	struct ibv_qp_init_attr init;
	int n = 0;

	tb_config("hca.max_qp", "8");
	tb_open(&t, 0);
	cr_assert_eq(t.attr.max_qp, 8);
	for (;;) {
		init = (struct ibv_qp_init_attr){
			.send_cq = t.cq, .recv_cq = t.cq, .qp_type = IBV_QPT_UD,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		if (n == 16 || !(qp[n] = ibv_create_qp(t.pd, &init)))
			break;
		cr_assert_geq(qp[n]->qp_num, 2u);
		cr_assert_lt(qp[n]->qp_num, 10u, "QPN %u outside 2..9", qp[n]->qp_num);
		n++;
	}
	cr_assert_eq(n, 8, "created %d QPs with max_qp 8", n);
	cr_assert_eq(errno, ENOMEM, "errno %d (%s); last error: %s", errno, strerror(errno),
		     hcasim_last_error());
	EXPECT_MSG("limit");
	{
		struct tb_qp_snap before;

		tb_qp_snap(qp[0], &before);
		EXPECT_NULL_ERR(ibv_create_qp(t.pd, &init), ENOMEM);
		expect_qp_unchanged(qp[0], &before);
	}
	EXPECT_OK(ibv_destroy_qp(qp[3]));
	qp[3] = ibv_create_qp(t.pd, &init);
	cr_assert_not_null(qp[3], "after destroying one: %s", hcasim_last_error());
	for (int i = 0; i < n; i++)
		EXPECT_OK(ibv_destroy_qp(qp[i]));
	tb_close(&t);
}

Test(verbs_errors, create_cq_fails_with_enomem_at_max_cq)
{
	struct bare b;
	struct ibv_cq *cq[8];
	int n = 0;

	tb_config("hca.max_cq", "3");
	bare_open(&b, 0);
	cr_assert_eq(b.attr.max_cq, 3);
	while (n < 8 && (cq[n] = ibv_create_cq(b.ctx, 4, NULL, NULL, 0)) != NULL)
		n++;
	cr_assert_eq(n, 3, "created %d CQs with max_cq 3", n);
	cr_assert_eq(errno, ENOMEM, "errno %d (%s); last error: %s", errno, strerror(errno),
		     hcasim_last_error());
	EXPECT_MSG("limit");
	cr_assert_geq(cq[0]->cqe, 4);
	EXPECT_OK(ibv_resize_cq(cq[0], 9)); /* existing CQs still work */
	EXPECT_OK(ibv_destroy_cq(cq[1]));
	cq[1] = ibv_create_cq(b.ctx, 4, NULL, NULL, 0);
	cr_assert_not_null(cq[1], "after destroying one: %s", hcasim_last_error());
	for (int i = 0; i < n; i++)
		EXPECT_OK(ibv_destroy_cq(cq[i]));
	bare_close(&b);
}

Test(verbs_errors, reg_mr_fails_with_enomem_at_max_mr)
{
	struct tb_dev t;
	static char buf[8][4096];
	struct ibv_mr *mr[8];
	int n = 0;

	tb_config("hca.max_mr", "4");
	tb_open(&t, 0);
	cr_assert_eq(t.attr.max_mr, 4);
	while (n < 8 && (mr[n] = ibv_reg_mr(t.pd, buf[n], 4096, IBV_ACCESS_LOCAL_WRITE)) != NULL)
		n++;
	cr_assert_eq(n, 4, "registered %d MRs with max_mr 4", n);
	cr_assert_eq(errno, ENOMEM, "errno %d (%s); last error: %s", errno, strerror(errno),
		     hcasim_last_error());
	EXPECT_MSG("limit");
	EXPECT_OK(ibv_dereg_mr(mr[2]));
	mr[2] = ibv_reg_mr(t.pd, buf[2], 4096, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr[2], "after deregistering one: %s", hcasim_last_error());
	for (int i = 0; i < n; i++)
		EXPECT_OK(ibv_dereg_mr(mr[i]));
	tb_close(&t);
}

Test(verbs_errors, create_srq_fails_with_enomem_at_max_srq)
{
	struct tb_dev t;
	struct ibv_srq *srq[8];
	struct ibv_srq_attr a;
	int n = 0;

	tb_config("hca.max_srq", "3");
	tb_open(&t, 0);
	cr_assert_eq(t.attr.max_srq, 3);
	for (;;) {
		struct ibv_srq_init_attr init = { .attr = { .max_wr = 4, .max_sge = 1 } };

		if (n == 8 || !(srq[n] = ibv_create_srq(t.pd, &init)))
			break;
		n++;
	}
	cr_assert_eq(n, 3, "created %d SRQs with max_srq 3", n);
	cr_assert_eq(errno, ENOMEM, "errno %d (%s); last error: %s", errno, strerror(errno),
		     hcasim_last_error());
	EXPECT_MSG("limit");
	EXPECT_OK(ibv_query_srq(srq[0], &a));
	cr_assert_geq(a.max_wr, 4);
	EXPECT_OK(ibv_destroy_srq(srq[0]));
	srq[0] = make_srq(t.pd, 4, 1);
	for (int i = 0; i < n; i++)
		EXPECT_OK(ibv_destroy_srq(srq[i]));
	tb_close(&t);
}

Test(verbs_errors, create_ah_fails_with_enomem_at_max_ah)
{
	struct tb_dev t;
	struct ibv_ah_attr a;
	struct ibv_ah *ah[8];
	int n = 0;

	tb_config("hca.max_ah", "3");
	tb_open(&t, 0);
	cr_assert_eq(t.attr.max_ah, 3);
	ah_attr_valid(&t, &a);
	while (n < 8 && (ah[n] = ibv_create_ah(t.pd, &a)) != NULL)
		n++;
	cr_assert_eq(n, 3, "created %d AHs with max_ah 3", n);
	cr_assert_eq(errno, ENOMEM, "errno %d (%s); last error: %s", errno, strerror(errno),
		     hcasim_last_error());
	EXPECT_MSG("limit");
	EXPECT_OK(ibv_destroy_ah(ah[1]));
	ah[1] = ibv_create_ah(t.pd, &a);
	cr_assert_not_null(ah[1], "after destroying one: %s", hcasim_last_error());
	for (int i = 0; i < n; i++)
		EXPECT_OK(ibv_destroy_ah(ah[i]));
	tb_close(&t);
}
