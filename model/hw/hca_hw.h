/* The device's programming interface, generated from the .def files beside this header: BAR0
 * registers, command formats, opcodes, status codes, event types, QP attribute bits, and the
 * size rules both sides must agree on. The driver includes only this directory of model/. */
#ifndef HCA_HW_H
#define HCA_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "host-memory formats are little-endian and accessed in place");

/* ---- BAR0 ---- */
enum hca_reg {
#define REG(name, off, acc, reset, doc) HCA_REG_##name = off,
#define REGION(name, off, bytes, doc) HCA_REGION_##name = off, HCA_REGION_##name##_BYTES = bytes,
#include "model/hw/regs.def"
#undef REG
#undef REGION
};
#define HCA_BAR0_BYTES 0x200000u
#define HCA_UAR_PAGE_BYTES 4096u
/* UAR page n belongs to user context n (ALLOC_UCTX); page 0 to the device owner (uid 0). */
#define HCA_UAR_PAGES (HCA_REGION_UAR_BYTES / HCA_UAR_PAGE_BYTES)
#define HCA_PASID_MAX 0xfffffu /* PASIDs are 20 bits (PCIe); 0 is no PASID: the default domain */

#define HCA_DEV_STATUS_READY 0x1u
#define HCA_DEV_STATUS_INITIALIZED 0x2u
#define HCA_DEV_STATUS_CMD_BUSY 0x4u
#define HCA_EQ_DB(eqn, arm, ci) (((uint32_t)(eqn) << 24) | ((arm) ? 1u << 23 : 0) | ((ci)&0x7fffffu))

/* ---- formats ---- */
#define HW_STRUCT(name, doc) struct name {
#define HW_FIELD(name, type, field, doc) type field;
#define HW_ARRAY(name, type, field, n, doc) type field[n];
#define HW_END(name, size)                                                                         \
	}                                                                                          \
	;                                                                                          \
	_Static_assert(sizeof(struct name) == (size), #name " size");
#include "model/hw/formats.def"
#undef HW_STRUCT
#undef HW_FIELD
#undef HW_ARRAY
#undef HW_END

#define HCA_CMD_OWN_DEVICE 0x1u

/* ---- commands and status ---- */
enum hca_cmd_opcode {
#define CMD(name, op, in, out, cost, doc) HCA_CMD_##name = op,
#include "model/hw/cmd.def"
#undef CMD
};

enum hca_status {
#define STATUS(name, val, err, doc) HCA_STATUS_##name = val,
#include "model/hw/status.def"
#undef STATUS
};

/* Syndrome: reason (31:24) and detail (23:0). */
enum hca_syn_reason {
	HCA_SYN_NONE = 0,       /* no detail */
	HCA_SYN_FIELD = 1,      /* detail: byte offset of the out-of-range field in the input */
	HCA_SYN_TRANSITION = 2, /* detail: cur << 4 | next, an invalid (cur, next) pair */
	HCA_SYN_MISSING = 3,    /* detail: HCA_QPA bit that the transition requires */
	HCA_SYN_EXTRA = 4,      /* detail: HCA_QPA bit the transition does not allow */
	HCA_SYN_CAP = 5,        /* detail: HCA_QPA bit that needs a capability the device lacks */
	HCA_SYN_HANDLE = 6,     /* detail: byte offset of the handle field in the input */
	HCA_SYN_LIMIT = 8,      /* detail: 0; the object kind's device limit is reached */
	HCA_SYN_BUSY = 9,       /* detail: number of objects still using it */
	HCA_SYN_ADDR = 10,      /* detail: byte offset of the unmapped address field in the input */
	HCA_SYN_LENGTH = 11,    /* detail: 0 in_len, 1 out_len */
	HCA_SYN_CUR_STATE = 12, /* detail: actual state (the claimed cur_state differs) */
	HCA_SYN_ROCE_GRH = 13,  /* detail: 0; RC/UC INIT->RTR on an Ethernet port needs a GRH */
	HCA_SYN_ENTRY = 14,     /* detail: byte offset of the bad field in hca_cmd_entry itself
				 * (opcode, token, own, in_addr, out_addr) */
	HCA_SYN_PRIVILEGED = 15, /* detail: the issuing uid; the command is uid 0's alone */
};
#define HCA_SYN(reason, detail) (((uint32_t)(reason) << 24) | ((uint32_t)(detail)&0xffffffu))
#define HCA_SYN_REASON(s) ((s) >> 24)
#define HCA_SYN_DETAIL(s) ((s)&0xffffffu)

/* ---- events ---- */
enum hca_eqe_type {
#define EQE(name, val, doc) HCA_EQE_##name = val,
#include "model/hw/eqe.def"
#undef EQE
};
#define HCA_EQE_BYTES 32u
/* QP_EVENT subtypes: numbered as libibverbs' enum ibv_event_type. */
enum hca_qp_event {
	HCA_QP_EV_FATAL = 1,
	HCA_QP_EV_REQ_ERR = 2,
	HCA_QP_EV_ACCESS_ERR = 3,
	HCA_QP_EV_COMM_EST = 4,
	HCA_QP_EV_SQ_DRAINED = 5,
	HCA_QP_EV_PATH_MIG = 6,
	HCA_QP_EV_PATH_MIG_ERR = 7,
	HCA_QP_EV_LAST_WQE_REACHED = 16,
};
/* hca_qp_attr.path_mig_state (IBA 17.2.8; ibv_mig_state numbering). */
enum hca_mig_state { HCA_MIG_MIGRATED = 0, HCA_MIG_REARM = 1, HCA_MIG_ARMED = 2 };
/* PORT_INFO subtypes: what the SM changed. */
enum hca_port_info_change {
	HCA_PORT_INFO_LID = 1,
};
#define HCA_EQ_MAX 64u

/* ---- QP ---- */
enum hca_qpa {
#define QPA(name, bit, doc) HCA_QPA_##name = 1u << (bit),
#include "model/hw/qpattr.def"
#undef QPA
};
#define HCA_QPA_ALL ((1u << 21) - 1)

enum hca_qp_state { /* IBA 10.3.1, numbered as libibverbs */
	HCA_QPS_RESET = 0,
	HCA_QPS_INIT = 1,
	HCA_QPS_RTR = 2,
	HCA_QPS_RTS = 3,
	HCA_QPS_SQD = 4,
	HCA_QPS_SQE = 5,
	HCA_QPS_ERR = 6,
	HCA_QPS_COUNT = 7,
};

enum hca_qp_type { /* numbered as libibverbs */
	HCA_QPT_RC = 2,
	HCA_QPT_UC = 3,
	HCA_QPT_UD = 4,
	HCA_QPT_XRC_SEND = 9,  /* XRC initiator: sends to XRC SRQs behind an XRC_RECV QP */
	HCA_QPT_XRC_RECV = 10, /* XRC target: receives into the XRC SRQs of its domain */
};

/* The reliable-connected transports (RC and both XRC types): ACKs, PSN windows, retries. */
static inline bool hca_qpt_reliable(unsigned type)
{
	return type == HCA_QPT_RC || type == HCA_QPT_XRC_SEND || type == HCA_QPT_XRC_RECV;
}

enum hca_access { /* numbered as libibverbs */
	HCA_ACCESS_LOCAL_WRITE = 1u << 0,
	HCA_ACCESS_REMOTE_WRITE = 1u << 1,
	HCA_ACCESS_REMOTE_READ = 1u << 2,
	HCA_ACCESS_REMOTE_ATOMIC = 1u << 3,
	HCA_ACCESS_MW_BIND = 1u << 4, /* memory regions: memory windows may be bound to it */
};
#define HCA_ACCESS_ALL 0xfu    /* the rights of a QP (and of a memory window) */
#define HCA_ACCESS_MR_ALL 0x1fu /* the rights of a memory region */

/* Memory window types (IBA 10.6.7.1), numbered as libibverbs' ibv_mw_type. */
enum hca_mw_type {
	HCA_MW_TYPE_1 = 1, /* bound by a BIND_MW WQE whose QP is of the window's PD */
	HCA_MW_TYPE_2 = 2, /* type 2B: bound to one QP, invalidated by LOCAL_INV or SEND_INV */
};

/* Capability flags reported by QUERY_HCA_CAP: only what the device implements. */
enum hca_cap_flag {
	HCA_CAP_CURR_QP_STATE_MOD = 1u << 0, /* MODIFY_QP honours HCA_QPA_CUR_STATE */
	HCA_CAP_SYS_IMAGE_GUID = 1u << 1,    /* sys_image_guid is meaningful */
	HCA_CAP_AUTO_PATH_MIG = 1u << 2,     /* alternate paths (HCA_QPA_ALT_PATH, PATH_MIG_STATE) */
	HCA_CAP_CHANGE_PHY_PORT = 1u << 3,   /* HCA_QPA_PORT in SQD->SQD */
	HCA_CAP_UD_MCAST = 1u << 4,          /* ATTACH_MCG/DETACH_MCG, with HCA_MCAST_* limits */
	HCA_CAP_MEM_WINDOW = 1u << 5,        /* ALLOC_MW/DEALLOC_MW, BIND_MW, LOCAL_INV, SEND_INV */
	HCA_CAP_XRC = 1u << 6,               /* XRC domains, XRC SRQs, XRC_SEND/XRC_RECV QPs */
};

#define HCA_MAX_XRCD 256u /* XRC domains per device (HCA_CAP_XRC) */
#define HCA_PSN_MASK 0xffffffu
#define HCA_QPN_MASK 0xffffffu
#define HCA_FIRST_QPN 2u /* QP0 and QP1 are the special QPs */

/* ---- UD multicast (IBA 10.5; docs/multicast.md) ---- */
#define HCA_MCAST_QPN 0xffffffu   /* the DETH/BTH destination QPN of a multicast datagram */
#define HCA_MCAST_LID_MIN 0xc000u /* multicast LIDs: 0xC000..0xFFFE (0xFFFF is permissive) */
#define HCA_MCAST_LID_MAX 0xfffeu
/* IBA 7.11.1: LIDs 0xC000..0xFFFE are multicast (0xFFFF is the permissive LID). */
static inline bool hca_is_mcast_lid(unsigned lid)
{
	return lid >= HCA_MCAST_LID_MIN && lid <= HCA_MCAST_LID_MAX;
}
/* The limits of a device with HCA_CAP_UD_MCAST (ibv_query_device's max_mcast_grp,
 * max_mcast_qp_attach, max_total_mcast_qp_attach). */
#define HCA_MCAST_GROUPS 64u        /* groups per device */
#define HCA_MCAST_QPS_PER_GROUP 8u  /* QPs attached to one group */
#define HCA_MCAST_ATTACH_TOTAL (HCA_MCAST_GROUPS * HCA_MCAST_QPS_PER_GROUP)
/* hca_qp_create_in.flags */
enum hca_qp_create_flag {
	HCA_QP_CREATE_BLOCK_SELF_MCAST_LB = 1u << 0, /* no loopback of its own multicast sends */
};

/* ---- work requests and completions ---- */
enum hca_wqe_op {
#define WQE_OP(name, val, qpts, cls, doc) HCA_WQE_OP_##name = val,
#define CQE_OP(name, val, doc)
#define WC(name, val, doc)
#include "model/hw/wqe.def"
#undef WQE_OP
#undef CQE_OP
#undef WC
};
enum hca_cqe_op {
#define WQE_OP(name, val, qpts, cls, doc)
#define CQE_OP(name, val, doc) HCA_CQE_OP_##name = val,
#define WC(name, val, doc)
#include "model/hw/wqe.def"
#undef WQE_OP
#undef CQE_OP
#undef WC
};
enum hca_wc_status {
#define WQE_OP(name, val, qpts, cls, doc)
#define CQE_OP(name, val, doc)
#define WC(name, val, doc) HCA_WC_##name = val,
#include "model/hw/wqe.def"
#undef WQE_OP
#undef CQE_OP
#undef WC
};
/* Vendor error syndromes (verr.def): which check an error completion failed. */
enum hca_verr {
#define VERR(name, val, status, doc) HCA_VERR_##name = val,
#include "model/hw/verr.def"
#undef VERR
};
/* The QP types a WQE opcode may be posted on (wqe.def), as masks of 1 << HCA_QPT_*. */
#define HCA_QPTS_RC (1u << HCA_QPT_RC | 1u << HCA_QPT_XRC_SEND) /* XRC_SEND sends as RC */
#define HCA_QPTS_RC_UC (HCA_QPTS_RC | 1u << HCA_QPT_UC)
#define HCA_QPTS_RC_UC_UD (HCA_QPTS_RC_UC | 1u << HCA_QPT_UD)
/* What a WQE opcode asks of the responder (IBA 9.4; rxe's opcode class masks). */
enum hca_wqe_class {
	HCA_WQE_CLASS_SEND = 1u << 0,   /* a message into a receive WQE */
	HCA_WQE_CLASS_WRITE = 1u << 1,  /* data placed at an rkey */
	HCA_WQE_CLASS_READ = 1u << 2,   /* data returned in responses */
	HCA_WQE_CLASS_ATOMIC = 1u << 3, /* 8 bytes read, modified, written once, returned */
	HCA_WQE_CLASS_LOCAL = 1u << 4,  /* nothing: a local operation of the key block, no packet */
};

/* What wqe.def says of WQE opcode op: the QP types it may be posted on (HCA_QPTS_*) and its
 * class (HCA_WQE_CLASS_*); both 0 for an unknown opcode. */
struct hca_wqe_op_info {
	unsigned qpts, cls;
};

static inline struct hca_wqe_op_info hca_wqe_op_info(unsigned op)
{
	switch (op) {
#define WQE_OP(name, val, qpts, cl, doc)                                                           \
	case val:                                                                                  \
		return (struct hca_wqe_op_info){ HCA_QPTS_##qpts, HCA_WQE_CLASS_##cl };
#define CQE_OP(name, val, doc)
#define WC(name, val, doc)
#include "model/hw/wqe.def"
#undef WQE_OP
#undef CQE_OP
#undef WC
	default:
		return (struct hca_wqe_op_info){ 0, 0 };
	}
}

static inline unsigned hca_wqe_op_class(unsigned op)
{
	return hca_wqe_op_info(op).cls;
}

/* May WQE opcode op be posted on a QP of type qpt (HCA_QPT_*)? */
static inline bool hca_wqe_op_allowed(unsigned qpt, unsigned op)
{
	return qpt < 32 && ((hca_wqe_op_info(op).qpts >> qpt) & 1u);
}

/* An atomic; a READ or an atomic (they wait for responses that carry data and count
 * against max_rd_atomic). */
static inline bool hca_wqe_atomic(unsigned op)
{
	return hca_wqe_op_class(op) == HCA_WQE_CLASS_ATOMIC;
}

static inline bool hca_wqe_rd_atomic(unsigned op)
{
	return (hca_wqe_op_class(op) & (HCA_WQE_CLASS_READ | HCA_WQE_CLASS_ATOMIC)) != 0;
}

enum hca_wqe_flag {
	HCA_WQE_F_SIGNALED = 1u << 0,  /* write a CQE when it completes */
	HCA_WQE_F_SOLICITED = 1u << 1, /* set BTH SE on the last packet */
	HCA_WQE_F_FENCE = 1u << 2,     /* wait for earlier READ/atomic WQEs to complete */
	HCA_WQE_F_INLINE = 1u << 3,    /* data follows the second segment */
};
enum hca_wc_flag {
	HCA_WC_F_GRH = 1u << 0, /* the first 40 bytes of the receive buffer hold the GRH */
	HCA_WC_F_IMM = 1u << 1, /* imm_data is valid */
	HCA_WC_F_INV = 1u << 2, /* a SEND with Invalidate: imm_data is the R_Key invalidated (host order) */
};
#define HCA_LKEY_END 0xffffffffu /* ends a receive WQE's scatter list */
#define HCA_QKEY_PRIVILEGED 0x80000000u

/* UAR doorbells: 64-bit posted writes into a 4 KiB UAR page at HCA_REGION_UAR + page * 4096. */
enum hca_uar_reg {
	HCA_UAR_SQ_DB = 0x00,  /* qpn (23:0) | producer index (47:32): send WQEs posted */
	HCA_UAR_RQ_DB = 0x08,  /* qpn (23:0) | producer index (47:32): receive WQEs posted */
	HCA_UAR_SRQ_DB = 0x10, /* srqn (23:0) | producer index (47:32) */
	HCA_UAR_CQ_DB = 0x18,  /* cqn (23:0) | command (25:24) | consumer index (55:32) */
	HCA_UAR_CMD_DB = 0x20, /* device address of a 64-byte aligned command entry: the
				* command runs on behalf of the page's user context (its uid) */
	HCA_UAR_BF = 0x800,    /* BlueFlame: one write-combined block = the SQ doorbell word (8 B),
				* 8 reserved bytes, then the WQE just posted (up to
				* HCA_UAR_BF_WQE_BYTES): a doorbell that brings its WQE along */
};
enum hca_cq_db_cmd {
	HCA_CQ_DB_CI = 0,        /* report the consumer index only */
	HCA_CQ_DB_ARM_NEXT = 1,  /* event on the next CQE */
	HCA_CQ_DB_ARM_SOLICITED = 2, /* event on the next solicited (or error) CQE */
};
#define HCA_UAR_BF_BYTES 256u
#define HCA_UAR_BF_WQE_BYTES (HCA_UAR_BF_BYTES - 16u)
#define HCA_UAR_DB(obj, hi) (((uint64_t)(obj)&0xffffffu) | ((uint64_t)(hi) << 32))
#define HCA_UAR_CQ_DB_VAL(cqn, cmd, ci)                                                            \
	(((uint64_t)(cqn)&0xffffffu) | ((uint64_t)((cmd)&3u) << 24) | ((uint64_t)((ci)&0xffffffu) << 32))

/* ---- queue sizes: the rule the driver and the device both apply ---- */
#define HCA_CQE_BYTES 64u
#define HCA_WQE_BASE_BYTES 64u /* control + address segments of a send WQE */
#define HCA_SGE_BYTES 16u

static inline uint32_t hca_roundup_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static inline uint32_t hca_log2(uint32_t pow2)
{
	uint32_t l = 0;

	while ((1u << l) < pow2)
		l++;
	return l;
}

/* CQ ring entries for a request of cqe entries: one slot stays free to tell full from empty. */
static inline uint32_t hca_cq_ring_entries(uint32_t cqe)
{
	return hca_roundup_pow2(cqe + 1);
}

/* Work queue entries actually provided for a request of n (at least 1, a power of two). */
static inline uint32_t hca_wq_entries(uint32_t n)
{
	return hca_roundup_pow2(n ? n : 1);
}

/* Send WQE stride: control (16) and second (48) segments, then data segments or inline data
 * (its length is in the control segment), whichever is larger. */
static inline uint32_t hca_sq_stride(uint32_t max_sge, uint32_t max_inline)
{
	uint32_t sge = max_sge * HCA_SGE_BYTES, inl = (max_inline + 15) / 16 * 16;

	return hca_roundup_pow2(HCA_WQE_BASE_BYTES + (sge > inl ? sge : inl));
}

static inline uint32_t hca_rq_stride(uint32_t max_sge)
{
	return hca_roundup_pow2((max_sge ? max_sge : 1) * HCA_SGE_BYTES);
}

/* Actual max_inline for a stride: everything the stride leaves after the base segments. */
static inline uint32_t hca_sq_inline_for_stride(uint32_t stride)
{
	return stride - HCA_WQE_BASE_BYTES;
}

/* ---- descriptive tables (model/hw/hw_tables.c), for messages and generated docs ---- */
struct hca_field_desc {
	const char *name;   /* field name */
	const char *type;   /* C type */
	size_t offset;      /* byte offset */
	size_t size;        /* bytes (whole array) */
	const char *doc;    /* meaning */
};

struct hca_struct_desc {
	const char *name;                    /* struct name */
	const char *doc;                     /* meaning */
	size_t size;                         /* bytes */
	const struct hca_field_desc *fields; /* terminated by a NULL name */
};

struct hca_cmd_desc {
	const char *name;    /* "CREATE_QP" */
	uint16_t opcode;     /* opcode */
	const char *in;      /* input struct name */
	const char *out;     /* output struct name */
	size_t in_len;       /* sizeof input */
	size_t out_len;      /* sizeof output */
	uint32_t cost_cycles; /* firmware cost */
	const char *doc;     /* meaning */
};

extern const struct hca_struct_desc hca_structs[];
extern const struct hca_cmd_desc hca_cmds[];
const struct hca_struct_desc *hca_struct_find(const char *name);
/* Struct name of a field whose type is a struct, else NULL. */
const char *hca_field_nested(const struct hca_field_desc *f);
const struct hca_cmd_desc *hca_cmd_find(uint16_t opcode);
/* Dotted path of the field at offset in struct name ("attr.av.dlid"); false if none. */
bool hca_field_path(const char *name, size_t offset, char *buf, size_t len);
const char *hca_status_name(uint8_t status);
/* A vendor error syndrome's name ("LKEY_BOUNDS"), meaning and completion status; NULL, "" and
 * 0xff for a code verr.def does not declare. */
const char *hca_verr_name(uint32_t verr);
/* A completion status's name (wqe.def WC: "LOC_PROT_ERR"), "UNKNOWN" if none. */
const char *hca_wc_name(uint8_t status);
const char *hca_verr_doc(uint32_t verr);
uint8_t hca_verr_status(uint32_t verr);
const char *hca_status_doc(uint8_t status);
int hca_status_errno(uint8_t status);
const char *hca_qpa_name(uint32_t bit_index);
const char *hca_qps_name(unsigned state);

#endif
