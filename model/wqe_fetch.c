/* wqe_fetch: the WQE fetcher. The requester asks for WQE idx of a QP; if an earlier read
 * brought it in, only the decode costs time; otherwise one DMA read brings in up to
 * hca.wqe_prefetch posted WQEs, contiguous in the ring (a read does not wrap). Then the WQE is
 * validated as hardware must validate what software wrote: an opcode the QP type allows, a
 * scatter/gather count or inline length that fits the WQE stride, a length within the limits
 * (2^31 bytes; UD within the path MTU; atomics exactly 8 bytes). */
#include "model/wqe_fetch.h"
#include "model/dma.h"
#include "model/qp.h"
#include "model/twin.h"
#include "model/waves.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the C twin of rtl/wqe_fetch.sv (model/twin.h "wqe_fetch") ---- */

/* The WQEs a read from idx from brings in: up to prefetch posted ones, at least one, stopping
 * at the end of the ring. */
static uint32_t win_n(const struct hm_wqe_fetch_in *in, uint32_t from)
{
	uint32_t slot = from % in->sq_entries, n = in->sq_pi - from;

	if (n > in->prefetch)
		n = in->prefetch;
	if (n > in->sq_entries - slot)
		n = in->sq_entries - slot; /* one read stops at the end of the ring */
	return n ? n : 1;
}

/* The window's read from WQE from, issued d cycles after the request (at once: at its time):
 * the window after it, answered the cycle after its completion. */
static void twin_read(const struct hm_dev *dev, const struct hm_wqe_fetch_in *in,
		      struct hm_wqe_fetch_out *out, uint32_t from, uint64_t d)
{
	uint64_t per = dev->core.period_ps, due;
	uint32_t slot = from % in->sq_entries, n = win_n(in, from);
	struct hm_dma_xfer x = { .addr = in->sq + (uint64_t)slot * in->sq_stride,
				 .off = slot * in->sq_stride,
				 .len = n * in->sq_stride,
				 .issue_ps = d ? (in->cycle + d) * per : in->t_ps };

	hm_dma_do(in->dma, &x);
	due = (x.done_ps + per - 1) / per;
	if (due < in->cycle + d + 1)
		due = in->cycle + d + 1; /* a completion comes at the earliest the cycle after */
	out->reads = 1;
	out->win = (struct hm_fetch_win){ from, from + n, x.err != 0, x.done_ps };
	out->cycle = due + 1;
	SIM_ASSERT(x.err || x.done_ps > in->t_ps, "wqe_fetch: a read done at its issue");
}

static void twin_fetch(void *b, const struct hm_wqe_fetch_in *in, struct hm_wqe_fetch_out *out)
{
	const struct hm_dev *d = b;
	bool in_win = in->idx - in->win.lo < in->win.fetched - in->win.lo;

	*out = (struct hm_wqe_fetch_out){ .cycle = in->cycle + 1, .win = in->win };
	hm_dma_begin(in->dma);
	if (in->op == HM_FETCH_PREFETCH && (in->idx != in->win.fetched ||
					    in->win.fetched == in->sq_pi || in->busy)) {
		out->result = HM_FETCH_IDLE;
		return;
	}
	if (in->op == HM_FETCH_PREFETCH || !in_win) { /* not fetched, or a rewind */
		twin_read(d, in, out, in->idx, 0);
		out->result = out->win.err ? HM_FETCH_FAILED : HM_FETCH_WAIT;
		return;
	}
	if (in->win.err || in->win.ready > in->t_ps) {
		out->result = in->win.err ? HM_FETCH_FAILED : HM_FETCH_WAIT;
		return;
	}
	out->result = HM_FETCH_READY;
	out->decoded = out->cycle = in->cycle + d->cfg.wqe_cycles;
	if (in->idx + 1 == in->win.fetched && in->win.fetched != in->sq_pi)
		twin_read(d, in, out, in->win.fetched, d->cfg.wqe_cycles); /* while this is sent */
}

/* The address vector of a UD WQE, as software wrote it: every field within what the headers
 * can carry (IBA 7.7, 8.3, 9.3) and the device has, before any packet is built from it. */
static bool ud_av_ok(const struct hm_wqe_check_in *in)
{
	return in->ud_remote_qpn <= HCA_QPN_MASK && in->ud_sl < 16 &&
	       in->ud_flow_label < (1u << 20) && (!in->ud_port || in->ud_port <= in->nports);
}

static void twin_check(void *b, const struct hm_wqe_check_in *in, struct hm_wqe_check_out *out)
{
	uint32_t room = in->sq_stride - HCA_WQE_BASE_BYTES, verr = HCA_VERR_NONE;
	bool inl = in->flags & HCA_WQE_F_INLINE;
	uint64_t len = 0;

	(void)b;
	if (!hca_wqe_op_allowed(in->qp_type, in->opcode))
		verr = HCA_VERR_WQE_OPCODE;
	else if (in->qp_type == HCA_QPT_UD && !ud_av_ok(in))
		verr = HCA_VERR_WQE_UD_AV;
	else if (inl && in->inline_len > room)
		verr = HCA_VERR_WQE_INLINE_LEN;
	else if (!inl && (in->num_sge > room / HCA_SGE_BYTES || in->num_sge > HM_WQE_MAX_SGE))
		verr = HCA_VERR_WQE_NUM_SGE;
	if (!verr && inl)
		len = in->inline_len;
	for (unsigned i = 0; !verr && !inl && i < in->num_sge; i++)
		len += in->sge_len[i];
	if (verr)
		;
	else if (len > 0x80000000ull || (in->qp_type == HCA_QPT_UD && len > in->mtu))
		verr = HCA_VERR_WQE_MSG_LEN;
	else if (hca_wqe_atomic(in->opcode) && len != 8)
		verr = HCA_VERR_WQE_ATOMIC_LEN;
	*out = (struct hm_wqe_check_out){ .cycle = in->cycle + 1, .status = hca_verr_status(verr),
					  .verr = verr, .len = len };
}

const struct hm_wqe_fetch_ops hm_wqe_fetch_model = {
	{ hm_twin_stateless_create, hm_twin_stateless_destroy, NULL, NULL, 0, NULL, NULL },
	twin_fetch,
	twin_check
};

/* The window first and the answer's cycle last: a read of the wrong WQEs shows as the window
 * it reads, not as the completion time it changes. */
HM_TWIN_OP(wqe_fetch, fetch, hm_wqe_fetch_in, hm_wqe_fetch_out, hm_waves_wqe_fetch, NULL,
	   HM_TWIN_FIELD(struct hm_wqe_fetch_out, result),
	   HM_TWIN_FIELD(struct hm_wqe_fetch_out, reads),
	   HM_TWIN_FIELD(struct hm_wqe_fetch_out, win.lo),
	   HM_TWIN_FIELD(struct hm_wqe_fetch_out, win.fetched),
	   HM_TWIN_FIELD(struct hm_wqe_fetch_out, win.err),
	   HM_TWIN_FIELD(struct hm_wqe_fetch_out, win.ready),
	   HM_TWIN_FIELD(struct hm_wqe_fetch_out, decoded),
	   HM_TWIN_FIELD(struct hm_wqe_fetch_out, cycle));
HM_TWIN_OP(wqe_fetch, check, hm_wqe_check_in, hm_wqe_check_out, hm_waves_wqe_check, NULL,
	   HM_TWIN_FIELD(struct hm_wqe_check_out, cycle),
	   HM_TWIN_FIELD(struct hm_wqe_check_out, status),
	   HM_TWIN_FIELD(struct hm_wqe_check_out, verr),
	   HM_TWIN_FIELD(struct hm_wqe_check_out, len));

/* ---- the entry points: a transaction of the port each ---- */

struct fetch_dma {
	struct hm_dev *d;
	uint32_t qpn;
};

/* The DMA port's transfer: the WQE read of the device's DMA engine (model/dma.h). */
static int fetch_xfer(struct hm_dma *p, bool write, uint64_t addr, uint8_t *data, uint32_t len,
		      uint64_t *t_ps)
{
	const struct fetch_dma *f = p->arg;

	SIM_ASSERT(!write, "wqe_fetch writes nothing");
	return hm_wqe_read(f->d, HM_DMA_SQ_WQE, f->qpn, addr, data, len, t_ps) ? -EFAULT : 0;
}

/* One fetch transaction (op) for qp at t; the window it leaves is the QP's, a read it issued
 * traced. */
static void fetch_call(struct hm_dev *d, struct hm_qp *qp, uint8_t op, uint32_t idx, bool busy,
		       sim_time_t t, struct hm_wqe_fetch_out *out)
{
	struct hm_wqe_fetch_out rtl;
	struct fetch_dma f = { d, qp->qpn };
	struct hm_dma dma = { .xfer = fetch_xfer,
			      .arg = &f,
			      .buf = qp->fetch.wqe_buf,
			      .buf_len = qp->sq_entries * qp->sq_stride };
	struct hm_wqe_fetch_in in = {
		.cycle = sim_clock_cycles(&d->core, sim_clock_edge(&d->core, t)),
		.t_ps = t, .op = op, .qpn = qp->qpn, .idx = idx, .busy = busy,
		.sq_pi = qp->sq_pi, .sq_entries = qp->sq_entries, .sq_stride = qp->sq_stride,
		.sq = qp->sq, .prefetch = (uint32_t)d->cfg.wqe_prefetch,
		.win = { qp->fetch.sq_fetch_lo, qp->fetch.sq_fetched, qp->fetch.sq_fetch_err,
			 qp->fetch.sq_fetch_ready },
		.dma = &dma,
	};

	hm_twin_call(d, &wqe_fetch_fetch_op, in.cycle, &in, out, &rtl);
	qp->fetch.sq_fetch_lo = out->win.lo;
	qp->fetch.sq_fetched = out->win.fetched;
	qp->fetch.sq_fetch_err = out->win.err;
	qp->fetch.sq_fetch_ready = out->win.ready;
	if (out->reads)
		trace_req_fetch(d->devno, qp->qpn, out->win.lo, out->win.fetched - 1,
				out->win.ready, out->win.err);
}

struct fetch_wake {
	struct hm_dev *d; /* device */
	uint32_t qpn;     /* QP whose WQE read completed */
};

static void fetch_woken(void *arg)
{
	struct fetch_wake *w = arg;
	struct hm_qp *qp = hm_qp_lookup(w->d, w->qpn);

	if (qp && qp->fetch.sq_wake_at == sim_now(w->d->k)) {
		qp->fetch.sq_wake_at = 0;
		w->d->wire.sq_wake(w->d, qp, sim_now(w->d->k));
	}
	free(w);
}

/* The QP goes back into the arbiter when the window's read completes. */
static void wake_when_ready(struct hm_dev *d, struct hm_qp *qp)
{
	struct fetch_wake *w;

	if (qp->fetch.sq_wake_at == qp->fetch.sq_fetch_ready)
		return; /* already */
	w = malloc(sizeof(*w));
	SIM_ASSERT(w != NULL, "out of memory");
	*w = (struct fetch_wake){ d, qp->qpn };
	qp->fetch.sq_wake_at = qp->fetch.sq_fetch_ready;
	sim_schedule_owned_at(d->k, qp->fetch.sq_fetch_ready, fetch_woken, w);
}

int hm_wqe_fetch(struct hm_dev *d, struct hm_qp *qp, uint32_t idx, sim_time_t *t)
{
	struct hm_wqe_fetch_out out;

	fetch_call(d, qp, HM_FETCH_GET, idx, false, *t, &out);
	if (out.result == HM_FETCH_FAILED)
		return HM_WQE_FAILED;
	if (out.result == HM_FETCH_WAIT) {
		wake_when_ready(d, qp); /* the window's read completes later */
		return HM_WQE_WAIT;
	}
	*t = out.decoded * d->core.period_ps;
	return HM_WQE_READY;
}

void hm_wqe_prefetch(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	struct hm_wqe_fetch_out out;

	fetch_call(d, qp, HM_FETCH_PREFETCH, qp->req.sq_next, qp->req.cur_started, t, &out);
}

uint8_t hm_wqe_check(struct hm_dev *d, const struct hm_qp *qp, const uint8_t *w, uint64_t *len,
		      uint32_t *verr)
{
	const struct hca_wqe_ctrl *c = (const void *)w;
	const struct hca_wqe_ud *ud = (const void *)(c + 1);
	const struct hca_wqe_data *sg = (const void *)(w + HCA_WQE_BASE_BYTES);
	uint32_t fit = (qp->sq_stride - HCA_WQE_BASE_BYTES) / HCA_SGE_BYTES;
	struct hm_wqe_check_out out, rtl;
	struct hm_wqe_check_in in = {
		.cycle = hm_dev_cycle(d), .qp_type = qp->type, .sq_stride = qp->sq_stride,
		.mtu = hm_qp_mtu(d, qp), .nports = (uint8_t)d->nports, .opcode = c->opcode,
		.flags = c->flags, .num_sge = c->num_sge, .inline_len = c->inline_len,
		.ud_remote_qpn = ud->remote_qpn, .ud_sl = ud->av.sl, .ud_port = ud->av.port_num,
		.ud_flow_label = ud->av.flow_label,
	};

	for (uint32_t i = 0; i < c->num_sge && i < fit && i < HM_WQE_MAX_SGE; i++)
		in.sge_len[i] = sg[i].length;
	hm_twin_call(d, &wqe_fetch_check_op, in.cycle, &in, &out, &rtl);
	*len = out.len;
	*verr = out.verr;
	return out.status;
}

void hm_fetch_take(struct hm_dev *d, struct hm_qp *qp, const uint8_t *wqe, uint32_t len,
		   sim_time_t t)
{
	uint32_t slot;

	if (!qp->sq_entries || len > qp->sq_stride || qp->fetch.sq_fetched != qp->sq_pi ||
	    qp->sq_pi + 1 - qp->comp.sq_done > qp->sq_entries)
		return;
	slot = qp->sq_pi % qp->sq_entries;
	memcpy(qp->fetch.wqe_buf + (size_t)slot * qp->sq_stride, wqe, len);
	if (qp->req.sq_next == qp->sq_pi && !qp->req.cur_started) {
		/* alone: a window of its own, ready now */
		qp->fetch.sq_fetch_lo = qp->sq_pi;
		qp->fetch.sq_fetch_ready = t;
		qp->fetch.sq_fetch_err = false;
	} else if (qp->sq_pi + 1 - qp->fetch.sq_fetch_lo > qp->sq_entries) {
		/* appended: the window never holds more than the ring */
		qp->fetch.sq_fetch_lo = qp->sq_pi + 1 - qp->sq_entries;
	}
	qp->fetch.sq_fetched = qp->sq_pi + 1;
	trace_req_bf(d->devno, qp->qpn, qp->sq_pi, len);
}

/* ---- the fetcher's part of the QP (model/ctx.h), as the QP commands change it ---- */

void hm_fetch_create(struct hm_qp *qp)
{
	qp->fetch.wqe_buf = malloc((size_t)(qp->sq_entries ? qp->sq_entries : 1) * qp->sq_stride + 1);
	SIM_ASSERT(qp->fetch.wqe_buf != NULL, "out of memory");
}

void hm_fetch_destroy(struct hm_qp *qp)
{
	free(qp->fetch.wqe_buf);
	qp->fetch.wqe_buf = NULL;
}

void hm_fetch_reset(struct hm_qp *qp)
{
	qp->fetch.sq_fetch_lo = qp->fetch.sq_fetched = 0;
	qp->fetch.sq_fetch_err = false;
	qp->fetch.sq_fetch_ready = 0;
}

void hm_fetch_flush(struct hm_qp *qp)
{
	qp->fetch.sq_fetch_lo = qp->fetch.sq_fetched = qp->sq_pi;
	qp->fetch.sq_fetch_err = false;
}
