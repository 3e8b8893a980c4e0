/* hcasim-bench report: runs every scenario in child processes (this same binary, "run NAME"),
 * judges each figure against its target (the design's targets, sections A and B) and writes
 * docs/bench/results.md. Section A scenarios run twice: their whole output must be identical
 * (determinism). Section B scenarios run several times; figures are medians. */
#include "testbench/bench/report.h"
#include "testbench/bench/bench.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXRUNS 5

/* Every run of one scenario. */
struct sres {
	const char *name;
	int runs;              /* how many to make */
	int done;              /* how many ran and exited 0 */
	char *out[MAXRUNS];    /* stdout of each */
	double wall_s;         /* wall time of all runs */
	bool identical;        /* every run printed exactly the same */
};

#define S(n, r) { .name = (n), .runs = (r) }
static struct sres scen[] = {
	S("write-ib-4096", 2), S("write-ib-1024", 2), S("write-roce-4096", 2),
	S("write-roce-1024", 2), S("msgrate-ib", 2), S("msgrate-roce", 2), S("latency", 2),
	S("latency-slope", 2), S("loop-latency", 2), S("loop-write", 2), S("read16", 2),
	S("ack-timeout", 2), S("rnr", 2),
	S("pkts4k", 5), S("msgs64", 5), S("rtl", 5), S("idle", 5), S("busypoll", 5), S("qpscale", 3), S("qp64k", 3), S("fabric", 3),
};
#define NSCEN (sizeof(scen) / sizeof(scen[0]))

static struct sres *scen_get(const char *name)
{
	for (size_t i = 0; i < NSCEN; i++)
		if (!strcmp(scen[i].name, name))
			return &scen[i];
	return NULL;
}

static char *slurp(FILE *p)
{
	size_t cap = 4096, len = 0, n;
	char *s = malloc(cap);

	while (s && (n = fread(s + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 == cap)
			s = realloc(s, cap *= 2);
	}
	if (!s)
		bs_die("out of memory");
	s[len] = 0;
	return s;
}

static void run_all(const char *self)
{
	for (size_t i = 0; i < NSCEN; i++) {
		struct sres *r = &scen[i];
		double w0 = bs_wall();

		for (int k = 0; k < r->runs; k++) {
			char cmd[PATH_MAX + 64];
			FILE *p;
			int st;

			fprintf(stderr, "hcasim-bench: [%zu/%zu] %s, run %d of %d\n", i + 1, NSCEN,
				r->name, k + 1, r->runs);
			snprintf(cmd, sizeof(cmd), "'%s' run %s", self, r->name);
			p = popen(cmd, "r");
			if (!p)
				bs_die("popen %s", cmd);
			r->out[k] = slurp(p);
			st = pclose(p);
			if (st == 0)
				r->done++;
			else
				fprintf(stderr, "hcasim-bench: %s failed (status %d)\n",
					r->name, st);
		}
		r->wall_s = bs_wall() - w0;
		r->identical = r->done == r->runs;
		for (int k = 1; k < r->runs && r->identical; k++)
			r->identical = !strcmp(r->out[0], r->out[k]);
	}
}

/* The value of FIG key in one run's output. */
static bool fig_in(const char *text, const char *key, double *v)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, "FIG ", 4) && !strncmp(l + 4, key, kl) && l[4 + kl] == ' ') {
			*v = strtod(l + 5 + kl, NULL);
			return true;
		}
	return false;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of FIG key over the runs of scenario name; the values, in run order, into all. */
static bool median(const char *name, const char *key, double *med, double *all, int *n)
{
	struct sres *r = scen_get(name);
	double v[MAXRUNS];
	int k = 0;

	if (!r || r->done != r->runs)
		return false;
	for (int i = 0; i < r->runs; i++)
		if (fig_in(r->out[i], key, &v[k]))
			k++;
	if (k != r->runs)
		return false;
	if (all)
		memcpy(all, v, sizeof(double) * (size_t)k);
	if (n)
		*n = k;
	qsort(v, (size_t)k, sizeof(v[0]), cmp_double);
	*med = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
	return true;
}

/* ---- rows ---- */

struct row;
typedef bool (*judge_fn)(const struct row *, char *meas, size_t ml);

struct row {
	char sect;            /* 'A' or 'B' */
	const char *figure;   /* what is measured */
	const char *target;   /* the target, as targets.md states it for this row */
	const char *scen;     /* scenario (NULL: not measured) */
	const char *key;      /* its FIG */
	judge_fn judge;       /* fills the measured column; true = met */
	double a, b;          /* the judge's parameters */
	const char *unit;     /* printf format of the value (judges that use it) */
	double scale;         /* value x scale is shown */
};

static double g(const struct row *r, const char *suffix)
{
	char key[96];
	double v;

	snprintf(key, sizeof(key), "%s%s", r->key, suffix);
	if (!median(r->scen, key, &v, NULL, NULL))
		return -1;
	return v;
}

/* >= a x limit and never above the limit (beyond the timestamps' resolution). */
static bool j_write(const struct row *r, char *m, size_t ml)
{
	double v = g(r, ""), lim = g(r, ".limit"), res = g(r, ".res");

	snprintf(m, ml, "%.4f Gb/s = %.4f %% of the wire limit %.4f Gb/s%s", v, v / lim * 100, lim,
		 v > lim ? " (above it by less than the 2 ns timestamp resolution)" : "");
	return v >= r->a * lim && v <= lim + res;
}

/* >= a x min(wire, pipeline stage rate). */
static bool j_msgrate(const struct row *r, char *m, size_t ml)
{
	double v = g(r, ""), wire = g(r, ".wire"), pipe = g(r, ".pipe");
	double t = wire < pipe ? wire : pipe;

	snprintf(m, ml, "%.3f M msg/s = %.1f %% of min(wire %.2f, requester stage rate %.2f)", v,
		 v / t * 100, wire, pipe);
	return v >= r->a * t;
}

/* a <= v x scale <= b. */
static bool j_range(const struct row *r, char *m, size_t ml)
{
	double v = g(r, "") * r->scale;

	snprintf(m, ml, r->unit, v);
	return v >= r->a && v <= r->b;
}

/* |v - a| <= b % of a. */
static bool j_within(const struct row *r, char *m, size_t ml)
{
	double v = g(r, ""), d = (v - r->a) / r->a * 100;
	size_t n = (size_t)snprintf(m, ml, r->unit, v);

	if (n < ml)
		snprintf(m + n, ml - n, " (%+.2f %% from %g)", d, r->a);
	return d <= r->b && d >= -r->b;
}

/* |v - expect| <= b % of expect; values in unit (NULL: Gb/s). */
static bool j_read(const struct row *r, char *m, size_t ml)
{
	double v = g(r, ""), e = g(r, ".expect"), d = (v - e) / e * 100;
	const char *u = r->unit ? r->unit : "Gb/s";

	snprintf(m, ml, "%.3f %s against %.3f %s (%+.2f %%)", v, u, e, u, d);
	return d <= r->b && d >= -r->b;
}

/* Largest error (FIG key.max_err_ps) <= a ps, and nothing wrong (FIG key.bad_*) . */
static bool j_exact(const struct row *r, char *m, size_t ml)
{
	double err = g(r, ".max_err_ps"), bad = g(r, r->unit);

	snprintf(m, ml, "largest error %.0f ps; %.0f case(s) with a wrong count or status", err,
		 bad);
	return err >= 0 && err <= r->a && bad == 0;
}

/* Median of several runs: >= a (b = 0) or < a (b = 1). */
static bool j_wall(const struct row *r, char *m, size_t ml)
{
	double med, all[MAXRUNS];
	int n = 0;
	size_t off;

	if (!median(r->scen, r->key, &med, all, &n))
		return false;
	off = (size_t)snprintf(m, ml, "median of %d: ", n);
	off += (size_t)snprintf(m + off, ml - off, r->unit, med * r->scale);
	off += (size_t)snprintf(m + off, ml - off, " (runs:");
	for (int i = 0; i < n && off < ml; i++) {
		off += (size_t)snprintf(m + off, ml - off, " ");
		if (off < ml)
			off += (size_t)snprintf(m + off, ml - off, r->unit, all[i] * r->scale);
	}
	if (off < ml)
		snprintf(m + off, ml - off, ")");
	return r->b ? med < r->a : med >= r->a;
}

static const struct row rows[] = {
	{ 'A', "RC WRITE 64 KiB goodput, IB, MTU 4096, 100 Gb/s",
	  ">= 99.0 % of the wire limit (99.35 Gb/s), never above it", "write-ib-4096",
	  "write.ib.4096", j_write, 0.99, 0, NULL, 1 },
	{ 'A', "RC WRITE 64 KiB goodput, IB, MTU 1024", ">= 99.0 % of the limit (97.50 Gb/s)",
	  "write-ib-1024", "write.ib.1024", j_write, 0.99, 0, NULL, 1 },
	{ 'A', "RC WRITE 64 KiB goodput, RoCEv2, MTU 4096",
	  ">= 99.0 % of the limit (98.01 Gb/s)", "write-roce-4096", "write.roce.4096", j_write,
	  0.99, 0, NULL, 1 },
	{ 'A', "RC WRITE 64 KiB goodput, RoCEv2, MTU 1024",
	  ">= 99.0 % of the limit (92.57 Gb/s)", "write-roce-1024", "write.roce.1024", j_write,
	  0.99, 0, NULL, 1 },
	{ 'A', "64 B message rate, one port, 16 QPs, IB",
	  ">= 99 % of min(wire limit 117.9 M/s, the pipeline's configured rate)", "msgrate-ib",
	  "msgrate.ib", j_msgrate, 0.99, 0, NULL, 1 },
	{ 'A', "64 B message rate, one port, 16 QPs, RoCEv2",
	  ">= 99 % of min(wire limit 77.2 M/s, the pipeline's configured rate)", "msgrate-roce",
	  "msgrate.roce", j_msgrate, 0.99, 0, NULL, 1 },
	{ 'A', "2 B send latency (half round trip), back to back, default parameters",
	  "0.6-0.9 us", "latency", "lat.send2", j_range, 0.6, 0.9, "%.3f us", 1e-3 },
	{ 'A', "latency slope with size, multi-packet (16-256 KiB)",
	  "8 bits / link rate per byte (80 ps/B) within 2 %", "latency-slope", "lat.slope.large",
	  j_within, 80.0, 2.0, "%.2f ps/B", 1 },
	{ 'A', "latency slope with size, within one packet (64 B-4 KiB)",
	  "8 bits / link rate per byte (80 ps/B) within 2 %", "latency-slope", "lat.slope.small",
	  j_within, 80.0, 2.0, "%.2f ps/B", 1 },
	{ 'A', "loopback: 2 B send latency (half round trip) between two QPs of one HCA, default "
	  "parameters", "the back-to-back figure of the same boot - (30 B x 80 ps + 100 ns) + (30 B x "
	  "40 ps + 60 ns), within 1 % (docs/loopback.md)", "loop-latency", "lat.loop2", j_read,
	  0, 1.0, "ns", 1 },
	{ 'A', "loopback: RC WRITE 64 KiB goodput between two QPs of one HCA, IB, MTU 4096",
	  "the loopback limit hca.loopback_gbps x 64 KiB / (64 KiB + 16 x 26 B + 16 B) = "
	  "198.69 Gb/s, within 1 % (docs/loopback.md)", "loop-write", "loop.write", j_read, 0,
	  1.0, NULL, 1 },
	{ 'A', "RDMA READ 256 B, one QP, 16 outstanding (the adapter: host costs 0; with the default "
	  "host costs in the details)", "min(link, 16 x size / RTT) within 2 %",
	  "read16", "read16.256", j_read, 0, 2.0, NULL, 1 },
	{ 'A', "RDMA READ 1 KiB, one QP, 16 outstanding (the adapter: host costs 0; with the default "
	  "host costs in the details)", "min(link, 16 x size / RTT) within 2 %",
	  "read16", "read16.1024", j_read, 0, 2.0, NULL, 1 },
	{ 'A', "RDMA READ 4 KiB, one QP, 16 outstanding (the adapter: host costs 0; with the default "
	  "host costs in the details)", "min(link, 16 x size / RTT) within 2 %",
	  "read16", "read16.4096", j_read, 0, 2.0, NULL, 1 },
	{ 'A', "RDMA READ 64 KiB, one QP, 16 outstanding (the adapter: host costs 0; with the default "
	  "host costs in the details)", "min(link, 16 x size / RTT) within 2 %",
	  "read16", "read16.65536", j_read, 0, 2.0, NULL, 1 },
	{ 'A', "ACK timeout, 20 (timeout, retry_cnt) pairs",
	  "4.096 us x 2^timeout after the last bit, exact (+- one core cycle, 2 000 ps); "
	  "retry_cnt + 1 attempts",
	  "ack-timeout", "timeout", j_exact, 2000, 0, ".bad_cases", 1 },
	{ 'A', "RNR NAK delay, all 32 min_rnr_timer codes", "the IBA table 45 value, exact", "rnr",
	  "rnr", j_exact, 0, 0, ".bad_codes", 1 },
	{ 'B', "simulated 4 KiB packets per wall second, pure C, one core", ">= 3 M/s", "pkts4k",
	  "pkts4k.per_wall_s", j_wall, 3e6, 0, "%.4g M/s", 1e-6 },
	{ 'B', "64 B messages per wall second, pure C", ">= 5 M/s", "msgs64", "msgs64.per_wall_s",
	  j_wall, 5e6, 0, "%.4g M/s", 1e-6 },
	{ 'B', "ratio of simulated to wall time, the 4 KiB stream of pkts4k (a saturated 100 Gb/s "
	  "link)", ">= 1 (real time; the same bound as 3 M packets/s)", "pkts4k",
	  "pkts4k.sim_over_wall", j_wall, 1.0, 0, "%.4g", 1 },
	{ 'B', "with Verilated RTL blocks in the loop (every block with an RTL twin in rtl mode: sched, cqe, "
	  "psn, mkey, timers; wall time "
	  "of the msgs64 and pkts4k streams against model mode, the larger ratio)",
	  "<= 4x slower than pure C", "rtl", "rtl.ratio", j_wall, 4.0, 1, "%.3gx", 1 },
	{ 'B', "idle skipping: 8.59 s of simulated retry exhaustion (timeout 18, retry_cnt 7)",
	  "< 0.1 s wall", "idle", "idle.wall_s", j_wall, 0.1, 1, "%.0f us", 1e6 },
	{ 'B', "busy polling: a plain ibv_poll_cq loop waits through the same 8.59 s (exact "
	  "skipping, host.poll_skip 1; poll by poll it took ~6.7 s wall for 430 M polls)",
	  "< 0.1 s wall", "busypoll", "busypoll.wall_s", j_wall, 0.1, 1, "%.0f us", 1e6 },
	{ 'B', "wall cost per packet, 16 K active QPs / 1 active QP (64 B WRITEs; a QP context "
	  "cache holding every QP, so that each count simulates the same work per packet; "
	  "the default 256-entry cache in the details)",
	  "<= 1.5x", "qpscale", "qpscale.ratio", j_wall, 1.5, 1, "%.3gx", 1 },
	{ 'B', "two hosts in two processes of a fabric against one process: 4 KiB packets per "
	  "wall second of the pkts4k stream, two processes over one (side by side in one run; "
	  "both rates in the details)", "goal >= 1 (no slower), stretch 1.5", "fabric",
	  "fabric.pkts4k.ratio", j_wall, 1.0, 0, "%.3gx", 1 },
	{ 'B', "the same for 64 B messages (the msgs64 stream), two processes over one",
	  "goal >= 1 (no slower), stretch 1.5", "fabric", "fabric.msgs64.ratio", j_wall, 1.0, 0,
	  "%.3gx", 1 },
	{ 'B', "synchronisation cost of the pkts4k stream in two processes: SYNC messages host 0 "
	  "writes per simulated microsecond", "reported", "fabric",
	  "fabric.pkts4k.syncs_per_sim_us", j_wall, 0, 0, "%.3g", 1 },
	{ 'B', "synchronisation cost of the pkts4k stream in two processes: wall time host 0 "
	  "waits for its peer per simulated microsecond", "reported", "fabric",
	  "fabric.pkts4k.wait_ns_per_sim_us", j_wall, 0, 0, "%.0f ns", 1 },
	{ 'B', "64 K QPs (32 K RC pairs) created and connected: wall time", "< 2 s wall", "qp64k",
	  "qp64k.wall_s", j_wall, 2.0, 1, "%.3g s", 1 },
	{ 'B', "64 K QPs (32 K RC pairs) created and connected: peak RSS (VmHWM)", "< 512 MiB",
	  "qp64k", "qp64k.rss_mib", j_wall, 512, 1, "%.0f MiB", 1 },
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

/* ---- output ---- */

static void out(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (f) {
		va_start(ap, fmt);
		vfprintf(f, fmt, ap);
		va_end(ap);
	}
}

static void first_line_of(const char *cmd, char *buf, size_t len)
{
	FILE *p = popen(cmd, "r");

	buf[0] = 0;
	if (!p)
		return;
	if (fgets(buf, (int)len, p))
		buf[strcspn(buf, "\n")] = 0;
	pclose(p);
}

static void machine(FILE *f)
{
	char cpu[256] = "?", mem[64] = "?", commit[64], dirty[8], date[64];
	struct utsname u;
	time_t now = time(NULL);
	FILE *c = fopen("/proc/cpuinfo", "r");
	char line[512];

	while (c && fgets(line, sizeof(line), c))
		if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
			snprintf(cpu, sizeof(cpu), "%s", strchr(line, ':') + 2);
			cpu[strcspn(cpu, "\n")] = 0;
			break;
		}
	if (c)
		fclose(c);
	c = fopen("/proc/meminfo", "r");
	while (c && fgets(line, sizeof(line), c))
		if (!strncmp(line, "MemTotal:", 9)) {
			snprintf(mem, sizeof(mem), "%.1f GiB",
				 (double)strtol(line + 9, NULL, 10) / (1024.0 * 1024.0));
			break;
		}
	if (c)
		fclose(c);
	uname(&u);
	first_line_of("git rev-parse --short HEAD 2>/dev/null", commit, sizeof(commit));
	/* results.md itself is being rewritten: it does not count as a change. */
	first_line_of("git status --porcelain --untracked-files=no -- . ':!docs/bench/results.md' "
		      "2>/dev/null | head -1 | sed 's/.*/+/'", dirty, sizeof(dirty));
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	out(f, "| | |\n|---|---|\n");
	out(f, "| machine | %s, %ld cores online, %s RAM, %s %s %s |\n", cpu,
	    sysconf(_SC_NPROCESSORS_ONLN), mem, u.sysname, u.release, u.machine);
	out(f, "| date | %s |\n", date);
	out(f, "| commit | %s%s |\n", commit[0] ? commit : "?",
	    dirty[0] ? " (with uncommitted changes)" : "");
	out(f, "| compiler | gcc %s, `-std=c11 -O2 -fno-semantic-interposition` (the Makefile's CFLAGS) |\n", __VERSION__);
	out(f, "| command | `make bench` = "
	       "`build/bin/hcasim-bench report docs/bench/results.md` |\n");
}

static void table(FILE *f, char sect, int *met, int *total)
{
	out(f, "| figure | target | measured | verdict | command |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];
		struct sres *s = r->scen ? scen_get(r->scen) : NULL;
		char m[512], v[64];

		if (r->sect != sect)
			continue;
		if (!r->scen) {
			snprintf(m, sizeof(m), "not measured");
			snprintf(v, sizeof(v), "not measured");
		} else if (!s || s->done != s->runs) {
			snprintf(m, sizeof(m), "not measured: the scenario failed (%d of %d runs)",
				 s ? s->done : 0, s ? s->runs : 0);
			snprintf(v, sizeof(v), "**NOT met** (failed)");
			(*total)++;
		} else {
			bool ok = r->judge(r, m, sizeof(m));

			if (sect == 'A' && !s->identical)
				ok = false;
			snprintf(v, sizeof(v), "%s", ok ? "met" : "**NOT met**");
			*met += ok;
			(*total)++;
		}
		out(f, "| %s | %s | %s | %s | %s%s%s |\n", r->figure, r->target, m, v,
		    r->scen ? "`build/bin/hcasim-bench run " : "-", r->scen ? r->scen : "",
		    r->scen ? "`" : "");
	}
}

static void details(FILE *f, char sect)
{
	for (size_t i = 0; i < NSCEN; i++) {
		struct sres *s = &scen[i];
		bool in_sect = false;

		for (size_t k = 0; k < NROWS; k++)
			if (rows[k].scen && !strcmp(rows[k].scen, s->name))
				in_sect = rows[k].sect == sect;
		if (!in_sect)
			continue;
		out(f, "- `%s` (%d runs, %.2f s wall in all%s):\n", s->name, s->runs, s->wall_s,
		    sect == 'A' ? (s->identical ? ", output identical in every run"
						: ", **output differed between runs**")
				: "; details of the first run");
		for (const char *l = s->out[0]; l && *l;) {
			const char *e = strchr(l, '\n');
			size_t n = e ? (size_t)(e - l) : strlen(l);

			if (n > 5 && !strncmp(l, "INFO ", 5)) {
				const char *t = memchr(l + 5, ' ', n - 5);

				if (t)
					out(f, "  - %.*s\n", (int)(n - (size_t)(t + 1 - l)), t + 1);
			}
			l = e ? e + 1 : NULL;
		}
	}
}

int bench_report(const char *path)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	FILE *f = NULL;
	int met = 0, total = 0, failed = 0;
	bool all_identical = true;

	if (n <= 0)
		bs_die("readlink /proc/self/exe");
	self[n] = 0;
	run_all(self);
	for (size_t i = 0; i < NSCEN; i++) {
		failed += scen[i].done != scen[i].runs;
		if (scen[i].runs == 2)
			all_identical &= scen[i].identical;
	}
	if (path && !(f = fopen(path, "w")))
		bs_die("cannot write %s", path);
	out(f, "# hcasim benchmark results\n\n");
	out(f, "Generated by `make bench` from a real run; do not edit by hand. What each "
	       "benchmark does, how to run one alone, and why the figures that miss their target "
	       "miss it: "
	       "[README.md](README.md).\n\n");
	machine(f);
	out(f, "\n## A. Fidelity of the modelled hardware (simulated time)\n\n");
	out(f, "Wire limit of an RDMA WRITE of M bytes at path MTU P: N = ceil(M/P) packets, "
	       "M + N*h + 16 bytes on the wire, goodput = rate x M / wire bytes, h = 26 B on "
	       "InfiniBand and 82 B on RoCEv2, rate 100.0 Gb/s (EDR 4x). Times come from "
	       "`hcasim_now_ps()`, CQE timestamps (`ibv_create_cq_ex`) and trace events.\n\n");
	table(f, 'A', &met, &total);
	out(f, "\n**Determinism.** Every section A scenario ran twice, each time in a new process; "
	       "%s\n\n",
	    all_identical ? "the two outputs (every figure and detail line, to the last digit and "
			    "picosecond) were identical for every scenario."
			  : "**some outputs differed** (see the details below); a row whose runs "
			    "differ is marked NOT met.");
	out(f, "\n## B. Simulator speed (wall clock, this machine)\n\n");
	out(f, "Wall times from `clock_gettime(CLOCK_MONOTONIC)` inside the benchmark program, "
	       "around the measured phase only (boot and setup excluded unless the row says so); "
	       "medians of several runs, each in a new process, with the other engineers' work "
	       "sharing the machine's cores. Ratios are taken within one run, side by side.\n\n");
	table(f, 'B', &met, &total);
	out(f, "\n**%d of %d measured figures met their target.**\n", met, total);
	out(f, "\n## Details\n\n### A\n\n");
	details(f, 'A');
	out(f, "\n### B\n\n");
	details(f, 'B');
	if (f)
		fclose(f);
	return failed ? 1 : 0;
}
