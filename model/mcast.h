/* mcast: the multicast group table (docs/multicast.md). */
#ifndef HM_MCAST_H
#define HM_MCAST_H

#include "model/hca.h"

#define HM_MCG_MAX HCA_MCAST_GROUPS       /* groups per device */
#define HM_MCG_QPS HCA_MCAST_QPS_PER_GROUP /* QPs per group */
struct hm_mcg {
	bool live;                  /* in use */
	uint16_t lid;               /* multicast LID */
	uint8_t gid[16];            /* multicast GID */
	uint32_t nqps;              /* QPs attached */
	uint32_t qpns[HM_MCG_QPS];  /* in attach order */
};
/* The live group (gid, lid), or NULL. */
struct hm_mcg *hm_mcg_find(struct hm_dev *d, const uint8_t gid[16], uint16_t lid);
/* True if qpn is attached to g. */
bool hm_mcg_has_qp(const struct hm_mcg *g, uint32_t qpn);
/* The QPs attached to g that receive on port `port` (their port_num), into qpns; how many. */
uint32_t hm_mcg_qps_on(struct hm_dev *d, const struct hm_mcg *g, unsigned port,
		       uint32_t qpns[HM_MCG_QPS]);
/* Groups in use; groups qpn is attached to. */
unsigned hm_mcg_count(struct hm_dev *d);
unsigned hm_mcg_of_qp(struct hm_dev *d, uint32_t qpn);
/* Apply a validated ATTACH_MCG / DETACH_MCG. The first QP of a group makes the subnet manager
 * add the device's ports to the group; the last one out removes them. */
void hm_mcg_attach(struct hm_dev *d, const uint8_t gid[16], uint16_t lid, uint32_t qpn);
void hm_mcg_detach(struct hm_dev *d, const uint8_t gid[16], uint16_t lid, uint32_t qpn);
/* TEARDOWN_HCA and device destruction: every group goes, and the SM forgets the ports. */
void hm_mcg_reset(struct hm_dev *d);

#endif
