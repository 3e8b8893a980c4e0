/* Pin-level test of rtl/sched.sv's pipeline (docs/rtl.md "The sched pipeline"), part of
 * build/test/block-prim: sched Verilated with 40 QPNs and PIPELINE 1 and 3 (the port tests run
 * the default, 2), driven with a new request in every cycle it can take one, and the answers
 * held back at random (resp_ready low). The transactor never does either; here the hazard
 * tracking and the stall carry the load. Every answer must be what the arbiter gives when the
 * requests run one after the other in the order they were taken, in order; with resp_ready
 * always high, each must come exactly its latency after it was taken. */
#include "Vsched_p1.h"
#include "Vsched_p3.h"

#include <criterion/criterion.h>

#include <cstdint>
#include <deque>
#include <memory>

namespace {

uint64_t st = 7;
uint32_t rnd()
{
	st ^= st >> 12;
	st ^= st << 25;
	st ^= st >> 27;
	return (uint32_t)((st * 0x2545f4914f6cdd1dull) >> 32);
}

enum { DB = 0, PUSH = 1, POP = 2 };
const unsigned QPS_RTS = 3; /* hca_qps_e: 0-2 RESET, INIT, RTR; 5-6 SQE, ERR */
const uint32_t NQP = 40;

/* One request and its answer as the arbiter gives it run alone (model/sched.c's rules). */
struct txn {
	unsigned op, lat, qpn, state;
	uint32_t pi16, sq_pi, sq_done, entries;
	unsigned verdict;
	uint32_t new_pi, rqpn;
	bool queued, valid;
	uint64_t taken;
};

struct ref_arbiter {
	bool pending[NQP] = {};
	std::deque<uint32_t> fifo;
	bool enq(uint32_t q)
	{
		if (q >= NQP || pending[q])
			return false;
		pending[q] = true;
		fifo.push_back(q);
		return true;
	}
	void run(txn &t)
	{
		if (t.op == PUSH) {
			t.queued = enq(t.qpn);
		} else if (t.op == POP) {
			t.valid = !fifo.empty();
			t.rqpn = t.valid ? fifo.front() : 0;
			if (t.valid) {
				fifo.pop_front();
				pending[t.rqpn] = false;
			}
		} else {
			uint32_t ext = (t.sq_pi & 0xffff0000u) | t.pi16;

			if (ext < t.sq_pi)
				ext += 0x10000u;
			t.new_pi = 0;
			if (t.state <= 2) {
				t.verdict = 2;
			} else if (ext - t.sq_done > t.entries) {
				t.verdict = 3;
			} else {
				t.new_pi = ext;
				t.verdict = t.state >= 5 ? 1 : 0;
				if (t.verdict == 0)
					enq(t.qpn);
			}
		}
	}
};

txn random_txn()
{
	txn t = {};

	t.op = rnd() % 3;
	t.lat = rnd() % 2 ? 0 : rnd() % 4;
	t.qpn = rnd() % 8 == 0 ? NQP + rnd() % 3 : rnd() % 12; /* few QPs: hazards */
	t.state = rnd() % 5 == 0 ? rnd() % 7 : (unsigned)QPS_RTS;
	t.entries = 64;
	t.sq_done = rnd();
	t.sq_pi = t.sq_done + rnd() % 32;
	t.pi16 = (uint16_t)(t.sq_pi + rnd() % 40);
	return t;
}

template <class M> void drive(M *p, const txn &t)
{
	p->req_op = t.op;
	p->req_lat = t.lat;
	p->req_qpn = t.qpn;
	p->req_state = t.state;
	p->req_pi16 = t.pi16;
	p->req_sq_pi = t.sq_pi;
	p->req_sq_done = t.sq_done;
	p->req_sq_entries = t.entries;
}

template <class M> void check_answer(M *p, const txn &w, uint64_t cycle, unsigned pipeline,
				     bool exact)
{
	cr_assert_eq(p->resp_op, w.op, "cycle %llu: answer to op %u, expected %u",
		     (unsigned long long)cycle, p->resp_op, w.op);
	if (w.op == DB)
		cr_assert(p->resp_verdict == w.verdict && p->resp_new_pi == w.new_pi,
			  "cycle %llu: verdict %u new_pi 0x%x, expected %u 0x%x",
			  (unsigned long long)cycle, p->resp_verdict, p->resp_new_pi, w.verdict,
			  w.new_pi);
	else if (w.op == PUSH)
		cr_assert_eq(p->resp_queued, w.queued, "cycle %llu: push %u queued %u",
			     (unsigned long long)cycle, w.qpn, p->resp_queued);
	else
		cr_assert(p->resp_pop_valid == w.valid && p->resp_qpn == w.rqpn,
			  "cycle %llu: pop %u/%u, expected %u/%u", (unsigned long long)cycle,
			  p->resp_qpn, p->resp_pop_valid, w.rqpn, w.valid);
	if (exact)
		cr_assert_eq(cycle - w.taken, w.op == DB ? w.lat : pipeline,
			     "cycle %llu: op %u answered %llu cycles after it was taken",
			     (unsigned long long)cycle, w.op, (unsigned long long)(cycle - w.taken));
}

/* n cycles of traffic; exact: resp_ready always high and every latency checked. */
template <class M> void run(unsigned pipeline, bool exact, unsigned n)
{
	VerilatedContext ctx;
	std::unique_ptr<M> m(new M{ &ctx });
	M *p = m.get();
	ref_arbiter ref;
	std::deque<txn> want;
	txn cur = random_txn();
	unsigned stalls = 0, taken = 0, back_to_back = 0, held = 0;
	bool took_last = false;

	ctx.fatalOnError(true);
	ctx.assertOn(true);
	p->cfg_nqp = NQP;
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
		p->resp_ready = exact || rnd() % 3 != 0;
		p->clk = 0;
		p->eval();
		fire_req = p->req_valid && p->req_ready;
		fire_resp = p->resp_valid && p->resp_ready;
		stalls += p->req_valid && !p->req_ready;
		held += p->resp_valid && !p->resp_ready;
		if (fire_req) {
			back_to_back += took_last && !want.empty();
			cur.taken = c;
			ref.run(cur);
			want.push_back(cur);
			cur = random_txn();
			taken++;
		}
		took_last = fire_req;
		if (fire_resp) {
			cr_assert(!want.empty(), "cycle %llu: an answer without a request",
				  (unsigned long long)c);
			check_answer(p, want.front(), c, pipeline, exact);
			want.pop_front();
		}
		p->clk = 1;
		ctx.timeInc(1);
		p->eval();
		if (fire_req)
			p->req_valid = 0;
	}
	p->final();
	cr_assert_gt(taken, n / 4, "%u requests taken in %u cycles", taken, n);
	cr_assert_gt(stalls, n / 50, "hazard stalls: %u", stalls);
	cr_assert_gt(back_to_back, n / 50, "requests taken back to back: %u", back_to_back);
	if (!exact)
		cr_assert_gt(held, n / 50, "answers held: %u", held);
}

} // namespace

Test(sched_pins, pipeline_1_back_to_back_with_answers_held) { run<Vsched_p1>(1, false, 60000); }
Test(sched_pins, pipeline_1_exact_latency) { run<Vsched_p1>(1, true, 30000); }
Test(sched_pins, pipeline_3_back_to_back_with_answers_held) { run<Vsched_p3>(3, false, 60000); }
Test(sched_pins, pipeline_3_exact_latency) { run<Vsched_p3>(3, true, 30000); }
