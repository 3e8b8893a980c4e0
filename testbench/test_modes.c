/* The implementation modes of the blocks with an RTL twin (docs/rtl.md) change nothing that can
 * be observed: every shipped scenario (build/bin/hcasim-scenario, with its timeline) and the
 * default simulation (build/bin/hcasim-run) run four times, with HCASIM_IMPL=all=model,
 * all=rtl, all=lockstep and all=checked, HCASIM_TRACE='*' and HCASIM_PCAP; each run's stdout,
 * stderr, trace and every pcap it wrote are byte-identical across the four, and lockstep and
 * checked found no mismatch. */
#include "model/twin.h"
#include "sim/pcap.h"
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUN_BIN HCASIM_BUILD_DIR "/bin/hcasim-run"
#define SCENARIO_BIN HCASIM_BUILD_DIR "/bin/hcasim-scenario"
#define SCENARIOS HCASIM_SRC_DIR "/sim/scenarios"

static const char *const modes[] = { "model", "rtl", "lockstep", "checked" };
#define NMODES 4


static char tmpdir[] = "/tmp/hcasim-modes-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	tb_rm_tmpdir(tmpdir);
}

/* Runs argv in tmpdir/<mode> with HCASIM_IMPL=all=<mode>, every trace category to trace.txt
 * and the links captured to cap.link<n>.pcap; stdout to out.txt, stderr to err.txt. Nothing
 * else of the environment that changes a run is kept. Returns the exit status. */
static int run(const char *mode, char *const argv[])
{
	char dir[512], impl[32];

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, mode);
	snprintf(impl, sizeof(impl), "all=%s", mode);
	return tb_run_traced(dir, argv, impl, "cap");
}

/* tmpdir/mode/name, read whole (malloc'd, NUL-terminated); *len its size. */
static char *slurp(const char *mode, const char *name, size_t *len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s/%s", tmpdir, mode, name);
	return tb_slurp(path, len);
}

/* The file is byte-identical in the model's and mode's runs (tb_same_file). Returns its size. */
static size_t same_file(const char *what, const char *name, const char *mode)
{
	char pa[512], pb[512];

	snprintf(pa, sizeof(pa), "%s/model/%s", tmpdir, name);
	snprintf(pb, sizeof(pb), "%s/%s/%s", tmpdir, mode, name);
	return tb_same_file(what, pa, pb, 0);
}

/* The names of the files in tmpdir/mode, sorted, one per line (malloc'd). */
static char *listing(const char *mode)
{
	char dir[512], *s = NULL;
	struct dirent **ents;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	int n;

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, mode);
	cr_assert_not_null(f);
	n = scandir(dir, &ents, NULL, alphasort);
	cr_assert_geq(n, 0, "%s: %s", dir, strerror(errno));
	for (int i = 0; i < n; i++) {
		if (ents[i]->d_name[0] != '.')
			fprintf(f, "%s\n", ents[i]->d_name);
		free(ents[i]);
	}
	free(ents);
	fclose(f);
	return s;
}

/* argv run in every mode; the same output, trace and pcaps; lockstep clean. min_trace: the
 * trace must have at least that many bytes (a run that traced nothing proves nothing). */
static void compare(const char *what, char *const argv[], size_t min_trace)
{
	char *files, *err;
	int pcaps = 0;

	for (int b = 0; b < HM_TWIN_COUNT; b++)
		if (!hm_twin_rtl((enum hm_twin)b))
			cr_skip_test("this build has no RTL twin of %s (no Verilator)",
				     hm_twin_name((enum hm_twin)b));
	for (int m = 0; m < NMODES; m++) {
		int rc = run(modes[m], argv);

		err = slurp(modes[m], "err.txt", NULL);
		cr_assert_eq(rc, 0, "%s with HCASIM_IMPL=all=%s: exit status %d:\n%s", what,
			     modes[m], rc, err);
		cr_assert_null(strstr(err, "mismatch"), "%s in %s:\n%s", what, modes[m], err);
		free(err);
	}
	/* lockstep and checked compared every output of every block and stopped at none: a
	 * mismatch is traced (warn lockstep, warn checked) and halts the run */
	for (int m = 2; m < NMODES; m++) {
		char ev[32];

		snprintf(ev, sizeof(ev), " warn.%s ", modes[m]);
		err = slurp(modes[m], "trace.txt", NULL);
		cr_assert_null(strstr(err, ev), "%s: %s traced a mismatch", what, modes[m]);
		free(err);
	}

	files = listing("model");
	for (int m = 1; m < NMODES; m++) {
		char *other = listing(modes[m]);

		cr_assert_str_eq(files, other, "%s: model and %s wrote different files", what,
				 modes[m]);
		free(other);
	}
	for (char *name = files, *nl; *name; name = nl + 1) {
		size_t len = 0;

		nl = strchr(name, '\n');
		*nl = 0;
		for (int m = 1; m < NMODES; m++)
			len = same_file(what, name, modes[m]);
		if (!strcmp(name, "trace.txt"))
			cr_assert_geq(len, min_trace, "%s: a trace of only %zu bytes", what, len);
		if (strstr(name, ".pcap") && len > SIM_PCAP_HEADER_BYTES) /* more than a header */
			pcaps++;
	}
	free(files);
	cr_assert_gt(pcaps, 0, "%s: no packet was captured", what);
}

static void scenario(const char *name)
{
	char path[512];
	char *argv[] = { SCENARIO_BIN, path, NULL };

	snprintf(path, sizeof(path), "%s/%s.ini", SCENARIOS, name);
	compare(name, argv, 10000);
}

TestSuite(modes, .init = setup, .fini = teardown);

Test(modes, default_simulation_same_output_trace_and_pcaps)
{
	char *argv[] = { RUN_BIN, "run", NULL };
	char *out;

	compare("hcasim-run", argv, 10000);
	out = slurp("rtl", "out.txt", NULL);
	cr_assert_not_null(strstr(out, "CMP_AND_SWP completed"), "%s", out);
	free(out);
}

#define SCENARIO_TEST(name) \
	Test(modes, name##_same_timeline_trace_and_pcaps) { scenario(#name); }
TB_SCENARIOS(SCENARIO_TEST)

/* Every .ini in sim/scenarios has its test above. */
Test(modes, every_shipped_scenario_is_compared)
{
	tb_check_scenario_list(SCENARIOS);
}
