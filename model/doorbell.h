/* doorbell: the UAR pages — SQ, RQ, SRQ and CQ doorbells and BlueFlame writes. */
#ifndef HM_DOORBELL_H
#define HM_DOORBELL_H

#include "model/ctx.h"

/* A 64-bit write at offset off of UAR page `page`. The page names the user context the
 * doorbell comes from: it reaches only that context's QPs, CQs and SRQs (page 0: the device
 * owner's, uid 0). */
void hm_doorbell_write64(struct hm_dev *d, uint32_t page, uint32_t off, uint64_t val);
/* A BlueFlame write (HCA_UAR_BF) to UAR page `page`: the SQ doorbell word, then the WQE it
 * makes visible. */
void hm_doorbell_bf(struct hm_dev *d, uint32_t page, const uint8_t *data, unsigned len);
/* A doorbell refused before it reached a queue: counted and traced (warn.doorbell). */
void hm_doorbell_refuse(struct hm_dev *d, const char *queue, uint32_t num, const char *reason);

#endif
