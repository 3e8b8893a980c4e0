/* Transactor of rtl/cqe.sv: the cqe port (model/twin.h) as pin activity. POST is one request:
 * the CQ's context and the completion's fields go in as pins, the 512-bit image comes back
 * and is unpacked into struct hca_cqe (byte i of the CQE is bits 8i+7:8i, as written to host
 * memory). HCASIM_RTL_BUG=cqe selects a variant Verilated with HCA_RTL_BUG (a deliberate bug
 * that lockstep must catch; testbench/test_rtl_blocks.c). */
#include "sim/vl/vl.h"

#include "Vcqe.h"
#include "Vcqe_bug.h"

#include <cstring>

namespace {

struct cqe_rtl_base {
	virtual ~cqe_rtl_base() {}
	virtual void post(const hm_cqe_in *in, hm_cqe_out *out) = 0;
	virtual const char *waves() = 0;
	virtual void waves_start(const char *dir) = 0;
};

template <class M> struct cqe_rtl : cqe_rtl_base {
	vl_block<M> vl;
	explicit cqe_rtl(hm_dev *d) : vl(d, "cqe")
	{
		vl.reset(2, 0);
	}

	const char *waves() override { return vl.waves_path(); }
	void waves_start(const char *dir) override { vl.waves_in(dir); }

	void post(const hm_cqe_in *in, hm_cqe_out *out) override
	{
		M *p = vl.pins();
		const hca_cqe *c = &in->cqe;
		uint64_t k;

		SIM_ASSERT(in->log_size < 32 && in->arm <= HCA_CQ_DB_ARM_SOLICITED,
			   "sim/vl/cqe: log_size %u or arm %u out of range", (unsigned)in->log_size,
			   (unsigned)in->arm);
		p->req_cycle = in->cycle;
		p->req_lat = in->lat;
		p->req_pi = in->pi;
		p->req_ci = in->ci;
		p->req_log_size = in->log_size;
		p->req_arm = in->arm;
		p->req_solicited = in->solicited;
		p->req_ci_fresh = in->ci_fresh;
		p->req_byte_len = c->byte_len;
		p->req_imm_data = c->imm_data;
		p->req_qpn = c->qpn;
		p->req_src_qp = c->src_qp;
		p->req_slid = c->slid;
		p->req_pkey_index = c->pkey_index;
		p->req_wqe_index = c->wqe_index;
		p->req_opcode = c->opcode;
		p->req_status = c->status;
		p->req_sl = c->sl;
		p->req_wc_flags = c->wc_flags;
		p->req_dlid_path_bits = c->dlid_path_bits;
		p->req_is_send = c->is_send;
		p->req_vendor_err = c->vendor_err;
		p->req_srqn = c->srqn;
		*out = hm_cqe_out{};
		k = vl.transact(in->cycle, in->ci_fresh ? 1 : (uint64_t)in->lat + 1, [&](M *q) {
			static_assert(sizeof(q->resp_image) == sizeof(out->image), "512-bit image");
			out->action = q->resp_action;
			out->slot = q->resp_slot;
			out->new_pi = q->resp_new_pi;
			out->new_arm = q->resp_new_arm;
			out->event = q->resp_event;
			/* The image's 32-bit words, least significant first: the CQE's bytes. */
			std::memcpy(&out->image, q->resp_image.data(), sizeof(out->image));
		});
		out->cycle = in->cycle + k;
	}
};

void *create(hm_dev *d, uint32_t nqps)
{
	(void)nqps;
	if (vl_rtl_bug("cqe"))
		return static_cast<cqe_rtl_base *>(new cqe_rtl<Vcqe_bug>(d));
	return static_cast<cqe_rtl_base *>(new cqe_rtl<Vcqe>(d));
}

void destroy(void *b)
{
	delete static_cast<cqe_rtl_base *>(b);
}

void post(void *b, const hm_cqe_in *in, hm_cqe_out *out)
{
	static_cast<cqe_rtl_base *>(b)->post(in, out);
}

const char *waves(void *b)
{
	return static_cast<cqe_rtl_base *>(b)->waves();
}

void waves_start(void *b, const char *dir)
{
	static_cast<cqe_rtl_base *>(b)->waves_start(dir);
}

const hm_cqe_ops ops = { { create, destroy, waves, waves_start, 0, nullptr, nullptr }, post };

} // namespace

extern "C" {
__attribute__((constructor)) static void vl_cqe_register(void)
{
	hm_twin_register(HM_TWIN_CQE, &ops);
}
}
