/* hcasim-perf (testbench/bench/perf_*.c): its report has perftest's layout line by line, its
 * figures agree with each other and with the wire limit of targets.md, --json carries the same
 * figures, and bad flags are refused naming the flag. Runs build/bin/hcasim-perf. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PERF HCASIM_BUILD_DIR "/bin/hcasim-perf"

/* perftest's report (perftest_parameters.h: RESULT_LINE, RESULT_FMT*, REPORT_FMT*), typed here
 * from perftest, not from hcasim-perf. */
static const char dashes[] =
	"---------------------------------------------------------------------------------------";
static const char hdr_mb[] =
	" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
static const char hdr_gb[] =
	" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
static const char hdr_lat[] =
	" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
	"t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
#define ROW_BW " %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf"
#define ROW_LAT                                                                            \
	" %-7lu %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t" \
	"%-7.2f \t\t%-7.2f"

struct run {
	int status;   /* exit status */
	char out[65536], err[8192];
};

/* path's whole content into buf (cap bytes), which must hold it; then path is removed. */
static void take(const char *path, char *buf, size_t cap)
{
	size_t n;
	char *t = tb_slurp(path, &n);

	cr_assert_lt(n, cap, "hcasim-perf wrote %zu bytes to %s, more than the test keeps", n,
		     path);
	memcpy(buf, t, n + 1);
	free(t);
	unlink(path);
}

/* Run hcasim-perf with the NULL-terminated arguments; its stdout and stderr go to files, read
 * when it has ended (a pipe read one after the other could block it). */
static struct run *perf(const char *arg0, ...)
{
	struct run *r = calloc(1, sizeof(*r));
	const char *argv[32] = { PERF };
	char po[] = "/tmp/hcasim-perf-out-XXXXXX", pe[] = "/tmp/hcasim-perf-err-XXXXXX";
	int fo = mkstemp(po), fe = mkstemp(pe), st, n = 1;
	va_list ap;
	pid_t pid;

	cr_assert(r && fo >= 0 && fe >= 0);
	va_start(ap, arg0);
	for (const char *a = arg0; a && n < 31; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(fo, 1);
		dup2(fe, 2);
		unsetenv("HCASIM_TRACE");
		unsetenv("HCASIM_CONFIG");
		execv(PERF, (char *const *)argv);
		_exit(127);
	}
	close(fo);
	close(fe);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	take(po, r->out, sizeof(r->out));
	take(pe, r->err, sizeof(r->err));
	cr_assert(WIFEXITED(st), "hcasim-perf died: %s", r->err);
	r->status = WEXITSTATUS(st);
	return r;
}

/* The lines of the report after the column header: each row must be exactly what perftest's
 * format makes of the numbers it holds; returns the number of rows (at most max). */
struct row {
	unsigned long bytes, iters;
	double v[7];
};

static int rows(const char *out, bool lat, bool gbits, struct row *rw, int max)
{
	const char *hdr = lat ? hdr_lat : gbits ? hdr_gb : hdr_mb;
	const char *p = strstr(out, hdr), *end;
	char line[512], again[512];
	int n = 0;

	cr_assert(p, "no perftest column header '%s' in:\n%s", hdr, out);
	cr_assert(p == out || p[-1] == '\n', "the header does not start a line");
	/* the line before the header is perftest's RESULT_LINE */
	cr_assert(p - out > (long)sizeof(dashes) && !strncmp(p - sizeof(dashes), dashes,
							      sizeof(dashes) - 1));
	p += strlen(hdr);
	cr_assert_eq(*p, '\n', "the header line goes on after perftest's text");
	for (p++; *p; p = end + 1) {
		end = strchr(p, '\n');
		cr_assert(end, "unterminated line");
		cr_assert_lt(end - p, (long)sizeof(line));
		memcpy(line, p, (size_t)(end - p));
		line[end - p] = 0;
		if (!strcmp(line, dashes))
			break;
		cr_assert_lt(n, max);
		if (lat) {
			int it;

			cr_assert_eq(sscanf(line, "%lu %d %lf %lf %lf %lf %lf %lf %lf", &rw[n].bytes,
					    &it, &rw[n].v[0], &rw[n].v[1], &rw[n].v[2], &rw[n].v[3],
					    &rw[n].v[4], &rw[n].v[5], &rw[n].v[6]), 9, "row: %s", line);
			rw[n].iters = (unsigned long)it;
			snprintf(again, sizeof(again), ROW_LAT, rw[n].bytes, it, rw[n].v[0],
				 rw[n].v[1], rw[n].v[2], rw[n].v[3], rw[n].v[4], rw[n].v[5],
				 rw[n].v[6]);
		} else {
			cr_assert_eq(sscanf(line, "%lu %lu %lf %lf %lf", &rw[n].bytes, &rw[n].iters,
					    &rw[n].v[0], &rw[n].v[1], &rw[n].v[2]), 5, "row: %s",
				     line);
			snprintf(again, sizeof(again), ROW_BW, rw[n].bytes, rw[n].iters, rw[n].v[0],
				 rw[n].v[1], rw[n].v[2]);
		}
		cr_assert_str_eq(line, again, "the row is not in perftest's layout");
		n++;
	}
	cr_assert(*p, "no closing dashed line");
	cr_assert_str_eq(end + 1, "", "text after the closing line");
	return n;
}

/* targets.md: goodput limit of an RDMA WRITE of m bytes at path MTU mtu, overhead h. */
static double wire_limit_gbps(double rate, double m, double mtu, double h)
{
	return rate * m / (m + ceil(m / mtu) * h + 16);
}

Test(perf, write_bw_report_has_perftests_layout_and_stays_under_the_wire_limit)
{
	struct run *r = perf("write_bw", "-n", "100", NULL);
	struct row rw[2];
	double limit = wire_limit_gbps(100, 65536, 4096, 26), avg_gbps;

	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(!strncmp(r->out, dashes, sizeof(dashes) - 1));
	cr_assert(strstr(r->out, "RDMA_Write BW Test\n"));
	cr_assert_eq(rows(r->out, false, false, rw, 2), 1);
	cr_assert_eq(rw[0].bytes, 65536); /* perftest's default size */
	cr_assert_eq(rw[0].iters, 100);
	avg_gbps = rw[0].v[1] * 1048576.0 * 8 / 1e9; /* MB/sec is 2^20 bytes per second */
	cr_assert_leq(avg_gbps, limit * 1.0001, "%.3f Gb/s above the wire limit %.3f", avg_gbps,
		      limit);
	cr_assert_geq(avg_gbps, limit * 0.95, "%.3f Gb/s far below the limit %.3f", avg_gbps,
		      limit);
	cr_assert_geq(rw[0].v[0], rw[0].v[1] - 0.01, "peak below average");
	/* MsgRate = BW / size */
	cr_assert_float_eq(rw[0].v[2], rw[0].v[1] * 1048576.0 / 65536 / 1e6, 2e-6);
	free(r);
}

Test(perf, report_gbits_changes_the_unit_only)
{
	struct run *mb = perf("write_bw", "-n", "50", "-s", "4096", "-m", "1024", NULL);
	struct run *gb = perf("write_bw", "-n", "50", "-s", "4096", "-m", "1024",
			      "--report_gbits", NULL);
	struct row a[1], b[1];

	cr_assert_eq(mb->status, 0, "%s", mb->err);
	cr_assert_eq(gb->status, 0, "%s", gb->err);
	cr_assert(strstr(gb->out, " Mtu             : 1024[B]\n"));
	rows(mb->out, false, false, a, 1);
	rows(gb->out, false, true, b, 1);
	cr_assert_float_eq(b[0].v[1], a[0].v[1] * 1048576.0 * 8 / 1e9, 0.006);
	cr_assert_float_eq(b[0].v[2], a[0].v[2], 1e-6);
	/* within the rounding of a 2-decimal Gb/s figure */
	cr_assert_float_eq(b[0].v[2], b[0].v[1] * 125e6 / 4096 / 1e6, 0.005 * 125e6 / 4096 / 1e6 + 1e-6);
	cr_assert_leq(b[0].v[1], wire_limit_gbps(100, 4096, 1024, 26) * 1.0001);
	free(mb);
	free(gb);
}

Test(perf, roce_and_rate_move_the_wire_limit)
{
	struct run *r = perf("write_bw", "-n", "100", "-R", "--link", "roce", "--rate", "hdr",
			     NULL);
	double limit = wire_limit_gbps(200, 65536, 4096, 82);
	struct row rw[1];

	cr_assert_eq(r->status, 0, "%s", r->err);
	cr_assert(strstr(r->out, " Link type       : Ethernet\n"));
	rows(r->out, false, true, rw, 1);
	cr_assert_leq(rw[0].v[1], limit * 1.0001);
	cr_assert_geq(rw[0].v[1], limit * 0.95, "%.2f against %.2f", rw[0].v[1], limit);
	free(r);
}

Test(perf, latency_report_has_perftests_layout_and_ordered_figures)
{
	static const char *const tests[] = { "send_lat", "write_lat", "read_lat", "atomic_lat" };

	for (unsigned i = 0; i < 4; i++) {
		struct run *r = perf(tests[i], "-n", "50", NULL);
		struct row rw[1];
		double *v = rw[0].v; /* min max typical avg stdev p99 p99.9 */

		cr_assert_eq(r->status, 0, "%s: %s", tests[i], r->err);
		cr_assert_eq(rows(r->out, true, false, rw, 1), 1);
		cr_assert_eq(rw[0].bytes, i == 3 ? 8 : 2, "perftest's default size");
		cr_assert_eq(rw[0].iters, 50);
		cr_assert(v[0] <= v[2] && v[2] <= v[1] && v[0] <= v[3] && v[3] <= v[1], "%s", tests[i]);
		cr_assert(v[5] <= v[6] && v[6] <= v[1] && v[4] >= 0, "%s", tests[i]);
		/* more than two link traversals of 100 ns, less than a (very slow) 10 us */
		cr_assert(v[0] > 0.2 && v[1] < 10, "%s: %.2f..%.2f us", tests[i], v[0], v[1]);
		free(r);
	}
}

/* ---- a small JSON reader: enough to check validity and fetch numbers ---- */

static const char *ws(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

static const char *value(const char *p);

static const char *string(const char *p)
{
	if (*p != '"')
		return NULL;
	for (p++; *p && *p != '"'; p++)
		if (*p == '\\' && !*++p)
			return NULL;
	return *p ? p + 1 : NULL;
}

static const char *value(const char *p)
{
	p = ws(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';

		p = ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (close == '}') {
				p = string(ws(p));
				if (!p || *(p = ws(p)) != ':')
					return NULL;
				p++;
			}
			p = value(p);
			if (!p)
				return NULL;
			p = ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	if (*p == '"')
		return string(p);
	if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	{
		char *end;

		strtod(p, &end);
		return end == p ? NULL : end;
	}
}

static bool json_valid(const char *s)
{
	const char *e = value(s);

	return e && *ws(e) == 0;
}

/* The number after the nth (from 0) "key": in s. */
static double jnum(const char *s, const char *key, int nth)
{
	char k[64];
	const char *p = s;

	snprintf(k, sizeof(k), "\"%s\":", key);
	for (int i = 0; i <= nth; i++) {
		p = strstr(p, k);
		cr_assert(p, "no %s #%d in the JSON", key, nth);
		p += strlen(k);
	}
	return strtod(p, NULL);
}

Test(perf, json_reader_refuses_broken_json)
{
	cr_assert(json_valid("{\"a\": [1, 2.5e3, {\"b\": \"x\"}], \"c\": true}"));
	cr_assert(!json_valid("{\"a\": [1, 2,]}"));
	cr_assert(!json_valid("{\"a\": 1"));
	cr_assert(!json_valid("{\"a\": 1} x"));
}

Test(perf, json_has_the_tables_figures)
{
	struct run *t = perf("read_bw", "-n", "60", "-s", "8192", "-q", "2", NULL);
	struct run *j = perf("read_bw", "-n", "60", "-s", "8192", "-q", "2", "--json", NULL);
	struct row rw[1];

	cr_assert_eq(t->status, 0, "%s", t->err);
	cr_assert_eq(j->status, 0, "%s", j->err);
	cr_assert(json_valid(j->out), "not JSON:\n%s", j->out);
	rows(t->out, false, false, rw, 1);
	cr_assert_eq(jnum(j->out, "bytes", 0), 8192);
	cr_assert_eq(jnum(j->out, "iterations", 0), 60);
	cr_assert_eq(jnum(j->out, "qps", 0), 2);
	cr_assert_float_eq(jnum(j->out, "bw_peak", 0), rw[0].v[0], 0.005);
	cr_assert_float_eq(jnum(j->out, "bw_average", 0), rw[0].v[1], 0.005);
	cr_assert_float_eq(jnum(j->out, "msg_rate_mpps", 0), rw[0].v[2], 5e-7);
	cr_assert_float_eq(jnum(j->out, "bw_average_gbps", 0),
			   jnum(j->out, "bw_average", 0) * 1048576.0 * 8 / 1e9, 1e-6);
	cr_assert_gt(jnum(j->out, "tx_pkts", 0), 0);
	cr_assert_gt(jnum(j->out, "sim_ps", 0), 0);
	free(t);
	free(j);
}

Test(perf, json_latency_rows_hold_every_column)
{
	struct run *t = perf("send_lat", "-n", "40", "-s", "512", NULL);
	struct run *j = perf("send_lat", "-n", "40", "-s", "512", "--json", NULL);
	static const char *const keys[] = { "t_min_us", "t_max_us", "t_typical_us", "t_avg_us",
					    "t_stdev_us", "t_p99_us", "t_p999_us" };
	struct row rw[1];

	cr_assert_eq(j->status, 0, "%s", j->err);
	cr_assert(json_valid(j->out), "not JSON:\n%s", j->out);
	rows(t->out, true, false, rw, 1);
	for (int k = 0; k < 7; k++)
		cr_assert_float_eq(jnum(j->out, keys[k], 0), rw[0].v[k], 0.005, "%s", keys[k]);
	free(t);
	free(j);
}

Test(perf, same_run_twice_gives_the_same_simulated_figures)
{
	struct run *a = perf("send_bw", "-n", "80", "-s", "1024", "-q", "3", NULL);
	struct run *b = perf("send_bw", "-n", "80", "-s", "1024", "-q", "3", NULL);

	cr_assert_eq(a->status, 0, "%s", a->err);
	cr_assert_str_eq(a->out, b->out);
	free(a);
	free(b);
}

Test(perf, bidirectional_carries_both_directions)
{
	struct run *u = perf("write_bw", "-n", "100", "-R", NULL);
	struct run *b = perf("write_bw", "-n", "100", "-R", "-b", NULL);
	struct row ru[1], rb[1];

	cr_assert_eq(b->status, 0, "%s", b->err);
	rows(u->out, false, true, ru, 1);
	rows(b->out, false, true, rb, 1);
	/* full-duplex links: the sum of two streams is twice one, and no more */
	cr_assert(rb[0].v[1] > 1.9 * ru[0].v[1] && rb[0].v[1] < 2.01 * ru[0].v[1], "%.2f vs %.2f",
		  rb[0].v[1], ru[0].v[1]);
	free(u);
	free(b);
}

Test(perf, help_says_the_hosts_are_simulated)
{
	struct run *r = perf("--help", NULL);

	cr_assert_eq(r->status, 0);
	cr_assert(strstr(r->out, "no\nsockets") || strstr(r->out, "no sockets"), "%s", r->out);
	cr_assert(strstr(r->out, "SIMULATED time"));
	free(r);
}

Test(perf, bad_flags_are_refused_naming_the_flag)
{
	static const struct {
		const char *a[5];
		const char *flag;
	} cases[] = {
		{ { "write_bw", "-s", "0" }, "-s" },
		{ { "write_bw", "-n", "3" }, "-n" },
		{ { "write_bw", "-c", "XRC" }, "-c" },
		{ { "write_bw", "-m", "1000" }, "-m" },
		{ { "write_bw", "-q", "abc" }, "-q" },
		{ { "write_bw", "-t" }, "-t" },
		{ { "write_bw", "--link", "eth" }, "--link" },
		{ { "write_bw", "--rate", "fast" }, "--rate" },
		{ { "write_bw", "--cq-mod", "0" }, "--cq-mod" },
		{ { "write_bw", "--bogus" }, "--bogus" },
		{ { "write_lat", "-b" }, "-b" },
		{ { "send_lat", "-l", "4" }, "-l" },
		{ { "read_bw", "-c", "UC" }, "-c" },
		{ { "write_bw", "-c", "UD" }, "-c" },
		{ { "atomic_bw", "-s", "16" }, "-s" },
		{ { "write_bw", "-o", "4" }, "-o" },
		{ { "write_bw", "-I", "300" }, "-I" },
		{ { "read_bw", "-o", "64" }, "-o" },
		{ { "send_bw", "-c", "UD", "-s", "8192" }, "-s" },
		{ { "nosuch_bw" }, "TEST" },
		{ { "write_bw", "192.168.0.1" }, "192.168.0.1" },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *a = cases[i].a;
		struct run *r = perf(a[0], a[1], a[2], a[3], a[4], NULL);
		char want[64];

		snprintf(want, sizeof(want), "hcasim-perf: %s: ", cases[i].flag);
		cr_assert_eq(r->status, 1, "case %u (%s %s): status %d, %s", i, a[0],
			     a[1] ? a[1] : "", r->status, r->err);
		cr_assert(strstr(r->err, want), "case %u: '%s' not in: %s", i, want, r->err);
		cr_assert_str_eq(r->out, "", "case %u printed a report", i);
		free(r);
	}
}
