/* fcov: functional coverage points (docs/rtl.md#coverage). A block counts a point where the
 * behaviour it names happens (model/fcov.def lists the groups); counting is on only in a
 * process booted with HCASIM_COVERAGE_DIR, which dumps every point with its count to
 * <dir>/fcov-<pid>.txt at shutdown and at exit, for `make coverage` to merge. Off, a point
 * costs one test of a flag and nothing is written; counting never changes simulated time, a
 * trace line or a capture. */
#ifndef MODEL_FCOV_H
#define MODEL_FCOV_H

#include "model/hw/hca_hw.h"

#include <stdbool.h>

/* The NAKs a responder sends and a completer receives (nak_sent, nak_rcvd). */
enum hm_fcov_nak {
	HM_FCOV_NAK_SEQ,        /* PSN sequence error */
	HM_FCOV_NAK_INV_REQ,    /* invalid request */
	HM_FCOV_NAK_REM_ACCESS, /* remote access error */
	HM_FCOV_NAK_REM_OP,     /* remote operational error */
	HM_FCOV_NAK_RNR,        /* receiver not ready */
	HM_FCOV_NAKS
};

/* The kind of a NAK's AETH syndrome (model/pkt.h enum hm_aeth): RNR, or its NAK code. */
static inline unsigned hm_fcov_nak_kind(uint8_t syn)
{
	return (syn & 0xe0) == 0x20 ? HM_FCOV_NAK_RNR : (syn & 0x1f) < 4 ? syn & 0x1fu : HM_FCOV_NAKS;
}

/* Timer expiries (timer). */
enum hm_fcov_timer {
	HM_FCOV_ACK_TIMEOUT_RETRY,   /* ACK timeout, a retry left: the request is sent again */
	HM_FCOV_ACK_TIMEOUT_MIGRATE, /* ACK timeout, retries out, an armed alternate path taken */
	HM_FCOV_ACK_TIMEOUT_FAIL,    /* ACK timeout, retries out: the WQE completes in error */
	HM_FCOV_RNR_EXPIRY,          /* the RNR timer ran out: the request is sent again */
	HM_FCOV_TIMERS
};

/* QP context cache events (qpc). */
enum hm_fcov_qpc {
	HM_FCOV_QPC_HIT,
	HM_FCOV_QPC_MISS,
	HM_FCOV_QPC_EVICT_CLEAN,  /* an eviction of a context not changed since it was read */
	HM_FCOV_QPC_WRITE_BACK,   /* an eviction that writes the context back */
	HM_FCOV_QPC_EVENTS
};

enum hm_fcov_group {
#define FCOV(group, points, where, doc) HM_FCOV_##group,
#include "model/fcov.def"
#undef FCOV
	HM_FCOV_GROUPS
};

extern bool hm_fcov_on; /* counting (HCASIM_COVERAGE_DIR at boot) */

void hm_fcov_count(enum hm_fcov_group g, unsigned i);

/* Count point i of group g (an index that is no point of g is ignored). */
static inline void hm_fcov_hit(enum hm_fcov_group g, unsigned i)
{
	if (__builtin_expect(hm_fcov_on, 0))
		hm_fcov_count(g, i);
}

/* Count from now on, dumping into dir (an existing directory) at hm_fcov_dump() and at exit. */
void hm_fcov_start(const char *dir);
/* Write every point of every group with its count so far to <dir>/fcov-<pid>.txt, one
 * "group<TAB>point<TAB>count" line each; nothing when counting is off. 0 or -errno (message
 * set). */
int hm_fcov_dump(void);
/* Which transitions are points of qp_modify: the modify-QP table's own answer, given by the
 * firmware that holds it. */
void hm_fcov_qp_modify_table(bool (*valid)(unsigned cur, unsigned next));

#endif
