/* Driver: queue pairs. ibv_create_qp sizes the rings by model/hw's rule and returns the
 * actual capabilities; ibv_modify_qp hands the mask and every attribute to MODIFY_QP, whose
 * firmware enforces the transition table (firmware/qp_rules.c) and the value rules; the
 * driver refuses only what it cannot pass on faithfully (values wider than the command's
 * fields, mask bits the device has no attribute for). */
#include "driver/drv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The device's attribute bits are libibverbs' (model/hw/qpattr.def). */
#define SAME_BIT(n) _Static_assert((unsigned)HCA_QPA_##n == (unsigned)IBV_QP_##n, #n)
SAME_BIT(STATE);
SAME_BIT(CUR_STATE);
SAME_BIT(EN_SQD_ASYNC_NOTIFY);
SAME_BIT(ACCESS_FLAGS);
SAME_BIT(PKEY_INDEX);
SAME_BIT(PORT);
SAME_BIT(QKEY);
SAME_BIT(AV);
SAME_BIT(PATH_MTU);
SAME_BIT(TIMEOUT);
SAME_BIT(RETRY_CNT);
SAME_BIT(RNR_RETRY);
SAME_BIT(RQ_PSN);
SAME_BIT(MAX_QP_RD_ATOMIC);
SAME_BIT(ALT_PATH);
SAME_BIT(MIN_RNR_TIMER);
SAME_BIT(SQ_PSN);
SAME_BIT(MAX_DEST_RD_ATOMIC);
SAME_BIT(PATH_MIG_STATE);
SAME_BIT(CAP);
SAME_BIT(DEST_QPN);
#undef SAME_BIT

static struct drv_qp *qp_of(struct ibv_qp *qp)
{
	return DRV_OBJ(struct drv_qp, qp, DRV_KIND_QP);
}

static struct drv_cq *cq_of(struct ibv_cq *cq, struct ibv_context *ctx)
{
	struct drv_cq *c = DRV_OBJ(struct drv_cq, cq, DRV_KIND_CQ);

	return c && c->cq.context == ctx ? c : NULL;
}

/* A command on a QP: for the QP's context, except on an XRC_RECV QP, which belongs to its XRC
 * domain (created by the device owner, as the kernel creates XRC target QPs). */
static int qp_cmd(struct ibv_qp *ibqp, uint16_t opcode, const void *in, size_t in_len, void *out,
		  size_t out_len)
{
	if (ibqp->qp_type == IBV_QPT_XRC_RECV)
		return drv_cmd(drv_dev_of(ibqp->context), opcode, in, in_len, out, out_len);
	return drv_uctx_cmd(ibqp->context, opcode, in, in_len, out, out_len);
}

static void qp_free(struct drv_dev *d, struct drv_qp *qp)
{
	free(qp->sq_wrid);
	free(qp->rq_wrid);
	drv_dbrec_free(d, (void *)qp->db);
	drv_dma_free(d, qp->sq, qp->buf_map);
	free(qp);
}

/* The QP types this device creates: 0, or -1 with the error set. */
static int qp_check_type(const char *verb, enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
		return 0;
	case IBV_QPT_XRC_RECV: /* the kernel's create_qp finds no XRC domain without the mask */
		drv_fail(EINVAL, "%s: IBV_QPT_XRC_RECV needs ibv_create_qp_ex with "
			 "IBV_QP_INIT_ATTR_XRCD", verb);
		return -1;
	case IBV_QPT_RAW_PACKET:
	case IBV_QPT_DRIVER:
		drv_fail(EOPNOTSUPP, "%s: qp_type %d is not supported by this device", verb,
			 type);
		return -1;
	default:
		drv_fail(EINVAL, "%s: unknown qp_type %d", verb, type);
		return -1;
	}
}

/* The queue sizes asked for, against the device's limits: 0, or -1 with the error set. */
static int qp_check_caps(struct drv_dev *d, const char *verb, const struct hca_qp_caps *caps)
{
	if (caps->max_send_wr > d->cap.max_qp_wr || caps->max_recv_wr > d->cap.max_qp_wr) {
		drv_fail(EINVAL, "%s: cap.max_%s_wr %u above the device's %u", verb,
			 caps->max_send_wr > d->cap.max_qp_wr ? "send" : "recv",
			 caps->max_send_wr > d->cap.max_qp_wr ? caps->max_send_wr
								: caps->max_recv_wr,
			 d->cap.max_qp_wr);
		return -1;
	}
	if (caps->max_send_sge > d->cap.max_sge || caps->max_recv_sge > d->cap.max_sge) {
		drv_fail(EINVAL, "%s: cap.max_%s_sge above the device's %u", verb,
			 caps->max_send_sge > d->cap.max_sge ? "send" : "recv", d->cap.max_sge);
		return -1;
	}
	if (caps->max_inline > d->cap.max_inline) {
		drv_fail(EINVAL, "%s: cap.max_inline_data %u above the device's %u", verb,
			 caps->max_inline, d->cap.max_inline);
		return -1;
	}
	return 0;
}

/* The verbs object of a QP the device created (out), and the capabilities it reports. */
static void qp_verbs_init(struct drv_qp *qp, struct ibv_pd *ibpd, struct ibv_qp_init_attr *init,
			  const struct hca_qp_create_out *out)
{
	struct ibv_qp *q = &qp->qpx.qp_base;

	q->context = ibpd->context;
	q->qp_context = init->qp_context;
	q->pd = ibpd;
	q->send_cq = init->send_cq;
	q->recv_cq = init->recv_cq;
	q->srq = init->srq;
	q->handle = out->qpn;
	q->qp_num = out->qpn;
	q->state = IBV_QPS_RESET;
	q->qp_type = init->qp_type;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	drv_handle_add(qp, DRV_KIND_QP);
	qp->sq_sig_all = init->sq_sig_all ? 1 : 0;
	qp->cap.max_send_wr = out->caps.max_send_wr;
	qp->cap.max_recv_wr = out->caps.max_recv_wr;
	qp->cap.max_send_sge = out->caps.max_send_sge;
	qp->cap.max_recv_sge = out->caps.max_recv_sge;
	qp->cap.max_inline_data = out->caps.max_inline;
	init->cap = qp->cap;
}

/* A QP's driver object and its rings, sized as the device sizes them (model/hw/hca_hw.h),
 * with their device addresses in *in: NULL, with the error set, if memory runs out. */
static struct drv_qp *qp_alloc(struct drv_dev *d, const char *verb, struct hca_qp_create_in *in,
			       bool srq)
{
	uint32_t sq_entries = hca_wq_entries(in->caps.max_send_wr);
	uint32_t rq_entries = hca_wq_entries(in->caps.max_recv_wr);
	struct drv_qp *qp = calloc(1, sizeof(*qp));
	size_t sq_bytes, rq_bytes;

	if (!qp) {
		drv_fail(ENOMEM, "%s: out of memory", verb);
		return NULL;
	}
	qp->sq_entries = sq_entries;
	qp->sq_stride = hca_sq_stride(in->caps.max_send_sge, in->caps.max_inline);
	qp->rq_entries = srq ? 0 : rq_entries;
	qp->rq_stride = hca_rq_stride(in->caps.max_recv_sge);
	qp->sq_wrid = calloc(sq_entries, sizeof(*qp->sq_wrid));
	qp->rq_wrid = calloc(rq_entries, sizeof(*qp->rq_wrid));
	if (!qp->sq_wrid || !qp->rq_wrid) {
		qp_free(d, qp);
		drv_fail(ENOMEM, "%s: out of memory", verb);
		return NULL;
	}
	/* One buffer: the send queue, then the receive queue (mlx5 keeps both in one buffer
	 * too); the doorbell record in a shared page. */
	sq_bytes = (size_t)sq_entries * qp->sq_stride;
	rq_bytes = srq ? 0 : (size_t)rq_entries * qp->rq_stride;
	if (drv_dma_alloc(d, sq_bytes + rq_bytes, HCASIM_DMA_READ, &qp->sq, &qp->buf_map,
			  &in->sq_addr) ||
	    drv_dbrec_alloc(d, HCASIM_DMA_READ, (void **)&qp->db, &in->db_addr)) {
		qp_free(d, qp);
		return NULL;
	}
	if (!srq) {
		qp->rq = (uint8_t *)qp->sq + sq_bytes;
		in->rq_addr = in->sq_addr + sq_bytes;
	}
	return qp;
}

/* ibv_create_qp with the device's creation flags (HCA_QP_CREATE_*, from ibv_create_qp_ex). */
struct drv_qp *drv_qp_create(struct ibv_pd *ibpd, const char *verb, struct ibv_qp_init_attr *init,
			     uint8_t flags)
{
	struct drv_pd *pd = DRV_OBJ(struct drv_pd, ibpd, DRV_KIND_PD);
	struct hca_qp_create_in in = { 0 };
	struct hca_qp_create_out out;
	struct drv_cq *scq, *rcq;
	struct drv_srq *srq = NULL;
	struct ibv_context *ctx;
	struct drv_dev *d;
	struct drv_qp *qp;
	bool xrc;

	if (!pd) {
		drv_fail(EINVAL, "%s: not a live PD", verb);
		return NULL;
	}
	ctx = pd->pd.context;
	d = drv_dev_of(ctx);
	drv_charge_verb_(d, verb);
	if (!init) {
		drv_fail(EINVAL, "%s: NULL init_attr", verb);
		return NULL;
	}
	if (qp_check_type(verb, init->qp_type))
		return NULL;
	/* XRC_SEND: no receive side (recv_cq, srq and the receive sizes are ignored, as the
	 * kernel ignores them); the device takes its send CQ as its receive CQ. */
	xrc = init->qp_type == IBV_QPT_XRC_SEND;
	scq = cq_of(init->send_cq, ctx);
	rcq = xrc ? scq : cq_of(init->recv_cq, ctx);
	if (!scq || !rcq) {
		drv_fail(EINVAL, "%s: %s is not a live CQ of this context", verb,
			 !scq ? "send_cq" : "recv_cq");
		return NULL;
	}
	if (init->srq && !xrc) {
		srq = DRV_OBJ(struct drv_srq, init->srq, DRV_KIND_SRQ);
		if (!srq || srq->srq.context != ctx) {
			drv_fail(EINVAL, "%s: srq is not a live SRQ of this context", verb);
			return NULL;
		}
	}
	in.caps.max_send_wr = init->cap.max_send_wr;
	in.caps.max_send_sge = init->cap.max_send_sge;
	in.caps.max_inline = init->cap.max_inline_data;
	/* With an SRQ the receive sizes are ignored (ibv_create_qp(3)). */
	in.caps.max_recv_wr = srq || xrc ? 0 : init->cap.max_recv_wr;
	in.caps.max_recv_sge = srq || xrc ? 0 : init->cap.max_recv_sge;
	if (qp_check_caps(d, verb, &in.caps))
		return NULL;
	qp = qp_alloc(d, verb, &in, srq || xrc);
	if (!qp)
		return NULL;
	in.type = (uint8_t)init->qp_type;
	in.sq_sig_all = init->sq_sig_all ? 1 : 0;
	in.has_srq = srq ? 1 : 0;
	in.pdn = pd->pdn;
	in.send_cqn = scq->cqn;
	in.recv_cqn = rcq->cqn;
	in.srqn = srq ? srq->srqn : 0;
	in.flags = flags;
	if (drv_uctx_cmd(ctx, HCA_CMD_CREATE_QP, &in, sizeof(in), &out, sizeof(out))) {
		qp_free(d, qp);
		return NULL;
	}
	qp_verbs_init(qp, ibpd, init, &out);
	drv_map_qp(d, out.qpn, qp);
	drv_qp_ex_init(qp);
	return qp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct drv_qp *qp = drv_qp_create(pd, "ibv_create_qp", init, 0);

	return qp ? &qp->qpx.qp_base : NULL;
}

/* ibv_attach_mcast(3) and ibv_detach_mcast(3): checked as ib_attach_mcast checks (a UD QP, a
 * multicast GID, on InfiniBand a multicast LID), then ATTACH_MCG or DETACH_MCG. The device
 * answers an attach of a QP already in the group with success and changes nothing, and a
 * detach of a QP not in the group with EINVAL, as ib_uverbs does. */
/* Keep the QP's list of groups (its context's close leaves them). 0 or ENOMEM. */
static int mcg_note(struct drv_qp *qp, const union ibv_gid *gid, uint16_t lid, bool attach)
{
	struct drv_mcg **pp = &qp->mcgs, *m;

	for (; *pp; pp = &(*pp)->next)
		if (!memcmp(&(*pp)->gid, gid, sizeof(*gid)) && (*pp)->lid == lid)
			break;
	if (!attach && *pp) {
		m = *pp;
		*pp = m->next;
		free(m);
	} else if (attach && !*pp) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return drv_fail(ENOMEM, "ibv_attach_mcast: out of memory");
		*m = (struct drv_mcg){ *gid, lid, qp->mcgs };
		qp->mcgs = m;
	}
	return 0;
}

static int mcg_cmd(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid, uint16_t opcode,
		   const char *verb)
{
	struct drv_qp *qp = qp_of(ibqp);
	struct hca_mcg_in in = { 0 };
	struct hca_cmd_empty none;
	struct drv_dev *d;
	int rc;

	if (!qp)
		return drv_fail(EINVAL, "%s: not a live QP", verb);
	d = drv_dev_of(ibqp->context);
	drv_charge_verb_(d, verb);
	if (!gid)
		return drv_fail(EINVAL, "%s: NULL gid", verb);
	if (ibqp->qp_type != IBV_QPT_UD)
		return drv_fail(EINVAL, "%s: QP 0x%x is not UD: only UD QPs join multicast groups",
				verb, ibqp->qp_num);
	if (gid->raw[0] != 0xff)
		return drv_fail(EINVAL, "%s: gid is not a multicast GID (its first byte is 0x%02x, "
				"not 0xff)", verb, gid->raw[0]);
	if (!hca_is_mcast_lid(lid))
		return drv_fail(EINVAL, "%s: lid 0x%x is not a multicast LID (0xc000..0xfffe)", verb,
				lid);
	in.qpn = ibqp->qp_num;
	in.lid = lid;
	memcpy(in.gid, gid->raw, 16);
	rc = qp_cmd(ibqp, opcode, &in, sizeof(in), &none, sizeof(none));
	return rc ? rc : mcg_note(qp, gid, lid, opcode == HCA_CMD_ATTACH_MCG);
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcg_cmd(qp, gid, lid, HCA_CMD_ATTACH_MCG, "ibv_attach_mcast");
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcg_cmd(qp, gid, lid, HCA_CMD_DETACH_MCG, "ibv_detach_mcast");
}

static void av_to_hw(const struct ibv_ah_attr *a, struct hca_av *h)
{
	h->dlid = a->dlid;
	h->sl = a->sl;
	h->src_path_bits = a->src_path_bits;
	h->static_rate = a->static_rate;
	h->is_global = a->is_global ? 1 : 0;
	h->port_num = a->port_num;
	h->sgid_index = a->grh.sgid_index;
	h->flow_label = a->grh.flow_label;
	h->hop_limit = a->grh.hop_limit;
	h->traffic_class = a->grh.traffic_class;
	memcpy(h->dgid, a->grh.dgid.raw, 16);
}

static void av_from_hw(const struct hca_av *h, struct ibv_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->dlid = h->dlid;
	a->sl = h->sl;
	a->src_path_bits = h->src_path_bits;
	a->static_rate = h->static_rate;
	a->is_global = h->is_global;
	a->port_num = h->port_num;
	a->grh.sgid_index = h->sgid_index;
	a->grh.flow_label = h->flow_label;
	a->grh.hop_limit = h->hop_limit;
	a->grh.traffic_class = h->traffic_class;
	memcpy(a->grh.dgid.raw, h->dgid, 16);
}


/* RESET empties both queues on the device (its indices restart at 0, IBA 10.3.1); the
 * driver's follow, as mlx5's do: the QP's completions not taken yet go from its CQs, and the
 * next WR goes to slot 0. */
static void qp_reset(struct drv_qp *qp)
{
	struct drv_cq *scq = cq_of(qp->qpx.qp_base.send_cq, qp->qpx.qp_base.context);
	struct drv_cq *rcq = cq_of(qp->qpx.qp_base.recv_cq, qp->qpx.qp_base.context);

	if (rcq)
		drv_cq_clean(rcq, qp->qpx.qp_base.qp_num);
	if (scq && scq != rcq)
		drv_cq_clean(scq, qp->qpx.qp_base.qp_num);
	qp->sq_pi = qp->sq_ci = qp->rq_pi = qp->rq_ci = 0;
	qp->batch_pi = 0;
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct drv_qp *qp = qp_of(ibqp);
	struct hca_qp_modify_in in = { 0 };
	struct hca_qp_modify_out out;
	struct hca_qp_attr *h = &in.attr;
	struct drv_dev *d;
	int rc;

	if (!qp)
		return drv_fail(EINVAL, "ibv_modify_qp: not a live QP");
	d = drv_dev_of(ibqp->context);
	drv_charge_verb(d);
	if (!attr)
		return drv_fail(EINVAL, "ibv_modify_qp: NULL attr");
	/* Bits past IBV_QP_DEST_QPN (e.g. IBV_QP_RATE_LIMIT): rdma-core's ibv_cmd_modify_qp and
	 * the kernel's modify_qp answer EOPNOTSUPP. */
	if ((unsigned)mask & ~(unsigned)HCA_QPA_ALL)
		return drv_fail(EOPNOTSUPP, "ibv_modify_qp: attribute mask bits 0x%x are not "
				"supported by this device",
				(unsigned)mask & ~(unsigned)HCA_QPA_ALL);
	{
		unsigned long long max_;

#define CHECK(bit, field, m)                                                                       \
	do {                                                                                       \
		max_ = (m);                                                                        \
		if ((mask & (bit)) && ((long long)attr->field < 0 ||                               \
				       (unsigned long long)attr->field > max_))                   \
			return drv_fail(EINVAL, "ibv_modify_qp: attr->" #field " = %lld is out of "  \
					"range", (long long)attr->field);                          \
	} while (0)
		CHECK(IBV_QP_STATE, qp_state, IBV_QPS_ERR);
		CHECK(IBV_QP_CUR_STATE, cur_qp_state, IBV_QPS_ERR);
		CHECK(IBV_QP_PATH_MTU, path_mtu, 0xff);
		CHECK(IBV_QP_PATH_MIG_STATE, path_mig_state, 0xff);
		CHECK(IBV_QP_ACCESS_FLAGS, qp_access_flags, 0x7fffffff);
#undef CHECK
	}
	in.qpn = ibqp->qp_num;
	in.attr_mask = (uint32_t)mask;
	in.cur_state = (uint8_t)attr->cur_qp_state;
	in.next_state = (uint8_t)attr->qp_state;
	h->qkey = attr->qkey;
	h->rq_psn = attr->rq_psn;
	h->sq_psn = attr->sq_psn;
	h->dest_qpn = attr->dest_qp_num;
	/* Access bits libibverbs defines that no QP right of this device uses (MW_BIND: no
	 * memory windows yet; the MR-only flags) are ignored, as the kernel's providers ignore
	 * them; bits no verbs header defines still reach the firmware's check (EINVAL). */
	h->access_flags = (uint32_t)attr->qp_access_flags &
			  ~(uint32_t)(IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
				      IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB);
	h->pkey_index = attr->pkey_index;
	h->alt_pkey_index = attr->alt_pkey_index;
	h->path_mtu = (uint8_t)attr->path_mtu;
	h->path_mig_state = (uint8_t)attr->path_mig_state;
	h->en_sqd_async_notify = attr->en_sqd_async_notify ? 1 : 0;
	h->max_rd_atomic = attr->max_rd_atomic;
	h->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	h->min_rnr_timer = attr->min_rnr_timer;
	h->port_num = attr->port_num;
	h->timeout = attr->timeout;
	h->retry_cnt = attr->retry_cnt;
	h->rnr_retry = attr->rnr_retry;
	h->alt_port_num = attr->alt_port_num;
	h->alt_timeout = attr->alt_timeout;
	av_to_hw(&attr->ah_attr, &h->av);
	av_to_hw(&attr->alt_ah_attr, &h->alt_av);
	rc = qp_cmd(ibqp, HCA_CMD_MODIFY_QP, &in, sizeof(in), &out, sizeof(out));
	if (rc)
		return rc;
	ibqp->state = (enum ibv_qp_state)out.state; /* libibverbs keeps qp->state current */
	if (out.state == HCA_QPS_RESET)
		qp_reset(qp);
	return 0;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init)
{
	struct drv_qp *qp = qp_of(ibqp);
	struct hca_handle_in in;
	struct hca_qp_query_out o;
	struct drv_dev *d;
	int rc;

	if (!qp)
		return drv_fail(EINVAL, "ibv_query_qp: not a live QP");
	d = drv_dev_of(ibqp->context);
	drv_charge_verb(d);
	if (!attr || !init)
		return drv_fail(EINVAL, "ibv_query_qp: NULL %s", !attr ? "attr" : "init_attr");
	/* The mask is not checked: the kernel returns every attribute whatever it asks for,
	 * and so does this verb (below), so unknown bits are ignored. */
	(void)mask;
	in = (struct hca_handle_in){ .handle = ibqp->qp_num };
	rc = qp_cmd(ibqp, HCA_CMD_QUERY_QP, &in, sizeof(in), &o, sizeof(o));
	if (rc)
		return rc;
	/* Like the kernel, every attribute is returned whatever the mask asks for. */
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)o.state;
	attr->cur_qp_state = (enum ibv_qp_state)o.state;
	attr->path_mtu = (enum ibv_mtu)o.attr.path_mtu;
	attr->path_mig_state = (enum ibv_mig_state)o.attr.path_mig_state;
	attr->qkey = o.attr.qkey;
	attr->rq_psn = o.attr.rq_psn;
	attr->sq_psn = o.attr.sq_psn;
	attr->dest_qp_num = o.attr.dest_qpn;
	attr->qp_access_flags = (int)o.attr.access_flags;
	attr->cap = qp->cap;
	av_from_hw(&o.attr.av, &attr->ah_attr);
	av_from_hw(&o.attr.alt_av, &attr->alt_ah_attr);
	attr->pkey_index = o.attr.pkey_index;
	attr->alt_pkey_index = o.attr.alt_pkey_index;
	attr->en_sqd_async_notify = o.attr.en_sqd_async_notify;
	attr->sq_draining = o.attr.sq_draining;
	attr->max_rd_atomic = o.attr.max_rd_atomic;
	attr->max_dest_rd_atomic = o.attr.max_dest_rd_atomic;
	attr->min_rnr_timer = o.attr.min_rnr_timer;
	attr->port_num = o.attr.port_num;
	attr->timeout = o.attr.timeout;
	attr->retry_cnt = o.attr.retry_cnt;
	attr->rnr_retry = o.attr.rnr_retry;
	attr->alt_port_num = o.attr.alt_port_num;
	attr->alt_timeout = o.attr.alt_timeout;
	memset(init, 0, sizeof(*init));
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->qp_type = ibqp->qp_type;
	init->sq_sig_all = qp->sq_sig_all;
	ibqp->state = attr->qp_state;
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct drv_qp *qp = qp_of(ibqp);
	struct hca_handle_in in;
	struct hca_cmd_empty none;
	struct drv_dev *d;
	int rc;

	if (!qp)
		return drv_fail(EINVAL, "ibv_destroy_qp: not a live QP");
	d = drv_dev_of(ibqp->context);
	drv_charge_verb(d);
	in = (struct hca_handle_in){ .handle = ibqp->qp_num };
	rc = qp_cmd(ibqp, HCA_CMD_DESTROY_QP, &in, sizeof(in), &none, sizeof(none));
	if (rc)
		return rc;
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	drv_map_qp(d, ibqp->qp_num, NULL);
	drv_handle_del(qp);
	qp_free(d, qp);
	return 0;
}

int hcasim_qp_force_state(struct ibv_qp *ibqp, int state)
{
	struct drv_qp *qp = qp_of(ibqp);
	struct hca_qp_force_in in;
	struct hca_cmd_empty none;
	int rc;

	if (!qp)
		return -drv_fail(EINVAL, "hcasim_qp_force_state: not a live QP");
	if (state < IBV_QPS_RESET || state > IBV_QPS_ERR)
		return -drv_fail(EINVAL, "hcasim_qp_force_state: state %d out of range", state);
	in = (struct hca_qp_force_in){ .qpn = ibqp->qp_num, .state = (uint32_t)state };
	rc = drv_cmd(drv_dev_of(ibqp->context), HCA_CMD_DEBUG_FORCE_QP_STATE, &in, sizeof(in),
		     &none, sizeof(none));
	if (!rc)
		ibqp->state = (enum ibv_qp_state)state;
	return -rc;
}
