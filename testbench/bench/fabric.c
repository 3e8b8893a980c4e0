/* hcasim-bench, section B: two hosts in two processes of a fabric (docs/fabric.md) against one
 * process. The pkts4k and msgs64 streams of speed.c run side by side in one run: in one process
 * (both hosts), and with host 0 and host 1 in two fork()ed processes joined by a channel, host
 * 0 driving the stream and host 1 waiting in the library (ibv_get_async_event) until host 0
 * leaves. The figures: each stream's rate in both ways, their ratio (two processes over one),
 * and what synchronisation costs per simulated microsecond (channel messages, waits, their
 * wall time; hcasim_fabric_counts). */
#include "testbench/bench/bench.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { FAB_MAXQP = 16 };

/* What one host tells the other: its port, buffer and QPs. */
struct fab_info {
	uint16_t lid;
	union ibv_gid gid;
	uint64_t addr;
	uint32_t rkey;
	uint32_t qpn[FAB_MAXQP];
};

/* One stream as the report needs it. */
struct fab_run {
	double wall_s;
	uint64_t sim_ps, units; /* units: packets (pkts4k) or messages (msgs64) */
	struct hcasim_fabric_counts fc;
};

/* A stream: its QPs, buffers and configuration. */
struct fab_stream {
	const char *name;
	int nqp;
	size_t buf;
	int cqe;
	struct bstream_cfg cfg;
	bool packets; /* the unit is the request packet (else the message) */
};

static void xfer(int fd, void *p, size_t n, bool out)
{
	ssize_t r = out ? write(fd, p, n) : read(fd, p, n);

	if (r != (ssize_t)n)
		bs_die("fabric: pipe %s: %s", out ? "write" : "read", r < 0 ? strerror(errno) : "short");
}

/* Host h of the fabric in dir, in this (child) process: open, exchange with the peer over
 * (in, out), connect; host 0 runs the stream and writes its figures to res. */
static void fab_host(int h, const char *dir, const struct fab_stream *st, int in, int out, int res)
{
	struct fab_info me = { 0 }, peer;
	struct ibv_qp *qp[FAB_MAXQP];
	struct ibv_mr peer_mr = { 0 };
	struct bhost host, far;
	struct ibv_device **list;
	struct bstream_res r;
	struct bsys s;
	int n;
	char c = 1;

	setenv("HCASIM_FABRIC", dir, 1);
	setenv("HCASIM_HOST", h ? "1" : "0", 1);
	if (hcasim_boot() || !(list = ibv_get_device_list(&n)) || n != 1)
		bs_die("fabric: host %d: boot", h);
	bs_host_open(&host, list[0], st->buf, st->cqe);
	me.lid = host.port.lid;
	me.gid = host.gid;
	me.addr = (uintptr_t)host.buf;
	me.rkey = host.mr->rkey;
	for (int i = 0; i < st->nqp; i++) {
		if (!(qp[i] = bs_qp(&host, 64, 1)))
			bs_die("fabric: host %d: QP", h);
		me.qpn[i] = qp[i]->qp_num;
	}
	xfer(out, &me, sizeof(me), true);
	xfer(in, &peer, sizeof(peer), false);
	far = (struct bhost){ .buf = (uint8_t *)(uintptr_t)peer.addr, .buf_bytes = st->buf,
			      .mr = &peer_mr };
	far.port.lid = peer.lid;
	far.gid = peer.gid;
	peer_mr.rkey = peer.rkey;
	for (int i = 0; i < st->nqp; i++)
		bs_connect(&host, qp[i], &far, peer.qpn[i], NULL);
	xfer(out, &c, 1, true); /* connected: the peer may send */
	xfer(in, &c, 1, false);
	if (h == 1) {
		struct ibv_async_event ev;

		/* In the library until host 0 leaves: then nothing can come (EDEADLK). */
		while (!ibv_get_async_event(host.ctx, &ev))
			ibv_ack_async_event(&ev);
		_exit(errno == EDEADLK ? 0 : 2);
	}
	memset(&s, 0, sizeof(s));
	s.h[0] = host;
	s.h[1] = far;
	{
		struct bstream_cfg cfg = st->cfg;
		struct fab_run fr;

		cfg.qp = qp;
		cfg.to = &far;
		bs_stream(&s, &cfg, &r);
		fr = (struct fab_run){ .wall_s = r.wall_s, .sim_ps = r.sim_ps,
				    .units = st->packets ? r.tx_pkts : r.msgs };
		hcasim_fabric_counts(&fr.fc);
		xfer(res, &fr, sizeof(fr), true);
	}
	hcasim_shutdown(); /* its link says TERMINATE: host 1's wait ends */
	_exit(0);
}

/* The stream with its two hosts in two processes. */
static void two_processes(const struct fab_stream *st, struct fab_run *fr)
{
	char dir[] = "/tmp/hcasim-bench-fabric-XXXXXX";
	int p01[2], p10[2], res[2], status;
	pid_t pid[2];

	if (!mkdtemp(dir) || pipe(p01) || pipe(p10) || pipe(res))
		bs_die("fabric: set-up");
	for (int h = 0; h < 2; h++) {
		pid[h] = fork();
		if (pid[h] < 0)
			bs_die("fabric: fork");
		if (pid[h] == 0)
			fab_host(h, dir, st, h ? p01[0] : p10[0], h ? p10[1] : p01[1], res[1]);
	}
	xfer(res[0], fr, sizeof(*fr), false);
	for (int h = 0; h < 2; h++)
		if (waitpid(pid[h], &status, 0) != pid[h] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			bs_die("fabric: host %d's process failed", h);
	for (int i = 0; i < 2; i++) {
		close(p01[i]);
		close(p10[i]);
		close(res[i]);
	}
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			bs_die("fabric: %s", cmd);
	}
}

static void fig(const char *stream, const char *what, double v)
{
	char key[96];

	snprintf(key, sizeof(key), "fabric.%s.%s", stream, what);
	bs_fig(key, v);
}

/* The same stream with both hosts in this process. */
static void one_process(const struct fab_stream *st, struct fab_run *fr)
{
	struct ibv_qp *qa[FAB_MAXQP], *qb[FAB_MAXQP];
	struct bstream_cfg cfg = st->cfg;
	struct bstream_res r;
	struct bsys s;

	bs_open(&s, NULL, st->buf, st->cqe);
	for (int i = 0; i < st->nqp; i++)
		bs_pair(&s, &qa[i], &qb[i], 64, 1, NULL);
	cfg.qp = qa;
	bs_stream(&s, &cfg, &r);
	*fr = (struct fab_run){ .wall_s = r.wall_s, .sim_ps = r.sim_ps,
				    .units = st->packets ? r.tx_pkts : r.msgs };
	for (int i = 0; i < st->nqp; i++)
		bs_unpair(qa[i], qb[i]);
	bs_close(&s);
}

static const struct fab_stream streams[] = {
	{ "pkts4k", 1, 65536, 256,
	  { .nqp = 1, .op = IBV_WR_RDMA_WRITE, .len = 65536, .chain = 1, .chains_per_qp = 16,
	    .msgs = 1250 }, true },
	{ "msgs64", 16, 4096, 4096,
	  { .nqp = 16, .op = IBV_WR_RDMA_WRITE, .len = 64, .inline_data = true, .chain = 16,
	    .chains_per_qp = 4, .msgs = 40000 }, false },
};

/* Each stream in one process and in two, in the order one, two, two, one (a drift of the
 * machine's load weighs on both); the rates are the sums over the two runs of each way. */
static int sc_fabric(void)
{
	for (size_t i = 0; i < sizeof(streams) / sizeof(streams[0]); i++) {
		const struct fab_stream *st = &streams[i];
		struct fab_run a, b, c, d;
		double one, two, sim_us;

		one_process(st, &a);
		two_processes(st, &b);
		two_processes(st, &c);
		one_process(st, &d);
		one = (double)(a.units + d.units) / (a.wall_s + d.wall_s);
		two = (double)(b.units + c.units) / (b.wall_s + c.wall_s);
		sim_us = (double)(b.sim_ps + c.sim_ps) / 1e6;
		fig(st->name, "one_per_wall_s", one);
		fig(st->name, "two_per_wall_s", two);
		fig(st->name, "ratio", two / one);
		fig(st->name, "syncs_per_sim_us",
			   (double)(b.fc.syncs_sent + c.fc.syncs_sent) / sim_us);
		fig(st->name, "wait_ns_per_sim_us",
			   (double)(b.fc.wait_ns + c.fc.wait_ns) / sim_us);
		bs_info("fabric", "%s: one process %.4g/s (%.3f ms simulated), two processes "
			"%.4g/s (%.3f ms simulated; host 0 wrote %" PRIu64 " frames and %" PRIu64
			" SYNCs, took %" PRIu64 " messages, waited %" PRIu64 " times for %.1f ms of "
			"wall time, per run)", st->name, one, (double)a.sim_ps / 1e9, two,
			(double)b.sim_ps / 1e9, b.fc.packets_sent, b.fc.syncs_sent,
			b.fc.messages_taken, b.fc.waits, (double)b.fc.wait_ns / 1e6);
	}
	return 0;
}

const struct bscenario bench_fabric[] = {
	{ "fabric", "pkts4k and msgs64 with the two hosts in two processes against one", sc_fabric },
	{ NULL, NULL, NULL },
};
