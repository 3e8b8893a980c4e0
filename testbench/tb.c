/* Shared test fixtures (see tb.h). */
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void tb_config(const char *key, const char *value)
{
	int rc = hcasim_config_set(key, value);

	cr_assert_eq(rc, 0, "hcasim_config_set(%s, %s): %s", key, value, hcasim_last_error());
}

void tb_open(struct tb_dev *t, int index)
{
	int n = 0;

	memset(t, 0, sizeof(*t));
	t->list = ibv_get_device_list(&n);
	cr_assert_not_null(t->list, "ibv_get_device_list: %s", hcasim_last_error());
	cr_assert_gt(n, index, "only %d devices", n);
	t->ctx = ibv_open_device(t->list[index]);
	cr_assert_not_null(t->ctx, "ibv_open_device: %s", hcasim_last_error());
	cr_assert_eq(ibv_query_device(t->ctx, &t->attr), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_query_port(t->ctx, 1, &t->port), 0, "%s", hcasim_last_error());
	t->pd = ibv_alloc_pd(t->ctx);
	cr_assert_not_null(t->pd, "ibv_alloc_pd: %s", hcasim_last_error());
	t->cq = ibv_create_cq(t->ctx, 64, NULL, NULL, 0);
	cr_assert_not_null(t->cq, "ibv_create_cq: %s", hcasim_last_error());
}

void tb_close(struct tb_dev *t)
{
	if (t->cq)
		ibv_destroy_cq(t->cq);
	if (t->pd)
		ibv_dealloc_pd(t->pd);
	if (t->ctx)
		ibv_close_device(t->ctx);
	if (t->list)
		ibv_free_device_list(t->list);
	memset(t, 0, sizeof(*t));
}

struct ibv_qp *tb_create_qp(struct tb_dev *t, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr init = {
		.send_cq = t->cq,
		.recv_cq = t->cq,
		.qp_type = type,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(t->pd, &init);

	cr_assert_not_null(qp, "ibv_create_qp(type %d): %s", type, hcasim_last_error());
	return qp;
}

void tb_qp_snap(struct ibv_qp *qp, struct tb_qp_snap *s)
{
	memset(s, 0, sizeof(*s));
	cr_assert_eq(ibv_query_qp(qp, &s->attr, 0x1fffff, &s->init), 0, "ibv_query_qp: %s",
		     hcasim_last_error());
}

static bool ah_equal(const struct ibv_ah_attr *a, const struct ibv_ah_attr *b)
{
	return !memcmp(a->grh.dgid.raw, b->grh.dgid.raw, 16) &&
	       a->grh.flow_label == b->grh.flow_label && a->grh.sgid_index == b->grh.sgid_index &&
	       a->grh.hop_limit == b->grh.hop_limit &&
	       a->grh.traffic_class == b->grh.traffic_class && a->dlid == b->dlid &&
	       a->sl == b->sl && a->src_path_bits == b->src_path_bits &&
	       a->static_rate == b->static_rate && a->is_global == b->is_global &&
	       a->port_num == b->port_num;
}

bool tb_qp_snap_equal(const struct tb_qp_snap *a, const struct tb_qp_snap *b, char *why,
		      size_t len)
{
	const struct ibv_qp_attr *x = &a->attr, *y = &b->attr;

#define SAME(f)                                                                                    \
	do {                                                                                       \
		if (x->f != y->f) {                                                                \
			snprintf(why, len, #f ": %lld != %lld", (long long)x->f,                   \
				 (long long)y->f);                                                 \
			return false;                                                              \
		}                                                                                  \
	} while (0)
	SAME(qp_state);
	SAME(cur_qp_state);
	SAME(path_mtu);
	SAME(path_mig_state);
	SAME(qkey);
	SAME(rq_psn);
	SAME(sq_psn);
	SAME(dest_qp_num);
	SAME(qp_access_flags);
	SAME(cap.max_send_wr);
	SAME(cap.max_recv_wr);
	SAME(cap.max_send_sge);
	SAME(cap.max_recv_sge);
	SAME(cap.max_inline_data);
	SAME(pkey_index);
	SAME(alt_pkey_index);
	SAME(en_sqd_async_notify);
	SAME(sq_draining);
	SAME(max_rd_atomic);
	SAME(max_dest_rd_atomic);
	SAME(min_rnr_timer);
	SAME(port_num);
	SAME(timeout);
	SAME(retry_cnt);
	SAME(rnr_retry);
	SAME(alt_port_num);
	SAME(alt_timeout);
#undef SAME
	if (!ah_equal(&x->ah_attr, &y->ah_attr)) {
		snprintf(why, len, "ah_attr differs");
		return false;
	}
	if (!ah_equal(&x->alt_ah_attr, &y->alt_ah_attr)) {
		snprintf(why, len, "alt_ah_attr differs");
		return false;
	}
	if (a->init.qp_type != b->init.qp_type || a->init.sq_sig_all != b->init.sq_sig_all ||
	    a->init.send_cq != b->init.send_cq || a->init.recv_cq != b->init.recv_cq ||
	    a->init.srq != b->init.srq || memcmp(&a->init.cap, &b->init.cap, sizeof(a->init.cap))) {
		snprintf(why, len, "init_attr differs");
		return false;
	}
	return true;
}

void tb_valid_attrs(struct tb_dev *t, struct ibv_qp_attr *a)
{
	union ibv_gid gid;

	memset(a, 0, sizeof(*a));
	cr_assert_eq(ibv_query_gid(t->ctx, 1, 0, &gid), 0, "%s", hcasim_last_error());
	a->pkey_index = 0;
	a->port_num = 1;
	a->qkey = 0x11111111;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = 0x123;
	a->rq_psn = 0x1234;
	a->sq_psn = 0x4321;
	a->max_dest_rd_atomic = 1;
	a->max_rd_atomic = 1;
	a->min_rnr_timer = 12;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->en_sqd_async_notify = 1;
	a->path_mig_state = IBV_MIG_MIGRATED;
	a->ah_attr.dlid = t->port.lid ? t->port.lid : 1;
	a->ah_attr.sl = 0;
	a->ah_attr.port_num = 1;
	a->ah_attr.is_global = t->port.link_layer == IBV_LINK_LAYER_ETHERNET;
	a->ah_attr.grh.dgid = gid;
	a->ah_attr.grh.hop_limit = 1;
	a->alt_ah_attr = a->ah_attr;
	a->alt_port_num = 1;
	a->alt_pkey_index = 0;
	a->alt_timeout = 14;
}

unsigned tb_rc_timeout = 14;
unsigned tb_rc_retry_cnt = 7, tb_rc_rnr_retry = 7, tb_rc_min_rnr_timer = 1;

void tb_connect(struct tb_dev *t, struct ibv_qp *qp, struct tb_dev *peer, uint32_t peer_qpn,
		enum ibv_mtu mtu)
{
	tb_connect_port(qp, 1, peer->ctx, 1, peer->port.lid,
			t->port.link_layer == IBV_LINK_LAYER_ETHERNET, peer_qpn, mtu);
}

void tb_connect_port(struct ibv_qp *qp, uint8_t port, struct ibv_context *peer_ctx,
		     uint8_t peer_port, uint16_t peer_lid, bool global, uint32_t peer_qpn,
		     enum ibv_mtu mtu)
{
	struct ibv_qp_attr a;
	union ibv_gid gid;
	int m;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	m = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = TB_QKEY;
		m |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC;
		m |= IBV_QP_ACCESS_FLAGS;
	}
	cr_assert_eq(ibv_modify_qp(qp, &a, m), 0, "INIT: %s", hcasim_last_error());
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	m = IBV_QP_STATE;
	if (qp->qp_type != IBV_QPT_UD) {
		cr_assert_eq(ibv_query_gid(peer_ctx, peer_port, 0, &gid), 0);
		a.path_mtu = mtu;
		a.dest_qp_num = peer_qpn;
		a.rq_psn = 0x100;
		a.ah_attr.dlid = peer_lid;
		a.ah_attr.port_num = port;
		a.ah_attr.is_global = global;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.hop_limit = 1;
		m |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (qp->qp_type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = (uint8_t)tb_rc_min_rnr_timer;
			m |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	cr_assert_eq(ibv_modify_qp(qp, &a, m), 0, "RTR: %s", hcasim_last_error());
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x100;
	m = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = (uint8_t)tb_rc_timeout;
		a.retry_cnt = (uint8_t)tb_rc_retry_cnt;
		a.rnr_retry = (uint8_t)tb_rc_rnr_retry;
		a.max_rd_atomic = 4;
		m |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	cr_assert_eq(ibv_modify_qp(qp, &a, m), 0, "RTS: %s", hcasim_last_error());
}

void tb_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	int got = 0;
	uint64_t start = hcasim_now_ps();

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		cr_assert_geq(r, 0, "ibv_poll_cq: %s", hcasim_last_error());
		got += r;
		cr_assert_lt(hcasim_now_ps() - start, 1000000000000ull,
			     "only %d of %d completions after 1 s simulated", got, n);
	}
}

struct ibv_mr *tb_mr(struct tb_dev *t, size_t len)
{
	void *buf = NULL;
	struct ibv_mr *mr;

	cr_assert_eq(posix_memalign(&buf, 4096, len ? len : 1), 0);
	memset(buf, 0, len);
	mr = ibv_reg_mr(t->pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	cr_assert_not_null(mr, "ibv_reg_mr: %s", hcasim_last_error());
	return mr;
}

char *tb_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fseek(f, 0, SEEK_END), 0, "%s: seek", path);
	n = ftell(f);
	cr_assert_geq(n, 0, "%s: size", path);
	rewind(f);
	buf = malloc((size_t)n + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n, "%s: short read", path);
	buf[n] = 0;
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

void tb_pair_open(struct tb_pair *p, enum ibv_qp_type type, size_t bytes, unsigned fill)
{
	tb_open(&p->a, 0);
	tb_open(&p->b, 1);
	p->qa = tb_create_qp(&p->a, type);
	p->qb = tb_create_qp(&p->b, type);
	tb_connect(&p->a, p->qa, &p->b, p->qb->qp_num, IBV_MTU_1024);
	tb_connect(&p->b, p->qb, &p->a, p->qa->qp_num, IBV_MTU_1024);
	p->src = tb_mr(&p->a, bytes);
	p->dst = tb_mr(&p->b, bytes);
	for (size_t i = 0; i < bytes; i++)
		((uint8_t *)p->src->addr)[i] = (uint8_t)(i * 7 + fill);
}

void tb_pair_close(struct tb_pair *p)
{
	struct ibv_mr *mrs[] = { p->src, p->dst };

	cr_assert_eq(ibv_destroy_qp(p->qa), 0, "%s", hcasim_last_error());
	cr_assert_eq(ibv_destroy_qp(p->qb), 0, "%s", hcasim_last_error());
	for (int i = 0; i < 2; i++) {
		void *buf = mrs[i]->addr;

		cr_assert_eq(ibv_dereg_mr(mrs[i]), 0);
		free(buf);
	}
	tb_close(&p->a);
	tb_close(&p->b);
}

void tb_pair_post_recv(struct tb_pair *p, size_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge s = { (uintptr_t)p->dst->addr + off, len, p->dst->lkey };
	struct ibv_recv_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;

	cr_assert_eq(ibv_post_recv(p->qb, &w, &bad), 0, "%s", hcasim_last_error());
}

/* Post one signaled send_wr of src's first len bytes on qa and wait for its completion. */
static void pair_post_one(struct tb_pair *p, struct ibv_send_wr *w, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)p->src->addr, len, p->src->lkey };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	w->sg_list = &s;
	w->num_sge = 1;
	w->send_flags = IBV_SEND_SIGNALED;
	cr_assert_eq(ibv_post_send(p->qa, w, &bad), 0, "%s", hcasim_last_error());
	tb_poll(p->a.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "sender: %s", ibv_wc_status_str(wc.status));
}

void tb_pair_send(struct tb_pair *p, uint32_t len)
{
	struct ibv_send_wr w = { .wr_id = 2, .opcode = IBV_WR_SEND };
	struct ibv_wc wc;

	tb_pair_post_recv(p, 0, (uint32_t)p->dst->length, 1);
	pair_post_one(p, &w, len);
	tb_poll(p->b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "receiver: %s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.byte_len, len);
	cr_assert(!memcmp(p->src->addr, p->dst->addr, len), "the received bytes differ");
}

void tb_pair_write(struct tb_pair *p, uint32_t len)
{
	struct ibv_send_wr w = { .wr_id = 1, .opcode = IBV_WR_RDMA_WRITE };

	w.wr.rdma.remote_addr = (uintptr_t)p->dst->addr;
	w.wr.rdma.rkey = p->dst->rkey;
	pair_post_one(p, &w, len);
	cr_assert(!memcmp(p->src->addr, p->dst->addr, len), "the written bytes differ");
}

/* The length of the line at s, at most 160. */
static int line_len(const char *s)
{
	size_t n = strcspn(s, "\n");

	return n < 160 ? (int)n : 160;
}

size_t tb_same_file(const char *what, const char *a, const char *b, size_t min_len)
{
	size_t la, lb, i, line = 0;
	char *x = tb_slurp(a, &la), *y = tb_slurp(b, &lb);

	cr_assert_geq(la, min_len, "%s: %s has only %zu bytes", what, a, la);
	for (i = 0; i < la && i < lb && x[i] == y[i]; i++)
		if (x[i] == '\n')
			line = i + 1;
	cr_assert(la == lb && i == la,
		  "%s: %s and %s differ at byte %zu (sizes %zu, %zu), line:\n  %.*s\n  %.*s", what,
		  a, b, i, la, lb, line_len(x + line), x + line, line_len(y + line), y + line);
	free(x);
	free(y);
	return la;
}

int tb_run_traced(const char *dir, char *const argv[], const char *impl, const char *pcap)
{
	int status;
	pid_t pid;

	cr_assert_eq(mkdir(dir, 0755), 0, "mkdir %s: %s", dir, strerror(errno));
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int out, err;

		if (chdir(dir))
			_exit(126);
		out = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		err = open("err.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(126);
		for (int i = 3; i < 1024; i++)
			close(i);
		unsetenv("HCASIM_CONFIG");
		unsetenv("HCASIM_RTL_BUG");
		unsetenv("WAVES");
		setenv("HCASIM_IMPL", impl, 1);
		setenv("HCASIM_TRACE", "*", 1);
		setenv("HCASIM_TRACE_FILE", "trace.txt", 1);
		setenv("HCASIM_PCAP", pcap, 1);
		setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
		execv(argv[0], argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "%s (%s) died (signal %d)", argv[0], impl,
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return WEXITSTATUS(status);
}

static int saved_stderr = -1;
static FILE *capture;

void tb_stderr_capture(void)
{
	cr_assert_eq(saved_stderr, -1, "stderr is already captured");
	fflush(stderr);
	capture = tmpfile();
	cr_assert_not_null(capture);
	saved_stderr = dup(2);
	cr_assert_geq(saved_stderr, 0);
	cr_assert_geq(dup2(fileno(capture), 2), 0);
}

char *tb_stderr_captured(void)
{
	long len;
	char *text;

	cr_assert_geq(saved_stderr, 0, "stderr is not captured");
	fflush(stderr);
	cr_assert_geq(dup2(saved_stderr, 2), 0);
	close(saved_stderr);
	saved_stderr = -1;
	len = ftell(capture);
	text = calloc(1, (size_t)(len > 0 ? len : 0) + 1);
	cr_assert_not_null(text);
	rewind(capture);
	if (len > 0)
		cr_assert_eq(fread(text, 1, (size_t)len, capture), (size_t)len);
	fclose(capture);
	capture = NULL;
	return text;
}

const char *tb_expect_halt_reported(void)
{
	char *err = tb_stderr_captured();
	const char *why = hcasim_halted();

	cr_assert_not_null(why, "no halt; stderr:\n%s", err);
	/* "hcasim: " + the report, "lockstep mismatch: ..." or "checked mismatch: ..." */
	cr_assert(strstr(why, " mismatch: ") && strstr(err, why) && strstr(err, why) - err >= 8 &&
			  !strncmp(strstr(err, why) - 8, "hcasim: ", 8),
		  "the report is not on stderr:\n%s", err);
	free(err);
	return why;
}

void tb_check_scenario_list(const char *dir)
{
#define X(n) #n,
	static const char *const listed[] = { TB_SCENARIOS(X) };
#undef X
	size_t nl = sizeof(listed) / sizeof(listed[0]), found = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		bool in = false;

		if (l < 5 || strcmp(e->d_name + l - 4, ".ini"))
			continue;
		for (size_t k = 0; k < nl; k++)
			in |= strlen(listed[k]) == l - 4 && !strncmp(listed[k], e->d_name, l - 4);
		cr_expect(in, "%s/%s is not in TB_SCENARIOS (testbench/tb.h)", dir, e->d_name);
		found++;
	}
	closedir(d);
	cr_assert_eq(found, nl, "%zu scenarios shipped in %s, %zu in TB_SCENARIOS", found, dir, nl);
}

void tb_rm_tmpdir(const char *dir)
{
	char cmd[600];
	size_t n = strlen(dir);

	if (n < 6 || !strcmp(dir + n - 6, "XXXXXX"))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0, "%s", cmd);
}

const char *tb_san_env(void)
{
	return HCASIM_SAN ? "LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0"
			  : "";
}

char *tb_run_cmd(const char *cmd, int *status)
{
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap);
	int fd[2], st;
	ssize_t n;
	pid_t pid;

	cr_assert_not_null(out);
	cr_assert_eq(pipe(fd), 0);
	pid = fork();
	cr_assert_geq(pid, 0, "fork for %s", cmd);
	if (pid == 0) {
		/* The command gets stdout on the pipe and none of the test runner's own
		 * descriptors: a process it leaves behind (an X server) must not hold them. */
		dup2(fd[1], 1);
		for (int i = 3; i < 1024; i++)
			close(i);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while ((n = read(fd[0], out + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (len + 1 == cap) {
			out = realloc(out, cap *= 2);
			cr_assert_not_null(out);
		}
	}
	close(fd[0]);
	out[len] = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

int tb_doc_program(const char *doc, const char *marker, char *src, size_t len)
{
	char path[512], line[1024];
	int fd, in_block = 0, lines = 0;
	FILE *r, *w;

	cr_assert_geq(len, 32);
	snprintf(src, len, "/tmp/hcasim-docex-XXXXXX.c");
	fd = mkstemps(src, 2);
	cr_assert(fd >= 0);
	snprintf(path, sizeof(path), "%s/%s", HCASIM_SRC_DIR, doc);
	r = fopen(path, "r");
	cr_assert_not_null(r, "%s", path);
	w = fdopen(fd, "w");
	cr_assert_not_null(w);
	while (fgets(line, sizeof(line), r)) {
		if (!in_block && !strncmp(line, marker, strlen(marker)))
			in_block = 1;
		else if (in_block && !strncmp(line, "```", 3))
			break;
		if (in_block) {
			fputs(line, w);
			lines++;
		}
	}
	fclose(r);
	fclose(w);
	return lines;
}

void tb_read_wave(const char *path, const char *name, struct tb_wave *w)
{
	char *buf = tb_slurp(path, NULL), *save = NULL, *ln;
	char scope[512] = "", id[128] = "";
	uint64_t t = 0;
	bool body = false;

	memset(w, 0, sizeof(*w));
	for (ln = strtok_r(buf, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
		char a[128], b[128];

		if (!body) {
			if (sscanf(ln, "$scope module %127s $end", a) == 1) {
				if (*scope)
					strcat(scope, ".");
				strcat(scope, a);
			} else if (!strncmp(ln, "$upscope", 8)) {
				char *dot = strrchr(scope, '.');

				*(dot ? dot : scope) = 0;
			} else if (sscanf(ln, "$var wire %*u %127s %127s", a, b) == 2) {
				char full[768];

				snprintf(full, sizeof(full), "%s.%s", scope, b);
				if (!strcmp(full, name))
					snprintf(id, sizeof(id), "%s", a);
			} else if (!strncmp(ln, "$enddefinitions", 15)) {
				body = true;
				cr_assert(id[0], "%s: no variable %s", path, name);
			}
			continue;
		}
		if (ln[0] == '#') {
			t = strtoull(ln + 1, NULL, 10);
		} else if (ln[0] == 'b' && sscanf(ln, "b%127s %127s", a, b) == 2 && !strcmp(b, id)) {
			cr_assert_lt(w->n, 4096);
			w->t[w->n] = t;
			w->v[w->n++] = a[0] == 'x' ? UINT64_MAX : strtoull(a, NULL, 2);
		} else if (strchr("01x", ln[0]) && !strcmp(ln + 1, id)) {
			cr_assert_lt(w->n, 4096);
			w->t[w->n] = t;
			w->v[w->n++] = ln[0] == 'x' ? UINT64_MAX : (uint64_t)(ln[0] - '0');
		}
	}
	free(buf);
}
