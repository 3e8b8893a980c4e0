/* PCIe seam, host half, inside the simulator: enumerate the functions on the bus, BAR0 MMIO,
 * map and unmap host memory for the device's DMA, install interrupt handlers — and host time.
 * A driver uses the public sim/hcasim_bus.h (sim/bus.c), which checks every argument and calls
 * these; the testbench calls them directly. The device half, DMA and the IOMMU as the device
 * sees them, is sim/pcie_dev.h, which a driver cannot include.
 *
 * Host memory is the process's own memory. The device sees only I/O virtual addresses (IOVAs)
 * that the IOMMU hands out when the driver maps a range (sim_pcie_map), allocated in mapping
 * order from a fixed base with a guard page between mappings — so device addresses, traces and
 * pcaps do not depend on where the host's allocator put a buffer.
 *
 * Timing (docs/timing.md): posted MMIO writes arrive in order after pcie.mmio_write_ns; a read
 * is a round trip; an MSI-X message reaches the handler pcie.msix_ns after it was sent. */
#ifndef SIM_PCIE_HOST_H
#define SIM_PCIE_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t sim_time_t; /* picoseconds since power-on (as sim/kernel.h) */

#define SIM_PCIE_MAX_FNS 64
#define SIM_PCIE_MAX_VECTORS 64

/* What a mapping lets the device do. */
enum sim_dma_perm {
	SIM_DMA_READ = 1,  /* device may read (host → device) */
	SIM_DMA_WRITE = 2, /* device may write (device → host) */
};

struct sim_pcie_fn;
typedef void (*sim_irq_fn)(void *arg, unsigned vector);

/* ---- host (driver) side ---- */
/* Functions present, in bus order; returns the count (<= max). */
int sim_pcie_enumerate(struct sim_pcie_fn **out, int max);
/* Changes whenever functions are created or destroyed (a reboot), so a driver can tell that
 * the functions it probed are gone. */
uint64_t sim_pcie_bus_generation(void);
/* Is fn one of the functions present (a handle from sim_pcie_enumerate, not yet destroyed)? */
bool sim_pcie_fn_live(const struct sim_pcie_fn *fn);
uint32_t sim_pcie_fn_bar0_bytes(const struct sim_pcie_fn *fn);
const char *sim_pcie_fn_name(const struct sim_pcie_fn *fn);
int sim_pcie_fn_host(const struct sim_pcie_fn *fn);
int sim_pcie_fn_devno(const struct sim_pcie_fn *fn);
/* Posted write: returns at once; the device sees it pcie.mmio_write_ns later. */
void sim_pcie_mmio_write32(struct sim_pcie_fn *fn, uint32_t off, uint32_t val);
/* A 64-bit posted write (one TLP, arrives whole): doorbells. */
void sim_pcie_mmio_write64(struct sim_pcie_fn *fn, uint32_t off, uint64_t val);
/* A posted write of width 1, 2, 4 or 8 bytes (val's low bytes). The device's registers take
 * 4- and 8-byte writes; a 1- or 2-byte write arrives and is dropped (warn.mmio_wr sub_dword). */
void sim_pcie_mmio_write(struct sim_pcie_fn *fn, uint32_t off, unsigned width, uint64_t val);
/* A write-combined burst of len bytes (8..4096, a multiple of 8) to a 64-byte aligned offset:
 * one posted TLP that arrives whole (BlueFlame doorbells). Another length is refused at once
 * (warn.mmio); an access outside BAR0, whatever its offset, is refused where it arrives. */
void sim_pcie_mmio_write_block(struct sim_pcie_fn *fn, uint32_t off, const void *data,
			       unsigned len);
/* Non-posted read: simulated time advances by the round trip. */
uint32_t sim_pcie_mmio_read32(struct sim_pcie_fn *fn, uint32_t off);
/* A read of width 1, 2, 4 or 8 bytes, one round trip: 1 and 2 are bytes of the aligned
 * register; 8 is the registers at off and off + 4, read at one instant. */
uint64_t sim_pcie_mmio_read(struct sim_pcie_fn *fn, uint32_t off, unsigned width);
/* Let the device reach [addr, addr+len) with perm. Returns a mapping id > 0 and the device
 * address of addr in *iova, or -errno. */
int64_t sim_pcie_map(struct sim_pcie_fn *fn, const void *addr, size_t len, unsigned perm,
		     uint64_t *iova);
/* The same into IOMMU domain pasid (0..SIM_PASID_MAX; 0 is the function's default domain).
 * IOVAs are allocated from one space for all domains and never reused, so a device address
 * names one mapping and its domain. */
#define SIM_PASID_MAX 0xfffffu
int64_t sim_pcie_map_pasid(struct sim_pcie_fn *fn, uint32_t pasid, const void *addr, size_t len,
			   unsigned perm, uint64_t *iova);
int sim_pcie_unmap(struct sim_pcie_fn *fn, int64_t id);
/* Interrupt handler for a vector, called in simulated time when the message arrives. */
void sim_pcie_set_irq(struct sim_pcie_fn *fn, unsigned vector, sim_irq_fn handler, void *arg);

/* ---- host time (architecture §7) ---- */
/* Charge host CPU time: run the simulation for ps. */
void sim_host_advance(sim_time_t ps);
/* Run the simulation until pred(arg) holds. 0, -EDEADLK (nothing pending that could make it
 * true), or -ETIMEDOUT after timeout_ps. */
int sim_host_wait(bool (*pred)(void *), void *arg, sim_time_t timeout_ps);
/* Advance by whole steps of step to the first step boundary at or after the next pending
 * event, running everything up to it: what consecutive sim_host_advance(step) calls reach
 * when nothing happens in between, in one call. The steps taken; 0 when nothing is pending. */
uint64_t sim_host_skip(sim_time_t step);
/* True when nothing is pending anywhere in the simulation. */
bool sim_host_idle(void);
/* Run until nothing but background events (planned fault windows) is pending: boot settling,
 * links train, the SM sweeps. */
void sim_host_settle(void);

#endif
