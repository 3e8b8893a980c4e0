/* Driver: memory windows (IBA 10.6.7; docs/memory-windows.md). ALLOC_MW and DEALLOC_MW are
 * commands; a bind is a BIND_MW WQE on the QP's send queue, as rdma-core's providers post it,
 * and every rule of the bind (the region's MW_BIND right, its bounds and PD, the window's
 * state and PD) is checked by the device's key block when the requester reaches the WQE: a
 * broken rule ends it with IBV_WC_MW_BIND_ERR. The driver checks only what it alone can see:
 * live handles, the window type ibv_bind_mw takes. */
#include "driver/drv.h"

#include <errno.h>
#include <stdlib.h>

struct drv_mw {
	struct ibv_mw mw; /* user handle: rkey, handle (the window's index), type */
};

struct ibv_mw *drv_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct drv_pd *pd = DRV_OBJ(struct drv_pd, ibpd, DRV_KIND_PD);
	struct hca_mw_in in = { .type = (uint32_t)type };
	struct hca_handle_out out;
	struct drv_dev *d;
	struct drv_mw *mw;

	if (!pd) {
		drv_fail(EINVAL, "ibv_alloc_mw: not a live PD");
		return NULL;
	}
	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		drv_fail(EINVAL, "ibv_alloc_mw: type %d is neither IBV_MW_TYPE_1 nor IBV_MW_TYPE_2",
			 (int)type);
		return NULL;
	}
	d = drv_dev_of(ibpd->context);
	drv_charge_verb(d);
	in.pdn = pd->pdn;
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		drv_fail(ENOMEM, "ibv_alloc_mw: out of memory");
		return NULL;
	}
	if (drv_uctx_cmd(ibpd->context, HCA_CMD_ALLOC_MW, &in, sizeof(in), &out, sizeof(out))) {
		free(mw);
		return NULL;
	}
	mw->mw.context = ibpd->context;
	mw->mw.pd = ibpd;
	mw->mw.rkey = out.handle;
	mw->mw.handle = out.handle >> 8;
	mw->mw.type = type;
	drv_handle_add(mw, DRV_KIND_MW);
	return &mw->mw;
}

int drv_dealloc_mw(struct ibv_mw *ibmw)
{
	struct drv_mw *mw = DRV_OBJ(struct drv_mw, ibmw, DRV_KIND_MW);
	struct hca_handle_in in;
	struct hca_cmd_empty none;
	struct drv_dev *d;
	int rc;

	if (!mw)
		return drv_fail(EINVAL, "ibv_dealloc_mw: not a live memory window");
	d = drv_dev_of(mw->mw.context);
	drv_charge_verb(d);
	in = (struct hca_handle_in){ .handle = mw->mw.handle };
	rc = drv_uctx_cmd(mw->mw.context, HCA_CMD_DEALLOC_MW, &in, sizeof(in), &none, sizeof(none));
	if (rc)
		return rc;
	drv_handle_del(mw);
	free(mw);
	return 0;
}

int drv_sq_set_bind(const char *verb, uint8_t *w, struct ibv_mw *ibmw, uint32_t new_rkey,
		    const struct ibv_mw_bind_info *bi)
{
	struct drv_mw *mw = DRV_OBJ(struct drv_mw, ibmw, DRV_KIND_MW);
	struct hca_wqe_bind *b = (void *)(w + sizeof(struct hca_wqe_ctrl));

	if (!mw)
		return drv_fail(EINVAL, "%s: bind_mw.mw is not a live memory window", verb);
	if (!bi)
		return drv_fail(EINVAL, "%s: NULL bind_info", verb);
	if (bi->mr && !DRV_OBJ(struct drv_mr, bi->mr, DRV_KIND_MR))
		return drv_fail(EINVAL, "%s: bind_info.mr is not a live MR", verb);
	/* reserved bytes: zero since drv_sq_begin */
	b->addr = bi->addr;
	b->length = bi->length;
	b->mw_key = mw->mw.rkey;
	b->new_rkey = new_rkey;
	b->mr_lkey = bi->mr ? bi->mr->lkey : 0;
	b->access = bi->mw_access_flags;
	return 0;
}

/* ibv_bind_mw(3): libibverbs' inline has checked the type, a NULL mr with a range, and the
 * MR's PD against the window's (EPERM); the window takes the next key (ibv_inc_rkey) once the
 * WQE is posted, as rdma-core's providers do, and keeps it whatever the completion says. */
int drv_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *ibmw, struct ibv_mw_bind *bind)
{
	static const char verb[] = "ibv_bind_mw";
	struct drv_qp *qp = DRV_OBJ(struct drv_qp, ibqp, DRV_KIND_QP);
	struct drv_mw *mw = DRV_OBJ(struct drv_mw, ibmw, DRV_KIND_MW);
	uint32_t rkey;
	uint8_t *w;
	int rc;

	if (!qp || !mw || !bind)
		return drv_fail(EINVAL, "%s: %s", verb, !qp ? "not a live QP" : !mw ?
				"not a live memory window" : "NULL mw_bind");
	if (mw->mw.type != IBV_MW_TYPE_1)
		return drv_fail(EINVAL, "%s: a type 2 window is bound with IBV_WR_BIND_MW", verb);
	drv_charge_verb(drv_dev_of(ibqp->context));
	rkey = ibv_inc_rkey(mw->mw.rkey);
	rc = drv_sq_begin(qp, verb, HCA_WQE_OP_BIND_MW, bind->send_flags, 0, &w);
	if (!rc)
		rc = drv_sq_set_bind(verb, w, ibmw, rkey, &bind->bind_info);
	if (rc)
		return rc;
	drv_sq_commit(qp, bind->wr_id);
	drv_sq_ring(drv_dev_of(ibqp->context), qp, 1);
	mw->mw.rkey = rkey;
	return 0;
}
