/* ctx: the tables of the device's contexts (QP, CQ, SRQ, memory key), which firmware writes and
 * the blocks read (model/ctx.h). */
#include "model/ctx.h"

#include <stdlib.h>
#include <string.h>

struct hm_dp *hm_dp_create(struct hm_dev *d)
{
	struct hm_dp *dp = calloc(1, sizeof(*dp));

	SIM_ASSERT(dp != NULL, "out of memory");
	dp->qpc_entries = (uint32_t)d->cfg.qpc_cache_entries;
	return dp;
}

void hm_dp_destroy(struct hm_dp *dp)
{
	if (!dp)
		return;
	/* the QPs are destroyed first (hm_dev_destroy: hm_qp_destroy) */
	free(dp->qps);
	free(dp->cqs);
	free(dp->srqs);
	free(dp->mkeys);
	free(dp);
}

void *hm_ctx_grow(void *arr, uint32_t *n, uint32_t i, size_t elem)
{
	uint32_t cap = *n ? *n : 64;
	void *a;

	if (i < *n)
		return arr;
	while (cap <= i)
		cap *= 2;
	a = realloc(arr, (size_t)cap * elem);
	SIM_ASSERT(a != NULL, "out of memory growing a context table to %u", cap);
	memset((char *)a + (size_t)*n * elem, 0, (size_t)(cap - *n) * elem);
	*n = cap;
	return a;
}

void hm_mkey_write(struct hm_dev *d, uint32_t index, const struct hm_mkey *mk)
{
	d->dp->mkeys = hm_ctx_grow(d->dp->mkeys, &d->dp->nmkeys, index, sizeof(*mk));
	d->dp->mkeys[index] = *mk;
}

uint32_t hm_mkey_windows_on(struct hm_dev *d, uint32_t index)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < d->dp->nmkeys; i++) {
		const struct hm_mkey *w = &d->dp->mkeys[i];

		n += w->valid && w->mw_type && w->bound && w->mr == index;
	}
	return n;
}

uint32_t hm_mkey_unbind_qp(struct hm_dev *d, uint32_t qpn)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < d->dp->nmkeys; i++) {
		struct hm_mkey *w = &d->dp->mkeys[i];

		if (w->valid && w->mw_type == HCA_MW_TYPE_2 && w->bound && w->qpn == qpn) {
			w->bound = false;
			n++;
		}
	}
	return n;
}

void hm_cq_write(struct hm_dev *d, uint32_t cqn, const struct hm_cq *cq)
{
	d->dp->cqs = hm_ctx_grow(d->dp->cqs, &d->dp->ncqs, cqn, sizeof(*cq));
	d->dp->cqs[cqn] = *cq;
}

struct hm_cq *hm_cq_get(struct hm_dev *d, uint32_t cqn)
{
	return cqn < d->dp->ncqs && d->dp->cqs[cqn].valid ? &d->dp->cqs[cqn] : NULL;
}

void hm_srq_write(struct hm_dev *d, uint32_t srqn, const struct hm_srq *srq)
{
	d->dp->srqs = hm_ctx_grow(d->dp->srqs, &d->dp->nsrqs, srqn, sizeof(*srq));
	d->dp->srqs[srqn] = *srq;
}

struct hm_srq *hm_srq_get(struct hm_dev *d, uint32_t srqn)
{
	return srqn < d->dp->nsrqs && d->dp->srqs[srqn].valid ? &d->dp->srqs[srqn] : NULL;
}
