/* ibv_modify_qp conformance: every cell of the QP state-transition table for RC, UC, UD,
 * XRC_SEND and XRC_RECV (the kernel's IB_QPT_XRC_INI and IB_QPT_XRC_TGT columns), driven
 * through the public verbs API only.
 *
 * The expected table below is an independent oracle written from the rules real systems
 * enforce (Linux ib_modify_qp_is_ok, IBA 10.3.1 / 11.2.5.2); it deliberately does not share
 * code or data with the firmware's table. For every valid (cur, next) cell and QP type:
 *   - the required set alone is accepted and the QP reaches next;
 *   - the required set plus each optional attribute, one at a time, is accepted (or rejected
 *     when the attribute is capability-gated and the device does not report the flag);
 *   - the required set minus any one required attribute is rejected;
 *   - the required set plus any attribute bit outside the cell is rejected.
 * Every invalid (cur, next) pair is rejected, IBV_QP_CUR_STATE is checked on its own, and
 * out-of-range attribute values are rejected one by one. Every rejected call must return
 * EINVAL and leave the QP exactly as it was (state and every attribute, via ibv_query_qp). */
#include <criterion/criterion.h>

#include "testbench/tb.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ---- the oracle ------------------------------------------------------------------------ */

enum { T_RC, T_UC, T_UD, T_XI, T_XT, T_COUNT };

static const enum ibv_qp_type qp_types[T_COUNT] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
						    IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV };
static const char *const type_names[T_COUNT] = { "RC", "UC", "UD", "XRC_SEND", "XRC_RECV" };

#define N_STATES 7
static const char *const state_names[N_STATES] = { "RESET", "INIT", "RTR", "RTS",
						   "SQD",   "SQE",  "ERR" };

#define N_BITS 21 /* IBV_QP_STATE (1 << 0) .. IBV_QP_DEST_QPN (1 << 20) */
static const char *const bit_names[N_BITS] = {
	"STATE",     "CUR_STATE",        "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS", "PKEY_INDEX",
	"PORT",      "QKEY",             "AV",                  "PATH_MTU",     "TIMEOUT",
	"RETRY_CNT", "RNR_RETRY",        "RQ_PSN",              "MAX_QP_RD_ATOMIC",
	"ALT_PATH",  "MIN_RNR_TIMER",    "SQ_PSN",              "MAX_DEST_RD_ATOMIC",
	"PATH_MIG_STATE", "CAP",         "DEST_QPN",
};

/* Short names for the table. */
#define RST IBV_QPS_RESET
#define INI IBV_QPS_INIT
#define RTR IBV_QPS_RTR
#define RTS IBV_QPS_RTS
#define SQD IBV_QPS_SQD
#define SQE IBV_QPS_SQE
#define ERR IBV_QPS_ERR

#define CUR IBV_QP_CUR_STATE
#define SQDN IBV_QP_EN_SQD_ASYNC_NOTIFY
#define ACC IBV_QP_ACCESS_FLAGS
#define PKEY IBV_QP_PKEY_INDEX
#define PORT IBV_QP_PORT
#define QKEY IBV_QP_QKEY
#define AV IBV_QP_AV
#define MTU IBV_QP_PATH_MTU
#define TMO IBV_QP_TIMEOUT
#define RETRY IBV_QP_RETRY_CNT
#define RNRR IBV_QP_RNR_RETRY
#define RQPSN IBV_QP_RQ_PSN
#define RDAT IBV_QP_MAX_QP_RD_ATOMIC
#define ALT IBV_QP_ALT_PATH
#define RNRT IBV_QP_MIN_RNR_TIMER
#define SQPSN IBV_QP_SQ_PSN
#define DRDAT IBV_QP_MAX_DEST_RD_ATOMIC
#define MIG IBV_QP_PATH_MIG_STATE
#define DQPN IBV_QP_DEST_QPN

/* One valid cell: required and optional attributes besides IBV_QP_STATE, per type. */
struct cell {
	int cur, next;
	int req[T_COUNT];
	int opt[T_COUNT];
};

/* The 22 valid (cur, next) pairs. A cell not listed here is an invalid transition. */
static const struct cell cells[] = {
	{ RST, RST, { 0 }, { 0 } },
	{ RST, INI,
	  .req = { [T_RC] = PKEY | PORT | ACC, [T_UC] = PKEY | PORT | ACC, [T_UD] = PKEY | PORT | QKEY,
		   [T_XI] = PKEY | PORT | ACC, [T_XT] = PKEY | PORT | ACC } },

	{ INI, RST, { 0 }, { 0 } },
	{ INI, INI,
	  .opt = { [T_RC] = PKEY | PORT | ACC, [T_UC] = PKEY | PORT | ACC, [T_UD] = PKEY | PORT | QKEY,
		   [T_XI] = PKEY | PORT | ACC, [T_XT] = PKEY | PORT | ACC } },
	{ INI, RTR,
	  .req = { [T_RC] = AV | MTU | DQPN | RQPSN | DRDAT | RNRT,
		   [T_UC] = AV | MTU | DQPN | RQPSN,
		   [T_UD] = 0,
		   [T_XI] = AV | MTU | DQPN | RQPSN,
		   [T_XT] = AV | MTU | DQPN | RQPSN | DRDAT | RNRT },
	  .opt = { [T_RC] = ALT | ACC | PKEY, [T_UC] = ALT | ACC | PKEY, [T_UD] = PKEY | QKEY,
		   [T_XI] = ALT | ACC | PKEY, [T_XT] = ALT | ACC | PKEY } },
	{ INI, ERR, { 0 }, { 0 } },

	{ RTR, RST, { 0 }, { 0 } },
	{ RTR, RTS,
	  .req = { [T_RC] = SQPSN | TMO | RETRY | RNRR | RDAT, [T_UC] = SQPSN, [T_UD] = SQPSN,
		   [T_XI] = SQPSN | TMO | RETRY | RNRR | RDAT, [T_XT] = SQPSN | TMO },
	  .opt = { [T_RC] = CUR | ALT | ACC | RNRT | MIG,
		   [T_UC] = CUR | ALT | ACC | MIG,
		   [T_UD] = CUR | QKEY,
		   [T_XI] = CUR | ALT | ACC | MIG,
		   [T_XT] = CUR | ALT | ACC | RNRT | MIG } },
	{ RTR, ERR, { 0 }, { 0 } },

	{ RTS, RST, { 0 }, { 0 } },
	{ RTS, RTS,
	  .opt = { [T_RC] = CUR | ACC | ALT | MIG | RNRT,
		   [T_UC] = CUR | ACC | ALT | MIG,
		   [T_UD] = CUR | QKEY,
		   [T_XI] = CUR | ACC | ALT | MIG,
		   [T_XT] = CUR | ACC | ALT | MIG | RNRT } },
	{ RTS, SQD,
	  .opt = { [T_RC] = SQDN, [T_UC] = SQDN, [T_UD] = SQDN, [T_XI] = SQDN, [T_XT] = SQDN } },
	{ RTS, ERR, { 0 }, { 0 } },

	{ SQD, RST, { 0 }, { 0 } },
	{ SQD, RTS,
	  .opt = { [T_RC] = CUR | ALT | ACC | RNRT | MIG,
		   [T_UC] = CUR | ALT | ACC | MIG,
		   [T_UD] = CUR | QKEY,
		   [T_XI] = CUR | ALT | ACC | MIG,
		   [T_XT] = CUR | ALT | ACC | RNRT | MIG } },
	{ SQD, SQD,
	  .opt = { [T_RC] = PORT | AV | TMO | RETRY | RNRR | RDAT | DRDAT | ALT | ACC | PKEY |
			    RNRT | MIG,
		   [T_UC] = AV | ALT | ACC | PKEY | MIG,
		   [T_UD] = PKEY | QKEY,
		   [T_XI] = PORT | AV | TMO | RETRY | RNRR | RDAT | ALT | ACC | PKEY | MIG,
		   [T_XT] = PORT | AV | TMO | DRDAT | ALT | ACC | PKEY | RNRT | MIG } },
	{ SQD, ERR, { 0 }, { 0 } },

	{ SQE, RST, { 0 }, { 0 } },
	/* the kernel's SQE->RTS names no attribute for RC and the XRC types */
	{ SQE, RTS, .opt = { [T_RC] = 0, [T_UC] = CUR | ACC, [T_UD] = CUR | QKEY } },
	{ SQE, ERR, { 0 }, { 0 } },

	{ ERR, RST, { 0 }, { 0 } },
	{ ERR, ERR, { 0 }, { 0 } },
};

#define N_CELLS ((int)(sizeof(cells) / sizeof(cells[0])))

static const struct cell *cell_of(int cur, int next)
{
	for (int i = 0; i < N_CELLS; i++)
		if (cells[i].cur == cur && cells[i].next == next)
			return &cells[i];
	return NULL;
}

/* The device capability flag an optional attribute needs in a cell, 0 if none. */
static unsigned gate_of(int cur, int next, int bit)
{
	if (bit == ALT || bit == MIG)
		return IBV_DEVICE_AUTO_PATH_MIG;
	if (bit == PORT && cur == SQD && next == SQD)
		return IBV_DEVICE_CHANGE_PHY_PORT;
	if (bit == CUR)
		return IBV_DEVICE_CURR_QP_STATE_MOD;
	return 0;
}

/* ---- helpers --------------------------------------------------------------------------- */

struct fx {
	struct tb_dev t;
	struct ibv_qp_attr valid; /* tb_valid_attrs: used to reach states and for accepted calls */
	struct ibv_qp_attr other; /* other valid values, for calls that must be rejected: a
				   * rejected call that applied anything would show */
	int checks;               /* modify calls checked against the oracle */
	struct ibv_xrcd *xrcd;    /* the XRC_RECV QPs' domain */
};

static void fx_open(struct fx *f)
{
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
						      IBV_XRCD_INIT_ATTR_OFLAGS, .fd = -1 };

	memset(f, 0, sizeof(*f));
	tb_open(&f->t, 0);
	f->xrcd = ibv_open_xrcd(f->t.ctx, &xa);
	cr_assert_not_null(f->xrcd, "ibv_open_xrcd: %s", hcasim_last_error());
	tb_valid_attrs(&f->t, &f->valid);
	f->other = f->valid;
	f->other.qkey = 0x33333333;
	f->other.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	f->other.path_mtu = IBV_MTU_512;
	f->other.dest_qp_num = 0x456;
	f->other.rq_psn = 0x5678;
	f->other.sq_psn = 0x8765;
	f->other.max_rd_atomic = 2;
	f->other.max_dest_rd_atomic = 2;
	f->other.min_rnr_timer = 7;
	f->other.timeout = 10;
	f->other.retry_cnt = 5;
	f->other.rnr_retry = 5;
	f->other.ah_attr.sl = 2;
	f->other.ah_attr.dlid = (uint16_t)(f->valid.ah_attr.dlid + 1);
	f->other.alt_ah_attr = f->other.ah_attr;
	f->other.alt_timeout = 10;
}

static void fx_close(struct fx *f)
{
	cr_log_info("%d modify calls checked", f->checks);
	cr_expect_eq(ibv_close_xrcd(f->xrcd), 0, "ibv_close_xrcd: %s", hcasim_last_error());
	tb_close(&f->t);
}

static const char *mask_str(int mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	if (!mask) {
		snprintf(buf, len, "0");
		return buf;
	}
	for (int b = 0; b < 32; b++) {
		if (!(mask & (1 << b)))
			continue;
		if (b < N_BITS)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? "|" : "",
					      bit_names[b]);
		else
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s1<<%d",
					      n ? "|" : "", b);
	}
	return buf;
}

/* "RC RTR->RTS mask=STATE|SQ_PSN|..." */
#define CELL_FMT "%s %s->%s mask=%s (0x%x)"
#define CELL_ARGS(ti, cur, next, mask, mbuf)                                                       \
	type_names[ti], state_names[cur], state_names[next], mask_str(mask, mbuf, sizeof(mbuf)),   \
		(unsigned)(mask)

static void destroy(struct ibv_qp *qp)
{
	int rc = ibv_destroy_qp(qp);

	cr_expect_eq(rc, 0, "ibv_destroy_qp: %d (%s)", rc, hcasim_last_error());
}

static void query_state(struct ibv_qp *qp, int *state)
{
	struct tb_qp_snap s;

	tb_qp_snap(qp, &s);
	*state = (int)s.attr.qp_state;
}

/* Setup transition (must succeed; fatal otherwise): cur->next with the oracle's required set. */
static void step(struct fx *f, int ti, struct ibv_qp *qp, int cur, int next)
{
	const struct cell *c = cell_of(cur, next);
	struct ibv_qp_attr a = f->valid;
	int mask, rc;
	char mb[256];

	cr_assert_not_null(c, "setup: %s->%s is not a valid cell", state_names[cur],
			   state_names[next]);
	mask = IBV_QP_STATE | c->req[ti];
	a.qp_state = (enum ibv_qp_state)next;
	a.cur_qp_state = (enum ibv_qp_state)cur;
	rc = ibv_modify_qp(qp, &a, mask);
	cr_assert_eq(rc, 0, "setup: walking to a state: " CELL_FMT ": expected 0, got %d (%s)",
		     CELL_ARGS(ti, cur, next, mask, mb), rc, hcasim_last_error());
}

/* A fresh QP of type ti (XRC_RECV: in the fixture's XRC domain). */
static struct ibv_qp *create(struct fx *f, int ti)
{
	struct ibv_qp_init_attr_ex qa = { .qp_type = IBV_QPT_XRC_RECV,
					  .comp_mask = IBV_QP_INIT_ATTR_XRCD, .xrcd = f->xrcd };
	struct ibv_qp *qp;

	if (qp_types[ti] != IBV_QPT_XRC_RECV)
		return tb_create_qp(&f->t, qp_types[ti]);
	qp = ibv_create_qp_ex(f->t.ctx, &qa);
	cr_assert_not_null(qp, "ibv_create_qp_ex(XRC_RECV): %s", hcasim_last_error());
	return qp;
}

/* A fresh QP of type ti, put in `state` by real transitions (SQE: real transitions to RTS,
 * then the simulator back door, since no modify reaches SQE). */
static struct ibv_qp *reach(struct fx *f, int ti, int state)
{
	static const int walk[N_STATES][5] = {
		[RST] = { RST },
		[INI] = { RST, INI },
		[RTR] = { RST, INI, RTR },
		[RTS] = { RST, INI, RTR, RTS },
		[SQD] = { RST, INI, RTR, RTS, SQD },
		[SQE] = { RST, INI, RTR, RTS },
		[ERR] = { RST, INI, ERR },
	};
	static const int walk_len[N_STATES] = { 1, 2, 3, 4, 5, 4, 3 };
	struct ibv_qp *qp = create(f, ti);
	int got;

	for (int i = 1; i < walk_len[state]; i++)
		step(f, ti, qp, walk[state][i - 1], walk[state][i]);
	if (state == SQE) {
		int rc = hcasim_qp_force_state(qp, IBV_QPS_SQE);

		cr_assert_eq(rc, 0, "setup: hcasim_qp_force_state(SQE): %d (%s)", rc,
			     hcasim_last_error());
	}
	query_state(qp, &got);
	cr_assert_eq(got, state, "setup: %s QP should be in %s, ibv_query_qp says %s",
		     type_names[ti], state_names[state], state_names[got]);
	cr_assert_eq((int)qp->state, state, "setup: %s QP qp->state %d, expected %s",
		     type_names[ti], (int)qp->state, state_names[state]);
	return qp;
}

/* The attributes for a try at cur->next: every value valid, cur_qp_state = cur. */
static struct ibv_qp_attr attrs_for(const struct fx *f, int cur, int next)
{
	struct ibv_qp_attr a = f->valid;

	a.qp_state = (enum ibv_qp_state)next;
	a.cur_qp_state = (enum ibv_qp_state)cur;
	return a;
}

/* The same with the other valid values, for a try that must be rejected. */
static struct ibv_qp_attr other_attrs_for(const struct fx *f, int cur, int next)
{
	struct ibv_qp_attr a = f->other;

	a.qp_state = (enum ibv_qp_state)next;
	a.cur_qp_state = (enum ibv_qp_state)cur;
	return a;
}

/* A second valid value for an attribute, so that an accepted modify visibly changes it. */
static void perturb(struct ibv_qp_attr *a, int bit)
{
	switch (bit) {
	case QKEY:
		a->qkey = 0x22222222;
		break;
	case ACC:
		a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		break;
	case RNRT:
		a->min_rnr_timer = 5;
		break;
	case TMO:
		a->timeout = 20;
		break;
	case RETRY:
		a->retry_cnt = 3;
		break;
	case RNRR:
		a->rnr_retry = 3;
		break;
	case AV:
		a->ah_attr.sl = 1;
		break;
	default:
		break;
	}
}

/* After an accepted modify to a state other than RESET: every attribute in mask reads back
 * as it was set. */
static void expect_applied(int ti, int cur, int next, int mask, const struct ibv_qp_attr *a,
			   const struct ibv_qp_attr *q)
{
	char mb[256];

#define APPLIED(bit, field)                                                                        \
	do {                                                                                       \
		if ((mask & (bit)) && (long long)q->field != (long long)a->field)                  \
			cr_expect_fail(CELL_FMT ": accepted but " #field " reads back %lld, set "  \
					       "%lld",                                             \
				       CELL_ARGS(ti, cur, next, mask, mb), (long long)q->field,    \
				       (long long)a->field);                                       \
	} while (0)
	APPLIED(ACC, qp_access_flags);
	APPLIED(PKEY, pkey_index);
	APPLIED(PORT, port_num);
	APPLIED(QKEY, qkey);
	APPLIED(AV, ah_attr.dlid);
	APPLIED(AV, ah_attr.sl);
	APPLIED(AV, ah_attr.port_num);
	APPLIED(AV, ah_attr.is_global);
	APPLIED(MTU, path_mtu);
	APPLIED(TMO, timeout);
	APPLIED(RETRY, retry_cnt);
	APPLIED(RNRR, rnr_retry);
	APPLIED(RQPSN, rq_psn);
	APPLIED(RDAT, max_rd_atomic);
	APPLIED(ALT, alt_port_num);
	APPLIED(ALT, alt_timeout);
	APPLIED(ALT, alt_pkey_index);
	APPLIED(RNRT, min_rnr_timer);
	APPLIED(SQPSN, sq_psn);
	APPLIED(DRDAT, max_dest_rd_atomic);
	APPLIED(MIG, path_mig_state);
	APPLIED(DQPN, dest_qp_num);
	APPLIED(SQDN, en_sqd_async_notify);
#undef APPLIED
}

/* The modify must succeed and the QP must be in next (qp->state and ibv_query_qp). Returns
 * true if it was accepted. */
static bool expect_accepted(struct fx *f, int ti, struct ibv_qp *qp, int cur, int next, int mask,
			    struct ibv_qp_attr *a, const char *what)
{
	struct tb_qp_snap s;
	char mb[256];
	int rc;

	f->checks++;
	rc = ibv_modify_qp(qp, a, mask);
	cr_expect_eq(rc, 0, "%s: " CELL_FMT ": expected accepted (0), got %d (%s)", what,
		     CELL_ARGS(ti, cur, next, mask, mb), rc, hcasim_last_error());
	if (rc)
		return false;
	cr_expect_eq((int)qp->state, next, "%s: " CELL_FMT ": accepted but qp->state is %d",
		     what, CELL_ARGS(ti, cur, next, mask, mb), (int)qp->state);
	tb_qp_snap(qp, &s);
	cr_expect_eq((int)s.attr.qp_state, next,
		     "%s: " CELL_FMT ": accepted but ibv_query_qp says state %s", what,
		     CELL_ARGS(ti, cur, next, mask, mb),
		     (int)s.attr.qp_state < N_STATES ? state_names[s.attr.qp_state] : "?");
	if (next != RST)
		expect_applied(ti, cur, next, mask, a, &s.attr);
	return true;
}

/* The modify must fail with EINVAL and change nothing. Returns true if the QP is known to be
 * as it was (so the caller may keep using it). */
static bool expect_rejected(struct fx *f, int ti, struct ibv_qp *qp, int cur, int next, int mask,
			    struct ibv_qp_attr *a, const char *what)
{
	struct tb_qp_snap before, after;
	int state = (int)qp->state;
	char mb[256], why[128] = "";
	bool same;
	int rc;

	f->checks++;
	tb_qp_snap(qp, &before);
	rc = ibv_modify_qp(qp, a, mask);
	cr_expect_eq(rc, EINVAL, "%s: " CELL_FMT ": expected rejected (EINVAL), got %d (%s)", what,
		     CELL_ARGS(ti, cur, next, mask, mb), rc, rc ? hcasim_last_error() : "accepted");
	cr_expect_eq((int)qp->state, state, "%s: " CELL_FMT ": qp->state changed %d -> %d", what,
		     CELL_ARGS(ti, cur, next, mask, mb), state, (int)qp->state);
	tb_qp_snap(qp, &after);
	same = tb_qp_snap_equal(&before, &after, why, sizeof(why));
	cr_expect(same, "%s: " CELL_FMT ": rejected call changed the QP: %s", what,
		  CELL_ARGS(ti, cur, next, mask, mb), why);
	return rc != 0 && same;
}

/* ---- per-cell coverage ----------------------------------------------------------------- */

/* (1) The required set alone: with IBV_QP_STATE and, for cur->cur cells, also as an
 * attribute-only modify (no IBV_QP_STATE). */
static void every_cell_accepts_required_set(int ti)
{
	struct fx f;

	fx_open(&f);
	for (int i = 0; i < N_CELLS; i++) {
		const struct cell *c = &cells[i];

		for (int with_state = 1; with_state >= 0; with_state--) {
			struct ibv_qp_attr a = attrs_for(&f, c->cur, c->next);
			int mask = c->req[ti] | (with_state ? IBV_QP_STATE : 0);
			struct ibv_qp *qp;

			if (!with_state && c->cur != c->next)
				continue;
			qp = reach(&f, ti, c->cur);
			expect_accepted(&f, ti, qp, c->cur, c->next, mask, &a, "required set");
			destroy(qp);
		}
	}
	fx_close(&f);
}

/* (2) The required set plus each optional attribute, one at a time. */
static void every_cell_accepts_each_optional_attribute(int ti)
{
	struct fx f;

	fx_open(&f);
	for (int i = 0; i < N_CELLS; i++) {
		const struct cell *c = &cells[i];

		for (int b = 1; b < N_BITS; b++) {
			int bit = 1 << b;
			unsigned gate = gate_of(c->cur, c->next, bit);
			bool allowed = !gate || (f.t.attr.device_cap_flags & gate);

			if (!(c->opt[ti] & bit))
				continue;
			for (int with_state = 1; with_state >= 0; with_state--) {
				struct ibv_qp_attr a = attrs_for(&f, c->cur, c->next);
				int mask = c->req[ti] | bit | (with_state ? IBV_QP_STATE : 0);
				char what[160];
				struct ibv_qp *qp;

				if (!with_state && c->cur != c->next)
					continue;
				perturb(&a, bit);
				qp = reach(&f, ti, c->cur);
				if (allowed) {
					snprintf(what, sizeof(what), "optional %s%s", bit_names[b],
						 gate ? " (capability reported)" : "");
					expect_accepted(&f, ti, qp, c->cur, c->next, mask, &a, what);
				} else {
					struct ibv_qp_attr r = other_attrs_for(&f, c->cur, c->next);

					snprintf(what, sizeof(what),
						 "optional %s without its device capability flag "
						 "0x%x",
						 bit_names[b], gate);
					expect_rejected(&f, ti, qp, c->cur, c->next, mask, &r, what);
				}
				destroy(qp);
			}
		}
	}
	fx_close(&f);
}

/* (3) The required set minus each required attribute. */
static void every_cell_rejects_missing_required_attribute(int ti)
{
	struct fx f;
	int n = 0;

	fx_open(&f);
	for (int i = 0; i < N_CELLS; i++) {
		const struct cell *c = &cells[i];
		struct ibv_qp *qp = NULL;

		for (int b = 1; b < N_BITS; b++) {
			struct ibv_qp_attr a = other_attrs_for(&f, c->cur, c->next);
			int bit = 1 << b;
			char what[160];

			if (!(c->req[ti] & bit))
				continue;
			if (!qp)
				qp = reach(&f, ti, c->cur);
			snprintf(what, sizeof(what), "required %s left out", bit_names[b]);
			if (!expect_rejected(&f, ti, qp, c->cur, c->next,
					     (IBV_QP_STATE | c->req[ti]) & ~bit, &a, what)) {
				destroy(qp);
				qp = NULL;
			}
			n++;
		}
		if (qp)
			destroy(qp);
	}
	/* Every cell with a required set: RESET->INIT, INIT->RTR (RC, UC), RTR->RTS. */
	cr_expect_gt(n, 0, "no required attributes in the %s table?", type_names[ti]);
	fx_close(&f);
}

/* (4) The required set plus each attribute bit outside required ∪ optional ∪ {STATE},
 * IBV_QP_CAP included; for cur->cur cells also as an attribute-only modify. */
static void every_cell_rejects_attributes_outside_the_cell(int ti)
{
	struct fx f;

	fx_open(&f);
	for (int i = 0; i < N_CELLS; i++) {
		const struct cell *c = &cells[i];
		struct ibv_qp *qp = reach(&f, ti, c->cur);

		for (int b = 1; b < N_BITS; b++) {
			int bit = 1 << b;

			if ((c->req[ti] | c->opt[ti]) & bit)
				continue;
			for (int with_state = 1; with_state >= 0; with_state--) {
				struct ibv_qp_attr a = other_attrs_for(&f, c->cur, c->next);
				int mask = c->req[ti] | bit | (with_state ? IBV_QP_STATE : 0);
				char what[160];

				if (!with_state && c->cur != c->next)
					continue;
				if (!qp)
					qp = reach(&f, ti, c->cur);
				snprintf(what, sizeof(what), "%s is not allowed in this cell",
					 bit_names[b]);
				if (!expect_rejected(&f, ti, qp, c->cur, c->next, mask, &a, what)) {
					destroy(qp);
					qp = NULL;
				}
			}
		}
		if (qp)
			destroy(qp);
	}
	fx_close(&f);
}

/* Every (cur, next) pair outside the 22 valid ones; the cur->cur ones (RTR, SQE) also as an
 * attribute-only modify. */
static void every_invalid_transition_is_rejected(int ti)
{
	struct fx f;
	int pairs = 0;

	fx_open(&f);
	for (int cur = 0; cur < N_STATES; cur++) {
		struct ibv_qp *qp = NULL;

		for (int next = 0; next < N_STATES; next++) {
			for (int with_state = 1; with_state >= 0; with_state--) {
				struct ibv_qp_attr a = other_attrs_for(&f, cur, next);

				if (cell_of(cur, next) || (!with_state && cur != next))
					continue;
				if (with_state)
					pairs++;
				if (!qp)
					qp = reach(&f, ti, cur);
				if (!expect_rejected(&f, ti, qp, cur, next,
						     with_state ? IBV_QP_STATE : 0, &a,
						     "invalid transition")) {
					destroy(qp);
					qp = NULL;
				}
			}
		}
		if (qp)
			destroy(qp);
	}
	cr_expect_eq(pairs, N_STATES * N_STATES - 22, "the oracle has %d invalid pairs", pairs);
	fx_close(&f);
}

#define PER_TYPE(name, fn)                                                                         \
	Test(modify_qp, rc_##name)                                                                 \
	{                                                                                          \
		fn(T_RC);                                                                          \
	}                                                                                          \
	Test(modify_qp, uc_##name)                                                                 \
	{                                                                                          \
		fn(T_UC);                                                                          \
	}                                                                                          \
	Test(modify_qp, ud_##name)                                                                 \
	{                                                                                          \
		fn(T_UD);                                                                          \
	}                                                                                          \
	Test(modify_qp, xrc_send_##name)                                                           \
	{                                                                                          \
		fn(T_XI);                                                                          \
	}                                                                                          \
	Test(modify_qp, xrc_recv_##name)                                                           \
	{                                                                                          \
		fn(T_XT);                                                                          \
	}

PER_TYPE(every_valid_cell_accepts_required_set, every_cell_accepts_required_set)
PER_TYPE(every_valid_cell_accepts_each_optional_attribute,
	 every_cell_accepts_each_optional_attribute)
PER_TYPE(every_valid_cell_rejects_required_set_missing_one,
	 every_cell_rejects_missing_required_attribute)
PER_TYPE(every_valid_cell_rejects_attribute_outside_the_cell,
	 every_cell_rejects_attributes_outside_the_cell)
PER_TYPE(every_invalid_transition_is_rejected, every_invalid_transition_is_rejected)

/* The oracle itself: 22 valid pairs, and CUR_STATE only where the rules allow it. */
Test(modify_qp, oracle_table_is_consistent)
{
	cr_assert_eq(N_CELLS, 22);
	for (int i = 0; i < N_CELLS; i++)
		for (int ti = 0; ti < T_COUNT; ti++) {
			const struct cell *c = &cells[i];

			cr_expect_eq((c->req[ti] | c->opt[ti]) & (IBV_QP_STATE | IBV_QP_CAP), 0);
			cr_expect_eq(c->req[ti] & c->opt[ti], 0);
			if (c->opt[ti] & CUR)
				cr_expect(c->cur == RTR || c->cur == RTS || c->cur == SQD ||
					  c->cur == SQE);
		}
}

/* ---- IBV_QP_CUR_STATE ------------------------------------------------------------------ */

/* CUR_STATE naming RESET, INIT or ERR is rejected even when it names the QP's real state,
 * for every transition from there (and as an attribute-only modify), and when the QP is
 * elsewhere. */
Test(modify_qp, cur_state_naming_reset_init_or_err_is_rejected)
{
	static const int named[] = { RST, INI, ERR };
	struct fx f;

	fx_open(&f);
	for (int ti = 0; ti < T_COUNT; ti++) {
		for (size_t k = 0; k < sizeof(named) / sizeof(named[0]); k++) {
			int s = named[k];
			struct ibv_qp *qp = reach(&f, ti, s);

			for (int next = 0; next < N_STATES; next++) {
				const struct cell *c = cell_of(s, next);

				for (int with_state = 1; with_state >= 0; with_state--) {
					struct ibv_qp_attr a = other_attrs_for(&f, s, next);
					int mask = c ? c->req[ti] | CUR : CUR;

					if (!c || (!with_state && next != s))
						continue;
					mask |= with_state ? IBV_QP_STATE : 0;
					if (!qp)
						qp = reach(&f, ti, s);
					if (!expect_rejected(&f, ti, qp, s, next, mask, &a,
							     "CUR_STATE naming the real state "
							     "RESET/INIT/ERR")) {
						destroy(qp);
						qp = NULL;
					}
				}
			}
			if (qp)
				destroy(qp);
		}
		/* A QP in RTS claiming INIT for INIT->RTR. */
		{
			struct ibv_qp *qp = reach(&f, ti, RTS);
			struct ibv_qp_attr a = other_attrs_for(&f, INI, RTR);

			expect_rejected(&f, ti, qp, INI, RTR,
					IBV_QP_STATE | CUR | cell_of(INI, RTR)->req[ti], &a,
					"CUR_STATE=INIT on a QP in RTS");
			destroy(qp);
		}
	}
	fx_close(&f);
}

/* CUR_STATE naming RTR/RTS/SQD/SQE other than the QP's real state is rejected, in particular
 * where the claimed cell lists CUR_STATE as optional and the same transition would be valid
 * from the real state too. */
Test(modify_qp, cur_state_different_from_real_state_is_rejected)
{
	static const int states[] = { RTR, RTS, SQD, SQE };
	const int ns = (int)(sizeof(states) / sizeof(states[0]));
	int interesting = 0;
	struct fx f;

	fx_open(&f);
	for (int ti = 0; ti < T_COUNT; ti++) {
		for (int r = 0; r < ns; r++) {
			int real = states[r];
			struct ibv_qp *qp = reach(&f, ti, real);

			for (int k = 0; k < ns; k++) {
				int claimed = states[k];

				if (claimed == real)
					continue;
				for (int next = 0; next < N_STATES; next++) {
					const struct cell *c = cell_of(claimed, next);
					struct ibv_qp_attr a = other_attrs_for(&f, claimed, next);
					int mask;
					char what[160];

					if (!c)
						continue;
					mask = IBV_QP_STATE | CUR | c->req[ti];
					if (c->opt[ti] & CUR)
						interesting++;
					if (!qp)
						qp = reach(&f, ti, real);
					snprintf(what, sizeof(what),
						 "CUR_STATE=%s on a QP really in %s",
						 state_names[claimed], state_names[real]);
					if (!expect_rejected(&f, ti, qp, claimed, next, mask, &a,
							     what)) {
						destroy(qp);
						qp = NULL;
					}
				}
			}
			if (qp)
				destroy(qp);
		}
	}
	cr_expect_gt(interesting, 0);
	fx_close(&f);
}

/* ---- attribute values ------------------------------------------------------------------ */

/* A fresh QP of type ti in `from`; from->to with the required set and `bad` (one field out of
 * range) must be rejected with the QP unchanged; the same call with valid values must then be
 * accepted (so the value, not the mask, was at fault). */
static void value_rejected(struct fx *f, int ti, int from, int to, int extra_mask,
			   struct ibv_qp_attr *bad, const char *what)
{
	const struct cell *c = cell_of(from, to);
	struct ibv_qp_attr good = attrs_for(f, from, to);
	struct ibv_qp *qp;
	int mask;

	cr_assert_not_null(c);
	mask = IBV_QP_STATE | c->req[ti] | extra_mask;
	qp = reach(f, ti, from);
	bad->qp_state = (enum ibv_qp_state)to;
	bad->cur_qp_state = (enum ibv_qp_state)from;
	if (expect_rejected(f, ti, qp, from, to, mask, bad, what))
		expect_accepted(f, ti, qp, from, to, mask, &good, "the same with valid values");
	destroy(qp);
}

#define BAD_VALUE(f, ti, from, to, extra, field, value)                                            \
	do {                                                                                       \
		struct ibv_qp_attr bad_ = (f)->other;                                              \
		bad_.field = (value);                                                              \
		value_rejected((f), (ti), (from), (to), (extra), &bad_,                            \
			       "out-of-range value " #field " = " #value);                         \
	} while (0)

Test(modify_qp, timeout_32_is_rejected)
{
	struct fx f;

	fx_open(&f);
	BAD_VALUE(&f, T_RC, RTR, RTS, 0, timeout, 32);
	fx_close(&f);
}

Test(modify_qp, retry_cnt_8_is_rejected)
{
	struct fx f;

	fx_open(&f);
	BAD_VALUE(&f, T_RC, RTR, RTS, 0, retry_cnt, 8);
	fx_close(&f);
}

Test(modify_qp, rnr_retry_8_is_rejected)
{
	struct fx f;

	fx_open(&f);
	BAD_VALUE(&f, T_RC, RTR, RTS, 0, rnr_retry, 8);
	fx_close(&f);
}

Test(modify_qp, min_rnr_timer_32_is_rejected)
{
	struct fx f;

	fx_open(&f);
	BAD_VALUE(&f, T_RC, INI, RTR, 0, min_rnr_timer, 32);
	BAD_VALUE(&f, T_RC, RTR, RTS, RNRT, min_rnr_timer, 32);
	fx_close(&f);
}

Test(modify_qp, sq_psn_above_24_bits_is_rejected)
{
	struct fx f;

	fx_open(&f);
	for (int ti = 0; ti < T_COUNT; ti++)
		BAD_VALUE(&f, ti, RTR, RTS, 0, sq_psn, 1u << 24);
	fx_close(&f);
}

Test(modify_qp, rq_psn_above_24_bits_is_rejected)
{
	struct fx f;

	fx_open(&f);
	BAD_VALUE(&f, T_RC, INI, RTR, 0, rq_psn, 1u << 24);
	BAD_VALUE(&f, T_UC, INI, RTR, 0, rq_psn, 1u << 24);
	fx_close(&f);
}

Test(modify_qp, dest_qp_num_above_24_bits_is_rejected)
{
	struct fx f;

	fx_open(&f);
	BAD_VALUE(&f, T_RC, INI, RTR, 0, dest_qp_num, 1u << 24);
	BAD_VALUE(&f, T_UC, INI, RTR, 0, dest_qp_num, 1u << 24);
	fx_close(&f);
}

Test(modify_qp, port_num_0_and_2_are_rejected_on_a_one_port_device)
{
	struct fx f;

	fx_open(&f);
	cr_assert_eq(f.t.attr.phys_port_cnt, 1, "premise: a 1-port device");
	for (int ti = 0; ti < T_COUNT; ti++) {
		BAD_VALUE(&f, ti, RST, INI, 0, port_num, 0);
		BAD_VALUE(&f, ti, RST, INI, 0, port_num, 2);
	}
	fx_close(&f);
}

Test(modify_qp, pkey_index_beyond_the_port_table_is_rejected)
{
	struct fx f;

	fx_open(&f);
	cr_assert_gt(f.t.port.pkey_tbl_len, 0);
	for (int ti = 0; ti < T_COUNT; ti++) {
		BAD_VALUE(&f, ti, RST, INI, 0, pkey_index, f.t.port.pkey_tbl_len);
		BAD_VALUE(&f, ti, RST, INI, 0, pkey_index, 0xffff);
	}
	fx_close(&f);
}

Test(modify_qp, path_mtu_0_and_6_are_rejected)
{
	struct fx f;

	fx_open(&f);
	BAD_VALUE(&f, T_RC, INI, RTR, 0, path_mtu, (enum ibv_mtu)0);
	BAD_VALUE(&f, T_RC, INI, RTR, 0, path_mtu, (enum ibv_mtu)6);
	BAD_VALUE(&f, T_UC, INI, RTR, 0, path_mtu, (enum ibv_mtu)0);
	BAD_VALUE(&f, T_UC, INI, RTR, 0, path_mtu, (enum ibv_mtu)6);
	fx_close(&f);
}

Test(modify_qp, path_mtu_above_the_active_mtu_is_rejected)
{
	struct fx f;

	tb_config("link.mtu", "1024");
	fx_open(&f);
	cr_assert_eq(f.t.port.active_mtu, IBV_MTU_1024, "premise: active_mtu 1024, got %d",
		     f.t.port.active_mtu);
	BAD_VALUE(&f, T_RC, INI, RTR, 0, path_mtu, IBV_MTU_2048);
	BAD_VALUE(&f, T_UC, INI, RTR, 0, path_mtu, IBV_MTU_2048);
	BAD_VALUE(&f, T_RC, INI, RTR, 0, path_mtu, IBV_MTU_4096);
	fx_close(&f);
}

Test(modify_qp, max_rd_atomic_above_the_device_limit_is_rejected)
{
	struct fx f;

	fx_open(&f);
	cr_assert_lt(f.t.attr.max_qp_init_rd_atom, 255);
	BAD_VALUE(&f, T_RC, RTR, RTS, 0, max_rd_atomic,
		  (uint8_t)(f.t.attr.max_qp_init_rd_atom + 1));
	fx_close(&f);
}

Test(modify_qp, max_dest_rd_atomic_above_the_device_limit_is_rejected)
{
	struct fx f;

	fx_open(&f);
	cr_assert_lt(f.t.attr.max_qp_rd_atom, 255);
	BAD_VALUE(&f, T_RC, INI, RTR, 0, max_dest_rd_atomic,
		  (uint8_t)(f.t.attr.max_qp_rd_atom + 1));
	fx_close(&f);
}

Test(modify_qp, access_flags_with_an_unknown_bit_are_rejected)
{
	struct fx f;

	fx_open(&f);
	BAD_VALUE(&f, T_RC, RST, INI, 0, qp_access_flags, IBV_ACCESS_REMOTE_WRITE | (1u << 10));
	BAD_VALUE(&f, T_UC, RST, INI, 0, qp_access_flags, IBV_ACCESS_REMOTE_WRITE | (1u << 10));
	fx_close(&f);
}

Test(modify_qp, ah_sl_16_is_rejected)
{
	struct fx f;

	fx_open(&f);
	BAD_VALUE(&f, T_RC, INI, RTR, 0, ah_attr.sl, 16);
	BAD_VALUE(&f, T_UC, INI, RTR, 0, ah_attr.sl, 16);
	fx_close(&f);
}

Test(modify_qp, ah_port_num_0_is_rejected)
{
	struct fx f;

	fx_open(&f);
	BAD_VALUE(&f, T_RC, INI, RTR, 0, ah_attr.port_num, 0);
	BAD_VALUE(&f, T_UC, INI, RTR, 0, ah_attr.port_num, 0);
	fx_close(&f);
}

Test(modify_qp, qp_state_7_and_99_are_rejected)
{
	struct fx f;

	fx_open(&f);
	for (int ti = 0; ti < T_COUNT; ti++) {
		static const int bogus[] = { 7, 99 };

		for (int k = 0; k < 2; k++) {
			struct ibv_qp *qp = reach(&f, ti, INI);
			struct ibv_qp_attr a = other_attrs_for(&f, INI, INI);
			char what[64];

			a.qp_state = (enum ibv_qp_state)bogus[k];
			snprintf(what, sizeof(what), "qp_state = %d", bogus[k]);
			/* The cell column is meaningless here: print it as INIT->INIT. */
			expect_rejected(&f, ti, qp, INI, INI, IBV_QP_STATE, &a, what);
			destroy(qp);
		}
	}
	fx_close(&f);
}

/* ---- RoCE: connected QPs are addressed by GID ------------------------------------------ */

Test(modify_qp, roce_connected_init_to_rtr_needs_a_grh)
{
	static const int types[] = { T_RC, T_UC };
	union ibv_gid gid;
	struct fx f;

	tb_config("hca.link_layer", "roce");
	fx_open(&f);
	cr_assert_eq(f.t.port.link_layer, IBV_LINK_LAYER_ETHERNET, "premise: a RoCE port");
	cr_assert_eq(ibv_query_gid(f.t.ctx, 1, 0, &gid), 0, "%s", hcasim_last_error());
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
		int ti = types[k];
		int mask = IBV_QP_STATE | cell_of(INI, RTR)->req[ti];
		struct ibv_qp *qp = reach(&f, ti, INI);
		struct ibv_qp_attr a = attrs_for(&f, INI, RTR);

		a.ah_attr.is_global = 0;
		if (expect_rejected(&f, ti, qp, INI, RTR, mask, &a, "RoCE without a GRH")) {
			a.ah_attr.is_global = 1;
			a.ah_attr.grh.sgid_index = 0;
			a.ah_attr.grh.dgid = gid;
			a.ah_attr.grh.hop_limit = 64;
			expect_accepted(&f, ti, qp, INI, RTR, mask, &a,
					"RoCE with a GRH (sgid_index 0, dgid from ibv_query_gid)");
		}
		destroy(qp);
	}
	fx_close(&f);
}
