/* Waves (docs/waves.md): the model's VCD.
 *   - hcasim-run with WAVES writes a dump that hcasim-vcdcheck accepts, naming the documented
 *     signals, and its trace (every category) and pcap are byte for byte those of a run
 *     without waves; the same for a scenario's report;
 *   - the dump tells the story: timeout_exhaustion's QP sees retry_cnt + 1 timer expiries,
 *     retry_left count down to 0 and the QP end in ERR; lost_ack's responder classifies the
 *     resent request as a duplicate in the psn block's transactions;
 *   - hcasim_waves() before and after boot, and its errors (naming the path), WAVES=<bad>;
 *   - hcasim-vcdcheck rejects undeclared ids, time going back, too-wide values, scalar
 *     changes of vectors, a missing $enddefinitions, garbage;
 *   - the committed layouts open headlessly (xvfb-run + gtkwave Tcl): every signal of
 *     waves/qp_lifecycle.gtkw is found in a real dump, and the window is grabbed to a PNG. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BIN HCASIM_BUILD_DIR "/bin/"
#define SCENARIOS HCASIM_SRC_DIR "/sim/scenarios/"
#define LAYOUTS HCASIM_SRC_DIR "/waves/"

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/hcasim-waves-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	tb_rm_tmpdir(dir);
}

static void assert_same_file(const char *a, const char *b)
{
	tb_same_file("two runs' dumps", a, b, 1);
}

/* ---- a small VCD reader: the value changes of one variable ---- */

struct wave {
	size_t n;
	uint64_t t[4096], v[4096]; /* v = UINT64_MAX for x */
};

static void read_wave(const char *path, const char *name, struct wave *w)
{
	char *buf = tb_slurp(path, NULL), *save = NULL, *ln;
	char scope[512] = "", id[128] = "";
	uint64_t t = 0;
	bool body = false;

	memset(w, 0, sizeof(*w));
	for (ln = strtok_r(buf, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
		char a[128], b[128];

		if (!body) {
			if (sscanf(ln, "$scope module %127s $end", a) == 1) {
				if (*scope)
					strcat(scope, ".");
				strcat(scope, a);
			} else if (!strncmp(ln, "$upscope", 8)) {
				char *dot = strrchr(scope, '.');

				*(dot ? dot : scope) = 0;
			} else if (sscanf(ln, "$var wire %*u %127s %127s", a, b) == 2) {
				char full[768];

				snprintf(full, sizeof(full), "%s.%s", scope, b);
				if (!strcmp(full, name))
					snprintf(id, sizeof(id), "%s", a);
			} else if (!strncmp(ln, "$enddefinitions", 15)) {
				body = true;
				cr_assert(id[0], "%s: no variable %s", path, name);
			}
			continue;
		}
		if (ln[0] == '#') {
			t = strtoull(ln + 1, NULL, 10);
		} else if (ln[0] == 'b' && sscanf(ln, "b%127s %127s", a, b) == 2 && !strcmp(b, id)) {
			cr_assert_lt(w->n, 4096);
			w->t[w->n] = t;
			w->v[w->n++] = a[0] == 'x' ? UINT64_MAX : strtoull(a, NULL, 2);
		} else if (strchr("01x", ln[0]) && !strcmp(ln + 1, id)) {
			cr_assert_lt(w->n, 4096);
			w->t[w->n] = t;
			w->v[w->n++] = ln[0] == 'x' ? UINT64_MAX : (uint64_t)(ln[0] - '0');
		}
	}
	free(buf);
}

static size_t rises(const struct wave *w)
{
	size_t n = 0;

	for (size_t i = 0; i < w->n; i++)
		n += w->v[i] == 1 && (i == 0 || w->v[i - 1] != 1);
	return n;
}

static void vcdcheck(const char *path, const char *required)
{
	char cmd[2048], *out;
	int st;

	snprintf(cmd, sizeof(cmd), BIN "hcasim-vcdcheck %s %s 2>&1", required, path);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "hcasim-vcdcheck rejected %s: %s", path, out);
	cr_assert(strstr(out, "ok: "), "%s", out);
	free(out);
}

/* ---- the dump and the simulation ---- */

Test(waves, default_run_dump_is_valid_and_leaves_trace_and_pcap_unchanged)
{
	char cmd[2048], a[256], b[256], vcd[256], *out;
	int st;

	make_dir();
	snprintf(vcd, sizeof(vcd), "%s/run.vcd", dir);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && { WAVES=%s HCASIM_TRACE='*' HCASIM_TRACE_FILE=%s/with.trace "
		 BIN "hcasim-run %s/with >%s/with.out 2>&1 || { cat with.out; exit 1; }; } && "
		 "{ env -u WAVES HCASIM_TRACE='*' HCASIM_TRACE_FILE=%s/without.trace "
		 BIN "hcasim-run %s/without >%s/without.out 2>&1 || { cat without.out; exit 2; }; }",
		 dir, vcd, dir, dir, dir, dir, dir, dir);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "hcasim-run %s waves failed (status %d); its output:\n%s",
		     st == 1 ? "with" : "without", st, out);
	free(out);
	snprintf(a, sizeof(a), "%s/with.trace", dir);
	snprintf(b, sizeof(b), "%s/without.trace", dir);
	assert_same_file(a, b);
	snprintf(a, sizeof(a), "%s/with.link0.pcap", dir);
	snprintf(b, sizeof(b), "%s/without.link0.pcap", dir);
	assert_same_file(a, b);
	vcdcheck(vcd, "-r hca0.qp2.state -r hca0.qp2.sq_pi -r hca0.qp2.sq_next -r hca0.qp2.sq_done "
		      "-r hca0.qp2.sq_psn -r hca0.qp2.acked_psn -r hca0.qp2.epsn -r hca1.qp2.rq_pi "
		      "-r hca1.qp2.rq_ci -r hca0.qp2.retry_left -r hca0.qp2.rnr_left "
		      "-r hca0.qp2.timer_on -r hca0.qp2.timer_expired -r hca0.qp2.rnr_wait "
		      "-r hca0.cq1.pi -r hca0.cq1.ci -r hca0.db.qpn -r hca0.db.pi -r hca0.db.strobe "
		      "-r hca0.qpc.hits -r hca0.qpc.misses -r hca0.sched.txn.req_qpn "
		      "-r hca0.sched.txn.resp_verdict -r hca0.cqe.txn.resp_new_pi "
		      "-r hca1.cqe.txn.req_cqn");
	{
		struct wave w;

		/* Five send WQEs of the workload: posted, started and completed. */
		read_wave(vcd, "hca0.qp2.sq_done", &w);
		cr_assert(w.n > 0 && w.v[w.n - 1] == 5, "sq_done ends at %llu",
			  (unsigned long long)(w.n ? w.v[w.n - 1] : 0));
		read_wave(vcd, "hca0.qp2.state", &w);
		cr_assert(w.n > 0 && w.v[w.n - 1] == 3, "QP 2 of hca0 does not end in RTS");
		read_wave(vcd, "hca0.db.strobe", &w);
		cr_assert_eq(rises(&w), 5, "SQ and RQ doorbells of hca0: %zu strobes", rises(&w));
	}
	remove_dir();
}

/* Run a scenario with and without waves: same report; returns the dump's path in vcd. */
static void run_scenario(const char *ini, char *vcd, size_t len)
{
	char cmd[2048], a[256], b[256], *out;
	int st;

	make_dir();
	snprintf(vcd, len, "%s/scn.vcd", dir);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && { env -u HCASIM_CONFIG -u HCASIM_TRACE WAVES=%s " BIN
		 "hcasim-scenario " SCENARIOS "%s >%s/with.out 2>&1 || { cat with.out; exit 1; }; } && "
		 "{ env -u HCASIM_CONFIG -u HCASIM_TRACE -u WAVES " BIN
		 "hcasim-scenario " SCENARIOS "%s >%s/without.out 2>&1 || "
		 "{ cat without.out; exit 2; }; }",
		 dir, vcd, ini, dir, ini, dir);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "hcasim-scenario %s %s waves failed (status %d); its output:\n%s", ini,
		     st == 1 ? "with" : "without", st, out);
	free(out);
	snprintf(a, sizeof(a), "%s/with.out", dir);
	snprintf(b, sizeof(b), "%s/without.out", dir);
	assert_same_file(a, b);
	vcdcheck(vcd, "");
}

Test(waves, timeout_exhaustion_shows_each_expiry_and_the_qp_going_to_err)
{
	char vcd[256];
	struct wave w;
	size_t i;

	run_scenario("timeout_exhaustion.ini", vcd, sizeof(vcd));
	/* retry_cnt 3: four expiries, retry_left 3, 2, 1, 0, then ERR with one CQE. */
	read_wave(vcd, "hca0.qp2.timer_expired", &w);
	cr_assert_eq(rises(&w), 4, "%zu timer expiries", rises(&w));
	read_wave(vcd, "hca0.qp2.retry_left", &w);
	for (i = 0; i < w.n && w.v[i] != 3; i++)
		;
	cr_assert(i + 3 < w.n && w.v[i + 1] == 2 && w.v[i + 2] == 1 && w.v[i + 3] == 0,
		  "retry_left does not count 3, 2, 1, 0");
	read_wave(vcd, "hca0.qp2.state", &w);
	cr_assert_eq(w.v[w.n - 1], 6, "QP a ends in state %llu, not ERR",
		     (unsigned long long)w.v[w.n - 1]);
	read_wave(vcd, "hca0.cq1.pi", &w);
	cr_assert_eq(w.v[w.n - 1], 1);
	read_wave(vcd, "hca0.qp2.timer_on", &w);
	cr_assert_eq(rises(&w), 4, "the timer was armed %zu times", rises(&w));
	cr_assert_eq(w.v[w.n - 1], 0, "the timer is still on at the end");
	remove_dir();
}

Test(waves, lost_ack_duplicate_shows_in_the_psn_block_transactions)
{
	char vcd[256];
	struct wave cls, valid, psn;
	size_t dup = 0;

	run_scenario("lost_ack.ini", vcd, sizeof(vcd));
	read_wave(vcd, "hca1.psn.txn.resp_cls", &cls);
	read_wave(vcd, "hca1.psn.txn.resp_valid", &valid);
	read_wave(vcd, "hca1.psn.txn.req_psn", &psn);
	cr_assert_eq(rises(&valid), 2, "%zu classifications of the two copies of PSN 256",
		     rises(&valid));
	for (size_t i = 0; i < cls.n; i++)
		dup += cls.v[i] == 1;
	cr_assert_eq(dup, 1, "the resent request is not classified DUPLICATE once");
	cr_assert(psn.n >= 1 && psn.v[psn.n - 1] == 256, "req_psn is not 256");
	remove_dir();
}

/* ---- the API ---- */

Test(waves, api_before_and_after_boot_and_errors_name_the_path)
{
	char path[256], bad[256];
	struct tb_dev t;
	struct wave w;

	make_dir();
	unsetenv("WAVES");
	snprintf(path, sizeof(path), "%s/api.vcd", dir);
	snprintf(bad, sizeof(bad), "%s/no/such/dir/x.vcd", dir);
	/* before boot: taken at boot */
	cr_assert_eq(hcasim_waves(path), 0);
	tb_open(&t, 0);
	cr_assert_eq(hcasim_waves(bad), -ENOENT);
	cr_assert(strstr(hcasim_last_error(), bad), "error does not name the path: %s",
		  hcasim_last_error());
	cr_assert_eq(hcasim_waves(NULL), 0);
	vcdcheck(path, "-r hca0.qpc.hits -r hca1.qpc.misses -r hca0.db.strobe");
	read_wave(path, "hca0.qpc.misses", &w);
	cr_assert(w.n >= 1);
	/* after boot: from now on */
	cr_assert_eq(hcasim_waves(path), 0);
	hcasim_run_for_ps(1000000);
	tb_close(&t);
	hcasim_shutdown();
	vcdcheck(path, "-r hca0.qpc.hits");
	/* WAVES=<unwritable> fails the boot naming the path */
	setenv("WAVES", bad, 1);
	cr_assert_eq(hcasim_boot(), -ENOENT);
	cr_assert(strstr(hcasim_last_error(), bad) && strstr(hcasim_last_error(), "WAVES"),
		  "%s", hcasim_last_error());
	unsetenv("WAVES");
	hcasim_shutdown();
	remove_dir();
}

/* ---- the checker ---- */

static void expect_rejected(const char *name, const char *text, const char *why)
{
	char path[256], cmd[512], *out;
	FILE *f;
	int st;

	snprintf(path, sizeof(path), "%s/%s.vcd", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), BIN "hcasim-vcdcheck %s 2>&1", path);
	out = tb_run_cmd(cmd, &st);
	if (!why) {
		cr_assert_eq(st, 0, "%s: %s", name, out);
	} else {
		cr_assert_eq(st, 1, "%s accepted: %s", name, out);
		cr_assert(strstr(out, why) && strstr(out, path), "%s: '%s' does not say '%s'",
			  name, out, why);
	}
	free(out);
}

#define HDR "$timescale 1ps $end\n$scope module top $end\n$var wire 1 ! a $end\n" \
	    "$var wire 4 \" v [3:0] $end\n$upscope $end\n"

Test(waves, vcdcheck_accepts_a_valid_file_and_rejects_each_defect)
{
	make_dir();
	expect_rejected("valid", HDR "$enddefinitions $end\n#0\n$dumpvars\nx!\nbx \"\n$end\n"
				     "#5\n1!\nb1010 \"\n#7\n0!\n", NULL);
	expect_rejected("undeclared", HDR "$enddefinitions $end\n#0\n1?\n", "no $var declares");
	expect_rejected("backwards", HDR "$enddefinitions $end\n#5\n1!\n#3\n0!\n",
			"does not increase");
	expect_rejected("wide", HDR "$enddefinitions $end\n#0\nb10101 \"\n", "more than the 4");
	expect_rejected("scalar_of_vector", HDR "$enddefinitions $end\n#0\n1\"\n",
			"multi-bit variable");
	expect_rejected("no_enddefinitions", HDR "#0\n1!\n", "expected a $keyword");
	expect_rejected("no_enddefinitions_at_all", HDR, "no $enddefinitions");
	expect_rejected("garbage", "garbage\n", "expected a $keyword");
	expect_rejected("bad_digit", HDR "$enddefinitions $end\n#0\nb10a1 \"\n", "other than 0 1 x z");
	expect_rejected("bad_range", "$timescale 1ps $end\n$var wire 4 ! v [7:0] $end\n"
				     "$enddefinitions $end\n", "does not span");
	expect_rejected("open_scope", "$timescale 1ps $end\n$scope module a $end\n"
				      "$var wire 1 ! x $end\n$enddefinitions $end\n", "still open");
	remove_dir();
}

/* ---- the layouts, headlessly ---- */

/* Open layout on dump in gtkwave under xvfb-run; a Tcl script lists the signals shown and
 * grabs the window to png. Returns the list (malloc'd). */
static char *render(const char *dump, const char *layout, const char *png)
{
	char tcl[256], list[256], cmd[2048], *out, *shown;
	FILE *f;
	int st;

	out = tb_run_cmd("command -v xvfb-run && command -v gtkwave", &st);
	cr_assert_eq(st, 0, "xvfb-run and gtkwave are needed (make deps): %s", out);
	free(out);
	snprintf(tcl, sizeof(tcl), "%s/shot.tcl", dir);
	snprintf(list, sizeof(list), "%s/shown.txt", dir);
	f = fopen(tcl, "w");
	cr_assert_not_null(f);
	fprintf(f, "set f [open %s w]\nputs $f [gtkwave::getDisplayedSignals]\nclose $f\n"
		   "gtkwave::/Time/Zoom/Zoom_Full\ngtkwave::/File/Grab_To_File %s\n"
		   "gtkwave::/File/Quit\n", list, png);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "timeout 60 xvfb-run -a -s '-screen 0 1500x1500x24' gtkwave -S %s %s %s 2>&1",
		 tcl, dump, layout);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "gtkwave failed (%d): %s", st, out);
	free(out);
	shown = tb_slurp(list, NULL);
	return shown;
}

/* PNG signature and IHDR: width and height. */
static void png_size(const char *path, uint32_t *w, uint32_t *h, size_t *bytes)
{
	size_t len;
	unsigned char *p = (unsigned char *)tb_slurp(path, &len);

	cr_assert(len > 24 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8) && !memcmp(p + 12, "IHDR", 4),
		  "%s is not a PNG", path);
	*w = (uint32_t)p[16] << 24 | (uint32_t)p[17] << 16 | (uint32_t)p[18] << 8 | p[19];
	*h = (uint32_t)p[20] << 24 | (uint32_t)p[21] << 16 | (uint32_t)p[22] << 8 | p[23];
	*bytes = len;
	free(p);
}

/* The signal lines of a .gtkw (not comments, settings, flags or group labels). */
static size_t layout_signals(const char *layout, char names[][64], size_t max)
{
	char *buf = tb_slurp(layout, NULL), *save = NULL, *ln;
	size_t n = 0;

	for (ln = strtok_r(buf, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save))
		if (strchr("[*@-", ln[0]) == NULL && n < max)
			snprintf(names[n++], 64, "%s", ln);
	free(buf);
	return n;
}

Test(waves, qp_lifecycle_layout_renders_headlessly_on_a_real_dump)
{
	static char names[256][64];
	char vcd[256], png[256], *shown;
	size_t n, bytes, missing = 0;
	uint32_t w, h;

	run_scenario("timeout_exhaustion.ini", vcd, sizeof(vcd));
	snprintf(png, sizeof(png), "%s/qp.png", dir);
	shown = render(vcd, LAYOUTS "qp_lifecycle.gtkw", png);
	n = layout_signals(LAYOUTS "qp_lifecycle.gtkw", names, 256);
	cr_assert_geq(n, 40, "the layout lists %zu signals", n);
	for (size_t i = 0; i < n; i++)
		if (!strstr(shown, names[i])) {
			cr_log_error("%s is in the layout but not shown", names[i]);
			missing++;
		}
	cr_assert_eq(missing, 0, "%zu of the layout's signals are not in the dump", missing);
	png_size(png, &w, &h, &bytes);
	cr_assert(w >= 800 && h >= 600, "PNG %ux%u", w, h);
	cr_assert_gt(bytes, 30000, "PNG of %zu bytes: nothing drawn?", bytes);
	free(shown);
	remove_dir();
}

Test(waves, block_layouts_show_the_model_transactions_of_a_model_dump)
{
	static const char *const blocks[] = { "sched", "cqe", "psn" };
	char vcd[256], png[256], layout[256], want[64];

	run_scenario("lost_ack.ini", vcd, sizeof(vcd));
	for (int b = 0; b < 3; b++) {
		char *shown;
		uint32_t w, h;
		size_t bytes;

		snprintf(png, sizeof(png), "%s/%s.png", dir, blocks[b]);
		snprintf(layout, sizeof(layout), LAYOUTS "%s.gtkw", blocks[b]);
		shown = render(vcd, layout, png);
		snprintf(want, sizeof(want), "hca0.%s.txn.req_valid", blocks[b]);
		cr_assert(strstr(shown, want), "%s: %s not shown: %s", blocks[b], want, shown);
		snprintf(want, sizeof(want), "hca1.%s.txn.resp_valid", blocks[b]);
		cr_assert(strstr(shown, want), "%s: %s not shown", blocks[b], want);
		png_size(png, &w, &h, &bytes);
		cr_assert(w >= 800 && h >= 600 && bytes > 10000, "%s: PNG %ux%u, %zu bytes",
			  blocks[b], w, h, bytes);
		free(shown);
	}
	remove_dir();
}
