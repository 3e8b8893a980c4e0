/* qp_ex: extended QPs through the public verbs API (docs/qp-ex.md): ibv_create_qp_ex with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, ibv_qp_to_qp_ex, and every opcode the device has through
 * the ibv_wr_* builders and setters, between hcasim0 (the extended QP) and hcasim1 (a plain
 * QP), with remote memory compared byte for byte and both completions checked field by
 * field. Then batches (one doorbell), errors (nothing of a failed batch is posted), wr_abort,
 * and the send ops the device lacks.
 *
 * Rules: ibv_wr_post(3), ibv_create_qp_ex(3), rdma-core's mlx5 provider for what verbs.h
 * leaves open (EOPNOTSUPP for an unsupported send op; wr_complete returns the batch's error
 * and posts nothing). */
#include "testbench/tb.h"

#include <criterion/criterion.h>

#include "testbench/tb_expect.h"

#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ALL_OPS                                                                                    \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |    \
	 IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                                \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
#define UC_OPS                                                                                     \
	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |    \
	 IBV_QP_EX_WITH_SEND_WITH_IMM)
#define UD_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define BUF 8192

/* hcasim0's extended QP t.qa (x its ibv_qp_ex) and hcasim1's plain QP t.qb, connected; MRs
t.src on a (patterned) and t.dst on b (zeroed); for UD an AH from a to b. */
struct xp {
	struct tb_pair t;
	struct ibv_qp_ex *x;
	struct ibv_ah *ah;
};

static struct ibv_qp *create_ex(struct tb_dev *t, enum ibv_qp_type type, uint64_t ops,
				struct ibv_qp_init_attr_ex *qa)
{
	struct ibv_qp *qp;

	memset(qa, 0, sizeof(*qa));
	qa->qp_type = type;
	qa->send_cq = qa->recv_cq = t->cq;
	qa->cap = (struct ibv_qp_cap){ .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 4,
				       .max_recv_sge = 4, .max_inline_data = 64 };
	qa->comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa->pd = t->pd;
	qa->send_ops_flags = ops;
	qp = ibv_create_qp_ex(t->ctx, qa);
	cr_assert_not_null(qp, "ibv_create_qp_ex: %s", hcasim_last_error());
	return qp;
}

static void xp_open(struct xp *p, enum ibv_qp_type type, uint64_t ops)
{
	struct ibv_qp_init_attr_ex qa;
	struct ibv_qp_init_attr qb = { .qp_type = type,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 4, .max_recv_sge = 4 } };

	memset(p, 0, sizeof(*p));
	tb_open(&p->t.a, 0);
	tb_open(&p->t.b, 1);
	p->t.qa = create_ex(&p->t.a, type, ops, &qa);
	cr_assert_geq(qa.cap.max_send_sge, 4u, "caps handed back: max_send_sge %u",
		      qa.cap.max_send_sge);
	qb.send_cq = qb.recv_cq = p->t.b.cq;
	p->t.qb = ibv_create_qp(p->t.b.pd, &qb);
	cr_assert_not_null(p->t.qb, "%s", hcasim_last_error());
	tb_connect(&p->t.a, p->t.qa, &p->t.b, p->t.qb->qp_num, IBV_MTU_1024);
	tb_connect(&p->t.b, p->t.qb, &p->t.a, p->t.qa->qp_num, IBV_MTU_1024);
	p->x = ibv_qp_to_qp_ex(p->t.qa);
	cr_assert_not_null(p->x, "ibv_qp_to_qp_ex: %s", hcasim_last_error());
	cr_assert_eq((void *)&p->x->qp_base, (void *)p->t.qa, "qp_ex->qp_base is the QP");
	p->t.src = tb_mr(&p->t.a, BUF);
	p->t.dst = tb_mr(&p->t.b, BUF);
	for (size_t i = 0; i < BUF; i++)
		((uint8_t *)p->t.src->addr)[i] = (uint8_t)(i * 7 + 3);
	if (type == IBV_QPT_UD) {
		struct ibv_ah_attr at = { .dlid = p->t.b.port.lid, .port_num = 1 };

		p->ah = ibv_create_ah(p->t.a.pd, &at);
		cr_assert_not_null(p->ah, "%s", hcasim_last_error());
	}
}

static void xp_close(struct xp *p)
{
	if (p->ah)
		cr_assert_eq(ibv_destroy_ah(p->ah), 0);
	tb_pair_close(&p->t);
}

static uint8_t *la(struct xp *p, size_t off)
{
	return (uint8_t *)p->t.src->addr + off;
}

static uint8_t *lb(struct xp *p, size_t off)
{
	return (uint8_t *)p->t.dst->addr + off;
}

/* Every field of a completion ibv_poll_cq fills. */
struct want {
	uint64_t wr_id;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len, qp_num, src_qp;
	unsigned wc_flags;
	uint32_t imm; /* host order; checked with IBV_WC_WITH_IMM */
	uint16_t slid;
};

static void expect_wc(const struct ibv_wc *wc, const struct want *w, const char *what)
{
	cr_assert_eq(wc->status, IBV_WC_SUCCESS, "%s: status %s", what,
		     ibv_wc_status_str(wc->status));
	cr_assert_eq(wc->wr_id, w->wr_id, "%s: wr_id %llu, expected %llu", what,
		     (unsigned long long)wc->wr_id, (unsigned long long)w->wr_id);
	cr_assert_eq(wc->opcode, w->opcode, "%s: opcode %d, expected %d", what, wc->opcode,
		     w->opcode);
	cr_assert_eq(wc->byte_len, w->byte_len, "%s: byte_len %u, expected %u", what,
		     wc->byte_len, w->byte_len);
	cr_assert_eq(wc->qp_num, w->qp_num, "%s: qp_num 0x%x, expected 0x%x", what, wc->qp_num,
		     w->qp_num);
	cr_assert_eq(wc->src_qp, w->src_qp, "%s: src_qp 0x%x, expected 0x%x", what, wc->src_qp,
		     w->src_qp);
	cr_assert_eq(wc->wc_flags, w->wc_flags, "%s: wc_flags 0x%x, expected 0x%x", what,
		     wc->wc_flags, w->wc_flags);
	if (w->wc_flags & IBV_WC_WITH_IMM)
		cr_assert_eq(be32toh(wc->imm_data), w->imm, "%s: imm 0x%x, expected 0x%x", what,
			     be32toh(wc->imm_data), w->imm);
	cr_assert_eq(wc->slid, w->slid, "%s: slid %u, expected %u", what, wc->slid, w->slid);
	cr_assert_eq(wc->vendor_err, 0u, "%s: vendor_err", what);
	cr_assert_eq(wc->sl, 0u, "%s: sl", what);
	cr_assert_eq(wc->pkey_index, 0u, "%s: pkey_index", what);
	cr_assert_eq(wc->dlid_path_bits, 0u, "%s: dlid_path_bits", what);
}

/* The send completion of wr_id on a (opcode, byte_len). */
static void expect_send(struct xp *p, uint64_t wr_id, enum ibv_wc_opcode op, uint32_t len,
			const char *what)
{
	struct ibv_wc wc;

	tb_poll(p->t.a.cq, &wc, 1);
	expect_wc(&wc, &(struct want){ .wr_id = wr_id, .opcode = op, .byte_len = len,
				       .qp_num = p->t.qa->qp_num },
		  what);
}

/* The receive completion of wr_id on b. */
static void expect_recv(struct xp *p, uint64_t wr_id, enum ibv_wc_opcode op, uint32_t len,
			bool imm, uint32_t imm_val, const char *what)
{
	struct ibv_wc wc;

	tb_poll(p->t.b.cq, &wc, 1);
	expect_wc(&wc, &(struct want){ .wr_id = wr_id, .opcode = op, .byte_len = len,
				       .qp_num = p->t.qb->qp_num, .src_qp = p->t.qa->qp_num,
				       .wc_flags = imm ? IBV_WC_WITH_IMM : 0, .imm = imm_val,
				       .slid = p->t.a.port.lid },
		  what);
}

static void same(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(got[i], want[i], "%s: byte %zu is 0x%02x, expected 0x%02x", what, i,
			     got[i], want[i]);
}

/* Nothing more on either CQ after 100 us. */
static void expect_quiet(struct xp *p, const char *what)
{
	struct ibv_wc wc;

	hcasim_run_for_ps(100000000ull);
	cr_assert_eq(ibv_poll_cq(p->t.a.cq, 1, &wc), 0, "%s: a completion on a", what);
	cr_assert_eq(ibv_poll_cq(p->t.b.cq, 1, &wc), 0, "%s: a completion on b", what);
}

static void begin(struct xp *p, uint64_t wr_id)
{
	p->x->wr_id = wr_id;
	p->x->wr_flags = IBV_SEND_SIGNALED;
}

/* One work request of a table: op's builder (RDMA ops at t.dst + roff), then one SGE of len
 * bytes at t.src + loff. */
struct wr_row {
	enum ibv_wr_opcode op;
	size_t loff;
	uint32_t len;
	size_t roff;
	uint64_t cmp_add, swap; /* atomics */
	uint32_t imm;           /* host order */
};

static void add_wr(struct xp *p, uint64_t wr_id, const struct wr_row *r)
{
	uint32_t rkey = p->t.dst->rkey;
	uint64_t raddr = (uintptr_t)lb(p, r->roff);

	begin(p, wr_id);
	switch (r->op) {
	case IBV_WR_SEND:
		ibv_wr_send(p->x);
		break;
	case IBV_WR_SEND_WITH_IMM:
		ibv_wr_send_imm(p->x, htobe32(r->imm));
		break;
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(p->x, rkey, raddr);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		ibv_wr_rdma_write_imm(p->x, rkey, raddr, htobe32(r->imm));
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(p->x, rkey, raddr);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		ibv_wr_atomic_cmp_swp(p->x, rkey, raddr, r->cmp_add, r->swap);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		ibv_wr_atomic_fetch_add(p->x, rkey, raddr, r->cmp_add);
		break;
	default:
		cr_assert_fail("no builder for opcode %d", r->op);
	}
	ibv_wr_set_sge(p->x, p->t.src->lkey, (uintptr_t)la(p, r->loff), r->len);
}

/* ---------------------------------------------------------------------------------------- */

/* One atomic alone in a batch: its completion (byte_len 8), the original value it returned at
 * t.src + loff, and the value it left at t.dst + roff. */
static void atomic_case(struct xp *p, uint64_t wr_id, const struct wr_row *r,
			enum ibv_wc_opcode op, uint64_t old, uint64_t now)
{
	uint64_t v;

	ibv_wr_start(p->x);
	add_wr(p, wr_id, r);
	EXPECT_OK(ibv_wr_complete(p->x));
	expect_send(p, wr_id, op, 8, "atomic");
	memcpy(&v, la(p, r->loff), 8);
	cr_assert_eq(v, old, "atomic %d returned %llu, expected %llu", r->op,
		     (unsigned long long)v, (unsigned long long)old);
	memcpy(&v, lb(p, r->roff), 8);
	cr_assert_eq(v, now, "atomic %d left %llu, expected %llu", r->op, (unsigned long long)v,
		     (unsigned long long)now);
}

Test(qp_ex, rc_every_opcode_through_ibv_wr_with_completions_field_by_field)
{
	struct xp p;
	struct ibv_sge two[2];
	uint8_t inl[40], want[64];
	struct ibv_data_buf list[2];
	uint64_t v;

	xp_open(&p, IBV_QPT_RC, ALL_OPS);

	/* SEND, gathered from two SGEs (ibv_wr_set_sge_list). */
	tb_pair_post_recv(&p.t, 0, 512, 101);
	two[0] = (struct ibv_sge){ (uintptr_t)la(&p, 0), 100, p.t.src->lkey };
	two[1] = (struct ibv_sge){ (uintptr_t)la(&p, 200), 150, p.t.src->lkey };
	ibv_wr_start(p.x);
	begin(&p, 1);
	ibv_wr_send(p.x);
	ibv_wr_set_sge_list(p.x, 2, two);
	EXPECT_OK(ibv_wr_complete(p.x));
	expect_recv(&p, 101, IBV_WC_RECV, 250, false, 0, "SEND: receive");
	expect_send(&p, 1, IBV_WC_SEND, 0, "SEND");
	same(lb(&p, 0), la(&p, 0), 100, "SEND: first SGE");
	same(lb(&p, 100), la(&p, 200), 150, "SEND: second SGE");

	/* SEND with immediate, inline (the buffer is reused at once: it was copied). */
	tb_pair_post_recv(&p.t, 512, 512, 102);
	for (int i = 0; i < 40; i++)
		inl[i] = want[i] = (uint8_t)(0xa0 + i);
	ibv_wr_start(p.x);
	begin(&p, 2);
	ibv_wr_send_imm(p.x, htobe32(0xcafe0001));
	ibv_wr_set_inline_data(p.x, inl, sizeof(inl));
	memset(inl, 0, sizeof(inl));
	EXPECT_OK(ibv_wr_complete(p.x));
	expect_recv(&p, 102, IBV_WC_RECV, 40, true, 0xcafe0001, "SEND_IMM: receive");
	expect_send(&p, 2, IBV_WC_SEND, 0, "SEND_IMM");
	same(lb(&p, 512), want, 40, "SEND_IMM inline data");

	/* RDMA WRITE (ibv_wr_set_sge). */
	ibv_wr_start(p.x);
	add_wr(&p, 3, &(struct wr_row){ IBV_WR_RDMA_WRITE, 1024, 1500, 1024, 0, 0, 0 });
	EXPECT_OK(ibv_wr_complete(p.x));
	expect_send(&p, 3, IBV_WC_RDMA_WRITE, 0, "RDMA_WRITE");
	same(lb(&p, 1024), la(&p, 1024), 1500, "RDMA_WRITE");

	/* RDMA WRITE with immediate, inline from two buffers; consumes a receive. */
	tb_pair_post_recv(&p.t, 7000, 16, 104);
	list[0] = (struct ibv_data_buf){ la(&p, 3000), 10 };
	list[1] = (struct ibv_data_buf){ la(&p, 3100), 20 };
	ibv_wr_start(p.x);
	begin(&p, 4);
	ibv_wr_rdma_write_imm(p.x, p.t.dst->rkey, (uintptr_t)lb(&p, 3000), htobe32(0x1234));
	ibv_wr_set_inline_data_list(p.x, 2, list);
	EXPECT_OK(ibv_wr_complete(p.x));
	expect_recv(&p, 104, IBV_WC_RECV_RDMA_WITH_IMM, 30, true, 0x1234, "WRITE_IMM: receive");
	expect_send(&p, 4, IBV_WC_RDMA_WRITE, 0, "RDMA_WRITE_IMM");
	same(lb(&p, 3000), la(&p, 3000), 10, "WRITE_IMM first buffer");
	same(lb(&p, 3010), la(&p, 3100), 20, "WRITE_IMM second buffer");

	/* RDMA READ of 500 bytes of b into a. */
	for (int i = 0; i < 500; i++)
		*lb(&p, 4096 + i) = (uint8_t)(i * 11 + 5);
	ibv_wr_start(p.x);
	add_wr(&p, 5, &(struct wr_row){ IBV_WR_RDMA_READ, 5000, 500, 4096, 0, 0, 0 });
	EXPECT_OK(ibv_wr_complete(p.x));
	expect_send(&p, 5, IBV_WC_RDMA_READ, 500, "RDMA_READ");
	same(la(&p, 5000), lb(&p, 4096), 500, "RDMA_READ");

	/* Compare and swap: 5 == 5, so 9 is written; the original comes back. Then fetch and
	 * add 3 to 9. */
	v = 5;
	memcpy(lb(&p, 6000), &v, 8);
	atomic_case(&p, 6, &(struct wr_row){ IBV_WR_ATOMIC_CMP_AND_SWP, 6000, 8, 6000, 5, 9, 0 },
		    IBV_WC_COMP_SWAP, 5, 9);
	atomic_case(&p, 7, &(struct wr_row){ IBV_WR_ATOMIC_FETCH_AND_ADD, 6008, 8, 6000, 3, 0, 0 },
		    IBV_WC_FETCH_ADD, 9, 12);
	expect_quiet(&p, "after the seven opcodes");
	xp_close(&p);
}

Test(qp_ex, uc_send_send_imm_write_write_imm_through_ibv_wr)
{
	static const struct wr_row uc[4] = {
		{ IBV_WR_SEND, 0, 200, 0, 0, 0, 0 },
		{ IBV_WR_SEND_WITH_IMM, 300, 100, 0, 0, 0, 77 },
		{ IBV_WR_RDMA_WRITE, 2048, 2000, 2048, 0, 0, 0 },
		{ IBV_WR_RDMA_WRITE_WITH_IMM, 5000, 64, 5000, 0, 0, 78 },
	};
	struct xp p;

	xp_open(&p, IBV_QPT_UC, UC_OPS);
	tb_pair_post_recv(&p.t, 0, 256, 201);
	tb_pair_post_recv(&p.t, 256, 256, 202);
	tb_pair_post_recv(&p.t, 512, 16, 204);
	ibv_wr_start(p.x);
	for (int i = 0; i < 4; i++)
		add_wr(&p, 11 + (uint64_t)i, &uc[i]);
	EXPECT_OK(ibv_wr_complete(p.x));
	expect_send(&p, 11, IBV_WC_SEND, 0, "UC SEND");
	expect_send(&p, 12, IBV_WC_SEND, 0, "UC SEND_IMM");
	expect_send(&p, 13, IBV_WC_RDMA_WRITE, 0, "UC RDMA_WRITE");
	expect_send(&p, 14, IBV_WC_RDMA_WRITE, 0, "UC RDMA_WRITE_IMM");
	expect_recv(&p, 201, IBV_WC_RECV, 200, false, 0, "UC SEND: receive");
	expect_recv(&p, 202, IBV_WC_RECV, 100, true, 77, "UC SEND_IMM: receive");
	expect_recv(&p, 204, IBV_WC_RECV_RDMA_WITH_IMM, 64, true, 78, "UC WRITE_IMM: receive");
	same(lb(&p, 0), la(&p, 0), 200, "UC SEND");
	same(lb(&p, 256), la(&p, 300), 100, "UC SEND_IMM");
	same(lb(&p, 2048), la(&p, 2048), 2000, "UC RDMA_WRITE");
	same(lb(&p, 5000), la(&p, 5000), 64, "UC RDMA_WRITE_IMM");
	expect_quiet(&p, "UC");
	xp_close(&p);
}

Test(qp_ex, ud_send_and_send_imm_with_set_ud_addr)
{
	struct xp p;
	struct ibv_wc wc;

	xp_open(&p, IBV_QPT_UD, UD_OPS);
	tb_pair_post_recv(&p.t, 0, 40 + 300, 301);
	tb_pair_post_recv(&p.t, 1024, 40 + 300, 302);
	ibv_wr_start(p.x);
	begin(&p, 21);
	ibv_wr_send(p.x);
	ibv_wr_set_ud_addr(p.x, p.ah, p.t.qb->qp_num, TB_QKEY);
	ibv_wr_set_sge(p.x, p.t.src->lkey, (uintptr_t)la(&p, 0), 300);
	begin(&p, 22);
	ibv_wr_send_imm(p.x, htobe32(0xabcdef));
	ibv_wr_set_inline_data(p.x, la(&p, 500), 60);
	ibv_wr_set_ud_addr(p.x, p.ah, p.t.qb->qp_num, TB_QKEY); /* setters in any order */
	EXPECT_OK(ibv_wr_complete(p.x));
	expect_send(&p, 21, IBV_WC_SEND, 0, "UD SEND");
	expect_send(&p, 22, IBV_WC_SEND, 0, "UD SEND_IMM");
	/* UD receives: 40 bytes of GRH space first, the sender's QPN in src_qp. */
	tb_poll(p.t.b.cq, &wc, 1);
	expect_wc(&wc, &(struct want){ .wr_id = 301, .opcode = IBV_WC_RECV, .byte_len = 340,
				       .qp_num = p.t.qb->qp_num, .src_qp = p.t.qa->qp_num,
				       .slid = p.t.a.port.lid },
		  "UD SEND: receive");
	tb_poll(p.t.b.cq, &wc, 1);
	expect_wc(&wc, &(struct want){ .wr_id = 302, .opcode = IBV_WC_RECV, .byte_len = 100,
				       .qp_num = p.t.qb->qp_num, .src_qp = p.t.qa->qp_num,
				       .wc_flags = IBV_WC_WITH_IMM, .imm = 0xabcdef,
				       .slid = p.t.a.port.lid },
		  "UD SEND_IMM: receive");
	same(lb(&p, 40), la(&p, 0), 300, "UD SEND");
	same(lb(&p, 1024 + 40), la(&p, 500), 60, "UD SEND_IMM inline");
	xp_close(&p);
}

/* Trace observer: count the send doorbells the device accepted for one QP. */
struct db_count {
	uint32_t qpn;
	unsigned n;
};

static void count_sq_db(void *arg, uint64_t t_ps, int dev, const char *event, const char *f)
{
	struct db_count *c = arg;
	uint64_t qpn;

	(void)t_ps;
	if (dev == 0 && !strcmp(event, "db.sq") && hcasim_trace_field(f, "qpn", &qpn) &&
	    qpn == c->qpn)
		c->n++;
}

Test(qp_ex, a_batch_of_seven_wrs_rings_one_doorbell_and_completes_in_order)
{
	struct xp p;
	struct db_count c;
	struct ibv_wc wc[7];
	static const enum ibv_wc_opcode ops[7] = { IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE,
						   IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
						   IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD };
	static const uint32_t lens[7] = { 0, 0, 0, 0, 64, 8, 8 };
	static const struct wr_row batch[7] = {
		{ IBV_WR_SEND, 0, 64, 0, 0, 0, 0 },
		{ IBV_WR_SEND_WITH_IMM, 64, 64, 0, 0, 0, 1 },
		{ IBV_WR_RDMA_WRITE, 1024, 1024, 1024, 0, 0, 0 },
		{ IBV_WR_RDMA_WRITE_WITH_IMM, 2048, 100, 2048, 0, 0, 2 },
		{ IBV_WR_RDMA_READ, 4096, 64, 1024, 0, 0, 0 }, /* what the WRITE above wrote */
		{ IBV_WR_ATOMIC_CMP_AND_SWP, 6000, 8, 6000, 0, 42, 0 },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, 6008, 8, 6000, 8, 0, 0 },
	};

	xp_open(&p, IBV_QPT_RC, ALL_OPS);
	c = (struct db_count){ .qpn = p.t.qa->qp_num };
	cr_assert_eq(hcasim_trace_observe("db", count_sq_db, &c), 0, "%s", hcasim_last_error());
	tb_pair_post_recv(&p.t, 0, 64, 1);
	tb_pair_post_recv(&p.t, 64, 64, 2);
	tb_pair_post_recv(&p.t, 128, 64, 3);
	ibv_wr_start(p.x);
	for (int i = 0; i < 7; i++)
		add_wr(&p, 1000 + (uint64_t)i, &batch[i]);
	cr_assert_eq(c.n, 0u, "no doorbell before ibv_wr_complete");
	EXPECT_OK(ibv_wr_complete(p.x));
	tb_poll(p.t.a.cq, wc, 7);
	for (int i = 0; i < 7; i++)
		expect_wc(&wc[i], &(struct want){ .wr_id = 1000 + (uint64_t)i, .opcode = ops[i],
						  .byte_len = lens[i], .qp_num = p.t.qa->qp_num },
			  "batch");
	cr_assert_eq(c.n, 1u, "%u send doorbells for one batch of seven", c.n);
	hcasim_trace_observe("db", NULL, NULL);
	same(la(&p, 4096), la(&p, 1024), 64, "READ after WRITE in one batch");
	{
		uint64_t v;

		memcpy(&v, lb(&p, 6000), 8);
		cr_assert_eq(v, 50u, "CAS then FETCH_ADD left %llu", (unsigned long long)v);
	}
	tb_poll(p.t.b.cq, wc, 3);
	xp_close(&p);
}

/* A failed batch: wr_complete returns the errno of its first error (with the message),
 * nothing of it is posted, and the next batch starts where the failed one did. */
static void expect_batch_fails(struct xp *p, int err, const char *msg, const char *what)
{
	errno = 0;
	int r = ibv_wr_complete(p->x);

	cr_assert_eq(r, err, "%s: ibv_wr_complete returned %d (%s), expected %d (%s); last: %s",
		     what, r, strerror(r), err, strerror(err), hcasim_last_error());
	cr_assert_eq(errno, err, "%s: errno %d", what, errno);
	EXPECT_MSG(msg);
	expect_quiet(p, what);
}

Test(qp_ex, a_batch_with_an_error_posts_nothing_and_wr_complete_returns_it)
{
	struct xp p;
	struct ibv_sge five[5];

	xp_open(&p, IBV_QPT_RC, ALL_OPS);
	for (int i = 0; i < 5; i++)
		five[i] = (struct ibv_sge){ (uintptr_t)la(&p, 0), 8, p.t.src->lkey };

	/* A good WR, then one with more SGEs than max_send_sge. */
	ibv_wr_start(p.x);
	add_wr(&p, 1, &(struct wr_row){ IBV_WR_RDMA_WRITE, 0, 64, 0, 0, 0, 0 });
	begin(&p, 2);
	ibv_wr_rdma_write(p.x, p.t.dst->rkey, (uintptr_t)lb(&p, 0));
	ibv_wr_set_sge_list(p.x, 5, five);
	ibv_wr_send_tso(p.x, NULL, 0, 0); /* a second error: the first one is the batch's */
	expect_batch_fails(&p, EINVAL, "max_send_sge", "5 SGEs");
	cr_assert_eq(*lb(&p, 0), 0, "the good WR of the failed batch was not posted");

	/* Inline data beyond max_inline_data, and inline on a READ. */
	ibv_wr_start(p.x);
	begin(&p, 3);
	ibv_wr_send(p.x);
	ibv_wr_set_inline_data(p.x, la(&p, 0), 4096);
	expect_batch_fails(&p, EINVAL, "inline", "4096 inline bytes");
	ibv_wr_start(p.x);
	begin(&p, 4);
	ibv_wr_rdma_read(p.x, p.t.dst->rkey, (uintptr_t)lb(&p, 0));
	ibv_wr_set_inline_data(p.x, la(&p, 0), 8);
	expect_batch_fails(&p, EINVAL, "READ/atomic", "inline READ");

	/* wr_flags the device has no meaning for. */
	ibv_wr_start(p.x);
	p.x->wr_id = 5;
	p.x->wr_flags = IBV_SEND_IP_CSUM;
	ibv_wr_send(p.x);
	expect_batch_fails(&p, EINVAL, "send_flags", "IP_CSUM");

	/* A setter with no WR begun, and a UD setter on RC. */
	ibv_wr_start(p.x);
	ibv_wr_set_sge(p.x, p.t.src->lkey, (uintptr_t)la(&p, 0), 8);
	expect_batch_fails(&p, EINVAL, "no work request", "setter first");
	ibv_wr_start(p.x);
	begin(&p, 6);
	ibv_wr_send(p.x);
	ibv_wr_set_ud_addr(p.x, NULL, 1, 1);
	expect_batch_fails(&p, EINVAL, "not UD", "set_ud_addr on RC");

	/* More WRs than the queue holds: ENOMEM, none posted. */
	ibv_wr_start(p.x);
	for (unsigned i = 0; i <= 16; i++) {
		begin(&p, 100 + i);
		ibv_wr_rdma_write(p.x, p.t.dst->rkey, (uintptr_t)lb(&p, 0));
		ibv_wr_set_sge(p.x, p.t.src->lkey, (uintptr_t)la(&p, 0), 8);
	}
	expect_batch_fails(&p, ENOMEM, "send queue full", "17 WRs in 16 slots");

	/* wr_start twice: the open batch fails. */
	ibv_wr_start(p.x);
	begin(&p, 7);
	ibv_wr_send(p.x);
	ibv_wr_start(p.x);
	expect_batch_fails(&p, EINVAL, "already open", "nested wr_start");

	/* After all that the queue is whole: a batch posts and its wr_id is its own. */
	ibv_wr_start(p.x);
	add_wr(&p, 8, &(struct wr_row){ IBV_WR_RDMA_WRITE, 0, 64, 0, 0, 0, 0 });
	EXPECT_OK(ibv_wr_complete(p.x));
	expect_send(&p, 8, IBV_WC_RDMA_WRITE, 0, "after the failed batches");
	same(lb(&p, 0), la(&p, 0), 64, "after the failed batches");
	xp_close(&p);
}

Test(qp_ex, ud_wr_without_set_ud_addr_or_with_a_bad_ah_fails_the_batch)
{
	struct xp p;

	xp_open(&p, IBV_QPT_UD, UD_OPS);
	ibv_wr_start(p.x);
	begin(&p, 1);
	ibv_wr_send(p.x);
	ibv_wr_set_sge(p.x, p.t.src->lkey, (uintptr_t)la(&p, 0), 8);
	expect_batch_fails(&p, EINVAL, "ibv_wr_set_ud_addr", "UD without an address");
	ibv_wr_start(p.x);
	begin(&p, 2);
	ibv_wr_send(p.x);
	ibv_wr_set_ud_addr(p.x, (struct ibv_ah *)p.t.src, p.t.qb->qp_num, TB_QKEY);
	expect_batch_fails(&p, EINVAL, "wr.ud.ah", "UD with an MR for an AH");
	/* Opcodes UD lacks are refused by the builder (the pointer is there all the same). */
	ibv_wr_start(p.x);
	begin(&p, 3);
	ibv_wr_rdma_write(p.x, p.t.dst->rkey, (uintptr_t)lb(&p, 0));
	expect_batch_fails(&p, EINVAL, "not valid on this QP type", "WRITE on UD");
	xp_close(&p);
}

Test(qp_ex, wr_abort_discards_the_batch)
{
	struct xp p;

	xp_open(&p, IBV_QPT_RC, ALL_OPS);
	ibv_wr_start(p.x);
	add_wr(&p, 1, &(struct wr_row){ IBV_WR_RDMA_WRITE, 0, 64, 0, 0, 0, 0 });
	ibv_wr_abort(p.x);
	expect_quiet(&p, "aborted batch");
	cr_assert_eq(*lb(&p, 0), 0, "an aborted WRITE reached memory");
	/* wr_complete without a batch, builders outside a batch: refused, nothing posted. */
	EXPECT_RC_ERR(ibv_wr_complete(p.x), EINVAL);
	EXPECT_MSG("ibv_wr_start");
	begin(&p, 2);
	ibv_wr_send(p.x);
	EXPECT_MSG("outside");
	expect_quiet(&p, "builder outside a batch");
	ibv_wr_start(p.x);
	add_wr(&p, 3, &(struct wr_row){ IBV_WR_RDMA_WRITE, 64, 64, 64, 0, 0, 0 });
	EXPECT_OK(ibv_wr_complete(p.x));
	expect_send(&p, 3, IBV_WC_RDMA_WRITE, 0, "after abort");
	same(lb(&p, 64), la(&p, 64), 64, "after abort");
	cr_assert_eq(*lb(&p, 0), 0, "the aborted WRITE came back");
	xp_close(&p);
}

/* Memory windows, TSO and atomic write: ibv_create_qp_ex refuses to create a QP with them
 * (EOPNOTSUPP, as mlx5 for a send op it lacks), and their ibv_wr_* pointers fail the batch
 * with EOPNOTSUPP instead of crashing; ibv_wr_set_xrc_srqn on a QP that is not XRC_SEND fails
 * it with EINVAL. */
Test(qp_ex, send_ops_the_device_lacks_are_eopnotsupp)
{
	struct tb_dev t;
	struct ibv_qp_init_attr_ex qa;
	static const struct {
		enum ibv_qp_type type;
		uint64_t ops;
		const char *msg;
	} refused[] = {
		{ IBV_QPT_UD, IBV_QP_EX_WITH_BIND_MW, "qp_type 4" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_LOCAL_INV, "qp_type 4" },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_SEND_WITH_INV, "qp_type 3" },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_TSO, "TSO" },
		{ IBV_QPT_RC, IBV_QP_EX_WITH_ATOMIC_WRITE, "atomic write" },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ, "qp_type 3" },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, "qp_type 3" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE, "qp_type 4" },
		{ IBV_QPT_RC, 1ull << 40, "send_ops_flags" },
	};
	struct ibv_qp *qp;
	struct ibv_qp_ex *x;

	tb_open(&t, 0);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		memset(&qa, 0, sizeof(qa));
		qa.qp_type = refused[i].type;
		qa.send_cq = qa.recv_cq = t.cq;
		qa.cap = (struct ibv_qp_cap){ 1, 1, 1, 1, 0 };
		qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		qa.pd = t.pd;
		qa.send_ops_flags = IBV_QP_EX_WITH_SEND | refused[i].ops;
		EXPECT_NULL_ERR(ibv_create_qp_ex(t.ctx, &qa), EOPNOTSUPP);
		EXPECT_MSG(refused[i].msg);
	}
	/* comp_mask bits beyond PD, SEND_OPS_FLAGS, CREATE_FLAGS and XRCD (RSS); no PD. */
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	qa.qp_type = IBV_QPT_RC;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE;
	EXPECT_NULL_ERR(ibv_create_qp_ex(t.ctx, &qa), EOPNOTSUPP);
	EXPECT_MSG("comp_mask");
	qa.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	EXPECT_NULL_ERR(ibv_create_qp_ex(t.ctx, &qa), EINVAL);
	EXPECT_MSG("IBV_QP_INIT_ATTR_PD");

	/* A QP created without send ops has no ibv_qp_ex (as rdma-core). */
	qp = tb_create_qp(&t, IBV_QPT_RC);
	cr_assert_null(ibv_qp_to_qp_ex(qp), "ibv_qp_to_qp_ex of a plain QP");
	EXPECT_MSG("IBV_QP_INIT_ATTR_SEND_OPS_FLAGS");
	cr_assert_eq(ibv_destroy_qp(qp), 0);

	/* The pointers of the ops the device lacks: each fails its batch, nothing posted. */
	qp = create_ex(&t, IBV_QPT_RC, ALL_OPS, &qa);
	x = ibv_qp_to_qp_ex(qp);
	cr_assert_not_null(x);
	/* RTS, so that the good WR of each batch is accepted (the batch is never posted). */
	cr_assert_eq(hcasim_qp_force_state(qp, IBV_QPS_RTS), 0, "%s", hcasim_last_error());
	for (int op = 3; op < 6; op++) {
		ibv_wr_start(x);
		x->wr_id = 1;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x); /* a good WR first: it must not be posted either */
		switch (op) { /* 0..2, the memory-window ops, are implemented: suite mw */
		case 3:
			ibv_wr_set_xrc_srqn(x, 1);
			break;
		case 4:
			ibv_wr_send_tso(x, NULL, 0, 0);
			break;
		case 5:
			x->wr_atomic_write(x, 1, 0, NULL);
			break;
		}
		errno = 0;
		/* ibv_wr_set_xrc_srqn exists (suite xrc), but not on an RC QP: EINVAL */
		cr_assert_eq(ibv_wr_complete(x), op == 3 ? EINVAL : EOPNOTSUPP, "op %d: %s", op,
			     hcasim_last_error());
		cr_assert_eq(errno, op == 3 ? EINVAL : EOPNOTSUPP);
		EXPECT_MSG(op == 3 ? "XRC_SEND" : op == 4 ? "TSO" : "atomic write");
	}
	{
		struct ibv_wc wc;

		hcasim_run_for_ps(100000000ull);
		cr_assert_eq(ibv_poll_cq(t.cq, 1, &wc), 0, "a failed batch was posted");
	}
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	tb_close(&t);
}
