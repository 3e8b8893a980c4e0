/* Driver internals: the libibverbs provider for the simulated HCA. The driver reaches the
 * device only through the host half of PCIe, sim/pcie_host.h (MMIO, DMA mappings, MSI-X), and
 * the formats of model/hw/ — never model internals — so it is a driver that would run on
 * silicon.
 *
 * Ownership: every object handed to the user embeds its ibv_* struct first, with ->context
 * set (the verbs.h inline functions dispatch through it), and is registered by kind in the
 * live-handle registry (handles.c), so that a handle of the wrong kind or of a destroyed
 * object is refused with EINVAL without reading through it. */
#ifndef DRV_DRV_H
#define DRV_DRV_H

#include <infiniband/verbs.h>

#include "model/hw/hca_hw.h"
#include "sim/hcasim.h"
#include "sim/hcasim_bus.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define DRV_MAX_DEVS 16
/* The reason every memory-window verb gives (alloc_mw, bind_mw, ibv_wr_bind_mw, ...). */
#define DRV_CMD_LOG 256
#define DRV_EQ_LOG_SIZE 8
#define DRV_ASYNC_QUEUE 256

enum drv_kind { /* 0 = not a live handle */
	DRV_KIND_CTX = 1,
	DRV_KIND_PD,
	DRV_KIND_MR,
	DRV_KIND_CQ,
	DRV_KIND_QP,
	DRV_KIND_SRQ,
	DRV_KIND_AH,
	DRV_KIND_CHAN,
	DRV_KIND_MW,
	DRV_KIND_XRCD,
	/* the wrappers of the libibverbs 1.0 ABI (compat10.c) */
	DRV_KIND_LIST10,
	DRV_KIND_DEV10,
	DRV_KIND_CTX10,
	DRV_KIND_PD10,
	DRV_KIND_MR10,
	DRV_KIND_CQ10,
	DRV_KIND_SRQ10,
	DRV_KIND_QP10,
	DRV_KIND_AH10,
};

struct drv_ctx;

/* The device ops of hcasim's devices. Provider libraries (libmlx5, libefa) compare the ops
 * pointer of a verbs_device with their own: ours is never theirs. name comes first, as in
 * rdma-core's struct verbs_device_ops. */
struct drv_device_ops {
	const char *name;              /* "hcasim" */
};
extern const struct drv_device_ops drv_device_ops;

/* One HCA as the driver knows it (a PCI function it has probed). Its first six members are
 * laid out as rdma-core 44's struct verbs_device (libibverbs/driver.h, not installed), which
 * providers reach with container_of from the ibv_device. */
struct drv_dev {
	struct ibv_device ibdev;       /* handed to the user */
	const struct drv_device_ops *ops; /* verbs_device.ops: &drv_device_ops */
	int refcount;                  /* verbs_device.refcount (atomic_int): unused, 1 */
	void *entry_next, *entry_prev; /* verbs_device.entry (list_node): unused */
	void *sysfs;                   /* verbs_device.sysfs: NULL, no kernel sysfs device */
	uint64_t core_support;         /* verbs_device.core_support: 0 */
	struct hcasim_fn *fn;	       /* PCIe function */
	uint64_t bus_gen;              /* bus generation it was probed in (re-probe on reboot) */
	struct hca_hca_cap cap;        /* from QUERY_HCA_CAP at probe */
	bool set_up;                   /* its probe ran (driver.probe=open: at its first open) */
	/* command interface */
	uint8_t *cmd_page;             /* entry at 0, input at 256, output at 512 */
	int64_t cmd_map;               /* IOMMU mapping */
	uint64_t cmd_iova;             /* device address of cmd_page */
	void *qpc_store;               /* QP context backing store given at INIT_HCA */
	size_t qpc_bytes;              /* its size */
	uint32_t token;                /* last token used */
	uint32_t next_pasid;           /* last IOMMU domain handed to a context */
	bool cmd_irq;                  /* wait for CMD events instead of polling */
	bool cmd_done;                 /* CMD event for the current token seen */
	/* event queue 0: commands, port changes, completions, faults */
	struct hca_eqe *eq;            /* ring */
	int64_t eq_map;                /* IOMMU mapping */
	uint32_t eqn, eq_ci;           /* EQ number, consumer index */
	bool irq_pending;              /* MSI-X arrived, EQ not yet processed */
	uint64_t dma_faults_seen;      /* DMA_FAULT events received */
	/* host costs */
	uint64_t verb_ps, poll_ps, cmd_timeout_ps;
	bool poll_skip;                /* host.poll_skip: exact skipping of empty polls */
	/* command log for hcasim_cmd_log() */
	struct hcasim_cmd_record log[DRV_CMD_LOG];
	unsigned log_next, log_count;
	struct drv_ctx *ctxs;          /* open contexts (async event fan-out) */
	struct drv_qp **qp_by_num;     /* QPN -> QP, for CQEs and events */
	uint32_t nqp_by_num;
	struct drv_cq **cq_by_num;     /* CQN -> CQ */
	uint32_t ncq_by_num;
	struct drv_xrc_dom *xrc_doms;  /* XRC domains opened (driver/xrc.c) */
	struct drv_srq **srq_by_num;   /* SRQN -> SRQ */
	uint32_t nsrq_by_num;
	unsigned nah;                  /* address handles alive */
	uint32_t ah_seq;               /* last AH handle given out */
	/* DMA-able pages (driver/dma.c) */
	void **slabs;                  /* slabs of pages from the OS, sorted by address */
	size_t nslabs, slab_cap;
	uint8_t *slab_next;            /* next fresh page of the newest slab */
	unsigned slab_left;            /* fresh pages left there */
	void *free_pages;              /* recycled pages, linked through their first word */
	struct drv_dbrec_page *dbrec_pages; /* shared doorbell record pages */
};

struct drv_ctx {
	struct verbs_context vctx;          /* context.abi_compat = extended */
	struct drv_dev *dev;                /* device */
	uint16_t uid;                       /* user context on the device = its UAR page */
	uint32_t pasid;                     /* IOMMU domain of its memory regions */
	struct drv_ctx *next;               /* in dev->ctxs */
	struct ibv_async_event async[DRV_ASYNC_QUEUE]; /* undelivered async events */
	unsigned async_head, async_count;
};

struct drv_pd {
	struct ibv_pd pd;   /* user handle */
	uint32_t pdn;       /* device PD number */
	unsigned nah;       /* AHs in it */
};

struct drv_mr {
	struct ibv_mr mr;   /* user handle */
	int64_t map;        /* IOMMU mapping of the region */
	uint64_t iova;      /* the MR's I/O virtual address (what the verb was given) */
	unsigned access;    /* access flags as registered (optional bits dropped) */
};

struct drv_cq;

struct drv_chan {
	struct ibv_comp_channel ch; /* user handle; fd is an eventfd */
	struct drv_cq **events;     /* CQs with a completion event not yet read (FIFO) */
	unsigned ev_head, ev_count, ev_cap;
};

struct drv_cq;
/* Remove qpn's CQEs that software has not taken from cq (a QP going to RESET: IBA 10.3.1, its
 * completions are no more; what others left stays, in order). */
void drv_cq_clean(struct drv_cq *cq, uint32_t qpn);

struct drv_cq {
	union {
		struct ibv_cq cq;      /* user handle (ibv_cq is the prefix of ibv_cq_ex) */
		struct ibv_cq_ex cqx;  /* the same handle for ibv_create_cq_ex CQs */
	};
	uint32_t cqn;       /* device CQ number */
	void *ring;         /* CQE ring */
	int64_t ring_map;
	uint64_t *db;       /* doorbell record: consumer index the device reads */
	uint32_t log_size;  /* ring entries = 2^log_size */
	uint32_t ci;        /* consumer index (CQEs polled) */
	/* extended polling (cq_ex.c); unused by plain CQs */
	struct ibv_wc cur;  /* the completion start_poll/next_poll stands on */
	uint64_t cur_cycle; /* its CQE's timestamp (device core cycle) */
	uint32_t batch;     /* CQEs consumed since start_poll */
};

struct drv_srq {
	struct ibv_srq srq; /* user handle */
	uint32_t srqn;      /* device SRQ number */
	void *ring;         /* receive ring */
	int64_t ring_map;
	uint64_t *db;       /* doorbell record */
	uint32_t entries, stride; /* ring geometry */
	uint32_t max_sge;   /* actual */
	uint32_t pi;        /* WQEs posted */
	uint32_t tail;      /* oldest WQE whose completion has not been seen */
	uint64_t *wrid;     /* per slot */
	uint8_t *done;      /* per slot: completion seen */
	uint32_t xrcdn;     /* XRC SRQ: its device XRC domain (0: a basic SRQ) */
};

/* An XRC domain of the device, shared by every ibv_open_xrcd of the same file (or private to
 * one open with fd -1): docs/xrc.md. */
struct drv_xrc_dom {
	struct drv_xrc_dom *next; /* the device's list */
	uint32_t xrcdn;           /* device XRC domain number */
	bool shared;              /* opened through a file: dev and ino identify it */
	dev_t st_dev;
	ino_t st_ino;
	unsigned opens;           /* ibv_xrcd handles on it */
	struct drv_xrc_tgt *tgts; /* its XRC_RECV QPs */
};

/* An XRC_RECV QP of a domain: the QP lives while a handle on it does — its creator's or one
 * of ibv_open_qp's, from any context (docs/xrc.md). */
struct drv_xrc_tgt {
	struct drv_xrc_tgt *next; /* the domain's list */
	struct drv_xrc_dom *dom;
	uint32_t qpn;
	struct drv_qp *handles;   /* linked through drv_qp.tgt_next */
};

/* One ibv_open_xrcd: a handle of one context on a domain. */
struct drv_xrcd {
	struct ibv_xrcd xrcd;     /* user handle */
	struct drv_xrc_dom *dom;
};

struct drv_qp {
	struct ibv_qp_ex qpx;  /* user handle: qpx.qp_base is the ibv_qp */
	int sq_sig_all;        /* as created */
	struct ibv_qp_cap cap; /* actual sizes */
	void *sq, *rq;         /* rings: one buffer, the receive ring after the send ring */
	int64_t buf_map;       /* its mapping */
	uint64_t *db;          /* doorbell record (a shared page) */
	uint32_t sq_entries, sq_stride, sq_pi, sq_ci; /* send ring: posted, completed */
	uint32_t rq_entries, rq_stride, rq_pi, rq_ci; /* receive ring */
	uint64_t *sq_wrid, *rq_wrid; /* wr_id per slot */
	/* extended QP (qp_ex.c): ibv_wr_* batches */
	bool ex;               /* created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS */
	bool batch_open;       /* between wr_start and wr_complete/wr_abort */
	int batch_err;         /* first error of the open batch (positive errno), 0 if none */
	uint32_t batch_pi;     /* sq_pi at wr_start: where a failed batch rolls back to */
	uint8_t *cur;          /* the WQE the last builder began (setters fill it), or NULL */
	bool cur_needs_ud;     /* UD: the current WQE has no ibv_wr_set_ud_addr yet */
	struct drv_mcg *mcgs;  /* multicast groups it is attached to (left when its context closes) */
	/* XRC_RECV: the QP this handle is on, and the next handle on it */
	struct drv_xrc_tgt *tgt;
	struct drv_qp *tgt_next;
};

/* One multicast attachment of a QP. */
struct drv_mcg {
	union ibv_gid gid;
	uint16_t lid;
	struct drv_mcg *next;
};

struct drv_ah {
	struct ibv_ah ah;          /* user handle */
	struct ibv_ah_attr attr;   /* the address vector */
};

/* device.c */
struct drv_dev *drv_dev_of(struct ibv_context *ctx);
struct drv_ctx *drv_ctx_of(struct ibv_context *ctx); /* NULL (errno EINVAL) if not ours */
/* The driver context of a context already known to be live (an object's own). */
static inline struct drv_ctx *drv_ctx_known(struct ibv_context *ctx)
{
	return (struct drv_ctx *)((char *)ctx - offsetof(struct drv_ctx, vctx.context));
}
/* Charge the host cost of one verbs call and trace it (drv.verb). */
void drv_charge_verb_(struct drv_dev *d, const char *verb);
#define drv_charge_verb(d) drv_charge_verb_((d), __func__)
/* One GID table entry by the QUERY_GID command, charged and traced as one verb named
 * query_gid_raw (the traces name it so); 0 or an errno. */
int query_gid_raw(struct ibv_context *ctx, uint8_t port, int index, struct hca_gid_out *out);
int drv_query_port_info(struct drv_dev *d, uint8_t port, struct hca_port_info *pi);
/* The device's free-running core cycle counter (CORE_CLOCK_LO then HI: two MMIO reads). */
uint64_t drv_core_cycles(struct drv_dev *d);
/* Queue an async event: a device (port) event on every open context, an affiliated event on
 * the context of its object only. */
void drv_post_async(struct drv_dev *d, const struct ibv_async_event *ev);
void drv_post_async_ctx(struct drv_ctx *c, const struct ibv_async_event *ev);
/* The kind of object an async event of type t names (IBA 11.6.3): none for a device or port
 * event. */
enum drv_event_elem { DRV_EV_DEVICE, DRV_EV_CQ, DRV_EV_QP, DRV_EV_SRQ };
enum drv_event_elem drv_event_element(enum ibv_event_type t);

/* data.c: busy polling. An empty poll costs host.poll_ns (drv_poll_idle). A poll of a CQ that
 * follows an empty poll of the same CQ — no verb, no read of simulated time between them —
 * first jumps to the poll that first sees the next device event (drv_poll_skip: true if it
 * did, and the caller looks again): what poll-by-poll reaches, to the picosecond, without the
 * calls (docs/timing.md#busy-polling). Every verb ends a run of empty polls. */
bool drv_poll_skip(struct drv_dev *d, const void *cq);
void drv_poll_idle(struct drv_dev *d, const void *cq);
void drv_poll_run_end(void);

/* cmd.c: run a command; 0 or a positive errno, with the message in hcasim_last_error().
 * drv_cmd rings CMD_DOORBELL: the command runs as the device owner (uid 0), as the kernel's
 * commands do. drv_uctx_cmd rings the CMD doorbell of ctx's UAR page: the command runs for
 * that user context, which owns what it creates (docs/architecture.md#ownership). */
int drv_cmd(struct drv_dev *d, uint16_t opcode, const void *in, size_t in_len, void *out,
	    size_t out_len);
int drv_uctx_cmd(struct ibv_context *ctx, uint16_t opcode, const void *in, size_t in_len,
		 void *out, size_t out_len);
/* Open and close a context's user context on the device (ALLOC_UCTX / DEALLOC_UCTX). */
int drv_uctx_open(struct drv_ctx *c);
int drv_uctx_close(struct drv_ctx *c);
/* BAR0 offset of a context's UAR page. */
static inline uint32_t drv_uar(const struct drv_ctx *c)
{
	return HCA_REGION_UAR + (uint32_t)c->uid * HCA_UAR_PAGE_BYTES;
}
int drv_cmd_setup(struct drv_dev *d);
void drv_eq_process(struct drv_dev *d);

/* DMA-able memory (driver/dma.c): page-aligned, zeroed, mapped for the device (its device
 * address in *iova); 0 or positive errno. */
int drv_dma_alloc(struct drv_dev *d, size_t bytes, unsigned perm, void **mem, int64_t *map,
		  uint64_t *iova);
void drv_dma_free(struct drv_dev *d, void *mem, int64_t map);
/* An 8-byte doorbell record in a shared page the device has perm on; 0 or positive errno. */
int drv_dbrec_alloc(struct drv_dev *d, unsigned perm, void **rec, uint64_t *iova);
void drv_dbrec_free(struct drv_dev *d, void *rec);
/* The device's function is gone (a reboot; its mappings went with it): give back the host
 * memory of mem[0..n) and of every page the pools hold. */
void drv_dma_release_all(struct drv_dev *d, void *const *mem, unsigned n);

/* Read VERBS_LOG_LEVEL and VERBS_LOG_FILE, once per process, as rdma-core (driver/private.c). */
void drv_log_setup(void);
/* Record a message and set errno; returns err (positive) for `return drv_fail(EINVAL, ...)`. */
int drv_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* objects.c: create a CQ (validated; the verb's name prefixes messages). NULL with errno. */
struct drv_cq *drv_cq_create(struct drv_dev *d, const char *verb, struct ibv_context *ctx,
			     int64_t cqe, void *cq_context, struct ibv_comp_channel *channel,
			     int64_t comp_vector);
/* cq_ex.c: the verbs_context op behind ibv_create_cq_ex. */
struct ibv_cq_ex *drv_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);

/* data.c: take the CQE at cq's consumer index if the device has written it: fill *wc as
 * ibv_poll_cq(3) reports it (wr_id resolved, queue slots freed) and its timestamp in *cycle,
 * and advance the consumer index. False if the ring holds nothing new. */
bool drv_cq_take(struct drv_dev *d, struct drv_cq *cq, struct ibv_wc *wc, uint64_t *cycle);
/* After a batch of drv_cq_take: publish the consumer index in the doorbell record. */
void drv_cq_publish_ci(struct drv_cq *cq);

/* data.c: send WQEs, built alike by ibv_post_send and the ibv_wr_* API (qp_ex.c). verb
 * prefixes messages; each returns 0 or a positive errno with the message recorded.
 * drv_sq_begin checks the QP's state, the opcode for its type, the flags and the room left,
 * and writes the control segment of WQE sq_pi (not yet posted); drv_sq_commit posts it
 * (sq_pi + 1); drv_sq_ring rings the doorbell for the last `posted` WQEs (BlueFlame for one
 * small WQE). The setters fill the second segment and the data of WQE w. */
uint8_t *drv_sq_wqe(const struct drv_qp *qp, uint32_t idx);
int drv_sq_begin(struct drv_qp *qp, const char *verb, unsigned opcode, unsigned send_flags,
		 uint32_t imm_data, uint8_t **wqe);
void drv_sq_commit(struct drv_qp *qp, uint64_t wr_id);
void drv_sq_ring(struct drv_dev *d, struct drv_qp *qp, uint32_t posted);
/* The bind segment of a BIND_MW WQE: window mw (its current key), the key it takes, and
 * bind_info (a NULL mr: length 0, an unbind). 0 or EINVAL for a handle that is not live. */
int drv_sq_set_bind(const char *verb, uint8_t *w, struct ibv_mw *mw, uint32_t new_rkey,
		    const struct ibv_mw_bind_info *bind_info);
/* Memory window ops of every context (mw.c). */
struct ibv_mw *drv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int drv_dealloc_mw(struct ibv_mw *mw);
int drv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);
void drv_sq_set_rdma(uint8_t *w, uint64_t remote_addr, uint32_t rkey, uint64_t compare_add,
		     uint64_t swap);
int drv_sq_set_xrc(const char *verb, uint8_t *w, uint32_t srqn);
int drv_sq_set_ud(const struct drv_qp *qp, const char *verb, uint8_t *w, struct ibv_ah *ah,
		  uint32_t remote_qpn, uint32_t remote_qkey);
int drv_sq_set_sge(const struct drv_qp *qp, const char *verb, uint8_t *w,
		   const struct ibv_sge *sg, size_t n);
/* Inline data from sg (addr, length) or from buf: n entries. */
int drv_sq_set_inline(const struct drv_qp *qp, const char *verb, uint8_t *w,
		      const struct ibv_sge *sg, const struct ibv_data_buf *buf, size_t n);

/* qp.c: create a QP (validated; the verb's name prefixes messages). NULL with errno. */
struct drv_qp *drv_qp_create(struct ibv_pd *pd, const char *verb, struct ibv_qp_init_attr *init,
			     uint8_t flags);
/* qp_ex.c: the verbs_context op behind ibv_create_qp_ex, and the ibv_wr_* ops of a QP. */
struct ibv_qp *drv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
void drv_qp_ex_init(struct drv_qp *qp);

/* data.c: number -> object maps for CQEs and events (NULL unregisters). */
void drv_map_qp(struct drv_dev *d, uint32_t qpn, struct drv_qp *qp);
void drv_map_cq(struct drv_dev *d, uint32_t cqn, struct drv_cq *cq);
void drv_map_srq(struct drv_dev *d, uint32_t srqn, struct drv_srq *srq);
/* An EQE that is not about commands or ports: completion and affiliated events. */
void drv_dp_event(struct drv_dev *d, const struct hca_eqe *e);

/* private.c: fill the ops of a new context that hcasim does not implement with answers of
 * rdma-core's dummy ops (EOPNOTSUPP, and a message naming the verb). */
void drv_ctx_fill_unsupported(struct verbs_context *vctx);

/* handles.c: live-handle registry. */
void drv_handle_add(const void *ptr, uint32_t kind);
uint32_t drv_handle_kind(const void *ptr);           /* 0 if not live */
void drv_handle_del(const void *ptr);
/* Every live handle of kind, in a malloc'd array of *n; NULL when there is none (or no
 * memory: *n is then 0 too). */
const void **drv_handle_all(uint32_t kind, size_t *n);
/* close.c: destroy what a closing context left behind, as uverbs does when its file closes. */
void drv_ctx_cleanup(struct ibv_context *ctx);

#define DRV_OBJ(type, ptr, kind)                                                                   \
	(drv_handle_kind(ptr) == (kind) ? (type *)(void *)(ptr) : NULL)

int drv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);

/* objects.c: an SRQ of PD pd; an XRC SRQ also names its device XRC domain and CQ (0, 0 for a
 * basic SRQ). */
struct drv_srq *drv_srq_create(struct ibv_pd *ibpd, struct ibv_srq_init_attr *init,
			       const char *verb, uint32_t xrcdn, uint32_t cqn);

/* xrc.c: XRC domains, XRC SRQs and XRC_RECV QPs (the verbs_context ops), docs/xrc.md. */
struct ibv_xrcd *drv_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr);
int drv_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_srq *drv_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr);
struct ibv_qp *drv_xrc_tgt_create(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
struct ibv_qp *drv_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *attr);
/* ibv_destroy_qp of an XRC_RECV handle: true if other handles keep the QP (this one is then
 * closed and freed); false if the caller must destroy the QP, then call drv_xrc_tgt_gone. */
bool drv_xrc_tgt_close(struct drv_dev *d, struct drv_qp *qp);
void drv_xrc_tgt_gone(struct drv_qp *qp);

#endif
