/* Tracing: one `t=<ps> [dev=<n> cyc=<cycle>] cat.name key=value ...` line per event.
 * Events are declared once in sim/trace.def; categories are chosen with HCASIM_TRACE=cat,cat
 * (or "*"), output goes to HCASIM_TRACE_FILE or stderr. A disabled event costs one bit test. */
#ifndef SIM_TRACE_H
#define SIM_TRACE_H

#include <stdbool.h>
#include <stdint.h>

enum sim_trace_cat {
#define TRACE_CAT(c, doc) SIM_TCAT_##c,
#define TRACE_EV(c, n, doc)
#include "sim/trace.def"
#undef TRACE_CAT
#undef TRACE_EV
	SIM_TCAT_COUNT
};

enum sim_trace_ev {
#define TRACE_CAT(c, doc)
#define TRACE_EV(c, n, doc) SIM_TEV_##c##_##n,
#include "sim/trace.def"
#undef TRACE_CAT
#undef TRACE_EV
	SIM_TEV_COUNT
};

/* Category of each event, as compile-time constants for the enabled test. */
enum {
#define TRACE_CAT(c, doc)
#define TRACE_EV(c, n, doc) SIM_TEVCAT_##c##_##n = SIM_TCAT_##c,
#include "sim/trace.def"
#undef TRACE_CAT
#undef TRACE_EV
};

extern uint64_t sim_trace_mask; /* bit per enabled category */

/* Enable categories from a comma list ("*" = all, "" = none). -EINVAL names the unknown
 * category through sim_error(). */
int sim_trace_select(const char *cats);
/* Send trace output to path (NULL or "" = stderr). */
int sim_trace_open(const char *path);
void sim_trace_close(void);
/* Tell the tracer a device's core clock so its lines carry cyc=. */
void sim_trace_set_dev_clock(int dev, uint64_t period_ps);
/* The simulator's own sink (the wave writer): like hcasim_trace_observe() but separate from
 * it and given the event number; it reads, never changes the simulation. fn NULL removes it. */
typedef void (*sim_trace_sink)(void *arg, uint64_t t_ps, int dev, int ev, const char *fields);
int sim_trace_internal(const char *categories, sim_trace_sink fn, void *arg);
const char *sim_trace_cat_name(int cat);
const char *sim_trace_ev_name(int ev);

void sim_trace_emit(int ev, int dev, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define SIM_TRACE_ON(c) (sim_trace_mask & (1ull << SIM_TCAT_##c))
/* SIM_TRACE(cat, name, dev, "key=%d ...", ...); dev < 0 for events outside a device. */
#define SIM_TRACE(c, n, dev, ...)                                                                  \
	do {                                                                                       \
		if (sim_trace_mask & (1ull << SIM_TEVCAT_##c##_##n))                               \
			sim_trace_emit(SIM_TEV_##c##_##n, (dev), __VA_ARGS__);                     \
	} while (0)

#endif
