/* Driver: protection domains, memory regions, completion channels and queues, SRQs and
 * address handles. Each verb validates what only the driver can see (NULL and foreign
 * handles, verbs-level flags) and leaves the rest to the firmware's checks. */
#include "driver/drv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* ---- PD ---- */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct drv_dev *d = drv_dev_of(ctx);
	struct hca_cmd_empty none = { 0 };
	struct hca_handle_out out;
	struct drv_pd *pd;

	if (!d)
		return NULL;
	drv_charge_verb(d);
	if (drv_uctx_cmd(ctx, HCA_CMD_ALLOC_PD, &none, sizeof(none), &out, sizeof(out)))
		return NULL;
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		struct hca_handle_in in = { .handle = out.handle };

		drv_uctx_cmd(ctx, HCA_CMD_DEALLOC_PD, &in, sizeof(in), &none, sizeof(none));
		drv_fail(ENOMEM, "ibv_alloc_pd: out of memory");
		return NULL;
	}
	pd->pd.context = ctx;
	pd->pd.handle = out.handle;
	drv_handle_add(pd, DRV_KIND_PD);
	pd->pdn = out.handle;
	return &pd->pd;
}

int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct drv_pd *pd = DRV_OBJ(struct drv_pd, ibpd, DRV_KIND_PD);
	struct hca_handle_in in;
	struct hca_cmd_empty none;
	struct drv_dev *d;
	int rc;

	if (!pd)
		return drv_fail(EINVAL, "ibv_dealloc_pd: not a live PD");
	d = drv_dev_of(pd->pd.context);
	drv_charge_verb(d);
	if (pd->nah)
		return drv_fail(EBUSY, "ibv_dealloc_pd: %u address handle(s) still in the PD",
				pd->nah);
	in = (struct hca_handle_in){ .handle = pd->pdn };
	rc = drv_uctx_cmd(pd->pd.context, HCA_CMD_DEALLOC_PD, &in, sizeof(in), &none, sizeof(none));
	if (rc)
		return rc;
	drv_handle_del(pd);
	free(pd);
	return 0;
}

/* ---- MR ---- */

#define VERBS_MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                        \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
_Static_assert((unsigned)IBV_ACCESS_MW_BIND == (unsigned)HCA_ACCESS_MW_BIND, "MW_BIND crosses the driver unchanged");

/* True if every page of [addr, addr+len) is mapped in this process (what pinning checks). */
static bool range_resident(const void *addr, size_t len)
{
	uintptr_t start = (uintptr_t)addr & ~(uintptr_t)4095, end = (uintptr_t)addr + len;
	unsigned char vec[64];

	while (start < end) {
		size_t chunk = end - start > 64 * 4096 ? 64 * 4096 : end - start;

		if (mincore((void *)start, chunk, vec) && errno == ENOMEM)
			return false;
		start += (chunk + 4095) & ~(size_t)4095;
	}
	return true;
}

/* Access flags as the kernel's uverbs checks them (ib_check_mr_access): unknown bits are
 * EINVAL, on-demand paging (a capability this device lacks) EOPNOTSUPP, remote write or atomic
 * need local write; MW_BIND goes to the device (memory windows may be bound to the region),
 * ZERO_BASED and HUGETLB are accepted and change nothing here, and
 * the optional range (IBV_ACCESS_OPTIONAL_RANGE, e.g. RELAXED_ORDERING) is ignored. Returns 0
 * with the rights the device is given in *rights, or a positive errno. */
static int mr_access_check(const char *verb, unsigned access, unsigned *rights)
{
	const unsigned known = ((unsigned)IBV_ACCESS_HUGETLB << 1) - 1;

	access &= ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
	if (access & ~known)
		return drv_fail(EINVAL, "%s: access flags 0x%x are unknown", verb, access & ~known);
	if (access & IBV_ACCESS_ON_DEMAND)
		return drv_fail(EOPNOTSUPP, "%s: IBV_ACCESS_ON_DEMAND: this device has no "
				"on-demand paging", verb);
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return drv_fail(EINVAL, "%s: IBV_ACCESS_REMOTE_WRITE/ATOMIC require "
				"IBV_ACCESS_LOCAL_WRITE", verb);
	*rights = access & VERBS_MR_ACCESS;
	return 0;
}

/* Map [addr, addr+length) for the device and create an MKEY for it in PD pdn; on failure
 * nothing is left behind. 0 or a positive errno (message names verb). */
static int mkey_create(struct ibv_context *ctx, const char *verb, uint32_t pdn, void *addr,
		       size_t length, uint64_t iova, unsigned access, int64_t *map,
		       struct hca_mkey_out *out)
{
	struct drv_ctx *c = drv_ctx_of(ctx);
	struct drv_dev *d = c->dev;
	struct hca_mkey_in in = { 0 };
	unsigned perm = HCASIM_DMA_READ, rights = 0;
	int rc = mr_access_check(verb, access, &rights);

	if (rc)
		return rc;
	if (!length)
		return drv_fail(EINVAL, "%s: length 0", verb);
	if ((uintptr_t)addr + length < (uintptr_t)addr)
		return drv_fail(EINVAL, "%s: range wraps the address space", verb);
	if (!addr || !range_resident(addr, length))
		return drv_fail(EFAULT, "%s: [%p, +%zu) is not mapped in this process", verb, addr,
				length);
	if (rights & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE))
		perm |= HCASIM_DMA_WRITE;
	/* into the context's own IOMMU domain: its keys may cover nothing else */
	*map = hcasim_dma_map_pasid(d->fn, c->pasid, addr, length, perm, &in.start);
	if (*map < 0)
		return drv_fail((int)-*map, "%s: %s", verb, hcasim_last_error());
	in.pdn = pdn;
	in.access = rights;
	in.length = length;
	in.iova = iova;
	rc = drv_uctx_cmd(ctx, HCA_CMD_CREATE_MKEY, &in, sizeof(in), out, sizeof(*out));
	if (rc)
		hcasim_dma_unmap(d->fn, *map);
	return rc;
}

static void mkey_destroy(struct ibv_context *ctx, uint32_t lkey, int64_t map)
{
	struct hca_handle_in h = { .handle = lkey };
	struct hca_cmd_empty none;

	drv_uctx_cmd(ctx, HCA_CMD_DESTROY_MKEY, &h, sizeof(h), &none, sizeof(none));
	hcasim_dma_unmap(drv_dev_of(ctx)->fn, map);
}

static struct ibv_mr *reg_mr_common(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
				    unsigned int access)
{
	struct drv_pd *pd = DRV_OBJ(struct drv_pd, ibpd, DRV_KIND_PD);
	struct hca_mkey_out out;
	struct drv_dev *d;
	struct drv_mr *mr;
	int64_t map;

	if (!pd) {
		drv_fail(EINVAL, "ibv_reg_mr: not a live PD");
		return NULL;
	}
	d = drv_dev_of(pd->pd.context);
	drv_charge_verb(d);
	if (mkey_create(pd->pd.context, "ibv_reg_mr", pd->pdn, addr, length, iova, access, &map,
			&out))
		return NULL;
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		mkey_destroy(pd->pd.context, out.lkey, map);
		drv_fail(ENOMEM, "ibv_reg_mr: out of memory");
		return NULL;
	}
	mr->mr.context = pd->pd.context;
	mr->mr.pd = ibpd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->mr.handle = out.lkey;
	mr->mr.lkey = out.lkey;
	mr->mr.rkey = out.rkey;
	drv_handle_add(mr, DRV_KIND_MR);
	mr->map = map;
	mr->iova = iova;
	mr->access = access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
	return &mr->mr;
}

/* ibv_rereg_mr(3): the checks of libibverbs (IBV_REREG_MR_ERR_INPUT), then those of the kernel
 * (IBV_REREG_MR_ERR_CMD). The region is re-registered as a new MKEY before the old one goes, so
 * a failure leaves the MR as it was; lkey and rkey change, as the kernel allows. */
int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd, void *addr, size_t length,
		 int access)
{
	struct drv_mr *mr = DRV_OBJ(struct drv_mr, ibmr, DRV_KIND_MR);
	struct drv_pd *pd;
	struct hca_mkey_out out;
	struct drv_dev *d;
	unsigned new_access;
	int64_t map;

	if (!mr) {
		drv_fail(EINVAL, "ibv_rereg_mr: not a live MR");
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((unsigned)flags & ~(unsigned)IBV_REREG_MR_FLAGS_SUPPORTED) {
		drv_fail(EINVAL, "ibv_rereg_mr: unknown flags 0x%x",
			 (unsigned)flags & ~(unsigned)IBV_REREG_MR_FLAGS_SUPPORTED);
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) {
		drv_fail(EINVAL, "ibv_rereg_mr: IBV_REREG_MR_CHANGE_TRANSLATION needs addr and "
			 "length");
		return IBV_REREG_MR_ERR_INPUT;
	}
	if (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) {
		drv_fail(EINVAL, "ibv_rereg_mr: access given without IBV_REREG_MR_CHANGE_ACCESS");
		return IBV_REREG_MR_ERR_INPUT;
	}
	d = drv_dev_of(mr->mr.context);
	drv_charge_verb(d);
	if (!flags) {
		drv_fail(EINVAL, "ibv_rereg_mr: flags 0 (nothing to change)");
		return IBV_REREG_MR_ERR_CMD;
	}
	pd = DRV_OBJ(struct drv_pd, (flags & IBV_REREG_MR_CHANGE_PD) ? ibpd : mr->mr.pd,
		     DRV_KIND_PD);
	if (!pd || pd->pd.context != mr->mr.context) {
		drv_fail(EINVAL, "ibv_rereg_mr: pd is not a live PD of the MR's context");
		return IBV_REREG_MR_ERR_CMD;
	}
	if (!(flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
		addr = mr->mr.addr;
		length = mr->mr.length;
	}
	new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? (unsigned)access : mr->access;
	/* A new translation takes addr as its iova, as ibv_reg_mr does. */
	if (mkey_create(mr->mr.context, "ibv_rereg_mr", pd->pdn, addr, length,
			(flags & IBV_REREG_MR_CHANGE_TRANSLATION) ? (uint64_t)(uintptr_t)addr
								  : mr->iova,
			new_access, &map, &out))
		return IBV_REREG_MR_ERR_CMD;
	mkey_destroy(mr->mr.context, mr->mr.lkey, mr->map);
	mr->map = map;
	mr->mr.pd = &pd->pd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->mr.handle = out.lkey;
	mr->mr.lkey = out.lkey;
	mr->mr.rkey = out.rkey;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		mr->iova = (uint64_t)(uintptr_t)addr;
	mr->access = new_access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
	return 0;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg_mr_common(pd, addr, length, (uint64_t)(uintptr_t)addr, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       int access)
{
	return reg_mr_common(pd, addr, length, iova, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	return reg_mr_common(pd, addr, length, iova, access);
}

int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct drv_mr *mr = DRV_OBJ(struct drv_mr, ibmr, DRV_KIND_MR);
	struct hca_handle_in in;
	struct hca_cmd_empty none;
	struct drv_dev *d;
	int rc;

	if (!mr)
		return drv_fail(EINVAL, "ibv_dereg_mr: not a live MR");
	d = drv_dev_of(mr->mr.context);
	drv_charge_verb(d);
	in = (struct hca_handle_in){ .handle = mr->mr.lkey };
	rc = drv_uctx_cmd(mr->mr.context, HCA_CMD_DESTROY_MKEY, &in, sizeof(in), &none,
			  sizeof(none));
	if (rc)
		return rc;
	hcasim_dma_unmap(d->fn, mr->map);
	drv_handle_del(mr);
	free(mr);
	return 0;
}

/* ---- completion channels ---- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct drv_dev *d = drv_dev_of(ctx);
	struct drv_chan *ch;

	if (!d)
		return NULL;
	drv_charge_verb(d);
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		drv_fail(ENOMEM, "ibv_create_comp_channel: out of memory");
		return NULL;
	}
	ch->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (ch->ch.fd < 0) {
		free(ch);
		drv_fail(errno, "ibv_create_comp_channel: eventfd failed");
		return NULL;
	}
	ch->ch.context = ctx;
	ch->ch.refcnt = 0;
	drv_handle_add(ch, DRV_KIND_CHAN);
	return &ch->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct drv_chan *ch = DRV_OBJ(struct drv_chan, channel, DRV_KIND_CHAN);

	if (!ch)
		return drv_fail(EINVAL, "ibv_destroy_comp_channel: not a live channel");
	if (ch->ch.refcnt)
		return drv_fail(EBUSY, "ibv_destroy_comp_channel: %d CQ(s) still use it",
				ch->ch.refcnt);
	close(ch->ch.fd);
	free(ch->events);
	drv_handle_del(ch);
	free(ch);
	return 0;
}

/* ---- CQ ---- */

static int cq_ring_alloc(struct drv_dev *d, int cqe, void **ring, int64_t *map, uint64_t *iova,
			 uint32_t *log)
{
	uint32_t entries = hca_cq_ring_entries((uint32_t)cqe);

	*log = hca_log2(entries);
	return drv_dma_alloc(d, (size_t)entries * HCA_CQE_BYTES, HCASIM_DMA_READ | HCASIM_DMA_WRITE,
			     ring, map, iova);
}

struct drv_cq *drv_cq_create(struct drv_dev *d, const char *verb, struct ibv_context *ctx,
			     int64_t cqe, void *cq_context, struct ibv_comp_channel *channel,
			     int64_t comp_vector)
{
	struct drv_chan *ch = channel ? DRV_OBJ(struct drv_chan, channel, DRV_KIND_CHAN) : NULL;
	struct hca_cq_in in = { 0 };
	struct hca_cq_out out;
	struct drv_cq *cq;

	if (channel && (!ch || ch->ch.context != ctx)) {
		drv_fail(EINVAL, "%s: channel is not a live channel of this context", verb);
		return NULL;
	}
	if (cqe < 1 || cqe > d->cap.max_cqe) {
		drv_fail(EINVAL, "%s: cqe %lld outside 1..%u", verb, (long long)cqe,
			 d->cap.max_cqe);
		return NULL;
	}
	if (comp_vector < 0 || comp_vector >= ctx->num_comp_vectors) {
		drv_fail(EINVAL, "%s: comp_vector %lld outside 0..%d", verb, (long long)comp_vector,
			 ctx->num_comp_vectors - 1);
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		drv_fail(ENOMEM, "%s: out of memory", verb);
		return NULL;
	}
	if (cq_ring_alloc(d, (int)cqe, &cq->ring, &cq->ring_map, &in.ring_addr, &cq->log_size) ||
	    drv_dbrec_alloc(d, HCASIM_DMA_READ | HCASIM_DMA_WRITE, (void **)&cq->db, &in.db_addr))
		goto err_free;
	in.cqe = (uint32_t)cqe;
	in.eqn = d->eqn;
	in.log_size = cq->log_size;
	if (drv_uctx_cmd(ctx, HCA_CMD_CREATE_CQ, &in, sizeof(in), &out, sizeof(out)))
		goto err_free;
	cq->cq.context = ctx;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.handle = out.cqn;
	cq->cq.cqe = (int)out.cqe;
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	drv_handle_add(cq, DRV_KIND_CQ);
	cq->cqn = out.cqn;
	drv_map_cq(d, out.cqn, cq);
	if (ch)
		ch->ch.refcnt++;
	return cq;
err_free:
	drv_dbrec_free(d, cq->db);
	drv_dma_free(d, cq->ring, cq->ring_map);
	free(cq);
	return NULL;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct drv_dev *d = drv_dev_of(ctx);
	struct drv_cq *cq;

	if (!d)
		return NULL;
	drv_charge_verb(d);
	cq = drv_cq_create(d, "ibv_create_cq", ctx, cqe, cq_context, channel, comp_vector);
	return cq ? &cq->cq : NULL;
}

int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct drv_cq *cq = DRV_OBJ(struct drv_cq, ibcq, DRV_KIND_CQ);
	struct hca_cq_resize_in in = { 0 };
	struct hca_cq_out out;
	struct drv_dev *d;
	void *ring;
	int64_t map;
	uint32_t log;
	int rc;

	if (!cq)
		return drv_fail(EINVAL, "ibv_resize_cq: not a live CQ");
	d = drv_dev_of(cq->cq.context);
	drv_charge_verb(d);
	if (cqe < 1 || (uint32_t)cqe > d->cap.max_cqe)
		return drv_fail(EINVAL, "ibv_resize_cq: cqe %d outside 1..%u", cqe, d->cap.max_cqe);
	rc = cq_ring_alloc(d, cqe, &ring, &map, &in.ring_addr, &log);
	if (rc)
		return rc;
	in.cqn = cq->cqn;
	in.cqe = (uint32_t)cqe;
	in.log_size = log;
	rc = drv_uctx_cmd(cq->cq.context, HCA_CMD_RESIZE_CQ, &in, sizeof(in), &out, sizeof(out));
	if (rc) {
		drv_dma_free(d, ring, map);
		return rc;
	}
	drv_dma_free(d, cq->ring, cq->ring_map);
	cq->ring = ring;
	cq->ring_map = map;
	cq->log_size = log;
	cq->cq.cqe = (int)out.cqe;
	cq->ci = 0; /* unread CQEs were moved to the start of the new ring */
	*cq->db = 0;
	return 0;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct drv_cq *cq = DRV_OBJ(struct drv_cq, ibcq, DRV_KIND_CQ);
	struct hca_handle_in in;
	struct hca_cmd_empty none;
	struct drv_dev *d;
	int rc;

	if (!cq)
		return drv_fail(EINVAL, "ibv_destroy_cq: not a live CQ");
	d = drv_dev_of(cq->cq.context);
	drv_charge_verb(d);
	in = (struct hca_handle_in){ .handle = cq->cqn };
	rc = drv_uctx_cmd(cq->cq.context, HCA_CMD_DESTROY_CQ, &in, sizeof(in), &none, sizeof(none));
	if (rc)
		return rc;
	if (cq->cq.channel)
		cq->cq.channel->refcnt--;
	drv_map_cq(d, cq->cqn, NULL);
	drv_dbrec_free(d, cq->db);
	drv_dma_free(d, cq->ring, cq->ring_map);
	pthread_mutex_destroy(&cq->cq.mutex);
	pthread_cond_destroy(&cq->cq.cond);
	drv_handle_del(cq);
	free(cq);
	return 0;
}

/* ---- SRQ ---- */

struct drv_srq *drv_srq_create(struct ibv_pd *ibpd, struct ibv_srq_init_attr *init,
			       const char *verb, uint32_t xrcdn, uint32_t cqn)
{
	struct drv_pd *pd = DRV_OBJ(struct drv_pd, ibpd, DRV_KIND_PD);
	struct hca_srq_create_in in = { .xrcd = xrcdn, .cqn = cqn };
	struct hca_srq_out out;
	struct drv_srq *srq;
	struct drv_dev *d;
	uint32_t entries, stride;

	if (!pd) {
		drv_fail(EINVAL, "%s: not a live PD", verb);
		return NULL;
	}
	d = drv_dev_of(pd->pd.context);
	drv_charge_verb_(d, verb);
	if (!init) {
		drv_fail(EINVAL, "%s: NULL init_attr", verb);
		return NULL;
	}
	if (!init->attr.max_wr || init->attr.max_wr > d->cap.max_srq_wr) {
		drv_fail(EINVAL, "%s: max_wr %u outside 1..%u", verb, init->attr.max_wr,
			 d->cap.max_srq_wr);
		return NULL;
	}
	if (init->attr.max_sge > d->cap.max_srq_sge) {
		drv_fail(EINVAL, "%s: max_sge %u above %u", verb, init->attr.max_sge,
			 d->cap.max_srq_sge);
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	entries = hca_wq_entries(init->attr.max_wr + 1);
	stride = hca_rq_stride(init->attr.max_sge);
	if (srq) {
		srq->wrid = calloc(entries, sizeof(*srq->wrid));
		srq->done = calloc(entries, 1);
	}
	if (!srq || !srq->wrid || !srq->done) {
		if (srq) {
			free(srq->wrid);
			free(srq->done);
		}
		free(srq);
		drv_fail(ENOMEM, "%s: out of memory", verb);
		return NULL;
	}
	if (drv_dma_alloc(d, (size_t)entries * stride, HCASIM_DMA_READ, &srq->ring, &srq->ring_map,
			  &in.ring_addr) ||
	    drv_dbrec_alloc(d, HCASIM_DMA_READ, (void **)&srq->db, &in.db_addr))
		goto err_free;
	in.pdn = pd->pdn;
	in.max_wr = init->attr.max_wr;
	in.max_sge = init->attr.max_sge;
	in.srq_limit = 0; /* ibv_create_srq(3): srq_limit is ignored; armed by ibv_modify_srq */
	if (drv_uctx_cmd(pd->pd.context, HCA_CMD_CREATE_SRQ, &in, sizeof(in), &out, sizeof(out)))
		goto err_free;
	srq->srq.context = pd->pd.context;
	srq->srq.srq_context = init->srq_context;
	srq->srq.pd = ibpd;
	srq->srq.handle = out.srqn;
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	drv_handle_add(srq, DRV_KIND_SRQ);
	srq->srqn = out.srqn;
	srq->entries = entries;
	srq->stride = stride;
	srq->max_sge = out.max_sge;
	drv_map_srq(d, out.srqn, srq);
	init->attr.max_wr = out.max_wr;
	init->attr.max_sge = out.max_sge;
	init->attr.srq_limit = out.srq_limit;
	return srq;
err_free:
	drv_dbrec_free(d, srq->db);
	drv_dma_free(d, srq->ring, srq->ring_map);
	free(srq->wrid);
	free(srq->done);
	free(srq);
	return NULL;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *ibpd, struct ibv_srq_init_attr *init)
{
	struct drv_srq *srq = drv_srq_create(ibpd, init, "ibv_create_srq", 0, 0);

	return srq ? &srq->srq : NULL;
}

int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct drv_srq *srq = DRV_OBJ(struct drv_srq, ibsrq, DRV_KIND_SRQ);
	struct hca_srq_modify_in in = { 0 };
	struct hca_srq_out out;
	struct drv_dev *d;
	int rc;

	if (!srq)
		return drv_fail(EINVAL, "ibv_modify_srq: not a live SRQ");
	d = drv_dev_of(srq->srq.context);
	drv_charge_verb(d);
	if (!attr)
		return drv_fail(EINVAL, "ibv_modify_srq: NULL attr");
	in.srqn = srq->srqn;
	/* The kernel hands the mask to the provider, which acts on the bits it knows and
	 * ignores the rest (docs/verbs-checks.md). */
	in.attr_mask = (uint32_t)mask & (IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT);
	in.max_wr = attr->max_wr;
	in.srq_limit = attr->srq_limit;
	rc = drv_uctx_cmd(srq->srq.context, HCA_CMD_MODIFY_SRQ, &in, sizeof(in), &out, sizeof(out));
	if (rc == EOPNOTSUPP)
		/* As mlx5: resizing without IBV_DEVICE_SRQ_RESIZE is an invalid request. */
		return drv_fail(EINVAL, "ibv_modify_srq: IBV_SRQ_MAX_WR (resize) is not supported "
				"by this device (no IBV_DEVICE_SRQ_RESIZE)");
	return rc;
}

int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct drv_srq *srq = DRV_OBJ(struct drv_srq, ibsrq, DRV_KIND_SRQ);
	struct hca_handle_in in;
	struct hca_srq_out out;
	struct drv_dev *d;
	int rc;

	if (!srq)
		return drv_fail(EINVAL, "ibv_query_srq: not a live SRQ");
	if (!attr)
		return drv_fail(EINVAL, "ibv_query_srq: NULL attr");
	d = drv_dev_of(srq->srq.context);
	drv_charge_verb(d);
	in = (struct hca_handle_in){ .handle = srq->srqn };
	rc = drv_uctx_cmd(srq->srq.context, HCA_CMD_QUERY_SRQ, &in, sizeof(in), &out, sizeof(out));
	if (rc)
		return rc;
	attr->max_wr = out.max_wr;
	attr->max_sge = out.max_sge;
	attr->srq_limit = out.srq_limit;
	return 0;
}

/* ibv_get_srq_num (through verbs_context): the device's SRQ number, as mlx5 gives it. */
int drv_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct drv_srq *srq = DRV_OBJ(struct drv_srq, ibsrq, DRV_KIND_SRQ);

	if (!srq)
		return drv_fail(EINVAL, "ibv_get_srq_num: not a live SRQ");
	if (!srq_num)
		return drv_fail(EINVAL, "ibv_get_srq_num: NULL srq_num");
	*srq_num = srq->srqn;
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct drv_srq *srq = DRV_OBJ(struct drv_srq, ibsrq, DRV_KIND_SRQ);
	struct hca_handle_in in;
	struct hca_cmd_empty none;
	struct drv_dev *d;
	int rc;

	if (!srq)
		return drv_fail(EINVAL, "ibv_destroy_srq: not a live SRQ");
	d = drv_dev_of(srq->srq.context);
	drv_charge_verb(d);
	in = (struct hca_handle_in){ .handle = srq->srqn };
	rc = drv_uctx_cmd(srq->srq.context, HCA_CMD_DESTROY_SRQ, &in, sizeof(in), &none,
			  sizeof(none));
	if (rc)
		return rc;
	drv_map_srq(d, srq->srqn, NULL);
	drv_dbrec_free(d, srq->db);
	drv_dma_free(d, srq->ring, srq->ring_map);
	free(srq->wrid);
	free(srq->done);
	pthread_mutex_destroy(&srq->srq.mutex);
	pthread_cond_destroy(&srq->srq.cond);
	drv_handle_del(srq);
	free(srq);
	return 0;
}

/* ---- AH (a driver object: the address vector travels in each UD WQE) ---- */

struct ibv_ah *ibv_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct drv_pd *pd = DRV_OBJ(struct drv_pd, ibpd, DRV_KIND_PD);
	struct hca_port_info pi;
	struct drv_dev *d;
	struct drv_ah *ah;

	if (!pd) {
		drv_fail(EINVAL, "ibv_create_ah: not a live PD");
		return NULL;
	}
	d = drv_dev_of(pd->pd.context);
	drv_charge_verb(d);
	if (!attr) {
		drv_fail(EINVAL, "ibv_create_ah: NULL attr");
		return NULL;
	}
	if (drv_query_port_info(d, attr->port_num, &pi))
		return NULL;
	if (attr->sl > 15) {
		drv_fail(EINVAL, "ibv_create_ah: sl %u above 15", attr->sl);
		return NULL;
	}
	if (attr->static_rate > IBV_RATE_1200_GBPS) {
		drv_fail(EINVAL, "ibv_create_ah: unknown static_rate %u", attr->static_rate);
		return NULL;
	}
	if (pi.link_layer == 2 && !attr->is_global) {
		drv_fail(EINVAL, "ibv_create_ah: a RoCE port needs a GRH (is_global)");
		return NULL;
	}
	if (attr->is_global) {
		if (attr->grh.sgid_index >= pi.gid_tbl_len) {
			drv_fail(EINVAL, "ibv_create_ah: sgid_index %u outside the GID table",
				 attr->grh.sgid_index);
			return NULL;
		}
		if (attr->grh.flow_label > 0xfffff) {
			drv_fail(EINVAL, "ibv_create_ah: flow_label 0x%x wider than 20 bits",
				 attr->grh.flow_label);
			return NULL;
		}
		struct hca_gid_in gi = { .port = attr->port_num, .index = attr->grh.sgid_index };
		struct hca_gid_out go;

		if (drv_cmd(d, HCA_CMD_QUERY_GID, &gi, sizeof(gi), &go, sizeof(go)))
			return NULL;
		if (!go.valid) {
			drv_fail(EINVAL, "ibv_create_ah: sgid_index %u is not populated",
				 attr->grh.sgid_index);
			return NULL;
		}
	} else if (!attr->dlid) {
		drv_fail(EINVAL, "ibv_create_ah: dlid 0 is not a valid destination");
		return NULL;
	}
	if (d->nah >= d->cap.max_ah) {
		drv_fail(ENOMEM, "ibv_create_ah: device limit of %u address handles reached",
			 d->cap.max_ah);
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		drv_fail(ENOMEM, "ibv_create_ah: out of memory");
		return NULL;
	}
	ah->ah.context = pd->pd.context;
	ah->ah.pd = ibpd;
	ah->ah.handle = ++d->ah_seq;
	d->nah++;
	drv_handle_add(ah, DRV_KIND_AH);
	ah->attr = *attr;
	pd->nah++;
	return &ah->ah;
}

int ibv_destroy_ah(struct ibv_ah *ibah)
{
	struct drv_ah *ah = DRV_OBJ(struct drv_ah, ibah, DRV_KIND_AH);
	struct drv_pd *pd;

	if (!ah)
		return drv_fail(EINVAL, "ibv_destroy_ah: not a live AH");
	pd = (struct drv_pd *)ah->ah.pd;
	drv_dev_of(ah->ah.context)->nah--;
	pd->nah--;
	drv_handle_del(ah);
	free(ah);
	return 0;
}
