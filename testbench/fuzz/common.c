/* The fuzz targets' common fixture: four hosts, the bystander pair and the victims
 * (testbench/fuzz/fuzz.h). */
#include "testbench/fuzz/fuzz.h"

#include "sim/hcasim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FZ_QKEY 0x11111111u

struct fz_victims fz_victim;
bool fz_heal_victims = true;
static struct fz_side by_a, by_b; /* the bystander, hcasim0 -> hcasim1 */
static bool ready;

void fz_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fuzz: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (last error: %s)\n", hcasim_last_error());
	va_end(ap);
	abort();
}

void fz_write_temp(const char *what, const uint8_t *data, size_t size, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "/tmp/hcasim-fuzz-%s.%d.ini", what, (int)getpid());
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f))
		fz_fail("cannot write %s", path);
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			ctx = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	if (!ctx)
		fz_fail("cannot open %s", name);
	return ctx;
}

static void side_open(struct fz_side *s, const char *dev, enum ibv_qp_type type)
{
	struct ibv_port_attr pa;
	struct ibv_qp_init_attr qa = { .qp_type = type,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 2, .max_recv_sge = 2,
						.max_inline_data = 64 } };

	s->ctx = open_dev(dev);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 64, NULL, NULL, 0) : NULL;
	s->buf = calloc(1, 4096);
	s->mr = s->cq && s->buf ? ibv_reg_mr(s->pd, s->buf, 4096,
					     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						     IBV_ACCESS_REMOTE_READ |
						     IBV_ACCESS_REMOTE_ATOMIC)
				: NULL;
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = s->mr ? ibv_create_qp(s->pd, &qa) : NULL;
	if (!s->qp || ibv_query_port(s->ctx, 1, &pa))
		fz_fail("%s: cannot set up a QP", dev);
	s->lid = pa.lid;
}

/* RESET -> INIT -> RTR -> RTS towards peer; false if the driver refused a step. */
static bool try_connect(struct fz_side *s, const struct fz_side *peer)
{
	enum ibv_qp_type t = s->qp->qp_type;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE))
		return false;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						     IBV_ACCESS_REMOTE_READ |
						     IBV_ACCESS_REMOTE_ATOMIC,
				  .qkey = FZ_QKEY };
	if (ibv_modify_qp(s->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  (t == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS)))
		return false;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				  .dest_qp_num = peer->qp->qp_num, .rq_psn = 0,
				  .max_dest_rd_atomic = 4, .min_rnr_timer = 1,
				  .ah_attr = { .dlid = peer->lid, .port_num = 1 } };
	if (ibv_modify_qp(s->qp, &a,
			  t == IBV_QPT_UD ? IBV_QP_STATE
			  : t == IBV_QPT_UC
				  ? IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					    IBV_QP_RQ_PSN
				  : IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER))
		return false;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0, .timeout = 8,
				  .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 4 };
	return !ibv_modify_qp(s->qp, &a,
			      t == IBV_QPT_RC ? IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
							IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
							IBV_QP_MAX_QP_RD_ATOMIC
					    : IBV_QP_STATE | IBV_QP_SQ_PSN);
}

void fz_connect(struct fz_side *s, const struct fz_side *peer)
{
	if (!try_connect(s, peer))
		fz_fail("qp 0x%x: cannot connect it", s->qp->qp_num);
}

static bool try_post_recv(struct fz_side *s)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + 2048, 2048, s->mr->lkey };
	struct ibv_recv_wr w = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	return !ibv_post_recv(s->qp, &w, &bad);
}

void fz_post_recv(struct fz_side *s)
{
	if (!try_post_recv(s))
		fz_fail("qp 0x%x: post_recv", s->qp->qp_num);
}

void fz_setup(void)
{
	static const enum ibv_qp_type types[FZ_NQPT] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };

	if (ready)
		return;
	if (hcasim_config_set("sim.hosts", "4"))
		fz_fail("sim.hosts");
	side_open(&by_a, "hcasim0", IBV_QPT_RC);
	side_open(&by_b, "hcasim1", IBV_QPT_RC);
	fz_connect(&by_a, &by_b);
	fz_connect(&by_b, &by_a);
	for (int i = 0; i < FZ_NQPT; i++) {
		side_open(&fz_victim.a[i], "hcasim2", types[i]);
		side_open(&fz_victim.b[i], "hcasim3", types[i]);
	}
	for (int i = 0; i < FZ_NQPT; i++) {
		fz_connect(&fz_victim.a[i], &fz_victim.b[i]);
		fz_connect(&fz_victim.b[i], &fz_victim.a[i]);
		for (int k = 0; k < 4; k++) {
			fz_post_recv(&fz_victim.a[i]);
			fz_post_recv(&fz_victim.b[i]);
		}
	}
	ready = true;
}

/* Destroy s's objects, so that the driver forgets them, and close its context. A call that
 * fails (an input destroyed the object already) leaves that object, and its rings, with the
 * driver. A device whose driver no longer gets answers (*answering false: an input broke its
 * event queue) is left alone, as each call would wait for its timeout. */
static void side_close(struct fz_side *s, bool *answering)
{
	if (*answering && ibv_destroy_qp(s->qp) && (errno == ETIMEDOUT || errno == EDEADLK))
		*answering = false;
	if (*answering) {
		ibv_dereg_mr(s->mr);
		ibv_destroy_cq(s->cq);
		ibv_dealloc_pd(s->pd);
	}
	ibv_close_device(s->ctx);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

void fz_reboot(void)
{
	bool others = true, hcasim2 = true;

	side_close(&by_a, &others);
	side_close(&by_b, &others);
	for (int i = 0; i < FZ_NQPT; i++) {
		side_close(&fz_victim.a[i], &hcasim2);
		side_close(&fz_victim.b[i], &others);
	}
	hcasim_shutdown();
	ready = false;
	fz_setup();
}

/* Poll cq until a completion arrives or 10 ms of simulated time pass. */
static bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	for (int i = 0; i < 1000; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			fz_fail("ibv_poll_cq: %d", n);
		if (n)
			return true;
		hcasim_run_for_ps(10 * 1000 * 1000ull);
	}
	return false;
}

static void bystander(void)
{
	static uint32_t round;
	struct ibv_sge sge = { (uintptr_t)by_a.buf, 64, by_a.mr->lkey };
	struct ibv_send_wr w = { .wr_id = ++round, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	fz_post_recv(&by_b);
	memcpy(by_a.buf, &round, sizeof(round));
	if (ibv_post_send(by_a.qp, &w, &bad))
		fz_fail("bystander: post_send");
	if (!poll_one(by_a.cq, &wc) || wc.status != IBV_WC_SUCCESS || wc.wr_id != round)
		fz_fail("bystander: its SEND did not complete");
	if (!poll_one(by_b.cq, &wc) || wc.status != IBV_WC_SUCCESS || wc.byte_len != 64 ||
	    memcmp(by_b.buf + 2048, &round, sizeof(round)))
		fz_fail("bystander: its receive did not complete with the data");
}

/* Completions on s's CQ, drained; how many were receives. */
static int drain(struct fz_side *s)
{
	struct ibv_wc wc[16];
	int n, recvs = 0;

	while ((n = ibv_poll_cq(s->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++)
			recvs += (wc[i].opcode & IBV_WC_RECV) != 0;
	return recvs;
}

/* Keep a victim QP as the first input found it: in RTS (an input that moved it out of RTS
 * is undone by RESET and a new connection; all: every one) with four receives posted. false
 * if the driver refused a call. */
static bool victim_heal(struct fz_side *s, const struct fz_side *peer, bool all)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int used = drain(s);

	if (ibv_query_qp(s->qp, &a, IBV_QP_STATE, &ia))
		return false;
	if (all || a.qp_state != IBV_QPS_RTS) {
		if (!try_connect(s, peer)) /* through RESET: the receive queue is empty */
			return false;
		drain(s);
		used = 4;
	}
	for (int k = 0; k < used && k < 4; k++)
		if (!try_post_recv(s))
			return false;
	return true;
}

bool fz_heal(bool all)
{
	for (int i = 0; i < FZ_NQPT; i++)
		if (!victim_heal(&fz_victim.a[i], &fz_victim.b[i], all) ||
		    !victim_heal(&fz_victim.b[i], &fz_victim.a[i], all))
			return false;
	return true;
}

void fz_after_input(void)
{
	hcasim_run_for_ps(20 * 1000 * 1000ull);
	if (hcasim_halted())
		fz_fail("the simulation halted: %s", hcasim_halted());
	if (fz_heal_victims && !fz_heal(false))
		fz_fail("the victims cannot be brought back to RTS");
	bystander();
}
