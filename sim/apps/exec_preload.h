/* libhcasim-exec.so, the library hcasim-exec preloads into the program it runs
 * (docs/fabric.md#hcasim-exec): the program's clocks, TSC, pid and /proc/cpuinfo come from the
 * simulated host, so that its runs repeat. exec_clock.c serves the time and the pid,
 * exec_trap.c traps rdtsc and serves /proc/cpuinfo. */
#ifndef SIM_APPS_EXEC_PRELOAD_H
#define SIM_APPS_EXEC_PRELOAD_H

#include <stdbool.h>
#include <stdint.h>

/* The configuration, read once at load (exec.* keys). */
struct exec_cfg {
	uint64_t read_ps; /* exec.clock_read_ns: what one read of a clock costs */
	uint64_t tsc_mhz; /* exec.tsc_mhz */
	uint64_t epoch_s; /* exec.epoch_s: CLOCK_REALTIME at served time 0 */
	int pid;          /* what getpid() returns: 1000 + the first host held */
};
extern struct exec_cfg exec_cfg;

/* The program's time in ps: charges one read and returns the time it is served at. Called
 * from inside the simulation (a trace observer reading the clock), it returns the last time
 * served and charges nothing. */
uint64_t exec_now_ps(void);
/* Whether code at address pc belongs to hcasim (libhcasim, its libibverbs, this library):
 * its reads of the clock, the TSC and the pid are the machine's own. */
bool exec_own_code(const void *pc);
/* Whether pc lies in a sanitizer's runtime (libasan, libubsan), preloaded ahead of this library
 * in a sanitized build: its interceptors stand between a caller and these functions. */
bool exec_sanitizer_code(const void *pc);
/* The caller of the sanitizer's function that called the interposed function which calls
 * this: found by unwinding (the runtime does not always keep frame pointers); the address of
 * exec_own_code when that is in the runtime too. */
const void *exec_sanitizer_caller(void);
/* The code that called the interposed function: the return address; in a sanitized build,
 * when that is in the sanitizer's runtime, the caller of the runtime's function: the program
 * or hcasim behind an interceptor, or, when the runtime reads the clock for itself (its
 * allocator does), the runtime, which counts as hcasim's own code. */
#ifdef __SANITIZE_ADDRESS__
#define EXEC_CALLER()                                                                     \
	({                                                                                \
		const void *ra_ = __builtin_return_address(0);                            \
		exec_sanitizer_code(ra_) ? exec_sanitizer_caller() : ra_;                 \
	})
#else
#define EXEC_CALLER() __builtin_return_address(0)
#endif
/* Whether pc lies in the vDSO, whose clock functions read the real TSC. */
bool exec_vdso_code(const void *pc);
/* Start trapping rdtsc (exec_trap.c); a message and -1 on failure. */
int exec_trap_start(void);
/* The real clock (a system call: the vDSO would read the trapped TSC). */
int exec_real_clock(int id, void *ts);

#endif
