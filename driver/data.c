/* Driver: the context ops the verbs.h inline functions dispatch to, completion events, and the
 * *_str helpers. The send/receive/poll data path is built by the data-path issue; until then
 * its ops fail loudly with EOPNOTSUPP rather than pretend. */
#include "driver/drv.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	if (bad)
		*bad = wr;
	return drv_fail(EOPNOTSUPP, "ibv_post_send: the data path is not modelled yet");
}

static int post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	if (bad)
		*bad = wr;
	return drv_fail(EOPNOTSUPP, "ibv_post_recv: the data path is not modelled yet");
}

static int post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)srq;
	if (bad)
		*bad = wr;
	return drv_fail(EOPNOTSUPP, "ibv_post_srq_recv: the data path is not modelled yet");
}

static int poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq;
	(void)n;
	(void)wc;
	drv_fail(EOPNOTSUPP, "ibv_poll_cq: the data path is not modelled yet");
	return -EOPNOTSUPP;
}

static int req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	return drv_fail(EOPNOTSUPP, "ibv_req_notify_cq: the data path is not modelled yet");
}

int drv_ops_init(struct ibv_context_ops *ops)
{
	ops->post_send = post_send;
	ops->post_recv = post_recv;
	ops->post_srq_recv = post_srq_recv;
	ops->poll_cq = poll_cq;
	ops->req_notify_cq = req_notify_cq;
	return 0;
}

struct chan_wait {
	struct drv_chan *ch; /* channel */
	struct drv_dev *d;   /* its device */
};

static bool chan_ready(void *p)
{
	struct chan_wait *w = p;
	uint64_t v;

	if (w->d->irq_pending)
		drv_eq_process(w->d);
	/* The channel's eventfd counts events; peek without consuming. */
	return read(w->ch->ch.fd, &v, sizeof(v)) == sizeof(v) &&
	       write(w->ch->ch.fd, &v, sizeof(v)) == sizeof(v);
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct drv_chan *ch = DRV_OBJ(struct drv_chan, channel, DRV_KIND_CHAN);
	struct chan_wait w;
	int flags;

	if (!ch || !cq || !cq_context) {
		drv_fail(EINVAL, "ibv_get_cq_event: %s", !ch ? "not a live channel" : "NULL output");
		return -1;
	}
	w = (struct chan_wait){ ch, drv_dev_of(ch->ch.context) };
	flags = fcntl(ch->ch.fd, F_GETFL);
	fcntl(ch->ch.fd, F_SETFL, flags | O_NONBLOCK);
	if (!chan_ready(&w)) {
		int rc = (flags & O_NONBLOCK) ? -EAGAIN
					      : sim_host_wait(chan_ready, &w, UINT64_MAX / 2);

		if (rc) {
			fcntl(ch->ch.fd, F_SETFL, flags);
			drv_fail(rc == -EAGAIN ? EAGAIN : EDEADLK,
				 "ibv_get_cq_event: %s", rc == -EAGAIN ? "no event (non-blocking)"
				 : "no completion event can arrive: the simulation is idle");
			return -1;
		}
	}
	fcntl(ch->ch.fd, F_SETFL, flags);
	/* Completion events are routed to channels by the data path, which fills *cq. */
	drv_fail(EOPNOTSUPP, "ibv_get_cq_event: completion events are not modelled yet");
	return -1;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (cq)
		cq->comp_events_completed += nevents;
}

/* ---- strings ---- */

const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const s[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	return (unsigned)event < sizeof(s) / sizeof(s[0]) && s[event] ? s[event] : "unknown";
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const s[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	return (unsigned)node_type < sizeof(s) / sizeof(s[0]) && s[node_type] ? s[node_type]
									     : "unknown";
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const s[] = {
		[IBV_PORT_NOP] = "no state change (NOP)",
		[IBV_PORT_DOWN] = "down",
		[IBV_PORT_INIT] = "init",
		[IBV_PORT_ARMED] = "armed",
		[IBV_PORT_ACTIVE] = "active",
		[IBV_PORT_ACTIVE_DEFER] = "active defer",
	};

	return (unsigned)port_state < sizeof(s) / sizeof(s[0]) && s[port_state] ? s[port_state]
										: "unknown";
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const s[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	return (unsigned)status < sizeof(s) / sizeof(s[0]) && s[status] ? s[status] : "unknown";
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct drv_qp *q = DRV_OBJ(struct drv_qp, qp, DRV_KIND_QP);

	/* The extended work-request API (ibv_wr_*) is not offered: wr_start etc. stay NULL,
	 * and no QP is created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS. */
	return q ? &q->qpx : NULL;
}
