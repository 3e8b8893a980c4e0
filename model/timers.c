/* timers: the per-QP transport timers (model/timers.h, docs/blocks/timers.md): the local ACK
 * timer and the RNR NAK wait. The completer arms, restarts and stops them; this block keeps
 * the kernel events that fire them at their exact expiry (in ps) and hands the expiry back. */
#include "model/timers.h"
#include "model/qp.h"
#include "model/waves.h"

#include <stdlib.h>
#include <string.h>

/* ---- the C twin of rtl/timers.sv: one {armed, at} per QPN and kind ---- */

struct timers_twin {
	uint32_t nqps;
	struct timers_word {
		bool armed;
		uint64_t at; /* core cycle (0 while stopped) */
	} *w;            /* 2 * nqps: word 2 * qpn + kind */
};

static void *timers_create(struct hm_dev *d, uint32_t nqps)
{
	struct timers_twin *t = calloc(1, sizeof(*t));

	(void)d;
	SIM_ASSERT(t != NULL, "out of memory");
	t->nqps = nqps;
	t->w = calloc(2 * (size_t)nqps, sizeof(*t->w)); /* pages untouched stay unmapped */
	SIM_ASSERT(t->w != NULL, "out of memory");
	return t;
}

static void timers_destroy(void *b)
{
	struct timers_twin *t = b;

	free(t->w);
	free(t);
}

static struct timers_word *word(void *b, uint32_t qpn, uint8_t kind)
{
	struct timers_twin *t = b;

	SIM_ASSERT(qpn < t->nqps && kind <= HM_TIMER_RNR, "timers: QPN %u kind %u of %u QPNs", qpn,
		   kind, t->nqps);
	return &t->w[2 * (size_t)qpn + kind];
}

static void timers_set(void *b, const struct hm_timers_set_in *in, struct hm_timers_set_out *out)
{
	struct timers_word *w = word(b, in->qpn, in->kind);

	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle + HM_TIMERS_LATENCY;
	out->was_armed = w->armed;
	out->was_at = w->armed ? w->at : 0;
	w->armed = in->arm;
	w->at = in->arm ? in->at : 0;
}

static void timers_expire(void *b, const struct hm_timers_expire_in *in,
			  struct hm_timers_expire_out *out)
{
	struct timers_word *w = word(b, in->qpn, in->kind);

	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle + HM_TIMERS_LATENCY;
	out->at = w->armed ? w->at : 0;
	/* the RNR wait ends at the first expiry of any RNR NAK taken (model/comp.c schedules one
	 * each): armed is enough */
	out->fired = w->armed && (in->kind == HM_TIMER_RNR || w->at <= in->cycle);
	if (out->fired)
		*w = (struct timers_word){ false, 0 };
}

const struct hm_timers_ops hm_timers_model = {
	{ timers_create, timers_destroy, NULL, NULL, 0, NULL, NULL }, timers_set, timers_expire
};

/* ---- the port ---- */

HM_TWIN_OP(timers, set, hm_timers_set_in, hm_timers_set_out, hm_waves_timers_set, NULL,
	   HM_TWIN_FIELD(struct hm_timers_set_out, cycle),
	   HM_TWIN_FIELD(struct hm_timers_set_out, was_armed),
	   HM_TWIN_FIELD(struct hm_timers_set_out, was_at));
HM_TWIN_OP(timers, expire, hm_timers_expire_in, hm_timers_expire_out, hm_waves_timers_expire,
	   NULL, HM_TWIN_FIELD(struct hm_timers_expire_out, cycle),
	   HM_TWIN_FIELD(struct hm_timers_expire_out, fired),
	   HM_TWIN_FIELD(struct hm_timers_expire_out, at));

void hm_timers_set(struct hm_dev *d, const struct hm_timers_set_in *in,
		   struct hm_timers_set_out *out)
{
	struct hm_timers_set_out rtl;

	hm_twin_call(d, &timers_set_op, in->cycle, in, out, &rtl);
}

void hm_timers_twin_expire(struct hm_dev *d, const struct hm_timers_expire_in *in,
			   struct hm_timers_expire_out *out)
{
	struct hm_timers_expire_out rtl;

	hm_twin_call(d, &timers_expire_op, in->cycle, in, out, &rtl);
}

/* SET of qp's timer kind at t: armed to expire at `at` (ps), or stopped. The expiry in core
 * cycles is the cycle `at` falls in, as the kernel event at `at` sees it (exact: the model's
 * picoseconds, converted). */
static void set(struct hm_dev *d, struct hm_qp *qp, enum hm_timer_kind kind, sim_time_t t,
		bool arm, sim_time_t at)
{
	struct hm_timers_set_in in = { .cycle = sim_clock_cycles(&d->core, t),
				       .qpn = qp->qpn,
				       .kind = kind,
				       .arm = arm,
				       .at = arm ? sim_clock_cycles(&d->core, at) : 0 };
	struct hm_timers_set_out out;

	hm_timers_set(d, &in, &out);
}

/* ---- the kernel events ---- */

/* The ACK timer keeps at most one kernel event per QP (qp->tmr.ev): a restart to a later
 * expiry leaves the event where it is, and when it fires early it moves on to the expiry, in
 * the place among that instant's events that the restart reserved (sim_reserve_id). Timeouts
 * therefore run exactly where one fresh event per restart would run them. */
struct ack_ev {
	struct hm_dev *d; /* device */
	uint32_t qpn;     /* QP */
	sim_event_id id;  /* this event: the QP's own while qp->tmr.ev holds it */
	hm_timer_fn fn;   /* the expiry's handler */
};

static void ack_fire(void *arg)
{
	struct ack_ev *e = arg;
	struct sim_kernel *k = e->d->k;
	sim_time_t t = sim_now(k);
	struct hm_qp *qp = hm_qp_lookup(e->d, e->qpn);

	if (!qp || qp->tmr.ev != e->id) {
		free(e); /* the QP was destroyed, or was given an earlier event */
		return;
	}
	qp->tmr.ev = 0;
	if (qp->tmr.on && qp->tmr.id != e->id) {
		/* restarted since this event was scheduled: on to the expiry */
		SIM_ASSERT(qp->tmr.at >= t, "qpn 0x%x: ACK timer event after its expiry", qp->qpn);
		e->id = qp->tmr.id;
		qp->tmr.ev = e->id;
		qp->tmr.ev_at = qp->tmr.at;
		sim_schedule_owned_as(k, qp->tmr.at, e->id, ack_fire, e);
		return;
	}
	if (qp->tmr.on)
		e->fn(e->d, qp, t);
	free(e);
}

void hm_timers_ack_arm(struct hm_dev *d, struct hm_qp *qp, sim_time_t t, sim_time_t at,
		       hm_timer_fn fn)
{
	struct sim_kernel *k = d->k;
	struct ack_ev *e;

	set(d, qp, HM_TIMER_ACK, t, true, at);
	qp->tmr.on = true;
	qp->tmr.at = at;
	qp->tmr.id = sim_reserve_id(k);
	if (qp->tmr.ev && qp->tmr.ev_at <= at)
		return; /* the pending event moves on to the expiry when it fires */
	e = malloc(sizeof(*e));
	SIM_ASSERT(e != NULL, "out of memory");
	*e = (struct ack_ev){ d, qp->qpn, qp->tmr.id, fn };
	qp->tmr.ev = e->id;
	qp->tmr.ev_at = at;
	sim_schedule_owned_as(k, at, e->id, ack_fire, e);
}

void hm_timers_ack_stop(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	if (!qp->tmr.on)
		return;
	set(d, qp, HM_TIMER_ACK, t, false, 0);
	qp->tmr.on = false; /* a pending event finds it off and does nothing */
}

void hm_timers_ack_off(struct hm_qp *qp)
{
	qp->tmr.on = false;
}

struct rnr_ev {
	struct hm_dev *d; /* device */
	uint32_t qpn;     /* QP waiting */
	hm_timer_fn fn;   /* the expiry's handler */
};

static void rnr_fire(void *arg)
{
	struct rnr_ev *e = arg;
	struct hm_qp *qp = hm_qp_lookup(e->d, e->qpn);

	if (qp)
		e->fn(e->d, qp, sim_now(e->d->k));
	free(e);
}

void hm_timers_rnr_arm(struct hm_dev *d, struct hm_qp *qp, sim_time_t t, sim_time_t at,
		       hm_timer_fn fn)
{
	struct rnr_ev *e = malloc(sizeof(*e));

	set(d, qp, HM_TIMER_RNR, t, true, at);
	SIM_ASSERT(e != NULL, "out of memory");
	*e = (struct rnr_ev){ d, qp->qpn, fn };
	sim_schedule_owned_at(d->k, at, rnr_fire, e);
}

bool hm_timers_expire(struct hm_dev *d, struct hm_qp *qp, enum hm_timer_kind kind, sim_time_t t)
{
	struct hm_timers_expire_in in = { .cycle = sim_clock_cycles(&d->core, t),
					  .qpn = qp->qpn,
					  .kind = kind };
	struct hm_timers_expire_out out;

	hm_timers_twin_expire(d, &in, &out);
	return out.fired;
}
