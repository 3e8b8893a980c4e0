/* The fabric (docs/fabric.md#starting-a-fabric): HCASIM_FABRIC=DIR names a directory the
 * processes of one run share, HCASIM_HOST=N (or a list, 0,1) the simulated hosts this process
 * holds. The first process writes DIR/fabric.ini from its configuration; every later one must
 * agree with it on the keys that shape the fabric. A link with one end here goes over the
 * channel DIR/link<N>.<P>.chan (sim/shmchan.h, sim_link_remote). */
#ifndef SIM_FABRIC_H
#define SIM_FABRIC_H

#include "sim/config.h"

#include <stdbool.h>
#include <stdint.h>

struct sim_link;

struct sim_fabric {
	char dir[4096];	 /* "" : no fabric, every host in this process */
	uint32_t hosts;	 /* bit h: this process holds host h */
};

/* Read HCASIM_FABRIC and HCASIM_HOST for a system of nhosts hosts. 0 with f->dir "" when
 * neither is set; -EINVAL naming the variable and the bad part (a host that is no number, out
 * of 0..nhosts-1 or listed twice, one variable without the other, a path too long). */
int sim_fabric_from_env(struct sim_fabric *f, unsigned nhosts);
/* Create DIR if needed and DIR/fabric.ini from c, or compare c with the one there: -EINVAL
 * naming the first key that shapes the fabric and differs, with both values. */
int sim_fabric_ini(const struct sim_fabric *f, const struct sim_config *c);
/* ... and claim the hosts this process holds (DIR/host<N>: its pid; -EBUSY naming the live
 * process that holds one). A fabric.ini written by processes that are all gone is replaced,
 * with a message; so is a claim of a pid that is gone. sim_fabric_leave drops the claims and,
 * the last one out, removes fabric.ini, the lock and the directory (if nothing else is in it). */
void sim_fabric_leave(const struct sim_fabric *f, unsigned nhosts);
/* hcasim-fabric DIR: create DIR and its fabric.ini from c without holding a host (0), or find
 * one there that agrees (1); -EINVAL naming the first key that differs. A fabric.ini made so
 * stays when the fabric's last process leaves, as one the user wrote does. */
int sim_fabric_create(const char *dir, const struct sim_config *c);
/* Whether this process holds host h (every host without a fabric). */
bool sim_fabric_holds(const struct sim_fabric *f, unsigned h);
/* Put link l (latency_ps), whose side `side` is held here, on its channel DIR/<name>.chan
 * ("link<N>.<P>" between hosts 2N and 2N+1, "sw<N>" for switch port N's cable): created or
 * attached (either process may come first), waits bounded by timeout_ms. follow: only the
 * other side's process creates the channel (a host's cable to a switch in another process):
 * this side waits for the file and attaches, so it always starts at the creator's time
 * (-ETIMEDOUT naming the file when it does not come). 0 or -errno, nothing changed. */
int sim_fabric_link(const struct sim_fabric *f, struct sim_link *l, const char *name,
		    int side, bool follow, uint64_t latency_ps, uint64_t timeout_ms);

#endif
