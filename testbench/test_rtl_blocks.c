/* Block tests of the blocks with an RTL twin (model/twin.h): each suite drives the transaction
 * port only, with directed cases and seeded random stimulus, on the C twin and on the RTL
 * (rtl/<block>.sv behind sim/vl), each against expected values, and on both compared transaction by
 * transaction. The lockstep tests inject the test-only RTL bugs and shows that lockstep in the
 * running system halts with a report naming block, cycle and field. */
#include "testbench/tb.h"
#include "model/ctx.h"
#include "model/hca.h"
#include "model/twin.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Seeded stimulus (xorshift64*), the same on every run. */
static uint64_t rng_state;
static void rng_seed(uint64_t s)
{
	rng_state = s * 0x9e3779b97f4a7c15ull + 1;
}
static uint32_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

/* The implementation under test: the C twin or the RTL (skipped in a build without it). */
static const void *impl(enum hm_twin b, bool rtl)
{
	const void *ops = rtl ? hm_twin_rtl(b) : hm_twin_model(b);

	if (!ops)
		cr_skip_test("this build has no RTL twin of %s (no Verilator)", hm_twin_name(b));
	return ops;
}

/* ================================ psn ================================ */

struct psn_case {
	uint32_t psn, epsn;
	bool nak_sent;
	uint8_t cls;
	bool send_nak, nak_after;
};

static const struct psn_case psn_cases[] = {
	{ 100, 100, false, HM_PSN_EXPECTED, false, false },
	{ 100, 100, true, HM_PSN_EXPECTED, false, false }, /* EXPECTED clears the flag */
	{ 99, 100, false, HM_PSN_DUPLICATE, false, false },
	{ 99, 100, true, HM_PSN_DUPLICATE, false, true },  /* DUPLICATE keeps it */
	{ 101, 100, false, HM_PSN_AHEAD, true, true },     /* the first sequence error: NAK */
	{ 101, 100, true, HM_PSN_AHEAD, false, true },     /* one NAK per expected PSN */
	{ 0, 0xffffff, false, HM_PSN_AHEAD, true, true },  /* 24-bit wrap: 0 follows 2^24-1 */
	{ 0xffffff, 0, false, HM_PSN_DUPLICATE, false, false },
	{ 0x7fffff, 0, false, HM_PSN_AHEAD, true, true },  /* 2^23 - 1 ahead */
	{ 0x800000, 0, false, HM_PSN_DUPLICATE, false, false }, /* 2^23: behind */
	{ 0x000005, 0x800005, false, HM_PSN_DUPLICATE, false, false },
	{ 0x7ffffe, 0xffffff, true, HM_PSN_AHEAD, false, true },
};

/* The class by the serial-number rule, written independently of both twins. */
static void psn_expect(const struct hm_psn_in *in, struct hm_psn_out *e)
{
	uint32_t d = (in->psn - in->epsn) & 0xffffffu;

	memset(e, 0, sizeof(*e));
	e->cycle = in->cycle;
	e->cls = d == 0 ? HM_PSN_EXPECTED : d < 0x800000u ? HM_PSN_AHEAD : HM_PSN_DUPLICATE;
	e->send_nak = e->cls == HM_PSN_AHEAD && !in->nak_sent;
	e->nak_sent = e->cls == HM_PSN_AHEAD || (e->cls == HM_PSN_DUPLICATE && in->nak_sent);
}

static void psn_check(const char *who, uint64_t n, const struct hm_psn_out *want,
		      const struct hm_psn_out *got)
{
	cr_assert_eq(got->cycle, want->cycle, "%s #%llu: cycle %llu, expected %llu", who,
		     (unsigned long long)n, (unsigned long long)got->cycle,
		     (unsigned long long)want->cycle);
	cr_assert_eq(got->cls, want->cls, "%s #%llu: cls %u, expected %u", who,
		     (unsigned long long)n, got->cls, want->cls);
	cr_assert_eq(got->send_nak, want->send_nak, "%s #%llu: send_nak", who,
		     (unsigned long long)n);
	cr_assert_eq(got->nak_sent, want->nak_sent, "%s #%llu: nak_sent", who,
		     (unsigned long long)n);
}

static void psn_directed(bool rtl)
{
	const struct hm_psn_ops *ops = impl(HM_TWIN_PSN, rtl);
	void *b = ops->base.create(NULL, 0);

	for (size_t i = 0; i < sizeof(psn_cases) / sizeof(psn_cases[0]); i++) {
		const struct psn_case *c = &psn_cases[i];
		struct hm_psn_in in = { 1000 + i * 3, c->psn, c->epsn, c->nak_sent };
		struct hm_psn_out want = { in.cycle, c->cls, c->send_nak, c->nak_after }, got;

		ops->classify(b, &in, &got);
		psn_check(rtl ? "rtl" : "model", i, &want, &got);
	}
	ops->base.destroy(b);
}

/* Random PSNs near the expected one (and anywhere), with the flag carried as a responder
 * would carry it. */
static void psn_random_in(struct hm_psn_in *in, uint64_t cycle, bool nak_sent)
{
	uint32_t epsn = rng() & 0xffffffu, r = rng() % 4;

	in->cycle = cycle;
	in->epsn = epsn;
	in->psn = r == 0 ? epsn : r == 1 ? epsn + (rng() % 64) - 32 : r == 2 ? epsn ^ 0x800000u : rng();
	in->psn &= 0xffffffu;
	in->nak_sent = nak_sent;
}

static void psn_random(bool rtl)
{
	const struct hm_psn_ops *ops = impl(HM_TWIN_PSN, rtl);
	void *b = ops->base.create(NULL, 0);
	bool flag = false;
	uint64_t cycle = 5;

	rng_seed(1);
	for (uint64_t n = 0; n < 20000; n++) {
		struct hm_psn_in in;
		struct hm_psn_out want, got;

		cycle += rng() % 8;
		psn_random_in(&in, cycle, flag);
		psn_expect(&in, &want);
		ops->classify(b, &in, &got);
		psn_check(rtl ? "rtl" : "model", n, &want, &got);
		flag = got.nak_sent;
	}
	ops->base.destroy(b);
}

Test(rtl_psn, model_directed_classes_nak_and_24_bit_wrap) { psn_directed(false); }
Test(rtl_psn, rtl_directed_classes_nak_and_24_bit_wrap) { psn_directed(true); }
Test(rtl_psn, model_random_against_the_serial_number_rule) { psn_random(false); }
Test(rtl_psn, rtl_random_against_the_serial_number_rule) { psn_random(true); }

Test(rtl_psn, lockstep_random_model_and_rtl_agree_transaction_by_transaction)
{
	const struct hm_psn_ops *m = impl(HM_TWIN_PSN, false), *r = impl(HM_TWIN_PSN, true);
	void *bm = m->base.create(NULL, 0), *br = r->base.create(NULL, 0);
	bool flag = false;

	rng_seed(2);
	for (uint64_t n = 0; n < 20000; n++) {
		struct hm_psn_in in;
		struct hm_psn_out a, b;

		psn_random_in(&in, n * 3, flag);
		m->classify(bm, &in, &a);
		r->classify(br, &in, &b);
		psn_check("lockstep", n, &a, &b);
		flag = a.nak_sent;
	}
	m->base.destroy(bm);
	r->base.destroy(br);
}

/* waves_start (what WAVES=1 and hcasim_waves() call for every RTL instance at boot): the
 * block writes its FST in the directory given, named for the device and the block, and the
 * port's waves() names it. */
Test(rtl_psn, waves_write_an_fst_per_block_instance)
{
	const struct hm_psn_ops *r = impl(HM_TWIN_PSN, true);
	char dir[] = "/tmp/hcasim-waves-XXXXXX", path[256];
	struct stat st;
	void *b;

	cr_assert_not_null(mkdtemp(dir));
	b = r->base.create(NULL, 0);
	cr_assert_not_null(r->base.waves_start);
	r->base.waves_start(b, dir);
	for (uint32_t i = 0; i < 10; i++) {
		struct hm_psn_in in = { 100 + i, i, 3, false };
		struct hm_psn_out out;

		r->classify(b, &in, &out);
	}
	snprintf(path, sizeof(path), "%s/hca0.psn.fst", dir);
	cr_assert_not_null(r->base.waves);
	cr_assert_str_eq(r->base.waves(b), path);
	r->base.destroy(b);
	cr_assert_eq(stat(path, &st), 0, "no %s", path);
	cr_assert_gt(st.st_size, 0);
	unlink(path);
	rmdir(dir);
}

/* ================================ mkey ================================ */

/* The region of the directed cases: key index 3 of 16, variant 0x5a, PD 7, every right. */
#define MK_KEY ((3u << 8) | 0x5au)
#define MK_VA 0x10000ull
#define MK_LEN 0x1000ull
#define MK_IOVA 0x80000000ull

static struct hm_mkey_in mkey_base(bool remote, uint32_t access, uint64_t va, uint64_t len)
{
	return (struct hm_mkey_in){ .remote = remote, .key = MK_KEY, .pdn = 7, .qpn = 0x42,
				    .va = va, .len = len, .access = access, .nkeys = 16,
				    .ctx = { true, 0x5a, 0, false, 7, HCA_ACCESS_MR_ALL, 0, MK_VA,
					     MK_LEN, MK_IOVA } };
}

/* Make in's key a window of type t (bound or not, to qpn) over [MK_VA + 0x100, +0x200). */
static void mkey_window(struct hm_mkey_in *in, uint8_t t, bool bound, uint32_t qpn)
{
	in->ctx.mw_type = t;
	in->ctx.bound = bound;
	in->ctx.qpn = qpn;
	in->ctx.va = MK_VA + 0x100;
	in->ctx.len = 0x200;
	in->ctx.iova = MK_IOVA + 0x100;
	in->ctx.access = HCA_ACCESS_ALL & ~(uint32_t)HCA_ACCESS_LOCAL_WRITE;
}

/* The directed cases: each rule of the check, in the model's order (IBA 10.6.3, 10.6.7.3). */
static size_t mkey_cases(struct hm_mkey_in *in, uint8_t *res, uint64_t *iova)
{
	static const uint32_t bits[] = { HCA_ACCESS_LOCAL_WRITE, HCA_ACCESS_REMOTE_WRITE,
					 HCA_ACCESS_REMOTE_READ, HCA_ACCESS_REMOTE_ATOMIC };
	size_t n = 0;

#define MK_CASE(expr, r, addr) (in[n] = (expr), res[n] = (r), iova[n++] = (addr))
	/* a valid lkey: the whole region, a piece in it, an empty access at its end */
	MK_CASE(mkey_base(false, 0, MK_VA, MK_LEN), HM_MKEY_OK, MK_IOVA);
	MK_CASE(mkey_base(false, HCA_ACCESS_LOCAL_WRITE, MK_VA + 0x800, 0x100), HM_MKEY_OK,
		MK_IOVA + 0x800);
	MK_CASE(mkey_base(false, 0, MK_VA + MK_LEN, 0), HM_MKEY_OK, MK_IOVA + MK_LEN);
	/* the key: index beyond the table, wrong variant (tag), entry not valid */
	MK_CASE(mkey_base(false, 0, MK_VA, 8), HM_MKEY_BAD_KEY, 0);
	in[n - 1].key = (16u << 8) | 0x5a;
	MK_CASE(mkey_base(false, 0, MK_VA, 8), HM_MKEY_BAD_KEY, 0);
	in[n - 1].key = MK_KEY ^ 1;
	MK_CASE(mkey_base(true, 0, MK_VA, 8), HM_MKEY_BAD_KEY, 0);
	in[n - 1].ctx.valid = false;
	/* another PD; and PD before rights and range */
	MK_CASE(mkey_base(false, 0, MK_VA, 8), HM_MKEY_BAD_PD, 0);
	in[n - 1].pdn = 8;
	MK_CASE(mkey_base(true, HCA_ACCESS_REMOTE_READ, MK_VA - 1, 8), HM_MKEY_BAD_PD, 0);
	in[n - 1].ctx.pdn = 6;
	in[n - 1].ctx.access = 0;
	/* each right: missing (refused), then present alone (granted) */
	for (size_t b = 0; b < sizeof(bits) / sizeof(bits[0]); b++) {
		MK_CASE(mkey_base(b > 0, bits[b], MK_VA, 8), HM_MKEY_BAD_ACCESS, 0);
		in[n - 1].ctx.access = HCA_ACCESS_MR_ALL & ~bits[b];
		MK_CASE(mkey_base(b > 0, bits[b], MK_VA, 8), HM_MKEY_OK, MK_IOVA);
		in[n - 1].ctx.access = bits[b];
	}
	/* rights before range */
	MK_CASE(mkey_base(false, HCA_ACCESS_LOCAL_WRITE, MK_VA - 1, 8), HM_MKEY_BAD_ACCESS, 0);
	in[n - 1].ctx.access = 0;
	/* bounds: a byte before, a byte past the end, past the top of the address space */
	MK_CASE(mkey_base(false, 0, MK_VA - 1, 8), HM_MKEY_BAD_RANGE, 0);
	MK_CASE(mkey_base(false, 0, MK_VA + 1, MK_LEN), HM_MKEY_BAD_RANGE, 0);
	MK_CASE(mkey_base(false, 0, MK_VA + 8, UINT64_MAX - 4), HM_MKEY_BAD_RANGE, 0);
	/* an rkey on a region */
	MK_CASE(mkey_base(true, HCA_ACCESS_REMOTE_WRITE, MK_VA + 0x10, 0x20), HM_MKEY_OK,
		MK_IOVA + 0x10);
	/* type 1 window: not through an lkey; bound: its own range and rights; unbound: no key */
	MK_CASE(mkey_base(false, 0, MK_VA + 0x100, 8), HM_MKEY_BAD_KEY, 0);
	mkey_window(&in[n - 1], HCA_MW_TYPE_1, true, 0);
	MK_CASE(mkey_base(true, HCA_ACCESS_REMOTE_READ, MK_VA + 0x180, 0x10), HM_MKEY_OK,
		MK_IOVA + 0x180);
	mkey_window(&in[n - 1], HCA_MW_TYPE_1, true, 0);
	MK_CASE(mkey_base(true, HCA_ACCESS_REMOTE_READ, MK_VA + 0x80, 0x10), HM_MKEY_BAD_RANGE, 0);
	mkey_window(&in[n - 1], HCA_MW_TYPE_1, true, 0);
	MK_CASE(mkey_base(true, HCA_ACCESS_REMOTE_READ, MK_VA + 0x2f8, 0x10), HM_MKEY_BAD_RANGE, 0);
	mkey_window(&in[n - 1], HCA_MW_TYPE_1, true, 0);
	MK_CASE(mkey_base(true, HCA_ACCESS_REMOTE_READ, MK_VA + 0x180, 0x10), HM_MKEY_BAD_KEY, 0);
	mkey_window(&in[n - 1], HCA_MW_TYPE_1, false, 0);
	/* type 1 windows are not bound to a QP */
	MK_CASE(mkey_base(true, HCA_ACCESS_REMOTE_READ, MK_VA + 0x180, 0x10), HM_MKEY_OK,
		MK_IOVA + 0x180);
	mkey_window(&in[n - 1], HCA_MW_TYPE_1, true, 0x43);
	/* type 2: bound to the QP, another QP, unbound; PD before QP, QP before rights */
	MK_CASE(mkey_base(true, HCA_ACCESS_REMOTE_WRITE, MK_VA + 0x100, 0x200), HM_MKEY_OK,
		MK_IOVA + 0x100);
	mkey_window(&in[n - 1], HCA_MW_TYPE_2, true, 0x42);
	MK_CASE(mkey_base(true, HCA_ACCESS_REMOTE_WRITE, MK_VA + 0x100, 8), HM_MKEY_BAD_QP, 0);
	mkey_window(&in[n - 1], HCA_MW_TYPE_2, true, 0x43);
	MK_CASE(mkey_base(true, HCA_ACCESS_REMOTE_WRITE, MK_VA + 0x100, 8), HM_MKEY_BAD_KEY, 0);
	mkey_window(&in[n - 1], HCA_MW_TYPE_2, false, 0x42);
	MK_CASE(mkey_base(true, HCA_ACCESS_REMOTE_WRITE, MK_VA + 0x100, 8), HM_MKEY_BAD_PD, 0);
	mkey_window(&in[n - 1], HCA_MW_TYPE_2, true, 0x43);
	in[n - 1].ctx.pdn = 9;
	MK_CASE(mkey_base(true, HCA_ACCESS_LOCAL_WRITE, MK_VA - 8, 8), HM_MKEY_BAD_QP, 0);
	mkey_window(&in[n - 1], HCA_MW_TYPE_2, true, 0x43);
	/* a window's rights never include local write */
	MK_CASE(mkey_base(true, HCA_ACCESS_LOCAL_WRITE, MK_VA + 0x100, 8), HM_MKEY_BAD_ACCESS, 0);
	mkey_window(&in[n - 1], HCA_MW_TYPE_2, true, 0x42);
#undef MK_CASE
	return n;
}

static void mkey_check_out(const char *who, uint64_t n, const struct hm_mkey_out *want,
			   const struct hm_mkey_out *got)
{
	cr_assert_eq(got->cycle, want->cycle, "%s #%llu: cycle %llu, expected %llu", who,
		     (unsigned long long)n, (unsigned long long)got->cycle,
		     (unsigned long long)want->cycle);
	cr_assert_eq(got->result, want->result, "%s #%llu: result %u, expected %u", who,
		     (unsigned long long)n, got->result, want->result);
	cr_assert_eq(got->iova, want->iova, "%s #%llu: iova 0x%llx, expected 0x%llx", who,
		     (unsigned long long)n, (unsigned long long)got->iova,
		     (unsigned long long)want->iova);
}

static void mkey_directed(bool rtl)
{
	const struct hm_mkey_ops *ops = impl(HM_TWIN_MKEY, rtl);
	void *b = ops->base.create(NULL, 0);
	struct hm_mkey_in in[64];
	uint8_t res[64];
	uint64_t iova[64];
	size_t n = mkey_cases(in, res, iova);
	unsigned seen = 0;

	cr_assert_leq(n, 64);
	for (size_t i = 0; i < n; i++) {
		struct hm_mkey_out want = { 2000 + i * 5 + HM_MKEY_LATENCY, res[i], iova[i] }, got;

		in[i].cycle = 2000 + i * 5;
		ops->check(b, &in[i], &got);
		mkey_check_out(rtl ? "rtl" : "model", i, &want, &got);
		seen |= 1u << res[i];
	}
	cr_assert_eq(seen, 0x3fu, "every result among the cases (0x%x)", seen);
	ops->base.destroy(b);
}

/* The rule written independently of both twins, in 128-bit arithmetic (the random regions
 * never wrap; an access may). */
static void mkey_expect(const struct hm_mkey_in *in, struct hm_mkey_out *e)
{
	const struct hm_mkey_ctx *k = &in->ctx;
	unsigned __int128 end = (unsigned __int128)in->va + in->len;
	bool window = k->mw_type != 0;

	memset(e, 0, sizeof(*e));
	e->cycle = in->cycle + HM_MKEY_LATENCY;
	if (in->key >> 8 >= in->nkeys || !k->valid || (in->key & 0xff) != k->variant ||
	    (window && !in->remote) || (window && !k->bound))
		e->result = HM_MKEY_BAD_KEY;
	else if (k->pdn != in->pdn)
		e->result = HM_MKEY_BAD_PD;
	else if (in->remote && k->mw_type == HCA_MW_TYPE_2 && k->qpn != in->qpn)
		e->result = HM_MKEY_BAD_QP;
	else if (in->access & ~k->access)
		e->result = HM_MKEY_BAD_ACCESS;
	else if (in->va < k->va || end > (unsigned __int128)k->va + k->len)
		e->result = HM_MKEY_BAD_RANGE;
	else
		e->iova = k->iova + (in->va - k->va);
}

/* A random access near a random entry's edges: each check passes most of the time, so that
 * the later ones are reached. wrap: the entry may wrap past 2^64 (lockstep only). */
static void mkey_random_in(struct hm_mkey_in *in, uint64_t cycle, bool wrap)
{
	struct hm_mkey_ctx *k = &in->ctx;
	uint32_t r = rng();

	memset(in, 0, sizeof(*in));
	in->cycle = cycle;
	in->nkeys = 1 + rng() % 64;
	in->key = ((rng() % (in->nkeys + 4)) << 8) | (rng() & 0xff);
	in->remote = r & 1;
	in->pdn = rng() % 4;
	in->qpn = rng() & 0xffffffu;
	k->valid = rng() % 10 != 0;
	k->variant = rng() % 5 ? (uint8_t)in->key : (uint8_t)rng();
	k->mw_type = (r >> 1) % 3;
	k->bound = rng() % 4 != 0;
	k->pdn = rng() % 5 ? in->pdn : rng() % 4;
	k->qpn = rng() % 4 ? in->qpn : rng() & 0xffffffu;
	k->access = rng() % 3 ? HCA_ACCESS_MR_ALL : rng() & HCA_ACCESS_MR_ALL;
	k->len = rng() % 8 ? rng() % 0x10000 : ((uint64_t)rng() << 32 | rng());
	k->va = ((uint64_t)rng() << 32 | rng());
	if (!wrap && k->va + k->len < k->va)
		k->va %= UINT64_MAX - k->len + 1; /* now va + len <= UINT64_MAX */
	k->iova = ((uint64_t)rng() << 32 | rng()) & ~0xfffull;
	in->access = rng() & HCA_ACCESS_ALL & (rng() % 4 ? k->access : ~0u);
	in->va = k->va + (rng() % 3 ? rng() % (k->len + 1) : (uint64_t)((int64_t)(rng() % 16) - 8));
	in->len = rng() % 8 ? rng() % (k->len + 2) : ((uint64_t)rng() << 32 | rng());
}

static void mkey_random(bool rtl)
{
	const struct hm_mkey_ops *ops = impl(HM_TWIN_MKEY, rtl);
	void *b = ops->base.create(NULL, 0);
	uint64_t cycle = 5, counts[6] = { 0 };

	rng_seed(3);
	for (uint64_t n = 0; n < 20000; n++) {
		struct hm_mkey_in in;
		struct hm_mkey_out want, got;

		cycle += rng() % 4; /* a quarter in the cycle of the one before */
		mkey_random_in(&in, cycle, false);
		mkey_expect(&in, &want);
		ops->check(b, &in, &got);
		mkey_check_out(rtl ? "rtl" : "model", n, &want, &got);
		counts[want.result]++;
	}
	for (int r = 0; r < 6; r++)
		cr_assert_gt(counts[r], 200, "result %d only %llu times in 20000", r,
			     (unsigned long long)counts[r]);
	ops->base.destroy(b);
}

Test(rtl_mkey, model_directed_key_pd_qp_rights_bounds_and_windows) { mkey_directed(false); }
Test(rtl_mkey, rtl_directed_key_pd_qp_rights_bounds_and_windows) { mkey_directed(true); }
Test(rtl_mkey, model_random_against_the_rule) { mkey_random(false); }
Test(rtl_mkey, rtl_random_against_the_rule) { mkey_random(true); }

Test(rtl_mkey, lockstep_random_model_and_rtl_agree_transaction_by_transaction)
{
	const struct hm_mkey_ops *m = impl(HM_TWIN_MKEY, false), *r = impl(HM_TWIN_MKEY, true);
	void *bm = m->base.create(NULL, 0), *br = r->base.create(NULL, 0);

	rng_seed(4);
	for (uint64_t n = 0; n < 20000; n++) {
		struct hm_mkey_in in;
		struct hm_mkey_out a, b;

		mkey_random_in(&in, n * 2, true);
		m->check(bm, &in, &a);
		r->check(br, &in, &b);
		mkey_check_out("lockstep", n, &a, &b);
	}
	m->base.destroy(bm);
	r->base.destroy(br);
}

/* ================================ sched ================================ */

/* The arbiter as the contract states it: a FIFO of QPNs, each at most once. */
struct sched_ref {
	uint32_t nqps, head, len, fifo[256];
	bool pending[256];
};

static bool ref_enq(struct sched_ref *s, uint32_t qpn)
{
	if (qpn >= s->nqps || s->pending[qpn])
		return false;
	s->fifo[(s->head + s->len++) % 256] = qpn;
	s->pending[qpn] = true;
	return true;
}

static void ref_doorbell(struct sched_ref *s, const struct hm_sched_db_in *in,
			 struct hm_sched_db_out *e)
{
	uint32_t ext = (in->sq_pi & 0xffff0000u) | in->pi16;

	if (ext < in->sq_pi)
		ext += 0x10000u;
	memset(e, 0, sizeof(*e));
	e->cycle = in->cycle + in->lat;
	if (in->state <= HCA_QPS_RTR) {
		e->verdict = HM_SCHED_BAD_STATE;
	} else if (ext - in->sq_done > in->sq_entries) {
		e->verdict = HM_SCHED_BAD_INDEX;
	} else if (in->state == HCA_QPS_SQE || in->state == HCA_QPS_ERR) {
		e->verdict = HM_SCHED_FLUSH;
		e->new_pi = ext;
	} else {
		e->verdict = HM_SCHED_QUEUED;
		e->new_pi = ext;
		ref_enq(s, in->qpn);
	}
}

static void db_check(const char *who, uint64_t n, const struct hm_sched_db_out *w,
		     const struct hm_sched_db_out *g)
{
	cr_assert_eq(g->cycle, w->cycle, "%s #%llu: doorbell cycle %llu, expected %llu", who,
		     (unsigned long long)n, (unsigned long long)g->cycle,
		     (unsigned long long)w->cycle);
	cr_assert_eq(g->verdict, w->verdict, "%s #%llu: verdict %u, expected %u", who,
		     (unsigned long long)n, g->verdict, w->verdict);
	cr_assert_eq(g->new_pi, w->new_pi, "%s #%llu: new_pi 0x%x, expected 0x%x", who,
		     (unsigned long long)n, g->new_pi, w->new_pi);
}

/* Transactions in one cycle that meet in the RTL's pipeline (rtl/sched.sv, hazard tracking):
 * a doorbell with no delay leaves its enqueue in flight when it answers; a PUSH of the same QP
 * in the same cycle must see it pending (it waits for the write), a POP must find it (it waits
 * for the enqueue). The answers and their cycles are the C twin's. */
static void sched_hazards(const struct hm_sched_ops *ops, void *b, const char *who)
{
	struct hm_sched_db_in db = { 6000, 0, 7, 1, HCA_QPS_RTS, 0, 0, 8 };
	struct hm_sched_db_out o;
	struct hm_sched_push_in pi = { 6000, 7 };
	struct hm_sched_push_out po;
	struct hm_sched_pop_in qi = { 6000 };
	struct hm_sched_pop_out qo;

	ops->pop(b, &qi, &qo); /* QP 3 from before */
	cr_assert(qo.valid && qo.qpn == 3, "%s: QP 3 first", who);
	ops->doorbell(b, &db, &o);
	cr_assert(o.verdict == HM_SCHED_QUEUED && o.cycle == 6000, "%s: doorbell at once", who);
	ops->push(b, &pi, &po);
	cr_assert(!po.queued && po.cycle == 6000 + HM_SCHED_PIPELINE,
		  "%s: the doorbell's enqueue of QP 7 is seen by a PUSH in its cycle", who);
	db.qpn = 9;
	ops->doorbell(b, &db, &o);
	ops->pop(b, &qi, &qo);
	cr_assert(qo.valid && qo.qpn == 7 && qo.cycle == 6000 + HM_SCHED_PIPELINE,
		  "%s: POP in the same cycle gives QP 7 (got %u valid %d)", who, qo.qpn, qo.valid);
	ops->pop(b, &qi, &qo);
	cr_assert(qo.valid && qo.qpn == 9, "%s: then the doorbell's QP 9 (got %u)", who, qo.qpn);
	pi.qpn = 9;
	ops->push(b, &pi, &po);
	cr_assert(po.queued, "%s: QP 9 pushed again in the cycle it was served", who);
	ops->pop(b, &qi, &qo);
	cr_assert(qo.valid && qo.qpn == 9, "%s: QP 9 back", who);
	ops->pop(b, &qi, &qo);
	cr_assert(!qo.valid, "%s: nothing else pending", who);
}

static void sched_directed(bool rtl)
{
	const struct hm_sched_ops *ops = impl(HM_TWIN_SCHED, rtl);
	const char *who = rtl ? "rtl" : "model";
	void *b = ops->base.create(NULL, 16);
	struct hm_sched_push_in pi;
	struct hm_sched_push_out po;
	struct hm_sched_pop_in qi;
	struct hm_sched_pop_out qo;
	struct hm_sched_db_out o;
	/* every state, latencies 0, 1, 4 and 17, pi16 wrap, an index beyond the ring */
	static const struct {
		uint8_t state;
		uint32_t lat, sq_pi, sq_done, entries;
		uint16_t pi16;
		uint8_t verdict;
		uint32_t new_pi;
	} c[] = {
		{ HCA_QPS_RESET, 4, 0, 0, 8, 1, HM_SCHED_BAD_STATE, 0 },
		{ HCA_QPS_INIT, 4, 0, 0, 8, 1, HM_SCHED_BAD_STATE, 0 },
		{ HCA_QPS_RTR, 0, 0, 0, 8, 1, HM_SCHED_BAD_STATE, 0 },
		{ HCA_QPS_RTS, 0, 0, 0, 8, 3, HM_SCHED_QUEUED, 3 },
		{ HCA_QPS_SQD, 1, 3, 0, 8, 5, HM_SCHED_QUEUED, 5 },
		{ HCA_QPS_SQE, 17, 0, 0, 8, 2, HM_SCHED_FLUSH, 2 },
		{ HCA_QPS_ERR, 4, 0, 0, 8, 2, HM_SCHED_FLUSH, 2 },
		{ HCA_QPS_RTS, 4, 0, 0, 8, 9, HM_SCHED_BAD_INDEX, 0 },
		{ HCA_QPS_RTS, 4, 0xfffe, 0xfffa, 16, 0x0003, HM_SCHED_QUEUED, 0x10003 }, /* wrap */
		{ HCA_QPS_RTS, 4, 0x1fff0, 0x1ffe0, 64, 0xfff8, HM_SCHED_QUEUED, 0x1fff8 },
		{ HCA_QPS_RTS, 4, 0xffff0, 0xffff0, 8, 0xfff9, HM_SCHED_BAD_INDEX, 0 },
		{ HCA_QPS_RTS, 4, 0xfffffff0u, 0xfffffff0u, 64, 0x0004, HM_SCHED_QUEUED, 0x4 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct hm_sched_db_in in = { 100 + 50 * i, c[i].lat, 5,  c[i].pi16,
					     c[i].state,   c[i].sq_pi, c[i].sq_done, c[i].entries };
		struct hm_sched_db_out w = { in.cycle + c[i].lat, c[i].verdict, c[i].new_pi };

		ops->doorbell(b, &in, &o);
		db_check(who, i, &w, &o);
	}
	/* QP 5 was queued once (dedup across doorbells); round robin in arrival order */
	qi.cycle = 2000;
	ops->pop(b, &qi, &qo);
	cr_assert(qo.valid && qo.qpn == 5 && qo.cycle == 2000 + HM_SCHED_PIPELINE, "%s: pop gives QP 5",
		  who);
	ops->pop(b, &qi, &qo);
	cr_assert(!qo.valid && qo.qpn == 0, "%s: nothing else pending", who);
	{
		static const uint32_t order[] = { 9, 3, 15, 0 };

		for (size_t i = 0; i < 4; i++) {
			pi = (struct hm_sched_push_in){ 3000 + i, order[i] };
			ops->push(b, &pi, &po);
			cr_assert(po.queued && po.cycle == 3000 + i + HM_SCHED_PIPELINE, "%s: push %u", who,
				  order[i]);
		}
		pi = (struct hm_sched_push_in){ 3010, 3 };
		ops->push(b, &pi, &po);
		cr_assert(!po.queued, "%s: QP 3 is pending already", who);
		pi = (struct hm_sched_push_in){ 3011, 16 };
		ops->push(b, &pi, &po);
		cr_assert(!po.queued, "%s: QPN 16 is beyond nqps", who);
		pi = (struct hm_sched_push_in){ 3012, 0xffffff };
		ops->push(b, &pi, &po);
		cr_assert(!po.queued, "%s: QPN 2^24-1 is beyond nqps", who);
		for (size_t i = 0; i < 4; i++) {
			qi.cycle = 4000 + i;
			ops->pop(b, &qi, &qo);
			cr_assert(qo.valid && qo.qpn == order[i] && qo.cycle == qi.cycle + HM_SCHED_PIPELINE,
				  "%s: pop %zu gives %u (got %u valid %d)", who, i, order[i], qo.qpn,
				  qo.valid);
		}
		/* once served, a QP can be queued again */
		pi = (struct hm_sched_push_in){ 5000, 3 };
		ops->push(b, &pi, &po);
		cr_assert(po.queued, "%s: QP 3 requeued after it was served", who);
	}
	sched_hazards(ops, b, who);
	ops->base.destroy(b);
}

/* Random doorbells, pushes and pops over a small arbiter, against the reference. */
static void sched_random_in(struct hm_sched_db_in *in, uint64_t cycle, uint32_t nqps)
{
	static const uint8_t states[] = { 0, 1, 2, 3, 3, 3, 4, 5, 6 };
	uint32_t done = rng() % 4 == 0 ? 0xffff0000u + rng() % 0x10000 : rng();

	in->cycle = cycle;
	in->lat = rng() % 3 == 0 ? 0 : rng() % 12;
	in->qpn = rng() % (nqps + 4);
	in->state = states[rng() % sizeof(states)];
	in->sq_entries = 1u << (rng() % 17);
	in->sq_done = done;
	in->sq_pi = done + rng() % (in->sq_entries + 1);
	in->pi16 = (uint16_t)(in->sq_pi + rng() % (in->sq_entries + 8));
}

static void sched_random(bool rtl)
{
	const struct hm_sched_ops *ops = impl(HM_TWIN_SCHED, rtl);
	const char *who = rtl ? "rtl" : "model";
	const uint32_t nqps = 40;
	struct sched_ref ref = { .nqps = nqps };
	void *b = ops->base.create(NULL, nqps);
	uint64_t cycle = 10, pops = 0;

	rng_seed(3);
	for (uint64_t n = 0; n < 20000; n++) {
		uint32_t op = rng() % 3;

		cycle += rng() % 4 == 0 ? 0 : 1 + rng() % 20; /* same cycle: the pipeline's hazards */
		if (op == 0) {
			struct hm_sched_db_in in;
			struct hm_sched_db_out w, g;

			sched_random_in(&in, cycle, nqps);
			ref_doorbell(&ref, &in, &w);
			ops->doorbell(b, &in, &g);
			db_check(who, n, &w, &g);
		} else if (op == 1) {
			struct hm_sched_push_in in = { cycle, rng() % (nqps + 4) };
			struct hm_sched_push_out g;
			bool w = ref_enq(&ref, in.qpn);

			ops->push(b, &in, &g);
			cr_assert(g.cycle == cycle + HM_SCHED_PIPELINE && g.queued == w,
				  "%s #%llu: push %u queued %d",
				  who, (unsigned long long)n, in.qpn, g.queued);
		} else {
			struct hm_sched_pop_in in = { cycle };
			struct hm_sched_pop_out g;
			bool valid = ref.len > 0;
			uint32_t qpn = valid ? ref.fifo[ref.head] : 0;

			if (valid) {
				ref.head = (ref.head + 1) % 256;
				ref.len--;
				ref.pending[qpn] = false;
				pops++;
			}
			ops->pop(b, &in, &g);
			cr_assert(g.cycle == cycle + HM_SCHED_PIPELINE && g.valid == valid && g.qpn == qpn,
				  "%s #%llu: pop gives %u valid %d, expected %u valid %d", who,
				  (unsigned long long)n, g.qpn, g.valid, qpn, valid);
		}
	}
	cr_assert_gt(pops, 1000, "the stimulus exercises the arbiter");
	ops->base.destroy(b);
}

Test(rtl_sched, model_directed_verdicts_pi_wrap_round_robin_and_dedup) { sched_directed(false); }
Test(rtl_sched, rtl_directed_verdicts_pi_wrap_round_robin_and_dedup) { sched_directed(true); }
Test(rtl_sched, model_random_against_the_reference_arbiter) { sched_random(false); }
Test(rtl_sched, rtl_random_against_the_reference_arbiter) { sched_random(true); }

Test(rtl_sched, lockstep_random_model_and_rtl_agree_transaction_by_transaction)
{
	const struct hm_sched_ops *m = impl(HM_TWIN_SCHED, false);
	const struct hm_sched_ops *r = impl(HM_TWIN_SCHED, true);
	const uint32_t nqps = HCA_FIRST_QPN + 131072; /* the default hca.max_qp */
	void *bm = m->base.create(NULL, nqps), *br = r->base.create(NULL, nqps);
	uint64_t cycle = 0;

	rng_seed(4);
	for (uint64_t n = 0; n < 20000; n++) {
		uint32_t op = rng() % 3, qpn = rng() % 64 == 0 ? nqps - 1 - rng() % 4 : rng() % 300;

		cycle += rng() % 10;
		if (op == 0) {
			struct hm_sched_db_in in;
			struct hm_sched_db_out a, b;

			sched_random_in(&in, cycle, 300);
			m->doorbell(bm, &in, &a);
			r->doorbell(br, &in, &b);
			db_check("lockstep", n, &a, &b);
		} else if (op == 1) {
			struct hm_sched_push_in in = { cycle, qpn };
			struct hm_sched_push_out a, b;

			m->push(bm, &in, &a);
			r->push(br, &in, &b);
			cr_assert(a.cycle == b.cycle && a.queued == b.queued, "lockstep #%llu: push",
				  (unsigned long long)n);
		} else {
			struct hm_sched_pop_in in = { cycle };
			struct hm_sched_pop_out a, b;

			m->pop(bm, &in, &a);
			r->pop(br, &in, &b);
			cr_assert(a.cycle == b.cycle && a.valid == b.valid && a.qpn == b.qpn,
				  "lockstep #%llu: pop model %u/%d rtl %u/%d", (unsigned long long)n,
				  a.qpn, a.valid, b.qpn, b.valid);
		}
	}
	m->base.destroy(bm);
	r->base.destroy(br);
}

/* The RTL's arbiter keeps its state in RAMs sized for every QPN (rtl/sched.sv NQP): any
 * hca.max_qp the configuration allows boots in every mode (no cap of the RTL's own), and the
 * largest QPN goes through it. The old flip-flop arbiter was built for 131,074 QPNs. */
Test(rtl_sched, every_qp_count_the_configuration_allows_boots_on_the_rtl)
{
	const struct hm_sched_ops *r = impl(HM_TWIN_SCHED, true);
	const uint32_t cfg_max = 16777215; /* hca.max_qp's maximum, sim/config.def */
	unsigned mode[HM_TWIN_COUNT];
	struct hm_sched_push_in pi = { 10, 0xffffff };
	struct hm_sched_push_out po;
	struct hm_sched_pop_in qi = { 20 };
	struct hm_sched_pop_out qo;
	void *b;

	cr_assert_geq(r->base.max_nqps, HCA_FIRST_QPN + cfg_max, "the RTL holds %u QPNs",
		      r->base.max_nqps);
	for (int i = 0; i < HM_TWIN_COUNT; i++)
		mode[i] = HM_IMPL_RTL;
	cr_assert_eq(hm_twin_check(mode, cfg_max), 0, "%s", hcasim_last_error());
	cr_assert_neq(hcasim_config_set("hca.max_qp", "16777216"), 0, "the configuration's limit");
	/* twice the old RTL's limit boots and runs in rtl mode */
	setenv("HCASIM_IMPL", "sched=rtl", 1);
	cr_assert_eq(hcasim_config_set("hca.max_qp", "262144"), 0);
	cr_assert_eq(hcasim_boot(), 0, "%s", hcasim_last_error());
	hcasim_shutdown();
	unsetenv("HCASIM_IMPL");
	/* the largest QPN, through the port of an arbiter of every QPN */
	b = r->base.create(NULL, HCA_FIRST_QPN + cfg_max);
	r->push(b, &pi, &po);
	cr_assert(po.queued, "QPN 0xffffff queued");
	r->pop(b, &qi, &qo);
	cr_assert(qo.valid && qo.qpn == 0xffffff, "pop gives 0x%x", qo.qpn);
	r->base.destroy(b);
}

/* ================================ cqe ================================ */

static void cqe_fields_in(struct hca_cqe *c, uint32_t seed)
{
	memset(c, 0, sizeof(*c));
	c->byte_len = 0x11223344u ^ seed;
	c->imm_data = 0x55667788u + seed;
	c->qpn = 0xabcdu + seed;
	c->src_qp = 0x123456u ^ seed;
	c->slid = (uint16_t)(0xbeef + seed);
	c->pkey_index = (uint16_t)(7 + seed);
	c->wqe_index = (uint16_t)(0xfff0 + seed);
	c->opcode = (uint8_t)(seed & 1 ? HCA_CQE_OP_RECV : HCA_CQE_OP_RDMA_READ);
	c->status = (uint8_t)(seed % 5 == 0 ? HCA_WC_REM_ACCESS_ERR : HCA_WC_SUCCESS);
	c->sl = (uint8_t)(seed % 16);
	c->wc_flags = (uint8_t)(seed % 4);
	c->dlid_path_bits = (uint8_t)(seed % 128);
	c->is_send = (uint8_t)(seed % 2);
	c->vendor_err = seed * 3;
	c->srqn = seed * 7;
}

/* The contract's outcome, written independently of both twins. */
static void cqe_expect(const struct hm_cqe_in *in, struct hm_cqe_out *e)
{
	uint32_t size = 1u << in->log_size;

	memset(e, 0, sizeof(*e));
	e->cycle = in->cycle + (in->ci_fresh ? 0 : in->lat);
	if ((uint32_t)(in->pi - in->ci) + 1 >= size) {
		e->action = in->ci_fresh ? HM_CQE_OVERRUN : HM_CQE_NEED_CI;
		return;
	}
	e->action = HM_CQE_WRITE;
	e->slot = in->pi % size;
	e->new_pi = in->pi + 1;
	e->image = in->cqe;
	e->image.owner = (in->pi / size) % 2 == 0;
	e->image.timestamp = e->cycle;
	e->event = in->arm == HCA_CQ_DB_ARM_NEXT ||
		   (in->arm == HCA_CQ_DB_ARM_SOLICITED &&
		    (in->solicited || in->cqe.status != HCA_WC_SUCCESS));
	e->new_arm = e->event ? 0 : in->arm;
}

static void cqe_check(const char *who, uint64_t n, const struct hm_cqe_out *w,
		      const struct hm_cqe_out *g)
{
	cr_assert_eq(g->cycle, w->cycle, "%s #%llu: cycle %llu, expected %llu", who,
		     (unsigned long long)n, (unsigned long long)g->cycle,
		     (unsigned long long)w->cycle);
	cr_assert_eq(g->action, w->action, "%s #%llu: action %u, expected %u", who,
		     (unsigned long long)n, g->action, w->action);
	if (w->action != HM_CQE_WRITE)
		return;
	cr_assert_eq(g->slot, w->slot, "%s #%llu: slot", who, (unsigned long long)n);
	cr_assert_eq(g->new_pi, w->new_pi, "%s #%llu: new_pi", who, (unsigned long long)n);
	cr_assert_eq(g->new_arm, w->new_arm, "%s #%llu: new_arm %u, expected %u", who,
		     (unsigned long long)n, g->new_arm, w->new_arm);
	cr_assert_eq(g->event, w->event, "%s #%llu: event", who, (unsigned long long)n);
	/* the whole 64-byte image, as DMA would write it */
	for (size_t i = 0; i < sizeof(w->image); i++)
		cr_assert_eq(((const uint8_t *)&g->image)[i], ((const uint8_t *)&w->image)[i],
			     "%s #%llu: image byte %zu: 0x%02x, expected 0x%02x", who,
			     (unsigned long long)n, i, ((const uint8_t *)&g->image)[i],
			     ((const uint8_t *)&w->image)[i]);
}

static void cqe_directed(bool rtl)
{
	const struct hm_cqe_ops *ops = impl(HM_TWIN_CQE, rtl);
	const char *who = rtl ? "rtl" : "model";
	void *b = ops->base.create(NULL, 0);
	struct hm_cqe_in in = { .cycle = 1000, .lat = 4, .cqn = 3, .log_size = 2 };
	struct hm_cqe_out w, g;
	uint64_t n = 0;

	/* a 4-entry ring: three passes, consumer keeping up; owner 1, 0, 1 */
	for (uint32_t pi = 0; pi < 12; pi++, n++) {
		in.pi = pi;
		in.ci = pi;
		in.cycle += 7;
		cqe_fields_in(&in.cqe, pi);
		cqe_expect(&in, &w);
		ops->post(b, &in, &g);
		cqe_check(who, n, &w, &g);
		cr_assert_eq(g.image.owner, (pi / 4) % 2 ? 0 : 1, "%s: owner on pass %u", who,
			     pi / 4);
		cr_assert_eq(g.image.timestamp, in.cycle + 4, "%s: timestamp = output cycle", who);
		cr_assert_eq(((const uint8_t *)&g.image)[63], g.image.owner, "owner is byte 63");
	}
	/* full ring (3 of 4 used): NEED_CI after lat, then OVERRUN in the cycle of the retry */
	in.pi = 7;
	in.ci = 4;
	ops->post(b, &in, &g);
	cr_assert(g.action == HM_CQE_NEED_CI && g.cycle == in.cycle + 4 && g.new_pi == 0 &&
			  !g.event,
		  "%s: a full-looking ring asks for the doorbell record", who);
	in.ci_fresh = true;
	in.cycle += 9;
	ops->post(b, &in, &g);
	cr_assert(g.action == HM_CQE_OVERRUN && g.cycle == in.cycle, "%s: overrun", who);
	in.ci = 6; /* the consumer moved: the retry writes */
	cqe_expect(&in, &w);
	ops->post(b, &in, &g);
	cqe_check(who, n++, &w, &g);
	cr_assert(g.action == HM_CQE_WRITE && g.cycle == in.cycle && g.slot == 3, "%s", who);
	/* 32-bit index wrap */
	in.ci_fresh = false;
	in.pi = 0xffffffffu;
	in.ci = 0xfffffffeu;
	in.log_size = 3;
	cqe_expect(&in, &w);
	ops->post(b, &in, &g);
	cqe_check(who, n++, &w, &g);
	cr_assert(g.slot == 7 && g.new_pi == 0 && g.image.owner == 0, "%s: pi wraps", who);
	/* arm: none, next, solicited (with a solicited, an unsolicited and an error CQE) */
	{
		static const struct {
			uint8_t arm;
			bool solicited;
			uint8_t status;
			bool event;
			uint8_t new_arm;
		} a[] = {
			{ 0, true, HCA_WC_SUCCESS, false, 0 },
			{ HCA_CQ_DB_ARM_NEXT, false, HCA_WC_SUCCESS, true, 0 },
			{ HCA_CQ_DB_ARM_SOLICITED, false, HCA_WC_SUCCESS, false,
			  HCA_CQ_DB_ARM_SOLICITED },
			{ HCA_CQ_DB_ARM_SOLICITED, true, HCA_WC_SUCCESS, true, 0 },
			{ HCA_CQ_DB_ARM_SOLICITED, false, HCA_WC_WR_FLUSH_ERR, true, 0 },
		};

		for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
			in.pi = 20 + (uint32_t)i;
			in.ci = in.pi;
			in.arm = a[i].arm;
			in.solicited = a[i].solicited;
			in.cqe.status = a[i].status;
			in.lat = (uint32_t)i; /* 0 too: answered in the cycle */
			ops->post(b, &in, &g);
			cr_assert(g.event == a[i].event && g.new_arm == a[i].new_arm &&
					  g.cycle == in.cycle + i,
				  "%s: arm case %zu: event %d new_arm %u", who, i, g.event,
				  g.new_arm);
		}
	}
	ops->base.destroy(b);
}

static void cqe_random_in(struct hm_cqe_in *in, uint64_t cycle)
{
	uint32_t size;

	memset(in, 0, sizeof(*in));
	in->cycle = cycle;
	in->lat = rng() % 4 == 0 ? 0 : rng() % 9;
	in->log_size = (uint8_t)(1 + rng() % 12);
	size = 1u << in->log_size;
	in->ci = rng();
	in->pi = in->ci + (rng() % 3 == 0 ? size - 1 - rng() % 2 : rng() % size);
	in->arm = (uint8_t)(rng() % 3);
	in->solicited = rng() % 2;
	in->ci_fresh = rng() % 4 == 0;
	cqe_fields_in(&in->cqe, rng());
}

static void cqe_random(bool rtl)
{
	const struct hm_cqe_ops *ops = impl(HM_TWIN_CQE, rtl);
	void *b = ops->base.create(NULL, 0);
	unsigned seen[3] = { 0 };

	rng_seed(5);
	for (uint64_t n = 0; n < 10000; n++) {
		struct hm_cqe_in in;
		struct hm_cqe_out w, g;

		cqe_random_in(&in, n * 11 + rng() % 5);
		cqe_expect(&in, &w);
		ops->post(b, &in, &g);
		cqe_check(rtl ? "rtl" : "model", n, &w, &g);
		seen[g.action]++;
	}
	cr_assert(seen[0] && seen[1] && seen[2], "every action seen");
	ops->base.destroy(b);
}

Test(rtl_cqe, model_directed_passes_owner_full_overrun_wrap_and_arm) { cqe_directed(false); }
Test(rtl_cqe, rtl_directed_passes_owner_full_overrun_wrap_and_arm) { cqe_directed(true); }
Test(rtl_cqe, model_random_against_the_contract) { cqe_random(false); }
Test(rtl_cqe, rtl_random_against_the_contract) { cqe_random(true); }

Test(rtl_cqe, lockstep_random_model_and_rtl_agree_transaction_by_transaction)
{
	const struct hm_cqe_ops *m = impl(HM_TWIN_CQE, false), *r = impl(HM_TWIN_CQE, true);
	void *bm = m->base.create(NULL, 0), *br = r->base.create(NULL, 0);

	rng_seed(6);
	for (uint64_t n = 0; n < 10000; n++) {
		struct hm_cqe_in in;
		struct hm_cqe_out a, b;

		cqe_random_in(&in, n * 13);
		m->post(bm, &in, &a);
		r->post(br, &in, &b);
		cqe_check("lockstep", n, &a, &b);
	}
	m->base.destroy(bm);
	r->base.destroy(br);
}

/* ============== lockstep in the running system catches an RTL bug ============== */

/* Signaled RDMA WRITEs from HCA 0 until the send CQ's ring (128 entries) wraps; returns the
 * number of completions polled before the run stopped (all of them if it never did). */
static int write_until_wrap(int n)
{
	struct tb_dev a, b;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *src, *dst;
	int done = 0;

	tb_open(&a, 0);
	tb_open(&b, 1);
	qa = tb_create_qp(&a, IBV_QPT_RC);
	qb = tb_create_qp(&b, IBV_QPT_RC);
	tb_connect(&a, qa, &b, qb->qp_num, IBV_MTU_1024);
	tb_connect(&b, qb, &a, qa->qp_num, IBV_MTU_1024);
	src = tb_mr(&a, 64);
	dst = tb_mr(&b, 64);
	for (int i = 0; i < n && !hcasim_halted(); i++) {
		struct ibv_sge s = { (uintptr_t)src->addr, 64, src->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;
		uint64_t start = hcasim_now_ps();
		int r = 0;

		wr.wr.rdma.remote_addr = (uintptr_t)dst->addr;
		wr.wr.rdma.rkey = dst->rkey;
		if (ibv_post_send(qa, &wr, &bad))
			break;
		while (r == 0 && !hcasim_halted() && hcasim_now_ps() - start < 1000000000ull)
			r = ibv_poll_cq(a.cq, 1, &wc);
		if (r != 1)
			break;
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		done++;
	}
	if (hcasim_halted()) {
		/* nothing runs after a halt: the objects cannot be destroyed, the lists can */
		ibv_free_device_list(a.list);
		ibv_free_device_list(b.list);
		return done;
	}
	cr_assert_eq(ibv_destroy_qp(qa), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(qb), 0, "%s", hcasim_last_error());
	{
		void *sbuf = src->addr, *dbuf = dst->addr;

		cr_assert_eq(ibv_dereg_mr(src), 0);
		cr_assert_eq(ibv_dereg_mr(dst), 0);
		free(sbuf);
		free(dbuf);
	}
	tb_close(&a);
	tb_close(&b);
	return done;
}

Test(rtl_lockstep, system_runs_clean_in_lockstep_over_a_ring_wrap)
{
	int done;

	impl(HM_TWIN_CQE, true);
	setenv("HCASIM_IMPL", "all=lockstep", 1);
	unsetenv("HCASIM_RTL_BUG");
	done = write_until_wrap(300);
	cr_assert_null(hcasim_halted(), "no mismatch: %s", hcasim_halted());
	cr_assert_eq(done, 300);
	hcasim_shutdown(); /* finishes the dumps of make waves */
}

/* The injected bug halts the run at the first CQE of the second pass; returns the report. */
static const char *injected_cqe_bug(void)
{
	const char *why;
	int done;

	impl(HM_TWIN_CQE, true);
	setenv("HCASIM_IMPL", "cqe=lockstep", 1);
	setenv("HCASIM_RTL_BUG", "cqe", 1); /* the owner bit never flips (rtl/cqe.sv) */
	tb_stderr_capture();
	done = write_until_wrap(300);
	why = tb_expect_halt_reported(); /* lockstep caught the injected bug */
	cr_assert(strstr(why, "block cqe") && strstr(why, "field image.owner") &&
			  strstr(why, "at cycle ") && strstr(why, "expected 0x0 (model) got 0x1 (rtl)"),
		  "the report names block, cycle and field: %s", why);
	/* the first pass is clean: the bug shows on the 129th CQE (the second pass) */
	cr_assert_eq(done, 128, "halted at the first CQE of the second pass, after %d", done);
	return why;
}

Test(rtl_lockstep, injected_cqe_bug_halts_with_block_cycle_and_field)
{
	const char *why;

	unsetenv("WAVES");
	unsetenv("HCASIM_WAVES_DIR");
	unsetenv("WAVES_DIR");
	why = injected_cqe_bug();
	/* waves off: the report says how to get the block's FST */
	cr_assert_not_null(strstr(why, "no waves: rerun with WAVES=1 for build/waves/hca0.cqe.fst"),
			   "the report says how to get the waves: %s", why);
}

/* Block b (HCASIM_IMPL spec) in lockstep in the running system, with the RTL's test bug (bug,
 * "none" for the clean build) and no waves, so that a report says how to get them. */
static void lockstep_env(enum hm_twin b, const char *spec, const char *bug)
{
	impl(b, true);
	setenv("HCASIM_IMPL", spec, 1);
	setenv("HCASIM_RTL_BUG", bug, 1);
	unsetenv("WAVES");
	unsetenv("HCASIM_WAVES_DIR");
	unsetenv("WAVES_DIR");
}

/* sched's pipeline in the running system: with pipe.doorbell_cycles = 0 a doorbell's verdict
 * comes in the cycle it is rung while its enqueue is still in the RTL's pipeline, and the
 * requester's POP comes within PIPELINE cycles of it: it must wait for the enqueue (the hazard
 * rule), and does; lockstep sees no difference. The injected bug (HCASIM_RTL_BUG=sched, rtl/
 * sched.sv) drops that rule: the POP finds the FIFO empty, and lockstep halts at the first
 * doorbell's POP naming block, op, cycle and field. */
static const char *sched_doorbell_at_once(const char *bug, int n, int *done)
{
	lockstep_env(HM_TWIN_SCHED, "sched=lockstep", bug);
	cr_assert_eq(hcasim_config_set("pipe.doorbell_cycles", "0"), 0, "%s", hcasim_last_error());
	*done = write_until_wrap(n);
	return hcasim_halted();
}

Test(rtl_lockstep, sched_pipeline_hazards_run_clean_with_doorbells_answered_at_once)
{
	int done;
	const char *why = sched_doorbell_at_once("none", 150, &done);

	cr_assert_null(why, "no mismatch: %s", why);
	cr_assert_eq(done, 150);
	hcasim_shutdown();
}

Test(rtl_lockstep, injected_sched_bug_halts_with_block_cycle_and_field)
{
	const char *why;
	int done;

	tb_stderr_capture();
	sched_doorbell_at_once("sched", 150, &done);
	why = tb_expect_halt_reported();
	cr_assert(strstr(why, "block sched (pop)") && strstr(why, "field valid") &&
			  strstr(why, "at cycle ") && strstr(why, "expected 0x1 (model) got 0x0 (rtl)"),
		  "the report names block, op, cycle and field: %s", why);
	cr_assert_eq(done, 0, "halted at the first WRITE's POP, after %d completions", done);
}

/* mkey in the running system: every lkey and rkey check of the WRITEs (the requester's read of
 * its SGE, the responder's write through the rkey) in mkey=lockstep; no mismatch. The
 * injected bug (HCASIM_RTL_BUG=mkey, rtl/mkey.sv) refuses an access that ends at its region's
 * last byte: the first WRITE's 64-byte SGE covers its whole 64-byte region, so lockstep halts
 * at its lkey check naming block, op, cycle and field. */
static const char *mkey_lockstep(const char *bug, int n, int *done)
{
	lockstep_env(HM_TWIN_MKEY, "mkey=lockstep", bug);
	*done = write_until_wrap(n);
	return hcasim_halted();
}

Test(rtl_lockstep, mkey_checks_of_the_writes_run_clean_in_lockstep)
{
	int done;
	const char *why = mkey_lockstep("none", 150, &done);

	cr_assert_null(why, "no mismatch: %s", why);
	cr_assert_eq(done, 150);
	hcasim_shutdown();
}

Test(rtl_lockstep, injected_mkey_bug_halts_with_block_cycle_and_field)
{
	const char *why;
	int done;

	tb_stderr_capture();
	mkey_lockstep("mkey", 150, &done);
	why = tb_expect_halt_reported();
	cr_assert(strstr(why, "block mkey (check)") && strstr(why, "field result") &&
			  strstr(why, "at cycle ") && strstr(why, "expected 0x0 (model) got 0x4 (rtl)"),
		  "the report names block, op, cycle and field: %s", why);
	cr_assert_eq(done, 0, "halted at the first WRITE's key check, after %d completions", done);
}

/* ================================ timers ================================ */

/* The timers' contract, kept by the test: {armed, at} per QPN and kind, for QPNs below
 * TIMERS_REF_QPNS (and one word for the highest QPN, for the wrap case). */
#define TIMERS_REF_QPNS 64u
struct timers_ref {
	bool armed[TIMERS_REF_QPNS + 1][2];
	uint64_t at[TIMERS_REF_QPNS + 1][2];
};

static unsigned ref_slot(uint32_t qpn)
{
	return qpn < TIMERS_REF_QPNS ? qpn : TIMERS_REF_QPNS;
}

static void timers_set_expect(struct timers_ref *r, const struct hm_timers_set_in *in,
			      struct hm_timers_set_out *e)
{
	unsigned q = ref_slot(in->qpn);

	*e = (struct hm_timers_set_out){ in->cycle + HM_TIMERS_LATENCY, r->armed[q][in->kind],
					 r->armed[q][in->kind] ? r->at[q][in->kind] : 0 };
	r->armed[q][in->kind] = in->arm;
	r->at[q][in->kind] = in->arm ? in->at : 0;
}

static void timers_expire_expect(struct timers_ref *r, const struct hm_timers_expire_in *in,
				 struct hm_timers_expire_out *e)
{
	unsigned q = ref_slot(in->qpn);
	bool armed = r->armed[q][in->kind];

	*e = (struct hm_timers_expire_out){ in->cycle + HM_TIMERS_LATENCY,
					    armed && (in->kind || r->at[q][in->kind] <= in->cycle),
					    armed ? r->at[q][in->kind] : 0 };
	if (e->fired)
		r->armed[q][in->kind] = false;
}

/* One transaction of op (0 SET, 1 EXPIRE) on ops/b and, when ref, checked against it. */
static void timers_txn(const struct hm_timers_ops *ops, void *b, struct timers_ref *ref,
		       const char *who, uint64_t n, bool op, uint64_t cycle, uint32_t qpn,
		       uint8_t kind, bool arm, uint64_t at)
{
	if (!op) {
		struct hm_timers_set_in in = { cycle, qpn, kind, arm, at };
		struct hm_timers_set_out want, got;

		timers_set_expect(ref, &in, &want);
		ops->set(b, &in, &got);
		cr_assert(got.cycle == want.cycle && got.was_armed == want.was_armed &&
				  got.was_at == want.was_at,
			  "%s #%llu: SET qpn %u kind %u at cycle %llu: (%llu, %u, %llu), expected "
			  "(%llu, %u, %llu)", who, (unsigned long long)n, qpn, kind,
			  (unsigned long long)cycle, (unsigned long long)got.cycle, got.was_armed,
			  (unsigned long long)got.was_at, (unsigned long long)want.cycle,
			  want.was_armed, (unsigned long long)want.was_at);
	} else {
		struct hm_timers_expire_in in = { cycle, qpn, kind };
		struct hm_timers_expire_out want, got;

		timers_expire_expect(ref, &in, &want);
		ops->expire(b, &in, &got);
		cr_assert(got.cycle == want.cycle && got.fired == want.fired && got.at == want.at,
			  "%s #%llu: EXPIRE qpn %u kind %u at cycle %llu: (%llu, %u, %llu), "
			  "expected (%llu, %u, %llu)", who, (unsigned long long)n, qpn, kind,
			  (unsigned long long)cycle, (unsigned long long)got.cycle, got.fired,
			  (unsigned long long)got.at, (unsigned long long)want.cycle, want.fired,
			  (unsigned long long)want.at);
	}
}

/* The QPNs the instances hold: every one (the RTL's default NQP). */
#define TIMERS_NQPS ((1u << 24) + 2)
#define SET(c, q, k, a, at) timers_txn(ops, b, &ref, who, n++, 0, c, q, k, a, at)
#define EXPIRE(c, q, k) timers_txn(ops, b, &ref, who, n++, 1, c, q, k, 0, 0)

/* Arm, restart later and earlier, stop, both kinds of one QP, an expiry already behind, 64 QPs
 * expiring in the same cycle, an expiry 2^40 cycles ahead (the RTL's transactor skips to it:
 * quiet_until), the highest QPN and an expiry next to the top of the 64-bit cycle count. The
 * expected answers are the contract's (timers_ref), the same for both twins. */
static void timers_directed(bool rtl)
{
	const struct hm_timers_ops *ops = impl(HM_TWIN_TIMERS, rtl);
	void *b = ops->base.create(NULL, TIMERS_NQPS);
	const char *who = rtl ? "rtl" : "model";
	struct timers_ref ref = { 0 };
	uint64_t n = 0, far = 1ull << 40;

	SET(10, 5, 0, 1, 1000);   /* arm */
	SET(20, 5, 0, 1, 2000);   /* restart later: was armed at 1000 */
	EXPIRE(1000, 5, 0);       /* not due: the restart moved it */
	SET(1100, 5, 0, 1, 1500); /* restart earlier */
	EXPIRE(1500, 5, 0);       /* fired, at 1500 */
	EXPIRE(1600, 5, 0);       /* gone with its expiry */
	SET(1600, 7, 1, 1, 5000); /* an RNR wait */
	SET(1700, 7, 1, 0, 0);    /* stopped: was armed at 5000 */
	EXPIRE(5000, 7, 1);       /* not fired: stopped */
	SET(5100, 9, 0, 1, 8000); /* both kinds of one QP, apart */
	SET(5200, 9, 1, 1, 9000);
	EXPIRE(9000, 9, 1);
	EXPIRE(9001, 9, 0);       /* a late look still fires it, with its expiry */
	SET(9100, 11, 0, 1, 9000); /* an expiry already behind */
	EXPIRE(9102, 11, 0);
	for (uint32_t q = 0; q < TIMERS_REF_QPNS; q++) /* 64 QPs due in one cycle */
		SET(10000 + q * 3, q, 0, 1, 20000);
	for (uint32_t q = 0; q < TIMERS_REF_QPNS; q++)
		EXPIRE(20000, q, 0);
	SET(20500, 3, 0, 1, far); /* a long idle wait, then its expiry */
	EXPIRE(far - 1, 3, 0);
	EXPIRE(far, 3, 0);
	SET(far + 1, 3, 1, 1, far + 900); /* an RNR wait ends at any expiry while armed */
	EXPIRE(far + 2, 3, 1);
	EXPIRE(far + 900, 3, 1);
	SET(far + 10, (1u << 24) - 1, 0, 1, UINT64_MAX - 5); /* the top QPN, the top cycles */
	EXPIRE(far + 20, (1u << 24) - 1, 0);
	SET(far + 30, (1u << 24) - 1, 0, 0, 0);
	ops->base.destroy(b);
}

/* Random SET and EXPIRE over 24 QPs in rising cycles, expiries up to 4,000 cycles ahead and
 * looks at them at, before and after their expiry; against the contract (rtl: the RTL, or
 * with both: the two side by side). */
static void timers_random(const struct hm_timers_ops *ops, const struct hm_timers_ops *twin,
			  const char *who, uint64_t seed)
{
	void *b = ops->base.create(NULL, TIMERS_NQPS);
	void *bt = twin ? twin->base.create(NULL, TIMERS_NQPS) : NULL;
	struct timers_ref ref = { 0 }, ref2 = { 0 };
	uint64_t cycle = 3, n = 0;

	rng_seed(seed);
	for (uint64_t i = 0; i < 20000; i++) {
		uint32_t q = rng() % 24, r = rng() % 8;
		uint8_t k = rng() % 2;
		bool op = r >= 4, arm = r != 3;
		uint64_t at = cycle + rng() % 4000;

		cycle += rng() % 16;
		if (op && ref.armed[q][k] && rng() % 2) /* at its expiry, or just before or after */
			cycle = ref.at[q][k] + (rng() % 3) - 1 > cycle ? ref.at[q][k] + (rng() % 3) - 1 :
									cycle;
		timers_txn(ops, b, &ref, who, n, op, cycle, q, k, arm, at);
		if (twin)
			timers_txn(twin, bt, &ref2, "model (side by side)", n, op, cycle, q, k, arm,
				   at);
		n++;
	}
	ops->base.destroy(b);
	if (twin)
		twin->base.destroy(bt);
}

#undef SET
#undef EXPIRE

Test(rtl_timers, model_directed_arm_restart_stop_same_cycle_and_wrap) { timers_directed(false); }
Test(rtl_timers, rtl_directed_arm_restart_stop_same_cycle_and_wrap) { timers_directed(true); }
Test(rtl_timers, model_random_against_the_contract)
{
	timers_random(impl(HM_TWIN_TIMERS, false), NULL, "model", 3);
}
Test(rtl_timers, rtl_random_against_the_contract)
{
	timers_random(impl(HM_TWIN_TIMERS, true), NULL, "rtl", 3);
}
Test(rtl_timers, lockstep_random_model_and_rtl_agree_transaction_by_transaction)
{
	timers_random(impl(HM_TWIN_TIMERS, true), impl(HM_TWIN_TIMERS, false), "rtl", 4);
}

/* An RC QP whose send queue holds n WQEs (tb_create_qp's holds 4). */
static struct ibv_qp *rc_qp(struct tb_dev *t, int n)
{
	struct ibv_qp_init_attr init = {
		.send_cq = t->cq,
		.recv_cq = t->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = (uint32_t)n, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = n > 4 ? ibv_create_qp(t->pd, &init) : tb_create_qp(t, IBV_QPT_RC);

	cr_assert_not_null(qp, "ibv_create_qp: %s", hcasim_last_error());
	return qp;
}

/* The timers in the running system: n RDMA WRITEs posted at once on one RC QP (at most 16, on
 * a send queue of n; chain: in one ibv_post_send, one doorbell, so that the WQEs are read by
 * DMA rather than taken by BlueFlame), so that each ACK restarts the armed ACK timer to a
 * later expiry. Returns the completions. */
static int writes_in_flight(int n, bool chain)
{
	struct tb_dev a, c;
	struct ibv_qp *qa, *qc;
	struct ibv_mr *src, *dst;
	struct ibv_send_wr wr[16], *bad;
	struct ibv_sge s;
	int done = 0;

	cr_assert_leq(n, 16);

	tb_open(&a, 0);
	tb_open(&c, 1);
	qa = rc_qp(&a, n);
	qc = tb_create_qp(&c, IBV_QPT_RC);
	tb_connect(&a, qa, &c, qc->qp_num, IBV_MTU_1024);
	tb_connect(&c, qc, &a, qa->qp_num, IBV_MTU_1024);
	src = tb_mr(&a, 64);
	dst = tb_mr(&c, 64);
	s = (struct ibv_sge){ (uintptr_t)src->addr, 64, src->lkey };
	for (int i = 0; i < n; i++) {
		wr[i] = (struct ibv_send_wr){ .wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1,
					      .opcode = IBV_WR_RDMA_WRITE,
					      .send_flags = IBV_SEND_SIGNALED };
		wr[i].wr.rdma.remote_addr = (uintptr_t)dst->addr;
		wr[i].wr.rdma.rkey = dst->rkey;
		if (chain && i + 1 < n)
			wr[i].next = &wr[i + 1]; /* one post, one doorbell: the WQEs read by DMA */
		if (!chain)
			cr_assert_eq(ibv_post_send(qa, &wr[i], &bad), 0);
	}
	if (chain)
		cr_assert_eq(ibv_post_send(qa, &wr[0], &bad), 0);
	for (uint64_t start = hcasim_now_ps(); done < n && !hcasim_halted() &&
					       hcasim_now_ps() - start < 1000000000ull;) {
		struct ibv_wc wc;

		if (ibv_poll_cq(a.cq, 1, &wc) == 1) {
			cr_assert_eq(wc.status, IBV_WC_SUCCESS);
			done++;
		}
	}
	if (hcasim_halted()) {
		/* nothing runs after a halt: the objects are left, the lists freed */
		ibv_free_device_list(a.list);
		ibv_free_device_list(c.list);
		return done;
	}
	cr_assert_eq(ibv_destroy_qp(qa), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(qc), 0, "%s", hcasim_last_error());
	{
		void *sbuf = src->addr, *dbuf = dst->addr;

		cr_assert_eq(ibv_dereg_mr(src), 0);
		cr_assert_eq(ibv_dereg_mr(dst), 0);
		free(sbuf);
		free(dbuf);
	}
	tb_close(&a);
	tb_close(&c);
	return done;
}

Test(rtl_lockstep, timers_run_clean_with_acks_restarting_the_timer)
{
	impl(HM_TWIN_TIMERS, true);
	setenv("HCASIM_IMPL", "timers=lockstep", 1);
	unsetenv("HCASIM_RTL_BUG");
	cr_assert_eq(writes_in_flight(4, false), 4);
	cr_assert_null(hcasim_halted(), "no mismatch: %s", hcasim_halted());
	hcasim_shutdown();
}

/* The injected bug (HCASIM_RTL_BUG=timers, rtl/timers.sv): a restart to a later expiry keeps
 * the earlier one. The next SET of the QP's ACK timer finds it: lockstep halts naming block,
 * op, cycle and field (was_at, the expiry it had). */
Test(rtl_lockstep, injected_timers_bug_halts_with_block_cycle_and_field)
{
	const char *why;

	lockstep_env(HM_TWIN_TIMERS, "timers=lockstep", "timers");
	tb_stderr_capture();
	cr_assert_lt(writes_in_flight(4, false), 4, "the run halts before the last completion");
	why = tb_expect_halt_reported();
	cr_assert(strstr(why, "block timers (set)") && strstr(why, "field was_at") &&
			  strstr(why, "at cycle ") && strstr(why, "(model) got ") &&
			  strstr(why, "no waves: rerun with WAVES=1 for build/waves/hca0.timers.fst"),
		  "the report names block, op, cycle and field: %s", why);
}

/* With waves on, the report names the FST of the block that differed, and it holds the run up
 * to the mismatch (finished when the report is made). api: waves started with hcasim_waves()
 * before boot instead of WAVES=1; the FSTs go next to its VCD. */
static void bug_report_names_the_wave_file(bool api)
{
	char dir[] = "/tmp/hcasim-lockstep-waves-XXXXXX", path[256], want[320], cmd[1024], mhz[32];
	unsigned long long cycle, last;
	const char *why;
	struct stat st;
	char *vcd;
	int status;

	cr_assert_not_null(mkdtemp(dir));
	unsetenv("WAVES_DIR");
	if (api) {
		unsetenv("WAVES");
		unsetenv("HCASIM_WAVES_DIR");
		snprintf(path, sizeof(path), "%s/run.vcd", dir);
		cr_assert_eq(hcasim_waves(path), 0, "%s", hcasim_last_error());
	} else {
		setenv("WAVES", "1", 1);
		setenv("HCASIM_WAVES_DIR", dir, 1);
	}
	why = injected_cqe_bug();
	snprintf(path, sizeof(path), "%s/hca0.cqe.fst", dir);
	snprintf(want, sizeof(want), "; waves: %s (scope hca0.cqe)", path);
	cr_assert_not_null(strstr(why, want), "the report names %s: %s", path, why);
	cr_assert_eq(stat(path, &st), 0, "%s named by the report does not exist", path);
	cr_assert_gt(st.st_size, 1000, "%s: only %lld bytes at the halt", path,
		     (long long)st.st_size);
	/* a complete FST whose last time is the mismatching transaction's */
	cr_assert_eq(hcasim_config_get("clock.core_mhz", mhz, sizeof(mhz)), 0);
	cr_assert_eq(sscanf(strstr(why, "at cycle "), "at cycle %llu", &cycle), 1);
	/* the status is fst2vcd's when it fails, not that of the end of a pipe */
	snprintf(cmd, sizeof(cmd), "fst2vcd %s > %s/dump.vcd && grep '^#' %s/dump.vcd | tail -1",
		 path, dir, dir);
	vcd = tb_run_cmd(cmd, &status);
	cr_assert_eq(status, 0, "fst2vcd %s failed", path);
	cr_assert_eq(sscanf(vcd, "#%llu", &last), 1, "fst2vcd %s: no time in the dump", path);
	cr_assert_geq(last, cycle * (1000000ull / strtoull(mhz, NULL, 10)),
		      "%s ends at %llu ps, before the mismatch at cycle %llu", path, last, cycle);
	free(vcd);
	tb_rm_tmpdir(dir);
}

Test(rtl_lockstep, injected_cqe_bug_report_names_the_wave_file)
{
	bug_report_names_the_wave_file(false);
}

Test(rtl_lockstep, injected_cqe_bug_report_names_the_fst_next_to_hcasim_waves_vcd)
{
	bug_report_names_the_wave_file(true);
}

/* ================================ qpc ================================ */

/* The qpc port for QPNs below QPC_QPS. */
#define QPC_QPS 48u
#define QPC_BASE 0x100000ull
struct qpc_fix {
	const struct hm_qpc_ops *ops;
	void *b;
	struct hm_dev *d;
	const char *who;
	/* the contract, kept by the test: the cached QPNs, least recently used first */
	uint32_t lru[QPC_QPS], n;
	bool dirty[QPC_QPS];
};

static void qpc_open(struct qpc_fix *f, bool rtl)
{
	memset(f, 0, sizeof(*f));
	f->ops = impl(HM_TWIN_QPC, rtl);
	f->who = rtl ? "rtl" : "model";
	f->d = calloc(1, sizeof(*f->d));
	cr_assert_not_null(f->d);
	f->d->core.period_ps = 2000; /* the RTL's waves would be timed by it */
	f->b = f->ops->base.create(f->d, QPC_QPS);
}

static void qpc_close(struct qpc_fix *f)
{
	f->ops->base.destroy(f->b);
	free(f->d);
}

/* The position of qpn in the test's LRU list, or -1. */
static int qpc_ref_find(const struct qpc_fix *f, uint32_t qpn)
{
	for (uint32_t i = 0; i < f->n; i++)
		if (f->lru[i] == qpn)
			return (int)i;
	return -1;
}

static void qpc_ref_drop(struct qpc_fix *f, int i)
{
	memmove(&f->lru[i], &f->lru[i + 1], (f->n - (uint32_t)i - 1) * sizeof(f->lru[0]));
	f->n--;
}

static void qpc_req_check(const struct qpc_fix *f, uint64_t n, const struct hm_qpc_out *o,
			  uint8_t req, uint8_t tag, uint32_t qpn)
{
	cr_assert(o->req == req && o->req_tag == tag && o->req_qpn == qpn &&
			  o->req_addr == QPC_BASE + (uint64_t)qpn * 1024 && o->req_len == 800,
		  "%s txn %llu: request %u tag %u QPN %u addr 0x%llx len %u, want %u %u %u", f->who,
		  (unsigned long long)n, o->req, o->req_tag, o->req_qpn,
		  (unsigned long long)o->req_addr, o->req_len, req, tag, qpn);
}

/* One lookup at cycle c against the contract, its DMA requests completed dma cycles after
 * they are presented; returns the cycle after the last answer. */
static uint64_t qpc_lookup_txn(struct qpc_fix *f, uint64_t n, uint64_t c, uint32_t qpn,
			       bool write, uint32_t entries, uint64_t dma)
{
	struct hm_qpc_in in = { c, qpn, write, entries, QPC_BASE };
	struct hm_qpc_cpl_in cpl;
	struct hm_qpc_out o;
	int i = qpc_ref_find(f, qpn);
	bool full = f->n >= entries;
	uint32_t victim = full ? f->lru[0] : 0;
	bool wb = full && f->dirty[victim];

	f->ops->lookup(f->b, &in, &o);
	cr_assert_eq(o.cycle, c + HM_QPC_HIT_CYCLES, "%s txn %llu: answered at %llu", f->who,
		     (unsigned long long)n, (unsigned long long)o.cycle);
	if (i >= 0) {
		cr_assert(o.done && o.hit && !o.evict && o.req == HM_QPC_REQ_NONE,
			  "%s txn %llu: QPN %u is cached", f->who, (unsigned long long)n, qpn);
		qpc_ref_drop(f, i);
		f->lru[f->n++] = qpn;
		f->dirty[qpn] |= write;
		return o.cycle;
	}
	cr_assert(!o.done && !o.hit && o.evict == full && o.victim == victim && o.wb == wb,
		  "%s txn %llu: miss of %u: done %d hit %d evict %d victim %u wb %d, want evict %d "
		  "victim %u wb %d", f->who, (unsigned long long)n, qpn, o.done, o.hit, o.evict,
		  o.victim, o.wb, full, victim, wb);
	if (wb) {
		qpc_req_check(f, n, &o, HM_QPC_REQ_WRITE, HM_QPC_TAG_WB, victim);
		cpl = (struct hm_qpc_cpl_in){ o.cycle + dma, HM_QPC_TAG_WB };
		f->ops->complete(f->b, &cpl, &o);
		cr_assert(o.cycle == cpl.cycle && !o.done, "%s txn %llu: the write-back's answer",
			  f->who, (unsigned long long)n);
	}
	qpc_req_check(f, n, &o, HM_QPC_REQ_READ, HM_QPC_TAG_FILL, qpn);
	cpl = (struct hm_qpc_cpl_in){ o.cycle + dma, HM_QPC_TAG_FILL };
	f->ops->complete(f->b, &cpl, &o);
	cr_assert(o.cycle == cpl.cycle && o.done && o.req == HM_QPC_REQ_NONE,
		  "%s txn %llu: the fill's answer", f->who, (unsigned long long)n);
	if (full) {
		qpc_ref_drop(f, 0);
		f->dirty[victim] = false;
	}
	f->lru[f->n++] = qpn;
	f->dirty[qpn] = write;
	return o.cycle;
}

static uint64_t qpc_forget_txn(struct qpc_fix *f, uint64_t n, uint64_t c, uint32_t qpn)
{
	struct hm_qpc_forget_in in = { c, qpn };
	struct hm_qpc_forget_out o;
	int i = qpc_ref_find(f, qpn);

	f->ops->forget(f->b, &in, &o);
	cr_assert(o.cycle == c + HM_QPC_HIT_CYCLES && o.was_cached == (i >= 0),
		  "%s txn %llu: forget %u: cycle %llu was_cached %d", f->who,
		  (unsigned long long)n, qpn, (unsigned long long)o.cycle, o.was_cached);
	if (i >= 0) {
		qpc_ref_drop(f, i);
		f->dirty[qpn] = false;
	}
	return o.cycle;
}

static void qpc_directed(bool rtl)
{
	struct qpc_fix f;
	uint64_t c = 10, n = 0;

	qpc_open(&f, rtl);
	c = qpc_lookup_txn(&f, n++, c, 5, true, 3, 250);      /* miss, room */
	c = qpc_lookup_txn(&f, n++, c, 5, true, 3, 250);      /* hit */
	c = qpc_lookup_txn(&f, n++, c, 6, false, 3, 250);     /* miss, clean */
	c = qpc_lookup_txn(&f, n++, c, 7, true, 3, 250);      /* full now */
	c = qpc_lookup_txn(&f, n++, c, 5, false, 3, 250);     /* 6 is now the oldest */
	c = qpc_lookup_txn(&f, n++, c, 8, true, 3, 250);      /* evicts 6, clean */
	c = qpc_lookup_txn(&f, n++, c, 9, true, 3, 0);        /* evicts 7, dirty; DMA at once */
	c = qpc_forget_txn(&f, n++, c, 5);                    /* room again */
	c = qpc_forget_txn(&f, n++, c, 5);                    /* not cached */
	c = qpc_lookup_txn(&f, n++, c, QPC_QPS - 1, true, 3, 1); /* the highest QPN */
	c = qpc_lookup_txn(&f, n++, c, 2, true, 1, 40);       /* capacity lowered to 1 */
	c = qpc_lookup_txn(&f, n++, c, 2, true, 1, 40);
	c = qpc_lookup_txn(&f, n++, c + 1000000, 3, true, 1, 40); /* after a long idle */
	cr_assert_eq(n, 13);
	qpc_close(&f);
}

/* Random lookups and forgets over 24 QPNs, capacities 1..8, writes or not, DMA times 0..300
 * cycles, requests back to back or apart; lockstep: the twin's answers must equal the RTL's. */
static void qpc_random(bool rtl, bool lockstep, unsigned seed)
{
	struct qpc_fix f, g;
	uint64_t c = 1;
	uint32_t entries = 4;

	qpc_open(&f, rtl);
	if (lockstep)
		qpc_open(&g, false);
	rng_seed(seed);
	for (uint64_t n = 0; n < 3000; n++) {
		uint32_t qpn = 1 + rng() % 24, r = rng();
		uint64_t dma = r % 4 ? rng() % 300 : 0, gap = rng() % 3 ? rng() % 5 : rng() % 10000;
		uint64_t cf;

		if (r % 97 == 0)
			entries = 1 + rng() % 8;
		if (r % 13 == 0) {
			cf = qpc_forget_txn(&f, n, c, qpn);
			if (lockstep)
				cr_assert_eq(qpc_forget_txn(&g, n, c, qpn), cf);
		} else {
			cf = qpc_lookup_txn(&f, n, c, qpn, r & 2, entries, dma);
			if (lockstep)
				cr_assert_eq(qpc_lookup_txn(&g, n, c, qpn, r & 2, entries, dma), cf);
		}
		c = cf + gap;
	}
	qpc_close(&f);
	if (lockstep)
		qpc_close(&g);
}

Test(rtl_qpc, model_directed_hits_misses_lru_write_back_forget_and_capacity)
{
	qpc_directed(false);
}
Test(rtl_qpc, rtl_directed_hits_misses_lru_write_back_forget_and_capacity)
{
	qpc_directed(true);
}
Test(rtl_qpc, model_random_against_the_contract) { qpc_random(false, false, 5); }
Test(rtl_qpc, rtl_random_against_the_contract) { qpc_random(true, false, 5); }
Test(rtl_qpc, lockstep_random_model_and_rtl_agree_transaction_by_transaction)
{
	qpc_random(true, true, 6);
}

/* The qpc in the running system: three RC QPs on each of two devices, with a cache of two
 * contexts; one signaled RDMA WRITE at a time on QPs 0 1 0 2 1 0 2 2 0 1, so that uses hit,
 * miss and evict, dirty entries being written back. Returns the completions; *wbs the
 * write-backs of the first device. */
static const unsigned qpc_order[] = { 0, 1, 0, 2, 1, 0, 2, 2, 0, 1 };
#define QPC_ORDER (sizeof(qpc_order) / sizeof(qpc_order[0]))

static int qpc_three_qps(uint64_t *wbs)
{
	struct tb_dev a, c;
	struct ibv_qp *qa[3], *qc[3];
	struct ibv_mr *src, *dst;
	struct hcasim_dev_counters ctr;
	int done = 0;

	tb_open(&a, 0);
	tb_open(&c, 1);
	for (int i = 0; i < 3; i++) {
		qa[i] = tb_create_qp(&a, IBV_QPT_RC);
		qc[i] = tb_create_qp(&c, IBV_QPT_RC);
		tb_connect(&a, qa[i], &c, qc[i]->qp_num, IBV_MTU_1024);
		tb_connect(&c, qc[i], &a, qa[i]->qp_num, IBV_MTU_1024);
	}
	src = tb_mr(&a, 64);
	dst = tb_mr(&c, 64);
	for (size_t k = 0; k < QPC_ORDER && !hcasim_halted(); k++) {
		struct ibv_sge s = { (uintptr_t)src->addr, 64, src->lkey };
		struct ibv_send_wr wr = { .wr_id = k, .sg_list = &s, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;
		uint64_t start = hcasim_now_ps();

		wr.wr.rdma.remote_addr = (uintptr_t)dst->addr;
		wr.wr.rdma.rkey = dst->rkey;
		cr_assert_eq(ibv_post_send(qa[qpc_order[k]], &wr, &bad), 0);
		while (!hcasim_halted() && hcasim_now_ps() - start < 1000000000ull)
			if (ibv_poll_cq(a.cq, 1, &wc) == 1) {
				cr_assert_eq(wc.status, IBV_WC_SUCCESS);
				done++;
				break;
			}
	}
	if (hcasim_halted()) {
		/* nothing runs after a halt: the objects are left, the lists freed */
		ibv_free_device_list(a.list);
		ibv_free_device_list(c.list);
		return done;
	}
	cr_assert_eq(hcasim_dev_counters(0, &ctr), 0);
	*wbs = ctr.qpc_writebacks;
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(ibv_destroy_qp(qa[i]), 0, "%s", hcasim_last_error());
		cr_assert_eq(ibv_destroy_qp(qc[i]), 0, "%s", hcasim_last_error());
	}
	{
		void *sbuf = src->addr, *dbuf = dst->addr;

		cr_assert_eq(ibv_dereg_mr(src), 0);
		cr_assert_eq(ibv_dereg_mr(dst), 0);
		free(sbuf);
		free(dbuf);
	}
	tb_close(&a);
	tb_close(&c);
	return done;
}

static const char *qpc_lockstep(const char *bug, int *done, uint64_t *wbs)
{
	lockstep_env(HM_TWIN_QPC, "qpc=lockstep", bug);
	cr_assert_eq(hcasim_config_set("hca.qpc_cache_entries", "2"), 0, "%s",
		     hcasim_last_error());
	*done = qpc_three_qps(wbs);
	return hcasim_halted();
}

Test(rtl_lockstep, qpc_misses_and_write_backs_run_clean_in_lockstep)
{
	uint64_t wbs = 0;
	int done;
	const char *why = qpc_lockstep("none", &done, &wbs);

	cr_assert_null(why, "no mismatch: %s", why);
	cr_assert_eq(done, (int)QPC_ORDER);
	cr_assert_gt(wbs, 2, "evictions with write-backs: %llu", (unsigned long long)wbs);
	hcasim_shutdown();
}

/* The injected bug (HCASIM_RTL_BUG=qpc, rtl/qpc.sv): a hit leaves the entry where it is in the
 * LRU order, so that the third QP's first use evicts the wrong one: lockstep halts at that
 * lookup naming block, op, cycle and field (victim, the QPN evicted). */
Test(rtl_lockstep, injected_qpc_bug_halts_with_block_cycle_and_field)
{
	uint64_t wbs;
	const char *why;
	int done;

	tb_stderr_capture();
	qpc_lockstep("qpc", &done, &wbs);
	why = tb_expect_halt_reported();
	cr_assert(strstr(why, "block qpc (lookup)") && strstr(why, "field victim") &&
			  strstr(why, "at cycle ") && strstr(why, "(model) got ") &&
			  strstr(why, "no waves: rerun with WAVES=1 for build/waves/hca0.qpc.fst"),
		  "the report names block, op, cycle and field: %s", why);
	cr_assert_lt(done, (int)QPC_ORDER, "halted before the last completion");
}

/* ================================ lint ================================ */

/* Every block of the registry, with the package and rtl/prim/ (and the blocks it instantiates
 * as stages, found in rtl/ by module name: -y), and the SRAM primitive's synthesis variant,
 * are clean under verilator --lint-only -Wall (the build Verilates with -Wall too, but never
 * the SYNTHESIS branch). */
Test(rtl_lint, every_block_and_the_synthesis_sram_are_lint_clean)
{
	char cmd[1024];
	char *out;
	int st;

	impl(HM_TWIN_SCHED, true);
	for (int b = 0; b <= HM_TWIN_COUNT; b++) {
		if (b < HM_TWIN_COUNT)
			snprintf(cmd, sizeof(cmd),
				 "cd %s && verilator --lint-only -Wall -y rtl rtl/hca_pkg.sv "
				 "rtl/prim/*.sv rtl/%s.sv --top-module %s 2>&1",
				 HCASIM_SRC_DIR, hm_twin_name((enum hm_twin)b),
				 hm_twin_name((enum hm_twin)b));
		else
			snprintf(cmd, sizeof(cmd),
				 "cd %s && verilator --lint-only -Wall -DSYNTHESIS -GDEPTH=300 "
				 "rtl/prim/sram.sv 2>&1",
				 HCASIM_SRC_DIR);
		out = tb_run_cmd(cmd, &st);
		cr_assert(st == 0 && !*out, "%s:\n%s", cmd, out);
		free(out);
	}
}

/* ================================ wqe_fetch ================================ */

/* The port alone, with its DMA port on a memory of the test's: a read of len bytes at addr
 * takes 300 ns + 0.25 ns a byte and brings in the low bytes of the addresses; one that reaches
 * WF_FAULT fails at once. The C twin's instance is the device (its clock and pipe.wqe_cycles),
 * the RTL's is its own: both get one made here. */
#define WF_FAULT 0x80000ull
#define WF_PER 2000ull /* the core period, ps (500 MHz) */
#define WF_BUF 4096u

static uint8_t wf_buf[WF_BUF];

static int wf_xfer(struct hm_dma *p, bool write, uint64_t addr, uint8_t *data, uint32_t len,
		   uint64_t *t_ps)
{
	(void)p;
	cr_assert(!write, "wqe_fetch writes nothing");
	if (addr + len > WF_FAULT)
		return -EFAULT;
	for (uint32_t i = 0; i < len; i++)
		data[i] = (uint8_t)(addr + i);
	*t_ps += 300000 + (uint64_t)len * 250;
	return 0;
}

static struct hm_dev *wf_dev(void)
{
	struct hm_dev *d = calloc(1, sizeof(*d));

	cr_assert_not_null(d);
	d->core.period_ps = WF_PER;
	d->cfg.wqe_cycles = HM_WQE_DECODE_CYCLES;
	return d;
}

/* The contract (model/twin.h), written out here: the answer to in and the read it makes. */
static void wf_expect(const struct hm_wqe_fetch_in *in, struct hm_wqe_fetch_out *e,
		      struct hm_dma_xfer *x)
{
	uint32_t from = 0, slot, n;
	uint64_t d = 0, due;
	bool inside = in->idx - in->win.lo < in->win.fetched - in->win.lo, read = false;
	bool ready = false;

	memset(e, 0, sizeof(*e));
	memset(x, 0, sizeof(*x));
	e->cycle = in->cycle + 1;
	e->win = in->win;
	if (in->op == HM_FETCH_PREFETCH) {
		read = in->idx == in->win.fetched && in->sq_pi != in->win.fetched && !in->busy;
		from = in->idx;
		e->result = HM_FETCH_IDLE;
	} else if (!inside) {
		read = true;
		from = in->idx;
	} else if (in->win.err || in->win.ready > in->t_ps) {
		e->result = in->win.err ? HM_FETCH_FAILED : HM_FETCH_WAIT;
	} else {
		e->result = HM_FETCH_READY;
		ready = true;
		e->decoded = e->cycle = in->cycle + HM_WQE_DECODE_CYCLES;
		read = in->idx + 1 == in->win.fetched && in->win.fetched != in->sq_pi;
		from = in->win.fetched;
		d = HM_WQE_DECODE_CYCLES;
	}
	if (!read)
		return;
	slot = from % in->sq_entries;
	n = in->sq_pi - from;
	n = n < in->prefetch ? n : in->prefetch;
	n = n < in->sq_entries - slot ? n : in->sq_entries - slot;
	n = n ? n : 1;
	*x = (struct hm_dma_xfer){ .addr = in->sq + (uint64_t)slot * in->sq_stride,
				   .off = slot * in->sq_stride, .len = n * in->sq_stride,
				   .issue_ps = d ? (in->cycle + d) * WF_PER : in->t_ps };
	x->err = x->addr + x->len > WF_FAULT ? -EFAULT : 0;
	x->done_ps = x->issue_ps + (x->err ? 0 : 300000 + (uint64_t)x->len * 250);
	due = (x->done_ps + WF_PER - 1) / WF_PER;
	due = due > in->cycle + d + 1 ? due : in->cycle + d + 1;
	e->cycle = due + 1;
	e->reads = 1;
	e->win = (struct hm_fetch_win){ from, from + n, x->err != 0, x->done_ps };
	if (!ready)
		e->result = x->err ? HM_FETCH_FAILED : HM_FETCH_WAIT;
}

static void wf_check_out(const char *who, uint64_t n, const struct hm_wqe_fetch_out *w,
			 const struct hm_wqe_fetch_out *g)
{
	cr_assert(g->cycle == w->cycle && g->result == w->result && g->decoded == w->decoded &&
			  g->reads == w->reads && g->win.lo == w->win.lo &&
			  g->win.fetched == w->win.fetched && g->win.err == w->win.err &&
			  g->win.ready == w->win.ready,
		  "%s #%llu: cycle %llu result %u decoded %llu reads %u window [%u, %u) err %u "
		  "ready %llu; expected cycle %llu result %u decoded %llu reads %u window [%u, %u) "
		  "err %u ready %llu",
		  who, (unsigned long long)n, (unsigned long long)g->cycle, g->result,
		  (unsigned long long)g->decoded, g->reads, g->win.lo, g->win.fetched, g->win.err,
		  (unsigned long long)g->win.ready, (unsigned long long)w->cycle, w->result,
		  (unsigned long long)w->decoded, w->reads, w->win.lo, w->win.fetched, w->win.err,
		  (unsigned long long)w->win.ready);
}

/* One GET or PREFETCH on ops/b, checked against the contract: the answer, the one transfer
 * it made (address, buffer offset, length, issue time) and the bytes it brought in. */
static void wf_txn(const struct hm_wqe_fetch_ops *ops, void *b, struct hm_wqe_fetch_in *in,
		   const char *who, uint64_t n, unsigned *seen)
{
	struct hm_dma dma = { .xfer = wf_xfer, .buf = wf_buf, .buf_len = WF_BUF };
	struct hm_wqe_fetch_out want, got;
	struct hm_dma_xfer x;

	in->dma = &dma;
	wf_expect(in, &want, &x);
	memset(wf_buf, 0xee, sizeof(wf_buf));
	ops->fetch(b, in, &got);
	wf_check_out(who, n, &want, &got);
	cr_assert_eq(dma.n, want.reads, "%s #%llu: %u transfers", who, (unsigned long long)n, dma.n);
	if (want.reads)
		cr_assert(dma.rec[0].addr == x.addr && dma.rec[0].off == x.off &&
				  dma.rec[0].len == x.len && dma.rec[0].issue_ps == x.issue_ps &&
				  !dma.rec[0].write,
			  "%s #%llu: read of %u bytes at 0x%llx into %u issued at %llu ps", who,
			  (unsigned long long)n, dma.rec[0].len,
			  (unsigned long long)dma.rec[0].addr, dma.rec[0].off,
			  (unsigned long long)dma.rec[0].issue_ps);
	if (want.reads && !x.err)
		for (uint32_t i = 0; i < x.len; i++)
			cr_assert_eq(wf_buf[x.off + i], (uint8_t)(x.addr + i), "%s #%llu: byte %u", who,
				     (unsigned long long)n, i);
	*seen |= 1u << (want.result * 2 + want.reads);
}

/* A GET (op 0) or PREFETCH (1) of idx at cycle c (+ t_off ps into it) on a ring of entries
 * WQEs of 64 bytes at sq, pi posted, with the window w. */
static struct hm_wqe_fetch_in wf_in(uint8_t op, uint64_t c, uint64_t t_off, uint32_t idx,
				    uint32_t pi, uint32_t entries, uint64_t sq,
				    struct hm_fetch_win w)
{
	return (struct hm_wqe_fetch_in){ .cycle = c, .t_ps = c * WF_PER - t_off, .op = op,
					 .qpn = 0x42, .idx = idx, .sq_pi = pi,
					 .sq_entries = entries, .sq_stride = 64, .sq = sq,
					 .prefetch = 4, .win = w };
}

/* Every path of the contract: a window read at a miss, a wait inside it, READY after the
 * decode, the next window read at the decode's end, a read stopping at the ring's end, one
 * that fails and the window that remembers it, a rewind, the doorbell's prefetch (due, busy,
 * fetched ahead, nothing posted), a request inside its cycle (its read issued at its time),
 * nothing posted (one WQE read) and the 32-bit index wrap. */
static void wf_directed(bool rtl)
{
	const struct hm_wqe_fetch_ops *ops = impl(HM_TWIN_WQE_FETCH, rtl);
	struct hm_dev *d = wf_dev();
	void *b = ops->base.create(d, 0);
	const char *who = rtl ? "rtl" : "model";
	struct hm_fetch_win none = { 0, 0, false, 0 }, w0 = { 0, 4, false, 20000000 };
	struct hm_fetch_win late = { 1, 5, false, 90000000 }, bad = { 2, 4, true, 4000000 };
	struct hm_fetch_win wrap = { 0xfffffffeu, 2, false, 1000 };
	uint64_t n = 0, far = WF_FAULT - 2 * 64;
	unsigned seen = 0;
	struct hm_wqe_fetch_in in[] = {
		wf_in(0, 1000, 0, 0, 6, 16, 0x1000, none),	  /* miss: [0, 4) */
		wf_in(0, 9000, 0, 2, 6, 16, 0x1000, late),	  /* inside, not in yet */
		wf_in(0, 12000, 0, 2, 6, 16, 0x1000, w0),	  /* READY */
		wf_in(0, 13000, 0, 3, 6, 16, 0x1000, w0),	  /* READY, then [4, 6) */
		wf_in(0, 20000, 0, 6, 10, 8, 0x1000, none),	  /* [6, 8): the ring's end */
		wf_in(0, 30000, 0, 0, 4, 4, far, none),		  /* slots 2, 3 fail */
		wf_in(0, 31000, 0, 2, 4, 4, 0x1000, bad),	  /* the window failed */
		wf_in(0, 32000, 0, 1, 6, 16, 0x1000, late),	  /* a rewind */
		wf_in(1, 40000, 0, 4, 9, 16, 0x1000, w0),	  /* PREFETCH: [4, 8) */
		wf_in(1, 41000, 0, 3, 9, 16, 0x1000, w0),	  /* PREFETCH: fetched ahead */
		wf_in(1, 42000, 0, 4, 4, 16, 0x1000, w0),	  /* PREFETCH: nothing posted */
		wf_in(0, 50000, 700, 0, 6, 16, 0x1000, none),	  /* inside its cycle */
		wf_in(0, 60000, 0, 7, 7, 16, 0x1000, none),	  /* nothing posted: one */
		wf_in(0, 70000, 0, 0xffffffffu, 3, 16, 0x1000, wrap), /* inside, wrapped */
		wf_in(0, 71000, 0, 1, 3, 16, 0x1000, wrap),	  /* READY, then [2, 3) */
	};

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		wf_txn(ops, b, &in[i], who, n++, &seen);
	in[0] = wf_in(1, 80000, 0, 4, 9, 16, 0x1000, w0);
	in[0].busy = true; /* PREFETCH: the requester is inside a WQE */
	wf_txn(ops, b, &in[0], who, n++, &seen);
	/* READY without and with a read, WAIT with and without, FAILED with and without, IDLE */
	cr_assert_eq(seen, 0x7fu, "every answer among the cases (0x%x)", seen);
	ops->base.destroy(b);
	free(d);
}

/* A random GET or PREFETCH near a random window, on rings that may reach WF_FAULT. */
static struct hm_wqe_fetch_in wf_random_in(uint64_t cycle)
{
	uint32_t entries = 1u << (rng() % 6), base = rng(), lo = base + rng() % 8;
	struct hm_fetch_win w = { lo, lo + rng() % 6, rng() % 8 == 0,
				  cycle * WF_PER + (uint64_t)(rng() % 2000) * 100 - 100000 };
	uint64_t sq = rng() % 4 ? 0x1000 + (uint64_t)(rng() % 64) * 64
				: WF_FAULT - (uint64_t)(1 + rng() % 8) * 64;
	struct hm_wqe_fetch_in in = wf_in(rng() % 3 == 0, cycle, rng() % 4 ? 0 : rng() % WF_PER,
					  lo + rng() % 10 - 2, w.fetched + rng() % 12, entries,
					  sq, w);

	if (entries * 64 > WF_BUF)
		in.sq_entries = WF_BUF / 64;
	in.prefetch = 1 + rng() % 8;
	in.busy = rng() % 4 == 0;
	return in;
}

static void wf_random(bool rtl)
{
	const struct hm_wqe_fetch_ops *ops = impl(HM_TWIN_WQE_FETCH, rtl);
	struct hm_dev *d = wf_dev();
	void *b = ops->base.create(d, 0);
	uint64_t cycle = 100;
	unsigned seen = 0;

	rng_seed(15);
	for (uint64_t n = 0; n < 10000; n++) {
		struct hm_wqe_fetch_in in = wf_random_in(cycle += 1 + rng() % 400);

		wf_txn(ops, b, &in, rtl ? "rtl" : "model", n, &seen);
	}
	cr_assert_eq(seen, 0x7fu, "every answer among 10000 (0x%x)", seen);
	ops->base.destroy(b);
	free(d);
}

Test(rtl_wqe_fetch, model_directed_windows_reads_waits_failures_prefetch) { wf_directed(false); }
Test(rtl_wqe_fetch, rtl_directed_windows_reads_waits_failures_prefetch) { wf_directed(true); }
Test(rtl_wqe_fetch, model_random_against_the_contract) { wf_random(false); }
Test(rtl_wqe_fetch, rtl_random_against_the_contract) { wf_random(true); }

/* Lockstep at the port, as hm_twin_call runs it: the C twin first, doing the transfers, then
 * the RTL on the same inputs and the same struct hm_dma, answered from the record; every
 * output agrees, and the RTL's transfers are the twin's (the port never diverged). */
Test(rtl_wqe_fetch, lockstep_random_model_and_rtl_agree_transaction_by_transaction)
{
	const struct hm_wqe_fetch_ops *m = impl(HM_TWIN_WQE_FETCH, false);
	const struct hm_wqe_fetch_ops *r = impl(HM_TWIN_WQE_FETCH, true);
	struct hm_dev *d = wf_dev();
	void *bm = m->base.create(d, 0), *br = r->base.create(d, 0);
	uint64_t cycle = 100;

	rng_seed(16);
	for (uint64_t n = 0; n < 10000; n++) {
		struct hm_wqe_fetch_in in = wf_random_in(cycle += 1 + rng() % 400);
		struct hm_dma dma = { .xfer = wf_xfer, .buf = wf_buf, .buf_len = WF_BUF };
		struct hm_wqe_fetch_out a, b;

		in.dma = &dma;
		m->fetch(bm, &in, &a);
		r->fetch(br, &in, &b);
		wf_check_out("lockstep", n, &a, &b);
		cr_assert(!dma.diverged && dma.n == a.reads, "lockstep #%llu: the RTL's transfers",
			  (unsigned long long)n);
	}
	m->base.destroy(bm);
	r->base.destroy(br);
	free(d);
}

/* ---- CHECK: the validation of a fetched WQE ---- */

/* The rule (wqe.def, verr.def), written out here. */
static void wf_check_expect(const struct hm_wqe_check_in *in, struct hm_wqe_check_out *e)
{
	uint32_t room = in->sq_stride - HCA_WQE_BASE_BYTES;
	bool inl = in->flags & HCA_WQE_F_INLINE;

	memset(e, 0, sizeof(*e));
	e->cycle = in->cycle + 1;
	if (!hca_wqe_op_allowed(in->qp_type, in->opcode))
		e->verr = HCA_VERR_WQE_OPCODE;
	else if (in->qp_type == HCA_QPT_UD &&
		 (in->ud_remote_qpn > 0xffffff || in->ud_sl > 15 || in->ud_flow_label >> 20 ||
		  in->ud_port > in->nports))
		e->verr = HCA_VERR_WQE_UD_AV;
	else if (inl && in->inline_len > room)
		e->verr = HCA_VERR_WQE_INLINE_LEN;
	else if (!inl && (in->num_sge > room / 16 || in->num_sge > 64))
		e->verr = HCA_VERR_WQE_NUM_SGE;
	for (uint32_t i = 0; !e->verr && !inl && i < in->num_sge; i++)
		e->len += in->sge_len[i];
	if (!e->verr && inl)
		e->len = in->inline_len;
	if (!e->verr && (e->len > 1ull << 31 || (in->qp_type == HCA_QPT_UD && e->len > in->mtu)))
		e->verr = HCA_VERR_WQE_MSG_LEN;
	else if (!e->verr && hca_wqe_atomic(in->opcode) && e->len != 8)
		e->verr = HCA_VERR_WQE_ATOMIC_LEN;
	e->status = hca_verr_status(e->verr);
}

static struct hm_wqe_check_in wf_check_in(uint8_t type, uint8_t op, uint32_t nsge, uint32_t len)
{
	struct hm_wqe_check_in in = { .cycle = 500, .qp_type = type, .sq_stride = 128,
				      .mtu = 1024, .nports = 2, .opcode = op, .num_sge = nsge };

	for (uint32_t i = 0; i < nsge && i < HM_WQE_MAX_SGE; i++)
		in.sge_len[i] = len;
	return in;
}

static void wf_check_txn(const struct hm_wqe_fetch_ops *ops, void *b,
			 const struct hm_wqe_check_in *in, const char *who, uint64_t n,
			 uint32_t verr)
{
	struct hm_wqe_check_out want, got;

	wf_check_expect(in, &want);
	ops->check(b, in, &got);
	cr_assert(got.cycle == want.cycle && got.status == want.status && got.verr == want.verr &&
			  got.len == want.len,
		  "%s #%llu: cycle %llu status %u verr 0x%x len %llu; expected %llu %u 0x%x %llu",
		  who, (unsigned long long)n, (unsigned long long)got.cycle, got.status, got.verr,
		  (unsigned long long)got.len, (unsigned long long)want.cycle, want.status,
		  want.verr, (unsigned long long)want.len);
	cr_assert(verr == UINT32_MAX || got.verr == verr, "%s #%llu: verr 0x%x, the case is 0x%x",
		  who, (unsigned long long)n, got.verr, verr);
}

/* Each syndrome of the send WQE and a pass of each QP type, with the values the case is for. */
static void wf_check_directed(bool rtl)
{
	const struct hm_wqe_fetch_ops *ops = impl(HM_TWIN_WQE_FETCH, rtl);
	struct hm_dev *d = wf_dev();
	void *b = ops->base.create(d, 0);
	const char *who = rtl ? "rtl" : "model";
	struct hm_wqe_check_in in;
	uint64_t n = 0;

#define WF_CASE(expr, verr)                                                                        \
	do {                                                                                       \
		in = wf_check_in expr;                                                             \
		wf_check_txn(ops, b, &in, who, n++, verr);                                         \
	} while (0)
	WF_CASE((HCA_QPT_RC, HCA_WQE_OP_SEND, 2, 150), HCA_VERR_NONE);
	WF_CASE((HCA_QPT_XRC_SEND, HCA_WQE_OP_RDMA_READ, 1, 9), HCA_VERR_NONE);
	WF_CASE((HCA_QPT_UC, HCA_WQE_OP_RDMA_READ, 1, 8), HCA_VERR_WQE_OPCODE);
	WF_CASE((HCA_QPT_RC, 0x77, 1, 8), HCA_VERR_WQE_OPCODE);
	WF_CASE((HCA_QPT_UD, HCA_WQE_OP_SEND, 1, 1024), HCA_VERR_NONE);
	WF_CASE((HCA_QPT_UD, HCA_WQE_OP_SEND, 1, 1025), HCA_VERR_WQE_MSG_LEN);
	in = wf_check_in(HCA_QPT_UD, HCA_WQE_OP_SEND, 1, 8);
	in.ud_sl = 16;
	wf_check_txn(ops, b, &in, who, n++, HCA_VERR_WQE_UD_AV);
	in.ud_sl = 0, in.ud_port = 3;
	wf_check_txn(ops, b, &in, who, n++, HCA_VERR_WQE_UD_AV);
	in.ud_port = 2, in.ud_flow_label = 1u << 20;
	wf_check_txn(ops, b, &in, who, n++, HCA_VERR_WQE_UD_AV);
	in.ud_flow_label = 0, in.ud_remote_qpn = 1u << 24;
	wf_check_txn(ops, b, &in, who, n++, HCA_VERR_WQE_UD_AV);
	in = wf_check_in(HCA_QPT_RC, HCA_WQE_OP_SEND, 0, 0);
	in.flags = HCA_WQE_F_INLINE, in.inline_len = 64;
	wf_check_txn(ops, b, &in, who, n++, HCA_VERR_NONE);
	in.inline_len = 65;
	wf_check_txn(ops, b, &in, who, n++, HCA_VERR_WQE_INLINE_LEN);
	WF_CASE((HCA_QPT_RC, HCA_WQE_OP_RDMA_WRITE, 4, 1), HCA_VERR_NONE);
	WF_CASE((HCA_QPT_RC, HCA_WQE_OP_RDMA_WRITE, 5, 1), HCA_VERR_WQE_NUM_SGE);
	WF_CASE((HCA_QPT_RC, HCA_WQE_OP_RDMA_WRITE, 2, 0x40000000), HCA_VERR_NONE);
	WF_CASE((HCA_QPT_RC, HCA_WQE_OP_RDMA_WRITE, 2, 0x40000001), HCA_VERR_WQE_MSG_LEN);
	WF_CASE((HCA_QPT_RC, HCA_WQE_OP_ATOMIC_FETCH_ADD, 1, 8), HCA_VERR_NONE);
	WF_CASE((HCA_QPT_RC, HCA_WQE_OP_ATOMIC_CMP_SWP, 2, 8), HCA_VERR_WQE_ATOMIC_LEN);
#undef WF_CASE
	ops->base.destroy(b);
	free(d);
}

/* Random fields near every limit; a stride of 64 to 1024 (0 to 60 entries). */
static struct hm_wqe_check_in wf_check_random_in(void)
{
	static const uint8_t types[] = { HCA_QPT_RC, HCA_QPT_UC, HCA_QPT_UD, HCA_QPT_XRC_SEND };
	uint32_t big = rng() % 3 ? 4096 : 0x80000000u;
	struct hm_wqe_check_in in = wf_check_in(types[rng() % 4], (uint8_t)(rng() % 12),
						rng() % 70, 0);

	in.cycle = rng();
	in.sq_stride = 64u << (rng() % 5);
	in.mtu = 256u << (rng() % 5);
	in.nports = 1 + rng() % 2;
	in.flags = (uint8_t)(rng() % 4 ? rng() & ~HCA_WQE_F_INLINE : rng());
	in.inline_len = rng() % (in.sq_stride + 8);
	for (uint32_t i = 0; i < HM_WQE_MAX_SGE; i++)
		in.sge_len[i] = rng() % 4 ? rng() % 300 : rng() % big;
	if (rng() % 3 == 0)
		in.num_sge = 1, in.sge_len[0] = 8; /* an atomic's 8 bytes */
	in.ud_remote_qpn = rng() % 8 ? rng() & 0xffffff : rng();
	in.ud_sl = (uint8_t)(rng() % 18);
	in.ud_port = (uint8_t)(rng() % 4);
	in.ud_flow_label = rng() % 8 ? rng() & 0xfffff : rng() & 0x1fffff;
	return in;
}

static void wf_check_random(const struct hm_wqe_fetch_ops *ops, const struct hm_wqe_fetch_ops *twin)
{
	struct hm_dev *d = wf_dev();
	void *b = ops->base.create(d, 0), *bt = twin ? twin->base.create(d, 0) : NULL;
	unsigned seen = 0;

	rng_seed(twin ? 18 : 17);
	for (uint64_t n = 0; n < 20000; n++) {
		struct hm_wqe_check_in in = wf_check_random_in();
		struct hm_wqe_check_out a, c;

		wf_check_txn(ops, b, &in, "random", n, UINT32_MAX);
		ops->check(b, &in, &a);
		if (twin) {
			twin->check(bt, &in, &c);
			cr_assert(a.cycle == c.cycle && a.status == c.status && a.verr == c.verr &&
					  a.len == c.len,
				  "lockstep #%llu differs", (unsigned long long)n);
		}
		seen |= 1u << a.verr;
	}
	cr_assert_eq(seen, 0x7fu, "every syndrome of the send WQE among 20000 (0x%x)", seen);
	ops->base.destroy(b);
	if (twin)
		twin->base.destroy(bt);
	free(d);
}

Test(rtl_wqe_fetch, model_check_directed_each_syndrome) { wf_check_directed(false); }
Test(rtl_wqe_fetch, rtl_check_directed_each_syndrome) { wf_check_directed(true); }
Test(rtl_wqe_fetch, model_check_random_against_the_rule)
{
	wf_check_random(impl(HM_TWIN_WQE_FETCH, false), NULL);
}
Test(rtl_wqe_fetch, rtl_check_random_against_the_rule)
{
	wf_check_random(impl(HM_TWIN_WQE_FETCH, true), NULL);
}
Test(rtl_wqe_fetch, lockstep_check_random_model_and_rtl_agree)
{
	wf_check_random(impl(HM_TWIN_WQE_FETCH, true), impl(HM_TWIN_WQE_FETCH, false));
}

/* wqe_fetch in the running system: 16 WRITEs posted at once, in one post (one doorbell) (their window reads, the next
 * window read at the end of a decode) in wqe_fetch=lockstep; no mismatch. The injected bug
 * (HCASIM_RTL_BUG=wqe_fetch, rtl/wqe_fetch.sv) reads the next window from one WQE too far: its
 * read is not the C twin's, and lockstep halts at that fetch naming block, op, cycle and field
 * (the window's first WQE). */
Test(rtl_lockstep, wqe_fetch_windows_run_clean_in_lockstep)
{
	lockstep_env(HM_TWIN_WQE_FETCH, "wqe_fetch=lockstep", "none");
	cr_assert_eq(writes_in_flight(16, true), 16);
	cr_assert_null(hcasim_halted(), "no mismatch: %s", hcasim_halted());
	hcasim_shutdown();
}

Test(rtl_lockstep, injected_wqe_fetch_bug_halts_with_block_cycle_and_field)
{
	const char *why;

	lockstep_env(HM_TWIN_WQE_FETCH, "wqe_fetch=lockstep", "wqe_fetch");
	tb_stderr_capture();
	cr_assert_lt(writes_in_flight(16, true), 16, "the run halts before the last completion");
	why = tb_expect_halt_reported();
	cr_assert(strstr(why, "block wqe_fetch (fetch)") && strstr(why, "field win.lo") &&
			  strstr(why, "at cycle ") && strstr(why, "(model) got ") &&
			  strstr(why, "no waves: rerun with WAVES=1 for build/waves/hca0.wqe_fetch.fst"),
		  "the report names block, op, cycle and field: %s", why);
}
