/* comp: the completer (IBA 9.7.5.1 "requester side, response handling"). ACKs retire the RC
 * WQEs whose last PSN they cover, in order; READ responses are scattered into the READ WQE's
 * list and retire it at its last PSN; atomic ACKs return the original value. A NAK ends the
 * WQE it names with the error the syndrome says and moves the QP to ERR, which flushes the rest.
 * A sequence NAK or a local ACK timeout goes back to the PSN to resend (retry_cnt bounds them);
 * an RNR NAK waits the responder's timer first (rnr_retry bounds them, 7 = for ever). The
 * requester goes back through the sq_retry wire and lets go of each retired WQE through
 * sq_retired (model/hca.h). Also here: arming the local ACK timer and the RNR wait and
 * handling their expiries (model/timers.c keeps the timers), the local completions of UC and
 * UD messages, and the completer's part of a flush. */
#include "model/comp.h"
#include "model/cqe.h"
#include "model/fcov.h"
#include "model/mkey.h"
#include "model/port.h"
#include "model/qp.h"
#include "model/qpc.h"
#include "model/timers.h"
#include "sim/trace.h"

#include <stdlib.h>
#include <string.h>

static uint8_t *wqe_at(struct hm_qp *qp, uint32_t idx)
{
	return qp->fetch.wqe_buf + (size_t)(idx % qp->sq_entries) * qp->sq_stride;
}

/* Forward progress (IBA 9.7.6.1) is progress of the oldest unfinished WQE: an ACK or NAK
 * that retires it or acknowledges more of it, an in-order READ response, an atomic
 * acknowledgement. Each reloads both retry counters and restarts the timer, however far other
 * acknowledgements have reached already (docs/timing.md#forward-progress). */
static void progress(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.nak_seen = false;
	qp->comp.rd_gap = false;
	hm_comp_timer(d, qp, t);
}

/* The oldest outstanding WQE's flight record. */
static struct hm_flight *oldest(struct hm_qp *qp)
{
	return &qp->req.flight[qp->comp.sq_done % qp->sq_entries];
}

/* The oldest outstanding WQE's progress mark (hm_comp_qp.next_rsp). */
static uint32_t *next_rsp(struct hm_qp *qp)
{
	return &qp->comp.next_rsp[qp->comp.sq_done % qp->sq_entries];
}

static bool nothing_outstanding(const struct hm_qp *qp)
{
	return qp->comp.sq_done == qp->req.sq_next && !qp->req.cur_started;
}

/* Retire the oldest outstanding WQE: successfully (HCA_VERR_NONE), or failing the check verr
 * names (its completion status is verr's). */
static void retire(struct hm_dev *d, struct hm_qp *qp, uint32_t verr, sim_time_t t)
{
	struct hm_flight *f = oldest(qp);
	uint8_t status = hca_verr_status(verr);

	/* The requester lets go of it (the message being sent again stops there), and a WQE
	 * that waited for max_rd_atomic or a fence may go. */
	d->wire.sq_retired(d, qp, f, status);
	if (hca_wqe_rd_atomic(f->op))
		d->wire.sq_wake(d, qp, t);
	qp->comp.sq_done++; /* before the post: see flush_to */
	if (f->signaled || status != HCA_WC_SUCCESS) {
		struct hca_cqe cqe = { 0 };

		cqe.qpn = qp->qpn;
		cqe.wqe_index = (uint16_t)f->wqe;
		cqe.opcode = hm_cqe_op_of(f->op);
		cqe.status = status;
		cqe.vendor_err = verr;
		cqe.is_send = 1;
		if (f->op == HCA_WQE_OP_RDMA_READ)
			cqe.byte_len = f->len;
		else if (hca_wqe_atomic(f->op))
			cqe.byte_len = 8;
		hm_cqe_post(d, qp->scqn, &cqe, false, t);
	}
	trace_comp_done(d->devno, qp->qpn, f->wqe, status);
	hm_qp_check_drained(d, qp);
	if (status == HCA_WC_SUCCESS)
		progress(d, qp, t);
	/* a bind or invalidation waiting for the WQEs before it may run now */
	if (qp->req.local_wait && qp->comp.sq_done == qp->req.sq_next)
		d->wire.sq_wake(d, qp, t);
}

void hm_comp_fail_oldest(struct hm_dev *d, struct hm_qp *qp, uint32_t verr, sim_time_t t)
{
	retire(d, qp, verr, t);
	hm_qp_error(d, qp, HCA_QPS_ERR, t);
}

/* RNR NAK timer values by min_rnr_timer code, in ps (IBA table 45; 0 = 655.36 ms). */
static const uint64_t rnr_delay_ps[32] = {
	655360000000ull, 10000000ull,	20000000ull,	30000000ull,	40000000ull,
	60000000ull,	 80000000ull,	120000000ull,	160000000ull,	240000000ull,
	320000000ull,	 480000000ull,	640000000ull,	960000000ull,	1280000000ull,
	1920000000ull,	 2560000000ull, 3840000000ull,	5120000000ull,	7680000000ull,
	10240000000ull,	 15360000000ull, 20480000000ull, 30720000000ull, 40960000000ull,
	61440000000ull,	 81920000000ull, 122880000000ull, 163840000000ull, 245760000000ull,
	327680000000ull, 491520000000ull,
};

/* The RNR wait is over: the requester resumes from the PSN it went back to. */
static void rnr_resume(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	if (qp->comp.rnr_wait && hm_timers_expire(d, qp, HM_TIMER_RNR, t)) {
		trace_comp_rnr_resume(d->devno, qp->qpn);
		hm_fcov_hit(HM_FCOV_timer, HM_FCOV_RNR_EXPIRY);
		qp->comp.rnr_wait = false;
		d->wire.sq_wake(d, qp, t);
	}
}

/* Is the oldest WQE one whose every packet has gone out, so that a response can finish it?
 * Every WQE before the one being sent is; that one too when it is being sent again after a
 * rewind (its last PSN is before the highest sent). */
static bool oldest_sent(const struct hm_qp *qp)
{
	return qp->comp.sq_done != qp->req.sq_next ||
	       (qp->req.cur_started &&
		hm_psn_cmp(qp->req.flight[qp->comp.sq_done % qp->sq_entries].last_psn, qp->req.sent_psn) < 0);
}

/* Retire the WQEs an ACK, NAK or response at psn implies are done: those ending before it. */
static void implied_acks(struct hm_dev *d, struct hm_qp *qp, uint32_t psn, sim_time_t t)
{
	while (oldest_sent(qp)) {
		struct hm_flight *f = oldest(qp);

		/* a bind or invalidation is completed by the requester when it runs */
		if (hm_psn_cmp(f->last_psn, psn) >= 0 || hca_wqe_rd_atomic(f->op) ||
		    hca_wqe_op_class(f->op) == HCA_WQE_CLASS_LOCAL)
			return;
		retire(d, qp, HCA_VERR_NONE, t);
	}
}

/* Scatter response data into the local list of the READ (or atomic) WQE f: HCA_VERR_NONE, or
 * the check that failed. */
static uint32_t scatter_local(struct hm_dev *d, struct hm_qp *qp, struct hm_flight *f,
			      const uint8_t *data, const uint8_t *frame, uint32_t off, uint32_t len,
			      sim_time_t t)
{
	const uint8_t *w = wqe_at(qp, f->wqe);
	const struct hca_wqe_ctrl *c = (const void *)w;
	struct hm_ct ct = { .ready = t, .tail = hm_port_tail_bytes(d, hm_qp_port(qp)),
			    .frame = frame };
	uint32_t verr;

	/* hm_sge_copy only reads buf when writing to memory; the data is written as it comes
	 * through the receive pipeline (cut-through). */
	if (hm_sge_copy(d, qp->pdn, (const void *)(w + HCA_WQE_BASE_BYTES), c->num_sge, off,
			(void *)data, len, true, &t, &verr, &ct) < len &&
	    !verr)
		verr = HCA_VERR_LKEY_BOUNDS; /* past the end of the WQE's list */
	return verr;
}

/* The syndrome of a fatal NAK, as the completion says it (IBA 9.7.5.2.1). */
static uint32_t nak_verr(uint8_t syn)
{
	switch (syn) {
	case HM_AETH_NAK_INV_REQ:
		return HCA_VERR_NAK_INV_REQ;
	case HM_AETH_NAK_REM_ACCESS:
		return HCA_VERR_NAK_REM_ACCESS;
	case HM_AETH_NAK_REM_OP:
		return HCA_VERR_NAK_REM_OP;
	default:
		return HCA_VERR_NAK_OTHER;
	}
}

/* An ACK or NAK acknowledging every packet up to upto (a NAK: up to the one before its PSN).
 * It is progress when it reaches past what was acknowledged of the oldest SEND or WRITE; a
 * READ or atomic advances only by its own responses, so an acknowledgement beyond one still
 * outstanding is none (its responses are missing). */
static void ack_progress(struct hm_dev *d, struct hm_qp *qp, uint32_t upto, sim_time_t t)
{
	struct hm_flight *f = oldest(qp);

	if (hca_wqe_rd_atomic(f->op) || hm_psn_cmp(upto, *next_rsp(qp)) < 0)
		return;
	*next_rsp(qp) = (upto + 1) & HCA_PSN_MASK;
	progress(d, qp, t);
}

/* A sequence NAK or a READ response gap: go back to psn at the cost of a retry, or end the
 * oldest WQE with RETRY_EXC_ERR when none is left (IBA 9.7.5.1.2, 9.7.5.1.6). */
static void take_retry(struct hm_dev *d, struct hm_qp *qp, uint32_t psn, const char *cause,
		       uint32_t verr, sim_time_t t)
{
	trace_comp_retry(d->devno, qp->qpn, psn, cause, qp->comp.retry_left, !qp->comp.retry_left);
	if (!qp->comp.retry_left) {
		hm_comp_fail_oldest(d, qp, verr, t);
		return;
	}
	qp->comp.retry_left--;
	d->wire.sq_retry(d, qp, psn, t);
}

/* ---- the completer's engine: small steps, each returning the next (rxe's comp_state) ---- */

#define COMP_STEPS(X)                                                                              \
	X(CHK_STATE)    /* an RC QP that takes responses (not ERR or RESET) */                     \
	X(CHK_WINDOW)   /* the PSN is inside the window of outstanding PSNs */                     \
	X(IMPLIED_ACKS) /* retire the SEND and WRITE WQEs that end before it */                    \
	X(CHK_PROGRESS) /* an ACK or NAK: what it acknowledges of the oldest WQE */                \
	X(CHK_GAP)      /* past the response the oldest READ or atomic expects: lost ones */       \
	X(CLASSIFY)     /* which kind of response it is */                                         \
	X(SEQ_NAK)      /* PSN sequence error: go back, at the cost of a retry */                  \
	X(RNR_NAK)      /* receiver not ready: go back after the RNR delay */                      \
	X(ERR_NAK)      /* a fatal NAK: the WQE holding the PSN ends with its status */            \
	X(READ)         /* an in-order READ response: scatter it, retire at the last */            \
	X(ATOMIC)       /* an atomic acknowledgement: return the original value, retire */         \
	X(ACK)          /* a plain ACK: retire the SEND and WRITE WQEs it covers */                \
	X(DONE)

enum comp_step {
#define X(s) COMP_##s,
	COMP_STEPS(X)
#undef X
};

static const char *const comp_step_names[] = {
#define X(s) #s,
	COMP_STEPS(X)
#undef X
};

const char *const *hm_comp_step_names(size_t *n)
{
	*n = sizeof(comp_step_names) / sizeof(comp_step_names[0]);
	return comp_step_names;
}

/* One response on its way through the steps. */
struct comp_pkt {
	struct hm_dev *d;
	struct hm_qp *qp;
	const struct hm_pkt *p;
	sim_time_t t;
	uint8_t op, syn; /* BTH opcode, AETH syndrome */
	uint32_t upto;   /* last PSN it acknowledges (a NAK: the one before its PSN) */
};

static bool is_read_response(uint8_t op)
{
	return (hm_opcode_class(op) & HM_OPC_READ_RSP) != 0;
}

static enum comp_step chk_state(struct comp_pkt *c)
{
	const struct hm_qp *qp = c->qp;

	if (!hca_qpt_reliable(qp->type) || qp->state == HCA_QPS_ERR || qp->state == HCA_QPS_RESET)
		return COMP_DONE;
	return COMP_CHK_WINDOW;
}

/* Only a response inside the window of outstanding PSNs counts: from the oldest WQE's first
 * PSN to the highest PSN sent, which a rewind leaves where it was. A late or duplicated one
 * (IBA 9.7.5.1.1: "ghost" ACKs) is ignored. */
static enum comp_step chk_window(struct comp_pkt *c)
{
	struct hm_qp *qp = c->qp;

	if (nothing_outstanding(qp) || hm_psn_cmp(c->p->psn, oldest(qp)->first_psn) < 0 ||
	    hm_psn_cmp(c->p->psn, qp->req.sent_psn) >= 0)
		return COMP_DONE;
	if (!is_read_response(c->op) && hm_psn_cmp(c->upto, qp->comp.acked_psn) > 0)
		qp->comp.acked_psn = c->upto; /* observed only (waves) */
	return COMP_IMPLIED_ACKS;
}

static enum comp_step do_implied_acks(struct comp_pkt *c)
{
	implied_acks(c->d, c->qp, c->p->psn, c->t);
	/* A message still being sent counts: its PSNs are in the window. */
	return nothing_outstanding(c->qp) ? COMP_DONE : COMP_CHK_PROGRESS;
}

/* What an ACK or NAK acknowledges of the WQE now the oldest. A READ response counts as
 * progress only once taken in order (COMP_READ): one after a gap is dropped, and must not
 * hide the missing one. */
static enum comp_step chk_progress(struct comp_pkt *c)
{
	if (!is_read_response(c->op))
		ack_progress(c->d, c->qp, c->upto, c->t);
	return COMP_CHK_GAP;
}

/* The responder answers in order (IBA 9.7.5.1.6): anything past the response the oldest
 * READ or atomic expects next — a later response of it, or an ACK, NAK or response beyond
 * it — shows that the expected one was lost. Ask again from it, once per gap, at the cost of
 * a retry (docs/timing.md#forward-progress). A fatal NAK is excepted: it ends what it names. */
static enum comp_step chk_gap(struct comp_pkt *c)
{
	struct hm_qp *qp = c->qp;
	struct hm_flight *f = oldest(qp);

	if ((c->op == HM_OP_ACKNOWLEDGE && hm_aeth_is_fatal(c->syn)) || !hca_wqe_rd_atomic(f->op) ||
	    hm_psn_cmp(c->p->psn, *next_rsp(qp)) <= 0)
		return COMP_CLASSIFY;
	if (!qp->comp.rd_gap) {
		qp->comp.rd_gap = true;
		take_retry(c->d, qp, *next_rsp(qp), "rsp_gap", HCA_VERR_RETRY_RSP_GAP, c->t);
	}
	return COMP_DONE;
}

static enum comp_step classify(struct comp_pkt *c)
{
	if (c->op == HM_OP_ACKNOWLEDGE) {
		if (c->syn == HM_AETH_NAK_SEQ)
			return COMP_SEQ_NAK;
		if (hm_aeth_is_rnr(c->syn))
			return COMP_RNR_NAK;
		if (hm_aeth_is_fatal(c->syn))
			return COMP_ERR_NAK;
		return COMP_ACK;
	}
	if (c->op == HM_OP_ATOMIC_ACKNOWLEDGE)
		return COMP_ATOMIC;
	return is_read_response(c->op) ? COMP_READ : COMP_DONE;
}

/* PSN sequence error: the responder expects p->psn. Earlier WQEs are done; go back to it,
 * which costs a retry (IBA 9.7.5.1.2). A second NAK for the same PSN with no progress in
 * between (a duplicate) changes nothing. */
static enum comp_step seq_nak(struct comp_pkt *c)
{
	struct hm_qp *qp = c->qp;

	if (qp->comp.nak_seen && qp->comp.nak_psn == c->p->psn)
		return COMP_DONE;
	qp->comp.nak_seen = true;
	qp->comp.nak_psn = c->p->psn;
	take_retry(c->d, qp, c->p->psn, "seq_nak", HCA_VERR_RETRY_SEQ_NAK, c->t);
	return COMP_DONE;
}

/* RNR NAK: wait the responder's timer, then resend from p->psn; rnr_retry 7 retries for
 * ever (IBA 9.7.5.2.8). */
static enum comp_step rnr_nak(struct comp_pkt *c)
{
	struct hm_dev *d = c->d;
	struct hm_qp *qp = c->qp;
	uint64_t wait_ps = rnr_delay_ps[c->syn & 0x1f];

	trace_comp_rnr_wait(d->devno, qp->qpn, c->p->psn, c->t, wait_ps, qp->comp.rnr_left,
			    qp->attr.rnr_retry == 7, qp->attr.rnr_retry != 7 && !qp->comp.rnr_left);
	if (qp->attr.rnr_retry != 7) {
		if (!qp->comp.rnr_left) {
			hm_comp_fail_oldest(d, qp, HCA_VERR_RNR_RETRY, c->t);
			return COMP_DONE;
		}
		qp->comp.rnr_left--;
	}
	d->wire.sq_retry(d, qp, c->p->psn, c->t);
	qp->comp.rnr_wait = true;
	hm_comp_timer(d, qp, c->t + wait_ps); /* no timeout while waiting */
	hm_timers_rnr_arm(d, qp, c->t, c->t + wait_ps, rnr_resume);
	return COMP_DONE;
}

/* The NAK names the PSN of the failed request: the WQE holding it ends, the ones before it
 * were implicitly acknowledged, and the QP moves to ERR. */
static enum comp_step err_nak(struct comp_pkt *c)
{
	struct hm_qp *qp = c->qp;

	while (oldest_sent(qp) && hm_psn_cmp(oldest(qp)->last_psn, c->p->psn) < 0)
		retire(c->d, qp, HCA_VERR_NONE, c->t);
	/* The oldest left holds the PSN (the window check), if need be the message still being
	 * sent: it ends now, its remaining packets unsent. */
	if (!nothing_outstanding(qp))
		hm_comp_fail_oldest(c->d, qp, nak_verr(c->syn), c->t);
	return COMP_DONE;
}

/* Data for the oldest WQE's local list (a READ response, an atomic's original value) that
 * cannot be scattered ends it with LOC_PROT_ERR. */
static bool scatter_or_fail(struct comp_pkt *c, const uint8_t *data, const uint8_t *frame,
			    uint32_t off, uint32_t len)
{
	uint32_t verr = scatter_local(c->d, c->qp, oldest(c->qp), data, frame, off, len, c->t);

	if (!verr)
		return true;
	hm_comp_fail_oldest(c->d, c->qp, verr, c->t);
	return false;
}

/* A READ response of the oldest WQE (which may be the one being sent again after a rewind:
 * what answers what it sent before still counts). Responses are taken in order
 * (IBA 9.7.5.1.6): a duplicate is dropped (one past a gap went back in COMP_CHK_GAP). */
static enum comp_step read_rsp(struct comp_pkt *c)
{
	struct hm_qp *qp = c->qp;
	struct hm_flight *f = oldest(qp);
	uint32_t psn = c->p->psn;

	if (!oldest_sent(qp) || f->op != HCA_WQE_OP_RDMA_READ ||
	    hm_psn_cmp(psn, f->first_psn) < 0 || hm_psn_cmp(psn, f->last_psn) > 0 ||
	    hm_psn_cmp(psn, *next_rsp(qp)) < 0)
		return COMP_DONE;
	*next_rsp(qp) = (*next_rsp(qp) + 1) & HCA_PSN_MASK;
	if (hm_psn_cmp(psn, qp->comp.acked_psn) > 0)
		qp->comp.acked_psn = psn;
	progress(c->d, qp, c->t);
	if (!scatter_or_fail(c, c->p->payload, c->p->frame, ((psn - f->first_psn) & HCA_PSN_MASK) *
							hm_qp_mtu(c->d, qp),
			     c->p->paylen))
		return COMP_DONE;
	if (psn == f->last_psn)
		retire(c->d, qp, HCA_VERR_NONE, c->t);
	return COMP_DONE;
}

/* The atomic acknowledgement of the oldest WQE: its original value into the WQE's buffer. */
static enum comp_step atomic_ack(struct comp_pkt *c)
{
	struct hm_qp *qp = c->qp;
	uint64_t orig = c->p->atomic_orig;

	if (!oldest_sent(qp) || !hca_wqe_atomic(oldest(qp)->op) ||
	    c->p->psn != oldest(qp)->last_psn)
		return COMP_DONE;
	if (scatter_or_fail(c, (const uint8_t *)&orig, NULL, 0, 8))
		retire(c->d, qp, HCA_VERR_NONE, c->t);
	return COMP_DONE;
}

/* A plain ACK retires the SEND and WRITE WQEs it covers, in order; it cannot stand in for a
 * READ or atomic response (their data would be missing). */
static enum comp_step ack(struct comp_pkt *c)
{
	/* Those ending at its PSN too: the implied acknowledgements of the next PSN. */
	implied_acks(c->d, c->qp, (c->p->psn + 1) & HCA_PSN_MASK, c->t);
	return COMP_DONE;
}

static enum comp_step (*const comp_steps[])(struct comp_pkt *) = {
	[COMP_CHK_STATE] = chk_state,	     [COMP_CHK_WINDOW] = chk_window,
	[COMP_IMPLIED_ACKS] = do_implied_acks, [COMP_CHK_PROGRESS] = chk_progress,
	[COMP_CHK_GAP] = chk_gap,	     [COMP_CLASSIFY] = classify,
	[COMP_SEQ_NAK] = seq_nak,	     [COMP_RNR_NAK] = rnr_nak,
	[COMP_ERR_NAK] = err_nak,	     [COMP_READ] = read_rsp,
	[COMP_ATOMIC] = atomic_ack,	     [COMP_ACK] = ack,
};

sim_time_t hm_comp_rx(struct hm_dev *d, struct hm_qp *qp, const struct hm_pkt *p, sim_time_t t)
{
	/* XRC responses are the RC ones in the XRC class: the low five bits say which */
	struct comp_pkt c = { .d = d, .qp = qp, .p = p, .op = p->opcode & 0x1f, .syn = p->aeth_syndrome };
	enum comp_step step = COMP_CHK_STATE;

	c.t = t = sim_clock_after(&d->core, t, d->cfg.comp_cycles);
	c.upto = (c.op == HM_OP_ACKNOWLEDGE && hm_aeth_is_nak(c.syn) ? p->psn - 1 : p->psn) &
		 HCA_PSN_MASK;
	trace_comp_ack(d->devno, qp->qpn, p->psn, c.op, c.syn);
	hm_ctr_ack_rcvd(d, qp, c.op, c.syn);
	if (c.op == HM_OP_ACKNOWLEDGE && hm_aeth_is_nak(c.syn))
		hm_fcov_hit(HM_FCOV_nak_rcvd, hm_fcov_nak_kind(c.syn));
	while (step != COMP_DONE) {
		trace_step_comp(d->devno, qp->qpn, p->psn, comp_step_names[step]);
		step = comp_steps[step](&c);
	}
	return t;
}

/* The local ACK timer expired (model/timers.c calls this only while it is armed): go back to
 * the oldest packet unanswered at the cost of a retry, or over the alternate path, or end the
 * oldest WQE with RETRY_EXC_ERR. */
static void ack_timeout(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	uint32_t qpn = qp->qpn;

	if (qp->state == HCA_QPS_ERR || qp->state == HCA_QPS_RESET || nothing_outstanding(qp) ||
	    !hm_timers_expire(d, qp, HM_TIMER_ACK, t))
		return;
	qp = hm_qpc_get(d, qpn, &t);
	hm_timers_ack_off(qp);
	const struct hm_flight *f = &qp->req.flight[qp->comp.sq_done % qp->sq_entries];
	/* From the oldest packet unanswered: a READ's first missing response. */
	uint32_t psn = f->op == HCA_WQE_OP_RDMA_READ ? *next_rsp(qp) : f->first_psn;

	hm_ctr_qp(d, qp, HM_CTR_SQ_TO);
	trace_req_timeout(d->devno, qp->qpn, psn, qp->comp.retry_left, !qp->comp.retry_left);
	if (!qp->comp.retry_left && qp->attr.path_mig_state == HCA_MIG_ARMED &&
	    hm_qp_migrate(d, qp, "retries_exhausted")) {
		/* The path is presumed broken: carry on over the alternate one with the retries
		 * reloaded. */
		qp->comp.retry_left = qp->attr.retry_cnt;
		hm_fcov_hit(HM_FCOV_timer, HM_FCOV_ACK_TIMEOUT_MIGRATE);
		d->wire.sq_retry(d, qp, psn, t);
	} else if (!qp->comp.retry_left) {
		hm_fcov_hit(HM_FCOV_timer, HM_FCOV_ACK_TIMEOUT_FAIL);
		hm_comp_fail_oldest(d, qp, HCA_VERR_RETRY_TIMEOUT, t);
	} else {
		hm_fcov_hit(HM_FCOV_timer, HM_FCOV_ACK_TIMEOUT_RETRY);
		qp->comp.retry_left--;
		d->wire.sq_retry(d, qp, psn, t);
	}
}

void hm_comp_timer(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	if (!qp->attr.timeout || nothing_outstanding(qp)) {
		/* timeout 0: no transport timer (IBA 9.7.6.1.3) */
		hm_timers_ack_stop(d, qp, t);
		return;
	}
	/* 4.096 us * 2^timeout (IBA 9.7.6.1.3); 4.096 us is 4096000 ps exactly. */
	hm_timers_ack_arm(d, qp, t, t + (4096000ull << qp->attr.timeout), ack_timeout);
}

void hm_comp_track(struct hm_qp *qp, uint32_t wqe, uint32_t first_psn)
{
	qp->comp.next_rsp[wqe % qp->sq_entries] = first_psn;
}

/* ---- the completer's part of the QP (model/ctx.h), as the QP commands change it ---- */

void hm_comp_create(struct hm_qp *qp)
{
	qp->comp.next_rsp = calloc(qp->sq_entries ? qp->sq_entries : 1, sizeof(uint32_t));
	SIM_ASSERT(qp->comp.next_rsp != NULL, "out of memory");
}

void hm_comp_destroy(struct hm_qp *qp)
{
	free(qp->comp.next_rsp);
	qp->comp.next_rsp = NULL;
}

void hm_comp_reset(struct hm_qp *qp)
{
	qp->comp.sq_done = 0;
	qp->comp.rnr_wait = false;
	hm_timers_ack_off(qp); /* a pending timer event finds it off */
	qp->comp.nak_seen = false;
	qp->comp.rd_gap = false;
}

/* Complete the send WQEs from sq_done up to upto with WR_FLUSH_ERR, in order. A WQE counts
 * as done before its CQE is posted: a CQ overrun moves the QP to ERR from inside the post, and
 * the flush that starts there must begin after it (and this one stop where it ended). */
static void flush_to(struct hm_dev *d, struct hm_qp *qp, uint32_t upto, sim_time_t t)
{
	while ((int32_t)(upto - qp->comp.sq_done) > 0) {
		struct hca_cqe cqe = { .qpn = qp->qpn,
				       .wqe_index = (uint16_t)qp->comp.sq_done++,
				       .opcode = HCA_CQE_OP_SEND,
				       .status = HCA_WC_WR_FLUSH_ERR,
				       .vendor_err = HCA_VERR_FLUSHED,
				       .is_send = 1 };

		hm_cqe_post(d, qp->scqn, &cqe, false, t);
	}
}

void hm_comp_flush(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	flush_to(d, qp, qp->sq_pi, t);
}

void hm_comp_modify(struct hm_qp *qp, const struct hca_qp_attr *a, uint32_t mask)
{
	if (mask & HCA_QPA_SQ_PSN)
		qp->comp.acked_psn = (a->sq_psn - 1) & HCA_PSN_MASK;
	if (mask & HCA_QPA_RETRY_CNT)
		qp->comp.retry_left = a->retry_cnt;
	if (mask & HCA_QPA_RNR_RETRY)
		qp->comp.rnr_left = a->rnr_retry;
}

/* Local completion of a UC or UD message once its last packet has left (IBA 10.8.3.1). */
void hm_comp_sent(struct hm_dev *d, struct hm_qp *qp, const struct hm_flight *f, sim_time_t t)
{
	if (f->signaled) {
		struct hca_cqe cqe = { 0 };

		cqe.qpn = qp->qpn;
		cqe.wqe_index = (uint16_t)f->wqe;
		cqe.opcode = hm_cqe_op_of(f->op);
		cqe.status = HCA_WC_SUCCESS;
		cqe.is_send = 1;
		hm_cqe_post(d, qp->scqn, &cqe, false, t);
	}
	qp->comp.sq_done = f->wqe + 1;
	trace_comp_done(d->devno, qp->qpn, f->wqe, 0);
	hm_qp_check_drained(d, qp);
}

void hm_comp_fail_local(struct hm_dev *d, struct hm_qp *qp, uint32_t wqe, uint8_t op,
			uint32_t verr, sim_time_t t)
{
	struct hca_cqe cqe = { .qpn = qp->qpn,
			       .wqe_index = (uint16_t)wqe,
			       .opcode = hm_cqe_op_of(op),
			       .status = hca_verr_status(verr),
			       .vendor_err = verr,
			       .is_send = 1 };

	/* CQEs stay in WQE order: RC WQEs still waiting for their ACK end flushed first. */
	flush_to(d, qp, wqe, t);
	qp->comp.sq_done = wqe + 1; /* before the post: see flush_to */
	hm_cqe_post(d, qp->scqn, &cqe, false, t);
}
