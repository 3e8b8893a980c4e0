/* dp_ops: every data-path operation through the public verbs API between hcasim0 and hcasim1.
 * For each operation and QP type it applies to: message sizes 0, 1, MTU-1, MTU, MTU+1, 1 MiB
 * and 4 MiB (UD: up to the MTU, and the over-MTU error), spread over 1..max_sge SGEs, each in
 * its own MR with guard bytes around it; memory compared byte for byte and completions field
 * by field. Then ordering, inline, unsignaled, fence, max_rd_atomic, atomics, SRQ (limit
 * event), completion channels (solicited, EDEADLK), CQ overrun, COMM_EST, RoCE and the QP
 * context cache under pressure.
 *
 * Rules: libibverbs man pages (ibv_post_send(3), ibv_poll_cq(3), ibv_modify_srq(3),
 * ibv_req_notify_cq(3), ibv_get_async_event(3)) and /work/shared/reference/ib-facts.md. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 0xe5 /* bytes that must not be touched */
#define PRE 5	   /* guard bytes before each SGE inside its MR */
#define POST 11	   /* guard bytes after it */
#define RG 67	   /* guard bytes around a remote WRITE/READ target (odd: unaligned) */
#define RSLACK 17  /* receive buffers are this much longer than the message */
#define MAXSGL 64
#define MIB ((size_t)1 << 20)
#define BIG (4 * MIB)	       /* the multi-MiB message */
#define US ((uint64_t)1000000) /* picoseconds per microsecond */

/* ---------------------------------------------------------------------------------------- */
/* helpers                                                                                   */

static const char *qpt_name(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : t == IBV_QPT_UD ? "UD" : "?";
}

static const char *op_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
		return "SEND";
	case IBV_WR_SEND_WITH_IMM:
		return "SEND_WITH_IMM";
	case IBV_WR_RDMA_WRITE:
		return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_RDMA_READ:
		return "RDMA_READ";
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return "ATOMIC_CMP_AND_SWP";
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return "ATOMIC_FETCH_AND_ADD";
	default:
		return "?";
	}
}

static bool op_is_send(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
}

static bool op_has_imm(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static uint8_t pat(size_t i, unsigned seed)
{
	return (uint8_t)(i * 7 + seed * 13 + (i >> 8) * 3 + (i >> 16) * 5 + 1);
}

static void pat_fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(i, seed);
}

/* Index of the first byte where a and b differ, or -1. */
static long first_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	if (!memcmp(a, b, n))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return (long)i;
	return -1;
}

/* Index of the first byte of b[0..n) that is not GUARD, or -1. */
static long not_guard(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != GUARD)
			return (long)i;
	return -1;
}

static void free_mr(struct ibv_mr *mr)
{
	void *buf;

	if (!mr)
		return;
	buf = mr->addr;
	cr_assert_eq(ibv_dereg_mr(mr), 0, "ibv_dereg_mr: %s", hcasim_last_error());
	free(buf);
}

static unsigned cfg_max_inline(void)
{
	char buf[32];

	cr_assert_eq(hcasim_config_get("hca.max_inline", buf, sizeof(buf)), 0, "%s",
		     hcasim_last_error());
	return (unsigned)strtoul(buf, NULL, 0);
}

/* A scatter/gather list whose every entry is its own MR: PRE guard bytes, the entry, POST
 * guard bytes. */
struct sgl {
	int n;
	size_t len;
	struct ibv_mr *mr[MAXSGL];
	struct ibv_sge sge[MAXSGL];
};

/* Length of piece i of len split in n uneven pieces (each >= 1 when len >= n). */
static size_t piece(size_t len, int n, int i)
{
	size_t base = len / (size_t)n, rem = len % (size_t)n;
	size_t p = base + ((size_t)i < rem), d = base / 3;

	if (i % 2 == 0 && i + 1 < n)
		p -= d;
	else if (i % 2 == 1)
		p += d;
	return p;
}

static void sgl_make(struct tb_dev *t, struct sgl *s, size_t len, int n)
{
	cr_assert(n >= 0 && n <= MAXSGL && (n > 0 || len == 0));
	memset(s, 0, sizeof(*s));
	s->n = n;
	s->len = len;
	for (int i = 0; i < n; i++) {
		size_t pl = piece(len, n, i);
		struct ibv_mr *mr = tb_mr(t, PRE + pl + POST);

		memset(mr->addr, GUARD, PRE + pl + POST);
		s->mr[i] = mr;
		s->sge[i] = (struct ibv_sge){(uintptr_t)mr->addr + PRE, (uint32_t)pl, mr->lkey};
	}
}

static void sgl_free(struct sgl *s)
{
	for (int i = 0; i < s->n; i++)
		free_mr(s->mr[i]);
	memset(s, 0, sizeof(*s));
}

/* Write src (s->len bytes) into the list's entries in order. */
static void sgl_put(struct sgl *s, const uint8_t *src)
{
	for (int i = 0; i < s->n; i++) {
		memcpy((void *)(uintptr_t)s->sge[i].addr, src, s->sge[i].length);
		src += s->sge[i].length;
	}
}

/* Gather the list's entries into dst (s->len bytes). */
static void sgl_get(const struct sgl *s, uint8_t *dst)
{
	for (int i = 0; i < s->n; i++) {
		memcpy(dst, (const void *)(uintptr_t)s->sge[i].addr, s->sge[i].length);
		dst += s->sge[i].length;
	}
}

/* Guard bytes around every entry untouched. */
static void sgl_check_guards(const struct sgl *s, const char *what)
{
	for (int i = 0; i < s->n; i++) {
		const uint8_t *b = s->mr[i]->addr;
		long g1 = not_guard(b, PRE), g2 = not_guard(b + PRE + s->sge[i].length, POST);

		cr_assert(g1 < 0 && g2 < 0, "%s: bytes outside SGE %d (of %d) were written", what,
			  i, s->n);
	}
}

struct pair {
	struct tb_dev a, b;
	struct ibv_qp *qa, *qb;
	struct ibv_qp_cap capa, capb;
	enum ibv_qp_type type;
	unsigned mtu;	   /* path MTU (RC/UC) or the port's active MTU (UD), bytes */
	struct ibv_ah *ah; /* UD: a -> b */
	bool grh;	   /* UD: the AH has a GRH */
	uint8_t gidx;	   /* UD: sgid_index of the AH, dgid = the peer GID there */
	bool chk_grh;	   /* UD: check the GRH slot's contents */
};

static struct ibv_qp *mk_qp(struct tb_dev *t, enum ibv_qp_type type, struct ibv_cq *scq,
			    struct ibv_cq *rcq, struct ibv_srq *srq, uint32_t wr, int sig_all,
			    struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr init = {
	    .send_cq = scq ? scq : t->cq,
	    .recv_cq = rcq ? rcq : t->cq,
	    .srq = srq,
	    .qp_type = type,
	    .sq_sig_all = sig_all,
	    .cap = {.max_send_wr = wr,
		    .max_recv_wr = srq ? 0 : wr,
		    .max_send_sge = (uint32_t)t->attr.max_sge,
		    .max_recv_sge = srq ? 0 : (uint32_t)t->attr.max_sge,
		    .max_inline_data = cfg_max_inline()},
	};
	struct ibv_qp *qp = ibv_create_qp(t->pd, &init);

	cr_assert_not_null(qp, "ibv_create_qp(%s): %s", qpt_name(type), hcasim_last_error());
	/* ibv_create_qp(3): the returned capabilities are at least the requested ones. */
	cr_assert_geq(init.cap.max_send_wr, wr);
	cr_assert_geq(init.cap.max_send_sge, (uint32_t)t->attr.max_sge);
	if (!srq)
		cr_assert_geq(init.cap.max_recv_sge, (uint32_t)t->attr.max_sge);
	if (cap)
		*cap = init.cap;
	return qp;
}

/* tb_connect with a chosen max_rd_atomic / max_dest_rd_atomic, optionally stopping in RTR. */
static void connect_qp(struct tb_dev *t, struct ibv_qp *qp, struct tb_dev *peer, uint32_t pqpn,
		       enum ibv_mtu mtu, uint8_t rd_atomic, bool rtr_only)
{
	struct ibv_qp_attr a;
	union ibv_gid gid;
	int m;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (qp->qp_type == IBV_QPT_RC)
		a.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	m = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	cr_assert_eq(ibv_modify_qp(qp, &a, m), 0, "INIT: %s", hcasim_last_error());
	cr_assert_eq(ibv_query_gid(peer->ctx, 1, 0, &gid), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = pqpn;
	a.rq_psn = 0x100;
	a.ah_attr.dlid = peer->port.lid;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = t->port.link_layer == IBV_LINK_LAYER_ETHERNET;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.hop_limit = 1;
	a.max_dest_rd_atomic = rd_atomic;
	a.min_rnr_timer = 1;
	m = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (qp->qp_type == IBV_QPT_RC)
		m |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	cr_assert_eq(ibv_modify_qp(qp, &a, m), 0, "RTR: %s", hcasim_last_error());
	if (rtr_only)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = rd_atomic;
	m = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC)
		m |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	cr_assert_eq(ibv_modify_qp(qp, &a, m), 0, "RTS: %s", hcasim_last_error());
}

static struct ibv_ah *mk_ah(struct tb_dev *t, struct tb_dev *peer, bool grh, uint8_t gidx)
{
	struct ibv_ah_attr at = {.dlid = peer->port.lid, .port_num = 1, .sl = 0};
	struct ibv_ah *ah;

	if (grh) {
		at.is_global = 1;
		at.grh.sgid_index = gidx;
		at.grh.hop_limit = 64;
		cr_assert_eq(ibv_query_gid(peer->ctx, 1, gidx, &at.grh.dgid), 0);
	}
	ah = ibv_create_ah(t->pd, &at);
	cr_assert_not_null(ah, "ibv_create_ah: %s", hcasim_last_error());
	return ah;
}

/* Open both HCAs, one QP on each with wr-deep queues and max_sge SGEs, connected. */
static void pair_open(struct pair *p, enum ibv_qp_type type, enum ibv_mtu mtu, uint32_t wr,
		      bool grh)
{
	memset(p, 0, sizeof(*p));
	p->type = type;
	tb_open(&p->a, 0);
	tb_open(&p->b, 1);
	p->qa = mk_qp(&p->a, type, NULL, NULL, NULL, wr, 0, &p->capa);
	p->qb = mk_qp(&p->b, type, NULL, NULL, NULL, wr, 0, &p->capb);
	tb_connect(&p->a, p->qa, &p->b, p->qb->qp_num, mtu);
	tb_connect(&p->b, p->qb, &p->a, p->qa->qp_num, mtu);
	if (type == IBV_QPT_UD) {
		p->mtu = 128u << p->a.port.active_mtu;
		p->grh = grh || p->a.port.link_layer == IBV_LINK_LAYER_ETHERNET;
		p->chk_grh = true;
		p->ah = mk_ah(&p->a, &p->b, p->grh, 0);
	} else {
		p->mtu = 128u << mtu;
	}
}

static void pair_close(struct pair *p)
{
	if (p->ah)
		cr_assert_eq(ibv_destroy_ah(p->ah), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(p->qa), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(p->qb), 0, "%s", hcasim_last_error());
	tb_close(&p->a);
	tb_close(&p->b);
}

static void post_recv_sges(struct ibv_qp *qp, struct ibv_sge *sge, int n, uint64_t wr_id)
{
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = n ? sge : NULL, .num_sge = n}, *bad;

	cr_assert_eq(ibv_post_recv(qp, &wr, &bad), 0, "ibv_post_recv: %s", hcasim_last_error());
}

static void post_send_wr(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	cr_assert_eq(ibv_post_send(qp, wr, &bad), 0, "ibv_post_send(%s): %s", op_name(wr->opcode),
		     hcasim_last_error());
}

/* No completion arrives on cq during another 20 us of simulated time. */
static void poll_none(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int n;

	hcasim_run_for_ps(20 * US);
	n = ibv_poll_cq(cq, 1, &wc);
	cr_assert_eq(n, 0, "%s: unexpected completion: wr_id 0x%llx status %s opcode %d", what,
		     (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode);
}

/* A zero-length SEND a -> b, both completions polled: everything posted before it on the QP
 * has been placed at the responder (in-order delivery on one QP). Used after UC WRITEs, whose
 * requester completion says nothing about the remote side. */
static void barrier(struct pair *p)
{
	struct ibv_send_wr w = {
	    .wr_id = 0xba, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
	struct ibv_wc wc;

	post_recv_sges(p->qb, NULL, 0, 0xbb);
	if (p->type == IBV_QPT_UD) {
		w.wr.ud.ah = p->ah;
		w.wr.ud.remote_qpn = p->qb->qp_num;
		w.wr.ud.remote_qkey = TB_QKEY;
	}
	post_send_wr(p->qa, &w);
	tb_poll(p->b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "barrier recv: %s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 0xbb);
	tb_poll(p->a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "barrier send: %s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 0xba);
}

/* The send-side completion, field by field (ibv_poll_cq(3): on success every field that
 * applies is valid; byte_len for READ and atomics). */
static void check_send_wc(const struct ibv_wc *wc, const char *what, uint64_t wr_id,
			  enum ibv_wc_opcode opcode, uint32_t qpn, bool chk_len, uint32_t len)
{
	cr_assert_eq(wc->status, IBV_WC_SUCCESS, "%s: send wc status %s (vendor_err %u) [%s]", what,
		     ibv_wc_status_str(wc->status), wc->vendor_err, hcasim_last_error());
	cr_assert_eq(wc->wr_id, wr_id, "%s: send wc wr_id 0x%llx, expected 0x%llx", what,
		     (unsigned long long)wc->wr_id, (unsigned long long)wr_id);
	cr_assert_eq(wc->opcode, opcode, "%s: send wc opcode %d, expected %d", what, wc->opcode,
		     opcode);
	cr_assert_eq(wc->qp_num, qpn, "%s: send wc qp_num 0x%x, expected 0x%x", what, wc->qp_num,
		     qpn);
	cr_assert_eq(wc->wc_flags, 0, "%s: send wc_flags 0x%x", what, wc->wc_flags);
	if (chk_len)
		cr_assert_eq(wc->byte_len, len, "%s: send wc byte_len %u, expected %u", what,
			     wc->byte_len, len);
}

struct recv_exp {
	uint64_t wr_id;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t qp_num, src_qp;
	uint16_t slid;
	unsigned wc_flags;
	__be32 imm;
	bool ud;
};

static void check_recv_wc(const struct ibv_wc *wc, const char *what, const struct recv_exp *e)
{
	cr_assert_eq(wc->status, IBV_WC_SUCCESS, "%s: recv wc status %s (vendor_err %u) [%s]", what,
		     ibv_wc_status_str(wc->status), wc->vendor_err, hcasim_last_error());
	cr_assert_eq(wc->wr_id, e->wr_id, "%s: recv wc wr_id 0x%llx, expected 0x%llx", what,
		     (unsigned long long)wc->wr_id, (unsigned long long)e->wr_id);
	cr_assert_eq(wc->opcode, e->opcode, "%s: recv wc opcode %d, expected %d", what, wc->opcode,
		     e->opcode);
	cr_assert_eq(wc->byte_len, e->byte_len, "%s: recv wc byte_len %u, expected %u", what,
		     wc->byte_len, e->byte_len);
	cr_assert_eq(wc->qp_num, e->qp_num, "%s: recv wc qp_num 0x%x, expected 0x%x", what,
		     wc->qp_num, e->qp_num);
	cr_assert_eq(wc->src_qp, e->src_qp, "%s: recv wc src_qp 0x%x, expected 0x%x", what,
		     wc->src_qp, e->src_qp);
	cr_assert_eq(wc->wc_flags, e->wc_flags, "%s: recv wc_flags 0x%x, expected 0x%x", what,
		     wc->wc_flags, e->wc_flags);
	if (e->wc_flags & IBV_WC_WITH_IMM)
		/* imm_data is network order, returned exactly as posted (ibv_poll_cq(3)). */
		cr_assert_eq(wc->imm_data, e->imm, "%s: recv imm_data 0x%08x, expected 0x%08x",
			     what, wc->imm_data, e->imm);
	cr_assert_eq(wc->slid, e->slid, "%s: recv wc slid %u, expected %u", what, wc->slid,
		     e->slid);
	cr_assert_eq(wc->sl, 0, "%s: recv wc sl %u, expected 0", what, wc->sl);
	cr_assert_eq(wc->dlid_path_bits, 0, "%s: recv dlid_path_bits %u", what, wc->dlid_path_bits);
	if (e->ud)
		cr_assert_eq(wc->pkey_index, 0, "%s: recv pkey_index %u, expected 0", what,
			     wc->pkey_index);
}

/* The 40-byte GRH slot of a UD receive on an IB port (IBA 8.3 / 11.4.1.1): IPv6-format
 * header, next header 0x1b, SGID = the sender's GID 0, DGID = ours. */
static void check_grh(const uint8_t *g, struct pair *p, const char *what)
{
	union ibv_gid sg, dg;

	cr_assert_eq(ibv_query_gid(p->a.ctx, 1, 0, &sg), 0);
	cr_assert_eq(ibv_query_gid(p->b.ctx, 1, 0, &dg), 0);
	cr_assert_eq(g[0] >> 4, 6, "%s: GRH IPVer %u", what, g[0] >> 4);
	cr_assert_eq(g[6], 0x1b, "%s: GRH next header 0x%02x", what, g[6]);
	cr_assert(!memcmp(g + 8, sg.raw, 16), "%s: GRH SGID is not the sender's GID 0", what);
	cr_assert(!memcmp(g + 24, dg.raw, 16), "%s: GRH DGID is not the receiver's GID 0", what);
}

static void hex40(const uint8_t *g, char *out)
{
	for (int i = 0; i < 40; i++)
		sprintf(out + 3 * i, "%02x%c", g[i], i % 8 == 7 ? '|' : ' ');
}

static bool gid_zero(const union ibv_gid *g)
{
	static const uint8_t z[16];

	return !memcmp(g->raw, z, 16);
}

static bool gid_v4mapped(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(g->raw, pfx, 12);
}

/* The port's IPv4 address: its first IPv4-mapped GID (false if it has none). */
static bool port_ipv4(struct tb_dev *t, uint8_t ip[4])
{
	for (int i = 0; i < t->port.gid_tbl_len && i < 16; i++) {
		union ibv_gid g;

		if (ibv_query_gid(t->ctx, 1, i, &g) == 0 && gid_v4mapped(&g)) {
			memcpy(ip, g.raw + 12, 4);
			return true;
		}
	}
	return false;
}

/* The GRH slot of a UD receive on a RoCE port must name the sender (IBA A17.4.5.1: the
 * GRH/IP header identifies the source; ibv_create_ah_from_wc builds the reply AH from it).
 * Either layout real software understands (rdma-core get_grh_header_version): an IPv4 header
 * in bytes 20..39 whose source is the sender's IPv4 address (its IPv4-mapped GID) and whose
 * destination is ours, or an IPv6-format GRH whose SGID is the GID the sender sent from
 * (sgid_index p->gidx) and whose DGID is the one it addressed. */
static void check_roce_grh(const uint8_t *g, struct pair *p, const char *what)
{
	union ibv_gid sg, dg;
	uint8_t s4[4], d4[4];
	char dump[40 * 3 + 1];
	bool v4 = false, v6;

	cr_assert_eq(ibv_query_gid(p->a.ctx, 1, p->gidx, &sg), 0);
	cr_assert_eq(ibv_query_gid(p->b.ctx, 1, p->gidx, &dg), 0);
	if (port_ipv4(&p->a, s4) && port_ipv4(&p->b, d4))
		v4 = (g[20] >> 4) == 4 && !memcmp(g + 32, s4, 4) && !memcmp(g + 36, d4, 4);
	v6 = (g[0] >> 4) == 6 && !memcmp(g + 8, sg.raw, 16) && !memcmp(g + 24, dg.raw, 16);
	hex40(g, dump);
	cr_assert(v4 || v6,
		  "%s: the GRH slot names neither the sender's IPv4 address in an IPv4 "
		  "header at bytes 20..39 nor its GID %u as SGID in an IPv6-format GRH: %s",
		  what, p->gidx, dump);
}

/* ---------------------------------------------------------------------------------------- */
/* one transfer: op of len bytes over nsge SGEs, a -> b, everything checked                   */

static void xfer_case(struct pair *p, enum ibv_wr_opcode op, size_t len, int nsge, unsigned seed)
{
	char what[160];
	struct sgl loc, rcv;
	struct ibv_mr *rm = NULL;
	size_t grh = p->type == IBV_QPT_UD ? 40 : 0;
	bool send = op_is_send(op), imm = op_has_imm(op);
	bool recv = send || op == IBV_WR_RDMA_WRITE_WITH_IMM;
	uint64_t swr = 0x5000000000ull + seed, rwr = 0x7000000000ull + seed;
	__be32 immv = htobe32(0xc0de0000u + seed);
	uint8_t *msg = malloc(len ? len : 1), *got;
	struct ibv_send_wr w = {0};
	struct ibv_wc wc;
	long d;

	snprintf(what, sizeof(what), "%s %s len=%zu nsge=%d", qpt_name(p->type), op_name(op), len,
		 nsge);
	cr_assert_not_null(msg);
	pat_fill(msg, len, seed);
	memset(&rcv, 0, sizeof(rcv));
	sgl_make(&p->a, &loc, len, nsge);
	if (op != IBV_WR_RDMA_READ)
		sgl_put(&loc, msg);
	if (send)
		sgl_make(&p->b, &rcv, grh + len + RSLACK, nsge ? nsge : 1);
	else if (recv)
		sgl_make(&p->b, &rcv, 16, 1); /* WRITE_WITH_IMM: consumed, never written */
	if (!send) {
		rm = tb_mr(&p->b, len + 2 * RG);
		memset(rm->addr, GUARD, len + 2 * RG);
		if (op == IBV_WR_RDMA_READ)
			memcpy((uint8_t *)rm->addr + RG, msg, len);
	}
	if (recv)
		post_recv_sges(p->qb, rcv.sge, rcv.n, rwr);

	w.wr_id = swr;
	w.sg_list = loc.n ? loc.sge : NULL;
	w.num_sge = loc.n;
	w.opcode = op;
	w.send_flags = IBV_SEND_SIGNALED;
	if (imm)
		w.imm_data = immv;
	if (p->type == IBV_QPT_UD) {
		w.wr.ud.ah = p->ah;
		w.wr.ud.remote_qpn = p->qb->qp_num;
		w.wr.ud.remote_qkey = TB_QKEY;
	} else if (!send) {
		w.wr.rdma.remote_addr = (uintptr_t)rm->addr + RG;
		w.wr.rdma.rkey = rm->rkey;
	}
	post_send_wr(p->qa, &w);

	if (recv) {
		struct recv_exp e = {
		    .wr_id = rwr,
		    .opcode = send ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM,
		    .byte_len = (uint32_t)(grh + len),
		    .qp_num = p->qb->qp_num,
		    .src_qp = p->qa->qp_num,
		    .slid = p->a.port.lid,
		    .wc_flags = (imm ? IBV_WC_WITH_IMM : 0) |
				(p->type == IBV_QPT_UD && p->grh ? IBV_WC_GRH : 0),
		    .imm = immv,
		    .ud = p->type == IBV_QPT_UD,
		};

		tb_poll(p->b.cq, &wc, 1);
		check_recv_wc(&wc, what, &e);
	}
	tb_poll(p->a.cq, &wc, 1);
	check_send_wc(&wc, what, swr,
		      send		       ? IBV_WC_SEND
		      : op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ
					       : IBV_WC_RDMA_WRITE,
		      p->qa->qp_num, op == IBV_WR_RDMA_READ, (uint32_t)len);
	if (p->type == IBV_QPT_UC && !recv)
		barrier(p);

	/* memory, byte for byte */
	got = malloc(grh + len + RSLACK + 1);
	cr_assert_not_null(got);
	if (send) {
		sgl_get(&rcv, got);
		d = first_diff(got + grh, msg, len);
		cr_assert(d < 0, "%s: received data differs at byte %ld (got 0x%02x, sent 0x%02x)",
			  what, d, d < 0 ? 0 : got[grh + d], d < 0 ? 0 : msg[d]);
		d = not_guard(got + grh + len, RSLACK);
		cr_assert(d < 0, "%s: receive buffer written past the message (+%ld)", what, d);
		if (grh && p->grh && p->chk_grh &&
		    p->a.port.link_layer == IBV_LINK_LAYER_INFINIBAND)
			check_grh(got, p, what);
		else if (grh && p->grh && p->chk_grh)
			check_roce_grh(got, p, what);
		sgl_check_guards(&rcv, what);
	} else {
		const uint8_t *r = rm->addr;

		d = not_guard(r, RG);
		cr_assert(d < 0, "%s: remote bytes before the target changed (at %ld)", what, d);
		d = not_guard(r + RG + len, RG);
		cr_assert(d < 0, "%s: remote bytes after the target changed (at +%ld)", what, d);
		d = first_diff(r + RG, msg, len);
		cr_assert(d < 0, "%s: remote memory differs at byte %ld (0x%02x, expected 0x%02x)",
			  what, d, d < 0 ? 0 : r[RG + d], d < 0 ? 0 : msg[d]);
		if (op == IBV_WR_RDMA_WRITE_WITH_IMM) {
			sgl_get(&rcv, got);
			cr_assert(not_guard(got, 16) < 0,
				  "%s: the receive buffer of a WRITE_WITH_IMM was written", what);
		}
	}
	/* the local side: source untouched, or READ data scattered exactly */
	sgl_get(&loc, got);
	d = first_diff(got, msg, len);
	cr_assert(d < 0, "%s: local buffer %s at byte %ld", what,
		  op == IBV_WR_RDMA_READ ? "(READ result) differs" : "(source) changed", d);
	sgl_check_guards(&loc, what);

	free(got);
	free(msg);
	sgl_free(&loc);
	sgl_free(&rcv);
	free_mr(rm);
}

struct xcase {
	size_t len;
	int nsge;
};

/* Sizes 0, 1, MTU-1, MTU, MTU+1, 1 MiB, 4 MiB over 0/1 .. max_sge SGEs. */
static void run_matrix(struct pair *p, enum ibv_wr_opcode op)
{
	int ms = (int)p->capa.max_send_sge;
	size_t m = p->mtu;

	if (op == IBV_WR_RDMA_READ && ms > p->a.attr.max_sge_rd)
		ms = p->a.attr.max_sge_rd;
	if (ms > (int)p->capb.max_recv_sge)
		ms = (int)p->capb.max_recv_sge;
	const struct xcase cases[] = {
	    {0, 0},	{0, 1},	     {1, 1},	     {m - 1, 1}, {m - 1, 3}, {m, 2},   {m, ms},
	    {m + 1, 1}, {m + 1, ms}, {3 * m + 5, 4}, {MIB, ms},	 {MIB, 5},   {BIG, 7},
	};

	struct hcasim_dev_counters c0, c1;
	uint64_t pkts = 0;

	cr_assert_eq(hcasim_dev_counters(0, &c0), 0, "%s", hcasim_last_error());
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = (cases[i].len + m - 1) / m;

		xfer_case(p, op, cases[i].len, cases[i].nsge, i + 1);
		/* requests a sent: one per MTU of payload (at least one), one per READ; UC
		 * WRITEs are followed by a zero-length barrier SEND */
		pkts += op == IBV_WR_RDMA_READ ? 1 : n ? n : 1;
		if (p->type == IBV_QPT_UC && op == IBV_WR_RDMA_WRITE)
			pkts++;
	}
	cr_assert_eq(hcasim_dev_counters(0, &c1), 0, "%s", hcasim_last_error());
	cr_assert_eq(c1.tx_pkts - c0.tx_pkts, pkts,
		     "%s %s: %llu request packets for the matrix, expected %llu (path MTU %u)",
		     qpt_name(p->type), op_name(op), (unsigned long long)(c1.tx_pkts - c0.tx_pkts),
		     (unsigned long long)pkts, p->mtu);
}

#define MATRIX_TEST(name, qpt, op)                                                                 \
	Test(dp_ops, name)                                                                         \
	{                                                                                          \
		struct pair p;                                                                     \
                                                                                                   \
		pair_open(&p, qpt, IBV_MTU_1024, 16, false);                                       \
		run_matrix(&p, op);                                                                \
		pair_close(&p);                                                                    \
	}

MATRIX_TEST(rc_send_sizes_and_sges, IBV_QPT_RC, IBV_WR_SEND)
MATRIX_TEST(rc_send_with_imm_sizes_and_sges, IBV_QPT_RC, IBV_WR_SEND_WITH_IMM)
MATRIX_TEST(rc_rdma_write_sizes_and_sges, IBV_QPT_RC, IBV_WR_RDMA_WRITE)
MATRIX_TEST(rc_rdma_write_with_imm_sizes_and_sges, IBV_QPT_RC, IBV_WR_RDMA_WRITE_WITH_IMM)
MATRIX_TEST(rc_rdma_read_sizes_and_sges, IBV_QPT_RC, IBV_WR_RDMA_READ)
MATRIX_TEST(uc_send_sizes_and_sges, IBV_QPT_UC, IBV_WR_SEND)
MATRIX_TEST(uc_send_with_imm_sizes_and_sges, IBV_QPT_UC, IBV_WR_SEND_WITH_IMM)
MATRIX_TEST(uc_rdma_write_sizes_and_sges, IBV_QPT_UC, IBV_WR_RDMA_WRITE)
MATRIX_TEST(uc_rdma_write_with_imm_sizes_and_sges, IBV_QPT_UC, IBV_WR_RDMA_WRITE_WITH_IMM)

/* UD: sizes up to the port MTU. */
static void run_ud_matrix(struct pair *p, enum ibv_wr_opcode op)
{
	int ms = (int)p->capa.max_send_sge;
	size_t m = p->mtu;

	if (ms > (int)p->capb.max_recv_sge)
		ms = (int)p->capb.max_recv_sge;
	const struct xcase cases[] = {
	    {0, 0}, {0, 1}, {1, 1}, {m - 1, 1}, {m - 1, 3}, {m, 2}, {m, ms},
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		xfer_case(p, op, cases[i].len, cases[i].nsge, 40 + i);
}

Test(dp_ops, ud_send_and_send_with_imm_sizes_and_sges_no_grh)
{
	struct pair p;

	pair_open(&p, IBV_QPT_UD, IBV_MTU_1024, 16, false);
	run_ud_matrix(&p, IBV_WR_SEND);
	run_ud_matrix(&p, IBV_WR_SEND_WITH_IMM);
	pair_close(&p);
}

/* The service level travels with the packet: a UD AH with sl 5 gives wc.sl 5 (IB: LRH.SL). */
Test(dp_ops, ud_sl_reaches_the_receive_completion)
{
	struct pair p;
	struct ibv_ah_attr at;
	struct ibv_ah *ah;
	struct ibv_mr *lm, *rm;
	struct ibv_sge s, rs;
	struct ibv_send_wr w = {0};
	struct ibv_wc wc;

	pair_open(&p, IBV_QPT_UD, IBV_MTU_1024, 16, false);
	memset(&at, 0, sizeof(at));
	at.dlid = p.b.port.lid;
	at.port_num = 1;
	at.sl = 5;
	ah = ibv_create_ah(p.a.pd, &at);
	cr_assert_not_null(ah, "%s", hcasim_last_error());
	lm = tb_mr(&p.a, 64);
	rm = tb_mr(&p.b, 128);
	s = (struct ibv_sge){(uintptr_t)lm->addr, 32, lm->lkey};
	rs = (struct ibv_sge){(uintptr_t)rm->addr, 128, rm->lkey};
	post_recv_sges(p.qb, &rs, 1, 5);
	w.wr_id = 6;
	w.sg_list = &s;
	w.num_sge = 1;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = p.qb->qp_num;
	w.wr.ud.remote_qkey = TB_QKEY;
	post_send_wr(p.qa, &w);
	tb_poll(p.b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.sl, 5, "UD SEND with AH sl 5: wc.sl %u", wc.sl);
	cr_assert_eq(wc.byte_len, 72u);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(ibv_destroy_ah(ah), 0);
	free_mr(lm);
	free_mr(rm);
	pair_close(&p);
}

Test(dp_ops, ud_send_and_send_with_imm_with_grh)
{
	struct pair p;

	pair_open(&p, IBV_QPT_UD, IBV_MTU_1024, 16, true);
	run_ud_matrix(&p, IBV_WR_SEND);
	run_ud_matrix(&p, IBV_WR_SEND_WITH_IMM);
	pair_close(&p);
}

/* A UD send longer than the path MTU is an error for the sender (ib-facts "Responder", UD):
 * IBV_WC_LOC_LEN_ERR, whether signaled or not (ibv_post_send(3): errors always complete), the
 * QP goes to SQE (send errors on UD), nothing reaches the receiver; SQE->RTS recovers. */
static void ud_over_mtu(struct pair *p)
{
	struct sgl loc, rcv;
	struct ibv_send_wr w = {0};
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc;
	uint8_t *msg, *got;
	size_t len = p->mtu + 1;

	sgl_make(&p->a, &loc, len, 2);
	sgl_make(&p->b, &rcv, 40 + len + RSLACK, 1);
	msg = malloc(len);
	got = malloc(40 + len + RSLACK);
	pat_fill(msg, len, 9);
	sgl_put(&loc, msg);
	post_recv_sges(p->qb, rcv.sge, rcv.n, 0x99);
	w.wr_id = 0x1234;
	w.sg_list = loc.sge;
	w.num_sge = 2;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.ud.ah = p->ah;
	w.wr.ud.remote_qpn = p->qb->qp_num;
	w.wr.ud.remote_qkey = TB_QKEY;
	post_send_wr(p->qa, &w);
	tb_poll(p->a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR,
		     "UD SEND of %zu bytes (MTU %u): status %s, expected LOC_LEN_ERR", len, p->mtu,
		     ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 0x1234);
	cr_assert_eq(wc.qp_num, p->qa->qp_num);
	poll_none(p->b.cq, "UD over-MTU send: receiver");
	cr_assert_eq(ibv_query_qp(p->qa, &qa, IBV_QP_STATE, &qi), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_SQE, "UD QP after a send error: state %d, expected SQE",
		     qa.qp_state);
	/* SQE -> RTS, then a good send lands in the receive posted above. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	cr_assert_eq(ibv_modify_qp(p->qa, &qa, IBV_QP_STATE), 0, "SQE->RTS: %s",
		     hcasim_last_error());
	loc.sge[0].length = 1;
	w.num_sge = 1;
	w.wr_id = 0x1235;
	post_send_wr(p->qa, &w);
	tb_poll(p->b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 0x99);
	cr_assert_eq(wc.byte_len, 41);
	sgl_get(&rcv, got);
	cr_assert_eq(got[40], msg[0]);
	tb_poll(p->a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 0x1235);
	/* An unsignaled over-MTU send still completes, with the error. */
	loc.sge[0].length = (uint32_t)piece(len, 2, 0);
	w.num_sge = 2;
	w.wr_id = 0x1236;
	w.send_flags = 0;
	post_send_wr(p->qa, &w);
	tb_poll(p->a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_LOC_LEN_ERR, "unsignaled over-MTU UD send: %s",
		     ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 0x1236);
	free(msg);
	free(got);
	sgl_free(&loc);
	sgl_free(&rcv);
}

Test(dp_ops, ud_send_longer_than_mtu_is_loc_len_err)
{
	struct pair p;

	pair_open(&p, IBV_QPT_UD, IBV_MTU_1024, 16, false);
	ud_over_mtu(&p);
	pair_close(&p);
}

/* The same with a 1024-byte link MTU: the UD limit is the port's active MTU, not 4096. */
Test(dp_ops, ud_mtu_follows_the_port_active_mtu)
{
	struct pair p;

	tb_config("link.mtu", "1024");
	pair_open(&p, IBV_QPT_UD, IBV_MTU_1024, 16, false);
	cr_assert_eq(p.a.port.active_mtu, IBV_MTU_1024, "active_mtu %d", p.a.port.active_mtu);
	cr_assert_eq(p.mtu, 1024u);
	xfer_case(&p, IBV_WR_SEND, 1024, 3, 77);
	ud_over_mtu(&p);
	pair_close(&p);
}

/* ---------------------------------------------------------------------------------------- */
/* atomics                                                                                  */

static void atomic_op(struct pair *p, enum ibv_wr_opcode op, struct ibv_mr *lm, size_t loff,
		      struct ibv_mr *rm, size_t roff, uint64_t cmp_add, uint64_t swap,
		      uint64_t wr_id)
{
	struct ibv_sge s = {(uintptr_t)lm->addr + loff, 8, lm->lkey};
	struct ibv_send_wr w = {.wr_id = wr_id,
				.sg_list = &s,
				.num_sge = 1,
				.opcode = op,
				.send_flags = IBV_SEND_SIGNALED};

	w.wr.atomic.remote_addr = (uintptr_t)rm->addr + roff;
	w.wr.atomic.rkey = rm->rkey;
	w.wr.atomic.compare_add = cmp_add;
	w.wr.atomic.swap = swap;
	post_send_wr(p->qa, &w);
}

static uint64_t rd64(const void *base, size_t off)
{
	uint64_t v;

	memcpy(&v, (const uint8_t *)base + off, 8);
	return v;
}

static void wr64(void *base, size_t off, uint64_t v)
{
	memcpy((uint8_t *)base + off, &v, 8);
}

/* Every byte of m (len) except [off, off+8) is GUARD. */
static void check_around(struct ibv_mr *m, size_t len, size_t off, const char *what)
{
	const uint8_t *b = m->addr;

	cr_assert(not_guard(b, off) < 0 && not_guard(b + off + 8, len - off - 8) < 0,
		  "%s: bytes around the 8-byte target changed", what);
}

Test(dp_ops, rc_atomics_return_original_and_update_once)
{
	struct pair p;
	struct ibv_mr *rm, *lm;
	struct ibv_wc wc[16];
	const size_t RL = 64, RO = 16, LL = 256;
	uint64_t v0 = 0x1122334455667788ull, add = 0x0101010101010101ull, v;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024, 32, false);
	rm = tb_mr(&p.b, RL);
	lm = tb_mr(&p.a, LL);
	memset(rm->addr, GUARD, RL);
	memset(lm->addr, GUARD, LL);
	wr64(rm->addr, RO, v0);

	/* FETCH_AND_ADD: original returned, memory = original + add. */
	atomic_op(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, lm, 8, rm, RO, add, 0, 1);
	tb_poll(p.a.cq, wc, 1);
	check_send_wc(&wc[0], "FETCH_AND_ADD", 1, IBV_WC_FETCH_ADD, p.qa->qp_num, true, 8);
	cr_assert_eq(rd64(lm->addr, 8), v0, "FETCH_AND_ADD returned 0x%llx, expected 0x%llx",
		     (unsigned long long)rd64(lm->addr, 8), (unsigned long long)v0);
	cr_assert_eq(rd64(rm->addr, RO), v0 + add, "FETCH_AND_ADD left 0x%llx",
		     (unsigned long long)rd64(rm->addr, RO));
	check_around(rm, RL, RO, "FETCH_AND_ADD remote");
	check_around(lm, LL, 8, "FETCH_AND_ADD local");
	v = v0 + add;

	/* CMP_AND_SWP, equal: swapped, original returned. */
	memset(lm->addr, GUARD, LL);
	atomic_op(&p, IBV_WR_ATOMIC_CMP_AND_SWP, lm, 16, rm, RO, v, 0xdeadbeefcafef00dull, 2);
	tb_poll(p.a.cq, wc, 1);
	check_send_wc(&wc[0], "CMP_AND_SWP (equal)", 2, IBV_WC_COMP_SWAP, p.qa->qp_num, true, 8);
	cr_assert_eq(rd64(lm->addr, 16), v, "CMP_AND_SWP returned 0x%llx, expected 0x%llx",
		     (unsigned long long)rd64(lm->addr, 16), (unsigned long long)v);
	cr_assert_eq(rd64(rm->addr, RO), 0xdeadbeefcafef00dull, "CMP_AND_SWP (equal) left 0x%llx",
		     (unsigned long long)rd64(rm->addr, RO));
	check_around(rm, RL, RO, "CMP_AND_SWP remote");
	check_around(lm, LL, 16, "CMP_AND_SWP local");
	v = 0xdeadbeefcafef00dull;

	/* CMP_AND_SWP, not equal: memory unchanged, original returned. */
	memset(lm->addr, GUARD, LL);
	atomic_op(&p, IBV_WR_ATOMIC_CMP_AND_SWP, lm, 24, rm, RO, v + 1, 42, 3);
	tb_poll(p.a.cq, wc, 1);
	check_send_wc(&wc[0], "CMP_AND_SWP (not equal)", 3, IBV_WC_COMP_SWAP, p.qa->qp_num, true,
		      8);
	cr_assert_eq(rd64(lm->addr, 24), v, "CMP_AND_SWP (not equal) returned 0x%llx",
		     (unsigned long long)rd64(lm->addr, 24));
	cr_assert_eq(rd64(rm->addr, RO), v, "CMP_AND_SWP (not equal) changed memory to 0x%llx",
		     (unsigned long long)rd64(rm->addr, RO));
	check_around(rm, RL, RO, "CMP_AND_SWP (not equal) remote");

	/* Ten FETCH_AND_ADD(1) in one post: each executed exactly once, in order. */
	memset(lm->addr, GUARD, LL);
	{
		struct ibv_sge s[10];
		struct ibv_send_wr w[10], *bad;

		for (int i = 0; i < 10; i++) {
			s[i] =
			    (struct ibv_sge){(uintptr_t)lm->addr + 8 * (size_t)i * 2, 8, lm->lkey};
			w[i] = (struct ibv_send_wr){.wr_id = 100 + (uint64_t)i,
						    .sg_list = &s[i],
						    .num_sge = 1,
						    .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
						    .send_flags = IBV_SEND_SIGNALED,
						    .next = i < 9 ? &w[i + 1] : NULL};
			w[i].wr.atomic.remote_addr = (uintptr_t)rm->addr + RO;
			w[i].wr.atomic.rkey = rm->rkey;
			w[i].wr.atomic.compare_add = 1;
		}
		cr_assert_eq(ibv_post_send(p.qa, w, &bad), 0, "%s", hcasim_last_error());
		tb_poll(p.a.cq, wc, 10);
		for (int i = 0; i < 10; i++) {
			check_send_wc(&wc[i], "FETCH_AND_ADD x10", 100 + (uint64_t)i,
				      IBV_WC_FETCH_ADD, p.qa->qp_num, true, 8);
			cr_assert_eq(rd64(lm->addr, 16 * (size_t)i), v + (uint64_t)i,
				     "FETCH_AND_ADD #%d returned 0x%llx, expected 0x%llx", i,
				     (unsigned long long)rd64(lm->addr, 16 * (size_t)i),
				     (unsigned long long)(v + (uint64_t)i));
		}
		cr_assert_eq(rd64(rm->addr, RO), v + 10, "after 10 x +1: 0x%llx (expected 0x%llx)",
			     (unsigned long long)rd64(rm->addr, RO), (unsigned long long)(v + 10));
		check_around(rm, RL, RO, "FETCH_AND_ADD x10 remote");
	}
	poll_none(p.a.cq, "atomics");
	free_mr(rm);
	free_mr(lm);
	pair_close(&p);
}

/* ---------------------------------------------------------------------------------------- */
/* ordering                                                                                 */

/* 50 SENDs and WRITEs of varied sizes (many multi-packet) posted as one chain: completions in
 * posting order (IBA 10.8.3: a QP completes its WRs in order), the receives consume the
 * receive WRs in order with the SENDs' data in order, every WRITE landed. */
static void ordering(enum ibv_qp_type type)
{
	struct pair p;
	enum { N = 50, SLOT = 4096 };
	struct ibv_mr *lm, *wm, *rm;
	struct ibv_sge s[N], rs[N];
	struct ibv_send_wr w[N], *bad;
	struct ibv_recv_wr rw[N], *rbad;
	struct ibv_wc wc[N];
	size_t sz[N];
	int sends = 0, sidx[N];

	pair_open(&p, type, IBV_MTU_1024, 64, false);
	lm = tb_mr(&p.a, N * SLOT);
	wm = tb_mr(&p.b, N * SLOT);
	rm = tb_mr(&p.b, N * SLOT);
	memset(wm->addr, GUARD, N * SLOT);
	memset(rm->addr, GUARD, N * SLOT);
	for (int i = 0; i < N; i++) {
		bool wrt = i % 3 == 1, wimm = i % 9 == 4;

		sz[i] = 1 + ((size_t)i * 397) % 3000;
		pat_fill((uint8_t *)lm->addr + (size_t)i * SLOT, sz[i], 100 + (unsigned)i);
		s[i] = (struct ibv_sge){(uintptr_t)lm->addr + (size_t)i * SLOT, (uint32_t)sz[i],
					lm->lkey};
		w[i] = (struct ibv_send_wr){.wr_id = 1000 + (uint64_t)i,
					    .sg_list = &s[i],
					    .num_sge = 1,
					    .opcode = wimm  ? IBV_WR_RDMA_WRITE_WITH_IMM
						      : wrt ? IBV_WR_RDMA_WRITE
							    : IBV_WR_SEND,
					    .send_flags = IBV_SEND_SIGNALED,
					    .imm_data = htobe32(0x1e000000u + (uint32_t)i),
					    .next = i + 1 < N ? &w[i + 1] : NULL};
		if (wrt) {
			w[i].wr.rdma.remote_addr = (uintptr_t)wm->addr + (size_t)i * SLOT;
			w[i].wr.rdma.rkey = wm->rkey;
		}
		if (!wrt || wimm) {
			rs[sends] = (struct ibv_sge){(uintptr_t)rm->addr + (size_t)sends * SLOT,
						     SLOT, rm->lkey};
			rw[sends] = (struct ibv_recv_wr){
			    .wr_id = 5000 + (uint64_t)sends, .sg_list = &rs[sends], .num_sge = 1};
			if (sends)
				rw[sends - 1].next = &rw[sends];
			sidx[sends++] = i;
		}
	}
	cr_assert_eq(ibv_post_recv(p.qb, rw, &rbad), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_post_send(p.qa, w, &bad), 0, "%s", hcasim_last_error());
	tb_poll(p.a.cq, wc, N);
	for (int i = 0; i < N; i++)
		check_send_wc(&wc[i], "ordering (send side)", 1000 + (uint64_t)i,
			      i % 3 == 1 ? IBV_WC_RDMA_WRITE : IBV_WC_SEND, p.qa->qp_num, false, 0);
	tb_poll(p.b.cq, wc, sends);
	for (int k = 0; k < sends; k++) {
		int i = sidx[k];
		char what[64];
		const uint8_t *got = (const uint8_t *)rm->addr + (size_t)k * SLOT;
		const uint8_t *exp = (const uint8_t *)lm->addr + (size_t)i * SLOT;
		bool wimm = i % 3 == 1;
		struct recv_exp e = {.wr_id = 5000 + (uint64_t)k,
				     .opcode = wimm ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
				     .byte_len = (uint32_t)sz[i],
				     .qp_num = p.qb->qp_num,
				     .src_qp = p.qa->qp_num,
				     .slid = p.a.port.lid,
				     .wc_flags = wimm ? IBV_WC_WITH_IMM : 0,
				     .imm = htobe32(0x1e000000u + (uint32_t)i)};

		snprintf(what, sizeof(what), "%s ordering: receive %d (WR %d)", qpt_name(type), k,
			 i);
		check_recv_wc(&wc[k], what, &e);
		if (wimm) {
			/* the WRITE's data is already in place when its receive completes */
			const uint8_t *wg = (const uint8_t *)wm->addr + (size_t)i * SLOT;

			cr_assert(first_diff(wg, exp, sz[i]) < 0, "%s: WRITE_WITH_IMM data", what);
			cr_assert(not_guard(got, SLOT) < 0, "%s: receive buffer written", what);
			continue;
		}
		cr_assert(first_diff(got, exp, sz[i]) < 0, "%s: data out of order or wrong", what);
		cr_assert(not_guard(got + sz[i], SLOT - sz[i]) < 0, "%s: written past", what);
	}
	if (type == IBV_QPT_UC)
		barrier(&p);
	for (int i = 1; i < N; i += 3) {
		const uint8_t *got = (const uint8_t *)wm->addr + (size_t)i * SLOT;

		cr_assert(first_diff(got, (const uint8_t *)lm->addr + (size_t)i * SLOT, sz[i]) < 0,
			  "%s ordering: WRITE %d data wrong", qpt_name(type), i);
		cr_assert(not_guard(got + sz[i], SLOT - sz[i]) < 0, "WRITE %d written past", i);
	}
	poll_none(p.a.cq, "ordering");
	free_mr(lm);
	free_mr(wm);
	free_mr(rm);
	pair_close(&p);
}

Test(dp_ops, rc_ordering_50_mixed_sends_and_writes)
{
	ordering(IBV_QPT_RC);
}

Test(dp_ops, uc_ordering_50_mixed_sends_and_writes)
{
	ordering(IBV_QPT_UC);
}

/* ---------------------------------------------------------------------------------------- */
/* inline                                                                                   */

/* IBV_SEND_INLINE (ibv_post_send(3)): the data is copied at post time, so the buffer may be
 * reused at once; the lkey is not checked (the buffer here is not registered at all). */
static void inline_case(struct pair *p, enum ibv_wr_opcode op, size_t len, unsigned seed)
{
	char what[96];
	uint8_t *buf = malloc(len + 1), *msg = malloc(len + 1);
	struct ibv_mr *rm = tb_mr(&p->b, 40 + len + RSLACK);
	struct ibv_sge s[2], rs = {(uintptr_t)rm->addr, (uint32_t)(40 + len + RSLACK), rm->lkey};
	struct ibv_send_wr w = {0};
	struct ibv_wc wc;
	size_t grh = p->type == IBV_QPT_UD ? 40 : 0, h = len / 2;
	const uint8_t *got = (const uint8_t *)rm->addr + (op_is_send(op) ? grh : 0);

	snprintf(what, sizeof(what), "%s inline %s len=%zu", qpt_name(p->type), op_name(op), len);
	pat_fill(msg, len, seed);
	memcpy(buf, msg, len);
	memset(rm->addr, GUARD, 40 + len + RSLACK);
	s[0] = (struct ibv_sge){(uintptr_t)buf, (uint32_t)h, 0};
	s[1] = (struct ibv_sge){(uintptr_t)buf + h, (uint32_t)(len - h), 0};
	w.wr_id = seed;
	w.sg_list = s;
	w.num_sge = 2;
	w.opcode = op;
	w.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	if (op_has_imm(op))
		w.imm_data = htobe32(0xabc00000u + seed);
	if (p->type == IBV_QPT_UD) {
		w.wr.ud.ah = p->ah;
		w.wr.ud.remote_qpn = p->qb->qp_num;
		w.wr.ud.remote_qkey = TB_QKEY;
	} else if (!op_is_send(op)) {
		w.wr.rdma.remote_addr = (uintptr_t)rm->addr;
		w.wr.rdma.rkey = rm->rkey;
	}
	if (op_is_send(op))
		post_recv_sges(p->qb, &rs, 1, seed + 1);
	else if (op_has_imm(op))
		post_recv_sges(p->qb, NULL, 0, seed + 1);
	post_send_wr(p->qa, &w);
	memset(buf, 0xff, len); /* reused right after the post */
	if (op_is_send(op) || op_has_imm(op)) {
		struct recv_exp e = {.wr_id = seed + 1,
				     .opcode =
					 op_is_send(op) ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM,
				     .byte_len = (uint32_t)(grh + len),
				     .qp_num = p->qb->qp_num,
				     .src_qp = p->qa->qp_num,
				     .slid = p->a.port.lid,
				     .wc_flags = op_has_imm(op) ? IBV_WC_WITH_IMM : 0,
				     .imm = htobe32(0xabc00000u + seed),
				     .ud = p->type == IBV_QPT_UD};

		tb_poll(p->b.cq, &wc, 1);
		check_recv_wc(&wc, what, &e);
	}
	tb_poll(p->a.cq, &wc, 1);
	check_send_wc(&wc, what, seed, op_is_send(op) ? IBV_WC_SEND : IBV_WC_RDMA_WRITE,
		      p->qa->qp_num, false, 0);
	if (p->type == IBV_QPT_UC && !op_is_send(op))
		barrier(p);
	cr_assert(first_diff(got, msg, len) < 0,
		  "%s: data differs (the buffer was read after the "
		  "post returned?)",
		  what);
	cr_assert(not_guard(got + len, RSLACK) < 0, "%s: written past the message", what);
	free(buf);
	free(msg);
	free_mr(rm);
}

Test(dp_ops, inline_rc_uc_send_and_write_up_to_max_inline_data)
{
	struct pair p;
	static const enum ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_UC};

	for (unsigned t = 0; t < 2; t++) {
		size_t mi;

		pair_open(&p, types[t], IBV_MTU_256, 16, false);
		mi = p.capa.max_inline_data;
		cr_assert_geq(mi, cfg_max_inline(), "max_inline_data %zu", mi);
		/* max_inline 256 > path MTU 256 - 1: the inline message spans packets too */
		inline_case(&p, IBV_WR_SEND, 1, 1);
		inline_case(&p, IBV_WR_SEND, 64, 2);
		inline_case(&p, IBV_WR_SEND_WITH_IMM, 100, 3);
		inline_case(&p, IBV_WR_SEND, mi, 4);
		inline_case(&p, IBV_WR_RDMA_WRITE, 33, 5);
		inline_case(&p, IBV_WR_RDMA_WRITE, mi, 6);
		inline_case(&p, IBV_WR_RDMA_WRITE_WITH_IMM, 50, 7);
		{
			/* Above max_inline_data the post fails and names the WR. */
			uint8_t *buf = calloc(1, mi + 1);
			struct ibv_sge s = {(uintptr_t)buf, (uint32_t)(mi + 1), 0};
			struct ibv_send_wr w = {.wr_id = 9,
						.sg_list = &s,
						.num_sge = 1,
						.opcode = IBV_WR_SEND,
						.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED},
					   *bad = NULL;

			cr_assert_neq(ibv_post_send(p.qa, &w, &bad), 0,
				      "inline SEND of max_inline_data + 1 bytes was accepted");
			cr_assert_eq(bad, &w);
			free(buf);
		}
		poll_none(p.a.cq, "inline");
		pair_close(&p);
	}
}

Test(dp_ops, inline_ud_send)
{
	struct pair p;
	size_t mi;

	pair_open(&p, IBV_QPT_UD, IBV_MTU_1024, 16, false);
	mi = p.capa.max_inline_data;
	if (mi > p.mtu)
		mi = p.mtu;
	inline_case(&p, IBV_WR_SEND, 2, 11);
	inline_case(&p, IBV_WR_SEND_WITH_IMM, mi, 12);
	pair_close(&p);
}

/* ---------------------------------------------------------------------------------------- */
/* unsignaled                                                                               */

/* sq_sig_all = 0: only IBV_SEND_SIGNALED WRs produce CQEs; the CQE of a signaled WR retires the
 * unsignaled ones before it, freeing their send queue slots (ibv_post_send(3), "the user must
 * signal at least one WR per queue depth"). */
Test(dp_ops, unsignaled_wrs_complete_silently_and_free_slots)
{
	struct pair p;
	struct ibv_mr *lm, *rm;
	struct ibv_wc wc[4];
	uint32_t depth;
	int round;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024, 8, false);
	depth = p.capa.max_send_wr;
	cr_assert_leq(depth, 32u);
	lm = tb_mr(&p.a, 64 * 64);
	rm = tb_mr(&p.b, 64 * 64);
	for (round = 0; round < 3; round++) {
		struct ibv_sge s[64], rs[64];
		struct ibv_send_wr w = {0}, *bad;
		struct ibv_recv_wr rw = {0}, *rbad;

		memset(rm->addr, GUARD, 64 * 64);
		/* receives first; the receive queue is as deep as the send queue */
		for (uint32_t i = 0; i < depth; i++) {
			rs[i] = (struct ibv_sge){(uintptr_t)rm->addr + i * 64, 64, rm->lkey};
			rw =
			    (struct ibv_recv_wr){.wr_id = 700 + i, .sg_list = &rs[i], .num_sge = 1};
			cr_assert_eq(ibv_post_recv(p.qb, &rw, &rbad), 0, "round %d recv %u: %s",
				     round, i, hcasim_last_error());
		}
		/* depth - 1 unsignaled SENDs, then one signaled: the queue is full */
		for (uint32_t i = 0; i < depth; i++) {
			pat_fill((uint8_t *)lm->addr + i * 64, 40, 200 + i + (unsigned)round);
			s[i] = (struct ibv_sge){(uintptr_t)lm->addr + i * 64, 40, lm->lkey};
			w = (struct ibv_send_wr){.wr_id = 300 + i,
						 .sg_list = &s[i],
						 .num_sge = 1,
						 .opcode = IBV_WR_SEND,
						 .send_flags =
						     i + 1 == depth ? IBV_SEND_SIGNALED : 0};
			cr_assert_eq(ibv_post_send(p.qa, &w, &bad), 0,
				     "round %d: post %u of %u failed: %s (the previous round's "
				     "signaled CQE should have freed the queue)",
				     round, i, depth, hcasim_last_error());
		}
		/* full: one more is refused (ENOMEM) until the signaled CQE is polled */
		w.wr_id = 999;
		w.send_flags = IBV_SEND_SIGNALED;
		cr_assert_neq(ibv_post_send(p.qa, &w, &bad), 0,
			      "round %d: a post beyond max_send_wr %u was accepted", round, depth);
		tb_poll(p.b.cq, wc, 1); /* receives: just check they all arrive */
		for (uint32_t i = 1; i < depth; i++)
			tb_poll(p.b.cq, wc, 1);
		tb_poll(p.a.cq, wc, 1);
		check_send_wc(&wc[0], "unsignaled run + signaled", 300 + depth - 1, IBV_WC_SEND,
			      p.qa->qp_num, false, 0);
		poll_none(p.a.cq, "unsignaled WRs");
		for (uint32_t i = 0; i < depth; i++)
			cr_assert(
			    !memcmp((uint8_t *)rm->addr + i * 64, (uint8_t *)lm->addr + i * 64, 40),
			    "round %d: receive %u data", round, i);
	}
	free_mr(lm);
	free_mr(rm);
	pair_close(&p);
}

/* sq_sig_all = 1: every WR completes, whatever its flags. */
Test(dp_ops, sq_sig_all_signals_every_wr)
{
	struct tb_dev a, b;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *rm;
	struct ibv_wc wc[4];

	tb_open(&a, 0);
	tb_open(&b, 1);
	qa = mk_qp(&a, IBV_QPT_RC, NULL, NULL, NULL, 8, 1, NULL);
	qb = mk_qp(&b, IBV_QPT_RC, NULL, NULL, NULL, 8, 0, NULL);
	tb_connect(&a, qa, &b, qb->qp_num, IBV_MTU_1024);
	tb_connect(&b, qb, &a, qa->qp_num, IBV_MTU_1024);
	rm = tb_mr(&b, 64);
	for (int i = 0; i < 3; i++) {
		struct ibv_send_wr w = {.wr_id = 40 + (uint64_t)i, .opcode = IBV_WR_RDMA_WRITE},
				   *bad;

		w.wr.rdma.remote_addr = (uintptr_t)rm->addr;
		w.wr.rdma.rkey = rm->rkey;
		cr_assert_eq(ibv_post_send(qa, &w, &bad), 0, "%s", hcasim_last_error());
	}
	tb_poll(a.cq, wc, 3);
	for (int i = 0; i < 3; i++)
		check_send_wc(&wc[i], "sq_sig_all", 40 + (uint64_t)i, IBV_WC_RDMA_WRITE, qa->qp_num,
			      false, 0);
	free_mr(rm);
	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	tb_close(&a);
	tb_close(&b);
}

/* ---------------------------------------------------------------------------------------- */
/* fence and max_rd_atomic                                                                  */

/* IBV_SEND_FENCE (ibv_post_send(3), IBA 10.8.3.3): the WR waits for the READs and atomics
 * before it, so a SEND of the buffer a READ (or atomic) fills must carry the READ's data (the
 * fetched value). */
static void fence_case(enum ibv_wr_opcode first, size_t len)
{
	struct pair p;
	struct ibv_mr *rm, *lm, *rcv;
	struct ibv_sge rs, s0, s1;
	struct ibv_send_wr w[2], *bad;
	struct ibv_wc wc[2];
	uint8_t *msg = malloc(len);
	bool atomic = first == IBV_WR_ATOMIC_FETCH_AND_ADD;
	char what[80];
	long d;

	snprintf(what, sizeof(what), "%s of %zu bytes, then a fenced SEND of its buffer",
		 op_name(first), len);
	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024, 16, false);
	rm = tb_mr(&p.b, len);
	rcv = tb_mr(&p.b, len + 64);
	lm = tb_mr(&p.a, len);
	memset(rcv->addr, GUARD, len + 64);
	if (atomic) {
		cr_assert_eq(len, 8u);
		wr64(msg, 0, 0x0123456789abcdefull);
	} else {
		pat_fill(msg, len, 31);
	}
	memcpy(rm->addr, msg, len);
	rs = (struct ibv_sge){(uintptr_t)rcv->addr, (uint32_t)(len + 64), rcv->lkey};
	post_recv_sges(p.qb, &rs, 1, 1);
	s0 = (struct ibv_sge){(uintptr_t)lm->addr, (uint32_t)len, lm->lkey};
	s1 = s0;
	memset(w, 0, sizeof(w));
	w[0] = (struct ibv_send_wr){.wr_id = 10,
				    .sg_list = &s0,
				    .num_sge = 1,
				    .opcode = first,
				    .send_flags = IBV_SEND_SIGNALED,
				    .next = &w[1]};
	if (atomic) {
		w[0].wr.atomic.remote_addr = (uintptr_t)rm->addr;
		w[0].wr.atomic.rkey = rm->rkey;
		w[0].wr.atomic.compare_add = 5;
	} else {
		w[0].wr.rdma.remote_addr = (uintptr_t)rm->addr;
		w[0].wr.rdma.rkey = rm->rkey;
	}
	w[1] = (struct ibv_send_wr){.wr_id = 11,
				    .sg_list = &s1,
				    .num_sge = 1,
				    .opcode = IBV_WR_SEND,
				    .send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE};
	cr_assert_eq(ibv_post_send(p.qa, w, &bad), 0, "%s", hcasim_last_error());
	tb_poll(p.b.cq, wc, 1);
	cr_assert_eq(wc[0].status, IBV_WC_SUCCESS, "%s: %s", what, ibv_wc_status_str(wc[0].status));
	cr_assert_eq(wc[0].wr_id, 1);
	cr_assert_eq(wc[0].byte_len, len);
	d = first_diff(rcv->addr, msg, len);
	cr_assert(d < 0,
		  "%s: the SEND carried 0x%02x at byte %ld, not the %s result 0x%02x "
		  "(the requester's memory when the SEND was gathered: 0x%02x)",
		  what, d < 0 ? 0 : ((uint8_t *)rcv->addr)[d], d, op_name(first),
		  d < 0 ? 0 : msg[d], d < 0 ? 0 : ((uint8_t *)lm->addr)[d]);
	tb_poll(p.a.cq, wc, 2);
	check_send_wc(&wc[0], what, 10, atomic ? IBV_WC_FETCH_ADD : IBV_WC_RDMA_READ, p.qa->qp_num,
		      true, (uint32_t)len);
	check_send_wc(&wc[1], what, 11, IBV_WC_SEND, p.qa->qp_num, false, 0);
	cr_assert(!memcmp(lm->addr, msg, len), "%s: local result wrong", what);
	if (atomic)
		cr_assert_eq(rd64(rm->addr, 0), 0x0123456789abcdefull + 5);
	free(msg);
	free_mr(rm);
	free_mr(lm);
	free_mr(rcv);
	pair_close(&p);
}

Test(dp_ops, fence_after_64k_read)
{
	fence_case(IBV_WR_RDMA_READ, 64 * 1024);
}

Test(dp_ops, fence_after_single_packet_read)
{
	fence_case(IBV_WR_RDMA_READ, 200);
}

Test(dp_ops, fence_after_atomic)
{
	fence_case(IBV_WR_ATOMIC_FETCH_AND_ADD, 8);
}

/* More READs (and atomics) than max_rd_atomic in one post: the requester keeps at most
 * max_rd_atomic outstanding (IBA 9.4.4 / ibv_modify_qp(3)) and all complete, in order, with
 * the right data. */
static void many_reads(uint8_t rd_atomic, int n)
{
	struct tb_dev a, b;
	struct ibv_qp *qa, *qb;
	struct ibv_qp_attr at;
	struct ibv_qp_init_attr it;
	const size_t L = 3000, SLOT = 4096;
	struct ibv_mr *rm, *lm, *cnt;
	struct ibv_sge *s = calloc((size_t)n, sizeof(*s));
	struct ibv_send_wr *w = calloc((size_t)n, sizeof(*w)), *bad;
	struct ibv_wc *wc = calloc((size_t)n, sizeof(*wc));
	int r = 0, k = 0;

	tb_open(&a, 0);
	tb_open(&b, 1);
	/* a 64-entry CQ holds them all */
	cr_assert_leq(n, 60);
	qa = mk_qp(&a, IBV_QPT_RC, NULL, NULL, NULL, 64, 0, NULL);
	qb = mk_qp(&b, IBV_QPT_RC, NULL, NULL, NULL, 64, 0, NULL);
	connect_qp(&a, qa, &b, qb->qp_num, IBV_MTU_1024, rd_atomic, false);
	connect_qp(&b, qb, &a, qa->qp_num, IBV_MTU_1024, rd_atomic, false);
	cr_assert_eq(ibv_query_qp(qa, &at, IBV_QP_MAX_QP_RD_ATOMIC, &it), 0);
	cr_assert_eq(at.max_rd_atomic, rd_atomic);
	rm = tb_mr(&b, (size_t)n * SLOT);
	lm = tb_mr(&a, (size_t)n * SLOT);
	cnt = tb_mr(&b, 8);
	for (int i = 0; i < n; i++)
		pat_fill((uint8_t *)rm->addr + (size_t)i * SLOT, SLOT, 60 + (unsigned)i);
	memset(lm->addr, GUARD, (size_t)n * SLOT);
	for (int i = 0; i < n; i++) {
		bool at_op = i % 5 == 4;

		w[i].wr_id = 2000 + (uint64_t)i;
		w[i].sg_list = &s[i];
		w[i].num_sge = 1;
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].next = i + 1 < n ? &w[i + 1] : NULL;
		if (at_op) {
			s[i] =
			    (struct ibv_sge){(uintptr_t)lm->addr + (size_t)i * SLOT, 8, lm->lkey};
			w[i].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			w[i].wr.atomic.remote_addr = (uintptr_t)cnt->addr;
			w[i].wr.atomic.rkey = cnt->rkey;
			w[i].wr.atomic.compare_add = 1;
			k++;
		} else {
			s[i] = (struct ibv_sge){(uintptr_t)lm->addr + (size_t)i * SLOT, (uint32_t)L,
						lm->lkey};
			w[i].opcode = IBV_WR_RDMA_READ;
			w[i].wr.rdma.remote_addr = (uintptr_t)rm->addr + (size_t)r * SLOT + 7;
			w[i].wr.rdma.rkey = rm->rkey;
			r++;
		}
	}
	cr_assert_gt(r, rd_atomic, "more READs than max_rd_atomic");
	cr_assert_eq(ibv_post_send(qa, w, &bad), 0, "%s", hcasim_last_error());
	tb_poll(a.cq, wc, n);
	r = 0;
	k = 0;
	for (int i = 0; i < n; i++) {
		const uint8_t *got = (const uint8_t *)lm->addr + (size_t)i * SLOT;
		char what[64];

		snprintf(what, sizeof(what), "max_rd_atomic %u: WR %d", rd_atomic, i);
		if (i % 5 == 4) {
			check_send_wc(&wc[i], what, 2000 + (uint64_t)i, IBV_WC_FETCH_ADD,
				      qa->qp_num, true, 8);
			cr_assert_eq(rd64(got, 0), (uint64_t)k, "%s: fetched %llu, expected %d",
				     what, (unsigned long long)rd64(got, 0), k);
			k++;
		} else {
			check_send_wc(&wc[i], what, 2000 + (uint64_t)i, IBV_WC_RDMA_READ,
				      qa->qp_num, true, (uint32_t)L);
			cr_assert(first_diff(got, (const uint8_t *)rm->addr + (size_t)r * SLOT + 7,
					     L) < 0,
				  "%s: READ data wrong", what);
			cr_assert(not_guard(got + L, SLOT - L) < 0, "%s: READ wrote past", what);
			r++;
		}
	}
	cr_assert_eq(rd64(cnt->addr, 0), (uint64_t)k, "counter %llu after %d FETCH_ADDs",
		     (unsigned long long)rd64(cnt->addr, 0), k);
	free_mr(rm);
	free_mr(lm);
	free_mr(cnt);
	free(s);
	free(w);
	free(wc);
	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	tb_close(&a);
	tb_close(&b);
}

Test(dp_ops, max_rd_atomic_1_many_reads_and_atomics_complete)
{
	many_reads(1, 15);
}

Test(dp_ops, max_rd_atomic_device_max_twice_over)
{
	struct tb_dev t;
	int m;

	tb_open(&t, 0);
	m = t.attr.max_qp_rd_atom;
	tb_close(&t);
	cr_assert_gt(m, 0);
	if (m > 20)
		m = 20;
	many_reads((uint8_t)m, 2 * m + m / 2 + 3);
}

/* ---------------------------------------------------------------------------------------- */
/* async event helpers                                                                      */

static bool port_event(enum ibv_event_type t)
{
	return t == IBV_EVENT_PORT_ACTIVE || t == IBV_EVENT_PORT_ERR || t == IBV_EVENT_LID_CHANGE ||
	       t == IBV_EVENT_PKEY_CHANGE || t == IBV_EVENT_SM_CHANGE ||
	       t == IBV_EVENT_CLIENT_REREGISTER || t == IBV_EVENT_GID_CHANGE;
}

static void set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	cr_assert_geq(fl, 0);
	cr_assert_eq(fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK), 0);
}

/* The next affiliated async event (blocking: the simulation runs until one arrives); port
 * events are skipped. */
static void get_async(struct ibv_context *ctx, struct ibv_async_event *ev, const char *what)
{
	set_nonblock(ctx->async_fd, false);
	for (;;) {
		int rc;

		errno = 0;
		rc = ibv_get_async_event(ctx, ev);
		cr_assert_eq(rc, 0, "%s: ibv_get_async_event: no event (errno %d: %s)", what, errno,
			     hcasim_last_error());
		if (!port_event(ev->event_type))
			return;
		ibv_ack_async_event(ev);
	}
}

/* No affiliated async event within another 20 us. */
static void expect_no_async(struct ibv_context *ctx, const char *what)
{
	struct ibv_async_event ev;

	hcasim_run_for_ps(20 * US);
	set_nonblock(ctx->async_fd, true);
	for (;;) {
		int rc;

		errno = 0;
		rc = ibv_get_async_event(ctx, &ev);
		if (rc == 0) {
			enum ibv_event_type t = ev.event_type;

			ibv_ack_async_event(&ev);
			if (port_event(t))
				continue;
			cr_assert_fail("%s: unexpected async event %s", what,
				       ibv_event_type_str(t));
		}
		cr_assert_eq(errno, EAGAIN, "%s: non-blocking ibv_get_async_event errno %d", what,
			     errno);
		break;
	}
	set_nonblock(ctx->async_fd, false);
}

/* ---------------------------------------------------------------------------------------- */
/* SRQ                                                                                      */

struct srq_rig {
	struct tb_dev a, b;
	struct ibv_srq *srq;
	struct ibv_qp *qa[2], *qb[2];
	struct ibv_mr *lm, *rm;
};

static void srq_rig_open(struct srq_rig *g, uint32_t max_wr)
{
	struct ibv_srq_init_attr si = {.attr = {.max_wr = max_wr, .max_sge = 4}};
	static const enum ibv_qp_type types[2] = {IBV_QPT_RC, IBV_QPT_UC};

	memset(g, 0, sizeof(*g));
	tb_open(&g->a, 0);
	tb_open(&g->b, 1);
	g->srq = ibv_create_srq(g->b.pd, &si);
	cr_assert_not_null(g->srq, "ibv_create_srq: %s", hcasim_last_error());
	cr_assert_geq(si.attr.max_wr, max_wr);
	cr_assert_geq(si.attr.max_sge, 4u);
	/* an RC and a UC QP share the SRQ */
	for (int i = 0; i < 2; i++) {
		g->qa[i] = mk_qp(&g->a, types[i], NULL, NULL, NULL, 16, 0, NULL);
		g->qb[i] = mk_qp(&g->b, types[i], NULL, NULL, g->srq, 16, 0, NULL);
		tb_connect(&g->a, g->qa[i], &g->b, g->qb[i]->qp_num, IBV_MTU_1024);
		tb_connect(&g->b, g->qb[i], &g->a, g->qa[i]->qp_num, IBV_MTU_1024);
	}
	g->lm = tb_mr(&g->a, 64 * 4096);
	g->rm = tb_mr(&g->b, 64 * 4096);
	memset(g->rm->addr, GUARD, 64 * 4096);
}

static void srq_rig_close(struct srq_rig *g)
{
	free_mr(g->lm);
	free_mr(g->rm);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(ibv_destroy_qp(g->qa[i]), 0, "%s", hcasim_last_error());
		cr_assert_eq(ibv_destroy_qp(g->qb[i]), 0, "%s", hcasim_last_error());
	}
	cr_assert_eq(ibv_destroy_srq(g->srq), 0, "%s", hcasim_last_error());
	tb_close(&g->a);
	tb_close(&g->b);
}

/* Post n SRQ WRs from index first: slot i is 4096 bytes of rm split over 3 SGEs. */
static void srq_post(struct srq_rig *g, int first, int n)
{
	for (int i = first; i < first + n; i++) {
		uintptr_t base = (uintptr_t)g->rm->addr + (size_t)i * 4096;
		struct ibv_sge s[3] = {{base, 1000, g->rm->lkey},
				       {base + 1000, 7, g->rm->lkey},
				       {base + 1007, 3089, g->rm->lkey}};
		struct ibv_recv_wr w = {.wr_id = 900 + (uint64_t)i, .sg_list = s, .num_sge = 3},
				   *bad;

		cr_assert_eq(ibv_post_srq_recv(g->srq, &w, &bad), 0, "ibv_post_srq_recv: %s",
			     hcasim_last_error());
	}
}

/* Message m from QP pair q (len bytes), expected into SRQ slot `slot`; both completions
 * checked. */
static void srq_msg(struct srq_rig *g, int q, int m, size_t len, int slot)
{
	struct ibv_sge s[2];
	struct ibv_send_wr w = {0};
	struct ibv_wc wc;
	char what[80];
	uint8_t *src = (uint8_t *)g->lm->addr + (size_t)m * 4096;
	const uint8_t *dst = (const uint8_t *)g->rm->addr + (size_t)slot * 4096;
	struct recv_exp e = {.wr_id = 900 + (uint64_t)slot,
			     .opcode = IBV_WC_RECV,
			     .byte_len = (uint32_t)len,
			     .qp_num = g->qb[q]->qp_num,
			     .src_qp = g->qa[q]->qp_num,
			     .slid = g->a.port.lid};

	snprintf(what, sizeof(what), "SRQ message %d via %s QP", m, q ? "UC" : "RC");
	pat_fill(src, len, 80 + (unsigned)m);
	s[0] = (struct ibv_sge){(uintptr_t)src, (uint32_t)(len / 3), g->lm->lkey};
	s[1] = (struct ibv_sge){(uintptr_t)src + len / 3, (uint32_t)(len - len / 3), g->lm->lkey};
	w.wr_id = 50 + (uint64_t)m;
	w.sg_list = s;
	w.num_sge = 2;
	w.opcode = IBV_WR_SEND;
	w.send_flags = IBV_SEND_SIGNALED;
	post_send_wr(g->qa[q], &w);
	tb_poll(g->b.cq, &wc, 1);
	check_recv_wc(&wc, what, &e);
	cr_assert(first_diff(dst, src, len) < 0, "%s: data in SRQ slot %d differs", what, slot);
	cr_assert(not_guard(dst + len, 4096 - len) < 0, "%s: written past", what);
	tb_poll(g->a.cq, &wc, 1);
	check_send_wc(&wc, what, 50 + (uint64_t)m, IBV_WC_SEND, g->qa[q]->qp_num, false, 0);
}

Test(dp_ops, srq_shared_by_rc_and_uc_qps)
{
	struct srq_rig g;

	srq_rig_open(&g, 32);
	srq_post(&g, 0, 8);
	/* SRQ WQEs are consumed in order, whichever QP the message arrives on */
	for (int m = 0; m < 6; m++)
		srq_msg(&g, m % 2, m, 100 + (size_t)m * 700, m);
	/* posting to a QP's own receive queue is refused when it has an SRQ */
	{
		struct ibv_sge s = {(uintptr_t)g.rm->addr, 8, g.rm->lkey};
		struct ibv_recv_wr w = {.wr_id = 1, .sg_list = &s, .num_sge = 1}, *bad = NULL;

		cr_assert_neq(ibv_post_recv(g.qb[0], &w, &bad), 0,
			      "ibv_post_recv on a QP with an SRQ succeeded");
	}
	srq_rig_close(&g);
}

/* A UD QP on an SRQ: the GRH slot comes first in the SRQ WQE's scatter list. */
Test(dp_ops, srq_with_a_ud_qp)
{
	struct srq_rig g;
	struct ibv_qp *ua, *ub;
	struct ibv_ah *ah;
	struct ibv_sge s;
	struct ibv_send_wr w = {0};
	struct ibv_wc wc;
	const size_t len = 1500;
	const uint8_t *dst;
	struct recv_exp e;

	srq_rig_open(&g, 16);
	ua = mk_qp(&g.a, IBV_QPT_UD, NULL, NULL, NULL, 8, 0, NULL);
	ub = mk_qp(&g.b, IBV_QPT_UD, NULL, NULL, g.srq, 8, 0, NULL);
	tb_connect(&g.a, ua, &g.b, ub->qp_num, IBV_MTU_1024);
	tb_connect(&g.b, ub, &g.a, ua->qp_num, IBV_MTU_1024);
	ah = mk_ah(&g.a, &g.b, false, 0);
	srq_post(&g, 0, 2);
	pat_fill(g.lm->addr, len, 91);
	s = (struct ibv_sge){(uintptr_t)g.lm->addr, (uint32_t)len, g.lm->lkey};
	w.wr_id = 77;
	w.sg_list = &s;
	w.num_sge = 1;
	w.opcode = IBV_WR_SEND_WITH_IMM;
	w.imm_data = htobe32(0x00c0ffee);
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.ud.ah = ah;
	w.wr.ud.remote_qpn = ub->qp_num;
	w.wr.ud.remote_qkey = TB_QKEY;
	post_send_wr(ua, &w);
	e = (struct recv_exp){.wr_id = 900,
			      .opcode = IBV_WC_RECV,
			      .byte_len = (uint32_t)(40 + len),
			      .qp_num = ub->qp_num,
			      .src_qp = ua->qp_num,
			      .slid = g.a.port.lid,
			      .wc_flags = IBV_WC_WITH_IMM,
			      .imm = htobe32(0x00c0ffee),
			      .ud = true};
	tb_poll(g.b.cq, &wc, 1);
	check_recv_wc(&wc, "UD SEND_WITH_IMM into an SRQ", &e);
	dst = g.rm->addr;
	cr_assert(first_diff(dst + 40, g.lm->addr, len) < 0, "UD into SRQ: data at offset 40");
	cr_assert(not_guard(dst + 40 + len, 4096 - 40 - len) < 0, "UD into SRQ: written past");
	tb_poll(g.a.cq, &wc, 1);
	check_send_wc(&wc, "UD SEND into an SRQ", 77, IBV_WC_SEND, ua->qp_num, false, 0);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
	cr_assert_eq(ibv_destroy_qp(ua), 0);
	cr_assert_eq(ibv_destroy_qp(ub), 0);
	srq_rig_close(&g);
}

/* ibv_modify_srq(3): with IBV_SRQ_LIMIT the SRQ is armed; when the number of WRs in it drops
 * below the limit, IBV_EVENT_SRQ_LIMIT_REACHED (element.srq) is raised once and the limit
 * disarms (query shows 0). */
Test(dp_ops, srq_limit_event_fires_once_below_the_limit_and_disarms)
{
	struct srq_rig g;
	struct ibv_srq_attr sa = {.srq_limit = 5};
	struct ibv_async_event ev;
	int m = 0;

	srq_rig_open(&g, 16);
	srq_post(&g, 0, 10);
	cr_assert_eq(ibv_modify_srq(g.srq, &sa, IBV_SRQ_LIMIT), 0, "ibv_modify_srq: %s",
		     hcasim_last_error());
	memset(&sa, 0, sizeof(sa));
	cr_assert_eq(ibv_query_srq(g.srq, &sa), 0);
	cr_assert_eq(sa.srq_limit, 5u, "armed limit reads %u", sa.srq_limit);
	/* 10 -> 5 WRs: not below the limit yet */
	for (; m < 5; m++)
		srq_msg(&g, m % 2, m, 64, m);
	expect_no_async(g.b.ctx, "SRQ at exactly the limit (5 of 5 WRs left)");
	cr_assert_eq(ibv_query_srq(g.srq, &sa), 0);
	cr_assert_eq(sa.srq_limit, 5u, "limit disarmed early: %u", sa.srq_limit);
	/* 5 -> 4: below */
	srq_msg(&g, m % 2, m, 64, m);
	m++;
	get_async(g.b.ctx, &ev, "SRQ below the limit");
	cr_assert_eq(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED, "event %s",
		     ibv_event_type_str(ev.event_type));
	cr_assert_eq(ev.element.srq, g.srq);
	ibv_ack_async_event(&ev);
	cr_assert_eq(ibv_query_srq(g.srq, &sa), 0);
	cr_assert_eq(sa.srq_limit, 0u, "the limit did not disarm: %u", sa.srq_limit);
	/* disarmed: further consumption raises nothing */
	srq_msg(&g, m % 2, m, 64, m);
	m++;
	expect_no_async(g.b.ctx, "SRQ limit disarmed");
	srq_rig_close(&g);
}

/* ---------------------------------------------------------------------------------------- */
/* completion events                                                                        */

static void send_simple(struct ibv_qp *qp, struct ibv_mr *lm, uint64_t wr_id, unsigned flags)
{
	struct ibv_sge s = {(uintptr_t)lm->addr, 16, lm->lkey};
	struct ibv_send_wr w = {.wr_id = wr_id,
				.sg_list = &s,
				.num_sge = 1,
				.opcode = IBV_WR_SEND,
				.send_flags = flags};

	post_send_wr(qp, &w);
}

static void expect_no_cq_event(struct ibv_comp_channel *ch, const char *what)
{
	struct ibv_cq *cq = NULL;
	void *ctx = NULL;
	int rc;

	hcasim_run_for_ps(20 * US);
	set_nonblock(ch->fd, true);
	errno = 0;
	rc = ibv_get_cq_event(ch, &cq, &ctx);
	cr_assert_eq(rc, -1, "%s: unexpected completion event", what);
	cr_assert_eq(errno, EAGAIN, "%s: non-blocking ibv_get_cq_event errno %d", what, errno);
	set_nonblock(ch->fd, false);
}

/* b's QP reports to a CQ with a completion channel; 8 receives posted. */
struct chan_rig {
	struct tb_dev a, b;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *lm, *rm;
	int marker;
	unsigned events;
};

static void chan_open(struct chan_rig *g)
{
	memset(g, 0, sizeof(*g));
	tb_open(&g->a, 0);
	tb_open(&g->b, 1);
	g->ch = ibv_create_comp_channel(g->b.ctx);
	cr_assert_not_null(g->ch, "%s", hcasim_last_error());
	g->cq = ibv_create_cq(g->b.ctx, 16, &g->marker, g->ch, 0);
	cr_assert_not_null(g->cq, "%s", hcasim_last_error());
	g->qa = mk_qp(&g->a, IBV_QPT_RC, NULL, NULL, NULL, 16, 0, NULL);
	g->qb = mk_qp(&g->b, IBV_QPT_RC, g->cq, g->cq, NULL, 16, 0, NULL);
	tb_connect(&g->a, g->qa, &g->b, g->qb->qp_num, IBV_MTU_1024);
	tb_connect(&g->b, g->qb, &g->a, g->qa->qp_num, IBV_MTU_1024);
	g->lm = tb_mr(&g->a, 64);
	g->rm = tb_mr(&g->b, 16 * 64);
	for (int i = 0; i < 8; i++) {
		struct ibv_sge s = {(uintptr_t)g->rm->addr + (size_t)i * 64, 64, g->rm->lkey};

		post_recv_sges(g->qb, &s, 1, 600 + (uint64_t)i);
	}
}

static void chan_close(struct chan_rig *g)
{
	ibv_ack_cq_events(g->cq, g->events);
	free_mr(g->lm);
	free_mr(g->rm);
	cr_assert_eq(ibv_destroy_qp(g->qa), 0);
	cr_assert_eq(ibv_destroy_qp(g->qb), 0);
	cr_assert_eq(ibv_destroy_cq(g->cq), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_comp_channel(g->ch), 0, "%s", hcasim_last_error());
	tb_close(&g->a);
	tb_close(&g->b);
}

/* A blocking ibv_get_cq_event that must return g->cq and its cq_context. */
static void chan_expect_event(struct chan_rig *g, const char *what)
{
	struct ibv_cq *evcq = NULL;
	void *evctx = NULL;
	int rc;

	set_nonblock(g->ch->fd, false);
	errno = 0;
	rc = ibv_get_cq_event(g->ch, &evcq, &evctx);
	cr_assert_eq(rc, 0, "%s: no completion event: ibv_get_cq_event errno %d (%s)", what, errno,
		     hcasim_last_error());
	cr_assert_eq(evcq, g->cq, "%s: event names another CQ", what);
	cr_assert_eq(evctx, &g->marker, "%s: cq_context not returned", what);
	g->events++;
}

/* ibv_req_notify_cq(cq, 0): the next completion raises an event on the channel. */
Test(dp_ops, comp_channel_event_after_req_notify_next)
{
	struct chan_rig g;
	struct ibv_wc wc;

	chan_open(&g);
	cr_assert_eq(ibv_req_notify_cq(g.cq, 0), 0);
	send_simple(g.qa, g.lm, 1, IBV_SEND_SIGNALED);
	chan_expect_event(&g, "armed (next), one SEND received");
	tb_poll(g.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 600);
	tb_poll(g.a.cq, &wc, 1);
	/* one-shot (ibv_req_notify_cq(3)): without re-arming, the next completion is silent */
	send_simple(g.qa, g.lm, 2, IBV_SEND_SIGNALED);
	tb_poll(g.a.cq, &wc, 1);
	expect_no_cq_event(g.ch, "after the event, not re-armed");
	tb_poll(g.cq, &wc, 1);
	cr_assert_eq(wc.wr_id, 601);
	/* re-armed: the next one raises an event again */
	cr_assert_eq(ibv_req_notify_cq(g.cq, 0), 0);
	send_simple(g.qa, g.lm, 3, IBV_SEND_SIGNALED);
	chan_expect_event(&g, "re-armed (next)");
	tb_poll(g.cq, &wc, 1);
	cr_assert_eq(wc.wr_id, 602);
	tb_poll(g.a.cq, &wc, 1);
	chan_close(&g);
}

Test(dp_ops, comp_channel_no_event_without_req_notify)
{
	struct chan_rig g;
	struct ibv_wc wc;

	chan_open(&g);
	send_simple(g.qa, g.lm, 1, IBV_SEND_SIGNALED);
	tb_poll(g.a.cq, &wc, 1);
	expect_no_cq_event(g.ch, "CQ never armed");
	tb_poll(g.cq, &wc, 1);
	cr_assert_eq(wc.wr_id, 600);
	chan_close(&g);
}

/* ibv_req_notify_cq(cq, 1): only a solicited (IBV_SEND_SOLICITED) completion raises it. */
Test(dp_ops, comp_channel_solicited_only)
{
	struct chan_rig g;
	struct ibv_wc wc[2];

	chan_open(&g);
	cr_assert_eq(ibv_req_notify_cq(g.cq, 1), 0);
	send_simple(g.qa, g.lm, 1, IBV_SEND_SIGNALED);
	tb_poll(g.a.cq, wc, 1);
	expect_no_cq_event(g.ch, "armed solicited-only, unsolicited SEND");
	send_simple(g.qa, g.lm, 2, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	chan_expect_event(&g, "armed solicited-only, solicited SEND");
	tb_poll(g.cq, wc, 2);
	cr_assert_eq(wc[0].wr_id, 600);
	cr_assert_eq(wc[1].wr_id, 601);
	tb_poll(g.a.cq, wc, 1);
	/* RDMA WRITE with immediate and the solicited bit: also an event (IBA 9.2.3, SE on
	 * the last packet of a SEND or WRITE with immediate) */
	cr_assert_eq(ibv_req_notify_cq(g.cq, 1), 0);
	{
		struct ibv_send_wr w = {.wr_id = 3,
					.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
					.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
					.imm_data = htobe32(0x5011c17e)};

		w.wr.rdma.remote_addr = (uintptr_t)g.rm->addr;
		w.wr.rdma.rkey = g.rm->rkey;
		post_send_wr(g.qa, &w);
	}
	chan_expect_event(&g, "armed solicited-only, solicited WRITE_WITH_IMM");
	tb_poll(g.cq, wc, 1);
	cr_assert_eq(wc[0].wr_id, 602);
	cr_assert_eq(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc[0].imm_data, htobe32(0x5011c17e));
	tb_poll(g.a.cq, wc, 1);
	/* an unsuccessful completion also raises it (IBA 11.4.2.2: the next solicited or
	 * unsuccessful completion): QP to ERR flushes the posted receives */
	cr_assert_eq(ibv_req_notify_cq(g.cq, 1), 0);
	{
		struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};

		cr_assert_eq(ibv_modify_qp(g.qb, &at, IBV_QP_STATE), 0, "%s", hcasim_last_error());
	}
	chan_expect_event(&g, "armed solicited-only, flushed (error) completions");
	tb_poll(g.cq, wc, 1);
	cr_assert_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR, "%s", ibv_wc_status_str(wc[0].status));
	cr_assert_eq(wc[0].wr_id, 603);
	chan_close(&g);
}

/* A blocking ibv_get_cq_event with nothing that can arrive reports EDEADLK instead of
 * hanging (the simulator's rule for a blocking wait on an idle system), armed or not. */
Test(dp_ops, comp_channel_blocking_get_with_nothing_pending_is_edeadlk)
{
	struct chan_rig g;
	struct ibv_cq *evcq = NULL;
	void *evctx = NULL;
	int rc;

	chan_open(&g);
	errno = 0;
	rc = ibv_get_cq_event(g.ch, &evcq, &evctx);
	cr_assert_eq(rc, -1, "blocking ibv_get_cq_event (idle, not armed) returned %d", rc);
	cr_assert_eq(errno, EDEADLK, "errno %d, expected EDEADLK", errno);
	cr_assert_eq(ibv_req_notify_cq(g.cq, 0), 0);
	errno = 0;
	rc = ibv_get_cq_event(g.ch, &evcq, &evctx);
	cr_assert_eq(rc, -1, "blocking ibv_get_cq_event (idle, armed) returned %d", rc);
	cr_assert_eq(errno, EDEADLK, "errno %d, expected EDEADLK", errno);
	chan_close(&g);
}

/* ---------------------------------------------------------------------------------------- */
/* CQ overrun                                                                               */

/* A CQ holds cq->cqe completions; one more without polling is an overrun: IBV_EVENT_CQ_ERR
 * (element.cq) and the QPs using the CQ go to ERR (ib-facts "Responder": CQ overflow). */
Test(dp_ops, cq_overrun_raises_cq_err_and_errors_the_qp)
{
	struct tb_dev a, b;
	struct ibv_cq *cq;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *lm, *rm;
	struct ibv_qp_attr at;
	struct ibv_qp_init_attr it;
	struct ibv_async_event ev;
	struct ibv_wc wc[64];
	int n;

	tb_open(&a, 0);
	tb_open(&b, 1);
	cq = ibv_create_cq(b.ctx, 4, NULL, NULL, 0);
	cr_assert_not_null(cq, "%s", hcasim_last_error());
	n = cq->cqe;
	cr_assert_geq(n, 4);
	cr_assert_leq(n, 30);
	qa = mk_qp(&a, IBV_QPT_RC, NULL, NULL, NULL, 32, 0, NULL);
	qb = mk_qp(&b, IBV_QPT_RC, cq, cq, NULL, 32, 0, NULL);
	tb_connect(&a, qa, &b, qb->qp_num, IBV_MTU_1024);
	tb_connect(&b, qb, &a, qa->qp_num, IBV_MTU_1024);
	lm = tb_mr(&a, 64);
	rm = tb_mr(&b, 32 * 64);
	for (int i = 0; i < n + 2; i++) {
		struct ibv_sge s = {(uintptr_t)rm->addr + (size_t)i * 64, 64, rm->lkey};

		post_recv_sges(qb, &s, 1, 800 + (uint64_t)i);
	}
	/* exactly cq->cqe completions fit */
	for (int i = 0; i < n; i++)
		send_simple(qa, lm, 10 + (uint64_t)i, IBV_SEND_SIGNALED);
	tb_poll(a.cq, wc, n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(wc[i].status, IBV_WC_SUCCESS, "send %d: %s", i,
			     ibv_wc_status_str(wc[i].status));
	expect_no_async(b.ctx, "CQ exactly full (cq->cqe completions)");
	cr_assert_eq(ibv_query_qp(qb, &at, IBV_QP_STATE, &it), 0);
	cr_assert_eq(at.qp_state, IBV_QPS_RTS, "QP state %d with a full (not overrun) CQ",
		     at.qp_state);
	/* one more: overrun */
	send_simple(qa, lm, 99, IBV_SEND_SIGNALED);
	get_async(b.ctx, &ev, "CQ overrun");
	cr_assert_eq(ev.event_type, IBV_EVENT_CQ_ERR, "event %s",
		     ibv_event_type_str(ev.event_type));
	cr_assert_eq(ev.element.cq, cq);
	ibv_ack_async_event(&ev);
	cr_assert_eq(ibv_query_qp(qb, &at, IBV_QP_STATE, &it), 0);
	cr_assert_eq(at.qp_state, IBV_QPS_ERR, "QP using the overrun CQ: state %d, expected ERR",
		     at.qp_state);
	free_mr(lm);
	free_mr(rm);
	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0, "%s", hcasim_last_error());
	tb_close(&a);
	tb_close(&b);
}

/* ---------------------------------------------------------------------------------------- */
/* COMM_EST                                                                                 */

/* IBV_EVENT_COMM_EST (ib-facts: the first packet arrives while the QP is in RTR), element.qp;
 * a QP in RTR receives and acknowledges. Only the first packet raises it. */
static void comm_est(enum ibv_qp_type type)
{
	struct tb_dev a, b;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *lm, *rm;
	struct ibv_async_event ev;
	struct ibv_wc wc;

	tb_open(&a, 0);
	tb_open(&b, 1);
	qa = mk_qp(&a, type, NULL, NULL, NULL, 8, 0, NULL);
	qb = mk_qp(&b, type, NULL, NULL, NULL, 8, 0, NULL);
	connect_qp(&a, qa, &b, qb->qp_num, IBV_MTU_1024, 4, false);
	connect_qp(&b, qb, &a, qa->qp_num, IBV_MTU_1024, 4, true); /* RTR only */
	lm = tb_mr(&a, 64);
	rm = tb_mr(&b, 2 * 64);
	pat_fill(lm->addr, 16, 3);
	for (int i = 0; i < 2; i++) {
		struct ibv_sge s = {(uintptr_t)rm->addr + (size_t)i * 64, 64, rm->lkey};

		post_recv_sges(qb, &s, 1, 30 + (uint64_t)i);
	}
	expect_no_async(b.ctx, "RTR QP before any packet");
	send_simple(qa, lm, 1, IBV_SEND_SIGNALED);
	get_async(b.ctx, &ev, "first packet in RTR");
	cr_assert_eq(ev.event_type, IBV_EVENT_COMM_EST, "event %s",
		     ibv_event_type_str(ev.event_type));
	cr_assert_eq(ev.element.qp, qb);
	ibv_ack_async_event(&ev);
	tb_poll(b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 30);
	cr_assert(!memcmp(rm->addr, lm->addr, 16));
	tb_poll(a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	send_simple(qa, lm, 2, IBV_SEND_SIGNALED);
	tb_poll(b.cq, &wc, 1);
	cr_assert_eq(wc.wr_id, 31);
	tb_poll(a.cq, &wc, 1);
	expect_no_async(b.ctx, "second packet in RTR");
	free_mr(lm);
	free_mr(rm);
	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	tb_close(&a);
	tb_close(&b);
}

Test(dp_ops, comm_est_on_first_packet_in_rtr_rc)
{
	comm_est(IBV_QPT_RC);
}

Test(dp_ops, comm_est_on_first_packet_in_rtr_uc)
{
	comm_est(IBV_QPT_UC);
}

/* ---------------------------------------------------------------------------------------- */
/* RoCE                                                                                     */

Test(dp_ops, roce_rc_send_write_read)
{
	struct pair p;
	static const enum ibv_wr_opcode ops[] = {IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
						 IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ};

	tb_config("hca.link_layer", "roce");
	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024, 16, false);
	cr_assert_eq(p.a.port.link_layer, IBV_LINK_LAYER_ETHERNET);
	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		int ms = (int)p.capa.max_send_sge;

		xfer_case(&p, ops[i], 0, 0, 1);
		xfer_case(&p, ops[i], 1, 1, 2);
		xfer_case(&p, ops[i], p.mtu - 1, 3, 3);
		xfer_case(&p, ops[i], p.mtu + 1, ms, 4);
		xfer_case(&p, ops[i], MIB, 5, 5);
	}
	pair_close(&p);
}

Test(dp_ops, roce_ud_send_with_grh)
{
	struct pair p;

	tb_config("hca.link_layer", "roce");
	pair_open(&p, IBV_QPT_UD, IBV_MTU_1024, 16, true);
	cr_assert_eq(p.a.port.link_layer, IBV_LINK_LAYER_ETHERNET);
	p.chk_grh = false; /* payload, flags and wc fields here; the slot's contents below */
	xfer_case(&p, IBV_WR_SEND, 0, 0, 1);
	xfer_case(&p, IBV_WR_SEND, 1, 1, 2);
	xfer_case(&p, IBV_WR_SEND_WITH_IMM, p.mtu - 1, 3, 3);
	xfer_case(&p, IBV_WR_SEND, p.mtu, (int)p.capa.max_send_sge, 4);
	pair_close(&p);
}

/* ---------------------------------------------------------------------------------------- */
/* QP context cache pressure                                                                */

/* 16 RC pairs through a 4-entry QP context cache: every QP sends a SEND (and, posted before
 * anything is polled so that the arbiter interleaves them packet by packet, a 5000-byte SEND
 * and a 3000-byte WRITE), every message right; the cache missed more than once per QP and
 * wrote dirty contexts back. */
Test(dp_ops, sixteen_qps_through_a_four_entry_qpc_cache)
{
	enum { NQ = 16, L0 = 2000, L1 = 5000, LW = 3000, SL = 16384 };
	struct tb_dev a, b;
	struct ibv_qp *qa[NQ], *qb[NQ];
	struct ibv_mr *lm, *rm, *wm;
	struct ibv_wc wc[3 * NQ];
	struct hcasim_dev_counters c;
	int seen[NQ] = {0};

	tb_config("hca.qpc_cache_entries", "4");
	tb_open(&a, 0);
	tb_open(&b, 1);
	for (int i = 0; i < NQ; i++) {
		qa[i] = mk_qp(&a, IBV_QPT_RC, NULL, NULL, NULL, 4, 0, NULL);
		qb[i] = mk_qp(&b, IBV_QPT_RC, NULL, NULL, NULL, 4, 0, NULL);
	}
	for (int i = 0; i < NQ; i++) {
		tb_connect(&a, qa[i], &b, qb[i]->qp_num, IBV_MTU_1024);
		tb_connect(&b, qb[i], &a, qa[i]->qp_num, IBV_MTU_1024);
	}
	lm = tb_mr(&a, NQ * SL);
	rm = tb_mr(&b, NQ * SL);
	wm = tb_mr(&b, NQ * 4096);
	memset(rm->addr, GUARD, NQ * SL);
	memset(wm->addr, GUARD, NQ * 4096);
	for (int i = 0; i < NQ; i++) {
		uint8_t *src = (uint8_t *)lm->addr + (size_t)i * SL;

		pat_fill(src, L0, 150 + (unsigned)i);
		pat_fill(src + 4096, L1, 170 + (unsigned)i);
		pat_fill(src + 12288, LW, 190 + (unsigned)i);
		for (int m = 0; m < 2; m++) {
			struct ibv_sge rs = {(uintptr_t)rm->addr + (size_t)i * SL +
						 (size_t)m * 8192,
					     8192, rm->lkey};

			post_recv_sges(qb[i], &rs, 1, 400 + (uint64_t)(2 * i + m));
		}
	}
	/* first every QP's SEND (the brief's case), then the rest */
	for (int i = 0; i < NQ; i++) {
		struct ibv_sge s = {(uintptr_t)lm->addr + (size_t)i * SL, L0, lm->lkey};
		struct ibv_send_wr w = {.wr_id = 100 + (uint64_t)i,
					.sg_list = &s,
					.num_sge = 1,
					.opcode = IBV_WR_SEND,
					.send_flags = IBV_SEND_SIGNALED};

		post_send_wr(qa[i], &w);
	}
	for (int i = 0; i < NQ; i++) {
		struct ibv_sge s1 = {(uintptr_t)lm->addr + (size_t)i * SL + 4096, L1, lm->lkey};
		struct ibv_sge s2 = {(uintptr_t)lm->addr + (size_t)i * SL + 12288, LW, lm->lkey};
		struct ibv_send_wr w2 = {.wr_id = 300 + (uint64_t)i,
					 .sg_list = &s2,
					 .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED};
		struct ibv_send_wr w1 = {.wr_id = 200 + (uint64_t)i,
					 .sg_list = &s1,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED,
					 .next = &w2};

		w2.wr.rdma.remote_addr = (uintptr_t)wm->addr + (size_t)i * 4096;
		w2.wr.rdma.rkey = wm->rkey;
		post_send_wr(qa[i], &w1);
	}
	tb_poll(b.cq, wc, 2 * NQ);
	for (int k = 0; k < 2 * NQ; k++) {
		int r = (int)(wc[k].wr_id - 400), i = r / 2, m = r % 2;
		size_t len = m ? L1 : L0;
		const uint8_t *got = (const uint8_t *)rm->addr + (size_t)i * SL + (size_t)m * 8192;
		const uint8_t *exp = (const uint8_t *)lm->addr + (size_t)i * SL + (size_t)m * 4096;

		cr_assert(r >= 0 && r < 2 * NQ, "bad receive wr_id %llu",
			  (unsigned long long)wc[k].wr_id);
		cr_assert_eq(seen[i], m, "QP %d: receive %d completed out of order", i, m);
		seen[i]++;
		cr_assert_eq(wc[k].status, IBV_WC_SUCCESS, "QP %d message %d: %s", i, m,
			     ibv_wc_status_str(wc[k].status));
		cr_assert_eq(wc[k].qp_num, qb[i]->qp_num);
		cr_assert_eq(wc[k].src_qp, qa[i]->qp_num);
		cr_assert_eq(wc[k].byte_len, (uint32_t)len);
		cr_assert(first_diff(got, exp, len) < 0, "QP %d message %d: data differs", i, m);
		cr_assert(not_guard(got + len, 8192 - len) < 0, "QP %d message %d: written past", i,
			  m);
	}
	tb_poll(a.cq, wc, 3 * NQ);
	for (int k = 0; k < 3 * NQ; k++)
		cr_assert_eq(wc[k].status, IBV_WC_SUCCESS, "send %d (wr_id %llu): %s", k,
			     (unsigned long long)wc[k].wr_id, ibv_wc_status_str(wc[k].status));
	for (int i = 0; i < NQ; i++) {
		const uint8_t *got = (const uint8_t *)wm->addr + (size_t)i * 4096;

		cr_assert(first_diff(got, (const uint8_t *)lm->addr + (size_t)i * SL + 12288, LW) <
			      0,
			  "QP %d: WRITE data differs", i);
		cr_assert(not_guard(got + LW, 4096 - LW) < 0, "QP %d: WRITE past", i);
	}
	cr_assert_eq(hcasim_dev_counters(0, &c), 0, "%s", hcasim_last_error());
	cr_assert_gt(c.qpc_misses, 16u, "qpc_misses %llu", (unsigned long long)c.qpc_misses);
	cr_assert_gt(c.qpc_writebacks, 0u, "qpc_writebacks %llu",
		     (unsigned long long)c.qpc_writebacks);
	free_mr(lm);
	free_mr(rm);
	free_mr(wm);
	for (int i = 0; i < NQ; i++) {
		cr_assert_eq(ibv_destroy_qp(qa[i]), 0);
		cr_assert_eq(ibv_destroy_qp(qb[i]), 0);
	}
	tb_close(&a);
	tb_close(&b);
}

/* More than 2^16 WRs through one QP: the 16-bit WQE indexes of doorbells and CQEs wrap (for
 * the send and the receive queue) without losing, duplicating or reordering a completion; a
 * signaled WR every batch retires the unsignaled ones before it. */
Test(dp_ops, rc_wqe_indexes_wrap_past_65536)
{
	enum { B = 32, TOTAL = 66000 / B * B + B };
	struct pair p;
	struct ibv_mr *lm, *rm;
	struct ibv_sge s[B], rs[B];
	struct ibv_send_wr w[B], *bad;
	struct ibv_recv_wr rw[B], *rbad;
	struct ibv_wc wc[B];
	uint64_t seq = 0;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024, B, false);
	lm = tb_mr(&p.a, B * 8);
	rm = tb_mr(&p.b, B * 8);
	while (seq < TOTAL) {
		for (int i = 0; i < B; i++) {
			uint64_t v = seq + (uint64_t)i;

			wr64(lm->addr, (size_t)i * 8, v * 0x9e3779b97f4a7c15ull);
			wr64(rm->addr, (size_t)i * 8, 0);
			s[i] = (struct ibv_sge){(uintptr_t)lm->addr + (size_t)i * 8, 8, lm->lkey};
			rs[i] = (struct ibv_sge){(uintptr_t)rm->addr + (size_t)i * 8, 8, rm->lkey};
			w[i] =
			    (struct ibv_send_wr){.wr_id = v,
						 .sg_list = &s[i],
						 .num_sge = 1,
						 .opcode = IBV_WR_SEND,
						 .send_flags = i == B - 1 ? IBV_SEND_SIGNALED : 0,
						 .next = i + 1 < B ? &w[i + 1] : NULL};
			rw[i] = (struct ibv_recv_wr){.wr_id = v,
						     .sg_list = &rs[i],
						     .num_sge = 1,
						     .next = i + 1 < B ? &rw[i + 1] : NULL};
		}
		cr_assert_eq(ibv_post_recv(p.qb, rw, &rbad), 0, "seq %llu: %s",
			     (unsigned long long)seq, hcasim_last_error());
		cr_assert_eq(ibv_post_send(p.qa, w, &bad), 0, "seq %llu: %s",
			     (unsigned long long)seq, hcasim_last_error());
		tb_poll(p.b.cq, wc, B);
		for (int i = 0; i < B; i++) {
			uint64_t v = seq + (uint64_t)i;

			cr_assert_eq(wc[i].status, IBV_WC_SUCCESS, "recv %llu: %s",
				     (unsigned long long)v, ibv_wc_status_str(wc[i].status));
			cr_assert_eq(wc[i].wr_id, v, "recv wr_id %llu, expected %llu",
				     (unsigned long long)wc[i].wr_id, (unsigned long long)v);
			cr_assert_eq(wc[i].byte_len, 8u);
			cr_assert_eq(rd64(rm->addr, (size_t)i * 8), v * 0x9e3779b97f4a7c15ull,
				     "recv %llu: data", (unsigned long long)v);
		}
		tb_poll(p.a.cq, wc, 1);
		cr_assert_eq(wc[0].status, IBV_WC_SUCCESS, "send %llu: %s",
			     (unsigned long long)(seq + B - 1), ibv_wc_status_str(wc[0].status));
		cr_assert_eq(wc[0].wr_id, seq + B - 1, "send wr_id %llu, expected %llu",
			     (unsigned long long)wc[0].wr_id, (unsigned long long)(seq + B - 1));
		seq += B;
	}
	poll_none(p.a.cq, "after the wrap");
	free_mr(lm);
	free_mr(rm);
	pair_close(&p);
}
/* The GRH slot of a RoCE UD receive names the sender, for a send from every GID the port
 * has. */
Test(dp_ops, roce_ud_grh_slot_names_the_sender)
{
	struct pair p;
	int tried = 0;

	tb_config("hca.link_layer", "roce");
	pair_open(&p, IBV_QPT_UD, IBV_MTU_1024, 16, true);
	for (int i = 0; i < p.a.port.gid_tbl_len && i < 16; i++) {
		union ibv_gid g, pg;

		if (ibv_query_gid(p.a.ctx, 1, i, &g) || gid_zero(&g) ||
		    ibv_query_gid(p.b.ctx, 1, i, &pg) || gid_zero(&pg))
			continue;
		cr_assert_eq(ibv_destroy_ah(p.ah), 0);
		p.gidx = (uint8_t)i;
		p.ah = mk_ah(&p.a, &p.b, true, (uint8_t)i);
		xfer_case(&p, IBV_WR_SEND, 100, 1, 5 + (unsigned)i);
		tried++;
	}
	cr_assert_gt(tried, 0, "the RoCE port has no GID");
	pair_close(&p);
}
