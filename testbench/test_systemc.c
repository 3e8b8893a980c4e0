/* The SystemC top (build/bin/hcasim-sc, sim/systemc/, docs/systemc.md): the default simulation
 * run by it and by the C kernel alone (build/bin/hcasim-run) with the same configuration,
 * HCASIM_TRACE='*' and HCASIM_PCAP, gives byte-identical output (completions with their
 * times), trace and pcaps; SystemC time equals hcasim time at the report and at the end; the
 * RTL blocks really ran as SystemC modules; lockstep in SystemC finds no mismatch. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef HCASIM_SYSTEMC
#define HCASIM_SYSTEMC 0
#endif

#define RUN_BIN HCASIM_BUILD_DIR "/bin/hcasim-run"
#define SC_BIN HCASIM_BUILD_DIR "/bin/hcasim-sc"

static char tmpdir[] = "/tmp/hcasim-systemc-XXXXXX";

static void setup(void)
{
	if (!HCASIM_SYSTEMC)
		cr_skip_test("hcasim-sc was not built: it needs verilator and libsystemc-dev "
			     "(make deps)");
	cr_assert_eq(access(SC_BIN, X_OK), 0, "%s missing although SystemC was found at build "
		     "time", SC_BIN);
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[256];

	if (strcmp(tmpdir + strlen(tmpdir) - 6, "XXXXXX")) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		cr_expect_eq(system(cmd), 0);
	}
}

/* Runs bin in tmpdir/sub with impl, trace and pcap on; stdout to out.txt, stderr to err.txt,
 * the trace to trace.txt, pcaps to out.link0.pcap and env.link0.pcap. Returns the exit
 * status. */
static int run(const char *bin, const char *sub, const char *impl)
{
	char dir[512];
	int status;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, sub);
	cr_assert_eq(mkdir(dir, 0755), 0, "mkdir %s: %s", dir, strerror(errno));
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int out, err;

		if (chdir(dir))
			_exit(126);
		out = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		err = open("err.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(126);
		unsetenv("HCASIM_CONFIG");
		unsetenv("HCASIM_RTL_BUG");
		unsetenv("WAVES");
		setenv("HCASIM_IMPL", impl, 1);
		setenv("HCASIM_TRACE", "*", 1);
		setenv("HCASIM_TRACE_FILE", "trace.txt", 1);
		setenv("HCASIM_PCAP", "env", 1);
		setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
		execl(bin, bin, "out", (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "%s died (signal %d)", bin,
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return WEXITSTATUS(status);
}

/* tmpdir/sub/name, read whole (malloc'd, NUL-terminated); *len its size. */
static char *slurp(const char *sub, const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/%s/%s", tmpdir, sub, name);
	f = fopen(path, "rb");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	cr_assert_geq(n, 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* The files of the two runs are byte-identical; on a difference, the first differing line. */
static void same_file(const char *name, size_t min_len)
{
	size_t la, lb, i;
	char *a = slurp("c", name, &la), *b = slurp("sc", name, &lb);
	const char *line = a;

	cr_assert_geq(la, min_len, "%s of hcasim-run: only %zu bytes", name, la);
	for (i = 0; i < la && i < lb && a[i] == b[i]; i++)
		if (a[i] == '\n')
			line = a + i + 1;
	cr_assert(la == lb && i == la,
		  "%s differs between hcasim-run and hcasim-sc at byte %zu (sizes %zu, %zu), "
		  "line starting: %.120s",
		  name, i, la, lb, line);
	free(a);
	free(b);
}

/* One run of each, and every check on them; mode is hcasim-sc's HCASIM_IMPL. */
static void compare(const char *impl, int rtl)
{
	char *out, *err, *p, us[64];
	uint64_t rep_sc, rep_hc, end_sc, end_hc, steps, trans, deltas;
	int rc_c, rc_sc, n;

	rc_c = run(RUN_BIN, "c", "all=model");
	rc_sc = run(SC_BIN, "sc", impl);
	err = slurp("sc", "err.txt", NULL);
	cr_assert_eq(rc_c, 0, "hcasim-run failed");
	cr_assert_eq(rc_sc, 0, "hcasim-sc (HCASIM_IMPL=%s) failed:\n%s", impl, err);
	cr_assert_null(strstr(err, "mismatch"), "lockstep mismatch:\n%s", err);

	/* the workload's report (every completion with its time), the trace, the pcaps */
	same_file("out.txt", 3000);
	same_file("trace.txt", 10000);
	same_file("out.link0.pcap", 100000);
	same_file("env.link0.pcap", 24);
	out = slurp("sc", "out.txt", NULL);
	cr_assert_eq(strstr(out, "CMP_AND_SWP completed") != NULL, 1, "%s", out);

	/* SystemC time and hcasim time */
	p = strstr(err, "hcasim-sc: at the report: ");
	cr_assert_not_null(p, "%s", err);
	n = sscanf(p, "hcasim-sc: at the report: sc_time_stamp %" SCNu64 " ps, hcasim time %"
		   SCNu64 " ps\nhcasim-sc: at the end: sc_time_stamp %" SCNu64
		   " ps, hcasim time %" SCNu64 " ps\nhcasim-sc: HCASIM_IMPL=%*s %" SCNu64
		   " time steps, %" SCNu64 " RTL transactions in %" SCNu64 " delta cycles",
		   &rep_sc, &rep_hc, &end_sc, &end_hc, &steps, &trans, &deltas);
	cr_assert_eq(n, 7, "unexpected summary of hcasim-sc:\n%s", err);
	cr_assert_eq(rep_sc, rep_hc, "at the report: SystemC %" PRIu64 " ps, hcasim %" PRIu64
		     " ps", rep_sc, rep_hc);
	cr_assert_eq(end_sc, end_hc, "at the end: SystemC %" PRIu64 " ps, hcasim %" PRIu64 " ps",
		     end_sc, end_hc);
	cr_assert_gt(rep_sc, 0);
	cr_assert_geq(end_sc, rep_sc);
	snprintf(us, sizeof(us), "\nsimulated time: %.3f us,", (double)rep_sc / 1e6);
	cr_assert_not_null(strstr(out, us), "sc_time_stamp %" PRIu64 " ps is not the time printed "
			   "(expected '%s') in:\n%s", rep_sc, us + 1, out);
	cr_assert_gt(steps, 100, "the hcasim kernel moved SystemC time only %" PRIu64 " times",
		     steps);
	/* the RTL ran as SystemC modules (rtl, lockstep), or not at all (model) */
	if (rtl) {
		cr_assert_gt(trans, 10, "only %" PRIu64 " RTL transactions in SystemC", trans);
		cr_assert_geq(deltas, 4 * trans);
	} else {
		cr_assert_eq(trans, 0);
	}
	free(out);
	free(err);
}

TestSuite(systemc, .init = setup, .fini = teardown);

Test(systemc, rtl_matches_c_kernel)
{
	compare("all=rtl", 1);
}

Test(systemc, lockstep_no_mismatch)
{
	compare("all=lockstep", 1);
}

Test(systemc, model_matches_c_kernel)
{
	compare("all=model", 0);
}
