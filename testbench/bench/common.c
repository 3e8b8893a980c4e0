/* hcasim-bench: boot, QPs, connection, polling, trace reading and output shared by the
 * benchmark scenarios. Standard verbs and hcasim.h only. */
#include "testbench/bench/bench.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const struct bconn bconn_default = {
	.mtu = IBV_MTU_4096, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
	.min_rnr_timer = 1, .rd_atomic = 16,
};

const char *bs_prog = "hcasim-bench";

void bs_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", bs_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (%s)\n", hcasim_last_error());
	exit(2);
}

void bs_fig(const char *key, double value)
{
	printf("FIG %s %.9g\n", key, value);
	fflush(stdout);
}

void bs_info(const char *key, const char *fmt, ...)
{
	va_list ap;

	printf("INFO %s ", key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

double bs_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

long bs_vmhwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			kib = strtol(line + 6, NULL, 10);
	fclose(f);
	return kib;
}

double bs_write_limit_gbps(double rate_gbps, uint64_t m, unsigned mtu, unsigned h)
{
	uint64_t n = (m + mtu - 1) / mtu;

	return rate_gbps * (double)m / (double)(m + n * h + 16);
}

void bs_host_open(struct bhost *h, struct ibv_device *dev, size_t buf_bytes, int cqe)
{
	struct ibv_device_attr_ex ax;
	struct ibv_cq_init_attr_ex ca = {
		.cqe = (uint32_t)cqe,
		.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};

	h->ctx = ibv_open_device(dev);
	if (!h->ctx || ibv_query_port(h->ctx, 1, &h->port) || ibv_query_gid(h->ctx, 1, 0, &h->gid))
		bs_die("open %s", ibv_get_device_name(dev));
	if (ibv_query_device_ex(h->ctx, NULL, &ax) || !ax.hca_core_clock)
		bs_die("ibv_query_device_ex");
	h->cycle_ps = 1000000000ull / ax.hca_core_clock; /* kHz -> ps per cycle */
	h->pd = ibv_alloc_pd(h->ctx);
	h->ch = ibv_create_comp_channel(h->ctx);
	if (!h->pd || !h->ch)
		bs_die("pd/channel");
	ca.channel = h->ch;
	h->cqx = ibv_create_cq_ex(h->ctx, &ca);
	if (!h->cqx)
		bs_die("ibv_create_cq_ex");
	h->cq = ibv_cq_ex_to_cq(h->cqx);
	h->buf_bytes = buf_bytes ? buf_bytes : 4096;
	/* C11 aligned_alloc: the size must be a multiple of the alignment */
	h->buf = aligned_alloc(4096, (h->buf_bytes + 4095) & ~(size_t)4095);
	if (!h->buf)
		bs_die("out of memory");
	memset(h->buf, 0x5a, h->buf_bytes);
	h->mr = ibv_reg_mr(h->pd, h->buf, h->buf_bytes,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!h->mr)
		bs_die("ibv_reg_mr");
}

void bs_open(struct bsys *s, const char *const *cfg, size_t buf_bytes, int cqe)
{
	int n;

	memset(s, 0, sizeof(*s));
	for (; cfg && cfg[0]; cfg += 2)
		if (hcasim_config_set(cfg[0], cfg[1]))
			bs_die("hcasim_config_set %s=%s", cfg[0], cfg[1]);
	/* booted here, so that a boot failure is told once, by bs_die (the driver tells it too
	 * when the device list is what boots) */
	if (hcasim_boot())
		bs_die("boot");
	s->list = ibv_get_device_list(&n);
	if (!s->list || n < 2)
		bs_die("ibv_get_device_list: need 2 HCAs");
	for (int i = 0; i < 2; i++)
		bs_host_open(&s->h[i], s->list[i], buf_bytes, cqe);
}

void bs_close(struct bsys *s)
{
	for (int i = 0; i < 2; i++) {
		struct bhost *h = &s->h[i];

		if (ibv_dereg_mr(h->mr) || ibv_destroy_cq(h->cq) ||
		    ibv_destroy_comp_channel(h->ch) || ibv_dealloc_pd(h->pd) ||
		    ibv_close_device(h->ctx))
			bs_die("teardown of host %d", i);
		free(h->buf);
	}
	ibv_free_device_list(s->list);
	hcasim_shutdown();
}

struct ibv_qp *bs_qp(struct bhost *h, uint32_t sq, uint32_t rq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = h->cq,
		.recv_cq = h->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = sq, .max_recv_wr = rq, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
	};
	struct ibv_qp *qp = ibv_create_qp(h->pd, &init);

	if (!qp && errno != ENOMEM)
		bs_die("ibv_create_qp");
	return qp;
}

void bs_connect(struct bhost *h, struct ibv_qp *qp, struct bhost *peer, uint32_t peer_qpn,
		const struct bconn *c)
{
	bool roce = h->port.link_layer == IBV_LINK_LAYER_ETHERNET;
	struct ibv_qp_attr a;

	if (!c)
		c = &bconn_default;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS))
		bs_die("modify to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = c->mtu;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = 0x100;
	a.max_dest_rd_atomic = c->rd_atomic;
	a.min_rnr_timer = c->min_rnr_timer;
	a.ah_attr.is_global = roce;
	a.ah_attr.dlid = peer->port.lid;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.hop_limit = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER))
		bs_die("modify to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = c->rd_atomic;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					  IBV_QP_MAX_QP_RD_ATOMIC))
		bs_die("modify to RTS");
}

static void take(struct bhost *h, struct bwc *w)
{
	w->wr_id = h->cqx->wr_id;
	w->status = h->cqx->status;
	w->opcode = ibv_wc_read_opcode(h->cqx);
	w->byte_len = ibv_wc_read_byte_len(h->cqx);
	w->ts_ps = ibv_wc_read_completion_ts(h->cqx) * h->cycle_ps;
}

int bs_poll(struct bhost *h, struct bwc *out, int max)
{
	struct ibv_poll_cq_attr pa = { 0 };
	int n = 0, rc;

	if (max <= 0)
		return 0;
	rc = ibv_start_poll(h->cqx, &pa);
	if (rc == ENOENT)
		return 0;
	if (rc)
		bs_die("ibv_start_poll");
	do
		take(h, &out[n++]);
	while (n < max && ibv_next_poll(h->cqx) == 0);
	ibv_end_poll(h->cqx);
	return n;
}

void bs_wait(struct bhost *h, struct bwc *out)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	for (;;) {
		if (ibv_req_notify_cq(h->cq, 0))
			bs_die("ibv_req_notify_cq");
		if (bs_poll(h, out, 1)) /* a completion that came before the arm */
			return;
		if (ibv_get_cq_event(h->ch, &cq, &cq_ctx))
			bs_die("ibv_get_cq_event");
		ibv_ack_cq_events(cq, 1);
		if (bs_poll(h, out, 1))
			return;
	}
}

void bs_post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	if (ibv_post_send(qp, wr, &bad))
		bs_die("ibv_post_send");
}

void bs_post_recv(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { addr, len, lkey };
	struct ibv_recv_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &w, &bad))
		bs_die("ibv_post_recv");
}

/* ---- traces ---- */

static unsigned long long field(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	if (!p)
		bs_die("trace line without %s: %s", key, line);
	return strtoull(p + strlen(key), NULL, 0);
}

static void push(struct btrace_ev **a, int *n, struct btrace_ev e)
{
	if ((*n & (*n - 1)) == 0 || *n == 0) { /* grow at powers of two */
		*a = realloc(*a, sizeof(**a) * (size_t)(*n ? 2 * *n : 16));
		if (!*a)
			bs_die("out of memory");
	}
	(*a)[(*n)++] = e;
}

void bs_trace_read(const char *path, struct btrace *tr)
{
	FILE *f = fopen(path, "r");
	char line[512];

	if (!f)
		bs_die("open trace %s", path);
	memset(tr, 0, sizeof(*tr));
	while (fgets(line, sizeof(line), f)) {
		struct btrace_ev e = { 0 };

		e.t = strtoull(line + 2, NULL, 10);
		e.exhausted = strstr(line, "exhausted") != NULL;
		if (strstr(line, " link.tx ")) {
			e.side = (int)field(line, " side=");
			e.start = field(line, " start=");
			e.end = field(line, " end=");
			if (e.side == 0)
				push(&tr->tx0, &tr->ntx0, e);
		} else if (strstr(line, " req.timeout ")) {
			push(&tr->timeout, &tr->ntimeout, e);
		} else if (strstr(line, " comp.rnr_wait ")) {
			e.wait_ps = field(line, " wait_ps=");
			e.start = field(line, " start=");
			push(&tr->rnr_wait, &tr->nrnr_wait, e);
		} else if (strstr(line, " comp.rnr_resume ")) {
			push(&tr->rnr_resume, &tr->nrnr_resume, e);
		}
	}
	fclose(f);
}

void bs_trace_free(struct btrace *tr)
{
	free(tr->tx0);
	free(tr->timeout);
	free(tr->rnr_wait);
	free(tr->rnr_resume);
	memset(tr, 0, sizeof(*tr));
}

void bs_pair_hosts(struct bhost *ha, struct bhost *hb, struct ibv_qp **qa, struct ibv_qp **qb,
		   uint32_t sq, uint32_t rq, const struct bconn *c)
{
	*qa = bs_qp(ha, sq, rq);
	*qb = bs_qp(hb, sq, rq);
	if (!*qa || !*qb)
		bs_die("ibv_create_qp");
	bs_connect(ha, *qa, hb, (*qb)->qp_num, c);
	bs_connect(hb, *qb, ha, (*qa)->qp_num, c);
}

void bs_pair(struct bsys *s, struct ibv_qp **qa, struct ibv_qp **qb, uint32_t sq, uint32_t rq,
	     const struct bconn *c)
{
	bs_pair_hosts(&s->h[0], &s->h[1], qa, qb, sq, rq, c);
}

void bs_unpair(struct ibv_qp *qa, struct ibv_qp *qb)
{
	if (ibv_destroy_qp(qa) || ibv_destroy_qp(qb))
		bs_die("ibv_destroy_qp");
}

enum ibv_mtu bs_mtu(unsigned mtu)
{
	switch (mtu) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	default: return IBV_MTU_4096;
	}
}
