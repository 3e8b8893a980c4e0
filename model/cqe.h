/* cqe: the CQE writer — completions into CQ rings, CQ doorbells and arming. */
#ifndef HM_CQE_H
#define HM_CQE_H

#include "model/ctx.h"

/* Write a CQE at time t (owner bit and timestamp filled in); false if the CQ is in error. */
bool hm_cqe_post(struct hm_dev *d, uint32_t cqn, struct hca_cqe *cqe, bool solicited,
		 sim_time_t t);
void hm_cq_doorbell(struct hm_dev *d, uint64_t val);

/* The CQE opcode reporting a WQE opcode. */
uint8_t hm_cqe_op_of(uint8_t wqe_op);

#endif
