/* Configuration: the file, the C API, errors that name the key, and settings that act. */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_file(char *path, const char *text)
{
	int fd = mkstemp(path);
	FILE *f;

	cr_assert(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
}

Test(config, defaults_are_readable)
{
	char buf[32];

	cr_assert_eq(hcasim_config_get("sim.hosts", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "2");
	cr_assert_eq(hcasim_config_get("link.speed", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "edr");
	cr_assert_eq(hcasim_config_get("hca.link_layer", buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "ib");
}

Test(config, unknown_key_is_an_error_naming_the_key)
{
	cr_assert_eq(hcasim_config_set("hca.portz", "2"), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "hca.portz"), "%s", hcasim_last_error());
}

Test(config, bad_values_are_errors_naming_the_key_and_change_nothing)
{
	const char *bad[][2] = {
		{ "hca.ports", "3" },		{ "hca.ports", "0" },	   { "hca.ports", "two" },
		{ "hca.ports", "-1" },		{ "hca.ports", "" },	   { "hca.ports", "1x" },
		{ "hca.link_layer", "ethernet" }, { "pcie.mps", "300" },   { "link.mtu", "9000" },
		{ "sim.hosts", "17" },
	};
	char before[32], after[32];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(hcasim_config_get(bad[i][0], before, sizeof(before)), 0);
		cr_assert_eq(hcasim_config_set(bad[i][0], bad[i][1]), -EINVAL, "%s=%s accepted",
			     bad[i][0], bad[i][1]);
		cr_assert(strstr(hcasim_last_error(), bad[i][0]), "message '%s' names no key",
			  hcasim_last_error());
		cr_assert_eq(hcasim_config_get(bad[i][0], after, sizeof(after)), 0);
		cr_assert_str_eq(before, after, "%s changed by a rejected value", bad[i][0]);
	}
}

Test(config, file_applies_every_key)
{
	char path[] = "/tmp/hcasim-cfg-XXXXXX", buf[32];

	write_file(path, "# comment\n[sim]\nseed = 7\nhosts = 3\n[hca]\nports = 2\n"
			 "[link]\nmtu = 2048\n");
	cr_assert_eq(hcasim_config_load(path), 0, "%s", hcasim_last_error());
	hcasim_config_get("sim.seed", buf, sizeof(buf));
	cr_assert_str_eq(buf, "7");
	hcasim_config_get("link.mtu", buf, sizeof(buf));
	cr_assert_str_eq(buf, "2048");
	unlink(path);
}

Test(config, bad_file_names_file_and_key_and_applies_nothing)
{
	char path[] = "/tmp/hcasim-cfg-XXXXXX", buf[32];

	write_file(path, "[sim]\nhosts = 4\n[hca]\nmax_qpz = 9\n");
	cr_assert_eq(hcasim_config_load(path), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), path) && strstr(hcasim_last_error(), "hca.max_qpz"),
		  "%s", hcasim_last_error());
	hcasim_config_get("sim.hosts", buf, sizeof(buf));
	cr_assert_str_eq(buf, "2", "the good line before the bad one was applied");
	unlink(path);
	cr_assert_eq(hcasim_config_load("/nonexistent/hcasim.ini"), -ENOENT);
	cr_assert(strstr(hcasim_last_error(), "/nonexistent/hcasim.ini"));
}

/* Every error in a file says FILE:LINE. */
Test(config, file_errors_name_the_line)
{
	char path[] = "/tmp/hcasim-cfg-XXXXXX", want[64];

	write_file(path, "# comment\n[sim]\nseed = 7\n\n[hca]\nmax_qpz = 9\n");
	cr_assert_eq(hcasim_config_load(path), -EINVAL);
	snprintf(want, sizeof(want), "%s':6:", path);
	cr_assert(strstr(hcasim_last_error(), want) && strstr(hcasim_last_error(), "hca.max_qpz"),
		  "%s", hcasim_last_error());
	unlink(path);
	strcpy(path, "/tmp/hcasim-cfg-XXXXXX");
	write_file(path, "[sim]\nseed = 7\nthis is not a key\n");
	cr_assert_eq(hcasim_config_load(path), -EINVAL);
	snprintf(want, sizeof(want), "%s':3: syntax error", path);
	cr_assert(strstr(hcasim_last_error(), want), "%s", hcasim_last_error());
	unlink(path);
}

/* A file that is not a plain text file of bounded size is refused at once, naming the rule
 * (issue: HCASIM_CONFIG=/dev/zero read for ever), and nothing is applied. */
Test(config, only_bounded_regular_text_files_are_read)
{
	char path[] = "/tmp/hcasim-cfg-XXXXXX", dir[] = "/tmp/hcasim-fifo-XXXXXX", fifo[64];
	char buf[32], want[64], *big;
	FILE *f;

	cr_assert_eq(hcasim_config_load("/dev/zero"), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "/dev/zero") &&
		  strstr(hcasim_last_error(), "not a regular file"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_config_load("/tmp"), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "not a regular file"), "%s", hcasim_last_error());
	/* A FIFO with no writer: refused without waiting for one. */
	cr_assert_not_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(hcasim_config_load(fifo), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "not a regular file"), "%s", hcasim_last_error());
	unlink(fifo);
	rmdir(dir);
	/* Larger than 1 MiB. */
	write_file(path, "[sim]\nseed = 9\n");
	f = fopen(path, "a");
	big = calloc(1, (1u << 20) + 1);
	cr_assert(f && big);
	memset(big, '#', 1u << 20);
	fputs(big, f);
	fclose(f);
	free(big);
	cr_assert_eq(hcasim_config_load(path), -EFBIG);
	cr_assert(strstr(hcasim_last_error(), "more than"), "%s", hcasim_last_error());
	unlink(path);
	/* A NUL byte. */
	strcpy(path, "/tmp/hcasim-cfg-XXXXXX");
	write_file(path, "[sim]\nseed = 9\n");
	f = fopen(path, "a");
	cr_assert_not_null(f);
	fwrite("\n[sim]\0hosts = 3\n", 1, 18, f);
	fclose(f);
	cr_assert_eq(hcasim_config_load(path), -EINVAL);
	snprintf(want, sizeof(want), "%s':4: a NUL byte", path);
	cr_assert(strstr(hcasim_last_error(), want), "%s", hcasim_last_error());
	unlink(path);
	/* A line longer than the parser takes. */
	big = calloc(1, 1000);
	cr_assert_not_null(big);
	memset(big, 'x', 600);
	strcpy(path, "/tmp/hcasim-cfg-XXXXXX");
	write_file(path, "[sim]\nseed = 9\n");
	f = fopen(path, "a");
	cr_assert_not_null(f);
	fprintf(f, "# %s\n[link]\nmtu = 1024\n", big);
	fclose(f);
	free(big);
	cr_assert_eq(hcasim_config_load(path), -EINVAL);
	snprintf(want, sizeof(want), "%s':3: line longer than", path);
	cr_assert(strstr(hcasim_last_error(), want), "%s", hcasim_last_error());
	unlink(path);
	hcasim_config_get("sim.seed", buf, sizeof(buf));
	cr_assert_str_eq(buf, "1", "a refused file applied its seed");
}

/* The device list of a system that cannot boot: empty, errno and the message the reason. */
static void expect_no_devices(int err, const char *why)
{
	struct ibv_device **l;
	int n = -1;

	l = ibv_get_device_list(&n);
	cr_assert_not_null(l, "no list: %s", strerror(errno));
	cr_assert_eq(errno, err, "errno %d, not %d", errno, err);
	cr_assert_eq(n, 0);
	cr_assert_null(l[0]);
	ibv_free_device_list(l);
	cr_assert(strstr(hcasim_last_error(), why), "no '%s' in '%s'", why, hcasim_last_error());
}

/* The same at boot through HCASIM_CONFIG: no devices, and the reason names the variable. */
Test(config, environment_file_that_is_not_a_regular_file_leaves_no_devices)
{
	setenv("HCASIM_CONFIG", "/dev/zero", 1);
	expect_no_devices(EINVAL, "HCASIM_CONFIG: config file '/dev/zero': not a regular file");
}

/* A key given twice in a file used to be taken silently (the last one won): refused, naming
 * both lines. An unclosed [section] is told at its own line, not at the keys after it. */
Test(config, a_key_given_twice_and_an_unclosed_section_are_told_at_their_line)
{
	char path[] = "/tmp/hcasim-cfg-XXXXXX", want[160], buf[32];

	write_file(path, "[sim]\nhosts = 3\n[link]\nspeed = hdr\n[sim]\n  hosts = 4\n");
	cr_assert_eq(hcasim_config_load(path), -EINVAL);
	snprintf(want, sizeof(want), "config file '%s':6: config key 'sim.hosts': given twice "
		 "(first on line 2)", path);
	cr_assert(strstr(hcasim_last_error(), want), "%s", hcasim_last_error());
	unlink(path);
	strcpy(path, "/tmp/hcasim-cfg-XXXXXX");
	write_file(path, "; hosts\n[sim\nhosts = 3\n");
	cr_assert_eq(hcasim_config_load(path), -EINVAL);
	snprintf(want, sizeof(want), "config file '%s':2: syntax error", path);
	cr_assert(strstr(hcasim_last_error(), want), "%s", hcasim_last_error());
	unlink(path);
	hcasim_config_get("sim.hosts", buf, sizeof(buf));
	cr_assert_str_eq(buf, "2", "a refused file changed sim.hosts");
}

Test(config, key_outside_a_section_is_an_error)
{
	char path[] = "/tmp/hcasim-cfg-XXXXXX";

	write_file(path, "hosts = 4\n");
	cr_assert_eq(hcasim_config_load(path), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "hosts"), "%s", hcasim_last_error());
	unlink(path);
}

Test(config, environment_file_is_read_at_boot)
{
	char path[] = "/tmp/hcasim-cfg-XXXXXX";
	struct ibv_device **l;
	int n;

	write_file(path, "[sim]\nhosts = 3\n");
	setenv("HCASIM_CONFIG", path, 1);
	l = ibv_get_device_list(&n);
	cr_assert_not_null(l, "%s", hcasim_last_error());
	cr_assert_eq(n, 3);
	ibv_free_device_list(l);
	unlink(path);
}

Test(config, bad_environment_file_leaves_no_devices_with_the_reason)
{
	char path[] = "/tmp/hcasim-cfg-XXXXXX", want[128];

	write_file(path, "[sim]\nhosts = many\n");
	setenv("HCASIM_CONFIG", path, 1);
	snprintf(want, sizeof(want), "HCASIM_CONFIG: config file '%s':2: config key 'sim.hosts'",
		 path);
	expect_no_devices(EINVAL, want);
	unlink(path);
}

Test(config, settings_are_refused_after_boot)
{
	struct tb_dev t;

	tb_open(&t, 0);
	cr_assert_eq(hcasim_config_set("sim.hosts", "4"), -EBUSY);
	cr_assert(strstr(hcasim_last_error(), "sim.hosts"));
	tb_close(&t);
}

Test(config, two_ports_each_get_a_lid_and_become_active)
{
	struct tb_dev t;
	struct ibv_port_attr p2;

	tb_config("hca.ports", "2");
	tb_open(&t, 1);
	cr_assert_eq(t.attr.phys_port_cnt, 2);
	cr_assert_eq(ibv_query_port(t.ctx, 2, &p2), 0);
	cr_assert_eq(t.port.state, IBV_PORT_ACTIVE);
	cr_assert_eq(p2.state, IBV_PORT_ACTIVE);
	cr_assert_neq(t.port.lid, 0);
	cr_assert_neq(p2.lid, 0);
	cr_assert_neq(t.port.lid, p2.lid);
	tb_close(&t);
}

Test(config, link_mtu_and_speed_reach_the_port)
{
	struct tb_dev t;

	tb_config("link.mtu", "1024");
	tb_config("link.speed", "hdr");
	tb_open(&t, 0);
	cr_assert_eq(t.port.active_mtu, IBV_MTU_1024);
	cr_assert_eq(t.port.max_mtu, IBV_MTU_1024);
	cr_assert_eq(t.port.active_speed, 64, "HDR speed code");
	cr_assert_eq(t.port.active_width, 2, "4x width code");
	tb_close(&t);
}

Test(config, device_limits_come_from_the_configuration)
{
	struct tb_dev t;

	tb_config("hca.max_qp", "100");
	tb_config("hca.max_cqe", "1000");
	tb_open(&t, 0);
	cr_assert_eq(t.attr.max_qp, 100);
	cr_assert_eq(t.attr.max_cqe, 1000);
	tb_close(&t);
}

Test(config, roce_ports_have_no_lid_and_roce_v2_gids)
{
	struct tb_dev t;
	union ibv_gid g0, g1;
	struct ibv_gid_entry e;

	tb_config("hca.link_layer", "roce");
	tb_open(&t, 1);
	cr_assert_eq(t.port.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_assert_eq(t.port.state, IBV_PORT_ACTIVE);
	cr_assert_eq(t.port.lid, 0);
	/* RoCEv2 over IPv4: one GID, the IPv4-mapped address of the port (10.1.0.2 on host 1). */
	cr_assert_eq(ibv_query_gid(t.ctx, 1, 0, &g0), 0);
	cr_assert_eq(ibv_query_gid(t.ctx, 1, 1, &g1), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(g0.raw[i], 0);
	cr_assert_eq(g0.raw[10], 0xff, "IPv4-mapped GID");
	cr_assert_eq(g0.raw[11], 0xff);
	cr_assert_eq(g0.raw[12], 10);
	cr_assert_eq(g0.raw[13], 1);
	cr_assert_eq(g0.raw[15], 2);
	for (int i = 0; i < 16; i++)
		cr_assert_eq(g1.raw[i], 0, "GID 1 is not populated");
	cr_assert_eq(ibv_query_gid_ex(t.ctx, 1, 0, &e, 0), 0);
	cr_assert_eq(e.gid_type, IBV_GID_TYPE_ROCE_V2);
	cr_assert_eq(ibv_query_gid_ex(t.ctx, 1, 1, &e, 0), ENODATA);
	tb_close(&t);
}
