/* wqe_fetch: reading send WQEs from host memory for the requester, a window at a time. */
#ifndef HM_WQE_FETCH_H
#define HM_WQE_FETCH_H

#include "model/ctx.h"

/* The block has an RTL twin (rtl/wqe_fetch.sv, model/twin.h "wqe_fetch"): each entry point
 * below is one transaction of its port (hm_fetch_take and the QP commands' changes of the
 * window stay here, in the C model).
 * WQE idx for the requester at *t. HM_WQE_READY: its copy in qp->wqe_buf is current and *t
 * has advanced by the decode (pipe.wqe_cycles = the RTL's DECODE_CYCLES). HM_WQE_WAIT: its
 * DMA read (up to hca.wqe_prefetch posted WQEs in one read, through the block's DMA port) is
 * under way; the QP goes back into the arbiter when it completes, and the requester serves
 * other QPs meanwhile. HM_WQE_FAILED: unreadable. Taking the last WQE of a window starts the
 * read of the next posted ones. */
enum { HM_WQE_READY = 0, HM_WQE_WAIT = 1, HM_WQE_FAILED = -1 };
int hm_wqe_fetch(struct hm_dev *d, struct hm_qp *qp, uint32_t idx, sim_time_t *t);
/* A send doorbell at t: start reading the newly posted WQEs if nothing is fetched ahead. */
void hm_wqe_prefetch(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);
/* Validate a fetched WQE: HCA_WC_SUCCESS or the completion status it fails with, *verr the
 * check that failed (HCA_VERR_*, verr.def); *len is the message length. */
uint8_t hm_wqe_check(struct hm_dev *d, const struct hm_qp *qp, const uint8_t *w, uint64_t *len,
		      uint32_t *verr);

/* A BlueFlame write's WQE (len bytes) for the next slot of qp's SQ, at t: it goes straight
 * into the WQE buffer when it follows every WQE already there or being read (alone, or
 * appended to the window fetched ahead) and fits the ring — past a full send queue its slot
 * is the oldest WQE's, which may still be being sent. Otherwise nothing is stored (the WQE
 * is in host memory too, and the doorbell that follows is an ordinary one). */
void hm_fetch_take(struct hm_dev *d, struct hm_qp *qp, const uint8_t *wqe, uint32_t len,
		   sim_time_t t);
/* The fetcher's part of a QP (model/ctx.h) as the QP commands change it: created and
 * destroyed with the QP, cleared by RESET, and emptied by a flush (nothing fetched ahead). */
void hm_fetch_create(struct hm_qp *qp);
void hm_fetch_destroy(struct hm_qp *qp);
void hm_fetch_reset(struct hm_qp *qp);
void hm_fetch_flush(struct hm_qp *qp);

#endif
