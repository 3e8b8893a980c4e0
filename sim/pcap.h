/* pcap: capture files in the pcapng format (IETF draft-ietf-opsawg-pcapng), written by the link
 * tap and the internal loopback, read by hcasim-pcapcheck and the tests. A file is one section:
 * a Section Header Block, one Interface Description Block (the link type, snaplen 65535 and
 * if_tsresol 9: timestamps in nanoseconds), then one Enhanced Packet Block per frame. A frame
 * may carry comments (opt_comment), which tshark shows as frame.comment: the link tap marks
 * the frames a fault dropped, corrupted, duplicated, delayed, held back or lost with the link.
 *
 * Contract: records are written in the order sim_pcap_write is called; the caller orders them
 * by time. Times are simulated picoseconds, truncated to nanoseconds in the file. Native IB
 * packets go into LINKTYPE_WIRESHARK_UPPER_PDU (252) files, each record prefixed with the
 * exported-PDU tags that name the "infiniband" dissector (tshark 4.0 has no dissector for
 * LINKTYPE_INFINIBAND, 247); Ethernet frames go into LINKTYPE_ETHERNET (1) files as they are.
 * The reader also reads the older libpcap format (either byte order, micro- or nanoseconds). */
#ifndef SIM_PCAP_H
#define SIM_PCAP_H

#include "sim/kernel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sim_pcap_linktype {
	SIM_PCAP_ETHERNET = 1,	  /* Ethernet II frames without FCS */
	SIM_PCAP_USER0 = 147,	  /* raw IB packets (read only; tshark needs a user DLT) */
	SIM_PCAP_UPPER_PDU = 252, /* exported PDU: tags, then an IB packet (LRH ... VCRC) */
};

#define SIM_PCAP_SNAPLEN 65535u
/* The bytes of a capture without a frame: the Section Header Block (with shb_userappl
 * "hcasim", 44 bytes) and the Interface Description Block (with if_tsresol, 32 bytes). */
#define SIM_PCAP_HEADER_BYTES 76u
#define SIM_PCAP_MAX_COMMENTS 8 /* per frame, read back */

struct sim_pcap;

/* Create path (truncating it) for records of linktype. 0 or -errno. */
int sim_pcap_open(struct sim_pcap **out, const char *path, enum sim_pcap_linktype linktype);
/* Append one frame sent at t_ps. Bytes past the snaplen are not stored (orig_len keeps the
 * length). 0 or -errno (the first write error is also returned by sim_pcap_close). */
int sim_pcap_write(struct sim_pcap *w, sim_time_t t_ps, const uint8_t *frame, size_t len);
/* The same with ncomments comments (UTF-8, each cut at 65535 bytes), one opt_comment each. */
int sim_pcap_write_comments(struct sim_pcap *w, sim_time_t t_ps, const uint8_t *frame, size_t len,
			    const char *const *comments, unsigned ncomments);
/* Flush and close; 0 or the first -errno seen. NULL is allowed. */
int sim_pcap_close(struct sim_pcap *w);

/* Reading: pcapng (either byte order; the first interface's link type; if_tsresol powers of
 * ten or of two) or libpcap (either byte order, microsecond or nanosecond magic). */
struct sim_pcap_reader;

struct sim_pcap_rec {
	uint64_t t_ns; /* timestamp */
	const uint8_t
	    *data;	 /* the frame (after the exported-PDU tags); valid until the next read */
	size_t len;	 /* bytes at data */
	size_t orig_len; /* frame length on the wire (len < orig_len: cut at the snaplen) */
	uint64_t off;	 /* where data starts in the file (byte offset) */
	char proto[32];	 /* UPPER_PDU: the dissector named by the tags, else "" */
	const char *comments[SIM_PCAP_MAX_COMMENTS]; /* pcapng opt_comment, NUL-terminated */
	unsigned ncomments;			     /* of them (more are not kept) */
};

int sim_pcap_reader_open(struct sim_pcap_reader **out, const char *path);
uint32_t sim_pcap_reader_linktype(const struct sim_pcap_reader *r);
/* Whether the file is pcapng (else libpcap). */
bool sim_pcap_reader_is_ng(const struct sim_pcap_reader *r);
/* 1 and *rec filled, 0 at the end of the file, -EPROTO for a malformed record (the reader
 * cannot go on after it), -errno for a read error. pcapng blocks other than packets are
 * skipped. */
int sim_pcap_reader_next(struct sim_pcap_reader *r, struct sim_pcap_rec *rec);
void sim_pcap_reader_close(struct sim_pcap_reader *r);

#endif
