/* System configuration: the settings of sim/config.def, with defaults, from a file
 * (HCASIM_CONFIG=path, INI syntax via libinih) or set one by one. Every error names the key. */
#ifndef SIM_CONFIG_H
#define SIM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct sim_config {
#define CFG_U(key, field, def, min, max, unit, doc) uint64_t field;
#define CFG_E(key, field, def, choices, doc) unsigned field;
#define CFG_S(key, field, def, doc) char field[256];
#include "sim/config.def"
#undef CFG_U
#undef CFG_E
#undef CFG_S
};

enum { SIM_LL_IB = 0, SIM_LL_ROCE = 1 };
enum { SIM_TOPO_PAIRS = 0, SIM_TOPO_SWITCH = 1 };
enum { SIM_START_ANY = 0, SIM_START_TOGETHER = 1 };
enum { SIM_CMD_COMPLETION_INTERRUPT = 0, SIM_CMD_COMPLETION_POLL = 1 };

void sim_config_defaults(struct sim_config *c);
/* Set one key from its text form. -EINVAL (unknown key, bad number, out of range, not one of
 * the choices); the message names the key. On error *c is unchanged. */
int sim_config_set(struct sim_config *c, const char *key, const char *value);
/* Render a key's current value as text. */
int sim_config_get(const struct sim_config *c, const char *key, char *buf, size_t len);
/* Apply a whole file; on any error *c is unchanged and the message names the file and the key
 * (or the line, for a syntax error). */
int sim_config_load(struct sim_config *c, const char *path);
/* The i-th key of the table (in sim/config.def's order), NULL past the last. */
const char *sim_config_key_at(size_t i);
/* Write docs/config.md's table to stdout. */
void sim_config_print_doc(void);

/* Derived values. */
uint64_t sim_config_period_ps(uint64_t mhz);        /* clock period, rounded to 1 ps */
uint64_t sim_config_link_mbps(const struct sim_config *c); /* data rate after line coding */
unsigned sim_config_mtu_bytes(const struct sim_config *c);
unsigned sim_config_mtu_enum(const struct sim_config *c); /* IBV_MTU_* value (1..5) */
uint64_t sim_config_pcie_mbps(const struct sim_config *c); /* after line coding, one direction */

#endif
