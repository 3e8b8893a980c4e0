/* Transactor of rtl/resp_fe.sv: the resp_fe port (model/twin.h) as pin activity. CHECK is one
 * request per received packet: the packet, the QP's responder context and the key table's
 * entry of the request's rkey go in as pins; the verdict comes back a cycle after the request
 * is taken (the key stage's registered answer). HCASIM_RTL_BUG=resp_fe selects a variant
 * Verilated with HCA_RTL_BUG (a deliberate bug that lockstep must catch;
 * testbench/test_rtl_blocks.c). */
#include "sim/vl/vl.h"

#include "Vresp_fe.h"
#include "Vresp_fe_bug.h"

namespace {

struct resp_fe_rtl_base {
	virtual ~resp_fe_rtl_base() {}
	virtual void check(const hm_resp_fe_in *in, hm_resp_fe_out *out) = 0;
	virtual const char *waves() = 0;
	virtual void waves_start(const char *dir) = 0;
};

/* The packet's and the QP's pins. */
template <class M> void pins_pkt_qp(M *p, const hm_resp_fe_in *in)
{
	p->req_pos = in->pos & 3u;
	p->req_cls = in->cls & 15u;
	p->req_psn = in->psn & HCA_PSN_MASK;
	p->req_paylen = in->paylen;
	p->req_reth_va = in->reth_va;
	p->req_reth_rkey = in->reth_rkey;
	p->req_reth_len = in->reth_len;
	p->req_atomic_va = in->atomic_va;
	p->req_atomic_rkey = in->atomic_rkey;
	p->req_pkt_srqn = in->pkt_srqn & HCA_QPN_MASK;
	p->req_qp_type = in->qp_type & 15u;
	p->req_qpn = in->qpn & HCA_QPN_MASK;
	p->req_qp_access = in->qp_access;
	p->req_epsn = in->epsn & HCA_PSN_MASK;
	p->req_nak_sent = in->nak_sent;
	p->req_in_msg = in->in_msg;
	p->req_uc_drop = in->uc_drop;
	p->req_msg_write = in->msg_write;
	p->req_wr_va = in->wr_va;
	p->req_wr_rkey = in->wr_rkey;
	p->req_wr_left = in->wr_left;
	p->req_xrc_srqn = in->xrc_srqn & HCA_QPN_MASK;
	p->req_qp_xrcd = in->qp_xrcd;
	p->req_srq_xrcd = in->srq_xrcd;
}

/* The key stage's pins. */
template <class M> void pins_key(M *p, const hm_resp_fe_in *in)
{
	const hm_mkey_ctx *k = &in->key;

	p->req_pdn = in->pdn;
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
}

template <class M> struct resp_fe_rtl : resp_fe_rtl_base {
	vl_block<M> vl;
	explicit resp_fe_rtl(hm_dev *d) : vl(d, "resp_fe")
	{
		vl.reset(2, 0);
	}

	const char *waves() override { return vl.waves_path(); }
	void waves_start(const char *dir) override { vl.waves_in(dir); }

	void check(const hm_resp_fe_in *in, hm_resp_fe_out *out) override
	{
		M *p = vl.pins();
		uint64_t lat;

		pins_pkt_qp(p, in);
		pins_key(p, in);
		*out = hm_resp_fe_out{};
		lat = vl.transact(in->cycle, HM_RESP_FE_LATENCY, [&](M *q) {
			out->verdict = q->resp_verdict;
			out->kind = q->resp_kind;
			out->psn_cls = q->resp_psn_cls;
			out->send_nak = q->resp_send_nak;
			out->nak_sent = q->resp_nak_sent;
			out->key = q->resp_key;
			out->iova = q->resp_iova;
		});
		out->cycle = in->cycle + lat;
	}
};

void *create(hm_dev *d, uint32_t nqps)
{
	(void)nqps;
	if (vl_rtl_bug("resp_fe"))
		return static_cast<resp_fe_rtl_base *>(new resp_fe_rtl<Vresp_fe_bug>(d));
	return static_cast<resp_fe_rtl_base *>(new resp_fe_rtl<Vresp_fe>(d));
}

void destroy(void *b)
{
	delete static_cast<resp_fe_rtl_base *>(b);
}

void check(void *b, const hm_resp_fe_in *in, hm_resp_fe_out *out)
{
	static_cast<resp_fe_rtl_base *>(b)->check(in, out);
}

const char *waves(void *b)
{
	return static_cast<resp_fe_rtl_base *>(b)->waves();
}

void waves_start(void *b, const char *dir)
{
	static_cast<resp_fe_rtl_base *>(b)->waves_start(dir);
}

const hm_resp_fe_ops ops = { { create, destroy, waves, waves_start, 0, nullptr, nullptr }, check };

} // namespace

extern "C" {
__attribute__((constructor)) static void vl_resp_fe_register(void)
{
	hm_twin_register(HM_TWIN_RESP_FE, &ops);
}
}
