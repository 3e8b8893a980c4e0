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

#endif
