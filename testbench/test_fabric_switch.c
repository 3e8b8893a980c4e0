/* fabric (switch): sim.topology=switch across processes (docs/fabric.md#a-switch-across-processes).
 * Eight hosts in four processes, two each, the switch in host 0's: all-to-all RC WRITEs land
 * byte for byte (IB through the LFT, RoCE through the learning bridge); a multicast group
 * across the processes delivers each datagram to every member once, and the LFT and MFT the
 * SM programmed are those of a one-process run; seven hosts writing to one congested output
 * port are held back by credits (IB) or PFC pauses (RoCE) across the cut, without a loss. */
#include "sim/sm.h"
#include "tb.h"
#include "tb_expect.h"

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
#define WAIT_S 120u /* wall time any wait of the test may take */
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
	uint64_t frames[HOSTS];	      /* frames in and out of each switch port */
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
	    hcasim_config_set("hca.link_layer", ll))
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
		sh->frames[p - 1] = c.rx_pkts + c.tx_pkts;
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
	char pcap[300];

	/* Each process captures its sides of its cables; the last out merges each
	 * (docs/fabric.md#capture). */
	snprintf(pcap, sizeof(pcap), "%s/a2a", fdir);
	setenv("HCASIM_PCAP", pcap, 1);
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

/* ---- multicast ---- */

static const union ibv_gid MGID = { .raw = { 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0,
					     0, 0, 0, 0, 0x07 } };

/* A UD QP of d in RTS (its QP slot 0). */
static int fs_ud(struct fs_dev *d)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = TB_QKEY };

	if (!(d->qp[0] = fs_qp(d, IBV_QPT_UD)) ||
	    ibv_modify_qp(d->qp[0], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_QKEY))
		return fs_fail("host %d: UD QP", d->host);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
	if (ibv_modify_qp(d->qp[0], &a, IBV_QP_STATE))
		return fs_fail("host %d: UD RTR", d->host);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0x100 };
	return ibv_modify_qp(d->qp[0], &a, IBV_QP_STATE | IBV_QP_SQ_PSN)
		       ? fs_fail("host %d: UD RTS", d->host) : 0;
}

/* Member hosts join the group and post their receives. */
static int mc_join(struct fs_dev *d)
{
	if (fs_ud(d))
		return -1;
	if (d->host >= MEMBERS)
		return 0;
	if (ibv_attach_mcast(d->qp[0], &MGID, MLID))
		return fs_fail("host %d: attach", d->host);
	for (int s = 0; s < SENDS; s++) {
		struct ibv_sge sge = { (uintptr_t)d->dst->addr + 4096 * (s + 1), 4096,
				       d->dst->lkey };
		struct ibv_recv_wr rw = { .wr_id = (uint64_t)s, .sg_list = &sge, .num_sge = 1 },
				   *bad;

		if (ibv_post_recv(d->qp[0], &rw, &bad))
			return fs_fail("host %d: post_recv", d->host);
	}
	return 0;
}

/* Host 0 sends SENDS datagrams to the group. */
static int mc_send(struct fs_dev *d)
{
	struct ibv_ah_attr aa = { .dlid = MLID, .port_num = 1, .is_global = 1,
				  .grh = { .dgid = MGID, .hop_limit = 1 } };
	struct ibv_ah *ah = ibv_create_ah(d->pd, &aa);
	int r = 0;

	if (!ah)
		return fs_fail("host 0: AH");
	for (int s = 0; s < SENDS && !r; s++) {
		struct ibv_sge sge = { (uintptr_t)d->src->addr + (uint64_t)s * 7, DG_LEN,
				       d->src->lkey };
		struct ibv_send_wr wr = { .wr_id = 50, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 0xffffff;
		wr.wr.ud.remote_qkey = TB_QKEY;
		r = ibv_post_send(d->qp[0], &wr, &bad) ? fs_fail("host 0: send %d", s) : 0;
	}
	ibv_destroy_ah(ah);
	return r;
}

/* A member's datagrams: each once, byte for byte (after its 40-byte GRH). */
static int mc_check(struct fs_dev *d)
{
	struct ibv_wc wc[2 * SENDS];
	int n = d->host >= MEMBERS ? 0 : d->host ? SENDS : 2 * SENDS; /* host 0: its sends too */

	if (fs_poll(d, wc, n))
		return -1;
	for (int i = 0; i < n; i++) {
		const uint8_t *got = (const uint8_t *)d->dst->addr + 4096 * (wc[i].wr_id + 1) + 40;

		if (wc[i].opcode != IBV_WC_RECV)
			continue;
		sh->recvd[d->host]++;
		if (wc[i].byte_len != 40u + DG_LEN)
			return fs_fail("host %d: %u bytes", d->host, wc[i].byte_len);
		for (size_t k = 0; k < DG_LEN; k++)
			if (got[k] != pattern(0, wc[i].wr_id * 7 + k))
				return fs_fail("host %d: datagram %llu byte %zu", d->host,
					       (unsigned long long)wc[i].wr_id, k);
	}
	return 0;
}

/* The switch's forwarding of every host's LID and of the group's MLID (host 0's process). */
static int mc_forwarding(uint64_t out[HOSTS + 1])
{
	for (unsigned i = 0; i <= HOSTS; i++)
		if (hcasim_switch_forward(i < HOSTS ? sh->host[i].lid : MLID, &out[i]))
			return fs_fail("forwarding of lid %u", i < HOSTS ? sh->host[i].lid : MLID);
	return 0;
}

static int mc_proc(const char *ll)
{
	struct ibv_wc wc;

	if (fs_boot(ll, 4096, 4096 * (SENDS + 1)) || mc_join(&dv[0]) || mc_join(&dv[1]) ||
	    fs_barrier(0)) /* every join has reached the switch */
		return -1;
	if (me == 0 && (mc_forwarding(sh->fwd[0]) || mc_send(&dv[0])))
		return -1;
	if (mc_check(&dv[0]) || mc_check(&dv[1]))
		return -1;
	hcasim_run_for_ps(100 * 1000 * 1000ull); /* a second copy would have come by now */
	for (int i = 0; i < 2; i++)
		if (ibv_poll_cq(dv[i].cq, 1, &wc))
			return fs_fail("host %d: a second completion", dv[i].host);
	for (int p = 1; me == 0 && p <= HOSTS; p++) {
		struct hcasim_switch_port_counters c;
		uint64_t want = p == 1 || p > MEMBERS ? 0 : SENDS;

		if (hcasim_switch_port_counters(p, &c) || c.tx_pkts != want ||
		    c.rx_pkts != (p == 1 ? SENDS : 0))
			return fs_fail("switch port %d: %llu in, %llu out", p,
				       (unsigned long long)c.rx_pkts, (unsigned long long)c.tx_pkts);
	}
	for (int i = 0; i < 2; i++)
		if (dv[i].host < MEMBERS && ibv_detach_mcast(dv[i].qp[0], &MGID, MLID))
			return fs_fail("host %d: detach", dv[i].host);
	return fs_barrier(1);
}

/* The same group in one process (a child, without a fabric): the switch's forwarding. */
static void mc_one_process(void)
{
	struct ibv_device **list;
	int n;

	me = PROCS;
	unsetenv("HCASIM_FABRIC");
	unsetenv("HCASIM_HOST");
	if (hcasim_config_set("sim.topology", "switch") || hcasim_config_set("sim.hosts", "8") ||
	    !(list = ibv_get_device_list(&n)) || n != HOSTS)
		_exit(fs_fail("one process: boot") ? 1 : 0);
	for (int h = 0; h < HOSTS; h++)
		if (fs_open(list[h], h, &dv[0], 64, 4096 * (SENDS + 1)) || mc_join(&dv[0]))
			_exit(1); /* each host's objects stay until the exit */
	hcasim_run_for_ps(10 * 1000 * 1000ull);
	_exit(mc_forwarding(sh->fwd[1]) ? 1 : 0);
}

/* ---- congestion: seven hosts write to host 0 at once ---- */

/* The frames this process's hosts were held back (their ports' stalls) into sh->stalls. */
static int cg_stalls(const char *ll)
{
	for (int i = 0; i < 2; i++) {
		struct hcasim_switch_port_counters c;

		if (hcasim_switch_port_counters(dv[i].host + 1, &c))
			return fs_fail("stalls of switch port %d", dv[i].host + 1);
		sh->stalls[me] += c.stalls;
		if (me && (c.rx_pkts || c.tx_pkts || c.credit_blocks || c.xoff))
			return fs_fail("switch port %d: a host's process counts the switch's frames",
				       dv[i].host + 1);
	}
	/* Away from the switch: its own ports only, and no forwarding to read. */
	if (me && (hcasim_switch_port_counters(1, &(struct hcasim_switch_port_counters){ 0 }) !=
		   -ENODEV || !strstr(hcasim_last_error(), "host 0's process") ||
		   hcasim_switch_forward(1, &(uint64_t){ 0 }) != (strcmp(ll, "ib") ? -EINVAL
										 : -ENODEV)))
		return fs_fail("switch port 1 from process %d: not refused", me);
	return 0;
}

/* Host 0's process: no discard, its output queue filled, every sender's port flow-controlled. */
static int cg_switch(bool ib)
{
	struct hcasim_switch_port_counters c;

	for (int p = 2; p <= HOSTS; p++)
		if (hcasim_switch_port_counters(p, &c) || (ib ? !c.credit_blocks : !c.xoff))
			return fs_fail("switch port %d: %s", p, ib ? "no credits returned"
								     : "never paused its host");
	if (hcasim_switch_port_counters(1, &c) || c.queue_max <= 4 * 4096u)
		return fs_fail("host 0's output queue never filled (%llu)",
			       (unsigned long long)c.queue_max);
	return fs_no_drops();
}

static int cg_proc(const char *ll)
{
	struct ibv_wc wc;

	if (fs_boot(ll, CONG_LEN, (size_t)HOSTS * CONG_LEN) || fs_rc_mesh(ll, 0xfe, 0x01))
		return -1;
	for (int i = 0; i < 2; i++)
		if (dv[i].host && fs_write(&dv[i], 0, CONG_LEN, (size_t)dv[i].host * CONG_LEN))
			return -1;
	for (int i = 0; i < 2; i++)
		if (dv[i].host && fs_poll(&dv[i], &wc, 1))
			return -1;
	if (fs_barrier(2) || cg_stalls(ll))
		return -1;
	for (int a = 1; me == 0 && a < HOSTS; a++)
		for (size_t k = 0; k < CONG_LEN; k++)
			if (((uint8_t *)dv[0].dst->addr)[(size_t)a * CONG_LEN + k] != pattern(a, k))
				return fs_fail("host %d's byte %zu at host 0", a, k);
	return me == 0 ? cg_switch(!strcmp(ll, "ib")) : 0;
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

/* Each switch port's capture, merged from the host's process and the switch's: every frame
 * the switch counted on the port, both directions, each good. */
static void a2a_captures(void)
{
	for (int n = 0; n < HOSTS; n++) {
		char cmd[600], want[64], *out;
		int st;

		snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-pcapcheck %s/a2a.link%d.pcap 2>&1",
			 HCASIM_BUILD_DIR, fdir, n);
		snprintf(want, sizeof(want), "%llu frames, 0 bad",
			 (unsigned long long)sh->frames[n]);
		cr_expect_gt(sh->frames[n], 0, "switch port %d carried nothing", n + 1);
		out = tb_run_cmd(cmd, &st);
		cr_expect(st == 0 && out && strstr(out, want), "link %d: %s (want %s)", n,
			  out ? out : "(nothing)", want);
		free(out);
	}
}

Test(fabric, eight_hosts_in_four_processes_write_all_to_all_byte_exact_through_the_switch,
     .init = fs_setup, .fini = fs_teardown)
{
	fs_run(a2a_proc, "ib");
	a2a_captures();
}

Test(fabric, eight_roce_hosts_in_four_processes_write_all_to_all_through_the_learning_bridge,
     .init = fs_setup, .fini = fs_teardown)
{
	fs_run(a2a_proc, "roce");
	a2a_captures();
}

Test(fabric, a_multicast_group_across_four_processes_delivers_to_every_member_once,
     .init = fs_setup, .fini = fs_teardown)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		mc_one_process();
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the one-process run: %s",
		  sh->err[PROCS]);
	fs_run(mc_proc, "ib");
	for (int h = 0; h < HOSTS; h++)
		cr_expect_eq(sh->recvd[h], h < MEMBERS ? SENDS : 0, "host %d got %llu datagrams", h,
			     (unsigned long long)sh->recvd[h]);
	/* The SM's tables: each LID to its host's switch port, the MLID to the members' ports,
	 * as in one process. */
	for (int i = 0; i <= HOSTS; i++)
		cr_expect_eq(sh->fwd[0][i], sh->fwd[1][i], "forwarding %d: 0x%llx, one process 0x%llx",
			     i, (unsigned long long)sh->fwd[0][i], (unsigned long long)sh->fwd[1][i]);
	for (int h = 0; h < HOSTS; h++)
		cr_expect_eq(sh->fwd[0][h], 1ull << (h + 1), "host %d's LID", h);
	cr_expect_eq(sh->fwd[0][HOSTS], 0xfeull, "the MLID to switch ports 1..7");
}

static void congestion(const char *ll)
{
	uint64_t stalls = 0;

	fs_run(cg_proc, ll);
	for (int p = 0; p < PROCS; p++)
		stalls += sh->stalls[p];
	cr_expect_gt(stalls, 0, "no sender was held back");
	cr_log_info("%s: %llu frames held back", ll, (unsigned long long)stalls);
}

Test(fabric, a_congested_output_port_across_four_processes_back_pressures_by_credits_without_loss,
     .init = fs_setup, .fini = fs_teardown)
{
	congestion("ib");
}

Test(fabric, a_congested_output_port_across_four_processes_back_pressures_by_pfc_without_loss,
     .init = fs_setup, .fini = fs_teardown)
{
	congestion("roce");
}

/* What a host's SM sends the switch's over a cable comes from another process: each message
 * is checked, a bad one refused naming the rule and changing nothing (in one process here,
 * where sim_sm_from_port is called directly), and hcasim_switch_forward checks its lid. */
Test(fabric, the_messages_of_a_hosts_sm_to_the_switch_are_checked_naming_the_rule)
{
	static const struct {
		uint8_t m[21];
		size_t len;
		unsigned port;
		const char *words;
	} bad[] = {
		{ { 0x10, 0, 0, 0, 1 }, 3, 1, "a message of 3 bytes, kind 0x10" },
		{ { 0x13, 0, 0, 0, 1 }, 5, 1, "kind 0x13" },
		{ { 0x10, 0, 0, 0, 1 }, 21, 1, "a route is 0x10 and 5 bytes" },
		{ { 0x10, 0, 5, 0, 1 }, 5, 1, "for port handle 5, which is not cabled there" },
		{ { 0x10, 0, 99, 0, 1 }, 5, 1, "port handle 99" },
		{ { 0x10, 0, 0, 0xc0, 1 }, 5, 1, "LID 0xc001: a route takes a unicast LID" },
		{ { 0x11, 0, 0, 0, 9 }, 21, 1, "LID 0x9: a route takes a unicast LID, a group a "
					       "multicast one" },
	};
	uint64_t ports;
	struct ibv_device **list;
	int n;

	tb_config("sim.topology", "switch");
	tb_config("sim.hosts", "4");
	list = ibv_get_device_list(&n); /* the ports come up */
	cr_assert(list && n == 4);
	ibv_free_device_list(list);
	hcasim_run_for_ps(1000 * 1000 * 1000ull); /* their sweeps have routed every LID */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(sim_sm_from_port(bad[i].port, bad[i].m, bad[i].len), -EPROTO, "%zu", i);
		cr_expect(strstr(hcasim_last_error(), bad[i].words), "'%s' does not say '%s'",
			  hcasim_last_error(), bad[i].words);
	}
	for (unsigned lid = 1; lid <= 4; lid++) {
		EXPECT_OK(hcasim_switch_forward(lid, &ports));
		cr_expect_eq(ports, 1ull << lid, "LID %u changed: 0x%llx", lid,
			     (unsigned long long)ports);
	}
	/* A good route moves host 1's LID 2 to switch port 3, as a host's SM would. */
	EXPECT_OK(sim_sm_from_port(2, (const uint8_t[5]){ 0x10, 0, 1, 0, 7 }, 5));
	EXPECT_OK(hcasim_switch_forward(7, &ports));
	cr_expect_eq(ports, 1ull << 2);
	cr_expect_eq(hcasim_switch_forward(0, &ports), -EINVAL);
	cr_expect_eq(hcasim_switch_forward(0xffff, &ports), -EINVAL);
	cr_expect_eq(hcasim_switch_forward(1, NULL), -EINVAL);
	hcasim_shutdown();
}

/* A host's process needs the switch's: without it, its boot ends after
 * fabric.join_timeout_ms, naming the cable's channel and the process it waited for, and
 * leaves nothing booted. */
Test(fabric, a_host_whose_switch_process_never_comes_is_refused_naming_it, .init = fs_setup,
     .fini = fs_teardown)
{
	char want[300];

	tb_config("sim.topology", "switch");
	tb_config("sim.hosts", "8");
	tb_config("fabric.join_timeout_ms", "200");
	setenv("HCASIM_FABRIC", fdir, 1);
	setenv("HCASIM_HOST", "2", 1);
	cr_expect_eq(hcasim_boot(), -ETIMEDOUT);
	snprintf(want, sizeof(want), "%s/sw3.chan did not come in 200 ms", fdir);
	cr_expect(strstr(hcasim_last_error(), want) &&
		  strstr(hcasim_last_error(), "the process holding the switch (host 0's)"), "%s",
		  hcasim_last_error());
	cr_expect(!hcasim_booted());
	unsetenv("HCASIM_FABRIC");
	unsetenv("HCASIM_HOST");
}
