/* HCA device top: BAR0 register file, the command engine (doorbell → firmware → status
 * write-back → completion event), DMA fault reporting. */
#include "model/hca.h"
#include "model/doorbell.h"
#include "model/eq.h"
#include "model/mcast.h"
#include "model/port.h"
#include "model/qp_cmd.h"
#include "model/req.h"
#include "model/rx.h"
#include "model/sched.h"
#include "model/twin.h"
#include "sim/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t reg_reset[] = {
#define REG(name, off, acc, reset, doc) [off / 4] = reset,
#define REGION(name, off, bytes, doc)
#include "model/hw/regs.def"
#undef REG
#undef REGION
};

/* The C twins of the blocks model/twin.def lists: the device's own implementations, handed
 * to the port calls when a device is built (model/twin.c sits below the blocks). */
static const void *const twin_models[HM_TWIN_COUNT] = {
#define TWIN(name, NAME, cat, doc) [HM_TWIN_##NAME] = &hm_##name##_model,
#include "model/twin.def"
#undef TWIN
};

const void *hm_twin_model(enum hm_twin b)
{
	return b < HM_TWIN_COUNT ? twin_models[b] : NULL;
}

static uint32_t dev_mmio_read32(void *p, uint32_t off)
{
	struct hm_dev *d = p;

	switch (off) {
	case HCA_REG_VENDOR_DEVICE:
	case HCA_REG_FW_VERSION:
	case HCA_REG_HW_VERSION:
		return reg_reset[off / 4];
	case HCA_REG_DEV_STATUS:
		return HCA_DEV_STATUS_READY | (d->initialized ? HCA_DEV_STATUS_INITIALIZED : 0) |
		       (d->cmd_busy ? HCA_DEV_STATUS_CMD_BUSY : 0);
	case HCA_REG_CMDQ_ADDR_LO:
		return (uint32_t)d->cmdq_addr;
	case HCA_REG_CMDQ_ADDR_HI:
		return (uint32_t)(d->cmdq_addr >> 32);
	case HCA_REG_CMD_STATUS:
		return (d->cmd_busy ? 1u : 0u) | ((uint32_t)d->last_status << 8);
	case HCA_REG_FAULT_COUNT:
		return (uint32_t)sim_pcie_fault_count(d->fn);
	case HCA_REG_FAULT_ADDR_LO:
	case HCA_REG_FAULT_ADDR_HI: {
		struct sim_dma_fault f = { 0 };

		sim_pcie_last_fault(d->fn, &f);
		return off == HCA_REG_FAULT_ADDR_LO ? (uint32_t)f.addr : (uint32_t)(f.addr >> 32);
	}
	case HCA_REG_CORE_CLOCK_LO: {
		uint64_t c = hm_dev_cycle(d);

		d->clock_hi_latch = (uint32_t)(c >> 32);
		return (uint32_t)c;
	}
	case HCA_REG_CORE_CLOCK_HI:
		return d->clock_hi_latch;
	default:
		trace_warn_mmio_rd(d->devno, off, "unknown");
		return 0;
	}
}

struct cmd_start {
	struct hm_dev *d;  /* device */
	uint32_t token;    /* doorbell value (CMD_DOORBELL) */
	bool check_token;  /* rung through CMD_DOORBELL: the entry's token must match */
};

static void cmd_start_ev(void *p)
{
	struct cmd_start *cs = p;
	struct hm_dev *d = cs->d;

	fw_cmd_run(d, cs->token, cs->check_token, sim_now(d->k));
	free(cs);
}

/* A command doorbell: through CMD_DOORBELL (uid 0, the entry at CMDQ_ADDR, token checked) or
 * through user context uid's UAR page (the value is the entry's address). */
static void cmd_doorbell(struct hm_dev *d, uint64_t entry, uint16_t uid, uint32_t token,
			 bool check_token)
{
	struct cmd_start *cs;

	trace_cmd_doorbell(d->devno, token, entry, uid);
	if (entry & 63) {
		/* The entry must be 64-byte aligned: refused, nothing is read. */
		d->bad_doorbells++;
		d->last_status = HCA_STATUS_BAD_ADDR;
		trace_warn_cmd_addr(d->devno, entry);
		return;
	}
	if (d->cmd_busy) {
		d->bad_doorbells++;
		trace_warn_cmd_busy(d->devno, token);
		return;
	}
	d->cmd_busy = true;
	d->cmd_entry = entry;
	d->cmd_uid = uid;
	cs = malloc(sizeof(*cs));
	SIM_ASSERT(cs != NULL, "out of memory");
	*cs = (struct cmd_start){ d, token, check_token };
	/* The command engine samples the doorbell on the next core clock edge. */
	sim_schedule_owned_at(d->k,
			      sim_clock_after(&d->core, sim_now(d->k), 1), cmd_start_ev, cs);
}

static void dev_mmio_write32(void *p, uint32_t off, uint32_t val)
{
	struct hm_dev *d = p;

	switch (off) {
	case HCA_REG_CMDQ_ADDR_LO:
	case HCA_REG_CMDQ_ADDR_HI:
		if (d->cmd_busy) {
			trace_warn_mmio_wr(d->devno, off, val, 4, "cmd_running");
			return;
		}
		if (off == HCA_REG_CMDQ_ADDR_LO)
			d->cmdq_addr = (d->cmdq_addr & ~0xffffffffull) | val;
		else
			d->cmdq_addr = (d->cmdq_addr & 0xffffffffull) | ((uint64_t)val << 32);
		return;
	case HCA_REG_CMD_DOORBELL:
		cmd_doorbell(d, d->cmdq_addr, 0, val, true);
		return;
	case HCA_REG_EQ_DOORBELL:
		hm_eq_doorbell(d, val);
		return;
	default:
		trace_warn_mmio_wr(d->devno, off, val, 4, "unknown");
	}
}

static void dev_mmio_write64(void *p, uint32_t off, uint64_t val)
{
	struct hm_dev *d = p;

	if (off >= HCA_REGION_UAR && off < HCA_REGION_UAR + HCA_REGION_UAR_BYTES) {
		uint32_t page = (off - HCA_REGION_UAR) / HCA_UAR_PAGE_BYTES;
		uint32_t reg = (off - HCA_REGION_UAR) % HCA_UAR_PAGE_BYTES;

		if (reg != HCA_UAR_CMD_DB)
			hm_doorbell_write64(d, page, reg, val);
		else if (!hm_uar_open(d, page))
			hm_doorbell_refuse(d, "cmd", page, "no_uctx");
		else
			cmd_doorbell(d, val, (uint16_t)page, 0, false);
		return;
	}
	trace_warn_mmio_wr(d->devno, off, val, 8, "outside_uar");
}

static void dev_mmio_block(void *p, uint32_t off, const uint8_t *data, unsigned len)
{
	struct hm_dev *d = p;

	if (off >= HCA_REGION_UAR && off < HCA_REGION_UAR + HCA_REGION_UAR_BYTES &&
	    (off - HCA_REGION_UAR) % HCA_UAR_PAGE_BYTES == HCA_UAR_BF) {
		hm_doorbell_bf(d, (off - HCA_REGION_UAR) / HCA_UAR_PAGE_BYTES, data, len);
		return;
	}
	d->dp->bad_doorbells++;
	trace_warn_mmio_wr(d->devno, off, 0, len, "not_blueflame");
}

static const struct sim_pcie_dev_ops dev_ops = {
	.mmio_read32 = dev_mmio_read32,
	.mmio_write32 = dev_mmio_write32,
	.mmio_write64 = dev_mmio_write64,
	.mmio_block = dev_mmio_block,
};

struct cmd_finish {
	struct hm_dev *d;           /* device */
	struct hca_cmd_entry tail;  /* entry as written back (status, syndrome, cycles, own) */
};

static void cmd_landed(void *p, int status)
{
	struct cmd_finish *cf = p;
	struct hm_dev *d = cf->d;
	uint32_t data[6] = { cf->tail.token, cf->tail.status, cf->tail.syndrome, 0, 0, 0 };

	d->cmd_busy = false;
	d->last_status = status ? HCA_STATUS_BAD_ADDR : cf->tail.status;
	d->cmds_executed++;
	data[1] = d->last_status;
	trace_cmd_done(d->devno, cf->tail.opcode, cf->tail.token, hca_status_name(d->last_status),
		       cf->tail.syndrome, cf->tail.done_cycle - cf->tail.start_cycle);
	hm_eq_post(d, HCA_EQE_CMD, 0, data);
	free(cf);
}

static void cmd_writeback(void *p)
{
	struct cmd_finish *cf = p;
	const size_t off = offsetof(struct hca_cmd_entry, status);

	/* Status, syndrome, cycle stamps and the ownership byte go in one posted write that
	 * ends with the ownership byte, so the driver never sees ownership before status. */
	sim_dma_write(cf->d->fn, cf->d->cmd_entry + off, (const char *)&cf->tail + off,
		      sizeof(cf->tail) - off, cmd_landed, cf);
}

void hm_cmd_finish(struct hm_dev *d, const struct hca_cmd_entry *tail, sim_time_t t)
{
	struct cmd_finish *cf = malloc(sizeof(*cf));

	SIM_ASSERT(cf != NULL, "out of memory");
	cf->d = d;
	cf->tail = *tail;
	cf->tail.own = 0;
	cf->tail.done_cycle = sim_clock_cycles(&d->core, t);
	sim_schedule_owned_at(d->k, t, cmd_writeback, cf);
}

static void dev_dma_fault(void *p, const struct sim_dma_fault *f)
{
	struct hm_dev *d = p;
	uint32_t data[6] = { (uint32_t)f->addr, (uint32_t)(f->addr >> 32), (uint32_t)f->len,
			     f->perm, 0, 0 };

	trace_warn_dma(d->devno, f->addr, f->len, f->perm == SIM_DMA_READ ? "read" : "write");
	hm_eq_post(d, HCA_EQE_DMA_FAULT, 0, data);
}

struct hm_dev *hm_dev_create(const struct sim_config *cfg, int devno, int host)
{
	struct hm_dev *d = calloc(1, sizeof(*d));

	SIM_ASSERT(d != NULL, "out of memory");
	d->devno = devno;
	d->host = host;
	d->k = sim_kernel(); /* the device runs in the process's kernel (model/system.c) */
	d->cfg = *cfg;
	snprintf(d->name, sizeof(d->name), "hcasim%d", devno);
	d->core = (struct sim_clock){ "core", sim_config_period_ps(cfg->core_mhz) };
	sim_trace_set_dev_clock(devno, d->core.period_ps);
	/* Locally administered EUI-64 style GUIDs: stable and unique per host. */
	d->node_guid = 0x024853fffe000000ull | ((uint64_t)host << 8);
	d->sys_image_guid = d->node_guid;
	d->fn = sim_pcie_fn_create(cfg, host, devno, d->name, &dev_ops, d, HCA_BAR0_BYTES);
	sim_pcie_set_fault_cb(d->fn, dev_dma_fault);
	d->nports = (unsigned)cfg->ports;
	hm_port_init(d);
	d->dp = hm_dp_create(d);
	/* the wires up the block graph (model/blocks.dag) */
	d->wire = (struct hm_wires){ .sq_wake = hm_sched_wake,
				     .sq_retired = hm_req_retired,
				     .sq_retry = hm_sched_retry,
				     .qp_flush = hm_qp_flush,
				     .rx_frame = hm_rx_frame };
	{
		unsigned mode[HM_TWIN_COUNT];

		hm_twin_modes(cfg, mode);

		hm_twins_create(d, mode, twin_models); /* modes checked at boot (hm_twin_check) */
	}
	d->fw = fw_create(d);
	return d;
}

void hm_dev_destroy(struct hm_dev *d)
{
	if (!d)
		return;
	hm_port_loopback_pcap(d, NULL); /* closes the loopback capture */
	hm_mcg_reset(d);
	fw_destroy(d->fw);
	/* the QPs leave the blocks (the context cache forgets them) before the blocks go */
	for (uint32_t qpn = 0; qpn < d->dp->nqps; qpn++)
		hm_qp_destroy(d, qpn);
	hm_twins_destroy(d);
	hm_dp_destroy(d->dp);
	sim_pcie_fn_destroy(d->fn);
	free(d);
}
