/* hcasim-scenario: the key numbers of each section, shared by the parser (parse.c) and the
 * checks that follow it (check.c). The order is the order of the key tables in parse.c. */
#ifndef SCN_KEYS_H
#define SCN_KEYS_H

enum { K_S_NAME, K_S_DURATION, K_S_SETTLE };

enum {
	K_Q_HOST,
	K_Q_TYPE,
	K_Q_PEER,
	K_Q_PORT,
	K_Q_MTU,
	K_Q_TIMEOUT,
	K_Q_RETRY,
	K_Q_RNR_RETRY,
	K_Q_MIN_RNR,
	K_Q_MAX_RD,
	K_Q_MAX_DEST_RD,
	K_Q_SQ_PSN,
	K_Q_QKEY,
	K_Q_ACCESS,
	K_Q_MAX_SEND,
	K_Q_MAX_RECV,
	K_Q_BUFFER,
	K_Q_INIT,
	K_Q_STATE,
};

enum {
	K_T_QP,
	K_T_OP,
	K_T_AT,
	K_T_COUNT,
	K_T_SIZE,
	K_T_OFFSET,
	K_T_ROFFSET,
	K_T_SIGNALED,
	K_T_COMPARE,
	K_T_SWAP,
	K_T_ADD,
	K_T_STATE,
	K_T_SQD_NOTIFY,
};

enum {
	K_F_AT,
	K_F_UNTIL,
	K_F_LINK,
	K_F_SIDE,
	K_F_FROM,
	K_F_DROP_PPM,
	K_F_CORRUPT_PPM,
	K_F_DUP_PPM,
	K_F_REORDER_PPM,
	K_F_DELAY_PPM,
	K_F_DROP_EVERY,
	K_F_DELAY,
	K_F_FAULT,
	K_F_QPN,
	K_F_PSN,
	K_F_OPCODE,
	K_F_COUNT,
	K_F_NTH,
};

enum {
	K_E_COMPLETION,
	K_E_STATE,
	K_E_COUNTER,
	K_E_EVENT,
	K_E_MEMORY,
	K_E_DATA,
	K_E_PACKETS,
	K_E_RNR_WAIT,
	K_E_TIMEOUT_WAIT,
	K_E_NSUBJECTS, /* the keys above name what is expected; exactly one per section */
	K_E_STATUS = K_E_NSUBJECTS,
	K_E_BYTE_LEN,
	K_E_SINCE_POST,
	K_E_SINCE_FIRST_TX,
	K_E_TOLERANCE,
	K_E_IS,
	K_E_EQUALS,
	K_E_MIN,
	K_E_MAX,
	K_E_QP,
	K_E_AFTER,
	K_E_OFFSET,
	K_E_U64,
	K_E_PSN,
	K_E_OPCODE,
	K_E_RETX,
	K_E_COUNT,
};

#define SCN_B(k) (1u << (k))

/* check.c: resolve names and check what single keys cannot (required keys, cross
 * references, buffer bounds). Prints "FILE:LINE: ..." and returns -1 on the first problem. */
int scn_check(struct scn *s);
extern const char *const scn_expect_subjects[]; /* by enum scn_exp_kind */

#endif
