/* qpc: QP contexts and their on-chip cache (architecture §2). Contexts are backed by a store
 * in host memory that the driver gives the device at INIT_HCA (HM_QPC_BYTES per QPN). The cache
 * holds hca.qpc_cache_entries contexts with LRU replacement: a hit costs pipe.qpc_hit_cycles;
 * a miss costs a DMA read of the slot, plus a DMA write of the evicted entry when dirty. Also here: QP creation, modify (the transition's effect on the queues) and
 * the error flows that move a QP to ERR or SQE and flush it. */
#include "model/dp.h"
#include "sim/trace.h"

#include <stdlib.h>
#include <string.h>

/* The part of struct hm_qp that is context (everything before the cache bookkeeping), as it
 * is stored in a backing-store slot. */
#define QPC_CTX_BYTES offsetof(struct hm_qp, cached)
_Static_assert(QPC_CTX_BYTES <= HM_QPC_BYTES, "QP context larger than its backing-store slot");

struct hm_dp *hm_dp_create(struct hm_dev *d)
{
	struct hm_dp *dp = calloc(1, sizeof(*dp));

	SIM_ASSERT(dp != NULL, "out of memory");
	dp->qpc_entries = (uint32_t)d->cfg.qpc_cache_entries;
	return dp;
}

void hm_dp_destroy(struct hm_dp *dp)
{
	if (!dp)
		return;
	for (uint32_t i = 0; i < dp->nqps; i++) {
		if (dp->qps[i]) {
			hm_rxq_free(dp->qps[i]);
			free(dp->qps[i]->wqe_buf);
			free(dp->qps[i]->flight);
			free(dp->qps[i]->rsge);
			free(dp->qps[i]->rpf_buf);
			free(dp->qps[i]);
		}
	}
	free(dp->qps);
	free(dp->cqs);
	free(dp->srqs);
	free(dp->mkeys);
	free(dp);
}

/* Grow a context array to hold index i. */
static void *grow(void *arr, uint32_t *n, uint32_t i, size_t elem)
{
	uint32_t cap = *n ? *n : 64;
	void *a;

	if (i < *n)
		return arr;
	while (cap <= i)
		cap *= 2;
	a = realloc(arr, (size_t)cap * elem);
	SIM_ASSERT(a != NULL, "out of memory growing a context table to %u", cap);
	memset((char *)a + (size_t)*n * elem, 0, (size_t)(cap - *n) * elem);
	*n = cap;
	return a;
}

void hm_mkey_write(struct hm_dev *d, uint32_t index, const struct hm_mkey *mk)
{
	d->dp->mkeys = grow(d->dp->mkeys, &d->dp->nmkeys, index, sizeof(*mk));
	d->dp->mkeys[index] = *mk;
}

void hm_cq_write(struct hm_dev *d, uint32_t cqn, const struct hm_cq *cq)
{
	d->dp->cqs = grow(d->dp->cqs, &d->dp->ncqs, cqn, sizeof(*cq));
	d->dp->cqs[cqn] = *cq;
}

struct hm_cq *hm_cq_get(struct hm_dev *d, uint32_t cqn)
{
	return cqn < d->dp->ncqs && d->dp->cqs[cqn].valid ? &d->dp->cqs[cqn] : NULL;
}

void hm_srq_write(struct hm_dev *d, uint32_t srqn, const struct hm_srq *srq)
{
	d->dp->srqs = grow(d->dp->srqs, &d->dp->nsrqs, srqn, sizeof(*srq));
	d->dp->srqs[srqn] = *srq;
}

struct hm_srq *hm_srq_get(struct hm_dev *d, uint32_t srqn)
{
	return srqn < d->dp->nsrqs && d->dp->srqs[srqn].valid ? &d->dp->srqs[srqn] : NULL;
}

void hm_qp_create(struct hm_dev *d, uint32_t qpn, const struct hm_qp *init, sim_time_t t)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *qp;

	if (qpn >= dp->nqps) {
		uint32_t n = dp->nqps;

		dp->qps = grow(dp->qps, &n, qpn, sizeof(*dp->qps));
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
	qp->cached = false;
	qp->dirty = false;
	qp->lru_prev = qp->lru_next = NULL;
	qp->rpf_valid = false;
	if (sim_dma_write_timed(d->fn, dp->qpc_base + (uint64_t)qpn * HM_QPC_BYTES, qp,
				QPC_CTX_BYTES, &t))
		trace_warn_qpc_fault(d->devno, qpn, "write");
}

static void lru_unlink(struct hm_dp *dp, struct hm_qp *q)
{
	if (q->lru_prev)
		q->lru_prev->lru_next = q->lru_next;
	else
		dp->lru_old = q->lru_next;
	if (q->lru_next)
		q->lru_next->lru_prev = q->lru_prev;
	else
		dp->lru_new = q->lru_prev;
	q->lru_prev = q->lru_next = NULL;
}

static void lru_append(struct hm_dp *dp, struct hm_qp *q)
{
	q->lru_prev = dp->lru_new;
	q->lru_next = NULL;
	if (dp->lru_new)
		dp->lru_new->lru_next = q;
	else
		dp->lru_old = q;
	dp->lru_new = q;
}

void hm_qp_destroy(struct hm_dev *d, uint32_t qpn)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *qp = qpn < dp->nqps ? dp->qps[qpn] : NULL;

	if (!qp)
		return;
	if (qp->cached) {
		lru_unlink(dp, qp);
		dp->qpc_used--;
	}
	hm_rxq_free(qp);
	free(qp->wqe_buf);
	free(qp->flight);
	free(qp->rsge);
	free(qp->rpf_buf);
	free(qp);
	dp->qps[qpn] = NULL;
}

const struct hm_qp *hm_qp_peek(struct hm_dev *d, uint32_t qpn)
{
	return qpn < d->dp->nqps ? d->dp->qps[qpn] : NULL;
}

/* Evict the least recently used cached context, writing it back when dirty. */
static void qpc_evict(struct hm_dev *d, sim_time_t *t)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *victim = dp->lru_old;

	SIM_ASSERT(victim != NULL, "QPC cache full of nothing (%u used)", dp->qpc_used);
	lru_unlink(dp, victim);
	if (victim->dirty) {
		dp->qpc_writebacks++;
		if (sim_dma_write_timed(d->fn, dp->qpc_base + (uint64_t)victim->qpn * HM_QPC_BYTES,
					victim, QPC_CTX_BYTES, t))
			trace_warn_qpc_fault(d->devno, victim->qpn, "write");
	}
	victim->cached = false;
	victim->dirty = false;
	dp->qpc_used--;
}

struct hm_qp *hm_qpc_get(struct hm_dev *d, uint32_t qpn, sim_time_t *t)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *qp = qpn < dp->nqps ? dp->qps[qpn] : NULL;

	if (!qp)
		return NULL;
	if (qp->cached) {
		lru_unlink(dp, qp);
		lru_append(dp, qp);
		dp->qpc_hits++;
		*t = sim_clock_after(&d->core, *t, d->cfg.qpc_hit_cycles);
	} else {
		dp->qpc_misses++;
		if (dp->qpc_used >= dp->qpc_entries)
			qpc_evict(d, t);
		uint8_t slot[QPC_CTX_BYTES];

		/* The slot is read as the miss requires (time and PCIe traffic are real). The
		 * model keeps the context itself on chip as the authority: the backing store
		 * is host memory a buggy driver could overwrite, and the device must not take
		 * sizes and indexes from it. */
		if (sim_dma_read_timed(d->fn, dp->qpc_base + (uint64_t)qpn * HM_QPC_BYTES, slot,
				       QPC_CTX_BYTES, t))
			trace_warn_qpc_fault(d->devno, qpn, "read");
		qp->cached = true;
		lru_append(dp, qp);
		dp->qpc_used++;
	}
	qp->dirty = true;
	return qp;
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
		hm_sched_add(d, qp); /* SQD -> RTS: resume sending */
		hm_req_kick(d, t);
	}
}

void hm_qp_check_drained(struct hm_dev *d, struct hm_qp *qp)
{
	uint32_t data[6] = { qp->qpn, 0, 0, 0, 0, 0 };

	/* IBA 10.3.1.2 / 11.6.3: SQD.drained once every WQE started before the transition
	 * has completed; the event only with en_sqd_async_notify. */
	if (qp->state != HCA_QPS_SQD || qp->drained_sent || qp->cur_started ||
	    qp->sq_done != qp->sq_next)
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
		hm_qp_flush(d, qp, t);
}

/* True (and one injected error used up) if the next read of client for object num is to
 * fail as a PCIe completion with Unsupported Request status would. */
static bool dma_inject_hit(struct hm_dev *d, enum hm_dma_client client, uint32_t num)
{
	for (int i = 0; i < HM_DMA_INJECT_MAX; i++) {
		struct hm_dma_inject *j = &d->dp->dma_inject[i];

		if (j->left && j->client == client && j->num == num) {
			j->left--;
			trace_pcie_dma_rd_inject(d->devno, client, num, j->left);
			return true;
		}
	}
	return false;
}

bool hm_wqe_read(struct hm_dev *d, enum hm_dma_client client, uint32_t num, uint64_t addr,
		 void *buf, size_t len, sim_time_t *t)
{
	return dma_inject_hit(d, client, num) || sim_dma_read_timed(d->fn, addr, buf, len, t);
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
	qp->dirty = true;
	trace_qp_migrate(d->devno, qp->qpn, qp->attr.port_num, qp->attr.av.dlid, why);
	hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_PATH_MIG, data);
	return true;
}
