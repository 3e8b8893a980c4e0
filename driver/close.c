/* Driver: closing a context as the kernel's uverbs does when the file of a context is released
 * (ib_uverbs_cleanup_ucontext): whatever the program left is destroyed — QPs after leaving
 * their multicast groups, then SRQs, address handles, memory windows, memory regions, CQs,
 * completion channels, PDs and XRC domains, in the order their references allow — and the
 * device's user context then closes (DEALLOC_UCTX refuses while it owns anything). */
#include "driver/drv.h"

#include <stdlib.h>

/* Destroy one object of a kind; the verbs report their own failures. */
static void destroy(uint32_t kind, void *obj)
{
	switch (kind) {
	case DRV_KIND_QP: {
		struct drv_qp *qp = obj;

		while (qp->mcgs)
			if (ibv_detach_mcast(&qp->qpx.qp_base, &qp->mcgs->gid, qp->mcgs->lid))
				break;
		ibv_destroy_qp(&qp->qpx.qp_base);
		return;
	}
	case DRV_KIND_SRQ:
		ibv_destroy_srq(obj);
		return;
	case DRV_KIND_AH:
		ibv_destroy_ah(obj);
		return;
	case DRV_KIND_MW:
		drv_dealloc_mw(obj);
		return;
	case DRV_KIND_MR:
		ibv_dereg_mr(obj);
		return;
	case DRV_KIND_CQ:
		ibv_destroy_cq(obj);
		return;
	case DRV_KIND_CHAN:
		ibv_destroy_comp_channel(obj);
		return;
	case DRV_KIND_PD:
		ibv_dealloc_pd(obj);
		return;
	case DRV_KIND_XRCD:
		drv_close_xrcd(obj);
		return;
	}
}

void drv_ctx_cleanup(struct ibv_context *ctx)
{
	static const uint32_t order[] = { DRV_KIND_QP, DRV_KIND_SRQ, DRV_KIND_AH,
					  DRV_KIND_MW, DRV_KIND_MR,  DRV_KIND_CQ,
					  DRV_KIND_CHAN, DRV_KIND_PD, DRV_KIND_XRCD };

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		size_t n;
		const void **all = drv_handle_all(order[k], &n);

		/* Every verbs object begins with its ibv_context pointer. */
		for (size_t i = 0; i < n; i++)
			if (*(struct ibv_context *const *)all[i] == ctx)
				destroy(order[k], (void *)all[i]);
		free(all);
	}
}
