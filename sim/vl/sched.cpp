/* Transactor of rtl/sched.sv: the sched port (model/twin.h) as pin activity. DOORBELL, PUSH
 * and POP are one request each (req_op 0, 1, 2); the doorbell's verdict comes req_lat cycles
 * after it is taken, PUSH and POP answer HM_SCHED_PIPELINE cycles after. A request may wait
 * for the operations still in the block's pipeline (its hazard tracking): at most
 * HM_SCHED_PIPELINE cycles. HCASIM_RTL_BUG=sched selects a variant Verilated with HCA_RTL_BUG
 * (a POP that does not wait for an enqueue in flight; testbench/test_rtl_blocks.c). */
#include "sim/vl/vl.h"

#include "Vsched.h"
#include "Vsched_bug.h"

/* The RTL's RAM depth (rtl/sched.sv NQP, its default): every 24-bit QPN, and two more so
 * that HCA_FIRST_QPN + the configuration's largest hca.max_qp fits. */
constexpr uint32_t RTL_NQP = (1u << 24) + 2;

namespace {

enum { OP_DOORBELL = 0, OP_PUSH = 1, OP_POP = 2 };

struct sched_rtl_base {
	virtual ~sched_rtl_base() {}
	virtual void doorbell(const hm_sched_db_in *in, hm_sched_db_out *out) = 0;
	virtual void push(const hm_sched_push_in *in, hm_sched_push_out *out) = 0;
	virtual void pop(const hm_sched_pop_in *in, hm_sched_pop_out *out) = 0;
	virtual const char *waves() = 0;
	virtual void waves_start(const char *dir) = 0;
};

template <class M> struct sched_rtl : sched_rtl_base {
	vl_block<M> vl;
	sched_rtl(hm_dev *d, uint32_t nqps) : vl(d, "sched")
	{
		vl.pins()->cfg_nqp = nqps;
		vl.reset(2, 0); /* the RAMs are empty after it: no sweep */
	}

	const char *waves() override { return vl.waves_path(); }
	void waves_start(const char *dir) override { vl.waves_in(dir); }

	void inputs(unsigned op, uint32_t qpn)
	{
		M *p = vl.pins();

		p->req_op = op;
		p->req_qpn = qpn & HCA_QPN_MASK;
		p->req_lat = 0;
		p->req_pi16 = 0;
		p->req_state = 0;
		p->req_sq_pi = 0;
		p->req_sq_done = 0;
		p->req_sq_entries = 0;
	}

	void doorbell(const hm_sched_db_in *in, hm_sched_db_out *out) override
	{
		M *p = vl.pins();
		uint64_t k;

		SIM_ASSERT(in->state < HCA_QPS_COUNT, "sim/vl/sched: doorbell with QP state %u",
			   (unsigned)in->state);
		inputs(OP_DOORBELL, in->qpn);
		p->req_lat = in->lat;
		p->req_pi16 = in->pi16;
		p->req_state = in->state;
		p->req_sq_pi = in->sq_pi;
		p->req_sq_done = in->sq_done;
		p->req_sq_entries = in->sq_entries;
		*out = hm_sched_db_out{};
		k = vl.transact(in->cycle, (uint64_t)in->lat + HM_SCHED_PIPELINE + 1, [&](M *q) {
			out->verdict = q->resp_verdict;
			out->new_pi = q->resp_new_pi;
		});
		out->cycle = in->cycle + k;
	}

	void push(const hm_sched_push_in *in, hm_sched_push_out *out) override
	{
		uint64_t k;

		inputs(OP_PUSH, in->qpn);
		*out = hm_sched_push_out{};
		k = vl.transact(in->cycle, HM_SCHED_PIPELINE + 1,
				[&](M *q) { out->queued = q->resp_queued; });
		out->cycle = in->cycle + k;
	}

	void pop(const hm_sched_pop_in *in, hm_sched_pop_out *out) override
	{
		uint64_t k;

		inputs(OP_POP, 0);
		*out = hm_sched_pop_out{};
		k = vl.transact(in->cycle, HM_SCHED_PIPELINE + 1, [&](M *q) {
			out->valid = q->resp_pop_valid;
			out->qpn = q->resp_qpn;
		});
		out->cycle = in->cycle + k;
	}
};

void *create(hm_dev *d, uint32_t nqps)
{
	/* The RAMs hold every QPN the configuration allows (max_nqps, checked at boot by
	 * hm_twin_check); the device's count is set at reset. */
	SIM_ASSERT(nqps <= RTL_NQP, "%u QPNs for an arbiter of %u: hm_twin_check refuses this",
		   nqps, (unsigned)RTL_NQP);
	if (vl_rtl_bug("sched"))
		return static_cast<sched_rtl_base *>(new sched_rtl<Vsched_bug>(d, nqps));
	return static_cast<sched_rtl_base *>(new sched_rtl<Vsched>(d, nqps));
}

sched_rtl_base *of(void *b)
{
	return static_cast<sched_rtl_base *>(b);
}

void destroy(void *b)
{
	delete of(b);
}

void doorbell(void *b, const hm_sched_db_in *in, hm_sched_db_out *out)
{
	of(b)->doorbell(in, out);
}

void push(void *b, const hm_sched_push_in *in, hm_sched_push_out *out)
{
	of(b)->push(in, out);
}

void pop(void *b, const hm_sched_pop_in *in, hm_sched_pop_out *out)
{
	of(b)->pop(in, out);
}

const char *waves(void *b)
{
	return of(b)->waves();
}

void waves_start(void *b, const char *dir)
{
	of(b)->waves_start(dir);
}

const hm_sched_ops ops = { { create, destroy, waves, waves_start, RTL_NQP, "RTL arbiter", nullptr },
			   doorbell, push, pop };

} // namespace

extern "C" {
__attribute__((constructor)) static void vl_sched_register(void)
{
	hm_twin_register(HM_TWIN_SCHED, &ops);
}
}
