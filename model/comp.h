/* comp: the completer (IBA 9.7.5.1, requester side): responses in, send WQEs retired,
 * retries and the local ACK timer. */
#ifndef HM_COMP_H
#define HM_COMP_H

#include "model/ctx.h"

/* Handle a received response for qp from time t; return the time its handling ends. */
sim_time_t hm_comp_rx(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *p, sim_time_t t);
/* End the oldest outstanding send WQE failing the check verr names (HCA_VERR_*, its status
 * the completion's) and move the QP to ERR. */
void hm_comp_fail_oldest(struct hm_dev *d, struct hm_qp *qp, uint32_t verr, sim_time_t t);
/* Local completion of a UC or UD message f once its last packet has left (IBA 10.8.3.1). */
void hm_comp_sent(struct hm_dev *d, struct hm_qp *qp, const struct hm_flight *f, sim_time_t t);
/* The requester failed WQE wqe (opcode op) before sending it, on the check verr names: the
 * WQEs before it still waiting for their ACK complete flushed, then it in error. */
void hm_comp_fail_local(struct hm_dev *d, struct hm_qp *qp, uint32_t wqe, uint8_t op,
			uint32_t verr, sim_time_t t);
/* The requester started WQE wqe at first_psn: its progress mark starts there. */
void hm_comp_track(struct hm_qp *qp, uint32_t wqe, uint32_t first_psn);
/* The completer's part of a QP (model/ctx.h) as the QP commands change it: created and
 * destroyed with the QP, cleared by RESET; a flush completes every send WQE from sq_done on
 * with WR_FLUSH_ERR; a modify loads the retry counts (and, with the send PSN, the last PSN
 * acknowledged). */
void hm_comp_create(struct hm_qp *qp);
void hm_comp_destroy(struct hm_qp *qp);
void hm_comp_reset(struct hm_qp *qp);
void hm_comp_flush(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);
void hm_comp_modify(struct hm_qp *qp, const struct hca_qp_attr *a, uint32_t mask);
/* (Re)start the local ACK timer from t, or stop it when nothing is outstanding. */
void hm_comp_timer(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);

/* The names of the engine's steps (COMP_STEPS), *n of them in table order, as `step.comp` trace
 * events name them; the engine stops in DONE, which is not traced. */
const char *const *hm_comp_step_names(size_t *n);

#endif
