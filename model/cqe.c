/* cqe: the CQE writer. A CQE goes to the ring slot pi with the ownership bit of this pass; the
 * device learns the consumer index from the CQ's doorbell record (read when the ring looks
 * full) and from CQ doorbells. A CQE that does not fit is an overrun: the CQ enters the error
 * state and IBV_EVENT_CQ_ERR is raised (the QPs using it go to ERR, IBA 11.6.2). An armed CQ
 * raises a completion event through its EQ: on any CQE when armed for the next, on a solicited
 * or error CQE when armed for solicited only. */
#include "model/cqe.h"
#include "model/eq.h"
#include "model/fcov.h"
#include "model/qp.h"
#include "model/waves.h"
#include "sim/trace.h"

#include <string.h>

/* Refresh ci from the doorbell record (8 bytes: consumer index in the low 24 bits). */
static void cq_read_ci(struct hm_dev *d, struct hm_cq *cq, sim_time_t *t)
{
	uint64_t rec;

	if (!sim_dma_read_timed(d->fn, cq->db, &rec, sizeof(rec), t)) {
		uint32_t ci = (uint32_t)rec & 0xffffffu;

		/* Extend the 24-bit index next to pi; it may not pass pi. */
		ci = (cq->pi & ~0xffffffu) | ci;
		if (ci > cq->pi)
			ci -= 0x1000000u;
		if (cq->pi - ci <= (1u << cq->log_size))
			cq->ci = ci;
	}
}

static void cq_overrun(struct hm_dev *d, uint32_t cqn, struct hm_cq *cq, sim_time_t t)
{
	uint32_t data[6] = { cqn, 0, 0, 0, 0, 0 };

	cq->error = true;
	hm_ctr_inc(d, 0, HM_CTR_NUM_CQOVF);
	trace_warn_cq_overrun(d->devno, cqn);
	hm_eq_post(d, HCA_EQE_CQ_ERROR, 0, data);
	/* Every QP reporting to the CQ can no longer complete work: to ERR. */
	for (uint32_t i = 0; i < d->dp->nqps; i++) {
		struct hm_qp *qp = d->dp->qps[i];

		if (qp && (qp->scqn == cqn || qp->rcqn == cqn) && qp->state != HCA_QPS_ERR &&
		    qp->state != HCA_QPS_RESET)
			hm_qp_error(d, qp, HCA_QPS_ERR, t);
	}
}

bool hm_cqe_post(struct hm_dev *d, uint32_t cqn, struct hca_cqe *cqe, bool solicited,
		 sim_time_t t)
{
	struct hm_cq *cq = hm_cq_get(d, cqn);
	struct hm_cqe_in in;
	struct hm_cqe_out out;

	hm_ctr_cqe(d, cqe); /* the error happened, whether or not the CQ can take the CQE */
	if (!cq || cq->error)
		return false;
	/* The CQE writer block (model/twin.h) decides; the CQ context and the DMA are here. */
	in = (struct hm_cqe_in){ .cycle = sim_clock_cycles(&d->core, sim_clock_edge(&d->core, t)),
				 .lat = (uint32_t)d->cfg.cqe_cycles,
				 .cqn = cqn,
				 .pi = cq->pi,
				 .ci = cq->ci,
				 .log_size = (uint8_t)cq->log_size,
				 .arm = cq->arm,
				 .solicited = solicited,
				 .cqe = *cqe };
	hm_cqe_twin_post(d, &in, &out);
	t = out.cycle * d->core.period_ps;
	if (out.action == HM_CQE_NEED_CI) {
		cq_read_ci(d, cq, &t);
		in.cycle = sim_clock_cycles(&d->core, sim_clock_edge(&d->core, t));
		in.ci = cq->ci;
		in.ci_fresh = true;
		hm_cqe_twin_post(d, &in, &out);
		t = out.cycle * d->core.period_ps;
	}
	if (out.action != HM_CQE_WRITE) {
		cq_overrun(d, cqn, cq, t);
		return false;
	}
	/* The CQE is a posted write issued at t: it lands after the data writes issued before
	 * it (PCIe ordering), so software never sees a CQE before its data. */
	hm_dma_write_at(d, cq->ring + (uint64_t)out.slot * HCA_CQE_BYTES, &out.image,
			sizeof(out.image), t);
	trace_cqe_write(d->devno, cqn, cq->pi, cqe->qpn, cqe->opcode, cqe->status, cqe->byte_len,
			cqe->wqe_index);
	hm_fcov_hit(HM_FCOV_cqe_status, cqe->status);
	if (cqe->status != HCA_WC_SUCCESS) {
		/* Every error CQE names the check that failed, one of verr.def for its status. */
		SIM_ASSERT(hca_verr_status(cqe->vendor_err) == cqe->status,
			   "qpn 0x%x: error CQE status %u with vendor_err 0x%x", cqe->qpn,
			   cqe->status, cqe->vendor_err);
		trace_cqe_error(d->devno, cqn, cqe->qpn, cqe->wqe_index, hca_wc_name(cqe->status),
				cqe->vendor_err, hca_verr_name(cqe->vendor_err));
	}
	cq->pi = out.new_pi;
	cq->cqes++;
	cq->arm = out.new_arm;
	if (out.event) {
		uint32_t data[6] = { cqn, 0, 0, 0, 0, 0 };

		hm_eq_post_at(d, HCA_EQE_COMP, 0, data, t);
	}
	return true;
}

void hm_cq_doorbell(struct hm_dev *d, uint64_t val)
{
	uint32_t cqn = (uint32_t)val & 0xffffffu, cmd = (uint32_t)(val >> 24) & 3;
	uint32_t ci = (uint32_t)(val >> 32) & 0xffffffu;
	struct hm_cq *cq = hm_cq_get(d, cqn);

	if (!cq || cmd > HCA_CQ_DB_ARM_SOLICITED) {
		d->dp->bad_doorbells++;
		trace_warn_doorbell(d->devno, "cq", cqn, ci, cq ? "bad_cmd" : "no_queue");
		return;
	}
	ci = (cq->pi & ~0xffffffu) | ci;
	if (ci > cq->pi)
		ci -= 0x1000000u;
	if (cq->pi - ci > (1u << cq->log_size)) {
		d->dp->bad_doorbells++;
		trace_warn_doorbell(d->devno, "cq", cqn, ci, "beyond_ring");
		return;
	}
	cq->ci = ci;
	if (cmd != HCA_CQ_DB_CI) {
		cq->arm = (uint8_t)cmd;
		/* The arm doorbell carries the consumer index: arming for the next CQE while
		 * CQEs the consumer has not read are already there raises the event at once,
		 * so a CQE that arrived between the last poll and the arm is never missed. */
		if (cq->pi != cq->ci && cmd == HCA_CQ_DB_ARM_NEXT) {
			uint32_t data[6] = { cqn, 0, 0, 0, 0, 0 };

			cq->arm = 0;
			hm_eq_post(d, HCA_EQE_COMP, 0, data);
		}
	}
}

/* ---- the C twin of the CQE writer (rtl/cqe.sv) and its port (model/twin.h) ----
 * It keeps no state of its own: the CQ context is the caller's. */

static void cqe_post(void *b, const struct hm_cqe_in *in, struct hm_cqe_out *out)
{
	uint32_t size = 1u << in->log_size;

	(void)b;
	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle + (in->ci_fresh ? 0 : in->lat);
	if (in->pi - in->ci >= size - 1) {
		/* One slot stays free (hca_cq_ring_entries): a ring that looks full is checked
		 * against the doorbell record first, and then it is an overrun. */
		out->action = in->ci_fresh ? HM_CQE_OVERRUN : HM_CQE_NEED_CI;
		return;
	}
	out->action = HM_CQE_WRITE;
	out->slot = in->pi & (size - 1);
	out->new_pi = in->pi + 1;
	out->image = in->cqe;
	out->image.owner = ((in->pi >> in->log_size) & 1) ? 0 : 1;
	out->image.timestamp = out->cycle;
	out->new_arm = in->arm;
	if (in->arm == HCA_CQ_DB_ARM_NEXT ||
	    (in->arm == HCA_CQ_DB_ARM_SOLICITED &&
	     (in->solicited || in->cqe.status != HCA_WC_SUCCESS))) {
		out->event = true;
		out->new_arm = 0;
	}
}

const struct hm_cqe_ops hm_cqe_model = {
	{ hm_twin_stateless_create, hm_twin_stateless_destroy, NULL, NULL, 0, NULL, NULL }, cqe_post
};

/* The CQE image is compared field by field, only when a CQE is written. */
static const struct hca_field_desc *cqe_image(const void *out, size_t *off)
{
	static const struct hca_field_desc *f;

	if (((const struct hm_cqe_out *)out)->action != HM_CQE_WRITE)
		return NULL;
	if (!f)
		f = hca_struct_find("hca_cqe")->fields;
	*off = offsetof(struct hm_cqe_out, image);
	return f;
}

HM_TWIN_OP(cqe, post, hm_cqe_in, hm_cqe_out, hm_waves_cqe, cqe_image,
	   HM_TWIN_FIELD(struct hm_cqe_out, cycle), HM_TWIN_FIELD(struct hm_cqe_out, action),
	   HM_TWIN_FIELD(struct hm_cqe_out, slot), HM_TWIN_FIELD(struct hm_cqe_out, new_pi),
	   HM_TWIN_FIELD(struct hm_cqe_out, new_arm), HM_TWIN_FIELD(struct hm_cqe_out, event));

void hm_cqe_twin_post(struct hm_dev *d, const struct hm_cqe_in *in, struct hm_cqe_out *out)
{
	struct hm_cqe_out rtl;

	hm_twin_call(d, &cqe_post_op, in->cycle, in, out, &rtl);
}

static const uint8_t wqe_cqe_op[HCA_WQE_OP_SEND_INV + 1] = {
	[HCA_WQE_OP_RDMA_WRITE] = HCA_CQE_OP_RDMA_WRITE,
	[HCA_WQE_OP_RDMA_WRITE_IMM] = HCA_CQE_OP_RDMA_WRITE,
	[HCA_WQE_OP_SEND] = HCA_CQE_OP_SEND,
	[HCA_WQE_OP_SEND_IMM] = HCA_CQE_OP_SEND,
	[HCA_WQE_OP_RDMA_READ] = HCA_CQE_OP_RDMA_READ,
	[HCA_WQE_OP_ATOMIC_CMP_SWP] = HCA_CQE_OP_COMP_SWAP,
	[HCA_WQE_OP_ATOMIC_FETCH_ADD] = HCA_CQE_OP_FETCH_ADD,
	[HCA_WQE_OP_LOCAL_INV] = HCA_CQE_OP_LOCAL_INV,
	[HCA_WQE_OP_BIND_MW] = HCA_CQE_OP_BIND_MW,
	[HCA_WQE_OP_SEND_INV] = HCA_CQE_OP_SEND,
};

uint8_t hm_cqe_op_of(uint8_t wqe_op)
{
	return wqe_op < sizeof(wqe_cqe_op) ? wqe_cqe_op[wqe_op] : HCA_CQE_OP_SEND;
}
