/* Fuzz target `cmd`: mailbox commands written by hand and rung through BAR 0's command
 * registers of hcasim2 (CMDQ_ADDR, CMD_DOORBELL; docs/device-interface.md), as a rogue driver
 * would, through the public host bus (hcasim_bus.h) only. The entry and its mailboxes live in
 * a page of this target's own, mapped for the device's DMA; CMDQ_ADDR points there while an
 * input runs and back at hcasim2's driver's entry after it.
 *
 * An input is a sequence of records, of which the first 16 run (longer inputs cost time and
 * reach nothing new): a 16-byte header (struct rec) and the input mailbox bytes. So that mutations reach the handlers and not only the opcode and length checks:
 *   - the opcode is mostly chosen from the device's list (model/hw/cmd.def, hca_cmds[]) by the
 *     header's first byte; with its bit 7 set, it is the raw 16-bit op_raw instead;
 *   - in_len and out_len are the opcode's formats unless RAW_LEN asks for the raw values;
 *   - up to three 32-bit words of the mailbox may be patched with the first output word (the
 *     handle) of an earlier command of the same input, so that a sequence that creates an
 *     object and then uses it stays meaningful whichever numbers the device hands out.
 * Every command must complete (own cleared, done_cycle written) within 10 ms of simulated
 * time: a command that never completes is a finding, as a crash is.
 *
 * The objects an input creates are destroyed after it. An input whose commands changed or
 * destroyed an object it did not create (hcasim2's own driver's: the victims, EQ 0) or the
 * device itself (INIT_HCA, TEARDOWN_HCA) leaves hcasim2's driver out of step with its
 * firmware; the whole system is then booted again (fz_reboot), so that every input finds the
 * fixture as the seeds did. The seeds (testbench/fuzz/corpus/cmd/) are a run of every command,
 * each checked to succeed; HCASIM_FUZZ_SEEDS=DIR writes them again (docs/security.md). */
#include "testbench/fuzz/fuzz.h"

#include "model/hw/hca_hw.h"
#include "sim/hcasim.h"
#include "sim/hcasim_bus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_BYTES 4096u
#define IN_OFF 256u
#define OUT_OFF 512u
#define SCRATCH_BYTES (64u * 1024u) /* rings and memory the commands may name */
#define MAX_CMDS 16
#define CMD_TIMEOUT_PS (10ull * 1000 * 1000 * 1000)

/* One command of an input: this header, then its input mailbox. */
struct rec {
	uint8_t sel;      /* bit 7 clear: the opcode is hca_cmds[sel % count]; set: op_raw */
	uint8_t flags;    /* REC_* */
	uint16_t op_raw;  /* the opcode when sel bit 7 is set */
	uint16_t in_len;  /* with REC_RAW_LEN: the entry's in_len and the mailbox bytes that
			   * follow (at most 256); else the opcode's input format's size */
	uint16_t out_len; /* with REC_RAW_LEN: the entry's out_len */
	uint8_t patch[3][2]; /* {mailbox offset, n}: n > 0 writes the handle output by the
			      * command n before this one at that offset */
	int16_t addr_delta; /* with REC_RAW_ADDR: both mailbox addresses move by 16 * this */
};
_Static_assert(sizeof(struct rec) == 16, "record header");

enum {
	REC_RAW_LEN = 1,    /* in_len, out_len as given */
	REC_NOT_OWNED = 2,  /* the entry's own bit left clear */
	REC_BAD_TOKEN = 4,  /* the entry's token differs from the doorbell's */
	REC_RAW_ADDR = 8,   /* in_addr, out_addr moved (maybe out of the mapping) */
};

/* What a command does to the object its mailbox's first word names. */
enum role { R_QUERY, R_CREATE, R_DESTROY, R_MUTATE, R_DEVICE };
enum kind { K_NONE, K_EQ, K_XRCD, K_PD, K_MKEY, K_MW, K_CQ, K_SRQ, K_QP, K_NKINDS };

static const struct op_role {
	uint16_t op;
	uint8_t kind, role;
} roles[] = {
	{ HCA_CMD_QUERY_HCA_CAP, K_NONE, R_QUERY },  { HCA_CMD_INIT_HCA, K_NONE, R_DEVICE },
	{ HCA_CMD_TEARDOWN_HCA, K_NONE, R_DEVICE },  { HCA_CMD_QUERY_PORT, K_NONE, R_QUERY },
	{ HCA_CMD_QUERY_GID, K_NONE, R_QUERY },      { HCA_CMD_QUERY_PKEY, K_NONE, R_QUERY },
	{ HCA_CMD_ALLOC_PD, K_PD, R_CREATE },        { HCA_CMD_DEALLOC_PD, K_PD, R_DESTROY },
	{ HCA_CMD_ALLOC_XRCD, K_XRCD, R_CREATE },    { HCA_CMD_DEALLOC_XRCD, K_XRCD, R_DESTROY },
	{ HCA_CMD_CREATE_MKEY, K_MKEY, R_CREATE },   { HCA_CMD_DESTROY_MKEY, K_MKEY, R_DESTROY },
	{ HCA_CMD_ALLOC_MW, K_MW, R_CREATE },        { HCA_CMD_DEALLOC_MW, K_MW, R_DESTROY },
	{ HCA_CMD_CREATE_CQ, K_CQ, R_CREATE },       { HCA_CMD_DESTROY_CQ, K_CQ, R_DESTROY },
	{ HCA_CMD_RESIZE_CQ, K_CQ, R_MUTATE },       { HCA_CMD_CREATE_QP, K_QP, R_CREATE },
	{ HCA_CMD_MODIFY_QP, K_QP, R_MUTATE },       { HCA_CMD_QUERY_QP, K_QP, R_QUERY },
	{ HCA_CMD_DESTROY_QP, K_QP, R_DESTROY },     { HCA_CMD_ATTACH_MCG, K_QP, R_MUTATE },
	{ HCA_CMD_DETACH_MCG, K_QP, R_MUTATE },      { HCA_CMD_CREATE_SRQ, K_SRQ, R_CREATE },
	{ HCA_CMD_MODIFY_SRQ, K_SRQ, R_MUTATE },     { HCA_CMD_QUERY_SRQ, K_SRQ, R_QUERY },
	{ HCA_CMD_DESTROY_SRQ, K_SRQ, R_DESTROY },   { HCA_CMD_CREATE_EQ, K_EQ, R_CREATE },
	{ HCA_CMD_DESTROY_EQ, K_EQ, R_DESTROY },     { HCA_CMD_DEBUG_FORCE_QP_STATE, K_QP, R_MUTATE },
};
/* The command that destroys an object of each kind (the cleanup after an input). */
static const uint16_t destroy_op[K_NKINDS] = {
	[K_EQ] = HCA_CMD_DESTROY_EQ,	  [K_XRCD] = HCA_CMD_DEALLOC_XRCD,
	[K_PD] = HCA_CMD_DEALLOC_PD,	  [K_MKEY] = HCA_CMD_DESTROY_MKEY,
	[K_MW] = HCA_CMD_DEALLOC_MW,	  [K_CQ] = HCA_CMD_DESTROY_CQ,
	[K_SRQ] = HCA_CMD_DESTROY_SRQ,	  [K_QP] = HCA_CMD_DESTROY_QP,
};

static struct hcasim_fn *victim;
static uint8_t *page, *scratch;     /* the entry and mailboxes; rings and memory */
static uint64_t page_iova, scratch_iova;
static uint64_t drv_cmdq;           /* hcasim2's driver's entry, restored after an input */
static uint32_t token = 0x80000000u; /* never one of the driver's (which count from 1) */
/* The opcodes an input chooses from: hca_cmds[] but TEARDOWN_HCA, which takes no input and
 * always succeeds, so that one input in four would otherwise tear hcasim2 down and cost a
 * reboot; a raw opcode still reaches it. */
static uint16_t ops[64];
static int nops;

/* Objects the current input created, and whether it touched one it did not create. */
static struct {
	uint8_t kind;
	uint32_t handle;
} created[MAX_CMDS];
static int ncreated;
/* Multicast attachments of created QPs, undone before the QPs are destroyed. */
static struct hca_mcg_in attached[8];
static int nattached;
/* What the input did to the fixture: nothing; changed a victim QP's state or attributes (the
 * victims are connected again); more (the system is booted again). */
enum { CLEAN, HEAL, REBOOT };
static int dirty;

static void mark(int level)
{
	dirty = level > dirty ? level : dirty;
}

static const struct op_role *role_of(uint16_t op)
{
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (roles[i].op == op)
			return &roles[i];
	return NULL;
}

static bool was_created(unsigned kind, uint32_t handle)
{
	for (int i = 0; i < ncreated; i++)
		if (created[i].kind == kind && created[i].handle == handle)
			return true;
	return false;
}

/* hcasim2, its driver's command entry, and this target's page and scratch memory. */
static void attach(void)
{
	struct hcasim_fn *fns[8];
	uint64_t lo = 0, hi = 0;
	int n = hcasim_bus_enumerate(fns, 8);

	victim = NULL;
	for (int i = 0; i < n; i++)
		if (hcasim_fn_devno(fns[i]) == 2)
			victim = fns[i];
	if (!victim)
		fz_fail("no hcasim2 on the bus");
	if (hcasim_mmio_read(victim, 0, HCA_REG_CMDQ_ADDR_LO, 4, &lo) ||
	    hcasim_mmio_read(victim, 0, HCA_REG_CMDQ_ADDR_HI, 4, &hi))
		fz_fail("cannot read CMDQ_ADDR");
	drv_cmdq = lo | hi << 32;
	if (!page && (!(page = aligned_alloc(PAGE_BYTES, PAGE_BYTES)) ||
		      !(scratch = aligned_alloc(PAGE_BYTES, SCRATCH_BYTES))))
		fz_fail("out of memory");
	if (hcasim_dma_map(victim, page, PAGE_BYTES, HCASIM_DMA_READ | HCASIM_DMA_WRITE,
			   &page_iova) < 0 ||
	    hcasim_dma_map(victim, scratch, SCRATCH_BYTES, HCASIM_DMA_READ | HCASIM_DMA_WRITE,
			   &scratch_iova) < 0)
		fz_fail("cannot map the command page");
}

static void cmdq_point(uint64_t addr)
{
	hcasim_mmio_write(victim, 0, HCA_REG_CMDQ_ADDR_LO, 4, (uint32_t)addr);
	hcasim_mmio_write(victim, 0, HCA_REG_CMDQ_ADDR_HI, 4, (uint32_t)(addr >> 32));
}

static bool answered(void *arg)
{
	volatile struct hca_cmd_entry *e = arg;

	return !(e->own & HCA_CMD_OWN_DEVICE) && e->done_cycle;
}

/* Ring the entry in the page (already written but for token and own) and wait for the
 * answer: its status. */
static uint8_t ring(unsigned flags)
{
	volatile struct hca_cmd_entry *e = (volatile struct hca_cmd_entry *)page;
	int rc;

	++token;
	e->token = flags & REC_BAD_TOKEN ? token ^ 0x5a5a : token;
	e->status = 0xff;
	e->syndrome = 0;
	e->start_cycle = e->done_cycle = 0;
	e->own = flags & REC_NOT_OWNED ? 0 : HCA_CMD_OWN_DEVICE;
	hcasim_mmio_write(victim, 0, HCA_REG_CMD_DOORBELL, 4, token);
	rc = hcasim_host_wait(answered, (void *)e, CMD_TIMEOUT_PS);
	if (rc)
		fz_fail("command 0x%x (token 0x%x) was not answered: %s", e->opcode, token,
			rc == -EDEADLK ? "the device went idle" : "timed out");
	if (hcasim_halted())
		fz_fail("the simulation halted: %s", hcasim_halted());
	return e->status;
}

/* Run a well-formed command: in_len bytes of in, the opcode's lengths. Its status; the first
 * output word in *handle. */
static uint8_t run_cmd(uint16_t op, const void *in, size_t in_len, uint32_t *handle)
{
	const struct hca_cmd_desc *c = hca_cmd_find(op);
	struct hca_cmd_entry *e = (struct hca_cmd_entry *)page;
	uint8_t st;

	memset(page, 0, PAGE_BYTES);
	memcpy(page + IN_OFF, in, in_len);
	e->opcode = op;
	e->in_len = (uint32_t)c->in_len;
	e->out_len = (uint32_t)c->out_len;
	e->in_addr = page_iova + IN_OFF;
	e->out_addr = page_iova + OUT_OFF;
	st = ring(0);
	memcpy(handle, page + OUT_OFF, 4);
	return st;
}

/* Take note of what a successful command did to the object its mailbox's first word names. */
static void account(uint16_t op, uint32_t in_word, uint32_t out_word)
{
	const struct op_role *r = role_of(op);

	if (!r || r->role == R_DEVICE) {
		mark(REBOOT);
	} else if (op == HCA_CMD_ATTACH_MCG && was_created(K_QP, in_word)) {
		if (nattached < 8)
			memcpy(&attached[nattached++], page + IN_OFF, sizeof(attached[0]));
	} else if (r->role == R_CREATE && ncreated < MAX_CMDS) {
		created[ncreated].kind = r->kind;
		/* a memory window is named by its index when it is freed */
		created[ncreated++].handle = r->kind == K_MW ? out_word >> 8 : out_word;
	} else if (r->role == R_CREATE) {
		mark(REBOOT); /* more than the cleanup can track */
	} else if (r->role != R_QUERY && !was_created(r->kind, in_word)) {
		/* a victim QP's state or attributes: hcasim2's driver still knows the QP */
		mark(op == HCA_CMD_MODIFY_QP || op == HCA_CMD_DEBUG_FORCE_QP_STATE ? HEAL : REBOOT);
	}
}

/* Destroy what the input created, the users before what they use. */
static void cleanup(void)
{
	uint32_t none;

	for (int i = 0; i < nattached; i++) /* detached already by the input: BAD_PARAM */
		run_cmd(HCA_CMD_DETACH_MCG, &attached[i], sizeof(attached[i]), &none);
	nattached = 0;
	for (int kind = K_NKINDS - 1; kind > K_NONE; kind--)
		for (int i = ncreated - 1; i >= 0; i--) {
			struct hca_handle_in h = { .handle = created[i].handle };
			uint8_t st;

			if (created[i].kind != kind)
				continue;
			st = run_cmd(destroy_op[kind], &h, sizeof(h), &none);
			/* already destroyed by the input itself: BAD_HANDLE is right */
			if (st != HCA_STATUS_OK && st != HCA_STATUS_BAD_HANDLE)
				mark(REBOOT);
		}
	ncreated = 0;
}

/* Build one record's entry and mailbox in the page from data (at least a header); the bytes
 * of data it used, its opcode and flags. outs: the first output word of the commands before
 * it, idx of them. */
static size_t build(const uint8_t *data, size_t size, const uint32_t *outs, int idx,
		    uint16_t *op, unsigned *flags)
{
	struct hca_cmd_entry *e = (struct hca_cmd_entry *)page;
	const struct hca_cmd_desc *c;
	struct rec r;
	size_t n;

	memcpy(&r, data, sizeof(r));
	*op = r.sel & 0x80 ? r.op_raw : ops[(r.sel & 0x7f) % nops];
	*flags = r.flags;
	c = hca_cmd_find(*op);
	memset(page, 0, PAGE_BYTES);
	e->opcode = *op;
	e->in_len = r.flags & REC_RAW_LEN || !c ? r.in_len : (uint32_t)c->in_len;
	e->out_len = r.flags & REC_RAW_LEN || !c ? r.out_len : (uint32_t)c->out_len;
	e->in_addr = page_iova + IN_OFF;
	e->out_addr = page_iova + OUT_OFF;
	if (r.flags & REC_RAW_ADDR) {
		e->in_addr += (uint64_t)((int64_t)r.addr_delta * 16);
		e->out_addr += (uint64_t)((int64_t)r.addr_delta * 16);
	}
	n = e->in_len < OUT_OFF - IN_OFF ? e->in_len : OUT_OFF - IN_OFF;
	n = n < size - sizeof(r) ? n : size - sizeof(r);
	memcpy(page + IN_OFF, data + sizeof(r), n);
	for (int k = 0; k < 3; k++) {
		unsigned off = r.patch[k][0], back = r.patch[k][1] & 0x7f;
		/* bit 7: the handle's index (a memory window's R_Key >> 8) */
		uint32_t v;

		if (!back || back > (unsigned)idx || off + 4 > OUT_OFF - IN_OFF)
			continue;
		v = r.patch[k][1] & 0x80 ? outs[idx - back] >> 8 : outs[idx - back];
		memcpy(page + IN_OFF + off, &v, 4);
	}
	return sizeof(r) + n;
}

/* Run the commands of an input, then destroy what they created. strict (the seeds): every
 * command must succeed and touch only what the input created. */
static void run_input(const uint8_t *data, size_t size, bool strict)
{
	uint32_t outs[MAX_CMDS];
	size_t at = 0;

	ncreated = 0;
	dirty = CLEAN;
	cmdq_point(page_iova);
	for (int idx = 0; idx < MAX_CMDS && at + sizeof(struct rec) <= size; idx++) {
		const struct hca_cmd_entry *e = (const struct hca_cmd_entry *)page;
		uint32_t in_word;
		unsigned flags;
		uint16_t op;
		uint8_t st;

		at += build(data + at, size - at, outs, idx, &op, &flags);
		memcpy(&in_word, page + IN_OFF, 4);
		st = ring(flags);
		memcpy(&outs[idx], page + OUT_OFF, 4);
		if (st == HCA_STATUS_OK)
			account(op, in_word, outs[idx]);
		if (strict && (st != HCA_STATUS_OK || dirty))
			fz_fail("seed command %d (0x%x): status %s, syndrome 0x%x%s", idx, op,
				hca_status_name(st), e->syndrome, dirty ? ", touched the fixture" : "");
	}
	cleanup();
	cmdq_point(drv_cmdq);
	if (strict && dirty)
		fz_fail("seed: its objects could not all be destroyed");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run_input(data, size, false);
	hcasim_run_for_ps(20 * 1000 * 1000ull);
	/* hcasim2's driver may also fail on memory a command had the device write (a ring of
	 * its named as a new queue's): a reboot then too. */
	if (dirty == REBOOT || !fz_heal(dirty == HEAL)) {
		fz_reboot();
		attach();
	}
	fz_after_input();
	return 0;
}

/* ---- seeds: a run of every command, each sequence creating, using and destroying ---- */

struct seed {
	uint8_t buf[2048];
	size_t len;
};

/* Append a command with its input; patches: {offset, n back (| 0x80: >> 8)}, 0-terminated. */
static void add(struct seed *s, uint16_t op, const void *in, size_t in_len,
		const uint8_t (*patch)[2])
{
	struct rec r = { 0 };
	int i;

	for (i = 0; i < nops && ops[i] != op; i++)
		;
	r.sel = (uint8_t)i;
	for (int k = 0; patch && k < 3 && patch[k][1]; k++)
		memcpy(r.patch[k], patch[k], 2);
	if (s->len + sizeof(r) + in_len > sizeof(s->buf))
		fz_fail("seed too long");
	memcpy(s->buf + s->len, &r, sizeof(r));
	memcpy(s->buf + s->len + sizeof(r), in, in_len);
	s->len += sizeof(r) + in_len;
}

#define ADD(s, op, in, ...) add(s, HCA_CMD_##op, &(in), sizeof(in), (const uint8_t[][2]){ __VA_ARGS__, { 0, 0 } })
#define ADD0(s, op, in) add(s, HCA_CMD_##op, &(in), sizeof(in), NULL)

static void seed_write(const char *dir, const char *name, struct seed *s)
{
	char path[600];
	FILE *f;

	run_input(s->buf, s->len, true); /* each command succeeds */
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s->buf, 1, s->len, f) != s->len || fclose(f))
		fz_fail("cannot write %s", path);
	s->len = 0;
}

/* Where the seeds' rings live in the scratch memory. */
enum { S_EQ = 0, S_CQ = 4096, S_CQ2 = 8192, S_CQDB = 12288, S_SQ = 16384, S_RQ = 20480,
       S_QPDB = 24576, S_SRQ = 28672, S_SRQDB = 32768, S_MR = 36864 };

static void seed_objects(const char *dir, struct seed *s)
{
	struct hca_cmd_empty none = { 0 };
	struct hca_handle_in h = { 0 };
	struct hca_eq_create_in eq = { scratch_iova + S_EQ, 4, 1, 1ull << HCA_EQE_COMP };
	struct hca_cq_in cq = { .cqe = 7, .ring_addr = scratch_iova + S_CQ,
				.db_addr = scratch_iova + S_CQDB, .log_size = 3 };
	struct hca_cq_resize_in rs = { .cqe = 15, .ring_addr = scratch_iova + S_CQ2, .log_size = 4 };
	struct hca_mkey_in mk = { .access = HCA_ACCESS_MR_ALL, .start = scratch_iova + S_MR,
				  .length = 8192, .iova = 0x100000 };
	struct hca_mw_in mw = { .type = HCA_MW_TYPE_2 };
	struct hca_srq_create_in srq = { .max_wr = 4, .max_sge = 1,
					 .ring_addr = scratch_iova + S_SRQ,
					 .db_addr = scratch_iova + S_SRQDB };
	struct hca_srq_modify_in sm = { .attr_mask = 2, .srq_limit = 2 };

	ADD0(s, ALLOC_PD, none);
	ADD(s, DEALLOC_PD, h, { 0, 1 });
	ADD0(s, ALLOC_XRCD, none);
	ADD(s, DEALLOC_XRCD, h, { 0, 1 });
	seed_write(dir, "pd-xrcd", s);

	ADD0(s, ALLOC_PD, none);
	ADD(s, CREATE_MKEY, mk, { 0, 1 });
	ADD(s, ALLOC_MW, mw, { 0, 2 });
	ADD(s, DEALLOC_MW, h, { 0, 1 | 0x80 });
	ADD(s, DESTROY_MKEY, h, { 0, 3 });
	ADD(s, DEALLOC_PD, h, { 0, 5 });
	seed_write(dir, "mkey-mw", s);

	ADD0(s, CREATE_EQ, eq);
	ADD(s, CREATE_CQ, cq, { 4, 1 });
	ADD(s, RESIZE_CQ, rs, { 0, 1 });
	ADD(s, DESTROY_CQ, h, { 0, 2 });
	ADD(s, DESTROY_EQ, h, { 0, 4 });
	seed_write(dir, "eq-cq", s);

	ADD0(s, ALLOC_PD, none);
	ADD(s, CREATE_SRQ, srq, { 0, 1 });
	ADD(s, MODIFY_SRQ, sm, { 0, 1 });
	ADD(s, QUERY_SRQ, h, { 0, 2 });
	ADD(s, DESTROY_SRQ, h, { 0, 3 });
	ADD(s, DEALLOC_PD, h, { 0, 5 });
	seed_write(dir, "srq", s);
}

static void seed_queries(const char *dir, struct seed *s)
{
	struct hca_cmd_empty none = { 0 };
	struct hca_port_in port = { .port = 1 };
	struct hca_gid_in gid = { .port = 1 };
	struct hca_pkey_in pkey = { .port = 1 };

	ADD0(s, QUERY_HCA_CAP, none);
	ADD0(s, QUERY_PORT, port);
	ADD0(s, QUERY_GID, gid);
	ADD0(s, QUERY_PKEY, pkey);
	seed_write(dir, "queries", s);
}

/* A QP of type qpt, through RESET -> INIT -> RTR -> RTS to hcasim3, and away again. */
static void seed_qp(const char *dir, struct seed *s, uint8_t qpt, const char *name)
{
	struct hca_cmd_empty none = { 0 };
	struct hca_handle_in h = { 0 };
	struct hca_eq_create_in eq = { scratch_iova + S_EQ, 4, 1, 1ull << HCA_EQE_COMP };
	struct hca_cq_in cq = { .cqe = 7, .ring_addr = scratch_iova + S_CQ,
				.db_addr = scratch_iova + S_CQDB, .log_size = 3 };
	struct hca_qp_create_in qc = { .type = qpt,
				       .caps = { 4, 4, 1, 1, 0, 0 },
				       .sq_addr = scratch_iova + S_SQ,
				       .rq_addr = scratch_iova + S_RQ,
				       .db_addr = scratch_iova + S_QPDB };
	struct hca_qp_modify_in m = { .attr_mask = HCA_QPA_STATE | HCA_QPA_PKEY_INDEX |
						   HCA_QPA_PORT |
						   (qpt == HCA_QPT_UD ? HCA_QPA_QKEY
								      : HCA_QPA_ACCESS_FLAGS),
				      .next_state = HCA_QPS_INIT,
				      .attr = { .qkey = 0x11111111u, .access_flags = HCA_ACCESS_ALL,
						.port_num = 1 } };
	struct hca_mcg_in mcg = { .lid = 0xc001, .gid = { 0xff, 0x12, 0x40, 0x1b } };
	struct hca_qp_force_in force = { .state = HCA_QPS_ERR };

	ADD0(s, CREATE_EQ, eq);
	ADD0(s, ALLOC_PD, none);
	ADD(s, CREATE_CQ, cq, { 4, 2 });
	ADD(s, CREATE_QP, qc, { 4, 2 }, { 8, 1 }, { 12, 1 });
	ADD(s, MODIFY_QP, m, { 0, 1 });
	m.next_state = HCA_QPS_RTR;
	m.attr_mask = qpt == HCA_QPT_UD ? HCA_QPA_STATE
		      : HCA_QPA_STATE | HCA_QPA_AV | HCA_QPA_PATH_MTU | HCA_QPA_DEST_QPN |
			      HCA_QPA_RQ_PSN;
	if (qpt == HCA_QPT_RC)
		m.attr_mask |= HCA_QPA_MAX_DEST_RD_ATOMIC | HCA_QPA_MIN_RNR_TIMER;
	m.attr.path_mtu = 3;
	m.attr.dest_qpn = fz_victim.b[0].qp->qp_num;
	m.attr.max_dest_rd_atomic = 4;
	m.attr.min_rnr_timer = 1;
	m.attr.av.dlid = fz_victim.b[0].lid;
	m.attr.av.port_num = 1;
	ADD(s, MODIFY_QP, m, { 0, 2 });
	m.next_state = HCA_QPS_RTS;
	m.attr_mask = HCA_QPA_STATE | HCA_QPA_SQ_PSN;
	if (qpt == HCA_QPT_RC)
		m.attr_mask |= HCA_QPA_TIMEOUT | HCA_QPA_RETRY_CNT | HCA_QPA_RNR_RETRY |
			       HCA_QPA_MAX_QP_RD_ATOMIC;
	m.attr.timeout = 8;
	m.attr.retry_cnt = 7;
	m.attr.rnr_retry = 7;
	m.attr.max_rd_atomic = 4;
	ADD(s, MODIFY_QP, m, { 0, 3 });
	ADD(s, QUERY_QP, h, { 0, 4 });
	if (qpt == HCA_QPT_UD) {
		ADD(s, ATTACH_MCG, mcg, { 0, 5 });
		ADD(s, DETACH_MCG, mcg, { 0, 6 });
	}
	ADD(s, DEBUG_FORCE_QP_STATE, force, { 0, qpt == HCA_QPT_UD ? 7 : 5 });
	ADD(s, DESTROY_QP, h, { 0, qpt == HCA_QPT_UD ? 8 : 6 });
	seed_write(dir, name, s);
}

static void write_seeds(const char *dir)
{
	static struct seed s;

	seed_queries(dir, &s);
	seed_objects(dir, &s);
	seed_qp(dir, &s, HCA_QPT_RC, "qp-rc");
	seed_qp(dir, &s, HCA_QPT_UC, "qp-uc");
	seed_qp(dir, &s, HCA_QPT_UD, "qp-ud");
	fprintf(stderr, "fuzz-cmd: 8 seeds in %s\n", dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("HCASIM_FUZZ_SEEDS");

	(void)argc, (void)argv;
	for (const struct hca_cmd_desc *c = hca_cmds; c->name && nops < 64; c++)
		if (c->opcode != HCA_CMD_TEARDOWN_HCA)
			ops[nops++] = c->opcode;
	/* A command may have the device write over hcasim2's driver's own event queue; the
	 * driver then waits for a completion event it cannot read until its timeout: 10 ms of
	 * simulated time, not 1 s, keeps such an input short. */
	if (hcasim_config_set("driver.cmd_timeout_ms", "10"))
		fz_fail("driver.cmd_timeout_ms");
	fz_setup();
	fz_heal_victims = false; /* LLVMFuzzerTestOneInput heals them, or reboots */
	attach();
	if (seeds && *seeds) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}
