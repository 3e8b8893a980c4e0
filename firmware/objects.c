/* Firmware: protection domains, memory keys, completion queues, shared receive queues. */
#include "firmware/fw.h"
#include "model/qpc.h"
#include "sim/trace.h"

#include <string.h>

#define DEV(fw) ((fw)->dev->devno)

/* ---- PD ---- */

struct fw_result fw_cmd_ALLOC_PD(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	struct hca_handle_out *o = out_;
	int64_t pdn = fw_obj_new(fw, &fw->pds);

	(void)in_;
	(void)t;
	if (pdn < 0)
		return FW_FAIL(NO_RESOURCES, LIMIT, 0);
	o->handle = (uint32_t)pdn;
	trace_fw_pd_alloc(DEV(fw), o->handle);
	return FW_OK;
}

struct fw_result fw_cmd_DEALLOC_PD(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_handle_in *in = in_;
	struct fw_result r;
	struct fw_pd *pd = FW_ACT(fw, &fw->pds, in->handle, hca_handle_in, handle, &r);

	(void)out_;
	(void)t;
	if (!pd)
		return r;
	if (pd->refs)
		return FW_FAIL(BUSY, BUSY, pd->refs);
	fw_obj_del(fw, &fw->pds, in->handle);
	trace_fw_pd_dealloc(DEV(fw), in->handle);
	return FW_OK;
}

/* ---- MKEY ---- */

struct fw_result fw_cmd_CREATE_MKEY(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_mkey_in *in = in_;
	struct hca_mkey_out *o = out_;
	struct fw_result r;
	struct fw_pd *pd = FW_USE(fw, &fw->pds, in->pdn, hca_mkey_in, pdn, &r);
	unsigned perm = SIM_DMA_READ;
	struct fw_mkey *mk;
	int64_t idx;

	(void)t;
	if (!pd)
		return r;
	if (in->access & ~HCA_ACCESS_MR_ALL)
		return FW_FIELD(BAD_PARAM, hca_mkey_in, access);
	/* IBA 10.6.3.1 (C10-43): remote write or atomic needs local write. */
	if ((in->access & (HCA_ACCESS_REMOTE_WRITE | HCA_ACCESS_REMOTE_ATOMIC)) &&
	    !(in->access & HCA_ACCESS_LOCAL_WRITE))
		return FW_FIELD(BAD_PARAM, hca_mkey_in, access);
	if (!in->length || in->length > (1ull << 40) || in->start + in->length < in->start)
		return FW_FIELD(BAD_PARAM, hca_mkey_in, length);
	if (in->iova + in->length < in->iova)
		return FW_FIELD(BAD_PARAM, hca_mkey_in, iova);
	if (in->access & (HCA_ACCESS_LOCAL_WRITE | HCA_ACCESS_REMOTE_WRITE))
		perm |= SIM_DMA_WRITE;
	/* the memory must be mapped, and in the creating context's IOMMU domain */
	r = fw_dma_mine(fw, in->start, in->length, perm, offsetof(struct hca_mkey_in, start));
	if (r.status)
		return r;
	idx = fw_obj_new(fw, &fw->mkeys);
	if (idx < 0 || idx >= 0xffffff) /* key 0xffffffff is HCA_LKEY_END */
		return FW_FAIL(NO_RESOURCES, LIMIT, 0);
	mk = fw_obj(&fw->mkeys, (uint32_t)idx);
	mk->variant++;
	mk->mw_type = 0;
	mk->pdn = in->pdn;
	mk->access = in->access;
	mk->start = in->start;
	mk->length = in->length;
	mk->iova = in->iova;
	pd->refs++;
	o->lkey = ((uint32_t)idx << 8) | mk->variant;
	o->rkey = o->lkey;
	hm_mkey_write(fw->dev, (uint32_t)idx,
		      &(struct hm_mkey){ .valid = true, .variant = mk->variant, .pdn = in->pdn,
					 .access = in->access, .va = in->iova, .len = in->length,
					 .iova = in->start });
	trace_fw_mkey_create(DEV(fw), o->lkey, in->pdn, in->start, in->length, in->access);
	return FW_OK;
}

struct fw_result fw_cmd_DESTROY_MKEY(struct fw_state *fw, const void *in_, void *out_,
				     sim_time_t *t)
{
	const struct hca_handle_in *in = in_;
	struct fw_result r;
	struct fw_mkey *mk = FW_ACT(fw, &fw->mkeys, in->handle >> 8, hca_handle_in, handle, &r);

	(void)out_;
	(void)t;
	if (!mk)
		return r;
	if (mk->mw_type || mk->variant != (uint8_t)in->handle)
		return FW_HANDLE(hca_handle_in, handle);
	/* IBA 10.6.7.1: a region with memory windows bound to it stays registered */
	if (hm_mkey_windows_on(fw->dev, in->handle >> 8))
		return FW_FAIL(BUSY, BUSY, hm_mkey_windows_on(fw->dev, in->handle >> 8));
	((struct fw_pd *)fw_obj(&fw->pds, mk->pdn))->refs--;
	fw_obj_del(fw, &fw->mkeys, in->handle >> 8);
	hm_mkey_write(fw->dev, in->handle >> 8, &(struct hm_mkey){ .variant = mk->variant });
	trace_fw_mkey_destroy(DEV(fw), in->handle);
	return FW_OK;
}

/* ---- MW: memory windows share the key table with the regions (IBA 10.6.7) ---- */

struct fw_result fw_cmd_ALLOC_MW(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_mw_in *in = in_;
	struct hca_handle_out *o = out_;
	struct fw_result r;
	struct fw_pd *pd = FW_USE(fw, &fw->pds, in->pdn, hca_mw_in, pdn, &r);
	struct fw_mkey *mk;
	int64_t idx;

	(void)t;
	if (!pd)
		return r;
	if (in->type != HCA_MW_TYPE_1 && in->type != HCA_MW_TYPE_2)
		return FW_FIELD(BAD_PARAM, hca_mw_in, type);
	idx = fw_obj_new(fw, &fw->mkeys);
	if (idx < 0 || idx >= 0xffffff)
		return FW_FAIL(NO_RESOURCES, LIMIT, 0);
	mk = fw_obj(&fw->mkeys, (uint32_t)idx);
	mk->variant++;
	mk->mw_type = (uint8_t)in->type;
	mk->pdn = in->pdn;
	mk->access = 0;
	mk->start = mk->length = mk->iova = 0;
	pd->refs++;
	o->handle = ((uint32_t)idx << 8) | mk->variant;
	hm_mkey_write(fw->dev, (uint32_t)idx,
		      &(struct hm_mkey){ .valid = true, .variant = mk->variant,
					 .mw_type = (uint8_t)in->type, .pdn = in->pdn });
	trace_fw_mw_alloc(DEV(fw), o->handle, in->pdn, in->type);
	return FW_OK;
}

struct fw_result fw_cmd_DEALLOC_MW(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_handle_in *in = in_;
	struct fw_result r = FW_HANDLE(hca_handle_in, handle);
	struct fw_mkey *mk = in->handle < 0xffffff ?
		FW_ACT(fw, &fw->mkeys, in->handle, hca_handle_in, handle, &r) : NULL;
	const struct hm_mkey *hw;

	(void)out_;
	(void)t;
	if (!mk)
		return r;
	if (!mk->mw_type)
		return FW_HANDLE(hca_handle_in, handle);
	hw = &fw->dev->dp->mkeys[in->handle];
	trace_fw_mw_dealloc(DEV(fw), in->handle, hw->bound);
	/* the variant the window has now (binds change it) is the one not to reuse */
	mk->variant = hw->variant;
	((struct fw_pd *)fw_obj(&fw->pds, mk->pdn))->refs--;
	fw_obj_del(fw, &fw->mkeys, in->handle);
	hm_mkey_write(fw->dev, in->handle, &(struct hm_mkey){ .variant = mk->variant });
	return FW_OK;
}

/* ---- CQ ---- */

static struct fw_result check_cq_ring(struct fw_state *fw, uint32_t cqe, uint32_t log_size,
				      uint64_t ring, size_t off_cqe, size_t off_log, size_t off_ring)
{
	if (!cqe || cqe > fw->dev->cfg.max_cqe)
		return (struct fw_result){ HCA_STATUS_BAD_PARAM, HCA_SYN(HCA_SYN_FIELD, off_cqe) };
	if (log_size > 24 || (1u << log_size) != hca_cq_ring_entries(cqe))
		return (struct fw_result){ HCA_STATUS_BAD_PARAM, HCA_SYN(HCA_SYN_FIELD, off_log) };
	if (!fw_dma_ok(fw, ring, (uint64_t)HCA_CQE_BYTES << log_size, SIM_DMA_WRITE))
		return (struct fw_result){ HCA_STATUS_BAD_ADDR, HCA_SYN(HCA_SYN_ADDR, off_ring) };
	return FW_OK;
}

static bool eq_live(struct fw_state *fw, uint32_t eqn)
{
	return eqn < HCA_EQ_MAX && fw->dev->eqs[eqn].live;
}

struct fw_result fw_cmd_CREATE_CQ(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_cq_in *in = in_;
	struct hca_cq_out *o = out_;
	struct fw_result r;
	struct fw_cq *cq;
	int64_t cqn;

	(void)t;
	r = check_cq_ring(fw, in->cqe, in->log_size, in->ring_addr, offsetof(struct hca_cq_in, cqe),
			  offsetof(struct hca_cq_in, log_size),
			  offsetof(struct hca_cq_in, ring_addr));
	if (r.status)
		return r;
	if (!eq_live(fw, in->eqn))
		return FW_HANDLE(hca_cq_in, eqn);
	if (!fw_dma_ok(fw, in->db_addr, 8, SIM_DMA_READ | SIM_DMA_WRITE))
		return FW_FAIL(BAD_ADDR, ADDR, offsetof(struct hca_cq_in, db_addr));
	cqn = fw_obj_new(fw, &fw->cqs);
	if (cqn < 0)
		return FW_FAIL(NO_RESOURCES, LIMIT, 0);
	cq = fw_obj(&fw->cqs, (uint32_t)cqn);
	cq->cqe = (1u << in->log_size) - 1;
	cq->log_size = in->log_size;
	cq->ring_addr = in->ring_addr;
	cq->db_addr = in->db_addr;
	cq->eqn = in->eqn;
	cq->refs = 0;
	o->cqn = (uint32_t)cqn;
	o->cqe = cq->cqe;
	hm_cq_write(fw->dev, o->cqn,
		    &(struct hm_cq){ .valid = true, .uid = fw->uid, .ring = in->ring_addr,
				     .db = in->db_addr,
				     .log_size = in->log_size, .eqn = in->eqn });
	trace_fw_cq_create(DEV(fw), o->cqn, o->cqe, in->eqn);
	return FW_OK;
}

struct fw_result fw_cmd_RESIZE_CQ(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_cq_resize_in *in = in_;
	struct hca_cq_out *o = out_;
	struct fw_result r;
	struct fw_cq *cq = FW_ACT(fw, &fw->cqs, in->cqn, hca_cq_resize_in, cqn, &r);

	(void)t;
	if (!cq)
		return r;
	r = check_cq_ring(fw, in->cqe, in->log_size, in->ring_addr,
			  offsetof(struct hca_cq_resize_in, cqe),
			  offsetof(struct hca_cq_resize_in, log_size),
			  offsetof(struct hca_cq_resize_in, ring_addr));
	if (r.status)
		return r;
	{
		/* Unread CQEs move to the start of the new ring (their owner bits rewritten for
		 * its first pass); they must fit. */
		struct hm_cq *hw = hm_cq_get(fw->dev, in->cqn);
		uint64_t rec = 0;
		uint32_t ci, n, osize = 1u << hw->log_size;

		if (sim_dma_read_timed(fw->dev->fn, hw->db, &rec, sizeof(rec), t))
			return FW_FAIL(BAD_ADDR, ADDR, 0);
		ci = (hw->pi & ~0xffffffu) | ((uint32_t)rec & 0xffffffu);
		if (ci > hw->pi)
			ci -= 0x1000000u;
		n = hw->pi - ci <= osize ? hw->pi - ci : 0;
		if (n > (1u << in->log_size) - 1)
			return FW_FIELD(BAD_PARAM, hca_cq_resize_in, cqe);
		for (uint32_t i = 0; i < n; i++) {
			struct hca_cqe e;

			sim_dma_read_timed(fw->dev->fn,
					   hw->ring + (uint64_t)((ci + i) & (osize - 1)) * HCA_CQE_BYTES,
					   &e, sizeof(e), t);
			e.owner = 1;
			sim_dma_write_timed(fw->dev->fn, in->ring_addr + (uint64_t)i * HCA_CQE_BYTES,
					    &e, sizeof(e), t);
		}
		hw->ring = in->ring_addr;
		hw->log_size = in->log_size;
		hw->pi = n;
		hw->ci = 0;
	}
	cq->cqe = (1u << in->log_size) - 1;
	cq->log_size = in->log_size;
	cq->ring_addr = in->ring_addr;
	o->cqn = in->cqn;
	o->cqe = cq->cqe;
	trace_fw_cq_resize(DEV(fw), in->cqn, cq->cqe);
	return FW_OK;
}

struct fw_result fw_cmd_DESTROY_CQ(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_handle_in *in = in_;
	struct fw_result r;
	struct fw_cq *cq = FW_ACT(fw, &fw->cqs, in->handle, hca_handle_in, handle, &r);

	(void)out_;
	(void)t;
	if (!cq)
		return r;
	if (cq->refs)
		return FW_FAIL(BUSY, BUSY, cq->refs);
	fw_obj_del(fw, &fw->cqs, in->handle);
	hm_cq_write(fw->dev, in->handle, &(struct hm_cq){ .valid = false });
	trace_fw_cq_destroy(DEV(fw), in->handle);
	return FW_OK;
}

/* ---- SRQ ---- */

static void srq_out(uint32_t srqn, const struct fw_srq *s, struct hca_srq_out *o)
{
	o->srqn = srqn;
	o->max_wr = s->max_wr;
	o->max_sge = s->max_sge;
	o->srq_limit = s->limit;
}

struct fw_result fw_cmd_CREATE_SRQ(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_srq_create_in *in = in_;
	const struct sim_config *c = &fw->dev->cfg;
	struct fw_result r;
	struct fw_pd *pd = FW_USE(fw, &fw->pds, in->pdn, hca_srq_create_in, pdn, &r);
	uint32_t entries, stride;
	struct fw_srq *s;
	int64_t srqn;

	(void)t;
	if (!pd)
		return r;
	if (!in->max_wr || in->max_wr > c->max_srq_wr)
		return FW_FIELD(BAD_PARAM, hca_srq_create_in, max_wr);
	if (in->max_sge > c->max_sge)
		return FW_FIELD(BAD_PARAM, hca_srq_create_in, max_sge);
	if (in->srq_limit)
		return FW_FIELD(BAD_PARAM, hca_srq_create_in, srq_limit); /* armed by MODIFY_SRQ */
	r = fw_xrc_srq_check(fw, in);
	if (r.status)
		return r;
	entries = hca_wq_entries(in->max_wr + 1); /* one slot free to tell full from empty */
	stride = hca_rq_stride(in->max_sge);
	if (!fw_dma_ok(fw, in->ring_addr, (uint64_t)entries * stride, SIM_DMA_READ))
		return FW_FAIL(BAD_ADDR, ADDR, offsetof(struct hca_srq_create_in, ring_addr));
	if (!fw_dma_ok(fw, in->db_addr, 8, SIM_DMA_READ))
		return FW_FAIL(BAD_ADDR, ADDR, offsetof(struct hca_srq_create_in, db_addr));
	srqn = fw_obj_new(fw, &fw->srqs);
	if (srqn < 0)
		return FW_FAIL(NO_RESOURCES, LIMIT, 0);
	s = fw_obj(&fw->srqs, (uint32_t)srqn);
	s->pdn = in->pdn;
	s->max_wr = entries - 1;
	s->max_sge = stride / HCA_SGE_BYTES < c->max_sge ? stride / HCA_SGE_BYTES
							: (uint32_t)c->max_sge;
	s->limit = 0;
	s->ring_addr = in->ring_addr;
	s->db_addr = in->db_addr;
	s->refs = 0;
	s->xrcd = in->xrcd;
	s->cqn = in->cqn;
	pd->refs++;
	fw_xrc_srq_ref(fw, s, 1);
	hm_srq_write(fw->dev, (uint32_t)srqn,
		     &(struct hm_srq){ .valid = true, .uid = fw->uid, .pdn = in->pdn,
				       .ring = in->ring_addr,
				       .entries = entries, .stride = stride, .xrcd = in->xrcd,
				       .cqn = in->cqn });
	srq_out((uint32_t)srqn, s, out_);
	trace_fw_srq_create(DEV(fw), (long long)srqn, in->pdn, s->max_wr, s->max_sge);
	if (in->xrcd)
		trace_fw_xrc_srq(DEV(fw), (uint32_t)srqn, in->xrcd, in->cqn);
	return FW_OK;
}

struct fw_result fw_cmd_MODIFY_SRQ(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_srq_modify_in *in = in_;
	struct fw_result r;
	struct fw_srq *s = FW_ACT(fw, &fw->srqs, in->srqn, hca_srq_modify_in, srqn, &r);

	(void)t;
	if (!s)
		return r;
	if (in->attr_mask & ~3u)
		return FW_FIELD(BAD_PARAM, hca_srq_modify_in, attr_mask);
	if (in->attr_mask & 1u) /* resize: not implemented, and not advertised (SRQ_RESIZE) */
		return FW_FIELD(NOT_SUPPORTED, hca_srq_modify_in, max_wr);
	/* IBA 11.2.3.3: the limit may not exceed the SRQ's size. */
	if ((in->attr_mask & 2u) && in->srq_limit > s->max_wr)
		return FW_FIELD(BAD_PARAM, hca_srq_modify_in, srq_limit);
	if (in->attr_mask & 2u) {
		s->limit = in->srq_limit;
		hm_srq_get(fw->dev, in->srqn)->limit = in->srq_limit;
	}
	srq_out(in->srqn, s, out_);
	return FW_OK;
}

struct fw_result fw_cmd_QUERY_SRQ(struct fw_state *fw, const void *in_, void *out_, sim_time_t *t)
{
	const struct hca_handle_in *in = in_;
	struct fw_result r;
	struct fw_srq *s = FW_ACT(fw, &fw->srqs, in->handle, hca_handle_in, handle, &r);

	(void)t;
	if (!s)
		return r;
	s->limit = hm_srq_get(fw->dev, in->handle)->limit; /* the limit event disarms it */
	srq_out(in->handle, s, out_);
	return FW_OK;
}

struct fw_result fw_cmd_DESTROY_SRQ(struct fw_state *fw, const void *in_, void *out_,
				    sim_time_t *t)
{
	const struct hca_handle_in *in = in_;
	struct fw_result r;
	struct fw_srq *s = FW_ACT(fw, &fw->srqs, in->handle, hca_handle_in, handle, &r);

	(void)out_;
	(void)t;
	if (!s)
		return r;
	if (s->refs)
		return FW_FAIL(BUSY, BUSY, s->refs);
	((struct fw_pd *)fw_obj(&fw->pds, s->pdn))->refs--;
	fw_xrc_srq_ref(fw, s, -1);
	fw_obj_del(fw, &fw->srqs, in->handle);
	hm_srq_write(fw->dev, in->handle, &(struct hm_srq){ .valid = false });
	trace_fw_srq_destroy(DEV(fw), in->handle);
	return FW_OK;
}
