/* dma: the device's DMA reads of WQEs, tagged by client, with the read errors a test may
 * inject (hcasim_dma_read_error). */
#ifndef HM_DMA_H
#define HM_DMA_H

#include "model/ctx.h"

/* Who a DMA read is for, as the device's DMA engine tags it (and the hcasim.h numbering). */
enum hm_dma_client { HM_DMA_SQ_WQE = 0, HM_DMA_RQ_WQE = 1, HM_DMA_SRQ_WQE = 2 };
/* Read a WQE (or a window of them) for client's object num: len bytes at device address addr
 * into buf, *t advancing as sim_dma_read_timed does. True if the read failed: refused by the
 * IOMMU, or an injected error (hcasim_dma_read_error) used up on it. */
bool hm_wqe_read(struct hm_dev *d, enum hm_dma_client client, uint32_t num, uint64_t addr,
		 void *buf, size_t len, sim_time_t *t);

#endif
