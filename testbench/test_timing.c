/* RC transport timers in simulated time, checked against the IBA rules (seed 000, IBA 9.7.6):
 *   - local ACK timeout 4.096 us x 2^timeout, measured from the last bit of the oldest
 *     unacknowledged transmission, retry_cnt retransmissions, then IBV_WC_RETRY_EXC_ERR with the
 *     QP in ERR; timeout 0 disables the timer;
 *   - RNR NAK: the requester waits the responder's min_rnr_timer (IBA table 45) before it
 *     resends, rnr_retry resends, then IBV_WC_RNR_RETRY_EXC_ERR; rnr_retry 7 retries until a
 *     receive is posted.
 * Times come from the trace (link.tx first/last bit, req.timeout, comp.rnr_wait/rnr_resume) and
 * the retransmissions are counted in the pcap as tshark decodes it. The oracle tables here are
 * written from the specification, independently of model/. */
#include "model/hw/hca_hw.h"
#include "testbench/tb.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PSN0 0x100u          /* tb_connect's first PSN */
#define CYCLE_PS 2000ull     /* clock.core_mhz 500 */
#define US 1000000ull        /* ps */
#define MS 1000000000ull     /* ps */
#define MAXE 256

/* IBA table 45, min_rnr_timer code -> RNR NAK delay in units of 10 us (0.01 ms). */
static const uint64_t rnr_table_10ns[32] = {
	65536, 1,    2,    3,    4,    6,    8,    12,   16,    24,    32,
	48,       64,   96,   128,  192,  256,  384,  512,  768,   1024,  1536,
	2048,     3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

static uint64_t rnr_delay_ps(unsigned code)
{
	return rnr_table_10ns[code] * 10 * US; /* 0.01 ms = 10 us */
}

/* One trace record of interest. */
struct ev {
	uint64_t t;          /* ps */
	int dev, side;       /* link side for link.tx */
	uint64_t start, end; /* link.tx: first and last bit */
	uint64_t wait;       /* comp.rnr_wait (its start in start) */
	bool exhausted;
};

struct trace {
	struct ev tx[2][MAXE]; /* link.tx by side */
	int ntx[2];
	struct ev timeout[MAXE], rnr_wait[MAXE], rnr_resume[MAXE], done[MAXE];
	int nto, nwait, nresume, ndone;
	unsigned done_status[MAXE];
};

static void add(struct ev *a, int *n, struct ev e)
{
	cr_assert_lt(*n, MAXE, "more than %d trace events", MAXE);
	a[(*n)++] = e;
}

/* A field's value in an event's key=value text (it must be there). */
static unsigned long long field(const char *fields, const char *key)
{
	uint64_t v;

	cr_assert(hcasim_trace_field(fields, key, &v), "no %s in '%s'", key, fields);
	return v;
}

/* One `t=<ps> [dev=<n> cyc=<c>] <event> <fields>` trace line: its time and device into e, its
 * event's name into name; returns its fields. */
static const char *trace_line(char *line, struct ev *e, char *name, size_t len)
{
	const char *p = strchr(line, ' ');

	line[strcspn(line, "\n")] = 0;
	cr_assert(p && hcasim_trace_field(line, "t", &e->t), "'%s'", line);
	e->dev = -1;
	if (!strncmp(p + 1, "dev=", 4)) {
		e->dev = (int)field(p + 1, "dev");
		p = strchr(p + 1, ' '); /* cyc= */
		p = p && !strncmp(p + 1, "cyc=", 4) ? strchr(p + 1, ' ') : p;
	}
	cr_assert_not_null(p, "'%s'", line);
	snprintf(name, len, "%.*s", (int)strcspn(p + 1, " "), p + 1);
	return p + 1 + strlen(name);
}

/* Read a trace file, dispatching on each event's name and reading its fields. */
static void read_trace(const char *path, struct trace *tr)
{
	FILE *f = fopen(path, "r");
	char line[512], name[64];

	cr_assert_not_null(f, "%s", path);
	memset(tr, 0, sizeof(*tr));
	while (fgets(line, sizeof(line), f)) {
		struct ev e = { 0 };
		const char *fields = trace_line(line, &e, name, sizeof(name));
		uint64_t v;

		e.exhausted = hcasim_trace_field(fields, "exhausted", &v) && v;
		if (!strcmp(name, "link.tx") || !strcmp(name, "link.tx_raw")) {
			e.side = (int)field(fields, "side");
			e.start = field(fields, "start");
			e.end = field(fields, "end");
			add(tr->tx[e.side], &tr->ntx[e.side], e);
		} else if (!strcmp(name, "req.timeout")) {
			add(tr->timeout, &tr->nto, e);
		} else if (!strcmp(name, "comp.rnr_wait")) {
			e.wait = field(fields, "wait_ps");
			e.start = field(fields, "start");
			add(tr->rnr_wait, &tr->nwait, e);
		} else if (!strcmp(name, "comp.rnr_resume")) {
			add(tr->rnr_resume, &tr->nresume, e);
		} else if (!strcmp(name, "comp.done")) {
			tr->done_status[tr->ndone] = (unsigned)field(fields, "status");
			add(tr->done, &tr->ndone, e);
		}
	}
	fclose(f);
}

/* Frames of the pcap as tshark decodes them. */
struct pframe {
	uint64_t t_ns;
	unsigned op, dqp, psn, syndrome;
	bool has_aeth;
};

static int read_pcap(const char *path, struct pframe *out, int max)
{
	char cmd[512], *text, *line, *save = NULL;
	int n = 0, st;

	snprintf(cmd, sizeof(cmd),
		 "tshark -r %s -T fields -E separator=, -e frame.time_epoch -e infiniband.bth.opcode "
		 "-e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.aeth.syndrome "
		 "2>/dev/null",
		 path);
	text = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d", cmd, st);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct pframe *p = &out[n];
		char *c = line, *dot;
		char *f[5];
		int k = 0;

		cr_assert_lt(n, max, "more than %d frames", max);
		while (k < 5) {
			f[k++] = c;
			c = strchr(c, ',');
			if (!c)
				break;
			*c++ = 0;
		}
		cr_assert_geq(k, 4, "frame %d did not decode: '%s'", n, line);
		/* seconds.nanoseconds, read as integers (no rounding through a double) */
		dot = strchr(f[0], '.');
		cr_assert_not_null(dot, "time '%s'", f[0]);
		*dot = 0;
		cr_assert_eq(strlen(dot + 1), 9, "time not in ns: %s", dot + 1);
		p->t_ns = strtoull(f[0], NULL, 10) * 1000000000ull + strtoull(dot + 1, NULL, 10);
		p->op = (unsigned)strtoul(f[1], NULL, 0);
		p->dqp = (unsigned)strtoul(f[2], NULL, 0);
		p->psn = (unsigned)strtoul(f[3], NULL, 0);
		p->has_aeth = k == 5 && *f[4];
		p->syndrome = p->has_aeth ? (unsigned)strtoul(f[4], NULL, 0) : 0;
		n++;
	}
	free(text);
	return n;
}

struct rig {
	struct tb_dev a, b;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *ma, *mb;
	char trace[64], pcap_prefix[64], pcap[80];
};

/* Two HCAs, an RC pair a -> b with (timeout, retry_cnt, rnr_retry) on a and min_rnr_timer on
 * b. With silent_peer, a talks to a QPN that does not exist on b: every request is dropped
 * there and nothing ever answers. Tracing and capture start once both are connected. */
static void rig_open(struct rig *r, unsigned timeout, unsigned retry_cnt, unsigned rnr_retry,
		     unsigned min_rnr_timer, bool silent_peer)
{
	tb_rc_timeout = timeout;
	tb_rc_retry_cnt = retry_cnt;
	tb_rc_rnr_retry = rnr_retry;
	tb_rc_min_rnr_timer = min_rnr_timer;
	tb_open(&r->a, 0);
	tb_open(&r->b, 1);
	r->qa = tb_create_qp(&r->a, IBV_QPT_RC);
	r->qb = tb_create_qp(&r->b, IBV_QPT_RC);
	tb_connect(&r->a, r->qa, &r->b, r->qb->qp_num + (silent_peer ? 1000 : 0), IBV_MTU_1024);
	tb_connect(&r->b, r->qb, &r->a, r->qa->qp_num, IBV_MTU_1024);
	r->ma = tb_mr(&r->a, 4096);
	r->mb = tb_mr(&r->b, 4096);
	memset(r->ma->addr, 0x5a, 4096);
	snprintf(r->trace, sizeof(r->trace), "/tmp/hcasim-timing-%d.trace", (int)getpid());
	snprintf(r->pcap_prefix, sizeof(r->pcap_prefix), "/tmp/hcasim-timing-%d", (int)getpid());
	snprintf(r->pcap, sizeof(r->pcap), "%s.link0.pcap", r->pcap_prefix);
	cr_assert_eq(hcasim_trace("link,req,comp", r->trace), 0, "%s", hcasim_last_error());
	cr_assert_eq(hcasim_pcap(r->pcap_prefix), 0, "%s", hcasim_last_error());
}

/* Stop tracing and capturing, read both back, and tear down. */
static void rig_finish(struct rig *r, struct trace *tr, struct pframe *pf, int *npf, int max)
{
	struct ibv_mr *mrs[] = { r->ma, r->mb };

	cr_assert_eq(hcasim_trace("", NULL), 0);
	cr_assert_eq(hcasim_pcap(NULL), 0);
	read_trace(r->trace, tr);
	*npf = read_pcap(r->pcap, pf, max);
	unlink(r->trace);
	unlink(r->pcap);
	cr_assert_eq(ibv_destroy_qp(r->qa), 0);
	cr_assert_eq(ibv_destroy_qp(r->qb), 0);
	for (int i = 0; i < 2; i++) {
		void *buf = mrs[i]->addr;

		cr_assert_eq(ibv_dereg_mr(mrs[i]), 0);
		free(buf);
	}
	tb_close(&r->a);
	tb_close(&r->b);
}

static void post_send(struct rig *r, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)r->ma->addr, len, r->ma->lkey };
	struct ibv_send_wr w = { .wr_id = 42, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	cr_assert_eq(ibv_post_send(r->qa, &w, &bad), 0, "%s", hcasim_last_error());
}

static void post_recv(struct rig *r)
{
	struct ibv_sge s = { (uintptr_t)r->mb->addr, 4096, r->mb->lkey };
	struct ibv_recv_wr w = { .wr_id = 7, .sg_list = &s, .num_sge = 1 }, *bad;

	cr_assert_eq(ibv_post_recv(r->qb, &w, &bad), 0, "%s", hcasim_last_error());
}

/* Wait (in simulated time, up to limit_ps) for one completion on a's CQ. */
static void wait_wc(struct rig *r, struct ibv_wc *wc, uint64_t limit_ps)
{
	uint64_t t0 = hcasim_now_ps();
	int n;

	while ((n = ibv_poll_cq(r->a.cq, 1, wc)) == 0) {
		cr_assert_lt(hcasim_now_ps() - t0, limit_ps, "no completion after %" PRIu64 " ps",
			     limit_ps);
		hcasim_run_for_ps(10 * US);
	}
	cr_assert_eq(n, 1, "%s", hcasim_last_error());
	cr_assert_eq(wc->wr_id, 42);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	cr_assert_eq(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* An RC SEND to a peer that never answers: retry_cnt + 1 timer expiries, each exactly one
 * timeout after the last bit of the transmission it guards, retry_cnt retransmissions of the
 * same PSN on the wire, then IBV_WC_RETRY_EXC_ERR at the last expiry and the QP in ERR. */
static void timeout_exhaustion(unsigned timeout, unsigned retry_cnt)
{
	const uint64_t period = 4096000ull << timeout; /* 4.096 us x 2^timeout */
	static struct trace tr;
	static struct pframe pf[MAXE];
	struct rig r;
	struct ibv_wc wc;
	int npf;
	uint64_t done_t;

	rig_open(&r, timeout, retry_cnt, 7, 1, true);
	post_send(&r, 100);
	wait_wc(&r, &wc, (retry_cnt + 2) * period + MS);
	cr_assert_eq(wc.status, IBV_WC_RETRY_EXC_ERR, "status %s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.vendor_err, HCA_VERR_RETRY_TIMEOUT, "vendor_err %s",
		     hca_verr_name(wc.vendor_err));
	cr_assert_eq(qp_state(r.qa), IBV_QPS_ERR);
	rig_finish(&r, &tr, pf, &npf, MAXE);

	/* The wire: the request and retry_cnt retransmissions of PSN0, nothing answered. */
	for (int i = 0; i < npf; i++) {
		cr_assert_eq(pf[i].psn, PSN0, "frame %d has PSN %u", i, pf[i].psn);
		cr_assert_eq(pf[i].op, 0x04, "frame %d is opcode 0x%x, not SEND ONLY", i, pf[i].op);
	}
	cr_assert_eq(npf, (int)retry_cnt + 1, "%d transmissions for retry_cnt %u", npf,
		     retry_cnt);
	cr_assert_eq(tr.ntx[1], 0, "the silent peer sent %d frames", tr.ntx[1]);
	cr_assert_eq(tr.ntx[0], npf);

	/* The timer: one expiry per transmission, exactly one period after its last bit. */
	cr_assert_eq(tr.nto, (int)retry_cnt + 1, "%d expiries", tr.nto);
	for (int i = 0; i <= (int)retry_cnt; i++) {
		uint64_t want = tr.tx[0][i].end + period;

		cr_assert_leq(absdiff(tr.timeout[i].t, want), CYCLE_PS,
			      "attempt %d: timer expired at %" PRIu64 " ps, %" PRId64
			      " ps from last bit + %" PRIu64 " ps",
			      i, tr.timeout[i].t, (int64_t)(tr.timeout[i].t - want), period);
		cr_assert_eq(tr.timeout[i].exhausted, i == (int)retry_cnt);
		if (i < (int)retry_cnt)
			cr_assert_gt(tr.tx[0][i + 1].start, tr.timeout[i].t,
				     "retransmission %d before the timer expired", i + 1);
	}
	/* The pcap agrees with the trace on when each attempt went out (ns resolution). */
	for (int i = 0; i < npf; i++)
		cr_assert_leq(absdiff(pf[i].t_ns * 1000, tr.tx[0][i].start), 1000);
	/* The error completion is made at the last expiry: (retry_cnt + 1) timeouts after the
	 * first transmission plus the retransmissions' own latency. */
	cr_assert_eq(tr.ndone, 1);
	cr_assert_eq(tr.done_status[0], IBV_WC_RETRY_EXC_ERR);
	done_t = tr.done[0].t;
	cr_assert_leq(absdiff(done_t, tr.timeout[retry_cnt].t), CYCLE_PS);
	{
		uint64_t resend = 0;

		for (int i = 0; i < (int)retry_cnt; i++)
			resend += tr.tx[0][i + 1].end - tr.timeout[i].t;
		cr_assert_leq(absdiff(done_t - tr.tx[0][0].end, (retry_cnt + 1) * period + resend),
			      (retry_cnt + 1) * CYCLE_PS);
	}
}

Test(timing, timeout_1_retry_0_fails_after_one_timeout) { timeout_exhaustion(1, 0); }
Test(timing, timeout_5_retry_3) { timeout_exhaustion(5, 3); }
Test(timing, timeout_8_retry_7) { timeout_exhaustion(8, 7); }
Test(timing, timeout_14_retry_1) { timeout_exhaustion(14, 1); }
/* 1.07 s per attempt: several simulated seconds, idle-skipped. */
Test(timing, timeout_18_retry_7_runs_for_seconds) { timeout_exhaustion(18, 7); }

/* Exact skipping for busy pollers (docs/timing.md#busy-polling): a plain ibv_poll_cq loop
 * waits through retry exhaustion (timeout 12, retry_cnt 7: 8 expiries of 16.8 ms). With
 * host.poll_skip 1 (the default) the loop sees the error completion at the same picosecond
 * as poll by poll (host.poll_skip 0), in a handful of calls instead of millions; the wire and
 * the trace are the same too. Returns the time, the calls, and the frames seen. */
static uint64_t busy_wait(const char *skip, uint64_t *calls, int *npf)
{
	static struct trace tr;
	static struct pframe pf[MAXE];
	struct ibv_wc wc;
	struct rig r;
	uint64_t t, n = 0;

	tb_config("host.poll_skip", skip);
	rig_open(&r, 12, 7, 7, 1, true);
	post_send(&r, 100);
	do
		n++;
	while (ibv_poll_cq(r.a.cq, 1, &wc) == 0);
	t = hcasim_now_ps();
	cr_assert_eq(wc.status, IBV_WC_RETRY_EXC_ERR, "status %s", ibv_wc_status_str(wc.status));
	rig_finish(&r, &tr, pf, npf, MAXE);
	cr_assert_eq(tr.nto, 8);
	hcasim_shutdown();
	*calls = n;
	return t;
}

Test(timing, a_busy_poller_skips_to_the_picosecond_poll_by_poll_reaches)
{
	uint64_t n_skip, n_step, t_skip, t_step;
	int f_skip, f_step;

	t_skip = busy_wait("1", &n_skip, &f_skip);
	t_step = busy_wait("0", &n_step, &f_step);
	cr_assert_eq(t_skip, t_step, "skipping saw the completion at %" PRIu64 " ps, poll by poll "
		     "at %" PRIu64 " ps", t_skip, t_step);
	cr_assert_eq(f_skip, f_step);
	/* poll by poll: one call per host.poll_ns (20 ns) of the ~134 ms; skipping: about one
	 * per device event */
	cr_assert_gt(n_step, 6000000, "%" PRIu64 " polls poll by poll", n_step);
	cr_assert_lt(n_skip, 100, "%" PRIu64 " polls with skipping", n_skip);
}

Test(timing, timeout_0_never_retransmits)
{
	static struct trace tr;
	static struct pframe pf[MAXE];
	struct rig r;
	struct ibv_wc wc;
	int npf;

	rig_open(&r, 0, 7, 7, 1, true);
	post_send(&r, 100);
	hcasim_run_for_ps(5000 * MS); /* five simulated seconds */
	cr_assert_eq(ibv_poll_cq(r.a.cq, 1, &wc), 0, "completed without an answer");
	cr_assert_eq(qp_state(r.qa), IBV_QPS_RTS);
	rig_finish(&r, &tr, pf, &npf, MAXE);
	cr_assert_eq(npf, 1, "%d frames: timeout 0 must not retransmit", npf);
	cr_assert_eq(tr.nto, 0);
}

/* An RC SEND to a peer with no receive posted: rnr_retry + 1 RNR NAKs, each carrying the
 * responder's min_rnr_timer; after each the requester waits exactly the table's delay, then
 * resends; then IBV_WC_RNR_RETRY_EXC_ERR. */
static void rnr_exhaustion(unsigned code, unsigned rnr_retry)
{
	static struct trace tr;
	static struct pframe pf[MAXE];
	struct rig r;
	struct ibv_wc wc;
	int npf, reqs = 0, naks = 0;
	uint32_t qpn_b;

	rig_open(&r, 14, 7, rnr_retry, code, false);
	qpn_b = r.qb->qp_num;
	post_send(&r, 100);
	wait_wc(&r, &wc, (rnr_retry + 2) * rnr_delay_ps(code) + MS);
	cr_assert_eq(wc.vendor_err, HCA_VERR_RNR_RETRY, "vendor_err %s",
		     hca_verr_name(wc.vendor_err));
	cr_assert_eq(wc.status, IBV_WC_RNR_RETRY_EXC_ERR, "status %s",
		     ibv_wc_status_str(wc.status));
	cr_assert_eq(qp_state(r.qa), IBV_QPS_ERR);
	rig_finish(&r, &tr, pf, &npf, MAXE);

	for (int i = 0; i < npf; i++) {
		cr_assert_eq(pf[i].psn, PSN0, "frame %d has PSN %u", i, pf[i].psn);
		if (pf[i].op == 0x04) {
			cr_assert_eq(pf[i].dqp, qpn_b);
			reqs++;
		} else {
			cr_assert_eq(pf[i].op, 0x11, "frame %d opcode 0x%x", i, pf[i].op);
			cr_assert(pf[i].has_aeth);
			cr_assert_eq(pf[i].syndrome, 0x20 | code, "RNR NAK syndrome 0x%02x",
				     pf[i].syndrome);
			naks++;
		}
	}
	cr_assert_eq(reqs, (int)rnr_retry + 1, "%d transmissions for rnr_retry %u", reqs,
		     rnr_retry);
	cr_assert_eq(naks, (int)rnr_retry + 1);
	cr_assert_eq(tr.nwait, (int)rnr_retry + 1);
	cr_assert_eq(tr.nresume, (int)rnr_retry);
	for (int i = 0; i < tr.nwait; i++) {
		cr_assert_eq(tr.rnr_wait[i].wait, rnr_delay_ps(code));
		cr_assert_eq(tr.rnr_wait[i].exhausted, i == (int)rnr_retry);
		if (i < tr.nresume) {
			cr_assert_leq(absdiff(tr.rnr_resume[i].t - tr.rnr_wait[i].start, rnr_delay_ps(code)),
				      CYCLE_PS, "wait %d lasted %" PRIu64 " ps, table says %" PRIu64, i,
				      tr.rnr_resume[i].t - tr.rnr_wait[i].start, rnr_delay_ps(code));
			/* the resend leaves after the wait, never during it */
			cr_assert_geq(tr.tx[0][i + 1].start, tr.rnr_resume[i].t);
		}
	}
	cr_assert_eq(tr.ndone, 1);
	cr_assert_eq(tr.done_status[0], IBV_WC_RNR_RETRY_EXC_ERR);
	cr_assert_leq(absdiff(tr.done[0].t, tr.rnr_wait[rnr_retry].t), CYCLE_PS);
}

Test(timing, rnr_code_1_retry_0) { rnr_exhaustion(1, 0); }
Test(timing, rnr_code_5_retry_1) { rnr_exhaustion(5, 1); }
Test(timing, rnr_code_14_retry_3) { rnr_exhaustion(14, 3); }
Test(timing, rnr_code_18_retry_6) { rnr_exhaustion(18, 6); }
Test(timing, rnr_code_31_retry_2) { rnr_exhaustion(31, 2); }
Test(timing, rnr_code_0_is_the_longest_655_ms) { rnr_exhaustion(0, 1); }

/* rnr_retry 7: RNR NAKs for as long as no receive is posted, then success. */
Test(timing, rnr_retry_7_retries_until_a_receive_is_posted)
{
	static struct trace tr;
	static struct pframe pf[MAXE];
	const unsigned code = 3; /* 0.03 ms */
	struct rig r;
	struct ibv_wc wc;
	int npf, naks = 0;

	rig_open(&r, 14, 7, 7, code, false);
	post_send(&r, 100);
	hcasim_run_for_ps(20 * rnr_delay_ps(code) + 5 * US); /* many more than 7 NAKs */
	cr_assert_eq(ibv_poll_cq(r.a.cq, 1, &wc), 0, "rnr_retry 7 gave up");
	post_recv(&r);
	wait_wc(&r, &wc, 10 * MS);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "status %s", ibv_wc_status_str(wc.status));
	cr_assert_eq(qp_state(r.qa), IBV_QPS_RTS);
	tb_poll(r.b.cq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.byte_len, 100);
	cr_assert(!memcmp(r.mb->addr, r.ma->addr, 100));
	rig_finish(&r, &tr, pf, &npf, MAXE);
	for (int i = 0; i < npf; i++)
		naks += pf[i].op == 0x11 && pf[i].has_aeth && (pf[i].syndrome & 0xe0) == 0x20;
	cr_assert_geq(naks, 19, "only %d RNR NAKs in %" PRIu64 " ps", naks,
		      20 * rnr_delay_ps(code));
	cr_assert_eq(tr.nwait, naks);
	for (int i = 0; i < tr.nresume; i++)
		cr_assert_leq(absdiff(tr.rnr_resume[i].t - tr.rnr_wait[i].start, rnr_delay_ps(code)),
			      CYCLE_PS);
	cr_assert_eq(tr.ndone, 1);
	cr_assert_eq(tr.done_status[0], IBV_WC_SUCCESS);
}

/* BlueFlame: a single small WQE travels with its doorbell in one write-combined burst and is
 * not read back from the ring; two WQEs posted in one call are one doorbell and one read. */
/* Lines of event ev in a trace file; with key, only those whose key= field is val. */
static int count_events(const char *path, const char *ev, const char *key, uint64_t val)
{
	FILE *f = fopen(path, "r");
	char line[512], name[64];
	int n = 0;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		struct ev e;
		const char *fields = trace_line(line, &e, name, sizeof(name));
		uint64_t v;

		n += !strcmp(name, ev) &&
		     (!key || (hcasim_trace_field(fields, key, &v) && v == val));
	}
	fclose(f);
	return n;
}

Test(timing, a_single_small_wqe_comes_by_blueflame_and_is_not_read)
{
	struct rig r;
	struct ibv_wc wc;
	struct ibv_sge s;
	struct ibv_send_wr w[2], *bad;

	rig_open(&r, 14, 7, 7, 1, false);
	cr_assert_eq(hcasim_trace("req", r.trace), 0);
	post_recv(&r);
	post_send(&r, 100);
	wait_wc(&r, &wc, MS);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	tb_poll(r.b.cq, &wc, 1);
	cr_assert_eq(hcasim_trace("", NULL), 0);
	cr_assert_eq(count_events(r.trace, "req.bf", NULL, 0), 1);
	cr_assert_eq(count_events(r.trace, "req.fetch", NULL, 0), 0, "the WQE was read anyway");
	/* Two in one call: an ordinary doorbell, and the fetcher reads both at once. */
	cr_assert_eq(hcasim_trace("req", r.trace), 0);
	post_recv(&r);
	post_recv(&r);
	s = (struct ibv_sge){ (uintptr_t)r.ma->addr, 100, r.ma->lkey };
	for (int i = 0; i < 2; i++)
		w[i] = (struct ibv_send_wr){ .wr_id = 42, .sg_list = &s, .num_sge = 1,
					     .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
					     .next = i ? NULL : &w[1] };
	cr_assert_eq(ibv_post_send(r.qa, w, &bad), 0, "%s", hcasim_last_error());
	wait_wc(&r, &wc, MS);
	wait_wc(&r, &wc, MS);
	cr_assert_eq(hcasim_trace("", NULL), 0);
	cr_assert_eq(count_events(r.trace, "req.bf", NULL, 0), 0);
	cr_assert_eq(count_events(r.trace, "req.fetch", NULL, 0), 1, "one read for both WQEs");
	cr_assert_eq(count_events(r.trace, "req.fetch", "last", 2), 1, "WQEs 1 and 2 in one read");
	cr_assert_eq(count_events(r.trace, "req.fetch", "wqe", 1), 1, "WQEs 1 and 2 in one read");
	{
		static struct trace tr;
		static struct pframe pf[MAXE];
		int npf;

		rig_finish(&r, &tr, pf, &npf, MAXE);
	}
}
