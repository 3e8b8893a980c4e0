/* Firmware: multicast group attach and detach (IBA 10.5, 11.3: Attach QP to / Detach QP from
 * Multicast Group). Checked as ib_attach_mcast does (a UD QP, a multicast GID, a multicast LID),
 * then applied to the device's group table (model/mcast.c). docs/multicast.md. */
#include "firmware/fw.h"
#include "model/mcast.h"
#include "sim/trace.h"

#include <stdio.h>
#include <string.h>

/* The checks ATTACH_MCG and DETACH_MCG share. */
static struct fw_result check_mcg(struct fw_state *fw, const struct hca_mcg_in *in)
{
	struct fw_result r;
	const struct fw_qp *qp = fw_qp_act(fw, in->qpn, offsetof(struct hca_mcg_in, qpn), &r);

	if (!qp)
		return r;
	if (qp->type != HCA_QPT_UD) /* only UD QPs take multicast (IBA 10.5.1) */
		return FW_FIELD(BAD_PARAM, hca_mcg_in, qpn);
	if (in->rsvd)
		return FW_FIELD(BAD_PARAM, hca_mcg_in, rsvd);
	if (in->gid[0] != 0xff) /* IBA 4.1.1: a multicast GID starts with 0xFF */
		return FW_FIELD(BAD_PARAM, hca_mcg_in, gid);
	if (fw->dev->cfg.link_layer == SIM_LL_ROCE)
		return FW_FAIL(NOT_SUPPORTED, FIELD, offsetof(struct hca_mcg_in, gid));
	if (!hca_is_mcast_lid(in->lid))
		return FW_FIELD(BAD_PARAM, hca_mcg_in, lid);
	return FW_OK;
}

static void trace_mcg(struct fw_state *fw, bool attach, const struct hca_mcg_in *in)
{
	const uint8_t *g = in->gid;
	char mgid[40];

	snprintf(mgid, sizeof(mgid),
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1],
		 g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14],
		 g[15]);
	if (attach)
		trace_fw_mcg_attach(fw->dev->devno, in->qpn, in->lid, mgid);
	else
		trace_fw_mcg_detach(fw->dev->devno, in->qpn, in->lid, mgid);
}

/* ATTACH_MCG (attach true) or DETACH_MCG, once check_mcg has passed. */
static struct fw_result mcg_apply(struct fw_state *fw, const struct hca_mcg_in *in, bool attach)
{
	const struct hm_mcg *g = hm_mcg_find(fw->dev, in->gid, in->lid);
	bool member = g && hm_mcg_has_qp(g, in->qpn);

	if (!attach) {
		if (!member) /* not attached (ib_uverbs: EINVAL) */
			return FW_FIELD(BAD_PARAM, hca_mcg_in, gid);
		hm_mcg_detach(fw->dev, in->gid, in->lid, in->qpn);
	} else {
		if (member)
			return FW_OK; /* attached already: once per QP (ib_uverbs answers 0) */
		if (!g && hm_mcg_count(fw->dev) >= HM_MCG_MAX)
			return FW_FAIL(NO_RESOURCES, LIMIT, 0); /* max_mcast_grp */
		if (g && g->nqps >= HM_MCG_QPS)
			return FW_FAIL(NO_RESOURCES, LIMIT, 0); /* max_mcast_qp_attach */
		hm_mcg_attach(fw->dev, in->gid, in->lid, in->qpn);
	}
	trace_mcg(fw, attach, in);
	return FW_OK;
}

struct fw_result fw_cmd_ATTACH_MCG(struct fw_state *fw, const void *in_, void *out_,
				   sim_time_t *t)
{
	struct fw_result r = check_mcg(fw, in_);

	(void)out_;
	(void)t;
	return r.status ? r : mcg_apply(fw, in_, true);
}

struct fw_result fw_cmd_DETACH_MCG(struct fw_state *fw, const void *in_, void *out_,
				   sim_time_t *t)
{
	struct fw_result r = check_mcg(fw, in_);

	(void)out_;
	(void)t;
	return r.status ? r : mcg_apply(fw, in_, false);
}
