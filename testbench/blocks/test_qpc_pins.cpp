/* Pin-level test of rtl/qpc.sv (docs/blocks/qpc.md#rtl-twin), part of build/test/block-prim:
 * qpc Verilated with 40 QPNs (answers held up to 16 cycles), driven cycle by cycle as the
 * transactor would (sim/vl/vl.h). What the port tests cannot see: the answer two cycles after the request, a hit moved to the tail
 * by the edge that takes its answer, an answer held while resp_ready is low, a completion
 * taken only with its answer, the DMA requests' address and length from hca_pkg, and
 * quiet_until. */
#include "Vqpc_p.h"

#include <criterion/criterion.h>

#include <cstdint>
#include <memory>

namespace {

const uint64_t NEVER = ~0ull;
const uint64_t BASE = 0x40000;
enum { LOOKUP = 0, CPL = 1, FORGET = 2, NONE = 0, READ = 1, WRITE = 2 };

struct pins {
	std::unique_ptr<VerilatedContext> ctx{ new VerilatedContext };
	std::unique_ptr<Vqpc_p> t;
	uint64_t now = 0;

	pins()
	{
		ctx->assertOn(true);
		t.reset(new Vqpc_p{ ctx.get() });
		t->resp_ready = 1;
		t->req_valid = 0;
		t->rst = 1;
		low();
		rise();
		low();
		rise();
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
		low();
	}
	/* Present a request in cycle now (the block idle); it is taken at this edge. */
	void present(unsigned op, uint32_t qpn, bool tag, uint32_t entries)
	{
		t->req_valid = 1;
		t->req_op = op;
		t->req_qpn = qpn;
		t->req_write = 1;
		t->req_tag = tag;
		t->req_entries = entries;
		t->req_base = BASE;
		low();
	}
	/* A lookup or forget: taken now, answered HIT_CYCLES = 2 cycles later and taken then. */
	void ask(unsigned op, uint32_t qpn, uint32_t entries)
	{
		present(op, qpn, 0, entries);
		cr_assert(t->req_ready, "request not taken at cycle %llu", (unsigned long long)now);
		cr_assert_not(t->resp_valid);
		rise();
		t->req_valid = 0;
		low();
		cr_assert_not(t->resp_valid, "no answer one cycle after the request");
		rise();
		cr_assert(t->resp_valid, "the answer two cycles after the request");
	}
	void take()
	{
		rise();
	}
	/* Clock until the block takes requests again; the cycles it took. */
	unsigned settle()
	{
		unsigned n = 0;

		while (t->quiet_until != NEVER) {
			cr_assert_lt(n, 8u, "still busy");
			rise();
			n++;
		}
		return n;
	}
	/* A completion of tag presented in cycle now: answered in this cycle, taken at its edge. */
	void complete(bool tag)
	{
		present(CPL, 0, tag, 0);
		cr_assert(t->req_ready && t->resp_valid, "a completion is answered in its cycle");
		rise();
		t->req_valid = 0;
		low();
	}
	/* A miss's lookup, its requests completed at once; returns the answer's victim and wb. */
	void miss(uint32_t qpn, uint32_t entries)
	{
		ask(LOOKUP, qpn, entries);
		cr_assert_not(t->resp_done);
		bool wb = t->resp_wb;
		take();
		if (wb) {
			complete(1);
			cr_assert_eq(t->resp_dma, NONE, "the answer was taken");
		}
		complete(0);
		settle();
	}
};

} // namespace

Test(qpc_pins, a_miss_asks_for_its_slot_and_a_hit_answers_in_two_cycles)
{
	pins p;

	cr_assert_eq(p.t->quiet_until, NEVER, "idle: no work of its own");
	p.ask(LOOKUP, 7, 2);
	cr_assert_not(p.t->resp_done);
	cr_assert_not(p.t->resp_hit);
	cr_assert_not(p.t->resp_evict, "room for two");
	cr_assert_eq(p.t->resp_dma, READ);
	cr_assert_eq(p.t->resp_dma_tag, 0);
	cr_assert_eq(p.t->resp_dma_qpn, 7u);
	cr_assert_eq(p.t->resp_dma_addr, BASE + 7 * 1024, "the slot: base + QPN * 1 024");
	cr_assert_eq(p.t->resp_dma_len, 800u, "the image: hca_qpc's 800 bytes");
	p.take();
	cr_assert_eq(p.t->quiet_until, NEVER, "waiting for the fill: nothing of its own");
	p.now += 250; /* the fill's time, skipped */
	p.complete(0);
	cr_assert_eq(p.settle(), 1u, "the fill joins the tail");
	p.ask(LOOKUP, 7, 2);
	cr_assert(p.t->resp_done && p.t->resp_hit);
	cr_assert_eq(p.t->resp_dma, NONE);
	p.take();
	cr_assert_eq(p.t->stat_hits, 1u);
	cr_assert_eq(p.t->stat_misses, 1u);
}

Test(qpc_pins, a_hit_moves_to_the_tail_by_its_answer_held_while_not_ready)
{
	pins p;

	p.miss(3, 2);
	p.miss(4, 2); /* 3 is the least recently used */
	p.ask(LOOKUP, 3, 2);
	p.t->resp_ready = 0;
	for (int i = 0; i < 3; i++) {
		p.rise();
		cr_assert(p.t->resp_valid && p.t->resp_hit, "the answer is held");
	}
	p.t->resp_ready = 1;
	p.take();
	cr_assert_eq(p.t->quiet_until, NEVER, "3 moved to the tail with the answer: no work left");
	p.ask(LOOKUP, 5, 2);
	cr_assert(p.t->resp_evict, "full");
	cr_assert_eq(p.t->resp_victim, 4u, "4 is now the least recently used");
	cr_assert(p.t->resp_wb, "written to since its fill");
	cr_assert_eq(p.t->resp_dma, WRITE);
	cr_assert_eq(p.t->resp_dma_tag, 1);
	cr_assert_eq(p.t->resp_dma_addr, BASE + 4 * 1024);
	p.take();
	/* the write-back's completion, answered with the fill, which waits for resp_ready */
	p.t->resp_ready = 0;
	p.present(CPL, 0, 1, 0);
	cr_assert(p.t->resp_valid);
	cr_assert_not(p.t->req_ready, "taken only with its answer");
	p.rise();
	p.t->resp_ready = 1;
	p.low();
	cr_assert_eq(p.t->resp_dma, READ);
	cr_assert_eq(p.t->resp_dma_qpn, 5u);
	p.rise();
	p.t->req_valid = 0;
	p.low();
	p.complete(0);
	p.settle();
	cr_assert_eq(p.t->stat_wbs, 1u);
}

Test(qpc_pins, a_forgotten_entry_leaves_the_list_and_frees_its_room)
{
	pins p;

	p.miss(10, 2);
	p.miss(11, 2);
	p.ask(FORGET, 10, 2);
	cr_assert(p.t->resp_done && p.t->resp_hit, "it was cached");
	p.take();
	p.settle();
	p.ask(FORGET, 10, 2);
	cr_assert_not(p.t->resp_hit, "gone");
	p.take();
	p.settle();
	p.ask(LOOKUP, 12, 2);
	cr_assert_not(p.t->resp_evict, "the forgotten entry's room");
	p.take();
	p.complete(0);
	p.settle();
	p.ask(LOOKUP, 13, 2);
	cr_assert(p.t->resp_evict);
	cr_assert_eq(p.t->resp_victim, 11u);
}
