/* owner: ownership between the contexts of one device (docs/architecture.md#ownership). Each
 * context gets a user context (uid) from the device when it opens: its UAR page and its IOMMU
 * domain. A command through one context's page on another context's QP, CQ, SRQ, MR, window or
 * PD is refused with NOT_OWNER naming the handle; a doorbell through a foreign page is dropped
 * and counted; a memory key may cover only memory of the creating context's domain; the device
 * owner's commands are refused to contexts. Every refusal leaves the victim working: an RC
 * pair of another context on the same device still moves a SEND afterwards. */
#include "model/hw/hca_hw.h"
#include "testbench/tb.h"

#include <criterion/criterion.h>

#include "driver/hcasimdv.h"
#include "sim/hcasim_bus.h"
#include "testbench/tb_expect.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES 4096

/* The rogue: a second context on the victim's device, with a PD and a CQ of its own. */
struct rogue {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct hcasimdv_context hc;
};

static void rogue_open(struct rogue *r, struct ibv_context *victim)
{
	r->ctx = ibv_open_device(victim->device);
	cr_assert_not_null(r->ctx, "%s", hcasim_last_error());
	r->pd = ibv_alloc_pd(r->ctx);
	r->cq = ibv_create_cq(r->ctx, 16, NULL, NULL, 0);
	cr_assert(r->pd && r->cq, "%s", hcasim_last_error());
	cr_assert_eq(hcasimdv_query_context(r->ctx, &r->hc), 0, "%s", hcasim_last_error());
}

static void rogue_close(struct rogue *r)
{
	cr_assert_eq(ibv_destroy_cq(r->cq), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_dealloc_pd(r->pd), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_close_device(r->ctx), 0, "%s", hcasim_last_error());
}

/* cmd through ctx is refused as another context's: EACCES, and the message names field. */
#define EXPECT_FOREIGN(ctx, op, in, out, field)                                                    \
	do {                                                                                       \
		EXPECT_RC_ERR(hcasimdv_cmd(ctx, HCA_CMD_##op, &(in), sizeof(in), &(out),          \
					   sizeof(out)),                                           \
			      EACCES);                                                             \
		cr_assert(strstr(hcasim_last_error(), #op ": field " field " names an object of " \
						      "another user context"),                     \
			  "%s", hcasim_last_error());                                              \
	} while (0)

static uint32_t cqn_of(struct ibv_cq *cq)
{
	struct hcasimdv_cq c;
	struct hcasimdv_obj o = { .cq = { cq, &c } };

	cr_assert_eq(hcasimdv_init_obj(&o, HCASIMDV_OBJ_CQ), 0, "%s", hcasim_last_error());
	return c.cqn;
}

static struct hcasim_fn *fn_of(struct ibv_context *ctx)
{
	struct hcasim_fn *fns[8];
	int n = hcasim_bus_enumerate(fns, 8);

	for (int i = 0; i < n; i++)
		if (!strcmp(hcasim_fn_name(fns[i]), ctx->device->name))
			return fns[i];
	cr_assert_fail("no PCIe function %s", ctx->device->name);
	return NULL;
}

Test(owner, each_context_gets_its_own_user_context_uar_page_and_iommu_domain)
{
	struct tb_dev t;
	struct ibv_context *c2, *c3;
	struct hcasimdv_context h1, h2, h3;
	uint32_t uid2;

	tb_open(&t, 0);
	c2 = ibv_open_device(t.ctx->device);
	cr_assert_not_null(c2, "%s", hcasim_last_error());
	cr_assert_eq(hcasimdv_query_context(t.ctx, &h1), 0);
	cr_assert_eq(hcasimdv_query_context(c2, &h2), 0);
	cr_assert(h1.uid >= 1 && h1.uid < HCA_UAR_PAGES && h2.uid >= 1 && h2.uid < HCA_UAR_PAGES);
	cr_assert_neq(h1.uid, h2.uid);
	cr_assert_neq(h1.pasid, h2.pasid);
	cr_assert(h1.pasid && h2.pasid, "a context's domain is never the default domain 0");
	cr_assert_eq(h2.uar.offset, HCA_REGION_UAR + h2.uid * HCA_UAR_PAGE_BYTES);
	EXPECT_RC_ERR(hcasimdv_query_context(c2, NULL), EINVAL);
	uid2 = h2.uid;
	cr_assert_eq(ibv_close_device(c2), 0, "%s", hcasim_last_error());
	EXPECT_RC_ERR(hcasimdv_query_context(c2, &h2), EINVAL);
	/* a closed user context is gone: the device hands out another page next */
	c3 = ibv_open_device(t.ctx->device);
	cr_assert_not_null(c3, "%s", hcasim_last_error());
	cr_assert_eq(hcasimdv_query_context(c3, &h3), 0);
	cr_assert_neq(h3.uid, h1.uid);
	cr_assert_neq(h3.uid, uid2, "allocation rotates, as for every device object");
	cr_assert_eq(ibv_close_device(c3), 0, "%s", hcasim_last_error());
	tb_close(&t);
}

Test(owner, commands_on_another_contexts_objects_are_refused_and_change_nothing)
{
	struct tb_pair p;
	struct rogue r;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq;
	struct ibv_mw *mw;
	struct hca_handle_in h = { 0 };
	struct hca_cmd_empty none;
	struct hca_qp_query_out qo;
	struct hca_qp_modify_in mi = { 0 };
	struct hca_qp_modify_out mo;
	struct hca_cq_resize_in ci = { 0 };
	struct hca_cq_out co;
	struct hca_srq_modify_in si = { 0 };
	struct hca_srq_out so;
	struct hca_qp_create_in qi = { 0 };
	struct hca_qp_create_out qco;
	struct hca_mw_in wi = { 0 };
	struct hca_handle_out ho;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	uint32_t srqn;

	tb_pair_open(&p, IBV_QPT_RC, BYTES, 3);
	srq = ibv_create_srq(p.a.pd, &sa);
	mw = ibv_alloc_mw(p.a.pd, IBV_MW_TYPE_2);
	cr_assert(srq && mw, "%s", hcasim_last_error());
	cr_assert_eq(ibv_get_srq_num(srq, &srqn), 0);
	rogue_open(&r, p.a.ctx);

	h.handle = p.qa->qp_num;
	EXPECT_FOREIGN(r.ctx, QUERY_QP, h, qo, "handle");
	EXPECT_FOREIGN(r.ctx, DESTROY_QP, h, none, "handle");
	mi.qpn = p.qa->qp_num;
	mi.attr_mask = HCA_QPA_STATE;
	mi.next_state = HCA_QPS_ERR;
	EXPECT_FOREIGN(r.ctx, MODIFY_QP, mi, mo, "qpn");
	h.handle = cqn_of(p.a.cq);
	EXPECT_FOREIGN(r.ctx, DESTROY_CQ, h, none, "handle");
	ci.cqn = h.handle;
	EXPECT_FOREIGN(r.ctx, RESIZE_CQ, ci, co, "cqn");
	h.handle = srqn;
	EXPECT_FOREIGN(r.ctx, QUERY_SRQ, h, so, "handle");
	EXPECT_FOREIGN(r.ctx, DESTROY_SRQ, h, none, "handle");
	si.srqn = srqn;
	si.attr_mask = 2;
	si.srq_limit = 1;
	EXPECT_FOREIGN(r.ctx, MODIFY_SRQ, si, so, "srqn");
	h.handle = p.src->lkey;
	EXPECT_FOREIGN(r.ctx, DESTROY_MKEY, h, none, "handle");
	h.handle = mw->rkey >> 8;
	EXPECT_FOREIGN(r.ctx, DEALLOC_MW, h, none, "handle");
	h.handle = p.a.pd->handle;
	EXPECT_FOREIGN(r.ctx, DEALLOC_PD, h, none, "handle");
	/* nor may a context build on another's objects */
	wi.pdn = p.a.pd->handle;
	wi.type = HCA_MW_TYPE_1;
	EXPECT_FOREIGN(r.ctx, ALLOC_MW, wi, ho, "pdn");
	qi.type = HCA_QPT_RC;
	qi.pdn = p.a.pd->handle;
	EXPECT_FOREIGN(r.ctx, CREATE_QP, qi, qco, "pdn");
	qi.pdn = r.pd->handle;
	qi.send_cqn = cqn_of(p.a.cq);
	EXPECT_FOREIGN(r.ctx, CREATE_QP, qi, qco, "send_cqn");

	/* the victim is intact: its QP is still in RTS and moves data */
	cr_assert_eq(ibv_query_qp(p.qa, &attr, IBV_QP_STATE, &init), 0);
	cr_assert_eq(attr.qp_state, IBV_QPS_RTS);
	tb_pair_send(&p, 512);
	rogue_close(&r);
	cr_assert_eq(ibv_dealloc_mw(mw), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_srq(srq), 0, "%s", hcasim_last_error());
	tb_pair_close(&p);
}

struct warns {
	unsigned foreign; /* warn.doorbell reason=foreign_uar */
	unsigned owner;   /* warn.owner */
};

static void on_warn(void *arg, uint64_t t, int dev, const char *ev, const char *fields)
{
	struct warns *w = arg;
	char reason[32] = "";

	(void)t;
	(void)dev;
	if (!strcmp(ev, "warn.doorbell") &&
	    hcasim_trace_field_str(fields, "reason", reason, sizeof(reason)) &&
	    !strcmp(reason, "foreign_uar"))
		w->foreign++;
	if (!strcmp(ev, "warn.owner"))
		w->owner++;
}

Test(owner, a_doorbell_through_another_contexts_uar_page_is_dropped_and_counted)
{
	struct tb_pair p;
	struct rogue r;
	struct warns w = { 0 };
	struct hcasim_dev_counters before, after;
	struct hcasimdv_qp q;
	struct hcasimdv_obj o = { 0 };
	uint8_t bf[HCA_UAR_BF_BYTES] = { 0 };
	uint64_t db;
	int dev;

	tb_pair_open(&p, IBV_QPT_RC, BYTES, 5);
	o.qp.in = p.qa;
	o.qp.out = &q;
	cr_assert_eq(hcasimdv_init_obj(&o, HCASIMDV_OBJ_QP), 0, "%s", hcasim_last_error());
	rogue_open(&r, p.a.ctx);
	dev = hcasim_fn_devno(fn_of(p.a.ctx));
	cr_assert_eq(hcasim_dev_counters(dev, &before), 0);
	cr_assert_eq(hcasim_trace_observe("warn", on_warn, &w), 0);
	/* every doorbell of the victim's queues, rung through the rogue's own page: a send
	 * doorbell that would start the stale WQE in slot 0, a receive doorbell, an arm of its CQ
	 * and a BlueFlame write of a whole WQE */
	cr_assert_eq(hcasimdv_uar_write64(&r.hc.uar, HCA_UAR_SQ_DB,
					  HCA_UAR_DB(q.qpn, q.sq.head + 1)), 0);
	cr_assert_eq(hcasimdv_uar_write64(&r.hc.uar, HCA_UAR_RQ_DB,
					  HCA_UAR_DB(q.qpn, q.rq.head + 1)), 0);
	cr_assert_eq(hcasimdv_uar_write64(&r.hc.uar, HCA_UAR_CQ_DB,
					  HCA_UAR_CQ_DB_VAL(cqn_of(p.a.cq), HCA_CQ_DB_ARM_NEXT, 0)),
		     0);
	db = HCA_UAR_DB(q.qpn, q.sq.head + 1);
	memcpy(bf, &db, sizeof(db));
	memcpy(bf + 16, q.sq.buf, HCA_WQE_BASE_BYTES);
	cr_assert_eq(hcasimdv_uar_write_bf(&r.hc.uar, bf, 128), 0);
	hcasim_run_for_ps(1000000);
	cr_assert_eq(hcasim_dev_counters(dev, &after), 0);
	hcasim_trace_observe("", NULL, NULL);
	cr_assert_eq(after.bad_doorbells - before.bad_doorbells, 4, "bad doorbells %llu -> %llu",
		     (unsigned long long)before.bad_doorbells,
		     (unsigned long long)after.bad_doorbells);
	cr_assert_eq(w.foreign, 4, "warn.doorbell reason=foreign_uar seen %u times", w.foreign);
	/* the victim saw none of it: its next SEND (slot 0) goes out once and completes */
	tb_pair_send(&p, 256);
	rogue_close(&r);
	tb_pair_close(&p);
}

Test(owner, a_memory_key_covers_only_memory_of_its_contexts_iommu_domain)
{
	struct tb_dev t;
	struct rogue r;
	struct hcasim_fn *fn;
	struct hca_mkey_in mi = { 0 };
	struct hca_mkey_out mo;
	struct hca_handle_in h = { 0 };
	struct hca_cmd_empty none;
	struct hcasimdv_context mine;
	struct warns w = { 0 };
	void *buf = aligned_alloc(4096, BYTES);
	int64_t in_mine, in_default;
	uint64_t iova_mine, iova_default;

	cr_assert_not_null(buf);
	tb_open(&t, 0);
	rogue_open(&r, t.ctx);
	fn = fn_of(t.ctx);
	cr_assert_eq(hcasimdv_query_context(t.ctx, &mine), 0);
	in_mine = hcasim_dma_map_pasid(fn, mine.pasid, buf, BYTES,
				       HCASIM_DMA_READ | HCASIM_DMA_WRITE, &iova_mine);
	in_default = hcasim_dma_map(fn, buf, BYTES, HCASIM_DMA_READ | HCASIM_DMA_WRITE,
				    &iova_default);
	cr_assert(in_mine > 0 && in_default > 0, "%s", hcasim_last_error());
	cr_assert_eq(hcasim_dma_map_pasid(fn, 1u << 20, buf, BYTES, HCASIM_DMA_READ, NULL),
		     -EINVAL, "a PASID has 20 bits");
	cr_assert_eq(hcasim_trace_observe("warn", on_warn, &w), 0);

	/* the rogue names memory of the victim's domain, then of the default domain */
	mi.pdn = r.pd->handle;
	mi.access = HCA_ACCESS_LOCAL_WRITE;
	mi.start = iova_mine;
	mi.length = BYTES;
	EXPECT_RC_ERR(hcasimdv_cmd(r.ctx, HCA_CMD_CREATE_MKEY, &mi, sizeof(mi), &mo, sizeof(mo)),
		      EACCES);
	cr_assert(strstr(hcasim_last_error(), "CREATE_MKEY: field start: memory outside this "
					      "context's IOMMU domain"),
		  "%s", hcasim_last_error());
	mi.start = iova_default;
	EXPECT_RC_ERR(hcasimdv_cmd(r.ctx, HCA_CMD_CREATE_MKEY, &mi, sizeof(mi), &mo, sizeof(mo)),
		      EACCES);
	/* the owner of the domain may: the same command through its own page succeeds */
	mi.pdn = t.pd->handle;
	mi.start = iova_mine;
	cr_assert_eq(hcasimdv_cmd(t.ctx, HCA_CMD_CREATE_MKEY, &mi, sizeof(mi), &mo, sizeof(mo)),
		     0, "%s", hcasim_last_error());
	hcasim_trace_observe("", NULL, NULL);
	cr_assert_eq(w.owner, 2, "warn.owner seen %u times", w.owner);
	h.handle = mo.lkey;
	cr_assert_eq(hcasimdv_cmd(t.ctx, HCA_CMD_DESTROY_MKEY, &h, sizeof(h), &none, sizeof(none)),
		     0, "%s", hcasim_last_error());
	/* and the verbs do it for every context: ibv_reg_mr maps into the context's domain */
	{
		struct ibv_mr *mr = ibv_reg_mr(r.pd, buf, BYTES, IBV_ACCESS_LOCAL_WRITE);

		cr_assert_not_null(mr, "%s", hcasim_last_error());
		cr_assert_eq(ibv_dereg_mr(mr), 0);
	}
	cr_assert_eq(hcasim_dma_unmap(fn, in_mine), 0);
	cr_assert_eq(hcasim_dma_unmap(fn, in_default), 0);
	rogue_close(&r);
	tb_close(&t);
	free(buf);
}

Test(owner, the_device_owners_commands_are_refused_to_a_context)
{
	struct tb_pair p;
	struct hca_eq_create_in eq = { 0 };
	struct hca_qp_force_in fi = { 0 };
	struct hca_uctx_in ui = { .pasid = 77 };
	struct hca_handle_in h = { 0 };
	struct hca_handle_out ho;
	struct hca_cmd_empty none;
	struct hcasimdv_context hc;
	const struct {
		uint16_t op;
		const void *in;
		size_t in_len;
		void *out;
		size_t out_len;
	} cmds[] = {
		{ HCA_CMD_CREATE_EQ, &eq, sizeof(eq), &ho, sizeof(ho) },
		{ HCA_CMD_DESTROY_EQ, &h, sizeof(h), &none, sizeof(none) },
		{ HCA_CMD_DEBUG_FORCE_QP_STATE, &fi, sizeof(fi), &none, sizeof(none) },
		{ HCA_CMD_ALLOC_UCTX, &ui, sizeof(ui), &ho, sizeof(ho) },
		{ HCA_CMD_DEALLOC_UCTX, &h, sizeof(h), &none, sizeof(none) },
		{ HCA_CMD_TEARDOWN_HCA, &none, sizeof(none), &none, sizeof(none) },
	};
	char want[96];

	tb_pair_open(&p, IBV_QPT_RC, BYTES, 7);
	cr_assert_eq(hcasimdv_query_context(p.a.ctx, &hc), 0);
	fi.qpn = p.qa->qp_num;
	fi.state = HCA_QPS_ERR;
	h.handle = hc.uid;
	snprintf(want, sizeof(want), "the device owner's command alone, issued for user context %u",
		 hc.uid);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		EXPECT_RC_ERR(hcasimdv_cmd(p.a.ctx, cmds[i].op, cmds[i].in, cmds[i].in_len,
					   cmds[i].out, cmds[i].out_len),
			      EACCES);
		cr_assert(strstr(hcasim_last_error(), want), "%s", hcasim_last_error());
	}
	/* hcasimdv_cmd's own checks */
	EXPECT_RC_ERR(hcasimdv_cmd(p.a.ctx, 0x0999, &none, sizeof(none), &none, sizeof(none)),
		      EINVAL);
	EXPECT_RC_ERR(hcasimdv_cmd(p.a.ctx, HCA_CMD_QUERY_QP, &h, sizeof(h) - 1, &none,
				   sizeof(none)),
		      EINVAL);
	EXPECT_RC_ERR(hcasimdv_cmd(NULL, HCA_CMD_ALLOC_PD, &none, sizeof(none), &ho, sizeof(ho)),
		      EINVAL);
	tb_pair_send(&p, 128); /* still up: TEARDOWN_HCA and the forced state never happened */
	tb_pair_close(&p);
}

Test(owner, closing_a_context_destroys_what_it_left_as_uverbs_does)
{
	struct tb_dev t;
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	struct ibv_mw *mw;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_ah_attr aa = { .dlid = 1, .port_num = 1 };
	union ibv_gid mgid = { .raw = { 0xff, 0x12, 0x40, 0x1b } };
	struct hca_handle_in h = { 0 };
	struct hca_qp_query_out qo;
	void *buf = aligned_alloc(4096, BYTES);
	uint32_t qpn;

	cr_assert_not_null(buf);
	tb_open(&t, 0);
	c = ibv_open_device(t.ctx->device);
	cr_assert_not_null(c, "%s", hcasim_last_error());
	pd = ibv_alloc_pd(c);
	ch = ibv_create_comp_channel(c);
	cq = ibv_create_cq(c, 8, NULL, ch, 0);
	cr_assert(pd && ch && cq, "%s", hcasim_last_error());
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	srq = ibv_create_srq(pd, &sa);
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	mr = ibv_reg_mr(pd, buf, BYTES, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	ah = ibv_create_ah(pd, &aa);
	cr_assert(qp && srq && mw && mr && ah, "%s", hcasim_last_error());
	cr_assert_eq(ibv_attach_mcast(qp, &mgid, 0xc001), 0, "%s", hcasim_last_error());
	qpn = qp->qp_num;

	/* everything left behind: the close takes it all down and the device's user context
	 * closes (DEALLOC_UCTX refuses while it owns anything) */
	cr_assert_eq(ibv_close_device(c), 0, "%s", hcasim_last_error());
	h.handle = qpn;
	EXPECT_RC_ERR(hcasimdv_cmd(t.ctx, HCA_CMD_QUERY_QP, &h, sizeof(h), &qo, sizeof(qo)),
		      EINVAL);
	cr_assert(strstr(hcasim_last_error(), "names no live object"), "%s", hcasim_last_error());
	tb_close(&t);
	free(buf);
}

Test(owner, a_context_closed_over_objects_made_by_hand_reports_them)
{
	struct tb_dev t;
	struct ibv_context *c;
	struct hca_cmd_empty none = { 0 };
	struct hca_handle_out pd;
	struct hca_handle_in h = { 0 };
	struct hcasimdv_context hc;

	tb_open(&t, 0);
	c = ibv_open_device(t.ctx->device);
	cr_assert_not_null(c, "%s", hcasim_last_error());
	cr_assert_eq(hcasimdv_query_context(c, &hc), 0);
	cr_assert_eq(hcasimdv_cmd(c, HCA_CMD_ALLOC_PD, &none, sizeof(none), &pd, sizeof(pd)), 0,
		     "%s", hcasim_last_error());
	/* the driver does not know the PD: the device keeps the user context open for it */
	EXPECT_M1_ERR(ibv_close_device(c), EBUSY);
	cr_assert(strstr(hcasim_last_error(), "DEALLOC_UCTX: still in use by 1 object(s)"), "%s",
		  hcasim_last_error());
	/* nobody else may free it: it is the closed context's */
	h.handle = pd.handle;
	EXPECT_RC_ERR(hcasimdv_cmd(t.ctx, HCA_CMD_DEALLOC_PD, &h, sizeof(h), &none, sizeof(none)),
		      EACCES);
	tb_close(&t);
}
