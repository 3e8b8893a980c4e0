/* hcasim-pcapcheck: check the CRCs of every frame in a capture — the ICRC (IBA 7.8.1 / RoCEv2
 * A17.4.3.1), on native IB the VCRC (IBA 7.8.2), on RoCE the IPv4 header checksum.
 *   hcasim-pcapcheck FILE.pcap
 * Reads pcapng (as the link tap writes it) and libpcap files of LINKTYPE_ETHERNET (RoCEv2) and
 * LINKTYPE_WIRESHARK_UPPER_PDU / USER0 (native IB). Prints one line per bad frame, one line
 * per comment a frame carries (the marks of the faults that hit it: "frame N: comment: ..."),
 * then "N frames, M bad"; exits 0 only if every frame is good, 1 if some are not, 2 when the
 * file cannot be read at all. A comment is not a defect: the tap records a frame as it was
 * sent. tshark shows these CRCs but does not check them. */
#include "model/pkt.h"
#include "sim/pcap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The CRC bytes as they appear on the wire (tshark shows them in this order too). */
static void wire_hex(char *out, const uint8_t *b, int n)
{
	for (int i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void le_hex(char *out, uint32_t v, int n)
{
	uint8_t b[4];

	for (int i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	wire_hex(out, b, n);
}

/* Say which check failed for a frame hm_pkt_check_crcs rejected with -EBADMSG. */
static void explain_bad(uint64_t n, enum hm_link_layer ll, const uint8_t *f, size_t len)
{
	size_t icrc_at = len - HM_ICRC_BYTES - (ll == HM_LL_IB ? HM_VCRC_BYTES : 0);
	char wire[9], calc[9];

	if (ll == HM_LL_IB) {
		wire_hex(wire, f + len - HM_VCRC_BYTES, HM_VCRC_BYTES);
		le_hex(calc, hm_pkt_vcrc(f, len), HM_VCRC_BYTES);
		if (strcmp(wire, calc)) {
			printf("frame %" PRIu64 ": bad VCRC: wire %s, computed %s (%zu bytes)\n", n,
			       wire, calc, len);
			return;
		}
	}
	wire_hex(wire, f + icrc_at, HM_ICRC_BYTES);
	le_hex(calc, hm_pkt_icrc(ll, f, len), HM_ICRC_BYTES);
	if (strcmp(wire, calc))
		printf("frame %" PRIu64 ": bad ICRC: wire %s, computed %s (%zu bytes)\n", n, wire,
		       calc, len);
	else
		printf("frame %" PRIu64 ": bad IPv4 header checksum (%zu bytes)\n", n, len);
}

int main(int argc, char **argv)
{
	struct sim_pcap_reader *r;
	struct sim_pcap_rec rec;
	enum hm_link_layer ll;
	uint64_t frames = 0, bad = 0;
	uint32_t lt;
	int err;

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: hcasim-pcapcheck FILE.pcap\n");
		return 2;
	}
	err = sim_pcap_reader_open(&r, argv[1]);
	if (err) {
		fprintf(stderr, "hcasim-pcapcheck: %s: %s\n", argv[1],
			err == -EPROTO ? "not a pcapng or pcap file" : strerror(-err));
		return 2;
	}
	lt = sim_pcap_reader_linktype(r);
	if (lt == SIM_PCAP_ETHERNET) {
		ll = HM_LL_ROCE;
	} else if (lt == SIM_PCAP_UPPER_PDU || lt == SIM_PCAP_USER0) {
		ll = HM_LL_IB;
	} else {
		fprintf(stderr,
			"hcasim-pcapcheck: %s: link type %u is neither Ethernet (1) nor "
			"InfiniBand as exported PDUs (252) or USER0 (147)\n",
			argv[1], lt);
		sim_pcap_reader_close(r);
		return 2;
	}

	while ((err = sim_pcap_reader_next(r, &rec)) > 0) {
		frames++;
		for (unsigned i = 0; i < rec.ncomments; i++)
			printf("frame %" PRIu64 ": comment: %s\n", frames, rec.comments[i]);
		if (lt == SIM_PCAP_UPPER_PDU && strcmp(rec.proto, "infiniband")) {
			printf("frame %" PRIu64 ": exported PDU for '%s', not infiniband\n", frames,
			       rec.proto);
			bad++;
		} else if (rec.len < rec.orig_len) {
			printf("frame %" PRIu64 ": cut at %zu of %zu bytes\n", frames, rec.len,
			       rec.orig_len);
			bad++;
		} else if ((err = hm_pkt_check_crcs(ll, rec.data, rec.len)) != 0) {
			if (err == -EBADMSG)
				explain_bad(frames, ll, rec.data, rec.len);
			else
				printf("frame %" PRIu64 ": malformed (%zu bytes)\n", frames,
				       rec.len);
			bad++;
		}
	}
	if (err < 0) {
		printf("frame %" PRIu64 ": unreadable record; the capture ends here\n", frames + 1);
		frames++;
		bad++;
	}
	sim_pcap_reader_close(r);
	printf("%" PRIu64 " frames, %" PRIu64 " bad\n", frames, bad);
	return bad ? 1 : 0;
}
