/* Subnet manager: LID assignment and port activation (IBA 14.4 in its simplest form: one
 * subnet, LMC 0, the SM on the first registered port). */
#include "sim/sm.h"
#include "sim/error.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

enum { PORT_INIT = 2, PORT_ARMED = 3, PORT_ACTIVE = 4 };

struct sm_port {
	const struct sim_sma_ops *ops; /* SMA of the port */
	void *port;                    /* its state */
	uint16_t lid;                  /* assigned LID */
	bool active;                   /* configured to ACTIVE */
	unsigned swport;               /* the switch port it is cabled to; 0: none */
	uint16_t routed;               /* the LID the switch's LFT routes to it; 0: none */
};

struct sm_mcg {
	uint16_t mlid;     /* multicast LID */
	uint8_t mgid[16];  /* multicast GID */
	uint64_t members;  /* bit h: port handle h is in the group's forwarding */
};

static struct sm_port ports[SIM_SM_MAX_PORTS];
static int nports, nactive;
static uint64_t sweep_ps;
static struct sm_mcg mcgs[SIM_SM_MAX_MCGS]; /* groups with at least one member port */

/* The switch and the SM's copy of its tables: what it last programmed. */
#define SM_MLIDS 0x3fff /* MLIDs 0xc000..0xfffe */
static const struct sim_smp_switch_ops *sw_ops;
static void *sw_arg;
static unsigned sw_nports;
static uint8_t lft[0xc000];    /* output port per unicast LID */
static uint64_t mft[SM_MLIDS]; /* bit p: switch port p, per MLID */
static sim_sm_uplink_fn uplink; /* the switch is in another process: ask its SM */

/* The messages to the switch's SM: kind, port handle (2 bytes), LID or MLID (2), and for a
 * join or a leave the MGID (16); big-endian as MADs are. */
enum { MSG_ROUTE = 0x10, MSG_JOIN = 0x11, MSG_LEAVE = 0x12 };
#define MSG_ROUTE_LEN 5
#define MSG_GROUP_LEN 21

static void up_send(int handle, uint8_t kind, uint16_t lid, const uint8_t mgid[16])
{
	uint8_t m[MSG_GROUP_LEN] = { kind, (uint8_t)(handle >> 8), (uint8_t)handle,
				     (uint8_t)(lid >> 8), (uint8_t)lid };

	if (mgid)
		memcpy(m + 5, mgid, 16);
	uplink(handle, m, mgid ? MSG_GROUP_LEN : MSG_ROUTE_LEN);
}

void sim_sm_reset(uint64_t sweep_delay_ps)
{
	nports = 0;
	nactive = 0;
	memset(mcgs, 0, sizeof(mcgs));
	sweep_ps = sweep_delay_ps;
	sw_ops = NULL;
	sw_arg = NULL;
	sw_nports = 0;
	uplink = NULL;
}

void sim_sm_set_uplink(sim_sm_uplink_fn send)
{
	uplink = send;
}

void sim_sm_set_switch(const struct sim_smp_switch_ops *ops, void *sw, unsigned n)
{
	sw_ops = ops;
	sw_arg = sw;
	sw_nports = n;
	memset(lft, SIM_SM_LFT_NONE, sizeof(lft));
	memset(mft, 0, sizeof(mft)); /* as the switch's own tables start: empty */
}

void sim_sm_cable(int handle, unsigned swport)
{
	SIM_ASSERT(handle >= 0 && handle < nports, "unknown SM port handle %d", handle);
	ports[handle].swport = swport;
}

/* One SubnSet(LinearForwardingTable): the block of lid. */
static void lft_send(uint16_t lid)
{
	uint32_t b = lid / 64u;

	sw_ops->set_lft(sw_arg, b, &lft[64 * b]);
}

int sim_sm_set_route(uint16_t lid, unsigned swport)
{
	if (!sw_ops)
		return -ENODEV;
	if (lid == 0 || lid >= 0xc000 || ((swport < 1 || swport > sw_nports) &&
					  swport != SIM_SM_LFT_NONE))
		return -EINVAL;
	lft[lid] = (uint8_t)swport;
	lft_send(lid);
	return 0;
}

/* Route p's LID to its switch port, and no longer the LID it had before. */
static void sm_route(struct sm_port *p)
{
	if (!sw_ops && uplink && p->swport) {
		up_send((int)(p - ports), MSG_ROUTE, p->lid, NULL);
		p->routed = p->lid;
		return;
	}
	if (!sw_ops || !p->swport)
		return;
	if (p->routed && p->routed != p->lid && lft[p->routed] == p->swport) {
		lft[p->routed] = SIM_SM_LFT_NONE;
		lft_send(p->routed);
	}
	lft[p->lid] = (uint8_t)p->swport;
	lft_send(p->lid);
	p->routed = p->lid;
}

int sim_sm_register(const struct sim_sma_ops *ops, void *port)
{
	SIM_ASSERT(nports < SIM_SM_MAX_PORTS, "too many ports for the subnet manager");
	ports[nports] = (struct sm_port){ ops, port, (uint16_t)(nports + 1), false, 0, 0 };
	return nports++;
}

static void sm_sweep(void *arg)
{
	struct sm_port *p = arg;
	uint16_t sm_lid = ports[0].lid;

	sm_route(p); /* the switch forwards to the port before it is ACTIVE */
	/* Two SubnSets, as OpenSM does: ARMED with the LID, then ACTIVE. The port's SMA ignores
	 * them if its link went down meanwhile. */
	p->ops->set_port(p->port, p->lid, sm_lid, SIM_SM_DEFAULT_PREFIX, PORT_ARMED);
	p->ops->set_port(p->port, p->lid, sm_lid, SIM_SM_DEFAULT_PREFIX, PORT_ACTIVE);
	trace_port_sm(-1, (int)(p - ports), p->lid, sm_lid);
	if (!p->active)
		nactive++;
	p->active = true;
}

void sim_sm_link_up(int handle)
{
	SIM_ASSERT(handle >= 0 && handle < nports, "unknown SM port handle %d", handle);
	sim_schedule_in(sim_kernel(), sweep_ps, sm_sweep, &ports[handle]);
}

int sim_sm_active_ports(void)
{
	return nactive;
}

int sim_sm_registered_ports(void)
{
	return nports;
}

/* The SM moves an ACTIVE port to a new LID with one SubnSet(PortInfo), state unchanged. */
static void sm_reassign(void *arg)
{
	struct sm_port *p = arg;

	if (!p->active)
		return;
	sm_route(p);
	p->ops->set_port(p->port, p->lid, ports[0].lid, SIM_SM_DEFAULT_PREFIX, PORT_ACTIVE);
	trace_port_sm_reassign(-1, (int)(p - ports), p->lid);
}

int sim_sm_set_lid(int handle, uint16_t lid)
{
	if (handle < 0 || handle >= nports)
		return -ENODEV;
	if (lid == 0 || lid >= 0xc000)
		return -EINVAL; /* unicast LIDs are 0x0001..0xbfff */
	for (int i = 0; i < nports; i++)
		if (i != handle && ports[i].lid == lid)
			return -EADDRINUSE;
	if (ports[handle].lid == lid)
		return 0;
	ports[handle].lid = lid;
	/* A port not yet configured gets it at its next sweep. */
	if (ports[handle].active)
		sim_schedule_in(sim_kernel(), sweep_ps, sm_reassign, &ports[handle]);
	return 0;
}

/* ---- multicast membership ---- */

static struct sm_mcg *mcg_find(uint16_t mlid, const uint8_t mgid[16])
{
	for (int i = 0; i < SIM_SM_MAX_MCGS; i++)
		if (mcgs[i].members && mcgs[i].mlid == mlid && !memcmp(mcgs[i].mgid, mgid, 16))
			return &mcgs[i];
	return NULL;
}

static bool mcg_room(void)
{
	for (int i = 0; i < SIM_SM_MAX_MCGS; i++)
		if (!mcgs[i].members)
			return true;
	return false;
}

static int mcg_count(uint64_t m)
{
	return __builtin_popcountll(m);
}

/* After a join or a leave: the switch ports of every member of mlid's groups, and the
 * SubnSets(MulticastForwardingTable) of its block, one per 16-port position. */
static void mft_update(uint16_t mlid)
{
	uint32_t idx = (uint32_t)mlid - 0xc000u, base = idx & ~31u;
	uint64_t m = 0;

	if (!sw_ops || mlid < 0xc000 || idx >= SM_MLIDS)
		return;
	for (int i = 0; i < SIM_SM_MAX_MCGS; i++)
		for (int h = 0; h < nports && mcgs[i].members && mcgs[i].mlid == mlid; h++)
			if ((mcgs[i].members >> h & 1) && ports[h].swport)
				m |= 1ull << ports[h].swport;
	mft[idx] = m;
	for (uint32_t pos = 0; pos * 16 <= sw_nports; pos++) {
		uint16_t masks[32];

		for (uint32_t i = 0; i < 32; i++)
			masks[i] = base + i < SM_MLIDS ? (uint16_t)(mft[base + i] >> (16 * pos)) : 0;
		sw_ops->set_mft(sw_arg, pos << 28 | base / 32, masks);
	}
}

void sim_sm_mcast_join(int handle, uint16_t mlid, const uint8_t mgid[16])
{
	struct sm_mcg *g = mcg_find(mlid, mgid);

	SIM_ASSERT(handle >= 0 && handle < nports, "unknown SM port handle %d", handle);
	for (int i = 0; !g && i < SIM_SM_MAX_MCGS; i++)
		if (!mcgs[i].members) {
			g = &mcgs[i];
			g->mlid = mlid;
			memcpy(g->mgid, mgid, 16);
		}
	SIM_ASSERT(g != NULL, "more than %d multicast groups in the subnet", SIM_SM_MAX_MCGS);
	g->members |= 1ull << handle;
	trace_port_sm_mcast(-1, handle, mlid, "join", mcg_count(g->members));
	mft_update(mlid);
	if (!sw_ops && uplink && ports[handle].swport)
		up_send(handle, MSG_JOIN, mlid, mgid);
}

void sim_sm_mcast_leave(int handle, uint16_t mlid, const uint8_t mgid[16])
{
	struct sm_mcg *g = mcg_find(mlid, mgid);

	/* After a reset of the SM (a new boot) the old devices' groups are already gone. */
	if (!g || handle < 0 || handle >= nports || !(g->members & (1ull << handle)))
		return;
	g->members &= ~(1ull << handle);
	trace_port_sm_mcast(-1, handle, mlid, "leave", mcg_count(g->members));
	mft_update(mlid);
	if (!sw_ops && uplink && ports[handle].swport)
		up_send(handle, MSG_LEAVE, mlid, mgid);
}

int sim_sm_mcast_ports(uint16_t mlid, const uint8_t mgid[16])
{
	const struct sm_mcg *g = mcg_find(mlid, mgid);

	return g ? mcg_count(g->members) : 0;
}

bool sim_sm_mcast_member(int handle, uint16_t mlid, const uint8_t mgid[16])
{
	const struct sm_mcg *g = mcg_find(mlid, mgid);

	return g && handle >= 0 && handle < nports && (g->members & (1ull << handle));
}

int sim_sm_from_port(unsigned swport, const uint8_t *m, size_t len)
{
	int h;
	uint16_t lid;

	if (len < MSG_ROUTE_LEN || (m[0] != MSG_ROUTE && m[0] != MSG_JOIN && m[0] != MSG_LEAVE) ||
	    len != (m[0] == MSG_ROUTE ? MSG_ROUTE_LEN : MSG_GROUP_LEN))
		return sim_error(-EPROTO, "SM: a message of %zu bytes, kind 0x%02x, from switch port "
				 "%u: a route is 0x%02x and %d bytes, a join 0x%02x and a leave "
				 "0x%02x %d bytes", len, len ? m[0] : 0, swport, MSG_ROUTE,
				 MSG_ROUTE_LEN, MSG_JOIN, MSG_LEAVE, MSG_GROUP_LEN);
	h = m[1] << 8 | m[2];
	lid = (uint16_t)(m[3] << 8 | m[4]);
	if (!sw_ops || h >= nports || ports[h].swport != swport)
		return sim_error(-EPROTO, "SM: a message from switch port %u for port handle %d, "
				 "which is not cabled there", swport, h);
	if (m[0] == MSG_ROUTE ? !lid || lid >= 0xc000 : lid < 0xc000 || lid == 0xffff)
		return sim_error(-EPROTO, "SM: a message from switch port %u with LID 0x%x: a route "
				 "takes a unicast LID, a group a multicast one", swport, lid);
	if (m[0] == MSG_JOIN && !mcg_find(lid, m + 5) && !mcg_room())
		return sim_error(-EPROTO, "SM: a join from switch port %u finds the table of %d "
				 "groups full", swport, SIM_SM_MAX_MCGS);
	if (m[0] == MSG_ROUTE) {
		ports[h].lid = lid;
		sm_route(&ports[h]);
	} else if (m[0] == MSG_JOIN) {
		sim_sm_mcast_join(h, lid, m + 5);
	} else {
		sim_sm_mcast_leave(h, lid, m + 5);
	}
	return 0;
}
