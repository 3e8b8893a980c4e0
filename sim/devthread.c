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
#include "sim/hcasim.h"
#include "sim/link.h"
#include "sim/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct {
	bool on;		    /* a device thread runs */
	pthread_t tid;
	pthread_mutex_t lock;	    /* the simulation's: program or device thread */
	atomic_bool stop;	    /* the device thread is to end */
	atomic_uint wanted;	    /* program threads waiting for the lock */
	_Atomic uint64_t left_ns;   /* wall time the program last let go of the lock */
	_Atomic int left_tid;	    /* the thread that did */
	uint64_t ran_ns;	    /* hcasim-exec: wall time it was last seen running, away */
	uint64_t grace_ns;	    /* how long it must stay away before the device thread runs */
	struct sim_kernel *k;
	bool ran;		    /* the device thread ran since the program last held the lock */
	bool flagged;		    /* the peers were told the program is away */
	bool released;		    /* hcasim-exec: held past release_ms in this absence */
	uint64_t releases;	    /* how many absences were released */
	sim_time_t first_release;   /* the simulated time of the first */
} dt = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* hcasim-exec's rules (hcasim_exec_rules); bound NULL without hcasim-exec. */
static struct hcasim_exec_rules rules;

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
	dt.released = false;
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
	if (rules.bound) {
		static _Thread_local int tid;

		atomic_store(&dt.left_tid, tid ? tid : (tid = (int)syscall(SYS_gettid)));
	}
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

/* Whether thread tid of this process is running (or runnable) rather than blocked. */
static bool running(int tid)
{
	char path[64], buf[256];
	const char *st;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	st = strrchr(buf, ')');
	return st && st[1] == ' ' && st[2] == 'R';
}

/* hcasim-exec: whether the program, away in no call it follows, is to be released: blocked
 * (stdin, a pipe, a sleep) for release_ms since it was last seen running, or away for ten
 * times that in all (computing, or polling memory). The first time in an absence, the
 * determinism lost is reported. */
static bool release(void)
{
	uint64_t now = wall_ns(), left = atomic_load(&dt.left_ns), ms = rules.release_ms;

	if (dt.released)
		return true;
	if (dt.ran_ns < left || running(atomic_load(&dt.left_tid)))
		dt.ran_ns = now;
	if ((now - dt.ran_ns) / 1000000u < ms && (now - left) / 1000000u < 10 * ms)
		return false;
	dt.released = true;
	if (!dt.releases++)
		dt.first_release = sim_now(dt.k);
	trace_kernel_nondet(-1, rules.host, (now - left) / 1000000u);
	return true;
}

/* One run for the away program, under the lock: as far as the peers ask (a waiting peer that
 * asks for the end of time lets the local events run out). Under hcasim-exec, a program
 * blocked in a call that returns no earlier than b (its bound) is run no further than b, and
 * its wait record tells the peer that nothing happens here before b or the next event; one in
 * a call it does not follow is held until released. true if it moved anything. */
static bool away_run(void)
{
	sim_time_t now = sim_now(dt.k), d = sim_link_demand(dt.k), b = 0;

	if (rules.bound && !(b = rules.bound()) && !release())
		return false;
	if (b && d > b)
		d = b;
	if (d <= now || sim_halted(dt.k)) {
		sim_link_away_rest(dt.k, b); /* (b may have moved) */
		return false;
	}
	sim_link_away(interrupted, b);
	sim_run_while_not(dt.k, interrupted_arg, NULL, d);
	sim_link_away(NULL, 0);
	if (!interrupted())
		sim_link_away_rest(dt.k, b);
	dt.ran = true;
	return true;
}

int hcasim_exec_rules(const struct hcasim_exec_rules *r)
{
	if (!r || !r->act || !r->bound || !r->release_ms)
		return sim_error(-EINVAL, "hcasim_exec_rules: rules, act and bound must be given "
				 "and release_ms be at least 1");
	rules = *r;
	sim_link_exec(r->act);
	return 0;
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
	if (dt.releases)
		fprintf(stderr, "hcasim-exec: host %u: determinism lost: %" PRIu64 " time(s) the program "
			"stayed outside the library in no call hcasim-exec follows, blocked for "
			"exec.release_ms (%" PRIu64 " ms) of wall time or away ten times that, first at "
			"%" PRIu64 " ps; its host then ran as its peers asked, so its simulated times "
			"depend on wall time\n", rules.host, dt.releases, rules.release_ms,
			(uint64_t)dt.first_release);
	dt.releases = 0;
}
