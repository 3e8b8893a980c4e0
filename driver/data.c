/* Driver: the data path the verbs.h inline functions dispatch to — posting work requests as
 * WQEs in the rings and ringing doorbells, polling CQEs, arming CQs — plus completion events
 * on channels, affiliated async events, and the *_str helpers.
 *
 * Memory ordering, step by step (on silicon; the simulator's stores are visible at once):
 *   post: WQE stores, then wmb() so the device cannot see the doorbell before the WQE, then
 *         the 64-bit UAR doorbell write (one TLP, so it is never torn);
 *   poll: read the CQE's owner byte, then rmb() before reading its body, then after the batch
 *         store the consumer index into the CQ doorbell record (the device reads it when the
 *         ring looks full);
 *   arm:  the arm doorbell carries the consumer index, so CQEs the device wrote after the last
 *         poll raise the event at once instead of being missed. */
#include "driver/drv.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SAME_OP(n, m) _Static_assert((unsigned)HCA_WQE_OP_##n == (unsigned)IBV_WR_##m, #n)
SAME_OP(RDMA_WRITE, RDMA_WRITE);
SAME_OP(RDMA_WRITE_IMM, RDMA_WRITE_WITH_IMM);
SAME_OP(SEND, SEND);
SAME_OP(SEND_IMM, SEND_WITH_IMM);
SAME_OP(RDMA_READ, RDMA_READ);
SAME_OP(ATOMIC_CMP_SWP, ATOMIC_CMP_AND_SWP);
SAME_OP(ATOMIC_FETCH_ADD, ATOMIC_FETCH_AND_ADD);
SAME_OP(LOCAL_INV, LOCAL_INV);
SAME_OP(BIND_MW, BIND_MW);
SAME_OP(SEND_INV, SEND_WITH_INV);
#undef SAME_OP
_Static_assert((unsigned)HCA_QPT_RC == (unsigned)IBV_QPT_RC, "RC");
_Static_assert((unsigned)HCA_QPT_UC == (unsigned)IBV_QPT_UC, "UC");
_Static_assert((unsigned)HCA_QPT_UD == (unsigned)IBV_QPT_UD, "UD");
#define SAME_WC(n, m) _Static_assert((unsigned)HCA_##n == (unsigned)IBV_##m, #n)
SAME_WC(CQE_OP_SEND, WC_SEND);
SAME_WC(CQE_OP_RDMA_WRITE, WC_RDMA_WRITE);
SAME_WC(CQE_OP_RDMA_READ, WC_RDMA_READ);
SAME_WC(CQE_OP_COMP_SWAP, WC_COMP_SWAP);
SAME_WC(CQE_OP_FETCH_ADD, WC_FETCH_ADD);
SAME_WC(CQE_OP_BIND_MW, WC_BIND_MW);
SAME_WC(CQE_OP_LOCAL_INV, WC_LOCAL_INV);
SAME_WC(WC_MW_BIND_ERR, WC_MW_BIND_ERR);
SAME_WC(CQE_OP_RECV, WC_RECV);
SAME_WC(CQE_OP_RECV_RDMA_WITH_IMM, WC_RECV_RDMA_WITH_IMM);
SAME_WC(WC_SUCCESS, WC_SUCCESS);
SAME_WC(WC_LOC_LEN_ERR, WC_LOC_LEN_ERR);
SAME_WC(WC_LOC_QP_OP_ERR, WC_LOC_QP_OP_ERR);
SAME_WC(WC_LOC_PROT_ERR, WC_LOC_PROT_ERR);
SAME_WC(WC_WR_FLUSH_ERR, WC_WR_FLUSH_ERR);
SAME_WC(WC_REM_INV_REQ_ERR, WC_REM_INV_REQ_ERR);
SAME_WC(WC_REM_ACCESS_ERR, WC_REM_ACCESS_ERR);
SAME_WC(WC_REM_OP_ERR, WC_REM_OP_ERR);
SAME_WC(WC_RETRY_EXC_ERR, WC_RETRY_EXC_ERR);
SAME_WC(WC_RNR_RETRY_EXC_ERR, WC_RNR_RETRY_EXC_ERR);
SAME_WC(WC_GENERAL_ERR, WC_GENERAL_ERR);
#undef SAME_WC

/* ---- number maps ---- */

static void *map_set(void *arr, uint32_t *n, uint32_t i, void *v)
{
	void **a = arr;

	if (i >= *n) {
		uint32_t cap = *n ? *n : 64;

		while (cap <= i)
			cap *= 2;
		a = realloc(a, cap * sizeof(*a));
		if (!a) {
			fprintf(stderr, "hcasim: out of memory for the driver's object maps\n");
			abort();
		}
		memset(a + *n, 0, (cap - *n) * sizeof(*a));
		*n = cap;
	}
	a[i] = v;
	return a;
}

void drv_map_qp(struct drv_dev *d, uint32_t qpn, struct drv_qp *qp)
{
	d->qp_by_num = map_set(d->qp_by_num, &d->nqp_by_num, qpn, qp);
}

void drv_map_cq(struct drv_dev *d, uint32_t cqn, struct drv_cq *cq)
{
	d->cq_by_num = map_set(d->cq_by_num, &d->ncq_by_num, cqn, cq);
}

void drv_map_srq(struct drv_dev *d, uint32_t srqn, struct drv_srq *srq)
{
	d->srq_by_num = map_set(d->srq_by_num, &d->nsrq_by_num, srqn, srq);
}

static struct drv_qp *qp_num(struct drv_dev *d, uint32_t n)
{
	return n < d->nqp_by_num ? d->qp_by_num[n] : NULL;
}

static struct drv_cq *cq_num(struct drv_dev *d, uint32_t n)
{
	return n < d->ncq_by_num ? d->cq_by_num[n] : NULL;
}

static struct drv_srq *srq_num(struct drv_dev *d, uint32_t n)
{
	return n < d->nsrq_by_num ? d->srq_by_num[n] : NULL;
}

/* A doorbell through the UAR page of the object's context (ctx: a live context, checked by
 * the verb that rings). */
static void uar_db(struct ibv_context *ctx, uint32_t reg, uint64_t val)
{
	const struct drv_ctx *c = drv_ctx_known(ctx);

	/* wmb(): WQE (or consumer index) stores before the doorbell. */
	hcasim_mmio_write(c->dev->fn, 0, drv_uar(c) + reg, 8, val);
}

/* ---- send WQEs: built alike by ibv_post_send and by the ibv_wr_* API (qp_ex.c) ---- */

uint8_t *drv_sq_wqe(const struct drv_qp *qp, uint32_t idx)
{
	return (uint8_t *)qp->sq + (size_t)(idx % qp->sq_entries) * qp->sq_stride;
}

int drv_sq_begin(struct drv_qp *qp, const char *verb, unsigned opcode, unsigned send_flags,
		 uint32_t imm_data, uint8_t **wqe)
{
	const struct ibv_qp *ibqp = &qp->qpx.qp_base;
	struct hca_wqe_ctrl *c;
	uint8_t *w;

	/* IBA 10.3.1 state table: posting sends needs RTS, SQD, SQE or ERR (flushed). */
	if (ibqp->state == IBV_QPS_RESET || ibqp->state == IBV_QPS_INIT ||
	    ibqp->state == IBV_QPS_RTR)
		return drv_fail(EINVAL, "%s: QP 0x%x is in a state that takes no sends", verb,
				ibqp->qp_num);
	/* The opcodes each QP type takes come from model/hw/wqe.def, as the device checks
	 * them. */
	if (!hca_wqe_op_allowed((unsigned)ibqp->qp_type, opcode))
		return drv_fail(EINVAL, "%s: opcode %u not valid on this QP type", verb, opcode);
	if (send_flags & ~(unsigned)(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
				     IBV_SEND_INLINE))
		return drv_fail(EINVAL, "%s: send_flags 0x%x not supported", verb, send_flags);
	if (qp->sq_pi - qp->sq_ci >= qp->cap.max_send_wr)
		return drv_fail(ENOMEM, "%s: send queue full (%u WRs)", verb, qp->cap.max_send_wr);
	w = drv_sq_wqe(qp, qp->sq_pi);
	memset(w, 0, HCA_WQE_BASE_BYTES);
	c = (void *)w;
	c->opcode = (uint8_t)opcode;
	c->flags = (send_flags & IBV_SEND_SIGNALED || qp->sq_sig_all ? HCA_WQE_F_SIGNALED : 0) |
		   (send_flags & IBV_SEND_SOLICITED ? HCA_WQE_F_SOLICITED : 0) |
		   (send_flags & IBV_SEND_FENCE ? HCA_WQE_F_FENCE : 0);
	c->wqe_index = (uint16_t)qp->sq_pi;
	c->imm_data = imm_data;
	*wqe = w;
	return 0;
}

void drv_sq_commit(struct drv_qp *qp, uint64_t wr_id)
{
	qp->sq_wrid[qp->sq_pi % qp->sq_entries] = wr_id;
	qp->sq_pi++;
}

void drv_sq_set_rdma(uint8_t *w, uint64_t remote_addr, uint32_t rkey, uint64_t compare_add,
		     uint64_t swap)
{
	struct hca_wqe_rdma *r = (void *)(w + sizeof(struct hca_wqe_ctrl));

	r->remote_addr = remote_addr;
	r->rkey = rkey;
	r->compare_add = compare_add;
	r->swap = swap;
}

/* XRC_SEND: the remote XRC SRQ, carried in the XRCETH (24 bits). */
int drv_sq_set_xrc(const char *verb, uint8_t *w, uint32_t srqn)
{
	struct hca_wqe_rdma *r = (void *)(w + sizeof(struct hca_wqe_ctrl));

	if (srqn > HCA_QPN_MASK)
		return drv_fail(EINVAL, "%s: remote_srqn 0x%x wider than the XRCETH's 24 bits", verb,
				srqn);
	r->xrc_srqn = srqn;
	return 0;
}

int drv_sq_set_ud(const struct drv_qp *qp, const char *verb, uint8_t *w, struct ibv_ah *ibah,
		  uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct drv_ah *ah = DRV_OBJ(struct drv_ah, ibah, DRV_KIND_AH);
	struct hca_wqe_ud *u = (void *)(w + sizeof(struct hca_wqe_ctrl));

	if (!ah || ah->ah.pd != qp->qpx.qp_base.pd)
		return drv_fail(EINVAL, "%s: wr.ud.ah is not a live AH of the QP's PD", verb);
	/* reserved bytes: zero since drv_sq_begin */
	u->remote_qpn = remote_qpn & HCA_QPN_MASK;
	u->remote_qkey = remote_qkey;
	u->av.dlid = ah->attr.dlid;
	u->av.sl = ah->attr.sl;
	u->av.src_path_bits = ah->attr.src_path_bits;
	u->av.static_rate = ah->attr.static_rate;
	u->av.is_global = ah->attr.is_global ? 1 : 0;
	u->av.port_num = ah->attr.port_num;
	u->av.sgid_index = ah->attr.grh.sgid_index;
	u->av.flow_label = ah->attr.grh.flow_label;
	u->av.hop_limit = ah->attr.grh.hop_limit;
	u->av.traffic_class = ah->attr.grh.traffic_class;
	memcpy(u->av.dgid, ah->attr.grh.dgid.raw, 16);
	return 0;
}

int drv_sq_set_sge(const struct drv_qp *qp, const char *verb, uint8_t *w,
		   const struct ibv_sge *sg, size_t n)
{
	struct hca_wqe_ctrl *c = (void *)w;
	struct hca_wqe_data *d = (void *)(w + HCA_WQE_BASE_BYTES);

	if (n > qp->cap.max_send_sge)
		return drv_fail(EINVAL, "%s: num_sge %zu above max_send_sge %u", verb, n,
				qp->cap.max_send_sge);
	if (n && !sg)
		return drv_fail(EINVAL, "%s: NULL sg_list", verb);
	for (size_t i = 0; i < n; i++)
		d[i] = (struct hca_wqe_data){ .addr = sg[i].addr, .lkey = sg[i].lkey,
					      .length = sg[i].length };
	c->flags &= (uint8_t)~HCA_WQE_F_INLINE;
	c->inline_len = 0;
	c->num_sge = (uint8_t)n;
	return 0;
}

int drv_sq_set_inline(const struct drv_qp *qp, const char *verb, uint8_t *w,
		      const struct ibv_sge *sg, const struct ibv_data_buf *buf, size_t n)
{
	struct hca_wqe_ctrl *c = (void *)w;
	uint8_t *dst = w + HCA_WQE_BASE_BYTES;
	uint64_t len = 0;

	if (n && !sg && !buf)
		return drv_fail(EINVAL, "%s: NULL inline buffer list", verb);
	for (size_t i = 0; i < n; i++)
		len += sg ? sg[i].length : buf[i].length;
	if (len > qp->cap.max_inline_data || hca_wqe_rd_atomic(c->opcode))
		return drv_fail(EINVAL, "%s: inline data of %llu bytes (max %u) or on a "
				"READ/atomic", verb, (unsigned long long)len,
				qp->cap.max_inline_data);
	/* Inline data is copied now: the buffers may be reused on return. */
	for (size_t i = 0; i < n; i++) {
		size_t l = sg ? sg[i].length : buf[i].length;

		if (l)
			memcpy(dst, sg ? (void *)(uintptr_t)sg[i].addr : buf[i].addr, l);
		dst += l;
	}
	c->flags |= HCA_WQE_F_INLINE;
	c->num_sge = 0;
	c->inline_len = (uint32_t)len;
	return 0;
}

/* The bytes of WQE w that carry something: the base segments, then the inline data or the
 * data segments. */
static unsigned wqe_used_bytes(const uint8_t *w)
{
	const struct hca_wqe_ctrl *c = (const void *)w;

	return HCA_WQE_BASE_BYTES + ((c->flags & HCA_WQE_F_INLINE) ? (c->inline_len + 15) / 16 * 16
								    : c->num_sge * HCA_SGE_BYTES);
}

void drv_sq_ring(struct drv_dev *d, struct drv_qp *qp, uint32_t posted)
{
	uint32_t qpn = qp->qpx.qp_base.qp_num;
	const uint8_t *last = drv_sq_wqe(qp, qp->sq_pi - 1);
	unsigned used;

	if (posted == 1 && (used = wqe_used_bytes(last)) <= HCA_UAR_BF_WQE_BYTES) {
		/* BlueFlame (as mlx5 does for a single small WQE): the doorbell word and the WQE
		 * in one write-combined burst of 64-byte chunks, so the device need not read the
		 * WQE back. */
		uint8_t bf[HCA_UAR_BF_BYTES] = { 0 };
		uint64_t db = HCA_UAR_DB(qpn, qp->sq_pi & 0xffff);

		memcpy(bf, &db, sizeof(db));
		memcpy(bf + 16, last, used);
		hcasim_mmio_write_block(d->fn, 0,
					drv_uar(drv_ctx_known(qp->qpx.qp_base.context)) + HCA_UAR_BF,
					bf, (16 + used + 63) / 64 * 64);
	} else if (posted) {
		uar_db(qp->qpx.qp_base.context, HCA_UAR_SQ_DB, HCA_UAR_DB(qpn, qp->sq_pi & 0xffff));
	}
}

static int post_one(struct drv_qp *qp, const struct ibv_send_wr *wr)
{
	static const char verb[] = "ibv_post_send";
	uint8_t *w;
	int rc;

	if (wr->num_sge < 0)
		return drv_fail(EINVAL, "%s: num_sge %d is negative", verb, wr->num_sge);
	/* LOCAL_INV and SEND_WITH_INV: invalidate_rkey (host order) shares imm_data's place */
	rc = drv_sq_begin(qp, verb, (unsigned)wr->opcode, wr->send_flags,
			  wr->opcode == IBV_WR_LOCAL_INV || wr->opcode == IBV_WR_SEND_WITH_INV
				  ? htobe32(wr->invalidate_rkey) : wr->imm_data, &w);
	if (rc)
		return rc;
	if (wr->opcode == IBV_WR_BIND_MW || wr->opcode == IBV_WR_LOCAL_INV) {
		/* no data: a local operation of the device's key block */
		rc = wr->opcode == IBV_WR_LOCAL_INV ? 0 : drv_sq_set_bind(verb, w, wr->bind_mw.mw,
					wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		if (!rc)
			drv_sq_commit(qp, wr->wr_id);
		return rc;
	}
	if (qp->qpx.qp_base.qp_type == IBV_QPT_UD)
		rc = drv_sq_set_ud(qp, verb, w, wr->wr.ud.ah, wr->wr.ud.remote_qpn,
				   wr->wr.ud.remote_qkey);
	else if (hca_wqe_atomic(wr->opcode))
		drv_sq_set_rdma(w, wr->wr.atomic.remote_addr, wr->wr.atomic.rkey,
				wr->wr.atomic.compare_add, wr->wr.atomic.swap);
	else
		drv_sq_set_rdma(w, wr->wr.rdma.remote_addr, wr->wr.rdma.rkey, 0, 0);
	if (!rc && qp->qpx.qp_base.qp_type == IBV_QPT_XRC_SEND)
		rc = drv_sq_set_xrc(verb, w, wr->qp_type.xrc.remote_srqn);
	if (rc)
		return rc;
	if (wr->send_flags & IBV_SEND_INLINE)
		rc = drv_sq_set_inline(qp, verb, w, wr->sg_list, NULL, (size_t)wr->num_sge);
	else
		rc = drv_sq_set_sge(qp, verb, w, wr->sg_list, (size_t)wr->num_sge);
	if (rc)
		return rc;
	drv_sq_commit(qp, wr->wr_id);
	return 0;
}

static int post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct drv_qp *qp = DRV_OBJ(struct drv_qp, ibqp, DRV_KIND_QP);
	struct drv_dev *d;
	uint32_t posted = 0;
	int rc = 0;

	if (!qp) {
		if (bad)
			*bad = wr;
		return drv_fail(EINVAL, "ibv_post_send: not a live QP");
	}
	d = drv_dev_of(ibqp->context);
	drv_charge_verb(d);
	for (; wr; wr = wr->next) {
		rc = post_one(qp, wr);
		if (rc)
			break;
		posted++;
	}
	if (rc && bad)
		*bad = wr;
	drv_sq_ring(d, qp, posted);
	return rc;
}

/* ---- post receive ---- */

static int write_rwqe(uint8_t *w, uint32_t stride, const struct ibv_recv_wr *wr)
{
	struct hca_wqe_data *sg = (void *)w;
	uint32_t n = stride / HCA_SGE_BYTES;

	for (int i = 0; i < wr->num_sge; i++) {
		sg[i].addr = wr->sg_list[i].addr;
		sg[i].lkey = wr->sg_list[i].lkey;
		sg[i].length = wr->sg_list[i].length;
	}
	if ((uint32_t)wr->num_sge < n)
		sg[wr->num_sge] = (struct hca_wqe_data){ .lkey = HCA_LKEY_END };
	return 0;
}

/* A receive WR's scatter list must fit max_sge entries. 0 or EINVAL (message recorded). */
static int check_recv_wr(const char *verb, const struct ibv_recv_wr *wr, uint32_t max_sge)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge || (wr->num_sge && !wr->sg_list))
		return drv_fail(EINVAL, "%s: num_sge %d above max_sge %u or NULL sg_list", verb,
				wr->num_sge, max_sge);
	return 0;
}

static int post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct drv_qp *qp = DRV_OBJ(struct drv_qp, ibqp, DRV_KIND_QP);
	struct drv_dev *d;
	uint32_t posted = 0;
	int rc = 0;

	if (!qp) {
		if (bad)
			*bad = wr;
		return drv_fail(EINVAL, "ibv_post_recv: not a live QP");
	}
	d = drv_dev_of(ibqp->context);
	drv_charge_verb(d);
	for (; wr; wr = wr->next) {
		if (ibqp->srq) {
			rc = drv_fail(EINVAL, "ibv_post_recv: the QP receives from an SRQ");
			break;
		}
		if (ibqp->state == IBV_QPS_RESET) {
			rc = drv_fail(EINVAL, "ibv_post_recv: QP 0x%x is in RESET", ibqp->qp_num);
			break;
		}
		rc = check_recv_wr("ibv_post_recv", wr, qp->cap.max_recv_sge);
		if (rc)
			break;
		if (qp->rq_pi - qp->rq_ci >= qp->cap.max_recv_wr) {
			rc = drv_fail(ENOMEM, "ibv_post_recv: receive queue full (%u WRs)",
				      qp->cap.max_recv_wr);
			break;
		}
		write_rwqe((uint8_t *)qp->rq + (size_t)(qp->rq_pi % qp->rq_entries) * qp->rq_stride,
			   qp->rq_stride, wr);
		qp->rq_wrid[qp->rq_pi % qp->rq_entries] = wr->wr_id;
		qp->rq_pi++;
		posted++;
	}
	if (rc && bad)
		*bad = wr;
	if (posted)
		uar_db(ibqp->context, HCA_UAR_RQ_DB, HCA_UAR_DB(ibqp->qp_num, qp->rq_pi & 0xffff));
	return rc;
}

static int post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct drv_srq *srq = DRV_OBJ(struct drv_srq, ibsrq, DRV_KIND_SRQ);
	struct drv_dev *d;
	uint32_t posted = 0;
	int rc = 0;

	if (!srq) {
		if (bad)
			*bad = wr;
		return drv_fail(EINVAL, "ibv_post_srq_recv: not a live SRQ");
	}
	d = drv_dev_of(ibsrq->context);
	drv_charge_verb(d);
	for (; wr; wr = wr->next) {
		rc = check_recv_wr("ibv_post_srq_recv", wr, srq->max_sge);
		if (rc)
			break;
		/* A slot is reused only once its own completion has been seen. */
		if (srq->pi - srq->tail >= srq->entries - 1) {
			rc = drv_fail(ENOMEM, "ibv_post_srq_recv: SRQ full (%u WRs)",
				      srq->entries - 1);
			break;
		}
		write_rwqe((uint8_t *)srq->ring + (size_t)(srq->pi % srq->entries) * srq->stride,
			   srq->stride, wr);
		srq->wrid[srq->pi % srq->entries] = wr->wr_id;
		srq->done[srq->pi % srq->entries] = 0;
		srq->pi++;
		posted++;
	}
	if (rc && bad)
		*bad = wr;
	if (posted)
		uar_db(srq->srq.context, HCA_UAR_SRQ_DB, HCA_UAR_DB(srq->srqn, srq->pi & 0xffff));
	return rc;
}

/* ---- poll ---- */

/* Extend a 16-bit WQE index to the 32-bit counter at or after base. */
static uint32_t ext16(uint32_t base, uint16_t v)
{
	return base + (uint16_t)(v - (uint16_t)base);
}

/* The wr_id of the completed WQE wqe_index of a ring (pi posted, ci completed); the WQEs
 * before it are done too. A WQE posted by hand (hcasimdv.h) has no wr_id: it reports 0 and
 * its count is taken over. */
static uint64_t take_wrid(uint32_t *pi, uint32_t *ci, uint64_t *wrid, uint32_t entries,
			  uint16_t wqe_index)
{
	uint32_t idx = ext16(*ci, wqe_index);

	if (entries && idx - *ci >= *pi - *ci) {
		*pi = idx + 1;
		wrid[idx % entries] = 0;
	}
	*ci = idx + 1;
	return wrid[idx % entries];
}

/* Slot idx of cq's ring, and the owner bit a CQE written there on idx's pass carries. */
static volatile struct hca_cqe *cq_slot(struct drv_cq *cq, uint32_t idx)
{
	return (volatile struct hca_cqe *)((uint8_t *)cq->ring +
					   (size_t)(idx & ((1u << cq->log_size) - 1)) * HCA_CQE_BYTES);
}

static uint8_t cq_owner(const struct drv_cq *cq, uint32_t idx)
{
	return ((idx >> cq->log_size) & 1) ? 0 : 1;
}

void drv_cq_clean(struct drv_cq *cq, uint32_t qpn)
{
	uint32_t size = 1u << cq->log_size, prod = cq->ci, nfreed = 0;

	/* The CQEs not taken yet: from ci on, while the owner bit says the device wrote them. */
	while (prod - cq->ci < size && (cq_slot(cq, prod)->owner & 1) == cq_owner(cq, prod))
		prod++;
	/* From the newest down: qpn's go; the others move up over them, keeping their order,
	 * each with the owner bit of the slot it moves to (mlx5's cq_clean does the same). */
	while (prod != cq->ci) {
		struct hca_cqe c;

		prod--;
		memcpy(&c, (const void *)cq_slot(cq, prod), sizeof(c));
		if ((c.qpn & HCA_QPN_MASK) == qpn) {
			nfreed++;
		} else if (nfreed) {
			c.owner = (uint8_t)((c.owner & ~1u) | cq_owner(cq, prod + nfreed));
			memcpy((void *)cq_slot(cq, prod + nfreed), &c, sizeof(c));
		}
	}
	cq->ci += nfreed;
	if (nfreed)
		*cq->db = cq->ci & 0xffffff; /* the slots are the device's again */
}

bool drv_cq_take(struct drv_dev *d, struct drv_cq *cq, struct ibv_wc *w, uint64_t *cycle)
{
	volatile struct hca_cqe *e = cq_slot(cq, cq->ci);
	struct hca_cqe c;
	struct drv_qp *qp;

	if ((e->owner & 1) != cq_owner(cq, cq->ci))
		return false;
	memcpy(&c, (const void *)e, sizeof(c)); /* rmb() first, on silicon */
	memset(w, 0, sizeof(*w));
	qp = qp_num(d, c.qpn);
	w->status = (enum ibv_wc_status)c.status;
	w->opcode = (enum ibv_wc_opcode)c.opcode;
	w->vendor_err = c.vendor_err;
	w->byte_len = c.byte_len;
	w->qp_num = c.qpn;
	w->src_qp = c.src_qp;
	w->slid = c.slid;
	w->sl = c.sl;
	w->pkey_index = c.pkey_index;
	w->dlid_path_bits = c.dlid_path_bits;
	if (c.wc_flags & HCA_WC_F_IMM) {
		w->wc_flags |= IBV_WC_WITH_IMM;
		w->imm_data = c.imm_data;
	}
	if (c.wc_flags & HCA_WC_F_INV) {
		w->wc_flags |= IBV_WC_WITH_INV;
		w->invalidated_rkey = c.imm_data;
	}
	if (c.wc_flags & HCA_WC_F_GRH)
		w->wc_flags |= IBV_WC_GRH;
	if (c.is_send && qp) {
		w->wr_id =
		    take_wrid(&qp->sq_pi, &qp->sq_ci, qp->sq_wrid, qp->sq_entries, c.wqe_index);
	} else if (c.srqn) {
		struct drv_srq *srq = srq_num(d, c.srqn);

		if (srq) {
			uint32_t idx = ext16(srq->tail, c.wqe_index);

			w->wr_id = srq->wrid[idx % srq->entries];
			srq->done[idx % srq->entries] = 1;
			while (srq->tail != srq->pi && srq->done[srq->tail % srq->entries])
				srq->tail++;
		}
	} else if (qp) {
		w->wr_id =
		    take_wrid(&qp->rq_pi, &qp->rq_ci, qp->rq_wrid, qp->rq_entries, c.wqe_index);
	}
	*cycle = c.timestamp;
	cq->ci++;
	return true;
}

void drv_cq_publish_ci(struct drv_cq *cq)
{
	*cq->db = cq->ci & 0xffffff; /* the device reads it when the ring looks full */
}

/* The run of consecutive empty polls: the CQ they polled (NULL: none), and the host actions
 * (hcasim_host_actions) the program had made by the last of them. */
static struct {
	const void *cq;
	uint64_t actions;
} poll_run;

void drv_poll_run_end(void)
{
	poll_run.cq = NULL;
}

bool drv_poll_skip(struct drv_dev *d, const void *cq)
{
	if (!d->poll_skip || poll_run.cq != cq || poll_run.actions != hcasim_host_actions())
		return false;
	return hcasim_host_skip(d->poll_ps) > 0;
}

void drv_poll_idle(struct drv_dev *d, const void *cq)
{
	hcasim_host_advance(d->poll_ps); /* an empty poll still costs the host */
	poll_run.cq = cq;
	poll_run.actions = hcasim_host_actions();
}

static int poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct drv_cq *cq = DRV_OBJ(struct drv_cq, ibcq, DRV_KIND_CQ);
	struct drv_dev *d;
	uint64_t cycle;
	int got = 0;

	if (!cq) {
		drv_fail(EINVAL, "ibv_poll_cq: not a live CQ");
		return -EINVAL;
	}
	if (n < 0 || (n && !wc)) {
		drv_fail(EINVAL, "ibv_poll_cq: bad num_entries %d or NULL wc", n);
		return -EINVAL;
	}
	d = drv_dev_of(ibcq->context);
	hcasim_bus_hold(); /* the CQEs the device writes */
	while (got < n && drv_cq_take(d, cq, &wc[got], &cycle))
		got++;
	if (!got && drv_poll_skip(d, cq))
		while (got < n && drv_cq_take(d, cq, &wc[got], &cycle))
			got++;
	if (got) {
		drv_cq_publish_ci(cq);
		drv_charge_verb(d);
	} else {
		drv_poll_idle(d, cq);
	}
	hcasim_bus_release();
	return got;
}

static int req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct drv_cq *cq = DRV_OBJ(struct drv_cq, ibcq, DRV_KIND_CQ);
	struct drv_dev *d;

	if (!cq)
		return drv_fail(EINVAL, "ibv_req_notify_cq: not a live CQ");
	d = drv_dev_of(ibcq->context);
	drv_charge_verb(d);
	uar_db(ibcq->context, HCA_UAR_CQ_DB,
	       HCA_UAR_CQ_DB_VAL(cq->cqn,
				 solicited_only ? HCA_CQ_DB_ARM_SOLICITED : HCA_CQ_DB_ARM_NEXT, cq->ci));
	return 0;
}

int drv_ops_init(struct ibv_context_ops *ops)
{
	ops->post_send = post_send;
	ops->post_recv = post_recv;
	ops->post_srq_recv = post_srq_recv;
	ops->poll_cq = poll_cq;
	ops->req_notify_cq = req_notify_cq;
	return 0;
}

/* ---- events ---- */

static void chan_push(struct drv_chan *ch, struct drv_cq *cq)
{
	uint64_t one = 1;

	if (ch->ev_count == ch->ev_cap) {
		unsigned cap = ch->ev_cap ? ch->ev_cap * 2 : 16;
		struct drv_cq **q = malloc(cap * sizeof(*q));

		if (!q) {
			fprintf(stderr, "hcasim: out of memory for completion events\n");
			abort();
		}
		for (unsigned i = 0; i < ch->ev_count; i++)
			q[i] = ch->events[(ch->ev_head + i) % ch->ev_cap];
		free(ch->events);
		ch->events = q;
		ch->ev_cap = cap;
		ch->ev_head = 0;
	}
	ch->events[(ch->ev_head + ch->ev_count++) % ch->ev_cap] = cq;
	if (write(ch->ch.fd, &one, sizeof(one)) < 0)
		perror("hcasim: completion channel");
}

void drv_dp_event(struct drv_dev *d, const struct hca_eqe *e)
{
	struct ibv_async_event ev = { 0 };

	switch (e->type) {
	case HCA_EQE_COMP: {
		struct drv_cq *cq = cq_num(d, e->data[0]);

		if (cq && cq->cq.channel)
			chan_push((struct drv_chan *)cq->cq.channel, cq);
		return;
	}
	case HCA_EQE_QP_EVENT: {
		struct drv_qp *qp = qp_num(d, e->data[0]);

		if (!qp)
			return;
		ev.event_type = (enum ibv_event_type)e->subtype;
		ev.element.qp = &qp->qpx.qp_base;
		if (!qp->tgt)
			break;
		/* An XRC_RECV QP's event goes to every handle on it, in its own context, as
		 * the kernel's shared-QP event handler sends it. */
		for (struct drv_qp *h = qp->tgt->handles; h; h = h->tgt_next) {
			struct drv_ctx *c = drv_ctx_of(h->qpx.qp_base.context);

			ev.element.qp = &h->qpx.qp_base;
			if (c)
				drv_post_async_ctx(c, &ev);
		}
		return;
	}
	case HCA_EQE_CQ_ERROR: {
		struct drv_cq *cq = cq_num(d, e->data[0]);

		if (!cq)
			return;
		ev.event_type = IBV_EVENT_CQ_ERR;
		ev.element.cq = &cq->cq;
		break;
	}
	case HCA_EQE_SRQ_LIMIT:
	case HCA_EQE_SRQ_ERROR: {
		struct drv_srq *srq = srq_num(d, e->data[0]);

		if (!srq)
			return;
		ev.event_type = e->type == HCA_EQE_SRQ_LIMIT ? IBV_EVENT_SRQ_LIMIT_REACHED
							    : IBV_EVENT_SRQ_ERR;
		ev.element.srq = &srq->srq;
		break;
	}
	default:
		return;
	}
	{
		/* An affiliated event goes to the context its object belongs to. */
		struct ibv_context *ctx = e->type == HCA_EQE_CQ_ERROR ? ev.element.cq->context
					  : e->type == HCA_EQE_SRQ_LIMIT || e->type == HCA_EQE_SRQ_ERROR
					      ? ev.element.srq->context
									 : ev.element.qp->context;
		struct drv_ctx *c = drv_ctx_of(ctx);

		if (c)
			drv_post_async_ctx(c, &ev);
	}
}

struct chan_wait {
	struct drv_chan *ch; /* channel */
	struct drv_dev *d;   /* its device */
};

static bool chan_ready(void *p)
{
	struct chan_wait *w = p;

	if (w->d->irq_pending)
		drv_eq_process(w->d);
	return w->ch->ev_count > 0;
}

static int get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct drv_chan *ch = DRV_OBJ(struct drv_chan, channel, DRV_KIND_CHAN);
	struct chan_wait w;
	struct drv_cq *c;
	uint64_t v;

	if (!ch || !cq || !cq_context) {
		drv_fail(EINVAL, "ibv_get_cq_event: %s", !ch ? "not a live channel" : "NULL output");
		return -1;
	}
	w = (struct chan_wait){ ch, drv_dev_of(ch->ch.context) };
	if (!chan_ready(&w)) {
		int rc;

		if (fcntl(ch->ch.fd, F_GETFL) & O_NONBLOCK) {
			drv_fail(EAGAIN, "ibv_get_cq_event: no event (non-blocking)");
			return -1;
		}
		/* Blocking: run the simulation until an event arrives, or report the deadlock. */
		rc = hcasim_host_wait(chan_ready, &w, UINT64_MAX);
		if (rc) {
			drv_fail(EDEADLK, "ibv_get_cq_event: no completion event can arrive: the "
				 "simulation is idle");
			return -1;
		}
	}
	c = ch->events[ch->ev_head];
	ch->ev_head = (ch->ev_head + 1) % ch->ev_cap;
	ch->ev_count--;
	if (read(ch->ch.fd, &v, sizeof(v)) > 0 && ch->ev_count) {
		v = ch->ev_count; /* keep the fd readable while events remain */
		if (write(ch->ch.fd, &v, sizeof(v)) < 0)
			perror("hcasim: completion channel");
	}
	*cq = &c->cq;
	*cq_context = c->cq.cq_context;
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	int rc;

	hcasim_bus_hold(); /* the EQ the device writes, and the channel's events */
	rc = get_cq_event(channel, cq, cq_context);
	hcasim_bus_release();
	return rc;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (cq)
		cq->comp_events_completed += nevents;
}
/* ---- strings ---- */

const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const s[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	return (unsigned)event < sizeof(s) / sizeof(s[0]) && s[event] ? s[event] : "unknown";
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const s[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	return (unsigned)node_type < sizeof(s) / sizeof(s[0]) && s[node_type] ? s[node_type]
									     : "unknown";
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const s[] = {
		[IBV_PORT_NOP] = "no state change (NOP)",
		[IBV_PORT_DOWN] = "down",
		[IBV_PORT_INIT] = "init",
		[IBV_PORT_ARMED] = "armed",
		[IBV_PORT_ACTIVE] = "active",
		[IBV_PORT_ACTIVE_DEFER] = "active defer",
	};

	return (unsigned)port_state < sizeof(s) / sizeof(s[0]) && s[port_state] ? s[port_state]
										: "unknown";
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const s[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	return (unsigned)status < sizeof(s) / sizeof(s[0]) && s[status] ? s[status] : "unknown";
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct drv_qp *q = DRV_OBJ(struct drv_qp, qp, DRV_KIND_QP);

	/* As rdma-core: only a QP created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS has the
	 * ibv_wr_* API (qp_ex.c); for any other, NULL. */
	if (!q || !q->ex) {
		drv_fail(EINVAL, "ibv_qp_to_qp_ex: %s", !q ? "not a live QP"
				 : "the QP was not created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS");
		return NULL;
	}
	return &q->qpx;
}
