/* libhcasim-exec.so: the program's clocks and pid, served from the simulated host
 * (docs/fabric.md#hcasim-exec). Loaded with LD_PRELOAD by hcasim-exec, so these definitions
 * come before the C library's; calls made by hcasim's own code (the simulator's wall-clock
 * waits, its channel claims by pid) still get the machine's, by the caller's address. */
#include "sim/apps/exec_preload.h"
#include "sim/hcasim.h"
#include "sim/hcasim_bus.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

struct exec_cfg exec_cfg;

/* Where hcasim's code and the vDSO lie, found once at load. A library loaded later with
 * dlopen is not among them (docs/fabric.md#hcasim-exec). */
#define MAX_OWN 8
struct range {
	uintptr_t lo, hi;
};
static struct range own[MAX_OWN], san[2], vdso;
static int nown, nsan;

/* The served clock. Before the first boot (and between boots) only the reads move it, by
 * exec.clock_read_ns each; while the system is booted it is off_ps + the simulated time, off_ps
 * being the time served last before the program first read the clock in this boot, and each
 * read charges its cost to the host (hcasim_host_advance). So it never goes back. */
static struct {
	atomic_flag lock;
	uint64_t last_ps, off_ps;
	uint64_t gen; /* hcasim_bus_generation() that off_ps belongs to */
} clk = { .lock = ATOMIC_FLAG_INIT };
/* Set while this thread serves a read: a read from inside the simulation (a trace observer)
 * gets the last time served, and nothing re-enters the simulator. */
static __thread int serving __attribute__((tls_model("initial-exec")));

uint64_t exec_now_ps(void)
{
	uint64_t t;

	if (serving)
		return clk.last_ps;
	serving = 1;
	while (atomic_flag_test_and_set_explicit(&clk.lock, memory_order_acquire))
		;
	t = clk.last_ps + exec_cfg.read_ps;
	if (hcasim_booted()) {
		uint64_t gen = hcasim_bus_generation(), now;

		if (gen != clk.gen) {
			clk.gen = gen;
			clk.off_ps = clk.last_ps;
		}
		/* One turn of the simulation (the device thread runs none between). */
		hcasim_bus_hold();
		hcasim_host_advance(exec_cfg.read_ps);
		now = hcasim_now_ps();
		hcasim_bus_release();
		/* A halted simulation does not move: the reads still do. */
		if (clk.off_ps + now > t)
			t = clk.off_ps + now;
	}
	clk.last_ps = t;
	atomic_flag_clear_explicit(&clk.lock, memory_order_release);
	serving = 0;
	return t;
}

static bool in_range(const struct range *r, const void *pc)
{
	return (uintptr_t)pc >= r->lo && (uintptr_t)pc < r->hi;
}

bool exec_own_code(const void *pc)
{
	for (int i = 0; i < nown; i++)
		if (in_range(&own[i], pc))
			return true;
	return false;
}

bool exec_sanitizer_code(const void *pc)
{
	for (int i = 0; i < nsan; i++)
		if (in_range(&san[i], pc))
			return true;
	return false;
}

struct walk {
	int n;
	const void *pc[4];
};

static _Unwind_Reason_Code walk_step(struct _Unwind_Context *c, void *arg)
{
	struct walk *w = arg;

	w->pc[w->n++] = (const void *)_Unwind_GetIP(c);
	return w->n == 4 ? _URC_END_OF_STACK : _URC_NO_REASON;
}

/* Frames: this function, the interposed one, the runtime's function, its caller. */
__attribute__((noinline)) const void *exec_sanitizer_caller(void)
{
	struct walk w = { 0 };

	_Unwind_Backtrace(walk_step, &w);
	if (w.n < 4 || exec_sanitizer_code(w.pc[3]))
		return (const void *)exec_own_code;
	return w.pc[3];
}

bool exec_vdso_code(const void *pc)
{
	return in_range(&vdso, pc);
}

int exec_real_clock(int id, void *ts)
{
	return (int)syscall(SYS_clock_gettime, id, ts);
}

/* 1: a wall clock (REALTIME: the epoch + the served time); 0: a clock since boot (the served
 * time); -1: a CPU-time or other clock, left real. */
static int clock_kind(clockid_t id)
{
	switch (id) {
	case CLOCK_REALTIME:
	case CLOCK_REALTIME_COARSE:
	case CLOCK_REALTIME_ALARM:
	case CLOCK_TAI:
		return 1;
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_RAW:
	case CLOCK_MONOTONIC_COARSE:
	case CLOCK_BOOTTIME:
	case CLOCK_BOOTTIME_ALARM:
		return 0;
	default:
		return -1;
	}
}

static void served(int kind, struct timespec *ts)
{
	uint64_t ns = exec_now_ps() / 1000;

	ts->tv_sec = (time_t)((kind ? exec_cfg.epoch_s : 0) + ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int kind = clock_kind(id);

	if (kind < 0 || exec_own_code(EXEC_CALLER()))
		return exec_real_clock(id, ts);
	served(kind, ts);
	return 0;
}

static int timeofday(struct timeval *tv, struct timezone *tz)
{
	struct timespec ts;

	if (tz)
		tz->tz_minuteswest = tz->tz_dsttime = 0;
	if (!tv)
		return 0;
	served(1, &ts);
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	if (exec_own_code(EXEC_CALLER()))
		return (int)syscall(SYS_gettimeofday, tv, tz);
	return timeofday(tv, tz);
}

time_t time(time_t *t)
{
	struct timespec ts;

	if (exec_own_code(EXEC_CALLER()))
		exec_real_clock(CLOCK_REALTIME, &ts);
	else
		served(1, &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}

int timespec_get(struct timespec *ts, int base)
{
	if (base != TIME_UTC)
		return 0;
	if (exec_own_code(EXEC_CALLER()))
		exec_real_clock(CLOCK_REALTIME, ts);
	else
		served(1, ts);
	return base;
}

pid_t getpid(void)
{
	/* (Before the library's constructor, as in a sanitizer's start-up, the real one.) */
	if (!exec_cfg.pid || exec_own_code(EXEC_CALLER()))
		return (pid_t)syscall(SYS_getpid);
	return exec_cfg.pid;
}

/* dl_iterate_phdr: note the extent of hcasim's objects and of the vDSO. */
static int note_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *name = strrchr(info->dlpi_name, '/');
	uintptr_t ehdr = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	struct range r = { UINTPTR_MAX, 0 };

	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + p->p_vaddr < r.lo)
			r.lo = info->dlpi_addr + p->p_vaddr;
		if (info->dlpi_addr + p->p_vaddr + p->p_memsz > r.hi)
			r.hi = info->dlpi_addr + p->p_vaddr + p->p_memsz;
	}
	name = name ? name + 1 : info->dlpi_name;
	if (ehdr && in_range(&r, (const void *)ehdr))
		vdso = r;
	else if (nown < MAX_OWN && (!strcmp(name, "libhcasim.so.0") ||
				    !strcmp(name, "libibverbs.so.1") ||
				    !strcmp(name, "libhcasim-exec.so")))
		own[nown++] = r;
	else if (nsan < 2 && (!strncmp(name, "libasan.so", 10) || !strncmp(name, "libubsan.so", 11)))
		san[nsan++] = r;
	return 0;
}

static uint64_t cfg_u64(const char *key)
{
	char v[64];

	if (hcasim_config_get(key, v, sizeof(v))) {
		fprintf(stderr, "libhcasim-exec: %s\n", hcasim_last_error());
		_exit(2);
	}
	return strtoull(v, NULL, 10);
}

__attribute__((constructor)) static void exec_load(void)
{
	const char *host = getenv("HCASIM_HOST");

	exec_cfg.read_ps = cfg_u64("exec.clock_read_ns") * 1000;
	exec_cfg.tsc_mhz = cfg_u64("exec.tsc_mhz");
	exec_cfg.epoch_s = cfg_u64("exec.epoch_s");
	exec_cfg.pid = 1000 + (host ? atoi(host) : 0);
	dl_iterate_phdr(note_object, NULL);
	if (exec_trap_start())
		_exit(2);
}
