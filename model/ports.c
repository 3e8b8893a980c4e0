/* Block ports (model/ports.h): which implementation each block of a device runs, the RTL
 * implementations registered by sim/vl, and lockstep — both twins on the same inputs, every
 * output field and its cycle compared, the first difference halting the simulation. */
#include "model/dp.h"
#include "model/hca.h"
#include "model/ports.h"
#include "model/waves.h"
#include "sim/error.h"
#include "sim/kernel.h"
#include "sim/trace.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const void *rtl_ops[HM_NBLOCKS];
static const char *const block_names[HM_NBLOCKS] = { "sched", "cqe", "psn" };
static const char *const impl_names[] = { "model", "rtl", "lockstep" };

struct hm_blocks {
	enum hm_impl mode[HM_NBLOCKS];
	void *model[HM_NBLOCKS]; /* the C twin's instance (model and lockstep) */
	void *rtl[HM_NBLOCKS];   /* the RTL's instance (rtl and lockstep) */
};

void hm_port_register(enum hm_block b, const void *ops)
{
	SIM_ASSERT(b < HM_NBLOCKS, "no block %d", (int)b);
	rtl_ops[b] = ops;
}

const void *hm_port_rtl(enum hm_block b)
{
	return b < HM_NBLOCKS ? rtl_ops[b] : NULL;
}

const char *hm_block_name(enum hm_block b)
{
	return b < HM_NBLOCKS ? block_names[b] : "?";
}

static const struct hm_sched_ops *sched_rtl(void);

int hm_impl_check(const unsigned mode[HM_NBLOCKS], uint32_t max_qp)
{
	uint64_t nqps = (uint64_t)HCA_FIRST_QPN + max_qp;

	for (int b = 0; b < HM_NBLOCKS; b++)
		if (mode[b] != HM_IMPL_MODEL && !rtl_ops[b])
			return sim_error(-ENOTSUP, "impl.%s = %s: this build has no RTL twin of %s "
					 "(Verilator was not found when it was built)",
					 block_names[b], impl_names[mode[b]], block_names[b]);
	/* The arbiter's FIFO and pending bits are sized when the RTL is built. */
	if (mode[HM_BLOCK_SCHED] != HM_IMPL_MODEL && sched_rtl()->max_nqps &&
	    nqps > sched_rtl()->max_nqps) {
		uint32_t cap = sched_rtl()->max_nqps;
		const char *how = sched_rtl()->rebuild;
		char fix[128] = "";

		if (how)
			snprintf(fix, sizeof(fix), "; %s%llu", how, (unsigned long long)nqps);
		return sim_error(-EINVAL, "impl.sched = %s: hca.max_qp = %u needs %llu QPNs, but the "
				 "RTL arbiter was built for NQP = %u (hca.max_qp <= %u)%s",
				 impl_names[mode[HM_BLOCK_SCHED]], max_qp,
				 (unsigned long long)nqps, cap,
				 cap > HCA_FIRST_QPN ? cap - HCA_FIRST_QPN : 0, fix);
	}
	return 0;
}

static const struct hm_sched_ops *sched_rtl(void)
{
	return rtl_ops[HM_BLOCK_SCHED];
}

static const struct hm_cqe_ops *cqe_rtl(void)
{
	return rtl_ops[HM_BLOCK_CQE];
}

static const struct hm_psn_ops *psn_rtl(void)
{
	return rtl_ops[HM_BLOCK_PSN];
}

void hm_blocks_create(struct hm_dev *d, const unsigned mode[HM_NBLOCKS])
{
	struct hm_blocks *k = calloc(1, sizeof(*k));
	uint32_t nqps = HCA_FIRST_QPN + (uint32_t)d->cfg.max_qp;

	SIM_ASSERT(k != NULL, "out of memory");
	for (int b = 0; b < HM_NBLOCKS; b++) {
		k->mode[b] = (enum hm_impl)mode[b];
		SIM_ASSERT(k->mode[b] == HM_IMPL_MODEL || rtl_ops[b], "impl.%s without an RTL twin",
			   block_names[b]);
	}
	if (k->mode[HM_BLOCK_SCHED] != HM_IMPL_RTL)
		k->model[HM_BLOCK_SCHED] = hm_sched_model.create(d, nqps);
	if (k->mode[HM_BLOCK_SCHED] != HM_IMPL_MODEL)
		k->rtl[HM_BLOCK_SCHED] = sched_rtl()->create(d, nqps);
	if (k->mode[HM_BLOCK_CQE] != HM_IMPL_RTL)
		k->model[HM_BLOCK_CQE] = hm_cqe_model.create(d);
	if (k->mode[HM_BLOCK_CQE] != HM_IMPL_MODEL)
		k->rtl[HM_BLOCK_CQE] = cqe_rtl()->create(d);
	if (k->mode[HM_BLOCK_PSN] != HM_IMPL_RTL)
		k->model[HM_BLOCK_PSN] = hm_psn_model.create(d);
	if (k->mode[HM_BLOCK_PSN] != HM_IMPL_MODEL)
		k->rtl[HM_BLOCK_PSN] = psn_rtl()->create(d);
	d->blocks = k;
}

void hm_blocks_destroy(struct hm_dev *d)
{
	struct hm_blocks *k = d->blocks;

	if (!k)
		return;
	if (k->model[HM_BLOCK_SCHED])
		hm_sched_model.destroy(k->model[HM_BLOCK_SCHED]);
	if (k->rtl[HM_BLOCK_SCHED])
		sched_rtl()->destroy(k->rtl[HM_BLOCK_SCHED]);
	if (k->model[HM_BLOCK_CQE])
		hm_cqe_model.destroy(k->model[HM_BLOCK_CQE]);
	if (k->rtl[HM_BLOCK_CQE])
		cqe_rtl()->destroy(k->rtl[HM_BLOCK_CQE]);
	if (k->model[HM_BLOCK_PSN])
		hm_psn_model.destroy(k->model[HM_BLOCK_PSN]);
	if (k->rtl[HM_BLOCK_PSN])
		psn_rtl()->destroy(k->rtl[HM_BLOCK_PSN]);
	free(k);
	d->blocks = NULL;
}

void hm_blocks_waves(struct hm_dev *d, const char *dir)
{
	struct hm_blocks *k = d->blocks;

	if (!k)
		return;
	if (k->rtl[HM_BLOCK_SCHED] && sched_rtl()->waves_start)
		sched_rtl()->waves_start(k->rtl[HM_BLOCK_SCHED], dir);
	if (k->rtl[HM_BLOCK_CQE] && cqe_rtl()->waves_start)
		cqe_rtl()->waves_start(k->rtl[HM_BLOCK_CQE], dir);
	if (k->rtl[HM_BLOCK_PSN] && psn_rtl()->waves_start)
		psn_rtl()->waves_start(k->rtl[HM_BLOCK_PSN], dir);
}

/* ---- lockstep comparison ---- */

/* One output field to compare: name, offset and size in the output struct. */
struct cmp_field {
	const char *name;
	size_t off, size;
};
#define F(type, field) { #field, offsetof(type, field), sizeof(((type *)0)->field) }

static uint64_t read_field(const void *base, size_t off, size_t size)
{
	uint64_t v = 0;

	memcpy(&v, (const uint8_t *)base + off, size < sizeof(v) ? size : sizeof(v));
	return v;
}

/* The wave file to open for the RTL instance of block b on device d, as the end of a mismatch
 * report: its path (HM_PORT_WAVES; the file is finished), or how to get one. */
static void waves_of(struct hm_dev *d, enum hm_block b, char *buf, size_t len)
{
	const char *(*fn)(void *) = NULL;
	const char *path;
	switch (b) {
	case HM_BLOCK_SCHED:
		fn = sched_rtl()->waves;
		break;
	case HM_BLOCK_CQE:
		fn = cqe_rtl()->waves;
		break;
	case HM_BLOCK_PSN:
		fn = psn_rtl()->waves;
		break;
	default:
		break;
	}
	path = fn ? fn(d->blocks->rtl[b]) : NULL;
	if (path)
		snprintf(buf, len, "waves: %s (scope hca%d.%s)", path, d->devno, block_names[b]);
	else if (!fn)
		snprintf(buf, len, "no waves: this RTL implementation of %s writes none",
			 block_names[b]);
	else
		snprintf(buf, len, "no waves: rerun with WAVES=1 for %s/hca%d.%s.fst",
			 hm_waves_env_dir(), d->devno, block_names[b]);
}

/* Compare the model's and the RTL's output; on the first difference, halt the simulation
 * with a report naming block, cycle, field, expected (model) and got (RTL). */
static bool differ(struct hm_dev *d, enum hm_block b, const char *op, uint64_t in_cycle,
		   const struct cmp_field *fields, size_t nfields, const void *want, const void *got,
		   const struct hca_field_desc *image, size_t image_off)
{
	char field[64];
	uint64_t w = 0, g = 0;
	bool bad = false;

	for (size_t i = 0; i < nfields && !bad; i++) {
		w = read_field(want, fields[i].off, fields[i].size);
		g = read_field(got, fields[i].off, fields[i].size);
		if (w != g) {
			snprintf(field, sizeof(field), "%s", fields[i].name);
			bad = true;
		}
	}
	for (const struct hca_field_desc *f = image; f && f->name && !bad; f++) {
		w = read_field(want, image_off + f->offset, f->size);
		g = read_field(got, image_off + f->offset, f->size);
		if (w != g) {
			snprintf(field, sizeof(field), "image.%s", f->name);
			bad = true;
		}
	}
	if (!bad)
		return false;
	{
		char msg[1024], where[640];

		waves_of(d, b, where, sizeof(where));
		snprintf(msg, sizeof(msg),
			 "lockstep mismatch: device %d block %s (%s) at cycle %llu: field %s "
			 "expected 0x%llx (model) got 0x%llx (rtl); %s",
			 d->devno, block_names[b], op, (unsigned long long)in_cycle, field,
			 (unsigned long long)w, (unsigned long long)g, where);
		trace_warn_lockstep(d->devno, block_names[b], op, in_cycle, field, w, g);
		fprintf(stderr, "hcasim: %s\n", msg);
		sim_halt(sim_kernel(), msg);
	}
	return true;
}

/* The CQE image's fields, for comparing images field by field (looked up once). */
static const struct hca_field_desc *cqe_fields(void)
{
	static const struct hca_field_desc *f;

	if (!f)
		f = hca_struct_find("hca_cqe")->fields;
	return f;
}

#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the ports ---- */

void hm_sched_doorbell(struct hm_dev *d, const struct hm_sched_db_in *in,
		       struct hm_sched_db_out *out)
{
	static const struct cmp_field f[] = { F(struct hm_sched_db_out, cycle),
					      F(struct hm_sched_db_out, verdict),
					      F(struct hm_sched_db_out, new_pi) };
	struct hm_blocks *k = d->blocks;
	struct hm_sched_db_out r;

	switch (k->mode[HM_BLOCK_SCHED]) {
	case HM_IMPL_MODEL:
		hm_sched_model.doorbell(k->model[HM_BLOCK_SCHED], in, out);
		break;
	case HM_IMPL_RTL:
		sched_rtl()->doorbell(k->rtl[HM_BLOCK_SCHED], in, out);
		break;
	case HM_IMPL_LOCKSTEP:
		hm_sched_model.doorbell(k->model[HM_BLOCK_SCHED], in, out);
		sched_rtl()->doorbell(k->rtl[HM_BLOCK_SCHED], in, &r);
		differ(d, HM_BLOCK_SCHED, "doorbell", in->cycle, f, NFIELDS(f), out, &r, NULL, 0);
	}
	if (sim_waves_on)
		hm_waves_sched_db(d, in, out);
}

bool hm_sched_push(struct hm_dev *d, uint32_t qpn, uint64_t cycle)
{
	static const struct cmp_field f[] = { F(struct hm_sched_push_out, cycle),
					      F(struct hm_sched_push_out, queued) };
	struct hm_blocks *k = d->blocks;
	struct hm_sched_push_in in = { cycle, qpn };
	struct hm_sched_push_out out, r;

	switch (k->mode[HM_BLOCK_SCHED]) {
	case HM_IMPL_MODEL:
		hm_sched_model.push(k->model[HM_BLOCK_SCHED], &in, &out);
		break;
	case HM_IMPL_RTL:
		sched_rtl()->push(k->rtl[HM_BLOCK_SCHED], &in, &out);
		break;
	case HM_IMPL_LOCKSTEP:
		hm_sched_model.push(k->model[HM_BLOCK_SCHED], &in, &out);
		sched_rtl()->push(k->rtl[HM_BLOCK_SCHED], &in, &r);
		differ(d, HM_BLOCK_SCHED, "push", cycle, f, NFIELDS(f), &out, &r, NULL, 0);
	}
	if (sim_waves_on)
		hm_waves_sched_push(d, &in, &out);
	return out.queued;
}

bool hm_sched_pop(struct hm_dev *d, uint64_t cycle, uint32_t *qpn)
{
	static const struct cmp_field f[] = { F(struct hm_sched_pop_out, cycle),
					      F(struct hm_sched_pop_out, valid),
					      F(struct hm_sched_pop_out, qpn) };
	struct hm_blocks *k = d->blocks;
	struct hm_sched_pop_in in = { cycle };
	struct hm_sched_pop_out out, r;

	switch (k->mode[HM_BLOCK_SCHED]) {
	case HM_IMPL_MODEL:
		hm_sched_model.pop(k->model[HM_BLOCK_SCHED], &in, &out);
		break;
	case HM_IMPL_RTL:
		sched_rtl()->pop(k->rtl[HM_BLOCK_SCHED], &in, &out);
		break;
	case HM_IMPL_LOCKSTEP:
		hm_sched_model.pop(k->model[HM_BLOCK_SCHED], &in, &out);
		sched_rtl()->pop(k->rtl[HM_BLOCK_SCHED], &in, &r);
		differ(d, HM_BLOCK_SCHED, "pop", cycle, f, NFIELDS(f), &out, &r, NULL, 0);
	}
	if (sim_waves_on)
		hm_waves_sched_pop(d, &in, &out);
	*qpn = out.qpn;
	return out.valid;
}

void hm_cqe_port_post(struct hm_dev *d, const struct hm_cqe_in *in, struct hm_cqe_out *out)
{
	static const struct cmp_field f[] = {
		F(struct hm_cqe_out, cycle),  F(struct hm_cqe_out, action),
		F(struct hm_cqe_out, slot),   F(struct hm_cqe_out, new_pi),
		F(struct hm_cqe_out, new_arm), F(struct hm_cqe_out, event)
	};
	struct hm_blocks *k = d->blocks;
	struct hm_cqe_out r;

	switch (k->mode[HM_BLOCK_CQE]) {
	case HM_IMPL_MODEL:
		hm_cqe_model.post(k->model[HM_BLOCK_CQE], in, out);
		break;
	case HM_IMPL_RTL:
		cqe_rtl()->post(k->rtl[HM_BLOCK_CQE], in, out);
		break;
	case HM_IMPL_LOCKSTEP:
		hm_cqe_model.post(k->model[HM_BLOCK_CQE], in, out);
		cqe_rtl()->post(k->rtl[HM_BLOCK_CQE], in, &r);
		/* The image is compared only when a CQE is written. */
		differ(d, HM_BLOCK_CQE, "post", in->cycle, f, NFIELDS(f), out, &r,
		       out->action == HM_CQE_WRITE ? cqe_fields() : NULL,
		       offsetof(struct hm_cqe_out, image));
	}
	if (sim_waves_on)
		hm_waves_cqe(d, in, out);
}

void hm_psn_classify(struct hm_dev *d, const struct hm_psn_in *in, struct hm_psn_out *out)
{
	static const struct cmp_field f[] = { F(struct hm_psn_out, cycle),
					      F(struct hm_psn_out, cls),
					      F(struct hm_psn_out, send_nak),
					      F(struct hm_psn_out, nak_sent) };
	struct hm_blocks *k = d->blocks;
	struct hm_psn_out r;

	switch (k->mode[HM_BLOCK_PSN]) {
	case HM_IMPL_MODEL:
		hm_psn_model.classify(k->model[HM_BLOCK_PSN], in, out);
		break;
	case HM_IMPL_RTL:
		psn_rtl()->classify(k->rtl[HM_BLOCK_PSN], in, out);
		break;
	case HM_IMPL_LOCKSTEP:
		hm_psn_model.classify(k->model[HM_BLOCK_PSN], in, out);
		psn_rtl()->classify(k->rtl[HM_BLOCK_PSN], in, &r);
		differ(d, HM_BLOCK_PSN, "classify", in->cycle, f, NFIELDS(f), out, &r, NULL, 0);
	}
	if (sim_waves_on)
		hm_waves_psn(d, in, out);
}
