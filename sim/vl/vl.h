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
#include <vector>
#include <sys/stat.h>
#if VM_COVERAGE
#include <verilated_cov.h>
#include <mutex>
#include <set>
#include <unistd.h>
#endif

/* True if HCASIM_RTL_BUG names block: its test-only bug variant (Verilated with HCA_RTL_BUG)
 * is to be created instead of it. The blocks with one: cqe, sched, mkey, timers, resp_fe, qpc
 * and wqe_fetch
 * (docs/rtl.md). */
inline bool vl_rtl_bug(const char *block)
{
	static const char *const with_bug[] = { "cqe",	   "sched", "mkey",	 "timers",
						"resp_fe", "qpc",   "wqe_fetch" };
	const char *bug = getenv("HCASIM_RTL_BUG");
	bool known = !bug || !*bug || !strcmp(bug, "none");

	for (const char *b : with_bug)
		known = known || !strcmp(bug, b);
	SIM_ASSERT(known,
		   "HCASIM_RTL_BUG = '%s': the RTL built with a test bug is cqe, sched, mkey, "
		   "timers, resp_fe, qpc or wqe_fetch",
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

/* What a block's port besides its request and response needs of the clocking (the DMA engine,
 * vl_dma below): drive its inputs for a cycle, sample its handshakes before the rising edge
 * and act on them after it, and say when it next has work (a completion due). */
struct vl_hook {
	virtual ~vl_hook() {}
	virtual void begin(uint64_t cyc) = 0; /* a transaction's request is presented in cyc */
	virtual void drive(uint64_t cyc) = 0; /* cycle cyc begins (before its evaluation) */
	virtual void sample() = 0;            /* before the rising edge of the current cycle */
	virtual void edge(uint64_t cyc) = 0;  /* after the rising edge that ends cycle cyc */
	virtual uint64_t next_due() = 0;      /* the first cycle it has work (or UINT64_MAX) */
};

/* One Verilated model M (with clk, rst, now, req_valid, req_ready, resp_valid, resp_ready and
 * quiet_until) of a device. cyc_ is the block's own cycle, which it sees on now: the next one
 * to be driven. */
template <class M> class vl_block {
public:
	vl_block(const hm_dev *d, const char *block)
		: block_(block), period_ps_(d ? d->core.period_ps : 1000), devno_(d ? d->devno : 0)
	{
		std::string top = "hca" + std::to_string(devno_);
		/* A new context makes itself the thread's and the process's last one, which a
		 * model built later without a context of its own (hcasim-sc's SystemC blocks)
		 * would take: keep the ones before it. */
		VerilatedContext *last = Verilated::lastContextp(), *thread = Verilated::threadContextp();

		ctx_.reset(new VerilatedContext);
		ctx_->traceEverOn(true);
		ctx_->fatalOnError(true);
		ctx_->assertOn(true);
		top_.reset(new M{ ctx_.get(), top.c_str() });
		Verilated::lastContextp(last);
		Verilated::threadContextp(thread);
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
	uint64_t period_ps() const { return period_ps_; }
	/* A port of the block's own beyond request and response (its DMA port), clocked with it. */
	void hook(vl_hook *h) { hook_ = h; }
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
			uint64_t q = quiet();

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
		if (hook_)
			hook_->begin(cyc_);
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
			uint64_t q = quiet();

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
	/* The first cycle the block has work: its own (quiet_until), or its hook's. */
	uint64_t quiet()
	{
		uint64_t q = top_->quiet_until;

		if (hook_) {
			uint64_t h = hook_->next_due();

			q = h < q ? h : q;
		}
		return q;
	}
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
		if (hook_)
			hook_->drive(cyc_);
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

		if (hook_)
			hook_->sample();
		top_->clk = 1;
		ctx_->time(t); /* an assertion's report names the time in ps */
		top_->eval();
		if (hook_)
			hook_->edge(cyc_);
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
	vl_hook *hook_ = nullptr;
};

/* The DMA engine behind the DMA port of a block M (docs/rtl.md "The DMA port"; pins dma_req_*,
 * dma_cpl_*): it takes every request (dma_req_ready high; the block's tags bound how many are
 * in flight), does it at once through the transaction's struct hm_dma (sim/pcie's timed
 * transfer, the C block's own call, or the C twin's record in lockstep), and presents its
 * completion (tag, kind, error, time in ps) from the cycle it is due, one per cycle, the
 * earliest due first, whatever the order of the requests: completions come out of order.
 * Timing rule: a request the block presents in the cycle its transaction's request is
 * presented is issued at the transaction's time (t_ps, which may lie inside that cycle: the
 * DMA engine runs on the faster PCIe clock); one presented d cycles later at (cycle + d) x the
 * core period, cycle being the transaction's in.cycle. Its completion is due at the first core
 * edge at or after its time, and at the earliest the cycle after the request. The block's own
 * cycles may run ahead of the transactions' (time never goes back for it, vl_block::advance):
 * the engine counts d from the cycle the request was presented, so a transfer gets the time
 * the C block would give it. */
template <class M> class vl_dma : public vl_hook {
public:
	explicit vl_dma(vl_block<M> &b, const char *block) : b_(b), block_(block)
	{
		b_.pins()->dma_req_ready = 1;
		b_.pins()->dma_cpl_valid = 0;
		b_.hook(this);
	}
	~vl_dma() override { b_.hook(nullptr); }
	/* The next transaction: at in.cycle, arriving at t_ps, with this port (NULL: no DMA). */
	void txn(uint64_t cycle, uint64_t t_ps, hm_dma *port)
	{
		cycle_ = cycle;
		t_ps_ = t_ps;
		port_ = port;
	}
	void begin(uint64_t cyc) override { base_ = cyc; }
	void drive(uint64_t cyc) override
	{
		M *p = b_.pins();
		size_t best = pend_.size();

		for (size_t i = 0; i < pend_.size(); i++)
			if (pend_[i].due <= cyc && (best == pend_.size() || pend_[i].due < pend_[best].due ||
						    (pend_[i].due == pend_[best].due &&
						     pend_[i].seq < pend_[best].seq)))
				best = i;
		shown_ = best;
		p->dma_cpl_valid = best < pend_.size();
		if (best < pend_.size()) {
			p->dma_cpl_tag = pend_[best].tag;
			p->dma_cpl_write = pend_[best].write;
			p->dma_cpl_err = pend_[best].err;
			p->dma_cpl_time = pend_[best].time;
		}
	}
	void sample() override
	{
		M *p = b_.pins();

		req_ = p->dma_req_valid && p->dma_req_ready;
		cpl_ = p->dma_cpl_valid && p->dma_cpl_ready;
		if (req_)
			x_ = hm_dma_xfer{ (bool)p->dma_req_write, (uint32_t)p->dma_req_tag,
					  (uint64_t)p->dma_req_addr, (uint32_t)p->dma_req_off,
					  (uint32_t)p->dma_req_len, 0, 0, 0 };
	}
	void edge(uint64_t cyc) override
	{
		if (cpl_) {
			pend_.erase(pend_.begin() + (long)shown_);
			cpl_ = false;
		}
		if (req_)
			issue(cyc);
		req_ = false;
	}
	uint64_t next_due() override
	{
		uint64_t q = UINT64_MAX;

		for (const pending &c : pend_)
			q = c.due < q ? c.due : q;
		return q;
	}

private:
	struct pending {
		uint64_t due, seq;
		uint32_t tag;
		bool write, err;
		uint64_t time;
	};
	/* The request sampled before the edge that ends block cycle cyc. */
	void issue(uint64_t cyc)
	{
		uint64_t per = b_.period_ps(), d = cyc - base_, due;

		SIM_ASSERT(port_ != nullptr, "sim/vl/%s: a DMA request outside a transaction", block_);
		SIM_ASSERT(cyc >= base_, "sim/vl/%s: a DMA request before its transaction", block_);
		x_.issue_ps = d ? (cycle_ + d) * per : t_ps_;
		hm_dma_do(port_, &x_);
		due = (x_.done_ps + per - 1) / per;
		if (due < cycle_ + d + 1)
			due = cycle_ + d + 1;
		pend_.push_back(pending{ due + (base_ - cycle_), seq_++, x_.tag, x_.write, x_.err != 0,
					 x_.done_ps });
	}

	vl_block<M> &b_;
	const char *block_;
	uint64_t cycle_ = 0, t_ps_ = 0, base_ = 0, seq_ = 0;
	hm_dma *port_ = nullptr;
	bool req_ = false, cpl_ = false;
	size_t shown_ = 0;
	hm_dma_xfer x_{};
	std::vector<pending> pend_;
};

#endif
