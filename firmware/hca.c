/* Firmware: device-wide commands — capabilities, INIT/TEARDOWN, port queries, event queues. */
#include "firmware/fw.h"
#include "model/mcast.h"
#include "model/port.h"
#include "sim/trace.h"

#include <string.h>

#define FW_VERSION_WORD 0x01000000u /* must equal the FW_VERSION register reset value */

struct fw_result fw_cmd_QUERY_HCA_CAP(struct fw_state *fw, const void *in_, void *out_,
				      sim_time_t *t)
{
	const struct sim_config *c = &fw->dev->cfg;
	struct hca_hca_cap *o = out_;

	(void)in_;
	(void)t;
	o->node_guid = fw->dev->node_guid;
	o->sys_image_guid = fw->dev->sys_image_guid;
	o->max_mr_size = 1ull << 40;
	o->page_size_cap = ~0xfffull; /* 4 KiB and larger */
	o->vendor_id = 0x4853;
	o->vendor_part_id = 1;
	o->hw_ver = 1;
	o->fw_ver = FW_VERSION_WORD;
	o->max_qp = (uint32_t)c->max_qp;
	o->max_qp_wr = (uint32_t)c->max_qp_wr;
	o->max_sge = (uint32_t)c->max_sge;
	o->max_cq = (uint32_t)c->max_cq;
	o->max_cqe = (uint32_t)c->max_cqe;
	o->max_mr = (uint32_t)c->max_mr;
	o->max_pd = (uint32_t)c->max_pd;
	o->max_qp_rd_atom = (uint32_t)c->max_rd_atomic;
	o->max_qp_init_rd_atom = (uint32_t)c->max_rd_atomic;
	o->max_srq = (uint32_t)c->max_srq;
	o->max_srq_wr = (uint32_t)c->max_srq_wr;
	o->max_srq_sge = (uint32_t)c->max_sge;
	o->max_ah = (uint32_t)c->max_ah;
	o->max_inline = (uint32_t)c->max_inline;
	o->max_eq = HCA_EQ_MAX;
	o->num_ports = fw->dev->nports;
	o->pkey_table_len = (uint32_t)c->pkey_table;
	o->gid_table_len = HM_GID_TABLE;
	o->cap_flags = HCA_CAP_CURR_QP_STATE_MOD | HCA_CAP_SYS_IMAGE_GUID | HCA_CAP_AUTO_PATH_MIG |
		       HCA_CAP_UD_MCAST | HCA_CAP_MEM_WINDOW | HCA_CAP_XRC;
	o->atomic_cap = 1; /* atomic with respect to this HCA (the responder's read-modify-write) */
	o->core_clock_khz = (uint32_t)(c->core_mhz * 1000);
	o->local_ca_ack_delay = 15;
	o->max_msg_sz = 0x80000000u;
	o->qpc_entry_bytes = HM_QPC_BYTES;
	return FW_OK;
}

struct fw_result fw_cmd_INIT_HCA(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_init_hca_in *in = in_;
	uint64_t need = (HCA_FIRST_QPN + fw->dev->cfg.max_qp) * (uint64_t)HM_QPC_BYTES;

	(void)out_;
	if (fw->dev->initialized)
		return FW_FAIL(BAD_STATE, NONE, 0);
	if (in->qpc_bytes < need)
		return FW_FIELD(BAD_PARAM, hca_init_hca_in, qpc_bytes);
	if (!fw_dma_ok(fw, in->qpc_base, need, SIM_DMA_READ | SIM_DMA_WRITE))
		return FW_FAIL(BAD_ADDR, ADDR, offsetof(struct hca_init_hca_in, qpc_base));
	fw->dev->dp->qpc_base = in->qpc_base;
	fw->dev->initialized = true;
	hm_port_start(fw->dev, *t); /* links train once the command has finished */
	return FW_OK;
}

struct fw_result fw_cmd_TEARDOWN_HCA(struct fw_state *fw, const void *in_, void *out_,
				     sim_time_t *t)
{
	(void)in_;
	(void)out_;
	(void)t;
	hm_port_stop(fw->dev);
	hm_mcg_reset(fw->dev); /* every QP goes, and with them every group */
	fw_reset_objects(fw);
	fw->dev->initialized = false;
	return FW_OK;
}

static const struct hm_port *port_of(struct fw_state *fw, unsigned num)
{
	return num >= 1 && num <= fw->dev->nports ? &fw->dev->ports[num - 1] : NULL;
}

struct fw_result fw_cmd_QUERY_PORT(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_port_in *in = in_;
	const struct hm_port *p = port_of(fw, in->port);

	(void)t;
	if (!p)
		return FW_FIELD(BAD_PARAM, hca_port_in, port);
	hm_port_info(p, out_);
	return FW_OK;
}

struct fw_result fw_cmd_QUERY_GID(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_gid_in *in = in_;
	struct hca_gid_out *o = out_;
	const struct hm_port *p = port_of(fw, in->port);

	(void)t;
	if (!p)
		return FW_FIELD(BAD_PARAM, hca_gid_in, port);
	if (in->index >= HM_GID_TABLE)
		return FW_FIELD(BAD_PARAM, hca_gid_in, index);
	if (in->index < p->ngids) {
		memcpy(o->gid, p->gids[in->index], 16);
		o->type = p->gid_type[in->index];
		o->valid = 1;
	}
	return FW_OK;
}

struct fw_result fw_cmd_QUERY_PKEY(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_pkey_in *in = in_;
	struct hca_pkey_out *o = out_;
	const struct hm_port *p = port_of(fw, in->port);

	(void)t;
	if (!p)
		return FW_FIELD(BAD_PARAM, hca_pkey_in, port);
	if (in->index >= fw->dev->cfg.pkey_table)
		return FW_FIELD(BAD_PARAM, hca_pkey_in, index);
	o->pkey = in->index < 64 ? p->pkeys[in->index] : 0;
	return FW_OK;
}

struct fw_result fw_cmd_CREATE_EQ(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_eq_create_in *in = in_;
	struct hca_handle_out *o = out_;
	unsigned n;

	(void)t;
	if (in->log_size < 1 || in->log_size > 16)
		return FW_FIELD(BAD_PARAM, hca_eq_create_in, log_size);
	if (in->vector >= SIM_PCIE_MAX_VECTORS)
		return FW_FIELD(BAD_PARAM, hca_eq_create_in, vector);
	if (!fw_dma_ok(fw, in->ring_addr, (uint64_t)HCA_EQE_BYTES << in->log_size, SIM_DMA_WRITE))
		return FW_FAIL(BAD_ADDR, ADDR, offsetof(struct hca_eq_create_in, ring_addr));
	for (n = 0; n < HCA_EQ_MAX && fw->dev->eqs[n].live; n++)
		;
	if (n == HCA_EQ_MAX)
		return FW_FAIL(NO_RESOURCES, LIMIT, 0);
	fw->dev->eqs[n] = (struct hm_eq){ .live = true,
					  .ring_addr = in->ring_addr,
					  .log_size = in->log_size,
					  .vector = in->vector,
					  .event_mask = in->event_mask };
	o->handle = n;
	trace_fw_eq_create(fw->dev->devno, n, in->log_size, in->vector, in->event_mask);
	return FW_OK;
}

struct fw_result fw_cmd_DESTROY_EQ(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_handle_in *in = in_;
	uint32_t users = 0;

	(void)out_;
	(void)t;
	if (in->handle >= HCA_EQ_MAX || !fw->dev->eqs[in->handle].live)
		return FW_HANDLE(hca_handle_in, handle);
	for (uint32_t i = 0; i < fw->cqs.cap; i++) {
		const struct fw_cq *cq = fw_obj(&fw->cqs, i);

		if (cq && cq->eqn == in->handle)
			users++;
	}
	if (users)
		return FW_FAIL(BUSY, BUSY, users);
	fw->dev->eqs[in->handle].live = false;
	trace_fw_eq_destroy(fw->dev->devno, in->handle);
	return FW_OK;
}

/* ---- user contexts (docs/architecture.md#ownership) ---- */

struct fw_result fw_cmd_ALLOC_UCTX(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_uctx_in *in = in_;
	struct hca_handle_out *o = out_;
	struct fw_uctx *u;
	int64_t uid;

	(void)t;
	if (!in->pasid || in->pasid > HCA_PASID_MAX)
		return FW_FIELD(BAD_PARAM, hca_uctx_in, pasid);
	if (in->rsvd)
		return FW_FIELD(BAD_PARAM, hca_uctx_in, rsvd);
	uid = fw_obj_alloc(&fw->uctxs);
	if (uid < 0)
		return FW_FAIL(NO_RESOURCES, LIMIT, 0);
	u = fw_obj(&fw->uctxs, (uint32_t)uid);
	u->uid = 0;
	u->pasid = in->pasid;
	u->objs = 0;
	fw->dev->uctx_live[uid] = true;
	o->handle = (uint32_t)uid;
	trace_fw_uctx_alloc(fw->dev->devno, o->handle, in->pasid);
	return FW_OK;
}

struct fw_result fw_cmd_DEALLOC_UCTX(struct fw_state *fw, const void *in_, void *out_,
				     sim_time_t *t)
{
	const struct hca_handle_in *in = in_;
	struct fw_uctx *u = fw_obj(&fw->uctxs, in->handle);

	(void)out_;
	(void)t;
	if (!u)
		return FW_HANDLE(hca_handle_in, handle);
	if (u->objs)
		return FW_FAIL(BUSY, BUSY, u->objs);
	fw_obj_free(&fw->uctxs, in->handle);
	fw->dev->uctx_live[in->handle] = false;
	trace_fw_uctx_dealloc(fw->dev->devno, in->handle);
	return FW_OK;
}
