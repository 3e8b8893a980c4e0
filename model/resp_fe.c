/* resp_fe: the C twin of the responder's front end (rtl/resp_fe.sv, docs/blocks/resp.md) and its
 * port's entry point (model/twin.h). The checks a request goes through before the responder
 * (model/resp.c) executes it, in the order the responder applies them: the PSN (the psn
 * block's C twin is the first stage), the opcode sequence and an XRC request's SRQ, the opcode
 * valid for the QP type, by kind the access flags, an atomic's alignment and a WRITE's length,
 * then the rkey (the mkey block's C twin is the key stage). No state of its own: the context
 * is the QP's, passed in; the caller applies the verdict. */
#include "model/pkt.h"
#include "model/waves.h"

#include <string.h>

/* The key stage's request: whether there is one, the right it needs and the range. */
struct fe_key {
	bool check;
	uint32_t access;
	uint64_t va, len;
};

/* The kind's own checks: access flags, alignment, a WRITE's length against its RETH. */
static uint8_t fe_kind(const struct hm_resp_fe_in *in, uint8_t kind, bool first, bool last,
		       struct fe_key *k)
{
	uint32_t left = first ? in->reth_len : in->wr_left;

	switch (kind) {
	case HM_RESP_FE_READ:
		*k = (struct fe_key){ in->reth_len != 0, HCA_ACCESS_REMOTE_READ, in->reth_va,
				      in->reth_len };
		return in->qp_access & HCA_ACCESS_REMOTE_READ ? HM_RESP_FE_EXECUTE
							      : HM_RESP_FE_NO_ACCESS;
	case HM_RESP_FE_ATOMIC:
		*k = (struct fe_key){ true, HCA_ACCESS_REMOTE_ATOMIC, in->atomic_va, 8 };
		if (in->atomic_va & 7)
			return HM_RESP_FE_ALIGN;
		return in->qp_access & HCA_ACCESS_REMOTE_ATOMIC ? HM_RESP_FE_EXECUTE
								: HM_RESP_FE_NO_ACCESS;
	case HM_RESP_FE_WRITE:
		*k = (struct fe_key){ in->paylen != 0, HCA_ACCESS_REMOTE_WRITE,
				      first ? in->reth_va : in->wr_va, in->paylen };
		if (first && !(in->qp_access & HCA_ACCESS_REMOTE_WRITE))
			return HM_RESP_FE_NO_ACCESS;
		if (in->paylen > left || (last && in->paylen != left))
			return HM_RESP_FE_LENGTH;
		return HM_RESP_FE_EXECUTE;
	default: /* SEND: its checks are the receive WQE's, in execution */
		*k = (struct fe_key){ false, 0, 0, 0 };
		return HM_RESP_FE_EXECUTE;
	}
}

/* The checks after the PSN stage (in_msg as it leaves it): the verdict, out->kind once the
 * opcode is valid, and in *k what the key stage is to check. */
static uint8_t fe_checks(const struct hm_resp_fe_in *in, bool in_msg, struct hm_resp_fe_out *out,
			 struct fe_key *k)
{
	bool first = in->pos == HM_POS_FIRST || in->pos == HM_POS_ONLY;
	bool last = in->pos == HM_POS_LAST || in->pos == HM_POS_ONLY;
	bool send = in->cls & HM_OPC_SEND, rc = in->qp_type != HCA_QPT_UC;

	*k = (struct fe_key){ false, 0, 0, 0 };
	/* the opcode continues the message in progress (IBA 9.7.5.1.6) */
	if (in_msg == first || (in_msg && in->msg_write == send))
		return HM_RESP_FE_OPCODE_SEQ;
	/* XRC: a live SRQ of the QP's domain, within a message the one it began with (A14) */
	if (in->qp_type == HCA_QPT_XRC_RECV &&
	    (!in->srq_xrcd || in->srq_xrcd != in->qp_xrcd || (in_msg && in->pkt_srqn != in->xrc_srqn)))
		return HM_RESP_FE_XRC_SRQ;
	if (rc && (in->cls & HM_OPC_READ_REQ))
		out->kind = HM_RESP_FE_READ;
	else if (rc && (in->cls & HM_OPC_ATOMIC))
		out->kind = HM_RESP_FE_ATOMIC;
	else if (send)
		out->kind = HM_RESP_FE_SEND;
	else if (in->cls & HM_OPC_WRITE)
		out->kind = HM_RESP_FE_WRITE;
	else
		return HM_RESP_FE_OPCODE;
	return fe_kind(in, out->kind, first, last, k);
}

uint32_t hm_resp_fe_rkey(const struct hm_resp_fe_in *in)
{
	if (in->cls & HM_OPC_ATOMIC)
		return in->atomic_rkey;
	if (in->cls & HM_OPC_READ_REQ)
		return in->reth_rkey;
	if (in->cls & HM_OPC_WRITE)
		return in->pos == HM_POS_FIRST || in->pos == HM_POS_ONLY ? in->reth_rkey
									 : in->wr_rkey;
	return 0;
}

static void resp_fe_twin_check(void *b, const struct hm_resp_fe_in *in, struct hm_resp_fe_out *out)
{
	bool uc = in->qp_type == HCA_QPT_UC, first = in->pos == HM_POS_FIRST || in->pos == HM_POS_ONLY;
	/* the PSN stage; UC never NAKs a gap: the stage sees one outstanding */
	struct hm_psn_in pi = { in->cycle, in->psn, in->epsn, in->nak_sent || uc };
	struct hm_psn_out po;
	bool in_msg = in->in_msg;
	struct fe_key k;

	(void)b;
	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle + HM_RESP_FE_LATENCY;
	hm_psn_model.classify(NULL, &pi, &po);
	out->psn_cls = po.cls;
	out->send_nak = po.send_nak;
	out->nak_sent = uc ? in->nak_sent : po.nak_sent;
	if (uc) {
		/* a gap loses the message in progress; what follows goes up to a FIRST/ONLY */
		bool gap = po.cls != HM_PSN_EXPECTED;

		in_msg = in_msg && !gap;
		if ((gap ? !first : in->uc_drop) && !first) {
			out->verdict = HM_RESP_FE_UC_LOST;
			return;
		}
	} else if (po.cls != HM_PSN_EXPECTED) {
		out->verdict = po.cls == HM_PSN_DUPLICATE ? HM_RESP_FE_DUPLICATE : HM_RESP_FE_AHEAD;
		return;
	}
	out->verdict = fe_checks(in, in_msg, out, &k);
	if (out->verdict == HM_RESP_FE_EXECUTE && k.check) {
		struct hm_mkey_in mi = { .cycle = in->cycle, .remote = true,
					 .key = hm_resp_fe_rkey(in), .pdn = in->pdn, .qpn = in->qpn,
					 .va = k.va, .len = k.len, .access = k.access,
					 .nkeys = in->nkeys, .ctx = in->key };
		struct hm_mkey_out mo;

		hm_mkey_model.check(NULL, &mi, &mo);
		out->key = mo.result;
		out->iova = mo.iova;
		if (mo.result != HM_MKEY_OK)
			out->verdict = HM_RESP_FE_RKEY;
	}
}

const struct hm_resp_fe_ops hm_resp_fe_model = {
	{ hm_twin_stateless_create, hm_twin_stateless_destroy, NULL, NULL, 0, NULL, NULL },
	resp_fe_twin_check
};

/* ---- the port ---- */

HM_TWIN_OP(resp_fe, check, hm_resp_fe_in, hm_resp_fe_out, hm_waves_resp_fe, NULL,
	   HM_TWIN_FIELD(struct hm_resp_fe_out, cycle),
	   HM_TWIN_FIELD(struct hm_resp_fe_out, verdict),
	   HM_TWIN_FIELD(struct hm_resp_fe_out, kind),
	   HM_TWIN_FIELD(struct hm_resp_fe_out, psn_cls),
	   HM_TWIN_FIELD(struct hm_resp_fe_out, send_nak),
	   HM_TWIN_FIELD(struct hm_resp_fe_out, nak_sent),
	   HM_TWIN_FIELD(struct hm_resp_fe_out, key),
	   HM_TWIN_FIELD(struct hm_resp_fe_out, iova));

void hm_resp_fe_check(struct hm_dev *d, const struct hm_resp_fe_in *in,
		      struct hm_resp_fe_out *out)
{
	struct hm_resp_fe_out rtl;

	hm_twin_call(d, &resp_fe_check_op, in->cycle, in, out, &rtl);
}
