/* Block ports (model/twin.h): choosing an implementation per block (impl.*, HCASIM_IMPL) and
 * the lockstep comparator. These tests plug implementations of their own into the RTL slot —
 * the C twin itself, and a twin with a planted fault — so the comparator is proved on its own,
 * whatever RTL this build carries (each Criterion test runs in its own process). */
#include "testbench/tb.h"

#include "model/twin.h"
#include "sim/trace.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* These tests choose the modes themselves: a whole-suite HCASIM_IMPL (make test IMPL=...) must
 * not override them. */
static void own_modes(void)
{
	unsetenv("HCASIM_IMPL");
}

/* A CQE writer that gets the owner bit wrong on the third CQE it writes. */
static int posts;

static void bad_post(void *b, const struct hm_cqe_in *in, struct hm_cqe_out *out)
{
	hm_cqe_model.post(b, in, out);
	if (out->action == HM_CQE_WRITE && ++posts == 3)
		out->image.owner ^= 1;
}

/* A responder front end (whose first stage classifies the PSN) that answers one cycle late. */
static void late_check(void *b, const struct hm_resp_fe_in *in, struct hm_resp_fe_out *out)
{
	hm_resp_fe_model.check(b, in, out);
	out->cycle++;
}

static struct hm_resp_fe_ops late_fe;

static const struct hm_resp_fe_ops *late(void)
{
	late_fe = hm_resp_fe_model;
	late_fe.check = late_check;
	return &late_fe;
}

static struct hm_cqe_ops cqe_with(void (*post)(void *, const struct hm_cqe_in *,
					       struct hm_cqe_out *))
{
	struct hm_cqe_ops o = hm_cqe_model;

	o.post = post;
	return o;
}

/* SEND + receive, n times, between two connected RC QPs; returns how many completed. */
static int traffic(struct tb_dev *a, struct tb_dev *b, int n)
{
	struct ibv_qp *qa = tb_create_qp(a, IBV_QPT_RC), *qb = tb_create_qp(b, IBV_QPT_RC);
	struct ibv_mr *ma = tb_mr(a, 4096), *mb = tb_mr(b, 4096);
	int done = 0;

	tb_connect(a, qa, b, qb->qp_num, IBV_MTU_1024);
	tb_connect(b, qb, a, qa->qp_num, IBV_MTU_1024);
	for (int i = 0; i < n; i++) {
		struct ibv_sge rs = { (uintptr_t)mb->addr, 4096, mb->lkey };
		struct ibv_recv_wr r = { .wr_id = (uint64_t)i, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge ss = { (uintptr_t)ma->addr, 64, ma->lkey };
		struct ibv_send_wr w = { .wr_id = (uint64_t)i, .sg_list = &ss, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		struct ibv_wc wc;
		uint64_t t0 = hcasim_now_ps();
		int got = 0;

		if (ibv_post_recv(qb, &r, &rbad) || ibv_post_send(qa, &w, &bad)) {
			fprintf(stderr, "traffic: post %d: %s\n", i, hcasim_last_error());
			break;
		}
		while (got == 0 && hcasim_now_ps() - t0 < 1000000000ull && !hcasim_halted()) {
			got = ibv_poll_cq(a->cq, 1, &wc);
			if (got < 0)
				break;
		}
		for (int rgot = 0; got == 1 && rgot == 0 && !hcasim_halted();)
			rgot = ibv_poll_cq(b->cq, 1, &wc) ? 1 : 0; /* frees the receive slot */
		if (got != 1 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "traffic: message %d: got %d status %d (%s) halted %s\n", i, got,
				got == 1 ? (int)wc.status : -1, hcasim_last_error(),
				hcasim_halted() ? hcasim_halted() : "no");
			break;
		}
		done++;
	}
	/* Tear down what can be (after a halt no command runs, and the driver keeps what it
	 * could not destroy). */
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	for (int i = 0; i < 2; i++) {
		struct ibv_mr *mr = i ? mb : ma;
		void *buf = mr->addr;

		if (!ibv_dereg_mr(mr))
			free(buf);
	}
	return done;
}

Test(twin, lockstep_of_the_c_twin_against_itself_never_halts)
{
	struct tb_dev a, b;

	own_modes();
	for (int t = 0; t < HM_TWIN_COUNT; t++) {
		char key[64];

		hm_twin_register((enum hm_twin)t, hm_twin_model((enum hm_twin)t));
		snprintf(key, sizeof(key), "impl.%s", hm_twin_name((enum hm_twin)t));
		tb_config(key, "lockstep");
	}
	tb_open(&a, 0);
	tb_open(&b, 1);
	cr_assert_eq(traffic(&a, &b, 20), 20);
	cr_assert_null(hcasim_halted(), "%s", hcasim_halted());
	tb_close(&a);
	tb_close(&b);
}

Test(twin, lockstep_halts_on_a_wrong_field_naming_block_cycle_and_field)
{
	static struct hm_cqe_ops ops;
	struct tb_dev a, b;
	const char *why;

	own_modes();
	ops = cqe_with(bad_post);
	hm_twin_register(HM_TWIN_CQE, &ops);
	tb_config("impl.cqe", "lockstep");
	tb_open(&a, 0);
	tb_open(&b, 1);
	tb_stderr_capture();
	cr_assert_lt(traffic(&a, &b, 20), 20, "the run went on after a mismatch");
	why = tb_expect_halt_reported();
	cr_assert(strstr(why, "block cqe"), "%s", why);
	cr_assert(strstr(why, "field image.owner"), "%s", why);
	cr_assert(strstr(why, "at cycle "), "%s", why);
	cr_assert(strstr(why, "expected 0x") && strstr(why, "got 0x"), "%s", why);
	/* Nothing runs after the halt. */
	{
		uint64_t ev = hcasim_events_executed();

		hcasim_run_for_ps(1000000);
		cr_assert_eq(hcasim_events_executed(), ev);
	}
	tb_close(&a);
	tb_close(&b);
}

Test(twin, lockstep_compares_cycles_too)
{
	struct tb_dev a, b;
	const char *why;

	own_modes();
	hm_twin_register(HM_TWIN_RESP_FE, late());
	tb_config("impl.resp_fe", "lockstep");
	tb_open(&a, 0);
	tb_open(&b, 1);
	tb_stderr_capture();
	traffic(&a, &b, 2);
	why = tb_expect_halt_reported();
	cr_assert(strstr(why, "block resp_fe") && strstr(why, "field cycle"), "%s", why);
	tb_close(&a);
	tb_close(&b);
}

Test(twin, rtl_mode_with_a_registered_twin_runs_the_twin_alone)
{
	struct tb_dev a, b;

	own_modes();
	hm_twin_register(HM_TWIN_RESP_FE, late());
	tb_config("impl.resp_fe", "rtl");
	tb_open(&a, 0);
	tb_open(&b, 1);
	/* rtl mode does not compare: a late answer is taken as it is. */
	cr_assert_eq(traffic(&a, &b, 5), 5);
	cr_assert_null(hcasim_halted());
	tb_close(&a);
	tb_close(&b);
}

Test(twin, bad_hcasim_impl_is_refused_naming_it)
{
	static const char *const bad[] = { "cqe", "cqe=fast", "bogus=rtl", "sched=model,,x" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(setenv("HCASIM_IMPL", bad[i], 1), 0);
		cr_assert_eq(hcasim_boot(), -EINVAL, "'%s' accepted", bad[i]);
		cr_assert(strstr(hcasim_last_error(), "HCASIM_IMPL"), "%s", hcasim_last_error());
		cr_assert_eq(hcasim_booted(), 0);
	}
	cr_assert_eq(setenv("HCASIM_IMPL", "all=model", 1), 0);
	cr_assert_eq(hcasim_boot(), 0, "%s", hcasim_last_error());
	hcasim_shutdown();
	unsetenv("HCASIM_IMPL");
}

/* ---- the registry (model/twin.def, docs/rtl.md "Adding a block with a twin") ---- */

/* The files every block with a twin has, by its name. */
static const char *const block_files[] = { "model/%s.c",        "rtl/%s.sv", "sim/vl/%s.cpp",
					   "docs/blocks/%s.md", "waves/%s.gtkw" };

/* The lines of model/twin.def that start with TWIN( (as the Makefile reads them). */
static int registry_lines(char names[][32], int max)
{
	FILE *f = fopen(HCASIM_SRC_DIR "/model/twin.def", "r");
	char line[512];
	int n = 0;

	cr_assert_not_null(f, "model/twin.def");
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "TWIN(", 5) && n < max &&
		    sscanf(line + 5, "%31[a-z0-9_]", names[n]) == 1)
			n++;
	fclose(f);
	return n;
}

Test(twin, every_registered_block_has_its_files_twin_key_and_trace_category)
{
	char names[16][32];
	int n = registry_lines(names, 16);

	cr_assert_eq(n, HM_TWIN_COUNT, "model/twin.def has %d TWIN( lines the Makefile reads, the "
		     "C registry %d blocks", n, HM_TWIN_COUNT);
	for (int b = 0; b < HM_TWIN_COUNT; b++) {
		const char *name = hm_twin_name((enum hm_twin)b);
		const struct hm_twin_base *model = hm_twin_model((enum hm_twin)b);
		bool cat = false;
		char key[64];

		cr_assert_str_eq(name, names[b], "registry order");
		cr_assert_eq(hm_twin_find(name), b);
		for (size_t i = 0; i < sizeof(block_files) / sizeof(block_files[0]); i++) {
			char rel[128], path[512];

			snprintf(rel, sizeof(rel), block_files[i], name);
			snprintf(path, sizeof(path), "%s/%s", HCASIM_SRC_DIR, rel);
			cr_expect_eq(access(path, R_OK), 0, "block %s has no %s", name, rel);
		}
		cr_assert(model && model->create && model->destroy, "block %s has no C twin", name);
		for (int c = 0; c < SIM_TCAT_COUNT; c++)
			cat |= !strcmp(sim_trace_cat_name(c), hm_twin_trace_cat((enum hm_twin)b));
		cr_expect(cat, "block %s traces as '%s', no category of sim/trace.def", name,
			  hm_twin_trace_cat((enum hm_twin)b));
		snprintf(key, sizeof(key), "impl.%s", name);
		cr_expect_eq(hcasim_config_set(key, "lockstep"), 0, "%s: %s", key,
			     hcasim_last_error());
		cr_expect_eq(hcasim_config_set(key, "model"), 0, "%s: %s", key,
			     hcasim_last_error());
	}
	/* A build with Verilator has a transactor for every block, or for none. */
	for (int b = 1; b < HM_TWIN_COUNT; b++)
		cr_expect_eq(hm_twin_rtl((enum hm_twin)b) != NULL, hm_twin_rtl(0) != NULL,
			     "RTL of %s registered: %d, of %s: %d", hm_twin_name((enum hm_twin)b),
			     hm_twin_rtl((enum hm_twin)b) != NULL, hm_twin_name(0),
			     hm_twin_rtl(0) != NULL);
}

/* The other way round: every RTL block and transactor in the tree is in the registry. */
Test(twin, every_rtl_block_and_transactor_is_registered)
{
	static const char *const dirs[][2] = { { "rtl", ".sv" }, { "sim/vl", ".cpp" } };

	for (size_t i = 0; i < 2; i++) {
		char path[512];
		DIR *dir;
		struct dirent *e;
		int seen = 0;

		snprintf(path, sizeof(path), "%s/%s", HCASIM_SRC_DIR, dirs[i][0]);
		dir = opendir(path);
		cr_assert_not_null(dir, "%s", path);
		while ((e = readdir(dir))) {
			size_t len = strlen(e->d_name), ext = strlen(dirs[i][1]);
			char name[64];

			if (len <= ext || strcmp(e->d_name + len - ext, dirs[i][1]) ||
			    !strcmp(e->d_name, "hca_pkg.sv") || len - ext >= sizeof(name))
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)(len - ext), e->d_name);
			cr_expect_geq(hm_twin_find(name), 0, "%s/%s is not in model/twin.def",
				      dirs[i][0], e->d_name);
			seen++;
		}
		closedir(dir);
		cr_expect_eq(seen, HM_TWIN_COUNT, "%s: %d files for %d blocks", dirs[i][0], seen,
			     HM_TWIN_COUNT);
	}
}

/* ---- checked: the RTL drives, the C twin checks (docs/rtl.md#checked) ---- */

Test(twin, checked_of_the_c_twin_against_itself_finds_no_mismatch)
{
	struct tb_dev a, b;

	own_modes();
	for (int t = 0; t < HM_TWIN_COUNT; t++) {
		char key[64];

		hm_twin_register((enum hm_twin)t, hm_twin_model((enum hm_twin)t));
		snprintf(key, sizeof(key), "impl.%s", hm_twin_name((enum hm_twin)t));
		tb_config(key, "checked");
	}
	tb_open(&a, 0);
	tb_open(&b, 1);
	cr_assert_eq(traffic(&a, &b, 20), 20);
	cr_assert_null(hcasim_halted(), "%s", hcasim_halted());
	cr_assert_eq(hcasim_mismatches(), 0);
	tb_close(&a);
	tb_close(&b);
}

/* Ends a run of block in mode with impl.on_mismatch = count whose stderr is captured: the run
 * went on; n mismatches were counted, the first naming block and op (first) and then field and
 * both values (field); hcasim_shutdown() prints the count by block and the first report. */
static void counted(struct tb_dev *a, struct tb_dev *b, const char *mode, const char *block,
		    uint64_t n, const char *first, const char *field)
{
	char want[128], *err;

	tb_close(a);
	tb_close(b);
	hcasim_shutdown();
	err = tb_stderr_captured();
	cr_assert_null(hcasim_halted(), "%s", hcasim_halted());
	cr_assert_eq(hcasim_mismatches(), n, "%llu mismatches:\n%s",
		     (unsigned long long)hcasim_mismatches(), err);
	snprintf(want, sizeof(want), "%s mismatch: device ", mode);
	cr_assert(strstr(hcasim_mismatch(0), want) && strstr(hcasim_mismatch(0), first) &&
			  strstr(hcasim_mismatch(0), field),
		  "%s", hcasim_mismatch(0));
	snprintf(want, sizeof(want), "hcasim: %llu mismatch%s between RTL and C twins (%s %llu); "
		 "the first: ", (unsigned long long)n, n == 1 ? "" : "es", block,
		 (unsigned long long)n);
	cr_assert(strstr(err, want) && strstr(strstr(err, want), hcasim_mismatch(0)),
		  "no summary at shutdown:\n%s", err);
	free(err);
}

/* A responder front end whose PSN stage takes the third in-order request for one ahead of its
 * expected PSN: the responder sends a sequence NAK for it, and the requester resends it. (The
 * PSN check runs in resp_fe's PSN stage: the psn block is no longer called by the system.) */
static int in_order;

static void ahead_check(void *b, const struct hm_resp_fe_in *in, struct hm_resp_fe_out *out)
{
	hm_resp_fe_model.check(b, in, out);
	if (out->verdict == HM_RESP_FE_EXECUTE && out->psn_cls == HM_PSN_EXPECTED &&
	    ++in_order == 3) {
		*out = (struct hm_resp_fe_out){ .cycle = out->cycle, .verdict = HM_RESP_FE_AHEAD,
						.psn_cls = HM_PSN_AHEAD, .send_nak = !in->nak_sent,
						.nak_sent = true };
	}
}

static int naks;

static void count_nak(void *arg, uint64_t t_ps, int dev, const char *event, const char *fields)
{
	(void)arg, (void)t_ps, (void)dev, (void)fields;
	naks += !strcmp(event, "resp.nak");
}

/* 20 messages with resp_fe in mode (lockstep or checked) on the front end above, each
 * mismatch counted: all of them arrive, one mismatch. Returns the NAKs the responder sent. */
static int psn_ahead(const char *mode)
{
	static struct hm_resp_fe_ops ops;
	struct tb_dev a, b;

	own_modes();
	ops = hm_resp_fe_model;
	ops.check = ahead_check;
	hm_twin_register(HM_TWIN_RESP_FE, &ops);
	tb_config("impl.resp_fe", mode);
	tb_config("impl.on_mismatch", "count");
	cr_assert_eq(hcasim_trace_observe("resp", count_nak, NULL), 0);
	tb_open(&a, 0);
	tb_open(&b, 1);
	tb_stderr_capture();
	cr_assert_eq(traffic(&a, &b, 20), 20, "the run goes on after a counted mismatch");
	counted(&a, &b, mode, "resp_fe", 1, "block resp_fe (check) at cycle ",
		"field verdict expected 0x0 (model) got 0x2 (rtl); ");
	hcasim_trace_observe("", NULL, NULL);
	return naks;
}

Test(twin, checked_acts_on_the_rtl_psn_class)
{
	/* the RTL's AHEAD is acted on: a sequence NAK goes out */
	cr_assert_eq(psn_ahead("checked"), 1);
}

Test(twin, lockstep_with_count_acts_on_the_c_twins_psn_class)
{
	/* the C twin's EXPECTED is acted on: no NAK */
	cr_assert_eq(psn_ahead("lockstep"), 0);
}

/* A timer block whose EXPIRE never fires: an ACK timeout is not taken. */
static void never_expire(void *b, const struct hm_timers_expire_in *in,
			 struct hm_timers_expire_out *out)
{
	hm_timers_model.expire(b, in, out);
	out->fired = false;
}

/* 10 messages over links that drop every 7th frame, timers in mode on the block above with
 * each mismatch counted (n of them); returns how many completed. */
static int lossy_timers(const char *mode, uint64_t n)
{
	static struct hm_timers_ops ops;
	struct tb_dev a, b;
	int done;

	own_modes();
	ops = hm_timers_model;
	ops.expire = never_expire;
	hm_twin_register(HM_TWIN_TIMERS, &ops);
	tb_config("impl.timers", mode);
	tb_config("impl.on_mismatch", "count");
	tb_config("fault.drop_every", "7");
	tb_rc_timeout = 4; /* 65.5 us: within the 1 ms traffic() waits for a completion */
	tb_open(&a, 0);
	tb_open(&b, 1);
	tb_stderr_capture();
	done = traffic(&a, &b, 10);
	counted(&a, &b, mode, "timers", n, "block timers (expire) at cycle ",
		"field fired expected 0x1 (model) got 0x0 (rtl); ");
	return done;
}

Test(twin, checked_acts_on_the_rtl_timer_expiry)
{
	/* the RTL says the ACK timer did not fire: the lost packet is never resent */
	cr_assert_eq(lossy_timers("checked", 1), 6);
}

Test(twin, lockstep_with_count_acts_on_the_c_twins_timer_expiry)
{
	/* the C twin's expiries are taken (the lost SEND's and the lost ACK's): every message
	 * arrives */
	cr_assert_eq(lossy_timers("lockstep", 2), 10);
}

Test(twin, a_checked_mismatch_halts_the_run_by_default)
{
	static struct hm_cqe_ops ops;
	struct tb_dev a, b;
	const char *why;

	own_modes();
	ops = cqe_with(bad_post);
	hm_twin_register(HM_TWIN_CQE, &ops);
	tb_config("impl.cqe", "checked"); /* impl.on_mismatch = stop, the default */
	tb_open(&a, 0);
	tb_open(&b, 1);
	tb_stderr_capture();
	cr_assert_lt(traffic(&a, &b, 20), 20, "the run went on after a mismatch");
	why = tb_expect_halt_reported();
	cr_assert(strstr(why, "checked mismatch: device ") &&
			  strstr(why, "block cqe (post) at cycle ") &&
			  strstr(why, "field image.owner expected 0x"),
		  "%s", why);
	cr_assert_eq(hcasim_mismatches(), 1);
	tb_close(&a);
	tb_close(&b);
}
