/* doorbell + sched: UAR doorbells and the send-queue arbiter. A send doorbell carries the QP's
 * new producer index; the QP then has work and joins the arbiter's round-robin FIFO; the
 * requester takes one QP per packet from its head and puts it back at the tail while it still
 * has work, so QPs interleave packet by packet. Receive and SRQ doorbells move the producer
 * index the responder consumes from. A doorbell naming no QP, a QP in a state that takes no
 * posts, or an index that runs ahead of the ring by more than its size is ignored with a warn
 * event (the hardware cannot return an error to a posted write). */
#include "model/doorbell.h"
#include "model/cqe.h"
#include "model/qp_cmd.h"
#include "model/qpc.h"
#include "model/resp.h"
#include "model/sched.h"
#include "model/wqe_fetch.h"
#include "model/twin.h"
#include "sim/trace.h"

#include <stdlib.h>
#include <string.h>

/* A doorbell refused: counted and traced (queue: sq, rq or srq; reason as warn.doorbell). */
static bool bad_db(struct hm_dev *d, const char *queue, const char *reason, uint32_t obj,
		   uint32_t pi)
{
	d->dp->bad_doorbells++;
	trace_warn_doorbell(d->devno, queue, obj, pi, reason);
	return false;
}

void hm_doorbell_refuse(struct hm_dev *d, const char *queue, uint32_t num, const char *reason)
{
	bad_db(d, queue, reason, num, 0);
}

/* Ownership (docs/architecture.md#ownership): UAR page n is user context n's, page 0 the device
 * owner's. A doorbell reaches a queue only through its owner's page; the reason otherwise. */
static const char *db_owner(const struct hm_dev *d, uint32_t page, uint16_t uid)
{
	if (!hm_uar_open(d, page))
		return "no_uctx";
	return uid == page ? NULL : "foreign_uar";
}

/* A doorbell for a queue of uid through page: true, refused with the rule, unless uid owns
 * the page. */
static bool foreign_db(struct hm_dev *d, const char *queue, uint32_t page, uint16_t uid,
		       uint32_t obj, uint32_t pi)
{
	const char *why = db_owner(d, page, uid);

	if (why)
		bad_db(d, queue, why, obj, pi);
	return why != NULL;
}

/* An SQ doorbell: the doorbell is decoded, the QP's context looked up, then the sched block
 * checks the index and queues the QP (pipe.doorbell_cycles). */
static void sq_doorbell(struct hm_dev *d, uint32_t page, uint32_t obj, uint32_t pi16)
{
	sim_time_t t, t0 = sim_clock_edge(&d->core, sim_now(d->k));
	struct hm_sched_db_in in;
	struct hm_sched_db_out out;
	struct hm_qp *qp = hm_qpc_get(d, obj, &t0);

	if (!qp || !qp->sq_entries) { /* an XRC_RECV QP has no send queue */
		bad_db(d, "sq", "no_queue", obj, pi16);
		return;
	}
	if (foreign_db(d, "sq", page, qp->uid, obj, pi16))
		return;
	in = (struct hm_sched_db_in){ .cycle = sim_clock_cycles(&d->core, sim_clock_edge(&d->core, t0)),
				      .lat = (uint32_t)d->cfg.doorbell_cycles,
				      .qpn = obj,
				      .pi16 = (uint16_t)pi16,
				      .state = qp->state,
				      .sq_pi = qp->sq_pi,
				      .sq_done = qp->comp.sq_done,
				      .sq_entries = qp->sq_entries };
	hm_sched_doorbell(d, &in, &out);
	t = out.cycle * d->core.period_ps;
	if (out.verdict == HM_SCHED_BAD_STATE) {
		bad_db(d, "sq", "bad_state", obj, pi16);
		return;
	}
	if (out.verdict == HM_SCHED_BAD_INDEX) {
		bad_db(d, "sq", "beyond_ring", obj, pi16);
		return;
	}
	qp->sq_pi = out.new_pi;
	trace_db_sq(d->devno, obj, out.new_pi);
	if (out.verdict == HM_SCHED_FLUSH) {
		/* Posts to a QP in ERR or SQE complete flushed (IBA 10.3.1). */
		hm_qp_flush(d, qp, t);
		return;
	}
	hm_wqe_prefetch(d, qp, t); /* the WQE fetcher starts at once */
	hm_sched_kick(d, t);
}

static void rq_doorbell(struct hm_dev *d, uint32_t page, uint32_t obj, uint32_t pi16,
			sim_time_t t)
{
	struct hm_qp *qp = hm_qpc_get(d, obj, &t);
	uint32_t pi;

	if (qp && foreign_db(d, "rq", page, qp->uid, obj, pi16))
		return;
	if (!qp || qp->has_srq || qp->state == HCA_QPS_RESET) {
		bad_db(d, "rq", qp ? "bad_state" : "no_queue", obj, pi16);
		return;
	}
	pi = hm_extend16(qp->rq_pi, pi16);
	if (pi - qp->resp.rq_ci > qp->rq_entries) {
		bad_db(d, "rq", "beyond_ring", obj, pi16);
		return;
	}
	qp->rq_pi = pi;
	trace_db_rq(d->devno, obj, pi);
	if (qp->state == HCA_QPS_ERR)
		hm_qp_flush(d, qp, t);
	else
		hm_rwqe_prefetch(d, qp, t);
}

static void srq_doorbell(struct hm_dev *d, uint32_t page, uint32_t obj, uint32_t pi16)
{
	struct hm_srq *srq = hm_srq_get(d, obj);
	uint32_t pi;

	if (!srq) {
		bad_db(d, "srq", "no_queue", obj, pi16);
		return;
	}
	if (foreign_db(d, "srq", page, srq->uid, obj, pi16))
		return;
	pi = hm_extend16(srq->pi, pi16);
	if (pi - srq->ci > srq->entries) {
		bad_db(d, "srq", "beyond_ring", obj, pi16);
		return;
	}
	srq->pi = pi;
	trace_db_srq(d->devno, obj, pi);
}

void hm_doorbell_write64(struct hm_dev *d, uint32_t page, uint32_t off, uint64_t val)
{
	uint32_t obj = (uint32_t)val & 0xffffffu, pi16 = (uint32_t)(val >> 32) & 0xffffu;
	sim_time_t t = sim_clock_after(&d->core, sim_now(d->k), d->cfg.doorbell_cycles);
	const struct hm_cq *cq;

	switch (off) {
	case HCA_UAR_SQ_DB:
		sq_doorbell(d, page, obj, pi16);
		return;
	case HCA_UAR_RQ_DB:
		rq_doorbell(d, page, obj, pi16, t);
		return;
	case HCA_UAR_SRQ_DB:
		srq_doorbell(d, page, obj, pi16);
		return;
	case HCA_UAR_CQ_DB:
		cq = hm_cq_get(d, obj);
		if (!cq || !foreign_db(d, "cq", page, cq->uid, obj, 0))
			hm_cq_doorbell(d, val);
		return;
	default:
		d->dp->bad_doorbells++;
		trace_warn_mmio_wr(d->devno, off, val, 8, "uar_offset");
	}
}

void hm_doorbell_bf(struct hm_dev *d, uint32_t page, const uint8_t *data, unsigned len)
{
	uint64_t db;
	uint32_t qpn, pi16, wlen = len - 16;
	struct hm_qp *qp;
	sim_time_t t = sim_clock_edge(&d->core, sim_now(d->k));

	memcpy(&db, data, sizeof(db));
	qpn = (uint32_t)db & 0xffffffu;
	pi16 = (uint32_t)(db >> 32) & 0xffffu;
	qp = len >= 16 + HCA_WQE_BASE_BYTES ? hm_qpc_get(d, qpn, &t) : NULL;
	if (qp && db_owner(d, page, qp->uid))
		qp = NULL; /* another context's QP: nothing stored, the doorbell is refused */
	/* The WQE goes straight into the QP's WQE buffer when it is the next one after every
	 * WQE already there or being read (the fetcher has nothing to read for it): alone, or
	 * appended to the window of WQEs fetched ahead. Otherwise (earlier WQEs are still only
	 * in host memory) the write is an ordinary doorbell: the WQE is in host memory too.
	 * Nothing is stored unless the WQE fits the ring: past a full send queue its slot is the
	 * oldest WQE's, which may still be being sent (the doorbell is then refused, below). */
	if (qp && qp->sq_entries && len <= HCA_UAR_BF_BYTES && qp->state == HCA_QPS_RTS &&
	    ((qp->sq_pi + 1) & 0xffffu) == pi16)
		hm_fetch_take(d, qp, data + 16, wlen, t);
	hm_doorbell_write64(d, page, HCA_UAR_SQ_DB, db);
}

