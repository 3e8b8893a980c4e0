/* port block (management side): physical link training, the SMA the subnet manager programs,
 * P_Key and GID tables. On Ethernet (RoCEv2) there is no SM: the port is ACTIVE once its link
 * is up, and its GIDs come from its MAC and IPv4 address. */
#include "model/hca.h"
#include "sim/sm.h"
#include "sim/trace.h"

#include <string.h>

enum { PORT_DOWN = 1, PORT_INIT = 2, PORT_ACTIVE = 4 };
enum { PHYS_POLLING = 2, PHYS_DISABLED = 3, PHYS_LINK_UP = 5 };
enum { LL_IB = 1, LL_ETH = 2 };

static const char *const state_names[] = { "?", "DOWN", "INIT", "ARMED", "ACTIVE" };

static void set_state(struct hm_port *p, uint8_t state)
{
	uint32_t data[6] = { p->num, 0, 0, 0, 0, 0 };

	if (p->state == state)
		return;
	p->state = state;
	SIM_TRACE(port, state, p->dev->devno, "port=%u state=%s lid=%u", p->num,
		  state_names[state], p->lid);
	hm_eq_post(p->dev, HCA_EQE_PORT_CHANGE, state, data);
}

static void sma_set_port(void *arg, uint16_t lid, uint16_t sm_lid, uint64_t prefix, uint8_t state)
{
	struct hm_port *p = arg;

	if (p->phys_state != PHYS_LINK_UP)
		return; /* the link went down before the SM's SubnSet arrived */
	p->lid = lid;
	p->sm_lid = sm_lid;
	p->subnet_prefix = prefix;
	/* GID 0 = subnet prefix : port GUID (IBA 4.1.1). */
	for (int i = 0; i < 8; i++) {
		p->gids[0][i] = (uint8_t)(prefix >> (56 - 8 * i));
		p->gids[0][8 + i] = (uint8_t)(p->guid >> (56 - 8 * i));
	}
	p->gid_type[0] = 0;
	p->ngids = 1;
	set_state(p, state);
}

static const struct sim_sma_ops sma_ops = { .set_port = sma_set_port };

static void roce_gids(struct hm_port *p)
{
	uint8_t *g = p->gids[0];

	/* GID 0: link-local fe80::/64 with the modified EUI-64 of the MAC; GID 1: the
	 * IPv4-mapped address ::ffff:a.b.c.d. Both RoCE v2. */
	memset(p->gids, 0, sizeof(p->gids));
	g[0] = 0xfe;
	g[1] = 0x80;
	g[8] = p->mac[0] ^ 0x02;
	g[9] = p->mac[1];
	g[10] = p->mac[2];
	g[11] = 0xff;
	g[12] = 0xfe;
	g[13] = p->mac[3];
	g[14] = p->mac[4];
	g[15] = p->mac[5];
	g = p->gids[1];
	g[10] = 0xff;
	g[11] = 0xff;
	g[12] = (uint8_t)(p->ipv4 >> 24);
	g[13] = (uint8_t)(p->ipv4 >> 16);
	g[14] = (uint8_t)(p->ipv4 >> 8);
	g[15] = (uint8_t)p->ipv4;
	p->gid_type[0] = p->gid_type[1] = 2;
	p->ngids = 2;
}

void hm_port_init(struct hm_dev *d)
{
	for (unsigned i = 0; i < d->nports; i++) {
		struct hm_port *p = &d->ports[i];

		memset(p, 0, sizeof(*p));
		p->dev = d;
		p->num = (uint8_t)(i + 1);
		p->state = PORT_DOWN;
		p->phys_state = PHYS_DISABLED;
		p->link_layer = d->cfg.link_layer == SIM_LL_ROCE ? LL_ETH : LL_IB;
		p->guid = d->node_guid + 1 + i;
		p->pkeys[0] = 0xffff; /* default partition, full membership */
		p->mac[0] = 0x02;
		p->mac[1] = 0x48;
		p->mac[2] = 0x53;
		p->mac[3] = 0x00;
		p->mac[4] = (uint8_t)d->host;
		p->mac[5] = p->num;
		p->ipv4 = (10u << 24) | ((uint32_t)p->num << 16) | (uint32_t)(d->host + 1);
		p->sm_handle = p->link_layer == LL_IB ? sim_sm_register(&sma_ops, p) : -1;
	}
}

static void link_trained(void *arg)
{
	struct hm_port *p = arg;

	if (p->phys_state != PHYS_POLLING)
		return; /* stopped meanwhile */
	p->phys_state = PHYS_LINK_UP;
	if (p->link_layer == LL_ETH) {
		roce_gids(p);
		set_state(p, PORT_ACTIVE);
		return;
	}
	set_state(p, PORT_INIT);
	sim_sm_link_up(p->sm_handle);
}

void hm_port_start(struct hm_dev *d, sim_time_t t)
{
	for (unsigned i = 0; i < d->nports; i++) {
		struct hm_port *p = &d->ports[i];

		p->phys_state = PHYS_POLLING;
		sim_schedule_at(sim_kernel(), t + d->cfg.port_training_ns * SIM_PS_PER_NS,
				link_trained, p);
	}
}

void hm_port_stop(struct hm_dev *d)
{
	for (unsigned i = 0; i < d->nports; i++) {
		d->ports[i].phys_state = PHYS_DISABLED;
		set_state(&d->ports[i], PORT_DOWN);
	}
}

void hm_port_info(const struct hm_port *p, struct hca_port_info *o)
{
	static const uint8_t speed_code[] = { 1, 2, 4, 16, 32, 64, 128 };
	static const uint8_t width_code[] = { 1, 2, 4, 8 };
	const struct sim_config *c = &p->dev->cfg;

	memset(o, 0, sizeof(*o));
	o->state = p->state;
	o->phys_state = p->phys_state;
	o->max_mtu = (uint8_t)sim_config_mtu_enum(c);
	o->active_mtu = o->max_mtu;
	o->link_layer = p->link_layer;
	o->active_width = width_code[c->link_width];
	o->active_speed = speed_code[c->link_speed];
	o->lmc = p->lmc;
	o->lid = p->lid;
	o->sm_lid = p->sm_lid;
	o->sm_sl = 0;
	o->max_vl_num = 4; /* VL0-7 */
	o->subnet_timeout = 18;
	/* CapabilityMask: none of the optional bits (no CM, no SM agent on the HCA: the SM
	 * runs in the fabric model). */
	o->cap_flags = 0;
	o->max_msg_sz = 0x80000000u;
	o->pkey_tbl_len = (uint16_t)c->pkey_table;
	o->gid_tbl_len = HM_GID_TABLE;
	o->port_guid = p->guid;
	o->subnet_prefix = p->subnet_prefix;
}
