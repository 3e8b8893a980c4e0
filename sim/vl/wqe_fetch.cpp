/* Transactor of rtl/wqe_fetch.sv: the wqe_fetch port (model/twin.h) as pin activity. GET,
 * PREFETCH and CHECK are one request each (req_op 0, 1, 2). The block's DMA port is served by
 * vl_dma (sim/vl/vl.h): a window's read goes to sim/pcie through the transaction's struct
 * hm_dma, at the time the C block would issue it, and its completion comes back on the pins when
 * it is due; the block is skipped while it waits for it. HCASIM_RTL_BUG=wqe_fetch selects a
 * variant Verilated with HCA_RTL_BUG (the next window is read from one WQE too far;
 * testbench/test_rtl_blocks.c). */
#include "sim/vl/vl.h"

#include "Vwqe_fetch.h"
#include "Vwqe_fetch_bug.h"

namespace {

enum { OP_GET = 0, OP_PREFETCH = 1, OP_CHECK = 2 };

/* The longest a transaction waits for its answer, in cycles: a read's completion. */
constexpr uint64_t MAX_CYCLES = 1000000;

struct fetch_rtl_base {
	virtual ~fetch_rtl_base() {}
	virtual void fetch(const hm_wqe_fetch_in *in, hm_wqe_fetch_out *out) = 0;
	virtual void check(const hm_wqe_check_in *in, hm_wqe_check_out *out) = 0;
	virtual const char *waves() = 0;
	virtual void waves_start(const char *dir) = 0;
};

template <class M> struct fetch_rtl : fetch_rtl_base {
	vl_block<M> vl;
	vl_dma<M> dma;
	fetch_rtl(hm_dev *d) : vl(d, "wqe_fetch"), dma(vl, "wqe_fetch") { vl.reset(2, 0); }

	const char *waves() override { return vl.waves_path(); }
	void waves_start(const char *dir) override { vl.waves_in(dir); }

	void fetch(const hm_wqe_fetch_in *in, hm_wqe_fetch_out *out) override
	{
		M *p = vl.pins();

		p->req_op = in->op == HM_FETCH_PREFETCH ? OP_PREFETCH : OP_GET;
		p->req_cycle = in->cycle;
		p->req_time = in->t_ps;
		p->req_idx = in->idx;
		p->req_busy = in->busy;
		p->req_sq_pi = in->sq_pi;
		p->req_sq_entries = in->sq_entries;
		p->req_sq_stride = in->sq_stride;
		p->req_sq = in->sq;
		p->req_prefetch = in->prefetch;
		p->req_win_lo = in->win.lo;
		p->req_win_fetched = in->win.fetched;
		p->req_win_err = in->win.err;
		p->req_win_ready = in->win.ready;
		hm_dma_begin(in->dma);
		dma.txn(in->cycle, in->t_ps, in->dma);
		*out = hm_wqe_fetch_out{};
		out->cycle = in->cycle + vl.transact(in->cycle, MAX_CYCLES, [&](M *q) {
				     out->result = q->resp_result;
				     out->decoded = q->resp_decoded;
				     out->reads = q->resp_reads;
				     out->win.lo = q->resp_win_lo;
				     out->win.fetched = q->resp_win_fetched;
				     out->win.err = q->resp_win_err;
				     out->win.ready = q->resp_win_ready;
			     });
		dma.txn(0, 0, nullptr);
	}

	void check(const hm_wqe_check_in *in, hm_wqe_check_out *out) override
	{
		M *p = vl.pins();

		p->req_op = OP_CHECK;
		p->req_cycle = in->cycle;
		p->req_qp_type = in->qp_type & 0xf;
		p->req_sq_stride = in->sq_stride;
		p->req_mtu = in->mtu;
		p->req_nports = in->nports;
		p->req_opcode = in->opcode;
		p->req_flags = in->flags;
		p->req_num_sge = in->num_sge;
		p->req_inline_len = in->inline_len;
		for (unsigned i = 0; i < HM_WQE_MAX_SGE; i++)
			p->req_sge_len[i] = in->sge_len[i]; /* entry i: bits [32 i +: 32] */
		p->req_ud_remote_qpn = in->ud_remote_qpn;
		p->req_ud_sl = in->ud_sl;
		p->req_ud_port = in->ud_port;
		p->req_ud_flow_label = in->ud_flow_label;
		*out = hm_wqe_check_out{};
		out->cycle = in->cycle + vl.transact(in->cycle, 2, [&](M *q) {
				     out->status = q->resp_status;
				     out->verr = q->resp_verr;
				     out->len = q->resp_len;
			     });
	}
};

void *create(hm_dev *d, uint32_t nqps)
{
	(void)nqps; /* no per-QP state: the window is the QP's context */
	if (vl_rtl_bug("wqe_fetch"))
		return static_cast<fetch_rtl_base *>(new fetch_rtl<Vwqe_fetch_bug>(d));
	return static_cast<fetch_rtl_base *>(new fetch_rtl<Vwqe_fetch>(d));
}

fetch_rtl_base *of(void *b)
{
	return static_cast<fetch_rtl_base *>(b);
}

void destroy(void *b)
{
	delete of(b);
}

void fetch(void *b, const hm_wqe_fetch_in *in, hm_wqe_fetch_out *out)
{
	of(b)->fetch(in, out);
}

void check(void *b, const hm_wqe_check_in *in, hm_wqe_check_out *out)
{
	of(b)->check(in, out);
}

const char *waves(void *b)
{
	return of(b)->waves();
}

void waves_start(void *b, const char *dir)
{
	of(b)->waves_start(dir);
}

const hm_wqe_fetch_ops ops = { { create, destroy, waves, waves_start, 0, nullptr, nullptr },
			       fetch, check };

} // namespace

extern "C" {
__attribute__((constructor)) static void vl_wqe_fetch_register(void)
{
	hm_twin_register(HM_TWIN_WQE_FETCH, &ops);
}
}
