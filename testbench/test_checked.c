/* Mode checked (docs/rtl.md#checked): the RTL drives and the C twin checks it. For every block
 * with a test-only RTL bug (HCASIM_RTL_BUG=<block>), in the running system: with
 * impl.on_mismatch = stop the run halts at the bug's first transaction with a report naming
 * block, op, cycle, field, both values and the wave file; with count it goes on, every
 * mismatch counted (hcasim_mismatches) and summed up at shutdown, and what the system does
 * next is what the buggy RTL answered, not what the C twin did (the RTL's answer is the one
 * used). The same bug in lockstep with count, where the C twin drives, leaves the workload
 * intact. */
#include "testbench/tb.h"
#include "model/twin.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What a run of writes() did. */
struct run {
	int done;                  /* completions polled, all successful */
	enum ibv_wc_status status; /* the first completion that failed; IBV_WC_SUCCESS if none */
	bool stuck;                /* no completion came within 1 ms of simulated time */
};

/* Post n signaled 64-byte RDMA WRITEs from HCA 0 to HCA 1 on one RC QP, depth (at most 4, the
 * send queue tb makes) in flight, and poll their completions, until all are done, one fails,
 * none comes within 1 ms of simulated time, or the run halts. */
static struct run writes(int n, int depth)
{
	struct tb_dev a, b;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *src, *dst;
	struct run r = { 0, IBV_WC_SUCCESS, false };
	int posted = 0;

	tb_open(&a, 0);
	tb_open(&b, 1);
	qa = tb_create_qp(&a, IBV_QPT_RC);
	qb = tb_create_qp(&b, IBV_QPT_RC);
	tb_connect(&a, qa, &b, qb->qp_num, IBV_MTU_1024);
	tb_connect(&b, qb, &a, qa->qp_num, IBV_MTU_1024);
	src = tb_mr(&a, 64);
	dst = tb_mr(&b, 64);
	while (r.done < n && r.status == IBV_WC_SUCCESS && !r.stuck && !hcasim_halted()) {
		uint64_t start = hcasim_now_ps();
		struct ibv_wc wc;
		int got = 0;

		for (; posted < n && posted - r.done < depth; posted++) {
			struct ibv_sge s = { (uintptr_t)src->addr, 64, src->lkey };
			struct ibv_send_wr wr = { .wr_id = (uint64_t)posted, .sg_list = &s,
						  .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
						  .send_flags = IBV_SEND_SIGNALED }, *bad;

			wr.wr.rdma.remote_addr = (uintptr_t)dst->addr;
			wr.wr.rdma.rkey = dst->rkey;
			cr_assert_eq(ibv_post_send(qa, &wr, &bad), 0, "%s", hcasim_last_error());
		}
		while (got == 0 && !hcasim_halted() && hcasim_now_ps() - start < 1000000000ull)
			got = ibv_poll_cq(a.cq, 1, &wc);
		cr_assert_geq(got, 0);
		r.stuck = got == 0 && !hcasim_halted();
		if (got == 1 && wc.status != IBV_WC_SUCCESS)
			r.status = wc.status;
		else if (got == 1)
			r.done++;
	}
	if (hcasim_halted()) {
		/* nothing runs after a halt: the objects are left, the lists freed */
		ibv_free_device_list(a.list);
		ibv_free_device_list(b.list);
		return r;
	}
	cr_assert_eq(ibv_destroy_qp(qa), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(qb), 0, "%s", hcasim_last_error());
	{
		void *sbuf = src->addr, *dbuf = dst->addr;

		cr_assert_eq(ibv_dereg_mr(src), 0);
		cr_assert_eq(ibv_dereg_mr(dst), 0);
		free(sbuf);
		free(dbuf);
	}
	tb_close(&a);
	tb_close(&b);
	return r;
}

/* Block b in mode (checked or lockstep) with its RTL bug, impl.on_mismatch = on, waves off
 * (so that a report says how to get them). Skipped in a build without the RTL. */
static void env(enum hm_twin b, const char *mode, const char *on)
{
	char spec[64];

	if (!hm_twin_rtl(b))
		cr_skip_test("this build has no RTL twin of %s (no Verilator)", hm_twin_name(b));
	snprintf(spec, sizeof(spec), "%s=%s", hm_twin_name(b), mode);
	setenv("HCASIM_IMPL", spec, 1);
	setenv("HCASIM_RTL_BUG", hm_twin_name(b), 1);
	unsetenv("WAVES");
	unsetenv("HCASIM_WAVES_DIR");
	unsetenv("WAVES_DIR");
	tb_config("impl.on_mismatch", on);
}

/* b checked with its bug, impl.on_mismatch = stop (the default, not set): the workload w halts
 * at the bug's first transaction, one mismatch, the report naming device, block, op, cycle,
 * field and both values (what) and how to get the block's waves. Returns the run. */
static struct run halts(enum hm_twin b, struct run (*w)(void), const char *op, const char *what)
{
	const char *name = hm_twin_name(b), *why;
	char want[160];
	struct run r;

	env(b, "checked", "stop");
	tb_stderr_capture();
	r = w();
	why = tb_expect_halt_reported();
	snprintf(want, sizeof(want), "checked mismatch: device 0 block %s (%s) at cycle ", name,
		 op);
	cr_assert(strstr(why, want) && strstr(why, what), "%s", why);
	snprintf(want, sizeof(want), "; no waves: rerun with WAVES=1 for build/waves/hca0.%s.fst",
		 name);
	cr_assert(strstr(why, want), "%s", why);
	cr_assert_eq(hcasim_mismatches(), 1);
	cr_assert_str_eq(hcasim_mismatch(0), why);
	cr_assert_null(hcasim_mismatch(1));
	return r;
}

/* b in mode with its bug and impl.on_mismatch = count: the workload w runs on, n mismatches
 * are counted, the first naming block, op and field with both values (what); at
 * hcasim_shutdown() the count by block and the first report are printed. Returns the run. */
static struct run counts(enum hm_twin b, const char *mode, struct run (*w)(void), uint64_t n,
			 const char *op, const char *what)
{
	const char *name = hm_twin_name(b);
	char want[200], *err;
	struct run r;

	env(b, mode, "count");
	tb_stderr_capture();
	r = w();
	cr_assert_null(hcasim_halted(), "%s", hcasim_halted());
	hcasim_shutdown();
	err = tb_stderr_captured();
	cr_assert_eq(hcasim_mismatches(), n, "%llu mismatches:\n%s",
		     (unsigned long long)hcasim_mismatches(), err);
	snprintf(want, sizeof(want), "%s mismatch: device 0 block %s (%s) at cycle ", mode, name,
		 op);
	cr_assert(strstr(hcasim_mismatch(0), want) && strstr(hcasim_mismatch(0), what), "%s",
		  hcasim_mismatch(0));
	/* the first reports are printed as they happen, the count at shutdown */
	snprintf(want, sizeof(want), "hcasim: %llu mismatch%s between RTL and C twins (%s %llu); "
		 "the first: %s\n", (unsigned long long)n, n == 1 ? "" : "es", name,
		 (unsigned long long)n, hcasim_mismatch(0));
	cr_assert(strstr(err, hcasim_mismatch(0)) && strstr(err, want), "%s", err);
	free(err);
	return r;
}

/* ---- cqe: the owner bit never flips ---- */

/* 300 WRITEs one after the other: the send CQ's ring (128 entries) wraps. */
static struct run ring_wrap(void)
{
	return writes(300, 1);
}

#define CQE_BUG "field image.owner expected 0x0 (model) got 0x1 (rtl); "

Test(rtl_checked, cqe_bug_halts_at_the_first_cqe_of_the_second_pass)
{
	cr_assert_eq(halts(HM_TWIN_CQE, ring_wrap, "post", CQE_BUG).done, 128);
}

Test(rtl_checked, cqe_bug_counted_the_rtl_owner_bit_is_written)
{
	struct run r = counts(HM_TWIN_CQE, "checked", ring_wrap, 1, "post", CQE_BUG);

	/* the 129th CQE went out with the RTL's owner bit, of the first pass: the driver takes
	 * the slot for one not written yet, and waits */
	cr_assert(r.done == 128 && r.stuck, "%d done, stuck %d", r.done, r.stuck);
}

Test(rtl_checked, cqe_bug_counted_in_lockstep_the_c_twin_drives)
{
	/* every CQE of the second pass differs; the C twin's are written: all complete */
	cr_assert_eq(counts(HM_TWIN_CQE, "lockstep", ring_wrap, 128, "post", CQE_BUG).done, 300);
}

/* ---- sched: the POP ignores the enqueue still in the pipeline ---- */

/* 150 WRITEs one after the other, each doorbell answered in the cycle it is rung. */
static struct run doorbell_at_once(void)
{
	tb_config("pipe.doorbell_cycles", "0");
	return writes(150, 1);
}

#define SCHED_BUG "field valid expected 0x1 (model) got 0x0 (rtl); "

Test(rtl_checked, sched_bug_halts_at_the_first_pop)
{
	cr_assert_eq(halts(HM_TWIN_SCHED, doorbell_at_once, "pop", SCHED_BUG).done, 0);
}

Test(rtl_checked, sched_bug_counted_the_rtl_pop_decides)
{
	struct run r = counts(HM_TWIN_SCHED, "checked", doorbell_at_once, 1, "pop", SCHED_BUG);

	/* the RTL found no QP to send for: the first WRITE is never sent */
	cr_assert(r.done == 0 && r.stuck, "%d done, stuck %d", r.done, r.stuck);
}

Test(rtl_checked, sched_bug_counted_in_lockstep_the_c_twin_drives)
{
	/* each WRITE's POP differs twice (empty, then the QP a cycle late) */
	cr_assert_eq(counts(HM_TWIN_SCHED, "lockstep", doorbell_at_once, 300, "pop", SCHED_BUG).done,
		     150);
}

/* ---- mkey: an access ending at its region's last byte is refused ---- */

/* 150 WRITEs one after the other, each of its whole 64-byte source and target region. */
static struct run whole_regions(void)
{
	return writes(150, 1);
}

#define MKEY_BUG "field result expected 0x0 (model) got 0x4 (rtl); "

Test(rtl_checked, mkey_bug_halts_at_the_first_key_check)
{
	cr_assert_eq(halts(HM_TWIN_MKEY, whole_regions, "check", MKEY_BUG).done, 0);
}

Test(rtl_checked, mkey_bug_counted_the_rtl_refusal_fails_the_write)
{
	struct run r = counts(HM_TWIN_MKEY, "checked", whole_regions, 1, "check", MKEY_BUG);

	/* the RTL's BAD_RANGE on the lkey: the WRITE completes in error, the QP with it */
	cr_assert(r.done == 0 && r.status == IBV_WC_LOC_PROT_ERR, "%d done, status %d", r.done,
		  r.status);
}

Test(rtl_checked, mkey_bug_counted_in_lockstep_the_c_twin_drives)
{
	/* the lkey check of every WRITE differs (its rkey check is resp_fe's key stage, whose
	 * mkey carries no bug: rtl/resp_fe.sv) */
	cr_assert_eq(counts(HM_TWIN_MKEY, "lockstep", whole_regions, 150, "check", MKEY_BUG).done,
		     150);
}

/* ---- timers: a restart to a later expiry keeps the earlier one ---- */

/* 4 WRITEs in flight: each ACK restarts the ACK timer to a later expiry. */
static struct run in_flight(void)
{
	return writes(4, 4);
}

#define TIMERS_BUG "field was_at expected 0x"

Test(rtl_checked, timers_bug_halts_at_the_first_restart)
{
	cr_assert_lt(halts(HM_TWIN_TIMERS, in_flight, "set", TIMERS_BUG).done, 4);
}

/* The expiries the timers answered (resp_at of hca0.timers.txn in the model's waves, which
 * record the answer used) in timers mode run with the bug, counted, waves in dir; whether they
 * include the C twin's (expected) and the RTL's (got) of the first mismatch, which names the
 * block's FST, finished there. */
static void timers_answers(const char *mode, bool *model, bool *rtl)
{
	char dir[] = "/tmp/hcasim-checked-XXXXXX", vcd[64], fst[64];
	unsigned long long want, got;
	struct tb_wave w;
	struct run r;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(vcd, sizeof(vcd), "%s/model.vcd", dir);
	snprintf(fst, sizeof(fst), "waves: %s/hca0.timers.fst (scope hca0.timers)", dir);
	cr_assert_eq(hcasim_waves(vcd), 0, "%s", hcasim_last_error());
	r = counts(HM_TWIN_TIMERS, mode, in_flight, 7, "set", TIMERS_BUG);
	cr_assert_eq(r.done, 4, "the answers differ in was_at only, which nothing acts on");
	cr_assert(strstr(hcasim_mismatch(0), fst), "%s", hcasim_mismatch(0));
	cr_assert_eq(sscanf(strstr(hcasim_mismatch(0), "expected "),
			    "expected 0x%llx (model) got 0x%llx (rtl)", &want, &got), 2);
	tb_read_wave(vcd, "hca0.timers.txn.resp_at", &w);
	*model = *rtl = false;
	for (size_t i = 0; i < w.n; i++) {
		*model |= w.v[i] == want;
		*rtl |= w.v[i] == got;
	}
	snprintf(fst, sizeof(fst), "%s/hca0.timers.fst", dir);
	cr_assert_eq(access(fst, R_OK), 0, "%s", fst);
	tb_rm_tmpdir(dir);
}

Test(rtl_checked, timers_bug_counted_the_rtl_expiry_is_the_answer)
{
	bool model, rtl;

	timers_answers("checked", &model, &rtl);
	cr_assert(rtl && !model, "the RTL's was_at answered: %d, the C twin's: %d", rtl, model);
}

Test(rtl_checked, timers_bug_counted_in_lockstep_the_c_twin_answers)
{
	bool model, rtl;

	timers_answers("lockstep", &model, &rtl);
	cr_assert(model, "the C twin's was_at is not the answer");
}
