/* qp: what belongs to a QP as a whole rather than to one engine (model/qp.h). */
#include "model/qp.h"
#include "model/eq.h"
#include "model/qpc.h"
#include "sim/trace.h"

unsigned hm_qp_mtu(const struct hm_dev *d, const struct hm_qp *qp)
{
	if (qp->type == HCA_QPT_UD || !qp->attr.path_mtu)
		return sim_config_mtu_bytes(&d->cfg); /* UD has no path MTU (IBA 11.2.4.2) */
	return 128u << qp->attr.path_mtu;
}

void hm_qp_check_drained(struct hm_dev *d, struct hm_qp *qp)
{
	uint32_t data[6] = { qp->qpn, 0, 0, 0, 0, 0 };

	/* IBA 10.3.1.2 / 11.6.3: SQD.drained once every WQE started before the transition
	 * has completed; the event only with en_sqd_async_notify. */
	if (qp->state != HCA_QPS_SQD || qp->drained_sent || qp->req.cur_started ||
	    qp->comp.sq_done != qp->req.sq_next)
		return;
	qp->drained_sent = true;
	if (qp->attr.en_sqd_async_notify)
		hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_SQ_DRAINED, data);
}

void hm_qp_error(struct hm_dev *d, struct hm_qp *qp, unsigned state, sim_time_t t)
{
	trace_qp_error(d->devno, qp->qpn, hca_qps_name(qp->state), hca_qps_name(state));
	qp->state = (uint8_t)state;
	if (state == HCA_QPS_ERR || state == HCA_QPS_SQE)
		d->wire.qp_flush(d, qp, t);
}

void hm_qp_fatal(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	uint32_t data[6] = { qp->qpn, 0, 0, 0, 0, 0 };

	if (qp->state == HCA_QPS_ERR || qp->state == HCA_QPS_RESET)
		return;
	trace_qp_fatal(d->devno, qp->qpn);
	hm_qp_error(d, qp, HCA_QPS_ERR, t);
	hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_FATAL, data);
}

void hm_srq_fatal(struct hm_dev *d, uint32_t srqn, sim_time_t t)
{
	struct hm_srq *srq = hm_srq_get(d, srqn);
	uint32_t data[6] = { srqn, 0, 0, 0, 0, 0 };

	if (!srq || srq->error)
		return;
	srq->error = true;
	trace_qp_srq_fatal(d->devno, srqn);
	hm_eq_post(d, HCA_EQE_SRQ_ERROR, 0, data);
	for (uint32_t n = 0; n < d->dp->nqps; n++) {
		const struct hm_qp *q = d->dp->qps[n];

		if (q && q->valid && q->has_srq && q->srqn == srqn && q->state != HCA_QPS_RESET &&
		    q->state != HCA_QPS_ERR) {
			sim_time_t tq = t;

			hm_qp_error(d, hm_qpc_get(d, n, &tq), HCA_QPS_ERR, tq);
		}
	}
}

bool hm_qp_migrate(struct hm_dev *d, struct hm_qp *qp, const char *why)
{
	uint32_t data[6] = { qp->qpn, 0, 0, 0, 0, 0 };
	unsigned alt = qp->attr.alt_port_num;

	if (!alt || alt > d->nports || d->ports[alt - 1].state != 4 /* ACTIVE */) {
		/* IBA 17.2.8: the alternate path cannot be used; the QP stays where it is. */
		trace_qp_migrate_fail(d->devno, qp->qpn, alt, why);
		hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_PATH_MIG_ERR, data);
		return false;
	}
	/* The alternate path becomes the primary one; MIGRATED until software re-arms. */
	qp->attr.av = qp->attr.alt_av;
	qp->attr.port_num = qp->attr.alt_port_num;
	qp->attr.pkey_index = qp->attr.alt_pkey_index;
	qp->attr.timeout = qp->attr.alt_timeout;
	qp->attr.path_mig_state = HCA_MIG_MIGRATED;
	trace_qp_migrate(d->devno, qp->qpn, qp->attr.port_num, qp->attr.av.dlid, why);
	hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_PATH_MIG, data);
	return true;
}
