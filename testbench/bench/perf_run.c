/* hcasim-perf: the two simulated hosts, their QPs, and perftest's bandwidth and latency loops,
 * all in simulated time. hcasim0 is the client, hcasim1 the server; one program thread drives
 * both (docs/performance.md#hcasim-perf). Standard verbs and hcasim.h only. */
#include "testbench/bench/perf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_BATCH 64
#define UD_GRH 40 /* a UD receive buffer starts with room for the GRH */

static struct {
	struct bsys s;
	const struct perf_opts *o;
	struct ibv_qp **qp[2];   /* o->qps per host; qp[h][i] talks to qp[1-h][i] */
	struct ibv_ah *ah[2];    /* UD: the address of the other host */
	uint64_t half;           /* buffer: [0, half) outgoing, [half, 2 half) incoming */
	int inline_size;         /* effective max inline */
	int cq_mod, tx_depth;    /* effective */
	uint64_t poll_ps;        /* host.poll_ns: one look at memory in write_lat */
	uint64_t *tposted[2], *tcompleted[2]; /* BW: per side, in post / completion order */
	uint64_t *posted[2], *done[2];        /* BW: per QP */
} g;

static bool is_lat_pingpong(void)
{
	return g.o->kind == PK_LAT && (g.o->verb == PV_SEND || g.o->verb == PV_WRITE);
}

static uint64_t cfg_u64(const char *key)
{
	char v[64];

	if (hcasim_config_get(key, v, sizeof(v)))
		bs_die("hcasim_config_get %s", key);
	return strtoull(v, NULL, 0);
}

static double link_gbps(void)
{
	static const char *const speeds[] = { "sdr", "ddr", "qdr", "fdr", "edr", "hdr", "ndr" };
	static const double lane_gbps[] = { 2.0, 4.0, 8.0, 13.636, 25.0, 50.0, 100.0 };
	char sp[16], wd[16];
	double lane = 0;

	if (hcasim_config_get("link.speed", sp, sizeof(sp)) ||
	    hcasim_config_get("link.width", wd, sizeof(wd)))
		bs_die("hcasim_config_get link.speed/width");
	for (unsigned i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (!strcmp(sp, speeds[i]))
			lane = lane_gbps[i];
	return lane * strtod(wd, NULL); /* "4x" -> 4 */
}

static struct ibv_qp *make_qp(struct bhost *h, uint32_t sq, uint32_t rq)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	struct ibv_qp_init_attr init = {
		.send_cq = h->cq,
		.recv_cq = h->cq,
		.qp_type = types[g.o->conn],
		.cap = { .max_send_wr = sq, .max_recv_wr = rq, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = (uint32_t)g.inline_size },
	};
	struct ibv_qp *qp = ibv_create_qp(h->pd, &init);

	if (!qp)
		bs_die("ibv_create_qp (sq %u, rq %u, inline %d): %s", sq, rq, g.inline_size,
		       strerror(errno));
	return qp;
}

static void fill_av(struct ibv_ah_attr *av, struct bhost *peer, bool roce)
{
	memset(av, 0, sizeof(*av));
	av->is_global = roce;
	av->dlid = peer->port.lid;
	av->port_num = 1;
	av->grh.dgid = peer->gid;
	av->grh.hop_limit = 1;
}

/* RESET -> INIT -> RTR -> RTS for RC, UC or UD (ibv_modify_qp(3): each type's attributes). */
static void connect_qp(struct ibv_qp *qp, struct bhost *peer, uint32_t peer_qpn,
		       enum ibv_mtu mtu, int rd_atomic, bool roce)
{
	enum perf_conn c = g.o->conn;
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (c == PC_UD) {
		a.qkey = PERF_QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				    (c == PC_RC ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC
						: 0);
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	if (ibv_modify_qp(qp, &a, mask))
		bs_die("modify to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (c != PC_UD) {
		a.path_mtu = mtu;
		a.dest_qp_num = peer_qpn;
		a.rq_psn = 0x100;
		fill_av(&a.ah_attr, peer, roce);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	}
	if (c == PC_RC) {
		a.max_dest_rd_atomic = (uint8_t)rd_atomic;
		a.min_rnr_timer = 1;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	if (ibv_modify_qp(qp, &a, mask))
		bs_die("modify to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (c == PC_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = (uint8_t)rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(qp, &a, mask))
		bs_die("modify to RTS");
}

static void post_recv(int side, int q)
{
	struct bhost *h = &g.s.h[side];
	uint32_t len = (uint32_t)g.half;

	bs_post_recv(g.qp[side][q], (uint64_t)q, (uintptr_t)h->buf + g.half, len, h->mr->lkey);
}

void perf_setup(const struct perf_opts *o, uint64_t max_size, struct perf_info *info)
{
	const char *cfg[8];
	int n = 0, rd_atomic, cqe;
	struct ibv_device_attr da;
	uint32_t sq, rq;
	unsigned active;

	memset(&g, 0, sizeof(g));
	g.o = o;
	if (o->roce) {
		cfg[n++] = "hca.link_layer";
		cfg[n++] = "roce";
	}
	if (o->speed) {
		cfg[n++] = "link.speed";
		cfg[n++] = o->speed;
	}
	if (o->width) {
		cfg[n++] = "link.width";
		cfg[n++] = o->width;
	}
	cfg[n] = NULL;
	/* UD receives carry the GRH first; keep both halves 64-byte aligned. */
	g.half = (max_size + UD_GRH + 63) & ~63ull;
	g.tx_depth = o->tx_depth;
	g.cq_mod = o->cq_mod;
	sq = (uint32_t)(is_lat_pingpong() ? o->tx_depth + o->cq_mod : o->tx_depth);
	rq = o->verb == PV_SEND ? (uint32_t)o->rx_depth : 1;
	/* Completions that can be waiting in one CQ: the signaled sends of every QP's window
	 * and every posted receive. */
	cqe = o->qps * (o->tx_depth / (o->kind == PK_BW ? g.cq_mod : 1) + 2) +
	      (o->verb == PV_SEND ? o->qps * o->rx_depth : 0);
	if ((uint64_t)cqe > cfg_u64("hca.max_cqe") || cqe < 0)
		perf_flag_error("-q/-t/-r", "%d QPs need a CQ of %d entries: above hca.max_cqe",
				o->qps, cqe);
	bs_open(&g.s, cfg, 2 * g.half, cqe);
	if (ibv_query_device(g.s.h[0].ctx, &da))
		bs_die("ibv_query_device");
	active = 128u << g.s.h[0].port.active_mtu;
	if (o->mtu > active)
		perf_flag_error("-m", "MTU %u is above the port's active MTU %u", o->mtu, active);
	info->mtu = o->mtu ? o->mtu : active;
	if (o->conn == PC_UD && max_size > info->mtu)
		perf_flag_error("-s", "UD messages are at most one MTU (%u bytes), not %llu",
				info->mtu, (unsigned long long)max_size);
	if (o->out_reads > da.max_qp_rd_atom)
		perf_flag_error("-o", "%d outstanding reads: the device allows %d", o->out_reads,
				da.max_qp_rd_atom);
	rd_atomic = o->out_reads ? o->out_reads : da.max_qp_rd_atom;
	/* perftest's inline default: 220 (WRITE) / 236 (SEND RC, UC) / 188 (SEND UD) bytes in the
	 * latency tests, 0 in the bandwidth tests; never for READ and atomics. */
	g.inline_size = o->inline_size;
	if (g.inline_size < 0)
		g.inline_size = o->kind == PK_BW ? 0
				: o->verb == PV_WRITE ? 220
				: o->verb == PV_SEND ? (o->conn == PC_UD ? 188 : 236) : 0;
	if (o->verb == PV_READ || o->verb == PV_ATOMIC)
		g.inline_size = 0;
	if ((uint64_t)g.inline_size > cfg_u64("hca.max_inline"))
		perf_flag_error("-I", "%d bytes inline: the device takes at most %llu",
				g.inline_size, (unsigned long long)cfg_u64("hca.max_inline"));
	g.poll_ps = cfg_u64("host.poll_ns") * 1000;
	for (int h = 0; h < 2; h++) {
		g.qp[h] = calloc((size_t)o->qps, sizeof(*g.qp[h]));
		if (!g.qp[h])
			bs_die("out of memory");
		memset(g.s.h[h].buf + g.half, 0, g.half); /* write_lat polls the incoming half */
		for (int i = 0; i < o->qps; i++)
			g.qp[h][i] = make_qp(&g.s.h[h], sq, rq);
	}
	for (int h = 0; h < 2; h++) {
		for (int i = 0; i < o->qps; i++)
			connect_qp(g.qp[h][i], &g.s.h[1 - h], g.qp[1 - h][i]->qp_num,
				   bs_mtu(info->mtu), rd_atomic, o->roce);
		if (o->conn == PC_UD) {
			struct ibv_ah_attr av;

			fill_av(&av, &g.s.h[1 - h], o->roce);
			g.ah[h] = ibv_create_ah(g.s.h[h].pd, &av);
			if (!g.ah[h])
				bs_die("ibv_create_ah");
		}
		if (o->verb == PV_SEND)
			for (int i = 0; i < o->qps; i++)
				for (int k = 0; k < o->rx_depth; k++)
					post_recv(h, i);
	}
	info->inline_size = g.inline_size;
	info->out_reads = rd_atomic;
	info->cq_mod = g.cq_mod;
	info->tx_depth = o->tx_depth;
	info->link_gbps = link_gbps();
	info->roce = o->roce;
	for (int h = 0; h < 2; h++) {
		info->lid[h] = g.s.h[h].port.lid;
		info->qpn[h] = g.qp[h][0]->qp_num;
	}
}

void perf_teardown(void)
{
	for (int h = 0; h < 2; h++) {
		for (int i = 0; i < g.o->qps; i++)
			if (ibv_destroy_qp(g.qp[h][i]))
				bs_die("ibv_destroy_qp");
		if (g.ah[h] && ibv_destroy_ah(g.ah[h]))
			bs_die("ibv_destroy_ah");
		free(g.qp[h]);
	}
	bs_close(&g.s);
}

/* One WR of size bytes from side to the other side's QP q. */
static void fill_wr(int side, int q, uint64_t size, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	struct bhost *a = &g.s.h[side], *b = &g.s.h[1 - side];
	static const enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE,
						  IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD };

	/* READ and atomics land in the incoming half; the rest go out from the outgoing one. */
	*sge = (struct ibv_sge){ (uintptr_t)a->buf + (g.o->verb >= PV_READ ? g.half : 0),
				 (uint32_t)size, a->mr->lkey };
	memset(wr, 0, sizeof(*wr));
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = ops[g.o->verb];
	if (g.o->verb == PV_ATOMIC && g.o->cmp_swap)
		wr->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	if ((g.o->verb == PV_SEND || g.o->verb == PV_WRITE) && size <= (uint64_t)g.inline_size)
		wr->send_flags |= IBV_SEND_INLINE;
	if (g.o->verb == PV_WRITE || g.o->verb == PV_READ) {
		/* WRITEs go to the peer's incoming half; READs read its outgoing one. */
		wr->wr.rdma.remote_addr = (uintptr_t)b->buf + (g.o->verb == PV_WRITE ? g.half : 0);
		wr->wr.rdma.rkey = b->mr->rkey;
	} else if (g.o->verb == PV_ATOMIC) {
		wr->wr.atomic.remote_addr = (uintptr_t)b->buf;
		wr->wr.atomic.rkey = b->mr->rkey;
		wr->wr.atomic.compare_add = 1;
		wr->wr.atomic.swap = 2;
	} else if (g.o->conn == PC_UD) {
		wr->wr.ud.ah = g.ah[side];
		wr->wr.ud.remote_qpn = g.qp[1 - side][q]->qp_num;
		wr->wr.ud.remote_qkey = PERF_QKEY;
	}
}

static void check(const struct bwc *w)
{
	if (w->status != IBV_WC_SUCCESS)
		bs_die("completion status %s (wr_id 0x%llx)", ibv_wc_status_str(w->status),
		       (unsigned long long)w->wr_id);
}

/* ---- bandwidth: perftest's run_iter_bw, closed loop, per QP tx_depth WRs outstanding ---- */

struct bw_side {
	uint64_t total;  /* WRs to post on this side */
	uint64_t pc, cc; /* posted, completed (all QPs) */
};

/* Post as many post lists on QP q of side as its window (tx_depth) allows. Every cq_mod-th WR
 * and each QP's last is signaled; wr_id = q << 32 | (its number on the QP, from 1). */
static void bw_fill(int side, int q, uint64_t size, struct bw_side *bs)
{
	const struct perf_opts *o = g.o;
	uint64_t *posted = &g.posted[side][q], done = g.done[side][q], n = (uint64_t)o->iters;
	struct ibv_send_wr wr[64];
	struct ibv_sge sge[64];

	while (*posted < n) {
		uint64_t k = (uint64_t)o->post_list < n - *posted ? (uint64_t)o->post_list
								  : n - *posted;
		uint64_t now;

		if (*posted - done + k > (uint64_t)g.tx_depth)
			return;
		for (uint64_t j = 0; j < k; j++) {
			uint64_t num = *posted + j + 1;

			fill_wr(side, q, size, &wr[j], &sge[j]);
			wr[j].wr_id = (uint64_t)q << 32 | num;
			wr[j].next = j + 1 < k ? &wr[j + 1] : NULL;
			if (num % (uint64_t)g.cq_mod == 0 || num == n)
				wr[j].send_flags |= IBV_SEND_SIGNALED;
		}
		now = hcasim_now_ps();
		bs_post(g.qp[side][q], wr);
		for (uint64_t j = 0; j < k; j++)
			g.tposted[side][bs->pc++] = now;
		*posted += k;
	}
}

/* Take what side's CQ has: receives are posted again, a send completion completes its QP's
 * WRs up to it. */
static void bw_poll(int side, uint64_t size, struct bw_side *bs)
{
	struct bwc wc[POLL_BATCH];
	int n = bs_poll(&g.s.h[side], wc, POLL_BATCH);
	uint64_t now = hcasim_now_ps();

	for (int i = 0; i < n; i++) {
		int q = (int)(wc[i].wr_id >> 32);
		uint64_t num = wc[i].wr_id & 0xffffffffu;

		check(&wc[i]);
		if (wc[i].opcode == IBV_WC_RECV) {
			post_recv(side, (int)wc[i].wr_id);
			continue;
		}
		for (; g.done[side][q] < num; g.done[side][q]++)
			g.tcompleted[side][bs->cc++] = now;
		bw_fill(side, q, size, bs);
	}
}

static void bw_run(uint64_t size, struct perf_result *r)
{
	const struct perf_opts *o = g.o;
	int sides = o->bidir ? 2 : 1;
	struct bw_side bs[2] = { { 0 }, { 0 } };
	bool busy = true;

	for (int s = 0; s < sides; s++) {
		bs[s] = (struct bw_side){ .total = (uint64_t)o->iters * (uint64_t)o->qps };
		g.tposted[s] = malloc(bs[s].total * sizeof(uint64_t));
		g.tcompleted[s] = malloc(bs[s].total * sizeof(uint64_t));
		g.posted[s] = calloc((size_t)o->qps, sizeof(uint64_t));
		g.done[s] = calloc((size_t)o->qps, sizeof(uint64_t));
		if (!g.tposted[s] || !g.tcompleted[s] || !g.posted[s] || !g.done[s])
			bs_die("out of memory");
	}
	for (int q = 0; q < o->qps; q++)
		for (int s = 0; s < sides; s++)
			bw_fill(s, q, size, &bs[s]);
	while (busy) {
		busy = false;
		for (int s = 0; s < 2; s++) {
			bool sending = s < sides && bs[s].cc < bs[s].total;

			/* A send test's receiver polls too: it posts its receives again. */
			if (sending || (o->verb == PV_SEND && s >= sides && bs[0].cc < bs[0].total))
				bw_poll(s, size, &bs[s]);
			busy |= sending;
		}
	}
	r->bw_avg_Bps = r->bw_peak_Bps = r->msg_rate_mps = 0;
	for (int s = 0; s < sides; s++) {
		double span_ps = (double)(g.tcompleted[s][bs[s].total - 1] - g.tposted[s][0]);
		double win_ps = perf_min_window(g.tposted[s], g.tcompleted[s], bs[s].total);

		r->bw_avg_Bps += (double)size * (double)bs[s].total / span_ps * 1e12;
		r->msg_rate_mps += (double)bs[s].total / span_ps * 1e6;
		r->bw_peak_Bps += (double)size / win_ps * 1e12;
		free(g.tposted[s]);
		free(g.tcompleted[s]);
		free(g.posted[s]);
		free(g.done[s]);
	}
}

double perf_min_window(const uint64_t *post, const uint64_t *done, uint64_t n)
{
	double lo = 0, hi = (double)(done[n - 1] - post[0]) / (double)n;

	/* t is reachable iff some j has done[j] - t (j + 1) <= max_{i <= j} (post[i] - t i):
	 * monotone in t, so bisect. */
	for (int it = 0; it < 80 && hi - lo > 1e-9 * hi; it++) {
		double t = (lo + hi) / 2, best = -INFINITY;
		bool ok = false;

		for (uint64_t j = 0; j < n && !ok; j++) {
			double v = (double)post[j] - t * (double)j;

			if (v > best)
				best = v;
			ok = (double)done[j] - t * (double)(j + 1) <= best;
		}
		if (ok)
			hi = t;
		else
			lo = t;
	}
	return hi;
}

/* ---- latency: perftest's run_iter_lat_* ---- */

struct lat_side {
	int sig_pending; /* signaled sends not yet reaped */
	uint64_t sent;   /* sends posted (every cq_mod-th signaled) */
};

/* Take side's completions; returns the number of receives among them. */
static int lat_poll(int side, struct lat_side *ls)
{
	struct bwc wc[POLL_BATCH];
	int n = bs_poll(&g.s.h[side], wc, POLL_BATCH), recvs = 0;

	for (int i = 0; i < n; i++) {
		check(&wc[i]);
		if (wc[i].opcode == IBV_WC_RECV) {
			post_recv(side, 0);
			recvs++;
		} else {
			ls->sig_pending--;
		}
	}
	return recvs;
}

/* Post this iteration's message; every cq_mod-th and the last of a run are signaled. */
static void lat_post(int side, uint64_t size, uint8_t stamp, bool last, struct lat_side *ls)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	/* Reap the last signaled send before more than cq_mod WRs are outstanding: the SQ has
	 * tx_depth + cq_mod slots, freed by a polled signaled completion. */
	if (ls->sent % (uint64_t)g.cq_mod == 0)
		while (ls->sig_pending)
			lat_poll(side, ls);
	fill_wr(side, 0, size, &wr, &sge);
	if (ls->sent % (uint64_t)g.cq_mod == (uint64_t)g.cq_mod - 1 || last) {
		wr.send_flags |= IBV_SEND_SIGNALED;
		ls->sig_pending++;
	}
	g.s.h[side].buf[size - 1] = stamp; /* write_lat: the peer polls its last byte */
	bs_post(g.qp[side][0], &wr);
	ls->sent++;
}

/* Wait until side has the message of this iteration: a RECV completion, or (write_lat) the
 * stamp in the last byte of its incoming half, checked once per host.poll_ns as a CPU polling
 * memory would. */
static void lat_wait(int side, uint64_t size, uint8_t stamp, struct lat_side *ls)
{
	if (g.o->verb == PV_SEND) {
		while (!lat_poll(side, ls))
			;
		return;
	}
	while (*(volatile uint8_t *)(g.s.h[side].buf + g.half + size - 1) != stamp)
		hcasim_run_for_ps(g.poll_ps);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void lat_run(uint64_t size, struct perf_result *r)
{
	const struct perf_opts *o = g.o;
	uint64_t n = (uint64_t)o->iters, *t = malloc(n * sizeof(uint64_t));
	struct lat_side ls[2] = { { 0 }, { 0 } };
	double div, sum = 0, var = 0;
	uint64_t m;

	if (!t)
		bs_die("out of memory");
	for (uint64_t i = 0; i < n; i++) {
		uint8_t stamp = (uint8_t)(1 + i % 255); /* never 0, the incoming halves' start */

		t[i] = hcasim_now_ps();
		if (is_lat_pingpong()) {
			lat_post(0, size, stamp, i + 1 == n, &ls[0]);
			lat_wait(1, size, stamp, &ls[1]);
			lat_post(1, size, stamp, i + 1 == n, &ls[1]);
			lat_wait(0, size, stamp, &ls[0]);
		} else {
			struct ibv_send_wr wr;
			struct ibv_sge sge;
			struct bwc w;

			fill_wr(0, 0, size, &wr, &sge);
			wr.send_flags |= IBV_SEND_SIGNALED;
			bs_post(g.qp[0][0], &wr);
			while (!bs_poll(&g.s.h[0], &w, 1))
				;
			check(&w);
		}
	}
	for (int s = 0; s < 2; s++) /* the next size starts with an empty SQ */
		while (ls[s].sig_pending)
			lat_poll(s, &ls[s]);
	/* perftest's print_report_lat: iteration starts' differences, sorted, the largest
	 * PERF_LAT_TAIL dropped; half of them for a ping-pong. */
	for (uint64_t i = 0; i + 1 < n; i++)
		t[i] = t[i + 1] - t[i];
	qsort(t, n - 1, sizeof(*t), cmp_u64);
	m = n - 1 - PERF_LAT_TAIL;
	div = 1e6 * (is_lat_pingpong() ? 2.0 : 1.0); /* ps -> usec */
	for (uint64_t i = 0; i < m; i++)
		sum += (double)t[i] / div;
	r->t_avg = sum / (double)m;
	for (uint64_t i = 0; i < m; i++)
		var += ((double)t[i] / div - r->t_avg) * ((double)t[i] / div - r->t_avg);
	r->t_stdev = sqrt(var / (double)m);
	r->t_min = (double)t[0] / div;
	r->t_max = (double)t[m] / div;
	r->t_typical = ((m - 1) % 2 ? (double)(t[m / 2] + t[m / 2 - 1]) / 2.0 : (double)t[m / 2]) /
		       div;
	r->t_p99 = (double)t[(uint64_t)ceil((double)m * 0.99)] / div;
	r->t_p999 = (double)t[(uint64_t)ceil((double)m * 0.999)] / div;
	free(t);
}

void perf_run_size(const struct perf_opts *o, uint64_t size, struct perf_result *r)
{
	struct hcasim_dev_counters c0[2], c1[2];
	uint64_t t0, ev0;
	double w0;

	memset(r, 0, sizeof(*r));
	r->size = size;
	r->iters = (uint64_t)o->iters;
	for (int h = 0; h < 2; h++)
		if (hcasim_dev_counters(h, &c0[h]))
			bs_die("hcasim_dev_counters");
	ev0 = hcasim_events_executed();
	t0 = hcasim_now_ps();
	w0 = bs_wall();
	if (o->kind == PK_BW)
		bw_run(size, r);
	else
		lat_run(size, r);
	r->wall_s = bs_wall() - w0;
	r->sim_ps = hcasim_now_ps() - t0;
	r->events = hcasim_events_executed() - ev0;
	for (int h = 0; h < 2; h++) {
		if (hcasim_dev_counters(h, &c1[h]))
			bs_die("hcasim_dev_counters");
		r->tx_pkts += c1[h].tx_pkts - c0[h].tx_pkts;
	}
}
