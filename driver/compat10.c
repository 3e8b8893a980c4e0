/* Driver: the libibverbs 1.0 ABI (the ibv_*@IBVERBS_1.0 symbols). A program built in 2006
 * against libibverbs 1.0 gets the wrappers of driver/compat10.h: each is registered in the
 * live-handle registry under its own kind and points at today's object, and every call
 * checks its wrapper, then runs today's verb on the object it wraps. The five ops of the 1.0
 * context (poll, arm, the three posts) translate 1.0 work requests into today's. Today's
 * objects carry their wrapper in qp_context, cq_context and srq_context, so that completion
 * and async events come back as the 1.0 objects. docs/abi.md. */
#include "driver/compat10.h"
#include "driver/drv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define V10 "@IBVERBS_1.0"
#define WR10_CHUNK 16 /* work requests translated per call of today's post verb */

static const char *kind10_name(uint32_t kind)
{
	switch (kind) {
	case DRV_KIND_DEV10: return "device";
	case DRV_KIND_CTX10: return "context";
	case DRV_KIND_PD10: return "PD";
	case DRV_KIND_MR10: return "MR";
	case DRV_KIND_CQ10: return "CQ";
	case DRV_KIND_SRQ10: return "SRQ";
	case DRV_KIND_QP10: return "QP";
	case DRV_KIND_AH10: return "AH";
	default: return "device list";
	}
}

/* The wrapper p if it is a live 1.0 object of this kind; else NULL, errno EINVAL and a message
 * naming the verb. */
static void *live10(const char *verb, const void *p, uint32_t kind)
{
	if (drv_handle_kind(p) == kind)
		return (void *)p;
	drv_fail(EINVAL, "%s" V10 ": %s is not a live 1.0 %s of this library", verb,
		 p ? "the handle" : "NULL", kind10_name(kind));
	return NULL;
}

/* Register a new wrapper for real (or free it if real is NULL, keeping today's errno). */
static void *keep10(void *w, uint32_t kind, const void *real)
{
	if (!real) {
		int err = errno;

		free(w);
		errno = err;
		return NULL;
	}
	drv_handle_add(w, kind);
	return w;
}

/* Destroy the object a wrapper wraps (today's verb's answer), then the wrapper. */
static int drop10(const char *verb, void *w, uint32_t kind)
{
	int rc;

	if (!live10(verb, w, kind))
		return EINVAL;
	switch (kind) {
	case DRV_KIND_PD10: rc = ibv_dealloc_pd(((struct ibv10_pd *)w)->real); break;
	case DRV_KIND_MR10: rc = ibv_dereg_mr(((struct ibv10_mr *)w)->real); break;
	case DRV_KIND_CQ10: rc = ibv_destroy_cq(((struct ibv10_cq *)w)->real); break;
	case DRV_KIND_SRQ10: rc = ibv_destroy_srq(((struct ibv10_srq *)w)->real); break;
	case DRV_KIND_QP10: rc = ibv_destroy_qp(((struct ibv10_qp *)w)->real); break;
	case DRV_KIND_AH10: rc = ibv_destroy_ah(((struct ibv10_ah *)w)->real); break;
	default: rc = ibv_close_device(((struct ibv10_context *)w)->real); break;
	}
	if (rc)
		return rc;
	if (kind == DRV_KIND_CTX10)
		drv_handle_del(((struct ibv10_context *)w)->device);
	drv_handle_del(w);
	free(w);
	return 0;
}

/* ---- devices and contexts ---- */

/* A 1.0 device list: the pointer array handed out, its devices, and today's list. */
struct list10 {
	struct ibv_device **real;
	struct ibv10_device dev[DRV_MAX_DEVS];
	struct ibv10_device *ptr[DRV_MAX_DEVS + 1]; /* NULL-terminated: the user's handle */
};

struct ibv10_device **drv10_get_device_list(int *num);
struct ibv10_device **drv10_get_device_list(int *num)
{
	struct list10 *l = calloc(1, sizeof(*l));
	int n = 0;

	if (num)
		*num = 0;
	if (!l) {
		drv_fail(ENOMEM, "ibv_get_device_list" V10 ": out of memory");
		return NULL;
	}
	l->real = ibv_get_device_list(&n);
	if (!l->real)
		return keep10(l, DRV_KIND_LIST10, NULL);
	for (int i = 0; i < n && i < DRV_MAX_DEVS; i++) {
		l->dev[i].real = l->real[i];
		l->ptr[i] = &l->dev[i];
		drv_handle_add(&l->dev[i], DRV_KIND_DEV10);
	}
	drv_handle_add(l->ptr, DRV_KIND_LIST10);
	if (num)
		*num = n;
	return l->ptr;
}
__asm__(".symver drv10_get_device_list, ibv_get_device_list@IBVERBS_1.0");

void drv10_free_device_list(struct ibv10_device **list);
void drv10_free_device_list(struct ibv10_device **list)
{
	struct list10 *l;

	if (!live10("ibv_free_device_list", list, DRV_KIND_LIST10))
		return;
	l = (struct list10 *)((char *)list - offsetof(struct list10, ptr));
	for (int i = 0; l->ptr[i]; i++)
		drv_handle_del(l->ptr[i]);
	drv_handle_del(list);
	ibv_free_device_list(l->real);
	free(l);
}
__asm__(".symver drv10_free_device_list, ibv_free_device_list@IBVERBS_1.0");

const char *drv10_get_device_name(struct ibv10_device *dev);
const char *drv10_get_device_name(struct ibv10_device *dev)
{
	return live10("ibv_get_device_name", dev, DRV_KIND_DEV10) ? ibv_get_device_name(dev->real)
								   : NULL;
}
__asm__(".symver drv10_get_device_name, ibv_get_device_name@IBVERBS_1.0");

__be64 drv10_get_device_guid(struct ibv10_device *dev);
__be64 drv10_get_device_guid(struct ibv10_device *dev)
{
	return live10("ibv_get_device_guid", dev, DRV_KIND_DEV10) ? ibv_get_device_guid(dev->real)
								   : 0;
}
__asm__(".symver drv10_get_device_guid, ibv_get_device_guid@IBVERBS_1.0");

static int poll_cq10(struct ibv10_cq *cq, int num_entries, struct ibv_wc *wc);
static int req_notify_cq10(struct ibv10_cq *cq, int solicited_only);
static int post_send10(struct ibv10_qp *qp, struct ibv10_send_wr *wr,
		       struct ibv10_send_wr **bad_wr);
static int post_recv10(struct ibv10_qp *qp, struct ibv10_recv_wr *wr,
		       struct ibv10_recv_wr **bad_wr);
static int post_srq_recv10(struct ibv10_srq *srq, struct ibv10_recv_wr *wr,
			   struct ibv10_recv_wr **bad_wr);

/* The context keeps its own copy of the device, so that ctx->device outlives the list. */
struct ctx10 {
	struct ibv10_context c;
	struct ibv10_device dev;
};

struct ibv10_context *drv10_open_device(struct ibv10_device *dev);
struct ibv10_context *drv10_open_device(struct ibv10_device *dev)
{
	struct ctx10 *x;

	if (!live10("ibv_open_device", dev, DRV_KIND_DEV10))
		return NULL;
	x = calloc(1, sizeof(*x));
	if (!x) {
		drv_fail(ENOMEM, "ibv_open_device" V10 ": out of memory");
		return NULL;
	}
	x->c.real = ibv_open_device(dev->real);
	if (!x->c.real)
		return keep10(x, DRV_KIND_CTX10, NULL);
	x->dev.real = dev->real;
	x->c.device = &x->dev;
	x->c.cmd_fd = x->c.real->cmd_fd;
	x->c.async_fd = x->c.real->async_fd;
	x->c.num_comp_vectors = x->c.real->num_comp_vectors;
	x->c.ops.poll_cq = poll_cq10;
	x->c.ops.req_notify_cq = req_notify_cq10;
	x->c.ops.post_send = post_send10;
	x->c.ops.post_recv = post_recv10;
	x->c.ops.post_srq_recv = post_srq_recv10;
	drv_handle_add(&x->dev, DRV_KIND_DEV10);
	return keep10(&x->c, DRV_KIND_CTX10, x->c.real);
}
__asm__(".symver drv10_open_device, ibv_open_device@IBVERBS_1.0");

int drv10_close_device(struct ibv10_context *ctx);
int drv10_close_device(struct ibv10_context *ctx)
{
	return drop10("ibv_close_device", ctx, DRV_KIND_CTX10);
}
__asm__(".symver drv10_close_device, ibv_close_device@IBVERBS_1.0");

int drv10_query_device(struct ibv10_context *ctx, struct ibv_device_attr *attr);
int drv10_query_device(struct ibv10_context *ctx, struct ibv_device_attr *attr)
{
	return live10("ibv_query_device", ctx, DRV_KIND_CTX10) ? ibv_query_device(ctx->real, attr)
								: EINVAL;
}
__asm__(".symver drv10_query_device, ibv_query_device@IBVERBS_1.0");

int drv10_query_port(struct ibv10_context *ctx, uint8_t port, struct ibv_port_attr *attr);
int drv10_query_port(struct ibv10_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	if (!live10("ibv_query_port", ctx, DRV_KIND_CTX10))
		return EINVAL;
	return ibv_query_port(ctx->real, port, attr);
}
__asm__(".symver drv10_query_port, ibv_query_port@IBVERBS_1.0");

int drv10_query_gid(struct ibv10_context *ctx, uint8_t port, int index, union ibv_gid *gid);
int drv10_query_gid(struct ibv10_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	if (!live10("ibv_query_gid", ctx, DRV_KIND_CTX10))
		return -1;
	return ibv_query_gid(ctx->real, port, index, gid);
}
__asm__(".symver drv10_query_gid, ibv_query_gid@IBVERBS_1.0");

int drv10_query_pkey(struct ibv10_context *ctx, uint8_t port, int index, __be16 *pkey);
int drv10_query_pkey(struct ibv10_context *ctx, uint8_t port, int index, __be16 *pkey)
{
	if (!live10("ibv_query_pkey", ctx, DRV_KIND_CTX10))
		return -1;
	return ibv_query_pkey(ctx->real, port, index, pkey);
}
__asm__(".symver drv10_query_pkey, ibv_query_pkey@IBVERBS_1.0");

/* ---- async events: today's objects in the event become their 1.0 wrappers and back ---- */

/* The kind of object an async event of this type names, 0 for a device event. */
static uint32_t event_kind10(enum ibv_event_type t)
{
	static const uint32_t kind[] = { [DRV_EV_DEVICE] = 0, [DRV_EV_CQ] = DRV_KIND_CQ10,
					 [DRV_EV_QP] = DRV_KIND_QP10, [DRV_EV_SRQ] = DRV_KIND_SRQ10 };

	return kind[drv_event_element(t)];
}

int drv10_get_async_event(struct ibv10_context *ctx, struct ibv_async_event *ev);
int drv10_get_async_event(struct ibv10_context *ctx, struct ibv_async_event *ev)
{
	void *w = NULL;
	uint32_t kind;

	if (!live10("ibv_get_async_event", ctx, DRV_KIND_CTX10))
		return -1;
	if (ibv_get_async_event(ctx->real, ev))
		return -1;
	kind = event_kind10(ev->event_type);
	switch (kind) {
	case DRV_KIND_CQ10: w = ev->element.cq->cq_context; break;
	case DRV_KIND_QP10: w = ev->element.qp->qp_context; break;
	case DRV_KIND_SRQ10: w = ev->element.srq->srq_context; break;
	default: return 0;
	}
	if (drv_handle_kind(w) == kind) /* else an object with no 1.0 handle: left as it is */
		ev->element.qp = w; /* the union's pointers share one place */
	return 0;
}
__asm__(".symver drv10_get_async_event, ibv_get_async_event@IBVERBS_1.0");

void drv10_ack_async_event(struct ibv_async_event *ev);
void drv10_ack_async_event(struct ibv_async_event *ev)
{
	struct ibv_async_event real;
	uint32_t kind;

	if (!ev) {
		drv_fail(EINVAL, "ibv_ack_async_event" V10 ": NULL event");
		return;
	}
	real = *ev;
	kind = event_kind10(ev->event_type);
	if (kind && !live10("ibv_ack_async_event", ev->element.qp, kind))
		return;
	switch (kind) {
	case DRV_KIND_CQ10: real.element.cq = ((struct ibv10_cq *)ev->element.cq)->real; break;
	case DRV_KIND_QP10: real.element.qp = ((struct ibv10_qp *)ev->element.qp)->real; break;
	case DRV_KIND_SRQ10: real.element.srq = ((struct ibv10_srq *)ev->element.srq)->real; break;
	default: break;
	}
	ibv_ack_async_event(&real);
}
__asm__(".symver drv10_ack_async_event, ibv_ack_async_event@IBVERBS_1.0");

/* ---- PDs, MRs, AHs ---- */

struct ibv10_pd *drv10_alloc_pd(struct ibv10_context *ctx);
struct ibv10_pd *drv10_alloc_pd(struct ibv10_context *ctx)
{
	struct ibv10_pd *pd;

	if (!live10("ibv_alloc_pd", ctx, DRV_KIND_CTX10))
		return NULL;
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		drv_fail(ENOMEM, "ibv_alloc_pd" V10 ": out of memory");
		return NULL;
	}
	pd->context = ctx;
	pd->real = ibv_alloc_pd(ctx->real);
	if (pd->real)
		pd->handle = pd->real->handle;
	return keep10(pd, DRV_KIND_PD10, pd->real);
}
__asm__(".symver drv10_alloc_pd, ibv_alloc_pd@IBVERBS_1.0");

int drv10_dealloc_pd(struct ibv10_pd *pd);
int drv10_dealloc_pd(struct ibv10_pd *pd)
{
	return drop10("ibv_dealloc_pd", pd, DRV_KIND_PD10);
}
__asm__(".symver drv10_dealloc_pd, ibv_dealloc_pd@IBVERBS_1.0");

struct ibv10_mr *drv10_reg_mr(struct ibv10_pd *pd, void *addr, size_t length, int access);
struct ibv10_mr *drv10_reg_mr(struct ibv10_pd *pd, void *addr, size_t length, int access)
{
	struct ibv10_mr *mr;

	if (!live10("ibv_reg_mr", pd, DRV_KIND_PD10))
		return NULL;
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		drv_fail(ENOMEM, "ibv_reg_mr" V10 ": out of memory");
		return NULL;
	}
	mr->context = pd->context;
	mr->pd = pd;
	mr->real = ibv_reg_mr(pd->real, addr, length, access);
	if (mr->real) {
		mr->handle = mr->real->handle;
		mr->lkey = mr->real->lkey;
		mr->rkey = mr->real->rkey;
	}
	return keep10(mr, DRV_KIND_MR10, mr->real);
}
__asm__(".symver drv10_reg_mr, ibv_reg_mr@IBVERBS_1.0");

int drv10_dereg_mr(struct ibv10_mr *mr);
int drv10_dereg_mr(struct ibv10_mr *mr)
{
	return drop10("ibv_dereg_mr", mr, DRV_KIND_MR10);
}
__asm__(".symver drv10_dereg_mr, ibv_dereg_mr@IBVERBS_1.0");

struct ibv10_ah *drv10_create_ah(struct ibv10_pd *pd, struct ibv_ah_attr *attr);
struct ibv10_ah *drv10_create_ah(struct ibv10_pd *pd, struct ibv_ah_attr *attr)
{
	struct ibv10_ah *ah;

	if (!live10("ibv_create_ah", pd, DRV_KIND_PD10))
		return NULL;
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		drv_fail(ENOMEM, "ibv_create_ah" V10 ": out of memory");
		return NULL;
	}
	ah->context = pd->context;
	ah->pd = pd;
	ah->real = ibv_create_ah(pd->real, attr);
	if (ah->real)
		ah->handle = ah->real->handle;
	return keep10(ah, DRV_KIND_AH10, ah->real);
}
__asm__(".symver drv10_create_ah, ibv_create_ah@IBVERBS_1.0");

int drv10_destroy_ah(struct ibv10_ah *ah);
int drv10_destroy_ah(struct ibv10_ah *ah)
{
	return drop10("ibv_destroy_ah", ah, DRV_KIND_AH10);
}
__asm__(".symver drv10_destroy_ah, ibv_destroy_ah@IBVERBS_1.0");

/* ---- CQs and completion events ---- */

struct ibv10_cq *drv10_create_cq(struct ibv10_context *ctx, int cqe, void *cq_context,
				 struct ibv_comp_channel *channel, int comp_vector);
struct ibv10_cq *drv10_create_cq(struct ibv10_context *ctx, int cqe, void *cq_context,
				 struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv10_cq *cq;

	if (!live10("ibv_create_cq", ctx, DRV_KIND_CTX10))
		return NULL;
	cq = calloc(1, sizeof(*cq)); /* zeroed mutex and cond: glibc's static initialisers */
	if (!cq) {
		drv_fail(ENOMEM, "ibv_create_cq" V10 ": out of memory");
		return NULL;
	}
	cq->context = ctx;
	cq->cq_context = cq_context;
	cq->real = ibv_create_cq(ctx->real, cqe, cq, channel, comp_vector);
	if (cq->real) {
		cq->handle = cq->real->handle;
		cq->cqe = cq->real->cqe;
	}
	return keep10(cq, DRV_KIND_CQ10, cq->real);
}
__asm__(".symver drv10_create_cq, ibv_create_cq@IBVERBS_1.0");

int drv10_resize_cq(struct ibv10_cq *cq, int cqe);
int drv10_resize_cq(struct ibv10_cq *cq, int cqe)
{
	int rc;

	if (!live10("ibv_resize_cq", cq, DRV_KIND_CQ10))
		return EINVAL;
	rc = ibv_resize_cq(cq->real, cqe);
	if (!rc)
		cq->cqe = cq->real->cqe;
	return rc;
}
__asm__(".symver drv10_resize_cq, ibv_resize_cq@IBVERBS_1.0");

int drv10_destroy_cq(struct ibv10_cq *cq);
int drv10_destroy_cq(struct ibv10_cq *cq)
{
	return drop10("ibv_destroy_cq", cq, DRV_KIND_CQ10);
}
__asm__(".symver drv10_destroy_cq, ibv_destroy_cq@IBVERBS_1.0");

int drv10_get_cq_event(struct ibv_comp_channel *channel, struct ibv10_cq **cq, void **cq_context);
int drv10_get_cq_event(struct ibv_comp_channel *channel, struct ibv10_cq **cq, void **cq_context)
{
	struct ibv_cq *real;
	void *w;

	if (!cq || !cq_context) {
		drv_fail(EINVAL, "ibv_get_cq_event" V10 ": NULL output");
		return -1;
	}
	if (ibv_get_cq_event(channel, &real, &w))
		return -1;
	if (!live10("ibv_get_cq_event", w, DRV_KIND_CQ10))
		return -1; /* a CQ of today's ABI on the channel: it has no 1.0 handle */
	*cq = w;
	*cq_context = (*cq)->cq_context;
	return 0;
}
__asm__(".symver drv10_get_cq_event, ibv_get_cq_event@IBVERBS_1.0");

void drv10_ack_cq_events(struct ibv10_cq *cq, unsigned int nevents);
void drv10_ack_cq_events(struct ibv10_cq *cq, unsigned int nevents)
{
	if (live10("ibv_ack_cq_events", cq, DRV_KIND_CQ10)) {
		ibv_ack_cq_events(cq->real, nevents);
		cq->comp_events_completed += nevents;
	}
}
__asm__(".symver drv10_ack_cq_events, ibv_ack_cq_events@IBVERBS_1.0");

static int poll_cq10(struct ibv10_cq *cq, int num_entries, struct ibv_wc *wc)
{
	if (!live10("ibv_poll_cq", cq, DRV_KIND_CQ10))
		return -EINVAL; /* as today's poll answers a dead CQ */
	return ibv_poll_cq(cq->real, num_entries, wc);
}

static int req_notify_cq10(struct ibv10_cq *cq, int solicited_only)
{
	if (!live10("ibv_req_notify_cq", cq, DRV_KIND_CQ10))
		return EINVAL;
	return ibv_req_notify_cq(cq->real, solicited_only);
}

/* ---- SRQs ---- */

struct ibv10_srq *drv10_create_srq(struct ibv10_pd *pd, struct ibv_srq_init_attr *init);
struct ibv10_srq *drv10_create_srq(struct ibv10_pd *pd, struct ibv_srq_init_attr *init)
{
	struct ibv_srq_init_attr real_init;
	struct ibv10_srq *srq;

	if (!live10("ibv_create_srq", pd, DRV_KIND_PD10))
		return NULL;
	if (!init) {
		drv_fail(EINVAL, "ibv_create_srq" V10 ": NULL srq_init_attr");
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		drv_fail(ENOMEM, "ibv_create_srq" V10 ": out of memory");
		return NULL;
	}
	srq->context = pd->context;
	srq->srq_context = init->srq_context;
	srq->pd = pd;
	real_init = *init;
	real_init.srq_context = srq;
	srq->real = ibv_create_srq(pd->real, &real_init);
	if (srq->real) {
		srq->handle = srq->real->handle;
		init->attr = real_init.attr; /* the sizes granted */
	}
	return keep10(srq, DRV_KIND_SRQ10, srq->real);
}
__asm__(".symver drv10_create_srq, ibv_create_srq@IBVERBS_1.0");

int drv10_modify_srq(struct ibv10_srq *srq, struct ibv_srq_attr *attr, int mask);
int drv10_modify_srq(struct ibv10_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	if (!live10("ibv_modify_srq", srq, DRV_KIND_SRQ10))
		return EINVAL;
	return ibv_modify_srq(srq->real, attr, mask);
}
__asm__(".symver drv10_modify_srq, ibv_modify_srq@IBVERBS_1.0");

int drv10_query_srq(struct ibv10_srq *srq, struct ibv_srq_attr *attr);
int drv10_query_srq(struct ibv10_srq *srq, struct ibv_srq_attr *attr)
{
	if (!live10("ibv_query_srq", srq, DRV_KIND_SRQ10))
		return EINVAL;
	return ibv_query_srq(srq->real, attr);
}
__asm__(".symver drv10_query_srq, ibv_query_srq@IBVERBS_1.0");

int drv10_destroy_srq(struct ibv10_srq *srq);
int drv10_destroy_srq(struct ibv10_srq *srq)
{
	return drop10("ibv_destroy_srq", srq, DRV_KIND_SRQ10);
}
__asm__(".symver drv10_destroy_srq, ibv_destroy_srq@IBVERBS_1.0");

/* ---- QPs ---- */

/* Today's init attributes for a 1.0 QP: its CQs and SRQ checked and unwrapped. 0 or EINVAL. */
static int qp_init10(const struct ibv10_qp_init_attr *a, struct ibv_qp_init_attr *r)
{
	if (!a)
		return drv_fail(EINVAL, "ibv_create_qp" V10 ": NULL qp_init_attr");
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD)
		return drv_fail(EINVAL, "ibv_create_qp" V10 ": qp_type %d is not one of the 1.0 "
			        "ABI (RC, UC, UD)", (int)a->qp_type);
	if (!live10("ibv_create_qp", a->send_cq, DRV_KIND_CQ10) ||
	    !live10("ibv_create_qp", a->recv_cq, DRV_KIND_CQ10) ||
	    (a->srq && !live10("ibv_create_qp", a->srq, DRV_KIND_SRQ10)))
		return EINVAL;
	memset(r, 0, sizeof(*r));
	r->send_cq = a->send_cq->real;
	r->recv_cq = a->recv_cq->real;
	r->srq = a->srq ? a->srq->real : NULL;
	r->cap = a->cap;
	r->qp_type = a->qp_type;
	r->sq_sig_all = a->sq_sig_all;
	return 0;
}

struct ibv10_qp *drv10_create_qp(struct ibv10_pd *pd, struct ibv10_qp_init_attr *attr);
struct ibv10_qp *drv10_create_qp(struct ibv10_pd *pd, struct ibv10_qp_init_attr *attr)
{
	struct ibv_qp_init_attr real_init;
	struct ibv10_qp *qp;

	if (!live10("ibv_create_qp", pd, DRV_KIND_PD10) || qp_init10(attr, &real_init))
		return NULL;
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		drv_fail(ENOMEM, "ibv_create_qp" V10 ": out of memory");
		return NULL;
	}
	real_init.qp_context = qp;
	qp->real = ibv_create_qp(pd->real, &real_init);
	if (!qp->real)
		return keep10(qp, DRV_KIND_QP10, NULL);
	qp->context = pd->context;
	qp->qp_context = attr->qp_context;
	qp->pd = pd;
	qp->send_cq = attr->send_cq;
	qp->recv_cq = attr->recv_cq;
	qp->srq = attr->srq;
	qp->handle = qp->real->handle;
	qp->qp_num = qp->real->qp_num;
	qp->state = qp->real->state;
	qp->qp_type = attr->qp_type;
	attr->cap = real_init.cap; /* the sizes granted */
	return keep10(qp, DRV_KIND_QP10, qp->real);
}
__asm__(".symver drv10_create_qp, ibv_create_qp@IBVERBS_1.0");

int drv10_query_qp(struct ibv10_qp *qp, struct ibv_qp_attr *attr, int mask,
		   struct ibv10_qp_init_attr *init);
int drv10_query_qp(struct ibv10_qp *qp, struct ibv_qp_attr *attr, int mask,
		   struct ibv10_qp_init_attr *init)
{
	struct ibv_qp_init_attr real_init;
	int rc;

	if (!live10("ibv_query_qp", qp, DRV_KIND_QP10))
		return EINVAL;
	if (!init)
		return drv_fail(EINVAL, "ibv_query_qp" V10 ": NULL init_attr");
	rc = ibv_query_qp(qp->real, attr, mask, &real_init);
	if (rc)
		return rc;
	init->qp_context = qp->qp_context;
	init->send_cq = qp->send_cq;
	init->recv_cq = qp->recv_cq;
	init->srq = qp->srq;
	init->cap = real_init.cap;
	init->qp_type = real_init.qp_type;
	init->sq_sig_all = real_init.sq_sig_all;
	qp->state = attr->qp_state;
	return 0;
}
__asm__(".symver drv10_query_qp, ibv_query_qp@IBVERBS_1.0");

int drv10_modify_qp(struct ibv10_qp *qp, struct ibv_qp_attr *attr, int mask);
int drv10_modify_qp(struct ibv10_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	int rc;

	if (!live10("ibv_modify_qp", qp, DRV_KIND_QP10))
		return EINVAL;
	rc = ibv_modify_qp(qp->real, attr, mask);
	if (!rc && (mask & IBV_QP_STATE))
		qp->state = attr->qp_state;
	return rc;
}
__asm__(".symver drv10_modify_qp, ibv_modify_qp@IBVERBS_1.0");

int drv10_destroy_qp(struct ibv10_qp *qp);
int drv10_destroy_qp(struct ibv10_qp *qp)
{
	return drop10("ibv_destroy_qp", qp, DRV_KIND_QP10);
}
__asm__(".symver drv10_destroy_qp, ibv_destroy_qp@IBVERBS_1.0");

int drv10_attach_mcast(struct ibv10_qp *qp, union ibv_gid *gid, uint16_t lid);
int drv10_attach_mcast(struct ibv10_qp *qp, union ibv_gid *gid, uint16_t lid)
{
	if (!live10("ibv_attach_mcast", qp, DRV_KIND_QP10))
		return EINVAL;
	return ibv_attach_mcast(qp->real, gid, lid);
}
__asm__(".symver drv10_attach_mcast, ibv_attach_mcast@IBVERBS_1.0");

int drv10_detach_mcast(struct ibv10_qp *qp, union ibv_gid *gid, uint16_t lid);
int drv10_detach_mcast(struct ibv10_qp *qp, union ibv_gid *gid, uint16_t lid)
{
	if (!live10("ibv_detach_mcast", qp, DRV_KIND_QP10))
		return EINVAL;
	return ibv_detach_mcast(qp->real, gid, lid);
}
__asm__(".symver drv10_detach_mcast, ibv_detach_mcast@IBVERBS_1.0");

/* ---- the posts: 1.0 work requests translated, WR10_CHUNK at a time ---- */

/* Post a 1.0 receive list on qp (srq NULL) or on srq; *bad the 1.0 WR today's verb refused. */
static int post_recv_list10(struct ibv_qp *qp, struct ibv_srq *srq, struct ibv10_recv_wr *wr,
			    struct ibv10_recv_wr **bad)
{
	struct ibv_recv_wr r[WR10_CHUNK], *rbad;
	struct ibv10_recv_wr *from[WR10_CHUNK];

	while (wr) {
		int n, rc;

		for (n = 0; wr && n < WR10_CHUNK; wr = wr->next, n++) {
			from[n] = wr;
			r[n] = (struct ibv_recv_wr){ .wr_id = wr->wr_id, .sg_list = wr->sg_list,
						     .num_sge = wr->num_sge };
			if (n)
				r[n - 1].next = &r[n];
		}
		rbad = NULL;
		rc = srq ? ibv_post_srq_recv(srq, r, &rbad) : ibv_post_recv(qp, r, &rbad);
		if (rc) {
			if (bad)
				*bad = rbad >= r && rbad < r + n ? from[rbad - r] : from[0];
			return rc;
		}
	}
	return 0;
}

static int post_recv10(struct ibv10_qp *qp, struct ibv10_recv_wr *wr,
		       struct ibv10_recv_wr **bad_wr)
{
	if (!live10("ibv_post_recv", qp, DRV_KIND_QP10)) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	return post_recv_list10(qp->real, NULL, wr, bad_wr);
}

static int post_srq_recv10(struct ibv10_srq *srq, struct ibv10_recv_wr *wr,
			   struct ibv10_recv_wr **bad_wr)
{
	if (!live10("ibv_post_srq_recv", srq, DRV_KIND_SRQ10)) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	return post_recv_list10(NULL, srq->real, wr, bad_wr);
}

/* Today's send WR for 1.0 WR w on qp: the opcodes 1.0 had, a UD address handle unwrapped.
 * 0 or EINVAL. */
static int send_wr10(const struct ibv10_qp *qp, const struct ibv10_send_wr *w,
		     struct ibv_send_wr *s)
{
	memset(s, 0, sizeof(*s));
	if ((unsigned)w->opcode > IBV_WR_ATOMIC_FETCH_AND_ADD)
		return drv_fail(EINVAL, "ibv_post_send" V10 ": opcode %d is not one of the 1.0 "
				"ABI (RDMA_WRITE .. ATOMIC_FETCH_AND_ADD)", (int)w->opcode);
	s->wr_id = w->wr_id;
	s->sg_list = w->sg_list;
	s->num_sge = w->num_sge;
	s->opcode = w->opcode;
	s->send_flags = (unsigned)w->send_flags;
	s->imm_data = w->imm_data;
	if (qp->qp_type == IBV_QPT_UD) {
		struct ibv10_ah *ah = live10("ibv_post_send", w->wr.ud.ah, DRV_KIND_AH10);

		if (!ah)
			return EINVAL;
		s->wr.ud.ah = ah->real;
		s->wr.ud.remote_qpn = w->wr.ud.remote_qpn;
		s->wr.ud.remote_qkey = w->wr.ud.remote_qkey;
	} else if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		   w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		s->wr.atomic.remote_addr = w->wr.atomic.remote_addr;
		s->wr.atomic.compare_add = w->wr.atomic.compare_add;
		s->wr.atomic.swap = w->wr.atomic.swap;
		s->wr.atomic.rkey = w->wr.atomic.rkey;
	} else {
		s->wr.rdma.remote_addr = w->wr.rdma.remote_addr;
		s->wr.rdma.rkey = w->wr.rdma.rkey;
	}
	return 0;
}

static int post_send10(struct ibv10_qp *qp, struct ibv10_send_wr *wr,
		       struct ibv10_send_wr **bad_wr)
{
	struct ibv_send_wr s[WR10_CHUNK], *sbad;
	struct ibv10_send_wr *from[WR10_CHUNK];
	int n, rc = 0;

	if (!live10("ibv_post_send", qp, DRV_KIND_QP10)) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	while (wr) {
		for (n = 0; wr && n < WR10_CHUNK; wr = wr->next, n++) {
			from[n] = wr;
			rc = send_wr10(qp, wr, &s[n]);
			if (rc)
				break; /* post what came before it, then report it */
			if (n)
				s[n - 1].next = &s[n];
		}
		sbad = NULL;
		if (n) {
			int prc = ibv_post_send(qp->real, s, &sbad);

			if (prc) {
				rc = prc;
				wr = sbad >= s && sbad < s + n ? from[sbad - s] : from[0];
			}
		}
		if (rc) {
			if (bad_wr)
				*bad_wr = wr;
			return rc;
		}
	}
	return 0;
}
