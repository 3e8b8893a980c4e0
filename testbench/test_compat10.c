/* Suite abi, the libibverbs 1.0 ABI: a program bound to the ibv_*@IBVERBS_1.0 symbols (as one
 * linked in 2006 is) lists and opens the HCAs, creates PDs, MRs, CQs, QPs, SRQs and AHs as
 * 1.0 objects, and moves data through the 1.0 context's inline ops: an RC pair between
 * hcasim0 and hcasim1 (SEND, RDMA WRITE, a completion event, an async event), a UD loopback on one HCA with a
 * 1.0 address handle and an SRQ, and the error answers (docs/abi.md). */
#include "driver/compat10.h"
#include "testbench/tb.h"
#include "testbench/tb_expect.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The 1.0 entry points, looked up by version as the dynamic linker binds an old program. */
static struct {
	struct ibv10_device **(*get_device_list)(int *);
	void (*free_device_list)(struct ibv10_device **);
	const char *(*get_device_name)(struct ibv10_device *);
	__be64 (*get_device_guid)(struct ibv10_device *);
	struct ibv10_context *(*open_device)(struct ibv10_device *);
	int (*close_device)(struct ibv10_context *);
	int (*get_async_event)(struct ibv10_context *, struct ibv_async_event *);
	void (*ack_async_event)(struct ibv_async_event *);
	int (*query_device)(struct ibv10_context *, struct ibv_device_attr *);
	int (*query_port)(struct ibv10_context *, uint8_t, struct ibv_port_attr *);
	int (*query_gid)(struct ibv10_context *, uint8_t, int, union ibv_gid *);
	struct ibv10_pd *(*alloc_pd)(struct ibv10_context *);
	int (*dealloc_pd)(struct ibv10_pd *);
	struct ibv10_mr *(*reg_mr)(struct ibv10_pd *, void *, size_t, int);
	int (*dereg_mr)(struct ibv10_mr *);
	struct ibv10_cq *(*create_cq)(struct ibv10_context *, int, void *,
				      struct ibv_comp_channel *, int);
	int (*destroy_cq)(struct ibv10_cq *);
	int (*get_cq_event)(struct ibv_comp_channel *, struct ibv10_cq **, void **);
	void (*ack_cq_events)(struct ibv10_cq *, unsigned);
	struct ibv10_srq *(*create_srq)(struct ibv10_pd *, struct ibv_srq_init_attr *);
	int (*destroy_srq)(struct ibv10_srq *);
	struct ibv10_qp *(*create_qp)(struct ibv10_pd *, struct ibv10_qp_init_attr *);
	int (*modify_qp)(struct ibv10_qp *, struct ibv_qp_attr *, int);
	int (*query_qp)(struct ibv10_qp *, struct ibv_qp_attr *, int, struct ibv10_qp_init_attr *);
	int (*destroy_qp)(struct ibv10_qp *);
	struct ibv10_ah *(*create_ah)(struct ibv10_pd *, struct ibv_ah_attr *);
	int (*destroy_ah)(struct ibv10_ah *);
} v10;

#define BIND10(name)                                                                               \
	do {                                                                                       \
		*(void **)&v10.name = dlvsym(self, "ibv_" #name, "IBVERBS_1.0");                   \
		cr_assert_not_null(v10.name, "ibv_" #name "@IBVERBS_1.0 missing");                 \
	} while (0)

static void bind10(void)
{
	void *self = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);

	cr_assert_not_null(self, "%s", dlerror());
	BIND10(get_device_list);
	BIND10(free_device_list);
	BIND10(get_device_name);
	BIND10(get_device_guid);
	BIND10(open_device);
	BIND10(close_device);
	BIND10(get_async_event);
	BIND10(ack_async_event);
	BIND10(query_device);
	BIND10(query_port);
	BIND10(query_gid);
	BIND10(alloc_pd);
	BIND10(dealloc_pd);
	BIND10(reg_mr);
	BIND10(dereg_mr);
	BIND10(create_cq);
	BIND10(destroy_cq);
	BIND10(get_cq_event);
	BIND10(ack_cq_events);
	BIND10(create_srq);
	BIND10(destroy_srq);
	BIND10(create_qp);
	BIND10(modify_qp);
	BIND10(query_qp);
	BIND10(destroy_qp);
	BIND10(create_ah);
	BIND10(destroy_ah);
	dlclose(self);
}

#define ACCESS_ALL                                                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define LEN 4096

/* One side: a 1.0 context on an HCA with a PD, a CQ, an MR over buf and a QP. */
struct side10 {
	struct ibv10_context *ctx;
	struct ibv10_pd *pd;
	struct ibv10_cq *cq;
	struct ibv10_mr *mr;
	struct ibv10_qp *qp;
	struct ibv_port_attr port;
	struct ibv_comp_channel *ch;
	uint8_t *buf;
};

/* With with_ch, the CQ reports to a new completion channel s->ch of the context. */
static void side_open(struct side10 *s, struct ibv10_device *dev, enum ibv_qp_type type,
		      bool with_ch, struct ibv10_srq *srq)
{
	struct ibv10_qp_init_attr init = {
		.qp_context = s, .qp_type = type, .srq = srq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	if (!s->ctx) {
		s->ctx = v10.open_device(dev);
		cr_assert_not_null(s->ctx, "open_device@1.0: %s", hcasim_last_error());
		s->pd = v10.alloc_pd(s->ctx);
		cr_assert_not_null(s->pd, "alloc_pd@1.0: %s", hcasim_last_error());
	}
	cr_assert_eq(v10.query_port(s->ctx, 1, &s->port), 0);
	if (with_ch) {
		s->ch = ibv_create_comp_channel(s->ctx->real);
		cr_assert_not_null(s->ch, "%s", hcasim_last_error());
	}
	s->cq = v10.create_cq(s->ctx, 16, s, s->ch, 0);
	cr_assert_not_null(s->cq, "create_cq@1.0: %s", hcasim_last_error());
	cr_assert_eq(s->cq->context, s->ctx);
	cr_assert_geq(s->cq->cqe, 16);
	cr_assert_eq(posix_memalign((void **)&s->buf, 4096, LEN), 0);
	s->mr = v10.reg_mr(s->pd, s->buf, LEN, ACCESS_ALL);
	cr_assert_not_null(s->mr, "reg_mr@1.0: %s", hcasim_last_error());
	cr_assert_eq(s->mr->pd, s->pd);
	cr_assert_neq(s->mr->lkey, 0);
	init.send_cq = init.recv_cq = s->cq;
	s->qp = v10.create_qp(s->pd, &init);
	cr_assert_not_null(s->qp, "create_qp@1.0: %s", hcasim_last_error());
	cr_assert_eq(s->qp->context, s->ctx);
	cr_assert_eq(s->qp->qp_context, s);
	cr_assert_eq(s->qp->send_cq, s->cq);
	cr_assert_eq(s->qp->qp_type, type);
	cr_assert_eq(s->qp->state, IBV_QPS_RESET);
	cr_assert_neq(s->qp->qp_num, 0);
	cr_assert_geq(init.cap.max_send_wr, 8, "the granted sizes come back");
}

static void side_close(struct side10 *s, bool ctx_too)
{
	cr_assert_eq(v10.destroy_qp(s->qp), 0, "%s", hcasim_last_error());
	cr_assert_eq(v10.dereg_mr(s->mr), 0, "%s", hcasim_last_error());
	cr_assert_eq(v10.destroy_cq(s->cq), 0, "%s", hcasim_last_error());
	free(s->buf);
	if (!ctx_too)
		return;
	if (s->ch)
		cr_assert_eq(ibv_destroy_comp_channel(s->ch), 0);
	cr_assert_eq(v10.dealloc_pd(s->pd), 0, "%s", hcasim_last_error());
	cr_assert_eq(v10.close_device(s->ctx), 0, "%s", hcasim_last_error());
}

/* RESET -> INIT -> RTR -> RTS through modify_qp@1.0, towards dlid / dqpn. */
static void connect10(struct side10 *s, uint16_t dlid, uint32_t dqpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE, .qkey = TB_QKEY };
	bool ud = s->qp->qp_type == IBV_QPT_UD;
	int m = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		(ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);

	cr_assert_eq(v10.modify_qp(s->qp, &a, m), 0, "INIT: %s", hcasim_last_error());
	cr_assert_eq(s->qp->state, IBV_QPS_INIT);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	m = IBV_QP_STATE;
	if (!ud) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dqpn;
		a.rq_psn = 0x100;
		a.ah_attr.dlid = dlid;
		a.ah_attr.port_num = 1;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		m |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	cr_assert_eq(v10.modify_qp(s->qp, &a, m), 0, "RTR: %s", hcasim_last_error());
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	m = IBV_QP_STATE | IBV_QP_SQ_PSN |
	    (ud ? 0 : IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_MAX_QP_RD_ATOMIC);
	cr_assert_eq(v10.modify_qp(s->qp, &a, m), 0, "RTS: %s", hcasim_last_error());
	cr_assert_eq(s->qp->state, IBV_QPS_RTS);
}

/* Poll cq through the 1.0 context's inline op until one completion arrives. */
static void poll10(struct ibv10_cq *cq, struct ibv_wc *wc)
{
	uint64_t start = hcasim_now_ps();
	int n;

	while ((n = cq->context->ops.poll_cq(cq, 1, wc)) == 0)
		cr_assert_lt(hcasim_now_ps() - start, 1000000000000ull, "no completion in 1 s");
	cr_assert_eq(n, 1, "poll_cq@1.0: %s", hcasim_last_error());
	cr_assert_eq(wc->status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc->status));
}

static void post_recv10(struct side10 *s, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)s->buf, LEN, s->mr->lkey };
	struct ibv10_recv_wr r = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	cr_assert_eq(s->ctx->ops.post_recv(s->qp, &r, &bad), 0, "%s", hcasim_last_error());
}

static struct ibv10_device **list10(int *n)
{
	struct ibv10_device **l;

	bind10();
	l = v10.get_device_list(n);
	cr_assert_not_null(l, "get_device_list@1.0: %s", hcasim_last_error());
	cr_assert_geq(*n, 2);
	cr_assert_null(l[*n]);
	return l;
}

Test(abi, compat10_rc_pair_between_hcasim0_and_hcasim1)
{
	struct side10 a = { 0 }, b = { 0 };
	struct ibv_device **now = ibv_get_device_list(NULL);
	struct ibv10_cq *ev_cq = NULL;
	struct ibv_wc wc;
	void *ev_ctx = NULL;
	int n;
	struct ibv10_device **l = list10(&n);

	cr_assert_str_eq(v10.get_device_name(l[1]), "hcasim1");
	cr_assert_eq(v10.get_device_guid(l[0]), ibv_get_device_guid(now[0]));
	side_open(&a, l[0], IBV_QPT_RC, false, NULL);
	side_open(&b, l[1], IBV_QPT_RC, true, NULL);
	v10.free_device_list(l); /* the contexts keep their devices */
	cr_assert_str_eq(v10.get_device_name(b.ctx->device), "hcasim1");
	connect10(&a, b.port.lid, b.qp->qp_num);
	connect10(&b, a.port.lid, a.qp->qp_num);
	for (int i = 0; i < LEN; i++)
		a.buf[i] = (uint8_t)(i * 7 + 3);

	/* SEND into a posted receive; b's CQ is armed through the 1.0 op. */
	post_recv10(&b, 77);
	cr_assert_eq(b.ctx->ops.req_notify_cq(b.cq, 0), 0);
	struct ibv_sge sge = { (uintptr_t)a.buf, 1000, a.mr->lkey };
	struct ibv10_send_wr s = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				   .imm_data = htobe32(0x1234) }, *bad = NULL;
	cr_assert_eq(a.ctx->ops.post_send(a.qp, &s, &bad), 0, "%s", hcasim_last_error());
	poll10(a.cq, &wc);
	cr_assert_eq(wc.wr_id, 5);
	cr_assert_eq(wc.opcode, IBV_WC_SEND);
	cr_assert_eq(v10.get_cq_event(b.ch, &ev_cq, &ev_ctx), 0, "%s", hcasim_last_error());
	cr_assert_eq(ev_cq, b.cq, "the event names the 1.0 CQ");
	cr_assert_eq(ev_ctx, &b);
	v10.ack_cq_events(ev_cq, 1);
	poll10(b.cq, &wc);
	cr_assert_eq(wc.wr_id, 77);
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.byte_len, 1000);
	cr_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	cr_assert_eq(be32toh(wc.imm_data), 0x1234);
	cr_assert_eq(wc.qp_num, b.qp->qp_num);
	cr_assert_eq(memcmp(a.buf, b.buf, 1000), 0);

	/* RDMA WRITE of the whole buffer. */
	sge.length = LEN;
	s = (struct ibv10_send_wr){ .wr_id = 6, .sg_list = &sge, .num_sge = 1,
				    .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	s.wr.rdma.remote_addr = (uintptr_t)b.buf;
	s.wr.rdma.rkey = b.mr->rkey;
	cr_assert_eq(a.ctx->ops.post_send(a.qp, &s, &bad), 0, "%s", hcasim_last_error());
	poll10(a.cq, &wc);
	cr_assert_eq(wc.wr_id, 6);
	cr_assert_eq(wc.opcode, IBV_WC_RDMA_WRITE);
	cr_assert_eq(memcmp(a.buf, b.buf, LEN), 0);

	/* query_qp@1.0 answers with the 1.0 objects. */
	struct ibv_qp_attr qa;
	struct ibv10_qp_init_attr qi;
	cr_assert_eq(v10.query_qp(a.qp, &qa, IBV_QP_STATE | IBV_QP_DEST_QPN, &qi), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_RTS);
	cr_assert_eq(qa.dest_qp_num, b.qp->qp_num);
	cr_assert_eq(qi.send_cq, a.cq);
	cr_assert_eq(qi.qp_context, &a);
	cr_assert_eq(qi.qp_type, IBV_QPT_RC);

	/* An affiliated event names the 1.0 QP: SQ_DRAINED on the way to SQD. */
	qa = (struct ibv_qp_attr){ .qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1 };
	cr_assert_eq(v10.modify_qp(a.qp, &qa, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0, "%s",
		     hcasim_last_error());
	struct ibv_async_event ev = { 0 };
	for (int i = 0; i < 8 && ev.event_type != IBV_EVENT_SQ_DRAINED; i++) {
		cr_assert_eq(v10.get_async_event(a.ctx, &ev), 0, "%s", hcasim_last_error());
		if (ev.event_type == IBV_EVENT_SQ_DRAINED)
			cr_assert_eq((void *)ev.element.qp, (void *)a.qp, "the 1.0 QP");
		v10.ack_async_event(&ev);
	}
	cr_assert_eq(ev.event_type, IBV_EVENT_SQ_DRAINED);
	side_close(&a, true);
	side_close(&b, true);
	ibv_free_device_list(now);
}

Test(abi, compat10_ud_loopback_with_an_address_handle_and_an_srq)
{
	struct side10 a = { 0 }, b = { 0 };
	struct ibv_srq_init_attr si = { .srq_context = &b, .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv10_srq *srq;
	struct ibv10_ah *ah;
	struct ibv_wc wc;
	int n;
	struct ibv10_device **l = list10(&n);

	side_open(&a, l[0], IBV_QPT_UD, false, NULL);
	b.ctx = a.ctx;
	b.pd = a.pd;
	srq = v10.create_srq(a.pd, &si);
	cr_assert_not_null(srq, "create_srq@1.0: %s", hcasim_last_error());
	cr_assert_eq(srq->srq_context, &b);
	side_open(&b, NULL, IBV_QPT_UD, false, srq);
	cr_assert_eq(b.qp->srq, srq);
	connect10(&a, 0, 0);
	connect10(&b, 0, 0);
	struct ibv_ah_attr aa = { .dlid = a.port.lid, .port_num = 1 };
	ah = v10.create_ah(a.pd, &aa);
	cr_assert_not_null(ah, "create_ah@1.0: %s", hcasim_last_error());

	struct ibv_sge rs = { (uintptr_t)b.buf, LEN, b.mr->lkey };
	struct ibv10_recv_wr r = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 }, *rbad = NULL;
	cr_assert_eq(a.ctx->ops.post_srq_recv(srq, &r, &rbad), 0, "%s", hcasim_last_error());
	for (int i = 0; i < 256; i++)
		a.buf[i] = (uint8_t)(0xA0 ^ i);
	struct ibv_sge sge = { (uintptr_t)a.buf, 256, a.mr->lkey };
	struct ibv10_send_wr s = { .wr_id = 8, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	s.wr.ud.ah = ah;
	s.wr.ud.remote_qpn = b.qp->qp_num;
	s.wr.ud.remote_qkey = TB_QKEY;
	cr_assert_eq(a.ctx->ops.post_send(a.qp, &s, &bad), 0, "%s", hcasim_last_error());
	poll10(a.cq, &wc);
	cr_assert_eq(wc.wr_id, 8);
	poll10(b.cq, &wc);
	cr_assert_eq(wc.wr_id, 9);
	cr_assert_eq(wc.byte_len, 256 + 40, "UD: the GRH space, then the payload");
	cr_assert_eq(wc.src_qp, a.qp->qp_num);
	cr_assert_eq(memcmp(b.buf + 40, a.buf, 256), 0);

	cr_assert_eq(v10.destroy_ah(ah), 0);
	side_close(&b, false);
	cr_assert_eq(v10.destroy_srq(srq), 0, "%s", hcasim_last_error());
	side_close(&a, true);
	v10.free_device_list(l);
}

Test(abi, compat10_bad_input_is_refused_naming_the_call)
{
	struct side10 a = { 0 };
	struct tb_dev t;
	struct ibv_wc wc;
	int n;
	struct ibv10_device **l = list10(&n);

	/* Today's objects are not 1.0 objects, and the reverse. */
	tb_open(&t, 0);
	errno = 0;
	cr_assert_null(v10.open_device((struct ibv10_device *)t.list[0]));
	cr_assert_eq(errno, EINVAL);
	EXPECT_MSG("ibv_open_device@IBVERBS_1.0");
	cr_assert_null(v10.alloc_pd((struct ibv10_context *)t.ctx));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(v10.dealloc_pd((struct ibv10_pd *)t.pd), EINVAL);
	EXPECT_MSG("not a live 1.0 PD");
	cr_assert_null(v10.get_device_name(NULL));
	v10.free_device_list((struct ibv10_device **)t.list); /* refused: today's list */
	EXPECT_MSG("ibv_free_device_list@IBVERBS_1.0");
	tb_close(&t);

	side_open(&a, l[0], IBV_QPT_RC, false, NULL);
	/* A QP type the 1.0 ABI did not have. */
	struct ibv10_qp_init_attr init = { .send_cq = a.cq, .recv_cq = a.cq,
					   .qp_type = IBV_QPT_XRC_SEND,
					   .cap = { .max_send_wr = 1, .max_send_sge = 1 } };
	cr_assert_null(v10.create_qp(a.pd, &init));
	cr_assert_eq(errno, EINVAL);
	EXPECT_MSG("qp_type");
	init.qp_type = IBV_QPT_RC;
	init.recv_cq = (struct ibv10_cq *)a.pd;
	cr_assert_null(v10.create_qp(a.pd, &init));
	EXPECT_MSG("not a live 1.0 CQ");

	/* An opcode newer than 1.0 after a good one: the good one is posted, the bad one named. */
	connect10(&a, a.port.lid, a.qp->qp_num);
	struct ibv_sge sge = { (uintptr_t)a.buf, 8, a.mr->lkey };
	struct ibv10_send_wr w2 = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				    .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED };
	struct ibv10_send_wr w1 = { .next = &w2, .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				    .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
			     *bad = NULL;
	w1.wr.rdma.remote_addr = (uintptr_t)a.buf + 64;
	w1.wr.rdma.rkey = a.mr->rkey;
	cr_assert_eq(a.ctx->ops.post_send(a.qp, &w1, &bad), EINVAL);
	cr_assert_eq(bad, &w2);
	EXPECT_MSG("opcode 7 is not one of the 1.0 ABI");
	poll10(a.cq, &wc);
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(a.ctx->ops.poll_cq(a.cq, 1, &wc), 0, "nothing else was posted");
	/* A dead CQ through the inline op; a PD with a live MR. */
	cr_assert_eq(a.ctx->ops.poll_cq((struct ibv10_cq *)a.qp, 1, &wc), -EINVAL);
	cr_assert_eq(v10.dealloc_pd(a.pd), EBUSY, "%s", hcasim_last_error());
	side_close(&a, true);
	cr_assert_eq(v10.close_device(a.ctx), EINVAL, "closed twice");
	v10.free_device_list(l);
}
