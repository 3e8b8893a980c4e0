/* port: the physical ports — link training, the SMA the subnet manager programs, and the
 * transmit path (frames onto the link, or turned around inside the HCA when addressed to one
 * of its own ports: the rx_frame wire). */
#ifndef HM_PORT_H
#define HM_PORT_H

#include "model/ctx.h"

void hm_port_init(struct hm_dev *d);
void hm_port_start(struct hm_dev *d, sim_time_t t); /* link training from time t */
void hm_port_stop(struct hm_dev *d);
void hm_port_info(const struct hm_port *p, struct hca_port_info *out);
/* Hand len bytes to port's receive path as if they came off its link with a good FCS
 * (hcasim_inject_frame; port checked by the caller). */
void hm_port_inject(struct hm_dev *d, unsigned port, const uint8_t *frame, size_t len);
/* Connect a port to one side of a link. */
void hm_port_attach(struct hm_dev *d, unsigned port, struct sim_link *l, int side);
/* MAC address of the RoCE port owning IPv4-mapped GID gid (the fabric's ARP). */
void hm_roce_mac_of(const uint8_t gid[16], uint8_t mac[6]);
/* enum hm_link_layer of the port. */
unsigned hm_port_ll(const struct hm_port *p);
/* Capture the device's looped-back frames to path (NULL: stop); the file is created at the
 * first such frame. 0 or -errno. */
int hm_port_loopback_pcap(struct hm_dev *d, const char *path);


/* Build and transmit a packet from port (1-based): the frame is built from t, and its payload
 * starts on the wire no earlier than need (0: no constraint; cut-through, see hm_ct). Returns
 * the time its last bit leaves. */
sim_time_t hm_port_send(struct hm_dev *d, unsigned port, struct hm_pkt *p, sim_time_t t,
			sim_time_t need);
/* Frames by reference from the gather on: a link buffer for the frame of p (its headers and
 * payload length set) on port, into which the sender gathers the payload — at the address
 * returned, which p->payload is set to — so that hm_port_send builds the headers around it and
 * hands the buffer on instead of copying the payload twice (p->frame: the buffer, which
 * hm_port_send takes over). The headers must not change in between, but for their values; a
 * packet not sent after all gives its buffer back with hm_port_frame_free. */
uint8_t *hm_port_frame_new(struct hm_dev *d, unsigned port, struct hm_pkt *p);
void hm_port_frame_free(struct hm_pkt *p);
/* Wire bytes that follow a packet's payload on port: ICRC and VCRC (IB), ICRC, FCS and the
 * inter-frame gap (RoCE). */
uint32_t hm_port_tail_bytes(const struct hm_dev *d, unsigned port);
/* When the port's transmitter is free. */
sim_time_t hm_port_tx_free(struct hm_dev *d, unsigned port);

#endif
