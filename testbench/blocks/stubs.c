/* The stub neighbours of the block tests (stubs.h): weak, recording, scripted. */
#include "testbench/blocks/stubs.h"
#include "model/cqe.h"
#include "model/dma.h"
#include "model/eq.h"
#include "model/port.h"
#include "model/qp.h"
#include "model/qpc.h"
#include "model/waves.h"
#include "model/wqe_fetch.h"
#include "model/comp.h"
#include "sim/hcasim.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLK_WEAK __attribute__((weak))

struct blk_log blk;
struct blk_script blk_do;
uint8_t *blk_mem;
struct hm_dev *blk_dev;

#define NQPS 64u

static void note(const char *name)
{
	if (blk.ncalls < sizeof(blk.calls) / sizeof(blk.calls[0]))
		blk.calls[blk.ncalls++] = name;
}

/* Append a call record to arr (BLK_MAX kept, every one counted). */
#define RECORD(arr, n, q, va, vb, vc)                                                              \
	do {                                                                                       \
		if ((n) < BLK_MAX)                                                                 \
			(arr)[(n)] = (struct blk_call){ (q), (va), (vb), (vc) };                   \
		(n)++;                                                                             \
	} while (0)

int blk_called(const char *name, unsigned from)
{
	for (unsigned i = from; i < blk.ncalls; i++)
		if (!strcmp(blk.calls[i], name))
			return (int)i;
	return -1;
}

/* The fake host memory: [addr, addr + len) inside it. */
static bool in_mem(uint64_t addr, size_t len)
{
	return addr <= BLK_MEM_BYTES && len <= BLK_MEM_BYTES - addr;
}

static void record_dma(enum blk_dma_kind kind, uint64_t addr, size_t len, uint8_t client,
		       uint32_t num)
{
	note(kind == BLK_DMA_WQE ? "hm_wqe_read" : kind == BLK_DMA_RD ? "sim_dma_read_timed"
			       : kind == BLK_DMA_WR		      ? "sim_dma_write_timed"
			       : kind == BLK_DMA_RD_CT		      ? "sim_dma_read_ct"
								      : "sim_dma_write_ct");
	if (blk.ndma < BLK_MAX)
		blk.dma[blk.ndma] = (struct blk_dma){ kind, addr, len, client, num };
	blk.ndma++;
}

/* ---- PCIe: timed and cut-through DMA on the fake memory ---- */

BLK_WEAK int sim_dma_read_timed(struct sim_pcie_fn *fn, uint64_t addr, void *dst, size_t len,
				sim_time_t *t_ps)
{
	(void)fn;
	record_dma(BLK_DMA_RD, addr, len, 0, 0);
	*t_ps += blk_do.dma_ps;
	if (blk_do.dma_fail || !in_mem(addr, len))
		return -EFAULT;
	memcpy(dst, blk_mem + addr, len);
	return 0;
}

BLK_WEAK int sim_dma_write_timed(struct sim_pcie_fn *fn, uint64_t addr, const void *src,
				 size_t len, sim_time_t *t_ps)
{
	(void)fn;
	record_dma(BLK_DMA_WR, addr, len, 0, 0);
	*t_ps += blk_do.dma_ps;
	if (!in_mem(addr, len))
		return -EFAULT;
	memcpy(blk_mem + addr, src, len);
	return 0;
}

BLK_WEAK int sim_dma_read_ct(struct sim_pcie_fn *fn, uint64_t addr, void *dst, size_t len,
			     sim_time_t *t_ps, uint32_t mbps, uint64_t off, sim_time_t *need)
{
	(void)fn, (void)mbps, (void)off;
	record_dma(BLK_DMA_RD_CT, addr, len, 0, 0);
	*t_ps += blk_do.dma_ps;
	if (*need < *t_ps)
		*need = *t_ps;
	if (blk_do.dma_fail || !in_mem(addr, len))
		return -EFAULT;
	memcpy(dst, blk_mem + addr, len);
	return 0;
}

BLK_WEAK void sim_dma_write_ct(struct sim_pcie_fn *fn, uint64_t addr, const void *src, size_t len,
			       sim_time_t ready, uint32_t mbps, uint64_t tail)
{
	(void)fn, (void)ready, (void)mbps, (void)tail;
	record_dma(BLK_DMA_WR_CT, addr, len, 0, 0);
	if (in_mem(addr, len))
		memcpy(blk_mem + addr, src, len);
}

/* The receive path's payload writes that hold their frame go out as sim_dma_write_ct does
 * (the frame is the caller's: a stub neighbour copies). */
BLK_WEAK void hm_dma_write_held(struct hm_dev *d, uint64_t iova, const void *src, uint32_t len,
				const struct hm_ct *ct, uint64_t tail)
{
	(void)d;
	sim_dma_write_ct(NULL, iova, src, len, ct->ready, 1, tail);
}

/* ---- dma: WQE reads ---- */

BLK_WEAK bool hm_wqe_read(struct hm_dev *d, enum hm_dma_client client, uint32_t num, uint64_t addr,
			  void *buf, size_t len, sim_time_t *t)
{
	(void)d;
	record_dma(BLK_DMA_WQE, addr, len, (uint8_t)client, num);
	*t += blk_do.dma_ps;
	if (blk_do.wqe_read_fail || !in_mem(addr, len))
		return true;
	memcpy(buf, blk_mem + addr, len);
	return false;
}

/* ---- port ---- */

BLK_WEAK sim_time_t hm_port_send(struct hm_dev *d, unsigned port, struct hm_pkt *p, sim_time_t t,
				 sim_time_t need)
{
	(void)d;
	note("hm_port_send");
	if (blk.npkts < BLK_MAX) {
		struct blk_pkt *b = &blk.pkts[blk.npkts];

		b->port = port;
		b->p = *p;
		b->t = t;
		b->need = need;
		if (p->payload && p->paylen <= sizeof(b->payload))
			memcpy(b->payload, p->payload, p->paylen);
		b->p.payload = b->payload;
		b->p.frame = NULL;
	}
	blk.npkts++;
	free(p->frame); /* the port takes the frame over */
	p->frame = NULL;
	return (need > t ? need : t) + blk_do.wire_ps;
}

/* A frame buffer the sender gathers into: the payload's place only, from malloc. */
BLK_WEAK uint8_t *hm_port_frame_new(struct hm_dev *d, unsigned port, struct hm_pkt *p)
{
	(void)d, (void)port;
	p->frame = malloc(p->paylen ? p->paylen : 1);
	cr_assert(p->frame != NULL);
	p->payload = p->frame;
	return p->frame;
}

BLK_WEAK void hm_port_frame_free(struct hm_pkt *p)
{
	free(p->frame);
	p->frame = NULL;
}

BLK_WEAK uint32_t hm_port_tail_bytes(const struct hm_dev *d, unsigned port)
{
	(void)d, (void)port;
	return 6;
}

BLK_WEAK void hm_roce_mac_of(const uint8_t gid[16], uint8_t mac[6])
{
	(void)gid;
	memset(mac, 0x02, 6);
}

/* ---- cqe, eq ---- */

BLK_WEAK bool hm_cqe_post(struct hm_dev *d, uint32_t cqn, struct hca_cqe *cqe, bool solicited,
			  sim_time_t t)
{
	(void)d;
	note("hm_cqe_post");
	if (blk.ncqes < BLK_MAX)
		blk.cqes[blk.ncqes] = (struct blk_cqe){ cqn, *cqe, solicited, t };
	blk.ncqes++;
	return true;
}

BLK_WEAK uint8_t hm_cqe_op_of(uint8_t wqe_op)
{
	return (uint8_t)BLK_CQE_OP(wqe_op);
}

BLK_WEAK bool hm_eq_post(struct hm_dev *d, uint8_t type, uint8_t subtype, const uint32_t data[6])
{
	(void)d;
	note("hm_eq_post");
	if (blk.neqes < BLK_MAX)
		blk.eqes[blk.neqes] = (struct blk_eqe){ type, subtype, data[0] };
	blk.neqes++;
	return true;
}

/* ---- mkey ---- */

BLK_WEAK enum hm_mkey_result hm_mkey_check(struct hm_dev *d, uint32_t key, uint32_t pdn,
					   uint64_t va, uint64_t len, uint32_t access,
					   uint64_t *iova)
{
	(void)d, (void)key, (void)pdn, (void)len, (void)access;
	note("hm_mkey_check");
	blk.nmkey++;
	if (blk_do.mkey != HM_MKEY_OK)
		return blk_do.mkey;
	*iova = va;
	return HM_MKEY_OK;
}

/* The responder's rkey checks answer as the lkey checks do (blk_do.mkey). */
BLK_WEAK enum hm_mkey_result hm_rkey_check(struct hm_dev *d, uint32_t key, const struct hm_qp *qp,
					   uint32_t pdn, uint64_t va, uint64_t len,
					   uint32_t access, uint64_t *iova)
{
	(void)d, (void)key, (void)qp, (void)pdn, (void)len, (void)access;
	note("hm_rkey_check");
	blk.nmkey++;
	if (blk_do.mkey != HM_MKEY_OK)
		return blk_do.mkey;
	*iova = va;
	return HM_MKEY_OK;
}

/* Memory window binds and invalidations: recorded, and answered blk_do.mw_verr. */
BLK_WEAK uint32_t hm_mw_bind(struct hm_dev *d, const struct hm_qp *qp, uint32_t wqe,
			     const struct hca_wqe_bind *b)
{
	(void)d, (void)qp, (void)wqe, (void)b;
	note("hm_mw_bind");
	blk.nmw++;
	return blk_do.mw_verr;
}

BLK_WEAK uint32_t hm_mw_invalidate(struct hm_dev *d, const struct hm_qp *qp, uint32_t rkey,
				   bool remote)
{
	(void)d, (void)qp, (void)rkey;
	note("hm_mw_invalidate");
	blk.nmw++;
	return blk_do.mw_verr && remote ? HCA_VERR_REQ_INV_RKEY : blk_do.mw_verr;
}

BLK_WEAK uint32_t hm_mkey_verr(enum hm_mkey_result r, bool remote)
{
	static const uint32_t lkey[] = { HCA_VERR_NONE, HCA_VERR_LKEY_INVALID, HCA_VERR_LKEY_PD,
					 HCA_VERR_LKEY_ACCESS, HCA_VERR_LKEY_BOUNDS,
					 HCA_VERR_LKEY_INVALID };
	static const uint32_t rkey[] = { HCA_VERR_NONE, HCA_VERR_RKEY_INVALID, HCA_VERR_RKEY_PD,
					 HCA_VERR_RKEY_ACCESS, HCA_VERR_RKEY_BOUNDS,
					 HCA_VERR_RKEY_QP };

	note("hm_mkey_verr");
	return remote ? rkey[r] : lkey[r];
}

/* A gather or scatter list over the fake memory: each entry's address is its place in it. */
BLK_WEAK uint32_t hm_sge_copy(struct hm_dev *d, uint32_t pdn, const struct hca_wqe_data *sg,
			      unsigned nsge, uint32_t off, void *buf, uint32_t len, bool write,
			      sim_time_t *t, uint32_t *verr, struct hm_ct *ct)
{
	uint32_t done = 0;

	(void)d;
	note("hm_sge_copy");
	if (blk.nsges < BLK_MAX)
		blk.sges[blk.nsges] = (struct blk_sge){ pdn, off, len, nsge, write };
	blk.nsges++;
	*verr = blk_do.sge_fail ? HCA_VERR_LKEY_INVALID : HCA_VERR_NONE;
	if (*verr)
		return 0;
	for (unsigned i = 0; i < nsge && done < len; i++) {
		uint32_t n;

		if (off >= sg[i].length) {
			off -= sg[i].length;
			continue;
		}
		n = sg[i].length - off < len - done ? sg[i].length - off : len - done;
		if (!in_mem(sg[i].addr + off, n)) {
			*verr = HCA_VERR_LKEY_BOUNDS;
			return done;
		}
		if (write)
			memcpy(blk_mem + sg[i].addr + off, (uint8_t *)buf + done, n);
		else
			memcpy((uint8_t *)buf + done, blk_mem + sg[i].addr + off, n);
		done += n;
		off = 0;
	}
	if (!write && ct && ct->need < *t + blk_do.dma_ps)
		ct->need = *t + blk_do.dma_ps;
	return done;
}

/* ---- qp: QP-wide flows ---- */

BLK_WEAK unsigned hm_qp_mtu(const struct hm_dev *d, const struct hm_qp *qp)
{
	(void)d, (void)qp;
	return blk_do.mtu;
}

BLK_WEAK void hm_qp_error(struct hm_dev *d, struct hm_qp *qp, unsigned state, sim_time_t t)
{
	(void)d, (void)t;
	note("hm_qp_error");
	RECORD(blk.qp_error, blk.nqp_error, qp->qpn, state, 0, 0);
	qp->state = (uint8_t)state; /* what the QP-wide flow does to the QP's own context */
}

BLK_WEAK void hm_qp_fatal(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	(void)d, (void)t;
	note("hm_qp_fatal");
	RECORD(blk.qp_fatal, blk.nqp_fatal, qp->qpn, 0, 0, 0);
	qp->state = HCA_QPS_ERR;
}

BLK_WEAK void hm_srq_fatal(struct hm_dev *d, uint32_t srqn, sim_time_t t)
{
	(void)d, (void)t;
	note("hm_srq_fatal");
	RECORD(blk.srq_fatal, blk.nsrq_fatal, srqn, 0, 0, 0);
}

BLK_WEAK bool hm_qp_migrate(struct hm_dev *d, struct hm_qp *qp, const char *why)
{
	(void)d, (void)qp, (void)why;
	note("hm_qp_migrate");
	blk.nmigrate++;
	return blk_do.migrate_ok;
}

BLK_WEAK void hm_qp_check_drained(struct hm_dev *d, struct hm_qp *qp)
{
	(void)d, (void)qp;
	note("hm_qp_check_drained");
	blk.ndrained++;
}

BLK_WEAK struct hm_srq *hm_srq_get(struct hm_dev *d, uint32_t srqn)
{
	(void)d, (void)srqn;
	return blk_do.srq;
}

/* ---- qpc ---- */

BLK_WEAK struct hm_qp *hm_qpc_get(struct hm_dev *d, uint32_t qpn, sim_time_t *t)
{
	(void)t;
	note("hm_qpc_get");
	blk.nqpc_get++;
	return qpn < d->dp->nqps ? d->dp->qps[qpn] : NULL;
}

/* ---- the responder's front end (block-resp links model/resp_fe.o, its C twin): its PSN
 * stage classifies as the psn block's C twin does and is recorded; its key stage answers as
 * the lkey checks do (blk_do.mkey) and is counted ---- */

static void psn_stage(void *b, const struct hm_psn_in *in, struct hm_psn_out *out)
{
	int32_t c = hm_psn_cmp(in->psn, in->epsn);

	(void)b;
	note("psn");
	if (blk.npsn < BLK_MAX)
		blk.psn_in[blk.npsn] = *in;
	blk.npsn++;
	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle;
	out->cls = c > 0 ? HM_PSN_AHEAD : c < 0 ? HM_PSN_DUPLICATE : HM_PSN_EXPECTED;
	out->send_nak = c > 0 && !in->nak_sent;
	out->nak_sent = c > 0 || (c < 0 && in->nak_sent);
}

static void key_stage(void *b, const struct hm_mkey_in *in, struct hm_mkey_out *out)
{
	(void)b;
	note("mkey");
	blk.nmkey++;
	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle + HM_MKEY_LATENCY;
	out->result = blk_do.mkey;
	if (blk_do.mkey == HM_MKEY_OK)
		out->iova = in->va;
}

BLK_WEAK void *hm_twin_stateless_create(struct hm_dev *d, uint32_t nqps)
{
	(void)nqps;
	return d;
}

BLK_WEAK void hm_twin_stateless_destroy(void *b)
{
	(void)b;
}

BLK_WEAK const struct hm_psn_ops hm_psn_model = {
	{ hm_twin_stateless_create, hm_twin_stateless_destroy, NULL, NULL, 0, NULL, NULL },
	psn_stage
};
BLK_WEAK const struct hm_mkey_ops hm_mkey_model = {
	{ hm_twin_stateless_create, hm_twin_stateless_destroy, NULL, NULL, 0, NULL, NULL },
	key_stage
};

/* The key stage of the stubs answers without a table. */
BLK_WEAK void hm_mkey_entry(struct hm_dev *d, uint32_t key, struct hm_mkey_ctx *ctx)
{
	(void)d, (void)key;
	memset(ctx, 0, sizeof(*ctx));
}

BLK_WEAK void hm_waves_resp_fe(struct hm_dev *d, const struct hm_resp_fe_in *in,
			       const struct hm_resp_fe_out *out)
{
	(void)d, (void)in, (void)out;
}

BLK_WEAK void hm_ctr_qp(struct hm_dev *d, const struct hm_qp *qp, enum hm_ctr c)
{
	(void)d;
	note("hm_ctr_qp");
	RECORD(blk.ctr_qp, blk.nctr_qp, qp->qpn, c, 0, 0);
}

BLK_WEAK void hm_ctr_ack_sent(struct hm_dev *d, const struct hm_qp *qp, uint8_t syndrome)
{
	(void)d;
	note("hm_ctr_ack_sent");
	RECORD(blk.ack_sent, blk.nack_sent, qp->qpn, syndrome, 0, 0);
}

BLK_WEAK void hm_ctr_ack_rcvd(struct hm_dev *d, const struct hm_qp *qp, uint8_t opcode,
			      uint8_t syndrome)
{
	(void)d;
	note("hm_ctr_ack_rcvd");
	RECORD(blk.ack_rcvd, blk.nack_rcvd, qp->qpn, opcode, syndrome, 0);
}

/* ---- wqe_fetch, as the requester calls it ---- */

BLK_WEAK int hm_wqe_fetch(struct hm_dev *d, struct hm_qp *qp, uint32_t idx, sim_time_t *t)
{
	(void)d, (void)t;
	note("hm_wqe_fetch");
	RECORD(blk.fetch, blk.nfetch, qp->qpn, idx, 0, 0);
	return blk_do.fetch_result;
}

BLK_WEAK uint8_t hm_wqe_check(struct hm_dev *d, const struct hm_qp *qp, const uint8_t *w,
			      uint64_t *len, uint32_t *verr)
{
	const struct hca_wqe_ctrl *c = (const void *)w;
	const struct hca_wqe_data *sg = (const void *)(w + HCA_WQE_BASE_BYTES);

	(void)d;
	note("hm_wqe_check");
	RECORD(blk.check, blk.ncheck, qp->qpn, c->opcode, 0, 0);
	*len = 0;
	if (c->flags & HCA_WQE_F_INLINE)
		*len = c->inline_len;
	else
		for (unsigned i = 0; i < c->num_sge; i++)
			*len += sg[i].length;
	/* the first check of verr.def that goes with the scripted status */
	*verr = HCA_VERR_NONE;
	for (uint32_t v = 1; blk_do.check_status != HCA_WC_SUCCESS && v < 0x100; v++)
		if (hca_verr_name(v) && hca_verr_status(v) == blk_do.check_status) {
			*verr = v;
			break;
		}
	return blk_do.check_status;
}

/* ---- comp, as the requester calls it ---- */

BLK_WEAK void hm_comp_fail_local(struct hm_dev *d, struct hm_qp *qp, uint32_t wqe, uint8_t op,
				 uint32_t verr, sim_time_t t)
{
	(void)d, (void)t;
	note("hm_comp_fail_local");
	RECORD(blk.fail_local, blk.nfail_local, qp->qpn, wqe, op, verr);
}

BLK_WEAK void hm_comp_sent(struct hm_dev *d, struct hm_qp *qp, const struct hm_flight *f,
			   sim_time_t t)
{
	(void)d;
	note("hm_comp_sent");
	RECORD(blk.sent, blk.nsent, qp->qpn, f->wqe, t, 0);
}

BLK_WEAK void hm_comp_timer(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	(void)d;
	note("hm_comp_timer");
	RECORD(blk.timer, blk.ntimer, qp->qpn, t, 0, 0);
}

BLK_WEAK void hm_comp_track(struct hm_qp *qp, uint32_t wqe, uint32_t first_psn)
{
	note("hm_comp_track");
	RECORD(blk.track, blk.ntrack, qp->qpn, wqe, first_psn, 0);
}

/* ---- the wires, as the blocks above would take them ---- */

static void wire_sq_wake(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	(void)d;
	note("wire.sq_wake");
	RECORD(blk.wake, blk.nwake, qp->qpn, t, 0, 0);
}

static void wire_sq_retired(struct hm_dev *d, struct hm_qp *qp, const struct hm_flight *f,
			    uint8_t status)
{
	(void)d;
	note("wire.sq_retired");
	RECORD(blk.retired, blk.nretired, qp->qpn, f->wqe, status, 0);
}

static void wire_sq_retry(struct hm_dev *d, struct hm_qp *qp, uint32_t psn, sim_time_t t)
{
	(void)d;
	note("wire.sq_retry");
	RECORD(blk.retry, blk.nretry, qp->qpn, psn, t, 0);
}

static void wire_qp_flush(struct hm_dev *d, struct hm_qp *qp, sim_time_t t)
{
	(void)d;
	note("wire.qp_flush");
	RECORD(blk.flush, blk.nflush, qp->qpn, t, 0, 0);
}

static void wire_rx_frame(struct hm_dev *d, unsigned port, uint8_t *frame, size_t len,
			  bool fcs_ok, bool loopback, bool crc_pending)
{
	(void)d, (void)port, (void)frame, (void)len, (void)fcs_ok, (void)loopback;
	(void)crc_pending;
	note("wire.rx_frame");
}

/* ---- steps, from the trace ---- */

static char steps[4096];
static struct {
	char name[64];
} reached[256];
static unsigned nreached;

void blk_reach(const char *engine, const char *step)
{
	char name[64];

	snprintf(name, sizeof(name), "%s.%s", engine, step);
	if (blk_reached(engine, step))
		return;
	cr_assert_lt(nreached, sizeof(reached) / sizeof(reached[0]));
	strcpy(reached[nreached++].name, name);
}

bool blk_reached(const char *engine, const char *step)
{
	char name[64];

	snprintf(name, sizeof(name), "%s.%s", engine, step);
	for (unsigned i = 0; i < nreached; i++)
		if (!strcmp(reached[i].name, name))
			return true;
	return false;
}

const char *blk_steps(void)
{
	return steps;
}

void blk_steps_clear(void)
{
	steps[0] = 0;
}

/* Every trace event, one line each ("warn.qpc_differs qpn=0x3 field=sq_psn"). */
static char events[1 << 16];
static size_t nevents_len;

const char *blk_event(const char *name, unsigned nth)
{
	static char line[2048];
	size_t l = strlen(name);

	for (const char *p = events; *p; p = strchr(p, '\n') + 1)
		if (!strncmp(p, name, l) && p[l] == ' ' && nth-- == 0) {
			size_t n = strcspn(p + l + 1, "\n");

			snprintf(line, sizeof(line), "%.*s", (int)n, p + l + 1);
			return line;
		}
	return NULL;
}

static void trace_sink(void *arg, uint64_t t_ps, int dev, int ev, const char *fields)
{
	const char *engine = ev == SIM_TEV_step_req ? "req" : ev == SIM_TEV_step_resp ? "resp"
							    : ev == SIM_TEV_step_comp ? "comp"
										      : NULL;
	char step[64];
	size_t l = strlen(steps);

	(void)arg, (void)t_ps, (void)dev;
	if (nevents_len < sizeof(events))
		nevents_len += (size_t)snprintf(events + nevents_len, sizeof(events) - nevents_len,
						"%s %s\n", sim_trace_ev_name(ev), fields);
	if (nevents_len >= sizeof(events))
		nevents_len = sizeof(events) - 1;
	if (!engine || !hcasim_trace_field_str(fields, "step", step, sizeof(step)))
		return;
	blk_reach(engine, step);
	snprintf(steps + l, sizeof(steps) - l, "%s%s", l ? " " : "", step);
}

/* ---- the twin port: a block test has no RTL, so a port call runs the block's C twin, one
 * instance per fixture (the timers: block-comp links model/timers.o with comp.o; resp_fe:
 * block-resp links model/resp_fe.o with resp.o; the qpc's tags: block-qpc links
 * model/qpc.o; wqe_fetch, whose C twin keeps no state: its instance is the device) ---- */

extern const struct hm_timers_ops hm_timers_model __attribute__((weak));
extern const struct hm_resp_fe_ops hm_resp_fe_model __attribute__((weak));
extern const struct hm_qpc_ops hm_qpc_model __attribute__((weak));
extern const struct hm_wqe_fetch_ops hm_wqe_fetch_model __attribute__((weak));
static void *twin_inst; /* the timers' C twin of blk_dev */
static void *twin_qpc;  /* the qpc's */

BLK_WEAK void hm_twin_call(struct hm_dev *d, const struct hm_twin_op *op, uint64_t in_cycle,
			   const void *in, void *out, void *scratch)
{
	(void)in_cycle;
	(void)scratch;
	if (op->block == HM_TWIN_RESP_FE && &hm_resp_fe_model) {
		op->call(&hm_resp_fe_model, NULL, in, out); /* stateless */
		return;
	}
	if (op->block == HM_TWIN_QPC && &hm_qpc_model) {
		if (!twin_qpc)
			twin_qpc = hm_qpc_model.base.create(d, NQPS);
		op->call(&hm_qpc_model, twin_qpc, in, out);
		return;
	}
	if (op->block == HM_TWIN_WQE_FETCH && &hm_wqe_fetch_model) {
		op->call(&hm_wqe_fetch_model, d, in, out);
		return;
	}
	cr_assert(op->block == HM_TWIN_TIMERS && &hm_timers_model,
		  "block tests run only the timers', resp_fe's, the qpc's and wqe_fetch's C twins "
		  "behind a port");
	if (!twin_inst)
		twin_inst = hm_timers_model.base.create(d, NQPS);
	op->call(&hm_timers_model, twin_inst, in, out);
}

BLK_WEAK void hm_waves_qpc_lookup(struct hm_dev *d, const struct hm_qpc_in *in,
				  const struct hm_qpc_out *out)
{
	(void)d, (void)in, (void)out;
}

BLK_WEAK void hm_waves_qpc_complete(struct hm_dev *d, const struct hm_qpc_cpl_in *in,
				    const struct hm_qpc_out *out)
{
	(void)d, (void)in, (void)out;
}

BLK_WEAK void hm_waves_qpc_forget(struct hm_dev *d, const struct hm_qpc_forget_in *in,
				  const struct hm_qpc_forget_out *out)
{
	(void)d, (void)in, (void)out;
}

/* The DMA port of a block alone: every transfer done by the caller's xfer (no lockstep). */
BLK_WEAK void hm_dma_begin(struct hm_dma *p)
{
	p->next = 0;
	p->runs++;
}

BLK_WEAK int hm_dma_do(struct hm_dma *p, struct hm_dma_xfer *x)
{
	x->done_ps = x->issue_ps;
	x->err = p->xfer(p, x->write, x->addr, p->buf + x->off, x->len, &x->done_ps);
	return x->err;
}

BLK_WEAK void hm_waves_wqe_fetch(struct hm_dev *d, const struct hm_wqe_fetch_in *in,
				 const struct hm_wqe_fetch_out *out)
{
	(void)d, (void)in, (void)out;
}

BLK_WEAK void hm_waves_wqe_check(struct hm_dev *d, const struct hm_wqe_check_in *in,
				 const struct hm_wqe_check_out *out)
{
	(void)d, (void)in, (void)out;
}

BLK_WEAK void hm_waves_timers_set(struct hm_dev *d, const struct hm_timers_set_in *in,
				  const struct hm_timers_set_out *out)
{
	(void)d, (void)in, (void)out;
}

BLK_WEAK void hm_waves_timers_expire(struct hm_dev *d, const struct hm_timers_expire_in *in,
				     const struct hm_timers_expire_out *out)
{
	(void)d, (void)in, (void)out;
}

/* ---- the fixture ---- */

void blk_setup(void)
{
	struct sim_kernel *k = sim_kernel_create();
	struct hm_dev *d = calloc(1, sizeof(*d));

	cr_assert(k && d);
	sim_kernel_set_current(k);
	memset(&blk, 0, sizeof(blk));
	blk_do = (struct blk_script){ .fetch_result = HM_WQE_READY,
				      .check_status = HCA_WC_SUCCESS,
				      .mtu = 256,
				      .wire_ps = 100 * SIM_PS_PER_NS,
				      .dma_ps = 500 * SIM_PS_PER_NS,
				      .mkey = HM_MKEY_OK };
	blk_mem = calloc(1, BLK_MEM_BYTES);
	cr_assert_not_null(blk_mem);
	sim_config_defaults(&d->cfg);
	d->k = k; /* the blocks reach the kernel through the device */
	d->core = (struct sim_clock){ "core", sim_config_period_ps(d->cfg.core_mhz) };
	d->nports = 1;
	d->ports[0] = (struct hm_port){ .dev = d, .num = 1, .state = 4, .link_layer = 1, .lid = 1 };
	d->ports[0].ngids = 1;
	d->dp = calloc(1, sizeof(*d->dp));
	cr_assert_not_null(d->dp);
	d->dp->nqps = NQPS;
	d->dp->qps = calloc(NQPS, sizeof(*d->dp->qps));
	cr_assert_not_null(d->dp->qps);
	d->wire = (struct hm_wires){ .sq_wake = wire_sq_wake,
				     .sq_retired = wire_sq_retired,
				     .sq_retry = wire_sq_retry,
				     .qp_flush = wire_qp_flush,
				     .rx_frame = wire_rx_frame };
	blk_dev = d;
	blk_steps_clear();
	events[0] = 0;
	nevents_len = 0;
	cr_assert_eq(sim_trace_internal("*", trace_sink, NULL), 0);
}

void blk_teardown(void)
{
	struct hm_dev *d = blk_dev;

	sim_trace_internal(NULL, NULL, NULL);
	if (twin_inst)
		hm_timers_model.base.destroy(twin_inst);
	twin_inst = NULL;
	if (twin_qpc)
		hm_qpc_model.base.destroy(twin_qpc);
	twin_qpc = NULL;
	for (uint32_t i = 0; i < d->dp->nqps; i++) {
		struct hm_qp *qp = d->dp->qps[i];

		if (!qp)
			continue;
		free(qp->fetch.wqe_buf);
		free(qp->req.flight);
		free(qp->comp.next_rsp);
		free(qp->resp.rsge);
		free(qp->resp.rpf_buf);
		free(qp);
	}
	free(d->dp->qps);
	free(d->dp);
	free(d);
	blk_dev = NULL;
	free(blk_mem);
	blk_mem = NULL;
	sim_kernel_destroy(sim_kernel());
	sim_kernel_set_current(NULL);
}

struct hm_qp *blk_qp(uint32_t qpn, uint8_t type, uint8_t state, uint32_t sq_entries,
		     uint32_t sq_stride, uint32_t rq_entries)
{
	struct hm_qp *qp = calloc(1, sizeof(*qp));

	cr_assert_not_null(qp);
	cr_assert_lt(qpn, blk_dev->dp->nqps);
	qp->valid = true;
	qp->qpn = qpn;
	qp->type = type;
	qp->state = state;
	qp->pdn = 1;
	qp->scqn = 1;
	qp->rcqn = 2;
	qp->attr.path_mtu = 1;
	qp->attr.port_num = 1;
	qp->sq_entries = sq_entries;
	qp->sq_stride = sq_stride;
	qp->rq_entries = rq_entries;
	qp->rq_stride = 64;
	qp->fetch.wqe_buf = calloc(sq_entries ? sq_entries : 1, sq_stride ? sq_stride : 1);
	qp->req.flight = calloc(sq_entries ? sq_entries : 1, sizeof(*qp->req.flight));
	qp->comp.next_rsp = calloc(sq_entries ? sq_entries : 1, sizeof(uint32_t));
	qp->resp.rsge = calloc(HM_MAX_SGE, sizeof(*qp->resp.rsge));
	qp->resp.rpf_buf = calloc(HM_MAX_SGE, HCA_SGE_BYTES);
	cr_assert(qp->fetch.wqe_buf && qp->req.flight && qp->comp.next_rsp && qp->resp.rsge &&
		  qp->resp.rpf_buf);
	blk_dev->dp->qps[qpn] = qp;
	return qp;
}

/* ---- every step reached ---- */

static struct {
	const char *name;
	blk_body body;
} bodies[256];
static unsigned nbodies;

void blk_register(const char *name, blk_body body)
{
	if (nbodies < sizeof(bodies) / sizeof(bodies[0]))
	{
		bodies[nbodies].name = name;
		bodies[nbodies++].body = body;
	}
}

void blk_every_step(const char *engine, const char *const *names, size_t n)
{
	char missing[1024] = "";

	cr_assert_gt(n, 0, "%s: no steps", engine);
	nreached = 0;
	for (unsigned i = 0; i < nbodies; i++) {
		blk_setup();
		bodies[i].body();
		blk_teardown();
	}
	for (size_t i = 0; i < n; i++)
		if (!blk_reached(engine, names[i])) {
			size_t l = strlen(missing);

			snprintf(missing + l, sizeof(missing) - l, " %s", names[i]);
		}
	cr_assert_str_empty(missing, "%s steps no test reaches:%s (of %zu, %u tests)", engine,
			    missing, n, nbodies);
}
