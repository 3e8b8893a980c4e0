/* hcasimdv: direct verbs (driver/hcasimdv.h, docs/hcasimdv.md). hcasimdv_init_obj describes
 * the rings of a QP, a CQ and an SRQ as the sizing rules of model/hw/hca_hw.h give them; a
 * SEND WQE built by hand against docs/device-interface.md, rung through the UAR (doorbell and
 * BlueFlame), completes and delivers its data; malformed hand-built WQEs end in error
 * completions from the device model itself (no driver check is on that path). */
#include "model/hw/hca_hw.h"
#include "testbench/tb.h"

#include <criterion/criterion.h>

#include "driver/hcasimdv.h"
#include "testbench/tb_expect.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BYTES 4096

static struct hcasimdv_qp dv_qp(struct ibv_qp *qp)
{
	struct hcasimdv_qp out;
	struct hcasimdv_obj o = { .qp = { qp, &out } };

	cr_assert_eq(hcasimdv_init_obj(&o, HCASIMDV_OBJ_QP), 0, "%s", hcasim_last_error());
	return out;
}

Test(hcasimdv, init_obj_describes_qp_cq_and_srq_and_refuses_bad_input)
{
	struct tb_dev t;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 8,
						.max_send_sge = 3, .max_recv_sge = 2,
						.max_inline_data = 100 } };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 10, .max_sge = 3 } };
	struct hcasimdv_qp q, q2;
	struct hcasimdv_cq c;
	struct hcasimdv_srq s;
	struct hcasimdv_obj o;
	struct ibv_qp *qp;
	struct ibv_srq *srq;

	tb_open(&t, 0);
	ia.send_cq = ia.recv_cq = t.cq;
	qp = ibv_create_qp(t.pd, &ia);
	cr_assert_not_null(qp, "%s", hcasim_last_error());
	srq = ibv_create_srq(t.pd, &sa);
	cr_assert_not_null(srq, "%s", hcasim_last_error());
	o = (struct hcasimdv_obj){ .qp = { qp, &q }, .cq = { t.cq, &c }, .srq = { srq, &s } };
	EXPECT_OK(hcasimdv_init_obj(&o, HCASIMDV_OBJ_QP | HCASIMDV_OBJ_CQ | HCASIMDV_OBJ_SRQ));

	cr_assert_eq(q.qpn, qp->qp_num);
	cr_assert_eq(q.qp_type, (uint32_t)IBV_QPT_RC);
	cr_assert_not_null(q.dbrec);
	cr_assert_not_null(q.sq.buf);
	cr_assert_eq(q.sq.wqe_cnt, hca_wq_entries(16));
	cr_assert_eq(q.sq.stride, hca_sq_stride(3, 100), "sq stride %u", q.sq.stride);
	cr_assert_eq(q.sq.head, 0u);
	cr_assert_eq(q.sq.max_sge, ia.cap.max_send_sge);
	cr_assert_eq(q.sq.max_inline, ia.cap.max_inline_data);
	cr_assert_eq(q.rq.wqe_cnt, hca_wq_entries(8));
	cr_assert_eq(q.rq.stride, hca_rq_stride(2));
	cr_assert_eq(q.rq.max_sge, ia.cap.max_recv_sge);
	cr_assert_eq((uint8_t *)q.rq.buf, (uint8_t *)q.sq.buf + q.sq.wqe_cnt * q.sq.stride,
		     "the receive ring follows the send ring");
	cr_assert_eq(q.uar.context, t.ctx);
	{
		/* the UAR page of the QP's context: its user context's, never the owner's page 0 */
		struct hcasimdv_context hc;

		EXPECT_OK(hcasimdv_query_context(t.ctx, &hc));
		cr_assert_gt(hc.uid, 0u);
		cr_assert_eq(q.uar.offset, HCA_REGION_UAR + hc.uid * HCA_UAR_PAGE_BYTES);
		cr_assert_eq(hc.uar.offset, q.uar.offset);
	}
	cr_assert_eq(q.uar.size, HCA_UAR_PAGE_BYTES);
	cr_assert_eq(q.uar.bf_offset, (uint32_t)HCA_UAR_BF);
	cr_assert_eq(q.uar.bf_size, HCA_UAR_BF_BYTES);
	cr_assert_eq(q.comp_mask, 0u);

	cr_assert_eq(c.cqe_cnt, hca_cq_ring_entries((uint32_t)t.cq->cqe), "cqe_cnt %u", c.cqe_cnt);
	cr_assert_eq(c.cqe_size, HCA_CQE_BYTES);
	cr_assert_eq(c.ci, 0u);
	cr_assert_not_null(c.buf);
	cr_assert_not_null(c.dbrec);

	cr_assert_eq(s.wq.wqe_cnt, hca_wq_entries(10 + 1));
	cr_assert_eq(s.wq.stride, hca_rq_stride(3));
	cr_assert_eq(s.wq.max_sge, sa.attr.max_sge);
	cr_assert_eq(s.wq.head, 0u);
	{
		uint32_t srqn;

		cr_assert_eq(ibv_get_srq_num(srq, &srqn), 0);
		cr_assert_eq(s.srqn, srqn);
	}

	/* Bad input: EINVAL, nothing written. */
	memset(&q2, 0xab, sizeof(q2));
	o = (struct hcasimdv_obj){ .qp = { qp, &q2 } };
	EXPECT_RC_ERR(hcasimdv_init_obj(&o, 1u << 5), EINVAL);
	EXPECT_MSG("obj_type");
	EXPECT_RC_ERR(hcasimdv_init_obj(NULL, HCASIMDV_OBJ_QP), EINVAL);
	o.cq.in = (struct ibv_cq *)qp; /* a QP where a CQ belongs */
	o.cq.out = &c;
	EXPECT_RC_ERR(hcasimdv_init_obj(&o, HCASIMDV_OBJ_QP | HCASIMDV_OBJ_CQ), EINVAL);
	EXPECT_MSG("cq.in");
	o.qp.out = NULL;
	EXPECT_RC_ERR(hcasimdv_init_obj(&o, HCASIMDV_OBJ_QP), EINVAL);
	EXPECT_MSG("qp.out");
	for (size_t i = 0; i < sizeof(q2); i++)
		cr_assert_eq(((uint8_t *)&q2)[i], 0xab, "a refused call wrote byte %zu", i);

	/* UAR writes outside the page, or misaligned, or a BlueFlame of a wrong size. */
	EXPECT_RC_ERR(hcasimdv_uar_write64(&q.uar, 4096, 0), EINVAL);
	EXPECT_MSG("offset");
	EXPECT_RC_ERR(hcasimdv_uar_write64(&q.uar, 4, 0), EINVAL);
	EXPECT_RC_ERR(hcasimdv_uar_write64(NULL, 0, 0), EINVAL);
	{
		uint8_t bf[320] = { 0 };
		struct hcasimdv_uar bad = q.uar;

		EXPECT_RC_ERR(hcasimdv_uar_write_bf(&q.uar, bf, 320), EINVAL);
		EXPECT_RC_ERR(hcasimdv_uar_write_bf(&q.uar, bf, 100), EINVAL);
		EXPECT_MSG("multiple of 64");
		bad.offset = 0; /* BAR0's registers are not a UAR page */
		EXPECT_RC_ERR(hcasimdv_uar_write64(&bad, 0, 0), EINVAL);
		EXPECT_MSG("uar.offset");
	}
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	o = (struct hcasimdv_obj){ .qp = { qp, &q2 } };
	EXPECT_RC_ERR(hcasimdv_init_obj(&o, HCASIMDV_OBJ_QP), EINVAL);
	EXPECT_MSG("not a live QP");
	tb_close(&t);
}

/* Write a SEND WQE (RC: control, zeroed second segment, one data segment) at slot idx. */
static uint8_t *hand_send(const struct hcasimdv_qp *q, uint32_t idx, uint64_t addr, uint32_t lkey,
			  uint32_t len)
{
	uint8_t *w = (uint8_t *)q->sq.buf + (size_t)(idx % q->sq.wqe_cnt) * q->sq.stride;
	struct hca_wqe_ctrl *c = (void *)w;
	struct hca_wqe_data *d = (void *)(w + HCA_WQE_BASE_BYTES);

	memset(w, 0, q->sq.stride);
	c->opcode = HCA_WQE_OP_SEND;
	c->flags = HCA_WQE_F_SIGNALED;
	c->num_sge = 1;
	c->wqe_index = (uint16_t)idx;
	d->addr = addr;
	d->lkey = lkey;
	d->length = len;
	return w;
}

static void expect_ok_wc(const struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_opcode op,
			 uint32_t qpn, uint32_t byte_len, const char *what)
{
	cr_assert_eq(wc->status, IBV_WC_SUCCESS, "%s: %s", what, ibv_wc_status_str(wc->status));
	cr_assert_eq(wc->wr_id, wr_id, "%s: wr_id %llu", what, (unsigned long long)wc->wr_id);
	cr_assert_eq(wc->opcode, op, "%s: opcode %d", what, wc->opcode);
	cr_assert_eq(wc->qp_num, qpn, "%s: qp_num", what);
	cr_assert_eq(wc->byte_len, byte_len, "%s: byte_len %u", what, wc->byte_len);
}

Test(hcasimdv, hand_built_send_completes_through_the_doorbell_and_blueflame)
{
	struct tb_pair p;
	struct hcasimdv_qp q;
	struct ibv_wc wc;
	uint8_t *src;

	tb_pair_open(&p, IBV_QPT_RC, BYTES, 9);
	src = p.src->addr;
	q = dv_qp(p.qa);
	tb_pair_post_recv(&p, 0, 1024, 71);
	tb_pair_post_recv(&p, 1024, 1024, 72);
	tb_pair_post_recv(&p, 2048, 1024, 73);

	/* 1: the WQE in the ring, the 64-bit send doorbell. */
	hand_send(&q, q.sq.head, (uintptr_t)src, p.src->lkey, 300);
	EXPECT_OK(hcasimdv_uar_write64(&q.uar, HCA_UAR_SQ_DB,
				       HCA_UAR_DB(q.qpn, (q.sq.head + 1) & 0xffff)));
	tb_poll(p.a.cq, &wc, 1);
	expect_ok_wc(&wc, 0, IBV_WC_SEND, q.qpn, 0, "hand-built SEND");
	tb_poll(p.b.cq, &wc, 1);
	expect_ok_wc(&wc, 71, IBV_WC_RECV, p.qb->qp_num, 300, "its receive");
	cr_assert_eq(memcmp(p.dst->addr, src, 300), 0, "the data of the hand-built SEND");

	/* 2: BlueFlame: doorbell word, 8 reserved bytes, the WQE's 80 used bytes (128 in all). */
	{
		uint8_t bf[128] = { 0 };
		uint64_t db = HCA_UAR_DB(q.qpn, (q.sq.head + 2) & 0xffff);
		uint8_t *w = hand_send(&q, q.sq.head + 1, (uintptr_t)src + 500, p.src->lkey, 700);

		memcpy(bf, &db, 8);
		memcpy(bf + 16, w, HCA_WQE_BASE_BYTES + HCA_SGE_BYTES);
		EXPECT_OK(hcasimdv_uar_write_bf(&q.uar, bf, sizeof(bf)));
	}
	tb_poll(p.a.cq, &wc, 1);
	expect_ok_wc(&wc, 0, IBV_WC_SEND, q.qpn, 0, "BlueFlame SEND");
	tb_poll(p.b.cq, &wc, 1);
	expect_ok_wc(&wc, 72, IBV_WC_RECV, p.qb->qp_num, 700, "its receive");
	cr_assert_eq(memcmp((uint8_t *)p.dst->addr + 1024, src + 500, 700), 0,
		     "the data of the BlueFlame SEND");

	/* 3: the driver took the count over: ibv_post_send goes on after them, wr_id its own. */
	{
		struct ibv_sge s = { (uintptr_t)src + 100, 64, p.src->lkey };
		struct ibv_send_wr w = { .wr_id = 555, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		cr_assert_eq(ibv_post_send(p.qa, &w, &bad), 0, "%s", hcasim_last_error());
		cr_assert_eq(dv_qp(p.qa).sq.head, q.sq.head + 3, "head after two by hand and one");
	}
	tb_poll(p.a.cq, &wc, 1);
	expect_ok_wc(&wc, 555, IBV_WC_SEND, q.qpn, 0, "ibv_post_send after hand-posted WQEs");
	tb_poll(p.b.cq, &wc, 1);
	expect_ok_wc(&wc, 73, IBV_WC_RECV, p.qb->qp_num, 64, "its receive");
	tb_pair_close(&p);
}

/* One malformed WQE per case, on a fresh connected RC pair: the device completes it in error
 * (docs/blocks/wqe_fetch.md, docs/blocks/mkey.md), the QP goes to ERR, the responder sees
 * nothing, and the simulation goes on. */
enum bad { BAD_OPCODE, BAD_OPCODE_FF, BAD_NUM_SGE, BAD_NUM_SGE_255, BAD_INLINE_LEN, BAD_LEN_PAST_MR,
	   BAD_LKEY, BAD_ATOMIC_LEN };

static void malformed(enum bad kind, enum ibv_wc_status want, uint32_t verr, const char *what)
{
	struct tb_pair p;
	struct hcasimdv_qp q;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc;
	struct hca_wqe_ctrl *c;
	struct hca_wqe_data *d;
	uint8_t *w;

	tb_pair_open(&p, IBV_QPT_RC, BYTES, 1);
	q = dv_qp(p.qa);
	tb_pair_post_recv(&p, 0, BYTES, 81);
	w = hand_send(&q, q.sq.head, (uintptr_t)p.src->addr, p.src->lkey, 64);
	c = (void *)w;
	d = (void *)(w + HCA_WQE_BASE_BYTES);
	switch (kind) {
	case BAD_OPCODE:
		c->opcode = 10; /* IBV_WR_TSO: not the device's */
		break;
	case BAD_OPCODE_FF:
		c->opcode = 0xff;
		break;
	case BAD_NUM_SGE: /* one more than the stride holds */
		c->num_sge = (uint8_t)((q.sq.stride - HCA_WQE_BASE_BYTES) / HCA_SGE_BYTES + 1);
		break;
	case BAD_NUM_SGE_255:
		c->num_sge = 255;
		break;
	case BAD_INLINE_LEN:
		c->flags |= HCA_WQE_F_INLINE;
		c->num_sge = 0;
		c->inline_len = 0x7fffffff;
		break;
	case BAD_LEN_PAST_MR:
		d->length = BYTES + 1;
		break;
	case BAD_LKEY:
		d->lkey = 0x00abcd00; /* no such memory key */
		break;
	case BAD_ATOMIC_LEN: {
		struct hca_wqe_rdma *r = (void *)(w + sizeof(*c));

		c->opcode = HCA_WQE_OP_ATOMIC_FETCH_ADD;
		r->remote_addr = (uintptr_t)p.dst->addr;
		r->rkey = p.dst->rkey;
		d->length = 4;
		break;
	}
	}
	EXPECT_OK(hcasimdv_uar_write64(&q.uar, HCA_UAR_SQ_DB,
				       HCA_UAR_DB(q.qpn, (q.sq.head + 1) & 0xffff)));
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, want, "%s: status %s, expected %s", what,
		     ibv_wc_status_str(wc.status), ibv_wc_status_str(want));
	cr_assert_eq(wc.vendor_err, verr, "%s: vendor_err %s, expected %s (model/hw/verr.def)",
		     what, hca_verr_name(wc.vendor_err), hca_verr_name(verr));
	cr_assert_eq(wc.qp_num, q.qpn, "%s: qp_num", what);
	cr_assert_eq(wc.wr_id, 0u, "%s: wr_id", what);
	cr_assert_null(hcasim_halted(), "%s: the simulation halted: %s", what, hcasim_halted());
	cr_assert_eq(ibv_query_qp(p.qa, &qa, IBV_QP_STATE, &qi), 0, "%s", hcasim_last_error());
	cr_assert_eq(qa.qp_state, IBV_QPS_ERR, "%s: QP state %d after the error", what,
		     qa.qp_state);
	hcasim_run_for_ps(100000000ull);
	cr_assert_eq(ibv_poll_cq(p.b.cq, 1, &wc), 0, "%s: the responder got something", what);
	tb_pair_close(&p);
}

Test(hcasimdv, malformed_hand_built_wqes_end_in_error_completions)
{
	malformed(BAD_OPCODE, IBV_WC_LOC_QP_OP_ERR, HCA_VERR_WQE_OPCODE, "opcode 10");
	malformed(BAD_OPCODE_FF, IBV_WC_LOC_QP_OP_ERR, HCA_VERR_WQE_OPCODE, "opcode 0xff");
	malformed(BAD_NUM_SGE, IBV_WC_LOC_QP_OP_ERR, HCA_VERR_WQE_NUM_SGE, "num_sge one past the stride");
	malformed(BAD_NUM_SGE_255, IBV_WC_LOC_QP_OP_ERR, HCA_VERR_WQE_NUM_SGE, "num_sge 255");
	malformed(BAD_INLINE_LEN, IBV_WC_LOC_QP_OP_ERR, HCA_VERR_WQE_INLINE_LEN, "inline_len past the stride");
	malformed(BAD_LEN_PAST_MR, IBV_WC_LOC_PROT_ERR, HCA_VERR_LKEY_BOUNDS, "length one past the MR");
	malformed(BAD_LKEY, IBV_WC_LOC_PROT_ERR, HCA_VERR_LKEY_INVALID, "lkey that does not exist");
	malformed(BAD_ATOMIC_LEN, IBV_WC_LOC_LEN_ERR, HCA_VERR_WQE_ATOMIC_LEN, "atomic of 4 bytes");
}

/* A UD SEND built by hand to p's peer at the head slot: hand_send's WQE with the UD segment
 * (address vector, QPN, Q_Key) filled in. Returns that segment. */
static struct hca_wqe_ud *hand_ud_send(const struct tb_pair *p, const struct hcasimdv_qp *q,
				       uint32_t len)
{
	struct hca_wqe_ud *u = (void *)(hand_send(q, q->sq.head, (uintptr_t)p->src->addr,
						  p->src->lkey, len) +
					sizeof(struct hca_wqe_ctrl));

	u->remote_qpn = p->qb->qp_num;
	u->remote_qkey = TB_QKEY;
	u->av.dlid = p->b.port.lid;
	u->av.port_num = 1;
	return u;
}

enum bad_av { AV_GOOD, AV_SL_16, AV_FLOW_LABEL_2_20, AV_QPN_2_24 };

/* One hand-built UD SEND whose address vector carries a field the headers cannot (hostile-
 * input issue: these aborted the simulator in the packet builder): the device completes it
 * with LOC_QP_OP_ERR before building any packet, the QP goes to SQE, nothing reaches the
 * peer, and a verbs SEND on another QP pair of the same hosts still goes through. */
static void ud_av(enum bad_av kind, const char *what)
{
	struct tb_pair p;
	struct hcasimdv_qp q;
	struct ibv_wc wc;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct hca_wqe_ud *u;

	tb_pair_open(&p, IBV_QPT_UD, BYTES, 3);
	q = dv_qp(p.qa);
	tb_pair_post_recv(&p, 0, BYTES, 91);
	u = hand_ud_send(&p, &q, 100);
	if (kind == AV_SL_16)
		u->av.sl = 16;
	else if (kind == AV_FLOW_LABEL_2_20)
		u->av.flow_label = 1u << 20;
	else if (kind == AV_QPN_2_24)
		u->remote_qpn = 1u << 24;
	EXPECT_OK(hcasimdv_uar_write64(&q.uar, HCA_UAR_SQ_DB,
				       HCA_UAR_DB(q.qpn, (q.sq.head + 1) & 0xffff)));
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_null(hcasim_halted(), "%s: the simulation halted: %s", what, hcasim_halted());
	if (kind == AV_GOOD) {
		expect_ok_wc(&wc, 0, IBV_WC_SEND, q.qpn, 0, what);
		tb_poll(p.b.cq, &wc, 1);
		expect_ok_wc(&wc, 91, IBV_WC_RECV, p.qb->qp_num, 100 + 40, "its receive");
		tb_pair_close(&p);
		return;
	}
	cr_assert_eq(wc.status, IBV_WC_LOC_QP_OP_ERR, "%s: status %s", what,
		     ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.vendor_err, HCA_VERR_WQE_UD_AV, "%s: vendor_err %s", what,
		     hca_verr_name(wc.vendor_err));
	cr_assert_eq(wc.qp_num, q.qpn, "%s: qp_num", what);
	cr_assert_eq(ibv_query_qp(p.qa, &qa, IBV_QP_STATE, &qi), 0, "%s", hcasim_last_error());
	cr_assert_eq(qa.qp_state, IBV_QPS_SQE, "%s: QP state %d", what, qa.qp_state);
	hcasim_run_for_ps(100000000ull);
	cr_assert_eq(ibv_poll_cq(p.b.cq, 1, &wc), 0, "%s: the peer got something", what);
	/* The bystander: a fresh UD pair on the same hosts. */
	{
		struct ibv_qp *xa = tb_create_qp(&p.a, IBV_QPT_UD), *xb = tb_create_qp(&p.b,
										      IBV_QPT_UD);
		struct ibv_ah_attr ah = { .dlid = p.b.port.lid, .port_num = 1 };
		struct ibv_ah *h;
		struct ibv_sge rs = { (uintptr_t)p.dst->addr, BYTES, p.dst->lkey };
		struct ibv_recv_wr r = { .wr_id = 7, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge ss = { (uintptr_t)p.src->addr, 64, p.src->lkey };
		struct ibv_send_wr s = { .wr_id = 8, .sg_list = &ss, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *sbad;

		tb_connect(&p.a, xa, &p.b, xb->qp_num, IBV_MTU_1024);
		tb_connect(&p.b, xb, &p.a, xa->qp_num, IBV_MTU_1024);
		h = ibv_create_ah(p.a.pd, &ah);
		cr_assert_not_null(h, "%s", hcasim_last_error());
		s.wr.ud.ah = h;
		s.wr.ud.remote_qpn = xb->qp_num;
		s.wr.ud.remote_qkey = TB_QKEY;
		cr_assert_eq(ibv_post_recv(xb, &r, &rbad), 0, "%s", hcasim_last_error());
		cr_assert_eq(ibv_post_send(xa, &s, &sbad), 0, "%s", hcasim_last_error());
		tb_poll(p.a.cq, &wc, 1);
		expect_ok_wc(&wc, 8, IBV_WC_SEND, xa->qp_num, 0, "the bystander's SEND");
		tb_poll(p.b.cq, &wc, 1);
		expect_ok_wc(&wc, 7, IBV_WC_RECV, xb->qp_num, 64 + 40, "the bystander's receive");
		cr_assert_eq(ibv_destroy_ah(h), 0);
		cr_assert_eq(ibv_destroy_qp(xa), 0);
		cr_assert_eq(ibv_destroy_qp(xb), 0);
	}
	tb_pair_close(&p);
}

Test(hcasimdv, ud_address_vectors_the_headers_cannot_carry_end_in_error_completions)
{
	ud_av(AV_GOOD, "a good hand-built UD SEND");
	ud_av(AV_SL_16, "SL 16");
	ud_av(AV_FLOW_LABEL_2_20, "flow label 2^20");
	ud_av(AV_QPN_2_24, "remote QPN 2^24");
}

/* A BlueFlame write that rings a WQE past a full send queue (hostile-input issue: it
 * overwrote the oldest WQE while the requester was still sending it, which then gathered past
 * the end of a heap buffer): the device takes nothing from it, refuses the doorbell and counts
 * it, and the WQEs already in the ring complete with their own data. The oldest is a 64 KiB
 * SEND, 64 packets; the BlueFlame WQE, an inline SEND of 16 bytes, comes while it is sent. */
Test(hcasimdv, blueflame_past_a_full_send_queue_is_refused_and_changes_nothing)
{
	struct tb_pair p;
	struct hcasimdv_qp q;
	struct hcasim_dev_counters before, after;
	struct ibv_wc wc;
	uint8_t bf[128] = { 0 }, *src;
	uint32_t n, big = 65536, len = 1500, slot = 65536;

	tb_pair_open(&p, IBV_QPT_RC, (size_t)slot * 4, 5);
	src = p.src->addr;
	q = dv_qp(p.qa);
	n = q.sq.wqe_cnt;
	cr_assert_leq(n, 4, "the test's receive ring holds 4");
	for (uint32_t i = 0; i < n; i++) {
		tb_pair_post_recv(&p, (size_t)i * slot, slot, 100 + i);
		hand_send(&q, q.sq.head + i, (uintptr_t)src + (size_t)i * slot, p.src->lkey,
			  i ? len : big);
	}
	EXPECT_OK(hcasimdv_uar_write64(&q.uar, HCA_UAR_SQ_DB,
				       HCA_UAR_DB(q.qpn, (q.sq.head + n) & 0xffff)));
	hcasim_run_for_ps(1500000); /* 1.5 us: the first SEND is being sent */
	cr_assert_eq(hcasim_dev_counters(0, &before), 0);
	{
		uint64_t db = HCA_UAR_DB(q.qpn, (q.sq.head + n + 1) & 0xffff);
		struct hca_wqe_ctrl *c = (void *)(bf + 16);

		memcpy(bf, &db, 8);
		c->opcode = HCA_WQE_OP_SEND;
		c->flags = HCA_WQE_F_SIGNALED | HCA_WQE_F_INLINE;
		c->inline_len = 16;
		memset(bf + 16 + HCA_WQE_BASE_BYTES, 0xee, 16);
		EXPECT_OK(hcasimdv_uar_write_bf(&q.uar, bf, sizeof(bf)));
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t l = i ? len : big;

		tb_poll(p.a.cq, &wc, 1);
		expect_ok_wc(&wc, 0, IBV_WC_SEND, q.qpn, 0, "a SEND of the full ring");
		tb_poll(p.b.cq, &wc, 1);
		expect_ok_wc(&wc, 100 + i, IBV_WC_RECV, p.qb->qp_num, l, "its receive");
		cr_assert_eq(memcmp((uint8_t *)p.dst->addr + (size_t)i * slot,
				    src + (size_t)i * slot, l),
			     0, "SEND %u arrived with other bytes", i);
	}
	cr_assert_eq(hcasim_dev_counters(0, &after), 0);
	cr_assert_eq(after.bad_doorbells, before.bad_doorbells + 1, "bad doorbells %llu -> %llu",
		     (unsigned long long)before.bad_doorbells,
		     (unsigned long long)after.bad_doorbells);
	hcasim_run_for_ps(100000000ull);
	cr_assert_eq(ibv_poll_cq(p.a.cq, 1, &wc), 0, "the refused WQE completed");
	cr_assert_null(hcasim_halted());
	tb_pair_close(&p);
}
