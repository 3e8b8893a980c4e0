/* Simulation kernel: ordering, cancellation, idle skipping, determinism, PRNG. */
#include "sim/kernel.h"
#include "sim/rng.h"
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rec {
	struct sim_kernel *k; /* kernel */
	char log[256];        /* order of firing */
	uint64_t when[8];     /* time of each firing */
	int n;                /* firings */
};

static struct rec R;

static void mark(void *arg)
{
	R.log[R.n] = (char)(uintptr_t)arg;
	R.when[R.n] = sim_now(R.k);
	R.n++;
}

Test(kernel, events_fire_in_time_then_schedule_order)
{
	memset(&R, 0, sizeof(R));
	R.k = sim_kernel_create();
	sim_schedule_at(R.k, 300, mark, (void *)'c');
	sim_schedule_at(R.k, 100, mark, (void *)'a');
	sim_schedule_at(R.k, 300, mark, (void *)'d');
	sim_schedule_at(R.k, 200, mark, (void *)'b');
	sim_run_until(R.k, 1000);
	cr_assert_str_eq(R.log, "abcd");
	cr_assert_eq(R.when[0], 100);
	cr_assert_eq(R.when[3], 300);
	cr_assert_eq(sim_now(R.k), 1000, "run_until leaves time at its limit");
	sim_kernel_destroy(R.k);
}

Test(kernel, a_late_start_runs_earlier_events_at_the_start_in_their_order)
{
	memset(&R, 0, sizeof(R));
	R.k = sim_kernel_create();
	/* Scheduled late to early, so that raising their times must reorder the heap. */
	sim_schedule_at(R.k, 900, mark, (void *)'e');
	sim_schedule_at(R.k, 300, mark, (void *)'b');
	sim_schedule_at(R.k, 200, mark, (void *)'c');
	sim_schedule_at(R.k, 100, mark, (void *)'d');
	sim_schedule_at(R.k, 50, mark, (void *)'a');
	sim_kernel_start_at(R.k, 500);
	cr_assert_eq(sim_now(R.k), 500);
	sim_kernel_start_at(R.k, 400); /* never back */
	cr_assert_eq(sim_now(R.k), 500);
	sim_run_until(R.k, 1000);
	/* The early ones at 500, in the order they were scheduled; then the one after. */
	cr_assert_str_eq(R.log, "bcdae");
	for (int i = 0; i < 4; i++)
		cr_assert_eq(R.when[i], 500);
	cr_assert_eq(R.when[4], 900);
	sim_kernel_destroy(R.k);
}

/* Events due far ahead when scheduled (timers) wait apart from the pipeline's (FAR_PS in
 * sim/kernel.c, 10 us): wherever an event waited, equal times still run in schedule order, a
 * far one can be cancelled, and a late start raises both kinds. */
static void mark_then_schedule(void *arg)
{
	mark(arg);
	sim_schedule_at(R.k, 20 * SIM_PS_PER_US, mark, (void *)'c'); /* 19 us ahead */
}

Test(kernel, events_due_far_ahead_keep_the_order_of_time_then_schedule)
{
	sim_event_id id;

	memset(&R, 0, sizeof(R));
	R.k = sim_kernel_create();
	sim_schedule_at(R.k, 20 * SIM_PS_PER_US, mark, (void *)'b');       /* far */
	sim_schedule_at(R.k, SIM_PS_PER_US, mark_then_schedule, (void *)'a');
	id = sim_schedule_at(R.k, 20 * SIM_PS_PER_US, mark, (void *)'x'); /* far, cancelled */
	sim_schedule_at(R.k, SIM_PS_PER_MS, mark, (void *)'f');            /* far, last */
	cr_assert(sim_cancel(R.k, id));
	sim_run_until(R.k, 15 * SIM_PS_PER_US);
	cr_assert_str_eq(R.log, "a");
	sim_schedule_at(R.k, 20 * SIM_PS_PER_US, mark, (void *)'d'); /* 5 us ahead: near */
	sim_schedule_at(R.k, 20 * SIM_PS_PER_US - 1, mark, (void *)'_');
	cr_assert_eq(sim_events_pending(R.k), 5);
	sim_run_until(R.k, 30 * SIM_PS_PER_US);
	cr_assert_str_eq(R.log, "a_bcd");
	cr_assert_eq(R.when[2], 20 * SIM_PS_PER_US);
	cr_assert_eq(R.when[4], 20 * SIM_PS_PER_US);
	/* a late start: a far event scheduled before a near one runs before it at the start */
	sim_schedule_at(R.k, 500 * SIM_PS_PER_US, mark, (void *)'e');
	sim_schedule_at(R.k, 31 * SIM_PS_PER_US, mark, (void *)'g');
	sim_kernel_start_at(R.k, 600 * SIM_PS_PER_US);
	sim_run_until(R.k, 2 * SIM_PS_PER_MS);
	cr_assert_str_eq(R.log, "a_bcdegf");
	cr_assert_eq(R.when[6], 600 * SIM_PS_PER_US);
	cr_assert_eq(R.when[7], SIM_PS_PER_MS);
	cr_assert_eq(sim_events_pending(R.k), 0);
	sim_kernel_destroy(R.k);
}

Test(kernel, cancelled_event_never_fires)
{
	sim_event_id id;

	memset(&R, 0, sizeof(R));
	R.k = sim_kernel_create();
	sim_schedule_at(R.k, 10, mark, (void *)'a');
	id = sim_schedule_at(R.k, 20, mark, (void *)'x');
	sim_schedule_at(R.k, 30, mark, (void *)'b');
	cr_assert(sim_cancel(R.k, id));
	cr_assert_not(sim_cancel(R.k, id), "second cancel reports nothing to cancel");
	cr_assert_eq(sim_events_pending(R.k), 2);
	sim_run_until(R.k, 100);
	cr_assert_str_eq(R.log, "ab");
	sim_kernel_destroy(R.k);
}

static bool fired_once(void *arg)
{
	(void)arg;
	return R.n > 0;
}

/* An owned event needs a malloc'd arg: the letter to log. */
static void mark_owned(void *arg)
{
	mark((void *)(uintptr_t)*(char *)arg);
	free(arg);
}

static char *letter(char c)
{
	char *p = malloc(1);

	cr_assert_not_null(p);
	*p = c;
	return p;
}

/* A reserved id orders its event as if it had been scheduled when the id was reserved, even
 * when it is scheduled later, at the time it fires (the ACK timer's one-event-per-QP scheme). */
Test(kernel, a_reserved_id_keeps_the_place_of_its_reservation)
{
	sim_event_id r1, r2;

	memset(&R, 0, sizeof(R));
	R.k = sim_kernel_create();
	sim_schedule_at(R.k, 100, mark, (void *)'a');
	r1 = sim_reserve_id(R.k);
	sim_schedule_at(R.k, 100, mark, (void *)'c');
	r2 = sim_reserve_id(R.k);
	sim_schedule_at(R.k, 50, mark, (void *)'e');
	cr_assert_eq(r2, r1 + 2, "a reservation takes one id");
	/* r2 first, at an earlier time; r1 later, and both at t=100 after 'a' */
	sim_schedule_owned_as(R.k, 100, r2, mark_owned, letter('d'));
	sim_run_until(R.k, 60);
	sim_schedule_owned_as(R.k, 100, r1, mark_owned, letter('b'));
	sim_schedule_at(R.k, 100, mark, (void *)'f');
	sim_run_until(R.k, 1000);
	cr_assert_str_eq(R.log, "eabcdf");
	sim_kernel_destroy(R.k);
}

Test(kernel, idle_time_is_skipped_in_one_event)
{
	const uint64_t ten_s = 10 * SIM_PS_PER_S;

	memset(&R, 0, sizeof(R));
	R.k = sim_kernel_create();
	/* A timer 10 simulated seconds away: one event, however many cycles lie between. */
	sim_schedule_in(R.k, ten_s, mark, (void *)'t');
	cr_assert_eq(sim_run_while_not(R.k, fired_once, NULL, SIM_TIME_NEVER), 0);
	cr_assert_eq(sim_events_executed(R.k), 1);
	cr_assert_eq(sim_now(R.k), ten_s);
	sim_kernel_destroy(R.k);
}

static bool never(void *arg)
{
	(void)arg;
	return false;
}

Test(kernel, waiting_on_an_empty_queue_reports_deadlock)
{
	struct sim_kernel *k = sim_kernel_create();

	cr_assert_eq(sim_run_while_not(k, never, NULL, SIM_TIME_NEVER), -EDEADLK);
	sim_schedule_at(k, 500, mark, NULL);
	memset(&R, 0, sizeof(R));
	R.k = k;
	cr_assert_eq(sim_run_while_not(k, never, NULL, 100), -ETIMEDOUT);
	cr_assert_eq(sim_now(k), 100, "time advanced to the limit");
	cr_assert_eq(R.n, 0, "the event beyond the limit did not run");
	sim_kernel_destroy(k);
}

Test(kernel, clock_edges_align_to_the_period)
{
	struct sim_clock c = { "core", 2000 };

	cr_assert_eq(sim_clock_edge(&c, 0), 0);
	cr_assert_eq(sim_clock_edge(&c, 1), 2000);
	cr_assert_eq(sim_clock_edge(&c, 2000), 2000);
	cr_assert_eq(sim_clock_after(&c, 2001, 3), 4000 + 3 * 2000);
	cr_assert_eq(sim_clock_cycles(&c, 10999), 5);
}

Test(kernel, rng_is_seeded_per_source)
{
	struct sim_rng a, b, c, d;

	sim_rng_init(&a, 42, "link0.drop");
	sim_rng_init(&b, 42, "link0.drop");
	sim_rng_init(&c, 42, "link1.drop");
	sim_rng_init(&d, 43, "link0.drop");
	for (int i = 0; i < 100; i++) {
		uint64_t x = sim_rng_next(&a);

		cr_assert_eq(x, sim_rng_next(&b), "same seed and source, same numbers");
	}
	cr_assert_neq(sim_rng_next(&a), sim_rng_next(&c), "another source draws other numbers");
	cr_assert_neq(sim_rng_next(&b), sim_rng_next(&d), "another seed draws other numbers");
	for (int i = 0; i < 1000; i++)
		cr_assert_lt(sim_rng_below(&a, 7), 7);
}

/* Determinism of the whole system: the default simulation twice, every trace category on,
 * gives byte-identical traces and byte-identical pcaps. */
Test(kernel, two_runs_give_identical_traces)
{
	char cmd[1024], p1[] = "/tmp/hcasim-det1-XXXXXX", p2[] = "/tmp/hcasim-det2-XXXXXX";
	size_t l1;
	char *t1;
	int fd1 = mkstemp(p1), fd2 = mkstemp(p2);

	cr_assert(fd1 >= 0 && fd2 >= 0);
	for (int i = 0; i < 2; i++) {
		snprintf(cmd, sizeof(cmd),
			 "HCASIM_TRACE='*' HCASIM_TRACE_FILE=%s %s/bin/hcasim-run %s > /dev/null",
			 i ? p2 : p1, HCASIM_BUILD_DIR, i ? p2 : p1);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
	}
	t1 = tb_slurp(p1, &l1);
	cr_assert_gt(l1, 10000, "the trace has content (%zu bytes)", l1);
	cr_assert(strstr(t1, "qp.modify") && strstr(t1, "cmd.done") && strstr(t1, "port.sm"));
	free(t1);
	tb_same_file("the traces of two runs", p1, p2, 0);
	{
		char c1[64], c2[64];

		snprintf(c1, sizeof(c1), "%s.link0.pcap", p1);
		snprintf(c2, sizeof(c2), "%s.link0.pcap", p2);
		tb_same_file("the pcaps of two runs (the workload)", c1, c2, 100001);
		unlink(c1);
		unlink(c2);
	}
	unlink(p1);
	unlink(p2);
}

/* The object cache hands back the blocks put into it, last in first out, keeps no more than
 * SIM_OBJCACHE_KEEP, and its blocks are ordinary malloc'd memory (free() takes them). */
Test(kernel, the_object_cache_reuses_freed_blocks_and_keeps_a_bounded_number)
{
	static struct sim_objcache c = SIM_OBJCACHE(40);
	void *b[SIM_OBJCACHE_KEEP + 2];
	char *x;

	for (int i = 0; i < SIM_OBJCACHE_KEEP + 2; i++) {
		b[i] = sim_obj_get(&c);
		memset(b[i], 0x5a, 40); /* the whole size is there */
	}
	cr_assert_eq(c.n, 0u);
	for (int i = 0; i < SIM_OBJCACHE_KEEP + 2; i++)
		sim_obj_put(&c, b[i]);
	cr_assert_eq(c.n, (unsigned)SIM_OBJCACHE_KEEP, "two blocks freed, not kept");
	sim_obj_put(&c, NULL);
	cr_assert_eq(c.n, (unsigned)SIM_OBJCACHE_KEEP, "NULL is not a block");
	x = sim_obj_get(&c);
	cr_assert_eq(x, b[SIM_OBJCACHE_KEEP - 1], "the last block kept comes back first");
	cr_assert_eq(sim_obj_get(&c), b[SIM_OBJCACHE_KEEP - 2]);
	cr_assert_eq(c.n, (unsigned)SIM_OBJCACHE_KEEP - 2);
	free(x); /* a cached block is malloc'd memory */
	while (c.n)
		free(sim_obj_get(&c));
	free(b[SIM_OBJCACHE_KEEP - 2]);
}
