/* PCIe function model: BAR0 dispatch, IOMMU, DMA timing, MSI-X. */
#include "sim/pcie_dev.h"
#include "sim/error.h"
#include "sim/link.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct iommu_map {
	uint64_t iova;   /* device address of the first byte */
	uint64_t len;    /* bytes */
	char *host;      /* host address of the first byte */
	unsigned perm;   /* SIM_DMA_READ | SIM_DMA_WRITE */
	int64_t id;      /* handle returned to the mapper */
	uint32_t pasid;  /* IOMMU domain (0: the function's default) */
};

struct irq_slot {
	sim_irq_fn fn; /* handler */
	void *arg;     /* its argument */
};

struct sim_pcie_fn {
	char name[32];                     /* "hcasim0" */
	int host, devno;                   /* owning host, device number (trace dev=) */
	const struct sim_pcie_dev_ops *ops; /* device behind BAR0 */
	void *dev;                          /* its state */
	uint32_t bar0_bytes;                /* BAR0 size */
	/* timing */
	uint64_t mmio_wr_ps, mmio_rd_ps, dma_rd_ps, dma_wr_ps, msix_ps; /* latencies */
	uint64_t mps, mrrs;                /* TLP size limits */
	double ps_per_byte;                /* serialization per byte, one direction */
	sim_time_t ser_hdr_ps, ser_mps_ps; /* ser_ps of a TLP without data and of a full one */
	struct sim_clock clk;              /* PCIe controller clock: TLPs start on its edges */
	sim_time_t up_busy_ps;             /* device → host direction free at */
	sim_time_t down_busy_ps;           /* host → device direction free at */
	sim_time_t last_mmio_arrival_ps;   /* posted writes stay ordered */
	sim_time_t last_write_visible_ps;  /* MSI-X never passes a DMA write */
	sim_time_t *tag_free_ps;           /* when each read tag is free again */
	unsigned tags, next_tag;           /* tag count, next to use (round robin) */
	/* IOMMU */
	struct iommu_map *maps;            /* sorted by iova (allocation order) */
	size_t nmaps, capmaps;
	struct iommu_map hint[4];          /* by permission: the map found last (len 0: none) */
	int64_t next_map_id;
	uint64_t next_iova;                /* bump allocator, page granular */
	struct dma_op *wr_head, *wr_tail;  /* posted writes not yet landed, in issue order */
	uint64_t faults;                   /* faults so far */
	struct sim_dma_fault last_fault;   /* most recent */
	void (*fault_cb)(void *dev, const struct sim_dma_fault *f);
	struct irq_slot irq[SIM_PCIE_MAX_VECTORS];
};

static struct sim_pcie_fn *fns[SIM_PCIE_MAX_FNS];
static int nfns;
static uint64_t bus_generation;

uint64_t sim_pcie_bus_generation(void)
{
	return bus_generation;
}

static sim_time_t ser_ps(const struct sim_pcie_fn *fn, uint64_t bytes)
{
	return (sim_time_t)((double)(bytes + SIM_PCIE_TLP_OVERHEAD_BYTES) * fn->ps_per_byte + 0.5);
}

struct sim_pcie_fn *sim_pcie_fn_create(const struct sim_config *cfg, int host, int devno,
					const char *name, const struct sim_pcie_dev_ops *ops,
					void *dev, uint32_t bar0_bytes)
{
	struct sim_pcie_fn *fn;

	SIM_ASSERT(nfns < SIM_PCIE_MAX_FNS, "too many PCIe functions");
	fn = calloc(1, sizeof(*fn));
	SIM_ASSERT(fn != NULL, "out of memory");
	snprintf(fn->name, sizeof(fn->name), "%s", name);
	fn->host = host;
	fn->devno = devno;
	fn->ops = ops;
	fn->dev = dev;
	fn->bar0_bytes = bar0_bytes;
	fn->mmio_wr_ps = cfg->mmio_write_ns * SIM_PS_PER_NS;
	fn->mmio_rd_ps = cfg->mmio_read_ns * SIM_PS_PER_NS;
	fn->dma_rd_ps = cfg->dma_read_ns * SIM_PS_PER_NS;
	fn->dma_wr_ps = cfg->dma_write_ns * SIM_PS_PER_NS;
	fn->msix_ps = cfg->msix_ns * SIM_PS_PER_NS;
	fn->mps = cfg->pcie_mps;
	fn->mrrs = cfg->pcie_mrrs;
	/* Mb/s → ps per byte: 8 bits * 1e12 ps/s / (mbps * 1e6 bits/s) */
	fn->ps_per_byte = 8.0e6 / (double)sim_config_pcie_mbps(cfg);
	fn->ser_hdr_ps = ser_ps(fn, 0);
	fn->ser_mps_ps = ser_ps(fn, fn->mps);
	fn->clk = (struct sim_clock){ "pcie", sim_config_period_ps(cfg->pcie_mhz) };
	fn->tags = (unsigned)cfg->pcie_tags;
	fn->tag_free_ps = calloc(fn->tags, sizeof(*fn->tag_free_ps));
	SIM_ASSERT(fn->tag_free_ps != NULL, "out of memory");
	fn->next_map_id = 1;
	fn->next_iova = SIM_IOVA_BASE;
	fns[nfns++] = fn;
	bus_generation++;
	return fn;
}

static void wr_release_all(struct sim_pcie_fn *fn);

void sim_pcie_fn_destroy(struct sim_pcie_fn *fn)
{
	int i;

	if (!fn)
		return;
	for (i = 0; i < nfns; i++)
		if (fns[i] == fn)
			break;
	if (i < nfns) {
		memmove(&fns[i], &fns[i + 1], (size_t)(nfns - i - 1) * sizeof(fns[0]));
		nfns--;
	}
	bus_generation++;
	wr_release_all(fn);
	free(fn->tag_free_ps);
	free(fn->maps);
	free(fn);
}

int sim_pcie_enumerate(struct sim_pcie_fn **out, int max)
{
	int n = nfns < max ? nfns : max;

	for (int i = 0; i < n; i++)
		out[i] = fns[i];
	return n;
}

bool sim_pcie_fn_live(const struct sim_pcie_fn *fn)
{
	for (int i = 0; i < nfns; i++)
		if (fns[i] == fn)
			return true;
	return false;
}

uint32_t sim_pcie_fn_bar0_bytes(const struct sim_pcie_fn *fn)
{
	return fn->bar0_bytes;
}

const char *sim_pcie_fn_name(const struct sim_pcie_fn *fn)
{
	return fn->name;
}

int sim_pcie_fn_host(const struct sim_pcie_fn *fn)
{
	return fn->host;
}

int sim_pcie_fn_devno(const struct sim_pcie_fn *fn)
{
	return fn->devno;
}

/* The same for a TLP of a DMA's stream: most carry a full MPS (worked out once). */
static inline sim_time_t tlp_ps(const struct sim_pcie_fn *fn, uint64_t bytes)
{
	return bytes == fn->mps ? fn->ser_mps_ps : ser_ps(fn, bytes);
}

/* ---- MMIO ---- */

struct mmio_wr {
	struct sim_pcie_fn *fn; /* target */
	uint32_t off;           /* register */
	unsigned bytes;         /* 4 or 8, or a block's length */
	uint64_t val;           /* value (4 or 8 bytes) */
	uint8_t *block;         /* a write-combined block's bytes, or NULL */
};

/* Does [off, off + bytes) lie inside BAR0? In 64 bits: an offset near 2^32 must not wrap
 * round to the start of the BAR. */
static bool in_bar0(const struct sim_pcie_fn *fn, uint32_t off, unsigned bytes)
{
	return (uint64_t)off + bytes <= fn->bar0_bytes;
}

static void mmio_write_arrive(void *arg)
{
	struct mmio_wr *w = arg;

	trace_pcie_mmio_wr(w->fn->devno, w->off, w->val, w->bytes);
	if (w->block) {
		if (!in_bar0(w->fn, w->off, w->bytes) || (w->off & 63) || !w->fn->ops->mmio_block)
			trace_warn_mmio_wr(w->fn->devno, w->off, 0, w->bytes, "block_refused");
		else
			w->fn->ops->mmio_block(w->fn->dev, w->off, w->block, w->bytes);
		free(w->block);
		free(w);
		return;
	}
	if (!in_bar0(w->fn, w->off, w->bytes) || (w->off & (w->bytes - 1)))
		trace_warn_mmio_wr(w->fn->devno, w->off, w->val, w->bytes, "outside_bar");
	else if (w->bytes < 4) /* the registers have no byte enables */
		trace_warn_mmio_wr(w->fn->devno, w->off, w->val, w->bytes, "sub_dword");
	else if (w->bytes == 4)
		w->fn->ops->mmio_write32(w->fn->dev, w->off, (uint32_t)w->val);
	else if (w->fn->ops->mmio_write64)
		w->fn->ops->mmio_write64(w->fn->dev, w->off, w->val);
	else
		trace_warn_mmio_wr(w->fn->devno, w->off, w->val, w->bytes, "no_64bit");
	free(w);
}

static void mmio_post(struct sim_pcie_fn *fn, uint32_t off, uint64_t val, unsigned bytes,
		      const void *block)
{
	struct sim_kernel *k = sim_kernel();
	struct mmio_wr *w = malloc(sizeof(*w));
	sim_time_t t = sim_now(k);

	SIM_ASSERT(w != NULL, "out of memory");
	*w = (struct mmio_wr){ fn, off, bytes, val, NULL };
	if (block) {
		w->block = malloc(bytes);
		SIM_ASSERT(w->block != NULL, "out of memory");
		memcpy(w->block, block, bytes);
	}
	t = sim_clock_edge(&fn->clk, t);
	if (fn->down_busy_ps > t)
		t = fn->down_busy_ps;
	fn->down_busy_ps = t + ser_ps(fn, bytes);
	t = fn->down_busy_ps + fn->mmio_wr_ps;
	if (t < fn->last_mmio_arrival_ps)
		t = fn->last_mmio_arrival_ps;
	fn->last_mmio_arrival_ps = t;
	sim_schedule_owned_at(k, t, mmio_write_arrive, w);
}

void sim_pcie_mmio_write32(struct sim_pcie_fn *fn, uint32_t off, uint32_t val)
{
	mmio_post(fn, off, val, 4, NULL);
}

void sim_pcie_mmio_write64(struct sim_pcie_fn *fn, uint32_t off, uint64_t val)
{
	mmio_post(fn, off, val, 8, NULL);
}

void sim_pcie_mmio_write(struct sim_pcie_fn *fn, uint32_t off, unsigned width, uint64_t val)
{
	SIM_ASSERT(width == 1 || width == 2 || width == 4 || width == 8, "MMIO width %u", width);
	mmio_post(fn, off, width == 8 ? val : val & ((1ull << (8 * width)) - 1), width, NULL);
}

void sim_pcie_mmio_write_block(struct sim_pcie_fn *fn, uint32_t off, const void *data,
			       unsigned len)
{
	/* A write-combined block is whole 8-byte words, at most a page: anything else never
	 * leaves the host (the root complex would not form such a TLP). Host input, so refused
	 * and traced, never asserted. */
	if (!data || len < 8 || len > 4096 || len % 8) {
		trace_warn_mmio_wr(fn->devno, off, 0, len, "block_length");
		return;
	}
	mmio_post(fn, off, 0, len, data);
}

/* One register read at the device: all ones (an unsupported request, as on a real bus)
 * outside BAR0 or unaligned. */
static uint32_t mmio_read_reg(struct sim_pcie_fn *fn, uint32_t off)
{
	uint32_t v;

	if (!in_bar0(fn, off, 4) || (off & 3)) {
		trace_warn_mmio_rd(fn->devno, off, "outside_bar");
		v = 0xffffffffu;
	} else {
		v = fn->ops->mmio_read32(fn->dev, off);
	}
	trace_pcie_mmio_rd(fn->devno, off, v);
	return v;
}

uint64_t sim_pcie_mmio_read(struct sim_pcie_fn *fn, uint32_t off, unsigned width)
{
	struct sim_kernel *k = sim_kernel();
	sim_time_t start = sim_now(k), at;
	uint64_t v;

	SIM_ASSERT(width == 1 || width == 2 || width == 4 || width == 8, "MMIO width %u", width);
	/* A read never passes posted writes: it reaches the device after them. */
	at = start + fn->mmio_rd_ps / 2;
	if (at < fn->last_mmio_arrival_ps)
		at = fn->last_mmio_arrival_ps;
	sim_run_until(k, at);
	if (width == 8) { /* one request, the two registers at one instant */
		v = mmio_read_reg(fn, off);
		v |= (uint64_t)mmio_read_reg(fn, off + 4) << 32;
	} else if (width == 4) {
		v = mmio_read_reg(fn, off);
	} else { /* the bytes asked for, of the aligned register */
		v = mmio_read_reg(fn, off & ~3u) >> (8 * (off & 3));
		v &= (1ull << (8 * width)) - 1;
	}
	sim_run_until(k, at + (fn->mmio_rd_ps - fn->mmio_rd_ps / 2));
	return v;
}

uint32_t sim_pcie_mmio_read32(struct sim_pcie_fn *fn, uint32_t off)
{
	return (uint32_t)sim_pcie_mmio_read(fn, off, 4);
}

/* ---- IOMMU ---- */

int64_t sim_pcie_map(struct sim_pcie_fn *fn, const void *addr, size_t len, unsigned perm,
		     uint64_t *iova)
{
	return sim_pcie_map_pasid(fn, 0, addr, len, perm, iova);
}

int64_t sim_pcie_map_pasid(struct sim_pcie_fn *fn, uint32_t pasid, const void *addr, size_t len,
			   unsigned perm, uint64_t *iova)
{
	uint64_t a = (uint64_t)(uintptr_t)addr, off = a & 4095;
	struct iommu_map *m;

	if (pasid > SIM_PASID_MAX)
		return sim_error(-EINVAL, "iommu map: pasid %u (PASIDs are 20 bits: 0..%u)", pasid,
				 SIM_PASID_MAX);
	if (!addr || !len)
		return sim_error(-EINVAL, "iommu map: empty range");
	if (perm & ~(unsigned)(SIM_DMA_READ | SIM_DMA_WRITE) || !perm)
		return sim_error(-EINVAL, "iommu map: bad permission 0x%x", perm);
	if (a + len < a || len > (1ull << 44))
		return sim_error(-EINVAL, "iommu map: range of %zu bytes wraps or is too large",
				 len);
	if (fn->nmaps == fn->capmaps) {
		size_t cap = fn->capmaps ? fn->capmaps * 2 : 64;

		m = realloc(fn->maps, cap * sizeof(*m));
		if (!m)
			return sim_error(-ENOMEM, "iommu map: out of memory");
		fn->maps = m;
		fn->capmaps = cap;
	}
	m = &fn->maps[fn->nmaps++];
	*m = (struct iommu_map){ fn->next_iova + off, len, (char *)addr, perm, fn->next_map_id++,
				 pasid };
	/* Keep the page offset (DMA alignment is the buffer's own) and leave a guard page. */
	fn->next_iova += (off + len + 4095) / 4096 * 4096 + 4096;
	trace_iommu_map(fn->devno, (long long)m->id, m->iova, len, perm, pasid);
	if (iova)
		*iova = m->iova;
	return m->id;
}

int sim_pcie_unmap(struct sim_pcie_fn *fn, int64_t id)
{
	for (size_t i = 0; i < fn->nmaps; i++) {
		if (fn->maps[i].id == id) {
			trace_iommu_unmap(fn->devno, (long long)id);
			memmove(&fn->maps[i], &fn->maps[i + 1],
				(fn->nmaps - i - 1) * sizeof(fn->maps[0]));
			fn->nmaps--;
			memset(fn->hint, 0, sizeof(fn->hint));
			return 0;
		}
	}
	return sim_error(-ENOENT, "iommu unmap: no mapping with id %lld", (long long)id);
}

/* The mapping holding [iova, iova+len) with perm, or NULL. */
static const struct iommu_map *iommu_search(const struct sim_pcie_fn *fn, uint64_t iova,
					    size_t len, unsigned perm)
{
	size_t lo = 0, hi = fn->nmaps;
	const struct iommu_map *m;

	if (iova + len < iova)
		return NULL;
	while (lo < hi) { /* last mapping starting at or below iova */
		size_t mid = (lo + hi) / 2;

		if (fn->maps[mid].iova <= iova)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	m = &fn->maps[lo - 1];
	if (iova + len > m->iova + m->len || (m->perm & perm) != perm)
		return NULL;
	return m;
}

/* The same for the device's own DMA, the map found last for the same permission tried first
 * (a stream of DMAs stays in one buffer). A hint is a copy, dropped when anything is unmapped;
 * maps never overlap, so a map that holds the range is the one the search would find. */
static const struct iommu_map *iommu_find(struct sim_pcie_fn *fn, uint64_t iova, size_t len,
					  unsigned perm)
{
	struct iommu_map *h = &fn->hint[perm & 3];
	const struct iommu_map *m;

	if (iova >= h->iova && iova + len >= iova && iova + len <= h->iova + h->len)
		return h;
	m = iommu_search(fn, iova, len, perm);
	if (m)
		*h = *m;
	return m;
}

bool sim_iommu_allowed(const struct sim_pcie_fn *fn, uint64_t addr, size_t len, unsigned perm)
{
	return iommu_search(fn, addr, len ? len : 1, perm) != NULL;
}

int64_t sim_iommu_pasid(const struct sim_pcie_fn *fn, uint64_t addr, size_t len, unsigned perm)
{
	const struct iommu_map *m = iommu_search(fn, addr, len ? len : 1, perm);

	return m ? (int64_t)m->pasid : -1;
}

/* Host pointer for a checked device address. */
static void *iommu_host(struct sim_pcie_fn *fn, uint64_t iova, size_t len, unsigned perm)
{
	const struct iommu_map *m = iommu_find(fn, iova, len ? len : 1, perm);

	return m ? m->host + (iova - m->iova) : NULL;
}

static int iommu_check(struct sim_pcie_fn *fn, uint64_t addr, size_t len, unsigned perm)
{
	if (iommu_find(fn, addr, len ? len : 1, perm))
		return 0;
	fn->faults++;
	fn->last_fault = (struct sim_dma_fault){ addr, len, perm, sim_now(sim_kernel()) };
	trace_iommu_fault(fn->devno, addr, len, perm == SIM_DMA_READ ? "read" : "write");
	if (fn->fault_cb)
		fn->fault_cb(fn->dev, &fn->last_fault);
	return -EFAULT;
}

uint64_t sim_pcie_fault_count(const struct sim_pcie_fn *fn)
{
	return fn->faults;
}

bool sim_pcie_last_fault(const struct sim_pcie_fn *fn, struct sim_dma_fault *out)
{
	if (!fn->faults)
		return false;
	*out = fn->last_fault;
	return true;
}

void sim_pcie_set_fault_cb(struct sim_pcie_fn *fn,
			   void (*cb)(void *dev, const struct sim_dma_fault *f))
{
	fn->fault_cb = cb;
}

/* ---- DMA timing ---- */

static void forward_writes(struct sim_pcie_fn *fn, uint64_t addr, size_t len);

/* Cut-through bookkeeping (sim_dma_read_ct, sim_dma_write_ct), against a link of mbps. */
struct ct {
	uint32_t mbps;   /* link rate */
	uint64_t off;    /* read: stream offset of the first byte; write: bytes after the last */
	sim_time_t ref;  /* read: raised to the earliest start (need); write: ready */
};

/* Time at which the last byte of a read issued at t has arrived; with ct, ct->ref is raised
 * to each completion's arrival minus the link time of the stream bytes before it. */
static sim_time_t read_timing_ct(struct sim_pcie_fn *fn, sim_time_t t, size_t len,
				 struct ct *ct)
{
	sim_time_t done;
	size_t off = 0;

	t = sim_clock_edge(&fn->clk, t);
	done = t;
	do {
		size_t req = len - off < fn->mrrs ? len - off : fn->mrrs;
		unsigned tag = fn->next_tag;
		sim_time_t issue = t, cpl;

		fn->next_tag = (fn->next_tag + 1) % fn->tags;
		if (fn->tag_free_ps[tag] > issue)
			issue = fn->tag_free_ps[tag]; /* wait for a free tag */
		if (fn->up_busy_ps > issue)
			issue = fn->up_busy_ps;
		fn->up_busy_ps = issue + fn->ser_hdr_ps; /* the request TLP */
		cpl = fn->up_busy_ps + fn->dma_rd_ps;
		/* completions: split at MPS, serialized on the host → device direction */
		for (size_t c = 0; c < req || (req == 0 && c == 0); c += fn->mps) {
			size_t n = req - c < fn->mps ? req - c : fn->mps;

			if (fn->down_busy_ps > cpl)
				cpl = fn->down_busy_ps;
			fn->down_busy_ps = cpl + tlp_ps(fn, n);
			cpl = fn->down_busy_ps;
			if (ct) {
				sim_time_t ahead = sim_link_bytes_ps(ct->mbps, ct->off + off + c);

				if (cpl > ahead && cpl - ahead > ct->ref)
					ct->ref = cpl - ahead;
			}
			if (req == 0)
				break;
		}
		fn->tag_free_ps[tag] = cpl;
		if (cpl > done)
			done = cpl;
		off += req;
	} while (off < len);
	return done;
}

static sim_time_t read_timing(struct sim_pcie_fn *fn, sim_time_t t, size_t len)
{
	return read_timing_ct(fn, t, len, NULL);
}

/* Time at which a write issued at t is visible in host memory. With ct, TLP by TLP, each
 * when its bytes have come off the link (t is then not a bound: it may be in the past). */
static sim_time_t write_timing_ct(struct sim_pcie_fn *fn, sim_time_t t, size_t len,
				  const struct ct *ct)
{
	size_t off = 0;

	if (!ct)
		t = sim_clock_edge(&fn->clk, t);
	do {
		size_t n = len - off < fn->mps ? len - off : fn->mps;

		if (ct) {
			sim_time_t behind = sim_link_bytes_ps(ct->mbps, len - off - n + ct->off);

			t = sim_clock_edge(&fn->clk, ct->ref > behind ? ct->ref - behind : 0);
		}
		if (fn->up_busy_ps > t)
			t = fn->up_busy_ps;
		fn->up_busy_ps = t + tlp_ps(fn, n);
		t = fn->up_busy_ps;
		off += n;
	} while (off < len);
	t += fn->dma_wr_ps;
	if (t < fn->last_write_visible_ps)
		t = fn->last_write_visible_ps;
	fn->last_write_visible_ps = t;
	return t;
}

static sim_time_t write_timing(struct sim_pcie_fn *fn, sim_time_t t, size_t len)
{
	return write_timing_ct(fn, t, len, NULL);
}

/* sim_dma_read_timed, and with ct sim_dma_read_ct. */
static int read_timed(struct sim_pcie_fn *fn, uint64_t addr, void *dst, size_t len,
		      sim_time_t *t_ps, struct ct *ct)
{
	int rc = iommu_check(fn, addr, len, SIM_DMA_READ);

	if (rc)
		return rc;
	forward_writes(fn, addr, len);
	memcpy(dst, iommu_host(fn, addr, len, SIM_DMA_READ), len);
	*t_ps = read_timing_ct(fn, *t_ps, len, ct);
	if (ct)
		trace_pcie_dma_rd_ct(fn->devno, addr, len, *t_ps, ct->ref);
	else
		trace_pcie_dma_rd(fn->devno, addr, len, *t_ps);
	return 0;
}

int sim_dma_read_ct(struct sim_pcie_fn *fn, uint64_t addr, void *dst, size_t len,
		    sim_time_t *t_ps, uint32_t mbps, uint64_t off, sim_time_t *need)
{
	struct ct ct = { mbps, off, *need };
	int rc;

	SIM_ASSERT(mbps > 0, "cut-through read without a link rate");
	rc = read_timed(fn, addr, dst, len, t_ps, &ct);
	if (!rc)
		*need = ct.ref;
	return rc;
}

int sim_dma_read_timed(struct sim_pcie_fn *fn, uint64_t addr, void *dst, size_t len,
		       sim_time_t *t_ps)
{
	return read_timed(fn, addr, dst, len, t_ps, NULL);
}

int sim_dma_write_timed(struct sim_pcie_fn *fn, uint64_t addr, const void *src, size_t len,
			sim_time_t *t_ps)
{
	int rc = iommu_check(fn, addr, len, SIM_DMA_WRITE);

	if (rc)
		return rc;
	memcpy(iommu_host(fn, addr, len, SIM_DMA_WRITE), src, len);
	*t_ps = write_timing(fn, *t_ps, len);
	trace_pcie_dma_wr(fn->devno, addr, len, *t_ps);
	return 0;
}

struct dma_op {
	struct dma_op *next;    /* posted writes in flight, in issue order */
	bool applied;           /* a later read already pulled the data into memory */
	struct sim_pcie_fn *fn; /* function */
	uint64_t addr;          /* device address */
	void *dst;              /* read destination (device side) */
	size_t len;             /* bytes */
	int status;             /* 0 or -EFAULT */
	sim_dma_done_fn done;   /* completion */
	void *arg;              /* its argument */
	const uint8_t *data;    /* write data: buf, or where they lie (a held buffer) */
	void (*release)(void *owner); /* gives the held buffer back, or NULL (data is buf) */
	void *owner;            /* its argument */
	unsigned char buf[];    /* write data (a posted write owns its data) */
};

/* Posted writes come and go with every packet and CQE: their blocks (the data inside) from
 * object caches, one for up to 64 bytes (CQEs, short messages), one for up to 4 KiB (an MTU's
 * payload, which malloc serves slower than small blocks). */
static struct sim_objcache wr_small = SIM_OBJCACHE(sizeof(struct dma_op) + 64);
static struct sim_objcache wr_page = SIM_OBJCACHE(sizeof(struct dma_op) + 4096);

/* By the bytes of data the write carries in its block: none when it holds them elsewhere. */
static struct sim_objcache *wr_cache(size_t bytes)
{
	return bytes <= 64 ? &wr_small : bytes <= 4096 ? &wr_page : NULL;
}

static void wr_free(struct dma_op *op)
{
	struct sim_objcache *c = wr_cache(op->data == op->buf ? op->len : 0);

	if (op->release)
		op->release(op->owner);
	if (c)
		sim_obj_put(c, op);
	else
		free(op);
}

/* A function destroyed with writes in flight: the kernel frees them (owned arguments), and
 * the buffers they hold are given back now. */
static void wr_release_all(struct sim_pcie_fn *fn)
{
	for (struct dma_op *w = fn->wr_head; w; w = w->next)
		if (w->release) {
			w->release(w->owner);
			w->release = NULL;
		}
}

static void dma_read_complete(void *p)
{
	struct dma_op *op = p;

	if (!op->status) {
		/* The IOMMU is checked again at completion: an unmap in between faults. */
		op->status = iommu_check(op->fn, op->addr, op->len, SIM_DMA_READ);
		if (!op->status) {
			forward_writes(op->fn, op->addr, op->len);
			memcpy(op->dst, iommu_host(op->fn, op->addr, op->len, SIM_DMA_READ),
			       op->len);
		}
	}
	trace_pcie_dma_rd_cpl(op->fn->devno, op->addr, op->len, op->status);
	if (op->done)
		op->done(op->arg, op->status);
	free(op);
}

/* Reads never pass posted writes (PCIe ordering): before a read of [addr, addr+len), the data
 * of every earlier write still in flight to an overlapping range is put into memory. */
static void forward_writes(struct sim_pcie_fn *fn, uint64_t addr, size_t len)
{
	for (struct dma_op *w = fn->wr_head; w; w = w->next) {
		if (w->applied || w->status || w->addr >= addr + len || w->addr + w->len <= addr)
			continue;
		if (!iommu_check(fn, w->addr, w->len, SIM_DMA_WRITE))
			memcpy(iommu_host(fn, w->addr, w->len, SIM_DMA_WRITE), w->data, w->len);
		w->applied = true;
	}
}

static void dma_write_complete(void *p)
{
	struct dma_op *op = p;
	struct sim_pcie_fn *fn = op->fn;

	/* Writes land in issue order: this is the head of the in-flight list. */
	for (struct dma_op **pp = &fn->wr_head; *pp; pp = &(*pp)->next) {
		if (*pp == op) {
			*pp = op->next;
			if (fn->wr_tail == op) {
				fn->wr_tail = NULL;
				for (struct dma_op *w = fn->wr_head; w; w = w->next)
					fn->wr_tail = w;
			}
			break;
		}
	}
	if (op->applied) {
		trace_pcie_dma_wr_cpl(fn->devno, op->addr, op->len, 0, 1);
		if (op->done)
			op->done(op->arg, 0);
		wr_free(op);
		return;
	}
	if (!op->status) {
		op->status = iommu_check(op->fn, op->addr, op->len, SIM_DMA_WRITE);
		if (!op->status)
			memcpy(iommu_host(op->fn, op->addr, op->len, SIM_DMA_WRITE), op->data,
			       op->len);
	}
	trace_pcie_dma_wr_cpl(op->fn->devno, op->addr, op->len, op->status, 0);
	if (op->done)
		op->done(op->arg, op->status);
	wr_free(op);
}

void sim_dma_read(struct sim_pcie_fn *fn, uint64_t addr, void *dst, size_t len,
		  sim_dma_done_fn done, void *arg)
{
	struct sim_kernel *k = sim_kernel();
	struct dma_op *op = calloc(1, sizeof(*op));

	SIM_ASSERT(op != NULL, "out of memory");
	*op = (struct dma_op){ .fn = fn, .addr = addr, .dst = dst, .len = len, .done = done, .arg = arg };
	op->status = iommu_check(fn, addr, len, SIM_DMA_READ);
	sim_schedule_owned_at(k, op->status ? sim_now(k) : read_timing(fn, sim_now(k), len),
			      dma_read_complete, op);
}

void sim_dma_write(struct sim_pcie_fn *fn, uint64_t addr, const void *src, size_t len,
		   sim_dma_done_fn done, void *arg)
{
	sim_dma_write_at(fn, addr, src, len, sim_now(sim_kernel()), done, arg);
}

/* A posted write's data: copied into the write, or (release set) held where they lie. */
struct wr_src {
	const void *data;
	void (*release)(void *owner);
	void *owner;
};

static void write_op(struct sim_pcie_fn *fn, uint64_t addr, const struct wr_src *src, size_t len,
		     sim_time_t t, const struct ct *ct, sim_dma_done_fn done, void *arg);

void sim_dma_write_ct(struct sim_pcie_fn *fn, uint64_t addr, const void *src, size_t len,
		      sim_time_t ready, uint32_t mbps, uint64_t tail)
{
	struct ct ct = { mbps, tail, ready };

	SIM_ASSERT(mbps > 0, "cut-through write without a link rate");
	write_op(fn, addr, &(struct wr_src){ src, NULL, NULL }, len, ready, &ct, NULL, NULL);
}

void sim_dma_write_ct_held(struct sim_pcie_fn *fn, uint64_t addr, const void *src, size_t len,
			   sim_time_t ready, uint32_t mbps, uint64_t tail,
			   void (*release)(void *owner), void *owner)
{
	struct ct ct = { mbps, tail, ready };

	SIM_ASSERT(mbps > 0, "cut-through write without a link rate");
	SIM_ASSERT(release != NULL, "a held write without a release");
	write_op(fn, addr, &(struct wr_src){ src, release, owner }, len, ready, &ct, NULL, NULL);
}

void sim_dma_write_at(struct sim_pcie_fn *fn, uint64_t addr, const void *src, size_t len,
		      sim_time_t t, sim_dma_done_fn done, void *arg)
{
	write_op(fn, addr, &(struct wr_src){ src, NULL, NULL }, len, t, NULL, done, arg);
}

static void write_op(struct sim_pcie_fn *fn, uint64_t addr, const struct wr_src *src, size_t len,
		     sim_time_t t, const struct ct *ct, sim_dma_done_fn done, void *arg)
{
	sim_time_t vis;
	struct sim_kernel *k = sim_kernel();
	size_t carried = src->release ? 0 : len; /* bytes copied into the write */
	struct sim_objcache *c = wr_cache(carried);
	struct dma_op *op = c ? sim_obj_get(c) : malloc(sizeof(*op) + carried);

	SIM_ASSERT(op != NULL, "out of memory");
	*op = (struct dma_op){ .fn = fn, .addr = addr, .len = len, .done = done, .arg = arg,
			       .data = src->data, .release = src->release, .owner = src->owner };
	if (!src->release) {
		memcpy(op->buf, src->data, len);
		op->data = op->buf;
	}
	op->status = iommu_check(fn, addr, len, SIM_DMA_WRITE);
	if (fn->wr_tail)
		fn->wr_tail->next = op;
	else
		fn->wr_head = op;
	fn->wr_tail = op;
	if (t < sim_now(k))
		t = sim_now(k);
	vis = op->status ? t : write_timing_ct(fn, t, len, ct);
	sim_schedule_owned_at(k, vis > sim_now(k) ? vis : sim_now(k), dma_write_complete, op);
}

/* ---- MSI-X ---- */

struct msix_msg {
	struct sim_pcie_fn *fn; /* source */
	unsigned vector;        /* vector number */
};

static void msix_arrive(void *p)
{
	struct msix_msg *m = p;
	struct irq_slot *s = &m->fn->irq[m->vector];

	trace_pcie_msix(m->fn->devno, m->vector);
	if (s->fn)
		s->fn(s->arg, m->vector);
	free(m);
}

void sim_pcie_msix(struct sim_pcie_fn *fn, unsigned vector)
{
	struct sim_kernel *k = sim_kernel();
	struct msix_msg *m;
	sim_time_t t;

	SIM_ASSERT(vector < SIM_PCIE_MAX_VECTORS, "MSI-X vector %u out of range", vector);
	m = malloc(sizeof(*m));
	SIM_ASSERT(m != NULL, "out of memory");
	*m = (struct msix_msg){ fn, vector };
	t = write_timing(fn, sim_now(k), 4) - fn->dma_wr_ps + fn->msix_ps;
	if (t < fn->last_write_visible_ps)
		t = fn->last_write_visible_ps;
	sim_schedule_owned_at(k, t, msix_arrive, m);
}

void sim_pcie_set_irq(struct sim_pcie_fn *fn, unsigned vector, sim_irq_fn handler, void *arg)
{
	SIM_ASSERT(vector < SIM_PCIE_MAX_VECTORS, "MSI-X vector %u out of range", vector);
	fn->irq[vector] = (struct irq_slot){ handler, arg };
}

/* ---- host time ---- */

void sim_host_advance(sim_time_t ps)
{
	struct sim_kernel *k = sim_kernel();

	sim_run_until(k, sim_now(k) + ps);
}

uint64_t sim_host_skip(sim_time_t step)
{
	struct sim_kernel *k = sim_kernel();
	sim_time_t next, now = sim_now(k);
	uint64_t n;

	/* In a fabric, a frame the peers may still send before the next local event bounds the
	 * jump: take it in first (a no-op in one process). */
	if (!step || !sim_next_event(k, &next) || !sim_settle(k, next) ||
	    !sim_next_event(k, &next) || next <= now)
		return 0;
	n = (next - now + step - 1) / step;
	if (n > (UINT64_MAX - now) / step)
		return 0; /* beyond the end of time: left to ordinary steps */
	sim_run_until(k, now + n * step);
	return n;
}

bool sim_host_idle(void)
{
	return !sim_events_pending(sim_kernel());
}

void sim_host_settle(void)
{
	while (sim_step_busy(sim_kernel()))
		;
}

int sim_host_wait(bool (*pred)(void *), void *arg, sim_time_t timeout_ps)
{
	struct sim_kernel *k = sim_kernel();

	return sim_run_while_not(k, pred, arg, sim_now(k) + timeout_ps);
}
