/* Suite mcast: UD multicast through the verbs API (docs/multicast.md). One sender on hcasim0,
 * members on both hosts, one of them on the sender's HCA; every datagram is checked at every
 * member: exactly one completion, field by field, the GRH and the payload byte for byte; and
 * the port counters, rq_num_mce and the subnet manager's membership. */
#include <criterion/criterion.h>

#include "sim/sm.h"
#include "testbench/tb.h"
#include "testbench/tb_expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MLID 0xc001
#define NMEMBERS 4
#define SLOT_BYTES 1024u /* one receive buffer: the 40-byte GRH slot and the datagram */
#define SLOTS 16u
#define GRH_BYTES 40u

static const union ibv_gid MGID = { .raw = { 0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0,
					     0, 0, 0, 0, 0x01 } };

struct member {
	int host;            /* 0: the sender's HCA */
	struct ibv_qp *qp;   /* UD QP */
	struct ibv_cq *cq;   /* its own CQ (send and receive) */
	struct ibv_mr *mr;   /* SLOTS receive buffers */
	unsigned posted;     /* receives posted */
	unsigned done;       /* receives completed */
};

struct mc {
	struct tb_dev h[2];              /* hcasim0, hcasim1 */
	struct ibv_qp *snd;              /* the sender, on hcasim0 */
	struct ibv_cq *scq;
	struct ibv_mr *smr;              /* its payload */
	struct member m[NMEMBERS];       /* m[0] on hcasim0, m[1..3] on hcasim1 */
	struct ibv_ah *ah;               /* MLID with the MGID in the GRH */
	union ibv_gid sgid;              /* hcasim0's port GID 0 */
	unsigned sends;                  /* datagrams sent */
};

static struct ibv_cq *cq_new(struct tb_dev *t)
{
	struct ibv_cq *cq = ibv_create_cq(t->ctx, 64, NULL, NULL, 0);

	cr_assert_not_null(cq, "ibv_create_cq: %s", hcasim_last_error());
	return cq;
}

static struct ibv_mr *mr_new(struct tb_dev *t)
{
	static uint8_t bufs[8][SLOTS * SLOT_BYTES] __attribute__((aligned(4096)));
	static unsigned next;
	struct ibv_mr *mr;

	cr_assert_lt(next, 8u);
	memset(bufs[next], 0, sizeof(bufs[next]));
	mr = ibv_reg_mr(t->pd, bufs[next++], SLOTS * SLOT_BYTES, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr, "ibv_reg_mr: %s", hcasim_last_error());
	return mr;
}

/* A UD QP on t with cq, RESET -> INIT (port 1, P_Key index 0, Q_Key TB_QKEY) -> RTR -> RTS;
 * flags are ibv_create_qp_ex's create_flags (0: ibv_create_qp). */
static struct ibv_qp *ud_qp(struct tb_dev *t, struct ibv_cq *cq, uint32_t flags)
{
	struct ibv_qp_init_attr_ex init = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = SLOTS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | (flags ? IBV_QP_INIT_ATTR_CREATE_FLAGS : 0),
		.pd = t->pd,
		.create_flags = flags,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = TB_QKEY };
	struct ibv_qp *qp = ibv_create_qp_ex(t->ctx, &init);

	cr_assert_not_null(qp, "ibv_create_qp_ex: %s", hcasim_last_error());
	EXPECT_OK(ibv_modify_qp(qp, &a,
				IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY));
	a.qp_state = IBV_QPS_RTR;
	EXPECT_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	EXPECT_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	return qp;
}

static void member_new(struct mc *c, int i, int host)
{
	struct member *m = &c->m[i];

	m->host = host;
	m->cq = cq_new(&c->h[host]);
	m->mr = mr_new(&c->h[host]);
	m->qp = ud_qp(&c->h[host], m->cq, 0);
}

/* Keep one receive posted on m: slot posted % SLOTS, wr_id = the slot. */
static void member_post(struct member *m)
{
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	unsigned slot = m->posted % SLOTS;

	if (m->posted > m->done)
		return;
	cr_assert_lt(m->posted, SLOTS, "a test used more receive slots than there are");
	sge = (struct ibv_sge){ (uintptr_t)m->mr->addr + slot * SLOT_BYTES, SLOT_BYTES,
				m->mr->lkey };
	wr.wr_id = slot;
	EXPECT_OK(ibv_post_recv(m->qp, &wr, &bad));
	m->posted++;
}

/* Boot both hosts: the sender (with create_flags sflags) on hcasim0, member 0 on hcasim0 and
 * members 1-3 on hcasim1, none attached yet; the multicast address handle. */
static void mc_open(struct mc *c, uint32_t sflags)
{
	struct ibv_ah_attr ah = { .dlid = MLID, .port_num = 1, .is_global = 1 };

	memset(c, 0, sizeof(*c));
	tb_open(&c->h[0], 0);
	tb_open(&c->h[1], 1);
	c->scq = cq_new(&c->h[0]);
	c->smr = mr_new(&c->h[0]);
	for (unsigned i = 0; i < SLOT_BYTES; i++)
		((uint8_t *)c->smr->addr)[i] = (uint8_t)(i * 7 + 3);
	c->snd = ud_qp(&c->h[0], c->scq, sflags);
	for (int i = 0; i < NMEMBERS; i++)
		member_new(c, i, i == 0 ? 0 : 1);
	cr_assert_eq(ibv_query_gid(c->h[0].ctx, 1, 0, &c->sgid), 0);
	ah.grh.dgid = MGID;
	ah.grh.sgid_index = 0;
	ah.grh.hop_limit = 1;
	c->ah = ibv_create_ah(c->h[0].pd, &ah);
	cr_assert_not_null(c->ah, "ibv_create_ah: %s", hcasim_last_error());
}

/* Tear down what mc_open made (a QP still attached is detached first; a detach of one that is
 * not attached just fails), and close both hosts. */
static void mc_close(struct mc *c)
{
	cr_assert_eq(ibv_destroy_ah(c->ah), 0);
	for (int i = 0; i <= NMEMBERS; i++) {
		struct ibv_qp *qp = i < NMEMBERS ? c->m[i].qp : c->snd;
		struct ibv_cq *cq = i < NMEMBERS ? c->m[i].cq : c->scq;
		struct ibv_mr *mr = i < NMEMBERS ? c->m[i].mr : c->smr;

		ibv_detach_mcast(qp, &MGID, MLID);
		cr_assert_eq(ibv_destroy_qp(qp), 0, "%s", hcasim_last_error());
		cr_assert_eq(ibv_destroy_cq(cq), 0, "%s", hcasim_last_error());
		cr_assert_eq(ibv_dereg_mr(mr), 0, "%s", hcasim_last_error());
	}
	tb_close(&c->h[0]);
	tb_close(&c->h[1]);
}

static uint64_t ctr(int dev, const char *name)
{
	uint64_t v = 0;

	cr_assert_eq(hcasim_port_counter(dev, 1, name, &v), 0, "%s: %s", name,
		     hcasim_last_error());
	return v;
}

static uint64_t dropped(int dev)
{
	struct hcasim_dev_counters dc;

	cr_assert_eq(hcasim_dev_counters(dev, &dc), 0);
	return dc.rx_dropped;
}

/* Check member m's completion wc of a datagram of len bytes from the sender (payload from
 * byte off of the sender's buffer): every field, the GRH slot, the payload, the byte after. */
static void check_recv(struct mc *c, int i, const struct ibv_wc *wc, uint32_t len, uint32_t off)
{
	struct member *m = &c->m[i];
	const uint8_t *buf = (const uint8_t *)m->mr->addr + wc->wr_id * SLOT_BYTES;
	const uint8_t *src = (const uint8_t *)c->smr->addr + off;

	cr_assert_eq(wc->status, IBV_WC_SUCCESS, "member %d: %s", i,
		     ibv_wc_status_str(wc->status));
	cr_assert_eq(wc->opcode, IBV_WC_RECV, "member %d", i);
	cr_assert_eq(wc->wr_id, m->done % SLOTS, "member %d: receives complete in order", i);
	cr_assert_eq(wc->byte_len, GRH_BYTES + len, "member %d", i);
	cr_assert_eq(wc->qp_num, m->qp->qp_num, "member %d", i);
	cr_assert_eq(wc->src_qp, c->snd->qp_num, "member %d", i);
	cr_assert_eq(wc->slid, c->h[0].port.lid, "member %d: slid is the sender's port", i);
	cr_assert_eq(wc->sl, 0);
	cr_assert_eq(wc->wc_flags, IBV_WC_GRH, "member %d: wc_flags 0x%x", i, wc->wc_flags);
	cr_assert_eq(wc->pkey_index, 0);
	cr_assert_eq(wc->dlid_path_bits, 0);
	/* The GRH (IBA 8.3): IPVer 6, next header 0x1B (BTH), SGID the sender's, DGID the MGID. */
	cr_assert_eq(buf[0] >> 4, 6, "member %d: GRH IPVer", i);
	cr_assert_eq(buf[6], 0x1b, "member %d: GRH NxtHdr", i);
	cr_assert_eq(buf[7], 1, "member %d: GRH HopLmt as sent", i);
	cr_assert_eq((buf[4] << 8 | buf[5]), 12 + 8 + ((len + 3) & ~3u) + 4,
		     "member %d: GRH PayLen", i);
	cr_assert_arr_eq(buf + 8, c->sgid.raw, 16, "member %d: GRH SGID", i);
	cr_assert_arr_eq(buf + 24, MGID.raw, 16, "member %d: GRH DGID", i);
	cr_assert_arr_eq(buf + GRH_BYTES, src, len, "member %d: payload", i);
	cr_assert_eq(buf[GRH_BYTES + len], 0, "member %d: the byte after the datagram", i);
	m->done++;
}

/* Send one datagram of len bytes (from byte off of the sender's buffer) to the group; the
 * members in `want` (bit i: member i) each complete exactly one receive, checked; the others
 * none. */
static void mc_send(struct mc *c, uint32_t len, uint32_t off, unsigned want)
{
	struct ibv_sge sge = { (uintptr_t)c->smr->addr + off, len, c->smr->lkey };
	struct ibv_send_wr wr = { .wr_id = 100 + c->sends, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;

	for (int i = 0; i < NMEMBERS; i++)
		member_post(&c->m[i]);
	wr.wr.ud.ah = c->ah;
	wr.wr.ud.remote_qpn = 0xffffff;
	wr.wr.ud.remote_qkey = TB_QKEY;
	EXPECT_OK(ibv_post_send(c->snd, &wr, &bad));
	tb_poll(c->scq, &wc, 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS, "send: %s", ibv_wc_status_str(wc.status));
	cr_assert_eq(wc.wr_id, 100 + c->sends);
	c->sends++;
	for (int i = 0; i < NMEMBERS; i++)
		if (want & (1u << i)) {
			tb_poll(c->m[i].cq, &wc, 1);
			check_recv(c, i, &wc, len, off);
		}
	/* Long enough for any frame to have arrived anywhere: nobody got a second copy. */
	hcasim_run_for_ps(200 * 1000 * 1000ull);
	for (int i = 0; i < NMEMBERS; i++)
		cr_assert_eq(ibv_poll_cq(c->m[i].cq, 1, &wc), 0,
			     "member %d got a completion it should not have (status %d)", i,
			     wc.status);
	cr_assert_eq(ibv_poll_cq(c->scq, 1, &wc), 0);
}

static void attach(struct mc *c, int i)
{
	EXPECT_OK(ibv_attach_mcast(c->m[i].qp, &MGID, MLID));
}

static void detach(struct mc *c, int i)
{
	EXPECT_OK(ibv_detach_mcast(c->m[i].qp, &MGID, MLID));
}

/* ---- the Done-when scenario ---- */

Test(mcast, one_send_reaches_four_qps_on_two_hosts_including_the_senders_hca)
{
	struct mc c;
	uint64_t x0, r1, u0;

	mc_open(&c, 0);
	cr_assert_eq(sim_sm_mcast_ports(MLID, MGID.raw), 0, "no group before the first attach");
	for (int i = 0; i < NMEMBERS; i++)
		attach(&c, i);
	/* The SM added both HCAs' ports (handles 0 and 1: registration order) to the group. */
	cr_assert_eq(sim_sm_mcast_ports(MLID, MGID.raw), 2);
	cr_assert(sim_sm_mcast_member(0, MLID, MGID.raw));
	cr_assert(sim_sm_mcast_member(1, MLID, MGID.raw));
	x0 = ctr(0, "multicast_xmit_packets");
	u0 = ctr(0, "unicast_xmit_packets");
	r1 = ctr(1, "multicast_rcv_packets");
	cr_assert_eq(x0, 0);
	cr_assert_eq(r1, 0);
	mc_send(&c, 200, 0, 0xf);
	mc_send(&c, 1, 5, 0xf);    /* one byte: pad 3 */
	mc_send(&c, 984, 17, 0xf); /* fills the slot: 40 + 984 = 1024 */
	/* Three frames on hcasim0's link, three received by hcasim1's port; the copy hcasim0
	 * turned around for member 0 is in no port counter (docs/loopback.md#counters). */
	cr_assert_eq(ctr(0, "multicast_xmit_packets"), 3);
	cr_assert_eq(ctr(0, "unicast_xmit_packets"), u0);
	cr_assert_eq(ctr(1, "multicast_rcv_packets"), 3);
	cr_assert_eq(ctr(1, "unicast_rcv_packets"), 0);
	cr_assert_eq(ctr(0, "multicast_rcv_packets"), 0);
	cr_assert_eq(ctr(1, "multicast_xmit_packets"), 0);
	cr_assert_eq(ctr(1, "rq_num_mce"), 0);
	cr_assert_eq(dropped(0), 0);
	cr_assert_eq(dropped(1), 0);
	mc_close(&c);
}

Test(mcast, detach_stops_delivery)
{
	struct mc c;

	mc_open(&c, 0);
	for (int i = 0; i < NMEMBERS; i++)
		attach(&c, i);
	mc_send(&c, 64, 0, 0xf);
	detach(&c, 2);
	mc_send(&c, 64, 64, 0xb); /* members 0, 1, 3 */
	cr_assert_eq(sim_sm_mcast_ports(MLID, MGID.raw), 2, "hcasim1 still has members");
	detach(&c, 1);
	detach(&c, 3);
	/* hcasim1's last QP left: the SM removed its port from the group. */
	cr_assert_eq(sim_sm_mcast_ports(MLID, MGID.raw), 1);
	cr_assert_not(sim_sm_mcast_member(1, MLID, MGID.raw));
	cr_assert(sim_sm_mcast_member(0, MLID, MGID.raw));
	/* The frame still crosses the link (no switch to prune it); hcasim1 drops it. */
	mc_send(&c, 64, 128, 0x1);
	cr_assert_eq(ctr(0, "multicast_xmit_packets"), 3);
	cr_assert_eq(ctr(1, "multicast_rcv_packets"), 3);
	cr_assert_eq(dropped(1), 1);
	detach(&c, 0);
	cr_assert_eq(sim_sm_mcast_ports(MLID, MGID.raw), 0, "the last detach removed the group");
	mc_send(&c, 64, 192, 0);
	cr_assert_eq(dropped(1), 2);
	cr_assert_eq(dropped(0), 0, "no copy was turned around on hcasim0");
	/* A detached QP can join again. */
	attach(&c, 2);
	mc_send(&c, 64, 256, 0x4);
	mc_close(&c);
}

Test(mcast, attaching_twice_delivers_once)
{
	struct mc c;

	mc_open(&c, 0);
	for (int i = 0; i < NMEMBERS; i++) {
		attach(&c, i);
		attach(&c, i); /* ib_uverbs: success, and nothing changes */
	}
	mc_send(&c, 100, 0, 0xf);
	/* One detach undoes both attaches; a second finds nothing to detach. */
	detach(&c, 0);
	EXPECT_RC_ERR(ibv_detach_mcast(c.m[0].qp, &MGID, MLID), EINVAL);
	EXPECT_MSG("DETACH_MCG");
	EXPECT_MSG("field gid");
	mc_send(&c, 100, 100, 0xe);
	mc_close(&c);
}

Test(mcast, the_sender_gets_its_own_datagram_once_when_attached)
{
	struct mc c;
	struct ibv_wc wc;
	const uint8_t *buf;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *rbad;

	mc_open(&c, 0);
	attach(&c, 0);
	EXPECT_OK(ibv_attach_mcast(c.snd, &MGID, MLID));
	EXPECT_OK(ibv_attach_mcast(c.snd, &MGID, MLID));
	sge = (struct ibv_sge){ (uintptr_t)c.smr->addr + 2048, 1024, c.smr->lkey };
	EXPECT_OK(ibv_post_recv(c.snd, &rwr, &rbad));
	/* The sender's CQ sees its send completion and one receive of its own datagram. */
	{
		struct ibv_sge s = { (uintptr_t)c.smr->addr, 300, c.smr->lkey };
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		struct ibv_wc two[2];
		int got = 0;

		member_post(&c.m[0]);
		wr.wr.ud.ah = c.ah;
		wr.wr.ud.remote_qpn = 0xffffff;
		wr.wr.ud.remote_qkey = TB_QKEY;
		EXPECT_OK(ibv_post_send(c.snd, &wr, &bad));
		tb_poll(c.scq, two, 2);
		for (int k = 0; k < 2; k++) {
			if (two[k].opcode != IBV_WC_RECV)
				continue;
			got++;
			cr_assert_eq(two[k].status, IBV_WC_SUCCESS);
			cr_assert_eq(two[k].wr_id, 7);
			cr_assert_eq(two[k].src_qp, c.snd->qp_num);
			cr_assert_eq(two[k].qp_num, c.snd->qp_num);
			cr_assert_eq(two[k].byte_len, GRH_BYTES + 300);
			cr_assert_eq(two[k].wc_flags, IBV_WC_GRH);
		}
		cr_assert_eq(got, 1);
		buf = (const uint8_t *)c.smr->addr + 2048;
		cr_assert_arr_eq(buf + GRH_BYTES, c.smr->addr, 300);
		tb_poll(c.m[0].cq, &wc, 1);
		check_recv(&c, 0, &wc, 300, 0);
		hcasim_run_for_ps(200 * 1000 * 1000ull);
		cr_assert_eq(ibv_poll_cq(c.scq, 1, &wc), 0, "the sender got it twice");
		cr_assert_eq(ibv_poll_cq(c.m[0].cq, 1, &wc), 0);
	}
	EXPECT_OK(ibv_detach_mcast(c.snd, &MGID, MLID));
	mc_close(&c);
}

Test(mcast, block_self_mcast_lb_is_honoured)
{
	struct mc c;

	mc_open(&c, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	for (int i = 0; i < NMEMBERS; i++)
		attach(&c, i);
	/* Member 0 shares the sender's HCA: nothing is turned around for it. The other host's
	 * members get the datagram over the link as before. */
	mc_send(&c, 128, 0, 0xe);
	mc_send(&c, 128, 128, 0xe);
	cr_assert_eq(ctr(0, "multicast_xmit_packets"), 2);
	cr_assert_eq(ctr(1, "multicast_rcv_packets"), 2);
	cr_assert_eq(dropped(0), 0);
	/* The same attach on hcasim1: a sender there without the flag reaches member 0 over the
	 * link, which shows member 0 is attached and receiving. */
	{
		struct ibv_cq *cq = cq_new(&c.h[1]);
		struct ibv_qp *s1 = ud_qp(&c.h[1], cq, 0);
		struct ibv_ah_attr aa = { .dlid = MLID, .port_num = 1, .is_global = 1 };
		struct ibv_ah *ah;
		struct ibv_mr *mr = mr_new(&c.h[1]);
		struct ibv_sge s = { (uintptr_t)mr->addr, 16, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bad;
		struct ibv_wc wc;

		for (int i = 0; i < NMEMBERS; i++)
			member_post(&c.m[i]);
		aa.grh.dgid = MGID;
		aa.grh.hop_limit = 1;
		ah = ibv_create_ah(c.h[1].pd, &aa);
		cr_assert_not_null(ah);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = 0xffffff;
		wr.wr.ud.remote_qkey = TB_QKEY;
		EXPECT_OK(ibv_post_send(s1, &wr, &bad));
		tb_poll(cq, &wc, 1);
		cr_assert_eq(wc.status, IBV_WC_SUCCESS);
		for (int i = 0; i < NMEMBERS; i++) {
			tb_poll(c.m[i].cq, &wc, 1);
			cr_assert_eq(wc.status, IBV_WC_SUCCESS, "member %d", i);
			cr_assert_eq(wc.src_qp, s1->qp_num, "member %d", i);
			cr_assert_eq(wc.slid, c.h[1].port.lid, "member %d", i);
		}
	}
	mc_close(&c);
}

Test(mcast, a_qkey_mismatch_drops_at_that_member_and_counts_rq_num_mce)
{
	struct mc c;

	mc_open(&c, 0);
	{
		/* Member 2 takes another Q_Key (a modify in RTS). */
		struct ibv_qp_attr a = { .qkey = TB_QKEY + 1 };

		EXPECT_OK(ibv_modify_qp(c.m[2].qp, &a, IBV_QP_QKEY));
	}
	for (int i = 0; i < NMEMBERS; i++)
		attach(&c, i);
	mc_send(&c, 32, 0, 0xb);
	cr_assert_eq(ctr(1, "rq_num_mce"), 1);
	cr_assert_eq(ctr(0, "rq_num_mce"), 0);
	cr_assert_eq(dropped(1), 1);
	mc_send(&c, 32, 32, 0xb);
	cr_assert_eq(ctr(1, "rq_num_mce"), 2);
	mc_close(&c);
}

Test(mcast, a_datagram_without_a_grh_is_dropped_by_every_member)
{
	struct mc c;
	struct ibv_ah_attr aa = { .dlid = MLID, .port_num = 1 };

	mc_open(&c, 0);
	for (int i = 0; i < NMEMBERS; i++)
		attach(&c, i);
	ibv_destroy_ah(c.ah);
	c.ah = ibv_create_ah(c.h[0].pd, &aa); /* no GRH: no MGID (IBA 8.3.1) */
	cr_assert_not_null(c.ah);
	mc_send(&c, 32, 0, 0);
	cr_assert_eq(ctr(1, "multicast_rcv_packets"), 1);
	cr_assert_eq(dropped(1), 1);
	mc_close(&c);
}

/* tshark's "dlid destqp dgid" for each frame of a capture, and hcasim-pcapcheck's verdict. */
static void check_capture(const char *path, int frames)
{
	char cmd[1024], *out, *line, *save = NULL;
	int st, n = 0;

	snprintf(cmd, sizeof(cmd),
		 "tshark -r '%s' -T fields -E separator=' ' -e infiniband.lrh.dlid "
		 "-e infiniband.bth.destqp -e infiniband.grh.dgid 2>/dev/null",
		 path);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "%s: %s", cmd, out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++)
		cr_assert_str_eq(line, "49153 0xffffff ff12:401b:ffff::1", "%s frame %d", path, n);
	cr_assert_eq(n, frames, "%s: %d frames, expected %d", path, n, frames);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s/bin/hcasim-pcapcheck '%s' 2>&1", HCASIM_BUILD_DIR, path);
	out = tb_run_cmd(cmd, &st);
	cr_assert_eq(st, 0, "pcapcheck: %s", out);
	free(out);
}

Test(mcast, captures_show_the_multicast_frames_on_the_link_and_the_loopback_path)
{
	char dir[] = "/tmp/hcasim-mcast-XXXXXX", prefix[64], path[96];
	struct mc c;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(prefix, sizeof(prefix), "%s/cap", dir);
	mc_open(&c, 0);
	for (int i = 0; i < NMEMBERS; i++)
		attach(&c, i);
	cr_assert_eq(hcasim_pcap(prefix), 0, "%s", hcasim_last_error());
	mc_send(&c, 200, 0, 0xf);
	mc_send(&c, 20, 0, 0xf);
	cr_assert_eq(hcasim_pcap(NULL), 0, "%s", hcasim_last_error());
	snprintf(path, sizeof(path), "%s.link0.pcap", prefix);
	check_capture(path, 2);
	snprintf(path, sizeof(path), "%s.hca0.loopback.pcap", prefix);
	check_capture(path, 2);
	snprintf(path, sizeof(path), "%s.hca1.loopback.pcap", prefix);
	cr_assert_neq(access(path, F_OK), 0, "hcasim1 sent nothing, looped nothing back");
	tb_rm_tmpdir(dir);
	mc_close(&c);
}

/* ---- limits and bad arguments ---- */

Test(mcast, device_advertises_its_multicast_limits)
{
	struct tb_dev t;

	tb_open(&t, 0);
	cr_assert_eq(t.attr.max_mcast_grp, 64);
	cr_assert_eq(t.attr.max_mcast_qp_attach, 8);
	cr_assert_eq(t.attr.max_total_mcast_qp_attach, 512);
	tb_close(&t);
}

Test(mcast, bad_arguments_are_refused_with_their_errno_and_change_nothing)
{
	struct mc c;
	union ibv_gid ucast;
	struct ibv_qp *rc;
	struct ibv_qp_init_attr_ex xa = { 0 };

	mc_open(&c, 0);
	ucast = c.sgid;
	attach(&c, 1);
	rc = tb_create_qp(&c.h[0], IBV_QPT_RC);
	EXPECT_RC_ERR(ibv_attach_mcast(NULL, &MGID, MLID), EINVAL);
	EXPECT_MSG("not a live QP");
	EXPECT_RC_ERR(ibv_attach_mcast(c.m[0].qp, NULL, MLID), EINVAL);
	EXPECT_MSG("NULL gid");
	EXPECT_RC_ERR(ibv_attach_mcast(rc, &MGID, MLID), EINVAL);
	EXPECT_MSG("only UD QPs");
	EXPECT_RC_ERR(ibv_attach_mcast(c.m[0].qp, &ucast, MLID), EINVAL);
	EXPECT_MSG("not a multicast GID");
	EXPECT_RC_ERR(ibv_attach_mcast(c.m[0].qp, &MGID, 0xbfff), EINVAL);
	EXPECT_MSG("lid 0xbfff is not a multicast LID");
	EXPECT_RC_ERR(ibv_attach_mcast(c.m[0].qp, &MGID, 0xffff), EINVAL);
	EXPECT_MSG("lid 0xffff is not a multicast LID");
	EXPECT_RC_ERR(ibv_attach_mcast(c.m[0].qp, &MGID, 0), EINVAL);
	EXPECT_RC_ERR(ibv_detach_mcast(rc, &MGID, MLID), EINVAL);
	EXPECT_MSG("only UD QPs");
	EXPECT_RC_ERR(ibv_detach_mcast(c.m[0].qp, &MGID, MLID), EINVAL); /* not attached */
	EXPECT_MSG("field gid");
	EXPECT_RC_ERR(ibv_detach_mcast(c.m[1].qp, &MGID, 0xc002), EINVAL); /* another group */
	/* A QP in a group cannot be destroyed (ib_uverbs: EBUSY until it detaches). */
	EXPECT_RC_ERR(ibv_destroy_qp(c.m[1].qp), EBUSY);
	EXPECT_MSG("DESTROY_QP");
	/* BLOCK_SELF_MCAST_LB is for UD QPs; other flags are unknown. */
	xa.qp_type = IBV_QPT_RC;
	xa.send_cq = xa.recv_cq = c.h[0].cq;
	xa.cap.max_send_wr = xa.cap.max_recv_wr = 1;
	xa.cap.max_send_sge = xa.cap.max_recv_sge = 1;
	xa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	xa.pd = c.h[0].pd;
	xa.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	EXPECT_NULL_ERR(ibv_create_qp_ex(c.h[0].ctx, &xa), EINVAL);
	EXPECT_MSG("needs qp_type IBV_QPT_UD");
	xa.qp_type = IBV_QPT_UD;
	xa.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	EXPECT_NULL_ERR(ibv_create_qp_ex(c.h[0].ctx, &xa), EINVAL);
	EXPECT_MSG("create_flags 0x");
	xa.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	xa.pd = c.h[1].pd; /* another context's PD */
	EXPECT_NULL_ERR(ibv_create_qp_ex(c.h[0].ctx, &xa), EINVAL);
	EXPECT_MSG("pd is not of this context");
	/* Nothing changed: the group holds member 1 only, on hcasim1. */
	cr_assert_eq(sim_sm_mcast_ports(MLID, MGID.raw), 1);
	cr_assert(sim_sm_mcast_member(1, MLID, MGID.raw));
	mc_send(&c, 48, 0, 0x2);
	detach(&c, 1);
	EXPECT_OK(ibv_destroy_qp(rc));
	mc_close(&c); /* destroys m[1] after its detach */
}

Test(mcast, the_limits_are_enforced_with_enomem)
{
	struct tb_dev t;
	struct ibv_qp *qp[9];
	union ibv_gid g = MGID;

	tb_open(&t, 0);
	for (int i = 0; i < 9; i++)
		qp[i] = ud_qp(&t, t.cq, 0);
	/* max_mcast_qp_attach: 8 QPs in one group; a 9th is refused. */
	for (int i = 0; i < 8; i++)
		EXPECT_OK(ibv_attach_mcast(qp[i], &MGID, MLID));
	EXPECT_RC_ERR(ibv_attach_mcast(qp[8], &MGID, MLID), ENOMEM);
	EXPECT_MSG("ATTACH_MCG");
	/* max_mcast_grp: 64 groups; qp[0] is in one already, 63 more, and a 65th is refused. */
	for (int i = 1; i < 64; i++) {
		g.raw[15] = (uint8_t)(i + 1);
		EXPECT_OK(ibv_attach_mcast(qp[0], &g, (uint16_t)(MLID + i)));
	}
	g.raw[15] = 66;
	EXPECT_RC_ERR(ibv_attach_mcast(qp[8], &g, MLID + 64), ENOMEM);
	/* Attaching again to a group it is in still succeeds at the limit. */
	EXPECT_OK(ibv_attach_mcast(qp[0], &MGID, MLID));
	/* One group freed: the attach that failed now succeeds. */
	for (int i = 0; i < 8; i++)
		EXPECT_OK(ibv_detach_mcast(qp[i], &MGID, MLID));
	EXPECT_OK(ibv_attach_mcast(qp[8], &g, MLID + 64));
	tb_close(&t);
}

Test(mcast, roce_ports_refuse_attach_with_eopnotsupp)
{
	struct tb_dev t;
	struct ibv_qp *qp;

	tb_config("hca.link_layer", "roce");
	tb_open(&t, 0);
	qp = tb_create_qp(&t, IBV_QPT_UD);
	EXPECT_RC_ERR(ibv_attach_mcast(qp, &MGID, MLID), EOPNOTSUPP);
	EXPECT_MSG("ATTACH_MCG");
	EXPECT_OK(ibv_destroy_qp(qp));
	tb_close(&t);
}
