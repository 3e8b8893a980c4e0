/* The fuzz targets' common fixture (docs/security.md). The simulated system has four hosts:
 * hcasim0 and hcasim1 carry the bystander, an RC QP pair that must still move a message
 * after every input; hcasim2 and hcasim3 are the victims the inputs are thrown at, with an
 * RC, a UC and a UD QP connected across their link. An input that crashes, trips a sanitizer,
 * halts the simulation or stops the bystander is a finding: the target aborts with the reason. */
#ifndef HCASIM_FUZZ_H
#define HCASIM_FUZZ_H

#include <infiniband/verbs.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One side of a connected pair. */
struct fz_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf; /* 4 KiB, registered */
	uint16_t lid;
};

/* The victims: an RC, a UC and a UD QP on hcasim2, each with its peer on hcasim3. */
enum { FZ_RC, FZ_UC, FZ_UD, FZ_NQPT };
struct fz_victims {
	struct fz_side a[FZ_NQPT], b[FZ_NQPT];
};

/* Boot the four hosts and connect the bystander and the victims (once per process). */
void fz_setup(void);
extern struct fz_victims fz_victim;
/* Take s through RESET, INIT and RTR to RTS towards peer (PSNs 0; RC: 7 retries, RNR retries
 * for ever); its queues are empty after. Post one 2 KiB receive (buf + 2048) on s. */
void fz_connect(struct fz_side *s, const struct fz_side *peer);
void fz_post_recv(struct fz_side *s);
/* Shut the system down and set it up again as fz_setup does: for a target whose input left
 * hcasim2's driver out of step with the device. Every handle from before is gone. */
void fz_reboot(void);
/* After an input: the simulation did not halt, and the bystander moves a message and its
 * completion; otherwise abort naming what broke. Drains the victims' CQs and takes every
 * victim QP that an input moved out of RTS back to RTS, so the next input finds them as the
 * first did. */
void fz_after_input(void);
/* The victims as the first input found them (what fz_after_input does with fz_heal_victims):
 * drained, in RTS (all: taken through RESET to RTS again even if they are), four receives
 * posted. false if hcasim2's driver refused a call: an input left it out of step with its
 * device. */
bool fz_heal(bool all);
/* false: leave the victims as the input left them (a target whose inputs may break hcasim2's
 * driver, such as raw MMIO to its registers). */
extern bool fz_heal_victims;
/* Write an input to this process's temporary file for what ("config"): its path, at most
 * len bytes, into path. Remove it with unlink() once read. */
void fz_write_temp(const char *what, const uint8_t *data, size_t size, char *path, size_t len);
/* Abort with a message: a finding. */
void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
