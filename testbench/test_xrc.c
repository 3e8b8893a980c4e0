/* Suite xrc: XRC (IBA annex A14, docs/xrc.md) through the verbs API. Two XRC_SEND QPs on
 * hcasim0 reach three XRC SRQs behind one XRC_RECV QP on hcasim1, each message steered by the
 * SRQ number its WR names (ibv_post_send's qp_type.xrc.remote_srqn, ibv_wr_set_xrc_srqn), every
 * completion checked field by field and every byte; XRCETH on the wire; a wrong SRQ number
 * from the wire NAKed; domains shared between contexts through a file; ibv_open_qp giving
 * another context a handle on an XRC_RECV QP that outlives its creator's; and the verbs' checks
 * of bad input, each naming its field and changing nothing. */
#include <criterion/criterion.h>

#include "model/pkt.h"
#include "testbench/tb.h"
#include "testbench/tb_expect.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NSRQ 3
#define MSG 3000u /* three packets at MTU 1024: FIRST, MIDDLE, LAST */
#define SLOT 4096u

struct xrc {
	struct tb_dev a, b;             /* hcasim0: senders; hcasim1: the target */
	struct ibv_xrcd *xrcd;          /* hcasim1's domain */
	struct ibv_cq *cq2;             /* SRQ 2's CQ (SRQs 0 and 1 use b.cq) */
	struct ibv_srq *srq[NSRQ];
	uint32_t srqn[NSRQ];            /* ibv_get_srq_num */
	struct ibv_qp *tgt;             /* XRC_RECV on hcasim1 */
	struct ibv_qp *ini[2];          /* XRC_SEND on hcasim0: ini[1] with the ibv_wr_* API */
	struct ibv_mr *src, *dst;       /* hcasim0's payload, hcasim1's receive slots */
};

static struct ibv_xrcd *open_xrcd(struct ibv_context *ctx, int fd, int oflags)
{
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
						      IBV_XRCD_INIT_ATTR_OFLAGS,
					 .fd = fd, .oflags = oflags };
	struct ibv_xrcd *x = ibv_open_xrcd(ctx, &xa);

	cr_assert_not_null(x, "ibv_open_xrcd: %s", hcasim_last_error());
	return x;
}

static struct ibv_srq *xrc_srq(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_xrcd *x,
			       struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 8, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC, .pd = pd, .xrcd = x, .cq = cq,
	};
	struct ibv_srq *s = ibv_create_srq_ex(ctx, &sa);

	cr_assert_not_null(s, "ibv_create_srq_ex(XRC): %s", hcasim_last_error());
	return s;
}

static struct ibv_qp *xrc_tgt(struct ibv_context *ctx, struct ibv_xrcd *x)
{
	struct ibv_qp_init_attr_ex qa = { .qp_type = IBV_QPT_XRC_RECV,
					  .comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = x };
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &qa);

	cr_assert_not_null(qp, "ibv_create_qp_ex(XRC_RECV): %s", hcasim_last_error());
	return qp;
}

static struct ibv_qp *xrc_ini(struct tb_dev *t, bool ex)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_XRC_SEND, .send_cq = t->cq,
		.cap = { .max_send_wr = 8, .max_send_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | (ex ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
		.pd = t->pd, .send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(t->ctx, &qa);

	cr_assert_not_null(qp, "ibv_create_qp_ex(XRC_SEND): %s", hcasim_last_error());
	return qp;
}

/* RESET -> upto (RTR or RTS) towards peer_qpn on the peer's LID, with the XRC columns'
 * required sets. */
static void xconnect_to(struct ibv_qp *qp, uint16_t dlid, uint32_t peer_qpn,
			enum ibv_qp_state upto)
{
	bool tgt = qp->qp_type == IBV_QPT_XRC_RECV;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0, "RESET: %s", hcasim_last_error());
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						   IBV_QP_ACCESS_FLAGS),
		     0, "INIT: %s", hcasim_last_error());
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				  .dest_qp_num = peer_qpn, .rq_psn = 0x100, .max_dest_rd_atomic = 4,
				  .min_rnr_timer = 1, .ah_attr = { .dlid = dlid, .port_num = 1 } };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						   (tgt ? IBV_QP_MAX_DEST_RD_ATOMIC |
							      IBV_QP_MIN_RNR_TIMER : 0)),
		     0, "RTR: %s", hcasim_last_error());
	if (upto == IBV_QPS_RTR)
		return;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0x100, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 4 };
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
						   (tgt ? 0 : IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
								IBV_QP_MAX_QP_RD_ATOMIC)),
		     0, "RTS: %s", hcasim_last_error());
}

static void xconnect(struct ibv_qp *qp, uint16_t dlid, uint32_t peer_qpn)
{
	xconnect_to(qp, dlid, peer_qpn, IBV_QPS_RTS);
}

/* A new XRC_RECV QP and ini[0], connected to each other. */
static void renew(struct xrc *x)
{
	cr_assert_eq(ibv_destroy_qp(x->tgt), 0);
	cr_assert_eq(ibv_destroy_qp(x->ini[0]), 0);
	x->tgt = xrc_tgt(x->b.ctx, x->xrcd);
	x->ini[0] = xrc_ini(&x->a, false);
	xconnect(x->tgt, x->a.port.lid, x->ini[0]->qp_num);
	xconnect(x->ini[0], x->b.port.lid, x->tgt->qp_num);
}

static void xrc_open(struct xrc *x)
{
	memset(x, 0, sizeof(*x));
	tb_open(&x->a, 0);
	tb_open(&x->b, 1);
	x->xrcd = open_xrcd(x->b.ctx, -1, 0);
	x->cq2 = ibv_create_cq(x->b.ctx, 64, NULL, NULL, 0);
	cr_assert_not_null(x->cq2);
	for (int i = 0; i < NSRQ; i++) {
		x->srq[i] = xrc_srq(x->b.ctx, x->b.pd, x->xrcd, i == 2 ? x->cq2 : x->b.cq);
		cr_assert_eq(ibv_get_srq_num(x->srq[i], &x->srqn[i]), 0, "%s",
			     hcasim_last_error());
	}
	x->tgt = xrc_tgt(x->b.ctx, x->xrcd);
	x->ini[0] = xrc_ini(&x->a, false);
	x->ini[1] = xrc_ini(&x->a, true);
	x->src = tb_mr(&x->a, 2 * NSRQ * SLOT);
	x->dst = tb_mr(&x->b, 2 * NSRQ * SLOT);
	for (size_t i = 0; i < 2 * NSRQ * SLOT; i++)
		((uint8_t *)x->src->addr)[i] = (uint8_t)(i * 13 + 5);
}

static void free_mr(struct ibv_mr *mr)
{
	void *buf = mr->addr;

	cr_assert_eq(ibv_dereg_mr(mr), 0);
	free(buf);
}

static void xrc_close(struct xrc *x)
{
	cr_assert_eq(ibv_destroy_qp(x->ini[0]), 0);
	cr_assert_eq(ibv_destroy_qp(x->ini[1]), 0);
	cr_assert_eq(ibv_destroy_qp(x->tgt), 0, "%s", hcasim_last_error());
	for (int i = 0; i < NSRQ; i++)
		cr_assert_eq(ibv_destroy_srq(x->srq[i]), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_close_xrcd(x->xrcd), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_cq(x->cq2), 0);
	free_mr(x->src);
	free_mr(x->dst);
	tb_close(&x->a);
	tb_close(&x->b);
}

/* Slot k of dst (one per message) posted on SRQ s with wr_id 0x5000 + k. */
static void post_slot(struct xrc *x, int s, unsigned k)
{
	struct ibv_sge sg = { (uintptr_t)x->dst->addr + k * SLOT, SLOT, x->dst->lkey };
	struct ibv_recv_wr wr = { .wr_id = 0x5000 + k, .sg_list = &sg, .num_sge = 1 }, *bad;

	cr_assert_eq(ibv_post_srq_recv(x->srq[s], &wr, &bad), 0, "%s", hcasim_last_error());
}

/* Message k (MSG bytes from slot k of src, immediate 0x1000 + k) from ini[i] to SRQ s. */
static void send_msg(struct xrc *x, int i, int s, unsigned k)
{
	struct ibv_sge sg = { (uintptr_t)x->src->addr + k * SLOT, MSG, x->src->lkey };
	uint32_t imm = htobe32(0x1000 + k);

	if (i == 0) {
		struct ibv_send_wr wr = { .wr_id = 0x7000 + k, .sg_list = &sg, .num_sge = 1,
					  .opcode = IBV_WR_SEND_WITH_IMM,
					  .send_flags = IBV_SEND_SIGNALED, .imm_data = imm },
				   *bad;

		wr.qp_type.xrc.remote_srqn = x->srqn[s];
		cr_assert_eq(ibv_post_send(x->ini[0], &wr, &bad), 0, "%s", hcasim_last_error());
	} else {
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(x->ini[1]);

		ibv_wr_start(qx);
		qx->wr_id = 0x7000 + k;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_imm(qx, imm);
		ibv_wr_set_xrc_srqn(qx, x->srqn[s]);
		ibv_wr_set_sge(qx, sg.lkey, sg.addr, sg.length);
		cr_assert_eq(ibv_wr_complete(qx), 0, "%s", hcasim_last_error());
	}
}

/* The send completion of message k on ini[i] and its receive completion on SRQ s's CQ. */
static void expect_msg(struct xrc *x, int i, int s, unsigned k)
{
	struct ibv_wc w;

	tb_poll(x->a.cq, &w, 1);
	cr_expect_eq(w.status, IBV_WC_SUCCESS, "send %u: %s", k, ibv_wc_status_str(w.status));
	cr_expect_eq(w.wr_id, 0x7000 + k);
	cr_expect_eq(w.opcode, IBV_WC_SEND);
	cr_expect_eq(w.qp_num, x->ini[i]->qp_num);
	tb_poll(s == 2 ? x->cq2 : x->b.cq, &w, 1);
	cr_expect_eq(w.status, IBV_WC_SUCCESS, "recv %u: %s", k, ibv_wc_status_str(w.status));
	cr_expect_eq(w.wr_id, 0x5000 + k, "recv %u came from another SRQ slot: 0x%llx", k,
		     (unsigned long long)w.wr_id);
	cr_expect_eq(w.opcode, IBV_WC_RECV);
	cr_expect_eq(w.byte_len, MSG);
	cr_expect_eq(w.qp_num, x->tgt->qp_num, "receive CQE names the XRC_RECV QP");
	cr_expect_eq(w.src_qp, x->ini[i]->qp_num);
	cr_expect_eq(w.wc_flags & IBV_WC_WITH_IMM, IBV_WC_WITH_IMM);
	cr_expect_eq(be32toh(w.imm_data), 0x1000 + k);
	cr_expect_eq(w.vendor_err, 0u);
	cr_expect_eq(w.slid, x->a.port.lid);
	cr_expect_eq(memcmp((uint8_t *)x->dst->addr + k * SLOT, (uint8_t *)x->src->addr + k * SLOT,
			    MSG),
		     0, "message %u: bytes differ", k);
}

/* The Done-when scenario: ini[0], then ini[1] (the target QP reconnected to it: an XRC_RECV
 * QP is the end of one connection, IBA A14), each sends one message to each of the three
 * SRQs, in the order 2, 0, 1, and every message lands in its SRQ's buffer, completing on that
 * SRQ's CQ; nothing else completes. */
Test(xrc, two_xrc_send_qps_reach_three_srqs_behind_one_xrc_recv_qp)
{
	static const int order[NSRQ] = { 2, 0, 1 };
	struct xrc x;
	struct ibv_wc w;
	unsigned k = 0;

	xrc_open(&x);
	for (int i = 0; i < 2; i++) {
		xconnect(x.tgt, x.a.port.lid, x.ini[i]->qp_num);
		xconnect(x.ini[i], x.b.port.lid, x.tgt->qp_num);
		for (int j = 0; j < NSRQ; j++, k++) {
			post_slot(&x, order[j], k);
			send_msg(&x, i, order[j], k);
			expect_msg(&x, i, order[j], k);
		}
	}
	hcasim_run_for_ps(10000000ull);
	cr_expect_eq(ibv_poll_cq(x.a.cq, 1, &w) + ibv_poll_cq(x.b.cq, 1, &w) +
			     ibv_poll_cq(x.cq2, 1, &w),
		     0, "a completion too many");
	xrc_close(&x);
}

/* A message to an SRQ with no receive posted waits (RNR) and lands once one is posted, in
 * that SRQ; the other SRQs' WQEs stay untouched. */
Test(xrc, srq_without_receive_rnr_naks_then_delivers)
{
	struct xrc x;
	struct ibv_wc w;

	xrc_open(&x);
	xconnect(x.tgt, x.a.port.lid, x.ini[0]->qp_num);
	xconnect(x.ini[0], x.b.port.lid, x.tgt->qp_num);
	post_slot(&x, 0, 1); /* SRQ 0 has a WQE; the message goes to SRQ 1 */
	send_msg(&x, 0, 1, 0);
	hcasim_run_for_ps(20000000ull);
	cr_assert_eq(ibv_poll_cq(x.a.cq, 1, &w), 0, "completed without a receive");
	post_slot(&x, 1, 0);
	expect_msg(&x, 0, 1, 0);
	send_msg(&x, 0, 0, 1);
	expect_msg(&x, 0, 0, 1);
	xrc_close(&x);
}

/* RDMA WRITE through XRC: the rkey is checked in the PD of the SRQ the XRCETH names (IBA
 * A14), so a WRITE naming an SRQ of the MR's PD lands, and one naming an SRQ of another PD
 * completes with REM_ACCESS_ERR (vendor_err NAK_REM_ACCESS) and writes nothing. */
Test(xrc, rdma_write_is_checked_in_the_pd_of_the_named_srq)
{
	struct xrc x;
	struct ibv_pd *pd2;
	struct ibv_srq *s2;
	uint32_t n2;
	struct ibv_wc w;

	xrc_open(&x);
	pd2 = ibv_alloc_pd(x.b.ctx);
	cr_assert_not_null(pd2);
	s2 = xrc_srq(x.b.ctx, pd2, x.xrcd, x.b.cq);
	cr_assert_eq(ibv_get_srq_num(s2, &n2), 0);
	renew(&x);
	for (int c = 0; c < 2; c++) {
		struct ibv_sge sg = { (uintptr_t)x.src->addr, 256, x.src->lkey };
		struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sg, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED },
				   *b;

		wr.wr.rdma.remote_addr = (uintptr_t)x.dst->addr + SLOT;
		wr.wr.rdma.rkey = x.dst->rkey;
		wr.qp_type.xrc.remote_srqn = c ? n2 : x.srqn[1];
		cr_assert_eq(ibv_post_send(x.ini[0], &wr, &b), 0, "%s", hcasim_last_error());
		tb_poll(x.a.cq, &w, 1);
		cr_expect_eq(w.status, c ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS, "case %d: %s", c,
			     ibv_wc_status_str(w.status));
		cr_expect_eq(w.opcode, IBV_WC_RDMA_WRITE);
		cr_expect_eq(w.vendor_err, c ? 0x31u : 0u);
		cr_expect_eq(memcmp((uint8_t *)x.dst->addr + SLOT, x.src->addr, 256) == 0, c == 0,
			     "case %d: the bytes", c);
		memset((uint8_t *)x.dst->addr + SLOT, 0, 256);
		if (!c)
			renew(&x);
	}
	cr_assert_eq(ibv_destroy_qp(x.tgt), 0);
	x.tgt = xrc_tgt(x.b.ctx, x.xrcd); /* xrc_close destroys it; s2 must go first */
	cr_assert_eq(ibv_destroy_srq(s2), 0);
	cr_assert_eq(ibv_dealloc_pd(pd2), 0, "%s", hcasim_last_error());
	xrc_close(&x);
}

/* The wire: an XRC SEND carries the XRC opcode class and a 4-byte XRCETH right after the BTH
 * (Reserved 8 bits, XRCSRQ 24 bits), parses back, and a frame cut inside it is malformed. */
Test(xrc, xrceth_layout_on_the_wire)
{
	static const uint8_t data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct hm_pkt p = { .opcode = HM_OP_XRC | HM_OP_SEND_ONLY, .pkey = 0xffff, .dqpn = 0x12,
			    .psn = 0x100, .dlid = 2, .slid = 1, .xrc_srqn = 0xabcdef,
			    .payload = data, .paylen = sizeof(data) };
	struct hm_pkt q;
	uint8_t f[HM_PKT_MAX_BYTES];
	size_t n = hm_pkt_build(HM_LL_IB, &p, f, sizeof(f));
	const uint8_t *bth = f + HM_LRH_BYTES;

	cr_assert_gt(n, 0u);
	cr_assert_str_eq(hm_opcode_info(0xa4)->name, "XRC SEND Only");
	cr_expect_eq(bth[0], 0xa4);
	cr_expect_eq(bth[12], 0x00, "XRCETH reserved byte");
	cr_expect_eq(bth[13] << 16 | bth[14] << 8 | bth[15], 0xabcdef, "XRCSRQ");
	cr_expect_eq(memcmp(bth + 16, data, sizeof(data)), 0, "payload after the XRCETH");
	cr_assert_eq(hm_pkt_parse(HM_LL_IB, f, n, &q), 0);
	cr_expect_eq(q.xrc_srqn, 0xabcdefu);
	cr_expect_eq(q.paylen, sizeof(data));
	/* responses carry no XRCETH: an XRC ACK is BTH and AETH */
	cr_expect_eq(hm_opcode_info(0xb1)->hdrs & HM_HDR_XRCETH, 0u);
	cr_expect_eq(hm_opcode_info(0xb1)->hdrs & HM_HDR_AETH, (uint32_t)HM_HDR_AETH);
	/* a frame whose XRCETH is cut short (LRH, BTH, 2 bytes, ICRC, VCRC) is malformed */
	p.paylen = 0;
	p.payload = NULL;
	n = hm_pkt_build(HM_LL_IB, &p, f, sizeof(f));
	memmove(f + HM_LRH_BYTES + HM_BTH_BYTES + 2, f + n - 6, 6);
	f[5] = (uint8_t)((HM_LRH_BYTES + HM_BTH_BYTES + 2 + 4) / 4); /* LRH PktLen */
	cr_expect_neq(hm_pkt_parse(HM_LL_IB, f, HM_LRH_BYTES + HM_BTH_BYTES + 2 + 6, &q), 0);
}

/* A wrong SRQ number from the wire (none, a basic SRQ, an SRQ of another domain) is NAKed
 * invalid request: the sender completes with REM_INV_REQ_ERR (vendor_err NAK_INV_REQ), the
 * XRC_RECV QP goes to ERR, no SRQ loses a WQE and nothing crashes. */
Test(xrc, wrong_srq_number_from_the_wire_is_naked)
{
	struct xrc x;
	struct ibv_srq_init_attr ba = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *basic;
	struct ibv_xrcd *other;
	struct ibv_srq *foreign;
	uint32_t bad[3];
	struct ibv_wc w;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;

	xrc_open(&x);
	basic = ibv_create_srq(x.b.pd, &ba);
	cr_assert_not_null(basic);
	other = open_xrcd(x.b.ctx, -1, 0);
	foreign = xrc_srq(x.b.ctx, x.b.pd, other, x.b.cq);
	bad[0] = 0xfffff0;
	cr_assert_eq(ibv_get_srq_num(basic, &bad[1]), 0);
	cr_assert_eq(ibv_get_srq_num(foreign, &bad[2]), 0);
	renew(&x);
	for (int c = 0; c < 3; c++) {
		struct ibv_sge sg = { (uintptr_t)x.src->addr, 64, x.src->lkey };
		struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sg, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *b;

		post_slot(&x, 0, 0);
		wr.qp_type.xrc.remote_srqn = bad[c];
		cr_assert_eq(ibv_post_send(x.ini[0], &wr, &b), 0);
		tb_poll(x.a.cq, &w, 1);
		cr_expect_eq(w.status, IBV_WC_REM_INV_REQ_ERR, "case %d: %s", c,
			     ibv_wc_status_str(w.status));
		cr_expect_eq(w.vendor_err, 0x30u, "case %d: vendor_err NAK_INV_REQ", c);
		cr_assert_eq(ibv_query_qp(x.tgt, &qa, IBV_QP_STATE, &ia), 0);
		cr_expect_eq(qa.qp_state, IBV_QPS_ERR, "case %d: the XRC_RECV QP", c);
		hcasim_run_for_ps(1000000ull);
		cr_expect_eq(ibv_poll_cq(x.b.cq, 1, &w), 0, "case %d: a receive completed", c);
		/* the WQE stayed on SRQ 0: a good message now takes it, on new QPs */
		renew(&x);
		send_msg(&x, 0, 0, 0);
		expect_msg(&x, 0, 0, 0);
	}
	cr_assert_eq(ibv_destroy_srq(foreign), 0);
	cr_assert_eq(ibv_close_xrcd(other), 0);
	cr_assert_eq(ibv_destroy_srq(basic), 0);
	xrc_close(&x);
}

/* A domain is shared through a file: a second context of hcasim1 opening the same file gets
 * the same domain, so its XRC_RECV QP receives into the SRQ the first context created; O_EXCL
 * refuses an existing domain, a file without a domain needs O_CREAT, and the device domain
 * lives until its last open closes (EBUSY while an SRQ is in it). */
Test(xrc, domain_is_shared_by_contexts_opening_the_same_file)
{
	char path[] = "/tmp/hcasim-xrc-XXXXXX";
	int fd = mkstemp(path), fd2;
	struct xrc x;
	struct ibv_context *ctx2;
	struct ibv_xrcd *x1, *x2;
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
						      IBV_XRCD_INIT_ATTR_OFLAGS };
	struct ibv_qp *tgt2;

	cr_assert_geq(fd, 0);
	fd2 = open(path, O_RDONLY);
	cr_assert_geq(fd2, 0);
	xrc_open(&x);
	ctx2 = ibv_open_device(x.b.list[1]);
	cr_assert_not_null(ctx2);
	xa.fd = fd;
	EXPECT_NULL_ERR(ibv_open_xrcd(x.b.ctx, &xa), EAGAIN); /* no domain yet, no O_CREAT */
	EXPECT_MSG("O_CREAT");
	x1 = open_xrcd(x.b.ctx, fd, O_CREAT);
	xa.oflags = O_CREAT | O_EXCL;
	EXPECT_NULL_ERR(ibv_open_xrcd(ctx2, &xa), EINVAL);
	EXPECT_MSG("O_EXCL");
	x2 = open_xrcd(ctx2, fd2, 0); /* another descriptor of the same file: the same domain */
	/* the SRQ made in the first context, the target QP in the second */
	ibv_destroy_srq(x.srq[0]);
	x.srq[0] = xrc_srq(x.b.ctx, x.b.pd, x1, x.b.cq);
	cr_assert_eq(ibv_get_srq_num(x.srq[0], &x.srqn[0]), 0);
	tgt2 = xrc_tgt(ctx2, x2);
	cr_assert_eq(ibv_destroy_qp(x.tgt), 0);
	x.tgt = tgt2;
	xconnect(x.tgt, x.a.port.lid, x.ini[0]->qp_num);
	xconnect(x.ini[0], x.b.port.lid, x.tgt->qp_num);
	post_slot(&x, 0, 0);
	send_msg(&x, 0, 0, 0);
	expect_msg(&x, 0, 0, 0);
	cr_assert_eq(ibv_close_xrcd(x2), 0, "not the last open: %s", hcasim_last_error());
	EXPECT_RC_ERR(ibv_close_xrcd(x1), EBUSY); /* the last: its SRQ and QP are in it */
	cr_assert_eq(ibv_destroy_qp(x.tgt), 0);
	x.tgt = xrc_tgt(x.b.ctx, x.xrcd);
	cr_assert_eq(ibv_destroy_srq(x.srq[0]), 0);
	x.srq[0] = xrc_srq(x.b.ctx, x.b.pd, x.xrcd, x.b.cq);
	cr_assert_eq(ibv_close_xrcd(x1), 0, "%s", hcasim_last_error());
	xa.fd = fd;
	xa.oflags = 0; /* the domain is gone with its last open */
	EXPECT_NULL_ERR(ibv_open_xrcd(x.b.ctx, &xa), EAGAIN);
	cr_assert_eq(ibv_close_device(ctx2), 0);
	xrc_close(&x);
	close(fd);
	close(fd2);
	unlink(path);
}

/* Bad input: each verb refuses with its errno and a message naming the field, and nothing is
 * created. */
Test(xrc, bad_input_is_refused_naming_the_field)
{
	struct tb_dev t;
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD, .fd = -1 };
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD,
		.srq_type = IBV_SRQT_XRC,
	};
	struct ibv_qp_init_attr_ex qa = { .qp_type = IBV_QPT_XRC_RECV,
					  .comp_mask = IBV_QP_INIT_ATTR_PD };
	struct ibv_device_attr da;
	struct ibv_xrcd *x;
	struct ibv_qp *ini;
	struct ibv_sge sg = { 0, 0, 0 };
	struct ibv_send_wr wr = { .sg_list = &sg, .opcode = IBV_WR_SEND }, *bad;

	tb_open(&t, 0);
	cr_assert_eq(ibv_query_device(t.ctx, &da), 0);
	cr_expect(da.device_cap_flags & IBV_DEVICE_XRC, "IBV_DEVICE_XRC reported");
	EXPECT_NULL_ERR(ibv_open_xrcd(t.ctx, &xa), EINVAL);
	EXPECT_MSG("IBV_XRCD_INIT_ATTR_OFLAGS");
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS | IBV_XRCD_INIT_ATTR_RESERVED;
	EXPECT_NULL_ERR(ibv_open_xrcd(t.ctx, &xa), EOPNOTSUPP);
	EXPECT_MSG("comp_mask");
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	xa.fd = 1000;
	EXPECT_NULL_ERR(ibv_open_xrcd(t.ctx, &xa), EBADF);
	EXPECT_MSG("fd 1000");
	x = open_xrcd(t.ctx, -1, 0);
	sa.pd = t.pd;
	sa.xrcd = x;
	qa.pd = t.pd; /* verbs.h sends a PD-only mask to ibv_create_qp */
	EXPECT_NULL_ERR(ibv_create_srq_ex(t.ctx, &sa), EINVAL); /* no CQ */
	EXPECT_MSG("cq");
	sa.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
	sa.cq = t.cq;
	sa.srq_type = IBV_SRQT_TM;
	EXPECT_NULL_ERR(ibv_create_srq_ex(t.ctx, &sa), EOPNOTSUPP);
	EXPECT_NULL_ERR(ibv_create_qp_ex(t.ctx, &qa), EINVAL); /* XRC_RECV without its domain */
	EXPECT_MSG("IBV_QP_INIT_ATTR_XRCD");
	ini = xrc_ini(&t, false);
	cr_assert_eq(hcasim_qp_force_state(ini, IBV_QPS_RTS), 0);
	wr.qp_type.xrc.remote_srqn = 0x1000000;
	EXPECT_RC_ERR(ibv_post_send(ini, &wr, &bad), EINVAL);
	EXPECT_MSG("remote_srqn");
	cr_assert_eq(ibv_destroy_qp(ini), 0);
	cr_assert_eq(ibv_close_xrcd(x), 0);
	tb_close(&t);
}

#define OPEN_NEED (IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE)

/* ibv_open_qp of XRC_RECV QP qpn in domain xrcd from ctx, with qp_context tag. */
static struct ibv_qp *open_tgt(struct ibv_context *ctx, struct ibv_xrcd *xrcd, uint32_t qpn,
			       void *tag)
{
	struct ibv_qp_open_attr oa = { .comp_mask = OPEN_NEED | IBV_QP_OPEN_ATTR_CONTEXT,
				       .qp_num = qpn, .xrcd = xrcd, .qp_context = tag,
				       .qp_type = IBV_QPT_XRC_RECV };
	struct ibv_qp *qp = ibv_open_qp(ctx, &oa);

	cr_assert_not_null(qp, "ibv_open_qp: %s", hcasim_last_error());
	cr_assert_eq(qp->context, ctx);
	cr_assert_eq(qp->qp_num, qpn);
	cr_assert_eq(qp->qp_type, IBV_QPT_XRC_RECV);
	cr_assert_eq(qp->qp_context, tag);
	cr_assert_eq(qp->state, IBV_QPS_UNKNOWN, "as after rdma-core's ibv_cmd_open_qp");
	return qp;
}

/* The next async event of ctx of type t names qp (other events are skipped). */
static void expect_qp_event(struct ibv_context *ctx, struct ibv_qp *qp, enum ibv_event_type t)
{
	struct ibv_async_event ev;

	for (int i = 0; i < 16; i++) {
		cr_assert_eq(ibv_get_async_event(ctx, &ev), 0, "no event %s: %s",
			     ibv_event_type_str(t), hcasim_last_error());
		ibv_ack_async_event(&ev);
		if (ev.event_type == t) {
			cr_assert_eq(ev.element.qp, qp, "%s names another handle",
				     ibv_event_type_str(t));
			return;
		}
	}
	cr_assert_fail("no event %s", ibv_event_type_str(t));
}

/* ibv_open_qp: a second context on the domain (through its file) opens the XRC_RECV QP the
 * first created. Through the new handle the QP is connected (to RTR) and queried; its first
 * packet's COMM_EST reaches both handles, each in its context; the creator's handle is
 * destroyed and the QP lives on for the other; destroying the last handle destroys the QP. */
Test(xrc, open_qp_shares_the_target_qp_between_contexts)
{
	char path[] = "/tmp/hcasim-xrc-XXXXXX";
	int fd = mkstemp(path), tag;
	struct xrc x;
	struct ibv_context *ctx2;
	struct ibv_xrcd *x1, *x2;
	struct ibv_qp *tgt1, *h;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_qp_open_attr oa = { .comp_mask = OPEN_NEED, .qp_type = IBV_QPT_XRC_RECV };

	cr_assert_geq(fd, 0);
	xrc_open(&x);
	ctx2 = ibv_open_device(x.b.list[1]);
	cr_assert_not_null(ctx2);
	x1 = open_xrcd(x.b.ctx, fd, O_CREAT);
	x2 = open_xrcd(ctx2, fd, 0);
	cr_assert_eq(ibv_destroy_srq(x.srq[0]), 0);
	x.srq[0] = xrc_srq(x.b.ctx, x.b.pd, x1, x.b.cq);
	cr_assert_eq(ibv_get_srq_num(x.srq[0], &x.srqn[0]), 0);
	cr_assert_eq(ibv_destroy_qp(x.tgt), 0);
	x.tgt = tgt1 = xrc_tgt(x.b.ctx, x1);
	h = open_tgt(ctx2, x2, tgt1->qp_num, &tag);
	cr_assert_neq(h, tgt1);
	xconnect_to(h, x.a.port.lid, x.ini[0]->qp_num, IBV_QPS_RTR);
	cr_assert_eq(h->state, IBV_QPS_RTR);
	xconnect(x.ini[0], x.b.port.lid, tgt1->qp_num);
	cr_assert_eq(ibv_query_qp(tgt1, &qa, IBV_QP_STATE, &qi), 0, "%s", hcasim_last_error());
	cr_assert_eq(qa.qp_state, IBV_QPS_RTR, "the creator's handle sees the modify");
	cr_assert_eq(qa.dest_qp_num, x.ini[0]->qp_num);
	post_slot(&x, 0, 0);
	send_msg(&x, 0, 0, 0);
	expect_msg(&x, 0, 0, 0);
	expect_qp_event(x.b.ctx, tgt1, IBV_EVENT_COMM_EST);
	expect_qp_event(ctx2, h, IBV_EVENT_COMM_EST);

	cr_assert_eq(ibv_destroy_qp(tgt1), 0, "%s", hcasim_last_error());
	x.tgt = h; /* the QP lives on */
	post_slot(&x, 0, 1);
	send_msg(&x, 0, 0, 1);
	expect_msg(&x, 0, 0, 1);
	cr_assert_eq(ibv_query_qp(h, &qa, IBV_QP_STATE, &qi), 0, "%s", hcasim_last_error());
	cr_assert_eq(qa.qp_state, IBV_QPS_RTR);
	cr_assert_eq(qi.qp_context, &tag);
	oa.qp_num = h->qp_num;
	oa.xrcd = x2;
	cr_assert_eq(ibv_destroy_qp(h), 0, "%s", hcasim_last_error());
	EXPECT_NULL_ERR(ibv_open_qp(ctx2, &oa), EINVAL); /* the last handle took the QP */
	EXPECT_MSG("qp_num");

	x.tgt = xrc_tgt(x.b.ctx, x.xrcd);
	cr_assert_eq(ibv_destroy_srq(x.srq[0]), 0);
	x.srq[0] = xrc_srq(x.b.ctx, x.b.pd, x.xrcd, x.b.cq);
	cr_assert_eq(ibv_close_xrcd(x2), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_close_xrcd(x1), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_close_device(ctx2), 0);
	xrc_close(&x);
	close(fd);
	unlink(path);
}

/* ibv_open_qp's checks, rdma-core's (comp_mask) then the kernel's (an XRC_RECV type, a domain
 * of this context, a QP of that domain): each refused with its errno and a message, nothing
 * opened; a handle opened in the creator's own context is closed without the QP. */
Test(xrc, open_qp_refuses_what_the_kernel_refuses)
{
	struct xrc x;
	struct ibv_xrcd *other;
	struct ibv_qp *h;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_qp_open_attr oa = { .comp_mask = OPEN_NEED, .qp_type = IBV_QPT_XRC_RECV };

	xrc_open(&x);
	other = open_xrcd(x.b.ctx, -1, 0);
	oa.qp_num = x.tgt->qp_num;
	oa.xrcd = other; /* the QP is in x.xrcd */
	EXPECT_NULL_ERR(ibv_open_qp(x.b.ctx, &oa), EINVAL);
	EXPECT_MSG("not an XRC_RECV QP of this XRC domain");
	oa.xrcd = x.xrcd;
	oa.qp_num = 0xfffffe; /* no such QP */
	EXPECT_NULL_ERR(ibv_open_qp(x.b.ctx, &oa), EINVAL);
	oa.qp_num = x.tgt->qp_num;
	oa.qp_type = IBV_QPT_RC;
	EXPECT_NULL_ERR(ibv_open_qp(x.b.ctx, &oa), EINVAL);
	EXPECT_MSG("qp_type");
	oa.qp_type = IBV_QPT_XRC_RECV;
	EXPECT_NULL_ERR(ibv_open_qp(x.a.ctx, &oa), EINVAL); /* a domain of another context */
	EXPECT_MSG("xrcd");
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_TYPE;
	EXPECT_NULL_ERR(ibv_open_qp(x.b.ctx, &oa), EINVAL);
	EXPECT_MSG("comp_mask");
	oa.comp_mask = OPEN_NEED | IBV_QP_OPEN_ATTR_RESERVED;
	EXPECT_NULL_ERR(ibv_open_qp(x.b.ctx, &oa), EOPNOTSUPP);
	EXPECT_NULL_ERR(ibv_open_qp(x.b.ctx, NULL), EINVAL);

	oa.comp_mask = OPEN_NEED; /* without IBV_QP_OPEN_ATTR_CONTEXT: no qp_context */
	oa.qp_context = &oa;
	h = ibv_open_qp(x.b.ctx, &oa);
	cr_assert_not_null(h, "%s", hcasim_last_error());
	cr_assert_null(h->qp_context);
	cr_assert_eq(ibv_destroy_qp(h), 0);
	EXPECT_RC_ERR(ibv_destroy_qp(h), EINVAL); /* closed */
	cr_assert_eq(ibv_query_qp(x.tgt, &qa, IBV_QP_STATE, &qi), 0, "the QP is still there: %s",
		     hcasim_last_error());
	cr_assert_eq(ibv_close_xrcd(other), 0);
	xrc_close(&x);
}
