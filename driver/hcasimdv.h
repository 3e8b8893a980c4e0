/* hcasimdv.h — direct verbs of hcasim's libibverbs.so.1, for driver developers (in the manner of
 * rdma-core's mlx5dv.h for libmlx5). hcasimdv_init_obj() hands a program the queues of verbs
 * objects it created — send and receive rings, SRQ ring, CQ ring, doorbell records — and the
 * UAR page with its BlueFlame register, so that it can build WQEs by hand against
 * docs/device-interface.md and ring the doorbells the device sees.
 *
 * Contract:
 * - Formats (WQE segments, CQE, doorbell words, opcodes, status codes) are model/hw/hca_hw.h's,
 *   included below: compile with -I<hcasim source root> (and -I<build>/include for this file).
 *   Host-memory formats are little-endian.
 * - Ownership: the buffers belong to the verbs object; they stay valid until it is destroyed.
 *   A program that posts to a queue by hand owns that queue's producer count from `head` on:
 *   it must not also post to it through ibv_post_send / ibv_wr_* / ibv_post_recv until every
 *   WQE it posted by hand has completed and been polled. ibv_poll_cq reports a hand-posted
 *   WQE's completion with wr_id 0 and takes its count over. A program that polls a CQ by hand
 *   must not also poll it with ibv_poll_cq.
 * - Ordering: store the WQE, then (on silicon: a write barrier) ring the doorbell. The device
 *   reads the WQE only after the doorbell, and checks everything in it: a malformed WQE ends in
 *   an error completion (docs/hcasimdv.md lists which status), never in a crash.
 * - UAR writes: on silicon the UAR page is mapped into the process and a doorbell is one 64-bit
 *   store. In the simulator BAR0 is reached only through the PCIe model, so the stores are the
 *   two calls hcasimdv_uar_write64() and hcasimdv_uar_write_bf(): each is one posted MMIO write
 *   (one TLP), seen by the device pcie.mmio_write_ns later.
 * - Errors: functions return 0 or a positive errno, set errno, and leave a sentence naming the
 *   field or rule in hcasim_last_error(); a rejected call changes nothing.
 *
 * Exported by build/lib/libibverbs.so.1 under the version node HCASIMDV_1.0. */
#ifndef HCASIMDV_H
#define HCASIMDV_H

#include <infiniband/verbs.h>

#include "model/hw/hca_hw.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which members of struct hcasimdv_obj hcasimdv_init_obj() fills (bits of obj_type). */
enum hcasimdv_obj_type {
	HCASIMDV_OBJ_QP = 1 << 0,  /* obj.qp */
	HCASIMDV_OBJ_CQ = 1 << 1,  /* obj.cq */
	HCASIMDV_OBJ_SRQ = 1 << 2, /* obj.srq */
};

/* The UAR page an object's doorbells go to. */
struct hcasimdv_uar {
	struct ibv_context *context; /* the device (its BAR0) the writes go to */
	uint32_t offset;             /* BAR0 offset of the page: HCA_REGION_UAR + page * 4096 */
	uint32_t size;               /* bytes of the page (HCA_UAR_PAGE_BYTES) */
	uint32_t bf_offset;          /* BlueFlame register, offset in the page (HCA_UAR_BF) */
	uint32_t bf_size;            /* its bytes (HCA_UAR_BF_BYTES): doorbell word, 8 reserved
				      * bytes, then at most HCA_UAR_BF_WQE_BYTES of the WQE */
};

/* One work queue ring: WQE i is at buf + (i mod wqe_cnt) * stride. */
struct hcasimdv_wq {
	void *buf;          /* host address of WQE slot 0 (NULL: the queue does not exist) */
	uint32_t wqe_cnt;   /* slots, a power of two */
	uint32_t stride;    /* bytes per slot, a power of two */
	uint32_t head;      /* WQEs posted so far by the driver: the next WQE's index */
	uint32_t max_sge;   /* data segments a WQE may carry (the actual cap) */
	uint32_t max_inline; /* send queue: inline bytes a WQE may carry; 0 for receive queues */
};

/* A QP: doorbells at uar.offset + HCA_UAR_SQ_DB / HCA_UAR_RQ_DB carry
 * HCA_UAR_DB(qpn, WQEs posted so far); BlueFlame at uar.offset + uar.bf_offset. */
struct hcasimdv_qp {
	uint32_t qpn;            /* QP number (the doorbell's object field) */
	uint32_t qp_type;        /* IBV_QPT_RC, _UC or _UD: which second segment a send WQE has */
	uint64_t *dbrec;         /* the doorbell record named at CREATE_QP: the device does not
				  * read it (producer indexes come from doorbells only) */
	struct hcasimdv_wq sq;   /* send ring: hca_wqe_ctrl, second segment, data (device-interface.md) */
	struct hcasimdv_wq rq;   /* receive ring (buf NULL with an SRQ): hca_wqe_data entries,
				  * ended by lkey HCA_LKEY_END when fewer than the stride holds */
	struct hcasimdv_uar uar; /* where to ring */
	uint64_t comp_mask;      /* 0: no optional fields yet */
};

/* A CQ: CQE n is at buf + (n mod cqe_cnt) * cqe_size; the consumer owns it when its owner bit
 * is 1 on even passes over the ring, 0 on odd ones. Consumer index doorbell and arming:
 * uar.offset + HCA_UAR_CQ_DB, HCA_UAR_CQ_DB_VAL(cqn, command, consumer index). */
struct hcasimdv_cq {
	void *buf;               /* host address of CQE 0 (struct hca_cqe) */
	uint32_t cqe_cnt;        /* ring entries, a power of two (one slot always stays free) */
	uint32_t cqe_size;       /* HCA_CQE_BYTES */
	uint32_t cqn;            /* CQ number */
	uint32_t ci;             /* CQEs consumed so far by the driver */
	uint64_t *dbrec;         /* doorbell record: the consumer index (low 24 bits), which the
				  * device reads when the ring looks full */
	struct hcasimdv_uar uar; /* where to ring */
	uint64_t comp_mask;      /* 0 */
};

/* An SRQ: doorbell uar.offset + HCA_UAR_SRQ_DB, HCA_UAR_DB(srqn, WQEs posted so far). */
struct hcasimdv_srq {
	uint32_t srqn;           /* SRQ number */
	uint64_t *dbrec;         /* doorbell record named at CREATE_SRQ (not read by the device) */
	struct hcasimdv_wq wq;   /* the ring: receive WQEs as for a QP's receive queue */
	struct hcasimdv_uar uar; /* where to ring */
	uint64_t comp_mask;      /* 0 */
};

/* In: the verbs objects (in), out: where to write their description (out). */
struct hcasimdv_obj {
	struct {
		struct ibv_qp *in;
		struct hcasimdv_qp *out;
	} qp;
	struct {
		struct ibv_cq *in;
		struct hcasimdv_cq *out;
	} cq;
	struct {
		struct ibv_srq *in;
		struct hcasimdv_srq *out;
	} srq;
};

/* Describe the objects of obj selected by obj_type (HCASIMDV_OBJ_*). 0, or a positive errno
 * (EINVAL: an unknown obj_type bit, a NULL out, an in that is not a live object of this
 * library) with nothing written. */
int hcasimdv_init_obj(struct hcasimdv_obj *obj, uint64_t obj_type);

/* Ring a doorbell: one 64-bit posted write of value at offset (8-byte aligned, inside the
 * page) of the UAR page. 0 or EINVAL. What the device does with the value is
 * docs/device-interface.md's ("UAR doorbells"); a value it cannot accept is ignored and
 * counted as a bad doorbell. */
int hcasimdv_uar_write64(const struct hcasimdv_uar *uar, uint32_t offset, uint64_t value);

/* BlueFlame: one write-combined burst of len bytes (a multiple of 64, at most bf_size) to the
 * BlueFlame register: bytes 0-7 the send doorbell word, 8-15 reserved, then the WQE's used
 * bytes. 0 or EINVAL. */
int hcasimdv_uar_write_bf(const struct hcasimdv_uar *uar, const void *buf, size_t len);

/* A context as the device knows it (docs/architecture.md#ownership): the user context the
 * device opened for it, the IOMMU domain its memory is mapped into, and its UAR page. */
struct hcasimdv_context {
	uint32_t uid;            /* user context id = its UAR page (1..255) */
	uint32_t pasid;          /* IOMMU domain (PASID) its memory regions are mapped into; a
				  * program maps memory for its own keys with
				  * hcasim_dma_map_pasid(fn, pasid, ...) */
	struct hcasimdv_uar uar; /* its UAR page */
	uint64_t comp_mask;      /* 0 */
};
/* Describe ctx. 0, or EINVAL (not a live context of this library, NULL out). */
int hcasimdv_query_context(struct ibv_context *ctx, struct hcasimdv_context *out);

/* Run a device command by hand for ctx's user context (as mlx5dv_devx_general_cmd): the
 * command entry goes through ctx's UAR page, so the device runs it for ctx's uid and applies
 * the ownership rules — an object of another context, memory of another IOMMU domain or a
 * command of the device owner's is refused with NOT_OWNER. in is the command's input format
 * (model/hw/formats.def) of exactly in_len bytes, out receives out_len bytes of output.
 * 0, or the positive errno of the status (status.def: EACCES for NOT_OWNER), with the field
 * or rule named in hcasim_last_error(); EINVAL for an unknown opcode or a size that is not
 * the format's. The driver's own view of the context's objects is not updated: an object
 * created this way is the program's to destroy (this way) before the context closes. */
int hcasimdv_cmd(struct ibv_context *ctx, uint16_t opcode, const void *in, size_t in_len,
		 void *out, size_t out_len);

#ifdef __cplusplus
}
#endif

#endif
