/* Transactor of rtl/sched.sv: the sched port (model/twin.h) as pin activity. DOORBELL, PUSH
 * and POP are one request each (req_op 0, 1, 2); the doorbell's verdict comes req_lat cycles
 * after it is taken, PUSH and POP answer HM_SCHED_PIPELINE cycles after. A request may wait
 * for the operations still in the block's pipeline (its hazard tracking): at most
 * HM_SCHED_PIPELINE cycles. */
#include "sim/vl/vl.h"

#include "Vsched.h"

/* The RTL's RAM depth (rtl/sched.sv NQP, its default): every 24-bit QPN, and two more so
 * that HCA_FIRST_QPN + the configuration's largest hca.max_qp fits. */
constexpr uint32_t RTL_NQP = (1u << 24) + 2;

namespace {

struct sched_rtl {
	vl_block<Vsched> vl;
	uint32_t nqps;
	sched_rtl(hm_dev *d, uint32_t n) : vl(d, "sched"), nqps(n) {}
};

enum { OP_DOORBELL = 0, OP_PUSH = 1, OP_POP = 2 };

void *create(hm_dev *d, uint32_t nqps)
{
	/* The RAMs hold every QPN the configuration allows (max_nqps, checked at boot by
	 * hm_twin_check); the device's count is set at reset, and they are empty after it. */
	SIM_ASSERT(nqps <= RTL_NQP, "%u QPNs for an arbiter of %u: hm_twin_check refuses this",
		   nqps, (unsigned)RTL_NQP);
	sched_rtl *s = new sched_rtl(d, nqps);

	s->vl.pins()->cfg_nqp = nqps;
	s->vl.reset(2, 0);
	return s;
}

void destroy(void *b)
{
	delete static_cast<sched_rtl *>(b);
}

void idle_inputs(Vsched *p, unsigned op, uint32_t qpn)
{
	p->req_op = op;
	p->req_qpn = qpn & HCA_QPN_MASK;
	p->req_lat = 0;
	p->req_pi16 = 0;
	p->req_state = 0;
	p->req_sq_pi = 0;
	p->req_sq_done = 0;
	p->req_sq_entries = 0;
}

void doorbell(void *b, const hm_sched_db_in *in, hm_sched_db_out *out)
{
	sched_rtl *s = static_cast<sched_rtl *>(b);
	Vsched *p = s->vl.pins();
	uint64_t k;

	SIM_ASSERT(in->state < HCA_QPS_COUNT, "sim/vl/sched: doorbell with QP state %u",
		   (unsigned)in->state);
	idle_inputs(p, OP_DOORBELL, in->qpn);
	p->req_lat = in->lat;
	p->req_pi16 = in->pi16;
	p->req_state = in->state;
	p->req_sq_pi = in->sq_pi;
	p->req_sq_done = in->sq_done;
	p->req_sq_entries = in->sq_entries;
	*out = hm_sched_db_out{};
	k = s->vl.transact(in->cycle, (uint64_t)in->lat + HM_SCHED_PIPELINE + 1, [&](Vsched *q) {
		out->verdict = q->resp_verdict;
		out->new_pi = q->resp_new_pi;
	});
	out->cycle = in->cycle + k;
}

void push(void *b, const hm_sched_push_in *in, hm_sched_push_out *out)
{
	sched_rtl *s = static_cast<sched_rtl *>(b);
	uint64_t k;

	idle_inputs(s->vl.pins(), OP_PUSH, in->qpn);
	*out = hm_sched_push_out{};
	k = s->vl.transact(in->cycle, HM_SCHED_PIPELINE + 1,
			   [&](Vsched *q) { out->queued = q->resp_queued; });
	out->cycle = in->cycle + k;
}

void pop(void *b, const hm_sched_pop_in *in, hm_sched_pop_out *out)
{
	sched_rtl *s = static_cast<sched_rtl *>(b);
	uint64_t k;

	idle_inputs(s->vl.pins(), OP_POP, 0);
	*out = hm_sched_pop_out{};
	k = s->vl.transact(in->cycle, HM_SCHED_PIPELINE + 1, [&](Vsched *q) {
		out->valid = q->resp_pop_valid;
		out->qpn = q->resp_qpn;
	});
	out->cycle = in->cycle + k;
}

const char *waves(void *b)
{
	return static_cast<sched_rtl *>(b)->vl.waves_path();
}

void waves_start(void *b, const char *dir)
{
	static_cast<sched_rtl *>(b)->vl.waves_in(dir);
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
