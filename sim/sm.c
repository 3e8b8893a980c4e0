/* Subnet manager: LID assignment and port activation (IBA 14.4 in its simplest form: one
 * subnet, LMC 0, the SM on the first registered port). */
#include "sim/sm.h"
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

void sim_sm_reset(uint64_t sweep_delay_ps)
{
	nports = 0;
	nactive = 0;
	memset(mcgs, 0, sizeof(mcgs));
	sweep_ps = sweep_delay_ps;
}

int sim_sm_register(const struct sim_sma_ops *ops, void *port)
{
	SIM_ASSERT(nports < SIM_SM_MAX_PORTS, "too many ports for the subnet manager");
	ports[nports] = (struct sm_port){ ops, port, (uint16_t)(nports + 1), false };
	return nports++;
}

static void sm_sweep(void *arg)
{
	struct sm_port *p = arg;
	uint16_t sm_lid = ports[0].lid;

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

static int mcg_count(uint64_t m)
{
	return __builtin_popcountll(m);
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
}

void sim_sm_mcast_leave(int handle, uint16_t mlid, const uint8_t mgid[16])
{
	struct sm_mcg *g = mcg_find(mlid, mgid);

	/* After a reset of the SM (a new boot) the old devices' groups are already gone. */
	if (!g || handle < 0 || handle >= nports || !(g->members & (1ull << handle)))
		return;
	g->members &= ~(1ull << handle);
	trace_port_sm_mcast(-1, handle, mlid, "leave", mcg_count(g->members));
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
