/* Simulation kernel: a binary min-heap of events keyed by (time_ps, seq). Cancellation marks
 * the slot dead; dead events are skipped when they reach the top. */
#include "sim/kernel.h"
#include "sim/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct sim_event {
	sim_time_t t;    /* when it fires */
	uint64_t seq;    /* tie-breaker and id */
	sim_event_fn fn; /* NULL once cancelled */
	void *arg;       /* argument for fn */
	bool owned;      /* arg is freed by the kernel if the event never runs */
	bool background; /* does not count as work pending (sim_step_busy) */
};

struct sim_kernel {
	sim_time_t now;          /* current time */
	uint64_t next_seq;       /* next sequence number (ids start at 1) */
	uint64_t run_seq;        /* the sequence number of the event running or last run */
	struct sim_event *heap;  /* min-heap */
	size_t len, cap;         /* heap size and capacity */
	uint64_t executed;       /* events run so far */
	uint64_t cancelled_live; /* cancelled events still in the heap */
	uint64_t background_live; /* live background events in the heap */
	char halted[1024];       /* why the simulation was stopped for good ("" = running) */
	sim_advance_fn advance;  /* told before time moves forward (co-simulation) */
	void *advance_arg;
	sim_horizon_fn horizon;  /* K1 across processes (fabric); NULL: one process */
	void *horizon_arg;
};

static struct sim_kernel *current;
static void (*step_hook)(void *arg); /* after every event (waves); NULL: none */
static void *step_hook_arg;

void sim_set_step_hook(void (*fn)(void *arg), void *arg)
{
	step_hook = fn;
	step_hook_arg = fn ? arg : NULL;
}

struct sim_kernel *sim_kernel(void)
{
	return current;
}

void sim_kernel_set_current(struct sim_kernel *k)
{
	current = k;
}

void sim_assert_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hcasim: SIM_ASSERT(%s) failed at %s:%d, t=%llu ps: ", cond, file, line,
		current ? (unsigned long long)current->now : 0ull);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

struct sim_kernel *sim_kernel_create(void)
{
	struct sim_kernel *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->next_seq = 1;
	return k;
}

void sim_kernel_destroy(struct sim_kernel *k)
{
	if (!k)
		return;
	if (current == k)
		current = NULL;
	for (size_t i = 0; i < k->len; i++)
		if (k->heap[i].owned)
			free(k->heap[i].arg);
	free(k->heap);
	free(k);
}

sim_time_t sim_now(const struct sim_kernel *k)
{
	return k->now;
}

static bool ev_less(const struct sim_event *a, const struct sim_event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_up(struct sim_kernel *k, size_t i)
{
	struct sim_event e = k->heap[i];

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!ev_less(&e, &k->heap[p]))
			break;
		k->heap[i] = k->heap[p];
		i = p;
	}
	k->heap[i] = e;
}

static void heap_down(struct sim_kernel *k, size_t i)
{
	struct sim_event e = k->heap[i];

	for (;;) {
		size_t l = 2 * i + 1, m = i;
		const struct sim_event *best = &e;

		if (l < k->len && ev_less(&k->heap[l], best)) {
			m = l;
			best = &k->heap[l];
		}
		if (l + 1 < k->len && ev_less(&k->heap[l + 1], best))
			m = l + 1;
		if (m == i)
			break;
		k->heap[i] = k->heap[m];
		i = m;
	}
	k->heap[i] = e;
}

static void insert(struct sim_kernel *k, sim_time_t t, uint64_t seq, sim_event_fn fn, void *arg,
		   bool owned, bool background)
{
	SIM_ASSERT(t >= k->now, "event scheduled in the past (t=%llu)", (unsigned long long)t);
	SIM_ASSERT(fn != NULL, "event without a function");
	if (k->len == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 256;
		struct sim_event *h = realloc(k->heap, cap * sizeof(*h));

		SIM_ASSERT(h != NULL, "out of memory growing the event queue to %zu", cap);
		k->heap = h;
		k->cap = cap;
	}
	k->heap[k->len] = (struct sim_event){ .t = t, .seq = seq, .fn = fn, .arg = arg,
					      .owned = owned, .background = background };
	heap_up(k, k->len++);
	k->background_live += background;
}

static sim_event_id schedule(struct sim_kernel *k, sim_time_t t, sim_event_fn fn, void *arg,
			     bool owned, bool background)
{
	insert(k, t, k->next_seq, fn, arg, owned, background);
	return k->next_seq++;
}

sim_event_id sim_schedule_at(struct sim_kernel *k, sim_time_t t, sim_event_fn fn, void *arg)
{
	return schedule(k, t, fn, arg, false, false);
}

sim_event_id sim_schedule_owned_at(struct sim_kernel *k, sim_time_t t, sim_event_fn fn, void *arg)
{
	return schedule(k, t, fn, arg, true, false);
}

sim_event_id sim_schedule_background_at(struct sim_kernel *k, sim_time_t t, sim_event_fn fn,
					void *arg)
{
	return schedule(k, t, fn, arg, true, true);
}

sim_event_id sim_schedule_in(struct sim_kernel *k, sim_time_t delay_ps, sim_event_fn fn, void *arg)
{
	return sim_schedule_at(k, k->now + delay_ps, fn, arg);
}

sim_event_id sim_reserve_id(struct sim_kernel *k)
{
	return k->next_seq++;
}

sim_event_id sim_schedule_owned_as(struct sim_kernel *k, sim_time_t t, sim_event_id id,
				   sim_event_fn fn, void *arg)
{
	SIM_ASSERT(id && id < k->next_seq && (t > k->now || id > k->run_seq),
		   "event %llu at t=%llu was not reserved, or comes before the running one",
		   (unsigned long long)id, (unsigned long long)t);
	insert(k, t, id, fn, arg, true, false);
	return id;
}

bool sim_cancel(struct sim_kernel *k, sim_event_id id)
{
	/* Linear search: cancellation is rare (timers restarted on progress use it, and those
	 * are few per QP); the heap is not indexed by id to keep scheduling cheap. */
	for (size_t i = 0; i < k->len; i++) {
		if (k->heap[i].seq == id && k->heap[i].fn) {
			if (k->heap[i].owned)
				free(k->heap[i].arg);
			k->heap[i].fn = NULL;
			k->heap[i].owned = false;
			k->background_live -= k->heap[i].background;
			k->cancelled_live++;
			return true;
		}
	}
	return false;
}

static struct sim_event pop(struct sim_kernel *k)
{
	struct sim_event top = k->heap[0];

	k->heap[0] = k->heap[--k->len];
	if (k->len)
		heap_down(k, 0);
	return top;
}

/* Drop cancelled events sitting at the top of the heap. */
static void skip_dead(struct sim_kernel *k)
{
	while (k->len && !k->heap[0].fn) {
		pop(k);
		k->cancelled_live--;
	}
}

void sim_halt(struct sim_kernel *k, const char *why)
{
	if (!k->halted[0])
		snprintf(k->halted, sizeof(k->halted), "%s", why && *why ? why : "halted");
}

const char *sim_halted(const struct sim_kernel *k)
{
	return k && k->halted[0] ? k->halted : NULL;
}

/* K1: with a horizon, let it make sure nothing from another process comes at or before the
 * next event (or limit, if earlier), taking in what does. false when the simulation is halted,
 * or when the horizon's wait was interrupted (-EINTR: the device thread gives the simulation
 * back to the program, docs/fabric.md#the-device-thread), which halts nothing. */
static bool settle(struct sim_kernel *k, sim_time_t limit)
{
	int r = 1;

	while (k->horizon && r > 0 && !k->halted[0]) {
		skip_dead(k);
		r = k->horizon(k->horizon_arg,
			       k->len && k->heap[0].t < limit ? k->heap[0].t : limit);
		if (r == -EINTR)
			return false;
		if (r < 0)
			sim_halt(k, sim_last_error());
	}
	skip_dead(k);
	return !k->halted[0];
}

bool sim_settle(struct sim_kernel *k, sim_time_t limit)
{
	return settle(k, limit);
}

/* Run the event at the top of the queue (there is one, and it is live). */
static void run_top(struct sim_kernel *k)
{
	struct sim_event e = pop(k);

	if (e.t > k->now && k->advance)
		k->advance(k->advance_arg, k->now, e.t);
	k->now = e.t;
	k->run_seq = e.seq;
	k->executed++;
	k->background_live -= e.background;
	e.fn(e.arg);
	if (step_hook)
		step_hook(step_hook_arg);
}

bool sim_step(struct sim_kernel *k)
{
	skip_dead(k);
	if (!k->len || k->halted[0] || !settle(k, SIM_TIME_NEVER))
		return false;
	run_top(k);
	return true;
}

bool sim_step_busy(struct sim_kernel *k)
{
	if (k->len - k->cancelled_live == k->background_live)
		return false;
	return sim_step(k);
}

void sim_run_until(struct sim_kernel *k, sim_time_t t)
{
	for (;;) {
		if (!settle(k, t) || !k->len || k->heap[0].t > t)
			break;
		run_top(k);
	}
	if (t > k->now && !k->halted[0]) {
		if (k->advance)
			k->advance(k->advance_arg, k->now, t);
		k->now = t;
	}
}

int sim_run_while_not(struct sim_kernel *k, bool (*pred)(void *), void *arg, sim_time_t limit)
{
	for (;;) {
		if (pred(arg))
			return 0;
		if (k->halted[0] || !settle(k, limit))
			return -ECANCELED;
		/* Dry: nothing can come (across processes, the horizon said so for an unlimited
		 * wait; with a limit, nothing comes before it and the wait times out). */
		if (!k->len && (!k->horizon || limit == SIM_TIME_NEVER))
			return -EDEADLK;
		if (!k->len || k->heap[0].t > limit) {
			if (limit > k->now) {
				if (k->advance)
					k->advance(k->advance_arg, k->now, limit);
				k->now = limit;
			}
			return -ETIMEDOUT;
		}
		run_top(k);
	}
}

uint64_t sim_host_actions;

bool sim_next_event(struct sim_kernel *k, sim_time_t *t)
{
	skip_dead(k);
	if (!k->len)
		return false;
	*t = k->heap[0].t;
	return true;
}

uint64_t sim_events_executed(const struct sim_kernel *k)
{
	return k->executed;
}

uint64_t sim_events_pending(const struct sim_kernel *k)
{
	return k->len - k->cancelled_live;
}

void sim_kernel_set_advance_hook(struct sim_kernel *k, sim_advance_fn fn, void *arg)
{
	k->advance = fn;
	k->advance_arg = arg;
}

void sim_kernel_set_horizon(struct sim_kernel *k, sim_horizon_fn fn, void *arg)
{
	k->horizon = fn;
	k->horizon_arg = arg;
}

void sim_kernel_start_at(struct sim_kernel *k, sim_time_t t)
{
	if (t <= k->now)
		return;
	if (k->advance)
		k->advance(k->advance_arg, k->now, t);
	k->now = t;
	for (size_t i = 0; i < k->len; i++)
		k->heap[i].t = k->heap[i].t < t ? t : k->heap[i].t;
	/* Raising keys to t can put a later-scheduled event above an earlier one: rebuild. */
	for (size_t i = k->len / 2; i-- > 0;)
		heap_down(k, i);
}
