/* hcasim-scenario: the scenario file parser. An INI file (libinih) read whole and checked
 * before anything runs: every section and key is known, every value is in range, every name
 * refers to something. The first problem is printed as "FILE:LINE: [section] key: why". The
 * format is docs/scenarios.md. */
#include "sim/apps/scenario/scenario.h"
#include "sim/apps/scenario/keys.h"
#include "sim/error.h"
#include "sim/textfile.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---- */

static const struct {
	const char *name;
	enum ibv_wc_status st;
} wc_names[] = {
#define W(n)                                                                                       \
	{                                                                                          \
#n, IBV_WC_##n                                                                     \
	}
    W(SUCCESS),		 W(LOC_LEN_ERR),       W(LOC_QP_OP_ERR),     W(LOC_EEC_OP_ERR),
    W(LOC_PROT_ERR),	 W(WR_FLUSH_ERR),      W(MW_BIND_ERR),	     W(BAD_RESP_ERR),
    W(LOC_ACCESS_ERR),	 W(REM_INV_REQ_ERR),   W(REM_ACCESS_ERR),    W(REM_OP_ERR),
    W(RETRY_EXC_ERR),	 W(RNR_RETRY_EXC_ERR), W(LOC_RDD_VIOL_ERR),  W(REM_INV_RD_REQ_ERR),
    W(REM_ABORT_ERR),	 W(INV_EECN_ERR),      W(INV_EEC_STATE_ERR), W(FATAL_ERR),
    W(RESP_TIMEOUT_ERR), W(GENERAL_ERR),
#undef W
};

static const struct {
	const char *name;
	enum ibv_event_type ev;
} ev_names[] = {
#define E(n)                                                                                       \
	{                                                                                          \
#n, IBV_EVENT_##n                                                                  \
	}
    E(CQ_ERR),
    E(QP_FATAL),
    E(QP_REQ_ERR),
    E(QP_ACCESS_ERR),
    E(COMM_EST),
    E(SQ_DRAINED),
    E(PATH_MIG),
    E(PATH_MIG_ERR),
    E(DEVICE_FATAL),
    E(PORT_ACTIVE),
    E(PORT_ERR),
    E(LID_CHANGE),
    E(PKEY_CHANGE),
    E(SM_CHANGE),
    E(SRQ_ERR),
    E(SRQ_LIMIT_REACHED),
    E(QP_LAST_WQE_REACHED),
    E(CLIENT_REREGISTER),
    E(GID_CHANGE),
#undef E
};

static const struct {
	const char *name;
	enum ibv_qp_state st;
} state_names[] = {
    {"RESET", IBV_QPS_RESET}, {"INIT", IBV_QPS_INIT}, {"RTR", IBV_QPS_RTR}, {"RTS", IBV_QPS_RTS},
    {"SQD", IBV_QPS_SQD},     {"SQE", IBV_QPS_SQE},   {"ERR", IBV_QPS_ERR},
};

static const char *const op_names[] = {"send",	    "write", "read",  "cmp_swap",
				       "fetch_add", "recv",  "modify"};

/* BTH opcodes of RC (UC adds 0x20; IBA 9.2). */
static const char *const rc_opcodes[] = {
    "SEND_FIRST",
    "SEND_MIDDLE",
    "SEND_LAST",
    "SEND_LAST_IMM",
    "SEND_ONLY",
    "SEND_ONLY_IMM",
    "WRITE_FIRST",
    "WRITE_MIDDLE",
    "WRITE_LAST",
    "WRITE_LAST_IMM",
    "WRITE_ONLY",
    "WRITE_ONLY_IMM",
    "READ_REQUEST",
    "READ_RESPONSE_FIRST",
    "READ_RESPONSE_MIDDLE",
    "READ_RESPONSE_LAST",
    "READ_RESPONSE_ONLY",
    "ACKNOWLEDGE",
    "ATOMIC_ACKNOWLEDGE",
    "COMPARE_SWAP",
    "FETCH_ADD",
    NULL,
    "SEND_LAST_INV",
    "SEND_ONLY_INV",
};

const char *scn_status_name(enum ibv_wc_status st)
{
	for (size_t i = 0; i < sizeof(wc_names) / sizeof(wc_names[0]); i++)
		if (wc_names[i].st == st)
			return wc_names[i].name;
	return "?";
}

const char *scn_event_name(enum ibv_event_type ev)
{
	for (size_t i = 0; i < sizeof(ev_names) / sizeof(ev_names[0]); i++)
		if (ev_names[i].ev == ev)
			return ev_names[i].name;
	return "?";
}

const char *scn_state_name(enum ibv_qp_state st)
{
	for (size_t i = 0; i < sizeof(state_names) / sizeof(state_names[0]); i++)
		if (state_names[i].st == st)
			return state_names[i].name;
	return "?";
}

const char *scn_op_name(enum scn_op op)
{
	return (unsigned)op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "?";
}

const char *scn_opcode_name(unsigned op)
{
	static char buf[8][32];
	static int next;
	char *b = buf[next++ % 8];

	if (op == 0x64 || op == 0x65)
		return op == 0x64 ? "UD_SEND_ONLY" : "UD_SEND_ONLY_IMM";
	if ((op & 0xe0) == 0x00 && op < 24 && rc_opcodes[op])
		return rc_opcodes[op];
	if ((op & 0xe0) == 0x20 && (op & 0x1f) < 12) {
		snprintf(b, 32, "UC_%s", rc_opcodes[op & 0x1f]);
		return b;
	}
	snprintf(b, 32, "0x%02x", op);
	return b;
}

int scn_link_of(int host, int port, int ports)
{
	return (host / 2) * ports + port - 1;
}

/* ---- the keys of each section ---- */

enum sec { SEC_SCENARIO, SEC_SIM, SEC_QP, SEC_TRAFFIC, SEC_FAULT, SEC_EXPECT };

static const char *const scenario_keys[] = {SCN_SCENARIO_KEYS(SCN_KEY_NAME) NULL};
const char *const scn_qp_keys[] = {SCN_QP_KEYS(SCN_KEY_NAME) NULL};
const char *const scn_traffic_keys[] = {SCN_TRAFFIC_KEYS(SCN_KEY_NAME) NULL};
const char *const scn_fault_keys[] = {SCN_FAULT_KEYS(SCN_KEY_NAME) NULL};
const char *const scn_expect_keys[] = {SCN_EXPECT_SUBJECTS(SCN_KEY_NAME)
					   SCN_EXPECT_KEYS(SCN_KEY_NAME) NULL};
const char *const scn_expect_subjects[] = {SCN_EXPECT_SUBJECTS(SCN_KEY_NAME) NULL};

/* Names a reader might guess for keys that go by another name: refused with a pointer. */
static const char *const qp_reserved[] = {"alt_path", "alt_dlid", NULL};
static const char *const fault_reserved[] = {"down", "port_down", NULL};

#define B(k) SCN_B(k)
/* Which keys each kind of expectation takes besides its subject. */
static const unsigned expect_allowed[] = {
    [SCN_EX_COMPLETION] = B(K_E_STATUS) | B(K_E_BYTE_LEN) | B(K_E_SINCE_POST) |
			  B(K_E_SINCE_FIRST_TX) | B(K_E_TOLERANCE),
    [SCN_EX_STATE] = B(K_E_IS),
    [SCN_EX_COUNTER] = B(K_E_EQUALS) | B(K_E_MIN) | B(K_E_MAX),
    [SCN_EX_EVENT] = B(K_E_QP) | B(K_E_COUNT) | B(K_E_AFTER),
    [SCN_EX_MEMORY] = B(K_E_OFFSET) | B(K_E_U64),
    [SCN_EX_DATA] = 0,
    [SCN_EX_PACKETS] =
	B(K_E_PSN) | B(K_E_OPCODE) | B(K_E_RETX) | B(K_E_EQUALS) | B(K_E_MIN) | B(K_E_MAX),
    [SCN_EX_RNR_WAIT] = B(K_E_EQUALS) | B(K_E_TOLERANCE) | B(K_E_MIN) | B(K_E_MAX) | B(K_E_COUNT),
    [SCN_EX_TIMEOUT_WAIT] =
	B(K_E_EQUALS) | B(K_E_TOLERANCE) | B(K_E_MIN) | B(K_E_MAX) | B(K_E_COUNT),
};
/* ... and which they cannot do without. */
static const unsigned expect_required[] = {
    [SCN_EX_COMPLETION] = B(K_E_STATUS),
    [SCN_EX_STATE] = B(K_E_IS),
    [SCN_EX_COUNTER] = 0, /* one of equals, min, max: checked apart */
    [SCN_EX_EVENT] = B(K_E_QP),
    [SCN_EX_MEMORY] = B(K_E_OFFSET) | B(K_E_U64),
    [SCN_EX_DATA] = 0,
    [SCN_EX_PACKETS] = 0,
    [SCN_EX_RNR_WAIT] = 0, /* equals and tolerance, or min and/or max: checked apart */
    [SCN_EX_TIMEOUT_WAIT] = 0,
};

/* ---- parser state ---- */

#define MAX_HEADERS 512

struct pctx {
	struct scn *s;
	struct sim_textfile tf; /* the file, read whole (a regular file of bounded size); tf.line
				 * is the line last read */
	int header_line; /* line of the last [section] header read */
	struct {
		int line;
		char text[96];
		bool used; /* a key was seen in it */
	} hdr[MAX_HEADERS];
	int nhdr;
	bool failed;
	bool seen_scenario, seen_sim;
	int scenario_kline[8];
	/* the section being filled */
	char cur_section[96];
	int cur_header_line;
	enum sec cur_sec;
	int cur_index;
};

static int fail(struct pctx *c, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct pctx *c, int line, const char *fmt, ...)
{
	va_list ap;

	if (c->failed)
		return 0;
	c->failed = true;
	va_start(ap, fmt);
	scn_vfail(c->s, line, fmt, ap);
	va_end(ap);
	return 0;
}

int scn_vfail(const struct scn *s, int line, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s:%d: ", s->path, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	return -1;
}

int scn_fail(const struct scn *s, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	scn_vfail(s, line, fmt, ap);
	va_end(ap);
	return -1;
}

/* The reader inih calls once per line: counts lines and notes section headers. */
static char *reader(char *str, int num, void *stream)
{
	struct pctx *c = stream;
	char *r = sim_textfile_gets(str, num, &c->tf);
	const char *p;

	if (!r)
		return NULL;
	if (c->tf.toolong == c->tf.line) /* the first line that did not fit */
		fail(c, c->tf.line, "line longer than %d characters", num - 3);
	for (p = r; *p == ' ' || *p == '\t'; p++)
		;
	/* libinih goes on past an unclosed header, and the keys under it would be told as
	 * outside any section: the header is the first fault, told at its own line. */
	if (*p == '[' && !strchr(p, ']'))
		fail(c, c->tf.line, "syntax error: a section header without its ']'");
	if (*p == '[' && c->nhdr < MAX_HEADERS) {
		const char *e = strchr(p, ']');
		size_t l = e ? (size_t)(e - p - 1) : 0;

		c->header_line = c->tf.line;
		if (l >= sizeof(c->hdr[0].text))
			l = sizeof(c->hdr[0].text) - 1;
		c->hdr[c->nhdr].line = c->tf.line;
		memcpy(c->hdr[c->nhdr].text, p + 1, l);
		c->hdr[c->nhdr].text[l] = 0;
		c->hdr[c->nhdr].used = false;
		c->nhdr++;
	}
	return r;
}

/* ---- values ---- */

static bool parse_i64(const char *v, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long x;

	if (!*v || isspace((unsigned char)*v))
		return false;
	errno = 0;
	x = strtoll(v, &end, 0);
	if (errno || *end || x < lo || x > hi)
		return false;
	*out = x;
	return true;
}

static bool parse_u64(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long x;

	if (!*v || *v == '-' || isspace((unsigned char)*v))
		return false;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end)
		return false;
	*out = x;
	return true;
}

/* A size: a number of bytes with an optional suffix KiB or MiB. */
static bool parse_size(const char *v, uint64_t max, uint64_t *out)
{
	char num[64], *end;
	unsigned long long x;
	uint64_t mult = 1;
	size_t n = strlen(v);

	if (!n || n >= sizeof(num) || !isdigit((unsigned char)*v))
		return false;
	strcpy(num, v);
	if (n > 3 && !strcmp(num + n - 3, "KiB")) {
		mult = 1024;
		num[n - 3] = 0;
	} else if (n > 3 && !strcmp(num + n - 3, "MiB")) {
		mult = 1024 * 1024;
		num[n - 3] = 0;
	}
	errno = 0;
	x = strtoull(num, &end, 0);
	if (errno || *end || x > max / mult)
		return false;
	*out = x * mult;
	return true;
}

/* A time: a decimal number and a unit (ps, ns, us, ms, s), exact to the picosecond; "0"
 * alone is allowed. */
static bool parse_time(const char *v, uint64_t *out)
{
	static const struct {
		const char *unit;
		uint64_t ps;
	} units[] = {{"ps", 1},
		     {"ns", 1000},
		     {"us", 1000000},
		     {"ms", 1000000000ull},
		     {"s", 1000000000000ull}};
	uint64_t ip = 0, frac = 0, fden = 1;
	const char *p = v;
	int digits = 0;

	if (!strcmp(v, "0")) {
		*out = 0;
		return true;
	}
	for (; isdigit((unsigned char)*p); p++, digits++) {
		if (ip > (UINT64_MAX - 9) / 10)
			return false;
		ip = ip * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++, digits++) {
			if (fden > 1000000000000ull)
				return false;
			frac = frac * 10 + (uint64_t)(*p - '0');
			fden *= 10;
		}
	}
	if (!digits)
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].unit))
			continue;
		if (ip > UINT64_MAX / units[i].ps / 2 || (frac * units[i].ps) % fden)
			return false; /* too large, or finer than a picosecond */
		*out = ip * units[i].ps + frac * units[i].ps / fden;
		return true;
	}
	return false;
}

static bool parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
		*out = false;
	else
		return false;
	return true;
}

static bool parse_state(const char *v, enum ibv_qp_state *out)
{
	for (size_t i = 0; i < sizeof(state_names) / sizeof(state_names[0]); i++)
		if (!strcmp(v, state_names[i].name)) {
			*out = state_names[i].st;
			return true;
		}
	return false;
}

static bool parse_status(const char *v, enum ibv_wc_status *out)
{
	if (!strncmp(v, "IBV_WC_", 7))
		v += 7;
	for (size_t i = 0; i < sizeof(wc_names) / sizeof(wc_names[0]); i++)
		if (!strcmp(v, wc_names[i].name)) {
			*out = wc_names[i].st;
			return true;
		}
	return false;
}

static bool parse_event(const char *v, enum ibv_event_type *out)
{
	if (!strncmp(v, "IBV_EVENT_", 10))
		v += 10;
	for (size_t i = 0; i < sizeof(ev_names) / sizeof(ev_names[0]); i++)
		if (!strcmp(v, ev_names[i].name)) {
			*out = ev_names[i].ev;
			return true;
		}
	return false;
}

/* A BTH opcode: a number, or a name printed in the timeline (SEND_ONLY, UC_SEND_ONLY, ...). */
static bool parse_opcode(const char *v, int64_t *out)
{
	if (parse_i64(v, 0, 255, out))
		return true;
	for (unsigned op = 0; op < 256; op++)
		if (!strcmp(v, scn_opcode_name(op)) && strncmp(v, "0x", 2)) {
			*out = op;
			return true;
		}
	return false;
}

static bool valid_name(const char *n)
{
	if (!*n || strlen(n) >= SCN_NAME)
		return false;
	for (; *n; n++)
		if (!isalnum((unsigned char)*n) && *n != '_' && *n != '-')
			return false;
	return true;
}

static int key_index(const char *const *keys, const char *name)
{
	for (int i = 0; keys[i]; i++)
		if (!strcmp(keys[i], name))
			return i;
	return -1;
}

static bool in_list(const char *const *keys, const char *name)
{
	return key_index(keys, name) >= 0;
}

/* ---- sections ---- */

/* Find or start the object of the section being read; fails on a second section with the
 * same name. Returns its index or -1. */
static int section_object(struct pctx *c, enum sec sec, const char *name)
{
	struct scn *s = c->s;
	int n = 0, max = 0;

	switch (sec) {
	case SEC_QP:
		n = s->nqp;
		max = SCN_MAX_QPS;
		for (int i = 0; i < n; i++)
			if (!strcmp(s->qp[i].name, name))
				goto dup;
		s->qp[n].line = c->header_line;
		snprintf(s->qp[n].name, SCN_NAME, "%s", name);
		break;
	case SEC_TRAFFIC:
		n = s->ntr;
		max = SCN_MAX_TRAFFIC;
		for (int i = 0; i < n; i++)
			if (!strcmp(s->tr[i].name, name))
				goto dup;
		s->tr[n].line = c->header_line;
		snprintf(s->tr[n].name, SCN_NAME, "%s", name);
		break;
	case SEC_FAULT:
		n = s->nfault;
		max = SCN_MAX_FAULTS;
		for (int i = 0; i < n; i++)
			if (!strcmp(s->fault[i].name, name))
				goto dup;
		s->fault[n].line = c->header_line;
		snprintf(s->fault[n].name, SCN_NAME, "%s", name);
		break;
	case SEC_EXPECT:
		n = s->nex;
		max = SCN_MAX_EXPECTS;
		for (int i = 0; *name && i < n; i++)
			if (!strcmp(s->ex[i].name, name))
				goto dup;
		s->ex[n].line = c->header_line;
		snprintf(s->ex[n].name, SCN_NAME, "%s", name);
		break;
	default:
		return 0;
	}
	if (n >= max) {
		fail(c, c->header_line, "[%s]: more than %d such sections", c->cur_section, max);
		return -1;
	}
	return n;
dup:
	fail(c, c->header_line, "[%s]: a section of that name was given before", c->cur_section);
	return -1;
}

/* A path MTU in bytes: 256, 512, 1024, 2048 or 4096. */
static int parse_mtu(const char *v, enum ibv_mtu *out)
{
	int64_t x;

	if (!parse_i64(v, 256, 4096, &x))
		return 0;
	switch (x) {
	case 256:
		*out = IBV_MTU_256;
		return 1;
	case 512:
		*out = IBV_MTU_512;
		return 1;
	case 1024:
		*out = IBV_MTU_1024;
		return 1;
	case 2048:
		*out = IBV_MTU_2048;
		return 1;
	case 4096:
		*out = IBV_MTU_4096;
		return 1;
	}
	return 0;
}

/* A list of remote access rights (remote_write, remote_read, remote_atomic, or none). */
static int parse_access(const char *v, int *access)
{
	char buf[128], *save = NULL, *tok;

	if (strlen(v) >= sizeof(buf))
		return 0;
	strcpy(buf, v);
	*access = 0;
	for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		if (!strcmp(tok, "remote_write"))
			*access |= IBV_ACCESS_REMOTE_WRITE;
		else if (!strcmp(tok, "remote_read"))
			*access |= IBV_ACCESS_REMOTE_READ;
		else if (!strcmp(tok, "remote_atomic"))
			*access |= IBV_ACCESS_REMOTE_ATOMIC;
		else if (strcmp(tok, "none"))
			return 0;
	}
	return 1;
}

/* The initial contents of a QP's buffer: a list of OFFSET:VALUE, 8-byte aligned offsets. */
static int qp_init_key(struct scn_qp *q, const char *v)
{
	char buf[160], *save = NULL, *tok;

	if (strlen(v) >= sizeof(buf))
		return 0;
	strcpy(buf, v);
	q->ninit = 0;
	for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		char *colon = strchr(tok, ':');

		if (!colon || q->ninit == SCN_MAX_INIT)
			return 0;
		*colon = 0;
		if (!parse_u64(tok, &q->init[q->ninit].offset) ||
		    !parse_u64(colon + 1, &q->init[q->ninit].value) || q->init[q->ninit].offset % 8)
			return 0;
		q->ninit++;
	}
	return q->ninit > 0;
}

/* A [qp] key of the path: the host, type, peer, port and MTU, the timers and retry counts, and
 * the alternate path. Returns 1 if the value is good, 0 if not, -1 if the key is not one of
 * these. */
static int qp_path_key(struct scn_qp *q, int k, const char *v)
{
	int64_t x;

	switch (k) {
	case K_Q_HOST:
		if (!parse_i64(v, 0, 63, &x))
			return 0;
		q->host = (int)x;
		return 1;
	case K_Q_TYPE:
		if (!strcmp(v, "RC"))
			q->type = IBV_QPT_RC;
		else if (!strcmp(v, "UC"))
			q->type = IBV_QPT_UC;
		else if (!strcmp(v, "UD"))
			q->type = IBV_QPT_UD;
		else
			return 0;
		return 1;
	case K_Q_PEER:
		if (!valid_name(v))
			return 0;
		snprintf(q->peer_name, SCN_NAME, "%s", v);
		return 1;
	case K_Q_PORT:
		if (!parse_i64(v, 1, 2, &x))
			return 0;
		q->port = (int)x;
		return 1;
	case K_Q_MTU:
		return parse_mtu(v, &q->path_mtu);
	case K_Q_TIMEOUT:
		if (!parse_i64(v, 0, 31, &x))
			return 0;
		q->timeout = (int)x;
		return 1;
	case K_Q_RETRY:
		if (!parse_i64(v, 0, 7, &x))
			return 0;
		q->retry_cnt = (int)x;
		return 1;
	case K_Q_RNR_RETRY:
		if (!parse_i64(v, 0, 7, &x))
			return 0;
		q->rnr_retry = (int)x;
		return 1;
	case K_Q_MIN_RNR:
		if (!parse_i64(v, 0, 31, &x))
			return 0;
		q->min_rnr_timer = (int)x;
		return 1;
	case K_Q_ALT_PORT:
		if (!parse_i64(v, 1, 2, &x))
			return 0;
		q->alt_port = (int)x;
		return 1;
	case K_Q_ALT_TIMEOUT:
		if (!parse_i64(v, 0, 31, &x))
			return 0;
		q->alt_timeout = (int)x;
		return 1;
	case K_Q_PATH_MIG:
		if (!strcmp(v, "rearm"))
			q->path_mig = IBV_MIG_REARM;
		else if (!strcmp(v, "armed"))
			q->path_mig = IBV_MIG_ARMED;
		else if (!strcmp(v, "migrated"))
			q->path_mig = IBV_MIG_MIGRATED;
		else
			return 0;
		return 1;
	}
	return -1;
}

/* A [qp] key of the queues and what they may do: RDMA read depths, PSN, Q_Key, access, queue
 * sizes, the buffer and its initial contents, the state. Returns 1 if the value is good, 0 if
 * not or if the key is not one of these. */
static int qp_queue_key(struct scn_qp *q, int k, const char *v)
{
	int64_t x;
	uint64_t u;

	switch (k) {
	case K_Q_MAX_RD:
		if (!parse_i64(v, 0, 255, &x))
			return 0;
		q->max_rd_atomic = (int)x;
		return 1;
	case K_Q_MAX_DEST_RD:
		if (!parse_i64(v, 0, 255, &x))
			return 0;
		q->max_dest_rd_atomic = (int)x;
		return 1;
	case K_Q_SQ_PSN:
		if (!parse_i64(v, 0, 0xffffff, &x))
			return 0;
		q->sq_psn = (uint32_t)x;
		return 1;
	case K_Q_QKEY:
		if (!parse_i64(v, 0, 0xffffffffll, &x))
			return 0;
		q->qkey = (uint32_t)x;
		return 1;
	case K_Q_ACCESS:
		return parse_access(v, &q->access);
	case K_Q_MAX_SEND:
	case K_Q_MAX_RECV:
		if (!parse_i64(v, 1, 4096, &x))
			return 0;
		*(k == K_Q_MAX_SEND ? &q->max_send_wr : &q->max_recv_wr) = (uint32_t)x;
		return 1;
	case K_Q_BUFFER:
		if (!parse_size(v, 64ull << 20, &u) || u < 64)
			return 0;
		q->buffer_bytes = u;
		return 1;
	case K_Q_INIT:
		return qp_init_key(q, v);
	case K_Q_STATE:
		if (!parse_state(v, &q->state) ||
		    (q->state != IBV_QPS_INIT && q->state != IBV_QPS_RTR &&
		     q->state != IBV_QPS_RTS))
			return 0;
		return 1;
	}
	return 0;
}

static int qp_key(struct pctx *c, struct scn_qp *q, int k, const char *v)
{
	int r = qp_path_key(q, k, v);

	(void)c;
	return r >= 0 ? r : qp_queue_key(q, k, v);
}

static const char *const qp_key_help[] = {
    [K_Q_HOST] = "a host number 0..63",
    [K_Q_TYPE] = "RC, UC or UD",
    [K_Q_PEER] = "the name of a [qp] section",
    [K_Q_PORT] = "1 or 2",
    [K_Q_MTU] = "256, 512, 1024, 2048 or 4096",
    [K_Q_TIMEOUT] = "0..31",
    [K_Q_RETRY] = "0..7",
    [K_Q_RNR_RETRY] = "0..7 (7 = for ever)",
    [K_Q_MIN_RNR] = "0..31",
    [K_Q_MAX_RD] = "0..255",
    [K_Q_MAX_DEST_RD] = "0..255",
    [K_Q_SQ_PSN] = "0..0xffffff",
    [K_Q_QKEY] = "0..0xffffffff",
    [K_Q_ACCESS] = "a list of remote_write, remote_read, remote_atomic, or none",
    [K_Q_MAX_SEND] = "1..4096",
    [K_Q_MAX_RECV] = "1..4096",
    [K_Q_BUFFER] = "bytes (suffix KiB or MiB allowed), 64 B..64 MiB",
    [K_Q_INIT] = "a list of OFFSET:VALUE with 8-byte aligned offsets (at most 8)",
    [K_Q_STATE] = "INIT, RTR or RTS",
    [K_Q_ALT_PORT] = "1 or 2 (the alternate path: the peer's host on that port)",
    [K_Q_ALT_TIMEOUT] = "0..31",
    [K_Q_PATH_MIG] = "rearm, armed or migrated",
};

static int traffic_key(struct scn_traffic *t, int k, const char *v)
{
	int64_t x;
	uint64_t u;
	bool b;

	switch (k) {
	case K_T_QP:
		if (!valid_name(v))
			return 0;
		snprintf(t->qp_name, SCN_NAME, "%s", v); /* resolved after parsing */
		return 1;
	case K_T_OP:
		for (unsigned i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
			if (!strcmp(v, op_names[i])) {
				t->op = (enum scn_op)i;
				return 1;
			}
		return 0;
	case K_T_AT:
		return parse_time(v, &t->at_ps);
	case K_T_COUNT:
		if (!parse_i64(v, 1, SCN_MAX_COUNT, &x))
			return 0;
		t->count = (unsigned)x;
		return 1;
	case K_T_SIZE:
		if (!parse_size(v, 1u << 30, &u))
			return 0;
		t->size = (uint32_t)u;
		return 1;
	case K_T_OFFSET:
		return parse_size(v, 1ull << 30, &t->offset);
	case K_T_ROFFSET:
		return parse_size(v, 1ull << 30, &t->remote_offset);
	case K_T_SIGNALED:
		if (!parse_bool(v, &b))
			return 0;
		t->signaled = b;
		return 1;
	case K_T_COMPARE:
		return parse_u64(v, &t->compare);
	case K_T_SWAP:
	case K_T_ADD:
		return parse_u64(v, &t->swap_add);
	case K_T_STATE:
		return parse_state(v, &t->state);
	case K_T_SQD_NOTIFY:
		if (!parse_bool(v, &b))
			return 0;
		t->en_sqd_async_notify = b;
		return 1;
	}
	return 0;
}

static const char *const traffic_key_help[] = {
    [K_T_QP] = "the name of a [qp] section",
    [K_T_OP] = "send, write, read, cmp_swap, fetch_add, recv or modify",
    [K_T_AT] = "a time with a unit: ps, ns, us, ms or s (e.g. 10us, 1.5ms)",
    [K_T_COUNT] = "1..256",
    [K_T_SIZE] = "bytes (suffix KiB or MiB allowed), up to 1 GiB",
    [K_T_OFFSET] = "bytes",
    [K_T_ROFFSET] = "bytes",
    [K_T_SIGNALED] = "yes or no",
    [K_T_COMPARE] = "a 64-bit number",
    [K_T_SWAP] = "a 64-bit number",
    [K_T_ADD] = "a 64-bit number",
    [K_T_STATE] = "RESET, INIT, RTR, RTS, SQD, SQE or ERR",
    [K_T_SQD_NOTIFY] = "yes or no",
};

/* A [fault] key of the random faults on a link: the rates in parts per million, every Nth
 * packet dropped, the delay. Returns 1 if the value is good, 0 if not, -1 if the key is not
 * one of these. */
static int fault_random_key(struct scn_fault *f, int k, const char *v)
{
	int64_t x;

	switch (k) {
	case K_F_DROP_PPM:
	case K_F_CORRUPT_PPM:
	case K_F_DUP_PPM:
	case K_F_REORDER_PPM:
	case K_F_DELAY_PPM: {
		uint32_t *p[] = {&f->random.drop_ppm, &f->random.corrupt_ppm, &f->random.dup_ppm,
				 &f->random.reorder_ppm, &f->random.delay_ppm};

		if (!parse_i64(v, 0, 1000000, &x))
			return 0;
		*p[k - K_F_DROP_PPM] = (uint32_t)x;
		return 1;
	}
	case K_F_DROP_EVERY:
		if (!parse_i64(v, 0, 0xffffffffll, &x))
			return 0;
		f->random.drop_every = (uint32_t)x;
		return 1;
	case K_F_DELAY:
		if (!parse_time(v, &f->random.delay_ps))
			return 0;
		f->target.delay_ps = f->random.delay_ps;
		return 1;
	}
	return -1;
}

/* A [fault] key of a targeted fault: what it does, and the QP, PSN, opcode, count and Nth
 * packet it hits. Returns 1 if the value is good, 0 if not, -1 if the key is not one of
 * these. */
static int fault_target_key(struct scn_fault *f, int k, const char *v)
{
	int64_t x;

	switch (k) {
	case K_F_FAULT:
		if (!strcmp(v, "drop"))
			f->target.fault = HCASIM_FAULT_DROP;
		else if (!strcmp(v, "corrupt"))
			f->target.fault = HCASIM_FAULT_CORRUPT;
		else if (!strcmp(v, "dup"))
			f->target.fault = HCASIM_FAULT_DUP;
		else if (!strcmp(v, "delay"))
			f->target.fault = HCASIM_FAULT_DELAY;
		else
			return 0;
		f->targeted = true;
		return 1;
	case K_F_QPN:
		if (parse_i64(v, 0, 0xffffff, &x)) {
			f->target.qpn = x;
			return 1;
		}
		if (!valid_name(v))
			return 0;
		snprintf(f->target_qp, SCN_NAME, "%s", v);
		return 1;
	case K_F_PSN:
		if (!parse_i64(v, 0, 0xffffff, &x))
			return 0;
		f->target.psn = x;
		return 1;
	case K_F_OPCODE:
		return parse_opcode(v, &f->target.opcode);
	case K_F_COUNT:
		if (!parse_i64(v, 0, 0xffffffffll, &x))
			return 0;
		f->target.count = (uint32_t)x;
		return 1;
	case K_F_NTH:
		if (!parse_i64(v, 0, 1 << 24, &x))
			return 0;
		f->target.nth = (uint32_t)x;
		return 1;
	}
	return -1;
}

static int fault_key(struct scn_fault *f, int k, const char *v)
{
	int64_t x;
	int r;

	switch (k) {
	case K_F_AT:
		return parse_time(v, &f->at_ps);
	case K_F_UNTIL:
		return parse_time(v, &f->until_ps);
	case K_F_LINK:
		if (!parse_i64(v, 0, 63, &x))
			return 0;
		f->link = (int)x;
		return 1;
	case K_F_SIDE:
		if (!strcmp(v, "both"))
			f->side = -1;
		else if (parse_i64(v, 0, 1, &x))
			f->side = (int)x;
		else
			return 0;
		return 1;
	case K_F_FROM:
		if (!valid_name(v))
			return 0;
		snprintf(f->from, SCN_NAME, "%s", v);
		return 1;
	case K_F_LINK_DOWN: {
		bool b;

		if (!parse_bool(v, &b))
			return 0;
		f->link_down = b;
		return 1;
	}
	}
	r = fault_random_key(f, k, v);
	if (r < 0)
		r = fault_target_key(f, k, v);
	return r < 0 ? 0 : r;
}

static const char *const fault_key_help[] = {
    [K_F_AT] = "a time with a unit",
    [K_F_UNTIL] = "a time with a unit",
    [K_F_LINK] = "a link number 0..63",
    [K_F_SIDE] = "0, 1 or both",
    [K_F_FROM] = "the name of a [qp] section",
    [K_F_DROP_PPM] = "0..1000000",
    [K_F_CORRUPT_PPM] = "0..1000000",
    [K_F_DUP_PPM] = "0..1000000",
    [K_F_REORDER_PPM] = "0..1000000",
    [K_F_DELAY_PPM] = "0..1000000",
    [K_F_DROP_EVERY] = "0..2^32-1",
    [K_F_DELAY] = "a time with a unit",
    [K_F_FAULT] = "drop, corrupt, dup or delay",
    [K_F_QPN] = "a QPN 0..0xffffff or the name of a [qp] section",
    [K_F_PSN] = "0..0xffffff",
    [K_F_OPCODE] = "0..255 or an opcode name (SEND_ONLY, ACKNOWLEDGE, READ_RESPONSE_MIDDLE, ...)",
    [K_F_COUNT] = "0 (all) ..2^32-1",
    [K_F_NTH] = "0..2^24",
    [K_F_LINK_DOWN] = "yes or no (the whole link down from at until until)",
};

static int expect_key(struct scn_expect *e, int k, const char *v)
{
	int64_t x;
	bool b;

	if (k < K_E_NSUBJECTS) {
		static const enum scn_exp_kind kinds[] = {
		    SCN_EX_COMPLETION, SCN_EX_STATE,	SCN_EX_COUNTER,
		    SCN_EX_EVENT,      SCN_EX_MEMORY,	SCN_EX_DATA,
		    SCN_EX_PACKETS,    SCN_EX_RNR_WAIT, SCN_EX_TIMEOUT_WAIT,
		};

		if (strlen(v) >= sizeof(e->subject) || !*v)
			return 0;
		e->kind = kinds[k];
		snprintf(e->subject, sizeof(e->subject), "%s", v);
		if (k == K_E_EVENT)
			return parse_event(v, &e->event);
		return 1; /* names are resolved after parsing */
	}
	switch (k) {
	case K_E_STATUS:
		e->has_status = true;
		return parse_status(v, &e->status);
	case K_E_BYTE_LEN:
		return parse_i64(v, 0, 1ll << 31, &e->byte_len);
	case K_E_SINCE_POST:
	case K_E_SINCE_FIRST_TX:
		e->has_time = true;
		e->from_first_tx = k == K_E_SINCE_FIRST_TX;
		return parse_time(v, &e->time_ps);
	case K_E_TOLERANCE:
		return parse_time(v, &e->tol_ps);
	case K_E_IS:
		return parse_state(v, &e->state);
	case K_E_EQUALS:
	case K_E_MIN:
	case K_E_MAX: {
		int64_t *p = k == K_E_EQUALS ? &e->eq : k == K_E_MIN ? &e->min : &e->max;
		uint64_t ps;

		/* Waits are times; counters are numbers. */
		if (e->kind == SCN_EX_RNR_WAIT || e->kind == SCN_EX_TIMEOUT_WAIT) {
			if (!parse_time(v, &ps) || ps > INT64_MAX)
				return 0;
			*p = (int64_t)ps;
		} else if (!parse_i64(v, 0, INT64_MAX, p)) {
			return 0;
		}
		*(k == K_E_EQUALS ? &e->has_eq : k == K_E_MIN ? &e->has_min : &e->has_max) = true;
		return 1;
	}
	case K_E_QP:
	case K_E_AFTER:
		if (!valid_name(v))
			return 0;
		snprintf(k == K_E_QP ? e->qp_name : e->after_name, SCN_NAME, "%s", v);
		return 1; /* resolved after parsing */
	case K_E_OFFSET:
		return parse_u64(v, &e->offset) && e->offset % 8 == 0;
	case K_E_U64:
		return parse_u64(v, &e->u64);
	case K_E_PSN:
		return parse_i64(v, 0, 0xffffff, &e->psn);
	case K_E_OPCODE:
		return parse_opcode(v, &e->opcode);
	case K_E_RETX:
		if (!parse_bool(v, &b))
			return 0;
		e->retx = b;
		return 1;
	case K_E_COUNT:
		if (!parse_i64(v, 0, 1 << 30, &x))
			return 0;
		e->count = x;
		e->has_count = true;
		return 1;
	}
	return 0;
}

static const char *const expect_key_help[] = {
    [K_E_COMPLETION] = "TRAFFIC, TRAFFIC#N (1-based) or TRAFFIC#*",
    [K_E_STATE] = "the name of a [qp] section",
    [K_E_COUNTER] = "QP.NAME, linkN.sideS.NAME or hostN.NAME",
    [K_E_EVENT] = "an ibv_event_type name without IBV_EVENT_ (SQ_DRAINED, COMM_EST, ...)",
    [K_E_MEMORY] = "the name of a [qp] section",
    [K_E_DATA] = "the name of a write or read [traffic] section",
    [K_E_PACKETS] = "the name of a [qp] section",
    [K_E_RNR_WAIT] = "the name of a [qp] section",
    [K_E_TIMEOUT_WAIT] = "the name of a [qp] section",
    [K_E_STATUS] = "an ibv_wc_status name without IBV_WC_ (SUCCESS, RETRY_EXC_ERR, ...)",
    [K_E_BYTE_LEN] = "0..2^31",
    [K_E_SINCE_POST] = "a time with a unit",
    [K_E_SINCE_FIRST_TX] = "a time with a unit",
    [K_E_TOLERANCE] = "a time with a unit",
    [K_E_IS] = "RESET, INIT, RTR, RTS, SQD, SQE or ERR",
    [K_E_EQUALS] = "a number (a time with a unit for rnr_wait and timeout_wait)",
    [K_E_MIN] = "a number",
    [K_E_MAX] = "a number",
    [K_E_QP] = "the name of a [qp] section",
    [K_E_AFTER] = "the name of a [traffic] section",
    [K_E_OFFSET] = "an 8-byte aligned offset",
    [K_E_U64] = "a 64-bit number",
    [K_E_PSN] = "0..0xffffff",
    [K_E_OPCODE] = "0..255 or an opcode name",
    [K_E_RETX] = "yes or no",
    [K_E_COUNT] = "0..2^30",
};

static void qp_defaults(struct scn_qp *q)
{
	q->type = IBV_QPT_RC;
	q->peer = -1;
	q->port = 1;
	q->path_mtu = IBV_MTU_1024;
	q->timeout = 14;
	q->retry_cnt = 7;
	q->rnr_retry = 7;
	q->min_rnr_timer = 12;
	q->max_rd_atomic = 1;
	q->max_dest_rd_atomic = 1;
	q->qkey = 0x11111111;
	q->access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	q->max_send_wr = 16;
	q->max_recv_wr = 16;
	q->buffer_bytes = 64 * 1024;
	q->state = IBV_QPS_RTS;
	q->alt_timeout = -1;
	q->path_mig = IBV_MIG_REARM;
}

static void traffic_defaults(struct scn_traffic *t)
{
	t->count = 1;
	t->signaled = true;
	t->en_sqd_async_notify = -1;
}

static void fault_defaults(struct scn_fault *f)
{
	f->until_ps = UINT64_MAX;
	f->link = -1;
	f->side = -2; /* not given */
	f->target.qpn = -1;
	f->target.psn = -1;
	f->target.opcode = -1;
}

static void expect_defaults(struct scn_expect *e)
{
	e->traffic = e->wr = e->qp = e->after = -1;
	e->link = e->side = e->host = -1;
	e->byte_len = -1;
	e->psn = e->opcode = -1;
	e->retx = -1;
}

/* One key of a keyed section: look the key up, refuse it twice, parse it. */
static int keyed(struct pctx *c, const char *const *keys, const char *const *help,
		 const char *const *reserved, int *kline, const char *name, const char *value,
		 int (*set)(void *obj, int k, const char *v), void *obj)
{
	int k = key_index(keys, name);

	if (k < 0) {
		if (reserved && in_list(reserved, name))
			return fail(c, c->tf.line,
				    "[%s] %s: unknown key (an alternate path is alt_port, alt_timeout "
				    "and path_mig_state in [qp]; a link down window is link_down in "
				    "[fault])",
				    c->cur_section, name);
		return fail(c, c->tf.line, "[%s] %s: unknown key", c->cur_section, name);
	}
	if (kline[k])
		return fail(c, c->tf.line, "[%s] %s: given twice (first on line %d)",
			    c->cur_section, name, kline[k]);
	kline[k] = c->tf.line;
	if (!set(obj, k, value))
		return fail(c, c->tf.line, "[%s] %s: bad value '%s' (expected %s)", c->cur_section,
			    name, value, help[k]);
	return 1;
}

static int set_qp(void *o, int k, const char *v)
{
	return qp_key(NULL, o, k, v);
}
static int set_traffic(void *o, int k, const char *v)
{
	return traffic_key(o, k, v);
}
static int set_fault(void *o, int k, const char *v)
{
	return fault_key(o, k, v);
}
static int set_expect(void *o, int k, const char *v)
{
	return expect_key(o, k, v);
}

/* The kind of a section from the first word of its header; false if there is no such kind. */
static bool section_kind(const char *kind, enum sec *sec)
{
	if (!strcmp(kind, "scenario"))
		*sec = SEC_SCENARIO;
	else if (!strcmp(kind, "sim"))
		*sec = SEC_SIM;
	else if (!strcmp(kind, "qp"))
		*sec = SEC_QP;
	else if (!strcmp(kind, "traffic"))
		*sec = SEC_TRAFFIC;
	else if (!strcmp(kind, "fault"))
		*sec = SEC_FAULT;
	else if (!strcmp(kind, "expect"))
		*sec = SEC_EXPECT;
	else
		return false;
	return true;
}

/* A new section starts: check its header, and start the object it fills. Returns 0 on an
 * error. */
static int start_section(struct pctx *c, const char *section)
{
	struct scn *s = c->s;
	char kind[96], *sp;
	const char *oname = "";
	enum sec sec;

	snprintf(c->cur_section, sizeof(c->cur_section), "%s", section);
	c->cur_header_line = c->header_line;
	for (int i = 0; i < c->nhdr; i++)
		if (c->hdr[i].line == c->header_line)
			c->hdr[i].used = true;
	snprintf(kind, sizeof(kind), "%s", section);
	sp = strchr(kind, ' ');
	if (sp) {
		*sp = 0;
		for (oname = sp + 1; *oname == ' '; oname++)
			;
	}
	if (!section_kind(kind, &sec))
		return fail(c, c->header_line,
			    "[%s]: unknown section (scenario, sim, qp NAME, traffic NAME, "
			    "fault NAME, expect [NAME])",
			    section);
	if ((sec == SEC_SCENARIO || sec == SEC_SIM) && *oname)
		return fail(c, c->header_line, "[%s]: this section takes no name", section);
	if ((sec == SEC_QP || sec == SEC_TRAFFIC || sec == SEC_FAULT) && !*oname)
		return fail(c, c->header_line, "[%s]: needs a name, as in [%s NAME]", section,
			    kind);
	if (*oname && !valid_name(oname))
		return fail(c, c->header_line,
			    "[%s]: bad name '%s' (letters, digits, _ and -, up to %d)", section,
			    oname, SCN_NAME - 1);
	if (sec == SEC_SCENARIO) {
		if (c->seen_scenario)
			return fail(c, c->header_line, "[scenario]: given twice");
		c->seen_scenario = true;
	}
	if (sec == SEC_SIM) {
		if (c->seen_sim)
			return fail(c, c->header_line, "[sim]: given twice");
		c->seen_sim = true;
	}
	c->cur_sec = sec;
	c->cur_index = section_object(c, sec, oname);
	if (c->cur_index < 0)
		return 0;
	switch (sec) {
	case SEC_QP:
		qp_defaults(&s->qp[s->nqp++]);
		break;
	case SEC_TRAFFIC:
		traffic_defaults(&s->tr[s->ntr++]);
		break;
	case SEC_FAULT:
		fault_defaults(&s->fault[s->nfault++]);
		break;
	case SEC_EXPECT:
		expect_defaults(&s->ex[s->nex++]);
		break;
	default:
		break;
	}
	return 1;
}

/* A key of [scenario]: name, duration, settle. */
static int scenario_key(struct pctx *c, const char *name, const char *value)
{
	struct scn *s = c->s;
	int k = key_index(scenario_keys, name);

	if (k < 0)
		return fail(c, c->tf.line, "[scenario] %s: unknown key (name, duration, settle)",
			    name);
	if (c->scenario_kline[k])
		return fail(c, c->tf.line, "[scenario] %s: given twice (first on line %d)", name,
			    c->scenario_kline[k]);
	c->scenario_kline[k] = c->tf.line;
	if (k == K_S_NAME) {
		snprintf(s->title, sizeof(s->title), "%s", value);
	} else if (!parse_time(value, k == K_S_DURATION ? &s->duration_ps : &s->settle_ps) ||
		   (k == K_S_DURATION && !s->duration_ps)) {
		return fail(c, c->tf.line,
			    "[scenario] %s: bad value '%s' (expected a time with a unit: "
			    "ps, ns, us, ms or s)",
			    name, value);
	}
	return 1;
}

/* A key of [sim]: kept with its line, to be given to hcasim_config_set before boot. */
static int sim_key(struct pctx *c, const char *name, const char *value)
{
	struct scn *s = c->s;

	for (int i = 0; i < s->nsim; i++)
		if (!strcmp(s->sim[i].key, name))
			return fail(c, c->tf.line, "[sim] %s: given twice (first on line %d)", name,
				    s->sim[i].line);
	if (s->nsim == SCN_MAX_SIM || strlen(name) >= sizeof(s->sim[0].key) ||
	    strlen(value) >= sizeof(s->sim[0].value))
		return fail(c, c->tf.line, "[sim] %s: too many keys, or too long", name);
	snprintf(s->sim[s->nsim].key, sizeof(s->sim[0].key), "%s", name);
	snprintf(s->sim[s->nsim].value, sizeof(s->sim[0].value), "%s", value);
	s->sim[s->nsim++].line = c->tf.line; /* checked by hcasim_config_set before boot */
	return 1;
}

/* A key of [expect]: the subject first and only once, then the keys its kind takes. */
static int expect_section_key(struct pctx *c, const char *name, const char *value)
{
	struct scn *s = c->s;
	struct scn_expect *e = &s->ex[c->cur_index];
	int k = key_index(scn_expect_keys, name);

	if (k >= 0 && k < K_E_NSUBJECTS) {
		for (int j = 0; j < K_E_NSUBJECTS; j++)
			if (e->kline[j])
				return fail(c, c->tf.line,
					    "[%s] %s: this section already expects %s "
					    "(line %d); one subject per [expect]",
					    c->cur_section, name, scn_expect_keys[j], e->kline[j]);
		for (int j = K_E_NSUBJECTS; scn_expect_keys[j]; j++)
			if (e->kline[j])
				return fail(c, c->tf.line,
					    "[%s] %s: the subject key must come first",
					    c->cur_section, name);
	} else if (k >= 0) {
		bool subject = false;

		for (int j = 0; j < K_E_NSUBJECTS; j++)
			subject |= e->kline[j] != 0;
		if (!subject)
			return fail(c, c->tf.line,
				    "[%s] %s: the section must start with what it expects "
				    "(completion, state, counter, event, memory, data, packets, "
				    "rnr_wait or timeout_wait)",
				    c->cur_section, name);
		if (!(expect_allowed[e->kind] & B(k)))
			return fail(c, c->tf.line, "[%s] %s: not a key of a %s expectation",
				    c->cur_section, name, scn_expect_keys[(int)e->kind]);
	}
	return keyed(c, scn_expect_keys, expect_key_help, NULL, e->kline, name, value, set_expect,
		     e);
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct pctx *c = user;
	struct scn *s = c->s;

	if (c->failed)
		return 0;
	if (!*section)
		return fail(c, c->tf.line, "%s: key outside any [section]", name);
	if ((strcmp(section, c->cur_section) || c->header_line != c->cur_header_line) &&
	    !start_section(c, section))
		return 0;
	switch (c->cur_sec) {
	case SEC_SCENARIO:
		return scenario_key(c, name, value);
	case SEC_SIM:
		return sim_key(c, name, value);
	case SEC_QP: {
		struct scn_qp *q = &s->qp[c->cur_index];

		return keyed(c, scn_qp_keys, qp_key_help, qp_reserved, q->kline, name, value,
			     set_qp, q);
	}
	case SEC_TRAFFIC: {
		struct scn_traffic *t = &s->tr[c->cur_index];

		return keyed(c, scn_traffic_keys, traffic_key_help, NULL, t->kline, name, value,
			     set_traffic, t);
	}
	case SEC_FAULT: {
		struct scn_fault *f = &s->fault[c->cur_index];

		return keyed(c, scn_fault_keys, fault_key_help, fault_reserved, f->kline, name,
			     value, set_fault, f);
	}
	case SEC_EXPECT:
		return expect_section_key(c, name, value);
	}
	return 0;
}

int scn_parse(struct scn *s, const char *path)
{
	struct pctx *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -1;
	memset(s, 0, sizeof(*s));
	s->path = path;
	s->duration_ps = 10000000000000ull; /* 10 s */
	s->settle_ps = 1000000000ull;	    /* 1 ms */
	c->s = s;
	/* A regular file of bounded size without NUL bytes (sim/textfile.h): /dev/zero, a FIFO
	 * or a huge file is refused at once. */
	if (sim_textfile_read(&c->tf, path, NULL)) {
		fprintf(stderr, "%s\n", sim_last_error());
		free(c);
		return -1;
	}
	/* A line that starts with blanks is a line of its own, never the continuation of the
	 * value above it: a stray indent must not glue two keys together unnoticed. */
	ini_allow_multiline = false;
	rc = ini_parse_stream(reader, c, handler, c);
	sim_textfile_free(&c->tf);
	if (!c->failed && rc > 0)
		fail(c, rc, "syntax error (expected [section], key = value, or a comment)");
	for (int i = 0; !c->failed && i < c->nhdr; i++)
		if (!c->hdr[i].used)
			fail(c, c->hdr[i].line, "[%s]: a section without keys", c->hdr[i].text);
	if (!c->failed) {
		for (int j = 0; j < s->nex; j++) {
			struct scn_expect *e = &s->ex[j];
			unsigned given = 0;

			for (int k = 0; k < 32; k++)
				if (e->kline[k])
					given |= SCN_B(k);
			if (!(given & (SCN_B(K_E_NSUBJECTS) - 1))) {
				fail(c, e->line, "[expect%s%s]: says nothing to expect",
				     *e->name ? " " : "", e->name);
				break;
			}
			if ((expect_required[e->kind] & given) != expect_required[e->kind]) {
				for (int k = K_E_NSUBJECTS; scn_expect_keys[k]; k++)
					if ((expect_required[e->kind] & SCN_B(k)) &&
					    !(given & SCN_B(k))) {
						fail(c, e->line,
						     "[expect%s%s] %s: required for a %s "
						     "expectation",
						     *e->name ? " " : "", e->name,
						     scn_expect_keys[k],
						     scn_expect_subjects[e->kind]);
						break;
					}
				break;
			}
		}
	}
	rc = c->failed ? -1 : scn_check(s);
	free(c);
	return rc;
}
