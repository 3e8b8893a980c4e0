/* The device's contexts (architecture §2): what firmware programs and the blocks work on —
 * QP, CQ, SRQ and memory-key contexts, the in-flight records of send WQEs — and the tables that
 * hold them (ctx.c). Each block's functions are declared in its own header (model/<block>.h);
 * which block may call which is model/blocks.dag (docs/architecture.md#the-block-graph).
 *
 * Contexts are device state: firmware writes them through the hm_*_write functions and
 * model/qp_cmd.h; the blocks own their runtime fields. A QP context's attributes are cached
 * on chip (qpc.c): a miss costs a DMA read of its slot in the backing store in host memory,
 * an eviction of a dirty entry a write. */
#ifndef HM_CTX_H
#define HM_CTX_H

#include "model/hca.h"
#include "model/pkt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HM_QPC_BYTES 1024u /* backing-store slot per QP */
#define HM_MAX_SGE 64u    /* scatter/gather entries a WQE may carry (hca.max_sge <= 64) */

/* Memory key context (IBA 10.6): what a local or remote access is checked against. A memory
 * window (IBA 10.6.7) is a key of the same table: allocated by firmware (not bound), bound and
 * invalidated by the key block (model/mkey.c) as the requester and responder reach its WQEs. */
struct hm_mkey {
	bool valid;      /* registered (a window: allocated) */
	uint8_t variant; /* low 8 bits of the key */
	uint8_t mw_type; /* 0: a memory region; HCA_MW_TYPE_1 or _2: a memory window */
	bool bound;      /* a window: bound to mr (va, len, access, iova are the window's) */
	uint32_t pdn;    /* protection domain */
	uint32_t access; /* HCA_ACCESS_* */
	uint64_t va;     /* first byte, as WRs and RETHs name it */
	uint64_t len;    /* bytes */
	uint64_t iova;   /* device address of the first byte */
	uint32_t mr;     /* a bound window: the index of its memory region */
	uint32_t qpn;    /* a bound type 2 window: the QP it is bound to (type 2B) */
};

/* Completion queue context. */
struct hm_cq {
	bool valid;         /* created */
	uint16_t uid;       /* owning user context (doorbells through its UAR page only) */
	bool error;         /* overrun: CQ in error, takes no more CQEs */
	uint64_t ring;      /* device address of the CQE ring */
	uint64_t db;        /* device address of the doorbell record (consumer index) */
	uint32_t log_size;  /* entries = 2^log_size */
	uint32_t pi;        /* producer index (CQEs written) */
	uint32_t ci;        /* consumer index as last read from the doorbell record */
	uint8_t arm;        /* 0 none, HCA_CQ_DB_ARM_NEXT, HCA_CQ_DB_ARM_SOLICITED */
	uint32_t eqn;       /* event queue */
	uint64_t cqes;      /* CQEs written */
};

/* Shared receive queue context. */
struct hm_srq {
	bool valid;        /* created */
	uint16_t uid;      /* owning user context (doorbells through its UAR page only) */
	uint32_t pdn;      /* protection domain */
	uint64_t ring;     /* device address of the receive ring */
	uint32_t entries;  /* ring entries (power of two) */
	uint32_t stride;   /* bytes per WQE */
	uint32_t pi;       /* producer index from the doorbell */
	uint32_t ci;       /* WQEs consumed */
	uint32_t limit;    /* armed limit, 0 = not armed */
	bool error;        /* catastrophic error: no more WQEs are taken from it */
	uint32_t xrcd;     /* XRC SRQ: its XRC domain (0: a basic SRQ) */
	uint32_t cqn;      /* XRC SRQ: the CQ of its receive completions */
};

/* One send WQE in flight (requester → completer), in device SRAM: written by the requester
 * when the WQE starts, read by the completer. */
struct hm_flight {
	uint32_t wqe;        /* producer index of the WQE */
	uint32_t first_psn;  /* first PSN of the message */
	uint32_t last_psn;   /* last PSN (READ: of the last response expected), from the start */
	uint8_t op;          /* HCA_WQE_OP_* */
	bool signaled;       /* write a CQE */
	uint32_t len;        /* message bytes */
};

/* Atomic results a responder keeps for duplicates: as many as the default
 * hca.max_rd_atomic, so every atomic a requester can have outstanding is covered. */
#define HM_ATOMIC_SAVED 16

/* A QP's state, one part per owner. The QP's own context (identity, attributes, state, the
 * posted indices) is written by the QP commands (qp_cmd.c), the doorbells (sq_pi, rq_pi) and
 * the QP-wide flows (qp.c: state). Each engine's part is written by that engine alone — other
 * blocks read it, and change it only by calling or signalling its owner (suite arch checks
 * this: docs/architecture.md#who-owns-what). The parts are declared here rather than in each
 * engine's header because the context embeds them and sits below the engines in the block
 * graph. Which fields the architected image (struct hca_qpc) carries is model/qpc.c. */

/* The requester's part (model/req.c). */
struct hm_req_qp {
	uint32_t sq_next;          /* next WQE to start */
	uint32_t sq_psn;           /* next PSN to send */
	uint32_t sent_psn;         /* one past the highest PSN sent: the window of outstanding PSNs
				    * ends here (a rewind leaves it; responses to what was sent
				    * before still count) */
	uint32_t cur_off;          /* bytes of WQE sq_next already sent */
	bool cur_started;          /* WQE sq_next fetched and begun */
	uint32_t rd_out;           /* READ/atomic requests outstanding */
	bool local_wait;           /* a bind or invalidation (sq_next) waits for the WQEs before it */
	struct hm_flight *flight;  /* per WQE, indexed by wqe % sq_entries */
};

/* The WQE fetcher's part (model/wqe_fetch.c). */
struct hm_fetch_qp {
	uint8_t *wqe_buf;          /* copies of fetched WQEs (sq_entries * sq_stride bytes) */
	uint32_t sq_fetch_lo, sq_fetched; /* WQEs [lo, fetched) are in wqe_buf from the last read */
	sim_time_t sq_fetch_ready; /* that read completes then (the window is readable from then) */
	bool sq_fetch_err;         /* that read failed */
	sim_time_t sq_wake_at;     /* a wake-up is scheduled for then (0: none) */
};

/* The completer's part (model/comp.c). */
struct hm_comp_qp {
	uint32_t sq_done;          /* WQEs completed */
	uint32_t *next_rsp;        /* per WQE (as flight): first PSN not yet answered — READ, the
				    * response expected next; SEND/WRITE, the packet after the last
				    * one ACKed (the progress mark) */
	uint8_t retry_left;        /* retries left before RETRY_EXC_ERR (reloads on progress) */
	uint8_t rnr_left;          /* RNR retries left (7 = infinite, reloads on progress) */
	bool rnr_wait;             /* waiting out an RNR NAK's timer */
	bool nak_seen;             /* a sequence NAK for nak_psn was acted on, no progress since */
	bool rd_gap;               /* a READ response gap was acted on, no in-order response since */
	uint32_t acked_psn;        /* highest PSN the responder has acknowledged (observed only:
				    * forward progress is the oldest WQE's, next_rsp) */
	uint32_t nak_psn;
};

/* The timer block's part (model/timers.c): the local ACK timer — armed, its expiry and the
 * place among that instant's events it reserved, and the QP's one pending timer event (0:
 * none) with its time. */
struct hm_timers_qp {
	bool on;
	sim_time_t at;
	sim_event_id id;
	sim_event_id ev;
	sim_time_t ev_at;
};

/* The responder's part (model/resp.c). */
struct hm_resp_qp {
	uint32_t rq_ci;            /* receive WQEs consumed */
	uint32_t epsn;             /* expected PSN */
	uint32_t msn;              /* message sequence number */
	bool nak_sent;             /* PSN sequence NAK sent, waiting for the expected PSN */
	bool comm_est;             /* COMM_EST raised (first packet in RTR) */
	bool last_wqe_sent;        /* LAST_WQE_REACHED raised (SRQ QP in ERR) */
	bool in_msg;               /* between FIRST and LAST of a message */
	bool uc_drop;              /* UC: dropping until the next FIRST/ONLY */
	uint8_t msg_kind;          /* 0 send, 1 write (of the message in progress) */
	uint32_t rwqe;             /* receive WQE in use (producer index) */
	bool rwqe_srq;             /* it came from the SRQ */
	uint32_t rwqe_pdn;         /* PD its buffers are checked in (the SRQ's, or the QP's) */
	struct hca_wqe_data *rsge; /* its scatter list (HM_MAX_SGE entries, device SRAM) */
	uint32_t rsge_n;           /* entries */
	uint32_t recv_off;         /* bytes of the message received so far */
	uint64_t wr_va;            /* RDMA WRITE: next address */
	uint32_t wr_rkey;          /* RDMA WRITE: rkey */
	uint32_t wr_left;          /* RDMA WRITE: bytes still to come */
	uint32_t wr_len;           /* RDMA WRITE: message length (from the RETH) */
	uint32_t rd_in;            /* READ/atomic being answered */
	uint32_t xrc_srqn;         /* XRC_RECV: the XRC SRQ of the message in progress (XRCETH) */
	/* the results of the last HM_ATOMIC_SAVED atomics (PSN, original value, MSN of the
	 * ACK), replayed for a duplicate instead of executing it again (IBA 9.7.5.1.1) */
	struct hm_atomic_saved {
		uint32_t psn, msn;
		uint64_t orig;
		bool valid;
	} atomics[HM_ATOMIC_SAVED];
	uint8_t atomic_next;       /* slot the next result goes to */
	/* receive WQE prefetch (device SRAM beside the context): the next receive WQE of the
	 * RQ, read when it is posted so that a SEND does not wait for it */
	uint8_t *rpf_buf;          /* its bytes (HM_MAX_SGE scatter entries) */
	bool rpf_valid;            /* rpf_buf holds WQE rpf_idx (or its failed read) */
	bool rpf_err;              /* the read failed: using it is a catastrophic error */
	uint32_t rpf_idx;          /* producer index of the WQE it holds */
	sim_time_t rpf_ready;      /* when its read completes */
};

/* The receive path's part (model/rx.c). */
struct hm_rx_qp {
	sim_time_t busy_ps;        /* the QP's receive handling is busy until then */
	struct hm_rx_frame *head, *tail; /* frames waiting for it, in arrival order */
	bool drain;                /* a drain event is scheduled */
};

/* The context cache's part (model/qpc.c; its tags, dirty bits and LRU order are the qpc
 * block's, model/twin.h). */
struct hm_qpc_line {
	uint32_t slot_crc;         /* CRC-32 of the image last written to the backing-store slot */
};

/* Per-QP statistics (device counters, not context), counted by whichever block sees the
 * packet. */
struct hm_qp_stats {
	uint64_t tx_pkts, tx_bytes; /* packets and payload bytes sent (requests and responses) */
	uint64_t rx_pkts, rx_bytes; /* packets and payload bytes received */
	uint64_t naks_sent, naks_rcvd; /* NAKs (any kind) */
};

struct hm_qp {
	/* the QP's own context */
	bool valid;            /* created */
	uint8_t type;          /* HCA_QPT_* */
	uint8_t state;         /* HCA_QPS_* */
	bool sq_sig_all;       /* every WQE signaled */
	bool has_srq;          /* receives from srqn */
	bool mcast_lb_block;   /* UD: created with HCA_QP_CREATE_BLOCK_SELF_MCAST_LB */
	bool drained_sent;     /* SQ_DRAINED raised for the current SQD stay */
	uint16_t uid;          /* owning user context (doorbells through its UAR page only) */
	uint32_t qpn, pdn, scqn, rcqn, srqn;
	uint32_t xrcd;         /* XRC_RECV: its XRC domain (no PD, CQs or rings of its own) */
	struct hca_qp_attr attr; /* as last modified */
	uint64_t sq;           /* device address of the send ring */
	uint32_t sq_entries, sq_stride;
	uint32_t sq_pi;        /* WQEs posted (from doorbells, extended past 16 bits) */
	uint64_t rq;           /* device address of the receive ring */
	uint32_t rq_entries, rq_stride;
	uint32_t rq_pi;        /* receive WQEs posted */
	/* the engines' parts */
	struct hm_req_qp req;
	struct hm_fetch_qp fetch;
	struct hm_comp_qp comp;
	struct hm_timers_qp tmr;
	struct hm_resp_qp resp;
	struct hm_rx_qp rx;
	struct hm_qpc_line cache;
	struct hm_qp_stats stats;
};

#define HM_DMA_INJECT_MAX 8

/* Per-device data-path state. */
struct hm_dp {
	struct hm_qp **qps;       /* by QPN, allocated on create */
	uint32_t nqps;            /* array size */
	struct hm_cq *cqs;        /* by CQN */
	uint32_t ncqs;
	struct hm_srq *srqs;      /* by SRQN */
	uint32_t nsrqs;
	struct hm_mkey *mkeys;    /* by key >> 8 */
	uint32_t nmkeys;
	/* QP context cache */
	uint64_t qpc_base;        /* device address of the backing store */
	uint32_t qpc_entries;     /* cache capacity */
	uint64_t qpc_hits, qpc_misses, qpc_writebacks;
	uint64_t qpc_corrupt;     /* images read back that differ from the one written */
	/* send arbiter: the sched block (model/twin.h) holds the round-robin FIFO of QPs with
	 * work; this is set when a QP joins it and cleared when a pop finds it empty */
	bool sched_maybe;
	bool req_busy;            /* the requester engine has a step scheduled */
	sim_time_t rx_free_ps;    /* receive pipeline free at */
	/* counters */
	uint64_t tx_pkts, rx_pkts, rx_crc_errors, rx_dropped, bad_doorbells;
	/* DMA read errors to inject (hcasim_dma_read_error) */
	struct hm_dma_inject {
		uint8_t client; /* HM_DMA_* */
		uint32_t num;   /* QPN or SRQN */
		uint32_t left;  /* reads still to fail; 0 = slot free */
	} dma_inject[HM_DMA_INJECT_MAX];
};

/* A 16-bit producer index from a doorbell, extended to 32 bits next to the current one (a
 * running count only grows). */
/* The port a QP sends from (1-based): its primary path's, port 1 until one is set. */
static inline unsigned hm_qp_port(const struct hm_qp *qp)
{
	return qp->attr.port_num ? qp->attr.port_num : 1;
}

static inline uint32_t hm_extend16(uint32_t cur, uint32_t v16)
{
	uint32_t v = (cur & ~0xffffu) | (v16 & 0xffffu);

	if (v < cur)
		v += 0x10000u;
	return v;
}

/* A received frame waiting for its QP (model/rx.c). */
struct hm_rx_frame {
	struct hm_rx_frame *next; /* FIFO */
	unsigned port;            /* receiving port, 1-based */
	size_t len;               /* bytes */
	uint8_t *buf;             /* the frame (a link buffer it owns: sim_link_frame_free) */
};


/* ---- the tables (ctx.c) ---- */
struct hm_dp *hm_dp_create(struct hm_dev *d);
void hm_dp_destroy(struct hm_dp *dp);
/* Contexts as firmware writes them; CQ and SRQ contexts as the blocks use them (NULL if not
 * created). */
void hm_mkey_write(struct hm_dev *d, uint32_t index, const struct hm_mkey *mk);
/* How many memory windows are bound to the memory region at index (firmware refuses to
 * deregister it while any is). */
uint32_t hm_mkey_windows_on(struct hm_dev *d, uint32_t index);
/* Invalidate every type 2 window bound to QP qpn (the QP is destroyed); how many were. */
uint32_t hm_mkey_unbind_qp(struct hm_dev *d, uint32_t qpn);
void hm_cq_write(struct hm_dev *d, uint32_t cqn, const struct hm_cq *cq);
struct hm_cq *hm_cq_get(struct hm_dev *d, uint32_t cqn);
void hm_srq_write(struct hm_dev *d, uint32_t srqn, const struct hm_srq *srq);
struct hm_srq *hm_srq_get(struct hm_dev *d, uint32_t srqn);
/* The QP qpn without going through the context cache (a QP's own events look it up so), or
 * NULL. */
static inline struct hm_qp *hm_qp_lookup(const struct hm_dev *d, uint32_t qpn)
{
	return qpn < d->dp->nqps ? d->dp->qps[qpn] : NULL;
}

/* Current attributes as the data path has them (PSNs move with traffic); NULL if no such QP. */
static inline const struct hm_qp *hm_qp_peek(const struct hm_dev *d, uint32_t qpn)
{
	return hm_qp_lookup(d, qpn);
}
/* Grow a context array to hold index i. */
void *hm_ctx_grow(void *arr, uint32_t *n, uint32_t i, size_t elem);

#endif
