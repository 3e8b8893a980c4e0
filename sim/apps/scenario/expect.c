/* hcasim-scenario: evaluating the expectations once the run is over. Each one yields PASS or
 * FAIL and a sentence with what was expected and what was observed. */
#include "sim/apps/scenario/scenario.h"
#include "sim/apps/scenario/keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *head(const struct scn_expect *e, char *buf, size_t len)
{
	snprintf(buf, len, "[expect%s%s] %s %s", *e->name ? " " : "", e->name,
		 scn_expect_subjects[e->kind], e->subject);
	return buf;
}

static bool in_range(const struct scn_expect *e, int64_t v, char *why, size_t len)
{
	if (e->has_eq && v != e->eq)
		snprintf(why, len, "expected %lld", (long long)e->eq);
	else if (e->has_min && v < e->min)
		snprintf(why, len, "expected at least %lld", (long long)e->min);
	else if (e->has_max && v > e->max)
		snprintf(why, len, "expected at most %lld", (long long)e->max);
	else
		return true;
	return false;
}

static int completion(const struct scn *s, const struct scn_expect *e, char *m, size_t len)
{
	const struct scn_traffic *t = &s->tr[e->traffic];
	unsigned lo = e->wr < 0 ? 0 : (unsigned)e->wr, hi = e->wr < 0 ? t->count : lo + 1;
	size_t o = strlen(m);

	for (unsigned n = lo; n < hi; n++) {
		const struct scn_wr *w = &t->wr[n];
		char a[32], b[32], c[32];
		uint64_t from, dt;

		if (!w->done) {
			snprintf(m + o, len - o, ": WR %u %s (expected %s)", n + 1,
				 w->posted ? "has no completion" : "was never posted",
				 scn_status_name(e->status));
			return 0;
		}
		if (w->status != e->status) {
			snprintf(m + o, len - o, ": WR %u completed with %s, expected %s", n + 1,
				 scn_status_name(w->status), scn_status_name(e->status));
			return 0;
		}
		if (e->byte_len >= 0 && w->byte_len != (uint64_t)e->byte_len) {
			snprintf(m + o, len - o, ": WR %u byte_len %u, expected %lld", n + 1,
				 w->byte_len, (long long)e->byte_len);
			return 0;
		}
		if (!e->has_time)
			continue;
		from = e->from_first_tx ? w->first_tx_end_ps : w->post_ps;
		if (!from || !w->cqe_ps) {
			snprintf(m + o, len - o, ": WR %u %s", n + 1,
				 !w->cqe_ps ? "has no CQE in the trace"
					    : "never had a packet on the wire");
			return 0;
		}
		dt = w->cqe_ps - from;
		scn_fmt_time(a, sizeof(a), (int64_t)dt);
		scn_fmt_time(b, sizeof(b), (int64_t)e->time_ps);
		scn_fmt_time(c, sizeof(c), (int64_t)e->tol_ps);
		if ((dt > e->time_ps ? dt - e->time_ps : e->time_ps - dt) > e->tol_ps) {
			snprintf(m + o, len - o, ": WR %u completed %s %s, expected %s ± %s", n + 1,
				 a,
				 e->from_first_tx ? "after the last bit of its first packet"
						  : "after it was posted",
				 b, c);
			return 0;
		}
		if (hi - lo == 1) {
			char d[32];

			scn_fmt_time(d, sizeof(d), (int64_t)dt - (int64_t)e->time_ps);
			snprintf(m + o, len - o, ": %s, %s %s (expected %s ± %s; off by %s)",
				 scn_status_name(w->status), a,
				 e->from_first_tx ? "after its first packet's last bit"
						  : "after the post",
				 b, c, d);
			return 1;
		}
	}
	snprintf(m + o, len - o, ": %s%s", scn_status_name(e->status),
		 hi - lo > 1 ? " for every WR" : "");
	return 1;
}

static bool counter_value(const struct scn *s, const struct scn_expect *e, int64_t *v)
{
	if (e->link >= 0) {
		static const char *const n[] = {"drops", "corruptions", "duplicates", "reorders",
						"delays"};
		uint64_t c[5];

		if (hcasim_link_fault_counts(e->link, e->side, c))
			return false;
		for (int i = 0; i < 5; i++)
			if (!strcmp(e->counter, n[i]))
				*v = (int64_t)c[i];
		return true;
	}
	if (e->host >= 0) {
		struct hcasim_dev_counters d;

		if (hcasim_dev_counters(e->host, &d))
			return false;
#define C(f)                                                                                       \
	if (!strcmp(e->counter, #f))                                                               \
		*v = (int64_t)d.f;
		C(qpc_hits)
		C(qpc_misses) C(qpc_writebacks) C(tx_pkts) C(rx_pkts) C(rx_crc_errors) C(rx_dropped)
		    C(bad_doorbells)
#undef C
			return true;
	}
	{
		const struct scn_qp *q = &s->qp[e->qp];
		const struct scn_qp_stats *st = scn_tl_stats(e->qp);
		struct hcasim_qp_counters c;

		if (hcasim_qp_counters(q->host, q->qpn, &c))
			return false;
#define C(f)                                                                                       \
	if (!strcmp(e->counter, #f))                                                               \
		*v = (int64_t)c.f;
		C(tx_pkts)
		C(tx_bytes) C(rx_pkts) C(rx_bytes) C(naks_sent) C(naks_rcvd) C(sq_psn) C(rq_psn)
#undef C
#define C(f)                                                                                       \
	if (!strcmp(e->counter, #f))                                                               \
		*v = (int64_t)st->f;
		    C(packets) C(requests) C(retransmissions) C(responses) C(repeated_responses)
			C(timeouts) C(rewinds) C(rnr_naks_rcvd) C(seq_naks_rcvd) C(err_naks_rcvd)
			    C(completions) C(errors) C(events)
#undef C
	}
	return true;
}

static int waits(const struct scn *s, const struct scn_expect *e, char *m, size_t len)
{
	uint64_t w[256];
	int n = e->kind == SCN_EX_RNR_WAIT ? scn_tl_rnr_waits(e->qp, w, 256)
					   : scn_tl_timeout_waits(e->qp, w, 256);
	size_t o = strlen(m);
	char a[32], b[32], c[32], want[96];
	uint64_t lo = UINT64_MAX, hi = 0;

	(void)s;
	if (e->has_count && n != e->count) {
		snprintf(m + o, len - o, ": %d measured, expected %lld", n, (long long)e->count);
		return 0;
	}
	if (!n && e->has_count) {
		snprintf(m + o, len - o, ": none measured, as expected");
		return 1;
	}
	if (!n) {
		snprintf(m + o, len - o, ": nothing measured (no %s)",
			 e->kind == SCN_EX_RNR_WAIT ? "RNR NAK followed by a retransmission"
						    : "local ACK timeout");
		return 0;
	}
	if (e->has_eq) {
		scn_fmt_time(b, sizeof(b), e->eq);
		scn_fmt_time(c, sizeof(c), (int64_t)e->tol_ps);
		snprintf(want, sizeof(want), "%s ± %s", b, c);
	} else {
		scn_fmt_time(b, sizeof(b), e->has_min ? e->min : 0);
		scn_fmt_time(c, sizeof(c), e->has_max ? e->max : 0);
		snprintf(want, sizeof(want), "%s%s%s%s%s", e->has_min ? "at least " : "",
			 e->has_min ? b : "", e->has_min && e->has_max ? " and " : "",
			 e->has_max ? "at most " : "", e->has_max ? c : "");
	}
	for (int i = 0; i < n; i++) {
		uint64_t d =
		    w[i] > (uint64_t)e->eq ? w[i] - (uint64_t)e->eq : (uint64_t)e->eq - w[i];
		bool ok = e->has_eq ? d <= e->tol_ps
				    : (!e->has_min || w[i] >= (uint64_t)e->min) &&
					  (!e->has_max || w[i] <= (uint64_t)e->max);

		lo = w[i] < lo ? w[i] : lo;
		hi = w[i] > hi ? w[i] : hi;
		if (!ok) {
			scn_fmt_time(a, sizeof(a), (int64_t)w[i]);
			snprintf(m + o, len - o, ": wait %d of %d was %s, expected %s", i + 1, n, a,
				 want);
			return 0;
		}
	}
	scn_fmt_time(a, sizeof(a), (int64_t)lo);
	snprintf(m + o, len - o, ": %d wait(s) from %s", n, a);
	o = strlen(m);
	scn_fmt_time(a, sizeof(a), (int64_t)hi);
	snprintf(m + o, len - o, " to %s (expected %s)", a, want);
	return 1;
}

/* An event expectation: how many times the QP received it, and, with after, that it came
 * after every completion of that [traffic] section. */
static int event(const struct scn *s, const struct scn_expect *e, unsigned (*events)[32], char *m,
		 size_t len)
{
	unsigned got = (unsigned)e->event < 32 ? events[e->qp][e->event] : 0;
	uint64_t t = scn_tl_event_time(e->qp, e->event, 0);
	char a[32];
	size_t o = strlen(m);

	if (got != (unsigned)e->count) {
		snprintf(m + o, len - o, " on %s: received %u, expected %lld", s->qp[e->qp].name,
			 got, (long long)e->count);
		return 0;
	}
	if (e->after >= 0 && got) {
		const struct scn_traffic *t2 = &s->tr[e->after];

		for (unsigned n = 0; n < t2->count; n++)
			if (!t2->wr[n].done || t2->wr[n].cqe_ps > t) {
				snprintf(m + o, len - o,
					 " on %s: raised before WR %u of %s had completed",
					 s->qp[e->qp].name, n + 1, t2->name);
				return 0;
			}
	}
	scn_fmt_time(a, sizeof(a), (int64_t)(t - s->t0));
	snprintf(m + o, len - o, " on %s: received %u%s%s%s", s->qp[e->qp].name, got,
		 got ? ", first at " : "", got ? a : "",
		 e->after >= 0 ? ", after every completion it waits for" : "");
	return 1;
}

/* A data expectation: each WR's bytes are the same in the buffers at both ends. */
static int data(const struct scn *s, const struct scn_expect *e, char *m, size_t len)
{
	const struct scn_traffic *t = &s->tr[e->traffic];
	const struct scn_qp *q = &s->qp[t->qp], *p = &s->qp[q->peer];
	size_t o = strlen(m);

	for (unsigned n = 0; n < t->count; n++) {
		const uint8_t *mine = q->buf + t->offset + (uint64_t)n * t->size;
		const uint8_t *theirs = p->buf + t->remote_offset + (uint64_t)n * t->size;

		if (memcmp(mine, theirs, t->size)) {
			snprintf(m + o, len - o, ": WR %u: the %u bytes differ between %s and %s",
				 n + 1, t->size, q->name, p->name);
			return 0;
		}
	}
	snprintf(m + o, len - o, ": %u x %u bytes identical in %s and %s", t->count, t->size,
		 q->name, p->name);
	return 1;
}

/* A packets expectation: how many packets the QP sent that match its psn, opcode and
 * retransmitted keys. */
static int packets(const struct scn_expect *e, char *m, size_t len)
{
	size_t n;
	const struct scn_tl *ev = scn_tl_events(&n);
	int64_t count = 0;
	size_t o;
	char why[96];

	for (size_t k = 0; k < n; k++)
		if (ev[k].qp == e->qp && ev[k].kind == SCN_TL_TX &&
		    (e->psn < 0 || ev[k].psn == (uint32_t)e->psn) &&
		    (e->opcode < 0 || ev[k].opcode == (unsigned)e->opcode) &&
		    (e->retx < 0 || ev[k].again == (bool)e->retx))
			count++;
	if (e->psn >= 0) {
		o = strlen(m);
		snprintf(m + o, len - o, " psn %lld", (long long)e->psn);
	}
	if (e->opcode >= 0) {
		o = strlen(m);
		snprintf(m + o, len - o, " %s", scn_opcode_name((unsigned)e->opcode));
	}
	o = strlen(m);
	snprintf(m + o, len - o, "%s:",
		 e->retx == 1	? " retransmitted"
		 : e->retx == 0 ? " first sent"
				: "");
	o = strlen(m);
	if (!in_range(e, count, why, sizeof(why))) {
		snprintf(m + o, len - o, " %lld sent, %s", (long long)count, why);
		return 0;
	}
	snprintf(m + o, len - o, " %lld sent", (long long)count);
	return 1;
}

int scn_evaluate(struct scn *s, unsigned (*events)[32], char *m, size_t len, int i)
{
	const struct scn_expect *e = &s->ex[i];
	char why[96];
	size_t o;

	head(e, m, len);
	o = strlen(m);
	switch (e->kind) {
	case SCN_EX_COMPLETION:
		return completion(s, e, m, len);
	case SCN_EX_STATE: {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		if (ibv_query_qp(s->qp[e->qp].qp, &a, IBV_QP_STATE, &ia)) {
			snprintf(m + o, len - o, ": ibv_query_qp: %s", hcasim_last_error());
			return 0;
		}
		snprintf(m + o, len - o, ": %s (expected %s)", scn_state_name(a.qp_state),
			 scn_state_name(e->state));
		return a.qp_state == e->state;
	}
	case SCN_EX_COUNTER: {
		int64_t v = -1;

		if (!counter_value(s, e, &v)) {
			snprintf(m + o, len - o, ": cannot be read: %s", hcasim_last_error());
			return 0;
		}
		if (!in_range(e, v, why, sizeof(why))) {
			snprintf(m + o, len - o, " = %lld, %s", (long long)v, why);
			return 0;
		}
		snprintf(m + o, len - o, " = %lld", (long long)v);
		return 1;
	}
	case SCN_EX_EVENT:
		return event(s, e, events, m, len);
	case SCN_EX_MEMORY: {
		uint64_t v;

		memcpy(&v, s->qp[e->qp].buf + e->offset, 8);
		snprintf(m + o, len - o, " at offset %llu: %llu (expected %llu)",
			 (unsigned long long)e->offset, (unsigned long long)v,
			 (unsigned long long)e->u64);
		return v == e->u64;
	}
	case SCN_EX_DATA:
		return data(s, e, m, len);
	case SCN_EX_PACKETS:
		return packets(e, m, len);
	case SCN_EX_RNR_WAIT:
	case SCN_EX_TIMEOUT_WAIT:
		return waits(s, e, m, len);
	}
	return 0;
}
