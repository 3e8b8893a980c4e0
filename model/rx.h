/* rx: the ports' receive path — a frame is parsed and checked, then queued for its QP
 * (multicast: for each attached QP), and each QP's frames are handed in order to its
 * responder or completer. */
#ifndef HM_RX_H
#define HM_RX_H

#include "model/ctx.h"

/* A frame arrived at port (1-based) off its link, or turned around inside the HCA (loopback:
 * no port counter counts it): the device's rx_frame wire. */
void hm_rx_frame(struct hm_dev *d, unsigned port, uint8_t *frame, size_t len, bool fcs_ok,
		 bool loopback, bool crc_pending);
/* Drop the frames waiting for qp (destroy, reset). */
void hm_rxq_free(struct hm_qp *qp);

#endif
