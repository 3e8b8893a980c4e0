/* The RTL blocks as SystemC modules and their transactors (sc_blocks.h). The pin protocol is
 * that of sim/vl/vl.h (docs/rtl.md "Pin protocol"), each Verilator eval() there being one
 * settle() here; the pins of each block are set and read as in sim/vl/<block>.cpp. */
#include "sim/systemc/sc_blocks.h"

/* The Verilated SystemC models first: verilated.h wants sc_time_stamp() unqualified. */
#include "Vsc_cqe.h"
#include "Vsc_mkey.h"
#include "Vsc_resp_fe.h"
#include "Vsc_psn.h"
#include "Vsc_qpc.h"
#include "Vsc_sched.h"
#include "Vsc_timers.h"

#include "sim/vl/vl.h" /* the C headers (model/twin.h, SIM_ASSERT) as C++ sees them */

#include <cstring>
#include <string>

/* The sched, timers and qpc RTL's RAM depth in QPNs (rtl/sched.sv, timers.sv and qpc.sv NQP,
 * their default; sim/vl/sched.cpp, timers.cpp, qpc.cpp). */
constexpr uint32_t SCHED_RTL_NQP = (1u << 24) + 2;

using sc_core::sc_signal;

namespace hcasim_sc {

namespace {

sc_rtl_blocks *g_blocks;
uint64_t g_transactions, g_deltas;

/* The clocking of one Verilated SC model M (with clk, rst, now, req_valid, req_ready,
 * resp_valid, resp_ready and quiet_until), driven from the calling SC_THREAD as vl_block drives its model
 * (sim/vl/vl.h); cyc_ is the block's own cycle. */
template <class M> class clocked : public sc_core::sc_module {
public:
	clocked(sc_core::sc_module_name name, const char *block)
		: sc_module(name), top(block), clk("clk"), rst("rst"), req_valid("req_valid"),
		  req_ready("req_ready"), resp_valid("resp_valid"), resp_ready("resp_ready"),
		  now("now"), quiet_until("quiet_until"), block_(block)
	{
		top.clk(clk);
		top.rst(rst);
		top.req_valid(req_valid);
		top.req_ready(req_ready);
		top.resp_valid(resp_valid);
		top.resp_ready(resp_ready);
		top.now(now);
		top.quiet_until(quiet_until);
		resp_ready.write(true); /* every answer is taken at once */
	}

	M top;
	sc_signal<bool> clk, rst, req_valid, req_ready, resp_valid, resp_ready;
	sc_signal<uint64_t> now, quiet_until;

	/* The instance for a device: taken by the port's create, given back by destroy. */
	void take(int devno)
	{
		SIM_ASSERT(!in_use_, "hcasim-sc: the %s of device %d is in use already", block_,
			   devno);
		in_use_ = true;
	}
	void give_back() { in_use_ = false; }

	/* Synchronous reset for n cycles, then the block's own work after it (vl_block::reset). */
	void reset(unsigned n, uint64_t max_cycles)
	{
		rst.write(true);
		now.write(0);
		for (unsigned i = 0; i < n; i++)
			edge();
		rst.write(false);
		settle();
		for (uint64_t i = 0; quiet_until.read() == 0; i++) {
			SIM_ASSERT(i < max_cycles, "sim/systemc/%s: still busy %llu cycles after reset",
				   block_, (unsigned long long)max_cycles);
			edge();
		}
		cyc_ = 0;
	}

	/* One transaction (vl_block::transact): the caller has written the request's input
	 * signals; the block is brought to cycle (clocked while it has work, skipped while it has
	 * none), the request held until req_ready, and the block brought to resp_valid (clocked
	 * while it has work, skipped to quiet_until), when capture() reads the outputs; then the
	 * edge that takes the response. Returns the cycles from the acceptance to the response. */
	template <class C> uint64_t transact(uint64_t cycle, uint64_t max_cycles, C capture)
	{
		uint64_t taken;

		advance(cycle);
		req_valid.write(true);
		low();
		for (uint64_t s = 0; !req_ready.read(); s++) {
			SIM_ASSERT(s < max_cycles,
				   "sim/systemc/%s: request not taken %llu cycles after cycle %llu",
				   block_, (unsigned long long)s, (unsigned long long)cycle);
			rise();
			low();
		}
		taken = cyc_;
		if (!resp_valid.read()) {
			rise();
			req_valid.write(false);
			low();
		}
		while (!resp_valid.read()) {
			uint64_t q = quiet_until.read();

			SIM_ASSERT(cyc_ - taken < max_cycles,
				   "sim/systemc/%s: no response %llu cycles after the request at cycle "
				   "%llu",
				   block_, (unsigned long long)(cyc_ - taken), (unsigned long long)cycle);
			if (q > cyc_)
				cyc_ = q < taken + max_cycles ? q : taken + max_cycles;
			else
				rise();
			low();
		}
		capture();
		rise(); /* the response is taken */
		req_valid.write(false);
		g_transactions++;
		return cyc_ - 1 - taken;
	}

private:
	/* The written signals are updated at the end of this delta; the block's eval() runs in
	 * the next one and its outputs are updated at its end: two delta cycles, no time. */
	void settle()
	{
		sc_core::wait(sc_core::SC_ZERO_TIME);
		sc_core::wait(sc_core::SC_ZERO_TIME);
		g_deltas += 2;
	}
	/* cycle cyc_ begins: the clock low, now = cyc_ (vl_block::low) */
	void low()
	{
		clk.write(false);
		now.write(cyc_);
		settle();
	}
	/* its rising edge; then the next cycle is the block's */
	void rise()
	{
		clk.write(true);
		settle();
		cyc_++;
	}
	/* an idle cycle (reset) */
	void edge()
	{
		clk.write(true);
		settle();
		clk.write(false);
		settle();
	}
	/* vl_block::advance */
	void advance(uint64_t c)
	{
		req_valid.write(false);
		while (cyc_ < c) {
			uint64_t q = quiet_until.read();

			if (q > cyc_) {
				cyc_ = q < c ? q : c;
			} else {
				low();
				rise();
			}
		}
	}

	uint64_t cyc_ = 0;
	const char *block_;
	bool in_use_ = false;
};

} // namespace

/* ---- sched ------------------------------------------------------------------------------ */

#define SCHED_PINS(X)                                                                         \
	X(uint32_t, cfg_nqp) X(uint32_t, req_op) X(uint32_t, req_lat) X(uint32_t, req_qpn)    \
	X(uint32_t, req_pi16) X(uint32_t, req_state) X(uint32_t, req_sq_pi)                   \
	X(uint32_t, req_sq_done) X(uint32_t, req_sq_entries) X(uint32_t, resp_op)             \
	X(uint32_t, resp_verdict) X(uint32_t, resp_new_pi) X(bool, resp_queued)               \
	X(bool, resp_pop_valid) X(uint32_t, resp_qpn) X(uint32_t, stat_len)
#define PIN_DECL(t, n) sc_signal<t> n{ #n };
#define PIN_BIND(t, n) top.n(n);

struct sched_block : clocked<Vsc_sched> {
	SCHED_PINS(PIN_DECL)
	sched_block(sc_core::sc_module_name name) : clocked(name, "sched") { SCHED_PINS(PIN_BIND) }
};

/* ---- cqe -------------------------------------------------------------------------------- */

#define CQE_PINS(X)                                                                           \
	X(uint64_t, req_cycle) X(uint32_t, req_lat) X(uint32_t, req_pi) X(uint32_t, req_ci)   \
	X(uint32_t, req_log_size) X(uint32_t, req_arm) X(bool, req_solicited)                 \
	X(bool, req_ci_fresh) X(uint32_t, req_byte_len) X(uint32_t, req_imm_data)             \
	X(uint32_t, req_qpn) X(uint32_t, req_src_qp) X(uint32_t, req_slid)                    \
	X(uint32_t, req_pkey_index) X(uint32_t, req_wqe_index) X(uint32_t, req_opcode)        \
	X(uint32_t, req_status) X(uint32_t, req_sl) X(uint32_t, req_wc_flags)                 \
	X(uint32_t, req_dlid_path_bits) X(uint32_t, req_is_send) X(uint32_t, req_vendor_err)  \
	X(uint32_t, req_srqn) X(uint32_t, resp_action) X(uint32_t, resp_slot)                 \
	X(uint32_t, resp_new_pi) X(uint32_t, resp_new_arm) X(bool, resp_event)                \
	X(uint64_t, resp_cycle) X(sc_dt::sc_bv<512>, resp_image)

struct cqe_block : clocked<Vsc_cqe> {
	CQE_PINS(PIN_DECL)
	cqe_block(sc_core::sc_module_name name) : clocked(name, "cqe") { CQE_PINS(PIN_BIND) }
};

/* ---- psn -------------------------------------------------------------------------------- */

#define PSN_PINS(X)                                                                           \
	X(uint32_t, req_psn) X(uint32_t, req_epsn) X(bool, req_nak_sent) X(uint32_t, resp_cls) \
	X(bool, resp_send_nak) X(bool, resp_nak_sent) X(uint32_t, stat_naks)

struct psn_block : clocked<Vsc_psn> {
	PSN_PINS(PIN_DECL)
	psn_block(sc_core::sc_module_name name) : clocked(name, "psn") { PSN_PINS(PIN_BIND) }
};

/* ---- mkey ------------------------------------------------------------------------------- */

#define MKEY_PINS(X)                                                                          \
	X(bool, req_remote) X(uint32_t, req_key) X(uint32_t, req_pdn) X(uint32_t, req_qpn)    \
	X(uint64_t, req_va) X(uint64_t, req_len) X(uint32_t, req_access)                      \
	X(uint32_t, req_nkeys) X(bool, req_ctx_valid) X(uint32_t, req_ctx_variant)            \
	X(uint32_t, req_ctx_mw_type) X(bool, req_ctx_bound) X(uint32_t, req_ctx_pdn)          \
	X(uint32_t, req_ctx_access) X(uint32_t, req_ctx_qpn) X(uint64_t, req_ctx_va)          \
	X(uint64_t, req_ctx_len) X(uint64_t, req_ctx_iova) X(uint32_t, resp_result)           \
	X(uint64_t, resp_iova) X(uint32_t, stat_checks) X(uint32_t, stat_denied)

struct mkey_block : clocked<Vsc_mkey> {
	MKEY_PINS(PIN_DECL)
	mkey_block(sc_core::sc_module_name name) : clocked(name, "mkey") { MKEY_PINS(PIN_BIND) }
};

/* ---- timers ----------------------------------------------------------------------------- */

#define TIMERS_PINS(X)                                                                        \
	X(bool, req_op) X(uint32_t, req_qpn) X(bool, req_kind) X(bool, req_arm)               \
	X(uint64_t, req_at) X(uint64_t, req_cycle) X(bool, resp_hit) X(uint64_t, resp_at)     \
	X(uint32_t, stat_fired) X(uint32_t, stat_sweeps) X(uint32_t, stat_due)

struct timers_block : clocked<Vsc_timers> {
	TIMERS_PINS(PIN_DECL)
	timers_block(sc_core::sc_module_name name) : clocked(name, "timers") { TIMERS_PINS(PIN_BIND) }
};

/* ---- resp_fe ---------------------------------------------------------------------------- */

#define RESP_FE_PINS(X)                                                                       \
	X(uint32_t, req_pos) X(uint32_t, req_cls) X(uint32_t, req_psn) X(uint32_t, req_paylen) \
	X(uint64_t, req_reth_va) X(uint32_t, req_reth_rkey) X(uint32_t, req_reth_len)         \
	X(uint64_t, req_atomic_va) X(uint32_t, req_atomic_rkey) X(uint32_t, req_pkt_srqn)     \
	X(uint32_t, req_qp_type) X(uint32_t, req_qpn) X(uint32_t, req_qp_access)              \
	X(uint32_t, req_epsn) X(bool, req_nak_sent) X(bool, req_in_msg) X(bool, req_uc_drop)  \
	X(bool, req_msg_write) X(uint64_t, req_wr_va) X(uint32_t, req_wr_rkey)                \
	X(uint32_t, req_wr_left) X(uint32_t, req_xrc_srqn) X(uint32_t, req_qp_xrcd)           \
	X(uint32_t, req_srq_xrcd) X(uint32_t, req_pdn) X(uint32_t, req_nkeys)                 \
	X(bool, req_ctx_valid) X(uint32_t, req_ctx_variant) X(uint32_t, req_ctx_mw_type)      \
	X(bool, req_ctx_bound) X(uint32_t, req_ctx_pdn) X(uint32_t, req_ctx_access)           \
	X(uint32_t, req_ctx_qpn) X(uint64_t, req_ctx_va) X(uint64_t, req_ctx_len)             \
	X(uint64_t, req_ctx_iova) X(uint32_t, resp_verdict) X(uint32_t, resp_kind)            \
	X(uint32_t, resp_psn_cls) X(bool, resp_send_nak) X(bool, resp_nak_sent)               \
	X(uint32_t, resp_key) X(uint64_t, resp_iova) X(uint32_t, stat_checks)                 \
	X(uint32_t, stat_refused) X(uint32_t, stat_seq_naks) X(uint32_t, stat_key_checks)     \
	X(uint32_t, stat_key_denied)

struct resp_fe_block : clocked<Vsc_resp_fe> {
	RESP_FE_PINS(PIN_DECL)
	resp_fe_block(sc_core::sc_module_name name) : clocked(name, "resp_fe")
	{
		RESP_FE_PINS(PIN_BIND)
	}
};

/* ---- qpc -------------------------------------------------------------------------------- */

#define QPC_PINS(X)                                                                           \
	X(uint32_t, req_op) X(uint32_t, req_qpn) X(bool, req_write) X(bool, req_tag)          \
	X(uint32_t, req_entries) X(uint64_t, req_base) X(bool, resp_done) X(bool, resp_hit)   \
	X(bool, resp_evict) X(uint32_t, resp_victim) X(bool, resp_wb) X(uint32_t, resp_dma)   \
	X(bool, resp_dma_tag) X(uint32_t, resp_dma_qpn) X(uint64_t, resp_dma_addr)            \
	X(uint32_t, resp_dma_len) X(uint32_t, stat_hits) X(uint32_t, stat_misses)             \
	X(uint32_t, stat_wbs)

struct qpc_block : clocked<Vsc_qpc> {
	QPC_PINS(PIN_DECL)
	qpc_block(sc_core::sc_module_name name) : clocked(name, "qpc") { QPC_PINS(PIN_BIND) }
};

/* ---- the instances ---------------------------------------------------------------------- */

sc_rtl_blocks::sc_rtl_blocks(sc_core::sc_module_name name, int ndevs) : sc_module(name)
{
	for (int i = 0; i < ndevs; i++) {
		std::string hca = "hca" + std::to_string(i);

		sched.emplace_back(new sched_block((hca + "_sched").c_str()));
		cqe.emplace_back(new cqe_block((hca + "_cqe").c_str()));
		psn.emplace_back(new psn_block((hca + "_psn").c_str()));
		mkey.emplace_back(new mkey_block((hca + "_mkey").c_str()));
		timers.emplace_back(new timers_block((hca + "_timers").c_str()));
		resp_fe.emplace_back(new resp_fe_block((hca + "_resp_fe").c_str()));
		qpc.emplace_back(new qpc_block((hca + "_qpc").c_str()));
	}
}

sc_rtl_blocks::~sc_rtl_blocks() = default;

uint64_t sc_rtl_transactions()
{
	return g_transactions;
}

uint64_t sc_rtl_deltas()
{
	return g_deltas;
}

namespace {

template <class B> B *instance(std::vector<std::unique_ptr<B>> &v, const hm_dev *d)
{
	SIM_ASSERT(g_blocks, "hcasim-sc: no SystemC RTL blocks elaborated");
	SIM_ASSERT(d->devno >= 0 && (size_t)d->devno < v.size(),
		   "hcasim-sc: device %d has no SystemC RTL blocks (%zu devices elaborated; "
		   "hcasim-sc --devs N)",
		   d->devno, v.size());
	B *b = v[(size_t)d->devno].get();
	b->take(d->devno);
	return b;
}

/* sched (sim/vl/sched.cpp) */
enum { OP_DOORBELL = 0, OP_PUSH = 1, OP_POP = 2 };

void *sched_create(hm_dev *d, uint32_t nqps)
{
	/* every QPN the configuration allows; the boot refuses more (hm_twin_check) */
	SIM_ASSERT(nqps <= SCHED_RTL_NQP, "%u QPNs for an arbiter of %u: hm_twin_check refuses this",
		   nqps, (unsigned)SCHED_RTL_NQP);
	sched_block *s = instance(g_blocks->sched, d);

	s->cfg_nqp.write(nqps);
	s->reset(2, 0);
	return s;
}

void sched_destroy(void *b)
{
	static_cast<sched_block *>(b)->give_back();
}

void sched_inputs(sched_block *s, unsigned op, uint32_t qpn)
{
	s->req_op.write(op);
	s->req_qpn.write(qpn & HCA_QPN_MASK);
	s->req_lat.write(0);
	s->req_pi16.write(0);
	s->req_state.write(0);
	s->req_sq_pi.write(0);
	s->req_sq_done.write(0);
	s->req_sq_entries.write(0);
}

void sched_doorbell(void *b, const hm_sched_db_in *in, hm_sched_db_out *out)
{
	sched_block *s = static_cast<sched_block *>(b);
	uint64_t k;

	SIM_ASSERT(in->state < HCA_QPS_COUNT, "sim/systemc/sched: doorbell with QP state %u",
		   (unsigned)in->state);
	sched_inputs(s, OP_DOORBELL, in->qpn);
	s->req_lat.write(in->lat);
	s->req_pi16.write(in->pi16);
	s->req_state.write(in->state);
	s->req_sq_pi.write(in->sq_pi);
	s->req_sq_done.write(in->sq_done);
	s->req_sq_entries.write(in->sq_entries);
	*out = hm_sched_db_out{};
	k = s->transact(in->cycle, (uint64_t)in->lat + HM_SCHED_PIPELINE + 1, [&] {
		out->verdict = (uint8_t)s->resp_verdict.read();
		out->new_pi = s->resp_new_pi.read();
	});
	out->cycle = in->cycle + k;
}

void sched_push(void *b, const hm_sched_push_in *in, hm_sched_push_out *out)
{
	sched_block *s = static_cast<sched_block *>(b);
	uint64_t k;

	sched_inputs(s, OP_PUSH, in->qpn);
	*out = hm_sched_push_out{};
	k = s->transact(in->cycle, HM_SCHED_PIPELINE + 1,
			[&] { out->queued = s->resp_queued.read(); });
	out->cycle = in->cycle + k;
}

void sched_pop(void *b, const hm_sched_pop_in *in, hm_sched_pop_out *out)
{
	sched_block *s = static_cast<sched_block *>(b);
	uint64_t k;

	sched_inputs(s, OP_POP, 0);
	*out = hm_sched_pop_out{};
	k = s->transact(in->cycle, HM_SCHED_PIPELINE + 1, [&] {
		out->valid = s->resp_pop_valid.read();
		out->qpn = s->resp_qpn.read();
	});
	out->cycle = in->cycle + k;
}

const hm_sched_ops sched_ops = { { sched_create, sched_destroy, nullptr, nullptr, SCHED_RTL_NQP,
				   "RTL arbiter", nullptr },
				 sched_doorbell, sched_push, sched_pop };

/* cqe (sim/vl/cqe.cpp) */
void *cqe_create(hm_dev *d, uint32_t nqps)
{
	(void)nqps;
	const char *bug = getenv("HCASIM_RTL_BUG");

	SIM_ASSERT(!bug || !*bug || !std::strcmp(bug, "none"),
		   "HCASIM_RTL_BUG = '%s': hcasim-sc has no RTL built with a test bug", bug);
	cqe_block *c = instance(g_blocks->cqe, d);

	c->reset(2, 0);
	return c;
}

void cqe_destroy(void *b)
{
	static_cast<cqe_block *>(b)->give_back();
}

void cqe_post(void *b, const hm_cqe_in *in, hm_cqe_out *out)
{
	cqe_block *p = static_cast<cqe_block *>(b);
	const hca_cqe *c = &in->cqe;
	uint64_t k;

	SIM_ASSERT(in->log_size < 32 && in->arm <= HCA_CQ_DB_ARM_SOLICITED,
		   "sim/systemc/cqe: log_size %u or arm %u out of range", (unsigned)in->log_size,
		   (unsigned)in->arm);
	p->req_cycle.write(in->cycle);
	p->req_lat.write(in->lat);
	p->req_pi.write(in->pi);
	p->req_ci.write(in->ci);
	p->req_log_size.write(in->log_size);
	p->req_arm.write(in->arm);
	p->req_solicited.write(in->solicited);
	p->req_ci_fresh.write(in->ci_fresh);
	p->req_byte_len.write(c->byte_len);
	p->req_imm_data.write(c->imm_data);
	p->req_qpn.write(c->qpn);
	p->req_src_qp.write(c->src_qp);
	p->req_slid.write(c->slid);
	p->req_pkey_index.write(c->pkey_index);
	p->req_wqe_index.write(c->wqe_index);
	p->req_opcode.write(c->opcode);
	p->req_status.write(c->status);
	p->req_sl.write(c->sl);
	p->req_wc_flags.write(c->wc_flags);
	p->req_dlid_path_bits.write(c->dlid_path_bits);
	p->req_is_send.write(c->is_send);
	p->req_vendor_err.write(c->vendor_err);
	p->req_srqn.write(c->srqn);
	*out = hm_cqe_out{};
	k = p->transact(in->cycle, in->ci_fresh ? 1 : (uint64_t)in->lat + 1, [&] {
		static_assert(sizeof(out->image) == 64, "512-bit image");
		const sc_dt::sc_bv<512> &img = p->resp_image.read();
		uint32_t w[16];

		out->action = (uint8_t)p->resp_action.read();
		out->slot = p->resp_slot.read();
		out->new_pi = p->resp_new_pi.read();
		out->new_arm = (uint8_t)p->resp_new_arm.read();
		out->event = p->resp_event.read();
		/* The image's 32-bit words, least significant first: the CQE's bytes. */
		for (int i = 0; i < 16; i++)
			w[i] = (uint32_t)img.get_word(i);
		std::memcpy(&out->image, w, sizeof(out->image));
	});
	out->cycle = in->cycle + k;
}

const hm_cqe_ops cqe_ops = { { cqe_create, cqe_destroy, nullptr, nullptr, 0, nullptr, nullptr },
			     cqe_post };

/* psn (sim/vl/psn.cpp) */
void *psn_create(hm_dev *d, uint32_t nqps)
{
	(void)nqps;
	psn_block *p = instance(g_blocks->psn, d);

	p->reset(2, 0);
	return p;
}

void psn_destroy(void *b)
{
	static_cast<psn_block *>(b)->give_back();
}

void psn_classify(void *b, const hm_psn_in *in, hm_psn_out *out)
{
	psn_block *p = static_cast<psn_block *>(b);
	uint64_t k;

	p->req_psn.write(in->psn & HCA_PSN_MASK);
	p->req_epsn.write(in->epsn & HCA_PSN_MASK);
	p->req_nak_sent.write(in->nak_sent);
	*out = hm_psn_out{};
	k = p->transact(in->cycle, 1, [&] {
		out->cls = (uint8_t)p->resp_cls.read();
		out->send_nak = p->resp_send_nak.read();
		out->nak_sent = p->resp_nak_sent.read();
	});
	out->cycle = in->cycle + k;
}

const hm_psn_ops psn_ops = { { psn_create, psn_destroy, nullptr, nullptr, 0, nullptr, nullptr },
			     psn_classify };

/* mkey (sim/vl/mkey.cpp) */
void *mkey_create(hm_dev *d, uint32_t nqps)
{
	(void)nqps;
	mkey_block *p = instance(g_blocks->mkey, d);

	p->reset(2, 0);
	return p;
}

/* timers (sim/vl/timers.cpp) */
void *timers_create(hm_dev *d, uint32_t nqps)
{
	SIM_ASSERT(nqps <= SCHED_RTL_NQP, "%u QPNs for timers of %u", nqps, SCHED_RTL_NQP);
	timers_block *p = instance(g_blocks->timers, d);

	p->reset(2, 0);
	return p;
}

void mkey_destroy(void *b)
{
	static_cast<mkey_block *>(b)->give_back();
}

void mkey_check(void *b, const hm_mkey_in *in, hm_mkey_out *out)
{
	mkey_block *p = static_cast<mkey_block *>(b);
	const hm_mkey_ctx *k = &in->ctx;
	uint64_t lat;

	p->req_remote.write(in->remote);
	p->req_key.write(in->key);
	p->req_pdn.write(in->pdn);
	p->req_qpn.write(in->qpn & HCA_QPN_MASK);
	p->req_va.write(in->va);
	p->req_len.write(in->len);
	p->req_access.write(in->access);
	p->req_nkeys.write(in->nkeys);
	p->req_ctx_valid.write(k->valid);
	p->req_ctx_variant.write(k->variant);
	p->req_ctx_mw_type.write(k->mw_type & 3u);
	p->req_ctx_bound.write(k->bound);
	p->req_ctx_pdn.write(k->pdn);
	p->req_ctx_access.write(k->access);
	p->req_ctx_qpn.write(k->qpn & HCA_QPN_MASK);
	p->req_ctx_va.write(k->va);
	p->req_ctx_len.write(k->len);
	p->req_ctx_iova.write(k->iova);
	*out = hm_mkey_out{};
	lat = p->transact(in->cycle, HM_MKEY_LATENCY, [&] {
		out->result = (uint8_t)p->resp_result.read();
		out->iova = p->resp_iova.read();
	});
	out->cycle = in->cycle + lat;
}

const hm_mkey_ops mkey_ops = { { mkey_create, mkey_destroy, nullptr, nullptr, 0, nullptr,
				 nullptr },
			       mkey_check };
void timers_destroy(void *b)
{
	static_cast<timers_block *>(b)->give_back();
}

/* One SET (op 0) or EXPIRE (op 1); returns the answer's cycle. */
uint64_t timers_request(timers_block *p, uint64_t cycle, bool op, uint32_t qpn, uint8_t kind,
			bool arm, uint64_t at, bool *hit, uint64_t *resp_at)
{
	p->req_op.write(op);
	p->req_qpn.write(qpn & HCA_QPN_MASK);
	p->req_kind.write(kind != 0);
	p->req_arm.write(arm);
	p->req_at.write(at);
	p->req_cycle.write(cycle);
	return cycle + p->transact(cycle, HM_TIMERS_LATENCY + 1, [&] {
		       *hit = p->resp_hit.read();
		       *resp_at = p->resp_at.read();
	       });
}

void timers_set(void *b, const hm_timers_set_in *in, hm_timers_set_out *out)
{
	*out = hm_timers_set_out{};
	out->cycle = timers_request(static_cast<timers_block *>(b), in->cycle, false, in->qpn,
				    in->kind, in->arm, in->at, &out->was_armed, &out->was_at);
}

void timers_expire(void *b, const hm_timers_expire_in *in, hm_timers_expire_out *out)
{
	*out = hm_timers_expire_out{};
	out->cycle = timers_request(static_cast<timers_block *>(b), in->cycle, true, in->qpn,
				    in->kind, false, 0, &out->fired, &out->at);
}

const hm_timers_ops timers_ops = { { timers_create, timers_destroy, nullptr, nullptr,
				     SCHED_RTL_NQP, "RTL timers", nullptr },
				   timers_set, timers_expire };

/* resp_fe (sim/vl/resp_fe.cpp) */
void *resp_fe_create(hm_dev *d, uint32_t nqps)
{
	(void)nqps;
	resp_fe_block *p = instance(g_blocks->resp_fe, d);

	p->reset(2, 0);
	return p;
}

void resp_fe_destroy(void *b)
{
	static_cast<resp_fe_block *>(b)->give_back();
}

/* The packet's and the QP's pins. */
void resp_fe_pins(resp_fe_block *p, const hm_resp_fe_in *in)
{
	p->req_pos.write(in->pos & 3u);
	p->req_cls.write(in->cls & 15u);
	p->req_psn.write(in->psn & HCA_PSN_MASK);
	p->req_paylen.write(in->paylen);
	p->req_reth_va.write(in->reth_va);
	p->req_reth_rkey.write(in->reth_rkey);
	p->req_reth_len.write(in->reth_len);
	p->req_atomic_va.write(in->atomic_va);
	p->req_atomic_rkey.write(in->atomic_rkey);
	p->req_pkt_srqn.write(in->pkt_srqn & HCA_QPN_MASK);
	p->req_qp_type.write(in->qp_type & 15u);
	p->req_qpn.write(in->qpn & HCA_QPN_MASK);
	p->req_qp_access.write(in->qp_access);
	p->req_epsn.write(in->epsn & HCA_PSN_MASK);
	p->req_nak_sent.write(in->nak_sent);
	p->req_in_msg.write(in->in_msg);
	p->req_uc_drop.write(in->uc_drop);
	p->req_msg_write.write(in->msg_write);
	p->req_wr_va.write(in->wr_va);
	p->req_wr_rkey.write(in->wr_rkey);
	p->req_wr_left.write(in->wr_left);
	p->req_xrc_srqn.write(in->xrc_srqn & HCA_QPN_MASK);
	p->req_qp_xrcd.write(in->qp_xrcd);
	p->req_srq_xrcd.write(in->srq_xrcd);
}

void resp_fe_check(void *b, const hm_resp_fe_in *in, hm_resp_fe_out *out)
{
	resp_fe_block *p = static_cast<resp_fe_block *>(b);
	const hm_mkey_ctx *k = &in->key;
	uint64_t lat;

	resp_fe_pins(p, in);
	p->req_pdn.write(in->pdn);
	p->req_nkeys.write(in->nkeys);
	p->req_ctx_valid.write(k->valid);
	p->req_ctx_variant.write(k->variant);
	p->req_ctx_mw_type.write(k->mw_type & 3u);
	p->req_ctx_bound.write(k->bound);
	p->req_ctx_pdn.write(k->pdn);
	p->req_ctx_access.write(k->access);
	p->req_ctx_qpn.write(k->qpn & HCA_QPN_MASK);
	p->req_ctx_va.write(k->va);
	p->req_ctx_len.write(k->len);
	p->req_ctx_iova.write(k->iova);
	*out = hm_resp_fe_out{};
	lat = p->transact(in->cycle, HM_RESP_FE_LATENCY, [&] {
		out->verdict = (uint8_t)p->resp_verdict.read();
		out->kind = (uint8_t)p->resp_kind.read();
		out->psn_cls = (uint8_t)p->resp_psn_cls.read();
		out->send_nak = p->resp_send_nak.read();
		out->nak_sent = p->resp_nak_sent.read();
		out->key = (uint8_t)p->resp_key.read();
		out->iova = p->resp_iova.read();
	});
	out->cycle = in->cycle + lat;
}

const hm_resp_fe_ops resp_fe_ops = { { resp_fe_create, resp_fe_destroy, nullptr, nullptr, 0,
				       nullptr, nullptr },
				     resp_fe_check };

/* qpc (sim/vl/qpc.cpp) */
void *qpc_create(hm_dev *d, uint32_t nqps)
{
	SIM_ASSERT(nqps <= SCHED_RTL_NQP, "%u QPNs for a qpc of %u", nqps, SCHED_RTL_NQP);
	qpc_block *p = instance(g_blocks->qpc, d);

	p->reset(2, 0);
	return p;
}

void qpc_destroy(void *b)
{
	static_cast<qpc_block *>(b)->give_back();
}

/* One LOOKUP (0), COMPLETE (1) or FORGET (2); out from the response's signals. */
void qpc_request(qpc_block *p, uint64_t cycle, unsigned op, uint32_t qpn, bool write,
		 uint8_t tag, uint32_t entries, uint64_t base, hm_qpc_out *out)
{
	p->req_op.write(op);
	p->req_qpn.write(qpn & HCA_QPN_MASK);
	p->req_write.write(write);
	p->req_tag.write(tag != 0);
	p->req_entries.write(entries);
	p->req_base.write(base);
	*out = hm_qpc_out{};
	out->cycle = cycle + p->transact(cycle, HM_QPC_HIT_CYCLES + 4, [&] {
			     out->done = p->resp_done.read();
			     out->hit = p->resp_hit.read();
			     out->evict = p->resp_evict.read();
			     out->victim = p->resp_victim.read();
			     out->wb = p->resp_wb.read();
			     out->req = (uint8_t)p->resp_dma.read();
			     out->req_tag = p->resp_dma_tag.read();
			     out->req_qpn = p->resp_dma_qpn.read();
			     out->req_addr = p->resp_dma_addr.read();
			     out->req_len = p->resp_dma_len.read();
		     });
}

void qpc_lookup(void *b, const hm_qpc_in *in, hm_qpc_out *out)
{
	qpc_request(static_cast<qpc_block *>(b), in->cycle, 0, in->qpn, in->write, 0, in->entries,
		    in->base, out);
}

void qpc_complete(void *b, const hm_qpc_cpl_in *in, hm_qpc_out *out)
{
	qpc_request(static_cast<qpc_block *>(b), in->cycle, 1, 0, false, in->tag, 0, 0, out);
}

void qpc_forget(void *b, const hm_qpc_forget_in *in, hm_qpc_forget_out *out)
{
	hm_qpc_out o;

	qpc_request(static_cast<qpc_block *>(b), in->cycle, 2, in->qpn, false, 0, 0, 0, &o);
	*out = hm_qpc_forget_out{};
	out->cycle = o.cycle;
	out->was_cached = o.hit;
}

const hm_qpc_ops qpc_ops = { { qpc_create, qpc_destroy, nullptr, nullptr, SCHED_RTL_NQP,
			       "RTL qpc", nullptr },
			     qpc_lookup, qpc_complete, qpc_forget };

} // namespace

/* A block added to model/twin.def needs its SystemC wrapper here (and in sc_rtl_blocks), or a
 * line saying why not. wqe_fetch has none yet: its DMA port's engine (sim/vl/vl.h vl_dma) is
 * written for the --cc models, so hcasim-sc runs that block through its --cc transactor
 * (sim/vl/wqe_fetch.cpp, registered by the library), still Verilated RTL. */
static_assert(HM_TWIN_COUNT == 8, "sim/systemc: model/twin.def has a block without a SystemC "
				  "wrapper in sc_blocks.cpp");

void sc_rtl_register(sc_rtl_blocks *blocks)
{
	g_blocks = blocks;
	hm_twin_register(HM_TWIN_SCHED, &sched_ops);
	hm_twin_register(HM_TWIN_CQE, &cqe_ops);
	hm_twin_register(HM_TWIN_PSN, &psn_ops);
	hm_twin_register(HM_TWIN_MKEY, &mkey_ops);
	hm_twin_register(HM_TWIN_TIMERS, &timers_ops);
	hm_twin_register(HM_TWIN_RESP_FE, &resp_fe_ops);
	hm_twin_register(HM_TWIN_QPC, &qpc_ops);
}

} // namespace hcasim_sc
