/* Firmware: queue pairs — creation with actual queue sizes, the modify-QP state machine with
 * attribute rules (firmware/qp_rules.c) and value checks, query, destroy. A MODIFY_QP is
 * checked completely before anything changes (IBA 11.2.5.2: a failed modify leaves the QP
 * as it was). */
#include "firmware/fw.h"
#include "model/fcov.h"
#include "model/mcast.h"
#include "model/qp_cmd.h"
#include "sim/trace.h"

#include <string.h>

#define DEV(fw) ((fw)->dev->devno)
#define HCA_MAX_STATIC_RATE 24 /* IBV_RATE_1200_GBPS */
#define MOD_FIELD(f) FW_FAIL(BAD_PARAM, FIELD, offsetof(struct hca_qp_modify_in, attr.f))

static uint32_t cap_min(uint32_t a, uint64_t b)
{
	return a < b ? a : (uint32_t)b;
}

/* The data path changes a QP's state on errors (to ERR or SQE): firmware follows it. */
static void sync_state(struct fw_state *fw, uint32_t qpn, struct fw_qp *qp)
{
	const struct hm_qp *hw = hm_qp_peek(fw->dev, qpn);

	if (hw) {
		qp->state = hw->state;
		/* Path migration moves the path in the data path: it owns these now. */
		qp->attr.av = hw->attr.av;
		qp->attr.port_num = hw->attr.port_num;
		qp->attr.pkey_index = hw->attr.pkey_index;
		qp->attr.timeout = hw->attr.timeout;
		qp->attr.path_mig_state = hw->attr.path_mig_state;
	}
}

/* CREATE_QP's type and flag fields. */
static struct fw_result qp_create_flags(const struct hca_qp_create_in *in)
{
	if (in->type != HCA_QPT_RC && in->type != HCA_QPT_UC && in->type != HCA_QPT_UD &&
	    in->type != HCA_QPT_XRC_SEND)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, type);
	if (in->xrcd)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, xrcd);
	/* XRC_SEND: no receive queue (its receive CQ is its send CQ, counted twice). */
	if (in->type == HCA_QPT_XRC_SEND && in->has_srq)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, has_srq);
	if (in->type == HCA_QPT_XRC_SEND && in->recv_cqn != in->send_cqn)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, recv_cqn);
	if (in->sq_sig_all > 1)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, sq_sig_all);
	if (in->has_srq > 1)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, has_srq);
	/* Blocking the loopback of its own multicast is a UD QP's option (IBA 10.5). */
	if ((in->flags & ~(unsigned)HCA_QP_CREATE_BLOCK_SELF_MCAST_LB) ||
	    (in->flags && in->type != HCA_QPT_UD))
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, flags);
	return FW_OK;
}

/* The queue sizes CREATE_QP asks for, against the device's limits (an SRQ's QP asks for no
 * receive queue). */
static struct fw_result qp_create_caps(const struct hca_qp_caps *rq, const struct sim_config *c,
				       bool srq)
{
	if (rq->max_send_wr > c->max_qp_wr)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, caps.max_send_wr);
	if (rq->max_send_sge > c->max_sge)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, caps.max_send_sge);
	if (rq->max_inline > c->max_inline)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, caps.max_inline);
	if (srq && rq->max_recv_wr)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, caps.max_recv_wr);
	if (srq && rq->max_recv_sge)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, caps.max_recv_sge);
	if (rq->max_recv_wr > c->max_qp_wr)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, caps.max_recv_wr);
	if (rq->max_recv_sge > c->max_sge)
		return FW_FIELD(BAD_PARAM, hca_qp_create_in, caps.max_recv_sge);
	return FW_OK;
}

/* Firmware's record of a new QP. */
static void qp_record(struct fw_qp *qp, const struct hca_qp_create_in *in, bool srq,
		      const struct hca_qp_caps *caps)
{
	memset((char *)qp + sizeof(struct fw_head), 0, sizeof(*qp) - sizeof(struct fw_head));
	qp->type = in->type;
	qp->state = HCA_QPS_RESET;
	qp->sq_sig_all = in->sq_sig_all;
	qp->has_srq = in->has_srq;
	qp->pdn = in->pdn;
	qp->send_cqn = in->send_cqn;
	qp->recv_cqn = in->recv_cqn;
	qp->srqn = in->has_srq ? in->srqn : 0;
	qp->caps = *caps;
	qp->sq_addr = in->sq_addr;
	qp->rq_addr = srq ? 0 : in->rq_addr;
	qp->db_addr = in->db_addr;
}

struct fw_result fw_cmd_CREATE_QP(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_qp_create_in *in = in_;
	struct hca_qp_create_out *o = out_;
	const struct sim_config *c = &fw->dev->cfg;
	const struct hca_qp_caps *rq = &in->caps;
	struct fw_pd *pd;
	struct fw_cq *scq, *rcq;
	struct fw_srq *srq = NULL;
	struct hca_qp_caps caps = { 0 };
	uint32_t sq_entries, rq_entries = 0, sq_stride, rq_stride = 0;
	struct fw_qp *qp;
	int64_t qpn;
	struct fw_result r = qp_create_flags(in);
	bool norq = in->has_srq || in->type == HCA_QPT_XRC_SEND;

	if (in->type == HCA_QPT_XRC_RECV)
		return fw_xrc_create_tgt(fw, in, o, t);
	if (r.status)
		return r;
	pd = FW_USE(fw, &fw->pds, in->pdn, hca_qp_create_in, pdn, &r);
	if (!pd)
		return r;
	scq = FW_USE(fw, &fw->cqs, in->send_cqn, hca_qp_create_in, send_cqn, &r);
	if (!scq)
		return r;
	rcq = FW_USE(fw, &fw->cqs, in->recv_cqn, hca_qp_create_in, recv_cqn, &r);
	if (!rcq)
		return r;
	if (in->has_srq) {
		srq = FW_USE(fw, &fw->srqs, in->srqn, hca_qp_create_in, srqn, &r);
		if (!srq)
			return r;
		/* The SRQ may belong to another PD than the QP (as on real HCAs): receive WQEs
		 * are checked against the SRQ's PD by the data path. */
	}
	r = qp_create_caps(&in->caps, c, norq);
	if (r.status)
		return r;

	/* Actual sizes: the rule in model/hw/hca_hw.h that the driver sized its rings by. */
	sq_entries = hca_wq_entries(rq->max_send_wr);
	sq_stride = hca_sq_stride(rq->max_send_sge, rq->max_inline);
	caps.max_send_wr = cap_min(sq_entries, c->max_qp_wr);
	caps.max_send_sge = cap_min((sq_stride - HCA_WQE_BASE_BYTES) / HCA_SGE_BYTES, c->max_sge);
	caps.max_inline = cap_min(hca_sq_inline_for_stride(sq_stride), c->max_inline);
	if (!norq) {
		rq_entries = hca_wq_entries(rq->max_recv_wr);
		rq_stride = hca_rq_stride(rq->max_recv_sge);
		caps.max_recv_wr = cap_min(rq_entries, c->max_qp_wr);
		caps.max_recv_sge = cap_min(rq_stride / HCA_SGE_BYTES, c->max_sge);
	}
	if (!fw_dma_ok(fw, in->sq_addr, (uint64_t)sq_entries * sq_stride, SIM_DMA_READ))
		return FW_FAIL(BAD_ADDR, ADDR, offsetof(struct hca_qp_create_in, sq_addr));
	if (!norq && !fw_dma_ok(fw, in->rq_addr, (uint64_t)rq_entries * rq_stride, SIM_DMA_READ))
		return FW_FAIL(BAD_ADDR, ADDR, offsetof(struct hca_qp_create_in, rq_addr));
	if (!fw_dma_ok(fw, in->db_addr, 8, SIM_DMA_READ))
		return FW_FAIL(BAD_ADDR, ADDR, offsetof(struct hca_qp_create_in, db_addr));
	qpn = fw_obj_new(fw, &fw->qps);
	if (qpn < 0)
		return FW_FAIL(NO_RESOURCES, LIMIT, 0);
	qp = fw_obj(&fw->qps, (uint32_t)qpn);
	qp_record(qp, in, norq, &caps);
	pd->refs++;
	scq->refs++;
	rcq->refs++;
	if (srq)
		srq->refs++;
	o->qpn = (uint32_t)qpn;
	o->caps = caps;
	hm_qp_create(fw->dev, o->qpn,
		     &(struct hm_qp){ .type = in->type, .uid = fw->uid, .sq_sig_all = in->sq_sig_all,
				      .has_srq = in->has_srq, .pdn = in->pdn,
				      .mcast_lb_block = in->flags & HCA_QP_CREATE_BLOCK_SELF_MCAST_LB,
				      .scqn = in->send_cqn, .rcqn = in->recv_cqn, .srqn = qp->srqn,
				      .sq = in->sq_addr, .sq_entries = sq_entries,
				      .sq_stride = sq_stride, .rq = qp->rq_addr,
				      .rq_entries = rq_entries, .rq_stride = rq_stride },
		     *t);
	trace_fw_qp_create(DEV(fw), o->qpn, in->type, in->pdn, in->send_cqn, in->recv_cqn, qp->srqn,
			   caps.max_send_wr, caps.max_recv_wr);
	return FW_OK;
}

struct fw_qp *fw_qp_act(struct fw_state *fw, uint32_t qpn, size_t off, struct fw_result *r)
{
	*r = (struct fw_result){ HCA_STATUS_BAD_HANDLE, HCA_SYN(HCA_SYN_HANDLE, off) };
	return qpn <= HCA_QPN_MASK ? fw_act(fw, &fw->qps, qpn, off, r) : NULL;
}
#define qp_of(fw, qpn, s, f, r) fw_qp_act(fw, qpn, offsetof(struct s, f), r)

static const struct hm_port *port_of(struct fw_state *fw, unsigned num)
{
	return num >= 1 && num <= fw->dev->nports ? &fw->dev->ports[num - 1] : NULL;
}

/* Check an address vector; `base` is the offset of the av inside hca_qp_modify_in. */
static struct fw_result check_av(struct fw_state *fw, const struct hca_av *av, size_t base)
{
#define AV_FIELD(f) ((struct fw_result){ HCA_STATUS_BAD_PARAM,                                     \
					 HCA_SYN(HCA_SYN_FIELD, base + offsetof(struct hca_av, f)) })
	const struct hm_port *p = port_of(fw, av->port_num);

	if (!p)
		return AV_FIELD(port_num);
	if (av->sl > 15)
		return AV_FIELD(sl);
	if (av->src_path_bits > 0x7f)
		return AV_FIELD(src_path_bits);
	if (av->static_rate > HCA_MAX_STATIC_RATE)
		return AV_FIELD(static_rate);
	if (av->is_global > 1)
		return AV_FIELD(is_global);
	if (av->is_global && av->sgid_index >= HM_GID_TABLE)
		return AV_FIELD(sgid_index);
	if (av->is_global && av->flow_label > 0xfffff)
		return AV_FIELD(flow_label);
	return FW_OK;
#undef AV_FIELD
}

/* Value checks for every attribute in mask (ib-facts "Attribute values are checked too"). */
static struct fw_result check_values(struct fw_state *fw, const struct fw_qp *qp,
				     const struct hca_qp_modify_in *in, unsigned next)
{
	const struct hca_qp_attr *a = &in->attr;
	const struct sim_config *c = &fw->dev->cfg;
	uint32_t m = in->attr_mask;
	unsigned port = (m & HCA_QPA_PORT) ? a->port_num : qp->attr.port_num;
	const struct hm_port *p;
	struct fw_result r;

	if ((m & HCA_QPA_PORT) && !port_of(fw, a->port_num))
		return MOD_FIELD(port_num);
	if ((m & HCA_QPA_PKEY_INDEX) && a->pkey_index >= c->pkey_table)
		return MOD_FIELD(pkey_index);
	if ((m & HCA_QPA_ACCESS_FLAGS) && (a->access_flags & ~HCA_ACCESS_ALL))
		return MOD_FIELD(access_flags);
	if ((m & HCA_QPA_EN_SQD_ASYNC_NOTIFY) && a->en_sqd_async_notify > 1)
		return MOD_FIELD(en_sqd_async_notify);
	if (m & HCA_QPA_AV) {
		r = check_av(fw, &a->av, offsetof(struct hca_qp_modify_in, attr.av));
		if (r.status)
			return r;
	}
	if (m & HCA_QPA_PATH_MTU) {
		p = port_of(fw, port);
		if (a->path_mtu < 1 || a->path_mtu > 5 ||
		    (p && a->path_mtu > sim_config_mtu_enum(c)))
			return MOD_FIELD(path_mtu);
	}
	if ((m & HCA_QPA_TIMEOUT) && a->timeout > 31)
		return MOD_FIELD(timeout);
	if ((m & HCA_QPA_RETRY_CNT) && a->retry_cnt > 7)
		return MOD_FIELD(retry_cnt);
	if ((m & HCA_QPA_RNR_RETRY) && a->rnr_retry > 7)
		return MOD_FIELD(rnr_retry);
	if ((m & HCA_QPA_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return MOD_FIELD(min_rnr_timer);
	if ((m & HCA_QPA_RQ_PSN) && a->rq_psn > HCA_PSN_MASK)
		return MOD_FIELD(rq_psn);
	if ((m & HCA_QPA_SQ_PSN) && a->sq_psn > HCA_PSN_MASK)
		return MOD_FIELD(sq_psn);
	if ((m & HCA_QPA_DEST_QPN) && a->dest_qpn > HCA_QPN_MASK)
		return MOD_FIELD(dest_qpn);
	if ((m & HCA_QPA_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > c->max_rd_atomic)
		return MOD_FIELD(max_rd_atomic);
	if ((m & HCA_QPA_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > c->max_rd_atomic)
		return MOD_FIELD(max_dest_rd_atomic);
	if ((m & HCA_QPA_PATH_MIG_STATE) && a->path_mig_state > 2)
		return MOD_FIELD(path_mig_state);
	if (m & HCA_QPA_ALT_PATH) {
		if (!port_of(fw, a->alt_port_num))
			return MOD_FIELD(alt_port_num);
		if (a->alt_pkey_index >= c->pkey_table)
			return MOD_FIELD(alt_pkey_index);
		if (a->alt_timeout > 31)
			return MOD_FIELD(alt_timeout);
		r = check_av(fw, &a->alt_av, offsetof(struct hca_qp_modify_in, attr.alt_av));
		if (r.status)
			return r;
	}
	/* RoCE: connected QPs are addressed by GID; INIT->RTR without a GRH cannot work. */
	p = port_of(fw, port);
	if (qp->state == HCA_QPS_INIT && next == HCA_QPS_RTR && qp->type != HCA_QPT_UD && p &&
	    p->link_layer == 2 && (m & HCA_QPA_AV) && !a->av.is_global)
		return FW_FAIL(BAD_PARAM, ROCE_GRH, 0);
	return FW_OK;
}

/* Copy the attributes named in mask from src to dst. */
static void apply_attrs(struct hca_qp_attr *dst, const struct hca_qp_attr *src, uint32_t m)
{
	if (m & HCA_QPA_EN_SQD_ASYNC_NOTIFY)
		dst->en_sqd_async_notify = src->en_sqd_async_notify;
	if (m & HCA_QPA_ACCESS_FLAGS)
		dst->access_flags = src->access_flags;
	if (m & HCA_QPA_PKEY_INDEX)
		dst->pkey_index = src->pkey_index;
	if (m & HCA_QPA_PORT)
		dst->port_num = src->port_num;
	if (m & HCA_QPA_QKEY)
		dst->qkey = src->qkey;
	if (m & HCA_QPA_AV)
		dst->av = src->av;
	if (m & HCA_QPA_PATH_MTU)
		dst->path_mtu = src->path_mtu;
	if (m & HCA_QPA_TIMEOUT)
		dst->timeout = src->timeout;
	if (m & HCA_QPA_RETRY_CNT)
		dst->retry_cnt = src->retry_cnt;
	if (m & HCA_QPA_RNR_RETRY)
		dst->rnr_retry = src->rnr_retry;
	if (m & HCA_QPA_RQ_PSN)
		dst->rq_psn = src->rq_psn;
	if (m & HCA_QPA_MAX_QP_RD_ATOMIC)
		dst->max_rd_atomic = src->max_rd_atomic;
	if (m & HCA_QPA_ALT_PATH) {
		dst->alt_av = src->alt_av;
		dst->alt_pkey_index = src->alt_pkey_index;
		dst->alt_port_num = src->alt_port_num;
		dst->alt_timeout = src->alt_timeout;
	}
	if (m & HCA_QPA_MIN_RNR_TIMER)
		dst->min_rnr_timer = src->min_rnr_timer;
	if (m & HCA_QPA_SQ_PSN)
		dst->sq_psn = src->sq_psn;
	if (m & HCA_QPA_MAX_DEST_RD_ATOMIC)
		dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	if (m & HCA_QPA_PATH_MIG_STATE)
		dst->path_mig_state = src->path_mig_state;
	if (m & HCA_QPA_DEST_QPN)
		dst->dest_qpn = src->dest_qpn;
}

static uint32_t lowest_bit_index(uint32_t m)
{
	return (uint32_t)__builtin_ctz(m);
}

struct fw_result fw_cmd_MODIFY_QP(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_qp_modify_in *in = in_;
	struct hca_qp_modify_out *o = out_;
	struct fw_result r;
	struct fw_qp *qp = qp_of(fw, in->qpn, hca_qp_modify_in, qpn, &r);
	uint32_t m = in->attr_mask, req, opt, caps_missing = 0, bad;
	unsigned cur, next;

	if (!qp)
		return r;
	sync_state(fw, in->qpn, qp);
	if (m & ~HCA_QPA_ALL)
		return FW_FIELD(BAD_PARAM, hca_qp_modify_in, attr_mask);
	cur = qp->state;
	if (m & HCA_QPA_CUR_STATE) {
		if (in->cur_state >= HCA_QPS_COUNT)
			return FW_FIELD(BAD_PARAM, hca_qp_modify_in, cur_state);
		cur = in->cur_state;
	}
	next = cur;
	if (m & HCA_QPA_STATE) {
		if (in->next_state >= HCA_QPS_COUNT)
			return FW_FIELD(BAD_PARAM, hca_qp_modify_in, next_state);
		next = in->next_state;
	}
	if (!fw_qp_transition_valid(cur, next)) {
		r = FW_FAIL(BAD_STATE, TRANSITION, (cur << 4) | next);
		goto reject;
	}
	req = fw_qp_required(qp->type, cur, next);
	opt = fw_qp_optional(qp->type, cur, next);
	/* CUR_STATE only names RTR, RTS, SQD or SQE (ib_modify_qp_is_ok). */
	if ((m & HCA_QPA_CUR_STATE) && cur != HCA_QPS_RTR && cur != HCA_QPS_RTS &&
	    cur != HCA_QPS_SQD && cur != HCA_QPS_SQE)
		opt &= ~HCA_QPA_CUR_STATE;
	if (req & ~m) {
		r = FW_FAIL(MISSING_ATTR, MISSING, lowest_bit_index(req & ~m));
		goto reject;
	}
	bad = m & ~(req | opt | HCA_QPA_STATE);
	if (bad) {
		r = FW_FAIL(EXTRA_ATTR, EXTRA, lowest_bit_index(bad));
		goto reject;
	}
	/* Capability-gated attributes (the device reports exactly what it implements). */
	if (cur == HCA_QPS_SQD && next == HCA_QPS_SQD)
		caps_missing |= m & HCA_QPA_PORT; /* no CHANGE_PHY_PORT */
	if (caps_missing) {
		r = FW_FAIL(EXTRA_ATTR, CAP, lowest_bit_index(caps_missing));
		goto reject;
	}
	if ((m & HCA_QPA_CUR_STATE) && in->cur_state != qp->state) {
		r = FW_FAIL(BAD_STATE, CUR_STATE, qp->state);
		goto reject;
	}
	r = check_values(fw, qp, in, next);
	if (r.status)
		goto reject;

	/* Everything checked: apply. */
	if (next == HCA_QPS_RESET) {
		/* IBA 10.3.1: RESET returns every attribute to its initial value and empties the
		 * queues (the data path clears its indexes and PSNs here too). */
		memset(&qp->attr, 0, sizeof(qp->attr));
	} else {
		apply_attrs(&qp->attr, &in->attr, m);
	}
	trace_qp_modify(DEV(fw), in->qpn, hca_qps_name(qp->state), hca_qps_name(next), m);
	hm_fcov_hit(HM_FCOV_qp_modify, qp->state * HCA_QPS_COUNT + next);
	qp->state = (uint8_t)next;
	hm_qp_modify(fw->dev, in->qpn, &qp->attr, m, next, *t);
	o->state = next;
	return FW_OK;
reject:
	trace_qp_reject(DEV(fw), in->qpn, hca_qps_name(cur), hca_qps_name(next), m,
			hca_status_name(r.status), r.syndrome);
	return r;
}

struct fw_result fw_cmd_QUERY_QP(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_handle_in *in = in_;
	struct hca_qp_query_out *o = out_;
	struct fw_result r;
	struct fw_qp *qp = qp_of(fw, in->handle, hca_handle_in, handle, &r);
	const struct hm_qp *hw = hm_qp_peek(fw->dev, in->handle);

	(void)t;
	if (!qp)
		return r;
	sync_state(fw, in->handle, qp);
	o->state = qp->state;
	o->type = qp->type;
	o->sq_sig_all = qp->sq_sig_all;
	o->has_srq = qp->has_srq;
	o->pdn = qp->pdn;
	o->send_cqn = qp->send_cqn;
	o->recv_cqn = qp->recv_cqn;
	o->srqn = qp->srqn;
	o->caps = qp->caps;
	o->attr = qp->attr;
	if (hw) {
		/* PSNs move with traffic: report the data path's. SQD is draining while sent
		 * WQEs wait for completion. */
		o->attr.sq_psn = hw->req.sq_psn;
		o->attr.rq_psn = hw->resp.epsn;
		o->attr.sq_draining = qp->state == HCA_QPS_SQD &&
				      (hw->comp.sq_done != hw->req.sq_next || hw->req.cur_started);
	}
	return FW_OK;
}

struct fw_result fw_cmd_DESTROY_QP(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_handle_in *in = in_;
	struct fw_result r;
	struct fw_qp *qp = qp_of(fw, in->handle, hca_handle_in, handle, &r);
	unsigned groups;

	(void)out_;
	(void)t;
	if (!qp)
		return r;
	/* A QP still attached to multicast groups stays (as ib_uverbs refuses to destroy it). */
	groups = hm_mcg_of_qp(fw->dev, in->handle);
	if (groups)
		return FW_FAIL(BUSY, BUSY, groups);
	if (qp->type == HCA_QPT_XRC_RECV) {
		fw_xrcd_ref(fw, qp->xrcd, -1);
	} else {
		((struct fw_pd *)fw_obj(&fw->pds, qp->pdn))->refs--;
		((struct fw_cq *)fw_obj(&fw->cqs, qp->send_cqn))->refs--;
		((struct fw_cq *)fw_obj(&fw->cqs, qp->recv_cqn))->refs--;
		if (qp->has_srq)
			((struct fw_srq *)fw_obj(&fw->srqs, qp->srqn))->refs--;
	}
	fw_obj_del(fw, &fw->qps, in->handle);
	/* type 2B windows serve their QP alone: they end with it, and a QP that reuses the
	 * number does not inherit them */
	hm_mkey_unbind_qp(fw->dev, in->handle);
	hm_qp_destroy(fw->dev, in->handle);
	trace_fw_qp_destroy(DEV(fw), in->handle);
	return FW_OK;
}

struct fw_result fw_cmd_DEBUG_FORCE_QP_STATE(struct fw_state *fw, const void *in_, void *out_,
					     sim_time_t *t)
{
	const struct hca_qp_force_in *in = in_;
	struct fw_result r;
	struct fw_qp *qp = qp_of(fw, in->qpn, hca_qp_force_in, qpn, &r);

	(void)out_;
	(void)t;
	if (!qp)
		return r;
	if (in->state >= HCA_QPS_COUNT)
		return FW_FIELD(BAD_PARAM, hca_qp_force_in, state);
	trace_qp_force(DEV(fw), in->qpn, hca_qps_name(qp->state), hca_qps_name(in->state));
	qp->state = (uint8_t)in->state;
	((struct hm_qp *)hm_qp_peek(fw->dev, in->qpn))->state = (uint8_t)in->state;
	return FW_OK;
}
