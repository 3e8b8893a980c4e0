/* The public host bus (sim/hcasim_bus.h) and hcasim_inject_frame, through the public headers
 * only (suite bus); the exports of the two libraries (suite abi); the driver of the user
 * guide, built against libhcasim alone (suite system). */
#include "sim/pcap.h"
#include "testbench/tb.h"

#include <criterion/criterion.h>

#include "model/hw/hca_hw.h"
#include "sim/hcasim.h"
#include "sim/hcasim_bus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPECT_ERR(call, err, text)                                                                \
	do {                                                                                       \
		int64_t rc_ = (call);                                                              \
		cr_expect_eq(rc_, (err), "%s: %lld, expected %d", #call, (long long)rc_, (err));   \
		cr_expect(strstr(hcasim_last_error(), (text)), "%s: message '%s' lacks '%s'",      \
			  #call, hcasim_last_error(), (text));                                     \
	} while (0)

static struct hcasim_fn *boot_fn(int i)
{
	struct hcasim_fn *fns[HCASIM_BUS_MAX_FNS];

	cr_assert_eq(hcasim_boot(), 0, "%s", hcasim_last_error());
	cr_assert_eq(hcasim_bus_enumerate(fns, HCASIM_BUS_MAX_FNS), 2);
	return fns[i];
}

Test(bus, enumerates_the_functions_and_refuses_a_dead_handle)
{
	struct hcasim_fn *fns[4], *fake = (struct hcasim_fn *)&fns;
	uint64_t gen, v;

	/* Before boot: no function, no time. */
	cr_assert_eq(hcasim_bus_enumerate(fns, 4), 0);
	EXPECT_ERR(hcasim_host_advance(1000), -ENODEV, "not booted");
	EXPECT_ERR(hcasim_host_idle(), -ENODEV, "not booted");
	EXPECT_ERR(hcasim_host_settle(), -ENODEV, "not booted");
	gen = hcasim_bus_generation();
	cr_assert_eq(hcasim_boot(), 0, "%s", hcasim_last_error());
	cr_assert_neq(hcasim_bus_generation(), gen, "boot creates functions");
	gen = hcasim_bus_generation();
	cr_assert_eq(hcasim_bus_enumerate(fns, 4), 2);
	cr_assert_eq(hcasim_bus_enumerate(fns, 1), 1, "at most max");
	cr_assert_eq(hcasim_bus_enumerate(NULL, 0), 0);
	EXPECT_ERR(hcasim_bus_enumerate(NULL, 2), -EINVAL, "out is NULL");
	EXPECT_ERR(hcasim_bus_enumerate(fns, -1), -EINVAL, "max is negative");
	cr_assert_eq(hcasim_bus_enumerate(fns, 4), 2);
	for (int i = 0; i < 2; i++) {
		char name[16];

		snprintf(name, sizeof(name), "hcasim%d", i);
		cr_expect_str_eq(hcasim_fn_name(fns[i]), name);
		cr_expect_eq(hcasim_fn_devno(fns[i]), i);
		cr_expect_eq(hcasim_fn_host(fns[i]), i);
		cr_expect_eq(hcasim_fn_bar_size(fns[i], 0), HCA_BAR0_BYTES);
		cr_expect_eq(hcasim_fn_bar_size(fns[i], 5), 0, "BARs 1..5 are not implemented");
		EXPECT_ERR(hcasim_fn_bar_size(fns[i], 6), -EINVAL, "bar 6");
	}
	/* A pointer that is no function is never dereferenced. */
	EXPECT_ERR(hcasim_mmio_write(fake, 0, 0, 4, 0), -ENODEV, "not a PCIe function");
	EXPECT_ERR(hcasim_fn_devno(NULL), -ENODEV, "not a PCIe function");
	/* A reboot destroys the functions: the old handles are dead. */
	hcasim_shutdown();
	cr_assert_neq(hcasim_bus_generation(), gen);
	errno = 0;
	cr_expect_null(hcasim_fn_name(fns[0]));
	cr_expect_eq(errno, ENODEV);
	EXPECT_ERR(hcasim_mmio_read(fns[0], 0, 0, 4, &v), -ENODEV, "gone at a reboot");
	EXPECT_ERR(hcasim_dma_unmap(fns[1], 1), -ENODEV, "hcasim_dma_unmap");
	EXPECT_ERR(hcasim_irq_set(fns[1], 0, NULL, NULL), -ENODEV, "hcasim_irq_set");
}

/* Fields of the warn.mmio_wr events seen. */
static char warned[8][256];
static int nwarned;

static void on_warn(void *arg, uint64_t t, int dev, const char *ev, const char *fields)
{
	(void)arg;
	(void)t;
	(void)dev;
	if (!strncmp(ev, "warn.mmio", 9) && nwarned < 8)
		snprintf(warned[nwarned++], sizeof(warned[0]), "%s %s", ev, fields);
}

Test(bus, mmio_of_every_width_reads_the_registers_and_refuses_bad_accesses)
{
	struct hcasim_fn *fn = boot_fn(0);
	uint8_t block[128] = {0};
	uint64_t v = 0, t;

	cr_assert_eq(hcasim_trace_observe("warn", on_warn, NULL), 0);
	/* VENDOR_DEVICE 0x00014853, FW_VERSION 0x01000000 (docs/regmap.md) */
	t = hcasim_now_ps();
	cr_assert_eq(hcasim_mmio_read(fn, 0, HCA_REG_VENDOR_DEVICE, 4, &v), 0);
	cr_expect_eq(v, 0x00014853);
	cr_expect_gt(hcasim_now_ps(), t, "a read is a round trip in simulated time");
	cr_assert_eq(hcasim_mmio_read(fn, 0, 0, 2, &v), 0);
	cr_expect_eq(v, 0x4853);
	cr_assert_eq(hcasim_mmio_read(fn, 0, 2, 2, &v), 0);
	cr_expect_eq(v, 0x0001);
	cr_assert_eq(hcasim_mmio_read(fn, 0, 1, 1, &v), 0);
	cr_expect_eq(v, 0x48);
	cr_assert_eq(hcasim_mmio_read(fn, 0, 0, 8, &v), 0);
	cr_expect_eq(v, 0x0100000000014853ull, "0x%llx", (unsigned long long)v);

	/* Refused before the bus: nothing is sent, no time passes. */
	t = hcasim_now_ps();
	EXPECT_ERR(hcasim_mmio_read(fn, 0, 0, 3, &v), -EINVAL, "width 3");
	EXPECT_ERR(hcasim_mmio_write(fn, 0, 0, 16, 0), -EINVAL, "width 16");
	EXPECT_ERR(hcasim_mmio_read(fn, 0, 2, 4, &v), -EINVAL, "not 4-byte aligned");
	EXPECT_ERR(hcasim_mmio_write(fn, 0, 4, 8, 0), -EINVAL, "not 8-byte aligned");
	EXPECT_ERR(hcasim_mmio_write(fn, 0, HCA_BAR0_BYTES, 4, 0), -ERANGE, "outside BAR 0");
	EXPECT_ERR(hcasim_mmio_write(fn, 0, 0x100000000ull, 4, 0), -ERANGE, "outside BAR 0");
	EXPECT_ERR(hcasim_mmio_read(fn, 0, UINT64_MAX - 3, 4, &v), -ERANGE, "outside BAR 0");
	EXPECT_ERR(hcasim_mmio_write(fn, 1, 0, 4, 0), -EINVAL, "bar 1");
	EXPECT_ERR(hcasim_mmio_read(fn, 0, 0, 4, NULL), -EINVAL, "val is NULL");
	EXPECT_ERR(hcasim_mmio_write_block(fn, 0, HCA_REGION_UAR, block, 12), -EINVAL, "len 12");
	EXPECT_ERR(hcasim_mmio_write_block(fn, 0, HCA_REGION_UAR, block, 8192), -EINVAL,
		   "len 8192");
	EXPECT_ERR(hcasim_mmio_write_block(fn, 0, HCA_REGION_UAR, NULL, 64), -EINVAL,
		   "data is NULL");
	EXPECT_ERR(hcasim_mmio_write_block(fn, 0, HCA_REGION_UAR + 8, block, 64), -EINVAL,
		   "64-byte aligned");
	EXPECT_ERR(hcasim_mmio_write_block(fn, 0, HCA_BAR0_BYTES - 64, block, 128), -ERANGE,
		   "outside BAR 0");
	cr_expect_eq(hcasim_now_ps(), t, "a refused access let time pass");
	hcasim_run_for_ps(10000000);
	cr_expect_eq(nwarned, 0, "a refused access reached the device: %s", warned[0]);

	/* A 4-byte write lands; a 2-byte write reaches the device, which drops it. */
	cr_assert_eq(hcasim_mmio_write(fn, 0, HCA_REG_CMDQ_ADDR_LO, 4, 0x12345640), 0);
	cr_assert_eq(hcasim_mmio_write(fn, 0, HCA_REG_CMDQ_ADDR_LO, 2, 0xffff), 0);
	cr_assert_eq(hcasim_mmio_read(fn, 0, HCA_REG_CMDQ_ADDR_LO, 4, &v), 0);
	cr_expect_eq(v, 0x12345640, "the sub-dword write changed the register: 0x%llx",
		     (unsigned long long)v);
	cr_assert_eq(nwarned, 1);
	cr_expect(strstr(warned[0], "warn.mmio_wr") && strstr(warned[0], "reason=sub_dword"), "%s",
		  warned[0]);
	hcasim_trace_observe("", NULL, NULL);
	hcasim_shutdown();
}

static bool never(void *arg)
{
	(void)arg;
	return false;
}

static void irq_count(void *arg, unsigned vector)
{
	(void)vector;
	++*(int *)arg;
}

Test(bus, dma_maps_hand_out_iovas_and_bad_maps_vectors_and_waits_are_refused)
{
	struct hcasim_fn *fn = boot_fn(1);
	static uint8_t buf[8192] __attribute__((aligned(4096)));
	uint64_t iova = 0, iova2 = 0;
	int64_t id, id2;
	int irqs = 0;

	id = hcasim_dma_map(fn, buf + 16, 100, HCASIM_DMA_READ, &iova);
	cr_assert_gt(id, 0, "%s", hcasim_last_error());
	cr_expect_eq(iova & 4095, 16, "the IOVA keeps the page offset");
	id2 = hcasim_dma_map(fn, buf, sizeof(buf), HCASIM_DMA_READ | HCASIM_DMA_WRITE, &iova2);
	cr_assert_gt(id2, id);
	cr_expect_geq(iova2, (iova & ~4095ull) + 8192, "a guard page between mappings");
	EXPECT_ERR(hcasim_dma_map(fn, buf, sizeof(buf), 0, &iova), -EINVAL, "bad permission");
	EXPECT_ERR(hcasim_dma_map(fn, buf, sizeof(buf), 4, &iova), -EINVAL, "bad permission");
	EXPECT_ERR(hcasim_dma_map(fn, buf, 0, HCASIM_DMA_READ, &iova), -EINVAL, "empty range");
	EXPECT_ERR(hcasim_dma_map(fn, NULL, 64, HCASIM_DMA_READ, &iova), -EINVAL, "empty range");
	cr_assert_eq(hcasim_dma_unmap(fn, id), 0);
	EXPECT_ERR(hcasim_dma_unmap(fn, id), -ENOENT, "no mapping");
	cr_assert_eq(hcasim_dma_unmap(fn, id2), 0);

	EXPECT_ERR(hcasim_irq_set(fn, HCASIM_BUS_MAX_VECTORS, irq_count, &irqs), -EINVAL,
		   "vector 64");
	cr_assert_eq(hcasim_irq_set(fn, 3, irq_count, &irqs), 0);
	EXPECT_ERR(hcasim_host_wait(NULL, NULL, 1000), -EINVAL, "pred is NULL");
	cr_assert_eq(hcasim_host_settle(), 0);
	/* Nothing but the unconfigured hardware: a wait for what cannot happen ends at once. */
	cr_assert_eq(hcasim_host_idle(), 1);
	cr_expect_eq(hcasim_host_wait(never, NULL, UINT64_MAX), -EDEADLK);
	cr_assert_eq(hcasim_host_advance(1000000), 0);
	cr_expect_eq(irqs, 0, "no interrupt was sent");
	hcasim_shutdown();
}

/* The first frame of the capture at path (after its exported-PDU tags), at most cap bytes. */
static size_t first_frame(const char *path, uint8_t *out, size_t cap)
{
	struct sim_pcap_reader *r;
	struct sim_pcap_rec rec;
	size_t n;

	cr_assert_eq(sim_pcap_reader_open(&r, path), 0, "capture %s", path);
	cr_assert_eq(sim_pcap_reader_next(r, &rec), 1, "%s: no frame", path);
	n = rec.len < cap ? rec.len : cap;
	memcpy(out, rec.data, n);
	sim_pcap_reader_close(r);
	return n;
}

Test(bus, injected_frames_get_the_checks_of_a_received_frame)
{
	char prefix[] = "/tmp/hcasim-inject-XXXXXX", pcap[128];
	struct hcasim_dev_counters c0, c1;
	struct hcasim_qp_counters q0, q1;
	struct tb_pair p;
	uint8_t frame[HCASIM_FRAME_MAX], junk[64];
	size_t len;

	cr_assert_not_null(mkdtemp(prefix));
	tb_pair_open(&p, IBV_QPT_RC, 4096, 3);
	snprintf(pcap, sizeof(pcap), "%s/cap", prefix);
	cr_assert_eq(hcasim_pcap(pcap), 0, "%s", hcasim_last_error());
	tb_pair_send(&p, 256);
	cr_assert_eq(hcasim_pcap(NULL), 0);
	snprintf(pcap, sizeof(pcap), "%s/cap.link0.pcap", prefix);
	len = first_frame(pcap, frame, sizeof(frame));
	cr_assert_gt(len, 8 + 12 + 256, "the SEND: LRH, BTH, payload");
	cr_assert_eq(frame[8], 0x04, "the first frame is the RC SEND_ONLY (opcode 0x%02x)",
		     frame[8]);

	/* Refused: nothing reaches the port. */
	cr_assert_eq(hcasim_dev_counters(1, &c0), 0);
	EXPECT_ERR(hcasim_inject_frame(2, 1, frame, len), -EINVAL, "no device 2");
	EXPECT_ERR(hcasim_inject_frame(1, 0, frame, len), -EINVAL, "no port 0");
	EXPECT_ERR(hcasim_inject_frame(1, 2, frame, len), -EINVAL, "no port 2");
	EXPECT_ERR(hcasim_inject_frame(1, 1, NULL, len), -EINVAL, "frame is NULL");
	EXPECT_ERR(hcasim_inject_frame(1, 1, frame, 0), -EINVAL, "len is 0");
	EXPECT_ERR(hcasim_inject_frame(1, 1, frame, HCASIM_FRAME_MAX + 1), -EMSGSIZE,
		   "at most 16384");
	hcasim_run_for_ps(1000000);
	cr_assert_eq(hcasim_dev_counters(1, &c1), 0);
	cr_expect_eq(c1.rx_pkts, c0.rx_pkts, "a refused frame was received");

	/* The SEND again, as if the link had duplicated it: the responder's QP receives it (a
	 * duplicate, acknowledged again, no second completion). */
	cr_assert_eq(hcasim_qp_counters(1, p.qb->qp_num, &q0), 0);
	cr_assert_eq(hcasim_inject_frame(1, 1, frame, len), 0, "%s", hcasim_last_error());
	hcasim_run_for_ps(1000000);
	cr_assert_eq(hcasim_qp_counters(1, p.qb->qp_num, &q1), 0);
	cr_expect_eq(q1.rx_pkts, q0.rx_pkts + 1, "the injected SEND did not reach the QP");
	cr_expect_eq(q1.rq_psn, q0.rq_psn, "a duplicate moved the expected PSN");
	cr_assert_eq(hcasim_dev_counters(1, &c0), 0);
	cr_expect_eq(c0.rx_pkts, c1.rx_pkts + 1);
	cr_expect_eq(c0.rx_dropped, c1.rx_dropped, "the good frame was dropped");

	/* A flipped payload byte: the VCRC no longer holds, a CRC error. */
	frame[40] ^= 0x10;
	cr_assert_eq(hcasim_inject_frame(1, 1, frame, len), 0);
	hcasim_run_for_ps(1000000);
	cr_assert_eq(hcasim_dev_counters(1, &c1), 0);
	cr_expect_eq(c1.rx_dropped, c0.rx_dropped + 1);
	cr_expect_eq(c1.rx_crc_errors, c0.rx_crc_errors + 1, "the flipped byte is a CRC error");
	/* Junk, a lone byte, and a frame as long as any: each dropped and counted. */
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	cr_assert_eq(hcasim_inject_frame(1, 1, junk, sizeof(junk)), 0);
	cr_assert_eq(hcasim_inject_frame(1, 1, junk, 1), 0);
	memset(frame, 0xa5, sizeof(frame));
	cr_assert_eq(hcasim_inject_frame(1, 1, frame, sizeof(frame)), 0);
	hcasim_run_for_ps(1000000);
	cr_assert_eq(hcasim_dev_counters(1, &c0), 0);
	cr_expect_eq(c0.rx_pkts, c1.rx_pkts + 3);
	cr_expect_eq(c0.rx_dropped, c1.rx_dropped + 3, "dropped %llu of 3",
		     (unsigned long long)(c0.rx_dropped - c1.rx_dropped));

	/* The pair still works. */
	tb_pair_send(&p, 512);
	tb_pair_close(&p);
	tb_rm_tmpdir(prefix);
}

/* ---- exports (suite abi) ---- */

/* nm's lines for lib, as a list of names (version suffix removed), NUL-separated. */
static char *nm_names(const char *flags, const char *lib, size_t *count)
{
	char cmd[1024], *out, *save = NULL, *list, *w;
	int st;

	snprintf(cmd, sizeof(cmd), "nm -D %s '%s/lib/%s' | awk '{print $NF}' | sed 's/@.*//'",
		 flags, HCASIM_BUILD_DIR, lib);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d", cmd, st);
	list = calloc(1, strlen(out) + 2);
	w = list;
	*count = 0;
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		strcpy(w, l);
		w += strlen(l) + 1;
		++*count;
	}
	free(out);
	return list;
}

/* Is name declared as a function in header (a line that starts with its type)? */
static bool declared(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
		const char *bol = p;

		while (bol > text && bol[-1] != '\n')
			bol--;
		if (p[n] == '(' && p > bol && (p[-1] == ' ' || p[-1] == '*') && *bol >= 'a' &&
		    *bol <= 'z')
			return true;
	}
	return false;
}

static char *src_file(const char *rel)
{
	char path[512];
	char *t;

	snprintf(path, sizeof(path), "%s/%s", HCASIM_SRC_DIR, rel);
	t = tb_slurp(path, NULL);
	cr_assert_not_null(t, "%s", path);
	return t;
}

/* The rule (docs/architecture.md, "Two libraries"): libhcasim.so.0 exports exactly the
 * functions declared in sim/hcasim.h and sim/hcasim_bus.h, but for the two that
 * libibverbs.so.1 carries; libibverbs.so.1 exports only the version nodes and symbols that
 * driver/libibverbs.map declares or a .symver of driver/private.c or driver/compat10.c binds,
 * and of those named
 * hcasim* only hcasimdv_* and functions declared in sim/hcasim.h. */
Test(abi, libraries_export_only_their_documented_api)
{
	char *api = src_file("sim/hcasim.h"), *bus = src_file("sim/hcasim_bus.h");
	char *map = src_file("driver/libibverbs.map"), *priv = src_file("driver/private.c");
	char *compat = src_file("driver/compat10.c");
	char bad[4096] = "", *names;
	size_t n, ok = 0;

	names = nm_names("--defined-only", "libhcasim.so.0", &n);
	cr_assert_gt(n, 40, "libhcasim.so.0 exports only %zu symbols", n);
	for (char *s = names; *s; s += strlen(s) + 1) {
		if (!strncmp(s, "hcasim_", 7) && (declared(api, s) || declared(bus, s)))
			ok++;
		else if (strlen(bad) + strlen(s) + 40 < sizeof(bad))
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), " libhcasim:%s", s);
	}
	/* Every function the two headers declare is there, but for libibverbs.so.1's two. */
	for (int h = 0; h < 2; h++) {
		char *save = NULL, *text = strdup(h ? bus : api);

		for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			const char *name = strstr(l, "hcasim_");
			char fn[64];
			bool found = false;

			if (*l < 'a' || *l > 'z' || !name ||
			    sscanf(name, "%63[a-z_0-9]", fn) != 1 || name[strlen(fn)] != '(' ||
			    !strcmp(fn, "hcasim_cmd_log") || !strcmp(fn, "hcasim_qp_force_state"))
				continue;
			for (char *s = names; *s && !found; s += strlen(s) + 1)
				found = !strcmp(s, fn);
			cr_expect(found,
				  "%s is declared in %s but libhcasim.so.0 does not export it", fn,
				  h ? "hcasim_bus.h" : "hcasim.h");
		}
		free(text);
	}
	free(names);

	names = nm_names("--defined-only", "libibverbs.so.1", &n);
	cr_assert_gt(n, 180, "libibverbs.so.1 exports only %zu symbols", n);
	for (char *s = names; *s; s += strlen(s) + 1) {
		char word[80];
		bool in_map = false;

		snprintf(word, sizeof(word), "%s", s);
		/* a symbol "name;" or a node "NAME {" of the map */
		for (const char *p = strstr(map, word); p && !in_map; p = strstr(p + 1, word)) {
			size_t k = strlen(word);

			in_map = (p == map || strchr(" \t\n}", p[-1])) &&
				 (p[k] == ';' || !strncmp(p + k, " {", 2));
		}
		/* or bound to its node by a .symver of driver/private.c or compat10.c */
		if (!in_map) {
			char bound[96];

			snprintf(bound, sizeof(bound), ", %s@", s);
			in_map = strstr(priv, bound) || strstr(compat, bound);
		}
		if (in_map && !strncmp(s, "hcasim", 6) && strncmp(s, "hcasimdv_", 9) &&
		    strcmp(s, "HCASIM_1.0") && strcmp(s, "HCASIMDV_1.0"))
			in_map = declared(api, s);
		if (in_map)
			ok++;
		else if (strlen(bad) + strlen(s) + 40 < sizeof(bad))
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), " libibverbs:%s", s);
	}
	free(names);
	cr_assert_eq(bad[0], 0, "exported outside the documented API:%s", bad);
	cr_log_info("abi: %zu exports checked", ok);
	free(api);
	free(bus);
	free(map);
	free(priv);
	free(compat);
}

/* libibverbs.so.1 reaches the simulator through hcasim_* only: none of its imports is
 * another symbol of the simulator (one that the internal image, driver and simulator in one
 * library exporting everything, defines). Its other imports come from system libraries. */
Test(abi, the_driver_imports_nothing_of_the_simulator_but_its_public_api)
{
	char bad[4096] = "", *imports, *internal;
	size_t ni, nd, hc = 0;
	bool sees_internals = false;

	imports = nm_names("--undefined-only", "libibverbs.so.1", &ni);
	internal = nm_names("--defined-only", "internal/libibverbs.so.1", &nd);
	for (char *d = internal; *d && !sees_internals; d += strlen(d) + 1)
		sees_internals = !strcmp(d, "sim_pcie_mmio_write");
	cr_assert(sees_internals, "the internal image does not export the simulator's internals");
	for (char *s = imports; *s; s += strlen(s) + 1) {
		bool simulator = false;

		if (!strncmp(s, "hcasim_", 7)) {
			hc++;
			continue;
		}
		for (char *d = internal; *d && !simulator; d += strlen(d) + 1)
			simulator = !strcmp(d, s);
		if (simulator && strlen(bad) + strlen(s) + 2 < sizeof(bad))
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), " %s", s);
	}
	cr_assert_eq(bad[0], 0, "libibverbs.so.1 imports simulator internals:%s", bad);
	cr_assert_gt(hc, 15, "the driver imports %zu hcasim_* functions", hc);
	free(imports);
	free(internal);
}

/* ---- the user guide's driver (suite system) ---- */

Test(system, the_user_guide_driver_builds_and_runs_on_libhcasim_alone)
{
	char src[64], cmd[2048], *out;
	int lines = tb_doc_program("docs/user-guide.md", "/* bus-example */", src, sizeof(src)), st;

	cr_assert_gt(lines, 40, "docs/user-guide.md has no /* bus-example */ program");
	/* The guide's build line: the public headers, libhcasim and nothing else. */
	snprintf(cmd, sizeof(cmd),
		 "gcc -std=c11 -Wall -Wextra -Werror %s -o %s.bin %s -I %s/include -L %s/lib "
		 "-lhcasim -Wl,-rpath,%s/lib 2>&1 && %s.bin 2>&1",
		 HCASIM_SAN ? "-fsanitize=address,undefined" : "", src, src, HCASIM_BUILD_DIR,
		 HCASIM_BUILD_DIR, HCASIM_BUILD_DIR, src);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "%s\n%s", cmd, out);
	cr_expect(strstr(out, "hcasim0: BAR0 2097152 bytes, vendor 0x4853 device 0x0001"), "%s",
		  out);
	cr_expect(strstr(out, "write past the BAR: Numerical result out of range"), "%s", out);
	cr_expect(strstr(out, "QUERY_HCA_CAP: max_qp 131072"), "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s.bin", src);
	unlink(cmd);
	unlink(src);
}
