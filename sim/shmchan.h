/* shmchan: a link between two processes as a shared-memory channel in SimBricks' base/network
 * layout (docs/fabric.md#channels). One file holds a header page and two single-producer,
 * single-consumer rings of fixed-size slots; ring s carries what side s sends. Every slot has a
 * 64-byte header: the timestamp (ps) at offset 48, the owner/type byte at offset 63 (bit 7:
 * 0 producer, 1 consumer; bits 0-6 the type); a PACKET's length at offset 0 and port at 2, its
 * frame after the header. Every function returns 0 (or a count) or a negative errno, with a
 * message through sim_error naming the field or rule. */
#ifndef SIM_SHMCHAN_H
#define SIM_SHMCHAN_H

#include "sim/kernel.h"

#include <stddef.h>
#include <stdint.h>

#define SIM_CHAN_SLOT_HDR 64	     /* header bytes of every slot */
#define SIM_CHAN_TS_OFF 48	     /* the timestamp's offset in a slot */
#define SIM_CHAN_OWN_OFF 63	     /* the owner/type byte's offset */
#define SIM_CHAN_OWN_CON 0x80	     /* owner bit: the consumer may read */
#define SIM_CHAN_TYPE_MASK 0x7f	     /* type bits */
#define SIM_CHAN_HEADER_BYTES 4096u  /* the file's header page */
#define SIM_CHAN_PROTO_NET 1u	     /* SimBricks' network protocol id */

enum sim_chan_type {
	SIM_CHAN_SYNC = 0x00,	   /* a promise: nothing earlier follows */
	SIM_CHAN_TERMINATE = 0x01, /* the sender has left (timestamp UINT64_MAX) */
	SIM_CHAN_PACKET = 0x40,	   /* a frame, stamped with its arrival time */
};

/* The geometry and timing both ends must agree on. */
struct sim_chan_params {
	uint32_t slot_bytes;	   /* per slot, header included: a multiple of 64, >= 128 */
	uint32_t slots;		   /* per ring */
	uint64_t latency_ps;	   /* the link latency, the lookahead: > 0 */
	uint64_t sync_interval_ps; /* longest quiet time before a SYNC: 1..latency_ps */
};

/* A message taken from the inbound ring. data points into the slot: valid until
 * sim_chan_done. */
struct sim_chan_msg {
	enum sim_chan_type type;
	sim_time_t ts;	     /* its timestamp */
	uint8_t port;	     /* PACKET: the port byte */
	uint16_t len;	     /* PACKET: frame bytes */
	const uint8_t *data; /* PACKET: the frame */
	uint32_t slot;	     /* its slot index, for messages */
};

struct sim_chan;

/* Defaults for a link of latency_ps: 4416-byte slots (64 + a 4096-MTU frame with all its
 * headers), 512 per ring, sync interval = latency. */
void sim_chan_default_params(struct sim_chan_params *p, uint64_t latency_ps);
/* Create the channel file at path (which must not exist) and attach as side (0 or 1). */
int sim_chan_create(struct sim_chan **out, const char *path, int side,
		    const struct sim_chan_params *p);
/* Attach as side to an existing channel file, whose header must match p field by field. */
int sim_chan_attach(struct sim_chan **out, const char *path, int side,
		    const struct sim_chan_params *p);
/* Create the file, or attach if another process created it first. */
int sim_chan_join(struct sim_chan **out, const char *path, int side,
		  const struct sim_chan_params *p);
/* Detach; the last side to detach (the other side unclaimed) removes the file. Sends
 * nothing: see sim_chan_send_terminate. NULL is a no-op. */
void sim_chan_close(struct sim_chan *c);

/* The pid attached to the other side (0: none yet, or it has closed). */
int sim_chan_peer_pid(const struct sim_chan *c);
/* Whether this side attached to a channel whose other side a live process held already (the
 * creator never counts as such): a late joiner, which starts at the time the peer gives it. */
bool sim_chan_peer_first(const struct sim_chan *c);
/* The geometry and timing the channel was opened with; its path. */
const struct sim_chan_params *sim_chan_params(const struct sim_chan *c);
const char *sim_chan_path(const struct sim_chan *c);

/* Outbound: a PACKET of len bytes arriving at ts; a SYNC promising ts; TERMINATE. -EAGAIN
 * when the ring is full (the peer has not consumed yet); -EINVAL for a timestamp before the
 * last one sent or anything after TERMINATE; -EMSGSIZE for a frame beyond the slot. */
int sim_chan_send_packet(struct sim_chan *c, sim_time_t ts, uint8_t port, const void *frame,
			 size_t len);
int sim_chan_send_sync(struct sim_chan *c, sim_time_t ts);
int sim_chan_send_terminate(struct sim_chan *c);
/* The last timestamp sent (0 before the first). */
sim_time_t sim_chan_out_ts(const struct sim_chan *c);

/* Inbound: 1 and the next message in m (the slot stays the consumer's until sim_chan_done),
 * 0 when nothing is there yet, -EPROTO for a slot that breaks the protocol (unknown type,
 * length beyond the slot, timestamp going backwards), which is left where it is. */
int sim_chan_peek(struct sim_chan *c, struct sim_chan_msg *m);
/* Hand the peeked slot back to the producer and move on. */
void sim_chan_done(struct sim_chan *c);
/* The peer's promise: the last timestamp taken from the inbound ring (UINT64_MAX after
 * TERMINATE, 0 before the first message). */
sim_time_t sim_chan_in_ts(const struct sim_chan *c);

/* Idle time (docs/fabric.md#idle-time): a side that waits for its peer publishes the time t it
 * waits for and the arrival m of its earliest queued frame (SIM_TIME_NEVER: none), and
 * withdraws the record before it takes any message. sim_chan_peer_wait reads the peer's
 * record: 1 and t, m and the timestamp of the oldest message this side wrote that the peer has
 * not taken (SIM_TIME_NEVER: none), all read while the record held; 0 when there is none. */
void sim_chan_wait_publish(struct sim_chan *c, sim_time_t t, sim_time_t m);
void sim_chan_wait_clear(struct sim_chan *c);
int sim_chan_peer_wait(struct sim_chan *c, sim_time_t *t, sim_time_t *m, sim_time_t *unread);
/* A side whose program is outside the library says so (docs/fabric.md#the-device-thread): its
 * device thread answers its peer's waits, so a peer waiting on it is not stalled. */
void sim_chan_set_away(struct sim_chan *c, bool away);
/* What this side wrote (PACKETs, SYNCs) and took (every kind) since it opened the channel. */
void sim_chan_counts(const struct sim_chan *c, uint64_t *packets, uint64_t *syncs,
		     uint64_t *taken);
bool sim_chan_peer_away(const struct sim_chan *c);
/* An away side with several peers (a switch's process) relays how far a peer in the library
 * asked its device thread to go (sim_link_demand), so that its other peers, away too, move
 * as far as that needs (docs/fabric.md#a-switch-across-processes); 0: nothing asked. */
void sim_chan_set_relay(struct sim_chan *c, sim_time_t t);
sim_time_t sim_chan_peer_relay(const struct sim_chan *c);

#endif
