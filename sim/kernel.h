/* Simulation kernel: picosecond time, clock domains, a deterministic event queue and a run
 * loop that jumps over idle time (architecture §4).
 *
 * Contract: events are ordered by (time_ps, seq); seq is a global counter assigned at schedule
 * time, so two events at the same time run in the order they were scheduled. Nothing here reads
 * the wall clock. A block schedules itself only when it has work; when the queue is empty the
 * simulation is idle and time stands still until something is scheduled. */
#ifndef SIM_KERNEL_H
#define SIM_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t sim_time_t; /* picoseconds since power-on */

#define SIM_PS_PER_NS 1000ull
#define SIM_PS_PER_US 1000000ull
#define SIM_PS_PER_MS 1000000000ull
#define SIM_PS_PER_S 1000000000000ull
#define SIM_TIME_NEVER UINT64_MAX

typedef void (*sim_event_fn)(void *arg);

/* A handle to a scheduled event, for cancellation; 0 is "none". */
typedef uint64_t sim_event_id;

/* A clock domain: work happens on its rising edges. */
struct sim_clock {
	const char *name;   /* domain name, for traces ("core", "pcie", "link0") */
	uint64_t period_ps; /* one cycle */
};

struct sim_kernel;

struct sim_kernel *sim_kernel_create(void);
void sim_kernel_destroy(struct sim_kernel *k);

/* The kernel of the running system (one per process); NULL before boot. */
struct sim_kernel *sim_kernel(void);
void sim_kernel_set_current(struct sim_kernel *k);

sim_time_t sim_now(const struct sim_kernel *k);

/* Schedule fn(arg) at absolute time t (>= now). Returns an id for sim_cancel. */
sim_event_id sim_schedule_at(struct sim_kernel *k, sim_time_t t, sim_event_fn fn, void *arg);
sim_event_id sim_schedule_in(struct sim_kernel *k, sim_time_t delay_ps, sim_event_fn fn, void *arg);
/* As sim_schedule_at for an arg allocated with malloc that fn frees: if the kernel is
 * destroyed before the event runs, the kernel frees arg (nothing leaks at shutdown). */
sim_event_id sim_schedule_owned_at(struct sim_kernel *k, sim_time_t t, sim_event_fn fn, void *arg);
/* As sim_schedule_owned_at for an event that is not work in progress but a happening planned
 * ahead (a fault window): sim_step_busy does not wait for it. */
sim_event_id sim_schedule_background_at(struct sim_kernel *k, sim_time_t t, sim_event_fn fn,
					void *arg);
/* A timer that keeps one event pending and moves it on when it fires, instead of scheduling a
 * fresh event at each restart, runs where the fresh event would have run with these two:
 * sim_reserve_id takes the id, and so the place among events at the same time, that an event
 * scheduled now would get; sim_schedule_owned_as schedules (as sim_schedule_owned_at) an event
 * with a reserved id, which must not come before the event that is running. */
sim_event_id sim_reserve_id(struct sim_kernel *k);
sim_event_id sim_schedule_owned_as(struct sim_kernel *k, sim_time_t t, sim_event_id id,
				   sim_event_fn fn, void *arg);
/* Cancel a pending event; returns false if it already ran or was cancelled. */
bool sim_cancel(struct sim_kernel *k, sim_event_id id);

/* Run every event with time <= t, then set now = t (time jumps over idle gaps). */
void sim_run_until(struct sim_kernel *k, sim_time_t t);
/* What the host program has done outside the verbs so far: reads and moves of simulated time
 * and MMIO accesses. A busy poller's exact skipping stops at one (hcasim_host_actions). */
extern uint64_t sim_host_actions;
/* The time of the earliest pending event into *t; false when nothing is pending. */
bool sim_next_event(struct sim_kernel *k, sim_time_t *t);
/* Run events until pred(arg) holds (checked before each event) or until the queue is empty
 * or the next event lies beyond limit. Returns 0 when pred holds, -EDEADLK when the queue ran
 * dry (nothing can ever make pred true), -ETIMEDOUT when limit was reached, -ECANCELED when the
 * simulation was halted. */
int sim_run_while_not(struct sim_kernel *k, bool (*pred)(void *), void *arg, sim_time_t limit);
/* Run the next event only; false if the queue is empty. */
bool sim_step(struct sim_kernel *k);
/* The same, but false as well when only background events are left: what "the system has
 * settled" means at boot. */
bool sim_step_busy(struct sim_kernel *k);
/* fn(arg) runs after every event (the wave writer samples the model there; it must not
 * schedule or change anything). NULL removes it. */
void sim_set_step_hook(void (*fn)(void *arg), void *arg);

/* Co-simulation with another kernel (SystemC): fn(arg, from, to) runs whenever simulated time
 * is about to move forward from `from` to `to`, before anything at `to` happens; it may block
 * until the other kernel has reached `to`. NULL removes it. */
typedef void (*sim_advance_fn)(void *arg, sim_time_t from, sim_time_t to);
void sim_kernel_set_advance_hook(struct sim_kernel *k, sim_advance_fn fn, void *arg);

/* The fabric's K1 (docs/fabric.md#synchronisation): fn(arg, t) runs before the kernel runs an
 * event at t or lets time jump to t, and makes sure nothing from another process can still come
 * at or before t. It returns 0 (go ahead), 1 (it scheduled events: look at the queue again), or
 * a negative errno, which halts the simulation with sim_last_error()'s message. t is
 * SIM_TIME_NEVER when the queue is empty and a wait without limit must know whether anything
 * can come: 0 then means nothing will. NULL removes it; without one nothing changes. */
typedef int (*sim_horizon_fn)(void *arg, sim_time_t t);
void sim_kernel_set_horizon(struct sim_kernel *k, sim_horizon_fn fn, void *arg);
/* With a horizon, take in what other processes send at or before the next event (or limit, if
 * earlier), so that sim_next_event is final. false when the simulation is halted. */
bool sim_settle(struct sim_kernel *k, sim_time_t limit);
/* A late joiner of a fabric starts at the time the running hosts have reached: the clock moves
 * to t (never back), and events pending before t run at t, in their order. */
void sim_kernel_start_at(struct sim_kernel *k, sim_time_t t);

/* Stop the simulation for good (a lockstep mismatch): no event runs after it, waits return
 * -ECANCELED, and sim_halted gives the reason (NULL while running). */
void sim_halt(struct sim_kernel *k, const char *why);
const char *sim_halted(const struct sim_kernel *k);

/* Statistics: events executed, pending. */
uint64_t sim_events_executed(const struct sim_kernel *k);
uint64_t sim_events_pending(const struct sim_kernel *k);

/* A free list in front of malloc for the small block that goes with an event and comes and
 * goes with every frame (a transmit or receive record): up to SIM_OBJCACHE_KEEP freed blocks
 * of one size are kept for the next get. The blocks are malloc'd, so free() of one is as good
 * as sim_obj_put (the kernel frees an owned argument whose event never runs). Declare one as
 * `static struct sim_objcache c = SIM_OBJCACHE(sizeof(struct x));`. */
struct sim_objcache {
	void *head;  /* kept blocks, each holding the next's address */
	unsigned n;  /* how many */
	size_t size; /* bytes a block (at least a pointer's) */
};
#define SIM_OBJCACHE(bytes) { NULL, 0, (bytes) }
enum { SIM_OBJCACHE_KEEP = 64 };
void *sim_obj_get(struct sim_objcache *c);
void sim_obj_put(struct sim_objcache *c, void *p);

/* Clock helpers. */
static inline uint64_t sim_clock_cycles(const struct sim_clock *c, sim_time_t t)
{
	return t / c->period_ps;
}
/* The first rising edge at or after t. */
static inline sim_time_t sim_clock_edge(const struct sim_clock *c, sim_time_t t)
{
	return (t + c->period_ps - 1) / c->period_ps * c->period_ps;
}
static inline sim_time_t sim_clock_after(const struct sim_clock *c, sim_time_t t, uint64_t cycles)
{
	return sim_clock_edge(c, t) + cycles * c->period_ps;
}

/* Abort with time and message: a contract broken inside the simulator. */
#define SIM_ASSERT(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond))                                                                       \
			sim_assert_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                   \
	} while (0)
_Noreturn void sim_assert_fail(const char *file, int line, const char *cond, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
