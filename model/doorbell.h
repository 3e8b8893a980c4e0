/* doorbell: the UAR pages — SQ, RQ, SRQ and CQ doorbells and BlueFlame writes. */
#ifndef HM_DOORBELL_H
#define HM_DOORBELL_H

#include "model/ctx.h"

void hm_doorbell_write64(struct hm_dev *d, uint32_t off, uint64_t val);
/* A BlueFlame write (HCA_UAR_BF): the SQ doorbell word, then the WQE it makes visible. */
void hm_doorbell_bf(struct hm_dev *d, const uint8_t *data, unsigned len);

#endif
