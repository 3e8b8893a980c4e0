/* hcasim_bus.h — the host side of the simulated PCIe bus: what a driver on a real machine
 * would have, and nothing more. Enough to write a driver for the simulated HCA from scratch;
 * hcasim's own libibverbs.so.1 (driver/) reaches the device only through this header and
 * hcasim.h. Link with -lhcasim.
 *
 *   - enumerate the PCIe functions (one per simulated HCA) and read their BAR sizes;
 *   - raw MMIO reads and writes of 1, 2, 4 or 8 bytes, and write-combined block writes;
 *   - make host memory reachable by the device's DMA: map a range into the function's
 *     IOMMU, which returns its device address (IOVA); unmap it;
 *   - install an MSI-X interrupt handler per vector;
 *   - host time: charge CPU time, wait for a condition, let the simulation settle.
 *
 * The register map, the command interface and the queue formats are in docs/regmap.md
 * (generated from model/hw/, installed as build/include/model/hw/, which a driver may include)
 * and docs/device-interface.md.
 *
 * Host memory is the process's own memory: any buffer may be mapped. The device sees only
 * IOVAs, handed out in mapping order from a fixed base with a guard page between mappings,
 * so device addresses, traces and captures do not depend on where the allocator put a buffer.
 * A DMA to an address no mapping covers (or with the wrong permission) is refused by the IOMMU
 * and reported by the device, never performed.
 *
 * Timing (docs/timing.md): a posted MMIO write returns at once and reaches the device
 * pcie.mmio_write_ns later, writes arriving in order; a read is a round trip (simulated time
 * advances while the call runs); an MSI-X message reaches its handler pcie.msix_ns after the
 * device sent it, never before the DMA writes the device issued before it. Handlers run inside
 * the simulation, from hcasim_host_* or any other call that advances simulated time.
 *
 * Errors: every function that can fail returns a negative errno (or NULL with errno set) and
 * leaves the message naming the argument at fault in hcasim_last_error(). A refused call
 * changes nothing: no TLP is sent, no time passes. A function handle is valid until the system
 * is shut down or rebooted (hcasim_bus_generation() changes); a stale or foreign handle is
 * refused with -ENODEV, never dereferenced. */
#ifndef HCASIM_BUS_H
#define HCASIM_BUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HCASIM_BUS_MAX_FNS 64	  /* functions on the bus, at most */
#define HCASIM_BUS_MAX_VECTORS 64 /* MSI-X vectors of a function */

struct hcasim_fn; /* one PCIe function: opaque */

/* ---- functions ---- */
/* The functions present, in bus order, into out[0..max): returns their number (at most max),
 * 0 before hcasim_boot(), or -EINVAL (out NULL with max > 0, max < 0). */
int hcasim_bus_enumerate(struct hcasim_fn **out, int max);
/* Changes whenever functions are created or destroyed (boot, shutdown), so that a driver can
 * tell that the functions it probed are gone. */
uint64_t hcasim_bus_generation(void);
/* "hcasim0"; NULL with errno ENODEV for a handle that is not a live function. */
const char *hcasim_fn_name(const struct hcasim_fn *fn);
/* The simulated host the function sits in, and its device number (the dev= of trace lines and
 * the dev argument of hcasim.h); -ENODEV for a handle that is not a live function. */
int hcasim_fn_host(const struct hcasim_fn *fn);
int hcasim_fn_devno(const struct hcasim_fn *fn);
/* Size in bytes of BAR bar (the HCA has BAR 0 only: 2 MiB), 0 for a BAR the function does not
 * implement (1..5), -EINVAL for bar > 5, -ENODEV for a dead handle. */
int64_t hcasim_fn_bar_size(const struct hcasim_fn *fn, unsigned bar);

/* ---- MMIO ---- */
/* Posted write of width bytes (1, 2, 4 or 8; val's low bytes) at offset off of BAR bar: 0, or
 * -EINVAL for a width other than 1, 2, 4 or 8, a BAR the function does not implement, or an
 * offset not a multiple of width; -ERANGE when [off, off + width) is not inside the BAR. What
 * the device does with a write is the device's: the HCA's registers take 4- and 8-byte
 * writes (docs/regmap.md) and drop a 1- or 2-byte write with warn.mmio_wr reason=sub_dword. */
int hcasim_mmio_write(struct hcasim_fn *fn, unsigned bar, uint64_t off, unsigned width,
		      uint64_t val);
/* Non-posted read of width bytes into *val (zero-extended): it reaches the device after every
 * posted write before it, and simulated time advances by the round trip. A 1- or 2-byte read
 * returns those bytes of the aligned 32-bit register; an 8-byte read is one request that
 * returns the two registers at off and off + 4, read in that order at one instant. Checks and
 * errors as hcasim_mmio_write (val NULL: -EINVAL). */
int hcasim_mmio_read(struct hcasim_fn *fn, unsigned bar, uint64_t off, unsigned width,
		     uint64_t *val);
/* A write-combined burst of len bytes (8..4096, a multiple of 8) to a 64-byte aligned offset:
 * one posted TLP that arrives whole (BlueFlame doorbells). -EINVAL for another length, a NULL
 * data or an unaligned offset; -ERANGE outside the BAR. data is copied before the call
 * returns. */
int hcasim_mmio_write_block(struct hcasim_fn *fn, unsigned bar, uint64_t off, const void *data,
			    size_t len);

/* ---- DMA-able host memory ---- */
enum hcasim_dma_perm {
	HCASIM_DMA_READ = 1,  /* the device may read the range (host to device) */
	HCASIM_DMA_WRITE = 2, /* the device may write it (device to host) */
};
/* Let the device reach [addr, addr + len) with perm (HCASIM_DMA_READ | HCASIM_DMA_WRITE, at
 * least one). Returns a mapping id > 0 and the device address of addr in *iova (iova may be
 * NULL), or -EINVAL (NULL addr, len 0, a range that wraps or exceeds 2^44 bytes, bad perm),
 * -ENOMEM. The IOVA keeps addr's offset within its 4 KiB page. The memory must stay valid
 * until the mapping is removed. */
int64_t hcasim_dma_map(struct hcasim_fn *fn, const void *addr, size_t len, unsigned perm,
		       uint64_t *iova);
/* The same into IOMMU domain pasid (1..0xfffff; 0 is the default domain hcasim_dma_map uses),
 * as a driver maps the memory of one process (one user context) on an IOMMU with PASIDs.
 * hcasim's device lets a user context's memory keys cover only memory of the domain it was
 * opened with (ALLOC_UCTX). -EINVAL for a pasid beyond 20 bits, else as hcasim_dma_map. */
int64_t hcasim_dma_map_pasid(struct hcasim_fn *fn, uint32_t pasid, const void *addr, size_t len,
			     unsigned perm, uint64_t *iova);
/* Remove mapping id: the device's later accesses to it fault. 0 or -ENOENT. */
int hcasim_dma_unmap(struct hcasim_fn *fn, int64_t id);

/* ---- interrupts ---- */
typedef void (*hcasim_irq_handler)(void *arg, unsigned vector);
/* Call handler(arg, vector) in simulated time when an MSI-X message of vector arrives; a NULL
 * handler removes it (a message then arrives unheard). -EINVAL for vector >= 64. */
int hcasim_irq_set(struct hcasim_fn *fn, unsigned vector, hcasim_irq_handler handler, void *arg);

/* ---- host time ---- */
/* Charge ps of host CPU time: the simulation runs for ps. 0, or -ENODEV before boot. */
int hcasim_host_advance(uint64_t ps);
/* Run the simulation until pred(arg) holds (checked after every event): 0; -EDEADLK when
 * nothing is pending that could make it true; -ETIMEDOUT after timeout_ps of simulated time;
 * -EINVAL for a NULL pred; -ENODEV before boot. */
int hcasim_host_wait(bool (*pred)(void *arg), void *arg, uint64_t timeout_ps);
/* Run until nothing but background events (planned fault windows) is pending: the ports train
 * and the subnet manager sweeps. 0, or -ENODEV before boot. */
int hcasim_host_settle(void);
/* 1 when nothing at all is pending in the simulation (a wait would never end), 0 when
 * something is, -ENODEV before boot. */
int hcasim_host_idle(void);
/* Exact skipping for busy pollers: advance simulated time by whole steps of step_ps to the
 * first step boundary at or after the next pending event, running everything up to it — the
 * time that consecutive hcasim_host_advance(step_ps) calls would reach before anything
 * changes, to the picosecond, in one call. Returns the steps skipped (0 when nothing is
 * pending: the caller steps as usual), -EINVAL for step_ps 0, -ENODEV before boot. */
int64_t hcasim_host_skip(uint64_t step_ps);
/* How many times the host has observed or moved the simulation outside the verbs so far:
 * hcasim_now_ps() and hcasim_run_for_ps() calls, MMIO reads and writes through this bus (a
 * register such as CORE_CLOCK holds the time; a doorbell is an action at its own time), and
 * the host time calls above. A poller that does any of them between two polls must see each
 * poll at its own time: skipping stops there. */
uint64_t hcasim_host_actions(void);

/* A driver section that reads what the device writes into host memory (completion and event
 * queues) holds the simulation across it: in a fabric process, the device thread runs the HCA
 * while the program is outside the library (docs/fabric.md#the-device-thread), and not in
 * such a section. Nested holds nest; every bus call holds the simulation by itself. */
void hcasim_bus_hold(void);
void hcasim_bus_release(void);

/* ---- driver services ---- */
/* Record a driver's error message for hcasim_last_error() (printf format) and return err, for
 * `return hcasim_error(-EINVAL, "...")`. Printed on stderr when HCASIM_VERBOSE is set. */
int hcasim_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Emit the trace event drv.verb (category drv) for device dev: a driver's verb entry. 0, or
 * -EINVAL for a NULL verb. */
int hcasim_trace_verb(int dev, const char *verb);

#ifdef __cplusplus
}
#endif
#endif
