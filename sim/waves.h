/* Waves: a VCD writer for the model's own signals, in simulated time (timescale 1 ps).
 *
 * Signals are declared at any time (a QP's signals when it first appears) under a dotted
 * hierarchy name ("hca0.qp2.sq_psn"); a VCD must declare every variable before its first value
 * change, so the value changes go to a scratch file while the simulation runs and the file is
 * written at sim_waves_close(): header with every scope and variable, $dumpvars (all x), then
 * the changes. Values can be set for the present or the future (a block's output valid a few
 * cycles on, a strobe's fall): future changes wait in a queue and are written in time order as
 * the simulation reaches them, so time in the file never goes backwards. The writer only reads
 * what it is given; it never schedules kernel events, so the simulation is the same with and
 * without waves. docs/waves.md. */
#ifndef SIM_WAVES_H
#define SIM_WAVES_H

#include "sim/kernel.h"

#include <stdbool.h>
#include <stdint.h>

struct sim_wsig; /* one variable */

extern bool sim_waves_on; /* a dump is open */

/* Start a dump to path (replacing an open one, which is closed first). -errno naming the
 * path if it cannot be created. */
int sim_waves_open(const char *path);
/* Write the file (flushing every queued change) and stop. 0, or -errno naming the path. */
int sim_waves_close(void);
const char *sim_waves_path(void); /* the open dump, or NULL */
/* Where WAVES=1 puts the dumps (the VCD and the RTL blocks' FSTs, model/system.c):
 * HCASIM_WAVES_DIR, else WAVES_DIR (the older name), else build/waves. */
const char *sim_waves_env_dir(void);
/* The variable that dir came from ("HCASIM_WAVES_DIR" or "WAVES_DIR"), or NULL (the default). */
const char *sim_waves_env_dir_var(void);

/* The variable called name (dotted: scopes then the signal), width 1..64 bits; created on
 * first use, the same handle afterwards (the width of the first call stays). NULL when no
 * dump is open or name is malformed. */
struct sim_wsig *sim_waves_signal(const char *name, unsigned width);
/* The variable's value from time t on (t earlier than the present counts as the present). */
void sim_waves_set(struct sim_wsig *s, sim_time_t t, uint64_t v);
/* A strobe: 1 from t for width_ps (a later strobe before it falls extends it), then 0. */
void sim_waves_strobe(struct sim_wsig *s, sim_time_t t, sim_time_t width_ps);
/* The simulation reached now: write every queued change at or before it. */
void sim_waves_advance(sim_time_t now);

#endif
