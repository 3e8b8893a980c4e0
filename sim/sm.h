/* A subnet manager for the simulated fabric, doing what OpenSM does at bring-up: when a port's
 * link comes up it sweeps (after port.sm_delay_ns), assigns LIDs in discovery order (host,
 * then port), sets the SM LID, the GID prefix and the P_Key table, and moves the port
 * INIT → ARMED → ACTIVE. Ports talk to it through their SMA callbacks, as MADs would. */
#ifndef SIM_SM_H
#define SIM_SM_H

#include "sim/kernel.h"

#include <stdint.h>

#define SIM_SM_MAX_PORTS 64
#define SIM_SM_DEFAULT_PREFIX 0xfe80000000000000ull
#define SIM_SM_SL 0

struct sim_sma_ops {
	/* Program the port as a SubnSet(PortInfo) would; state is IBV_PORT_* numbering. */
	void (*set_port)(void *port, uint16_t lid, uint16_t sm_lid, uint64_t subnet_prefix,
			 uint8_t state);
};

void sim_sm_reset(uint64_t sweep_delay_ps);
/* Register a port (discovery order = call order); returns a handle. */
int sim_sm_register(const struct sim_sma_ops *ops, void *port);
/* Physical link up: the SM configures the port after its sweep delay. */
void sim_sm_link_up(int handle);
/* Give a port a new LID (unicast 0x0001..0xbfff, unused by other ports): an ACTIVE port is
 * reprogrammed after the sweep delay, others get it at their next sweep. 0, -ENODEV, -EINVAL
 * or -EADDRINUSE. */
int sim_sm_set_lid(int handle, uint16_t lid);
/* Number of ports the SM has brought to ACTIVE. */
int sim_sm_active_ports(void);
int sim_sm_registered_ports(void);

#endif
