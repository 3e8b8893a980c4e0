/* hcasim.h — simulator control for programs running on the simulated HCAs.
 *
 * Link with -lhcasim (and -libverbs from the same build/lib). Configuration is read at boot:
 * defaults, then the file named by HCASIM_CONFIG, then every hcasim_config_set() made before
 * boot. The first ibv_get_device_list() boots the system: hosts and HCAs are created, the
 * driver initializes each HCA and the subnet manager brings the ports to ACTIVE.
 * hcasim_boot() alone only creates the hardware (no driver has probed it). Every function
 * returning int gives 0 or a negative errno; after a failure (of these functions or of a
 * verb) hcasim_last_error() says which key, field or rule was at fault — like errno, it is
 * not cleared by later successes. */
#ifndef HCASIM_H
#define HCASIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- libhcasim: configuration, time, tracing ---- */
int hcasim_config_set(const char *key, const char *value); /* -EBUSY after boot */
int hcasim_config_get(const char *key, char *buf, size_t len);
int hcasim_config_load(const char *path);                   /* -EBUSY after boot */
int hcasim_boot(void);
int hcasim_booted(void);
/* Tear the system down. The next boot starts afresh: from the defaults and HCASIM_CONFIG,
 * without the hcasim_config_set() calls made before this shutdown. */
void hcasim_shutdown(void);
const char *hcasim_last_error(void);

/* NULL while the simulation runs; once it was halted (a mismatch between a block's C twin and
 * its RTL in lockstep or checked mode, HCASIM_IMPL / impl.*, with impl.on_mismatch = stop), the
 * report: device, block, cycle, field, expected and got, and the wave file. Nothing runs after
 * a halt; verbs that wait fail. */
const char *hcasim_halted(void);
/* The mismatches between C twins and RTL since boot (with impl.on_mismatch = count the run
 * goes on after each; hcasim_shutdown(), or the exit, prints their count by block), and the
 * report of the i-th (from 0), as printed when it happened; NULL past the first 16, which are
 * the ones kept. Kept after hcasim_shutdown(), until the next boot. */
uint64_t hcasim_mismatches(void);
const char *hcasim_mismatch(uint64_t i);

/* Co-simulation: fn(arg, from_ps, to_ps) is called whenever simulated time is about to move
 * forward (before anything at to_ps happens), e.g. by a SystemC top that keeps its own time in
 * step (sim/systemc/); it may block. Kept across boots; NULL removes it. */
void hcasim_time_hook(void (*fn)(void *arg, uint64_t from_ps, uint64_t to_ps), void *arg);

uint64_t hcasim_now_ps(void);          /* simulated time */
void hcasim_run_for_ps(uint64_t ps);   /* advance the simulation */
uint64_t hcasim_events_executed(void); /* kernel events run so far */

/* Trace categories ("port,qp", "*", "" for none) and output file (NULL = stderr). The
 * environment's HCASIM_TRACE and HCASIM_TRACE_FILE are applied at boot. */
int hcasim_trace(const char *categories, const char *path);
/* Observe trace events in the program instead of (or besides) a file: fn is called for every
 * event of the given categories, at the moment it is traced, with its simulated time, device
 * (-1 for events outside a device), name ("req.pkt") and key=value text (what follows the
 * name on a trace line, up to 2047 bytes; "" if none). The categories are independent of
 * hcasim_trace()'s. One observer at a time: a new call replaces it, fn NULL removes it. The
 * observer stays across hcasim_shutdown() and boot. fn must not call back into the
 * simulator. -EINVAL names an unknown category, changing nothing. Every event and its fields
 * are declared once in sim/trace.def (docs/trace-events.md); a variant is an event or a field
 * of its own, so an observer dispatches on the name and reads fields, never words. */
typedef void (*hcasim_trace_observer)(void *arg, uint64_t t_ps, int dev, const char *event,
				      const char *fields);
int hcasim_trace_observe(const char *categories, hcasim_trace_observer fn, void *arg);
/* The value of key in such key=value text (a key=value pair at its start or after a space):
 * as a number (decimal, or hex with 0x) into *v; or as text, up to the next space and at most
 * len - 1 bytes, into buf. 1 if found (and, for a number, one was there), else 0. */
int hcasim_trace_field(const char *fields, const char *key, uint64_t *v);
int hcasim_trace_field_str(const char *fields, const char *key, char *buf, size_t len);

/* Waves (docs/waves.md): write the model's signals as a VCD (timescale 1 ps) to path — per QP
 * (hca<dev>.qp<qpn hex>.*) state, PSNs (next, last acked, expected), SQ/RQ indexes, retry and
 * RNR counts, the ACK timer; per CQ its indexes; doorbells; QP context cache hits and misses;
 * and the transactions of the blocks with an RTL twin (hca<dev>.<block>.txn.*). Booted: from
 * now on (a dump being written is finished first); before boot: from the next boot. NULL or ""
 * finishes the file (hcasim_shutdown() does too; the file is complete only then). WAVES=1 in
 * the environment does the same at boot to build/waves/model.vcd (the directory from
 * HCASIM_WAVES_DIR; model.<n>.vcd for a process's n-th boot), WAVES=<path> to that path.
 * Blocks running as RTL (impl rtl, lockstep or checked) write their pins beside the VCD, as
 * hca<dev>.<block>.fst (docs/rtl.md). -errno naming the path. Writing waves does not change
 * the simulation. */
int hcasim_waves(const char *path);

/* Write every link's frames to "<prefix>.link<N>.pcap" (NULL or "" stops). Links join hosts
 * 2k and 2k+1 port to port; N counts them in that order (with sim.topology=switch, link N is
 * switch port N + 1's cable: below). The frames HCA H turns around
 * inside itself (internal loopback, docs/loopback.md) go to "<prefix>.hca<H>.loopback.pcap",
 * created at its first such frame. HCASIM_PCAP=prefix does the same at boot. InfiniBand
 * captures use LINKTYPE_WIRESHARK_UPPER_PDU, RoCEv2 ones Ethernet. */
int hcasim_pcap(const char *prefix);

/* Fault injection on link N (numbered as for hcasim_pcap), for frames sent from side 0 (the
 * even host) or 1, or both (-1); seeded from sim.seed. The fault.* settings install the same on
 * every link at boot. Probabilities in parts per million. See sim/link.h. */
struct hcasim_faults {
	uint32_t drop_ppm, corrupt_ppm, dup_ppm, reorder_ppm, delay_ppm;
	uint32_t drop_every; /* every Nth frame dropped, 0 = off */
	uint64_t delay_ps;   /* extra latency of a delayed frame */
};
int hcasim_link_faults(int link, int side, const struct hcasim_faults *f);
/* A targeted fault on link N for frames sent from side (0, 1, -1 both) whose BTH matches:
 * destination QP, PSN, opcode (-1 = any), and for nth > 0 the packet's place in its message
 * (counted in PSNs from the FIRST/ONLY). The first count matches (0 = all) are dropped,
 * corrupted, duplicated or delayed by delay_ps. Up to 8 per side, tried in the order added
 * and before the random faults; t NULL removes the side's targets. -EINVAL (a field out of
 * range) or -ENOSPC, changing nothing. */
enum hcasim_fault { HCASIM_FAULT_DROP, HCASIM_FAULT_CORRUPT, HCASIM_FAULT_DUP, HCASIM_FAULT_DELAY };
struct hcasim_fault_target {
	int64_t qpn, psn, opcode; /* to match; -1 = any */
	enum hcasim_fault fault;  /* what happens to a match */
	uint32_t count;           /* matches that get it; 0 = all */
	uint64_t delay_ps;        /* HCASIM_FAULT_DELAY only */
	uint32_t nth;             /* only the nth packet of a message (1 = first); 0 = any */
};
int hcasim_link_fault_target(int link, int side, const struct hcasim_fault_target *t);
/* Faults injected so far on link N from side: [0] drops, [1] corruptions, [2] duplicates,
 * [3] reorders, [4] delays. */
int hcasim_link_fault_counts(int link, int side, uint64_t out[5]);

/* Link N down (up = 0) or up (1) now, or down from simulated time start_ps for duration_ps
 * and then up again (fault.link_down does the same from the configuration). While a link is
 * down it carries nothing: frames sent and in flight are lost. Its ports fall to DOWN at once
 * (IBV_EVENT_PORT_ERR); when it comes back they train (port.training_ns), the subnet manager
 * sweeps them (port.sm_delay_ns) and they are ACTIVE again (IBV_EVENT_PORT_ACTIVE). */
int hcasim_link_set(int link, int up);
int hcasim_link_down_window(int link, uint64_t start_ps, uint64_t duration_ps);
int hcasim_link_is_up(int link); /* 1, 0, or a negative errno */
/* The subnet manager gives port (1-based) of device dev a new LID (0x0001..0xbfff, not used
 * by another port); an ACTIVE port is reprogrammed after port.sm_delay_ns and raises
 * IBV_EVENT_LID_CHANGE. -EINVAL, -EADDRINUSE. */
int hcasim_sm_set_lid(int dev, int port, unsigned lid);

/* The switch (sim.topology=switch, docs/blocks/switch.md): every host port is cabled to a
 * switch port, host h port p to switch port h * hca.ports + p, over link h * hca.ports + p - 1
 * (the capture "<prefix>.link<N>.pcap" of switch port N + 1). hcasim_switch_ports() is the
 * number of switch ports, 0 without a switch. The counters of switch port (1-based), since
 * boot: */
struct hcasim_switch_port_counters {
	uint64_t rx_pkts, rx_bytes; /* frames (and bytes) in from the host */
	uint64_t tx_pkts, tx_bytes; /* frames out to the host */
	uint64_t rx_discards;       /* frames in dropped: no route, routed back, bad FCS */
	uint64_t tx_discards;       /* frames for this port dropped: its queue was full */
	uint64_t flooded;           /* Ethernet: frames in flooded (unknown unicast, multicast) */
	uint64_t xoff;              /* Ethernet: PFC pauses (XOFF) sent to the host */
	uint64_t stalls;            /* frames the host had to hold: no credits or paused */
	uint64_t credit_blocks;     /* InfiniBand: credits returned to the host (64-byte blocks) */
	uint64_t queue_max;         /* most bytes the output queue ever held */
};
/* In a fabric (docs/fabric.md#a-switch-across-processes) the switch is in the process
 * holding host 0, whose counters are the switch's (stalls only for the hosts it holds); a
 * process holding other hosts answers for their ports with stalls alone (every other field 0)
 * and refuses the rest with -ENODEV. */
int hcasim_switch_ports(void);
int hcasim_switch_port_counters(int port, struct hcasim_switch_port_counters *out);
/* The switch's forwarding of lid, as the SM programmed it: *ports gets bit p set for every
 * switch port p the LFT (unicast lid) or the MFT (multicast lid) sends it out of. 0, -EINVAL
 * (no InfiniBand switch, lid 0 or above 0xfffe, ports NULL), -ENODEV (in a fabric, a process
 * that does not hold the switch: host 0's does). */
int hcasim_switch_forward(unsigned lid, uint64_t *ports);
/* The subnet manager routes unicast lid out of switch port (0: nowhere) with a
 * SubnSet(LinearForwardingTable), as a static route set by an administrator; the port that
 * owns lid gets its route back at its next sweep or LID change. -ENODEV (no InfiniBand
 * switch), -EINVAL. */
int hcasim_sm_set_route(unsigned lid, int port);

/* Hand len bytes to the receive path of port (1-based) of device dev as if they had come off
 * its link with a good Ethernet FCS: the frame as a capture shows it (InfiniBand: LRH to VCRC;
 * RoCEv2: Ethernet header to ICRC, without the FCS). It takes the receive pipeline's next slot
 * after the current simulated time and gets every check of a received frame: a malformed frame
 * or a bad ICRC/VCRC is dropped and counted (hcasim_dev_counters rx_dropped, rx_crc_errors;
 * the port counters), a frame for no QP or a QP in the wrong state likewise; a good one is
 * delivered. It does not pass through the link: no capture, no link fault. The bytes are
 * copied before the call returns; the frame is handled when the simulation next runs (traced
 * pkt.inject). 0, or -EINVAL (no such device or port, frame NULL, len 0), -EMSGSIZE
 * (len > HCASIM_FRAME_MAX). */
#define HCASIM_FRAME_MAX 16384
int hcasim_inject_frame(int dev, int port, const void *frame, size_t len);

/* PCIe error injection on device dev: the next count DMA reads of the given kind for object
 * num (a QPN, or an SRQN) complete with Unsupported Request status, as a failed host bridge
 * or a bad translation would make them. A send or receive WQE that cannot be read is a
 * catastrophic work queue error: the QP goes to ERR, everything is flushed and
 * IBV_EVENT_QP_FATAL is raised; for an SRQ, IBV_EVENT_SRQ_ERR is raised and every QP
 * attached to it goes to ERR. Up to 8 pending per device: -EINVAL, -ENOSPC. */
enum hcasim_dma_client { HCASIM_DMA_SQ_WQE, HCASIM_DMA_RQ_WQE, HCASIM_DMA_SRQ_WQE };
int hcasim_dma_read_error(int dev, enum hcasim_dma_client client, uint32_t num, uint32_t count);

/* Whether this process holds host `host` (HCASIM_FABRIC/HCASIM_HOST, docs/fabric.md); every
 * host of the system is held without a fabric. */
int hcasim_fabric_holds(int host);
/* Check, without booting, what a boot would check of the fabric: HCASIM_CONFIG, HCASIM_FABRIC
 * and HCASIM_HOST (the hosts in the configured system) and, when DIR/fabric.ini exists, the
 * keys that shape the fabric against it. 0, or the boot's error (-EINVAL naming the variable
 * or key); creates nothing. hcasim-exec checks its --fabric and --host so. */
int hcasim_fabric_check(void);
int hcasim_num_devices(void);

/* Host messages (docs/fabric.md#host-messages): bytes from the program of host `from` to the
 * program of host `to`, its pair (hosts 2k and 2k+1, sim.topology=pairs), out of band — no
 * port, capture, fault or counter sees them — arriving one link latency (link.latency_ns)
 * after the send, in simulated time, also when the two hosts are held by two processes of a
 * fabric. Programs that drive one host each pass what they must tell each other (a QP number,
 * a key) and when (the turn to act) so, in the same simulated time in one process or two.
 * hcasim_host_send: 0, or -ENODEV (not booted), -EINVAL (no such host), -EPERM (`from` not
 * held here), -ENOTCONN (not a pair; the peer's process has not joined or has gone),
 * -EMSGSIZE (over 4096 bytes). hcasim_host_recv waits, running the simulation, for the oldest
 * message to `host` from `from` and copies it to buf: its length, or -ETIMEDOUT (none within
 * timeout_ps; UINT64_MAX: for ever), -EDEADLK (no host can ever send one: nothing is left to
 * happen, whatever the timeout), -EMSGSIZE (longer than
 * len: it stays), -ECANCELED (the simulation halted), or the checks of hcasim_host_send. */
int hcasim_host_send(int from, int to, const void *buf, size_t len);
int hcasim_host_recv(int host, int from, void *buf, size_t len, uint64_t timeout_ps);

/* What the links to other processes of the fabric have cost this process since it started
 * (docs/fabric.md#the-cost-of-synchronisation): messages written to the channels (frames and
 * SYNC promises), messages taken from them, the waits for a peer's promise and their wall
 * time. All 0 without a fabric. */
struct hcasim_fabric_counts {
	uint64_t packets_sent, syncs_sent, messages_taken;
	uint64_t waits, wait_ns;
};
int hcasim_fabric_counts(struct hcasim_fabric_counts *out); /* 0, or -EINVAL (NULL) */

/* Data-path counters of device dev (since boot). */
struct hcasim_dev_counters {
	uint64_t qpc_hits;       /* QP context cache hits */
	uint64_t qpc_misses;     /* misses (each a DMA read of the backing store) */
	uint64_t qpc_writebacks; /* dirty evictions (each a DMA write) */
	uint64_t tx_pkts;        /* request packets the requester sent */
	uint64_t rx_pkts;        /* frames received from the links */
	uint64_t rx_crc_errors;  /* frames dropped for a bad ICRC or VCRC */
	uint64_t rx_dropped;     /* frames dropped for any reason (CRC, no QP, state, Q_Key) */
	uint64_t bad_doorbells;  /* doorbells ignored */
	uint64_t qpc_corrupt;    /* QP context images read back that differ from the one written */
};
int hcasim_dev_counters(int dev, struct hcasim_dev_counters *out);

/* Counters of QP qpn on device dev (since it was created). */
struct hcasim_qp_counters {
	uint64_t tx_pkts, tx_bytes; /* packets and payload bytes sent: requests, responses, ACKs */
	uint64_t rx_pkts, rx_bytes; /* packets and payload bytes received */
	uint64_t naks_sent, naks_rcvd; /* NAKs of any kind (RNR, sequence, errors) */
	uint32_t sq_psn, rq_psn;    /* next PSN to send, next PSN expected */
};
int hcasim_qp_counters(int dev, uint32_t qpn, struct hcasim_qp_counters *out);
uint64_t hcasim_dma_faults(int dev); /* DMA faults the IOMMU refused on device dev */

/* Port counters (IBA PortCounters and PortCountersExtended) and transport error counters of
 * every port, as Linux shows them under /sys/class/infiniband/<dev>/ports/<n>/counters/ and
 * .../hw_counters/ (docs/counters.md). A counter stops at 2^width - 1. */
struct hcasim_counter_desc {
	const char *name;  /* Linux sysfs file name; NULL for the 32-bit PortCounters fields of
			    * data and packets, which Linux shows in their extended (64-bit) form */
	const char *iba;   /* IBA "Attribute.Field" ("PortCounters.PortXmitData"); NULL if none */
	const char *group; /* sysfs directory: "counters" or "hw_counters" */
	unsigned width;    /* bits */
	const char *doc;   /* what it counts */
};
/* Describe counter i (0-based); -ENOENT past the last one. */
int hcasim_counter_desc(unsigned i, struct hcasim_counter_desc *out);
/* Counter name (its Linux name or its IBA name) of port (1-based) on device dev. -EINVAL: no
 * such device or port; -ENOENT: no counter of that name. */
int hcasim_port_counter(int dev, int port, const char *name, uint64_t *value);
/* Write every device's counters in the Linux sysfs layout, creating the directories:
 * <dir>/<dev>/ports/<n>/counters/<name> and .../hw_counters/<name>, one decimal value and a
 * newline per file, <dev> the verbs device name (hcasim0, ...). HCASIM_COUNTERS_DIR, else the
 * key counters.dump_dir, does the same at hcasim_shutdown(). */
int hcasim_counters_dump(const char *dir);

/* ---- libibverbs (driver) extensions ---- */
struct ibv_context;
struct ibv_qp;

/* One firmware command as the driver saw it. */
struct hcasim_cmd_record {
	uint16_t opcode;      /* model/hw/cmd.def */
	const char *name;     /* "CREATE_QP" */
	uint8_t status;       /* 0 = OK */
	uint64_t submit_ps;   /* doorbell written */
	uint64_t complete_ps; /* driver saw the completion */
	uint64_t start_cycle; /* device core cycle the firmware started it */
	uint64_t done_cycle;  /* device core cycle the status was written */
};

/* Copy up to max of the most recent commands of this device (oldest first); returns the
 * number copied. */
int hcasim_cmd_log(struct ibv_context *ctx, struct hcasim_cmd_record *out, int max);
/* Put a QP in a state without a transition (firmware back door DEBUG_FORCE_QP_STATE), e.g.
 * SQE for conformance tests before the data path can produce a send error. state is an
 * enum ibv_qp_state value. */
int hcasim_qp_force_state(struct ibv_qp *qp, int state);

#ifdef __cplusplus
}
#endif
#endif
