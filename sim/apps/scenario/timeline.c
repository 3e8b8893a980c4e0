/* hcasim-scenario: the timeline recorder. It observes trace events (hcasim_trace_observe) and
 * turns them into per-QP facts: state changes, every packet on the wire (with first
 * transmissions told from retransmissions), NAKs, local ACK timeouts, rewinds, CQEs and
 * affiliated events, each at its simulated time. */
#include "sim/apps/scenario/scenario.h"

#include "model/hw/hca_hw.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PSN_SPACE (1u << 24)
#define MAX_READS 64 /* READ WQEs remembered per QP (their PSN ranges) */
#define MAX_WAITS 256
#define MAX_EVENTS 64

struct tl_qp {
	uint8_t *req_sent;  /* bitmap of request PSNs sent (a READ marks its whole range) */
	uint8_t *resp_sent; /* bitmap of response PSNs sent */
	struct {
		uint32_t first, n;
	} reads[MAX_READS]; /* READ WQEs: first PSN and PSNs reserved */
	unsigned nreads;
	struct {
		int traffic, n;
	} * sq; /* send WRs in posting order = WQE index */
	size_t nsq, capsq;
	size_t *cqe; /* timeline entries of its CQEs, in order */
	size_t ncqe, capcqe, cqe_taken;
	struct scn_qp_stats st;
	int port;      /* the port its packets leave by now (0: its [qp] port; moves on migration) */
	bool arm_open; /* a request left since the last timeout or response */
	uint64_t arm_end_ps;
	bool rnr_pending; /* an RNR NAK waits for the next request */
	uint64_t rnr_ps;
	uint64_t rnr_waits[MAX_WAITS], to_waits[MAX_WAITS];
	int nrnr, nto;
	struct {
		enum ibv_event_type ev;
		uint64_t t;
	} events[MAX_EVENTS];
	int nevents;
};

/* A fault the link traced, waiting for the frame's link.tx line (which follows it). */
struct pending_fault {
	char link[16];
	int side;
	char what[48];
};

static struct {
	struct scn *s;
	struct scn_tl *ev;
	size_t nev, cap;
	struct tl_qp q[SCN_MAX_QPS];
	struct pending_fault pf[8];
	int npf;
	bool flag; /* a CQE or EQE was traced */
} tl;

/* ---- field access (hcasim_trace_field, short) ---- */

static bool fld(const char *f, const char *key, uint64_t *out)
{
	return hcasim_trace_field(f, key, out);
}

static bool fld_str(const char *f, const char *key, char *buf, size_t len)
{
	return hcasim_trace_field_str(f, key, buf, len);
}

static int qp_by_qpn(int dev, uint64_t qpn)
{
	for (int i = 0; i < tl.s->nqp; i++)
		if (tl.s->qp[i].qp && tl.s->qp[i].host == dev && tl.s->qp[i].qpn == qpn)
			return i;
	return -1;
}

/* The scenario QP on host/port whose packets go to dqpn: the one whose peer has that QPN. */
static int qp_sending_to(int host, int port, uint64_t dqpn)
{
	for (int i = 0; i < tl.s->nqp; i++) {
		const struct scn_qp *q = &tl.s->qp[i];

		if (q->qp && q->host == host && (tl.q[i].port ? tl.q[i].port : q->port) == port &&
		    q->peer >= 0 &&
		    tl.s->qp[q->peer].qp && tl.s->qp[q->peer].qpn == dqpn)
			return i;
	}
	return -1;
}

static struct scn_tl *add(uint64_t t, int qp, enum scn_tl_kind kind)
{
	struct scn_tl *e;

	if (tl.nev == tl.cap) {
		size_t cap = tl.cap ? 2 * tl.cap : 1024;
		struct scn_tl *n = realloc(tl.ev, cap * sizeof(*n));

		if (!n) {
			fprintf(stderr, "hcasim-scenario: out of memory for the timeline\n");
			exit(1);
		}
		tl.ev = n;
		tl.cap = cap;
	}
	e = &tl.ev[tl.nev++];
	memset(e, 0, sizeof(*e));
	e->t_ps = t;
	e->qp = qp;
	e->kind = kind;
	return e;
}

static bool test_set(uint8_t **map, uint32_t psn, uint32_t n)
{
	bool was;

	if (!*map) {
		*map = calloc(PSN_SPACE / 8, 1);
		if (!*map) {
			fprintf(stderr, "hcasim-scenario: out of memory for the PSN maps\n");
			exit(1);
		}
	}
	psn &= PSN_SPACE - 1;
	was = (*map)[psn / 8] & (1u << (psn % 8));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t p = (psn + i) & (PSN_SPACE - 1);

		(*map)[p / 8] |= (uint8_t)(1u << (p % 8));
	}
	return was;
}

static uint32_t mtu_bytes(enum ibv_mtu m)
{
	return 128u << m; /* IBV_MTU_256 = 1 */
}

/* ---- the observer ---- */

/* The scenario QP a device-side event names (its qpn= field), or -1. */
static int qp_of(int dev, const char *f)
{
	uint64_t qpn;

	return fld(f, "qpn", &qpn) ? qp_by_qpn(dev, qpn) : -1;
}

/* qp.modify, qp.error, qp.force: a state change, shown as FROM->TO with its cause. */
static void on_state(int dev, uint64_t t, const char *f, const char *cause)
{
	char from[16], to[16];
	int qp = qp_of(dev, f);

	if (qp < 0 || !fld_str(f, "from", from, sizeof(from)) || !fld_str(f, "to", to, sizeof(to)))
		return;
	snprintf(add(t, qp, SCN_TL_STATE)->text, sizeof(tl.ev[0].text), "%s->%s%s", from, to,
		 cause);
}

/* qp.migrate: path migration; its packets now leave by the alternate port. */
static void on_migrate(int dev, uint64_t t, const char *f)
{
	uint64_t port;
	int qp = qp_of(dev, f);

	if (qp < 0 || !fld(f, "port", &port))
		return;
	tl.q[qp].port = (int)port;
	snprintf(add(t, qp, SCN_TL_STATE)->text, sizeof(tl.ev[0].text), "migrated to port %d",
		 (int)port);
}

/* qp.fatal, qp.migrate_fail: a QP-level fact without a state change of its own. */
static void on_qp_note(int dev, uint64_t t, const char *f, const char *what)
{
	int qp = qp_of(dev, f);

	if (qp >= 0)
		snprintf(add(t, qp, SCN_TL_STATE)->text, sizeof(tl.ev[0].text), "%s", what);
}

/* req.timeout: the local ACK timer expired (retries left, exhausted at the end). */
static void on_req_timeout(int dev, uint64_t t, const char *f)
{
	uint64_t left = 0, exh = 0;
	int qp = qp_of(dev, f);
	struct tl_qp *q;
	struct scn_tl *e;

	if (qp < 0)
		return;
	q = &tl.q[qp];
	e = add(t, qp, SCN_TL_TIMEOUT);
	fld(f, "retries_left", &left);
	fld(f, "exhausted", &exh);
	snprintf(e->text, sizeof(e->text), "retries_left=%llu%s", (unsigned long long)left,
		 exh ? " exhausted" : "");
	q->st.timeouts++;
	if (q->arm_open && q->nto < MAX_WAITS)
		q->to_waits[q->nto++] = t - q->arm_end_ps;
	q->arm_open = false;
}

/* req.rewind: go-back-N from psn. */
static void on_req_rewind(int dev, uint64_t t, const char *f)
{
	uint64_t psn = 0;
	int qp = qp_of(dev, f);
	struct scn_tl *e;

	if (qp < 0)
		return;
	e = add(t, qp, SCN_TL_REWIND);
	fld(f, "psn", &psn);
	e->psn = (uint32_t)psn;
	snprintf(e->text, sizeof(e->text), "go back to psn %llu", (unsigned long long)psn);
	tl.q[qp].st.rewinds++;
}

/* req.fail: the requester failed a WQE. */
static void on_req_fail(int dev, uint64_t t, const char *f)
{
	uint64_t wqe, status;
	int qp = qp_of(dev, f);

	if (qp >= 0 && fld(f, "wqe", &wqe) && fld(f, "status", &status))
		snprintf(add(t, qp, SCN_TL_ACTION)->text, sizeof(tl.ev[0].text),
			 "WQE wqe=%llu failed status=%llu", (unsigned long long)wqe,
			 (unsigned long long)status);
}

/* req.wqe: a WQE started; its first PSN (and a READ's PSN range). */
static void on_req_wqe(int dev, const char *f)
{
	uint64_t wqe, op, len, psn;
	int qp = qp_of(dev, f);
	struct tl_qp *q;

	if (qp < 0 || !fld(f, "wqe", &wqe) || !fld(f, "op", &op) || !fld(f, "len", &len) ||
	    !fld(f, "psn", &psn))
		return;
	q = &tl.q[qp];
	if (wqe < q->nsq) {
		struct scn_wr *w = &tl.s->tr[q->sq[wqe].traffic].wr[q->sq[wqe].n];

		if (!w->has_psn) {
			w->has_psn = true;
			w->first_psn = (uint32_t)psn;
		}
	}
	if (op == HCA_WQE_OP_RDMA_READ) {
		uint32_t m = mtu_bytes(tl.s->qp[qp].path_mtu);
		uint32_t n = len ? (uint32_t)((len + m - 1) / m) : 1;

		q->reads[q->nreads % MAX_READS].first = (uint32_t)psn;
		q->reads[q->nreads % MAX_READS].n = n;
		q->nreads++;
	}
}

static bool is_response(unsigned op)
{
	return !(op & 0xe0) && op >= 0x0d && op <= 0x12;
}

/* A fault traced for this link side belongs to the next frame it sends: its text, taken. */
static void take_fault(const char *link, int side, char *fault, size_t len)
{
	for (int i = 0; i < tl.npf; i++)
		if (!strcmp(tl.pf[i].link, link) && tl.pf[i].side == side) {
			snprintf(fault, len, "%s", tl.pf[i].what);
			tl.pf[i] = tl.pf[--tl.npf];
			return;
		}
}

/* link.tx_raw: a frame without a BTH; it takes its fault, and shows nowhere. */
static void on_link_tx_raw(const char *f)
{
	char link[16] = "", fault[48];
	uint64_t side;

	if (fld_str(f, "link", link, sizeof(link)) && fld(f, "side", &side))
		take_fault(link, (int)side, fault, sizeof(fault));
}

static void on_link_tx(uint64_t t, const char *f)
{
	char link[16] = "";
	uint64_t side, start, end, dqpn, psn, op;
	unsigned k = 0, port = 0;
	int qp;
	struct tl_qp *q;
	struct scn_tl *e;
	char fault[48] = "";

	if (!fld_str(f, "link", link, sizeof(link)) || !fld(f, "side", &side) ||
	    !fld(f, "start", &start) || !fld(f, "end", &end))
		return;
	take_fault(link, (int)side, fault, sizeof(fault));
	if (!fld(f, "dqpn", &dqpn) || !fld(f, "psn", &psn) || !fld(f, "op", &op) ||
	    sscanf(link, "link%u.%u", &k, &port) != 2)
		return;
	qp = qp_sending_to((int)(2 * k + side), (int)port, dqpn);
	if (qp < 0)
		return;
	q = &tl.q[qp];
	e = add(t, qp, SCN_TL_TX);
	e->psn = (uint32_t)psn;
	e->opcode = (unsigned)op;
	e->end_ps = end;
	e->request = !is_response((unsigned)op);
	snprintf(e->text, sizeof(e->text), "%s", fault);
	q->st.packets++;
	if (e->request) {
		uint32_t n = 1;

		q->st.requests++;
		if ((op & 0x1f) == 0x0c) /* READ REQUEST: it stands for every response PSN */
			for (unsigned i = 0; i < q->nreads && i < MAX_READS; i++)
				if (q->reads[i].first == psn)
					n = q->reads[i].n;
		e->again = test_set(&q->req_sent, (uint32_t)psn, n);
		q->st.retransmissions += e->again;
		if (!q->arm_open) {
			q->arm_open = true;
			q->arm_end_ps = end;
		}
		if (q->rnr_pending) {
			q->rnr_pending = false;
			if (q->nrnr < MAX_WAITS)
				q->rnr_waits[q->nrnr++] = start - q->rnr_ps;
		}
		/* The first packet of a WR. */
		for (size_t i = 0; i < q->nsq; i++) {
			struct scn_wr *w = &tl.s->tr[q->sq[i].traffic].wr[q->sq[i].n];

			if (w->has_psn && w->first_psn == psn && !w->first_tx_end_ps)
				w->first_tx_end_ps = end;
		}
	} else {
		q->st.responses++;
		e->again = test_set(&q->resp_sent, (uint32_t)psn, 1);
		q->st.repeated_responses += e->again;
	}
}

/* link.fault_*: a fault injected into the next frame link.tx shows for that link side; a
 * targeted one (link.fault_target) says so. */
static void on_link_fault(const char *f, bool targeted)
{
	char link[16] = "", what[24] = "";
	uint64_t side;

	if (!fld_str(f, "link", link, sizeof(link)) || !fld(f, "side", &side) ||
	    !fld_str(f, "fault", what, sizeof(what)) || tl.npf == 8)
		return;
	snprintf(tl.pf[tl.npf].link, sizeof(tl.pf[0].link), "%s", link);
	tl.pf[tl.npf].side = (int)side;
	snprintf(tl.pf[tl.npf].what, sizeof(tl.pf[0].what), "link fault: %s%s", what,
		 targeted ? " (targeted)" : "");
	tl.npf++;
}

static void on_comp_ack(int dev, uint64_t t, const char *f)
{
	uint64_t psn, op, syn;
	int qp;
	struct tl_qp *q;
	struct scn_tl *e;

	if ((qp = qp_of(dev, f)) < 0 || !fld(f, "psn", &psn) || !fld(f, "op", &op) ||
	    !fld(f, "syndrome", &syn))
		return;
	q = &tl.q[qp];
	q->arm_open = false; /* a response: the timer restarts (or stops) */
	if (op != 0x11 || syn < 0x20)
		return; /* ACKs and responses show as the peer's transmissions */
	e = add(t, qp, SCN_TL_NAK_RX);
	e->psn = (uint32_t)psn;
	e->opcode = (unsigned)syn;
	if (syn < 0x40) {
		q->st.rnr_naks_rcvd++;
		q->rnr_pending = true;
		q->rnr_ps = t;
		snprintf(e->text, sizeof(e->text), "RNR NAK (timer code %u)",
			 (unsigned)(syn & 0x1f));
	} else if (syn == 0x60) {
		q->st.seq_naks_rcvd++;
		snprintf(e->text, sizeof(e->text), "PSN sequence error NAK");
	} else {
		q->st.err_naks_rcvd++;
		snprintf(e->text, sizeof(e->text), "NAK syndrome 0x%02x", (unsigned)syn);
	}
}

static void on_resp_nak(int dev, uint64_t t, const char *f)
{
	uint64_t psn, syn;
	int qp;
	struct scn_tl *e;

	if ((qp = qp_of(dev, f)) < 0 || !fld(f, "psn", &psn) || !fld(f, "syndrome", &syn))
		return;
	e = add(t, qp, SCN_TL_NAK_TX);
	e->psn = (uint32_t)psn;
	e->opcode = (unsigned)syn;
	snprintf(e->text, sizeof(e->text), "%s",
		 syn >= 0x20 && syn < 0x40 ? "RNR NAK"
		 : syn == 0x60		   ? "PSN sequence error NAK"
					   : "error NAK");
}

static void on_cqe(int dev, uint64_t t, const char *f)
{
	uint64_t op, status;
	int qp;
	struct tl_qp *q;
	struct scn_tl *e;

	tl.flag = true;
	if ((qp = qp_of(dev, f)) < 0 || !fld(f, "op", &op) || !fld(f, "status", &status))
		return;
	q = &tl.q[qp];
	e = add(t, qp, SCN_TL_CQE);
	snprintf(e->text, sizeof(e->text), "CQE op %llu status %llu", (unsigned long long)op,
		 (unsigned long long)status);
	if (q->ncqe == q->capcqe) {
		size_t cap = q->capcqe ? 2 * q->capcqe : 64;
		size_t *n = realloc(q->cqe, cap * sizeof(*n));

		if (!n)
			exit(1);
		q->cqe = n;
		q->capcqe = cap;
	}
	q->cqe[q->ncqe++] = (size_t)(e - tl.ev);
	q->st.completions++;
	q->st.errors += status != 0;
}

static void on_eqe(int dev, uint64_t t, const char *f)
{
	uint64_t type, sub, data0;
	int qp;
	struct tl_qp *q;

	tl.flag = true;
	if (!fld(f, "type", &type) || type != HCA_EQE_QP_EVENT || !fld(f, "sub", &sub) ||
	    !fld(f, "data0", &data0) || (qp = qp_by_qpn(dev, data0)) < 0)
		return;
	q = &tl.q[qp];
	/* The subtype is the ibv_event_type code (model/hw/eqe.def). */
	snprintf(add(t, qp, SCN_TL_EVENT)->text, sizeof(tl.ev[0].text), "async event %s",
		 scn_event_name((enum ibv_event_type)sub));
	q->st.events++;
	if (q->nevents < MAX_EVENTS) {
		q->events[q->nevents].ev = (enum ibv_event_type)sub;
		q->events[q->nevents++].t = t;
	}
}

static void observe(void *arg, uint64_t t, int dev, const char *ev, const char *f)
{
	(void)arg;
	if (!strcmp(ev, "qp.modify"))
		on_state(dev, t, f, "");
	else if (!strcmp(ev, "qp.error"))
		on_state(dev, t, f, " (error)");
	else if (!strcmp(ev, "qp.force"))
		on_state(dev, t, f, " (forced)");
	else if (!strcmp(ev, "qp.migrate"))
		on_migrate(dev, t, f);
	else if (!strcmp(ev, "qp.migrate_fail"))
		on_qp_note(dev, t, f, "path migration failed");
	else if (!strcmp(ev, "qp.fatal"))
		on_qp_note(dev, t, f, "catastrophic error");
	else if (!strcmp(ev, "req.wqe"))
		on_req_wqe(dev, f);
	else if (!strcmp(ev, "req.rewind"))
		on_req_rewind(dev, t, f);
	else if (!strcmp(ev, "req.fail"))
		on_req_fail(dev, t, f);
	else if (!strcmp(ev, "req.timeout"))
		on_req_timeout(dev, t, f);
	else if (!strcmp(ev, "link.tx"))
		on_link_tx(t, f);
	else if (!strcmp(ev, "link.tx_raw"))
		on_link_tx_raw(f);
	else if (!strncmp(ev, "link.fault_", 11)) /* every fault injected into a frame */
		on_link_fault(f, !strcmp(ev + 11, "target"));
	else if (!strcmp(ev, "comp.ack"))
		on_comp_ack(dev, t, f);
	else if (!strcmp(ev, "resp.nak"))
		on_resp_nak(dev, t, f);
	else if (!strcmp(ev, "cqe.write"))
		on_cqe(dev, t, f);
	else if (!strcmp(ev, "eq.eqe"))
		on_eqe(dev, t, f);
}

/* ---- the runner's side ---- */

void scn_tl_start(struct scn *s)
{
	memset(&tl, 0, sizeof(tl));
	tl.s = s;
	if (hcasim_trace_observe("qp,req,link,comp,resp,cqe,eq", observe, NULL)) {
		fprintf(stderr, "hcasim_trace_observe: %s\n", hcasim_last_error());
		exit(1);
	}
}

void scn_tl_stop(void)
{
	hcasim_trace_observe(NULL, NULL, NULL);
	for (int i = 0; i < SCN_MAX_QPS; i++) {
		free(tl.q[i].req_sent);
		free(tl.q[i].resp_sent);
		free(tl.q[i].sq);
		free(tl.q[i].cqe);
	}
	free(tl.ev);
	memset(&tl, 0, sizeof(tl));
}

void scn_tl_note(struct scn *s, int qp, enum scn_tl_kind kind, const char *fmt, ...)
{
	struct scn_tl *e = add(hcasim_now_ps(), qp, kind);
	va_list ap;

	(void)s;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
}

void scn_tl_wr_posted(struct scn *s, int qp, int traffic, int n)
{
	struct tl_qp *q = &tl.q[qp];

	(void)s;
	if (q->nsq == q->capsq) {
		size_t cap = q->capsq ? 2 * q->capsq : 64;
		void *p = realloc(q->sq, cap * sizeof(*q->sq));

		if (!p)
			exit(1);
		q->sq = p;
		q->capsq = cap;
	}
	q->sq[q->nsq].traffic = traffic;
	q->sq[q->nsq++].n = n;
}

uint64_t scn_tl_take_cqe(int qp, const char *label)
{
	struct tl_qp *q = &tl.q[qp];
	struct scn_tl *e;

	if (q->cqe_taken >= q->ncqe)
		return 0;
	e = &tl.ev[q->cqe[q->cqe_taken++]];
	snprintf(e->text, sizeof(e->text), "%s", label);
	return e->t_ps;
}

bool scn_tl_cqe_seen(void)
{
	bool f = tl.flag;

	tl.flag = false;
	return f;
}

const struct scn_qp_stats *scn_tl_stats(int qp)
{
	return &tl.q[qp].st;
}

const struct scn_tl *scn_tl_events(size_t *n)
{
	*n = tl.nev;
	return tl.ev;
}

int scn_tl_rnr_waits(int qp, uint64_t *out, int max)
{
	int n = tl.q[qp].nrnr < max ? tl.q[qp].nrnr : max;

	memcpy(out, tl.q[qp].rnr_waits, (size_t)n * sizeof(*out));
	return n;
}

int scn_tl_timeout_waits(int qp, uint64_t *out, int max)
{
	int n = tl.q[qp].nto < max ? tl.q[qp].nto : max;

	memcpy(out, tl.q[qp].to_waits, (size_t)n * sizeof(*out));
	return n;
}

uint64_t scn_tl_event_time(int qp, enum ibv_event_type ev, int n)
{
	for (int i = 0; i < tl.q[qp].nevents; i++)
		if (tl.q[qp].events[i].ev == ev && n-- == 0)
			return tl.q[qp].events[i].t;
	return 0;
}

void scn_fmt_time(char *buf, size_t len, int64_t rel_ps)
{
	uint64_t a = rel_ps < 0 ? (uint64_t)-rel_ps : (uint64_t)rel_ps;

	snprintf(buf, len, "%s%llu.%06llu us", rel_ps < 0 ? "-" : "",
		 (unsigned long long)(a / 1000000), (unsigned long long)(a % 1000000));
}

static const char *kind_name(enum scn_tl_kind k)
{
	static const char *const n[] = {"state",   "post",   "tx",  "fault", "nak-rx", "nak-tx",
					"timeout", "rewind", "cqe", "event", "action"};

	return (unsigned)k < sizeof(n) / sizeof(n[0]) ? n[k] : "?";
}

void scn_tl_print(const struct scn *s)
{
	for (int i = 0; i < s->nqp; i++) {
		const struct scn_qp *q = &s->qp[i];
		const struct scn_qp_stats *st = &tl.q[i].st;

		printf("\nqp %s: host %d qpn 0x%x %s", q->name, q->host, q->qpn,
		       q->type == IBV_QPT_RC   ? "RC"
		       : q->type == IBV_QPT_UC ? "UC"
					       : "UD");
		if (q->peer >= 0)
			printf(" -> %s (host %d qpn 0x%x)", s->qp[q->peer].name,
			       s->qp[q->peer].host, s->qp[q->peer].qpn);
		printf(", sq_psn %u", q->sq_psn);
		if (q->type != IBV_QPT_UD)
			printf(", path_mtu %u", mtu_bytes(q->path_mtu));
		if (q->type == IBV_QPT_RC) {
			char t[32];

			scn_fmt_time(t, sizeof(t), (int64_t)(4096000ull << q->timeout));
			printf(", timeout %d (%s), retry_cnt %d, rnr_retry %d, min_rnr_timer %d",
			       q->timeout, q->timeout ? t : "none", q->retry_cnt, q->rnr_retry,
			       q->min_rnr_timer);
		}
		printf("\n");
		for (size_t k = 0; k < tl.nev; k++) {
			const struct scn_tl *e = &tl.ev[k];
			char t[32], end[32];

			if (e->qp != i)
				continue;
			scn_fmt_time(t, sizeof(t), (int64_t)(e->t_ps - s->t0));
			printf("  %18s  %-7s ", t, kind_name(e->kind));
			switch (e->kind) {
			case SCN_TL_TX:
				scn_fmt_time(end, sizeof(end), (int64_t)(e->end_ps - s->t0));
				printf("psn %-8u %-22s last bit %s%s%s%s\n", e->psn,
				       scn_opcode_name(e->opcode), end,
				       e->again ? (e->request ? "  RETRANSMISSION" : "  REPEATED")
						: "",
				       *e->text ? "  " : "", e->text);
				break;
			case SCN_TL_NAK_RX:
			case SCN_TL_NAK_TX:
			case SCN_TL_REWIND:
				printf("psn %-8u %s\n", e->psn, e->text);
				break;
			default:
				printf("%s\n", e->text);
			}
		}
		printf("  totals: %llu packets (%llu requests, %llu retransmitted; %llu responses, "
		       "%llu repeated), %llu timeouts, %llu rewinds, NAKs received: %llu RNR, %llu "
		       "sequence, %llu error; %llu CQEs (%llu errors), %llu events\n",
		       (unsigned long long)st->packets, (unsigned long long)st->requests,
		       (unsigned long long)st->retransmissions, (unsigned long long)st->responses,
		       (unsigned long long)st->repeated_responses, (unsigned long long)st->timeouts,
		       (unsigned long long)st->rewinds, (unsigned long long)st->rnr_naks_rcvd,
		       (unsigned long long)st->seq_naks_rcvd, (unsigned long long)st->err_naks_rcvd,
		       (unsigned long long)st->completions, (unsigned long long)st->errors,
		       (unsigned long long)st->events);
	}
}
