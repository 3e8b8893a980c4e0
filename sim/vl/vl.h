/* Transactors (sim/vl): the shared clocking of one Verilated block behind a transaction port
 * (model/twin.h). A transactor drives a request at the cycle of the transaction, clocks the
 * block only until its response is valid, then clocks the edge that commits it; while idle
 * the block is not clocked, so simulated time still jumps. Pin protocol (docs/rtl.md):
 *   cycle c (time c * period): inputs and req_valid = 1 applied with clk low, evaluated; the
 *   rising edge at c * period + period / 2 accepts the request; resp_valid is sampled before
 *   each rising edge; the response cycle is in.cycle + the rising edges before it.
 * Waves: with WAVES=1 each block writes <HCASIM_WAVES_DIR or build/waves>/hca<dev>.<block>.fst,
 * its top scope named hca<dev> so that the block is hca<dev>.<block>; times are picoseconds of
 * simulated time. */
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
#include <memory>
#include <string>
#include <sys/stat.h>

/* One Verilated model M (with clk, rst, req_valid, req_ready, resp_valid) of a device. */
template <class M> class vl_block {
public:
	vl_block(const hm_dev *d, const char *block)
		: block_(block), period_ps_(d ? d->core.period_ps : 1000), devno_(d ? d->devno : 0)
	{
		std::string top = "hca" + std::to_string(devno_);

		ctx_.reset(new VerilatedContext);
		ctx_->traceEverOn(true);
		ctx_->fatalOnError(true);
		top_.reset(new M{ ctx_.get(), top.c_str() });
		top_->clk = 0;
		top_->rst = 0;
		top_->req_valid = 0;
		top_->eval();
	}
	~vl_block()
	{
		if (fst_) {
			if (next_ps_)
				fst_->dump(next_ps_);
			fst_->close();
		}
		top_->final();
	}
	M *pins() { return top_.get(); }
	/* Finish the FST (its last transaction included, the file closed so that it can be
	 * opened: a lockstep mismatch has stopped the run) and return its path; NULL with waves
	 * off. Later transactions are not dumped. */
	const char *waves_path()
	{
		if (fst_) {
			if (next_ps_)
				fst_->dump(next_ps_);
			fst_->close();
			fst_.reset();
		}
		return path_.empty() ? nullptr : path_.c_str();
	}

	/* Synchronous reset for n cycles (not dumped), then idle clocking while busy() is true
	 * (e.g. a reset sweep), at most max_cycles. */
	template <class B> void reset(unsigned n, B busy, uint64_t max_cycles)
	{
		top_->rst = 1;
		for (unsigned i = 0; i < n; i++)
			edge();
		top_->rst = 0;
		for (uint64_t i = 0; busy(top_.get()); i++) {
			SIM_ASSERT(i < max_cycles, "sim/vl/%s: still busy %llu cycles after reset",
				   block_, (unsigned long long)max_cycles);
			edge();
		}
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

	/* One transaction: the caller has set the request's input pins; returns the cycles from
	 * the request to the response (resp_valid high), at which capture(pins) is called; then
	 * the committing edge is clocked. max_cycles bounds a block that never answers. */
	template <class C> uint64_t transact(uint64_t cycle, uint64_t max_cycles, C capture)
	{
		uint64_t k = 0;

		t_ps_ = cycle * period_ps_;
		if (t_ps_ < next_ps_)
			t_ps_ = next_ps_; /* the FST's time never goes back (docs/rtl.md) */
		if (fst_ && t_ps_ > next_ps_)
			fst_->dump(next_ps_); /* the falling edge after the last transaction */
		top_->clk = 0;
		top_->req_valid = 1;
		top_->eval();
		dump();
		SIM_ASSERT(top_->req_ready, "sim/vl/%s: not ready for a request at cycle %llu",
			   block_, (unsigned long long)cycle);
		while (!top_->resp_valid) {
			SIM_ASSERT(k < max_cycles,
				   "sim/vl/%s: no response %llu cycles after the request at cycle %llu",
				   block_, (unsigned long long)k, (unsigned long long)cycle);
			rise();
			top_->clk = 0;
			top_->req_valid = 0;
			top_->eval();
			dump();
			k++;
		}
		capture(top_.get());
		rise(); /* commits the transaction */
		top_->clk = 0;
		top_->req_valid = 0;
		/* The falling edge needs no evaluation of its own (the block acts on rising edges
		 * only): the next transaction's first one applies it, unless the waves show it
		 * (dumped when the next transaction starts later than it, or at the end). */
		if (fst_)
			top_->eval();
		next_ps_ = t_ps_;
		return k;
	}

private:
	/* An undumped clock cycle (reset). */
	void edge()
	{
		top_->clk = 1;
		top_->eval();
		t_ps_ += period_ps_;
		top_->clk = 0;
		top_->eval();
	}
	/* The rising edge half a period into the current cycle; the clock stays high. */
	void rise()
	{
		top_->clk = 1;
		top_->eval();
		if (fst_)
			fst_->dump(t_ps_ + period_ps_ / 2);
		t_ps_ += period_ps_;
	}
	void dump()
	{
		if (fst_)
			fst_->dump(t_ps_);
	}

	const char *block_;
	uint64_t period_ps_;
	int devno_;
	uint64_t t_ps_ = 0, next_ps_ = 0;
	std::unique_ptr<VerilatedContext> ctx_;
	std::unique_ptr<M> top_;
	std::unique_ptr<VerilatedFstC> fst_;
	std::string path_;
};

#endif
