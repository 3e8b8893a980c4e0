/* sched: the C twin of the send arbiter (rtl/sched.sv, docs/blocks/sched.md) — the doorbell
 * decode's verdict and the round robin of QPs with work — and its port's entry points
 * (model/twin.h), and the loop that hands the requester one QP per step. The doorbell glue that
 * feeds it is model/doorbell.c. */
#include "model/sched.h"
#include "model/qpc.h"
#include "model/req.h"
#include "model/waves.h"
#include "sim/kernel.h"

#include <stdlib.h>
#include <string.h>

/* ---- the C twin ---- */

struct sched_twin {
	uint32_t nqps;    /* QPNs 0 .. nqps-1 */
	uint8_t *pending; /* one byte per QPN: in the FIFO */
	uint32_t *fifo;   /* ring of nqps entries: each QP is in it at most once */
	uint32_t head, len;
};

static void *sched_create(struct hm_dev *d, uint32_t nqps)
{
	struct sched_twin *s = calloc(1, sizeof(*s));

	(void)d;
	SIM_ASSERT(s != NULL, "out of memory");
	s->nqps = nqps;
	s->pending = calloc(nqps, 1);
	s->fifo = calloc(nqps, sizeof(*s->fifo));
	SIM_ASSERT(s->pending && s->fifo, "out of memory for the arbiter of %u QPs", nqps);
	return s;
}

static void sched_destroy(void *b)
{
	struct sched_twin *s = b;

	if (!s)
		return;
	free(s->pending);
	free(s->fifo);
	free(s);
}

static bool sched_enqueue(struct sched_twin *s, uint32_t qpn)
{
	if (qpn >= s->nqps || s->pending[qpn])
		return false;
	s->fifo[(s->head + s->len++) % s->nqps] = qpn;
	s->pending[qpn] = 1;
	return true;
}

static void sched_doorbell(void *b, const struct hm_sched_db_in *in, struct hm_sched_db_out *out)
{
	struct sched_twin *s = b;

	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle + in->lat;
	if (in->state == HCA_QPS_RESET || in->state == HCA_QPS_INIT || in->state == HCA_QPS_RTR) {
		out->verdict = HM_SCHED_BAD_STATE;
		return;
	}
	out->new_pi = hm_extend16(in->sq_pi, in->pi16);
	if (out->new_pi - in->sq_done > in->sq_entries) {
		out->verdict = HM_SCHED_BAD_INDEX;
		out->new_pi = 0;
		return;
	}
	if (in->state == HCA_QPS_ERR || in->state == HCA_QPS_SQE) {
		out->verdict = HM_SCHED_FLUSH;
		return;
	}
	out->verdict = HM_SCHED_QUEUED;
	sched_enqueue(s, in->qpn);
}

static void sched_push(void *b, const struct hm_sched_push_in *in, struct hm_sched_push_out *out)
{
	out->cycle = in->cycle + HM_SCHED_PIPELINE;
	out->queued = sched_enqueue(b, in->qpn);
}

static void sched_pop(void *b, const struct hm_sched_pop_in *in, struct hm_sched_pop_out *out)
{
	struct sched_twin *s = b;

	out->cycle = in->cycle + HM_SCHED_PIPELINE;
	out->valid = s->len > 0;
	out->qpn = 0;
	if (!out->valid)
		return;
	out->qpn = s->fifo[s->head];
	s->head = (s->head + 1) % s->nqps;
	s->len--;
	s->pending[out->qpn] = 0;
}

const struct hm_sched_ops hm_sched_model = {
	{ sched_create, sched_destroy, NULL, NULL, 0, NULL, NULL }, sched_doorbell, sched_push, sched_pop
};

/* ---- the port ---- */

HM_TWIN_OP(sched, doorbell, hm_sched_db_in, hm_sched_db_out, hm_waves_sched_db, NULL,
	   HM_TWIN_FIELD(struct hm_sched_db_out, cycle),
	   HM_TWIN_FIELD(struct hm_sched_db_out, verdict),
	   HM_TWIN_FIELD(struct hm_sched_db_out, new_pi));
HM_TWIN_OP(sched, push, hm_sched_push_in, hm_sched_push_out, hm_waves_sched_push, NULL,
	   HM_TWIN_FIELD(struct hm_sched_push_out, cycle),
	   HM_TWIN_FIELD(struct hm_sched_push_out, queued));
HM_TWIN_OP(sched, pop, hm_sched_pop_in, hm_sched_pop_out, hm_waves_sched_pop, NULL,
	   HM_TWIN_FIELD(struct hm_sched_pop_out, cycle),
	   HM_TWIN_FIELD(struct hm_sched_pop_out, valid),
	   HM_TWIN_FIELD(struct hm_sched_pop_out, qpn));

void hm_sched_doorbell(struct hm_dev *d, const struct hm_sched_db_in *in,
		       struct hm_sched_db_out *out)
{
	struct hm_sched_db_out rtl;

	hm_twin_call(d, &sched_doorbell_op, in->cycle, in, out, &rtl);
	if (out->verdict == HM_SCHED_QUEUED)
		d->dp->sched_maybe = true; /* in the FIFO (if it was not already) */
}

bool hm_sched_push(struct hm_dev *d, uint32_t qpn, uint64_t cycle)
{
	struct hm_sched_push_in in = { cycle, qpn };
	struct hm_sched_push_out out, rtl;

	hm_twin_call(d, &sched_push_op, cycle, &in, &out, &rtl);
	return out.queued;
}

bool hm_sched_pop(struct hm_dev *d, uint64_t cycle, uint32_t *qpn)
{
	struct hm_sched_pop_in in = { cycle };
	struct hm_sched_pop_out out, rtl;

	hm_twin_call(d, &sched_pop_op, cycle, &in, &out, &rtl);
	*qpn = out.qpn;
	return out.valid;
}

void hm_sched_add(struct hm_dev *d, struct hm_qp *qp)
{
	if (hm_sched_push(d, qp->qpn, hm_dev_cycle(d)))
		d->dp->sched_maybe = true;
}

static uint32_t sched_next(struct hm_dev *d)
{
	uint32_t qpn;

	if (!hm_sched_pop(d, hm_dev_cycle(d), &qpn)) {
		d->dp->sched_maybe = false;
		return 0;
	}
	return qpn;
}

static void req_step(void *arg);

void hm_sched_kick(struct hm_dev *d, sim_time_t t)
{
	struct hm_dp *dp = d->dp;
	sim_time_t now = sim_now(d->k);

	if (dp->req_busy || !dp->sched_maybe)
		return;
	dp->req_busy = true;
	sim_schedule_at(d->k,
			sim_clock_after(&d->core, t > now ? t : now, d->cfg.sched_cycles), req_step,
			d);
}

/* The requester's step: the first QP in the round robin that can send now sends one packet;
 * the ones that cannot leave it (they come back with their next doorbell, ACK or timer). */
static void req_step(void *arg)
{
	struct hm_dev *d = arg;
	struct hm_dp *dp = d->dp;
	sim_time_t t = sim_now(d->k);
	uint32_t qpn;

	dp->req_busy = false;
	while ((qpn = sched_next(d)) != 0) {
		struct hm_qp *qp = hm_qpc_get(d, qpn, &t);

		if (!qp || !hm_req_run(d, qp, &t))
			continue;
		if (hm_req_more(qp))
			hm_sched_add(d, qp);
		dp->tx_pkts++;
		break;
	}
	hm_sched_kick(d, t);
}

void hm_sched_wake(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	hm_sched_add(d, qp);
	hm_sched_kick(d, t);
}

void hm_sched_retry(struct hm_dev *d, struct hm_qp *qp, uint32_t psn, sim_time_t t)
{
	if (hm_req_rewind(d, qp, psn))
		hm_sched_wake(d, qp, t);
}
