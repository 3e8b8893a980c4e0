/* Transactor of rtl/mkey.sv: the mkey port (model/twin.h) as pin activity. CHECK is one
 * request: the access and the key table's entry its key names go in as pins; the result and
 * the device address come back a cycle after the request is taken (a registered answer).
 * HCASIM_RTL_BUG=mkey selects a variant Verilated with HCA_RTL_BUG (a deliberate bug that
 * lockstep must catch; testbench/test_rtl_blocks.c). */
#include "sim/vl/vl.h"

#include "Vmkey.h"
#include "Vmkey_bug.h"

namespace {

struct mkey_rtl_base {
	virtual ~mkey_rtl_base() {}
	virtual void check(const hm_mkey_in *in, hm_mkey_out *out) = 0;
	virtual const char *waves() = 0;
	virtual void waves_start(const char *dir) = 0;
};

template <class M> struct mkey_rtl : mkey_rtl_base {
	vl_block<M> vl;
	explicit mkey_rtl(hm_dev *d) : vl(d, "mkey")
	{
		vl.reset(2, 0);
	}

	const char *waves() override { return vl.waves_path(); }
	void waves_start(const char *dir) override { vl.waves_in(dir); }

	void check(const hm_mkey_in *in, hm_mkey_out *out) override
	{
		M *p = vl.pins();
		const hm_mkey_ctx *k = &in->ctx;
		uint64_t lat;

		p->req_remote = in->remote;
		p->req_key = in->key;
		p->req_pdn = in->pdn;
		p->req_qpn = in->qpn & HCA_QPN_MASK;
		p->req_va = in->va;
		p->req_len = in->len;
		p->req_access = in->access;
		p->req_nkeys = in->nkeys;
		p->req_ctx_valid = k->valid;
		p->req_ctx_variant = k->variant;
		p->req_ctx_mw_type = k->mw_type & 3u;
		p->req_ctx_bound = k->bound;
		p->req_ctx_pdn = k->pdn;
		p->req_ctx_access = k->access;
		p->req_ctx_qpn = k->qpn & HCA_QPN_MASK;
		p->req_ctx_va = k->va;
		p->req_ctx_len = k->len;
		p->req_ctx_iova = k->iova;
		*out = hm_mkey_out{};
		lat = vl.transact(in->cycle, HM_MKEY_LATENCY, [&](M *q) {
			out->result = q->resp_result;
			out->iova = q->resp_iova;
		});
		out->cycle = in->cycle + lat;
	}
};

void *create(hm_dev *d, uint32_t nqps)
{
	(void)nqps;
	if (vl_rtl_bug("mkey"))
		return static_cast<mkey_rtl_base *>(new mkey_rtl<Vmkey_bug>(d));
	return static_cast<mkey_rtl_base *>(new mkey_rtl<Vmkey>(d));
}

void destroy(void *b)
{
	delete static_cast<mkey_rtl_base *>(b);
}

void check(void *b, const hm_mkey_in *in, hm_mkey_out *out)
{
	static_cast<mkey_rtl_base *>(b)->check(in, out);
}

const char *waves(void *b)
{
	return static_cast<mkey_rtl_base *>(b)->waves();
}

void waves_start(void *b, const char *dir)
{
	static_cast<mkey_rtl_base *>(b)->waves_start(dir);
}

const hm_mkey_ops ops = { { create, destroy, waves, waves_start, 0, nullptr, nullptr }, check };

} // namespace

extern "C" {
__attribute__((constructor)) static void vl_mkey_register(void)
{
	hm_twin_register(HM_TWIN_MKEY, &ops);
}
}
