/* psn: the C twin of the responder's PSN classifier (rtl/psn.sv, docs/blocks/psn.md; IBA
 * 9.7.5.1) and its port's entry point (model/twin.h). The responder (model/resp.c) calls it
 * with each RC request and applies what comes out. */
#include "model/pkt.h"
#include "model/waves.h"

#include <string.h>

/* ---- the C twin: no state of its own, the expected PSN is the QP's ---- */

static void psn_classify(void *b, const struct hm_psn_in *in, struct hm_psn_out *out)
{
	int32_t c = hm_psn_cmp(in->psn, in->epsn);

	(void)b;
	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle;
	if (c > 0) {
		out->cls = HM_PSN_AHEAD;
		out->send_nak = !in->nak_sent;
		out->nak_sent = true;
	} else if (c < 0) {
		out->cls = HM_PSN_DUPLICATE;
		out->nak_sent = in->nak_sent;
	} else {
		out->cls = HM_PSN_EXPECTED;
		out->nak_sent = false;
	}
}

const struct hm_psn_ops hm_psn_model = {
	{ hm_twin_stateless_create, hm_twin_stateless_destroy, NULL, NULL, 0, NULL, NULL },
	psn_classify
};

/* ---- the port ---- */

HM_TWIN_OP(psn, classify, hm_psn_in, hm_psn_out, hm_waves_psn, NULL,
	   HM_TWIN_FIELD(struct hm_psn_out, cycle), HM_TWIN_FIELD(struct hm_psn_out, cls),
	   HM_TWIN_FIELD(struct hm_psn_out, send_nak), HM_TWIN_FIELD(struct hm_psn_out, nak_sent));

void hm_psn_classify(struct hm_dev *d, const struct hm_psn_in *in, struct hm_psn_out *out)
{
	struct hm_psn_out rtl;

	hm_twin_call(d, &psn_classify_op, in->cycle, in, out, &rtl);
}
