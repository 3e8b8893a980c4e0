/* link: serialization and latency to the picosecond, queueing behind earlier frames, two
 * independent directions, byte-exact delivery, frames in flight at teardown, the link.tx trace,
 * and the pcap tap: pcapng with nanosecond timestamps, decoded by tshark on both link types, in
 * transmit-start order, accepted by hcasim-pcapcheck and rejected by it after one flipped bit;
 * every fault that hits a frame (drop, corruption, duplicate, delay, reorder, the link going
 * down) is a comment on it that tshark shows as frame.comment; the reader also reads libpcap. */
#include "model/pkt.h"
#include "sim/kernel.h"
#include "sim/link.h"
#include "sim/pcap.h"
#include "sim/trace.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RX 64

/* What one side received. */
struct rx_log {
	int n;			   /* frames */
	sim_time_t at[MAX_RX];	   /* delivery times */
	size_t len[MAX_RX];	   /* their lengths */
	uint8_t data[MAX_RX][512]; /* their first bytes */
	bool fcs_ok[MAX_RX];	   /* what the receiving MAC's FCS check said */
};

static struct sim_kernel *K;
static struct rx_log RX[2];

static void rx(void *port, const uint8_t *frame, size_t len, bool fcs_ok, bool crc_pending)
{
	cr_assert(!crc_pending, "sent sealed, arrived pending");
	struct rx_log *lg = port;

	cr_assert_lt(lg->n, MAX_RX);
	lg->at[lg->n] = sim_now(K);
	lg->len[lg->n] = len;
	lg->fcs_ok[lg->n] = fcs_ok;
	memcpy(lg->data[lg->n], frame, len < 512 ? len : 512);
	lg->n++;
}

static void setup(void)
{
	memset(RX, 0, sizeof(RX));
	K = sim_kernel_create();
	sim_kernel_set_current(K);
}

static void teardown(void)
{
	sim_kernel_destroy(K);
	K = NULL;
}

static struct sim_link *mklink(enum sim_link_kind kind, uint64_t mbps, uint64_t lat_ps,
			       unsigned ovh)
{
	struct sim_link *l =
	    sim_link_create(kind == SIM_LINK_IB ? "ib0" : "eth0", kind, mbps, lat_ps, ovh);

	sim_link_attach(l, 0, rx, &RX[0]);
	sim_link_attach(l, 1, rx, &RX[1]);
	return l;
}

static uint8_t zeros[8192];

TestSuite(link, .init = setup, .fini = teardown);

Test(link, serialization_is_bytes_times_8e6_over_rate_in_ps)
{
	struct sim_link *ib = mklink(SIM_LINK_IB, 100000, 0, 0);
	struct sim_link *eth = mklink(SIM_LINK_ETH, 25000, 0, hm_pkt_wire_overhead(HM_LL_ROCE));
	struct sim_link *odd = mklink(SIM_LINK_IB, 3, 0, 0);
	struct sim_link *fast = mklink(SIM_LINK_IB, 16000000, 0, 0);

	/* 4096 payload + LRH, BTH, ICRC, VCRC at 4x EDR */
	cr_expect_eq(sim_link_send(ib, 0, zeros, 4096 + 26), 329760);
	cr_expect_eq(sim_link_tx_free_at(ib, 0), 329760);
	cr_expect_eq(sim_link_tx_free_at(ib, 1), 0, "the other direction is idle");
	/* 64 bytes + 24 bytes of preamble, FCS and gap at 25 Gb/s: 88 * 320 ps */
	cr_expect_eq(sim_link_send(eth, 1, zeros, 64), 28160);
	/* rounded to the nearest ps: 8e6 / 3 = 2666666.67; halves round up: 8e6 / 16e6 = 0.5 */
	cr_expect_eq(sim_link_send(odd, 0, zeros, 1), 2666667);
	cr_expect_eq(sim_link_send(fast, 0, zeros, 1), 1);
	sim_link_destroy(ib);
	sim_link_destroy(eth);
	sim_link_destroy(odd);
	sim_link_destroy(fast);
}

/* Ethernet: the receiving MAC checks the FCS the sending MAC computed, so a bit flipped
 * anywhere in the frame (MAC addresses and the fields the ICRC masks included) fails it;
 * clean frames pass. InfiniBand frames carry their own CRCs: the link reports them as sent. */
Test(link, a_corrupted_ethernet_frame_fails_its_fcs_and_a_clean_one_passes)
{
	struct sim_link *eth = mklink(SIM_LINK_ETH, 25000, 0, hm_pkt_wire_overhead(HM_LL_ROCE));
	struct sim_link *ib = mklink(SIM_LINK_IB, 100000, 0, 0);
	struct sim_link_faults all = { .corrupt_ppm = 1000000 };
	uint8_t f[128];
	uint64_t n[5];

	for (size_t i = 0; i < sizeof(f); i++)
		f[i] = (uint8_t)(i * 37 + 1);
	for (int i = 0; i < 4; i++)
		sim_link_send(eth, 0, f, sizeof(f));
	sim_run_until(K, 1000000);
	cr_assert_eq(RX[1].n, 4);
	for (int i = 0; i < 4; i++)
		cr_expect(RX[1].fcs_ok[i], "clean frame %d failed its FCS", i);
	sim_link_set_faults(eth, 0, &all, 7);
	for (int i = 0; i < 32; i++)
		sim_link_send(eth, 0, f, sizeof(f));
	sim_run_until(K, 3000000);
	cr_assert_eq(RX[1].n, 36);
	sim_link_fault_counts(eth, 0, n);
	cr_expect_eq(n[1], 32, "corruptions: %llu", (unsigned long long)n[1]);
	for (int i = 4; i < 36; i++) {
		cr_expect(!RX[1].fcs_ok[i], "corrupted frame %d passed its FCS", i);
		cr_expect(memcmp(RX[1].data[i], f, sizeof(f)) != 0, "frame %d was not changed", i);
	}
	sim_link_set_faults(ib, 1, &all, 7);
	sim_link_send(ib, 1, f, sizeof(f));
	sim_run_until(K, 4000000);
	cr_assert_eq(RX[0].n, 1);
	cr_expect(RX[0].fcs_ok[0], "an InfiniBand frame has no FCS to fail");
	sim_link_destroy(eth);
	sim_link_destroy(ib);
}

Test(link, delivery_is_one_latency_after_the_last_bit)
{
	struct sim_link *l = mklink(SIM_LINK_IB, 100000, 100000, 0);

	cr_expect_eq(sim_link_send(l, 0, zeros, 4122), 329760);
	sim_run_until(K, 1000000);
	cr_assert_eq(RX[1].n, 1);
	cr_expect_eq(RX[1].at[0], 329760 + 100000);
	cr_expect_eq(RX[0].n, 0, "nothing comes back to the sender");
	/* a send on an idle link starts now */
	cr_expect_eq(sim_link_send(l, 0, zeros, 100), 1000000 + 8000);
	sim_run_until(K, 2000000);
	cr_assert_eq(RX[1].n, 2);
	cr_expect_eq(RX[1].at[1], 1000000 + 8000 + 100000);
	sim_link_destroy(l);
}

Test(link, back_to_back_frames_queue_behind_each_other)
{
	struct sim_link *l = mklink(SIM_LINK_ETH, 100000, 50000, 24);
	sim_time_t a, b, c;

	a = sim_link_send(l, 0, zeros, 1000); /* (1000 + 24) * 80 ps */
	b = sim_link_send(l, 0, zeros, 500);
	sim_run_until(K, 10000);
	c = sim_link_send(l, 0, zeros, 76); /* sent while b is still on the wire */
	cr_expect_eq(a, 81920);
	cr_expect_eq(b, 81920 + 41920);
	cr_expect_eq(c, 81920 + 41920 + 8000);
	cr_expect_eq(sim_link_tx_free_at(l, 0), c);
	sim_run_until(K, 1000000);
	cr_assert_eq(RX[1].n, 3);
	cr_expect_eq(RX[1].at[0], a + 50000);
	cr_expect_eq(RX[1].at[1], b + 50000);
	cr_expect_eq(RX[1].at[2], c + 50000);
	cr_expect_eq(RX[1].len[0], 1000);
	cr_expect_eq(RX[1].len[1], 500);
	cr_expect_eq(RX[1].len[2], 76);
	cr_expect_eq(sim_link_tx_free_at(l, 0), 1000000, "idle: free now");
	sim_link_destroy(l);
}

Test(link, the_two_directions_are_independent)
{
	struct sim_link *l = mklink(SIM_LINK_IB, 50000, 1000, 0);

	cr_expect_eq(sim_link_send(l, 0, zeros, 1000), 160000);
	cr_expect_eq(sim_link_send(l, 1, zeros, 1000), 160000, "not queued behind side 0");
	cr_expect_eq(sim_link_send(l, 1, zeros, 500), 240000);
	sim_run_until(K, 1000000);
	cr_expect_eq(RX[1].n, 1);
	cr_expect_eq(RX[0].n, 2);
	cr_expect_eq(RX[1].at[0], 161000);
	cr_expect_eq(RX[0].at[0], 161000);
	cr_expect_eq(RX[0].at[1], 241000);
	cr_expect_eq(sim_link_frames(l, 0), 1);
	cr_expect_eq(sim_link_frames(l, 1), 2);
	cr_expect_eq(sim_link_bytes(l, 0), 1000);
	cr_expect_eq(sim_link_bytes(l, 1), 1500);
	sim_link_destroy(l);
}

Test(link, delivered_bytes_are_a_copy_of_what_was_sent)
{
	struct sim_link *l = mklink(SIM_LINK_IB, 100000, 0, 0);
	uint8_t f[300], orig[300];

	for (int i = 0; i < 300; i++)
		f[i] = orig[i] = (uint8_t)(i * 13 + 1);
	sim_link_send(l, 1, f, sizeof(f));
	memset(f, 0xee, sizeof(f)); /* the sender reuses its buffer at once */
	sim_run_until(K, 1000000);
	cr_assert_eq(RX[0].n, 1);
	cr_expect_eq(RX[0].len[0], 300);
	cr_expect(!memcmp(RX[0].data[0], orig, 300));
	sim_link_destroy(l);
}

Test(link, frames_in_flight_neither_leak_nor_land_after_teardown)
{
	struct sim_link *l = mklink(SIM_LINK_IB, 100000, 100000, 0);

	sim_link_send(l, 0, zeros, 1000);
	sim_link_send(l, 1, zeros, 1000);
	sim_link_destroy(l); /* frames still on the wire are dropped when they would land */
	sim_run_until(K, 10000000);
	cr_expect_eq(RX[0].n + RX[1].n, 0);
	l = mklink(SIM_LINK_IB, 100000, 100000, 0);
	sim_link_send(l, 0, zeros, 1000);
	sim_kernel_destroy(K); /* the kernel frees the frames it still holds (ASan checks) */
	K = sim_kernel_create();
	sim_kernel_set_current(K);
	sim_link_destroy(l);
}

/* A receiver that keeps the frame it is given (as the HCA's port does). */
static uint8_t *kept;

static void rx_keep(void *port, const uint8_t *frame, size_t len, bool fcs_ok, bool crc_pending)
{
	(void)port, (void)fcs_ok, (void)crc_pending;
	kept = sim_link_frame_keep(frame);
	cr_assert_eq(sim_link_frame_len(kept), len);
}

/* Frames by reference down to the DMA write: each write that lands a received payload from
 * where it lies holds the frame, and the frame's bytes stay until the last reference is given
 * back (a buffer freed early would be handed out again and overwritten). */
Test(link, a_kept_frame_lives_until_its_last_reference_is_given_back)
{
	struct sim_link *l = sim_link_create("ib0", SIM_LINK_IB, 100000, 0, 0);
	uint8_t f[200], *other;

	for (int i = 0; i < 200; i++)
		f[i] = (uint8_t)(i * 7 + 3);
	sim_link_attach(l, 0, rx_keep, NULL);
	sim_link_attach(l, 1, rx_keep, NULL);
	kept = NULL;
	sim_link_send(l, 1, f, sizeof(f));
	sim_run_until(K, 1000000);
	cr_assert_not_null(kept);
	cr_assert_eq(sim_link_frame_hold(kept), kept);
	cr_assert_eq(sim_link_frame_hold(kept), kept);
	sim_link_frame_free(kept); /* the receiver's own, then one write's */
	sim_link_frame_free(kept);
	other = sim_link_frame_new(sizeof(f));
	memset(other, 0xee, sizeof(f));
	cr_expect(!memcmp(kept, f, sizeof(f)), "a held frame was freed before its last write");
	sim_link_frame_free(other);
	sim_link_frame_free(kept); /* the last write's: now it goes (ASan: neither leaked nor twice) */
	sim_link_destroy(l);
}

Test(link, each_send_is_a_link_tx_raw_trace_line_without_a_classifier)
{
	char path[128], line[256];
	struct sim_link *l = mklink(SIM_LINK_IB, 100000, 0, 0);
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/tmp/hcasim-link-trace-%d.txt", (int)getpid());
	cr_assert_eq(sim_trace_open(path), 0);
	cr_assert_eq(sim_trace_select("link"), 0);
	sim_link_send(l, 0, zeros, 64);
	sim_link_send(l, 0, zeros, 100);
	sim_trace_select("");
	sim_trace_close();
	f = fopen(path, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		const char *want =
		    n == 0 ? "t=0 link.tx_raw link=ib0 side=0 bytes=64 start=0 end=5120\n"
			   : "t=0 link.tx_raw link=ib0 side=0 bytes=100 start=5120 "
			     "end=13120\n";

		cr_expect_str_eq(line, want);
		n++;
	}
	fclose(f);
	unlink(path);
	cr_expect_eq(n, 2);
	sim_link_destroy(l);
}

/* ---- pcap ---- */

/* Run cmd; its stdout and stderr without tshark's "Running as user" line; its exit status. */
static char *run(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap), line[1024];
	int st;

	cr_assert_not_null(p, "%s", cmd);
	while (fgets(line, sizeof(line), p)) {
		size_t n = strlen(line);

		if (!strncmp(line, "Running as user", 15))
			continue;
		if (len + n + 1 > cap)
			out = realloc(out, cap *= 2);
		memcpy(out + len, line, n);
		len += n;
	}
	out[len] = 0;
	st = pclose(p);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

struct sent {
	uint8_t op;   /* BTH opcode */
	uint32_t qpn; /* DestQP */
	uint32_t psn; /* PSN */
	int side;     /* sender */
	bool grh;     /* IB: with a GRH */
	uint32_t len; /* payload bytes */
};

/* Interleaved traffic from both sides; side 0 sends two frames back to back, so its second
 * starts after side 1's first: the file order differs from the send order. */
static const struct sent traffic[] = {
    {HM_OP_SEND_ONLY, 0x000012, 100, 0, false, 1500},
    {HM_OP_WRITE_FIRST, 0x000012, 101, 0, true, 1024},
    {HM_OP_ACKNOWLEDGE, 0x000034, 100, 1, false, 0},
    {HM_OP_READ_REQUEST, 0xabcdef, 0xffffff, 1, true, 0},
    {HM_OP_UD_SEND_ONLY_IMM, 0x000001, 7, 0, false, 33},
    {HM_OP_UC | HM_OP_WRITE_ONLY_IMM, 0x123456, 0, 1, false, 5},
    {HM_OP_COMPARE_SWAP, 0x000012, 102, 0, false, 0},
    {HM_OP_ATOMIC_ACKNOWLEDGE, 0x000034, 102, 1, true, 0},
    {HM_OP_READ_RESPONSE_ONLY, 0x000034, 101, 1, false, 256},
    {HM_OP_SEND_ONLY_INV, 0x000012, 103, 0, false, 3},
};
#define NTRAFFIC (sizeof(traffic) / sizeof(traffic[0]))

static uint8_t pay[2048];

static size_t frame_of(enum hm_link_layer ll, const struct sent *s, uint8_t *buf, size_t cap)
{
	struct hm_pkt p = {0};

	for (int i = 0; i < 2048; i++)
		pay[i] = (uint8_t)(i ^ 0x5a);
	p.opcode = s->op;
	p.dqpn = s->qpn;
	p.psn = s->psn;
	p.pkey = 0xffff;
	p.ackreq = true;
	p.payload = pay;
	p.paylen = s->len;
	p.reth_dmalen = s->len;
	p.aeth_syndrome = 0x1f;
	p.deth_qkey = 0x11111111;
	p.has_grh = s->grh;
	p.hop_limit = 64;
	p.slid = (uint16_t)(s->side + 1);
	p.dlid = (uint16_t)(2 - s->side);
	p.sgid[10] = p.sgid[11] = p.dgid[10] = p.dgid[11] = 0xff;
	p.sgid[12] = p.dgid[12] = 10;
	p.sgid[15] = (uint8_t)(s->side + 1);
	p.dgid[15] = (uint8_t)(2 - s->side);
	memcpy(p.smac, s->side ? "\x02\0\0\0\0\x02" : "\x02\0\0\0\0\x01", 6);
	memcpy(p.dmac, s->side ? "\x02\0\0\0\0\x01" : "\x02\0\0\0\0\x02", 6);
	p.udp_sport = 0xc000;
	return hm_pkt_build(ll, &p, buf, cap);
}

/* Send the traffic over a link of kind with a tap on path; returns the frames' transmit start
 * times in file order through order[] (indices into traffic[]). */
static void capture(enum sim_link_kind kind, const char *path, int order[NTRAFFIC],
		    sim_time_t start_ps[NTRAFFIC])
{
	enum hm_link_layer ll = kind == SIM_LINK_IB ? HM_LL_IB : HM_LL_ROCE;
	struct sim_link *l = mklink(kind, 100000, 100000, hm_pkt_wire_overhead(ll));
	uint8_t buf[HM_PKT_MAX_BYTES];

	cr_assert_eq(sim_link_pcap(l, path), 0);
	for (size_t i = 0; i < NTRAFFIC; i++) {
		size_t len = frame_of(ll, &traffic[i], buf, sizeof(buf));
		int side = traffic[i].side;
		sim_time_t busy = sim_link_tx_free_at(l, side);

		cr_assert_gt(len, 0);
		start_ps[i] = busy > sim_now(K) ? busy : sim_now(K);
		sim_link_send(l, side, buf, len);
		if (i != 0) /* frames 0 and 1 go back to back */
			sim_run_until(K, sim_now(K) + 12345);
	}
	sim_run_until(K, sim_now(K) + 10000000);
	cr_assert_eq(sim_link_pcap(l, NULL), 0);
	sim_link_destroy(l);
	/* file order: by start time, ties in send order */
	for (size_t i = 0; i < NTRAFFIC; i++)
		order[i] = (int)i;
	for (size_t i = 1; i < NTRAFFIC; i++)
		for (size_t j = i; j > 0 && start_ps[order[j - 1]] > start_ps[order[j]]; j--) {
			int t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
}

static void expect_tshark_decodes(const char *path, const int order[NTRAFFIC])
{
	char cmd[512], want[64], *out, *line, *save = NULL;
	int st;
	size_t n = 0;

	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s -T fields -e infiniband.bth.opcode -e infiniband.bth.destqp "
		 "-e infiniband.bth.psn 2>&1",
		 path);
	out = run(cmd, &st);
	cr_assert_eq(st, 0, "%s:\n%s", cmd, out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
		const struct sent *s;

		cr_assert_lt(n, NTRAFFIC, "extra line '%s'", line);
		s = &traffic[order[n]];
		snprintf(want, sizeof(want), "%u\t0x%06x\t%u", s->op, s->qpn, s->psn);
		cr_expect_str_eq(line, want, "frame %zu", n + 1);
	}
	cr_expect_eq(n, NTRAFFIC, "tshark decoded %zu frames", n);
	free(out);
}

/* Read the file back: link type, times (ns) in order, frames intact. */
static void expect_records(const char *path, uint32_t linktype, const int order[NTRAFFIC],
			   const sim_time_t start_ps[NTRAFFIC])
{
	enum hm_link_layer ll = linktype == SIM_PCAP_ETHERNET ? HM_LL_ROCE : HM_LL_IB;
	struct sim_pcap_reader *r;
	struct sim_pcap_rec rec;
	uint8_t buf[HM_PKT_MAX_BYTES];
	size_t n = 0;

	cr_assert_eq(sim_pcap_reader_open(&r, path), 0);
	cr_expect_eq(sim_pcap_reader_linktype(r), linktype);
	cr_expect(sim_pcap_reader_is_ng(r), "%s is not pcapng", path);
	while (sim_pcap_reader_next(r, &rec) > 0) {
		size_t len;

		cr_assert_lt(n, NTRAFFIC);
		len = frame_of(ll, &traffic[order[n]], buf, sizeof(buf));
		cr_expect_eq(rec.t_ns, start_ps[order[n]] / 1000, "frame %zu time", n + 1);
		cr_expect_eq(rec.len, len);
		cr_expect_eq(rec.orig_len, len);
		cr_expect(rec.len == len && !memcmp(rec.data, buf, len), "frame %zu bytes", n + 1);
		if (linktype == SIM_PCAP_UPPER_PDU)
			cr_expect_str_eq(rec.proto, "infiniband");
		cr_expect_eq(rec.ncomments, 0, "frame %zu has a comment without a fault", n + 1);
		n++;
	}
	cr_expect_eq(n, NTRAFFIC);
	sim_pcap_reader_close(r);
}

/* Where frame 1's bytes start in the file. */
static uint64_t first_frame_at(const char *path)
{
	struct sim_pcap_reader *r;
	struct sim_pcap_rec rec;
	uint64_t off;

	cr_assert_eq(sim_pcap_reader_open(&r, path), 0);
	cr_assert_eq(sim_pcap_reader_next(r, &rec), 1, "%s: no frame", path);
	off = rec.off;
	sim_pcap_reader_close(r);
	return off;
}

/* hcasim-pcapcheck accepts path, and rejects a copy with one payload bit of frame 1 flipped
 * (payload_at: the payload's offset in the frame). */
static void expect_pcapcheck(const char *path, size_t payload_at)
{
	char cmd[512], bad[160], *out;
	FILE *f;
	uint8_t *b;
	long size;
	int st;
	uint64_t at = first_frame_at(path);

	snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-pcapcheck %s 2>&1", HCASIM_BUILD_DIR, path);
	out = run(cmd, &st);
	cr_expect_eq(st, 0, "%s:\n%s", cmd, out);
	cr_expect_str_eq(out, "10 frames, 0 bad\n");
	free(out);

	f = fopen(path, "rb");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	b = malloc((size_t)size);
	cr_assert_eq(fread(b, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	b[at + payload_at + 5] ^= 0x10;
	snprintf(bad, sizeof(bad), "%s.bad", path);
	f = fopen(bad, "wb");
	cr_assert_not_null(f);
	fwrite(b, 1, (size_t)size, f);
	fclose(f);
	free(b);
	snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-pcapcheck %s 2>&1", HCASIM_BUILD_DIR, bad);
	out = run(cmd, &st);
	cr_expect_eq(st, 1, "%s:\n%s", cmd, out);
	cr_expect(strstr(out, "frame 1: bad ") != NULL, "%s", out);
	cr_expect(strstr(out, "10 frames, 1 bad\n") != NULL, "%s", out);
	free(out);
	unlink(bad);
}

Test(link, ib_capture_decodes_in_tshark_and_passes_pcapcheck)
{
	char path[128];
	int order[NTRAFFIC];
	sim_time_t start[NTRAFFIC];

	snprintf(path, sizeof(path), "/tmp/hcasim-link-ib-%d.pcap", (int)getpid());
	capture(SIM_LINK_IB, path, order, start);
	cr_expect_gt(start[1], start[2], "side 0's second frame starts after side 1's first");
	cr_expect_neq(order[1], 1, "so the file order is not the send order");
	expect_records(path, SIM_PCAP_UPPER_PDU, order, start);
	expect_tshark_decodes(path, order);
	/* frame 1: LRH, BTH, then the payload */
	expect_pcapcheck(path, 8 + 12);
	unlink(path);
}

Test(link, roce_capture_decodes_in_tshark_and_passes_pcapcheck)
{
	char path[128];
	int order[NTRAFFIC];
	sim_time_t start[NTRAFFIC];

	snprintf(path, sizeof(path), "/tmp/hcasim-link-roce-%d.pcap", (int)getpid());
	capture(SIM_LINK_ETH, path, order, start);
	cr_expect_gt(start[1], start[2]);
	cr_expect_neq(order[1], 1);
	expect_records(path, SIM_PCAP_ETHERNET, order, start);
	expect_tshark_decodes(path, order);
	/* frame 1: Ethernet, IPv4, UDP, BTH, then the payload */
	expect_pcapcheck(path, 14 + 20 + 8 + 12);
	unlink(path);
}

Test(link, pcapcheck_refuses_what_is_not_a_capture)
{
	char path[128], cmd[300], *out;
	FILE *f;
	int st;

	snprintf(path, sizeof(path), "/tmp/hcasim-link-junk-%d.pcap", (int)getpid());
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("not a capture at all\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-pcapcheck %s 2>&1", HCASIM_BUILD_DIR, path);
	out = run(cmd, &st);
	cr_expect_eq(st, 2, "%s", out);
	free(out);
	unlink(path);
}

/* ---- the marks of the faults ---- */

static bool classify_ib(const uint8_t *frame, size_t len, uint32_t *qpn, uint32_t *psn,
			uint8_t *op, bool *first)
{
	struct hm_pkt p;

	if (hm_pkt_parse(HM_LL_IB, frame, len, &p))
		return false;
	*qpn = p.dqpn;
	*psn = p.psn;
	*op = p.opcode;
	*first = true;
	return true;
}

/* Send the SEND_ONLY of PSN psn from side 0 and let 10 us pass. */
static void send_psn(struct sim_link *l, uint32_t psn, sim_time_t *start)
{
	const struct sent s = { HM_OP_SEND_ONLY, 0x000012, psn, 0, false, 16 };
	uint8_t buf[HM_PKT_MAX_BYTES];
	size_t len = frame_of(HM_LL_IB, &s, buf, sizeof(buf));

	*start = sim_now(K);
	sim_link_send(l, 0, buf, len);
	sim_run_until(K, sim_now(K) + 10000000);
}

/* What each PSN's frame carries: the comment (NULL: none) and how often it arrives. */
static const struct {
	const char *comment;
	int arrivals;
} marked[] = {
	{ NULL, 0 },
	{ "hcasim: dropped by link.fault_target (qpn 0x12 psn 1): never delivered", 0 },
	{ "hcasim: corrupted by link.fault_target (qpn 0x12 psn 2): bit ", 1 },
	{ "hcasim: duplicated by link.fault_target (qpn 0x12 psn 3): delivered twice", 2 },
	{ "hcasim: delayed by link.fault_target (qpn 0x12 psn 4): delivered 5000000 ps late", 1 },
	{ NULL, 1 },
	{ "hcasim: held back by link.fault_reorder: delivered after the next frame from this side",
	  1 },
	{ NULL, 1 },
	{ "hcasim: lost by link.fault_down: the link went down while the frame was on the wire",
	  0 },
	{ "hcasim: dropped by link.fault_drop: never delivered", 0 },
};
#define NMARKED 10

Test(link, every_fault_marks_its_frame_in_the_capture_and_tshark_shows_it)
{
	struct sim_link *l = mklink(SIM_LINK_IB, 100000, 1000000, hm_pkt_wire_overhead(HM_LL_IB));
	struct sim_link_target t = { .qpn = -1, .opcode = -1, .count = 1 };
	struct sim_link_faults f = { 0 }, none = { 0 };
	sim_time_t start[NMARKED];
	struct sim_pcap_reader *r;
	struct sim_pcap_rec rec;
	char path[128], cmd[512], want[256], *out, *line, *save = NULL;
	int arrivals[NMARKED] = { 0 }, st;
	uint32_t psn;

	snprintf(path, sizeof(path), "/tmp/hcasim-link-marks-%d.pcap", (int)getpid());
	sim_link_set_classifier(l, classify_ib);
	sim_link_set_faults(l, 0, &none, 1); /* seeds the random source a corruption draws from */
	cr_assert_eq(sim_link_pcap(l, path), 0);
	/* targeted: PSN 1 dropped, 2 corrupted, 3 duplicated, 4 delayed 5 us */
	for (psn = 1; psn <= 4; psn++) {
		t.psn = psn;
		t.fault = (enum sim_link_fault_kind[]){ SIM_FAULT_DROP, SIM_FAULT_CORRUPT,
							 SIM_FAULT_DUP, SIM_FAULT_DELAY }[psn - 1];
		t.delay_ps = 5000000;
		cr_assert_eq(sim_link_add_target(l, 0, &t), 0);
	}
	for (psn = 1; psn <= 5; psn++)
		send_psn(l, psn, &start[psn]);
	/* 6 held back behind 7 */
	f.reorder_ppm = 1000000;
	sim_link_set_faults(l, 0, &f, 1);
	send_psn(l, 6, &start[6]);
	sim_link_set_faults(l, 0, &none, 1);
	send_psn(l, 7, &start[7]);
	/* 8 on the wire when the link goes down */
	start[8] = sim_now(K);
	{
		const struct sent s = { HM_OP_SEND_ONLY, 0x000012, 8, 0, false, 16 };
		uint8_t buf[HM_PKT_MAX_BYTES];
		size_t len = frame_of(HM_LL_IB, &s, buf, sizeof(buf));

		sim_link_send(l, 0, buf, len);
		sim_run_until(K, sim_now(K) + 500000);
		sim_link_set_up(l, false);
		sim_run_until(K, sim_now(K) + 10000000);
		sim_link_set_up(l, true);
	}
	/* 9: every frame dropped */
	f = none;
	f.drop_every = 1;
	sim_link_set_faults(l, 0, &f, 1);
	send_psn(l, 9, &start[9]);
	cr_assert_eq(sim_link_pcap(l, NULL), 0);

	/* what arrived */
	for (int i = 0; i < RX[1].n; i++) {
		struct hm_pkt p;

		cr_assert_eq(hm_pkt_parse(HM_LL_IB, RX[1].data[i], RX[1].len[i], &p) == 0 ||
				     i == 0, 1, "arrival %d does not parse", i);
		if (i == 0) /* the corrupted one: its CRCs fail; its PSN may be what was hit */
			p.psn = 2;
		cr_assert_lt(p.psn, NMARKED);
		arrivals[p.psn]++;
	}
	for (psn = 1; psn < NMARKED; psn++)
		cr_expect_eq(arrivals[psn], marked[psn].arrivals, "PSN %u arrived %d times", psn,
			     arrivals[psn]);

	/* the file: every frame as sent, at its start, with its marks */
	cr_assert_eq(sim_pcap_reader_open(&r, path), 0);
	for (psn = 1; sim_pcap_reader_next(r, &rec) == 1; psn++) {
		struct hm_pkt p;

		cr_assert_lt(psn, NMARKED, "more frames than sent");
		cr_assert_eq(hm_pkt_parse(HM_LL_IB, rec.data, rec.len, &p), 0);
		cr_expect_eq(p.psn, psn, "frame %u", psn);
		cr_expect_eq(rec.t_ns, start[psn] / 1000, "frame %u time", psn);
		if (!marked[psn].comment) {
			cr_expect_eq(rec.ncomments, 0, "frame %u: '%s'", psn,
				     rec.ncomments ? rec.comments[0] : "");
			continue;
		}
		cr_assert_eq(rec.ncomments, 1, "frame %u has %u comments", psn, rec.ncomments);
		cr_expect(!strncmp(rec.comments[0], marked[psn].comment, strlen(marked[psn].comment)),
			  "frame %u: '%s'", psn, rec.comments[0]);
	}
	sim_pcap_reader_close(r);
	cr_expect_eq(psn, NMARKED, "%u frames in the capture", psn - 1);

	/* tshark shows each mark as frame.comment */
	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s -T fields -e infiniband.bth.psn -e frame.comment 2>&1", path);
	out = run(cmd, &st);
	cr_assert_eq(st, 0, "%s:\n%s", cmd, out);
	psn = 1;
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), psn++) {
		cr_assert_lt(psn, NMARKED, "extra line '%s'", line);
		snprintf(want, sizeof(want), "%u\t%s", psn,
			 marked[psn].comment ? marked[psn].comment : "");
		cr_expect(!strncmp(line, want, strlen(want)) &&
			      (marked[psn].comment || !line[strlen(want)]),
			  "tshark frame %u: '%s', expected '%s'", psn, line, want);
	}
	free(out);
	/* and pcapcheck lists them, and passes: the frames are recorded as they were sent */
	snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-pcapcheck %s 2>&1", HCASIM_BUILD_DIR, path);
	out = run(cmd, &st);
	cr_expect_eq(st, 0, "%s:\n%s", cmd, out);
	cr_expect(strstr(out, "frame 1: comment: hcasim: dropped by link.fault_target") &&
		      strstr(out, "frame 8: comment: hcasim: lost by link.fault_down") &&
		      strstr(out, "9 frames, 0 bad\n"),
		  "%s", out);
	free(out);
	sim_link_destroy(l);
	unlink(path);
}

/* Store v in n bytes at b, little- or big-endian. */
static void put_n(uint8_t *b, uint32_t v, int n, bool big)
{
	for (int i = 0; i < n; i++)
		b[big ? n - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

/* The reader takes libpcap files too (either byte order, micro- or nanoseconds). */
Test(link, reader_and_pcapcheck_take_libpcap_files)
{
	const struct sent s = { HM_OP_SEND_ONLY, 0x000012, 77, 0, false, 64 };
	uint8_t frame[HM_PKT_MAX_BYTES], h[40];
	size_t len = frame_of(HM_LL_ROCE, &s, frame, sizeof(frame));

	for (int v = 0; v < 2; v++) {
		bool big = v == 1; /* big-endian with microseconds, else little with nanoseconds */
		struct sim_pcap_reader *r;
		struct sim_pcap_rec rec;
		char path[128], cmd[300], *out;
		FILE *fp;
		int st;

		/* magic, version 2.4, thiszone, sigfigs, snaplen, link type; then one record:
		 * 3 s and 7 us, captured and wire lengths */
		put_n(h, big ? 0xa1b2c3d4 : 0xa1b23c4d, 4, big);
		put_n(h + 4, 2, 2, big);
		put_n(h + 6, 4, 2, big);
		put_n(h + 8, 0, 4, big);
		put_n(h + 12, 0, 4, big);
		put_n(h + 16, 65535, 4, big);
		put_n(h + 20, SIM_PCAP_ETHERNET, 4, big);
		put_n(h + 24, 3, 4, big);
		put_n(h + 28, big ? 7 : 7000, 4, big);
		put_n(h + 32, (uint32_t)len, 4, big);
		put_n(h + 36, (uint32_t)len, 4, big);
		snprintf(path, sizeof(path), "/tmp/hcasim-link-legacy-%d-%d.pcap", (int)getpid(), v);
		fp = fopen(path, "wb");
		cr_assert_not_null(fp);
		fwrite(h, 1, sizeof(h), fp);
		fwrite(frame, 1, len, fp);
		fclose(fp);
		cr_assert_eq(sim_pcap_reader_open(&r, path), 0);
		cr_expect(!sim_pcap_reader_is_ng(r));
		cr_expect_eq(sim_pcap_reader_linktype(r), SIM_PCAP_ETHERNET);
		cr_assert_eq(sim_pcap_reader_next(r, &rec), 1);
		cr_expect_eq(rec.t_ns, 3000007000ull, "%s: %llu ns",
			     big ? "big-endian, us" : "little-endian, ns",
			     (unsigned long long)rec.t_ns);
		cr_expect_eq(rec.off, 40);
		cr_expect(rec.len == len && !memcmp(rec.data, frame, len));
		cr_expect_eq(sim_pcap_reader_next(r, &rec), 0);
		sim_pcap_reader_close(r);
		snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-pcapcheck %s 2>&1", HCASIM_BUILD_DIR, path);
		out = run(cmd, &st);
		cr_expect_eq(st, 0, "%s", out);
		cr_expect_str_eq(out, "1 frames, 0 bad\n");
		free(out);
		unlink(path);
	}
}
