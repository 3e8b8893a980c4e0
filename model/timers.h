/* timers: the per-QP transport timers (docs/blocks/timers.md): the local ACK timer (IBA
 * 9.7.6.1.3) and the RNR NAK wait (IBA 9.7.5.2.8), whose expiries drive retransmission. The
 * completer (model/comp.c) arms, restarts and stops them and handles their expiries; this
 * block keeps their expiries and the kernel events that fire them, exact to the picosecond. */
#ifndef HM_TIMERS_H
#define HM_TIMERS_H

#include "model/ctx.h"

enum hm_timer_kind {
	HM_TIMER_ACK = 0, /* local ACK timeout */
	HM_TIMER_RNR = 1, /* RNR NAK wait */
};

/* Called at a timer's expiry (t = its time) for qp of device d (a QP destroyed meanwhile is
 * not called for). */
typedef void (*hm_timer_fn)(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);

/* (Re)start qp's ACK timer at t to expire at `at`: fn is called then unless it is restarted or
 * stopped first. A restart to a later expiry keeps the QP's one pending event, which moves on
 * when it fires early (in the place among that instant's events the restart reserved). */
void hm_timers_ack_arm(struct hm_dev *d, struct hm_qp *qp, sim_time_t t, sim_time_t at,
		       hm_timer_fn fn);
/* Stop qp's ACK timer at t (nothing if it is not armed). */
void hm_timers_ack_stop(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);
/* The ACK timer is off from now on, with no transaction (the QP is reset, or its expiry was
 * taken: the block dropped it with the expiry). */
void hm_timers_ack_off(struct hm_qp *qp);
/* Start qp's RNR wait at t, to expire at `at`: fn is called then. */
void hm_timers_rnr_arm(struct hm_dev *d, struct hm_qp *qp, sim_time_t t, sim_time_t at,
		       hm_timer_fn fn);
/* Take qp's expired timer of kind at t, the time of its expiry: true if the block holds it
 * armed with that expiry (or an earlier one), which it then drops. */
bool hm_timers_expire(struct hm_dev *d, struct hm_qp *qp, enum hm_timer_kind kind, sim_time_t t);

#endif
