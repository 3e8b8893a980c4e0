/* counters: the port counters (IBA PortCounters, PortCountersExtended) and the transport error
 * counters, read through hcasim_port_counter and hcasim_counters_dump, against what happened:
 * the frames in the capture, the faults the links injected, the completions and NAKs each
 * provoked error produces (docs/counters.md). Each test boots a fresh system. */
#include "sim/pcap.h"
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#define MTU_BYTES 1024

static uint64_t ctr(int dev, const char *name)
{
	uint64_t v = 0;

	cr_assert_eq(hcasim_port_counter(dev, 1, name, &v), 0, "%s: %s", name,
		     hcasim_last_error());
	return v;
}

#define expect_ctr(dev, name, want)                                                                \
	do {                                                                                       \
		uint64_t got_ = ctr(dev, name), want_ = (want);                                    \
		cr_assert_eq(got_, want_, "device %d %s = %llu, expected %llu", dev, name,          \
			     (unsigned long long)got_, (unsigned long long)want_);                 \
	} while (0)

/* ---- fixtures: two hosts, one connected QP each, a source and a destination buffer ---- */

enum { BUF = 16384 };

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, uint32_t len, uint64_t id)
{
	struct ibv_sge s = { (uintptr_t)mr->addr, len, mr->lkey };
	struct ibv_recv_wr r = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

	cr_assert_eq(ibv_post_recv(qp, &r, &bad), 0, "ibv_post_recv: %s", hcasim_last_error());
}

/* Post one signaled WR of opcode op: len bytes from the start of mr; remote_mr gives the
 * remote address and rkey of WRITE/READ (NULL otherwise). */
static void post_op(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_mr *mr, uint32_t len,
		    const struct ibv_mr *remote_mr, uint32_t rkey, uint64_t id)
{
	struct ibv_sge s = { (uintptr_t)mr->addr, len, mr->lkey };
	struct ibv_send_wr w = { .wr_id = id, .sg_list = &s, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	if (remote_mr) {
		w.wr.rdma.remote_addr = (uintptr_t)remote_mr->addr;
		w.wr.rdma.rkey = rkey;
	}
	cr_assert_eq(ibv_post_send(qp, &w, &bad), 0, "ibv_post_send: %s", hcasim_last_error());
}

static void expect_status(struct ibv_cq *cq, enum ibv_wc_status st, const char *who)
{
	struct ibv_wc wc;

	tb_poll(cq, &wc, 1);
	cr_assert_eq(wc.status, st, "%s: %s, expected %s", who, ibv_wc_status_str(wc.status),
		     ibv_wc_status_str(st));
}

/* Every counter of both hosts' port 1 except those named in skip (NULL-terminated) is 0. */
static void expect_other_errors_zero(const char *const *skip)
{
	static const char *const errs[] = {
		"symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
		"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
		"port_xmit_discards", "rq_num_lle", "rq_num_lqpoe", "rq_num_lpe", "rq_num_wrfe",
		"rq_num_rire", "rq_num_rae", "rq_num_roe", "rq_num_rnr", "rq_num_oos", "rq_num_dup",
		"sq_num_lle", "sq_num_lqpoe", "sq_num_lpe", "sq_num_wrfe", "sq_num_rire",
		"sq_num_rae", "sq_num_roe", "sq_num_rnr", "sq_num_oos", "sq_num_to", "sq_num_tree",
		"sq_num_rree", "num_cqovf", NULL
	};

	for (int dev = 0; dev < 2; dev++)
		for (int i = 0; errs[i]; i++) {
			bool skipped = false;

			for (int j = 0; skip && skip[j]; j++)
				skipped |= !strcmp(skip[j], errs[i]);
			if (!skipped)
				expect_ctr(dev, errs[i], 0);
		}
}

/* ---- data and packets against the capture ---- */

struct dir_sum {
	uint64_t bytes, pkts; /* frames towards host 0, host 1 */
};

/* Sum the frames of a capture by destination host. IB: the LRH's DLID (bytes 2-3) against
 * host 1's LID; RoCE: the destination MAC 02:48:53:00:h:p (byte 4 = h). The reader strips the
 * exported-PDU tags in front of an IB packet. */
static void capture_sums(const char *path, bool roce, uint16_t lid1, struct dir_sum to[2])
{
	struct sim_pcap_reader *r;
	struct sim_pcap_rec rec;
	uint32_t linktype;

	cr_assert_eq(sim_pcap_reader_open(&r, path), 0, "capture %s", path);
	linktype = sim_pcap_reader_linktype(r);
	cr_assert_eq(linktype, roce ? 1u : 252u, "linktype %u", linktype);
	memset(to, 0, 2 * sizeof(*to));
	while (sim_pcap_reader_next(r, &rec) == 1) {
		const uint8_t *fr = rec.data;
		int host;

		cr_assert_eq(rec.len, rec.orig_len, "a frame cut at the snaplen");
		cr_assert_gt(rec.len, 8);
		if (roce)
			host = fr[4];
		else
			host = ((uint16_t)(fr[2] << 8 | fr[3])) == lid1 ? 1 : 0;
		cr_assert(host == 0 || host == 1, "frame to host %d", host);
		to[host].bytes += rec.len;
		to[host].pkts++;
	}
	sim_pcap_reader_close(r);
}

/* A mixed RC workload (SENDs of 0..4000 bytes, a WRITE, a READ, an atomic) with the link
 * captured: each side's PortXmitData/PortXmitPkts are the words and frames the capture shows
 * leaving it, the other side received exactly those, and no error counter moved. */
static void clean_workload(const char *link_layer)
{
	static const uint32_t sends[] = { 0, 1, 100, 1024, 1025, 4000 };
	bool roce = !strcmp(link_layer, "roce");
	char prefix[64], path[96];
	struct dir_sum to[2];
	struct hcasim_qp_counters qa, qb;
	struct tb_pair p;

	tb_config("hca.link_layer", link_layer);
	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	snprintf(prefix, sizeof(prefix), "/tmp/hcasim-ctr-%d", (int)getpid());
	cr_assert_eq(hcasim_pcap(prefix), 0, "%s", hcasim_last_error());
	for (unsigned i = 0; i < sizeof(sends) / sizeof(sends[0]); i++) {
		post_recv(p.qb, p.dst, BUF, 100 + i);
		post_op(p.qa, IBV_WR_SEND, p.src, sends[i], NULL, 0, i);
		expect_status(p.a.cq, IBV_WC_SUCCESS, "SEND");
		expect_status(p.b.cq, IBV_WC_SUCCESS, "receive");
	}
	post_op(p.qa, IBV_WR_RDMA_WRITE, p.src, 5000, p.dst, p.dst->rkey, 50);
	expect_status(p.a.cq, IBV_WC_SUCCESS, "WRITE");
	post_op(p.qa, IBV_WR_RDMA_READ, p.src, 2500, p.dst, p.dst->rkey, 51);
	expect_status(p.a.cq, IBV_WC_SUCCESS, "READ");
	{
		struct ibv_sge s = { (uintptr_t)p.src->addr, 8, p.src->lkey };
		struct ibv_send_wr w = { .wr_id = 52, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					 .send_flags = IBV_SEND_SIGNALED },
				   *bad;

		w.wr.atomic.remote_addr = (uintptr_t)p.dst->addr;
		w.wr.atomic.rkey = p.dst->rkey;
		w.wr.atomic.compare_add = 5;
		cr_assert_eq(ibv_post_send(p.qa, &w, &bad), 0, "%s", hcasim_last_error());
		expect_status(p.a.cq, IBV_WC_SUCCESS, "FETCH_ADD");
	}
	hcasim_run_for_ps(10000000); /* the last ACKs land */
	cr_assert_eq(hcasim_pcap(NULL), 0, "%s", hcasim_last_error());
	snprintf(path, sizeof(path), "%s.link0.pcap", prefix);
	capture_sums(path, roce, p.b.port.lid, to);
	unlink(path);
	cr_assert_gt(to[0].pkts, 10);
	cr_assert_gt(to[1].pkts, 10);
	for (int dev = 0; dev < 2; dev++) {
		const struct dir_sum *out = &to[1 - dev], *in = &to[dev];

		expect_ctr(dev, "port_xmit_data", out->bytes / 4);
		expect_ctr(dev, "port_xmit_packets", out->pkts);
		expect_ctr(dev, "unicast_xmit_packets", out->pkts);
		expect_ctr(dev, "port_rcv_data", in->bytes / 4);
		expect_ctr(dev, "port_rcv_packets", in->pkts);
		expect_ctr(dev, "unicast_rcv_packets", in->pkts);
		expect_ctr(dev, "multicast_xmit_packets", 0);
		expect_ctr(dev, "multicast_rcv_packets", 0);
		/* Far from 2^32: the 32-bit PortCounters fields read the same. */
		expect_ctr(dev, "PortCounters.PortXmitData", out->bytes / 4);
		expect_ctr(dev, "PortCounters.PortRcvData", in->bytes / 4);
		expect_ctr(dev, "PortCounters.PortXmitPkts", out->pkts);
		expect_ctr(dev, "PortCounters.PortRcvPkts", in->pkts);
	}
	/* The packet counts agree with the QPs' own (requests, responses and ACKs). */
	cr_assert_eq(hcasim_qp_counters(0, p.qa->qp_num, &qa), 0);
	cr_assert_eq(hcasim_qp_counters(1, p.qb->qp_num, &qb), 0);
	expect_ctr(0, "port_xmit_packets", qa.tx_pkts);
	expect_ctr(1, "port_xmit_packets", qb.tx_pkts);
	expect_ctr(0, "port_rcv_packets", qa.rx_pkts);
	expect_ctr(1, "port_rcv_packets", qb.rx_pkts);
	expect_other_errors_zero(NULL);
	tb_pair_close(&p);
}

Test(counters, clean_ib_workload_data_and_packets_match_the_capture)
{
	clean_workload("ib");
}

Test(counters, clean_roce_workload_data_and_packets_match_the_capture)
{
	clean_workload("roce");
}

/* ---- receive errors against the injected corruptions ---- */

/* 2% of the frames of both directions corrupted while RC moves 200 SENDs: each side's
 * port_rcv_errors is exactly the corruptions injected into the frames it received, which
 * still count as received packets; the good ones are the unicast packets received. */
static void corrupted(const char *link_layer)
{
	struct hcasim_faults f = { .corrupt_ppm = 20000 };
	uint64_t n[2][5];
	struct tb_pair p;

	tb_config("hca.link_layer", link_layer);
	tb_rc_timeout = 8;
	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	cr_assert_eq(hcasim_link_faults(0, -1, &f), 0, "%s", hcasim_last_error());
	for (int i = 0; i < 200; i++) {
		post_recv(p.qb, p.dst, BUF, 1000 + (uint64_t)i);
		post_op(p.qa, IBV_WR_SEND, p.src, 2000 + (uint32_t)i, NULL, 0, (uint64_t)i);
		expect_status(p.a.cq, IBV_WC_SUCCESS, "SEND");
		expect_status(p.b.cq, IBV_WC_SUCCESS, "receive");
	}
	hcasim_run_for_ps(10000000);
	for (int s = 0; s < 2; s++)
		cr_assert_eq(hcasim_link_fault_counts(0, s, n[s]), 0);
	cr_assert_gt(n[0][1], 0, "no corruption from side 0");
	cr_assert_gt(n[1][1], 0, "no corruption from side 1");
	for (int dev = 0; dev < 2; dev++) {
		uint64_t injected = n[1 - dev][1];

		expect_ctr(dev, "port_rcv_errors", injected);
		expect_ctr(dev, "port_rcv_packets", ctr(1 - dev, "port_xmit_packets"));
		expect_ctr(dev, "port_rcv_data", ctr(1 - dev, "port_xmit_data"));
		expect_ctr(dev, "unicast_rcv_packets", ctr(dev, "port_rcv_packets") - injected);
		expect_ctr(dev, "symbol_error", 0);
	}
	tb_pair_close(&p);
}

Test(counters, corrupted_ib_frames_are_exactly_the_port_rcv_errors)
{
	corrupted("ib");
}

Test(counters, corrupted_roce_frames_are_exactly_the_port_rcv_errors)
{
	corrupted("roce");
}

/* PortRcvErrors is 16 bits wide and stops at 65535 (IBA 16.1.3.5) while the 32- and 64-bit
 * packet counters go on: 65600 UD sends, every one corrupted on the way. */
Test(counters, port_rcv_errors_saturates_at_65535)
{
	enum { SENDS = 65600, BATCH = 64 };
	struct tb_dev a, b;
	struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_UD,
					 .cap = { .max_send_wr = BATCH, .max_recv_wr = 1,
						  .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_ah_attr ah = { .port_num = 1 };
	struct hcasim_fault_target corrupt = { .qpn = -1, .psn = -1, .opcode = -1,
					       .fault = HCASIM_FAULT_CORRUPT };
	struct ibv_wc wc[BATCH];
	struct ibv_qp *qa, *qb;
	struct ibv_ah *h;
	uint64_t n[5];

	tb_open(&a, 0);
	tb_open(&b, 1);
	init.send_cq = init.recv_cq = a.cq;
	qa = ibv_create_qp(a.pd, &init);
	init.send_cq = init.recv_cq = b.cq;
	qb = ibv_create_qp(b.pd, &init);
	cr_assert(qa && qb, "%s", hcasim_last_error());
	tb_connect(&a, qa, &b, qb->qp_num, IBV_MTU_1024);
	tb_connect(&b, qb, &a, qa->qp_num, IBV_MTU_1024);
	ah.dlid = b.port.lid;
	h = ibv_create_ah(a.pd, &ah);
	cr_assert_not_null(h, "%s", hcasim_last_error());
	cr_assert_eq(hcasim_link_fault_target(0, 0, &corrupt), 0, "%s", hcasim_last_error());
	for (int sent = 0; sent < SENDS; sent += BATCH) {
		struct ibv_send_wr w[BATCH], *bad;

		memset(w, 0, sizeof(w));
		for (int i = 0; i < BATCH; i++) {
			w[i].wr_id = (uint64_t)(sent + i);
			w[i].opcode = IBV_WR_SEND;
			w[i].send_flags = i == BATCH - 1 ? IBV_SEND_SIGNALED : 0;
			w[i].wr.ud.ah = h;
			w[i].wr.ud.remote_qpn = qb->qp_num;
			w[i].wr.ud.remote_qkey = TB_QKEY;
			w[i].next = i + 1 < BATCH ? &w[i + 1] : NULL;
		}
		cr_assert_eq(ibv_post_send(qa, w, &bad), 0, "%s", hcasim_last_error());
		tb_poll(a.cq, wc, 1);
		cr_assert_eq(wc[0].status, IBV_WC_SUCCESS);
	}
	hcasim_run_for_ps(10000000);
	cr_assert_eq(hcasim_link_fault_counts(0, 0, n), 0);
	cr_assert_eq(n[1], SENDS, "corrupted %llu", (unsigned long long)n[1]);
	expect_ctr(1, "port_rcv_errors", 65535);
	expect_ctr(1, "PortCounters.PortRcvErrors", 65535);
	expect_ctr(1, "port_rcv_packets", SENDS);
	expect_ctr(1, "PortCounters.PortRcvPkts", SENDS);
	expect_ctr(1, "unicast_rcv_packets", 0);
	expect_ctr(0, "port_xmit_packets", SENDS);
	cr_assert_eq(ibv_destroy_ah(h), 0);
	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	tb_close(&a);
	tb_close(&b);
}

/* A third host has no partner: its port is ACTIVE but its link is missing, so what it sends is
 * discarded and counted as PortXmitDiscards, not as sent. */
Test(counters, sends_from_a_port_without_a_link_are_xmit_discards)
{
	struct tb_dev c;
	struct ibv_qp *q;
	struct ibv_ah_attr ah = { .dlid = 1, .port_num = 1 };
	struct ibv_ah *h;
	struct ibv_send_wr w = { .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	tb_config("sim.hosts", "3");
	tb_open(&c, 2);
	q = tb_create_qp(&c, IBV_QPT_UD);
	tb_connect(&c, q, &c, q->qp_num, IBV_MTU_1024);
	h = ibv_create_ah(c.pd, &ah);
	cr_assert_not_null(h, "%s", hcasim_last_error());
	w.wr.ud.ah = h;
	w.wr.ud.remote_qpn = 0x100;
	w.wr.ud.remote_qkey = TB_QKEY;
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(ibv_post_send(q, &w, &bad), 0, "%s", hcasim_last_error());
		expect_status(c.cq, IBV_WC_SUCCESS, "UD send");
	}
	expect_ctr(2, "port_xmit_discards", 3);
	expect_ctr(2, "port_xmit_packets", 0);
	expect_ctr(2, "port_xmit_data", 0);
	cr_assert_eq(ibv_destroy_ah(h), 0);
	cr_assert_eq(ibv_destroy_qp(q), 0);
	tb_close(&c);
}

/* ---- transport error counters ---- */

/* No receive posted and rnr_retry 2: the responder sends three RNR NAKs, the requester takes
 * three, and the third exhausts the RNR retries. */
Test(counters, rnr_naks_on_both_sides_then_rnr_retries_exceeded)
{
	static const char *const moved[] = { "rq_num_rnr", "sq_num_rnr", "sq_num_rree", NULL };
	struct tb_pair p;

	tb_rc_rnr_retry = 2;
	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	post_op(p.qa, IBV_WR_SEND, p.src, 64, NULL, 0, 1);
	expect_status(p.a.cq, IBV_WC_RNR_RETRY_EXC_ERR, "SEND");
	expect_ctr(1, "rq_num_rnr", 3);
	expect_ctr(0, "sq_num_rnr", 3);
	expect_ctr(0, "sq_num_rree", 1);
	expect_other_errors_zero(moved);
	tb_pair_close(&p);
}

/* PSN 0x102 of a 5-packet SEND is dropped once: the responder sees 0x103 and 0x104 out of
 * sequence (both are on the wire before the retransmission, the link keeps order) and NAKs
 * once; the requester takes that one sequence NAK and nothing times out. */
Test(counters, a_lost_request_is_out_of_sequence_on_both_sides)
{
	static const char *const moved[] = { "rq_num_oos", "sq_num_oos", NULL };
	struct hcasim_fault_target t = { .qpn = -1, .psn = 0x102, .opcode = -1,
					 .fault = HCASIM_FAULT_DROP, .count = 1 };
	struct tb_pair p;

	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	cr_assert_eq(hcasim_link_fault_target(0, 0, &t), 0, "%s", hcasim_last_error());
	post_recv(p.qb, p.dst, BUF, 2);
	post_op(p.qa, IBV_WR_SEND, p.src, 5 * MTU_BYTES, NULL, 0, 1);
	expect_status(p.a.cq, IBV_WC_SUCCESS, "SEND");
	expect_status(p.b.cq, IBV_WC_SUCCESS, "receive");
	expect_ctr(1, "rq_num_oos", 2);
	expect_ctr(0, "sq_num_oos", 1);
	expect_other_errors_zero(moved);
	tb_pair_close(&p);
}

/* Every ACK from B is dropped and retry_cnt is 2: A times out three times (first try and two
 * retries), B sees the two retransmissions as duplicates, and A's third timeout exceeds the
 * retries. */
Test(counters, lost_acks_are_timeouts_and_duplicates_then_retries_exceeded)
{
	static const char *const moved[] = { "sq_num_to", "rq_num_dup", "sq_num_tree", NULL };
	struct hcasim_fault_target t = { .qpn = -1, .psn = -1, .opcode = 0x11,
					 .fault = HCASIM_FAULT_DROP };
	struct tb_pair p;

	tb_rc_timeout = 8;
	tb_rc_retry_cnt = 2;
	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	cr_assert_eq(hcasim_link_fault_target(0, 1, &t), 0, "%s", hcasim_last_error());
	post_recv(p.qb, p.dst, BUF, 2);
	post_op(p.qa, IBV_WR_SEND, p.src, 100, NULL, 0, 1);
	expect_status(p.b.cq, IBV_WC_SUCCESS, "receive");
	expect_status(p.a.cq, IBV_WC_RETRY_EXC_ERR, "SEND");
	expect_ctr(0, "sq_num_to", 3);
	expect_ctr(1, "rq_num_dup", 2);
	expect_ctr(0, "sq_num_tree", 1);
	expect_other_errors_zero(moved);
	tb_pair_close(&p);
}

/* A WRITE with an rkey B never issued: B sends NAK-remote access, A completes REM_ACCESS_ERR. */
Test(counters, bad_rkey_is_remote_access_error_on_both_sides)
{
	static const char *const moved[] = { "rq_num_rae", "sq_num_rae", NULL };
	struct tb_pair p;

	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	post_op(p.qa, IBV_WR_RDMA_WRITE, p.src, 64, p.dst, p.dst->rkey ^ 0x5500, 1);
	expect_status(p.a.cq, IBV_WC_REM_ACCESS_ERR, "WRITE");
	expect_ctr(1, "rq_num_rae", 1);
	expect_ctr(0, "sq_num_rae", 1);
	expect_other_errors_zero(moved);
	tb_pair_close(&p);
}

/* A SEND longer than the receive buffer on RC: B sends NAK-invalid request, A completes
 * REM_INV_REQ_ERR (B's receive completes REM_INV_REQ_ERR too, which no rq_ counter takes). */
Test(counters, send_longer_than_the_receive_is_remote_invalid_request_on_both_sides)
{
	static const char *const moved[] = { "rq_num_rire", "sq_num_rire", NULL };
	struct tb_pair p;

	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	post_recv(p.qb, p.dst, 100, 2);
	post_op(p.qa, IBV_WR_SEND, p.src, 200, NULL, 0, 1);
	expect_status(p.b.cq, IBV_WC_REM_INV_REQ_ERR, "receive");
	expect_status(p.a.cq, IBV_WC_REM_INV_REQ_ERR, "SEND");
	expect_ctr(1, "rq_num_rire", 1);
	expect_ctr(0, "sq_num_rire", 1);
	expect_other_errors_zero(moved);
	tb_pair_close(&p);
}

/* A receive posted into an MR deregistered before the SEND arrives: a local protection error
 * at B (its receive completes LOC_PROT_ERR) reported as NAK-remote operational error, which A
 * completes as REM_OP_ERR. */
Test(counters, receive_into_a_deregistered_mr_is_lpe_and_roe)
{
	static const char *const moved[] = { "rq_num_lpe", "rq_num_roe", "sq_num_roe", NULL };
	struct tb_pair p;
	struct ibv_mr *gone;
	void *buf;

	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	gone = tb_mr(&p.b, 4096);
	buf = gone->addr;
	post_recv(p.qb, gone, 4096, 2);
	cr_assert_eq(ibv_dereg_mr(gone), 0);
	free(buf);
	post_op(p.qa, IBV_WR_SEND, p.src, 64, NULL, 0, 1);
	expect_status(p.b.cq, IBV_WC_LOC_PROT_ERR, "receive");
	expect_status(p.a.cq, IBV_WC_REM_OP_ERR, "SEND");
	expect_ctr(1, "rq_num_lpe", 1);
	expect_ctr(1, "rq_num_roe", 1);
	expect_ctr(0, "sq_num_roe", 1);
	expect_other_errors_zero(moved);
	tb_pair_close(&p);
}

/* UC, receive buffer too small: a local length error at B (UC never NAKs). */
Test(counters, uc_receive_too_small_is_rq_num_lle)
{
	static const char *const moved[] = { "rq_num_lle", NULL };
	struct tb_pair p;

	tb_pair_open(&p, IBV_QPT_UC, BUF, 1);
	post_recv(p.qb, p.dst, 100, 2);
	post_op(p.qa, IBV_WR_SEND, p.src, 200, NULL, 0, 1);
	expect_status(p.a.cq, IBV_WC_SUCCESS, "UC SEND");
	expect_status(p.b.cq, IBV_WC_LOC_LEN_ERR, "receive");
	expect_ctr(1, "rq_num_lle", 1);
	expect_other_errors_zero(moved);
	tb_pair_close(&p);
}

/* UD, a message longer than the port's active MTU: a local length error at the sender. */
Test(counters, ud_send_longer_than_the_mtu_is_sq_num_lle)
{
	static const char *const moved[] = { "sq_num_lle", NULL };
	struct ibv_ah_attr ah = { .port_num = 1 };
	struct ibv_send_wr w = { .wr_id = 1, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_sge s;
	struct ibv_ah *h;
	struct tb_pair p;

	tb_pair_open(&p, IBV_QPT_UD, BUF, 1);
	ah.dlid = p.b.port.lid;
	h = ibv_create_ah(p.a.pd, &ah);
	cr_assert_not_null(h, "%s", hcasim_last_error());
	s = (struct ibv_sge){ (uintptr_t)p.src->addr, 4096 + 1, p.src->lkey };
	w.sg_list = &s;
	w.wr.ud.ah = h;
	w.wr.ud.remote_qpn = p.qb->qp_num;
	w.wr.ud.remote_qkey = TB_QKEY;
	cr_assert_eq(ibv_post_send(p.qa, &w, &bad), 0, "%s", hcasim_last_error());
	expect_status(p.a.cq, IBV_WC_LOC_LEN_ERR, "UD SEND");
	expect_ctr(0, "sq_num_lle", 1);
	expect_other_errors_zero(moved);
	cr_assert_eq(ibv_destroy_ah(h), 0);
	tb_pair_close(&p);
}

/* RC, gathering from a deregistered lkey: a local protection error at the sender. */
Test(counters, send_from_a_deregistered_lkey_is_sq_num_lpe)
{
	static const char *const moved[] = { "sq_num_lpe", NULL };
	struct tb_pair p;
	struct ibv_mr *gone, stale;
	void *buf;

	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	gone = tb_mr(&p.a, 4096);
	stale = *gone;
	buf = gone->addr;
	cr_assert_eq(ibv_dereg_mr(gone), 0);
	post_recv(p.qb, p.dst, BUF, 2);
	post_op(p.qa, IBV_WR_SEND, &stale, 64, NULL, 0, 1);
	expect_status(p.a.cq, IBV_WC_LOC_PROT_ERR, "SEND");
	expect_ctr(0, "sq_num_lpe", 1);
	expect_other_errors_zero(moved);
	free(buf);
	tb_pair_close(&p);
}

/* Moving B to ERR flushes its three posted receives; two sends posted in ERR are flushed. */
Test(counters, flushed_work_requests_are_wrfe_on_their_queue)
{
	static const char *const moved[] = { "rq_num_wrfe", "sq_num_wrfe", NULL };
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[5];
	struct tb_pair p;

	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	for (int i = 0; i < 3; i++)
		post_recv(p.qb, p.dst, BUF, 10 + (uint64_t)i);
	cr_assert_eq(ibv_modify_qp(p.qb, &at, IBV_QP_STATE), 0, "%s", hcasim_last_error());
	for (int i = 0; i < 2; i++)
		post_op(p.qb, IBV_WR_SEND, p.dst, 8, NULL, 0, 20 + (uint64_t)i);
	tb_poll(p.b.cq, wc, 5);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	expect_ctr(1, "rq_num_wrfe", 3);
	expect_ctr(1, "sq_num_wrfe", 2);
	expect_other_errors_zero(moved);
	tb_pair_close(&p);
}

/* B's 4-entry CQ takes cq->cqe receive completions; the next one overruns it (device-wide
 * num_cqovf), B's QP goes to ERR and its one receive still posted is flushed. */
Test(counters, cq_overrun_is_num_cqovf)
{
	struct tb_dev a, b;
	struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 32, .max_recv_wr = 32,
						  .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_wc wc[32];
	struct ibv_qp *qa, *qb;
	struct ibv_mr *lm, *rm;
	struct ibv_cq *cq;
	int n;

	tb_open(&a, 0);
	tb_open(&b, 1);
	cq = ibv_create_cq(b.ctx, 4, NULL, NULL, 0);
	cr_assert_not_null(cq, "%s", hcasim_last_error());
	n = cq->cqe;
	cr_assert_leq(n, 30);
	init.send_cq = init.recv_cq = a.cq;
	qa = ibv_create_qp(a.pd, &init);
	init.send_cq = init.recv_cq = cq;
	qb = ibv_create_qp(b.pd, &init);
	cr_assert(qa && qb, "%s", hcasim_last_error());
	tb_connect(&a, qa, &b, qb->qp_num, IBV_MTU_1024);
	tb_connect(&b, qb, &a, qa->qp_num, IBV_MTU_1024);
	lm = tb_mr(&a, 64);
	rm = tb_mr(&b, 64);
	for (int i = 0; i < n + 2; i++)
		post_recv(qb, rm, 64, 100 + (uint64_t)i);
	for (int i = 0; i < n; i++)
		post_op(qa, IBV_WR_SEND, lm, 8, NULL, 0, (uint64_t)i);
	tb_poll(a.cq, wc, n);
	expect_ctr(1, "num_cqovf", 0);
	post_op(qa, IBV_WR_SEND, lm, 8, NULL, 0, 99);
	hcasim_run_for_ps(100000000);
	expect_ctr(1, "num_cqovf", 1);
	expect_ctr(0, "num_cqovf", 0);
	expect_ctr(1, "rq_num_wrfe", 1);
	for (int i = 0; i < 2; i++) {
		struct ibv_mr *m = i ? rm : lm;
		void *buf = m->addr;

		cr_assert_eq(ibv_dereg_mr(m), 0);
		free(buf);
	}
	cr_assert_eq(ibv_destroy_qp(qa), 0);
	cr_assert_eq(ibv_destroy_qp(qb), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0, "%s", hcasim_last_error());
	tb_close(&a);
	tb_close(&b);
}

/* qpc_hits/misses/writebacks are the context cache's counters of hcasim_dev_counters. */
Test(counters, qpc_counters_are_the_context_cache_counters)
{
	struct hcasim_dev_counters dc;
	struct tb_pair p;

	tb_config("hca.qpc_cache_entries", "1");
	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	{
		/* A second QP on B shares the one-entry cache: evictions and write-backs. */
		struct ibv_qp *q2 = tb_create_qp(&p.b, IBV_QPT_RC);

		tb_connect(&p.b, q2, &p.a, p.qa->qp_num, IBV_MTU_1024);
		post_recv(p.qb, p.dst, BUF, 2);
		post_op(p.qa, IBV_WR_SEND, p.src, 64, NULL, 0, 1);
		expect_status(p.a.cq, IBV_WC_SUCCESS, "SEND");
		expect_status(p.b.cq, IBV_WC_SUCCESS, "receive");
		cr_assert_eq(ibv_destroy_qp(q2), 0);
	}
	for (int dev = 0; dev < 2; dev++) {
		cr_assert_eq(hcasim_dev_counters(dev, &dc), 0);
		cr_assert_gt(dc.qpc_hits + dc.qpc_misses, 0);
		expect_ctr(dev, "qpc_hits", dc.qpc_hits);
		expect_ctr(dev, "qpc_misses", dc.qpc_misses);
		expect_ctr(dev, "qpc_writebacks", dc.qpc_writebacks);
	}
	cr_assert_gt(ctr(1, "qpc_writebacks"), 0);
	tb_pair_close(&p);
}

/* ---- the API ---- */

/* The Linux file names every port has (drivers/infiniband/core/sysfs.c with extended
 * counters), and the hw_counters this HCA adds. */
static const char *const linux_counters[] = {
	"symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
	"port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
	"port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
	"excessive_buffer_overrun_errors", "VL15_dropped", "port_xmit_data", "port_rcv_data",
	"port_xmit_packets", "port_xmit_wait", "port_rcv_packets", "unicast_rcv_packets",
	"unicast_xmit_packets", "multicast_rcv_packets", "multicast_xmit_packets", NULL
};
static const char *const hw_counters[] = {
	"rq_num_lle", "rq_num_lqpoe", "rq_num_lpe", "rq_num_wrfe", "rq_num_lae", "rq_num_rire",
	"rq_num_rae", "rq_num_roe", "rq_num_rnr", "rq_num_oos", "rq_num_dup", "rq_num_mce",
	"sq_num_lle", "sq_num_lqpoe", "sq_num_lpe", "sq_num_wrfe", "sq_num_mwbe", "sq_num_bre",
	"sq_num_rire", "sq_num_rae", "sq_num_roe", "sq_num_rnr", "sq_num_oos", "sq_num_to",
	"sq_num_tree", "sq_num_rree", "num_cqovf", "num_eqovf", "qpc_hits", "qpc_misses",
	"qpc_writebacks", NULL
};

static int find_desc(const char *name, struct hcasim_counter_desc *out)
{
	for (unsigned i = 0; hcasim_counter_desc(i, out) == 0; i++)
		if (out->name && !strcmp(out->name, name))
			return (int)i;
	return -1;
}

Test(counters, every_kernel_name_is_described_once_and_readable)
{
	struct hcasim_counter_desc d, e;
	struct tb_dev a;
	unsigned n = 0;
	uint64_t v, w;

	tb_open(&a, 0);
	for (int g = 0; g < 2; g++) {
		const char *const *names = g ? hw_counters : linux_counters;

		for (int i = 0; names[i]; i++) {
			cr_assert_geq(find_desc(names[i], &d), 0, "%s not described", names[i]);
			cr_assert_str_eq(d.group, g ? "hw_counters" : "counters", "%s", names[i]);
		}
	}
	for (; hcasim_counter_desc(n, &d) == 0; n++) {
		cr_assert(d.name || d.iba, "counter %u has no name", n);
		cr_assert(d.width == 4 || d.width == 8 || d.width == 16 || d.width == 32 ||
			  d.width == 64, "%s: width %u", d.name ? d.name : d.iba, d.width);
		cr_assert_not_null(d.doc);
		for (unsigned j = 0; j < n; j++) {
			cr_assert_eq(hcasim_counter_desc(j, &e), 0);
			cr_assert(!d.name || !e.name || strcmp(d.name, e.name), "%s twice", d.name);
			cr_assert(!d.iba || !e.iba || strcmp(d.iba, e.iba), "%s twice", d.iba);
		}
		if (d.name)
			cr_assert_eq(hcasim_port_counter(0, 1, d.name, &v), 0, "%s: %s", d.name,
				     hcasim_last_error());
		if (d.iba) {
			cr_assert_eq(hcasim_port_counter(0, 1, d.iba, &w), 0, "%s", d.iba);
			if (d.name)
				cr_assert_eq(v, w, "%s and %s differ", d.name, d.iba);
		}
	}
	cr_assert_eq(hcasim_counter_desc(n, &d), -ENOENT);
	cr_assert_eq(hcasim_counter_desc(0, NULL), -EINVAL);
	/* The IBA widths (IBA 16.1.3.5, 16.1.4). */
	find_desc("symbol_error", &d);
	cr_assert_eq(d.width, 16);
	find_desc("link_downed", &d);
	cr_assert_eq(d.width, 8);
	find_desc("excessive_buffer_overrun_errors", &d);
	cr_assert_eq(d.width, 4);
	find_desc("port_xmit_data", &d);
	cr_assert_eq(d.width, 64);
	cr_assert_str_eq(d.iba, "PortCountersExtended.PortXmitData");
	tb_close(&a);
}

Test(counters, bad_devices_ports_and_names_are_refused_changing_nothing)
{
	struct tb_dev a;
	uint64_t v = 0x5a5a;

	cr_assert_eq(hcasim_port_counter(0, 1, "port_xmit_data", &v), -EINVAL,
		     "before boot"); /* no device yet */
	cr_assert_eq(hcasim_counters_dump("/tmp"), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "not booted"), "%s", hcasim_last_error());
	tb_open(&a, 0);
	cr_assert_eq(hcasim_port_counter(0, 1, "port_xmit_dat", &v), -ENOENT);
	cr_assert(strstr(hcasim_last_error(), "'port_xmit_dat'"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_port_counter(0, 1, "PortXmitData", &v), -ENOENT,
		     "an IBA field needs its attribute");
	cr_assert_eq(hcasim_port_counter(2, 1, "port_xmit_data", &v), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "no device 2"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_port_counter(-1, 1, "port_xmit_data", &v), -EINVAL);
	cr_assert_eq(hcasim_port_counter(0, 2, "port_xmit_data", &v), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "no port 2"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_port_counter(0, 0, "port_xmit_data", &v), -EINVAL);
	cr_assert_eq(hcasim_port_counter(0, 1, NULL, &v), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "name"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_port_counter(0, 1, "port_xmit_data", NULL), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "value"), "%s", hcasim_last_error());
	cr_assert_eq(v, 0x5a5a, "a refused read wrote %llu", (unsigned long long)v);
	tb_close(&a);
}

/* ---- the sysfs dump ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static uint64_t read_file(const char *path)
{
	char buf[64] = { 0 }, *end;
	FILE *f = fopen(path, "r");
	size_t n;
	uint64_t v;

	cr_assert_not_null(f, "%s missing", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	cr_assert_gt(n, 1, "%s is empty", path);
	cr_assert_eq(buf[n - 1], '\n', "%s does not end in a newline", path);
	v = strtoull(buf, &end, 10);
	cr_assert_eq(end, buf + n - 1, "%s holds '%s', not one decimal number", path, buf);
	return v;
}

static unsigned count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	cr_assert_not_null(d, "%s missing", dir);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Every counter of every device, as sysfs would show it: the values are the API's, and the
 * groups hold exactly the named counters. */
static void expect_dump(const char *dir, const struct tb_dev *devs, const uint64_t *values)
{
	struct hcasim_counter_desc d;
	char path[512];
	unsigned k = 0, per_group[2] = { 0, 0 };

	for (int dev = 0; dev < 2; dev++) {
		const char *name = ibv_get_device_name(devs[dev].list[dev]);

		for (unsigned i = 0; hcasim_counter_desc(i, &d) == 0; i++) {
			if (!d.name)
				continue;
			snprintf(path, sizeof(path), "%s/%s/ports/1/%s/%s", dir, name, d.group,
				 d.name);
			cr_assert_eq(read_file(path), values[k], "%s: %llu in the file", path,
				     (unsigned long long)values[k]);
			k++;
			if (dev == 0)
				per_group[strcmp(d.group, "counters") != 0]++;
		}
		snprintf(path, sizeof(path), "%s/%s/ports/1/counters", dir, name);
		cr_assert_eq(count_entries(path), per_group[0], "%s", path);
		snprintf(path, sizeof(path), "%s/%s/ports/1/hw_counters", dir, name);
		cr_assert_eq(count_entries(path), per_group[1], "%s", path);
		snprintf(path, sizeof(path), "%s/%s/ports", dir, name);
		cr_assert_eq(count_entries(path), 1, "%s: one port", path);
	}
}

/* Read every named counter of devices 0 and 1 in the order expect_dump checks them. */
static unsigned snapshot(uint64_t *values)
{
	struct hcasim_counter_desc d;
	unsigned k = 0;

	for (int dev = 0; dev < 2; dev++)
		for (unsigned i = 0; hcasim_counter_desc(i, &d) == 0; i++)
			if (d.name)
				values[k++] = ctr(dev, d.name);
	return k;
}

/* A workload with an error on each side, then hcasim_counters_dump into a fresh directory. */
Test(counters, dump_writes_the_sysfs_tree_with_the_api_values)
{
	uint64_t values[256];
	char dir[128];
	struct tb_pair p;

	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	post_recv(p.qb, p.dst, BUF, 2);
	post_op(p.qa, IBV_WR_SEND, p.src, 3000, NULL, 0, 1);
	expect_status(p.a.cq, IBV_WC_SUCCESS, "SEND");
	post_op(p.qa, IBV_WR_RDMA_WRITE, p.src, 64, p.dst, p.dst->rkey ^ 0x100, 2);
	expect_status(p.a.cq, IBV_WC_REM_ACCESS_ERR, "WRITE");
	cr_assert_leq(snapshot(values), 256);
	cr_assert_gt(ctr(0, "port_xmit_data"), 0);
	snprintf(dir, sizeof(dir), "/tmp/hcasim-ctr-dump-%d", (int)getpid());
	rm_tree(dir);
	cr_assert_eq(hcasim_counters_dump(dir), 0, "%s", hcasim_last_error());
	expect_dump(dir, (struct tb_dev[]){ p.a, p.b }, values);
	/* Again over the existing tree: files are rewritten, not refused. */
	cr_assert_eq(hcasim_counters_dump(dir), 0, "%s", hcasim_last_error());
	expect_dump(dir, (struct tb_dev[]){ p.a, p.b }, values);
	rm_tree(dir);
	tb_pair_close(&p);
}

Test(counters, dump_to_a_bad_directory_is_refused_naming_it)
{
	char file[128], under[192];
	struct stat st;
	struct tb_dev a;
	FILE *f;

	tb_open(&a, 0);
	cr_assert_eq(hcasim_counters_dump(NULL), -EINVAL);
	cr_assert(strstr(hcasim_last_error(), "dir"), "%s", hcasim_last_error());
	cr_assert_eq(hcasim_counters_dump(""), -EINVAL);
	/* A regular file where the directory should be. */
	snprintf(file, sizeof(file), "/tmp/hcasim-ctr-file-%d", (int)getpid());
	f = fopen(file, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_eq(hcasim_counters_dump(file), -ENOTDIR);
	cr_assert(strstr(hcasim_last_error(), file), "%s", hcasim_last_error());
	/* Inside a directory that does not exist: nothing is created. */
	snprintf(under, sizeof(under), "%s.missing/sub", file);
	cr_assert_eq(hcasim_counters_dump(under), -ENOENT);
	cr_assert(strstr(hcasim_last_error(), under), "%s", hcasim_last_error());
	snprintf(under, sizeof(under), "%s.missing", file);
	cr_assert_neq(stat(under, &st), 0, "%s was created", under);
	/* A device directory that is a file. */
	cr_assert_eq(remove(file), 0);
	cr_assert_eq(mkdir(file, 0777), 0);
	snprintf(under, sizeof(under), "%s/%s", file, ibv_get_device_name(a.list[0]));
	f = fopen(under, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_eq(hcasim_counters_dump(file), -ENOTDIR);
	cr_assert(strstr(hcasim_last_error(), under), "%s", hcasim_last_error());
	rm_tree(file);
	tb_close(&a);
}

/* HCASIM_COUNTERS_DIR (or the key counters.dump_dir) dumps at hcasim_shutdown(). */
static void dump_at_shutdown(bool by_env)
{
	uint64_t values[256];
	char dir[128];
	struct tb_pair p;
	struct tb_dev devs[2];

	snprintf(dir, sizeof(dir), "/tmp/hcasim-ctr-shut-%d", (int)getpid());
	rm_tree(dir);
	if (by_env)
		cr_assert_eq(setenv("HCASIM_COUNTERS_DIR", dir, 1), 0);
	else
		tb_config("counters.dump_dir", dir);
	tb_pair_open(&p, IBV_QPT_RC, BUF, 1);
	post_recv(p.qb, p.dst, BUF, 2);
	post_op(p.qa, IBV_WR_SEND, p.src, 5000, NULL, 0, 1);
	expect_status(p.a.cq, IBV_WC_SUCCESS, "SEND");
	hcasim_run_for_ps(10000000);
	snapshot(values);
	devs[0] = p.a;
	devs[1] = p.b;
	/* Keep the device lists for the names; close everything else. */
	p.a.list = p.b.list = NULL;
	tb_pair_close(&p);
	hcasim_shutdown();
	expect_dump(dir, devs, values);
	ibv_free_device_list(devs[0].list);
	ibv_free_device_list(devs[1].list);
	rm_tree(dir);
}

Test(counters, hcasim_counters_dir_dumps_at_shutdown)
{
	dump_at_shutdown(true);
}

Test(counters, counters_dump_dir_key_dumps_at_shutdown)
{
	dump_at_shutdown(false);
}
