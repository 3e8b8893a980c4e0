/* sched: the send arbiter. It keeps the round-robin FIFO of QPs with work (its twin,
 * model/twin.h) and drives the requester: one packet of the first QP that can send, per
 * step of pipe.sched_cycles. */
#ifndef HM_SCHED_H
#define HM_SCHED_H

#include "model/ctx.h"

/* qp has (or may have) work: into the FIFO, unless it is in it. */
void hm_sched_add(struct hm_dev *d, struct hm_qp *qp);
/* Start the requester's next step from t unless one is scheduled or nothing waits. */
void hm_sched_kick(struct hm_dev *d, sim_time_t t);
/* The wires sched takes (model/hca.h): sq_wake (qp may send: into the FIFO, and a step), and
 * sq_retry (the completer asks qp to send again from psn: the requester goes back to it). */
void hm_sched_wake(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);
void hm_sched_retry(struct hm_dev *d, struct hm_qp *qp, uint32_t psn, sim_time_t t);

#endif
