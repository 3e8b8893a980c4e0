/* qpc: the architected QP context image (struct hca_qpc, model/hw/formats.def) that crosses
 * PCIe between the context cache and its backing store. Packing and unpacking are driven by
 * the format's descriptor table, so a field added to formats.def without its pack and unpack
 * fails here. The slot traffic itself is tested through the device in test_firmware.c
 * (qpc_slot_*). */
#include "model/qpc.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

static const struct hca_struct_desc *qpc_desc(void)
{
	const struct hca_struct_desc *s = hca_struct_find("hca_qpc");

	cr_assert_not_null(s, "hca_qpc is not in the format tables");
	return s;
}

static bool reserved(const struct hca_field_desc *f)
{
	return !strncmp(f->name, "rsvd", 4);
}

/* Bytes of the field called name in img. */
static uint8_t *field(struct hca_qpc *img, const char *name)
{
	for (const struct hca_field_desc *f = qpc_desc()->fields; f->name; f++)
		if (!strcmp(f->name, name))
			return (uint8_t *)img + f->offset;
	cr_assert_fail("no field %s in hca_qpc", name);
	return NULL;
}

/* An image with every architected byte non-zero and different from its neighbours, then
 * brought within the rules an image obeys (flags 1, a valid type and state, ...). */
static void busy_image(struct hca_qpc *img, unsigned seed)
{
	memset(img, 0, sizeof(*img));
	for (const struct hca_field_desc *f = qpc_desc()->fields; f->name; f++)
		for (size_t i = 0; !reserved(f) && i < f->size; i++)
			((uint8_t *)img)[f->offset + i] = (uint8_t)(1 + (f->offset + i + seed) % 251);
	img->valid = img->sq_sig_all = img->has_srq = img->cur_started = img->rnr_wait = 1;
	img->nak_seen = img->rd_gap = img->timer_on = img->nak_sent = img->comm_est = 1;
	img->drained_sent = img->last_wqe_sent = img->in_msg = img->uc_drop = img->rwqe_srq = 1;
	memset(img->atomic_valid, 1, sizeof(img->atomic_valid));
	img->qp_type = HCA_QPT_UC;
	img->state = HCA_QPS_SQD;
	img->retry_left = 6;
	img->rnr_left = 7;
	img->msg_kind = 1;
	img->atomic_next = 15;
	img->sq_psn &= HCA_PSN_MASK;
	img->acked_psn &= HCA_PSN_MASK;
	img->nak_psn &= HCA_PSN_MASK;
	img->sent_psn &= HCA_PSN_MASK;
	img->epsn &= HCA_PSN_MASK;
}

Test(qpc, image_is_800_bytes_within_the_slot)
{
	cr_assert_eq(sizeof(struct hca_qpc), 800);
	cr_assert_eq(qpc_desc()->size, 800);
	cr_assert_leq(sizeof(struct hca_qpc), HM_QPC_BYTES);
}

Test(qpc, pack_unpack_round_trips_every_field)
{
	struct hca_qpc img, back;
	struct hm_qp qp;
	const char *why = NULL;

	for (unsigned seed = 0; seed < 3; seed++) {
		busy_image(&img, seed);
		memset(&qp, 0, sizeof(qp));
		cr_assert_eq(hm_qpc_unpack(&img, &qp, &why), 0, "unpack refused: %s", why);
		hm_qpc_pack(&qp, &back);
		for (const struct hca_field_desc *f = qpc_desc()->fields; f->name; f++) {
			if (reserved(f))
				continue;
			cr_assert_neq(((uint8_t *)&img)[f->offset], 0, "%s: a zero proves nothing",
				      f->name);
			cr_assert_eq(memcmp((uint8_t *)&img + f->offset,
					    (uint8_t *)&back + f->offset, f->size), 0,
				     "%s does not survive unpack and pack", f->name);
		}
		cr_assert_eq(memcmp(&img, &back, sizeof(img)), 0);
	}
	/* and the context fields land where the engines read them */
	cr_assert_eq(qp.qpn, img.qpn);
	cr_assert_eq(qp.type, img.qp_type);
	cr_assert_eq(qp.sq, img.sq_addr);
	cr_assert_eq(qp.rq, img.rq_addr);
	cr_assert_eq(qp.attr.av.dlid, img.attr.av.dlid);
	cr_assert_eq(qp.resp.atomics[3].orig, img.atomic_orig[3]);
	cr_assert_eq(qp.resp.atomics[3].psn, img.atomic_psn[3]);
	cr_assert_eq(qp.resp.atomics[3].msn, img.atomic_msn[3]);
	cr_assert(qp.resp.atomics[3].valid);
}

/* The image depends on the context fields only: two QPs equal in those and different in
 * everything else (host pointers to their SRAM buffers, counters, timer ids, cache links,
 * padding) give the same bytes, and reserved bytes are zero. */
Test(qpc, image_holds_no_host_pointers_or_on_chip_state)
{
	struct hca_qpc img, a_img, b_img;
	struct hm_qp a, b;
	const char *why = NULL;

	busy_image(&img, 7);
	memset(&a, 0xa5, sizeof(a));
	memset(&b, 0x5a, sizeof(b));
	cr_assert_eq(hm_qpc_unpack(&img, &a, &why), 0, "%s", why);
	cr_assert_eq(hm_qpc_unpack(&img, &b, &why), 0, "%s", why);
	cr_assert_neq(a.fetch.wqe_buf, b.fetch.wqe_buf);
	cr_assert_neq(a.stats.tx_pkts, b.stats.tx_pkts);
	hm_qpc_pack(&a, &a_img);
	hm_qpc_pack(&b, &b_img);
	cr_assert_eq(memcmp(&a_img, &b_img, sizeof(a_img)), 0);
	cr_assert_eq(memcmp(&a_img, &img, sizeof(img)), 0);
	for (const struct hca_field_desc *f = qpc_desc()->fields; f->name; f++)
		for (size_t i = 0; reserved(f) && i < f->size; i++)
			cr_assert_eq(((uint8_t *)&a_img)[f->offset + i], 0, "%s byte %zu", f->name, i);
}

/* An image no context can be (as a driver that overwrote the slot leaves it) is refused,
 * naming the field and the rule, and changes nothing. */
Test(qpc, unpack_rejects_an_image_no_context_has)
{
	static const struct {
		const char *field;
		size_t at;      /* byte of the field to overwrite */
		uint8_t val;
		const char *why;
	} bad[] = {
		{ "valid", 0, 0, "valid:" },
		{ "comm_est", 0, 2, "comm_est: a flag is 0 or 1" },
		{ "atomic_valid", 9, 0xff, "atomic_valid: a flag is 0 or 1" },
		{ "qp_type", 0, 1, "qp_type:" },
		{ "state", 0, HCA_QPS_COUNT, "state: not a QP state" },
		{ "retry_left", 0, 8, "retry_left:" },
		{ "rnr_left", 0, 0x80, "rnr_left:" },
		{ "msg_kind", 0, 2, "msg_kind:" },
		{ "atomic_next", 0, 16, "atomic_next:" },
		{ "sq_psn", 3, 1, "sq_psn: a PSN has 24 bits" },
		{ "epsn", 3, 0x80, "epsn: a PSN has 24 bits" },
		{ "sent_psn", 3, 1, "sent_psn:" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct hca_qpc img;
		struct hm_qp qp, before;
		const char *why = NULL;

		memset(&qp, 0x77, sizeof(qp));
		memcpy(&before, &qp, sizeof(qp));
		busy_image(&img, (unsigned)i);
		field(&img, bad[i].field)[bad[i].at] = bad[i].val;
		cr_assert_eq(hm_qpc_unpack(&img, &qp, &why), -EINVAL, "%s accepted", bad[i].field);
		cr_assert_eq(memcmp(&qp, &before, sizeof(qp)), 0, "%s: refused, yet written",
			     bad[i].field);
		cr_assert_not_null(why);
		cr_assert_eq(strncmp(why, bad[i].why, strlen(bad[i].why)), 0,
			     "%s: reason \"%s\", expected \"%s...\"", bad[i].field, why, bad[i].why);
	}
}
