/* Hostile or buggy host input on the bus (the hostile-input issue): MMIO at any offset, width
 * and length is refused and traced where a real bus or device would refuse it, never asserted,
 * and a bystander QP pair keeps working; a driver whose event queue a rogue command overwrote
 * gives up on its command at the timeout. Malformed WQEs and doorbells are in suite hcasimdv. */
#include "testbench/tb.h"

#include <criterion/criterion.h>

#include "model/hw/hca_hw.h"
#include "sim/hcasim_bus.h"
#include "sim/pcie_host.h"

#include <errno.h>
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

/* hcasim2's EQ 0 as the trace shows it: the device address of its ring (an entry's producer
 * index from eq.eqe, then the 32-byte DMA write that lands it; a command entry's written-back
 * half, also 32 bytes, is at page offset 32), and the producer index of the entry for the
 * command of token `token`. */
static struct {
	uint64_t base;
	uint32_t token, pi, posted;
	bool seen, pending;
} eq0;

static void watch_eq0(void *arg, uint64_t t, int dev, const char *ev, const char *fields)
{
	uint64_t v = 0, len = 0, type = 0, data0 = 0;

	(void)arg;
	(void)t;
	if (dev != 2)
		return;
	if (!strcmp(ev, "eq.eqe") && hcasim_trace_field(fields, "eq", &v) && v == 0 &&
	    hcasim_trace_field(fields, "pi", &v)) {
		eq0.posted = (uint32_t)v;
		eq0.pending = true;
	}
	if (!strcmp(ev, "pcie.dma_wr_cpl") && eq0.pending && !eq0.base &&
	    hcasim_trace_field(fields, "len", &len) && len == HCA_EQE_BYTES &&
	    hcasim_trace_field(fields, "addr", &v) && (v & 4095) != 32)
		eq0.base = v - (uint64_t)(eq0.posted % 256) * HCA_EQE_BYTES;
	if (!strcmp(ev, "eq.eqe") && hcasim_trace_field(fields, "type", &type) &&
	    type == HCA_EQE_CMD && hcasim_trace_field(fields, "data0", &data0) &&
	    data0 == eq0.token && hcasim_trace_field(fields, "pi", &v)) {
		eq0.pi = (uint32_t)v;
		eq0.seen = true;
	}
}

static bool answered(void *arg)
{
	volatile struct hca_cmd_entry *e = arg;

	return !(e->own & HCA_CMD_OWN_DEVICE) && e->done_cycle;
}

/* A command through BAR 0 from a page of the test's own, as a rogue program would. */
static void rogue_cmd(struct hcasim_fn *fn, uint8_t *page, uint64_t iova, uint16_t op,
		      uint64_t out_addr, uint32_t token)
{
	const struct hca_cmd_desc *c = hca_cmd_find(op);
	volatile struct hca_cmd_entry *e = (volatile struct hca_cmd_entry *)page;

	memset(page, 0, 4096);
	page[256] = 1; /* port 1, index 0 for the queries */
	e->opcode = op;
	e->in_len = (uint32_t)c->in_len;
	e->out_len = (uint32_t)c->out_len;
	e->token = token;
	e->in_addr = iova + 256;
	e->out_addr = out_addr ? out_addr : iova + 512;
	e->own = HCA_CMD_OWN_DEVICE;
	cr_assert_eq(hcasim_mmio_write(fn, 0, HCA_REG_CMD_DOORBELL, 4, token), 0);
	cr_assert_eq(hcasim_host_wait(answered, (void *)e, 1000000000ull), 0);
	cr_assert_eq(e->status, HCA_STATUS_OK, "rogue %s: status %u", c->name, e->status);
	hcasim_run_for_ps(1000000ull); /* its event lands */
}

/* A rogue command wrote its output over an entry of hcasim2's EQ 0 that the driver had not
 * read yet (any address the function may reach is a valid mailbox). The device keeps raising
 * the EQ's interrupt, since an entry is pending, and the driver, which cannot read it, re-arms
 * at once: a driver command used to wait through each interrupt with its timeout started
 * afresh, for ever (found by fuzz target `cmd`). Its timeout now runs from the doorbell: the
 * command fails with ETIMEDOUT after driver.cmd_timeout_ms, and the bystander is untouched. */
Test(hostile, a_command_wait_ends_at_its_timeout_while_interrupts_keep_coming)
{
	struct hcasim_fn *fns[4], *fn = NULL;
	struct tb_pair p;
	struct tb_dev v;
	struct ibv_port_attr pa;
	uint64_t lo = 0, hi = 0, iova = 0, t0;
	uint8_t *page = aligned_alloc(4096, 4096);
	int n;

	tb_config("sim.hosts", "3");
	tb_config("driver.cmd_timeout_ms", "2");
	cr_assert_eq(hcasim_trace_observe("pcie,eq", watch_eq0, NULL), 0);
	tb_pair_open(&p, IBV_QPT_RC, 4096, 5);
	tb_open(&v, 2);
	cr_assert_neq(eq0.base, 0, "the first entry of hcasim2's EQ 0 was seen");
	n = hcasim_bus_enumerate(fns, 4);
	for (int i = 0; i < n; i++)
		if (hcasim_fn_devno(fns[i]) == 2)
			fn = fns[i];
	cr_assert_not_null(fn);
	cr_assert_gt(hcasim_dma_map(fn, page, 4096, HCASIM_DMA_READ | HCASIM_DMA_WRITE, &iova), 0);
	hcasim_mmio_read(fn, 0, HCA_REG_CMDQ_ADDR_LO, 4, &lo);
	hcasim_mmio_read(fn, 0, HCA_REG_CMDQ_ADDR_HI, 4, &hi);
	hcasim_mmio_write(fn, 0, HCA_REG_CMDQ_ADDR_LO, 4, (uint32_t)iova);
	hcasim_mmio_write(fn, 0, HCA_REG_CMDQ_ADDR_HI, 4, (uint32_t)(iova >> 32));
	eq0.token = 0x80000001u;
	rogue_cmd(fn, page, iova, HCA_CMD_QUERY_PKEY, 0, eq0.token);
	cr_assert(eq0.seen, "the rogue command's event went to EQ 0");
	/* QUERY_HCA_CAP's output over that entry: its byte 31 (the entry's owner byte) is the top
	 * byte of page_size_cap, 0, which the driver reads as not yet written on this pass. */
	rogue_cmd(fn, page, iova, HCA_CMD_QUERY_HCA_CAP,
		  eq0.base + (uint64_t)(eq0.pi % 256) * HCA_EQE_BYTES, eq0.token + 1);
	hcasim_mmio_write(fn, 0, HCA_REG_CMDQ_ADDR_LO, 4, (uint32_t)lo);
	hcasim_mmio_write(fn, 0, HCA_REG_CMDQ_ADDR_HI, 4, (uint32_t)hi);
	cr_assert(eq0.pi / 256 == 0, "the entry is on the ring's first pass (owner 1 expected)");

	t0 = hcasim_now_ps();
	errno = 0;
	cr_assert_neq(ibv_query_port(v.ctx, 1, &pa), 0, "the driver read its answer after all");
	cr_expect_eq(errno, ETIMEDOUT, "errno %d", errno);
	cr_expect(strstr(hcasim_last_error(), "timed out"), "%s", hcasim_last_error());
	cr_expect_geq(hcasim_now_ps() - t0, 2000000000ull, "gave up before the timeout");
	cr_expect_lt(hcasim_now_ps() - t0, 3000000000ull, "waited past the timeout");
	cr_assert_null(hcasim_halted());
	cr_assert_eq(hcasim_trace_observe(NULL, NULL, NULL), 0);
	tb_pair_send(&p, 1000); /* the bystander on hcasim0 and hcasim1 */
	free(page);
	/* hcasim2's driver no longer gets answers: its context stays (a close would wait for each
	 * destroy's timeout), its list goes */
	ibv_free_device_list(v.list);
	tb_pair_close(&p);
}
