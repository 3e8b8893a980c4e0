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
/* Go back to psn (go-back-N, IBA 9.7.5.2): resend from the WQE holding it, inside the message.
 * True if anything was sent at or after psn (the arbiter then takes the QP back). */
bool hm_req_rewind(struct hm_dev *d, struct hm_qp *qp, uint32_t psn);

#endif
