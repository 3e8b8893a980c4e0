/* Driver: XRC (IBA annex A14; docs/xrc.md) — ibv_open_xrcd / ibv_close_xrcd, XRC SRQs through
 * ibv_create_srq_ex, and XRC_RECV QPs through ibv_create_qp_ex with an XRC domain. XRC_SEND
 * QPs are created as the other types are (qp.c); their WQEs carry the remote SRQ (data.c).
 *
 * A domain is identified as the kernel's uverbs identifies it: opened with fd -1 it is the
 * open's own; opened with a file it is the domain of that file (its st_dev and st_ino) on
 * this device, shared by every context of the process that opens the same file — O_CREAT
 * makes it if there is none, O_EXCL refuses one that exists. The device domain lives until
 * its last open is closed; XRC SRQs and XRC_RECV QPs belong to the domain, not to the
 * context that created them: ibv_open_qp gives any context with a handle on the domain a
 * handle on one of its XRC_RECV QPs, and the QP lives until its last handle is destroyed. */
#include "driver/drv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct drv_xrcd *xrcd_of(struct ibv_xrcd *x)
{
	return DRV_OBJ(struct drv_xrcd, x, DRV_KIND_XRCD);
}

/* A live XRC domain handle of context ctx, or NULL. */
static struct drv_xrcd *xrcd_in(struct ibv_xrcd *ibx, struct ibv_context *ctx)
{
	struct drv_xrcd *x = xrcd_of(ibx);

	return x && x->xrcd.context == ctx ? x : NULL;
}

static struct drv_xrc_dom *dom_find(struct drv_dev *d, const struct stat *st)
{
	for (struct drv_xrc_dom *m = d->xrc_doms; m; m = m->next)
		if (m->shared && m->st_dev == st->st_dev && m->st_ino == st->st_ino)
			return m;
	return NULL;
}

/* A new device domain (ALLOC_XRCD), shared through st's file when st is given. */
static struct drv_xrc_dom *dom_alloc(struct drv_dev *d, const struct stat *st)
{
	struct drv_xrc_dom *m = calloc(1, sizeof(*m));
	struct hca_cmd_empty none = { 0 };
	struct hca_handle_out out;

	if (!m) {
		drv_fail(ENOMEM, "ibv_open_xrcd: out of memory");
		return NULL;
	}
	if (drv_cmd(d, HCA_CMD_ALLOC_XRCD, &none, sizeof(none), &out, sizeof(out))) {
		free(m);
		return NULL;
	}
	m->xrcdn = out.handle;
	m->shared = st != NULL;
	if (st) {
		m->st_dev = st->st_dev;
		m->st_ino = st->st_ino;
	}
	m->next = d->xrc_doms;
	d->xrc_doms = m;
	return m;
}

/* The domain an open with attr names: found (or NULL with *create) through its file. 0, or
 * an errno with the error set. */
static int dom_lookup(struct drv_dev *d, const struct ibv_xrcd_init_attr *attr,
		      struct drv_xrc_dom **dom, struct stat *st)
{
	static const char verb[] = "ibv_open_xrcd";

	*dom = NULL;
	if (attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS))
		return drv_fail(EOPNOTSUPP, "%s: comp_mask 0x%x has bits beyond "
				"IBV_XRCD_INIT_ATTR_FD and IBV_XRCD_INIT_ATTR_OFLAGS", verb,
				attr->comp_mask);
	if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
	    !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
		return drv_fail(EINVAL, "%s: comp_mask must have IBV_XRCD_INIT_ATTR_FD and "
				"IBV_XRCD_INIT_ATTR_OFLAGS", verb);
	if (attr->fd == -1)
		return 0; /* a domain of this open alone */
	if (fstat(attr->fd, st))
		return drv_fail(EBADF, "%s: fd %d is not an open file", verb, attr->fd);
	*dom = dom_find(d, st);
	if (!*dom && !(attr->oflags & O_CREAT))
		return drv_fail(EAGAIN, "%s: no XRC domain is open on fd %d's file and oflags "
				"lack O_CREAT", verb, attr->fd);
	if (*dom && (attr->oflags & O_EXCL))
		return drv_fail(EINVAL, "%s: fd %d's file has an XRC domain already and oflags "
				"have O_EXCL", verb, attr->fd);
	return 0;
}

struct ibv_xrcd *drv_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr)
{
	struct drv_dev *d;
	struct drv_xrc_dom *dom;
	struct drv_xrcd *x;
	struct stat st;

	if (!drv_ctx_of(ctx)) {
		drv_fail(EINVAL, "ibv_open_xrcd: not a live context");
		return NULL;
	}
	d = drv_dev_of(ctx);
	drv_charge_verb_(d, "ibv_open_xrcd");
	if (!attr) {
		drv_fail(EINVAL, "ibv_open_xrcd: NULL xrcd_init_attr");
		return NULL;
	}
	if (dom_lookup(d, attr, &dom, &st))
		return NULL;
	x = calloc(1, sizeof(*x));
	if (!x) {
		drv_fail(ENOMEM, "ibv_open_xrcd: out of memory");
		return NULL;
	}
	if (!dom && !(dom = dom_alloc(d, attr->fd == -1 ? NULL : &st))) {
		free(x);
		return NULL;
	}
	dom->opens++;
	x->dom = dom;
	x->xrcd.context = ctx;
	drv_handle_add(x, DRV_KIND_XRCD);
	return &x->xrcd;
}

int drv_close_xrcd(struct ibv_xrcd *ibx)
{
	struct drv_xrcd *x = xrcd_of(ibx);
	struct drv_xrc_dom *m, **pp;
	struct drv_dev *d;
	struct hca_handle_in in;
	struct hca_cmd_empty none;
	int rc;

	if (!x)
		return drv_fail(EINVAL, "ibv_close_xrcd: not a live XRC domain");
	d = drv_dev_of(ibx->context);
	drv_charge_verb_(d, "ibv_close_xrcd");
	m = x->dom;
	if (m->opens == 1) { /* the last open: the device domain goes (EBUSY while in use) */
		in = (struct hca_handle_in){ .handle = m->xrcdn };
		rc = drv_cmd(d, HCA_CMD_DEALLOC_XRCD, &in, sizeof(in), &none, sizeof(none));
		if (rc)
			return rc;
		for (pp = &d->xrc_doms; *pp != m; pp = &(*pp)->next)
			;
		*pp = m->next;
		free(m);
	} else {
		m->opens--;
	}
	drv_handle_del(x);
	free(x);
	return 0;
}

/* ibv_create_srq_ex: verbs.h sends a basic SRQ with only PD and TYPE to ibv_create_srq; here
 * come the others. An XRC SRQ names its PD, domain and CQ, all of this context. */
struct ibv_srq *drv_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *a)
{
	static const char verb[] = "ibv_create_srq_ex";
	const uint32_t xrc_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	struct drv_cq *cq;
	struct drv_xrcd *x;
	struct drv_srq *srq;
	enum ibv_srq_type type;

	if (!drv_ctx_of(ctx) || !a) {
		drv_fail(EINVAL, "%s: %s", verb, a ? "not a live context" : "NULL srq_init_attr_ex");
		return NULL;
	}
	type = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? a->srq_type : IBV_SRQT_BASIC;
	if ((a->comp_mask & IBV_SRQ_INIT_ATTR_TM) || type == IBV_SRQT_TM ||
	    (a->comp_mask & ~(uint32_t)(xrc_mask | IBV_SRQ_INIT_ATTR_TYPE))) {
		drv_fail(EOPNOTSUPP, "%s: tag-matching SRQs and comp_mask 0x%x are not supported",
			 verb, a->comp_mask);
		return NULL;
	}
	if (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC) {
		drv_fail(EINVAL, "%s: unknown srq_type %d", verb, type);
		return NULL;
	}
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd || a->pd->context != ctx) {
		drv_fail(EINVAL, "%s: comp_mask lacks IBV_SRQ_INIT_ATTR_PD or pd is not of this "
			 "context", verb);
		return NULL;
	}
	if (type == IBV_SRQT_BASIC) {
		srq = drv_srq_create(a->pd, (struct ibv_srq_init_attr *)a, verb, 0, 0);
		return srq ? &srq->srq : NULL;
	}
	x = (a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) ? xrcd_in(a->xrcd, ctx) : NULL;
	cq = (a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ? DRV_OBJ(struct drv_cq, a->cq, DRV_KIND_CQ)
						   : NULL;
	if (!x || !cq || cq->cq.context != ctx) {
		drv_fail(EINVAL, "%s: an XRC SRQ needs %s of this context (comp_mask "
			 "IBV_SRQ_INIT_ATTR_XRCD and IBV_SRQ_INIT_ATTR_CQ)", verb,
			 !x ? "xrcd: a live XRC domain" : "cq: a live CQ");
		return NULL;
	}
	srq = drv_srq_create(a->pd, (struct ibv_srq_init_attr *)a, verb, x->dom->xrcdn, cq->cqn);
	if (!srq)
		return NULL;
	srq->xrcdn = x->dom->xrcdn;
	return &srq->srq;
}

/* Make qp a handle of ctx on XRC_RECV QP t (registered, first in t's handles). */
static struct ibv_qp *tgt_handle(struct drv_qp *qp, struct drv_xrc_tgt *t,
				 struct ibv_context *ctx, void *qp_context, enum ibv_qp_state st)
{
	struct ibv_qp *q = &qp->qpx.qp_base;

	q->context = ctx;
	q->qp_context = qp_context;
	q->handle = q->qp_num = t->qpn;
	q->state = st;
	q->qp_type = IBV_QPT_XRC_RECV;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	qp->tgt = t;
	qp->tgt_next = t->handles;
	t->handles = qp;
	drv_handle_add(qp, DRV_KIND_QP);
	drv_qp_ex_init(qp);
	return q;
}

/* ibv_create_qp_ex of an XRC_RECV QP: no PD, CQs, SRQ or queues, only its domain. */
struct ibv_qp *drv_xrc_tgt_create(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	static const char verb[] = "ibv_create_qp_ex";
	struct hca_qp_create_in in = { .type = HCA_QPT_XRC_RECV };
	struct hca_qp_create_out out;
	struct drv_xrcd *x = (a->comp_mask & IBV_QP_INIT_ATTR_XRCD) ? xrcd_in(a->xrcd, ctx) : NULL;
	struct drv_dev *d = drv_dev_of(ctx);
	struct drv_xrc_tgt *t;
	struct drv_qp *qp;
	struct ibv_qp *q;

	if (!x) {
		drv_fail(EINVAL, "%s: IBV_QPT_XRC_RECV needs comp_mask IBV_QP_INIT_ATTR_XRCD and "
			 "xrcd: a live XRC domain of this context", verb);
		return NULL;
	}
	if (((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && a->send_ops_flags) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)) {
		drv_fail(EINVAL, "%s: an XRC_RECV QP sends nothing: no send_ops_flags or "
			 "create_flags", verb);
		return NULL;
	}
	drv_charge_verb_(d, verb);
	qp = calloc(1, sizeof(*qp));
	t = calloc(1, sizeof(*t));
	if (!qp || !t) {
		free(qp);
		free(t);
		drv_fail(ENOMEM, "%s: out of memory", verb);
		return NULL;
	}
	in.xrcd = x->dom->xrcdn;
	if (drv_cmd(d, HCA_CMD_CREATE_QP, &in, sizeof(in), &out, sizeof(out))) {
		free(qp);
		free(t);
		return NULL;
	}
	t->dom = x->dom;
	t->qpn = out.qpn;
	t->next = x->dom->tgts;
	x->dom->tgts = t;
	q = tgt_handle(qp, t, ctx, a->qp_context, IBV_QPS_RESET);
	drv_map_qp(d, out.qpn, qp);
	memset(&a->cap, 0, sizeof(a->cap));
	return q;
}

/* ibv_open_qp: another handle on an XRC_RECV QP of the domain xrcd names, for this context
 * (its events, modify, query, destroy). The checks are rdma-core's ibv_cmd_open_qp (comp_mask)
 * and the kernel's open_qp (an XRC_RECV type, a domain of this context, a QP of that domain:
 * each EINVAL). As after ibv_cmd_open_qp, the handle's state is IBV_QPS_UNKNOWN until a
 * modify or query. */
struct ibv_qp *drv_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *a)
{
	static const char verb[] = "ibv_open_qp";
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	struct drv_xrc_tgt *t;
	struct drv_xrcd *x;
	struct drv_qp *qp;

	if (!drv_ctx_of(ctx) || !a) {
		drv_fail(EINVAL, "%s: %s", verb, a ? "not a live context" : "NULL qp_open_attr");
		return NULL;
	}
	drv_charge_verb_(drv_dev_of(ctx), verb);
	if (a->comp_mask >= IBV_QP_OPEN_ATTR_RESERVED || (a->comp_mask & need) != need) {
		drv_fail(a->comp_mask >= IBV_QP_OPEN_ATTR_RESERVED ? EOPNOTSUPP : EINVAL,
			 "%s: comp_mask 0x%x must have IBV_QP_OPEN_ATTR_NUM, _XRCD and _TYPE and "
			 "no bit from IBV_QP_OPEN_ATTR_RESERVED up", verb, a->comp_mask);
		return NULL;
	}
	x = xrcd_in(a->xrcd, ctx);
	if (a->qp_type != IBV_QPT_XRC_RECV || !x) {
		drv_fail(EINVAL, "%s: %s", verb, !x ? "xrcd is not a live XRC domain of this "
			 "context" : "qp_type must be IBV_QPT_XRC_RECV");
		return NULL;
	}
	for (t = x->dom->tgts; t && t->qpn != a->qp_num; t = t->next)
		;
	qp = t ? calloc(1, sizeof(*qp)) : NULL;
	if (!qp) {
		drv_fail(t ? ENOMEM : EINVAL, "%s: %s", verb, t ? "out of memory" :
			 "qp_num is not an XRC_RECV QP of this XRC domain");
		return NULL;
	}
	return tgt_handle(qp, t, ctx, (a->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) ? a->qp_context
										: NULL,
			  IBV_QPS_UNKNOWN);
}

bool drv_xrc_tgt_close(struct drv_dev *d, struct drv_qp *qp)
{
	struct drv_xrc_tgt *t = qp->tgt;
	struct drv_qp **pp;

	if (t->handles == qp && !qp->tgt_next)
		return false; /* the last handle: the QP goes */
	for (pp = &t->handles; *pp != qp; pp = &(*pp)->tgt_next)
		;
	*pp = qp->tgt_next;
	drv_map_qp(d, t->qpn, t->handles); /* events: through a handle still open */
	pthread_mutex_destroy(&qp->qpx.qp_base.mutex);
	pthread_cond_destroy(&qp->qpx.qp_base.cond);
	drv_handle_del(qp);
	free(qp);
	return true;
}

void drv_xrc_tgt_gone(struct drv_qp *qp)
{
	struct drv_xrc_tgt **pp;

	for (pp = &qp->tgt->dom->tgts; *pp != qp->tgt; pp = &(*pp)->next)
		;
	*pp = qp->tgt->next;
	free(qp->tgt);
	qp->tgt = NULL;
}
