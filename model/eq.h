/* eq: the event queues (architecture §2): asynchronous events and completion events into
 * host rings, MSI-X when armed. */
#ifndef HM_EQ_H
#define HM_EQ_H

#include "model/hca.h"

/* Post an event; false if no live EQ takes the type or its ring is full. */
bool hm_eq_post(struct hm_dev *d, uint8_t type, uint8_t subtype, const uint32_t data[6]);
/* The same, at a later time t (an event is scheduled). */
void hm_eq_post_at(struct hm_dev *d, uint8_t type, uint8_t subtype, const uint32_t data[6],
		   sim_time_t t);
void hm_eq_doorbell(struct hm_dev *d, uint32_t val);
void hm_eq_reset(struct hm_dev *d);

#endif
