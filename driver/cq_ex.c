/* Driver: extended CQs (ibv_create_cq_ex(3)) and their polling API — ibv_start_poll,
 * ibv_next_poll, ibv_end_poll and the ibv_wc_read_* accessors — over the same CQE ring, consumer
 * index and host costs as ibv_poll_cq, so the two can be mixed on one CQ. The completion
 * timestamp is the CQE's `timestamp`: the device core cycle at which the CQE writer issued it. */
#include "driver/drv.h"

#include <errno.h>
#include <string.h>

/* What the CQE carries, so what an extended CQ can report. */
#define CQ_EX_WC_FLAGS (IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
#define CQ_EX_COMP_MASK (IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)

static struct drv_cq *cq_of(struct ibv_cq_ex *cqx)
{
	return DRV_OBJ(struct drv_cq, cqx, DRV_KIND_CQ);
}

/* A CQE taken: the handle shows its wr_id and status, the accessors the rest. */
static int took(struct drv_cq *cq)
{
	cq->cqx.wr_id = cq->cur.wr_id;
	cq->cqx.status = cq->cur.status;
	cq->batch++;
	return 0;
}

static int start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	struct drv_cq *cq = cq_of(cqx);
	struct drv_dev *d;

	if (!cq)
		return drv_fail(EINVAL, "ibv_start_poll: not a live CQ");
	if (!attr || attr->comp_mask)
		return drv_fail(EINVAL, "ibv_start_poll: attr %s", attr ? "comp_mask is not 0"
								       : "is NULL");
	d = drv_dev_of(cqx->context);
	cq->batch = 0;
	hcasim_bus_hold(); /* the CQEs the device writes */
	if (!drv_cq_take(d, cq, &cq->cur, &cq->cur_cycle) &&
	    !(drv_poll_skip(d, cq) && drv_cq_take(d, cq, &cq->cur, &cq->cur_cycle))) {
		/* ibv_start_poll(3): ENOENT, and no ibv_end_poll follows. Costs, and skips, as
		 * an empty ibv_poll_cq does. */
		drv_poll_idle(d, cq);
		hcasim_bus_release();
		return ENOENT;
	}
	hcasim_bus_release();
	return took(cq);
}

static int next_poll(struct ibv_cq_ex *cqx)
{
	struct drv_cq *cq = cq_of(cqx);

	if (!cq)
		return drv_fail(EINVAL, "ibv_next_poll: not a live CQ");
	hcasim_bus_hold();
	if (!drv_cq_take(drv_dev_of(cqx->context), cq, &cq->cur, &cq->cur_cycle)) {
		hcasim_bus_release();
		return ENOENT;
	}
	hcasim_bus_release();
	return took(cq);
}

static void end_poll(struct ibv_cq_ex *cqx)
{
	struct drv_cq *cq = cq_of(cqx);

	if (!cq || !cq->batch)
		return;
	/* One batch costs what one ibv_poll_cq returning completions costs. */
	drv_cq_publish_ci(cq);
	drv_charge_verb(drv_dev_of(cqx->context));
	cq->batch = 0;
}

/* The accessors read the completion that start_poll/next_poll took. */
#define CUR(cqx) (&((struct drv_cq *)(void *)(cqx))->cur)

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *cqx)
{
	return CUR(cqx)->opcode;
}

static uint32_t read_vendor_err(struct ibv_cq_ex *cqx)
{
	return CUR(cqx)->vendor_err;
}

static uint32_t read_byte_len(struct ibv_cq_ex *cqx)
{
	return CUR(cqx)->byte_len;
}

static __be32 read_imm_data(struct ibv_cq_ex *cqx)
{
	return CUR(cqx)->imm_data;
}

static uint32_t read_qp_num(struct ibv_cq_ex *cqx)
{
	return CUR(cqx)->qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *cqx)
{
	return CUR(cqx)->src_qp;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *cqx)
{
	return CUR(cqx)->wc_flags;
}

static uint32_t read_slid(struct ibv_cq_ex *cqx)
{
	return CUR(cqx)->slid;
}

static uint8_t read_sl(struct ibv_cq_ex *cqx)
{
	return CUR(cqx)->sl;
}

static uint8_t read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return CUR(cqx)->dlid_path_bits;
}

static uint64_t read_completion_ts(struct ibv_cq_ex *cqx)
{
	return ((struct drv_cq *)(void *)cqx)->cur_cycle;
}

#undef CUR

/* Name of the lowest IBV_WC_EX_WITH_* bit in flags, for messages. */
static const char *wc_flag_name(uint64_t flags)
{
	static const char *const names[] = {
		"IBV_WC_EX_WITH_BYTE_LEN",
		"IBV_WC_EX_WITH_IMM",
		"IBV_WC_EX_WITH_QP_NUM",
		"IBV_WC_EX_WITH_SRC_QP",
		"IBV_WC_EX_WITH_SLID",
		"IBV_WC_EX_WITH_SL",
		"IBV_WC_EX_WITH_DLID_PATH_BITS",
		"IBV_WC_EX_WITH_COMPLETION_TIMESTAMP",
		"IBV_WC_EX_WITH_CVLAN",
		"IBV_WC_EX_WITH_FLOW_TAG",
		"IBV_WC_EX_WITH_TM_INFO",
		"IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK",
	};
	unsigned bit = (unsigned)__builtin_ctzll(flags);

	return bit < sizeof(names) / sizeof(names[0]) ? names[bit] : "an unknown wc_flags bit";
}

/* ibv_create_cq_ex(3) checks: unknown comp_mask bits are EINVAL; what the device cannot do
 * (wc_flags it cannot report, a parent domain, flags other than the single-threaded hint) is
 * EOPNOTSUPP, as libibverbs answers for wc_flags it does not know. 0 or the errno. */
static int check_attr(const struct ibv_cq_init_attr_ex *a)
{
	uint64_t bad = a->wc_flags & ~(uint64_t)CQ_EX_WC_FLAGS;

	if (a->comp_mask & ~(uint32_t)CQ_EX_COMP_MASK)
		return drv_fail(EINVAL, "ibv_create_cq_ex: comp_mask bits 0x%x are unknown",
				a->comp_mask & ~(uint32_t)CQ_EX_COMP_MASK);
	if (bad)
		return drv_fail(EOPNOTSUPP, "ibv_create_cq_ex: wc_flags %s (0x%llx) is not "
				"supported", wc_flag_name(bad), (unsigned long long)(bad & -bad));
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && a->parent_domain)
		return drv_fail(EOPNOTSUPP, "ibv_create_cq_ex: parent_domain is not supported");
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (a->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))
		return drv_fail(EOPNOTSUPP, "ibv_create_cq_ex: flags 0x%x not supported (only "
				"IBV_CREATE_CQ_ATTR_SINGLE_THREADED)", a->flags);
	return 0;
}

struct ibv_cq_ex *drv_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	struct drv_dev *d = drv_dev_of(ctx);
	struct ibv_cq_ex *x;
	struct drv_cq *cq;

	if (!d)
		return NULL;
	drv_charge_verb(d);
	if (!attr) {
		drv_fail(EINVAL, "ibv_create_cq_ex: NULL cq_attr");
		return NULL;
	}
	if (check_attr(attr))
		return NULL;
	cq = drv_cq_create(d, "ibv_create_cq_ex", ctx, attr->cqe, attr->cq_context, attr->channel,
			   attr->comp_vector);
	if (!cq)
		return NULL;
	x = &cq->cqx;
	x->start_poll = start_poll;
	x->next_poll = next_poll;
	x->end_poll = end_poll;
	x->read_opcode = read_opcode;
	x->read_vendor_err = read_vendor_err;
	/* As on mlx5, only the accessors for the requested fields are set. */
	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x->read_byte_len = read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		x->read_imm_data = read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x->read_qp_num = read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x->read_src_qp = read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		x->read_slid = read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		x->read_sl = read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x->read_dlid_path_bits = read_dlid_path_bits;
	if (attr->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		x->read_completion_ts = read_completion_ts;
	/* ibv_wc_read_wc_flags is always there: it says whether imm_data and the GRH are. */
	x->read_wc_flags = read_wc_flags;
	return x;
}
