/* hcasim-bench: the closed-loop operation stream (bs_stream) behind the goodput, message-rate,
 * READ and simulator-speed scenarios. One program thread drives both hosts, as every hcasim
 * program does: posts and polls cost the host the simulated time host.verb_ns and
 * host.poll_ns say (docs/timing.md#host). */
#include "testbench/bench/bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_BATCH 64

/* Post the next chain of c->chain WRs on QP i (wr_id = i). */
static void post_chain(struct bsys *s, const struct bstream_cfg *c, int i,
		       struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	struct bhost *a = &s->h[0], *b = c->to ? c->to : &s->h[1];

	for (int k = 0; k < c->chain; k++) {
		sge[k] = (struct ibv_sge){ (uintptr_t)a->buf, c->len, a->mr->lkey };
		wr[k] = (struct ibv_send_wr){
			.wr_id = (uint64_t)i,
			.next = k + 1 < c->chain ? &wr[k + 1] : NULL,
			.sg_list = &sge[k],
			.num_sge = 1,
			.opcode = c->op,
			.send_flags = (k + 1 == c->chain ? IBV_SEND_SIGNALED : 0) |
				      (c->inline_data ? IBV_SEND_INLINE : 0),
		};
		wr[k].wr.rdma.remote_addr = (uintptr_t)b->buf;
		wr[k].wr.rdma.rkey = b->mr->rkey;
	}
	bs_post(c->qp[i], wr);
}

void bs_stream(struct bsys *s, const struct bstream_cfg *c, struct bstream_res *r)
{
	uint64_t chains = (c->msgs + (uint64_t)c->chain - 1) / (uint64_t)c->chain;
	uint64_t posted = 0, done = 0, t_warm = 0, t_last = 0, t0;
	struct ibv_send_wr *wr = calloc((size_t)c->chain, sizeof(*wr));
	struct ibv_sge *sge = calloc((size_t)c->chain, sizeof(*sge));
	struct hcasim_dev_counters d0, d1;
	struct bwc wc[POLL_BATCH];
	uint64_t ev0;
	double w0;

	if (!wr || !sge)
		bs_die("out of memory");
	if (c->len > s->h[0].buf_bytes || c->len > s->h[1].buf_bytes)
		bs_die("stream of %u bytes: buffers too small", c->len);
	memset(r, 0, sizeof(*r));
	if (hcasim_dev_counters(0, &d0))
		bs_die("hcasim_dev_counters");
	ev0 = hcasim_events_executed();
	t0 = hcasim_now_ps();
	w0 = bs_wall();
	/* Fill: chains_per_qp chains on every QP, QP by QP in turn. */
	for (int k = 0; k < c->chains_per_qp; k++)
		for (int i = 0; i < c->nqp && posted < chains; i++, posted++)
			post_chain(s, c, i, wr, sge);
	while (done < chains) {
		int n = bs_poll(&s->h[0], wc, POLL_BATCH);

		for (int j = 0; j < n; j++) {
			if (wc[j].status != IBV_WC_SUCCESS)
				bs_die("stream: completion status %s",
				       ibv_wc_status_str(wc[j].status));
			done++;
			if (done == c->warm_chains)
				t_warm = wc[j].ts_ps;
			t_last = wc[j].ts_ps;
			if (posted < chains) {
				post_chain(s, c, (int)wc[j].wr_id, wr, sge);
				posted++;
			}
		}
	}
	r->wall_s = bs_wall() - w0;
	r->sim_ps = hcasim_now_ps() - t0;
	r->events = hcasim_events_executed() - ev0;
	if (hcasim_dev_counters(0, &d1))
		bs_die("hcasim_dev_counters");
	r->tx_pkts = d1.tx_pkts - d0.tx_pkts;
	r->msgs = done * (uint64_t)c->chain;
	if (c->warm_chains && c->warm_chains < done) {
		r->window_msgs = (done - c->warm_chains) * (uint64_t)c->chain;
		r->window_ps = t_last - t_warm;
	}
	free(wr);
	free(sge);
}
