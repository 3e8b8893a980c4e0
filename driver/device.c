/* Driver: device discovery and probe, contexts, device/port/GID/P_Key queries, the virtual
 * sysfs files ibv_devinfo reads. */
#include "driver/drv.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#undef ibv_query_port

static struct drv_dev *devs[DRV_MAX_DEVS];
static int ndevs;

/* Free what the driver allocated for a device whose PCIe function is gone (a reboot): its
 * IOMMU mappings went with the function, the host memory did not. */
static void drv_dev_free(struct drv_dev *d)
{
	void *const mem[] = { d->cmd_page, d->eq };

	drv_dma_release_all(d, mem, 2);
	if (d->qpc_store)
		munmap(d->qpc_store, d->qpc_bytes);
	free(d->qp_by_num);
	free(d->cq_by_num);
	free(d->srq_by_num);
	free(d);
}

static uint64_t cfg_u64(const char *key)
{
	char buf[32];

	hcasim_config_get(key, buf, sizeof(buf));
	return strtoull(buf, NULL, 0);
}

/* Boot settles when nothing is pending: ports trained and swept by the SM. */
static void settle(void)
{
	hcasim_bus_hold();
	hcasim_host_settle();
	for (int i = 0; i < ndevs; i++)
		if (devs[i]->set_up && devs[i]->irq_pending)
			drv_eq_process(devs[i]);
	hcasim_bus_release();
}

/* Probe every PCIe function once per boot: set up the command interface and EQ 0, then let
 * the fabric settle (links train, the SM activates the ports) as it would at system boot.
 * With driver.probe=open, only list them: each is set up when first opened. */
static int probe_all(void)
{
	bool probe_at_open;
	char when[16];

	struct hcasim_fn *fns[DRV_MAX_DEVS];
	int n, rc;

	rc = hcasim_boot();
	if (rc)
		return -rc;
	if (ndevs && devs[0]->bus_gen == hcasim_bus_generation())
		return 0;
	for (int i = 0; i < ndevs; i++)
		drv_dev_free(devs[i]); /* stale: the system was rebooted */
	ndevs = 0;
	n = hcasim_bus_enumerate(fns, DRV_MAX_DEVS);
	hcasim_config_get("driver.probe", when, sizeof(when));
	probe_at_open = !strcmp(when, "open");
	for (int i = 0; i < n; i++) {
		struct drv_dev *d;

		if (!hcasim_fabric_holds(hcasim_fn_host(fns[i])))
			continue; /* a host another process of the fabric holds */
		d = calloc(1, sizeof(*d));
		if (!d)
			return drv_fail(ENOMEM, "probe: out of memory");
		d->fn = fns[i];
		d->ops = &drv_device_ops;
		d->refcount = 1;
		d->bus_gen = hcasim_bus_generation();
		d->ibdev.node_type = IBV_NODE_CA;
		d->ibdev.transport_type = IBV_TRANSPORT_IB;
		snprintf(d->ibdev.name, sizeof(d->ibdev.name), "%s", hcasim_fn_name(fns[i]));
		snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs%d", ndevs);
		snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path),
			 "/sys/class/infiniband_verbs/uverbs%d", ndevs);
		snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path),
			 "/sys/class/infiniband/%s", d->ibdev.name);
		d->verb_ps = cfg_u64("host.verb_ns") * 1000;
		d->poll_ps = cfg_u64("host.poll_ns") * 1000;
		d->poll_skip = cfg_u64("host.poll_skip") != 0;
		d->cmd_timeout_ps = cfg_u64("driver.cmd_timeout_ms") * 1000000000ull;
		devs[ndevs++] = d;
		if (!probe_at_open && (rc = drv_cmd_setup(d)))
			return rc;
		d->set_up = !probe_at_open;
	}
	if (!probe_at_open)
		settle();
	return 0;
}

/* driver.probe=open: a device is probed at its first open (or GUID query), in the time of the
 * program that opens it (docs/fabric.md#host-messages). */
static int set_up(struct drv_dev *d)
{
	int rc;

	if (d->set_up)
		return 0;
	if ((rc = drv_cmd_setup(d)))
		return rc;
	d->set_up = true;
	settle();
	return 0;
}

/* A system that cannot boot has no devices. As rdma-core does when a provider cannot set up
 * its device, the reason goes to stderr (once per reason, HCASIM_VERBOSE or not: a program
 * that is not hcasim-aware has no other way to show it) and the list is empty; errno keeps
 * the reason's code, hcasim_last_error() its text. */
static struct ibv_device **no_devices(int rc, int *num_devices)
{
	static char reported[512];
	const char *why = hcasim_last_error();
	struct ibv_device **list = calloc(1, sizeof(*list));

	if (strcmp(reported, why)) {
		fprintf(stderr, "hcasim: no devices: %s\n", why);
		snprintf(reported, sizeof(reported), "%s", why);
	}
	if (num_devices)
		*num_devices = 0;
	errno = list ? rc : ENOMEM;
	return list;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;
	int rc;

	drv_log_setup(); /* rdma-core reads its logging variables here, at its first list */
	rc = probe_all();
	if (rc)
		return no_devices(rc, num_devices);
	list = calloc((size_t)ndevs + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < ndevs; i++)
		list[i] = &devs[i]->ibdev;
	if (num_devices)
		*num_devices = ndevs;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const struct drv_device_ops drv_device_ops = { .name = "hcasim" };

/* Index of a device of this library in bus order, or -1 if it is not one. */
static int dev_index(struct ibv_device *device)
{
	for (int i = 0; i < ndevs; i++)
		if (&devs[i]->ibdev == device)
			return i;
	return -1;
}

static struct drv_dev *dev_of_ibdev(struct ibv_device *device)
{
	int i = dev_index(device);

	return i < 0 ? NULL : devs[i];
}

int ibv_get_device_index(struct ibv_device *device)
{
	int i = dev_index(device);

	if (i < 0)
		drv_fail(EINVAL, "ibv_get_device_index: not a device of this library");
	return i;
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	struct drv_dev *d = dev_of_ibdev(device);

	if (!d) {
		drv_fail(EINVAL, "ibv_get_device_name: not a device of this library");
		return NULL;
	}
	return d->ibdev.name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct drv_dev *d = dev_of_ibdev(device);

	if (!d) {
		drv_fail(EINVAL, "ibv_get_device_guid: not a device of this library");
		return 0;
	}
	if (set_up(d))
		return 0;
	return htobe64(d->cap.node_guid);
}

void drv_charge_verb_(struct drv_dev *d, const char *verb)
{
	drv_poll_run_end();
	hcasim_trace_verb(hcasim_fn_devno(d->fn), verb);
	hcasim_host_advance(d->verb_ps);
}

struct drv_ctx *drv_ctx_of(struct ibv_context *ctx)
{
	struct drv_ctx *c;

	if (!ctx) {
		drv_fail(EINVAL, "NULL context");
		return NULL;
	}
	c = drv_ctx_known(ctx);
	if (drv_handle_kind(c) != DRV_KIND_CTX) {
		drv_fail(EINVAL, "context is not open on this library");
		return NULL;
	}
	return c;
}

struct drv_dev *drv_dev_of(struct ibv_context *ctx)
{
	struct drv_ctx *c = drv_ctx_of(ctx);

	return c ? c->dev : NULL;
}

static int query_port_ex(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr,
			 size_t attr_len);
static int query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *input,
			   struct ibv_device_attr_ex *attr, size_t attr_size);
static int query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *values);
int drv_ops_init(struct ibv_context_ops *ops); /* dataops in data.c */

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct drv_dev *d = dev_of_ibdev(device);
	struct drv_ctx *c;

	if (!d) {
		drv_fail(EINVAL, "ibv_open_device: not a device of this library");
		return NULL;
	}
	if (set_up(d))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		drv_fail(ENOMEM, "ibv_open_device: out of memory");
		return NULL;
	}
	drv_charge_verb(d);
	c->dev = d;
	/* The device opens a user context for it: its uid, UAR page and IOMMU domain. */
	if (drv_uctx_open(c)) {
		free(c);
		return NULL;
	}
	drv_handle_add(c, DRV_KIND_CTX);
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->vctx.context.device = &d->ibdev;
	c->vctx.context.num_comp_vectors = 1;
	c->vctx.context.cmd_fd = eventfd(0, EFD_CLOEXEC);
	c->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC);
	pthread_mutex_init(&c->vctx.context.mutex, NULL);
	c->vctx.query_port = query_port_ex;
	c->vctx.query_device_ex = query_device_ex;
	c->vctx.get_srq_num = drv_get_srq_num;
	c->vctx.query_rt_values = query_rt_values;
	c->vctx.create_cq_ex = drv_create_cq_ex;
	c->vctx.create_qp_ex = drv_create_qp_ex;
	c->vctx.open_xrcd = drv_open_xrcd;
	c->vctx.close_xrcd = drv_close_xrcd;
	c->vctx.create_srq_ex = drv_create_srq_ex;
	c->vctx.open_qp = drv_open_qp;
	drv_ops_init(&c->vctx.context.ops);
	drv_ctx_fill_unsupported(&c->vctx);
	c->next = d->ctxs;
	d->ctxs = c;
	return &c->vctx.context;
}

int ibv_close_device(struct ibv_context *ctx)
{
	struct drv_ctx *c = drv_ctx_of(ctx);
	struct drv_ctx **pp;
	int rc;

	if (!c)
		return -1;
	drv_ctx_cleanup(ctx);
	/* Refused only while the device still holds objects the driver does not know of (made
	 * with hcasimdv_cmd): the context is gone all the same, its user context stays. */
	rc = drv_uctx_close(c);
	for (pp = &c->dev->ctxs; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	close(c->vctx.context.cmd_fd);
	close(c->vctx.context.async_fd);
	pthread_mutex_destroy(&c->vctx.context.mutex);
	drv_handle_del(c);
	free(c);
	if (rc) {
		errno = rc;
		return -1;
	}
	return 0;
}

/* ---- device attributes ---- */

static int fill_device_attr(struct drv_dev *d, struct ibv_device_attr *a)
{
	struct hca_cmd_empty none = { 0 };
	struct hca_hca_cap cap;
	int rc = drv_cmd(d, HCA_CMD_QUERY_HCA_CAP, &none, sizeof(none), &cap, sizeof(cap));

	if (rc)
		return rc;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%u.%u.%u", cap.fw_ver >> 24,
		 (cap.fw_ver >> 16) & 0xff, cap.fw_ver & 0xffff);
	a->node_guid = htobe64(cap.node_guid);
	a->sys_image_guid = htobe64(cap.sys_image_guid);
	a->max_mr_size = cap.max_mr_size;
	a->page_size_cap = cap.page_size_cap;
	a->vendor_id = cap.vendor_id;
	a->vendor_part_id = cap.vendor_part_id;
	a->hw_ver = cap.hw_ver;
	a->max_qp = (int)cap.max_qp;
	a->max_qp_wr = (int)cap.max_qp_wr;
	if (cap.cap_flags & HCA_CAP_CURR_QP_STATE_MOD)
		a->device_cap_flags |= IBV_DEVICE_CURR_QP_STATE_MOD;
	if (cap.cap_flags & HCA_CAP_SYS_IMAGE_GUID)
		a->device_cap_flags |= IBV_DEVICE_SYS_IMAGE_GUID;
	if (cap.cap_flags & HCA_CAP_AUTO_PATH_MIG)
		a->device_cap_flags |= IBV_DEVICE_AUTO_PATH_MIG;
	if (cap.cap_flags & HCA_CAP_CHANGE_PHY_PORT)
		a->device_cap_flags |= IBV_DEVICE_CHANGE_PHY_PORT;
	if (cap.cap_flags & HCA_CAP_MEM_WINDOW) {
		/* windows share the key table with the regions */
		a->device_cap_flags |= IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
		a->max_mw = (int)cap.max_mr;
	}
	if (cap.cap_flags & HCA_CAP_XRC)
		a->device_cap_flags |= IBV_DEVICE_XRC;
	a->max_sge = (int)cap.max_sge;
	a->max_sge_rd = (int)cap.max_sge;
	a->max_cq = (int)cap.max_cq;
	a->max_cqe = (int)cap.max_cqe;
	a->max_mr = (int)cap.max_mr;
	a->max_pd = (int)cap.max_pd;
	a->max_qp_rd_atom = (int)cap.max_qp_rd_atom;
	a->max_res_rd_atom = (int)(cap.max_qp_rd_atom * cap.max_qp);
	a->max_qp_init_rd_atom = (int)cap.max_qp_init_rd_atom;
	a->atomic_cap = cap.atomic_cap == 0 ? IBV_ATOMIC_NONE
			: cap.atomic_cap == 1 ? IBV_ATOMIC_HCA : IBV_ATOMIC_GLOB;
	a->max_ah = (int)cap.max_ah;
	a->max_srq = (int)cap.max_srq;
	a->max_srq_wr = (int)cap.max_srq_wr;
	a->max_srq_sge = (int)cap.max_srq_sge;
	a->max_pkeys = (uint16_t)cap.pkey_table_len;
	a->local_ca_ack_delay = (uint8_t)cap.local_ca_ack_delay;
	a->phys_port_cnt = (uint8_t)cap.num_ports;
	if (cap.cap_flags & HCA_CAP_UD_MCAST) {
		a->max_mcast_grp = HCA_MCAST_GROUPS;
		a->max_mcast_qp_attach = HCA_MCAST_QPS_PER_GROUP;
		a->max_total_mcast_qp_attach = HCA_MCAST_ATTACH_TOTAL;
	}
	d->cap = cap;
	return 0;
}

int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	struct drv_dev *d = drv_dev_of(ctx);

	if (!d)
		return EINVAL;
	if (!attr)
		return drv_fail(EINVAL, "ibv_query_device: NULL attr");
	drv_charge_verb(d);
	return fill_device_attr(d, attr);
}

static int query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *input,
			   struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct drv_dev *d = drv_dev_of(ctx);
	struct ibv_device_attr_ex ex;
	int rc;

	if (!d)
		return EINVAL;
	if (!attr)
		return drv_fail(EINVAL, "ibv_query_device_ex: NULL attr");
	if (input && input->comp_mask)
		return drv_fail(EINVAL, "ibv_query_device_ex: unknown input comp_mask 0x%x",
				input->comp_mask);
	if (attr_size < sizeof(attr->orig_attr))
		return drv_fail(EINVAL, "ibv_query_device_ex: attr_size %zu too small", attr_size);
	drv_charge_verb(d);
	memset(&ex, 0, sizeof(ex));
	rc = fill_device_attr(d, &ex.orig_attr);
	if (rc)
		return rc;
	ex.hca_core_clock = d->cap.core_clock_khz;
	/* CQE timestamps are the full 64-bit core cycle count (hca_cqe.timestamp). */
	ex.completion_timestamp_mask = UINT64_MAX;
	ex.phys_port_cnt_ex = d->cap.num_ports;
	memcpy(attr, &ex, attr_size < sizeof(ex) ? attr_size : sizeof(ex));
	return 0;
}

/* ---- device time ---- */

uint64_t drv_core_cycles(struct drv_dev *d)
{
	/* LO first: reading it latches HI, so both halves come from one sample (taken when the
	 * LO read reaches the device, half an MMIO round trip after the call). */
	uint64_t lo = 0, hi = 0;

	hcasim_mmio_read(d->fn, 0, HCA_REG_CORE_CLOCK_LO, 4, &lo);
	hcasim_mmio_read(d->fn, 0, HCA_REG_CORE_CLOCK_HI, 4, &hi);
	return hi << 32 | lo;
}

/* ibv_query_rt_values_ex(3). As mlx5 does, raw_clock carries the cycle count in tv_nsec with
 * tv_sec 0, and comp_mask comes back with the fields filled. The host pays the two MMIO reads,
 * no verb cost: on silicon this is a user-space read of the mapped BAR, not a system call. */
static int query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *values)
{
	struct drv_dev *d = drv_dev_of(ctx);

	if (!d)
		return EINVAL;
	if (!values)
		return drv_fail(EINVAL, "ibv_query_rt_values_ex: NULL values");
	if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return drv_fail(EINVAL, "ibv_query_rt_values_ex: comp_mask bits 0x%x are not "
				"supported (only IBV_VALUES_MASK_RAW_CLOCK)",
				values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK);
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = (long)drv_core_cycles(d);
	}
	return 0;
}

/* ---- ports ---- */

int drv_query_port_info(struct drv_dev *d, uint8_t port, struct hca_port_info *pi)
{
	struct hca_port_in in = { .port = port };

	if (port < 1 || port > d->cap.num_ports)
		return drv_fail(EINVAL, "%s: port %u does not exist (ports 1..%u)", d->ibdev.name,
				port, d->cap.num_ports);
	return drv_cmd(d, HCA_CMD_QUERY_PORT, &in, sizeof(in), pi, sizeof(*pi));
}

static int query_port_ex(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr,
			 size_t attr_len)
{
	struct drv_dev *d = drv_dev_of(ctx);
	struct ibv_port_attr a;
	struct hca_port_info pi;
	int rc;

	if (!d)
		return EINVAL;
	if (!attr)
		return drv_fail(EINVAL, "ibv_query_port: NULL attr");
	drv_charge_verb(d);
	rc = drv_query_port_info(d, port, &pi);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.state = (enum ibv_port_state)pi.state;
	a.max_mtu = (enum ibv_mtu)pi.max_mtu;
	a.active_mtu = (enum ibv_mtu)pi.active_mtu;
	a.gid_tbl_len = pi.gid_tbl_len;
	a.port_cap_flags = pi.cap_flags;
	a.max_msg_sz = pi.max_msg_sz;
	a.bad_pkey_cntr = pi.bad_pkey_cntr;
	a.qkey_viol_cntr = pi.qkey_viol_cntr;
	a.pkey_tbl_len = pi.pkey_tbl_len;
	a.lid = pi.lid;
	a.sm_lid = pi.sm_lid;
	a.lmc = pi.lmc;
	a.max_vl_num = pi.max_vl_num;
	a.sm_sl = pi.sm_sl;
	a.subnet_timeout = pi.subnet_timeout;
	a.init_type_reply = pi.init_type_reply;
	a.active_width = pi.active_width;
	a.active_speed = pi.active_speed;
	a.phys_state = pi.phys_state;
	a.link_layer = pi.link_layer == 2 ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
	memcpy(attr, &a, attr_len < sizeof(a) ? attr_len : sizeof(a));
	return 0;
}

/* The exported symbol, reached by old binaries and by the verbs.h fallback. */
int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *attr)
{
	return query_port_ex(ctx, port, (struct ibv_port_attr *)attr, sizeof(struct ibv_port_attr));
}

int query_gid_raw(struct ibv_context *ctx, uint8_t port, int index, struct hca_gid_out *out)
{
	struct drv_dev *d = drv_dev_of(ctx);
	struct hca_gid_in in = { .port = port };

	if (!d)
		return EINVAL;
	drv_charge_verb(d);
	if (port < 1 || port > d->cap.num_ports)
		return drv_fail(EINVAL, "ibv_query_gid: port %u does not exist", port);
	if (index < 0 || (unsigned)index >= d->cap.gid_table_len)
		return drv_fail(EINVAL, "ibv_query_gid: index %d outside the GID table (0..%u)",
				index, d->cap.gid_table_len - 1);
	in.index = (uint16_t)index;
	return drv_cmd(d, HCA_CMD_QUERY_GID, &in, sizeof(in), out, sizeof(*out));
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct hca_gid_out out;

	if (!gid) {
		drv_fail(EINVAL, "ibv_query_gid: NULL gid");
		return -1;
	}
	if (query_gid_raw(ctx, port_num, index, &out))
		return -1;
	memcpy(gid->raw, out.gid, 16);
	return 0;
}

/* rdma-core private (IBVERBS_PRIVATE_34), used by ibv_devinfo: 0 = IB/RoCE v1, 1 = RoCE v2. */
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port_num, unsigned int index,
		       unsigned int *type)
{
	struct hca_gid_out out;

	if (!type || index > 0x7fffffff)
		return drv_fail(EINVAL, "ibv_query_gid_type: bad arguments");
	if (query_gid_raw(ctx, port_num, (int)index, &out))
		return -1;
	*type = out.type == 2 ? 1 : 0;
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct hca_gid_out out;
	struct ibv_gid_entry e = { 0 };
	int rc;

	if (!entry || flags)
		return drv_fail(EINVAL, "ibv_query_gid_ex: NULL entry or unknown flags 0x%x",
				flags);
	if (port_num > 255 || gid_index > 0x7fffffff)
		return drv_fail(EINVAL, "ibv_query_gid_ex: port or index out of range");
	rc = query_gid_raw(ctx, (uint8_t)port_num, (int)gid_index, &out);
	if (rc)
		return rc;
	if (!out.valid)
		return drv_fail(ENODATA, "ibv_query_gid_ex: GID %u of port %u is not populated",
				gid_index, port_num);
	memcpy(e.gid.raw, out.gid, 16);
	e.gid_index = gid_index;
	e.port_num = port_num;
	e.gid_type = out.type == 2 ? IBV_GID_TYPE_ROCE_V2
		     : out.type == 1 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_IB;
	memcpy(entry, &e, entry_size < sizeof(e) ? entry_size : sizeof(e));
	return 0;
}

int ibv_query_pkey(struct ibv_context *ctx, uint8_t port_num, int index, __be16 *pkey)
{
	struct drv_dev *d = drv_dev_of(ctx);
	struct hca_pkey_in in = { .port = port_num };
	struct hca_pkey_out out;

	if (!d)
		return -1;
	if (!pkey) {
		drv_fail(EINVAL, "ibv_query_pkey: NULL pkey");
		return -1;
	}
	drv_charge_verb(d);
	if (port_num < 1 || port_num > d->cap.num_ports) {
		drv_fail(EINVAL, "ibv_query_pkey: port %u does not exist", port_num);
		return -1;
	}
	if (index < 0 || (unsigned)index >= d->cap.pkey_table_len) {
		drv_fail(EINVAL, "ibv_query_pkey: index %d outside the P_Key table (0..%u)", index,
			 d->cap.pkey_table_len - 1);
		return -1;
	}
	in.index = (uint16_t)index;
	if (drv_cmd(d, HCA_CMD_QUERY_PKEY, &in, sizeof(in), &out, sizeof(out)))
		return -1;
	*pkey = htobe16(out.pkey);
	return 0;
}

/* ---- virtual sysfs ---- */

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[512];
	ssize_t n;
	int fd;

	if (!dir || !file || !buf || !size)
		return -1;
	for (int i = 0; i < ndevs; i++) {
		struct drv_dev *d = devs[i];

		if (strcmp(dir, d->ibdev.ibdev_path))
			continue;
		if (!strcmp(file, "board_id"))
			n = snprintf(buf, size, "HCASIM-%04u", d->cap.vendor_part_id);
		else if (!strcmp(file, "fw_ver"))
			n = snprintf(buf, size, "%u.%u.%u", d->cap.fw_ver >> 24,
				     (d->cap.fw_ver >> 16) & 0xff, d->cap.fw_ver & 0xffff);
		else if (!strcmp(file, "node_type"))
			n = snprintf(buf, size, "1: CA");
		else {
			errno = ENOENT;
			return -1;
		}
		return (int)((size_t)n < size ? n : (ssize_t)size - 1);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size);
	close(fd);
	if (n <= 0)
		return -1;
	if ((size_t)n == size)
		n--;
	buf[n] = 0;
	if (n && buf[n - 1] == '\n')
		buf[--n] = 0;
	return (int)n;
}

/* ---- async events ---- */

void drv_post_async_ctx(struct drv_ctx *c, const struct ibv_async_event *ev)
{
	uint64_t one = 1;

	if (c->async_count == DRV_ASYNC_QUEUE) {
		fprintf(stderr, "hcasim: %s: async event queue full, event %s lost\n",
			c->dev->ibdev.name, ibv_event_type_str(ev->event_type));
		return;
	}
	c->async[(c->async_head + c->async_count++) % DRV_ASYNC_QUEUE] = *ev;
	if (write(c->vctx.context.async_fd, &one, sizeof(one)) < 0)
		perror("hcasim: async_fd");
}

void drv_post_async(struct drv_dev *d, const struct ibv_async_event *ev)
{
	for (struct drv_ctx *c = d->ctxs; c; c = c->next)
		drv_post_async_ctx(c, ev);
}

static bool async_ready(void *p)
{
	struct drv_ctx *c = p;

	if (c->dev->irq_pending)
		drv_eq_process(c->dev);
	return c->async_count > 0;
}

static int get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
	struct drv_ctx *c = drv_ctx_of(ctx);
	uint64_t v;
	int rc;

	if (!c)
		return -1;
	if (!event) {
		drv_fail(EINVAL, "ibv_get_async_event: NULL event");
		return -1;
	}
	if (!async_ready(c)) {
		if (fcntl(ctx->async_fd, F_GETFL) & O_NONBLOCK) {
			drv_fail(EAGAIN, "ibv_get_async_event: no event (non-blocking)");
			return -1;
		}
		/* Blocking: run the simulation until an event arrives, or report the deadlock. */
		rc = hcasim_host_wait(async_ready, c, UINT64_MAX);
		if (rc) {
			drv_fail(EDEADLK, "ibv_get_async_event: no event can arrive: the simulation "
				 "is idle");
			return -1;
		}
	}
	*event = c->async[c->async_head];
	c->async_head = (c->async_head + 1) % DRV_ASYNC_QUEUE;
	c->async_count--;
	if (read(ctx->async_fd, &v, sizeof(v)) < 0)
		v = 0; /* counter already drained by an earlier read: fine */
	if (c->async_count) {
		v = c->async_count;
		if (write(ctx->async_fd, &v, sizeof(v)) < 0)
			perror("hcasim: async_fd");
	}
	return 0;
}

int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
	int rc;

	hcasim_bus_hold(); /* the EQ the device writes, and the context's events */
	rc = get_async_event(ctx, event);
	hcasim_bus_release();
	return rc;
}

enum drv_event_elem drv_event_element(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
		return DRV_EV_CQ;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return DRV_EV_SRQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return DRV_EV_QP;
	default:
		return DRV_EV_DEVICE;
	}
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	/* Count acknowledgements on the object, as libibverbs does, so that a destroy can tell
	 * whether events about the object are still unacknowledged. Port and device events
	 * name no object. */
	if (!event)
		return;
	switch (drv_event_element(event->event_type)) {
	case DRV_EV_CQ:
		if (event->element.cq)
			event->element.cq->async_events_completed++;
		break;
	case DRV_EV_SRQ:
		if (event->element.srq)
			event->element.srq->events_completed++;
		break;
	case DRV_EV_QP:
		if (event->element.qp)
			event->element.qp->events_completed++;
		break;
	case DRV_EV_DEVICE:
		break;
	}
}

/* ---- driver extensions of hcasim.h ---- */

int hcasim_cmd_log(struct ibv_context *ctx, struct hcasim_cmd_record *out, int max)
{
	struct drv_dev *d = drv_dev_of(ctx);
	int n;

	if (!d || !out || max < 0)
		return -EINVAL;
	n = (int)d->log_count < max ? (int)d->log_count : max;
	for (int i = 0; i < n; i++) {
		unsigned idx = (d->log_next + DRV_CMD_LOG - (unsigned)n + (unsigned)i) % DRV_CMD_LOG;

		out[i] = d->log[idx];
	}
	return n;
}
