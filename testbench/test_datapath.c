/* Data path through the verbs API between the two simulated HCAs: every operation and QP type,
 * byte-exact remote memory, completion fields checked field by field. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct pair {
	struct tb_dev a, b;
	struct ibv_qp *qa, *qb;
};

static void pair_open(struct pair *p, enum ibv_qp_type type, enum ibv_mtu mtu)
{
	tb_open(&p->a, 0);
	tb_open(&p->b, 1);
	p->qa = tb_create_qp(&p->a, type);
	p->qb = tb_create_qp(&p->b, type);
	tb_connect(&p->a, p->qa, &p->b, p->qb->qp_num, mtu);
	tb_connect(&p->b, p->qb, &p->a, p->qa->qp_num, mtu);
}

static void pair_close(struct pair *p)
{
	cr_assert_eq(ibv_destroy_qp(p->qa), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(p->qb), 0, "%s", hcasim_last_error());
	tb_close(&p->a);
	tb_close(&p->b);
}

static void free_mr(struct ibv_mr *mr)
{
	void *buf = mr->addr;

	cr_assert_eq(ibv_dereg_mr(mr), 0, "%s", hcasim_last_error());
	free(buf);
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 8));
}

Test(datapath, rc_send_arrives_byte_exact_with_both_completions)
{
	struct pair p;
	struct ibv_mr *src, *dst;
	struct ibv_sge ss, rs;
	struct ibv_send_wr swr = { 0 }, *bs;
	struct ibv_recv_wr rwr = { 0 }, *br;
	struct ibv_wc wc;
	const size_t len = 5000;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	src = tb_mr(&p.a, len);
	dst = tb_mr(&p.b, 8192);
	fill(src->addr, len, 1);
	rs = (struct ibv_sge){ (uintptr_t)dst->addr, 8192, dst->lkey };
	rwr.wr_id = 77;
	rwr.sg_list = &rs;
	rwr.num_sge = 1;
	cr_assert_eq(ibv_post_recv(p.qb, &rwr, &br), 0, "%s", hcasim_last_error());
	ss = (struct ibv_sge){ (uintptr_t)src->addr, (uint32_t)len, src->lkey };
	swr.wr_id = 42;
	swr.sg_list = &ss;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	cr_assert_eq(ibv_post_send(p.qa, &swr, &bs), 0, "%s", hcasim_last_error());
	tb_poll(p.b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "recv status %s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 77);
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.byte_len, len);
	cr_assert_eq(wc.qp_num, p.qb->qp_num);
	cr_assert_eq(wc.src_qp, p.qa->qp_num);
	cr_assert_eq(wc.slid, p.a.port.lid);
	cr_assert_eq(wc.wc_flags, 0);
	cr_assert(!memcmp(src->addr, dst->addr, len), "payload differs");
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "send status %s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 42);
	cr_assert_eq(wc.opcode, IBV_WC_SEND);
	cr_assert_eq(wc.qp_num, p.qa->qp_num);
	free_mr(src);
	free_mr(dst);
	pair_close(&p);
}

Test(datapath, rc_write_and_read_move_bytes_exactly)
{
	struct pair p;
	struct ibv_mr *la, *rb;
	struct ibv_sge s;
	struct ibv_send_wr w = { 0 }, *bad;
	struct ibv_wc wc;
	const size_t len = 70000;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_4096);
	la = tb_mr(&p.a, 2 * len);
	rb = tb_mr(&p.b, len);
	fill(la->addr, len, 3);
	s = (struct ibv_sge){ (uintptr_t)la->addr, (uint32_t)len, la->lkey };
	w.wr_id = 1;
	w.sg_list = &s;
	w.num_sge = 1;
	w.opcode = IBV_WR_RDMA_WRITE;
	w.send_flags = IBV_SEND_SIGNALED;
	w.wr.rdma.remote_addr = (uintptr_t)rb->addr;
	w.wr.rdma.rkey = rb->rkey;
	cr_assert_eq(ibv_post_send(p.qa, &w, &bad), 0, "%s", hcasim_last_error());
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_WRITE);
	cr_assert(!memcmp(la->addr, rb->addr, len), "WRITE payload differs");
	/* Read it back into the second half. */
	s.addr = (uintptr_t)la->addr + len;
	w.wr_id = 2;
	w.opcode = IBV_WR_RDMA_READ;
	cr_assert_eq(ibv_post_send(p.qa, &w, &bad), 0, "%s", hcasim_last_error());
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_READ);
	cr_assert_eq(wc.wr_id, 2);
	cr_assert_eq(wc.byte_len, len);
	cr_assert(!memcmp(la->addr, (uint8_t *)la->addr + len, len), "READ payload differs");
	free_mr(la);
	free_mr(rb);
	pair_close(&p);
}

static void post_send1(struct ibv_qp *qp, struct ibv_mr *mr, uint32_t len, uint64_t id)
{
	struct ibv_sge s = { (uintptr_t)mr->addr, len, mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0, "%s", hcasim_last_error());
}

static void post_recv1(struct ibv_qp *qp, struct ibv_mr *mr, uint32_t len, uint64_t id)
{
	struct ibv_sge s = { (uintptr_t)mr->addr, len, mr->lkey };
	struct ibv_recv_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

	cr_assert_eq(ibv_post_recv(qp, &w, &bad), 0, "%s", hcasim_last_error());
}

/* A SEND before the receive is posted earns RNR NAKs; with rnr_retry 7 the requester keeps
 * trying after each min_rnr_timer delay, and the message arrives once a receive is there. */
Test(datapath, rnr_retry_7_waits_until_a_receive_is_posted)
{
	struct pair p;
	struct ibv_mr *src, *dst;
	struct ibv_wc wc;
	struct hcasim_qp_counters c;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024); /* min_rnr_timer 1 (10 us), rnr_retry 7 */
	src = tb_mr(&p.a, 3000);
	dst = tb_mr(&p.b, 3000);
	fill(src->addr, 3000, 5);
	post_send1(p.qa, src, 3000, 9);
	hcasim_run_for_ps(200000000); /* 200 us: about 20 RNR NAKs */
	cr_assert_eq(ibv_poll_cq(p.a.cq, 1, &wc), 0, "completed without a receive");
	cr_assert_eq(hcasim_qp_counters(1, p.qb->qp_num, &c), 0);
	cr_assert_geq(c.naks_sent, 15, "RNR NAKs sent: %llu", (unsigned long long)c.naks_sent);
	cr_assert_leq(c.naks_sent, 21, "RNR NAKs sent: %llu", (unsigned long long)c.naks_sent);
	post_recv1(p.qb, dst, 3000, 10);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	tb_poll(p.b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 3000);
	cr_assert(!memcmp(src->addr, dst->addr, 3000));
	free_mr(src);
	free_mr(dst);
	pair_close(&p);
}

Test(datapath, rnr_retry_exhausted_completes_with_rnr_retry_exc_err)
{
	struct pair p;
	struct ibv_mr *src, *dst;
	struct ibv_qp_attr a = { .rnr_retry = 2 };
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc;
	struct hcasim_qp_counters c;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	dst = tb_mr(&p.b, 64);
	/* RTS -> RTS cannot change rnr_retry; go through SQD->SQD (RC allows it there). */
	a.qp_state = IBV_QPS_SQD;
	cr_assert_eq(ibv_modify_qp(p.qa, &a, IBV_QP_STATE), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_modify_qp(p.qa, &a, IBV_QP_RNR_RETRY), 0, "%s", hcasim_last_error());
	a.qp_state = IBV_QPS_RTS;
	cr_assert_eq(ibv_modify_qp(p.qa, &a, IBV_QP_STATE), 0, "%s", hcasim_last_error());
	src = tb_mr(&p.a, 64);
	post_send1(p.qa, src, 64, 1);
	post_send1(p.qa, src, 64, 2);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_RNR_RETRY_EXC_ERR, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 1);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc.wr_id, 2);
	cr_assert_eq(hcasim_qp_counters(1, p.qb->qp_num, &c), 0);
	cr_assert_eq(c.naks_sent, 3, "rnr_retry 2: three RNR NAKs, got %llu",
		     (unsigned long long)c.naks_sent);
	cr_assert_eq(ibv_query_qp(p.qa, &q, IBV_QP_STATE, &qi), 0);
	cr_assert_eq(q.qp_state, IBV_QPS_ERR);
	free_mr(src);
	free_mr(dst);
	pair_close(&p);
}

/* A peer that never answers (its QP in RESET drops everything): the requester retransmits
 * retry_cnt times, one local ACK timeout (4.096 us * 2^timeout) apart, then completes with
 * RETRY_EXC_ERR after retry_cnt + 1 timeouts. */
Test(datapath, silent_peer_exhausts_retry_cnt_after_retry_cnt_plus_1_timeouts)
{
	struct pair p;
	struct ibv_mr *src;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;
	struct hcasim_qp_counters c;
	uint64_t t0, dt, timeout_ps = 4096000ull << 14; /* tb_connect: timeout 14, retry_cnt 7 */

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	cr_assert_eq(ibv_modify_qp(p.qb, &a, IBV_QP_STATE), 0);
	src = tb_mr(&p.a, 64);
	t0 = hcasim_now_ps();
	post_send1(p.qa, src, 64, 1);
	tb_poll(p.a.cq, &wc, 1);
	dt = hcasim_now_ps() - t0;
	cr_assert_eq(wc.status, IBV_WC_RETRY_EXC_ERR, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(hcasim_qp_counters(0, p.qa->qp_num, &c), 0);
	cr_assert_eq(c.tx_pkts, 8, "1 transmission + 7 retries, got %llu",
		     (unsigned long long)c.tx_pkts);
	/* 8 timeouts, plus the post, the packet's way out and the poll granularity. */
	cr_assert(dt >= 8 * timeout_ps && dt < 8 * timeout_ps + 20000000,
		  "completed after %llu ps, 8 timeouts are %llu ps", (unsigned long long)dt,
		  (unsigned long long)(8 * timeout_ps));
	free_mr(src);
	pair_close(&p);
}

/* RTS -> SQD with en_sqd_async_notify while a 1 MiB SEND is on the wire: the started WQE
 * finishes, and once it is acknowledged the QP is drained and IBV_EVENT_SQ_DRAINED arrives
 * (element.qp). A WQE posted in SQD waits, and goes out after SQD -> RTS. */
Test(datapath, sqd_drains_raises_sq_drained_and_holds_new_wqes)
{
	struct pair p;
	struct ibv_mr *src, *dst;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1 };
	struct ibv_async_event ev;
	struct ibv_wc wc;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	src = tb_mr(&p.a, 1 << 20);
	dst = tb_mr(&p.b, 1 << 20);
	post_recv1(p.qb, dst, 1 << 20, 1);
	post_recv1(p.qb, dst, 4096, 2);
	post_send1(p.qa, src, 1 << 20, 10);
	hcasim_run_for_ps(5000000); /* 5 us: the 85 us message is on the wire */
	cr_assert_eq(ibv_modify_qp(p.qa, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0, "%s",
		     hcasim_last_error());
	cr_assert_eq(ibv_poll_cq(p.a.cq, 1, &wc), 0, "completed before SQD: the test is moot");
	cr_assert_eq(ibv_get_async_event(p.a.ctx, &ev), 0, "%s", hcasim_last_error());
	cr_assert_eq(ev.event_type, IBV_EVENT_SQ_DRAINED, "%s", ibv_event_type_str(ev.event_type));
	cr_assert_eq(ev.element.qp, p.qa);
	ibv_ack_async_event(&ev);
	/* Drained means the WQE in flight has completed. */
	cr_assert_eq(ibv_poll_cq(p.a.cq, 1, &wc), 1, "SQ_DRAINED before the WQE completed");
	cr_assert_eq(wc.wr_id, 10);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	post_send1(p.qa, src, 4096, 11);
	hcasim_run_for_ps(100000000);
	cr_assert_eq(ibv_poll_cq(p.a.cq, 1, &wc), 0, "a WQE started in SQD");
	a.qp_state = IBV_QPS_RTS;
	cr_assert_eq(ibv_modify_qp(p.qa, &a, IBV_QP_STATE), 0, "%s", hcasim_last_error());
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.wr_id, 11);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	tb_poll(p.b.cq, &wc, 1);
	tb_poll(p.b.cq, &wc, 1);
	free_mr(src);
	free_mr(dst);
	pair_close(&p);
}
