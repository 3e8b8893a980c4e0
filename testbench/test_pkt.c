/* pkt: every opcode built and parsed back on native IB (with and without GRH) and RoCEv2, the
 * ICRC masks and the two RoCEv2 sample ICRCs, the VCRC definition, corruption (-EBADMSG),
 * truncation and malformed headers (-EPROTO), and PSN arithmetic. */
#include "model/pkt.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MTU 4096

enum variant { V_IB, V_IB_GRH, V_ROCE, V_COUNT };

static const char *const vname[V_COUNT] = {"IB", "IB+GRH", "RoCE"};

static enum hm_link_layer ll_of(enum variant v)
{
	return v == V_ROCE ? HM_LL_ROCE : HM_LL_IB;
}

static uint8_t pattern[MTU]; /* payload source */

static void init_pattern(void)
{
	for (int i = 0; i < MTU; i++)
		pattern[i] = (uint8_t)(i * 7 + 3);
}

static void set_ipv4_gid(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	gid[12] = a;
	gid[13] = b;
	gid[14] = c;
	gid[15] = d;
}

/* A packet with a distinct value in every field the variant carries. */
static void fill(struct hm_pkt *p, uint8_t op, enum variant v, uint32_t paylen)
{
	memset(p, 0, sizeof(*p));
	if (v == V_ROCE) {
		set_ipv4_gid(p->sgid, 192, 168, 1, 10);
		set_ipv4_gid(p->dgid, 192, 168, 1, 20);
		memcpy(p->smac, "\x02\x11\x22\x33\x44\x55", 6);
		memcpy(p->dmac, "\x02\x66\x77\x88\x99\xaa", 6);
		p->udp_sport = 0xc123;
		p->has_grh = true;
		p->traffic_class = 0x5a;
		p->hop_limit = 0x40;
	} else {
		p->vl = 3;
		p->sl = 9;
		p->dlid = 0x1234;
		p->slid = 0x0042;
		if (v == V_IB_GRH) {
			p->has_grh = true;
			p->traffic_class = 0xa5;
			p->flow_label = 0x12345;
			p->hop_limit = 0x3f;
			for (int i = 0; i < 16; i++) {
				p->sgid[i] = (uint8_t)(0xf0 + i);
				p->dgid[i] = (uint8_t)(0x10 + i);
			}
		}
	}
	p->opcode = op;
	p->se = true;
	p->migreq = true;
	p->ackreq = true;
	p->fecn = true;
	p->pkey = 0x8001;
	p->dqpn = 0xabcdef;
	p->psn = 0xfedcba;
	p->reth_va = 0x0123456789abcdefull;
	p->reth_rkey = 0x11223344;
	p->reth_dmalen = 0x55667788;
	p->aeth_syndrome = 0x1f;
	p->aeth_msn = 0x123456;
	p->atomic_va = 0x7f00000000001000ull;
	p->atomic_rkey = 0x99aabbcc;
	p->atomic_swap_add = 0x0102030405060708ull;
	p->atomic_compare = 0x1112131415161718ull;
	p->atomic_orig = 0x2122232425262728ull;
	p->imm = 0xdeadbeef;
	p->deth_qkey = 0x80010000;
	p->deth_sqpn = 0x000123;
	p->ieth_rkey = 0xcafef00d;
	p->payload = paylen ? pattern : NULL;
	p->paylen = paylen;
}

/* What parsing must give back: the fields the frame carries, zero elsewhere. */
static void expected(struct hm_pkt *e, const struct hm_pkt *p)
{
	uint32_t h = hm_opcode_info(p->opcode)->hdrs;

	*e = *p;
	e->padcnt = (uint8_t)((4 - (p->paylen & 3)) & 3);
	if (!(h & HM_HDR_RETH))
		e->reth_va = e->reth_rkey = e->reth_dmalen = 0;
	if (!(h & HM_HDR_AETH))
		e->aeth_syndrome = 0, e->aeth_msn = 0;
	if (!(h & HM_HDR_ATOMICETH))
		e->atomic_va = e->atomic_swap_add = e->atomic_compare = 0, e->atomic_rkey = 0;
	if (!(h & HM_HDR_ATOMICACKETH))
		e->atomic_orig = 0;
	if (!(h & HM_HDR_IMMDT))
		e->imm = 0;
	if (!(h & HM_HDR_DETH))
		e->deth_qkey = e->deth_sqpn = 0;
	if (!(h & HM_HDR_IETH))
		e->ieth_rkey = 0;
}

#define EXPECT_FIELD(f)                                                                            \
	cr_expect_eq(q->f, e->f, "%s op 0x%02x paylen %u: " #f " 0x%llx, want 0x%llx", vname[v],   \
		     e->opcode, e->paylen, (unsigned long long)q->f, (unsigned long long)e->f)
#define EXPECT_BYTES(f)                                                                            \
	cr_expect(!memcmp(q->f, e->f, sizeof(e->f)), "%s op 0x%02x: " #f " differs", vname[v],     \
		  e->opcode)

static void expect_same(const struct hm_pkt *q, const struct hm_pkt *e, enum variant v)
{
	EXPECT_FIELD(vl);
	EXPECT_FIELD(sl);
	EXPECT_FIELD(dlid);
	EXPECT_FIELD(slid);
	EXPECT_FIELD(has_grh);
	EXPECT_FIELD(traffic_class);
	EXPECT_FIELD(flow_label);
	EXPECT_FIELD(hop_limit);
	EXPECT_BYTES(sgid);
	EXPECT_BYTES(dgid);
	EXPECT_BYTES(smac);
	EXPECT_BYTES(dmac);
	EXPECT_FIELD(udp_sport);
	EXPECT_FIELD(opcode);
	EXPECT_FIELD(se);
	EXPECT_FIELD(migreq);
	EXPECT_FIELD(ackreq);
	EXPECT_FIELD(fecn);
	EXPECT_FIELD(becn);
	EXPECT_FIELD(padcnt);
	EXPECT_FIELD(pkey);
	EXPECT_FIELD(dqpn);
	EXPECT_FIELD(psn);
	EXPECT_FIELD(reth_va);
	EXPECT_FIELD(reth_rkey);
	EXPECT_FIELD(reth_dmalen);
	EXPECT_FIELD(aeth_syndrome);
	EXPECT_FIELD(aeth_msn);
	EXPECT_FIELD(atomic_va);
	EXPECT_FIELD(atomic_rkey);
	EXPECT_FIELD(atomic_swap_add);
	EXPECT_FIELD(atomic_compare);
	EXPECT_FIELD(atomic_orig);
	EXPECT_FIELD(imm);
	EXPECT_FIELD(deth_qkey);
	EXPECT_FIELD(deth_sqpn);
	EXPECT_FIELD(ieth_rkey);
	EXPECT_FIELD(paylen);
	cr_expect(e->paylen == 0 || !memcmp(q->payload, e->payload, e->paylen),
		  "%s op 0x%02x paylen %u: payload differs", vname[v], e->opcode, e->paylen);
}

/* The opcodes IBA defines for RC, UC and UD that the table must hold. */
/* clang-format off */
static const uint8_t all_ops[] = {
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c,
	0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x20, 0x21, 0x22,
	0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x64, 0x65,
	/* XRC: the RC opcodes in class 0xa0 */
	0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac,
	0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb6, 0xb7,
};
/* clang-format on */
#define NOPS (sizeof(all_ops) / sizeof(all_ops[0]))

static size_t ext_len(uint32_t h)
{
	return (h & HM_HDR_RETH ? HM_RETH_BYTES : 0) + (h & HM_HDR_AETH ? HM_AETH_BYTES : 0) +
	       (h & HM_HDR_ATOMICETH ? HM_ATOMICETH_BYTES : 0) +
	       (h & HM_HDR_ATOMICACKETH ? HM_ATOMICACKETH_BYTES : 0) +
	       (h & HM_HDR_IMMDT ? HM_IMMDT_BYTES : 0) + (h & HM_HDR_DETH ? HM_DETH_BYTES : 0) +
	       (h & HM_HDR_IETH ? HM_IETH_BYTES : 0) + (h & HM_HDR_XRCETH ? HM_XRCETH_BYTES : 0);
}

static uint16_t be16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static void put_be16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

static void put_le(uint8_t *b, uint32_t v, int n)
{
	for (int i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* RFC 791 checksum of the IPv4 header of a RoCE frame, stored in place. */
static void fix_ipv4_csum(uint8_t *f)
{
	uint8_t *ip = f + HM_ETH_BYTES;
	uint32_t s = 0;

	put_be16(ip + 10, 0);
	for (int i = 0; i < HM_IPV4_BYTES; i += 2)
		s += be16(ip + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	put_be16(ip + 10, (uint16_t)~s);
}

/* Recompute every CRC (and the IPv4 checksum) after a deliberate edit, as a broken or
 * malicious sender would. */
static void reseal(enum hm_link_layer ll, uint8_t *f, size_t len)
{
	if (ll == HM_LL_ROCE) {
		if (len >= HM_ETH_BYTES + HM_IPV4_BYTES)
			fix_ipv4_csum(f);
		if (len >= HM_ICRC_BYTES)
			put_le(f + len - HM_ICRC_BYTES, hm_pkt_icrc(ll, f, len), HM_ICRC_BYTES);
	} else {
		if (len >= HM_ICRC_BYTES + HM_VCRC_BYTES)
			put_le(f + len - 6, hm_pkt_icrc(ll, f, len), HM_ICRC_BYTES);
		if (len >= HM_VCRC_BYTES)
			put_le(f + len - 2, hm_pkt_vcrc(f, len), HM_VCRC_BYTES);
	}
}

/* Build into an exactly sized heap buffer, so that ASan sees any read past the frame. */
static uint8_t *build(enum variant v, const struct hm_pkt *p, size_t *len)
{
	uint8_t tmp[HM_PKT_MAX_BYTES], *f;

	*len = hm_pkt_build(ll_of(v), p, tmp, sizeof(tmp));
	cr_assert_gt(*len, 0, "%s op 0x%02x paylen %u: build failed", vname[v], p->opcode,
		     p->paylen);
	f = malloc(*len);
	cr_assert_not_null(f);
	memcpy(f, tmp, *len);
	return f;
}

Test(pkt, opcode_table_holds_rc_uc_ud_xrc_and_nothing_else)
{
	int known = 0;

	for (size_t i = 0; i < NOPS; i++) {
		const struct hm_opcode_info *oi = hm_opcode_info(all_ops[i]);

		cr_assert_not_null(oi, "opcode 0x%02x missing", all_ops[i]);
		cr_expect_not_null(oi->name);
	}
	for (int op = 0; op < 256; op++)
		known += hm_opcode_info((uint8_t)op) != NULL;
	cr_expect_eq(known, (int)NOPS, "the table holds %d opcodes, want %zu", known, NOPS);
	cr_expect_null(hm_opcode_info(0x15), "0x15 is reserved");
	cr_expect_null(hm_opcode_info(0x2c), "UC has no READ");
	cr_expect_null(hm_opcode_info(0x40), "RD is not supported");
	cr_expect_null(hm_opcode_info(0xb5), "0xb5 is reserved (as 0x15)");
	cr_expect_eq(hm_opcode_info(0xa6)->hdrs, HM_HDR_XRCETH | HM_HDR_RETH | HM_HDR_PAYLOAD);
	/* a few rows in detail */
	cr_expect_eq(hm_opcode_info(HM_OP_WRITE_ONLY_IMM)->hdrs,
		     HM_HDR_RETH | HM_HDR_IMMDT | HM_HDR_PAYLOAD);
	cr_expect_eq(hm_opcode_info(HM_OP_ATOMIC_ACKNOWLEDGE)->hdrs,
		     HM_HDR_AETH | HM_HDR_ATOMICACKETH);
	cr_expect_eq(hm_opcode_info(HM_OP_READ_RESPONSE_MIDDLE)->hdrs, HM_HDR_PAYLOAD);
	cr_expect_eq(hm_opcode_info(HM_OP_UD_SEND_ONLY_IMM)->hdrs,
		     HM_HDR_DETH | HM_HDR_IMMDT | HM_HDR_PAYLOAD);
	cr_expect_eq(hm_opcode_info(HM_OP_UC | HM_OP_WRITE_FIRST)->hdrs,
		     hm_opcode_info(HM_OP_WRITE_FIRST)->hdrs);
	cr_expect_eq(hm_opcode_info(HM_OP_SEND_LAST_INV)->pos, HM_POS_LAST);
	cr_expect_eq(hm_opcode_class(HM_OP_ACKNOWLEDGE), HM_OPC_ACK);
	cr_expect(hm_opcode_class(HM_OP_ACKNOWLEDGE) & HM_OPC_RESPONSE);
	cr_expect_eq(hm_opcode_class(HM_OP_READ_REQUEST), HM_OPC_READ_REQ);
	cr_expect(hm_opcode_class(HM_OP_READ_REQUEST) & HM_OPC_REQUEST);
	cr_expect_eq(hm_opcode_class(HM_OP_UC | HM_OP_SEND_ONLY_IMM), HM_OPC_SEND);
	cr_expect_eq(hm_opcode_class(HM_OP_WRITE_LAST_IMM), HM_OPC_WRITE);
	cr_expect_eq(hm_opcode_class(HM_OP_FETCH_ADD), HM_OPC_ATOMIC);
	cr_expect_eq(hm_opcode_class(HM_OP_READ_RESPONSE_MIDDLE), HM_OPC_READ_RSP);
	cr_expect_eq(hm_opcode_class(HM_OP_ATOMIC_ACKNOWLEDGE), HM_OPC_ATOMIC_ACK);
	cr_expect_eq(hm_opcode_class(0x2c), 0, "UC has no READ");
	/* Every known opcode has exactly one class; an unknown one none. */
	for (unsigned op = 0; op < 256; op++) {
		uint8_t c = hm_opcode_class((uint8_t)op);

		cr_expect_eq(c != 0, hm_opcode_info((uint8_t)op) != NULL, "opcode 0x%02x", op);
		cr_expect_eq(c & (c - 1), 0, "opcode 0x%02x has more than one class", op);
	}
	cr_expect_str_eq(hm_opcode_info(HM_OP_WRITE_FIRST)->name, "RC RDMA WRITE First");
}

Test(pkt, every_opcode_round_trips_on_both_link_layers_with_and_without_grh)
{
	static const uint32_t sizes[] = {0, 1, 3, 4, MTU};
	int frames = 0;

	init_pattern();
	for (int v = 0; v < V_COUNT; v++) {
		for (size_t i = 0; i < NOPS; i++) {
			uint32_t h = hm_opcode_info(all_ops[i])->hdrs;

			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				struct hm_pkt p, e, q;
				size_t len, want;
				uint8_t *f;
				int r;

				if (sizes[s] && !(h & HM_HDR_PAYLOAD))
					continue;
				fill(&p, all_ops[i], v, sizes[s]);
				expected(&e, &p);
				f = build(v, &p, &len);
				want = (v == V_ROCE	? 42
					: v == V_IB_GRH ? 48
							: 8) +
				       HM_BTH_BYTES + ext_len(h) + sizes[s] + e.padcnt +
				       HM_ICRC_BYTES + (v == V_ROCE ? 0 : HM_VCRC_BYTES);
				cr_expect_eq(len, want,
					     "%s op 0x%02x paylen %u: %zu bytes, want %zu",
					     vname[v], p.opcode, p.paylen, len, want);
				if (v == V_ROCE) {
					cr_expect_eq(be16(f + 16), len - 14, "IPv4 total length");
					cr_expect_eq(be16(f + 38), len - 34, "UDP length");
				} else {
					cr_expect_eq((be16(f + 4) & 0x7ff) * 4u, len - 2, "PktLen");
				}
				if (v == V_IB_GRH)
					cr_expect_eq(be16(f + 12), len - 50, "GRH PayLen");
				r = hm_pkt_parse(ll_of(v), f, len, &q);
				cr_expect_eq(r, 0, "%s op 0x%02x paylen %u: parse %d", vname[v],
					     p.opcode, p.paylen, r);
				if (!r) {
					expect_same(&q, &e, v);
					cr_expect(q.payload >= f &&
						  q.payload + q.paylen <= f + len);
				}
				cr_expect_eq(hm_pkt_check_crcs(ll_of(v), f, len), 0);
				free(f);
				frames++;
			}
		}
	}
	/* 60 opcodes (37 RC, UC, UD; 23 XRC), 50 of them with payload (32; 18): (60 + 50 * 4)
	 * frames per variant */
	cr_expect_eq(frames, 3 * (60 + 50 * 4));
}

/* Toolchain-facts samples, computed with scapy and matching Linux rxe. Both reproduce with
 * IPv4 identification 0x1234 and DF set; the builder writes identification 0, so the test
 * sets it and fixes the header checksum before taking the ICRC. */
static void roce_sample(const struct hm_pkt *p, uint32_t want_icrc, const uint8_t want_wire[4])
{
	uint8_t tmp[HM_PKT_MAX_BYTES];
	size_t len = hm_pkt_build(HM_LL_ROCE, p, tmp, sizeof(tmp));
	struct hm_pkt q;
	uint8_t *f;

	cr_assert_gt(len, 0);
	f = malloc(len);
	memcpy(f, tmp, len);
	cr_expect_eq(be16(f + 18), 0, "the builder writes identification 0");
	cr_expect_eq(be16(f + 20), 0x4000, "and DF");
	put_be16(f + 18, 0x1234);
	fix_ipv4_csum(f);
	cr_expect_eq(hm_pkt_icrc(HM_LL_ROCE, f, len), want_icrc, "ICRC 0x%08x, want 0x%08x",
		     hm_pkt_icrc(HM_LL_ROCE, f, len), want_icrc);
	put_le(f + len - 4, hm_pkt_icrc(HM_LL_ROCE, f, len), 4);
	cr_expect(!memcmp(f + len - 4, want_wire, 4), "ICRC bytes on the wire");
	cr_expect_eq(hm_pkt_parse(HM_LL_ROCE, f, len, &q), 0);
	cr_expect_eq(q.dqpn, p->dqpn);
	free(f);
}

Test(pkt, roce_icrc_reproduces_the_write_first_sample)
{
	static const uint8_t wire[4] = {0x0d, 0x83, 0xc4, 0x29};
	uint8_t pay[256];
	struct hm_pkt p = {0};

	for (int i = 0; i < 256; i++)
		pay[i] = (uint8_t)i;
	p.opcode = HM_OP_WRITE_FIRST;
	p.pkey = 0xffff;
	p.dqpn = 0x12;
	p.psn = 256;
	p.reth_va = 0x7f0000001000ull;
	p.reth_rkey = 0x1234;
	p.reth_dmalen = 1024;
	p.payload = pay;
	p.paylen = 256;
	p.traffic_class = 2;
	p.hop_limit = 64;
	p.udp_sport = 0xc000;
	set_ipv4_gid(p.sgid, 10, 0, 0, 1);
	set_ipv4_gid(p.dgid, 10, 0, 0, 2);
	roce_sample(&p, 0x29c4830d, wire);
}

Test(pkt, roce_icrc_reproduces_the_ack_sample)
{
	static const uint8_t wire[4] = {0x33, 0x80, 0xd6, 0xe8};
	struct hm_pkt p = {0};

	p.opcode = HM_OP_ACKNOWLEDGE;
	p.pkey = 0xffff;
	p.dqpn = 0x11;
	p.psn = 259;
	p.aeth_syndrome = 0x1f;
	p.aeth_msn = 1;
	p.traffic_class = 0xb8;
	p.hop_limit = 1;
	p.udp_sport = 0xc000;
	/* the ACK goes back: 10.0.0.2 -> 10.0.0.1 */
	set_ipv4_gid(p.sgid, 10, 0, 0, 2);
	set_ipv4_gid(p.dgid, 10, 0, 0, 1);
	roce_sample(&p, 0xe8d68033, wire);
}

/* The definition written out bit by bit, most-significant-bit first on bit-reversed bytes:
 * an independent formulation of IBA 7.8.2 as pkt.c documents it. */
static uint16_t vcrc_bitwise(const uint8_t *b, size_t n)
{
	uint16_t c = 0xffff, r = 0;

	for (size_t i = 0; i < n; i++) {
		uint8_t x = 0;

		for (int k = 0; k < 8; k++)
			x |= (uint8_t)(((b[i] >> k) & 1) << (7 - k));
		c ^= (uint16_t)(x << 8);
		for (int k = 0; k < 8; k++)
			c = (c & 0x8000) ? (uint16_t)((c << 1) ^ 0x100b) : (uint16_t)(c << 1);
	}
	for (int k = 0; k < 16; k++)
		r |= (uint16_t)(((c >> k) & 1) << (15 - k));
	return r ^ 0xffff;
}

Test(pkt, vcrc_is_crc16_0x100b_reflected_with_inverted_preset_and_result)
{
	uint8_t b[300];

	/* hm_pkt_vcrc skips the frame's own last two bytes */
	memcpy(b, "123456789", 9);
	cr_expect_eq(hm_pkt_vcrc(b, 9 + 2), 0x0a3d, "check value 0x%04x", hm_pkt_vcrc(b, 11));
	cr_expect_eq(vcrc_bitwise(b, 9), 0x0a3d);
	srand(7);
	for (int n = 0; n < 298; n += 13) {
		for (int i = 0; i < n; i++)
			b[i] = (uint8_t)rand();
		cr_expect_eq(hm_pkt_vcrc(b, (size_t)n + 2), vcrc_bitwise(b, (size_t)n), "n=%d", n);
	}
}

Test(pkt, any_flipped_bit_of_an_ib_frame_is_rejected)
{
	init_pattern();
	for (int v = V_IB; v <= V_IB_GRH; v++) {
		struct hm_pkt p, q;
		size_t len;
		uint8_t *f;

		fill(&p, HM_OP_WRITE_ONLY_IMM, v, 13);
		f = build(v, &p, &len);
		for (size_t bit = 0; bit < len * 8; bit++) {
			size_t byte = bit / 8;
			/* LRH PktLen (11 bits at bytes 4-5) is checked against the frame first */
			bool pktlen = (byte == 4 && (bit % 8) >= 5) || byte == 5;
			int want = pktlen ? -EPROTO : -EBADMSG, r;

			f[byte] ^= (uint8_t)(0x80 >> (bit % 8));
			r = hm_pkt_parse(HM_LL_IB, f, len, &q);
			cr_expect_eq(r, want, "%s: bit %zu of byte %zu flipped: %d, want %d",
				     vname[v], bit % 8, byte, r, want);
			cr_expect_eq(hm_pkt_check_crcs(HM_LL_IB, f, len), want);
			f[byte] ^= (uint8_t)(0x80 >> (bit % 8));
		}
		cr_expect_eq(hm_pkt_parse(HM_LL_IB, f, len, &q), 0);
		free(f);
	}
}

Test(pkt, ib_icrc_catches_a_change_behind_a_recomputed_vcrc)
{
	static const size_t at[] = {2, 9, 20, 30, 40, 60}; /* DLID, BTH, RETH, ImmDt, payload */
	struct hm_pkt p, q;
	size_t len;
	uint8_t *f;

	init_pattern();
	fill(&p, HM_OP_WRITE_ONLY_IMM, V_IB, 40);
	f = build(V_IB, &p, &len);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		f[at[i]] ^= 0x01;
		put_le(f + len - 2, hm_pkt_vcrc(f, len), 2); /* a switch that re-CRCs bad data */
		cr_expect_eq(hm_pkt_parse(HM_LL_IB, f, len, &q), -EBADMSG, "byte %zu", at[i]);
		f[at[i]] ^= 0x01;
		put_le(f + len - 2, hm_pkt_vcrc(f, len), 2);
	}
	cr_expect_eq(hm_pkt_parse(HM_LL_IB, f, len, &q), 0);
	free(f);
}

/* IBA 7.8.1: a switch may change VL and Resv8a (FECN, BECN); a router also the whole LRH, the
 * GRH TClass, FlowLabel and HopLmt. Changing those and recomputing only the VCRC, as a switch
 * or router does, keeps the ICRC valid. */
Test(pkt, ib_variant_fields_are_outside_the_icrc)
{
	struct hm_pkt p, q;
	size_t len;
	uint8_t *f;

	init_pattern();
	fill(&p, HM_OP_SEND_ONLY, V_IB, 8);
	f = build(V_IB, &p, &len);
	f[0] ^= 0x70;	  /* VL */
	f[8 + 4] ^= 0xc0; /* BTH FECN, BECN */
	put_le(f + len - 2, hm_pkt_vcrc(f, len), 2);
	cr_expect_eq(hm_pkt_parse(HM_LL_IB, f, len, &q), 0);
	cr_expect_eq(q.vl, 3 ^ 7);
	cr_expect(!q.fecn && q.becn);
	f[2] ^= 0x01; /* DLID is invariant in a local packet */
	put_le(f + len - 2, hm_pkt_vcrc(f, len), 2);
	cr_expect_eq(hm_pkt_parse(HM_LL_IB, f, len, &q), -EBADMSG);
	free(f);

	fill(&p, HM_OP_SEND_ONLY, V_IB_GRH, 8);
	f = build(V_IB_GRH, &p, &len);
	f[1] ^= 0xf0;		      /* SL */
	f[2] ^= 0xff;		      /* DLID */
	f[7] ^= 0x55;		      /* SLID */
	f[8] ^= 0x0f;		      /* TClass high nibble */
	f[9] ^= 0xff;		      /* TClass low nibble, FlowLabel */
	f[10] ^= 0xff, f[11] ^= 0xff; /* FlowLabel */
	f[15] = 1;		      /* HopLmt */
	f[48 + 4] ^= 0x80;	      /* FECN */
	put_le(f + len - 2, hm_pkt_vcrc(f, len), 2);
	cr_expect_eq(hm_pkt_parse(HM_LL_IB, f, len, &q), 0);
	cr_expect_eq(q.hop_limit, 1);
	f[8 + 24] ^= 0x01; /* DGID is invariant */
	put_le(f + len - 2, hm_pkt_vcrc(f, len), 2);
	cr_expect_eq(hm_pkt_parse(HM_LL_IB, f, len, &q), -EBADMSG);
	free(f);
}

Test(pkt, any_flipped_covered_bit_of_a_roce_frame_is_rejected)
{
	struct hm_pkt p, q;
	size_t len;
	uint8_t *f;

	init_pattern();
	fill(&p, HM_OP_WRITE_FIRST, V_ROCE, 13);
	f = build(V_ROCE, &p, &len);
	/* covered: the IPv4 header but TOS, TTL and checksum; UDP but its checksum; BTH but
	 * byte 4; the rest through the pad. */
	for (size_t byte = HM_ETH_BYTES; byte < len - HM_ICRC_BYTES; byte++) {
		size_t ip = byte - HM_ETH_BYTES;
		int want;

		if (ip == 1 || ip == 8 || ip == 10 || ip == 11 || ip == 26 || ip == 27 || ip == 32)
			continue; /* masked */
		/* Checked before the ICRC, as what makes the frame RoCEv2 and where it ends:
		 * version/IHL, protocol, UDP destination port, IPv4 and UDP lengths. */
		if (ip == 0 || ip == 9 || ip == 22 || ip == 23 || ip == 2 || ip == 3 || ip == 24 ||
		    ip == 25)
			want = -EPROTO;
		else
			want = -EBADMSG;
		for (int bit = 0; bit < 8; bit++) {
			int r;

			f[byte] ^= (uint8_t)(1 << bit);
			r = hm_pkt_parse(HM_LL_ROCE, f, len, &q);
			cr_expect_eq(r, want, "bit %d of byte %zu: %d, want %d", bit, byte, r,
				     want);
			f[byte] ^= (uint8_t)(1 << bit);
		}
	}
	cr_expect_eq(hm_pkt_parse(HM_LL_ROCE, f, len, &q), 0);
	free(f);
}

Test(pkt, roce_masked_fields_keep_the_icrc)
{
	struct hm_pkt p, q;
	size_t len;
	uint8_t *f;
	uint32_t icrc;

	init_pattern();
	fill(&p, HM_OP_SEND_ONLY, V_ROCE, 20);
	f = build(V_ROCE, &p, &len);
	icrc = hm_pkt_icrc(HM_LL_ROCE, f, len);

	f[HM_ETH_BYTES + 8] = 7; /* TTL: a router decrements it ... */
	cr_expect_eq(hm_pkt_icrc(HM_LL_ROCE, f, len), icrc, "TTL is masked (A17.4.3.1)");
	cr_expect_eq(hm_pkt_parse(HM_LL_ROCE, f, len, &q), -EBADMSG, "stale IPv4 checksum");
	fix_ipv4_csum(f); /* ... and fixes the header checksum */
	cr_expect_eq(hm_pkt_parse(HM_LL_ROCE, f, len, &q), 0);
	cr_expect_eq(q.hop_limit, 7);

	f[HM_ETH_BYTES + 1] |= 0x03; /* ECN: congestion experienced */
	fix_ipv4_csum(f);
	cr_expect_eq(hm_pkt_parse(HM_LL_ROCE, f, len, &q), 0);
	cr_expect_eq(q.traffic_class, 0x5a | 0x03);

	put_be16(f + 40, 0xbeef);    /* UDP checksum */
	f[42 + 4] = 0x40;	     /* BECN */
	f[0] ^= 0x01, f[11] ^= 0x80; /* MAC addresses: no FCS in the frame, not covered */
	cr_expect_eq(hm_pkt_icrc(HM_LL_ROCE, f, len), icrc);
	cr_expect_eq(hm_pkt_parse(HM_LL_ROCE, f, len, &q), 0);
	cr_expect(q.becn);
	free(f);
}

Test(pkt, truncated_or_stretched_frames_are_eproto)
{
	init_pattern();
	for (int v = 0; v < V_COUNT; v++) {
		struct hm_pkt p, q;
		size_t len;
		uint8_t *f;

		fill(&p, v == V_ROCE ? HM_OP_WRITE_ONLY : HM_OP_UD_SEND_ONLY_IMM, v, 33);
		f = build(v, &p, &len);
		for (size_t n = 0; n < len; n++) {
			uint8_t *t = malloc(n ? n : 1);

			memcpy(t, f, n);
			cr_expect_eq(hm_pkt_parse(ll_of(v), t, n, &q), -EPROTO, "%s cut to %zu",
				     vname[v], n);
			cr_expect_eq(hm_pkt_check_crcs(ll_of(v), t, n), -EPROTO);
			free(t);
		}
		f = realloc(f, len + 4);
		memset(f + len, 0, 4);
		for (size_t n = len + 1; n <= len + 4; n++)
			cr_expect_eq(hm_pkt_parse(ll_of(v), f, n, &q), -EPROTO, "%s with %zu bytes",
				     vname[v], n);
		free(f);
	}
}

/* A well-sealed frame (every CRC recomputed after the edit, as a broken sender would send
 * it) whose headers are wrong: f[at] = (f[at] & ~clear) | set, for up to two bytes. */
struct bad_case {
	const char *what; /* the defect */
	enum variant v;	  /* link layer */
	uint8_t op;	  /* opcode built */
	uint32_t paylen;  /* payload built */
	struct {
		uint16_t at;   /* frame offset */
		uint8_t clear; /* bits cleared */
		uint8_t set;   /* then set */
	} e[2];		       /* the edit */
	int want;	       /* parse result */
};

/* clang-format off */
static const struct bad_case bad_cases[] = {
	/* native IB: LRH at 0, GRH at 8, BTH at 8 (no GRH) */
	{ "reserved opcode 0x15", V_IB, HM_OP_SEND_ONLY, 8, { { 8, 0xff, 0x15 } }, -EPROTO },
	{ "RD opcode", V_IB, HM_OP_SEND_ONLY, 8, { { 8, 0xff, 0x44 } }, -EPROTO },
	{ "TVer 1", V_IB, HM_OP_SEND_ONLY, 8, { { 9, 0, 0x01 } }, -EPROTO },
	{ "PadCnt 3, no payload", V_IB, HM_OP_SEND_ONLY, 0, { { 9, 0, 0x30 } }, -EPROTO },
	{ "PadCnt 3 of 4 bytes", V_IB, HM_OP_SEND_ONLY, 4, { { 9, 0, 0x30 } }, 0 },
	{ "payload after an ACK's AETH", V_IB, HM_OP_SEND_ONLY, 8, { { 8, 0xff, 0x11 } }, -EPROTO },
	{ "LNH raw", V_IB, HM_OP_SEND_ONLY, 4, { { 1, 0x03, 0 } }, -EPROTO },
	{ "LNH raw IPv6", V_IB, HM_OP_SEND_ONLY, 4, { { 1, 0x03, 0x01 } }, -EPROTO },
	{ "LVer 1", V_IB, HM_OP_SEND_ONLY, 4, { { 0, 0, 0x01 } }, -EPROTO },
	{ "GRH IPVer 4", V_IB_GRH, HM_OP_SEND_ONLY, 4, { { 8, 0xf0, 0x40 } }, -EPROTO },
	{ "GRH NxtHdr UDP", V_IB_GRH, HM_OP_SEND_ONLY, 4, { { 14, 0xff, 0x11 } }, -EPROTO },
	{ "GRH PayLen 4 short", V_IB_GRH, HM_OP_SEND_ONLY, 4, { { 13, 0x04, 0 } }, -EPROTO },
	{ "opcode 0x15 on an atomic", V_IB, HM_OP_COMPARE_SWAP, 0, { { 8, 0xff, 0x15 } }, -EPROTO },
	/* too short for the headers the opcode carries (a SEND Only has none of its own) */
	{ "no room for a RETH", V_IB, HM_OP_SEND_ONLY, 0, { { 8, 0xff, 0x0a } }, -EPROTO },
	{ "RETH cut short", V_IB, HM_OP_SEND_ONLY, 12, { { 8, 0xff, 0x0a } }, -EPROTO },
	{ "no room for an AtomicETH", V_IB, HM_OP_SEND_ONLY, 0, { { 8, 0xff, 0x13 } }, -EPROTO },
	{ "no room for a DETH", V_IB, HM_OP_SEND_ONLY, 0, { { 8, 0xff, 0x64 } }, -EPROTO },
	{ "DETH from the payload bytes", V_IB, HM_OP_SEND_ONLY, 8, { { 8, 0xff, 0x64 } }, 0 },
	/* RoCEv2: Ethernet at 0, IPv4 at 14, UDP at 34, BTH at 42 */
	{ "reserved opcode 0x18", V_ROCE, HM_OP_SEND_ONLY, 8, { { 42, 0xff, 0x18 } }, -EPROTO },
	{ "ethertype IPv6", V_ROCE, HM_OP_SEND_ONLY, 8, { { 12, 0xff, 0x86 }, { 13, 0xff, 0xdd } },
	  -EPROTO },
	{ "IP version 6", V_ROCE, HM_OP_SEND_ONLY, 8, { { 14, 0xff, 0x65 } }, -EPROTO },
	{ "IPv4 options (IHL 6)", V_ROCE, HM_OP_SEND_ONLY, 8, { { 14, 0xff, 0x46 } }, -EPROTO },
	{ "TCP", V_ROCE, HM_OP_SEND_ONLY, 8, { { 23, 0xff, 6 } }, -EPROTO },
	{ "UDP port 4792", V_ROCE, HM_OP_SEND_ONLY, 8, { { 37, 0xff, 0xb8 } }, -EPROTO },
	{ "more fragments", V_ROCE, HM_OP_SEND_ONLY, 8, { { 20, 0, 0x20 } }, -EPROTO },
	{ "IPv4 length 4 short", V_ROCE, HM_OP_SEND_ONLY, 8, { { 17, 0x04, 0 } }, -EPROTO },
	{ "payload after an ACK's AETH", V_ROCE, HM_OP_SEND_ONLY, 8, { { 42, 0xff, 0x11 } },
	  -EPROTO },
	{ "PadCnt 3, no payload", V_ROCE, HM_OP_SEND_ONLY, 0, { { 43, 0, 0x30 } }, -EPROTO },
	{ "no room for an AtomicAckETH", V_ROCE, HM_OP_ACKNOWLEDGE, 0, { { 42, 0xff, 0x12 } },
	  -EPROTO },
};
/* clang-format on */

Test(pkt, malformed_but_sealed_headers_are_eproto)
{
	init_pattern();
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		enum hm_link_layer ll = ll_of(c->v);
		uint8_t buf[HM_PKT_MAX_BYTES], *f;
		struct hm_pkt p, q;
		size_t len;
		int r;

		fill(&p, c->op, c->v, c->paylen);
		len = hm_pkt_build(ll, &p, buf, sizeof(buf));
		cr_assert_gt(len, 0);
		for (int k = 0; k < 2; k++)
			buf[c->e[k].at] =
			    (uint8_t)((buf[c->e[k].at] & ~c->e[k].clear) | c->e[k].set);
		reseal(ll, buf, len);
		f = malloc(len);
		memcpy(f, buf, len);
		r = hm_pkt_parse(ll, f, len, &q);
		cr_expect_eq(r, c->want, "%s: %s: %d, want %d", vname[c->v], c->what, r, c->want);
		free(f);
	}
}

/* RoCE payload and pad not a multiple of 4 bytes, all lengths and CRCs consistent. */
Test(pkt, roce_payload_not_in_whole_words_is_eproto)
{
	uint8_t buf[HM_PKT_MAX_BYTES], *f;
	struct hm_pkt p, q;
	size_t len;

	init_pattern();
	fill(&p, HM_OP_SEND_ONLY, V_ROCE, 4);
	len = hm_pkt_build(HM_LL_ROCE, &p, buf, sizeof(buf)) - 1;
	put_be16(buf + 16, (uint16_t)(len - 14));
	put_be16(buf + 38, (uint16_t)(len - 34));
	reseal(HM_LL_ROCE, buf, len);
	f = malloc(len);
	memcpy(f, buf, len);
	cr_expect_eq(hm_pkt_check_crcs(HM_LL_ROCE, f, len), 0, "sealed");
	cr_expect_eq(hm_pkt_parse(HM_LL_ROCE, f, len, &q), -EPROTO);
	free(f);
}

Test(pkt, build_refuses_a_small_buffer_and_an_unknown_opcode)
{
	uint8_t buf[HM_PKT_MAX_BYTES];
	struct hm_pkt p;
	size_t len;

	init_pattern();
	fill(&p, HM_OP_SEND_ONLY, V_IB, 100);
	len = hm_pkt_build(HM_LL_IB, &p, buf, sizeof(buf));
	cr_assert_eq(len, 8 + 12 + 100 + 4 + 2);
	cr_expect_eq(hm_pkt_build(HM_LL_IB, &p, buf, len - 1), 0);
	cr_expect_eq(hm_pkt_build(HM_LL_IB, &p, buf, len), len);
	p.opcode = 0x15;
	cr_expect_eq(hm_pkt_build(HM_LL_IB, &p, buf, sizeof(buf)), 0);
	p.opcode = 0x40;
	cr_expect_eq(hm_pkt_build(HM_LL_ROCE, &p, buf, sizeof(buf)), 0);
}

Test(pkt, psn_compare_wraps_at_2_pow_24)
{
	cr_expect_eq(hm_psn_cmp(5, 5), 0);
	cr_expect_lt(hm_psn_cmp(4, 5), 0);
	cr_expect_gt(hm_psn_cmp(5, 4), 0);
	cr_expect_gt(hm_psn_cmp(0, 0xffffff), 0, "0 follows 2^24 - 1");
	cr_expect_lt(hm_psn_cmp(0xffffff, 0), 0);
	cr_expect_gt(hm_psn_cmp(3, 0xfffffd), 0);
	cr_expect_gt(hm_psn_cmp(0x7fffff, 0), 0, "half the space ahead is still after");
	cr_expect_lt(hm_psn_cmp(0x800001, 0), 0, "more than half ahead is before");
	cr_expect_eq(hm_psn_cmp(0x1000005, 5), 0, "bits above 24 are ignored");
}

Test(pkt, wire_overhead_is_preamble_fcs_and_gap_on_roce_only)
{
	cr_expect_eq(hm_pkt_wire_overhead(HM_LL_ROCE), 24);
	cr_expect_eq(hm_pkt_wire_overhead(HM_LL_IB), 0);
}

/* Random damage to valid frames, sealed or not: parse returns one of its three answers and,
 * run under ASan, never reads outside the frame. */
Test(pkt, random_damage_never_reads_outside_the_frame)
{
	unsigned seed = 12345;

	init_pattern();
	for (int iter = 0; iter < 3000; iter++) {
		enum variant v = (enum variant)(rand_r(&seed) % V_COUNT);
		uint8_t op = all_ops[rand_r(&seed) % NOPS];
		uint32_t h = hm_opcode_info(op)->hdrs;
		uint8_t buf[HM_PKT_MAX_BYTES], *f;
		struct hm_pkt p, q;
		size_t len;
		int r;

		fill(&p, op, v, (h & HM_HDR_PAYLOAD) ? (uint32_t)(rand_r(&seed) % 70) : 0);
		len = hm_pkt_build(ll_of(v), &p, buf, sizeof(buf));
		cr_assert_gt(len, 0);
		for (int k = rand_r(&seed) % 4; k >= 0; k--)
			buf[rand_r(&seed) % len] = (uint8_t)rand_r(&seed);
		if (rand_r(&seed) % 4 == 0) /* claim another opcode's headers */
			buf[v == V_ROCE	    ? 42
			    : v == V_IB_GRH ? 48
					    : 8] = all_ops[rand_r(&seed) % NOPS];
		if (rand_r(&seed) % 3 == 0)
			len = (size_t)rand_r(&seed) % (len + 1);
		if (rand_r(&seed) % 2)
			reseal(ll_of(v), buf, len);
		f = malloc(len ? len : 1);
		memcpy(f, buf, len);
		r = hm_pkt_parse(ll_of(v), f, len, &q);
		cr_assert(r == 0 || r == -EBADMSG || r == -EPROTO, "parse returned %d", r);
		if (!r)
			cr_assert(q.payload >= f && q.payload + q.paylen + q.padcnt <= f + len);
		free(f);
	}
}

/* CRC only when seen (docs/blocks/pkt.md#crc-only-when-seen): an unsealed frame is the built
 * frame with its CRC fields zero; sealing it gives exactly hm_pkt_build's bytes; it parses
 * when its CRCs are trusted and fails the CRC check when they are not. */
Test(pkt, an_unsealed_frame_seals_to_the_built_frame_and_parses_only_trusted)
{
	static const enum variant vs[] = { V_IB, V_IB_GRH, V_ROCE };

	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		enum hm_link_layer ll = ll_of(vs[i]);
		size_t trailer = ll == HM_LL_IB ? HM_ICRC_BYTES + HM_VCRC_BYTES : HM_ICRC_BYTES;
		uint8_t built[HM_PKT_MAX_BYTES], lazy[HM_PKT_MAX_BYTES];
		struct hm_pkt p, q;
		size_t len;

		fill(&p, HM_OP_SEND_ONLY, vs[i], 100);
		len = hm_pkt_build(ll, &p, built, sizeof(built));
		cr_assert_gt(len, trailer);
		memset(lazy, 0xee, sizeof(lazy));
		cr_assert_eq(hm_pkt_build_unsealed(ll, &p, lazy, sizeof(lazy)), len);
		cr_expect_eq(memcmp(lazy, built, len - trailer), 0, "%s: headers and payload",
			     vname[vs[i]]);
		for (size_t k = len - trailer; k < len; k++)
			cr_expect_eq(lazy[k], 0, "%s: CRC byte %zu filled before sealing",
				     vname[vs[i]], k);
		cr_expect_eq(hm_pkt_parse(ll, lazy, len, &q), -EBADMSG, "%s", vname[vs[i]]);
		cr_expect_eq(hm_pkt_parse_crc(ll, lazy, len, false, &q), 0, "%s", vname[vs[i]]);
		cr_expect_eq(q.paylen, 100u);
		hm_pkt_seal(ll, lazy, len);
		cr_expect_eq(memcmp(lazy, built, len), 0, "%s: sealed differs from built",
			     vname[vs[i]]);
		cr_expect_eq(hm_pkt_parse(ll, lazy, len, &q), 0, "%s", vname[vs[i]]);
	}
}
