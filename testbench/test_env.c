/* Environment variables (docs/config.md, "Environment variables"): each bad value refuses the
 * boot, or is ignored with a warning where rdma-core ignores it, with a message naming the
 * variable and the bad part. An unmodified program (Debian's ibv_devinfo) whose simulator
 * cannot boot says why once on stderr and finds no devices, as libibverbs without devices. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void __verbs_log(void *ctx, uint32_t level, const char *fmt, ...);
const char *ibv_get_sysfs_path(void);

static char dir[] = "/tmp/hcasim-env-XXXXXX";

static void make_dir(void)
{
	char path[128];
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/file", dir); /* a regular file where a directory goes */
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/bad.ini", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("[sim]\nhosts = many\n", f);
	fclose(f);
}

static unsigned count(const char *text, const char *what)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* One bad setting: VAR=VALUE (VALUE with %s for the scratch directory) and the reason. */
struct bad_env {
	const char *var, *value, *why;
};

static const struct bad_env bad[] = {
	{ "HCASIM_CONFIG", "/dev/zero", "HCASIM_CONFIG: config file '/dev/zero': not a regular file" },
	{ "HCASIM_CONFIG", "%s", "HCASIM_CONFIG: config file '%s': not a regular file" },
	{ "HCASIM_CONFIG", "%s/bad.ini", "HCASIM_CONFIG: config file '%s/bad.ini':2: config key "
					 "'sim.hosts': 'many' is not a number" },
	{ "HCASIM_CONFIG", "%s/none.ini", "HCASIM_CONFIG: config file '%s/none.ini': cannot open: "
					  "No such file or directory" },
	{ "HCASIM_IMPL", "sched=rtl,,", "HCASIM_IMPL: item '' of 'sched=rtl,,': expected "
					"BLOCK=MODE" },
	{ "HCASIM_IMPL", "cqe=fast", "HCASIM_IMPL: item 'cqe=fast' of 'cqe=fast'" },
	{ "HCASIM_TRACE", "cmd,nope", "HCASIM_TRACE: trace categories: unknown category 'nope'" },
	{ "HCASIM_TRACE_FILE", "%s/no/t", "HCASIM_TRACE_FILE: trace file '%s/no/t': No such file" },
	{ "HCASIM_PCAP", "%s/no/p", "HCASIM_PCAP: hcasim_pcap: cannot create '%s/no/p.link0.pcap': "
				    "No such file" },
	{ "WAVES", "yes", "WAVES: 'yes' is not 0, 1 or a path ending in .vcd" },
	{ "WAVES", "%s/no/w.vcd", "WAVES: waves: cannot create '%s/no/w.vcd'" },
	{ "HCASIM_COUNTERS_DIR", "%s/file/c", "HCASIM_COUNTERS_DIR: '%s/file/c': Not a directory" },
	{ "HCASIM_RTL_BUG", "owner", "HCASIM_RTL_BUG: 'owner' is not none, cqe, sched, mkey, timers, resp_fe, qpc or wqe_fetch" },
};

static void fill(char *buf, size_t len, const char *fmt)
{
	snprintf(buf, len, fmt, dir, dir); /* fmt has at most one %s */
}

/* The simulator refuses each bad value at boot, naming the variable and the bad part; a boot
 * that failed leaves nothing booted, and the next one, with the variable gone, works. */
Test(env, each_bad_value_refuses_the_boot_naming_the_variable_and_the_next_boot_works)
{
	char value[256], why[256];
	struct tb_dev t;

	make_dir();
	/* first: the configuration file is read once, until a boot succeeds or a shutdown */
	{
		char *huge = malloc(5001);

		cr_assert_not_null(huge);
		memset(huge, 'x', 5000);
		huge[0] = '/';
		huge[5000] = 0;
		setenv("HCASIM_CONFIG", huge, 1);
		cr_assert_eq(hcasim_boot(), -ENAMETOOLONG);
		cr_assert(strstr(hcasim_last_error(), "HCASIM_CONFIG: a path of 5000 bytes"), "%s",
			  hcasim_last_error());
		unsetenv("HCASIM_CONFIG");
		free(huge);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fill(value, sizeof(value), bad[i].value);
		fill(why, sizeof(why), bad[i].why);
		setenv(bad[i].var, value, 1);
		cr_assert_lt(hcasim_boot(), 0, "%s=%s booted", bad[i].var, value);
		cr_assert(strstr(hcasim_last_error(), why), "%s=%s: no '%s' in '%s'", bad[i].var,
			  value, why, hcasim_last_error());
		cr_assert_not(hcasim_booted(), "%s=%s left the system booted", bad[i].var, value);
		unsetenv(bad[i].var);
	}
	/* WAVES=1 in a directory that is a file; a path that no file system takes */
	setenv("WAVES", "1", 1);
	snprintf(value, sizeof(value), "%s/file", dir);
	setenv("HCASIM_WAVES_DIR", value, 1);
	cr_assert_eq(hcasim_boot(), -ENOTDIR);
	snprintf(why, sizeof(why), "HCASIM_WAVES_DIR: '%s/file' is not a directory", dir);
	cr_assert(strstr(hcasim_last_error(), why), "%s", hcasim_last_error());
	unsetenv("WAVES");
	unsetenv("HCASIM_WAVES_DIR");
	/* no file was made of a misspelt WAVES, and the system boots as if nothing happened */
	cr_assert_neq(access("yes", F_OK), 0, "WAVES=yes wrote a file 'yes'");
	tb_open(&t, 1);
	cr_assert_eq(t.port.state, IBV_PORT_ACTIVE);
	tb_close(&t);
	tb_rm_tmpdir(dir);
}

/* Debian's ibv_devinfo, unmodified, in an environment of only PATH and the one bad setting:
 * stderr says why once (no HCASIM_VERBOSE needed) and ibv_devinfo goes on as libibverbs
 * without devices has it: "No IB devices found", and its exit status for that, -1 (255). */
static char *devinfo(const char *assign, int *exit_status)
{
	char cmd[8192], *out;
	int st;

	snprintf(cmd, sizeof(cmd), "cd %s && env -i PATH=\"$PATH\" %s LD_LIBRARY_PATH=%s/lib %s "
		 "ibv_devinfo 2>&1 >/dev/null; echo \"exit=$?\"", dir, tb_san_env(),
		 HCASIM_BUILD_DIR, assign);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "%s:\n%s", cmd, out);
	cr_assert_eq(sscanf(strstr(out, "exit=") ? strstr(out, "exit=") : "", "exit=%d",
			    exit_status), 1, "%s", out);
	return out;
}

Test(env, debian_ibv_devinfo_says_why_once_and_finds_no_devices)
{
	char value[256], why[256], assign[600], *err;
	int rc;

	make_dir();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fill(value, sizeof(value), bad[i].value);
		fill(why, sizeof(why), bad[i].why);
		snprintf(assign, sizeof(assign), "%s='%s'", bad[i].var, value);
		err = devinfo(assign, &rc);
		cr_assert_eq(count(err, why), 1, "%s: '%s' not once in:\n%s", assign, why, err);
		cr_assert_eq(count(err, "No IB devices found\n"), 1, "%s:\n%s", assign, err);
		cr_assert_eq(rc, 255, "%s: exit %d", assign, rc);
		free(err);
	}
	/* HCASIM_VERBOSE other than 0 or 1 is named and ignored: the reason is still told once */
	err = devinfo("HCASIM_VERBOSE=yes HCASIM_IMPL=x", &rc);
	cr_assert_eq(count(err, "HCASIM_VERBOSE: 'yes' is not 0 or 1: ignored"), 1, "%s", err);
	cr_assert_eq(count(err, "HCASIM_IMPL: item 'x'"), 1, "%s", err);
	free(err);
	/* the same program with a good environment finds both HCAs */
	err = devinfo("HCASIM_VERBOSE=0", &rc);
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert_eq(err[0], 'e', "stderr is not empty:\n%s", err); /* only "exit=0" */
	free(err);
	cr_assert_neq(access("yes", F_OK), 0);
	tb_rm_tmpdir(dir);
}

/* ---- rdma-core's own variables: taken as rdma-core's release build takes them (it ignores a
 * bad value silently), each bad value named in a warning ---- */

static char *log_file(void)
{
	static char path[64];

	snprintf(path, sizeof(path), "/tmp/hcasim-vlog-%d", (int)getpid());
	unlink(path);
	return path;
}

/* Each case in its own process (Criterion forks per test): the variables are read once. */
static char *log_run(void)
{
	tb_stderr_capture();
	ibv_free_device_list(ibv_get_device_list(NULL)); /* rdma-core reads them here */
	__verbs_log(NULL, 1, "err-level\n");
	__verbs_log(NULL, 2, "warn-level\n");
	__verbs_log(NULL, 4, "debug-level\n");
	return tb_stderr_captured();
}

Test(env, verbs_log_level_with_trailing_junk_keeps_the_number_and_says_so)
{
	char *path = log_file(), *err, *text;

	setenv("VERBS_LOG_LEVEL", "2x", 1);
	setenv("VERBS_LOG_FILE", path, 1);
	err = log_run();
	cr_assert_eq(count(err, "VERBS_LOG_LEVEL: '2x': 'x' after the number is ignored: level 2"),
		     1, "%s", err);
	text = tb_slurp(path, NULL);
	cr_assert_str_eq(text, "err-level\nwarn-level\n");
	free(text);
	free(err);
	unlink(path);
}

Test(env, verbs_log_level_that_is_no_number_logs_nothing_and_says_so)
{
	char *path = log_file(), *err;

	setenv("VERBS_LOG_LEVEL", "debug", 1);
	setenv("VERBS_LOG_FILE", path, 1);
	err = log_run();
	cr_assert_eq(count(err, "VERBS_LOG_LEVEL: 'debug' is not a number: level 0"), 1, "%s", err);
	cr_assert_null(strstr(err, "-level"), "logged:\n%s", err);
	cr_assert_neq(access(path, F_OK), 0, "level 0 opened the log file");
	free(err);
}

Test(env, verbs_log_without_a_file_logs_nothing_and_says_so)
{
	char *err;

	setenv("VERBS_LOG_LEVEL", "4", 1);
	unsetenv("VERBS_LOG_FILE");
	err = log_run();
	cr_assert_eq(count(err, "VERBS_LOG_LEVEL is 4 but VERBS_LOG_FILE is unset: nothing is "
				"logged"), 1, "%s", err);
	cr_assert_null(strstr(err, "-level"), "logged to stderr:\n%s", err);
	free(err);
}

Test(env, verbs_log_file_that_cannot_be_opened_is_named)
{
	char *err;

	setenv("VERBS_LOG_LEVEL", "4", 1);
	setenv("VERBS_LOG_FILE", "/dev/null/log", 1);
	err = log_run();
	cr_assert_eq(count(err, "VERBS_LOG_FILE: cannot open '/dev/null/log': Not a directory"), 1,
		     "%s", err);
	cr_assert_null(strstr(err, "-level"), "logged to stderr:\n%s", err);
	free(err);
}

Test(env, sysfs_path_loses_its_trailing_slashes_as_in_rdma_core)
{
	setenv("SYSFS_PATH", "/srv/sys//", 1);
	cr_assert_str_eq(ibv_get_sysfs_path(), "/srv/sys");
}

Test(env, sysfs_path_longer_than_rdma_core_keeps_is_cut_and_named)
{
	char v[301], *err;

	memset(v, 'd', sizeof(v) - 1);
	v[0] = '/';
	v[300] = 0;
	setenv("SYSFS_PATH", v, 1);
	tb_stderr_capture();
	cr_assert_eq(strlen(ibv_get_sysfs_path()), 256);
	cr_assert_eq(strlen(ibv_get_sysfs_path()), 256);
	err = tb_stderr_captured();
	cr_assert_eq(count(err, "SYSFS_PATH: 300 bytes, cut to the first 256"), 1, "%s", err);
	free(err);
	cr_assert_eq(strncmp(ibv_get_sysfs_path(), v, 256), 0);
}

/* The reason is told once per process, however often a program asks for the list. */
Test(env, the_reason_is_told_once_however_often_the_list_is_asked_for)
{
	struct ibv_device **l;
	char *err;
	int n = -1;

	setenv("HCASIM_IMPL", "psn=fast", 1);
	tb_stderr_capture();
	for (int i = 0; i < 3; i++) {
		l = ibv_get_device_list(&n);
		cr_assert(l && !l[0] && !n && errno == EINVAL, "try %d", i);
		ibv_free_device_list(l);
	}
	err = tb_stderr_captured();
	cr_assert_eq(count(err, "hcasim: no devices: HCASIM_IMPL: item 'psn=fast'"), 1, "%s", err);
	free(err);
}

/* A trace file that opens but cannot be written (a full disk) used to lose the trace silently:
 * the shutdown says so. */
Test(env, a_trace_file_that_cannot_be_written_is_told_at_shutdown)
{
	char *err;

	setenv("HCASIM_TRACE", "*", 1);
	setenv("HCASIM_TRACE_FILE", "/dev/full", 1);
	cr_assert_eq(hcasim_boot(), 0, "%s", hcasim_last_error());
	hcasim_run_for_ps(1000000);
	tb_stderr_capture();
	hcasim_shutdown();
	err = tb_stderr_captured();
	cr_assert_eq(count(err, "hcasim: trace file '/dev/full': writing failed: No space left"), 1,
		     "%s", err);
	free(err);
}

/* hcasim_pcap() cut a prefix longer than its 512-byte buffer short, silently, and wrote files
 * of another name; now the whole name is used, and only a prefix no path can hold is refused. */
Test(env, a_long_capture_prefix_is_used_whole_or_refused_by_name)
{
	char path[1024], seg[201], *huge;

	make_dir();
	memset(seg, 'a', 200);
	seg[200] = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, seg);
	cr_assert_eq(mkdir(path, 0700), 0);
	seg[0] = 'b';
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", seg);
	cr_assert_eq(mkdir(path, 0700), 0);
	seg[0] = 'c';
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", seg); /* the prefix */
	cr_assert_gt(strlen(path), 600);
	cr_assert_eq(hcasim_boot(), 0, "%s", hcasim_last_error());
	cr_assert_eq(hcasim_pcap(path), 0, "%s", hcasim_last_error());
	strcat(path, ".link0.pcap");
	cr_assert_eq(access(path, F_OK), 0, "no %s", path);
	huge = calloc(1, 5000);
	cr_assert_not_null(huge);
	memset(huge, 'p', 4999);
	cr_assert_eq(hcasim_pcap(huge), -ENAMETOOLONG);
	cr_assert(strstr(hcasim_last_error(), "hcasim_pcap: the prefix: a path of 4999 bytes"), "%s",
		  hcasim_last_error());
	free(huge);
	cr_assert_eq(hcasim_pcap(NULL), 0, "%s", hcasim_last_error());
	hcasim_shutdown();
	tb_rm_tmpdir(dir);
}
