/* firmware: malformed commands fed straight into the device's mailbox, without the driver's
 * verbs. ibv_get_device_list() boots the system (the driver has run QUERY_HCA_CAP, INIT_HCA
 * and CREATE_EQ on each device); the test then takes device 0's PCIe function, points
 * CMDQ_ADDR at its own mailbox page and rings CMD_DOORBELL itself. Every rejected command is
 * followed by a valid one that must succeed: the device keeps working. */
#include "testbench/tb.h"

#include "model/qpc.h"
#include "model/hw/hca_hw.h"
#include "sim/pcie_dev.h"
#include "sim/sm.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IN_OFF 256
#define OUT_OFF 512
#define PAGE 4096u
#define POOL_BYTES (16 * PAGE)
#define SENTINEL 0xffu /* not a status code: "not written back yet" */
#define WAIT_PS 1000000000000ull /* 1 s simulated */

struct fwt {
	struct ibv_device **list;
	struct sim_pcie_fn *fn;
	uint8_t *page;     /* entry at 0, input at IN_OFF, output at OUT_OFF */
	int64_t map;
	uint64_t iova;     /* device address of page */
	uint8_t *pool;     /* device-readable and -writable memory for rings */
	int64_t pool_map;
	uint64_t pool_iova;
	size_t pool_used;
	uint32_t token;
};

/* Device addresses no mapping covers: below the first IOVA the IOMMU hands out, and the guard
 * page it leaves after the pool's mapping. */
#define UNMAPPED 0x10000ull
#define GUARD(f) ((f)->pool_iova + POOL_BYTES)

static void fwt_set_cmdq(struct fwt *f, uint64_t addr)
{
	sim_pcie_mmio_write32(f->fn, HCA_REG_CMDQ_ADDR_LO, (uint32_t)addr);
	sim_pcie_mmio_write32(f->fn, HCA_REG_CMDQ_ADDR_HI, (uint32_t)(addr >> 32));
}

static void fwt_open(struct fwt *f)
{
	struct sim_pcie_fn *fns[SIM_PCIE_MAX_FNS];
	int n = 0;

	memset(f, 0, sizeof(*f));
	f->list = ibv_get_device_list(&n);
	cr_assert_not_null(f->list, "ibv_get_device_list: %s", hcasim_last_error());
	cr_assert_geq(n, 1);
	cr_assert_geq(sim_pcie_enumerate(fns, SIM_PCIE_MAX_FNS), 1);
	f->fn = fns[0];
	cr_assert_eq(posix_memalign((void **)&f->page, PAGE, PAGE), 0);
	memset(f->page, 0, PAGE);
	f->map = sim_pcie_map(f->fn, f->page, PAGE, SIM_DMA_READ | SIM_DMA_WRITE, &f->iova);
	cr_assert_gt(f->map, 0, "sim_pcie_map: %s", hcasim_last_error());
	cr_assert_eq(posix_memalign((void **)&f->pool, PAGE, POOL_BYTES), 0);
	memset(f->pool, 0, POOL_BYTES);
	f->pool_map = sim_pcie_map(f->fn, f->pool, POOL_BYTES, SIM_DMA_READ | SIM_DMA_WRITE,
				   &f->pool_iova);
	cr_assert_gt(f->pool_map, 0, "sim_pcie_map: %s", hcasim_last_error());
	f->token = 0x5000;
	cr_assert_lt(UNMAPPED, SIM_IOVA_BASE);
	fwt_set_cmdq(f, f->iova);
}

static void fwt_close(struct fwt *f)
{
	sim_pcie_unmap(f->fn, f->pool_map);
	sim_pcie_unmap(f->fn, f->map);
	free(f->pool);
	free(f->page);
	ibv_free_device_list(f->list);
}

/* Page-aligned, zeroed, device-mapped memory from the pool: its device address. */
static uint64_t fwt_dma(struct fwt *f, size_t bytes)
{
	size_t len = (bytes + PAGE - 1) & ~(size_t)(PAGE - 1);
	uint64_t iova = f->pool_iova + f->pool_used;

	cr_assert_leq(f->pool_used + len, POOL_BYTES, "test DMA pool exhausted");
	f->pool_used += len;
	return iova;
}

/* ---- raw mailbox access ---- */

struct raw {
	uint16_t opcode;
	uint32_t in_len, out_len;
	uint32_t token;    /* in the entry */
	uint32_t doorbell; /* written to CMD_DOORBELL */
	uint64_t in_addr, out_addr;
	uint8_t own;
};

/* A well-formed entry for opcode with the mailboxes of the page. */
static struct raw raw_for(struct fwt *f, uint16_t opcode, size_t in_len, size_t out_len)
{
	uint32_t tok = ++f->token;

	return (struct raw){
		.opcode = opcode,
		.in_len = (uint32_t)in_len,
		.out_len = (uint32_t)out_len,
		.token = tok,
		.doorbell = tok,
		.in_addr = f->iova + IN_OFF,
		.out_addr = f->iova + OUT_OFF,
		.own = HCA_CMD_OWN_DEVICE,
	};
}

static bool entry_done(void *p)
{
	volatile struct hca_cmd_entry *e = p;

	return e->status != SENTINEL && !(e->own & HCA_CMD_OWN_DEVICE);
}

/* Write the entry, ring, run the simulation until the device hands the entry back; returns
 * the status and stores the syndrome. */
static uint8_t raw_run(struct fwt *f, const struct raw *r, uint32_t *syn)
{
	volatile struct hca_cmd_entry *e = (volatile struct hca_cmd_entry *)f->page;
	int rc;

	memset((void *)e, 0, sizeof(*e));
	e->opcode = r->opcode;
	e->in_len = r->in_len;
	e->out_len = r->out_len;
	e->token = r->token;
	e->in_addr = r->in_addr;
	e->out_addr = r->out_addr;
	e->status = SENTINEL;
	e->syndrome = 0xdeadbeef;
	e->own = r->own;
	sim_pcie_mmio_write32(f->fn, HCA_REG_CMD_DOORBELL, r->doorbell);
	rc = sim_host_wait(entry_done, (void *)e, WAIT_PS);
	cr_assert_eq(rc, 0, "opcode 0x%x: the device never handed the entry back (%d)", r->opcode,
		     rc);
	if (syn)
		*syn = e->syndrome;
	return e->status;
}

/* One well-formed command: input copied in, output copied out. */
static uint8_t fw_cmd(struct fwt *f, uint16_t op, const void *in, size_t in_len, void *out,
		      size_t out_len, uint32_t *syn)
{
	struct raw r = raw_for(f, op, in_len, out_len);
	uint8_t st;

	memcpy(f->page + IN_OFF, in, in_len);
	memset(f->page + OUT_OFF, 0xcc, out_len);
	st = raw_run(f, &r, syn);
	if (out && st == HCA_STATUS_OK)
		memcpy(out, f->page + OUT_OFF, out_len);
	return st;
}

static const char *cmd_name(uint16_t op)
{
	const struct hca_cmd_desc *c = hca_cmd_find(op);

	return c ? c->name : "?";
}

#define EXPECT_OK(f, op, in, out)                                                                  \
	do {                                                                                       \
		uint32_t syn_;                                                                     \
		uint8_t st_ = fw_cmd((f), (op), (in), sizeof(*(in)), (out), sizeof(*(out)),        \
				     &syn_);                                                       \
		cr_assert_eq(st_, HCA_STATUS_OK, "%s: status %s, syndrome 0x%08x", cmd_name(op),   \
			     hca_status_name(st_), syn_);                                          \
	} while (0)

/* The device still executes a valid command: QUERY_PORT of port 1. */
static void expect_alive(struct fwt *f)
{
	struct hca_port_in in = { .port = 1 };
	struct hca_port_info out;

	EXPECT_OK(f, HCA_CMD_QUERY_PORT, &in, &out);
	cr_assert_geq(out.state, 1);
	cr_assert_leq(out.state, 4);
}

/* Name of the input field a syndrome detail points at. */
static const char *syn_field(uint16_t op, uint32_t syn, char *buf, size_t len)
{
	const struct hca_cmd_desc *c = hca_cmd_find(op);

	if (!c || !hca_field_path(c->in, HCA_SYN_DETAIL(syn), buf, len))
		snprintf(buf, len, "(offset %u)", HCA_SYN_DETAIL(syn));
	return buf;
}

/* A command that must fail with status; returns the syndrome. The device must still work. */
static uint32_t expect_status(struct fwt *f, uint16_t op, const void *in, size_t in_len,
			      size_t out_len, uint8_t status)
{
	uint32_t syn = 0;
	uint8_t out[256];
	uint8_t st = fw_cmd(f, op, in, in_len, out, out_len, &syn);

	cr_assert_eq(st, status, "%s: status %s (0x%x), expected %s; syndrome 0x%08x",
		     cmd_name(op), hca_status_name(st), st, hca_status_name(status), syn);
	expect_alive(f);
	return syn;
}

/* Fails with status, syndrome reason FIELD naming field of the command's input. */
static void expect_field(struct fwt *f, uint16_t op, const void *in, size_t in_len, uint8_t status,
			 const char *field)
{
	const struct hca_cmd_desc *c = hca_cmd_find(op);
	uint32_t syn = expect_status(f, op, in, in_len, c->out_len, status);
	char buf[96];

	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_FIELD, "%s: syndrome reason %u, expected FIELD",
		     c->name, HCA_SYN_REASON(syn));
	cr_assert_str_eq(syn_field(op, syn, buf, sizeof(buf)), field,
			 "%s: syndrome names %s, expected %s", c->name, buf, field);
}

/* Fails with BAD_HANDLE naming field; the syndrome's reason is HANDLE. */
static void expect_bad_handle(struct fwt *f, uint16_t op, const void *in, size_t in_len,
			      const char *field)
{
	const struct hca_cmd_desc *c = hca_cmd_find(op);
	uint32_t syn = expect_status(f, op, in, in_len, c->out_len, HCA_STATUS_BAD_HANDLE);
	uint32_t want = HCA_SYN_HANDLE;
	char buf[96];

	cr_assert_eq(HCA_SYN_REASON(syn), want, "%s: syndrome reason %u, expected %u", c->name,
		     HCA_SYN_REASON(syn), want);
	cr_assert_str_eq(syn_field(op, syn, buf, sizeof(buf)), field,
			 "%s: syndrome names %s, expected %s", c->name, buf, field);
}

#define EXPECT_FIELD(f, op, in, status, field) expect_field((f), (op), (in), sizeof(*(in)), \
							   HCA_STATUS_##status, (field))
#define EXPECT_BAD_HANDLE(f, op, in, field) expect_bad_handle((f), (op), (in), sizeof(*(in)), \
							      (field))

/* ---- objects made with raw commands ---- */

static uint32_t alloc_pd(struct fwt *f)
{
	struct hca_cmd_empty none = { 0 };
	struct hca_handle_out out;

	EXPECT_OK(f, HCA_CMD_ALLOC_PD, &none, &out);
	return out.handle;
}

static void free_handle(struct fwt *f, uint16_t op, uint32_t handle)
{
	struct hca_handle_in in = { .handle = handle };
	struct hca_cmd_empty none;

	EXPECT_OK(f, op, &in, &none);
}

static uint32_t create_eq(struct fwt *f)
{
	struct hca_eq_create_in in = { .log_size = 4, .vector = 1, .event_mask = 0 };
	struct hca_handle_out out;

	in.ring_addr = fwt_dma(f, HCA_EQE_BYTES << in.log_size);
	EXPECT_OK(f, HCA_CMD_CREATE_EQ, &in, &out);
	return out.handle;
}

static struct hca_cq_in cq_in(struct fwt *f, uint32_t eqn, uint32_t cqe)
{
	struct hca_cq_in in = { .cqe = cqe, .eqn = eqn };

	in.log_size = hca_log2(hca_cq_ring_entries(cqe));
	in.ring_addr = fwt_dma(f, (size_t)HCA_CQE_BYTES << in.log_size);
	in.db_addr = fwt_dma(f, 8);
	return in;
}

static uint32_t create_cq(struct fwt *f, uint32_t eqn)
{
	struct hca_cq_in in = cq_in(f, eqn, 7);
	struct hca_cq_out out;

	EXPECT_OK(f, HCA_CMD_CREATE_CQ, &in, &out);
	cr_assert_geq(out.cqe, 7);
	return out.cqn;
}

/* CREATE_QP input for a QP of type with one-entry queues on fresh rings. */
static struct hca_qp_create_in qp_in(struct fwt *f, uint8_t type, uint32_t pdn, uint32_t cqn)
{
	struct hca_qp_create_in in = { .type = type, .pdn = pdn, .send_cqn = cqn,
				       .recv_cqn = cqn,
				       .caps = { .max_send_wr = 1, .max_recv_wr = 1,
						 .max_send_sge = 1, .max_recv_sge = 1 } };

	in.sq_addr = fwt_dma(f, hca_wq_entries(1) * hca_sq_stride(1, 0));
	in.rq_addr = fwt_dma(f, hca_wq_entries(1) * hca_rq_stride(1));
	in.db_addr = fwt_dma(f, 8);
	return in;
}

static uint32_t create_qp(struct fwt *f, uint32_t pdn, uint32_t cqn)
{
	struct hca_qp_create_in in = qp_in(f, HCA_QPT_RC, pdn, cqn);
	struct hca_qp_create_out out;

	EXPECT_OK(f, HCA_CMD_CREATE_QP, &in, &out);
	cr_assert_geq(out.qpn, HCA_FIRST_QPN);
	return out.qpn;
}

static uint32_t create_mkey(struct fwt *f, uint32_t pdn)
{
	struct hca_mkey_in in = { .pdn = pdn, .access = HCA_ACCESS_LOCAL_WRITE, .length = PAGE };
	struct hca_mkey_out out;

	in.start = in.iova = fwt_dma(f, PAGE);
	EXPECT_OK(f, HCA_CMD_CREATE_MKEY, &in, &out);
	return out.lkey;
}

/* ================= the mailbox itself ================= */

Test(firmware, valid_commands_succeed_through_a_private_mailbox)
{
	struct fwt f;
	struct hca_cmd_empty none = { 0 };
	struct hca_hca_cap cap;
	uint32_t pd;

	fwt_open(&f);
	EXPECT_OK(&f, HCA_CMD_QUERY_HCA_CAP, &none, &cap);
	cr_assert_eq(cap.vendor_id, 0x4853);
	cr_assert_geq(cap.num_ports, 1);
	expect_alive(&f);
	pd = alloc_pd(&f);
	cr_assert_neq(pd, 0, "PD handle 0 is never valid");
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd);
	fwt_close(&f);
}

Test(firmware, unknown_opcode_is_bad_opcode)
{
	struct fwt f;
	struct hca_cmd_empty none = { 0 };
	const uint16_t ops[] = { 0x0000, 0x0999, 0x0108, 0x01ff, 0xffff };

	fwt_open(&f);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct raw r = raw_for(&f, ops[i], sizeof(none), sizeof(none));
		uint32_t syn;
		uint8_t st;
		char buf[64];

		memcpy(f.page + IN_OFF, &none, sizeof(none));
		st = raw_run(&f, &r, &syn);
		cr_assert_eq(st, HCA_STATUS_BAD_OPCODE, "opcode 0x%x: status %s", ops[i],
			     hca_status_name(st));
		cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_ENTRY);
		cr_assert(hca_field_path("hca_cmd_entry", HCA_SYN_DETAIL(syn), buf, sizeof(buf)));
		cr_assert_str_eq(buf, "opcode");
		expect_alive(&f);
	}
	fwt_close(&f);
}

Test(firmware, wrong_in_len_or_out_len_is_bad_length)
{
	struct fwt f;
	struct hca_port_in in = { .port = 1 };
	const uint32_t bad_in[] = { 0, 7, 9, 16, 256 };
	const uint32_t bad_out[] = { 0, 8, sizeof(struct hca_port_info) - 1,
				     sizeof(struct hca_port_info) + 1 };

	fwt_open(&f);
	for (size_t i = 0; i < sizeof(bad_in) / sizeof(bad_in[0]); i++) {
		struct raw r = raw_for(&f, HCA_CMD_QUERY_PORT, bad_in[i],
				       sizeof(struct hca_port_info));
		uint32_t syn;
		uint8_t st;

		memcpy(f.page + IN_OFF, &in, sizeof(in));
		st = raw_run(&f, &r, &syn);
		cr_assert_eq(st, HCA_STATUS_BAD_LENGTH, "in_len %u: status %s", bad_in[i],
			     hca_status_name(st));
		cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_LENGTH);
		cr_assert_eq(HCA_SYN_DETAIL(syn), 0, "in_len: detail %u", HCA_SYN_DETAIL(syn));
		expect_alive(&f);
	}
	for (size_t i = 0; i < sizeof(bad_out) / sizeof(bad_out[0]); i++) {
		struct raw r = raw_for(&f, HCA_CMD_QUERY_PORT, sizeof(in), bad_out[i]);
		uint32_t syn;
		uint8_t st;

		memcpy(f.page + IN_OFF, &in, sizeof(in));
		st = raw_run(&f, &r, &syn);
		cr_assert_eq(st, HCA_STATUS_BAD_LENGTH, "out_len %u: status %s", bad_out[i],
			     hca_status_name(st));
		cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_LENGTH);
		cr_assert_eq(HCA_SYN_DETAIL(syn), 1, "out_len: detail %u", HCA_SYN_DETAIL(syn));
		expect_alive(&f);
	}
	fwt_close(&f);
}

Test(firmware, rejected_length_leaves_no_object_behind)
{
	struct fwt f;
	struct hca_cmd_empty none = { 0 };
	struct raw r;
	uint32_t syn;

	tb_config("hca.max_pd", "1");
	fwt_open(&f);
	/* ALLOC_PD with a short output: rejected before the handler runs, so the only PD the
	 * device allows is still free afterwards. */
	r = raw_for(&f, HCA_CMD_ALLOC_PD, sizeof(none), 4);
	memcpy(f.page + IN_OFF, &none, sizeof(none));
	cr_assert_eq(raw_run(&f, &r, &syn), HCA_STATUS_BAD_LENGTH);
	free_handle(&f, HCA_CMD_DEALLOC_PD, alloc_pd(&f));
	fwt_close(&f);
}

Test(firmware, token_differing_from_doorbell_is_bad_token)
{
	struct fwt f;
	struct hca_port_in in = { .port = 1 };
	struct raw r;
	uint32_t syn;
	uint8_t st;
	char buf[64];

	fwt_open(&f);
	r = raw_for(&f, HCA_CMD_QUERY_PORT, sizeof(in), sizeof(struct hca_port_info));
	r.doorbell = r.token + 1;
	memcpy(f.page + IN_OFF, &in, sizeof(in));
	memset(f.page + OUT_OFF, 0xcc, sizeof(struct hca_port_info));
	st = raw_run(&f, &r, &syn);
	cr_assert_eq(st, HCA_STATUS_BAD_TOKEN, "status %s", hca_status_name(st));
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_ENTRY);
	cr_assert(hca_field_path("hca_cmd_entry", HCA_SYN_DETAIL(syn), buf, sizeof(buf)));
	cr_assert_str_eq(buf, "token");
	cr_assert_eq(f.page[OUT_OFF], 0xcc, "output written for a rejected command");
	expect_alive(&f);
	fwt_close(&f);
}

Test(firmware, entry_not_owned_by_device_is_bad_token)
{
	struct fwt f;
	struct hca_port_in in = { .port = 1 };
	struct raw r;
	uint32_t syn;
	uint8_t st;
	char buf[64];

	fwt_open(&f);
	r = raw_for(&f, HCA_CMD_QUERY_PORT, sizeof(in), sizeof(struct hca_port_info));
	r.own = 0;
	memcpy(f.page + IN_OFF, &in, sizeof(in));
	memset(f.page + OUT_OFF, 0xcc, sizeof(struct hca_port_info));
	st = raw_run(&f, &r, &syn);
	cr_assert_eq(st, HCA_STATUS_BAD_TOKEN, "status %s", hca_status_name(st));
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_ENTRY);
	cr_assert(hca_field_path("hca_cmd_entry", HCA_SYN_DETAIL(syn), buf, sizeof(buf)));
	cr_assert_str_eq(buf, "own");
	cr_assert_eq(f.page[OUT_OFF], 0xcc, "output written for a rejected command");
	expect_alive(&f);
	fwt_close(&f);
}

Test(firmware, unmapped_input_mailbox_is_bad_addr)
{
	struct fwt f;
	struct raw r;
	uint32_t syn;
	uint8_t st;
	uint64_t faults;
	char buf[64];

	fwt_open(&f);
	faults = hcasim_dma_faults(0);
	r = raw_for(&f, HCA_CMD_QUERY_PORT, sizeof(struct hca_port_in),
		    sizeof(struct hca_port_info));
	r.in_addr = UNMAPPED;
	st = raw_run(&f, &r, &syn);
	cr_assert_eq(st, HCA_STATUS_BAD_ADDR, "status %s", hca_status_name(st));
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_ENTRY);
	cr_assert(hca_field_path("hca_cmd_entry", HCA_SYN_DETAIL(syn), buf, sizeof(buf)));
	cr_assert_str_eq(buf, "in_addr");
	cr_assert_eq(hcasim_dma_faults(0), faults + 1, "the refused read is a counted DMA fault");
	expect_alive(&f);
	/* the guard page after a mapping, address 0, and the host's own virtual address of the
	 * mailbox (not a device address) are refused the same way */
	{
		const uint64_t bad[] = { GUARD(&f), 0, (uint64_t)(uintptr_t)(f.page + IN_OFF),
					 f.pool_iova + POOL_BYTES - 4 };

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			r = raw_for(&f, HCA_CMD_QUERY_PORT, sizeof(struct hca_port_in),
				    sizeof(struct hca_port_info));
			r.in_addr = bad[i];
			st = raw_run(&f, &r, &syn);
			cr_assert_eq(st, HCA_STATUS_BAD_ADDR, "in_addr 0x%llx: status %s",
				     (unsigned long long)bad[i], hca_status_name(st));
			expect_alive(&f);
		}
	}
	fwt_close(&f);
}

Test(firmware, unmapped_or_read_only_output_mailbox_is_bad_addr)
{
	struct fwt f;
	struct hca_port_in in = { .port = 1 };
	struct hca_cmd_empty none = { 0 };
	uint8_t *ro;
	int64_t ro_map;
	uint64_t ro_iova;
	struct raw r;
	uint32_t syn;
	uint8_t st;
	char buf[64];

	tb_config("hca.max_pd", "1");
	fwt_open(&f);
	r = raw_for(&f, HCA_CMD_QUERY_PORT, sizeof(in), sizeof(struct hca_port_info));
	r.out_addr = UNMAPPED;
	memcpy(f.page + IN_OFF, &in, sizeof(in));
	st = raw_run(&f, &r, &syn);
	cr_assert_eq(st, HCA_STATUS_BAD_ADDR, "status %s", hca_status_name(st));
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_ENTRY);
	cr_assert(hca_field_path("hca_cmd_entry", HCA_SYN_DETAIL(syn), buf, sizeof(buf)));
	cr_assert_str_eq(buf, "out_addr");
	expect_alive(&f);
	/* mapped, but only for device reads */
	cr_assert_eq(posix_memalign((void **)&ro, PAGE, PAGE), 0);
	memset(ro, 0x77, PAGE);
	ro_map = sim_pcie_map(f.fn, ro, PAGE, SIM_DMA_READ, &ro_iova);
	cr_assert_gt(ro_map, 0);
	r = raw_for(&f, HCA_CMD_ALLOC_PD, sizeof(none), sizeof(struct hca_handle_out));
	r.out_addr = ro_iova;
	memcpy(f.page + IN_OFF, &none, sizeof(none));
	st = raw_run(&f, &r, &syn);
	cr_assert_eq(st, HCA_STATUS_BAD_ADDR, "read-only output: status %s", hca_status_name(st));
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_ENTRY);
	cr_assert(hca_field_path("hca_cmd_entry", HCA_SYN_DETAIL(syn), buf, sizeof(buf)));
	cr_assert_str_eq(buf, "out_addr");
	cr_assert_eq(ro[0], 0x77, "the device wrote into read-only memory");
	/* no PD was allocated by the rejected command: the only one allowed is free */
	free_handle(&f, HCA_CMD_DEALLOC_PD, alloc_pd(&f));
	sim_pcie_unmap(f.fn, ro_map);
	free(ro);
	fwt_close(&f);
}

/* The IOMMU remembers the map it found last for each permission (sim/pcie.c iommu_find): a
 * buffer the device wrote and read a moment ago is refused once it is unmapped, a range running
 * past its end is refused, a read-only map it has just read is not written, and a mailbox used
 * before its unmap is a bad address after it. */
Test(firmware, dma_to_a_map_used_a_moment_ago_is_refused_once_unmapped)
{
	struct fwt f;
	struct hca_port_in in = { .port = 1 };
	uint8_t *pg[3], v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, back[8];
	int64_t map[3];
	uint64_t iova[3];
	sim_time_t t;
	struct raw r;
	uint32_t syn;
	uint8_t st;

	fwt_open(&f);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(posix_memalign((void **)&pg[i], PAGE, PAGE), 0);
		memset(pg[i], 0x5a, PAGE);
		map[i] = sim_pcie_map(f.fn, pg[i], PAGE,
				      i == 2 ? SIM_DMA_READ : SIM_DMA_READ | SIM_DMA_WRITE, &iova[i]);
		cr_assert_gt(map[i], 0);
	}
	t = sim_now(sim_kernel());
	cr_assert_eq(sim_dma_write_timed(f.fn, iova[0] + 8, v, sizeof(v), &t), 0);
	cr_assert_eq(memcmp(pg[0] + 8, v, sizeof(v)), 0);
	cr_assert_eq(sim_dma_read_timed(f.fn, iova[0] + 8, back, sizeof(back), &t), 0);
	cr_assert_eq(memcmp(back, v, sizeof(v)), 0);
	cr_assert_eq(sim_dma_write_timed(f.fn, iova[0] + PAGE - 4, v, sizeof(v), &t), -EFAULT,
		     "a write past the map's end");
	cr_assert_eq(sim_dma_read_timed(f.fn, iova[2], back, sizeof(back), &t), 0);
	cr_assert_eq(sim_dma_write_timed(f.fn, iova[2], v, sizeof(v), &t), -EFAULT,
		     "a write into a read-only map");
	cr_assert_eq(pg[2][0], 0x5a);
	memcpy(f.page + IN_OFF, &in, sizeof(in));
	r = raw_for(&f, HCA_CMD_QUERY_PORT, sizeof(in), sizeof(struct hca_port_info));
	r.out_addr = iova[0] + 64;
	st = raw_run(&f, &r, &syn);
	cr_assert_eq(st, HCA_STATUS_OK, "mapped output: status %s", hca_status_name(st));
	/* the map last found for both directions when it goes */
	cr_assert_eq(sim_dma_write_timed(f.fn, iova[0] + 8, v, sizeof(v), &t), 0);
	cr_assert_eq(sim_dma_read_timed(f.fn, iova[0] + 8, back, sizeof(back), &t), 0);
	cr_assert_eq(sim_pcie_unmap(f.fn, map[0]), 0);
	memset(pg[0], 0x5a, PAGE);
	cr_assert_eq(sim_dma_write_timed(f.fn, iova[0] + 8, v, sizeof(v), &t), -EFAULT);
	cr_assert_eq(sim_dma_read_timed(f.fn, iova[0] + 8, back, sizeof(back), &t), -EFAULT);
	st = raw_run(&f, &r, &syn);
	cr_assert_eq(st, HCA_STATUS_BAD_ADDR, "unmapped output: status %s", hca_status_name(st));
	cr_assert_eq(memcmp(pg[0], pg[2], PAGE), 0, "the device wrote into unmapped memory");
	cr_assert_eq(sim_dma_write_timed(f.fn, iova[1], v, sizeof(v), &t), 0, "the other map");
	cr_assert_eq(memcmp(pg[1], v, sizeof(v)), 0);
	expect_alive(&f);
	sim_pcie_unmap(f.fn, map[1]);
	sim_pcie_unmap(f.fn, map[2]);
	for (int i = 0; i < 3; i++)
		free(pg[i]);
	fwt_close(&f);
}

Test(firmware, unmapped_command_entry_is_a_dma_fault_the_device_survives)
{
	struct fwt f;
	uint32_t v, fc0, fc;
	uint64_t faults;
	int i;

	fwt_open(&f);
	expect_alive(&f);
	v = sim_pcie_mmio_read32(f.fn, HCA_REG_CMD_STATUS);
	cr_assert_eq(v, 0, "CMD_STATUS before: 0x%x", v);
	fc0 = sim_pcie_mmio_read32(f.fn, HCA_REG_FAULT_COUNT);
	faults = hcasim_dma_faults(0);
	cr_assert_eq(fc0, (uint32_t)faults, "FAULT_COUNT %u, hcasim_dma_faults %llu", fc0,
		     (unsigned long long)faults);

	fwt_set_cmdq(&f, GUARD(&f));
	sim_pcie_mmio_write32(f.fn, HCA_REG_CMD_DOORBELL, ++f.token);
	for (i = 0; i < 1000; i++) {
		v = sim_pcie_mmio_read32(f.fn, HCA_REG_CMD_STATUS);
		if (!(v & 1) && v)
			break;
	}
	cr_assert_eq(v & 1, 0, "CMD_STATUS stays busy: 0x%x", v);
	cr_assert_eq((v >> 8) & 0xff, HCA_STATUS_BAD_ADDR, "CMD_STATUS 0x%x: status %s", v,
		     hca_status_name((uint8_t)(v >> 8)));
	fc = sim_pcie_mmio_read32(f.fn, HCA_REG_FAULT_COUNT);
	cr_assert_eq(fc, fc0 + 1, "FAULT_COUNT %u, expected %u", fc, fc0 + 1);
	cr_assert_eq(hcasim_dma_faults(0), faults + 1);
	cr_assert_eq(sim_pcie_mmio_read32(f.fn, HCA_REG_FAULT_ADDR_LO), (uint32_t)GUARD(&f));
	cr_assert_eq(sim_pcie_mmio_read32(f.fn, HCA_REG_FAULT_ADDR_HI),
		     (uint32_t)(GUARD(&f) >> 32));
	cr_assert_eq(sim_pcie_mmio_read32(f.fn, HCA_REG_DEV_STATUS) & HCA_DEV_STATUS_CMD_BUSY, 0);
	/* back to a good mailbox: the device works */
	fwt_set_cmdq(&f, f.iova);
	expect_alive(&f);
	v = sim_pcie_mmio_read32(f.fn, HCA_REG_CMD_STATUS);
	cr_assert_eq(v, 0, "CMD_STATUS after a good command: 0x%x", v);
	fwt_close(&f);
}

Test(firmware, read_only_command_entry_cannot_be_written_back)
{
	struct fwt f;
	struct hca_port_in in = { .port = 1 };
	volatile struct hca_cmd_entry *e;
	uint8_t *ro;
	int64_t ro_map;
	uint64_t ro_iova;
	uint32_t v = 0;
	uint64_t faults;
	int i;

	fwt_open(&f);
	faults = hcasim_dma_faults(0);
	cr_assert_eq(posix_memalign((void **)&ro, PAGE, PAGE), 0);
	memset(ro, 0, PAGE);
	ro_map = sim_pcie_map(f.fn, ro, PAGE, SIM_DMA_READ, &ro_iova);
	cr_assert_gt(ro_map, 0);
	/* the entry is readable by the device, its mailboxes are the good page's */
	e = (volatile struct hca_cmd_entry *)ro;
	e->opcode = HCA_CMD_QUERY_PORT;
	e->in_len = sizeof(in);
	e->out_len = sizeof(struct hca_port_info);
	e->token = ++f.token;
	e->in_addr = f.iova + IN_OFF;
	e->out_addr = f.iova + OUT_OFF;
	e->status = SENTINEL;
	e->own = HCA_CMD_OWN_DEVICE;
	memcpy(f.page + IN_OFF, &in, sizeof(in));
	fwt_set_cmdq(&f, ro_iova);
	sim_pcie_mmio_write32(f.fn, HCA_REG_CMD_DOORBELL, f.token);
	for (i = 0; i < 1000; i++) {
		v = sim_pcie_mmio_read32(f.fn, HCA_REG_CMD_STATUS);
		if (!(v & 1) && v)
			break;
	}
	cr_assert_eq(v & 1, 0, "CMD_STATUS stays busy: 0x%x", v);
	cr_assert_eq((v >> 8) & 0xff, HCA_STATUS_BAD_ADDR, "CMD_STATUS 0x%x", v);
	cr_assert_eq(e->own, HCA_CMD_OWN_DEVICE, "the device wrote into read-only memory");
	cr_assert_eq(e->status, SENTINEL);
	cr_assert_eq(hcasim_dma_faults(0), faults + 1);
	fwt_set_cmdq(&f, f.iova);
	expect_alive(&f);
	sim_pcie_unmap(f.fn, ro_map);
	free(ro);
	fwt_close(&f);
}

Test(firmware, unknown_bar_registers_are_harmless)
{
	struct fwt f;
	const uint32_t unknown[] = { 0x2c, 0x30, 0x3c, 0x44, 0x58, 0x1000, 0xff000 };
	uint32_t v;

	fwt_open(&f);
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		sim_pcie_mmio_write32(f.fn, unknown[i], 0xdeadbeef);
		v = sim_pcie_mmio_read32(f.fn, unknown[i]);
		cr_assert(v == 0 || v == 0xffffffffu, "read of unknown 0x%x gave 0x%x", unknown[i],
			  v);
	}
	/* outside BAR0 and unaligned: all ones, as an unsupported request on a real bus */
	sim_pcie_mmio_write32(f.fn, HCA_BAR0_BYTES, 1);
	sim_pcie_mmio_write32(f.fn, HCA_BAR0_BYTES + 0x1000, 1);
	sim_pcie_mmio_write32(f.fn, 0x2, 1);
	v = sim_pcie_mmio_read32(f.fn, HCA_BAR0_BYTES);
	cr_assert(v == 0 || v == 0xffffffffu, "read beyond BAR0 gave 0x%x", v);
	v = sim_pcie_mmio_read32(f.fn, 0xffffff00u);
	cr_assert(v == 0 || v == 0xffffffffu, "read far beyond BAR0 gave 0x%x", v);
	v = sim_pcie_mmio_read32(f.fn, 0x2);
	cr_assert(v == 0 || v == 0xffffffffu, "unaligned read gave 0x%x", v);
	/* an EQ doorbell for an EQ that does not exist is ignored */
	sim_pcie_mmio_write32(f.fn, HCA_REG_EQ_DOORBELL, HCA_EQ_DB(63, 1, 5));
	sim_pcie_mmio_write32(f.fn, HCA_REG_EQ_DOORBELL, HCA_EQ_DB(255, 1, 0x7fffff));
	/* writes to read-only registers are ignored */
	sim_pcie_mmio_write32(f.fn, HCA_REG_VENDOR_DEVICE, 0);
	sim_pcie_mmio_write32(f.fn, HCA_REG_FW_VERSION, 0);
	sim_pcie_mmio_write32(f.fn, HCA_REG_CMD_STATUS, 0xffffffff);
	sim_pcie_mmio_write32(f.fn, HCA_REG_DEV_STATUS, 0);
	sim_pcie_mmio_write32(f.fn, HCA_REG_FAULT_COUNT, 12345);
	cr_assert_eq(sim_pcie_mmio_read32(f.fn, HCA_REG_VENDOR_DEVICE), 0x00014853u);
	cr_assert_eq(sim_pcie_mmio_read32(f.fn, HCA_REG_FW_VERSION), 0x01000000u);
	cr_assert_eq(sim_pcie_mmio_read32(f.fn, HCA_REG_CMD_STATUS) & 1, 0);
	cr_assert_neq(sim_pcie_mmio_read32(f.fn, HCA_REG_FAULT_COUNT), 12345u);
	v = sim_pcie_mmio_read32(f.fn, HCA_REG_DEV_STATUS);
	cr_assert_eq(v & (HCA_DEV_STATUS_READY | HCA_DEV_STATUS_INITIALIZED),
		     HCA_DEV_STATUS_READY | HCA_DEV_STATUS_INITIALIZED, "DEV_STATUS 0x%x", v);
	/* CMDQ_ADDR was not disturbed by any of it */
	cr_assert_eq(sim_pcie_mmio_read32(f.fn, HCA_REG_CMDQ_ADDR_LO), (uint32_t)f.iova);
	cr_assert_eq(sim_pcie_mmio_read32(f.fn, HCA_REG_CMDQ_ADDR_HI), (uint32_t)(f.iova >> 32));
	expect_alive(&f);
	fwt_close(&f);
}

/* ================= field values out of range ================= */

Test(firmware, query_port_0_and_9_are_bad_param_naming_port)
{
	struct fwt f;
	struct hca_port_in in = { 0 };

	fwt_open(&f);
	in.port = 0;
	EXPECT_FIELD(&f, HCA_CMD_QUERY_PORT, &in, BAD_PARAM, "port");
	in.port = 9;
	EXPECT_FIELD(&f, HCA_CMD_QUERY_PORT, &in, BAD_PARAM, "port");
	in.port = 2; /* one port by default */
	EXPECT_FIELD(&f, HCA_CMD_QUERY_PORT, &in, BAD_PARAM, "port");
	fwt_close(&f);
}

Test(firmware, query_gid_and_pkey_out_of_range_are_bad_param)
{
	struct fwt f;
	struct hca_gid_in g = { .port = 1, .index = 16 };
	struct hca_pkey_in p = { .port = 1 };
	struct hca_gid_out gout;
	char buf[16];

	fwt_open(&f);
	EXPECT_FIELD(&f, HCA_CMD_QUERY_GID, &g, BAD_PARAM, "index");
	g.index = 0;
	g.port = 0;
	EXPECT_FIELD(&f, HCA_CMD_QUERY_GID, &g, BAD_PARAM, "port");
	g.port = 1;
	EXPECT_OK(&f, HCA_CMD_QUERY_GID, &g, &gout);
	cr_assert_eq(gout.valid, 1);
	cr_assert_eq(hcasim_config_get("hca.pkey_table", buf, sizeof(buf)), 0);
	p.index = (uint16_t)strtoul(buf, NULL, 0);
	EXPECT_FIELD(&f, HCA_CMD_QUERY_PKEY, &p, BAD_PARAM, "index");
	p.index = 0;
	p.port = 3;
	EXPECT_FIELD(&f, HCA_CMD_QUERY_PKEY, &p, BAD_PARAM, "port");
	fwt_close(&f);
}

Test(firmware, create_cq_bad_cqe_and_log_size_are_bad_param)
{
	struct fwt f;
	struct hca_cq_in in;
	struct hca_cq_out out;
	uint32_t eqn;
	char buf[32];

	fwt_open(&f);
	eqn = create_eq(&f);
	in = cq_in(&f, eqn, 7);
	in.cqe = 0;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_CQ, &in, BAD_PARAM, "cqe");
	cr_assert_eq(hcasim_config_get("hca.max_cqe", buf, sizeof(buf)), 0);
	in.cqe = (uint32_t)strtoul(buf, NULL, 0) + 1;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_CQ, &in, BAD_PARAM, "cqe");
	in = cq_in(&f, eqn, 7); /* ring of 8 entries: log_size 3 */
	cr_assert_eq(in.log_size, 3);
	in.log_size = 4;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_CQ, &in, BAD_PARAM, "log_size");
	in.log_size = 2;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_CQ, &in, BAD_PARAM, "log_size");
	in.log_size = 31;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_CQ, &in, BAD_PARAM, "log_size");
	in.cqe = 8; /* 9 entries need a ring of 16 */
	in.log_size = 3;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_CQ, &in, BAD_PARAM, "log_size");
	/* the same input made right is accepted */
	in.cqe = 7;
	EXPECT_OK(&f, HCA_CMD_CREATE_CQ, &in, &out);
	cr_assert_eq(out.cqe, 7);
	free_handle(&f, HCA_CMD_DESTROY_CQ, out.cqn);
	free_handle(&f, HCA_CMD_DESTROY_EQ, eqn);
	fwt_close(&f);
}

Test(firmware, create_cq_unmapped_or_short_ring_is_bad_addr)
{
	struct fwt f;
	struct hca_cq_in in;
	uint32_t eqn, syn;
	char buf[32];

	fwt_open(&f);
	eqn = create_eq(&f);
	in = cq_in(&f, eqn, 7);
	in.ring_addr = UNMAPPED;
	syn = expect_status(&f, HCA_CMD_CREATE_CQ, &in, sizeof(in), sizeof(struct hca_cq_out),
			    HCA_STATUS_BAD_ADDR);
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_ADDR);
	cr_assert_str_eq(syn_field(HCA_CMD_CREATE_CQ, syn, buf, sizeof(buf)), "ring_addr");
	in.ring_addr = 0;
	expect_status(&f, HCA_CMD_CREATE_CQ, &in, sizeof(in), sizeof(struct hca_cq_out),
		      HCA_STATUS_BAD_ADDR);
	/* a ring that starts mapped but runs past the end of the mapping */
	in = cq_in(&f, eqn, 7);
	in.ring_addr = f.pool_iova + POOL_BYTES - 256; /* needs 512 bytes */
	syn = expect_status(&f, HCA_CMD_CREATE_CQ, &in, sizeof(in), sizeof(struct hca_cq_out),
			    HCA_STATUS_BAD_ADDR);
	cr_assert_str_eq(syn_field(HCA_CMD_CREATE_CQ, syn, buf, sizeof(buf)), "ring_addr");
	in = cq_in(&f, eqn, 7);
	in.db_addr = UNMAPPED;
	syn = expect_status(&f, HCA_CMD_CREATE_CQ, &in, sizeof(in), sizeof(struct hca_cq_out),
			    HCA_STATUS_BAD_ADDR);
	cr_assert_str_eq(syn_field(HCA_CMD_CREATE_CQ, syn, buf, sizeof(buf)), "db_addr");
	/* none of the rejected commands created a CQ on the EQ: it can be destroyed */
	free_handle(&f, HCA_CMD_DESTROY_EQ, eqn);
	fwt_close(&f);
}

Test(firmware, create_cq_on_unknown_eq_is_bad_handle)
{
	struct fwt f;
	struct hca_cq_in in;

	fwt_open(&f);
	in = cq_in(&f, 63, 7);
	EXPECT_BAD_HANDLE(&f, HCA_CMD_CREATE_CQ, &in, "eqn");
	in.eqn = 1000;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_CREATE_CQ, &in, "eqn");
	fwt_close(&f);
}

Test(firmware, create_eq_log_size_0_and_17_are_bad_param)
{
	struct fwt f;
	struct hca_eq_create_in in = { .vector = 1 };
	struct hca_handle_out out;

	fwt_open(&f);
	in.ring_addr = fwt_dma(&f, HCA_EQE_BYTES << 4);
	in.log_size = 0;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_EQ, &in, BAD_PARAM, "log_size");
	in.log_size = 17;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_EQ, &in, BAD_PARAM, "log_size");
	in.log_size = 0xffffffff;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_EQ, &in, BAD_PARAM, "log_size");
	in.log_size = 4;
	in.vector = SIM_PCIE_MAX_VECTORS;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_EQ, &in, BAD_PARAM, "vector");
	in.vector = 1;
	in.log_size = 8; /* 8 KiB needed, 512 bytes before the end of the pool's mapping */
	in.ring_addr = f.pool_iova + POOL_BYTES - 512;
	expect_status(&f, HCA_CMD_CREATE_EQ, &in, sizeof(in), sizeof(out), HCA_STATUS_BAD_ADDR);
	in.ring_addr = GUARD(&f);
	expect_status(&f, HCA_CMD_CREATE_EQ, &in, sizeof(in), sizeof(out), HCA_STATUS_BAD_ADDR);
	in.log_size = 4;
	in.ring_addr = fwt_dma(&f, HCA_EQE_BYTES << 4);
	EXPECT_OK(&f, HCA_CMD_CREATE_EQ, &in, &out);
	free_handle(&f, HCA_CMD_DESTROY_EQ, out.handle);
	fwt_close(&f);
}

Test(firmware, modify_qp_attr_mask_above_bit_20_is_bad_param)
{
	struct fwt f;
	struct hca_qp_modify_in in = { 0 };
	struct hca_handle_in q;
	struct hca_qp_query_out before, after;
	uint32_t pd, eqn, cq, qpn;
	const uint32_t masks[] = { 1u << 21, 1u << 31, HCA_QPA_STATE | (1u << 22), 0xffffffffu };

	fwt_open(&f);
	pd = alloc_pd(&f);
	eqn = create_eq(&f);
	cq = create_cq(&f, eqn);
	qpn = create_qp(&f, pd, cq);
	q = (struct hca_handle_in){ .handle = qpn };
	EXPECT_OK(&f, HCA_CMD_QUERY_QP, &q, &before);
	for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		in.qpn = qpn;
		in.attr_mask = masks[i];
		in.next_state = HCA_QPS_INIT;
		EXPECT_FIELD(&f, HCA_CMD_MODIFY_QP, &in, BAD_PARAM, "attr_mask");
	}
	EXPECT_OK(&f, HCA_CMD_QUERY_QP, &q, &after);
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0, "QP changed by rejected modifies");
	cr_assert_eq(after.state, HCA_QPS_RESET);
	free_handle(&f, HCA_CMD_DESTROY_QP, qpn);
	free_handle(&f, HCA_CMD_DESTROY_CQ, cq);
	free_handle(&f, HCA_CMD_DESTROY_EQ, eqn);
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd);
	fwt_close(&f);
}

Test(firmware, resize_cq_bad_fields_leave_the_cq_as_it_was)
{
	struct fwt f;
	struct hca_cq_resize_in in = { 0 };
	struct hca_cq_out out;
	uint32_t eqn, cq, syn;
	char buf[32];

	fwt_open(&f);
	eqn = create_eq(&f);
	cq = create_cq(&f, eqn);
	in.cqn = cq;
	in.cqe = 31;
	in.log_size = 5;
	in.ring_addr = fwt_dma(&f, HCA_CQE_BYTES << 5);
	in.cqn = 999;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_RESIZE_CQ, &in, "cqn");
	in.cqn = cq;
	in.cqe = 0;
	EXPECT_FIELD(&f, HCA_CMD_RESIZE_CQ, &in, BAD_PARAM, "cqe");
	in.cqe = 31;
	in.log_size = 6;
	EXPECT_FIELD(&f, HCA_CMD_RESIZE_CQ, &in, BAD_PARAM, "log_size");
	in.log_size = 5;
	in.ring_addr = GUARD(&f);
	syn = expect_status(&f, HCA_CMD_RESIZE_CQ, &in, sizeof(in), sizeof(out),
			    HCA_STATUS_BAD_ADDR);
	cr_assert_str_eq(syn_field(HCA_CMD_RESIZE_CQ, syn, buf, sizeof(buf)), "ring_addr");
	in.ring_addr = fwt_dma(&f, HCA_CQE_BYTES << 5);
	EXPECT_OK(&f, HCA_CMD_RESIZE_CQ, &in, &out);
	cr_assert_eq(out.cqn, cq);
	cr_assert_eq(out.cqe, 31);
	free_handle(&f, HCA_CMD_DESTROY_CQ, cq);
	free_handle(&f, HCA_CMD_DESTROY_EQ, eqn);
	fwt_close(&f);
}

Test(firmware, create_qp_bad_fields_name_the_field_and_take_no_reference)
{
	struct fwt f;
	struct hca_qp_create_in ok = { .type = HCA_QPT_UD,
				       .caps = { .max_send_wr = 2, .max_recv_wr = 2,
						 .max_send_sge = 1, .max_recv_sge = 1 } },
				in;
	uint32_t pd, eqn, cq, syn;
	char buf[32], val[16];
	unsigned max_wr, max_sge;

	fwt_open(&f);
	cr_assert_eq(hcasim_config_get("hca.max_qp_wr", val, sizeof(val)), 0);
	max_wr = (unsigned)strtoul(val, NULL, 0);
	cr_assert_eq(hcasim_config_get("hca.max_sge", val, sizeof(val)), 0);
	max_sge = (unsigned)strtoul(val, NULL, 0);
	pd = alloc_pd(&f);
	eqn = create_eq(&f);
	cq = create_cq(&f, eqn);
	ok.pdn = pd;
	ok.send_cqn = ok.recv_cqn = cq;
	ok.sq_addr = fwt_dma(&f, hca_wq_entries(2) * hca_sq_stride(1, 0));
	ok.rq_addr = fwt_dma(&f, hca_wq_entries(2) * hca_rq_stride(1));
	ok.db_addr = fwt_dma(&f, 8);
	in = ok;
	in.type = 5;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_QP, &in, BAD_PARAM, "type");
	in.type = 8; /* RAW_PACKET: not a type this device implements */
	EXPECT_FIELD(&f, HCA_CMD_CREATE_QP, &in, BAD_PARAM, "type");
	in = ok;
	in.sq_sig_all = 2;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_QP, &in, BAD_PARAM, "sq_sig_all");
	in = ok;
	in.pdn = 777;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_CREATE_QP, &in, "pdn");
	in = ok;
	in.recv_cqn = 777;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_CREATE_QP, &in, "recv_cqn");
	in = ok;
	in.has_srq = 1;
	in.srqn = 5;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_CREATE_QP, &in, "srqn");
	in = ok;
	in.caps.max_send_wr = max_wr + 1;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_QP, &in, BAD_PARAM, "caps.max_send_wr");
	in = ok;
	in.caps.max_recv_sge = max_sge + 1;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_QP, &in, BAD_PARAM, "caps.max_recv_sge");
	in = ok;
	in.caps.max_inline = 100000;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_QP, &in, BAD_PARAM, "caps.max_inline");
	in = ok;
	in.sq_addr = GUARD(&f);
	syn = expect_status(&f, HCA_CMD_CREATE_QP, &in, sizeof(in),
			    sizeof(struct hca_qp_create_out), HCA_STATUS_BAD_ADDR);
	cr_assert_str_eq(syn_field(HCA_CMD_CREATE_QP, syn, buf, sizeof(buf)), "sq_addr");
	in = ok;
	in.db_addr = UNMAPPED;
	syn = expect_status(&f, HCA_CMD_CREATE_QP, &in, sizeof(in),
			    sizeof(struct hca_qp_create_out), HCA_STATUS_BAD_ADDR);
	cr_assert_str_eq(syn_field(HCA_CMD_CREATE_QP, syn, buf, sizeof(buf)), "db_addr");
	/* no rejected create took a reference: CQ and PD go at once */
	free_handle(&f, HCA_CMD_DESTROY_CQ, cq);
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd);
	free_handle(&f, HCA_CMD_DESTROY_EQ, eqn);
	fwt_close(&f);
}

Test(firmware, create_mkey_bad_fields_name_the_field_and_take_no_reference)
{
	struct fwt f;
	struct hca_mkey_in ok = { .access = HCA_ACCESS_LOCAL_WRITE, .length = PAGE }, in;
	uint8_t *ro;
	int64_t ro_map;
	uint64_t ro_iova;
	uint32_t pd, syn;
	char buf[32];

	fwt_open(&f);
	pd = alloc_pd(&f);
	ok.pdn = pd;
	ok.start = ok.iova = fwt_dma(&f, PAGE);
	in = ok;
	in.pdn = 4242;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_CREATE_MKEY, &in, "pdn");
	in = ok;
	in.access = HCA_ACCESS_LOCAL_WRITE | 0x20; /* 0x10 is MW_BIND */
	EXPECT_FIELD(&f, HCA_CMD_CREATE_MKEY, &in, BAD_PARAM, "access");
	in.access = HCA_ACCESS_REMOTE_WRITE;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_MKEY, &in, BAD_PARAM, "access");
	in.access = HCA_ACCESS_REMOTE_ATOMIC | HCA_ACCESS_REMOTE_READ;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_MKEY, &in, BAD_PARAM, "access");
	in = ok;
	in.length = 0;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_MKEY, &in, BAD_PARAM, "length");
	in = ok;
	in.iova = UINT64_MAX - 100;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_MKEY, &in, BAD_PARAM, "iova");
	in = ok;
	in.start = GUARD(&f);
	syn = expect_status(&f, HCA_CMD_CREATE_MKEY, &in, sizeof(in), sizeof(struct hca_mkey_out),
			    HCA_STATUS_BAD_ADDR);
	cr_assert_str_eq(syn_field(HCA_CMD_CREATE_MKEY, syn, buf, sizeof(buf)), "start");
	/* writable access over memory mapped read-only for the device */
	cr_assert_eq(posix_memalign((void **)&ro, PAGE, PAGE), 0);
	ro_map = sim_pcie_map(f.fn, ro, PAGE, SIM_DMA_READ, &ro_iova);
	cr_assert_gt(ro_map, 0);
	in = ok;
	in.start = ro_iova;
	expect_status(&f, HCA_CMD_CREATE_MKEY, &in, sizeof(in), sizeof(struct hca_mkey_out),
		      HCA_STATUS_BAD_ADDR);
	in.access = HCA_ACCESS_REMOTE_READ; /* read-only region: fine */
	{
		struct hca_mkey_out out;

		EXPECT_OK(&f, HCA_CMD_CREATE_MKEY, &in, &out);
		free_handle(&f, HCA_CMD_DESTROY_MKEY, out.lkey);
	}
	/* no rejected create took a reference on the PD */
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd);
	sim_pcie_unmap(f.fn, ro_map);
	free(ro);
	fwt_close(&f);
}

Test(firmware, srq_bad_fields_name_the_field_and_change_nothing)
{
	struct fwt f;
	struct hca_srq_create_in ok = { .max_wr = 15, .max_sge = 1 }, in;
	struct hca_srq_modify_in mod = { 0 };
	struct hca_srq_out out, before, after;
	struct hca_handle_in q;
	uint32_t pd, syn;

	fwt_open(&f);
	pd = alloc_pd(&f);
	ok.pdn = pd;
	ok.ring_addr = fwt_dma(&f, hca_wq_entries(16) * hca_rq_stride(1));
	ok.db_addr = fwt_dma(&f, 8);
	in = ok;
	in.max_wr = 0;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_SRQ, &in, BAD_PARAM, "max_wr");
	in = ok;
	in.srq_limit = 3;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_SRQ, &in, BAD_PARAM, "srq_limit");
	in = ok;
	in.max_sge = 1000;
	EXPECT_FIELD(&f, HCA_CMD_CREATE_SRQ, &in, BAD_PARAM, "max_sge");
	EXPECT_OK(&f, HCA_CMD_CREATE_SRQ, &ok, &out);
	cr_assert_geq(out.max_wr, 15);
	q = (struct hca_handle_in){ .handle = out.srqn };
	EXPECT_OK(&f, HCA_CMD_QUERY_SRQ, &q, &before);
	mod.srqn = out.srqn;
	mod.attr_mask = 2;
	mod.srq_limit = out.max_wr + 1;
	EXPECT_FIELD(&f, HCA_CMD_MODIFY_SRQ, &mod, BAD_PARAM, "srq_limit");
	mod.attr_mask = 4;
	mod.srq_limit = 1;
	EXPECT_FIELD(&f, HCA_CMD_MODIFY_SRQ, &mod, BAD_PARAM, "attr_mask");
	mod.attr_mask = 1 | 2;
	mod.max_wr = 64;
	syn = expect_status(&f, HCA_CMD_MODIFY_SRQ, &mod, sizeof(mod), sizeof(out),
			    HCA_STATUS_NOT_SUPPORTED);
	(void)syn;
	mod.srqn = 999;
	mod.attr_mask = 2;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_MODIFY_SRQ, &mod, "srqn");
	EXPECT_OK(&f, HCA_CMD_QUERY_SRQ, &q, &after);
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0,
		     "SRQ changed by rejected modifies");
	cr_assert_eq(after.srq_limit, 0);
	/* the SRQ holds the PD until destroyed */
	q.handle = pd;
	expect_status(&f, HCA_CMD_DEALLOC_PD, &q, sizeof(q), sizeof(struct hca_cmd_empty),
		      HCA_STATUS_BUSY);
	free_handle(&f, HCA_CMD_DESTROY_SRQ, out.srqn);
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd);
	fwt_close(&f);
}

Test(firmware, qp_commands_on_bad_qpn_or_state_are_rejected)
{
	struct fwt f;
	struct hca_qp_modify_in mod = { 0 };
	struct hca_qp_force_in force = { 0 };
	struct hca_handle_in q;
	struct hca_qp_query_out before, after;
	uint32_t pd, eqn, cq, qpn;

	fwt_open(&f);
	pd = alloc_pd(&f);
	eqn = create_eq(&f);
	cq = create_cq(&f, eqn);
	qpn = create_qp(&f, pd, cq);
	q = (struct hca_handle_in){ .handle = qpn };
	EXPECT_OK(&f, HCA_CMD_QUERY_QP, &q, &before);
	mod.qpn = qpn + 1000;
	mod.attr_mask = HCA_QPA_STATE;
	mod.next_state = HCA_QPS_RESET;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_MODIFY_QP, &mod, "qpn");
	mod.qpn = qpn;
	mod.next_state = HCA_QPS_COUNT;
	EXPECT_FIELD(&f, HCA_CMD_MODIFY_QP, &mod, BAD_PARAM, "next_state");
	force.qpn = 0x1000000;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DEBUG_FORCE_QP_STATE, &force, "qpn");
	force.qpn = qpn;
	force.state = HCA_QPS_COUNT;
	EXPECT_FIELD(&f, HCA_CMD_DEBUG_FORCE_QP_STATE, &force, BAD_PARAM, "state");
	EXPECT_OK(&f, HCA_CMD_QUERY_QP, &q, &after);
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0, "QP changed");
	free_handle(&f, HCA_CMD_DESTROY_QP, qpn);
	free_handle(&f, HCA_CMD_DESTROY_CQ, cq);
	free_handle(&f, HCA_CMD_DESTROY_EQ, eqn);
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd);
	fwt_close(&f);
}

/* ================= handles ================= */

Test(firmware, handles_never_allocated_are_bad_handle)
{
	struct fwt f;
	struct hca_handle_in in = { 0 };
	const uint32_t never[] = { 0, 1, 999, 0xffffff, 0xffffffffu };

	fwt_open(&f);
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		in.handle = never[i];
		EXPECT_BAD_HANDLE(&f, HCA_CMD_DEALLOC_PD, &in, "handle");
		EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_CQ, &in, "handle");
		EXPECT_BAD_HANDLE(&f, HCA_CMD_QUERY_QP, &in, "handle");
		EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_QP, &in, "handle");
		EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_MKEY, &in, "handle");
		EXPECT_BAD_HANDLE(&f, HCA_CMD_QUERY_SRQ, &in, "handle");
		EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_SRQ, &in, "handle");
	}
	in.handle = 63; /* an EQ slot never created */
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_EQ, &in, "handle");
	in.handle = HCA_EQ_MAX;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_EQ, &in, "handle");
	fwt_close(&f);
}

Test(firmware, stale_mkey_with_other_variant_is_bad_handle)
{
	struct fwt f;
	struct hca_handle_in in;
	uint32_t pd, lkey;

	fwt_open(&f);
	pd = alloc_pd(&f);
	lkey = create_mkey(&f, pd);
	cr_assert_neq(lkey & 0xff, 0, "first variant is 1");
	in = (struct hca_handle_in){ .handle = (lkey & ~0xffu) | ((lkey + 1) & 0xff) };
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_MKEY, &in, "handle");
	in.handle = lkey & ~0xffu; /* variant 0 */
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_MKEY, &in, "handle");
	in.handle = lkey + 0x100; /* next index, never registered */
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_MKEY, &in, "handle");
	/* the real key is untouched and still destroys; then it is stale too */
	free_handle(&f, HCA_CMD_DESTROY_MKEY, lkey);
	in.handle = lkey;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_MKEY, &in, "handle");
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd);
	fwt_close(&f);
}

Test(firmware, destroyed_objects_are_bad_handle)
{
	struct fwt f;
	struct hca_handle_in in;
	uint32_t pd, eqn, cq, qpn;

	fwt_open(&f);
	pd = alloc_pd(&f);
	eqn = create_eq(&f);
	cq = create_cq(&f, eqn);
	qpn = create_qp(&f, pd, cq);
	free_handle(&f, HCA_CMD_DESTROY_QP, qpn);
	in = (struct hca_handle_in){ .handle = qpn };
	EXPECT_BAD_HANDLE(&f, HCA_CMD_QUERY_QP, &in, "handle");
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_QP, &in, "handle");
	free_handle(&f, HCA_CMD_DESTROY_CQ, cq);
	in.handle = cq;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_CQ, &in, "handle");
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd);
	in.handle = pd;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DEALLOC_PD, &in, "handle");
	free_handle(&f, HCA_CMD_DESTROY_EQ, eqn);
	in.handle = eqn;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_EQ, &in, "handle");
	fwt_close(&f);
}

/* ================= objects in use ================= */

Test(firmware, dealloc_pd_with_an_mkey_is_busy)
{
	struct fwt f;
	struct hca_handle_in in;
	uint32_t pd, lkey, syn;

	fwt_open(&f);
	pd = alloc_pd(&f);
	lkey = create_mkey(&f, pd);
	in = (struct hca_handle_in){ .handle = pd };
	syn = expect_status(&f, HCA_CMD_DEALLOC_PD, &in, sizeof(in), sizeof(struct hca_cmd_empty),
			    HCA_STATUS_BUSY);
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_BUSY);
	cr_assert_eq(HCA_SYN_DETAIL(syn), 1, "users %u", HCA_SYN_DETAIL(syn));
	/* nothing changed: both objects are still live and go in order */
	free_handle(&f, HCA_CMD_DESTROY_MKEY, lkey);
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd);
	fwt_close(&f);
}

Test(firmware, destroy_cq_used_by_a_qp_is_busy)
{
	struct fwt f;
	struct hca_handle_in in, q;
	struct hca_qp_query_out before, after;
	uint32_t pd, eqn, cq, qpn, syn;

	fwt_open(&f);
	pd = alloc_pd(&f);
	eqn = create_eq(&f);
	cq = create_cq(&f, eqn);
	qpn = create_qp(&f, pd, cq);
	q = (struct hca_handle_in){ .handle = qpn };
	EXPECT_OK(&f, HCA_CMD_QUERY_QP, &q, &before);
	in = (struct hca_handle_in){ .handle = cq };
	syn = expect_status(&f, HCA_CMD_DESTROY_CQ, &in, sizeof(in), sizeof(struct hca_cmd_empty),
			    HCA_STATUS_BUSY);
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_BUSY);
	cr_assert_eq(HCA_SYN_DETAIL(syn), 2, "send and receive use: %u", HCA_SYN_DETAIL(syn));
	in.handle = pd;
	syn = expect_status(&f, HCA_CMD_DEALLOC_PD, &in, sizeof(in), sizeof(struct hca_cmd_empty),
			    HCA_STATUS_BUSY);
	cr_assert_eq(HCA_SYN_DETAIL(syn), 1);
	EXPECT_OK(&f, HCA_CMD_QUERY_QP, &q, &after);
	cr_assert_eq(memcmp(&before, &after, sizeof(before)), 0, "QP changed");
	cr_assert_eq(after.send_cqn, cq);
	free_handle(&f, HCA_CMD_DESTROY_QP, qpn);
	free_handle(&f, HCA_CMD_DESTROY_CQ, cq);
	free_handle(&f, HCA_CMD_DESTROY_EQ, eqn);
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd);
	fwt_close(&f);
}

Test(firmware, destroy_eq_with_a_cq_reporting_to_it_is_busy)
{
	struct fwt f;
	struct hca_handle_in in;
	struct hca_cq_resize_in rs = { 0 };
	struct hca_cq_out out;
	uint32_t eqn, cq, syn;

	fwt_open(&f);
	eqn = create_eq(&f);
	cq = create_cq(&f, eqn);
	in = (struct hca_handle_in){ .handle = eqn };
	syn = expect_status(&f, HCA_CMD_DESTROY_EQ, &in, sizeof(in), sizeof(struct hca_cmd_empty),
			    HCA_STATUS_BUSY);
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_BUSY);
	cr_assert_eq(HCA_SYN_DETAIL(syn), 1);
	/* the CQ still works (resize), then both go */
	rs.cqn = cq;
	rs.cqe = 15;
	rs.log_size = 4;
	rs.ring_addr = fwt_dma(&f, HCA_CQE_BYTES << 4);
	EXPECT_OK(&f, HCA_CMD_RESIZE_CQ, &rs, &out);
	cr_assert_eq(out.cqe, 15);
	free_handle(&f, HCA_CMD_DESTROY_CQ, cq);
	free_handle(&f, HCA_CMD_DESTROY_EQ, eqn);
	fwt_close(&f);
}

/* ================= limits and device state ================= */

Test(firmware, alloc_pd_beyond_max_pd_is_no_resources)
{
	struct fwt f;
	struct hca_cmd_empty none = { 0 };
	uint32_t pd[2], again, syn;

	tb_config("hca.max_pd", "2");
	fwt_open(&f);
	pd[0] = alloc_pd(&f);
	pd[1] = alloc_pd(&f);
	cr_assert_neq(pd[0], pd[1]);
	syn = expect_status(&f, HCA_CMD_ALLOC_PD, &none, sizeof(none),
			    sizeof(struct hca_handle_out), HCA_STATUS_NO_RESOURCES);
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_LIMIT);
	expect_status(&f, HCA_CMD_ALLOC_PD, &none, sizeof(none), sizeof(struct hca_handle_out),
		      HCA_STATUS_NO_RESOURCES);
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd[0]);
	again = alloc_pd(&f);
	expect_status(&f, HCA_CMD_ALLOC_PD, &none, sizeof(none), sizeof(struct hca_handle_out),
		      HCA_STATUS_NO_RESOURCES);
	free_handle(&f, HCA_CMD_DEALLOC_PD, again);
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd[1]);
	fwt_close(&f);
}

Test(firmware, init_hca_twice_is_bad_state)
{
	struct fwt f;
	struct hca_init_hca_in init = { 0 };
	uint32_t syn;

	fwt_open(&f);
	syn = expect_status(&f, HCA_CMD_INIT_HCA, &init, sizeof(init),
			    sizeof(struct hca_cmd_empty), HCA_STATUS_BAD_STATE);
	(void)syn;
	cr_assert(sim_pcie_mmio_read32(f.fn, HCA_REG_DEV_STATUS) & HCA_DEV_STATUS_INITIALIZED,
		  "device no longer initialized");
	free_handle(&f, HCA_CMD_DEALLOC_PD, alloc_pd(&f));
	fwt_close(&f);
}

Test(firmware, commands_after_teardown_are_not_initialized)
{
	struct fwt f;
	struct hca_cmd_empty none = { 0 };
	struct hca_hca_cap cap;
	struct hca_port_in port = { .port = 1 };
	struct hca_handle_in in;
	struct hca_cq_in cq;
	uint32_t pd_old, lkey_old, pd, lkey, syn;
	struct hca_init_hca_in init = { 0 };
	void *store;
	int64_t store_map;
	const struct {
		uint16_t op;
		const void *in;
		size_t in_len, out_len;
	} cmds[] = {
		{ HCA_CMD_ALLOC_PD, &none, sizeof(none), sizeof(struct hca_handle_out) },
		{ HCA_CMD_QUERY_PORT, &port, sizeof(port), sizeof(struct hca_port_info) },
		{ HCA_CMD_DEALLOC_PD, &in, sizeof(in), sizeof(none) },
		{ HCA_CMD_CREATE_CQ, &cq, sizeof(cq), sizeof(struct hca_cq_out) },
		{ HCA_CMD_TEARDOWN_HCA, &none, sizeof(none), sizeof(none) },
	};

	tb_config("hca.max_qp", "62"); /* a small QP context store: (2 + 62) slots */
	fwt_open(&f);
	pd_old = alloc_pd(&f);
	lkey_old = create_mkey(&f, pd_old);
	EXPECT_OK(&f, HCA_CMD_TEARDOWN_HCA, &none, &none);
	cr_assert_eq(sim_pcie_mmio_read32(f.fn, HCA_REG_DEV_STATUS) & HCA_DEV_STATUS_INITIALIZED,
		     0);
	in = (struct hca_handle_in){ .handle = pd_old };
	cq = cq_in(&f, 0, 7);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		uint8_t st = fw_cmd(&f, cmds[i].op, cmds[i].in, cmds[i].in_len, NULL,
				    cmds[i].out_len, &syn);

		cr_assert_eq(st, HCA_STATUS_NOT_INITIALIZED, "%s after teardown: status %s",
			     cmd_name(cmds[i].op), hca_status_name(st));
		/* the device still answers what it can answer */
		EXPECT_OK(&f, HCA_CMD_QUERY_HCA_CAP, &none, &cap);
	}
	/* INIT_HCA needs a QP context store that is big enough and mapped */
	cr_assert_eq(posix_memalign(&store, PAGE, 64 * (size_t)cap.qpc_entry_bytes), 0);
	store_map = sim_pcie_map(f.fn, store, 64 * (size_t)cap.qpc_entry_bytes,
				 SIM_DMA_READ | SIM_DMA_WRITE, &init.qpc_base);
	cr_assert_gt(store_map, 0);
	init.qpc_bytes = 64 * (uint64_t)cap.qpc_entry_bytes - 1;
	cr_assert_eq(fw_cmd(&f, HCA_CMD_INIT_HCA, &init, sizeof(init), NULL, sizeof(none), &syn),
		     HCA_STATUS_BAD_PARAM, "a store too small for max_qp");
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_FIELD);
	init.qpc_bytes = 64 * (uint64_t)cap.qpc_entry_bytes;
	init.qpc_base += 4096; /* runs past the mapping */
	cr_assert_eq(fw_cmd(&f, HCA_CMD_INIT_HCA, &init, sizeof(init), NULL, sizeof(none), &syn),
		     HCA_STATUS_BAD_ADDR, "a store outside the mapping");
	init.qpc_base -= 4096;
	/* and comes back */
	EXPECT_OK(&f, HCA_CMD_INIT_HCA, &init, &none);
	cr_assert(sim_pcie_mmio_read32(f.fn, HCA_REG_DEV_STATUS) & HCA_DEV_STATUS_INITIALIZED);
	expect_alive(&f);
	/* objects of before the teardown are gone */
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DEALLOC_PD, &in, "handle");
	in.handle = lkey_old;
	EXPECT_BAD_HANDLE(&f, HCA_CMD_DESTROY_MKEY, &in, "handle");
	pd = alloc_pd(&f);
	lkey = create_mkey(&f, pd);
	free_handle(&f, HCA_CMD_DESTROY_MKEY, lkey);
	free_handle(&f, HCA_CMD_DEALLOC_PD, pd);
	fwt_close(&f);
	free(store);
}

/* EQ 0 (the driver's: it takes DMA fault events) loses its ring from the IOMMU. The next
 * fault's report faults once on the ring; the EQ is marked broken so the report of that fault
 * cannot loop back into it (it used to recurse until the stack overflowed), and the device
 * keeps executing commands. */
Test(firmware, eq_ring_that_faults_breaks_the_eq_without_recursion)
{
	struct fwt f;
	struct raw r;
	uint32_t syn;
	uint64_t faults;

	tb_config("driver.cmd_completion", "poll"); /* commands never touch EQ 0 */
	fwt_open(&f);
	/* The driver's first mappings on device 0 are its command page, the QP context store
	 * and EQ 0's ring. */
	cr_assert_eq(sim_pcie_unmap(f.fn, 3), 0);
	faults = hcasim_dma_faults(0);
	r = raw_for(&f, HCA_CMD_ALLOC_PD, sizeof(struct hca_cmd_empty),
		    sizeof(struct hca_handle_out));
	r.in_addr = UNMAPPED;
	cr_assert_eq(raw_run(&f, &r, &syn), HCA_STATUS_BAD_ADDR);
	hcasim_run_for_ps(10000000);
	cr_assert_eq(hcasim_dma_faults(0), faults + 2,
		     "the input fault and one fault writing its report: %llu",
		     (unsigned long long)(hcasim_dma_faults(0) - faults));
	/* Later reports are dropped by the broken EQ instead of faulting again. */
	cr_assert_eq(raw_run(&f, &r, &syn), HCA_STATUS_BAD_ADDR);
	hcasim_run_for_ps(10000000);
	cr_assert_eq(hcasim_dma_faults(0), faults + 3);
	expect_alive(&f);
	fwt_close(&f);
}

/* ================= multicast groups (docs/multicast.md) ================= */

static uint32_t create_ud_qp(struct fwt *f, uint32_t pdn, uint32_t cqn, uint8_t flags,
			     uint8_t status, const char *field)
{
	struct hca_qp_create_in in = qp_in(f, HCA_QPT_UD, pdn, cqn);
	struct hca_qp_create_out out;

	in.flags = flags;
	if (field) {
		expect_field(f, HCA_CMD_CREATE_QP, &in, sizeof(in), status, field);
		in.type = HCA_QPT_RC; /* the same flags on RC */
		expect_field(f, HCA_CMD_CREATE_QP, &in, sizeof(in), status, field);
		return 0;
	}
	EXPECT_OK(f, HCA_CMD_CREATE_QP, &in, &out);
	return out.qpn;
}

Test(firmware, attach_and_detach_mcg_check_each_field_and_change_nothing_when_refused)
{
	struct fwt f;
	struct hca_cmd_empty none = { 0 };
	struct hca_hca_cap cap;
	struct hca_handle_in h;
	uint32_t pdn, cqn, rc, ud, blk, syn;
	struct hca_mcg_in in = { .lid = 0xc001, .gid = { 0xff, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
							 0, 0, 0, 1 } },
			  bad;

	fwt_open(&f);
	EXPECT_OK(&f, HCA_CMD_QUERY_HCA_CAP, &none, &cap);
	cr_assert(cap.cap_flags & HCA_CAP_UD_MCAST);
	pdn = alloc_pd(&f);
	cqn = create_cq(&f, create_eq(&f));
	rc = create_qp(&f, pdn, cqn);
	ud = create_ud_qp(&f, pdn, cqn, 0, 0, NULL);
	/* BLOCK_SELF_MCAST_LB is UD's; no other flag exists. */
	blk = create_ud_qp(&f, pdn, cqn, HCA_QP_CREATE_BLOCK_SELF_MCAST_LB, 0, NULL);
	cr_assert_neq(blk, 0);
	create_ud_qp(&f, pdn, cqn, 2, HCA_STATUS_BAD_PARAM, "flags");
	{
		struct hca_qp_create_in q = { .type = HCA_QPT_RC,
					      .flags = HCA_QP_CREATE_BLOCK_SELF_MCAST_LB };

		EXPECT_FIELD(&f, HCA_CMD_CREATE_QP, &q, BAD_PARAM, "flags");
	}
	/* Each check of ATTACH_MCG and DETACH_MCG, in order. */
	for (int op = 0; op < 2; op++) {
		uint16_t opc = op ? HCA_CMD_DETACH_MCG : HCA_CMD_ATTACH_MCG;

		bad = in;
		bad.qpn = 0x999;
		EXPECT_BAD_HANDLE(&f, opc, &bad, "qpn");
		bad.qpn = rc;
		EXPECT_FIELD(&f, opc, &bad, BAD_PARAM, "qpn");
		bad.qpn = ud;
		bad.rsvd = 1;
		EXPECT_FIELD(&f, opc, &bad, BAD_PARAM, "rsvd");
		bad.rsvd = 0;
		bad.gid[0] = 0xfe;
		EXPECT_FIELD(&f, opc, &bad, BAD_PARAM, "gid");
		bad.gid[0] = 0xff;
		bad.lid = 0xbfff;
		EXPECT_FIELD(&f, opc, &bad, BAD_PARAM, "lid");
		bad.lid = 0xffff;
		EXPECT_FIELD(&f, opc, &bad, BAD_PARAM, "lid");
	}
	in.qpn = ud;
	/* Detach before attach: not in the group. */
	EXPECT_FIELD(&f, HCA_CMD_DETACH_MCG, &in, BAD_PARAM, "gid");
	cr_assert_eq(sim_sm_mcast_ports(in.lid, in.gid), 0, "a refused command made a group");
	EXPECT_OK(&f, HCA_CMD_ATTACH_MCG, &in, &none);
	EXPECT_OK(&f, HCA_CMD_ATTACH_MCG, &in, &none); /* again: no change */
	cr_assert_eq(sim_sm_mcast_ports(in.lid, in.gid), 1, "the device's port joined");
	/* An attached QP cannot be destroyed: BUSY, detail 1 group. */
	h.handle = ud;
	h.rsvd = 0;
	syn = expect_status(&f, HCA_CMD_DESTROY_QP, &h, sizeof(h), sizeof(none), HCA_STATUS_BUSY);
	cr_assert_eq(HCA_SYN_REASON(syn), HCA_SYN_BUSY);
	cr_assert_eq(HCA_SYN_DETAIL(syn), 1);
	EXPECT_OK(&f, HCA_CMD_DETACH_MCG, &in, &none);
	cr_assert_eq(sim_sm_mcast_ports(in.lid, in.gid), 0, "the last QP out removes the group");
	/* One detach undid both attaches. */
	EXPECT_FIELD(&f, HCA_CMD_DETACH_MCG, &in, BAD_PARAM, "gid");
	free_handle(&f, HCA_CMD_DESTROY_QP, ud);
	free_handle(&f, HCA_CMD_DESTROY_QP, blk);
	free_handle(&f, HCA_CMD_DESTROY_QP, rc);
	fwt_close(&f);
}

/* ================= QP context backing store ================= */

struct qpc_warn {
	int n;           /* warn.qpc events seen */
	char last[256];  /* the last one's text */
};

static void qpc_warn_seen(void *arg, uint64_t t_ps, int dev, const char *event,
			  const char *fields)
{
	struct qpc_warn *w = arg;

	(void)t_ps;
	(void)dev;
	if (!strcmp(event, "warn.qpc_invalid") || !strcmp(event, "warn.qpc_differs")) {
		w->n++;
		snprintf(w->last, sizeof(w->last), "%s", fields);
	}
}

/* A modify that changes nothing but needs the QP's context: INIT -> INIT. */
static void touch_qp(struct fwt *f, uint32_t qpn, uint8_t next)
{
	struct hca_qp_modify_in mod = { .qpn = qpn, .attr_mask = HCA_QPA_STATE, .next_state = next };
	struct hca_qp_modify_out out;

	if (next == HCA_QPS_INIT)
		mod.attr_mask |= HCA_QPA_PKEY_INDEX | HCA_QPA_PORT | HCA_QPA_ACCESS_FLAGS;
	mod.attr.port_num = 1;
	EXPECT_OK(f, HCA_CMD_MODIFY_QP, &mod, &out);
	cr_assert_eq(out.state, next);
}

static uint64_t qpc_corrupt(void)
{
	struct hcasim_dev_counters c;

	cr_assert_eq(hcasim_dev_counters(0, &c), 0);
	return c.qpc_corrupt;
}

/* The driver (here the test) owns the backing store: what the device writes there is the
 * architected image (model/hw/formats.def hca_qpc), no host pointers in it; an image changed
 * behind the device's back is reported (warn.qpc naming the field, the qpc_corrupt counter)
 * and not used: the QP carries on with the context the device holds on chip, and the next
 * write-back restores the slot. With one cache entry, every use of the other QP evicts. */
Test(firmware, qpc_slot_holds_the_image_and_a_corrupted_one_is_reported_not_used)
{
	struct fwt f;
	struct hca_cmd_empty none = { 0 };
	struct hca_hca_cap cap;
	struct hca_init_hca_in init = { 0 };
	struct hca_handle_in q;
	struct hca_qp_query_out before, after;
	struct hca_qp_force_in force;
	struct hca_qpc a_img, b_img, good;
	struct hm_qp dec;
	struct qpc_warn w = { 0 };
	const char *why = NULL;
	uint8_t *store;
	int64_t store_map;
	uint32_t pd, eqn, cq, qa, qb;

	tb_config("hca.qpc_cache_entries", "1");
	tb_config("hca.max_qp", "62"); /* a 64-slot store */
	fwt_open(&f);
	EXPECT_OK(&f, HCA_CMD_QUERY_HCA_CAP, &none, &cap);
	EXPECT_OK(&f, HCA_CMD_TEARDOWN_HCA, &none, &none);
	cr_assert_eq(posix_memalign((void **)&store, PAGE, 64 * (size_t)cap.qpc_entry_bytes), 0);
	memset(store, 0, 64 * (size_t)cap.qpc_entry_bytes);
	store_map = sim_pcie_map(f.fn, store, 64 * (size_t)cap.qpc_entry_bytes,
				 SIM_DMA_READ | SIM_DMA_WRITE, &init.qpc_base);
	cr_assert_gt(store_map, 0);
	init.qpc_bytes = 64 * (uint64_t)cap.qpc_entry_bytes;
	EXPECT_OK(&f, HCA_CMD_INIT_HCA, &init, &none);
	cr_assert_eq(hcasim_trace_observe("warn", qpc_warn_seen, &w), 0);
	pd = alloc_pd(&f);
	eqn = create_eq(&f);
	cq = create_cq(&f, eqn);
	qa = create_qp(&f, pd, cq);
	qb = create_qp(&f, pd, cq);
	cr_assert_lt(qb, 64);
#define SLOT(qpn) ((struct hca_qpc *)(store + (size_t)(qpn)*cap.qpc_entry_bytes))
	/* CREATE_QP wrote the image: it decodes to the QP, and two QPs created alike differ in
	 * their QPN and ring addresses only (their on-chip buffers are at different host
	 * addresses: none of those crosses PCIe) */
	memcpy(&a_img, SLOT(qa), sizeof(a_img));
	memcpy(&b_img, SLOT(qb), sizeof(b_img));
	memset(&dec, 0, sizeof(dec));
	cr_assert_eq(hm_qpc_unpack(&a_img, &dec, &why), 0, "%s", why);
	cr_assert_eq(dec.qpn, qa);
	cr_assert_eq(dec.type, HCA_QPT_RC);
	cr_assert_eq(dec.state, HCA_QPS_RESET);
	cr_assert_eq(dec.pdn, pd);
	cr_assert_eq(dec.scqn, cq);
	cr_assert_eq(dec.rcqn, cq);
	cr_assert_eq(dec.sq_entries, hca_wq_entries(1));
	cr_assert_eq(dec.sq_stride, hca_sq_stride(1, 0));
	b_img.qpn = qa;
	b_img.sq_addr = a_img.sq_addr;
	b_img.rq_addr = a_img.rq_addr;
	cr_assert_eq(memcmp(&a_img, &b_img, sizeof(a_img)), 0,
		     "the images of two QPs created alike differ beyond the QPN");
	cr_assert_eq(memcmp((uint8_t *)SLOT(qa) + sizeof(struct hca_qpc),
			    (uint8_t[HM_QPC_BYTES]){ 0 }, HM_QPC_BYTES - sizeof(struct hca_qpc)),
		     0, "the device wrote past the image");

	/* A to INIT (a miss), then B evicts it: the write-back carries the new state */
	touch_qp(&f, qa, HCA_QPS_INIT);
	touch_qp(&f, qb, HCA_QPS_RESET);
	cr_assert_eq(SLOT(qa)->state, HCA_QPS_INIT);
	memcpy(&good, SLOT(qa), sizeof(good));
	cr_assert_eq(w.n, 0, "an untouched image was reported: %s", w.last);
	cr_assert_eq(qpc_corrupt(), 0);

	/* the driver overwrites A's ring size: reported at the next miss, not used */
	q = (struct hca_handle_in){ .handle = qa };
	EXPECT_OK(&f, HCA_CMD_QUERY_QP, &q, &before);
	SLOT(qa)->sq_entries = 4096;
	touch_qp(&f, qa, HCA_QPS_INIT);
	cr_assert_eq(w.n, 1);
	cr_assert_not_null(strstr(w.last, "field=sq_entries"), "%s", w.last);
	cr_assert_eq(qpc_corrupt(), 1);
	EXPECT_OK(&f, HCA_CMD_QUERY_QP, &q, &after);
	cr_assert_eq(after.caps.max_send_wr, before.caps.max_send_wr);
	cr_assert_eq(after.state, HCA_QPS_INIT);
	/* the next eviction writes the device's context back over it */
	touch_qp(&f, qb, HCA_QPS_RESET);
	cr_assert_eq(memcmp(SLOT(qa), &good, sizeof(good)), 0);

	/* a value no context holds: the report names the rule */
	SLOT(qa)->state = HCA_QPS_COUNT;
	touch_qp(&f, qa, HCA_QPS_INIT);
	cr_assert_eq(w.n, 2);
	cr_assert_not_null(strstr(w.last, "rule=state: not a QP state"), "%s", w.last);
	cr_assert_eq(qpc_corrupt(), 2);
	/* a nested field is named by its path */
	touch_qp(&f, qb, HCA_QPS_RESET);
	SLOT(qa)->attr.av.dlid ^= 0x5a5a;
	touch_qp(&f, qa, HCA_QPS_INIT);
	cr_assert_eq(w.n, 3);
	cr_assert_not_null(strstr(w.last, "field=attr.av.dlid"), "%s", w.last);
	/* the device's own change to a context out of its cache is no corruption: the image
	 * read back is still the one written */
	touch_qp(&f, qb, HCA_QPS_RESET);
	force = (struct hca_qp_force_in){ .qpn = qa, .state = HCA_QPS_ERR };
	EXPECT_OK(&f, HCA_CMD_DEBUG_FORCE_QP_STATE, &force, &none);
	cr_assert_eq(SLOT(qa)->state, HCA_QPS_INIT);
	touch_qp(&f, qa, HCA_QPS_RESET);
	cr_assert_eq(w.n, 3, "%s", w.last);
	cr_assert_eq(qpc_corrupt(), 3);
	expect_alive(&f);
#undef SLOT
	hcasim_trace_observe("warn", NULL, NULL);
	sim_pcie_unmap(f.fn, store_map);
	fwt_close(&f);
	free(store);
}
