/* qp_cmd: the QP commands' effect on the data path, and flushing a QP's queues
 * (model/qp_cmd.h). */
#include "model/qp_cmd.h"
#include "model/comp.h"
#include "model/req.h"
#include "model/resp.h"
#include "model/wqe_fetch.h"
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
	/* each engine sets up its own part */
	hm_req_create(qp);
	hm_fetch_create(qp);
	hm_comp_create(qp);
	hm_resp_create(qp);
	dp->qps[qpn] = qp;
	/* The new context goes to its backing-store slot; it is not cached until used. */
	hm_qpc_store(d, qp, &t);
}

void hm_qp_destroy(struct hm_dev *d, uint32_t qpn)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *qp = hm_qp_lookup(d, qpn);

	if (!qp)
		return;
	hm_qpc_forget(d, qp);
	hm_rxq_free(qp);
	hm_req_destroy(qp);
	hm_fetch_destroy(qp);
	hm_comp_destroy(qp);
	hm_resp_destroy(qp);
	free(qp);
	dp->qps[qpn] = NULL;
}

/* ---- transitions ---- */

/* RESET: the queues are empty and every engine starts again (IBA 10.3.1). */
static void qp_reset_queues(struct hm_qp *qp)
{
	qp->sq_pi = qp->rq_pi = 0;
	qp->drained_sent = false;
	hm_req_reset(qp);
	hm_fetch_reset(qp);
	hm_comp_reset(qp);
	hm_resp_reset(qp);
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
	/* the PSNs and retry counts each engine takes from the attributes */
	hm_req_modify(qp, a, mask);
	hm_comp_modify(qp, a, mask);
	hm_resp_modify(qp, a, mask);
	qp->state = (uint8_t)next;
	if (next == HCA_QPS_SQD && prev != HCA_QPS_SQD) {
		qp->drained_sent = false;
		hm_qp_check_drained(d, qp);
	}
	if (next == HCA_QPS_RESET)
		qp_reset_queues(qp);
	else if (next == HCA_QPS_ERR && prev != HCA_QPS_ERR)
		hm_qp_flush(d, qp, t);
	else if (next == HCA_QPS_RTS && qp->sq_pi != qp->req.sq_next)
		hm_sched_wake(d, qp, t); /* SQD -> RTS: resume sending */
}

void hm_qp_flush(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	bool sq_only = qp->state == HCA_QPS_SQE;

	/* Every WQE not yet completed, sent or not, completes with WR_FLUSH_ERR, signaled or
	 * not (IBA 10.3.1.2, ERR and SQE states); in ERR every posted receive too. */
	hm_comp_flush(d, qp, t);
	hm_req_flush(qp);
	hm_fetch_flush(qp);
	if (!sq_only)
		hm_resp_flush(d, qp, t);
}
