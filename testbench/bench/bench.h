/* hcasim-bench: shared helpers of the benchmarks behind `make bench` (docs/bench/README.md).
 *
 * Every scenario runs in its own process, boots the simulated system through the standard
 * verbs (two hosts back to back), does its work and prints its figures on stdout as
 *   FIG <key> <value>       a number the report compares with its target
 *   INFO <key> <text>       a line of detail for docs/bench/results.md
 * Simulated times are in ps (hcasim_now_ps, CQE timestamps, trace lines); wall times come from
 * clock_gettime(CLOCK_MONOTONIC) and are used only by the section B scenarios. Helpers print
 * the reason and exit(2) on any failure: a benchmark that cannot run reports nothing. */
#ifndef BENCH_BENCH_H
#define BENCH_BENCH_H

#include <infiniband/verbs.h>

#include "sim/hcasim.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PS_PER_US 1000000ull
#define PS_PER_MS 1000000000ull
#define PS_PER_S 1000000000000ull

/* One simulated host as a verbs program sees it. */
struct bhost {
	struct ibv_context *ctx;     /* open device */
	struct ibv_pd *pd;           /* one PD */
	struct ibv_comp_channel *ch; /* completion channel of cq */
	struct ibv_cq_ex *cqx;       /* extended CQ with completion timestamps */
	struct ibv_cq *cq;           /* the same CQ, for ibv_poll_cq and QP creation */
	struct ibv_port_attr port;   /* port 1 */
	union ibv_gid gid;           /* GID 0 of port 1 */
	uint8_t *buf;                /* registered buffer, page aligned */
	size_t buf_bytes;            /* its size */
	struct ibv_mr *mr;           /* buf, with every access */
	uint64_t cycle_ps;           /* one device core cycle in ps (CQE timestamps) */
};

/* The two hosts of one boot. */
struct bsys {
	struct ibv_device **list; /* device list */
	struct bhost h[2];        /* hcasim0, hcasim1 */
};

/* Connection parameters of an RC QP (bs_connect). */
struct bconn {
	enum ibv_mtu mtu;      /* path MTU */
	uint8_t timeout;       /* local ACK timeout code (0 = off) */
	uint8_t retry_cnt;     /* retries after a timeout */
	uint8_t rnr_retry;     /* retries after an RNR NAK (7 = for ever) */
	uint8_t min_rnr_timer; /* this QP's RNR NAK delay code, as a responder */
	uint8_t rd_atomic;     /* max_rd_atomic and max_dest_rd_atomic */
};
extern const struct bconn bconn_default; /* MTU 4096, timeout 14, retries 7, rd_atomic 16 */

/* One completion, from the extended CQ. */
struct bwc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	uint64_t ts_ps; /* the CQE's device timestamp, in ps since t = 0 */
};

/* Configure (cfg: key, value, ..., NULL; may be NULL), boot, open both HCAs, each with a PD,
 * a cqe-entry extended CQ on a completion channel, and buf_bytes of registered memory. */
void bs_open(struct bsys *s, const char *const *cfg, size_t buf_bytes, int cqe);
/* Destroy what bs_open made, then hcasim_shutdown(). QPs must be destroyed first. */
void bs_close(struct bsys *s);
/* Open one HCA as bs_open opens each (a PD, the extended CQ on a channel, the buffer). */
void bs_host_open(struct bhost *h, struct ibv_device *dev, size_t buf_bytes, int cqe);
/* An RC QP on h's PD and CQ with send/receive queues of sq/rq entries. NULL if the device
 * refuses it (the caller decides); errors other than ENOMEM exit. */
struct ibv_qp *bs_qp(struct bhost *h, uint32_t sq, uint32_t rq);
/* RESET -> INIT -> RTR -> RTS towards peer_qpn on peer, with c (NULL: bconn_default). */
void bs_connect(struct bhost *h, struct ibv_qp *qp, struct bhost *peer, uint32_t peer_qpn,
		const struct bconn *c);
/* An RC QP on each host (sq/rq entries), connected to each other with c (NULL: default). */
void bs_pair(struct bsys *s, struct ibv_qp **qa, struct ibv_qp **qb, uint32_t sq, uint32_t rq,
	     const struct bconn *c);
/* The same between any two hosts; ha == hb makes a loopback pair on one HCA (both QPs on its
 * CQ, addressing each other through its port 1: docs/loopback.md). */
void bs_pair_hosts(struct bhost *ha, struct bhost *hb, struct ibv_qp **qa, struct ibv_qp **qb,
		   uint32_t sq, uint32_t rq, const struct bconn *c);
void bs_unpair(struct ibv_qp *qa, struct ibv_qp *qb);
/* The ibv_mtu of a path MTU in bytes (256..4096; anything else: 4096). */
enum ibv_mtu bs_mtu(unsigned mtu);
/* Take up to max completions from h's CQ (one poll batch; 0 when empty, which costs the host
 * host.poll_ns of simulated time). */
int bs_poll(struct bhost *h, struct bwc *out, int max);
/* Block (the simulation runs, idle stretches skipped) until h's CQ has a completion, then take
 * it. Uses the completion channel: arm, check, ibv_get_cq_event. */
void bs_wait(struct bhost *h, struct bwc *out);
/* Post one WR (exits on failure). */
void bs_post(struct ibv_qp *qp, struct ibv_send_wr *wr);
void bs_post_recv(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len, uint32_t lkey);

/* Wall clock, seconds (CLOCK_MONOTONIC). */
double bs_wall(void);
/* Peak resident set size of this process, KiB (VmHWM of /proc/self/status). */
long bs_vmhwm_kib(void);

/* Output. */
void bs_fig(const char *key, double value);
void bs_info(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bs_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
extern const char *bs_prog; /* bs_die's prefix: "hcasim-bench" unless the program sets it */

/* Wire limit of an RDMA WRITE of m bytes (targets.md section A): n = ceil(m / mtu) packets,
 * m + n * h + 16 bytes on the wire, goodput = rate * m / wire bytes. */
double bs_write_limit_gbps(double rate_gbps, uint64_t m, unsigned mtu, unsigned h);

/* Trace records the timing scenarios read back (link.tx, req.timeout, comp.rnr_*). */
struct btrace_ev {
	uint64_t t;          /* ps */
	int side;            /* link.tx: 0 = sent by the even host */
	uint64_t start, end; /* link.tx: first and last bit; comp.rnr_wait: start= */
	uint64_t wait_ps;    /* comp.rnr_wait: wait_ps= */
	bool exhausted;      /* the event says the retries are exhausted */
};
struct btrace {
	struct btrace_ev *tx0, *timeout, *rnr_wait, *rnr_resume; /* in trace order */
	int ntx0, ntimeout, nrnr_wait, nrnr_resume;
};
/* Parse a trace file written by hcasim_trace("link,req,comp", path). */
void bs_trace_read(const char *path, struct btrace *tr);
void bs_trace_free(struct btrace *tr);

/* A closed-loop stream of one-sided operations from hcasim0 to hcasim1 (stream.c). Each of
 * nqp QPs keeps chains_per_qp chains of `chain` WRs posted (one ibv_post_send, one doorbell
 * per chain, only the chain's last WR signaled); each chain completion posts the QP's next
 * chain, until msgs operations have been posted and completed. */
struct bstream_cfg {
	struct ibv_qp **qp;      /* nqp connected QPs on hcasim0 */
	int nqp;
	enum ibv_wr_opcode op;   /* IBV_WR_RDMA_WRITE or IBV_WR_RDMA_READ */
	uint32_t len;            /* bytes per operation */
	bool inline_data;        /* IBV_SEND_INLINE (WRITE, len <= 64) */
	int chain;               /* WRs per ibv_post_send */
	int chains_per_qp;       /* chains outstanding per QP */
	uint64_t msgs;           /* operations in all (rounded up to whole chains) */
	uint64_t warm_chains;    /* chain completions before the measured window opens */
	struct bhost *to;        /* the host whose buffer is the target (NULL: hcasim1) */
};
struct bstream_res {
	uint64_t msgs;            /* operations completed */
	uint64_t window_msgs;     /* operations completed inside the window */
	uint64_t window_ps;       /* CQE timestamp of the last completion - of the warm-th */
	uint64_t sim_ps;          /* simulated time of the whole stream (hcasim_now_ps) */
	double wall_s;            /* wall time of the whole stream */
	uint64_t tx_pkts;         /* request packets hcasim0 sent during the stream */
	uint64_t events;          /* kernel events during the stream */
};
void bs_stream(struct bsys *s, const struct bstream_cfg *c, struct bstream_res *r);

/* Scenarios (fidelity.c: section A; speed.c: section B). Each returns 0. */
struct bscenario {
	const char *name; /* hcasim-bench run <name> */
	const char *doc;  /* one line */
	int (*fn)(void);
};
extern const struct bscenario bench_fidelity[], bench_speed[], bench_fabric[];

#endif
