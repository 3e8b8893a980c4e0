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
 *     waves/qp_lifecycle.gtkw is found in a real dump, and the window is grabbed to a PNG;
 *   - the coded signals (QP states, sched ops and verdicts, CQE opcodes, statuses and actions,
 *     PSN classes, CQ arm states, doorbell kinds) are shown by name: the translate filters in
 *     waves/filters/ are what hcasim-gendoc writes and hold the values of model/hw, model/twin.h
 *     and model/waves.h, every layout puts its coded signals through them, and gtkwave shows
 *     the names (RTS, ERR, DUPLICATE, ...) on real dumps. */
#include "model/hw/hca_hw.h"
#include "model/twin.h"
#include "model/waves.h"
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <dirent.h>
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

static size_t rises(const struct tb_wave *w)
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
		struct tb_wave w;

		/* Five send WQEs of the workload: posted, started and completed. */
		tb_read_wave(vcd, "hca0.qp2.sq_done", &w);
		cr_assert(w.n > 0 && w.v[w.n - 1] == 5, "sq_done ends at %llu",
			  (unsigned long long)(w.n ? w.v[w.n - 1] : 0));
		tb_read_wave(vcd, "hca0.qp2.state", &w);
		cr_assert(w.n > 0 && w.v[w.n - 1] == 3, "QP 2 of hca0 does not end in RTS");
		tb_read_wave(vcd, "hca0.db.strobe", &w);
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
	struct tb_wave w;
	size_t i;

	run_scenario("timeout_exhaustion.ini", vcd, sizeof(vcd));
	/* retry_cnt 3: four expiries, retry_left 3, 2, 1, 0, then ERR with one CQE. */
	tb_read_wave(vcd, "hca0.qp2.timer_expired", &w);
	cr_assert_eq(rises(&w), 4, "%zu timer expiries", rises(&w));
	tb_read_wave(vcd, "hca0.qp2.retry_left", &w);
	for (i = 0; i < w.n && w.v[i] != 3; i++)
		;
	cr_assert(i + 3 < w.n && w.v[i + 1] == 2 && w.v[i + 2] == 1 && w.v[i + 3] == 0,
		  "retry_left does not count 3, 2, 1, 0");
	tb_read_wave(vcd, "hca0.qp2.state", &w);
	cr_assert_eq(w.v[w.n - 1], 6, "QP a ends in state %llu, not ERR",
		     (unsigned long long)w.v[w.n - 1]);
	tb_read_wave(vcd, "hca0.cq1.pi", &w);
	cr_assert_eq(w.v[w.n - 1], 1);
	tb_read_wave(vcd, "hca0.qp2.timer_on", &w);
	cr_assert_eq(rises(&w), 4, "the timer was armed %zu times", rises(&w));
	cr_assert_eq(w.v[w.n - 1], 0, "the timer is still on at the end");
	remove_dir();
}

Test(waves, lost_ack_duplicate_shows_in_the_psn_block_transactions)
{
	char vcd[256];
	struct tb_wave cls, valid, psn;
	size_t dup = 0;

	run_scenario("lost_ack.ini", vcd, sizeof(vcd));
	tb_read_wave(vcd, "hca1.psn.txn.resp_cls", &cls);
	tb_read_wave(vcd, "hca1.psn.txn.resp_valid", &valid);
	tb_read_wave(vcd, "hca1.psn.txn.req_psn", &psn);
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
	struct tb_wave w;

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
	tb_read_wave(path, "hca0.qpc.misses", &w);
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

/* A value to read in gtkwave: the signal as the layout names it, at time t (ps). */
struct query {
	uint64_t t;
	const char *name;
};

/* Open layout on dump in gtkwave under xvfb-run, from the clone root (the layouts name their
 * translate filters from there); a Tcl script lists the signals shown, puts the marker at each
 * query's time and writes "<t> <name> <value as shown>" lines to *values (if not NULL), and
 * grabs the window to png. Returns the list of signals shown (malloc'd). */
static char *render_q(const char *dump, const char *layout, const char *png,
		      const struct query *q, size_t nq, char **values)
{
	char tcl[256], list[256], vals[256], cmd[2048], *out, *shown;
	FILE *f;
	int st;

	out = tb_run_cmd("command -v xvfb-run && command -v gtkwave", &st);
	cr_assert_eq(st, 0, "xvfb-run and gtkwave are needed (make deps): %s", out);
	free(out);
	snprintf(tcl, sizeof(tcl), "%s/shot.tcl", dir);
	snprintf(list, sizeof(list), "%s/shown.txt", dir);
	snprintf(vals, sizeof(vals), "%s/values.txt", dir);
	f = fopen(tcl, "w");
	cr_assert_not_null(f);
	fprintf(f, "set f [open %s w]\nputs $f [gtkwave::getDisplayedSignals]\nclose $f\n"
		   "set v [open %s w]\n", list, vals);
	for (size_t i = 0; i < nq; i++)
		fprintf(f, "gtkwave::setMarker %llu\nset n {%s}\n"
			   "puts $v \"%llu $n [gtkwave::getTraceValueAtMarkerFromName $n]\"\n",
			(unsigned long long)q[i].t, q[i].name, (unsigned long long)q[i].t);
	fprintf(f, "close $v\ngtkwave::/Time/Zoom/Zoom_Full\ngtkwave::/File/Grab_To_File %s\n"
		   "gtkwave::/File/Quit\n", png);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "cd " HCASIM_SRC_DIR " && timeout 60 xvfb-run -a -s '-screen 0 1500x1500x24' "
		 "gtkwave -S %s %s %s 2>&1",
		 tcl, dump, layout);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "gtkwave failed (%d): %s", st, out);
	free(out);
	shown = tb_slurp(list, NULL);
	if (values)
		*values = tb_slurp(vals, NULL);
	return shown;
}

/* The value of w at time t (UINT64_MAX before its first change). */
static uint64_t value_at(const struct tb_wave *w, uint64_t t)
{
	uint64_t v = UINT64_MAX;

	for (size_t i = 0; i < w->n && w->t[i] <= t; i++)
		v = w->v[i];
	return v;
}

/* values holds "<t> <name> <want>" (gtkwave showed want for name at t). */
static void expect_shown(const char *values, const struct query *q, const char *want)
{
	char line[256];

	snprintf(line, sizeof(line), "%llu %s %s\n", (unsigned long long)q->t, q->name, want);
	cr_expect(strstr(values, line), "gtkwave does not show %s for %s at %llu ps; it shows:\n%s",
		  want, q->name, (unsigned long long)q->t, values);
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
		if (strchr("[*@-^", ln[0]) == NULL && n < max)
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

	struct tb_wave st, kind;
	struct query q[3];
	char *values;

	run_scenario("timeout_exhaustion.ini", vcd, sizeof(vcd));
	snprintf(png, sizeof(png), "%s/qp.png", dir);
	/* the QP's state by name: RTS while it retries, ERR at the end; the doorbell's kind */
	tb_read_wave(vcd, "hca0.qp2.state", &st);
	tb_read_wave(vcd, "hca0.db.kind", &kind);
	cr_assert(st.n >= 2 && st.v[st.n - 1] == HCA_QPS_ERR && st.v[st.n - 2] == HCA_QPS_RTS,
		  "hca0.qp2.state does not go from RTS to ERR");
	for (n = 0; n < kind.n && kind.v[n] != HM_WAVES_DB_SQ; n++)
		;
	cr_assert_lt(n, kind.n, "no SQ doorbell");
	q[0] = (struct query){ st.t[st.n - 1] - 1, "hca0.qp2.state[2:0]" };
	q[1] = (struct query){ st.t[st.n - 1] + 1, "hca0.qp2.state[2:0]" };
	q[2] = (struct query){ kind.t[n] + 1, "hca0.db.kind[1:0]" };
	shown = render_q(vcd, LAYOUTS "qp_lifecycle.gtkw", png, q, 3, &values);
	expect_shown(values, &q[0], "RTS");
	expect_shown(values, &q[1], "ERR");
	expect_shown(values, &q[2], "SQ");
	free(values);
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
	static const char *const blocks[] = { "sched", "cqe", "psn", "mkey" };
	char vcd[256], png[256], layout[256], want[64];

	struct tb_wave w1, w2;
	struct query q[4][3];
	const char *shows[4][3];
	size_t nq[4] = { 0 };

	run_scenario("lost_ack.ini", vcd, sizeof(vcd));
	/* sched: the first doorbell of hca0, DOORBELL on an RTS QP, QUEUED */
	tb_read_wave(vcd, "hca0.sched.txn.req_valid", &w1);
	tb_read_wave(vcd, "hca0.sched.txn.req_op", &w2);
	for (size_t i = 0; i < w1.n; i++)
		if (w1.v[i] == 1 && value_at(&w2, w1.t[i]) == HM_WAVES_SCHED_DOORBELL) {
			q[0][0] = (struct query){ w1.t[i], "hca0.sched.txn.req_op[1:0]" };
			q[0][1] = (struct query){ w1.t[i], "hca0.sched.txn.req_state[2:0]" };
			shows[0][0] = "DOORBELL";
			shows[0][1] = "RTS";
			nq[0] = 2;
			break;
		}
	tb_read_wave(vcd, "hca0.sched.txn.resp_valid", &w1);
	tb_read_wave(vcd, "hca0.sched.txn.resp_verdict", &w2);
	for (size_t i = 0; i < w1.n && nq[0] == 2; i++)
		if (w1.v[i] == 1 && value_at(&w2, w1.t[i]) == HM_SCHED_QUEUED) {
			q[0][2] = (struct query){ w1.t[i], "hca0.sched.txn.resp_verdict[1:0]" };
			shows[0][2] = "QUEUED";
			nq[0] = 3;
		}
	cr_assert_eq(nq[0], 3, "no queued doorbell in hca0's sched transactions");
	/* cqe: hca0's last CQE, a SUCCESS written */
	tb_read_wave(vcd, "hca0.cqe.txn.req_valid", &w1);
	tb_read_wave(vcd, "hca0.cqe.txn.req_status", &w2);
	cr_assert(w1.n >= 2 && w1.v[w1.n - 2] == 1, "no CQE posted on hca0");
	cr_assert_eq(value_at(&w2, w1.t[w1.n - 2]), HCA_WC_SUCCESS);
	q[1][0] = (struct query){ w1.t[w1.n - 2], "hca0.cqe.txn.req_status[7:0]" };
	shows[1][0] = "SUCCESS";
	tb_read_wave(vcd, "hca0.cqe.txn.resp_valid", &w1);
	cr_assert(w1.n >= 2 && w1.v[w1.n - 2] == 1, "no CQE written on hca0");
	q[1][1] = (struct query){ w1.t[w1.n - 2], "hca0.cqe.txn.resp_action[1:0]" };
	shows[1][1] = "WRITE";
	nq[1] = 2;
	/* psn: the resent request is a DUPLICATE at hca1 */
	tb_read_wave(vcd, "hca1.psn.txn.resp_valid", &w1);
	tb_read_wave(vcd, "hca1.psn.txn.resp_cls", &w2);
	for (size_t i = 0; i < w1.n; i++)
		if (w1.v[i] == 1 && value_at(&w2, w1.t[i]) == HM_PSN_DUPLICATE) {
			q[2][0] = (struct query){ w1.t[i], "hca1.psn.txn.resp_cls[1:0]" };
			shows[2][0] = "DUPLICATE";
			nq[2] = 1;
		}
	cr_assert_eq(nq[2], 1, "no DUPLICATE in hca1's psn transactions");
	/* mkey: a key check of hca0 that was granted */
	tb_read_wave(vcd, "hca0.mkey.txn.resp_valid", &w1);
	tb_read_wave(vcd, "hca0.mkey.txn.resp_result", &w2);
	for (size_t i = 0; i < w1.n && !nq[3]; i++)
		if (w1.v[i] == 1 && value_at(&w2, w1.t[i]) == HM_MKEY_OK) {
			q[3][0] = (struct query){ w1.t[i], "hca0.mkey.txn.resp_result[2:0]" };
			shows[3][0] = "OK";
			nq[3] = 1;
		}
	cr_assert_eq(nq[3], 1, "no granted check in hca0's mkey transactions");
	for (int b = 0; b < 4; b++) {
		char *shown, *values;
		uint32_t w, h;
		size_t bytes;

		snprintf(png, sizeof(png), "%s/%s.png", dir, blocks[b]);
		snprintf(layout, sizeof(layout), LAYOUTS "%s.gtkw", blocks[b]);
		shown = render_q(vcd, layout, png, q[b], nq[b], &values);
		for (size_t i = 0; i < nq[b]; i++)
			expect_shown(values, &q[b][i], shows[b][i]);
		free(values);
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

/* ---- the translate filters ---- */

#define FILTERS HCASIM_SRC_DIR "/waves/filters/"

/* The committed filter file of name. */
static char *filter_file(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), FILTERS "%s.txt", name);
	cr_assert_eq(access(path, R_OK), 0, "%s is missing: make docs writes it", path);
	return tb_slurp(path, NULL);
}

/* The filter maps each value to its name, and nothing else (its lines other than comments). */
struct coded {
	unsigned val;
	const char *name;
};

static void expect_filter(const char *filter, const struct coded *c, size_t n)
{
	char *text = filter_file(filter), *save = NULL, *ln, want[128];
	size_t lines = 0;

	for (ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save))
		if (ln[0] != '#')
			lines++;
	free(text);
	text = filter_file(filter);
	for (size_t i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "\n%u %s\n", c[i].val, c[i].name);
		cr_expect(strstr(text, want), "waves/filters/%s.txt lacks '%u %s'", filter, c[i].val,
			  c[i].name);
	}
	cr_expect_eq(lines, n, "waves/filters/%s.txt has %zu values, the table %zu", filter, lines,
		     n);
	free(text);
}

Test(waves, translate_filters_are_generated_and_hold_the_tables_values)
{
	char cmd[512], *names, *name, *save = NULL, *gen, *committed;
	int st, nfilters = 0;
	DIR *d;
	struct dirent *e;

	/* each filter is what hcasim-gendoc writes (make docs) ... */
	names = tb_run_cmd(BIN "hcasim-gendoc filters", &st);
	cr_assert_eq(st, 0, "hcasim-gendoc filters: %s", names);
	for (name = strtok_r(names, "\n", &save); name; name = strtok_r(NULL, "\n", &save)) {
		snprintf(cmd, sizeof(cmd), BIN "hcasim-gendoc filter %s", name);
		gen = tb_run_cmd(cmd, &st);
		cr_assert_eq(st, 0, "%s: %s", cmd, gen);
		committed = filter_file(name);
		cr_expect_str_eq(committed, gen, "waves/filters/%s.txt drifted: run make docs", name);
		free(gen);
		free(committed);
		nfilters++;
	}
	/* ... and no file is left over from a filter that is gone */
	d = opendir(FILTERS);
	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		char want[80];

		if (e->d_name[0] == '.')
			continue;
		snprintf(want, sizeof(want), "%.*s", (int)strcspn(e->d_name, "."), e->d_name);
		free(names);
		names = tb_run_cmd(BIN "hcasim-gendoc filters", &st);
		cr_expect(strstr(names, want) && !strcmp(e->d_name + strlen(want), ".txt"),
			  "waves/filters/%s is not a filter hcasim-gendoc writes", e->d_name);
	}
	closedir(d);
	free(names);
	cr_assert_eq(nfilters, 11, "%d filters", nfilters);
	/* the values are those of the tables, read here from the headers themselves */
	{
		static const struct coded qps[] = {
			{ HCA_QPS_RESET, "RESET" }, { HCA_QPS_INIT, "INIT" }, { HCA_QPS_RTR, "RTR" },
			{ HCA_QPS_RTS, "RTS" },	    { HCA_QPS_SQD, "SQD" },   { HCA_QPS_SQE, "SQE" },
			{ HCA_QPS_ERR, "ERR" },
		};
		static const struct coded wc[] = {
#define WQE_OP(name, val, qpts, cls, doc)
#define CQE_OP(name, val, doc)
#define WC(name, val, doc) { val, #name },
#include "model/hw/wqe.def"
#undef WQE_OP
#undef CQE_OP
#undef WC
		};
		static const struct coded cqe_op[] = {
#define WQE_OP(name, val, qpts, cls, doc)
#define CQE_OP(name, val, doc) { val, #name },
#define WC(name, val, doc)
#include "model/hw/wqe.def"
#undef WQE_OP
#undef CQE_OP
#undef WC
		};
		static const struct coded arm[] = {
			{ HCA_CQ_DB_CI, "CI" },
			{ HCA_CQ_DB_ARM_NEXT, "ARM_NEXT" },
			{ HCA_CQ_DB_ARM_SOLICITED, "ARM_SOLICITED" },
		};
		static const struct coded verdict[] = {
			{ HM_SCHED_QUEUED, "QUEUED" },
			{ HM_SCHED_FLUSH, "FLUSH" },
			{ HM_SCHED_BAD_STATE, "BAD_STATE" },
			{ HM_SCHED_BAD_INDEX, "BAD_INDEX" },
		};
		static const struct coded action[] = {
			{ HM_CQE_WRITE, "WRITE" },
			{ HM_CQE_NEED_CI, "NEED_CI" },
			{ HM_CQE_OVERRUN, "OVERRUN" },
		};
		static const struct coded cls[] = {
			{ HM_PSN_EXPECTED, "EXPECTED" },
			{ HM_PSN_DUPLICATE, "DUPLICATE" },
			{ HM_PSN_AHEAD, "AHEAD" },
		};
		static const struct coded fe_verdict[] = {
			{ HM_RESP_FE_EXECUTE, "EXECUTE" },	 { HM_RESP_FE_DUPLICATE, "DUPLICATE" },
			{ HM_RESP_FE_AHEAD, "AHEAD" },		 { HM_RESP_FE_UC_LOST, "UC_LOST" },
			{ HM_RESP_FE_OPCODE_SEQ, "OPCODE_SEQ" }, { HM_RESP_FE_XRC_SRQ, "XRC_SRQ" },
			{ HM_RESP_FE_OPCODE, "OPCODE" },	 { HM_RESP_FE_NO_ACCESS, "NO_ACCESS" },
			{ HM_RESP_FE_ALIGN, "ALIGN" },		 { HM_RESP_FE_LENGTH, "LENGTH" },
			{ HM_RESP_FE_RKEY, "RKEY" },
		};
		static const struct coded mkey_res[] = {
			{ HM_MKEY_OK, "OK" },
			{ HM_MKEY_BAD_KEY, "BAD_KEY" },
			{ HM_MKEY_BAD_PD, "BAD_PD" },
			{ HM_MKEY_BAD_ACCESS, "BAD_ACCESS" },
			{ HM_MKEY_BAD_RANGE, "BAD_RANGE" },
			{ HM_MKEY_BAD_QP, "BAD_QP" },
		};
		static const struct coded sched_op[] = {
			{ HM_WAVES_SCHED_DOORBELL, "DOORBELL" },
			{ HM_WAVES_SCHED_PUSH, "PUSH" },
			{ HM_WAVES_SCHED_POP, "POP" },
		};
		static const struct coded db_kind[] = {
			{ HM_WAVES_DB_SQ, "SQ" },
			{ HM_WAVES_DB_RQ, "RQ" },
			{ HM_WAVES_DB_SRQ, "SRQ" },
		};
#define EXPECT_FILTER(f, t) expect_filter(f, t, sizeof(t) / sizeof(t[0]))
		EXPECT_FILTER("qp_state", qps);
		EXPECT_FILTER("wc_status", wc);
		EXPECT_FILTER("cqe_opcode", cqe_op);
		EXPECT_FILTER("cq_arm", arm);
		EXPECT_FILTER("sched_verdict", verdict);
		EXPECT_FILTER("cqe_action", action);
		EXPECT_FILTER("psn_class", cls);
		EXPECT_FILTER("mkey_result", mkey_res);
		EXPECT_FILTER("resp_fe_verdict", fe_verdict);
		EXPECT_FILTER("sched_op", sched_op);
		EXPECT_FILTER("db_kind", db_kind);
#undef EXPECT_FILTER
	}
}

/* Every coded signal of every layout is shown through its filter, as gtkwave reads a .gtkw:
 * a "@<flags>" line sets the format of the signals after it (0x2000, TR_FTRANSLATED, with
 * 0x4, decimal), and a "^<n> <file>" line names the translate filter file of the next one.
 * The path is relative to the clone root, where the layouts are opened from. */
Test(waves, every_layout_shows_its_coded_signals_through_the_filters)
{
	static const struct {
		const char *tail; /* the signal's name ends so */
		const char *filter;
	} coded[] = {
		{ ".state[2:0]", "qp_state" },	      { ".kind[1:0]", "db_kind" },
		{ ".req_op[1:0]", "sched_op" },	      { ".resp_op[1:0]", "sched_op" },
		{ ".req_state[2:0]", "qp_state" },    { ".resp_verdict[1:0]", "sched_verdict" },
		{ ".req_arm[1:0]", "cq_arm" },	      { ".resp_new_arm[1:0]", "cq_arm" },
		{ ".req_opcode[7:0]", "cqe_opcode" }, { ".req_status[7:0]", "wc_status" },
		{ ".resp_action[1:0]", "cqe_action" }, { ".resp_cls[1:0]", "psn_class" },
		{ ".resp_result[2:0]", "mkey_result" }, { ".resp_verdict[3:0]", "resp_fe_verdict" },
		{ ".resp_psn_cls[1:0]", "psn_class" }, { ".resp_key[2:0]", "mkey_result" },
	};
	static const char *const layouts[] = { "qp_lifecycle", "sched", "cqe", "psn", "mkey",
					       "resp_fe" };
	int translated = 0;

	for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++) {
		char path[512], *text, *save = NULL, *ln, filter[256] = "";
		unsigned long flags = 0;

		snprintf(path, sizeof(path), LAYOUTS "%s.gtkw", layouts[l]);
		text = tb_slurp(path, NULL);
		for (ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
			const char *want = NULL;
			size_t len = strlen(ln);

			if (ln[0] == '@') {
				flags = strtoul(ln + 1, NULL, 16);
				filter[0] = 0;
				continue;
			}
			if (ln[0] == '^') {
				char *file = strchr(ln, ' ');

				cr_assert_not_null(file, "%s: '%s'", layouts[l], ln);
				snprintf(filter, sizeof(filter), "%s", file + 1);
				snprintf(path, sizeof(path), HCASIM_SRC_DIR "/%s", filter);
				cr_expect_eq(access(path, R_OK), 0, "%s names %s, which is missing",
					     layouts[l], filter);
				continue;
			}
			if (strchr("[*-", ln[0]))
				continue;
			for (size_t c = 0; c < sizeof(coded) / sizeof(coded[0]); c++) {
				size_t tl = strlen(coded[c].tail);

				if (len > tl && !strcmp(ln + len - tl, coded[c].tail))
					want = coded[c].filter;
			}
			if (!want) {
				cr_expect(!(flags & 0x2000), "%s: %s is translated", layouts[l], ln);
				continue;
			}
			snprintf(path, sizeof(path), "waves/filters/%s.txt", want);
			cr_expect((flags & 0x2000) && (flags & 0x4), "%s: %s is not shown "
				  "through a filter in decimal (flags %lx)", layouts[l], ln, flags);
			cr_expect_str_eq(filter, path, "%s: %s", layouts[l], ln);
			translated++;
		}
		free(text);
	}
	/* qp_lifecycle 4, sched 2 x 2 x 4, cqe 2 x 2 x 5, psn and mkey 2 x 2 x 1, resp_fe 2 x 2 x 3 */
	cr_expect_eq(translated, 4 + 16 + 20 + 4 + 4 + 12, "%d coded signals in the layouts",
		     translated);
}
