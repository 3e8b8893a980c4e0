/* qpc: the on-chip cache of QP contexts (architecture §2), backed by a store in host memory
 * that the driver gives the device at INIT_HCA (HM_QPC_BYTES per QPN). */
#ifndef HM_QPC_H
#define HM_QPC_H

#include "model/ctx.h"

/* The architected context image (struct hca_qpc, model/hw/formats.def) of qp: its context
 * fields only, reserved bytes zero; nothing host- or run-dependent. */
void hm_qpc_pack(const struct hm_qp *qp, struct hca_qpc *img);
/* Decode an image into qp's context fields (nothing else of qp is touched). 0, or -EINVAL
 * with *why naming the field and the rule the image breaks (qp then unchanged). */
int hm_qpc_unpack(const struct hca_qpc *img, struct hm_qp *qp, const char **why);
/* The QP context for processing at *t (advanced by hit or miss latency); NULL if no such QP. */
struct hm_qp *hm_qpc_get(struct hm_dev *d, uint32_t qpn, sim_time_t *t);

/* Write a new context's image to its slot at *t; it is not cached until used. */
void hm_qpc_store(struct hm_dev *d, struct hm_qp *qp, sim_time_t *t);
/* A destroyed QP leaves the cache (no write-back). */
void hm_qpc_forget(struct hm_dev *d, struct hm_qp *qp);

#endif
