/* Transactor of rtl/timers.sv: the timers port (model/twin.h) as pin activity. SET and EXPIRE
 * are one request each (req_op 0, 1), answered HM_TIMERS_LATENCY cycles after they are taken.
 * Between transactions the block says when it next has work (quiet_until: its next expiry,
 * when it sweeps for the one after), so an idle block with armed timers costs nothing until
 * then. HCASIM_RTL_BUG=timers selects a variant Verilated with HCA_RTL_BUG (a restart to a
 * later expiry keeps the earlier one; testbench/test_rtl_blocks.c). */
#include "sim/vl/vl.h"

#include "Vtimers.h"
#include "Vtimers_bug.h"

/* The RTL's RAM depth in QPNs (rtl/timers.sv NQP, its default): every 24-bit QPN, and two more
 * so that HCA_FIRST_QPN + the configuration's largest hca.max_qp fits. */
constexpr uint32_t RTL_NQP = (1u << 24) + 2;

namespace {

enum { OP_SET = 0, OP_EXPIRE = 1 };

struct timers_rtl_base {
	virtual ~timers_rtl_base() {}
	virtual void set(const hm_timers_set_in *in, hm_timers_set_out *out) = 0;
	virtual void expire(const hm_timers_expire_in *in, hm_timers_expire_out *out) = 0;
	virtual const char *waves() = 0;
	virtual void waves_start(const char *dir) = 0;
};

template <class M> struct timers_rtl : timers_rtl_base {
	vl_block<M> vl;
	timers_rtl(hm_dev *d) : vl(d, "timers") { vl.reset(2, 0); }

	const char *waves() override { return vl.waves_path(); }
	void waves_start(const char *dir) override { vl.waves_in(dir); }

	/* One request; returns the answer's cycle, *hit and *at from its pins. */
	uint64_t request(uint64_t cycle, unsigned op, uint32_t qpn, uint8_t kind, bool arm,
			 uint64_t at, bool *hit, uint64_t *resp_at)
	{
		M *p = vl.pins();

		SIM_ASSERT(kind <= 1, "sim/vl/timers: timer kind %u", (unsigned)kind);
		p->req_op = op;
		p->req_qpn = qpn & HCA_QPN_MASK;
		p->req_kind = kind;
		p->req_arm = arm;
		p->req_at = at;
		p->req_cycle = cycle;
		return cycle + vl.transact(cycle, HM_TIMERS_LATENCY + 1, [&](M *q) {
			       *hit = q->resp_hit;
			       *resp_at = q->resp_at;
		       });
	}

	void set(const hm_timers_set_in *in, hm_timers_set_out *out) override
	{
		*out = hm_timers_set_out{};
		out->cycle = request(in->cycle, OP_SET, in->qpn, in->kind, in->arm, in->at,
				     &out->was_armed, &out->was_at);
	}

	void expire(const hm_timers_expire_in *in, hm_timers_expire_out *out) override
	{
		*out = hm_timers_expire_out{};
		out->cycle = request(in->cycle, OP_EXPIRE, in->qpn, in->kind, false, 0, &out->fired,
				     &out->at);
	}
};

void *create(hm_dev *d, uint32_t nqps)
{
	SIM_ASSERT(nqps <= RTL_NQP, "%u QPNs for timers of %u: hm_twin_check refuses this", nqps,
		   (unsigned)RTL_NQP);
	if (vl_rtl_bug("timers"))
		return static_cast<timers_rtl_base *>(new timers_rtl<Vtimers_bug>(d));
	return static_cast<timers_rtl_base *>(new timers_rtl<Vtimers>(d));
}

timers_rtl_base *of(void *b)
{
	return static_cast<timers_rtl_base *>(b);
}

void destroy(void *b)
{
	delete of(b);
}

void set(void *b, const hm_timers_set_in *in, hm_timers_set_out *out)
{
	of(b)->set(in, out);
}

void expire(void *b, const hm_timers_expire_in *in, hm_timers_expire_out *out)
{
	of(b)->expire(in, out);
}

const char *waves(void *b)
{
	return of(b)->waves();
}

void waves_start(void *b, const char *dir)
{
	of(b)->waves_start(dir);
}

const hm_timers_ops ops = { { create, destroy, waves, waves_start, RTL_NQP, "RTL timers", nullptr },
			    set, expire };

} // namespace

extern "C" {
__attribute__((constructor)) static void vl_timers_register(void)
{
	hm_twin_register(HM_TWIN_TIMERS, &ops);
}
}
