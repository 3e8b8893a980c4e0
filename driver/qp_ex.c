/* Driver: extended QPs — ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, and the
 * ibv_wr_* work-request builders verbs.h calls through struct ibv_qp_ex. A batch
 * (wr_start ... wr_complete) writes its WQEs straight into the send ring with data.c's
 * builders, the ones ibv_post_send uses, and rings one doorbell on wr_complete (BlueFlame for
 * a lone small WQE). The first error of a batch is kept: wr_complete then returns it and
 * posts nothing of the batch, as rdma-core's providers do. */
#include "driver/drv.h"

#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* IBV_QP_EX_WITH_<op> is bit <op> of ibv_wr_opcode for the ten opcodes the device has. */
#define SAME_BIT(w, o) _Static_assert(IBV_QP_EX_WITH_##w == 1u << HCA_WQE_OP_##o, #w)
SAME_BIT(RDMA_WRITE, RDMA_WRITE);
SAME_BIT(RDMA_WRITE_WITH_IMM, RDMA_WRITE_IMM);
SAME_BIT(SEND, SEND);
SAME_BIT(SEND_WITH_IMM, SEND_IMM);
SAME_BIT(RDMA_READ, RDMA_READ);
SAME_BIT(ATOMIC_CMP_AND_SWP, ATOMIC_CMP_SWP);
SAME_BIT(ATOMIC_FETCH_AND_ADD, ATOMIC_FETCH_ADD);
SAME_BIT(LOCAL_INV, LOCAL_INV);
SAME_BIT(BIND_MW, BIND_MW);
SAME_BIT(SEND_WITH_INV, SEND_INV);
#undef SAME_BIT

/* The send ops this device has (wqe.def's opcodes 0..9); every other IBV_QP_EX_WITH_* bit is
 * refused at create. */
#define DEVICE_OPS 0x3ffu

static struct drv_qp *qp_of(struct ibv_qp_ex *qpx)
{
	return (struct drv_qp *)(void *)qpx; /* qpx is the first member of struct drv_qp */
}

/* Keep the batch's first error (its message already recorded by the builder that failed). */
static void batch_fail(struct drv_qp *qp, int err)
{
	if (!qp->batch_err)
		qp->batch_err = err;
}

/* The same with a message, recorded only if it is the batch's first error: wr_complete's
 * errno and hcasim_last_error() then tell of the same failure. */
static void batch_failf(struct drv_qp *qp, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void batch_failf(struct drv_qp *qp, int err, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (qp->batch_err)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	qp->batch_err = drv_fail(err, "%s", msg);
}

/* A builder or setter outside wr_start ... wr_complete touches nothing. */
static bool in_batch(struct drv_qp *qp, const char *verb)
{
	if (qp->batch_open)
		return true;
	drv_fail(EINVAL, "%s: called outside ibv_wr_start ... ibv_wr_complete; ignored", verb);
	return false;
}

/* The WQE the last builder began, for a setter. */
static uint8_t *cur_wqe(struct drv_qp *qp, const char *verb)
{
	if (!in_batch(qp, verb) || qp->batch_err)
		return NULL;
	if (!qp->cur)
		batch_failf(qp, EINVAL, "%s: no work request to set (call a builder such as "
			    "ibv_wr_send first)", verb);
	return qp->cur;
}

/* The WR before the next one (or before wr_complete) must be whole: a UD WR needs its
 * address. */
static void close_cur(struct drv_qp *qp, const char *verb)
{
	if (qp->cur && qp->cur_needs_ud)
		batch_failf(qp, EINVAL, "%s: the UD work request before has no ibv_wr_set_ud_addr",
			    verb);
	qp->cur = NULL;
	qp->cur_needs_ud = false;
}

/* Begin a WR of opcode with qpx->wr_id and qpx->wr_flags; returns its WQE or NULL. */
static uint8_t *build(struct ibv_qp_ex *qpx, const char *verb, unsigned opcode, uint32_t imm)
{
	struct drv_qp *qp = qp_of(qpx);
	uint8_t *w;
	int rc;

	if (!in_batch(qp, verb))
		return NULL;
	close_cur(qp, verb);
	if (qp->batch_err)
		return NULL;
	/* Inline or not is the data setter's choice, not a flag (as in rdma-core). */
	rc = drv_sq_begin(qp, verb, opcode, qpx->wr_flags & ~(unsigned)IBV_SEND_INLINE, imm, &w);
	if (rc) {
		batch_fail(qp, rc);
		return NULL;
	}
	drv_sq_commit(qp, qpx->wr_id);
	qp->cur = w;
	qp->cur_needs_ud = qpx->qp_base.qp_type == IBV_QPT_UD;
	return w;
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	uint8_t *w = build(qpx, "ibv_wr_rdma_write", HCA_WQE_OP_RDMA_WRITE, 0);

	if (w)
		drv_sq_set_rdma(w, remote_addr, rkey, 0, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
			      __be32 imm)
{
	uint8_t *w = build(qpx, "ibv_wr_rdma_write_imm", HCA_WQE_OP_RDMA_WRITE_IMM, imm);

	if (w)
		drv_sq_set_rdma(w, remote_addr, rkey, 0, 0);
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr)
{
	uint8_t *w = build(qpx, "ibv_wr_rdma_read", HCA_WQE_OP_RDMA_READ, 0);

	if (w)
		drv_sq_set_rdma(w, remote_addr, rkey, 0, 0);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
			      uint64_t compare, uint64_t swap)
{
	uint8_t *w = build(qpx, "ibv_wr_atomic_cmp_swp", HCA_WQE_OP_ATOMIC_CMP_SWP, 0);

	if (w)
		drv_sq_set_rdma(w, remote_addr, rkey, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
				uint64_t add)
{
	uint8_t *w = build(qpx, "ibv_wr_atomic_fetch_add", HCA_WQE_OP_ATOMIC_FETCH_ADD, 0);

	if (w)
		drv_sq_set_rdma(w, remote_addr, rkey, add, 0);
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	build(qpx, "ibv_wr_send", HCA_WQE_OP_SEND, 0);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	build(qpx, "ibv_wr_send_imm", HCA_WQE_OP_SEND_IMM, imm);
}

/* Ops the device does not have yet: the batch fails with EOPNOTSUPP at wr_complete (a QP
 * cannot be created with them, so a program reaches these only by calling the pointer). */
static void unsupported(struct ibv_qp_ex *qpx, const char *verb, const char *why)
{
	struct drv_qp *qp = qp_of(qpx);

	if (!in_batch(qp, verb))
		return;
	close_cur(qp, verb);
	batch_failf(qp, EOPNOTSUPP, "%s: %s; the batch will not be posted", verb, why);
}

/* A bind or invalidation takes no setter: the WR is whole when it is built. */
static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	static const char verb[] = "ibv_wr_bind_mw";
	struct drv_qp *qp = qp_of(qpx);
	uint8_t *w = build(qpx, verb, HCA_WQE_OP_BIND_MW, 0);
	int rc;

	if (!w)
		return;
	qp->cur = NULL;
	rc = drv_sq_set_bind(verb, w, mw, rkey, info);
	if (rc)
		batch_fail(qp, rc);
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	if (build(qpx, "ibv_wr_local_inv", HCA_WQE_OP_LOCAL_INV, htobe32(rkey)))
		qp_of(qpx)->cur = NULL;
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	build(qpx, "ibv_wr_send_inv", HCA_WQE_OP_SEND_INV, htobe32(rkey));
}

static void wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr, (void)hdr_sz, (void)mss;
	unsupported(qpx, "ibv_wr_send_tso", "TSO needs raw Ethernet QPs, which are not supported");
}

static void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t remote_addr,
			    const void *data)
{
	(void)rkey, (void)remote_addr, (void)data;
	unsupported(qpx, "ibv_wr_atomic_write", "atomic write is not supported");
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	static const char verb[] = "ibv_wr_set_xrc_srqn";
	struct drv_qp *qp = qp_of(qpx);
	uint8_t *w = cur_wqe(qp, verb);
	int rc;

	if (!w)
		return;
	if (qpx->qp_base.qp_type != IBV_QPT_XRC_SEND) {
		batch_failf(qp, EINVAL, "%s: the QP is not IBV_QPT_XRC_SEND", verb);
		return;
	}
	rc = drv_sq_set_xrc(verb, w, srqn);
	if (rc)
		batch_fail(qp, rc);
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
			   uint32_t remote_qkey)
{
	static const char verb[] = "ibv_wr_set_ud_addr";
	struct drv_qp *qp = qp_of(qpx);
	uint8_t *w = cur_wqe(qp, verb);
	int rc;

	if (!w)
		return;
	if (qpx->qp_base.qp_type != IBV_QPT_UD) {
		batch_failf(qp, EINVAL, "%s: the QP is not UD", verb);
		return;
	}
	rc = drv_sq_set_ud(qp, verb, w, ah, remote_qpn, remote_qkey);
	if (rc)
		batch_fail(qp, rc);
	else
		qp->cur_needs_ud = false;
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t n, const struct ibv_sge *sg)
{
	struct drv_qp *qp = qp_of(qpx);
	uint8_t *w = cur_wqe(qp, "ibv_wr_set_sge_list");
	int rc;

	if (w && (rc = drv_sq_set_sge(qp, "ibv_wr_set_sge_list", w, sg, n)))
		batch_fail(qp, rc);
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sg = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qpx, 1, &sg);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t n,
				    const struct ibv_data_buf *buf)
{
	struct drv_qp *qp = qp_of(qpx);
	uint8_t *w = cur_wqe(qp, "ibv_wr_set_inline_data_list");
	int rc;

	if (w && (rc = drv_sq_set_inline(qp, "ibv_wr_set_inline_data_list", w, NULL, buf, n)))
		batch_fail(qp, rc);
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &buf);
}

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct drv_qp *qp = qp_of(qpx);

	if (qp->batch_open) {
		/* rdma-core would deadlock on the QP's lock; here the open batch fails. */
		batch_failf(qp, EINVAL, "ibv_wr_start: a batch is already open");
		return;
	}
	drv_charge_verb_(drv_dev_of(qpx->qp_base.context), "ibv_wr_start");
	qp->batch_open = true;
	qp->batch_err = 0;
	qp->batch_pi = qp->sq_pi;
	qp->cur = NULL;
	qp->cur_needs_ud = false;
}

/* End the batch: roll back to wr_start unless post. */
static void batch_end(struct drv_qp *qp, bool post)
{
	if (!post)
		qp->sq_pi = qp->batch_pi;
	qp->batch_open = false;
	qp->cur = NULL;
	qp->cur_needs_ud = false;
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct drv_qp *qp = qp_of(qpx);
	int err;

	if (!qp->batch_open)
		return drv_fail(EINVAL, "ibv_wr_complete: no batch is open (call ibv_wr_start)");
	close_cur(qp, "ibv_wr_complete");
	err = qp->batch_err;
	if (err) {
		batch_end(qp, false);
		errno = err; /* the message is the error's own, recorded when it happened */
		return err;
	}
	drv_sq_ring(drv_dev_of(qpx->qp_base.context), qp, qp->sq_pi - qp->batch_pi);
	batch_end(qp, true);
	return 0;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	struct drv_qp *qp = qp_of(qpx);

	if (qp->batch_open)
		batch_end(qp, false);
}

void drv_qp_ex_init(struct drv_qp *qp)
{
	struct ibv_qp_ex *x = &qp->qpx;

	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_send_inv = wr_send_inv;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_atomic_write = wr_atomic_write;
}

/* Which asked ops this QP type cannot take: 0 if every one is fine. */
static uint64_t ops_refused(enum ibv_qp_type type, uint64_t ops)
{
	uint64_t bad = ops & ~(uint64_t)DEVICE_OPS;

	for (unsigned op = 0; op <= HCA_WQE_OP_SEND_INV; op++)
		if ((ops & (1u << op)) && !hca_wqe_op_allowed((unsigned)type, op))
			bad |= 1u << op;
	return bad;
}

struct ibv_qp *drv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	static const char verb[] = "ibv_create_qp_ex";
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_XRCD;
	struct ibv_qp_init_attr init;
	struct drv_qp *qp;
	uint64_t bad;

	if (!drv_ctx_of(ctx)) {
		drv_fail(EINVAL, "%s: not a live context", verb);
		return NULL;
	}
	if (!attr) {
		drv_fail(EINVAL, "%s: NULL qp_init_attr_ex", verb);
		return NULL;
	}
	if (attr->comp_mask & ~known) {
		drv_fail(EOPNOTSUPP, "%s: comp_mask bits 0x%x are not supported by this device "
			 "(RSS, TSO, ...)", verb, attr->comp_mask & ~known);
		return NULL;
	}
	if (attr->qp_type == IBV_QPT_XRC_RECV) /* no PD: its XRC domain (driver/xrc.c) */
		return drv_xrc_tgt_create(ctx, attr);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) ||
	    !DRV_OBJ(struct drv_pd, attr->pd, DRV_KIND_PD) || attr->pd->context != ctx) {
		drv_fail(EINVAL, "%s: comp_mask lacks IBV_QP_INIT_ATTR_PD or pd is not of this "
			 "context", verb);
		return NULL;
	}
	/* As rdma-core's mlx5: a send op the device or the QP type lacks is EOPNOTSUPP. */
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (bad = ops_refused(attr->qp_type, attr->send_ops_flags))) {
		drv_fail(EOPNOTSUPP, "%s: send_ops_flags 0x%llx: not supported on qp_type %d "
			 "(TSO and atomic write are not supported yet)", verb,
			 (unsigned long long)bad, attr->qp_type);
		return NULL;
	}
	/* The one creation flag the device has is IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, for UD QPs
	 * (docs/multicast.md). */
	if (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) {
		if (attr->create_flags & ~(uint32_t)IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) {
			drv_fail(EINVAL, "%s: create_flags 0x%x are not supported (only "
				 "IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)", verb,
				 attr->create_flags & ~(uint32_t)IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
			return NULL;
		}
		if (attr->create_flags && attr->qp_type != IBV_QPT_UD) {
			drv_fail(EINVAL, "%s: IBV_QP_CREATE_BLOCK_SELF_MCAST_LB needs qp_type "
				 "IBV_QPT_UD", verb);
			return NULL;
		}
	}
	/* struct ibv_qp_init_attr is the prefix of struct ibv_qp_init_attr_ex. */
	memcpy(&init, attr, sizeof(init));
	qp = drv_qp_create(attr->pd, verb, &init,
			   (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags
				   ? HCA_QP_CREATE_BLOCK_SELF_MCAST_LB
				   : 0);
	if (!qp)
		return NULL;
	attr->cap = init.cap;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qp->ex = true;
		qp->qpx.comp_mask = 0;
	}
	return &qp->qpx.qp_base;
}
