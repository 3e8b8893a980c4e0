/* link: a full-duplex point-to-point link between two ports (architecture §5.2). A port hands
 * a frame to its side; the link serializes it at the data rate (frame + per-frame wire
 * overhead) behind earlier frames of that direction, and delivers a copy to the other side's
 * rx callback one propagation latency after the last bit left. An optional pcap tap records
 * every frame of both directions with its simulated transmit-start time. */
#ifndef SIM_LINK_H
#define SIM_LINK_H

#include "sim/kernel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sim_link_kind {
	SIM_LINK_IB = 0,  /* pcap: LINKTYPE_WIRESHARK_UPPER_PDU (252), protocol "infiniband" */
	SIM_LINK_ETH = 1, /* pcap: LINKTYPE_ETHERNET (1) */
};

/* fcs_ok: on an Ethernet link, whether the frame's FCS (the CRC-32 the sending MAC appends,
 * IEEE 802.3 clause 3.2.9; not part of frame, nor of the pcap) still holds, so a bit flipped
 * on the way anywhere in the frame is caught. Always true on InfiniBand, whose frames carry
 * their own ICRC and VCRC. */
/* crc_pending: the frame is exactly as its sender built it, with its CRC fields not filled
 * in — nobody saw or changed its bytes on the way — so its CRCs would hold and the receiver may
 * trust them without computing them. */
typedef void (*sim_link_rx_fn)(void *port, const uint8_t *frame, size_t len, bool fcs_ok,
			       bool crc_pending);

struct sim_link;

/* rate in Mb/s (data rate after line coding); overhead_bytes is added to every frame's
 * serialization (e.g. Ethernet preamble, FCS and gap). */
struct sim_link *sim_link_create(const char *name, enum sim_link_kind kind, uint64_t rate_mbps,
				 uint64_t latency_ps, unsigned overhead_bytes);
void sim_link_destroy(struct sim_link *l);
/* Attach side 0 or 1 to a port. */
void sim_link_attach(struct sim_link *l, int side, sim_link_rx_fn rx, void *port);
/* Send from side: returns the time the last bit leaves (the side's transmitter is busy until
 * then). The frame is copied. */
sim_time_t sim_link_send(struct sim_link *l, int side, const uint8_t *frame, size_t len);
/* The same for a frame whose CRC fields its sender has not filled in (crc_pending). The link
 * fills them with its sealer (sim_link_set_sealer: the system's, which knows the formats)
 * where the bytes are seen — before the capture records the frame, before a corruption flips
 * one of its bits — and otherwise hands the frame on pending: CRC only when someone can see
 * it (docs/blocks/pkt.md#crc-only-when-seen). */
typedef void (*sim_link_seal_fn)(uint8_t *frame, size_t len);
sim_time_t sim_link_send_ex(struct sim_link *l, int side, const uint8_t *frame, size_t len,
			    bool crc_pending);
void sim_link_set_sealer(struct sim_link *l, sim_link_seal_fn fn);
/* Frames by reference: a buffer the link takes over instead of copying. sim_link_frame_new
 * gives len bytes to fill; sim_link_send_frame hands them to the link, which owns them from
 * then on (sim_link_send_ex is the two with a copy). A receiver may keep the frame its rx
 * callback is given, during the callback, with sim_link_frame_keep (the same bytes, now its
 * own), and gives it back later with sim_link_frame_free. */
uint8_t *sim_link_frame_new(size_t len);
sim_time_t sim_link_send_frame(struct sim_link *l, int side, uint8_t *frame, size_t len,
			       bool crc_pending);
uint8_t *sim_link_frame_keep(const uint8_t *frame);
void sim_link_frame_free(uint8_t *frame);
/* One more reference to a frame its receiver kept: the bytes stay (and must not change) until
 * every reference is given back with sim_link_frame_free. So a DMA write takes the payload
 * where it lies in the frame, until it lands, instead of a copy. */
uint8_t *sim_link_frame_hold(const uint8_t *frame);
/* The bytes of a buffer of sim_link_frame_new. */
size_t sim_link_frame_len(const uint8_t *frame);
/* When the transmitter of side is next free. */
sim_time_t sim_link_tx_free_at(const struct sim_link *l, int side);
/* Start (path) or stop (NULL) writing a pcap file; nanosecond timestamps. 0 or -errno. */
int sim_link_pcap(struct sim_link *l, const char *path);
/* Faults injected into frames sent from a side (seeded and deterministic; IBA gives the
 * receiver's CRC checks and the transport's retries something to do). Probabilities are in
 * parts per million per frame; every_nth (0 = off) applies the fault to frames N, 2N, ...
 * counted per side. A dropped frame still occupies the wire (and the pcap: it was sent); a
 * corrupted one has one bit flipped past its first byte, so its CRCs fail at the receiver; a
 * duplicated one arrives twice; a reordered one arrives after the next frame of that side; a
 * delayed one arrives delay_ps late. */
struct sim_link_faults {
	uint32_t drop_ppm, corrupt_ppm, dup_ppm, reorder_ppm, delay_ppm; /* by probability */
	uint32_t drop_every;   /* every Nth frame dropped (0 = off) */
	uint64_t delay_ps;     /* extra latency of a delayed frame */
};
/* Install faults for frames sent from side (0 or 1), seeded from seed and the link's name;
 * all zero removes them. */
void sim_link_set_faults(struct sim_link *l, int side, const struct sim_link_faults *f,
			 uint64_t seed);
/* Faults injected so far from a side: drops, corruptions, duplicates, reorders, delays. */
void sim_link_fault_counts(const struct sim_link *l, int side, uint64_t out[5]);

/* Targeted faults: a frame sent from a side whose transport header matches a target (-1 in a
 * field matches anything) gets the target's fault, for the first count matches (0: every
 * match); nth (0 = any) matches only the nth packet of a message, counted in PSNs from the
 * last packet that opened a message (FIRST or ONLY) to the target's QP. The link does not
 * read headers itself: the classifier the system installs names a frame's destination QP,
 * PSN, opcode and whether it opens a message (false: not a transport packet). Targets are tried
 * before the probabilistic faults, the first match wins, and each application counts in
 * sim_link_fault_counts and is a link.fault trace line. */
enum sim_link_fault_kind { SIM_FAULT_DROP, SIM_FAULT_CORRUPT, SIM_FAULT_DUP, SIM_FAULT_DELAY };
struct sim_link_target {
	int64_t qpn, psn, opcode;       /* to match; -1 = any */
	enum sim_link_fault_kind fault; /* what happens to a match */
	uint32_t count;                 /* matches that get it; 0 = all */
	uint64_t delay_ps;              /* SIM_FAULT_DELAY: extra latency */
	uint32_t nth;                   /* the nth packet of a message only; 0 = any */
};
#define SIM_LINK_MAX_TARGETS 8 /* per side */
typedef bool (*sim_link_classify_fn)(const uint8_t *frame, size_t len, uint32_t *qpn,
				     uint32_t *psn, uint8_t *opcode, bool *first);
void sim_link_set_classifier(struct sim_link *l, sim_link_classify_fn fn);

/* Link down/up (a pulled cable, a peer's PHY reset): while down nothing is carried — frames
 * sent are lost before the wire (not in the pcap), frames in flight when it goes down are lost
 * too (each a link.fault trace line, counted in sim_link_lost_down). Each side's state
 * function (with the port given to sim_link_attach) hears every change, at once. */
/* The time bytes take on a link of rate_mbps (after line coding): bytes * 8 * 10^6 / rate_mbps
 * ps, rounded to the nearest picosecond (halves up), as the link serializes a frame. Exact
 * whenever the division is: 4122 bytes at 100 000 Mb/s is 329 760 ps. Inline: the PCIe timing
 * of cut-through asks for it per TLP. */
static inline sim_time_t sim_link_bytes_ps(uint64_t rate_mbps, uint64_t bytes)
{
	return (bytes * 8000000u + rate_mbps / 2) / rate_mbps;
}

typedef void (*sim_link_state_fn)(void *port, bool up);
void sim_link_set_state_fn(struct sim_link *l, int side, sim_link_state_fn fn);
void sim_link_set_up(struct sim_link *l, bool up);
bool sim_link_is_up(const struct sim_link *l);
/* Frames sent from side lost to the link being down. */
uint64_t sim_link_lost_down(const struct sim_link *l, int side);
/* Frames from side lost because the process holding the other side had not joined the fabric
 * yet or had left it (link between processes; each a link.peer_absent trace line). */
uint64_t sim_link_lost_absent(const struct sim_link *l, int side);
/* Add a target to side (0 or 1): 0, or -ENOSPC with SIM_LINK_MAX_TARGETS already there. */
int sim_link_add_target(struct sim_link *l, int side, const struct sim_link_target *t);
/* Remove side's targets; how many side has. */
void sim_link_clear_targets(struct sim_link *l, int side);
unsigned sim_link_targets(const struct sim_link *l, int side);

/* A link between processes (docs/fabric.md#synchronisation): this process holds side, the
 * channel c (sim/shmchan.h) carries both directions. Frames sent from side go to c stamped
 * with their arrival time, in arrival order (serialization, pacing and faults stay here);
 * frames from c are delivered to side at theirs, after the receiver's FCS check; and the
 * current kernel runs an event at t only once the peer has promised past t, waiting at most
 * stall_ms of wall time without the peer's promise moving (then the simulation halts, naming
 * the wait). The link owns c from then on: sim_link_destroy writes what is queued, then
 * TERMINATE, and closes it. A peer whose process has not attached yet promises everything, and
 * frames to it are lost (sim_link_lost_absent); once it attaches, it is sent a SYNC stamped the
 * current time + latency. A side attaching after its peer (sim_chan_peer_first) is a late
 * joiner: it waits (up to stall_ms) for that SYNC and starts the kernel a latency before it
 * (sim_kernel_start_at). 0, or -EINVAL (no kernel, a bad side, a capture on, already
 * remote, or c's latency not the link's), or -ETIMEDOUT (a joiner given no start; then
 * nothing changed and c stays the caller's). Not yet: a capture of such a link, link down/up
 * across the cut. */
struct sim_chan;
int sim_link_remote(struct sim_link *l, int side, struct sim_chan *c, uint64_t stall_ms);
/* fabric.start=together: wait until every link to another process has its peer attached, so
 * that nothing has run when they meet and both start at time 0. -ETIMEDOUT naming the link. */
int sim_link_await_peers(uint64_t timeout_ms);

/* The device thread (docs/fabric.md#the-device-thread). sim_link_away(fn) while it runs the
 * simulation for a program outside the library (fn: whether the program wants it back; the
 * horizon's waits end with -EINTR then), sim_link_away(NULL) after. sim_link_away_floor: the
 * earliest time the program may act again (what was promised while away). sim_link_demand: how
 * far the peers in the library need this side's time to go (0: nothing asked). sim_link_nap: a
 * wall-time pause for a wait that saw nothing new (*n counts them; 0 at the start). */
void sim_link_away(bool (*interrupted)(void));
void sim_link_flag_away(bool on); /* tell the peers the program is away, or back */
sim_time_t sim_link_away_floor(void);
sim_time_t sim_link_demand(struct sim_kernel *k);
void sim_link_nap(unsigned *n);
/* What the links between processes cost this process since it started: PACKETs and SYNCs
 * written, messages taken, horizon waits, and their wall time in ns (hcasim_fabric_counts). */
void sim_link_fabric_counts(uint64_t out[5]);
/* Link-level flow control of the frames a side sends (IB credits, Ethernet PFC pause;
 * docs/blocks/switch.md): with a gate, a frame starts only when gate(arg, len) says so (the
 * gate takes the frame's credits then); otherwise it and every later frame of the side wait,
 * in order, in the side's transmit FIFO (no limit), until sim_link_gate_open finds the gate
 * open for them. sim_link_send_frame returns SIM_TIME_NEVER for a frame held so. Counted in
 * sim_link_gate_held. fn NULL removes the gate (frames held stay until the next open). */
typedef bool (*sim_link_gate_fn)(void *arg, size_t len);
void sim_link_set_gate(struct sim_link *l, int side, sim_link_gate_fn fn, void *arg);
void sim_link_gate_open(struct sim_link *l, int side);
uint64_t sim_link_gate_held(const struct sim_link *l, int side);
/* Frames to side arrive at their first bit (start + latency) instead of their last: a
 * cut-through receiver (a switch port) that may forward a frame before its tail is in. */
void sim_link_set_head_rx(struct sim_link *l, int side, bool head);

/* Link-level control messages (flow-control updates, the management a switch's SM hears): up
 * to SIM_LINK_CTL_MAX bytes sent from a side now reach the other side's ctl callback one
 * latency later, whatever the transmitter is doing (they are not frames: not serialized, not
 * captured, never faulted). Between processes they cross the channel as PACKETs on port 1
 * (frames use port 0); one for a process that has not joined yet waits for it and is its first
 * news, one for a process that has left is dropped. A link with a ctl callback on either side
 * promises across the cut from its present, not from its transmitter's end. */
#define SIM_LINK_CTL_MAX 4104 /* a host message's 4 096 bytes and its tag fit */
typedef void (*sim_link_ctl_fn)(void *arg, const uint8_t *msg, size_t len);
void sim_link_set_ctl(struct sim_link *l, int side, sim_link_ctl_fn fn, void *arg);
void sim_link_ctl_send(struct sim_link *l, int side, const uint8_t *msg, size_t len);

/* Frames and bytes sent from a side. */
uint64_t sim_link_frames(const struct sim_link *l, int side);
uint64_t sim_link_bytes(const struct sim_link *l, int side);

#endif
