/* exec: build/bin/hcasim-exec runs an unmodified program (build/test/exec-probe,
 * testbench/exec/probe.c, and Debian's ibv_devinfo) as a host of a fabric. Its clocks and TSC
 * read the simulated host's time, each read costing exec.clock_read_ns, the same in every run;
 * /proc/cpuinfo shows the TSC's rate, so a perftest-style calibration agrees with it; getpid is
 * 1000 + the host; addresses repeat (no ASLR); the program's own SIGSEGV handler still gets its
 * faults; and bad arguments are refused naming them (docs/fabric.md#hcasim-exec). */
#include "tb.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXEC HCASIM_BUILD_DIR "/bin/hcasim-exec"
#define PROBE HCASIM_BUILD_DIR "/test/exec-probe"

static char dir[] = "/tmp/hcasim-exec-XXXXXX";

static void ex_setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void ex_teardown(void)
{
	tb_rm_tmpdir(dir);
}

/* Run `hcasim-exec --fabric DIR/<fabric> ARGS` with the configuration file cfg (NULL: none)
 * and stderr joined to stdout; the output (malloc'd) and the exit status. */
static char *run(const char *cfg, const char *fabric, const char *args, int *status)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "unset HCASIM_CONFIG HCASIM_FABRIC HCASIM_HOST HCASIM_TRACE HCASIM_PCAP; "
		 "%s%s%s %s %s --fabric %s/%s %s 2>&1", cfg ? "HCASIM_CONFIG=" : "",
		 cfg ? cfg : "", cfg ? "" : "", tb_san_env(), EXEC, dir, fabric, args);
	return tb_run_cmd(cmd, status);
}

/* The same in a fabric directory of its own (fresh for each run: a booted host leaves its
 * channel file behind, and the next run says it replaced it). */
static char *run_ok(const char *cfg, const char *args)
{
	static int runs;
	char fab[32];
	int st;
	char *out;

	snprintf(fab, sizeof(fab), "fab%d", runs++);
	out = run(cfg, fab, args, &st);

	cr_assert_eq(st, 0, "hcasim-exec %s: status %d\n%s", args, st, out);
	return out;
}

/* The k-th read of a clock (1-based) before the boot is served at k x cost: the reads of
 * `exec-probe clocks`, in its order, with cost, the TSC's MHz and the epoch given. */
static void expect_clocks(const char *out, uint64_t cost, uint64_t mhz, uint64_t epoch)
{
	long long v[6], tod, t, tsc[3];
	unsigned aux;
	double fo, op;
	const char *c = strstr(out, "clocks ");

	cr_assert_not_null(c, "%s", out);
	cr_assert_eq(sscanf(c, "clocks %lld %lld %lld %lld %lld %lld\ntod %lld time %lld\n"
			    "tsc %lld %lld %lld aux %u", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			    &tod, &t, &tsc[0], &tsc[1], &tsc[2], &aux), 12, "%s", out);
	for (int k = 0; k < 5; k++) /* MONOTONIC twice, MONOTONIC_RAW, _COARSE, BOOTTIME */
		cr_expect_eq(v[k], (long long)((k + 1) * cost), "read %d: %lld", k + 1, v[k]);
	cr_expect_eq(v[5], (long long)(epoch * 1000000000 + 6 * cost), "REALTIME %lld", v[5]);
	cr_expect_eq(tod, (long long)(epoch * 1000000 + 7 * cost / 1000), "gettimeofday %lld", tod);
	cr_expect_eq(t, (long long)(epoch + 8 * cost / 1000000000), "time %lld", t);
	for (int k = 0; k < 3; k++) /* rdtsc twice, rdtscp: ns x MHz / 1000 */
		cr_expect_eq(tsc[k], (long long)((9 + k) * cost * mhz / 1000), "TSC read %d: %lld",
			     k + 1, tsc[k]);
	cr_expect_eq(aux, 0u);
	c = strstr(out, "cpuinfo ");
	cr_assert(c && sscanf(c, "cpuinfo fopen %lf open %lf", &fo, &op) == 2, "%s", out);
	cr_expect(fo == (double)mhz && op == (double)mhz, "cpu MHz %.3f (fopen) %.3f (open)", fo, op);
}

Test(exec, clocks_and_the_tsc_read_simulated_time_each_read_costing_the_configured_time,
     .init = ex_setup, .fini = ex_teardown)
{
	char *a = run_ok(NULL, "--host 0 " PROBE " clocks"), *b, cfg[600];
	FILE *f;

	expect_clocks(a, 20, 2000, 1767225600); /* the defaults */
	b = run_ok(NULL, "--host 0 " PROBE " clocks");
	cr_expect_str_eq(a, b, "two runs differ");
	free(b);
	/* A program started by the program (a shell running it) gets the same view. */
	b = run_ok(NULL, "--host 0 sh -c '" PROBE " clocks'");
	cr_expect_str_eq(a, b, "under a shell:\n%s", b);
	free(a);
	free(b);
	snprintf(cfg, sizeof(cfg), "%s/exec.ini", dir);
	cr_assert_not_null(f = fopen(cfg, "w"));
	fprintf(f, "[exec]\nclock_read_ns = 7\ntsc_mhz = 3000\nepoch_s = 1000000000\n");
	fclose(f);
	a = run_ok(cfg, "--host 0 " PROBE " clocks");
	expect_clocks(a, 7, 3000, 1000000000);
	free(a);
}

Test(exec, getpid_is_the_host_number_plus_1000_and_addresses_repeat_without_aslr,
     .init = ex_setup, .fini = ex_teardown)
{
	char *a = run_ok(NULL, "--host 1 " PROBE " clocks"), *b = run_ok(NULL, "--host 1 " PROBE
									" clocks");
	char *c = run_ok(NULL, "--host 0 " PROBE " clocks"), *s, *d1, *d2, *rnd;
	int st;

	cr_expect(strstr(a, "\npid 1001\n"), "%s", a);
	cr_expect(strstr(c, "\npid 1000\n"), "%s", c);
	s = strstr(a, "aslr 1 stack 0x");
	cr_assert_not_null(s, "randomisation not off:\n%s", a);
	cr_expect(!strncmp(s, strstr(b, "aslr "), strcspn(s, "\n")), "addresses differ:\n%s%s", a,
		  b);
	/* Without hcasim-exec (on a machine that randomises) the same addresses move. */
	d1 = tb_run_cmd(PROBE " clocks", &st);
	d2 = tb_run_cmd(PROBE " clocks", &st);
	s = strstr(d1, "aslr ");
	cr_assert_not_null(s, "%s", d1);
	rnd = tb_slurp("/proc/sys/kernel/randomize_va_space", NULL);
	if (s[5] == '0' && strstr(rnd, "2"))
		cr_expect(strncmp(s, strstr(d2, "aslr "), strcspn(s, "\n")),
			  "addresses repeat without hcasim-exec: %s", s);
	free(rnd);
	free(a);
	free(b);
	free(c);
	free(d1);
	free(d2);
}

Test(exec, after_the_boot_the_clocks_follow_the_simulated_host, .init = ex_setup,
     .fini = ex_teardown)
{
	char *a = run_ok(NULL, "--host 0 " PROBE " boot"), *b, *p;
	long long pre, post, prev = -1;
	unsigned long long tsc, now;
	char name[32];
	int n;

	cr_assert_eq(sscanf(a, "pre %lld devices %d %31s", &pre, &n, name), 3, "%s", a);
	cr_expect_eq(pre, 20, "the first read");
	cr_expect(n == 1 && !strcmp(name, "hcasim0"), "devices %d %s", n, name);
	/* Each read: the time served before the boot + the simulated time, the read charged to
	 * the host (the TSC read that follows adds its own 20 ns before now is printed). */
	for (p = a; (p = strstr(p, "post ")); p++) {
		cr_assert_eq(sscanf(p, "post %lld tsc %llu now %llu", &post, &tsc, &now), 3);
		cr_expect_eq(post, pre + (long long)(now / 1000) - 20, "%s", a);
		cr_expect_eq(tsc, ((unsigned long long)pre * 1000 + now) * 2 / 1000, "%s", a);
		cr_expect(prev < 0 || post - prev == 40, "%s", a);
		prev = post;
	}
	cr_expect(prev > 0, "%s", a);
	b = run_ok(NULL, "--host 0 " PROBE " boot");
	cr_expect_str_eq(a, b, "two runs differ");
	free(a);
	free(b);
}

Test(exec, the_tsc_calibrates_against_the_cpu_mhz_that_proc_cpuinfo_shows, .init = ex_setup,
     .fini = ex_teardown)
{
	char *a = run_ok(NULL, "--host 0 " PROBE " calibrate"), *b;
	double sample, r2, proc;

	cr_assert_eq(sscanf(a, "sample %lf r2 %lf proc %lf", &sample, &r2, &proc), 3, "%s", a);
	cr_expect(proc == 2000.0, "%s", a);
	cr_expect(r2 > 0.9 && sample > proc * 0.98 && sample < proc * 1.02,
		  "perftest would not take /proc/cpuinfo's rate: %s", a);
	b = run_ok(NULL, "--host 0 " PROBE " calibrate");
	cr_expect_str_eq(a, b, "two runs differ");
	free(a);
	free(b);
}

Test(exec, the_programs_own_sigsegv_handler_gets_every_other_fault, .init = ex_setup,
     .fini = ex_teardown)
{
	char *a = run_ok(NULL, "--host 0 " PROBE " segv"), *b, cmd[1024];
	int st;

	/* (A sanitizer's runtime has its handler there before the program.) */
	cr_expect(strstr(a, HCASIM_SAN ? "\ncaught 2 tsc advancing\n" :
			    "old default\ncaught 2 tsc advancing\n"), "%s", a);
	/* Without a handler, a fault kills the program as it would have (the shell's word on it
	 * is not shown). */
	snprintf(cmd, sizeof(cmd), "{ %s %s --fabric %s/fab --host 0 %s die; } 2>/dev/null; "
		 "echo status $?", tb_san_env(), EXEC, dir, PROBE);
	b = tb_run_cmd(cmd, &st);
	/* (A sanitizer's handler, there before the program's, reports it and exits with 1.) */
	cr_expect(strstr(b, HCASIM_SAN ? "status 1\n" : "status 139\n"), "%s", b);
	free(a);
	free(b);
}

Test(exec, threads_read_the_same_served_clock_and_the_c_librarys_own_clock_stays_real,
     .init = ex_setup, .fini = ex_teardown)
{
	char *a = run_ok(NULL, "--host 0 " PROBE " machine");
	long long m1, m2, libc, kernel;
	unsigned long long tsc;

	cr_assert_eq(sscanf(a, "thread %lld %llu %lld\nlibc %lld kernel %lld", &m1, &tsc, &m2, &libc,
			    &kernel), 5, "%s", a);
	/* Reads 1 and 3 in the main thread, read 2 (the TSC, 40 ns x 2000 MHz) in another. (A
	 * sanitizer's runtime reads the clock too when it starts a thread: then in that order.) */
	if (HCASIM_SAN)
		cr_expect(m1 == 20 && m1 < (long long)tsc / 2 && (long long)tsc / 2 < m2, "%s", a);
	else
		cr_expect(m1 == 20 && tsc == 80 && m2 == 60, "%s", a);
	/* ftime reads the time through the vDSO, whose rdtsc is trapped too: the real counter. */
	cr_expect(libc >= kernel - 2 && libc <= kernel, "%s", a);
	free(a);
}

Test(exec, an_unmodified_debian_program_sees_the_hca_of_its_host, .init = ex_setup,
     .fini = ex_teardown)
{
	char *a = run_ok(NULL, "--host 1 ibv_devinfo");

	cr_expect(strstr(a, "hca_id:\thcasim1") && !strstr(a, "hcasim0"), "%s", a);
	cr_expect(strstr(a, "PORT_ACTIVE"), "%s", a);
	free(a);
}

Test(exec, debian_rc_pingpong_draws_the_same_psn_from_its_pid_and_time_in_every_run,
     .init = ex_setup, .fini = ex_teardown)
{
	char cmd[2048], *out, *l1, *l2;
	unsigned psn, got;
	int st, port = 28000 + getpid() % 1000;

	/* ibv_rc_pingpong seeds srand48 with getpid() * time(NULL) and draws its PSN, prints its
	 * address, then waits for a client (not there: it is stopped after 2 s). Two servers, each
	 * a host 0 of a fabric of its own; stdbuf (a program it executes) flushes each line. */
	snprintf(cmd, sizeof(cmd), "unset HCASIM_CONFIG HCASIM_TRACE HCASIM_PCAP; for i in 1 2; do "
		 "%s timeout 2 %s --fabric %s/pp$i --host 0 stdbuf -oL ibv_rc_pingpong -d hcasim0 "
		 "-p $((%d + i)) 2>/dev/null & done; wait", tb_san_env(), EXEC, dir, port);
	out = tb_run_cmd(cmd, &st);
	l1 = strstr(out, "local address:");
	cr_assert_not_null(l1, "%s", out);
	l2 = strstr(l1 + 1, "local address:");
	cr_assert_not_null(l2, "%s", out);
	cr_expect(!strncmp(l1, l2, strcspn(l1, "\n")), "two runs differ:\n%s", out);
	/* The PSN of pid 1000 at the epoch's first second. */
	srand48(1000L * 1767225600L);
	psn = (unsigned)lrand48() & 0xffffff;
	cr_assert_eq(sscanf(strstr(l1, "PSN "), "PSN %x", &got), 1);
	cr_expect_eq(got, psn, "%s", out);
	free(out);
}

/* A server and its client as two hcasim-exec processes on the fabric DIR/<fabric>, hosts 0 and
 * 1, the client started 0.3 s after the server (port: a free one); each one's output (stdout
 * and stderr, the client's after the server's, each line prefixed S or C) and status in a
 * line "status S C". */
static char *pair(const char *cfg, const char *fabric, const char *server, const char *client,
		  int port)
{
	char cmd[4096];
	int st;

	snprintf(cmd, sizeof(cmd),
		 "unset HCASIM_CONFIG HCASIM_FABRIC HCASIM_HOST HCASIM_TRACE HCASIM_PCAP; %s%s%s "
		 "cd %s; %s timeout 300 %s --fabric %s --host 0 %s -p %d >s.out 2>&1 & sp=$!; "
		 "sleep 0.3; %s timeout 300 %s --fabric %s --host 1 %s -p %d localhost >c.out 2>&1; "
		 "c=$?; wait $sp; s=$?; sed 's/^/S /' s.out; sed 's/^/C /' c.out; "
		 "echo status $s $c", cfg ? "export HCASIM_CONFIG=" : "", cfg ? cfg : "",
		 cfg ? ";" : "", dir,
		 tb_san_env(), EXEC, fabric, server, port, tb_san_env(), EXEC, fabric, client, port);
	return tb_run_cmd(cmd, &st);
}

Test(exec, debian_rc_pingpong_between_two_hcasim_exec_processes_prints_the_same_in_every_run,
     .init = ex_setup, .fini = ex_teardown)
{
	int port = 29000 + getpid() % 1000;
	char *a = pair(NULL, "pp1", "ibv_rc_pingpong -d hcasim0 -n 1000",
		       "ibv_rc_pingpong -d hcasim1 -n 1000", port);
	char *b = pair(NULL, "pp2", "ibv_rc_pingpong -d hcasim0 -n 1000",
		       "ibv_rc_pingpong -d hcasim1 -n 1000", port + 1);

	cr_expect(strstr(a, "\nstatus 0 0\n"), "%s", a);
	/* Its figures come from gettimeofday: the simulated time of 1000 round trips. */
	cr_expect(strstr(a, "S 1000 iters in 0.00 seconds = ") &&
		  strstr(a, "C 1000 iters in 0.00 seconds = "), "%s", a);
	cr_expect_str_eq(a, b, "two runs differ");
	free(a);
	free(b);
}

/* The BW average of perftest's report row in out after prefix ("S " or "C "). */
static double bw_average(const char *out, const char *prefix)
{
	char key[32];
	const char *r;
	double peak, avg;
	unsigned long bytes, iters;

	snprintf(key, sizeof(key), "%s  65536", prefix);
	r = strstr(out, key);
	if (!r || sscanf(r + strlen(prefix), "%lu %lu %lf %lf", &bytes, &iters, &peak, &avg) != 4)
		return -1;
	return avg;
}

Test(exec, perftest_ib_write_bw_calibrates_its_tsc_and_reports_simulated_bandwidth,
     .init = ex_setup, .fini = ex_teardown)
{
	char cfg[600], cmd[1024], *a, *perf;
	double s, c, ref;
	FILE *f;
	int st;

	/* perftest calibrates its TSC at the report, spinning through 219 ms of gettimeofday;
	 * with the server away in read(), each latency of that is a round of the two processes'
	 * promises: a latency of 1 us instead of 100 ns makes ten times fewer. */
	snprintf(cfg, sizeof(cfg), "%s/lat.ini", dir);
	cr_assert_not_null(f = fopen(cfg, "w"));
	fprintf(f, "[link]\nlatency_ns = 1000\n");
	fclose(f);
	a = pair(cfg, "bw", "ib_write_bw -d hcasim0 -n 100", "ib_write_bw -d hcasim1 -n 100",
		 30000 + getpid() % 1000);
	cr_expect(strstr(a, "\nstatus 0 0\n"), "%s", a);
	cr_expect(!strstr(a, "Conflicting CPU frequency") && !strstr(a, "Correlation coefficient") &&
		  !strstr(a, "Can't produce a report"), "the calibration failed:\n%s", a);
	s = bw_average(a, "S");
	c = bw_average(a, "C");
	/* The same test in one process (hcasim-perf: perftest's benchmarks, both hosts). */
	snprintf(cmd, sizeof(cmd), "HCASIM_CONFIG=%s %s %s/bin/hcasim-perf write_bw -n 100 | "
		 "sed 's/^/P /'", cfg, tb_san_env(), HCASIM_BUILD_DIR);
	perf = tb_run_cmd(cmd, &st);
	ref = bw_average(perf, "P");
	cr_expect(ref > 0 && s == c && c > ref * 0.98 && c < ref * 1.02,
		  "BW average %.2f (server) %.2f (client), hcasim-perf %.2f:\n%s%s", s, c, ref, a,
		  perf);
	free(a);
	free(perf);
}

/* hcasim-exec ARGS (after --fabric DIR/fab when fabric is set) exits with status, saying words. */
static void expect_refused(const char *cfg, bool fabric, const char *args, int status,
			   const char *words)
{
	char cmd[2048], *out;
	int st;

	snprintf(cmd, sizeof(cmd), "unset HCASIM_CONFIG; %s %s %s 2>&1", tb_san_env(), EXEC, args);
	out = fabric ? run(cfg, "fab", args, &st) : tb_run_cmd(cmd, &st);
	cr_expect_eq(st, status, "%s: status %d\n%s", args, st, out);
	cr_expect(strstr(out, words), "%s: '%s' does not say '%s'", args, out, words);
	free(out);
}

Test(exec, bad_arguments_are_refused_naming_the_argument, .init = ex_setup, .fini = ex_teardown)
{
	char ini[700], fab[600];
	FILE *f;

	expect_refused(NULL, false, "", 2, "--fabric DIR is missing");
	expect_refused(NULL, false, "--host 0 true", 2, "--fabric DIR is missing");
	expect_refused(NULL, false, "--fabric /tmp/x true", 2, "--host N is missing");
	expect_refused(NULL, false, "--fabric", 2, "option '--fabric' needs a value");
	expect_refused(NULL, false, "--fabric= --host 0 true", 2, "option '--fabric=' is empty");
	expect_refused(NULL, false, "--bogus 1", 2, "unknown option '--bogus'");
	expect_refused(NULL, true, "--host 0", 2, "no program to run");
	expect_refused(NULL, true, "--host 0 --", 2, "no program to run after '--'");
	expect_refused(NULL, true, "--host 2 true", 2, "HCASIM_HOST '2': host 2 is not in the system");
	expect_refused(NULL, true, "--host 0,x true", 2, "'x' is not a host number");
	expect_refused(NULL, true, "--host 0 no-such-program-here", 127,
		       "program 'no-such-program-here' not found in PATH");
	expect_refused(NULL, true, "--host 0 /no/such/program", 127, "program '/no/such/program' "
		       "not found");
	snprintf(fab, sizeof(fab), "--host 0 %s/plain", dir);
	cr_assert_not_null(f = fopen(fab + 9, "w"));
	fclose(f);
	expect_refused(NULL, true, fab, 126, "is not executable");
	expect_refused("/no/such.ini", true, "--host 0 true", 2, "HCASIM_CONFIG");
	/* A configuration the fabric's processes disagree on. */
	snprintf(fab, sizeof(fab), "%s/fab", dir);
	cr_assert_eq(mkdir(fab, 0700), 0);
	snprintf(ini, sizeof(ini), "%s/fabric.ini", fab);
	cr_assert_not_null(f = fopen(ini, "w"));
	fprintf(f, "[link]\nlatency_ns = 200\n");
	fclose(f);
	expect_refused(NULL, true, "--host 0 true", 2, "config key 'link.latency_ns' is 100 here "
		       "but 200");
	unlink(ini);
	/* The program's own status passes through; -- ends the options; --opt=value works. */
	expect_refused(NULL, true, "--host 0 -- sh -c 'exit 3'", 3, "");
	snprintf(fab, sizeof(fab), "--fabric=%s/fab2 --host=1 sh -c 'exit 4'", dir);
	expect_refused(NULL, false, fab, 4, "");
}
