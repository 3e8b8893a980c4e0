/* mkey: memory key table and address translation (IBA 10.6). Every local and remote access
 * names a key: the key must exist with the same variant byte, belong to the accessing QP's
 * protection domain, grant the access, and contain [va, va+len). */
#include "model/mkey.h"

enum hm_mkey_result hm_mkey_check(struct hm_dev *d, uint32_t key, uint32_t pdn, uint64_t va,
				  uint64_t len, uint32_t access, uint64_t *iova)
{
	uint32_t idx = key >> 8;
	const struct hm_mkey *mk = idx < d->dp->nmkeys ? &d->dp->mkeys[idx] : NULL;

	if (!mk || !mk->valid || mk->variant != (uint8_t)key)
		return HM_MKEY_BAD_KEY;
	if (mk->pdn != pdn)
		return HM_MKEY_BAD_PD;
	if ((mk->access & access) != access)
		return HM_MKEY_BAD_ACCESS;
	if (va < mk->va || va + len < va || va + len > mk->va + mk->len)
		return HM_MKEY_BAD_RANGE;
	*iova = mk->iova + (va - mk->va);
	return HM_MKEY_OK;
}

uint32_t hm_mkey_verr(enum hm_mkey_result r, bool remote)
{
	static const uint32_t local[] = { [HM_MKEY_OK] = HCA_VERR_NONE,
					  [HM_MKEY_BAD_KEY] = HCA_VERR_LKEY_INVALID,
					  [HM_MKEY_BAD_PD] = HCA_VERR_LKEY_PD,
					  [HM_MKEY_BAD_ACCESS] = HCA_VERR_LKEY_ACCESS,
					  [HM_MKEY_BAD_RANGE] = HCA_VERR_LKEY_BOUNDS };
	static const uint32_t rem[] = { [HM_MKEY_OK] = HCA_VERR_NONE,
					[HM_MKEY_BAD_KEY] = HCA_VERR_RKEY_INVALID,
					[HM_MKEY_BAD_PD] = HCA_VERR_RKEY_PD,
					[HM_MKEY_BAD_ACCESS] = HCA_VERR_RKEY_ACCESS,
					[HM_MKEY_BAD_RANGE] = HCA_VERR_RKEY_BOUNDS };

	return remote ? rem[r] : local[r];
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
			sim_dma_write_ct(d->fn, iova, b + moved, n, ct->ready, mbps,
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
