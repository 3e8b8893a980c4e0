/* The default simulation of hcasim-run (sim/apps/run.c) and hcasim-sc (sim/systemc/), in one
 * place so that both produce the same output: opens both simulated HCAs, prints their device and
 * port attributes as ibv_devinfo does, creates an RC QP on each, connects them
 * RESET -> INIT -> RTR -> RTS with the attributes of the ibv_modify_qp examples, queries them
 * back, prints a cycle-stamped summary of the firmware commands each HCA executed, then runs a
 * short RC workload (SEND, RDMA WRITE, RDMA READ, both atomics), checks every byte, and prints
 * per-QP counters and the simulated time. */
#include "sim/apps/run_workload.h"

#include <infiniband/verbs.h>

#include "sim/hcasim.h"

#include <endian.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NDEV 2

static const char *mtu_str(enum ibv_mtu m)
{
	static const char *const s[] = { "?", "256", "512", "1024", "2048", "4096" };

	return (unsigned)m < 6 ? s[m] : "?";
}

static void guid_str(__be64 be, char *buf)
{
	uint64_t g = be64toh(be);

	sprintf(buf, "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
		(unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
}

static int print_device(struct ibv_context *ctx)
{
	struct ibv_device_attr a;
	char g[32];

	if (ibv_query_device(ctx, &a)) {
		fprintf(stderr, "ibv_query_device: %s\n", hcasim_last_error());
		return -1;
	}
	printf("hca_id:\t%s\n", ibv_get_device_name(ctx->device));
	printf("\tfw_ver:\t\t\t\t%s\n", a.fw_ver);
	guid_str(a.node_guid, g);
	printf("\tnode_guid:\t\t\t%s\n", g);
	guid_str(a.sys_image_guid, g);
	printf("\tsys_image_guid:\t\t\t%s\n", g);
	printf("\tvendor_id:\t\t\t0x%04x\n\tvendor_part_id:\t\t\t%u\n", a.vendor_id,
	       a.vendor_part_id);
	printf("\tmax_qp:\t\t\t\t%d\n\tmax_qp_wr:\t\t\t%d\n\tmax_sge:\t\t\t%d\n", a.max_qp,
	       a.max_qp_wr, a.max_sge);
	printf("\tmax_cq:\t\t\t\t%d\n\tmax_cqe:\t\t\t%d\n\tmax_mr:\t\t\t\t%d\n\tmax_pd:\t\t\t\t%d\n",
	       a.max_cq, a.max_cqe, a.max_mr, a.max_pd);
	printf("\tmax_qp_rd_atom:\t\t\t%d\n\tmax_srq:\t\t\t%d\n\tphys_port_cnt:\t\t\t%u\n",
	       a.max_qp_rd_atom, a.max_srq, a.phys_port_cnt);
	for (uint8_t p = 1; p <= a.phys_port_cnt; p++) {
		struct ibv_port_attr pa;
		union ibv_gid gid;

		if (ibv_query_port(ctx, p, &pa) || ibv_query_gid(ctx, p, 0, &gid)) {
			fprintf(stderr, "port %u: %s\n", p, hcasim_last_error());
			return -1;
		}
		printf("\t\tport:\t%u\n", p);
		printf("\t\t\tstate:\t\t\t%s (%d)\n", ibv_port_state_str(pa.state), pa.state);
		printf("\t\t\tmax_mtu:\t\t%s (%d)\n", mtu_str(pa.max_mtu), pa.max_mtu);
		printf("\t\t\tactive_mtu:\t\t%s (%d)\n", mtu_str(pa.active_mtu), pa.active_mtu);
		printf("\t\t\tsm_lid:\t\t\t%u\n\t\t\tport_lid:\t\t%u\n", pa.sm_lid, pa.lid);
		printf("\t\t\tlink_layer:\t\t%s\n",
		       pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
		printf("\t\t\tGID[  0]:\t\t");
		for (int i = 0; i < 16; i += 2)
			printf("%02x%02x%s", gid.raw[i], gid.raw[i + 1], i < 14 ? ":" : "\n");
	}
	printf("\n");
	return 0;
}

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_port_attr port;
	union ibv_gid gid;
	uint32_t psn;
};

/* What a host's program tells the other's: its QP's address and its buffer's key. */
struct card {
	uint32_t qpn, psn, rkey;
	uint16_t lid;
	uint8_t gid[16];
};

/* The run: the sides this process drives (both in one process; one each in a fabric of two,
 * HCASIM_HOST=0 or 1), the cards they have told each other, and whose turn it is. The steps go
 * in one order, each on one host; when the next step is the other host's, the host whose turn
 * it was tells it so with a host message (hcasim_host_send), which also carries its card. So
 * one process driving both hosts and two processes driving one each act at the same simulated
 * times (docs/fabric.md#host-messages). */
struct run {
	struct side s[NDEV];
	bool held[NDEV];
	struct card card[NDEV];
	int turn;
};

/* The turn passes to host h: the host that had it sends its card, h takes it. */
static int turn(struct run *r, int h)
{
	int from = r->turn;

	if (from == h)
		return 0;
	r->turn = h;
	if (r->held[from] && hcasim_host_send(from, h, &r->card[from], sizeof(r->card[from]))) {
		fprintf(stderr, "hcasim_host_send: %s\n", hcasim_last_error());
		return -1;
	}
	if (r->held[h] && hcasim_host_recv(h, from, &r->card[from], sizeof(r->card[from]),
					   UINT64_MAX) != (int)sizeof(r->card[from])) {
		fprintf(stderr, "hcasim_host_recv: %s\n", hcasim_last_error());
		return -1;
	}
	return 0;
}

static int modify(struct side *s, struct ibv_qp_attr *a, int mask, const char *what)
{
	if (ibv_modify_qp(s->qp, a, mask)) {
		fprintf(stderr, "ibv_modify_qp %s: %s\n", what, hcasim_last_error());
		return -1;
	}
	printf("t=%llu ps  %s qp 0x%06x -> %s\n", (unsigned long long)hcasim_now_ps(),
	       ibv_get_device_name(s->ctx->device), s->qp->qp_num, what);
	return 0;
}

static int connect_rc(struct side *s, const struct card *peer)
{
	struct ibv_qp_attr a;
	bool roce = s->port.link_layer == IBV_LINK_LAYER_ETHERNET;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	if (modify(s, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		   "INIT"))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = s->port.active_mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = roce;
	a.ah_attr.dlid = peer->lid;
	a.ah_attr.sl = 0;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = 1;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	a.ah_attr.grh.hop_limit = 1;
	if (modify(s, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
		   "RTR"))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = s->psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return modify(s, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
		      "RTS");
}

static void print_qp(const struct side *s)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(s->qp, &a, IBV_QP_STATE, &ia)) {
		fprintf(stderr, "ibv_query_qp: %s\n", hcasim_last_error());
		return;
	}
	printf("%s qp 0x%06x: state=%s dest_qp=0x%06x dlid=%u path_mtu=%s sq_psn=%u rq_psn=%u "
	       "timeout=%u retry_cnt=%u rnr_retry=%u min_rnr_timer=%u max_rd_atomic=%u "
	       "max_dest_rd_atomic=%u max_send_wr=%u max_recv_wr=%u max_inline=%u\n",
	       ibv_get_device_name(s->ctx->device), s->qp->qp_num,
	       a.qp_state == IBV_QPS_RTS ? "RTS" : "not RTS", a.dest_qp_num, a.ah_attr.dlid,
	       mtu_str(a.path_mtu), a.sq_psn, a.rq_psn, a.timeout, a.retry_cnt, a.rnr_retry,
	       a.min_rnr_timer, a.max_rd_atomic, a.max_dest_rd_atomic, ia.cap.max_send_wr,
	       ia.cap.max_recv_wr, ia.cap.max_inline_data);
}

static int wait_cqe(struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	uint64_t start = hcasim_now_ps();
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0) {
		if (hcasim_halted()) {
			fprintf(stderr, "%s: the simulation halted: %s\n", what, hcasim_halted());
			return -1;
		}
		if (hcasim_now_ps() - start > 1000000000ull) {
			fprintf(stderr, "%s: no completion within 1 ms simulated\n", what);
			return -1;
		}
	}
	if (n < 0 || wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "%s: %s\n", what, n < 0 ? hcasim_last_error()
							: ibv_wc_status_str(wc->status));
		return -1;
	}
	printf("t=%llu ps  %-24s wr_id=%llu opcode=%d byte_len=%u\n",
	       (unsigned long long)hcasim_now_ps(), what, (unsigned long long)wc->wr_id, wc->opcode,
	       wc->byte_len);
	return 0;
}

static int post(struct side *s, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad;

	if (ibv_post_send(s->qp, wr, &bad)) {
		fprintf(stderr, "post %s: %s\n", what, hcasim_last_error());
		return -1;
	}
	return 0;
}

enum { SEND_LEN = 8192, RDMA_LEN = 65536, BUF_LEN = 2 * RDMA_LEN + 4096 };
static const uint64_t A_IOVA = 0x10000000, B_IOVA = 0x20000000;

/* The workload's buffers (each on its own host), their registrations, and the work request,
 * its gather entry and the completion that each step reuses. */
struct rc_work {
	struct run *r;
	uint8_t *buf[NDEV];
	struct ibv_mr *mr[NDEV];
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
};

/* Host h's buffer, registered at a fixed I/O virtual address, so that the addresses in the
 * packets (and so the pcap) do not depend on where the host allocator put it. Work requests
 * then name memory by these addresses. Host 0's holds the pattern, host 1's zeros and the
 * atomics' counter (1000). */
static int rc_buffer(struct rc_work *w, int h)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;
	uint8_t *b = aligned_alloc(4096, BUF_LEN);

	if (!b)
		return -1;
	w->buf[h] = b;
	memset(b, 0, BUF_LEN);
	for (int i = 0; !h && i < 2 * RDMA_LEN; i++)
		b[i] = (uint8_t)(i * 31 + 7);
	if (h)
		*(uint64_t *)(b + 2 * RDMA_LEN) = 1000;
	w->mr[h] = ibv_reg_mr_iova2(w->r->s[h].pd, b, BUF_LEN, h ? B_IOVA : A_IOVA, acc);
	if (!w->mr[h]) {
		fprintf(stderr, "ibv_reg_mr: %s\n", hcasim_last_error());
		return -1;
	}
	w->r->card[h].rkey = w->mr[h]->rkey;
	return 0;
}

/* Whether bytes hold the pattern host 0's buffer starts with (from its offset off). */
static bool pattern_at(const uint8_t *bytes, size_t len, size_t off)
{
	for (size_t i = 0; i < len; i++)
		if (bytes[i] != (uint8_t)((off + i) * 31 + 7))
			return false;
	return true;
}

/* Host 1 registers its buffer and posts a receive for 8 KiB. */
static int rc_receiver(struct rc_work *w)
{
	struct ibv_recv_wr rwr = { 0 }, *rbad;

	if (rc_buffer(w, 1))
		return -1;
	w->sge = (struct ibv_sge){ B_IOVA + RDMA_LEN, SEND_LEN, w->mr[1]->lkey };
	rwr.wr_id = 100;
	rwr.sg_list = &w->sge;
	rwr.num_sge = 1;
	if (ibv_post_recv(w->r->s[1].qp, &rwr, &rbad)) {
		fprintf(stderr, "ibv_post_recv: %s\n", hcasim_last_error());
		return -1;
	}
	return 0;
}

/* Host 0 SENDs 8 KiB into the receive. */
static int rc_send(struct rc_work *w)
{
	memset(&w->wr, 0, sizeof(w->wr));
	w->sge = (struct ibv_sge){ A_IOVA, SEND_LEN, w->mr[0]->lkey };
	w->wr.wr_id = 1;
	w->wr.sg_list = &w->sge;
	w->wr.num_sge = 1;
	w->wr.opcode = IBV_WR_SEND;
	w->wr.send_flags = IBV_SEND_SIGNALED;
	return post(&w->r->s[0], &w->wr, "SEND") ||
	       wait_cqe(w->r->s[0].cq, &w->wc, "SEND completed");
}

/* Host 1 takes the receive's completion and checks the bytes. */
static int rc_received(struct rc_work *w)
{
	if (wait_cqe(w->r->s[1].cq, &w->wc, "RECV completed"))
		return -1;
	if (w->wc.byte_len != SEND_LEN || !pattern_at(w->buf[1] + RDMA_LEN, SEND_LEN, 0)) {
		fprintf(stderr, "SEND: received bytes differ\n");
		return -1;
	}
	return 0;
}

/* Host 0: RDMA WRITE 64 KiB to host 1, then RDMA READ it back; checks what it read. */
static int rc_write_read(struct rc_work *w)
{
	w->sge = (struct ibv_sge){ A_IOVA, RDMA_LEN, w->mr[0]->lkey };
	w->wr.wr_id = 2;
	w->wr.opcode = IBV_WR_RDMA_WRITE;
	w->wr.wr.rdma.remote_addr = B_IOVA;
	w->wr.wr.rdma.rkey = w->r->card[1].rkey;
	if (post(&w->r->s[0], &w->wr, "WRITE") ||
	    wait_cqe(w->r->s[0].cq, &w->wc, "RDMA WRITE completed"))
		return -1;
	w->sge.addr = A_IOVA + RDMA_LEN;
	w->wr.wr_id = 3;
	w->wr.opcode = IBV_WR_RDMA_READ;
	if (post(&w->r->s[0], &w->wr, "READ") ||
	    wait_cqe(w->r->s[0].cq, &w->wc, "RDMA READ completed"))
		return -1;
	if (memcmp(w->buf[0], w->buf[0] + RDMA_LEN, RDMA_LEN)) {
		fprintf(stderr, "RDMA READ: bytes read back differ\n");
		return -1;
	}
	return 0;
}

/* One atomic of host 0 on host 1's counter; *result must come back as want. */
static int rc_atomic(struct rc_work *w, enum ibv_wr_opcode op, uint64_t add, uint64_t want,
		     const char *what)
{
	uint64_t *result = (uint64_t *)(w->buf[0] + 2 * RDMA_LEN);

	w->sge = (struct ibv_sge){ A_IOVA + 2 * RDMA_LEN, 8, w->mr[0]->lkey };
	w->wr.wr_id = op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 4 : 5;
	w->wr.opcode = op;
	w->wr.wr.atomic.remote_addr = B_IOVA + 2 * RDMA_LEN;
	w->wr.wr.atomic.rkey = w->r->card[1].rkey;
	w->wr.wr.atomic.compare_add = add;
	w->wr.wr.atomic.swap = 42;
	if (post(&w->r->s[0], &w->wr, what) || wait_cqe(w->r->s[0].cq, &w->wc, what))
		return -1;
	if (*result != want) {
		fprintf(stderr, "%s: got %llu, expected %llu\n", what,
			(unsigned long long)*result, (unsigned long long)want);
		return -1;
	}
	return 0;
}

/* Host 1: the WRITE's bytes and the counter the atomics left (1000 + 5, then swapped to 42). */
static int rc_landed(struct rc_work *w)
{
	uint64_t counter = *(uint64_t *)(w->buf[1] + 2 * RDMA_LEN);

	if (!pattern_at(w->buf[1], RDMA_LEN, 0)) {
		fprintf(stderr, "RDMA WRITE: remote bytes differ\n");
		return -1;
	}
	if (counter != 42) {
		fprintf(stderr, "atomics: counter %llu, expected 42\n", (unsigned long long)counter);
		return -1;
	}
	return 0;
}

/* The steps in their order, each on its host: SEND 8 KiB 0->1, WRITE 64 KiB 0->1, READ it back,
 * FETCH_AND_ADD and CMP_AND_SWP on 1's counter. */
static int rc_steps(struct rc_work *w)
{
	struct run *r = w->r;

	if (turn(r, 0) || (r->held[0] && rc_buffer(w, 0)) || turn(r, 1) || (r->held[1] && rc_receiver(w)) ||
	    turn(r, 0) || (r->held[0] && rc_send(w)) || turn(r, 1) ||
	    (r->held[1] && rc_received(w)) || turn(r, 0))
		return -1;
	if (r->held[0] &&
	    (rc_write_read(w) ||
	     rc_atomic(w, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, 1000, "FETCH_AND_ADD completed") ||
	     rc_atomic(w, IBV_WR_ATOMIC_CMP_AND_SWP, 1005, 1005, "CMP_AND_SWP completed")))
		return -1;
	return turn(r, 1) || (r->held[1] && rc_landed(w));
}

static int workload(struct run *r)
{
	struct rc_work w = { .r = r };
	int rc;

	printf("\n== RC workload ==\n");
	rc = rc_steps(&w);
	if (!rc)
		printf("all bytes verified: SEND %d B, WRITE %d B, READ %d B, two atomics\n",
		       SEND_LEN, RDMA_LEN, RDMA_LEN);
	for (int h = 0; h < NDEV; h++) {
		if (w.mr[h])
			ibv_dereg_mr(w.mr[h]);
		free(w.buf[h]);
	}
	return rc;
}

/* Opens dev, host h's HCA, into s: prints its attributes, allocates a PD, a CQ and an RC QP,
 * queries its port and GID, and fills in its card. */
static int open_side(struct ibv_device *dev, struct side *s, struct card *c, int h)
{
	struct ibv_qp_init_attr init = { 0 };

	s->ctx = ibv_open_device(dev);
	if (!s->ctx || print_device(s->ctx))
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 64, NULL, NULL, 0) : NULL;
	init.send_cq = init.recv_cq = s->cq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 16;
	init.cap.max_recv_wr = 16;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	s->qp = s->cq ? ibv_create_qp(s->pd, &init) : NULL;
	if (!s->qp || ibv_query_port(s->ctx, 1, &s->port) || ibv_query_gid(s->ctx, 1, 0, &s->gid)) {
		fprintf(stderr, "setup of HCA %d: %s\n", h, hcasim_last_error());
		return -1;
	}
	s->psn = 0x1000 * (unsigned)(h + 1);
	*c = (struct card){ .qpn = s->qp->qp_num, .psn = s->psn, .lid = s->port.lid };
	memcpy(c->gid, s->gid.raw, 16);
	return 0;
}

/* The firmware commands each HCA driven here executed, cycle-stamped. */
static void print_cmd_logs(const struct run *r)
{
	printf("\n== firmware commands (device core cycles at 500 MHz unless configured) ==\n");
	for (int i = 0; i < NDEV; i++) {
		struct hcasim_cmd_record rec[64];
		int k;

		if (!r->held[i])
			continue;
		k = hcasim_cmd_log(r->s[i].ctx, rec, 64);
		printf("%s:\n", ibv_get_device_name(r->s[i].ctx->device));
		for (int j = 0; j < k; j++)
			printf("  cycle %8llu..%8llu  %-14s status=%u  host wait %6.3f us\n",
			       (unsigned long long)rec[j].start_cycle,
			       (unsigned long long)rec[j].done_cycle, rec[j].name, rec[j].status,
			       (double)(rec[j].complete_ps - rec[j].submit_ps) / 1e6);
	}
}

/* The counters of each HCA's QP driven here. */
static int print_counters(const struct run *r)
{
	printf("\n== per-QP counters ==\n");
	for (int i = 0; i < NDEV; i++) {
		const struct side *s = &r->s[i];
		struct hcasim_qp_counters c;

		if (!r->held[i])
			continue;
		if (hcasim_qp_counters(i, s->qp->qp_num, &c))
			return -1;
		printf("%s qp 0x%06x: tx %llu pkts %llu B, rx %llu pkts %llu B, naks sent %llu "
		       "rcvd %llu, sq_psn %u rq_psn %u\n",
		       ibv_get_device_name(s->ctx->device), s->qp->qp_num,
		       (unsigned long long)c.tx_pkts, (unsigned long long)c.tx_bytes,
		       (unsigned long long)c.rx_pkts, (unsigned long long)c.rx_bytes,
		       (unsigned long long)c.naks_sent, (unsigned long long)c.naks_rcvd, c.sq_psn,
		       c.rq_psn);
	}
	return 0;
}

/* Boots, with the fabric's start together (both hosts at time 0, whichever process comes
 * first) and no device thread (the program leaves the library only to print: its peer waits
 * for it rather than running its HCA meanwhile); finds the HCAs of the hosts held here. */
static int boot(const char *pcap, struct run *r, struct ibv_device ***list)
{
	int n;

	if (hcasim_config_set("driver.probe", "open") ||
	    (getenv("HCASIM_FABRIC") && (hcasim_config_set("fabric.start", "together") ||
					 hcasim_config_set("fabric.device_thread_us", "0")))) {
		fprintf(stderr, "config: %s\n", hcasim_last_error());
		return -1;
	}
	/* Booted here, so that a boot failure is told once, by this program (the device list of
	 * a system that cannot boot is empty, and the driver would tell it too). */
	if (hcasim_boot()) {
		fprintf(stderr, "boot: %s\n", hcasim_last_error());
		return -1;
	}
	*list = ibv_get_device_list(&n);
	if (!*list) {
		fprintf(stderr, "ibv_get_device_list: %s\n", hcasim_last_error());
		return -1;
	}
	if (hcasim_pcap(pcap)) {
		fprintf(stderr, "hcasim_pcap: %s\n", hcasim_last_error());
		return -1;
	}
	for (int h = 0; h < NDEV; h++)
		r->held[h] = hcasim_fabric_holds(h);
	if (hcasim_num_devices() < NDEV || n != r->held[0] + r->held[1]) {
		fprintf(stderr, "need %d HCAs, found %d\n", NDEV, n);
		return -1;
	}
	printf("== %d simulated HCAs, booted at t=%llu ps ==\n\n", n,
	       (unsigned long long)hcasim_now_ps());
	return 0;
}

/* Opening, connecting and querying back, each host in its turn. */
static int setup(struct run *r, struct ibv_device **list)
{
	for (int h = 0, j = 0; h < NDEV; h++)
		if (turn(r, h) || (r->held[h] && open_side(list[j++], &r->s[h], &r->card[h], h)))
			return -1;
	printf("== connecting RC QPs ==\n");
	for (int h = 0; h < NDEV; h++)
		if (turn(r, h) || (r->held[h] && connect_rc(&r->s[h], &r->card[!h])))
			return -1;
	printf("\n== queried back ==\n");
	for (int h = 0; h < NDEV; h++) {
		if (turn(r, h))
			return -1;
		if (r->held[h])
			print_qp(&r->s[h]);
	}
	return 0;
}

int hcasim_run_default(const char *pcap, void (*reported)(void *arg), void *arg)
{
	struct ibv_device **list = NULL;
	struct run r;

	memset(&r, 0, sizeof(r));
	if (boot(pcap, &r, &list) || setup(&r, list))
		return 1;
	print_cmd_logs(&r);
	if (workload(&r) || print_counters(&r))
		return 1;
	printf("\nsimulated time: %.3f us, kernel events: %llu, pcap: %s.link0.pcap\n",
	       (double)hcasim_now_ps() / 1e6, (unsigned long long)hcasim_events_executed(), pcap);
	if (reported)
		reported(arg);
	for (int i = 0; i < NDEV; i++) {
		if (!r.held[i])
			continue;
		ibv_destroy_qp(r.s[i].qp);
		ibv_destroy_cq(r.s[i].cq);
		ibv_dealloc_pd(r.s[i].pd);
		ibv_close_device(r.s[i].ctx);
	}
	ibv_free_device_list(list);
	hcasim_shutdown();
	return 0;
}
