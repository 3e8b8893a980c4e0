/* resp: the responder (IBA 9.7.4, 9.7.5.1): requests in, data to memory, ACKs out. */
#ifndef HM_RESP_H
#define HM_RESP_H

#include "model/ctx.h"

/* Handle a received request for qp from time t; return the time its handling ends (the QP's
 * next packet is handled no earlier: packets of a QP stay in order). */
sim_time_t hm_resp_rx(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *p, sim_time_t t);
/* Start reading the RQ's next receive WQE (rq_ci) at t if it is posted and not held yet. */
void hm_rwqe_prefetch(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);

/* The responder's part of a QP (model/ctx.h) as the QP commands change it: created and
 * destroyed with the QP, cleared by RESET; a flush in ERR completes every posted receive with
 * WR_FLUSH_ERR (an SRQ's QP raises LAST_WQE_REACHED instead, once); a modify loads the
 * expected PSN. */
void hm_resp_create(struct hm_qp *qp);
void hm_resp_destroy(struct hm_qp *qp);
void hm_resp_reset(struct hm_qp *qp);
void hm_resp_flush(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);
void hm_resp_modify(struct hm_qp *qp, const struct hca_qp_attr *a, uint32_t mask);

/* The names of the engine's steps (RESP_STEPS), *n of them in table order, as `step.resp` trace
 * events name them; the engine stops in DONE, which is not traced. */
const char *const *hm_resp_step_names(size_t *n);

#endif
