/* mkey: memory key table and address translation (IBA 10.6). Every local and remote access
 * names a key: the key must exist with the same variant byte, belong to the accessing QP's
 * protection domain, grant the access, and contain [va, va+len). Memory windows (IBA 10.6.7)
 * are keys of the same table: an lkey never names one; an rkey names one once it is bound, and
 * the window's range and rights are checked instead of its region's. Binds and invalidations
 * run here, when the requester (or, for a SEND with Invalidate, the responder) reaches them. */
#include "model/mkey.h"
#include "model/waves.h"
#include "sim/link.h"
#include "sim/trace.h"

#include <string.h>

static struct hm_mkey *mkey_at(struct hm_dev *d, uint32_t key)
{
	uint32_t idx = key >> 8;

	return idx < d->dp->nmkeys && d->dp->mkeys[idx].valid ? &d->dp->mkeys[idx] : NULL;
}

/* ---- the key check: the C twin of rtl/mkey.sv (docs/blocks/mkey.md), no state of its own ---- */

/* The rights and the range of the key's context (a region, or a bound window). */
static uint8_t mkey_span(const struct hm_mkey_ctx *k, uint64_t va, uint64_t len,
			 uint32_t access, uint64_t *iova)
{
	if ((k->access & access) != access)
		return HM_MKEY_BAD_ACCESS;
	if (va < k->va || va + len < va || va + len > k->va + k->len)
		return HM_MKEY_BAD_RANGE;
	*iova = k->iova + (va - k->va);
	return HM_MKEY_OK;
}

static void mkey_twin_check(void *b, const struct hm_mkey_in *in, struct hm_mkey_out *out)
{
	const struct hm_mkey_ctx *k = &in->ctx;

	(void)b;
	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle + HM_MKEY_LATENCY;
	/* an lkey never names a window; an rkey names one while it is bound (an invalidated
	 * window's key is no key) */
	if (in->key >> 8 >= in->nkeys || !k->valid || k->variant != (uint8_t)in->key ||
	    (k->mw_type && (!in->remote || !k->bound)))
		out->result = HM_MKEY_BAD_KEY;
	else if (k->pdn != in->pdn)
		out->result = HM_MKEY_BAD_PD;
	else if (in->remote && k->mw_type == HCA_MW_TYPE_2 &&
		 ((k->qpn ^ in->qpn) & HCA_QPN_MASK))
		out->result = HM_MKEY_BAD_QP;
	else
		out->result = mkey_span(k, in->va, in->len, in->access, &out->iova);
}

const struct hm_mkey_ops hm_mkey_model = {
	{ hm_twin_stateless_create, hm_twin_stateless_destroy, NULL, NULL, 0, NULL, NULL },
	mkey_twin_check
};

HM_TWIN_OP(mkey, check, hm_mkey_in, hm_mkey_out, hm_waves_mkey, NULL,
	   HM_TWIN_FIELD(struct hm_mkey_out, cycle), HM_TWIN_FIELD(struct hm_mkey_out, result),
	   HM_TWIN_FIELD(struct hm_mkey_out, iova));

void hm_mkey_twin_check(struct hm_dev *d, const struct hm_mkey_in *in, struct hm_mkey_out *out)
{
	struct hm_mkey_out rtl;

	hm_twin_call(d, &mkey_check_op, in->cycle, in, out, &rtl);
}

void hm_mkey_entry(struct hm_dev *d, uint32_t key, struct hm_mkey_ctx *ctx)
{
	const struct hm_mkey *mk;

	if (key >> 8 >= d->dp->nmkeys) {
		memset(ctx, 0, sizeof(*ctx));
		return;
	}
	mk = &d->dp->mkeys[key >> 8];
	*ctx = (struct hm_mkey_ctx){ mk->valid, mk->variant, mk->mw_type, mk->bound, mk->pdn,
				     mk->access, mk->qpn, mk->va, mk->len, mk->iova };
}

/* A check through the port: the entry the key's index names is read from the table and handed
 * in (the block has no DMA port yet). */
static enum hm_mkey_result mkey_port(struct hm_dev *d, bool remote, uint32_t key, uint32_t qpn,
				     uint32_t pdn, uint64_t va, uint64_t len, uint32_t access,
				     uint64_t *iova)
{
	struct hm_mkey_in in = { .cycle = hm_dev_cycle(d), .remote = remote, .key = key,
				 .pdn = pdn, .qpn = qpn, .va = va, .len = len, .access = access,
				 .nkeys = d->dp->nmkeys };
	struct hm_mkey_out out;

	hm_mkey_entry(d, key, &in.ctx);
	hm_mkey_twin_check(d, &in, &out);
	if (out.result == HM_MKEY_OK)
		*iova = out.iova;
	return (enum hm_mkey_result)out.result;
}

enum hm_mkey_result hm_mkey_check(struct hm_dev *d, uint32_t key, uint32_t pdn, uint64_t va,
				  uint64_t len, uint32_t access, uint64_t *iova)
{
	return mkey_port(d, false, key, 0, pdn, va, len, access, iova);
}

enum hm_mkey_result hm_rkey_check(struct hm_dev *d, uint32_t key, const struct hm_qp *qp,
				  uint32_t pdn, uint64_t va, uint64_t len, uint32_t access,
				  uint64_t *iova)
{
	return mkey_port(d, true, key, qp->qpn, pdn, va, len, access, iova);
}

/* The region a bind names, for window w: HCA_VERR_NONE or the MW_* check it fails. */
static uint32_t bind_region(struct hm_dev *d, const struct hm_mkey *w, const struct hca_wqe_bind *b)
{
	const struct hm_mkey *mr = mkey_at(d, b->mr_lkey);
	const uint32_t remote = HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_READ |
				HCA_ACCESS_REMOTE_ATOMIC;
	/* only a type 2 window may be zero-based (as mlx5's UMR bind of one) */
	const uint32_t zb = w->mw_type == HCA_MW_TYPE_2 ? HCA_ACCESS_ZERO_BASED : 0;

	if (!mr || mr->mw_type || mr->variant != (uint8_t)b->mr_lkey)
		return HCA_VERR_MW_MR_INVALID;
	if (mr->pdn != w->pdn)
		return HCA_VERR_MW_MR_PD;
	if (!(mr->access & HCA_ACCESS_MW_BIND))
		return HCA_VERR_MW_MR_NO_BIND;
	/* IBA 10.6.7.2.1: remote write or atomic through a window needs local write on its region */
	if ((b->access & ~(remote | HCA_ACCESS_LOCAL_WRITE | zb)) ||
	    ((b->access & (HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_ATOMIC)) &&
	     !(mr->access & HCA_ACCESS_LOCAL_WRITE)))
		return HCA_VERR_MW_ACCESS;
	if (b->addr < mr->va || b->addr + b->length < b->addr ||
	    b->addr + b->length > mr->va + mr->len)
		return HCA_VERR_MW_BOUNDS;
	return HCA_VERR_NONE;
}

/* The window a bind names, for qp: HCA_VERR_NONE or the MW_* check it fails. */
static uint32_t bind_window(const struct hm_mkey *w, const struct hm_qp *qp,
			    const struct hca_wqe_bind *b)
{
	if (!w || !w->mw_type || (w->mw_type == HCA_MW_TYPE_1 && w->variant != (uint8_t)b->mw_key))
		return HCA_VERR_MW_INVALID;
	if (w->pdn != qp->pdn)
		return HCA_VERR_MW_PD;
	if (b->new_rkey >> 8 != b->mw_key >> 8)
		return HCA_VERR_MW_NEW_KEY;
	if (w->mw_type == HCA_MW_TYPE_2 && w->bound)
		return HCA_VERR_MW_IN_USE;
	return HCA_VERR_NONE;
}

uint32_t hm_mw_bind(struct hm_dev *d, const struct hm_qp *qp, uint32_t wqe,
		    const struct hca_wqe_bind *b)
{
	struct hm_mkey *w = mkey_at(d, b->mw_key);
	bool unbind = w && w->mw_type == HCA_MW_TYPE_1 && !b->length;
	uint32_t verr = bind_window(w, qp, b);

	if (!verr && !unbind)
		verr = bind_region(d, w, b);
	trace_mw_bind(d->devno, qp->qpn, wqe, b->mw_key, b->new_rkey, b->mr_lkey, b->addr,
		      b->length, b->access, verr);
	if (verr)
		return verr;
	w->variant = (uint8_t)b->new_rkey; /* the old key names nothing from now on */
	w->bound = !unbind;
	if (unbind)
		return HCA_VERR_NONE;
	w->mr = b->mr_lkey >> 8;
	w->va = (b->access & HCA_ACCESS_ZERO_BASED) ? 0 : b->addr; /* what accesses name */
	w->len = b->length;
	w->access = b->access & ~(uint32_t)(HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_ZERO_BASED);
	w->iova = d->dp->mkeys[w->mr].iova + (b->addr - d->dp->mkeys[w->mr].va);
	w->qpn = w->mw_type == HCA_MW_TYPE_2 ? qp->qpn : 0;
	return HCA_VERR_NONE;
}

uint32_t hm_mw_invalidate(struct hm_dev *d, const struct hm_qp *qp, uint32_t rkey, bool remote)
{
	struct hm_mkey *w = mkey_at(d, rkey);
	uint32_t verr = HCA_VERR_NONE;

	if (!w || w->mw_type != HCA_MW_TYPE_2 || w->variant != (uint8_t)rkey)
		verr = HCA_VERR_INV_KEY;
	else if (w->pdn != qp->pdn)
		verr = HCA_VERR_INV_PD;
	else if (!w->bound || (remote && w->qpn != qp->qpn))
		verr = HCA_VERR_INV_NOT_BOUND;
	if (verr && remote)
		verr = HCA_VERR_REQ_INV_RKEY;
	trace_mw_inv(d->devno, qp->qpn, rkey, remote, verr);
	if (!verr)
		w->bound = false;
	return verr;
}

uint32_t hm_mkey_verr(enum hm_mkey_result r, bool remote)
{
	static const uint32_t local[] = { [HM_MKEY_OK] = HCA_VERR_NONE,
					  [HM_MKEY_BAD_KEY] = HCA_VERR_LKEY_INVALID,
					  [HM_MKEY_BAD_PD] = HCA_VERR_LKEY_PD,
					  [HM_MKEY_BAD_ACCESS] = HCA_VERR_LKEY_ACCESS,
					  [HM_MKEY_BAD_RANGE] = HCA_VERR_LKEY_BOUNDS,
					  [HM_MKEY_BAD_QP] = HCA_VERR_LKEY_INVALID };
	static const uint32_t rem[] = { [HM_MKEY_OK] = HCA_VERR_NONE,
					[HM_MKEY_BAD_KEY] = HCA_VERR_RKEY_INVALID,
					[HM_MKEY_BAD_PD] = HCA_VERR_RKEY_PD,
					[HM_MKEY_BAD_ACCESS] = HCA_VERR_RKEY_ACCESS,
					[HM_MKEY_BAD_RANGE] = HCA_VERR_RKEY_BOUNDS,
					[HM_MKEY_BAD_QP] = HCA_VERR_RKEY_QP };

	return remote ? rem[r] : local[r];
}

static void frame_release(void *frame)
{
	sim_link_frame_free(frame);
}

void hm_dma_write_held(struct hm_dev *d, uint64_t iova, const void *src, uint32_t len,
		       const struct hm_ct *ct, uint64_t tail)
{
	sim_dma_write_ct_held(d->fn, iova, src, len, ct->ready, sim_config_link_mbps(&d->cfg),
			      tail, frame_release, sim_link_frame_hold(ct->frame));
}

uint32_t hm_sge_copy(struct hm_dev *d, uint32_t pdn, const struct hca_wqe_data *sg, unsigned nsge,
		     uint32_t off, void *buf, uint32_t len, bool write, sim_time_t *t, uint32_t *verr,
		     struct hm_ct *ct)
{
	uint32_t mbps = ct ? sim_config_link_mbps(&d->cfg) : 0;
	uint8_t *b = buf;
	uint32_t moved = 0;

	*verr = HCA_VERR_NONE;
	for (unsigned i = 0; i < nsge && moved < len; i++) {
		uint32_t n;
		uint64_t iova;
		enum hm_mkey_result r;

		if (off >= sg[i].length) {
			off -= sg[i].length;
			continue;
		}
		n = sg[i].length - off < len - moved ? sg[i].length - off : len - moved;
		r = hm_mkey_check(d, sg[i].lkey, pdn, sg[i].addr + off, n,
				  write ? HCA_ACCESS_LOCAL_WRITE : 0, &iova);
		if (r != HM_MKEY_OK) {
			*verr = hm_mkey_verr(r, false);
			return moved;
		}
		if (write && ct) {
			hm_dma_write_rx(d, iova, b + moved, n, ct,
					(uint64_t)(len - moved - n) + ct->tail);
		} else if (write) {
			hm_dma_write_at(d, iova, b + moved, n, *t);
		} else if (ct ? sim_dma_read_ct(d->fn, iova, b + moved, n, t, mbps, moved, &ct->need)
			      : sim_dma_read_timed(d->fn, iova, b + moved, n, t)) {
			*verr = HCA_VERR_LOCAL_DMA;
			return moved;
		}
		moved += n;
		off = 0;
	}
	return moved;
}
