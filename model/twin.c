/* Block ports (model/twin.h): which implementation each block of a device runs, the RTL
 * implementations registered by sim/vl, and the one port call — dispatch, lockstep and checked
 * (both twins on the same inputs, every output field and its cycle compared; the C twin's answer
 * drives in lockstep, the RTL's in checked), the mismatches (the first halting the simulation,
 * or each counted: impl.on_mismatch) and waves. */
#include "model/hca.h"
#include "model/twin.h"
#include "sim/waves.h"
#include "sim/error.h"
#include "sim/kernel.h"
#include "sim/trace.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The registry (model/twin.def). */
static const struct {
	const char *name, *trace_cat;
} twins[HM_TWIN_COUNT] = {
#define TWIN(name, NAME, cat, doc) [HM_TWIN_##NAME] = { #name, #cat },
#include "model/twin.def"
#undef TWIN
};
/* Every block's trace category is one of sim/trace.def: a misspelt one does not compile. */
#define TWIN(name, NAME, cat, doc)                                                                 \
	_Static_assert(SIM_TCAT_##cat < SIM_TCAT_COUNT, "model/twin.def: " #name " traces as " #cat);
#include "model/twin.def"
#undef TWIN
static const void *rtl_ops[HM_TWIN_COUNT];
static const char *const impl_names[] = { "model", "rtl", "lockstep", "checked" };

struct hm_blocks {
	enum hm_impl mode[HM_TWIN_COUNT];
	const void *model_ops[HM_TWIN_COUNT]; /* the C twins' ops (hm_twin_model) */
	void *model[HM_TWIN_COUNT]; /* the C twin's instance (model, lockstep, checked) */
	void *rtl[HM_TWIN_COUNT];   /* the RTL's instance (rtl, lockstep, checked) */
	bool count;                 /* impl.on_mismatch = count: a mismatch does not halt */
};

void hm_twin_register(enum hm_twin b, const void *ops)
{
	SIM_ASSERT(b < HM_TWIN_COUNT, "no block %d", (int)b);
	rtl_ops[b] = ops;
}

const void *hm_twin_rtl(enum hm_twin b)
{
	return b < HM_TWIN_COUNT ? rtl_ops[b] : NULL;
}

const char *hm_twin_name(enum hm_twin b)
{
	return b < HM_TWIN_COUNT ? twins[b].name : "?";
}

const char *hm_twin_trace_cat(enum hm_twin b)
{
	return b < HM_TWIN_COUNT ? twins[b].trace_cat : "?";
}

int hm_impl_find(const char *name)
{
	for (int m = 0; m < (int)(sizeof(impl_names) / sizeof(impl_names[0])); m++)
		if (!strcmp(name, impl_names[m]))
			return m;
	return -1;
}

int hm_twin_find(const char *name)
{
	for (int b = 0; b < HM_TWIN_COUNT; b++)
		if (!strcmp(name, twins[b].name))
			return b;
	return -1;
}

/* Where impl.<block> of block b is in struct sim_config. */
static size_t impl_offset(enum hm_twin b)
{
	static const size_t off[HM_TWIN_COUNT] = {
#define TWIN(name, NAME, cat, doc) [HM_TWIN_##NAME] = offsetof(struct sim_config, impl_##name),
#include "model/twin.def"
#undef TWIN
	};

	SIM_ASSERT(b < HM_TWIN_COUNT, "no block %d", (int)b);
	return off[b];
}

unsigned *hm_twin_impl(struct sim_config *c, enum hm_twin b)
{
	return (unsigned *)((char *)c + impl_offset(b));
}

void hm_twin_modes(const struct sim_config *c, unsigned mode[HM_TWIN_COUNT])
{
	for (int b = 0; b < HM_TWIN_COUNT; b++)
		mode[b] = *(const unsigned *)((const char *)c + impl_offset((enum hm_twin)b));
}

void *hm_twin_stateless_create(struct hm_dev *d, uint32_t nqps)
{
	(void)nqps;
	return d;
}

void hm_twin_stateless_destroy(void *b)
{
	(void)b;
}

/* The common part of an ops table (its first member). */
static const struct hm_twin_base *base_of(const void *ops)
{
	return ops;
}

int hm_twin_check(const unsigned mode[HM_TWIN_COUNT], uint32_t max_qp)
{
	uint64_t nqps = (uint64_t)HCA_FIRST_QPN + max_qp;

	for (int b = 0; b < HM_TWIN_COUNT; b++)
		if (mode[b] != HM_IMPL_MODEL && !rtl_ops[b])
			return sim_error(-ENOTSUP, "impl.%s = %s: this build has no RTL twin of %s "
					 "(Verilator was not found when it was built)",
					 twins[b].name, impl_names[mode[b]], twins[b].name);
	/* Some RTL (the arbiter's FIFO and pending bits) is sized when it is built. */
	for (int b = 0; b < HM_TWIN_COUNT; b++) {
		const struct hm_twin_base *r = rtl_ops[b] ? base_of(rtl_ops[b]) : NULL;
		char fix[128] = "";

		if (mode[b] == HM_IMPL_MODEL || !r->max_nqps || nqps <= r->max_nqps)
			continue;
		if (r->rebuild)
			snprintf(fix, sizeof(fix), "; %s%llu", r->rebuild, (unsigned long long)nqps);
		return sim_error(-EINVAL, "impl.%s = %s: hca.max_qp = %u needs %llu QPNs, but the "
				 "%s was built for NQP = %u (hca.max_qp <= %u)%s",
				 twins[b].name, impl_names[mode[b]], max_qp,
				 (unsigned long long)nqps, r->sized ? r->sized : "RTL", r->max_nqps,
				 r->max_nqps > HCA_FIRST_QPN ? r->max_nqps - HCA_FIRST_QPN : 0, fix);
	}
	return 0;
}

void hm_twins_create(struct hm_dev *d, const unsigned mode[HM_TWIN_COUNT],
		     const void *const models[HM_TWIN_COUNT])
{
	struct hm_blocks *k = calloc(1, sizeof(*k));
	uint32_t nqps = HCA_FIRST_QPN + (uint32_t)d->cfg.max_qp;

	SIM_ASSERT(k != NULL, "out of memory");
	k->count = d->cfg.on_mismatch == HM_ON_MISMATCH_COUNT;
	for (int b = 0; b < HM_TWIN_COUNT; b++) {
		k->mode[b] = (enum hm_impl)mode[b];
		k->model_ops[b] = models[b];
		SIM_ASSERT(k->mode[b] == HM_IMPL_MODEL || rtl_ops[b], "impl.%s without an RTL twin",
			   twins[b].name);
	}
	for (int b = 0; b < HM_TWIN_COUNT; b++) {
		if (k->mode[b] != HM_IMPL_RTL)
			k->model[b] = base_of(k->model_ops[b])->create(d, nqps);
		if (k->mode[b] != HM_IMPL_MODEL)
			k->rtl[b] = base_of(rtl_ops[b])->create(d, nqps);
	}
	d->blocks = k;
}

void hm_twins_destroy(struct hm_dev *d)
{
	struct hm_blocks *k = d->blocks;

	if (!k)
		return;
	for (int b = 0; b < HM_TWIN_COUNT; b++) {
		if (k->model[b])
			base_of(k->model_ops[b])->destroy(k->model[b]);
		if (k->rtl[b])
			base_of(rtl_ops[b])->destroy(k->rtl[b]);
	}
	free(k);
	d->blocks = NULL;
}

void hm_twins_waves(struct hm_dev *d, const char *dir)
{
	struct hm_blocks *k = d->blocks;

	if (!k)
		return;
	for (int b = 0; b < HM_TWIN_COUNT; b++)
		if (k->rtl[b] && base_of(rtl_ops[b])->waves_start)
			base_of(rtl_ops[b])->waves_start(k->rtl[b], dir);
}

/* ---- comparison (lockstep and checked) ---- */

/* The mismatches since boot, process-wide so that the summary at shutdown or exit outlives the
 * devices: counted by block, the first HM_TWIN_KEPT reports kept (and printed when they occur). */
static struct {
	uint64_t total, count[HM_TWIN_COUNT];
	char kept[HM_TWIN_KEPT][1024];
	bool halted;  /* the run stopped at one (impl.on_mismatch = stop): its report says it all */
	bool summed;  /* the summary was printed */
} mm;
static bool hooked; /* the summary is printed at exit too */

static uint64_t read_field(const void *base, size_t off, size_t size)
{
	uint64_t v = 0;

	memcpy(&v, (const uint8_t *)base + off, size < sizeof(v) ? size : sizeof(v));
	return v;
}

/* The wave file to open for the RTL instance of block b on device d, as the end of a mismatch
 * report: its path (HM_TWIN_WAVES; the file is finished, so it holds the run up to the block's
 * first mismatch), or how to get one. */
static void waves_of(struct hm_dev *d, enum hm_twin b, char *buf, size_t len)
{
	const char *(*fn)(void *) = base_of(rtl_ops[b])->waves;
	const char *path = fn ? fn(d->blocks->rtl[b]) : NULL;

	if (path)
		snprintf(buf, len, "waves: %s (scope hca%d.%s)", path, d->devno, twins[b].name);
	else if (!fn)
		snprintf(buf, len, "no waves: this RTL implementation of %s writes none",
			 twins[b].name);
	else
		snprintf(buf, len, "no waves: rerun with WAVES=1 for %s/hca%d.%s.fst",
			 sim_waves_env_dir(), d->devno, twins[b].name);
}

/* The first output field in which got differs from want (the C twin's): the op's fields, cycle
 * first, then its image's; false if none. */
static bool first_difference(const struct hm_twin_op *op, const void *want, const void *got,
			     char *field, size_t len, uint64_t *w, uint64_t *g)
{
	const struct hca_field_desc *image = NULL;
	size_t image_off = 0;

	for (size_t i = 0; i < op->nfields; i++) {
		*w = read_field(want, op->fields[i].off, op->fields[i].size);
		*g = read_field(got, op->fields[i].off, op->fields[i].size);
		if (*w != *g) {
			snprintf(field, len, "%s", op->fields[i].name);
			return true;
		}
	}
	if (op->image)
		image = op->image(want, &image_off);
	for (const struct hca_field_desc *f = image; f && f->name; f++) {
		*w = read_field(want, image_off + f->offset, f->size);
		*g = read_field(got, image_off + f->offset, f->size);
		if (*w != *g) {
			snprintf(field, len, "image.%s", f->name);
			return true;
		}
	}
	return false;
}

/* Compare got (the RTL's) with want (the C twin's). A difference is traced and counted, its
 * report (block, op, cycle, field, both values, waves) kept and printed; then the simulation
 * halts, unless impl.on_mismatch = count. */
static void compare(struct hm_dev *d, const struct hm_twin_op *op, uint64_t in_cycle,
		    const void *want, const void *got)
{
	enum hm_twin b = op->block;
	enum hm_impl mode = d->blocks->mode[b];
	char field[64], msg[1024], where[640];
	uint64_t w, g;

	if (!first_difference(op, want, got, field, sizeof(field), &w, &g))
		return;
	if (mode == HM_IMPL_CHECKED)
		trace_warn_checked(d->devno, twins[b].name, op->name, in_cycle, field, w, g);
	else
		trace_warn_lockstep(d->devno, twins[b].name, op->name, in_cycle, field, w, g);
	waves_of(d, b, where, sizeof(where));
	snprintf(msg, sizeof(msg),
		 "%s mismatch: device %d block %s (%s) at cycle %llu: field %s expected 0x%llx "
		 "(model) got 0x%llx (rtl); %s",
		 impl_names[mode], d->devno, twins[b].name, op->name, (unsigned long long)in_cycle,
		 field, (unsigned long long)w, (unsigned long long)g, where);
	mm.count[b]++;
	if (mm.total < HM_TWIN_KEPT) {
		snprintf(mm.kept[mm.total], sizeof(mm.kept[0]), "%s", msg);
		fprintf(stderr, "hcasim: %s\n", msg);
	} else if (mm.total == HM_TWIN_KEPT) {
		fprintf(stderr, "hcasim: more mismatches: counted, not printed (hcasim_mismatches)\n");
	}
	mm.total++;
	if (!d->blocks->count) {
		mm.halted = true;
		sim_halt(d->k, msg);
	} else if (!hooked && !atexit(hm_twin_mismatch_summary)) {
		hooked = true; /* a program that exits without hcasim_shutdown() gets it too */
	}
}

void hm_twin_mismatches_reset(void)
{
	memset(&mm, 0, sizeof(mm));
}

uint64_t hm_twin_mismatches(void)
{
	return mm.total;
}

const char *hm_twin_mismatch(uint64_t i)
{
	return i < mm.total && i < HM_TWIN_KEPT ? mm.kept[i] : NULL;
}

void hm_twin_mismatch_summary(void)
{
	char line[512];

	if (!mm.total || mm.halted || mm.summed)
		return;
	mm.summed = true;
	snprintf(line, sizeof(line), "hcasim: %llu mismatch%s between RTL and C twins (",
		 (unsigned long long)mm.total, mm.total == 1 ? "" : "es");
	for (int b = 0, n = 0; b < HM_TWIN_COUNT; b++)
		if (mm.count[b])
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "%s%s %llu",
				 n++ ? ", " : "", twins[b].name, (unsigned long long)mm.count[b]);
	fprintf(stderr, "%s); the first: %s\n", line, mm.kept[0]);
}

/* ---- the port call ---- */

void hm_twin_call(struct hm_dev *d, const struct hm_twin_op *op, uint64_t in_cycle,
		  const void *in, void *out, void *scratch)
{
	struct hm_blocks *k = d->blocks;
	enum hm_twin b = op->block;

	switch (k->mode[b]) {
	case HM_IMPL_MODEL:
		op->call(k->model_ops[b], k->model[b], in, out);
		break;
	case HM_IMPL_RTL:
		op->call(rtl_ops[b], k->rtl[b], in, out);
		break;
	case HM_IMPL_LOCKSTEP: /* the C twin drives; the RTL is compared with it */
		op->call(k->model_ops[b], k->model[b], in, out);
		op->call(rtl_ops[b], k->rtl[b], in, scratch);
		compare(d, op, in_cycle, out, scratch);
		break;
	case HM_IMPL_CHECKED: /* the RTL drives; the C twin checks its answer */
		op->call(rtl_ops[b], k->rtl[b], in, out);
		op->call(k->model_ops[b], k->model[b], in, scratch);
		compare(d, op, in_cycle, scratch, out);
	}
	if (sim_waves_on)
		op->waves(d, in, out);
}

/* ---- the DMA port (model/twin.h "the DMA port of a block") ---- */

void hm_dma_begin(struct hm_dma *p)
{
	p->next = 0;
	p->runs++;
}

static bool same_xfer(const struct hm_dma_xfer *a, const struct hm_dma_xfer *b)
{
	return a->write == b->write && a->addr == b->addr && a->off == b->off &&
	       a->len == b->len && a->issue_ps == b->issue_ps;
}

int hm_dma_do(struct hm_dma *p, struct hm_dma_xfer *x)
{
	SIM_ASSERT(x->len && x->off <= p->buf_len && x->len <= p->buf_len - x->off,
		   "DMA port: %u bytes at offset %u of a buffer of %u", x->len, x->off, p->buf_len);
	if (p->runs > 1) { /* lockstep's second implementation: from the record only */
		const struct hm_dma_xfer *r = p->next < p->n ? &p->rec[p->next++] : NULL;

		if (r && same_xfer(r, x)) { /* lockstep: the C twin's transfer, done once */
			x->done_ps = r->done_ps;
			x->err = r->err;
			return x->err;
		}
		p->diverged = true;
		x->done_ps = x->issue_ps;
		return x->err = -EIO;
	}
	SIM_ASSERT(p->n < HM_DMA_MAX, "DMA port: more than %d transfers in a transaction",
		   HM_DMA_MAX);
	x->done_ps = x->issue_ps;
	x->err = p->xfer(p, x->write, x->addr, p->buf + x->off, x->len, &x->done_ps);
	p->rec[p->n++] = *x;
	p->next = p->n;
	return x->err;
}
