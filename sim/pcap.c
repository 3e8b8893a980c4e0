/* pcap: libpcap capture files, written by the link tap and read by hcasim-pcapcheck. Format:
 * the libpcap file format (nanosecond variant); the exported-PDU tags are Wireshark's
 * (epan/exported_pdu.h: big-endian 16-bit tag and length, tag 12 = protocol name, tag 0 = end). */
#include "sim/pcap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	PCAP_MAGIC_NS = 0xa1b23c4d,
	PCAP_MAGIC_US = 0xa1b2c3d4,
	PCAP_HDR_BYTES = 24,
	PCAP_REC_BYTES = 16,
	EXP_PDU_TAG_END = 0,
	EXP_PDU_TAG_PROTO_NAME = 12,
	READ_MAX_BYTES = 1 << 18, /* larger records are taken as corruption */
};

/* "infiniband" padded with NULs to a multiple of 4 bytes, as Wireshark writes it. */
/* clang-format off */
static const uint8_t ib_pdu_tags[] = {
	0, EXP_PDU_TAG_PROTO_NAME, 0, 12, 'i', 'n', 'f', 'i', 'n', 'i', 'b', 'a', 'n', 'd', 0, 0,
	0, EXP_PDU_TAG_END,        0, 0,
};
/* clang-format on */

struct sim_pcap {
	FILE *f;			 /* the file */
	enum sim_pcap_linktype linktype; /* of every record */
	int err;			 /* first write error, -errno */
};

static void put_le32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void put_le16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static int put(struct sim_pcap *w, const void *b, size_t n)
{
	if (!w->err && n && fwrite(b, 1, n, w->f) != n)
		w->err = errno ? -errno : -EIO;
	return w->err;
}

int sim_pcap_open(struct sim_pcap **out, const char *path, enum sim_pcap_linktype linktype)
{
	struct sim_pcap *w;
	uint8_t h[PCAP_HDR_BYTES];

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->f = fopen(path, "wb");
	if (!w->f) {
		int err = -errno;

		free(w);
		return err;
	}
	w->linktype = linktype;
	/* Written little-endian: magic, version 2.4, thiszone 0, sigfigs 0, snaplen, linktype. */
	put_le32(h, PCAP_MAGIC_NS);
	put_le16(h + 4, 2);
	put_le16(h + 6, 4);
	put_le32(h + 8, 0);
	put_le32(h + 12, 0);
	put_le32(h + 16, SIM_PCAP_SNAPLEN);
	put_le32(h + 20, linktype);
	if (put(w, h, sizeof(h))) {
		int err = w->err;

		fclose(w->f);
		free(w);
		return err;
	}
	*out = w;
	return 0;
}

int sim_pcap_write(struct sim_pcap *w, sim_time_t t_ps, const uint8_t *frame, size_t len)
{
	size_t pre = w->linktype == SIM_PCAP_UPPER_PDU ? sizeof(ib_pdu_tags) : 0;
	size_t orig = pre + len, incl = orig < SIM_PCAP_SNAPLEN ? orig : SIM_PCAP_SNAPLEN;
	uint64_t t_ns = t_ps / SIM_PS_PER_NS; /* truncated to the nanosecond */
	uint8_t h[PCAP_REC_BYTES];

	put_le32(h, (uint32_t)(t_ns / 1000000000u));
	put_le32(h + 4, (uint32_t)(t_ns % 1000000000u));
	put_le32(h + 8, (uint32_t)incl);
	put_le32(h + 12, (uint32_t)(orig > UINT32_MAX ? UINT32_MAX : orig));
	put(w, h, sizeof(h));
	put(w, ib_pdu_tags, pre);
	return put(w, frame, incl - pre);
}

int sim_pcap_close(struct sim_pcap *w)
{
	int err;

	if (!w)
		return 0;
	err = w->err;
	if (fclose(w->f) && !err)
		err = errno ? -errno : -EIO;
	free(w);
	return err;
}

/* ---- reading ---- */

struct sim_pcap_reader {
	FILE *f;	   /* the file */
	bool swap;	   /* file written in the other byte order */
	bool ns;	   /* nanosecond timestamps */
	uint32_t linktype; /* of every record */
	uint8_t *buf;	   /* the current record */
};

static uint32_t rd32(const struct sim_pcap_reader *r, const uint8_t *b)
{
	uint32_t v =
	    (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;

	return r->swap ? __builtin_bswap32(v) : v;
}

int sim_pcap_reader_open(struct sim_pcap_reader **out, const char *path)
{
	struct sim_pcap_reader *r;
	uint8_t h[PCAP_HDR_BYTES];
	uint32_t magic;
	int err = -EPROTO;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->buf = malloc(READ_MAX_BYTES);
	if (!r->buf) {
		err = -ENOMEM;
		goto err_free;
	}
	r->f = fopen(path, "rb");
	if (!r->f) {
		err = -errno;
		goto err_free;
	}
	if (fread(h, 1, sizeof(h), r->f) != sizeof(h))
		goto err_close;
	magic = rd32(r, h);
	if (magic == __builtin_bswap32(PCAP_MAGIC_NS) ||
	    magic == __builtin_bswap32(PCAP_MAGIC_US)) {
		r->swap = true;
		magic = __builtin_bswap32(magic);
	}
	if (magic != PCAP_MAGIC_NS && magic != PCAP_MAGIC_US)
		goto err_close;
	r->ns = magic == PCAP_MAGIC_NS;
	r->linktype = rd32(r, h + 20) & 0xffff; /* the upper bits carry FCS flags */
	*out = r;
	return 0;

err_close:
	fclose(r->f);
err_free:
	free(r->buf);
	free(r);
	return err;
}

uint32_t sim_pcap_reader_linktype(const struct sim_pcap_reader *r)
{
	return r->linktype;
}

/* Strip the exported-PDU tags in front of the packet, noting the protocol name. */
static int strip_pdu_tags(struct sim_pcap_rec *rec)
{
	size_t off = 0;

	for (;;) {
		uint16_t tag, tlen;

		if (rec->len - off < 4)
			return -EPROTO;
		tag = (uint16_t)(rec->data[off] << 8 | rec->data[off + 1]);
		tlen = (uint16_t)(rec->data[off + 2] << 8 | rec->data[off + 3]);
		off += 4;
		if (rec->len - off < tlen)
			return -EPROTO;
		if (tag == EXP_PDU_TAG_PROTO_NAME) {
			size_t n = tlen < sizeof(rec->proto) - 1 ? tlen : sizeof(rec->proto) - 1;

			memcpy(rec->proto, rec->data + off, n);
			rec->proto[n] = 0;
		}
		off += tlen;
		if (tag == EXP_PDU_TAG_END)
			break;
	}
	rec->data += off;
	rec->len -= off;
	rec->orig_len = rec->orig_len >= off ? rec->orig_len - off : 0;
	return 0;
}

int sim_pcap_reader_next(struct sim_pcap_reader *r, struct sim_pcap_rec *rec)
{
	uint8_t h[PCAP_REC_BYTES];
	size_t n = fread(h, 1, sizeof(h), r->f);
	uint32_t incl;

	memset(rec, 0, sizeof(*rec));
	if (n == 0)
		return ferror(r->f) ? -EIO : 0;
	if (n != sizeof(h))
		return -EPROTO;
	incl = rd32(r, h + 8);
	if (incl > READ_MAX_BYTES)
		return -EPROTO;
	if (fread(r->buf, 1, incl, r->f) != incl)
		return -EPROTO;
	rec->t_ns =
	    (uint64_t)rd32(r, h) * 1000000000u + (uint64_t)rd32(r, h + 4) * (r->ns ? 1u : 1000u);
	rec->data = r->buf;
	rec->len = incl;
	rec->orig_len = rd32(r, h + 12);
	if (r->linktype == SIM_PCAP_UPPER_PDU)
		return strip_pdu_tags(rec) ? -EPROTO : 1;
	return 1;
}

void sim_pcap_reader_close(struct sim_pcap_reader *r)
{
	if (!r)
		return;
	fclose(r->f);
	free(r->buf);
	free(r);
}
