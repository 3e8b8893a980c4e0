/* shmchan: shared-memory channels in SimBricks' base/network slot layout, written from its
 * description (docs/fabric.md#channels). The owner byte of each slot is the only word both
 * processes write: the producer fills a slot it owns and publishes it with a release store of
 * type | consumer bit; the consumer acquires it, copies what it needs and hands it back with a
 * release store of 0. Nothing the peer wrote is trusted: the header is checked field by field
 * at attach, and every slot's type, length and timestamp before it is used. */
#include "sim/shmchan.h"
#include "sim/error.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHAN_MAGIC "HCASIMCH"
#define CHAN_VERSION 1u
#define CHAN_MAX_FILE (1ull << 32) /* 4 GiB: far beyond any sane ring */

/* The header page (docs/fabric.md#the-file). */
struct chan_hdr {
	char magic[8];
	uint32_t version, header_bytes, proto, slot_bytes, slots, zero;
	uint64_t latency_ps, sync_interval_ps;
	uint64_t ring_off[2];
	uint64_t file_bytes;
	_Atomic uint32_t pid[2]; /* attached process per side, 0 = none */
	uint8_t pad[128 - 80];
	/* Per side, a cache line each: what it waits for (docs/fabric.md#idle-time). seq is odd
	 * while the record holds; only its side writes it. */
	struct chan_wait {
		_Atomic uint64_t seq;
		_Atomic uint64_t t, m; /* the time it waits for; its earliest queued frame */
		_Atomic uint64_t away; /* 1: its program is outside the library (device thread) */
		_Atomic uint64_t relay; /* away: the time its device thread is asked to reach */
		uint8_t pad[24];
	} wait[2];
};
_Static_assert(offsetof(struct chan_hdr, latency_ps) == 32, "latency_ps at 32");
_Static_assert(offsetof(struct chan_hdr, ring_off) == 48, "ring_off at 48");
_Static_assert(offsetof(struct chan_hdr, pid) == 72, "pid at 72");
_Static_assert(offsetof(struct chan_hdr, wait) == 128 && sizeof(struct chan_wait) == 64,
	       "wait records at 128 and 192");

struct sim_chan {
	char path[256];		 /* for messages */
	int side;		 /* which ring is ours to write */
	uint8_t *map;		 /* the whole file */
	size_t map_bytes;
	struct chan_hdr *hdr;	 /* = map */
	struct sim_chan_params p; /* the agreed geometry */
	uint8_t *ring[2];	 /* ring s: written by side s */
	uint32_t out_pos, in_pos; /* next slot to write, to read */
	uint32_t unread_pos;	 /* our oldest slot the peer may not have taken */
	bool unread_full;	 /* unread_pos == out_pos with every slot written untaken */
	sim_time_t out_ts, in_ts; /* last timestamp sent, taken */
	bool out_closed;	 /* TERMINATE sent */
	bool in_closed;		 /* TERMINATE taken */
	bool peeked;		 /* the slot at in_pos has been returned by peek */
	bool peer_first;	 /* attached while a live process held the other side */
	uint8_t peeked_type;
	sim_time_t peeked_ts;
	uint64_t sent_packets, sent_syncs, taken; /* messages written (by kind), taken */
};

void sim_chan_default_params(struct sim_chan_params *p, uint64_t latency_ps)
{
	*p = (struct sim_chan_params){ .slot_bytes = SIM_CHAN_SLOT_HDR + 4096 + 256,
				       .slots = 512,
				       .latency_ps = latency_ps,
				       .sync_interval_ps = latency_ps };
}

static uint64_t file_bytes(const struct sim_chan_params *p)
{
	return SIM_CHAN_HEADER_BYTES + 2ull * p->slots * p->slot_bytes;
}

static int check_params(const char *path, int side, const struct sim_chan_params *p)
{
	if (side != 0 && side != 1)
		return sim_error(-EINVAL, "channel %s: side %d (0 or 1)", path, side);
	if (p->slot_bytes < 2 * SIM_CHAN_SLOT_HDR || p->slot_bytes % SIM_CHAN_SLOT_HDR ||
	    p->slot_bytes > SIM_CHAN_SLOT_HDR + 65535u)
		return sim_error(-EINVAL,
				 "channel %s: slot_bytes %u (a multiple of 64 from 128 to 65600)",
				 path, p->slot_bytes);
	if (p->slots == 0 || file_bytes(p) > CHAN_MAX_FILE)
		return sim_error(-EINVAL, "channel %s: slots %u (1 and more, the file under 4 GiB)",
				 path, p->slots);
	if (p->latency_ps == 0)
		return sim_error(-EINVAL, "channel %s: latency_ps 0 (the latency is the lookahead, "
				 "it must be above 0)", path);
	if (p->sync_interval_ps == 0 || p->sync_interval_ps > p->latency_ps)
		return sim_error(-EINVAL, "channel %s: sync_interval_ps %llu (1 to latency_ps %llu)",
				 path, (unsigned long long)p->sync_interval_ps,
				 (unsigned long long)p->latency_ps);
	if (strlen(path) >= sizeof(((struct sim_chan *)0)->path) - 24)
		return sim_error(-ENAMETOOLONG, "channel %s: path longer than %zu bytes", path,
				 sizeof(((struct sim_chan *)0)->path) - 24);
	return 0;
}

/* Claim side for this process: free, or held by a process that is gone. */
static int claim(struct sim_chan *c)
{
	uint32_t me = (uint32_t)getpid(), held = 0;

	while (!atomic_compare_exchange_strong(&c->hdr->pid[c->side], &held, me)) {
		if (held == me || (kill((pid_t)held, 0) == 0 || errno != ESRCH))
			return sim_error(-EBUSY, "channel %s: side %d is held by pid %u", c->path,
					 c->side, held);
		/* held by a process that has died: stale, take it over */
	}
	return 0;
}

static struct sim_chan *chan_new(const char *path, int side, const struct sim_chan_params *p,
				 uint8_t *map, size_t bytes)
{
	struct sim_chan *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->side = side;
	c->map = map;
	c->map_bytes = bytes;
	c->hdr = (struct chan_hdr *)map;
	c->p = *p;
	c->ring[0] = map + SIM_CHAN_HEADER_BYTES;
	c->ring[1] = c->ring[0] + (size_t)p->slots * p->slot_bytes;
	return c;
}

/* Wrap a mapped, checked file and claim side. */
static int adopt(struct sim_chan **out, const char *path, int side,
		 const struct sim_chan_params *p, uint8_t *map, size_t bytes)
{
	struct sim_chan *c = chan_new(path, side, p, map, bytes);
	int err;

	if (!c) {
		munmap(map, bytes);
		return sim_error(-ENOMEM, "channel %s: out of memory", path);
	}
	if ((err = claim(c))) {
		munmap(map, bytes);
		free(c);
		return err;
	}
	*out = c;
	return 0;
}

/* Map the freshly sized file at fd and write its header. */
static uint8_t *init_file(int fd, const char *path, const struct sim_chan_params *p, int *err)
{
	uint64_t bytes = file_bytes(p);
	uint8_t *map;
	struct chan_hdr *h;

	if (ftruncate(fd, (off_t)bytes)) {
		*err = sim_error(-errno, "channel %s: cannot size the file to %llu bytes: %s", path,
				 (unsigned long long)bytes, strerror(errno));
		return NULL;
	}
	map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		*err = sim_error(-errno, "channel %s: mmap: %s", path, strerror(errno));
		return NULL;
	}
	h = (struct chan_hdr *)map;
	memcpy(h->magic, CHAN_MAGIC, 8);
	h->version = CHAN_VERSION;
	h->header_bytes = SIM_CHAN_HEADER_BYTES;
	h->proto = SIM_CHAN_PROTO_NET;
	h->slot_bytes = p->slot_bytes;
	h->slots = p->slots;
	h->latency_ps = p->latency_ps;
	h->sync_interval_ps = p->sync_interval_ps;
	h->ring_off[0] = SIM_CHAN_HEADER_BYTES;
	h->ring_off[1] = SIM_CHAN_HEADER_BYTES + (uint64_t)p->slots * p->slot_bytes;
	h->file_bytes = bytes;
	return map;
}

int sim_chan_create(struct sim_chan **out, const char *path, int side,
		    const struct sim_chan_params *p)
{
	char tmp[300];
	uint8_t *map;
	int fd, err;

	*out = NULL;
	if ((err = check_params(path, side, p)))
		return err;
	/* Filled under a temporary name, then linked: an attacher never sees half a header. */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return sim_error(-errno, "channel %s: cannot create %s: %s", path, tmp,
				 strerror(errno));
	map = init_file(fd, path, p, &err);
	close(fd);
	if (map && link(tmp, path)) {
		err = sim_error(-errno, "channel %s: cannot create it: %s", path, strerror(errno));
		munmap(map, file_bytes(p));
		map = NULL;
	}
	unlink(tmp);
	return map ? adopt(out, path, side, p, map, file_bytes(p)) : err;
}

/* Every field of the header a process attaching must agree with (the magic aside). */
static int check_hdr(const char *path, const struct chan_hdr *h, uint64_t size,
		     const struct sim_chan_params *p)
{
	const struct {
		const char *name;
		uint64_t got, want;
	} f[] = {
		{ "version", h->version, CHAN_VERSION },
		{ "header_bytes", h->header_bytes, SIM_CHAN_HEADER_BYTES },
		{ "proto", h->proto, SIM_CHAN_PROTO_NET },
		{ "slot_bytes", h->slot_bytes, p->slot_bytes },
		{ "slots", h->slots, p->slots },
		{ "latency_ps", h->latency_ps, p->latency_ps },
		{ "sync_interval_ps", h->sync_interval_ps, p->sync_interval_ps },
		{ "ring_off[0]", h->ring_off[0], SIM_CHAN_HEADER_BYTES },
		{ "ring_off[1]", h->ring_off[1],
		  SIM_CHAN_HEADER_BYTES + (uint64_t)p->slots * p->slot_bytes },
		{ "file_bytes", h->file_bytes, file_bytes(p) },
	};

	if (memcmp(h->magic, CHAN_MAGIC, 8))
		return sim_error(-EINVAL, "channel %s: magic: not an hcasim channel file (its first "
				 "8 bytes are not \"%s\")", path, CHAN_MAGIC);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i].got != f[i].want)
			return sim_error(-EINVAL, "channel %s: %s is %llu in the file, %llu here",
					 path, f[i].name, (unsigned long long)f[i].got,
					 (unsigned long long)f[i].want);
	if (size != file_bytes(p))
		return sim_error(-EINVAL, "channel %s: truncated or grown: %llu bytes on disk, "
				 "file_bytes says %llu", path, (unsigned long long)size,
				 (unsigned long long)file_bytes(p));
	return 0;
}

int sim_chan_attach(struct sim_chan **out, const char *path, int side,
		    const struct sim_chan_params *p)
{
	struct stat st;
	uint8_t *map;
	int fd, err, held;

	*out = NULL;
	if ((err = check_params(path, side, p)))
		return err;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return sim_error(-errno, "channel %s: cannot open it: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < SIM_CHAN_HEADER_BYTES) {
		close(fd);
		return sim_error(-EINVAL, "channel %s: truncated or not a file: %lld bytes, its "
				 "header alone is %u", path, (long long)st.st_size,
				 SIM_CHAN_HEADER_BYTES);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	err = map == MAP_FAILED ? -errno : 0;
	close(fd);
	if (err)
		return sim_error(err, "channel %s: mmap: %s", path, strerror(-err));
	if ((err = check_hdr(path, (const struct chan_hdr *)map, (uint64_t)st.st_size, p))) {
		munmap(map, (size_t)st.st_size);
		return err;
	}
	if ((err = adopt(out, path, side, p, map, (size_t)st.st_size)))
		return err;
	held = sim_chan_peer_pid(*out);
	(*out)->peer_first = held && (kill((pid_t)held, 0) == 0 || errno != ESRCH);
	return 0;
}

int sim_chan_join(struct sim_chan **out, const char *path, int side,
		  const struct sim_chan_params *p)
{
	int err = sim_chan_create(out, path, side, p);

	return err == -EEXIST ? sim_chan_attach(out, path, side, p) : err;
}

void sim_chan_close(struct sim_chan *c)
{
	uint32_t me = (uint32_t)getpid();

	if (!c)
		return;
	atomic_compare_exchange_strong(&c->hdr->pid[c->side], &me, 0);
	/* The last to leave removes the file: the next run starts from empty rings. */
	if (atomic_load(&c->hdr->pid[!c->side]) == 0)
		unlink(c->path);
	munmap(c->map, c->map_bytes);
	free(c);
}

int sim_chan_peer_pid(const struct sim_chan *c)
{
	return (int)atomic_load(&c->hdr->pid[!c->side]);
}

bool sim_chan_peer_first(const struct sim_chan *c)
{
	return c->peer_first;
}

const struct sim_chan_params *sim_chan_params(const struct sim_chan *c)
{
	return &c->p;
}

const char *sim_chan_path(const struct sim_chan *c)
{
	return c->path;
}

static _Atomic uint8_t *own_byte(uint8_t *slot)
{
	return (_Atomic uint8_t *)(slot + SIM_CHAN_OWN_OFF);
}

/* Fill the next outbound slot and publish it. */
static int put(struct sim_chan *c, uint8_t type, sim_time_t ts, uint8_t port, const void *frame,
	       size_t len)
{
	uint8_t *s = c->ring[c->side] + (size_t)c->out_pos * c->p.slot_bytes;

	if (c->out_closed)
		return sim_error(-EINVAL, "channel %s: side %d sends after its TERMINATE", c->path,
				 c->side);
	if (ts < c->out_ts)
		return sim_error(-EINVAL, "channel %s: side %d: timestamp %llu ps is before the "
				 "last one sent, %llu ps", c->path, c->side,
				 (unsigned long long)ts, (unsigned long long)c->out_ts);
	if (atomic_load_explicit(own_byte(s), memory_order_acquire) & SIM_CHAN_OWN_CON)
		return sim_error(-EAGAIN, "channel %s: side %d's ring is full (%u slots the peer "
				 "has not consumed)", c->path, c->side, c->p.slots);
	memset(s, 0, SIM_CHAN_OWN_OFF);
	s[0] = (uint8_t)len;
	s[1] = (uint8_t)(len >> 8);
	s[2] = port;
	for (int i = 0; i < 8; i++)
		s[SIM_CHAN_TS_OFF + i] = (uint8_t)(ts >> (8 * i)); /* little-endian */
	if (len)
		memcpy(s + SIM_CHAN_SLOT_HDR, frame, len);
	atomic_store_explicit(own_byte(s), type | SIM_CHAN_OWN_CON, memory_order_release);
	c->out_pos = (c->out_pos + 1) % c->p.slots;
	c->unread_full = c->out_pos == c->unread_pos;
	c->out_ts = ts;
	c->sent_packets += type == SIM_CHAN_PACKET;
	c->sent_syncs += type == SIM_CHAN_SYNC;
	return 0;
}

int sim_chan_send_packet(struct sim_chan *c, sim_time_t ts, uint8_t port, const void *frame,
			 size_t len)
{
	if (len == 0 || len > c->p.slot_bytes - SIM_CHAN_SLOT_HDR)
		return sim_error(len ? -EMSGSIZE : -EINVAL, "channel %s: side %d: a frame of %zu "
				 "bytes (1 to %u fit a slot)", c->path, c->side, len,
				 c->p.slot_bytes - SIM_CHAN_SLOT_HDR);
	return put(c, SIM_CHAN_PACKET, ts, port, frame, len);
}

int sim_chan_send_sync(struct sim_chan *c, sim_time_t ts)
{
	return put(c, SIM_CHAN_SYNC, ts, 0, NULL, 0);
}

int sim_chan_send_terminate(struct sim_chan *c)
{
	int err = put(c, SIM_CHAN_TERMINATE, SIM_TIME_NEVER, 0, NULL, 0);

	if (!err)
		c->out_closed = true;
	return err;
}

sim_time_t sim_chan_out_ts(const struct sim_chan *c)
{
	return c->out_ts;
}

/* The checks of a slot the peer published: its fields read once, from the slot only. */
static int check_slot(struct sim_chan *c, uint8_t type, uint16_t len, sim_time_t ts)
{
	int from = !c->side;

	if (type != SIM_CHAN_SYNC && type != SIM_CHAN_TERMINATE && type != SIM_CHAN_PACKET)
		return sim_error(-EPROTO, "channel %s: slot %u from side %d: unknown type 0x%02x "
				 "(SYNC 0x00, TERMINATE 0x01, PACKET 0x40)", c->path, c->in_pos,
				 from, type);
	if (type == SIM_CHAN_PACKET && (len == 0 || len > c->p.slot_bytes - SIM_CHAN_SLOT_HDR))
		return sim_error(-EPROTO, "channel %s: slot %u from side %d: PACKET len %u (1 to "
				 "%u fit the slot)", c->path, c->in_pos, from, len,
				 c->p.slot_bytes - SIM_CHAN_SLOT_HDR);
	if (ts < c->in_ts)
		return sim_error(-EPROTO, "channel %s: slot %u from side %d: timestamp %llu ps is "
				 "before the previous one, %llu ps", c->path, c->in_pos, from,
				 (unsigned long long)ts, (unsigned long long)c->in_ts);
	return 0;
}

int sim_chan_peek(struct sim_chan *c, struct sim_chan_msg *m)
{
	uint8_t *s = c->ring[!c->side] + (size_t)c->in_pos * c->p.slot_bytes;
	const volatile uint8_t *v = s; /* the peer's memory: each field read once */
	uint8_t own, type;
	uint16_t len;
	sim_time_t ts = 0;
	int err;

	if (c->in_closed)
		return 0;
	own = atomic_load_explicit(own_byte(s), memory_order_acquire);
	if (!(own & SIM_CHAN_OWN_CON))
		return 0;
	type = own & SIM_CHAN_TYPE_MASK;
	len = (uint16_t)(v[0] | v[1] << 8);
	for (int i = 7; i >= 0; i--)
		ts = ts << 8 | v[SIM_CHAN_TS_OFF + i];
	if (type == SIM_CHAN_TERMINATE)
		ts = SIM_TIME_NEVER; /* whatever it says: the peer is gone */
	if ((err = check_slot(c, type, len, ts)))
		return err;
	*m = (struct sim_chan_msg){ .type = (enum sim_chan_type)type, .ts = ts, .slot = c->in_pos };
	if (type == SIM_CHAN_PACKET) {
		m->port = v[2];
		m->len = len;
		m->data = s + SIM_CHAN_SLOT_HDR;
	}
	c->peeked = true;
	c->peeked_type = type;
	c->peeked_ts = ts;
	return 1;
}

void sim_chan_done(struct sim_chan *c)
{
	uint8_t *s = c->ring[!c->side] + (size_t)c->in_pos * c->p.slot_bytes;

	if (!c->peeked)
		return;
	atomic_store_explicit(own_byte(s), 0, memory_order_release);
	c->in_pos = (c->in_pos + 1) % c->p.slots;
	c->in_ts = c->peeked_ts;
	c->in_closed = c->peeked_type == SIM_CHAN_TERMINATE;
	c->peeked = false;
	c->taken++;
}

void sim_chan_counts(const struct sim_chan *c, uint64_t *packets, uint64_t *syncs,
		     uint64_t *taken)
{
	*packets = c->sent_packets;
	*syncs = c->sent_syncs;
	*taken = c->taken;
}

sim_time_t sim_chan_in_ts(const struct sim_chan *c)
{
	return c->in_ts;
}

void sim_chan_wait_publish(struct sim_chan *c, sim_time_t t, sim_time_t m)
{
	struct chan_wait *w = &c->hdr->wait[c->side];
	uint64_t seq = atomic_load_explicit(&w->seq, memory_order_relaxed);

	if (seq & 1) /* replace a record: withdraw it first */
		atomic_store_explicit(&w->seq, ++seq, memory_order_release);
	/* release: a reader that sees the new values sees the withdrawal before them */
	atomic_store_explicit(&w->t, t, memory_order_release);
	atomic_store_explicit(&w->m, m, memory_order_release);
	atomic_store_explicit(&w->seq, seq + 1, memory_order_release);
}

void sim_chan_wait_clear(struct sim_chan *c)
{
	struct chan_wait *w = &c->hdr->wait[c->side];
	uint64_t seq = atomic_load_explicit(&w->seq, memory_order_relaxed);

	if (seq & 1)
		atomic_store_explicit(&w->seq, seq + 1, memory_order_release);
}

void sim_chan_set_away(struct sim_chan *c, bool away)
{
	atomic_store_explicit(&c->hdr->wait[c->side].away, away, memory_order_release);
}

void sim_chan_set_relay(struct sim_chan *c, sim_time_t t)
{
	atomic_store_explicit(&c->hdr->wait[c->side].relay, t, memory_order_release);
}

sim_time_t sim_chan_peer_relay(const struct sim_chan *c)
{
	return atomic_load_explicit(&c->hdr->wait[!c->side].relay, memory_order_acquire);
}

bool sim_chan_peer_away(const struct sim_chan *c)
{
	return atomic_load_explicit(&c->hdr->wait[!c->side].away, memory_order_acquire) != 0;
}

/* The oldest message this side wrote that the peer has not taken. Consumption is in order, so
 * unread_pos only moves forward over slots handed back; the first still carrying the consumer
 * bit is the oldest untaken. */
static sim_time_t unread_ts(struct sim_chan *c)
{
	sim_time_t ts = 0;
	uint8_t *s;

	for (;;) {
		if (c->unread_pos == c->out_pos && !c->unread_full)
			return SIM_TIME_NEVER;
		s = c->ring[c->side] + (size_t)c->unread_pos * c->p.slot_bytes;
		if (atomic_load_explicit(own_byte(s), memory_order_acquire) & SIM_CHAN_OWN_CON)
			break;
		c->unread_pos = (c->unread_pos + 1) % c->p.slots;
		c->unread_full = false;
	}
	for (int i = 7; i >= 0; i--)
		ts = ts << 8 | s[SIM_CHAN_TS_OFF + i];
	return ts;
}

int sim_chan_peer_wait(struct sim_chan *c, sim_time_t *t, sim_time_t *m, sim_time_t *unread)
{
	struct chan_wait *w = &c->hdr->wait[!c->side];
	uint64_t s1 = atomic_load_explicit(&w->seq, memory_order_acquire);

	if (!(s1 & 1))
		return 0;
	*t = atomic_load_explicit(&w->t, memory_order_acquire); /* acquire: loads in order */
	*m = atomic_load_explicit(&w->m, memory_order_acquire);
	*unread = unread_ts(c);
	/* The scan's acquire loads keep this one after them: a message the peer took after its
	 * record was read shows as a changed seq (it withdraws the record before taking). */
	return atomic_load_explicit(&w->seq, memory_order_acquire) == s1;
}
