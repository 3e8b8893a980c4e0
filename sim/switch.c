/* switch: a cut-through switch with per-output-port queues and link-level back-pressure
 * (docs/blocks/switch.md). A frame's head reaches an input port (its link delivers at the
 * first bit: sim_link_set_head_rx); the switch picks its output ports (LFT/MFT on InfiniBand,
 * a learning bridge on Ethernet) and queues a copy at each; an output port starts a frame
 * switch.latency_ns after its head came in, or when the port is free. The frame holds its
 * input port's buffer until its last copy has left: then InfiniBand returns the credits to
 * the host, and Ethernet lifts a PFC pause the port's holdings had caused. */
#include "sim/switch.h"
#include "sim/error.h"
#include "sim/sm.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SW_MLIDS 0x3fff /* 0xc000..0xfffe */
#define SW_MACS 64	/* learnt addresses; a full table learns no more (frames flood) */

/* A received frame's claim on its input port's buffer, until its last copy has left. */
struct hold {
	struct hold *prev, *next; /* the switch's live holds */
	unsigned in;   /* input port */
	uint32_t len;  /* bytes */
	unsigned refs; /* copies not yet sent or dropped */
};

/* A frame in an output port's queue. */
struct qframe {
	struct qframe *next;
	uint8_t *buf;	  /* a link buffer (sim_link_frame_new), sent by reference */
	size_t len;	  /* bytes */
	bool crc_pending; /* as it came in */
	sim_time_t ready; /* head in + cut-through latency: the earliest it may start */
	struct hold *h;	  /* its input's claim */
};

struct sw_port {
	struct sim_switch *sw;
	unsigned num;		  /* 1..nports */
	struct sim_link *link;	  /* side 1 is this port, side 0 the host's */
	struct qframe *qhead;	  /* output queue, oldest first */
	struct qframe **qtail;
	uint64_t qbytes;	  /* bytes in it */
	bool busy;		  /* a frame is going out */
	bool kick;		  /* an event will start the next one */
	uint64_t held;		  /* bytes received here still in the switch */
	bool xoff;		  /* Ethernet: the switch has paused the host */
	struct sim_switch_counters c;
};

struct mac_ent {
	uint64_t mac;
	unsigned port;
};

struct sim_switch {
	struct sim_switch_params p;
	unsigned nports;
	struct sw_port port[SIM_SWITCH_MAX_PORTS + 1]; /* [1..nports] */
	uint8_t lft[0xc000];			       /* output port per unicast LID */
	uint64_t mft[SW_MLIDS];			       /* bit p: port p, per MLID */
	struct mac_ent macs[SW_MACS];		       /* learnt, in learning order */
	unsigned nmacs;
	struct hold *holds;			       /* frames in the switch */
};

/* A host port's end of its cable to the switch: the flow control its transmitter obeys. It
 * lives with the host, in whichever process holds it; the switch's news reach it as control
 * messages over the cable (sim_link_ctl_send), one latency after the switch sent them. */
struct sim_switch_end {
	struct sim_link *link; /* side 0 is this end */
	unsigned num;	       /* the switch port at the other end */
	bool ib;
	uint32_t credits;      /* IB: blocks the host may still send */
	bool paused;	       /* Ethernet: the host has heard a pause */
};

/* The control messages on a switch cable: flow-control news to the host (FC_*), the
 * management of the SM for the switch (sim/sm.h, SIM_SM_MSG_*) to the switch. */
enum { FC_CREDITS = 1, FC_PAUSE = 2 };

static uint32_t blocks_of(size_t len)
{
	return (uint32_t)((len + SIM_SWITCH_BLOCK - 1) / SIM_SWITCH_BLOCK);
}

/* ---- the hosts' side of flow control: the gate of each host port's transmitter ---- */

static bool credit_gate(void *arg, size_t len)
{
	struct sim_switch_end *pt = arg;
	uint32_t b = blocks_of(len);

	if (pt->credits < b)
		return false;
	pt->credits -= b;
	return true;
}

static bool pause_gate(void *arg, size_t len)
{
	const struct sim_switch_end *pt = arg;

	(void)len;
	return !pt->paused;
}

/* News from the switch, from the cable: checked, as it may come from another process. */
static void fc_arrive(void *arg, const uint8_t *m, size_t len)
{
	struct sim_switch_end *e = arg;
	uint32_t blocks;

	if (e->ib && len == 5 && m[0] == FC_CREDITS) {
		blocks = (uint32_t)m[1] | (uint32_t)m[2] << 8 | (uint32_t)m[3] << 16 |
			 (uint32_t)m[4] << 24;
		e->credits += blocks;
		trace_sw_credits(-1, e->num, blocks, e->credits);
	} else if (!e->ib && len == 2 && m[0] == FC_PAUSE && m[1] <= 1) {
		e->paused = m[1];
	} else {
		sim_error(-EPROTO, "switch port %u: a control message of %zu bytes, type %u, is no "
			  "%s update", e->num, len, m[0], e->ib ? "credit" : "pause");
		sim_halt(sim_kernel(), sim_last_error());
		return;
	}
	sim_link_gate_open(e->link, 0);
}

static void fc_send(struct sw_port *pt, uint32_t blocks, bool xoff)
{
	uint8_t m[5] = { FC_CREDITS, (uint8_t)blocks, (uint8_t)(blocks >> 8),
			 (uint8_t)(blocks >> 16), (uint8_t)(blocks >> 24) };

	if (pt->sw->p.ib) {
		pt->c.credit_blocks += blocks;
		sim_link_ctl_send(pt->link, 1, m, 5);
		return;
	}
	m[0] = FC_PAUSE;
	m[1] = xoff;
	sim_link_ctl_send(pt->link, 1, m, 2);
}

/* A copy of h's frame has left (or was dropped): the last one frees its input's buffer. */
static void release(struct sim_switch *sw, struct hold *h)
{
	struct sw_port *in = &sw->port[h->in];

	if (--h->refs)
		return;
	*(h->prev ? &h->prev->next : &sw->holds) = h->next;
	if (h->next)
		h->next->prev = h->prev;
	in->held -= h->len;
	if (sw->p.ib && sw->p.credits)
		fc_send(in, blocks_of(h->len), false);
	if (!sw->p.ib && in->xoff && in->held <= sw->p.xon_bytes) {
		in->xoff = false;
		trace_sw_pause(-1, in->num, 0, in->held);
		fc_send(in, 0, false);
	}
	free(h);
}

/* ---- output ports ---- */

struct egress_done {
	struct sw_port *pt;
	struct hold *h;
};

static void egress_kick(struct sw_port *pt);

static void egress_end(void *arg)
{
	struct egress_done *e = arg;

	e->pt->busy = false;
	release(e->pt->sw, e->h);
	egress_kick(e->pt);
	free(e);
}

static void egress_event(void *arg)
{
	struct sw_port *pt = arg;

	pt->kick = false;
	egress_kick(pt);
}

/* Start the queue's head when the port is free and the frame's cut-through time has come. */
static void egress_kick(struct sw_port *pt)
{
	struct sim_kernel *k = sim_kernel();
	struct qframe *f = pt->qhead;
	struct egress_done *e;
	sim_time_t end;

	if (pt->busy || pt->kick || !f)
		return;
	if (f->ready > sim_now(k)) {
		pt->kick = true;
		sim_schedule_at(k, f->ready, egress_event, pt);
		return;
	}
	pt->qhead = f->next;
	pt->qbytes -= f->len;
	pt->c.tx_pkts++;
	pt->c.tx_bytes += f->len;
	end = sim_link_send_frame(pt->link, 1, f->buf, f->len, f->crc_pending);
	pt->busy = true;
	e = malloc(sizeof(*e));
	SIM_ASSERT(e != NULL, "out of memory");
	*e = (struct egress_done){ pt, f->h };
	sim_schedule_owned_at(k, end, egress_end, e);
	free(f);
}

static void enqueue(struct sim_switch *sw, struct sw_port *out, unsigned in, uint8_t *buf,
		    size_t len, bool crc_pending, struct hold *h)
{
	struct qframe *f;

	if (out->qbytes + len > sw->p.queue_bytes) {
		out->c.tx_discards++;
		trace_sw_drop(-1, out->num, len, "queue_full");
		sim_link_frame_free(buf);
		release(sw, h);
		return;
	}
	trace_sw_fwd(-1, in, out->num, len, out->qbytes);
	f = malloc(sizeof(*f));
	SIM_ASSERT(f != NULL, "out of memory");
	*f = (struct qframe){ NULL, buf, len, crc_pending,
			      sim_now(sim_kernel()) + sw->p.latency_ps, h };
	if (!out->qhead)
		out->qtail = &out->qhead;
	*out->qtail = f;
	out->qtail = &f->next;
	out->qbytes += len;
	if (out->qbytes > out->c.queue_max)
		out->c.queue_max = out->qbytes;
	egress_kick(out);
}

/* ---- forwarding ---- */

static uint64_t all_but(const struct sim_switch *sw, unsigned in)
{
	uint64_t m = ((1ull << (sw->nports + 1)) - 2); /* ports 1..nports */

	return m & ~(1ull << in);
}

/* InfiniBand: the LRH's DLID through the LFT, or the MFT for a multicast LID. */
static uint64_t ib_route(const struct sim_switch *sw, const uint8_t *f, size_t len)
{
	uint16_t dlid;

	if (len < 8)
		return 0;
	dlid = (uint16_t)(f[2] << 8 | f[3]);
	if (dlid >= 0xc000)
		return dlid - 0xc000u < SW_MLIDS ? sw->mft[dlid - 0xc000u] : 0;
	if (!dlid || sw->lft[dlid] < 1 || sw->lft[dlid] > sw->nports)
		return 0;
	return 1ull << sw->lft[dlid];
}

static uint64_t mac_at(const uint8_t *b)
{
	uint64_t m = 0;

	for (int i = 0; i < 6; i++)
		m = m << 8 | b[i];
	return m;
}

/* Ethernet: learn the source; a known unicast destination goes to its port, anything else
 * (unknown, multicast, broadcast) floods. */
static uint64_t eth_route(struct sim_switch *sw, unsigned in, const uint8_t *f, size_t len)
{
	uint64_t dst, src;
	unsigned i;

	if (len < 14)
		return 0;
	dst = mac_at(f);
	src = mac_at(f + 6);
	for (i = 0; i < sw->nmacs && sw->macs[i].mac != src; i++)
		;
	if (!(f[6] & 1) && (i < sw->nmacs || sw->nmacs < SW_MACS) &&
	    (i == sw->nmacs || sw->macs[i].port != in)) {
		sw->macs[i] = (struct mac_ent){ src, in };
		sw->nmacs += i == sw->nmacs;
		trace_sw_learn(-1, in, src);
	}
	for (i = 0; !(f[0] & 1) && i < sw->nmacs; i++)
		if (sw->macs[i].mac == dst)
			return 1ull << sw->macs[i].port;
	sw->port[in].c.flooded++;
	return all_but(sw, in);
}

/* A frame's head came in at port pt: to the queues of its output ports. */
static void ingress(void *arg, const uint8_t *frame, size_t len, bool fcs_ok, bool crc_pending)
{
	struct sw_port *pt = arg;
	struct sim_switch *sw = pt->sw;
	uint64_t to = fcs_ok ? (sw->p.ib ? ib_route(sw, frame, len)
					 : eth_route(sw, pt->num, frame, len))
			     : 0;
	struct hold *h;
	uint8_t *buf;

	pt->c.rx_pkts++;
	pt->c.rx_bytes += len;
	if (!(to & ~(1ull << pt->num))) {
		pt->c.rx_discards++;
		trace_sw_drop(-1, pt->num, len, !fcs_ok ? "fcs" : to ? "same_port" : "no_route");
		return;
	}
	to &= ~(1ull << pt->num);
	h = malloc(sizeof(*h));
	SIM_ASSERT(h != NULL, "out of memory");
	*h = (struct hold){ NULL, sw->holds, pt->num, (uint32_t)len,
			    (unsigned)__builtin_popcountll(to) };
	if (sw->holds)
		sw->holds->prev = h;
	sw->holds = h;
	pt->held += len;
	if (!sw->p.ib && sw->p.xoff_bytes && !pt->xoff && pt->held >= sw->p.xoff_bytes) {
		pt->xoff = true;
		pt->c.xoff++;
		trace_sw_pause(-1, pt->num, 1, pt->held);
		fc_send(pt, 0, true);
	}
	buf = sim_link_frame_keep(frame);
	for (unsigned o = 1; o <= sw->nports; o++) {
		uint8_t *b = buf;

		if (!(to >> o & 1))
			continue;
		if (to >> (o + 1)) { /* not the last: a copy */
			b = sim_link_frame_new(len);
			memcpy(b, buf, len);
		}
		enqueue(sw, &sw->port[o], pt->num, b, len, crc_pending, h);
	}
}

/* ---- the subnet manager's SMPs ---- */

static void set_lft(void *arg, uint32_t block, const uint8_t ports[64])
{
	struct sim_switch *sw = arg;
	uint32_t routes = 0;

	if (block >= sizeof(sw->lft) / 64)
		return; /* beyond the unicast LIDs: the SMP's block is out of range */
	memcpy(&sw->lft[64 * block], ports, 64);
	for (int i = 0; i < 64; i++)
		routes += ports[i] >= 1 && ports[i] <= sw->nports;
	trace_sw_lft(-1, block, routes);
}

static void set_mft(void *arg, uint32_t modifier, const uint16_t masks[32])
{
	struct sim_switch *sw = arg;
	uint32_t pos = modifier >> 28, block = modifier & 0x1ff, groups = 0;

	if (pos * 16 > sw->nports)
		return; /* no ports at that position */
	for (uint32_t i = 0; i < 32 && block * 32 + i < SW_MLIDS; i++) {
		uint64_t *m = &sw->mft[block * 32 + i];

		*m = (*m & ~(0xffffull << (16 * pos))) | (uint64_t)masks[i] << (16 * pos);
		groups += masks[i] != 0;
	}
	trace_sw_mft(-1, block, pos, groups);
}

static const struct sim_smp_switch_ops smp_ops = { set_lft, set_mft };

/* What a host's process sends the switch over the cable: its SM's management for the switch's
 * (sim_sm_from_port), or nothing. A message that breaks the rules halts the simulation. */
static void from_host(void *arg, const uint8_t *msg, size_t len)
{
	struct sw_port *pt = arg;
	int rc = pt->sw->p.ib ? sim_sm_from_port(pt->num, msg, len)
			      : sim_error(-EPROTO, "switch port %u: a control message from a RoCE "
					  "host (%zu bytes): a learning bridge takes none",
					  pt->num, len);

	if (rc)
		sim_halt(sim_kernel(), sim_last_error());
}

/* ---- construction ---- */

struct sim_switch *sim_switch_create(unsigned nports, const struct sim_switch_params *p)
{
	struct sim_switch *sw = calloc(1, sizeof(*sw));

	SIM_ASSERT(sw != NULL, "out of memory");
	SIM_ASSERT(nports >= 1 && nports <= SIM_SWITCH_MAX_PORTS, "switch of %u ports", nports);
	sw->p = *p;
	sw->nports = nports;
	memset(sw->lft, SIM_SM_LFT_NONE, sizeof(sw->lft));
	for (unsigned i = 1; i <= nports; i++) {
		sw->port[i].sw = sw;
		sw->port[i].num = i;
	}
	if (p->ib)
		sim_sm_set_switch(&smp_ops, sw, nports);
	return sw;
}

void sim_switch_attach(struct sim_switch *sw, unsigned port, struct sim_link *l)
{
	struct sw_port *pt = &sw->port[port];

	SIM_ASSERT(port >= 1 && port <= sw->nports, "switch port %u", port);
	pt->link = l;
	sim_link_attach(l, 1, ingress, pt);
	sim_link_set_head_rx(l, 1, true);
	sim_link_set_ctl(l, 1, from_host, pt);
}

struct sim_switch_end *sim_switch_end_create(struct sim_link *l, unsigned port,
					     const struct sim_switch_params *p)
{
	struct sim_switch_end *e = calloc(1, sizeof(*e));

	SIM_ASSERT(e != NULL, "out of memory");
	*e = (struct sim_switch_end){ l, port, p->ib, p->credits, false };
	sim_link_set_head_rx(l, 1, true); /* the switch port takes frames at their first bit */
	sim_link_set_ctl(l, 0, fc_arrive, e);
	if (p->ib && p->credits)
		sim_link_set_gate(l, 0, credit_gate, e);
	else if (!p->ib && p->xoff_bytes)
		sim_link_set_gate(l, 0, pause_gate, e);
	return e;
}

void sim_switch_end_destroy(struct sim_switch_end *e)
{
	free(e);
}

void sim_switch_destroy(struct sim_switch *sw)
{
	if (!sw)
		return;
	if (sw->p.ib)
		sim_sm_set_switch(NULL, NULL, 0);
	for (unsigned i = 1; i <= sw->nports; i++)
		while (sw->port[i].qhead) {
			struct qframe *f = sw->port[i].qhead;

			sw->port[i].qhead = f->next;
			sim_link_frame_free(f->buf);
			free(f);
		}
	while (sw->holds) {
		struct hold *h = sw->holds;

		sw->holds = h->next;
		free(h);
	}
	free(sw);
}

uint64_t sim_switch_forward(const struct sim_switch *sw, uint16_t lid)
{
	uint8_t f[8] = { 0, 0, (uint8_t)(lid >> 8), (uint8_t)lid };

	return lid ? ib_route(sw, f, 8) : 0;
}

unsigned sim_switch_ports(const struct sim_switch *sw)
{
	return sw ? sw->nports : 0;
}

void sim_switch_counters(const struct sim_switch *sw, unsigned port,
			 struct sim_switch_counters *out)
{
	const struct sw_port *pt = &sw->port[port];

	*out = pt->c;
	out->stalls = pt->link ? sim_link_gate_held(pt->link, 0) : 0;
}
