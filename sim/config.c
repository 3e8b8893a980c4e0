/* Configuration table, parser and derived values. */
#include "sim/config.h"
#include "sim/error.h"
#include "sim/textfile.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum cfg_kind { CFG_KIND_U, CFG_KIND_E, CFG_KIND_S };

struct cfg_desc {
	const char *key;     /* "section.name" */
	enum cfg_kind kind;  /* unsigned or enumeration */
	size_t off;          /* offset in struct sim_config */
	uint64_t def;        /* default (value or choice index) */
	uint64_t min, max;   /* range for CFG_KIND_U */
	const char *choices; /* '|'-separated names for CFG_KIND_E, default for CFG_KIND_S */
	const char *unit;    /* unit for the docs */
	const char *doc;     /* one line */
};

static const struct cfg_desc cfg_table[] = {
#define CFG_U(key, field, def, min, max, unit, doc)                                                \
	{ key, CFG_KIND_U, offsetof(struct sim_config, field), def, min, max, NULL, unit, doc },
#define CFG_E(key, field, def, choices, doc)                                                       \
	{ key, CFG_KIND_E, offsetof(struct sim_config, field), def, 0, 0, choices, "", doc },
#define CFG_S(key, field, def, doc)                                                                \
	{ key, CFG_KIND_S, offsetof(struct sim_config, field), 0, 0, 0, def, "", doc },
#include "sim/config.def"
#undef CFG_U
#undef CFG_E
#undef CFG_S
};
#define CFG_COUNT (sizeof(cfg_table) / sizeof(cfg_table[0]))

static const struct cfg_desc *cfg_find(const char *key)
{
	for (size_t i = 0; i < CFG_COUNT; i++)
		if (!strcmp(cfg_table[i].key, key))
			return &cfg_table[i];
	return NULL;
}

void sim_config_defaults(struct sim_config *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < CFG_COUNT; i++) {
		const struct cfg_desc *d = &cfg_table[i];

		if (d->kind == CFG_KIND_U)
			*(uint64_t *)((char *)c + d->off) = d->def;
		else if (d->kind == CFG_KIND_E)
			*(unsigned *)((char *)c + d->off) = (unsigned)d->def;
		else
			snprintf((char *)c + d->off, 256, "%s", d->choices);
	}
}

/* Index of name in a '|'-separated list, or -1. */
static int choice_index(const char *choices, const char *name)
{
	size_t n = strlen(name);
	int idx = 0;

	for (const char *p = choices; *p; idx++) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return idx;
		if (!bar)
			break;
		p = bar + 1;
	}
	return -1;
}

int sim_config_set(struct sim_config *c, const char *key, const char *value)
{
	const struct cfg_desc *d;

	if (!key)
		return sim_error(-EINVAL, "config: NULL key");
	d = cfg_find(key);
	if (!d)
		return sim_error(-EINVAL, "config key '%s': unknown key", key);
	if (d->kind == CFG_KIND_S) {
		if (!value)
			return sim_error(-EINVAL, "config key '%s': NULL value", key);
		if (strlen(value) > 255)
			return sim_error(-EINVAL, "config key '%s': longer than 255 bytes", key);
		snprintf((char *)c + d->off, 256, "%s", value);
		return 0;
	}
	if (!value || !*value)
		return sim_error(-EINVAL, "config key '%s': empty value", key);
	if (d->kind == CFG_KIND_E) {
		int idx = choice_index(d->choices, value);

		if (idx < 0)
			return sim_error(-EINVAL, "config key '%s': '%s' is not one of %s", key,
					 value, d->choices);
		*(unsigned *)((char *)c + d->off) = (unsigned)idx;
		return 0;
	}
	{
		char *end;
		unsigned long long v;

		if (*value < '0' || *value > '9')
			return sim_error(-EINVAL, "config key '%s': '%s' is not a number", key,
					 value);
		errno = 0;
		/* Decimal, or hexadecimal with 0x; a leading 0 is not octal. */
		if (value[0] == '0' && (value[1] == 'x' || value[1] == 'X')) {
			if (!isxdigit((unsigned char)value[2]))
				return sim_error(-EINVAL, "config key '%s': '%s' is not a number",
						 key, value);
			v = strtoull(value + 2, &end, 16);
		} else {
			v = strtoull(value, &end, 10);
		}
		if (errno || end == value || *end)
			return sim_error(-EINVAL, "config key '%s': '%s' is not a number", key,
					 value);
		if (v < d->min || v > d->max)
			return sim_error(-EINVAL,
					 "config key '%s': %llu is outside %" PRIu64 "..%" PRIu64,
					 key, v, d->min, d->max);
		if ((!strcmp(key, "pcie.mps") || !strcmp(key, "pcie.mrrs")) && (v & (v - 1)))
			return sim_error(-EINVAL, "config key '%s': %llu is not a power of two",
					 key, v);
		*(uint64_t *)((char *)c + d->off) = v;
	}
	return 0;
}

int sim_config_get(const struct sim_config *c, const char *key, char *buf, size_t len)
{
	const struct cfg_desc *d = key ? cfg_find(key) : NULL;

	if (!d)
		return sim_error(-EINVAL, "config key '%s': unknown key", key ? key : "(null)");
	if (!buf || !len)
		return sim_error(-EINVAL, "config key '%s': no buffer", key);
	if (d->kind == CFG_KIND_U) {
		snprintf(buf, len, "%" PRIu64, *(const uint64_t *)((const char *)c + d->off));
	} else if (d->kind == CFG_KIND_S) {
		snprintf(buf, len, "%s", (const char *)c + d->off);
	} else {
		unsigned idx = *(const unsigned *)((const char *)c + d->off);
		const char *p = d->choices;

		for (unsigned i = 0; i < idx && p; i++) {
			p = strchr(p, '|');
			p = p ? p + 1 : NULL;
		}
		snprintf(buf, len, "%.*s", p ? (int)strcspn(p, "|") : 1, p ? p : "?");
	}
	return 0;
}

struct load_ctx {
	struct sim_config tmp; /* applied to the caller's copy only if the whole file is good */
	const char *path;      /* for messages */
	struct sim_textfile f; /* the file, read whole; f.line is the line being parsed */
	int err;               /* first error */
	unsigned errline;      /* its line */
	unsigned seen[CFG_COUNT]; /* the line that set each key of cfg_table, 0 if none yet */
};

/* Record the first error of a file, at the line being parsed. */
static void load_fail(struct load_ctx *lc, int err)
{
	lc->err = err;
	lc->errline = lc->f.line;
}

static int cfg_ini_line(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *lc = user;
	char key[128];
	int rc;

	if (lc->err)
		return 0;
	if (!*section) {
		load_fail(lc, sim_error(-EINVAL, "config file '%s':%u: key '%s' outside any "
					"[section]", lc->path, lc->f.line, name));
		return 0;
	}
	snprintf(key, sizeof(key), "%s.%s", section, name);
	rc = sim_config_set(&lc->tmp, key, value);
	if (rc) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", sim_last_error());
		load_fail(lc, sim_error(rc, "config file '%s':%u: %s", lc->path, lc->f.line, msg));
		return 0;
	}
	/* A key set twice is a mistake either way round: neither value is silently dropped. */
	{
		size_t i = (size_t)(cfg_find(key) - cfg_table);

		if (lc->seen[i]) {
			load_fail(lc, sim_error(-EINVAL, "config file '%s':%u: config key '%s': given "
						"twice (first on line %u)", lc->path, lc->f.line,
						key, lc->seen[i]));
			return 0;
		}
		lc->seen[i] = lc->f.line;
	}
	return 1;
}

int sim_config_load(struct sim_config *c, const char *path)
{
	struct load_ctx lc = { .tmp = *c, .path = path };
	int line, rc;

	/* A regular file of bounded size, read whole (sim/textfile.h): /dev/zero, a FIFO or a
	 * huge file is refused instead of read for ever. */
	rc = sim_textfile_read(&lc.f, path, "config file");
	if (rc)
		return rc;
	line = ini_parse_stream(sim_textfile_gets, &lc.f, cfg_ini_line, &lc);
	/* The first fault of the file is the one told: libinih goes on past a syntax error, so
	 * a later line may have raised lc.err already (an unclosed [section] puts the keys after
	 * it outside any). A line too long is told at its own line, whatever was made of it. */
	if (lc.f.toolong && (!line || (unsigned)line >= lc.f.toolong) &&
	    (!lc.err || lc.f.toolong <= lc.errline))
		lc.err = sim_error(-EINVAL, "config file '%s':%u: line longer than %zu characters",
				   path, lc.f.toolong, lc.f.maxline - 1);
	else if (line && (!lc.err || (unsigned)line < lc.errline))
		lc.err = sim_error(-EINVAL, "config file '%s':%d: syntax error (expected [section], "
				   "key = value, or a comment)", path, line);
	sim_textfile_free(&lc.f);
	if (lc.err)
		return lc.err;
	*c = lc.tmp;
	return 0;
}

const char *sim_config_key_at(size_t i)
{
	return i < CFG_COUNT ? cfg_table[i].key : NULL;
}

void sim_config_print_doc(void)
{
	printf("| key | default | range | unit | meaning |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < CFG_COUNT; i++) {
		const struct cfg_desc *d = &cfg_table[i];
		struct sim_config c;
		char def[64];

		sim_config_defaults(&c);
		sim_config_get(&c, d->key, def, sizeof(def));
		if (d->kind == CFG_KIND_U)
			printf("| `%s` | %s | %" PRIu64 "..%" PRIu64 " | %s | %s |\n", d->key, def,
			       d->min, d->max, d->unit, d->doc);
		else if (d->kind == CFG_KIND_S)
			printf("| `%s` | \"%s\" | text | | %s |\n", d->key, def, d->doc);
		else
			printf("| `%s` | %s | `%s` | | %s |\n", d->key, def, d->choices, d->doc);
	}
}

uint64_t sim_config_period_ps(uint64_t mhz)
{
	return (1000000 + mhz / 2) / mhz;
}

uint64_t sim_config_link_mbps(const struct sim_config *c)
{
	/* Data rate per lane after line coding (8b/10b up to QDR, 64b/66b from FDR). */
	static const uint64_t lane_mbps[] = { 2000, 4000, 8000, 13636, 25000, 50000, 100000 };
	static const uint64_t lanes[] = { 1, 4, 8, 12 };

	return lane_mbps[c->link_speed] * lanes[c->link_width];
}

unsigned sim_config_mtu_bytes(const struct sim_config *c)
{
	return 256u << c->link_mtu;
}

unsigned sim_config_mtu_enum(const struct sim_config *c)
{
	return c->link_mtu + 1;
}

uint64_t sim_config_pcie_mbps(const struct sim_config *c)
{
	/* Per lane after encoding: Gen1/2 8b/10b, Gen3+ 128b/130b (Gen6 FLIT mode ~ 242/256). */
	static const uint64_t lane_mbps[] = { 2000, 4000, 7877, 15754, 31508, 59577 };

	return lane_mbps[c->pcie_gen - 1] * c->pcie_lanes;
}
