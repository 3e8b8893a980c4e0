/* Suite switch: eight hosts through the modelled switch in one process (sim.topology=switch,
 * docs/blocks/switch.md), through verbs and hcasim.h: all-to-all RC WRITEs byte for byte (on
 * InfiniBand, forwarded by the LFT the SM programs; on RoCE, by the learning bridge), a
 * multicast group delivering once to each member by the MFT, a congested output port that
 * back-pressures without loss (credits, PFC) where a switch without flow control drops, the
 * LFT proved by moving a route, the cut-through timing, the per-port captures, and bad
 * configurations refused naming the key. */
#include <criterion/criterion.h>

#include "testbench/tb.h"
#include "testbench/tb_expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HOSTS 8

static struct tb_dev h[HOSTS];

/* Boot HOSTS hosts on a switch with the given link layer (plus one key, if any). */
static void sw_boot(const char *ll, const char *key, const char *val)
{
	char n[8];

	snprintf(n, sizeof(n), "%d", HOSTS);
	tb_config("sim.topology", "switch");
	tb_config("sim.hosts", n);
	tb_config("hca.link_layer", ll);
	if (key)
		tb_config(key, val);
	for (int i = 0; i < HOSTS; i++)
		tb_open(&h[i], i);
	cr_assert_eq(hcasim_switch_ports(), HOSTS);
}

/* The buffers sw_mr registered, given back at sw_close. */
static struct ibv_mr *sw_mrs[8 * HOSTS];
static int sw_nmrs;

static struct ibv_mr *sw_mr(struct tb_dev *t, size_t len)
{
	struct ibv_mr *mr = tb_mr(t, len);

	cr_assert_lt(sw_nmrs, (int)(sizeof(sw_mrs) / sizeof(sw_mrs[0])));
	sw_mrs[sw_nmrs++] = mr;
	return mr;
}

static void sw_close(void)
{
	while (sw_nmrs > 0) {
		struct ibv_mr *mr = sw_mrs[--sw_nmrs];
		void *buf = mr->addr;

		cr_assert_eq(ibv_dereg_mr(mr), 0);
		free(buf);
	}
	for (int i = 0; i < HOSTS; i++)
		tb_close(&h[i]);
}

static struct hcasim_switch_port_counters swc(int port)
{
	struct hcasim_switch_port_counters c;

	cr_assert_eq(hcasim_switch_port_counters(port, &c), 0, "%s", hcasim_last_error());
	return c;
}

/* An RC QP from host a to host b (connected both ways) for each ordered pair in want. */
struct rc {
	struct ibv_qp *qp[HOSTS][HOSTS]; /* [a][b]: a's QP talking to b */
};

static void rc_connect(struct rc *r, int a, int b)
{
	r->qp[a][b] = tb_create_qp(&h[a], IBV_QPT_RC);
	r->qp[b][a] = tb_create_qp(&h[b], IBV_QPT_RC);
	tb_connect(&h[a], r->qp[a][b], &h[b], r->qp[b][a]->qp_num, IBV_MTU_4096);
	tb_connect(&h[b], r->qp[b][a], &h[a], r->qp[a][b]->qp_num, IBV_MTU_4096);
}

static void post_write(struct ibv_qp *qp, struct ibv_mr *src, size_t off, uint32_t len,
		       struct ibv_mr *dst, size_t doff, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)src->addr + off, len, src->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)dst->addr + doff;
	wr.wr.rdma.rkey = dst->rkey;
	EXPECT_OK(ibv_post_send(qp, &wr, &bad));
}

static void fill(struct ibv_mr *mr, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		((uint8_t *)mr->addr)[i] = (uint8_t)(i * 13 + seed * 29 + (i >> 8));
}

#define A2A_LEN (32768u + 123u) /* not a multiple of the MTU */

/* Every host writes A2A_LEN bytes to every other, all at once: each lands byte for byte in
 * the slot of its writer, every WRITE completes, and the switch dropped nothing. */
static void all_to_all(const char *ll)
{
	static struct rc r;
	struct ibv_mr *src[HOSTS], *dst[HOSTS];
	uint64_t rx = 0, tx = 0;

	sw_boot(ll, NULL, NULL);
	for (int a = 0; a < HOSTS; a++) {
		src[a] = sw_mr(&h[a], A2A_LEN);
		dst[a] = sw_mr(&h[a], (size_t)HOSTS * A2A_LEN);
		fill(src[a], A2A_LEN, (unsigned)a + 1);
		for (int b = a + 1; b < HOSTS; b++)
			rc_connect(&r, a, b);
	}
	for (int a = 0; a < HOSTS; a++)
		for (int b = 0; b < HOSTS; b++)
			if (a != b)
				post_write(r.qp[a][b], src[a], 0, A2A_LEN, dst[b],
					   (size_t)a * A2A_LEN, (uint64_t)b);
	for (int a = 0; a < HOSTS; a++) {
		struct ibv_wc wc[HOSTS - 1];

		tb_poll(h[a].cq, wc, HOSTS - 1);
		for (int i = 0; i < HOSTS - 1; i++)
			cr_assert_eq(wc[i].status, IBV_WC_SUCCESS, "host %d to %d: %s", a,
				     (int)wc[i].wr_id, ibv_wc_status_str(wc[i].status));
	}
	for (int b = 0; b < HOSTS; b++)
		for (int a = 0; a < HOSTS; a++)
			if (a != b)
				cr_assert_arr_eq((uint8_t *)dst[b]->addr + (size_t)a * A2A_LEN,
						 src[a]->addr, A2A_LEN, "host %d's bytes at host %d",
						 a, b);
	for (int p = 1; p <= HOSTS; p++) {
		struct hcasim_switch_port_counters c = swc(p);

		cr_assert_eq(c.rx_discards + c.tx_discards, 0, "switch port %d dropped", p);
		cr_assert_gt(c.tx_pkts, 0);
		rx += c.rx_pkts;
		tx += c.tx_pkts;
	}
	if (!strcmp(ll, "ib"))
		cr_assert_eq(rx, tx, "every frame in went out once (LFT: no flooding)");
	else
		cr_assert_geq(tx, rx, "frames in went out once, or to every port while flooded");
	sw_close();
}

Test(sw, eight_hosts_all_to_all_rc_writes_are_byte_exact_through_the_lft)
{
	all_to_all("ib");
}

Test(sw, eight_hosts_all_to_all_rc_writes_are_byte_exact_through_the_learning_bridge)
{
	all_to_all("roce");
}

/* ---- multicast by the MFT ---- */

#define MLID 0xc007
static const union ibv_gid MGID = { .raw = { 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0,
					     0, 0, 0, 0, 0x07 } };

static struct ibv_qp *ud_qp(struct tb_dev *t)
{
	struct ibv_qp *qp = tb_create_qp(t, IBV_QPT_UD);

	tb_connect(t, qp, t, 0, IBV_MTU_4096);
	return qp;
}

Test(sw, a_multicast_group_across_the_hosts_delivers_to_every_member_once)
{
	enum { MEMBERS = HOSTS - 1, SENDS = 3, LEN = 300 }; /* host 7 stays out of the group */
	struct ibv_qp *qp[HOSTS];
	struct ibv_mr *mr[HOSTS];
	struct ibv_ah *ah;
	struct ibv_ah_attr aa = { .dlid = MLID, .port_num = 1, .is_global = 1 };
	struct ibv_wc wc;

	sw_boot("ib", NULL, NULL);
	for (int i = 0; i < HOSTS; i++) {
		qp[i] = ud_qp(&h[i]);
		mr[i] = sw_mr(&h[i], 4096 * (SENDS + 1));
		if (i < MEMBERS)
			EXPECT_OK(ibv_attach_mcast(qp[i], &MGID, MLID));
		for (int s = 0; s < SENDS && i < MEMBERS; s++) {
			struct ibv_sge sge = { (uintptr_t)mr[i]->addr + 4096 * (s + 1), 4096,
					       mr[i]->lkey };
			struct ibv_recv_wr rw = { .wr_id = (uint64_t)s, .sg_list = &sge,
						  .num_sge = 1 },
					   *bad;

			EXPECT_OK(ibv_post_recv(qp[i], &rw, &bad));
		}
	}
	fill(mr[0], 4096, 5);
	aa.grh.dgid = MGID;
	aa.grh.hop_limit = 1;
	ah = ibv_create_ah(h[0].pd, &aa);
	cr_assert_not_null(ah, "%s", hcasim_last_error());
	for (int s = 0; s < SENDS; s++) {
		struct ibv_sge sge = { (uintptr_t)mr[0]->addr + (uint64_t)s * 7, LEN, mr[0]->lkey };
		struct ibv_send_wr wr = { .wr_id = 50, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 0xffffff;
		wr.wr.ud.remote_qkey = TB_QKEY;
		EXPECT_OK(ibv_post_send(qp[0], &wr, &bad));
		for (int i = 0; i < MEMBERS; i++) {
			const uint8_t *got = (const uint8_t *)mr[i]->addr + 4096 * (s + 1) + 40;
			struct ibv_wc two[2];

			/* host 0's CQ has its send and its own copy (the HCA's loopback) */
			tb_poll(h[i].cq, two, i ? 1 : 2);
			wc = two[0];
			if (!i && two[0].opcode == IBV_WC_SEND)
				wc = two[1];
			if (!i)
				cr_assert_eq(two[0].opcode == IBV_WC_SEND ? two[0].status
									  : two[1].status,
					     IBV_WC_SUCCESS, "the send");
			cr_assert_eq(wc.status, IBV_WC_SUCCESS, "member %d", i);
			cr_assert_eq(wc.opcode, IBV_WC_RECV, "member %d", i);
			cr_assert_eq(wc.wr_id, (uint64_t)s, "member %d: datagram %d", i, s);
			cr_assert_eq(wc.byte_len, 40u + LEN, "member %d", i);
			cr_assert_arr_eq(got, (uint8_t *)mr[0]->addr + s * 7, LEN, "member %d", i);
		}
	}
	hcasim_run_for_ps(100 * 1000 * 1000ull); /* a second copy would have come by now */
	for (int i = 0; i < HOSTS; i++)
		cr_assert_eq(ibv_poll_cq(h[i].cq, 1, &wc), 0, "host %d: a second completion", i);
	/* The MFT replicated each datagram to the members' ports but the sender's, and not to
	 * host 7's port. */
	cr_assert_eq(swc(1).rx_pkts, SENDS);
	cr_assert_eq(swc(1).tx_pkts, 0);
	for (int p = 2; p <= MEMBERS; p++)
		cr_assert_eq(swc(p).tx_pkts, SENDS, "switch port %d", p);
	cr_assert_eq(swc(HOSTS).tx_pkts, 0, "host 7 is no member: nothing for its port");
	EXPECT_OK(ibv_destroy_ah(ah));
	for (int i = 0; i < HOSTS; i++) {
		if (i < MEMBERS)
			EXPECT_OK(ibv_detach_mcast(qp[i], &MGID, MLID));
		EXPECT_OK(ibv_destroy_qp(qp[i]));
	}
	sw_close();
}

/* ---- congestion: seven hosts write to host 0 at once ---- */

#define CONG_LEN (256u * 1024u)

/* Every other host writes CONG_LEN bytes to host 0 at once; returns the simulated time they
 * took. check: wait for every completion and compare the bytes. */
static uint64_t congest(struct rc *r, struct ibv_mr **src, struct ibv_mr **dst, bool check)
{
	uint64_t t0;

	for (int a = 1; a < HOSTS; a++) {
		rc_connect(r, a, 0);
		src[a] = sw_mr(&h[a], CONG_LEN);
		fill(src[a], CONG_LEN, (unsigned)a);
	}
	*dst = sw_mr(&h[0], (size_t)HOSTS * CONG_LEN);
	t0 = hcasim_now_ps();
	for (int a = 1; a < HOSTS; a++)
		post_write(r->qp[a][0], src[a], 0, CONG_LEN, *dst, (size_t)a * CONG_LEN, 1);
	if (!check)
		return 0;
	for (int a = 1; a < HOSTS; a++) {
		struct ibv_wc wc;

		tb_poll(h[a].cq, &wc, 1);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS, "host %d: %s", a,
			     ibv_wc_status_str(wc.status));
	}
	for (int a = 1; a < HOSTS; a++)
		cr_assert_arr_eq((uint8_t *)(*dst)->addr + (size_t)a * CONG_LEN, src[a]->addr,
				 CONG_LEN, "host %d's bytes", a);
	return hcasim_now_ps() - t0;
}

/* Lossless: no discard anywhere, the output queue of host 0's port filled, and the senders
 * were held back (stalls) by credits or pauses. */
static void congestion_without_loss(const char *ll)
{
	static struct rc r;
	struct ibv_mr *src[HOSTS], *dst;
	uint64_t ps, stalls = 0, bytes = (uint64_t)(HOSTS - 1) * CONG_LEN;

	sw_boot(ll, NULL, NULL);
	ps = congest(&r, src, &dst, true);
	for (int p = 1; p <= HOSTS; p++) {
		struct hcasim_switch_port_counters c = swc(p);

		cr_assert_eq(c.rx_discards + c.tx_discards, 0, "switch port %d dropped %llu in, %llu "
			     "out (queue max %llu)", p, (unsigned long long)c.rx_discards,
			     (unsigned long long)c.tx_discards, (unsigned long long)c.queue_max);
		stalls += c.stalls;
		if (p > 1 && !strcmp(ll, "ib"))
			cr_assert_gt(c.credit_blocks, 0, "port %d returned credits", p);
		if (p > 1 && !strcmp(ll, "roce"))
			cr_assert_gt(c.xoff, 0, "port %d paused its host", p);
	}
	cr_assert_gt(stalls, 0, "the senders were held back");
	cr_assert_gt(swc(1).queue_max, 4 * 4096u, "host 0's output queue filled");
	/* host 0's link is the bottleneck: the transfer takes at least its serialization. */
	cr_assert_geq(ps, bytes * 80, "%llu ps for %llu bytes", (unsigned long long)ps,
		      (unsigned long long)bytes);
	cr_log_info("%s: %llu bytes to one port in %llu ps, %llu frames held, queue max %llu",
		    ll, (unsigned long long)bytes, (unsigned long long)ps,
		    (unsigned long long)stalls, (unsigned long long)swc(1).queue_max);
	sw_close();
}

Test(sw, a_congested_output_port_back_pressures_by_credits_without_loss)
{
	congestion_without_loss("ib");
}

Test(sw, a_congested_output_port_back_pressures_by_pfc_without_loss)
{
	congestion_without_loss("roce");
}

Test(sw, without_flow_control_the_same_congestion_drops_at_the_output_queue)
{
	static struct rc r;
	struct ibv_mr *src[HOSTS], *dst;
	uint64_t stalls = 0;

	tb_config("switch.queue_bytes", "16384");
	sw_boot("ib", "switch.ib_credits", "0");
	congest(&r, src, &dst, false);
	hcasim_run_for_ps(200 * 1000 * 1000ull);
	for (int p = 1; p <= HOSTS; p++)
		stalls += swc(p).stalls;
	cr_assert_gt(swc(1).tx_discards, 0, "host 0's output queue overflowed");
	cr_assert_eq(stalls, 0, "nothing held a sender back");
	cr_assert_leq(swc(1).queue_max, 16384);
}

/* ---- determinism ---- */

struct digest {
	uint64_t hash; /* FNV-1a of every line */
	uint64_t lines;
};

static void digest_line(void *arg, uint64_t t, int dev, const char *ev, const char *f)
{
	struct digest *d = arg;
	char line[2300];
	int n = snprintf(line, sizeof(line), "%llu %d %s %s", (unsigned long long)t, dev, ev, f);

	for (int i = 0; i < n; i++)
		d->hash = (d->hash ^ (uint8_t)line[i]) * 0x100000001b3ull;
	d->lines++;
}

/* The congested RoCE run (flooding, learning, PFC) twice in one process: the switch's and
 * the links' trace lines are the same, picosecond for picosecond. */
Test(sw, two_runs_of_a_congested_switch_give_identical_traces)
{
	static struct rc r;
	struct ibv_mr *src[HOSTS], *dst;
	struct digest d[2];

	for (int run = 0; run < 2; run++) {
		d[run] = (struct digest){ 0xcbf29ce484222325ull, 0 };
		memset(&r, 0, sizeof(r));
		EXPECT_OK(hcasim_trace_observe("sw,link", digest_line, &d[run]));
		sw_boot("roce", NULL, NULL);
		congest(&r, src, &dst, true);
		hcasim_trace_observe("", NULL, NULL);
		sw_close();
		hcasim_shutdown();
	}
	cr_assert_gt(d[0].lines, 1000);
	cr_assert_eq(d[0].lines, d[1].lines);
	cr_assert_eq(d[0].hash, d[1].hash);
}

/* ---- the LFT ---- */

Test(sw, forwarding_follows_the_lft_the_sm_programs)
{
	static struct rc r;
	struct ibv_mr *src, *dst;
	struct hcasim_dev_counters d5a, d5b;
	uint64_t tx4, tx6;
	struct ibv_wc wc;

	tb_rc_timeout = 10; /* 4.2 ms */
	sw_boot("ib", NULL, NULL);
	rc_connect(&r, 0, 3);
	src = sw_mr(&h[0], 8192);
	dst = sw_mr(&h[3], 8192);
	fill(src, 8192, 9);
	/* Host 3's LID now leads to switch port 6 (host 5): the WRITE goes there. */
	EXPECT_OK(hcasim_sm_set_route(h[3].port.lid, 6));
	tx4 = swc(4).tx_pkts;
	tx6 = swc(6).tx_pkts;
	cr_assert_eq(hcasim_dev_counters(5, &d5a), 0);
	post_write(r.qp[0][3], src, 0, 8192, dst, 0, 7);
	hcasim_run_for_ps(1000 * 1000 * 1000ull); /* 1 ms: less than the ACK timeout */
	cr_assert_eq(ibv_poll_cq(h[0].cq, 1, &wc), 0, "no completion while misrouted");
	cr_assert_eq(swc(4).tx_pkts, tx4, "nothing reached host 3's port");
	cr_assert_eq(swc(6).tx_pkts, tx6 + 2, "both packets went out of port 6");
	cr_assert_eq(hcasim_dev_counters(5, &d5b), 0);
	cr_assert_eq(d5b.rx_dropped, d5a.rx_dropped + 2, "host 5 has no such QP: dropped");
	/* The route back: the requester's retry gets through. */
	EXPECT_OK(hcasim_sm_set_route(h[3].port.lid, 4));
	tb_poll(h[0].cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_arr_eq(dst->addr, src->addr, 8192);
	cr_assert_eq(swc(4).tx_pkts, tx4 + 2, "the retry went to host 3");
	sw_close();
}

/* ---- timing and captures ---- */

static uint64_t first_start[2]; /* the WRITE's first packet: on host 0's link, on host 3's */

static void on_link(void *arg, uint64_t t, int dev, const char *ev, const char *f)
{
	char name[32];
	uint64_t side, start, op;

	(void)arg, (void)t, (void)dev;
	if (strcmp(ev, "link.tx") || !hcasim_trace_field(f, "op", &op) || op != 0x0a)
		return; /* RDMA WRITE ONLY */
	hcasim_trace_field_str(f, "link", name, sizeof(name));
	hcasim_trace_field(f, "side", &side);
	hcasim_trace_field(f, "start", &start);
	if (!strcmp(name, "sw.port1") && side == 0 && !first_start[0])
		first_start[0] = start;
	if (!strcmp(name, "sw.port4") && side == 1 && !first_start[1])
		first_start[1] = start;
}

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (long)st.st_size;
}

/* A WRITE from host 0 to host 3 with every switch port captured: its first packet leaves
 * the switch one link latency and switch.latency_ns (150 ns) after it left host 0, though it
 * takes 165 ns to serialize; the captures of ports 1 and 4 hold the WRITE and its ACK. */
static void capture(const char *ll)
{
	static struct rc r;
	char dir[] = "/tmp/hcasim-switch-XXXXXX", prefix[64], path[96], cmd[256];
	struct ibv_mr *src, *dst;
	struct ibv_wc wc;
	int st;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(prefix, sizeof(prefix), "%s/cap", dir);
	tb_config("link.pcap", prefix);
	sw_boot(ll, "switch.latency_ns", "150");
	EXPECT_OK(hcasim_trace_observe("link", on_link, NULL));
	rc_connect(&r, 0, 3);
	src = sw_mr(&h[0], 2048);
	dst = sw_mr(&h[3], 2048);
	fill(src, 2048, 3);
	post_write(r.qp[0][3], src, 0, 2048, dst, 0, 1);
	tb_poll(h[0].cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_arr_eq(dst->addr, src->addr, 2048);
	cr_assert_gt(first_start[0], 0);
	cr_assert_eq(first_start[1] - first_start[0], 250000, "%llu ps",
		     (unsigned long long)(first_start[1] - first_start[0]));
	hcasim_trace_observe("", NULL, NULL);
	sw_close();
	hcasim_shutdown();
	for (int n = 0; n < HOSTS; n++) {
		snprintf(path, sizeof(path), "%s.link%d.pcap", prefix, n);
		snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-pcapcheck %s", HCASIM_BUILD_DIR, path);
		free(tb_run_cmd(cmd, &st));
		cr_assert_eq(st, 0, "hcasim-pcapcheck %s", path);
		if (n == 0 || n == 3)
			cr_assert_gt(file_size(path), 76, "%s holds the WRITE and its ACK", path);
		else if (!strcmp(ll, "ib"))
			cr_assert_eq(file_size(path), 76, "%s: no frame (the LFT floods nothing)", path);
	}
	tb_rm_tmpdir(dir);
}

Test(sw, cut_through_latency_and_one_capture_per_switch_port)
{
	capture("ib");
}

/* RoCE: the bridge floods the first frame (host 3's MAC is not known yet) and forwards
 * frames sealed by the capture with their FCS. */
Test(sw, cut_through_latency_and_captures_through_the_learning_bridge)
{
	capture("roce");
}

/* ---- sixteen hosts ---- */

/* Every host's UD QP joins the group; host 0 sends one datagram: each of the n members gets
 * it once (host 0's through its loopback), and the MFT sent it out of every port but the
 * sender's — port 16 is in the MFT's second 16-port position. */
static void mcast16(struct tb_dev *d, int n)
{
	struct ibv_qp *qp[16];
	struct ibv_mr *mr[16];
	struct ibv_ah_attr aa = { .dlid = MLID, .port_num = 1, .is_global = 1 };
	struct ibv_ah *ah;
	uint64_t tx[17];
	struct ibv_wc wc[2];

	for (int i = 0; i < n; i++) {
		struct ibv_sge sge;
		struct ibv_recv_wr rw = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 }, *bad;

		qp[i] = ud_qp(&d[i]);
		mr[i] = sw_mr(&d[i], 4096);
		sge = (struct ibv_sge){ (uintptr_t)mr[i]->addr, 4096, mr[i]->lkey };
		EXPECT_OK(ibv_attach_mcast(qp[i], &MGID, MLID));
		EXPECT_OK(ibv_post_recv(qp[i], &rw, &bad));
		tx[i + 1] = swc(i + 1).tx_pkts;
	}
	fill(mr[0], 1000, 77);
	aa.grh.dgid = MGID;
	aa.grh.hop_limit = 1;
	ah = ibv_create_ah(d[0].pd, &aa);
	cr_assert_not_null(ah, "%s", hcasim_last_error());
	{
		struct ibv_sge sge = { (uintptr_t)mr[0]->addr + 2000, 100, mr[0]->lkey };
		struct ibv_send_wr wr = { .wr_id = 50, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		memcpy((uint8_t *)mr[0]->addr + 2000, mr[0]->addr, 100);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 0xffffff;
		wr.wr.ud.remote_qkey = TB_QKEY;
		EXPECT_OK(ibv_post_send(qp[0], &wr, &bad));
	}
	for (int i = 0; i < n; i++) {
		tb_poll(d[i].cq, wc, i ? 1 : 2); /* host 0: its send and its own copy */
		for (int k = 0; k < (i ? 1 : 2); k++) {
			cr_assert_eq(wc[k].status, IBV_WC_SUCCESS, "host %d", i);
			if (wc[k].opcode != IBV_WC_RECV)
				continue;
			cr_assert_eq(wc[k].byte_len, 140u, "host %d", i);
			cr_assert_arr_eq((uint8_t *)mr[i]->addr + 40, (uint8_t *)mr[0]->addr + 2000,
					 100, "host %d", i);
		}
	}
	hcasim_run_for_ps(100 * 1000 * 1000ull);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(ibv_poll_cq(d[i].cq, 1, wc), 0, "host %d: a second completion", i);
		cr_assert_eq(swc(i + 1).tx_pkts, tx[i + 1] + (i ? 1 : 0), "switch port %d", i + 1);
	}
	EXPECT_OK(ibv_destroy_ah(ah));
}

Test(sw, sixteen_hosts_write_to_each_other_and_a_datagram_reaches_all_sixteen)
{
	enum { N = 16, LEN = 5000 };
	static struct tb_dev d[N];
	static struct ibv_qp *qp[N][N];
	struct ibv_mr *src[N], *dst[N];

	tb_config("sim.topology", "switch");
	tb_config("sim.hosts", "16");
	for (int i = 0; i < N; i++) {
		tb_open(&d[i], i);
		src[i] = sw_mr(&d[i], LEN);
		dst[i] = sw_mr(&d[i], (size_t)N * LEN);
		fill(src[i], LEN, (unsigned)i + 40);
	}
	cr_assert_eq(hcasim_switch_ports(), N);
	for (int a = 0; a < N; a++)
		for (int b = a + 1; b < N; b++) {
			qp[a][b] = tb_create_qp(&d[a], IBV_QPT_RC);
			qp[b][a] = tb_create_qp(&d[b], IBV_QPT_RC);
			tb_connect(&d[a], qp[a][b], &d[b], qp[b][a]->qp_num, IBV_MTU_4096);
			tb_connect(&d[b], qp[b][a], &d[a], qp[a][b]->qp_num, IBV_MTU_4096);
		}
	/* Each host writes to each other: 240 WRITEs, four at a time per host (its CQ). */
	for (int round = 0; round < N - 1; round++) {
		for (int a = 0; a < N; a++) {
			int b = (a + 1 + round) % N;

			post_write(qp[a][b], src[a], 0, LEN, dst[b], (size_t)a * LEN, (uint64_t)b);
		}
		for (int a = 0; a < N; a++) {
			struct ibv_wc wc;

			tb_poll(d[a].cq, &wc, 1);
			cr_assert_eq(wc.status, IBV_WC_SUCCESS, "host %d: %s", a,
				     ibv_wc_status_str(wc.status));
		}
	}
	for (int b = 0; b < N; b++)
		for (int a = 0; a < N; a++)
			if (a != b)
				cr_assert_arr_eq((uint8_t *)dst[b]->addr + (size_t)a * LEN,
						 src[a]->addr, LEN, "host %d's bytes at host %d", a, b);
	for (int p = 1; p <= N; p++) {
		struct hcasim_switch_port_counters c = swc(p);

		cr_assert_eq(c.rx_discards + c.tx_discards, 0, "switch port %d", p);
		cr_assert_eq(c.tx_pkts, c.rx_pkts, "switch port %d: as many out as in", p);
	}
	mcast16(d, N);
}

/* Two ports per host, 16 hosts: 32 switch ports; host 15's port 2 is switch port 32. A WRITE
 * from host 0's port 2 to it goes in at switch port 2 and out at 32, by the LFT. */
Test(sw, two_ports_per_host_make_thirty_two_switch_ports)
{
	static struct tb_dev a, b;
	struct ibv_port_attr pa;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *src, *dst;
	struct ibv_wc wc;

	tb_config("sim.topology", "switch");
	tb_config("sim.hosts", "16");
	tb_config("hca.ports", "2");
	tb_open(&a, 0);
	tb_open(&b, 15);
	cr_assert_eq(hcasim_switch_ports(), 32);
	cr_assert_eq(ibv_query_port(b.ctx, 2, &pa), 0);
	cr_assert_eq(pa.state, IBV_PORT_ACTIVE);
	cr_assert_eq(pa.lid, 32, "LIDs as without the switch: host 15 port 2 is LID 32");
	qa = tb_create_qp(&a, IBV_QPT_RC);
	qb = tb_create_qp(&b, IBV_QPT_RC);
	cr_assert_eq(ibv_query_port(a.ctx, 2, &a.port), 0);
	tb_connect_port(qa, 2, b.ctx, 2, pa.lid, false, qb->qp_num, IBV_MTU_4096);
	tb_connect_port(qb, 2, a.ctx, 2, a.port.lid, false, qa->qp_num, IBV_MTU_4096);
	src = sw_mr(&a, 10000);
	dst = sw_mr(&b, 10000);
	fill(src, 10000, 11);
	post_write(qa, src, 0, 10000, dst, 0, 1);
	tb_poll(a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_arr_eq(dst->addr, src->addr, 10000);
	cr_assert_eq(swc(2).rx_pkts, 3, "the WRITE's 3 packets in at host 0's port 2");
	cr_assert_eq(swc(32).tx_pkts, 3, "and out to host 15's port 2");
	cr_assert_eq(swc(32).rx_pkts, 1, "its ACK");
	cr_assert_eq(swc(1).rx_pkts + swc(31).tx_pkts, 0, "nothing by the ports 1");
}

/* ---- configuration ---- */

/* A boot with key=val is refused naming needle, and nothing is booted; key goes back to def
 * (a refused boot keeps the configuration). */
static void refused(const char *key, const char *val, const char *def, const char *ll,
		    const char *needle)
{
	tb_config("sim.topology", "switch");
	tb_config("sim.hosts", "4");
	tb_config("hca.link_layer", ll);
	tb_config(key, val);
	cr_assert_neq(hcasim_boot(), 0, "%s=%s booted", key, val);
	cr_assert_eq(hcasim_booted(), 0);
	cr_assert_not_null(strstr(hcasim_last_error(), needle), "%s=%s: '%s'", key, val,
			   hcasim_last_error());
	tb_config(key, def);
}

Test(sw, bad_switch_configuration_is_refused_naming_the_key)
{
	cr_assert_eq(hcasim_config_set("sim.topology", "ring"), -EINVAL);
	cr_assert_not_null(strstr(hcasim_last_error(), "sim.topology"), "%s", hcasim_last_error());
	cr_assert_neq(hcasim_config_set("switch.queue_bytes", "100"), 0);
	cr_assert_not_null(strstr(hcasim_last_error(), "switch.queue_bytes"));
	refused("switch.ib_credits", "10", "256", "ib", "'switch.ib_credits'");
	refused("switch.pfc_xon_bytes", "16384", "8192", "roce", "'switch.pfc_xon_bytes'");
	refused("fault.drop_ppm", "100", "0", "ib", "'fault.drop_ppm'");
	refused("fault.link_down", "0@10+10", "", "ib", "'fault.link_down'");
	/* At run time: no faults on a switch's links, bad ports and routes refused. */
	tb_config("hca.link_layer", "ib");
	tb_config("sim.topology", "switch");
	tb_config("sim.hosts", "4");
	EXPECT_OK(hcasim_boot());
	cr_assert_eq(hcasim_switch_ports(), 4);
	cr_assert_eq(hcasim_link_faults(0, 0, &(struct hcasim_faults){ .drop_ppm = 1 }),
		     -EOPNOTSUPP);
	cr_assert_eq(hcasim_link_set(1, 0), -EOPNOTSUPP);
	cr_assert_eq(hcasim_link_is_up(1), 1);
	cr_assert_eq(hcasim_switch_port_counters(0, &(struct hcasim_switch_port_counters){ 0 }),
		     -EINVAL);
	cr_assert_eq(hcasim_switch_port_counters(5, &(struct hcasim_switch_port_counters){ 0 }),
		     -EINVAL);
	cr_assert_eq(hcasim_sm_set_route(0xc000, 1), -EINVAL);
	cr_assert_eq(hcasim_sm_set_route(1, 5), -EINVAL);
	cr_assert_not_null(strstr(hcasim_last_error(), "port 5"), "%s", hcasim_last_error());
	hcasim_shutdown();
	/* Without the key: pairs, no switch. */
	EXPECT_OK(hcasim_boot());
	cr_assert_eq(hcasim_switch_ports(), 0);
	cr_assert_eq(hcasim_sm_set_route(1, 1), -ENODEV);
}
