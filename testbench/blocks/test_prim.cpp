/* Block test of the RTL primitives and checkers (rtl/prim/, docs/rtl.md "The SRAM primitive"
 * and "Assertions"), each Verilated alone (Makefile: build/vl/prim_<name>, with --assert) and
 * driven pin by pin: the SRAM against a reference memory with the read-first semantics it
 * documents, and each checker with legal traffic (no assertion) and with each violation it
 * names (the assertion stops the simulation: abort, SIGABRT). */
#include "Vprim_hs_check.h"
#include "Vprim_sram.h"
#include "Vprim_txn_check.h"

#include <criterion/criterion.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace {

/* Seeded stimulus (xorshift64*), the same on every run. */
uint64_t rng_state = 1;
uint32_t rng()
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

/* One model M with clk and rst in its own context, clocked by rising edges. */
template <class M> struct dut {
	VerilatedContext ctx;
	std::unique_ptr<M> m;
	dut()
	{
		ctx.fatalOnError(true);
		ctx.assertOn(true);
		m.reset(new M{ &ctx });
		m->clk = 0;
		m->rst = 1;
		edge();
		edge();
		m->rst = 0;
		m->eval();
	}
	~dut() { m->final(); }
	/* one cycle: the rising edge with the inputs as set, then the clock low again */
	void edge()
	{
		m->clk = 1;
		m->eval();
		ctx.timeInc(1);
		m->clk = 0;
		m->eval();
	}
};

/* The test's SRAM: 24 bits by 1000 words (VL_FLAGS_prim_sram in the Makefile). */
const unsigned WIDTH = 24, DEPTH = 1000;

} // namespace

/* Random reads and writes, a third of them to the word being read, against the reference:
 * rdata is the word before the edge's write (read-first), held while re is low. */
Test(prim, sram_registered_read_first_against_a_reference)
{
	dut<Vprim_sram> d;
	std::vector<uint32_t> ref(DEPTH, 0);
	uint32_t rdata = 0;
	unsigned rdw = 0, held = 0;

	for (int n = 0; n < 50000; n++) {
		auto *p = d.m.get();

		p->re = rng() % 4 != 0;
		p->raddr = rng() % 16 == 0 ? DEPTH - 1 : rng() % 64;
		p->we = rng() % 2;
		p->waddr = rng() % 3 == 0 ? p->raddr : rng() % 64;
		p->wdata = rng() % 8 == 0 ? 0 : rng() & ((1u << WIDTH) - 1);
		rdw += p->re && p->we && p->raddr == p->waddr;
		held += !p->re;
		if (p->re)
			rdata = ref[p->raddr];
		if (p->we)
			ref[p->waddr] = p->wdata;
		d.edge();
		cr_assert_eq(p->rdata, rdata, "cycle %d: rdata 0x%x, expected 0x%x", n, p->rdata,
			     rdata);
	}
	cr_assert_gt(rdw, 1000, "read during write exercised");
	cr_assert_gt(held, 1000, "held reads exercised");
}

/* Contents and rdata are zero after reset; the words before it are gone. */
Test(prim, sram_contents_are_zero_after_reset)
{
	dut<Vprim_sram> d;
	auto *p = d.m.get();

	p->we = 1;
	for (unsigned a = 0; a < DEPTH; a += 7) {
		p->waddr = a;
		p->wdata = a + 1;
		d.edge();
	}
	p->we = 0;
	p->re = 1;
	p->raddr = 7;
	d.edge();
	cr_assert_eq(p->rdata, 8u);
	p->rst = 1;
	d.edge();
	p->rst = 0;
	cr_assert_eq(p->rdata, 0u, "rdata after reset");
	for (unsigned a = 0; a < DEPTH; a += 7) {
		p->raddr = a;
		d.edge();
		cr_assert_eq(p->rdata, 0u, "word %u after reset: 0x%x", a, p->rdata);
	}
}

Test(prim, sram_read_beyond_depth_is_an_assertion, .signal = SIGABRT)
{
	dut<Vprim_sram> d;

	d.m->re = 1;
	d.m->raddr = DEPTH; /* the address port is 10 bits wide: 1000 .. 1023 are beyond */
	d.edge();
}

Test(prim, sram_write_beyond_depth_is_an_assertion, .signal = SIGABRT)
{
	dut<Vprim_sram> d;

	d.m->we = 1;
	d.m->waddr = 1023;
	d.m->wdata = 1;
	d.edge();
}

/* ---- hs_check (a 16-bit payload: VL_FLAGS_prim_hs_check) ---- */

/* Legal traffic: stalls with valid and the payload held, transfers, idle cycles, and a new
 * payload after each transfer. */
Test(prim, hs_check_passes_legal_stalls_and_transfers)
{
	dut<Vprim_hs_check> d;
	auto *p = d.m.get();
	unsigned stalls = 0;

	for (int n = 0; n < 20000; n++) {
		bool was_stalled = p->valid && !p->ready;

		if (!was_stalled) {
			p->valid = rng() % 3 != 0;
			p->payload = rng() & 0xffff;
		}
		p->ready = rng() % 2;
		stalls += p->valid && !p->ready;
		d.edge();
	}
	cr_assert_gt(stalls, 1000);
}

Test(prim, hs_check_payload_changed_while_stalled, .signal = SIGABRT)
{
	dut<Vprim_hs_check> d;

	d.m->valid = 1;
	d.m->ready = 0;
	d.m->payload = 0x1234;
	d.edge();
	d.m->payload = 0x1235;
	d.edge();
}

Test(prim, hs_check_valid_dropped_while_stalled, .signal = SIGABRT)
{
	dut<Vprim_hs_check> d;

	d.m->valid = 1;
	d.m->ready = 0;
	d.edge();
	d.m->valid = 0;
	d.edge();
}

/* ---- txn_check (MAX_LATENCY 4, DEPTH 2: VL_FLAGS_prim_txn_check; now counts the cycles) ---- */

/* Legal traffic: up to two requests outstanding, answered in order within 4 cycles, some in
 * the cycle they are taken. */
Test(prim, txn_check_passes_legal_traffic)
{
	dut<Vprim_txn_check> d;
	auto *p = d.m.get();
	unsigned outstanding = 0, waited = 0, answered = 0;

	for (int n = 0; n < 20000; n++) {
		bool req = outstanding < 2 && rng() % 2;
		bool resp = (outstanding + req > 0) && (waited >= 3 || rng() % 2);

		p->now = (uint64_t)n;
		p->req_valid = req;
		p->req_fire = req;
		p->resp_valid = resp;
		p->resp_fire = resp;
		outstanding += req;
		outstanding -= resp;
		answered += resp;
		waited = resp || !outstanding ? 0 : waited + 1;
		d.edge();
	}
	cr_assert_gt(answered, 5000);
}

Test(prim, txn_check_response_without_request, .signal = SIGABRT)
{
	dut<Vprim_txn_check> d;

	d.m->resp_valid = 1;
	d.edge();
}

Test(prim, txn_check_too_many_outstanding, .signal = SIGABRT)
{
	dut<Vprim_txn_check> d;

	d.m->req_valid = d.m->req_fire = 1;
	for (int i = 0; i < 3; i++)
		d.edge();
}

Test(prim, txn_check_latency_beyond_the_bound, .signal = SIGABRT)
{
	dut<Vprim_txn_check> d;

	d.m->req_valid = d.m->req_fire = 1;
	d.edge();
	d.m->req_valid = d.m->req_fire = 0;
	for (int i = 1; i < 7; i++) {
		d.m->now = (uint64_t)i;
		d.edge();
	}
}
