/* The device thread (docs/fabric.md#the-device-thread): in a fabric process, the simulation
 * runs on while the program is outside the library — in a socket read(), in accept(), waiting
 * for its user — so that its HCA still answers its peers. The program and the device thread
 * take turns under one lock: the program holds it for every call into the simulation (and the
 * driver for the verbs that read what the device writes), the device thread only when the
 * program has left it alone for the grace time. Away, the simulation's time moves only as far
 * as the peers that are in the library ask; when the program comes back, its time is at least
 * what the device thread promised them. Without a device thread (one process, or no fabric),
 * entering and leaving cost a thread-local count. */
#include "sim/devthread.h"
#include "sim/error.h"
#include "sim/link.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

static struct {
	bool on;		    /* a device thread runs */
	pthread_t tid;
	pthread_mutex_t lock;	    /* the simulation's: program or device thread */
	atomic_bool stop;	    /* the device thread is to end */
	atomic_uint wanted;	    /* program threads waiting for the lock */
	_Atomic uint64_t left_ns;   /* wall time the program last let go of the lock */
	uint64_t grace_ns;	    /* how long it must stay away before the device thread runs */
	struct sim_kernel *k;
	bool ran;		    /* the device thread ran since the program last held the lock */
	bool flagged;		    /* the peers were told the program is away */
} dt = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Every verb and every poll enters and leaves: the Makefile builds this file with TLS
 * descriptors, which reach these without a call to __tls_get_addr, in a library that is
 * dlopen'd too (initial-exec TLS fails there: pyverbs). */
static _Thread_local unsigned depth; /* this thread's nesting of sim_enter */
static _Thread_local bool holds;      /* it holds dt.lock */

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The program comes back at the earliest time the device thread promised from: the simulation
 * runs there first (its peers were told nothing of this side comes before it). */
static void catch_up(void)
{
	sim_time_t floor = sim_link_away_floor();

	dt.ran = false;
	if (floor > sim_now(dt.k))
		sim_run_until(dt.k, floor);
	sim_host_actions++; /* time may have moved: a run of empty polls ends here */
}

void sim_enter(void)
{
	if (depth++ || !dt.on)
		return;
	atomic_fetch_add(&dt.wanted, 1);
	pthread_mutex_lock(&dt.lock);
	atomic_fetch_sub(&dt.wanted, 1);
	holds = true;
	if (dt.flagged) {
		dt.flagged = false;
		sim_link_flag_away(false);
	}
	if (dt.ran)
		catch_up();
}

void sim_leave(void)
{
	if (--depth || !holds)
		return;
	holds = false;
	atomic_store(&dt.left_ns, wall_ns());
	pthread_mutex_unlock(&dt.lock);
}

static bool interrupted(void)
{
	return atomic_load(&dt.wanted) || atomic_load(&dt.stop);
}

static bool interrupted_arg(void *arg)
{
	(void)arg;
	return interrupted();
}

/* The program has left the simulation alone for the grace time. */
static bool program_away(void)
{
	return !interrupted() && wall_ns() - atomic_load(&dt.left_ns) >= dt.grace_ns;
}

/* One run for the away program, under the lock: as far as the peers ask (a waiting peer that
 * asks for the end of time lets the local events run out). true if it moved anything. */
static bool away_run(void)
{
	sim_time_t now = sim_now(dt.k), d = sim_link_demand(dt.k);

	if (d <= now || sim_halted(dt.k))
		return false;
	sim_link_away(interrupted);
	sim_run_while_not(dt.k, interrupted_arg, NULL, d);
	sim_link_away(NULL);
	dt.ran = true;
	return true;
}

static void *device_main(void *arg)
{
	unsigned idle = 0;

	(void)arg;
	while (!atomic_load(&dt.stop)) {
		bool moved = false;

		if (program_away() && !pthread_mutex_trylock(&dt.lock)) {
			depth = 1; /* a call back into the simulation from here nests */
			if (program_away()) {
				if (!dt.flagged) {
					dt.flagged = true;
					sim_link_flag_away(true);
				}
				moved = away_run();
			}
			depth = 0;
			pthread_mutex_unlock(&dt.lock);
		}
		if (moved)
			idle = 0;
		sim_link_nap(&idle);
	}
	return NULL;
}

int sim_devthread_start(struct sim_kernel *k, uint64_t grace_us)
{
	int rc;

	if (dt.on)
		return 0;
	dt.k = k;
	dt.grace_ns = grace_us * 1000u;
	atomic_store(&dt.stop, false);
	atomic_store(&dt.left_ns, wall_ns());
	/* A caller inside the simulation (a verb that boots it) keeps it until it leaves. */
	if (depth) {
		pthread_mutex_lock(&dt.lock);
		holds = true;
	}
	dt.on = true;
	if ((rc = pthread_create(&dt.tid, NULL, device_main, NULL))) {
		dt.on = false;
		if (holds) {
			holds = false;
			pthread_mutex_unlock(&dt.lock);
		}
		return sim_error(-rc, "fabric: cannot start the device thread: %s", strerror(rc));
	}
	return 0;
}

void sim_devthread_stop(void)
{
	if (!dt.on)
		return;
	atomic_store(&dt.stop, true);
	pthread_join(dt.tid, NULL);
	if (holds) {
		holds = false;
		pthread_mutex_unlock(&dt.lock);
	}
	dt.on = false;
	dt.ran = dt.flagged = false;
}
