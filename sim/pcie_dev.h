/* PCIe seam, device half: what a device (model/, its firmware) and the platform (sim/) use —
 * BAR registration, DMA into host memory checked by the IOMMU model, MSI-X (architecture
 * §5.1). The host half, which a driver uses, is sim/pcie_host.h.
 *
 * A driver cannot include this file: it compiles only where the Makefile defines
 * HCASIM_DEVICE_SIDE (model/, firmware/, sim/, testbench/; not driver/), so the driver/device
 * seam is a compile error rather than a review rule (docs/architecture.md, the layering rule).
 *
 * A DMA must lie inside one mapping with the needed permission; anything else is a logged
 * fault returned to the device as -EFAULT, and the device decides how to report it. It never
 * touches host memory.
 *
 * Timing (docs/timing.md): the controller starts TLPs on edges of its clock (clock.pcie_mhz);
 * each direction of the link is a resource with a busy-until time;
 * a TLP occupies it for (payload + TLP overhead) / bandwidth. DMA reads are split at pcie.mrrs,
 * each needs one of pcie.tags tags and completes pcie.dma_read_ns later; DMA writes are split
 * at pcie.mps; an MSI-X message is a posted write and never passes an earlier DMA write. */
#ifndef SIM_PCIE_DEV_H
#define SIM_PCIE_DEV_H

#ifndef HCASIM_DEVICE_SIDE
#error "sim/pcie_dev.h is the device side of PCIe: a driver includes only sim/pcie_host.h (docs/architecture.md, the layering rule)"
#endif

#include "sim/config.h"
#include "sim/kernel.h"
#include "sim/pcie_host.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_PCIE_TLP_OVERHEAD_BYTES 24 /* framing, sequence, header, LCRC */

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

typedef void (*sim_dma_done_fn)(void *arg, int status);

/* ---- platform side (system construction) ---- */
struct sim_pcie_fn *sim_pcie_fn_create(const struct sim_config *cfg, int host, int devno,
					const char *name, const struct sim_pcie_dev_ops *ops,
					void *dev, uint32_t bar0_bytes);
void sim_pcie_fn_destroy(struct sim_pcie_fn *fn);

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
/* The same with the data held where they lie instead of copied (a received frame's payload,
 * by reference): the caller holds a reference to the buffer for the write, which gives it back
 * with release(owner) once it has landed or faulted (or its function is destroyed first). The
 * bytes at src must not change until then. */
void sim_dma_write_ct_held(struct sim_pcie_fn *fn, uint64_t addr, const void *src, size_t len,
			   sim_time_t ready, uint32_t mbps, uint64_t tail,
			   void (*release)(void *owner), void *owner);
/* Send MSI-X message for vector (ordered after earlier DMA writes). */
void sim_pcie_msix(struct sim_pcie_fn *fn, unsigned vector);
/* Faults seen so far on this function (count) and the most recent one. */
uint64_t sim_pcie_fault_count(const struct sim_pcie_fn *fn);
bool sim_pcie_last_fault(const struct sim_pcie_fn *fn, struct sim_dma_fault *out);
/* Called for every fault, so that the device can report it to the driver. */
void sim_pcie_set_fault_cb(struct sim_pcie_fn *fn, void (*cb)(void *dev, const struct sim_dma_fault *f));
/* Check without copying. */
bool sim_iommu_allowed(const struct sim_pcie_fn *fn, uint64_t addr, size_t len, unsigned perm);
/* The IOMMU domain (PASID) of the one mapping that holds [addr, addr+len) with perm, or -1. */
int64_t sim_iommu_pasid(const struct sim_pcie_fn *fn, uint64_t addr, size_t len, unsigned perm);
#define SIM_IOVA_BASE 0x100000000ull /* first IOVA handed out */

#endif
