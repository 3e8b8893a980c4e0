/* comp: the completer (IBA 9.7.5.1, requester side): responses in, send WQEs retired,
 * retries and the local ACK timer. */
#ifndef HM_COMP_H
#define HM_COMP_H

#include "model/ctx.h"

/* Handle a received response for qp from time t; return the time its handling ends. */
sim_time_t hm_comp_rx(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *p, sim_time_t t);
/* End the oldest outstanding send WQE with status and move the QP to ERR (retries exhausted). */
void hm_comp_fail_oldest(struct hm_dev *d, struct hm_qp *qp, uint8_t status, sim_time_t t);
/* (Re)start the local ACK timer from t, or stop it when nothing is outstanding. */
void hm_comp_timer(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);

#endif
