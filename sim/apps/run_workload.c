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

static int connect_rc(struct side *s, const struct side *peer)
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
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = roce;
	a.ah_attr.dlid = peer->port.lid;
	a.ah_attr.sl = 0;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = peer->gid;
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

enum { SEND_LEN = 8192, RDMA_LEN = 65536 };
static const uint64_t A_IOVA = 0x10000000, B_IOVA = 0x20000000;

/* The workload's two buffers, their registrations, and the work request, its gather entry and
 * the completion that each step reuses. */
struct rc_work {
	struct side *a, *b;
	uint8_t *abuf, *bbuf;
	struct ibv_mr *amr, *bmr;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint64_t *counter, *result;
};

/* SEND 8 KiB a->b into a posted receive; checks the bytes received. */
static int rc_send(struct rc_work *w)
{
	struct ibv_recv_wr rwr = { 0 }, *rbad;

	w->sge = (struct ibv_sge){ B_IOVA + RDMA_LEN, SEND_LEN, w->bmr->lkey };
	rwr.wr_id = 100;
	rwr.sg_list = &w->sge;
	rwr.num_sge = 1;
	if (ibv_post_recv(w->b->qp, &rwr, &rbad)) {
		fprintf(stderr, "ibv_post_recv: %s\n", hcasim_last_error());
		return -1;
	}
	memset(&w->wr, 0, sizeof(w->wr));
	w->sge = (struct ibv_sge){ A_IOVA, SEND_LEN, w->amr->lkey };
	w->wr.wr_id = 1;
	w->wr.sg_list = &w->sge;
	w->wr.num_sge = 1;
	w->wr.opcode = IBV_WR_SEND;
	w->wr.send_flags = IBV_SEND_SIGNALED;
	if (post(w->a, &w->wr, "SEND") || wait_cqe(w->a->cq, &w->wc, "SEND completed") ||
	    wait_cqe(w->b->cq, &w->wc, "RECV completed"))
		return -1;
	if (w->wc.byte_len != SEND_LEN || memcmp(w->abuf, w->bbuf + RDMA_LEN, SEND_LEN)) {
		fprintf(stderr, "SEND: received bytes differ\n");
		return -1;
	}
	return 0;
}

/* RDMA WRITE 64 KiB a->b, then RDMA READ it back into a; checks both. */
static int rc_write_read(struct rc_work *w)
{
	w->sge = (struct ibv_sge){ A_IOVA, RDMA_LEN, w->amr->lkey };
	w->wr.wr_id = 2;
	w->wr.opcode = IBV_WR_RDMA_WRITE;
	w->wr.wr.rdma.remote_addr = B_IOVA;
	w->wr.wr.rdma.rkey = w->bmr->rkey;
	if (post(w->a, &w->wr, "WRITE") || wait_cqe(w->a->cq, &w->wc, "RDMA WRITE completed"))
		return -1;
	if (memcmp(w->abuf, w->bbuf, RDMA_LEN)) {
		fprintf(stderr, "RDMA WRITE: remote bytes differ\n");
		return -1;
	}
	w->sge.addr = A_IOVA + RDMA_LEN;
	w->wr.wr_id = 3;
	w->wr.opcode = IBV_WR_RDMA_READ;
	if (post(w->a, &w->wr, "READ") || wait_cqe(w->a->cq, &w->wc, "RDMA READ completed"))
		return -1;
	if (memcmp(w->abuf, w->abuf + RDMA_LEN, RDMA_LEN)) {
		fprintf(stderr, "RDMA READ: bytes read back differ\n");
		return -1;
	}
	return 0;
}

/* FETCH_AND_ADD then CMP_AND_SWP on b's counter; checks the results and the counter. */
static int rc_atomics(struct rc_work *w)
{
	w->sge = (struct ibv_sge){ A_IOVA + 2 * RDMA_LEN, 8, w->amr->lkey };
	w->wr.wr_id = 4;
	w->wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	w->wr.wr.atomic.remote_addr = B_IOVA + 2 * RDMA_LEN;
	w->wr.wr.atomic.rkey = w->bmr->rkey;
	w->wr.wr.atomic.compare_add = 5;
	if (post(w->a, &w->wr, "FETCH_ADD") ||
	    wait_cqe(w->a->cq, &w->wc, "FETCH_AND_ADD completed"))
		return -1;
	if (*w->result != 1000 || *w->counter != 1005) {
		fprintf(stderr, "FETCH_AND_ADD: got %llu, counter %llu\n",
			(unsigned long long)*w->result, (unsigned long long)*w->counter);
		return -1;
	}
	w->wr.wr_id = 5;
	w->wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	w->wr.wr.atomic.compare_add = 1005;
	w->wr.wr.atomic.swap = 42;
	if (post(w->a, &w->wr, "CMP_SWP") || wait_cqe(w->a->cq, &w->wc, "CMP_AND_SWP completed"))
		return -1;
	if (*w->result != 1005 || *w->counter != 42) {
		fprintf(stderr, "CMP_AND_SWP: got %llu, counter %llu\n",
			(unsigned long long)*w->result, (unsigned long long)*w->counter);
		return -1;
	}
	return 0;
}

/* SEND 8 KiB a->b, WRITE 64 KiB a->b, READ it back, FETCH_AND_ADD and CMP_AND_SWP on b. */
static int workload(struct side *a, struct side *b)
{
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;
	struct rc_work w = { .a = a, .b = b };
	int rc = -1;

	w.abuf = aligned_alloc(4096, 2 * RDMA_LEN + 4096);
	w.bbuf = aligned_alloc(4096, 2 * RDMA_LEN + 4096);
	if (!w.abuf || !w.bbuf)
		return -1;
	memset(w.bbuf, 0, 2 * RDMA_LEN + 4096);
	for (int i = 0; i < 2 * RDMA_LEN; i++)
		w.abuf[i] = (uint8_t)(i * 31 + 7);
	/* Registered at fixed I/O virtual addresses, so that the addresses in the packets (and
	 * so the pcap) do not depend on where the host allocator put the buffers. Work requests
	 * then name memory by these addresses. */
	w.amr = ibv_reg_mr_iova2(a->pd, w.abuf, 2 * RDMA_LEN + 4096, A_IOVA, acc);
	w.bmr = ibv_reg_mr_iova2(b->pd, w.bbuf, 2 * RDMA_LEN + 4096, B_IOVA, acc);
	if (!w.amr || !w.bmr) {
		fprintf(stderr, "ibv_reg_mr: %s\n", hcasim_last_error());
		goto out;
	}
	w.counter = (uint64_t *)(w.bbuf + 2 * RDMA_LEN);
	w.result = (uint64_t *)(w.abuf + 2 * RDMA_LEN);
	*w.counter = 1000;

	printf("\n== RC workload ==\n");
	if (rc_send(&w) || rc_write_read(&w) || rc_atomics(&w))
		goto out;
	printf("all bytes verified: SEND %d B, WRITE %d B, READ %d B, two atomics\n", SEND_LEN,
	       RDMA_LEN, RDMA_LEN);
	rc = 0;
out:
	if (w.amr)
		ibv_dereg_mr(w.amr);
	if (w.bmr)
		ibv_dereg_mr(w.bmr);
	free(w.abuf);
	free(w.bbuf);
	return rc;
}

/* Opens dev, the i-th HCA, into s: prints its attributes, allocates a PD, a CQ and an RC QP,
 * and queries its port and GID. */
static int open_side(struct ibv_device *dev, struct side *s, int i)
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
		fprintf(stderr, "setup of HCA %d: %s\n", i, hcasim_last_error());
		return -1;
	}
	s->psn = 0x1000 * (unsigned)(i + 1);
	return 0;
}

/* The firmware commands each HCA executed, cycle-stamped. */
static void print_cmd_logs(struct side *s)
{
	printf("\n== firmware commands (device core cycles at 500 MHz unless configured) ==\n");
	for (int i = 0; i < NDEV; i++) {
		struct hcasim_cmd_record rec[64];
		int k = hcasim_cmd_log(s[i].ctx, rec, 64);

		printf("%s:\n", ibv_get_device_name(s[i].ctx->device));
		for (int j = 0; j < k; j++)
			printf("  cycle %8llu..%8llu  %-14s status=%u  host wait %6.3f us\n",
			       (unsigned long long)rec[j].start_cycle,
			       (unsigned long long)rec[j].done_cycle, rec[j].name, rec[j].status,
			       (double)(rec[j].complete_ps - rec[j].submit_ps) / 1e6);
	}
}

/* The counters of each HCA's QP. */
static int print_counters(struct side *s)
{
	printf("\n== per-QP counters ==\n");
	for (int i = 0; i < NDEV; i++) {
		struct hcasim_qp_counters c;

		if (hcasim_qp_counters(i, s[i].qp->qp_num, &c))
			return -1;
		printf("%s qp 0x%06x: tx %llu pkts %llu B, rx %llu pkts %llu B, naks sent %llu "
		       "rcvd %llu, sq_psn %u rq_psn %u\n",
		       ibv_get_device_name(s[i].ctx->device), s[i].qp->qp_num,
		       (unsigned long long)c.tx_pkts, (unsigned long long)c.tx_bytes,
		       (unsigned long long)c.rx_pkts, (unsigned long long)c.rx_bytes,
		       (unsigned long long)c.naks_sent, (unsigned long long)c.naks_rcvd, c.sq_psn,
		       c.rq_psn);
	}
	return 0;
}

int hcasim_run_default(const char *pcap, void (*reported)(void *arg), void *arg)
{
	struct ibv_device **list;
	struct side s[NDEV];
	int n;

	/* Booted here, so that a boot failure is told once, by this program (the device list of
	 * a system that cannot boot is empty, and the driver would tell it too). */
	if (hcasim_boot()) {
		fprintf(stderr, "boot: %s\n", hcasim_last_error());
		return 1;
	}
	list = ibv_get_device_list(&n);
	if (!list) {
		fprintf(stderr, "ibv_get_device_list: %s\n", hcasim_last_error());
		return 1;
	}
	if (hcasim_pcap(pcap)) {
		fprintf(stderr, "hcasim_pcap: %s\n", hcasim_last_error());
		return 1;
	}
	if (n < NDEV) {
		fprintf(stderr, "need %d HCAs, found %d\n", NDEV, n);
		return 1;
	}
	printf("== %d simulated HCAs, booted at t=%llu ps ==\n\n", n,
	       (unsigned long long)hcasim_now_ps());
	memset(s, 0, sizeof(s));
	for (int i = 0; i < NDEV; i++)
		if (open_side(list[i], &s[i], i))
			return 1;
	printf("== connecting RC QPs ==\n");
	for (int i = 0; i < NDEV; i++)
		if (connect_rc(&s[i], &s[1 - i]))
			return 1;
	printf("\n== queried back ==\n");
	for (int i = 0; i < NDEV; i++)
		print_qp(&s[i]);
	print_cmd_logs(s);
	if (workload(&s[0], &s[1]))
		return 1;
	if (print_counters(s))
		return 1;
	printf("\nsimulated time: %.3f us, kernel events: %llu, pcap: %s.link0.pcap\n",
	       (double)hcasim_now_ps() / 1e6, (unsigned long long)hcasim_events_executed(), pcap);
	if (reported)
		reported(arg);
	for (int i = 0; i < NDEV; i++) {
		ibv_destroy_qp(s[i].qp);
		ibv_destroy_cq(s[i].cq);
		ibv_dealloc_pd(s[i].pd);
		ibv_close_device(s[i].ctx);
	}
	ibv_free_device_list(list);
	hcasim_shutdown();
	return 0;
}
