/* The C twins of the blocks with an RTL twin (model/ports.h): the reference behaviour each
 * RTL block must reproduce transaction for transaction and cycle for cycle. */
#include "model/dp.h"
#include "model/pkt.h"
#include "model/ports.h"
#include "sim/kernel.h"

#include <stdlib.h>
#include <string.h>

/* ---- sched ---- */

struct sched_twin {
	uint32_t nqps;    /* QPNs 0 .. nqps-1 */
	uint8_t *pending; /* one byte per QPN: in the FIFO */
	uint32_t *fifo;   /* ring of nqps entries: each QP is in it at most once */
	uint32_t head, len;
};

static void *sched_create(struct hm_dev *d, uint32_t nqps)
{
	struct sched_twin *s = calloc(1, sizeof(*s));

	(void)d;
	SIM_ASSERT(s != NULL, "out of memory");
	s->nqps = nqps;
	s->pending = calloc(nqps, 1);
	s->fifo = calloc(nqps, sizeof(*s->fifo));
	SIM_ASSERT(s->pending && s->fifo, "out of memory for the arbiter of %u QPs", nqps);
	return s;
}

static void sched_destroy(void *b)
{
	struct sched_twin *s = b;

	if (!s)
		return;
	free(s->pending);
	free(s->fifo);
	free(s);
}

static bool sched_enqueue(struct sched_twin *s, uint32_t qpn)
{
	if (qpn >= s->nqps || s->pending[qpn])
		return false;
	s->fifo[(s->head + s->len++) % s->nqps] = qpn;
	s->pending[qpn] = 1;
	return true;
}

static void sched_doorbell(void *b, const struct hm_sched_db_in *in, struct hm_sched_db_out *out)
{
	struct sched_twin *s = b;

	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle + in->lat;
	if (in->state == HCA_QPS_RESET || in->state == HCA_QPS_INIT || in->state == HCA_QPS_RTR) {
		out->verdict = HM_SCHED_BAD_STATE;
		return;
	}
	out->new_pi = hm_extend16(in->sq_pi, in->pi16);
	if (out->new_pi - in->sq_done > in->sq_entries) {
		out->verdict = HM_SCHED_BAD_INDEX;
		out->new_pi = 0;
		return;
	}
	if (in->state == HCA_QPS_ERR || in->state == HCA_QPS_SQE) {
		out->verdict = HM_SCHED_FLUSH;
		return;
	}
	out->verdict = HM_SCHED_QUEUED;
	sched_enqueue(s, in->qpn);
}

static void sched_push(void *b, const struct hm_sched_push_in *in, struct hm_sched_push_out *out)
{
	out->cycle = in->cycle;
	out->queued = sched_enqueue(b, in->qpn);
}

static void sched_pop(void *b, const struct hm_sched_pop_in *in, struct hm_sched_pop_out *out)
{
	struct sched_twin *s = b;

	out->cycle = in->cycle;
	out->valid = s->len > 0;
	out->qpn = 0;
	if (!out->valid)
		return;
	out->qpn = s->fifo[s->head];
	s->head = (s->head + 1) % s->nqps;
	s->len--;
	s->pending[out->qpn] = 0;
}

const struct hm_sched_ops hm_sched_model = { sched_create, sched_destroy, sched_doorbell,
					     sched_push, sched_pop, NULL, NULL, 0, NULL };

/* ---- cqe ---- */

static void *cqe_create(struct hm_dev *d)
{
	return d; /* no state of its own: the CQ context is the caller's */
}

static void cqe_destroy(void *b)
{
	(void)b;
}

static void cqe_post(void *b, const struct hm_cqe_in *in, struct hm_cqe_out *out)
{
	uint32_t size = 1u << in->log_size;

	(void)b;
	memset(out, 0, sizeof(*out));
	out->cycle = in->cycle + (in->ci_fresh ? 0 : in->lat);
	if (in->pi - in->ci >= size - 1) {
		/* One slot stays free (hca_cq_ring_entries): a ring that looks full is checked
		 * against the doorbell record first, and then it is an overrun. */
		out->action = in->ci_fresh ? HM_CQE_OVERRUN : HM_CQE_NEED_CI;
		return;
	}
	out->action = HM_CQE_WRITE;
	out->slot = in->pi & (size - 1);
	out->new_pi = in->pi + 1;
	out->image = in->cqe;
	out->image.owner = ((in->pi >> in->log_size) & 1) ? 0 : 1;
	out->image.timestamp = out->cycle;
	out->new_arm = in->arm;
	if (in->arm == HCA_CQ_DB_ARM_NEXT ||
	    (in->arm == HCA_CQ_DB_ARM_SOLICITED &&
	     (in->solicited || in->cqe.status != HCA_WC_SUCCESS))) {
		out->event = true;
		out->new_arm = 0;
	}
}

const struct hm_cqe_ops hm_cqe_model = { cqe_create, cqe_destroy, cqe_post, NULL,
					 NULL };

/* ---- psn ---- */

static void *psn_create(struct hm_dev *d)
{
	return d;
}

static void psn_destroy(void *b)
{
	(void)b;
}

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

const struct hm_psn_ops hm_psn_model = { psn_create, psn_destroy, psn_classify,
					 NULL, NULL };
