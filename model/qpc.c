/* qpc: QP contexts and their on-chip cache (architecture §2). Contexts are backed by a store
 * in host memory that the driver gives the device at INIT_HCA (HM_QPC_BYTES per QPN). The cache
 * holds hca.qpc_cache_entries contexts with LRU replacement: a hit costs HM_QPC_HIT_CYCLES;
 * a miss costs a DMA read of the slot, plus a DMA write of the evicted entry when dirty. The
 * cache's tags are a block with an RTL twin (model/twin.h "qpc", rtl/qpc.sv); the contexts,
 * their images and the checks of an image read back are this file's. */
#include "model/qpc.h"
#include "model/fcov.h"
#include "model/waves.h"
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

/* Context fields kept under the same name in struct hca_qpc as in their part of struct hm_qp
 * (model/ctx.h): flags (bool on chip, 0 or 1 in the image), then values. The others (type,
 * sq, rq, atomics) are renamed. */
#define QPC_FLAGS(X)                                                                               \
	X(valid, valid) X(sq_sig_all, sq_sig_all) X(has_srq, has_srq)                              \
	X(cur_started, req.cur_started) X(rnr_wait, comp.rnr_wait) X(nak_seen, comp.nak_seen)      \
	X(rd_gap, comp.rd_gap) X(timer_on, tmr.on) X(nak_sent, resp.nak_sent)                      \
	X(comm_est, resp.comm_est) X(drained_sent, drained_sent)                                   \
	X(last_wqe_sent, resp.last_wqe_sent) X(in_msg, resp.in_msg) X(uc_drop, resp.uc_drop)       \
	X(rwqe_srq, resp.rwqe_srq)
#define QPC_VALUES(X)                                                                              \
	X(state, state) X(retry_left, comp.retry_left) X(rnr_left, comp.rnr_left)                  \
	X(msg_kind, resp.msg_kind) X(atomic_next, resp.atomic_next) X(qpn, qpn) X(pdn, pdn)        \
	X(scqn, scqn) X(rcqn, rcqn) X(srqn, srqn) X(attr, attr) X(wr_va, resp.wr_va)               \
	X(sq_entries, sq_entries) X(sq_stride, sq_stride) X(sq_pi, sq_pi) X(sq_next, req.sq_next)  \
	X(sq_done, comp.sq_done) X(sq_psn, req.sq_psn) X(cur_off, req.cur_off)                     \
	X(rd_out, req.rd_out) X(acked_psn, comp.acked_psn) X(nak_psn, comp.nak_psn)                \
	X(sent_psn, req.sent_psn) X(rq_entries, rq_entries) X(rq_stride, rq_stride)                \
	X(rq_pi, rq_pi) X(rq_ci, resp.rq_ci) X(epsn, resp.epsn) X(msn, resp.msn)                   \
	X(rwqe, resp.rwqe) X(rwqe_pdn, resp.rwqe_pdn) X(recv_off, resp.recv_off)                   \
	X(wr_rkey, resp.wr_rkey) X(wr_left, resp.wr_left) X(wr_len, resp.wr_len)                   \
	X(rd_in, resp.rd_in) X(xrcd, xrcd) X(xrc_srqn, resp.xrc_srqn) X(uid, uid)

void hm_qpc_pack(const struct hm_qp *qp, struct hca_qpc *img)
{
	memset(img, 0, sizeof(*img));
#define X(f, path) img->f = qp->path;
	QPC_FLAGS(X)
	QPC_VALUES(X)
#undef X
	img->qp_type = qp->type;
	img->sq_addr = qp->sq;
	img->rq_addr = qp->rq;
	for (unsigned i = 0; i < HM_ATOMIC_SAVED; i++) {
		img->atomic_orig[i] = qp->resp.atomics[i].orig;
		img->atomic_psn[i] = qp->resp.atomics[i].psn;
		img->atomic_msn[i] = qp->resp.atomics[i].msn;
		img->atomic_valid[i] = qp->resp.atomics[i].valid;
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

#define X(f, path)                                                                                 \
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
	    img->qp_type != HCA_QPT_UD && img->qp_type != HCA_QPT_XRC_SEND &&
	    img->qp_type != HCA_QPT_XRC_RECV) {
		*why = "qp_type: not HCA_QPT_RC, UC, UD, XRC_SEND or XRC_RECV";
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
#define X(f, path) qp->path = img->f != 0;
	QPC_FLAGS(X)
#undef X
#define X(f, path) qp->path = img->f;
	QPC_VALUES(X)
#undef X
	qp->type = img->qp_type;
	qp->sq = img->sq_addr;
	qp->rq = img->rq_addr;
	for (unsigned i = 0; i < HM_ATOMIC_SAVED; i++)
		qp->resp.atomics[i] = (struct hm_atomic_saved){ .psn = img->atomic_psn[i],
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
static void qpc_write_slot(struct hm_dev *d, struct hm_qp *qp, uint64_t addr, sim_time_t *t)
{
	struct hca_qpc img;

	SIM_ASSERT(qp != NULL, "qpc: write-back of a context that is gone");
	hm_qpc_pack(qp, &img);
	qp->cache.slot_crc = image_crc(&img);
	if (!sim_dma_write_timed(d->fn, addr, &img, sizeof(img), t))
		return;
	trace_warn_qpc_fault(d->devno, qp->qpn, "write");
}

/* A miss: read qp's slot at *t. The on-chip context stays the authority (the slot is host
 * memory a buggy or hostile driver can overwrite, and the device must not take sizes and
 * indexes from it); an image whose CRC is not that of the one written is reported (warn.qpc
 * and the qpc_corrupt counter), naming the rule it breaks, or else the first field in which
 * it differs from the device's context. */
static void qpc_read_slot(struct hm_dev *d, struct hm_qp *qp, uint64_t addr, sim_time_t *t)
{
	struct hca_qpc img, now;
	struct hm_qp scratch = { 0 };
	const char *why = NULL;
	char field[64];
	size_t off = 0;

	if (sim_dma_read_timed(d->fn, addr, &img, sizeof(img), t)) {
		trace_warn_qpc_fault(d->devno, qp->qpn, "read");
		return;
	}
	if (image_crc(&img) == qp->cache.slot_crc)
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

/* ---- the C twin of rtl/qpc.sv: tags, dirty bits and LRU order of the cached contexts ----
 * One line per QPN (as the RTL's SRAM words: QPNs never used stay untouched, unmapped pages):
 * cached, dirty and the LRU list's links; the list's head is the least recently used. */

#define QPC_NIL UINT32_MAX

struct qpc_twin {
	uint32_t nqps;
	uint32_t used, head, tail;
	uint32_t fill;           /* the miss in progress: its QPN and store */
	uint64_t fill_base;
	struct qpc_line {
		uint32_t prev, next;
		bool cached, dirty;
	} *l;
};

static void *qpc_create(struct hm_dev *d, uint32_t nqps)
{
	struct qpc_twin *t = calloc(1, sizeof(*t));

	(void)d;
	SIM_ASSERT(t != NULL, "out of memory");
	t->nqps = nqps;
	t->head = t->tail = QPC_NIL;
	t->l = calloc(nqps, sizeof(*t->l)); /* pages untouched stay unmapped */
	SIM_ASSERT(t->l != NULL, "out of memory");
	return t;
}

static void qpc_destroy(void *b)
{
	struct qpc_twin *t = b;

	free(t->l);
	free(t);
}

static void lru_unlink(struct qpc_twin *t, uint32_t q)
{
	struct qpc_line *l = &t->l[q];

	if (l->prev != QPC_NIL)
		t->l[l->prev].next = l->next;
	else
		t->head = l->next;
	if (l->next != QPC_NIL)
		t->l[l->next].prev = l->prev;
	else
		t->tail = l->prev;
}

static void lru_append(struct qpc_twin *t, uint32_t q)
{
	t->l[q].prev = t->tail;
	t->l[q].next = QPC_NIL;
	if (t->tail != QPC_NIL)
		t->l[t->tail].next = q;
	else
		t->head = q;
	t->tail = q;
}

static void twin_req(struct qpc_twin *t, struct hm_qpc_out *out, uint8_t req, uint8_t tag,
		     uint32_t qpn)
{
	out->req = req;
	out->req_tag = tag;
	out->req_qpn = qpn;
	out->req_addr = t->fill_base + (uint64_t)qpn * HM_QPC_BYTES;
	out->req_len = sizeof(struct hca_qpc);
}

static void qpc_lookup_model(void *b, const struct hm_qpc_in *in, struct hm_qpc_out *out)
{
	struct qpc_twin *t = b;
	struct qpc_line *l;

	SIM_ASSERT(in->qpn < t->nqps && in->entries, "qpc: lookup of QPN %u of %u, %u entries",
		   in->qpn, t->nqps, in->entries);
	l = &t->l[in->qpn];
	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle + HM_QPC_HIT_CYCLES;
	if (l->cached) {
		out->done = out->hit = true;
		l->dirty |= in->write;
		lru_unlink(t, in->qpn);
		lru_append(t, in->qpn);
		return;
	}
	if (t->used >= in->entries) {
		out->evict = true;
		out->victim = t->head;
		out->wb = t->l[t->head].dirty;
		lru_unlink(t, t->head);
		t->l[out->victim] = (struct qpc_line){ 0 };
		t->used--;
	}
	*l = (struct qpc_line){ .cached = true, .dirty = in->write };
	lru_append(t, in->qpn);
	t->used++;
	t->fill = in->qpn;
	t->fill_base = in->base;
	if (out->wb)
		twin_req(t, out, HM_QPC_REQ_WRITE, HM_QPC_TAG_WB, out->victim);
	else
		twin_req(t, out, HM_QPC_REQ_READ, HM_QPC_TAG_FILL, in->qpn);
}

static void qpc_complete_model(void *b, const struct hm_qpc_cpl_in *in, struct hm_qpc_out *out)
{
	struct qpc_twin *t = b;

	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle;
	if (in->tag == HM_QPC_TAG_WB)
		twin_req(t, out, HM_QPC_REQ_READ, HM_QPC_TAG_FILL, t->fill);
	else
		out->done = true;
}

static void qpc_forget_model(void *b, const struct hm_qpc_forget_in *in,
			     struct hm_qpc_forget_out *out)
{
	struct qpc_twin *t = b;

	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle + HM_QPC_HIT_CYCLES;
	if (in->qpn >= t->nqps || !t->l[in->qpn].cached)
		return;
	out->was_cached = true;
	lru_unlink(t, in->qpn);
	t->l[in->qpn] = (struct qpc_line){ 0 };
	t->used--;
}

const struct hm_qpc_ops hm_qpc_model = { { qpc_create, qpc_destroy, NULL, NULL, 0, NULL, NULL },
					 qpc_lookup_model, qpc_complete_model, qpc_forget_model };

/* ---- the port ---- */

#define QPC_OUT_FIELDS                                                                             \
	HM_TWIN_FIELD(struct hm_qpc_out, cycle), HM_TWIN_FIELD(struct hm_qpc_out, done),           \
		HM_TWIN_FIELD(struct hm_qpc_out, hit), HM_TWIN_FIELD(struct hm_qpc_out, evict),    \
		HM_TWIN_FIELD(struct hm_qpc_out, victim), HM_TWIN_FIELD(struct hm_qpc_out, wb),    \
		HM_TWIN_FIELD(struct hm_qpc_out, req), HM_TWIN_FIELD(struct hm_qpc_out, req_tag),  \
		HM_TWIN_FIELD(struct hm_qpc_out, req_qpn),                                         \
		HM_TWIN_FIELD(struct hm_qpc_out, req_addr),                                        \
		HM_TWIN_FIELD(struct hm_qpc_out, req_len)
HM_TWIN_OP(qpc, lookup, hm_qpc_in, hm_qpc_out, hm_waves_qpc_lookup, NULL, QPC_OUT_FIELDS);
HM_TWIN_OP(qpc, complete, hm_qpc_cpl_in, hm_qpc_out, hm_waves_qpc_complete, NULL,
	   QPC_OUT_FIELDS);
HM_TWIN_OP(qpc, forget, hm_qpc_forget_in, hm_qpc_forget_out, hm_waves_qpc_forget, NULL,
	   HM_TWIN_FIELD(struct hm_qpc_forget_out, cycle),
	   HM_TWIN_FIELD(struct hm_qpc_forget_out, was_cached));

void hm_qpc_lookup(struct hm_dev *d, const struct hm_qpc_in *in, struct hm_qpc_out *out)
{
	struct hm_qpc_out rtl;

	hm_twin_call(d, &qpc_lookup_op, in->cycle, in, out, &rtl);
}

void hm_qpc_complete(struct hm_dev *d, const struct hm_qpc_cpl_in *in, struct hm_qpc_out *out)
{
	struct hm_qpc_out rtl;

	hm_twin_call(d, &qpc_complete_op, in->cycle, in, out, &rtl);
}

void hm_qpc_twin_forget(struct hm_dev *d, const struct hm_qpc_forget_in *in,
			struct hm_qpc_forget_out *out)
{
	struct hm_qpc_forget_out rtl;

	hm_twin_call(d, &qpc_forget_op, in->cycle, in, out, &rtl);
}

/* ---- the cache as the data path uses it ---- */

void hm_qpc_store(struct hm_dev *d, struct hm_qp *qp, sim_time_t *t)
{
	qpc_write_slot(d, qp, d->dp->qpc_base + (uint64_t)qp->qpn * HM_QPC_BYTES, t);
}

void hm_qpc_forget(struct hm_dev *d, struct hm_qp *qp)
{
	struct hm_qpc_forget_in in = { .cycle = sim_clock_cycles(&d->core, sim_now(d->k)),
				       .qpn = qp->qpn };
	struct hm_qpc_forget_out out;

	hm_qpc_twin_forget(d, &in, &out);
}

/* The context of qpn for a use at *t: the block's lookup, and on a miss its DMA requests
 * performed in order at the PCIe model's time (the write-back of the victim, then the fill),
 * each completion handed back in the cycle it completes. *t ends at the hit's answer or the
 * fill's completion. */
struct hm_qp *hm_qpc_get(struct hm_dev *d, uint32_t qpn, sim_time_t *t)
{
	struct hm_dp *dp = d->dp;
	struct hm_qp *qp = hm_qp_lookup(d, qpn);
	struct hm_qpc_in in = { .qpn = qpn, .write = true, .entries = dp->qpc_entries,
				.base = dp->qpc_base };
	struct hm_qpc_out out;

	if (!qp)
		return NULL;
	in.cycle = sim_clock_edge(&d->core, *t) / d->core.period_ps;
	hm_qpc_lookup(d, &in, &out);
	if (out.hit) {
		dp->qpc_hits++;
		hm_fcov_hit(HM_FCOV_qpc, HM_FCOV_QPC_HIT);
		*t = (sim_time_t)out.cycle * d->core.period_ps;
		return qp;
	}
	dp->qpc_misses++;
	hm_fcov_hit(HM_FCOV_qpc, HM_FCOV_QPC_MISS);
	if (out.evict)
		hm_fcov_hit(HM_FCOV_qpc, out.wb ? HM_FCOV_QPC_WRITE_BACK : HM_FCOV_QPC_EVICT_CLEAN);
	while (!out.done) {
		struct hm_qpc_cpl_in cpl = { .tag = out.req_tag };

		if (out.req == HM_QPC_REQ_WRITE) {
			dp->qpc_writebacks++;
			qpc_write_slot(d, hm_qp_lookup(d, out.req_qpn), out.req_addr, t);
		} else {
			qpc_read_slot(d, qp, out.req_addr, t);
		}
		cpl.cycle = sim_clock_cycles(&d->core, *t);
		hm_qpc_complete(d, &cpl, &out);
	}
	return qp;
}
