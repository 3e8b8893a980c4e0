/* libhcasim-exec.so: the TSC and /proc/cpuinfo (docs/fabric.md#hcasim-exec). rdtsc and rdtscp
 * fault (prctl PR_SET_TSC, PR_TSC_SIGSEGV); the SIGSEGV handler serves the simulated time at
 * exec.tsc_mhz and steps over the instruction. The program's own SIGSEGV handler is kept aside
 * and called for every other fault. /proc/cpuinfo reads as the machine's with every "cpu MHz"
 * line saying exec.tsc_mhz, so that a program calibrating the TSC against it agrees. */
#include "sim/apps/exec_preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* What the program asked for SIGSEGV once the trap is set (what it had then, at first). */
static struct sigaction app_segv;
static bool trapping;

/* The C library's functions, found at their first use: a sanitizer's runtime, preloaded
 * ahead of this library, calls sigaction before this library's constructor has run. */
static void *libc(void **f, const char *name)
{
	if (!*f && !(*f = dlsym(RTLD_NEXT, name))) {
		fprintf(stderr, "libhcasim-exec: the C library's %s is not found\n", name);
		abort();
	}
	return *f;
}

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	static void *f;

	return ((int (*)(int, const struct sigaction *, struct sigaction *))libc(&f, "sigaction"))(
		sig, act, old);
}

/* The real TSC, for the vDSO's clocks and hcasim's own code: untrapped for one read. */
static uint64_t real_tsc(bool rdtscp, uint32_t *aux)
{
	uint32_t lo, hi, c = 0;

	prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0);
	if (rdtscp)
		__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(c));
	else
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
	*aux = c;
	return (uint64_t)hi << 32 | lo;
}

/* The length of the instruction at ip if it is rdtsc (0F 31) or rdtscp (0F 01 F9), else 0. */
static int tsc_insn(const uint8_t *ip)
{
	if (ip[0] != 0x0f)
		return 0;
	if (ip[1] == 0x31)
		return 2;
	return ip[1] == 0x01 && ip[2] == 0xf9 ? 3 : 0;
}

/* A fault that is no TSC read goes to the program's handler; without one, the process dies of
 * it as it would have: the default action, the instruction faulting again (or the signal
 * raised again when it was sent, not caused). */
static void chain(int sig, siginfo_t *si, void *ctx)
{
	struct sigaction a = app_segv;
	sigset_t old;

	if (a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		real_sigaction(sig, &dfl, NULL);
		if (si->si_code <= 0)
			raise(sig);
		return;
	}
	if (a.sa_flags & SA_RESETHAND)
		app_segv.sa_handler = SIG_DFL;
	sigprocmask(SIG_BLOCK, &a.sa_mask, &old);
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, ctx);
	else
		a.sa_handler(sig);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	greg_t *g = ((ucontext_t *)ctx)->uc_mcontext.gregs;
	const uint8_t *ip = (const uint8_t *)g[REG_RIP];
	/* A TSC read the CPU refused is a general protection fault (SI_KERNEL): only then is
	 * the faulting instruction there to read. */
	int len = si->si_code == SI_KERNEL ? tsc_insn(ip) : 0, saved = errno;
	uint32_t aux = 0;
	uint64_t tsc;

	if (!len) {
		chain(sig, si, ctx);
		errno = saved;
		return;
	}
	if (exec_vdso_code(ip) || exec_own_code(ip))
		tsc = real_tsc(len == 3, &aux);
	else
		tsc = (uint64_t)((unsigned __int128)exec_now_ps() * exec_cfg.tsc_mhz / 1000000u);
	g[REG_RAX] = (greg_t)(uint32_t)tsc;
	g[REG_RDX] = (greg_t)(tsc >> 32);
	if (len == 3)
		g[REG_RCX] = (greg_t)aux; /* TSC_AUX: the simulated host has one CPU, 0 */
	g[REG_RIP] += len;
	errno = saved;
}

static void app_disposition(const struct sigaction *act, struct sigaction *old)
{
	if (old)
		*old = app_segv;
	if (act)
		app_segv = *act;
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig != SIGSEGV || !trapping || exec_own_code(EXEC_CALLER()))
		return real_sigaction(sig, act, old);
	app_disposition(act, old);
	return 0;
}

sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction a = { .sa_handler = handler, .sa_flags = SA_RESTART }, old;
	static void *f;

	if (sig != SIGSEGV || !trapping)
		return ((sighandler_t(*)(int, sighandler_t))libc(&f, "signal"))(sig, handler);
	if (handler == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	app_disposition(&a, &old);
	return old.sa_handler;
}

int exec_trap_start(void)
{
	struct sigaction a = { .sa_sigaction = on_segv,
			       .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART };

	sigemptyset(&a.sa_mask);
	if (real_sigaction(SIGSEGV, &a, &app_segv) ||
	    prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0)) {
		fprintf(stderr, "libhcasim-exec: cannot trap the TSC (prctl PR_SET_TSC, "
			"PR_TSC_SIGSEGV): %s\n", strerror(errno));
		return -1;
	}
	trapping = true;
	return 0;
}

/* ---- /proc/cpuinfo ---- */

static bool is_cpuinfo(const char *path)
{
	return path && !strcmp(path, "/proc/cpuinfo");
}

/* The machine's /proc/cpuinfo with every cpu MHz line saying exec.tsc_mhz (one added if it has
 * none), in a memory file read from its start. */
static int cpuinfo_fd(int flags)
{
	int in = (int)syscall(SYS_openat, AT_FDCWD, "/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
	int out = memfd_create("cpuinfo", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0), mhz = 0;
	FILE *r = in >= 0 ? fdopen(in, "r") : NULL;
	char *line = NULL;
	size_t cap = 0;

	if (!r || out < 0) {
		int e = errno;

		if (r)
			fclose(r);
		else if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
		errno = e;
		return -1;
	}
	while (getline(&line, &cap, r) > 0) {
		if (strncmp(line, "cpu MHz", 7))
			dprintf(out, "%s", line);
		else
			mhz = dprintf(out, "cpu MHz\t\t: %llu.000\n", (unsigned long long)exec_cfg.tsc_mhz);
	}
	if (!mhz)
		dprintf(out, "cpu MHz\t\t: %llu.000\n", (unsigned long long)exec_cfg.tsc_mhz);
	free(line);
	fclose(r);
	lseek(out, 0, SEEK_SET);
	return out;
}

static int open_at(int dir, const char *path, int flags, va_list ap)
{
	bool has_mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
	mode_t mode = has_mode ? (mode_t)va_arg(ap, unsigned) : 0;

	if (is_cpuinfo(path) && (flags & O_ACCMODE) == O_RDONLY)
		return cpuinfo_fd(flags);
	return (int)syscall(SYS_openat, dir, path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	int fd;

	va_start(ap, flags);
	fd = open_at(AT_FDCWD, path, flags, ap);
	va_end(ap);
	return fd;
}

int openat(int dir, const char *path, int flags, ...)
{
	va_list ap;
	int fd;

	va_start(ap, flags);
	fd = open_at(dir, path, flags, ap);
	va_end(ap);
	return fd;
}

/* The 64-bit names are the same calls on x86-64; the _2 forms are what _FORTIFY_SOURCE
 * compiles open(path, flags) into. */
int open64(const char *path, int flags, ...) __attribute__((alias("open")));
int openat64(int dir, const char *path, int flags, ...) __attribute__((alias("openat")));

int __open_2(const char *path, int flags)
{
	return open(path, flags);
}

int __open64_2(const char *path, int flags) __attribute__((alias("__open_2")));

int __openat_2(int dir, const char *path, int flags)
{
	return openat(dir, path, flags);
}

int __openat64_2(int dir, const char *path, int flags) __attribute__((alias("__openat_2")));

FILE *fopen(const char *path, const char *mode)
{
	static void *real;
	int fd;
	FILE *f;

	if (!is_cpuinfo(path) || !mode || mode[0] != 'r' || strchr(mode, '+'))
		return ((FILE * (*)(const char *, const char *)) libc(&real, "fopen"))(path, mode);
	fd = cpuinfo_fd(strchr(mode, 'e') ? O_CLOEXEC : 0);
	if (fd < 0)
		return NULL;
	if (!(f = fdopen(fd, mode)))
		close(fd);
	return f;
}

FILE *fopen64(const char *path, const char *mode) __attribute__((alias("fopen")));
