/* loopback: two QPs of one HCA that address each other through the HCA's own ports
 * (docs/loopback.md). Every RC operation (SEND, WRITE, WRITE_WITH_IMM, READ, both atomics),
 * UC and UD, between two QPs on one port and between the two ports of a two-port HCA, with
 * sim.hosts 2 and 1, on InfiniBand and RoCEv2: completions field by field and memory byte for
 * byte; then the timing of each looped-back frame against hca.loopback_gbps and
 * hca.loopback_ns, the port.loopback trace line, the loopback capture (tshark, pcapcheck),
 * the port counters, determinism, and addresses that are neither our ports nor the peer's. */
#include "sim/pcap.h"
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ACCESS_ALL                                                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define BUF 65536u
#define PSN0 0x100u
#define GRH_BYTES 40u
#define CORE_PS 2000u /* clock.core_mhz 500 */
#define PORT_CYCLES 6u

/* Two QPs on hcasim0: qa on port pa, qb on port pb, each addressing the other's port. */
struct lb {
	struct tb_dev d;
	struct ibv_cq *cq[2];     /* qa's, qb's */
	struct ibv_qp *q[2];      /* qa, qb */
	int port[2];              /* their ports */
	struct ibv_port_attr pattr[2];
	union ibv_gid gid[2];     /* GID 0 of each port */
	struct ibv_ah *ah[2];     /* UD: the address of the other QP */
	struct ibv_mr *mr[2];     /* a buffer each, BUF bytes */
	bool roce;
};

/* When set, the buffers lb_open registers (kept by lb_close): the same virtual addresses, so
 * the same RETH and AtomicETH bytes, in every boot. */
static void *fixed_buf[2];

static struct ibv_mr *reg(struct ibv_pd *pd, int i)
{
	uint8_t fill = (uint8_t)(0x30 + i);
	void *buf = fixed_buf[i];
	struct ibv_mr *mr;

	if (!buf)
		cr_assert_eq(posix_memalign(&buf, 4096, BUF), 0);
	memset(buf, fill, BUF);
	mr = ibv_reg_mr(pd, buf, BUF, ACCESS_ALL);
	cr_assert_not_null(mr, "ibv_reg_mr: %s", hcasim_last_error());
	return mr;
}

/* RESET -> INIT -> RTR -> RTS of r->q[i] on its port, towards the other QP's port (UD: an
 * address handle for it). */
static void lb_connect(struct lb *r, int i)
{
	struct ibv_qp *qp = r->q[i];
	int j = 1 - i;

	tb_connect_port(qp, (uint8_t)r->port[i], r->d.ctx, (uint8_t)r->port[j], r->pattr[j].lid,
			r->roce, r->q[j]->qp_num, IBV_MTU_1024);
	if (qp->qp_type == IBV_QPT_UD) {
		struct ibv_ah_attr ah = { .dlid = r->pattr[j].lid,
					  .port_num = (uint8_t)r->port[i],
					  .is_global = r->roce };

		ah.grh.dgid = r->gid[j];
		ah.grh.hop_limit = 1;
		r->ah[i] = ibv_create_ah(r->d.pd, &ah);
		cr_assert_not_null(r->ah[i], "ibv_create_ah: %s", hcasim_last_error());
	}
}

/* Boot (after the caller's configuration), open hcasim0 and connect qa (port pa) and qb (port
 * pb) to each other. */
static void lb_open(struct lb *r, enum ibv_qp_type type, int pa, int pb)
{
	memset(r, 0, sizeof(*r));
	tb_open(&r->d, 0);
	r->roce = r->d.port.link_layer == IBV_LINK_LAYER_ETHERNET;
	r->port[0] = pa;
	r->port[1] = pb;
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_init_attr init = {
			.qp_type = type,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};

		cr_assert_eq(ibv_query_port(r->d.ctx, (uint8_t)r->port[i], &r->pattr[i]), 0);
		cr_assert_eq(r->pattr[i].state, IBV_PORT_ACTIVE, "port %d is not ACTIVE",
			     r->port[i]);
		cr_assert_eq(ibv_query_gid(r->d.ctx, (uint8_t)r->port[i], 0, &r->gid[i]), 0);
		r->cq[i] = ibv_create_cq(r->d.ctx, 16, NULL, NULL, 0);
		cr_assert_not_null(r->cq[i], "ibv_create_cq: %s", hcasim_last_error());
		init.send_cq = init.recv_cq = r->cq[i];
		r->q[i] = ibv_create_qp(r->d.pd, &init);
		cr_assert_not_null(r->q[i], "ibv_create_qp: %s", hcasim_last_error());
		r->mr[i] = reg(r->d.pd, i);
	}
	for (int i = 0; i < 2; i++)
		lb_connect(r, i);
}

static void lb_close(struct lb *r)
{
	for (int i = 0; i < 2; i++) {
		void *buf = r->mr[i]->addr;

		if (r->ah[i])
			cr_assert_eq(ibv_destroy_ah(r->ah[i]), 0);
		cr_assert_eq(ibv_destroy_qp(r->q[i]), 0, "%s", hcasim_last_error());
		cr_assert_eq(ibv_destroy_cq(r->cq[i]), 0, "%s", hcasim_last_error());
		cr_assert_eq(ibv_dereg_mr(r->mr[i]), 0);
		if (buf != fixed_buf[i])
			free(buf);
	}
	tb_close(&r->d);
}

static uint8_t *buf_of(struct lb *r, int i)
{
	return r->mr[i]->addr;
}

static void post_recv(struct lb *r, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)buf_of(r, 1) + off, len, r->mr[1]->lkey };
	struct ibv_recv_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;

	cr_assert_eq(ibv_post_recv(r->q[1], &w, &bad), 0, "%s", hcasim_last_error());
}

/* One signaled WR from qa: len bytes at offset loff of qa's buffer, to offset roff of qb's. */
static void post_op(struct lb *r, uint64_t wr_id, enum ibv_wr_opcode op, uint32_t loff,
		    uint32_t len, uint32_t roff, uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge s = { (uintptr_t)buf_of(r, 0) + loff, len, r->mr[0]->lkey };
	struct ibv_send_wr w = { 0 }, *bad;

	w.wr_id = wr_id;
	w.sg_list = &s;
	w.num_sge = 1;
	w.opcode = op;
	w.send_flags = IBV_SEND_SIGNALED;
	w.imm_data = htonl(0xc0de0000u | (uint32_t)wr_id);
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = (uintptr_t)buf_of(r, 1) + roff;
		w.wr.atomic.rkey = r->mr[1]->rkey;
		w.wr.atomic.compare_add = cmp_add;
		w.wr.atomic.swap = swap;
	} else if (r->q[0]->qp_type == IBV_QPT_UD) {
		w.wr.ud.ah = r->ah[0];
		w.wr.ud.remote_qpn = r->q[1]->qp_num;
		w.wr.ud.remote_qkey = TB_QKEY;
	} else {
		w.wr.rdma.remote_addr = (uintptr_t)buf_of(r, 1) + roff;
		w.wr.rdma.rkey = r->mr[1]->rkey;
	}
	cr_assert_eq(ibv_post_send(r->q[0], &w, &bad), 0, "%s", hcasim_last_error());
}

static void check_send_wc(struct lb *r, const char *what, uint64_t wr_id, enum ibv_wc_opcode op,
			  uint32_t len)
{
	struct ibv_wc wc;

	memset(&wc, 0xa5, sizeof(wc));
	tb_poll(r->cq[0], &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s: %s [%s]", what, ibv_wc_status_str(wc.status),
		     hcasim_last_error());
	cr_assert_eq(wc.wr_id, wr_id, "%s: wr_id %" PRIu64, what, wc.wr_id);
	cr_assert_eq(wc.opcode, op, "%s: opcode %d", what, wc.opcode);
	cr_assert_eq(wc.qp_num, r->q[0]->qp_num, "%s: qp_num 0x%x", what, wc.qp_num);
	cr_assert_eq(wc.wc_flags, 0, "%s: wc_flags 0x%x", what, wc.wc_flags);
	if (op == IBV_WC_RDMA_READ || op == IBV_WC_COMP_SWAP || op == IBV_WC_FETCH_ADD)
		cr_assert_eq(wc.byte_len, len, "%s: byte_len %u, expected %u", what, wc.byte_len,
			     len);
	cr_assert_eq(ibv_poll_cq(r->cq[0], 1, &wc), 0, "%s: a second send completion", what);
}

static void check_recv_wc(struct lb *r, const char *what, uint64_t wr_id, enum ibv_wc_opcode op,
			  uint32_t len, bool imm, uint64_t send_wr_id)
{
	bool ud = r->q[1]->qp_type == IBV_QPT_UD;
	unsigned flags = (imm ? IBV_WC_WITH_IMM : 0) | (ud && r->roce ? IBV_WC_GRH : 0);
	struct ibv_wc wc;

	memset(&wc, 0xa5, sizeof(wc));
	tb_poll(r->cq[1], &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "%s: recv %s [%s]", what,
		     ibv_wc_status_str(wc.status), hcasim_last_error());
	cr_assert_eq(wc.wr_id, wr_id, "%s: recv wr_id %" PRIu64, what, wc.wr_id);
	cr_assert_eq(wc.opcode, op, "%s: recv opcode %d", what, wc.opcode);
	cr_assert_eq(wc.byte_len, len, "%s: recv byte_len %u, expected %u", what, wc.byte_len, len);
	cr_assert_eq(wc.qp_num, r->q[1]->qp_num, "%s: recv qp_num 0x%x", what, wc.qp_num);
	cr_assert_eq(wc.src_qp, r->q[0]->qp_num, "%s: recv src_qp 0x%x, expected 0x%x", what,
		     wc.src_qp, r->q[0]->qp_num);
	cr_assert_eq(wc.wc_flags, flags, "%s: recv wc_flags 0x%x, expected 0x%x", what, wc.wc_flags,
		     flags);
	if (imm)
		cr_assert_eq(wc.imm_data, htonl(0xc0de0000u | (uint32_t)send_wr_id),
			     "%s: imm_data 0x%08x", what, ntohl(wc.imm_data));
	cr_assert_eq(wc.slid, r->pattr[0].lid, "%s: recv slid %u, expected %u", what, wc.slid,
		     r->pattr[0].lid);
	cr_assert_eq(wc.sl, 0, "%s: recv sl %u", what, wc.sl);
	cr_assert_eq(wc.dlid_path_bits, 0, "%s: dlid_path_bits %u", what, wc.dlid_path_bits);
	if (ud)
		cr_assert_eq(wc.pkey_index, 0, "%s: pkey_index %u", what, wc.pkey_index);
	cr_assert_eq(ibv_poll_cq(r->cq[1], 1, &wc), 0, "%s: a second receive completion", what);
}

/* Fill len bytes at offset off of qa's buffer with a pattern of seed. */
static void pattern(struct lb *r, uint32_t off, uint32_t len, unsigned seed)
{
	for (uint32_t i = 0; i < len; i++)
		buf_of(r, 0)[off + i] = (uint8_t)(i * 13 + seed);
}

/* buf[off..off + len) equals the pattern, the byte after it still holds fill, and so does the
 * byte before it unless that is a UD receive's GRH slot. */
static void check_bytes(const uint8_t *buf, uint32_t off, uint32_t len, unsigned seed,
			uint8_t fill, const char *what)
{
	bool ud = !strncmp(what, "UD", 2);

	for (uint32_t i = 0; i < len; i++)
		cr_assert_eq(buf[off + i], (uint8_t)(i * 13 + seed), "%s: byte %u is 0x%02x", what,
			     i, buf[off + i]);
	cr_assert_eq(buf[off - (ud ? GRH_BYTES : 0) - 1], fill, "%s: the byte before was written",
		     what);
	cr_assert_eq(buf[off + len], fill, "%s: the byte after was written", what);
}

/* A message of len bytes from qa (SEND, SEND_WITH_IMM or RDMA_WRITE_WITH_IMM, to offset off)
 * that consumes qb's receive recv_id (at off, unless a WRITE): both completions, and the bytes
 * at off (after the GRH slot on UD). The payload's pattern is seeded with wr_id + 2. */
static void lb_message(struct lb *r, const char *what, uint64_t wr_id, enum ibv_wr_opcode op,
		       uint32_t len, uint32_t off, uint64_t recv_id)
{
	uint32_t grh = r->q[1]->qp_type == IBV_QPT_UD ? GRH_BYTES : 0;
	bool write = op == IBV_WR_RDMA_WRITE_WITH_IMM;

	pattern(r, 64, len, (unsigned)wr_id + 2);
	post_recv(r, recv_id, write ? 0 : off, write ? 0 : 4096);
	post_op(r, wr_id, op, 64, len, off, 0, 0);
	check_send_wc(r, what, wr_id, write ? IBV_WC_RDMA_WRITE : IBV_WC_SEND, 0);
	check_recv_wc(r, what, recv_id, write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV, len + grh,
		      op != IBV_WR_SEND, wr_id);
	check_bytes(buf_of(r, 1), off + grh, len, (unsigned)wr_id + 2, 0x31, what);
}

/* Every operation of the QP type from qa to qb; multi-packet messages at path MTU 1024. */
static void lb_workload(struct lb *r)
{
	enum ibv_qp_type t = r->q[0]->qp_type;
	uint8_t *a = buf_of(r, 0), *b = buf_of(r, 1);

	if (t == IBV_QPT_UD) {
		/* datagrams of 1000 and 7 bytes (a UD QP's MTU is the port's, 4096) */
		lb_message(r, "UD SEND", 1, IBV_WR_SEND, 1000, 4096, 11);
		lb_message(r, "UD SEND_WITH_IMM", 2, IBV_WR_SEND_WITH_IMM, 7, 8192, 12);
		return;
	}
	lb_message(r, "SEND", 1, IBV_WR_SEND, 3000, 4096, 21); /* 3 packets */
	/* RDMA WRITE of 2500 bytes */
	pattern(r, 64, 2500, 4);
	post_op(r, 2, IBV_WR_RDMA_WRITE, 64, 2500, 12288, 0, 0);
	check_send_wc(r, "WRITE", 2, IBV_WC_RDMA_WRITE, 0);
	if (t == IBV_QPT_UC) /* completes once sent: give the last packet time to land */
		hcasim_run_for_ps(5000000);
	check_bytes(b, 12288, 2500, 4, 0x31, "WRITE");
	/* RDMA WRITE with immediate of 1100 bytes: consumes a receive */
	lb_message(r, "WRITE_WITH_IMM", 3, IBV_WR_RDMA_WRITE_WITH_IMM, 1100, 16384, 23);
	if (t != IBV_QPT_RC)
		return;
	/* RDMA READ of 2100 bytes back from what the WRITE put there */
	post_op(r, 4, IBV_WR_RDMA_READ, 20480, 2100, 12288, 0, 0);
	check_send_wc(r, "READ", 4, IBV_WC_RDMA_READ, 2100);
	check_bytes(a, 20480, 2100, 4, 0x30, "READ");
	/* atomics on 8 aligned bytes of qb's buffer */
	memcpy(b + 32768, &(uint64_t){ 0x1111222233334444ull }, 8);
	post_op(r, 5, IBV_WR_ATOMIC_CMP_AND_SWP, 24576, 8, 32768, 0x1111222233334444ull,
		0x5555666677778888ull);
	check_send_wc(r, "CMP_AND_SWP", 5, IBV_WC_COMP_SWAP, 8);
	cr_assert_eq(*(uint64_t *)(a + 24576), 0x1111222233334444ull, "CMP_AND_SWP original");
	cr_assert_eq(*(uint64_t *)(b + 32768), 0x5555666677778888ull, "CMP_AND_SWP swapped");
	post_op(r, 6, IBV_WR_ATOMIC_FETCH_AND_ADD, 24584, 8, 32768, 0x10, 0);
	check_send_wc(r, "FETCH_AND_ADD", 6, IBV_WC_FETCH_ADD, 8);
	cr_assert_eq(*(uint64_t *)(a + 24584), 0x5555666677778888ull, "FETCH_AND_ADD original");
	cr_assert_eq(*(uint64_t *)(b + 32768), 0x5555666677778898ull, "FETCH_AND_ADD sum");
	cr_assert_eq(b[32767], 0x31);
	cr_assert_eq(b[32776], 0x31);
}

/* ---- looped-back frames, as the trace shows them ---- */

#define MAXLB 256

struct lbframe {
	uint64_t t, start, arrive, len;
	unsigned port, to;
	uint64_t op, dqpn, psn;
};

struct obs {
	struct lbframe f[MAXLB];
	int n;
	uint64_t rx_t[MAXLB]; /* pkt.rx times */
	int nrx;
	uint64_t tx; /* pkt.tx lines (frames handed to a link) */
	uint64_t drops;
	unsigned drop_port;  /* port= of the last pkt.drop_* that has one */
	uint64_t send_cqe_t; /* last cqe.write of a send completion */
};

static void observe(void *arg, uint64_t t, int dev, const char *ev, const char *fields)
{
	struct obs *o = arg;
	uint64_t v;

	(void)dev;
	if (!strcmp(ev, "port.loopback") && o->n < MAXLB) {
		struct lbframe *f = &o->f[o->n++];

		f->t = t;
		hcasim_trace_field(fields, "start", &f->start);
		hcasim_trace_field(fields, "arrive", &f->arrive);
		hcasim_trace_field(fields, "len", &f->len);
		hcasim_trace_field(fields, "op", &f->op);
		hcasim_trace_field(fields, "dqpn", &f->dqpn);
		hcasim_trace_field(fields, "psn", &f->psn);
		hcasim_trace_field(fields, "port", &v);
		f->port = (unsigned)v;
		hcasim_trace_field(fields, "to", &v);
		f->to = (unsigned)v;
	} else if (!strcmp(ev, "pkt.rx") && o->nrx < MAXLB) {
		o->rx_t[o->nrx++] = t;
	} else if (!strcmp(ev, "pkt.tx")) {
		o->tx++;
	} else if (!strncmp(ev, "pkt.drop_", 9)) { /* every pkt.drop_* event */
		o->drops++;
		if (hcasim_trace_field(fields, "port", &v))
			o->drop_port = (unsigned)v;
	} else if (!strcmp(ev, "cqe.write")) {
		o->send_cqe_t = t; /* the tests that read it make only send completions */
	}
}

static struct obs *obs_start(void)
{
	struct obs *o = calloc(1, sizeof(*o));

	cr_assert_not_null(o);
	cr_assert_eq(hcasim_trace_observe("port,pkt,cqe", observe, o), 0, "%s",
		     hcasim_last_error());
	return o;
}

static void obs_stop(struct obs *o)
{
	hcasim_trace_observe("", NULL, NULL);
	free(o);
}

/* Serialization of len bytes at gbps, rounded to the nearest ps (halves up). */
static uint64_t ser_ps(uint64_t len, uint64_t gbps)
{
	return (len * 8000u + gbps / 2) / gbps;
}

static uint64_t edge(uint64_t t)
{
	return (t + CORE_PS - 1) / CORE_PS * CORE_PS;
}

/* Every looped-back frame: its slot follows the previous one at gbps, it arrives ns after its
 * last byte, and the receive pipeline hands it on PORT_CYCLES after the later of its arrival
 * and the previous frame (pkt.rx); nothing went to a link and nothing was dropped. */
static void check_timing(const struct obs *o, const struct lb *r, uint64_t gbps, uint64_t ns)
{
	uint64_t busy = 0, rx_free = 0;

	cr_assert_gt(o->n, 0, "no port.loopback line");
	cr_assert_eq(o->tx, 0, "%" PRIu64 " frames went to a link", o->tx);
	cr_assert_eq(o->drops, 0, "%" PRIu64 " frames were dropped", o->drops);
	cr_assert_eq(o->nrx, o->n, "%d frames looped back, %d received", o->n, o->nrx);
	for (int i = 0; i < o->n; i++) {
		const struct lbframe *f = &o->f[i];
		uint64_t end = f->start + ser_ps(f->len, gbps);

		cr_assert_geq(f->start, busy, "frame %d starts at %" PRIu64 " before the previous "
			      "ends at %" PRIu64, i, f->start, busy);
		cr_assert_geq(f->start, f->t, "frame %d starts before it was sent", i);
		cr_assert_eq(f->arrive, end + ns * 1000, "frame %d: arrive %" PRIu64 ", expected %"
			     PRIu64 " + %" PRIu64 " ps + %" PRIu64 " ns", i, f->arrive, f->start,
			     ser_ps(f->len, gbps), ns);
		busy = end;
		rx_free = edge(f->arrive > rx_free ? f->arrive : rx_free) + PORT_CYCLES * CORE_PS;
		cr_assert_eq(o->rx_t[i], rx_free, "frame %d: received at %" PRIu64 ", expected %"
			     PRIu64, i, o->rx_t[i], rx_free);
		/* a request goes to the other QP's port, its response back to ours */
		cr_assert(f->dqpn == r->q[0]->qp_num || f->dqpn == r->q[1]->qp_num);
		cr_assert_eq(f->to, (unsigned)r->port[f->dqpn == r->q[1]->qp_num],
			     "frame %d for QP 0x%" PRIx64 " went to port %u", i, f->dqpn, f->to);
		cr_assert_eq(f->port, (unsigned)r->port[f->dqpn != r->q[1]->qp_num]);
	}
}

/* The workload of the type, observed: completions, memory and every frame's timing. */
static void lb_run(enum ibv_qp_type type, int pa, int pb)
{
	struct lb r;
	struct obs *o;

	lb_open(&r, type, pa, pb);
	o = obs_start();
	lb_workload(&r);
	check_timing(o, &r, 200, 60);
	obs_stop(o);
	lb_close(&r);
}

#define LB_TESTS(tag, setup)                                                                       \
	Test(loopback, tag##_rc_one_port) { setup; lb_run(IBV_QPT_RC, 1, 1); }                     \
	Test(loopback, tag##_uc_one_port) { setup; lb_run(IBV_QPT_UC, 1, 1); }                     \
	Test(loopback, tag##_ud_one_port) { setup; lb_run(IBV_QPT_UD, 1, 1); }                     \
	Test(loopback, tag##_rc_two_ports) { setup; tb_config("hca.ports", "2");                    \
					     lb_run(IBV_QPT_RC, 1, 2); }                               \
	Test(loopback, tag##_uc_two_ports) { setup; tb_config("hca.ports", "2");                    \
					     lb_run(IBV_QPT_UC, 2, 1); }                               \
	Test(loopback, tag##_ud_two_ports) { setup; tb_config("hca.ports", "2");                    \
					     lb_run(IBV_QPT_UD, 1, 2); }

LB_TESTS(ib, (void)0)
LB_TESTS(ib_one_host, tb_config("sim.hosts", "1"))
LB_TESTS(roce, tb_config("hca.link_layer", "roce"))
LB_TESTS(roce_one_host, tb_config("hca.link_layer", "roce"); tb_config("sim.hosts", "1"))

/* The parameters are what the timing follows: another bandwidth and latency, the same
 * checks; and a one-packet RDMA WRITE, whose request and ACK both loop back, completes exactly
 * 2 x 1 000 ns later when hca.loopback_ns grows by 1 000 ns. */
static uint64_t write_cqe_time(const char *ns, const char *gbps)
{
	struct lb r;
	struct obs *o;
	uint64_t t;

	tb_config("hca.loopback_ns", ns);
	tb_config("hca.loopback_gbps", gbps);
	lb_open(&r, IBV_QPT_RC, 1, 1);
	o = obs_start();
	pattern(&r, 64, 2, 9);
	post_op(&r, 1, IBV_WR_RDMA_WRITE, 64, 2, 12288, 0, 0);
	check_send_wc(&r, "WRITE", 1, IBV_WC_RDMA_WRITE, 0);
	check_bytes(buf_of(&r, 1), 12288, 2, 9, 0x31, "WRITE");
	check_timing(o, &r, strtoull(gbps, NULL, 10), strtoull(ns, NULL, 10));
	cr_assert_eq(o->n, 2, "%d frames: expected the WRITE and its ACK", o->n);
	/* IB: LRH 8, BTH 12, RETH 16, 2 bytes and 2 of pad, ICRC 4, VCRC 2; the ACK: LRH, BTH,
	 * AETH 4, ICRC, VCRC */
	cr_assert_eq(o->f[0].len, 46);
	cr_assert_eq(o->f[0].op, 0x0a);
	cr_assert_eq(o->f[0].psn, PSN0);
	cr_assert_eq(o->f[1].len, 30);
	cr_assert_eq(o->f[1].op, 0x11);
	t = o->send_cqe_t;
	obs_stop(o);
	lb_close(&r);
	hcasim_shutdown();
	return t;
}

Test(loopback, timing_follows_loopback_ns_and_gbps)
{
	uint64_t t0 = write_cqe_time("60", "200");
	uint64_t t1 = write_cqe_time("1060", "200");
	uint64_t t2 = write_cqe_time("60", "10");

	cr_assert_eq(t1 - t0, 2000000u, "1 000 ns more each way: the CQE %" PRIu64 " ps later",
		     t1 - t0);
	/* 10 Gb/s instead of 200: 800 ps instead of 40 per byte. The ACK (30 bytes, no payload)
	 * takes all of it; the WRITE (46) at most all of it, as its headers go ahead of its
	 * payload's DMA read (cut-through); each arrival is rounded up to the core clock. */
	cr_assert_geq(t2 - t0, 30u * 760u - CORE_PS, "%" PRIu64, t2 - t0);
	cr_assert_leq(t2 - t0, (46u + 30u) * 760u + 2 * CORE_PS, "%" PRIu64, t2 - t0);
}

/* ---- the capture ---- */

static char *tmpdir_new(void)
{
	char *dir = strdup("/tmp/hcasim-loopback-XXXXXX");

	cr_assert_not_null(dir);
	cr_assert_not_null(mkdtemp(dir));
	return dir;
}

/* tshark's "opcode destqp psn" lines for a capture, and pcapcheck's verdict. */
static void check_capture(const char *path, const struct obs *o, bool roce)
{
	char cmd[1024], *out, *line, *save = NULL;
	int st, i = 0;

	snprintf(cmd, sizeof(cmd),
		 "tshark -r '%s' -T fields -e frame.len -e infiniband.bth.opcode "
		 "-e infiniband.bth.destqp -e infiniband.bth.psn -e frame.time_epoch 2>/dev/null",
		 path);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "%s: %s", cmd, out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		unsigned long long v[5];
		char *p = line, *end;

		cr_assert_lt(i, o->n, "more frames in the capture than looped back: %s", line);
		for (int k = 0; k < 5; k++) {
			v[k] = strtoull(p, &end, 0);
			cr_assert(end != p, "tshark line '%s': field %d", line, k);
			if (k == 4 && *end == '.') /* seconds.nanoseconds */
				v[k] = v[k] * 1000000000ull + strtoull(end + 1, &end, 10);
			p = end;
		}
		/* IB records carry 20 bytes of exported-PDU tags before the packet */
		cr_assert_eq(v[0], o->f[i].len + (roce ? 0 : 20), "frame %d: %llu bytes", i, v[0]);
		cr_assert_eq(v[1], o->f[i].op, "frame %d: opcode %llu", i, v[1]);
		cr_assert_eq(v[2], o->f[i].dqpn, "frame %d: destqp 0x%llx", i, v[2]);
		cr_assert_eq(v[3], o->f[i].psn, "frame %d: psn %llu", i, v[3]);
		cr_assert_eq(v[4], o->f[i].start / 1000, "frame %d: time %s", i, line);
	}
	cr_assert_eq(i, o->n, "%d frames in the capture, %d looped back", i, o->n);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-pcapcheck '%s' 2>&1", HCASIM_BUILD_DIR, path);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "pcapcheck: %s", out);
	free(out);
}

static void capture(bool roce)
{
	char *dir = tmpdir_new(), prefix[512], path[600];
	struct lb r;
	struct obs *o;
	size_t len;
	char *data;

	if (roce)
		tb_config("hca.link_layer", "roce");
	tb_config("hca.ports", "2");
	snprintf(prefix, sizeof(prefix), "%s/cap", dir);
	lb_open(&r, IBV_QPT_RC, 1, 2);
	cr_assert_eq(hcasim_pcap(prefix), 0, "%s", hcasim_last_error());
	o = obs_start();
	lb_workload(&r);
	cr_assert_eq(hcasim_pcap(NULL), 0, "%s", hcasim_last_error());
	snprintf(path, sizeof(path), "%s.hca0.loopback.pcap", prefix);
	check_capture(path, o, roce);
	/* the link pcaps hold only their header, and hcasim1 looped nothing back */
	snprintf(path, sizeof(path), "%s.link0.pcap", prefix);
	data = tb_slurp(path, &len);
	cr_assert_eq(len, SIM_PCAP_HEADER_BYTES, "%s has %zu bytes", path, len);
	free(data);
	snprintf(path, sizeof(path), "%s.hca1.loopback.pcap", prefix);
	cr_assert_neq(access(path, F_OK), 0, "%s exists", path);
	obs_stop(o);
	lb_close(&r);
	tb_rm_tmpdir(dir);
	free(dir);
}

Test(loopback, ib_capture_decodes_and_passes_pcapcheck) { capture(false); }
Test(loopback, roce_capture_decodes_and_passes_pcapcheck) { capture(true); }

/* ---- counters ---- */

Test(loopback, port_counters_do_not_count_it_and_the_device_does)
{
	static const char *const names[] = { "port_xmit_packets", "port_rcv_packets",
					     "port_xmit_data",    "port_rcv_data",
					     "unicast_xmit_packets", "unicast_rcv_packets",
					     "port_xmit_discards", "port_rcv_errors" };
	uint64_t before[2][8], v;
	struct hcasim_dev_counters c0, c1;
	struct lb r;
	struct obs *o;

	tb_config("hca.ports", "2");
	lb_open(&r, IBV_QPT_RC, 1, 2);
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < 8; k++)
			cr_assert_eq(hcasim_port_counter(0, p + 1, names[k], &before[p][k]), 0);
	cr_assert_eq(hcasim_dev_counters(0, &c0), 0);
	o = obs_start();
	lb_workload(&r);
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < 8; k++) {
			cr_assert_eq(hcasim_port_counter(0, p + 1, names[k], &v), 0);
			cr_assert_eq(v, before[p][k], "port %d %s moved from %" PRIu64 " to %" PRIu64,
				     p + 1, names[k], before[p][k], v);
		}
	cr_assert_eq(hcasim_dev_counters(0, &c1), 0);
	cr_assert_eq(c1.rx_pkts - c0.rx_pkts, (uint64_t)o->n, "rx_pkts moved by %" PRIu64
		     ", %d frames looped back", c1.rx_pkts - c0.rx_pkts, o->n);
	cr_assert_eq(c1.rx_dropped, c0.rx_dropped);
	cr_assert_eq(c1.rx_crc_errors, c0.rx_crc_errors);
	obs_stop(o);
	lb_close(&r);
}

/* ---- determinism ---- */

static char *run_captured(const char *dir, int n, size_t *len)
{
	char prefix[512], path[600];
	struct lb r;
	char *data;

	snprintf(prefix, sizeof(prefix), "%s/run%d", dir, n);
	lb_open(&r, IBV_QPT_RC, 1, 1);
	cr_assert_eq(hcasim_pcap(prefix), 0, "%s", hcasim_last_error());
	lb_workload(&r);
	lb_close(&r);
	hcasim_shutdown();
	snprintf(path, sizeof(path), "%s.hca0.loopback.pcap", prefix);
	data = tb_slurp(path, len);
	return data;
}

Test(loopback, same_config_same_capture)
{
	char *dir = tmpdir_new();
	size_t l0, l1;
	char *a, *b;

	for (int i = 0; i < 2; i++)
		cr_assert_eq(posix_memalign(&fixed_buf[i], 4096, BUF), 0);
	a = run_captured(dir, 0, &l0);
	b = run_captured(dir, 1, &l1);
	for (int i = 0; i < 2; i++)
		free(fixed_buf[i]);

	cr_assert_gt(l0, 24);
	cr_assert_eq(l0, l1);
	cr_assert_eq(memcmp(a, b, l0), 0, "the two captures differ");
	free(a);
	free(b);
	tb_rm_tmpdir(dir);
	free(dir);
}

/* ---- addresses that are not ours ---- */

/* An RDMA WRITE from qa (timeout 1, retry_cnt 1) whose frames port `port` discards: no
 * loopback, the first try and one retry dropped, IBV_WC_RETRY_EXC_ERR. */
static void write_is_discarded(struct lb *r, unsigned port)
{
	struct obs *o = obs_start();
	struct ibv_wc wc;

	post_op(r, 1, IBV_WR_RDMA_WRITE, 64, 8, 12288, 0, 0);
	tb_poll(r->cq[0], &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_RETRY_EXC_ERR, "%s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 1);
	cr_assert_eq(wc.qp_num, r->q[0]->qp_num);
	cr_assert_eq(o->n, 0, "%d frames looped back", o->n);
	cr_assert_eq(o->drops, 2, "%" PRIu64 " drops: the first try and one retry", o->drops);
	cr_assert_eq(o->drop_port, port, "dropped at port %u", o->drop_port);
	obs_stop(o);
}

/* An RC QP of hcasim0 addressing a LID no port has: with one host the frames go nowhere (no
 * link), as before loopback existed; the requester exhausts its retries. */
Test(loopback, a_lid_nobody_has_still_ends_in_retry_exceeded)
{
	struct ibv_qp_attr reset = { .qp_state = IBV_QPS_RESET };
	struct lb r;

	tb_config("sim.hosts", "1");
	tb_rc_timeout = 1;
	tb_rc_retry_cnt = 1;
	lb_open(&r, IBV_QPT_RC, 1, 1);
	/* qa again, towards LID 0x77 */
	cr_assert_eq(ibv_modify_qp(r.q[0], &reset, IBV_QP_STATE), 0, "%s", hcasim_last_error());
	r.pattr[1].lid = 0x77;
	lb_connect(&r, 0);
	write_is_discarded(&r, 1);
	lb_close(&r);
}

/* A frame for the HCA's other port while that port is down (its link pulled) is discarded at
 * the sending port, as a frame from a port that is not ACTIVE: port_xmit_discards, no
 * loopback, and the RC requester runs out of retries. */
Test(loopback, a_frame_for_the_other_port_while_it_is_down_is_discarded)
{
	struct lb r;
	uint64_t d0, d1;

	tb_config("hca.ports", "2");
	tb_rc_timeout = 1;
	tb_rc_retry_cnt = 1;
	lb_open(&r, IBV_QPT_RC, 1, 2);
	cr_assert_eq(hcasim_link_set(1, 0), 0, "%s", hcasim_last_error()); /* link0.2 */
	cr_assert_eq(hcasim_port_counter(0, 1, "port_xmit_discards", &d0), 0);
	write_is_discarded(&r, 1);
	cr_assert_eq(hcasim_port_counter(0, 1, "port_xmit_discards", &d1), 0);
	cr_assert_eq(d1 - d0, 2, "port_xmit_discards moved by %" PRIu64, d1 - d0);
	lb_close(&r);
}

/* With two hosts, the other host's LID still goes over the link. */
Test(loopback, the_peer_host_is_still_reached_over_the_link)
{
	struct tb_pair p;
	struct obs *o;

	tb_pair_open(&p, IBV_QPT_RC, 4096, 3);
	o = obs_start();
	tb_pair_write(&p, 4096);
	cr_assert_eq(o->n, 0, "%d frames looped back", o->n);
	cr_assert_eq(o->tx, 5, "%" PRIu64 " frames on the link: 4 requests and an ACK", o->tx);
	obs_stop(o);
	tb_pair_close(&p);
}
