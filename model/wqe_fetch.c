/* wqe_fetch: the WQE fetcher. The requester asks for WQE idx of a QP; if an earlier read
 * brought it in, only the decode costs time; otherwise one DMA read brings in up to
 * hca.wqe_prefetch posted WQEs, contiguous in the ring (a read does not wrap). Then the WQE is
 * validated as hardware must validate what software wrote: an opcode the QP type allows, a
 * scatter/gather count or inline length that fits the WQE stride, a length within the limits
 * (2^31 bytes; UD within the path MTU; atomics exactly 8 bytes). */
#include "model/dp.h"
#include "sim/trace.h"

static bool op_allowed(uint8_t type, uint8_t op)
{
	switch (op) {
	case HCA_WQE_OP_SEND:
	case HCA_WQE_OP_SEND_IMM:
		return true;
	case HCA_WQE_OP_RDMA_WRITE:
	case HCA_WQE_OP_RDMA_WRITE_IMM:
		return type != HCA_QPT_UD;
	case HCA_WQE_OP_RDMA_READ:
	case HCA_WQE_OP_ATOMIC_CMP_SWP:
	case HCA_WQE_OP_ATOMIC_FETCH_ADD:
		return type == HCA_QPT_RC;
	default:
		return false;
	}
}

int hm_wqe_fetch(struct hm_dev *d, struct hm_qp *qp, uint32_t idx, sim_time_t *t)
{
	uint32_t slot = idx % qp->sq_entries, n;

	if (idx - qp->sq_fetch_lo < qp->sq_fetched - qp->sq_fetch_lo) {
		*t = sim_clock_after(&d->core, *t, d->cfg.wqe_cycles);
		return 0; /* prefetched */
	}
	n = qp->sq_pi - idx;
	if (n > d->cfg.wqe_prefetch)
		n = (uint32_t)d->cfg.wqe_prefetch;
	if (n > qp->sq_entries - slot)
		n = qp->sq_entries - slot; /* one read stops at the end of the ring */
	if (!n)
		n = 1;
	if (hm_dma_inject_hit(d, HM_DMA_SQ_WQE, qp->qpn) ||
	    sim_dma_read_timed(d->fn, qp->sq + (uint64_t)slot * qp->sq_stride,
			       qp->wqe_buf + (size_t)slot * qp->sq_stride, (size_t)n * qp->sq_stride,
			       t))
		return -1;
	qp->sq_fetch_lo = idx;
	qp->sq_fetched = idx + n;
	SIM_TRACE(req, wqe, d->devno, "qpn=0x%x fetched wqe=%u..%u", qp->qpn, idx, idx + n - 1);
	*t = sim_clock_after(&d->core, *t, d->cfg.wqe_cycles);
	return 0;
}

uint8_t hm_wqe_check(const struct hm_dev *d, const struct hm_qp *qp, const uint8_t *w,
		      uint64_t *len)
{
	const struct hca_wqe_ctrl *c = (const void *)w;
	const struct hca_wqe_data *sg = (const void *)(w + HCA_WQE_BASE_BYTES);
	uint32_t room = qp->sq_stride - HCA_WQE_BASE_BYTES;

	*len = 0;
	if (!op_allowed(qp->type, c->opcode))
		return HCA_WC_LOC_QP_OP_ERR;
	if (c->flags & HCA_WQE_F_INLINE) {
		if (c->inline_len > room)
			return HCA_WC_LOC_QP_OP_ERR;
		*len = c->inline_len;
	} else {
		if (c->num_sge > room / HCA_SGE_BYTES || c->num_sge > HM_MAX_SGE)
			return HCA_WC_LOC_QP_OP_ERR;
		for (unsigned i = 0; i < c->num_sge; i++)
			*len += sg[i].length;
	}
	if (*len > 0x80000000ull || (qp->type == HCA_QPT_UD && *len > hm_qp_mtu(d, qp)))
		return HCA_WC_LOC_LEN_ERR;
	if ((c->opcode == HCA_WQE_OP_ATOMIC_CMP_SWP || c->opcode == HCA_WQE_OP_ATOMIC_FETCH_ADD) &&
	    *len != 8)
		return HCA_WC_LOC_LEN_ERR;
	return HCA_WC_SUCCESS;
}
