/* The simulated system: configuration, boot (kernel, subnet manager, one HCA per host) and
 * the libhcasim control API of sim/hcasim.h. */
#include "model/fcov.h"
#include "model/port.h"
#include "model/waves.h"
#include "sim/devthread.h"
#include "sim/env.h"
#include "sim/error.h"
#include "sim/fabric.h"
#include "sim/hcasim.h"
#include "sim/link.h"
#include "sim/sm.h"
#include "sim/switch.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DEVS 16

static struct {
	bool cfg_ready;          /* defaults and HCASIM_CONFIG applied */
	struct sim_config cfg;   /* configuration for the next boot */
	bool booted;             /* system exists */
	struct sim_kernel *k;    /* its kernel */
	struct hm_dev *devs[MAX_DEVS];
	int ndevs;
	struct sim_link *links[MAX_DEVS * HM_MAX_PORTS]; /* host 2k port p <-> host 2k+1 port p */
	bool elsewhere[MAX_DEVS * HM_MAX_PORTS]; /* in a fabric: neither end is held here */
	int nlinks;
	struct sim_switch *sw;   /* sim.topology=switch: link n is switch port n + 1; NULL when
				  * another process of the fabric holds it (host 0's) */
	struct sim_switch_end *ends[MAX_DEVS * HM_MAX_PORTS]; /* the host ends held here */
	unsigned swports;        /* sim.topology=switch: the switch's ports, wherever it is */
	struct sim_fabric fab;   /* HCASIM_FABRIC: the hosts held here (all without one) */
	struct mailbox {	 /* each host's program's host messages, oldest first */
		struct hostmsg *head, **tail;
	} mbox[MAX_DEVS];
} sys;

/* A host message on its way or received, not yet taken (hcasim_host_recv). */
struct hostmsg {
	struct hostmsg *next;
	int from, to;	/* the sending and the receiving host */
	size_t len;
	uint8_t data[];
};

/* Name a frame for targeted faults: its BTH's destination QP, PSN and opcode, and whether it
 * opens a message (a FIRST or ONLY packet, a READ or atomic request, an acknowledgement). */
static bool classify(enum hm_link_layer ll, const uint8_t *frame, size_t len, uint32_t *qpn,
		     uint32_t *psn, uint8_t *opcode, bool *first)
{
	struct hm_pkt p;
	uint8_t op5;

	if (hm_pkt_parse_crc(ll, frame, len, false, &p)) /* the headers only; may be unsealed */
		return false;
	*qpn = p.dqpn;
	*psn = p.psn;
	*opcode = p.opcode;
	op5 = p.opcode & 0x1f;
	*first = op5 == HM_OP_SEND_FIRST || op5 == HM_OP_SEND_ONLY || op5 == HM_OP_SEND_ONLY_IMM ||
		 op5 == HM_OP_WRITE_FIRST || op5 == HM_OP_WRITE_ONLY ||
		 op5 == HM_OP_WRITE_ONLY_IMM || op5 == HM_OP_SEND_ONLY_INV ||
		 (op5 >= HM_OP_READ_REQUEST && op5 <= HM_OP_FETCH_ADD &&
		  op5 != HM_OP_READ_RESPONSE_MIDDLE && op5 != HM_OP_READ_RESPONSE_LAST);
	return true;
}

static bool classify_ib(const uint8_t *frame, size_t len, uint32_t *qpn, uint32_t *psn,
			uint8_t *opcode, bool *first)
{
	return classify(HM_LL_IB, frame, len, qpn, psn, opcode, first);
}

static bool classify_roce(const uint8_t *frame, size_t len, uint32_t *qpn, uint32_t *psn,
			  uint8_t *opcode, bool *first)
{
	return classify(HM_LL_ROCE, frame, len, qpn, psn, opcode, first);
}

/* A link's sealer: the CRC fields of a frame the port left unsealed (model/pkt.h). */
static void seal_ib(uint8_t *frame, size_t len)
{
	hm_pkt_seal(HM_LL_IB, frame, len);
}

static void seal_roce(uint8_t *frame, size_t len)
{
	hm_pkt_seal(HM_LL_ROCE, frame, len);
}

static struct hostmsg *hostmsg_new(int from, int to, const void *msg, size_t len)
{
	struct hostmsg *m = malloc(sizeof(*m) + len);

	SIM_ASSERT(m != NULL, "out of memory");
	*m = (struct hostmsg){ .from = from, .to = to, .len = len };
	if (len)
		memcpy(m->data, msg, len);
	return m;
}

/* A host message arrives: into its host's mailbox, oldest first. */
static void mbox_put(void *arg)
{
	struct hostmsg *m = arg;
	struct mailbox *mb = &sys.mbox[m->to];

	if (!mb->head)
		mb->tail = &mb->head;
	*mb->tail = m;
	mb->tail = &m->next;
}

/* Host messages between processes ride the pair's cable as control messages (sim/link.h) of
 * this kind: the tag, then the message's bytes (an empty message is a tag alone). */
#define HOSTMSG_TAG 0x48
#define HOSTMSG_MAX 4096u
_Static_assert(HOSTMSG_MAX + 1 <= SIM_LINK_CTL_MAX, "a host message and its tag are a control "
	       "message");

/* One from the pair's host in another process, over the link's channel: arg is the mailbox. */
static void mbox_rx(void *arg, const uint8_t *msg, size_t len)
{
	int to = (int)((struct mailbox *)arg - sys.mbox);

	if (!len || msg[0] != HOSTMSG_TAG) {
		fprintf(stderr, "hcasim: host %d: a control message of %zu bytes on its pair's cable "
			"that is no host message (tag 0x%02x): dropped\n", to, len, len ? msg[0] : 0);
		return;
	}
	mbox_put(hostmsg_new(to ^ 1, to, msg + 1, len - 1));
}

/* Hosts are joined in pairs, back to back, port to port: host 0 with host 1, 2 with 3, ... */
/* Link n (hosts h and h + 1, port p): its ends held here attach their ports; with one end in
 * another process of the fabric, it goes over its channel. */
static int link_ends(struct sim_link *l, int h, unsigned p)
{
	bool here[2] = { sim_fabric_holds(&sys.fab, (unsigned)h),
			 sim_fabric_holds(&sys.fab, (unsigned)h + 1) };

	for (int s = 0; s < 2; s++) {
		if (!here[s])
			continue;
		hm_port_attach(sys.devs[h + s], p, l, s);
		if (p == 1 && !here[!s]) /* the pair's host messages between processes */
			sim_link_set_ctl(l, s, mbox_rx, &sys.mbox[h + s]);
	}
	sys.elsewhere[sys.nlinks - 1] = !here[0] && !here[1];
	if (here[0] == here[1])
		return 0; /* both here (or both elsewhere: the link is idle in this process) */
	char name[32];

	snprintf(name, sizeof(name), "link%d.%u", h / 2, p);
	return sim_fabric_link(&sys.fab, l, name, here[0] ? 0 : 1, false,
			       sys.cfg.link_latency_ns * SIM_PS_PER_NS, sys.cfg.join_timeout_ms);
}

/* A link of the system, with the classifier and sealer of its link layer. */
static struct sim_link *new_link(const char *name)
{
	const struct sim_config *c = &sys.cfg;
	enum hm_link_layer ll = c->link_layer == SIM_LL_ROCE ? HM_LL_ROCE : HM_LL_IB;
	struct sim_link *l;

	l = sim_link_create(name, ll == HM_LL_ROCE ? SIM_LINK_ETH : SIM_LINK_IB,
			    sim_config_link_mbps(c), c->link_latency_ns * SIM_PS_PER_NS,
			    hm_pkt_wire_overhead(ll));
	SIM_ASSERT(l != NULL, "link creation failed");
	sim_link_set_classifier(l, ll == HM_LL_ROCE ? classify_roce : classify_ib);
	sim_link_set_sealer(l, ll == HM_LL_ROCE ? seal_roce : seal_ib);
	return l;
}

_Static_assert(SIM_SWITCH_MAX_FRAME >= HM_PKT_MAX_BYTES, "the switch's largest frame");
_Static_assert(SIM_SWITCH_MAX_PORTS >= 16 * HM_MAX_PORTS, "a switch port per host port");

/* This process's SM asks the switch's, in another process, over the cable of port handle. */
static void sm_uplink(int handle, const uint8_t *msg, size_t len)
{
	for (unsigned n = 0; n < sys.swports; n++) {
		struct hm_dev *d = sys.devs[n / sys.cfg.ports];

		if (sys.ends[n] && d->ports[n % sys.cfg.ports].sm_handle == handle)
			sim_link_ctl_send(sys.links[n], 0, msg, len);
	}
}

/* Switch port n's cable to host h port p: the host's end where the host is held, the switch's
 * where the switch is; a cable between processes goes over its channel DIR/sw<n>.chan. */
static int switch_cable(int h, unsigned p, unsigned n, bool sw_here,
			const struct sim_switch_params *sp)
{
	struct hm_dev *d = sys.devs[h];
	bool here = sim_fabric_holds(&sys.fab, (unsigned)h);
	struct sim_link *l;
	char name[32];

	snprintf(name, sizeof(name), "sw.port%u", n);
	l = sys.links[sys.nlinks++] = new_link(name);
	if (here) {
		hm_port_attach(d, p, l, 0);
		sys.ends[n - 1] = sim_switch_end_create(l, n, sp);
	}
	if (sw_here)
		sim_switch_attach(sys.sw, n, l);
	if (d->ports[p - 1].sm_handle >= 0)
		sim_sm_cable(d->ports[p - 1].sm_handle, n);
	sys.elsewhere[n - 1] = !here && !sw_here;
	if (here == sw_here)
		return 0;
	snprintf(name, sizeof(name), "sw%u", n);
	/* The switch's process creates every cable's channel and the hosts' attach to it: each
	 * host joins at the switch's time (docs/fabric.md#a-switch-across-processes). */
	return sim_fabric_link(&sys.fab, l, name, here ? 0 : 1, here,
			       sys.cfg.link_latency_ns * SIM_PS_PER_NS, sys.cfg.join_timeout_ms);
}

/* sim.topology=switch (docs/blocks/switch.md): every host port cabled to a port of one switch,
 * host-major: host h port p on switch port h * hca.ports + p, over link h * hca.ports + p - 1
 * (side 0 the host, side 1 the switch). In a fabric the switch is in the process holding
 * host 0 (docs/fabric.md#a-switch-across-processes). */
static int make_switch(void)
{
	const struct sim_config *c = &sys.cfg;
	struct sim_switch_params sp = {
		.ib = c->link_layer != SIM_LL_ROCE,
		.latency_ps = c->switch_latency_ns * SIM_PS_PER_NS,
		.queue_bytes = c->switch_queue_bytes,
		.credits = (uint32_t)c->switch_ib_credits,
		.xoff_bytes = c->switch_pfc_xoff_bytes,
		.xon_bytes = c->switch_pfc_xon_bytes,
		.link_latency_ps = c->link_latency_ns * SIM_PS_PER_NS,
	};

	bool sw_here = sim_fabric_holds(&sys.fab, 0);
	unsigned n = 0;
	int rc = 0;

	sys.swports = (unsigned)sys.ndevs * (unsigned)c->ports;
	if (sw_here)
		sys.sw = sim_switch_create(sys.swports, &sp);
	else if (sp.ib)
		sim_sm_set_uplink(sm_uplink);
	for (int h = 0; h < sys.ndevs && !rc; h++)
		for (unsigned p = 1; p <= c->ports && !rc; p++)
			rc = switch_cable(h, p, ++n, sw_here, &sp);
	return rc;
}

static int make_links(void)
{
	const struct sim_config *c = &sys.cfg;
	int rc;

	if (c->topology == SIM_TOPO_SWITCH)
		return make_switch();
	for (int h = 0; h + 1 < sys.ndevs; h += 2) {
		for (unsigned p = 1; p <= c->ports; p++) {
			char name[32];
			struct sim_link *l;

			snprintf(name, sizeof(name), "link%d.%u", h / 2, p);
			l = new_link(name);
			for (int s = 0; s < 2; s++)
				sim_link_set_faults(l, s,
						    &(struct sim_link_faults){
							    (uint32_t)c->fault_drop_ppm,
							    (uint32_t)c->fault_corrupt_ppm,
							    (uint32_t)c->fault_dup_ppm,
							    (uint32_t)c->fault_reorder_ppm,
							    (uint32_t)c->fault_delay_ppm,
							    (uint32_t)c->fault_drop_every,
							    c->fault_delay_ns * SIM_PS_PER_NS },
						    c->seed);
			sys.links[sys.nlinks++] = l;
			if ((rc = link_ends(l, h, p)))
				return rc;
		}
	}
	return 0;
}

/* sim.topology=switch, checked at boot before anything is built: each error names its key. */
static int switch_check(const struct sim_config *c)
{
	static const char *const faults[] = { "fault.drop_ppm", "fault.corrupt_ppm",
					      "fault.dup_ppm", "fault.reorder_ppm",
					      "fault.delay_ppm", "fault.drop_every" };
	const uint64_t vals[] = { c->fault_drop_ppm, c->fault_corrupt_ppm, c->fault_dup_ppm,
				  c->fault_reorder_ppm, c->fault_delay_ppm, c->fault_drop_every };
	uint32_t min = (SIM_SWITCH_MAX_FRAME + SIM_SWITCH_BLOCK - 1) / SIM_SWITCH_BLOCK;

	if (c->topology != SIM_TOPO_SWITCH)
		return 0;
	if (c->switch_ib_credits && c->switch_ib_credits < min)
		return sim_error(-EINVAL, "config key 'switch.ib_credits': %llu blocks cannot hold "
				 "one frame of %d bytes (0, or %u or more)",
				 (unsigned long long)c->switch_ib_credits, SIM_SWITCH_MAX_FRAME, min);
	if (c->switch_pfc_xoff_bytes && c->switch_pfc_xon_bytes >= c->switch_pfc_xoff_bytes)
		return sim_error(-EINVAL, "config key 'switch.pfc_xon_bytes': %llu is not below "
				 "switch.pfc_xoff_bytes (%llu)",
				 (unsigned long long)c->switch_pfc_xon_bytes,
				 (unsigned long long)c->switch_pfc_xoff_bytes);
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		if (vals[i])
			return sim_error(-EOPNOTSUPP, "config key '%s': no link faults with "
					 "sim.topology=switch yet", faults[i]);
	if (*c->fault_link_down)
		return sim_error(-EOPNOTSUPP, "config key 'fault.link_down': no link down windows "
				 "with sim.topology=switch yet");
	return 0;
}

/* Faults and link down/up with the switch: not yet (a frame lost on the wire would keep the
 * credits it took). */
static int switch_refuses(const char *fn)
{
	return sys.sw ? sim_error(-EOPNOTSUPP, "%s: not with sim.topology=switch yet", fn) : 0;
}

int hcasim_switch_ports(void)
{
	return (int)sys.swports;
}

int hcasim_switch_port_counters(int port, struct hcasim_switch_port_counters *out)
{
	struct sim_switch_counters c = { 0 };

	if (port < 1 || port > (int)sys.swports || !out)
		return sim_error(-EINVAL, "hcasim_switch_port_counters: no switch port %d (%u ports)",
				 port, sys.swports);
	if (!sys.sw && !sys.ends[port - 1])
		return sim_error(-ENODEV, "hcasim_switch_port_counters: switch port %d: the switch "
				 "is in host 0's process, and this one does not hold the port's "
				 "host", port);
	if (sys.sw)
		sim_switch_counters(sys.sw, (unsigned)port, &c);
	else /* a host's process: what its transmitter counts */
		c.stalls = sim_link_gate_held(sys.links[port - 1], 0);
	*out = (struct hcasim_switch_port_counters){ c.rx_pkts,	    c.rx_bytes,	   c.tx_pkts,
						     c.tx_bytes,    c.rx_discards, c.tx_discards,
						     c.flooded,	    c.xoff,	   c.stalls,
						     c.credit_blocks, c.queue_max };
	return 0;
}

int hcasim_switch_forward(unsigned lid, uint64_t *ports)
{
	if (!sys.sw || sys.cfg.link_layer == SIM_LL_ROCE || !ports)
		return sim_error(!sys.swports || sys.cfg.link_layer == SIM_LL_ROCE || !ports
					 ? -EINVAL : -ENODEV,
				 "hcasim_switch_forward: no InfiniBand switch in this process "
				 "(sim.topology=switch, hca.link_layer=ib; in a fabric, host 0's), "
				 "or ports is NULL");
	if (lid == 0 || lid > 0xfffe)
		return sim_error(-EINVAL, "hcasim_switch_forward: lid 0x%x (0x0001..0xfffe)", lid);
	*ports = sim_switch_forward(sys.sw, (uint16_t)lid);
	return 0;
}

int hcasim_sm_set_route(unsigned lid, int port)
{
	int n = (int)sim_switch_ports(sys.sw);

	if (!sys.sw || sys.cfg.link_layer == SIM_LL_ROCE)
		return sim_error(-ENODEV, "hcasim_sm_set_route: no InfiniBand switch "
				 "(sim.topology=switch, hca.link_layer=ib)");
	if (lid == 0 || lid >= 0xc000)
		return sim_error(-EINVAL, "hcasim_sm_set_route: lid 0x%x (unicast 0x0001..0xbfff)",
				 lid);
	if ((port < 1 || port > n) && port != 0)
		return sim_error(-EINVAL, "hcasim_sm_set_route: no switch port %d (1..%d, or 0 for "
				 "none)", port, n);
	return sim_sm_set_route((uint16_t)lid, port ? (unsigned)port : SIM_SM_LFT_NONE);
}

int hcasim_link_faults(int link, int side, const struct hcasim_faults *f)
{
	struct sim_link_faults lf;

	if (!sys.booted || link < 0 || link >= sys.nlinks)
		return sim_error(-EINVAL, "hcasim_link_faults: no link %d", link);
	if (switch_refuses("hcasim_link_faults"))
		return -EOPNOTSUPP;
	if (side < -1 || side > 1 || !f)
		return sim_error(-EINVAL, "hcasim_link_faults: side %d (0, 1 or -1 for both)", side);
	if (f->drop_ppm > 1000000 || f->corrupt_ppm > 1000000 || f->dup_ppm > 1000000 ||
	    f->reorder_ppm > 1000000 || f->delay_ppm > 1000000)
		return sim_error(-EINVAL, "hcasim_link_faults: a probability above 1000000 ppm");
	lf = (struct sim_link_faults){ f->drop_ppm,    f->corrupt_ppm, f->dup_ppm,
				       f->reorder_ppm, f->delay_ppm,   f->drop_every,
				       f->delay_ps };
	for (int s = 0; s < 2; s++)
		if (side < 0 || side == s)
			sim_link_set_faults(sys.links[link], s, &lf, sys.cfg.seed);
	return 0;
}

int hcasim_link_fault_target(int link, int side, const struct hcasim_fault_target *t)
{
	struct sim_link_target lt;

	if (!sys.booted || link < 0 || link >= sys.nlinks)
		return sim_error(-EINVAL, "hcasim_link_fault_target: no link %d", link);
	if (switch_refuses("hcasim_link_fault_target"))
		return -EOPNOTSUPP;
	if (side < -1 || side > 1)
		return sim_error(-EINVAL, "hcasim_link_fault_target: side %d (0, 1 or -1 for both)",
				 side);
	if (!t) {
		for (int s = 0; s < 2; s++)
			if (side < 0 || side == s)
				sim_link_clear_targets(sys.links[link], s);
		return 0;
	}
	if (t->qpn < -1 || t->qpn > 0xffffff)
		return sim_error(-EINVAL, "hcasim_link_fault_target: qpn %lld (-1 or 0..0xffffff)",
				 (long long)t->qpn);
	if (t->psn < -1 || t->psn > 0xffffff)
		return sim_error(-EINVAL, "hcasim_link_fault_target: psn %lld (-1 or 0..0xffffff)",
				 (long long)t->psn);
	if (t->opcode < -1 || t->opcode > 0xff)
		return sim_error(-EINVAL, "hcasim_link_fault_target: opcode %lld (-1 or 0..0xff)",
				 (long long)t->opcode);
	if (t->fault < HCASIM_FAULT_DROP || t->fault > HCASIM_FAULT_DELAY)
		return sim_error(-EINVAL, "hcasim_link_fault_target: fault %d (drop, corrupt, "
				 "duplicate or delay)", (int)t->fault);
	if (t->delay_ps && t->fault != HCASIM_FAULT_DELAY)
		return sim_error(-EINVAL, "hcasim_link_fault_target: delay_ps %llu given for a "
				 "fault other than HCASIM_FAULT_DELAY",
				 (unsigned long long)t->delay_ps);
	for (int s = 0; s < 2; s++)
		if ((side < 0 || side == s) &&
		    sim_link_targets(sys.links[link], s) == SIM_LINK_MAX_TARGETS)
			return sim_error(-ENOSPC, "hcasim_link_fault_target: link %d side %d already "
					 "has %d targets", link, s, SIM_LINK_MAX_TARGETS);
	if (t->nth > 0x1000000)
		return sim_error(-EINVAL, "hcasim_link_fault_target: nth %u (0 or 1..2^24)", t->nth);
	lt = (struct sim_link_target){ t->qpn,	   t->psn,	 t->opcode,
				       (enum sim_link_fault_kind)t->fault,
				       t->count,   t->delay_ps, t->nth };
	for (int s = 0; s < 2; s++)
		if (side < 0 || side == s)
			sim_link_add_target(sys.links[link], s, &lt);
	return 0;
}

int hcasim_link_set(int link, int up)
{
	if (!sys.booted || link < 0 || link >= sys.nlinks)
		return sim_error(-EINVAL, "hcasim_link_set: no link %d", link);
	if (switch_refuses("hcasim_link_set"))
		return -EOPNOTSUPP;
	if (up != 0 && up != 1)
		return sim_error(-EINVAL, "hcasim_link_set: up %d (0 or 1)", up);
	sim_link_set_up(sys.links[link], up);
	return 0;
}

int hcasim_link_is_up(int link)
{
	if (!sys.booted || link < 0 || link >= sys.nlinks)
		return sim_error(-EINVAL, "hcasim_link_is_up: no link %d", link);
	return sim_link_is_up(sys.links[link]);
}

struct link_change {
	int link; /* index in sys.links */
	bool up;  /* what happens */
};

static void link_change(void *arg)
{
	const struct link_change *c = arg;

	if (c->link < sys.nlinks)
		sim_link_set_up(sys.links[c->link], c->up);
	free(arg);
}

static void schedule_link_change(int link, bool up, uint64_t at_ps)
{
	struct link_change *c = malloc(sizeof(*c));

	SIM_ASSERT(c != NULL, "out of memory");
	*c = (struct link_change){ link, up };
	sim_schedule_background_at(sys.k, at_ps, link_change, c);
}

int hcasim_link_down_window(int link, uint64_t start_ps, uint64_t duration_ps)
{
	if (!sys.booted || link < 0 || link >= sys.nlinks)
		return sim_error(-EINVAL, "hcasim_link_down_window: no link %d", link);
	if (switch_refuses("hcasim_link_down_window"))
		return -EOPNOTSUPP;
	if (start_ps < sim_now(sys.k))
		return sim_error(-EINVAL, "hcasim_link_down_window: start_ps %llu is in the past "
				 "(now %llu)", (unsigned long long)start_ps,
				 (unsigned long long)sim_now(sys.k));
	if (!duration_ps || start_ps + duration_ps < start_ps)
		return sim_error(-EINVAL, "hcasim_link_down_window: duration_ps %llu (1 or more, "
				 "and the end must fit in 64 bits)", (unsigned long long)duration_ps);
	schedule_link_change(link, false, start_ps);
	schedule_link_change(link, true, start_ps + duration_ps);
	return 0;
}

/* fault.link_down: "N@START_NS+LEN_NS" windows separated by commas. Checked whole before any
 * is scheduled. */
static int link_down_windows(const char *spec, int nlinks, bool apply)
{
	const char *p = spec;

	while (*p) {
		char *end;
		unsigned long long n, start, len;

		n = strtoull(p, &end, 10);
		if (end == p || *end != '@')
			goto bad;
		p = end + 1;
		start = strtoull(p, &end, 10);
		if (end == p || *end != '+')
			goto bad;
		p = end + 1;
		len = strtoull(p, &end, 10);
		if (end == p || (*end && *end != ','))
			goto bad;
		if (n >= (unsigned long long)nlinks)
			return sim_error(-EINVAL, "fault.link_down: no link %llu (%d links)", n,
					 nlinks);
		if (!len || start > UINT64_MAX / SIM_PS_PER_NS / 2 ||
		    len > UINT64_MAX / SIM_PS_PER_NS / 2)
			return sim_error(-EINVAL, "fault.link_down: window %llu@%llu+%llu: length 0 "
					 "or out of range", n, start, len);
		if (apply) {
			schedule_link_change((int)n, false, start * SIM_PS_PER_NS);
			schedule_link_change((int)n, true, (start + len) * SIM_PS_PER_NS);
		}
		p = *end ? end + 1 : end;
	}
	return 0;
bad:
	return sim_error(-EINVAL, "fault.link_down: '%s': expected LINK@START_NS+LENGTH_NS[,...] at "
			 "'%s'", spec, p);
}

int hcasim_inject_frame(int dev, int port, const void *frame, size_t len)
{
	if (!sys.booted || dev < 0 || dev >= sys.ndevs)
		return sim_error(-EINVAL, "hcasim_inject_frame: no device %d", dev);
	if (port < 1 || port > (int)sys.devs[dev]->nports)
		return sim_error(-EINVAL, "hcasim_inject_frame: device %d has no port %d", dev,
				 port);
	if (!frame || !len)
		return sim_error(-EINVAL, "hcasim_inject_frame: %s",
				 !frame ? "frame is NULL" : "len is 0");
	if (len > HCASIM_FRAME_MAX)
		return sim_error(-EMSGSIZE, "hcasim_inject_frame: len %zu (at most %d bytes)", len,
				 HCASIM_FRAME_MAX);
	hm_port_inject(sys.devs[dev], (unsigned)port, frame, len);
	return 0;
}

int hcasim_sm_set_lid(int dev, int port, unsigned lid)
{
	int rc;

	if (!sys.booted || dev < 0 || dev >= sys.ndevs)
		return sim_error(-EINVAL, "hcasim_sm_set_lid: no device %d", dev);
	if (port < 1 || port > (int)sys.devs[dev]->nports || sys.devs[dev]->ports[port - 1].sm_handle < 0)
		return sim_error(-EINVAL, "hcasim_sm_set_lid: device %d has no InfiniBand port %d",
				 dev, port);
	if (lid > 0xffff)
		return sim_error(-EINVAL, "hcasim_sm_set_lid: lid 0x%x (unicast 0x0001..0xbfff)", lid);
	rc = sim_sm_set_lid(sys.devs[dev]->ports[port - 1].sm_handle, (uint16_t)lid);
	if (rc == -EINVAL)
		return sim_error(rc, "hcasim_sm_set_lid: lid 0x%x (unicast 0x0001..0xbfff)", lid);
	if (rc == -EADDRINUSE)
		return sim_error(rc, "hcasim_sm_set_lid: lid 0x%x is another port's", lid);
	return rc ? sim_error(rc, "hcasim_sm_set_lid: the SM refused") : 0;
}

int hcasim_dma_read_error(int dev, enum hcasim_dma_client client, uint32_t num, uint32_t count)
{
	struct hm_dma_inject *free_slot = NULL;

	if (!sys.booted || dev < 0 || dev >= sys.ndevs)
		return sim_error(-EINVAL, "hcasim_dma_read_error: no device %d", dev);
	if ((unsigned)client > HCASIM_DMA_SRQ_WQE)
		return sim_error(-EINVAL, "hcasim_dma_read_error: client %d (SQ_WQE, RQ_WQE or "
				 "SRQ_WQE)", (int)client);
	if (num > 0xffffff)
		return sim_error(-EINVAL, "hcasim_dma_read_error: num 0x%x (a 24-bit QPN or SRQN)",
				 num);
	if (!count)
		return sim_error(-EINVAL, "hcasim_dma_read_error: count 0 (1 or more reads)");
	for (int i = 0; i < HM_DMA_INJECT_MAX; i++)
		if (!sys.devs[dev]->dp->dma_inject[i].left) {
			free_slot = &sys.devs[dev]->dp->dma_inject[i];
			break;
		}
	if (!free_slot)
		return sim_error(-ENOSPC, "hcasim_dma_read_error: device %d already has %d "
				 "injections pending", dev, HM_DMA_INJECT_MAX);
	*free_slot = (struct hm_dma_inject){ (uint8_t)client, num, count };
	return 0;
}

int hcasim_link_fault_counts(int link, int side, uint64_t out[5])
{
	if (!sys.booted || link < 0 || link >= sys.nlinks || side < 0 || side > 1 || !out)
		return sim_error(-EINVAL, "hcasim_link_fault_counts: no link %d side %d", link, side);
	sim_link_fault_counts(sys.links[link], side, out);
	return 0;
}

int hcasim_pcap(const char *prefix)
{
	char path[SIM_ENV_PATH_MAX + 1];
	int rc;

	if (!sys.booted)
		return sim_error(-EINVAL, "hcasim_pcap: the system is not booted");
	/* room for the longest suffix, ".hcaNN.loopback.pcap": a name is never cut short */
	if (prefix && sim_env_path_len("hcasim_pcap: the prefix", prefix, SIM_ENV_PATH_MAX - 32))
		return -ENAMETOOLONG;
	for (int i = 0; i < sys.nlinks; i++) {
		if (sys.elsewhere[i])
			continue; /* its processes capture it */
		if (prefix && *prefix)
			snprintf(path, sizeof(path), "%s.link%d.pcap", prefix, i);
		rc = sim_link_pcap(sys.links[i], prefix && *prefix ? path : NULL);
		if (rc && prefix && *prefix)
			return sim_error(rc, "hcasim_pcap: cannot create '%s': %s", path, strerror(-rc));
		if (rc)
			return sim_error(rc, "hcasim_pcap: closing the capture of link %d: %s", i,
					 strerror(-rc));
	}
	/* Each HCA's internal loopback (docs/loopback.md), created at its first frame. */
	for (int i = 0; i < sys.ndevs; i++) {
		if (prefix && *prefix)
			snprintf(path, sizeof(path), "%s.hca%d.loopback.pcap", prefix,
				 sys.devs[i]->host);
		rc = hm_port_loopback_pcap(sys.devs[i], prefix && *prefix ? path : NULL);
		if (rc)
			return sim_error(rc, "hcasim_pcap: closing the loopback capture of hcasim%d",
					 i);
	}
	return 0;
}

static int cfg_prepare(void)
{
	const char *path;
	int rc;

	if (sys.cfg_ready)
		return 0;
	sim_config_defaults(&sys.cfg);
	path = sim_env("HCASIM_CONFIG");
	if (path) {
		rc = sim_env_path_len("HCASIM_CONFIG", path, SIM_ENV_PATH_MAX);
		if (rc)
			return rc;
		rc = sim_config_load(&sys.cfg, path);
		if (rc)
			return sim_error_prefix(rc, "HCASIM_CONFIG");
	}
	sys.cfg_ready = true;
	return 0;
}

int hcasim_config_set(const char *key, const char *value)
{
	int rc = cfg_prepare();

	if (rc)
		return rc;
	if (sys.booted)
		return sim_error(-EBUSY, "config key '%s': the system is already booted "
				 "(hcasim_shutdown() first)", key ? key : "(null)");
	return sim_config_set(&sys.cfg, key, value);
}

int hcasim_config_get(const char *key, char *buf, size_t len)
{
	int rc = cfg_prepare();

	return rc ? rc : sim_config_get(&sys.cfg, key, buf, len);
}

int hcasim_config_load(const char *path)
{
	int rc = cfg_prepare();

	if (rc)
		return rc;
	if (sys.booted)
		return sim_error(-EBUSY, "config file '%s': the system is already booted",
				 path ? path : "(null)");
	return sim_config_load(&sys.cfg, path);
}

static void (*time_hook)(void *, uint64_t, uint64_t);
static void *time_hook_arg;

static void time_advance(void *arg, sim_time_t from, sim_time_t to)
{
	(void)arg;
	if (time_hook)
		time_hook(time_hook_arg, from, to);
}

/* The kernel calls time_advance only while there is a hook: not once an event otherwise. */
static void time_hook_apply(void)
{
	if (sys.k)
		sim_kernel_set_advance_hook(sys.k, time_hook ? time_advance : NULL, NULL);
}

void hcasim_time_hook(void (*fn)(void *arg, uint64_t from_ps, uint64_t to_ps), void *arg)
{
	time_hook = fn;
	time_hook_arg = arg;
	time_hook_apply();
}

/* HCASIM_IMPL = "block=mode[,block=mode...]" (block a name of model/twin.def or all; mode
 * model, rtl, lockstep or checked) over the impl.* settings. Checked whole before any is applied; the
 * message names the bad item (an empty one too). */
static int impl_from_env(const char *spec)
{
	unsigned want[HM_TWIN_COUNT];
	char buf[256], names[128] = "", *rest = buf, *tok;

	if (!spec)
		return 0;
	if (strlen(spec) >= sizeof(buf))
		return sim_error(-EINVAL, "HCASIM_IMPL: longer than %zu characters", sizeof(buf) - 1);
	hm_twin_modes(&sys.cfg, want);
	strcpy(buf, spec);
	while ((tok = strsep(&rest, ","))) {
		char *eq = strchr(tok, '=');
		int b = -1, m = -1;

		if (eq) {
			*eq = 0;
			b = strcmp(tok, "all") ? hm_twin_find(tok) : HM_TWIN_COUNT;
			m = hm_impl_find(eq + 1);
			*eq = '=';
		}
		if (b < 0 || m < 0) {
			for (int i = 0; i < HM_TWIN_COUNT; i++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s, ",
					 hm_twin_name((enum hm_twin)i));
			names[strlen(names) - 2] = 0;
			return sim_error(-EINVAL, "HCASIM_IMPL: item '%s' of '%s': expected BLOCK=MODE "
					 "with BLOCK %s or all and MODE model, rtl, lockstep or checked",
					 tok, spec, names);
		}
		for (int i = 0; i < HM_TWIN_COUNT; i++)
			if (b == HM_TWIN_COUNT || b == i)
				want[i] = (unsigned)m;
	}
	for (int i = 0; i < HM_TWIN_COUNT; i++)
		*hm_twin_impl(&sys.cfg, (enum hm_twin)i) = want[i];
	return 0;
}

/* ---- waves (docs/waves.md) ---- */

static char *waves_pending; /* hcasim_waves() before boot: the path for the next boot */
static unsigned waves_boots; /* boots that wrote WAVES=1's default dump in this process */

static int waves_begin(const char *path)
{
	int rc = sim_waves_open(path);

	if (rc)
		return rc;
	rc = hm_waves_start(sys.devs, sys.ndevs);
	if (rc) {
		sim_waves_close();
		return rc;
	}
	{
		/* the RTL blocks' FSTs go next to the VCD (docs/rtl.md) */
		char dir[4096];
		const char *slash = strrchr(path, '/');

		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else if (slash == path)
			snprintf(dir, sizeof(dir), "/");
		else
			snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
		for (int i = 0; i < sys.ndevs; i++)
			hm_twins_waves(sys.devs[i], dir);
	}
	return 0;
}

static int waves_end(void)
{
	if (!sim_waves_on)
		return 0;
	hm_waves_stop();
	return sim_waves_close();
}

/* mkdir -p dir; -errno naming what (the variable) and the directory. */
static int make_dirs(const char *what, const char *dir)
{
	char buf[4096];
	size_t n = strlen(dir);

	if (n >= sizeof(buf))
		return sim_error(-ENAMETOOLONG, "%s: directory '%s' too long", what, dir);
	memcpy(buf, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != 0)
			continue;
		buf[i] = 0;
		if (mkdir(buf, 0777) && errno != EEXIST)
			return sim_error(-errno, "%s: cannot create directory '%s': %s", what, buf,
					 strerror(errno));
		buf[i] = i < n ? '/' : 0;
	}
	return 0;
}

/* WAVES, checked before anything is built: unset, empty or 0 (no dump), 1 (model.vcd in the
 * directory of sim_waves_env_dir(), which must be one that can be written) or a path ending
 * in .vcd (a misspelt 1 must not become a file of that name). */
static int waves_env_check(void)
{
	const char *env = sim_env("WAVES"), *var = sim_waves_env_dir_var();
	size_t n;

	if (!env || !strcmp(env, "0"))
		return 0;
	if (!strcmp(env, "1"))
		return sim_env_dir_writable(var ? var : "WAVES", sim_waves_env_dir());
	n = strlen(env);
	if (n < 5 || strcmp(env + n - 4, ".vcd"))
		return sim_error(-EINVAL, "WAVES: '%.40s%s' is not 0, 1 or a path ending in .vcd",
				 env, n > 40 ? "..." : "");
	return sim_env_path_len("WAVES", env, SIM_ENV_PATH_MAX);
}

/* At boot: hcasim_waves()'s path, else WAVES=1 (HCASIM_WAVES_DIR or build/waves, model.vcd;
 * model.<n>.vcd for the n-th boot of the process) or WAVES=<path>. */
static int waves_at_boot(void)
{
	const char *env = sim_env("WAVES"), *var = sim_waves_env_dir_var();
	char path[SIM_ENV_PATH_MAX + 32];
	int rc;

	if (waves_pending) {
		snprintf(path, sizeof(path), "%s", waves_pending);
		free(waves_pending);
		waves_pending = NULL;
		return waves_begin(path);
	} else if (!env || !strcmp(env, "0")) {
		return 0;
	} else if (!strcmp(env, "1")) {
		const char *dir = sim_waves_env_dir();

		rc = make_dirs("waves", dir);
		if (rc)
			return sim_error_prefix(rc, var ? var : "WAVES");
		if (waves_boots++)
			snprintf(path, sizeof(path), "%s/model.%u.vcd", dir, waves_boots);
		else
			snprintf(path, sizeof(path), "%s/model.vcd", dir);
	} else {
		snprintf(path, sizeof(path), "%s", env);
	}
	rc = waves_begin(path);
	return rc ? sim_error_prefix(rc, "WAVES") : 0;
}

int hcasim_waves(const char *path)
{
	if (!sys.booted) {
		free(waves_pending);
		waves_pending = NULL;
		if (path && *path && !(waves_pending = strdup(path)))
			return sim_error(-ENOMEM, "hcasim_waves: out of memory");
		return 0;
	}
	if (!path || !*path)
		return waves_end();
	waves_end();
	return waves_begin(path);
}

/* The environment's settings of this boot, each checked before anything is built: a bad
 * value refuses the boot with a message naming the variable (docs/config.md). */
static int boot_env(void)
{
	const char *cats = getenv("HCASIM_TRACE"), *tfile = sim_env("HCASIM_TRACE_FILE");
	const char *pcap = sim_env("HCASIM_PCAP"), *ctrs = sim_env("HCASIM_COUNTERS_DIR");
	const char *bug = sim_env("HCASIM_RTL_BUG");
	int rc;

	if (cats && (rc = sim_trace_select(cats)))
		return sim_error_prefix(rc, "HCASIM_TRACE");
	if (tfile && (rc = sim_env_path_len("HCASIM_TRACE_FILE", tfile, SIM_ENV_PATH_MAX)))
		return rc;
	if (tfile && (rc = sim_trace_open(tfile)))
		return sim_error_prefix(rc, "HCASIM_TRACE_FILE");
	rc = impl_from_env(sim_env("HCASIM_IMPL"));
	/* a test hook of sim/vl/cqe.cpp, sched.cpp, mkey.cpp, timers.cpp, resp_fe.cpp, qpc.cpp
	 * and wqe_fetch.cpp (docs/rtl.md), checked here before a block is made */
	if (!rc && bug && strcmp(bug, "none") && strcmp(bug, "cqe") && strcmp(bug, "sched") &&
	    strcmp(bug, "mkey") && strcmp(bug, "timers") && strcmp(bug, "resp_fe") &&
	    strcmp(bug, "qpc") && strcmp(bug, "wqe_fetch"))
		rc = sim_error(-EINVAL, "HCASIM_RTL_BUG: '%.40s' is not none, cqe, sched, mkey, "
			       "timers, resp_fe, qpc or wqe_fetch (the RTL built with a test bug)",
			       bug);
	if (!rc && pcap)
		rc = sim_env_path_len("HCASIM_PCAP", pcap, SIM_ENV_PATH_MAX - 32);
	if (!rc)
		rc = waves_env_check();
	if (!rc && sim_env("HCASIM_COVERAGE_DIR"))
		rc = sim_env_dir_writable("HCASIM_COVERAGE_DIR", sim_env("HCASIM_COVERAGE_DIR"));
	if (!rc && ctrs)
		rc = sim_env_dir_writable("HCASIM_COUNTERS_DIR", ctrs);
	else if (!rc && *sys.cfg.counters_dir)
		rc = sim_env_dir_writable("config key 'counters.dump_dir'", sys.cfg.counters_dir);
	return rc;
}

/* The files a boot starts writing: captures (HCASIM_PCAP, else link.pcap), waves, and the
 * coverage directory (HCASIM_COVERAGE_DIR: functional points counted from here on). */
static int boot_outputs(void)
{
	const char *pcap = sim_env("HCASIM_PCAP"), *cov = sim_env("HCASIM_COVERAGE_DIR");
	int rc;

	if (cov && (rc = make_dirs("HCASIM_COVERAGE_DIR", cov)))
		return rc;
	if (cov)
		hm_fcov_start(cov);

	if (pcap && (rc = hcasim_pcap(pcap)))
		return sim_error_prefix(rc, "HCASIM_PCAP");
	if (!pcap && *sys.cfg.pcap_prefix && (rc = hcasim_pcap(sys.cfg.pcap_prefix)))
		return sim_error_prefix(rc, "config key 'link.pcap'");
	return waves_at_boot();
}

/* A fabric process leaves the fabric when it exits: its peers see the links go quiet with a
 * TERMINATE, as a cable to a machine that is switched off, instead of waiting for it. */
static void fabric_exit(void)
{
	hcasim_shutdown();
}

/* In a fabric, the HCAs held here run on while the program is outside the library. */
static int fabric_start(void)
{
	static bool hooked;
	int rc;

	if (!sys.fab.dir[0] || !sys.cfg.device_thread_us)
		return 0;
	if ((rc = sim_devthread_start(sys.k, sys.cfg.device_thread_us))) {
		hcasim_shutdown();
		return rc;
	}
	if (!hooked && !atexit(fabric_exit))
		hooked = true;
	return 0;
}

int hcasim_boot(void)
{
	int rc;

	if (sys.booted)
		return 0;
	rc = cfg_prepare();
	if (!rc)
		rc = boot_env();
	if (rc)
		return rc;
	{
		unsigned mode[HM_TWIN_COUNT];

		hm_twin_modes(&sys.cfg, mode);
		rc = hm_twin_check(mode, (uint32_t)sys.cfg.max_qp);
		if (rc)
			return rc;
		/* The decode's latency is the RTL's; the model's is configured to equal it. */
		if (mode[HM_TWIN_WQE_FETCH] != HM_IMPL_MODEL &&
		    sys.cfg.wqe_cycles != HM_WQE_DECODE_CYCLES)
			return sim_error(-EINVAL, "impl.wqe_fetch = %s: pipe.wqe_cycles = %u, but the "
					 "RTL decodes a WQE in %u cycles (rtl/wqe_fetch.sv DECODE_CYCLES, "
					 "HM_WQE_DECODE_CYCLES in model/twin.h)",
					 mode[HM_TWIN_WQE_FETCH] == HM_IMPL_RTL ? "rtl" : "lockstep",
					 (unsigned)sys.cfg.wqe_cycles, HM_WQE_DECODE_CYCLES);
	}
	/* Checked before anything is built: hosts 2k and 2k+1 share hca.ports links. */
	rc = link_down_windows(sys.cfg.fault_link_down, (int)(sys.cfg.hosts / 2 * sys.cfg.ports),
			       false);
	if (!rc)
		rc = switch_check(&sys.cfg);
	if (!rc)
		rc = sim_fabric_from_env(&sys.fab, (unsigned)sys.cfg.hosts);
	if (!rc && sys.fab.dir[0])
		rc = sim_fabric_ini(&sys.fab, &sys.cfg);
	if (rc)
		return rc;
	sys.k = sim_kernel_create();
	if (!sys.k)
		return sim_error(-ENOMEM, "boot: out of memory");
	hm_twin_mismatches_reset();
	sim_kernel_set_current(sys.k);
	time_hook_apply();
	sim_sm_reset(sys.cfg.sm_delay_ns * SIM_PS_PER_NS);
	sys.ndevs = (int)sys.cfg.hosts;
	for (int i = 0; i < sys.ndevs; i++)
		sys.devs[i] = hm_dev_create(&sys.cfg, i, i);
	rc = make_links();
	if (!rc && sys.fab.dir[0] && sys.cfg.start_mode == SIM_START_TOGETHER)
		rc = sim_link_await_peers(sys.cfg.join_timeout_ms);
	link_down_windows(sys.cfg.fault_link_down, sys.nlinks, true);
	sys.booted = true;
	if (!rc)
		rc = boot_outputs();
	if (rc) {
		/* A boot that fails leaves nothing booted: the next one starts afresh. */
		char why[512];

		snprintf(why, sizeof(why), "%s", sim_last_error());
		hcasim_shutdown();
		return sim_error_quiet(rc, "%s", why);
	}
	trace_kernel_boot(-1, sys.cfg.hosts, sys.cfg.ports,
			  sys.cfg.link_layer == SIM_LL_ROCE ? "roce" : "ib", sys.cfg.seed);
	return fabric_start();
}

int hcasim_booted(void)
{
	return sys.booted;
}

void hcasim_shutdown(void)
{
	if (!sys.booted)
		return;
	sim_devthread_stop(); /* the simulation is the caller's alone from here */
	trace_kernel_shutdown(-1, sim_events_executed(sys.k));
	{
		const char *dir = sim_env("HCASIM_COUNTERS_DIR");

		if (!dir)
			dir = sys.cfg.counters_dir;
		/* Shutdown cannot fail: a dump that fails says so on stderr. */
		if (*dir && hcasim_counters_dump(dir))
			fprintf(stderr, "hcasim: %s\n", sim_last_error());
	}
	/* Shutdown cannot fail: waves or coverage that cannot be written say so on stderr. */
	if (hm_fcov_dump())
		fprintf(stderr, "hcasim: %s\n", sim_last_error());
	if (waves_end())
		fprintf(stderr, "hcasim: %s\n", sim_last_error());
	hm_twin_mismatch_summary(); /* impl.on_mismatch = count: how many, by block */
	for (int i = 0; i < sys.nlinks; i++)
		sim_link_destroy(sys.links[i]);
	sys.nlinks = 0;
	memset(sys.elsewhere, 0, sizeof(sys.elsewhere));
	sim_fabric_leave(&sys.fab, (unsigned)sys.cfg.hosts); /* its channels are closed by now */
	sys.fab.dir[0] = 0;
	sim_switch_destroy(sys.sw);
	sys.sw = NULL;
	for (unsigned n = 0; n < sys.swports; n++) {
		sim_switch_end_destroy(sys.ends[n]);
		sys.ends[n] = NULL;
	}
	sys.swports = 0;
	for (int i = 0; i < sys.ndevs; i++)
		hm_dev_destroy(sys.devs[i]);
	sys.ndevs = 0;
	for (int i = 0; i < MAX_DEVS; i++)
		while (sys.mbox[i].head) {
			struct hostmsg *m = sys.mbox[i].head;

			sys.mbox[i].head = m->next;
			free(m);
		}
	sim_kernel_destroy(sys.k);
	sys.k = NULL;
	sys.booted = false;
	sys.cfg_ready = false;
	sim_trace_close();
}

const char *hcasim_halted(void)
{
	return sys.k ? sim_halted(sys.k) : NULL;
}

uint64_t hcasim_mismatches(void)
{
	uint64_t n;

	sim_enter();
	n = hm_twin_mismatches();
	sim_leave();
	return n;
}

const char *hcasim_mismatch(uint64_t i)
{
	const char *r;

	sim_enter();
	r = hm_twin_mismatch(i);
	sim_leave();
	return r;
}

const char *hcasim_last_error(void)
{
	return sim_last_error();
}

uint64_t hcasim_now_ps(void)
{
	uint64_t t;

	sim_enter();
	sim_host_actions++;
	t = sys.k ? sim_now(sys.k) : 0;
	sim_leave();
	return t;
}

void hcasim_run_for_ps(uint64_t ps)
{
	sim_enter();
	sim_host_actions++;
	if (sys.k)
		sim_run_until(sys.k, sim_now(sys.k) + ps);
	sim_leave();
}

uint64_t hcasim_events_executed(void)
{
	return sys.k ? sim_events_executed(sys.k) : 0;
}

int hcasim_trace(const char *categories, const char *path)
{
	int rc = sim_trace_select(categories);

	return rc ? rc : sim_trace_open(path);
}

int hcasim_fabric_counts(struct hcasim_fabric_counts *out)
{
	uint64_t v[5];

	if (!out)
		return sim_error(-EINVAL, "hcasim_fabric_counts: out is NULL");
	sim_enter();
	sim_link_fabric_counts(v);
	sim_leave();
	*out = (struct hcasim_fabric_counts){ v[0], v[1], v[2], v[3], v[4] };
	return 0;
}

int hcasim_fabric_holds(int host)
{
	return host >= 0 && sim_fabric_holds(&sys.fab, (unsigned)host);
}

/* The checks hcasim_host_send and hcasim_host_recv share: host `here` (held by this process)
 * and `peer`. Held here too, *l is NULL (the message is an event of this kernel); held by
 * another process, it must be here's pair, cabled to it by port 1's link (*l). 0 or -errno. */
static int msg_link(const char *fn, int here, int peer, struct sim_link **l)
{
	if (!sys.booted)
		return sim_error(-ENODEV, "%s: the system is not booted", fn);
	if (here < 0 || here >= sys.ndevs || peer < 0 || peer >= sys.ndevs)
		return sim_error(-EINVAL, "%s: no host %d (sim.hosts %d: hosts 0..%d)", fn,
				 here < 0 || here >= sys.ndevs ? here : peer, sys.ndevs,
				 sys.ndevs - 1);
	if (!sim_fabric_holds(&sys.fab, (unsigned)here))
		return sim_error(-EPERM, "%s: host %d is not held by this process (HCASIM_HOST)",
				 fn, here);
	*l = NULL;
	if (sim_fabric_holds(&sys.fab, (unsigned)peer))
		return 0;
	if (sys.cfg.topology != SIM_TOPO_PAIRS || (here ^ 1) != peer)
		return sim_error(-ENOTCONN, "%s: host %d is held by another process and is not "
				 "host %d's pair (between processes, host messages go beside the "
				 "cable joining hosts 2k and 2k+1, sim.topology=pairs)", fn, peer,
				 here);
	*l = sys.links[here / 2 * (int)sys.cfg.ports];
	return 0;
}

static int host_send(int from, int to, const void *buf, size_t len)
{
	struct sim_link *l;
	int r = msg_link("hcasim_host_send", from, to, &l);

	if (r)
		return r;
	if (!buf && len)
		return sim_error(-EINVAL, "hcasim_host_send: buf is NULL for %zu bytes", len);
	if (len > HOSTMSG_MAX)
		return sim_error(-EMSGSIZE, "hcasim_host_send: a message of %zu bytes (at most %u)",
				 len, HOSTMSG_MAX);
	sim_host_actions++;
	if (l) {
		uint8_t *m = malloc(len + 1);

		SIM_ASSERT(m != NULL, "out of memory");
		m[0] = HOSTMSG_TAG;
		if (len)
			memcpy(m + 1, buf, len);
		sim_link_ctl_send(l, from & 1, m, len + 1);
		free(m);
		return 0;
	}
	sim_schedule_owned_at(sys.k, sim_now(sys.k) + sys.cfg.link_latency_ns * SIM_PS_PER_NS,
			      mbox_put, hostmsg_new(from, to, buf, len));
	return 0;
}

int hcasim_host_send(int from, int to, const void *buf, size_t len)
{
	int r;

	sim_enter();
	r = host_send(from, to, buf, len);
	sim_leave();
	return r;
}

struct mbox_want {
	struct mailbox *mb;
	int from;
};

static struct hostmsg **mbox_find(struct mailbox *mb, int from)
{
	struct hostmsg **pp;

	for (pp = &mb->head; *pp && (*pp)->from != from; pp = &(*pp)->next)
		;
	return *pp ? pp : NULL;
}

static bool mbox_has(void *arg)
{
	struct mbox_want *w = arg;

	return mbox_find(w->mb, w->from) != NULL;
}

static int host_recv(int host, int from, void *buf, size_t len, uint64_t timeout_ps)
{
	struct mbox_want w = { &sys.mbox[host < 0 || host >= MAX_DEVS ? 0 : host], from };
	struct hostmsg **pp, *m;
	struct sim_link *l;
	int r = msg_link("hcasim_host_recv", host, from, &l);

	if (r)
		return r;
	if (!buf && len)
		return sim_error(-EINVAL, "hcasim_host_recv: buf is NULL for %zu bytes", len);
	sim_host_actions++;
	if (timeout_ps > SIM_TIME_NEVER - sim_now(sys.k))
		timeout_ps = SIM_TIME_NEVER - sim_now(sys.k); /* for ever */
	if ((r = sim_host_wait(mbox_has, &w, timeout_ps)))
		return sim_error(r, "hcasim_host_recv: host %d waited for a message from host %d: "
				 "%s", host, from, r == -ETIMEDOUT ? "timed out" :
				 r == -EDEADLK ? "no host can send one (every host waits)" :
				 sim_halted(sys.k) ? sim_halted(sys.k) : strerror(-r));
	pp = mbox_find(w.mb, from);
	m = *pp;
	if (m->len > len)
		return sim_error(-EMSGSIZE, "hcasim_host_recv: a message of %zu bytes from host %d "
				 "for a buffer of %zu (it stays)", m->len, from, len);
	memcpy(buf, m->data, m->len);
	*pp = m->next;
	if (w.mb->tail == &m->next)
		w.mb->tail = pp;
	r = (int)m->len;
	free(m);
	return r;
}

int hcasim_host_recv(int host, int from, void *buf, size_t len, uint64_t timeout_ps)
{
	int r;

	sim_enter();
	r = host_recv(host, from, buf, len, timeout_ps);
	sim_leave();
	return r;
}

int hcasim_num_devices(void)
{
	return sys.ndevs;
}

int hcasim_dev_counters(int dev, struct hcasim_dev_counters *o)
{
	const struct hm_dp *dp;

	if (dev < 0 || dev >= sys.ndevs || !o)
		return sim_error(-EINVAL, "hcasim_dev_counters: no device %d", dev);
	dp = sys.devs[dev]->dp;
	*o = (struct hcasim_dev_counters){ dp->qpc_hits,      dp->qpc_misses, dp->qpc_writebacks,
					   dp->tx_pkts,       dp->rx_pkts,    dp->rx_crc_errors,
					   dp->rx_dropped,    dp->bad_doorbells,  dp->qpc_corrupt };
	return 0;
}

int hcasim_qp_counters(int dev, uint32_t qpn, struct hcasim_qp_counters *o)
{
	const struct hm_qp *qp;

	if (dev < 0 || dev >= sys.ndevs || !o)
		return sim_error(-EINVAL, "hcasim_qp_counters: no device %d", dev);
	qp = hm_qp_peek(sys.devs[dev], qpn);
	if (!qp)
		return sim_error(-EINVAL, "hcasim_qp_counters: no QP 0x%x on device %d", qpn, dev);
	*o = (struct hcasim_qp_counters){ qp->stats.tx_pkts, qp->stats.tx_bytes, qp->stats.rx_pkts,
					  qp->stats.rx_bytes, qp->stats.naks_sent, qp->stats.naks_rcvd,
					  qp->req.sq_psn, qp->resp.epsn };
	return 0;
}

uint64_t hcasim_dma_faults(int dev)
{
	return dev >= 0 && dev < sys.ndevs ? sim_pcie_fault_count(sys.devs[dev]->fn) : 0;
}

int hcasim_port_counter(int dev, int port, const char *name, uint64_t *value)
{
	if (dev < 0 || dev >= sys.ndevs)
		return sim_error(-EINVAL, "hcasim_port_counter: no device %d (%d devices)", dev,
				 sys.ndevs);
	if (port < 1 || (unsigned)port > sys.devs[dev]->nports)
		return sim_error(-EINVAL, "hcasim_port_counter: device %d has no port %d (ports "
				 "1..%u)", dev, port, sys.devs[dev]->nports);
	if (!name || !value)
		return sim_error(-EINVAL, "hcasim_port_counter: %s is NULL", !name ? "name" : "value");
	return hm_ctr_read(sys.devs[dev], (unsigned)port, name, value);
}

int hcasim_counters_dump(const char *dir)
{
	int rc;

	if (!dir || !*dir)
		return sim_error(-EINVAL, "hcasim_counters_dump: dir is %s", dir ? "empty" : "NULL");
	if (!sys.booted)
		return sim_error(-EINVAL, "hcasim_counters_dump: the system is not booted");
	for (int i = 0; i < sys.ndevs; i++) {
		rc = hm_ctr_dump(sys.devs[i], dir);
		if (rc)
			return rc;
	}
	return 0;
}
