/* qp_cmd: the QP commands' effect on the data path (CREATE_QP, MODIFY_QP, DESTROY_QP, as
 * firmware applies them once validated), and flushing a QP's queues. */
#ifndef HM_QP_CMD_H
#define HM_QP_CMD_H

#include "model/ctx.h"

void hm_qp_create(struct hm_dev *d, uint32_t qpn, const struct hm_qp *init, sim_time_t t);
void hm_qp_destroy(struct hm_dev *d, uint32_t qpn);
/* Apply a validated modify: attributes in mask, then the transition (RESET clears the queues
 * and PSNs, ERR flushes). */
void hm_qp_modify(struct hm_dev *d, uint32_t qpn, const struct hca_qp_attr *a, uint32_t mask,
		  unsigned next, sim_time_t t);
/* Complete every send WQE from sq_done on with WR_FLUSH_ERR, and (ERR) every posted receive:
 * the device's qp_flush wire. */
void hm_qp_flush(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);

#endif
