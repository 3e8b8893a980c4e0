/* Block tests (docs/architecture.md#block-tests): one model block linked alone with the
 * neighbours it calls replaced by the stubs of stubs.c, which record every call so that a test
 * can assert on what the block did — packets handed to the port, CQEs and EQEs posted, DMA
 * issued, wires raised, QP errors — and answer as the test scripts them.
 *
 * The stubs are weak symbols: each block binary links its block's object, whose own (strong)
 * definitions win, and takes the stubs for everything else. DMA works on one flat fake host
 * memory (blk_mem): a device address is an offset into it; an access outside it fails as a
 * refused DMA does. The fixture (blk_setup/blk_teardown) builds a device by hand — default
 * configuration, one port, a running kernel, the wires recorded — and blk_qp() a QP with the
 * buffers of every part allocated. The engines' steps are read from the `step` trace category
 * through the simulator's internal sink (sim_trace_internal), never from a hook in the block. */
#ifndef BLK_STUBS_H
#define BLK_STUBS_H

#include "model/ctx.h"
#include "model/mkey.h"
#include "model/pkt.h"
#include "model/twin.h"

#include <criterion/criterion.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BLK_MEM_BYTES (1u << 20) /* the fake host memory */
#define BLK_MAX 64               /* records kept per kind (later calls are counted only) */
/* hm_cqe_op_of's stub answer: the WQE opcode, marked, so a test sees it was asked. */
#define BLK_CQE_OP(wqe_op) (0x40u | (wqe_op))

/* A packet handed to hm_port_send, with a copy of its payload. */
struct blk_pkt {
	unsigned port;
	struct hm_pkt p;
	uint8_t payload[4096];
	sim_time_t t, need;
};

struct blk_cqe {
	uint32_t cqn;
	struct hca_cqe cqe;
	bool solicited;
	sim_time_t t;
};

struct blk_eqe {
	uint8_t type, subtype;
	uint32_t data0;
};

enum blk_dma_kind { BLK_DMA_RD, BLK_DMA_WR, BLK_DMA_RD_CT, BLK_DMA_WR_CT, BLK_DMA_WQE };
struct blk_dma {
	enum blk_dma_kind kind;
	uint64_t addr;
	size_t len;
	uint8_t client; /* BLK_DMA_WQE: enum hm_dma_client */
	uint32_t num;   /* BLK_DMA_WQE: QPN or SRQN */
};

struct blk_sge {
	uint32_t pdn, off, len;
	unsigned nsge;
	bool write;
};

/* A call with up to three numbers (wires, completer and requester hooks, QP errors, counters). */
struct blk_call {
	uint32_t qpn;
	uint64_t a, b, c;
};

struct blk_log {
	/* every stubbed call and raised wire by name, in order */
	const char *calls[256];
	unsigned ncalls;
	struct blk_pkt pkts[BLK_MAX];
	unsigned npkts;
	struct blk_cqe cqes[BLK_MAX];
	unsigned ncqes;
	struct blk_eqe eqes[BLK_MAX];
	unsigned neqes;
	struct blk_dma dma[BLK_MAX];
	unsigned ndma;
	struct blk_sge sges[BLK_MAX];
	unsigned nsges;
	/* wires: sq_wake (a: t), sq_retired (a: wqe, b: status), sq_retry (a: psn, b: t),
	 * qp_flush (a: t) */
	struct blk_call wake[BLK_MAX], retired[BLK_MAX], retry[BLK_MAX], flush[BLK_MAX];
	unsigned nwake, nretired, nretry, nflush;
	/* the completer as the requester calls it: fail_local (a: wqe, b: op, c: vendor_err),
	 * sent (a: wqe, b: t), timer (a: t), track (a: wqe, b: first_psn) */
	struct blk_call fail_local[BLK_MAX], sent[BLK_MAX], timer[BLK_MAX], track[BLK_MAX];
	unsigned nfail_local, nsent, ntimer, ntrack;
	/* the fetcher as the requester calls it: fetch (a: idx), check (a: opcode) */
	struct blk_call fetch[BLK_MAX], check[BLK_MAX];
	unsigned nfetch, ncheck;
	/* QP-wide flows: error (a: state), fatal, srq_fatal (qpn: SRQN), drained, migrate */
	struct blk_call qp_error[BLK_MAX], qp_fatal[BLK_MAX], srq_fatal[BLK_MAX];
	unsigned nqp_error, nqp_fatal, nsrq_fatal, ndrained, nmigrate;
	/* counters: ctr_qp (a: enum hm_ctr), ack_sent (a: syndrome), ack_rcvd (a: op, b: syn) */
	struct blk_call ctr_qp[BLK_MAX], ack_sent[BLK_MAX], ack_rcvd[BLK_MAX];
	unsigned nctr_qp, nack_sent, nack_rcvd;
	/* the PSN classifier's inputs (the stub classifies as IBA 9.7.5.1 says) */
	struct hm_psn_in psn_in[BLK_MAX];
	unsigned npsn;
	unsigned nqpc_get, nmkey, nmw;
};

/* What the stubbed neighbours answer; blk_setup resets it to the defaults in brackets. */
struct blk_script {
	int fetch_result;        /* hm_wqe_fetch [HM_WQE_READY] */
	uint8_t check_status;    /* hm_wqe_check's status [HCA_WC_SUCCESS]; the length is the
				  * WQE's inline length or the sum of its gather entries */
	unsigned mtu;            /* hm_qp_mtu [256] */
	sim_time_t wire_ps;      /* hm_port_send: the last bit leaves t + wire_ps [100 ns] */
	sim_time_t dma_ps;       /* each timed DMA read or write takes [500 ns] */
	bool sge_fail;           /* hm_sge_copy: a key check fails (LKEY_INVALID, nothing moved) */
	enum hm_mkey_result mkey;/* hm_mkey_check, hm_rkey_check [HM_MKEY_OK]; the IOVA is the VA */
	uint32_t mw_verr;        /* hm_mw_bind's and hm_mw_invalidate's answer [HCA_VERR_NONE] */
	bool wqe_read_fail;      /* hm_wqe_read fails [false] */
	bool dma_fail;           /* sim_dma_read_timed / _ct fail [false] */
	bool migrate_ok;         /* hm_qp_migrate's answer [false] */
	struct hm_srq *srq;      /* hm_srq_get's answer for any SRQN [NULL] */
};

extern struct blk_log blk;
extern struct blk_script blk_do;
extern uint8_t *blk_mem;       /* BLK_MEM_BYTES of fake host memory, zeroed by blk_setup */
extern struct hm_dev *blk_dev; /* the device blk_setup built */

/* The fixture: a device (default configuration, one IB port with LID 1, its data-path tables
 * with room for QPNs below 64), a kernel of its own at t = 0, the wires recorded, the step
 * trace observed (every category: the steps, and the events blk_event finds); every record
 * cleared. */
void blk_setup(void);
void blk_teardown(void);
/* A valid QP qpn of type in state, created by hand: sq_entries send WQEs of sq_stride bytes
 * (wqe_buf, flight and next_rsp allocated), an RQ of rq_entries (rsge and rpf_buf), CQs 1
 * (send) and 2 (receive), PD 1, path MTU 256 and port 1; put in the device's QP table. */
struct hm_qp *blk_qp(uint32_t qpn, uint8_t type, uint8_t state, uint32_t sq_entries,
		     uint32_t sq_stride, uint32_t rq_entries);
/* Index of the first recorded call named name at or after from, or -1. */
int blk_called(const char *name, unsigned from);

/* ---- what the block traced (every category, through sim_trace_internal) ---- */

/* The fields of the nth (from 0) event named name ("warn.qpc_differs") since blk_setup
 * ("qpn=0x3 field=sq_psn", valid until the next call), or NULL. */
const char *blk_event(const char *name, unsigned nth);

/* ---- the engines' steps, from the `step` trace category ---- */

/* The steps traced since the last blk_steps_clear, space-separated ("CHK_QUEUE CHK_STATE ..."). */
const char *blk_steps(void);
void blk_steps_clear(void);
/* Mark a step of engine ("req", "resp", "comp") reached: the trace sink marks each traced
 * step; a test marks the state the engine stopped in, which is not traced, from the block's
 * result. */
void blk_reach(const char *engine, const char *step);
bool blk_reached(const char *engine, const char *step);

/* A test whose body blk_every_step() can run again: a Criterion test of suite with the
 * fixture, and its body registered. */
typedef void (*blk_body)(void);
void blk_register(const char *name, blk_body body);
#define BLK_TEST(suite, name)                                                                      \
	static void blk_body_##name(void);                                                         \
	__attribute__((constructor)) static void blk_reg_##name(void)                              \
	{                                                                                          \
		blk_register(#name, blk_body_##name);                                              \
	}                                                                                          \
	Test(suite, name, .init = blk_setup, .fini = blk_teardown)                                 \
	{                                                                                          \
		blk_body_##name();                                                                 \
	}                                                                                          \
	static void blk_body_##name(void)
/* Run every registered body in this process, each in a fresh fixture, and check that every
 * step of names[0..n) (the engine's table, from its header) was reached by at least one;
 * the test fails naming those that were not. */
void blk_every_step(const char *engine, const char *const *names, size_t n);

#endif
