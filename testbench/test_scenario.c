/* The scenario runner (build/bin/hcasim-scenario): every shipped scenario in sim/scenarios/
 * passes and its timeline shows the facts the scenario is about; a wrong expectation fails
 * with exit status 1 naming its line; a malformed file exits 2 naming the line and the key
 * before anything runs. Also the trace observer it is built on (hcasim_trace_observe). */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUNNER HCASIM_BUILD_DIR "/bin/hcasim-scenario"
#define SCENARIOS HCASIM_SRC_DIR "/sim/scenarios/"

/* Run the runner on path (with -q if quiet); returns its exit status, and its stdout and
 * stderr together in *out (malloc'd). */
static int run_runner(const char *path, bool quiet, char **out)
{
	int fd[2], status;
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	pid_t pid;
	ssize_t n;

	cr_assert(buf && pipe(fd) == 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(fd[1], 1);
		dup2(fd[1], 2);
		close(fd[0]);
		close(fd[1]);
		unsetenv("HCASIM_TRACE");
		unsetenv("HCASIM_CONFIG");
		if (quiet)
			execl(RUNNER, RUNNER, "-q", path, (char *)NULL);
		else
			execl(RUNNER, RUNNER, path, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while ((n = read(fd[0], buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 4096) {
			cap *= 2;
			buf = realloc(buf, cap);
			cr_assert(buf);
		}
	}
	close(fd[0]);
	buf[len] = 0;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "the runner died: %s", buf);
	*out = buf;
	return WEXITSTATUS(status);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The timeline section of QP name (from its "qp NAME:" header to its totals line), copied. */
static char *qp_section(const char *out, const char *name)
{
	char head[64];
	const char *a, *b;
	char *s;

	snprintf(head, sizeof(head), "\nqp %s: ", name);
	a = strstr(out, head);
	cr_assert_not_null(a, "no timeline for qp %s in:\n%s", name, out);
	b = strstr(a, "\n  totals:");
	cr_assert_not_null(b);
	b = strchr(b + 1, '\n');
	s = strndup(a, (size_t)(b - a));
	cr_assert_not_null(s);
	return s;
}

/* Run a shipped scenario: it must pass every one of its expectations. */
static char *shipped(const char *file, int nexpect)
{
	char *out, want[64];
	int rc = run_runner(file, false, &out);

	cr_assert_eq(rc, 0, "%s: exit %d:\n%s", file, rc, out);
	snprintf(want, sizeof(want), "result: PASS (%d of %d expectations hold)", nexpect, nexpect);
	cr_assert_not_null(strstr(out, want), "%s:\n%s", file, out);
	cr_assert_eq(count(out, "  FAIL  "), 0, "%s", out);
	return out;
}

Test(scenario, timeout_exhaustion_ends_with_retry_exc_err_after_retry_cnt_plus_1_timeouts)
{
	char *out = shipped(SCENARIOS "timeout_exhaustion.ini", 8);
	char *a = qp_section(out, "a");
	const char *p;
	uint64_t t[5];
	int n = 0;

	cr_assert_eq(count(a, " tx      psn 256 "), 4, "%s", a);
	cr_assert_eq(count(a, "RETRANSMISSION"), 3, "%s", a);
	cr_assert_eq(count(a, " timeout retries_left"), 4, "%s", a);
	cr_assert_not_null(strstr(a, "completion w1 RETRY_EXC_ERR"), "%s", a);
	cr_assert_not_null(strstr(a, "RTS->ERR (error)"), "%s", a);
	/* The timeouts are one local ACK timeout (1.048576 ms) plus one resend apart. */
	for (p = a; n < 5 && (p = strstr(p, " timeout retries_left")); p++) {
		const char *l = p;
		unsigned long long us, frac;

		while (l > a && l[-1] != '\n')
			l--;
		cr_assert_eq(sscanf(l, " %llu.%llu us", &us, &frac), 2);
		t[n++] = us * 1000000 + frac;
	}
	cr_assert_eq(n, 4);
	for (int i = 1; i < 4; i++)
		cr_assert(t[i] - t[i - 1] > 1048576000ull && t[i] - t[i - 1] < 1050576000ull,
			  "timeouts %d and %d are %llu ps apart", i, i + 1,
			  (unsigned long long)(t[i] - t[i - 1]));
	free(a);
	free(out);
}

Test(scenario, rnr_exhaustion_takes_rnr_retry_plus_1_naks_for_each_rnr_retry)
{
	char *out = shipped(SCENARIOS "rnr_exhaustion.ini", 42);

	for (int k = 0; k < 7; k++) {
		char name[8], done[64];
		char *r;

		snprintf(name, sizeof(name), "r%d", k);
		r = qp_section(out, name);
		cr_assert_eq(count(r, "RNR NAK (timer code"), k + 1, "rnr_retry %d:\n%s", k, r);
		cr_assert_eq(count(r, "RETRANSMISSION"), k, "rnr_retry %d:\n%s", k, r);
		snprintf(done, sizeof(done), "completion s%d RNR_RETRY_EXC_ERR", k);
		cr_assert_not_null(strstr(r, done), "%s", r);
		free(r);
	}
	free(out);
}

Test(scenario, rnr_retry_7_succeeds_once_the_receive_is_posted)
{
	char *out = shipped(SCENARIOS "rnr_retry_infinite.ini", 7);
	char *a = qp_section(out, "a"), *b = qp_section(out, "b");

	cr_assert_eq(count(a, "RNR NAK (timer code 14)"), 4, "%s", a);
	cr_assert_not_null(strstr(a, "completion w1 SUCCESS"), "%s", a);
	cr_assert_not_null(strstr(b, "completion rx SUCCESS (receive)"), "%s", b);
	cr_assert_null(strstr(a, "(error)"), "%s", a);
	free(a);
	free(b);
	free(out);
}

Test(scenario, lost_ack_is_re_acked_and_completes_once)
{
	char *out = shipped(SCENARIOS "lost_ack.ini", 12);
	char *a = qp_section(out, "a"), *b = qp_section(out, "b");

	cr_assert_eq(count(a, "RETRANSMISSION"), 1, "%s", a);
	cr_assert_eq(count(a, "completion w1"), 1, "%s", a);
	cr_assert_eq(count(b, "ACKNOWLEDGE"), 2, "%s", b);
	cr_assert_not_null(strstr(b, "link fault: drop (targeted)"), "%s", b);
	cr_assert_eq(count(b, "REPEATED"), 1, "%s", b);
	cr_assert_eq(count(b, "completion rx"), 1, "%s", b);
	free(a);
	free(b);
	free(out);
}

Test(scenario, lost_read_response_is_asked_again_from_the_first_missing_psn)
{
	char *out = shipped(SCENARIOS "lost_read_response.ini", 9);
	char *a = qp_section(out, "a"), *b = qp_section(out, "b");

	cr_assert_not_null(strstr(a, "psn 256      READ_REQUEST"), "%s", a);
	cr_assert_not_null(strstr(a, "psn 257      READ_REQUEST"), "%s", a);
	cr_assert_eq(count(a, "RETRANSMISSION"), 1, "%s", a);
	cr_assert_eq(count(a, " timeout retries_left"), 0, "%s", a);
	/* The new READ is answered FIRST, MIDDLE, LAST from PSN 257. */
	cr_assert_not_null(strstr(b, "psn 257      READ_RESPONSE_FIRST"), "%s", b);
	cr_assert_eq(count(b, "REPEATED"), 3, "%s", b);
	free(a);
	free(b);
	free(out);
}

Test(scenario, duplicated_atomics_execute_once_and_replay_the_result)
{
	char *out = shipped(SCENARIOS "duplicated_atomic.ini", 11);
	char *a = qp_section(out, "a"), *b = qp_section(out, "b");

	cr_assert_eq(count(a, "link fault: duplicate (targeted)"), 2, "%s", a);
	cr_assert_eq(count(a, "RETRANSMISSION"), 0, "%s", a);
	cr_assert_eq(count(b, "ATOMIC_ACKNOWLEDGE"), 4, "%s", b);
	cr_assert_eq(count(b, "REPEATED"), 2, "%s", b);
	cr_assert_not_null(strstr(out, "memory b at offset 0: 42 (expected 42)"), "%s", out);
	free(a);
	free(b);
	free(out);
}

Test(scenario, sqd_drain_raises_sq_drained_after_the_outstanding_write)
{
	char *out = shipped(SCENARIOS "sqd_drain.ini", 5);
	char *a = qp_section(out, "a");
	const char *sqd = strstr(a, "RTS->SQD"), *done = strstr(a, "completion w1 SUCCESS"),
		   *ev = strstr(a, "async event SQ_DRAINED"), *rts = strstr(a, "SQD->RTS"),
		   *s2 = strstr(a, "completion s2 SUCCESS");

	cr_assert(sqd && done && ev && rts && s2, "%s", a);
	cr_assert(sqd < done && done < ev && ev < rts && rts < s2, "out of order:\n%s", a);
	free(a);
	free(out);
}

Test(scenario, path_migration_moves_both_sides_to_port_2_when_link_0_fails)
{
	char *out = shipped(SCENARIOS "path_migration.ini", 11);
	char *a = qp_section(out, "a"), *b = qp_section(out, "b");
	const char *cut = strstr(a, "link 0 down"), *exh = strstr(a, "retries_left=0 exhausted"),
		   *mig = strstr(a, "migrated to port 2"), *ev = strstr(a, "async event PATH_MIG"),
		   *resend = strstr(a, "RETRANSMISSION"), *done = strstr(a, "completion w1 SUCCESS");

	cr_assert(cut && exh && mig && ev && resend && done, "%s", a);
	cr_assert(cut < exh && exh < mig && mig < ev && ev < resend && resend < done,
		  "out of order:\n%s", a);
	/* Every packet that left before the cut is sent again over port 2, and nothing else is
	 * a retransmission: the dead port sent nothing. */
	{
		char *before = strndup(a, (size_t)(cut - a));
		int sent = count(before, " tx      psn ");

		cr_assert_gt(sent, 0, "%s", a);
		cr_assert_eq(count(a, "RETRANSMISSION"), sent,
			     "%d packets left before the cut, not all sent again\n%s", sent, a);
		free(before);
	}
	cr_assert_eq(count(a, " timeout retries_left"), 3, "%s", a);
	cr_assert_not_null(strstr(b, "migrated to port 2"), "%s", b);
	cr_assert_not_null(strstr(b, "async event PATH_MIG"), "%s", b);
	free(a);
	free(b);
	free(out);
}

/* Write text to a fresh temporary .ini file; returns its path (malloc'd). */
static char *tmp_ini(const char *text)
{
	char *path = strdup("/tmp/hcasim-scn-XXXXXX.ini");
	int fd;

	cr_assert_not_null(path);
	fd = mkstemps(path, 4);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

/* A scenario's text with one line replaced. */
static char *edited(const char *file, const char *from, const char *to)
{
	size_t n;
	char *text = tb_slurp(file, &n), *res, *p;

	p = strstr(text, from);
	cr_assert_not_null(p, "'%s' not in %s", from, file);
	res = calloc(1, n + strlen(to) + 1);
	cr_assert_not_null(res);
	memcpy(res, text, (size_t)(p - text));
	strcat(res, to);
	strcat(res, p + strlen(from));
	free(text);
	return res;
}

/* The line number of the [expect] section that holds the first occurrence of needle. */
static int expect_line_of(const char *text, const char *needle)
{
	const char *p = strstr(text, needle);
	int line = 1;

	cr_assert_not_null(p);
	while (p > text && strncmp(p, "\n[expect", 8))
		p--;
	for (const char *q = text; q <= p; q++)
		line += *q == '\n';
	return line;
}

Test(scenario, a_wrong_expectation_fails_with_exit_1_naming_its_line)
{
	static const struct {
		const char *from, *to;
	} wrong[] = {
	    {"status = RETRY_EXC_ERR", "status = SUCCESS"},
	    {"tolerance = 2us", "tolerance = 1us"}, /* the resends take 1.656 us */
	    {"counter = a.timeouts\nequals = 4", "counter = a.timeouts\nequals = 3"},
	    {"state = a\nis = ERR", "state = a\nis = RTS"},
	};

	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		char *text = edited(SCENARIOS "timeout_exhaustion.ini", wrong[i].from, wrong[i].to);
		char *path = tmp_ini(text), *out, want[256];
		int rc = run_runner(path, true, &out), line = expect_line_of(text, wrong[i].to);

		cr_assert_eq(rc, 1, "'%s': exit %d:\n%s", wrong[i].to, rc, out);
		snprintf(want, sizeof(want), "  FAIL  %s:%d ", path, line);
		cr_assert_not_null(strstr(out, want), "'%s': no '%s' in:\n%s", wrong[i].to, want,
				   out);
		cr_assert_eq(count(out, "  FAIL  "), 1, "%s", out);
		cr_assert_not_null(strstr(out, "result: FAIL (7 of 8 expectations hold)"), "%s",
				   out);
		unlink(path);
		free(path);
		free(text);
		free(out);
	}
}

Test(scenario, a_malformed_file_exits_2_naming_line_and_key_without_running)
{
	static const char base[] = "[qp a]\nhost = 0\npeer = b\n[qp b]\nhost = 1\npeer = a\n"
				   "[expect]\nstate = a\nis = RTS\n";
	static const struct {
		const char *tail;
		int line;
		const char *msg;
	} bad[] = {
	    {"[qp c]\nhost = 0\ntimeout = 32\n", 12, "[qp c] timeout: bad value '32'"},
	    {"[qp c]\nhost = 0\ncolour = red\n", 12, "[qp c] colour: unknown key"},
	    {"[bogus]\nx = 1\n", 10, "[bogus]: unknown section"},
	    {"[traffic t]\nqp = a\nop = send\nat = 10 us\nsize = 8\n", 13,
	     "[traffic t] at: bad value '10 us'"},
	    {"[traffic t]\nqp = a\nop = read\nsize = 64\ncompare = 3\n", 14,
	     "[traffic t] compare: not a key of op = read"},
	    {"[traffic t]\nqp = zz\nop = send\nsize = 8\n", 11, "[traffic t] qp: no [qp zz]"},
	    {"[qp c]\nhost = 0\nhost = 1\n", 12, "[qp c] host: given twice (first on line 11)"},
	    {"[expect]\ncounter = a.nope\nequals = 1\n", 11, "counter: 'a.nope' is not"},
	    {"[expect]\nstatus = SUCCESS\n", 11, "the section must start with what it expects"},
	    {"[fault f]\nfrom = a\nlink_down = 1ms\n", 12,
	     "[fault f] link_down: bad value '1ms' (expected yes or no"},
	    {"[qp c]\nhost = 0\nalt_dlid = 2\n", 12, "alt_dlid: unknown key (an alternate path is"},
	    {"[sim]\nlink.speed = warp\n", 11, "[sim] link.speed: config key 'link.speed'"},
	    {"[traffic t]\n", 10, "[traffic t]: a section without keys"},
	    {"this is not a key\n", 10, "syntax error"},
	    {"[fault f]\nfrom = a\ndrop_ppm = 5\nat = 2ms\nuntil = 1ms\n", 14,
	     "[fault f] until: not after at"},
	    {"[qp c\nhost = 0\n", 10, "syntax error: a section header without its ']'"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) + 1; i++) {
		char text[1024], *path, *out, want[512];
		char longline[300];

		if (i == sizeof(bad) / sizeof(bad[0])) {
			/* A line too long for the INI reader is refused, not cut in two. */
			memset(longline, 'x', sizeof(longline) - 1);
			longline[sizeof(longline) - 1] = 0;
			snprintf(text, sizeof(text), "%s[scenario]\nname = %s\n", base, longline);
			path = tmp_ini(text);
			cr_assert_eq(run_runner(path, false, &out), 2, "%s", out);
			snprintf(want, sizeof(want), "%s:11: line longer than", path);
			cr_assert_not_null(strstr(out, want), "no '%s' in:\n%s", want, out);
			unlink(path);
			free(path);
			free(out);
			continue;
		}
		int rc;

		snprintf(text, sizeof(text), "%s%s", base, bad[i].tail);
		path = tmp_ini(text);
		rc = run_runner(path, false, &out);
		cr_assert_eq(rc, 2, "case %zu: exit %d:\n%s", i, rc, out);
		snprintf(want, sizeof(want), "%s:%d: ", path, bad[i].line);
		cr_assert_not_null(strstr(out, want), "case %zu: no '%s' in:\n%s", i, want, out);
		cr_assert_not_null(strstr(out, bad[i].msg), "case %zu: no '%s' in:\n%s", i,
				   bad[i].msg, out);
		cr_assert_null(strstr(out, "== timeline"), "case %zu ran:\n%s", i, out);
		unlink(path);
		free(path);
		free(out);
	}
	{
		char *out;

		cr_assert_eq(run_runner("/nonexistent/x.ini", false, &out), 2);
		cr_assert_not_null(strstr(out, "/nonexistent/x.ini: cannot open"), "%s", out);
		free(out);
		/* Not a regular file: refused at once, never read for ever. */
		cr_assert_eq(run_runner("/dev/zero", false, &out), 2);
		cr_assert_not_null(strstr(out, "/dev/zero: not a regular file"), "%s", out);
		free(out);
	}
}

/* ---- the trace observer ---- */

struct seen {
	int boots, modifies, other_cat;
	uint64_t last_t;
	bool ordered;
	char fields[256];
};

static void observer(void *arg, uint64_t t, int dev, const char *ev, const char *f)
{
	struct seen *s = arg;

	if (t < s->last_t)
		s->ordered = false;
	s->last_t = t;
	if (!strcmp(ev, "kernel.boot")) {
		s->boots++;
		cr_assert_eq(dev, -1);
		snprintf(s->fields, sizeof(s->fields), "%s", f);
	} else if (!strcmp(ev, "qp.modify")) {
		s->modifies++;
	} else {
		s->other_cat++;
	}
}

Test(scenario, trace_observer_gets_its_categories_only_and_can_be_removed)
{
	struct seen s = {.ordered = true};
	struct tb_dev a;
	struct ibv_qp *qp;
	struct ibv_qp_attr attr = {
	    .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};

	cr_assert_eq(hcasim_trace_observe("kernel,nosuch", observer, &s), -EINVAL);
	cr_assert_not_null(strstr(hcasim_last_error(), "nosuch"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_trace_observe("kernel,qp", observer, &s), 0);
	tb_open(&a, 0);
	cr_assert_eq(s.boots, 1);
	cr_assert_not_null(strstr(s.fields, "hosts=2"), "%s", s.fields);
	qp = tb_create_qp(&a, IBV_QPT_RC);
	cr_assert_eq(
	    ibv_modify_qp(qp, &attr,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	    0, "%s", hcasim_last_error());
	cr_assert_eq(s.modifies, 1);
	cr_assert_eq(s.other_cat, 0, "events of categories not asked for");
	cr_assert(s.ordered);
	/* Removed: nothing more arrives. */
	cr_assert_eq(hcasim_trace_observe(NULL, NULL, NULL), 0);
	attr.qp_state = IBV_QPS_RESET;
	cr_assert_eq(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0);
	cr_assert_eq(s.modifies, 1);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	tb_close(&a);
	hcasim_shutdown();
}

/* hcasim_trace_field(_str): a key's value in an observer's key=value text. */
Test(scenario, trace_fields_are_read_by_key)
{
	const char *f = "qpn=0x2 psn=4096 op=0x0c link=link0.1 sq_pi=7 pi=9 start=";
	char buf[8];
	uint64_t v = 0;

	cr_assert(hcasim_trace_field(f, "qpn", &v) && v == 2);
	cr_assert(hcasim_trace_field(f, "psn", &v) && v == 4096);
	cr_assert(hcasim_trace_field(f, "pi", &v) && v == 9, "pi is not sq_pi: %llu",
		  (unsigned long long)v);
	cr_assert_not(hcasim_trace_field(f, "ps", &v), "a key is matched whole");
	cr_assert_not(hcasim_trace_field(f, "start", &v), "no number after start=");
	cr_assert_not(hcasim_trace_field(f, "dqpn", &v));
	cr_assert(hcasim_trace_field_str(f, "link", buf, sizeof(buf)));
	cr_assert_str_eq(buf, "link0.1");
	cr_assert(hcasim_trace_field_str(f, "link", buf, 5));
	cr_assert_str_eq(buf, "link", "cut at len - 1 bytes");
	cr_assert_not(hcasim_trace_field_str(f, "nosuch", buf, sizeof(buf)));
}

/* UD and UC QPs, and a random fault given by link and side with a window: the fault is
 * installed and removed at its times exactly, drops every third frame inside it (3 of the 9
 * frames of three 3-packet UC WRITEs), and outside it nothing is lost. A UD receive gets the
 * 40-byte GRH slot before the data. */
Test(scenario, ud_uc_and_a_random_fault_window)
{
	static const char text[] =
	    "[qp u0]\nhost = 0\ntype = UD\npeer = u1\n"
	    "[qp u1]\nhost = 1\ntype = UD\n"
	    "[qp c0]\nhost = 0\ntype = UC\npeer = c1\n"
	    "[qp c1]\nhost = 1\ntype = UC\npeer = c0\n"
	    "[traffic r]\nqp = u1\nop = recv\nsize = 1064\ncount = 2\n"
	    "[traffic s]\nqp = u0\nop = send\nat = 5us\nsize = 1024\ncount = 2\n"
	    "[traffic w]\nqp = c0\nop = write\nat = 5us\nsize = 3000\n"
	    "[fault lossy]\nlink = 0\nside = 0\ndrop_every = 3\n"
	    "at = 20us\nuntil = 40us\n"
	    "[traffic w2]\nqp = c0\nop = write\nat = 25us\nsize = 3000\ncount = 3\n"
	    "[expect]\ncompletion = s\nstatus = SUCCESS\n"
	    "[expect]\ncompletion = r#*\nstatus = SUCCESS\nbyte_len = 1064\n"
	    "[expect]\ndata = w\n"
	    "[expect]\ncompletion = w2\nstatus = SUCCESS\n"
	    "[expect]\ncounter = link0.side0.drops\nequals = 3\n"
	    "[expect]\ncounter = host1.rx_pkts\nequals = 11\n"
	    "[expect]\npackets = c0\nretransmission = yes\nequals = 0\n"
	    "[expect]\nevent = COMM_EST\nqp = c1\ncount = 0\n";
	char *path = tmp_ini(text), *out;
	char *c0;
	int rc = run_runner(path, false, &out);

	cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
	cr_assert_not_null(strstr(out, "result: PASS (8 of 8 expectations hold)"), "%s", out);
	c0 = qp_section(out, "c0");
	cr_assert_not_null(
	    strstr(out, "20.000000 us  action  fault lossy installed on link 0 side 0"), "%s", out);
	cr_assert_not_null(
	    strstr(out, "40.000000 us  action  fault lossy removed on link 0 side 0"), "%s", out);
	cr_assert_eq(count(c0, "link fault: drop"), 3, "%s", c0);
	cr_assert_eq(count(c0, "UC_WRITE_"), 12, "%s", c0);
	free(c0);
	unlink(path);
	free(path);
	free(out);
}
