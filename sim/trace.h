/* Tracing: one `t=<ps> [dev=<n> cyc=<cycle>] cat.name key=value ...` line per event.
 * Events are declared once in sim/trace.def; categories are chosen with HCASIM_TRACE=cat,cat
 * (or "*"), output goes to HCASIM_TRACE_FILE or stderr. A disabled event costs one bit test. */
#ifndef SIM_TRACE_H
#define SIM_TRACE_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The event table. Only testbench/test_kernel.c names another one, to show that a declared
 * format that does not match its argument types does not build. */
#ifndef SIM_TRACE_DEF
#define SIM_TRACE_DEF "sim/trace.def"
#endif

enum sim_trace_cat {
#define TRACE_CAT(c, doc) SIM_TCAT_##c,
#define TRACE_EV(c, n, doc, params, args, fmt)
#include SIM_TRACE_DEF
#undef TRACE_CAT
#undef TRACE_EV
	SIM_TCAT_COUNT
};

enum sim_trace_ev {
#define TRACE_CAT(c, doc)
#define TRACE_EV(c, n, doc, params, args, fmt) SIM_TEV_##c##_##n,
#include SIM_TRACE_DEF
#undef TRACE_CAT
#undef TRACE_EV
	SIM_TEV_COUNT
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

/* The generated emitters' back end: formats the declared format with the values. Not for call
 * sites: they call trace_<category>_<name>(). */
void sim_trace_emit(int ev, int dev, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* True if category c is traced anywhere (file, observer or sink): for work done only to trace. */
#define SIM_TRACE_ON(c) (sim_trace_mask & (1ull << SIM_TCAT_##c))

/* One emitter per event: trace_<cat>_<name>(dev, declared arguments...); dev < 0 for events
 * outside a device. The format is the one sim/trace.def declares, checked by the compiler
 * against the declared argument types; a disabled category costs one bit test. */
#define SIM_TRACE_UNPAREN_(...) __VA_ARGS__
#define TRACE_CAT(c, doc)
#define TRACE_EV(c, n, doc, params, args, fmt)                                                     \
	static inline void trace_##c##_##n(int dev, SIM_TRACE_UNPAREN_ params)                     \
	{                                                                                          \
		if (sim_trace_mask & (1ull << SIM_TCAT_##c))                                       \
			sim_trace_emit(SIM_TEV_##c##_##n, dev, fmt, SIM_TRACE_UNPAREN_ args);      \
	}
#include SIM_TRACE_DEF
#undef TRACE_CAT
#undef TRACE_EV

#endif
