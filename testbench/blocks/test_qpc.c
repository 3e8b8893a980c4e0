/* Block test of qpc, the QP context cache (model/qpc.h), alone: contexts stored to their
 * backing-store slots, hits, misses, LRU eviction with write-back, forgetting, and images
 * changed behind the device's back reported and never used. DMA goes to the stubs' fake host
 * memory (stubs.h); the image checks are the block's own. */
#include "model/qpc.h"
#include "testbench/blocks/stubs.h"

#include <stddef.h>
#include <string.h>

#define BASE 0x1000u /* the backing store in the fake memory */

static uint64_t slot(uint32_t qpn)
{
	return BASE + (uint64_t)qpn * HM_QPC_BYTES;
}

/* A cache of entries entries, and QPs 1..n stored to their slots. */
static sim_time_t cache_with(uint32_t entries, unsigned n)
{
	sim_time_t t = 0;

	blk_dev->dp->qpc_base = BASE;
	blk_dev->dp->qpc_entries = entries;
	for (unsigned q = 1; q <= n; q++) {
		struct hm_qp *qp = blk_qp(q, HCA_QPT_RC, HCA_QPS_RTS, 4, 128, 4);

		qp->req.sq_psn = 100 * q;
		hm_qpc_store(blk_dev, qp, &t);
	}
	blk.ndma = 0;
	return t;
}

BLK_TEST(qpc, store_writes_the_packed_image_to_the_slot_uncached)
{
	struct hm_qp *qp = blk_qp(5, HCA_QPT_UC, HCA_QPS_RTR, 8, 256, 8);
	struct hca_qpc img;
	sim_time_t t = 1000;

	blk_dev->dp->qpc_base = BASE;
	blk_dev->dp->qpc_entries = 1;
	qp->req.sq_psn = 0x123456;
	qp->resp.epsn = 77;
	hm_qpc_store(blk_dev, qp, &t);
	cr_assert_eq(blk.ndma, 1);
	cr_assert_eq(blk.dma[0].kind, BLK_DMA_WR);
	cr_assert_eq(blk.dma[0].addr, slot(5));
	cr_assert_eq(blk.dma[0].len, sizeof(struct hca_qpc));
	cr_assert_eq(t, 1000 + blk_do.dma_ps, "the write is timed");
	hm_qpc_pack(qp, &img);
	cr_assert_eq(memcmp(blk_mem + slot(5), &img, sizeof(img)), 0, "the slot holds the image");
	cr_assert_eq(((struct hca_qpc *)(blk_mem + slot(5)))->sq_psn, 0x123456);
	blk.ndma = 0;
	hm_qpc_get(blk_dev, 5, &t);
	cr_assert_eq(blk_dev->dp->qpc_misses, 1, "not cached by the store");
	cr_assert_eq(blk.ndma, 1);
}

BLK_TEST(qpc, a_miss_reads_the_slot_and_caches_the_context)
{
	sim_time_t t = cache_with(2, 1);
	struct hm_qp *qp = blk_dev->dp->qps[1], *got;

	t = 5000;
	got = hm_qpc_get(blk_dev, 1, &t);
	cr_assert_eq(got, qp);
	cr_assert_eq(blk.ndma, 1);
	cr_assert_eq(blk.dma[0].kind, BLK_DMA_RD);
	cr_assert_eq(blk.dma[0].addr, slot(1));
	cr_assert_eq(blk.dma[0].len, sizeof(struct hca_qpc));
	cr_assert_eq(t, 5000 + blk_do.dma_ps, "a miss costs the read");
	cr_assert_eq(blk_dev->dp->qpc_misses, 1);
	cr_assert_eq(blk_dev->dp->qpc_hits, 0);
	cr_assert_eq(blk_dev->dp->qpc_corrupt, 0, "the slot is as written");
	cr_assert_null(blk_event("warn.qpc_differs", 0));
}

BLK_TEST(qpc, a_hit_costs_the_blocks_hit_cycles_and_no_dma)
{
	sim_time_t t = cache_with(2, 1);

	hm_qpc_get(blk_dev, 1, &t);
	blk.ndma = 0;
	t = 10000;
	cr_assert_eq(hm_qpc_get(blk_dev, 1, &t), blk_dev->dp->qps[1]);
	cr_assert_eq(blk.ndma, 0);
	cr_assert_eq(t, sim_clock_after(&blk_dev->core, 10000, HM_QPC_HIT_CYCLES));
	cr_assert_eq(blk_dev->dp->qpc_hits, 1);
	cr_assert_eq(blk_dev->dp->qpc_misses, 1);
}

BLK_TEST(qpc, no_such_qp_is_null_without_dma)
{
	sim_time_t t = cache_with(2, 1);

	cr_assert_null(hm_qpc_get(blk_dev, 9, &t));
	cr_assert_null(hm_qpc_get(blk_dev, 1000, &t), "past the table");
	cr_assert_eq(blk.ndma, 0);
	cr_assert_eq(blk_dev->dp->qpc_misses + blk_dev->dp->qpc_hits, 0);
}

BLK_TEST(qpc, a_full_cache_evicts_the_least_recently_used_writing_it_back)
{
	sim_time_t t = cache_with(2, 3);
	struct hm_qp **q = blk_dev->dp->qps;

	hm_qpc_get(blk_dev, 1, &t);
	hm_qpc_get(blk_dev, 2, &t);
	hm_qpc_get(blk_dev, 1, &t); /* 2 is now the least recently used */
	q[2]->req.sq_psn = 4242;    /* changed while cached */
	blk.ndma = 0;
	hm_qpc_get(blk_dev, 3, &t);
	cr_assert_eq(blk.ndma, 2, "write-back of 2, then the read of 3");
	cr_assert_eq(blk.dma[0].kind, BLK_DMA_WR);
	cr_assert_eq(blk.dma[0].addr, slot(2));
	cr_assert_eq(blk.dma[1].kind, BLK_DMA_RD);
	cr_assert_eq(blk.dma[1].addr, slot(3));
	cr_assert_eq(((struct hca_qpc *)(blk_mem + slot(2)))->sq_psn, 4242, "written back as it is");
	cr_assert_eq(blk_dev->dp->qpc_writebacks, 1);
	/* 2 comes back: its slot is what was written back, no corruption; 1 was the oldest then */
	blk.ndma = 0;
	hm_qpc_get(blk_dev, 2, &t);
	cr_assert_eq(blk_dev->dp->qpc_corrupt, 0);
	cr_assert_eq(blk.ndma, 2, "2 missed, evicting 1 (dirty)");
	cr_assert_eq(blk.dma[0].addr, slot(1));
	cr_assert_eq(blk.dma[1].addr, slot(2));
	blk.ndma = 0;
	hm_qpc_get(blk_dev, 3, &t);
	cr_assert_eq(blk.ndma, 0, "3 stayed");
	(void)q;
}

BLK_TEST(qpc, a_clean_victim_is_evicted_without_a_write)
{
	sim_time_t t = cache_with(1, 2);
	struct hm_qp **q = blk_dev->dp->qps;

	struct hm_qpc_in in = { .qpn = 1, .write = false, .entries = 1, .base = BASE };
	struct hm_qpc_cpl_in cpl = { .tag = HM_QPC_TAG_FILL };
	struct hm_qpc_out out;

	/* a use that writes nothing (the port's write = 0): the entry stays clean */
	hm_qpc_lookup(blk_dev, &in, &out);
	cr_assert(!out.done && out.req == HM_QPC_REQ_READ && !out.evict);
	cpl.cycle = out.cycle + 10;
	hm_qpc_complete(blk_dev, &cpl, &out);
	cr_assert(out.done);
	blk.ndma = 0;
	hm_qpc_get(blk_dev, 2, &t);
	cr_assert_eq(blk.ndma, 1);
	cr_assert_eq(blk.dma[0].kind, BLK_DMA_RD);
	cr_assert_eq(blk_dev->dp->qpc_writebacks, 0);
	blk.ndma = 0;
	hm_qpc_get(blk_dev, 1, &t);
	cr_assert_eq(blk.ndma, 2, "1 was evicted; 2, written, is written back now");
	(void)q;
}

BLK_TEST(qpc, a_forgotten_context_leaves_the_cache_without_write_back)
{
	sim_time_t t = cache_with(2, 2);
	struct hm_qp **q = blk_dev->dp->qps;

	hm_qpc_get(blk_dev, 1, &t);
	hm_qpc_get(blk_dev, 2, &t);
	blk.ndma = 0;
	hm_qpc_forget(blk_dev, q[1]);
	cr_assert_eq(blk.ndma, 0);
	hm_qpc_forget(blk_dev, q[1]); /* not cached: nothing */
	/* one entry free: 1 comes back without evicting 2 */
	hm_qpc_get(blk_dev, 1, &t);
	cr_assert_eq(blk.ndma, 1, "the fill only");
	cr_assert_eq(blk.dma[0].kind, BLK_DMA_RD);
	hm_qpc_forget(blk_dev, q[1]);
	hm_qpc_forget(blk_dev, q[2]);
	blk.ndma = 0;
	hm_qpc_get(blk_dev, 1, &t);
	hm_qpc_get(blk_dev, 2, &t);
	cr_assert_eq(blk.ndma, 2, "two fills, no eviction: the cache was empty");
}

BLK_TEST(qpc, a_slot_changed_behind_the_device_is_reported_by_field_and_not_used)
{
	sim_time_t t = cache_with(2, 1);
	struct hm_qp *qp = blk_dev->dp->qps[1];
	struct hca_qpc *img = (struct hca_qpc *)(blk_mem + slot(1));
	const char *ev;

	img->sq_psn = 999; /* a valid image, not the one written */
	cr_assert_eq(hm_qpc_get(blk_dev, 1, &t), qp);
	cr_assert_eq(blk_dev->dp->qpc_corrupt, 1);
	cr_assert_eq(qp->req.sq_psn, 100, "the on-chip context stays the authority");
	ev = blk_event("warn.qpc_differs", 0);
	cr_assert_not_null(ev);
	cr_assert_str_eq(ev, "qpn=0x1 field=sq_psn");
}

BLK_TEST(qpc, a_slot_breaking_the_format_is_reported_with_the_rule)
{
	sim_time_t t = cache_with(2, 1);
	struct hca_qpc *img = (struct hca_qpc *)(blk_mem + slot(1));

	img->state = HCA_QPS_COUNT;
	hm_qpc_get(blk_dev, 1, &t);
	cr_assert_eq(blk_dev->dp->qpc_corrupt, 1);
	cr_assert_str_eq(blk_event("warn.qpc_invalid", 0), "qpn=0x1 rule=state: not a QP state");
	cr_assert_null(blk_event("warn.qpc_differs", 0));
	cr_assert_eq(blk_dev->dp->qps[1]->state, HCA_QPS_RTS);
}

BLK_TEST(qpc, faulted_transfers_are_reported_and_the_context_kept)
{
	sim_time_t t = 0;
	struct hm_qp *qp = blk_qp(3, HCA_QPT_RC, HCA_QPS_RTS, 4, 128, 4);

	blk_dev->dp->qpc_base = BLK_MEM_BYTES; /* the store outside memory */
	blk_dev->dp->qpc_entries = 1;
	hm_qpc_store(blk_dev, qp, &t);
	cr_assert_str_eq(blk_event("warn.qpc_fault", 0), "qpn=0x3 dir=write");
	cr_assert_eq(hm_qpc_get(blk_dev, 3, &t), qp);
	cr_assert_str_eq(blk_event("warn.qpc_fault", 1), "qpn=0x3 dir=read");
	cr_assert_eq(blk_dev->dp->qpc_corrupt, 0, "nothing read, nothing compared");
	hm_qpc_get(blk_dev, 3, &t);
	cr_assert_eq(blk_dev->dp->qpc_hits, 1, "cached all the same");
}
