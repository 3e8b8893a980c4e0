/* mcast: the device's multicast group table (IBA 10.5): which UD QPs are attached to which
 * group (multicast GID and LID). The port (model/port.c) accepts a multicast datagram for a
 * group that has QPs here and hands a copy to each; the subnet manager keeps the fabric's
 * side of the membership (sim/sm.c). docs/multicast.md. */
#include "model/mcast.h"
#include "model/ctx.h"
#include "sim/sm.h"
#include "sim/trace.h"

#include <stdlib.h>
#include <string.h>

/* The subnet manager's group table holds every group of 16 devices (sim.hosts at most 16). */
_Static_assert(SIM_SM_MAX_MCGS >= 16 * HCA_MCAST_GROUPS, "the SM's multicast table can fill up");

struct hm_mcg *hm_mcg_find(struct hm_dev *d, const uint8_t gid[16], uint16_t lid)
{
	for (unsigned i = 0; d->mcg && i < HM_MCG_MAX; i++)
		if (d->mcg[i].live && d->mcg[i].lid == lid && !memcmp(d->mcg[i].gid, gid, 16))
			return &d->mcg[i];
	return NULL;
}

bool hm_mcg_has_qp(const struct hm_mcg *g, uint32_t qpn)
{
	for (uint32_t i = 0; i < g->nqps; i++)
		if (g->qpns[i] == qpn)
			return true;
	return false;
}

unsigned hm_mcg_count(struct hm_dev *d)
{
	unsigned n = 0;

	for (unsigned i = 0; d->mcg && i < HM_MCG_MAX; i++)
		n += d->mcg[i].live;
	return n;
}

unsigned hm_mcg_of_qp(struct hm_dev *d, uint32_t qpn)
{
	unsigned n = 0;

	for (unsigned i = 0; d->mcg && i < HM_MCG_MAX; i++)
		n += d->mcg[i].live && hm_mcg_has_qp(&d->mcg[i], qpn);
	return n;
}

/* The SM adds (join) or removes every InfiniBand port of the device to or from group g. */
static void sm_membership(struct hm_dev *d, const struct hm_mcg *g, bool join)
{
	for (unsigned i = 0; i < d->nports; i++) {
		int h = d->ports[i].sm_handle;

		if (h < 0)
			continue;
		if (join)
			sim_sm_mcast_join(h, g->lid, g->gid);
		else
			sim_sm_mcast_leave(h, g->lid, g->gid);
	}
}

void hm_mcg_attach(struct hm_dev *d, const uint8_t gid[16], uint16_t lid, uint32_t qpn)
{
	struct hm_mcg *g = hm_mcg_find(d, gid, lid);

	if (!d->mcg) {
		d->mcg = calloc(HM_MCG_MAX, sizeof(*d->mcg));
		SIM_ASSERT(d->mcg != NULL, "out of memory");
	}
	if (!g) {
		for (unsigned i = 0; !g && i < HM_MCG_MAX; i++)
			if (!d->mcg[i].live)
				g = &d->mcg[i];
		SIM_ASSERT(g != NULL, "no free multicast group (firmware checks the limit)");
		memset(g, 0, sizeof(*g));
		g->live = true;
		g->lid = lid;
		memcpy(g->gid, gid, 16);
		sm_membership(d, g, true);
	}
	if (hm_mcg_has_qp(g, qpn))
		return; /* once per QP, however often it attaches */
	SIM_ASSERT(g->nqps < HM_MCG_QPS, "multicast group full (firmware checks the limit)");
	g->qpns[g->nqps++] = qpn;
}

void hm_mcg_detach(struct hm_dev *d, const uint8_t gid[16], uint16_t lid, uint32_t qpn)
{
	struct hm_mcg *g = hm_mcg_find(d, gid, lid);

	SIM_ASSERT(g && hm_mcg_has_qp(g, qpn), "detach of qpn 0x%x not attached", qpn);
	for (uint32_t i = 0; i < g->nqps; i++)
		if (g->qpns[i] == qpn) {
			memmove(&g->qpns[i], &g->qpns[i + 1], (g->nqps - i - 1) * sizeof(uint32_t));
			g->nqps--;
			break;
		}
	if (!g->nqps) {
		sm_membership(d, g, false);
		g->live = false;
	}
}

void hm_mcg_reset(struct hm_dev *d)
{
	for (unsigned i = 0; d->mcg && i < HM_MCG_MAX; i++)
		if (d->mcg[i].live) {
			sm_membership(d, &d->mcg[i], false);
			d->mcg[i].live = false;
		}
	free(d->mcg);
	d->mcg = NULL;
}

/* How many of the QPs attached to g receive on port `port` (their port_num). */
uint32_t hm_mcg_qps_on(struct hm_dev *d, const struct hm_mcg *g, unsigned port,
		       uint32_t qpns[HM_MCG_QPS])
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < g->nqps; i++) {
		const struct hm_qp *qp = hm_qp_peek(d, g->qpns[i]);

		if (qp && hm_qp_port(qp) == port)
			qpns[n++] = g->qpns[i];
	}
	return n;
}
