/* crc: bit-reflected CRCs of width 8..32 by table (slicing by 8) or by carry-less-multiply
 * folding (PCLMULQDQ), one engine parametrised by the polynomial. The derivation of the fold
 * constants is in docs/blocks/pkt.md#crc-engine. */
#include "model/crc.h"

#include <endian.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define HM_CRC_X86 1
#include <immintrin.h>
#else
#define HM_CRC_X86 0
#endif

/* The fold path needs its four lanes; shorter buffers go through the table. */
enum { FOLD_MIN_BYTES = 64 };

/* x^n mod P, P = x^width + (the normal-order form of the reflected poly), as a polynomial of
 * degree < width in normal order (bit d is the coefficient of x^d). */
static uint32_t xpow_mod(unsigned width, uint32_t poly, unsigned n)
{
	uint32_t normal = 0, r = 1, top = 1u << (width - 1);
	uint32_t mask = width == 32 ? 0xffffffffu : (1u << width) - 1;

	for (unsigned i = 0; i < width; i++) /* reflect: bit i is x^(width-1-i) */
		if (poly >> i & 1)
			normal |= 1u << (width - 1 - i);
	for (unsigned i = 0; i < n; i++) {
		bool carry = r & top;

		r = (r << 1) & mask;
		if (carry)
			r ^= normal;
	}
	return r;
}

/* A remainder of degree < 32 as a bit-reflected 64-bit clmul operand: x^d at bit 63 - d. */
static uint64_t reflect64(uint32_t normal)
{
	uint64_t v = 0;

	for (unsigned d = 0; d < 32; d++)
		if (normal >> d & 1)
			v |= 1ull << (63 - d);
	return v;
}

void hm_crc_init(struct hm_crc *e, unsigned width, uint32_t poly)
{
	memset(e, 0, sizeof(*e));
	e->width = width;
	e->poly = poly;
	for (unsigned b = 0; b < 256; b++) {
		uint32_t v = b;

		for (int k = 0; k < 8; k++)
			v = (v & 1) ? (v >> 1) ^ poly : v >> 1;
		e->table[0][b] = v;
	}
	for (int k = 1; k < 8; k++)
		for (unsigned b = 0; b < 256; b++)
			e->table[k][b] = (e->table[k - 1][b] >> 8) ^
					 e->table[0][e->table[k - 1][b] & 0xff];
	/* A 128-bit lane, first byte lowest, is the polynomial A = H x^64 + L (H its first 8
	 * bytes). clmul of two reflected 64-bit operands yields x a b as a lane, so moving A on
	 * by F bits takes H times x^(F+63) mod P and L times x^(F-1) mod P. */
	e->fold512[0] = reflect64(xpow_mod(width, poly, 512 + 63));
	e->fold512[1] = reflect64(xpow_mod(width, poly, 512 - 1));
	e->fold128[0] = reflect64(xpow_mod(width, poly, 128 + 63));
	e->fold128[1] = reflect64(xpow_mod(width, poly, 128 - 1));
}

uint32_t hm_crc_update_table(const struct hm_crc *e, uint32_t reg, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t x;

		memcpy(&x, p, sizeof(x));
		x = le64toh(x) ^ reg; /* the register meets the next bytes, first one lowest */
		reg = e->table[7][x & 0xff] ^ e->table[6][(x >> 8) & 0xff] ^
		      e->table[5][(x >> 16) & 0xff] ^ e->table[4][(x >> 24) & 0xff] ^
		      e->table[3][(x >> 32) & 0xff] ^ e->table[2][(x >> 40) & 0xff] ^
		      e->table[1][(x >> 48) & 0xff] ^ e->table[0][x >> 56];
	}
	for (; len; p++, len--)
		reg = e->table[0][(reg ^ *p) & 0xff] ^ (reg >> 8);
	return reg;
}

#if HM_CRC_X86

#define CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))

CLMUL_TARGET static inline __m128i fold(__m128i a, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11));
}

/* len >= 64. Four lanes take 64 bytes per round; they are folded into one, then whole lanes
 * are folded in, then the table finishes the lane's 16 bytes and the tail. */
CLMUL_TARGET static uint32_t update_clmul(const struct hm_crc *e, uint32_t reg, const uint8_t *p,
					  size_t len)
{
	const __m128i k512 = _mm_set_epi64x((long long)e->fold512[1], (long long)e->fold512[0]);
	const __m128i k128 = _mm_set_epi64x((long long)e->fold128[1], (long long)e->fold128[0]);
	__m128i a0, a1, a2, a3;
	uint8_t lane[16];

	a0 = _mm_loadu_si128((const __m128i *)p);
	a1 = _mm_loadu_si128((const __m128i *)(p + 16));
	a2 = _mm_loadu_si128((const __m128i *)(p + 32));
	a3 = _mm_loadu_si128((const __m128i *)(p + 48));
	a0 = _mm_xor_si128(a0, _mm_cvtsi32_si128((int)reg)); /* the preset meets the first bytes */
	p += 64;
	len -= 64;
	for (; len >= 64; p += 64, len -= 64) {
		a0 = _mm_xor_si128(fold(a0, k512), _mm_loadu_si128((const __m128i *)p));
		a1 = _mm_xor_si128(fold(a1, k512), _mm_loadu_si128((const __m128i *)(p + 16)));
		a2 = _mm_xor_si128(fold(a2, k512), _mm_loadu_si128((const __m128i *)(p + 32)));
		a3 = _mm_xor_si128(fold(a3, k512), _mm_loadu_si128((const __m128i *)(p + 48)));
	}
	a0 = _mm_xor_si128(fold(a0, k128), a1);
	a0 = _mm_xor_si128(fold(a0, k128), a2);
	a0 = _mm_xor_si128(fold(a0, k128), a3);
	for (; len >= 16; p += 16, len -= 16)
		a0 = _mm_xor_si128(fold(a0, k128), _mm_loadu_si128((const __m128i *)p));
	_mm_storeu_si128((__m128i *)lane, a0);
	reg = hm_crc_update_table(e, 0, lane, sizeof(lane));
	return hm_crc_update_table(e, reg, p, len);
}

static int clmul_on = -1; /* -1: not decided yet; the simulator is single-threaded */

static bool cpu_has_clmul(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}

bool hm_crc_clmul_active(void)
{
	if (clmul_on < 0)
		clmul_on = cpu_has_clmul();
	return clmul_on;
}

bool hm_crc_use_clmul(bool on)
{
	clmul_on = on && cpu_has_clmul();
	return clmul_on;
}

uint32_t hm_crc_update(const struct hm_crc *e, uint32_t reg, const void *buf, size_t len)
{
	if (len >= FOLD_MIN_BYTES && hm_crc_clmul_active())
		return update_clmul(e, reg, buf, len);
	return hm_crc_update_table(e, reg, buf, len);
}

#else /* no PCLMULQDQ on this architecture: the table everywhere */

bool hm_crc_clmul_active(void)
{
	return false;
}

bool hm_crc_use_clmul(bool on)
{
	(void)on;
	return false;
}

uint32_t hm_crc_update(const struct hm_crc *e, uint32_t reg, const void *buf, size_t len)
{
	return hm_crc_update_table(e, reg, buf, len);
}

#endif
