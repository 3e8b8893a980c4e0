/* Pin-level test of rtl/timers.sv's next-expiry tracking (docs/blocks/timers.md), part of
 * build/test/block-prim: timers Verilated with 40 QPNs, driven cycle by cycle as the
 * transactor would (sim/vl/vl.h), with cycles skipped by setting now. The port tests cannot
 * see quiet_until; here it must be the earliest expiry still ahead after a sweep, never later
 * than it in between, and all ones with nothing ahead. */
#include "Vtimers_p.h"

#include <criterion/criterion.h>

#include <cstdint>
#include <memory>

namespace {

const uint64_t NEVER = ~0ull;

struct pins {
	std::unique_ptr<VerilatedContext> ctx{ new VerilatedContext };
	std::unique_ptr<Vtimers_p> t;
	uint64_t now = 0;

	pins()
	{
		ctx->assertOn(true);
		t.reset(new Vtimers_p{ ctx.get() });
		t->resp_ready = 1;
		t->req_valid = 0;
		t->rst = 1;
		edge();
		edge();
		t->rst = 0;
		now = 0;
		low();
	}
	void low()
	{
		t->clk = 0;
		t->now = now;
		t->eval();
	}
	void rise()
	{
		t->clk = 1;
		t->eval();
		now++;
	}
	void edge()
	{
		low();
		rise();
	}
	/* One request in cycle now: taken at once (the block is idle), answered the next cycle. */
	void req(bool op, uint32_t qpn, bool kind, bool arm, uint64_t at)
	{
		t->req_valid = 1;
		t->req_op = op;
		t->req_qpn = qpn;
		t->req_kind = kind;
		t->req_arm = arm;
		t->req_at = at;
		t->req_cycle = now;
		low();
		cr_assert(t->req_ready, "request not taken at cycle %llu", (unsigned long long)now);
		rise();
		t->req_valid = 0;
		low();
		cr_assert(t->resp_valid, "no answer the cycle after the request");
		rise();
		low();
	}
	/* Skip to cycle c (no clocking), as the transactor does while the block is quiet. */
	void skip(uint64_t c)
	{
		cr_assert_gt(t->quiet_until, now, "skipping while the block has work");
		cr_assert_geq(t->quiet_until, c, "skipping past the block's next work");
		now = c;
		low();
	}
	/* Clock while the block has work (a sweep); returns the cycles it took. */
	uint64_t run()
	{
		uint64_t n = 0;

		for (; t->quiet_until <= now; n++) {
			cr_assert_lt(n, 1000u, "sweep still running after %llu cycles",
				     (unsigned long long)n);
			rise();
			low();
		}
		return n;
	}
};

} // namespace

Test(blocks, timers_quiet_until_is_the_next_expiry_after_a_sweep)
{
	pins p;

	cr_assert_eq(p.t->quiet_until, NEVER, "nothing armed: never");
	p.req(0, 7, 0, 1, 1000); /* ACK timer of QPN 7 at 1000 */
	cr_assert_eq(p.t->quiet_until, 1000);
	p.req(0, 30, 1, 1, 50); /* RNR wait of QPN 30 at 50: earlier */
	cr_assert_eq(p.t->quiet_until, 50);
	p.req(0, 30, 1, 0, 0); /* stopped: 50 stays, a lower bound */
	cr_assert_eq(p.t->quiet_until, 50);
	p.req(0, 12, 0, 1, 2000);
	p.skip(50);
	/* the sweep reads words 0 .. 2 * 30 + 1 (the highest armed since reset), one a cycle,
	 * with a cycle to start, one for the last word read and one to end: and finds 1000 */
	uint64_t n = p.run();
	cr_assert_eq(n, 2 * 30 + 2 + 3, "%llu cycles", (unsigned long long)n);
	cr_assert_eq(p.t->quiet_until, 1000, "after the sweep: the earliest expiry ahead");
	cr_assert_eq(p.t->stat_sweeps, 1);
	p.skip(1000);
	p.run();
	cr_assert_eq(p.t->quiet_until, 2000, "QPN 7's timer is due: the next one ahead is 2000");
	cr_assert_eq(p.t->stat_due, 1, "the sweep saw QPN 7's timer due");
	p.req(1, 7, 0, 0, 0); /* EXPIRE takes it */
	cr_assert_eq(p.t->stat_fired, 1);
	p.req(0, 12, 0, 1, 1500); /* a restart earlier lowers the wake-up */
	cr_assert_eq(p.t->quiet_until, 1500);
	p.skip(1500);
	p.run();
	cr_assert_eq(p.t->quiet_until, NEVER, "QPN 12's timer due, nothing else ahead");
}

/* A request during a sweep takes the read port first; an arm of a word the sweep has passed
 * still sets the next wake-up. */
Test(blocks, timers_a_request_during_a_sweep_goes_first_and_counts)
{
	pins p;

	for (uint32_t q = 0; q < 40; q++)
		p.req(0, q, 0, 1, 1000 + q);
	p.skip(1000);
	p.rise(); /* the sweep starts */
	p.low();
	cr_assert_eq(p.t->quiet_until, p.now, "sweeping: busy");
	for (int i = 0; i < 5; i++) { /* past word 1 */
		p.rise();
		p.low();
	}
	p.req(0, 0, 1, 1, 5000); /* word 1, behind the sweep, taken at once: ahead of the others */
	p.run();
	cr_assert_eq(p.t->quiet_until, 5000, "the arm during the sweep counts: %llu",
		     (unsigned long long)p.t->quiet_until);
	cr_assert_eq(p.t->stat_due, 40, "the 40 ACK timers were due");
}
