/* fabric (programs): Debian's unmodified verbs programs, server and client in two processes of
 * one fabric (HCASIM_FABRIC, HCASIM_HOST), as a user starts them in two terminals. The server
 * sits in accept() and read() outside the library while the client's first messages come: its
 * device thread runs its HCA meanwhile (docs/fabric.md#the-device-thread). Both must exit 0
 * after 1 000 iterations. */
#include "tb.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char pdir[] = "/tmp/hcasim-fabric-progs-XXXXXX";

static void fp_setup(void)
{
	cr_assert_not_null(mkdtemp(pdir));
}

static void fp_teardown(void)
{
	tb_rm_tmpdir(pdir);
}

/* A TCP port nobody listens on now (the kernel picks it). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* prog (and its flags) as server (host 0) and client (host 1, started once the server listens,
 * after delay seconds more): both exit statuses and what they printed. */
static char *server_client(const char *prog, const char *delay)
{
	char cmd[4096];
	int st, port = free_port();

	snprintf(cmd, sizeof(cmd),
		 "cd %s && export %s LD_LIBRARY_PATH=%s/lib HCASIM_FABRIC=%s/fabric; "
		 "HCASIM_HOST=0 timeout 240 %s -p %d >srv.out 2>&1 & srv=$!; "
		 "i=0; until grep -qi ':%04X 00000000:0000 0A' /proc/net/tcp /proc/net/tcp6; do "
		 "i=$((i+1)); [ $i -gt 1000 ] && break; sleep 0.01; done; sleep %s; "
		 "HCASIM_HOST=1 timeout 240 %s -p %d localhost >cli.out 2>&1; "
		 "echo client=$?; wait $srv; echo server=$?; cat srv.out cli.out",
		 pdir, tb_san_env(), HCASIM_BUILD_DIR, pdir, prog, port, port, delay, prog, port);
	char *out = tb_run_cmd(cmd, &st);

	cr_assert_eq(st, 0, "%s:\n%s", cmd, out);
	return out;
}

static void expect_both_ran(const char *prog, const char *delay)
{
	char cmd[256];
	char *out;

	snprintf(cmd, sizeof(cmd), "%s -n 1000", prog);
	out = server_client(cmd, delay);
	const char *first, *second;

	cr_expect(strstr(out, "client=0\n"), "%s: the client failed:\n%s", prog, out);
	cr_expect(strstr(out, "server=0\n"), "%s: the server failed:\n%s", prog, out);
	first = strstr(out, "1000 iters in ");
	second = first ? strstr(first + 1, "1000 iters in ") : NULL;
	cr_expect(first && second, "%s: not both printed their 1000 iterations:\n%s", prog, out);
	free(out);
}

Test(fabric, debians_ibv_rc_pingpong_runs_between_two_processes, .init = fp_setup,
     .fini = fp_teardown)
{
	expect_both_ran("ibv_rc_pingpong", "0");
}

Test(fabric, debians_ibv_rc_pingpong_with_events_runs_between_two_processes, .init = fp_setup,
     .fini = fp_teardown)
{
	expect_both_ran("ibv_rc_pingpong -e", "0");
}

Test(fabric, debians_ibv_uc_pingpong_runs_between_two_processes, .init = fp_setup,
     .fini = fp_teardown)
{
	expect_both_ran("ibv_uc_pingpong", "0");
}

Test(fabric, debians_ibv_ud_pingpong_runs_between_two_processes, .init = fp_setup,
     .fini = fp_teardown)
{
	expect_both_ran("ibv_ud_pingpong", "0");
}

Test(fabric, debians_ibv_srq_pingpong_runs_between_two_processes, .init = fp_setup,
     .fini = fp_teardown)
{
	expect_both_ran("ibv_srq_pingpong", "0");
}

/* The usual start: the server first, the client seconds later in another terminal. The
 * server's HCA waits in the fabric meanwhile; nothing it did is lost. */
Test(fabric, a_pingpong_client_started_seconds_after_its_server_still_meets_it,
     .init = fp_setup, .fini = fp_teardown)
{
	expect_both_ran("ibv_rc_pingpong", "2");
}

/* perftest's bandwidth and latency programs, unmodified, server and client in two processes:
 * both exit 0 and the client prints its result line. Without hcasim-exec their figures are in
 * wall time (docs/fabric.md#perftest); that they complete is what this proves. ib_write_lat
 * polls host memory outside the library: its HCA runs on the device thread. */
Test(fabric, perftest_programs_complete_between_two_processes, .init = fp_setup,
     .fini = fp_teardown)
{
	static const char *const runs[] = {
		"ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw", "ib_send_lat",
		"ib_write_lat", "ib_read_lat", "ib_write_bw -s 65536 -n 1000",
		"ib_read_bw -s 65536 -n 1000", "ib_send_bw -s 65536 -n 1000",
		"ib_atomic_bw -n 1000",
	};

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		char *out = server_client(runs[i], "0");

		cr_expect(strstr(out, "client=0\n") && strstr(out, "server=0\n"), "%s:\n%s",
			  runs[i], out);
		cr_expect(strstr(out, "#bytes"), "%s printed no result:\n%s", runs[i], out);
		free(out);
	}
}
