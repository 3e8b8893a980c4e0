/* hcasim-scenario [-q] FILE: run a declarative scenario (docs/scenarios.md) on the simulated
 * HCAs through the verbs API — hosts, QPs and their attributes, traffic, link faults at
 * given simulated times — and check its expectations on completions, QP states, times,
 * counters and async events. Prints a timeline of every QP (states, each packet and
 * retransmission, NAKs, timeouts, completions) and a PASS/FAIL line per expectation.
 * Exit status: 0 every expectation holds, 1 one does not, 2 the file or the command line is
 * wrong (the message names FILE:LINE and the key). -q leaves the timeline out. */
#include <infiniband/verbs.h>

#include "sim/hcasim.h"
#include "sim/apps/scenario/scenario.h"
#include "sim/apps/scenario/keys.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_PS 10000000ull	  /* 10 us: how often the runner looks at CQs and events */
#define IOVA_BASE 0x10000000ull	  /* buffers at fixed I/O virtual addresses: deterministic */
#define IOVA_STRIDE 0x10000000ull /* per QP, room for the largest buffer (64 MiB) */
#define MAX_EV_TYPES 32

struct host {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_port_attr port[2];
};

struct run {
	struct scn *s;
	struct ibv_device **list;
	int ndev;
	struct host host[64];
	unsigned events[SCN_MAX_QPS][MAX_EV_TYPES]; /* async events received per QP and type */
	bool action_failed;
};

/* A problem with the scenario found only once the system runs (a host that does not exist,
 * an attribute the device refuses): reported like a parse error, exit 2. */
/* ---- setup ---- */

static int open_hosts(struct run *r)
{
	struct scn *s = r->s;

	for (int i = 0; i < s->nqp; i++) {
		struct scn_qp *q = &s->qp[i];
		struct host *h;

		if (q->host >= r->ndev)
			return scn_fail(s, q->kline[K_Q_HOST] ? q->kline[K_Q_HOST] : q->line,
				   "[qp %s] host: host %d does not exist (%d simulated hosts; see "
				   "sim.hosts)",
				   q->name, q->host, r->ndev);
		if (q->port > s->ports)
			return scn_fail(s, q->kline[K_Q_PORT] ? q->kline[K_Q_PORT] : q->line,
				   "[qp %s] port: the HCAs have %d port(s) (hca.ports)", q->name,
				   s->ports);
		if (q->alt_port > s->ports)
			return scn_fail(s, q->kline[K_Q_ALT_PORT],
				   "[qp %s] alt_port: the HCAs have %d port(s) (hca.ports)", q->name,
				   s->ports);
		h = &r->host[q->host];
		if (h->ctx)
			continue;
		h->ctx = ibv_open_device(r->list[q->host]);
		h->pd = h->ctx ? ibv_alloc_pd(h->ctx) : NULL;
		if (!h->pd)
			return scn_fail(s, q->line, "host %d: %s", q->host, hcasim_last_error());
		for (int p = 1; p <= s->ports; p++)
			if (ibv_query_port(h->ctx, (uint8_t)p, &h->port[p - 1]))
				return scn_fail(s, q->line, "host %d port %d: %s", q->host, p,
					   hcasim_last_error());
		/* Async events are read without blocking, between steps of the run. */
		if (fcntl(h->ctx->async_fd, F_SETFL,
			  fcntl(h->ctx->async_fd, F_GETFL) | O_NONBLOCK) < 0)
			return scn_fail(s, q->line, "host %d: async fd: cannot make it non-blocking",
				   q->host);
	}
	return 0;
}

static int create_qp(struct run *r, int i)
{
	struct scn *s = r->s;
	struct scn_qp *q = &s->qp[i];
	struct host *h = &r->host[q->host];
	struct ibv_qp_init_attr init = {0};
	const int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;

	q->cq =
	    ibv_create_cq(h->ctx, (int)(2 * (q->max_send_wr + q->max_recv_wr) + 16), NULL, NULL, 0);
	if (!q->cq)
		return scn_fail(s, q->line, "[qp %s]: ibv_create_cq: %s", q->name, hcasim_last_error());
	q->buf = aligned_alloc(4096, (q->buffer_bytes + 4095) & ~(size_t)4095);
	if (!q->buf)
		return scn_fail(s, q->line, "[qp %s]: out of memory for its buffer", q->name);
	/* A pattern of its own per QP, so that moved bytes can be told from bytes in place. */
	for (size_t k = 0; k < q->buffer_bytes; k++)
		q->buf[k] = (uint8_t)(k * 31 + 7 + 101 * (size_t)i + (k >> 12));
	for (int k = 0; k < q->ninit; k++)
		memcpy(q->buf + q->init[k].offset, &q->init[k].value, 8);
	q->iova = IOVA_BASE + (uint64_t)i * IOVA_STRIDE;
	q->mr = ibv_reg_mr_iova2(h->pd, q->buf, q->buffer_bytes, q->iova, acc);
	if (!q->mr)
		return scn_fail(s, q->line, "[qp %s]: ibv_reg_mr: %s", q->name, hcasim_last_error());
	init.send_cq = init.recv_cq = q->cq;
	init.qp_type = q->type;
	init.cap.max_send_wr = q->max_send_wr;
	init.cap.max_recv_wr = q->max_recv_wr;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	q->qp = ibv_create_qp(h->pd, &init);
	if (!q->qp)
		return scn_fail(s, q->line, "[qp %s]: ibv_create_qp: %s", q->name, hcasim_last_error());
	q->qpn = q->qp->qp_num;
	return 0;
}

static int modify(const struct scn *s, const struct scn_qp *q, struct ibv_qp_attr *a, int mask,
		  const char *what)
{
	if (ibv_modify_qp(q->qp, a, mask))
		return scn_fail(s, q->line, "[qp %s]: ibv_modify_qp to %s: %s", q->name, what,
			   hcasim_last_error());
	return 0;
}

/* The alternate path of an RTS QP: the peer's host on port alt_port, then armed. */
static int alt_path(const struct scn *s, const struct scn_qp *q, const struct host *ph)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.alt_ah_attr.dlid = ph->port[q->alt_port - 1].lid;
	a.alt_ah_attr.port_num = (uint8_t)q->alt_port;
	a.alt_ah_attr.is_global = ph->port[q->alt_port - 1].link_layer == IBV_LINK_LAYER_ETHERNET;
	if (a.alt_ah_attr.is_global &&
	    ibv_query_gid(ph->ctx, (uint8_t)q->alt_port, 0, &a.alt_ah_attr.grh.dgid))
		return scn_fail(s, q->line, "[qp %s]: ibv_query_gid: %s", q->name,
				hcasim_last_error());
	a.alt_ah_attr.grh.hop_limit = 1;
	a.alt_port_num = (uint8_t)q->alt_port;
	a.alt_pkey_index = 0;
	a.alt_timeout = (uint8_t)q->alt_timeout;
	a.path_mig_state = q->path_mig;
	return modify(s, q, &a, IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE, "alternate path");
}

/* RESET -> INIT, -> RTR, -> RTS with the section's attributes (as sim/apps/run.c does it),
 * stopping at the section's state. */
static int connect_step(struct run *r, int i, enum ibv_qp_state to)
{
	struct scn *s = r->s;
	struct scn_qp *q = &s->qp[i];
	const struct scn_qp *p = q->peer >= 0 ? &s->qp[q->peer] : NULL;
	const struct host *ph = p ? &r->host[p->host] : NULL;
	struct ibv_qp_attr a;
	int mask;

	if (to > q->state)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = to;
	switch (to) {
	case IBV_QPS_INIT:
		a.pkey_index = 0;
		a.port_num = (uint8_t)q->port;
		mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (q->type == IBV_QPT_UD) {
			a.qkey = q->qkey;
			mask |= IBV_QP_QKEY;
		} else {
			a.qp_access_flags = q->access;
			mask |= IBV_QP_ACCESS_FLAGS;
		}
		return modify(s, q, &a, mask, "INIT");
	case IBV_QPS_RTR:
		mask = IBV_QP_STATE;
		if (q->type != IBV_QPT_UD) {
			union ibv_gid gid;
			bool roce = ph->port[p->port - 1].link_layer == IBV_LINK_LAYER_ETHERNET;

			if (ibv_query_gid(ph->ctx, (uint8_t)p->port, 0, &gid))
				return scn_fail(s, q->line, "[qp %s]: ibv_query_gid: %s", q->name,
					   hcasim_last_error());
			a.path_mtu = q->path_mtu;
			a.dest_qp_num = p->qpn;
			a.rq_psn = p->sq_psn;
			a.ah_attr.is_global = roce;
			a.ah_attr.dlid = ph->port[p->port - 1].lid;
			a.ah_attr.port_num = (uint8_t)q->port;
			a.ah_attr.grh.dgid = gid;
			a.ah_attr.grh.hop_limit = 1;
			mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
			if (q->type == IBV_QPT_RC) {
				a.max_dest_rd_atomic = (uint8_t)q->max_dest_rd_atomic;
				a.min_rnr_timer = (uint8_t)q->min_rnr_timer;
				mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
			}
		}
		return modify(s, q, &a, mask, "RTR");
	case IBV_QPS_RTS:
		a.sq_psn = q->sq_psn;
		mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (q->type == IBV_QPT_RC) {
			a.timeout = (uint8_t)q->timeout;
			a.retry_cnt = (uint8_t)q->retry_cnt;
			a.rnr_retry = (uint8_t)q->rnr_retry;
			a.max_rd_atomic = (uint8_t)q->max_rd_atomic;
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_MAX_QP_RD_ATOMIC;
		}
		if (modify(s, q, &a, mask, "RTS"))
			return -1;
		return q->alt_port ? alt_path(s, q, ph) : 0;
	default:
		return 0;
	}
}

static int make_ah(struct run *r, int i)
{
	struct scn *s = r->s;
	struct scn_qp *q = &s->qp[i];
	const struct scn_qp *p;
	const struct host *ph;
	struct ibv_ah_attr a = {0};

	if (q->type != IBV_QPT_UD || q->peer < 0)
		return 0;
	p = &s->qp[q->peer];
	ph = &r->host[p->host];
	a.dlid = ph->port[p->port - 1].lid;
	a.port_num = (uint8_t)q->port;
	if (ph->port[p->port - 1].link_layer == IBV_LINK_LAYER_ETHERNET) {
		a.is_global = 1;
		a.grh.hop_limit = 1;
		if (ibv_query_gid(ph->ctx, (uint8_t)p->port, 0, &a.grh.dgid))
			return scn_fail(s, q->line, "[qp %s]: ibv_query_gid: %s", q->name,
				   hcasim_last_error());
	}
	q->ah = ibv_create_ah(r->host[q->host].pd, &a);
	if (!q->ah)
		return scn_fail(s, q->line, "[qp %s]: ibv_create_ah: %s", q->name, hcasim_last_error());
	return 0;
}

/* Links and sides of the faults, now that the port count is known; two faults that need the
 * same link side at once are refused, since hcasim_link_faults replaces a side's random
 * faults and removing targets clears the whole side. */
static int place_faults(struct run *r)
{
	struct scn *s = r->s;
	int nlinks = (r->ndev / 2) * s->ports;

	for (int i = 0; i < s->nfault; i++) {
		struct scn_fault *f = &s->fault[i];

		if (*f->from) {
			for (int k = 0; k < s->nqp; k++)
				if (!strcmp(s->qp[k].name, f->from)) {
					f->link =
					    scn_link_of(s->qp[k].host, s->qp[k].port, s->ports);
					f->side = s->qp[k].host & 1;
				}
		}
		if (f->link >= nlinks)
			return scn_fail(s, f->line, "[fault %s] link: link %d does not exist (%d links)",
				   f->name, f->link, nlinks);
		if (*f->target_qp)
			for (int k = 0; k < s->nqp; k++)
				if (!strcmp(s->qp[k].name, f->target_qp))
					f->target.qpn = s->qp[k].qpn;
	}
	for (int i = 0; i < s->nfault; i++)
		for (int j = 0; j < i; j++) {
			const struct scn_fault *a = &s->fault[i], *b = &s->fault[j];
			bool same_side = a->side < 0 || b->side < 0 || a->side == b->side;

			if (a->link != b->link || !same_side || a->targeted != b->targeted)
				continue;
			if (a->targeted && a->until_ps == UINT64_MAX && b->until_ps == UINT64_MAX)
				continue; /* targets add up; neither is removed */
			if (a->at_ps < b->until_ps && b->at_ps < a->until_ps)
				return scn_fail(
				    s, a->line,
				    "[fault %s]: overlaps [fault %s] (line %d) on link %d side "
				    "%d; %s",
				    a->name, b->name, b->line, a->link,
				    a->side < 0 ? b->side : a->side,
				    a->targeted ? "removing targets (until) clears the whole side"
						: "random faults of a side replace each other");
		}
	return 0;
}

static int setup(struct run *r)
{
	struct scn *s = r->s;
	static const enum ibv_qp_state steps[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};

	if (open_hosts(r))
		return -1;
	for (int i = 0; i < s->nqp; i++)
		if (create_qp(r, i))
			return -1;
	for (size_t k = 0; k < 3; k++)
		for (int i = 0; i < s->nqp; i++)
			if (connect_step(r, i, steps[k]))
				return -1;
	for (int i = 0; i < s->nqp; i++)
		if (make_ah(r, i))
			return -1;
	return place_faults(r);
}

static void teardown(struct run *r)
{
	struct scn *s = r->s;

	for (int i = 0; i < s->nqp; i++) {
		struct scn_qp *q = &s->qp[i];

		if (q->ah)
			ibv_destroy_ah(q->ah);
		if (q->qp)
			ibv_destroy_qp(q->qp);
		if (q->cq)
			ibv_destroy_cq(q->cq);
		if (q->mr)
			ibv_dereg_mr(q->mr);
		free(q->buf);
		q->ah = NULL;
		q->qp = NULL;
		q->cq = NULL;
		q->mr = NULL;
		q->buf = NULL;
	}
	for (int h = 0; h < 64; h++) {
		if (r->host[h].pd)
			ibv_dealloc_pd(r->host[h].pd);
		if (r->host[h].ctx)
			ibv_close_device(r->host[h].ctx);
	}
	if (r->list)
		ibv_free_device_list(r->list);
	hcasim_shutdown();
}

/* ---- actions ---- */

static const char *wr_label(const struct scn *s, int t, int n, char *buf, size_t len)
{
	if (s->tr[t].count == 1)
		snprintf(buf, len, "%s", s->tr[t].name);
	else
		snprintf(buf, len, "%s#%d", s->tr[t].name, n + 1);
	return buf;
}

/* A modify [traffic]: ibv_modify_qp to the section's state. */
static void modify_traffic(struct run *r, int ti)
{
	struct scn *s = r->s;
	struct scn_traffic *t = &s->tr[ti];
	struct scn_qp *q = &s->qp[t->qp];
	struct ibv_qp_attr a = {.qp_state = t->state};
	int mask = IBV_QP_STATE;

	if (t->en_sqd_async_notify >= 0) {
		a.en_sqd_async_notify = (uint8_t)t->en_sqd_async_notify;
		mask |= IBV_QP_EN_SQD_ASYNC_NOTIFY;
	}
	scn_tl_note(s, t->qp, SCN_TL_ACTION, "%s: ibv_modify_qp to %s%s", t->name,
		    scn_state_name(t->state),
		    mask & IBV_QP_EN_SQD_ASYNC_NOTIFY
			? (a.en_sqd_async_notify ? " with en_sqd_async_notify" : "")
			: "");
	if (ibv_modify_qp(q->qp, &a, mask)) {
		t->failed = true;
		snprintf(t->error, sizeof(t->error), "ibv_modify_qp: %s", hcasim_last_error());
	}
}

/* Post the send-queue WRs of a [traffic] section, one per sge; returns ibv_post_send's
 * result. */
static int post_sends(struct run *r, int ti, struct ibv_sge *sge)
{
	struct scn *s = r->s;
	struct scn_traffic *t = &s->tr[ti];
	struct scn_qp *q = &s->qp[t->qp];
	const struct scn_qp *p = q->peer >= 0 ? &s->qp[q->peer] : NULL;
	struct ibv_send_wr wr[SCN_MAX_COUNT], *bads;
	int rc;
	static const enum ibv_wr_opcode opc[] = {
	    [SCN_SEND] = IBV_WR_SEND,
	    [SCN_WRITE] = IBV_WR_RDMA_WRITE,
	    [SCN_READ] = IBV_WR_RDMA_READ,
	    [SCN_CMP_SWAP] = IBV_WR_ATOMIC_CMP_AND_SWP,
	    [SCN_FETCH_ADD] = IBV_WR_ATOMIC_FETCH_AND_ADD,
	};

	for (unsigned n = 0; n < t->count; n++) {
		uint64_t raddr = p ? p->iova + t->remote_offset + (uint64_t)n * t->size : 0;

		memset(&wr[n], 0, sizeof(wr[n]));
		wr[n].wr_id = ((uint64_t)ti << 16) | n;
		wr[n].sg_list = &sge[n];
		wr[n].num_sge = 1;
		wr[n].opcode = opc[t->op];
		wr[n].send_flags = t->signaled ? IBV_SEND_SIGNALED : 0;
		wr[n].next = n + 1 < t->count ? &wr[n + 1] : NULL;
		if (q->type == IBV_QPT_UD) {
			wr[n].wr.ud.ah = q->ah;
			wr[n].wr.ud.remote_qpn = p->qpn;
			wr[n].wr.ud.remote_qkey = p->qkey;
		} else if (t->op == SCN_WRITE || t->op == SCN_READ) {
			wr[n].wr.rdma.remote_addr = raddr;
			wr[n].wr.rdma.rkey = p->mr->rkey;
		} else if (t->op == SCN_CMP_SWAP || t->op == SCN_FETCH_ADD) {
			wr[n].wr.atomic.remote_addr = raddr;
			wr[n].wr.atomic.rkey = p->mr->rkey;
			wr[n].wr.atomic.compare_add =
			    t->op == SCN_CMP_SWAP ? t->compare : t->swap_add;
			wr[n].wr.atomic.swap = t->op == SCN_CMP_SWAP ? t->swap_add : 0;
		}
	}
	scn_tl_note(s, t->qp, SCN_TL_POST, "%s: %u %s WR(s) of %u bytes%s", t->name, t->count,
		    scn_op_name(t->op), t->size, t->signaled ? "" : ", unsignaled");
	rc = ibv_post_send(q->qp, wr, &bads);
	for (unsigned n = 0; !rc && n < t->count; n++)
		scn_tl_wr_posted(s, t->qp, ti, (int)n);
	return rc;
}

static void post_traffic(struct run *r, int ti)
{
	struct scn *s = r->s;
	struct scn_traffic *t = &s->tr[ti];
	struct scn_qp *q = &s->qp[t->qp];
	struct ibv_sge sge[SCN_MAX_COUNT];
	uint64_t now = hcasim_now_ps();
	int rc;

	if (t->op == SCN_MODIFY) {
		modify_traffic(r, ti);
		return;
	}
	for (unsigned n = 0; n < t->count; n++) {
		sge[n].addr = q->iova + t->offset + (uint64_t)n * t->size;
		sge[n].length = t->size;
		sge[n].lkey = q->mr->lkey;
		t->wr[n].post_ps = now;
	}
	if (t->op == SCN_RECV) {
		struct ibv_recv_wr wr[SCN_MAX_COUNT], *badr;

		for (unsigned n = 0; n < t->count; n++) {
			wr[n] = (struct ibv_recv_wr){.wr_id = ((uint64_t)ti << 16) | n,
						     .sg_list = &sge[n],
						     .num_sge = 1,
						     .next = n + 1 < t->count ? &wr[n + 1] : NULL};
		}
		scn_tl_note(s, t->qp, SCN_TL_POST, "%s: %u receive WR(s) of %u bytes", t->name,
			    t->count, t->size);
		rc = ibv_post_recv(q->qp, wr, &badr);
	} else {
		rc = post_sends(r, ti, sge);
	}
	if (rc) {
		t->failed = true;
		snprintf(t->error, sizeof(t->error), "ibv_post_%s: %s",
			 t->op == SCN_RECV ? "recv" : "send", hcasim_last_error());
		return;
	}
	for (unsigned n = 0; n < t->count; n++)
		t->wr[n].posted = true;
}

static void fault_action(struct run *r, int fi, bool install)
{
	struct scn *s = r->s;
	struct scn_fault *f = &s->fault[fi];
	int rc, qp = 0;

	/* Shown in the timeline of the QP it hits: the one named by from, else the first QP
	 * whose frames leave on that link side. */
	for (int k = s->nqp - 1; k >= 0; k--)
		if (*f->from ? !strcmp(s->qp[k].name, f->from)
			     : scn_link_of(s->qp[k].host, s->qp[k].port, s->ports) == f->link &&
				   (f->side < 0 || (s->qp[k].host & 1) == f->side))
			qp = k;
	if (f->link_down)
		rc = hcasim_link_set(f->link, !install);
	else if (install)
		rc = f->targeted ? hcasim_link_fault_target(f->link, f->side, &f->target)
				 : hcasim_link_faults(f->link, f->side, &f->random);
	else
		rc = f->targeted ? hcasim_link_fault_target(f->link, f->side, NULL)
				 : hcasim_link_faults(f->link, f->side, &(struct hcasim_faults){0});
	if (f->link_down)
		scn_tl_note(s, qp, SCN_TL_ACTION, "fault %s: link %d %s%s%s", f->name, f->link,
			    install ? "down" : "up", rc ? ": " : "", rc ? hcasim_last_error() : "");
	else
		scn_tl_note(s, qp, SCN_TL_ACTION, "fault %s %s on link %d side %d%s%s", f->name,
			    install ? "installed" : "removed", f->link, f->side, rc ? ": " : "",
			    rc ? hcasim_last_error() : "");
	if (rc) {
		r->action_failed = true;
		fprintf(stderr, "%s:%d: [fault %s]: %s\n", s->path, f->line, f->name,
			hcasim_last_error());
	}
	if (install)
		f->installed = true;
	else
		f->removed = true;
}

/* ---- collecting ---- */

static void collect(struct run *r)
{
	struct scn *s = r->s;

	for (int i = 0; i < s->nqp; i++) {
		struct ibv_wc wc[16];
		int n;

		while ((n = ibv_poll_cq(s->qp[i].cq, 16, wc)) > 0) {
			for (int k = 0; k < n; k++) {
				int ti = (int)(wc[k].wr_id >> 16), wn = (int)(wc[k].wr_id & 0xffff);
				char label[96], name[48];
				struct scn_wr *w;

				if (ti >= s->ntr || wn >= (int)s->tr[ti].count)
					continue;
				w = &s->tr[ti].wr[wn];
				snprintf(label, sizeof(label), "completion %s %s%s",
					 wr_label(s, ti, wn, name, sizeof(name)),
					 scn_status_name(wc[k].status),
					 s->tr[ti].op == SCN_RECV ? " (receive)" : "");
				w->cqe_ps = scn_tl_take_cqe(i, label);
				w->done = true;
				w->status = wc[k].status;
				w->byte_len = wc[k].byte_len;
			}
		}
	}
	for (int h = 0; h < 64; h++) {
		struct ibv_async_event ev;

		if (!r->host[h].ctx)
			continue;
		while (!ibv_get_async_event(r->host[h].ctx, &ev)) {
			for (int i = 0; i < s->nqp; i++)
				if (s->qp[i].host == h && ev.element.qp == s->qp[i].qp &&
				    (unsigned)ev.event_type < MAX_EV_TYPES)
					r->events[i][ev.event_type]++;
			ibv_ack_async_event(&ev);
		}
	}
}

/* Every signaled send WR posted so far has completed. Receives do not count: a receive that
 * no message ever reaches must not keep the run going. */
static bool all_done(const struct scn *s)
{
	for (int t = 0; t < s->ntr; t++) {
		const struct scn_traffic *tr = &s->tr[t];

		if (tr->op == SCN_MODIFY || tr->op == SCN_RECV || !tr->signaled)
			continue;
		for (unsigned n = 0; n < tr->count; n++)
			if (tr->wr[n].posted && !tr->wr[n].done)
				return false;
	}
	return true;
}

struct action {
	uint64_t t;
	int kind; /* 0 traffic, 1 fault install, 2 fault removal */
	int index;
	int order;
};

static int action_cmp(const void *a, const void *b)
{
	const struct action *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->order - y->order;
}

static void run(struct run *r)
{
	struct scn *s = r->s;
	struct action act[SCN_MAX_TRAFFIC + 2 * SCN_MAX_FAULTS];
	int nact = 0, next = 0;
	uint64_t end = s->t0 + s->duration_ps, settle_until = 0;

	for (int i = 0; i < s->nfault; i++) {
		act[nact] = (struct action){s->fault[i].at_ps, 1, i, nact};
		nact++;
		if (s->fault[i].until_ps != UINT64_MAX) {
			act[nact] = (struct action){s->fault[i].until_ps, 2, i, nact};
			nact++;
		}
	}
	for (int i = 0; i < s->ntr; i++) {
		act[nact] = (struct action){s->tr[i].at_ps, 0, i, nact};
		nact++;
	}
	qsort(act, (size_t)nact, sizeof(act[0]), action_cmp);
	scn_tl_cqe_seen(); /* what setup left is not news (and polling costs host time) */
	for (;;) {
		uint64_t now = hcasim_now_ps(), target;

		if (next < nact && s->t0 + act[next].t <= now) {
			if (act[next].kind == 0)
				post_traffic(r, act[next].index);
			else
				fault_action(r, act[next].index, act[next].kind == 1);
			next++;
			continue;
		}
		if (scn_tl_cqe_seen()) {
			collect(r); /* polls charge host time */
			now = hcasim_now_ps();
		}
		if (next >= nact && all_done(s)) {
			if (!settle_until)
				settle_until = now + s->settle_ps;
			if (now >= settle_until)
				break;
		} else {
			settle_until = 0;
		}
		if (now >= end)
			break;
		target = now + CHUNK_PS;
		if (next < nact && s->t0 + act[next].t < target)
			target = s->t0 + act[next].t;
		if (settle_until && settle_until < target)
			target = settle_until;
		if (end < target)
			target = end;
		if (target > now)
			hcasim_run_for_ps(target - now);
	}
	collect(r);
}

/* The report: the header, the timeline (unless quiet), the actions, the expectations and the
 * result. Returns whether the scenario passed. */
static int report(struct run *r, const char *path, bool quiet)
{
	struct scn *s = r->s;
	int pass = 0, rc;
	char t[32];

	printf("scenario: %s%s%s\n", path, *s->title ? " — " : "", s->title);
	scn_fmt_time(t, sizeof(t), (int64_t)s->t0);
	printf("start (t0): %s after boot; the times below count from t0\n", t + 0);
	scn_fmt_time(t, sizeof(t), (int64_t)(hcasim_now_ps() - s->t0));
	printf("ran until: %s\n", t);
	if (!quiet) {
		printf("\n== timeline ==\n");
		scn_tl_print(s);
	}
	printf("\n== actions ==\n");
	for (int i = 0; i < s->ntr; i++) {
		const struct scn_traffic *tr = &s->tr[i];

		scn_fmt_time(t, sizeof(t), (int64_t)tr->at_ps);
		printf("  %s  %s:%d [traffic %s] %s on %s%s%s\n", tr->failed ? "FAIL" : "ok  ",
		       path, tr->line, tr->name, scn_op_name(tr->op), s->qp[tr->qp].name,
		       tr->failed ? ": " : "", tr->failed ? tr->error : "");
		rc = !tr->failed;
		r->action_failed |= !rc;
	}
	printf("\n== expectations ==\n");
	for (int i = 0; i < s->nex; i++) {
		char msg[512];
		int ok = scn_evaluate(s, r->events, msg, sizeof(msg), i);

		printf("  %s  %s:%d %s\n", ok ? "PASS" : "FAIL", path, s->ex[i].line, msg);
		pass += ok;
	}
	rc = pass == s->nex && !r->action_failed;
	printf("\nresult: %s (%d of %d expectations hold%s)\n", rc ? "PASS" : "FAIL", pass, s->nex,
	       r->action_failed ? "; an action failed" : "");
	return rc;
}

int main(int argc, char **argv)
{
	struct run *r;
	struct scn *s;
	const char *path;
	bool quiet = false;
	int rc;

	if (argc == 3 && !strcmp(argv[1], "-q")) {
		quiet = true;
		path = argv[2];
	} else if (argc == 2 && argv[1][0] != '-') {
		path = argv[1];
	} else {
		fprintf(stderr, "usage: %s [-q] SCENARIO_FILE   (format: docs/scenarios.md)\n",
			argv[0]);
		return 2;
	}
	r = calloc(1, sizeof(*r));
	s = calloc(1, sizeof(*s));
	if (!r || !s)
		return 2;
	r->s = s;
	if (scn_parse(s, path))
		goto err_free;
	for (int i = 0; i < s->nsim; i++)
		if (hcasim_config_set(s->sim[i].key, s->sim[i].value)) {
			fprintf(stderr, "%s:%d: [sim] %s: %s\n", path, s->sim[i].line,
				s->sim[i].key, hcasim_last_error());
			goto err_free;
		}
	scn_tl_start(s);
	/* Booted first, so that a boot failure is told once, here (the driver tells it too when
	 * the device list is what boots). */
	r->list = hcasim_boot() ? NULL : ibv_get_device_list(&r->ndev);
	if (!r->list) {
		fprintf(stderr, "%s: boot failed: %s\n", path, hcasim_last_error());
		goto err_teardown;
	}
	{
		char buf[16];

		s->ports = hcasim_config_get("hca.ports", buf, sizeof(buf)) ? 1 : atoi(buf);
	}
	if (setup(r))
		goto err_teardown;
	s->t0 = hcasim_now_ps();
	run(r);

	rc = report(r, path, quiet);
	teardown(r);
	scn_tl_stop();
	free(r);
	free(s);
	return rc ? 0 : 1;

err_teardown:
	teardown(r);
	scn_tl_stop();
err_free:
	free(r);
	free(s);
	return 2;
}
