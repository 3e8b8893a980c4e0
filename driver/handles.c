/* Driver: the registry of live handles. Every object the driver hands out is registered with
 * its kind and removed when destroyed, so that a NULL, foreign, destroyed or wrong-kind handle
 * is refused with EINVAL before anything is read through it (a use-after-free in the caller
 * becomes a clear error instead of undefined behaviour). Open addressing with linear probing;
 * deletion shifts the run back, so there are no tombstones. */
#include "driver/drv.h"

#include <stdio.h>
#include <stdlib.h>

struct slot {
	const void *ptr; /* handle, NULL = empty */
	uint32_t kind;   /* enum drv_kind */
};

static struct slot *slots;
static size_t cap, count; /* cap is a power of two */
/* The two handles found last (a poll loop asks for its CQ and its context over and over),
 * tried before the table. A handle deleted or registered again leaves them. */
static struct slot recent[2];

static size_t hash(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

static bool grow(void)
{
	size_t ncap = cap ? cap * 2 : 256;
	struct slot *n = calloc(ncap, sizeof(*n));

	if (!n)
		return false;
	for (size_t i = 0; i < cap; i++) {
		size_t j;

		if (!slots[i].ptr)
			continue;
		for (j = hash(slots[i].ptr) & (ncap - 1); n[j].ptr; j = (j + 1) & (ncap - 1))
			;
		n[j] = slots[i];
	}
	free(slots);
	slots = n;
	cap = ncap;
	return true;
}

static void forget(const void *ptr)
{
	for (int r = 0; r < 2; r++)
		if (recent[r].ptr == ptr)
			recent[r] = (struct slot){ NULL, 0 };
}

void drv_handle_add(const void *ptr, uint32_t kind)
{
	size_t i;

	if ((count + 1) * 2 > cap && !grow()) {
		fprintf(stderr, "hcasim: out of memory for the handle registry\n");
		abort();
	}
	for (i = hash(ptr) & (cap - 1); slots[i].ptr; i = (i + 1) & (cap - 1))
		if (slots[i].ptr == ptr)
			break;
	if (!slots[i].ptr)
		count++;
	slots[i] = (struct slot){ ptr, kind };
	forget(ptr);
}

uint32_t drv_handle_kind(const void *ptr)
{
	if (!ptr || !cap)
		return 0;
	if (recent[0].ptr == ptr)
		return recent[0].kind;
	if (recent[1].ptr == ptr)
		return recent[1].kind;
	for (size_t i = hash(ptr) & (cap - 1); slots[i].ptr; i = (i + 1) & (cap - 1)) {
		if (slots[i].ptr == ptr) {
			recent[1] = recent[0];
			recent[0] = slots[i];
			return slots[i].kind;
		}
	}
	return 0;
}

void drv_handle_del(const void *ptr)
{
	size_t i, j;

	if (!ptr || !cap)
		return;
	forget(ptr);
	for (i = hash(ptr) & (cap - 1); slots[i].ptr != ptr; i = (i + 1) & (cap - 1))
		if (!slots[i].ptr)
			return;
	/* Shift later members of the run back over the hole when their home allows it. */
	for (j = (i + 1) & (cap - 1); slots[j].ptr; j = (j + 1) & (cap - 1)) {
		size_t home = hash(slots[j].ptr) & (cap - 1);

		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			slots[i] = slots[j];
			i = j;
		}
	}
	slots[i] = (struct slot){ NULL, 0 };
	count--;
}

const void **drv_handle_all(uint32_t kind, size_t *n)
{
	const void **all = NULL;
	size_t k = 0;

	for (size_t i = 0; i < cap; i++)
		k += slots[i].ptr && slots[i].kind == kind;
	*n = 0;
	if (!k || !(all = malloc(k * sizeof(*all))))
		return NULL;
	for (size_t i = 0; i < cap; i++)
		if (slots[i].ptr && slots[i].kind == kind)
			all[(*n)++] = slots[i].ptr;
	return all;
}
