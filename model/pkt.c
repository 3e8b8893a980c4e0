/* pkt: IBA packets on the wire — the opcode table, building and parsing LRH/GRH/BTH and the
 * extension headers, the ICRC (IBA 7.8.1, RoCEv2 annex A17.4.3.1), the VCRC (IBA 7.8.2) and the
 * Ethernet/IPv4/UDP(4791) encapsulation of RoCEv2 (annex A17). Header layouts: IBA 7.7 (LRH),
 * 8.3 (GRH), 9.2-9.3 (BTH and extension headers). */
#include "model/pkt.h"
#include "model/crc.h"
#include "sim/kernel.h"

#include <errno.h>
#include <string.h>

/* ---- opcode table (IBA 9.2.1, Table 35): which headers each opcode carries ---- */

/* clang-format off */
#define P HM_HDR_PAYLOAD
#define X HM_HDR_XRCETH
#define OP(nm, hd, ps, cl) { .name = nm, .hdrs = (hd), .pos = HM_POS_##ps, .cls = HM_OPC_##cl }

const struct hm_pkt hm_pkt_zero;

static const struct hm_opcode_info opcodes[256] = {
	/* RC */
	[0x00] = OP("RC SEND First", P, FIRST, SEND),
	[0x01] = OP("RC SEND Middle", P, MIDDLE, SEND),
	[0x02] = OP("RC SEND Last", P, LAST, SEND),
	[0x03] = OP("RC SEND Last with Immediate", HM_HDR_IMMDT | P, LAST, SEND),
	[0x04] = OP("RC SEND Only", P, ONLY, SEND),
	[0x05] = OP("RC SEND Only with Immediate", HM_HDR_IMMDT | P, ONLY, SEND),
	[0x06] = OP("RC RDMA WRITE First", HM_HDR_RETH | P, FIRST, WRITE),
	[0x07] = OP("RC RDMA WRITE Middle", P, MIDDLE, WRITE),
	[0x08] = OP("RC RDMA WRITE Last", P, LAST, WRITE),
	[0x09] = OP("RC RDMA WRITE Last with Immediate", HM_HDR_IMMDT | P, LAST, WRITE),
	[0x0a] = OP("RC RDMA WRITE Only", HM_HDR_RETH | P, ONLY, WRITE),
	[0x0b] = OP("RC RDMA WRITE Only with Immediate", HM_HDR_RETH | HM_HDR_IMMDT | P, ONLY, WRITE),
	[0x0c] = OP("RC RDMA READ Request", HM_HDR_RETH, ONLY, READ_REQ),
	[0x0d] = OP("RC RDMA READ response First", HM_HDR_AETH | P, FIRST, READ_RSP),
	[0x0e] = OP("RC RDMA READ response Middle", P, MIDDLE, READ_RSP),
	[0x0f] = OP("RC RDMA READ response Last", HM_HDR_AETH | P, LAST, READ_RSP),
	[0x10] = OP("RC RDMA READ response Only", HM_HDR_AETH | P, ONLY, READ_RSP),
	[0x11] = OP("RC Acknowledge", HM_HDR_AETH, ONLY, ACK),
	[0x12] = OP("RC ATOMIC Acknowledge", HM_HDR_AETH | HM_HDR_ATOMICACKETH, ONLY, ATOMIC_ACK),
	[0x13] = OP("RC CmpSwap", HM_HDR_ATOMICETH, ONLY, ATOMIC),
	[0x14] = OP("RC FetchAdd", HM_HDR_ATOMICETH, ONLY, ATOMIC),
	[0x16] = OP("RC SEND Last with Invalidate", HM_HDR_IETH | P, LAST, SEND),
	[0x17] = OP("RC SEND Only with Invalidate", HM_HDR_IETH | P, ONLY, SEND),
	/* UC: the RC SEND and RDMA WRITE opcodes with 0x20 set */
	[0x20] = OP("UC SEND First", P, FIRST, SEND),
	[0x21] = OP("UC SEND Middle", P, MIDDLE, SEND),
	[0x22] = OP("UC SEND Last", P, LAST, SEND),
	[0x23] = OP("UC SEND Last with Immediate", HM_HDR_IMMDT | P, LAST, SEND),
	[0x24] = OP("UC SEND Only", P, ONLY, SEND),
	[0x25] = OP("UC SEND Only with Immediate", HM_HDR_IMMDT | P, ONLY, SEND),
	[0x26] = OP("UC RDMA WRITE First", HM_HDR_RETH | P, FIRST, WRITE),
	[0x27] = OP("UC RDMA WRITE Middle", P, MIDDLE, WRITE),
	[0x28] = OP("UC RDMA WRITE Last", P, LAST, WRITE),
	[0x29] = OP("UC RDMA WRITE Last with Immediate", HM_HDR_IMMDT | P, LAST, WRITE),
	[0x2a] = OP("UC RDMA WRITE Only", HM_HDR_RETH | P, ONLY, WRITE),
	[0x2b] = OP("UC RDMA WRITE Only with Immediate", HM_HDR_RETH | HM_HDR_IMMDT | P, ONLY, WRITE),
	/* UD */
	[0x64] = OP("UD SEND Only", HM_HDR_DETH | P, ONLY, SEND),
	[0x65] = OP("UD SEND Only with Immediate", HM_HDR_DETH | HM_HDR_IMMDT | P, ONLY, SEND),
	/* XRC (IBA annex A14): the RC opcodes with 0xa0 set; requests carry the XRCETH */
	[0xa0] = OP("XRC SEND First", X | P, FIRST, SEND),
	[0xa1] = OP("XRC SEND Middle", X | P, MIDDLE, SEND),
	[0xa2] = OP("XRC SEND Last", X | P, LAST, SEND),
	[0xa3] = OP("XRC SEND Last with Immediate", X | HM_HDR_IMMDT | P, LAST, SEND),
	[0xa4] = OP("XRC SEND Only", X | P, ONLY, SEND),
	[0xa5] = OP("XRC SEND Only with Immediate", X | HM_HDR_IMMDT | P, ONLY, SEND),
	[0xa6] = OP("XRC RDMA WRITE First", X | HM_HDR_RETH | P, FIRST, WRITE),
	[0xa7] = OP("XRC RDMA WRITE Middle", X | P, MIDDLE, WRITE),
	[0xa8] = OP("XRC RDMA WRITE Last", X | P, LAST, WRITE),
	[0xa9] = OP("XRC RDMA WRITE Last with Immediate", X | HM_HDR_IMMDT | P, LAST, WRITE),
	[0xaa] = OP("XRC RDMA WRITE Only", X | HM_HDR_RETH | P, ONLY, WRITE),
	[0xab] = OP("XRC RDMA WRITE Only with Immediate", X | HM_HDR_RETH | HM_HDR_IMMDT | P, ONLY, WRITE),
	[0xac] = OP("XRC RDMA READ Request", X | HM_HDR_RETH, ONLY, READ_REQ),
	[0xad] = OP("XRC RDMA READ response First", HM_HDR_AETH | P, FIRST, READ_RSP),
	[0xae] = OP("XRC RDMA READ response Middle", P, MIDDLE, READ_RSP),
	[0xaf] = OP("XRC RDMA READ response Last", HM_HDR_AETH | P, LAST, READ_RSP),
	[0xb0] = OP("XRC RDMA READ response Only", HM_HDR_AETH | P, ONLY, READ_RSP),
	[0xb1] = OP("XRC Acknowledge", HM_HDR_AETH, ONLY, ACK),
	[0xb2] = OP("XRC ATOMIC Acknowledge", HM_HDR_AETH | HM_HDR_ATOMICACKETH, ONLY, ATOMIC_ACK),
	[0xb3] = OP("XRC CmpSwap", X | HM_HDR_ATOMICETH, ONLY, ATOMIC),
	[0xb4] = OP("XRC FetchAdd", X | HM_HDR_ATOMICETH, ONLY, ATOMIC),
	[0xb6] = OP("XRC SEND Last with Invalidate", X | HM_HDR_IETH | P, LAST, SEND),
	[0xb7] = OP("XRC SEND Only with Invalidate", X | HM_HDR_IETH | P, ONLY, SEND),
};
/* clang-format on */

#undef OP
#undef P
#undef X

const struct hm_opcode_info *hm_opcode_info(uint8_t opcode)
{
	return opcodes[opcode].name ? &opcodes[opcode] : NULL;
}

uint8_t hm_opcode_class(uint8_t opcode)
{
	return opcodes[opcode].cls;
}

/* Extension headers in the order they follow the BTH (IBA 9.2: RDETH, DETH, XRCETH, RETH,
 * AtomicETH, AETH, AtomicAckETH, ImmDt, IETH; we carry no RD). */
/* clang-format off */
static const struct {
	uint32_t bit;  /* enum hm_hdr_mask */
	uint8_t bytes; /* size on the wire */
} ext_order[] = {
	{ HM_HDR_DETH, HM_DETH_BYTES },
	{ HM_HDR_XRCETH, HM_XRCETH_BYTES },
	{ HM_HDR_RETH, HM_RETH_BYTES },
	{ HM_HDR_ATOMICETH, HM_ATOMICETH_BYTES },
	{ HM_HDR_AETH, HM_AETH_BYTES },
	{ HM_HDR_ATOMICACKETH, HM_ATOMICACKETH_BYTES },
	{ HM_HDR_IMMDT, HM_IMMDT_BYTES },
	{ HM_HDR_IETH, HM_IETH_BYTES },
};
/* clang-format on */
#define EXT_HDRS                                                                                   \
	(HM_HDR_DETH | HM_HDR_XRCETH | HM_HDR_RETH | HM_HDR_ATOMICETH | HM_HDR_AETH |             \
	 HM_HDR_ATOMICACKETH | HM_HDR_IMMDT | HM_HDR_IETH)

/* The bytes of the extension headers in hdrs, by the headers' bits (this runs for every frame
 * built and parsed: a packet has none to three, so the loop is over the bits set, not over
 * ext_order). */
static size_t ext_bytes(uint32_t hdrs)
{
	static const uint8_t bytes_of_bit[] = {
		[0] = HM_RETH_BYTES,	     [1] = HM_AETH_BYTES,  [2] = HM_ATOMICETH_BYTES,
		[3] = HM_ATOMICACKETH_BYTES, [4] = HM_IMMDT_BYTES, [5] = HM_DETH_BYTES,
		[6] = HM_IETH_BYTES,	     [7] = 0 /* payload */, [8] = HM_XRCETH_BYTES,
	};
	size_t n = 0;

	for (; hdrs; hdrs &= hdrs - 1)
		n += bytes_of_bit[__builtin_ctz(hdrs)];
	return n;
}

/* ---- big-endian field access: the only place wire byte order is written ---- */

static void put16(uint8_t *b, uint16_t v)
{
	b[0] = v >> 8;
	b[1] = v;
}

static void put24(uint8_t *b, uint32_t v)
{
	b[0] = v >> 16;
	b[1] = v >> 8;
	b[2] = v;
}

static void put32(uint8_t *b, uint32_t v)
{
	put16(b, v >> 16);
	put16(b + 2, v);
}

static void put64(uint8_t *b, uint64_t v)
{
	put32(b, v >> 32);
	put32(b + 4, v);
}

static uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static uint32_t get24(const uint8_t *b)
{
	return (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)get16(b) << 16 | get16(b + 2);
}

static uint64_t get64(const uint8_t *b)
{
	return (uint64_t)get32(b) << 32 | get32(b + 4);
}

/* CRCs go on the wire least-significant byte first, like the Ethernet FCS (IBA 7.8.1). */
static void put_le(uint8_t *b, uint32_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		b[i] = v >> (8 * i);
}

static uint32_t get_le(const uint8_t *b, int bytes)
{
	uint32_t v = 0;

	for (int i = 0; i < bytes; i++)
		v |= (uint32_t)b[i] << (8 * i);
	return v;
}

/* Offsets inside the headers. */
enum {
	LRH_LNH_LOCAL = 2,     /* IBA local: BTH follows the LRH */
	LRH_LNH_GLOBAL = 3,    /* IBA global: GRH follows */
	GRH_NXTHDR_IBA = 0x1b, /* IBA 8.3: BTH follows the GRH */
	ETHERTYPE_IPV4 = 0x0800,
	IPV4_PROTO_UDP = 17,
	IPV4_DF = 0x4000,
	ROCE_L2_BYTES = HM_ETH_BYTES + HM_IPV4_BYTES + HM_UDP_BYTES, /* before the BTH */
	IB_TRAILER = HM_ICRC_BYTES + HM_VCRC_BYTES,
	BTH_RESV8A = 4, /* BTH byte 4: FECN, BECN, Resv6a */
};

/* RFC 791 header checksum over the 20-byte IPv4 header (its checksum field as stored). */
static uint16_t ipv4_sum(const uint8_t *ip)
{
	uint32_t s = 0;

	for (int i = 0; i < HM_IPV4_BYTES; i += 2)
		s += get16(ip + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* ---- CRCs ---- */

/* Both CRCs run on the engine of model/crc.c, set up on first use (the simulator and its tools
 * are single-threaded). */
static struct hm_crc icrc_eng, vcrc_eng;
static bool crc_ready;

static void crc_setup(void)
{
	if (crc_ready)
		return;
	hm_crc_init(&icrc_eng, 32, 0xedb88320); /* the Ethernet polynomial, reflected */
	hm_crc_init(&vcrc_eng, 16, 0xd008);	/* 0x100B, reflected */
	crc_ready = true;
}

/* ICRC (IBA 7.8.1): CRC-32 with the Ethernet polynomial, initial all ones, final complement —
 * zlib's crc32(), which the tests check it against — over the packet with its variant fields
 * replaced by ones:
 *  - local packet (LNH 2): the LRH with VL set to ones; the BTH with Resv8a (byte 4: FECN, BECN,
 *    Resv6a) set to ones; everything else up to the ICRC as sent.
 *  - global packet (LNH 3): the whole LRH is variant (a router rewrites it: DLID, SLID, SL, VL),
 *    so all 8 bytes are ones; the GRH with TClass, FlowLabel and HopLmt set to ones; the BTH
 *    as above. (IBA 7.8.1; the same list in Shanley, "InfiniBand Network Architecture", ch. 25
 *    "Packet CRCs": a global packet's ICRC covers IPVer, PayLen, NxtHdr, SGID, DGID, the BTH
 *    but Resv8a, the ETHs and the payload — no LRH field.)
 *  - RoCEv2/IPv4 (A17.4.3.1): 8 bytes of ones stand in for the LRH; the IPv4 header with TOS,
 *    TTL and header checksum set to ones; the UDP header with its checksum set to ones; the BTH
 *    as above. The IPv4 header is taken as 20 bytes (IHL 5, which parsing requires). */
uint32_t hm_pkt_icrc(enum hm_link_layer ll, const uint8_t *f, size_t len)
{
	uint8_t h[HM_LRH_BYTES + HM_GRH_BYTES + HM_BTH_BYTES]; /* masked copy of the headers */
	size_t n, from, end;
	uint32_t crc;

	if (ll == HM_LL_ROCE) {
		if (len < ROCE_L2_BYTES + HM_BTH_BYTES + HM_ICRC_BYTES)
			return 0;
		memset(h, 0xff, HM_LRH_BYTES);
		n = HM_IPV4_BYTES + HM_UDP_BYTES + HM_BTH_BYTES;
		memcpy(h + HM_LRH_BYTES, f + HM_ETH_BYTES, n);
		h[HM_LRH_BYTES + 1] = 0xff;			       /* TOS (DSCP, ECN) */
		h[HM_LRH_BYTES + 8] = 0xff;			       /* TTL */
		memset(h + HM_LRH_BYTES + 10, 0xff, 2);		       /* header checksum */
		memset(h + HM_LRH_BYTES + HM_IPV4_BYTES + 6, 0xff, 2); /* UDP checksum */
		n += HM_LRH_BYTES;
		from = ROCE_L2_BYTES + HM_BTH_BYTES;
		end = len - HM_ICRC_BYTES;
	} else {
		uint8_t lnh;

		if (len < HM_LRH_BYTES + HM_BTH_BYTES + IB_TRAILER)
			return 0;
		lnh = f[1] & 3;
		if (lnh == LRH_LNH_LOCAL) {
			n = HM_LRH_BYTES + HM_BTH_BYTES;
			memcpy(h, f, n);
			h[0] |= 0xf0; /* VL */
		} else if (lnh == LRH_LNH_GLOBAL) {
			n = HM_LRH_BYTES + HM_GRH_BYTES + HM_BTH_BYTES;
			if (len < n + IB_TRAILER)
				return 0;
			memcpy(h, f, n);
			memset(h, 0xff, HM_LRH_BYTES);	       /* the whole LRH */
			h[HM_LRH_BYTES] |= 0x0f;	       /* TClass, high nibble */
			memset(h + HM_LRH_BYTES + 1, 0xff, 3); /* TClass low nibble, FlowLabel */
			h[HM_LRH_BYTES + 7] = 0xff;	       /* HopLmt */
		} else {
			return 0; /* raw packets carry no ICRC */
		}
		from = n;
		end = len - IB_TRAILER;
	}
	h[n - HM_BTH_BYTES + BTH_RESV8A] = 0xff;
	crc_setup();
	crc = hm_crc_update(&icrc_eng, 0xffffffff, h, n);
	return ~hm_crc_update(&icrc_eng, crc, f + from, end - from);
}

/* VCRC (IBA 7.8.2): CRC-16, polynomial x^16+x^12+x^3+x+1 (0x100B), initial value all ones,
 * computed over the bits in the order they are sent (each byte least-significant bit first, so
 * the register is the bit-reflected one with polynomial 0xD008), final complement; covers the
 * whole packet from the first LRH byte through the ICRC. Parameters as in Endace's DAG capture
 * library (dagcrc.c, dagcrc_infiniband_vcrc16_r: table from 0xD008, register preset to 0xFFFF,
 * result XOR 0xFFFF), the published implementation from a vendor of InfiniBand capture cards;
 * tshark 4.0 shows the field but does not check it. Check value over "123456789": 0x0A3D
 * (testbench/test_pkt.c). Sent least-significant byte first like the ICRC: our choice, which
 * that source does not show, and not checked against hardware. */
uint16_t hm_pkt_vcrc(const uint8_t *f, size_t len)
{
	if (len < HM_VCRC_BYTES)
		return 0;
	crc_setup();
	return (uint16_t)(hm_crc_update(&vcrc_eng, 0xffff, f, len - HM_VCRC_BYTES) ^ 0xffff);
}

/* ---- build ---- */

static void put_ext(uint8_t *b, uint32_t bit, const struct hm_pkt *p)
{
	switch (bit) {
	case HM_HDR_DETH: /* IBA 9.3: Q_Key, Resv8, SrcQP */
		put32(b, p->deth_qkey);
		b[4] = 0;
		put24(b + 5, p->deth_sqpn);
		break;
	case HM_HDR_RETH: /* VA, R_Key, DMALen */
		put64(b, p->reth_va);
		put32(b + 8, p->reth_rkey);
		put32(b + 12, p->reth_dmalen);
		break;
	case HM_HDR_ATOMICETH: /* VA, R_Key, SwapData (or AddData), CmpData */
		put64(b, p->atomic_va);
		put32(b + 8, p->atomic_rkey);
		put64(b + 12, p->atomic_swap_add);
		put64(b + 20, p->atomic_compare);
		break;
	case HM_HDR_AETH: /* Syndrome, MSN */
		b[0] = p->aeth_syndrome;
		put24(b + 1, p->aeth_msn);
		break;
	case HM_HDR_ATOMICACKETH: /* OrigRemDt */
		put64(b, p->atomic_orig);
		break;
	case HM_HDR_IMMDT: /* the 32-bit value, big-endian like every field */
		put32(b, p->imm);
		break;
	case HM_HDR_IETH: /* R_Key */
		put32(b, p->ieth_rkey);
		break;
	case HM_HDR_XRCETH: /* Reserved (8 bits), XRCSRQ (24 bits) */
		b[0] = 0;
		put24(b + 1, p->xrc_srqn);
		break;
	}
}

static void get_ext(const uint8_t *b, uint32_t bit, struct hm_pkt *p)
{
	switch (bit) {
	case HM_HDR_DETH:
		p->deth_qkey = get32(b);
		p->deth_sqpn = get24(b + 5);
		break;
	case HM_HDR_RETH:
		p->reth_va = get64(b);
		p->reth_rkey = get32(b + 8);
		p->reth_dmalen = get32(b + 12);
		break;
	case HM_HDR_ATOMICETH:
		p->atomic_va = get64(b);
		p->atomic_rkey = get32(b + 8);
		p->atomic_swap_add = get64(b + 12);
		p->atomic_compare = get64(b + 20);
		break;
	case HM_HDR_AETH:
		p->aeth_syndrome = b[0];
		p->aeth_msn = get24(b + 1);
		break;
	case HM_HDR_ATOMICACKETH:
		p->atomic_orig = get64(b);
		break;
	case HM_HDR_IMMDT:
		p->imm = get32(b);
		break;
	case HM_HDR_IETH:
		p->ieth_rkey = get32(b);
		break;
	case HM_HDR_XRCETH: /* the reserved byte is ignored on receipt */
		p->xrc_srqn = get24(b + 1);
		break;
	}
}

/* Fields wider than their wire field are a simulator bug, not something to clamp. */
static void check_fields(const struct hm_pkt *p, const struct hm_opcode_info *oi)
{
	SIM_ASSERT(p->dqpn < (1u << 24) && p->psn < (1u << 24), "op 0x%02x: dqpn 0x%x psn 0x%x",
		   p->opcode, p->dqpn, p->psn);
	SIM_ASSERT(p->vl < 16 && p->sl < 16 && p->flow_label < (1u << 20),
		   "op 0x%02x: vl %u sl %u flow_label 0x%x", p->opcode, p->vl, p->sl,
		   p->flow_label);
	SIM_ASSERT(p->aeth_msn < (1u << 24) && p->deth_sqpn < (1u << 24) &&
		   p->xrc_srqn < (1u << 24), "op 0x%02x: msn 0x%x sqpn 0x%x srqn 0x%x", p->opcode,
		   p->aeth_msn, p->deth_sqpn, p->xrc_srqn);
	SIM_ASSERT(p->paylen == 0 || ((oi->hdrs & HM_HDR_PAYLOAD) && p->payload),
		   "op 0x%02x (%s) with %u payload bytes", p->opcode, oi->name, p->paylen);
}

static void put_bth(uint8_t *b, const struct hm_pkt *p, uint8_t padcnt)
{
	/* IBA 9.2: OpCode | SE M PadCnt TVer(0) | P_Key | FECN BECN Resv6a | DestQP | A Resv7 |
	 * PSN */
	b[0] = p->opcode;
	b[1] = (uint8_t)(p->se << 7 | p->migreq << 6 | padcnt << 4);
	put16(b + 2, p->pkey);
	b[4] = (uint8_t)(p->fecn << 7 | p->becn << 6);
	put24(b + 5, p->dqpn);
	b[8] = (uint8_t)(p->ackreq << 7);
	put24(b + 9, p->psn);
}

/* The Ethernet, IPv4 and UDP headers of a RoCEv2 frame of len bytes (RoCE Annex A17.4). */
static void put_roce_l2(uint8_t *buf, const struct hm_pkt *p, size_t len)
{
	uint8_t *ip = buf + HM_ETH_BYTES, *udp = ip + HM_IPV4_BYTES;

	memcpy(buf, p->dmac, 6);
	memcpy(buf + 6, p->smac, 6);
	put16(buf + 12, ETHERTYPE_IPV4);
	ip[0] = 0x45; /* version 4, IHL 5 */
	ip[1] = p->traffic_class;
	put16(ip + 2, (uint16_t)(len - HM_ETH_BYTES)); /* includes the ICRC (A17.4.3) */
	put16(ip + 4, 0);			       /* identification */
	put16(ip + 6, IPV4_DF);
	ip[8] = p->hop_limit;
	ip[9] = IPV4_PROTO_UDP;
	put16(ip + 10, 0);
	memcpy(ip + 12, p->sgid + 12, 4); /* ::ffff:a.b.c.d */
	memcpy(ip + 16, p->dgid + 12, 4);
	put16(ip + 10, ipv4_sum(ip));
	put16(udp, p->udp_sport);
	put16(udp + 2, HM_ROCE_UDP_PORT);
	put16(udp + 4, (uint16_t)(len - HM_ETH_BYTES - HM_IPV4_BYTES));
	put16(udp + 6, 0); /* no UDP checksum (A17.4.2) */
}

/* The LRH, and the GRH if any, of an InfiniBand packet of len bytes with l2 bytes of them. */
static void put_ib_l2(uint8_t *buf, const struct hm_pkt *p, size_t len, size_t l2)
{
	/* IBA 7.7: VL LVer(0) | SL Rsv2 LNH | DLID | Rsv5 PktLen | SLID */
	buf[0] = (uint8_t)(p->vl << 4);
	buf[1] = (uint8_t)(p->sl << 4 | (p->has_grh ? LRH_LNH_GLOBAL : LRH_LNH_LOCAL));
	put16(buf + 2, p->dlid);
	put16(buf + 4, (uint16_t)((len - HM_VCRC_BYTES) / 4)); /* LRH through ICRC */
	put16(buf + 6, p->slid);
	if (p->has_grh) {
		uint8_t *g = buf + HM_LRH_BYTES;

		/* IBA 8.3: IPVer TClass FlowLabel | PayLen (after the GRH through the
		 * ICRC) | NxtHdr | HopLmt | SGID | DGID */
		put32(g, 6u << 28 | (uint32_t)p->traffic_class << 20 | p->flow_label);
		put16(g + 4, (uint16_t)(len - l2 - HM_VCRC_BYTES));
		g[6] = GRH_NXTHDR_IBA;
		g[7] = p->hop_limit;
		memcpy(g + 8, p->sgid, 16);
		memcpy(g + 24, p->dgid, 16);
	}
}

/* The layer 2 (and 3) header bytes of p's frame on ll. */
static size_t l2_bytes(enum hm_link_layer ll, const struct hm_pkt *p)
{
	return ll == HM_LL_ROCE ? ROCE_L2_BYTES : HM_LRH_BYTES + (p->has_grh ? HM_GRH_BYTES : 0);
}

/* The frame length of p (opcode oi) on ll, and in *payload_off where its payload goes. */
static inline size_t layout(enum hm_link_layer ll, const struct hm_pkt *p,
		     const struct hm_opcode_info *oi, size_t *payload_off)
{
	size_t off = l2_bytes(ll, p) + HM_BTH_BYTES + ext_bytes(oi->hdrs);

	*payload_off = off;
	/* IBA 9.2: payload padded to 4 bytes */
	return off + p->paylen + ((4 - (p->paylen & 3)) & 3) + HM_ICRC_BYTES +
	       (ll == HM_LL_IB ? HM_VCRC_BYTES : 0);
}

size_t hm_pkt_frame_len(enum hm_link_layer ll, const struct hm_pkt *p, size_t *payload_off)
{
	const struct hm_opcode_info *oi = hm_opcode_info(p->opcode);
	size_t off;

	if (!oi)
		return 0;
	return layout(ll, p, oi, payload_off ? payload_off : &off);
}

size_t hm_pkt_build_unsealed(enum hm_link_layer ll, const struct hm_pkt *p, uint8_t *buf,
			     size_t cap)
{
	const struct hm_opcode_info *oi = hm_opcode_info(p->opcode);
	size_t l2, len, off;
	uint8_t pad;

	if (!oi)
		return 0;
	check_fields(p, oi);
	pad = (uint8_t)((4 - (p->paylen & 3)) & 3);
	l2 = l2_bytes(ll, p);
	len = layout(ll, p, oi, &off);
	if (len > cap)
		return 0;
	/* The length fields must hold the packet: PktLen 11 bits of words, IP length 16 bits. */
	if (ll == HM_LL_IB && (len - HM_VCRC_BYTES) / 4 > 0x7ff)
		return 0;
	if (ll == HM_LL_ROCE && len - HM_ETH_BYTES > 0xffff)
		return 0;

	if (ll == HM_LL_ROCE)
		put_roce_l2(buf, p, len);
	else
		put_ib_l2(buf, p, len, l2);
	put_bth(buf + l2, p, pad);
	off = l2 + HM_BTH_BYTES;
	/* in wire order, until the last header the opcode carries */
	for (uint32_t ext = oi->hdrs & EXT_HDRS, i = 0; ext; i++) {
		if (ext & ext_order[i].bit) {
			put_ext(buf + off, ext_order[i].bit, p);
			off += ext_order[i].bytes;
			ext &= ~ext_order[i].bit;
		}
	}
	if (p->paylen && p->payload != buf + off) /* not gathered in place already */
		memcpy(buf + off, p->payload, p->paylen);
	off += p->paylen;
	memset(buf + off, 0, pad + (ll == HM_LL_IB ? IB_TRAILER : HM_ICRC_BYTES));
	return len;
}

void hm_pkt_seal(enum hm_link_layer ll, uint8_t *buf, size_t len)
{
	size_t trailer = ll == HM_LL_IB ? IB_TRAILER : HM_ICRC_BYTES;

	put_le(buf + len - trailer, hm_pkt_icrc(ll, buf, len), HM_ICRC_BYTES);
	if (ll == HM_LL_IB)
		put_le(buf + len - HM_VCRC_BYTES, hm_pkt_vcrc(buf, len), HM_VCRC_BYTES);
}

size_t hm_pkt_build(enum hm_link_layer ll, const struct hm_pkt *p, uint8_t *buf, size_t cap)
{
	size_t len = hm_pkt_build_unsealed(ll, p, buf, cap);

	if (len)
		hm_pkt_seal(ll, buf, len);
	return len;
}

/* ---- check and parse ----
 * Order of the checks: first what locates the CRCs — the frame holds the fixed headers, its
 * length fields (LRH PktLen; IPv4 and UDP lengths) agree with the frame length, and on RoCE the
 * frame is IPv4/UDP to port 4791 — then the CRCs (VCRC first on IB, as the link layer does;
 * then the ICRC; on RoCE the IPv4 header checksum), then the transport headers. A frame that is
 * not the packet its own headers describe is -EPROTO; a frame that is, but whose bits changed,
 * is -EBADMSG. A flipped bit in a length or type field therefore reads as -EPROTO. */

/* Returns the offset of the BTH, or -EPROTO / -EBADMSG (crc: whether to check the CRCs at
 * all; a frame whose CRCs are known good skips them). */
static int check_ib(const uint8_t *f, size_t len, bool crc)
{
	uint8_t lnh;

	if (len < HM_LRH_BYTES + HM_BTH_BYTES + IB_TRAILER)
		return -EPROTO;
	if ((size_t)(get16(f + 4) & 0x7ff) * 4 != len - HM_VCRC_BYTES)
		return -EPROTO; /* PktLen against the received length (IBA 7.7) */
	if (crc && hm_pkt_vcrc(f, len) != get_le(f + len - HM_VCRC_BYTES, HM_VCRC_BYTES))
		return -EBADMSG;
	if ((f[0] & 0x0f) != 0)
		return -EPROTO; /* LVer 0 only (IBA 7.7) */
	lnh = f[1] & 3;
	if (lnh == LRH_LNH_GLOBAL) {
		const uint8_t *g = f + HM_LRH_BYTES;

		if (len < HM_LRH_BYTES + HM_GRH_BYTES + HM_BTH_BYTES + IB_TRAILER)
			return -EPROTO;
		if (g[0] >> 4 != 6 || g[6] != GRH_NXTHDR_IBA)
			return -EPROTO;
		if (get16(g + 4) != len - HM_LRH_BYTES - HM_GRH_BYTES - HM_VCRC_BYTES)
			return -EPROTO;
	} else if (lnh != LRH_LNH_LOCAL) {
		return -EPROTO; /* raw packets carry no BTH */
	}
	if (crc && hm_pkt_icrc(HM_LL_IB, f, len) != get_le(f + len - IB_TRAILER, HM_ICRC_BYTES))
		return -EBADMSG;
	return HM_LRH_BYTES + (lnh == LRH_LNH_GLOBAL ? HM_GRH_BYTES : 0);
}

static int check_roce(const uint8_t *f, size_t len, bool crc)
{
	const uint8_t *ip = f + HM_ETH_BYTES, *udp = ip + HM_IPV4_BYTES;

	if (len < ROCE_L2_BYTES + HM_BTH_BYTES + HM_ICRC_BYTES)
		return -EPROTO;
	/* Is it RoCEv2 at all: IPv4 without options, UDP, destination port 4791 (A17.4.2). */
	if (get16(f + 12) != ETHERTYPE_IPV4 || ip[0] != 0x45 || ip[9] != IPV4_PROTO_UDP ||
	    get16(udp + 2) != HM_ROCE_UDP_PORT)
		return -EPROTO;
	/* No Ethernet padding: the frame ends with the ICRC. */
	if (get16(ip + 2) != len - HM_ETH_BYTES ||
	    get16(udp + 4) != len - HM_ETH_BYTES - HM_IPV4_BYTES)
		return -EPROTO;
	if (crc && hm_pkt_icrc(HM_LL_ROCE, f, len) != get_le(f + len - HM_ICRC_BYTES,
							      HM_ICRC_BYTES))
		return -EBADMSG;
	/* RFC 791: summed with its checksum, a good header gives all ones (complement 0). */
	if (ipv4_sum(ip) != 0)
		return -EBADMSG;
	return ROCE_L2_BYTES;
}

int hm_pkt_check_crcs(enum hm_link_layer ll, const uint8_t *frame, size_t len)
{
	int r = ll == HM_LL_ROCE ? check_roce(frame, len, true) : check_ib(frame, len, true);

	return r < 0 ? r : 0;
}

int hm_pkt_parse(enum hm_link_layer ll, const uint8_t *f, size_t len, struct hm_pkt *p)
{
	return hm_pkt_parse_crc(ll, f, len, true, p);
}

int hm_pkt_parse_crc(enum hm_link_layer ll, const uint8_t *f, size_t len, bool check_crc,
		     struct hm_pkt *p)
{
	const struct hm_opcode_info *oi;
	const uint8_t *b;
	size_t off, trailer, region;
	int r;

	r = ll == HM_LL_ROCE ? check_roce(f, len, check_crc) : check_ib(f, len, check_crc);
	if (r < 0)
		return r;
	off = (size_t)r;
	trailer = ll == HM_LL_ROCE ? HM_ICRC_BYTES : IB_TRAILER;
	*p = hm_pkt_zero;

	if (ll == HM_LL_ROCE) {
		const uint8_t *ip = f + HM_ETH_BYTES, *udp = ip + HM_IPV4_BYTES;

		if (get16(ip + 6) & 0x3fff)
			return -EPROTO; /* a fragment (MF or offset set) */
		memcpy(p->dmac, f, 6);
		memcpy(p->smac, f + 6, 6);
		p->has_grh = true;
		p->traffic_class = ip[1];
		p->hop_limit = ip[8];
		p->sgid[10] = p->sgid[11] = p->dgid[10] = p->dgid[11] = 0xff;
		memcpy(p->sgid + 12, ip + 12, 4);
		memcpy(p->dgid + 12, ip + 16, 4);
		p->udp_sport = get16(udp);
	} else {
		p->vl = f[0] >> 4;
		p->sl = f[1] >> 4;
		p->dlid = get16(f + 2);
		p->slid = get16(f + 6);
		p->has_grh = off > HM_LRH_BYTES;
		if (p->has_grh) {
			const uint8_t *g = f + HM_LRH_BYTES;
			uint32_t w = get32(g);

			p->traffic_class = (uint8_t)(w >> 20);
			p->flow_label = w & 0xfffff;
			p->hop_limit = g[7];
			memcpy(p->sgid, g + 8, 16);
			memcpy(p->dgid, g + 24, 16);
		}
	}

	b = f + off;
	oi = hm_opcode_info(b[0]);
	if (!oi || (b[1] & 0x0f) != 0)
		return -EPROTO; /* unknown opcode, or TVer other than 0 (IBA 9.2) */
	p->opcode = b[0];
	p->se = b[1] >> 7;
	p->migreq = (b[1] >> 6) & 1;
	p->padcnt = (b[1] >> 4) & 3;
	p->pkey = get16(b + 2);
	p->fecn = b[4] >> 7;
	p->becn = (b[4] >> 6) & 1;
	p->dqpn = get24(b + 5);
	p->ackreq = b[8] >> 7;
	p->psn = get24(b + 9);
	off += HM_BTH_BYTES;

	if (off + ext_bytes(oi->hdrs) + trailer > len)
		return -EPROTO; /* too short for the headers its opcode carries */
	for (uint32_t ext = oi->hdrs & EXT_HDRS, i = 0; ext; i++) {
		if (ext & ext_order[i].bit) {
			get_ext(f + off, ext_order[i].bit, p);
			off += ext_order[i].bytes;
			ext &= ~ext_order[i].bit;
		}
	}
	region = len - trailer - off; /* payload and pad */
	if (region % 4 || (region && !(oi->hdrs & HM_HDR_PAYLOAD)) || p->padcnt > region)
		return -EPROTO;
	p->payload = f + off;
	p->paylen = (uint32_t)(region - p->padcnt);
	return 0;
}

unsigned hm_pkt_wire_overhead(enum hm_link_layer ll)
{
	/* RoCE: preamble and SFD 8, FCS 4, inter-frame gap 12. IB: the frame already holds its
	 * CRCs; delimiters and idles are not modeled. */
	return ll == HM_LL_ROCE ? 8 + 4 + 12 : 0;
}
