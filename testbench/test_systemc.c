/* The SystemC top (build/bin/hcasim-sc, sim/systemc/, docs/systemc.md): the default simulation
 * run by it and by the C kernel alone (build/bin/hcasim-run) with the same configuration,
 * HCASIM_TRACE='*' and HCASIM_PCAP, gives byte-identical output (completions with their
 * times), trace and pcaps; SystemC time equals hcasim time at the report and at the end; the
 * RTL blocks really ran as SystemC modules; lockstep in SystemC finds no mismatch. */
#include "sim/pcap.h"
#include "testbench/tb.h"

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
	tb_rm_tmpdir(tmpdir);
}

/* Runs bin in tmpdir/sub with impl, trace and pcap on; stdout to out.txt, stderr to err.txt,
 * the trace to trace.txt, pcaps to out.link0.pcap and env.link0.pcap. Returns the exit
 * status. */
static int run(const char *bin, const char *sub, const char *impl)
{
	char dir[512], *const argv[] = { (char *)bin, "out", NULL };

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, sub);
	return tb_run_traced(dir, argv, impl, "env");
}

/* tmpdir/sub/name, read whole (malloc'd, NUL-terminated); *len its size. */
static char *slurp(const char *sub, const char *name, size_t *len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s/%s", tmpdir, sub, name);
	return tb_slurp(path, len);
}

/* The files of the two runs are byte-identical (tb_same_file). */
static void same_file(const char *name, size_t min_len)
{
	char pa[512], pb[512];

	snprintf(pa, sizeof(pa), "%s/c/%s", tmpdir, name);
	snprintf(pb, sizeof(pb), "%s/sc/%s", tmpdir, name);
	tb_same_file("hcasim-run (a) and hcasim-sc (b)", pa, pb, min_len);
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
	same_file("env.link0.pcap", SIM_PCAP_HEADER_BYTES);
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

/* No Verilated SystemC block is built with a test bug: HCASIM_RTL_BUG is refused by name
 * before any block is made (it used to be an assert). */
Test(systemc, rtl_bug_is_refused_with_a_message)
{
	char cmd[512], *out;
	int st;

	snprintf(cmd, sizeof(cmd), "cd %s && %s HCASIM_RTL_BUG=cqe %s 2>&1; echo \"exit=$?\"", tmpdir,
		 tb_san_env(), SC_BIN);
	out = tb_run_cmd(cmd, &st);
	cr_assert(strstr(out, "hcasim-sc: HCASIM_RTL_BUG: 'cqe': hcasim-sc has no RTL built with a "
			 "test bug") && strstr(out, "exit=1\n"), "%s", out);
	free(out);
}
