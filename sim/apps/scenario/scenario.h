/* hcasim-scenario: the parsed form of a scenario file, the timeline recorded while it runs, and
 * the functions that connect the parser (parse.c), the recorder (timeline.c) and the runner
 * (../scenario.c). The file format is documented in docs/scenarios.md.
 *
 * Times are picoseconds. Scenario times (`at`, `until`) count from t0, the moment every QP of
 * the scenario has been connected; timeline times are absolute simulated times, printed
 * relative to t0. */
#ifndef SCN_SCENARIO_H
#define SCN_SCENARIO_H

#include <infiniband/verbs.h>

#include "sim/hcasim.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCN_NAME 32	   /* longest name (section names, counter names) + 1 */
#define SCN_MAX_QPS 32	   /* [qp] sections */
#define SCN_MAX_TRAFFIC 64 /* [traffic] sections */
#define SCN_MAX_FAULTS 32  /* [fault] sections */
#define SCN_MAX_EXPECTS 128
#define SCN_MAX_SIM 64	  /* keys of [sim] */
#define SCN_MAX_INIT 8	  /* init_u64 entries per QP */
#define SCN_MAX_COUNT 256 /* WRs per traffic section */

/* A QP of the scenario: its section, then what the runner created for it. */
struct scn_qp {
	char name[SCN_NAME];
	int line;	       /* of its [qp NAME] header */
	int kline[32];	       /* line of each key given (by key index), 0 = not given */
	int host;	       /* simulated host (device index) */
	enum ibv_qp_type type; /* IBV_QPT_RC, _UC or _UD */
	char peer_name[SCN_NAME];
	int peer; /* index of the peer QP, -1 for none */
	int port; /* port_num */
	enum ibv_mtu path_mtu;
	int timeout, retry_cnt, rnr_retry, min_rnr_timer, max_rd_atomic, max_dest_rd_atomic;
	uint32_t sq_psn; /* its first PSN; the peer's rq_psn */
	uint32_t qkey;	 /* UD */
	int access;	 /* qp_access_flags */
	uint32_t max_send_wr, max_recv_wr;
	size_t buffer_bytes;	 /* its registered buffer */
	enum ibv_qp_state state; /* where setup leaves it: INIT, RTR or RTS */
	int alt_port;		 /* alternate path's port (the peer's host, same port), 0: none */
	int alt_timeout;	 /* its local ACK timeout (default: timeout) */
	enum ibv_mig_state path_mig; /* written with the alternate path (REARM by default) */
	struct {
		uint64_t offset, value;
	} init[SCN_MAX_INIT]; /* 64-bit words stored in its buffer before traffic */
	int ninit;
	/* runtime */
	struct ibv_cq *cq; /* send and receive CQ */
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint64_t iova;	   /* the buffer's fixed I/O virtual address */
	struct ibv_ah *ah; /* UD: to the peer */
	uint32_t qpn;
};

enum scn_op { SCN_SEND, SCN_WRITE, SCN_READ, SCN_CMP_SWAP, SCN_FETCH_ADD, SCN_RECV, SCN_MODIFY };

/* One WR's fate. */
struct scn_wr {
	bool posted, done;
	enum ibv_wc_status status;
	uint32_t byte_len;
	uint64_t post_ps; /* ibv_post_send / ibv_post_recv called */
	uint64_t cqe_ps;  /* the device issued its CQE (cqe.write) */
	bool has_psn;	  /* send WRs: the requester started it */
	uint32_t first_psn;
	uint64_t first_tx_end_ps; /* last bit of its first packet on the wire, 0 = none yet */
};

struct scn_traffic {
	char name[SCN_NAME];
	int line;
	int kline[32]; /* line of each key given (by key index), 0 = not given */
	char qp_name[SCN_NAME];
	int qp; /* index */
	enum scn_op op;
	uint64_t at_ps;
	unsigned count;			/* WRs posted in one call */
	uint32_t size;			/* bytes per WR */
	uint64_t offset, remote_offset; /* in the QP's and the peer's buffers; WR n adds n * size */
	bool signaled;
	uint64_t compare, swap_add;
	enum ibv_qp_state state; /* SCN_MODIFY */
	int en_sqd_async_notify; /* SCN_MODIFY: -1 not given */
	struct scn_wr wr[SCN_MAX_COUNT];
	bool failed; /* the verb failed */
	char error[160];
};

struct scn_fault {
	char name[SCN_NAME];
	int line;
	int kline[32];		  /* line of each key given (by key index), 0 = not given */
	uint64_t at_ps, until_ps; /* until_ps UINT64_MAX: never removed */
	int link;		  /* -1: from the QP named by from */
	int side;		  /* 0, 1 or -1 (both) */
	char from[SCN_NAME];	  /* QP whose frames it hits, or "" */
	bool targeted;
	bool link_down;		  /* the link is down from at until until (no other fault) */
	struct hcasim_faults random;
	struct hcasim_fault_target target;
	char target_qp[SCN_NAME]; /* qpn given as a QP name */
	bool installed, removed;
};

/* The keys that say what an [expect] section expects: X(E, ID, "name"). They give enum
 * scn_exp_kind here, and the key numbers K_E_ID in keys.h. */
#define SCN_EXPECT_SUBJECTS(X)                                                                     \
	X(E, COMPLETION, "completion")                                                             \
	X(E, STATE, "state")                                                                       \
	X(E, COUNTER, "counter")                                                                   \
	X(E, EVENT, "event")                                                                       \
	X(E, MEMORY, "memory")                                                                     \
	X(E, DATA, "data")                                                                         \
	X(E, PACKETS, "packets")                                                                   \
	X(E, RNR_WAIT, "rnr_wait")                                                                 \
	X(E, TIMEOUT_WAIT, "timeout_wait")
#define SCN_EX_ENUM(sec, id, name) SCN_EX_##id,
enum scn_exp_kind { SCN_EXPECT_SUBJECTS(SCN_EX_ENUM) };

struct scn_expect {
	char name[SCN_NAME];
	int line;
	int kline[32]; /* line of each key given (by key index), 0 = not given */
	enum scn_exp_kind kind;
	char subject[64]; /* the value of the subject key, for messages */
	int traffic, wr;  /* completion, data: wr -1 = every WR */
	int qp;		  /* state, memory, event, packets, waits, counter on a QP */
	enum ibv_wc_status status;
	bool has_status;
	int64_t byte_len; /* -1: not checked */
	bool has_time, from_first_tx;
	uint64_t time_ps, tol_ps;
	char counter[SCN_NAME]; /* counter: the name after "QP." or the link/host form */
	int link, side, host;	/* counter on a link side or a host: -1 unused */
	bool has_eq, has_min, has_max, has_count;
	int64_t eq, min, max; /* waits: eq is the wait in ps */
	int64_t count;	      /* event: how many (default 1); waits: how many measured */
	enum ibv_event_type event;
	int after; /* event: traffic index that must have completed first, -1 */
	char qp_name[SCN_NAME], after_name[SCN_NAME]; /* as written */
	uint64_t offset, u64;
	int64_t psn, opcode; /* packets: -1 any */
	int retx;	     /* packets: -1 any, 0 first transmissions, 1 retransmissions */
	enum ibv_qp_state state;
};

struct scn {
	const char *path;
	char title[128];
	uint64_t duration_ps; /* longest the run may take after t0 */
	uint64_t settle_ps;   /* run on this long after the last action and completion */
	struct {
		char key[64], value[128];
		int line;
	} sim[SCN_MAX_SIM];
	int nsim;
	struct scn_qp qp[SCN_MAX_QPS];
	int nqp;
	struct scn_traffic tr[SCN_MAX_TRAFFIC];
	int ntr;
	struct scn_fault fault[SCN_MAX_FAULTS];
	int nfault;
	struct scn_expect ex[SCN_MAX_EXPECTS];
	int nex;
	uint64_t t0; /* absolute time of the scenario's start */
	int ports;   /* hca.ports, for link numbering */
};

/* parse.c: read path into s. Returns 0, or prints "FILE:LINE: message" and returns -1. */
int scn_parse(struct scn *s, const char *path);
/* Print "FILE:LINE: message" for line of s's file on stderr; returns -1. */
int scn_fail(const struct scn *s, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int scn_vfail(const struct scn *s, int line, const char *fmt, va_list ap);
/* Names shared by the parser and the report. */
const char *scn_status_name(enum ibv_wc_status st);
const char *scn_event_name(enum ibv_event_type ev);
const char *scn_state_name(enum ibv_qp_state st);
const char *scn_op_name(enum scn_op op);
const char *scn_opcode_name(unsigned opcode);
/* Link number of a host's port (hosts 2k and 2k+1 share links k * ports .. k * ports + ports - 1)
 * and the side its frames leave from. */
int scn_link_of(int host, int port, int ports);

/* timeline.c: the recorder, fed by hcasim_trace_observe. */
enum scn_tl_kind {
	SCN_TL_STATE,	/* a QP state change */
	SCN_TL_POST,	/* a WR posted */
	SCN_TL_TX,	/* a packet put on the wire */
	SCN_TL_FAULT,	/* a fault hit one of its packets */
	SCN_TL_NAK_RX,	/* a NAK or RNR NAK taken by its completer */
	SCN_TL_NAK_TX,	/* its responder sent a NAK or RNR NAK */
	SCN_TL_TIMEOUT, /* local ACK timeout */
	SCN_TL_REWIND,	/* go-back-N */
	SCN_TL_CQE,	/* a completion */
	SCN_TL_EVENT,	/* an affiliated async event */
	SCN_TL_ACTION,	/* a fault installed or removed, a modify */
};

struct scn_tl {
	uint64_t t_ps;
	int qp;
	enum scn_tl_kind kind;
	uint32_t psn;
	unsigned opcode; /* TX: BTH opcode; NAK_RX: syndrome */
	bool request;	 /* TX: a request (not a response) */
	bool again;	 /* TX: the PSN was sent before (retransmission, repeated response) */
	uint64_t end_ps; /* TX: last bit */
	char text[128];
};

struct scn_qp_stats {
	uint64_t packets, requests, retransmissions, responses, repeated_responses;
	uint64_t timeouts, rewinds, rnr_naks_rcvd, seq_naks_rcvd, err_naks_rcvd;
	uint64_t completions, errors, events;
};

void scn_tl_start(struct scn *s);
void scn_tl_stop(void);
/* Called by the runner. */
void scn_tl_note(struct scn *s, int qp, enum scn_tl_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void scn_tl_wr_posted(struct scn *s, int qp, int traffic, int n); /* a send WR, in SQ order */
/* The device time of the next CQE of qp not yet claimed (0 if the trace saw none); its
 * timeline entry is labelled with label. */
uint64_t scn_tl_take_cqe(int qp, const char *label);
bool scn_tl_cqe_seen(void); /* a CQE or EQE was traced since the last call */
const struct scn_qp_stats *scn_tl_stats(int qp);
const struct scn_tl *scn_tl_events(size_t *n);
/* Per QP: every wait between an RNR NAK and the next request transmission, and between the
 * arming transmission and a local ACK timeout. Returns the number stored (up to max). */
int scn_tl_rnr_waits(int qp, uint64_t *out, int max);
int scn_tl_timeout_waits(int qp, uint64_t *out, int max);
/* Device time of the n-th (0-based) QP event of type ev on qp, 0 if none. */
uint64_t scn_tl_event_time(int qp, enum ibv_event_type ev, int n);
void scn_tl_print(const struct scn *s);

/* expect.c: evaluate expectation i after the run; events[qp][type] counts the async events
 * received. Writes a sentence into msg; returns 1 if it holds. */
int scn_evaluate(struct scn *s, unsigned (*events)[32], char *msg, size_t len, int i);

/* Time as "12.345678 us" relative to t0 (with a sign). */
void scn_fmt_time(char *buf, size_t len, int64_t rel_ps);

#endif
