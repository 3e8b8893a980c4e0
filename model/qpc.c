/* qpc: QP contexts and their on-chip cache (architecture §2). Contexts are backed by a store
 * in host memory that the driver gives the device at INIT_HCA (HM_QPC_BYTES per QPN). The cache
 * holds hca.qpc_cache_entries contexts with LRU replacement: a hit costs pipe.qpc_hit_cycles;
 * a miss costs a DMA read of the slot, plus a DMA write of the evicted entry when dirty. Also here:
 * QP creation, modify (the transition's effect on the queues) and the error flows that move a QP to
 * ERR or SQE and flush it. */
#include "model/dp.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The context image (struct hca_qpc, model/hw/formats.def) is what crosses PCIe: its size is
 * a design parameter (800 bytes, room reserved for growth), within the backing-store slot. */
_Static_assert(sizeof(struct hca_qpc) <= HM_QPC_BYTES, "QP context image larger than its slot");
_Static_assert(sizeof(((struct hca_qpc *)0)->atomic_psn) / sizeof(uint32_t) == HM_ATOMIC_SAVED,
	       "one image entry per saved atomic result");

/* Context fields kept under the same name in struct hm_qp and struct hca_qpc: flags (bool on
 * chip, 0 or 1 in the image), then values. The others (type, sq, rq, atomics) are renamed. */
#define QPC_FLAGS(X)                                                                               \
	X(valid) X(sq_sig_all) X(has_srq) X(cur_started) X(rnr_wait) X(nak_seen) X(rd_gap)         \
	X(timer_on) X(nak_sent) X(comm_est) X(drained_sent) X(last_wqe_sent) X(in_msg)             \
	X(uc_drop) X(rwqe_srq)
#define QPC_VALUES(X)                                                                              \
	X(state) X(retry_left) X(rnr_left) X(msg_kind) X(atomic_next) X(qpn) X(pdn)                \
	X(scqn) X(rcqn) X(srqn) X(attr) X(wr_va) X(sq_entries) X(sq_stride) X(sq_pi) X(sq_next)    \
	X(sq_done) X(sq_psn) X(cur_off) X(rd_out) X(acked_psn) X(nak_psn) X(sent_psn)              \
	X(rq_entries) X(rq_stride) X(rq_pi) X(rq_ci) X(epsn) X(msn) X(rwqe) X(rwqe_pdn)            \
	X(recv_off) X(wr_rkey) X(wr_left) X(wr_len) X(rd_in)

void hm_qpc_pack(const struct hm_qp *qp, struct hca_qpc *img)
{
	memset(img, 0, sizeof(*img));
#define X(f) img->f = qp->f;
	QPC_FLAGS(X)
	QPC_VALUES(X)
#undef X
	img->qp_type = qp->type;
	img->sq_addr = qp->sq;
	img->rq_addr = qp->rq;
	for (unsigned i = 0; i < HM_ATOMIC_SAVED; i++) {
		img->atomic_orig[i] = qp->atomics[i].orig;
		img->atomic_psn[i] = qp->atomics[i].psn;
		img->atomic_msn[i] = qp->atomics[i].msn;
		img->atomic_valid[i] = qp->atomics[i].valid;
	}
}

int hm_qpc_unpack(const struct hca_qpc *img, struct hm_qp *qp, const char **why)
{
	/* The rules every image the device writes satisfies, all checked before anything of qp
	 * is written. */
	static const struct {
		size_t off;      /* 24-bit PSN fields */
		const char *why;
	} psns[] = {
		{ offsetof(struct hca_qpc, sq_psn), "sq_psn: a PSN has 24 bits" },
		{ offsetof(struct hca_qpc, acked_psn), "acked_psn: a PSN has 24 bits" },
		{ offsetof(struct hca_qpc, nak_psn), "nak_psn: a PSN has 24 bits" },
		{ offsetof(struct hca_qpc, sent_psn), "sent_psn: a PSN has 24 bits" },
		{ offsetof(struct hca_qpc, epsn), "epsn: a PSN has 24 bits" },
	};
	uint32_t psn;

#define X(f)                                                                                       \
	if (img->f > 1) {                                                                          \
		*why = #f ": a flag is 0 or 1";                                                    \
		return -EINVAL;                                                                    \
	}
	QPC_FLAGS(X)
#undef X
	for (unsigned i = 0; i < HM_ATOMIC_SAVED; i++)
		if (img->atomic_valid[i] > 1) {
			*why = "atomic_valid: a flag is 0 or 1";
			return -EINVAL;
		}
	if (!img->valid) {
		*why = "valid: a created QP's image has it set";
		return -EINVAL;
	}
	if (img->qp_type != HCA_QPT_RC && img->qp_type != HCA_QPT_UC &&
	    img->qp_type != HCA_QPT_UD) {
		*why = "qp_type: not HCA_QPT_RC, UC or UD";
		return -EINVAL;
	}
	if (img->state >= HCA_QPS_COUNT) {
		*why = "state: not a QP state";
		return -EINVAL;
	}
	if (img->retry_left > 7 || img->rnr_left > 7) {
		*why = img->retry_left > 7 ? "retry_left: more than 7" : "rnr_left: more than 7";
		return -EINVAL;
	}
	if (img->msg_kind > 1) {
		*why = "msg_kind: 0 SEND or 1 RDMA WRITE";
		return -EINVAL;
	}
	if (img->atomic_next >= HM_ATOMIC_SAVED) {
		*why = "atomic_next: past the saved atomic results";
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(psns) / sizeof(psns[0]); i++) {
		memcpy(&psn, (const uint8_t *)img + psns[i].off, sizeof(psn));
		if (psn > HCA_PSN_MASK) {
			*why = psns[i].why;
			return -EINVAL;
		}
	}
#define X(f) qp->f = img->f != 0;
	QPC_FLAGS(X)
#undef X
#define X(f) qp->f = img->f;
	QPC_VALUES(X)
#undef X
	qp->type = img->qp_type;
	qp->sq = img->sq_addr;
	qp->rq = img->rq_addr;
	for (unsigned i = 0; i < HM_ATOMIC_SAVED; i++)
		qp->atomics[i] = (struct hm_atomic_saved){ .psn = img->atomic_psn[i],
							   .msn = img->atomic_msn[i],
							   .orig = img->atomic_orig[i],
							   .valid = img->atomic_valid[i] != 0 };
	return 0;
}

/* CRC-32 (the Ethernet polynomial, as the ICRC; zlib's crc32) of an image: what the device
 * keeps on chip of each image it writes, 4 bytes per QP. */
static uint32_t image_crc(const struct hca_qpc *img)
{
	return (uint32_t)crc32(0, (const Bytef *)img, sizeof(*img));
}

/* Pack qp's context and write it to its slot at *t (create, write-back), keeping the image's
 * CRC, what a read-back is checked against. */
static void qpc_write_slot(struct hm_dev *d, struct hm_qp *qp, sim_time_t *t)
{
	struct hca_qpc img;

	hm_qpc_pack(qp, &img);
	qp->slot_crc = image_crc(&img);
	if (!sim_dma_write_timed(d->fn, d->dp->qpc_base + (uint64_t)qp->qpn * HM_QPC_BYTES, &img,
				 sizeof(img), t))
		return;
	trace_warn_qpc_fault(d->devno, qp->qpn, "write");
}

/* A miss: read qp's slot at *t. The on-chip context stays the authority (the slot is host
 * memory a buggy or hostile driver can overwrite, and the device must not take sizes and
 * indexes from it); an image whose CRC is not that of the one written is reported (warn.qpc
 * and the qpc_corrupt counter), naming the rule it breaks, or else the first field in which
 * it differs from the device's context. */
static void qpc_read_slot(struct hm_dev *d, struct hm_qp *qp, sim_time_t *t)
{
	struct hca_qpc img, now;
	struct hm_qp scratch = { 0 };
	const char *why = NULL;
	char field[64];
	size_t off = 0;

	if (sim_dma_read_timed(d->fn, d->dp->qpc_base + (uint64_t)qp->qpn * HM_QPC_BYTES, &img,
			       sizeof(img), t)) {
		trace_warn_qpc_fault(d->devno, qp->qpn, "read");
		return;
	}
	if (image_crc(&img) == qp->slot_crc)
		return;
	d->dp->qpc_corrupt++;
	if (hm_qpc_unpack(&img, &scratch, &why)) {
		trace_warn_qpc_invalid(d->devno, qp->qpn, why);
		return;
	}
	hm_qpc_pack(qp, &now);
	while (off < sizeof(img) && ((const uint8_t *)&img)[off] == ((const uint8_t *)&now)[off])
		off++;
	if (off == sizeof(img))
		snprintf(field, sizeof(field), "none");
	else if (!hca_field_path("hca_qpc", off, field, sizeof(field)))
		snprintf(field, sizeof(field), "byte %zu", off);
	trace_warn_qpc_differs(d->devno, qp->qpn, field);
}

struct hm_dp *hm_dp_create(struct hm_dev *d)
{
	struct hm_dp *dp = calloc(1, sizeof(*dp));

	SIM_ASSERT(dp != NULL, "out of memory");
	dp->qpc_entries = (uint32_t)d->cfg.qpc_cache_entries;
	return dp;
}

void hm_dp_destroy(struct hm_dp *dp)
{
	if (!dp)
		return;
	for (uint32_t i = 0; i < dp->nqps; i++) {
		if (dp->qps[i]) {
			hm_rxq_free(dp->qps[i]);
			free(dp->qps[i]->wqe_buf);
			free(dp->qps[i]->flight);
			free(dp->qps[i]->rsge);
			free(dp->qps[i]->rpf_buf);
			free(dp->qps[i]);
		}
	}
	free(dp->qps);
	free(dp->cqs);
	free(dp->srqs);
	free(dp->mkeys);
	free(dp);
}

/* Grow a context array to hold index i. */
static void *grow(void *arr, uint32_t *n, uint32_t i, size_t elem)
{
	uint32_t cap = *n ? *n : 64;
	void *a;

	if (i < *n)
		return arr;
	while (cap <= i)
		cap *= 2;
	a = realloc(arr, (size_t)cap * elem);
	SIM_ASSERT(a != NULL, "out of memory growing a context table to %u", cap);
	memset((char *)a + (size_t)*n * elem, 0, (size_t)(cap - *n) * elem);
	*n = cap;
	return a;
}

void hm_mkey_write(struct hm_dev *d, uint32_t index, const struct hm_mkey *mk)
{
	d->dp->mkeys = grow(d->dp->mkeys, &d->dp->nmkeys, index, sizeof(*mk));
	d->dp->mkeys[index] = *mk;
}

void hm_cq_write(struct hm_dev *d, uint32_t cqn, const struct hm_cq *cq)
{
	d->dp->cqs = grow(d->dp->cqs, &d->dp->ncqs, cqn, sizeof(*cq));
	d->dp->cqs[cqn] = *cq;
}

struct hm_cq *hm_cq_get(struct hm_dev *d, uint32_t cqn)
{
	return cqn < d->dp->ncqs && d->dp->cqs[cqn].valid ? &d->dp->cqs[cqn] : NULL;
}

void hm_srq_write(struct hm_dev *d, uint32_t srqn, const struct hm_srq *srq)
{
	d->dp->srqs = grow(d->dp->srqs, &d->dp->nsrqs, srqn, sizeof(*srq));
	d->dp->srqs[srqn] = *srq;
}

struct hm_srq *hm_srq_get(struct hm_dev *d, uint32_t srqn)
{
	return srqn < d->dp->nsrqs && d->dp->srqs[srqn].valid ? &d->dp->srqs[srqn] : NULL;
}

void hm_qp_create(struct hm_dev *d, uint32_t qpn, const struct hm_qp *init, sim_time_t t)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *qp;

	if (qpn >= dp->nqps) {
		uint32_t n = dp->nqps;

		dp->qps = grow(dp->qps, &n, qpn, sizeof(*dp->qps));
		dp->nqps = n;
	}
	SIM_ASSERT(!dp->qps[qpn], "QP 0x%x created twice", qpn);
	qp = calloc(1, sizeof(*qp));
	SIM_ASSERT(qp != NULL, "out of memory");
	*qp = *init;
	qp->valid = true;
	qp->qpn = qpn;
	qp->state = HCA_QPS_RESET;
	qp->flight = calloc(qp->sq_entries ? qp->sq_entries : 1, sizeof(*qp->flight));
	qp->wqe_buf = malloc((size_t)(qp->sq_entries ? qp->sq_entries : 1) * qp->sq_stride + 1);
	qp->rsge = calloc(HM_MAX_SGE, sizeof(*qp->rsge));
	qp->rpf_buf = calloc(HM_MAX_SGE, HCA_SGE_BYTES);
	SIM_ASSERT(qp->flight && qp->wqe_buf && qp->rsge && qp->rpf_buf, "out of memory");
	dp->qps[qpn] = qp;
	/* The new context goes to its backing-store slot; it is not cached until used. */
	qp->cached = false;
	qp->dirty = false;
	qp->lru_prev = qp->lru_next = NULL;
	qp->rpf_valid = false;
	qpc_write_slot(d, qp, &t);
}

static void lru_unlink(struct hm_dp *dp, struct hm_qp *q)
{
	if (q->lru_prev)
		q->lru_prev->lru_next = q->lru_next;
	else
		dp->lru_old = q->lru_next;
	if (q->lru_next)
		q->lru_next->lru_prev = q->lru_prev;
	else
		dp->lru_new = q->lru_prev;
	q->lru_prev = q->lru_next = NULL;
}

static void lru_append(struct hm_dp *dp, struct hm_qp *q)
{
	q->lru_prev = dp->lru_new;
	q->lru_next = NULL;
	if (dp->lru_new)
		dp->lru_new->lru_next = q;
	else
		dp->lru_old = q;
	dp->lru_new = q;
}

void hm_qp_destroy(struct hm_dev *d, uint32_t qpn)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *qp = qpn < dp->nqps ? dp->qps[qpn] : NULL;

	if (!qp)
		return;
	if (qp->cached) {
		lru_unlink(dp, qp);
		dp->qpc_used--;
	}
	hm_rxq_free(qp);
	free(qp->wqe_buf);
	free(qp->flight);
	free(qp->rsge);
	free(qp->rpf_buf);
	free(qp);
	dp->qps[qpn] = NULL;
}

const struct hm_qp *hm_qp_peek(struct hm_dev *d, uint32_t qpn)
{
	return qpn < d->dp->nqps ? d->dp->qps[qpn] : NULL;
}

/* Evict the least recently used cached context, writing it back when dirty. */
static void qpc_evict(struct hm_dev *d, sim_time_t *t)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *victim = dp->lru_old;

	SIM_ASSERT(victim != NULL, "QPC cache full of nothing (%u used)", dp->qpc_used);
	lru_unlink(dp, victim);
	if (victim->dirty) {
		dp->qpc_writebacks++;
		qpc_write_slot(d, victim, t);
	}
	victim->cached = false;
	victim->dirty = false;
	dp->qpc_used--;
}

struct hm_qp *hm_qpc_get(struct hm_dev *d, uint32_t qpn, sim_time_t *t)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *qp = qpn < dp->nqps ? dp->qps[qpn] : NULL;

	if (!qp)
		return NULL;
	if (qp->cached) {
		lru_unlink(dp, qp);
		lru_append(dp, qp);
		dp->qpc_hits++;
		*t = sim_clock_after(&d->core, *t, d->cfg.qpc_hit_cycles);
	} else {
		dp->qpc_misses++;
		if (dp->qpc_used >= dp->qpc_entries)
			qpc_evict(d, t);
		qpc_read_slot(d, qp, t);
		qp->cached = true;
		lru_append(dp, qp);
		dp->qpc_used++;
	}
	qp->dirty = true;
	return qp;
}

/* ---- transitions ---- */

static void qp_reset_queues(struct hm_qp *qp)
{
	qp->sq_pi = qp->sq_next = qp->sq_done = 0;
	qp->sq_fetch_lo = qp->sq_fetched = 0;
	qp->sq_fetch_err = false;
	qp->sq_fetch_ready = 0;
	qp->sq_psn = 0;
	qp->cur_off = 0;
	qp->cur_started = false;
	qp->rd_out = 0;
	qp->rq_pi = qp->rq_ci = 0;
	qp->epsn = 0;
	qp->msn = 0;
	qp->nak_sent = qp->in_msg = qp->uc_drop = false;
	qp->recv_off = 0;
	qp->rd_in = 0;
	qp->rnr_wait = false;
	qp->timer_on = false; /* a pending timer event finds it off */
	qp->comm_est = false;
	qp->drained_sent = false;
	qp->last_wqe_sent = false;
	qp->nak_seen = false;
	qp->rd_gap = false;
	memset(qp->atomics, 0, sizeof(qp->atomics)); /* no result survives a reset */
	qp->rpf_valid = false;
	qp->atomic_next = 0;
	hm_rxq_free(qp);
}

void hm_qp_modify(struct hm_dev *d, uint32_t qpn, const struct hca_qp_attr *a, uint32_t mask,
		  unsigned next, sim_time_t t)
{
	struct hm_qp *qp = hm_qpc_get(d, qpn, &t);
	unsigned prev, prev_mig;

	SIM_ASSERT(qp != NULL, "modify of unknown qpn 0x%x", qpn);
	prev = qp->state;
	prev_mig = qp->attr.path_mig_state;
	qp->attr = *a;
	if (mask & (HCA_QPA_PATH_MIG_STATE | HCA_QPA_ALT_PATH)) {
		/* IBA 17.2.8: REARM becomes ARMED once an alternate path is loaded (at once: the
		 * model needs no handshake to load it); MIGRATED written while ARMED is a
		 * migration the software asks for. */
		if (qp->attr.path_mig_state == HCA_MIG_REARM && qp->attr.alt_port_num)
			qp->attr.path_mig_state = HCA_MIG_ARMED;
		else if ((mask & HCA_QPA_PATH_MIG_STATE) && a->path_mig_state == HCA_MIG_MIGRATED &&
			 prev_mig == HCA_MIG_ARMED) {
			qp->attr.path_mig_state = HCA_MIG_ARMED;
			hm_qp_migrate(d, qp, "requested");
		}
	}
	if (mask & HCA_QPA_SQ_PSN) {
		qp->sq_psn = a->sq_psn & HCA_PSN_MASK;
		qp->sent_psn = qp->sq_psn;
		qp->acked_psn = (qp->sq_psn - 1) & HCA_PSN_MASK;
	}
	if (mask & HCA_QPA_RQ_PSN)
		qp->epsn = a->rq_psn & HCA_PSN_MASK;
	if (mask & HCA_QPA_RETRY_CNT)
		qp->retry_left = a->retry_cnt;
	if (mask & HCA_QPA_RNR_RETRY)
		qp->rnr_left = a->rnr_retry;
	qp->state = (uint8_t)next;
	if (next == HCA_QPS_SQD && prev != HCA_QPS_SQD) {
		qp->drained_sent = false;
		hm_qp_check_drained(d, qp);
	}
	if (next == HCA_QPS_RESET)
		qp_reset_queues(qp);
	else if (next == HCA_QPS_ERR && prev != HCA_QPS_ERR)
		hm_qp_flush(d, qp, t);
	else if (next == HCA_QPS_RTS && qp->sq_pi != qp->sq_next) {
		hm_sched_add(d, qp); /* SQD -> RTS: resume sending */
		hm_req_kick(d, t);
	}
}

void hm_qp_check_drained(struct hm_dev *d, struct hm_qp *qp)
{
	uint32_t data[6] = { qp->qpn, 0, 0, 0, 0, 0 };

	/* IBA 10.3.1.2 / 11.6.3: SQD.drained once every WQE started before the transition
	 * has completed; the event only with en_sqd_async_notify. */
	if (qp->state != HCA_QPS_SQD || qp->drained_sent || qp->cur_started ||
	    qp->sq_done != qp->sq_next)
		return;
	qp->drained_sent = true;
	if (qp->attr.en_sqd_async_notify)
		hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_SQ_DRAINED, data);
}

void hm_qp_error(struct hm_dev *d, struct hm_qp *qp, unsigned state, sim_time_t t)
{
	trace_qp_error(d->devno, qp->qpn, hca_qps_name(qp->state), hca_qps_name(state));
	qp->state = (uint8_t)state;
	if (state == HCA_QPS_ERR || state == HCA_QPS_SQE)
		hm_qp_flush(d, qp, t);
}

/* True (and one injected error used up) if the next read of client for object num is to
 * fail as a PCIe completion with Unsupported Request status would. */
static bool dma_inject_hit(struct hm_dev *d, enum hm_dma_client client, uint32_t num)
{
	for (int i = 0; i < HM_DMA_INJECT_MAX; i++) {
		struct hm_dma_inject *j = &d->dp->dma_inject[i];

		if (j->left && j->client == client && j->num == num) {
			j->left--;
			trace_pcie_dma_rd_inject(d->devno, client, num, j->left);
			return true;
		}
	}
	return false;
}

bool hm_wqe_read(struct hm_dev *d, enum hm_dma_client client, uint32_t num, uint64_t addr,
		 void *buf, size_t len, sim_time_t *t)
{
	return dma_inject_hit(d, client, num) || sim_dma_read_timed(d->fn, addr, buf, len, t);
}

void hm_qp_fatal(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	uint32_t data[6] = { qp->qpn, 0, 0, 0, 0, 0 };

	if (qp->state == HCA_QPS_ERR || qp->state == HCA_QPS_RESET)
		return;
	trace_qp_fatal(d->devno, qp->qpn);
	hm_qp_error(d, qp, HCA_QPS_ERR, t);
	hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_FATAL, data);
}

void hm_srq_fatal(struct hm_dev *d, uint32_t srqn, sim_time_t t)
{
	struct hm_srq *srq = hm_srq_get(d, srqn);
	uint32_t data[6] = { srqn, 0, 0, 0, 0, 0 };

	if (!srq || srq->error)
		return;
	srq->error = true;
	trace_qp_srq_fatal(d->devno, srqn);
	hm_eq_post(d, HCA_EQE_SRQ_ERROR, 0, data);
	for (uint32_t n = 0; n < d->dp->nqps; n++) {
		const struct hm_qp *q = d->dp->qps[n];

		if (q && q->valid && q->has_srq && q->srqn == srqn && q->state != HCA_QPS_RESET &&
		    q->state != HCA_QPS_ERR) {
			sim_time_t tq = t;

			hm_qp_error(d, hm_qpc_get(d, n, &tq), HCA_QPS_ERR, tq);
		}
	}
}

bool hm_qp_migrate(struct hm_dev *d, struct hm_qp *qp, const char *why)
{
	uint32_t data[6] = { qp->qpn, 0, 0, 0, 0, 0 };
	unsigned alt = qp->attr.alt_port_num;

	if (!alt || alt > d->nports || d->ports[alt - 1].state != 4 /* ACTIVE */) {
		/* IBA 17.2.8: the alternate path cannot be used; the QP stays where it is. */
		trace_qp_migrate_fail(d->devno, qp->qpn, alt, why);
		hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_PATH_MIG_ERR, data);
		return false;
	}
	/* The alternate path becomes the primary one; MIGRATED until software re-arms. */
	qp->attr.av = qp->attr.alt_av;
	qp->attr.port_num = qp->attr.alt_port_num;
	qp->attr.pkey_index = qp->attr.alt_pkey_index;
	qp->attr.timeout = qp->attr.alt_timeout;
	qp->attr.path_mig_state = HCA_MIG_MIGRATED;
	qp->dirty = true;
	trace_qp_migrate(d->devno, qp->qpn, qp->attr.port_num, qp->attr.av.dlid, why);
	hm_eq_post(d, HCA_EQE_QP_EVENT, HCA_QP_EV_PATH_MIG, data);
	return true;
}
