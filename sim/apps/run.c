/* hcasim-run: the default simulation (`make run`). Opens both simulated HCAs, prints their
 * device and port attributes as ibv_devinfo does, creates an RC QP on each, connects them
 * RESET -> INIT -> RTR -> RTS with the attributes of the ibv_modify_qp examples, queries them
 * back, and prints a cycle-stamped summary of the firmware commands each HCA executed. */
#include <infiniband/verbs.h>

#include "sim/hcasim.h"

#include <endian.h>
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
	a.qp_access_flags = 0;
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

int main(void)
{
	struct ibv_device **list;
	struct side s[NDEV];
	int n;

	list = ibv_get_device_list(&n);
	if (!list) {
		fprintf(stderr, "ibv_get_device_list: %s\n", hcasim_last_error());
		return 1;
	}
	if (n < NDEV) {
		fprintf(stderr, "need %d HCAs, found %d\n", NDEV, n);
		return 1;
	}
	printf("== %d simulated HCAs, booted at t=%llu ps ==\n\n", n,
	       (unsigned long long)hcasim_now_ps());
	memset(s, 0, sizeof(s));
	for (int i = 0; i < NDEV; i++) {
		struct ibv_qp_init_attr init = { 0 };

		s[i].ctx = ibv_open_device(list[i]);
		if (!s[i].ctx || print_device(s[i].ctx))
			return 1;
		s[i].pd = ibv_alloc_pd(s[i].ctx);
		s[i].cq = s[i].pd ? ibv_create_cq(s[i].ctx, 64, NULL, NULL, 0) : NULL;
		init.send_cq = init.recv_cq = s[i].cq;
		init.qp_type = IBV_QPT_RC;
		init.cap.max_send_wr = 16;
		init.cap.max_recv_wr = 16;
		init.cap.max_send_sge = 1;
		init.cap.max_recv_sge = 1;
		s[i].qp = s[i].cq ? ibv_create_qp(s[i].pd, &init) : NULL;
		if (!s[i].qp || ibv_query_port(s[i].ctx, 1, &s[i].port) ||
		    ibv_query_gid(s[i].ctx, 1, 0, &s[i].gid)) {
			fprintf(stderr, "setup of HCA %d: %s\n", i, hcasim_last_error());
			return 1;
		}
		s[i].psn = 0x1000 * (unsigned)(i + 1);
	}
	printf("== connecting RC QPs ==\n");
	for (int i = 0; i < NDEV; i++)
		if (connect_rc(&s[i], &s[1 - i]))
			return 1;
	printf("\n== queried back ==\n");
	for (int i = 0; i < NDEV; i++)
		print_qp(&s[i]);
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
	printf("\nsimulated time: %.3f us, kernel events: %llu\n", (double)hcasim_now_ps() / 1e6,
	       (unsigned long long)hcasim_events_executed());
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
