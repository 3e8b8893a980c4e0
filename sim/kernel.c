/* Simulation kernel: a binary min-heap of events keyed by (time_ps, seq). Cancellation marks
 * the slot dead; dead events are skipped when they reach the top. */
#include "sim/kernel.h"
#include "sim/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* 32 bytes, two to a cache line: the flags ride in the low bits of the key, below the sequence
 * number, so (t, key) orders as (t, seq) (sequence numbers are unique). */
struct sim_event {
	sim_time_t t;    /* when it fires */
	uint64_t key;    /* seq << EV_SHIFT | EV_OWNED | EV_BACKGROUND */
	sim_event_fn fn; /* NULL once cancelled */
	void *arg;       /* argument for fn */
};

/* A binary min-heap of events. */
struct evheap {
	struct sim_event *ev;
	size_t len, cap;
};

/* Events due this far or further ahead when scheduled (timers: an ACK timeout, an RNR wait, a
 * fault window) wait in a heap of their own, so that the heap the pipeline's events go through
 * is shallow. The next event is the earlier of the two tops: the order is (t, seq) as before. */
#define FAR_PS (SIM_PS_PER_MS)

enum {
	EV_OWNED = 1,      /* arg is freed by the kernel if the event never runs */
	EV_BACKGROUND = 2, /* does not count as work pending (sim_step_busy) */
	EV_SHIFT = 2,
};

struct sim_kernel {
	sim_time_t now;          /* current time */
	uint64_t next_seq;       /* next sequence number (ids start at 1) */
	uint64_t run_seq;        /* the sequence number of the event running or last run */
	struct evheap near, far; /* events due within FAR_PS of their scheduling, and later */
	sim_time_t far_t;        /* the time at the top of far (SIM_TIME_NEVER: far is empty) */
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
	k->far_t = SIM_TIME_NEVER;
	return k;
}

void sim_kernel_destroy(struct sim_kernel *k)
{
	if (!k)
		return;
	if (current == k)
		current = NULL;
	for (struct evheap *h = &k->near; h; h = h == &k->near ? &k->far : NULL) {
		for (size_t i = 0; i < h->len; i++)
			if (h->ev[i].key & EV_OWNED)
				free(h->ev[i].arg);
		free(h->ev);
	}
	free(k);
}

sim_time_t sim_now(const struct sim_kernel *k)
{
	return k->now;
}

static bool ev_less(const struct sim_event *a, const struct sim_event *b)
{
	return a->t < b->t || (a->t == b->t && a->key < b->key);
}

/* Put e at the hole i of h, raised as far as it must go. e comes by value, never stored and
 * loaded back: a struct written field by field and read back whole stalls store forwarding. */
static void heap_up(struct evheap *h, size_t i, struct sim_event e)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!ev_less(&e, &h->ev[p]))
			break;
		h->ev[i] = h->ev[p];
		i = p;
	}
	h->ev[i] = e;
}

/* Put e at the hole i of h, lowered as far as it must go (e by value, as in heap_up). */
static void heap_down(struct evheap *h, size_t i, struct sim_event e)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		const struct sim_event *best = &e;

		if (l < h->len && ev_less(&h->ev[l], best)) {
			m = l;
			best = &h->ev[l];
		}
		if (l + 1 < h->len && ev_less(&h->ev[l + 1], best))
			m = l + 1;
		if (m == i)
			break;
		h->ev[i] = h->ev[m];
		i = m;
	}
	h->ev[i] = e;
}

/* The heap whose top is the next event (NULL when none is pending). */
static inline struct evheap *next_heap(struct sim_kernel *k)
{
	if (k->near.len && k->near.ev[0].t < k->far_t)
		return &k->near;
	if (!k->far.len)
		return k->near.len ? &k->near : NULL;
	if (!k->near.len || ev_less(&k->far.ev[0], &k->near.ev[0]))
		return &k->far;
	return &k->near;
}

static inline size_t queued(const struct sim_kernel *k)
{
	return k->near.len + k->far.len;
}

static void insert(struct sim_kernel *k, sim_time_t t, uint64_t seq, sim_event_fn fn, void *arg,
		   bool owned, bool background)
{
	SIM_ASSERT(t >= k->now, "event scheduled in the past (t=%llu)", (unsigned long long)t);
	SIM_ASSERT(fn != NULL, "event without a function");
	struct evheap *h = t - k->now >= FAR_PS ? &k->far : &k->near;

	if (h->len == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 256;
		struct sim_event *ev = realloc(h->ev, cap * sizeof(*ev));

		SIM_ASSERT(ev != NULL, "out of memory growing the event queue to %zu", cap);
		h->ev = ev;
		h->cap = cap;
	}
	heap_up(h, h->len++,
		(struct sim_event){ .t = t, .fn = fn, .arg = arg,
				    .key = seq << EV_SHIFT | (owned ? EV_OWNED : 0) |
					   (background ? EV_BACKGROUND : 0) });
	if (h == &k->far)
		k->far_t = k->far.ev[0].t;
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
	for (struct evheap *h = &k->near; h; h = h == &k->near ? &k->far : NULL) {
		for (size_t i = 0; i < h->len; i++) {
			struct sim_event *e = &h->ev[i];

			if (e->key >> EV_SHIFT == id && e->fn) {
				if (e->key & EV_OWNED)
					free(e->arg);
				e->fn = NULL;
				k->background_live -= !!(e->key & EV_BACKGROUND);
				e->key &= ~(uint64_t)(EV_OWNED | EV_BACKGROUND);
				k->cancelled_live++;
				return true;
			}
		}
	}
	return false;
}

/* Take the next event off its heap (there is one). */
static inline __attribute__((always_inline)) struct sim_event pop(struct sim_kernel *k)
{
	struct evheap *h = next_heap(k);
	struct sim_event top = h->ev[0];

	if (--h->len)
		heap_down(h, 0, h->ev[h->len]);
	if (h == &k->far)
		k->far_t = h->len ? h->ev[0].t : SIM_TIME_NEVER;
	return top;
}

/* Drop cancelled events sitting at the top of the queue. */
static void drop_dead(struct sim_kernel *k)
{
	struct evheap *h;

	while ((h = next_heap(k)) && !h->ev[0].fn) {
		pop(k);
		k->cancelled_live--;
	}
}

/* The same, inline where the top is live, as it nearly always is: the run loops ask before
 * every event. */
static inline void skip_dead(struct sim_kernel *k)
{
	if (k->cancelled_live)
		drop_dead(k);
}

/* The next event (after skip_dead), or NULL. */
static inline const struct sim_event *top(struct sim_kernel *k)
{
	struct evheap *h = next_heap(k);

	return h ? &h->ev[0] : NULL;
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
static bool settle_horizon(struct sim_kernel *k, sim_time_t limit)
{
	int r = 1;

	while (r > 0 && !k->halted[0]) {
		const struct sim_event *e;

		skip_dead(k);
		e = top(k);
		r = k->horizon(k->horizon_arg, e && e->t < limit ? e->t : limit);
		if (r == -EINTR)
			return false;
		if (r < 0)
			sim_halt(k, sim_last_error());
	}
	skip_dead(k);
	return !k->halted[0];
}

/* In one process (no horizon) only the dead events go: inline, the run loops settle before
 * every event. */
static inline bool settle(struct sim_kernel *k, sim_time_t limit)
{
	if (k->horizon)
		return settle_horizon(k, limit);
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
	k->run_seq = e.key >> EV_SHIFT;
	k->executed++;
	k->background_live -= !!(e.key & EV_BACKGROUND);
	e.fn(e.arg);
	if (step_hook)
		step_hook(step_hook_arg);
}

bool sim_step(struct sim_kernel *k)
{
	skip_dead(k);
	if (!queued(k) || k->halted[0] || !settle(k, SIM_TIME_NEVER) || !queued(k))
		return false;
	run_top(k);
	return true;
}

bool sim_step_busy(struct sim_kernel *k)
{
	if (queued(k) - k->cancelled_live == k->background_live)
		return false;
	return sim_step(k);
}

void sim_run_until(struct sim_kernel *k, sim_time_t t)
{
	for (;;) {
		const struct sim_event *e;

		if (!settle(k, t) || !(e = top(k)) || e->t > t)
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
		const struct sim_event *e;

		if (pred(arg))
			return 0;
		if (k->halted[0] || !settle(k, limit))
			return -ECANCELED;
		/* Dry: nothing can come (across processes, the horizon said so for an unlimited
		 * wait; with a limit, nothing comes before it and the wait times out). */
		e = top(k);
		if (!e && (!k->horizon || limit == SIM_TIME_NEVER))
			return -EDEADLK;
		if (!e || e->t > limit) {
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
	const struct sim_event *e;

	skip_dead(k);
	e = top(k);
	if (!e)
		return false;
	*t = e->t;
	return true;
}

uint64_t sim_events_executed(const struct sim_kernel *k)
{
	return k->executed;
}

uint64_t sim_events_pending(const struct sim_kernel *k)
{
	return queued(k) - k->cancelled_live;
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
	for (struct evheap *h = &k->near; h; h = h == &k->near ? &k->far : NULL) {
		for (size_t i = 0; i < h->len; i++)
			h->ev[i].t = h->ev[i].t < t ? t : h->ev[i].t;
		/* Raising keys to t can put a later-scheduled event above an earlier one:
		 * rebuild. */
		for (size_t i = h->len / 2; i-- > 0;)
			heap_down(h, i, h->ev[i]);
	}
	k->far_t = k->far.len ? k->far.ev[0].t : SIM_TIME_NEVER;
}

void *sim_obj_get(struct sim_objcache *c)
{
	void *p = c->head;

	if (p) {
		c->head = *(void **)p;
		c->n--;
		return p;
	}
	p = malloc(c->size > sizeof(void *) ? c->size : sizeof(void *));
	SIM_ASSERT(p != NULL, "out of memory");
	return p;
}

void sim_obj_put(struct sim_objcache *c, void *p)
{
	if (!p)
		return;
	if (c->n >= SIM_OBJCACHE_KEEP) {
		free(p);
		return;
	}
	*(void **)p = c->head;
	c->head = p;
	c->n++;
}
