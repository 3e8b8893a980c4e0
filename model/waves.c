/* The model's signals in the wave dump (model/waves.h). Contexts are sampled after every
 * kernel event (sim_set_step_hook): a value is handed to the writer only when it changed.
 * Doorbells, ACK timer expiries, RNR NAKs and sequence NAKs are events, not state: they come
 * from the trace (sim_trace_internal) as one-cycle strobes. The block ports call in with each
 * transaction: inputs and req_valid at the input's cycle, outputs and resp_valid at the
 * output's. */
#include "model/waves.h"
#include "model/ctx.h"
#include "sim/error.h"
#include "sim/hcasim.h"
#include "sim/kernel.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One sampled signal and the value last handed to the writer. */
struct mw {
	struct sim_wsig *s;
	uint64_t last;
	bool set;
};

/* Per QP: the sampled context fields (name, width) ... */
#define QP_SIGNALS(X)                                                                              \
	X(valid, 1)                                                                                \
	X(state, 3)                                                                                \
	X(sq_pi, 32)                                                                               \
	X(sq_next, 32)                                                                             \
	X(sq_done, 32)                                                                             \
	X(sq_psn, 24)                                                                              \
	X(acked_psn, 24)                                                                           \
	X(epsn, 24)                                                                                \
	X(rq_pi, 32)                                                                               \
	X(rq_ci, 32)                                                                               \
	X(retry_left, 8)                                                                           \
	X(rnr_left, 8)                                                                             \
	X(timer_on, 1)                                                                             \
	X(rnr_wait, 1)

struct qpw {
#define X(n, w) struct mw n;
	QP_SIGNALS(X)
#undef X
	/* ... and the strobes from the trace */
	struct sim_wsig *timer_expired; /* req.timeout: the local ACK timer fired */
	struct sim_wsig *rnr_nak;       /* comp.rnr_wait: an RNR NAK was taken */
	struct sim_wsig *nak;           /* resp.nak: the responder sent a NAK */
};

struct cqw {
	struct mw pi, ci, error;
};

struct devw {
	struct hm_dev *d;
	struct qpw **qps; /* by QPN */
	uint32_t nqps;
	struct cqw **cqs; /* by CQN */
	uint32_t ncqs;
	struct mw qpc_hits, qpc_misses, qpc_writebacks;
	struct sim_wsig *db_qpn, *db_pi, *db_kind, *db_strobe;
};

static struct {
	bool on;
	struct devw *devs;
	int ndevs;
} mw;

static struct sim_wsig *sig(const struct hm_dev *d, const char *scope, const char *name,
			    unsigned width)
{
	char full[128];

	snprintf(full, sizeof(full), "hca%d.%s.%s", d->devno, scope, name);
	return sim_waves_signal(full, width);
}

static void put(struct mw *m, sim_time_t t, uint64_t v)
{
	if (m->s && (!m->set || m->last != v)) {
		sim_waves_set(m->s, t, v);
		m->last = v;
		m->set = true;
	}
}

static void *grow(void *p, uint32_t *n, uint32_t want, size_t size)
{
	uint32_t m = *n ? *n : 16;
	void *q;

	while (m <= want)
		m *= 2;
	q = realloc(p, (size_t)m * size);
	SIM_ASSERT(q != NULL, "waves: out of memory");
	memset((char *)q + (size_t)*n * size, 0, (size_t)(m - *n) * size);
	*n = m;
	return q;
}

static struct devw *devw_of(const struct hm_dev *d)
{
	return mw.on && d->devno >= 0 && d->devno < mw.ndevs && mw.devs[d->devno].d == d
		       ? &mw.devs[d->devno]
		       : NULL;
}

static struct qpw *qpw_get(struct devw *v, uint32_t qpn)
{
	struct qpw *q;
	char scope[32];

	if (qpn >= v->nqps)
		v->qps = grow(v->qps, &v->nqps, qpn, sizeof(*v->qps));
	if (v->qps[qpn])
		return v->qps[qpn];
	q = calloc(1, sizeof(*q));
	SIM_ASSERT(q != NULL, "waves: out of memory");
	snprintf(scope, sizeof(scope), "qp%x", qpn);
#define X(n, w) q->n.s = sig(v->d, scope, #n, w);
	QP_SIGNALS(X)
#undef X
	q->timer_expired = sig(v->d, scope, "timer_expired", 1);
	q->rnr_nak = sig(v->d, scope, "rnr_nak", 1);
	q->nak = sig(v->d, scope, "nak", 1);
	{
		sim_time_t now = sim_kernel() ? sim_now(sim_kernel()) : 0;

		sim_waves_set(q->timer_expired, now, 0);
		sim_waves_set(q->rnr_nak, now, 0);
		sim_waves_set(q->nak, now, 0);
	}
	v->qps[qpn] = q;
	return q;
}

static struct cqw *cqw_get(struct devw *v, uint32_t cqn)
{
	struct cqw *c;
	char scope[32];

	if (cqn >= v->ncqs)
		v->cqs = grow(v->cqs, &v->ncqs, cqn, sizeof(*v->cqs));
	if (v->cqs[cqn])
		return v->cqs[cqn];
	c = calloc(1, sizeof(*c));
	SIM_ASSERT(c != NULL, "waves: out of memory");
	snprintf(scope, sizeof(scope), "cq%u", cqn);
	c->pi.s = sig(v->d, scope, "pi", 32);
	c->ci.s = sig(v->d, scope, "ci", 32);
	c->error.s = sig(v->d, scope, "error", 1);
	v->cqs[cqn] = c;
	return c;
}

static void sample_dev(struct devw *v, sim_time_t t)
{
	const struct hm_dp *dp = v->d->dp;

	if (!dp)
		return;
	for (uint32_t n = 0; n < dp->nqps || n < v->nqps; n++) {
		const struct hm_qp *qp = hm_qp_peek(v->d, n);
		struct qpw *q;

		if (!qp || !qp->valid) {
			if (n < v->nqps && v->qps[n])
				put(&v->qps[n]->valid, t, 0);
			continue;
		}
		q = qpw_get(v, n);
		put(&q->valid, t, 1);
		put(&q->state, t, qp->state);
		put(&q->sq_pi, t, qp->sq_pi);
		put(&q->sq_next, t, qp->req.sq_next);
		put(&q->sq_done, t, qp->comp.sq_done);
		put(&q->sq_psn, t, qp->req.sq_psn & 0xffffff);
		put(&q->acked_psn, t, qp->comp.acked_psn & 0xffffff);
		put(&q->epsn, t, qp->resp.epsn & 0xffffff);
		put(&q->rq_pi, t, qp->rq_pi);
		put(&q->rq_ci, t, qp->resp.rq_ci);
		put(&q->retry_left, t, qp->comp.retry_left);
		put(&q->rnr_left, t, qp->comp.rnr_left);
		put(&q->timer_on, t, qp->tmr.on);
		put(&q->rnr_wait, t, qp->comp.rnr_wait);
	}
	for (uint32_t n = 0; n < dp->ncqs; n++) {
		const struct hm_cq *cq = &dp->cqs[n];
		struct cqw *c;

		if (!cq->valid)
			continue;
		c = cqw_get(v, n);
		put(&c->pi, t, cq->pi);
		put(&c->ci, t, cq->ci);
		put(&c->error, t, cq->error);
	}
	put(&v->qpc_hits, t, dp->qpc_hits);
	put(&v->qpc_misses, t, dp->qpc_misses);
	put(&v->qpc_writebacks, t, dp->qpc_writebacks);
}

static void sample_all(void)
{
	sim_time_t t;

	if (!mw.on || !sim_kernel())
		return;
	t = sim_now(sim_kernel());
	for (int i = 0; i < mw.ndevs; i++)
		if (mw.devs[i].d)
			sample_dev(&mw.devs[i], t);
	sim_waves_advance(t);
}

static void on_step(void *arg)
{
	(void)arg;
	sample_all();
}

static sim_time_t cycle_ps(const struct hm_dev *d)
{
	return d->core.period_ps ? d->core.period_ps : 1;
}

static void on_trace(void *arg, uint64_t t, int dev, int ev, const char *fields)
{
	struct devw *v;
	uint64_t qpn, pi;

	(void)arg;
	if (!mw.on || dev < 0 || dev >= mw.ndevs || !mw.devs[dev].d)
		return;
	v = &mw.devs[dev];
	switch (ev) {
	case SIM_TEV_db_sq:
	case SIM_TEV_db_rq:
	case SIM_TEV_db_srq: {
		enum hm_waves_db_kind kind = ev == SIM_TEV_db_sq   ? HM_WAVES_DB_SQ
					     : ev == SIM_TEV_db_rq ? HM_WAVES_DB_RQ
								   : HM_WAVES_DB_SRQ;

		if (!hcasim_trace_field(fields, kind == HM_WAVES_DB_SRQ ? "srq" : "qpn", &qpn) ||
		    !hcasim_trace_field(fields, "pi", &pi))
			return;
		sim_waves_set(v->db_qpn, t, qpn);
		sim_waves_set(v->db_pi, t, pi);
		sim_waves_set(v->db_kind, t, (uint64_t)kind);
		sim_waves_strobe(v->db_strobe, t, cycle_ps(v->d));
		return;
	}
	case SIM_TEV_req_timeout:
		if (hcasim_trace_field(fields, "qpn", &qpn) && qpn < (1u << 24))
			sim_waves_strobe(qpw_get(v, (uint32_t)qpn)->timer_expired, t, cycle_ps(v->d));
		return;
	case SIM_TEV_comp_rnr_wait:
		if (hcasim_trace_field(fields, "qpn", &qpn) && qpn < (1u << 24))
			sim_waves_strobe(qpw_get(v, (uint32_t)qpn)->rnr_nak, t, cycle_ps(v->d));
		return;
	case SIM_TEV_resp_nak:
		if (hcasim_trace_field(fields, "qpn", &qpn) && qpn < (1u << 24))
			sim_waves_strobe(qpw_get(v, (uint32_t)qpn)->nak, t, cycle_ps(v->d));
		return;
	default:
		return;
	}
}

int hm_waves_start(struct hm_dev *const *devs, int n)
{
	int rc;

	hm_waves_stop();
	if (!sim_waves_on)
		return sim_error(-EINVAL, "waves: no dump is open");
	mw.devs = calloc(n > 0 ? (size_t)n : 1, sizeof(*mw.devs));
	if (!mw.devs)
		return sim_error(-ENOMEM, "waves: out of memory");
	mw.ndevs = n;
	for (int i = 0; i < n; i++) {
		struct devw *v = &mw.devs[i];
		struct hm_dev *d = devs[i];

		if (!d || d->devno != i)
			continue;
		v->d = d;
		v->qpc_hits.s = sig(d, "qpc", "hits", 64);
		v->qpc_misses.s = sig(d, "qpc", "misses", 64);
		v->qpc_writebacks.s = sig(d, "qpc", "writebacks", 64);
		v->db_qpn = sig(d, "db", "qpn", 24);
		v->db_pi = sig(d, "db", "pi", 32);
		v->db_kind = sig(d, "db", "kind", 2);
		v->db_strobe = sig(d, "db", "strobe", 1);
		sim_waves_set(v->db_strobe, 0, 0);
		for (int b = 0; b < HM_TWIN_COUNT; b++) {
			char scope[32];

			snprintf(scope, sizeof(scope), "%s.txn", hm_twin_name((enum hm_twin)b));
			sim_waves_set(sig(d, scope, "req_valid", 1), 0, 0);
			sim_waves_set(sig(d, scope, "resp_valid", 1), 0, 0);
		}
	}
	rc = sim_trace_internal("db,req,comp,resp", on_trace, NULL);
	if (rc) {
		free(mw.devs);
		memset(&mw, 0, sizeof(mw));
		return rc;
	}
	mw.on = true;
	sim_set_step_hook(on_step, NULL);
	sample_all();
	return 0;
}

void hm_waves_stop(void)
{
	if (!mw.on)
		return;
	sample_all();
	sim_set_step_hook(NULL, NULL);
	sim_trace_internal(NULL, NULL, NULL);
	for (int i = 0; i < mw.ndevs; i++) {
		struct devw *v = &mw.devs[i];

		for (uint32_t q = 0; q < v->nqps; q++)
			free(v->qps[q]);
		for (uint32_t c = 0; c < v->ncqs; c++)
			free(v->cqs[c]);
		free(v->qps);
		free(v->cqs);
	}
	free(mw.devs);
	memset(&mw, 0, sizeof(mw));
}

/* ---- block transactions: hca<dev>.<block>.txn.* ----
 * Named as the RTL blocks' pins are (rtl/<block>.sv): req_<input field>, resp_<output field>,
 * req_valid / resp_valid strobes, req_cycle / resp_cycle the core cycles of the transaction. */

static void txn(const struct hm_dev *d, const char *block, const char *name, unsigned width,
		sim_time_t t, uint64_t v)
{
	char scope[32];

	snprintf(scope, sizeof(scope), "%s.txn", block);
	sim_waves_set(sig(d, scope, name, width), t, v);
}

static void txn_strobe(const struct hm_dev *d, const char *block, const char *name, sim_time_t t)
{
	char scope[32];

	snprintf(scope, sizeof(scope), "%s.txn", block);
	sim_waves_strobe(sig(d, scope, name, 1), t, cycle_ps(d));
}

void hm_waves_sched_db(struct hm_dev *d, const struct hm_sched_db_in *in,
		       const struct hm_sched_db_out *out)
{
	sim_time_t ti = in->cycle * cycle_ps(d), to = out->cycle * cycle_ps(d);

	if (!devw_of(d))
		return;
	txn(d, "sched", "req_op", 2, ti, HM_WAVES_SCHED_DOORBELL);
	txn(d, "sched", "resp_op", 2, to, HM_WAVES_SCHED_DOORBELL);
	txn(d, "sched", "req_cycle", 64, ti, in->cycle);
	txn(d, "sched", "resp_cycle", 64, to, out->cycle);
	txn(d, "sched", "req_lat", 32, ti, in->lat);
	txn(d, "sched", "req_qpn", 24, ti, in->qpn);
	txn(d, "sched", "req_pi16", 16, ti, in->pi16);
	txn(d, "sched", "req_state", 3, ti, in->state);
	txn(d, "sched", "req_sq_pi", 32, ti, in->sq_pi);
	txn(d, "sched", "req_sq_done", 32, ti, in->sq_done);
	txn(d, "sched", "req_sq_entries", 32, ti, in->sq_entries);
	txn_strobe(d, "sched", "req_valid", ti);
	txn(d, "sched", "resp_verdict", 2, to, out->verdict);
	txn(d, "sched", "resp_new_pi", 32, to, out->new_pi);
	txn_strobe(d, "sched", "resp_valid", to);
}

void hm_waves_sched_push(struct hm_dev *d, const struct hm_sched_push_in *in,
			 const struct hm_sched_push_out *out)
{
	sim_time_t ti = in->cycle * cycle_ps(d), to = out->cycle * cycle_ps(d);

	if (!devw_of(d))
		return;
	txn(d, "sched", "req_op", 2, ti, HM_WAVES_SCHED_PUSH);
	txn(d, "sched", "resp_op", 2, to, HM_WAVES_SCHED_PUSH);
	txn(d, "sched", "req_cycle", 64, ti, in->cycle);
	txn(d, "sched", "resp_cycle", 64, to, out->cycle);
	txn(d, "sched", "req_qpn", 24, ti, in->qpn);
	txn_strobe(d, "sched", "req_valid", ti);
	txn(d, "sched", "resp_queued", 1, to, out->queued);
	txn_strobe(d, "sched", "resp_valid", to);
}

void hm_waves_sched_pop(struct hm_dev *d, const struct hm_sched_pop_in *in,
			const struct hm_sched_pop_out *out)
{
	sim_time_t ti = in->cycle * cycle_ps(d), to = out->cycle * cycle_ps(d);

	if (!devw_of(d))
		return;
	txn(d, "sched", "req_op", 2, ti, HM_WAVES_SCHED_POP);
	txn(d, "sched", "resp_op", 2, to, HM_WAVES_SCHED_POP);
	txn(d, "sched", "req_cycle", 64, ti, in->cycle);
	txn(d, "sched", "resp_cycle", 64, to, out->cycle);
	txn_strobe(d, "sched", "req_valid", ti);
	txn(d, "sched", "resp_pop_valid", 1, to, out->valid);
	if (out->valid)
		txn(d, "sched", "resp_qpn", 24, to, out->qpn);
	txn_strobe(d, "sched", "resp_valid", to);
}

void hm_waves_cqe(struct hm_dev *d, const struct hm_cqe_in *in, const struct hm_cqe_out *out)
{
	sim_time_t ti = in->cycle * cycle_ps(d), to = out->cycle * cycle_ps(d);

	if (!devw_of(d))
		return;
	txn(d, "cqe", "req_cycle", 64, ti, in->cycle);
	txn(d, "cqe", "resp_cycle", 64, to, out->cycle);
	txn(d, "cqe", "req_lat", 32, ti, in->lat);
	txn(d, "cqe", "req_cqn", 24, ti, in->cqn);
	txn(d, "cqe", "req_pi", 32, ti, in->pi);
	txn(d, "cqe", "req_ci", 32, ti, in->ci);
	txn(d, "cqe", "req_log_size", 5, ti, in->log_size);
	txn(d, "cqe", "req_arm", 2, ti, in->arm);
	txn(d, "cqe", "req_solicited", 1, ti, in->solicited);
	txn(d, "cqe", "req_ci_fresh", 1, ti, in->ci_fresh);
	txn(d, "cqe", "req_qpn", 32, ti, in->cqe.qpn);
	txn(d, "cqe", "req_opcode", 8, ti, in->cqe.opcode);
	txn(d, "cqe", "req_status", 8, ti, in->cqe.status);
	txn(d, "cqe", "req_byte_len", 32, ti, in->cqe.byte_len);
	txn(d, "cqe", "req_wqe_index", 16, ti, in->cqe.wqe_index);
	txn_strobe(d, "cqe", "req_valid", ti);
	txn(d, "cqe", "resp_action", 2, to, out->action);
	if (out->action == HM_CQE_WRITE) {
		txn(d, "cqe", "resp_slot", 32, to, out->slot);
		txn(d, "cqe", "resp_new_pi", 32, to, out->new_pi);
		txn(d, "cqe", "resp_new_arm", 2, to, out->new_arm);
		txn(d, "cqe", "resp_event", 1, to, out->event);
		txn(d, "cqe", "resp_owner", 1, to, out->image.owner & 1);
	}
	txn_strobe(d, "cqe", "resp_valid", to);
}

void hm_waves_psn(struct hm_dev *d, const struct hm_psn_in *in, const struct hm_psn_out *out)
{
	sim_time_t ti = in->cycle * cycle_ps(d), to = out->cycle * cycle_ps(d);

	if (!devw_of(d))
		return;
	txn(d, "psn", "req_cycle", 64, ti, in->cycle);
	txn(d, "psn", "resp_cycle", 64, to, out->cycle);
	txn(d, "psn", "req_psn", 24, ti, in->psn);
	txn(d, "psn", "req_epsn", 24, ti, in->epsn);
	txn(d, "psn", "req_nak_sent", 1, ti, in->nak_sent);
	txn_strobe(d, "psn", "req_valid", ti);
	txn(d, "psn", "resp_cls", 2, to, out->cls);
	txn(d, "psn", "resp_send_nak", 1, to, out->send_nak);
	txn(d, "psn", "resp_nak_sent", 1, to, out->nak_sent);
	txn_strobe(d, "psn", "resp_valid", to);
}

void hm_waves_mkey(struct hm_dev *d, const struct hm_mkey_in *in, const struct hm_mkey_out *out)
{
	sim_time_t ti = in->cycle * cycle_ps(d), to = out->cycle * cycle_ps(d);

	if (!devw_of(d))
		return;
	txn(d, "mkey", "req_cycle", 64, ti, in->cycle);
	txn(d, "mkey", "resp_cycle", 64, to, out->cycle);
	txn(d, "mkey", "req_remote", 1, ti, in->remote);
	txn(d, "mkey", "req_key", 32, ti, in->key);
	txn(d, "mkey", "req_pdn", 32, ti, in->pdn);
	txn(d, "mkey", "req_va", 64, ti, in->va);
	txn(d, "mkey", "req_len", 64, ti, in->len);
	txn(d, "mkey", "req_access", 32, ti, in->access);
	txn(d, "mkey", "req_ctx_mw_type", 2, ti, in->ctx.mw_type);
	txn_strobe(d, "mkey", "req_valid", ti);
	txn(d, "mkey", "resp_result", 3, to, out->result);
	if (out->result == HM_MKEY_OK)
		txn(d, "mkey", "resp_iova", 64, to, out->iova);
	txn_strobe(d, "mkey", "resp_valid", to);
}

/* A wqe_fetch GET or PREFETCH (req_op 0, 1), the pins of rtl/wqe_fetch.sv. */
void hm_waves_wqe_fetch(struct hm_dev *d, const struct hm_wqe_fetch_in *in,
			const struct hm_wqe_fetch_out *out)
{
	sim_time_t ti = in->cycle * cycle_ps(d), to = out->cycle * cycle_ps(d);

	if (!devw_of(d))
		return;
	txn(d, "wqe_fetch", "req_cycle", 64, ti, in->cycle);
	txn(d, "wqe_fetch", "resp_cycle", 64, to, out->cycle);
	txn(d, "wqe_fetch", "req_op", 2, ti, in->op);
	txn(d, "wqe_fetch", "req_qpn", 24, ti, in->qpn);
	txn(d, "wqe_fetch", "req_idx", 32, ti, in->idx);
	txn(d, "wqe_fetch", "req_sq_pi", 32, ti, in->sq_pi);
	txn(d, "wqe_fetch", "req_win_lo", 32, ti, in->win.lo);
	txn(d, "wqe_fetch", "req_win_fetched", 32, ti, in->win.fetched);
	txn_strobe(d, "wqe_fetch", "req_valid", ti);
	txn(d, "wqe_fetch", "resp_result", 2, to, out->result);
	txn(d, "wqe_fetch", "resp_reads", 8, to, out->reads);
	txn(d, "wqe_fetch", "resp_win_lo", 32, to, out->win.lo);
	txn(d, "wqe_fetch", "resp_win_fetched", 32, to, out->win.fetched);
	txn(d, "wqe_fetch", "resp_win_err", 1, to, out->win.err);
	txn_strobe(d, "wqe_fetch", "resp_valid", to);
}

/* A wqe_fetch CHECK (req_op 2). */
void hm_waves_wqe_check(struct hm_dev *d, const struct hm_wqe_check_in *in,
			const struct hm_wqe_check_out *out)
{
	sim_time_t ti = in->cycle * cycle_ps(d), to = out->cycle * cycle_ps(d);

	if (!devw_of(d))
		return;
	txn(d, "wqe_fetch", "req_cycle", 64, ti, in->cycle);
	txn(d, "wqe_fetch", "resp_cycle", 64, to, out->cycle);
	txn(d, "wqe_fetch", "req_op", 2, ti, 2);
	txn(d, "wqe_fetch", "req_opcode", 8, ti, in->opcode);
	txn(d, "wqe_fetch", "req_num_sge", 32, ti, in->num_sge);
	txn_strobe(d, "wqe_fetch", "req_valid", ti);
	txn(d, "wqe_fetch", "resp_status", 8, to, out->status);
	txn(d, "wqe_fetch", "resp_verr", 8, to, out->verr);
	txn(d, "wqe_fetch", "resp_len", 64, to, out->len);
	txn_strobe(d, "wqe_fetch", "resp_valid", to);
}

/* A timers transaction: SET (op 0) or EXPIRE (op 1), the pins of rtl/timers.sv. */
static void waves_timers(struct hm_dev *d, uint64_t cyc_in, uint64_t cyc_out, bool op,
			 uint32_t qpn, uint8_t kind, bool arm, uint64_t at, bool hit,
			 uint64_t resp_at)
{
	sim_time_t ti = cyc_in * cycle_ps(d), to = cyc_out * cycle_ps(d);

	if (!devw_of(d))
		return;
	txn(d, "timers", "req_cycle", 64, ti, cyc_in);
	txn(d, "timers", "resp_cycle", 64, to, cyc_out);
	txn(d, "timers", "req_op", 1, ti, op);
	txn(d, "timers", "req_qpn", 24, ti, qpn);
	txn(d, "timers", "req_kind", 1, ti, kind);
	txn(d, "timers", "req_arm", 1, ti, arm);
	txn(d, "timers", "req_at", 64, ti, at);
	txn_strobe(d, "timers", "req_valid", ti);
	txn(d, "timers", "resp_hit", 1, to, hit);
	txn(d, "timers", "resp_at", 64, to, resp_at);
	txn_strobe(d, "timers", "resp_valid", to);
}

void hm_waves_timers_set(struct hm_dev *d, const struct hm_timers_set_in *in,
			 const struct hm_timers_set_out *out)
{
	waves_timers(d, in->cycle, out->cycle, 0, in->qpn, in->kind, in->arm, in->at,
		     out->was_armed, out->was_at);
}

void hm_waves_timers_expire(struct hm_dev *d, const struct hm_timers_expire_in *in,
			    const struct hm_timers_expire_out *out)
{
	waves_timers(d, in->cycle, out->cycle, 1, in->qpn, in->kind, 0, 0, out->fired, out->at);
}

/* The front end's transaction, and its PSN stage's in psn's scope (rtl/resp_fe.sv instantiates
 * rtl/psn.sv: the stage answers in the cycle the request is taken). */
void hm_waves_resp_fe(struct hm_dev *d, const struct hm_resp_fe_in *in,
		      const struct hm_resp_fe_out *out)
{
	sim_time_t ti = in->cycle * cycle_ps(d), to = out->cycle * cycle_ps(d);
	bool uc = in->qp_type == HCA_QPT_UC;
	struct hm_psn_in pi = { in->cycle, in->psn, in->epsn, in->nak_sent || uc };
	struct hm_psn_out po = { in->cycle, out->psn_cls, out->send_nak,
				 uc ? out->psn_cls != HM_PSN_EXPECTED : out->nak_sent };

	if (!devw_of(d))
		return;
	txn(d, "resp_fe", "req_cycle", 64, ti, in->cycle);
	txn(d, "resp_fe", "resp_cycle", 64, to, out->cycle);
	txn(d, "resp_fe", "req_qpn", 24, ti, in->qpn);
	txn(d, "resp_fe", "req_pkt_opcode", 8, ti, in->opcode);
	txn(d, "resp_fe", "req_psn", 24, ti, in->psn);
	txn(d, "resp_fe", "req_epsn", 24, ti, in->epsn);
	txn(d, "resp_fe", "req_paylen", 32, ti, in->paylen);
	txn_strobe(d, "resp_fe", "req_valid", ti);
	txn(d, "resp_fe", "resp_verdict", 4, to, out->verdict);
	txn(d, "resp_fe", "resp_kind", 2, to, out->kind);
	txn(d, "resp_fe", "resp_psn_cls", 2, to, out->psn_cls);
	txn(d, "resp_fe", "resp_key", 3, to, out->key);
	txn_strobe(d, "resp_fe", "resp_valid", to);
	hm_waves_psn(d, &pi, &po);
}

/* A qpc transaction: LOOKUP (op 0), COMPLETE (op 1) or FORGET (op 2), the pins of rtl/qpc.sv. */
static void waves_qpc(struct hm_dev *d, uint64_t cyc_in, uint64_t cyc_out, unsigned op,
		      uint32_t qpn, bool write, uint8_t tag, const struct hm_qpc_out *out)
{
	sim_time_t ti = cyc_in * cycle_ps(d), to = cyc_out * cycle_ps(d);

	if (!devw_of(d))
		return;
	txn(d, "qpc", "req_cycle", 64, ti, cyc_in);
	txn(d, "qpc", "resp_cycle", 64, to, cyc_out);
	txn(d, "qpc", "req_op", 2, ti, op);
	txn(d, "qpc", "req_qpn", 24, ti, qpn);
	txn(d, "qpc", "req_write", 1, ti, write);
	txn(d, "qpc", "req_tag", 1, ti, tag);
	txn_strobe(d, "qpc", "req_valid", ti);
	txn(d, "qpc", "resp_done", 1, to, out->done);
	txn(d, "qpc", "resp_hit", 1, to, out->hit);
	txn(d, "qpc", "resp_evict", 1, to, out->evict);
	txn(d, "qpc", "resp_victim", 24, to, out->victim);
	txn(d, "qpc", "resp_wb", 1, to, out->wb);
	txn(d, "qpc", "resp_dma", 2, to, out->req);
	txn(d, "qpc", "resp_dma_tag", 1, to, out->req_tag);
	txn(d, "qpc", "resp_dma_addr", 64, to, out->req_addr);
	txn_strobe(d, "qpc", "resp_valid", to);
}

void hm_waves_qpc_lookup(struct hm_dev *d, const struct hm_qpc_in *in, const struct hm_qpc_out *out)
{
	waves_qpc(d, in->cycle, out->cycle, 0, in->qpn, in->write, 0, out);
}

void hm_waves_qpc_complete(struct hm_dev *d, const struct hm_qpc_cpl_in *in,
			   const struct hm_qpc_out *out)
{
	waves_qpc(d, in->cycle, out->cycle, 1, 0, 0, in->tag, out);
}

void hm_waves_qpc_forget(struct hm_dev *d, const struct hm_qpc_forget_in *in,
			 const struct hm_qpc_forget_out *out)
{
	struct hm_qpc_out o = { .hit = out->was_cached, .done = true };

	waves_qpc(d, in->cycle, out->cycle, 2, in->qpn, 0, 0, &o);
}
