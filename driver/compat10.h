/* The libibverbs 1.0 ABI (2006): the objects a program linked against IBVERBS_1.0 sees. Its
 * structs differ from today's (no extended fields, a context whose ops take 1.0 objects, a
 * send WR without the xrc, bind_mw and tso unions), so the ibv_*@IBVERBS_1.0 entry points of
 * driver/compat10.c hand out these wrappers around today's objects: each ends with a pointer
 * to the object it wraps, where the 1.0 library kept a private member. The layouts are the
 * ABI (x86_64 sizes checked below); docs/abi.md. */
#ifndef DRV_COMPAT10_H
#define DRV_COMPAT10_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct ibv10_context;

struct ibv10_device {
	void *sysfs_dev, *sysfs_ibdev;  /* obsolete: NULL */
	struct ibv_device *real;        /* was the driver pointer */
	struct _ibv_device_ops ops;     /* unused: NULL */
};

struct ibv10_pd {
	struct ibv10_context *context;
	uint32_t handle;
	struct ibv_pd *real;
};

struct ibv10_mr {
	struct ibv10_context *context;
	struct ibv10_pd *pd;
	uint32_t handle, lkey, rkey;
	struct ibv_mr *real;
};

struct ibv10_cq {
	struct ibv10_context *context;
	void *cq_context;
	uint32_t handle;
	int cqe;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t comp_events_completed, async_events_completed;
	struct ibv_cq *real;
};

struct ibv10_srq {
	struct ibv10_context *context;
	void *srq_context;
	struct ibv10_pd *pd;
	uint32_t handle;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
	struct ibv_srq *real;
};

struct ibv10_qp {
	struct ibv10_context *context;
	void *qp_context;
	struct ibv10_pd *pd;
	struct ibv10_cq *send_cq, *recv_cq;
	struct ibv10_srq *srq;
	uint32_t handle, qp_num;
	enum ibv_qp_state state;
	enum ibv_qp_type qp_type;
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	uint32_t events_completed;
	struct ibv_qp *real;
};

struct ibv10_ah {
	struct ibv10_context *context;
	struct ibv10_pd *pd;
	uint32_t handle;
	struct ibv_ah *real;
};

struct ibv10_qp_init_attr {
	void *qp_context;
	struct ibv10_cq *send_cq, *recv_cq;
	struct ibv10_srq *srq;
	struct ibv_qp_cap cap;
	enum ibv_qp_type qp_type;
	int sq_sig_all;
};

struct ibv10_recv_wr {
	struct ibv10_recv_wr *next;
	uint64_t wr_id;
	struct ibv_sge *sg_list;
	int num_sge;
};

/* Opcodes IBV_WR_RDMA_WRITE .. IBV_WR_ATOMIC_FETCH_AND_ADD: the ones 1.0 had. */
struct ibv10_send_wr {
	struct ibv10_send_wr *next;
	uint64_t wr_id;
	struct ibv_sge *sg_list;
	int num_sge;
	enum ibv_wr_opcode opcode;
	int send_flags;
	uint32_t imm_data; /* network byte order */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr, compare_add, swap;
			uint32_t rkey;
		} atomic;
		struct {
			struct ibv10_ah *ah;
			uint32_t remote_qpn, remote_qkey;
		} ud;
	} wr;
};

/* The ops a 1.0 program calls through its context: verbs.h 1.0's inline ibv_poll_cq,
 * ibv_req_notify_cq, ibv_post_send, ibv_post_recv and ibv_post_srq_recv use the five that take
 * 1.0 objects; the others were the provider's and are NULL here. */
struct ibv10_context_ops {
	void *query_device, *query_port, *alloc_pd, *dealloc_pd, *reg_mr, *dereg_mr, *create_cq;
	int (*poll_cq)(struct ibv10_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*req_notify_cq)(struct ibv10_cq *cq, int solicited_only);
	void *cq_event, *resize_cq, *destroy_cq, *create_srq, *modify_srq, *query_srq,
		*destroy_srq;
	int (*post_srq_recv)(struct ibv10_srq *srq, struct ibv10_recv_wr *wr,
			     struct ibv10_recv_wr **bad_wr);
	void *create_qp, *query_qp, *modify_qp, *destroy_qp;
	int (*post_send)(struct ibv10_qp *qp, struct ibv10_send_wr *wr,
			 struct ibv10_send_wr **bad_wr);
	int (*post_recv)(struct ibv10_qp *qp, struct ibv10_recv_wr *wr,
			 struct ibv10_recv_wr **bad_wr);
	void *create_ah, *destroy_ah, *attach_mcast, *detach_mcast;
};

struct ibv10_context {
	struct ibv10_device *device;
	struct ibv10_context_ops ops;
	int cmd_fd, async_fd, num_comp_vectors;
	struct ibv_context *real; /* was abi_compat */
};

#if defined(__x86_64__)
_Static_assert(sizeof(struct ibv10_device) == 40, "ibv_device 1.0");
_Static_assert(sizeof(struct ibv10_pd) == 24, "ibv_pd 1.0");
_Static_assert(sizeof(struct ibv10_mr) == 40, "ibv_mr 1.0");
_Static_assert(sizeof(struct ibv10_cq) == 128, "ibv_cq 1.0");
_Static_assert(sizeof(struct ibv10_srq) == 136, "ibv_srq 1.0");
_Static_assert(sizeof(struct ibv10_qp) == 168, "ibv_qp 1.0");
_Static_assert(sizeof(struct ibv10_ah) == 32, "ibv_ah 1.0");
_Static_assert(sizeof(struct ibv10_send_wr) == 72 &&
		       offsetof(struct ibv10_send_wr, wr) == 40, "ibv_send_wr 1.0");
_Static_assert(sizeof(struct ibv10_context_ops) == 27 * sizeof(void *), "ibv_context_ops 1.0");
_Static_assert(offsetof(struct ibv10_context, real) == 240, "ibv_context 1.0");
_Static_assert(sizeof(struct ibv10_qp_init_attr) == 64, "ibv_qp_init_attr 1.0");
#endif

#endif
