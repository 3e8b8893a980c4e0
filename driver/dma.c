/* Driver: host memory the device reaches by DMA.
 *
 * Queue buffers. Every buffer gets its own IOMMU mapping (its own device address range, with
 * a guard page after it), but the host memory under one-page buffers — the queues of small
 * QPs, CQs and SRQs, the command page — comes from slabs of pages taken from the OS, as a
 * kernel driver's page allocator would give them: malloc's page-aligned allocations cost two
 * pages for one. A fresh slab page is already zero and stays out of the process's resident
 * memory until someone writes it; a recycled one is cleared.
 *
 * Doorbell records. As mlx5 does, the 8-byte doorbell records of QPs, SRQs and CQs share
 * pages: 512 records per page, one mapping per page, pages kept per DMA permission (QP and
 * SRQ records are only read by the device, CQ records are read and written). */
#include "driver/drv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE 4096u
#define SLAB_PAGES 64u
#define DBREC_BYTES 8u
#define DBRECS_PER_PAGE (PAGE / DBREC_BYTES)

struct drv_dbrec_page {
	struct drv_dbrec_page *next;
	uint8_t *mem;                        /* the page */
	int64_t map;                         /* its mapping */
	uint64_t iova;                       /* its device address */
	unsigned perm;			     /* HCASIM_DMA_* the device has on it */
	unsigned used;                       /* records handed out */
	uint64_t bits[DBRECS_PER_PAGE / 64]; /* which */
};

/* Index of the slab holding p, or -1. Slabs are kept sorted by address. */
static long slab_of(const struct drv_dev *d, const void *p)
{
	size_t lo = 0, hi = d->nslabs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const uint8_t *s = d->slabs[mid];

		if ((const uint8_t *)p < s)
			hi = mid;
		else if ((const uint8_t *)p >= s + (size_t)SLAB_PAGES * PAGE)
			lo = mid + 1;
		else
			return (long)mid;
	}
	return -1;
}

static void *page_get(struct drv_dev *d)
{
	void *p;

	if (d->free_pages) {
		p = d->free_pages;
		d->free_pages = *(void **)p;
		memset(p, 0, PAGE);
		return p;
	}
	if (!d->slab_left) {
		void *s = mmap(NULL, (size_t)SLAB_PAGES * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		size_t i;

		if (s == MAP_FAILED)
			return NULL;
		if (d->nslabs == d->slab_cap) {
			size_t cap = d->slab_cap ? 2 * d->slab_cap : 16;
			void **n = realloc(d->slabs, cap * sizeof(*n));

			if (!n) {
				munmap(s, (size_t)SLAB_PAGES * PAGE);
				return NULL;
			}
			d->slabs = n;
			d->slab_cap = cap;
		}
		for (i = d->nslabs; i > 0 && (uint8_t *)d->slabs[i - 1] > (uint8_t *)s; i--)
			d->slabs[i] = d->slabs[i - 1];
		d->slabs[i] = s;
		d->nslabs++;
		d->slab_next = s;
		d->slab_left = SLAB_PAGES;
	}
	p = d->slab_next; /* fresh from the OS: zero */
	d->slab_next += PAGE;
	d->slab_left--;
	return p;
}

/* Give back host memory from drv_dma_alloc whose mapping is already gone. */
static void host_free(struct drv_dev *d, void *mem)
{
	if (slab_of(d, mem) >= 0) {
		*(void **)mem = d->free_pages;
		d->free_pages = mem;
	} else {
		free(mem);
	}
}

int drv_dma_alloc(struct drv_dev *d, size_t bytes, unsigned perm, void **mem, int64_t *map,
		  uint64_t *iova)
{
	size_t len = (bytes + PAGE - 1) & ~(size_t)(PAGE - 1);
	void *p = NULL;
	int64_t id;

	if (!len)
		len = PAGE;
	if (len == PAGE) {
		p = page_get(d);
		if (!p)
			return drv_fail(ENOMEM, "out of host memory for a %zu-byte queue", len);
	} else {
		if (posix_memalign(&p, PAGE, len))
			return drv_fail(ENOMEM, "out of host memory for a %zu-byte queue", len);
		memset(p, 0, len);
	}
	id = hcasim_dma_map(d->fn, p, len, perm, iova);
	if (id < 0) {
		host_free(d, p);
		return drv_fail((int)-id, "%s", hcasim_last_error());
	}
	*mem = p;
	*map = id;
	return 0;
}

void drv_dma_free(struct drv_dev *d, void *mem, int64_t map)
{
	if (!mem)
		return;
	hcasim_dma_unmap(d->fn, map);
	host_free(d, mem);
}

int drv_dbrec_alloc(struct drv_dev *d, unsigned perm, void **rec, uint64_t *iova)
{
	struct drv_dbrec_page *pg;
	unsigned i;

	for (pg = d->dbrec_pages; pg; pg = pg->next)
		if (pg->perm == perm && pg->used < DBRECS_PER_PAGE)
			break;
	if (!pg) {
		int rc;

		pg = calloc(1, sizeof(*pg));
		if (!pg)
			return drv_fail(ENOMEM, "out of host memory for a doorbell record page");
		rc = drv_dma_alloc(d, PAGE, perm, (void **)&pg->mem, &pg->map, &pg->iova);
		if (rc) {
			free(pg);
			return rc;
		}
		pg->perm = perm;
		pg->next = d->dbrec_pages;
		d->dbrec_pages = pg;
	}
	for (i = 0; pg->bits[i / 64] & (1ull << (i % 64)); i++)
		;
	pg->bits[i / 64] |= 1ull << (i % 64);
	pg->used++;
	*rec = pg->mem + (size_t)i * DBREC_BYTES;
	*iova = pg->iova + (uint64_t)i * DBREC_BYTES;
	return 0;
}

void drv_dbrec_free(struct drv_dev *d, void *rec)
{
	struct drv_dbrec_page **pp, *pg;
	unsigned i;

	if (!rec)
		return;
	for (pp = &d->dbrec_pages; (pg = *pp); pp = &pg->next)
		if ((uint8_t *)rec >= pg->mem && (uint8_t *)rec < pg->mem + PAGE)
			break;
	if (!pg)
		return;
	i = (unsigned)(((uint8_t *)rec - pg->mem) / DBREC_BYTES);
	memset(rec, 0, DBREC_BYTES);
	pg->bits[i / 64] &= ~(1ull << (i % 64));
	if (--pg->used == 0) {
		*pp = pg->next;
		drv_dma_free(d, pg->mem, pg->map);
		free(pg);
	}
}

void drv_dma_release_all(struct drv_dev *d, void *const *mem, unsigned n)
{
	struct drv_dbrec_page *pg;

	for (unsigned i = 0; i < n; i++)
		if (mem[i] && slab_of(d, mem[i]) < 0)
			free(mem[i]);
	while ((pg = d->dbrec_pages)) {
		d->dbrec_pages = pg->next;
		free(pg);
	}
	for (size_t i = 0; i < d->nslabs; i++)
		munmap(d->slabs[i], (size_t)SLAB_PAGES * PAGE);
	free(d->slabs);
	d->slabs = NULL;
	d->nslabs = d->slab_cap = 0;
	d->free_pages = NULL;
	d->slab_next = NULL;
	d->slab_left = 0;
}
