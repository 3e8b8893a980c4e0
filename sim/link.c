/* link: full-duplex point-to-point links (architecture §5.2) — per-direction serialization
 * behind a busy-until time, delivery one propagation latency after the last bit, and the pcap
 * tap that records both directions in order of transmit start, each frame with a comment for
 * every fault that hit it. */
#include "sim/link.h"
#include "sim/error.h"
#include "sim/pcap.h"
#include "sim/rng.h"
#include "sim/shmchan.h"
#include "sim/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* Frames are at most an MTU plus headers; the bound keeps the serialization math in 64 bits. */
#define LINK_MAX_FRAME_BYTES (1u << 20)

struct link_side {
	struct sim_link_faults faults; /* injected into frames sent from this side */
	struct sim_rng rng;       /* their random source */
	uint64_t injected[5];     /* drops, corruptions, duplicates, reorders, delays */
	struct delivery *held;    /* a reordered frame waiting for the next one */
	sim_link_rx_fn rx;	  /* receives what the other side sends */
	sim_link_state_fn state;  /* told when the link goes down or up */
	void *port;		  /* rx's and state's argument */
	uint64_t lost_down;	  /* frames from this side lost to the link being down */
	uint64_t lost_absent;	  /* lost as the other side's process had not joined or had left */
	sim_time_t busy_until_ps; /* this side's transmitter is free from then on */
	uint64_t frames, bytes;	  /* sent from this side */
	struct sim_link_target targets[SIM_LINK_MAX_TARGETS]; /* targeted faults */
	uint32_t target_hits[SIM_LINK_MAX_TARGETS];	      /* frames each has hit */
	uint32_t target_first[SIM_LINK_MAX_TARGETS]; /* PSN that opened the target QP's message */
	bool target_seen[SIM_LINK_MAX_TARGETS];	     /* target_first is known */
	unsigned ntargets;				      /* in use */
	bool head_rx;		  /* frames to this side arrive at their first bit (cut-through) */
	sim_link_gate_fn gate;	  /* link-level flow control of this side's frames, or NULL */
	void *gate_arg;		  /* its argument */
	struct gated *gated;	  /* frames the gate holds, oldest first */
	struct gated **gated_tail; /* where the next one goes */
	uint64_t gate_held;	  /* frames the gate has held */
	bool gate_waking;	  /* an event opens the gate when the transmitter is free */
	sim_link_ctl_fn ctl;	  /* receives the other side's control messages, or NULL */
	void *ctl_arg;		  /* its argument */
};

/* A frame the sending side's gate holds until flow control lets it start. */
struct gated {
	struct gated *next; /* younger */
	uint8_t *frame;	    /* a buffer of sim_link_frame_new */
	size_t len;	    /* its bytes */
	bool crc_pending;   /* as sent */
};

/* A frame for the tap. It is written once no later send can start before it (sends happen at
 * non-decreasing simulated times, and a frame never starts before it is sent) and its fate is
 * known (each of its deliveries has happened), so that the marks of the faults that hit it,
 * a loss to the link going down included, go into the file with it. */
struct tap_rec {
	struct tap_rec *next; /* sorted by start, then by send order */
	uint64_t seq;	      /* the link's frame number; its deliveries carry it */
	sim_time_t start_ps;  /* first bit on the wire */
	sim_time_t sent_ps;   /* when it was sent (the tap orders equal starts by it) */
	sim_time_t fate_ps;   /* its last delivery is due then; UINT64_MAX: not yet scheduled */
	char *notes;	      /* the faults' marks, each NUL-terminated, or NULL */
	size_t notes_len;     /* bytes at notes */
	unsigned nnotes;      /* marks at notes */
	size_t len;	      /* bytes at frame */
	uint8_t frame[];      /* a copy */
};

struct sim_link {
	struct sim_link *next;	  /* registry of live links */
	uint64_t id;		  /* registry key, never reused */
	char name[32];		  /* for traces */
	enum sim_link_kind kind;  /* IB or Ethernet: the pcap link type */
	uint64_t rate_mbps;	  /* data rate after line coding */
	uint64_t latency_ps;	  /* last bit sent to last bit received */
	unsigned overhead_bytes;  /* added to every frame's serialization */
	struct link_side side[2]; /* the two ends */
	struct sim_pcap *pcap;	  /* tap, or NULL */
	struct part *part;	  /* the tap of this side of a link between processes, or NULL */
	sim_link_classify_fn classify; /* names frames for targeted faults */
	sim_link_seal_fn sealer;       /* fills in a pending frame's CRC fields */
	struct tap_rec *tap;	  /* frames not yet written to it */
	uint64_t seq;		  /* frames sent, both sides */
	bool down;		  /* no signal: nothing is carried */
	uint32_t epoch;		  /* bumped when the link goes down: frames of older epochs are lost */
	struct remote *remote;	  /* the other side lives in another process; NULL: in this one */
	bool ctl;		  /* control messages: a side may send one now, arriving now + latency */
};

/* A frame in flight. It names its link by id: a link destroyed before the frame lands drops
 * it, and a kernel destroyed first frees it (it is scheduled as an owned argument). */
struct delivery {
	uint64_t link_id; /* sim_link.id */
	int to;		  /* receiving side */
	uint32_t epoch;	  /* the link's epoch when it was sent */
	uint64_t seq;	  /* the frame's number (sim_link.seq), for its tap record */
	size_t len;	  /* bytes at frame */
	uint32_t fcs;	  /* Ethernet: CRC-32 of the frame as sent (not with crc_pending) */
	bool crc_pending; /* CRC fields not filled in, nobody has seen the bytes: they hold */
	uint32_t holds;	  /* references besides its owner's (sim_link_frame_hold) */
	uint8_t frame[];  /* the frame (handed over, or copied at send time) */
};

/* The delivery a frame buffer of sim_link_frame_new belongs to. */
static struct delivery *delivery_of(const uint8_t *frame)
{
	return (struct delivery *)(void *)(frame - offsetof(struct delivery, frame));
}

/* The delivery whose rx callback runs (sim_link_frame_keep), or NULL; and whether the
 * receiver kept its frame (then the delivery is the receiver's: it may be gone already). */
static struct delivery *delivering;
static bool delivery_kept;

/* Short frames (ACKs, small messages: two a message in a stream of them) come from an object
 * cache; its blocks are malloc'd, so the kernel may free() one it owns. */
enum { FRAME_SHORT = 128 };
static struct sim_objcache short_frames = SIM_OBJCACHE(sizeof(struct delivery) + FRAME_SHORT);

static struct delivery *delivery_new(size_t len)
{
	struct delivery *d = len <= FRAME_SHORT ? sim_obj_get(&short_frames)
						: malloc(sizeof(*d) + len);

	SIM_ASSERT(d != NULL, "out of memory");
	return d;
}

/* d->len is never more than the block holds: a short one goes back to the cache. */
static void delivery_free(struct delivery *d)
{
	if (d && d->len <= FRAME_SHORT)
		sim_obj_put(&short_frames, d);
	else
		free(d);
}

uint8_t *sim_link_frame_new(size_t len)
{
	struct delivery *d = delivery_new(len);

	d->len = len;
	d->holds = 0;
	return d->frame;
}

void sim_link_frame_free(uint8_t *frame)
{
	struct delivery *d = frame ? delivery_of(frame) : NULL;

	if (d && d->holds)
		d->holds--;
	else
		delivery_free(d);
}

size_t sim_link_frame_len(const uint8_t *frame)
{
	return delivery_of(frame)->len;
}

uint8_t *sim_link_frame_hold(const uint8_t *frame)
{
	struct delivery *d = delivery_of(frame);

	d->holds++;
	return d->frame;
}

uint8_t *sim_link_frame_keep(const uint8_t *frame)
{
	SIM_ASSERT(delivering && frame == delivering->frame,
		   "link: a frame kept outside its own delivery");
	delivery_kept = true;
	return delivering->frame;
}

/* Links between processes (below): a frame waiting to be written to the channel. */
struct outq {
	struct outq *next;	/* by arrival, then by queueing order */
	sim_time_t t;		/* arrival at the other side */
	struct delivery *d;	/* the frame, or the control message */
	bool ctl;		/* a control message (written with port 1) */
};

struct remote {
	struct sim_chan *chan;	/* both directions */
	int side;		/* the side this process holds */
	struct outq *outq;	/* frames not yet written to the channel */
	uint64_t stall_ms;	/* wall time a wait may go without progress */
	sim_time_t promise;	/* the peer's, as last seen */
	bool joined;		/* the peer's process has attached (it may have left since) */
	bool gone;		/* it died without a TERMINATE: as if it had left */
	int dead_pid;		/* a stale claim of the peer's side, seen while waiting for it */
	struct outq *held_ctl;	/* control messages kept for a peer that has not joined yet */
	char why[160];		/* why the last write failed (sim_error's message) */
};

static struct sim_link *live_links;
static uint64_t next_link_id = 1;
static unsigned remote_links; /* live links with a remote side */

/* While the device thread runs the simulation for a program outside the library
 * (docs/fabric.md#the-device-thread): what ends its run, and the highest base it promised from,
 * the earliest time at which the program may act again when it comes back. */
static struct {
	bool (*interrupted)(void); /* non-NULL: the program is away */
	sim_time_t floor;
} away;

/* What synchronisation costs this process (sim_link_fabric_counts): passes of the horizon
 * that had to wait, and the wall time they waited. Summed with the channels' counts of the
 * links that close. */
static struct {
	uint64_t waits, wait_ns;
	uint64_t packets, syncs, taken; /* of closed channels */
} sync_cost;

static void remote_queue(struct sim_link *l, struct delivery *d, sim_time_t t);
static void remote_send(struct sim_link *l, sim_time_t base);
static void remote_close(struct sim_link *l);

static struct sim_link *find_link(uint64_t id)
{
	for (struct sim_link *l = live_links; l; l = l->next)
		if (l->id == id)
			return l;
	return NULL;
}

struct sim_link *sim_link_create(const char *name, enum sim_link_kind kind, uint64_t rate_mbps,
				 uint64_t latency_ps, unsigned overhead_bytes)
{
	struct sim_link *l = calloc(1, sizeof(*l));

	SIM_ASSERT(l != NULL, "out of memory");
	SIM_ASSERT(rate_mbps > 0, "link %s: data rate 0", name);
	snprintf(l->name, sizeof(l->name), "%s", name ? name : "link");
	l->id = next_link_id++;
	l->kind = kind;
	l->rate_mbps = rate_mbps;
	l->latency_ps = latency_ps;
	l->overhead_bytes = overhead_bytes;
	l->next = live_links;
	live_links = l;
	return l;
}

void sim_link_destroy(struct sim_link *l)
{
	struct sim_link **pp;

	if (!l)
		return;
	sim_link_pcap(l, NULL);
	remote_close(l);
	free(l->side[0].held); /* a reordered frame still waiting */
	free(l->side[1].held);
	for (int i = 0; i < 2; i++)
		while (l->side[i].gated) {
			struct gated *g = l->side[i].gated;

			l->side[i].gated = g->next;
			sim_link_frame_free(g->frame);
			free(g);
		}
	for (pp = &live_links; *pp != l; pp = &(*pp)->next)
		SIM_ASSERT(*pp != NULL, "link %s destroyed twice", l->name);
	*pp = l->next;
	free(l);
}

void sim_link_attach(struct sim_link *l, int side, sim_link_rx_fn rx, void *port)
{
	SIM_ASSERT(side == 0 || side == 1, "link %s: side %d", l->name, side);
	l->side[side].rx = rx;
	l->side[side].port = port;
}

static sim_time_t add_sat(sim_time_t a, sim_time_t b)
{
	return a < SIM_TIME_NEVER - b ? a + b : SIM_TIME_NEVER;
}

static sim_time_t ser_ps(const struct sim_link *l, size_t len)
{
	return sim_link_bytes_ps(l->rate_mbps, (uint64_t)len + l->overhead_bytes);
}

static struct tap_rec *tap_find(struct sim_link *l, uint64_t seq);
static void tap_note(struct tap_rec *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The receiver sees the frame for the duration of its callback only. */
static void deliver(void *arg)
{
	struct delivery *d = arg;
	struct sim_link *l = find_link(d->link_id);

	if (l && (l->down || d->epoch != l->epoch)) {
		/* In flight when the link went down: lost with the signal. */
		l->side[!d->to].lost_down++;
		trace_link_fault_down(-1, l->name, !d->to, d->len, 1);
		tap_note(tap_find(l, d->seq),
			 "hcasim: lost by link.fault_down: the link went down while the frame was "
			 "on the wire");
	} else if (l && l->side[d->to].rx) {
		/* the receiving MAC's check; an untouched frame's FCS holds */
		bool ok = l->kind != SIM_LINK_ETH || d->crc_pending ||
			  crc32(0, d->frame, (uInt)d->len) == d->fcs;

		delivering = d;
		delivery_kept = false;
		l->side[d->to].rx(l->side[d->to].port, d->frame, d->len, ok, d->crc_pending);
		delivering = NULL;
		if (delivery_kept)
			return; /* the receiver's now (sim_link_frame_free) */
	}
	delivery_free(d);
}

/* The tap's record of frame seq, while it is held; NULL once written (or without a tap). */
static struct tap_rec *tap_find(struct sim_link *l, uint64_t seq)
{
	for (struct tap_rec *r = l->tap; r; r = r->next)
		if (r->seq == seq)
			return r;
	return NULL;
}

/* Add a mark to a record (NULL: no tap, nothing to mark). */
static void tap_note(struct tap_rec *r, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	if (!r)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	SIM_ASSERT(n > 0 && (size_t)n < sizeof(buf), "link: a mark of %d bytes", n);
	r->notes = realloc(r->notes, r->notes_len + (size_t)n + 1);
	SIM_ASSERT(r->notes != NULL, "out of memory");
	memcpy(r->notes + r->notes_len, buf, (size_t)n + 1);
	r->notes_len += (size_t)n + 1;
	r->nnotes++;
}

static void part_write(struct sim_link *l, const struct tap_rec *r);

static void tap_write(struct sim_link *l, struct tap_rec *r)
{
	const char *marks[8];
	unsigned n = 0;

	if (l->part) {
		part_write(l, r);
		return;
	}
	for (size_t off = 0; off < r->notes_len && n < 8; off += strlen(r->notes + off) + 1)
		marks[n++] = r->notes + off;
	sim_pcap_write_comments(l->pcap, r->start_ps, r->frame, r->len, marks, n);
}

/* Write every held frame that has started and whose fate is known by now (all: every one). */
static void tap_flush(struct sim_link *l, sim_time_t now, bool all)
{
	while (l->tap && (all || (l->tap->start_ps <= now && l->tap->fate_ps < now))) {
		struct tap_rec *r = l->tap;

		l->tap = r->next;
		tap_write(l, r);
		free(r->notes);
		free(r);
	}
}

/* Hold a frame starting at start for the tap. */
static struct tap_rec *tap(struct sim_link *l, sim_time_t now, uint64_t seq, sim_time_t start,
			   const uint8_t *frame, size_t len)
{
	struct tap_rec *r, **pp;

	tap_flush(l, now, false);
	r = malloc(sizeof(*r) + len);
	SIM_ASSERT(r != NULL, "out of memory");
	r->seq = seq;
	r->start_ps = start;
	r->sent_ps = now;
	r->fate_ps = UINT64_MAX;
	r->notes = NULL;
	r->notes_len = 0;
	r->nnotes = 0;
	r->len = len;
	memcpy(r->frame, frame, len);
	for (pp = &l->tap; *pp && (*pp)->start_ps <= start; pp = &(*pp)->next)
		;
	r->next = *pp;
	*pp = r;
	return r;
}

/* Deliver d at t; its record's fate is known once the last of its deliveries is due. */
static void schedule(struct sim_kernel *k, struct tap_rec *r, struct delivery *d, sim_time_t t)
{
	struct sim_link *l;

	if (r && (r->fate_ps == UINT64_MAX || r->fate_ps < t))
		r->fate_ps = t;
	if (remote_links && (l = find_link(d->link_id)) && l->remote) {
		remote_queue(l, d, t); /* for the other process */
		return;
	}
	sim_schedule_owned_at(k, t, deliver, d);
}

static bool chance(struct link_side *s, uint32_t ppm)
{
	return ppm && sim_rng_below(&s->rng, 1000000) < ppm;
}

void sim_link_set_faults(struct sim_link *l, int side, const struct sim_link_faults *f,
			 uint64_t seed)
{
	char src[64];

	SIM_ASSERT(side == 0 || side == 1, "link %s: side %d", l->name, side);
	l->side[side].faults = *f;
	snprintf(src, sizeof(src), "fault.%s.%d", l->name, side);
	sim_rng_init(&l->side[side].rng, seed, src);
}

void sim_link_fault_counts(const struct sim_link *l, int side, uint64_t out[5])
{
	memcpy(out, l->side[side].injected, 5 * sizeof(out[0]));
}

void sim_link_set_classifier(struct sim_link *l, sim_link_classify_fn fn)
{
	l->classify = fn;
}

int sim_link_add_target(struct sim_link *l, int side, const struct sim_link_target *t)
{
	struct link_side *s = &l->side[side];

	SIM_ASSERT(side == 0 || side == 1, "link %s: side %d", l->name, side);
	if (s->ntargets == SIM_LINK_MAX_TARGETS)
		return -ENOSPC;
	s->targets[s->ntargets] = *t;
	s->target_hits[s->ntargets] = 0;
	s->target_seen[s->ntargets] = false;
	s->ntargets++;
	return 0;
}

void sim_link_clear_targets(struct sim_link *l, int side)
{
	l->side[side].ntargets = 0;
}

unsigned sim_link_targets(const struct sim_link *l, int side)
{
	return l->side[side].ntargets;
}

/* The first of the side's targets that d matches and has hits left, or NULL. */
static const struct sim_link_target *targeted(struct sim_link *l, struct link_side *s,
					      const struct delivery *d, uint32_t *qpn,
					      uint32_t *psn)
{
	uint8_t op;
	bool first;
	const struct sim_link_target *hit = NULL;

	if (!s->ntargets || !l->classify || !l->classify(d->frame, d->len, qpn, psn, &op, &first))
		return NULL;
	for (unsigned i = 0; i < s->ntargets; i++) {
		const struct sim_link_target *t = &s->targets[i];

		if (t->nth && (t->qpn < 0 || t->qpn == *qpn)) {
			/* Follow the QP's messages: where the current one started. */
			if (first) {
				s->target_first[i] = *psn;
				s->target_seen[i] = true;
			}
			if (!s->target_seen[i] ||
			    ((*psn - s->target_first[i]) & 0xffffff) + 1 != t->nth)
				continue;
		}
		if (hit || (t->qpn >= 0 && t->qpn != *qpn) || (t->psn >= 0 && t->psn != *psn) ||
		    (t->opcode >= 0 && t->opcode != op) || (t->count && s->target_hits[i] >= t->count))
			continue;
		s->target_hits[i]++;
		hit = t; /* the first match applies; the rest still follow the messages */
	}
	return hit;
}

/* Fill in a pending frame's CRC fields (and on Ethernet its FCS) before its bytes are seen or
 * changed: then they are the frame's as if sealed at the sender. */
static void seal(const struct sim_link *l, struct delivery *d)
{
	if (!d->crc_pending)
		return;
	SIM_ASSERT(l->sealer != NULL, "link %s: a pending frame and no sealer", l->name);
	l->sealer(d->frame, d->len);
	if (l->kind == SIM_LINK_ETH)
		d->fcs = (uint32_t)crc32(0, d->frame, (uInt)d->len);
	d->crc_pending = false;
}

/* Flip one bit past the first byte; by names the fault for the mark ("link.fault_corrupt"). */
static void flip_bit(const struct sim_link *l, struct link_side *s, struct delivery *d,
		     int side, struct tap_rec *r, const char *by)
{
	size_t bit = 8 + (size_t)sim_rng_below(&s->rng, (uint64_t)(d->len - 1) * 8);

	seal(l, d); /* the CRCs the receiver checks are those of the frame as sent */
	d->frame[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	s->injected[1]++;
	trace_link_fault_corrupt(-1, l->name, side, bit);
	tap_note(r,
		 "hcasim: corrupted by %s: bit %zu (byte %zu, mask 0x%02x) flipped on the way, the "
		 "receiver's CRC check fails",
		 by, bit, bit / 8, 1u << (bit % 8));
}

/* A copy of d arrives 1 ps after d (due at t). */
static void duplicate(struct link_side *s, const struct delivery *d, sim_time_t t,
		      struct tap_rec *r, const char *by)
{
	struct delivery *c = delivery_new(d->len);

	memcpy(c, d, sizeof(*c) + d->len);
	s->injected[2]++;
	tap_note(r, "hcasim: duplicated by %s: delivered twice", by);
	schedule(sim_kernel(), r, c, t + 1);
}

/* Apply the side's faults to a frame due at the other side at t: schedule zero, one or two
 * deliveries. r: the frame's tap record (NULL without a tap), which gets a mark per fault. */
static void inject(struct sim_link *l, int side, struct delivery *d, sim_time_t t,
		   struct tap_rec *r)
{
	struct link_side *s = &l->side[side];
	const struct sim_link_faults *f = &s->faults;
	struct sim_kernel *k = sim_kernel();
	uint32_t qpn = 0, psn = 0;
	const struct sim_link_target *tg = targeted(l, s, d, &qpn, &psn);

	if (tg) {
		static const char *const what[] = { "drop", "corrupt", "duplicate", "delay" };
		char by[80];

		trace_link_fault_target(-1, l->name, side, what[tg->fault], qpn, psn);
		snprintf(by, sizeof(by), "link.fault_target (qpn 0x%x psn %u)", qpn, psn);
		switch (tg->fault) {
		case SIM_FAULT_DROP:
			s->injected[0]++;
			tap_note(r, "hcasim: dropped by %s: never delivered", by);
			if (r)
				r->fate_ps = sim_now(k);
			delivery_free(d);
			return;
		case SIM_FAULT_CORRUPT:
			if (d->len > 1)
				flip_bit(l, s, d, side, r, by);
			break;
		case SIM_FAULT_DUP:
			duplicate(s, d, t, r, by);
			break;
		case SIM_FAULT_DELAY:
			s->injected[4]++;
			t += tg->delay_ps;
			tap_note(r, "hcasim: delayed by %s: delivered %" PRIu64 " ps late", by,
				 (uint64_t)tg->delay_ps);
			break;
		}
		schedule(k, r, d, t);
		return;
	}

	if ((f->drop_every && s->frames % f->drop_every == 0) || chance(s, f->drop_ppm)) {
		s->injected[0]++;
		trace_link_fault_drop(-1, l->name, side, d->len);
		tap_note(r, "hcasim: dropped by link.fault_drop: never delivered");
		if (r)
			r->fate_ps = sim_now(k);
		delivery_free(d);
		return;
	}
	if (chance(s, f->corrupt_ppm) && d->len > 1)
		flip_bit(l, s, d, side, r, "link.fault_corrupt");
	if (chance(s, f->delay_ppm)) {
		t += f->delay_ps;
		s->injected[4]++;
		trace_link_fault_delay(-1, l->name, side, f->delay_ps);
		tap_note(r, "hcasim: delayed by link.fault_delay: delivered %" PRIu64 " ps late",
			 (uint64_t)f->delay_ps);
	}
	if (chance(s, f->dup_ppm)) {
		trace_link_fault_duplicate(-1, l->name, side);
		duplicate(s, d, t, r, "link.fault_duplicate");
	}
	if (s->held) {
		/* The frame held back arrives right after this one. */
		schedule(k, r, d, t);
		schedule(k, tap_find(l, s->held->seq), s->held, t + 1);
		s->held = NULL;
		return;
	}
	if (chance(s, f->reorder_ppm)) {
		s->injected[3]++;
		trace_link_fault_reorder(-1, l->name, side);
		tap_note(r, "hcasim: held back by link.fault_reorder: delivered after the next frame "
			    "from this side");
		s->held = d; /* its record's fate stays open until then */
		return;
	}
	schedule(k, r, d, t);
}

sim_time_t sim_link_send(struct sim_link *l, int side, const uint8_t *frame, size_t len)
{
	return sim_link_send_ex(l, side, frame, len, false);
}

void sim_link_set_sealer(struct sim_link *l, sim_link_seal_fn fn)
{
	l->sealer = fn;
}

sim_time_t sim_link_send_ex(struct sim_link *l, int side, const uint8_t *frame, size_t len,
			    bool crc_pending)
{
	uint8_t *copy;

	SIM_ASSERT(len > 0 && len <= LINK_MAX_FRAME_BYTES, "link %s: frame of %zu bytes", l->name,
		   len);
	copy = sim_link_frame_new(len);
	memcpy(copy, frame, len);
	return sim_link_send_frame(l, side, copy, len, crc_pending);
}

/* Flow control holds the frame (or frames before it wait): it starts when the gate opens. */
static sim_time_t gate_hold(struct link_side *s, uint8_t *frame, size_t len, bool crc_pending)
{
	struct gated *g = malloc(sizeof(*g));

	SIM_ASSERT(g != NULL, "out of memory");
	*g = (struct gated){ NULL, frame, len, crc_pending };
	if (!s->gated)
		s->gated_tail = &s->gated;
	*s->gated_tail = g;
	s->gated_tail = &g->next;
	s->gate_held++;
	return SIM_TIME_NEVER;
}

void sim_link_set_gate(struct sim_link *l, int side, sim_link_gate_fn fn, void *arg)
{
	SIM_ASSERT(side == 0 || side == 1, "link %s: side %d", l->name, side);
	l->side[side].gate = fn;
	l->side[side].gate_arg = arg;
}

struct gate_wake {
	uint64_t link_id; /* sim_link.id: a link destroyed meanwhile is not looked at */
	int side;
};

static void gate_wake(void *arg)
{
	struct gate_wake *w = arg;
	struct sim_link *l = find_link(w->link_id);

	if (l) {
		l->side[w->side].gate_waking = false;
		sim_link_gate_open(l, w->side);
	}
	free(w);
}

/* The held frames go one at a time, each when the transmitter is free and the gate lets it:
 * flow control that closes meanwhile stops the next one, as a MAC stops after the current
 * frame. */
void sim_link_gate_open(struct sim_link *l, int side)
{
	struct link_side *s = &l->side[side];
	struct sim_kernel *k = sim_kernel();
	sim_link_gate_fn fn = s->gate;
	struct gate_wake *w;

	if (!fn || !s->gated || s->gate_waking)
		return;
	if (s->busy_until_ps > sim_now(k)) {
		w = malloc(sizeof(*w));
		SIM_ASSERT(w != NULL, "out of memory");
		*w = (struct gate_wake){ l->id, side };
		s->gate_waking = true;
		sim_schedule_owned_at(k, s->busy_until_ps, gate_wake, w);
		return;
	}
	if (fn(s->gate_arg, s->gated->len)) {
		struct gated *g = s->gated;

		s->gated = g->next;
		s->gate = NULL; /* the frame has its credit: it goes now, not behind itself */
		sim_link_send_frame(l, side, g->frame, g->len, g->crc_pending);
		s->gate = fn;
		free(g);
		sim_link_gate_open(l, side); /* the next one, when this one has left */
	}
}

uint64_t sim_link_gate_held(const struct sim_link *l, int side)
{
	return l->side[side].gate_held;
}

/* ---- Control messages (docs/blocks/switch.md#back-pressure): a side's few bytes for the
 * other side's ctl callback, one latency after they were sent; across processes over the
 * channel (remote_ctl), in this one by an event. */
static void ctl_deliver(void *arg)
{
	struct delivery *d = arg;
	struct sim_link *l = find_link(d->link_id);

	if (l && l->side[d->to].ctl)
		l->side[d->to].ctl(l->side[d->to].ctl_arg, d->frame, d->len);
	free(d);
}

static void remote_ctl(struct sim_link *l, struct delivery *d, sim_time_t t);

void sim_link_set_ctl(struct sim_link *l, int side, sim_link_ctl_fn fn, void *arg)
{
	SIM_ASSERT(side == 0 || side == 1, "link %s: side %d", l->name, side);
	l->side[side].ctl = fn;
	l->side[side].ctl_arg = arg;
	l->ctl = true;
}

void sim_link_ctl_send(struct sim_link *l, int side, const uint8_t *msg, size_t len)
{
	struct sim_kernel *k = sim_kernel();
	struct delivery *d;

	SIM_ASSERT(k != NULL, "link %s: a control message without a running kernel", l->name);
	SIM_ASSERT(side == 0 || side == 1, "link %s: side %d", l->name, side);
	SIM_ASSERT(len > 0 && len <= SIM_LINK_CTL_MAX, "link %s: a control message of %zu bytes",
		   l->name, len);
	SIM_ASSERT(l->ctl, "link %s: control messages without sim_link_set_ctl", l->name);
	d = malloc(sizeof(*d) + len);
	SIM_ASSERT(d != NULL, "out of memory");
	*d = (struct delivery){ .link_id = l->id, .to = !side, .len = len };
	memcpy(d->frame, msg, len);
	if (l->remote) {
		SIM_ASSERT(side == l->remote->side, "link %s: side %d lives in another process",
			   l->name, side);
		remote_ctl(l, d, sim_now(k) + l->latency_ps);
		return;
	}
	sim_schedule_owned_at(k, sim_now(k) + l->latency_ps, ctl_deliver, d);
}

void sim_link_set_head_rx(struct sim_link *l, int side, bool head)
{
	SIM_ASSERT(side == 0 || side == 1, "link %s: side %d", l->name, side);
	l->side[side].head_rx = head;
}

sim_time_t sim_link_send_frame(struct sim_link *l, int side, uint8_t *frame, size_t len,
			       bool crc_pending)
{
	struct sim_kernel *k = sim_kernel();
	struct delivery *d = delivery_of(frame);
	struct link_side *s;
	sim_time_t now, start, end;
	bool traced, named, first;
	uint32_t qpn, psn;
	uint8_t op;

	SIM_ASSERT(k != NULL, "link %s: send without a running kernel", l->name);
	SIM_ASSERT(side == 0 || side == 1, "link %s: side %d", l->name, side);
	SIM_ASSERT(len > 0 && len <= LINK_MAX_FRAME_BYTES, "link %s: frame of %zu bytes", l->name,
		   len);
	SIM_ASSERT(!l->remote || side == l->remote->side,
		   "link %s: side %d lives in another process", l->name, side);
	s = &l->side[side];
	now = sim_now(k);
	if (l->down) {
		/* No signal: the frame goes nowhere, not even on the wire (or in the pcap). */
		s->lost_down++;
		trace_link_fault_down(-1, l->name, side, len, 0);
		delivery_free(d);
		return now;
	}
	if (s->gate && (s->gated || !s->gate(s->gate_arg, len)))
		return gate_hold(s, frame, len, crc_pending);
	start = s->busy_until_ps > now ? s->busy_until_ps : now; /* behind earlier frames */
	end = start + ser_ps(l, len);
	s->busy_until_ps = end;
	s->frames++;
	s->bytes += len;

	SIM_ASSERT(d->len == len, "link %s: a frame of %zu bytes sent as %zu", l->name, d->len,
		   len);
	d->link_id = l->id;
	d->to = !side;
	d->epoch = l->epoch;
	d->crc_pending = crc_pending;
	d->fcs = 0;
	if ((l->pcap || l->part) && crc_pending)
		seal(l, d); /* the capture shows the bytes (and the FCS is computed) */
	else if (!crc_pending && l->kind == SIM_LINK_ETH)
		d->fcs = (uint32_t)crc32(0, d->frame, (uInt)len);
	d->seq = ++l->seq;
	/* The trace line names the frame as sent, with the BTH's destination QP, PSN and opcode
	 * when the classifier finds one, so that an observer can tell which packet went when; it
	 * follows the lines of the faults the frame meets, and the frame may be gone by then. */
	traced = SIM_TRACE_ON(link);
	named = traced && l->classify && l->classify(frame, len, &qpn, &psn, &op, &first);
	inject(l, side, d, (l->side[!side].head_rx ? start : end) + l->latency_ps,
	       l->pcap || l->part ? tap(l, now, d->seq, start, d->frame, len) : NULL);
	if (l->remote)
		remote_send(l, now);
	if (named)
		trace_link_tx(-1, l->name, side, len, start, end, qpn, psn, op);
	else if (traced)
		trace_link_tx_raw(-1, l->name, side, len, start, end);
	return end;
}

static const struct link_side *side_of(const struct sim_link *l, int side)
{
	SIM_ASSERT(side == 0 || side == 1, "link %s: side %d", l->name, side);
	return &l->side[side];
}

sim_time_t sim_link_tx_free_at(const struct sim_link *l, int side)
{
	struct sim_kernel *k = sim_kernel();
	sim_time_t t = side_of(l, side)->busy_until_ps;

	return k && sim_now(k) > t ? sim_now(k) : t;
}

/* ---- Capture across the cut (docs/fabric.md#capture). The side of a link between processes
 * that lives here writes the frames it sends, as the tap holds them in one process (start,
 * fate, marks), to PATH.part<side>.tmp: a record each, the start and send times in ps, the
 * marks and the bytes. Closed, the part is renamed PATH.part<side>; the process that finds the
 * other side's part there too merges both into PATH, ordered as one process's tap writes them
 * (start, then the time of the send), and removes the parts. */
struct part {
	FILE *fp;
	char path[4096]; /* the merged capture's */
	char tmp[4200];	 /* this side's part while it is written */
};

/* The capture's link type for l's frames. */
static enum sim_pcap_linktype pcap_type(const struct sim_link *l)
{
	return l->kind == SIM_LINK_IB ? SIM_PCAP_UPPER_PDU : SIM_PCAP_ETHERNET;
}

struct part_hdr {
	uint64_t start_ps, sent_ps;
	uint32_t len, notes_len, nnotes, pad;
};

static void part_write(struct sim_link *l, const struct tap_rec *r)
{
	struct part_hdr h = { r->start_ps, r->sent_ps, (uint32_t)r->len, (uint32_t)r->notes_len,
			      r->nnotes, 0 };

	fwrite(&h, sizeof(h), 1, l->part->fp);
	fwrite(r->frame, 1, r->len, l->part->fp);
	if (r->notes_len)
		fwrite(r->notes, 1, r->notes_len, l->part->fp);
}

static int part_open(struct sim_link *l, const char *path)
{
	struct part *pt = calloc(1, sizeof(*pt));

	SIM_ASSERT(pt != NULL, "out of memory");
	snprintf(pt->path, sizeof(pt->path), "%s", path);
	snprintf(pt->tmp, sizeof(pt->tmp), "%s.part%d.tmp", path, l->remote->side);
	if (!(pt->fp = fopen(pt->tmp, "wb"))) {
		int err = sim_error(-errno, "link %s: cannot create %s: %s", l->name, pt->tmp,
				    strerror(errno));

		free(pt);
		return err;
	}
	l->part = pt;
	return 0;
}

/* One record of a part (1), the end (0), or -EPROTO. */
static int part_read(FILE *fp, struct part_hdr *h, uint8_t **buf)
{
	size_t n = fread(h, sizeof(*h), 1, fp);

	if (n != 1)
		return feof(fp) ? 0 : -EPROTO;
	if (h->len > LINK_MAX_FRAME_BYTES + 4 || h->notes_len > 8 * 256 || h->nnotes > 8)
		return -EPROTO;
	*buf = realloc(*buf, h->len + h->notes_len + 1);
	SIM_ASSERT(*buf != NULL, "out of memory");
	if (fread(*buf, 1, h->len + h->notes_len, fp) != h->len + h->notes_len)
		return -EPROTO;
	(*buf)[h->len + h->notes_len] = 0;
	return 1;
}

/* The next record of part s into the merged capture. */
static int merge_one(struct sim_pcap *w, FILE *fp, struct part_hdr *h, uint8_t **buf)
{
	const char *marks[8];
	unsigned n = 0;

	for (size_t off = 0; off < h->notes_len && n < h->nnotes; off += strlen((char *)*buf +
									   h->len + off) + 1)
		marks[n++] = (char *)*buf + h->len + off;
	if (sim_pcap_write_comments(w, h->start_ps, *buf, h->len, marks, n))
		return -EIO;
	return part_read(fp, h, buf);
}

/* Both parts into path, side 0's record first of two with the same start and send time. */
static int part_merge(const char *path, enum sim_pcap_linktype lt)
{
	char name[2][4200];
	FILE *fp[2] = { NULL, NULL };
	struct part_hdr h[2];
	uint8_t *buf[2] = { NULL, NULL };
	struct sim_pcap *w = NULL;
	int more[2] = { 0, 0 }, err;

	for (int s = 0; s < 2; s++) {
		snprintf(name[s], sizeof(name[s]), "%s.part%d", path, s);
		if (!(fp[s] = fopen(name[s], "rb")))
			break;
		more[s] = part_read(fp[s], &h[s], &buf[s]);
	}
	err = !fp[0] || !fp[1] ? -errno : sim_pcap_open(&w, path, lt);
	while (!err && (more[0] > 0 || more[1] > 0)) {
		int s = more[1] <= 0 ? 0 : more[0] <= 0 ? 1 :
			(h[1].start_ps < h[0].start_ps ||
			 (h[1].start_ps == h[0].start_ps && h[1].sent_ps < h[0].sent_ps));

		more[s] = merge_one(w, fp[s], &h[s], &buf[s]);
		err = more[0] < 0 ? more[0] : more[1] < 0 ? more[1] : 0;
	}
	if (w && sim_pcap_close(w) && !err)
		err = -EIO;
	for (int s = 0; s < 2; s++) {
		if (fp[s])
			fclose(fp[s]);
		free(buf[s]);
	}
	if (err)
		return sim_error(err, "capture %s: merging its two parts failed (%s)", path,
				 strerror(-err));
	unlink(name[0]);
	unlink(name[1]);
	return 0;
}

/* This side's part is complete; the last of the two sides to get here merges. */
static int part_close(struct sim_link *l)
{
	struct part *pt = l->part;
	char done[4200], other[4200], lock[4200];
	int err = fclose(pt->fp) ? -EIO : 0, fd;

	snprintf(done, sizeof(done), "%s.part%d", pt->path, l->remote->side);
	snprintf(other, sizeof(other), "%s.part%d", pt->path, !l->remote->side);
	snprintf(lock, sizeof(lock), "%s.merging", pt->path);
	l->part = NULL;
	if (!err && rename(pt->tmp, done))
		err = -errno;
	/* Of two sides closing at once, both may see the other's part: one takes the lock. */
	if (!err && access(other, F_OK) == 0 &&
	    (fd = open(lock, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600)) >= 0) {
		close(fd);
		err = part_merge(pt->path, pcap_type(l));
		unlink(lock);
	}
	free(pt);
	return err;
}

int sim_link_pcap(struct sim_link *l, const char *path)
{
	int err = 0;

	if (l->part) {
		tap_flush(l, 0, true);
		err = part_close(l);
	}
	if (l->remote && path)
		return err ? err : part_open(l, path);
	if (l->pcap) {
		tap_flush(l, 0, true);
		err = sim_pcap_close(l->pcap);
		l->pcap = NULL;
	}
	if (path) {
		int r = sim_pcap_open(&l->pcap, path, pcap_type(l));

		if (!err)
			err = r;
	}
	return err;
}

uint64_t sim_link_frames(const struct sim_link *l, int side)
{
	return side_of(l, side)->frames;
}

uint64_t sim_link_bytes(const struct sim_link *l, int side)
{
	return side_of(l, side)->bytes;
}

void sim_link_set_state_fn(struct sim_link *l, int side, sim_link_state_fn fn)
{
	SIM_ASSERT(side == 0 || side == 1, "link %s: side %d", l->name, side);
	l->side[side].state = fn;
}

void sim_link_set_up(struct sim_link *l, bool up)
{
	if (l->down == !up)
		return;
	l->down = !up;
	trace_link_state(-1, l->name, up ? "up" : "down");
	if (!up) {
		l->epoch++; /* every frame in flight is lost */
		for (int s = 0; s < 2; s++) {
			if (l->side[s].held) {
				struct tap_rec *r = tap_find(l, l->side[s].held->seq);

				l->side[s].lost_down++;
				tap_note(r, "hcasim: lost by link.fault_down: the link went down while "
					    "the frame was held back");
				if (r)
					r->fate_ps = sim_kernel() ? sim_now(sim_kernel()) : 0;
				free(l->side[s].held);
				l->side[s].held = NULL;
			}
			l->side[s].busy_until_ps = 0;
		}
	}
	for (int s = 0; s < 2; s++)
		if (l->side[s].state)
			l->side[s].state(l->side[s].port, up);
}

bool sim_link_is_up(const struct sim_link *l)
{
	return !l->down;
}

uint64_t sim_link_lost_down(const struct sim_link *l, int side)
{
	return side_of(l, side)->lost_down;
}

uint64_t sim_link_lost_absent(const struct sim_link *l, int side)
{
	return side_of(l, side)->lost_absent;
}

/* ---- Links between processes (docs/fabric.md#synchronisation). The frames this process's
 * side sends wait in outq, by arrival time, until no later send can arrive before them (the
 * floor: max(now, transmitter busy until) + latency), and then go to the channel stamped with
 * their arrival; an unfaulted frame goes at once, as its arrival is the floor. The kernel's
 * horizon takes the peer's messages stamped at or before the time it wants to run, turning
 * frames into deliveries, and waits while the peer has not promised past that time. */

/* A frame for a process that is not there: lost, as on a cable to a machine that is off. */
static void remote_lost(struct sim_link *l, struct delivery *d)
{
	l->side[l->remote->side].lost_absent++;
	trace_link_peer_absent(-1, l->name, l->remote->side, d->len);
	delivery_free(d);
}

/* Into the queue *head, by arrival, after those arriving at the same time. */
static void outq_insert(struct outq **head, struct delivery *d, sim_time_t t, bool ctl)
{
	struct outq *q = malloc(sizeof(*q)), **pp;

	SIM_ASSERT(q != NULL, "out of memory");
	*q = (struct outq){ NULL, t, d, ctl };
	for (pp = head; *pp && (*pp)->t <= t; pp = &(*pp)->next)
		;
	q->next = *pp;
	*pp = q;
}

static void remote_queue(struct sim_link *l, struct delivery *d, sim_time_t t)
{
	if (!l->remote->joined || l->remote->gone) {
		remote_lost(l, d);
		return;
	}
	outq_insert(&l->remote->outq, d, t, false);
}

/* A control message for the peer. One for a process that has not joined yet waits for it, and
 * goes as its first news (a switch's SM learns the routes a host's SM set before the switch
 * came); one for a peer that has left is dropped. */
static void remote_ctl(struct sim_link *l, struct delivery *d, sim_time_t t)
{
	struct remote *rm = l->remote;

	if (rm->gone) {
		free(d);
		return;
	}
	if (!rm->joined) {
		struct outq **pp = &rm->held_ctl;

		while (*pp)
			pp = &(*pp)->next;
		outq_insert(pp, d, t, true);
		return;
	}
	outq_insert(&rm->outq, d, t, true);
	remote_send(l, sim_now(sim_kernel()));
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ms(void)
{
	return wall_ns() / 1000000u;
}

/* Write one message, waiting (in wall time, up to stall_ms) while the ring is full: the peer
 * drains it as its time moves. A frame on Ethernet carries its FCS as sent after it, as on the
 * wire, so that the receiver's check sees a bit flipped on the way. */
static int remote_write(struct sim_link *l, const struct delivery *d, sim_time_t t, bool ctl)
{
	struct remote *rm = l->remote;
	uint64_t t0 = wall_ms();
	uint8_t *buf = NULL;
	size_t len = 0;
	int r;

	if (d) {
		len = d->len + (l->kind == SIM_LINK_ETH && !ctl ? 4 : 0);
		buf = malloc(len);
		SIM_ASSERT(buf != NULL, "out of memory");
		memcpy(buf, d->frame, d->len);
		for (size_t i = d->len; i < len; i++)
			buf[i] = (uint8_t)(d->fcs >> (8 * (i - d->len)));
	}
	for (;;) {
		r = d ? sim_chan_send_packet(rm->chan, t, ctl ? 1 : 0, buf, len)
		      : sim_chan_send_sync(rm->chan, t);
		if (r != -EAGAIN || wall_ms() - t0 > rm->stall_ms)
			break;
		sched_yield();
	}
	free(buf);
	if (r)
		snprintf(rm->why, sizeof(rm->why), "%s", sim_last_error());
	return r;
}

/* Forget the queued frames: the peer has gone. */
static void remote_drop(struct sim_link *l)
{
	struct remote *rm = l->remote;

	while (rm->outq) {
		struct outq *q = rm->outq;

		rm->outq = q->next;
		if (q->ctl)
			free(q->d); /* a control message: nobody to tell */
		else
			remote_lost(l, q->d);
		free(q);
	}
}

/* Write the queued frames that the floor (base: the earliest time this side may send again)
 * has reached, then a SYNC with the floor when the peer waits (sync) or the side has been quiet
 * for the sync interval. A failure halts the simulation. */
static int remote_promise(struct sim_link *l, sim_time_t base, bool sync)
{
	struct remote *rm = l->remote;
	sim_time_t busy = l->side[rm->side].busy_until_ps;
	/* A control message may go now, whatever the transmitter is doing. */
	sim_time_t floor = base > busy || l->ctl ? base : busy;
	sim_time_t last = sim_chan_out_ts(rm->chan);
	int r = 0;

	if (!rm->joined)
		return 0; /* nobody to promise anything to (its frames were lost at the send) */
	if (sim_chan_in_ts(rm->chan) == SIM_TIME_NEVER || rm->gone) {
		remote_drop(l); /* the peer has left: a cable to a machine that is off */
		return 0;
	}
	floor = floor < SIM_TIME_NEVER - l->latency_ps ? floor + l->latency_ps : SIM_TIME_NEVER;
	while (rm->outq && rm->outq->t <= floor && !r) {
		struct outq *q = rm->outq;

		if (!q->ctl)
			seal(l, q->d); /* its bytes leave this process: with their CRCs and FCS */
		r = remote_write(l, q->d, q->t, q->ctl);
		rm->outq = q->next;
		free(q->d);
		free(q);
	}
	if (!r && floor > last && floor != SIM_TIME_NEVER &&
	    (sync || floor - last >= sim_chan_params(rm->chan)->sync_interval_ps))
		r = remote_write(l, NULL, floor, false);
	if (r && sim_kernel())
		sim_halt(sim_kernel(), rm->why);
	return r;
}

static void remote_send(struct sim_link *l, sim_time_t base)
{
	remote_promise(l, base, false);
}

/* A frame from the peer: delivered to this side at its arrival time. */
static int remote_deliver(struct sim_link *l, struct sim_kernel *k, const struct sim_chan_msg *m)
{
	size_t fcs_len = l->kind == SIM_LINK_ETH ? 4 : 0;
	struct delivery *d;

	if (m->ts < sim_now(k))
		return sim_error(-EPROTO, "link %s: a frame stamped %" PRIu64 " ps came at %" PRIu64
				 " ps: the peer broke its promise", l->name, (uint64_t)m->ts,
				 (uint64_t)sim_now(k));
	if (m->len <= fcs_len)
		return sim_error(-EPROTO, "link %s: a frame of %u bytes from the peer (an Ethernet "
				 "frame carries its 4-byte FCS)", l->name, m->len);
	d = delivery_new(m->len);
	*d = (struct delivery){ .link_id = l->id, .to = l->remote->side, .epoch = l->epoch,
				.len = m->len - fcs_len };
	memcpy(d->frame, m->data, m->len);
	for (size_t i = 0; i < fcs_len; i++)
		d->fcs |= (uint32_t)m->data[d->len + i] << (8 * i);
	sim_schedule_owned_at(k, m->ts, deliver, d);
	return 0;
}

/* A control message from the peer (port 1): to this side's ctl callback at its time. */
static int remote_ctl_in(struct sim_link *l, struct sim_kernel *k, const struct sim_chan_msg *m)
{
	struct delivery *d;

	if (m->port != 1 || m->ts < sim_now(k) || m->len > SIM_LINK_CTL_MAX)
		return sim_error(-EPROTO, "link %s: a message on port %u stamped %" PRIu64 " ps "
				 "(%u bytes) at %" PRIu64 " ps: frames come on port 0, control "
				 "messages of at most %d bytes on port 1, never in the past",
				 l->name, m->port, (uint64_t)m->ts, m->len, (uint64_t)sim_now(k),
				 SIM_LINK_CTL_MAX);
	d = malloc(sizeof(*d) + m->len);
	SIM_ASSERT(d != NULL, "out of memory");
	*d = (struct delivery){ .link_id = l->id, .to = l->remote->side, .len = m->len };
	memcpy(d->frame, m->data, m->len);
	sim_schedule_owned_at(k, m->ts, ctl_deliver, d);
	return 0;
}

/* Take the peer's messages stamped at or before t. 1 if a frame became a delivery, 0 if none,
 * or -errno; *promise: the earliest time something may still come (UINT64_MAX: the peer has
 * left). */
static int remote_take(struct sim_link *l, struct sim_kernel *k, sim_time_t t,
		       sim_time_t *promise)
{
	struct sim_chan *c = l->remote->chan;
	struct sim_chan_msg m;
	int got = 0, r;

	/* TERMINATE is taken whatever t: nothing follows it, and frames stop going out. */
	while ((r = sim_chan_peek(c, &m)) == 1 && (m.ts <= t || m.type == SIM_CHAN_TERMINATE)) {
		if (m.type == SIM_CHAN_PACKET) {
			if ((r = m.port ? remote_ctl_in(l, k, &m) : remote_deliver(l, k, &m)))
				return r;
			got = 1;
		}
		sim_chan_done(c);
	}
	if (r < 0)
		return r;
	*promise = r == 1 ? m.ts : l->remote->gone ? SIM_TIME_NEVER : sim_chan_in_ts(c);
	return got;
}

/* While this side waits: the earliest a frame from l's peer can arrive, p (the peer's promise)
 * or better. A waiting peer with no other link (it published its wait) acts next at its wait
 * time T, or when something of ours reaches it: a message it has not taken (U), a queued frame
 * of ours (M_own), or a frame we send when we next act, at A or later. Its frames arrive a
 * latency after it acts, or at its own queued frames (M_peer). So ours arrive no earlier than
 * min(T, U, M_own, A + latency) + latency, or M_peer; and as A >= min(t, that), A itself is at
 * least min(t, T + lat, U + lat, M_own + lat, M_peer, what is in the ring from it)
 * (docs/fabric.md#idle-time). */
static sim_time_t inbound_bound(struct sim_link *l, sim_time_t p, bool *waits)
{
	struct remote *rm = l->remote;
	struct sim_chan_msg m;
	sim_time_t pt, pm, un, b;

	if (!(*waits = sim_chan_peer_wait(rm->chan, &pt, &pm, &un) == 1))
		return p;
	b = add_sat(pt, l->latency_ps);
	/* A message the peer wrote before publishing, which the look before the record missed, is
	 * visible now (the record was read with acquire): it comes at its timestamp. */
	if (sim_chan_peek(rm->chan, &m) == 1 && m.ts < b)
		b = m.ts;
	b = un != SIM_TIME_NEVER && add_sat(un, l->latency_ps) < b ? un + l->latency_ps : b;
	if (rm->outq && add_sat(rm->outq->t, l->latency_ps) < b)
		b = rm->outq->t + l->latency_ps;
	b = pm < b ? pm : b;
	return b > p ? b : p;
}

/* Whether l's peer has joined. The first look that finds its process attached gives it its
 * start: a SYNC stamped now + latency, the first message of the ring, from which the joiner
 * starts its kernel at our current time (docs/fabric.md#late-join). */
static bool remote_joined(struct sim_link *l, struct sim_kernel *k)
{
	struct remote *rm = l->remote;
	int pid = sim_chan_peer_pid(rm->chan);
	struct sim_chan_msg m;

	if (rm->joined || !pid || pid == rm->dead_pid)
		return rm->joined;
	rm->joined = true;
	if (sim_chan_peek(rm->chan, &m) == 1 && m.type == SIM_CHAN_TERMINATE)
		return true; /* came and left: the horizon takes its TERMINATE */
	if (kill((pid_t)pid, 0) && errno == ESRCH) {
		rm->dead_pid = pid; /* a claim left by a process that died: nobody is there */
		rm->joined = false;
		return false;
	}
	if (remote_write(l, NULL, add_sat(sim_now(k), l->latency_ps), false))
		sim_halt(k, rm->why);
	while (rm->held_ctl) { /* what waited for the peer: its first news */
		struct outq *q = rm->held_ctl;

		rm->held_ctl = q->next;
		outq_insert(&rm->outq, q->d, add_sat(sim_now(k), l->latency_ps), true);
		free(q);
	}
	return true;
}

/* One look at every remote link: 1 (deliveries added), 0 (every peer promised past t: go),
 * 2 (wait: *pmin is the earliest promise), or -errno. A waiting side publishes what it waits
 * for (when it has no other link) and promises from the bound its peers' waits give. */
static int horizon_pass(struct sim_kernel *k, sim_time_t t, sim_time_t *pmin)
{
	sim_time_t base = t, in;
	bool ok, waits;
	int got = 0;

	*pmin = SIM_TIME_NEVER;
	for (struct sim_link *l = live_links; l; l = l->next) {
		int r;

		if (!l->remote)
			continue;
		if (!remote_joined(l, k)) {
			l->remote->promise = SIM_TIME_NEVER; /* nobody there: nothing comes */
			continue;
		}
		sim_chan_wait_clear(l->remote->chan); /* before taking anything */
		if ((r = remote_take(l, k, t, &l->remote->promise)) < 0)
			return r;
		got |= r;
		*pmin = l->remote->promise < *pmin ? l->remote->promise : *pmin;
	}
	if (got)
		return 1;
	ok = *pmin == SIM_TIME_NEVER || *pmin > t;
	for (struct sim_link *l = live_links; l && !ok; l = l->next) {
		if (!l->remote || !l->remote->joined || l->remote->gone)
			continue;
		if (remote_links == 1 && !away.interrupted)
			sim_chan_wait_publish(l->remote->chan, t,
					      l->remote->outq ? l->remote->outq->t : SIM_TIME_NEVER);
		in = inbound_bound(l, l->remote->promise, &waits);
		/* Away, the program may come back at any time: only a peer's wait lets this side
		 * promise past its present (the program comes back at the base at the earliest).
		 * With more links (a switch's process, a host's of several), no peer publishes a
		 * wait, and a peer in the library may need this side to move for a third that is
		 * away too: then it promises as far as it runs (t, at most the demand it runs to),
		 * so that the demand passes on. */
		if (away.interrupted && !waits && remote_links == 1)
			in = sim_now(k);
		base = in < base ? in : base;
	}
	if (away.interrupted) {
		base = base == SIM_TIME_NEVER ? sim_now(k) : base;
		away.floor = base > away.floor ? base : away.floor;
	}
	/* This side waits without end and without an event, and so does its peer (its record),
	 * with nothing in flight either way: nothing can ever happen. As in one process, the wait
	 * ends with EDEADLK (the kernel finds itself dry); the peer decides the same from ours
	 * (docs/fabric.md#a-wait-that-can-never-end). */
	if (!ok && t == SIM_TIME_NEVER && base == SIM_TIME_NEVER && !away.interrupted)
		return 0;
	for (struct sim_link *l = live_links; l; l = l->next)
		if (l->remote && l->remote->joined && remote_promise(l, base, !ok))
			return -EIO;
	return ok ? 0 : 2;
}

/* A peer whose process died (its claim released or held by a pid that no longer exists) without
 * a TERMINATE: its link goes dark as when it leaves — what it had written still arrives, then
 * it promises the end of time and frames to it are lost. Looked for when a wait stalls. */
static bool peers_died(void)
{
	bool any = false;

	for (struct sim_link *l = live_links; l; l = l->next) {
		struct remote *rm = l->remote;
		int pid;

		if (!rm || !rm->joined || rm->gone || sim_chan_in_ts(rm->chan) == SIM_TIME_NEVER)
			continue;
		pid = sim_chan_peer_pid(rm->chan);
		if (pid && !(kill((pid_t)pid, 0) && errno == ESRCH))
			continue;
		rm->gone = any = true;
		fprintf(stderr, "hcasim: link %s: the process holding side %d (pid %d) is gone "
			"without leaving: the link goes dark\n", l->name, !rm->side, pid);
	}
	return any;
}

/* Whether a peer's program is outside the library: its device thread answers, in its time. */
static bool peer_away(void)
{
	for (struct sim_link *l = live_links; l; l = l->next)
		if (l->remote && l->remote->joined && !l->remote->gone &&
		    sim_chan_peer_away(l->remote->chan))
			return true;
	return false;
}

/* A wall-time pause in a wait that saw nothing new: yields at first, then sleeps, so that a
 * wait on a program that stays away for seconds costs no processor. */
void sim_link_nap(unsigned *n)
{
	/* 200 yields, then 20 us sleeps for about 40 ms, then 200 us, and 1 ms after about
	 * 1.5 s: a peer that answers soon is seen soon, one that is away for long costs little. */
	struct timespec ts = { 0, *n < 2200 ? 20000 : *n < 9700 ? 200000 : 1000000 };

	if (*n < UINT32_MAX)
		(*n)++;
	if (*n <= 200)
		sched_yield();
	else
		nanosleep(&ts, NULL);
}

/* The kernel's horizon (K1) over every remote link of this process. A wait is stalled when the
 * peers promise nothing new for the stall time and none of them is away; away, this side's own
 * wait (the device thread's) ends when the program comes back, never by a stall. */
static int horizon(void *arg, sim_time_t t)
{
	struct sim_kernel *k = arg;
	sim_time_t seen = 0, pmin;
	uint64_t t0 = 0, looked = 0, limit = 0, w0 = 0, stalled = 0;
	unsigned idle = 0;
	int r;

	for (struct sim_link *l = live_links; l; l = l->next)
		if (l->remote && l->remote->stall_ms > limit)
			limit = l->remote->stall_ms;
	/* The wall clock is read only once a pass has to wait: most passes do not. */
	while ((r = horizon_pass(k, t, &pmin)) == 2) {
		if (!stalled++) {
			w0 = wall_ns();
			t0 = looked = w0 / 1000000u;
		}
		if (away.interrupted && away.interrupted()) {
			sync_cost.wait_ns += wall_ns() - w0;
			return -EINTR;
		}
		if (wall_ms() - looked > 20) {
			looked = wall_ms();
			if (peers_died())
				continue; /* the next pass takes what they left, and their end */
		}
		if (pmin != seen || away.interrupted || peer_away()) {
			idle = pmin != seen ? 0 : idle;
			seen = pmin; /* the peers move, or answer in their time: not stalled */
			t0 = wall_ms();
		} else if (wall_ms() - t0 > limit) {
			return sim_error(-ETIMEDOUT, "fabric: waited %" PRIu64 " ms of wall time for a "
					 "peer to promise past %" PRIu64 " ps; its last promise is "
					 "%" PRIu64 " ps", limit, (uint64_t)t, (uint64_t)pmin);
		}
		sim_link_nap(&idle);
	}
	if (stalled) {
		sync_cost.waits++;
		sync_cost.wait_ns += wall_ns() - w0;
	}
	return r == -EIO ? sim_error(-EIO, "%s", sim_halted(k) ? sim_halted(k) : "fabric") : r;
}

void sim_link_away(bool (*interrupted)(void))
{
	away.interrupted = interrupted;
}

void sim_link_flag_away(bool on)
{
	for (struct sim_link *l = live_links; l; l = l->next)
		if (l->remote)
			sim_chan_set_away(l->remote->chan, on);
}

void sim_link_fabric_counts(uint64_t out[5])
{
	out[0] = sync_cost.packets;
	out[1] = sync_cost.syncs;
	out[2] = sync_cost.taken;
	out[3] = sync_cost.waits;
	out[4] = sync_cost.wait_ns;
	for (struct sim_link *l = live_links; l; l = l->next) {
		uint64_t p, s, t;

		if (!l->remote)
			continue;
		sim_chan_counts(l->remote->chan, &p, &s, &t);
		out[0] += p;
		out[1] += s;
		out[2] += t;
	}
}

sim_time_t sim_link_away_floor(void)
{
	return away.floor;
}

/* How far the peers whose programs are in the library need this side's time to go: for a peer
 * that waits (its record), the earliest its next frame can come; for one that runs, its
 * promise. 0: no peer needs anything (every one away, or none there). A peer that has just
 * joined is given its start here. */
sim_time_t sim_link_demand(struct sim_kernel *k)
{
	sim_time_t d = 0, p;
	struct sim_chan_msg m;
	bool waits;

	for (struct sim_link *l = live_links; l; l = l->next) {
		if (!l->remote || !remote_joined(l, k) || l->remote->gone)
			continue;
		if (sim_chan_peer_away(l->remote->chan)) {
			/* an away peer passes on what a third, in the library, asked of it */
			p = sim_chan_peer_relay(l->remote->chan);
			d = p > d ? p : d;
			continue;
		}
		p = l->remote->promise;
		if (sim_chan_peek(l->remote->chan, &m) == 1 && m.ts > p)
			p = m.ts;
		p = inbound_bound(l, p, &waits);
		d = p > d ? p : d;
	}
	for (struct sim_link *l = live_links; l && remote_links > 1; l = l->next)
		if (l->remote)
			sim_chan_set_relay(l->remote->chan, d);
	return d;
}

int sim_link_await_peers(uint64_t timeout_ms)
{
	uint64_t t0 = wall_ms();
	unsigned idle = 0;

	for (struct sim_link *l = live_links; l; l = l->next) {
		while (l->remote && !sim_chan_peer_pid(l->remote->chan)) {
			if (wall_ms() - t0 > timeout_ms)
				return sim_error(-ETIMEDOUT, "fabric.start=together: the process "
						 "holding side %d of link %s did not join within %"
						 PRIu64 " ms of wall time (fabric.join_timeout_ms)",
						 !l->remote->side, l->name, timeout_ms);
			sim_link_nap(&idle);
		}
	}
	return 0;
}

/* A late joiner: the peer's first message, a SYNC stamped its time + latency, says when the
 * fabric is; the kernel starts there. A peer that leaves first (TERMINATE, or its claim gone)
 * gives no time: this side starts at its own. */
static int remote_start(struct sim_link *l, struct sim_kernel *k)
{
	struct remote *rm = l->remote;
	struct sim_chan_msg m;
	uint64_t t0 = wall_ms();
	int r;

	while ((r = sim_chan_peek(rm->chan, &m)) == 0 && sim_chan_peer_pid(rm->chan)) {
		if (wall_ms() - t0 > rm->stall_ms)
			return sim_error(-ETIMEDOUT, "link %s: joined late, and the process holding "
					 "side %d (pid %d) gave no start time in %" PRIu64 " ms of "
					 "wall time", l->name, !rm->side,
					 sim_chan_peer_pid(rm->chan), rm->stall_ms);
		sched_yield();
	}
	if (r < 0)
		return r;
	rm->joined = r == 1; /* gone without a word: as if it had never come */
	if (r == 1 && m.type != SIM_CHAN_TERMINATE && m.ts >= l->latency_ps)
		sim_kernel_start_at(k, m.ts - l->latency_ps);
	return 0;
}

int sim_link_remote(struct sim_link *l, int side, struct sim_chan *c, uint64_t stall_ms)
{
	struct sim_kernel *k = sim_kernel();
	int r;

	if (!k || (side != 0 && side != 1) || l->remote || l->pcap || l->part)
		return sim_error(-EINVAL, "link %s: side %d cannot go remote (a kernel, side 0 or 1, "
				 "not remote yet, no capture)", l->name, side);
	if (sim_chan_params(c)->latency_ps != l->latency_ps)
		return sim_error(-EINVAL, "link %s: latency_ps %" PRIu64 " of channel %s is not the "
				 "link's, %" PRIu64, l->name, sim_chan_params(c)->latency_ps,
				 sim_chan_path(c), l->latency_ps);
	l->remote = calloc(1, sizeof(*l->remote));
	SIM_ASSERT(l->remote != NULL, "out of memory");
	l->remote->chan = c;
	l->remote->side = side;
	l->remote->stall_ms = stall_ms;
	l->remote->joined = sim_chan_peer_first(c);
	if (l->remote->joined && (r = remote_start(l, k))) {
		free(l->remote); /* the channel stays the caller's */
		l->remote = NULL;
		return r;
	}
	remote_links++;
	sim_kernel_set_horizon(k, horizon, k);
	return 0;
}

/* Everything still queued goes out, then TERMINATE: the peer's wait ends. Nothing is written
 * when the peer has gone (or never came): nobody would read it. */
static void remote_close(struct sim_link *l)
{
	struct remote *rm = l->remote;
	bool peer = rm && !rm->gone && sim_chan_peer_pid(rm->chan) &&
		    sim_chan_in_ts(rm->chan) != SIM_TIME_NEVER;

	if (!rm)
		return;
	while (peer && rm->outq) {
		struct outq *q = rm->outq;

		if (remote_write(l, q->d, q->t, q->ctl))
			fprintf(stderr, "hcasim: link %s: %s\n", l->name, rm->why);
		rm->outq = q->next;
		free(q->d);
		free(q);
	}
	remote_drop(l);
	while (rm->held_ctl) {
		struct outq *q = rm->held_ctl;

		rm->held_ctl = q->next;
		free(q->d);
		free(q);
	}
	if (peer && sim_chan_send_terminate(rm->chan))
		fprintf(stderr, "hcasim: link %s: %s\n", l->name, sim_last_error());
	{
		uint64_t p, s, t;

		sim_chan_counts(rm->chan, &p, &s, &t);
		sync_cost.packets += p;
		sync_cost.syncs += s;
		sync_cost.taken += t;
	}
	sim_chan_close(rm->chan);
	free(rm);
	l->remote = NULL;
	if (--remote_links == 0 && sim_kernel())
		sim_kernel_set_horizon(sim_kernel(), NULL, NULL);
}
