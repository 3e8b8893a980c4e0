/* Pin-level test of rtl/resp_fe.sv (docs/blocks/resp_fe.md), part of build/test/block-prim:
 * resp_fe Verilated with 48-bit addresses, 24-bit PDNs and MAX_HOLD 16 (the port tests run the
 * defaults), its key stage (rtl/mkey.sv) with it. One stream of random requests is driven
 * twice: once with resp_ready always high, where every request offered is taken at once and
 * answered exactly a cycle later, and once with a new request in most cycles and the answers
 * held back at random (resp_ready low), which the transactor never does. The held run must
 * give every request the answer the first run gave it, in order: holding an answer (in the
 * checks' register and in the key stage's) changes nothing. */
#include "Vresp_fe_pins.h"

#include <criterion/criterion.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace {

/* Two streams: the requests' (the same in both runs) and the driver's choices. */
uint64_t st, st_drive;
uint32_t next(uint64_t &s)
{
	s ^= s >> 12;
	s ^= s << 25;
	s ^= s >> 27;
	return (uint32_t)((s * 0x2545f4914f6cdd1dull) >> 32);
}
uint32_t rnd()
{
	return next(st);
}

/* A request near the edges of each check (qp types RC 2, UC 3, XRC_RECV 10). */
void drive_random(Vresp_fe_pins *p)
{
	static const unsigned qpt[] = { 2, 2, 3, 10 }, cls[] = { 1, 2, 4, 8, 0 };
	uint32_t r = rnd(), k = rnd();

	p->req_qp_type = qpt[r % 4];
	p->req_pos = (r >> 2) % 4;
	p->req_cls = cls[(r >> 4) % 5];
	p->req_paylen = (r >> 8) % 4 * 96;
	p->req_epsn = 100;
	p->req_psn = 98 + rnd() % 5;
	p->req_nak_sent = k & 1;
	p->req_in_msg = (k >> 1) & 1;
	p->req_msg_write = (k >> 2) & 1;
	p->req_uc_drop = (k >> 3) & 1;
	p->req_qp_access = (k >> 4) & 0xe;
	p->req_reth_len = (k >> 8) % 3 * 200;
	p->req_wr_left = (k >> 10) % 3 * 96;
	p->req_reth_va = 0x10100 + (k >> 12) % 2 * 0xff80;
	p->req_atomic_va = 0x10040 + (k >> 13) % 2 * 4;
	p->req_reth_rkey = p->req_atomic_rkey = p->req_wr_rkey = 3u << 8 | 0x11;
	p->req_wr_va = 0x10800;
	p->req_qpn = 0x42;
	p->req_pdn = 7 + (k >> 14) % 8 / 7;
	p->req_qp_xrcd = (k >> 17) % 3;
	p->req_srq_xrcd = (k >> 19) % 3;
	p->req_pkt_srqn = (k >> 21) % 2;
	p->req_xrc_srqn = 0;
	p->req_nkeys = 16;
	p->req_ctx_valid = 1;
	p->req_ctx_variant = 0x11 + (k >> 22) % 9 / 8;
	p->req_ctx_mw_type = 0;
	p->req_ctx_bound = 0;
	p->req_ctx_pdn = 7;
	p->req_ctx_access = (k >> 26) & 0xe;
	p->req_ctx_qpn = 0;
	p->req_ctx_va = 0x10000;
	p->req_ctx_len = 0x10000;
	p->req_ctx_iova = 0x900000;
}

struct answer {
	unsigned verdict, kind, cls, key;
	bool send_nak, nak_sent;
	uint64_t iova;
	bool operator==(const answer &o) const
	{
		return verdict == o.verdict && kind == o.kind && cls == o.cls && key == o.key &&
		       send_nak == o.send_nak && nak_sent == o.nak_sent && iova == o.iova;
	}
};

/* n requests from seed; held: answers held back at random. Returns the answers in order. */
std::vector<answer> run(bool held, unsigned n)
{
	VerilatedContext ctx;
	std::unique_ptr<Vresp_fe_pins> m(new Vresp_fe_pins{ &ctx });
	Vresp_fe_pins *p = m.get();
	std::vector<answer> got;
	std::deque<uint64_t> taken;
	unsigned offered = 0, stalls = 0, holds = 0, hold_run = 0;

	st = 17;
	st_drive = 23;
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
	p->req_valid = 0;
	for (uint64_t c = 0; got.size() < n; c++) {
		bool fire_req, fire_resp;

		cr_assert_lt(c, 20ull * n, "no progress");
		if (!p->req_valid && offered < n && (held ? next(st_drive) % 8 != 0 : true)) {
			drive_random(p);
			p->req_valid = 1;
			offered++;
		}
		p->now = c;
		/* held at most 8 cycles in a row (MAX_HOLD is 16) */
		p->resp_ready = !held || hold_run >= 8 || next(st_drive) % 3 != 0;
		p->clk = 0;
		p->eval();
		fire_req = p->req_valid && p->req_ready;
		fire_resp = p->resp_valid && p->resp_ready;
		stalls += p->req_valid && !p->req_ready;
		holds += p->resp_valid && !p->resp_ready;
		hold_run = p->resp_valid && !p->resp_ready ? hold_run + 1 : 0;
		cr_assert_eq(p->quiet_until, p->resp_valid ? 0 : ~0ull, "cycle %llu: quiet_until",
			     (unsigned long long)c);
		if (!held)
			cr_assert(!p->req_valid || p->req_ready, "cycle %llu: a request not taken",
				  (unsigned long long)c);
		if (fire_resp) {
			cr_assert(!taken.empty(), "cycle %llu: an answer without a request",
				  (unsigned long long)c);
			if (!held)
				cr_assert_eq(c - taken.front(), 1u, "cycle %llu: answered %llu after",
					     (unsigned long long)c,
					     (unsigned long long)(c - taken.front()));
			taken.pop_front();
			got.push_back(answer{ p->resp_verdict, p->resp_kind, p->resp_psn_cls,
					      p->resp_key, (bool)p->resp_send_nak,
					      (bool)p->resp_nak_sent, p->resp_iova });
		}
		if (fire_req)
			taken.push_back(c);
		p->clk = 1;
		ctx.timeInc(1);
		p->eval();
		if (fire_req)
			p->req_valid = 0;
	}
	p->final();
	if (held) {
		cr_assert_gt(holds, n / 10, "answers held: %u", holds);
		cr_assert_gt(stalls, n / 20, "requests stalled behind a held answer: %u", stalls);
	}
	return got;
}

} // namespace

Test(resp_fe_pins, held_answers_change_nothing_and_every_verdict_comes)
{
	const unsigned n = 20000;
	std::vector<answer> exact = run(false, n), held = run(true, n);
	unsigned verdicts[16] = {};

	cr_assert_eq(exact.size(), n);
	cr_assert_eq(held.size(), n);
	for (unsigned i = 0; i < n; i++) {
		cr_assert(exact[i] == held[i], "request %u: verdict %u key %u with answers held, "
			  "%u %u without", i, held[i].verdict, held[i].key, exact[i].verdict,
			  exact[i].key);
		verdicts[exact[i].verdict & 15]++;
	}
	for (int v = 0; v < 11; v++)
		cr_assert_gt(verdicts[v], 20u, "verdict %d only %u times", v, verdicts[v]);
}
