/* hcasim-perf: perftest's command line (flags, defaults, checks) and its report layout, or
 * JSON, for the loops of perf_run.c. See docs/performance.md#hcasim-perf. */
#include "testbench/bench/perf.h"

#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RESULT_LINE                                                                        \
	"---------------------------------------------------------------------------------------\n"
/* perftest's column headers and row formats (perftest_parameters.h), character for character */
#define HDR_BW_MB " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
#define HDR_BW_GB " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
#define HDR_LAT                                                                            \
	" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    " \
	"t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
#define ROW_BW " %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf"
#define ROW_LAT                                                                            \
	" %-7lu %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t" \
	"%-7.2f \t\t%-7.2f"

static const struct {
	const char *name;
	enum perf_verb verb;
	enum perf_kind kind;
} tests[] = {
	{ "write_bw", PV_WRITE, PK_BW },   { "read_bw", PV_READ, PK_BW },
	{ "send_bw", PV_SEND, PK_BW },     { "atomic_bw", PV_ATOMIC, PK_BW },
	{ "write_lat", PV_WRITE, PK_LAT }, { "read_lat", PV_READ, PK_LAT },
	{ "send_lat", PV_SEND, PK_LAT },   { "atomic_lat", PV_ATOMIC, PK_LAT },
};
static const char *const verb_title[] = { "Send", "RDMA_Write", "RDMA_Read", "Atomic" };
static const char *const conn_name[] = { "RC", "UC", "UD" };

void perf_flag_error(const char *flag, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hcasim-perf: %s: ", flag);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(1);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hcasim-perf TEST [options]     (or run it as ib_TEST, e.g. ib_write_bw)\n"
		"  TEST: write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat\n"
		"\n"
		"perftest's benchmarks on two simulated hosts with one simulated HCA each, back to\n"
		"back, in this one process: hcasim0 is the client, hcasim1 the server. There are no\n"
		"sockets and no server to start. Every figure is in SIMULATED time: bandwidth,\n"
		"message rate and latency of the modelled hardware, not of the simulator.\n"
		"\n"
		"perftest's options (and defaults):\n"
		"  -s, --size=BYTES         message size (BW 65536, latency 2, atomics 8; K/M ok)\n"
		"  -a, --all                every size 2 .. 2^23 (UD: up to the MTU)\n"
		"  -n, --iters=N            iterations per QP (BW 5000, latency 1000; >= 5)\n"
		"  -q, --qp=N               QPs (1; BW tests)\n"
		"  -t, --tx-depth=N         send queue depth (BW 128, latency 1)\n"
		"  -r, --rx-depth=N         receive queue depth of SEND tests (512)\n"
		"  -m, --mtu=BYTES          path MTU 256..4096 (the port's active MTU)\n"
		"  -c, --connection=TYPE    RC (default), UC (write, send) or UD (send)\n"
		"  -I, --inline_size=BYTES  max inline (latency: 220 write, 236 send, 188 UD send;\n"
		"                           BW: 0)\n"
		"  -o, --outs=N             outstanding READs / atomics (the device's 16)\n"
		"  -A, --atomic_type=TYPE   FETCH_AND_ADD (default) or CMP_AND_SWAP\n"
		"  -l, --post_list=N        WRs per ibv_post_send (1; BW tests)\n"
		"      --cq-mod=N           a completion every N WRs (100)\n"
		"  -b, --bidirectional      both hosts send (BW tests); the figures are the sum\n"
		"  -R, --report_gbits       BW in Gb/s instead of MB/s (2^20 bytes)\n"
		"hcasim's options:\n"
		"      --link=ib|roce       link layer (hca.link_layer; ib)\n"
		"      --rate=SPEED[,WIDTH] link speed sdr|ddr|qdr|fdr|edr|hdr|ndr and width\n"
		"                           1x|4x|8x|12x (link.speed, link.width; edr,4x)\n"
		"      --json               the figures as one JSON object instead of the table\n"
		"  -h, --help\n"
		"More settings: HCASIM_CONFIG=file (docs/config.md). A progress bar goes to stderr\n"
		"when it is a terminal and more than one size runs.\n");
}

static long num(const char *flag, const char *v, long lo, long hi)
{
	char *end;
	long x = strtol(v, &end, 0);

	if (end == v)
		perf_flag_error(flag, "'%s' is not a number", v);
	if (*end == 'K' || *end == 'k')
		x *= 1024, end++;
	else if (*end == 'M' || *end == 'm')
		x *= 1024 * 1024, end++;
	if (*end)
		perf_flag_error(flag, "'%s' is not a number", v);
	if (x < lo || x > hi)
		perf_flag_error(flag, "%ld should be between %ld and %ld", x, lo, hi);
	return x;
}

static bool find_test(const char *name, struct perf_opts *o)
{
	if (!strncmp(name, "ib_", 3))
		name += 3;
	for (unsigned i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(name, tests[i].name)) {
			o->test = tests[i].name;
			o->verb = tests[i].verb;
			o->kind = tests[i].kind;
			return true;
		}
	return false;
}

static void parse_rate(const char *v, struct perf_opts *o)
{
	static const char *const speeds[] = { "sdr", "ddr", "qdr", "fdr", "edr", "hdr", "ndr" };
	static const char *const widths[] = { "1x", "4x", "8x", "12x" };
	static char buf[32];
	char *comma;
	bool ok = false;

	snprintf(buf, sizeof(buf), "%s", v);
	comma = strchr(buf, ',');
	if (comma)
		*comma++ = 0;
	for (unsigned i = 0; i < 7; i++)
		ok |= !strcmp(buf, speeds[i]);
	if (!ok)
		perf_flag_error("--rate", "'%s': the speed is one of sdr ddr qdr fdr edr hdr ndr",
				v);
	o->speed = buf;
	if (comma) {
		ok = false;
		for (unsigned i = 0; i < 4; i++)
			ok |= !strcmp(comma, widths[i]);
		if (!ok)
			perf_flag_error("--rate", "'%s': the width is one of 1x 4x 8x 12x", v);
		o->width = comma;
	}
}

enum { OPT_CQ_MOD = 256, OPT_LINK, OPT_RATE, OPT_JSON };

static void parse(int argc, char **argv, struct perf_opts *o)
{
	static const struct option lo[] = {
		{ "size", required_argument, 0, 's' },
		{ "all", no_argument, 0, 'a' },
		{ "iters", required_argument, 0, 'n' },
		{ "qp", required_argument, 0, 'q' },
		{ "tx-depth", required_argument, 0, 't' },
		{ "rx-depth", required_argument, 0, 'r' },
		{ "mtu", required_argument, 0, 'm' },
		{ "connection", required_argument, 0, 'c' },
		{ "inline_size", required_argument, 0, 'I' },
		{ "outs", required_argument, 0, 'o' },
		{ "atomic_type", required_argument, 0, 'A' },
		{ "post_list", required_argument, 0, 'l' },
		{ "bidirectional", no_argument, 0, 'b' },
		{ "report_gbits", no_argument, 0, 'R' },
		{ "cq-mod", required_argument, 0, OPT_CQ_MOD },
		{ "link", required_argument, 0, OPT_LINK },
		{ "rate", required_argument, 0, OPT_RATE },
		{ "json", no_argument, 0, OPT_JSON },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	bool size_set = false, iters_set = false, tx_set = false, cq_set = false;
	int c;

	memset(o, 0, sizeof(*o));
	o->qps = 1;
	o->rx_depth = PERF_DEF_RX_SEND;
	o->inline_size = -1;
	o->post_list = 1;
	o->cq_mod = PERF_DEF_CQ_MOD;
	find_test(base, o); /* ib_write_bw -> write_bw */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:an:q:t:r:m:c:I:o:A:l:bRh", lo, NULL)) != -1) {
		const char *flag = argv[optind - 1];

		switch (c) {
		case 's': o->size = (uint64_t)num("-s", optarg, 1, 1l << 30); size_set = true; break;
		case 'a': o->all = true; break;
		case 'n': o->iters = (int)num("-n", optarg, 5, 100000000); iters_set = true; break;
		case 'q': o->qps = (int)num("-q", optarg, 1, 16384); break;
		case 't': o->tx_depth = (int)num("-t", optarg, 1, 15000); tx_set = true; break;
		case 'r': o->rx_depth = (int)num("-r", optarg, 1, 16384); break;
		case 'm':
			o->mtu = (unsigned)num("-m", optarg, 256, 4096);
			if (o->mtu & (o->mtu - 1))
				perf_flag_error("-m", "%u is not an MTU: 256, 512, 1024, 2048 or 4096",
						o->mtu);
			break;
		case 'c':
			if (!strcmp(optarg, "RC"))
				o->conn = PC_RC;
			else if (!strcmp(optarg, "UC"))
				o->conn = PC_UC;
			else if (!strcmp(optarg, "UD"))
				o->conn = PC_UD;
			else
				perf_flag_error("-c", "'%s': the connection type is RC, UC or UD",
						optarg);
			break;
		case 'I': o->inline_size = (int)num("-I", optarg, 0, 912); break;
		case 'o': o->out_reads = (int)num("-o", optarg, 1, 255); break;
		case 'A':
			if (!strcmp(optarg, "CMP_AND_SWAP"))
				o->cmp_swap = true;
			else if (strcmp(optarg, "FETCH_AND_ADD"))
				perf_flag_error("-A", "'%s': CMP_AND_SWAP or FETCH_AND_ADD", optarg);
			break;
		case 'l': o->post_list = (int)num("-l", optarg, 1, 64); break;
		case 'b': o->bidir = true; break;
		case 'R': o->gbits = true; break;
		case OPT_CQ_MOD:
			o->cq_mod = (int)num("--cq-mod", optarg, 1, 1024);
			cq_set = true;
			break;
		case OPT_LINK:
			if (strcmp(optarg, "ib") && strcmp(optarg, "roce"))
				perf_flag_error("--link", "'%s': ib or roce", optarg);
			o->roce = !strcmp(optarg, "roce");
			break;
		case OPT_RATE: parse_rate(optarg, o); break;
		case OPT_JSON: o->json = true; break;
		case 'h': usage(stdout); exit(0);
		case ':': perf_flag_error(flag, "needs a value");
		default: perf_flag_error(flag, "unknown option (see hcasim-perf --help)");
		}
	}
	if (optind < argc && !find_test(argv[optind++], o))
		perf_flag_error("TEST", "unknown test '%s' (see hcasim-perf --help)",
				argv[optind - 1]);
	if (optind < argc)
		perf_flag_error(argv[optind], "unexpected argument: the server is simulated, "
				"no address is needed");
	if (!o->test)
		perf_flag_error("TEST", "no test named (see hcasim-perf --help)");

	/* perftest's defaults, then its rules for combining flags. */
	if (!iters_set)
		o->iters = o->kind == PK_BW ? PERF_DEF_ITERS_BW : PERF_DEF_ITERS_LAT;
	if (!tx_set)
		o->tx_depth = o->kind == PK_BW ? PERF_DEF_TX_BW : PERF_DEF_TX_LAT;
	if (o->verb == PV_ATOMIC) {
		if (size_set && o->size != 8)
			perf_flag_error("-s", "atomic operations are 8 bytes, not %llu",
					(unsigned long long)o->size);
		o->size = 8;
	} else if (!size_set) {
		o->size = o->kind == PK_BW ? PERF_DEF_SIZE_BW : PERF_DEF_SIZE_LAT;
	}
	if (o->conn == PC_UC && (o->verb == PV_READ || o->verb == PV_ATOMIC))
		perf_flag_error("-c", "UC has no %s", o->verb == PV_READ ? "RDMA READ" : "atomics");
	if (o->conn == PC_UD && o->verb != PV_SEND)
		perf_flag_error("-c", "UD carries SENDs only");
	if (o->out_reads && o->verb != PV_READ && o->verb != PV_ATOMIC)
		perf_flag_error("-o", "outstanding reads apply to read and atomic tests");
	if (o->inline_size > 0 && (o->verb == PV_READ || o->verb == PV_ATOMIC))
		perf_flag_error("-I", "inline data applies to send and write tests");
	if (o->kind == PK_LAT) {
		if (o->bidir)
			perf_flag_error("-b", "bidirectional runs are for bandwidth tests");
		if (o->post_list > 1)
			perf_flag_error("-l", "post lists are for bandwidth tests");
		if (o->qps > 1)
			perf_flag_error("-q", "latency tests use one QP");
	} else {
		if (o->post_list > 1) {
			if (cq_set && o->cq_mod != o->post_list)
				perf_flag_error("--cq-mod", "with -l %d the CQ moderation is %d",
						o->post_list, o->post_list);
			o->cq_mod = o->post_list; /* perftest: one completion per post list */
		}
		if (o->tx_depth > o->iters)
			o->tx_depth = o->iters;
		if (o->post_list > o->tx_depth)
			perf_flag_error("-l", "a post list of %d does not fit a TX depth of %d",
					o->post_list, o->tx_depth);
		if (o->cq_mod > o->tx_depth)
			o->cq_mod = o->tx_depth;
	}
}

static void print_header(const struct perf_opts *o, const struct perf_info *in)
{
	printf(RESULT_LINE);
	printf("                    %s %s Test\n", verb_title[o->verb],
	       o->kind == PK_BW ? "BW" : "Latency");
	printf(" Dual-port       : OFF\t\tDevice         : hcasim0\n");
	printf(" Number of qps   : %d\t\tTransport type : IB\n", o->qps);
	printf(" Connection type : %s\t\tUsing SRQ      : OFF\n", conn_name[o->conn]);
	printf(" TX depth        : %d\n", in->tx_depth);
	if (o->kind == PK_BW)
		printf(" CQ Moderation   : %d\n", in->cq_mod);
	if (o->post_list > 1)
		printf(" Post List       : %d\n", o->post_list);
	printf(" Mtu             : %u[B]\n", in->mtu);
	printf(" Link type       : %s\n", in->roce ? "Ethernet" : "IB");
	if (o->verb == PV_READ || o->verb == PV_ATOMIC)
		printf(" Outstand reads  : %d\n", in->out_reads);
	else
		printf(" Max inline data : %d[B]\n", in->inline_size);
	printf(" rdma_cm QPs\t : OFF\n");
	printf(" Data ex. method : none: both hosts are simulated in this process\n");
	printf(" Link rate       : %.3f Gb/s; every figure in simulated time\n", in->link_gbps);
	printf(RESULT_LINE);
	for (int h = 0; h < 2; h++)
		printf(" %s address: LID %#04x QPN %#06x PSN %#08x\n", h ? "remote" : "local",
		       in->lid[h], in->qpn[h], 0x100);
	printf(RESULT_LINE);
	printf("%s\n", o->kind == PK_LAT ? HDR_LAT : o->gbits ? HDR_BW_GB : HDR_BW_MB);
	fflush(stdout);
}

static void print_row(const struct perf_opts *o, const struct perf_result *r)
{
	double unit = o->gbits ? 125e6 : 1048576.0;

	if (o->kind == PK_BW)
		printf(ROW_BW "\n", (unsigned long)r->size, (unsigned long)r->iters,
		       r->bw_peak_Bps / unit, r->bw_avg_Bps / unit, r->msg_rate_mps);
	else
		printf(ROW_LAT "\n", (unsigned long)r->size, (int)r->iters, r->t_min, r->t_max,
		       r->t_typical, r->t_avg, r->t_stdev, r->t_p99, r->t_p999);
	fflush(stdout);
}

static void print_json(const struct perf_opts *o, const struct perf_info *in,
		       const struct perf_result *r, int n)
{
	printf("{\"tool\": \"hcasim-perf\", \"test\": \"%s\", \"time\": \"simulated\", "
	       "\"connection\": \"%s\", \"link\": \"%s\", \"link_gbps\": %.9g, \"mtu\": %u, "
	       "\"qps\": %d, \"tx_depth\": %d, \"cq_mod\": %d, \"post_list\": %d, "
	       "\"inline\": %d, \"outstanding_reads\": %d, \"bidirectional\": %s, "
	       "\"bw_units\": \"%s\", \"results\": [",
	       o->test, conn_name[o->conn], in->roce ? "roce" : "ib", in->link_gbps, in->mtu,
	       o->qps, in->tx_depth, in->cq_mod, o->post_list, in->inline_size, in->out_reads,
	       o->bidir ? "true" : "false", o->gbits ? "Gb/sec" : "MB/sec");
	for (int i = 0; i < n; i++) {
		double unit = o->gbits ? 125e6 : 1048576.0;

		printf("%s\n  {\"bytes\": %llu, \"iterations\": %llu, ", i ? "," : "",
		       (unsigned long long)r[i].size, (unsigned long long)r[i].iters);
		if (o->kind == PK_BW)
			printf("\"bw_peak\": %.9g, \"bw_average\": %.9g, \"msg_rate_mpps\": %.9g, "
			       "\"bw_peak_gbps\": %.9g, \"bw_average_gbps\": %.9g, ",
			       r[i].bw_peak_Bps / unit, r[i].bw_avg_Bps / unit, r[i].msg_rate_mps,
			       r[i].bw_peak_Bps / 125e6, r[i].bw_avg_Bps / 125e6);
		else
			printf("\"t_min_us\": %.9g, \"t_max_us\": %.9g, \"t_typical_us\": %.9g, "
			       "\"t_avg_us\": %.9g, \"t_stdev_us\": %.9g, \"t_p99_us\": %.9g, "
			       "\"t_p999_us\": %.9g, ",
			       r[i].t_min, r[i].t_max, r[i].t_typical, r[i].t_avg, r[i].t_stdev,
			       r[i].t_p99, r[i].t_p999);
		printf("\"sim_ps\": %llu, \"wall_s\": %.6f, \"tx_pkts\": %llu, \"events\": %llu}",
		       (unsigned long long)r[i].sim_ps, r[i].wall_s,
		       (unsigned long long)r[i].tx_pkts, (unsigned long long)r[i].events);
	}
	printf("\n]}\n");
}

static void progress(int done, int n, uint64_t size)
{
	enum { W = 30 };
	char bar[W + 1];

	for (int i = 0; i < W; i++)
		bar[i] = i < done * W / n ? '#' : '.';
	bar[W] = 0;
	if (done < n)
		fprintf(stderr, "\rhcasim-perf [%s] %d/%d sizes, now %llu B ", bar, done, n,
			(unsigned long long)size);
	else
		fprintf(stderr, "\r%*s\r", W + 48, "");
}

int main(int argc, char **argv)
{
	struct perf_opts o;
	struct perf_info info;
	struct perf_result *res;
	uint64_t sizes[32];
	int n = 0;
	bool bar;

	bs_prog = "hcasim-perf";
	parse(argc, argv, &o);
	if (o.all && o.verb != PV_ATOMIC)
		for (uint64_t s = 2; s <= PERF_MAX_SIZE; s *= 2)
			sizes[n++] = s;
	else
		sizes[n++] = o.size;
	if (o.all && o.conn == PC_UD) /* one MTU at most: the port's is 4096 at most */
		while (n > 1 && sizes[n - 1] > (o.mtu ? o.mtu : 4096))
			n--;
	perf_setup(&o, o.all ? sizes[n - 1] : o.size, &info);
	if (o.all && o.conn == PC_UD)
		while (n > 1 && sizes[n - 1] > info.mtu)
			n--;
	res = calloc((size_t)n, sizeof(*res));
	if (!res)
		bs_die("out of memory");
	bar = n > 1 && isatty(2);
	if (!o.json)
		print_header(&o, &info);
	for (int i = 0; i < n; i++) {
		if (bar)
			progress(i, n, sizes[i]);
		perf_run_size(&o, sizes[i], &res[i]);
		if (bar)
			progress(i + 1, n, sizes[i]);
		if (!o.json)
			print_row(&o, &res[i]);
	}
	if (o.json)
		print_json(&o, &info, res, n);
	else
		printf(RESULT_LINE);
	free(res);
	perf_teardown();
	return 0;
}
