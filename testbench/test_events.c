/* Asynchronous events (IBA 11.6.3) provoked through the public interface and received with
 * ibv_get_async_event, with the right element, each acknowledged: port events around link
 * down/up windows and SM LID reassignment, affiliated QP errors on the responder, the
 * catastrophic work queue errors of a failed DMA read, and path migration. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define US 1000000ull /* ps */
#define MS 1000000000ull

/* The next async event of ctx within limit_ps of simulated time (false if none came). */
static bool next_event(struct ibv_context *ctx, uint64_t limit_ps, struct ibv_async_event *ev)
{
	uint64_t t0 = hcasim_now_ps();
	int fl = fcntl(ctx->async_fd, F_GETFL);

	cr_assert_eq(fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
	for (;;) {
		if (ibv_get_async_event(ctx, ev) == 0)
			return true;
		cr_assert_eq(errno, EAGAIN, "ibv_get_async_event: %s", hcasim_last_error());
		if (hcasim_now_ps() - t0 >= limit_ps)
			return false;
		hcasim_run_for_ps(US);
	}
}

/* Expect exactly the event type next (within limit_ps); returns it, acknowledged. */
static struct ibv_async_event expect_event(struct ibv_context *ctx, enum ibv_event_type type,
					   uint64_t limit_ps)
{
	struct ibv_async_event ev;

	cr_assert(next_event(ctx, limit_ps, &ev), "no %s within %" PRIu64 " ps",
		  ibv_event_type_str(type), limit_ps);
	cr_assert_eq(ev.event_type, type, "got %s, expected %s", ibv_event_type_str(ev.event_type),
		     ibv_event_type_str(type));
	ibv_ack_async_event(&ev);
	return ev;
}

static void expect_no_event(struct ibv_context *ctx, uint64_t for_ps)
{
	struct ibv_async_event ev;

	if (next_event(ctx, for_ps, &ev)) {
		ibv_ack_async_event(&ev);
		cr_assert_fail("unexpected %s", ibv_event_type_str(ev.event_type));
	}
}

static enum ibv_port_state port_state(struct tb_dev *t, uint8_t port)
{
	struct ibv_port_attr pa;

	cr_assert_eq(ibv_query_port(t->ctx, port, &pa), 0);
	return pa.state;
}

/* ---- port events ---------------------------------------------------------------------- */

Test(events, link_down_window_gives_port_err_then_port_active_on_both_hosts)
{
	struct tb_dev a, b;
	struct ibv_async_event ev;
	uint64_t start;

	tb_open(&a, 0);
	tb_open(&b, 1);
	cr_assert_eq(hcasim_link_is_up(0), 1);
	start = hcasim_now_ps() + 10 * US;
	cr_assert_eq(hcasim_link_down_window(0, start, 50 * US), 0, "%s", hcasim_last_error());
	hcasim_run_for_ps(11 * US);
	cr_assert_eq(hcasim_link_is_up(0), 0);
	cr_assert_eq(port_state(&a, 1), IBV_PORT_DOWN);
	cr_assert_eq(port_state(&b, 1), IBV_PORT_DOWN);
	ev = expect_event(a.ctx, IBV_EVENT_PORT_ERR, US);
	cr_assert_eq(ev.element.port_num, 1);
	ev = expect_event(b.ctx, IBV_EVENT_PORT_ERR, US);
	cr_assert_eq(ev.element.port_num, 1);
	/* Back up at start + 50 us, then link training and the SM's sweep. */
	ev = expect_event(a.ctx, IBV_EVENT_PORT_ACTIVE, 200 * US);
	cr_assert_eq(ev.element.port_num, 1);
	cr_assert_geq(hcasim_now_ps(), start + 50 * US);
	cr_assert_eq(port_state(&a, 1), IBV_PORT_ACTIVE);
	ev = expect_event(b.ctx, IBV_EVENT_PORT_ACTIVE, 200 * US);
	cr_assert_eq(hcasim_link_is_up(0), 1);
	/* Nothing more: ARMED and INIT are not events. */
	expect_no_event(a.ctx, 100 * US);
	for (int dev = 0; dev < 2; dev++) {
		uint64_t downed = 0;

		cr_assert_eq(hcasim_port_counter(dev, 1, "link_downed", &downed), 0, "%s",
			     hcasim_last_error());
		cr_assert_eq(downed, 1, "hcasim%d link_downed %" PRIu64, dev, downed);
	}
	tb_close(&a);
	tb_close(&b);
}

Test(events, port_comes_back_after_training_and_sweep)
{
	char v[32];
	struct tb_dev a, b;
	uint64_t up_at, active_at;
	unsigned long train_ns, sweep_ns;

	tb_open(&a, 0);
	tb_open(&b, 1);
	cr_assert_eq(hcasim_config_get("port.training_ns", v, sizeof(v)), 0);
	train_ns = strtoul(v, NULL, 10);
	cr_assert_eq(hcasim_config_get("port.sm_delay_ns", v, sizeof(v)), 0);
	sweep_ns = strtoul(v, NULL, 10);
	cr_assert_eq(hcasim_link_set(0, 0), 0);
	expect_event(a.ctx, IBV_EVENT_PORT_ERR, US);
	hcasim_run_for_ps(30 * US);
	cr_assert_eq(port_state(&a, 1), IBV_PORT_DOWN, "no signal, no port");
	up_at = hcasim_now_ps();
	cr_assert_eq(hcasim_link_set(0, 1), 0);
	expect_event(a.ctx, IBV_EVENT_PORT_ACTIVE, 100 * US);
	active_at = hcasim_now_ps();
	/* Active no earlier than training + sweep after the signal came back. */
	cr_assert_geq(active_at - up_at, (train_ns + sweep_ns) * 1000);
	cr_assert_lt(active_at - up_at, (train_ns + sweep_ns) * 1000 + 2 * US);
	tb_close(&a);
	tb_close(&b);
}

Test(events, lid_change_is_raised_when_the_sm_moves_a_port)
{
	struct tb_dev a, b;
	struct ibv_async_event ev;
	struct ibv_port_attr pa;
	uint16_t old = 0;

	tb_open(&a, 0);
	tb_open(&b, 1);
	old = a.port.lid;
	cr_assert_eq(hcasim_sm_set_lid(0, 1, 0x77), 0, "%s", hcasim_last_error());
	ev = expect_event(a.ctx, IBV_EVENT_LID_CHANGE, 100 * US);
	cr_assert_eq(ev.element.port_num, 1);
	cr_assert_eq(ibv_query_port(a.ctx, 1, &pa), 0);
	cr_assert_eq(pa.lid, 0x77, "LID 0x%x after the change (was 0x%x)", pa.lid, old);
	cr_assert_eq(pa.state, IBV_PORT_ACTIVE);
	expect_no_event(b.ctx, 20 * US); /* the other host's port did not change */
	/* Refused: multicast range, 0, another port's LID, no such port; nothing changes. */
	cr_assert_eq(hcasim_sm_set_lid(0, 1, 0xc000), -EINVAL);
	cr_assert_eq(hcasim_sm_set_lid(0, 1, 0), -EINVAL);
	cr_assert_eq(hcasim_sm_set_lid(0, 1, b.port.lid), -EADDRINUSE);
	cr_assert(strstr(hcasim_last_error(), "another port"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_sm_set_lid(0, 3, 0x80), -EINVAL);
	cr_assert_eq(hcasim_sm_set_lid(9, 1, 0x80), -EINVAL);
	expect_no_event(a.ctx, 20 * US);
	cr_assert_eq(ibv_query_port(a.ctx, 1, &pa), 0);
	cr_assert_eq(pa.lid, 0x77);
	tb_close(&a);
	tb_close(&b);
}

Test(events, bad_link_calls_are_refused)
{
	struct tb_dev a;

	tb_open(&a, 0);
	cr_assert_eq(hcasim_link_set(5, 0), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "no link 5"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_link_set(0, 2), -EINVAL);
	cr_assert_eq(hcasim_link_down_window(0, 0, 5), -EINVAL, "start in the past");
	cr_assert(strstr(hcasim_last_error(), "start_ps"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_link_down_window(0, hcasim_now_ps() + 1, 0), -EINVAL);
	cr_assert_eq(hcasim_link_down_window(-1, hcasim_now_ps() + 1, 5), -EINVAL);
	cr_assert_eq(hcasim_link_is_up(0), 1, "a refused call changed the link");
	tb_close(&a);
}

Test(events, link_down_windows_from_the_configuration)
{
	struct tb_dev a, b;

	/* link 0 down from 100 ms for 20 us: long after bring-up */
	tb_config("fault.link_down", "0@100000000+20000");
	tb_open(&a, 0);
	tb_open(&b, 1);
	cr_assert_lt(hcasim_now_ps(), 100 * MS, "bring-up took %" PRIu64 " ps", hcasim_now_ps());
	cr_assert_eq(hcasim_link_is_up(0), 1);
	hcasim_run_for_ps(100 * MS - hcasim_now_ps() + US);
	cr_assert_eq(hcasim_link_is_up(0), 0);
	expect_event(a.ctx, IBV_EVENT_PORT_ERR, US);
	expect_event(a.ctx, IBV_EVENT_PORT_ACTIVE, 100 * US);
	tb_close(&a);
	tb_close(&b);
}

Test(events, malformed_link_down_configuration_is_refused_naming_the_key)
{
	static const char *const bad[] = { "0@5", "0+5", "x@1+2", "0@1+0", "7@1+2", "0@1+2;1@3+4" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(hcasim_config_set("fault.link_down", bad[i]), 0);
		cr_assert_eq(hcasim_boot(), -EINVAL, "'%s' accepted", bad[i]);
		cr_assert(strstr(hcasim_last_error(), "fault.link_down"), "%s",
			  hcasim_last_error());
		cr_assert_eq(hcasim_booted(), 0);
	}
}

/* ---- RC traffic across a link down window ---------------------------------------------- */

static void write_64k(struct tb_pair *p, uint64_t wr_id)
{
	struct ibv_sge s = { (uintptr_t)p->src->addr, 65536, p->src->lkey };
	struct ibv_send_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	w.wr.rdma.remote_addr = (uintptr_t)p->dst->addr;
	w.wr.rdma.rkey = p->dst->rkey;
	cr_assert_eq(ibv_post_send(p->qa, &w, &bad), 0, "%s", hcasim_last_error());
}

Test(events, rc_write_survives_a_link_down_window_shorter_than_its_retries)
{
	struct tb_pair p;
	struct ibv_wc wc;

	tb_rc_timeout = 4; /* 65.5 us */
	tb_pair_open(&p, IBV_QPT_RC, 65536, 3);
	write_64k(&p, 1);
	/* Down in the middle of the WRITE for 150 us: two or three timeouts, then it resumes. */
	cr_assert_eq(hcasim_link_down_window(0, hcasim_now_ps() + 2 * US, 150 * US), 0);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert(!memcmp(p.src->addr, p.dst->addr, 65536), "the WRITE's bytes differ");
	expect_event(p.a.ctx, IBV_EVENT_PORT_ERR, US);
	expect_event(p.a.ctx, IBV_EVENT_PORT_ACTIVE, US);
	tb_pair_close(&p);
}

Test(events, rc_write_fails_with_retry_exc_err_when_the_link_stays_down)
{
	struct tb_pair p;
	struct ibv_wc wc;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	tb_rc_timeout = 4;
	tb_rc_retry_cnt = 2;
	tb_pair_open(&p, IBV_QPT_RC, 65536, 3);
	write_64k(&p, 1);
	cr_assert_eq(hcasim_link_down_window(0, hcasim_now_ps() + 2 * US, 10 * MS), 0);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_RETRY_EXC_ERR, "%s", ibv_wc_status_str(wc.status));
	cr_assert_lt(hcasim_now_ps(), 2 * MS, "three 65.5 us timeouts took longer");
	cr_assert_eq(ibv_query_qp(p.qa, &qa, IBV_QP_STATE, &qi), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_ERR);
	expect_event(p.a.ctx, IBV_EVENT_PORT_ERR, US);
	tb_pair_close(&p);
}

/* ---- affiliated errors ------------------------------------------------------------------ */

static enum ibv_qp_state state_of(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	cr_assert_eq(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

static void post(struct ibv_qp *qp, struct ibv_mr *mr, enum ibv_wr_opcode op, uint32_t len,
		 uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge s = { (uintptr_t)mr->addr, len, mr->lkey };
	struct ibv_send_wr w = { .wr_id = 9, .sg_list = &s, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = raddr;
		w.wr.atomic.rkey = rkey;
		w.wr.atomic.compare_add = 1;
	} else {
		w.wr.rdma.remote_addr = raddr;
		w.wr.rdma.rkey = rkey;
	}
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0, "%s", hcasim_last_error());
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr)
{
	struct ibv_sge s = { (uintptr_t)mr->addr, 4096, mr->lkey };
	struct ibv_recv_wr w = { .wr_id = 5, .sg_list = &s, .num_sge = 1 }, *bad;

	cr_assert_eq(ibv_post_recv(qp, &w, &bad), 0, "%s", hcasim_last_error());
}

Test(events, invalid_request_raises_qp_req_err_on_the_responder)
{
	struct tb_pair p;
	struct ibv_wc wc;
	struct ibv_async_event ev;

	tb_pair_open(&p, IBV_QPT_RC, 65536, 3);
	/* A misaligned atomic: NAK invalid request. */
	post(p.qa, p.src, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, (uintptr_t)p.dst->addr + 4, p.dst->rkey);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_REM_INV_REQ_ERR, "%s", ibv_wc_status_str(wc.status));
	ev = expect_event(p.b.ctx, IBV_EVENT_QP_REQ_ERR, 10 * US);
	cr_assert_eq(ev.element.qp, p.qb, "the event names another QP");
	cr_assert_eq(state_of(p.qb), IBV_QPS_ERR);
	expect_no_event(p.a.ctx, 10 * US); /* the requester learns from its completion */
	tb_pair_close(&p);
}

Test(events, rkey_violation_raises_qp_access_err_on_the_responder)
{
	struct tb_pair p;
	struct ibv_wc wc;
	struct ibv_async_event ev;

	tb_pair_open(&p, IBV_QPT_RC, 65536, 3);
	post(p.qa, p.src, IBV_WR_RDMA_WRITE, 64, (uintptr_t)p.dst->addr, p.dst->rkey ^ 0x100);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_REM_ACCESS_ERR, "%s", ibv_wc_status_str(wc.status));
	ev = expect_event(p.b.ctx, IBV_EVENT_QP_ACCESS_ERR, 10 * US);
	cr_assert_eq(ev.element.qp, p.qb);
	cr_assert_eq(state_of(p.qb), IBV_QPS_ERR);
	tb_pair_close(&p);
}

Test(events, unreadable_send_wqe_is_qp_fatal_and_flushes)
{
	struct tb_pair p;
	struct ibv_wc wc[2];
	struct ibv_async_event ev;

	tb_pair_open(&p, IBV_QPT_RC, 65536, 3);
	cr_assert_eq(hcasim_dma_read_error(0, HCASIM_DMA_SQ_WQE, p.qa->qp_num, 1), 0, "%s",
		     hcasim_last_error());
	/* Two WRs in one call: one doorbell, no BlueFlame, so the WQEs are read from the ring. */
	{
		struct ibv_sge s = { (uintptr_t)p.src->addr, 64, p.src->lkey };
		struct ibv_send_wr w[2], *bad;

		for (int i = 0; i < 2; i++) {
			w[i] = (struct ibv_send_wr){ .wr_id = 9, .sg_list = &s, .num_sge = 1,
						     .opcode = IBV_WR_RDMA_WRITE,
						     .send_flags = IBV_SEND_SIGNALED,
						     .next = i ? NULL : &w[1] };
			w[i].wr.rdma.remote_addr = (uintptr_t)p.dst->addr;
			w[i].wr.rdma.rkey = p.dst->rkey;
		}
		cr_assert_eq(ibv_post_send(p.qa, w, &bad), 0, "%s", hcasim_last_error());
	}
	ev = expect_event(p.a.ctx, IBV_EVENT_QP_FATAL, 100 * US);
	cr_assert_eq(ev.element.qp, p.qa);
	cr_assert_eq(state_of(p.qa), IBV_QPS_ERR);
	/* No completion of its own: both WRs are flushed, in order. */
	tb_poll(p.a.cq, wc, 2);
	cr_assert_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(((uint8_t *)p.dst->addr)[0], 0, "a WRITE went out");
	tb_pair_close(&p);
}

Test(events, unreadable_receive_wqe_is_qp_fatal_on_the_responder)
{
	struct tb_pair p;
	struct ibv_async_event ev;
	struct ibv_wc wc;

	tb_pair_open(&p, IBV_QPT_RC, 65536, 3);
	post_recv(p.qb, p.dst);
	cr_assert_eq(hcasim_dma_read_error(1, HCASIM_DMA_RQ_WQE, p.qb->qp_num, 1), 0);
	post(p.qa, p.src, IBV_WR_SEND, 64, 0, 0);
	ev = expect_event(p.b.ctx, IBV_EVENT_QP_FATAL, 100 * US);
	cr_assert_eq(ev.element.qp, p.qb);
	cr_assert_eq(state_of(p.qb), IBV_QPS_ERR);
	tb_poll(p.b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	cr_assert_eq(wc.wr_id, 5);
	tb_pair_close(&p);
}

Test(events, unreadable_srq_wqe_is_srq_err_and_its_qps_go_to_err)
{
	struct tb_dev a, b;
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_qp_init_attr qi = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_send_sge = 1 } };
	struct ibv_srq *srq;
	struct ibv_qp *qa, *qb[2];
	struct ibv_mr *ma, *mb;
	struct ibv_async_event ev;
	uint32_t srqn;
	int last_wqe = 0;

	tb_open(&a, 0);
	tb_open(&b, 1);
	srq = ibv_create_srq(b.pd, &si);
	cr_assert_not_null(srq, "%s", hcasim_last_error());
	cr_assert_eq(ibv_get_srq_num(srq, &srqn), 0);
	qi.send_cq = qi.recv_cq = b.cq;
	qi.srq = srq;
	qb[0] = ibv_create_qp(b.pd, &qi);
	qb[1] = ibv_create_qp(b.pd, &qi);
	cr_assert(qb[0] && qb[1], "%s", hcasim_last_error());
	qa = tb_create_qp(&a, IBV_QPT_RC);
	tb_connect(&a, qa, &b, qb[0]->qp_num, IBV_MTU_1024);
	tb_connect(&b, qb[0], &a, qa->qp_num, IBV_MTU_1024);
	tb_connect(&b, qb[1], &a, qa->qp_num, IBV_MTU_1024); /* attached, idle */
	ma = tb_mr(&a, 4096);
	mb = tb_mr(&b, 4096);
	{
		struct ibv_sge s = { (uintptr_t)mb->addr, 4096, mb->lkey };
		struct ibv_recv_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1 }, *bad;

		cr_assert_eq(ibv_post_srq_recv(srq, &w, &bad), 0);
	}
	cr_assert_eq(hcasim_dma_read_error(1, HCASIM_DMA_SRQ_WQE, srqn, 1), 0);
	post(qa, ma, IBV_WR_SEND, 64, 0, 0);
	ev = expect_event(b.ctx, IBV_EVENT_SRQ_ERR, 100 * US);
	cr_assert_eq(ev.element.srq, srq, "the event names another SRQ");
	/* Both attached QPs are in ERR, and each says it is done with the SRQ. */
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(state_of(qb[i]), IBV_QPS_ERR, "QP %d", i);
		ev = expect_event(b.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, 10 * US);
		last_wqe |= ev.element.qp == qb[0] ? 1 : ev.element.qp == qb[1] ? 2 : 4;
	}
	cr_assert_eq(last_wqe, 3);
	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb[0]), 0);
	cr_assert_eq(ibv_destroy_qp(qb[1]), 0);
	cr_assert_eq(ibv_destroy_srq(srq), 0, "%s", hcasim_last_error());
	for (int i = 0; i < 2; i++) {
		struct ibv_mr *m = i ? mb : ma;
		void *buf = m->addr;

		cr_assert_eq(ibv_dereg_mr(m), 0);
		free(buf);
	}
	tb_close(&a);
	tb_close(&b);
}

Test(events, bad_dma_error_injections_are_refused)
{
	struct tb_dev a;

	tb_open(&a, 0);
	cr_assert_eq(hcasim_dma_read_error(7, HCASIM_DMA_SQ_WQE, 2, 1), -EINVAL);
	cr_assert_eq(hcasim_dma_read_error(0, (enum hcasim_dma_client)3, 2, 1), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "client"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_dma_read_error(0, HCASIM_DMA_SQ_WQE, 1u << 24, 1), -EINVAL);
	cr_assert_eq(hcasim_dma_read_error(0, HCASIM_DMA_SQ_WQE, 2, 0), -EINVAL);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(hcasim_dma_read_error(0, HCASIM_DMA_RQ_WQE, 100 + (uint32_t)i, 1), 0);
	cr_assert_eq(hcasim_dma_read_error(0, HCASIM_DMA_RQ_WQE, 200, 1), -ENOSPC);
	tb_close(&a);
}

/* ---- automatic path migration ----------------------------------------------------------- */

/* Two hosts joined by two links (port 1: link 0, port 2: link 1); an RC pair on port 1 with
 * the port-2 path loaded as the alternate and armed on both sides. */
static void apm_open(struct tb_pair *p)
{
	struct ibv_port_attr pa2, pb2;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	tb_config("hca.ports", "2");
	tb_rc_timeout = 4; /* 65.5 us */
	tb_rc_retry_cnt = 2;
	tb_pair_open(p, IBV_QPT_RC, 65536, 3);
	cr_assert(p->a.attr.device_cap_flags & IBV_DEVICE_AUTO_PATH_MIG);
	cr_assert_eq(ibv_query_port(p->a.ctx, 2, &pa2), 0);
	cr_assert_eq(ibv_query_port(p->b.ctx, 2, &pb2), 0);
	cr_assert_eq(pa2.state, IBV_PORT_ACTIVE);
	for (int side = 0; side < 2; side++) {
		struct ibv_qp *qp = side ? p->qb : p->qa;

		memset(&qa, 0, sizeof(qa));
		qa.alt_ah_attr.dlid = side ? pa2.lid : pb2.lid;
		qa.alt_ah_attr.port_num = 2;
		qa.alt_port_num = 2;
		qa.alt_pkey_index = 0;
		qa.alt_timeout = 4;
		qa.path_mig_state = IBV_MIG_REARM;
		cr_assert_eq(ibv_modify_qp(qp, &qa, IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE), 0,
			     "%s", hcasim_last_error());
		cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_PATH_MIG_STATE | IBV_QP_ALT_PATH, &qi), 0);
		cr_assert_eq(qa.path_mig_state, IBV_MIG_ARMED, "REARM with a path loaded is ARMED");
		cr_assert_eq(qa.alt_port_num, 2);
	}
}

static void expect_migrated(struct ibv_qp *qp, uint16_t dlid)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_PATH_MIG_STATE | IBV_QP_AV | IBV_QP_PORT |
						   IBV_QP_TIMEOUT | IBV_QP_STATE, &qi), 0);
	cr_assert_eq(qa.path_mig_state, IBV_MIG_MIGRATED);
	cr_assert_eq(qa.port_num, 2, "primary port %u after migration", qa.port_num);
	cr_assert_eq(qa.ah_attr.dlid, dlid);
	cr_assert_eq(qa.timeout, 4);
	cr_assert_eq(qa.qp_state, IBV_QPS_RTS);
}

Test(events, primary_link_failure_migrates_both_sides_to_the_alternate_path)
{
	struct tb_pair p;
	struct ibv_wc wc;
	struct ibv_async_event ev;
	struct ibv_port_attr pa2, pb2;

	apm_open(&p);
	cr_assert_eq(ibv_query_port(p.a.ctx, 2, &pa2), 0);
	cr_assert_eq(ibv_query_port(p.b.ctx, 2, &pb2), 0);
	write_64k(&p, 1);
	cr_assert_eq(hcasim_link_set(0, 0), 0); /* port 1 cable pulled, for good */
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert(!memcmp(p.src->addr, p.dst->addr, 65536), "the WRITE's bytes differ");
	/* Port 1 went down on both; the requester migrated after its retries, the responder on
	 * the first packet with MigReq set. */
	expect_event(p.a.ctx, IBV_EVENT_PORT_ERR, US);
	ev = expect_event(p.a.ctx, IBV_EVENT_PATH_MIG, US);
	cr_assert_eq(ev.element.qp, p.qa);
	expect_event(p.b.ctx, IBV_EVENT_PORT_ERR, US);
	ev = expect_event(p.b.ctx, IBV_EVENT_PATH_MIG, US);
	cr_assert_eq(ev.element.qp, p.qb);
	expect_migrated(p.qa, pb2.lid);
	expect_migrated(p.qb, pa2.lid);
	/* The next message goes straight over port 2. */
	write_64k(&p, 2);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 2);
	tb_pair_close(&p);
}

Test(events, migration_with_the_alternate_port_down_is_path_mig_err)
{
	struct tb_pair p;
	struct ibv_wc wc;
	struct ibv_async_event ev;

	apm_open(&p);
	cr_assert_eq(hcasim_link_set(1, 0), 0); /* the alternate path's link first */
	expect_event(p.a.ctx, IBV_EVENT_PORT_ERR, US);
	write_64k(&p, 1);
	cr_assert_eq(hcasim_link_set(0, 0), 0);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_RETRY_EXC_ERR, "%s", ibv_wc_status_str(wc.status));
	expect_event(p.a.ctx, IBV_EVENT_PORT_ERR, US);
	ev = expect_event(p.a.ctx, IBV_EVENT_PATH_MIG_ERR, US);
	cr_assert_eq(ev.element.qp, p.qa);
	tb_pair_close(&p);
}

Test(events, software_requested_migration_moves_the_qp_at_once)
{
	struct tb_pair p;
	struct ibv_qp_attr qa = { .path_mig_state = IBV_MIG_MIGRATED };
	struct ibv_wc wc;
	struct ibv_async_event ev;
	struct ibv_port_attr pb2;
	uint64_t t0;

	apm_open(&p);
	cr_assert_eq(ibv_query_port(p.b.ctx, 2, &pb2), 0);
	cr_assert_eq(ibv_modify_qp(p.qa, &qa, IBV_QP_PATH_MIG_STATE), 0, "%s", hcasim_last_error());
	ev = expect_event(p.a.ctx, IBV_EVENT_PATH_MIG, US);
	cr_assert_eq(ev.element.qp, p.qa);
	expect_migrated(p.qa, pb2.lid);
	/* Link 0 down now costs nothing: no timeout on the way. */
	cr_assert_eq(hcasim_link_set(0, 0), 0);
	t0 = hcasim_now_ps();
	write_64k(&p, 3);
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_lt(hcasim_now_ps() - t0, 30 * US, "%" PRIu64 " ps: a 65.5 us timeout was paid",
		     hcasim_now_ps() - t0);
	ev = expect_event(p.b.ctx, IBV_EVENT_PORT_ERR, US);
	ev = expect_event(p.b.ctx, IBV_EVENT_PATH_MIG, US);
	cr_assert_eq(ev.element.qp, p.qb);
	tb_pair_close(&p);
}
