/* fabric (boot): HCASIM_FABRIC and HCASIM_HOST. Bad values refuse the boot naming the variable
 * and the bad part; the first process writes DIR/fabric.ini and a later one whose
 * configuration differs is refused naming the key; a process holding host N lists exactly
 * hcasim<N>, with the GUID and LID it has in one process; and two processes, host 0 and
 * host 1, exchange an RC SEND and an RDMA WRITE through verbs, byte for byte, the same in two
 * runs to the picosecond. */
#include "sim/pcap.h"
#include "sim/shmchan.h"
#include "tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char fdir[] = "/tmp/hcasim-fabric-boot-XXXXXX";

static void fb_setup(void)
{
	cr_assert_not_null(mkdtemp(fdir));
}

static void fb_teardown(void)
{
	if (!getenv("FB_KEEP"))
		tb_rm_tmpdir(fdir);
}


static void expect_refused(const char *fabric, const char *host, const char *words)
{
	setenv("HCASIM_FABRIC", fabric, 1);
	if (host)
		setenv("HCASIM_HOST", host, 1);
	else
		unsetenv("HCASIM_HOST");
	if (!*fabric)
		unsetenv("HCASIM_FABRIC");
	cr_expect_eq(hcasim_boot(), -EINVAL, "HCASIM_HOST=%s boots", host ? host : "(unset)");
	cr_expect(strstr(hcasim_last_error(), words), "'%s' does not say '%s'",
		  hcasim_last_error(), words);
	cr_expect(!hcasim_booted());
}

Test(fabric, bad_fabric_variables_refuse_the_boot_naming_the_bad_part, .init = fb_setup, .fini = fb_teardown)
{
	expect_refused(fdir, NULL, "HCASIM_FABRIC is set but HCASIM_HOST is not");
	expect_refused("", "0", "HCASIM_HOST is set but HCASIM_FABRIC is not");
	expect_refused(fdir, "2", "HCASIM_HOST '2': host 2 is not in the system (sim.hosts 2");
	expect_refused(fdir, "0,x", "HCASIM_HOST '0,x': 'x' is not a host number");
	expect_refused(fdir, "1,", "HCASIM_HOST '1,': '' is not a host number");
	expect_refused(fdir, "-1", "'-1' is not a host number");
	expect_refused(fdir, "1,1", "HCASIM_HOST '1,1': host 1 is listed twice");
	unsetenv("HCASIM_FABRIC");
	unsetenv("HCASIM_HOST");
}

static void fv_wait_pid(pid_t pid, const char *who)
{
	int st;

	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed (status 0x%x)", who, st);
}

/* A child that holds host 0 of the fabric until fdir/go exists. */
static pid_t hold_host0(void)
{
	struct timespec ms = { 0, 1000000 };
	char ready[300], go[300];
	pid_t pid = fork();

	snprintf(ready, sizeof(ready), "%s/ready", fdir);
	snprintf(go, sizeof(go), "%s/../%s.go", fdir, strrchr(fdir, '/') + 1);
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setenv("HCASIM_FABRIC", fdir, 1);
		setenv("HCASIM_HOST", "0", 1);
		if (hcasim_boot())
			_exit(1);
		close(open(ready, O_CREAT | O_WRONLY, 0600));
		for (int i = 0; access(go, F_OK) && i < 30000; i++)
			nanosleep(&ms, NULL);
		hcasim_shutdown();
		_exit(0);
	}
	for (int i = 0; access(ready, F_OK) && i < 30000; i++)
		nanosleep(&ms, NULL);
	cr_assert_eq(access(ready, F_OK), 0, "host 0's process did not boot");
	unlink(ready);
	return pid;
}

static void release_host0(pid_t pid)
{
	char go[300];

	snprintf(go, sizeof(go), "%s/../%s.go", fdir, strrchr(fdir, '/') + 1);
	close(open(go, O_CREAT | O_WRONLY, 0600));
	fv_wait_pid(pid, "host 0's process");
	unlink(go);
}

Test(fabric, a_process_whose_configuration_differs_is_refused_naming_the_key, .init = fb_setup, .fini = fb_teardown)
{
	char ini[300], *text;
	pid_t pid = hold_host0();

	snprintf(ini, sizeof(ini), "%s/fabric.ini", fdir);
	text = tb_slurp(ini, NULL);
	cr_assert_not_null(text, "the first process wrote %s", ini);
	cr_expect(strstr(text, "[link]\n") && strstr(text, "latency_ns = 100\n") &&
		  strstr(text, "[sim]\n") && strstr(text, "hosts = 2\n"), "%s", text);
	cr_expect(!strstr(text, "pcap"), "link.pcap does not shape the fabric: %s", text);
	free(text);
	/* The same configuration joins; another latency does not. */
	setenv("HCASIM_FABRIC", fdir, 1);
	setenv("HCASIM_HOST", "1", 1);
	cr_assert_eq(hcasim_boot(), 0, "%s", hcasim_last_error());
	hcasim_shutdown();
	tb_config("link.latency_ns", "200");
	cr_expect_eq(hcasim_boot(), -EINVAL);
	cr_expect(strstr(hcasim_last_error(), "config key 'link.latency_ns' is 200 here but 100 in "),
		  "%s", hcasim_last_error());
	tb_config("link.latency_ns", "100");
	/* A host a live process holds is refused, naming it. */
	setenv("HCASIM_HOST", "0", 1);
	cr_expect_eq(hcasim_boot(), -EBUSY);
	cr_expect(strstr(hcasim_last_error(), "HCASIM_HOST: host 0 is held by pid "), "%s",
		  hcasim_last_error());
	release_host0(pid);
	/* The last process out removed the fabric's directory. */
	cr_expect_neq(access(fdir, F_OK), 0, "%s is still there", fdir);
	unsetenv("HCASIM_FABRIC");
	unsetenv("HCASIM_HOST");
}

/* A fabric left by a crashed run: fabric.ini written by its processes, host claims of pids
 * that are gone. The next process replaces them with a word and runs, whatever that run's
 * configuration was. */
Test(fabric, a_fabric_left_by_a_crashed_run_is_replaced_with_a_message, .init = fb_setup,
     .fini = fb_teardown)
{
	char path[300];
	char *out;
	FILE *fp;
	int st;

	snprintf(path, sizeof(path), "%s/fabric.ini", fdir);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("; the fabric's configuration, written by the process that created it\n[link]\n"
	      "latency_ns = 300\n", fp);
	fclose(fp);
	snprintf(path, sizeof(path), "%s/host1", fdir);
	fp = fopen(path, "w");
	cr_assert_not_null(fp);
	fputs("999999999\n", fp); /* beyond pid_max: no such process */
	fclose(fp);
	snprintf(path, sizeof(path), "cd %s && env HCASIM_FABRIC=%s HCASIM_HOST=1 %s "
		 "LD_LIBRARY_PATH=%s/lib ibv_devices 2>&1; echo exit=$?", fdir, fdir, tb_san_env(),
		 HCASIM_BUILD_DIR);
	out = tb_run_cmd(path, &st);
	cr_expect(strstr(out, "host1 was claimed by pid 999999999, which is gone: replaced"),
		  "%s", out);
	cr_expect(strstr(out, "fabric.ini is left from a run whose processes are gone: "
			      "replaced"), "%s", out);
	cr_expect(strstr(out, "hcasim1") && strstr(out, "exit=0"), "%s", out);
	free(out);
	cr_expect_neq(access(fdir, F_OK), 0, "the run, the last one out, removed %s", fdir);
}

/* ---- Two processes: what each host sees and does. */

#define FV_BYTES 8192
#define FV_BUF(h) ((void *)(uintptr_t)(0x7e5000000000ull + (uint64_t)(h) * 0x100000ull))

struct fv_host {
	char name[64];
	uint64_t guid;
	uint16_t lid;
	uint32_t qpn, rkey;
	int ndev;
	uint64_t t[4];	    /* simulated time at each completion polled */
	uint32_t crc;	    /* host 1: of its buffer after the exchange */
	char err[256];
};

struct fv_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static int fv_fail(struct fv_host *o, const char *what)
{
	snprintf(o->err, sizeof(o->err), "%s: %s", what, hcasim_last_error());
	return -1;
}

/* Open dev with a PD, CQ, RC QP and FV_BYTES at FV_BUF(h), filled for host 0. */
static int fv_open(struct ibv_device *dev, int h, struct fv_dev *d, struct fv_host *o)
{
	struct ibv_qp_init_attr qi = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_port_attr pa;

	d->buf = mmap(FV_BUF(h), FV_BYTES, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (d->buf != FV_BUF(h))
		return fv_fail(o, "mmap");
	for (int i = 0; i < FV_BYTES; i++)
		d->buf[i] = h ? 0 : (uint8_t)(i * 7 + 3);
	if (!(d->ctx = ibv_open_device(dev)) || !(d->pd = ibv_alloc_pd(d->ctx)) ||
	    !(d->cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0)))
		return fv_fail(o, "open");
	qi.send_cq = qi.recv_cq = d->cq;
	if (!(d->qp = ibv_create_qp(d->pd, &qi)) ||
	    !(d->mr = ibv_reg_mr(d->pd, d->buf, FV_BYTES, IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE)) || ibv_query_port(d->ctx, 1, &pa))
		return fv_fail(o, "objects");
	snprintf(o->name, sizeof(o->name), "%s", ibv_get_device_name(dev));
	o->guid = ibv_get_device_guid(dev);
	o->lid = pa.lid;
	o->qpn = d->qp->qp_num;
	o->rkey = d->mr->rkey;
	return 0;
}

/* INIT, RTR towards (lid, qpn), RTS. */
static int fv_connect(struct fv_dev *d, uint16_t lid, uint32_t qpn, struct fv_host *o)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	if (ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		return fv_fail(o, "INIT");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				  .dest_qp_num = qpn, .rq_psn = 0x100, .max_dest_rd_atomic = 1,
				  .min_rnr_timer = 1, .ah_attr = { .dlid = lid, .port_num = 1 } };
	if (ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		return fv_fail(o, "RTR");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0x100, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
	if (ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		return fv_fail(o, "RTS");
	return 0;
}

static int fv_post(struct fv_dev *d, enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		   uint64_t raddr, uint32_t rkey, struct fv_host *o)
{
	struct ibv_sge sge = { (uintptr_t)d->buf + off, len, d->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(d->qp, &wr, &bad) ? fv_fail(o, "post_send") : 0;
}

static int fv_recv_at(struct fv_dev *d, uint32_t off, uint32_t len, uint64_t id,
		      struct fv_host *o)
{
	struct ibv_sge sge = { (uintptr_t)d->buf + off, len, d->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(d->qp, &wr, &bad) ? fv_fail(o, "post_recv") : 0;
}

static int fv_recv(struct fv_dev *d, uint32_t off, uint32_t len, struct fv_host *o)
{
	return fv_recv_at(d, off, len, 9, o);
}

/* Poll one completion, successful, and note when. */
static int fv_poll(struct fv_dev *d, uint64_t *t, struct fv_host *o)
{
	struct ibv_wc wc;
	int r;

	while ((r = ibv_poll_cq(d->cq, 1, &wc)) == 0)
		if (hcasim_halted())
			return fv_fail(o, "halted");
	if (r < 0 || wc.status != IBV_WC_SUCCESS)
		return fv_fail(o, r < 0 ? "poll" : ibv_wc_status_str(wc.status));
	*t = hcasim_now_ps();
	return 0;
}

/* Host 0: wait for host 1's "ready", then WRITE 4 KiB into its buffer and SEND 1000 bytes. */
static int fv_host0(struct fv_dev *d, const struct fv_host *peer, struct fv_host *o)
{
	if (fv_connect(d, peer->lid, peer->qpn, o) || fv_recv(d, 8000, 64, o) ||
	    fv_poll(d, &o->t[0], o) ||
	    fv_post(d, IBV_WR_RDMA_WRITE, 0, 4096, (uintptr_t)FV_BUF(1), peer->rkey, o) ||
	    fv_post(d, IBV_WR_SEND, 4096, 1000, 0, 0, o) || fv_poll(d, &o->t[1], o) ||
	    fv_poll(d, &o->t[2], o))
		return -1;
	return 0;
}

/* Host 1: post the receive, say "ready", wait for the SEND (the WRITE is placed before it). */
static int fv_host1(struct fv_dev *d, const struct fv_host *peer, struct fv_host *o)
{
	if (fv_connect(d, peer->lid, peer->qpn, o) || fv_recv(d, 4096, 1000, o) ||
	    fv_post(d, IBV_WR_SEND, 7000, 64, 0, 0, o) || fv_poll(d, &o->t[0], o) ||
	    fv_poll(d, &o->t[1], o))
		return -1;
	o->crc = 0;
	for (int i = 0; i < FV_BYTES; i++)
		o->crc = o->crc * 31 + d->buf[i];
	return 0;
}

static void fv_save(int h, const struct fv_host *o)
{
	char p[300];
	int fd;

	snprintf(p, sizeof(p), "%s/host%d.res", fdir, h);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0 && write(fd, o, sizeof(*o)) != (ssize_t)sizeof(*o))
		fprintf(stderr, "cannot save %s\n", p);
	close(fd);
}

static void fv_load(int h, struct fv_host *o)
{
	char p[300];
	int fd;

	snprintf(p, sizeof(p), "%s/host%d.res", fdir, h);
	fd = open(p, O_RDONLY);
	cr_assert_geq(fd, 0, "no result from host %d", h);
	cr_assert_eq(read(fd, o, sizeof(*o)), (ssize_t)sizeof(*o));
	close(fd);
}

/* The u32 at off of the channel file of link 0, port 1 (0 while there is none). */
static uint32_t chan_u32(size_t off)
{
	char p[300];
	uint32_t v = 0;
	int fd;

	snprintf(p, sizeof(p), "%s/link0.1.chan", fdir);
	fd = open(p, O_RDONLY);
	if (fd >= 0 && pread(fd, &v, 4, (off_t)off) != 4)
		v = 0;
	if (fd >= 0)
		close(fd);
	return fd >= 0 ? v : 0;
}

static const char *fv_pcap_prefix = "two"; /* the two-process runs' captures, in fdir */
static const char *fv_fault_key, *fv_fault_ppm; /* a fault both processes configure */

/* What the hosts of fv_fabric_host do: the exchange (fv_host0, fv_host1), or the death of a
 * peer (kill_host0, kill_host1). */
static int (*fv_role[2])(struct fv_dev *d, const struct fv_host *peer, struct fv_host *o) = {
	fv_host0, fv_host1
};

/* One host in this (child) process of the fabric; peer: what the other host has (from the
 * one-process run). Host 1 boots once host 0's channel exists; host 0 runs once host 1 has
 * attached, so that both start at 0. */
static int fv_fabric_host(int h, const struct fv_host *peer)
{
	struct timespec ms = { 0, 1000000 };
	struct ibv_device **list;
	struct fv_host o = { 0 };
	struct fv_dev d = { 0 };
	int r = -1;

	setenv("HCASIM_FABRIC", fdir, 1);
	setenv("HCASIM_HOST", h ? "1" : "0", 1);
	if (fv_fault_key)
		hcasim_config_set(fv_fault_key, fv_fault_ppm);
	/* Repeatable to the picosecond without hcasim-exec: no device thread, so that a host's
	 * time moves only while its program is in the library (docs/fabric.md#the-device-thread);
	 * both programs stay in it from their first verb to their last. */
	if (fv_role[h] == fv_host0 || fv_role[h] == fv_host1) {
		char pcap[300];

		hcasim_config_set("fabric.device_thread_us", "0");
		/* Each side captures its half; the last one out merges (fv_fabric's prefix). */
		snprintf(pcap, sizeof(pcap), "%s/%s", fdir, fv_pcap_prefix);
		setenv("HCASIM_PCAP", pcap, 1);
	}
	for (int i = 0; h == 1 && !chan_u32(72) && i < 20000; i++)
		nanosleep(&ms, NULL);
	if (hcasim_boot()) {
		fv_fail(&o, "boot");
		goto out;
	}
	for (int i = 0; h == 0 && !chan_u32(76) && i < 20000; i++)
		nanosleep(&ms, NULL);
	list = ibv_get_device_list(&o.ndev);
	if (!list || o.ndev != 1 || fv_open(list[0], h, &d, &o))
		goto out;
	r = fv_role[h](&d, peer, &o);
out:
	fv_save(h, &o);
	hcasim_shutdown(); /* its links say TERMINATE, the last one out removes the channel */
	return r;
}

/* Both hosts in this (child) process: what each has, and the same exchange. */
static int fv_one_process(struct fv_host o[2])
{
	struct ibv_device **list;
	struct fv_dev d[2] = { 0 };
	int n;

	unsetenv("HCASIM_FABRIC");
	unsetenv("HCASIM_HOST");
	{
		char pcap[300];

		snprintf(pcap, sizeof(pcap), "%s/one", fdir);
		setenv("HCASIM_PCAP", pcap, 1);
	}
	list = ibv_get_device_list(&n);
	if (!list || n != 2 || fv_open(list[0], 0, &d[0], &o[0]) ||
	    fv_open(list[1], 1, &d[1], &o[1]))
		return -1;
	o[0].ndev = o[1].ndev = n;
	if (fv_connect(&d[0], o[1].lid, o[1].qpn, &o[0]) ||
	    fv_connect(&d[1], o[0].lid, o[0].qpn, &o[1]) || fv_recv(&d[1], 4096, 1000, &o[1]) ||
	    fv_recv(&d[0], 8000, 64, &o[0]) || fv_post(&d[1], IBV_WR_SEND, 7000, 64, 0, 0, &o[1]) ||
	    fv_poll(&d[0], &o[0].t[0], &o[0]) ||
	    fv_post(&d[0], IBV_WR_RDMA_WRITE, 0, 4096, (uintptr_t)FV_BUF(1), o[1].rkey, &o[0]) ||
	    fv_post(&d[0], IBV_WR_SEND, 4096, 1000, 0, 0, &o[0]) || fv_poll(&d[1], &o[1].t[0], &o[1]) ||
	    fv_poll(&d[1], &o[1].t[1], &o[1]) || fv_poll(&d[0], &o[0].t[1], &o[0]) ||
	    fv_poll(&d[0], &o[0].t[2], &o[0]))
		return -1;
	for (int i = 0; i < FV_BYTES; i++)
		o[1].crc = o[1].crc * 31 + d[1].buf[i];
	return 0;
}

/* The one-process reference, in a child (this process must not boot). */
static void fv_reference(struct fv_host one[2])
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct fv_host o[2] = { 0 };
		int r = fv_one_process(o);

		fv_save(0, &o[0]);
		fv_save(1, &o[1]);
		hcasim_shutdown(); /* the capture complete */
		_exit(r ? 1 : 0);
	}
	fv_wait_pid(pid, "the one-process run");
	fv_load(0, &one[0]);
	fv_load(1, &one[1]);
}

/* Host 0 and host 1 in two processes. */
static void fv_fabric(const struct fv_host one[2], struct fv_host got[2])
{
	pid_t pid[2];

	for (int h = 0; h < 2; h++) {
		pid[h] = fork();
		cr_assert_geq(pid[h], 0);
		if (pid[h] == 0)
			_exit(fv_fabric_host(h, &one[!h]) ? 1 : 0);
	}
	for (int h = 0; h < 2; h++) {
		int st;

		cr_assert_eq(waitpid(pid[h], &st, 0), pid[h]);
		fv_load(h, &got[h]);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "host %d failed: %s", h,
			  got[h].err);
	}
	cr_assert(!got[0].err[0] && !got[1].err[0]);
}

/* The merged capture of the two-process run against the one-process run's: the same frames,
 * byte for byte, in the same order, each off by the runs' offset (ps, a whole number of ns) —
 * give or take 10 ns: the first SEND and its ACK leave 10 ns earlier, relative to the
 * completions, than in one process (docs/fabric.md#capture). */
static void fv_expect_merged_capture(uint64_t off_ps)
{
	struct sim_pcap_reader *r[2];
	struct sim_pcap_rec a, b;
	char p[2][300];
	int n = 0, ra, rb;

	snprintf(p[0], sizeof(p[0]), "%s/one.link0.pcap", fdir);
	snprintf(p[1], sizeof(p[1]), "%s/two.link0.pcap", fdir);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(sim_pcap_reader_open(&r[i], p[i]), 0, "%s", p[i]);
	for (;;) {
		ra = sim_pcap_reader_next(r[0], &a);
		rb = sim_pcap_reader_next(r[1], &b);
		cr_assert_eq(ra, rb, "frame %d: one capture ends before the other", n);
		if (ra <= 0)
			break;
		cr_expect_eq(a.len, b.len, "frame %d: %zu and %zu bytes", n, a.len, b.len);
		cr_expect(a.len == b.len && !memcmp(a.data, b.data, a.len), "frame %d differs", n);
		cr_expect(a.t_ns - b.t_ns >= off_ps / 1000 && a.t_ns - b.t_ns <= off_ps / 1000 + 10,
			  "frame %d at %llu ns, in one process %llu", n, (unsigned long long)b.t_ns,
			  (unsigned long long)a.t_ns);
		fprintf(stderr, "%s%llu", n ? " " : "fabric: frames off by (ns):",
			(unsigned long long)(a.t_ns - b.t_ns));
		n++;
	}
	cr_expect_eq(ra, 0);
	cr_expect_geq(n, 9, "%d frames", n);
	fprintf(stderr, "\nfabric: the merged capture holds the one-process run's %d frames\n", n);
	for (int i = 0; i < 2; i++)
		sim_pcap_reader_close(r[i]);
	snprintf(p[0], sizeof(p[0]), "%s/two.link0.pcap.part0", fdir);
	cr_expect_neq(access(p[0], F_OK), 0, "the parts are removed once merged");
}

static void fv_expect_same_file(const char *x, const char *y)
{
	char p[2][300];
	size_t n[2];
	char *t[2];

	for (int i = 0; i < 2; i++) {
		snprintf(p[i], sizeof(p[i]), "%s/%s", fdir, i ? y : x);
		t[i] = tb_slurp(p[i], &n[i]);
		cr_assert_not_null(t[i], "%s", p[i]);
	}
	cr_expect(n[0] == n[1] && !memcmp(t[0], t[1], n[0]), "%s and %s differ", x, y);
	free(t[0]);
	free(t[1]);
}

Test(fabric, two_processes_hold_one_host_each_and_exchange_rc_traffic_through_verbs, .init = fb_setup, .fini = fb_teardown)
{
	struct fv_host one[2], a[2], b[2];

	fv_reference(one);
	cr_assert_eq(one[1].crc != 0, 1);
	fv_fabric(one, a);
	for (int h = 0; h < 2; h++) {
		cr_expect_eq(a[h].ndev, 1, "host %d's process lists %d devices", h, a[h].ndev);
		cr_expect_str_eq(a[h].name, one[h].name);
		cr_expect_eq(a[h].guid, one[h].guid, "host %d: GUID", h);
		cr_expect_eq(a[h].lid, one[h].lid, "host %d: LID %u, in one process %u", h,
			     a[h].lid, one[h].lid);
		cr_expect_eq(a[h].qpn, one[h].qpn);
		cr_expect_eq(a[h].rkey, one[h].rkey);
	}
	cr_expect_eq(a[1].crc, one[1].crc, "host 1's buffer after the WRITE and the SEND");
	fprintf(stderr, "fabric: one process: host0 %llu %llu %llu host1 %llu %llu; "
		"two: host0 %llu %llu %llu host1 %llu %llu\n",
		(unsigned long long)one[0].t[0], (unsigned long long)one[0].t[1],
		(unsigned long long)one[0].t[2], (unsigned long long)one[1].t[0],
		(unsigned long long)one[1].t[1], (unsigned long long)a[0].t[0],
		(unsigned long long)a[0].t[1], (unsigned long long)a[0].t[2],
		(unsigned long long)a[1].t[0], (unsigned long long)a[1].t[1]);
	/* From host 0's first completion on, the exchange takes the same simulated time as in one
	 * process: every completion is the one-process time less one offset (the one process
	 * probes its two HCAs one after the other, the two processes each their own at once). */
	for (int h = 0; h < 2; h++)
		for (int i = 0; i < (h ? 2 : 3); i++)
			cr_expect_eq(one[h].t[i] - a[h].t[i], one[0].t[0] - a[0].t[0],
				     "host %d completion %d: %llu ps, in one process %llu", h, i,
				     (unsigned long long)a[h].t[i], (unsigned long long)one[h].t[i]);
	fv_expect_merged_capture(one[0].t[0] - a[0].t[0]);
	/* Again: the same, to the picosecond, and the same capture to the byte. */
	fv_pcap_prefix = "again";
	fv_fabric(one, b);
	fv_pcap_prefix = "two";
	fv_expect_same_file("two.link0.pcap", "again.link0.pcap");
	cr_expect_eq(b[1].crc, a[1].crc);
	for (int h = 0; h < 2; h++)
		for (int i = 0; i < 3; i++)
			cr_expect_eq(b[h].t[i], a[h].t[i], "host %d completion %d at %llu ps, "
				     "before %llu", h, i, (unsigned long long)b[h].t[i],
				     (unsigned long long)a[h].t[i]);
}

/* A child that claims side of the channel at path, writes a frame stamped 5 ns and dies
 * without leaving. */
static void crash_on_channel(const char *path, int side)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct sim_chan_params p;
		struct sim_chan *c;
		uint8_t frame[64] = { 0x5a };

		sim_chan_default_params(&p, 100000);
		_exit(sim_chan_join(&c, path, side, &p) ||
		      sim_chan_send_packet(c, 5000, 0, frame, sizeof(frame)) ? 1 : 0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

Test(fabric, a_channel_left_by_a_crashed_run_is_replaced_with_a_message,
     .init = fb_setup, .fini = fb_teardown)
{
	char path[300], *err;
	struct ibv_device **list;
	int n;

	snprintf(path, sizeof(path), "%s/link0.1.chan", fdir);
	crash_on_channel(path, 0);
	crash_on_channel(path, 1);
	cr_assert_eq(chan_u32(4096 + 63) & 0x7f, 0x40, "the crashed run's frame is in ring 0");
	setenv("HCASIM_FABRIC", fdir, 1);
	setenv("HCASIM_HOST", "0", 1);
	tb_stderr_capture();
	cr_assert_eq(hcasim_boot(), 0, "%s", hcasim_last_error());
	err = tb_stderr_captured();
	cr_expect(strstr(err, "link0.1.chan was left by processes that are gone") &&
		  strstr(err, "replaced"), "stderr: %s", err);
	free(err);
	cr_expect_eq(chan_u32(72), (uint32_t)getpid(), "a fresh file, side 0 ours");
	cr_expect_eq(chan_u32(76), 0, "side 1 unclaimed");
	cr_expect_eq(chan_u32(4096 + 63), 0, "its rings empty");
	list = ibv_get_device_list(&n);
	cr_expect(list && n == 1, "host 0 alone runs: %d devices (%s)", n, hcasim_last_error());
	hcasim_run_for_ps(1000000);
	cr_expect(!hcasim_halted(), "%s", hcasim_halted());
	ibv_free_device_list(list);
	hcasim_shutdown();
	unsetenv("HCASIM_FABRIC");
	unsetenv("HCASIM_HOST");
}

/* Host 0 boots and runs 1 ms alone, says so (DIR/go), and runs on in steps of 10 us until
 * host 1 has attached, then 100 us more; host 1 boots once host 0 has said so. */
static int late_host(int h, uint64_t *start)
{
	struct timespec ms = { 0, 1000000 };
	struct ibv_device **list = NULL;
	char go[300];
	int n = 0, i;

	snprintf(go, sizeof(go), "%s/go", fdir);
	setenv("HCASIM_FABRIC", fdir, 1);
	setenv("HCASIM_HOST", h ? "1" : "0", 1);
	if (h == 0) {
		list = ibv_get_device_list(&n);
		hcasim_run_for_ps(1000000000ull - hcasim_now_ps());
		close(open(go, O_CREAT | O_WRONLY, 0600));
		for (i = 0; chan_u32(76) == 0 && i < 200000; i++)
			hcasim_run_for_ps(10000000ull);
		hcasim_run_for_ps(100000000ull);
	} else {
		for (i = 0; access(go, F_OK) && i < 20000; i++)
			nanosleep(&ms, NULL);
		if (hcasim_boot())
			return -1;
		*start = hcasim_now_ps();
		list = ibv_get_device_list(&n);
	}
	if (list)
		ibv_free_device_list(list);
	hcasim_shutdown();
	return n == 1 && !hcasim_halted() ? 0 : -1;
}

Test(fabric, a_host_booting_late_starts_at_the_time_the_running_host_has_reached,
     .init = fb_setup, .fini = fb_teardown)
{
	uint64_t *start = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid[2];

	cr_assert_neq(start, MAP_FAILED);
	*start = 0;
	for (int h = 0; h < 2; h++) {
		pid[h] = fork();
		cr_assert_geq(pid[h], 0);
		if (pid[h] == 0)
			_exit(late_host(h, start) ? 1 : 0);
	}
	fv_wait_pid(pid[0], "host 0");
	fv_wait_pid(pid[1], "host 1");
	fprintf(stderr, "fabric: host 1 booted late, at %llu ps\n", (unsigned long long)*start);
	cr_expect_geq(*start, 1000000000ull, "host 1 started at %llu ps, host 0 had run 1 ms",
		      (unsigned long long)*start);
	munmap(start, 4096);
}

/* ---- A peer that dies: killed mid-transfer, it says no TERMINATE; the survivor notices its
 * pid gone, the link goes dark, and its QP ends as on a cable to a machine switched off. */

static uint64_t *kill_shared; /* [0] last success, [1] error, [2] its status, [3] successes */
static pid_t kill_pid[2];

/* Whatever happened, no host is left behind. */
static void kill_teardown(void)
{
	for (int h = 0; h < 2; h++)
		if (kill_pid[h] > 0 && !kill(kill_pid[h], SIGKILL))
			waitpid(kill_pid[h], NULL, 0);
	fv_role[0] = fv_host0;
	fv_role[1] = fv_host1;
	fb_teardown();
}

/* Host 1: connected, it says so and sits outside the library (its device thread answers)
 * until it is killed. */
static int kill_host1(struct fv_dev *d, const struct fv_host *peer, struct fv_host *o)
{
	char ready[300];

	if (fv_connect(d, peer->lid, peer->qpn, o))
		return -1;
	snprintf(ready, sizeof(ready), "%s/ready", fdir);
	close(open(ready, O_CREAT | O_WRONLY, 0600));
	for (;;)
		pause();
}

/* Host 0: once host 1 is ready, 4 KiB RDMA WRITEs one at a time until one fails. */
static int kill_host0(struct fv_dev *d, const struct fv_host *peer, struct fv_host *o)
{
	struct timespec ms = { 0, 1000000 };
	char ready[300];
	struct ibv_wc wc;
	int r;

	if (fv_connect(d, peer->lid, peer->qpn, o))
		return -1;
	snprintf(ready, sizeof(ready), "%s/ready", fdir);
	for (int i = 0; access(ready, F_OK) && i < 20000; i++)
		nanosleep(&ms, NULL);
	for (;;) {
		if (fv_post(d, IBV_WR_RDMA_WRITE, 0, 4096, (uintptr_t)FV_BUF(1), peer->rkey, o))
			return -1;
		while ((r = ibv_poll_cq(d->cq, 1, &wc)) == 0)
			if (hcasim_halted())
				return fv_fail(o, "halted");
		if (r < 0)
			return fv_fail(o, "poll");
		if (wc.status != IBV_WC_SUCCESS)
			break;
		kill_shared[0] = hcasim_now_ps();
		__atomic_add_fetch(&kill_shared[3], 1, __ATOMIC_SEQ_CST);
	}
	kill_shared[1] = hcasim_now_ps();
	kill_shared[2] = wc.status;
	return 0;
}

Test(fabric, a_peer_killed_mid_transfer_ends_the_survivors_qp_in_retry_exceeded,
     .init = fb_setup, .fini = kill_teardown)
{
	struct timespec ms = { 0, 1000000 };
	/* fv_connect: timeout 14 (4.096 us x 2^14 = 67.108864 ms), retry_cnt 7 */
	const uint64_t ack_ps = 4096000ull << 14, bound = 8 * ack_ps;
	struct fv_host one[2], got;
	pid_t *pid = kill_pid;
	int st, i;

	kill_shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(kill_shared, MAP_FAILED);
	fv_reference(one);
	fv_role[0] = kill_host0;
	fv_role[1] = kill_host1;
	for (int h = 0; h < 2; h++) {
		pid[h] = fork();
		cr_assert_geq(pid[h], 0);
		if (pid[h] == 0)
			_exit(fv_fabric_host(h, &one[!h]) ? 1 : 0);
	}
	for (i = 0; __atomic_load_n(&kill_shared[3], __ATOMIC_SEQ_CST) < 20 && i < 20000; i++)
		nanosleep(&ms, NULL);
	cr_assert_geq(kill_shared[3], 20, "host 0 completed %llu WRITEs",
		      (unsigned long long)kill_shared[3]);
	cr_assert_eq(kill(pid[1], SIGKILL), 0);
	cr_assert_eq(waitpid(pid[1], &st, 0), pid[1]);
	cr_assert_eq(waitpid(pid[0], &st, 0), pid[0]);
	pid[0] = pid[1] = 0;
	fv_load(0, &got);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "host 0 failed: %s", got.err);
	fprintf(stderr, "fabric: peer killed after %llu WRITEs: last at %llu ps, %s at %llu ps\n",
		(unsigned long long)kill_shared[3], (unsigned long long)kill_shared[0],
		ibv_wc_status_str((enum ibv_wc_status)kill_shared[2]),
		(unsigned long long)kill_shared[1]);
	cr_expect_eq(kill_shared[2], IBV_WC_RETRY_EXC_ERR, "%s",
		     ibv_wc_status_str((enum ibv_wc_status)kill_shared[2]));
	/* The WRITE in flight at the kill is sent and retried retry_cnt times, each after the
	 * ACK timeout: the error comes (retry_cnt + 1) timeouts after it was posted. */
	cr_expect_geq(kill_shared[1] - kill_shared[0], bound, "error %llu ps after the last "
		      "success", (unsigned long long)(kill_shared[1] - kill_shared[0]));
	cr_expect_leq(kill_shared[1] - kill_shared[0], bound + 100000000, "error %llu ps after "
		      "the last success (the next post, its frame and the timer's tick: < 100 us)",
		      (unsigned long long)(kill_shared[1] - kill_shared[0]));
	munmap(kill_shared, 4096);
}

/* ---- Faults across the cut: each side's injector runs in its own process, on the frames it
 * sends (drop, duplicate, reorder, corrupt), and RC delivers every message exactly once, in
 * order, as in one process (suite faults). */

#define FX_MSGS 64
#define FX_LEN 64

/* The faults side h's injector put on the frames it sent (all kinds). */
static uint64_t faults_of(int h)
{
	uint64_t n[5] = { 0 }, sum = 0;

	if (hcasim_link_fault_counts(0, h, n))
		return 0;
	for (int i = 0; i < 5; i++)
		sum += n[i];
	return sum;
}

/* Host 0: FX_MSGS SENDs of FX_LEN bytes, message i filled with (i, i * 7 + byte), up to 4
 * outstanding; every completion a success. */
static int fault_host0(struct fv_dev *d, const struct fv_host *peer, struct fv_host *o)
{
	int posted = 0, done = 0;

	if (fv_connect(d, peer->lid, peer->qpn, o))
		return -1;
	while (done < FX_MSGS) {
		while (posted < FX_MSGS && posted - done < 4) {
			uint8_t *m = d->buf + (posted % 4) * FX_LEN;

			for (int b = 0; b < FX_LEN; b++)
				m[b] = (uint8_t)(b ? posted * 7 + b : posted);
			if (fv_post(d, IBV_WR_SEND, (uint32_t)(posted % 4) * FX_LEN, FX_LEN, 0, 0, o))
				return -1;
			posted++;
		}
		if (fv_poll(d, &o->t[0], o))
			return -1;
		done++;
	}
	o->t[1] = faults_of(0);
	return 0;
}

/* Host 1: four receives posted at a time, FX_MSGS completions; message i must be the i-th,
 * whole and intact. o->crc counts the ones that are. */
static int fault_host1(struct fv_dev *d, const struct fv_host *peer, struct fv_host *o)
{
	struct ibv_wc wc;
	int r;

	if (fv_connect(d, peer->lid, peer->qpn, o))
		return -1;
	for (int i = 0; i < 4; i++)
		if (fv_recv_at(d, (uint32_t)i * FX_LEN, FX_LEN, (uint64_t)i, o))
			return -1;
	for (int i = 0; i < FX_MSGS; i++) {
		const uint8_t *m;
		bool ok = true;

		while ((r = ibv_poll_cq(d->cq, 1, &wc)) == 0)
			if (hcasim_halted())
				return fv_fail(o, "halted");
		if (r < 0 || wc.status != IBV_WC_SUCCESS)
			return fv_fail(o, r < 0 ? "poll" : ibv_wc_status_str(wc.status));
		m = d->buf + (wc.wr_id % 4) * FX_LEN;
		for (int b = 0; b < FX_LEN; b++)
			ok &= m[b] == (uint8_t)(b ? i * 7 + b : i);
		o->crc += ok && wc.byte_len == FX_LEN && wc.wr_id == (uint64_t)i;
		if (i + 4 < FX_MSGS &&
		    fv_recv_at(d, (uint32_t)(wc.wr_id % 4) * FX_LEN, FX_LEN, (uint64_t)i + 4, o))
			return -1;
	}
	o->t[0] = hcasim_now_ps();
	o->t[1] = faults_of(1);
	/* Its HCA stays up until host 0 has left (the last ACK may still be on its way, or held
	 * by a reorder): then nothing more can come (EDEADLK). */
	{
		struct ibv_async_event ev;

		while (!ibv_get_async_event(d->ctx, &ev))
			ibv_ack_async_event(&ev);
	}
	return 0;
}

Test(fabric, faults_across_the_cut_deliver_every_message_exactly_once_in_order,
     .init = fb_setup, .fini = fb_teardown)
{
	static const char *const kinds[] = { "fault.drop_ppm", "fault.dup_ppm",
					     "fault.reorder_ppm", "fault.corrupt_ppm" };
	static const char *const rates[] = { "10000", "100000" }; /* 1 %, 10 % */
	struct fv_host one[2], got[2];

	fv_reference(one);
	fv_role[0] = fault_host0;
	fv_role[1] = fault_host1;
	for (size_t k = 0; k < 4; k++)
		for (size_t r = 0; r < 2; r++) {
			fv_fault_key = kinds[k];
			fv_fault_ppm = rates[r];
			fv_fabric(one, got);
			cr_expect_eq(got[1].crc, FX_MSGS, "%s=%s: %u of %d messages whole, in order "
				     "and once", kinds[k], rates[r], got[1].crc, FX_MSGS);
			fprintf(stderr, "fabric: %s=%s: %u of %d messages exactly once, the last at "
				"%llu ps; faults injected %llu + %llu\n", kinds[k], rates[r], got[1].crc,
				FX_MSGS, (unsigned long long)got[1].t[0],
				(unsigned long long)got[0].t[1], (unsigned long long)got[1].t[1]);
			if (r == 1)
				cr_expect_gt(got[0].t[1] + got[1].t[1], 0, "%s=%s: no fault injected",
					     kinds[k], rates[r]);
		}
	fv_fault_key = fv_fault_ppm = NULL;
	fv_role[0] = fv_host0;
	fv_role[1] = fv_host1;
}

/* ---- A wait that can never end, decided for the whole fabric: both hosts wait in
 * ibv_get_cq_event for a completion nothing will produce, with nothing in flight. Each gets
 * EDEADLK, as one process does, at once (not after fabric.join_timeout_ms). */
static int deadlock_host(struct fv_dev *d, const struct fv_host *peer, struct fv_host *o)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(d->ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(d->ctx, 4, NULL, ch, 0) : NULL, *got;
	struct timespec a, b;
	void *ctx;
	int r;

	if (!cq || fv_connect(d, peer->lid, peer->qpn, o) || ibv_req_notify_cq(cq, 0))
		return fv_fail(o, "set-up");
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = ibv_get_cq_event(ch, &got, &ctx);
	o->t[0] = r ? (uint64_t)errno : 0;
	clock_gettime(CLOCK_MONOTONIC, &b);
	o->t[1] = (uint64_t)((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000);
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(ch);
	return 0;
}

Test(fabric, a_wait_no_host_can_end_returns_edeadlk_on_both_sides, .init = fb_setup,
     .fini = fb_teardown)
{
	struct fv_host one[2], got[2];

	fv_reference(one);
	fv_role[0] = fv_role[1] = deadlock_host;
	fv_fabric(one, got);
	fv_role[0] = fv_host0;
	fv_role[1] = fv_host1;
	for (int h = 0; h < 2; h++) {
		cr_expect_eq(got[h].t[0], EDEADLK, "host %d: ibv_get_cq_event ended with errno %llu",
			     h, (unsigned long long)got[h].t[0]);
		cr_expect_lt(got[h].t[1], 5000, "host %d waited %llu ms", h,
			     (unsigned long long)got[h].t[1]);
	}
	fprintf(stderr, "fabric: both hosts' waits ended with EDEADLK after %llu and %llu ms\n",
		(unsigned long long)got[0].t[1], (unsigned long long)got[1].t[1]);
}

/* hcasim-fabric DIR starts a fabric without holding a host: its fabric.ini decides, a process
 * whose configuration differs is refused, one that agrees runs, and the file stays when the
 * last process leaves (it is the fabric's, as a user's would be). */
Test(fabric, hcasim_fabric_starts_a_fabric_that_processes_must_agree_with, .init = fb_setup,
     .fini = fb_teardown)
{
	char cmd[1200], dir[300], ini[400], *out;
	int st;

	snprintf(dir, sizeof(dir), "%s/f", fdir);
	snprintf(ini, sizeof(ini), "%s/l.ini", fdir);
	{
		FILE *fp = fopen(ini, "w");

		cr_assert_not_null(fp);
		fputs("[link]\nlatency_ns = 200\n", fp);
		fclose(fp);
	}
	snprintf(cmd, sizeof(cmd), "HCASIM_CONFIG=%s %s/bin/hcasim-fabric %s; echo exit=$?; "
		 "%s/bin/hcasim-fabric %s 2>&1; echo exit=$?; %s/bin/hcasim-fabric 2>&1; "
		 "echo exit=$?", ini, HCASIM_BUILD_DIR, dir, HCASIM_BUILD_DIR, dir,
		 HCASIM_BUILD_DIR);
	out = tb_run_cmd(cmd, &st);
	cr_expect(strstr(out, "fabric.ini written (2 hosts, link latency 200 ns)\nexit=0\n"), "%s",
		  out);
	cr_expect(strstr(out, "config key 'link.latency_ns' is 100 here but 200 in ") &&
		  strstr(out, "exit=1\n") && strstr(out, "usage: hcasim-fabric DIR") &&
		  strstr(out, "exit=2\n"), "%s", out);
	free(out);
	setenv("HCASIM_FABRIC", dir, 1);
	setenv("HCASIM_HOST", "0", 1);
	cr_expect_eq(hcasim_boot(), -EINVAL);
	cr_expect(strstr(hcasim_last_error(), "'link.latency_ns' is 100 here but 200"), "%s",
		  hcasim_last_error());
	tb_config("link.latency_ns", "200");
	cr_assert_eq(hcasim_boot(), 0, "%s", hcasim_last_error());
	hcasim_shutdown();
	snprintf(ini, sizeof(ini), "%s/fabric.ini", dir);
	cr_expect_eq(access(ini, F_OK), 0, "hcasim-fabric's %s was removed", ini);
	unsetenv("HCASIM_FABRIC");
	unsetenv("HCASIM_HOST");
}
