/* Counters: the IBA PortCounters / PortCountersExtended of each port (IBA 16.1.3.5, 16.1.4)
 * and the requester/responder error counters, counted raw by the blocks and shown here with
 * their IBA widths, units and saturation, by name or as a Linux sysfs tree. */
#include "model/counters.h"
#include "model/ctx.h"
#include "sim/error.h"
#include "sim/hcasim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

enum ctr_src {
	SRC_PORT,      /* d->ctr[port][slot] */
	SRC_DEV,       /* d->ctr[0][slot]: device-wide, the same on every port */
	SRC_QPC_HITS,  /* device-wide, kept by the context cache (model/qpc.c) */
	SRC_QPC_MISSES,
	SRC_QPC_WB,
	SRC_EQ_OVF,    /* device-wide: EQEs dropped on full event queues (model/eq.c) */
};

/* What a reader sees: a raw slot, in 4-byte words or not, limited to a width. */
struct ctr_view {
	const char *name;  /* Linux sysfs file name (NULL: IBA only) */
	const char *iba;   /* IBA Attribute.Field (NULL: no IBA counterpart) */
	const char *group; /* sysfs directory */
	unsigned width;    /* bits */
	enum ctr_src src;  /* where the value comes from */
	enum hm_ctr slot;  /* for SRC_PORT, SRC_DEV */
	bool words;        /* bytes shown in 4-byte words (IBA: "octets divided by 4") */
	const char *doc;   /* meaning */
};

#define PMA(n, i, w, s, doc) { n, "PortCounters." i, "counters", w, SRC_PORT, s, false, doc }
#define EXT(n, i, s, words, doc)                                                                   \
	{ n, "PortCountersExtended." i, "counters", 64, SRC_PORT, s, words, doc }
#define HW(n, s, doc) { n, NULL, "hw_counters", 64, SRC_PORT, s, false, doc }
#define HWDEV(n, src, s, doc) { n, NULL, "hw_counters", 64, src, s, false, doc }

static const struct ctr_view views[] = {
	PMA("symbol_error", "SymbolErrorCounter", 16, HM_CTR_SYMBOL_ERRORS,
	    "minor link errors on any lane (no cause in the model)"),
	PMA("link_error_recovery", "LinkErrorRecoveryCounter", 8, HM_CTR_LINK_ERR_RECOVERY,
	    "successful link error recoveries (no cause yet)"),
	PMA("link_downed", "LinkDownedCounter", 8, HM_CTR_LINK_DOWNED,
	    "times the link went down while up (hcasim_link_set, link down windows)"),
	PMA("port_rcv_errors", "PortRcvErrors", 16, HM_CTR_RCV_ERRORS,
	    "received packets dropped with an error: bad ICRC, VCRC or FCS, malformed"),
	PMA("port_rcv_remote_physical_errors", "PortRcvRemotePhysicalErrors", 16,
	    HM_CTR_RCV_REMOTE_PHYS, "packets marked with EBP (no cause: no switches)"),
	PMA("port_rcv_switch_relay_errors", "PortRcvSwitchRelayErrors", 16, HM_CTR_RCV_SWITCH_RELAY,
	    "packets a switch could not relay (no cause: an HCA relays nothing)"),
	PMA("port_xmit_discards", "PortXmitDiscards", 16, HM_CTR_XMIT_DISCARDS,
	    "outbound packets discarded because the port is down"),
	PMA("port_xmit_constraint_errors", "PortXmitConstraintErrors", 8, HM_CTR_XMIT_CONSTRAINT,
	    "outbound packets discarded by partition or raw filtering (no cause)"),
	PMA("port_rcv_constraint_errors", "PortRcvConstraintErrors", 8, HM_CTR_RCV_CONSTRAINT,
	    "inbound packets discarded by partition or raw filtering (no cause)"),
	PMA("local_link_integrity_errors", "LocalLinkIntegrityErrors", 4,
	    HM_CTR_LOCAL_LINK_INTEGRITY, "local physical errors over the threshold (no cause)"),
	PMA("excessive_buffer_overrun_errors", "ExcessiveBufferOverrunErrors", 4,
	    HM_CTR_EXC_BUF_OVERRUN, "consecutive flow control update periods with an overrun "
	    "(no cause: no credits)"),
	PMA("VL15_dropped", "VL15Dropped", 16, HM_CTR_VL15_DROPPED,
	    "subnet management packets dropped (no cause: SMPs do not use the links)"),
	PMA("port_xmit_wait", "PortXmitWait", 32, HM_CTR_XMIT_WAIT,
	    "ticks with data to send and none sent (no cause: no credit starvation)"),
	{ NULL, "PortCounters.PortXmitData", "counters", 32, SRC_PORT, HM_CTR_XMIT_BYTES, true,
	  "packet octets sent, divided by 4 (32-bit field)" },
	{ NULL, "PortCounters.PortRcvData", "counters", 32, SRC_PORT, HM_CTR_RCV_BYTES, true,
	  "packet octets received, errored packets included, divided by 4 (32-bit field)" },
	{ NULL, "PortCounters.PortXmitPkts", "counters", 32, SRC_PORT, HM_CTR_XMIT_PKTS, false,
	  "packets sent (32-bit field)" },
	{ NULL, "PortCounters.PortRcvPkts", "counters", 32, SRC_PORT, HM_CTR_RCV_PKTS, false,
	  "packets received, errored packets included (32-bit field)" },
	EXT("port_xmit_data", "PortXmitData", HM_CTR_XMIT_BYTES, true,
	    "packet octets sent, divided by 4"),
	EXT("port_rcv_data", "PortRcvData", HM_CTR_RCV_BYTES, true,
	    "packet octets received, errored packets included, divided by 4"),
	EXT("port_xmit_packets", "PortXmitPkts", HM_CTR_XMIT_PKTS, false, "packets sent"),
	EXT("port_rcv_packets", "PortRcvPkts", HM_CTR_RCV_PKTS, false,
	    "packets received, errored packets included"),
	EXT("unicast_xmit_packets", "PortUnicastXmitPkts", HM_CTR_XMIT_UCAST, false,
	    "unicast packets sent"),
	EXT("unicast_rcv_packets", "PortUnicastRcvPkts", HM_CTR_RCV_UCAST, false,
	    "unicast packets received without error"),
	EXT("multicast_xmit_packets", "PortMulticastXmitPkts", HM_CTR_XMIT_MCAST, false,
	    "multicast packets sent (multicast DLID)"),
	EXT("multicast_rcv_packets", "PortMulticastRcvPkts", HM_CTR_RCV_MCAST, false,
	    "multicast packets received without error (multicast DLID)"),
	HW("rq_num_lle", HM_CTR_RQ_LLE, "responder: local length errors (receive completions)"),
	HW("rq_num_lqpoe", HM_CTR_RQ_LQPOE, "responder: local QP operation errors"),
	HW("rq_num_lpe", HM_CTR_RQ_LPE, "responder: local protection errors"),
	HW("rq_num_wrfe", HM_CTR_RQ_WRFE, "responder: receive WRs flushed"),
	HW("rq_num_lae", HM_CTR_RQ_LAE, "responder: local access errors (no cause)"),
	HW("rq_num_rire", HM_CTR_RQ_RIRE, "responder: remote invalid request errors (NAKs sent)"),
	HW("rq_num_rae", HM_CTR_RQ_RAE, "responder: remote access errors (NAKs sent)"),
	HW("rq_num_roe", HM_CTR_RQ_ROE, "responder: remote operational errors (NAKs sent)"),
	HW("rq_num_rnr", HM_CTR_RQ_RNR, "responder: RNR NAKs sent"),
	HW("rq_num_oos", HM_CTR_RQ_OOS, "responder: out of sequence requests received"),
	HW("rq_num_dup", HM_CTR_RQ_DUP, "responder: duplicate requests received"),
	HW("rq_num_mce", HM_CTR_RQ_MCE, "responder: multicast datagrams a member QP dropped (Q_Key mismatch)"),
	HW("sq_num_lle", HM_CTR_SQ_LLE, "requester: local length errors"),
	HW("sq_num_lqpoe", HM_CTR_SQ_LQPOE, "requester: local QP operation errors"),
	HW("sq_num_lpe", HM_CTR_SQ_LPE, "requester: local protection errors"),
	HW("sq_num_wrfe", HM_CTR_SQ_WRFE, "requester: send WRs flushed"),
	HW("sq_num_mwbe", HM_CTR_SQ_MWBE, "requester: memory window bind and invalidation errors (MW_BIND_ERR completions)"),
	HW("sq_num_bre", HM_CTR_SQ_BRE, "requester: bad response errors (no cause)"),
	HW("sq_num_rire", HM_CTR_SQ_RIRE, "requester: remote invalid request errors"),
	HW("sq_num_rae", HM_CTR_SQ_RAE, "requester: remote access errors"),
	HW("sq_num_roe", HM_CTR_SQ_ROE, "requester: remote operational errors"),
	HW("sq_num_rnr", HM_CTR_SQ_RNR, "requester: RNR NAKs received"),
	HW("sq_num_oos", HM_CTR_SQ_OOS, "requester: PSN sequence error NAKs received"),
	HW("sq_num_to", HM_CTR_SQ_TO, "requester: local ACK timeouts"),
	HW("sq_num_tree", HM_CTR_SQ_TREE, "requester: transport retries exceeded"),
	HW("sq_num_rree", HM_CTR_SQ_RREE, "requester: RNR NAK retries exceeded"),
	HWDEV("num_cqovf", SRC_DEV, HM_CTR_NUM_CQOVF, "CQ overruns (device-wide)"),
	HWDEV("num_eqovf", SRC_EQ_OVF, 0, "EQEs lost to full event queues (device-wide)"),
	HWDEV("qpc_hits", SRC_QPC_HITS, 0, "QP context cache hits (device-wide)"),
	HWDEV("qpc_misses", SRC_QPC_MISSES, 0, "QP context cache misses (device-wide)"),
	HWDEV("qpc_writebacks", SRC_QPC_WB, 0, "QP context cache write-backs (device-wide)"),
};

#define NVIEWS (sizeof(views) / sizeof(views[0]))

/* ---- counting ---- */

void hm_ctr_inc(struct hm_dev *d, unsigned port, enum hm_ctr c)
{
	SIM_ASSERT(port <= d->nports && c < HM_CTR_COUNT, "counter %d of port %u", (int)c, port);
	hm_ctr_add(&d->ctr[port][c], 1);
}

void hm_ctr_qp(struct hm_dev *d, const struct hm_qp *qp, enum hm_ctr c)
{
	unsigned port = hm_qp_port(qp);

	hm_ctr_inc(d, port <= d->nports ? port : 1, c);
}

void hm_ctr_xmit(struct hm_dev *d, unsigned port, uint64_t len, bool mcast)
{
	uint64_t *c = d->ctr[port];

	SIM_ASSERT(port >= 1 && port <= d->nports, "xmit on port %u", port);
	hm_ctr_add(&c[HM_CTR_XMIT_BYTES], len);
	hm_ctr_add(&c[HM_CTR_XMIT_PKTS], 1);
	hm_ctr_add(&c[mcast ? HM_CTR_XMIT_MCAST : HM_CTR_XMIT_UCAST], 1); /* by the DLID */
}

void hm_ctr_rcv(struct hm_dev *d, unsigned port, uint64_t len, bool ok, bool mcast)
{
	uint64_t *c = d->ctr[port];

	SIM_ASSERT(port >= 1 && port <= d->nports, "receive on port %u", port);
	/* IBA 16.1.3.5: PortRcvPkts and PortRcvData include packets containing errors. */
	hm_ctr_add(&c[HM_CTR_RCV_BYTES], len);
	hm_ctr_add(&c[HM_CTR_RCV_PKTS], 1);
	hm_ctr_add(&c[!ok ? HM_CTR_RCV_ERRORS : mcast ? HM_CTR_RCV_MCAST : HM_CTR_RCV_UCAST], 1);
}

void hm_ctr_ack_sent(struct hm_dev *d, const struct hm_qp *qp, uint8_t syn)
{
	if (hm_aeth_is_rnr(syn))
		hm_ctr_qp(d, qp, HM_CTR_RQ_RNR);
	else if (syn == HM_AETH_NAK_INV_REQ)
		hm_ctr_qp(d, qp, HM_CTR_RQ_RIRE);
	else if (syn == HM_AETH_NAK_REM_ACCESS)
		hm_ctr_qp(d, qp, HM_CTR_RQ_RAE);
	else if (syn == HM_AETH_NAK_REM_OP)
		hm_ctr_qp(d, qp, HM_CTR_RQ_ROE);
}

void hm_ctr_ack_rcvd(struct hm_dev *d, const struct hm_qp *qp, uint8_t opcode, uint8_t syn)
{
	if (opcode != HM_OP_ACKNOWLEDGE)
		return;
	if (hm_aeth_is_rnr(syn))
		hm_ctr_qp(d, qp, HM_CTR_SQ_RNR);
	else if (syn == HM_AETH_NAK_SEQ)
		hm_ctr_qp(d, qp, HM_CTR_SQ_OOS);
}

void hm_ctr_cqe(struct hm_dev *d, const struct hca_cqe *cqe)
{
	const struct hm_qp *qp = hm_qp_peek(d, cqe->qpn);
	enum hm_ctr c;

	if (!qp || cqe->status == HCA_WC_SUCCESS)
		return;
	switch (cqe->status) {
	case HCA_WC_LOC_LEN_ERR:
		c = cqe->is_send ? HM_CTR_SQ_LLE : HM_CTR_RQ_LLE;
		break;
	case HCA_WC_LOC_QP_OP_ERR:
		c = cqe->is_send ? HM_CTR_SQ_LQPOE : HM_CTR_RQ_LQPOE;
		break;
	case HCA_WC_LOC_PROT_ERR:
		c = cqe->is_send ? HM_CTR_SQ_LPE : HM_CTR_RQ_LPE;
		break;
	case HCA_WC_WR_FLUSH_ERR:
		c = cqe->is_send ? HM_CTR_SQ_WRFE : HM_CTR_RQ_WRFE;
		break;
	default:
		/* The remote errors and the exhausted retries end send WQEs only; on the receive
		 * side the responder counts the NAK it sent instead (hm_ctr_ack_sent). */
		if (!cqe->is_send)
			return;
		switch (cqe->status) {
		case HCA_WC_REM_INV_REQ_ERR: c = HM_CTR_SQ_RIRE; break;
		case HCA_WC_REM_ACCESS_ERR: c = HM_CTR_SQ_RAE; break;
		case HCA_WC_REM_OP_ERR: c = HM_CTR_SQ_ROE; break;
		case HCA_WC_RETRY_EXC_ERR: c = HM_CTR_SQ_TREE; break;
		case HCA_WC_RNR_RETRY_EXC_ERR: c = HM_CTR_SQ_RREE; break;
		case HCA_WC_MW_BIND_ERR: c = HM_CTR_SQ_MWBE; break;
		default: return; /* GENERAL_ERR: no counter */
		}
	}
	hm_ctr_qp(d, qp, c);
}

/* ---- reading ---- */

int hcasim_counter_desc(unsigned i, struct hcasim_counter_desc *out)
{
	if (!out)
		return sim_error(-EINVAL, "hcasim_counter_desc: out is NULL");
	if (i >= NVIEWS)
		return sim_error(-ENOENT, "hcasim_counter_desc: index %u (counters 0..%zu)", i,
				 NVIEWS - 1);
	*out = (struct hcasim_counter_desc){ views[i].name, views[i].iba, views[i].group,
					     views[i].width, views[i].doc };
	return 0;
}

static uint64_t view_value(const struct hm_dev *d, unsigned port, const struct ctr_view *v)
{
	uint64_t raw = 0;

	switch (v->src) {
	case SRC_PORT: raw = d->ctr[port][v->slot]; break;
	case SRC_DEV: raw = d->ctr[0][v->slot]; break;
	case SRC_QPC_HITS: raw = d->dp->qpc_hits; break;
	case SRC_QPC_MISSES: raw = d->dp->qpc_misses; break;
	case SRC_QPC_WB: raw = d->dp->qpc_writebacks; break;
	case SRC_EQ_OVF:
		for (unsigned i = 0; i < HCA_EQ_MAX; i++)
			hm_ctr_add(&raw, d->eqs[i].overruns);
		break;
	}
	if (v->words)
		raw /= 4;
	/* IBA 16.1.3.5: a counter stops at its all-ones value instead of wrapping. */
	if (v->width < 64 && raw > (1ull << v->width) - 1)
		raw = (1ull << v->width) - 1;
	return raw;
}

int hm_ctr_read(const struct hm_dev *d, unsigned port, const char *name, uint64_t *value)
{
	for (size_t i = 0; i < NVIEWS; i++) {
		if ((views[i].name && !strcmp(views[i].name, name)) ||
		    (views[i].iba && !strcmp(views[i].iba, name))) {
			*value = view_value(d, port, &views[i]);
			return 0;
		}
	}
	return sim_error(-ENOENT, "no counter named '%s' (a Linux sysfs name such as "
			 "port_xmit_data or rq_num_rnr, or an IBA name such as "
			 "PortCounters.PortXmitData)", name);
}

/* mkdir path unless it is a directory already. */
static int make_dir(const char *path)
{
	struct stat st;

	if (!mkdir(path, 0777))
		return 0;
	if (errno != EEXIST)
		return sim_error(-errno, "counters dump: cannot create directory '%s': %s", path,
				 strerror(errno));
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return sim_error(-ENOTDIR, "counters dump: '%s' exists and is not a directory",
				 path);
	return 0;
}

/* Format a path into buf (PATH_BYTES), refusing one that does not fit. */
#define PATH_BYTES 4096
static int fmt_path(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fmt_path(char *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, PATH_BYTES, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PATH_BYTES)
		return sim_error(-ENAMETOOLONG, "counters dump: path '%.64s...' is too long", buf);
	return 0;
}

static int write_value(const char *path, uint64_t v)
{
	FILE *f = fopen(path, "w");
	int bad;

	if (!f)
		return sim_error(-errno, "counters dump: cannot write '%s': %s", path,
				 strerror(errno));
	bad = fprintf(f, "%llu\n", (unsigned long long)v) < 0;
	bad |= fclose(f) != 0;
	if (bad)
		return sim_error(-EIO, "counters dump: writing '%s' failed", path);
	return 0;
}

int hm_ctr_dump(const struct hm_dev *d, const char *dir)
{
	static const char *const groups[] = { "counters", "hw_counters" };
	char path[PATH_BYTES];
	int rc;

	rc = make_dir(dir);
	if (!rc)
		rc = fmt_path(path, "%s/%s", dir, d->name);
	if (!rc)
		rc = make_dir(path);
	if (!rc)
		rc = fmt_path(path, "%s/%s/ports", dir, d->name);
	if (!rc)
		rc = make_dir(path);
	for (unsigned p = 1; !rc && p <= d->nports; p++) {
		rc = fmt_path(path, "%s/%s/ports/%u", dir, d->name, p);
		if (!rc)
			rc = make_dir(path);
		for (unsigned g = 0; !rc && g < 2; g++) {
			rc = fmt_path(path, "%s/%s/ports/%u/%s", dir, d->name, p, groups[g]);
			if (!rc)
				rc = make_dir(path);
			for (size_t i = 0; !rc && i < NVIEWS; i++) {
				if (!views[i].name || strcmp(views[i].group, groups[g]))
					continue;
				rc = fmt_path(path, "%s/%s/ports/%u/%s/%s", dir, d->name, p,
					      groups[g], views[i].name);
				if (!rc)
					rc = write_value(path, view_value(d, p, &views[i]));
			}
		}
	}
	return rc;
}
