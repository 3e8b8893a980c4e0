/* Hostile or buggy host input on the bus (the hostile-input issue): MMIO at any offset, width
 * and length is refused and traced where a real bus or device would refuse it, never asserted,
 * and a bystander QP pair keeps working. Malformed WQEs and doorbells are in suite hcasimdv. */
#include "testbench/tb.h"

#include <criterion/criterion.h>

#include "sim/pcie_host.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static unsigned refused; /* warn.mmio_wr and warn.mmio_rd events seen */

static void count_warn(void *arg, uint64_t t, int dev, const char *ev, const char *fields)
{
	(void)arg;
	(void)t;
	(void)dev;
	(void)fields;
	refused += !strcmp(ev, "warn.mmio_wr") || !strcmp(ev, "warn.mmio_rd");
}

/* Offsets near 2^32 used to wrap the BAR0 bounds check (off + len in 32 bits) and reach the
 * device's register decoder; block writes of a length that is not whole 8-byte words aborted
 * the simulator. Each is now refused with a warn.mmio trace, and nothing else changes. */
Test(hostile, mmio_at_any_offset_width_and_length_is_refused_not_asserted)
{
	static const uint32_t offs[] = { 0xfffffff8u, 0xfffffffcu, 0xffffffffu, 0x80000000u };
	struct tb_pair p;
	struct sim_pcie_fn *fns[4], *fn;
	uint8_t block[16] = { 0 };
	unsigned want = 0;

	tb_pair_open(&p, IBV_QPT_RC, 4096, 3);
	cr_assert_geq(sim_pcie_enumerate(fns, 4), 1);
	fn = fns[0];
	cr_assert_eq(hcasim_trace_observe("warn", count_warn, NULL), 0);
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		sim_pcie_mmio_write64(fn, offs[i], 0x1122334455667788ull);
		sim_pcie_mmio_write32(fn, offs[i], 0xdeadbeef);
		cr_assert_eq(sim_pcie_mmio_read32(fn, offs[i]), 0xffffffffu,
			     "a read at 0x%x is all ones (unsupported request)", offs[i]);
		sim_pcie_mmio_write_block(fn, offs[i] & ~63u, block, 16);
		want += 4;
	}
	/* Block lengths the root complex would not form. */
	sim_pcie_mmio_write_block(fn, 0, block, 12);
	sim_pcie_mmio_write_block(fn, 0, block, 0);
	sim_pcie_mmio_write_block(fn, 0, NULL, 16);
	sim_pcie_mmio_write_block(fn, 0, block, 8192);
	want += 4;
	hcasim_run_for_ps(10000000ull);
	cr_assert_eq(refused, want, "%u accesses refused with warn.mmio, %u made", refused, want);
	cr_assert_null(hcasim_halted());
	cr_assert_eq(hcasim_trace_observe(NULL, NULL, NULL), 0);
	tb_pair_send(&p, 1000); /* a bystander SEND still completes, byte-exact */
	tb_pair_close(&p);
}
