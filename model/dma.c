/* dma: WQE reads, tagged by client, with injected read errors (model/dma.h). */
#include "model/dma.h"
#include "sim/trace.h"

/* True (and one injected error used up) if the next read of client for object num is to
 * fail as a PCIe completion with Unsupported Request status would. */
static bool dma_inject_hit(struct hm_dev *d, enum hm_dma_client client, uint32_t num)
{
	for (int i = 0; i < HM_DMA_INJECT_MAX; i++) {
		struct hm_dma_inject *j = &d->dp->dma_inject[i];

		if (j->left && j->client == client && j->num == num) {
			j->left--;
			trace_pcie_dma_rd_inject(d->devno, client, num, j->left);
			return true;
		}
	}
	return false;
}

bool hm_wqe_read(struct hm_dev *d, enum hm_dma_client client, uint32_t num, uint64_t addr,
		 void *buf, size_t len, sim_time_t *t)
{
	return dma_inject_hit(d, client, num) || sim_dma_read_timed(d->fn, addr, buf, len, t);
}
