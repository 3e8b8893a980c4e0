/* rx: the ports' receive path (model/rx.h). A frame from a link or the HCA's loopback path
 * takes the receive pipeline (pipe.port_cycles per frame), is parsed and checked, and is
 * handed to its QP — each attached QP for a multicast datagram — in order: a QP's frames wait
 * in its FIFO while an earlier one is being handled, and go to its responder or completer. */
#include "model/rx.h"
#include "model/comp.h"
#include "model/fcov.h"
#include "model/mcast.h"
#include "model/port.h"
#include "model/qp.h"
#include "model/qpc.h"
#include "model/resp.h"
#include "sim/link.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool is_response(uint8_t op)
{
	return (hm_opcode_class(op) & HM_OPC_RESPONSE) != 0;
}

/* The packet's transport (its opcode's top three bits) is the QP's: 0 RC, 1 UC, 3 UD, 5 XRC,
 * where an XRC_SEND QP takes responses only and an XRC_RECV QP requests only. */
static bool transport_ok(const struct hm_qp *qp, uint8_t opcode)
{
	switch (opcode >> 5) {
	case 0:
		return qp->type == HCA_QPT_RC;
	case 1:
		return qp->type == HCA_QPT_UC;
	case 3:
		return qp->type == HCA_QPT_UD;
	case 5:
		return qp->type == (is_response(opcode) ? HCA_QPT_XRC_SEND : HCA_QPT_XRC_RECV);
	default:
		return false;
	}
}

/* The frame handed down these functions is a link buffer (sim/link.h) in *own: a QP's FIFO
 * takes it over (leaving NULL) or copies it when another took it already; the caller frees
 * what is left. */
static void port_rx_frame(struct hm_dev *d, struct hm_port *p, uint8_t **own, size_t len,
			  bool loopback, bool crc_pending, sim_time_t t);
static void mcast_rx(struct hm_dev *d, struct hm_port *p, const struct hm_pkt *pkt,
		     uint8_t **own, const uint8_t *frame, size_t len, sim_time_t t);
static void rx_to_qp(struct hm_dev *d, struct hm_port *p, struct hm_qp *qp,
		     const struct hm_pkt *pkt, uint8_t **own, const uint8_t *frame, size_t len,
		     sim_time_t t);

struct rx_later {
	struct hm_dev *d; /* device */
	unsigned port;    /* port */
	bool loopback;    /* turned around inside the HCA, not from the link */
	bool crc_pending; /* built here and untouched: its CRCs hold (docs/blocks/pkt.md) */
	size_t len;       /* bytes */
	uint8_t *buf;     /* frame (a link buffer) */
};

static struct sim_objcache rx_laters = SIM_OBJCACHE(sizeof(struct rx_later));

static void port_rx_later(void *arg)
{
	struct rx_later *f = arg;

	port_rx_frame(f->d, &f->d->ports[f->port - 1], &f->buf, f->len, f->loopback,
		      f->crc_pending, sim_now(f->d->k));
	sim_link_frame_free(f->buf);
	sim_obj_put(&rx_laters, f);
}

void hm_rx_frame(struct hm_dev *d, unsigned port, uint8_t *frame, size_t len, bool fcs_ok,
		 bool loopback, bool crc_pending)
{
	struct hm_port *p = &d->ports[port - 1];
	struct hm_dp *dp = d->dp;
	sim_time_t t = sim_now(d->k);
	struct rx_later *f;

	if (!fcs_ok) {
		/* The Ethernet MAC drops a frame whose FCS fails before the port sees it. */
		dp->rx_crc_errors++;
		dp->rx_dropped++;
		hm_ctr_rcv(p->dev, p->num, len, false, false);
		trace_pkt_drop_bad(p->dev->devno, p->num, len, "fcs");
		sim_link_frame_free(frame);
		return;
	}
	/* One frame per pipe.port_cycles through the receive pipeline; the frame is handled at
	 * the time it leaves it, so that its effects on memory happen in time order. */
	if (dp->rx_free_ps > t)
		t = dp->rx_free_ps;
	t = sim_clock_after(&p->dev->core, t, p->dev->cfg.port_cycles);
	dp->rx_free_ps = t;
	f = sim_obj_get(&rx_laters);
	f->d = p->dev;
	f->port = p->num;
	f->loopback = loopback;
	f->crc_pending = crc_pending;
	f->len = len;
	f->buf = frame;
	sim_schedule_owned_at(d->k, t, port_rx_later, f);
}

void hm_rxq_free(struct hm_qp *qp)
{
	while (qp->rx.head) {
		struct hm_rx_frame *f = qp->rx.head;

		qp->rx.head = f->next;
		sim_link_frame_free(f->buf);
		free(f);
	}
	qp->rx.tail = NULL;
}

/* Hand a parsed packet for qp to the responder or the completer at t. */
static void qp_rx(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *pkt, sim_time_t t)
{
	qp->stats.rx_pkts++;
	qp->stats.rx_bytes += pkt->paylen;
	if ((hm_opcode_class(pkt->opcode) & HM_OPC_ACK) && hm_aeth_is_nak(pkt->aeth_syndrome))
		qp->stats.naks_rcvd++;
	/* MigReq set by a peer that has migrated: an ARMED QP follows it (IBA 17.2.8). */
	if (pkt->migreq && qp->type != HCA_QPT_UD && qp->attr.path_mig_state == HCA_MIG_ARMED)
		hm_qp_migrate(d, qp, "peer_migrated");
	if (is_response(pkt->opcode))
		qp->rx.busy_ps = hm_comp_rx(d, qp, pkt, t);
	else
		qp->rx.busy_ps = hm_resp_rx(d, qp, pkt, t);
}

struct rx_drain {
	struct hm_dev *d; /* device */
	uint32_t qpn;     /* QP whose waiting frames to handle */
};

/* Handle a QP's waiting frames in arrival order, each once the previous one is done. */
static void rx_drain(void *arg)
{
	struct rx_drain *r = arg;
	struct hm_dev *d = r->d;
	sim_time_t t = sim_now(d->k);
	struct hm_qp *qp = hm_qp_lookup(d, r->qpn);

	if (qp) {
		qp->rx.drain = false;
		if (qp->rx.head && qp->rx.busy_ps <= t) {
			struct hm_rx_frame *f = qp->rx.head;
			struct hm_pkt pkt;

			qp->rx.head = f->next;
			if (!qp->rx.head)
				qp->rx.tail = NULL;
			/* checked when it arrived: its CRCs are known good */
			if (!hm_pkt_parse_crc(hm_port_ll(&d->ports[f->port - 1]), f->buf, f->len,
					      false, &pkt) &&
			    qp->state != HCA_QPS_RESET && qp->state != HCA_QPS_ERR) {
				pkt.frame = f->buf;
				qp_rx(d, qp, &pkt, t);
			}
			sim_link_frame_free(f->buf);
			free(f);
		}
		if (qp->rx.head) {
			qp->rx.drain = true;
			sim_schedule_owned_at(d->k, qp->rx.busy_ps > t ? qp->rx.busy_ps : t,
					      rx_drain, r);
			return;
		}
	}
	free(r);
}

static void port_rx_frame(struct hm_dev *d, struct hm_port *p, uint8_t **own, size_t len,
			  bool loopback, bool crc_pending, sim_time_t t)
{
	const uint8_t *frame = *own;
	struct hm_dp *dp = d->dp;
	struct hm_pkt pkt;
	struct hm_qp *qp;
	bool mcast;
	int rc;

	dp->rx_pkts++;
	rc = hm_pkt_parse_crc(hm_port_ll(p), frame, len, !crc_pending, &pkt);
	SIM_ASSERT(!rc || !crc_pending, "a frame built here does not parse (%d)", rc);
	if (rc) {
		/* A bad ICRC/VCRC or a malformed frame is dropped and counted (IBA 7.8). A frame
		 * that looks malformed because a bit of a length field flipped is a CRC error
		 * too: the link's CRC over the bytes received does not hold. */
		if (rc == -EPROTO && len > HM_ICRC_BYTES + HM_VCRC_BYTES) {
			/* IB: the VCRC covers every byte; RoCE: the ICRC (the FCS, not in the
			 * frame, would say the same). Both are stored least significant byte
			 * first. */
			if (hm_port_ll(p) == HM_LL_IB)
				rc = hm_pkt_vcrc(frame, len) !=
						     (uint16_t)(frame[len - 2] | frame[len - 1] << 8)
					     ? -EBADMSG
					     : rc;
			else
				rc = hm_pkt_icrc(HM_LL_ROCE, frame, len) !=
						     ((uint32_t)frame[len - 4] |
						      (uint32_t)frame[len - 3] << 8 |
						      (uint32_t)frame[len - 2] << 16 |
						      (uint32_t)frame[len - 1] << 24)
					     ? -EBADMSG
					     : rc;
		}
		dp->rx_crc_errors += rc == -EBADMSG;
		dp->rx_dropped++;
		if (!loopback)
			hm_ctr_rcv(d, p->num, len, false, false);
		trace_pkt_drop_bad(d->devno, p->num, len, rc == -EBADMSG ? "crc" : "malformed");
		return;
	}
	hm_fcov_hit(HM_FCOV_opcode_rcvd, pkt.opcode);
	if (hm_port_ll(p) == HM_LL_ROCE && !(pkt.dmac[0] & 1) && memcmp(pkt.dmac, p->mac, 6)) {
		/* The MAC's address filter: a unicast frame for another station (a switch floods
		 * what it has not learnt yet) goes no further. */
		dp->rx_dropped++;
		trace_pkt_drop_dmac(d->devno, p->num, len);
		return;
	}
	pkt.frame = *own;
	trace_pkt_rx(d->devno, p->num, pkt.opcode, pkt.dqpn, pkt.psn, pkt.paylen);
	mcast = hm_port_ll(p) == HM_LL_IB && hca_is_mcast_lid(pkt.dlid);
	if (!loopback) /* the port counters count the link's frames only */
		hm_ctr_rcv(d, p->num, len, true, mcast);
	if (mcast) {
		mcast_rx(d, p, &pkt, own, frame, len, t);
		return;
	}
	qp = hm_qpc_get(d, pkt.dqpn, &t); /* t moves on by the lookup's latency */
	rx_to_qp(d, p, qp, &pkt, own, frame, len, t);
}

/* A multicast datagram arrived at port p (IBA 10.5.2): it must be UD, carry a GRH (IBA
 * 8.3.1: the MGID names the group) and the multicast QPN, and name a group with QPs that
 * receive on this port. Each of them gets it, with its own checks, once. */
static void mcast_rx(struct hm_dev *d, struct hm_port *p, const struct hm_pkt *pkt,
		     uint8_t **own, const uint8_t *frame, size_t len, sim_time_t t)
{
	const struct hm_mcg *g = pkt->has_grh ? hm_mcg_find(d, pkt->dgid, pkt->dlid) : NULL;
	const char *why = !pkt->has_grh		    ? "no_grh"
			  : pkt->dqpn != HCA_MCAST_QPN ? "not_mcast_qpn"
			  : (pkt->opcode >> 5) != 3	    ? "not_ud"
			  : !g			    ? "no_group"
						    : NULL;
	uint32_t qpns[HM_MCG_QPS], n = why ? 0 : hm_mcg_qps_on(d, g, p->num, qpns);

	if (!n) {
		d->dp->rx_dropped++;
		trace_pkt_drop_mcast(d->devno, p->num, pkt->dlid, pkt->dqpn, pkt->opcode,
				     why ? why : "no_qp_on_port");
		return;
	}
	trace_pkt_mcast(d->devno, p->num, pkt->dlid, n);
	for (uint32_t i = 0; i < n; i++) {
		struct hm_qp *qp = hm_qpc_get(d, qpns[i], &t); /* one lookup after the other */

		rx_to_qp(d, p, qp, pkt, own, frame, len, t);
	}
}

/* Hand a checked frame (pkt, parsed from frame) to qp at t, or drop it if qp cannot take it. */
static void rx_to_qp(struct hm_dev *d, struct hm_port *p, struct hm_qp *qp,
		     const struct hm_pkt *pkt, uint8_t **own, const uint8_t *frame, size_t len,
		     sim_time_t t)
{
	struct hm_dp *dp = d->dp;

	if (!qp || qp->state == HCA_QPS_RESET || qp->state == HCA_QPS_INIT ||
	    qp->state == HCA_QPS_ERR || !transport_ok(qp, pkt->opcode) ||
	    (pkt->pkey & 0x7fff) != (p->pkeys[qp->attr.pkey_index < 64 ? qp->attr.pkey_index : 0] &
				     0x7fff) ||
	    !(pkt->pkey & 0x7fff)) {
		/* IBA 10.3.1: RESET, INIT and ERR drop incoming packets; so does a packet for a QP
		 * of another transport or partition. */
		dp->rx_dropped++;
		trace_pkt_drop_no_qp(d->devno, pkt->dqpn, pkt->opcode);
		return;
	}
	/* A QP's packets are handled in order: one that arrives while an earlier one is still
	 * being handled (its receive WQE fetch, its reads) or waiting joins the QP's FIFO. */
	if (qp->rx.head || qp->rx.busy_ps > t) {
		struct hm_rx_frame *f = malloc(sizeof(*f));

		SIM_ASSERT(f != NULL, "out of memory");
		f->next = NULL;
		f->port = p->num;
		f->len = len;
		if (*own) { /* the frame itself, or a copy when another QP took it (multicast) */
			f->buf = *own;
			*own = NULL;
		} else {
			f->buf = sim_link_frame_new(len);
			memcpy(f->buf, frame, len);
		}
		if (qp->rx.tail)
			qp->rx.tail->next = f;
		else
			qp->rx.head = f;
		qp->rx.tail = f;
		if (!qp->rx.drain) {
			struct rx_drain *r = malloc(sizeof(*r));

			SIM_ASSERT(r != NULL, "out of memory");
			*r = (struct rx_drain){ d, qp->qpn };
			qp->rx.drain = true;
			sim_schedule_owned_at(d->k, qp->rx.busy_ps > t ? qp->rx.busy_ps : t,
					      rx_drain, r);
		}
		return;
	}
	qp_rx(d, qp, pkt, t);
}
