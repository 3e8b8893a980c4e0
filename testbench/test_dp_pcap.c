/* dp_pcap: the wire image of a real verbs workload. A small RC + UC + UD workload (every RC
 * operation, a multi-packet WRITE and READ) runs between hcasim0 and hcasim1 with the link
 * captured (hcasim_pcap), on InfiniBand and on RoCEv2. Then:
 *   - tshark decodes every frame, and the multiset of (BTH opcode, DestQP, PSN) is exactly what
 *     the workload must produce: requests from the PSN tb_connect sets (0x100), one PSN per
 *     packet (a READ takes one per response packet), ACKs / READ responses / atomic ACKs back
 *     to the requester's QP with the PSN of the request they answer;
 *   - hcasim-pcapcheck accepts every ICRC/VCRC, and rejects a copy with one payload bit flipped.
 * tshark itself does not check CRCs (toolchain-facts.md §3), hence pcapcheck. */
#include "sim/pcap.h"
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/wait.h>
#include <unistd.h>

#define ACCESS_ALL                                                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define MTU_BYTES 1024u
#define PSN0 0x100u /* tb_connect's sq_psn / rq_psn */
#define MAXF 64

/* One frame as tshark decodes it. */
struct frame {
	unsigned op, dqp, psn;
};

struct expect {
	struct frame f[MAXF];
	int n;
};

static void want(struct expect *e, unsigned op, uint32_t dqp, uint32_t psn)
{
	cr_assert_lt(e->n, MAXF);
	e->f[e->n++] = (struct frame){op, dqp, psn};
}

struct qpair {
	struct ibv_qp *q[2]; /* requester on hcasim0, responder on hcasim1 */
	uint32_t psn;	     /* next request PSN of the requester */
};

struct rig {
	struct tb_dev d[2];
	struct qpair rc, uc, ud;
	struct ibv_ah *ah;
	struct ibv_mr *la, *rb; /* requester buffer on a, target / receive buffer on b */
	struct expect e;
};

static struct ibv_mr *reg(struct ibv_pd *pd, size_t len)
{
	void *buf = NULL;
	struct ibv_mr *mr;

	cr_assert_eq(posix_memalign(&buf, 4096, len), 0);
	memset(buf, 0, len);
	mr = ibv_reg_mr(pd, buf, len, ACCESS_ALL);
	cr_assert_not_null(mr, "ibv_reg_mr: %s", hcasim_last_error());
	return mr;
}

static void free_mr(struct ibv_mr *mr)
{
	void *buf = mr->addr;

	cr_assert_eq(ibv_dereg_mr(mr), 0, "%s", hcasim_last_error());
	free(buf);
}

static void poll1(struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	uint64_t start = hcasim_now_ps();

	while (ibv_poll_cq(cq, 1, wc) == 0) {
		cr_assert_lt(hcasim_now_ps() - start, 10000000000ull,
			     "%s: no completion after 10 ms simulated (%s)", what,
			     hcasim_last_error());
		hcasim_run_for_ps(1000000);
	}
	cr_assert_eq(wc->status, IBV_WC_SUCCESS, "%s: %s (%s)", what, ibv_wc_status_str(wc->status),
		     hcasim_last_error());
}

static void recv_on(struct rig *r, struct qpair *qp, uint64_t off, uint32_t len)
{
	struct ibv_sge s = {(uintptr_t)r->rb->addr + off, len, r->rb->lkey};
	struct ibv_recv_wr w = {.wr_id = 7, .sg_list = &s, .num_sge = 1}, *bad;

	cr_assert_eq(ibv_post_recv(qp->q[1], &w, &bad), 0, "%s", hcasim_last_error());
}

/* Post one signaled WR of len bytes from the requester buffer and wait for its completion (and
 * the responder's receive when it consumes one). */
static void op(struct rig *r, struct qpair *qp, enum ibv_wr_opcode opc, uint32_t len, uint64_t roff,
	       bool consumes_recv, const char *what)
{
	struct ibv_sge s = {(uintptr_t)r->la->addr, len, r->la->lkey};
	struct ibv_send_wr w = {0}, *bad;
	struct ibv_wc wc;

	if (consumes_recv)
		recv_on(r, qp, 32768, 16384);
	w.wr_id = 1;
	w.sg_list = &s;
	w.num_sge = 1;
	w.opcode = opc;
	w.send_flags = IBV_SEND_SIGNALED;
	w.imm_data = htonl(0x1234);
	if (opc == IBV_WR_ATOMIC_CMP_AND_SWP || opc == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = (uintptr_t)r->rb->addr + roff;
		w.wr.atomic.rkey = r->rb->rkey;
		w.wr.atomic.compare_add = 0;
		w.wr.atomic.swap = 9;
	} else if (qp->q[0]->qp_type == IBV_QPT_UD) {
		w.wr.ud.ah = r->ah;
		w.wr.ud.remote_qpn = qp->q[1]->qp_num;
		w.wr.ud.remote_qkey = TB_QKEY;
	} else {
		w.wr.rdma.remote_addr = (uintptr_t)r->rb->addr + roff;
		w.wr.rdma.rkey = r->rb->rkey;
	}
	cr_assert_eq(ibv_post_send(qp->q[0], &w, &bad), 0, "%s: %s", what, hcasim_last_error());
	poll1(r->d[0].cq, &wc, what);
	if (consumes_recv)
		poll1(r->d[1].cq, &wc, what);
}

static void pair_up(struct rig *r, struct qpair *qp, enum ibv_qp_type type)
{
	qp->q[0] = tb_create_qp(&r->d[0], type);
	qp->q[1] = tb_create_qp(&r->d[1], type);
	tb_connect(&r->d[0], qp->q[0], &r->d[1], qp->q[1]->qp_num, IBV_MTU_1024);
	tb_connect(&r->d[1], qp->q[1], &r->d[0], qp->q[0]->qp_num, IBV_MTU_1024);
	qp->psn = PSN0;
}

/* A request of n packets with opcodes ops[] to the responder; the requester PSN advances. */
static uint32_t req(struct rig *r, struct qpair *qp, const unsigned *ops, int n)
{
	uint32_t first = qp->psn;

	for (int i = 0; i < n; i++)
		want(&r->e, ops[i], qp->q[1]->qp_num, qp->psn++);
	return first;
}

/* A response to the requester's QP. */
static void resp(struct rig *r, struct qpair *qp, unsigned opc, uint32_t psn)
{
	want(&r->e, opc, qp->q[0]->qp_num, psn);
}

/* Run the workload with the link captured at prefix; everything is freed and the system shut
 * down (which closes the capture) on return. */
static void workload(struct rig *r, const char *prefix)
{
	uint32_t psn;
	const unsigned w3[] = {0x06, 0x07, 0x08};

	memset(r, 0, sizeof(*r));
	tb_open(&r->d[0], 0);
	cr_assert_eq(hcasim_pcap(prefix), 0, "hcasim_pcap: %s", hcasim_last_error());
	tb_open(&r->d[1], 1);
	pair_up(r, &r->rc, IBV_QPT_RC);
	pair_up(r, &r->uc, IBV_QPT_UC);
	pair_up(r, &r->ud, IBV_QPT_UD);
	{
		struct ibv_ah_attr a = {.dlid = r->d[1].port.lid, .port_num = 1};

		if (r->d[0].port.link_layer == IBV_LINK_LAYER_ETHERNET) {
			cr_assert_eq(ibv_query_gid(r->d[1].ctx, 1, 0, &a.grh.dgid), 0);
			a.is_global = 1;
			a.grh.hop_limit = 1;
		}
		r->ah = ibv_create_ah(r->d[0].pd, &a);
		cr_assert_not_null(r->ah, "ibv_create_ah: %s", hcasim_last_error());
	}
	r->la = reg(r->d[0].pd, 16384);
	r->rb = reg(r->d[1].pd, 65536);
	for (int i = 0; i < 16384; i++)
		((uint8_t *)r->la->addr)[i] = (uint8_t)(i * 13 + 1);

	/* RC: every operation, each acknowledged before the next. */
	psn = req(r, &r->rc, (const unsigned[]){0x04}, 1);
	op(r, &r->rc, IBV_WR_SEND, 100, 0, true, "RC SEND");
	resp(r, &r->rc, 0x11, psn);
	psn = req(r, &r->rc, (const unsigned[]){0x05}, 1);
	op(r, &r->rc, IBV_WR_SEND_WITH_IMM, 100, 0, true, "RC SEND_WITH_IMM");
	resp(r, &r->rc, 0x11, psn);
	psn = req(r, &r->rc, w3, 3); /* 3000 bytes: First, Middle, Last */
	op(r, &r->rc, IBV_WR_RDMA_WRITE, 3000, 0, false, "RC WRITE (3 packets)");
	resp(r, &r->rc, 0x11, psn + 2); /* the ACK names the last packet's PSN */
	cr_assert(!memcmp(r->la->addr, r->rb->addr, 3000), "WRITE payload differs");
	psn = req(r, &r->rc, (const unsigned[]){0x0b}, 1);
	op(r, &r->rc, IBV_WR_RDMA_WRITE_WITH_IMM, 100, 4096, true, "RC WRITE_WITH_IMM");
	resp(r, &r->rc, 0x11, psn);
	/* READ of 3000 bytes: one request, PSNs for its three responses. */
	psn = req(r, &r->rc, (const unsigned[]){0x0c}, 1);
	r->rc.psn += 2;
	op(r, &r->rc, IBV_WR_RDMA_READ, 3000, 0, false, "RC READ (3 responses)");
	resp(r, &r->rc, 0x0d, psn);
	resp(r, &r->rc, 0x0e, psn + 1);
	resp(r, &r->rc, 0x0f, psn + 2);
	psn = req(r, &r->rc, (const unsigned[]){0x0c}, 1);
	op(r, &r->rc, IBV_WR_RDMA_READ, 100, 0, false, "RC READ (1 response)");
	resp(r, &r->rc, 0x10, psn);
	psn = req(r, &r->rc, (const unsigned[]){0x13}, 1);
	op(r, &r->rc, IBV_WR_ATOMIC_CMP_AND_SWP, 8, 8192, false, "RC CMP_SWP");
	resp(r, &r->rc, 0x12, psn);
	psn = req(r, &r->rc, (const unsigned[]){0x14}, 1);
	op(r, &r->rc, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, 8192, false, "RC FETCH_ADD");
	resp(r, &r->rc, 0x12, psn);
	/* UC: SEND and WRITE, no responses. */
	req(r, &r->uc, (const unsigned[]){0x24}, 1);
	op(r, &r->uc, IBV_WR_SEND, 100, 0, true, "UC SEND");
	req(r, &r->uc, (const unsigned[]){0x2a}, 1);
	op(r, &r->uc, IBV_WR_RDMA_WRITE, 100, 12288, false, "UC WRITE");
	/* UD: one SEND. */
	req(r, &r->ud, (const unsigned[]){0x64}, 1);
	op(r, &r->ud, IBV_WR_SEND, 100, 0, true, "UD SEND");

	cr_assert_eq(ibv_destroy_ah(r->ah), 0);
	free_mr(r->la);
	free_mr(r->rb);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(ibv_destroy_qp(r->rc.q[i]), 0, "%s", hcasim_last_error());
		cr_assert_eq(ibv_destroy_qp(r->uc.q[i]), 0, "%s", hcasim_last_error());
		cr_assert_eq(ibv_destroy_qp(r->ud.q[i]), 0, "%s", hcasim_last_error());
	}
	/* The QP numbers stay in the rig for the checks (the pointers are dangling now). */
	tb_close(&r->d[0]);
	tb_close(&r->d[1]);
	hcasim_shutdown(); /* flushes and closes the captures */
}

static int frame_cmp(const void *x, const void *y)
{
	const struct frame *a = x, *b = y;

	if (a->op != b->op)
		return a->op < b->op ? -1 : 1;
	if (a->dqp != b->dqp)
		return a->dqp < b->dqp ? -1 : 1;
	return a->psn < b->psn ? -1 : a->psn > b->psn;
}

static bool is_request(unsigned op)
{
	return !(op >= 0x0d && op <= 0x12);
}

static void check_tshark(const char *path, struct expect *e)
{
	char cmd[512], *out, *line, *save = NULL;
	struct frame got[MAXF];
	int n = 0, st;
	char diff[4096];
	size_t o = 0;

	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s -T fields -e infiniband.bth.opcode -e infiniband.bth.destqp "
		 "-e infiniband.bth.psn 2>/dev/null",
		 path);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d", cmd, st);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f1, *f2, *end;
		unsigned long v[3];

		cr_assert_lt(n, MAXF, "more than %d frames", MAXF);
		f1 = strchr(line, '\t');
		f2 = f1 ? strchr(f1 + 1, '\t') : NULL;
		cr_assert(f1 && f2 && f1 != line, "frame %d did not decode as InfiniBand: '%s'",
			  n + 1, line);
		v[0] = strtoul(line, &end, 0);
		cr_assert(end == f1, "frame %d: opcode '%.*s'", n + 1, (int)(f1 - line), line);
		v[1] = strtoul(f1 + 1, &end, 0);
		cr_assert(end == f2 && end != f1 + 1, "frame %d: destqp in '%s'", n + 1, line);
		v[2] = strtoul(f2 + 1, &end, 0);
		cr_assert(end != f2 + 1 && *end == 0, "frame %d: psn in '%s'", n + 1, line);
		got[n++] = (struct frame){(unsigned)v[0], (unsigned)v[1], (unsigned)v[2]};
	}
	free(out);

	/* Request PSNs of each destination QP increase in file order (one requester each,
	 * one WR at a time). */
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (is_request(got[i].op) && is_request(got[j].op) &&
			    got[i].dqp == got[j].dqp)
				cr_assert_lt(got[i].psn, got[j].psn,
					     "requests to QP 0x%x: PSN %u (frame %d) then %u "
					     "(frame %d)",
					     got[i].dqp, got[i].psn, i + 1, got[j].psn, j + 1);

	qsort(got, (size_t)n, sizeof(got[0]), frame_cmp);
	qsort(e->f, (size_t)e->n, sizeof(e->f[0]), frame_cmp);
	diff[0] = 0;
	for (int i = 0, j = 0; i < n || j < e->n;) {
		int c = i == n ? 1 : j == e->n ? -1 : frame_cmp(&got[i], &e->f[j]);

		if (c == 0) {
			i++;
			j++;
			continue;
		}
		if (o < sizeof(diff))
			o += (size_t)snprintf(
			    diff + o, sizeof(diff) - o, " %s(op 0x%02x dqp 0x%x psn 0x%x)",
			    c < 0 ? "extra" : "missing", c < 0 ? got[i].op : e->f[j].op,
			    c < 0 ? got[i].dqp : e->f[j].dqp, c < 0 ? got[i].psn : e->f[j].psn);
		if (c < 0)
			i++;
		else
			j++;
	}
	cr_assert_eq(diff[0], 0, "%s: %d frames decoded, %d expected; differences:%s", path, n,
		     e->n, diff);
}

/* pcapcheck accepts path; a copy with one payload bit flipped (in the first frame that carries
 * a full MTU of payload) is rejected. */
static void check_pcapcheck(const char *path)
{
	char cmd[512], bad[256], *out;
	uint8_t *b;
	size_t size, off;
	struct sim_pcap_reader *r;
	struct sim_pcap_rec rec;
	FILE *f;
	int st;
	bool flipped = false;

	snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-pcapcheck %s 2>&1", HCASIM_BUILD_DIR, path);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d:\n%s", cmd, st, out);
	cr_assert(strstr(out, " 0 bad") != NULL, "%s", out);
	free(out);

	b = (uint8_t *)tb_slurp(path, &size);
	cr_assert_eq(sim_pcap_reader_open(&r, path), 0, "%s", path);
	while (sim_pcap_reader_next(r, &rec) == 1)
		if (rec.len > MTU_BYTES) {
			off = rec.off + rec.len - 200; /* well inside the payload */
			cr_assert_lt(off, size);
			b[off] ^= 0x04;
			flipped = true;
			break;
		}
	sim_pcap_reader_close(r);
	cr_assert(flipped, "no frame with a full MTU of payload in %s", path);
	snprintf(bad, sizeof(bad), "%s.bad", path);
	f = fopen(bad, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(b, 1, size, f), size);
	fclose(f);
	free(b);
	snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-pcapcheck %s 2>&1", HCASIM_BUILD_DIR, bad);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 1, "%s: exit %d (expected 1: one bad frame):\n%s", cmd, st, out);
	cr_assert(strstr(out, " 1 bad") != NULL, "%s", out);
	free(out);
	unlink(bad);
}

static void capture_and_check(const char *ll)
{
	struct rig *r = calloc(1, sizeof(*r));
	char prefix[128], path[160];

	cr_assert_not_null(r);
	snprintf(prefix, sizeof(prefix), "/tmp/hcasim-dp-pcap-%s-%d", ll, (int)getpid());
	snprintf(path, sizeof(path), "%s.link0.pcap", prefix);
	unlink(path);
	if (strcmp(ll, "ib"))
		tb_config("hca.link_layer", ll);
	workload(r, prefix);
	check_tshark(path, &r->e);
	check_pcapcheck(path);
	unlink(path);
	free(r);
}

Test(dp_pcap, ib_workload_decodes_exactly_and_passes_pcapcheck)
{
	capture_and_check("ib");
}

Test(dp_pcap, roce_workload_decodes_exactly_and_passes_pcapcheck)
{
	capture_and_check("roce");
}
