/* resp: the responder (IBA 9.7.2-9.7.5, rxe's resp.c in spirit). For each request packet the
 * front end (model/resp_fe.c, rtl/resp_fe.sv) decides the checks in one transaction and the
 * steps apply its verdict: the QP must be able to receive; on RC the PSN is checked (a gap
 * earns one sequence NAK, then silence until the expected PSN; a duplicate SEND/WRITE is
 * re-acknowledged, never executed again), on UC a gap drops up to the next FIRST/ONLY; the
 * opcode must continue the message in progress; SEND data is scattered into the next receive
 * WQE (RQ or SRQ), WRITE data goes where its RETH's rkey allows, READ requests are answered
 * from memory, atomics are executed once. Errors follow IBA's classes: NAK-invalid request,
 * NAK-remote access, NAK-remote operational error, each moving the responder's QP to ERR. */
#include "model/resp.h"
#include "model/cqe.h"
#include "model/dma.h"
#include "model/eq.h"
#include "model/fcov.h"
#include "model/mkey.h"
#include "model/port.h"
#include "model/qp.h"
#include "model/twin.h"
#include "sim/trace.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

/* Response headers: addressed back to the requester of p. */
static void resp_headers(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *req,
			 struct hm_pkt *p)
{
	const struct hm_port *port = &d->ports[hm_qp_port(qp) - 1];

	*p = hm_pkt_zero;
	p->sl = req->sl;
	p->dlid = req->slid;
	p->slid = port->lid;
	p->has_grh = req->has_grh;
	p->traffic_class = req->traffic_class;
	p->flow_label = req->flow_label;
	p->hop_limit = 64;
	memcpy(p->sgid, req->dgid, 16);
	memcpy(p->dgid, req->sgid, 16);
	memcpy(p->smac, req->dmac, 6);
	memcpy(p->dmac, req->smac, 6);
	p->udp_sport = req->udp_sport;
	p->pkey = req->pkey;
	p->dqpn = qp->attr.dest_qpn;
	p->migreq = qp->attr.path_mig_state == HCA_MIG_MIGRATED;
}

/* The responses of an XRC_RECV QP are the RC ones in the XRC class (IBA annex A14). */
static uint8_t rsp_class(const struct hm_qp *qp)
{
	return qp->type == HCA_QPT_XRC_RECV ? HM_OP_XRC : 0;
}

static void send_ack(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *req, uint8_t syn,
		     uint32_t psn, sim_time_t t)
{
	struct hm_pkt a;

	resp_headers(d, qp, req, &a);
	a.opcode = HM_OP_ACKNOWLEDGE | rsp_class(qp);
	a.psn = psn;
	a.aeth_syndrome = syn;
	a.aeth_msn = qp->resp.msn & 0xffffff;
	if (syn != HM_AETH_ACK) {
		qp->stats.naks_sent++;
		hm_fcov_hit(HM_FCOV_nak_sent, hm_fcov_nak_kind(syn));
		hm_ctr_ack_sent(d, qp, syn);
		trace_resp_nak(d->devno, qp->qpn, psn, syn);
	}
	qp->stats.tx_pkts++;
	hm_port_send(d, hm_qp_port(qp), &a, t, 0);
}

/* XRC (IBA annex A14): an XRC_RECV QP receives into the XRC SRQ its request's XRCETH names
 * (resp.xrc_srqn, checked by xrc_srq_ok), whose CQ takes the receive completion and whose PD
 * checks the rkeys. Other QPs: their own SRQ, receive CQ and PD. */
static uint32_t rsrqn(const struct hm_qp *qp)
{
	return qp->type == HCA_QPT_XRC_RECV ? qp->resp.xrc_srqn : qp->srqn;
}

static uint32_t rcqn(struct hm_dev *d, const struct hm_qp *qp)
{
	const struct hm_srq *srq = hm_srq_get(d, qp->resp.xrc_srqn);

	if (qp->type != HCA_QPT_XRC_RECV)
		return qp->rcqn;
	return srq ? srq->cqn : 0; /* 0 is never a CQ */
}

static uint32_t resp_pdn(struct hm_dev *d, const struct hm_qp *qp)
{
	const struct hm_srq *srq = hm_srq_get(d, qp->resp.xrc_srqn);

	if (qp->type != HCA_QPT_XRC_RECV)
		return qp->pdn;
	return srq ? srq->pdn : 0; /* 0 is never a PD: every rkey fails RKEY_PD */
}

/* The receive WQE in use completes with status (a receive error). */
static void recv_fail(struct hm_dev *d, struct hm_qp *qp, uint32_t verr, sim_time_t t)
{
	struct hca_cqe cqe = { 0 };

	cqe.qpn = qp->qpn;
	cqe.wqe_index = (uint16_t)qp->resp.rwqe;
	cqe.opcode = HCA_CQE_OP_RECV;
	cqe.status = hca_verr_status(verr);
	cqe.vendor_err = verr;
	cqe.srqn = qp->resp.rwqe_srq ? rsrqn(qp) : 0;
	if (!qp->resp.rwqe_srq)
		qp->resp.rq_ci = qp->resp.rwqe + 1;
	hm_cqe_post(d, rcqn(d, qp), &cqe, false, t);
}

/* A responder error of class NAK + QP to ERR (RC), with a receive CQE when a receive WQE was
 * in use. */
static void resp_fatal(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *p, uint8_t syn,
		       uint32_t verr, sim_time_t t)
{
	uint32_t data[6] = { qp->qpn, 0, 0, 0, 0, 0 };

	trace_resp_error(d->devno, qp->qpn, p->psn, verr, hca_verr_name(verr), syn);
	if (hca_qpt_reliable(qp->type)) {
		send_ack(d, qp, p, syn, qp->resp.epsn, t);
		/* The affiliated asynchronous error of the responder (IBA 11.6.3.1): invalid
		 * request, or access violation. */
		if (syn == HM_AETH_NAK_INV_REQ)
			hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_REQ_ERR, data);
		else if (syn == HM_AETH_NAK_REM_ACCESS)
			hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_ACCESS_ERR, data);
	}
	if (qp->resp.in_msg && qp->resp.msg_kind == 0)
		recv_fail(d, qp, verr, t);
	/* RC: the QP goes to ERR. UC: a receive WQE completed in error also takes the QP to
	 * ERR (IBA 10.8.3.2: a completion error other than on the send side of UC/UD); without
	 * one, the message is only dropped. */
	if (hca_qpt_reliable(qp->type) || (qp->resp.in_msg && qp->resp.msg_kind == 0)) {
		qp->resp.in_msg = false;
		hm_qp_error(d, qp, HCA_QPS_ERR, t);
	} else {
		qp->resp.in_msg = false;
		qp->resp.uc_drop = true;
	}
}

/* UC: a message that needs a receive WQE finds none; it is dropped silently (UC never NAKs),
 * counted, and the packets after it up to the next FIRST/ONLY go with it. */
static void uc_no_rwqe(struct hm_dev *d, struct hm_qp *qp)
{
	d->dp->rx_dropped++;
	trace_pkt_drop_no_rwqe(d->devno, qp->qpn);
	qp->resp.uc_drop = true;
}

/* Read receive WQE idx of the RQ into the prefetch buffer, from t, if it is posted. */
static void prefetch_idx(struct hm_dev *d, struct hm_qp *qp, uint32_t idx, sim_time_t t)
{
	uint32_t stride = qp->rq_stride;

	if (qp->has_srq || qp->resp.rpf_valid || idx - qp->resp.rq_ci >= qp->rq_pi - qp->resp.rq_ci ||
	    qp->state == HCA_QPS_RESET || qp->state == HCA_QPS_ERR)
		return; /* SRQ, already held, not posted, or no receiving */
	if (stride > HM_MAX_SGE * HCA_SGE_BYTES)
		stride = HM_MAX_SGE * HCA_SGE_BYTES;
	qp->resp.rpf_valid = true;
	qp->resp.rpf_idx = idx;
	qp->resp.rpf_ready = t;
	qp->resp.rpf_err = hm_wqe_read(d, HM_DMA_RQ_WQE, qp->qpn,
				  qp->rq + (uint64_t)(idx % qp->rq_entries) * qp->rq_stride,
				  qp->resp.rpf_buf, stride, &qp->resp.rpf_ready);
	trace_resp_prefetch(d->devno, qp->qpn, idx, qp->resp.rpf_ready, qp->resp.rpf_err);
}

void hm_rwqe_prefetch(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	/* While a message uses WQE rq_ci (rq_ci moves on at its completion), the next is +1. */
	prefetch_idx(d, qp, qp->resp.in_msg && !qp->resp.rwqe_srq ? qp->resp.rq_ci + 1 : qp->resp.rq_ci, t);
}

/* Take the next receive WQE (RQ or SRQ) into qp->resp.rsge. false: none posted. An RQ's WQE comes
 * from the prefetch when it holds it (waiting for its read if that is still under way). */
static bool take_rwqe(struct hm_dev *d, struct hm_qp *qp, sim_time_t *t)
{
	struct hm_srq *srq = qp->has_srq ? hm_srq_get(d, rsrqn(qp)) : NULL;
	uint64_t addr;
	uint32_t stride, idx, n;
	uint8_t buf[HM_MAX_SGE * HCA_SGE_BYTES];
	bool failed;

	if (qp->has_srq) {
		if (!srq || srq->ci == srq->pi || srq->error)
			return false;
		idx = srq->ci++;
		addr = srq->ring + (uint64_t)(idx % srq->entries) * srq->stride;
		stride = srq->stride;
	} else {
		if (qp->resp.rq_ci == qp->rq_pi)
			return false;
		idx = qp->resp.rq_ci;
		addr = qp->rq + (uint64_t)(idx % qp->rq_entries) * qp->rq_stride;
		stride = qp->rq_stride;
	}
	if (stride > sizeof(buf))
		stride = sizeof(buf);
	if (!srq && qp->resp.rpf_valid && qp->resp.rpf_idx == idx) {
		qp->resp.rpf_valid = false;
		failed = qp->resp.rpf_err;
		memcpy(buf, qp->resp.rpf_buf, stride);
		if (qp->resp.rpf_ready > *t)
			*t = qp->resp.rpf_ready;
	} else {
		qp->resp.rpf_valid = false; /* held another index: stale */
		failed = hm_wqe_read(d, srq ? HM_DMA_SRQ_WQE : HM_DMA_RQ_WQE,
				     srq ? rsrqn(qp) : qp->qpn, addr, buf, stride, t);
	}
	if (failed) {
		/* The receive WQE cannot be read: catastrophic for the SRQ (and its QPs) or the
		 * QP. The caller sees no WQE and a QP in ERR. */
		if (srq)
			hm_srq_fatal(d, rsrqn(qp), *t);
		else
			hm_qp_fatal(d, qp, *t);
		return false;
	}
	for (n = 0; n < stride / HCA_SGE_BYTES; n++) {
		memcpy(&qp->resp.rsge[n], buf + n * HCA_SGE_BYTES, HCA_SGE_BYTES);
		if (qp->resp.rsge[n].lkey == HCA_LKEY_END)
			break;
	}
	qp->resp.rsge_n = n;
	qp->resp.rwqe = idx;
	if (!srq)
		prefetch_idx(d, qp, idx + 1, *t); /* the one after, while this one is used */
	qp->resp.rwqe_srq = qp->has_srq;
	qp->resp.rwqe_pdn = srq ? srq->pdn : qp->pdn; /* an SRQ's buffers are in the SRQ's PD */
	qp->resp.recv_off = 0;
	if (srq && srq->limit && srq->pi - srq->ci < srq->limit) {
		uint32_t data[6] = { rsrqn(qp), 0, 0, 0, 0, 0 };

		/* IBA 10.2.9.3: below the limit, one event, and the limit disarms. */
		srq->limit = 0;
		hm_eq_post(d, HCA_EQE_SRQ_LIMIT, 0, data);
	}
	return true;
}

/* Scatter len bytes of data at message offset qp->resp.recv_off into the receive WQE; data
 * lies in frame (the received link buffer, held by the writes) or, frame NULL, is copied.
 * Returns a HCA_WC_* status. */
static uint32_t scatter(struct hm_dev *d, struct hm_qp *qp, const uint8_t *data, uint32_t len,
			const uint8_t *frame, sim_time_t t)
{
	uint32_t verr;
	struct hm_ct ct = { .ready = t, .tail = hm_port_tail_bytes(d, hm_qp_port(qp)),
			    .frame = frame };
	uint32_t n = hm_sge_copy(d, qp->resp.rwqe_pdn, qp->resp.rsge, qp->resp.rsge_n, qp->resp.recv_off, (void *)data,
				 len, true, &t, &verr, &ct);

	qp->resp.recv_off += n;
	return verr ? verr : n < len ? HCA_VERR_RECV_LEN : HCA_VERR_NONE;
}


/* Receive completion of the message that just ended. */
static void recv_complete(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *p, bool imm,
			  bool write, sim_time_t t)
{
	struct hca_cqe cqe = { 0 };

	cqe.qpn = qp->qpn;
	cqe.wqe_index = (uint16_t)qp->resp.rwqe;
	cqe.opcode = write ? HCA_CQE_OP_RECV_RDMA_WITH_IMM : HCA_CQE_OP_RECV;
	cqe.byte_len = write ? qp->resp.wr_len : qp->resp.recv_off; /* WRITE with immediate: its length */
	cqe.status = HCA_WC_SUCCESS;
	cqe.imm_data = htobe32(p->imm); /* the CQE holds the wire bytes, as ibv_wc does */
	cqe.wc_flags = (imm ? HCA_WC_F_IMM : 0) | (qp->type == HCA_QPT_UD && p->has_grh ?
						   HCA_WC_F_GRH : 0);
	if (p->opcode == HM_OP_SEND_LAST_INV || p->opcode == HM_OP_SEND_ONLY_INV) {
		cqe.wc_flags |= HCA_WC_F_INV;
		cqe.imm_data = p->ieth_rkey; /* ibv_wc.invalidated_rkey, in host order */
	}
	cqe.src_qp = qp->type == HCA_QPT_UD ? p->deth_sqpn : qp->attr.dest_qpn;
	cqe.slid = p->slid;
	cqe.sl = p->sl;
	cqe.pkey_index = qp->attr.pkey_index;
	cqe.srqn = qp->resp.rwqe_srq ? rsrqn(qp) : 0;
	if (!qp->resp.rwqe_srq)
		qp->resp.rq_ci = qp->resp.rwqe + 1;
	hm_cqe_post(d, rcqn(d, qp), &cqe, p->se, t);
}

static sim_time_t resp_ud(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *p, sim_time_t t)
{
	uint8_t grh[40] = { 0 };
	uint32_t verr;

	/* IBA 10.2.5 (C10-15): a Q_Key mismatch drops the packet silently (and counts). */
	if (p->deth_qkey != qp->attr.qkey) {
		d->dp->rx_dropped++;
		if (p->dqpn == HCA_MCAST_QPN) /* a member of a multicast group refused it */
			hm_ctr_qp(d, qp, HM_CTR_RQ_MCE);
		trace_pkt_drop_qkey(d->devno, qp->qpn, p->deth_qkey, qp->attr.qkey);
		return t;
	}
	if (!take_rwqe(d, qp, &t)) {
		d->dp->rx_dropped++; /* UD: no receive WQE (or it failed), the datagram is lost */
		trace_pkt_drop_no_rwqe(d->devno, qp->qpn);
		return t;
	}
	/* The first 40 bytes of the buffer take the GRH (undefined without one, IBA 11.4.1.1);
	 * for RoCEv2 over IPv4 they hold the IPv4 header in bytes 20..39 (RoCEv2 annex). */
	if (d->ports[hm_qp_port(qp) - 1].link_layer == 2) {
		uint8_t *ip = grh + 20;
		uint32_t sum = 0;
		/* IPv4 total length: IP, UDP, BTH, DETH, [ImmDt], payload, pad, ICRC. */
		uint16_t tot = (uint16_t)(HM_IPV4_BYTES + HM_UDP_BYTES + HM_BTH_BYTES +
					  HM_DETH_BYTES +
					  (p->opcode == HM_OP_UD_SEND_ONLY_IMM ? HM_IMMDT_BYTES : 0) +
					  p->paylen + p->padcnt + HM_ICRC_BYTES);

		ip[0] = 0x45;
		ip[1] = p->traffic_class;
		ip[2] = (uint8_t)(tot >> 8);
		ip[3] = (uint8_t)tot;
		ip[6] = 0x40; /* DF */
		ip[8] = p->hop_limit;
		ip[9] = 17;
		memcpy(ip + 12, p->sgid + 12, 4);
		memcpy(ip + 16, p->dgid + 12, 4);
		for (int i = 0; i < 20; i += 2)
			sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		ip[10] = (uint8_t)(~sum >> 8);
		ip[11] = (uint8_t)~sum;
	} else if (p->has_grh) {
		grh[0] = 0x60 | (p->traffic_class >> 4);
		grh[1] = (uint8_t)(p->traffic_class << 4) | (uint8_t)((p->flow_label >> 16) & 0xf);
		grh[2] = (uint8_t)(p->flow_label >> 8);
		grh[3] = (uint8_t)p->flow_label;
		/* PayLen: everything after the GRH through the ICRC (IBA 8.3.1). */
		uint16_t plen = (uint16_t)(HM_BTH_BYTES + HM_DETH_BYTES +
					   (p->opcode == HM_OP_UD_SEND_ONLY_IMM ? HM_IMMDT_BYTES : 0) +
					   p->paylen + p->padcnt + HM_ICRC_BYTES);

		grh[4] = (uint8_t)(plen >> 8);
		grh[5] = (uint8_t)plen;
		grh[6] = 0x1b;
		grh[7] = p->hop_limit;
		memcpy(grh + 8, p->sgid, 16);
		memcpy(grh + 24, p->dgid, 16);
	}
	verr = scatter(d, qp, grh, sizeof(grh), NULL, t);
	if (!verr)
		verr = scatter(d, qp, p->payload, p->paylen, p->frame, t);
	if (verr) {
		recv_fail(d, qp, verr, t);
		return t;
	}
	recv_complete(d, qp, p, p->opcode == HM_OP_UD_SEND_ONLY_IMM, false, t);
	return t;
}


/* A front end's refusal (model/resp_fe.c) as the NAK's syndrome and the vendor error: the
 * classes of IBA 9.7.5.2.8 (invalid request, remote access). */
static uint32_t fe_verr(const struct hm_resp_fe_out *fe)
{
	static const uint32_t verr[] = {
		[HM_RESP_FE_OPCODE_SEQ] = HCA_VERR_REQ_OPCODE_SEQ,
		[HM_RESP_FE_XRC_SRQ] = HCA_VERR_REQ_XRC_SRQ,
		[HM_RESP_FE_OPCODE] = HCA_VERR_REQ_OPCODE,
		[HM_RESP_FE_NO_ACCESS] = HCA_VERR_REQ_NO_ACCESS,
		[HM_RESP_FE_ALIGN] = HCA_VERR_REQ_ATOMIC_ALIGN,
		[HM_RESP_FE_LENGTH] = HCA_VERR_REQ_LEN,
	};

	if (fe->verdict == HM_RESP_FE_RKEY)
		return hm_mkey_verr((enum hm_mkey_result)fe->key, true);
	return fe->verdict < sizeof(verr) / sizeof(verr[0]) ? verr[fe->verdict] : HCA_VERR_NONE;
}

static uint8_t fe_syndrome(const struct hm_resp_fe_out *fe)
{
	return fe->verdict == HM_RESP_FE_NO_ACCESS || fe->verdict == HM_RESP_FE_RKEY
		       ? HM_AETH_NAK_REM_ACCESS
		       : HM_AETH_NAK_INV_REQ;
}

/* The responder's checks of a remote access of len bytes at va with rkey: the QP's access
 * flags, then the key (IBA 10.6.3.2). HCA_VERR_NONE and *iova, or the check that failed. */
static uint32_t rkey_verr(struct hm_dev *d, const struct hm_qp *qp, uint32_t access,
			  uint32_t rkey, uint64_t va, uint32_t len, uint64_t *iova)
{
	if (!(qp->attr.access_flags & access))
		return HCA_VERR_REQ_NO_ACCESS;
	return len ? hm_mkey_verr(hm_rkey_check(d, rkey, qp, resp_pdn(d, qp), va, len, access,
						iova),
				  true)
		   : HCA_VERR_NONE;
}

/* Answer an RDMA READ request: one response packet per path MTU, read from memory at iova
 * (verr: the access checks' failure, else HCA_VERR_NONE). */
static sim_time_t resp_read(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *p,
			    uint32_t verr, uint64_t iova, sim_time_t t)
{
	unsigned mtu = hm_qp_mtu(d, qp);
	uint32_t len = p->reth_dmalen, n = len ? (len + mtu - 1) / mtu : 1, off = 0;

	if (verr) {
		resp_fatal(d, qp, p, HM_AETH_NAK_REM_ACCESS, verr, t);
		return t;
	}
	qp->resp.msn++;
	for (uint32_t i = 0; i < n; i++) {
		struct hm_pkt r;
		uint8_t *buf;
		uint32_t chunk = len - off < mtu ? len - off : mtu;
		sim_time_t tr = t, need = 0; /* all responses' reads are issued together */

		resp_headers(d, qp, p, &r);
		r.opcode = rsp_class(qp) | (n == 1	   ? HM_OP_READ_RESPONSE_ONLY
					    : i == 0	   ? HM_OP_READ_RESPONSE_FIRST
					    : i == n - 1 ? HM_OP_READ_RESPONSE_LAST
							   : HM_OP_READ_RESPONSE_MIDDLE);
		r.psn = (p->psn + i) & HCA_PSN_MASK;
		r.aeth_syndrome = HM_AETH_ACK;
		r.aeth_msn = qp->resp.msn & 0xffffff;
		r.paylen = chunk;
		buf = hm_port_frame_new(d, hm_qp_port(qp), &r); /* read straight into the frame */
		if (chunk && sim_dma_read_ct(d->fn, iova + off, buf, chunk, &tr,
					     sim_config_link_mbps(&d->cfg), 0, &need))
			memset(buf, 0, chunk);
		hm_port_send(d, hm_qp_port(qp), &r, t, need); /* cut-through behind its read */
		qp->stats.tx_pkts++;
		qp->stats.tx_bytes += chunk;
		off += chunk;
	}
	qp->resp.epsn = (p->psn + n) & HCA_PSN_MASK;
	return t;
}

/* The ATOMIC ACKNOWLEDGE of request p: msn and the original value, new or saved. */
static void send_atomic_ack(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *p,
			    uint32_t msn, uint64_t orig, sim_time_t t)
{
	struct hm_pkt r;

	resp_headers(d, qp, p, &r);
	r.opcode = HM_OP_ATOMIC_ACKNOWLEDGE | rsp_class(qp);
	r.psn = p->psn;
	r.aeth_syndrome = HM_AETH_ACK;
	r.aeth_msn = msn;
	r.atomic_orig = orig;
	qp->stats.tx_pkts++;
	hm_port_send(d, hm_qp_port(qp), &r, t, 0);
}

/* An atomic the front end passed (fe): executed at its device address. */
static sim_time_t resp_atomic(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *p,
			      const struct hm_resp_fe_out *fe, sim_time_t t)
{
	uint64_t iova = fe->iova, orig, val;

	if (fe->verdict != HM_RESP_FE_EXECUTE) {
		resp_fatal(d, qp, p, fe_syndrome(fe), fe_verr(fe), t);
		return t;
	}
	/* Read, modify and write as one operation of the device (IBA 9.4.5: atomic with
	 * respect to other accesses through this HCA). */
	if (sim_dma_read_timed(d->fn, iova, &orig, 8, &t)) {
		resp_fatal(d, qp, p, HM_AETH_NAK_REM_OP, HCA_VERR_REQ_DMA, t);
		return t;
	}
	if (p->opcode == HM_OP_COMPARE_SWAP)
		val = orig == p->atomic_compare ? p->atomic_swap_add : orig;
	else
		val = orig + p->atomic_swap_add;
	sim_dma_write_timed(d->fn, iova, &val, 8, &t);
	qp->resp.msn++;
	qp->resp.atomics[qp->resp.atomic_next] =
		(struct hm_atomic_saved){ p->psn, qp->resp.msn & 0xffffff, orig, true };
	qp->resp.atomic_next = (uint8_t)((qp->resp.atomic_next + 1) % HM_ATOMIC_SAVED);
	send_atomic_ack(d, qp, p, qp->resp.msn & 0xffffff, orig, t);
	qp->resp.epsn = (p->psn + 1) & HCA_PSN_MASK;
	return t;
}

/* A request that is not the expected PSN: ahead of it (a gap) or a duplicate. Counted in
 * rq_num_oos or rq_num_dup, and traced, so that the counters can be checked against the trace. */
static void out_of_seq(struct hm_dev *d, struct hm_qp *qp, uint32_t psn, bool ahead)
{
	hm_ctr_qp(d, qp, ahead ? HM_CTR_RQ_OOS : HM_CTR_RQ_DUP);
	trace_resp_seq(d->devno, qp->qpn, psn, qp->resp.epsn, ahead ? "ahead" : "duplicate");
}

/* ---- the responder's engine: small steps, each returning the next (rxe's resp_states) ---- */

#define RESP_STEPS(X)                                                                              \
	X(CHK_TYPE)   /* UD has a path of its own */                                               \
	X(COMM_EST)   /* the first packet in RTR raises COMM_EST */                                \
	X(CHK_PSN)    /* RC: expected, ahead (a gap) or duplicate; UC: a gap loses the message */  \
	X(DUPLICATE)  /* RC: answer a duplicate again, never execute it twice */                   \
	X(CHK_OP_SEQ) /* the opcode continues the message in progress */                          \
	X(CLASSIFY)   /* which kind of request */                                                  \
	X(READ)       /* answer a READ request from memory */                                      \
	X(ATOMIC)     /* execute an atomic once */                                                 \
	X(SEND)       /* scatter SEND data into a receive WQE (RNR NAK without one) */             \
	X(WRITE)      /* place WRITE data where the RETH's rkey allows */                          \
	X(COMPLETE)   /* the next PSN; at a message's end its receive completion; the ACK */       \
	X(DONE)

enum resp_step {
#define X(s) RESP_##s,
	RESP_STEPS(X)
#undef X
};

static const char *const resp_step_names[] = {
#define X(s) #s,
	RESP_STEPS(X)
#undef X
};

const char *const *hm_resp_step_names(size_t *n)
{
	*n = sizeof(resp_step_names) / sizeof(resp_step_names[0]);
	return resp_step_names;
}

/* One request packet on its way through the steps. */
struct resp_pkt {
	struct hm_dev *d;
	struct hm_qp *qp;
	const struct hm_pkt *p;
	sim_time_t t;
	uint8_t op;       /* opcode without its transport bits */
	uint8_t cls;      /* its class (enum hm_op_class) */
	bool first, last; /* FIRST or ONLY; LAST or ONLY */
	struct hm_resp_fe_out fe; /* the front end's verdict: the checks the steps apply */
};

/* The front end (model/resp_fe.c, rtl/resp_fe.sv) checks the request against the QP's context
 * as it arrives (pos: its opcode's position), one transaction per packet; the steps apply its
 * verdict in their order. The key table's entry of the request's rkey and the XRC domain of
 * the SRQ its XRCETH names go in with it (the block has no memory port). */
/* The answer is due within pipe.resp_cycles, whose minimum (sim/config.def) is this latency. */
_Static_assert(HM_RESP_FE_LATENCY == 1, "pipe.resp_cycles' minimum is the front end's latency");

static void front_end(struct resp_pkt *c, uint8_t pos, sim_time_t arrival)
{
	struct hm_dev *d = c->d;
	const struct hm_qp *qp = c->qp;
	const struct hm_pkt *p = c->p;
	bool xrc = qp->type == HCA_QPT_XRC_RECV;
	const struct hm_srq *srq = xrc ? hm_srq_get(d, p->xrc_srqn) : NULL;
	struct hm_resp_fe_in in = {
		.cycle = sim_clock_cycles(&d->core, sim_clock_edge(&d->core, arrival)),
		.opcode = p->opcode, .pos = pos, .cls = c->cls, .psn = p->psn, .paylen = p->paylen,
		.reth_va = p->reth_va, .reth_rkey = p->reth_rkey, .reth_len = p->reth_dmalen,
		.atomic_va = p->atomic_va, .atomic_rkey = p->atomic_rkey, .pkt_srqn = p->xrc_srqn,
		.qp_type = qp->type, .qpn = qp->qpn, .qp_access = qp->attr.access_flags,
		.epsn = qp->resp.epsn, .nak_sent = qp->resp.nak_sent, .in_msg = qp->resp.in_msg,
		.uc_drop = qp->resp.uc_drop, .msg_write = qp->resp.msg_kind != 0,
		.wr_va = qp->resp.wr_va, .wr_rkey = qp->resp.wr_rkey, .wr_left = qp->resp.wr_left,
		.xrc_srqn = qp->resp.xrc_srqn, .qp_xrcd = xrc ? qp->xrcd : 0,
		.srq_xrcd = xrc && srq ? srq->xrcd : 0, .nkeys = d->dp->nmkeys
	};
	uint32_t rkey = hm_resp_fe_rkey(&in);

	/* the PD of the access: an XRC request's is its SRQ's, once the SRQ check passed */
	in.pdn = !xrc ? qp->pdn : srq ? srq->pdn : 0;
	hm_mkey_entry(d, rkey, &in.key);
	hm_resp_fe_check(d, &in, &c->fe);
}

static enum resp_step chk_type(struct resp_pkt *c)
{
	if (c->qp->type != HCA_QPT_UD)
		return RESP_COMM_EST;
	c->t = resp_ud(c->d, c->qp, c->p, c->t);
	return RESP_DONE;
}

/* COMM_EST: the first packet arrives in RTR (IBA 11.6.2, an affiliated event). */
static enum resp_step comm_est(struct resp_pkt *c)
{
	struct hm_qp *qp = c->qp;
	uint32_t data[6] = { qp->qpn, 0, 0, 0, 0, 0 };

	if (qp->state == HCA_QPS_RTR && !qp->resp.comm_est) {
		qp->resp.comm_est = true;
		hm_eq_post(c->d, HCA_EQE_QP_EVENT, HCA_QP_EV_COMM_EST, data);
	}
	return RESP_CHK_PSN;
}

/* UC: a gap loses the message in progress; what follows is dropped up to a FIRST/ONLY. */
static enum resp_step chk_psn_uc(struct resp_pkt *c)
{
	struct hm_qp *qp = c->qp;

	if (c->fe.psn_cls != HM_PSN_EXPECTED) {
		out_of_seq(c->d, qp, c->p->psn, c->fe.psn_cls == HM_PSN_AHEAD);
		qp->resp.uc_drop = !c->first;
		qp->resp.in_msg = false;
	}
	qp->resp.epsn = (c->p->psn + 1) & HCA_PSN_MASK;
	if (c->fe.verdict == HM_RESP_FE_UC_LOST) {
		qp->resp.uc_drop = true;
		c->d->dp->rx_dropped++; /* the rest of a message already lost */
		trace_pkt_drop_uc_lost(c->d->devno, qp->qpn);
		return RESP_DONE;
	}
	qp->resp.uc_drop = false;
	return RESP_CHK_OP_SEQ;
}

/* RC: the front end's PSN stage (the psn block). Out of sequence: one NAK, then silence until
 * the expected PSN. */
static enum resp_step chk_psn(struct resp_pkt *c)
{
	struct hm_qp *qp = c->qp;

	if (qp->type == HCA_QPT_UC)
		return chk_psn_uc(c);
	qp->resp.nak_sent = c->fe.nak_sent;
	if (c->fe.verdict == HM_RESP_FE_DUPLICATE)
		return RESP_DUPLICATE;
	if (c->fe.verdict != HM_RESP_FE_AHEAD)
		return RESP_CHK_OP_SEQ;
	out_of_seq(c->d, qp, c->p->psn, true);
	if (c->fe.send_nak)
		send_ack(c->d, qp, c->p, HM_AETH_NAK_SEQ, qp->resp.epsn, c->t);
	return RESP_DONE;
}

/* Duplicate (IBA 9.7.5.1.1): a READ is answered again from memory, an atomic gets its saved
 * result (never executed twice), SEND/WRITE are acknowledged again. */
static enum resp_step duplicate(struct resp_pkt *c)
{
	struct hm_qp *qp = c->qp;
	const struct hm_pkt *p = c->p;

	out_of_seq(c->d, qp, p->psn, false);
	if (p->opcode == HM_OP_READ_REQUEST) {
		uint32_t e = qp->resp.epsn, m = qp->resp.msn;
		uint64_t iova = 0;
		/* the front end checks no duplicate: the READ's access is checked again here */
		uint32_t verr = rkey_verr(c->d, qp, HCA_ACCESS_REMOTE_READ, p->reth_rkey,
					  p->reth_va, p->reth_dmalen, &iova);

		c->t = resp_read(c->d, qp, p, verr, iova, c->t);
		qp->resp.epsn = e;
		qp->resp.msn = m;
	} else if (p->opcode == HM_OP_COMPARE_SWAP || p->opcode == HM_OP_FETCH_ADD) {
		const struct hm_atomic_saved *a = NULL;

		for (int i = 0; i < HM_ATOMIC_SAVED; i++)
			if (qp->resp.atomics[i].valid && qp->resp.atomics[i].psn == p->psn)
				a = &qp->resp.atomics[i];
		if (a) /* none: older than every result kept */
			send_atomic_ack(c->d, qp, p, a->msn, a->orig, c->t);
	} else if (p->ackreq) {
		send_ack(c->d, qp, p, HM_AETH_ACK, (qp->resp.epsn - 1) & HCA_PSN_MASK, c->t);
	}
	return RESP_DONE;
}

/* The opcode must continue the message in progress (IBA 9.7.5.1.6); an XRC_RECV request's
 * XRCETH must name a live XRC SRQ of the QP's XRC domain, within a message the SRQ it began
 * with (IBA annex A14). Either refusal is a NAK invalid request. */
static enum resp_step chk_op_seq(struct resp_pkt *c)
{
	if (c->fe.verdict == HM_RESP_FE_OPCODE_SEQ || c->fe.verdict == HM_RESP_FE_XRC_SRQ) {
		resp_fatal(c->d, c->qp, c->p, HM_AETH_NAK_INV_REQ, fe_verr(&c->fe), c->t);
		return RESP_DONE;
	}
	if (c->qp->type == HCA_QPT_XRC_RECV)
		c->qp->resp.xrc_srqn = c->p->xrc_srqn;
	return RESP_CLASSIFY;
}

/* Which kind of request, as the front end found it valid for the QP's type. */
static enum resp_step classify(struct resp_pkt *c)
{
	static const enum resp_step step[] = { [HM_RESP_FE_READ] = RESP_READ,
					       [HM_RESP_FE_ATOMIC] = RESP_ATOMIC,
					       [HM_RESP_FE_SEND] = RESP_SEND,
					       [HM_RESP_FE_WRITE] = RESP_WRITE };

	if (c->fe.verdict == HM_RESP_FE_OPCODE) {
		resp_fatal(c->d, c->qp, c->p, HM_AETH_NAK_INV_REQ, HCA_VERR_REQ_OPCODE, c->t);
		return RESP_DONE;
	}
	return step[c->fe.kind & 3];
}

static enum resp_step read_req(struct resp_pkt *c)
{
	c->t = resp_read(c->d, c->qp, c->p, fe_verr(&c->fe), c->fe.iova, c->t);
	return RESP_DONE;
}

static enum resp_step atomic_req(struct resp_pkt *c)
{
	c->t = resp_atomic(c->d, c->qp, c->p, &c->fe, c->t);
	return RESP_DONE;
}

/* No receive WQE for a message that needs one: RC answers with an RNR NAK carrying its own
 * min_rnr_timer (IBA 9.7.5.2.8), refusing the packet before it has any effect, so the retry
 * finds the QP as this packet found it (the rest of the message in flight is dropped
 * silently); UC drops the message (uc_no_rwqe). Nothing more if the WQE could not be read
 * (the QP is in ERR). */
static void no_rwqe(struct resp_pkt *c)
{
	struct hm_qp *qp = c->qp;

	if (qp->state == HCA_QPS_ERR)
		return;
	if (hca_qpt_reliable(qp->type)) {
		send_ack(c->d, qp, c->p, HM_AETH_RNR | (qp->attr.min_rnr_timer & 0x1f), c->p->psn,
			 c->t);
		qp->resp.nak_sent = true;
	} else {
		uc_no_rwqe(c->d, qp);
	}
}

static enum resp_step send_req(struct resp_pkt *c)
{
	struct hm_qp *qp = c->qp;
	uint32_t verr;

	if (c->first) {
		if (!take_rwqe(c->d, qp, &c->t)) {
			no_rwqe(c);
			return RESP_DONE;
		}
		qp->resp.in_msg = true;
		qp->resp.msg_kind = 0;
	}
	verr = scatter(c->d, qp, c->p->payload, c->p->paylen, c->p->frame, c->t);
	if (verr == HCA_VERR_RECV_LEN) {
		/* Message longer than the receive buffer: class C on RC (NAK invalid request,
		 * REM_INV_REQ_ERR), class D on UC (LOC_LEN_ERR). */
		resp_fatal(c->d, qp, c->p, HM_AETH_NAK_INV_REQ,
			   hca_qpt_reliable(qp->type) ? HCA_VERR_REQ_LEN : HCA_VERR_RECV_LEN, c->t);
		return RESP_DONE;
	}
	if (verr) {
		/* The receive WQE names memory we may not write: remote operational error for
		 * the requester, local protection error (the key check) here. */
		resp_fatal(c->d, qp, c->p, HM_AETH_NAK_REM_OP, verr, c->t);
		return RESP_DONE;
	}
	return RESP_COMPLETE;
}

/* WRITE: the first packet's RETH names the target; every packet is checked against the rkey
 * and the length the RETH announced. WRITE with immediate consumes a receive WQE at its last
 * packet (IBA 9.4.4). */
static enum resp_step write_req(struct resp_pkt *c)
{
	struct hm_qp *qp = c->qp;
	const struct hm_pkt *p = c->p;

	if (c->last && (c->op == HM_OP_WRITE_LAST_IMM || c->op == HM_OP_WRITE_ONLY_IMM) &&
	    !take_rwqe(c->d, qp, &c->t)) {
		/* UC: the message is lost here; the next one starts afresh. */
		bool uc = qp->type == HCA_QPT_UC && qp->state != HCA_QPS_ERR;

		if (uc)
			qp->resp.in_msg = false;
		no_rwqe(c);
		if (uc)
			qp->resp.uc_drop = false;
		return RESP_DONE;
	}
	if (c->first) {
		if (c->fe.verdict == HM_RESP_FE_NO_ACCESS) {
			resp_fatal(c->d, qp, p, HM_AETH_NAK_REM_ACCESS, HCA_VERR_REQ_NO_ACCESS, c->t);
			return RESP_DONE;
		}
		qp->resp.wr_va = p->reth_va;
		qp->resp.wr_rkey = p->reth_rkey;
		qp->resp.wr_left = p->reth_dmalen;
		qp->resp.wr_len = p->reth_dmalen;
		qp->resp.in_msg = true;
		qp->resp.msg_kind = 1;
	}
	/* the front end's length check against the RETH, then the rkey's */
	if (c->fe.verdict != HM_RESP_FE_EXECUTE) {
		resp_fatal(c->d, qp, p, fe_syndrome(&c->fe), fe_verr(&c->fe), c->t);
		return RESP_DONE;
	}
	if (p->paylen) /* cut-through: written as it comes through the pipeline */
		hm_dma_write_rx(c->d, c->fe.iova, p->payload, p->paylen,
				&(struct hm_ct){ .ready = c->t, .frame = p->frame },
				hm_port_tail_bytes(c->d, hm_qp_port(qp)));
	qp->resp.wr_va += p->paylen;
	qp->resp.wr_left -= p->paylen;
	return RESP_COMPLETE;
}

static enum resp_step complete(struct resp_pkt *c)
{
	struct hm_qp *qp = c->qp;
	const struct hm_pkt *p = c->p;

	/* SEND with Invalidate: its last packet invalidates the window its IETH names, or the
	 * request is invalid (IBA 9.4.1.1, 10.6.7.2.6) */
	if (c->last && (p->opcode == HM_OP_SEND_LAST_INV || p->opcode == HM_OP_SEND_ONLY_INV)) {
		uint32_t verr = hm_mw_invalidate(c->d, qp, p->ieth_rkey, true);

		if (verr) {
			resp_fatal(c->d, qp, p, HM_AETH_NAK_INV_REQ, verr, c->t);
			return RESP_DONE;
		}
	}
	if (hca_qpt_reliable(qp->type))
		qp->resp.epsn = (p->psn + 1) & HCA_PSN_MASK;
	if (c->last) {
		bool imm = c->op == HM_OP_SEND_LAST_IMM || c->op == HM_OP_SEND_ONLY_IMM ||
			   c->op == HM_OP_WRITE_LAST_IMM || c->op == HM_OP_WRITE_ONLY_IMM;

		qp->resp.msn++;
		qp->resp.in_msg = false;
		if ((c->cls & HM_OPC_SEND) || imm)
			recv_complete(c->d, qp, p, imm, (c->cls & HM_OPC_WRITE) != 0, c->t);
	}
	if (hca_qpt_reliable(qp->type) && p->ackreq)
		send_ack(c->d, qp, p, HM_AETH_ACK, p->psn, c->t);
	trace_resp_pkt(c->d->devno, qp->qpn, p->psn, p->opcode, p->paylen);
	return RESP_DONE;
}

static enum resp_step (*const resp_steps[])(struct resp_pkt *) = {
	[RESP_CHK_TYPE] = chk_type,	[RESP_COMM_EST] = comm_est,  [RESP_CHK_PSN] = chk_psn,
	[RESP_DUPLICATE] = duplicate,	[RESP_CHK_OP_SEQ] = chk_op_seq, [RESP_CLASSIFY] = classify,
	[RESP_READ] = read_req,		[RESP_ATOMIC] = atomic_req,  [RESP_SEND] = send_req,
	[RESP_WRITE] = write_req,	[RESP_COMPLETE] = complete,
};

sim_time_t hm_resp_rx(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *p, sim_time_t t)
{
	const struct hm_opcode_info *oi = hm_opcode_info(p->opcode);
	struct resp_pkt c = { .d = d,
			      .qp = qp,
			      .p = p,
			      .op = p->opcode & 0x1f,
			      .cls = oi->cls,
			      .first = oi->pos == HM_POS_FIRST || oi->pos == HM_POS_ONLY,
			      .last = oi->pos == HM_POS_LAST || oi->pos == HM_POS_ONLY };
	enum resp_step step = RESP_CHK_TYPE;

	/* the front end's answer is within pipe.resp_cycles (at least HM_RESP_FE_LATENCY) */
	c.t = sim_clock_after(&d->core, t, d->cfg.resp_cycles);
	if (qp->type != HCA_QPT_UD)
		front_end(&c, oi->pos, t);
	while (step != RESP_DONE) {
		trace_step_resp(d->devno, qp->qpn, p->psn, resp_step_names[step]);
		step = resp_steps[step](&c);
	}
	return c.t;
}

/* ---- the responder's part of the QP (model/ctx.h), as the QP commands change it ---- */

void hm_resp_create(struct hm_qp *qp)
{
	qp->resp.rsge = calloc(HM_MAX_SGE, sizeof(*qp->resp.rsge));
	qp->resp.rpf_buf = calloc(HM_MAX_SGE, HCA_SGE_BYTES);
	SIM_ASSERT(qp->resp.rsge && qp->resp.rpf_buf, "out of memory");
}

void hm_resp_destroy(struct hm_qp *qp)
{
	free(qp->resp.rsge);
	free(qp->resp.rpf_buf);
	qp->resp.rsge = NULL;
	qp->resp.rpf_buf = NULL;
}

void hm_resp_reset(struct hm_qp *qp)
{
	qp->resp.rq_ci = 0;
	qp->resp.epsn = 0;
	qp->resp.msn = 0;
	qp->resp.nak_sent = qp->resp.in_msg = qp->resp.uc_drop = false;
	qp->resp.recv_off = 0;
	qp->resp.rd_in = 0;
	qp->resp.comm_est = false;
	qp->resp.last_wqe_sent = false;
	memset(qp->resp.atomics, 0, sizeof(qp->resp.atomics)); /* no result survives a reset */
	qp->resp.rpf_valid = false;
	qp->resp.atomic_next = 0;
}

void hm_resp_flush(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	if (qp->has_srq) {
		/* Receives stay on the SRQ; the consumer learns, once, that the QP is done with
		 * it (IBA 11.6.3.1). */
		uint32_t data[6] = { qp->qpn, 0, 0, 0, 0, 0 };

		if (!qp->resp.last_wqe_sent)
			hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_LAST_WQE_REACHED, data);
		qp->resp.last_wqe_sent = true;
		return;
	}
	/* A WQE counts as done before its CQE is posted: a CQ overrun moves the QP to ERR from
	 * inside the post, and the flush that starts there begins after it. */
	while ((int32_t)(qp->rq_pi - qp->resp.rq_ci) > 0) {
		struct hca_cqe cqe = { 0 };

		cqe.qpn = qp->qpn;
		cqe.wqe_index = (uint16_t)qp->resp.rq_ci++;
		cqe.opcode = HCA_CQE_OP_RECV;
		cqe.status = HCA_WC_WR_FLUSH_ERR;
		cqe.vendor_err = HCA_VERR_FLUSHED;
		hm_cqe_post(d, qp->rcqn, &cqe, false, t);
	}
	qp->resp.in_msg = false;
}

void hm_resp_modify(struct hm_qp *qp, const struct hca_qp_attr *a, uint32_t mask)
{
	if (mask & HCA_QPA_RQ_PSN)
		qp->resp.epsn = a->rq_psn & HCA_PSN_MASK;
}
