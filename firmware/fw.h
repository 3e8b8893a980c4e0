/* Firmware: the device's command processor. Objects (PD, MKEY, CQ, SRQ, QP, EQ) live in
 * tables indexed by their handle; handle 0 is never valid (QPNs start at HCA_FIRST_QPN).
 * A command is validated completely before anything changes: a rejected command leaves every
 * object exactly as it was. */
#ifndef FW_FW_H
#define FW_FW_H

#include "model/hca.h"

#include <stdbool.h>
#include <stdint.h>

struct fw_pd {
	bool live;     /* allocated */
	uint16_t uid;             /* owning user context (0: the device owner) */
	uint32_t refs; /* MKEYs, QPs and SRQs in it */
};

struct fw_mkey {
	bool live;        /* registered */
	uint16_t uid;             /* owning user context (0: the device owner) */
	uint8_t variant;  /* low 8 bits of the key, bumped on every reuse of the index */
	uint32_t pdn;     /* owner PD */
	uint32_t access;  /* HCA_ACCESS_* */
	uint64_t start;   /* host address */
	uint64_t length;  /* bytes */
	uint64_t iova;    /* address used in WRs */
	uint8_t mw_type;  /* 0: a memory region; HCA_MW_TYPE_*: a memory window */
};

struct fw_cq {
	bool live;          /* created */
	uint16_t uid;             /* owning user context (0: the device owner) */
	uint32_t cqe;       /* usable entries */
	uint32_t log_size;  /* ring entries = 2^log_size */
	uint64_t ring_addr; /* CQE ring */
	uint64_t db_addr;   /* doorbell record */
	uint32_t eqn;       /* completion events go here */
	uint32_t refs;      /* QPs using it (send or receive, counted once per use) */
};

struct fw_srq {
	bool live;          /* created */
	uint16_t uid;             /* owning user context (0: the device owner) */
	uint32_t pdn;       /* owner PD */
	uint32_t max_wr;    /* actual WRs */
	uint32_t max_sge;   /* actual SGEs */
	uint32_t limit;     /* armed limit, 0 = not armed */
	uint64_t ring_addr; /* receive ring */
	uint64_t db_addr;   /* doorbell record */
	uint32_t refs;      /* QPs using it */
	uint32_t xrcd;      /* XRC SRQ: its XRC domain (0: a basic SRQ) */
	uint32_t cqn;       /* XRC SRQ: the CQ of its receive completions */
};
struct fw_xrcd {
	bool live;     /* allocated */
	uint16_t uid;             /* owning user context (0: the device owner) */
	uint32_t refs; /* XRC SRQs and XRC_RECV QPs in it */
};

struct fw_qp {
	bool live;                /* created */
	uint16_t uid;             /* owning user context (0: the device owner) */
	uint8_t type;             /* HCA_QPT_* */
	uint8_t state;            /* HCA_QPS_* */
	uint8_t sq_sig_all;       /* as created */
	uint8_t has_srq;          /* as created */
	uint32_t pdn, send_cqn, recv_cqn, srqn; /* creation-time objects */
	uint32_t xrcd;            /* XRC_RECV: its XRC domain (and no PD, CQ or SRQ) */
	struct hca_qp_caps caps;  /* actual sizes */
	struct hca_qp_attr attr;  /* current attributes */
	uint64_t sq_addr, rq_addr, db_addr; /* rings */
};

/* A user context (ALLOC_UCTX): uid = its index = its UAR page. */
struct fw_uctx {
	bool live;     /* opened */
	uint16_t uid;  /* 0: user contexts are the device owner's objects */
	uint32_t pasid; /* IOMMU domain of its memory */
	uint32_t objs; /* objects it owns (it closes only when none is left) */
};

/* The head every object starts with (fw_obj, the ownership checks). */
struct fw_head {
	bool live;
	uint16_t uid;
};

/* A growable table of fixed-size objects; index 0 (and below `first`) never handed out. */
struct fw_table {
	void *objs;       /* array of `size`-byte objects */
	size_t size;      /* object size */
	uint32_t cap;     /* allocated slots */
	uint32_t first;   /* lowest index handed out */
	uint32_t max;     /* most live objects allowed (device limit) */
	uint32_t live;    /* live objects */
	uint32_t cursor;  /* next index to try (allocation rotates, like hardware) */
};

struct fw_state {
	struct hm_dev *dev;   /* device */
	struct fw_table pds, mkeys, cqs, srqs, qps, xrcds; /* objects */
	struct fw_table uctxs; /* user contexts */
	uint16_t uid;         /* the user context the running command is for (0: the owner) */
};

void fw_reset_objects(struct fw_state *fw);

/* Result of a command handler: status and syndrome. */
struct fw_result {
	uint8_t status;    /* HCA_STATUS_* */
	uint32_t syndrome; /* HCA_SYN(reason, detail) */
};

#define FW_OK ((struct fw_result){ HCA_STATUS_OK, 0 })
#define FW_FAIL(st, reason, detail)                                                                \
	((struct fw_result){ HCA_STATUS_##st, HCA_SYN(HCA_SYN_##reason, detail) })
#define FW_FIELD(st, s, f) FW_FAIL(st, FIELD, offsetof(struct s, f))
#define FW_HANDLE(s, f) FW_FAIL(BAD_HANDLE, HANDLE, offsetof(struct s, f))
#define FW_ENTRY(st, f) FW_FAIL(st, ENTRY, offsetof(struct hca_cmd_entry, f))

/* Handlers: in is the input mailbox, out the output (zeroed), t the firmware's time cursor. */
typedef struct fw_result (*fw_handler)(struct fw_state *fw, const void *in, void *out,
				       sim_time_t *t);

/* object tables */
void *fw_obj(struct fw_table *t, uint32_t idx);          /* live object or NULL */
int64_t fw_obj_alloc(struct fw_table *t);                 /* index, or -1 at the limit */
void fw_obj_free(struct fw_table *t, uint32_t idx);
/* An object created for the running command's user context (it owns it), and its end. */
int64_t fw_obj_new(struct fw_state *fw, struct fw_table *t);
void fw_obj_del(struct fw_state *fw, struct fw_table *t, uint32_t idx);

/* Ownership (docs/architecture.md#ownership). The live object idx of t that the running
 * command may act on (modify, query, destroy): its context's own — any, for the device owner.
 * NULL with *r the failure naming the handle at byte off of the input: BAD_HANDLE (no such
 * object) or NOT_OWNER (another context's). */
void *fw_act(struct fw_state *fw, struct fw_table *t, uint32_t idx, size_t off,
	     struct fw_result *r);
/* The same for an object a new one is created in or on (a PD, CQ, SRQ, XRC domain): the
 * device owner's objects (uid 0: XRC domains, shared) may be used by every context. */
void *fw_use(struct fw_state *fw, struct fw_table *t, uint32_t idx, size_t off,
	     struct fw_result *r);
#define FW_ACT(fw, t, idx, s, f, r) fw_act(fw, t, idx, offsetof(struct s, f), r)
#define FW_USE(fw, t, idx, s, f, r) fw_use(fw, t, idx, offsetof(struct s, f), r)
/* The QP qpn the running command may act on (fw_act), or NULL with *r. */
struct fw_qp *fw_qp_act(struct fw_state *fw, uint32_t qpn, size_t off, struct fw_result *r);
/* NOT_OWNER unless [addr, addr+len) is mapped (with perm) in the running command's context's
 * IOMMU domain; off names the address field. BAD_ADDR if it is not mapped at all. */
struct fw_result fw_dma_mine(struct fw_state *fw, uint64_t addr, uint64_t len, unsigned perm,
			     size_t off);

/* handlers, by file */
#define CMD(name, op, in, out, cost, doc)                                                          \
	struct fw_result fw_cmd_##name(struct fw_state *fw, const void *in_, void *out_,           \
				       sim_time_t *t);
#include "model/hw/cmd.def"
#undef CMD

/* QP rules (firmware/qp_rules.c): the modify-QP table, as the Linux kernel applies IBA
 * 10.3 / 11.2.5. */
bool fw_qp_transition_valid(unsigned cur, unsigned next);
uint32_t fw_qp_required(unsigned type, unsigned cur, unsigned next);
uint32_t fw_qp_optional(unsigned type, unsigned cur, unsigned next);

/* XRC (firmware/xrc.c): an XRC SRQ's domain and CQ, and the XRC_RECV QP. */
struct fw_result fw_xrc_srq_check(struct fw_state *fw, const struct hca_srq_create_in *in);
void fw_xrc_srq_ref(struct fw_state *fw, const struct fw_srq *s, int delta);
struct fw_result fw_xrc_create_tgt(struct fw_state *fw, const struct hca_qp_create_in *in,
				   struct hca_qp_create_out *o, sim_time_t *t);
void fw_xrcd_ref(struct fw_state *fw, uint32_t xrcd, int delta);
/* True if [addr, addr+len) is mapped for the device with perm. */
bool fw_dma_ok(struct fw_state *fw, uint64_t addr, uint64_t len, unsigned perm);

#endif
