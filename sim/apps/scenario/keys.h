/* hcasim-scenario: the keys of each section, declared once. From these lists come the key
 * numbers (K_<section>_<ID>, in list order) and the name tables of the parser (parse.c); the
 * checks after parsing (check.c) use the same numbers. X(section, ID, "name"). */
#ifndef SCN_KEYS_H
#define SCN_KEYS_H

#define SCN_SCENARIO_KEYS(X) X(S, NAME, "name") X(S, DURATION, "duration") X(S, SETTLE, "settle")

#define SCN_QP_KEYS(X)                                                                             \
	X(Q, HOST, "host")                                                                         \
	X(Q, TYPE, "type")                                                                         \
	X(Q, PEER, "peer")                                                                         \
	X(Q, PORT, "port")                                                                         \
	X(Q, MTU, "path_mtu")                                                                      \
	X(Q, TIMEOUT, "timeout")                                                                   \
	X(Q, RETRY, "retry_cnt")                                                                   \
	X(Q, RNR_RETRY, "rnr_retry")                                                               \
	X(Q, MIN_RNR, "min_rnr_timer")                                                             \
	X(Q, MAX_RD, "max_rd_atomic")                                                              \
	X(Q, MAX_DEST_RD, "max_dest_rd_atomic")                                                    \
	X(Q, SQ_PSN, "sq_psn")                                                                     \
	X(Q, QKEY, "qkey")                                                                         \
	X(Q, ACCESS, "access")                                                                     \
	X(Q, MAX_SEND, "max_send_wr")                                                              \
	X(Q, MAX_RECV, "max_recv_wr")                                                              \
	X(Q, BUFFER, "buffer")                                                                     \
	X(Q, INIT, "init_u64")                                                                     \
	X(Q, STATE, "state")                                                                       \
	X(Q, ALT_PORT, "alt_port")                                                                 \
	X(Q, ALT_TIMEOUT, "alt_timeout")                                                           \
	X(Q, PATH_MIG, "path_mig_state")

#define SCN_TRAFFIC_KEYS(X)                                                                        \
	X(T, QP, "qp")                                                                             \
	X(T, OP, "op")                                                                             \
	X(T, AT, "at")                                                                             \
	X(T, COUNT, "count")                                                                       \
	X(T, SIZE, "size")                                                                         \
	X(T, OFFSET, "offset")                                                                     \
	X(T, ROFFSET, "remote_offset")                                                             \
	X(T, SIGNALED, "signaled")                                                                 \
	X(T, COMPARE, "compare")                                                                   \
	X(T, SWAP, "swap")                                                                         \
	X(T, ADD, "add")                                                                           \
	X(T, STATE, "state")                                                                       \
	X(T, SQD_NOTIFY, "en_sqd_async_notify")

#define SCN_FAULT_KEYS(X)                                                                          \
	X(F, AT, "at")                                                                             \
	X(F, UNTIL, "until")                                                                       \
	X(F, LINK, "link")                                                                         \
	X(F, SIDE, "side")                                                                         \
	X(F, FROM, "from")                                                                         \
	X(F, DROP_PPM, "drop_ppm")                                                                 \
	X(F, CORRUPT_PPM, "corrupt_ppm")                                                           \
	X(F, DUP_PPM, "dup_ppm")                                                                   \
	X(F, REORDER_PPM, "reorder_ppm")                                                           \
	X(F, DELAY_PPM, "delay_ppm")                                                               \
	X(F, DROP_EVERY, "drop_every")                                                             \
	X(F, DELAY, "delay")                                                                       \
	X(F, FAULT, "fault")                                                                       \
	X(F, QPN, "qpn")                                                                           \
	X(F, PSN, "psn")                                                                           \
	X(F, OPCODE, "opcode")                                                                     \
	X(F, COUNT, "count")                                                                       \
	X(F, NTH, "nth")                                                                           \
	X(F, LINK_DOWN, "link_down")

/* SCN_EXPECT_SUBJECTS (scenario.h) lists the keys that say what an [expect] expects... */
/* ... and the keys that can follow them. */
#define SCN_EXPECT_KEYS(X)                                                                         \
	X(E, STATUS, "status")                                                                     \
	X(E, BYTE_LEN, "byte_len")                                                                 \
	X(E, SINCE_POST, "since_post")                                                             \
	X(E, SINCE_FIRST_TX, "since_first_tx")                                                     \
	X(E, TOLERANCE, "tolerance")                                                               \
	X(E, IS, "is")                                                                             \
	X(E, EQUALS, "equals")                                                                     \
	X(E, MIN, "min")                                                                           \
	X(E, MAX, "max")                                                                           \
	X(E, QP, "qp")                                                                             \
	X(E, AFTER, "after")                                                                       \
	X(E, OFFSET, "offset")                                                                     \
	X(E, U64, "u64")                                                                           \
	X(E, PSN, "psn")                                                                           \
	X(E, OPCODE, "opcode")                                                                     \
	X(E, RETX, "retransmission")                                                               \
	X(E, COUNT, "count")

#define SCN_KEY_ENUM(sec, id, name) K_##sec##_##id,
#define SCN_KEY_NAME(sec, id, name) name,
enum { SCN_SCENARIO_KEYS(SCN_KEY_ENUM) };
enum { SCN_QP_KEYS(SCN_KEY_ENUM) };
enum { SCN_TRAFFIC_KEYS(SCN_KEY_ENUM) };
enum { SCN_FAULT_KEYS(SCN_KEY_ENUM) };
enum { SCN_EXPECT_SUBJECTS(SCN_KEY_ENUM) K_E_NSUBJECTS };
enum { K_E_LAST_SUBJECT = K_E_NSUBJECTS - 1, SCN_EXPECT_KEYS(SCN_KEY_ENUM) K_E_NKEYS };

_Static_assert(K_E_NKEYS <= 32 && K_Q_PATH_MIG < 32 && K_T_SQD_NOTIFY < 32 && K_F_LINK_DOWN < 32,
	       "a section's keys fit the kline[32] of its object");

#define SCN_B(k) (1u << (k))

/* The names, by key number (NULL-terminated). */
extern const char *const scn_qp_keys[], *const scn_traffic_keys[], *const scn_fault_keys[],
								       *const scn_expect_keys[];
extern const char *const scn_expect_subjects[]; /* by enum scn_exp_kind */

/* check.c: resolve names and check what single keys cannot (required keys, cross
 * references, buffer bounds). Prints "FILE:LINE: ..." and returns -1 on the first problem. */
int scn_check(struct scn *s);

#endif
