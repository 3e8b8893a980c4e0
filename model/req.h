/* req: the requester (IBA 9.7.1): one packet of a QP at a time, as the arbiter hands it
 * QPs. */
#ifndef HM_REQ_H
#define HM_REQ_H

#include "model/ctx.h"

/* Send qp's next packet from *t (advanced to when it is handed to the port): false if it
 * cannot send now (nothing to send, a fence, max_rd_atomic, an RNR wait, its WQE being
 * read), in which case it comes back to the arbiter with its next doorbell, ACK or timer. */
bool hm_req_run(struct hm_dev *d, struct hm_qp *qp, sim_time_t *t);
/* After a packet: true if qp has more to send now (back into the arbiter). */
bool hm_req_more(const struct hm_qp *qp);
/* The completer retired qp's oldest WQE f with status (the sq_retired wire): if it is the
 * message being sent again, the rest of it stays unsent; a READ or atomic frees its slot of
 * max_rd_atomic. */
void hm_req_retired(struct hm_dev *d, struct hm_qp *qp, const struct hm_flight *f,
		    uint8_t status);
/* The requester's part of a QP (model/ctx.h) as the QP commands change it: created with the
 * QP, destroyed with it, cleared by RESET, emptied by a flush (the WQEs not yet started are
 * done), and the send PSN a modify loads. */
void hm_req_create(struct hm_qp *qp);
void hm_req_destroy(struct hm_qp *qp);
void hm_req_reset(struct hm_qp *qp);
void hm_req_flush(struct hm_qp *qp);
void hm_req_modify(struct hm_qp *qp, const struct hca_qp_attr *a, uint32_t mask);
/* Go back to psn (go-back-N, IBA 9.7.5.2): resend from the WQE holding it, inside the message.
 * True if anything was sent at or after psn (the arbiter then takes the QP back). */
bool hm_req_rewind(struct hm_dev *d, struct hm_qp *qp, uint32_t psn);

/* The names of the engine's steps (REQ_STEPS), *n of them in table order, as `step.req` trace
 * events name them; the engine stops in SKIP, FAILED or SENT, which are not traced. */
const char *const *hm_req_step_names(size_t *n);

#endif
