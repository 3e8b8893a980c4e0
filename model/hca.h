/* The HCA device: BAR0 registers, the command engine that hands commands to the firmware,
 * ports, event queues. This header is the narrow device-internal API that firmware/ uses;
 * the driver never includes it (it sees only model/hw/). */
#ifndef HM_HCA_H
#define HM_HCA_H

#include "model/counters.h"
#include "model/hw/hca_hw.h"
#include "sim/config.h"
#include "sim/kernel.h"
#include "sim/pcie_dev.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sim_pcap;

#define HM_MAX_PORTS 2
#define HM_GID_TABLE 16

struct fw_state;
struct hm_dp;
struct sim_link;

/* One physical port (IBA 14.2.5 PortInfo subset). */
struct hm_port {
	struct hm_dev *dev;        /* owner */
	uint8_t num;               /* 1-based */
	uint8_t state;             /* IBV_PORT_* logical state (1 DOWN .. 4 ACTIVE) */
	uint8_t phys_state;        /* 2 POLLING, 3 DISABLED, 5 LINK_UP */
	uint8_t link_layer;        /* 1 InfiniBand, 2 Ethernet */
	uint16_t lid, sm_lid;      /* assigned by the SM (0 on Ethernet) */
	uint8_t lmc;               /* LID mask control */
	uint64_t guid;             /* port GUID */
	uint64_t subnet_prefix;    /* GID prefix */
	uint8_t mac[6];            /* Ethernet address (RoCE) */
	uint32_t ipv4;             /* IPv4 address (RoCE), host order */
	uint16_t pkeys[64];        /* first entries of the P_Key table (rest are 0) */
	uint8_t gids[HM_GID_TABLE][16]; /* populated GIDs, network order */
	uint8_t gid_type[HM_GID_TABLE]; /* IBV_GID_TYPE_* coding: 0 IB, 1 RoCE v1, 2 RoCE v2 */
	unsigned ngids;            /* populated entries */
	int sm_handle;             /* registration with the subnet manager */
	sim_time_t tx_busy_ps;     /* transmitter reserved until */
	bool cable_up;             /* the link carries a signal (hcasim_link_set) */
	uint32_t train_gen;        /* link training in progress that is still current */
};

/* One event queue (architecture §2: eq block). */
struct hm_eq {
	bool live;           /* created */
	uint64_t ring_addr;  /* host ring */
	uint32_t log_size;   /* log2 entries */
	uint32_t vector;     /* MSI-X vector */
	uint64_t event_mask; /* bit per HCA_EQE_* type */
	uint32_t pi;         /* producer index (device) */
	uint32_t ci;         /* consumer index (from EQ_DOORBELL) */
	bool armed;          /* next EQE raises the vector */
	bool broken;         /* a write to the ring faulted: the EQ takes no more events */
	uint64_t overruns;   /* EQEs dropped because the ring was full */
};

struct hm_qp;
struct hm_flight;

/* Wires: the signals a block sends to a block above it in model/blocks.dag
 * (docs/architecture.md#the-block-graph), as a completer raises a line to its requester. The
 * receiving block's handler is installed when the device is built (hm_dev_create); the
 * sender raises the wire and gets nothing back. */
struct hm_wires {
	/* comp, wqe_fetch -> sched: qp may send now (hm_sched_wake) */
	void (*sq_wake)(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);
	/* comp -> req: the oldest WQE f is retired with status (hm_req_retired) */
	void (*sq_retired)(struct hm_dev *d, struct hm_qp *qp, const struct hm_flight *f,
			   uint8_t status);
	/* comp -> sched -> req: send again from psn (hm_sched_retry) */
	void (*sq_retry)(struct hm_dev *d, struct hm_qp *qp, uint32_t psn, sim_time_t t);
	/* qp -> qp_cmd: flush qp's queues (hm_qp_flush) */
	void (*qp_flush)(struct hm_dev *d, struct hm_qp *qp, sim_time_t t);
	/* port -> rx: a frame off a link, or turned around inside the HCA, arrives (hm_rx_frame);
	 * frame is a link buffer the receive path owns from then on (sim_link_frame_free) */
	void (*rx_frame)(struct hm_dev *d, unsigned port, uint8_t *frame, size_t len,
			 bool fcs_ok, bool loopback, bool crc_pending);
};

struct hm_dev {
	int devno, host;             /* device number (trace dev=), host index */
	char name[32];               /* "hcasim0" */
	struct sim_config cfg;       /* configuration at boot */
	struct sim_kernel *k;        /* the simulation kernel the device runs in */
	struct sim_clock core;       /* core clock domain */
	struct sim_pcie_fn *fn;      /* our PCIe function */
	uint64_t node_guid;          /* node GUID */
	uint64_t sys_image_guid;     /* system image GUID */
	/* registers */
	uint64_t cmdq_addr;          /* CMDQ_ADDR_HI:LO */
	bool cmd_busy;               /* a command is executing */
	uint64_t cmd_entry;          /* its entry (CMDQ_ADDR, or a UAR page's CMD_DB value) */
	uint16_t cmd_uid;            /* the user context it runs for (0: rung through CMD_DOORBELL) */
	bool uctx_live[HCA_UAR_PAGES]; /* user context n (and UAR page n) opened: firmware's
				      * ALLOC_UCTX sets it, the doorbells read it; [0] unused */
	uint8_t last_status;         /* of the last command */
	bool initialized;            /* INIT_HCA done */
	uint32_t clock_hi_latch;     /* CORE_CLOCK_HI as latched */
	/* blocks */
	struct hm_port ports[HM_MAX_PORTS];
	unsigned nports;
	struct hm_eq eqs[HCA_EQ_MAX];
	struct fw_state *fw;         /* firmware state */
	struct hm_dp *dp;            /* contexts of the data path (model/ctx.h) */
	struct hm_wires wire;        /* signals up the block graph */
	struct hm_blocks *blocks;    /* blocks with an RTL twin and their modes (model/twin.h) */
	struct sim_link *links[HM_MAX_PORTS]; /* link of each port, NULL if unconnected */
	int link_side[HM_MAX_PORTS]; /* this device's side of it */
	/* internal loopback (docs/loopback.md): frames addressed to one of our own ports */
	sim_time_t lb_busy_ps;       /* the loopback path is reserved until */
	struct sim_pcap *lb_pcap;    /* its capture, opened at its first frame, or NULL */
	char *lb_pcap_path;          /* where that capture goes (NULL: no capture) */
	struct hm_mcg *mcg;          /* multicast groups, HM_MCG_MAX, at the first attach (mcast.c) */
	/* counters */
	uint64_t cmds_executed;      /* commands completed */
	uint64_t bad_doorbells;      /* doorbells ignored */
	uint64_t ctr[HM_MAX_PORTS + 1][HM_CTR_COUNT]; /* model/counters.h: [0] device, [p] port p */
};

struct hm_dev *hm_dev_create(const struct sim_config *cfg, int devno, int host);
void hm_dev_destroy(struct hm_dev *d);

/* The firmware, as the device sees it (implemented in firmware/): create its state, and run
 * the command in the entry at cmd_entry for user context cmd_uid starting at time t (token:
 * CMD_DOORBELL's value, checked against the entry's; a command rung through a UAR page is not
 * token-checked: the doorbell carried the entry's address). Returns the time the status write
 * starts. */
struct fw_state *fw_create(struct hm_dev *d);
void fw_destroy(struct fw_state *fw);
sim_time_t fw_cmd_run(struct hm_dev *d, uint32_t token, bool check_token, sim_time_t t);
/* Command engine completion: the status and ownership of the entry are written back at t. */
void hm_cmd_finish(struct hm_dev *d, const struct hca_cmd_entry *tail, sim_time_t t);

/* UAR page n is open: page 0 (the device owner's) always, page n once user context n is. */
static inline bool hm_uar_open(const struct hm_dev *d, uint32_t page)
{
	return !page || d->uctx_live[page];
}

/* The device's core cycle now. */
static inline uint64_t hm_dev_cycle(const struct hm_dev *d)
{
	return sim_clock_cycles(&d->core, sim_now(d->k));
}

/* Issue a posted DMA write of len bytes (copied now) at time t >= now. */
static inline void hm_dma_write_at(struct hm_dev *d, uint64_t addr, const void *src, size_t len,
				   sim_time_t t)
{
	sim_dma_write_at(d->fn, addr, src, len, t, NULL, NULL);
}

#endif
