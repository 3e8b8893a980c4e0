/* Driver: the rest of libibverbs' public ABI (rdma-core 44, IBVERBS_1.0 to 1.14): library
 * helpers that need no device (rates, the kernel-struct copies, fork support), verbs built on
 * the queries (P_Key index, GID table, address handles from a received completion), and the
 * entry points of features the device does not have, answered as rdma-core answers for a
 * provider without the op. docs/abi.md lists every symbol. */
#include "driver/drv.h"

#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <infiniband/sa.h>

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- rates (IBA 9.7.4 static rate encodings) ---- */

static const struct rate_row {
	enum ibv_rate rate;
	int mult; /* multiple of 2.5 Gb/s, -1 if the rate is not one */
	int mbps;
} rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },     { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },     { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },    { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },    { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },  { IBV_RATE_14_GBPS, -1, 14062 },
	{ IBV_RATE_56_GBPS, -1, 56250 },    { IBV_RATE_112_GBPS, -1, 112500 },
	{ IBV_RATE_168_GBPS, -1, 168750 },  { IBV_RATE_25_GBPS, -1, 25781 },
	{ IBV_RATE_100_GBPS, -1, 103125 },  { IBV_RATE_200_GBPS, -1, 206250 },
	{ IBV_RATE_300_GBPS, -1, 309375 },  { IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },    { IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 },
};
#define NRATES (sizeof(rates) / sizeof(rates[0]))

enum rate_key { BY_RATE, BY_MULT, BY_MBPS };

/* The row whose column k equals v, or NULL (every valid entry is positive). */
static const struct rate_row *rate_find(enum rate_key k, int v)
{
	for (size_t i = 0; v > 0 && i < NRATES; i++) {
		int x = k == BY_RATE ? (int)rates[i].rate : k == BY_MULT ? rates[i].mult
									: rates[i].mbps;

		if (x == v)
			return &rates[i];
	}
	return NULL;
}

int ibv_rate_to_mult(enum ibv_rate rate)
{
	const struct rate_row *r = rate_find(BY_RATE, (int)rate);

	return r ? r->mult : -1;
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
	const struct rate_row *r = rate_find(BY_MULT, mult);

	return r ? r->rate : IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate)
{
	const struct rate_row *r = rate_find(BY_RATE, (int)rate);

	return r ? r->mbps : -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	const struct rate_row *r = rate_find(BY_MBPS, mbps);

	return r ? r->rate : IBV_RATE_MAX;
}

/* ---- copies between the kernel ABI structs and the verbs structs (librdmacm uses them on
 * the attributes its connection manager returns) ---- */

void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	if (!dst || !src) {
		drv_fail(EINVAL, "ibv_copy_ah_attr_from_kern: NULL %s", !dst ? "dst" : "src");
		return;
	}
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	if (!dst || !src) {
		drv_fail(EINVAL, "ibv_copy_qp_attr_from_kern: NULL %s", !dst ? "dst" : "src");
		return;
	}
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = (int)src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
	if (!dst || !src) {
		drv_fail(EINVAL, "ibv_copy_path_rec_from_kern: NULL %s", !dst ? "dst" : "src");
		return;
	}
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (int)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = (int)src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = (uint8_t)src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
	if (!dst || !src) {
		drv_fail(EINVAL, "ibv_copy_path_rec_to_kern: NULL %s", !dst ? "dst" : "src");
		return;
	}
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (uint32_t)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = (uint32_t)src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

/* ---- sysfs root and fork support ---- */

/* As rdma-core: SYSFS_PATH (not in a setuid program), cut to IBV_SYSFS_PATH_MAX bytes and
 * without its trailing slashes, else /sys; read once. rdma-core takes a cut or empty value
 * silently; here each gets a warning naming the variable. */
static pthread_once_t sysfs_once = PTHREAD_ONCE_INIT;
static char sysfs_root[IBV_SYSFS_PATH_MAX + 1] = "/sys";

static void sysfs_setup(void)
{
	const char *env = getuid() == geteuid() ? getenv("SYSFS_PATH") : NULL;
	size_t n;

	if (!env)
		return;
	n = strnlen(env, IBV_SYSFS_PATH_MAX);
	if (env[n])
		fprintf(stderr, "hcasim: SYSFS_PATH: %zu bytes, cut to the first %d (as rdma-core)\n",
			strlen(env), IBV_SYSFS_PATH_MAX);
	memcpy(sysfs_root, env, n);
	while (n > 0 && sysfs_root[n - 1] == '/')
		n--;
	sysfs_root[n] = 0;
	if (!n)
		fprintf(stderr, "hcasim: SYSFS_PATH: '%.40s' leaves an empty sysfs root (as "
			"rdma-core)\n", env);
}

const char *ibv_get_sysfs_path(void)
{
	int saved = errno;

	pthread_once(&sysfs_once, sysfs_setup);
	errno = saved;
	return sysfs_root;
}

/* The simulated device reaches host memory through the simulator's own mappings, never
 * through pinned pages a fork could make copy-on-write, so fork protection is unneeded:
 * reported as rdma-core reports a kernel that copies DMA pages on fork. */
enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_fork_init(void)
{
	return 0; /* unneeded (rdma-core returns 0 without setting anything up) */
}

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0; /* fork support not set up: nothing to mark, as in rdma-core */
}

int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

/* ---- queries built on the device's tables ---- */

int ibv_get_pkey_index(struct ibv_context *ctx, uint8_t port_num, __be16 pkey)
{
	struct drv_dev *d = drv_dev_of(ctx);
	__be16 v;

	if (!d)
		return -1;
	for (int i = 0; (unsigned)i < d->cap.pkey_table_len; i++) {
		if (ibv_query_pkey(ctx, port_num, i, &v))
			return -1;
		if (v == pkey)
			return i;
	}
	/* rdma-core walks the sysfs table until a file is missing: ENOENT. */
	drv_fail(ENOENT, "ibv_get_pkey_index: P_Key 0x%04x is not in the P_Key table of %s port "
		 "%u", be16toh(pkey), d->ibdev.name, port_num);
	return -1;
}

ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct drv_dev *d = drv_dev_of(ctx);
	size_t n = 0;

	if (!d)
		return -EINVAL;
	if (flags)
		return -drv_fail(EINVAL, "ibv_query_gid_table: unknown flags 0x%x", flags);
	if (!entries && max_entries)
		return -drv_fail(EINVAL, "ibv_query_gid_table: NULL entries");
	if (entry_size < sizeof(struct ibv_gid_entry))
		return -drv_fail(EINVAL, "ibv_query_gid_table: entry_size %zu smaller than "
				 "struct ibv_gid_entry (%zu)", entry_size,
				 sizeof(struct ibv_gid_entry));
	for (uint32_t port = 1; port <= d->cap.num_ports; port++)
		for (uint32_t i = 0; i < d->cap.gid_table_len; i++) {
			struct ibv_gid_entry e;
			int rc = _ibv_query_gid_ex(ctx, port, i, &e, 0, sizeof(e));

			if (rc == ENODATA)
				continue; /* an empty slot is not part of the table */
			if (rc)
				return -rc;
			if (n == max_entries)
				return -drv_fail(EINVAL, "ibv_query_gid_table: more than "
						 "max_entries = %zu valid GIDs", max_entries);
			memcpy((char *)entries + n * entry_size, &e, sizeof(e));
			n++;
		}
	return (ssize_t)n;
}

/* The data path writes a message's payload in order (one responder, posted DMA writes that
 * land in order) before its CQE, for every opcode: whole messages are in order. */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)op;
	if (drv_handle_kind(qp) != DRV_KIND_QP) {
		drv_fail(EINVAL, "ibv_query_qp_data_in_order: not a live QP");
		return 0;
	}
	if (flags) {
		drv_fail(EINVAL, "ibv_query_qp_data_in_order: flags must be 0 (got 0x%x)", flags);
		return 0;
	}
	return 1;
}

/* ---- address handles from a received completion (a UD reply) ---- */

/* The index of the GID of port_num equal to gid with type type (0 IB/RoCE v1, 1 RoCE v2), or
 * -1 with errno ENOENT. */
static int find_gid_index(struct ibv_context *ctx, uint8_t port_num, const union ibv_gid *gid,
			  unsigned type)
{
	struct drv_dev *d = drv_dev_of(ctx);

	for (unsigned i = 0; d && i < d->cap.gid_table_len; i++) {
		struct hca_gid_out out;

		if (query_gid_raw(ctx, port_num, (int)i, &out))
			return -1;
		if (!memcmp(out.gid, gid->raw, 16) && (out.type == 2 ? 1u : 0u) == type)
			return (int)i;
	}
	drv_fail(ENOENT, "ibv_init_ah_from_wc: the destination GID of the GRH is not a GID of "
		 "port %u", port_num);
	return -1;
}

static bool ipv4_header_ok(const uint8_t *ip)
{
	uint32_t sum = 0;

	if (ip[0] != 0x45)
		return false;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

int ibv_init_ah_from_wc(struct ibv_context *ctx, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	const uint8_t *raw = (const uint8_t *)grh;
	int idx;

	if (!drv_dev_of(ctx))
		return -1;
	if (!wc || !ah_attr || ((wc->wc_flags & IBV_WC_GRH) && !grh)) {
		drv_fail(EINVAL, "ibv_init_ah_from_wc: NULL %s",
			 !wc ? "wc" : !ah_attr ? "ah_attr" : "grh with IBV_WC_GRH set");
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	ah_attr->is_global = 1;
	ah_attr->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
	/* RoCEv2 over IPv4 puts the IPv4 header in bytes 20..39 (checksum tells it apart). */
	if ((raw[0] >> 4) != 6 || ipv4_header_ok(raw + 20)) {
		const uint8_t *ip = raw + 20;
		union ibv_gid sgid = { 0 };

		if ((ip[0] >> 4) != 4) {
			drv_fail(EPROTONOSUPPORT, "ibv_init_ah_from_wc: the GRH is neither IPv6 "
				 "nor IPv4 (version nibble %u)", raw[0] >> 4);
			return -1;
		}
		if ((ip[16] & 0xf0) == 0xe0) {
			drv_fail(EINVAL, "ibv_init_ah_from_wc: the IPv4 destination is multicast");
			return -1;
		}
		sgid.raw[10] = sgid.raw[11] = 0xff;
		memcpy(sgid.raw + 12, ip + 16, 4);
		idx = find_gid_index(ctx, port_num, &sgid, 1);
		if (idx < 0)
			return -1;
		ah_attr->grh.dgid.raw[10] = ah_attr->grh.dgid.raw[11] = 0xff;
		memcpy(ah_attr->grh.dgid.raw + 12, ip + 12, 4);
		ah_attr->grh.sgid_index = (uint8_t)idx;
		ah_attr->grh.hop_limit = ip[8];
		ah_attr->grh.traffic_class = ip[1];
		return 0;
	}
	if (grh->dgid.raw[0] == 0xff) {
		drv_fail(EINVAL, "ibv_init_ah_from_wc: the GRH's destination GID is multicast");
		return -1;
	}
	if (grh->next_hdr != 0x1b && grh->next_hdr != 17) {
		drv_fail(EPROTONOSUPPORT, "ibv_init_ah_from_wc: GRH next header 0x%x is neither "
			 "IBA (0x1b) nor UDP (RoCEv2)", grh->next_hdr);
		return -1;
	}
	idx = find_gid_index(ctx, port_num, &grh->dgid, grh->next_hdr == 17 ? 1 : 0);
	if (idx < 0)
		return -1;
	ah_attr->grh.dgid = grh->sgid;
	ah_attr->grh.sgid_index = (uint8_t)idx;
	ah_attr->grh.hop_limit = grh->hop_limit;
	ah_attr->grh.traffic_class = (uint8_t)(be32toh(grh->version_tclass_flow) >> 20);
	return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (drv_handle_kind(pd) != DRV_KIND_PD) {
		drv_fail(EINVAL, "ibv_create_ah_from_wc: not a live PD");
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

/* RoCE: the Ethernet address of an AH's destination. A link-local GID carries its MAC
 * (modified EUI-64); any other GID needs the host's neighbour table, which the simulated
 * hosts do not have: -EHOSTUNREACH, as rdma-core answers when no neighbour resolves. */
int ibv_resolve_eth_l2_from_gid(struct ibv_context *ctx, struct ibv_ah_attr *attr,
				uint8_t eth_mac[6], uint16_t *vid)
{
	union ibv_gid sgid;
	const uint8_t *g;

	if (!attr || !eth_mac)
		return -drv_fail(EINVAL, "ibv_resolve_eth_l2_from_gid: NULL %s",
				 !attr ? "attr" : "eth_mac");
	if (ibv_query_gid(ctx, attr->port_num, attr->grh.sgid_index, &sgid))
		return -1;
	g = attr->grh.dgid.raw;
	if (g[0] == 0xfe && (g[1] & 0xc0) == 0x80 && g[11] == 0xff && g[12] == 0xfe) {
		eth_mac[0] = g[8] ^ 2;
		eth_mac[1] = g[9];
		eth_mac[2] = g[10];
		eth_mac[3] = g[13];
		eth_mac[4] = g[14];
		eth_mac[5] = g[15];
		if (vid)
			*vid = 0xffff; /* no VLAN */
		return 0;
	}
	return -drv_fail(EHOSTUNREACH, "ibv_resolve_eth_l2_from_gid: no neighbour table on a "
			 "simulated host: only link-local (EUI-64) GIDs resolve");
}

/* ---- features the device does not have (answers of rdma-core's dummy ops) ---- */

struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct stat st;

	if (fstat(cmd_fd, &st) || !S_ISCHR(st.st_mode)) {
		drv_fail(EINVAL, "ibv_import_device: fd %d is not a uverbs character device",
			 cmd_fd);
		return NULL;
	}
	drv_fail(EOPNOTSUPP, "ibv_import_device: hcasim has no kernel uverbs file to import "
		 "a context from");
	return NULL;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *ctx, uint32_t pd_handle)
{
	(void)ctx;
	(void)pd_handle;
	drv_fail(EOPNOTSUPP, "ibv_import_pd: sharing objects between processes is not "
		 "supported (no kernel uverbs file)");
	return NULL;
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	(void)pd; /* nothing can have been imported */
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd;
	(void)mr_handle;
	drv_fail(EOPNOTSUPP, "ibv_import_mr: sharing objects between processes is not "
		 "supported (no kernel uverbs file)");
	return NULL;
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	(void)mr;
}

struct ibv_dm *ibv_import_dm(struct ibv_context *ctx, uint32_t dm_handle)
{
	(void)ctx;
	(void)dm_handle;
	drv_fail(EOPNOTSUPP, "ibv_import_dm: device memory is not supported");
	return NULL;
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
	(void)dm;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return drv_fail(EOPNOTSUPP, "ibv_query_ece: enhanced connection establishment is not "
			"supported");
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return drv_fail(EOPNOTSUPP, "ibv_set_ece: enhanced connection establishment is not "
			"supported");
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				 uint64_t iova, int fd, int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	drv_fail(EOPNOTSUPP, "ibv_reg_dmabuf_mr: dma-buf regions are not supported (the "
		 "simulated device reaches host memory only)");
	return NULL;
}
