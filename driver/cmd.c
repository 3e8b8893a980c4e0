/* Driver: command submission through the mailbox, the event queue.
 *
 * Command sequence (each step's ordering need is stated where it is done):
 *   1. write input to the input mailbox, fill the entry, set own = device;
 *   2. ring CMD_DOORBELL with the token (a posted MMIO write, ordered after the stores of 1 —
 *      on silicon a wmb() between them; here the stores are visible at once);
 *   3. wait: poll the entry's own byte (charging host.poll_ns per poll), or sleep until the
 *      CMD event for our token arrives through EQ 0 and MSI-X;
 *   4. read status and output (on silicon an rmb() after seeing own == 0). */
#include "driver/drv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CMD_IN_OFF 256
#define CMD_OUT_OFF 512
#define CMD_PAGE_BYTES 4096

int drv_fail(int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hcasim_error(-err, "%s", msg);
	errno = err;
	return err;
}

/* ---- event queue 0 ---- */

static void eq_irq(void *arg, unsigned vector)
{
	struct drv_dev *d = arg;

	(void)vector;
	d->irq_pending = true;
}

void drv_eq_process(struct drv_dev *d)
{
	const uint32_t size = 1u << DRV_EQ_LOG_SIZE;
	bool any = false;

	d->irq_pending = false;
	for (;;) {
		struct hca_eqe *e = &d->eq[d->eq_ci & (size - 1)];
		uint8_t want = ((d->eq_ci >> DRV_EQ_LOG_SIZE) & 1) ? 0 : 1;

		if ((e->owner & 1) != want)
			break;
		/* rmb() on silicon: read the EQE body only after its owner bit. */
		switch (e->type) {
		case HCA_EQE_CMD:
			if (e->data[0] == d->token)
				d->cmd_done = true;
			break;
		case HCA_EQE_PORT_CHANGE: {
			struct ibv_async_event ev = { .event_type = e->subtype == IBV_PORT_ACTIVE
									   ? IBV_EVENT_PORT_ACTIVE
									   : IBV_EVENT_PORT_ERR };

			ev.element.port_num = (int)e->data[0];
			/* Only ACTIVE and DOWN are events (IBA 11.6.3); INIT/ARMED are not. */
			if (e->subtype == IBV_PORT_ACTIVE || e->subtype == IBV_PORT_DOWN)
				drv_post_async(d, &ev);
			break;
		}
		case HCA_EQE_PORT_INFO:
			if (e->subtype == HCA_PORT_INFO_LID) {
				struct ibv_async_event ev = { .event_type = IBV_EVENT_LID_CHANGE };

				ev.element.port_num = (int)e->data[0];
				drv_post_async(d, &ev);
			}
			break;
		case HCA_EQE_DMA_FAULT:
			d->dma_faults_seen++;
			fprintf(
			    stderr,
			    "hcasim: %s: device reported a DMA fault at 0x%llx (%u bytes, %s)\n",
			    d->ibdev.name,
			    (unsigned long long)e->data[0] | ((unsigned long long)e->data[1] << 32),
			    e->data[2], e->data[3] == HCASIM_DMA_READ ? "read" : "write");
			break;
		default:
			drv_dp_event(d, e);
			break;
		}
		d->eq_ci++;
		any = true;
	}
	/* Report the consumer index and re-arm in one write. */
	if (any || d->cmd_irq)
		hcasim_mmio_write(d->fn, 0, HCA_REG_EQ_DOORBELL, 4, HCA_EQ_DB(d->eqn, 1, d->eq_ci));
}

/* ---- commands ---- */

static bool irq_pending(void *p)
{
	return ((struct drv_dev *)p)->irq_pending;
}

/* Describe a failed command: status, and the field or rule the syndrome names. */
static void cmd_message(const struct hca_cmd_desc *c, uint8_t status, uint32_t syn, char *buf,
			size_t len)
{
	uint32_t detail = HCA_SYN_DETAIL(syn);
	char field[96] = "";

	switch (HCA_SYN_REASON(syn)) {
	case HCA_SYN_FIELD:
	case HCA_SYN_HANDLE:
	case HCA_SYN_ADDR:
	case HCA_SYN_ENTRY: {
		const char *s = HCA_SYN_REASON(syn) == HCA_SYN_ENTRY ? "hca_cmd_entry" : c->in;

		if (!hca_field_path(s, detail, field, sizeof(field)))
			snprintf(field, sizeof(field), "offset %u", detail);
		if (status == HCA_STATUS_NOT_OWNER) {
			snprintf(buf, len, HCA_SYN_REASON(syn) == HCA_SYN_ADDR ?
				 "%s: field %s: memory outside this context's IOMMU domain (NOT_OWNER)" :
				 "%s: field %s names an object of another user context (NOT_OWNER)",
				 c->name, field);
			return;
		}
		snprintf(buf, len, "%s: %s: %sfield %s", c->name, hca_status_doc(status),
			 HCA_SYN_REASON(syn) == HCA_SYN_ENTRY ? "command entry " : "", field);
		return;
	}
	case HCA_SYN_TRANSITION:
		snprintf(buf, len, "%s: invalid QP state transition %s -> %s", c->name,
			 hca_qps_name(detail >> 4), hca_qps_name(detail & 0xf));
		return;
	case HCA_SYN_MISSING:
		snprintf(buf, len, "%s: required attribute %s is missing for this transition",
			 c->name, hca_qpa_name(detail));
		return;
	case HCA_SYN_EXTRA:
		snprintf(buf, len, "%s: attribute %s is not allowed in this transition", c->name,
			 hca_qpa_name(detail));
		return;
	case HCA_SYN_CAP:
		snprintf(buf, len, "%s: attribute %s needs a device capability this HCA does not "
			 "report", c->name, hca_qpa_name(detail));
		return;
	case HCA_SYN_CUR_STATE:
		snprintf(buf, len, "%s: IBV_QP_CUR_STATE differs from the QP's state %s", c->name,
			 hca_qps_name(detail));
		return;
	case HCA_SYN_ROCE_GRH:
		snprintf(buf, len, "%s: a connected QP on a RoCE port needs a GRH (ah_attr.is_global)",
			 c->name);
		return;
	case HCA_SYN_PRIVILEGED:
		snprintf(buf, len, "%s: the device owner's command alone, issued for user context %u "
			 "(NOT_OWNER)", c->name, detail);
		return;
	case HCA_SYN_BUSY:
		snprintf(buf, len, "%s: still in use by %u object(s)", c->name, detail);
		return;
	case HCA_SYN_LIMIT:
		snprintf(buf, len, "%s: device limit reached", c->name);
		return;
	case HCA_SYN_LENGTH:
		snprintf(buf, len, "%s: %s does not match the format", c->name,
			 detail ? "out_len" : "in_len");
		return;
	default:
		snprintf(buf, len, "%s: %s", c->name, hca_status_doc(status));
	}
}

/* Run a command for user context uid (0: the device owner, through CMD_DOORBELL). */
static int cmd_exec(struct drv_dev *d, uint16_t uid, uint16_t opcode, const void *in,
		    size_t in_len, void *out, size_t out_len)
{
	volatile struct hca_cmd_entry *e = (volatile struct hca_cmd_entry *)d->cmd_page;
	const struct hca_cmd_desc *c = hca_cmd_find(opcode);
	struct hcasim_cmd_record *rec;
	uint64_t start = hcasim_now_ps();
	char msg[256];
	int rc = 0;

	if (!c || in_len > CMD_OUT_OFF - CMD_IN_OFF || out_len > CMD_PAGE_BYTES - CMD_OUT_OFF)
		return drv_fail(EINVAL, "driver: command 0x%x with %zu/%zu bytes", opcode, in_len,
				out_len);
	memcpy(d->cmd_page + CMD_IN_OFF, in, in_len);
	memset(d->cmd_page + CMD_OUT_OFF, 0, out_len);
	memset((void *)e, 0, sizeof(*e));
	e->opcode = opcode;
	e->in_len = (uint32_t)in_len;
	e->out_len = (uint32_t)out_len;
	e->token = ++d->token;
	e->in_addr = d->cmd_iova + CMD_IN_OFF;
	e->out_addr = d->cmd_iova + CMD_OUT_OFF;
	e->own = HCA_CMD_OWN_DEVICE;
	d->cmd_done = false;
	if (uid)
		hcasim_mmio_write(d->fn, 0,
				  HCA_REGION_UAR + (uint64_t)uid * HCA_UAR_PAGE_BYTES + HCA_UAR_CMD_DB,
				  8, d->cmd_iova);
	else
		hcasim_mmio_write(d->fn, 0, HCA_REG_CMD_DOORBELL, 4, d->token);
	if (d->cmd_irq) {
		/* Sleep until the CMD event for our token arrives (MSI-X, then EQ 0). The timeout
		 * runs from the doorbell: interrupts for other events, or for entries the driver
		 * cannot read, do not extend it. */
		while (!d->cmd_done) {
			uint64_t spent = hcasim_now_ps() - start;
			int r = spent >= d->cmd_timeout_ps
					? -ETIMEDOUT
					: hcasim_host_wait(irq_pending, d, d->cmd_timeout_ps - spent);

			if (r) {
				rc = r == -EDEADLK ? EDEADLK : ETIMEDOUT;
				break;
			}
			drv_eq_process(d);
		}
	} else {
		while (e->own & HCA_CMD_OWN_DEVICE) {
			if (hcasim_now_ps() - start > d->cmd_timeout_ps) {
				rc = ETIMEDOUT;
				break;
			}
			if (hcasim_host_idle() == 1) {
				rc = EDEADLK;
				break;
			}
			hcasim_host_advance(d->poll_ps);
		}
		if (d->irq_pending)
			drv_eq_process(d);
	}
	if (!rc && (e->own & HCA_CMD_OWN_DEVICE))
		rc = EIO; /* event before ownership: a device bug */
	rec = &d->log[d->log_next];
	d->log_next = (d->log_next + 1) % DRV_CMD_LOG;
	if (d->log_count < DRV_CMD_LOG)
		d->log_count++;
	*rec = (struct hcasim_cmd_record){ opcode,	  c->name,	  rc ? 0xff : e->status,
					   start,	  hcasim_now_ps(), e->start_cycle,
					   e->done_cycle };
	if (rc)
		return drv_fail(rc, "%s: command %s did not complete (%s)", d->ibdev.name,
				c->name, rc == EDEADLK ? "device idle, no completion will come" :
				rc == EIO ? "completion event before ownership" : "timed out");
	if (e->status != HCA_STATUS_OK) {
		cmd_message(c, e->status, e->syndrome, msg, sizeof(msg));
		return drv_fail(hca_status_errno(e->status), "%s: %s", d->ibdev.name, msg);
	}
	memcpy(out, d->cmd_page + CMD_OUT_OFF, out_len);
	return 0;
}

/* A command holds the simulation from its doorbell to its event (the EQ is read on the way). */
static int cmd_held(struct drv_dev *d, uint16_t uid, uint16_t opcode, const void *in,
		    size_t in_len, void *out, size_t out_len)
{
	int rc;

	hcasim_bus_hold();
	rc = cmd_exec(d, uid, opcode, in, in_len, out, out_len);
	hcasim_bus_release();
	return rc;
}

int drv_cmd(struct drv_dev *d, uint16_t opcode, const void *in, size_t in_len, void *out,
	    size_t out_len)
{
	return cmd_held(d, 0, opcode, in, in_len, out, out_len);
}

int drv_uctx_cmd(struct ibv_context *ctx, uint16_t opcode, const void *in, size_t in_len,
		 void *out, size_t out_len)
{
	struct drv_ctx *c = drv_ctx_of(ctx);

	if (!c)
		return EINVAL;
	return cmd_held(c->dev, c->uid, opcode, in, in_len, out, out_len);
}

int drv_uctx_open(struct drv_ctx *c)
{
	struct drv_dev *d = c->dev;
	struct hca_uctx_in in = { 0 };
	struct hca_handle_out out;
	int rc;

	/* One IOMMU domain per context, as one per process on a host with PASIDs. */
	d->next_pasid = d->next_pasid % HCA_PASID_MAX + 1;
	in.pasid = d->next_pasid;
	rc = drv_cmd(d, HCA_CMD_ALLOC_UCTX, &in, sizeof(in), &out, sizeof(out));
	if (rc)
		return rc;
	c->uid = (uint16_t)out.handle;
	c->pasid = in.pasid;
	return 0;
}

int drv_uctx_close(struct drv_ctx *c)
{
	struct hca_handle_in in = { .handle = c->uid };
	struct hca_cmd_empty none;

	return drv_cmd(c->dev, HCA_CMD_DEALLOC_UCTX, &in, sizeof(in), &none, sizeof(none));
}

int drv_cmd_setup(struct drv_dev *d)
{
	struct hca_cmd_empty none = { 0 };
	struct hca_eq_create_in eq = { 0 };
	struct hca_handle_out h;
	char mode[32];
	int rc;

	rc = drv_dma_alloc(d, CMD_PAGE_BYTES, HCASIM_DMA_READ | HCASIM_DMA_WRITE,
			   (void **)&d->cmd_page, &d->cmd_map, &d->cmd_iova);
	if (rc)
		return rc;
	hcasim_mmio_write(d->fn, 0, HCA_REG_CMDQ_ADDR_LO, 4, (uint32_t)d->cmd_iova);
	hcasim_mmio_write(d->fn, 0, HCA_REG_CMDQ_ADDR_HI, 4, (uint32_t)(d->cmd_iova >> 32));
	/* Until EQ 0 exists, commands are polled (as mlx5 does at probe). */
	d->cmd_irq = false;
	rc = drv_cmd(d, HCA_CMD_QUERY_HCA_CAP, &none, sizeof(none), &d->cap, sizeof(d->cap));
	if (rc)
		return rc;
	{
		/* The QP context backing store the device asks for: mapped anonymous memory,
		 * so untouched slots cost no host memory. */
		struct hca_init_hca_in init = { 0 };
		size_t bytes = (size_t)(HCA_FIRST_QPN + d->cap.max_qp) * d->cap.qpc_entry_bytes;
		void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			       0);
		int64_t id;

		if (p == MAP_FAILED)
			return drv_fail(ENOMEM, "probe: no memory for a %zu-byte QP context store",
					bytes);
		id = hcasim_dma_map(d->fn, p, bytes, HCASIM_DMA_READ | HCASIM_DMA_WRITE,
				    &init.qpc_base);
		if (id < 0) {
			munmap(p, bytes);
			return drv_fail((int)-id, "probe: %s", hcasim_last_error());
		}
		d->qpc_store = p;
		d->qpc_bytes = bytes;
		init.qpc_bytes = bytes;
		rc = drv_cmd(d, HCA_CMD_INIT_HCA, &init, sizeof(init), &none, sizeof(none));
		if (rc)
			return rc;
	}
	rc = drv_dma_alloc(d, HCA_EQE_BYTES << DRV_EQ_LOG_SIZE, HCASIM_DMA_READ | HCASIM_DMA_WRITE,
			   (void **)&d->eq, &d->eq_map, &eq.ring_addr);
	if (rc)
		return rc;
	hcasim_config_get("driver.cmd_completion", mode, sizeof(mode));
	eq.log_size = DRV_EQ_LOG_SIZE;
	eq.vector = 0;
	eq.event_mask = (1ull << HCA_EQE_PORT_CHANGE) | (1ull << HCA_EQE_DMA_FAULT) |
			(1ull << HCA_EQE_COMP) | (1ull << HCA_EQE_QP_EVENT) |
			(1ull << HCA_EQE_CQ_ERROR) | (1ull << HCA_EQE_SRQ_LIMIT) |
			(1ull << HCA_EQE_PORT_INFO) | (1ull << HCA_EQE_SRQ_ERROR);
	if (!strcmp(mode, "interrupt"))
		eq.event_mask |= 1ull << HCA_EQE_CMD;
	rc = drv_cmd(d, HCA_CMD_CREATE_EQ, &eq, sizeof(eq), &h, sizeof(h));
	if (rc)
		return rc;
	d->eqn = h.handle;
	d->eq_ci = 0;
	hcasim_irq_set(d->fn, eq.vector, eq_irq, d);
	hcasim_mmio_write(d->fn, 0, HCA_REG_EQ_DOORBELL, 4, HCA_EQ_DB(d->eqn, 1, 0));
	d->cmd_irq = !strcmp(mode, "interrupt");
	return 0;
}
