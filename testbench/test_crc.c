/* crc: the CRC engine of model/crc.c on both of its paths (carry-less-multiply folding and the
 * table), against zlib's crc32() for the ICRC's CRC-32, against a bit-at-a-time reference for
 * the VCRC's CRC-16 and other widths, over seeded random lengths 0..9000 and start alignments;
 * and the packet CRCs of model/pkt.c giving the same frames on both paths. */
#include "model/crc.h"
#include "model/pkt.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { MAXLEN = 9000, ALIGN = 16 };

static uint8_t buf[MAXLEN + ALIGN];

/* splitmix64: the tests' own seeded sequence */
static uint64_t rnd_state;

static uint64_t rnd(void)
{
	uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill(uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd();
}

/* The reflected CRC one bit at a time: the definition the table and the folds must meet. */
static uint32_t crc_bitwise(uint32_t poly, uint32_t reg, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		reg ^= b[i];
		for (int k = 0; k < 8; k++)
			reg = (reg & 1) ? (reg >> 1) ^ poly : reg >> 1;
	}
	return reg;
}

/* Both paths, in the order table then folding; folding is skipped without PCLMULQDQ. */
static int npaths(void)
{
	return hm_crc_use_clmul(true) ? 2 : 1;
}

static const char *set_path(int path)
{
	hm_crc_use_clmul(path == 1);
	return path ? "clmul" : "table";
}

Test(crc, the_cpu_path_is_reported)
{
	/* Not a requirement on the machine: a record, in the test log, of what ran. */
	cr_log_info("PCLMULQDQ folding %s", hm_crc_use_clmul(true) ? "available" : "absent");
	cr_expect_not(hm_crc_use_clmul(false), "the switch forces the table path");
	cr_expect_not(hm_crc_clmul_active());
}

Test(crc, crc32_equals_zlib_on_random_lengths_and_alignments)
{
	struct hm_crc e;

	hm_crc_init(&e, 32, 0xedb88320);
	for (int path = 0; path < npaths(); path++) {
		const char *pn = set_path(path);

		rnd_state = 0x1c3c;
		for (int it = 0; it < 1500; it++) {
			size_t len = rnd() % (MAXLEN + 1), off = rnd() % ALIGN;
			uint32_t got, want;

			fill(buf + off, len);
			want = (uint32_t)crc32(0, buf + off, (uInt)len);
			got = ~hm_crc_update(&e, 0xffffffff, buf + off, len);
			cr_assert_eq(got, want, "%s len %zu off %zu: 0x%08x, zlib 0x%08x", pn, len,
				     off, got, want);
		}
	}
}

Test(crc, crc32_split_updates_equal_one_pass)
{
	struct hm_crc e;

	hm_crc_init(&e, 32, 0xedb88320);
	for (int path = 0; path < npaths(); path++) {
		const char *pn = set_path(path);

		rnd_state = 0x5117;
		for (int it = 0; it < 600; it++) {
			size_t len = rnd() % (MAXLEN + 1), off = rnd() % ALIGN;
			size_t cut = len ? rnd() % (len + 1) : 0;
			uint32_t r, want;

			fill(buf + off, len);
			want = (uint32_t)crc32(0, buf + off, (uInt)len);
			r = hm_crc_update(&e, 0xffffffff, buf + off, cut);
			r = ~hm_crc_update(&e, r, buf + off + cut, len - cut);
			cr_assert_eq(r, want, "%s len %zu cut %zu off %zu", pn, len, cut, off);
		}
	}
}

Test(crc, every_short_length_and_alignment_around_the_fold_threshold)
{
	struct hm_crc e32, e16;

	hm_crc_init(&e32, 32, 0xedb88320);
	hm_crc_init(&e16, 16, 0xd008);
	rnd_state = 0x51;
	fill(buf, sizeof(buf));
	for (int path = 0; path < npaths(); path++) {
		const char *pn = set_path(path);

		for (size_t off = 0; off < ALIGN; off++) {
			for (size_t len = 0; len <= 300; len++) {
				uint32_t z = (uint32_t)crc32(0, buf + off, (uInt)len);
				uint32_t v = crc_bitwise(0xd008, 0xffff, buf + off, len);

				cr_assert_eq(~hm_crc_update(&e32, 0xffffffff, buf + off, len), z,
					     "%s CRC-32 len %zu off %zu", pn, len, off);
				cr_assert_eq(hm_crc_update(&e16, 0xffff, buf + off, len), v,
					     "%s CRC-16 len %zu off %zu", pn, len, off);
			}
		}
	}
}

Test(crc, vcrc_folding_equals_the_table_and_the_bitwise_definition)
{
	struct hm_crc e;

	if (npaths() < 2)
		cr_skip_test("no PCLMULQDQ on this CPU: one path only");
	hm_crc_init(&e, 16, 0xd008);
	rnd_state = 0x100b;
	for (int it = 0; it < 800; it++) {
		size_t len = rnd() % (MAXLEN + 1), off = rnd() % ALIGN;
		uint32_t table, fast, bits;

		fill(buf + off, len);
		hm_crc_use_clmul(false);
		table = hm_crc_update(&e, 0xffff, buf + off, len);
		hm_crc_use_clmul(true);
		fast = hm_crc_update(&e, 0xffff, buf + off, len);
		cr_assert_eq(fast, table, "len %zu off %zu: folded 0x%04x, table 0x%04x", len, off,
			     fast, table);
		if (it % 8 == 0) {
			bits = crc_bitwise(0xd008, 0xffff, buf + off, len);
			cr_assert_eq(table, bits, "len %zu off %zu: table 0x%04x, bitwise 0x%04x",
				     len, off, table, bits);
		}
	}
	/* the VCRC's check value over "123456789" (IBA 7.8.2 as pkt.c documents it) */
	cr_expect_eq(hm_crc_update(&e, 0xffff, "123456789", 9) ^ 0xffff, 0x0a3d);
}

Test(crc, other_widths_and_polynomials_on_both_paths)
{
	/* reflected: CRC-32C, CRC-24 (0x864cfb), CRC-16/ARC (0x8005), CRC-8 (0x07), and two
	 * arbitrary odd polynomials */
	static const struct {
		unsigned width;
		uint32_t poly;
	} c[] = { { 32, 0x82f63b78 }, { 24, 0xdf3261 }, { 16, 0xa001 },
		  { 8, 0xe0 },	      { 29, 0x12345679 }, { 13, 0x1a2b } };

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct hm_crc e;
		uint32_t preset = (uint32_t)((1ull << c[i].width) - 1);

		hm_crc_init(&e, c[i].width, c[i].poly);
		for (int path = 0; path < npaths(); path++) {
			const char *pn = set_path(path);

			rnd_state = 0xc0de + i;
			for (int it = 0; it < 60; it++) {
				size_t len = rnd() % (MAXLEN + 1), off = rnd() % ALIGN;
				uint32_t got, want;

				fill(buf + off, len);
				want = crc_bitwise(c[i].poly, preset, buf + off, len);
				got = hm_crc_update(&e, preset, buf + off, len);
				cr_assert_eq(got, want, "%s width %u poly 0x%x len %zu off %zu", pn,
					     c[i].width, c[i].poly, len, off);
			}
		}
	}
}

/* The packet CRCs: frames of every payload length up to an MTU built on one path check on the
 * other, byte for byte the same. */
Test(crc, packet_crcs_are_the_same_on_both_paths)
{
	static uint8_t pay[4096], f0[HM_PKT_MAX_BYTES], f1[HM_PKT_MAX_BYTES];
	struct hm_pkt p;

	if (npaths() < 2)
		cr_skip_test("no PCLMULQDQ on this CPU: one path only");
	rnd_state = 0x1ba;
	fill(pay, sizeof(pay));
	for (int ll = HM_LL_IB; ll <= HM_LL_ROCE; ll++) {
		for (uint32_t n = 0; n <= sizeof(pay); n += (n < 300 ? 1 : 61)) {
			size_t l0, l1;

			memset(&p, 0, sizeof(p));
			p.opcode = 0x0a; /* RC RDMA WRITE Only */
			p.dqpn = 0x12345;
			p.psn = n;
			p.has_grh = n & 1;
			p.reth_dmalen = n;
			p.payload = pay;
			p.paylen = n;
			hm_crc_use_clmul(false);
			l0 = hm_pkt_build(ll, &p, f0, sizeof(f0));
			hm_crc_use_clmul(true);
			l1 = hm_pkt_build(ll, &p, f1, sizeof(f1));
			cr_assert(l0 && l0 == l1, "ll %d n %u", ll, n);
			cr_assert_eq(memcmp(f0, f1, l0), 0, "ll %d n %u: frames differ", ll, n);
			cr_assert_eq(hm_pkt_check_crcs(ll, f0, l0), 0, "ll %d n %u", ll, n);
			hm_crc_use_clmul(false);
			cr_assert_eq(hm_pkt_check_crcs(ll, f1, l1), 0, "ll %d n %u", ll, n);
		}
	}
}
