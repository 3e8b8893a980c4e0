/* Transactors (sim/vl): the shared clocking of one Verilated block behind a transaction port
 * (model/twin.h). A transactor presents a request at the cycle of the transaction, holds it
 * until the block's req_ready takes it, clocks the block until its response is valid, and
 * clocks the edge that takes it (resp_ready is high). Between transactions, and while it
 * waits for an answer, the block is clocked while it has work of its own and skipped to the
 * cycle it says it next has some (quiet_until: a delayed answer's due cycle, or never), so
 * simulated time still jumps and a delay costs no clocking. Pin protocol (docs/rtl.md):
 *   cycle c (time c * period): inputs and req_valid = 1 applied with clk low, evaluated; the
 *   rising edge at c * period + period / 2 takes the request if req_ready is high; resp_valid
 *   is sampled before each rising edge; the response cycle is in.cycle + the rising edges
 *   from the acceptance to the response.
 * Waves: with WAVES=1 each block writes <HCASIM_WAVES_DIR or build/waves>/hca<dev>.<block>.fst,
 * its top scope named hca<dev> so that the block is hca<dev>.<block>; times are picoseconds of
 * simulated time.
 * Coverage: built with COV=1 (make coverage, docs/rtl.md#coverage), each block's context counts
 * its line, toggle and cover-statement coverage, written to
 * $HCASIM_COVERAGE_DIR/vl-<pid>-<n>.dat when the block is destroyed (or at exit, if it is still
 * alive then); verilator_coverage merges them. */
#ifndef SIM_VL_VL_H
#define SIM_VL_VL_H

/* The C headers, as C++ sees them. */
#define _Static_assert static_assert
#define _Noreturn [[noreturn]]
extern "C" {
#include "model/hca.h"
#include "model/twin.h"
#include "sim/kernel.h"
}
#undef _Static_assert
#undef _Noreturn

#include <verilated.h>
#include <verilated_fst_c.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <sys/stat.h>
#if VM_COVERAGE
#include <verilated_cov.h>
#include <mutex>
#include <set>
#include <unistd.h>
#endif

/* True if HCASIM_RTL_BUG names block: its test-only bug variant (Verilated with HCA_RTL_BUG)
 * is to be created instead of it. The blocks with one: cqe, sched, mkey, timers, resp_fe and
 * qpc
 * (docs/rtl.md). */
inline bool vl_rtl_bug(const char *block)
{
	const char *bug = getenv("HCASIM_RTL_BUG");

	SIM_ASSERT(!bug || !*bug || !strcmp(bug, "none") || !strcmp(bug, "cqe") ||
			   !strcmp(bug, "sched") || !strcmp(bug, "mkey") || !strcmp(bug, "timers") ||
			   !strcmp(bug, "resp_fe") || !strcmp(bug, "qpc"),
		   "HCASIM_RTL_BUG = '%s': the RTL built with a test bug is cqe, sched, mkey, "
		   "timers, resp_fe or qpc",
		   bug);
	return bug && !strcmp(bug, block);
}

#if VM_COVERAGE
/* The contexts alive, whose counts are written at exit; never freed (exit handlers may run
 * after static destructors). */
struct vl_cov {
	std::mutex mu;
	std::set<VerilatedContext *> live;
	unsigned seq = 0;

	static vl_cov &get()
	{
		static vl_cov *c = new vl_cov;
		static bool hooked = !atexit(at_exit);

		(void)hooked;
		return *c;
	}
	static void at_exit()
	{
		vl_cov &c = get();
		std::lock_guard<std::mutex> g(c.mu);

		for (VerilatedContext *x : c.live)
			c.write(x);
		c.live.clear();
	}
	/* Write x's counts to their own file (mu held); nothing without HCASIM_COVERAGE_DIR. */
	void write(VerilatedContext *x)
	{
		const char *dir = getenv("HCASIM_COVERAGE_DIR");

		if (!dir || !*dir)
			return;
		mkdir(dir, 0777); /* checked at boot (docs/config.md); may exist */
		std::string f = std::string(dir) + "/vl-" + std::to_string(getpid()) + "-" +
				std::to_string(seq++) + ".dat";
		x->coveragep()->write(f.c_str());
	}
	void add(VerilatedContext *x)
	{
		std::lock_guard<std::mutex> g(mu);
		live.insert(x);
	}
	void done(VerilatedContext *x)
	{
		std::lock_guard<std::mutex> g(mu);
		if (live.erase(x))
			write(x);
	}
};
#endif

/* One Verilated model M (with clk, rst, now, req_valid, req_ready, resp_valid, resp_ready and
 * quiet_until) of a device. cyc_ is the block's own cycle, which it sees on now: the next one
 * to be driven. */
template <class M> class vl_block {
public:
	vl_block(const hm_dev *d, const char *block)
		: block_(block), period_ps_(d ? d->core.period_ps : 1000), devno_(d ? d->devno : 0)
	{
		std::string top = "hca" + std::to_string(devno_);

		ctx_.reset(new VerilatedContext);
		ctx_->traceEverOn(true);
		ctx_->fatalOnError(true);
		ctx_->assertOn(true);
		top_.reset(new M{ ctx_.get(), top.c_str() });
#if VM_COVERAGE
		vl_cov::get().add(ctx_.get());
#endif
		top_->clk = 0;
		top_->rst = 0;
		top_->now = 0;
		top_->req_valid = 0;
		top_->resp_ready = 1; /* the transactor takes every answer at once */
		top_->eval();
	}
	~vl_block()
	{
		if (fst_) {
			fall();
			fst_->close();
		}
		top_->final();
#if VM_COVERAGE
		vl_cov::get().done(ctx_.get());
#endif
	}
	M *pins() { return top_.get(); }
	/* Finish the FST (its last transaction included, the file closed so that it can be
	 * opened: a lockstep mismatch has stopped the run) and return its path; NULL with waves
	 * off. Later transactions are not dumped. */
	const char *waves_path()
	{
		if (fst_) {
			fall();
			fst_->close();
			fst_.reset();
		}
		return path_.empty() ? nullptr : path_.c_str();
	}

	/* Synchronous reset for n cycles (not dumped), then the block's own work after it (a
	 * reset sweep: clocked while quiet_until says it has work), at most max_cycles. The
	 * block's time starts at cycle 0 after it. */
	void reset(unsigned n, uint64_t max_cycles)
	{
		top_->rst = 1;
		for (unsigned i = 0; i < n; i++)
			edge();
		top_->rst = 0;
		top_->eval();
		for (uint64_t i = 0; top_->quiet_until == 0; i++) {
			SIM_ASSERT(i < max_cycles, "sim/vl/%s: still busy %llu cycles after reset",
				   block_, (unsigned long long)max_cycles);
			edge();
		}
		cyc_ = 0;
	}

	/* Open dir/hca<dev>.<block>.fst, from the next transaction on, unless the block dumps
	 * already or did (a finished FST is not overwritten). */
	void waves_in(const std::string &dir)
	{
		if (dir.empty() || fst_ || !path_.empty())
			return;
		fst_.reset(new VerilatedFstC);
		top_->trace(fst_.get(), 99);
		path_ = dir + "/hca" + std::to_string(devno_) + "." + block_ + ".fst";
		fst_->open(path_.c_str());
		SIM_ASSERT(fst_->isOpen(), "sim/vl/%s: cannot open %s", block_, path_.c_str());
	}

	/* Bring the block to cycle c: clocked (with no request) while it has work of its own,
	 * skipped while quiet_until says it has none, so idle time costs nothing. A block clocked
	 * past c already stays where it is: its time never goes back. */
	void advance(uint64_t c)
	{
		top_->req_valid = 0;
		while (cyc_ < c) {
			uint64_t q = top_->quiet_until;

			if (q > cyc_) {
				cyc_ = q < c ? q : c;
				continue;
			}
			low();
			rise();
		}
	}

	/* One transaction: the caller has set the request's input pins. It is presented at
	 * cycle (or at the block's own cycle, if that is later), held until req_ready takes it
	 * (the block may be busy with earlier work: at most max_cycles), and the block is
	 * brought to resp_valid, at which capture(pins) is called; the rising edge that takes
	 * the response is clocked too. Returns the cycles from the acceptance to the response
	 * (at most max_cycles). */
	template <class C> uint64_t transact(uint64_t cycle, uint64_t max_cycles, C capture)
	{
		uint64_t taken;

		advance(cycle);
		top_->req_valid = 1;
		low();
		for (uint64_t s = 0; !top_->req_ready; s++) {
			SIM_ASSERT(s < max_cycles,
				   "sim/vl/%s: request not taken %llu cycles after cycle %llu", block_,
				   (unsigned long long)s, (unsigned long long)cycle);
			rise();
			low();
		}
		taken = cyc_;
		if (!top_->resp_valid) {
			rise();
			top_->req_valid = 0;
			low();
		}
		/* Until the answer: clocked while the block has work, skipped to the cycle it
		 * says its answer (or other work) is due. */
		while (!top_->resp_valid) {
			uint64_t q = top_->quiet_until;

			SIM_ASSERT(cyc_ - taken < max_cycles,
				   "sim/vl/%s: no response %llu cycles after the request at cycle %llu",
				   block_, (unsigned long long)(cyc_ - taken),
				   (unsigned long long)cycle);
			if (q > cyc_) {
				cyc_ = q < taken + max_cycles ? q : taken + max_cycles;
			} else {
				rise();
			}
			low();
		}
		capture(top_.get());
		rise(); /* the response is taken (resp_ready is high) */
		top_->req_valid = 0;
		return cyc_ - 1 - taken;
	}

private:
	/* An undumped clock cycle (reset). */
	void edge()
	{
		top_->clk = 1;
		top_->eval();
		top_->clk = 0;
		top_->eval();
	}
	/* Cycle cyc_ begins: the clock low, the inputs as set, evaluated (and dumped at
	 * cyc_ * period, after the falling edge of the last clocked cycle if that was earlier). */
	void low()
	{
		uint64_t t = cyc_ * period_ps_;

		if (fst_ && fall_ && fall_ps_ < t)
			fall();
		fall_ = false;
		top_->clk = 0;
		top_->now = cyc_;
		top_->eval();
		if (fst_)
			fst_->dump(t);
	}
	/* The rising edge half a period into cycle cyc_; then the next cycle is the block's. The
	 * falling edge needs no evaluation of its own (the block acts on rising edges only): the
	 * next low() applies it, and dumps it first when the block skipped cycles. */
	void rise()
	{
		uint64_t t = cyc_ * period_ps_ + period_ps_ / 2;

		top_->clk = 1;
		ctx_->time(t); /* an assertion's report names the time in ps */
		top_->eval();
		if (fst_)
			fst_->dump(t);
		cyc_++;
		fall_ = true;
		fall_ps_ = cyc_ * period_ps_;
	}
	/* The falling edge after the last clocked cycle, into the waves. */
	void fall()
	{
		if (!fall_)
			return;
		top_->clk = 0;
		top_->eval();
		fst_->dump(fall_ps_);
		fall_ = false;
	}

	const char *block_;
	uint64_t period_ps_;
	int devno_;
	uint64_t cyc_ = 0, fall_ps_ = 0;
	bool fall_ = false;
	std::unique_ptr<VerilatedContext> ctx_;
	std::unique_ptr<M> top_;
	std::unique_ptr<VerilatedFstC> fst_;
	std::string path_;
};

#endif
