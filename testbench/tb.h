/* Shared test fixtures for the Criterion suites: open a simulated HCA with a PD and a CQ,
 * create QPs, snapshot a QP's full attributes and compare snapshots field by field. Every
 * helper asserts (cr_assert) on failure and goes through the public verbs/hcasim API only. */
#ifndef TB_TB_H
#define TB_TB_H

#include <infiniband/verbs.h>

#include "sim/hcasim.h"

#include <stdbool.h>

struct tb_dev {
	struct ibv_device **list;       /* device list (freed by tb_close) */
	struct ibv_context *ctx;        /* open device */
	struct ibv_pd *pd;              /* a PD */
	struct ibv_cq *cq;              /* a 64-entry CQ */
	struct ibv_device_attr attr;    /* device attributes */
	struct ibv_port_attr port;      /* port 1 attributes */
};

/* Set a configuration key before boot (asserts success). */
void tb_config(const char *key, const char *value);
/* Open HCA index (0 or 1) with a PD and a CQ. */
void tb_open(struct tb_dev *t, int index);
void tb_close(struct tb_dev *t);
/* Create a QP of the given type on t's PD/CQ with small queues. */
struct ibv_qp *tb_create_qp(struct tb_dev *t, enum ibv_qp_type type);

/* Everything ibv_query_qp returns. */
struct tb_qp_snap {
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
};
void tb_qp_snap(struct ibv_qp *qp, struct tb_qp_snap *s);
/* True if every field of a and b is equal (padding ignored); on a difference writes the
 * field's name to why. */
bool tb_qp_snap_equal(const struct tb_qp_snap *a, const struct tb_qp_snap *b, char *why,
		      size_t len);

/* Valid values for every modify-QP attribute on t (an IB port unless configured otherwise):
 * fills attr so that any subset of mask bits is acceptable where the table allows it. */
void tb_valid_attrs(struct tb_dev *t, struct ibv_qp_attr *attr);

/* Bring qp (on t) to RTS talking to peer_qpn on peer (RC/UC: connected; UD: qkey 0x11111111),
 * with path MTU mtu and every remote access allowed. */
void tb_connect(struct tb_dev *t, struct ibv_qp *qp, struct tb_dev *peer, uint32_t peer_qpn,
		enum ibv_mtu mtu);
/* The same from port of qp's device towards peer_lid, the GID 0 of peer_port of peer_ctx
 * (used when global, as RoCE needs) and QP peer_qpn: tb_connect is this with ports 1 and 1,
 * the peer's LID, and global on Ethernet. Two QPs of one device may name each other. */
void tb_connect_port(struct ibv_qp *qp, uint8_t port, struct ibv_context *peer_ctx,
		     uint8_t peer_port, uint16_t peer_lid, bool global, uint32_t peer_qpn,
		     enum ibv_mtu mtu);
/* Poll cq until n completions arrived (asserting progress), into wc. */
void tb_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n);
/* Register len bytes (page aligned, zeroed) with every access. */
struct ibv_mr *tb_mr(struct tb_dev *t, size_t len);
/* Two hosts with one connected QP each (path MTU 1024) and a registered buffer each of bytes
 * bytes: src on a, filled with (i * 7 + fill) & 0xff, and dst on b, zeroed. */
struct tb_pair {
	struct tb_dev a, b;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *src, *dst;
};
void tb_pair_open(struct tb_pair *p, enum ibv_qp_type type, size_t bytes, unsigned fill);
/* Destroy both QPs and buffers and close both hosts (asserting each step). */
void tb_pair_close(struct tb_pair *p);
/* Post a receive of len bytes at dst + off on qb. */
void tb_pair_post_recv(struct tb_pair *p, size_t off, uint32_t len, uint64_t wr_id);
/* One signaled SEND of len bytes of src into a receive of the whole of dst: both sides
 * complete successfully, the receive with byte_len len, and dst holds src's bytes. */
void tb_pair_send(struct tb_pair *p, uint32_t len);
/* One signaled RDMA WRITE of len bytes of src to dst: it completes successfully and dst holds
 * src's bytes. */
void tb_pair_write(struct tb_pair *p, uint32_t len);
/* Environment assignments a shell command needs to run a Debian binary on the drop-in library
 * of this build (under SAN=1: the ASan runtime preloaded, leak checks off), or "". */
const char *tb_san_env(void);
/* The program a doc quotes (a path below the source tree, such as README.md): the lines of
 * its code block from the line that starts with marker to the closing fence, written to a new
 * temporary C file whose path goes to src (len bytes, at least 32). Returns how many lines. */
int tb_doc_program(const char *doc, const char *marker, char *src, size_t len);
/* Run a shell command; returns its standard output (malloc'd) and its exit status. */
char *tb_run_cmd(const char *cmd, int *status);
/* The whole file at path (malloc'd, NUL-terminated; the test fails if it cannot be read);
 * *len its size when len is not NULL. */
char *tb_slurp(const char *path, size_t *len);
/* Files a and b are byte-identical and a has at least min_len bytes; a difference fails the
 * test with what, the byte where they part and that line of each. Returns the size. */
size_t tb_same_file(const char *what, const char *a, const char *b, size_t min_len);
/* Run argv (argv[0] a path) in the new directory dir, as a traced simulation: stdout to
 * out.txt, stderr to err.txt, HCASIM_IMPL=impl, every trace category to trace.txt, pcaps
 * named by HCASIM_PCAP=pcap; without HCASIM_CONFIG, HCASIM_RTL_BUG, WAVES or the runner's
 * descriptors. Returns the exit status; the test fails if the program dies. */
int tb_run_traced(const char *dir, char *const argv[], const char *impl, const char *pcap);
/* Output a test provokes on purpose (a mismatch report) is captured, not printed: a
 * green run shows none of it. tb_stderr_capture() sends stderr to a temporary file until
 * tb_stderr_captured() restores it and returns what was written (malloc'd), for the test to
 * check and to show in its failure messages. */
void tb_stderr_capture(void);
char *tb_stderr_captured(void);
/* Ends a capture begun before a run that must halt on a mismatch (lockstep or checked): it is
 * halted and its report is what the run printed (both shown on failure). Returns the halt's
 * reason (hcasim_halted()). */
const char *tb_expect_halt_reported(void);
/* A small VCD reader: the value changes of the variable name (its scopes and name, dotted:
 * "hca0.qp2.state") in the dump at path, in order, with their times (ps). The test fails if
 * the dump has no such variable. */
struct tb_wave {
	size_t n;
	uint64_t t[4096], v[4096]; /* v = UINT64_MAX for x */
};
void tb_read_wave(const char *path, const char *name, struct tb_wave *w);
/* The shipped scenarios (sim/scenarios/NAME.ini), one X(NAME) each: the suites that run every
 * one of them (modes, golden) generate their tests from this list. */
#define TB_SCENARIOS(X)                                                                            \
	X(duplicated_atomic)                                                                       \
	X(lost_ack)                                                                                \
	X(lost_read_response)                                                                      \
	X(path_migration)                                                                          \
	X(rnr_exhaustion)                                                                          \
	X(rnr_retry_infinite)                                                                      \
	X(sqd_drain)                                                                               \
	X(timeout_exhaustion)
/* Every .ini in the directory of shipped scenarios is in TB_SCENARIOS and every entry has its
 * .ini: the test fails naming the one missing. */
void tb_check_scenario_list(const char *dir);
/* Remove the directory mkdtemp made from template dir, with everything in it (nothing when
 * mkdtemp never ran on it: the template still ends in XXXXXX). */
void tb_rm_tmpdir(const char *dir);
#define TB_QKEY 0x11111111u
/* Local ACK timeout code tb_connect gives RC QPs (default 14: 67 ms). */
extern unsigned tb_rc_timeout;
/* retry_cnt, rnr_retry (default 7 each) and min_rnr_timer (default 1: 0.01 ms) it gives. */
extern unsigned tb_rc_retry_cnt, tb_rc_rnr_retry, tb_rc_min_rnr_timer;

#endif
