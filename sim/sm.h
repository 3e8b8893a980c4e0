/* A subnet manager for the simulated fabric, doing what OpenSM does at bring-up: when a port's
 * link comes up it sweeps (after port.sm_delay_ns), assigns LIDs in discovery order (host,
 * then port), sets the SM LID, the GID prefix and the P_Key table, and moves the port
 * INIT → ARMED → ACTIVE. Ports talk to it through their SMA callbacks, as MADs would. */
#ifndef SIM_SM_H
#define SIM_SM_H

#include "sim/kernel.h"

#include <stdbool.h>
#include <stddef.h>
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
/* Multicast (docs/multicast.md). There is no subnet administrator to join through: an HCA's
 * first QP attached to a group makes its ports join (the SM adds them to the group's
 * forwarding: what a switch's multicast forwarding table holds), the last one detached makes
 * them leave. Without a switch (hosts back to back) the table forwards nothing: a port puts a
 * multicast frame on its link and the port at the other end filters by its attach table. */
/* Room for every group of every device: 16 hosts (sim.hosts' limit) of HCA_MCAST_GROUPS (64)
 * each, so no attach a device accepts can find the SM's table full (model/mcast.c checks). */
#define SIM_SM_MAX_MCGS 1024
void sim_sm_mcast_join(int handle, uint16_t mlid, const uint8_t mgid[16]);
void sim_sm_mcast_leave(int handle, uint16_t mlid, const uint8_t mgid[16]);
/* Ports in the group's forwarding (0: no such group); whether port `handle` is one of them. */
int sim_sm_mcast_ports(uint16_t mlid, const uint8_t mgid[16]);
bool sim_sm_mcast_member(int handle, uint16_t mlid, const uint8_t mgid[16]);
/* A switch (docs/blocks/switch.md). The SM programs its forwarding tables as SubnSet SMPs
 * would (directed route, so before any LID works): set_lft is SubnSet(LinearForwardingTable)
 * with attribute modifier block (IBA 14.2.5.10): the output ports of LIDs 64 * block ..
 * 64 * block + 63, 255 for none; set_mft is SubnSet(MulticastForwardingTable) (IBA 14.2.5.12)
 * with modifier position << 28 | block: the port masks of MLIDs 0xc000 + 32 * block .. + 31,
 * bit i of a mask for port 16 * position + i. */
struct sim_smp_switch_ops {
	void (*set_lft)(void *sw, uint32_t block, const uint8_t ports[64]);
	void (*set_mft)(void *sw, uint32_t modifier, const uint16_t masks[32]);
};
#define SIM_SM_LFT_NONE 255
/* The subnet's switch (NULL: none, hosts back to back), with nports ports (1..nports). */
void sim_sm_set_switch(const struct sim_smp_switch_ops *ops, void *sw, unsigned nports);
/* Port handle is cabled to switch port swport: once the port has its LID, the SM routes it
 * there (LFT), and its multicast groups' masks include swport. */
void sim_sm_cable(int handle, unsigned swport);
/* A route set by hand, as an administrator's static route would be: the LFT sends lid out of
 * swport (SIM_SM_LFT_NONE: nowhere), one SubnSet(LinearForwardingTable) now. 0, -ENODEV (no
 * switch), -EINVAL (lid not unicast, or no such port). A later sweep of the port owning lid
 * routes it back to that port. */
int sim_sm_set_route(uint16_t lid, unsigned swport);

/* A fabric whose switch another process holds (docs/fabric.md#a-switch-across-processes): this
 * process's SM programs no switch but asks the SM of the switch's process, by a message over
 * the port's cable (send: sim_link_ctl_send on it), to do what touches the switch for its
 * ports — route a port's LID (at its sweep, at a new LID), add a port to a multicast group or
 * remove it — as in-band management would. NULL: no such switch (reset by sim_sm_reset). */
typedef void (*sim_sm_uplink_fn)(int handle, const uint8_t *msg, size_t len);
void sim_sm_set_uplink(sim_sm_uplink_fn send);
/* In the switch's process: such a message, come in at switch port swport. 0, or -EPROTO
 * naming the rule it breaks (its length, kind, port handle, a port not cabled to swport, a
 * LID that is not unicast or a MLID that is not multicast), changing nothing. */
int sim_sm_from_port(unsigned swport, const uint8_t *msg, size_t len);

/* Number of ports the SM has brought to ACTIVE. */
int sim_sm_active_ports(void);
int sim_sm_registered_ports(void);

#endif
