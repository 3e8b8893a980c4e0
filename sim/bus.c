/* The public host bus (sim/hcasim_bus.h): every argument checked, then the host half of the
 * PCIe model (sim/pcie_host.h). A refused call sends nothing and lets no time pass. */
#include "sim/hcasim_bus.h"
#include "sim/devthread.h"
#include "sim/error.h"
#include "sim/kernel.h"
#include "sim/pcie_host.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdarg.h>

_Static_assert((int)HCASIM_DMA_READ == (int)SIM_DMA_READ &&
		   (int)HCASIM_DMA_WRITE == (int)SIM_DMA_WRITE,
	       "the public DMA permissions are the IOMMU's");
_Static_assert(HCASIM_BUS_MAX_FNS == SIM_PCIE_MAX_FNS &&
		   HCASIM_BUS_MAX_VECTORS == SIM_PCIE_MAX_VECTORS,
	       "the public bus limits are the PCIe model's");

/* A public handle is the simulator's own function pointer, checked against the live ones
 * before it is used. */
static struct sim_pcie_fn *fn_of(const struct hcasim_fn *h)
{
	struct sim_pcie_fn *fn = (struct sim_pcie_fn *)(uintptr_t)h;

	return h && sim_pcie_fn_live(fn) ? fn : NULL;
}

#define LIVE(fn, h, who)                                                                           \
	do {                                                                                       \
		if (!((fn) = fn_of(h)))                                                            \
			return sim_error(-ENODEV,                                                  \
					 who ": fn %p is not a PCIe function on the bus "          \
					     "(NULL, foreign, or gone at a reboot)",               \
					 (const void *)(h));                                       \
	} while (0)

int hcasim_bus_enumerate(struct hcasim_fn **out, int max)
{
	struct sim_pcie_fn *fns[SIM_PCIE_MAX_FNS];
	int n;

	if (max < 0 || (!out && max > 0))
		return sim_error(-EINVAL, "hcasim_bus_enumerate: %s",
				 max < 0 ? "max is negative" : "out is NULL");
	n = sim_pcie_enumerate(fns, max < SIM_PCIE_MAX_FNS ? max : SIM_PCIE_MAX_FNS);
	for (int i = 0; i < n; i++)
		out[i] = (struct hcasim_fn *)(void *)fns[i];
	return n;
}

uint64_t hcasim_bus_generation(void)
{
	return sim_pcie_bus_generation();
}

const char *hcasim_fn_name(const struct hcasim_fn *h)
{
	struct sim_pcie_fn *fn = fn_of(h);

	if (!fn) {
		errno = ENODEV;
		sim_error(-ENODEV, "hcasim_fn_name: fn %p is not a PCIe function on the bus",
			  (const void *)h);
		return NULL;
	}
	return sim_pcie_fn_name(fn);
}

int hcasim_fn_host(const struct hcasim_fn *h)
{
	struct sim_pcie_fn *fn;

	LIVE(fn, h, "hcasim_fn_host");
	return sim_pcie_fn_host(fn);
}

int hcasim_fn_devno(const struct hcasim_fn *h)
{
	struct sim_pcie_fn *fn;

	LIVE(fn, h, "hcasim_fn_devno");
	return sim_pcie_fn_devno(fn);
}

int64_t hcasim_fn_bar_size(const struct hcasim_fn *h, unsigned bar)
{
	struct sim_pcie_fn *fn;

	LIVE(fn, h, "hcasim_fn_bar_size");
	if (bar > 5)
		return sim_error(-EINVAL, "hcasim_fn_bar_size: bar %u (a function has BARs 0..5)",
				 bar);
	return bar ? 0 : sim_pcie_fn_bar0_bytes(fn);
}

/* The checks every MMIO access shares: width, BAR, alignment to align, range. */
static int mmio_check(struct sim_pcie_fn *fn, const char *who, unsigned bar, uint64_t off,
		      uint64_t len, unsigned align)
{
	uint64_t size = sim_pcie_fn_bar0_bytes(fn);

	if (bar != 0)
		return sim_error(-EINVAL, "%s: bar %u is not implemented (the HCA has BAR 0 only)",
				 who, bar);
	if (off % align)
		return sim_error(-EINVAL, "%s: offset 0x%llx is not %u-byte aligned", who,
				 (unsigned long long)off, align);
	if (off >= size || len > size - off)
		return sim_error(
		    -ERANGE, "%s: offset 0x%llx + %llu bytes is outside BAR 0 (%llu bytes)", who,
		    (unsigned long long)off, (unsigned long long)len, (unsigned long long)size);
	return 0;
}

static bool width_ok(unsigned width)
{
	return width == 1 || width == 2 || width == 4 || width == 8;
}

static int bus_mmio_write(struct hcasim_fn *h, unsigned bar, uint64_t off, unsigned width, uint64_t val)
{
	struct sim_pcie_fn *fn;
	int rc;

	LIVE(fn, h, "hcasim_mmio_write");
	sim_host_actions++;
	if (!width_ok(width))
		return sim_error(-EINVAL, "hcasim_mmio_write: width %u (1, 2, 4 or 8)", width);
	rc = mmio_check(fn, "hcasim_mmio_write", bar, off, width, width);
	if (rc)
		return rc;
	sim_pcie_mmio_write(fn, (uint32_t)off, width, val);
	return 0;
}

int hcasim_mmio_write(struct hcasim_fn *h, unsigned bar, uint64_t off, unsigned width, uint64_t val)
{
	int r;

	sim_enter();
	r = bus_mmio_write(h, bar, off, width, val);
	sim_leave();
	return r;
}

static int bus_mmio_read(struct hcasim_fn *h, unsigned bar, uint64_t off, unsigned width, uint64_t *val)
{
	struct sim_pcie_fn *fn;
	int rc;

	LIVE(fn, h, "hcasim_mmio_read");
	sim_host_actions++;
	if (!width_ok(width))
		return sim_error(-EINVAL, "hcasim_mmio_read: width %u (1, 2, 4 or 8)", width);
	if (!val)
		return sim_error(-EINVAL, "hcasim_mmio_read: val is NULL");
	rc = mmio_check(fn, "hcasim_mmio_read", bar, off, width, width);
	if (rc)
		return rc;
	*val = sim_pcie_mmio_read(fn, (uint32_t)off, width);
	return 0;
}

int hcasim_mmio_read(struct hcasim_fn *h, unsigned bar, uint64_t off, unsigned width, uint64_t *val)
{
	int r;

	sim_enter();
	r = bus_mmio_read(h, bar, off, width, val);
	sim_leave();
	return r;
}

static int bus_mmio_write_block(struct hcasim_fn *h, unsigned bar, uint64_t off, const void *data,
			    size_t len)
{
	struct sim_pcie_fn *fn;
	int rc;

	LIVE(fn, h, "hcasim_mmio_write_block");
	sim_host_actions++;
	if (!data)
		return sim_error(-EINVAL, "hcasim_mmio_write_block: data is NULL");
	if (len < 8 || len > 4096 || len % 8)
		return sim_error(
		    -EINVAL, "hcasim_mmio_write_block: len %zu (8..4096, a multiple of 8)", len);
	rc = mmio_check(fn, "hcasim_mmio_write_block", bar, off, len, 64);
	if (rc)
		return rc;
	sim_pcie_mmio_write_block(fn, (uint32_t)off, data, (unsigned)len);
	return 0;
}

int hcasim_mmio_write_block(struct hcasim_fn *h, unsigned bar, uint64_t off, const void *data,
			    size_t len)
{
	int r;

	sim_enter();
	r = bus_mmio_write_block(h, bar, off, data, len);
	sim_leave();
	return r;
}

static int64_t bus_dma_map(struct hcasim_fn *h, const void *addr, size_t len, unsigned perm,
		       uint64_t *iova)
{
	struct sim_pcie_fn *fn;

	LIVE(fn, h, "hcasim_dma_map");
	/* sim_pcie_map checks the range and the permission itself. */
	return sim_pcie_map(fn, addr, len, perm, iova);
}

int64_t hcasim_dma_map(struct hcasim_fn *h, const void *addr, size_t len, unsigned perm,
		       uint64_t *iova)
{
	int64_t r;

	sim_enter();
	r = bus_dma_map(h, addr, len, perm, iova);
	sim_leave();
	return r;
}

static int64_t bus_dma_map_pasid(struct hcasim_fn *h, uint32_t pasid, const void *addr, size_t len,
			     unsigned perm, uint64_t *iova)
{
	struct sim_pcie_fn *fn;

	LIVE(fn, h, "hcasim_dma_map_pasid");
	return sim_pcie_map_pasid(fn, pasid, addr, len, perm, iova);
}

int64_t hcasim_dma_map_pasid(struct hcasim_fn *h, uint32_t pasid, const void *addr, size_t len,
			     unsigned perm, uint64_t *iova)
{
	int64_t r;

	sim_enter();
	r = bus_dma_map_pasid(h, pasid, addr, len, perm, iova);
	sim_leave();
	return r;
}

static int bus_dma_unmap(struct hcasim_fn *h, int64_t id)
{
	struct sim_pcie_fn *fn;

	LIVE(fn, h, "hcasim_dma_unmap");
	return sim_pcie_unmap(fn, id);
}

int hcasim_dma_unmap(struct hcasim_fn *h, int64_t id)
{
	int r;

	sim_enter();
	r = bus_dma_unmap(h, id);
	sim_leave();
	return r;
}

static int bus_irq_set(struct hcasim_fn *h, unsigned vector, hcasim_irq_handler handler, void *arg)
{
	struct sim_pcie_fn *fn;

	LIVE(fn, h, "hcasim_irq_set");
	if (vector >= SIM_PCIE_MAX_VECTORS)
		return sim_error(-EINVAL, "hcasim_irq_set: vector %u (MSI-X vectors 0..%d)", vector,
				 SIM_PCIE_MAX_VECTORS - 1);
	sim_pcie_set_irq(fn, vector, handler, arg);
	return 0;
}

int hcasim_irq_set(struct hcasim_fn *h, unsigned vector, hcasim_irq_handler handler, void *arg)
{
	int r;

	sim_enter();
	r = bus_irq_set(h, vector, handler, arg);
	sim_leave();
	return r;
}

#define BOOTED(who)                                                                                \
	do {                                                                                       \
		if (!sim_kernel())                                                                 \
			return sim_error(-ENODEV, who ": the system is not booted");               \
	} while (0)

static int bus_host_advance(uint64_t ps)
{
	BOOTED("hcasim_host_advance");
	sim_host_actions++;
	sim_host_advance(ps);
	return 0;
}

int hcasim_host_advance(uint64_t ps)
{
	int r;

	sim_enter();
	r = bus_host_advance(ps);
	sim_leave();
	return r;
}

static int bus_host_wait(bool (*pred)(void *arg), void *arg, uint64_t timeout_ps)
{
	uint64_t now;

	BOOTED("hcasim_host_wait");
	sim_host_actions++;
	if (!pred)
		return sim_error(-EINVAL, "hcasim_host_wait: pred is NULL");
	now = sim_now(sim_kernel());
	if (timeout_ps > UINT64_MAX - now)
		timeout_ps = UINT64_MAX - now; /* for ever: the deadline saturates */
	return sim_host_wait(pred, arg, timeout_ps);
}

int hcasim_host_wait(bool (*pred)(void *arg), void *arg, uint64_t timeout_ps)
{
	int r;

	sim_enter();
	r = bus_host_wait(pred, arg, timeout_ps);
	sim_leave();
	return r;
}

static int bus_host_settle(void)
{
	BOOTED("hcasim_host_settle");
	sim_host_actions++;
	sim_host_settle();
	return 0;
}

int hcasim_host_settle(void)
{
	int r;

	sim_enter();
	r = bus_host_settle();
	sim_leave();
	return r;
}

static int64_t bus_host_skip(uint64_t step_ps)
{
	BOOTED("hcasim_host_skip");
	if (!step_ps)
		return sim_error(-EINVAL, "hcasim_host_skip: step_ps is 0");
	return (int64_t)sim_host_skip(step_ps);
}

int64_t hcasim_host_skip(uint64_t step_ps)
{
	int64_t r;

	sim_enter();
	r = bus_host_skip(step_ps);
	sim_leave();
	return r;
}

void hcasim_bus_hold(void)
{
	sim_enter();
}

void hcasim_bus_release(void)
{
	sim_leave();
}

uint64_t hcasim_host_actions(void)
{
	return sim_host_actions;
}

static int bus_host_idle(void)
{
	BOOTED("hcasim_host_idle");
	return sim_host_idle();
}

int hcasim_host_idle(void)
{
	int r;

	sim_enter();
	r = bus_host_idle();
	sim_leave();
	return r;
}

int hcasim_error(int err, const char *fmt, ...)
{
	va_list ap;

	if (!fmt)
		return sim_error(err, "(driver error without a message)");
	va_start(ap, fmt);
	err = sim_verror(err, fmt, ap);
	va_end(ap);
	return err;
}

int hcasim_trace_verb(int dev, const char *verb)
{
	if (!verb)
		return sim_error(-EINVAL, "hcasim_trace_verb: verb is NULL");
	sim_enter();
	trace_drv_verb(dev, verb);
	sim_leave();
	return 0;
}
