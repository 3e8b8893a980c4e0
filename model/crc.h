/* crc: one engine for the packets' bit-reflected CRCs of width 8 to 32 (the ICRC's CRC-32 and
 * the VCRC's CRC-16). The engine is set up once from the polynomial: a slicing-by-8 table and
 * the fold constants of a carry-less-multiply (PCLMULQDQ) path. Long buffers are folded 64
 * bytes at a time when the CPU has PCLMULQDQ; the last 16 folded bytes and the tail go through
 * the table. Both paths give the same register for every input (testbench/test_crc.c).
 *
 * The register is the raw reflected remainder: the caller presets it (all ones for both packet
 * CRCs) and complements the result. hm_crc_update(e, r, a) then hm_crc_update(e, r', b) equals
 * one update over a and b back to back. */
#ifndef HM_CRC_H
#define HM_CRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hm_crc {
	unsigned width;		/* bits, 8..32 */
	uint32_t poly;		/* reflected polynomial without x^width: 0xedb88320, 0xd008 */
	uint32_t table[8][256]; /* table[k][b]: byte b followed by k zero bytes */
	/* Fold constants, each a remainder mod P stored bit-reflected in 64 bits (docs/blocks/
	 * pkt.md#crc-engine): fold512 moves a 16-byte lane 64 bytes on, fold128 16 bytes on;
	 * [0] multiplies the lane's first 8 bytes, [1] its last 8. */
	uint64_t fold512[2];
	uint64_t fold128[2];
};

/* Sets up e for the reflected polynomial poly (bit i is the coefficient of x^(width-1-i)). */
void hm_crc_init(struct hm_crc *e, unsigned width, uint32_t poly);

/* The register after len bytes of buf, from register reg: the fastest path the CPU allows. */
uint32_t hm_crc_update(const struct hm_crc *e, uint32_t reg, const void *buf, size_t len);

/* The same through the table only, whatever the CPU. */
uint32_t hm_crc_update_table(const struct hm_crc *e, uint32_t reg, const void *buf, size_t len);

/* Whether hm_crc_update folds with PCLMULQDQ: the CPU has it and it has not been switched off.
 * hm_crc_use_clmul(false) forces the table path everywhere (the tests run both paths this way);
 * hm_crc_use_clmul(true) turns folding back on if the CPU has it. Returns whether folding is on
 * afterwards. */
bool hm_crc_clmul_active(void);
bool hm_crc_use_clmul(bool on);

#endif
