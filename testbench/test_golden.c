/* Golden traces: the default simulation (build/bin/hcasim-run) and every shipped scenario
 * (build/bin/hcasim-scenario) run with every trace category and the links captured, and their
 * trace and every capture are byte-identical to the files committed under testbench/golden/.
 * A change that moves a trace line or a wire byte fails here; after an intended one,
 * `make golden` rewrites the files and the commit says why (docs/user-guide.md#golden-traces):
 * it runs this suite with HCASIM_GOLDEN_UPDATE=1, which copies each run's files over the
 * golden ones instead of comparing, so the files are written by the very runs that check them. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN_BIN HCASIM_BUILD_DIR "/bin/hcasim-run"
#define SCENARIO_BIN HCASIM_BUILD_DIR "/bin/hcasim-scenario"
#define SCENARIOS HCASIM_SRC_DIR "/sim/scenarios"
#define GOLDEN HCASIM_SRC_DIR "/testbench/golden"

static char tmpdir[] = "/tmp/hcasim-golden-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	tb_rm_tmpdir(tmpdir);
}

/* The sorted names of the files in dir that a golden holds: the trace and the captures. */
static size_t golden_files(const char *dir, char names[][64], size_t max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d, "%s: %m (make golden writes it)", dir);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (strcmp(e->d_name, "trace.txt") && (l < 5 || strcmp(e->d_name + l - 5, ".pcap")))
			continue;
		cr_assert_lt(n, max);
		cr_assert_lt(l, 64);
		memcpy(names[n++], e->d_name, l + 1);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
	return n;
}

/* make golden: gdir's trace and captures replaced by those the run wrote in dir. */
static void update(const char *name, const char *gdir, const char *dir)
{
	char names[8][64], a[700], b[700];
	size_t n, len;

	cr_assert(!mkdir(gdir, 0777) || errno == EEXIST, "%s: %m", gdir);
	n = golden_files(gdir, names, 8);
	for (size_t i = 0; i < n; i++) {
		snprintf(a, sizeof(a), "%s/%s", gdir, names[i]);
		cr_assert_eq(unlink(a), 0, "%s: %m", a);
	}
	n = golden_files(dir, names, 8);
	cr_assert_gt(n, 0, "%s wrote no trace or capture", name);
	printf("make golden: testbench/golden/%s:", name);
	for (size_t i = 0; i < n; i++) {
		char *data;
		FILE *f;

		snprintf(a, sizeof(a), "%s/%s", dir, names[i]);
		snprintf(b, sizeof(b), "%s/%s", gdir, names[i]);
		data = tb_slurp(a, &len);
		f = fopen(b, "wb");
		cr_assert_not_null(f, "%s: %m", b);
		cr_assert_eq(fwrite(data, 1, len, f), len, "%s: %m", b);
		cr_assert_eq(fclose(f), 0, "%s: %m", b);
		free(data);
		printf(" %s", names[i]);
	}
	printf("\n");
}

/* Run argv as tb_run_traced does (HCASIM_IMPL=all=model, HCASIM_TRACE='*', HCASIM_PCAP=cap)
 * in tmpdir/name, then compare its trace and captures with testbench/golden/name/. */
/* HCASIM_GOLDEN_UPDATE=1 (make golden) rewrites the golden files instead of comparing; unset,
 * empty or 0 compares. Any other value fails naming it: a misspelt 0 must not rewrite them. */
static bool golden_update(void)
{
	const char *env = getenv("HCASIM_GOLDEN_UPDATE");

	if (!env || !*env || !strcmp(env, "0"))
		return false;
	cr_assert_str_eq(env, "1", "HCASIM_GOLDEN_UPDATE: '%s' is not 0 or 1", env);
	return true;
}

static void check(const char *name, char *const argv[])
{
	char dir[512], gdir[512], a[700], b[700];
	char gnames[8][64], rnames[8][64];
	size_t ng, nr;

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
	snprintf(gdir, sizeof(gdir), "%s/%s", GOLDEN, name);
	cr_assert_eq(tb_run_traced(dir, argv, "all=model", "cap"), 0, "%s failed", name);
	if (golden_update()) {
		update(name, gdir, dir);
		return;
	}
	ng = golden_files(gdir, gnames, 8);
	nr = golden_files(dir, rnames, 8);
	cr_assert_gt(ng, 0, "%s: no golden files", gdir);
	cr_assert_eq(nr, ng, "%s wrote %zu trace and capture files, the golden has %zu", name,
		     nr, ng);
	for (size_t i = 0; i < ng; i++) {
		cr_assert_str_eq(rnames[i], gnames[i], "%s: files differ", name);
		snprintf(a, sizeof(a), "%s/%s", gdir, gnames[i]);
		snprintf(b, sizeof(b), "%s/%s", dir, rnames[i]);
		tb_same_file(name, a, b, 1);
	}
}

Test(golden, default_run_trace_and_capture, .init = setup, .fini = teardown)
{
	char *argv[] = { RUN_BIN, "cap", NULL };

	check("run", argv);
}

static void scenario(const char *name)
{
	char path[512];
	char *argv[] = { SCENARIO_BIN, path, NULL };

	snprintf(path, sizeof(path), "%s/%s.ini", SCENARIOS, name);
	check(name, argv);
}

/* One test per shipped scenario (TB_SCENARIOS). */
#define SCENARIO_TEST(n)                                                                           \
	Test(golden, n, .init = setup, .fini = teardown)                                           \
	{                                                                                          \
		scenario(#n);                                                                      \
	}
TB_SCENARIOS(SCENARIO_TEST)

Test(golden, every_shipped_scenario_has_a_golden)
{
	tb_check_scenario_list(SCENARIOS);
}

/* The captures are pcapng, and a frame a fault hit carries a comment that tshark shows: the
 * four sends of timeout_exhaustion.ini that the targeted fault drops, the one ACK lost_ack.ini
 * drops. The golden files are those the runs above write. */
static void expect_marks(const char *name, const char *want, int n)
{
	char cmd[1024], *out, *line, *save = NULL;
	int st, lines = 0;

	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s/%s/cap.link0.pcap -Y frame.comment -T fields -e frame.comment "
		 "2>/dev/null",
		 GOLDEN, name);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d:\n%s", cmd, st, out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), lines++)
		cr_expect_str_eq(line, want, "%s: frame comment %d", name, lines + 1);
	cr_expect_eq(lines, n, "%s: %d marked frames in tshark, expected %d", name, lines, n);
	free(out);
}

Test(golden, tshark_shows_the_frames_the_scenarios_faults_dropped)
{
	expect_marks("timeout_exhaustion",
		     "hcasim: dropped by link.fault_target (qpn 0x2 psn 256): never delivered", 4);
	expect_marks("lost_ack",
		     "hcasim: dropped by link.fault_target (qpn 0x2 psn 256): never delivered", 1);
}
