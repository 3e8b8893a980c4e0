/* PCIe seam between a host (driver) and a device (model): BAR0 MMIO dispatched to the device,
 * DMA into host memory checked by an IOMMU model, and MSI-X interrupts back (architecture §5.1).
 *
 * Host memory is the process's own memory. The device sees only I/O virtual addresses (IOVAs)
 * that the IOMMU hands out when the driver maps a range (sim_pcie_map), allocated in mapping
 * order from a fixed base with a guard page between mappings — so device addresses, traces and
 * pcaps do not depend on where the host's allocator put a buffer. A DMA must lie inside one
 * mapping with the needed permission; anything else is a logged fault returned to the device
 * as -EFAULT, and the device decides how to report it. It never touches host memory.
 *
 * Timing (docs/timing.md): the controller starts TLPs on edges of its clock (clock.pcie_mhz);
 * each direction of the link is a resource with a busy-until time;
 * a TLP occupies it for (payload + TLP overhead) / bandwidth. Posted MMIO writes arrive in
 * order after pcie.mmio_write_ns; DMA reads are split at pcie.mrrs, each needs one of pcie.tags
 * tags and completes pcie.dma_read_ns later; DMA writes are split at pcie.mps; an MSI-X message
 * is a posted write and never passes an earlier DMA write. */
#ifndef SIM_PCIE_H
#define SIM_PCIE_H

#include "sim/config.h"
#include "sim/kernel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_PCIE_TLP_OVERHEAD_BYTES 24 /* framing, sequence, header, LCRC */
#define SIM_PCIE_MAX_FNS 64
#define SIM_PCIE_MAX_VECTORS 64

enum sim_dma_perm {
	SIM_DMA_READ = 1,  /* device may read (host → device) */
	SIM_DMA_WRITE = 2, /* device may write (device → host) */
};

/* One recorded DMA fault. */
struct sim_dma_fault {
	uint64_t addr;   /* first byte of the access */
	uint64_t len;    /* length of the access */
	unsigned perm;   /* access that was refused (SIM_DMA_READ or SIM_DMA_WRITE) */
	sim_time_t t_ps; /* when */
};

/* What a device implements behind its BAR. */
struct sim_pcie_dev_ops {
	uint32_t (*mmio_read32)(void *dev, uint32_t off);
	void (*mmio_write32)(void *dev, uint32_t off, uint32_t val);
	void (*mmio_write64)(void *dev, uint32_t off, uint64_t val); /* 8-byte aligned */
	/* a write-combined block (64-byte aligned), arriving whole; NULL: refused */
	void (*mmio_block)(void *dev, uint32_t off, const uint8_t *data, unsigned len);
};

struct sim_pcie_fn;
typedef void (*sim_irq_fn)(void *arg, unsigned vector);
typedef void (*sim_dma_done_fn)(void *arg, int status);

/* ---- platform side (system construction) ---- */
struct sim_pcie_fn *sim_pcie_fn_create(const struct sim_config *cfg, int host, int devno,
					const char *name, const struct sim_pcie_dev_ops *ops,
					void *dev, uint32_t bar0_bytes);
void sim_pcie_fn_destroy(struct sim_pcie_fn *fn);

/* ---- host (driver) side ---- */
/* Functions present, in bus order; returns the count (<= max). */
int sim_pcie_enumerate(struct sim_pcie_fn **out, int max);
/* Changes whenever functions are created or destroyed (a reboot), so a driver can tell that
 * the functions it probed are gone. */
uint64_t sim_pcie_bus_generation(void);
const char *sim_pcie_fn_name(const struct sim_pcie_fn *fn);
int sim_pcie_fn_host(const struct sim_pcie_fn *fn);
int sim_pcie_fn_devno(const struct sim_pcie_fn *fn);
/* Posted write: returns at once; the device sees it pcie.mmio_write_ns later. */
void sim_pcie_mmio_write32(struct sim_pcie_fn *fn, uint32_t off, uint32_t val);
/* A 64-bit posted write (one TLP, arrives whole): doorbells. */
void sim_pcie_mmio_write64(struct sim_pcie_fn *fn, uint32_t off, uint64_t val);
/* A write-combined burst of len bytes (8..4096, a multiple of 8) to a 64-byte aligned offset:
 * one posted TLP that arrives whole (BlueFlame doorbells). */
void sim_pcie_mmio_write_block(struct sim_pcie_fn *fn, uint32_t off, const void *data,
			       unsigned len);
/* Non-posted read: simulated time advances by the round trip. */
uint32_t sim_pcie_mmio_read32(struct sim_pcie_fn *fn, uint32_t off);
/* Let the device reach [addr, addr+len) with perm. Returns a mapping id > 0 and the device
 * address of addr in *iova, or -errno. */
int64_t sim_pcie_map(struct sim_pcie_fn *fn, const void *addr, size_t len, unsigned perm,
		     uint64_t *iova);
int sim_pcie_unmap(struct sim_pcie_fn *fn, int64_t id);
/* Interrupt handler for a vector, called in simulated time when the message arrives. */
void sim_pcie_set_irq(struct sim_pcie_fn *fn, unsigned vector, sim_irq_fn handler, void *arg);

/* ---- device side ---- */
/* Timed DMA for a sequential agent (the firmware): copies at once and advances *t_ps by the
 * modelled transfer time, starting no earlier than *t_ps. 0 or -EFAULT (nothing copied). */
int sim_dma_read_timed(struct sim_pcie_fn *fn, uint64_t addr, void *dst, size_t len,
		       sim_time_t *t_ps);
int sim_dma_write_timed(struct sim_pcie_fn *fn, uint64_t addr, const void *src, size_t len,
			sim_time_t *t_ps);
/* Asynchronous DMA: the read copies when its last completion arrives; the write copies src at
 * once (a posted write owns its data) and lands later. done(arg, status) runs at completion. */
void sim_dma_read(struct sim_pcie_fn *fn, uint64_t addr, void *dst, size_t len,
		  sim_dma_done_fn done, void *arg);
void sim_dma_write(struct sim_pcie_fn *fn, uint64_t addr, const void *src, size_t len,
		   sim_dma_done_fn done, void *arg);
/* A posted write the device decides now but issues at t (>= now): the data is taken now, so
 * that later reads see it (reads never pass posted writes); it lands as if issued at t. */
void sim_dma_write_at(struct sim_pcie_fn *fn, uint64_t addr, const void *src, size_t len,
		      sim_time_t t, sim_dma_done_fn done, void *arg);
/* Cut-through transfers between PCIe and a link of mbps Mb/s (docs/timing.md#cut-through);
 * bytes(x) below is the time x bytes take on that link, rounded as the link rounds.
 * A timed read (as sim_dma_read_timed) feeding a transmitter: for each completion, whose first
 * byte is byte off + a of the stream, *need is raised to its arrival - bytes(off + a), so that a
 * transmitter starting the stream's byte 0 at *need or later never runs ahead of the data. */
int sim_dma_read_ct(struct sim_pcie_fn *fn, uint64_t addr, void *dst, size_t len,
		    sim_time_t *t_ps, uint32_t mbps, uint64_t off, sim_time_t *need);
/* A posted write of data received from a link, written as it comes through the receive
 * pipeline: the data is taken now, and the TLP carrying bytes [a, a + n) starts no earlier
 * than ready - bytes(len - a - n + tail), where ready is the time the pipeline is done with the
 * packet and tail the bytes that follow this data on the wire — possibly before now, when the
 * link to memory was free then. */
void sim_dma_write_ct(struct sim_pcie_fn *fn, uint64_t addr, const void *src, size_t len,
		      sim_time_t ready, uint32_t mbps, uint64_t tail);
/* Send MSI-X message for vector (ordered after earlier DMA writes). */
void sim_pcie_msix(struct sim_pcie_fn *fn, unsigned vector);
/* Faults seen so far on this function (count) and the most recent one. */
uint64_t sim_pcie_fault_count(const struct sim_pcie_fn *fn);
bool sim_pcie_last_fault(const struct sim_pcie_fn *fn, struct sim_dma_fault *out);
/* Called for every fault, so that the device can report it to the driver. */
void sim_pcie_set_fault_cb(struct sim_pcie_fn *fn, void (*cb)(void *dev, const struct sim_dma_fault *f));
/* Check without copying. */
bool sim_iommu_allowed(const struct sim_pcie_fn *fn, uint64_t addr, size_t len, unsigned perm);
#define SIM_IOVA_BASE 0x100000000ull /* first IOVA handed out */

/* ---- host time (architecture §7) ---- */
/* Charge host CPU time: run the simulation for ps. */
void sim_host_advance(sim_time_t ps);
/* Run the simulation until pred(arg) holds. 0, -EDEADLK (nothing pending that could make it
 * true), or -ETIMEDOUT after timeout_ps. */
int sim_host_wait(bool (*pred)(void *), void *arg, sim_time_t timeout_ps);
/* True when nothing is pending anywhere in the simulation. */
bool sim_host_idle(void);
/* Run until nothing but background events (planned fault windows) is pending: boot settling,
 * links train, the SM sweeps. */
void sim_host_settle(void);

#endif
