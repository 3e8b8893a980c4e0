/* port block (management side): physical link training, the SMA the subnet manager programs,
 * P_Key and GID tables. On Ethernet (RoCEv2) there is no SM: the port is ACTIVE once its link
 * is up, and its GIDs come from its MAC and IPv4 address. */
#include "model/port.h"
#include "model/mcast.h"
#include "model/eq.h"
#include "model/fcov.h"
#include "sim/link.h"
#include "sim/pcap.h"
#include "sim/sm.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PORT_DOWN = 1, PORT_INIT = 2, PORT_ACTIVE = 4 };
enum { PHYS_POLLING = 2, PHYS_DISABLED = 3, PHYS_LINK_UP = 5 };
enum { LL_IB = 1, LL_ETH = 2 };

static const char *const state_names[] = { "?", "DOWN", "INIT", "ARMED", "ACTIVE" };

static void set_state(struct hm_port *p, uint8_t state)
{
	uint32_t data[6] = { p->num, 0, 0, 0, 0, 0 };

	if (p->state == state)
		return;
	p->state = state;
	trace_port_state(p->dev->devno, p->num, state_names[state], p->lid);
	hm_eq_post(p->dev, HCA_EQE_PORT_CHANGE, state, data);
}

static void sma_set_port(void *arg, uint16_t lid, uint16_t sm_lid, uint64_t prefix, uint8_t state)
{
	struct hm_port *p = arg;

	if (p->phys_state != PHYS_LINK_UP)
		return; /* the link went down before the SM's SubnSet arrived */
	if (p->state == PORT_ACTIVE && state == PORT_ACTIVE && lid != p->lid) {
		uint32_t data[6] = { p->num, lid, p->lid, 0, 0, 0 };

		trace_port_lid(p->dev->devno, p->num, p->lid, lid);
		p->lid = lid;
		hm_eq_post(p->dev, HCA_EQE_PORT_INFO, HCA_PORT_INFO_LID, data);
	}
	p->lid = lid;
	p->sm_lid = sm_lid;
	p->subnet_prefix = prefix;
	/* GID 0 = subnet prefix : port GUID (IBA 4.1.1). */
	for (int i = 0; i < 8; i++) {
		p->gids[0][i] = (uint8_t)(prefix >> (56 - 8 * i));
		p->gids[0][8 + i] = (uint8_t)(p->guid >> (56 - 8 * i));
	}
	p->gid_type[0] = 0;
	p->ngids = 1;
	set_state(p, state);
}

static const struct sim_sma_ops sma_ops = { .set_port = sma_set_port };

static void roce_gids(struct hm_port *p)
{
	uint8_t *g = p->gids[0];

	/* RoCEv2 over IPv4 is what the model carries: one GID, the IPv4-mapped address
	 * ::ffff:a.b.c.d of the port (RoCE v2). */
	memset(p->gids, 0, sizeof(p->gids));
	g[10] = 0xff;
	g[11] = 0xff;
	g[12] = (uint8_t)(p->ipv4 >> 24);
	g[13] = (uint8_t)(p->ipv4 >> 16);
	g[14] = (uint8_t)(p->ipv4 >> 8);
	g[15] = (uint8_t)p->ipv4;
	p->gid_type[0] = 2;
	p->ngids = 1;
}

void hm_roce_mac_of(const uint8_t gid[16], uint8_t mac[6])
{
	/* The fabric's address resolution (what ARP answers on a real network): port p of host
	 * h has IPv4 10.p.0.(h+1) and MAC 02:48:53:00:h:p. */
	mac[0] = 0x02;
	mac[1] = 0x48;
	mac[2] = 0x53;
	mac[3] = 0x00;
	mac[4] = (uint8_t)(gid[15] - 1);
	mac[5] = gid[13];
}

void hm_port_init(struct hm_dev *d)
{
	for (unsigned i = 0; i < d->nports; i++) {
		struct hm_port *p = &d->ports[i];

		memset(p, 0, sizeof(*p));
		p->dev = d;
		p->num = (uint8_t)(i + 1);
		p->state = PORT_DOWN;
		p->phys_state = PHYS_DISABLED;
		p->link_layer = d->cfg.link_layer == SIM_LL_ROCE ? LL_ETH : LL_IB;
		p->guid = d->node_guid + 1 + i;
		p->pkeys[0] = 0xffff; /* default partition, full membership */
		p->cable_up = true;   /* until a link says otherwise */
		p->mac[0] = 0x02;
		p->mac[1] = 0x48;
		p->mac[2] = 0x53;
		p->mac[3] = 0x00;
		p->mac[4] = (uint8_t)d->host;
		p->mac[5] = p->num;
		p->ipv4 = (10u << 24) | ((uint32_t)p->num << 16) | (uint32_t)(d->host + 1);
		p->sm_handle = p->link_layer == LL_IB ? sim_sm_register(&sma_ops, p) : -1;
	}
}

struct training {
	struct hm_port *p; /* port */
	uint32_t gen;      /* its train_gen when training began */
};

static void link_trained(void *arg)
{
	struct training *tr = arg;
	struct hm_port *p = tr->p;
	bool current = tr->gen == p->train_gen;

	free(tr);
	if (!current || p->phys_state != PHYS_POLLING || !p->cable_up)
		return; /* stopped, or the link went down, meanwhile */
	p->phys_state = PHYS_LINK_UP;
	if (p->link_layer == LL_ETH) {
		roce_gids(p);
		set_state(p, PORT_ACTIVE);
		return;
	}
	set_state(p, PORT_INIT);
	sim_sm_link_up(p->sm_handle);
}

/* Physical link training: port.training_ns after t, if the link is still up by then. */
static void train(struct hm_port *p, sim_time_t t)
{
	struct training *tr = malloc(sizeof(*tr));

	SIM_ASSERT(tr != NULL, "out of memory");
	*tr = (struct training){ p, ++p->train_gen };
	sim_schedule_owned_at(p->dev->k, t + p->dev->cfg.port_training_ns * SIM_PS_PER_NS,
			      link_trained, tr);
}

/* The link lost or regained its signal. Down: the port falls to DOWN at once (PORT_CHANGE
 * EQE: IBV_EVENT_PORT_ERR), its PHY back to POLLING. Up: it trains again, and the SM (IB)
 * brings it back to ACTIVE (IBV_EVENT_PORT_ACTIVE). A port the driver has not started
 * (DISABLED) only remembers the signal. */
static void port_link_state(void *arg, bool up)
{
	struct hm_port *p = arg;

	p->cable_up = up;
	if (p->phys_state == PHYS_DISABLED)
		return;
	if (!up) {
		if (p->phys_state == PHYS_LINK_UP)
			hm_ctr_inc(p->dev, p->num, HM_CTR_LINK_DOWNED);
		p->phys_state = PHYS_POLLING;
		p->train_gen++; /* a training in progress will not finish */
		p->tx_busy_ps = 0;
		set_state(p, PORT_DOWN);
	} else {
		train(p, sim_now(p->dev->k));
	}
}

void hm_port_start(struct hm_dev *d, sim_time_t t)
{
	for (unsigned i = 0; i < d->nports; i++) {
		struct hm_port *p = &d->ports[i];

		p->phys_state = PHYS_POLLING;
		if (p->cable_up)
			train(p, t);
	}
}

void hm_port_stop(struct hm_dev *d)
{
	for (unsigned i = 0; i < d->nports; i++) {
		d->ports[i].phys_state = PHYS_DISABLED;
		set_state(&d->ports[i], PORT_DOWN);
	}
}

void hm_port_info(const struct hm_port *p, struct hca_port_info *o)
{
	static const uint8_t speed_code[] = { 1, 2, 4, 16, 32, 64, 128 };
	static const uint8_t width_code[] = { 1, 2, 4, 8 };
	const struct sim_config *c = &p->dev->cfg;

	memset(o, 0, sizeof(*o));
	o->state = p->state;
	o->phys_state = p->phys_state;
	o->max_mtu = (uint8_t)sim_config_mtu_enum(c);
	o->active_mtu = o->max_mtu;
	o->link_layer = p->link_layer;
	o->active_width = width_code[c->link_width];
	o->active_speed = speed_code[c->link_speed];
	o->lmc = p->lmc;
	o->lid = p->lid;
	o->sm_lid = p->sm_lid;
	o->sm_sl = 0;
	o->max_vl_num = 4; /* VL0-7 */
	o->subnet_timeout = 18;
	/* CapabilityMask: none of the optional bits (no CM, no SM agent on the HCA: the SM
	 * runs in the fabric model). */
	o->cap_flags = 0;
	o->max_msg_sz = 0x80000000u;
	o->pkey_tbl_len = (uint16_t)c->pkey_table;
	o->gid_tbl_len = HM_GID_TABLE;
	o->port_guid = p->guid;
	o->subnet_prefix = p->subnet_prefix;
}

/* ---- data path: frames to and from the link ---- */

unsigned hm_port_ll(const struct hm_port *p)
{
	return p->link_layer == LL_ETH ? HM_LL_ROCE : HM_LL_IB;
}

struct tx_frame {
	struct sim_link *link; /* where */
	int side;              /* our side */
	size_t len;            /* bytes */
	uint8_t *buf;          /* the frame, a link buffer handed over at its start */
};

static struct sim_objcache tx_frames = SIM_OBJCACHE(sizeof(struct tx_frame));

static void tx_start(void *arg)
{
	struct tx_frame *f = arg;

	sim_link_send_frame(f->link, f->side, f->buf, f->len, true);
	sim_obj_put(&tx_frames, f);
}

sim_time_t hm_port_tx_free(struct hm_dev *d, unsigned port)
{
	return d->ports[port - 1].tx_busy_ps;
}

uint32_t hm_port_tail_bytes(const struct hm_dev *d, unsigned port)
{
	/* after the payload: the ICRC, then the VCRC (IB) or the FCS and the inter-frame gap */
	return hm_port_ll(&d->ports[port - 1]) == HM_LL_ROCE ? HM_ICRC_BYTES + 4 + 12
							   : HM_ICRC_BYTES + HM_VCRC_BYTES;
}

/* The port of d whose address pkt is for, or NULL: its LID on InfiniBand (LMC 0), its IPv4
 * address (the GID's last 4 bytes) on RoCE. Only ports that have an address (a LID from the
 * SM, a GID once the link is up) match. */
static struct hm_port *own_port_for(struct hm_dev *d, const struct hm_pkt *pkt)
{
	for (unsigned i = 0; i < d->nports; i++) {
		struct hm_port *q = &d->ports[i];

		if (q->link_layer == LL_IB ? q->lid && pkt->dlid == q->lid
					   : q->ngids && pkt->has_grh &&
						     !memcmp(pkt->dgid + 12, q->gids[0] + 12, 4))
			return q;
	}
	return NULL;
}

/* Cut-through: the payload's first byte (available at need; 0: already) may leave once the
 * bytes before it have, at mbps: the headers, and on a RoCE wire the preamble and SFD. So the
 * frame built at t starts no earlier than that many bytes before need, on a core edge. */
static sim_time_t cut_through(struct hm_dev *d, const struct hm_port *p,
			      const struct hm_pkt *pkt, size_t len, sim_time_t t, sim_time_t need,
			      uint64_t mbps, bool wire)
{
	uint64_t lead = len - pkt->paylen - HM_ICRC_BYTES -
			(hm_port_ll(p) == HM_LL_ROCE ? 0 : HM_VCRC_BYTES) +
			(wire && hm_port_ll(p) == HM_LL_ROCE ? 8 : 0);
	sim_time_t ahead = sim_link_bytes_ps(mbps, lead);

	return need > ahead && need - ahead > t ? sim_clock_edge(&d->core, need - ahead) : t;
}

/* The frame buf of len bytes in a link buffer: own (buf itself, built there) taken over, or a
 * copy (a multicast frame goes to several places). */
static uint8_t *link_buffer(const uint8_t *buf, size_t len, uint8_t *own)
{
	uint8_t *f = own;

	if (!f) {
		f = sim_link_frame_new(len);
		memcpy(f, buf, len);
	}
	return f;
}

struct lb_frame {
	struct hm_port *to; /* the receiving port */
	bool pending;       /* CRC fields not filled in (nobody saw it) */
	size_t len;         /* bytes */
	uint8_t *buf;       /* the frame, a link buffer handed to the receive path */
};

static void lb_arrive(void *arg)
{
	struct lb_frame *f = arg;

	f->to->dev->wire.rx_frame(f->to->dev, f->to->num, f->buf, f->len, true, true, f->pending);
	free(f);
}

int hm_port_loopback_pcap(struct hm_dev *d, const char *path)
{
	int err = sim_pcap_close(d->lb_pcap);

	d->lb_pcap = NULL;
	free(d->lb_pcap_path);
	d->lb_pcap_path = path ? strdup(path) : NULL;
	SIM_ASSERT(!path || d->lb_pcap_path, "out of memory");
	return err;
}

/* Turn a frame around inside the HCA (docs/loopback.md): it takes the next slot of the
 * device's loopback path (hca.loopback_gbps, frame bytes only) from its build time t, and
 * reaches the receive pipeline of port `to` hca.loopback_ns after its last byte. It never
 * touches a link, so no port counter counts it. Returns the end of its slot. */
static sim_time_t port_loopback(struct hm_dev *d, struct hm_port *p, struct hm_port *to,
				const struct hm_pkt *pkt, const uint8_t *buf, size_t len,
				sim_time_t t, sim_time_t need, uint8_t *own)
{
	uint64_t mbps = d->cfg.loopback_gbps * 1000;
	struct lb_frame *f;
	sim_time_t start, arrive;

	t = cut_through(d, p, pkt, len, t, need, mbps, false);
	start = t > d->lb_busy_ps ? t : d->lb_busy_ps;
	d->lb_busy_ps = start + sim_link_bytes_ps(mbps, len);
	arrive = d->lb_busy_ps + d->cfg.loopback_ns * SIM_PS_PER_NS;
	f = malloc(sizeof(*f));
	SIM_ASSERT(f != NULL, "out of memory");
	f->to = to;
	f->len = len;
	f->buf = link_buffer(buf, len, own);
	f->pending = true;
	if (d->lb_pcap_path && !d->lb_pcap &&
	    sim_pcap_open(&d->lb_pcap, d->lb_pcap_path,
			  hm_port_ll(p) == HM_LL_ROCE ? SIM_PCAP_ETHERNET : SIM_PCAP_UPPER_PDU)) {
		/* The simulation goes on without the capture, as it would without a tap. */
		fprintf(stderr, "hcasim: loopback capture %s cannot be created\n", d->lb_pcap_path);
		hm_port_loopback_pcap(d, NULL);
	}
	if (d->lb_pcap) {
		hm_pkt_seal(hm_port_ll(p), f->buf, len); /* the capture shows the bytes */
		f->pending = false;
		sim_pcap_write(d->lb_pcap, start, f->buf, len);
	}
	sim_schedule_owned_at(d->k, arrive, lb_arrive, f);
	trace_port_loopback(d->devno, p->num, to->num, pkt->opcode, pkt->dqpn, pkt->psn, len, start,
			    arrive);
	return d->lb_busy_ps;
}

static sim_time_t to_wire(struct hm_dev *d, struct hm_port *p, const struct hm_pkt *pkt,
			  const uint8_t *buf, size_t len, sim_time_t t, sim_time_t need, bool mcast,
			  uint8_t *own);

/* A multicast datagram (docs/multicast.md). It goes on the link, whether or not a port at the
 * other end joined (without a switch, that port filters); and, unless the sending QP blocks
 * it, through the loopback path once to each ACTIVE port of this HCA that has QPs of the
 * group, which hands a copy to each of them. Returns the later end of the frame's slots. */
static sim_time_t mcast_send(struct hm_dev *d, struct hm_port *p, const struct hm_pkt *pkt,
			     const uint8_t *buf, size_t len, sim_time_t t, sim_time_t need)
{
	const struct hm_qp *src = hm_qp_peek(d, pkt->deth_sqpn);
	const struct hm_mcg *g = pkt->has_grh ? hm_mcg_find(d, pkt->dgid, pkt->dlid) : NULL;
	uint32_t qpns[HM_MCG_QPS];
	sim_time_t end = t, w;

	for (unsigned i = 0; g && !(src && src->mcast_lb_block) && i < d->nports; i++)
		if (d->ports[i].state == PORT_ACTIVE && hm_mcg_qps_on(d, g, d->ports[i].num, qpns))
			end = port_loopback(d, p, &d->ports[i], pkt, buf, len, t, need, NULL);
	if (!d->links[p->num - 1])
		return end; /* no cable: only this HCA's members get it */
	w = to_wire(d, p, pkt, buf, len, t, need, true, NULL);
	return w > end ? w : end;
}

uint8_t *hm_port_frame_new(struct hm_dev *d, unsigned port, struct hm_pkt *pkt)
{
	size_t off, len = hm_pkt_frame_len(hm_port_ll(&d->ports[port - 1]), pkt, &off);

	SIM_ASSERT(len > 0, "packet opcode 0x%x has no frame", pkt->opcode);
	pkt->frame = sim_link_frame_new(len);
	pkt->payload = pkt->frame + off;
	return pkt->frame + off;
}

void hm_port_frame_free(struct hm_pkt *pkt)
{
	sim_link_frame_free(pkt->frame);
	pkt->frame = NULL;
}

sim_time_t hm_port_send(struct hm_dev *d, unsigned port, struct hm_pkt *pkt, sim_time_t t,
			sim_time_t need)
{
	struct hm_port *p = &d->ports[port - 1], *to;
	uint8_t stack[HM_PKT_MAX_BYTES], *own = pkt->frame, *buf = own ? own : stack;
	size_t len;
	sim_time_t end;

	SIM_ASSERT(port >= 1 && port <= d->nports, "send on port %u", port);
	t = sim_clock_after(&d->core, t, d->cfg.port_cycles);
	len = hm_pkt_build_unsealed(hm_port_ll(p), pkt, buf,
				    own ? sim_link_frame_len(own) : sizeof(stack));
	SIM_ASSERT(len > 0, "packet opcode 0x%x could not be built", pkt->opcode);
	pkt->frame = NULL; /* ours from here on */
	hm_fcov_hit(HM_FCOV_opcode_sent, pkt->opcode);
	if (hm_port_ll(p) == HM_LL_IB && hca_is_mcast_lid(pkt->dlid) && p->state == PORT_ACTIVE) {
		end = mcast_send(d, p, pkt, buf, len, t, need);
		sim_link_frame_free(own); /* each place it went got a copy */
		return end;
	}
	/* A frame for one of our own ports never reaches the wire (docs/loopback.md). */
	to = p->state == PORT_ACTIVE ? own_port_for(d, pkt) : NULL;
	if (to && to->state == PORT_ACTIVE)
		return port_loopback(d, p, to, pkt, buf, len, t, need, own);
	if (to || !d->links[port - 1] || p->state != PORT_ACTIVE) {
		trace_pkt_drop_down(d->devno, port, pkt->opcode, pkt->psn);
		hm_ctr_inc(d, port, HM_CTR_XMIT_DISCARDS);
		sim_link_frame_free(own);
		return t;
	}
	return to_wire(d, p, pkt, buf, len, t, need, false, own);
}

/* The port hands frames to the link in the order they were sent to it; the link serializes
 * them (the same arithmetic gives the slot here, for pacing). Returns the time the frame's
 * last bit leaves. */
static sim_time_t to_wire(struct hm_dev *d, struct hm_port *p, const struct hm_pkt *pkt,
			  const uint8_t *buf, size_t len, sim_time_t t, sim_time_t need, bool mcast,
			  uint8_t *own)
{
	unsigned port = p->num;
	struct tx_frame *f;
	sim_time_t start;

	t = cut_through(d, p, pkt, len, t, need, sim_config_link_mbps(&d->cfg), true);
	start = t > p->tx_busy_ps ? t : p->tx_busy_ps;
	p->tx_busy_ps = start + sim_link_bytes_ps(sim_config_link_mbps(&d->cfg),
						  len + hm_pkt_wire_overhead(hm_port_ll(p)));
	f = sim_obj_get(&tx_frames);
	f->link = d->links[port - 1];
	f->side = d->link_side[port - 1];
	f->len = len;
	f->buf = link_buffer(buf, len, own);
	sim_schedule_owned_at(d->k, start, tx_start, f);
	hm_ctr_xmit(d, port, len, mcast);
	trace_pkt_tx(d->devno, port, pkt->opcode, pkt->dqpn, pkt->psn, len, start);
	return p->tx_busy_ps;
}

/* The link hands the port a frame: up to the receive path. */
static void link_rx(void *arg, const uint8_t *frame, size_t len, bool fcs_ok, bool crc_pending)
{
	struct hm_port *p = arg;

	p->dev->wire.rx_frame(p->dev, p->num, sim_link_frame_keep(frame), len, fcs_ok, false,
			      crc_pending);
}

void hm_port_inject(struct hm_dev *d, unsigned port, const uint8_t *frame, size_t len)
{
	uint8_t *copy = sim_link_frame_new(len);

	trace_pkt_inject(d->devno, port, len);
	memcpy(copy, frame, len);
	d->wire.rx_frame(d, port, copy, len, true, false, false);
}

void hm_port_attach(struct hm_dev *d, unsigned port, struct sim_link *l, int side)
{
	d->links[port - 1] = l;
	d->link_side[port - 1] = side;
	sim_link_attach(l, side, link_rx, &d->ports[port - 1]);
	sim_link_set_state_fn(l, side, port_link_state);
	d->ports[port - 1].cable_up = sim_link_is_up(l);
}
