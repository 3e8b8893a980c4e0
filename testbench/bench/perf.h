/* hcasim-perf: a perftest-compatible benchmark (ib_write_bw, ib_send_lat, ...) whose server and
 * client are the two simulated hosts of one process (docs/performance.md).
 *
 * perf_main.c parses the flags (perftest's names and defaults), prints the report in perftest's
 * layout or as JSON; perf_run.c boots the hosts, makes and connects the QPs and runs the
 * bandwidth and latency loops. Every time is simulated time in ps (hcasim_now_ps() taken by the
 * program, as perftest takes get_cycles()); only wall_s is wall clock. */
#ifndef BENCH_PERF_H
#define BENCH_PERF_H

#include "testbench/bench/bench.h"

#include <stdbool.h>
#include <stdint.h>

enum perf_verb { PV_SEND, PV_WRITE, PV_READ, PV_ATOMIC };
enum perf_kind { PK_BW, PK_LAT };
enum perf_conn { PC_RC, PC_UC, PC_UD };

/* perftest's defaults (perftest_parameters.h) */
#define PERF_DEF_SIZE_BW 65536u
#define PERF_DEF_SIZE_LAT 2u
#define PERF_DEF_ITERS_BW 5000
#define PERF_DEF_ITERS_LAT 1000
#define PERF_DEF_TX_BW 128
#define PERF_DEF_TX_LAT 1
#define PERF_DEF_RX_SEND 512
#define PERF_DEF_CQ_MOD 100
#define PERF_MAX_SIZE 8388608u /* -a runs 2 .. 2^23 */
#define PERF_QKEY 0x11111111u
#define PERF_LAT_TAIL 2 /* the largest samples perftest drops */

struct perf_opts {
	const char *test;       /* "write_bw", ... */
	enum perf_verb verb;
	enum perf_kind kind;
	enum perf_conn conn;    /* -c */
	uint64_t size;          /* -s */
	bool all;               /* -a */
	int iters;              /* -n */
	int qps;                /* -q */
	int tx_depth;           /* -t */
	int rx_depth;           /* -r */
	unsigned mtu;           /* -m, bytes; 0 = the port's active MTU */
	int inline_size;        /* -I; -1 = perftest's default for the test */
	int out_reads;          /* -o; 0 = the device's max_qp_rd_atom */
	bool gbits;             /* --report_gbits */
	bool bidir;             /* -b */
	int post_list;          /* -l */
	int cq_mod;             /* --cq-mod */
	bool cmp_swap;          /* -A CMP_AND_SWAP (default FETCH_AND_ADD) */
	bool roce;              /* --link roce */
	const char *speed;      /* --rate: link.speed, NULL = default */
	const char *width;      /* --rate: link.width, NULL = default */
	bool json;              /* --json */
	bool quiet_progress;    /* no progress bar even on a terminal */
};

/* One size's figures. */
struct perf_result {
	uint64_t size;         /* bytes per message */
	uint64_t iters;        /* iterations (per QP, as perftest prints them) */
	/* BW tests: */
	double bw_peak_Bps;    /* bytes per simulated second */
	double bw_avg_Bps;
	double msg_rate_mps;   /* million messages per simulated second */
	/* latency tests, usec (half round trip for send/write) */
	double t_min, t_max, t_typical, t_avg, t_stdev, t_p99, t_p999;
	/* the run */
	uint64_t sim_ps;       /* simulated time of the measured loop */
	double wall_s;         /* its wall time */
	uint64_t tx_pkts;      /* request packets both HCAs sent in it */
	uint64_t events;       /* kernel events in it */
};

/* What the run set up, for the header. */
struct perf_info {
	unsigned mtu;          /* path MTU, bytes */
	int inline_size;       /* effective max inline */
	int out_reads;         /* effective outstanding reads/atomics */
	int cq_mod;            /* effective */
	int tx_depth;          /* effective */
	double link_gbps;      /* data rate after line coding */
	uint16_t lid[2];       /* port LIDs */
	uint32_t qpn[2];       /* first QP of each host */
	bool roce;
};

/* A bad flag or value: "hcasim-perf: FLAG: message" on stderr, exit 1 (as perftest). */
void perf_flag_error(const char *flag, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* Boot, make the QPs; 0 or exit(2) with a reason (bs_die). */
void perf_setup(const struct perf_opts *o, uint64_t max_size, struct perf_info *info);
/* Run one size; fills r. */
void perf_run_size(const struct perf_opts *o, uint64_t size, struct perf_result *r);
void perf_teardown(void);

/* Smallest t over i <= j of (done[j] - post[i]) / (j - i + 1), as perftest's peak search, in
 * O(n log) instead of O(n^2). */
double perf_min_window(const uint64_t *post, const uint64_t *done, uint64_t n);

#endif
