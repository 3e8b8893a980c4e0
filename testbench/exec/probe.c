/* exec-probe: what a program sees of time, the TSC, its pid and its addresses; run by suite
 * `exec` (testbench/test_exec.c) under hcasim-exec. An ordinary program: it knows nothing of
 * the interposer, it reads the clocks as any program does.
 *
 *   exec-probe clocks     one read of every clock, in a fixed order, then the pid, the
 *                         addresses and the cpu MHz that /proc/cpuinfo shows (fopen and open)
 *   exec-probe boot       a read before ibv_get_device_list, then reads each followed by
 *                         hcasim_now_ps()
 *   exec-probe calibrate  the TSC's rate measured against gettimeofday (least squares over
 *                         intervals of 100 us and more, as perftest calibrates) and /proc/cpuinfo's
 *   exec-probe segv       its own SIGSEGV handler catches a fault; the TSC still reads after
 *   exec-probe die        a fault without a handler
 *   exec-probe machine    a thread's TSC read between two of the main thread's clock reads;
 *                         the C library's own clock (ftime reads it through the vDSO) against
 *                         the kernel's (a system call), in seconds */
#include "sim/hcasim.h"

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <sys/timeb.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static long long ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double mhz_in(FILE *f)
{
	char line[512];
	double m = 0;

	while (f && fgets(line, sizeof(line), f) && sscanf(line, "cpu MHz : %lf", &m) != 1)
		;
	if (f)
		fclose(f);
	return m;
}

static int clocks(void)
{
	long long v[6];
	struct timeval tv;
	unsigned long long tsc[3];
	unsigned aux = 99;
	time_t t;
	int local, fd;
	void *heap = malloc(64), *map = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	v[0] = ns(CLOCK_MONOTONIC);
	v[1] = ns(CLOCK_MONOTONIC);
	v[2] = ns(CLOCK_MONOTONIC_RAW);
	v[3] = ns(CLOCK_MONOTONIC_COARSE);
	v[4] = ns(CLOCK_BOOTTIME);
	v[5] = ns(CLOCK_REALTIME);
	gettimeofday(&tv, NULL);
	t = time(NULL);
	tsc[0] = __rdtsc();
	tsc[1] = __rdtsc();
	tsc[2] = __rdtscp(&aux);
	printf("clocks %lld %lld %lld %lld %lld %lld\n", v[0], v[1], v[2], v[3], v[4], v[5]);
	printf("tod %lld time %lld\n", (long long)tv.tv_sec * 1000000 + tv.tv_usec, (long long)t);
	printf("tsc %llu %llu %llu aux %u\n", tsc[0], tsc[1], tsc[2], aux);
	printf("pid %d\n", (int)getpid());
	printf("aslr %d stack %p heap %p mmap %p text %p\n",
	       !!(personality(0xffffffff) & ADDR_NO_RANDOMIZE), (void *)&local, heap, map,
	       (void *)clocks);
	fd = open("/proc/cpuinfo", O_RDONLY);
	printf("cpuinfo fopen %.3f open %.3f\n", mhz_in(fopen("/proc/cpuinfo", "r")),
	       mhz_in(fd >= 0 ? fdopen(fd, "r") : NULL));
	free(heap);
	return 0;
}

static int boot(void)
{
	long long pre = ns(CLOCK_MONOTONIC);
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);

	printf("pre %lld devices %d %s\n", pre, n, n > 0 ? ibv_get_device_name(list[0]) : "-");
	for (int i = 0; i < 3; i++) {
		long long t = ns(CLOCK_MONOTONIC);
		unsigned long long tsc = __rdtsc();

		printf("post %lld tsc %llu now %llu\n", t, tsc, (unsigned long long)hcasim_now_ps());
	}
	if (list)
		ibv_free_device_list(list);
	return n > 0 ? 0 : 1;
}

static double us_between(const struct timeval *a, const struct timeval *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e6 + (double)(b->tv_usec - a->tv_usec);
}

/* Cycles per microsecond by least squares over 50 intervals of 100 + 10 i us, each measured
 * with gettimeofday and the TSC; r2 says how well a line fits. */
static int calibrate(void)
{
	enum { N = 50 };
	double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, b, r2;

	for (int i = 0; i < N; i++) {
		struct timeval t1, t2;
		unsigned long long c = __rdtsc();
		double x, y;

		gettimeofday(&t1, NULL);
		do
			gettimeofday(&t2, NULL);
		while (us_between(&t1, &t2) < 100 + 10 * i);
		x = us_between(&t1, &t2);
		y = (double)(__rdtsc() - c);
		sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y;
	}
	b = (N * sxy - sx * sy) / (N * sxx - sx * sx);
	r2 = (N * sxy - sx * sy) * (N * sxy - sx * sy) / (N * sxx - sx * sx) / (N * syy - sy * sy);
	printf("sample %.3f r2 %.6f proc %.3f\n", b, r2, mhz_in(fopen("/proc/cpuinfo", "r")));
	return 0;
}

static sigjmp_buf back;
static volatile int caught;

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	(void)si;
	(void)ctx;
	caught += sig == SIGSEGV;
	siglongjmp(back, 1);
}

static int segv(void)
{
	struct sigaction a = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO }, old;
	/* A page nothing may touch (a sanitizer would stop a store through NULL first). */
	volatile int *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned long long t0 = __rdtsc();

	sigemptyset(&a.sa_mask);
	sigaction(SIGSEGV, &a, &old);
	printf("old %s\n", old.sa_handler == SIG_DFL ? "default" : "other");
	for (int i = 0; i < 2; i++)
		if (!sigsetjmp(back, 1))
			*none = i;
	printf("caught %d tsc %s\n", caught, __rdtsc() > t0 ? "advancing" : "stuck");
	return 0;
}

static void *thread_tsc(void *out)
{
	*(unsigned long long *)out = __rdtsc();
	return NULL;
}

static int machine(void)
{
	unsigned long long tsc = 0;
	struct timespec k;
	struct timeb tb;
	pthread_t t;
	long long a = ns(CLOCK_MONOTONIC), b;

	pthread_create(&t, NULL, thread_tsc, &tsc);
	pthread_join(t, NULL);
	b = ns(CLOCK_MONOTONIC);
	printf("thread %lld %llu %lld\n", a, tsc, b);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	ftime(&tb);
#pragma GCC diagnostic pop
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &k);
	printf("libc %lld kernel %lld\n", (long long)tb.time, (long long)k.tv_sec);
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(m, "clocks"))
		return clocks();
	if (!strcmp(m, "boot"))
		return boot();
	if (!strcmp(m, "calibrate"))
		return calibrate();
	if (!strcmp(m, "segv"))
		return segv();
	if (!strcmp(m, "machine"))
		return machine();
	if (!strcmp(m, "die")) {
		volatile int *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		return *none;
	}
	fprintf(stderr, "usage: exec-probe clocks|boot|calibrate|segv|die|machine\n");
	return 2;
}
