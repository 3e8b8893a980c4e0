/* Port counters (IBA 16.1.3.5 PortCounters, 16.1.4 PortCountersExtended) and the transport
 * error counters of the requester and responder (the Linux hw_counters of an HCA).
 *
 * Contract: the blocks count raw events into struct hm_dev's ctr[][] with the helpers below,
 * always in 64 bits and saturating at 2^64 - 1; ctr[0] holds the device-wide slots, ctr[p]
 * those of port p. Widths, 4-byte-word units and the saturation of the narrower IBA fields
 * are applied when a counter is read (model/counters.c), never when it is counted. Every
 * counter, with where it is counted, is listed in docs/counters.md. */
#ifndef HM_COUNTERS_H
#define HM_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

struct hm_dev;
struct hm_qp;
struct hca_cqe;

/* Raw counter slots. */
enum hm_ctr {
	/* port: frames the port handed to its link or took from it */
	HM_CTR_XMIT_BYTES,          /* frame bytes sent (LRH..VCRC, or Ethernet header..ICRC) */
	HM_CTR_RCV_BYTES,           /* frame bytes received, errored frames included */
	HM_CTR_XMIT_PKTS,           /* frames sent */
	HM_CTR_RCV_PKTS,            /* frames received, errored frames included */
	HM_CTR_XMIT_UCAST,          /* unicast frames sent */
	HM_CTR_RCV_UCAST,           /* unicast frames received without error */
	HM_CTR_XMIT_MCAST,          /* multicast frames sent */
	HM_CTR_RCV_MCAST,           /* multicast frames received */
	HM_CTR_RCV_ERRORS,          /* received frames dropped: bad ICRC/VCRC/FCS, malformed */
	HM_CTR_XMIT_DISCARDS,       /* frames discarded because the port is not ACTIVE */
	HM_CTR_SYMBOL_ERRORS,       /* no cause in the model (the link flips bits, not symbols) */
	HM_CTR_LINK_ERR_RECOVERY,   /* no cause yet: link retraining */
	HM_CTR_LINK_DOWNED,         /* the link went down (hcasim_link_set, windows) */
	HM_CTR_RCV_REMOTE_PHYS,     /* no cause: EBP-marked packets come from switches */
	HM_CTR_RCV_SWITCH_RELAY,    /* no cause: an HCA relays nothing */
	HM_CTR_XMIT_CONSTRAINT,     /* no cause: no outbound partition/filter enforcement */
	HM_CTR_RCV_CONSTRAINT,      /* no cause: no inbound partition/filter enforcement */
	HM_CTR_LOCAL_LINK_INTEGRITY, /* no cause: no link integrity monitoring */
	HM_CTR_EXC_BUF_OVERRUN,     /* no cause: no credit-based flow control */
	HM_CTR_VL15_DROPPED,        /* no cause: SMPs do not travel the links */
	HM_CTR_XMIT_WAIT,           /* no cause: no credit starvation or VL arbitration */
	/* responder (per port: the port of the QP) */
	HM_CTR_RQ_LLE,              /* receive completions with LOC_LEN_ERR */
	HM_CTR_RQ_LQPOE,            /* receive completions with LOC_QP_OP_ERR */
	HM_CTR_RQ_LPE,              /* receive completions with LOC_PROT_ERR */
	HM_CTR_RQ_WRFE,             /* receive completions with WR_FLUSH_ERR */
	HM_CTR_RQ_LAE,              /* no cause: no LOC_ACCESS_ERR status in the device */
	HM_CTR_RQ_RIRE,             /* NAK-invalid request sent */
	HM_CTR_RQ_RAE,              /* NAK-remote access error sent */
	HM_CTR_RQ_ROE,              /* NAK-remote operational error sent */
	HM_CTR_RQ_RNR,              /* RNR NAKs sent */
	HM_CTR_RQ_OOS,              /* requests received ahead of the expected PSN */
	HM_CTR_RQ_DUP,              /* duplicate requests received (behind the expected PSN) */
	HM_CTR_RQ_MCE,              /* multicast datagrams a member QP dropped (Q_Key) */
	/* requester (per port: the port of the QP) */
	HM_CTR_SQ_LLE,              /* send completions with LOC_LEN_ERR */
	HM_CTR_SQ_LQPOE,            /* send completions with LOC_QP_OP_ERR */
	HM_CTR_SQ_LPE,              /* send completions with LOC_PROT_ERR */
	HM_CTR_SQ_WRFE,             /* send completions with WR_FLUSH_ERR */
	HM_CTR_SQ_MWBE,             /* send completions with MW_BIND_ERR */
	HM_CTR_SQ_BRE,              /* no cause: unexpected responses are ignored */
	HM_CTR_SQ_RIRE,             /* send completions with REM_INV_REQ_ERR */
	HM_CTR_SQ_RAE,              /* send completions with REM_ACCESS_ERR */
	HM_CTR_SQ_ROE,              /* send completions with REM_OP_ERR */
	HM_CTR_SQ_RNR,              /* RNR NAKs received */
	HM_CTR_SQ_OOS,              /* PSN sequence error NAKs received */
	HM_CTR_SQ_TO,               /* local ACK timeouts that expired */
	HM_CTR_SQ_TREE,             /* send completions with RETRY_EXC_ERR */
	HM_CTR_SQ_RREE,             /* send completions with RNR_RETRY_EXC_ERR */
	/* device-wide (ctr[0]) */
	HM_CTR_NUM_CQOVF,           /* CQ overruns */
	HM_CTR_COUNT
};

/* Add n to a raw counter, saturating at 2^64 - 1. */
static inline void hm_ctr_add(uint64_t *c, uint64_t n)
{
	*c = *c > UINT64_MAX - n ? UINT64_MAX : *c + n;
}

/* Count one event of slot c on port (1-based; 0 = device-wide). */
void hm_ctr_inc(struct hm_dev *d, unsigned port, enum hm_ctr c);
/* Count one event of slot c on qp's port. */
void hm_ctr_qp(struct hm_dev *d, const struct hm_qp *qp, enum hm_ctr c);
/* A frame of len bytes left port (1-based) for its link. */
void hm_ctr_xmit(struct hm_dev *d, unsigned port, uint64_t len, bool mcast);
/* A frame of len bytes arrived at port; ok false: it is dropped as a receive error. */
void hm_ctr_rcv(struct hm_dev *d, unsigned port, uint64_t len, bool ok, bool mcast);
/* The responder of qp sends an ACK with this AETH syndrome (NAKs are counted by class). */
void hm_ctr_ack_sent(struct hm_dev *d, const struct hm_qp *qp, uint8_t syndrome);
/* The completer of qp received a response with this opcode and AETH syndrome. */
void hm_ctr_ack_rcvd(struct hm_dev *d, const struct hm_qp *qp, uint8_t opcode, uint8_t syndrome);
/* A CQE is issued: an error status counts on its queue's side, on the QP's port. */
void hm_ctr_cqe(struct hm_dev *d, const struct hca_cqe *cqe);

/* ---- reading (model/system.c's hcasim_* wrappers) ---- */
/* Value of the counter called name (Linux sysfs name or IBA Attribute.Field) of port on d, as
 * its width shows it. -ENOENT: no counter of that name. */
int hm_ctr_read(const struct hm_dev *d, unsigned port, const char *name, uint64_t *value);
/* Write d's counters under dir in the Linux sysfs layout. 0 or -errno (message set). */
int hm_ctr_dump(const struct hm_dev *d, const char *dir);

#endif
