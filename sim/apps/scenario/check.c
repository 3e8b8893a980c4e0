/* hcasim-scenario: the checks that follow parsing. Names are resolved to indexes, required
 * keys are present, keys that do not apply to a QP type or an operation are refused (never
 * ignored), offsets stay inside the buffers. See docs/scenarios.md. */
#include "sim/apps/scenario/scenario.h"
#include "sim/apps/scenario/keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int find_qp(const struct scn *s, const char *name)
{
	for (int i = 0; i < s->nqp; i++)
		if (!strcmp(s->qp[i].name, name))
			return i;
	return -1;
}

static int find_traffic(const struct scn *s, const char *name)
{
	for (int i = 0; i < s->ntr; i++)
		if (!strcmp(s->tr[i].name, name))
			return i;
	return -1;
}

/* The line of key k if given, else the section's. */
#define KLINE(obj, k) ((obj)->kline[k] ? (obj)->kline[k] : (obj)->line)

static int check_qp(struct scn *s, int i)
{
	struct scn_qp *q = &s->qp[i];
	static const int rc_only[] = {K_Q_TIMEOUT, K_Q_RETRY,  K_Q_RNR_RETRY,
				      K_Q_MIN_RNR, K_Q_MAX_RD, K_Q_MAX_DEST_RD};

	if (!q->kline[K_Q_HOST])
		return scn_fail(s, q->line, "[qp %s] host: required", q->name);
	if (q->type != IBV_QPT_RC)
		for (size_t k = 0; k < sizeof(rc_only) / sizeof(rc_only[0]); k++)
			if (q->kline[rc_only[k]])
				return scn_fail(s, q->kline[rc_only[k]],
					     "[qp %s] %s: applies to RC QPs only", q->name,
					     scn_qp_keys[rc_only[k]]);
	if (q->type == IBV_QPT_UD && (q->kline[K_Q_ALT_PORT] || q->kline[K_Q_ALT_TIMEOUT] ||
				      q->kline[K_Q_PATH_MIG]))
		return scn_fail(s, q->kline[K_Q_ALT_PORT] ? q->kline[K_Q_ALT_PORT]
			     : q->kline[K_Q_ALT_TIMEOUT] ? q->kline[K_Q_ALT_TIMEOUT]
							 : q->kline[K_Q_PATH_MIG],
			     "[qp %s]: a UD QP has no path to migrate", q->name);
	if (!q->kline[K_Q_ALT_PORT] && (q->kline[K_Q_ALT_TIMEOUT] || q->kline[K_Q_PATH_MIG]))
		return scn_fail(s, q->kline[K_Q_ALT_TIMEOUT] ? q->kline[K_Q_ALT_TIMEOUT]
							  : q->kline[K_Q_PATH_MIG],
			     "[qp %s] %s: needs alt_port (the alternate path)", q->name,
			     q->kline[K_Q_ALT_TIMEOUT] ? "alt_timeout" : "path_mig_state");
	if (q->alt_timeout < 0)
		q->alt_timeout = q->timeout;
	if (q->type != IBV_QPT_UD && q->kline[K_Q_QKEY])
		return scn_fail(s, q->kline[K_Q_QKEY], "[qp %s] qkey: applies to UD QPs only",
			     q->name);
	if (q->type == IBV_QPT_UD && q->kline[K_Q_ACCESS])
		return scn_fail(s, q->kline[K_Q_ACCESS], "[qp %s] access: not for UD QPs", q->name);
	if (q->type == IBV_QPT_UD && q->kline[K_Q_MTU])
		return scn_fail(s, q->kline[K_Q_MTU],
			     "[qp %s] path_mtu: UD QPs have none (the port's MTU applies)",
			     q->name);
	if (!q->kline[K_Q_PEER]) {
		if (q->type != IBV_QPT_UD)
			return scn_fail(s, q->line, "[qp %s] peer: required for a connected QP",
				     q->name);
	} else {
		const struct scn_qp *p;

		q->peer = find_qp(s, q->peer_name);
		if (q->peer < 0)
			return scn_fail(s, q->kline[K_Q_PEER], "[qp %s] peer: no [qp %s]", q->name,
				     q->peer_name);
		p = &s->qp[q->peer];
		if (q->peer == i)
			return scn_fail(s, q->kline[K_Q_PEER], "[qp %s] peer: itself", q->name);
		if (p->type != q->type)
			return scn_fail(s, q->kline[K_Q_PEER], "[qp %s] peer: %s is of another type",
				     q->name, p->name);
		if ((p->host ^ 1) != q->host)
			return scn_fail(
			    s, q->kline[K_Q_PEER],
			    "[qp %s] peer: %s is on host %d, but host %d is cabled to host %d "
			    "only",
			    q->name, p->name, p->host, q->host, q->host ^ 1);
		if (p->port != q->port)
			return scn_fail(s, q->kline[K_Q_PEER],
				     "[qp %s] peer: %s uses port %d; links join equal port numbers",
				     q->name, p->name, p->port);
		if (q->type != IBV_QPT_UD && strcmp(p->peer_name, q->name))
			return scn_fail(s, q->kline[K_Q_PEER],
				     "[qp %s] peer: %s must name %s as its peer in turn", q->name,
				     p->name, q->name);
	}
	for (int k = 0; k < q->ninit; k++)
		if (q->init[k].offset + 8 > q->buffer_bytes)
			return scn_fail(s, q->kline[K_Q_INIT],
				     "[qp %s] init_u64: offset %llu is outside the %zu-byte buffer",
				     q->name, (unsigned long long)q->init[k].offset,
				     q->buffer_bytes);
	return 0;
}

/* A [traffic] section's WRs stay inside the buffers of its QP and, for RDMA and atomics, of
 * the peer; a UD send has a peer to send to. */
static int check_traffic_buffers(struct scn *s, const struct scn_traffic *t, const struct scn_qp *q)
{
	const struct scn_qp *p;
	uint64_t need;

	need = t->offset + (uint64_t)t->count * t->size;
	if (need > q->buffer_bytes)
		return scn_fail(
		    s, t->kline[K_T_SIZE] ? t->kline[K_T_SIZE] : t->line,
		    "[traffic %s] size: %u WR(s) of %u bytes from offset %llu overrun the "
		    "%zu-byte buffer of [qp %s] (its buffer key)",
		    t->name, t->count, t->size, (unsigned long long)t->offset, q->buffer_bytes,
		    q->name);
	if (t->op == SCN_SEND && q->peer < 0)
		return scn_fail(s, t->kline[K_T_OP],
				"[traffic %s] op: a UD send needs the QP's peer", t->name);
	if (t->op == SCN_WRITE || t->op == SCN_READ || t->op == SCN_CMP_SWAP ||
	    t->op == SCN_FETCH_ADD) {
		p = &s->qp[q->peer];
		need = t->remote_offset + (uint64_t)t->count * t->size;
		if (need > p->buffer_bytes)
			return scn_fail(
			    s, KLINE(t, K_T_ROFFSET),
			    "[traffic %s] remote_offset: %u WR(s) of %u bytes from %llu "
			    "overrun the %zu-byte buffer of [qp %s]",
			    t->name, t->count, t->size, (unsigned long long)t->remote_offset,
			    p->buffer_bytes, p->name);
	}
	return 0;
}

static int check_traffic(struct scn *s, int i)
{
	struct scn_traffic *t = &s->tr[i];
	const struct scn_qp *q;
	/* Keys each operation takes. */
	static const unsigned takes[] = {
	    [SCN_SEND] =
		SCN_B(K_T_SIZE) | SCN_B(K_T_OFFSET) | SCN_B(K_T_SIGNALED) | SCN_B(K_T_COUNT),
	    [SCN_WRITE] = SCN_B(K_T_SIZE) | SCN_B(K_T_OFFSET) | SCN_B(K_T_ROFFSET) |
			  SCN_B(K_T_SIGNALED) | SCN_B(K_T_COUNT),
	    [SCN_READ] = SCN_B(K_T_SIZE) | SCN_B(K_T_OFFSET) | SCN_B(K_T_ROFFSET) |
			 SCN_B(K_T_SIGNALED) | SCN_B(K_T_COUNT),
	    [SCN_CMP_SWAP] = SCN_B(K_T_OFFSET) | SCN_B(K_T_ROFFSET) | SCN_B(K_T_SIGNALED) |
			     SCN_B(K_T_COUNT) | SCN_B(K_T_COMPARE) | SCN_B(K_T_SWAP) |
			     SCN_B(K_T_SIZE),
	    [SCN_FETCH_ADD] = SCN_B(K_T_OFFSET) | SCN_B(K_T_ROFFSET) | SCN_B(K_T_SIGNALED) |
			      SCN_B(K_T_COUNT) | SCN_B(K_T_ADD) | SCN_B(K_T_SIZE),
	    [SCN_RECV] = SCN_B(K_T_SIZE) | SCN_B(K_T_OFFSET) | SCN_B(K_T_COUNT),
	    [SCN_MODIFY] = SCN_B(K_T_STATE) | SCN_B(K_T_SQD_NOTIFY),
	};

	if (!t->kline[K_T_QP])
		return scn_fail(s, t->line, "[traffic %s] qp: required", t->name);
	if (!t->kline[K_T_OP])
		return scn_fail(s, t->line, "[traffic %s] op: required", t->name);
	t->qp = find_qp(s, t->qp_name);
	if (t->qp < 0)
		return scn_fail(s, t->kline[K_T_QP], "[traffic %s] qp: no [qp %s]", t->name,
			     t->qp_name);
	q = &s->qp[t->qp];
	for (int k = K_T_COUNT; k <= K_T_SQD_NOTIFY; k++)
		if (t->kline[k] && !(takes[t->op] & SCN_B(k)))
			return scn_fail(s, t->kline[k], "[traffic %s] %s: not a key of op = %s",
				     t->name, scn_traffic_keys[k], scn_op_name(t->op));
	if (t->op == SCN_MODIFY) {
		if (!t->kline[K_T_STATE])
			return scn_fail(s, t->line, "[traffic %s] state: required for op = modify",
				     t->name);
		return 0;
	}
	if ((q->type == IBV_QPT_UC && t->op != SCN_SEND && t->op != SCN_WRITE &&
	     t->op != SCN_RECV) ||
	    (q->type == IBV_QPT_UD && t->op != SCN_SEND && t->op != SCN_RECV))
		return scn_fail(s, t->kline[K_T_OP], "[traffic %s] op: %s is not possible on a %s QP",
			     t->name, scn_op_name(t->op), q->type == IBV_QPT_UC ? "UC" : "UD");
	if (t->op == SCN_CMP_SWAP || t->op == SCN_FETCH_ADD) {
		if (t->kline[K_T_SIZE] && t->size != 8)
			return scn_fail(s, t->kline[K_T_SIZE],
				     "[traffic %s] size: atomics move 8 bytes", t->name);
		t->size = 8;
		if (t->offset % 8 || t->remote_offset % 8)
			return scn_fail(s, t->kline[t->offset % 8 ? K_T_OFFSET : K_T_ROFFSET],
				     "[traffic %s] %s: atomics need 8-byte alignment", t->name,
				     t->offset % 8 ? "offset" : "remote_offset");
		if (t->op == SCN_CMP_SWAP && (!t->kline[K_T_COMPARE] || !t->kline[K_T_SWAP]))
			return scn_fail(s, t->line, "[traffic %s] %s: required for op = cmp_swap",
				     t->name, t->kline[K_T_COMPARE] ? "swap" : "compare");
		if (t->op == SCN_FETCH_ADD && !t->kline[K_T_ADD])
			return scn_fail(s, t->line, "[traffic %s] add: required for op = fetch_add",
				     t->name);
	} else if (!t->kline[K_T_SIZE]) {
		return scn_fail(s, t->line, "[traffic %s] size: required for op = %s", t->name,
			     scn_op_name(t->op));
	}
	return check_traffic_buffers(s, t, q);
}

static int check_fault(struct scn *s, int i)
{
	struct scn_fault *f = &s->fault[i];
	static const int targeted_keys[] = {K_F_QPN, K_F_PSN, K_F_OPCODE, K_F_COUNT, K_F_NTH};
	static const int random_keys[] = {K_F_DROP_PPM,	   K_F_CORRUPT_PPM, K_F_DUP_PPM,
					  K_F_REORDER_PPM, K_F_DELAY_PPM,   K_F_DROP_EVERY};
	bool any_random = false;

	if (f->kline[K_F_FROM]) {
		if (f->kline[K_F_LINK] || f->kline[K_F_SIDE])
			return scn_fail(s, f->kline[K_F_FROM],
				     "[fault %s] from: give either from = QP, or link and side",
				     f->name);
		if (find_qp(s, f->from) < 0)
			return scn_fail(s, f->kline[K_F_FROM], "[fault %s] from: no [qp %s]", f->name,
				     f->from);
	} else if (!f->kline[K_F_LINK] || (!f->kline[K_F_SIDE] && !f->link_down)) {
		return scn_fail(s, f->line,
			     "[fault %s] from: required (the QP whose frames it hits), or link and "
			     "side",
			     f->name);
	}
	if (f->kline[K_F_UNTIL] && f->until_ps <= f->at_ps)
		return scn_fail(s, f->kline[K_F_UNTIL], "[fault %s] until: not after at", f->name);
	if (f->link_down) {
		/* The whole link, both directions: nothing else may be asked of the section. */
		for (int k = 0; k <= K_F_LINK_DOWN; k++)
			if (f->kline[k] && k != K_F_AT && k != K_F_UNTIL && k != K_F_LINK &&
			    k != K_F_FROM && k != K_F_LINK_DOWN && k != K_F_SIDE)
				return scn_fail(s, f->kline[k],
					     "[fault %s] %s: a link_down window takes only at, "
					     "until and link (or from)",
					     f->name, scn_fault_keys[k]);
		return 0;
	}
	for (size_t k = 0; k < sizeof(random_keys) / sizeof(random_keys[0]); k++) {
		if (!f->kline[random_keys[k]])
			continue;
		any_random = true;
		if (f->targeted)
			return scn_fail(s, f->kline[random_keys[k]],
				     "[fault %s] %s: a targeted fault (fault = ...) takes no "
				     "random settings; use two [fault] sections",
				     f->name, scn_fault_keys[random_keys[k]]);
	}
	if (!f->targeted) {
		for (size_t k = 0; k < sizeof(targeted_keys) / sizeof(targeted_keys[0]); k++)
			if (f->kline[targeted_keys[k]])
				return scn_fail(
				    s, f->kline[targeted_keys[k]],
				    "[fault %s] %s: only for a targeted fault (fault = drop, "
				    "corrupt, dup or delay)",
				    f->name, scn_fault_keys[targeted_keys[k]]);
		if (!any_random)
			return scn_fail(s, f->line,
				     "[fault %s]: injects nothing (give fault = ..., or a *_ppm or "
				     "drop_every)",
				     f->name);
		if (f->kline[K_F_DELAY] && !f->random.delay_ppm)
			return scn_fail(s, f->kline[K_F_DELAY],
				     "[fault %s] delay: only with delay_ppm or fault = delay",
				     f->name);
		if (f->random.delay_ppm && !f->kline[K_F_DELAY])
			return scn_fail(s, f->kline[K_F_DELAY_PPM],
				     "[fault %s] delay_ppm: needs delay (the extra latency)",
				     f->name);
	} else {
		if ((f->target.fault == HCASIM_FAULT_DELAY) != (f->kline[K_F_DELAY] != 0))
			return scn_fail(s, KLINE(f, K_F_DELAY), "[fault %s] delay: %s", f->name,
				     f->kline[K_F_DELAY] ? "only with fault = delay"
							 : "required with fault = delay");
		if (*f->target_qp && find_qp(s, f->target_qp) < 0)
			return scn_fail(s, f->kline[K_F_QPN], "[fault %s] qpn: no [qp %s]", f->name,
				     f->target_qp);
	}
	return 0;
}

static const char *const qp_counters[] = {
    /* hcasim_qp_counters */
    "tx_pkts", "tx_bytes", "rx_pkts", "rx_bytes", "naks_sent", "naks_rcvd", "sq_psn", "rq_psn",
    /* the timeline */
    "packets", "requests", "retransmissions", "responses", "repeated_responses", "timeouts",
    "rewinds", "rnr_naks_rcvd", "seq_naks_rcvd", "err_naks_rcvd", "completions", "errors", "events",
    NULL};
static const char *const link_counters[] = {"drops",	"corruptions", "duplicates",
					    "reorders", "delays",      NULL};
static const char *const host_counters[] = {"qpc_hits",	  "qpc_misses",	   "qpc_writebacks",
					    "tx_pkts",	  "rx_pkts",	   "rx_crc_errors",
					    "rx_dropped", "bad_doorbells", NULL};

static bool listed(const char *const *l, const char *n)
{
	for (; *l; l++)
		if (!strcmp(*l, n))
			return true;
	return false;
}

static int check_counter(struct scn *s, struct scn_expect *e)
{
	char buf[64], *dot;
	int a, b, n = 0;

	snprintf(buf, sizeof(buf), "%s", e->subject);
	if (sscanf(buf, "link%d.side%d.%n", &a, &b, &n) == 2 && n > 0) {
		if (a < 0 || b < 0 || b > 1 || !listed(link_counters, buf + n))
			goto bad;
		e->link = a;
		e->side = b;
		snprintf(e->counter, SCN_NAME, "%s", buf + n);
		return 0;
	}
	n = 0;
	if (sscanf(buf, "host%d.%n", &a, &n) == 1 && n > 0) {
		if (a < 0 || !listed(host_counters, buf + n))
			goto bad;
		e->host = a;
		snprintf(e->counter, SCN_NAME, "%s", buf + n);
		return 0;
	}
	dot = strchr(buf, '.');
	if (!dot)
		goto bad;
	*dot = 0;
	e->qp = find_qp(s, buf);
	if (e->qp < 0)
		return scn_fail(s, e->kline[K_E_COUNTER], "[expect] counter: no [qp %s]", buf);
	if (!listed(qp_counters, dot + 1))
		goto bad;
	snprintf(e->counter, SCN_NAME, "%s", dot + 1);
	return 0;
bad:
	return scn_fail(s, e->kline[K_E_COUNTER],
		     "[expect] counter: '%s' is not QP.NAME (tx_pkts, tx_bytes, rx_pkts, rx_bytes, "
		     "naks_sent, naks_rcvd, sq_psn, rq_psn, packets, requests, retransmissions, "
		     "responses, repeated_responses, timeouts, rewinds, rnr_naks_rcvd, "
		     "seq_naks_rcvd, err_naks_rcvd, completions, errors, events), "
		     "linkN.sideS.NAME (drops, corruptions, duplicates, reorders, delays) or "
		     "hostN.NAME (qpc_hits, qpc_misses, qpc_writebacks, tx_pkts, rx_pkts, "
		     "rx_crc_errors, rx_dropped, bad_doorbells)",
		     e->subject);
}

static int need_qp(struct scn *s, struct scn_expect *e, const char *name, int line)
{
	e->qp = find_qp(s, name);
	if (e->qp < 0)
		return scn_fail(s, line, "[expect] %s: no [qp %s]", scn_expect_subjects[e->kind],
			     name);
	return 0;
}

/* A completion or data expectation: its subject is a [traffic] section that posts WRs, or one
 * WR of it (TRAFFIC#N); sl is the subject key's line. */
static int check_expect_traffic(const struct scn *s, struct scn_expect *e, int sl)
{
	char buf[64], *hash;
	const struct scn_traffic *t;

	snprintf(buf, sizeof(buf), "%s", e->subject);
	hash = strchr(buf, '#');
	if (hash)
		*hash++ = 0;
	e->traffic = find_traffic(s, buf);
	if (e->traffic < 0)
		return scn_fail(s, sl, "[expect] %s: no [traffic %s]", scn_expect_subjects[e->kind],
				buf);
	t = &s->tr[e->traffic];
	if (t->op == SCN_MODIFY)
		return scn_fail(s, sl, "[expect] %s: [traffic %s] posts no WR (op = modify)",
				scn_expect_subjects[e->kind], buf);
	if (e->kind == SCN_EX_DATA && t->op != SCN_WRITE && t->op != SCN_READ)
		return scn_fail(s, sl, "[expect] data: only for op = write or read, not %s",
				scn_op_name(t->op));
	e->wr = -1;
	if (hash && strcmp(hash, "*")) {
		char *end;
		long n = strtol(hash, &end, 10);

		if (e->kind == SCN_EX_DATA || *end || n < 1 || n > (long)t->count)
			return scn_fail(
			    s, sl, "[expect] %s: '#%s' is not a WR of [traffic %s] (1..%u%s)",
			    scn_expect_subjects[e->kind], hash, buf, t->count,
			    e->kind == SCN_EX_DATA ? "; data takes the whole section" : "");
		e->wr = (int)n - 1;
	}
	return 0;
}

/* A state, memory, packets, rnr_wait or timeout_wait expectation: its subject is a [qp]
 * section, with what the kind needs of it; sl is the subject key's line. */
static int check_expect_qp(struct scn *s, struct scn_expect *e, int sl)
{
	if (need_qp(s, e, e->subject, sl))
		return -1;
	if (e->kind == SCN_EX_MEMORY && e->offset + 8 > s->qp[e->qp].buffer_bytes)
		return scn_fail(s, e->kline[K_E_OFFSET],
				"[expect] offset: outside the %zu-byte buffer of [qp %s]",
				s->qp[e->qp].buffer_bytes, s->qp[e->qp].name);
	if (e->kind == SCN_EX_PACKETS && !e->has_eq && !e->has_min && !e->has_max)
		return scn_fail(s, e->line, "[expect] packets: needs equals, min or max");
	if ((e->kind == SCN_EX_RNR_WAIT || e->kind == SCN_EX_TIMEOUT_WAIT) &&
	    (e->has_eq != (e->kline[K_E_TOLERANCE] != 0) ||
	     (!e->has_eq && !e->has_min && !e->has_max) ||
	     (e->has_eq && (e->has_min || e->has_max))))
		return scn_fail(s, sl, "[expect] %s: give equals and tolerance, or min and/or max",
				scn_expect_subjects[e->kind]);
	if ((e->kind == SCN_EX_RNR_WAIT || e->kind == SCN_EX_TIMEOUT_WAIT) &&
	    s->qp[e->qp].type != IBV_QPT_RC)
		return scn_fail(s, sl, "[expect] %s: [qp %s] is not RC",
				scn_expect_subjects[e->kind], s->qp[e->qp].name);
	return 0;
}

static int check_expect(struct scn *s, int i)
{
	struct scn_expect *e = &s->ex[i];
	int sl = e->kline[e->kind]; /* the subject key's line: kinds are in key order */

	if (e->kline[K_E_TOLERANCE] && !e->has_time && e->kind == SCN_EX_COMPLETION)
		return scn_fail(s, e->kline[K_E_TOLERANCE],
			     "[expect] tolerance: only with since_post or since_first_tx");
	if (e->kline[K_E_SINCE_POST] && e->kline[K_E_SINCE_FIRST_TX])
		return scn_fail(
		    s, e->kline[K_E_SINCE_FIRST_TX],
		    "[expect] since_first_tx: give since_post or since_first_tx, not both");
	switch (e->kind) {
	case SCN_EX_COMPLETION:
	case SCN_EX_DATA:
		return check_expect_traffic(s, e, sl);
	case SCN_EX_STATE:
	case SCN_EX_MEMORY:
	case SCN_EX_PACKETS:
	case SCN_EX_RNR_WAIT:
	case SCN_EX_TIMEOUT_WAIT:
		return check_expect_qp(s, e, sl);
	case SCN_EX_COUNTER:
		if (!e->has_eq && !e->has_min && !e->has_max)
			return scn_fail(s, e->line, "[expect] counter: needs equals, min or max");
		return check_counter(s, e);
	case SCN_EX_EVENT:
		if (need_qp(s, e, e->qp_name, e->kline[K_E_QP]))
			return -1;
		if (!e->has_count) {
			e->count = 1;
			e->has_count = true;
		}
		if (e->kline[K_E_AFTER]) {
			e->after = find_traffic(s, e->after_name);
			if (e->after < 0)
				return scn_fail(s, e->kline[K_E_AFTER],
					     "[expect] after: no [traffic %s]", e->after_name);
			if (s->tr[e->after].op == SCN_MODIFY)
				return scn_fail(s, e->kline[K_E_AFTER],
					     "[expect] after: [traffic %s] posts no WR",
					     e->after_name);
		}
		return 0;
	}
	return 0;
}

int scn_check(struct scn *s)
{
	if (!s->nqp)
		return scn_fail(s, 1, "no [qp NAME] section: nothing to run");
	for (int i = 0; i < s->nqp; i++)
		if (check_qp(s, i))
			return -1;
	for (int i = 0; i < s->ntr; i++)
		if (check_traffic(s, i))
			return -1;
	for (int i = 0; i < s->nfault; i++)
		if (check_fault(s, i))
			return -1;
	for (int i = 0; i < s->nex; i++)
		if (check_expect(s, i))
			return -1;
	if (!s->nex)
		return scn_fail(s, 1, "no [expect] section: a scenario must expect something");
	return 0;
}
