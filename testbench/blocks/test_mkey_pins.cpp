/* Pin-level test of rtl/mkey.sv (docs/blocks/mkey.md "RTL twin"), part of build/test/block-prim:
 * mkey Verilated with 48-bit addresses, 24-bit PDNs and MAX_HOLD 16 (the port tests run the
 * defaults, 64 and 32), driven with a new request in most cycles and the answers held back at
 * random (resp_ready low), which the transactor never does. Every answer must be the rule's for
 * its request (sums modulo 2^48), in the order they were taken; with resp_ready always high,
 * each comes exactly a cycle after it was taken and a request is taken in every cycle one is
 * offered. */
#include "Vmkey_pins.h"

#include <criterion/criterion.h>

#include <cstdint>
#include <deque>
#include <memory>

namespace {

uint64_t st = 11;
uint32_t rnd()
{
	st ^= st >> 12;
	st ^= st << 25;
	st ^= st >> 27;
	return (uint32_t)((st * 0x2545f4914f6cdd1dull) >> 32);
}

const uint64_t VA_MASK = (1ull << 48) - 1;
enum { OK = 0, BAD_KEY = 1, BAD_PD = 2, BAD_ACCESS = 3, BAD_RANGE = 4, BAD_QP = 5 };

struct chk {
	bool remote, valid, bound;
	uint32_t key, pdn, qpn, access, nkeys, variant, mw_type, kpdn, kaccess, kqpn;
	uint64_t va, len, kva, klen, kiova;
	unsigned result;
	uint64_t iova, taken;
};

uint64_t r48()
{
	return ((uint64_t)rnd() << 32 | rnd()) & VA_MASK;
}

/* A random check near its entry's edges (each rule passes most of the time). */
chk random_chk()
{
	chk c = {};

	c.nkeys = 1 + rnd() % 32;
	c.key = (rnd() % (c.nkeys + 2)) << 8 | (rnd() & 0xff);
	c.remote = rnd() % 2;
	c.pdn = rnd() % 3;
	c.qpn = rnd() & 0xffffff;
	c.valid = rnd() % 10 != 0;
	c.variant = rnd() % 5 ? c.key & 0xff : rnd() & 0xff;
	c.mw_type = rnd() % 3;
	c.bound = rnd() % 4 != 0;
	c.kpdn = rnd() % 5 ? c.pdn : rnd() % 3;
	c.kqpn = rnd() % 4 ? c.qpn : rnd() & 0xffffff;
	c.kaccess = rnd() % 3 ? 0x1f : rnd() & 0x1f;
	c.access = rnd() & 0xf & (rnd() % 4 ? c.kaccess : ~0u);
	c.klen = rnd() % 8 ? rnd() % 0x1000 : r48();
	c.kva = r48();
	c.kiova = r48();
	c.va = (c.kva + (rnd() % 3 ? rnd() % (c.klen + 1) : (uint64_t)((int64_t)(rnd() % 16) - 8))) &
	       VA_MASK;
	c.len = rnd() % 8 ? rnd() % (c.klen + 2) : r48();
	return c;
}

/* The rule (model/mkey.c's order) in 48-bit arithmetic. */
void expect(chk &c)
{
	uint64_t end = (c.va + c.len) & VA_MASK, kend = (c.kva + c.klen) & VA_MASK;

	c.iova = 0;
	if (c.key >> 8 >= c.nkeys || !c.valid || c.variant != (c.key & 0xff) ||
	    (c.mw_type && (!c.remote || !c.bound)))
		c.result = BAD_KEY;
	else if (c.kpdn != c.pdn)
		c.result = BAD_PD;
	else if (c.remote && c.mw_type == 2 && c.kqpn != c.qpn)
		c.result = BAD_QP;
	else if ((c.kaccess & c.access) != c.access)
		c.result = BAD_ACCESS;
	else if (c.va < c.kva || end < c.va || end > kend)
		c.result = BAD_RANGE;
	else {
		c.result = OK;
		c.iova = (c.kiova + c.va - c.kva) & VA_MASK;
	}
}

void drive(Vmkey_pins *p, const chk &c)
{
	p->req_remote = c.remote;
	p->req_key = c.key;
	p->req_pdn = c.pdn;
	p->req_qpn = c.qpn;
	p->req_va = c.va;
	p->req_len = c.len;
	p->req_access = c.access;
	p->req_nkeys = c.nkeys;
	p->req_ctx_valid = c.valid;
	p->req_ctx_variant = c.variant;
	p->req_ctx_mw_type = c.mw_type;
	p->req_ctx_bound = c.bound;
	p->req_ctx_pdn = c.kpdn;
	p->req_ctx_access = c.kaccess;
	p->req_ctx_qpn = c.kqpn;
	p->req_ctx_va = c.kva;
	p->req_ctx_len = c.klen;
	p->req_ctx_iova = c.kiova;
}

/* n cycles of traffic; exact: resp_ready always high, every latency and acceptance checked. */
void run(bool exact, unsigned n)
{
	VerilatedContext ctx;
	std::unique_ptr<Vmkey_pins> m(new Vmkey_pins{ &ctx });
	Vmkey_pins *p = m.get();
	std::deque<chk> want;
	chk cur = random_chk();
	unsigned taken = 0, back_to_back = 0, held = 0, stalls = 0, hold_run = 0;
	unsigned results[6] = {};

	ctx.fatalOnError(true);
	ctx.assertOn(true);
	p->rst = 1;
	for (int i = 0; i < 2; i++) {
		p->clk = 1;
		p->eval();
		p->clk = 0;
		p->eval();
	}
	p->rst = 0;
	for (uint64_t c = 0; c < n; c++) {
		bool fire_req, fire_resp;

		p->now = c;
		p->req_valid = rnd() % 8 != 0 || p->req_valid;
		drive(p, cur);
		/* held at most 8 cycles in a row (MAX_HOLD is 16) */
		p->resp_ready = exact || hold_run >= 8 || rnd() % 3 != 0;
		p->clk = 0;
		p->eval();
		fire_req = p->req_valid && p->req_ready;
		fire_resp = p->resp_valid && p->resp_ready;
		stalls += p->req_valid && !p->req_ready;
		held += p->resp_valid && !p->resp_ready;
		hold_run = p->resp_valid && !p->resp_ready ? hold_run + 1 : 0;
		cr_assert_eq(p->quiet_until, p->resp_valid ? 0 : ~0ull,
			     "cycle %llu: quiet_until 0x%llx", (unsigned long long)c,
			     (unsigned long long)p->quiet_until);
		if (exact)
			cr_assert(!p->req_valid || p->req_ready, "cycle %llu: a request not taken",
				  (unsigned long long)c);
		if (fire_resp) {
			cr_assert(!want.empty(), "cycle %llu: an answer without a request",
				  (unsigned long long)c);
			const chk &w = want.front();

			cr_assert(p->resp_result == w.result && p->resp_iova == w.iova,
				  "cycle %llu: answer %u 0x%llx, expected %u 0x%llx",
				  (unsigned long long)c, p->resp_result,
				  (unsigned long long)p->resp_iova, w.result,
				  (unsigned long long)w.iova);
			if (exact)
				cr_assert_eq(c - w.taken, 1u, "cycle %llu: answered %llu cycles after "
					     "it was taken", (unsigned long long)c,
					     (unsigned long long)(c - w.taken));
			results[w.result]++;
			want.pop_front();
		}
		if (fire_req) {
			back_to_back += fire_resp;
			cur.taken = c;
			expect(cur);
			want.push_back(cur);
			cur = random_chk();
			taken++;
		}
		p->clk = 1;
		ctx.timeInc(1);
		p->eval();
		if (fire_req)
			p->req_valid = 0;
	}
	p->final();
	cr_assert_gt(taken, n / 3, "%u requests taken in %u cycles", taken, n);
	cr_assert_gt(back_to_back, n / 50, "requests taken as an answer was: %u", back_to_back);
	for (int r = 0; r < 6; r++)
		cr_assert_gt(results[r], n / 500, "result %d only %u times", r, results[r]);
	if (!exact) {
		cr_assert_gt(held, n / 50, "answers held: %u", held);
		cr_assert_gt(stalls, n / 50, "requests stalled behind a held answer: %u", stalls);
	}
}

} // namespace

Test(mkey_pins, answers_every_cycle_a_cycle_after_each_request) { run(true, 60000); }
Test(mkey_pins, hold_answers_and_requests_under_backpressure) { run(false, 60000); }
