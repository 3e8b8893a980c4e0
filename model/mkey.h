/* mkey: memory-key translation and checks (IBA 10.6), and moving data between a packet and
 * the memory a scatter/gather list names. */
#ifndef HM_MKEY_H
#define HM_MKEY_H

#include "model/ctx.h"
#include "model/twin.h"

/* enum hm_mkey_result: model/twin.h (the key check is a block with an RTL twin). */
/* Check a local access of len bytes at va with key (an lkey: memory regions only, never a
 * window), for pdn, needing access (HCA_ACCESS_* bits; 0 for a local read); on success *iova
 * is the device address. */
enum hm_mkey_result hm_mkey_check(struct hm_dev *d, uint32_t key, uint32_t pdn, uint64_t va,
				  uint64_t len, uint32_t access, uint64_t *iova);
/* The same for a remote access through qp with an rkey, in PD pdn (qp's, or for an XRC_RECV
 * QP the PD of the XRC SRQ the request names): a memory region of pdn, or a bound memory
 * window of pdn (type 2: bound to qp) checked against the window's range and rights
 * (IBA 10.6.7.3). */
enum hm_mkey_result hm_rkey_check(struct hm_dev *d, uint32_t key, const struct hm_qp *qp,
				  uint32_t pdn, uint64_t va, uint64_t len, uint32_t access,
				  uint64_t *iova);
/* The key table's entry at key's index as the key check sees it (all zero beyond the table):
 * what a block with a key stage (resp_fe) is handed with its request. */
void hm_mkey_entry(struct hm_dev *d, uint32_t key, struct hm_mkey_ctx *ctx);

/* Memory windows (IBA 10.6.7), run when the requester reaches their WQE. Bind the window the
 * BIND_MW WQE wqe of qp names: HCA_VERR_NONE, or the MW_* check that failed (nothing changes). */
uint32_t hm_mw_bind(struct hm_dev *d, const struct hm_qp *qp, uint32_t wqe,
		    const struct hca_wqe_bind *b);
/* Invalidate the type 2 window rkey for qp: by LOCAL_INV (remote false: HCA_VERR_NONE or an
 * INV_* check), or by a SEND with Invalidate qp received (remote true: the window must be bound
 * to qp; HCA_VERR_NONE or HCA_VERR_REQ_INV_RKEY). Nothing changes on failure. */
uint32_t hm_mw_invalidate(struct hm_dev *d, const struct hm_qp *qp, uint32_t rkey, bool remote);

/* Move len bytes between buf and the memory the scatter/gather list sg[0..nsge) names, from
 * byte off of the list: every piece is checked against its key (PD pdn; local write access
 * when writing) and then written from buf (posted at *t) or read into buf (timed from *t).
 * Returns the bytes moved; *verr names the check that stopped the move (a key check,
 * HCA_VERR_LKEY_*, or a failed read, HCA_VERR_LOCAL_DMA), HCA_VERR_NONE if none did. Fewer
 * bytes than len with HCA_VERR_NONE: the list is too short.
 * With ct (cut-through, docs/timing.md#cut-through), buf is one packet's payload: reads raise
 * ct->need (the earliest time the payload's first byte may go on the wire), and writes go
 * out as the payload comes through the receive pipeline, which is done with it at ct->ready
 * (*t is then not used for writes; ct->frame as hm_dma_write_rx says). */
struct hm_ct {
	sim_time_t need;  /* read: raised to the earliest start of the payload on the wire */
	sim_time_t ready; /* write: the receive pipeline is done with the packet */
	uint32_t tail;    /* write: wire bytes after the payload (hm_port_tail_bytes) */
	const uint8_t *frame; /* write: the received frame (a link buffer) buf lies in, or NULL */
};
uint32_t hm_sge_copy(struct hm_dev *d, uint32_t pdn, const struct hca_wqe_data *sg, unsigned nsge,
		     uint32_t off, void *buf, uint32_t len, bool write, sim_time_t *t, uint32_t *verr,
		     struct hm_ct *ct);
/* The vendor error syndrome (HCA_VERR_*) of a failed key check: of an lkey, or (remote) of an
 * rkey. */
uint32_t hm_mkey_verr(enum hm_mkey_result r, bool remote);
/* A posted write of len bytes at src, received from a link, to device address iova as it comes
 * through the receive pipeline (sim_dma_write_ct: done at ct->ready, tail wire bytes after
 * these). With ct->frame, src lies in that received frame, which the write holds until it
 * lands instead of copying the bytes (frames by reference down to the DMA write); without, or
 * for up to HM_DMA_COPY_MAX bytes (a copy that short costs less than the reference), src is
 * copied. */
enum { HM_DMA_COPY_MAX = 64 };
void hm_dma_write_held(struct hm_dev *d, uint64_t iova, const void *src, uint32_t len,
		       const struct hm_ct *ct, uint64_t tail);
static inline void hm_dma_write_rx(struct hm_dev *d, uint64_t iova, const void *src, uint32_t len,
				   const struct hm_ct *ct, uint64_t tail)
{
	if (ct->frame && len > HM_DMA_COPY_MAX)
		hm_dma_write_held(d, iova, src, len, ct, tail);
	else
		sim_dma_write_ct(d->fn, iova, src, len, ct->ready, sim_config_link_mbps(&d->cfg),
				 tail);
}

#endif
