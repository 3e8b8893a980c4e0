/* req: the requester (IBA 9.7.1 "requester side", split as Linux rxe does). One engine per
 * device takes QPs from the arbiter one packet at a time: it fetches the next WQE (wqe_fetch),
 * validates it, cuts the message into packets of the path MTU, assigns PSNs, gathers the
 * payload through the memory keys and hands each packet to the port. RC messages wait for the
 * completer; UC and UD messages complete when their last packet has left. READ and atomic
 * requests are bounded by max_rd_atomic, and a fenced WQE waits for them to finish. */
#include "model/req.h"
#include "model/comp.h"
#include "model/mkey.h"
#include "model/port.h"
#include "model/qp.h"
#include "model/wqe_fetch.h"
#include "sim/trace.h"

#include <endian.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *wqe_at(struct hm_qp *qp, uint32_t idx)
{
	return qp->fetch.wqe_buf + (size_t)(idx % qp->sq_entries) * qp->sq_stride;
}

/* Complete the WQE at sq_next as failed: a CQE whatever its signaled flag (IBA 10.8.3), then
 * the QP leaves RTS: RC to ERR, UC and UD to SQE; both flush the WQEs after it. */
static void req_fail(struct hm_dev *d, struct hm_qp *qp, uint32_t verr, uint8_t op,
		     sim_time_t t)
{
	uint32_t wqe = qp->req.sq_next++;

	/* The WQE is over before its error CQE is posted (a CQ overrun there flushes the rest). */
	qp->req.cur_started = false;
	trace_req_fail(d->devno, qp->qpn, wqe, hca_verr_status(verr));
	hm_comp_fail_local(d, qp, wqe, op, verr, t);
	hm_qp_error(d, qp, hca_qpt_reliable(qp->type) ? HCA_QPS_ERR : HCA_QPS_SQE, t);
}

/* Fetch and validate WQE sq_next. false: its read is still under way, or it failed
 * (completed with an error). */
static bool req_fetch(struct hm_dev *d, struct hm_qp *qp, sim_time_t *t)
{
	uint8_t *w = wqe_at(qp, qp->req.sq_next);
	const struct hca_wqe_ctrl *c = (const void *)w;
	struct hm_flight *f = &qp->req.flight[qp->req.sq_next % qp->sq_entries];
	uint64_t len;
	uint32_t npsn, verr;
	uint8_t st;

	switch (hm_wqe_fetch(d, qp, qp->req.sq_next, t)) {
	case HM_WQE_WAIT:
		return false; /* back in the arbiter when its read completes */
	case HM_WQE_FAILED:
		/* The WQE cannot be read: a catastrophic error of the work queue, with no
		 * completion of its own (everything is flushed). */
		hm_qp_fatal(d, qp, *t);
		return false;
	}
	st = hm_wqe_check(d, qp, w, &len, &verr);
	if (st != HCA_WC_SUCCESS) {
		req_fail(d, qp, verr, c->opcode, *t);
		return false;
	}
	/* Every message but an atomic spans one PSN per MTU (a READ: one response per MTU); a
	 * bind or invalidation none (its last PSN is the one before). */
	npsn = hca_wqe_op_class(c->opcode) == HCA_WQE_CLASS_LOCAL ? 0
	       : hca_wqe_atomic(c->opcode) || !len
		       ? 1
		       : (uint32_t)((len + hm_qp_mtu(d, qp) - 1) / hm_qp_mtu(d, qp));
	*f = (struct hm_flight){ .wqe = qp->req.sq_next,
				 .first_psn = qp->req.sq_psn,
				 .last_psn = (qp->req.sq_psn + npsn - 1) & HCA_PSN_MASK,
				 .op = c->opcode,
				 .signaled = qp->sq_sig_all || (c->flags & HCA_WQE_F_SIGNALED),
				 .len = (uint32_t)len };
	hm_comp_track(qp, qp->req.sq_next, qp->req.sq_psn);
	qp->req.cur_started = true;
	qp->req.cur_off = 0;
	trace_req_wqe(d->devno, qp->qpn, qp->req.sq_next, c->opcode, len, qp->req.sq_psn);
	return true;
}

/* Gather len bytes of the message at offset off into buf: HCA_VERR_NONE, or the check that
 * failed. */
static uint32_t gather(struct hm_dev *d, struct hm_qp *qp, const uint8_t *w, uint32_t off,
		   uint8_t *buf, uint32_t len, sim_time_t *t, struct hm_ct *ct)
{
	const struct hca_wqe_ctrl *c = (const void *)w;
	uint32_t verr;

	if (c->flags & HCA_WQE_F_INLINE) {
		memcpy(buf, w + HCA_WQE_BASE_BYTES + off, len);
		return HCA_VERR_NONE;
	}
	if (hm_sge_copy(d, qp->pdn, (const void *)(w + HCA_WQE_BASE_BYTES), c->num_sge, off, buf,
			len, false, t, &verr, ct) < len && !verr)
		verr = HCA_VERR_WQE_MSG_LEN; /* the list is shorter than the message it made */
	return verr;
}

/* Headers common to every packet of this QP. */
static void base_headers(struct hm_dev *d, struct hm_qp *qp, const struct hca_av *av,
			 struct hm_pkt *p)
{
	const struct hm_port *port = &d->ports[hm_qp_port(qp) - 1];

	*p = hm_pkt_zero;
	p->sl = av->sl;
	p->dlid = av->dlid;
	p->slid = port->lid | av->src_path_bits;
	p->has_grh = av->is_global || port->link_layer == 2;
	p->traffic_class = av->traffic_class;
	p->flow_label = av->flow_label;
	p->hop_limit = av->hop_limit ? av->hop_limit : 64;
	memcpy(p->sgid, port->gids[av->sgid_index < port->ngids ? av->sgid_index : 0], 16);
	memcpy(p->dgid, av->dgid, 16);
	memcpy(p->smac, port->mac, 6);
	hm_roce_mac_of(av->dgid, p->dmac);
	p->udp_sport = (uint16_t)(0xc000 | (qp->qpn & 0x3fff));
	p->pkey = port->pkeys[qp->attr.pkey_index < 64 ? qp->attr.pkey_index : 0];
	p->migreq = qp->attr.path_mig_state == HCA_MIG_MIGRATED; /* IBA 9.2.5, 17.2.8 */
}

static uint8_t send_opcode(uint8_t op, bool first, bool last, bool uc)
{
	uint8_t o;
	bool imm = op == HCA_WQE_OP_SEND_IMM || op == HCA_WQE_OP_RDMA_WRITE_IMM;
	bool inv = op == HCA_WQE_OP_SEND_INV; /* RC only (wqe.def) */

	if (inv)
		o = first && last ? HM_OP_SEND_ONLY_INV
		    : first	  ? HM_OP_SEND_FIRST
		    : last	  ? HM_OP_SEND_LAST_INV
				  : HM_OP_SEND_MIDDLE;
	else if (op == HCA_WQE_OP_SEND || op == HCA_WQE_OP_SEND_IMM)
		o = first && last ? (imm ? HM_OP_SEND_ONLY_IMM : HM_OP_SEND_ONLY)
		    : first	  ? HM_OP_SEND_FIRST
		    : last	  ? (imm ? HM_OP_SEND_LAST_IMM : HM_OP_SEND_LAST)
				  : HM_OP_SEND_MIDDLE;
	else
		o = first && last ? (imm ? HM_OP_WRITE_ONLY_IMM : HM_OP_WRITE_ONLY)
		    : first	  ? HM_OP_WRITE_FIRST
		    : last	  ? (imm ? HM_OP_WRITE_LAST_IMM : HM_OP_WRITE_LAST)
				  : HM_OP_WRITE_MIDDLE;
	return uc ? (uint8_t)(o | HM_OP_UC) : o;
}

/* ---- the requester's engine: small steps, each returning the next (rxe's req states) ---- */

#define REQ_STEPS(X)                                                                               \
	X(CHK_QUEUE)  /* a WQE to send, and no RNR wait */                                        \
	X(CHK_STATE)  /* RTS starts new WQEs; SQD finishes the one begun; SQE, ERR send nothing */ \
	X(FETCH)      /* fetch and validate the next WQE (it may fail it) */                     \
	X(CHK_RD_ATOMIC) /* a READ or atomic within max_rd_atomic */                             \
	X(CHK_FENCE)  /* a fenced WQE waits for the READs and atomics before it */               \
	X(LOCAL)      /* a bind or invalidation: after every WQE before it, in the key block */  \
	X(HEADERS)    /* the packet's headers, after the engine's per-packet latency */          \
	X(BUILD_READ) /* a READ request (or the rest of one after a lost response) */            \
	X(BUILD_ATOMIC) /* an atomic request */                                                   \
	X(BUILD_SEND) /* the next packet of a SEND or WRITE: headers, payload gathered */         \
	X(XMIT)       /* hand the packet to the port */                                           \
	X(ADVANCE)    /* its message's last packet: the next WQE (UC, UD: completed) */           \
	X(ARM_TIMER)  /* RC: the local ACK timer, if none runs */                                 \
	X(SKIP)       /* cannot send now: the arbiter's next QP */                                \
	X(FAILED)     /* its payload could not be gathered: the WQE failed, the step is spent */  \
	X(SENT)

enum req_step {
#define X(s) REQ_##s,
	REQ_STEPS(X)
#undef X
};

static const char *const req_step_names[] = {
#define X(s) #s,
	REQ_STEPS(X)
#undef X
};

const char *const *hm_req_step_names(size_t *n)
{
	*n = sizeof(req_step_names) / sizeof(req_step_names[0]);
	return req_step_names;
}

/* One packet of a QP on its way through the steps. */
struct req_pkt {
	struct hm_dev *d;
	struct hm_qp *qp;
	sim_time_t t;         /* the engine's time */
	sim_time_t issue;     /* when the packet's reads were issued */
	sim_time_t end;       /* when its last bit leaves */
	const struct hca_wqe_ctrl *c; /* the WQE */
	struct hm_flight *f;  /* its flight entry */
	struct hm_pkt p;      /* the packet */
	uint32_t paylen;      /* payload bytes */
	bool last;            /* the message's last packet */
	struct hm_ct ct;      /* cut-through: when the payload keeps ahead of the wire */
};

static enum req_step chk_queue(struct req_pkt *r)
{
	return r->qp->req.sq_next == r->qp->sq_pi || r->qp->comp.rnr_wait ? REQ_SKIP : REQ_CHK_STATE;
}

/* SQD: no new WQE is started (IBA 10.3.1.2); SQE, ERR: nothing is sent. */
static enum req_step chk_state(struct req_pkt *r)
{
	uint8_t st = r->qp->state;

	if (!r->qp->req.cur_started)
		return st == HCA_QPS_RTS ? REQ_FETCH : REQ_SKIP;
	return st == HCA_QPS_RTS || st == HCA_QPS_SQD ? REQ_CHK_RD_ATOMIC : REQ_SKIP;
}

static enum req_step fetch(struct req_pkt *r)
{
	return req_fetch(r->d, r->qp, &r->t) ? REQ_CHK_RD_ATOMIC : REQ_SKIP;
}

/* The completer re-queues the QP when a response arrives. */
static enum req_step chk_rd_atomic(struct req_pkt *r)
{
	const struct hm_qp *qp = r->qp;

	r->c = (const void *)wqe_at(r->qp, qp->req.sq_next);
	r->f = &r->qp->req.flight[qp->req.sq_next % qp->sq_entries];
	if (hca_wqe_rd_atomic(r->c->opcode) &&
	    qp->req.rd_out >= (qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1))
		return REQ_SKIP;
	return REQ_CHK_FENCE;
}

static enum req_step chk_fence(struct req_pkt *r)
{
	struct hm_qp *qp = r->qp;

	if (qp->req.cur_off == 0 && (r->c->flags & HCA_WQE_F_FENCE) && qp->req.rd_out)
		return REQ_SKIP;
	return hca_wqe_op_class(r->c->opcode) == HCA_WQE_CLASS_LOCAL ? REQ_LOCAL : REQ_HEADERS;
}

/* A memory window bind or invalidation (IBA 10.6.7.2) sends nothing: it runs in the key block
 * once every WQE before it has completed (the completer wakes the QP then), so that its
 * completion stays in order and the accesses before it see the window as it was. Success
 * completes it at once; a failed check completes it with MW_BIND_ERR and the QP leaves RTS. */
static enum req_step local_op(struct req_pkt *r)
{
	struct hm_qp *qp = r->qp;
	const uint8_t *w = (const uint8_t *)r->c;
	uint32_t verr;

	if (qp->comp.sq_done != qp->req.sq_next) {
		qp->req.local_wait = true;
		return REQ_SKIP;
	}
	qp->req.local_wait = false;
	r->t = sim_clock_after(&r->d->core, r->t, r->d->cfg.req_cycles);
	if (r->c->opcode == HCA_WQE_OP_BIND_MW)
		verr = hm_mw_bind(r->d, qp, qp->req.sq_next, (const void *)(w + sizeof(*r->c)));
	else
		verr = hm_mw_invalidate(r->d, qp, be32toh(r->c->imm_data), false);
	if (verr) {
		req_fail(r->d, qp, verr, r->c->opcode, r->t);
		return REQ_FAILED;
	}
	qp->req.cur_started = false;
	qp->req.sq_next++;
	hm_comp_sent(r->d, qp, r->f, r->t);
	hm_comp_timer(r->d, qp, r->t); /* nothing outstanding: the timer stops */
	return REQ_SENT;
}

static enum req_step headers(struct req_pkt *r)
{
	struct hm_qp *qp = r->qp;
	const struct hca_wqe_ud *ud = (const void *)(r->c + 1);

	base_headers(r->d, qp, qp->type == HCA_QPT_UD ? &ud->av : &qp->attr.av, &r->p);
	r->p.dqpn = qp->type == HCA_QPT_UD ? ud->remote_qpn : qp->attr.dest_qpn;
	r->p.psn = qp->req.sq_psn;
	r->t = sim_clock_after(&r->d->core, r->t, r->d->cfg.req_cycles);
	/* The gather's read requests go out now; the packet leaves as soon as the data coming
	 * back keeps ahead of the wire (cut-through). The engine moves on to the next packet
	 * meanwhile (reads overlap, bounded by PCIe tags and bandwidth in the PCIe model). */
	r->issue = r->t;
	r->last = true;
	if (r->c->opcode == HCA_WQE_OP_RDMA_READ)
		return REQ_BUILD_READ;
	return hca_wqe_atomic(r->c->opcode) ? REQ_BUILD_ATOMIC : REQ_BUILD_SEND;
}

/* After a lost response the READ is asked again from the first missing one (cur_off > 0):
 * the rest of the data, at that PSN (IBA 9.7.5.1.6). Its last PSN, fixed at the fetch, is
 * sq_psn + n - 1 either way. */
static enum req_step build_read(struct req_pkt *r)
{
	struct hm_qp *qp = r->qp;
	const struct hca_wqe_rdma *rd = (const void *)(r->c + 1);
	unsigned mtu = hm_qp_mtu(r->d, qp);
	uint32_t left = r->f->len - qp->req.cur_off, n = left ? (left + mtu - 1) / mtu : 1;

	r->p.opcode = HM_OP_READ_REQUEST;
	r->p.reth_va = rd->remote_addr + qp->req.cur_off;
	r->p.reth_rkey = rd->rkey;
	r->p.reth_dmalen = left;
	r->p.ackreq = true;
	qp->req.sq_psn = (qp->req.sq_psn + n) & HCA_PSN_MASK;
	qp->req.rd_out++;
	return REQ_XMIT;
}

static enum req_step build_atomic(struct req_pkt *r)
{
	struct hm_qp *qp = r->qp;
	const struct hca_wqe_rdma *rd = (const void *)(r->c + 1);
	bool cs = r->c->opcode == HCA_WQE_OP_ATOMIC_CMP_SWP;

	r->p.opcode = cs ? HM_OP_COMPARE_SWAP : HM_OP_FETCH_ADD;
	r->p.atomic_va = rd->remote_addr;
	r->p.atomic_rkey = rd->rkey;
	r->p.atomic_swap_add = cs ? rd->swap : rd->compare_add;
	r->p.atomic_compare = rd->compare_add;
	r->p.ackreq = true;
	qp->req.sq_psn = (qp->req.sq_psn + 1) & HCA_PSN_MASK;
	qp->req.rd_out++;
	return REQ_XMIT;
}

/* An XRC_SEND QP's packets: the XRC class, and the XRCETH from the WQE. */
static void xrc_class(struct req_pkt *r)
{
	if (r->qp->type == HCA_QPT_XRC_SEND) {
		r->p.opcode |= HM_OP_XRC;
		r->p.xrc_srqn = ((const struct hca_wqe_rdma *)(r->c + 1))->xrc_srqn & HCA_QPN_MASK;
	}
}

/* SEND, WRITE (+IMM): one MTU of the message from cur_off. */
static enum req_step build_send(struct req_pkt *r)
{
	struct hm_qp *qp = r->qp;
	const struct hca_wqe_ctrl *c = r->c;
	const struct hca_wqe_rdma *rd = (const void *)(c + 1);
	const struct hca_wqe_ud *ud = (const void *)(c + 1);
	unsigned mtu = hm_qp_mtu(r->d, qp);
	bool first = qp->req.cur_off == 0;
	uint32_t verr;

	r->paylen = r->f->len - qp->req.cur_off < mtu ? r->f->len - qp->req.cur_off : mtu;
	r->last = qp->req.cur_off + r->paylen == r->f->len;
	if (qp->type == HCA_QPT_UD) {
		r->p.opcode = c->opcode == HCA_WQE_OP_SEND_IMM ? HM_OP_UD_SEND_ONLY_IMM
							       : HM_OP_UD_SEND_ONLY;
		/* IBA 10.2.5: a Q_Key with the high bit set means the QP's own. */
		r->p.deth_qkey = (ud->remote_qkey & HCA_QKEY_PRIVILEGED) ? qp->attr.qkey
									: ud->remote_qkey;
		r->p.deth_sqpn = qp->qpn;
	} else {
		r->p.opcode = send_opcode(c->opcode, first, r->last, qp->type == HCA_QPT_UC);
	}
	if (first &&
	    (c->opcode == HCA_WQE_OP_RDMA_WRITE || c->opcode == HCA_WQE_OP_RDMA_WRITE_IMM)) {
		r->p.reth_va = rd->remote_addr;
		r->p.reth_rkey = rd->rkey;
		r->p.reth_dmalen = r->f->len;
	}
	r->p.imm = be32toh(c->imm_data); /* the WQE holds the wire bytes */
	r->p.ieth_rkey = r->p.imm;       /* SEND_INV: the R_Key to invalidate, in the same field */
	r->p.se = r->last && (c->flags & HCA_WQE_F_SOLICITED);
	r->p.ackreq = r->last && hca_qpt_reliable(qp->type);
	r->p.paylen = r->paylen;
	xrc_class(r);
	/* gathered straight into the frame (its headers are known now) */
	verr = gather(r->d, qp, (const uint8_t *)c, qp->req.cur_off,
		      hm_port_frame_new(r->d, hm_qp_port(qp), &r->p), r->paylen, &r->t, &r->ct);
	if (verr) {
		hm_port_frame_free(&r->p);
		req_fail(r->d, qp, verr, c->opcode, r->t);
		return REQ_FAILED;
	}
	qp->req.sq_psn = (qp->req.sq_psn + 1) & HCA_PSN_MASK;
	qp->req.cur_off += r->paylen;
	return REQ_XMIT;
}

static enum req_step xmit(struct req_pkt *r)
{
	struct hm_qp *qp = r->qp;

	if (hm_psn_cmp(qp->req.sq_psn, qp->req.sent_psn) > 0)
		qp->req.sent_psn = qp->req.sq_psn;
	xrc_class(r);
	r->end = hm_port_send(r->d, hm_qp_port(qp), &r->p, r->issue, r->ct.need);
	qp->stats.tx_pkts++;
	qp->stats.tx_bytes += r->paylen;
	trace_req_pkt(r->d->devno, qp->qpn, r->p.psn, r->p.opcode, r->paylen);
	return r->last ? REQ_ADVANCE : REQ_ARM_TIMER;
}

static enum req_step advance(struct req_pkt *r)
{
	struct hm_qp *qp = r->qp;

	qp->req.cur_started = false;
	qp->req.sq_next++;
	if (!hca_qpt_reliable(qp->type))
		hm_comp_sent(r->d, qp, r->f, r->end);
	return REQ_ARM_TIMER;
}

/* The timer counts from the oldest unacknowledged packet's departure. The next packet may
 * follow as soon as this one's reads are issued, but never more than pipe.tx_window_ns of
 * frames ahead of the link. */
static enum req_step arm_timer(struct req_pkt *r)
{
	struct hm_qp *qp = r->qp;
	sim_time_t window = r->d->cfg.tx_window_ns * SIM_PS_PER_NS;

	if (hca_qpt_reliable(qp->type) && !qp->tmr.on && !qp->comp.rnr_wait)
		hm_comp_timer(r->d, qp, r->end);
	r->t = r->end > r->issue + window ? r->end - window : r->issue;
	return REQ_SENT;
}

static enum req_step (*const req_steps[])(struct req_pkt *) = {
	[REQ_CHK_QUEUE] = chk_queue,	     [REQ_CHK_STATE] = chk_state,
	[REQ_FETCH] = fetch,		     [REQ_CHK_RD_ATOMIC] = chk_rd_atomic,
	[REQ_CHK_FENCE] = chk_fence,	     [REQ_LOCAL] = local_op,
	[REQ_HEADERS] = headers,
	[REQ_BUILD_READ] = build_read,
	[REQ_BUILD_ATOMIC] = build_atomic,   [REQ_BUILD_SEND] = build_send,
	[REQ_XMIT] = xmit,		     [REQ_ADVANCE] = advance,
	[REQ_ARM_TIMER] = arm_timer,
};

/* Run qp's next packet through the steps from *t; true if the engine's step was spent on it
 * (a packet sent, or its WQE failed; *t: when the engine may take its next step). */
bool hm_req_run(struct hm_dev *d, struct hm_qp *qp, sim_time_t *t)
{
	struct req_pkt r;
	enum req_step step = REQ_CHK_QUEUE;

	memset(&r, 0, sizeof(r));
	r.d = d;
	r.qp = qp;
	r.t = *t;
	while (step != REQ_SKIP && step != REQ_FAILED && step != REQ_SENT) {
		trace_step_req(d->devno, qp->qpn, qp->req.sq_psn, req_step_names[step]);
		step = req_steps[step](&r);
	}
	*t = r.t;
	return step != REQ_SKIP;
}

bool hm_req_more(const struct hm_qp *qp)
{
	return qp->req.sq_next != qp->sq_pi &&
	       (qp->state == HCA_QPS_RTS || (qp->state == HCA_QPS_SQD && qp->req.cur_started));
}

bool hm_req_rewind(struct hm_dev *d, struct hm_qp *qp, uint32_t psn)
{
	unsigned mtu = hm_qp_mtu(d, qp);
	uint32_t w;

	/* The WQE holding psn: the oldest whose last PSN is not before it. */
	for (w = qp->comp.sq_done; w != qp->req.sq_next; w++) {
		struct hm_flight *f = &qp->req.flight[w % qp->sq_entries];

		if (hm_psn_cmp(f->last_psn, psn) >= 0)
			break;
	}
	if (w == qp->req.sq_next && !qp->req.cur_started)
		return false; /* nothing sent at or after psn */
	qp->req.rd_out = 0;
	for (uint32_t i = qp->comp.sq_done; i != w; i++)
		qp->req.rd_out += hca_wqe_rd_atomic(qp->req.flight[i % qp->sq_entries].op);
	if (w != qp->req.sq_next || qp->req.cur_started) {
		struct hm_flight *f = &qp->req.flight[w % qp->sq_entries];
		bool at = hca_wqe_atomic(f->op);
		bool rd = f->op == HCA_WQE_OP_RDMA_READ;

		qp->req.sq_next = w;
		qp->req.cur_started = true;
		uint32_t next_rsp = qp->comp.next_rsp[w % qp->sq_entries];

		if (rd && hm_psn_cmp(psn, next_rsp) > 0)
			psn = next_rsp; /* responses before psn are missing too */
		if (at || (rd && hm_psn_cmp(psn, f->first_psn) <= 0)) {
			/* An atomic is asked again whole; so is a READ with no response taken. */
			qp->req.cur_off = 0;
			qp->req.sq_psn = f->first_psn;
		} else {
			/* A SEND or WRITE resumes inside the message; a READ asks for the rest,
			 * the responses before psn being scattered already. */
			qp->req.cur_off = ((psn - f->first_psn) & HCA_PSN_MASK) * mtu;
			qp->req.sq_psn = psn;
		}
	}
	trace_req_rewind(d->devno, qp->qpn, qp->req.sq_psn, qp->req.sq_next);
	return true;
}

void hm_req_retired(struct hm_dev *d, struct hm_qp *qp, const struct hm_flight *f, uint8_t status)
{
	(void)d;
	if (qp->comp.sq_done == qp->req.sq_next && qp->req.cur_started) {
		/* The oldest is the message being sent (again): what is left of it stays
		 * unsent. A READ or atomic whose responses came in the meantime is done: the
		 * next message starts after its PSNs. */
		qp->req.cur_started = false;
		qp->req.sq_next++;
		if (status == HCA_WC_SUCCESS)
			qp->req.sq_psn = (f->last_psn + 1) & HCA_PSN_MASK;
	}
	if (hca_wqe_rd_atomic(f->op) && qp->req.rd_out)
		qp->req.rd_out--;
}

/* ---- the requester's part of the QP (model/ctx.h), as the QP commands change it ---- */

void hm_req_create(struct hm_qp *qp)
{
	qp->req.flight = calloc(qp->sq_entries ? qp->sq_entries : 1, sizeof(*qp->req.flight));
	SIM_ASSERT(qp->req.flight != NULL, "out of memory");
}

void hm_req_destroy(struct hm_qp *qp)
{
	free(qp->req.flight);
	qp->req.flight = NULL;
}

void hm_req_reset(struct hm_qp *qp)
{
	qp->req.sq_next = 0;
	qp->req.sq_psn = 0;
	qp->req.cur_off = 0;
	qp->req.cur_started = false;
	qp->req.rd_out = 0;
	qp->req.local_wait = false;
}

void hm_req_flush(struct hm_qp *qp)
{
	qp->req.sq_next = qp->sq_pi;
	qp->req.cur_started = false;
	qp->req.rd_out = 0;
	qp->req.local_wait = false;
}

void hm_req_modify(struct hm_qp *qp, const struct hca_qp_attr *a, uint32_t mask)
{
	if (mask & HCA_QPA_SQ_PSN) {
		qp->req.sq_psn = a->sq_psn & HCA_PSN_MASK;
		qp->req.sent_psn = qp->req.sq_psn;
	}
}
