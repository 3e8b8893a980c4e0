/* qp: what belongs to a QP as a whole rather than to one engine (architecture §2): its
 * payload size per packet, the error flows that move it to ERR or SQE, catastrophic errors,
 * path migration and the SQ-drained event. The queues are flushed through the device's
 * qp_flush wire (model/qp_cmd.c), which each block below it may raise. */
#ifndef HM_QP_H
#define HM_QP_H

#include "model/ctx.h"

/* Payload bytes per packet for qp: its path MTU (RC, UC), the port's active MTU (UD). */
unsigned hm_qp_mtu(const struct hm_dev *d, const struct hm_qp *qp);
/* Move a QP to ERR (RC errors) or SQE (UC/UD send errors) from the data path; both flush. */
void hm_qp_error(struct hm_dev *d, struct hm_qp *qp, unsigned state, sim_time_t t);
/* Catastrophic errors: the QP goes to ERR and raises IBV_EVENT_QP_FATAL; the SRQ stops and
 * raises IBV_EVENT_SRQ_ERR, and every QP attached to it goes to ERR (IBA 11.6.3.1,
 * 10.2.9.5). */
void hm_qp_fatal(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);
/* Automatic path migration (IBA 17.2.8): the alternate path becomes the primary one, the QP
 * is MIGRATED and IBV_EVENT_PATH_MIG is raised; if the alternate port is not ACTIVE nothing
 * changes and IBV_EVENT_PATH_MIG_ERR is raised (false). */
bool hm_qp_migrate(struct hm_dev *d, struct hm_qp *qp, const char *why);
void hm_srq_fatal(struct hm_dev *d, uint32_t srqn, sim_time_t t);

/* In SQD with nothing outstanding: raise IBV_EVENT_SQ_DRAINED once if asked for. */
void hm_qp_check_drained(struct hm_dev *d, struct hm_qp *qp);

#endif
