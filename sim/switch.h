/* switch: one modelled switch joining up to 32 host ports (sim.topology=switch,
 * docs/blocks/switch.md). Each switch port is side 1 of a link whose side 0 is a host port.
 * Frames are forwarded cut-through into per-output-port queues: on InfiniBand by the linear
 * forwarding table (LFT) and the multicast forwarding table (MFT) the subnet manager
 * programs (sim/sm.h), on Ethernet by a learning bridge (flood unknown unicast, multicast and
 * broadcast; learn source MACs). Link-level back-pressure keeps a congested output port from
 * losing frames: credits on InfiniBand, PFC pause on Ethernet. */
#ifndef SIM_SWITCH_H
#define SIM_SWITCH_H

#include "sim/link.h"

#include <stdbool.h>
#include <stdint.h>

#define SIM_SWITCH_MAX_PORTS 32
#define SIM_SWITCH_MAX_FRAME 4352 /* the largest frame a host sends (HM_PKT_MAX_BYTES) */
#define SIM_SWITCH_BLOCK 64	  /* bytes per InfiniBand flow-control credit */

struct sim_switch_params {
	bool ib;		 /* InfiniBand (LFT/MFT, credits) or Ethernet (learning, PFC) */
	uint64_t latency_ps;	 /* cut-through: first bit in to first bit out */
	uint64_t queue_bytes;	 /* each output port's queue */
	uint32_t credits;	 /* IB: blocks of each input port's buffer; 0 = no credits */
	uint64_t xoff_bytes;	 /* Ethernet: pause an input port's host at this many bytes */
	uint64_t xon_bytes;	 /* and resume it at this many or fewer; xoff 0 = no PFC */
	uint64_t link_latency_ps; /* a credit update or a pause reaches the host this late */
};

/* Per switch port: what it received from its host and sent to it. */
struct sim_switch_counters {
	uint64_t rx_pkts, rx_bytes; /* frames (and their bytes) in from the host */
	uint64_t tx_pkts, tx_bytes; /* frames out to the host */
	uint64_t rx_discards;	    /* frames in dropped: no route, routed back, bad FCS */
	uint64_t tx_discards;	    /* frames for this port dropped: its queue was full */
	uint64_t flooded;	    /* Ethernet: frames in flooded (unknown, multicast, broadcast) */
	uint64_t xoff;		    /* Ethernet: PFC pauses sent to the host */
	uint64_t stalls;	    /* frames the host held for want of credits or under a pause */
	uint64_t credit_blocks;	    /* IB: credits returned to the host, in 64-byte blocks */
	uint64_t queue_max;	    /* most bytes the output queue ever held */
};

struct sim_switch;

/* A switch of nports ports; registers with the subnet manager on InfiniBand. */
struct sim_switch *sim_switch_create(unsigned nports, const struct sim_switch_params *p);
void sim_switch_destroy(struct sim_switch *sw);
/* Cable switch port (1..nports) to side 1 of l; side 0 is the host port. */
void sim_switch_attach(struct sim_switch *sw, unsigned port, struct sim_link *l);
/* The host's end of switch port `port`'s cable l (side 0): the gate its transmitter obeys
 * (credits on InfiniBand, PFC pause on Ethernet) and the control messages that open and close
 * it. It lives with the host port, in the process holding the host: with the switch in
 * another process, the switch's news cross the channel (sim_link_ctl_send). Also tells l that
 * side 1 takes frames at their first bit, wherever the switch is. */
struct sim_switch_end;
struct sim_switch_end *sim_switch_end_create(struct sim_link *l, unsigned port,
					     const struct sim_switch_params *p);
void sim_switch_end_destroy(struct sim_switch_end *e);
/* The output ports (bit p: switch port p) of lid: the LFT's for a unicast LID, the MFT's mask
 * for a multicast one; 0 for none. */
uint64_t sim_switch_forward(const struct sim_switch *sw, uint16_t lid);
unsigned sim_switch_ports(const struct sim_switch *sw);
void sim_switch_counters(const struct sim_switch *sw, unsigned port,
			 struct sim_switch_counters *out);

#endif
