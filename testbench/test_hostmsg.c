/* hostmsg: host messages (hcasim_host_send, hcasim_host_recv; docs/fabric.md#host-messages),
 * the fabric's start together (fabric.start) and the probe at first open (driver.probe), and
 * what they are for: the default run of hcasim-run, its two hosts driven by two processes of a
 * fabric, gives the one-process run's capture and completion times. */
#include "tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/hcasim.h"

static void boot(void)
{
	cr_assert_eq(hcasim_boot(), 0, "%s", hcasim_last_error());
}

/* A message arrives one link latency after its send, in simulated time; messages from one host
 * come in the order they were sent. */
Test(hostmsg, a_message_arrives_one_link_latency_after_its_send_in_order)
{
	char buf[16];
	uint64_t t0;

	tb_config("link.latency_ns", "250");
	boot();
	t0 = hcasim_now_ps();
	cr_assert_eq(hcasim_host_send(0, 1, "first", 6), 0, "%s", hcasim_last_error());
	cr_assert_eq(hcasim_host_send(0, 1, "second", 7), 0, "%s", hcasim_last_error());
	cr_assert_eq(hcasim_now_ps(), t0, "a send takes no simulated time");
	cr_assert_eq(hcasim_host_recv(1, 0, buf, sizeof(buf), UINT64_MAX), 6, "%s",
		     hcasim_last_error());
	cr_expect_str_eq(buf, "first");
	cr_expect_eq(hcasim_now_ps(), t0 + 250000, "arrived at %llu, sent at %llu",
		     (unsigned long long)hcasim_now_ps(), (unsigned long long)t0);
	cr_assert_eq(hcasim_host_recv(1, 0, buf, sizeof(buf), 0), 7, "%s", hcasim_last_error());
	cr_expect_str_eq(buf, "second");
	/* The other way, an empty message. */
	cr_assert_eq(hcasim_host_send(1, 0, NULL, 0), 0, "%s", hcasim_last_error());
	cr_expect_eq(hcasim_host_recv(0, 1, buf, sizeof(buf), UINT64_MAX), 0, "%s",
		     hcasim_last_error());
	hcasim_shutdown();
}

/* A wait that times out does so at its deadline; a buffer too short leaves the message; a
 * message that can never come is EDEADLK. */
Test(hostmsg, a_wait_times_out_at_its_deadline_and_a_short_buffer_leaves_the_message)
{
	char buf[16];
	uint64_t t0;

	boot();
	t0 = hcasim_now_ps();
	/* host 0's message to host 1 is due in 100 ns: host 1 waiting 50 ns for one from host 0
	 * times out, and the one it waits for later comes. */
	cr_assert_eq(hcasim_host_send(1, 0, "x", 1), 0, "%s", hcasim_last_error());
	cr_expect_eq(hcasim_host_recv(0, 1, buf, sizeof(buf), 50000), -ETIMEDOUT);
	cr_expect(strstr(hcasim_last_error(), "host 0 waited for a message from host 1: timed out"),
		  "%s", hcasim_last_error());
	cr_expect_eq(hcasim_now_ps(), t0 + 50000);
	cr_expect_eq(hcasim_host_recv(0, 1, buf, sizeof(buf), 50000), 1, "%s", hcasim_last_error());
	cr_expect_eq(hcasim_now_ps(), t0 + 100000);
	cr_assert_eq(hcasim_host_send(0, 1, "0123456789", 10), 0, "%s", hcasim_last_error());
	cr_expect_eq(hcasim_host_recv(1, 0, buf, 4, UINT64_MAX), -EMSGSIZE);
	cr_expect(strstr(hcasim_last_error(), "10 bytes"), "%s", hcasim_last_error());
	cr_expect_eq(hcasim_host_recv(1, 0, buf, sizeof(buf), 0), 10, "the message stayed: %s",
		     hcasim_last_error());
	cr_expect_eq(hcasim_host_recv(0, 1, buf, sizeof(buf), UINT64_MAX), -EDEADLK);
	cr_expect(strstr(hcasim_last_error(), "no host can send one"), "%s", hcasim_last_error());
	hcasim_shutdown();
}

static void expect_refused(int rc, int err, const char *words)
{
	cr_expect_eq(rc, err, "returned %d, expected %d (%s)", rc, err, hcasim_last_error());
	cr_expect(strstr(hcasim_last_error(), words), "'%s' does not say '%s'",
		  hcasim_last_error(), words);
}

Test(hostmsg, bad_arguments_are_refused_naming_the_rule)
{
	static char big[4097];
	char buf[8];

	expect_refused(hcasim_host_send(0, 1, "x", 1), -ENODEV, "not booted");
	expect_refused(hcasim_host_recv(1, 0, buf, 8, 0), -ENODEV, "not booted");
	tb_config("sim.hosts", "4");
	boot();
	expect_refused(hcasim_host_send(0, 7, "x", 1), -EINVAL, "no host 7 (sim.hosts 4");
	expect_refused(hcasim_host_send(-1, 1, "x", 1), -EINVAL, "no host -1");
	expect_refused(hcasim_host_recv(3, 9, buf, 8, 0), -EINVAL, "no host 9");
	expect_refused(hcasim_host_send(2, 3, big, sizeof(big)), -EMSGSIZE, "at most 4096");
	expect_refused(hcasim_host_send(2, 3, NULL, 4), -EINVAL, "buf is NULL");
	expect_refused(hcasim_host_recv(3, 2, NULL, 4, 0), -EINVAL, "buf is NULL");
	/* Nothing was sent by the refused calls: nothing can come. */
	cr_expect_eq(hcasim_host_recv(3, 2, buf, 8, 1000000), -EDEADLK);
	/* In one process any two hosts message each other, whatever the cabling. */
	cr_expect_eq(hcasim_host_send(0, 2, "a", 1), 0, "%s", hcasim_last_error());
	cr_expect_eq(hcasim_host_recv(2, 0, buf, 8, UINT64_MAX), 1, "%s", hcasim_last_error());
	hcasim_shutdown();
	tb_config("sim.topology", "switch");
	boot();
	cr_expect_eq(hcasim_host_send(0, 1, "b", 1), 0, "%s", hcasim_last_error());
	cr_expect_eq(hcasim_host_recv(1, 0, buf, 8, UINT64_MAX), 1, "%s", hcasim_last_error());
	hcasim_shutdown();
}

static char hdir[] = "/tmp/hcasim-hostmsg-XXXXXX";

static void hm_setup(void)
{
	cr_assert_not_null(mkdtemp(hdir));
}

static void hm_teardown(void)
{
	tb_rm_tmpdir(hdir);
}

/* In a fabric a host messages only hosts it holds, or its pair in another process. */
Test(hostmsg, in_a_fabric_a_host_messages_its_pair_and_the_hosts_held_with_it,
     .init = hm_setup, .fini = hm_teardown)
{
	char dir[4200], buf[8];

	snprintf(dir, sizeof(dir), "%s/f", hdir);
	cr_assert_eq(setenv("HCASIM_FABRIC", dir, 1), 0);
	cr_assert_eq(setenv("HCASIM_HOST", "0,2", 1), 0);
	tb_config("sim.hosts", "4");
	boot();
	expect_refused(hcasim_host_send(1, 0, "x", 1), -EPERM,
		       "host 1 is not held by this process (HCASIM_HOST)");
	expect_refused(hcasim_host_recv(3, 2, buf, 8, 0), -EPERM, "host 3 is not held");
	expect_refused(hcasim_host_send(0, 3, "x", 1), -ENOTCONN,
		       "host 3 is held by another process and is not host 0's pair");
	/* The pair's process has not joined: the message waits for it. */
	cr_expect_eq(hcasim_host_send(0, 1, "x", 1), 0, "%s", hcasim_last_error());
	cr_expect_eq(hcasim_host_send(0, 2, "c", 1), 0, "%s", hcasim_last_error());
	cr_expect_eq(hcasim_host_recv(2, 0, buf, 8, UINT64_MAX), 1, "%s", hcasim_last_error());
	hcasim_shutdown();
}

/* driver.probe=open: the device list sets nothing up; each HCA is set up at its first open, in
 * the time of the program that opens it, and its GUID is the one the boot-time probe reads. */
Test(hostmsg, with_driver_probe_open_an_hca_is_set_up_at_its_first_open)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct hcasim_cmd_record rec[4];
	__be64 guid_list, guid_open;
	uint64_t t_list, t_open;
	int n;

	boot();
	list = ibv_get_device_list(&n);
	cr_assert(list && n == 2, "%s", hcasim_last_error());
	guid_list = ibv_get_device_guid(list[1]);
	t_list = hcasim_now_ps();
	ibv_free_device_list(list);
	hcasim_shutdown();

	tb_config("driver.probe", "open");
	boot();
	list = ibv_get_device_list(&n);
	cr_assert(list && n == 2, "%s", hcasim_last_error());
	cr_expect_eq(hcasim_now_ps(), 0, "listing set something up (t=%llu)",
		     (unsigned long long)hcasim_now_ps());
	ctx = ibv_open_device(list[1]);
	cr_assert_not_null(ctx, "%s", hcasim_last_error());
	t_open = hcasim_now_ps();
	cr_expect_gt(t_open, 0);
	cr_expect_lt(t_open, t_list, "one HCA set up (%llu ps) takes less than two (%llu ps)",
		     (unsigned long long)t_open, (unsigned long long)t_list);
	cr_expect_gt(hcasim_cmd_log(ctx, rec, 4), 0, "the probe's commands are in the log");
	guid_open = ibv_get_device_guid(list[0]); /* sets up hcasim0 too */
	cr_expect_neq(guid_open, 0, "%s", hcasim_last_error());
	cr_expect_eq(ibv_get_device_guid(list[1]), guid_list);
	cr_expect_gt(hcasim_now_ps(), t_open, "hcasim0 was set up at its GUID query");
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	hcasim_shutdown();
}

/* fabric.start=together: a host whose peer never comes fails its boot after
 * fabric.join_timeout_ms, naming the link; the key must agree across the fabric. */
Test(hostmsg, a_fabric_started_together_waits_for_the_peer_and_names_it_when_it_never_comes,
     .init = hm_setup, .fini = hm_teardown)
{
	char cmd[1024];
	char *out;
	int st;

	snprintf(cmd, sizeof(cmd),
		 "cd %s && printf '[fabric]\\nstart = together\\njoin_timeout_ms = 300\\n' > "
		 "c.ini && export %s HCASIM_CONFIG=c.ini HCASIM_FABRIC=%s/f HCASIM_HOST=0; "
		 "timeout 60 %s/bin/hcasim-run x 2>&1; echo status=$?",
		 hdir, tb_san_env(), hdir, HCASIM_BUILD_DIR);
	out = tb_run_cmd(cmd, &st);
	cr_expect(strstr(out, "fabric.start=together: the process holding side 1 of link "
			      "link0.1 did not join within 300 ms"), "%s", out);
	cr_expect(strstr(out, "status=1"), "%s", out);
	free(out);
}

/* The default run of hcasim-run in one process, and as two processes of a fabric (each driving
 * its own host's side, started in either order, the second 0.3 s of wall time after the
 * first): the same completion times and the same merged capture, byte for byte. */
static char *run_two(const char *first, const char *second)
{
	char cmd[2048];
	int st;

	snprintf(cmd, sizeof(cmd),
		 "cd %s && rm -rf f two.* && export %s HCASIM_FABRIC=%s/f; "
		 "HCASIM_HOST=%s timeout 120 %s/bin/hcasim-run two > a.out 2>&1 & a=$!; "
		 "sleep 0.3; HCASIM_HOST=%s timeout 120 %s/bin/hcasim-run two > b.out 2>&1; "
		 "echo second=$?; wait $a; echo first=$?; cat a.out b.out",
		 hdir, tb_san_env(), hdir, first, HCASIM_BUILD_DIR, second, HCASIM_BUILD_DIR);
	return tb_run_cmd(cmd, &st);
}

static int by_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines "t=... ps ..." of out, sorted. */
static char *times_of(const char *out)
{
	char *copy = strdup(out), *lines[64], *save = NULL, *res;
	size_t n = 0, len = 1;

	cr_assert_not_null(copy);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (!strncmp(l, "t=", 2) && n < 64)
			lines[n++] = l, len += strlen(l) + 1;
	qsort(lines, n, sizeof(lines[0]), by_text);
	res = calloc(1, len);
	cr_assert_not_null(res);
	for (size_t i = 0; i < n; i++)
		strcat(strcat(res, lines[i]), "\n");
	free(copy);
	return res;
}

Test(fabric, hcasim_run_as_two_processes_gives_the_one_process_capture_and_times,
     .init = hm_setup, .fini = hm_teardown)
{
	static const char *const orders[][2] = { { "0", "1" }, { "1", "0" } };
	char cmd[1024], one[4200], two[4200];
	char *out, *want;
	int st;

	snprintf(cmd, sizeof(cmd), "cd %s && export %s; %s/bin/hcasim-run one 2>&1", hdir,
		 tb_san_env(), HCASIM_BUILD_DIR);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "%s", out);
	want = times_of(out);
	cr_assert(strstr(want, "RDMA WRITE completed") && strstr(want, "RECV completed"), "%s",
		  want);
	free(out);
	snprintf(one, sizeof(one), "%s/one.link0.pcap", hdir);
	snprintf(two, sizeof(two), "%s/two.link0.pcap", hdir);
	for (size_t i = 0; i < 2; i++) {
		char *got;

		out = run_two(orders[i][0], orders[i][1]);
		cr_assert(strstr(out, "first=0") && strstr(out, "second=0"), "%s", out);
		got = times_of(out);
		cr_expect_str_eq(got, want, "host %s first:\n%s", orders[i][0], out);
		tb_same_file("the merged capture", one, two, 1000);
		free(got);
		free(out);
	}
	free(want);
}
