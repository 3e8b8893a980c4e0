/* Driver: the parts of libibverbs' ABI that face providers and old binaries rather than
 * verbs programs: rdma-core 44's private node IBVERBS_PRIVATE_34 (the ibv_cmd_* kernel
 * command helpers, provider registration, logging) and the context ops hcasim does not
 * implement (the libibverbs 1.0 ABI is compat10.c's). None of these has
 * a kernel behind it here, so they answer as a provider without the op answers (EOPNOTSUPP),
 * each with a message naming the call. docs/abi.md lists them. */
#include "driver/drv.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stubs keep the parameter lists of their prototypes (the callers' ABI) without using them. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* ---- context ops without an implementation: rdma-core fills every op a provider leaves
 * out with a dummy that answers EOPNOTSUPP (NULL with errno, or the errno returned). ---- */

#define UNSUP_PTR(type, name, why, ...)                                                            \
	static type *unsup_##name(__VA_ARGS__)                                                     \
	{                                                                                          \
		drv_fail(EOPNOTSUPP, "ibv_" #name ": %s", why);                                    \
		return NULL;                                                                       \
	}
#define UNSUP_INT(name, why, ...)                                                                  \
	static int unsup_##name(__VA_ARGS__)                                                       \
	{                                                                                          \
		return drv_fail(EOPNOTSUPP, "ibv_" #name ": %s", why);                             \
	}

#define NO_DM "device memory is not supported"
#define NO_FLOW "flow steering is not supported (no raw Ethernet QPs)"
#define NO_COUNTERS "counter objects are not supported (see hcasim_qp_counters)"
#define NO_WQ "work queues and RSS are not supported"
#define NO_TD "thread domains and parent domains are not supported"

UNSUP_INT(advise_mr, "prefetch advice needs on-demand paging, which is not supported",
	  struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
	  struct ibv_sge *sg_list, uint32_t num_sges)
UNSUP_PTR(struct ibv_mr, alloc_null_mr, "null memory regions are not supported",
	  struct ibv_pd *pd)
UNSUP_INT(read_counters, NO_COUNTERS, struct ibv_counters *c, uint64_t *v, uint32_t n,
	  uint32_t flags)
UNSUP_INT(attach_counters_point_flow, NO_COUNTERS, struct ibv_counters *c,
	  struct ibv_counter_attach_attr *attr, struct ibv_flow *flow)
UNSUP_PTR(struct ibv_counters, create_counters, NO_COUNTERS, struct ibv_context *ctx,
	  struct ibv_counters_init_attr *attr)
UNSUP_INT(destroy_counters, NO_COUNTERS, struct ibv_counters *c)
UNSUP_PTR(struct ibv_mr, reg_dm_mr, NO_DM, struct ibv_pd *pd, struct ibv_dm *dm,
	  uint64_t dm_offset, size_t length, unsigned int access)
UNSUP_PTR(struct ibv_dm, alloc_dm, NO_DM, struct ibv_context *ctx,
	  struct ibv_alloc_dm_attr *attr)
UNSUP_INT(free_dm, NO_DM, struct ibv_dm *dm)
UNSUP_INT(modify_flow_action_esp, NO_FLOW, struct ibv_flow_action *a,
	  struct ibv_flow_action_esp_attr *attr)
UNSUP_INT(destroy_flow_action, NO_FLOW, struct ibv_flow_action *a)
UNSUP_PTR(struct ibv_flow_action, create_flow_action_esp, NO_FLOW, struct ibv_context *ctx,
	  struct ibv_flow_action_esp_attr *attr)
UNSUP_INT(modify_qp_rate_limit, "per-QP rate limits are not supported", struct ibv_qp *qp,
	  struct ibv_qp_rate_limit_attr *attr)
UNSUP_PTR(struct ibv_pd, alloc_parent_domain, NO_TD, struct ibv_context *ctx,
	  struct ibv_parent_domain_init_attr *attr)
UNSUP_INT(dealloc_td, NO_TD, struct ibv_td *td)
UNSUP_PTR(struct ibv_td, alloc_td, NO_TD, struct ibv_context *ctx, struct ibv_td_init_attr *attr)
UNSUP_INT(modify_cq, "CQ moderation is not supported", struct ibv_cq *cq,
	  struct ibv_modify_cq_attr *attr)
UNSUP_INT(post_srq_ops, "tag matching is not supported", struct ibv_srq *srq,
	  struct ibv_ops_wr *op, struct ibv_ops_wr **bad_op)
UNSUP_INT(destroy_rwq_ind_table, NO_WQ, struct ibv_rwq_ind_table *t)
UNSUP_PTR(struct ibv_rwq_ind_table, create_rwq_ind_table, NO_WQ, struct ibv_context *ctx,
	  struct ibv_rwq_ind_table_init_attr *attr)
UNSUP_INT(destroy_wq, NO_WQ, struct ibv_wq *wq)
UNSUP_INT(modify_wq, NO_WQ, struct ibv_wq *wq, struct ibv_wq_attr *attr)
UNSUP_PTR(struct ibv_wq, create_wq, NO_WQ, struct ibv_context *ctx, struct ibv_wq_init_attr *attr)
UNSUP_INT(destroy_flow, NO_FLOW, struct ibv_flow *flow)
UNSUP_PTR(struct ibv_flow, create_flow, NO_FLOW, struct ibv_qp *qp, struct ibv_flow_attr *attr)

#define FILL(p, op)                                                                                \
	do {                                                                                       \
		if (!(p)->op)                                                                      \
			(p)->op = unsup_##op;                                                      \
	} while (0)

/* rdma-core also keeps the old ops of ibv_context_ops pointing at the implementations. */
#define COMPAT(p, op, fn) ((p)->_compat_##op = (void *(*)(void))(void (*)(void))(fn))

void drv_ctx_fill_unsupported(struct verbs_context *v)
{
	struct ibv_context_ops *o = &v->context.ops;

	o->alloc_mw = drv_alloc_mw;
	o->bind_mw = drv_bind_mw;
	o->dealloc_mw = drv_dealloc_mw;
	o->_compat_query_device = ibv_query_device;
	o->_compat_query_port = ibv_query_port;
	COMPAT(o, alloc_pd, ibv_alloc_pd);
	COMPAT(o, dealloc_pd, ibv_dealloc_pd);
	COMPAT(o, resize_cq, ibv_resize_cq);
	COMPAT(o, destroy_cq, ibv_destroy_cq);
	COMPAT(o, create_srq, ibv_create_srq);
	COMPAT(o, modify_srq, ibv_modify_srq);
	COMPAT(o, query_srq, ibv_query_srq);
	COMPAT(o, destroy_srq, ibv_destroy_srq);
	COMPAT(o, create_qp, ibv_create_qp);
	COMPAT(o, query_qp, ibv_query_qp);
	COMPAT(o, modify_qp, ibv_modify_qp);
	COMPAT(o, destroy_qp, ibv_destroy_qp);
	COMPAT(o, create_ah, ibv_create_ah);
	COMPAT(o, destroy_ah, ibv_destroy_ah);
	COMPAT(o, attach_mcast, ibv_attach_mcast);
	COMPAT(o, detach_mcast, ibv_detach_mcast);
	FILL(v, advise_mr);
	FILL(v, alloc_null_mr);
	FILL(v, read_counters);
	FILL(v, attach_counters_point_flow);
	FILL(v, create_counters);
	FILL(v, destroy_counters);
	FILL(v, reg_dm_mr);
	FILL(v, alloc_dm);
	FILL(v, free_dm);
	FILL(v, modify_flow_action_esp);
	FILL(v, destroy_flow_action);
	FILL(v, create_flow_action_esp);
	FILL(v, modify_qp_rate_limit);
	FILL(v, alloc_parent_domain);
	FILL(v, dealloc_td);
	FILL(v, alloc_td);
	FILL(v, modify_cq);
	FILL(v, post_srq_ops);
	FILL(v, destroy_rwq_ind_table);
	FILL(v, create_rwq_ind_table);
	FILL(v, destroy_wq);
	FILL(v, modify_wq);
	FILL(v, create_wq);
	if (!v->ibv_destroy_flow)
		v->ibv_destroy_flow = unsup_destroy_flow;
	if (!v->ibv_create_flow)
		v->ibv_create_flow = unsup_create_flow;
}

/* ---- IBVERBS_PRIVATE_34: the provider interface. A provider library (libmlx5, libefa, ...)
 * that is loaded registers itself from its constructor; nothing calls it back, because every
 * device here is hcasim's. The kernel command helpers have no kernel behind them. ---- */

bool verbs_allow_disassociate_destroy;

void verbs_register_driver_34(const void *ops);
void verbs_register_driver_34(const void *ops)
{
	/* Accepted and ignored: provider libraries call this while they load. */
}

void drv_register_driver_old(const char *name, void *init_func);
void drv_register_driver_old(const char *name, void *init_func)
{
	/* The pre-2017 provider interface (ibv_register_driver@IBVERBS_1.1, not a default
	 * version): ignored, as rdma-core ignores it. */
}
__asm__(".symver drv_register_driver_old, ibv_register_driver@IBVERBS_1.1");

#define PRIV_CMD(name)                                                                             \
	int name(void);                                                                            \
	int name(void)                                                                             \
	{                                                                                          \
		return drv_fail(EOPNOTSUPP, #name ": no kernel uverbs interface behind hcasim's "  \
				"libibverbs (provider-private call)");                             \
	}

PRIV_CMD(ibv_cmd_advise_mr)
PRIV_CMD(ibv_cmd_alloc_dm)
PRIV_CMD(ibv_cmd_alloc_mw)
PRIV_CMD(ibv_cmd_alloc_pd)
PRIV_CMD(ibv_cmd_attach_mcast)
PRIV_CMD(ibv_cmd_close_xrcd)
PRIV_CMD(ibv_cmd_create_ah)
PRIV_CMD(ibv_cmd_create_counters)
PRIV_CMD(ibv_cmd_create_cq)
PRIV_CMD(ibv_cmd_create_cq_ex)
PRIV_CMD(ibv_cmd_create_flow)
PRIV_CMD(ibv_cmd_create_flow_action_esp)
PRIV_CMD(ibv_cmd_create_qp)
PRIV_CMD(ibv_cmd_create_qp_ex)
PRIV_CMD(ibv_cmd_create_qp_ex2)
PRIV_CMD(ibv_cmd_create_rwq_ind_table)
PRIV_CMD(ibv_cmd_create_srq)
PRIV_CMD(ibv_cmd_create_srq_ex)
PRIV_CMD(ibv_cmd_create_wq)
PRIV_CMD(ibv_cmd_dealloc_mw)
PRIV_CMD(ibv_cmd_dealloc_pd)
PRIV_CMD(ibv_cmd_dereg_mr)
PRIV_CMD(ibv_cmd_destroy_ah)
PRIV_CMD(ibv_cmd_destroy_counters)
PRIV_CMD(ibv_cmd_destroy_cq)
PRIV_CMD(ibv_cmd_destroy_flow)
PRIV_CMD(ibv_cmd_destroy_flow_action)
PRIV_CMD(ibv_cmd_destroy_qp)
PRIV_CMD(ibv_cmd_destroy_rwq_ind_table)
PRIV_CMD(ibv_cmd_destroy_srq)
PRIV_CMD(ibv_cmd_destroy_wq)
PRIV_CMD(ibv_cmd_detach_mcast)
PRIV_CMD(ibv_cmd_free_dm)
PRIV_CMD(ibv_cmd_get_context)
PRIV_CMD(ibv_cmd_modify_cq)
PRIV_CMD(ibv_cmd_modify_flow_action_esp)
PRIV_CMD(ibv_cmd_modify_qp)
PRIV_CMD(ibv_cmd_modify_qp_ex)
PRIV_CMD(ibv_cmd_modify_srq)
PRIV_CMD(ibv_cmd_modify_wq)
PRIV_CMD(ibv_cmd_open_qp)
PRIV_CMD(ibv_cmd_open_xrcd)
PRIV_CMD(ibv_cmd_poll_cq)
PRIV_CMD(ibv_cmd_post_recv)
PRIV_CMD(ibv_cmd_post_send)
PRIV_CMD(ibv_cmd_post_srq_recv)
PRIV_CMD(ibv_cmd_query_context)
PRIV_CMD(ibv_cmd_query_device_any)
PRIV_CMD(ibv_cmd_query_mr)
PRIV_CMD(ibv_cmd_query_port)
PRIV_CMD(ibv_cmd_query_qp)
PRIV_CMD(ibv_cmd_query_srq)
PRIV_CMD(ibv_cmd_read_counters)
PRIV_CMD(ibv_cmd_reg_dm_mr)
PRIV_CMD(ibv_cmd_reg_dmabuf_mr)
PRIV_CMD(ibv_cmd_reg_mr)
PRIV_CMD(ibv_cmd_req_notify_cq)
PRIV_CMD(ibv_cmd_rereg_mr)
PRIV_CMD(ibv_cmd_resize_cq)
PRIV_CMD(execute_ioctl)

/* The attribute count of an ioctl command buffer chain: with no ioctl interface, only the
 * caller's own count is known (execute_ioctl then answers EOPNOTSUPP). */
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	return num_attrs;
}

void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    void *context_offset, uint32_t driver_id);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    void *context_offset, uint32_t driver_id)
{
	drv_fail(EOPNOTSUPP, "_verbs_init_and_alloc_context: provider contexts cannot be "
		 "created on hcasim's libibverbs (every device is hcasim's)");
	return NULL;
}

void verbs_uninit_context(struct verbs_context *context);
void verbs_uninit_context(struct verbs_context *context)
{
	/* Only _verbs_init_and_alloc_context makes what this would undo, and it never does. */
}

void verbs_set_ops(struct verbs_context *vctx, const void *ops);
void verbs_set_ops(struct verbs_context *vctx, const void *ops)
{
	drv_fail(EOPNOTSUPP, "verbs_set_ops: provider ops cannot be installed on hcasim's "
		 "libibverbs");
}

/* A provider initialising its CQ: the fields libibverbs owns, as ibv_create_cq sets them. */
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context)
{
	if (!cq)
		return;
	cq->context = context;
	cq->channel = channel;
	cq->cq_context = cq_context;
	cq->comp_events_completed = 0;
	cq->async_events_completed = 0;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
}

/* mlx5dv_open_device and friends reach this only for their own devices; for hcasim's the
 * plain open is what it means. */
struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data);
struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data)
{
	if (private_data) {
		drv_fail(EOPNOTSUPP, "verbs_open_device: provider-private open attributes are "
			 "not supported");
		return NULL;
	}
	return ibv_open_device(device);
}

int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fnfmt, ...);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fnfmt, ...)
{
	drv_fail(EOPNOTSUPP, "ibv_read_ibdev_sysfs_file: hcasim's devices have no kernel sysfs "
		 "device (see ibv_read_sysfs_file)");
	return -1;
}

/* Providers' verbs_err/verbs_warn/verbs_debug, as rdma-core's release build (Debian's) logs
 * them: VERBS_LOG_LEVEL, read once as strtol reads it (0, the default, logs nothing), and
 * VERBS_LOG_FILE, opened once for appending; without the file, or if it cannot be opened,
 * nothing is logged. rdma-core takes a bad value silently; here the value is taken the same
 * way, with a warning naming the variable and what was made of it. */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static uint32_t log_level;
static FILE *log_file;

static void log_setup(void)
{
	const char *lv = getenv("VERBS_LOG_LEVEL"), *file = getenv("VERBS_LOG_FILE");
	char *end;

	if (!lv)
		return;
	log_level = (uint32_t)strtol(lv, &end, 0);
	if (end == lv)
		fprintf(stderr, "hcasim: VERBS_LOG_LEVEL: '%.40s' is not a number: level 0, nothing "
			"is logged (as rdma-core)\n", lv);
	else if (*end)
		fprintf(stderr, "hcasim: VERBS_LOG_LEVEL: '%.40s': '%.40s' after the number is "
			"ignored: level %u (as rdma-core)\n", lv, end, log_level);
	if (!log_level)
		return;
	if (!file || !*file) {
		fprintf(stderr, "hcasim: VERBS_LOG_LEVEL is %u but VERBS_LOG_FILE is %s: nothing is "
			"logged (as rdma-core's release build)\n", log_level, file ? "empty" : "unset");
	} else if (!(log_file = fopen(file, "a"))) {
		fprintf(stderr, "hcasim: VERBS_LOG_FILE: cannot open '%.200s': %s: nothing is "
			"logged (as rdma-core)\n", file, strerror(errno));
	}
	if (!log_file)
		log_level = 0;
}

void drv_log_setup(void)
{
	int saved = errno;

	pthread_once(&log_once, log_setup);
	errno = saved;
}

void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...);
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	drv_log_setup();
	if (level > log_level)
		return;
	va_start(ap, fmt);
	vfprintf(log_file, fmt, ap);
	va_end(ap);
	fflush(log_file); /* a provider's last words must reach the file if the program dies */
	errno = saved;
}


