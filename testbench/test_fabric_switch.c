/* fabric (switch): sim.topology=switch across processes (docs/fabric.md#a-switch-across-processes).
 * Eight hosts in four processes, two each, the switch in host 0's: all-to-all RC WRITEs land
 * byte for byte (IB through the LFT, RoCE through the learning bridge); a multicast group
 * across the processes delivers each datagram to every member once, and the LFT and MFT the
 * SM programmed are those of a one-process run; seven hosts writing to one congested output
 * port are held back by credits (IB) or PFC pauses (RoCE) across the cut, without a loss. */
#include "tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOSTS 8
#define PROCS 4
static unsigned WAIT_S = 150; /* wall time any wait of the test may take */
#define A2A_LEN (32768u + 123u)		/* not a multiple of the MTU */
#define CONG_LEN (256u * 1024u)
#define MLID 0xc007
#define SENDS 3
#define MEMBERS (HOSTS - 1)		/* host 7 stays out of the group */
#define DG_LEN 300

/* What a host tells the others. */
struct fs_host {
	uint32_t qpn[HOSTS]; /* RC: its QP to host b */
	uint32_t rkey;
	uint64_t addr;	     /* its receive buffer */
	uint16_t lid;
	union ibv_gid gid;
};

/* Shared by the test's processes (MAP_SHARED before the fork). */
struct fs_shared {
	struct fs_host host[HOSTS];
	atomic_uint arrived[8];	      /* per barrier: the processes there */
	_Atomic uint64_t when[8][PROCS]; /* their simulated times there */
	char err[PROCS + 1][300];     /* each process's first failure; [PROCS]: one-process run */
	uint64_t stalls[PROCS];	      /* frames each held back (its hosts' ports) */
	uint64_t fwd[2][HOSTS + 1];   /* switch forwarding of LIDs 1..HOSTS, then MLID: the
				       * fabric's, the one-process run's */
	uint64_t recvd[HOSTS];	      /* multicast: datagrams each host received */
};

static struct fs_shared *sh;
static int me; /* this process: hosts 2 me, 2 me + 1 */
static char fdir[] = "/tmp/hcasim-fabric-sw-XXXXXX";

struct fs_dev {
	int host;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[HOSTS];
	struct ibv_mr *src, *dst;
};

static struct fs_dev dv[2];

static void fs_setup(void)
{
	cr_assert_not_null(mkdtemp(fdir));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(sh, MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
}

static void fs_teardown(void)
{
	munmap(sh, sizeof(*sh));
	if (!getenv("FB_KEEP"))
		tb_rm_tmpdir(fdir);
}

static int fs_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fs_fail(const char *fmt, ...)
{
	va_list ap;
	char *e = sh->err[me];

	if (!e[0]) {
		int n;

		va_start(ap, fmt);
		n = vsnprintf(e, sizeof(sh->err[0]), fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < sizeof(sh->err[0]))
			snprintf(e + n, sizeof(sh->err[0]) - (size_t)n, " (%s)", hcasim_last_error());
	}
	return -1;
}

static uint64_t wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

/* Every process reaches barrier b (within WAIT_S of wall time); then each runs its simulation
 * to 10 us past the latest time any of them had there, so that what one did before the
 * barrier (a QP connected, a group joined: the switch learns of a join a link latency later)
 * comes before, in simulated time, what another does after it. */
static int fs_barrier(int b)
{
	struct timespec ms = { 0, 1000000 };
	uint64_t t0 = wall_s(), t = 0;

	sh->when[b][me] = hcasim_now_ps();
	if (getenv("FS_DEBUG"))
		fprintf(stderr, "proc %d barrier %d at %llu ps, wall %llu\n", me, b,
			(unsigned long long)hcasim_now_ps(), (unsigned long long)wall_s());
	atomic_fetch_add(&sh->arrived[b], 1);
	while (atomic_load(&sh->arrived[b]) < PROCS) {
		if (wall_s() - t0 > WAIT_S)
			return fs_fail("barrier %d: the other processes did not come in %u s", b,
				       WAIT_S);
		nanosleep(&ms, NULL);
	}
	for (int p = 0; p < PROCS; p++)
		t = sh->when[b][p] > t ? sh->when[b][p] : t;
	t += 10 * 1000 * 1000ull;
	if (t > hcasim_now_ps())
		hcasim_run_for_ps(t - hcasim_now_ps());
	return hcasim_halted() ? fs_fail("halted: %s", hcasim_halted()) : 0;
}

/* n completions of d's CQ, all successful. */
static int fs_poll(struct fs_dev *d, struct ibv_wc *wc, int n)
{
	uint64_t t0 = wall_s();

	for (int got = 0, r; got < n; got += r) {
		if ((r = ibv_poll_cq(d->cq, n - got, wc + got)) < 0)
			return fs_fail("host %d: poll", d->host);
		if (hcasim_halted())
			return fs_fail("host %d: halted: %s", d->host, hcasim_halted());
		if (wall_s() - t0 > WAIT_S)
			return fs_fail("host %d: %d of %d completions in %u s", d->host, got, n,
				       WAIT_S);
	}
	for (int i = 0; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS)
			return fs_fail("host %d: wr %llu: %s", d->host,
				       (unsigned long long)wc[i].wr_id,
				       ibv_wc_status_str(wc[i].status));
	return 0;
}

static uint8_t pattern(int a, size_t i)
{
	return (uint8_t)(i * 13 + (size_t)a * 29 + (i >> 8));
}

static struct ibv_mr *fs_mr(struct fs_dev *d, size_t len)
{
	uint8_t *buf = calloc(1, len);
	struct ibv_mr *mr = buf ? ibv_reg_mr(d->pd, buf, len, IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_REMOTE_WRITE) : NULL;

	if (!mr)
		free(buf);
	return mr;
}

/* Open this process's device for host h: a PD, a CQ, src (filled with h's pattern) and dst
 * buffers, and tell the others its LID, GID, dst and rkey. */
static int fs_open(struct ibv_device *dev, int h, struct fs_dev *d, size_t src, size_t dst)
{
	struct ibv_port_attr pa;

	d->host = h;
	if (!(d->ctx = ibv_open_device(dev)) || !(d->pd = ibv_alloc_pd(d->ctx)) ||
	    !(d->cq = ibv_create_cq(d->ctx, 64, NULL, NULL, 0)) || !(d->src = fs_mr(d, src)) ||
	    !(d->dst = fs_mr(d, dst)) || ibv_query_port(d->ctx, 1, &pa) ||
	    ibv_query_gid(d->ctx, 1, 0, &sh->host[h].gid))
		return fs_fail("host %d: open", h);
	for (size_t i = 0; i < src; i++)
		((uint8_t *)d->src->addr)[i] = pattern(h, i);
	sh->host[h].lid = pa.lid;
	sh->host[h].rkey = d->dst->rkey;
	sh->host[h].addr = (uintptr_t)d->dst->addr;
	return 0;
}

static struct ibv_qp *fs_qp(struct fs_dev *d, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr qi = { .send_cq = d->cq, .recv_cq = d->cq, .qp_type = type,
				       .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	return ibv_create_qp(d->pd, &qi);
}

/* d's RC QP to host b: INIT, RTR towards b's QP to d, RTS. */
static int fs_connect(struct fs_dev *d, int b, bool roce)
{
	struct ibv_qp *qp = d->qp[b];
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return fs_fail("host %d to %d: INIT", d->host, b);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
				  .dest_qp_num = sh->host[b].qpn[d->host], .rq_psn = 0x100,
				  .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
				  .ah_attr = { .dlid = sh->host[b].lid, .port_num = 1,
					       .is_global = roce,
					       .grh = { .dgid = sh->host[b].gid, .hop_limit = 1 } } };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return fs_fail("host %d to %d: RTR", d->host, b);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0x100, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		return fs_fail("host %d to %d: RTS", d->host, b);
	return 0;
}

static int fs_write(struct fs_dev *d, int b, uint32_t len, size_t doff)
{
	struct ibv_sge sge = { (uintptr_t)d->src->addr, len, d->src->lkey };
	struct ibv_send_wr wr = { .wr_id = (uint64_t)b, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	wr.wr.rdma.remote_addr = sh->host[b].addr + doff;
	wr.wr.rdma.rkey = sh->host[b].rkey;
	return ibv_post_send(d->qp[b], &wr, &bad) ? fs_fail("host %d: WRITE to %d", d->host, b)
						  : 0;
}

/* Boot this process's two hosts, open them with src and dst buffers. */
static int fs_boot(const char *ll, size_t src, size_t dst)
{
	struct ibv_device **list;
	char hosts[16];
	int n;

	snprintf(hosts, sizeof(hosts), "%d,%d", 2 * me, 2 * me + 1);
	setenv("HCASIM_FABRIC", fdir, 1);
	setenv("HCASIM_HOST", hosts, 1);
	if (hcasim_config_set("sim.topology", "switch") || hcasim_config_set("sim.hosts", "8") ||
	    hcasim_config_set("hca.link_layer", ll) ||
	    (getenv("FS_LAT") && hcasim_config_set("link.latency_ns", getenv("FS_LAT"))))
		return fs_fail("config");
	list = ibv_get_device_list(&n);
	if (!list || n != 2)
		return fs_fail("process %d: %d devices", me, list ? n : -1);
	for (int i = 0; i < 2; i++)
		if (fs_open(list[i], 2 * me + i, &dv[i], src, dst))
			return -1;
	ibv_free_device_list(list);
	return 0;
}

static void fs_close(void)
{
	for (int i = 0; i < 2; i++) {
		struct fs_dev *d = &dv[i];

		for (int b = 0; b < HOSTS; b++)
			if (d->qp[b])
				ibv_destroy_qp(d->qp[b]);
		for (int k = 0; k < 2; k++) {
			struct ibv_mr *mr = k ? d->dst : d->src;
			void *buf = mr ? mr->addr : NULL;

			if (mr)
				ibv_dereg_mr(mr);
			free(buf);
		}
		if (d->cq)
			ibv_destroy_cq(d->cq);
		if (d->pd)
			ibv_dealloc_pd(d->pd);
		if (d->ctx)
			ibv_close_device(d->ctx);
		memset(d, 0, sizeof(*d));
	}
}

/* RC QPs of this process's hosts to every host in want (bit b), connected once the others
 * have theirs. */
static int fs_rc_mesh(const char *ll, uint32_t want_from, uint32_t want_to)
{
	for (int i = 0; i < 2; i++)
		for (int b = 0; b < HOSTS; b++) {
			int a = dv[i].host;
			bool link = a != b && (((want_from >> a & 1) && (want_to >> b & 1)) ||
					       ((want_from >> b & 1) && (want_to >> a & 1)));

			if (link && !(dv[i].qp[b] = fs_qp(&dv[i], IBV_QPT_RC)))
				return fs_fail("host %d: QP to %d", a, b);
			if (link)
				sh->host[a].qpn[b] = dv[i].qp[b]->qp_num;
		}
	if (fs_barrier(0))
		return -1;
	for (int i = 0; i < 2; i++)
		for (int b = 0; b < HOSTS; b++)
			if (dv[i].qp[b] && fs_connect(&dv[i], b, !strcmp(ll, "roce")))
				return -1;
	return fs_barrier(1);
}

/* The switch's counters (in host 0's process): nothing dropped anywhere. */
static int fs_no_drops(void)
{
	for (int p = 1; me == 0 && p <= HOSTS; p++) {
		struct hcasim_switch_port_counters c;

		if (hcasim_switch_port_counters(p, &c))
			return fs_fail("counters of switch port %d", p);
		if (c.rx_discards || c.tx_discards)
			return fs_fail("switch port %d dropped %llu in, %llu out", p,
				       (unsigned long long)c.rx_discards,
				       (unsigned long long)c.tx_discards);
	}
	return 0;
}

/* ---- all to all ---- */

static int a2a_proc(const char *ll)
{
	struct ibv_wc wc[HOSTS - 1];

	if (fs_boot(ll, A2A_LEN, (size_t)HOSTS * A2A_LEN) || fs_rc_mesh(ll, 0xff, 0xff))
		return -1;
	for (int i = 0; i < 2; i++)
		for (int b = 0; b < HOSTS; b++)
			if (b != dv[i].host && fs_write(&dv[i], b, A2A_LEN,
							(size_t)dv[i].host * A2A_LEN))
				return -1;
	for (int i = 0; i < 2; i++)
		if (fs_poll(&dv[i], wc, HOSTS - 1))
			return -1;
	if (fs_barrier(2)) /* every WRITE acknowledged: every byte placed */
		return -1;
	for (int i = 0; i < 2; i++)
		for (int a = 0; a < HOSTS; a++)
			for (size_t k = 0; a != dv[i].host && k < A2A_LEN; k++)
				if (((uint8_t *)dv[i].dst->addr)[(size_t)a * A2A_LEN + k] !=
				    pattern(a, k))
					return fs_fail("host %d's byte %zu at host %d", a, k,
						       dv[i].host);
	return fs_no_drops();
}

/* ---- the processes ---- */

static const char *fs_ll;
static int (*fs_role)(const char *ll);

/* One process of the fabric: its role, then shutdown; the exit status says how it went. */
static void fs_child(int p)
{
	int r;

	me = p;
	r = fs_role(fs_ll);
	fs_close();
	hcasim_shutdown();
	_exit(r ? 1 : 0);
}

/* Run role in PROCS processes of a fresh fabric, each bounded in wall time (a process still
 * there after it is killed), and expect each to succeed. */
static void fs_run(int (*role)(const char *ll), const char *ll)
{
	struct timespec ms = { 0, 1000000 };
	pid_t pid[PROCS];
	uint64_t t0 = wall_s();
	int left = PROCS;

	if (getenv("FS_WAIT"))
		WAIT_S = (unsigned)atoi(getenv("FS_WAIT"));
	fs_role = role;
	fs_ll = ll;
	for (int p = 0; p < PROCS; p++) {
		pid[p] = fork();
		cr_assert_geq(pid[p], 0);
		if (pid[p] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the test */
			fs_child(p);
		}
	}
	while (left) {
		for (int p = 0; p < PROCS; p++) {
			int st;

			if (!pid[p] || waitpid(pid[p], &st, WNOHANG) != pid[p])
				continue;
			cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				  "process %d (hosts %d, %d) failed (status 0x%x): %s", p, 2 * p,
				  2 * p + 1, st, sh->err[p]);
			pid[p] = 0;
			left--;
		}
		if (left && wall_s() - t0 > 3 * WAIT_S) {
			for (int p = 0; p < PROCS; p++)
				if (pid[p]) {
					kill(pid[p], SIGKILL);
					waitpid(pid[p], NULL, 0);
					cr_expect_fail("process %d did not end in %u s", p,
						       3 * WAIT_S);
				}
			break;
		}
		nanosleep(&ms, NULL);
	}
	cr_assert(!sh->err[0][0] && !sh->err[1][0] && !sh->err[2][0] && !sh->err[3][0]);
}

Test(fabric, eight_hosts_in_four_processes_write_all_to_all_byte_exact_through_the_switch,
     .init = fs_setup, .fini = fs_teardown)
{
	fs_run(a2a_proc, "ib");
}

Test(fabric, eight_roce_hosts_in_four_processes_write_all_to_all_through_the_learning_bridge,
     .init = fs_setup, .fini = fs_teardown)
{
	fs_run(a2a_proc, "roce");
}
