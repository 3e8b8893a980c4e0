/* eq block: event queues in host memory. The device writes 32-byte EQEs with an ownership bit
 * that flips on every pass over the ring; the driver consumes them and reports its consumer
 * index (and re-arms) through EQ_DOORBELL. An armed EQ raises its MSI-X vector once. */
#include "model/eq.h"
#include "sim/trace.h"

#include <stdlib.h>
#include <string.h>

bool hm_eq_post(struct hm_dev *d, uint8_t type, uint8_t subtype, const uint32_t data[6])
{
	for (unsigned n = 0; n < HCA_EQ_MAX; n++) {
		struct hm_eq *eq = &d->eqs[n];
		struct hca_eqe e;
		uint32_t size;

		uint64_t slot;

		if (!eq->live || !(eq->event_mask & (1ull << type)))
			continue;
		size = 1u << eq->log_size;
		if (eq->broken) {
			trace_warn_eq_broken(d->devno, n, type);
			return false;
		}
		if (eq->pi - eq->ci >= size) {
			/* Ring full: the event is lost; counted and traced (IBA: EQ overrun). */
			eq->overruns++;
			trace_warn_eq_overrun(d->devno, n, type);
			return false;
		}
		slot = eq->ring_addr + (uint64_t)(eq->pi & (size - 1)) * HCA_EQE_BYTES;
		if (!sim_iommu_allowed(d->fn, slot, HCA_EQE_BYTES, SIM_DMA_WRITE)) {
			/* The ring is gone from the IOMMU: a catastrophic EQ error. Mark it before
			 * the write faults, so that the fault report (itself an event) cannot
			 * come back to this EQ. */
			eq->broken = true;
		}
		memset(&e, 0, sizeof(e));
		e.type = type;
		e.subtype = subtype;
		memcpy(e.data, data, sizeof(e.data));
		e.owner = ((eq->pi >> eq->log_size) & 1) ? 0 : 1;
		sim_dma_write(d->fn, slot, &e, sizeof(e), NULL, NULL);
		if (eq->broken)
			return false;
		trace_eq_eqe(d->devno, n, eq->pi, type, subtype, data[0], eq->armed);
		eq->pi++;
		if (eq->armed) {
			eq->armed = false;
			sim_pcie_msix(d->fn, eq->vector);
		}
		return true;
	}
	return false;
}

void hm_eq_doorbell(struct hm_dev *d, uint32_t val)
{
	unsigned n = val >> 24;
	struct hm_eq *eq = n < HCA_EQ_MAX ? &d->eqs[n] : NULL;
	uint32_t ci = val & 0x7fffffu;

	if (!eq || !eq->live) {
		d->bad_doorbells++;
		trace_warn_doorbell(d->devno, "eq", n, ci, "no_queue");
		return;
	}
	/* The doorbell carries the low 23 bits of the consumer index; it may not pass the
	 * producer. */
	ci = (eq->ci & ~0x7fffffu) | ci;
	if (ci < eq->ci)
		ci += 0x800000u;
	if (ci - eq->ci > eq->pi - eq->ci) {
		d->bad_doorbells++;
		trace_warn_doorbell(d->devno, "eq", n, ci, "beyond_pi");
		return;
	}
	eq->ci = ci;
	if (val & (1u << 23)) {
		eq->armed = true;
		/* Entries already waiting re-raise the vector at once. */
		if (eq->pi != eq->ci) {
			eq->armed = false;
			sim_pcie_msix(d->fn, eq->vector);
		}
	}
}

void hm_eq_reset(struct hm_dev *d)
{
	memset(d->eqs, 0, sizeof(d->eqs));
}

struct eq_post_later {
	struct hm_dev *d; /* device */
	uint8_t type, subtype;
	uint32_t data[6];
};

static void eq_post_later(void *p)
{
	struct eq_post_later *e = p;

	hm_eq_post(e->d, e->type, e->subtype, e->data);
	free(e);
}

void hm_eq_post_at(struct hm_dev *d, uint8_t type, uint8_t subtype, const uint32_t data[6],
		   sim_time_t t)
{
	struct eq_post_later *e = malloc(sizeof(*e));

	SIM_ASSERT(e != NULL, "out of memory");
	e->d = d;
	e->type = type;
	e->subtype = subtype;
	memcpy(e->data, data, sizeof(e->data));
	sim_schedule_owned_at(d->k, t, eq_post_later, e);
}
