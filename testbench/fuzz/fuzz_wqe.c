/* Fuzz target `wqe`: WQE bytes written by hand into the send and receive rings of hcasim2's
 * victim QPs (RC, UC, UD) through hcasimdv (driver/hcasimdv.h), rung by a doorbell or a
 * BlueFlame write, as a driver with a bug in its WQE builder would. The device fetches them,
 * checks them and sends what they describe to the victims' peers on hcasim3; the peer then
 * sends one message back, which the hand-written receive WQEs take.
 *
 * An input: one byte, then records. The first byte: bits 0-1 the victim (0 RC, 1 UC, 2 UD,
 * 3 RC), bit 2 the peer's message is 1000 bytes (else 64), bit 3 the peer sends nothing. A
 * record: a 4-byte header (struct rec) and len bytes of WQE, written at the ring's next slot
 * (the rest of the slot zeroed). So that mutations reach past the first checks, the control
 * segment's opcode is taken modulo the ten opcodes and its wqe_index is the slot's producer
 * index unless the record asks for the raw bytes (W_RAW_OP, W_RAW_INDEX). The WQEs name the
 * victims' and peers' memory by fixed addresses (ibv_reg_mr_iova: IOVA_A, IOVA_B), so that
 * the seeds mean the same in every run.
 *
 * After an input the simulation runs until it is idle (at most 200 us), the bystander must
 * move its message (fz_after_input), and the victim pair goes through RESET back to RTS with
 * the peer's receives posted and the victim's receive queue empty, as the seeds found it. The
 * seeds (testbench/fuzz/corpus/wqe/) are the WQEs hcasim2's driver builds for every opcode on
 * each QP type, each checked to complete successfully when written and rung by hand;
 * HCASIM_FUZZ_SEEDS=DIR writes them again (docs/security.md). */
#include "testbench/fuzz/fuzz.h"

#include "driver/hcasimdv.h"
#include "sim/hcasim.h"
#include "sim/hcasim_bus.h"

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IOVA_A 0x10000000ull /* the victims' 4 KiB, as WQEs name them */
#define IOVA_B 0x20000000ull /* the peers' */
#define FZ_QKEY 0x11111111u

struct rec {
	uint8_t flags;   /* W_* */
	uint8_t len;     /* bytes of WQE that follow (at most the ring's stride) */
	uint16_t pi_raw; /* with W_RAW_PI: the doorbell's producer index */
};

enum {
	W_RQ = 1,          /* the receive ring (else the send ring) */
	W_RING = 2,        /* ring the doorbell after writing */
	W_BF = 4,          /* send ring: ring by BlueFlame, the WQE's bytes along */
	W_RAW_PI = 8,      /* the doorbell carries pi_raw, not the WQEs written so far */
	W_RAW_OP = 16,     /* the opcode byte as given */
	W_RAW_INDEX = 32,  /* wqe_index as given */
	W_NO_WRITE = 64,   /* write nothing: a doorbell alone */
};

static struct ibv_mr *mr_a[FZ_NQPT], *mr_b[FZ_NQPT];
static struct ibv_mw *mw[FZ_NQPT];      /* a type 2 window on the RC and UC victims' PDs */
static struct ibv_ah *ah_a, *ah_b;      /* UD: victim -> peer, peer -> victim */
static struct hcasimdv_qp dv[FZ_NQPT];  /* the victims' rings */
static int strict;  /* the seeds: this many completions at the victim, each successful */

static void describe(int t)
{
	struct hcasimdv_obj o = { .qp = { fz_victim.a[t].qp, &dv[t] } };

	if (hcasimdv_init_obj(&o, HCASIMDV_OBJ_QP))
		fz_fail("hcasimdv_init_obj");
}

/* Completions on s's CQ, drained: how many, and *ok false if one failed. */
static int drain(struct fz_side *s, bool *ok)
{
	struct ibv_wc wc[16];
	int n, all = 0;

	while ((n = ibv_poll_cq(s->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++, all++)
			*ok = *ok && wc[i].status == IBV_WC_SUCCESS;
	return all;
}

/* Victim pair t as every input finds it: both in RTS from PSN 0, four receives on the peer,
 * none on the victim, the rings' counts at 0. */
static void rearm(int t)
{
	struct fz_side *a = &fz_victim.a[t], *b = &fz_victim.b[t];
	bool ok = true;
	int n = drain(a, &ok);

	drain(b, &ok);
	if (strict && (!ok || n != strict))
		fz_fail("seed on victim %d: %d completions (%d expected), %s", t, n, strict,
			ok ? "all successful" : "not all successful");
	fz_connect(a, b);
	fz_connect(b, a);
	drain(a, &ok);
	drain(b, &ok);
	for (int k = 0; k < 4; k++)
		fz_post_recv(b);
	describe(t);
}

static void ring(int t, unsigned flags, uint32_t pi, const uint8_t *wqe, size_t len)
{
	const struct hcasimdv_qp *q = &dv[t];
	uint64_t db = HCA_UAR_DB(q->qpn, pi & 0xffff);
	uint8_t bf[HCA_UAR_BF_BYTES] = { 0 };
	size_t n = len < HCA_UAR_BF_WQE_BYTES ? len : HCA_UAR_BF_WQE_BYTES;

	if (flags & W_RQ) {
		hcasimdv_uar_write64(&q->uar, HCA_UAR_RQ_DB, db);
	} else if (flags & W_BF) {
		memcpy(bf, &db, 8);
		memcpy(bf + 16, wqe, n);
		hcasimdv_uar_write_bf(&q->uar, bf, (16 + n + 63) / 64 * 64);
	} else {
		hcasimdv_uar_write64(&q->uar, HCA_UAR_SQ_DB, db);
	}
}

/* Write and ring the records of data on victim t. */
static void run_records(int t, const uint8_t *data, size_t size)
{
	uint32_t cnt[2] = { dv[t].sq.head, dv[t].rq.head };
	size_t at = 0;

	while (at + sizeof(struct rec) <= size) {
		struct rec r;
		unsigned q;
		const struct hcasimdv_wq *wq;
		uint8_t *slot;
		size_t n;

		memcpy(&r, data + at, sizeof(r));
		at += sizeof(r);
		q = r.flags & W_RQ ? 1 : 0;
		wq = q ? &dv[t].rq : &dv[t].sq;
		n = r.len < wq->stride ? r.len : wq->stride;
		n = n < size - at ? n : size - at;
		slot = (uint8_t *)wq->buf + (size_t)(cnt[q] % wq->wqe_cnt) * wq->stride;
		if (!(r.flags & W_NO_WRITE)) {
			memset(slot, 0, wq->stride);
			memcpy(slot, data + at, n);
			if (!q && !(r.flags & W_RAW_OP))
				slot[0] %= HCA_WQE_OP_SEND_INV + 1;
			if (!q && !(r.flags & W_RAW_INDEX))
				((struct hca_wqe_ctrl *)slot)->wqe_index = (uint16_t)cnt[q];
			cnt[q]++;
		}
		at += n;
		if (r.flags & (W_RING | W_BF))
			ring(t, r.flags, r.flags & W_RAW_PI ? r.pi_raw : cnt[q], slot, wq->stride);
	}
}

/* The peer sends one message of len bytes to victim t. */
static void peer_send(int t, uint32_t len)
{
	struct fz_side *b = &fz_victim.b[t];
	struct ibv_sge sge = { (uintptr_t)b->buf, len, b->mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	if (t == FZ_UD) {
		w.wr.ud.ah = ah_b;
		w.wr.ud.remote_qpn = fz_victim.a[t].qp->qp_num;
		w.wr.ud.remote_qkey = FZ_QKEY;
	}
	if (ibv_post_send(b->qp, &w, &bad))
		fz_fail("peer %d: post_send", t);
}

static void run_input(const uint8_t *data, size_t size)
{
	int t = (data[0] & 3) % FZ_NQPT;

	run_records(t, data + 1, size - 1);
	if (!(data[0] & 8))
		peer_send(t, data[0] & 4 ? 1000 : 64);
	for (int i = 0; i < 100 && hcasim_host_idle() != 1; i++)
		hcasim_run_for_ps(2 * 1000 * 1000ull);
	fz_after_input();
	rearm(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return -1;
	run_input(data, size);
	return 0;
}

/* ---- seeds: the WQEs hcasim2's driver builds for every opcode, replayed by hand ---- */

struct seed {
	uint8_t buf[1024];
	size_t len;
};

static void rec_add(struct seed *s, unsigned flags, const void *wqe, size_t len)
{
	struct rec r = { (uint8_t)flags, (uint8_t)len, 0 };

	memcpy(s->buf + s->len, &r, sizeof(r));
	memcpy(s->buf + s->len + sizeof(r), wqe, len);
	s->len += sizeof(r) + len;
}

/* Post a receive and the chain w on victim t through the driver; take the WQEs it wrote into
 * a seed (the send WQEs rung by BlueFlame if bf); run the seed by hand on a fresh pair, each
 * completion successful if check. */
static void seed_one(const char *dir, int t, const char *name, struct ibv_send_wr *w, bool bf,
		     bool check)
{
	struct fz_side *a = &fz_victim.a[t];
	struct ibv_sge rs = { IOVA_A + 2048, 2048, mr_a[t]->lkey };
	struct ibv_recv_wr rw = { .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_send_wr *sbad;
	struct seed s = { .buf = { (uint8_t)t }, .len = 1 };
	int wqes = 1;
	char path[600];
	FILE *f;

	rearm(t);
	if (ibv_post_recv(a->qp, &rw, &rbad) || ibv_post_send(a->qp, w, &sbad))
		fz_fail("seed %s: post: %s", name, hcasim_last_error());
	rec_add(&s, W_RQ | W_RING, dv[t].rq.buf, dv[t].rq.stride);
	for (uint32_t i = 0; w; w = w->next, i++, wqes++)
		rec_add(&s, bf ? W_BF : W_RING, (uint8_t *)dv[t].sq.buf + i * dv[t].sq.stride,
			dv[t].sq.stride);
	rearm(t);
	strict = check ? wqes : 0;
	run_input(s.buf, s.len);
	strict = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s.buf, 1, s.len, f) != s.len || fclose(f))
		fz_fail("cannot write %s", path);
}

/* One WR of opcode op on victim t towards its peer's memory. */
static struct ibv_send_wr wr_for(int t, enum ibv_wr_opcode op, struct ibv_sge *sge)
{
	struct ibv_send_wr w = { .sg_list = sge, .num_sge = 1, .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(7) };

	*sge = (struct ibv_sge){ IOVA_A, 256, mr_a[t]->lkey };
	if (t == FZ_UD) {
		w.wr.ud.ah = ah_a;
		w.wr.ud.remote_qpn = fz_victim.b[t].qp->qp_num;
		w.wr.ud.remote_qkey = FZ_QKEY;
	} else if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		sge->length = 8;
		w.wr.atomic.remote_addr = IOVA_B + 64;
		w.wr.atomic.rkey = mr_b[t]->rkey;
		w.wr.atomic.compare_add = 1;
	} else {
		w.wr.rdma.remote_addr = IOVA_B + 1024;
		w.wr.rdma.rkey = mr_b[t]->rkey;
	}
	return w;
}

static void seed_type(const char *dir, int t)
{
	static const char *const tn[FZ_NQPT] = { "rc", "uc", "ud" };
	static const struct {
		enum ibv_wr_opcode op;
		const char *name;
		unsigned types; /* 1 << FZ_* */
	} ops[] = {
		{ IBV_WR_SEND, "send", 7 },		{ IBV_WR_SEND_WITH_IMM, "send-imm", 7 },
		{ IBV_WR_RDMA_WRITE, "write", 3 },	{ IBV_WR_RDMA_WRITE_WITH_IMM, "write-imm", 3 },
		{ IBV_WR_RDMA_READ, "read", 1 },	{ IBV_WR_ATOMIC_CMP_AND_SWP, "cmp-swap", 1 },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, "fetch-add", 1 },
		{ IBV_WR_SEND_WITH_INV, "send-inv", 1 },
	};
	char name[64];

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct ibv_sge sge;
		struct ibv_send_wr w;

		if (!(ops[i].types & 1u << t))
			continue;
		w = wr_for(t, ops[i].op, &sge);
		/* no window at the peer has this R_Key: the peer answers with an error */
		w.invalidate_rkey = mr_b[t]->rkey;
		snprintf(name, sizeof(name), "%s-%s", tn[t], ops[i].name);
		seed_one(dir, t, name, &w, i & 1, ops[i].op != IBV_WR_SEND_WITH_INV);
	}
	{
		struct ibv_sge sge;
		struct ibv_send_wr w = wr_for(t, IBV_WR_SEND, &sge);

		w.send_flags |= IBV_SEND_INLINE;
		sge.addr = (uintptr_t)fz_victim.a[t].buf;
		sge.length = 48;
		snprintf(name, sizeof(name), "%s-send-inline", tn[t]);
		seed_one(dir, t, name, &w, true, true);
	}
	if (t != FZ_UD) {
		struct ibv_sge sge;
		struct ibv_send_wr bind = { .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED },
				   inv = { .opcode = IBV_WR_LOCAL_INV,
					   .send_flags = IBV_SEND_SIGNALED };

		(void)sge;
		bind.bind_mw.mw = mw[t];
		bind.bind_mw.rkey = ibv_inc_rkey(mw[t]->rkey);
		bind.bind_mw.bind_info = (struct ibv_mw_bind_info){
			mr_a[t], IOVA_A, 4096, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE
		};
		inv.invalidate_rkey = bind.bind_mw.rkey;
		bind.next = &inv;
		snprintf(name, sizeof(name), "%s-bind-mw-local-inv", tn[t]);
		seed_one(dir, t, name, &bind, false, true);
	}
}

/* The victims' memory at fixed addresses, a window each (RC, UC), address handles (UD). */
static void setup(void)
{
	const int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	fz_setup();
	fz_heal_victims = false; /* rearm() does it, for the pair an input used */
	for (int t = 0; t < FZ_NQPT; t++) {
		struct fz_side *a = &fz_victim.a[t], *b = &fz_victim.b[t];

		mr_a[t] = ibv_reg_mr_iova(a->pd, a->buf, 4096, IOVA_A, all | IBV_ACCESS_MW_BIND);
		mr_b[t] = ibv_reg_mr_iova(b->pd, b->buf, 4096, IOVA_B, all);
		if (t != FZ_UD)
			mw[t] = ibv_alloc_mw(a->pd, IBV_MW_TYPE_2);
		if (!mr_a[t] || !mr_b[t] || (t != FZ_UD && !mw[t]))
			fz_fail("victim %d: memory", t);
	}
	{
		struct ibv_ah_attr to_b = { .dlid = fz_victim.b[FZ_UD].lid, .port_num = 1 };
		struct ibv_ah_attr to_a = { .dlid = fz_victim.a[FZ_UD].lid, .port_num = 1 };

		ah_a = ibv_create_ah(fz_victim.a[FZ_UD].pd, &to_b);
		ah_b = ibv_create_ah(fz_victim.b[FZ_UD].pd, &to_a);
		if (!ah_a || !ah_b)
			fz_fail("UD address handles");
	}
	for (int t = 0; t < FZ_NQPT; t++)
		rearm(t);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("HCASIM_FUZZ_SEEDS");

	(void)argc, (void)argv;
	setup();
	if (seeds && *seeds) {
		for (int t = 0; t < FZ_NQPT; t++)
			seed_type(seeds, t);
		fprintf(stderr, "fuzz-wqe: seeds in %s\n", seeds);
		exit(0);
	}
	return 0;
}
