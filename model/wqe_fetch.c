/* wqe_fetch: the WQE fetcher. The requester asks for WQE idx of a QP; if an earlier read
 * brought it in, only the decode costs time; otherwise one DMA read brings in up to
 * hca.wqe_prefetch posted WQEs, contiguous in the ring (a read does not wrap). Then the WQE is
 * validated as hardware must validate what software wrote: an opcode the QP type allows, a
 * scatter/gather count or inline length that fits the WQE stride, a length within the limits
 * (2^31 bytes; UD within the path MTU; atomics exactly 8 bytes). */
#include "model/wqe_fetch.h"
#include "model/dma.h"
#include "model/qp.h"
#include "sim/trace.h"

#include <stdlib.h>
#include <string.h>

/* Read up to hca.wqe_prefetch posted WQEs from idx (stopping at the end of the ring) into
 * wqe_buf, as one DMA read issued at t: the window becomes [idx, idx + n), readable once the
 * read completes. */
static void fetch_window(struct hm_dev *d, struct hm_qp *qp, uint32_t idx, sim_time_t t)
{
	uint32_t slot = idx % qp->sq_entries, n = qp->sq_pi - idx;

	if (n > d->cfg.wqe_prefetch)
		n = (uint32_t)d->cfg.wqe_prefetch;
	if (n > qp->sq_entries - slot)
		n = qp->sq_entries - slot; /* one read stops at the end of the ring */
	if (!n)
		n = 1;
	qp->fetch.sq_fetch_ready = t;
	qp->fetch.sq_fetch_err = hm_wqe_read(d, HM_DMA_SQ_WQE, qp->qpn,
				       qp->sq + (uint64_t)slot * qp->sq_stride,
				       qp->fetch.wqe_buf + (size_t)slot * qp->sq_stride,
				       (size_t)n * qp->sq_stride, &qp->fetch.sq_fetch_ready);
	qp->fetch.sq_fetch_lo = idx;
	qp->fetch.sq_fetched = idx + n;
	trace_req_fetch(d->devno, qp->qpn, idx, idx + n - 1, qp->fetch.sq_fetch_ready, qp->fetch.sq_fetch_err);
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
	if (idx - qp->fetch.sq_fetch_lo >= qp->fetch.sq_fetched - qp->fetch.sq_fetch_lo)
		fetch_window(d, qp, idx, *t); /* not fetched (or a rewind before the window) */
	if (qp->fetch.sq_fetch_err)
		return HM_WQE_FAILED;
	if (qp->fetch.sq_fetch_ready > *t) {
		wake_when_ready(d, qp);
		return HM_WQE_WAIT;
	}
	*t = sim_clock_after(&d->core, *t, d->cfg.wqe_cycles);
	if (idx + 1 == qp->fetch.sq_fetched && qp->fetch.sq_fetched != qp->sq_pi)
		fetch_window(d, qp, qp->fetch.sq_fetched, *t); /* the next ones, while this one is sent */
	return HM_WQE_READY;
}

void hm_wqe_prefetch(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	if (qp->req.sq_next == qp->fetch.sq_fetched && qp->fetch.sq_fetched != qp->sq_pi && !qp->req.cur_started)
		fetch_window(d, qp, qp->req.sq_next, t);
}

/* The address vector of a UD WQE, as software wrote it: every field within what the headers
 * can carry (IBA 7.7, 8.3, 9.3) and the device has, before any packet is built from it. */
static bool ud_av_ok(const struct hm_dev *d, const struct hca_wqe_ud *ud)
{
	const struct hca_av *av = &ud->av;

	return ud->remote_qpn <= HCA_QPN_MASK && av->sl < 16 && av->flow_label < (1u << 20) &&
	       (!av->port_num || av->port_num <= d->nports);
}

uint8_t hm_wqe_check(const struct hm_dev *d, const struct hm_qp *qp, const uint8_t *w,
		      uint64_t *len, uint32_t *verr)
{
	const struct hca_wqe_ctrl *c = (const void *)w;
	const struct hca_wqe_data *sg = (const void *)(w + HCA_WQE_BASE_BYTES);
	uint32_t room = qp->sq_stride - HCA_WQE_BASE_BYTES;

	*len = 0;
	*verr = HCA_VERR_NONE;
	if (!hca_wqe_op_allowed(qp->type, c->opcode))
		*verr = HCA_VERR_WQE_OPCODE;
	else if (qp->type == HCA_QPT_UD && !ud_av_ok(d, (const void *)(c + 1)))
		*verr = HCA_VERR_WQE_UD_AV;
	else if ((c->flags & HCA_WQE_F_INLINE) && c->inline_len > room)
		*verr = HCA_VERR_WQE_INLINE_LEN;
	else if (!(c->flags & HCA_WQE_F_INLINE) &&
		 (c->num_sge > room / HCA_SGE_BYTES || c->num_sge > HM_MAX_SGE))
		*verr = HCA_VERR_WQE_NUM_SGE;
	if (*verr)
		return hca_verr_status(*verr);
	if (c->flags & HCA_WQE_F_INLINE)
		*len = c->inline_len;
	for (unsigned i = 0; !(c->flags & HCA_WQE_F_INLINE) && i < c->num_sge; i++)
		*len += sg[i].length;
	if (*len > 0x80000000ull || (qp->type == HCA_QPT_UD && *len > hm_qp_mtu(d, qp)))
		*verr = HCA_VERR_WQE_MSG_LEN;
	else if (hca_wqe_atomic(c->opcode) && *len != 8)
		*verr = HCA_VERR_WQE_ATOMIC_LEN;
	return hca_verr_status(*verr);
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
