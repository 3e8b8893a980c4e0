/* pkt: IBA packet formats on the wire — LRH, GRH, BTH and the extension headers (RETH, AETH,
 * AtomicETH, AtomicAckETH, ImmDt, DETH, IETH, XRCETH), ICRC and VCRC for native InfiniBand, and
 * Ethernet/IPv4/UDP(4791) encapsulation with the masked ICRC for RoCEv2 (IBA 5, 9.2, 9.3,
 * 7.8; RoCEv2 annex A17). Wire headers are big-endian and live only behind these functions;
 * the rest of the model works on struct hm_pkt. The opcode table is data (which headers each
 * opcode carries), as in Linux rxe. */
#ifndef HM_PKT_H
#define HM_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hm_link_layer {
	HM_LL_IB = 0,   /* LRH [GRH] BTH ... ICRC VCRC */
	HM_LL_ROCE = 1, /* Ethernet IPv4 UDP BTH ... ICRC (no FCS in the frame) */
};

/* Header sizes in bytes. */
enum {
	HM_LRH_BYTES = 8,
	HM_GRH_BYTES = 40,
	HM_BTH_BYTES = 12,
	HM_RETH_BYTES = 16,
	HM_AETH_BYTES = 4,
	HM_ATOMICETH_BYTES = 28,
	HM_ATOMICACKETH_BYTES = 8,
	HM_IMMDT_BYTES = 4,
	HM_DETH_BYTES = 8,
	HM_IETH_BYTES = 4,
	HM_XRCETH_BYTES = 4,
	HM_ICRC_BYTES = 4,
	HM_VCRC_BYTES = 2,
	HM_ETH_BYTES = 14,
	HM_IPV4_BYTES = 20,
	HM_UDP_BYTES = 8,
	HM_ROCE_UDP_PORT = 4791,
	HM_PKT_MAX_BYTES = 4096 + 256, /* MTU 4096 payload plus every header */
};

/* Extension headers an opcode carries (bit set). */
enum hm_hdr_mask {
	HM_HDR_RETH = 1u << 0,
	HM_HDR_AETH = 1u << 1,
	HM_HDR_ATOMICETH = 1u << 2,
	HM_HDR_ATOMICACKETH = 1u << 3,
	HM_HDR_IMMDT = 1u << 4,
	HM_HDR_DETH = 1u << 5,
	HM_HDR_IETH = 1u << 6,
	HM_HDR_PAYLOAD = 1u << 7, /* may carry payload */
	HM_HDR_XRCETH = 1u << 8,  /* XRC requests: the destination XRC SRQ */
};

/* Position of a packet in its message. */
enum hm_op_pos { HM_POS_ONLY, HM_POS_FIRST, HM_POS_MIDDLE, HM_POS_LAST };

/* IBA opcodes (BTH byte 0), RC; UC = RC | 0x20 for 0x00..0x0b; UD 0x64/0x65; XRC = RC | 0xa0
 * for 0x00..0x17. */
enum hm_opcode {
	HM_OP_SEND_FIRST = 0x00,
	HM_OP_SEND_MIDDLE = 0x01,
	HM_OP_SEND_LAST = 0x02,
	HM_OP_SEND_LAST_IMM = 0x03,
	HM_OP_SEND_ONLY = 0x04,
	HM_OP_SEND_ONLY_IMM = 0x05,
	HM_OP_WRITE_FIRST = 0x06,
	HM_OP_WRITE_MIDDLE = 0x07,
	HM_OP_WRITE_LAST = 0x08,
	HM_OP_WRITE_LAST_IMM = 0x09,
	HM_OP_WRITE_ONLY = 0x0a,
	HM_OP_WRITE_ONLY_IMM = 0x0b,
	HM_OP_READ_REQUEST = 0x0c,
	HM_OP_READ_RESPONSE_FIRST = 0x0d,
	HM_OP_READ_RESPONSE_MIDDLE = 0x0e,
	HM_OP_READ_RESPONSE_LAST = 0x0f,
	HM_OP_READ_RESPONSE_ONLY = 0x10,
	HM_OP_ACKNOWLEDGE = 0x11,
	HM_OP_ATOMIC_ACKNOWLEDGE = 0x12,
	HM_OP_COMPARE_SWAP = 0x13,
	HM_OP_FETCH_ADD = 0x14,
	HM_OP_SEND_LAST_INV = 0x16,
	HM_OP_SEND_ONLY_INV = 0x17,
	HM_OP_UC = 0x20,        /* OR into an RC send/write opcode */
	HM_OP_XRC = 0xa0,       /* OR into any RC opcode: the XRC class (IBA annex A14) */
	HM_OP_UD_SEND_ONLY = 0x64,
	HM_OP_UD_SEND_ONLY_IMM = 0x65,
};

/* What an opcode is (rxe's opcode masks): one class bit each, tested as masks. */
enum hm_op_class {
	HM_OPC_SEND = 1u << 0,       /* SEND: a message into a receive WQE */
	HM_OPC_WRITE = 1u << 1,      /* RDMA WRITE */
	HM_OPC_READ_REQ = 1u << 2,   /* RDMA READ request */
	HM_OPC_ATOMIC = 1u << 3,     /* CmpSwap, FetchAdd */
	HM_OPC_READ_RSP = 1u << 4,   /* RDMA READ response */
	HM_OPC_ACK = 1u << 5,        /* Acknowledge: an ACK or a NAK */
	HM_OPC_ATOMIC_ACK = 1u << 6, /* ATOMIC Acknowledge */
	HM_OPC_REQUEST = HM_OPC_SEND | HM_OPC_WRITE | HM_OPC_READ_REQ | HM_OPC_ATOMIC,
	HM_OPC_RESPONSE = HM_OPC_READ_RSP | HM_OPC_ACK | HM_OPC_ATOMIC_ACK,
};

struct hm_opcode_info {
	const char *name;   /* "RC RDMA WRITE First", NULL for an opcode we do not know */
	uint32_t hdrs;      /* enum hm_hdr_mask */
	uint8_t pos;        /* enum hm_op_pos */
	uint8_t cls;        /* enum hm_op_class */
};

/* NULL when the opcode is reserved or not supported. */
const struct hm_opcode_info *hm_opcode_info(uint8_t opcode);
/* The opcode's class bits (enum hm_op_class), 0 for an unknown opcode. */
uint8_t hm_opcode_class(uint8_t opcode);

/* A packet, decoded (all fields in host order; GIDs and MACs as on the wire). */
struct hm_pkt {
	/* L2/L3: native IB */
	uint8_t vl, sl;            /* LRH virtual lane, service level */
	uint16_t dlid, slid;       /* LRH LIDs */
	bool has_grh;              /* LRH LNH = IBA global (always true on RoCE: IPv4 stands in) */
	uint8_t traffic_class;     /* GRH / IPv4 TOS */
	uint32_t flow_label;       /* GRH (20 bits) */
	uint8_t hop_limit;         /* GRH hop limit / IPv4 TTL */
	uint8_t sgid[16], dgid[16]; /* GRH GIDs; on RoCE IPv4-mapped (::ffff:a.b.c.d) */
	/* L2/L3: RoCEv2 */
	uint8_t smac[6], dmac[6];  /* Ethernet addresses */
	uint16_t udp_sport;        /* UDP source port (entropy) */
	/* BTH */
	uint8_t opcode;            /* enum hm_opcode */
	bool se, migreq, ackreq;   /* solicited event, MigReq, AckReq */
	bool fecn, becn;           /* congestion bits */
	uint8_t padcnt;            /* pad bytes, set by hm_pkt_build */
	uint16_t pkey;             /* partition key */
	uint32_t dqpn, psn;        /* destination QP, PSN (24 bits each) */
	/* extension headers (valid when the opcode carries them) */
	uint64_t reth_va;          /* RETH virtual address */
	uint32_t reth_rkey, reth_dmalen;
	uint8_t aeth_syndrome;     /* AETH */
	uint32_t aeth_msn;         /* 24 bits */
	uint64_t atomic_va;        /* AtomicETH */
	uint32_t atomic_rkey;
	uint64_t atomic_swap_add, atomic_compare;
	uint64_t atomic_orig;      /* AtomicAckETH */
	uint32_t imm;              /* ImmDt as a number (written big-endian on the wire) */
	uint32_t deth_qkey, deth_sqpn; /* DETH */
	uint32_t ieth_rkey;        /* IETH */
	uint32_t xrc_srqn;         /* XRCETH: the XRC SRQ (24 bits) */
	/* payload */
	const uint8_t *payload;    /* into the frame for parsed packets */
	uint32_t paylen;           /* bytes, without pad */
	/* The link buffer the payload lies in, or NULL. Received: the frame parsed, which a DMA
	 * write may hold (sim_link_frame_hold). To send: the buffer of hm_port_frame_new, which
	 * the payload was gathered into and hm_port_send builds the frame in and takes over. */
	uint8_t *frame;
};

/* An all-zero packet: `*p = hm_pkt_zero` clears one in vector stores, where memset of its
 * size compiles to a `rep stos` that costs more to start than the stores do. */
extern const struct hm_pkt hm_pkt_zero;

/* Build a frame for link layer ll into buf (cap bytes): headers from p, payload
 * p->payload[0..paylen), pad to 4 bytes, ICRC, and on IB the VCRC. Returns the frame length,
 * or 0 if cap is too small or the opcode is unknown. A payload that lies where it goes in buf
 * already (gathered into the frame) is not copied. */
size_t hm_pkt_build(enum hm_link_layer ll, const struct hm_pkt *p, uint8_t *buf, size_t cap);
/* The length of the frame hm_pkt_build makes of p on ll (0 for an unknown opcode), and in
 * *payload_off (unless NULL) the offset its payload goes at. */
size_t hm_pkt_frame_len(enum hm_link_layer ll, const struct hm_pkt *p, size_t *payload_off);
/* The same with the CRC fields left zero: an unsealed frame, which the port hands on marked
 * crc_pending, and hm_pkt_seal fills in wherever its bytes are seen (a capture, a corruption)
 * (docs/blocks/pkt.md#crc-only-when-seen). hm_pkt_build is the two together. */
size_t hm_pkt_build_unsealed(enum hm_link_layer ll, const struct hm_pkt *p, uint8_t *buf,
			     size_t cap);
void hm_pkt_seal(enum hm_link_layer ll, uint8_t *buf, size_t len);

/* Parse and check a frame. 0, -EBADMSG (ICRC or VCRC wrong), -EPROTO (malformed: short,
 * unknown opcode, bad lengths, not BTH-bearing). p->payload points into buf. */
int hm_pkt_parse(enum hm_link_layer ll, const uint8_t *buf, size_t len, struct hm_pkt *p);
/* The same, checking the CRCs only if check_crc: false for a frame whose CRCs are known good
 * (built here and untouched since, or checked already), true for everything else. */
int hm_pkt_parse_crc(enum hm_link_layer ll, const uint8_t *buf, size_t len, bool check_crc,
		     struct hm_pkt *p);

/* The ICRC of a frame (masked as IBA 7.8.1 / RoCEv2 A17.4.3.1 require) over all but its
 * trailing CRC bytes, and the VCRC of an IB frame. For checkers and tests. */
uint32_t hm_pkt_icrc(enum hm_link_layer ll, const uint8_t *frame, size_t len);
uint16_t hm_pkt_vcrc(const uint8_t *frame, size_t len);
/* Verify every CRC of a frame: 0, or -EBADMSG naming nothing; -EPROTO when malformed. */
int hm_pkt_check_crcs(enum hm_link_layer ll, const uint8_t *frame, size_t len);

/* Bytes a frame occupies on the wire beyond its bytes in buf (RoCE: preamble+SFD 8, FCS 4,
 * inter-frame gap 12; IB: 0). */
unsigned hm_pkt_wire_overhead(enum hm_link_layer ll);

/* AETH syndromes (IBA 9.7.5.2.8): the top three bits say the kind — 000 ACK (low bits: the
 * credit count), 001 RNR NAK (low bits: the timer code), 011 NAK (low bits: its class). */
enum hm_aeth {
	HM_AETH_ACK = 0x1f,            /* ACK, credits: unlimited */
	HM_AETH_RNR = 0x20,            /* RNR NAK | min_rnr_timer code */
	HM_AETH_NAK_SEQ = 0x60,        /* PSN sequence error */
	HM_AETH_NAK_INV_REQ = 0x61,    /* invalid request */
	HM_AETH_NAK_REM_ACCESS = 0x62, /* remote access error */
	HM_AETH_NAK_REM_OP = 0x63,     /* remote operational error */
};

static inline bool hm_aeth_is_rnr(uint8_t syn)
{
	return (syn & 0xe0) == HM_AETH_RNR;
}

/* Any NAK, RNR or not: it acknowledges only the packets before its PSN. */
static inline bool hm_aeth_is_nak(uint8_t syn)
{
	return (syn & 0x60) != 0;
}

/* A NAK that ends the request it names (all but the sequence error). */
static inline bool hm_aeth_is_fatal(uint8_t syn)
{
	return (syn & 0xe0) == 0x60 && syn != HM_AETH_NAK_SEQ;
}

/* 24-bit PSN arithmetic: <0, 0, >0 as a is before, equal to, after b (IBA 9.7.1). */
static inline int32_t hm_psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8);
}

#endif
