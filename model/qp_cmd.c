/* qp_cmd: the QP commands' effect on the data path, and flushing a QP's queues
 * (model/qp_cmd.h). */
#include "model/qp_cmd.h"
#include "model/cqe.h"
#include "model/eq.h"
#include "model/qp.h"
#include "model/qpc.h"
#include "model/rx.h"
#include "model/sched.h"

#include <stdlib.h>
#include <string.h>

void hm_qp_create(struct hm_dev *d, uint32_t qpn, const struct hm_qp *init, sim_time_t t)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *qp;

	if (qpn >= dp->nqps) {
		uint32_t n = dp->nqps;

		dp->qps = hm_ctx_grow(dp->qps, &n, qpn, sizeof(*dp->qps));
		dp->nqps = n;
	}
	SIM_ASSERT(!dp->qps[qpn], "QP 0x%x created twice", qpn);
	qp = calloc(1, sizeof(*qp));
	SIM_ASSERT(qp != NULL, "out of memory");
	*qp = *init;
	qp->valid = true;
	qp->qpn = qpn;
	qp->state = HCA_QPS_RESET;
	qp->flight = calloc(qp->sq_entries ? qp->sq_entries : 1, sizeof(*qp->flight));
	qp->wqe_buf = malloc((size_t)(qp->sq_entries ? qp->sq_entries : 1) * qp->sq_stride + 1);
	qp->rsge = calloc(HM_MAX_SGE, sizeof(*qp->rsge));
	qp->rpf_buf = calloc(HM_MAX_SGE, HCA_SGE_BYTES);
	SIM_ASSERT(qp->flight && qp->wqe_buf && qp->rsge && qp->rpf_buf, "out of memory");
	dp->qps[qpn] = qp;
	/* The new context goes to its backing-store slot; it is not cached until used. */
	qp->rpf_valid = false;
	hm_qpc_store(d, qp, &t);
}

void hm_qp_destroy(struct hm_dev *d, uint32_t qpn)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *qp = qpn < dp->nqps ? dp->qps[qpn] : NULL;

	if (!qp)
		return;
	hm_qpc_forget(d, qp);
	hm_rxq_free(qp);
	free(qp->wqe_buf);
	free(qp->flight);
	free(qp->rsge);
	free(qp->rpf_buf);
	free(qp);
	dp->qps[qpn] = NULL;
}

/* ---- transitions ---- */

static void qp_reset_queues(struct hm_qp *qp)
{
	qp->sq_pi = qp->sq_next = qp->sq_done = 0;
	qp->sq_fetch_lo = qp->sq_fetched = 0;
	qp->sq_fetch_err = false;
	qp->sq_fetch_ready = 0;
	qp->sq_psn = 0;
	qp->cur_off = 0;
	qp->cur_started = false;
	qp->rd_out = 0;
	qp->rq_pi = qp->rq_ci = 0;
	qp->epsn = 0;
	qp->msn = 0;
	qp->nak_sent = qp->in_msg = qp->uc_drop = false;
	qp->recv_off = 0;
	qp->rd_in = 0;
	qp->rnr_wait = false;
	qp->timer_on = false; /* a pending timer event finds it off */
	qp->comm_est = false;
	qp->drained_sent = false;
	qp->last_wqe_sent = false;
	qp->nak_seen = false;
	qp->rd_gap = false;
	memset(qp->atomics, 0, sizeof(qp->atomics)); /* no result survives a reset */
	qp->rpf_valid = false;
	qp->atomic_next = 0;
	hm_rxq_free(qp);
}

void hm_qp_modify(struct hm_dev *d, uint32_t qpn, const struct hca_qp_attr *a, uint32_t mask,
		  unsigned next, sim_time_t t)
{
	struct hm_qp *qp = hm_qpc_get(d, qpn, &t);
	unsigned prev, prev_mig;

	SIM_ASSERT(qp != NULL, "modify of unknown qpn 0x%x", qpn);
	prev = qp->state;
	prev_mig = qp->attr.path_mig_state;
	qp->attr = *a;
	if (mask & (HCA_QPA_PATH_MIG_STATE | HCA_QPA_ALT_PATH)) {
		/* IBA 17.2.8: REARM becomes ARMED once an alternate path is loaded (at once: the
		 * model needs no handshake to load it); MIGRATED written while ARMED is a
		 * migration the software asks for. */
		if (qp->attr.path_mig_state == HCA_MIG_REARM && qp->attr.alt_port_num)
			qp->attr.path_mig_state = HCA_MIG_ARMED;
		else if ((mask & HCA_QPA_PATH_MIG_STATE) && a->path_mig_state == HCA_MIG_MIGRATED &&
			 prev_mig == HCA_MIG_ARMED) {
			qp->attr.path_mig_state = HCA_MIG_ARMED;
			hm_qp_migrate(d, qp, "requested");
		}
	}
	if (mask & HCA_QPA_SQ_PSN) {
		qp->sq_psn = a->sq_psn & HCA_PSN_MASK;
		qp->sent_psn = qp->sq_psn;
		qp->acked_psn = (qp->sq_psn - 1) & HCA_PSN_MASK;
	}
	if (mask & HCA_QPA_RQ_PSN)
		qp->epsn = a->rq_psn & HCA_PSN_MASK;
	if (mask & HCA_QPA_RETRY_CNT)
		qp->retry_left = a->retry_cnt;
	if (mask & HCA_QPA_RNR_RETRY)
		qp->rnr_left = a->rnr_retry;
	qp->state = (uint8_t)next;
	if (next == HCA_QPS_SQD && prev != HCA_QPS_SQD) {
		qp->drained_sent = false;
		hm_qp_check_drained(d, qp);
	}
	if (next == HCA_QPS_RESET)
		qp_reset_queues(qp);
	else if (next == HCA_QPS_ERR && prev != HCA_QPS_ERR)
		hm_qp_flush(d, qp, t);
	else if (next == HCA_QPS_RTS && qp->sq_pi != qp->sq_next) {
		hm_sched_wake(d, qp, t); /* SQD -> RTS: resume sending */
	}
}

void hm_qp_flush(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	bool sq_only = qp->state == HCA_QPS_SQE;

	/* Every WQE not yet completed, sent or not, completes with WR_FLUSH_ERR, signaled or
	 * not (IBA 10.3.1.2, ERR and SQE states). */
	while (qp->sq_done != qp->sq_pi) {
		struct hca_cqe cqe = { 0 };

		cqe.qpn = qp->qpn;
		cqe.wqe_index = (uint16_t)qp->sq_done;
		cqe.opcode = HCA_CQE_OP_SEND;
		cqe.status = HCA_WC_WR_FLUSH_ERR;
		cqe.is_send = 1;
		hm_cqe_post(d, qp->scqn, &cqe, false, t);
		qp->sq_done++;
	}
	qp->sq_next = qp->sq_pi;
	qp->sq_fetch_lo = qp->sq_fetched = qp->sq_pi;
	qp->sq_fetch_err = false;
	qp->cur_started = false;
	qp->rd_out = 0;
	if (sq_only)
		return;
	if (qp->has_srq) {
		/* Receives stay on the SRQ; the consumer learns, once, that the QP is done with
		 * it (IBA 11.6.3.1). */
		uint32_t data[6] = { qp->qpn, 0, 0, 0, 0, 0 };

		if (!qp->last_wqe_sent)
			hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_LAST_WQE_REACHED, data);
		qp->last_wqe_sent = true;
		return;
	}
	while (qp->rq_ci != qp->rq_pi) {
		struct hca_cqe cqe = { 0 };

		cqe.qpn = qp->qpn;
		cqe.wqe_index = (uint16_t)qp->rq_ci;
		cqe.opcode = HCA_CQE_OP_RECV;
		cqe.status = HCA_WC_WR_FLUSH_ERR;
		hm_cqe_post(d, qp->rcqn, &cqe, false, t);
		qp->rq_ci++;
	}
	qp->in_msg = false;
}
