/* Data path through the verbs API between the two simulated HCAs: every operation and QP type,
 * byte-exact remote memory, completion fields checked field by field. */
#include "testbench/tb.h"
#include "model/hw/hca_hw.h"
#include "model/pkt.h"
#include "sim/pcap.h"
#include "sim/pcie_dev.h"

#include <criterion/criterion.h>
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
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
 * trying after each min_rnr_timer delay, and the message arrives once a receive is there. A
 * 64 KiB message is still being sent when its first RNR NAK comes back: the NAK counts all
 * the same (no local ACK timeout, whose retry_cnt would end it with RETRY_EXC_ERR). */
static void rnr_wait(uint32_t len)
{
	struct pair p;
	struct ibv_mr *src, *dst;
	struct ibv_wc wc;
	struct hcasim_qp_counters c;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024); /* min_rnr_timer 1 (10 us), rnr_retry 7 */
	src = tb_mr(&p.a, len);
	dst = tb_mr(&p.b, len);
	fill(src->addr, len, 5);
	post_send1(p.qa, src, len, 9);
	hcasim_run_for_ps(200000000); /* 200 us: about 20 RNR NAKs */
	cr_assert_eq(ibv_poll_cq(p.a.cq, 1, &wc), 0, "completed without a receive");
	cr_assert_eq(hcasim_qp_counters(1, p.qb->qp_num, &c), 0);
	cr_assert_geq(c.naks_sent, 12, "RNR NAKs sent: %llu", (unsigned long long)c.naks_sent);
	cr_assert_leq(c.naks_sent, 21, "RNR NAKs sent: %llu", (unsigned long long)c.naks_sent);
	post_recv1(p.qb, dst, len, 10);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_lt(hcasim_now_ps(), 1000000000ull, "took a local ACK timeout or more");
	tb_poll(p.b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, len);
	cr_assert(!memcmp(src->addr, dst->addr, len));
	free_mr(src);
	free_mr(dst);
	pair_close(&p);
}

Test(datapath, rnr_retry_7_waits_until_a_receive_is_posted)
{
	rnr_wait(3000);
}

Test(datapath, rnr_nak_while_a_64k_send_is_still_being_sent_counts)
{
	rnr_wait(65536);
}

/* A fatal NAK naming a packet of a message the requester is still sending ends that WQE at
 * once with the NAK's status (REM_INV_REQ_ERR: receive buffer too small), not after a local
 * ACK timeout; the WQE behind it is flushed. */
Test(datapath, fatal_nak_while_a_64k_send_is_still_being_sent_ends_it)
{
	struct pair p;
	struct ibv_mr *src, *dst;
	struct ibv_wc wc;
	uint64_t t0 = hcasim_now_ps();

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	src = tb_mr(&p.a, 65536);
	dst = tb_mr(&p.b, 1024);
	post_recv1(p.qb, dst, 1024, 1);
	post_send1(p.qa, src, 65536, 2);
	post_send1(p.qa, src, 64, 3);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_REM_INV_REQ_ERR, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 2);
	cr_assert_lt(hcasim_now_ps() - t0, 1000000000ull, "took a local ACK timeout or more");
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc.wr_id, 3);
	tb_poll(p.b.cq, &wc, 1);
	/* The responder's receive ends too, as on a short SEND (class C error on RC). */
	cr_assert_eq(wc.status, IBV_WC_REM_INV_REQ_ERR, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 1);
	free_mr(src);
	free_mr(dst);
	pair_close(&p);
}

/* Every 20th frame from A is lost: each loss inside a 64 KiB SEND earns a sequence NAK while
 * the message is still being sent, and the requester goes back to the lost packet at once. */
Test(datapath, sequence_nak_while_a_64k_send_is_still_being_sent_resends_at_once)
{
	struct pair p;
	struct ibv_mr *src, *dst;
	struct ibv_wc wc;
	struct hcasim_faults f = { .drop_every = 20 };
	uint64_t n[5], t0;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	src = tb_mr(&p.a, 65536);
	dst = tb_mr(&p.b, 65536);
	fill(src->addr, 65536, 3);
	post_recv1(p.qb, dst, 65536, 1);
	cr_assert_eq(hcasim_link_faults(0, 0, &f), 0, "%s", hcasim_last_error());
	t0 = hcasim_now_ps();
	post_send1(p.qa, src, 65536, 2);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_lt(hcasim_now_ps() - t0, 1000000000ull, "took a local ACK timeout or more");
	cr_assert_eq(hcasim_link_fault_counts(0, 0, n), 0);
	cr_assert_geq(n[0], 3, "frames dropped: %llu", (unsigned long long)n[0]);
	tb_poll(p.b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 65536);
	cr_assert(!memcmp(src->addr, dst->addr, 65536));
	free_mr(src);
	free_mr(dst);
	pair_close(&p);
}

/* Every 23rd READ response from B is lost: a 64 KiB READ (64 responses) could never arrive
 * whole, so after each loss the requester asks again for the rest only, from the first
 * missing response (IBA 9.7.5.1.6), and the data ends byte-exact. */
Test(datapath, read_with_lost_responses_resumes_from_the_first_missing_one)
{
	struct pair p;
	struct ibv_mr *la, *rb;
	struct ibv_wc wc;
	struct hcasim_faults f = { .drop_every = 23 };
	uint64_t n[5], t0;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	la = tb_mr(&p.a, 65536);
	rb = tb_mr(&p.b, 65536);
	fill(rb->addr, 65536, 8);
	cr_assert_eq(hcasim_link_faults(0, 1, &f), 0, "%s", hcasim_last_error());
	t0 = hcasim_now_ps();
	{
		struct ibv_sge s = { (uintptr_t)la->addr, 65536, la->lkey };
		struct ibv_send_wr w = { .wr_id = 4, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_READ,
					 .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		w.wr.rdma.remote_addr = (uintptr_t)rb->addr;
		w.wr.rdma.rkey = rb->rkey;
		cr_assert_eq(ibv_post_send(p.qa, &w, &bad), 0, "%s", hcasim_last_error());
	}
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.byte_len, 65536);
	cr_assert(!memcmp(la->addr, rb->addr, 65536), "READ data differs");
	cr_assert_eq(hcasim_link_fault_counts(0, 1, n), 0);
	cr_assert_geq(n[0], 3, "responses dropped: %llu", (unsigned long long)n[0]);
	cr_assert_lt(hcasim_now_ps() - t0, 1000000000ull, "took a local ACK timeout or more");
	free_mr(la);
	free_mr(rb);
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

/* Doorbells naming no QP, a QP in RESET, or an index that runs past the ring are ignored
 * (a posted write cannot fail) and counted; the device keeps working. */
Test(datapath, bad_doorbells_are_ignored_and_counted)
{
	struct pair p;
	struct sim_pcie_fn *fns[SIM_PCIE_MAX_FNS];
	struct hcasim_dev_counters c0, c1;
	struct ibv_mr *src, *dst;
	struct ibv_qp *reset_qp;
	struct ibv_wc wc;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	reset_qp = tb_create_qp(&p.a, IBV_QPT_RC);
	cr_assert_geq(sim_pcie_enumerate(fns, SIM_PCIE_MAX_FNS), 1);
	cr_assert_eq(hcasim_dev_counters(0, &c0), 0);
	sim_pcie_mmio_write64(fns[0], HCA_REGION_UAR + HCA_UAR_SQ_DB, HCA_UAR_DB(0x777777, 1));
	sim_pcie_mmio_write64(fns[0], HCA_REGION_UAR + HCA_UAR_SQ_DB,
			      HCA_UAR_DB(reset_qp->qp_num, 1));
	sim_pcie_mmio_write64(fns[0], HCA_REGION_UAR + HCA_UAR_SQ_DB,
			      HCA_UAR_DB(p.qa->qp_num, 0x4000)); /* far beyond a 4-entry ring */
	sim_pcie_mmio_write64(fns[0], HCA_REGION_UAR + HCA_UAR_CQ_DB, HCA_UAR_DB(0x5555, 0));
	sim_pcie_mmio_write64(fns[0], HCA_REGION_UAR + 0x800, 1); /* no register there */
	hcasim_run_for_ps(1000000);
	cr_assert_eq(hcasim_dev_counters(0, &c1), 0);
	cr_assert_eq(c1.bad_doorbells - c0.bad_doorbells, 5, "counted %llu",
		     (unsigned long long)(c1.bad_doorbells - c0.bad_doorbells));
	src = tb_mr(&p.a, 256);
	dst = tb_mr(&p.b, 256);
	post_recv1(p.qb, dst, 256, 1);
	post_send1(p.qa, src, 256, 2);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "the QP still works after the bad doorbell");
	free_mr(src);
	free_mr(dst);
	cr_assert_eq(ibv_destroy_qp(reset_qp), 0);
	pair_close(&p);
}

/* Two QPs with a multi-packet WRITE each, posted together: the send arbiter serves them round
 * robin, one packet at a time (the capture shows the destination QPs alternating), and the
 * capture is switched on from the configuration (link.pcap). */
Test(datapath, arbiter_interleaves_qps_packet_by_packet)
{
	char prefix[] = "/tmp/hcasim-rr-XXXXXX", path[64];
	struct tb_dev a, b;
	struct ibv_qp *qa[2], *qb[2];
	struct ibv_mr *src, *dst;
	struct sim_pcap_reader *r;
	struct sim_pcap_rec rec;
	struct ibv_wc wc[2];
	uint32_t order[8];
	int n = 0, fd = mkstemp(prefix);

	cr_assert(fd >= 0);
	close(fd);
	unlink(prefix);
	tb_config("link.pcap", prefix);
	tb_open(&a, 0);
	tb_open(&b, 1);
	src = tb_mr(&a, 16384);
	dst = tb_mr(&b, 2 * 16384);
	for (int i = 0; i < 2; i++) {
		qa[i] = tb_create_qp(&a, IBV_QPT_RC);
		qb[i] = tb_create_qp(&b, IBV_QPT_RC);
	}
	for (int i = 0; i < 2; i++) {
		tb_connect(&a, qa[i], &b, qb[i]->qp_num, IBV_MTU_4096);
		tb_connect(&b, qb[i], &a, qa[i]->qp_num, IBV_MTU_4096);
	}
	for (int i = 0; i < 2; i++) {
		struct ibv_sge s = { (uintptr_t)src->addr, 16384, src->lkey };
		struct ibv_send_wr w = { .wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		w.wr.rdma.remote_addr = (uintptr_t)dst->addr + (uint64_t)i * 16384;
		w.wr.rdma.rkey = dst->rkey;
		cr_assert_eq(ibv_post_send(qa[i], &w, &bad), 0, "%s", hcasim_last_error());
	}
	tb_poll(a.cq, wc, 2);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(ibv_destroy_qp(qa[i]), 0);
		cr_assert_eq(ibv_destroy_qp(qb[i]), 0);
	}
	free_mr(src);
	free_mr(dst);
	tb_close(&a);
	tb_close(&b);
	hcasim_shutdown(); /* closes the capture */
	snprintf(path, sizeof(path), "%s.link0.pcap", prefix);
	cr_assert_eq(sim_pcap_reader_open(&r, path), 0, "no capture at %s", path);
	while (n < 8 && sim_pcap_reader_next(r, &rec) == 1) {
		struct hm_pkt pk;

		cr_assert_eq(hm_pkt_parse(HM_LL_IB, rec.data, rec.len, &pk), 0);
		if (pk.opcode >= HM_OP_WRITE_FIRST && pk.opcode <= HM_OP_WRITE_ONLY)
			order[n++] = pk.dqpn;
	}
	sim_pcap_reader_close(r);
	unlink(path);
	cr_assert_eq(n, 8, "8 WRITE packets captured, got %d", n);
	/* The second QP's first packet comes before the first QP's last one (a FIFO arbiter
	 * would send all of one QP first)... */
	{
		int first_b = -1, last_a = -1;

		for (int i = 0; i < 8; i++) {
			if (order[i] != order[0] && first_b < 0)
				first_b = i;
			if (order[i] == order[0])
				last_a = i;
		}
		cr_assert(first_b >= 0 && first_b < last_a, "no interleaving: first of QP 2 at %d, "
			  "last of QP 1 at %d", first_b, last_a);
	}
	/* ...and a QP sends twice in a row only while the other has not started or has finished. */
	for (int i = 1; i < 8; i++) {
		bool other_before = false, other_after = false;

		if (order[i] != order[i - 1])
			continue;
		for (int j = 0; j < i - 1; j++)
			other_before |= order[j] != order[i];
		for (int j = i + 1; j < 8; j++)
			other_after |= order[j] != order[i];
		cr_assert(!(other_before && other_after),
			  "QP 0x%x sent packets %d and %d in a row while the other QP had work",
			  order[i], i - 1, i);
	}
}

/* An RDMA WRITE with immediate that finds no receive WQE earns an RNR NAK before it has any
 * effect; once a receive is posted the retry succeeds (it used to be refused as an invalid
 * request because the first attempt had left the message half done). */
Test(datapath, rnr_on_write_with_imm_recovers_when_a_receive_is_posted)
{
	struct pair p;
	struct ibv_mr *src, *dst, *rb;
	struct ibv_sge s;
	struct ibv_send_wr w = { 0 }, *bad;
	struct ibv_wc wc;

	pair_open(&p, IBV_QPT_RC, IBV_MTU_1024);
	src = tb_mr(&p.a, 9000);
	dst = tb_mr(&p.b, 9000);
	rb = tb_mr(&p.b, 64);
	fill(src->addr, 9000, 7);
	s = (struct ibv_sge){ (uintptr_t)src->addr, 9000, src->lkey };
	w.wr_id = 5;
	w.sg_list = &s;
	w.num_sge = 1;
	w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	w.send_flags = IBV_SEND_SIGNALED;
	w.imm_data = htobe32(0xabcdef01);
	w.wr.rdma.remote_addr = (uintptr_t)dst->addr;
	w.wr.rdma.rkey = dst->rkey;
	cr_assert_eq(ibv_post_send(p.qa, &w, &bad), 0, "%s", hcasim_last_error());
	hcasim_run_for_ps(100000000); /* several RNR NAKs */
	cr_assert_eq(ibv_poll_cq(p.a.cq, 1, &wc), 0);
	post_recv1(p.qb, rb, 64, 6);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	tb_poll(p.b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(wc.byte_len, 9000);
	cr_assert_eq(be32toh(wc.imm_data), 0xabcdef01);
	cr_assert(!memcmp(src->addr, dst->addr, 9000));
	free_mr(src);
	free_mr(dst);
	free_mr(rb);
	pair_close(&p);
}
