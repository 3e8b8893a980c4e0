/* Suite soak: RC under random loss, corruption, duplication and reordering in both directions,
 * across loss rates, operation mixes, MTUs, link layers and QP counts (docs/timing.md#soak).
 * Every run checks exactly-once, in-order, byte-exact delivery of what completed. An oracle
 * reads the trace and proves every RETRY_EXC_ERR and RNR_RETRY_EXC_ERR legitimate: retry_cnt + 1
 * (rnr_retry + 1) consecutive retries (RNR NAKs) of the same oldest WQE with no forward progress
 * of it between them. The transport error counters must agree with the trace. The default run
 * samples the space; SOAK=1 runs every combination for three seeds. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <endian.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum mix { MIX_SEND, MIX_WRITE, MIX_READ, MIX_ATOMIC, MIX_ALL };
static const char *const mix_names[] = { "send", "write", "read", "atomic", "mixed" };

enum { MAXQP = 8, SLOT = 16384, DEPTH = 8, RQ_WIN = 4, MAXW = 4096, EXCERPT = 48 };

struct run_cfg {
	enum mix mix;
	unsigned loss_pct, mtu, nqp, msgs; /* msgs per QP */
	bool roce;
	unsigned seed, retry_cnt, rnr_retry;
	bool slow_rq; /* the receiver posts one receive every SLOW_RQ_PS: RNR NAKs abound */
};

#define SLOW_RQ_PS 30000000ull /* 30 us: longer than two RNR waits of min_rnr_timer 1 */

/* ---- the oracle: reads the requester's and responder's trace events ---- */

struct ow {
	uint32_t first, n; /* first PSN, PSNs it spans */
	uint8_t op;        /* HCA_WQE_OP_* numbering (model/hw/wqe.def) */
	bool started;
};

struct oq {
	uint32_t qpn;
	struct ow w[MAXW];
	uint32_t oldest;         /* index of the oldest unfinished WQE */
	uint32_t mark;           /* its first PSN not yet answered */
	unsigned retries, rnrs;  /* retries and RNR NAKs since its last progress */
	bool dead;               /* exhausted: nothing more to check */
	char ring[EXCERPT][200]; /* the QP's last trace lines, for a failure's excerpt */
	unsigned nring;
	/* the last response handled: the WQEs it retires are traced after it, at the same time,
	 * and what it means for the WQE that becomes the oldest is judged then */
	uint64_t ack_t;
	uint32_t ack_psn;
	uint8_t ack_op, ack_syn;
};

struct oracle {
	const struct run_cfg *cfg;
	struct oq q[MAXQP];
	unsigned nq;
	/* event counts for the counters' check: dev 0 requester, dev 1 responder */
	uint64_t timeouts, seq_naks_rcvd, rnr_naks_rcvd, oos, dups, rnr_naks_sent;
	uint64_t retries, gaps, exhausted, rnr_exh, legit;
	char bad[4096]; /* the first illegitimate exhaustion, with its excerpt */
};

static struct oracle orc;

static struct oq *oq_of(uint64_t qpn)
{
	for (unsigned i = 0; i < orc.nq; i++)
		if (orc.q[i].qpn == qpn)
			return &orc.q[i];
	return NULL;
}

static uint32_t npsn(uint8_t op, uint64_t len, unsigned mtu)
{
	if (op == 5 || op == 6)
		return 1;
	return len ? (uint32_t)((len + mtu - 1) / mtu) : 1;
}

static int32_t psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static void progress(struct oq *q)
{
	q->retries = q->rnrs = 0;
}

static void record(struct oq *q, uint64_t t, const char *ev, const char *f)
{
	snprintf(q->ring[q->nring++ % EXCERPT], sizeof(q->ring[0]), "t=%" PRIu64 " %s %s", t,
		 ev, f);
}

static void exhausted(struct oq *q, uint64_t status, uint64_t wqe)
{
	const struct run_cfg *c = orc.cfg;
	bool rnr = status == IBV_WC_RNR_RETRY_EXC_ERR;
	unsigned got = rnr ? q->rnrs : q->retries, need = (rnr ? c->rnr_retry : c->retry_cnt) + 1;
	size_t off;

	orc.exhausted++;
	orc.rnr_exh += rnr;
	q->dead = true;
	if (wqe == q->oldest && got == need) {
		orc.legit++;
		return;
	}
	if (orc.bad[0])
		return;
	off = (size_t)snprintf(orc.bad, sizeof(orc.bad),
			       "qpn 0x%x wqe %" PRIu64 " ended in %s after %u %s without "
			       "progress of the oldest WQE (%u), %u needed; last events:\n",
			       q->qpn, wqe, rnr ? "RNR_RETRY_EXC_ERR" : "RETRY_EXC_ERR", got,
			       rnr ? "RNR NAKs" : "retries", q->oldest, need);
	for (unsigned i = q->nring > EXCERPT ? q->nring - EXCERPT : 0; i < q->nring; i++) {
		if (off >= sizeof(orc.bad) - 1)
			break;
		off += (size_t)snprintf(orc.bad + off, sizeof(orc.bad) - off, "  %s\n",
					q->ring[i % EXCERPT]);
	}
}

/* What the response (psn, op, syndrome) means for the oldest WQE: progress when it answers
 * more of it (an ACK or NAK reaching further into a SEND or WRITE, the in-order response of a
 * READ). */
static void judge_ack(struct oq *q)
{
	const struct ow *o = &q->w[q->oldest % MAXW];
	uint32_t psn = q->ack_psn, upto;

	if (!o->started || psn_cmp(psn, o->first) < 0)
		return; /* not about the oldest WQE */
	if (q->ack_op == 0x11 && o->op <= 3) {
		/* ACK, sequence or RNR NAK: everything before the NAK's PSN is done. */
		upto = (psn - ((q->ack_syn & 0x60) ? 1 : 0)) & 0xffffff;
		if (psn_cmp(upto, q->mark) >= 0) {
			q->mark = (upto + 1) & 0xffffff;
			progress(q);
		}
	} else if (q->ack_op >= 0x0d && q->ack_op <= 0x10 && o->op == 4 && psn == q->mark) {
		q->mark = (q->mark + 1) & 0xffffff; /* an in-order READ response */
		progress(q);
	}
}

static void observe(void *arg, uint64_t t, int dev, const char *ev, const char *f)
{
	uint64_t qpn, v, psn, op, syn, wqe, len;
	struct oq *q;

	(void)arg;
	if (!hcasim_trace_field(f, "qpn", &qpn))
		return;
	if (dev == 1) { /* the responder */
		if (!strcmp(ev, "resp.seq")) {
			char cls[16];

			hcasim_trace_field_str(f, "class", cls, sizeof(cls));
			if (!strcmp(cls, "ahead"))
				orc.oos++;
			else
				orc.dups++;
		} else if (!strcmp(ev, "resp.nak") && hcasim_trace_field(f, "syndrome", &syn) &&
			   (syn & 0xe0) == 0x20) {
			orc.rnr_naks_sent++;
		}
		return;
	}
	if (dev != 0 || !(q = oq_of(qpn)))
		return;
	if (!strcmp(ev, "req.timeout"))
		orc.timeouts++;
	if (!strcmp(ev, "comp.ack") && hcasim_trace_field(f, "op", &op) && op == 0x11 &&
	    hcasim_trace_field(f, "syndrome", &syn)) {
		orc.seq_naks_rcvd += syn == 0x60;
		orc.rnr_naks_rcvd += (syn & 0xe0) == 0x20;
	}
	if (q->dead)
		return;
	record(q, t, ev, f);
	if (!strcmp(ev, "req.wqe")) {
		struct ow *w;

		/* A WQE's start. */
		if (!hcasim_trace_field(f, "op", &op) || !hcasim_trace_field(f, "len", &len) ||
		    !hcasim_trace_field(f, "psn", &psn) || !hcasim_trace_field(f, "wqe", &wqe))
			return;
		w = &q->w[wqe % MAXW];
		*w = (struct ow){ (uint32_t)psn, npsn((uint8_t)op, len, orc.cfg->mtu), (uint8_t)op,
				  true };
		if (wqe == q->oldest)
			q->mark = w->first;
	} else if (!strcmp(ev, "req.timeout") || !strcmp(ev, "comp.retry")) {
		q->retries++;
		orc.retries++;
		if (!strcmp(ev, "comp.retry")) {
			char cause[16];

			hcasim_trace_field_str(f, "cause", cause, sizeof(cause));
			orc.gaps += !strcmp(cause, "rsp_gap");
		}
	} else if (!strcmp(ev, "comp.rnr_wait")) {
		q->rnrs++;
	} else if (!strcmp(ev, "comp.done")) {
		hcasim_trace_field(f, "wqe", &wqe);
		hcasim_trace_field(f, "status", &v);
		if (v == IBV_WC_RETRY_EXC_ERR || v == IBV_WC_RNR_RETRY_EXC_ERR) {
			exhausted(q, v, wqe);
			return;
		}
		if (v != IBV_WC_SUCCESS || wqe != q->oldest)
			return;
		q->oldest++;
		progress(q);
		if (q->w[q->oldest % MAXW].started)
			q->mark = q->w[q->oldest % MAXW].first;
		if (q->ack_t == t)
			judge_ack(q); /* the response that retired it, for the new oldest */
	} else if (!strcmp(ev, "comp.ack")) {
		hcasim_trace_field(f, "psn", &psn);
		hcasim_trace_field(f, "op", &op);
		hcasim_trace_field(f, "syndrome", &syn);
		q->ack_t = t;
		q->ack_psn = (uint32_t)psn;
		q->ack_op = (uint8_t)op;
		q->ack_syn = (uint8_t)syn;
		judge_ack(q);
	}
}

/* ---- the workload ---- */

struct sqp {
	struct ibv_qp *qa, *qb;
	struct ibv_mr *src, *rdst, *res; /* on A: SEND/WRITE data, READ landing, atomic results */
	struct ibv_mr *rcv, *wdst, *rsrc, *ctr; /* on B: receives, WRITE target, READ source,
						   the atomic counter */
	uint8_t op[MAXW];         /* WQE_OP per message */
	uint32_t len[MAXW];       /* bytes per message */
	unsigned posted, done;    /* send WRs posted and completed */
	unsigned ok;              /* completed successfully, in order */
	bool failed;              /* a completion other than success was seen */
	unsigned atomics_posted;  /* atomic WRs posted so far */
	unsigned atomics_ok;      /* atomics completed successfully */
	unsigned rq_posted, rq_done; /* receives posted and completed on B */
	uint64_t rq_next_ps;      /* slow_rq: when the next receive may be posted */
	unsigned rmsg[MAXW];      /* message number of each receive-consuming message, in order */
	unsigned nrmsg;
};

struct soak {
	struct run_cfg c;
	struct tb_dev a, b;
	struct ibv_cq *sa, *rb;
	struct sqp q[MAXQP];
	uint64_t rng;
};

static uint32_t rnd(struct soak *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return (uint32_t)(s->rng >> 11);
}

static uint8_t pattern(unsigned qi, unsigned msg, size_t i, unsigned salt)
{
	return (uint8_t)(i * 131 + (i >> 9) + msg * 17 + qi * 101 + salt);
}

/* The operations of one QP's messages: the mix, with READ and atomic bursts in "mixed". */
static void plan(struct soak *s, struct sqp *q)
{
	unsigned burst = 0;
	uint8_t bop = 0;

	for (unsigned m = 0; m < s->c.msgs; m++) {
		uint32_t r = rnd(s) % 100;
		uint8_t op;

		switch (s->c.mix) {
		case MIX_SEND:
			op = 2;
			break;
		case MIX_WRITE:
			op = r < 50 ? 0 : 1;
			break;
		case MIX_READ:
			op = r < 70 ? 4 : 2;
			break;
		case MIX_ATOMIC:
			op = r < 35 ? 5 : r < 70 ? 6 : 0;
			break;
		default:
			if (burst) {
				op = bop;
				burst--;
			} else if (r < 10) {
				op = bop = r < 5 ? 4 : 6; /* a burst of READs or atomics */
				burst = 3;
			} else {
				op = r < 40 ? 2 : r < 60 ? 1 : r < 80 ? 0 : r < 90 ? 4 : 5;
			}
		}
		q->op[m] = op;
		q->len[m] = op == 5 || op == 6 ? 8
			    : op == 4	       ? 1 + rnd(s) % SLOT
					       : rnd(s) % (SLOT / 2 + 1);
		if (op == 1 || op == 2)
			q->rmsg[q->nrmsg++] = m;
	}
}

static void soak_open(struct soak *s, const struct run_cfg *c)
{
	char v[32];
	struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = DEPTH, .max_recv_wr = RQ_WIN,
						  .max_send_sge = 1, .max_recv_sge = 1 } };
	static const enum ibv_mtu mtus[] = { [256] = IBV_MTU_256, [1024] = IBV_MTU_1024,
					     [4096] = IBV_MTU_4096 };

	memset(s, 0, sizeof(*s));
	s->c = *c;
	s->rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)c->seed << 32) ^ (c->mix * 7919u + c->loss_pct);
	snprintf(v, sizeof(v), "%u", c->seed);
	tb_config("sim.seed", v);
	tb_config("hca.link_layer", c->roce ? "roce" : "ib");
	snprintf(v, sizeof(v), "%u", c->loss_pct * 10000);
	tb_config("fault.drop_ppm", v);
	snprintf(v, sizeof(v), "%u", c->loss_pct * 2000);
	tb_config("fault.corrupt_ppm", v);
	snprintf(v, sizeof(v), "%u", c->loss_pct * 5000);
	tb_config("fault.dup_ppm", v);
	tb_config("fault.reorder_ppm", v);
	tb_rc_timeout = 8; /* 1 ms */
	tb_rc_retry_cnt = c->retry_cnt;
	tb_rc_rnr_retry = c->rnr_retry;
	tb_rc_min_rnr_timer = 1;
	memset(&orc, 0, sizeof(orc));
	orc.cfg = &s->c;
	cr_assert_eq(hcasim_trace_observe("req,comp,resp", observe, NULL), 0);
	tb_open(&s->a, 0);
	tb_open(&s->b, 1);
	s->sa = ibv_create_cq(s->a.ctx, 4096, NULL, NULL, 0);
	s->rb = ibv_create_cq(s->b.ctx, 4096, NULL, NULL, 0);
	cr_assert(s->sa && s->rb, "%s", hcasim_last_error());
	for (unsigned i = 0; i < c->nqp; i++) {
		struct sqp *q = &s->q[i];
		size_t bytes = (size_t)c->msgs * SLOT;

		init.send_cq = init.recv_cq = s->sa;
		q->qa = ibv_create_qp(s->a.pd, &init);
		init.send_cq = init.recv_cq = s->rb;
		q->qb = ibv_create_qp(s->b.pd, &init);
		cr_assert(q->qa && q->qb, "%s", hcasim_last_error());
		tb_connect(&s->a, q->qa, &s->b, q->qb->qp_num, mtus[c->mtu]);
		tb_connect(&s->b, q->qb, &s->a, q->qa->qp_num, mtus[c->mtu]);
		q->src = tb_mr(&s->a, bytes);
		q->rdst = tb_mr(&s->a, bytes);
		q->res = tb_mr(&s->a, (size_t)c->msgs * 8);
		q->rcv = tb_mr(&s->b, bytes);
		q->wdst = tb_mr(&s->b, bytes);
		q->rsrc = tb_mr(&s->b, bytes);
		q->ctr = tb_mr(&s->b, 8);
		for (size_t k = 0; k < bytes; k++) {
			((uint8_t *)q->src->addr)[k] = pattern(i, (unsigned)(k / SLOT), k % SLOT, 0);
			((uint8_t *)q->rsrc->addr)[k] = pattern(i, (unsigned)(k / SLOT), k % SLOT, 77);
		}
		plan(s, q);
		orc.q[orc.nq++].qpn = q->qa->qp_num;
	}
}

static void soak_close(struct soak *s)
{
	cr_assert_eq(hcasim_trace_observe(NULL, NULL, NULL), 0);
	for (unsigned i = 0; i < s->c.nqp; i++) {
		struct sqp *q = &s->q[i];
		struct ibv_mr *mrs[] = { q->src, q->rdst, q->res, q->rcv, q->wdst, q->rsrc, q->ctr };

		cr_assert_eq(ibv_destroy_qp(q->qa), 0, "%s", hcasim_last_error());
		cr_assert_eq(ibv_destroy_qp(q->qb), 0, "%s", hcasim_last_error());
		for (size_t k = 0; k < sizeof(mrs) / sizeof(mrs[0]); k++) {
			void *buf = mrs[k]->addr;

			cr_assert_eq(ibv_dereg_mr(mrs[k]), 0);
			free(buf);
		}
	}
	cr_assert_eq(ibv_destroy_cq(s->sa), 0);
	cr_assert_eq(ibv_destroy_cq(s->rb), 0);
	tb_close(&s->a);
	tb_close(&s->b);
}

static void post_one(struct soak *s, unsigned qi)
{
	struct sqp *q = &s->q[qi];
	unsigned m = q->posted;
	uint8_t *base = (uint8_t *)q->src->addr + (size_t)m * SLOT;
	struct ibv_sge sge = { (uintptr_t)base, q->len[m], q->src->lkey };
	struct ibv_send_wr w = { .wr_id = m, .sg_list = &sge, .num_sge = q->len[m] ? 1 : 0,
				 .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	switch (q->op[m]) {
	case 0:
	case 1:
		w.opcode = q->op[m] ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
		w.imm_data = htobe32(m);
		w.wr.rdma.remote_addr = (uintptr_t)q->wdst->addr + (size_t)m * SLOT;
		w.wr.rdma.rkey = q->wdst->rkey;
		break;
	case 2:
		w.opcode = IBV_WR_SEND;
		break;
	case 4:
		w.opcode = IBV_WR_RDMA_READ;
		sge.addr = (uintptr_t)q->rdst->addr + (size_t)m * SLOT;
		sge.lkey = q->rdst->lkey;
		w.wr.rdma.remote_addr = (uintptr_t)q->rsrc->addr + (size_t)m * SLOT;
		w.wr.rdma.rkey = q->rsrc->rkey;
		break;
	default: /* atomics: each adds one to the counter, so atomic k returns k */
		sge = (struct ibv_sge){ (uintptr_t)q->res->addr + (size_t)m * 8, 8, q->res->lkey };
		w.num_sge = 1;
		w.opcode = q->op[m] == 5 ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
		w.wr.atomic.remote_addr = (uintptr_t)q->ctr->addr;
		w.wr.atomic.rkey = q->ctr->rkey;
		w.wr.atomic.compare_add = q->op[m] == 5 ? q->atomics_posted : 1;
		w.wr.atomic.swap = q->atomics_posted + 1;
		q->atomics_posted++;
	}
	cr_assert_eq(ibv_post_send(q->qa, &w, &bad), 0, "%s", hcasim_last_error());
	q->posted++;
}

static void post_recvs(struct soak *s, unsigned qi)
{
	struct sqp *q = &s->q[qi];

	while (q->rq_posted < q->nrmsg && q->rq_posted - q->rq_done < RQ_WIN) {
		struct ibv_sge sge = { (uintptr_t)q->rcv->addr + (size_t)q->rq_posted * SLOT, SLOT,
				       q->rcv->lkey };
		struct ibv_recv_wr r = { .wr_id = q->rq_posted, .sg_list = &sge, .num_sge = 1 },
				   *bad;

		if (s->c.slow_rq) {
			if (hcasim_now_ps() < q->rq_next_ps)
				return;
			q->rq_next_ps = hcasim_now_ps() + SLOW_RQ_PS;
		}
		cr_assert_eq(ibv_post_recv(q->qb, &r, &bad), 0, "%s", hcasim_last_error());
		q->rq_posted++;
	}
}

static struct sqp *sqp_of(struct soak *s, uint32_t qpn, bool a)
{
	for (unsigned i = 0; i < s->c.nqp; i++)
		if ((a ? s->q[i].qa : s->q[i].qb)->qp_num == qpn)
			return &s->q[i];
	cr_assert_fail("completion for unknown QP 0x%x", qpn);
	return NULL;
}

/* A send completion: in order; success until the first error, which must be an exhaustion;
 * flushed after it. What a READ or atomic returned is checked byte for byte now; what a WRITE
 * placed, once everything has settled (the ACK may overtake the responder's last posted DMA
 * writes, as on a real PCIe bus). */
static void send_done(struct soak *s, const struct ibv_wc *wc)
{
	struct sqp *q = sqp_of(s, wc->qp_num, true);
	unsigned qi = (unsigned)(q - s->q), m = q->done;

	cr_assert_eq(wc->wr_id, m, "qp 0x%x: completion %" PRIu64 " where %u was due", wc->qp_num,
		     wc->wr_id, m);
	q->done++;
	if (q->failed) {
		cr_assert_eq(wc->status, IBV_WC_WR_FLUSH_ERR, "after an error: %s",
			     ibv_wc_status_str(wc->status));
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		cr_assert(wc->status == IBV_WC_RETRY_EXC_ERR || wc->status == IBV_WC_RNR_RETRY_EXC_ERR,
			  "qp 0x%x message %u: %s", wc->qp_num, m, ibv_wc_status_str(wc->status));
		q->failed = true;
		return;
	}
	q->ok++;
	if (q->op[m] == 4) {
		cr_assert_eq(wc->byte_len, q->len[m]);
		cr_assert(!memcmp((uint8_t *)q->rdst->addr + (size_t)m * SLOT,
				  (uint8_t *)q->rsrc->addr + (size_t)m * SLOT, q->len[m]),
			  "qp %u READ %u returned other bytes", qi, m);
	} else if (q->op[m] >= 5) {
		uint64_t orig;

		memcpy(&orig, (uint8_t *)q->res->addr + (size_t)m * 8, 8);
		cr_assert_eq(orig, q->atomics_ok, "qp %u atomic %u returned %" PRIu64 ", %u due",
			     qi, m, orig, q->atomics_ok);
		q->atomics_ok++;
	}
}

/* A receive on B: the next receive-consuming message, exactly once, byte-exact. */
static void recv_done(struct soak *s, const struct ibv_wc *wc)
{
	struct sqp *q = sqp_of(s, wc->qp_num, false);
	unsigned qi = (unsigned)(q - s->q), k = q->rq_done, m;

	cr_assert_eq(wc->status, IBV_WC_SUCCESS, "receive: %s", ibv_wc_status_str(wc->status));
	cr_assert_eq(wc->wr_id, k, "receive out of order");
	cr_assert_lt(k, q->nrmsg, "qp %u: more receives than messages", qi);
	m = q->rmsg[k];
	q->rq_done++;
	cr_assert_eq(wc->byte_len, q->len[m],
		     "qp %u receive %u: %u bytes, message %u has %u", qi, k, wc->byte_len, m,
		     q->len[m]);
	if (q->op[m] == 1) {
		cr_assert_eq(wc->opcode, IBV_WC_RECV_RDMA_WITH_IMM);
		cr_assert(wc->wc_flags & IBV_WC_WITH_IMM);
		cr_assert_eq(be32toh(wc->imm_data), m);
	} else {
		cr_assert_eq(wc->opcode, IBV_WC_RECV);
		cr_assert(!memcmp((uint8_t *)q->rcv->addr + (size_t)k * SLOT,
				  (uint8_t *)q->src->addr + (size_t)m * SLOT, q->len[m]),
			  "qp %u SEND %u arrived with other bytes", qi, m);
	}
}

struct soak_result {
	unsigned runs;
	uint64_t msgs, delivered, retries, gaps, timeouts, rnr, exhausted, rnr_exh, legit;
};

/* SOAK: unset, empty or 0 (the short mix), or 1 (every combination); any other value fails
 * the suite naming it, so that a misspelt 1 does not pass for the long run. */
static bool soak_full(void)
{
	const char *env = getenv("SOAK");

	if (!env || !*env || !strcmp(env, "0"))
		return false;
	cr_assert_str_eq(env, "1", "SOAK: '%s' is not 0 or 1", env);
	return true;
}

static void run(const struct run_cfg *c, struct soak_result *sum)
{
	struct soak s;
	struct ibv_wc wc[32];
	unsigned live;
	uint64_t delivered = 0, cnt;

	soak_open(&s, c);
	do {
		live = 0;
		for (unsigned i = 0; i < c->nqp; i++) {
			struct sqp *q = &s.q[i];

			if (!q->failed)
				while (q->posted < c->msgs && q->posted - q->done < DEPTH)
					post_one(&s, i);
			post_recvs(&s, i);
			live += q->done < q->posted;
		}
		for (int n = ibv_poll_cq(s.sa, 32, wc), k = 0; k < n; k++)
			send_done(&s, &wc[k]);
		for (int n = ibv_poll_cq(s.rb, 32, wc), k = 0; k < n; k++)
			recv_done(&s, &wc[k]);
		cr_assert_lt(hcasim_now_ps(), 200ull * 1000000000000ull, "stuck");
	} while (live);
	/* Nothing spurious once everything has settled; then what was delivered. */
	hcasim_run_for_ps(20000000000ull);
	cr_assert_eq(ibv_poll_cq(s.sa, 32, wc), 0, "spurious send completion");
	for (int n; (n = ibv_poll_cq(s.rb, 32, wc)) > 0;)
		for (int k = 0; k < n; k++)
			recv_done(&s, &wc[k]);
	for (unsigned i = 0; i < c->nqp; i++) {
		struct sqp *q = &s.q[i];
		unsigned rok = 0;
		uint64_t ctr;

		for (unsigned m = 0; m < q->ok; m++) {
			rok += q->op[m] == 1 || q->op[m] == 2;
			if (q->op[m] <= 1)
				cr_assert(!memcmp((uint8_t *)q->wdst->addr + (size_t)m * SLOT,
						  (uint8_t *)q->src->addr + (size_t)m * SLOT,
						  q->len[m]),
					  "qp %u WRITE %u landed other bytes", i, m);
		}
		/* Every receive-consuming message that completed arrived; one that did not
		 * complete may have arrived (its ACK lost), but only after those. */
		cr_assert_geq(q->rq_done, rok, "qp %u: %u of %u completed messages arrived", i,
			      q->rq_done, rok);
		if (!q->failed)
			cr_assert_eq(q->rq_done, rok, "qp %u: a message arrived twice", i);
		memcpy(&ctr, q->ctr->addr, 8);
		cr_assert(q->failed ? ctr >= q->atomics_ok && ctr <= q->atomics_posted
				    : ctr == q->atomics_ok,
			  "qp %u: counter %" PRIu64 " after %u atomics completed", i, ctr,
			  q->atomics_ok);
		delivered += q->ok;
	}
	/* The oracle. */
	cr_assert(!orc.bad[0], "%s mix, SOAK_RUN=%u:%u:%u:%s:%u: %s", mix_names[c->mix], c->seed,
		  c->loss_pct, c->mtu, c->roce ? "roce" : "ib", c->nqp, orc.bad);
	cr_assert_eq(orc.legit, orc.exhausted);
	/* The counters agree with the trace. */
#define AGREE(dev, name, expect)                                                                 \
	do {                                                                                     \
		cr_assert_eq(hcasim_port_counter(dev, 1, name, &cnt), 0);                        \
		cr_assert_eq(cnt, (expect), "%s: %" PRIu64 " counted, %" PRIu64 " in the trace", \
			     name, cnt, (uint64_t)(expect));                                     \
	} while (0)
	AGREE(0, "sq_num_to", orc.timeouts);
	AGREE(0, "sq_num_oos", orc.seq_naks_rcvd);
	AGREE(0, "sq_num_rnr", orc.rnr_naks_rcvd);
	AGREE(1, "rq_num_oos", orc.oos);
	AGREE(1, "rq_num_dup", orc.dups);
	AGREE(1, "rq_num_rnr", orc.rnr_naks_sent);
#undef AGREE
	if (soak_full() || getenv("SOAK_RUN")) /* one line per run; else the totals only */
		printf("soak: %-6s loss %2u%% mtu %4u %-4s %u QP%s seed %u retry_cnt %u rnr_retry %u%s: "
	       "%4" PRIu64 " of %4u completed, %4" PRIu64 " retries (%" PRIu64 " timeouts, %" PRIu64
	       " response gaps), %3" PRIu64 " RNR NAKs, %" PRIu64 " exhausted, %" PRIu64
	       " legitimate\n",
	       mix_names[c->mix], c->loss_pct, c->mtu, c->roce ? "RoCE" : "IB", c->nqp,
	       c->nqp > 1 ? "s" : " ", c->seed, c->retry_cnt, c->rnr_retry,
	       c->slow_rq ? " slow receiver" : "", delivered,
	       c->nqp * c->msgs, orc.retries, orc.timeouts, orc.gaps, orc.rnr_naks_rcvd,
	       orc.exhausted, orc.legit);
	fflush(stdout);
	sum->msgs += c->nqp * c->msgs;
	sum->delivered += delivered;
	sum->retries += orc.retries;
	sum->gaps += orc.gaps;
	sum->timeouts += orc.timeouts;
	sum->rnr += orc.rnr_naks_rcvd;
	sum->exhausted += orc.exhausted;
	sum->rnr_exh += orc.rnr_exh;
	sum->runs++;
	sum->legit += orc.legit;
	soak_close(&s);
	hcasim_shutdown();
}

/* SOAK_RUN=seed:loss:mtu:ib|roce:qps keeps only the runs with those settings (a failure's
 * message names them), to run one again, with HCASIM_TRACE for instance. */
static bool selected(const struct run_cfg *c)
{
	const char *only = getenv("SOAK_RUN");
	char want[64], ll[8];
	unsigned v[4];
	int end = 0;

	if (!only)
		return true;
	/* a run that cannot exist would select nothing, and the suite would pass having run
	 * nothing: the form is checked */
	cr_assert(sscanf(only, "%u:%u:%u:%7[a-z]:%u%n", &v[0], &v[1], &v[2], ll, &v[3], &end) == 5 &&
		  !only[end] && (!strcmp(ll, "ib") || !strcmp(ll, "roce")),
		  "SOAK_RUN: '%s' is not seed:loss:mtu:ib|roce:qps (as a failure names the run)",
		  only);
	snprintf(want, sizeof(want), "%u:%u:%u:%s:%u", c->seed, c->loss_pct, c->mtu,
		 c->roce ? "roce" : "ib", c->nqp);
	return !strcmp(only, want);
}

/* Whether docs/timing.md quotes this line of the default run's report (its region
 * soak_report, which make docs writes from hcasim-tests --filter soak): the suite that
 * makes the report checks the quote, so suite docs need not run the soak again. */
static bool quoted_in_timing_md(const char *line)
{
	char path[512], buf[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/docs/timing.md", HCASIM_SRC_DIR);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	while (!found && fgets(buf, sizeof(buf), f))
		found = !strcmp(buf, line);
	fclose(f);
	return found;
}

/* Totals per loss rate, for runs with retry_cnt = rnr_retry = 7 and for the strict runs
 * (retry_cnt = rnr_retry = 1), where exhaustions happen and the oracle judges them. The
 * default run's lines must be the ones docs/timing.md quotes. */
static void report(enum mix mix, const unsigned *losses, struct soak_result sum[4][2],
		   bool quoted)
{
	for (unsigned l = 0; l < 4; l++)
		for (unsigned st = 0; st < 2; st++) {
			const struct soak_result *r = &sum[l][st];
			char line[512];

			if (!r->runs)
				continue;
			snprintf(line, sizeof(line),
				 "soak: %-6s loss %2u%% retry_cnt %u: %2u runs, %5" PRIu64
				 " of %5" PRIu64 " completed, %5" PRIu64 " retries (%4" PRIu64
				 " timeouts, %4" PRIu64 " response gaps), %4" PRIu64
				 " RNR NAKs, %3" PRIu64 " exhausted (%" PRIu64 " RNR), %3" PRIu64
				 " legitimate, %" PRIu64 " illegitimate\n",
				 mix_names[mix], losses[l], st ? 1 : 7, r->runs, r->delivered,
				 r->msgs, r->retries, r->timeouts, r->gaps, r->rnr, r->exhausted,
				 r->rnr_exh, r->legit, r->exhausted - r->legit);
			fputs(line, stdout);
			cr_expect(!quoted || quoted_in_timing_md(line),
				  "docs/timing.md (region soak_report) does not quote this line of "
				  "the report: run make docs\n%s",
				  line);
		}
	fflush(stdout);
}

/* The runs of one mix, for seeds 1 to 3. Default: each loss rate once per seed with
 * retry_cnt = rnr_retry = 7, MTU, link layer and QP count rotating, plus one strict run per
 * seed at 15 % (retry_cnt = rnr_retry = 1; seed 2 with a slow receiver). SOAK=1: every loss
 * rate, MTU, link layer and QP count for each seed, seed 3 strict (slow receiver on RoCE). */
static void soak_mix(enum mix mix)
{
	static const unsigned losses[] = { 1, 5, 10, 15 }, mtus[] = { 256, 1024, 4096 };
	bool full = soak_full();
	struct soak_result sum[4][2] = { { { 0 } } };

	for (unsigned seed = 1; seed <= 3; seed++) {
		for (unsigned i = 0; i < (full ? 48u : 5u); i++) {
			unsigned k = i + seed + (unsigned)mix, l, m, r, n;
			bool strict;
			struct run_cfg c;

			if (full) {
				l = i / 12, m = (i / 4) % 3, r = (i / 2) % 2, n = i % 2;
				strict = seed == 3;
			} else {
				strict = i == 4;
				l = strict ? 3 : i, m = k % 3, r = k % 2, n = (k / 2) % 2;
			}
			c = (struct run_cfg){ .mix = mix,
					      .loss_pct = losses[l],
					      .mtu = mtus[m],
					      .nqp = n ? 8 : 1,
					      .msgs = n ? 40 : 200,
					      .roce = r,
					      .seed = seed,
					      .retry_cnt = strict ? 1 : 7,
					      .rnr_retry = strict ? 1 : 7,
					      .slow_rq = strict && (full ? r == 1 : seed == 2) };
			if (selected(&c))
				run(&c, &sum[l][strict]);
		}
	}
	report(mix, losses, sum, !full && !getenv("SOAK_RUN"));
}

Test(soak, send_only)
{
	soak_mix(MIX_SEND);
}

Test(soak, write_and_write_with_imm)
{
	soak_mix(MIX_WRITE);
}

Test(soak, read_heavy)
{
	soak_mix(MIX_READ);
}

Test(soak, atomics)
{
	soak_mix(MIX_ATOMIC);
}

Test(soak, mixed_with_read_and_atomic_bursts)
{
	soak_mix(MIX_ALL);
}
