/* Transactor of rtl/psn.sv: the psn port (model/twin.h) as pin activity. CLASSIFY is one
 * request, answered in its cycle. */
#include "sim/vl/vl.h"

#include "Vpsn.h"

namespace {

void *create(hm_dev *d, uint32_t nqps)
{
	(void)nqps;
	vl_block<Vpsn> *v = new vl_block<Vpsn>(d, "psn");

	v->reset(2, 0);
	return v;
}

void destroy(void *b)
{
	delete static_cast<vl_block<Vpsn> *>(b);
}

void classify(void *b, const hm_psn_in *in, hm_psn_out *out)
{
	vl_block<Vpsn> *v = static_cast<vl_block<Vpsn> *>(b);
	Vpsn *p = v->pins();
	uint64_t k;

	p->req_psn = in->psn & HCA_PSN_MASK;
	p->req_epsn = in->epsn & HCA_PSN_MASK;
	p->req_nak_sent = in->nak_sent;
	*out = hm_psn_out{};
	k = v->transact(in->cycle, 1, [&](Vpsn *q) {
		out->cls = q->resp_cls;
		out->send_nak = q->resp_send_nak;
		out->nak_sent = q->resp_nak_sent;
	});
	out->cycle = in->cycle + k;
}

const char *waves(void *b)
{
	return static_cast<vl_block<Vpsn> *>(b)->waves_path();
}

void waves_start(void *b, const char *dir)
{
	static_cast<vl_block<Vpsn> *>(b)->waves_in(dir);
}

const hm_psn_ops ops = { { create, destroy, waves, waves_start, 0, nullptr, nullptr }, classify };

} // namespace

extern "C" {
__attribute__((constructor)) static void vl_psn_register(void)
{
	hm_twin_register(HM_TWIN_PSN, &ops);
}
}
