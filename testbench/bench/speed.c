/* hcasim-bench, section B of docs/targets (simulator speed, wall clock): 4 KiB packets and
 * 64 B messages per wall second, the same with the Verilated RTL blocks in the loop against pure
 * C, idle skipping through seconds of retry exhaustion, the cost per packet from 1 to 16 K
 * active QPs, and 64 K connected QPs (wall time and peak RSS).
 * Each scenario prints the figures of one run; the report takes medians over several. */
#include "testbench/bench/bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The pkts4k stream: 1 250 RDMA WRITEs of 64 KiB at MTU 4096, 16 outstanding, on a new boot. */
static void pkts4k_stream(struct bstream_res *r)
{
	struct ibv_qp *qa, *qb;
	struct bsys s;

	bs_open(&s, NULL, 65536, 256);
	bs_pair(&s, &qa, &qb, 64, 1, NULL);
	bs_stream(&s,
		  &(struct bstream_cfg){ .qp = &qa, .nqp = 1, .op = IBV_WR_RDMA_WRITE,
					 .len = 65536, .chain = 1, .chains_per_qp = 16,
					 .msgs = 1250 },
		  r);
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	bs_close(&s);
}

/* The msgs64 stream: 16 QPs of inline 64 B RDMA WRITEs, chains of 16, 40 000 in all, on a new
 * boot. */
static void msgs64_stream(struct bstream_res *r)
{
	enum { NQP = 16 };
	struct ibv_qp *qa[NQP], *qb[NQP];
	struct bsys s;

	bs_open(&s, NULL, 4096, 4096);
	for (int i = 0; i < NQP; i++)
		bs_pair(&s, &qa[i], &qb[i], 64, 1, NULL);
	bs_stream(&s,
		  &(struct bstream_cfg){ .qp = qa, .nqp = NQP, .op = IBV_WR_RDMA_WRITE, .len = 64,
					 .inline_data = true, .chain = 16, .chains_per_qp = 4,
					 .msgs = 40000 },
		  r);
	for (int i = 0; i < NQP; i++) {
		ibv_destroy_qp(qa[i]);
		ibv_destroy_qp(qb[i]);
	}
	bs_close(&s);
}

/* 4 KiB packets per wall second: a stream of 64 KiB RDMA WRITEs at MTU 4096. */
static int sc_pkts4k(void)
{
	struct bstream_res r;
	double pps;

	pkts4k_stream(&r);
	pps = (double)r.tx_pkts / r.wall_s;
	bs_fig("pkts4k.per_wall_s", pps);
	bs_fig("pkts4k.sim_over_wall", (double)r.sim_ps / 1e12 / r.wall_s);
	bs_info("pkts4k", "%" PRIu64 " 4 KiB WRITE packets (%" PRIu64 " WRITEs of 64 KiB, 16 "
		"outstanding) in %.3f s wall, %.3f ms simulated (%.4f of real time); %.2f kernel "
		"events per packet", r.tx_pkts, r.msgs, r.wall_s, (double)r.sim_ps / 1e9,
		(double)r.sim_ps / 1e12 / r.wall_s, (double)r.events / (double)r.tx_pkts);
	return 0;
}

/* 64 B messages per wall second: 16 QPs of inline 64 B RDMA WRITEs, chains of 16. */
static int sc_msgs64(void)
{
	struct bstream_res r;

	msgs64_stream(&r);
	bs_fig("msgs64.per_wall_s", (double)r.msgs / r.wall_s);
	bs_fig("msgs64.sim_over_wall", (double)r.sim_ps / 1e12 / r.wall_s);
	bs_info("msgs64", "%" PRIu64 " 64 B WRITEs on %d QPs in %.3f s wall, %.3f ms simulated "
		"(%.4f of real time); %.2f kernel events per message", r.msgs, 16, r.wall_s,
		(double)r.sim_ps / 1e9, (double)r.sim_ps / 1e12 / r.wall_s,
		(double)r.events / (double)r.msgs);
	return 0;
}

/* Verilated RTL blocks in the loop: the msgs64 and pkts4k streams, side by side in one process,
 * each on boots with every block with an RTL twin (sched, cqe, psn; docs/rtl.md) in model
 * mode and in rtl mode (HCASIM_IMPL), in the order model, rtl, rtl, model so that a drift of
 * the machine's load weighs on both. The simulated run must be the same in both modes (time,
 * events, packets); the figure is wall time in rtl mode over wall time in model mode, the
 * larger of the two streams. */
static int sc_rtl(void)
{
	static const struct {
		const char *name;
		void (*run)(struct bstream_res *r);
	} w[] = { { "msgs64", msgs64_stream }, { "pkts4k", pkts4k_stream } };
	static const char *const order[] = { "all=model", "all=rtl", "all=rtl", "all=model" };
	double worst = 0;

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		double wall[2] = { 0, 0 }, ratio;
		struct bstream_res first = { 0 };
		char key[64];

		for (int k = 0; k < 4; k++) {
			int rtl = k == 1 || k == 2;
			struct bstream_res r;

			if (setenv("HCASIM_IMPL", order[k], 1))
				bs_die("setenv HCASIM_IMPL");
			w[i].run(&r);
			if (k == 0)
				first = r;
			else if (r.sim_ps != first.sim_ps || r.events != first.events ||
				 r.tx_pkts != first.tx_pkts || r.msgs != first.msgs)
				bs_die("%s: HCASIM_IMPL=%s simulated another run (%" PRIu64 " ps, %"
				       PRIu64 " events) than all=model (%" PRIu64 " ps, %" PRIu64
				       " events)", w[i].name, order[k], r.sim_ps, r.events,
				       first.sim_ps, first.events);
			wall[rtl] += r.wall_s;
		}
		ratio = wall[1] / wall[0];
		if (ratio > worst)
			worst = ratio;
		snprintf(key, sizeof(key), "rtl.%s.ratio", w[i].name);
		bs_fig(key, ratio);
		bs_info("rtl", "%s (%" PRIu64 " messages, %" PRIu64 " request packets, %.3f ms "
			"simulated, identical in both modes): %.3f s wall in rtl mode, %.3f s in "
			"model mode (two runs each): %.3fx", w[i].name, first.msgs, first.tx_pkts,
			(double)first.sim_ps / 1e9, wall[1], wall[0], ratio);
	}
	unsetenv("HCASIM_IMPL");
	bs_fig("rtl.ratio", worst);
	return 0;
}

/* Retry exhaustion to wait through: an RC SEND from host 0 to a QPN that does not exist on
 * host 1, timeout 18 (1.074 s) and retry_cnt 7: 8 expiries, 8.59 s of simulated time. Returns
 * the QP pair (qa sends); the SEND is not posted yet. */
static void exhaustion_setup(struct bsys *s, struct ibv_qp **qa, struct ibv_qp **qb,
			     struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	struct bconn c = bconn_default;

	c.timeout = 18;
	c.retry_cnt = 7;
	bs_open(s, NULL, 4096, 64);
	*qa = bs_qp(&s->h[0], 8, 1);
	*qb = bs_qp(&s->h[1], 8, 1);
	if (!*qa || !*qb)
		bs_die("ibv_create_qp");
	bs_connect(&s->h[0], *qa, &s->h[1], (*qb)->qp_num + 1000, &c);
	bs_connect(&s->h[1], *qb, &s->h[0], (*qa)->qp_num, &c);
	*sge = (struct ibv_sge){ (uintptr_t)s->h[0].buf, 100, s->h[0].mr->lkey };
	*wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = sge, .num_sge = 1,
				    .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
}

static void exhaustion_end(struct bsys *s, struct ibv_qp *qa, struct ibv_qp *qb,
			   enum ibv_wc_status st, const char *name)
{
	if (st != IBV_WC_RETRY_EXC_ERR)
		bs_die("%s: status %s, not retry exceeded", name, ibv_wc_status_str(st));
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	bs_close(s);
}

/* Idle skipping: the retry exhaustion waited for in ibv_get_cq_event. Only the wait is timed
 * (not the boot). */
static int sc_idle(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct bsys s;
	struct bwc w;
	uint64_t t0, ev0;
	double w0, wall;

	exhaustion_setup(&s, &qa, &qb, &wr, &sge);
	ev0 = hcasim_events_executed();
	t0 = hcasim_now_ps();
	w0 = bs_wall();
	bs_post(qa, &wr);
	bs_wait(&s.h[0], &w);
	wall = bs_wall() - w0;
	bs_fig("idle.wall_s", wall);
	bs_fig("idle.sim_s", (double)(hcasim_now_ps() - t0) / 1e12);
	bs_info("idle", "timeout 18, retry_cnt 7: IBV_WC_RETRY_EXC_ERR after %.6f s simulated, "
		"%" PRIu64 " kernel events, %.6f s wall", (double)(hcasim_now_ps() - t0) / 1e12,
		hcasim_events_executed() - ev0, wall);
	exhaustion_end(&s, qa, qb, w.status, "idle");
	return 0;
}

/* Exact skipping for busy pollers: the same retry exhaustion waited for by a plain
 * ibv_poll_cq loop (host.poll_skip 1, the default). Poll by poll it takes 430 M empty polls;
 * the figure is the wall time of the loop, the polls it made, and the simulated time. */
static int sc_busypoll(void)
{
	struct ibv_qp *qa, *qb;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct bsys s;
	uint64_t t0, polls = 0, t1;
	double w0, wall;

	exhaustion_setup(&s, &qa, &qb, &wr, &sge);
	t0 = hcasim_now_ps();
	w0 = bs_wall();
	bs_post(qa, &wr);
	do
		polls++;
	while (ibv_poll_cq(s.h[0].cq, 1, &wc) == 0);
	wall = bs_wall() - w0;
	t1 = hcasim_now_ps();
	bs_fig("busypoll.wall_s", wall);
	bs_fig("busypoll.sim_s", (double)(t1 - t0) / 1e12);
	bs_fig("busypoll.polls", (double)polls);
	bs_info("busypoll", "timeout 18, retry_cnt 7, a plain ibv_poll_cq loop: "
		"IBV_WC_RETRY_EXC_ERR seen at t = %" PRIu64 " ps (%.6f s simulated) after %" PRIu64
		" calls (poll by poll: one per host.poll_ns, %" PRIu64 "), %.6f s wall",
		t1, (double)(t1 - t0) / 1e12, polls, (t1 - t0) / 20000, wall);
	exhaustion_end(&s, qa, qb, wc.status, "busypoll");
	return 0;
}

/* Cost per packet from 1 to 16 K active QPs, side by side in one boot: 16 384 connected pairs
 * are made once; then for each count Q the first Q QPs carry the same 16 384 inline 64 B
 * WRITEs (16 384 / Q each, every one signaled, up to 16 outstanding per QP). The figure is
 * wall time per request packet; the ratio is that of 16 384 QPs to 1 QP in the same run. */
/* One pass of qpscale on a system opened with cfg; FIG <key>.<q>.ns_per_pkt and <key>.ratio. */
static void qpscale_pass(const char *const *cfg, const char *key, const char *what)
{
	static const int counts[] = { 1, 16, 256, 4096, 16384 };
	enum { NMAX = 16384, MSGS = 16384, NC = sizeof(counts) / sizeof(counts[0]) };
	struct ibv_qp **qa = calloc(NMAX, sizeof(*qa)), **qb = calloc(NMAX, sizeof(*qb));
	double cost[NC], w0;
	struct bsys s;
	char k[64];

	if (!qa || !qb)
		bs_die("out of memory");
	bs_open(&s, cfg, 4096, 65536);
	w0 = bs_wall();
	for (int i = 0; i < NMAX; i++)
		bs_pair(&s, &qa[i], &qb[i], 16, 1, NULL);
	bs_info(key, "%s: %d connected pairs made in %.2f s wall", what, NMAX, bs_wall() - w0);
	{
		/* Warm-up, not measured: one WRITE on every QP, so that the first use of each
		 * QP's queue page (a page fault in this process) is not counted as per-packet
		 * cost of whichever run happens to touch it first. */
		struct bstream_res r;

		bs_stream(&s,
			  &(struct bstream_cfg){ .qp = qa, .nqp = NMAX, .op = IBV_WR_RDMA_WRITE,
						 .len = 64, .inline_data = true, .chain = 1,
						 .chains_per_qp = 1, .msgs = NMAX },
			  &r);
	}
	for (unsigned i = 0; i < NC; i++) {
		int q = counts[i], per_qp = MSGS / q;
		struct bstream_res r;

		bs_stream(&s,
			  &(struct bstream_cfg){ .qp = qa, .nqp = q, .op = IBV_WR_RDMA_WRITE,
						 .len = 64, .inline_data = true, .chain = 1,
						 .chains_per_qp = per_qp < 16 ? per_qp : 16,
						 .msgs = MSGS },
			  &r);
		cost[i] = r.wall_s / (double)r.tx_pkts * 1e9;
		snprintf(k, sizeof(k), "%s.%d.ns_per_pkt", key, q);
		bs_fig(k, cost[i]);
		bs_info(key, "%s: %d active QPs: %" PRIu64 " packets in %.3f s wall (%.1f us "
			"each), %.3f ms simulated, %.2f kernel events per packet", what, q, r.tx_pkts,
			r.wall_s, cost[i] / 1000.0, (double)r.sim_ps / 1e9,
			(double)r.events / (double)r.tx_pkts);
	}
	snprintf(k, sizeof(k), "%s.ratio", key);
	bs_fig(k, cost[NC - 1] / cost[0]);
	/* No teardown: destroying 32 K QPs one by one costs as much wall time as making them,
	 * and is not measured; the next pass reboots the system. */
	hcasim_shutdown();
	free(qa);
	free(qb);
}

/* The figure: with a QP context cache that holds every QP, each count does the same
 * simulated work per packet, so the ratio is the simulator's own. With the default 256
 * entries, 4 096 and more active QPs miss on every packet (an 800-byte context read and
 * write-back the model simulates): reported beside it. */
static int sc_qpscale(void)
{
	static const char *const all[] = { "hca.qpc_cache_entries", "32768", NULL };

	qpscale_pass(all, "qpscale", "QPC cache 32768 entries");
	qpscale_pass(NULL, "qpscale.default", "QPC cache 256 entries (default)");
	return 0;
}

/* n RC QPs on hcasim0, each connected to its own QP on hcasim1, timed from the first
 * ibv_create_qp to the last RTS; peak RSS (VmHWM) of the whole process. */
static void qps_connected(int n, const char *key)
{
	struct ibv_qp **qa = calloc((size_t)n, sizeof(*qa)), **qb = calloc((size_t)n, sizeof(*qb));
	char k[64];
	struct bsys s;
	double w0, wall;
	uint64_t t0;
	long base;

	if (!qa || !qb)
		bs_die("out of memory");
	bs_open(&s, NULL, 4096, 64);
	base = bs_vmhwm_kib();
	t0 = hcasim_now_ps();
	w0 = bs_wall();
	for (int i = 0; i < n; i++) {
		qa[i] = bs_qp(&s.h[0], 1, 1);
		qb[i] = bs_qp(&s.h[1], 1, 1);
		if (!qa[i] || !qb[i])
			bs_die("ibv_create_qp %d", i);
	}
	for (int i = 0; i < n; i++) {
		bs_connect(&s.h[0], qa[i], &s.h[1], qb[i]->qp_num, NULL);
		bs_connect(&s.h[1], qb[i], &s.h[0], qa[i]->qp_num, NULL);
	}
	wall = bs_wall() - w0;
	snprintf(k, sizeof(k), "%s.wall_s", key);
	bs_fig(k, wall);
	snprintf(k, sizeof(k), "%s.rss_mib", key);
	bs_fig(k, (double)bs_vmhwm_kib() / 1024.0);
	bs_info(key, "%d RC pairs (%d QPs) created and moved to RTS in %.3f s wall, %.3f ms "
		"simulated; VmHWM %.1f MiB (%.1f MiB after boot)", n, 2 * n, wall,
		(double)(hcasim_now_ps() - t0) / 1e9, (double)bs_vmhwm_kib() / 1024.0,
		(double)base / 1024.0);
	/* No teardown (not measured, and as slow as the setup): the process ends here. */
	free(qa);
	free(qb);
}

/* 64 K QPs in all: 32 768 pairs. */
static int sc_qp64k(void)
{
	qps_connected(32768, "qp64k");
	return 0;
}

/* 64 K QPs on each host: 65 536 pairs (not in the report: minutes of wall time). */
static int sc_qp64k_per_host(void)
{
	qps_connected(65536, "qp64k_per_host");
	return 0;
}

const struct bscenario bench_speed[] = {
	{ "pkts4k", "simulated 4 KiB packets per wall second", sc_pkts4k },
	{ "msgs64", "64 B messages per wall second", sc_msgs64 },
	{ "rtl", "msgs64 and pkts4k with the Verilated RTL blocks against pure C", sc_rtl },
	{ "idle", "idle skipping: 8.6 s of simulated retry exhaustion", sc_idle },
	{ "busypoll", "exact skipping for a busy poller: the same 8.6 s in an ibv_poll_cq loop",
	  sc_busypoll },
	{ "qpscale", "wall cost per packet, 1 to 16 K active QPs", sc_qpscale },
	{ "qp64k", "64 K QPs (32 K pairs) created and connected", sc_qp64k },
	{ "qp64k-per-host", "64 K QPs on each host (64 K pairs); not in the report",
	  sc_qp64k_per_host },
	{ NULL, NULL, NULL },
};
