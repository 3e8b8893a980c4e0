/* Suite abi: the drop-in libibverbs.so.1 against Debian's own (rdma-core 44): every versioned
 * symbol exported, every Debian RDMA binary resolving against it, Debian's Python bindings and
 * provider libraries loading and answering, connection-manager programs failing cleanly, and
 * the entry points that are implemented (docs/abi.md). */
#include "testbench/tb.h"
#include "testbench/tb_expect.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/efadv.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Not declared by an installed header (exported by libibverbs, declared
 * in rdma-core's private headers). */
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

#define DEB_LIBIBVERBS "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"

/* Output of cmd; the test fails if it does not exit 0. */
static char *run_ok(const char *cmd)
{
	int st;
	char *out = tb_run_cmd(cmd, &st);

	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "`%s` failed (status 0x%x):\n%s", cmd, st,
		  out);
	return out;
}

/* The defined dynamic symbols of lib as sorted "NODE name" lines, "(NODE) name" for a
 * non-default version (objdump -T). */
static char *dyn_symbols(const char *lib)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "objdump -T %s | awk '/ D[FO] / && !/\\*UND\\*/ && $(NF-1) != $NF "
		 "{print $(NF-1), $NF}' | LC_ALL=C sort -u",
		 lib);
	return run_ok(cmd);
}

static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
			return true;
	return false;
}

Test(abi, exports_every_versioned_symbol_of_debians_libibverbs)
{
	char ours_path[512], line[256];
	char *deb, *ours, *missing = calloc(1, 1 << 16);
	size_t nmiss = 0, nsyms = 0;

	cr_assert_eq(access(DEB_LIBIBVERBS, R_OK), 0,
		     "%s is missing: run make deps (package libibverbs1)", DEB_LIBIBVERBS);
	snprintf(ours_path, sizeof(ours_path), "%s/lib/libibverbs.so.1", HCASIM_BUILD_DIR);
	deb = dyn_symbols(DEB_LIBIBVERBS);
	ours = dyn_symbols(ours_path);
	for (const char *p = deb; *p;) {
		size_t n = strcspn(p, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		nsyms++;
		if (!has_line(ours, line) && strlen(missing) + n + 4 < (1 << 16)) {
			strcat(missing, "  ");
			strcat(missing, line);
			strcat(missing, "\n");
			nmiss++;
		}
		p += n + (p[n] == '\n');
	}
	cr_assert_gt(nsyms, 170, "objdump found only %zu symbols in %s", nsyms, DEB_LIBIBVERBS);
	cr_assert_eq(nmiss, 0, "%zu of Debian's %zu versioned symbols missing or on another node:\n%s",
		     nmiss, nsyms, missing);
	/* Nothing more, except the simulator's own nodes (HCASIM_1.0, HCASIMDV_1.0). */
	for (const char *p = ours; *p;) {
		size_t n = strcspn(p, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		cr_assert(has_line(deb, line) || !strncmp(line, "HCASIM_1.0 ", 11) ||
				  !strncmp(line, "HCASIMDV_1.0 ", 13),
			  "exported beyond Debian's ABI: %s", line);
		p += n + (p[n] == '\n');
	}
	cr_log_info("abi: %zu versioned symbols of Debian's libibverbs.so.1 all exported", nsyms);
	free(deb);
	free(ours);
	free(missing);
}

/* ldd -r of file against build/lib: "" if every symbol resolves, else the offending lines. */
static void ldd_check(const char *file, char *report, size_t cap)
{
	char cmd[1024], *out;
	int st;

	snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH=%s/lib ldd -r '%s' 2>&1", HCASIM_BUILD_DIR,
		 file);
	out = tb_run_cmd(cmd, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ldd -r %s failed:\n%s", file, out);
	for (char *p = out; *p;) {
		size_t n = strcspn(p, "\n");
		char l[512];

		snprintf(l, sizeof(l), "%.*s", (int)n, p);
		if ((strstr(l, "undefined symbol") || strstr(l, "not found") ||
		     strstr(l, "version `")) &&
		    strlen(report) + strlen(file) + strlen(l) + 8 < cap) {
			strcat(report, file);
			strcat(report, ": ");
			strcat(report, l);
			strcat(report, "\n");
		}
		if (strstr(l, "libibverbs.so.1 =>") && !strstr(l, HCASIM_BUILD_DIR) &&
		    strlen(report) + strlen(file) + 64 < cap) {
			strcat(report, file);
			strcat(report, ": did not load the drop-in libibverbs\n");
		}
		p += n + (p[n] == '\n');
	}
	free(out);
}

static bool is_elf(const char *path)
{
	char magic[4] = { 0 };
	FILE *f = fopen(path, "rb");
	bool elf;

	if (!f)
		return false;
	elf = fread(magic, 1, 4, f) == 4 && !memcmp(magic, "\177ELF", 4);
	fclose(f);
	return elf;
}

Test(abi, every_debian_rdma_binary_resolves_against_the_drop_in_library)
{
	static const char *const pkgs[] = { "ibverbs-utils", "perftest", "rdmacm-utils" };
	/* The libraries those binaries and Debian's Python bindings bring in. */
	static const char *const libs[] = { "/usr/lib/x86_64-linux-gnu/librdmacm.so.1",
					    "/usr/lib/x86_64-linux-gnu/libmlx5.so.1",
					    "/usr/lib/x86_64-linux-gnu/libefa.so.1" };
	size_t cap = 1 << 16, nbin = 0;
	char *report = calloc(1, cap);

	for (size_t i = 0; i < sizeof(pkgs) / sizeof(pkgs[0]); i++) {
		char cmd[256], *list;
		size_t in_pkg = 0;
		int st;

		snprintf(cmd, sizeof(cmd), "dpkg -L %s 2>&1", pkgs[i]);
		list = tb_run_cmd(cmd, &st);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			  "package %s is not installed: run make deps\n%s", pkgs[i], list);
		for (char *p = list; *p;) {
			size_t n = strcspn(p, "\n");
			char path[512];

			snprintf(path, sizeof(path), "%.*s", (int)n, p);
			if (is_elf(path)) {
				ldd_check(path, report, cap);
				in_pkg++;
			}
			p += n + (p[n] == '\n');
		}
		cr_assert_gt(in_pkg, 0, "no ELF file in package %s", pkgs[i]);
		nbin += in_pkg;
		free(list);
	}
	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		cr_assert(is_elf(libs[i]), "%s missing: run make deps", libs[i]);
		ldd_check(libs[i], report, cap);
	}
	cr_assert_eq(report[0], 0, "unresolved against build/lib:\n%s", report);
	cr_log_info("abi: %zu binaries of ibverbs-utils, perftest and rdmacm-utils resolve", nbin);
	free(report);
}

/* Debian's python3-pyverbs: imported by Debian's python3, and used, on the drop-in library. */
Test(abi, debian_pyverbs_imports_and_drives_hcasim0)
{
	static const char script[] =
		"import pyverbs.device as d, pyverbs.qp as q, pyverbs.cq as c, pyverbs.mr as m\n"
		"import pyverbs.pd as p\n"
		"import pyverbs.enums as e\n"
		"names = [x.name.decode() for x in d.get_device_list()]\n"
		"ctx = d.Context(name='hcasim0')\n"
		"a = ctx.query_device()\n"
		"pd = p.PD(ctx)\n"
		"cq = c.CQ(ctx, 16)\n"
		"mr = m.MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)\n"
		"cap = q.QPCap(max_send_wr=4, max_recv_wr=4)\n"
		"qp = q.QP(pd, q.QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))\n"
		"print('devices', ' '.join(names))\n"
		"print('vendor 0x%x ports %d' % (a.vendor_id, a.phys_port_cnt))\n"
		"print('port1 state %d' % ctx.query_port(1).state)\n"
		"print('mr lkey %s qp %s' % (mr.lkey != 0, qp.qp_num > 0))\n";
	char path[] = "/tmp/hcasim-pyverbs-XXXXXX";
	char cmd[1024], *out;
	int fd = mkstemp(path), st;

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, script, sizeof(script) - 1), (ssize_t)(sizeof(script) - 1));
	close(fd);
	cr_assert_eq(access("/usr/lib/python3/dist-packages/pyverbs", R_OK), 0,
		     "Debian's python3-pyverbs is not installed: run make deps");
	snprintf(cmd, sizeof(cmd), "%s LD_LIBRARY_PATH=%s/lib /usr/bin/python3 %s 2>&1", tb_san_env(),
		 HCASIM_BUILD_DIR, path);
	out = tb_run_cmd(cmd, &st);
	unlink(path);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pyverbs failed (status 0x%x):\n%s", st,
		  out);
	cr_assert(strstr(out, "devices hcasim0 hcasim1\n"), "%s", out);
	cr_assert(strstr(out, "vendor 0x4853 ports 1\n"), "%s", out);
	cr_assert(strstr(out, "port1 state 4\n"), "%s", out);
	cr_assert(strstr(out, "mr lkey True qp True\n"), "%s", out);
	free(out);
}

/* Debian's provider libraries that perftest links see a device that is not theirs. */
Test(abi, mlx5dv_and_efadv_refuse_hcasim0)
{
	void *mlx5 = dlopen("libmlx5.so.1", RTLD_NOW), *efa = dlopen("libefa.so.1", RTLD_NOW);
	bool (*is_supported)(struct ibv_device *);
	int (*efa_query)(struct ibv_context *, struct efadv_device_attr *, uint32_t);
	struct efadv_device_attr attr;
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n;

	cr_assert_not_null(mlx5, "dlopen libmlx5.so.1 (make deps): %s", dlerror());
	cr_assert_not_null(efa, "dlopen libefa.so.1 (make deps): %s", dlerror());
	is_supported = (bool (*)(struct ibv_device *))dlsym(mlx5, "mlx5dv_is_supported");
	efa_query = (int (*)(struct ibv_context *, struct efadv_device_attr *, uint32_t))dlsym(
		efa, "efadv_query_device");
	cr_assert(is_supported && efa_query);
	list = ibv_get_device_list(&n);
	cr_assert_not_null(list, "%s", hcasim_last_error());
	cr_assert_str_eq(ibv_get_device_name(list[0]), "hcasim0");
	cr_assert_not(is_supported(list[0]), "mlx5dv_is_supported(hcasim0) is true");
	ctx = ibv_open_device(list[0]);
	cr_assert_not_null(ctx);
	memset(&attr, 0x5a, sizeof(attr));
	cr_assert_eq(efa_query(ctx, &attr, sizeof(attr)), EOPNOTSUPP,
		     "efadv_query_device(hcasim0) must answer EOPNOTSUPP");
	/* The context is still ours and usable. */
	{
		struct ibv_device_attr a;

		EXPECT_OK(ibv_query_device(ctx, &a));
		cr_assert_eq(a.vendor_id, 0x4853);
	}
	EXPECT_OK(ibv_close_device(ctx));
	ibv_free_device_list(list);
	dlclose(efa);
	dlclose(mlx5);
}

/* No kernel connection manager: rping stops at once with librdmacm's message. */
Test(abi, rping_fails_cleanly_without_a_connection_manager)
{
	char cmd[1024], *out;
	int st, code;

	cr_assert_eq(access("/usr/bin/rping", X_OK), 0, "rping missing: run make deps");
	cr_assert_neq(access("/dev/infiniband/rdma_cm", F_OK), 0,
		      "this host has a kernel RDMA CM: the test assumes none");
	snprintf(cmd, sizeof(cmd), "%s LD_LIBRARY_PATH=%s/lib timeout 60 rping -s -p 18515 2>&1; "
		 "echo \"exit=$?\"", tb_san_env(), HCASIM_BUILD_DIR);
	out = tb_run_cmd(cmd, &st);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
	cr_assert(strstr(out, "failed to create RDMA CM event channel: No such file or directory"),
		  "%s", out);
	cr_assert_not_null(strstr(out, "exit="), "%s", out);
	code = atoi(strstr(out, "exit=") + 5);
	/* non-zero, not killed by the timeout (124) nor by a signal (128 + n) */
	cr_assert(code != 0 && code != 124 && code < 128, "rping exit status %d:\n%s", code, out);
	cr_assert_null(strstr(out, "AddressSanitizer"), "%s", out);
	free(out);
}

/* ---- implemented entry points ---- */

Test(abi, fork_support_is_reported_unneeded)
{
	static char buf[8192];

	cr_assert_eq(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	cr_assert_eq(ibv_fork_init(), 0);
	cr_assert_eq(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	cr_assert_eq(ibv_dontfork_range(buf, sizeof(buf)), 0);
	cr_assert_eq(ibv_dofork_range(buf, sizeof(buf)), 0);
}

Test(abi, device_index_pkey_index_and_gid_table)
{
	struct tb_dev t;
	struct ibv_gid_entry tab[8];
	union ibv_gid gid;
	ssize_t n;
	__be16 pkey;

	tb_open(&t, 1);
	cr_assert_eq(ibv_get_device_index(t.ctx->device), 1);
	cr_assert_eq(ibv_get_device_index(t.list[0]), 0);
	EXPECT_M1_ERR(ibv_get_device_index((struct ibv_device *)&t), EINVAL);
	EXPECT_OK(ibv_query_pkey(t.ctx, 1, 0, &pkey));
	cr_assert_eq(ibv_get_pkey_index(t.ctx, 1, pkey), 0);
	EXPECT_M1_ERR(ibv_get_pkey_index(t.ctx, 1, htobe16(0x1234)), ENOENT);
	EXPECT_MSG("P_Key 0x1234");
	EXPECT_M1_ERR(ibv_get_pkey_index(t.ctx, 9, pkey), EINVAL);
	/* The GID table: one valid GID on the one port, equal to ibv_query_gid's. */
	EXPECT_OK(ibv_query_gid(t.ctx, 1, 0, &gid));
	n = ibv_query_gid_table(t.ctx, tab, 8, 0);
	cr_assert_eq(n, 1, "ibv_query_gid_table: %zd (%s)", n, hcasim_last_error());
	cr_assert_eq(memcmp(&tab[0].gid, &gid, sizeof(gid)), 0);
	cr_assert_eq(tab[0].port_num, 1);
	cr_assert_eq(tab[0].gid_index, 0);
	cr_assert_eq(tab[0].gid_type, IBV_GID_TYPE_IB);
	cr_assert_eq(ibv_query_gid_table(t.ctx, tab, 0, 0), -EINVAL);
	EXPECT_MSG("max_entries");
	cr_assert_eq(ibv_query_gid_table(t.ctx, tab, 8, 1), -EINVAL);
	EXPECT_MSG("flags");
	cr_assert_eq(_ibv_query_gid_table(t.ctx, tab, 8, 0, 4), -EINVAL);
	EXPECT_MSG("entry_size");
	tb_close(&t);
}

Test(abi, rate_helpers)
{
	cr_assert_eq(ibv_rate_to_mult(IBV_RATE_40_GBPS), 16);
	cr_assert_eq(mult_to_ibv_rate(16), IBV_RATE_40_GBPS);
	cr_assert_eq(mult_to_ibv_rate(7), IBV_RATE_MAX);
	cr_assert_eq(ibv_rate_to_mult(IBV_RATE_14_GBPS), -1);
	cr_assert_eq(ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125);
	cr_assert_eq(ibv_rate_to_mbps(IBV_RATE_2_5_GBPS), 2500);
	cr_assert_eq(mbps_to_ibv_rate(103125), IBV_RATE_100_GBPS);
	cr_assert_eq(mbps_to_ibv_rate(1), IBV_RATE_MAX);
	cr_assert_eq(ibv_rate_to_mbps((enum ibv_rate)99), -1);
}

Test(abi, kernel_struct_copies_carry_every_field)
{
	struct ib_uverbs_qp_attr k = {
		.qp_state = 3, .cur_qp_state = 2, .path_mtu = 4, .path_mig_state = 1,
		.qkey = 0x11111111, .rq_psn = 0x123, .sq_psn = 0x456, .dest_qp_num = 0x789,
		.qp_access_flags = 7, .max_send_wr = 10, .max_recv_wr = 11, .max_send_sge = 2,
		.max_recv_sge = 3, .max_inline_data = 64, .pkey_index = 1, .alt_pkey_index = 2,
		.en_sqd_async_notify = 1, .sq_draining = 1, .max_rd_atomic = 4,
		.max_dest_rd_atomic = 5, .min_rnr_timer = 12, .port_num = 1, .timeout = 14,
		.retry_cnt = 6, .rnr_retry = 7, .alt_port_num = 1, .alt_timeout = 9,
	};
	struct ibv_qp_attr a;
	struct ibv_sa_path_rec rec, back;
	struct ib_user_path_rec kr;

	k.ah_attr.dlid = 0x42;
	k.ah_attr.sl = 5;
	k.ah_attr.src_path_bits = 1;
	k.ah_attr.static_rate = IBV_RATE_40_GBPS;
	k.ah_attr.is_global = 1;
	k.ah_attr.port_num = 1;
	k.ah_attr.grh.flow_label = 0x12345;
	k.ah_attr.grh.sgid_index = 3;
	k.ah_attr.grh.hop_limit = 64;
	k.ah_attr.grh.traffic_class = 7;
	k.ah_attr.grh.dgid[0] = 0xfe;
	k.ah_attr.grh.dgid[15] = 0x99;
	k.alt_ah_attr.dlid = 0x43;
	memset(&a, 0, sizeof(a));
	ibv_copy_qp_attr_from_kern(&a, &k);
	cr_assert_eq(a.cur_qp_state, 2);
	cr_assert_eq(a.path_mtu, 4);
	cr_assert_eq(a.qkey, 0x11111111);
	cr_assert_eq(a.rq_psn, 0x123);
	cr_assert_eq(a.sq_psn, 0x456);
	cr_assert_eq(a.dest_qp_num, 0x789);
	cr_assert_eq(a.qp_access_flags, 7);
	cr_assert_eq(a.cap.max_send_wr, 10);
	cr_assert_eq(a.cap.max_inline_data, 64);
	cr_assert_eq(a.alt_pkey_index, 2);
	cr_assert_eq(a.max_dest_rd_atomic, 5);
	cr_assert_eq(a.min_rnr_timer, 12);
	cr_assert_eq(a.timeout, 14);
	cr_assert_eq(a.rnr_retry, 7);
	cr_assert_eq(a.alt_timeout, 9);
	cr_assert_eq(a.ah_attr.dlid, 0x42);
	cr_assert_eq(a.ah_attr.sl, 5);
	cr_assert_eq(a.ah_attr.static_rate, IBV_RATE_40_GBPS);
	cr_assert_eq(a.ah_attr.is_global, 1);
	cr_assert_eq(a.ah_attr.grh.flow_label, 0x12345);
	cr_assert_eq(a.ah_attr.grh.sgid_index, 3);
	cr_assert_eq(a.ah_attr.grh.hop_limit, 64);
	cr_assert_eq(a.ah_attr.grh.traffic_class, 7);
	cr_assert_eq(a.ah_attr.grh.dgid.raw[15], 0x99);
	cr_assert_eq(a.alt_ah_attr.dlid, 0x43);
	/* A path record survives the trip to the kernel layout and back. */
	memset(&rec, 0, sizeof(rec));
	rec.dgid.raw[0] = 0xfe;
	rec.sgid.raw[15] = 1;
	rec.dlid = htobe16(2);
	rec.slid = htobe16(1);
	rec.raw_traffic = 0;
	rec.flow_label = htobe32(0x777);
	rec.hop_limit = 3;
	rec.traffic_class = 4;
	rec.reversible = 1;
	rec.numb_path = 1;
	rec.pkey = htobe16(0xffff);
	rec.sl = 2;
	rec.mtu_selector = 2;
	rec.mtu = IBV_MTU_4096;
	rec.rate_selector = 2;
	rec.rate = IBV_RATE_100_GBPS;
	rec.packet_life_time_selector = 2;
	rec.packet_life_time = 18;
	rec.preference = 1;
	ibv_copy_path_rec_to_kern(&kr, &rec);
	cr_assert_eq(kr.mtu, IBV_MTU_4096);
	cr_assert_eq(kr.pkey, htobe16(0xffff));
	memset(&back, 0, sizeof(back));
	ibv_copy_path_rec_from_kern(&back, &kr);
	cr_assert_eq(memcmp(&back, &rec, sizeof(rec)), 0, "path record changed on the round trip");
	/* NULL is refused, not dereferenced. */
	errno = 0;
	ibv_copy_qp_attr_from_kern(&a, NULL);
	cr_assert_eq(errno, EINVAL);
	EXPECT_MSG("ibv_copy_qp_attr_from_kern: NULL src");
	errno = 0;
	ibv_copy_path_rec_to_kern(NULL, &rec);
	cr_assert_eq(errno, EINVAL);
}

Test(abi, query_qp_data_in_order)
{
	struct tb_dev t;
	struct ibv_qp *qp;

	tb_open(&t, 0);
	qp = tb_create_qp(&t, IBV_QPT_RC);
	cr_assert_eq(ibv_query_qp_data_in_order(qp, IBV_WR_RDMA_WRITE, 0), 1);
	cr_assert_eq(ibv_query_qp_data_in_order(qp, IBV_WR_SEND, 0), 1);
	cr_assert_eq(ibv_query_qp_data_in_order(qp, IBV_WR_SEND, 1), 0, "flags must be 0");
	EXPECT_MSG("flags");
	cr_assert_eq(ibv_query_qp_data_in_order((struct ibv_qp *)&t, IBV_WR_SEND, 0), 0);
	EXPECT_MSG("not a live QP");
	EXPECT_OK(ibv_destroy_qp(qp));
	tb_close(&t);
}

/* ibv_rereg_mr: a new translation and new rights, then an RDMA WRITE lands in the new
 * buffer through the new rkey; every rejected call leaves the MR as it was. */
/* ibv_rereg_mr(3) returns one of enum ibv_rereg_mr_err_code and sets errno. */
#define EXPECT_REREG(call, ret, err)                                                               \
	do {                                                                                       \
		errno = 0;                                                                         \
		int r_ = (call);                                                                   \
		int e_ = errno;                                                                    \
		cr_assert_eq(r_, (ret), "%s returned %d, expected %d; last error: %s", #call, r_,  \
			     (ret), hcasim_last_error());                                          \
		cr_assert_eq(e_, (err), "%s: errno %d (%s), expected %d; last error: %s", #call,   \
			     e_, strerror(e_), (err), hcasim_last_error());                        \
	} while (0)

Test(abi, rereg_mr_moves_a_region_and_rejects_bad_input_unchanged)
{
	struct tb_pair p;
	struct ibv_mr before;
	uint8_t *nbuf = aligned_alloc(4096, 8192);
	void *old;

	cr_assert_not_null(nbuf);
	memset(nbuf, 0, 8192);
	tb_pair_open(&p, IBV_QPT_RC, 4096, 3);
	before = *p.dst;
	/* libibverbs' own checks: IBV_REREG_MR_ERR_INPUT */
	EXPECT_REREG(ibv_rereg_mr(p.dst, 1 << 3, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_INPUT, EINVAL);
	EXPECT_MSG("flags");
	EXPECT_REREG(ibv_rereg_mr(p.dst, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 0, 0),
		     IBV_REREG_MR_ERR_INPUT, EINVAL);
	EXPECT_REREG(ibv_rereg_mr(p.dst, 0, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE),
		     IBV_REREG_MR_ERR_INPUT, EINVAL);
	EXPECT_MSG("IBV_REREG_MR_CHANGE_ACCESS");
	EXPECT_REREG(ibv_rereg_mr((struct ibv_mr *)&p, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  0), IBV_REREG_MR_ERR_INPUT, EINVAL);
	/* the kernel's: IBV_REREG_MR_ERR_CMD */
	EXPECT_REREG(ibv_rereg_mr(p.dst, 0, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_CMD, EINVAL);
	EXPECT_REREG(ibv_rereg_mr(p.dst, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND),
		     IBV_REREG_MR_ERR_CMD, EOPNOTSUPP);
	EXPECT_REREG(ibv_rereg_mr(p.dst, IBV_REREG_MR_CHANGE_PD, (struct ibv_pd *)&p, NULL, 0, 0),
		     IBV_REREG_MR_ERR_CMD, EINVAL);
	EXPECT_REREG(ibv_rereg_mr(p.dst, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, (void *)8, 4096,
				  0), IBV_REREG_MR_ERR_CMD, EFAULT);
	cr_assert_eq(memcmp(p.dst, &before, sizeof(before)), 0, "a rejected rereg changed the MR");
	/* The real thing: move dst to nbuf + 4096, remote write allowed. */
	EXPECT_OK(ibv_rereg_mr(p.dst, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS,
			       NULL, nbuf + 4096, 4096,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
	cr_assert_eq(p.dst->addr, nbuf + 4096);
	cr_assert_eq(p.dst->length, 4096);
	cr_assert_eq(p.dst->pd, before.pd);
	tb_pair_write(&p, 4096); /* into dst: nbuf + 4096 */
	for (int i = 0; i < 4096; i++)
		cr_assert_eq(((uint8_t *)before.addr)[i], 0, "the old buffer was written");
	old = before.addr;
	cr_assert_eq(ibv_destroy_qp(p.qa), 0);
	cr_assert_eq(ibv_destroy_qp(p.qb), 0);
	EXPECT_OK(ibv_dereg_mr(p.src));
	EXPECT_OK(ibv_dereg_mr(p.dst));
	free(old);
	free(nbuf);
	tb_close(&p.a);
	tb_close(&p.b);
}

/* Only the rights, then only the PD: the same range is registered again beside the old one. */
Test(abi, rereg_mr_changes_access_and_pd_in_place)
{
	struct tb_dev t;
	static char buf[8192];
	struct ibv_mr *mr;
	struct ibv_pd *pd2;
	uint32_t lkey;

	tb_open(&t, 0);
	mr = ibv_reg_mr(t.pd, buf, sizeof(buf), 0);
	cr_assert_not_null(mr, "%s", hcasim_last_error());
	lkey = mr->lkey;
	EXPECT_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ));
	cr_assert_eq(mr->addr, buf);
	cr_assert_eq(mr->length, sizeof(buf));
	cr_assert_neq(mr->lkey, lkey, "a new MKEY has a new key");
	pd2 = ibv_alloc_pd(t.ctx);
	cr_assert_not_null(pd2);
	EXPECT_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0));
	cr_assert_eq(mr->pd, pd2);
	EXPECT_OK(ibv_dereg_mr(mr));
	EXPECT_OK(ibv_dealloc_pd(pd2));
	tb_close(&t);
}

/* A UD reply built from the received completion and its GRH reaches the sender. */
static void ud_reply_from_wc(bool grh)
{
	struct tb_pair p;
	struct ibv_ah_attr aa = { 0 }, back;
	struct ibv_ah *ah, *reply;
	struct ibv_recv_wr rw = { 0 }, *rbad;
	struct ibv_send_wr sw = { 0 }, *sbad;
	struct ibv_sge rs, ss;
	struct ibv_wc wc;
	union ibv_gid ga, gb;
	uint8_t *rbuf;

	tb_pair_open(&p, IBV_QPT_UD, 4096, 1);
	rbuf = p.dst->addr;
	EXPECT_OK(ibv_query_gid(p.a.ctx, 1, 0, &ga));
	EXPECT_OK(ibv_query_gid(p.b.ctx, 1, 0, &gb));
	aa.dlid = p.b.port.lid;
	aa.port_num = 1;
	aa.sl = 3;
	if (grh) {
		aa.is_global = 1;
		aa.grh.dgid = gb;
		aa.grh.hop_limit = 9;
		aa.grh.traffic_class = 0x20;
		aa.grh.flow_label = 0x4321;
	}
	ah = ibv_create_ah(p.a.pd, &aa);
	cr_assert_not_null(ah, "%s", hcasim_last_error());
	/* a -> b */
	rs = (struct ibv_sge){ .addr = (uintptr_t)rbuf, .length = 1024, .lkey = p.dst->lkey };
	rw.wr_id = 1;
	rw.sg_list = &rs;
	rw.num_sge = 1;
	EXPECT_OK(ibv_post_recv(p.qb, &rw, &rbad));
	ss = (struct ibv_sge){ .addr = (uintptr_t)p.src->addr, .length = 64, .lkey = p.src->lkey };
	sw.wr_id = 2;
	sw.sg_list = &ss;
	sw.num_sge = 1;
	sw.opcode = IBV_WR_SEND;
	sw.send_flags = IBV_SEND_SIGNALED;
	sw.wr.ud.ah = ah;
	sw.wr.ud.remote_qpn = p.qb->qp_num;
	sw.wr.ud.remote_qkey = TB_QKEY;
	EXPECT_OK(ibv_post_send(p.qa, &sw, &sbad));
	tb_poll(p.b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(!!(wc.wc_flags & IBV_WC_GRH), grh);
	EXPECT_OK(ibv_init_ah_from_wc(p.b.ctx, 1, &wc, (struct ibv_grh *)rbuf, &back));
	cr_assert_eq(back.dlid, p.a.port.lid);
	cr_assert_eq(back.sl, 3);
	cr_assert_eq(back.port_num, 1);
	cr_assert_eq(back.is_global, grh);
	if (grh) {
		cr_assert_eq(memcmp(&back.grh.dgid, &ga, sizeof(ga)), 0, "dgid is not a's GID");
		cr_assert_eq(back.grh.sgid_index, 0);
		cr_assert_eq(back.grh.traffic_class, 0x20);
		cr_assert_eq(back.grh.flow_label, 0x4321);
	}
	reply = ibv_create_ah_from_wc(p.b.pd, &wc, (struct ibv_grh *)rbuf, 1);
	cr_assert_not_null(reply, "%s", hcasim_last_error());
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	/* b -> a with the reply AH */
	rs = (struct ibv_sge){ .addr = (uintptr_t)p.src->addr + 2048, .length = 1024,
			       .lkey = p.src->lkey };
	EXPECT_OK(ibv_post_recv(p.qa, &rw, &rbad));
	ss = (struct ibv_sge){ .addr = (uintptr_t)rbuf + 2048, .length = 32, .lkey = p.dst->lkey };
	sw.wr.ud.ah = reply;
	sw.wr.ud.remote_qpn = p.qa->qp_num;
	EXPECT_OK(ibv_post_send(p.qb, &sw, &sbad));
	tb_poll(p.a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.src_qp, p.qb->qp_num);
	tb_poll(p.b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	EXPECT_OK(ibv_destroy_ah(reply));
	EXPECT_OK(ibv_destroy_ah(ah));
	tb_pair_close(&p);
}

Test(abi, ud_reply_from_a_completion_without_grh)
{
	ud_reply_from_wc(false);
}

Test(abi, ud_reply_from_a_completion_and_its_grh)
{
	ud_reply_from_wc(true);
}

Test(abi, init_ah_from_wc_rejects_a_grh_not_addressed_to_this_port)
{
	struct tb_dev t;
	struct ibv_wc wc = { .wc_flags = IBV_WC_GRH, .slid = 2 };
	struct ibv_grh grh = { 0 };
	struct ibv_ah_attr a;

	tb_open(&t, 0);
	grh.version_tclass_flow = htobe32(6u << 28);
	grh.next_hdr = 0x1b;
	grh.dgid.raw[0] = 0xfe;
	grh.dgid.raw[1] = 0x80;
	grh.dgid.raw[15] = 0x77; /* not our GID */
	EXPECT_M1_ERR(ibv_init_ah_from_wc(t.ctx, 1, &wc, &grh, &a), ENOENT);
	EXPECT_MSG("GID");
	grh.dgid.raw[0] = 0xff; /* multicast */
	EXPECT_M1_ERR(ibv_init_ah_from_wc(t.ctx, 1, &wc, &grh, &a), EINVAL);
	EXPECT_NULL_ERR(ibv_create_ah_from_wc(t.pd, &wc, NULL, 1), EINVAL);
	tb_close(&t);
}

/* ---- argument checks against the kernel's (docs/verbs-checks.md) ---- */

Test(abi, reg_mr_access_flags_answer_as_the_kernel)
{
	struct tb_dev t;
	static char buf[4096];
	struct ibv_mr *mr;
	volatile int odp = IBV_ACCESS_ON_DEMAND, mw = IBV_ACCESS_MW_BIND;

	tb_open(&t, 0);
	/* A capability the device lacks: on-demand paging. */
	EXPECT_NULL_ERR(ibv_reg_mr(t.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | odp),
			EOPNOTSUPP);
	EXPECT_MSG("IBV_ACCESS_ON_DEMAND");
	/* Accepted by the kernel without a check: MW_BIND, ZERO_BASED, HUGETLB, the optional
	 * range. */
	mr = ibv_reg_mr(t.pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | mw | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_HUGETLB);
	cr_assert_not_null(mr, "%s", hcasim_last_error());
	EXPECT_OK(ibv_dereg_mr(mr));
	mr = ibv_reg_mr_iova2(t.pd, buf, sizeof(buf), 0,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	cr_assert_not_null(mr, "%s", hcasim_last_error());
	EXPECT_OK(ibv_dereg_mr(mr));
	tb_close(&t);
}

Test(abi, modify_qp_mask_bits_past_dest_qpn_are_eopnotsupp)
{
	struct tb_dev t;
	struct ibv_qp *qp;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = TB_QKEY };

	tb_open(&t, 0);
	qp = tb_create_qp(&t, IBV_QPT_UD);
	EXPECT_RC_ERR(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						    IBV_QP_QKEY | IBV_QP_RATE_LIMIT),
		      EOPNOTSUPP);
	EXPECT_MSG("mask");
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	EXPECT_OK(ibv_destroy_qp(qp));
	tb_close(&t);
}

Test(abi, qp_access_flags_of_a_missing_feature_are_ignored_as_by_the_kernel)
{
	struct tb_dev t;
	struct ibv_qp *qp;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND };
	struct ibv_qp_init_attr ia;
	const int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;

	tb_open(&t, 0);
	qp = tb_create_qp(&t, IBV_QPT_RC);
	/* A bit no verbs header defines is still refused. */
	a.qp_access_flags |= 1 << 10;
	EXPECT_RC_ERR(ibv_modify_qp(qp, &a, mask), EINVAL);
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	/* MW_BIND (a right of memory regions, not of QPs) is accepted and has no effect. */
	a.qp_access_flags &= ~(1 << 10);
	EXPECT_OK(ibv_modify_qp(qp, &a, mask));
	EXPECT_OK(ibv_query_qp(qp, &a, IBV_QP_ACCESS_FLAGS, &ia));
	cr_assert_eq(a.qp_state, IBV_QPS_INIT);
	cr_assert_eq(a.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
	EXPECT_OK(ibv_destroy_qp(qp));
	tb_close(&t);
}

/* ---- what the device does not have: rdma-core's answers for a provider without the op ---- */

Test(abi, unsupported_features_answer_eopnotsupp_and_change_nothing)
{
	struct tb_dev t;
	struct ibv_qp_init_attr_ex qa = { 0 };
	struct ibv_qp *qp;
	union ibv_gid gid = { 0 };

	tb_open(&t, 0);
	qp = tb_create_qp(&t, IBV_QPT_UD);
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = qa.recv_cq = t.cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.pd = t.pd;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO;
	EXPECT_NULL_ERR(ibv_create_qp_ex(t.ctx, &qa), EOPNOTSUPP);
	EXPECT_MSG("TSO");
	/* Multicast is implemented (suite mcast); a GID that is not multicast is refused. */
	EXPECT_RC_ERR(ibv_attach_mcast(qp, &gid, 0xc001), EINVAL);
	EXPECT_MSG("not a multicast GID");
	EXPECT_RC_ERR(ibv_detach_mcast(qp, &gid, 0xc001), EINVAL);
	EXPECT_NULL_ERR(ibv_reg_dmabuf_mr(t.pd, 0, 4096, 0, 0, IBV_ACCESS_LOCAL_WRITE),
			EOPNOTSUPP);
	EXPECT_NULL_ERR(ibv_import_pd(t.ctx, 1), EOPNOTSUPP);
	EXPECT_NULL_ERR(ibv_import_device(t.ctx->cmd_fd), EINVAL); /* an eventfd, not uverbs */
	EXPECT_RC_ERR(ibv_query_ece(qp, NULL), EOPNOTSUPP);
	cr_assert_eq(ibv_modify_qp_rate_limit(qp, NULL), EOPNOTSUPP);
	/* The QP and the PD are untouched and work. */
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	{
		struct ibv_pd *pd = ibv_alloc_pd(t.ctx);

		cr_assert_not_null(pd);
		EXPECT_OK(ibv_dealloc_pd(pd));
	}
	EXPECT_OK(ibv_destroy_qp(qp));
	tb_close(&t);
}

/* The provider-facing private node exists and answers EOPNOTSUPP. */
Test(abi, private_provider_node_answers_eopnotsupp)
{
	static const char *const names[] = { "ibv_cmd_alloc_pd", "ibv_cmd_create_qp_ex2",
					     "ibv_cmd_get_context", "execute_ioctl" };
	void *self = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);

	cr_assert_not_null(self, "%s", dlerror());
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int (*fn)(void) = (int (*)(void))dlvsym(self, names[i], "IBVERBS_PRIVATE_34");

		cr_assert_not_null(fn, "%s@IBVERBS_PRIVATE_34 missing", names[i]);
		errno = 0;
		cr_assert_eq(fn(), EOPNOTSUPP, "%s", names[i]);
		cr_assert_eq(errno, EOPNOTSUPP);
		EXPECT_MSG(names[i]);
	}
	dlclose(self);
}
