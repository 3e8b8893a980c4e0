/* mkey: memory key table and address translation (IBA 10.6). Every local and remote access
 * names a key: the key must exist with the same variant byte, belong to the accessing QP's
 * protection domain, grant the access, and contain [va, va+len). */
#include "model/dp.h"

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
