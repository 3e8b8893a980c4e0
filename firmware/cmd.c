/* Command processor: fetch the entry by DMA, check lengths, opcode and token, run the handler
 * with its modelled cost, write the output and then the status (model/hw/cmd.def lists the
 * commands and their costs). */
#include "firmware/fw.h"
#include "model/eq.h"
#include "model/fcov.h"
#include "sim/trace.h"

#include <stdlib.h>
#include <string.h>

struct fw_cmd {
	uint16_t opcode;       /* opcode */
	const char *name;      /* for traces */
	fw_handler fn;         /* handler */
	size_t in_len, out_len; /* exact mailbox sizes */
	uint32_t cost_cycles;  /* firmware execution cost */
};

static const struct fw_cmd cmd_table[] = {
#define CMD(name, op, in, out, cost, doc)                                                          \
	{ op, #name, fw_cmd_##name, sizeof(struct in), sizeof(struct out), cost },
#include "model/hw/cmd.def"
#undef CMD
};

static const struct fw_cmd *cmd_lookup(uint16_t opcode)
{
	for (size_t i = 0; i < sizeof(cmd_table) / sizeof(cmd_table[0]); i++)
		if (cmd_table[i].opcode == opcode)
			return &cmd_table[i];
	return NULL;
}

/* ---- object tables ---- */

static void table_init(struct fw_table *t, size_t size, uint32_t first, uint64_t max)
{
	free(t->objs);
	memset(t, 0, sizeof(*t));
	t->size = size;
	t->first = first;
	t->max = (uint32_t)max;
	t->cursor = first;
}

void *fw_obj(struct fw_table *t, uint32_t idx)
{
	bool *live;

	if (idx < t->first || idx >= t->cap)
		return NULL;
	live = (bool *)((char *)t->objs + (size_t)idx * t->size); /* every object starts with live */
	return *live ? live : NULL;
}

/* Make slot idx exist (tables grow on demand: a device with 16 M QPs costs nothing until
 * they are created). */
static void table_grow(struct fw_table *t, uint32_t idx)
{
	uint32_t end = t->first + t->max, cap = t->cap ? t->cap : 64;
	void *o;

	while (cap <= idx)
		cap *= 2;
	if (cap > end)
		cap = end;
	o = realloc(t->objs, (size_t)cap * t->size);
	SIM_ASSERT(o != NULL, "out of memory growing a firmware table to %u", cap);
	memset((char *)o + (size_t)t->cap * t->size, 0, (size_t)(cap - t->cap) * t->size);
	t->objs = o;
	t->cap = cap;
}

int64_t fw_obj_alloc(struct fw_table *t)
{
	uint32_t end = t->first + t->max; /* indexes [first, first + max) */

	if (t->live >= t->max)
		return -1;
	for (uint32_t n = 0; n < t->max; n++) {
		uint32_t idx = t->cursor;

		t->cursor = t->cursor + 1 >= end ? t->first : t->cursor + 1;
		if (idx >= t->cap)
			table_grow(t, idx);
		if (!fw_obj(t, idx)) {
			bool *live = (bool *)((char *)t->objs + (size_t)idx * t->size);

			*live = true;
			t->live++;
			return idx;
		}
	}
	return -1;
}

void fw_obj_free(struct fw_table *t, uint32_t idx)
{
	bool *live = fw_obj(t, idx);

	SIM_ASSERT(live != NULL, "freeing a dead object %u", idx);
	*live = false;
	t->live--;
}

int64_t fw_obj_new(struct fw_state *fw, struct fw_table *t)
{
	int64_t idx = fw_obj_alloc(t);
	struct fw_uctx *u = fw_obj(&fw->uctxs, fw->uid);

	if (idx < 0)
		return idx;
	((struct fw_head *)fw_obj(t, (uint32_t)idx))->uid = fw->uid;
	if (u)
		u->objs++;
	return idx;
}

void fw_obj_del(struct fw_state *fw, struct fw_table *t, uint32_t idx)
{
	struct fw_head *h = fw_obj(t, idx);
	struct fw_uctx *u;

	SIM_ASSERT(h != NULL, "deleting a dead object %u", idx);
	u = h->uid ? fw_obj(&fw->uctxs, h->uid) : NULL;
	SIM_ASSERT(!h->uid || (u && u->objs), "object %u of uid %u outlived its context", idx,
		   h->uid);
	if (u)
		u->objs--;
	fw_obj_free(t, idx);
}

static void *owned(struct fw_state *fw, struct fw_table *t, uint32_t idx, size_t off,
		   struct fw_result *r, bool shared_ok)
{
	struct fw_head *h = fw_obj(t, idx);

	if (!h) {
		*r = (struct fw_result){ HCA_STATUS_BAD_HANDLE, HCA_SYN(HCA_SYN_HANDLE, off) };
		return NULL;
	}
	if (fw->uid && h->uid != fw->uid && !(shared_ok && !h->uid)) {
		*r = (struct fw_result){ HCA_STATUS_NOT_OWNER, HCA_SYN(HCA_SYN_HANDLE, off) };
		trace_warn_owner(fw->dev->devno, fw->uid, h->uid, "handle");
		return NULL;
	}
	return h;
}

void *fw_act(struct fw_state *fw, struct fw_table *t, uint32_t idx, size_t off,
	     struct fw_result *r)
{
	return owned(fw, t, idx, off, r, false);
}

void *fw_use(struct fw_state *fw, struct fw_table *t, uint32_t idx, size_t off,
	     struct fw_result *r)
{
	return owned(fw, t, idx, off, r, true);
}

struct fw_result fw_dma_mine(struct fw_state *fw, uint64_t addr, uint64_t len, unsigned perm,
			     size_t off)
{
	const struct fw_uctx *u = fw->uid ? fw_obj(&fw->uctxs, fw->uid) : NULL;
	int64_t pasid = addr ? sim_iommu_pasid(fw->dev->fn, addr, len, perm) : -1;

	if (pasid < 0)
		return (struct fw_result){ HCA_STATUS_BAD_ADDR, HCA_SYN(HCA_SYN_ADDR, off) };
	if (pasid != (u ? u->pasid : 0)) {
		trace_warn_owner(fw->dev->devno, fw->uid, (uint32_t)pasid, "pasid");
		return (struct fw_result){ HCA_STATUS_NOT_OWNER, HCA_SYN(HCA_SYN_ADDR, off) };
	}
	return FW_OK;
}

void fw_reset_objects(struct fw_state *fw)
{
	const struct sim_config *c = &fw->dev->cfg;

	table_init(&fw->pds, sizeof(struct fw_pd), 1, c->max_pd);
	table_init(&fw->mkeys, sizeof(struct fw_mkey), 1, c->max_mr);
	table_init(&fw->cqs, sizeof(struct fw_cq), 1, c->max_cq);
	table_init(&fw->srqs, sizeof(struct fw_srq), 1, c->max_srq);
	table_init(&fw->qps, sizeof(struct fw_qp), HCA_FIRST_QPN, c->max_qp);
	table_init(&fw->xrcds, sizeof(struct fw_xrcd), 1, HCA_MAX_XRCD);
	table_init(&fw->uctxs, sizeof(struct fw_uctx), 1, HCA_UAR_PAGES - 1);
	memset(fw->dev->uctx_live, 0, sizeof(fw->dev->uctx_live));
	hm_eq_reset(fw->dev);
}

struct fw_state *fw_create(struct hm_dev *d)
{
	struct fw_state *fw = calloc(1, sizeof(*fw));

	SIM_ASSERT(fw != NULL, "out of memory");
	fw->dev = d;
	fw_reset_objects(fw);
	hm_fcov_qp_modify_table(fw_qp_transition_valid); /* the points of qp_modify */
	return fw;
}

void fw_destroy(struct fw_state *fw)
{
	if (!fw)
		return;
	free(fw->pds.objs);
	free(fw->mkeys.objs);
	free(fw->cqs.objs);
	free(fw->srqs.objs);
	free(fw->qps.objs);
	free(fw->xrcds.objs);
	free(fw->uctxs.objs);
	free(fw);
}

bool fw_dma_ok(struct fw_state *fw, uint64_t addr, uint64_t len, unsigned perm)
{
	return addr && sim_iommu_allowed(fw->dev->fn, addr, len, perm);
}

/* ---- the mailbox loop ---- */

/* Commands that only the device owner (uid 0, CMD_DOORBELL) may issue: bringing the device up
 * and down, event queues, user contexts, and the simulator's back door. */
static bool privileged(uint16_t opcode)
{
	switch (opcode) {
	case HCA_CMD_INIT_HCA:
	case HCA_CMD_TEARDOWN_HCA:
	case HCA_CMD_CREATE_EQ:
	case HCA_CMD_DESTROY_EQ:
	case HCA_CMD_ALLOC_UCTX:
	case HCA_CMD_DEALLOC_UCTX:
	case HCA_CMD_DEBUG_FORCE_QP_STATE:
		return true;
	default:
		return false;
	}
}

static struct fw_result check_entry(const struct hm_dev *d, const struct hca_cmd_entry *e,
				    uint32_t token, bool check_token, const struct fw_cmd **cmd)
{
	*cmd = cmd_lookup(e->opcode);
	if (!*cmd)
		return FW_ENTRY(BAD_OPCODE, opcode);
	if (check_token && e->token != token)
		return FW_ENTRY(BAD_TOKEN, token);
	/* Rung without handing the entry over: answered (not ignored) so that the driver learns
	 * of its bug instead of waiting forever. */
	if (!(e->own & HCA_CMD_OWN_DEVICE))
		return FW_ENTRY(BAD_TOKEN, own);
	if (e->in_len != (*cmd)->in_len)
		return FW_FAIL(BAD_LENGTH, LENGTH, 0);
	if (e->out_len != (*cmd)->out_len)
		return FW_FAIL(BAD_LENGTH, LENGTH, 1);
	if (d->cmd_uid && privileged(e->opcode))
		return FW_FAIL(NOT_OWNER, PRIVILEGED, d->cmd_uid);
	return FW_OK;
}

sim_time_t fw_cmd_run(struct hm_dev *d, uint32_t token, bool check_token, sim_time_t t)
{
	struct hca_cmd_entry e;
	const struct fw_cmd *cmd = NULL;
	struct fw_result r;
	uint8_t in[256], out[256];
	uint64_t start_cycle = sim_clock_cycles(&d->core, t);

	if (sim_dma_read_timed(d->fn, d->cmd_entry, &e, sizeof(e), &t)) {
		/* The entry itself is unreachable: nothing can be written back. The fault was
		 * reported by the IOMMU callback; CMD_STATUS shows BAD_ADDR. */
		trace_warn_cmd_fetch(d->devno, d->cmd_entry);
		d->cmd_busy = false;
		d->last_status = HCA_STATUS_BAD_ADDR;
		return t;
	}
	r = check_entry(d, &e, token, check_token, &cmd);
	trace_cmd_exec(d->devno, cmd ? cmd->name : "?", e.opcode, e.token);
	if (r.status == HCA_STATUS_OK && !d->initialized && e.opcode != HCA_CMD_QUERY_HCA_CAP &&
	    e.opcode != HCA_CMD_INIT_HCA)
		r = FW_FAIL(NOT_INITIALIZED, NONE, 0);
	if (r.status == HCA_STATUS_OK && e.in_len &&
	    sim_dma_read_timed(d->fn, e.in_addr, in, e.in_len, &t))
		r = FW_ENTRY(BAD_ADDR, in_addr);
	if (r.status == HCA_STATUS_OK && e.out_len && !fw_dma_ok(d->fw, e.out_addr, e.out_len,
								 SIM_DMA_WRITE))
		r = FW_ENTRY(BAD_ADDR, out_addr);
	if (r.status == HCA_STATUS_OK) {
		t = sim_clock_after(&d->core, t, cmd->cost_cycles);
		memset(out, 0, sizeof(out));
		d->fw->uid = d->cmd_uid;
		r = cmd->fn(d->fw, in, out, &t);
		if (r.status == HCA_STATUS_OK &&
		    sim_dma_write_timed(d->fn, e.out_addr, out, e.out_len, &t))
			r = FW_ENTRY(BAD_ADDR, out_addr);
	} else {
		t = sim_clock_after(&d->core, t, 50); /* decode and reject */
	}
	if (r.status != HCA_STATUS_OK)
		trace_warn_cmd_fail(d->devno, e.opcode, hca_status_name(r.status), r.syndrome);
	e.status = r.status;
	e.syndrome = r.syndrome;
	e.start_cycle = start_cycle;
	hm_cmd_finish(d, &e, t);
	return t;
}
