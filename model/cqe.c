/* cqe: the CQE writer. A CQE goes to the ring slot pi with the ownership bit of this pass; the
 * device learns the consumer index from the CQ's doorbell record (read when the ring looks
 * full) and from CQ doorbells. A CQE that does not fit is an overrun: the CQ enters the error
 * state and IBV_EVENT_CQ_ERR is raised (the QPs using it go to ERR, IBA 11.6.2). An armed CQ
 * raises a completion event through its EQ: on any CQE when armed for the next, on a solicited
 * or error CQE when armed for solicited only. */
#include "model/dp.h"
#include "model/hca.h"
#include "model/ports.h"
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
	/* The CQE writer block (model/ports.h) decides; the CQ context and the DMA are here. */
	in = (struct hm_cqe_in){ .cycle = sim_clock_cycles(&d->core, sim_clock_edge(&d->core, t)),
				 .lat = (uint32_t)d->cfg.cqe_cycles,
				 .cqn = cqn,
				 .pi = cq->pi,
				 .ci = cq->ci,
				 .log_size = (uint8_t)cq->log_size,
				 .arm = cq->arm,
				 .solicited = solicited,
				 .cqe = *cqe };
	hm_cqe_port_post(d, &in, &out);
	t = out.cycle * d->core.period_ps;
	if (out.action == HM_CQE_NEED_CI) {
		cq_read_ci(d, cq, &t);
		in.cycle = sim_clock_cycles(&d->core, sim_clock_edge(&d->core, t));
		in.ci = cq->ci;
		in.ci_fresh = true;
		hm_cqe_port_post(d, &in, &out);
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
