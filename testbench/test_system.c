/* System: boot and port bring-up, GUIDs, the command completion modes, Debian's unmodified
 * ibv_devinfo, generated documents in step with their sources, and tracing. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *run_capture(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	size_t cap = 1 << 16, len = 0, n;
	char *buf = malloc(cap);

	cr_assert_not_null(p, "%s", cmd);
	while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	buf[len] = 0;
	if (pclose(p)) {
		cr_log_error("%s failed:\n%s", cmd, buf);
		free(buf); /* cr_assert does not return */
		cr_assert_fail("%s failed", cmd);
	}
	return buf;
}

Test(system, ports_are_active_with_unique_lids_and_guids)
{
	struct ibv_device **l;
	struct ibv_port_attr pa[2];
	union ibv_gid gid[2];
	__be64 guid[2];
	__be16 pkey;
	int n;

	l = ibv_get_device_list(&n);
	cr_assert_not_null(l);
	cr_assert_eq(n, 2);
	for (int i = 0; i < 2; i++) {
		struct ibv_context *c = ibv_open_device(l[i]);

		cr_assert_not_null(c);
		cr_assert_str_eq(ibv_get_device_name(l[i]), i ? "hcasim1" : "hcasim0");
		guid[i] = ibv_get_device_guid(l[i]);
		cr_assert_eq(ibv_query_port(c, 1, &pa[i]), 0);
		cr_assert_eq(pa[i].state, IBV_PORT_ACTIVE);
		cr_assert_eq(pa[i].phys_state, 5, "LinkUp");
		cr_assert_eq(pa[i].link_layer, IBV_LINK_LAYER_INFINIBAND);
		cr_assert_eq(pa[i].sm_lid, 1);
		cr_assert_eq(ibv_query_gid(c, 1, 0, &gid[i]), 0);
		/* GID 0 = default subnet prefix : port GUID. */
		cr_assert_eq(be64toh(gid[i].global.subnet_prefix), 0xfe80000000000000ull);
		cr_assert_eq(be64toh(gid[i].global.interface_id), be64toh(guid[i]) + 1,
			     "port GUID = node GUID + port number");
		cr_assert_eq(ibv_query_pkey(c, 1, 0, &pkey), 0);
		cr_assert_eq(be16toh(pkey), 0xffff, "default full-member P_Key at index 0");
		cr_assert_eq(ibv_query_pkey(c, 1, 1, &pkey), 0);
		cr_assert_eq(pkey, 0);
		ibv_close_device(c);
	}
	cr_assert_neq(pa[0].lid, pa[1].lid);
	cr_assert_neq(guid[0], guid[1]);
	ibv_free_device_list(l);
}

Test(system, guids_are_stable_across_boots)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	__be64 g0 = ibv_get_device_guid(l[0]);

	ibv_free_device_list(l);
	hcasim_shutdown();
	l = ibv_get_device_list(NULL);
	cr_assert_not_null(l);
	cr_assert_eq(ibv_get_device_guid(l[0]), g0);
	ibv_free_device_list(l);
}

/* Time from doorbell to completion of one ALLOC_PD as the command log records it. */
static uint64_t alloc_pd_wait_ps(void)
{
	struct tb_dev t;
	struct hcasim_cmd_record rec[4];
	struct ibv_pd *pd;
	int n;

	tb_open(&t, 0);
	pd = ibv_alloc_pd(t.ctx);
	cr_assert_not_null(pd);
	n = hcasim_cmd_log(t.ctx, rec, 1);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(rec[0].name, "ALLOC_PD");
	cr_assert_eq(rec[0].status, 0);
	cr_assert_gt(rec[0].done_cycle, rec[0].start_cycle);
	ibv_dealloc_pd(pd);
	tb_close(&t);
	return rec[0].complete_ps - rec[0].submit_ps;
}

Test(system, commands_complete_by_polling)
{
	uint64_t ps;

	tb_config("driver.cmd_completion", "poll");
	ps = alloc_pd_wait_ps();
	/* 1000 firmware cycles at 500 MHz are 2 us; PCIe adds under 2 us. */
	cr_assert(ps > 2000000 && ps < 4000000, "ALLOC_PD took %llu ps", (unsigned long long)ps);
}

Test(system, commands_complete_by_interrupt_after_the_msix_latency)
{
	uint64_t ps;

	tb_config("driver.cmd_completion", "interrupt");
	tb_config("pcie.msix_ns", "5000");
	ps = alloc_pd_wait_ps();
	/* The driver sleeps until the MSI-X message, 5 us after the status write. */
	cr_assert(ps > 7000000 && ps < 9000000, "ALLOC_PD took %llu ps", (unsigned long long)ps);
}

Test(system, firmware_cost_scales_with_the_core_clock)
{
	uint64_t fast, slow;

	tb_config("driver.cmd_completion", "poll");
	tb_config("clock.core_mhz", "1000");
	fast = alloc_pd_wait_ps();
	hcasim_shutdown();
	tb_config("driver.cmd_completion", "poll");
	tb_config("clock.core_mhz", "250");
	slow = alloc_pd_wait_ps();
	/* 1000 cycles: 1 us at 1 GHz, 4 us at 250 MHz. */
	cr_assert(slow - fast > 2900000 && slow - fast < 3200000, "fast %llu slow %llu",
		  (unsigned long long)fast, (unsigned long long)slow);
}

Test(system, pcie_transfers_start_on_pcie_clock_edges)
{
	uint64_t fast, slow;

	tb_config("driver.cmd_completion", "poll");
	fast = alloc_pd_wait_ps();
	hcasim_shutdown();
	tb_config("driver.cmd_completion", "poll");
	tb_config("clock.pcie_mhz", "2"); /* 500 ns per edge */
	slow = alloc_pd_wait_ps();
	/* Doorbell, entry read, input read, output write and status write each wait for an
	 * edge: at least a few hundred ns more in all. */
	cr_assert_gt(slow, fast + 400000, "fast %llu slow %llu", (unsigned long long)fast,
		     (unsigned long long)slow);
}

Test(system, debian_ibv_devinfo_lists_both_hcas)
{
	char cmd[1024];
	char *out;

	snprintf(cmd, sizeof(cmd), "%s LD_LIBRARY_PATH=%s/lib ibv_devinfo -v 2>&1", tb_san_env(),
		 HCASIM_BUILD_DIR);
	out = run_capture(cmd);
	cr_assert(strstr(out, "hca_id:\thcasim0"), "%s", out);
	cr_assert(strstr(out, "hca_id:\thcasim1"), "%s", out);
	cr_assert(strstr(out, "node_guid:\t\t\t0248:53ff:fe00:0000"), "%s", out);
	cr_assert(strstr(out, "node_guid:\t\t\t0248:53ff:fe00:0100"), "%s", out);
	cr_assert(strstr(out, "board_id:\t\t\tHCASIM-0001"), "%s", out);
	cr_assert(strstr(out, "port_lid:\t\t1\n"), "%s", out);
	cr_assert(strstr(out, "port_lid:\t\t2\n"), "%s", out);
	cr_assert(strstr(out, "active_mtu:\t\t4096 (5)"), "%s", out);
	cr_assert(strstr(out, "link_layer:\t\tInfiniBand"), "%s", out);
	cr_assert(strstr(out, "max_qp:\t\t\t\t131072"), "%s", out);
	cr_assert(strstr(out, "max_cqe:\t\t\t4194303"), "%s", out);
	cr_assert(strstr(out, "max_qp_rd_atom:\t\t\t16"), "%s", out);
	cr_assert(strstr(out, "GID[  0]:\t\tfe80:0000:0000:0000:0248:53ff:fe00:0001"), "%s", out);
	{
		/* Exactly two ports, both ACTIVE. */
		int active = 0;

		for (char *p = out; (p = strstr(p, "PORT_ACTIVE (4)")); p++)
			active++;
		cr_assert_eq(active, 2, "%s", out);
	}
	free(out);
}

Test(system, readme_example_builds_against_the_drop_in_library_and_runs)
{
	char src[64], cmd[2048], *out;
	int lines = tb_doc_program("README.md", "/* readme-example */", src, sizeof(src));

	cr_assert_gt(lines, 20, "README has no /* readme-example */ program");
	/* The README's build line, with this build's directories. */
	snprintf(cmd, sizeof(cmd),
		 "gcc %s -o %s.bin %s -I %s/include -L %s/lib -libverbs -lhcasim -Wl,-rpath,%s/lib "
		 "2>&1 && %s.bin 2>&1",
		 HCASIM_SAN ? "-fsanitize=address,undefined" : "", src, src, HCASIM_BUILD_DIR,
		 HCASIM_BUILD_DIR, HCASIM_BUILD_DIR, src);
	out = run_capture(cmd);
	cr_assert(strstr(out, "hcasim0"), "the example names the device it opened:\n%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s.bin", src);
	unlink(cmd);
	unlink(src);
}

static void check_generated(const char *what, const char *file)
{
	char cmd[1024], path[512];
	char *gen, *committed;
	FILE *f;
	long len;

	snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-gendoc %s", HCASIM_BUILD_DIR, what);
	gen = run_capture(cmd);
	snprintf(path, sizeof(path), "%s/%s", HCASIM_SRC_DIR, file);
	f = fopen(path, "rb");
	cr_assert_not_null(f, "%s is missing: run make docs", file);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	committed = calloc(1, (size_t)len + 1);
	cr_assert_eq(fread(committed, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	cr_assert_str_eq(committed, gen, "%s drifted from its source: run make docs", file);
	free(gen);
	free(committed);
}

Test(system, generated_twins_page_matches_the_registry)
{
	check_generated("twins", "docs/twins.md");
}

Test(system, generated_regmap_matches_the_device_interface)
{
	check_generated("regmap", "docs/regmap.md");
}

Test(system, generated_config_keys_match_the_config_table)
{
	check_generated("config", "docs/config-keys.md");
}

Test(system, generated_rtl_package_matches_the_device_interface)
{
	check_generated("sv", "rtl/hca_pkg.sv");
}

Test(system, generated_trace_event_table_matches_the_trace_declarations)
{
	check_generated("trace", "docs/trace-events.md");
}

/* Compile a program that calls the emitter of one event declared as decl (sim/trace.h reading
 * that table instead of sim/trace.def) with args; its exit status and compiler output. */
static int build_emitter(const char *decl, const char *args, char **out)
{
	char def[] = "/tmp/hcasim-tdef-XXXXXX.def", src[] = "/tmp/hcasim-tsrc-XXXXXX.c";
	char cmd[1024];
	int fd_def = mkstemps(def, 4), fd_src = mkstemps(src, 2), st;
	FILE *d, *c;

	cr_assert(fd_def >= 0 && fd_src >= 0);
	d = fdopen(fd_def, "w");
	fprintf(d, "TRACE_CAT(t, \"test\")\n%s\n", decl);
	fclose(d);
	c = fdopen(fd_src, "w");
	fprintf(c,
		"#include \"sim/trace.h\"\nuint64_t sim_trace_mask;\n"
		"void sim_trace_emit(int ev, int dev, const char *fmt, ...) { (void)ev; (void)dev; "
		"(void)fmt; }\nint main(void) { trace_t_ev(0, %s); return 0; }\n",
		args);
	fclose(c);
	snprintf(
	    cmd, sizeof(cmd),
	    "gcc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I %s '-DSIM_TRACE_DEF=\"%s\"' %s "
	    "2>&1; echo \"exit=$?\"",
	    HCASIM_SRC_DIR, def, src);
	*out = run_capture(cmd);
	unlink(def);
	unlink(src);
	cr_assert(
	    sscanf(strstr(*out, "exit=") ? strstr(*out, "exit=") : "exit=-1", "exit=%d", &st) == 1);
	return st;
}

/* The emitters are generated with the declared format, and the compiler checks it against the
 * declared types: a mismatch, or a call with the wrong arguments, does not build. */
Test(system, trace_declarations_are_type_checked_against_their_format)
{
	char *out;

	cr_assert_eq(build_emitter("TRACE_EV(t, ev, \"doc\", (uint32_t qpn, const char *why), "
				   "(qpn, why), \"qpn=0x%x why=%s\")",
				   "2, \"lost\"", &out),
		     0, "a matching declaration does not build:\n%s", out);
	free(out);
	cr_assert_neq(build_emitter("TRACE_EV(t, ev, \"doc\", (uint32_t qpn, const char *why), "
				    "(qpn, why), \"qpn=%s why=%s\")",
				    "2, \"lost\"", &out),
		      0, "a format that does not match its types builds:\n%s", out);
	cr_assert_not_null(strstr(out, "format"), "%s", out);
	free(out);
	cr_assert_neq(build_emitter("TRACE_EV(t, ev, \"doc\", (uint32_t qpn, const char *why), "
				    "(qpn, why), \"qpn=0x%x why=%s\")",
				    "2", &out),
		      0, "an emitter called without its arguments builds:\n%s", out);
	free(out);
}

Test(system, trace_lines_carry_time_device_and_cycle)
{
	char path[] = "/tmp/hcasim-trace-XXXXXX", line[512];
	unsigned long long t, cyc;
	int dev, fd = mkstemp(path), found = 0;
	struct tb_dev d;
	FILE *f;

	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(hcasim_trace("cmd,port", path), 0);
	tb_open(&d, 0);
	tb_close(&d);
	hcasim_shutdown();
	f = fopen(path, "r");
	while (fgets(line, sizeof(line), f)) {
		char ev[64];

		if (sscanf(line, "t=%llu dev=%d cyc=%llu %63s", &t, &dev, &cyc, ev) == 4) {
			cr_assert_eq(cyc, t / 2000, "cycle of a 500 MHz core: %s", line);
			found++;
		} else {
			/* Fabric-level events (the SM) belong to no device. */
			cr_assert_eq(sscanf(line, "t=%llu %63s", &t, ev), 2, "malformed: %s", line);
		}
		cr_assert(!strncmp(ev, "cmd.", 4) || !strncmp(ev, "port.", 5),
			  "category not selected: %s", line);
	}
	fclose(f);
	cr_assert_gt(found, 10);
	unlink(path);
}

Test(system, unknown_trace_category_is_refused)
{
	struct ibv_device **l;
	int n;

	cr_assert_eq(hcasim_trace("cmd,bogus", NULL), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "bogus"), "%s", hcasim_last_error());
	setenv("HCASIM_TRACE", "nope", 1);
	l = ibv_get_device_list(&n);
	cr_assert(l && !n && !l[0], "a system with a bad HCASIM_TRACE has devices");
	ibv_free_device_list(l);
	cr_assert(strstr(hcasim_last_error(), "HCASIM_TRACE: trace categories: unknown category "
			 "'nope'"), "%s", hcasim_last_error());
}

/* The co-simulation hook sees simulated time move forward in order, never backwards, and
 * ends where the simulation is. */
static uint64_t hook_calls, hook_last, hook_bad;

static void on_advance(void *arg, uint64_t from, uint64_t to)
{
	(void)arg;
	if (from >= to || from != hook_last)
		hook_bad++;
	hook_last = to;
	hook_calls++;
}

Test(system, time_hook_follows_simulated_time_forward)
{
	struct tb_dev a;

	hcasim_time_hook(on_advance, NULL);
	tb_open(&a, 0);
	hcasim_run_for_ps(123456789);
	cr_assert_gt(hook_calls, 10);
	cr_assert_eq(hook_bad, 0, "%llu advances out of order", (unsigned long long)hook_bad);
	cr_assert_eq(hook_last, hcasim_now_ps());
	hcasim_time_hook(NULL, NULL);
	{
		uint64_t n = hook_calls;

		hcasim_run_for_ps(1000);
		cr_assert_eq(hook_calls, n, "called after removal");
		/* set again on a running system (the kernel calls it only while there is one) */
		hook_last = hcasim_now_ps();
		hcasim_time_hook(on_advance, NULL);
		hcasim_run_for_ps(1000);
		cr_assert_gt(hook_calls, n, "not called once set again");
		cr_assert_eq(hook_last, hcasim_now_ps());
		hcasim_time_hook(NULL, NULL);
	}
	cr_assert_eq(hook_bad, 0);
	tb_close(&a);
}

/* ---- the driver/device seam (docs/architecture.md, the layering rule) ---- */

/* What driver/ may include of the project: its own files, the device interface (model/hw/)
 * and the two public headers, hcasim.h and the host bus hcasim_bus.h. */
static bool driver_may_include(const char *path)
{
	static const char *const ok[] = {"driver/", "model/hw/", "sim/hcasim_bus.h",
					 "sim/hcasim.h"};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strncmp(path, ok[i], strlen(ok[i])))
			return true;
	return false;
}

Test(system, driver_includes_nothing_of_the_simulator_but_model_hw_and_the_public_headers)
{
	char dir[512];
	DIR *d;
	struct dirent *e;
	int files = 0;

	snprintf(dir, sizeof(dir), "%s/driver", HCASIM_SRC_DIR);
	d = opendir(dir);
	cr_assert_not_null(d, "%s", dir);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		char path[1024], line[512], inc[256];
		FILE *f;

		if (len < 3 || (strcmp(e->d_name + len - 2, ".c") && strcmp(e->d_name + len - 2, ".h")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "r");
		cr_assert_not_null(f, "%s", path);
		for (int n = 1; fgets(line, sizeof(line), f); n++)
			if (sscanf(line, " # include \"%255[^\"]\"", inc) == 1)
				cr_expect(driver_may_include(inc), "driver/%s:%d includes %s", e->d_name,
					  n, inc);
		fclose(f);
		files++;
	}
	closedir(d);
	cr_assert_gt(files, 5, "no driver sources in %s", dir);
}

/* Compile `#include "header"` alone with the flags given; returns the compiler's status and
 * its messages in msg. */
static int compile_include(const char *header, const char *flags, char *msg, size_t len)
{
	char cmd[1024];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd),
		 "printf '#include \"%s\"\\n' | cc -std=c11 -D_GNU_SOURCE -fsyntax-only -Wall "
		 "-Werror -I'%s' %s -x c - 2>&1",
		 header, HCASIM_SRC_DIR, flags);
	p = popen(cmd, "r");
	cr_assert_not_null(p, "%s", cmd);
	n = fread(msg, 1, len - 1, p);
	msg[n] = 0;
	return pclose(p);
}

Test(system, the_device_half_of_pcie_is_a_compile_error_outside_the_device_side)
{
	char msg[4096];

	/* as driver/ is compiled: no HCASIM_DEVICE_SIDE */
	cr_assert_neq(compile_include("sim/pcie_dev.h", "", msg, sizeof(msg)), 0,
		      "sim/pcie_dev.h compiled without HCASIM_DEVICE_SIDE");
	cr_assert(strstr(msg, "device side of PCIe"), "%s", msg);
	cr_assert_neq(compile_include("model/hca.h", "", msg, sizeof(msg)), 0,
		      "model/hca.h compiled without HCASIM_DEVICE_SIDE");
	cr_assert_eq(compile_include("sim/pcie_host.h", "", msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(compile_include("sim/hcasim_bus.h", "", msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(compile_include("driver/drv.h", "", msg, sizeof(msg)), 0, "%s", msg);
	/* as model/, firmware/ and sim/ are compiled */
	cr_assert_eq(compile_include("sim/pcie_dev.h", "-DHCASIM_DEVICE_SIDE", msg, sizeof(msg)), 0,
		     "%s", msg);
}
