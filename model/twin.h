/* Transaction ports of the blocks that have an RTL twin (architecture §5.3, §6), from the
 * registry model/twin.def.
 *
 * A block with a twin is reached only through its port: a table of operations, each taking an
 * input transaction and filling an output transaction, both stamped with the device core cycle.
 * Three implementations plug into a port:
 *   model     the C twin (model/<block>.c), the reference;
 *   rtl       the Verilated RTL behind a transactor (sim/vl/), registered at load time with
 *             hm_twin_register(); the transactor drives the input at in.cycle, clocks the block
 *             only while it is busy, and stamps out.cycle with the cycle the result was valid;
 *   lockstep  both on the same inputs, the C twin's answer used: every output field and its
 *             cycle are compared, and a mismatch is reported with block, cycle, field, expected
 *             (model) and got (RTL);
 *   checked   both on the same inputs, the RTL's answer used and the C twin checking it (as
 *             Ibex's co-simulation checks the core against an ISS): compared the same way.
 * A mismatch halts the simulation, or is counted and the run goes on (impl.on_mismatch); the
 * count and the first reports are kept for hcasim_mismatches() and summed up at exit.
 * The mode of each block comes from impl.<block> in the configuration or HCASIM_IMPL
 * ("sched=rtl,cqe=lockstep"; "all=checked"). Every operation goes through one call,
 * hm_twin_call(), which dispatches, compares and feeds the waves.
 *
 * Block state that lives in the block (the arbiter's FIFO and per-QP pending bits) is held by
 * the implementation (the RTL's in RAMs sized for every QPN the configuration allows); context that lives in memory (a CQ's indexes, a QP's PSNs) is passed in
 * and the caller applies what comes out. Latencies that the model takes from the configuration
 * (pipe.doorbell_cycles, pipe.cqe_cycles) are part of the input, so the RTL counts them out. */
#ifndef MODEL_TWIN_H
#define MODEL_TWIN_H

#include "model/hw/hca_hw.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hm_dev;
struct sim_config;

/* HM_TWIN_WAVES: an implementation may dump its instances' pins (the C twins and the SystemC
 * blocks do not: both hooks NULL). waves_start(b, dir) starts dumping instance b to
 * dir/hca<dev>.<block>.fst from its next transaction, unless it dumps already (WAVES=1 starts
 * it at creation; the model's waves, WAVES=1 or hcasim_waves(), start it in the directory of
 * their VCD). waves(b) finishes that file (its last transaction included, the file complete;
 * nothing later is dumped) and returns its path, or NULL when it writes none. A lockstep
 * mismatch, which stops the run, names it in its report (docs/rtl.md). */

/* What every implementation of a port has besides its operations: the first member of each
 * block's ops table (struct hm_<block>_ops, generated below from model/twin.def). */
struct hm_twin_base {
	/* an instance for a device of nqps QPNs (QPNs 0 .. nqps-1, nqps <= max_nqps) */
	void *(*create)(struct hm_dev *d, uint32_t nqps);
	void (*destroy)(void *b);
	const char *(*waves)(void *b); /* see HM_TWIN_WAVES */
	void (*waves_start)(void *b, const char *dir); /* see HM_TWIN_WAVES */
	uint32_t max_nqps;   /* the most QPNs an instance can hold (0: no limit); checked at boot */
	const char *sized;   /* with max_nqps: what was sized ("RTL arbiter"), in the message */
	const char *rebuild; /* with max_nqps: how to build it for n QPNs: "...=" that n follows */
};

/* create and destroy of a C twin that keeps no state of its own (an instance is d). */
void *hm_twin_stateless_create(struct hm_dev *d, uint32_t nqps);
void hm_twin_stateless_destroy(void *b);

/* ---- sched: doorbell decode and the send arbiter --------------------------------------- */

/* DOORBELL: a send-queue doorbell for a QP (its context read by the caller). */
struct hm_sched_db_in {
	uint64_t cycle;      /* core cycle the doorbell reaches the block */
	uint32_t lat;        /* pipe.doorbell_cycles: cycles until the verdict */
	uint32_t qpn;        /* 24 bits */
	uint16_t pi16;       /* producer index from the doorbell (low 16 bits) */
	uint8_t state;       /* HCA_QPS_* of the QP */
	uint32_t sq_pi;      /* the QP's 32-bit producer index so far */
	uint32_t sq_done;    /* WQEs completed */
	uint32_t sq_entries; /* ring size (power of two, <= 65536) */
};
enum hm_sched_verdict {
	HM_SCHED_QUEUED = 0,     /* new pi taken; the QP is pending in the arbiter */
	HM_SCHED_FLUSH = 1,      /* new pi taken; the QP is in ERR or SQE: flush, not queued */
	HM_SCHED_BAD_STATE = 2,  /* RESET, INIT or RTR: ignored */
	HM_SCHED_BAD_INDEX = 3,  /* the index runs ahead of the ring: ignored */
};
struct hm_sched_db_out {
	uint64_t cycle;   /* core cycle the verdict is valid: in.cycle + in.lat */
	uint8_t verdict;  /* enum hm_sched_verdict */
	uint32_t new_pi;  /* the 32-bit producer index (extended next to sq_pi); QUEUED, FLUSH */
};

/* PUSH: make a QP pending (if it is not already) at the tail of the round robin.
 * POP: the QP at the head (no longer pending), or none. Both answer HM_SCHED_PIPELINE cycles
 * after they are taken: the RTL keeps the pending bits and the FIFO in RAMs with a registered
 * read, behind a pipeline of that many stages (rtl/sched.sv PIPELINE, which the Makefile reads
 * from here). The model uses the answer at once: the arbiter's latency is within
 * pipe.sched_cycles, so no simulated time depends on this number. */
#define HM_SCHED_PIPELINE 2
struct hm_sched_push_in {
	uint64_t cycle;
	uint32_t qpn;
};
struct hm_sched_push_out {
	uint64_t cycle;
	bool queued;      /* false: it was pending already */
};
struct hm_sched_pop_in {
	uint64_t cycle;
};
struct hm_sched_pop_out {
	uint64_t cycle;
	bool valid;       /* false: no QP pending */
	uint32_t qpn;
};

/* The operations of the port: HM_TWIN_OPS_<block>(X) calls X(block, op, in, out) for each. */
#define HM_TWIN_OPS_sched(X)                                                                       \
	X(sched, doorbell, hm_sched_db_in, hm_sched_db_out)                                        \
	X(sched, push, hm_sched_push_in, hm_sched_push_out)                                        \
	X(sched, pop, hm_sched_pop_in, hm_sched_pop_out)

/* ---- cqe: the CQE writer ---------------------------------------------------------------- */

/* POST: one completion for a CQ whose context is given. With ci_fresh = 0 the block takes
 * lat cycles and may answer NEED_CI (the ring looks full); the caller then reads the CQ's
 * doorbell record and posts again with the refreshed ci and ci_fresh = 1, which is answered
 * in the cycle it is issued. */
struct hm_cqe_in {
	uint64_t cycle;       /* core cycle the request reaches the block */
	uint32_t lat;         /* pipe.cqe_cycles */
	uint32_t cqn;
	uint32_t pi, ci;      /* the CQ's producer and consumer index (32-bit, extended) */
	uint8_t log_size;     /* ring of 2^log_size entries */
	uint8_t arm;          /* 0, HCA_CQ_DB_ARM_SOLICITED or HCA_CQ_DB_ARM_NEXT */
	bool solicited;       /* the completion is for a solicited message */
	bool ci_fresh;        /* ci was just read from the doorbell record */
	struct hca_cqe cqe;   /* the fields to write; owner and timestamp are the block's */
};
enum hm_cqe_action {
	HM_CQE_WRITE = 0,     /* write image at slot; pi advances */
	HM_CQE_NEED_CI = 1,   /* read the doorbell record and post again with ci_fresh */
	HM_CQE_OVERRUN = 2,   /* no room: the CQ goes to error, CQ_ERROR is raised */
};
struct hm_cqe_out {
	uint64_t cycle;       /* the cycle the action is valid (the CQE's timestamp for WRITE) */
	uint8_t action;       /* enum hm_cqe_action */
	uint32_t slot;        /* WRITE: ring slot, pi mod 2^log_size */
	uint32_t new_pi;      /* WRITE: pi + 1 */
	uint8_t new_arm;      /* WRITE: the CQ's arm state after it */
	bool event;           /* WRITE: a completion event (COMP EQE) is raised */
	struct hca_cqe image; /* WRITE: the 64 bytes as written, owner and timestamp included */
};

#define HM_TWIN_OPS_cqe(X) X(cqe, post, hm_cqe_in, hm_cqe_out)

/* ---- psn: the responder's PSN classifier (RC) ------------------------------------------- */

/* CLASSIFY: a request's PSN against the expected PSN (24-bit serial numbers, IBA 9.7.5.1):
 * EXPECTED, DUPLICATE (behind, within 2^23) or AHEAD (a sequence error; the first one since
 * the expected PSN last arrived earns a NAK). Answered in the cycle it is issued. */
struct hm_psn_in {
	uint64_t cycle;
	uint32_t psn, epsn;   /* 24 bits each */
	bool nak_sent;        /* a sequence NAK is outstanding for epsn */
};
enum hm_psn_class { HM_PSN_EXPECTED = 0, HM_PSN_DUPLICATE = 1, HM_PSN_AHEAD = 2 };
struct hm_psn_out {
	uint64_t cycle;
	uint8_t cls;          /* enum hm_psn_class */
	bool send_nak;        /* AHEAD and no NAK outstanding: send one now */
	bool nak_sent;        /* the flag after this packet: set by AHEAD, cleared by EXPECTED */
};

#define HM_TWIN_OPS_psn(X) X(psn, classify, hm_psn_in, hm_psn_out)

/* ---- mkey: the memory-key check (IBA 10.6) ---------------------------------------------- */

/* CHECK: an access of len bytes at va through key, by a QP of PD pdn, needing the rights
 * access (HCA_ACCESS_*): an lkey (remote 0: memory regions only) or an rkey (remote 1: a
 * region, or a bound window; a type 2 window must be bound to qpn). The key table is the
 * device's (model/ctx.h struct hm_mkey, index key >> 8); until the block has a DMA port the
 * caller reads the entry at that index and hands it in as ctx (all zero when the index is
 * beyond the table), with the table's size, so the block checks the index, the entry and the
 * access. Answered HM_MKEY_LATENCY cycles after it is taken (a registered answer). */
#define HM_MKEY_LATENCY 1
struct hm_mkey_ctx {
	bool valid;      /* registered (a window: allocated) */
	uint8_t variant; /* low 8 bits of the key */
	uint8_t mw_type; /* 0: a region; HCA_MW_TYPE_1 or _2: a window */
	bool bound;      /* a window: bound */
	uint32_t pdn;
	uint32_t access; /* HCA_ACCESS_* it grants */
	uint32_t qpn;    /* a bound type 2 window: its QP (24 bits) */
	uint64_t va, len, iova;
};
struct hm_mkey_in {
	uint64_t cycle;
	bool remote;          /* an rkey (else an lkey) */
	uint32_t key;
	uint32_t pdn;         /* the PD of the access */
	uint32_t qpn;         /* the accessing QP (24 bits) */
	uint64_t va, len;
	uint32_t access;      /* HCA_ACCESS_* needed (0: a local read) */
	uint32_t nkeys;       /* entries in the key table */
	struct hm_mkey_ctx ctx; /* the entry at key >> 8 */
};
enum hm_mkey_result {
	HM_MKEY_OK = 0,
	HM_MKEY_BAD_KEY = 1,    /* no such key / wrong variant */
	HM_MKEY_BAD_PD = 2,     /* key of another PD */
	HM_MKEY_BAD_ACCESS = 3, /* access right missing */
	HM_MKEY_BAD_RANGE = 4,  /* outside the region */
	HM_MKEY_BAD_QP = 5,     /* a type 2 window bound to another QP */
};
struct hm_mkey_out {
	uint64_t cycle;       /* in.cycle + HM_MKEY_LATENCY */
	uint8_t result;       /* enum hm_mkey_result */
	uint64_t iova;        /* OK: the device address of va; else 0 */
};

#define HM_TWIN_OPS_mkey(X) X(mkey, check, hm_mkey_in, hm_mkey_out)
/* ---- timers: the per-QP ACK-timeout and RNR timers --------------------------------------- */

/* SET: arm (or restart) a QP's timer of a kind (model/timers.h enum hm_timer_kind: 0 the ACK
 * timer, 1 the RNR wait) to expire at core cycle at, or stop it; answers whether it was armed
 * and its expiry then. EXPIRE: take the timer at cycle, its expiry's: fired when it is armed
 * with an expiry at or before cycle (the RNR wait: when it is armed, docs/blocks/timers.md),
 * which is then dropped. Both answer HM_TIMERS_LATENCY
 * cycles after they are taken (rtl/timers.sv reads the timer's word from an SRAM; the model
 * uses the answer at once: the kernel event at the expiry is the model's, so no simulated time
 * depends on this number). */
#define HM_TIMERS_LATENCY 1
struct hm_timers_set_in {
	uint64_t cycle;
	uint32_t qpn;
	uint8_t kind;         /* enum hm_timer_kind */
	bool arm;             /* arm or restart (true) or stop */
	uint64_t at;          /* arm: the expiry, a core cycle */
};
struct hm_timers_set_out {
	uint64_t cycle;       /* in.cycle + HM_TIMERS_LATENCY */
	bool was_armed;
	uint64_t was_at;      /* the expiry it had (0 if it was not armed) */
};
struct hm_timers_expire_in {
	uint64_t cycle;       /* the expiry's cycle: due by it */
	uint32_t qpn;
	uint8_t kind;
};
struct hm_timers_expire_out {
	uint64_t cycle;       /* in.cycle + HM_TIMERS_LATENCY */
	bool fired;           /* armed and due: now stopped */
	uint64_t at;          /* its expiry (0 if it was not armed) */
};

#define HM_TWIN_OPS_timers(X)                                                                      \
	X(timers, set, hm_timers_set_in, hm_timers_set_out)                                        \
	X(timers, expire, hm_timers_expire_in, hm_timers_expire_out)

/* ---- resp_fe: the responder's front end (IBA 9.7.5.1, 9.7.5.1.6, 10.6) --------------------- */

/* CHECK: one request packet (RC, UC or XRC_RECV; UD has none) before the responder executes
 * it, against the QP's responder context: the PSN (the psn block is its first stage: RC
 * classifies, UC finds a gap), the opcode sequence and an XRC request's SRQ, the opcode valid
 * for the QP type, then by kind the QP's access flags, an atomic's alignment, a WRITE's
 * length against its RETH, and the rkey (the mkey block is its key stage). The verdict is
 * where the packet goes; the caller applies it (model/resp.c). The key table and the SRQ
 * table are the device's: until the block has a DMA port the caller reads the entry of the key
 * the request names (hm_resp_fe_rkey) and the XRC domain of the SRQ its XRCETH names. Answered
 * HM_RESP_FE_LATENCY cycles after it is taken (the key stage's registered answer): the first
 * cycle of pipe.resp_cycles, which is at least that (docs/timing.md). */
#define HM_RESP_FE_LATENCY 1
struct hm_resp_fe_in {
	uint64_t cycle;
	/* the packet: its opcode decoded by the opcode table (model/pkt.h) */
	uint8_t opcode;
	uint8_t pos;          /* enum hm_op_pos */
	uint8_t cls;          /* enum hm_op_class bits */
	uint32_t psn, paylen;
	uint64_t reth_va;     /* RETH (READ, WRITE FIRST/ONLY) */
	uint32_t reth_rkey, reth_len;
	uint64_t atomic_va;   /* AtomicETH */
	uint32_t atomic_rkey;
	uint32_t pkt_srqn;    /* XRCETH */
	/* the QP and its responder context */
	uint8_t qp_type;      /* HCA_QPT_RC, _UC or _XRC_RECV */
	uint32_t qpn;
	uint32_t qp_access;   /* the QP's HCA_ACCESS_* */
	uint32_t epsn;
	bool nak_sent, in_msg, uc_drop;
	bool msg_write;       /* the message in progress is a WRITE (else a SEND) */
	uint64_t wr_va;       /* a WRITE in progress: where its next byte goes, its rkey, bytes left */
	uint32_t wr_rkey, wr_left;
	uint32_t xrc_srqn;    /* XRC: the SRQ of the message in progress */
	uint32_t qp_xrcd;     /* XRC: the QP's XRC domain, and that of the SRQ pkt_srqn names (0: */
	uint32_t srq_xrcd;    /* none) */
	/* the key stage: the PD of the access, the table's size, its entry at rkey >> 8 */
	uint32_t pdn, nkeys;
	struct hm_mkey_ctx key;
};
enum hm_resp_fe_verdict {
	HM_RESP_FE_EXECUTE = 0,   /* every check passed: execute it as kind */
	HM_RESP_FE_DUPLICATE = 1, /* RC: a duplicate, answered again, never executed twice */
	HM_RESP_FE_AHEAD = 2,     /* RC: a PSN gap; send_nak says whether it earns the NAK */
	HM_RESP_FE_UC_LOST = 3,   /* UC: a packet of a message already lost: dropped */
	HM_RESP_FE_OPCODE_SEQ = 4, /* NAK invalid request: the opcode does not continue the message */
	HM_RESP_FE_XRC_SRQ = 5,   /* NAK invalid request: the XRCETH's SRQ */
	HM_RESP_FE_OPCODE = 6,    /* NAK invalid request: no request of the QP's type */
	HM_RESP_FE_NO_ACCESS = 7, /* NAK remote access: the QP's access flags refuse it */
	HM_RESP_FE_ALIGN = 8,     /* NAK invalid request: an atomic not 8-byte aligned */
	HM_RESP_FE_LENGTH = 9,    /* NAK invalid request: a WRITE's length against its RETH */
	HM_RESP_FE_RKEY = 10,     /* NAK remote access: the rkey (key says how) */
};
enum hm_resp_fe_kind {
	HM_RESP_FE_READ = 0, HM_RESP_FE_ATOMIC = 1, HM_RESP_FE_SEND = 2, HM_RESP_FE_WRITE = 3
};
struct hm_resp_fe_out {
	uint64_t cycle;       /* in.cycle + HM_RESP_FE_LATENCY */
	uint8_t verdict;      /* enum hm_resp_fe_verdict */
	uint8_t kind;         /* enum hm_resp_fe_kind, once the opcode is known valid; else 0 */
	uint8_t psn_cls;      /* the PSN stage: enum hm_psn_class (UC: a gap if not EXPECTED) */
	bool send_nak;        /* RC: AHEAD and no NAK outstanding */
	bool nak_sent;        /* RC: the flag after this packet; UC: unchanged */
	uint8_t key;          /* the key stage: enum hm_mkey_result (OK when it had none) */
	uint64_t iova;        /* the key stage passed: the device address of the access; else 0 */
};

#define HM_TWIN_OPS_resp_fe(X) X(resp_fe, check, hm_resp_fe_in, hm_resp_fe_out)
/* ---- qpc: the QP context cache ----------------------------------------------------------- */

/* LOOKUP: the context of QP qpn is needed at cycle (the edge that takes the request). A hit
 * answers HM_QPC_HIT_CYCLES cycles later (done, hit: rtl/qpc.sv reads the QP's tag word from
 * an SRAM, then answers; a property of the design, which the model's time follows). A miss
 * answers then with the block's first DMA request (req): the write-back of the least recently
 * used entry when the cache holds entries contexts and that one is dirty (evict, victim, wb;
 * req WRITE, tag HM_QPC_TAG_WB), else the fill (req READ of qpn's slot, tag HM_QPC_TAG_FILL).
 * The caller performs the request and hands its completion back with COMPLETE at the cycle it
 * completes: the completion of the write-back is answered with the fill's request, that of
 * the fill with done, both in the completion's cycle. Requests carry the slot's address
 * (base + qpn * HCA_QPC_SLOT_BYTES) and the image's length (struct hca_qpc). write marks the
 * entry dirty. FORGET: a destroyed QP leaves the cache without a write-back (was_cached), in
 * HM_QPC_HIT_CYCLES cycles. The tags, dirty bits and LRU order live in the block (the RTL's in
 * SRAMs of one word per QPN); the contexts themselves are the caller's. */
#define HM_QPC_HIT_CYCLES 2
enum hm_qpc_req { HM_QPC_REQ_NONE = 0, HM_QPC_REQ_READ = 1, HM_QPC_REQ_WRITE = 2 };
enum { HM_QPC_TAG_FILL = 0, HM_QPC_TAG_WB = 1 };
struct hm_qpc_in {
	uint64_t cycle;
	uint32_t qpn;         /* 24 bits */
	bool write;           /* the use changes the context: the entry becomes dirty */
	uint32_t entries;     /* the cache's capacity (hca.qpc_cache_entries) */
	uint64_t base;        /* the backing store's device address (INIT_HCA qpc_base) */
};
struct hm_qpc_cpl_in {
	uint64_t cycle;       /* the cycle the request completed */
	uint8_t tag;          /* the request's tag */
};
struct hm_qpc_out {
	uint64_t cycle;       /* the cycle of the answer */
	bool done;            /* the lookup is answered: the context may be used */
	bool hit;             /* LOOKUP: a hit */
	bool evict;           /* LOOKUP, a miss: the cache was full and victim leaves it */
	uint32_t victim;      /* its QPN */
	bool wb;              /* it was dirty: written back (the first request) */
	uint8_t req;          /* enum hm_qpc_req: the DMA request presented at cycle */
	uint8_t req_tag;
	uint32_t req_qpn;
	uint64_t req_addr;
	uint32_t req_len;
};
struct hm_qpc_forget_in {
	uint64_t cycle;
	uint32_t qpn;
};
struct hm_qpc_forget_out {
	uint64_t cycle;       /* in.cycle + HM_QPC_HIT_CYCLES */
	bool was_cached;
};

#define HM_TWIN_OPS_qpc(X)                                                                         \
	X(qpc, lookup, hm_qpc_in, hm_qpc_out)                                                      \
	X(qpc, complete, hm_qpc_cpl_in, hm_qpc_out)                                                \
	X(qpc, forget, hm_qpc_forget_in, hm_qpc_forget_out)
/* ---- the DMA port of a block (docs/rtl.md "The DMA port") --------------------------------- */

/* A block with a DMA port reads and writes host memory through the struct hm_dma that its
 * caller hands in with a transaction: the buffer the data move to and from (the block's part of
 * the device RAM that the DMA engine reads and writes, as Corundum's DMA RAM), and the transfer
 * itself on sim/pcie, the call a C block makes, so that the timing is the same. Every transfer
 * of a transaction is recorded; in lockstep the C twin's happen and the RTL's are answered from
 * the record when they are the same (kind, address, buffer offset, length, issue time), so that
 * host memory, the PCIe link and injected errors see each transfer once. A transfer the record
 * does not hold is refused (-EIO) and marks the port diverged; the outputs then differ. */
#define HM_DMA_MAX 4 /* transfers one transaction makes at most */
struct hm_dma_xfer {
	bool write;         /* a write (from the buffer), else a read (into it) */
	uint32_t tag;       /* the block's tag for it (not compared: the block's own naming) */
	uint64_t addr;      /* device address (IOVA) */
	uint32_t off, len;  /* where in the buffer, how many bytes */
	uint64_t issue_ps;  /* simulated time it is issued */
	uint64_t done_ps;   /* ... and completes (its last completion, or the write landed) */
	int err;            /* 0, or how it failed (-EFAULT: refused by the IOMMU, or injected) */
};
struct hm_dma {
	/* The caller's: one transfer of len bytes at addr from or into data, issued at *t_ps,
	 * which it sets to the completion; 0 or -errno. */
	int (*xfer)(struct hm_dma *p, bool write, uint64_t addr, uint8_t *data, uint32_t len,
		    uint64_t *t_ps);
	void *arg;          /* for xfer */
	uint8_t *buf;       /* the buffer */
	uint32_t buf_len;
	unsigned runs;      /* implementations that began (the first does, the second replays) */
	unsigned n;         /* transfers recorded */
	unsigned next;      /* the next one an implementation's transfer is matched against */
	bool diverged;      /* an implementation asked for a transfer the record does not hold */
	struct hm_dma_xfer rec[HM_DMA_MAX];
};
/* An implementation starts its transaction (the caller zeroes n, runs and diverged before it
 * calls the port): the first does its transfers, a second's are matched from the first. */
void hm_dma_begin(struct hm_dma *p);
/* One transfer x (issue_ps set) by an implementation: done by xfer, or answered from the
 * record (see above); sets x->done_ps and x->err and returns x->err. */
int hm_dma_do(struct hm_dma *p, struct hm_dma_xfer *x);

/* ---- wqe_fetch: the send WQE fetcher --------------------------------------------------- */

/* GET: WQE idx for the requester at cycle. It is in the window (the WQEs [lo, fetched) the last
 * read brought in) or the window is moved: a DMA read of up to prefetch posted WQEs from idx,
 * contiguous in the ring (a read stops at its end), into the WQE buffer at idx's slot. READY
 * (the window's read has completed, without error): decoded HM_WQE_DECODE_CYCLES after cycle,
 * and when idx is the window's last WQE and more are posted, the read of the next ones is
 * issued then. WAIT: its read is under way (ready > t_ps). FAILED: the read failed.
 * PREFETCH: a send doorbell at cycle: the read of the newly posted WQEs from idx (the
 * requester's next) when nothing is fetched ahead (fetched == idx, more posted) and the
 * requester is not inside a WQE; else IDLE.
 * A transaction that issues a read answers when the read completes (out.cycle), with the
 * window's err and ready from its completion; one that issues none answers at cycle (WAIT,
 * FAILED, IDLE) or at the decode (READY). The window is context the caller keeps and hands in.
 * CHECK: the validation of a fetched WQE (as hardware must check what software wrote), from its
 * fields: an opcode the QP type allows (wqe.def), a UD address vector in range, an inline
 * length or scatter/gather count that fits the WQE stride and the device, a message length
 * within 2^31 (UD: the path MTU), an atomic of exactly 8 bytes. Answered in the cycle it is
 * issued (within the decode). */
#define HM_WQE_DECODE_CYCLES 8 /* rtl/wqe_fetch.sv DECODE_CYCLES; pipe.wqe_cycles must equal it */
#define HM_WQE_MAX_SGE 64      /* scatter/gather entries a WQE carries at most (HM_MAX_SGE) */
struct hm_fetch_win {
	uint32_t lo, fetched; /* WQEs [lo, fetched) are in the buffer, or being read into it */
	bool err;             /* that read failed */
	uint64_t ready;       /* the time (ps) its read completed: readable from then */
};
enum hm_fetch_op { HM_FETCH_GET = 0, HM_FETCH_PREFETCH = 1 };
enum hm_fetch_result {
	HM_FETCH_READY = 0,
	HM_FETCH_WAIT = 1,
	HM_FETCH_FAILED = 2,
	HM_FETCH_IDLE = 3, /* PREFETCH: nothing to read */
};
struct hm_wqe_fetch_in {
	uint64_t cycle;       /* the core edge at or after t_ps */
	uint64_t t_ps;        /* the time the request reaches the block (a read issued at once
			       * starts then; the window is readable when ready <= t_ps) */
	uint8_t op;           /* enum hm_fetch_op */
	uint32_t qpn;         /* 24 bits */
	uint32_t idx;         /* GET: the WQE; PREFETCH: the requester's next */
	bool busy;            /* PREFETCH: the requester is inside a WQE */
	uint32_t sq_pi;       /* WQEs posted (32-bit index) */
	uint32_t sq_entries;  /* ring size (power of two, <= 65536) */
	uint32_t sq_stride;   /* bytes per WQE (power of two) */
	uint64_t sq;          /* the ring's device address */
	uint32_t prefetch;    /* hca.wqe_prefetch: WQEs one read brings in at most (1 .. 64) */
	struct hm_fetch_win win;
	struct hm_dma *dma;   /* the DMA port: buf is the WQE buffer (sq_entries * sq_stride) */
};
struct hm_wqe_fetch_out {
	uint64_t cycle;       /* the answer (see above) */
	uint8_t result;       /* enum hm_fetch_result */
	uint64_t decoded;     /* READY: the cycle the WQE is decoded (cycle + DECODE_CYCLES) */
	uint8_t reads;        /* DMA reads issued (0 or 1) */
	struct hm_fetch_win win; /* the window after */
};
struct hm_wqe_check_in {
	uint64_t cycle;
	uint8_t qp_type;      /* HCA_QPT_* */
	uint32_t sq_stride;
	uint32_t mtu;         /* the QP's path MTU, bytes (UD) */
	uint8_t nports;
	uint8_t opcode, flags;
	uint32_t num_sge, inline_len;
	uint32_t sge_len[HM_WQE_MAX_SGE]; /* the first num_sge (at most what fits) */
	uint32_t ud_remote_qpn;
	uint8_t ud_sl, ud_port;
	uint32_t ud_flow_label;
};
struct hm_wqe_check_out {
	uint64_t cycle;       /* in.cycle */
	uint8_t status;       /* HCA_WC_* */
	uint32_t verr;        /* HCA_VERR_* */
	uint64_t len;         /* the message length (0 when a check before it failed) */
};

#define HM_TWIN_OPS_wqe_fetch(X)                                                                   \
	X(wqe_fetch, fetch, hm_wqe_fetch_in, hm_wqe_fetch_out)                                     \
	X(wqe_fetch, check, hm_wqe_check_in, hm_wqe_check_out)

/* ---- plugging in -------------------------------------------------------------------------- */

/* The blocks, HM_TWIN_<NAME>, in registry order. */
enum hm_twin {
#define TWIN(name, NAME, cat, doc) HM_TWIN_##NAME,
#include "model/twin.def"
#undef TWIN
	HM_TWIN_COUNT
};
enum hm_impl { HM_IMPL_MODEL, HM_IMPL_RTL, HM_IMPL_LOCKSTEP, HM_IMPL_CHECKED };
/* impl.on_mismatch: the first mismatch halts the run, or each is counted and the run goes on. */
enum hm_on_mismatch { HM_ON_MISMATCH_STOP, HM_ON_MISMATCH_COUNT };

/* Each block's ops table: the common part, then one function per operation of its port. */
#define HM_TWIN_OP_MEMBER(block, op, in_t, out_t)                                                  \
	void (*op)(void *b, const struct in_t *in, struct out_t *out);
#define TWIN(name, NAME, cat, doc)                                                                 \
	struct hm_##name##_ops {                                                                   \
		struct hm_twin_base base;                                                          \
		HM_TWIN_OPS_##name(HM_TWIN_OP_MEMBER)                                              \
	};                                                                                         \
	extern const struct hm_##name##_ops hm_##name##_model; /* the C twin */
#include "model/twin.def"
#undef TWIN

/* The RTL implementation of a block, registered by sim/vl at load time (ops is the block's
 * struct hm_<block>_ops). */
void hm_twin_register(enum hm_twin b, const void *ops);
/* The RTL registered for a block, or NULL; its C twin; its name ("sched"); its trace
 * category (model/twin.def); its summary. */
const void *hm_twin_rtl(enum hm_twin b);
const void *hm_twin_model(enum hm_twin b);
const char *hm_twin_name(enum hm_twin b);
const char *hm_twin_trace_cat(enum hm_twin b);
/* The block named name, or -1. */
int hm_twin_find(const char *name);
/* The mode named name (model, rtl, lockstep, checked), or -1. */
int hm_impl_find(const char *name);
/* The impl.<block> setting of block b in c (sim/config.def), and every block's, in order. */
unsigned *hm_twin_impl(struct sim_config *c, enum hm_twin b);
void hm_twin_modes(const struct sim_config *c, unsigned mode[HM_TWIN_COUNT]);
/* 0 if every block whose mode is not model has an RTL twin (else -ENOTSUP naming it) that can
 * hold a device of max_qp QPs (hca.max_qp; else -EINVAL naming the key, the need and the limit
 * the RTL was built for). Called at boot, before any device is made. */
int hm_twin_check(const unsigned mode[HM_TWIN_COUNT], uint32_t max_qp);
/* A device's block instances, in the modes given (checked with hm_twin_check first). */
/* Create d's blocks with twins in their modes; models: each block's C twin (hm_twin_model). */
void hm_twins_create(struct hm_dev *d, const unsigned mode[HM_TWIN_COUNT],
		     const void *const models[HM_TWIN_COUNT]);
void hm_twins_destroy(struct hm_dev *d);
/* Every RTL instance of d that is not dumping yet starts dumping into dir (HM_TWIN_WAVES). */
void hm_twins_waves(struct hm_dev *d, const char *dir);

/* ---- mismatches ---- */

/* Reports kept (and printed when they happen); every mismatch is counted. */
#define HM_TWIN_KEPT 16
/* Forget the mismatches (at boot). */
void hm_twin_mismatches_reset(void);
/* Mismatches since then; the report of the i-th (from 0), NULL if not kept. */
uint64_t hm_twin_mismatches(void);
const char *hm_twin_mismatch(uint64_t i);
/* Print the count, by block, and the first report to stderr, once, if there were mismatches
 * and none halted the run (whose report says it all): at shutdown, and at exit. */
void hm_twin_mismatch_summary(void);

/* ---- the one port call ---- */

/* One output field compared in lockstep: its name in the report, offset and size. */
struct hm_twin_field {
	const char *name;
	size_t off, size;
};
#define HM_TWIN_FIELD(type, field) { #field, offsetof(type, field), sizeof(((type *)0)->field) }

/* One operation of a block's port, as hm_twin_call sees it (HM_TWIN_OP defines one). */
struct hm_twin_op {
	enum hm_twin block;
	const char *name;   /* "doorbell": in the mismatch report */
	/* ops->op(b, in, out) on the block's ops table */
	void (*call)(const void *ops, void *b, const void *in, void *out);
	const struct hm_twin_field *fields; /* the output fields compared, in this order */
	size_t nfields;
	/* the fields of an image after them (NULL: none), compared one by one when out has one:
	 * returns them and sets *off to the image's offset in out */
	const struct hca_field_desc *(*image)(const void *out, size_t *off);
	/* the transaction to the model's waves (model/waves.c), while sim_waves_on */
	void (*waves)(struct hm_dev *d, const void *in, const void *out);
};

/* HM_TWIN_OP(block, op, in, out, waves, image, fields...): the descriptor block##_##op##_op of
 * operation op of block's port (HM_TWIN_OPS_<block>), in the block's model/<block>.c; fields
 * are HM_TWIN_FIELD(struct out, field) entries, cycle first. */
#define HM_TWIN_OP(block, op, in_t, out_t, waves_fn, image_fn, ...)                               \
	static void block##_##op##_call(const void *ops, void *b, const void *in, void *out)       \
	{                                                                                          \
		((const struct hm_##block##_ops *)ops)->op(b, in, out);                            \
	}                                                                                          \
	static void block##_##op##_waves(struct hm_dev *d, const void *in, const void *out)        \
	{                                                                                          \
		waves_fn(d, (const struct in_t *)in, (const struct out_t *)out);                   \
	}                                                                                          \
	static const struct hm_twin_field block##_##op##_fields[] = { __VA_ARGS__ };               \
	static const struct hm_twin_op block##_##op##_op = {                                       \
		(enum hm_twin)hm_twin_of_##block, #op, block##_##op##_call, block##_##op##_fields,               \
		sizeof(block##_##op##_fields) / sizeof(block##_##op##_fields[0]), image_fn,        \
		block##_##op##_waves                                                               \
	}

/* The registry's enum under the block's lower-case name, for HM_TWIN_OP. */
enum {
#define TWIN(name, NAME, cat, doc) hm_twin_of_##name = HM_TWIN_##NAME,
#include "model/twin.def"
#undef TWIN
};

/* Run op on device d's implementation of its block: the C twin, the RTL, or both (lockstep:
 * out gets the C twin's answer and scratch, an out of the same type, the RTL's; checked: out
 * gets the RTL's and scratch the C twin's). Both are compared field by field, cycle included;
 * the first difference is reported, naming device, block, op, in_cycle, field, expected (the
 * C twin's) and got (the RTL's), and halts the simulation (sim_halt) unless
 * impl.on_mismatch = count. Then the waves, of the answer used. */
void hm_twin_call(struct hm_dev *d, const struct hm_twin_op *op, uint64_t in_cycle,
		  const void *in, void *out, void *scratch);

/* The ports as the rest of the model calls them (model/<block>.c). */
void hm_sched_doorbell(struct hm_dev *d, const struct hm_sched_db_in *in,
		       struct hm_sched_db_out *out);
bool hm_sched_push(struct hm_dev *d, uint32_t qpn, uint64_t cycle);
bool hm_sched_pop(struct hm_dev *d, uint64_t cycle, uint32_t *qpn);
void hm_cqe_twin_post(struct hm_dev *d, const struct hm_cqe_in *in, struct hm_cqe_out *out);
void hm_psn_classify(struct hm_dev *d, const struct hm_psn_in *in, struct hm_psn_out *out);
void hm_mkey_twin_check(struct hm_dev *d, const struct hm_mkey_in *in, struct hm_mkey_out *out);
void hm_timers_set(struct hm_dev *d, const struct hm_timers_set_in *in,
		   struct hm_timers_set_out *out);
void hm_timers_twin_expire(struct hm_dev *d, const struct hm_timers_expire_in *in,
			   struct hm_timers_expire_out *out);
void hm_resp_fe_check(struct hm_dev *d, const struct hm_resp_fe_in *in,
		      struct hm_resp_fe_out *out);
/* The rkey request in names (READ, atomic, WRITE: its RETH's, or the WRITE in progress's), 0
 * for one with none: the key whose table entry goes in as in->key. */
uint32_t hm_resp_fe_rkey(const struct hm_resp_fe_in *in);
void hm_qpc_lookup(struct hm_dev *d, const struct hm_qpc_in *in, struct hm_qpc_out *out);
void hm_qpc_complete(struct hm_dev *d, const struct hm_qpc_cpl_in *in, struct hm_qpc_out *out);
void hm_qpc_twin_forget(struct hm_dev *d, const struct hm_qpc_forget_in *in,
			struct hm_qpc_forget_out *out);

#endif
