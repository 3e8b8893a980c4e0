/* Driver: direct verbs (hcasimdv.h) — hand a program the rings, doorbell records and UAR page
 * of its verbs objects, and carry its doorbell writes to BAR0 as posted MMIO writes, the only
 * way a host reaches the device. Nothing here checks a WQE: the device does. */
#include "driver/drv.h"
#include "driver/hcasimdv.h"

#include <errno.h>
#include <string.h>

static struct hcasimdv_uar uar_of(struct ibv_context *ctx)
{
	/* An object rings the UAR page of its context (its user context's). */
	return (struct hcasimdv_uar){ .context = ctx,
				      .offset = drv_uar(drv_ctx_known(ctx)),
				      .size = HCA_UAR_PAGE_BYTES,
				      .bf_offset = HCA_UAR_BF,
				      .bf_size = HCA_UAR_BF_BYTES };
}

static void qp_out(const struct drv_qp *qp, struct hcasimdv_qp *o)
{
	const struct ibv_qp *q = &qp->qpx.qp_base;

	memset(o, 0, sizeof(*o));
	o->qpn = q->qp_num;
	o->qp_type = (uint32_t)q->qp_type;
	o->dbrec = qp->db;
	o->sq = (struct hcasimdv_wq){ .buf = qp->sq, .wqe_cnt = qp->sq_entries,
				      .stride = qp->sq_stride, .head = qp->sq_pi,
				      .max_sge = qp->cap.max_send_sge,
				      .max_inline = qp->cap.max_inline_data };
	if (qp->rq)
		o->rq = (struct hcasimdv_wq){ .buf = qp->rq, .wqe_cnt = qp->rq_entries,
					      .stride = qp->rq_stride, .head = qp->rq_pi,
					      .max_sge = qp->cap.max_recv_sge };
	o->uar = uar_of(q->context);
}

int hcasimdv_init_obj(struct hcasimdv_obj *obj, uint64_t type)
{
	const uint64_t known = HCASIMDV_OBJ_QP | HCASIMDV_OBJ_CQ | HCASIMDV_OBJ_SRQ;
	struct drv_qp *qp = NULL;
	struct drv_cq *cq = NULL;
	struct drv_srq *srq = NULL;

	if (!obj)
		return drv_fail(EINVAL, "hcasimdv_init_obj: NULL obj");
	if (type & ~known)
		return drv_fail(EINVAL, "hcasimdv_init_obj: obj_type bits 0x%llx unknown",
				(unsigned long long)(type & ~known));
	/* Check everything before writing anything. */
	if (type & HCASIMDV_OBJ_QP) {
		qp = DRV_OBJ(struct drv_qp, obj->qp.in, DRV_KIND_QP);
		if (!qp || !obj->qp.out)
			return drv_fail(EINVAL, "hcasimdv_init_obj: qp.%s", !qp ? "in is not a live QP"
									      : "out is NULL");
	}
	if (type & HCASIMDV_OBJ_CQ) {
		cq = DRV_OBJ(struct drv_cq, obj->cq.in, DRV_KIND_CQ);
		if (!cq || !obj->cq.out)
			return drv_fail(EINVAL, "hcasimdv_init_obj: cq.%s", !cq ? "in is not a live CQ"
									      : "out is NULL");
	}
	if (type & HCASIMDV_OBJ_SRQ) {
		srq = DRV_OBJ(struct drv_srq, obj->srq.in, DRV_KIND_SRQ);
		if (!srq || !obj->srq.out)
			return drv_fail(EINVAL, "hcasimdv_init_obj: srq.%s",
					!srq ? "in is not a live SRQ" : "out is NULL");
	}
	if (qp)
		qp_out(qp, obj->qp.out);
	if (cq)
		*obj->cq.out = (struct hcasimdv_cq){ .buf = cq->ring,
						     .cqe_cnt = 1u << cq->log_size,
						     .cqe_size = HCA_CQE_BYTES,
						     .cqn = cq->cqn,
						     .ci = cq->ci,
						     .dbrec = cq->db,
						     .uar = uar_of(cq->cq.context) };
	if (srq)
		*obj->srq.out = (struct hcasimdv_srq){
			.srqn = srq->srqn,
			.dbrec = srq->db,
			.wq = { .buf = srq->ring, .wqe_cnt = srq->entries, .stride = srq->stride,
				.head = srq->pi, .max_sge = srq->max_sge },
			.uar = uar_of(srq->srq.context) };
	return 0;
}

/* The device behind a UAR description, or NULL (message recorded). */
static struct drv_dev *uar_dev(const struct hcasimdv_uar *uar, const char *verb)
{
	if (!uar || !drv_ctx_of(uar->context)) {
		drv_fail(EINVAL, "%s: %s", verb, !uar ? "NULL uar" : "uar.context is not a live "
			 "context");
		return NULL;
	}
	if (uar->offset != drv_uar(drv_ctx_known(uar->context))) {
		drv_fail(EINVAL, "%s: uar.offset 0x%x is not a UAR page of this context", verb,
			 uar->offset);
		return NULL;
	}
	return drv_dev_of(uar->context);
}

int hcasimdv_uar_write64(const struct hcasimdv_uar *uar, uint32_t offset, uint64_t value)
{
	struct drv_dev *d = uar_dev(uar, "hcasimdv_uar_write64");

	if (!d)
		return errno;
	if (offset % 8 || offset > HCA_UAR_PAGE_BYTES - 8)
		return drv_fail(EINVAL, "hcasimdv_uar_write64: offset 0x%x is not an 8-byte "
				"aligned offset inside the %u-byte UAR page", offset,
				HCA_UAR_PAGE_BYTES);
	/* wmb() on silicon: the program's WQE stores before the doorbell. */
	hcasim_mmio_write(d->fn, 0, uar->offset + offset, 8, value);
	return 0;
}

int hcasimdv_uar_write_bf(const struct hcasimdv_uar *uar, const void *buf, size_t len)
{
	struct drv_dev *d = uar_dev(uar, "hcasimdv_uar_write_bf");

	if (!d)
		return errno;
	if (!buf || !len || len % 64 || len > HCA_UAR_BF_BYTES)
		return drv_fail(EINVAL, "hcasimdv_uar_write_bf: %s len %zu (a multiple of 64, at "
				"most %u)", !buf ? "NULL buf," : "", len, HCA_UAR_BF_BYTES);
	hcasim_mmio_write_block(d->fn, 0, uar->offset + HCA_UAR_BF, buf, (unsigned)len);
	return 0;
}

int hcasimdv_query_context(struct ibv_context *ctx, struct hcasimdv_context *out)
{
	struct drv_ctx *c = drv_ctx_of(ctx);

	if (!c || !out)
		return drv_fail(EINVAL, "hcasimdv_query_context: %s",
				!c ? "not a live context" : "NULL out");
	memset(out, 0, sizeof(*out));
	out->uid = c->uid;
	out->pasid = c->pasid;
	out->uar = uar_of(ctx);
	return 0;
}

int hcasimdv_cmd(struct ibv_context *ctx, uint16_t opcode, const void *in, size_t in_len,
		 void *out, size_t out_len)
{
	const struct hca_cmd_desc *c = hca_cmd_find(opcode);

	if (!drv_ctx_of(ctx))
		return drv_fail(EINVAL, "hcasimdv_cmd: not a live context");
	if (!c)
		return drv_fail(EINVAL, "hcasimdv_cmd: opcode 0x%x is no command of the device",
				opcode);
	if (in_len != c->in_len || out_len != c->out_len || (in_len && !in) || (out_len && !out))
		return drv_fail(EINVAL, "hcasimdv_cmd: %s takes %zu input and %zu output bytes "
				"(given %zu%s and %zu%s)", c->name, c->in_len, c->out_len, in_len,
				in_len && !in ? " at NULL" : "", out_len,
				out_len && !out ? " at NULL" : "");
	return drv_uctx_cmd(ctx, opcode, in, in_len, out, out_len);
}
