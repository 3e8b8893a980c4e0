/* Transactor of rtl/qpc.sv: the qpc port (model/twin.h) as pin activity. LOOKUP and FORGET are
 * answered HM_QPC_HIT_CYCLES cycles after they are taken; a miss's answer carries the block's
 * first DMA request, and COMPLETE presents a request's completion, answered in its cycle. The
 * caller performs the requests on the PCIe model, at the model's time (model/qpc.c). Between
 * transactions the block is clocked while it moves a hit to the tail of its LRU list, and
 * skipped while it is idle or waits for a completion. HCASIM_RTL_BUG=qpc selects a variant
 * Verilated with HCA_RTL_BUG (a hit leaves the entry where it is in the LRU order;
 * testbench/test_rtl_blocks.c). */
#include "sim/vl/vl.h"

#include "Vqpc.h"
#include "Vqpc_bug.h"

/* The RTL's SRAM depth in QPNs (rtl/qpc.sv NQP, its default): every 24-bit QPN, and two more
 * so that HCA_FIRST_QPN + the configuration's largest hca.max_qp fits. */
constexpr uint32_t RTL_NQP = (1u << 24) + 2;

namespace {

enum { OP_LOOKUP = 0, OP_CPL = 1, OP_FORGET = 2 };

struct qpc_rtl_base {
	virtual ~qpc_rtl_base() {}
	virtual void lookup(const hm_qpc_in *in, hm_qpc_out *out) = 0;
	virtual void complete(const hm_qpc_cpl_in *in, hm_qpc_out *out) = 0;
	virtual void forget(const hm_qpc_forget_in *in, hm_qpc_forget_out *out) = 0;
	virtual const char *waves() = 0;
	virtual void waves_start(const char *dir) = 0;
};

template <class M> struct qpc_rtl : qpc_rtl_base {
	vl_block<M> vl;
	qpc_rtl(hm_dev *d) : vl(d, "qpc") { vl.reset(2, 0); }

	const char *waves() override { return vl.waves_path(); }
	void waves_start(const char *dir) override { vl.waves_in(dir); }

	/* One request; out from the response's pins, its cycle the answer's. The block is busy at
	 * most 4 cycles after a hit before it takes the next request. */
	void request(uint64_t cycle, unsigned op, uint32_t qpn, bool write, uint8_t tag,
		     uint32_t entries, uint64_t base, hm_qpc_out *out)
	{
		M *p = vl.pins();

		*out = hm_qpc_out{};
		p->req_op = op;
		p->req_qpn = qpn & HCA_QPN_MASK;
		p->req_write = write;
		p->req_tag = tag;
		p->req_entries = entries;
		p->req_base = base;
		out->cycle = cycle + vl.transact(cycle, HM_QPC_HIT_CYCLES + 4, [&](M *q) {
				     out->done = q->resp_done;
				     out->hit = q->resp_hit;
				     out->evict = q->resp_evict;
				     out->victim = q->resp_victim;
				     out->wb = q->resp_wb;
				     out->req = q->resp_dma;
				     out->req_tag = q->resp_dma_tag;
				     out->req_qpn = q->resp_dma_qpn;
				     out->req_addr = q->resp_dma_addr;
				     out->req_len = q->resp_dma_len;
			     });
	}

	void lookup(const hm_qpc_in *in, hm_qpc_out *out) override
	{
		request(in->cycle, OP_LOOKUP, in->qpn, in->write, 0, in->entries, in->base, out);
	}
	void complete(const hm_qpc_cpl_in *in, hm_qpc_out *out) override
	{
		SIM_ASSERT(in->tag <= 1, "sim/vl/qpc: tag %u", (unsigned)in->tag);
		request(in->cycle, OP_CPL, 0, false, in->tag, 0, 0, out);
	}
	void forget(const hm_qpc_forget_in *in, hm_qpc_forget_out *out) override
	{
		hm_qpc_out o;

		request(in->cycle, OP_FORGET, in->qpn, false, 0, 0, 0, &o);
		*out = hm_qpc_forget_out{};
		out->cycle = o.cycle;
		out->was_cached = o.hit;
	}
};

void *create(hm_dev *d, uint32_t nqps)
{
	SIM_ASSERT(nqps <= RTL_NQP, "%u QPNs for a qpc of %u: hm_twin_check refuses this", nqps,
		   (unsigned)RTL_NQP);
	if (vl_rtl_bug("qpc"))
		return static_cast<qpc_rtl_base *>(new qpc_rtl<Vqpc_bug>(d));
	return static_cast<qpc_rtl_base *>(new qpc_rtl<Vqpc>(d));
}

qpc_rtl_base *of(void *b)
{
	return static_cast<qpc_rtl_base *>(b);
}

void destroy(void *b)
{
	delete of(b);
}

void lookup(void *b, const hm_qpc_in *in, hm_qpc_out *out)
{
	of(b)->lookup(in, out);
}

void complete(void *b, const hm_qpc_cpl_in *in, hm_qpc_out *out)
{
	of(b)->complete(in, out);
}

void forget(void *b, const hm_qpc_forget_in *in, hm_qpc_forget_out *out)
{
	of(b)->forget(in, out);
}

const char *waves(void *b)
{
	return of(b)->waves();
}

void waves_start(void *b, const char *dir)
{
	of(b)->waves_start(dir);
}

const hm_qpc_ops ops = { { create, destroy, waves, waves_start, RTL_NQP, "RTL qpc", nullptr },
			 lookup, complete, forget };

} // namespace

extern "C" {
__attribute__((constructor)) static void vl_qpc_register(void)
{
	hm_twin_register(HM_TWIN_QPC, &ops);
}
}
