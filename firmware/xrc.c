/* Firmware: XRC (IBA annex A14) — XRC domains, the domain and CQ of an XRC SRQ, and the
 * XRC_RECV QP, which has no PD, CQ, SRQ or rings of its own: it receives into the XRC SRQs of
 * its domain that each request's XRCETH names (docs/xrc.md). XRC_SEND QPs are created as RC
 * QPs are (firmware/qp.c). */
#include "firmware/fw.h"
#include "model/qp_cmd.h"
#include "sim/trace.h"

#include <string.h>

#define DEV(fw) ((fw)->dev->devno)

struct fw_result fw_cmd_ALLOC_XRCD(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	struct hca_handle_out *o = out_;
	int64_t xrcd = fw_obj_new(fw, &fw->xrcds);

	(void)in_;
	(void)t;
	if (xrcd < 0)
		return FW_FAIL(NO_RESOURCES, LIMIT, 0);
	o->handle = (uint32_t)xrcd;
	trace_fw_xrcd_alloc(DEV(fw), o->handle);
	return FW_OK;
}

struct fw_result fw_cmd_DEALLOC_XRCD(struct fw_state *fw, const void *in_, void *out_,
				     sim_time_t *t)
{
	const struct hca_handle_in *in = in_;
	struct fw_result r;
	struct fw_xrcd *x = FW_ACT(fw, &fw->xrcds, in->handle, hca_handle_in, handle, &r);

	(void)out_;
	(void)t;
	if (!x)
		return r;
	if (x->refs)
		return FW_FAIL(BUSY, BUSY, x->refs);
	fw_obj_del(fw, &fw->xrcds, in->handle);
	trace_fw_xrcd_dealloc(DEV(fw), in->handle);
	return FW_OK;
}

void fw_xrcd_ref(struct fw_state *fw, uint32_t xrcd, int delta)
{
	struct fw_xrcd *x = fw_obj(&fw->xrcds, xrcd);

	if (x)
		x->refs += (uint32_t)delta;
}

/* CREATE_SRQ's XRC fields: a basic SRQ names neither; an XRC SRQ a live domain and CQ. */
struct fw_result fw_xrc_srq_check(struct fw_state *fw, const struct hca_srq_create_in *in)
{
	struct fw_result r = FW_OK;

	if (!in->xrcd)
		return in->cqn ? FW_FIELD(BAD_PARAM, hca_srq_create_in, cqn) : FW_OK;
	if (!FW_USE(fw, &fw->xrcds, in->xrcd, hca_srq_create_in, xrcd, &r))
		return r;
	FW_USE(fw, &fw->cqs, in->cqn, hca_srq_create_in, cqn, &r);
	return r;
}

/* An XRC SRQ holds its domain and its CQ while it lives. */
void fw_xrc_srq_ref(struct fw_state *fw, const struct fw_srq *s, int delta)
{
	struct fw_cq *cq = s->xrcd ? fw_obj(&fw->cqs, s->cqn) : NULL;

	fw_xrcd_ref(fw, s->xrcd, delta);
	if (cq)
		cq->refs += (uint32_t)delta;
}

/* CREATE_QP of an XRC_RECV QP: its domain, and nothing of what the other types name. */
static struct fw_result tgt_check(struct fw_state *fw, const struct hca_qp_create_in *in)
{
	static const struct hca_qp_caps none;
	struct fw_result r;

	if (!FW_USE(fw, &fw->xrcds, in->xrcd, hca_qp_create_in, xrcd, &r))
		return r;
	if (in->sq_sig_all)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, sq_sig_all);
	if (in->has_srq || in->srqn)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, has_srq);
	if (in->flags)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, flags);
	if (in->pdn)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, pdn);
	if (in->send_cqn || in->recv_cqn)
		return in->send_cqn ? FW_FIELD(BAD_PARAM, hca_qp_create_in, send_cqn)
				    : FW_FIELD(BAD_PARAM, hca_qp_create_in, recv_cqn);
	if (memcmp(&in->caps, &none, sizeof(none)))
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, caps);
	if (in->sq_addr || in->rq_addr || in->db_addr)
		return in->sq_addr ? FW_FIELD(BAD_PARAM, hca_qp_create_in, sq_addr)
		       : in->rq_addr ? FW_FIELD(BAD_PARAM, hca_qp_create_in, rq_addr)
				     : FW_FIELD(BAD_PARAM, hca_qp_create_in, db_addr);
	return FW_OK;
}

struct fw_result fw_xrc_create_tgt(struct fw_state *fw, const struct hca_qp_create_in *in,
				   struct hca_qp_create_out *o, sim_time_t *t)
{
	struct fw_result r = tgt_check(fw, in);
	struct fw_qp *qp;
	int64_t qpn;

	if (r.status)
		return r;
	qpn = fw_obj_new(fw, &fw->qps);
	if (qpn < 0)
		return FW_FAIL(NO_RESOURCES, LIMIT, 0);
	qp = fw_obj(&fw->qps, (uint32_t)qpn);
	memset((char *)qp + sizeof(struct fw_head), 0, sizeof(*qp) - sizeof(struct fw_head));
	qp->type = HCA_QPT_XRC_RECV;
	qp->state = HCA_QPS_RESET;
	qp->has_srq = 1; /* its receives come from SRQs: the ones its requests name */
	qp->xrcd = in->xrcd;
	fw_xrcd_ref(fw, in->xrcd, 1);
	o->qpn = (uint32_t)qpn;
	hm_qp_create(fw->dev, o->qpn,
		     &(struct hm_qp){ .type = HCA_QPT_XRC_RECV, .uid = fw->uid, .has_srq = true,
				      .xrcd = in->xrcd },
		     *t);
	trace_fw_xrc_tgt_create(DEV(fw), o->qpn, in->xrcd);
	return FW_OK;
}
