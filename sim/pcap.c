/* pcap: pcapng capture files, written by the link tap and read by hcasim-pcapcheck (and the
 * older libpcap files, read only). Formats: pcapng as in draft-ietf-opsawg-pcapng (Section
 * Header Block 0x0a0d0d0a, Interface Description Block 1, Enhanced Packet Block 6; options as
 * code, length, value padded to 32 bits; opt_comment 1, shb_userappl 4, if_tsresol 9), and the
 * libpcap file format. The exported-PDU tags are Wireshark's (epan/exported_pdu.h: big-endian
 * 16-bit tag and length, tag 12 = protocol name, tag 0 = end). Written little-endian. */
#include "sim/pcap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	NG_SHB = 0x0a0d0d0a, /* Section Header Block */
	NG_IDB = 1,	     /* Interface Description Block */
	NG_EPB = 6,	     /* Enhanced Packet Block */
	NG_BOM = 0x1a2b3c4d, /* byte-order magic */
	OPT_END = 0,	     /* opt_endofopt */
	OPT_COMMENT = 1,     /* opt_comment */
	OPT_USERAPPL = 4,    /* shb_userappl */
	OPT_TSRESOL = 9,     /* if_tsresol */
	PCAP_MAGIC_NS = 0xa1b23c4d,
	PCAP_MAGIC_US = 0xa1b2c3d4,
	PCAP_HDR_BYTES = 24,
	PCAP_REC_BYTES = 16,
	EXP_PDU_TAG_END = 0,
	EXP_PDU_TAG_PROTO_NAME = 12,
	READ_MAX_BYTES = 1 << 18, /* larger records are taken as corruption */
	NOTES_BYTES = 4096,	  /* the comments of one record, read back */
};

/* "infiniband" padded with NULs to a multiple of 4 bytes, as Wireshark writes it. */
/* clang-format off */
static const uint8_t ib_pdu_tags[] = {
	0, EXP_PDU_TAG_PROTO_NAME, 0, 12, 'i', 'n', 'f', 'i', 'n', 'i', 'b', 'a', 'n', 'd', 0, 0,
	0, EXP_PDU_TAG_END,        0, 0,
};
/* clang-format on */

static const char userappl[] = "hcasim";

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

static size_t pad4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

static int put(struct sim_pcap *w, const void *b, size_t n)
{
	if (!w->err && n && fwrite(b, 1, n, w->f) != n)
		w->err = errno ? -errno : -EIO;
	return w->err;
}

static void put_u32(struct sim_pcap *w, uint32_t v)
{
	uint8_t b[4];

	put_le32(b, v);
	put(w, b, 4);
}

/* One option: code, length, the value and its padding to 32 bits. */
static void put_opt(struct sim_pcap *w, uint16_t code, const void *v, size_t len)
{
	static const uint8_t zero[4];
	uint8_t h[4];

	put_le16(h, code);
	put_le16(h + 2, (uint16_t)len);
	put(w, h, 4);
	put(w, v, len);
	put(w, zero, pad4(len) - len);
}

int sim_pcap_open(struct sim_pcap **out, const char *path, enum sim_pcap_linktype linktype)
{
	struct sim_pcap *w;
	uint8_t h[16];
	uint32_t shb = 24 + 4 + (uint32_t)pad4(sizeof(userappl) - 1) + 4 + 4, idb = 16 + 8 + 4 + 4;
	const uint8_t tsresol = 9; /* 10^-9 s */

	_Static_assert(24 + 4 + 8 + 4 + 4 + 16 + 8 + 4 + 4 == SIM_PCAP_HEADER_BYTES,
		       "SIM_PCAP_HEADER_BYTES is the SHB and the IDB");
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
	/* Section Header Block: version 1.0, section length unknown (-1), shb_userappl. */
	put_u32(w, NG_SHB);
	put_u32(w, shb);
	put_u32(w, NG_BOM);
	put_le16(h, 1);
	put_le16(h + 2, 0);
	put(w, h, 4);
	put_u32(w, 0xffffffffu);
	put_u32(w, 0xffffffffu);
	put_opt(w, OPT_USERAPPL, userappl, sizeof(userappl) - 1);
	put_opt(w, OPT_END, NULL, 0);
	put_u32(w, shb);
	/* Interface Description Block: link type, snaplen, if_tsresol 9 (nanoseconds). */
	put_u32(w, NG_IDB);
	put_u32(w, idb);
	put_le16(h, (uint16_t)linktype);
	put_le16(h + 2, 0);
	put_le32(h + 4, SIM_PCAP_SNAPLEN);
	put(w, h, 8);
	put_opt(w, OPT_TSRESOL, &tsresol, 1);
	put_opt(w, OPT_END, NULL, 0);
	put_u32(w, idb);
	if (w->err) {
		int err = w->err;

		fclose(w->f);
		free(w);
		return err;
	}
	*out = w;
	return 0;
}

int sim_pcap_write_comments(struct sim_pcap *w, sim_time_t t_ps, const uint8_t *frame, size_t len,
			    const char *const *comments, unsigned ncomments)
{
	static const uint8_t zero[4];
	size_t pre = w->linktype == SIM_PCAP_UPPER_PDU ? sizeof(ib_pdu_tags) : 0;
	size_t orig = pre + len, incl = orig < SIM_PCAP_SNAPLEN ? orig : SIM_PCAP_SNAPLEN;
	size_t opts = 0, total;
	uint64_t t_ns = t_ps / SIM_PS_PER_NS; /* truncated to the nanosecond */

	for (unsigned i = 0; i < ncomments; i++) {
		size_t n = strlen(comments[i]);

		opts += 4 + pad4(n < 0xffff ? n : 0xffff);
	}
	if (opts)
		opts += 4; /* opt_endofopt */
	total = 28 + pad4(incl) + opts + 4;
	/* Enhanced Packet Block: interface 0, timestamp (high, low), captured and wire lengths. */
	put_u32(w, NG_EPB);
	put_u32(w, (uint32_t)total);
	put_u32(w, 0);
	put_u32(w, (uint32_t)(t_ns >> 32));
	put_u32(w, (uint32_t)t_ns);
	put_u32(w, (uint32_t)incl);
	put_u32(w, (uint32_t)(orig > UINT32_MAX ? UINT32_MAX : orig));
	put(w, ib_pdu_tags, pre);
	put(w, frame, incl - pre);
	put(w, zero, pad4(incl) - incl);
	for (unsigned i = 0; i < ncomments; i++) {
		size_t n = strlen(comments[i]);

		put_opt(w, OPT_COMMENT, comments[i], n < 0xffff ? n : 0xffff);
	}
	if (opts)
		put_opt(w, OPT_END, NULL, 0);
	put_u32(w, (uint32_t)total);
	return w->err;
}

int sim_pcap_write(struct sim_pcap *w, sim_time_t t_ps, const uint8_t *frame, size_t len)
{
	return sim_pcap_write_comments(w, t_ps, frame, len, NULL, 0);
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
	FILE *f;		 /* the file */
	bool ng;		 /* pcapng, else libpcap */
	bool swap;		 /* file written in the other byte order */
	bool ns;		 /* libpcap: nanosecond timestamps */
	uint32_t linktype;	 /* of every record (pcapng: of the first interface) */
	bool have_if;		 /* pcapng: an interface was described */
	bool opening;		 /* pcapng: reader_next stops after the first interface */
	uint64_t ts_num;	 /* pcapng: a timestamp unit is ts_num / ts_den seconds ... */
	uint64_t ts_den;	 /* ... (if_tsresol; default 10^-6) */
	uint64_t off;		 /* file offset of the next block or record */
	uint8_t *buf;		 /* the current record */
	char notes[NOTES_BYTES]; /* the current record's comments */
};

static uint32_t rd32(const struct sim_pcap_reader *r, const uint8_t *b)
{
	uint32_t v =
	    (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;

	return r->swap ? __builtin_bswap32(v) : v;
}

static uint16_t rd16(const struct sim_pcap_reader *r, const uint8_t *b)
{
	uint16_t v = (uint16_t)(b[0] | b[1] << 8);

	return r->swap ? __builtin_bswap16(v) : v;
}

/* Read n bytes at the current offset; -EPROTO on a short read. */
static int rd(struct sim_pcap_reader *r, void *b, size_t n)
{
	if (fread(b, 1, n, r->f) != n)
		return ferror(r->f) ? -EIO : -EPROTO;
	r->off += n;
	return 0;
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
	if (fread(h, 1, 12, r->f) != 12)
		goto err_close;
	magic = rd32(r, h);
	if (magic == NG_SHB) {
		/* pcapng (the block type reads the same in both byte orders) */
		struct sim_pcap_rec rec;
		int rc;

		r->ng = true;
		if (rd32(r, h + 8) != NG_BOM && rd32(r, h + 8) != __builtin_bswap32(NG_BOM))
			goto err_close;
		/* The blocks up to the first interface, for the link type; then from the start
		 * again, where reader_next reads the section header as any other block. */
		r->opening = true;
		if (fseek(r->f, 0, SEEK_SET))
			goto err_close;
		rc = sim_pcap_reader_next(r, &rec);
		r->opening = false;
		if (rc < 0) {
			err = rc;
			goto err_close;
		}
		if (fseek(r->f, 0, SEEK_SET))
			goto err_close;
		r->off = 0;
		*out = r;
		return 0;
	}
	if (fread(h + 12, 1, sizeof(h) - 12, r->f) != sizeof(h) - 12)
		goto err_close;
	if (magic == __builtin_bswap32(PCAP_MAGIC_NS) ||
	    magic == __builtin_bswap32(PCAP_MAGIC_US)) {
		r->swap = true;
		magic = __builtin_bswap32(magic);
	}
	if (magic != PCAP_MAGIC_NS && magic != PCAP_MAGIC_US)
		goto err_close;
	r->ns = magic == PCAP_MAGIC_NS;
	r->linktype = rd32(r, h + 20) & 0xffff; /* the upper bits carry FCS flags */
	r->off = sizeof(h);
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

bool sim_pcap_reader_is_ng(const struct sim_pcap_reader *r)
{
	return r->ng;
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
	rec->off += off;
	rec->orig_len = rec->orig_len >= off ? rec->orig_len - off : 0;
	return 0;
}

static int finish(struct sim_pcap_reader *r, struct sim_pcap_rec *rec)
{
	if (r->linktype == SIM_PCAP_UPPER_PDU)
		return strip_pdu_tags(rec) ? -EPROTO : 1;
	return 1;
}

static int next_pcap(struct sim_pcap_reader *r, struct sim_pcap_rec *rec)
{
	uint8_t h[PCAP_REC_BYTES];
	size_t n = fread(h, 1, sizeof(h), r->f);
	uint32_t incl;

	if (n == 0)
		return ferror(r->f) ? -EIO : 0;
	if (n != sizeof(h))
		return -EPROTO;
	r->off += sizeof(h);
	incl = rd32(r, h + 8);
	if (incl > READ_MAX_BYTES)
		return -EPROTO;
	rec->off = r->off;
	if (rd(r, r->buf, incl))
		return -EPROTO;
	rec->t_ns =
	    (uint64_t)rd32(r, h) * 1000000000u + (uint64_t)rd32(r, h + 4) * (r->ns ? 1u : 1000u);
	rec->data = r->buf;
	rec->len = incl;
	rec->orig_len = rd32(r, h + 12);
	return finish(r, rec);
}

/* if_tsresol: 10^-v seconds, or 2^-(v & 0x7f) with the top bit set. */
static int set_tsresol(struct sim_pcap_reader *r, uint8_t v)
{
	unsigned e = v & 0x7f;

	if (v & 0x80) {
		if (e > 63)
			return -EPROTO;
		r->ts_num = 1;
		r->ts_den = (uint64_t)1 << e;
		return 0;
	}
	if (e > 19)
		return -EPROTO;
	r->ts_num = 1;
	r->ts_den = 1;
	while (e--)
		r->ts_den *= 10;
	return 0;
}

static uint64_t ts_to_ns(const struct sim_pcap_reader *r, uint64_t ts)
{
	unsigned __int128 ns = (unsigned __int128)ts * r->ts_num * 1000000000u;

	return (uint64_t)(ns / r->ts_den);
}

/* The options of a block body from opts to end: comments kept, if_tsresol taken. */
static int options(struct sim_pcap_reader *r, const uint8_t *opts, const uint8_t *end,
		   uint32_t type, struct sim_pcap_rec *rec)
{
	size_t used = 0;

	while (end - opts >= 4) {
		uint16_t code = rd16(r, opts), len = rd16(r, opts + 2);

		opts += 4;
		if (code == OPT_END)
			break;
		if ((size_t)(end - opts) < len)
			return -EPROTO;
		if (type == NG_IDB && code == OPT_TSRESOL && len == 1 && set_tsresol(r, opts[0]))
			return -EPROTO;
		if (type == NG_EPB && code == OPT_COMMENT &&
		    rec->ncomments < SIM_PCAP_MAX_COMMENTS && used + len + 1 <= sizeof(r->notes)) {
			memcpy(r->notes + used, opts, len);
			r->notes[used + len] = 0;
			rec->comments[rec->ncomments++] = r->notes + used;
			used += (size_t)len + 1;
		}
		opts += pad4(len) <= (size_t)(end - opts) ? pad4(len) : (size_t)(end - opts);
	}
	return 0;
}

static int next_ng(struct sim_pcap_reader *r, struct sim_pcap_rec *rec)
{
	for (;;) {
		uint8_t h[8];
		uint64_t at = r->off;
		uint32_t type, total;
		size_t n = fread(h, 1, sizeof(h), r->f);
		uint8_t *b = r->buf;

		if (n == 0)
			return ferror(r->f) ? -EIO : 0;
		if (n != sizeof(h))
			return -EPROTO;
		r->off += sizeof(h);
		type = rd32(r, h);
		if (type == NG_SHB) {
			/* a new section: its byte order first */
			uint8_t bom[4];

			if (fread(bom, 1, 4, r->f) != 4)
				return -EPROTO;
			r->swap = false;
			if (rd32(r, bom) == __builtin_bswap32(NG_BOM))
				r->swap = true;
			else if (rd32(r, bom) != NG_BOM)
				return -EPROTO;
			r->off += 4;
			type = rd32(r, h);
			total = rd32(r, h + 4);
			if (total < 28 || total % 4 || total > READ_MAX_BYTES)
				return -EPROTO;
			if (rd(r, b, total - 12))
				return -EPROTO;
			/* the interfaces are the new section's own */
			r->have_if = false;
			continue;
		}
		total = rd32(r, h + 4);
		if (total < 12 || total % 4 || total > READ_MAX_BYTES)
			return -EPROTO;
		if (rd(r, b, total - 8))
			return -EPROTO;
		if (rd32(r, b + total - 12) != total)
			return -EPROTO; /* the trailing length must repeat the leading one */
		if (type == NG_IDB) {
			if (total < 20)
				return -EPROTO;
			if (!r->have_if) {
				r->linktype = rd16(r, b);
				r->have_if = true;
				r->ts_num = 1;
				r->ts_den = 1000000; /* the default if_tsresol, microseconds */
				if (options(r, b + 8, b + total - 12, NG_IDB, NULL))
					return -EPROTO;
				if (r->opening)
					return 0;
			}
			continue;
		}
		if (type != NG_EPB)
			continue; /* name resolution, statistics, ...: not packets */
		if (!r->have_if || total < 32)
			return -EPROTO;
		{
			uint32_t incl = rd32(r, b + 12), orig = rd32(r, b + 16);
			uint64_t ts = (uint64_t)rd32(r, b + 4) << 32 | rd32(r, b + 8);

			if (rd32(r, b) != 0)
				return -EPROTO; /* one interface is all this reader follows */
			if (20 + pad4(incl) > total - 12)
				return -EPROTO;
			rec->t_ns = ts_to_ns(r, ts);
			rec->data = b + 20;
			rec->len = incl;
			rec->orig_len = orig;
			rec->off = at + 8 + 20;
			if (options(r, b + 20 + pad4(incl), b + total - 12, NG_EPB, rec))
				return -EPROTO;
		}
		return finish(r, rec);
	}
}

int sim_pcap_reader_next(struct sim_pcap_reader *r, struct sim_pcap_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
	return r->ng ? next_ng(r, rec) : next_pcap(r, rec);
}

void sim_pcap_reader_close(struct sim_pcap_reader *r)
{
	if (!r)
		return;
	fclose(r->f);
	free(r->buf);
	free(r);
}
