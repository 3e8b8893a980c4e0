/* fcov: functional coverage points (model/fcov.h, docs/rtl.md#coverage): a counter per index
 * of each group of fcov.def, counted only while hm_fcov_on, and dumped with the name of every
 * index that is a point. */
#include "model/fcov.h"
#include "model/pkt.h"
#include "sim/error.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool hm_fcov_on;

/* Each group's counters, one array: group g starts at base(g). */
static const unsigned size[HM_FCOV_GROUPS] = {
#define FCOV(group, points, where, doc) [HM_FCOV_##group] = points,
#include "model/fcov.def"
#undef FCOV
};
static const char *const group_name[HM_FCOV_GROUPS] = {
#define FCOV(group, points, where, doc) [HM_FCOV_##group] = #group,
#include "model/fcov.def"
#undef FCOV
};
#define FCOV(group, points, where, doc) +(points)
static uint64_t counts[0
#include "model/fcov.def"
];
#undef FCOV
static char dump_dir[PATH_MAX];
static bool (*qp_valid)(unsigned cur, unsigned next);

static unsigned base(enum hm_fcov_group g)
{
	unsigned b = 0;

	for (unsigned i = 0; i < (unsigned)g; i++)
		b += size[i];
	return b;
}

void hm_fcov_count(enum hm_fcov_group g, unsigned i)
{
	if ((unsigned)g < HM_FCOV_GROUPS && i < size[g])
		__atomic_fetch_add(&counts[base(g) + i], 1, __ATOMIC_RELAXED);
}

static const char *const nak_name[HM_FCOV_NAKS] = {
	"NAK_SEQ", "NAK_INV_REQ", "NAK_REM_ACCESS", "NAK_REM_OP", "RNR_NAK",
};
static const char *const timer_name[HM_FCOV_TIMERS] = {
	"ACK_TIMEOUT_RETRY", "ACK_TIMEOUT_MIGRATE", "ACK_TIMEOUT_RETRY_EXC", "RNR_TIMER_EXPIRY",
};
static const char *const qpc_name[HM_FCOV_QPC_EVENTS] = {
	"HIT", "MISS", "EVICT_CLEAN", "WRITE_BACK",
};

/* The name of point i of g in buf, or NULL when i is no point of g. */
static const char *point_name(enum hm_fcov_group g, unsigned i, char *buf, size_t cap)
{
	const struct hm_opcode_info *op;

	switch (g) {
	case HM_FCOV_qp_modify:
		if (!qp_valid || !qp_valid(i / HCA_QPS_COUNT, i % HCA_QPS_COUNT))
			return NULL;
		snprintf(buf, cap, "%s->%s", hca_qps_name(i / HCA_QPS_COUNT),
			 hca_qps_name(i % HCA_QPS_COUNT));
		return buf;
	case HM_FCOV_opcode_sent:
	case HM_FCOV_opcode_rcvd:
		op = hm_opcode_info((uint8_t)i);
		return op ? op->name : NULL;
	case HM_FCOV_nak_sent:
	case HM_FCOV_nak_rcvd:
		return nak_name[i];
	case HM_FCOV_cqe_status:
		return strcmp(hca_wc_name((uint8_t)i), "UNKNOWN") ? hca_wc_name((uint8_t)i) : NULL;
	case HM_FCOV_timer:
		return timer_name[i];
	case HM_FCOV_qpc:
		return qpc_name[i];
	default:
		return NULL;
	}
}

void hm_fcov_qp_modify_table(bool (*valid)(unsigned cur, unsigned next))
{
	qp_valid = valid;
}

int hm_fcov_dump(void)
{
	char path[PATH_MAX + 32], buf[64];
	FILE *f;

	if (!hm_fcov_on)
		return 0;
	snprintf(path, sizeof(path), "%s/fcov-%ld.txt", dump_dir, (long)getpid());
	f = fopen(path, "w");
	if (!f)
		return sim_error(-errno, "HCASIM_COVERAGE_DIR: cannot write '%s': %s", path,
				 strerror(errno));
	for (unsigned g = 0; g < HM_FCOV_GROUPS; g++) {
		for (unsigned i = 0; i < size[g]; i++) {
			const char *n = point_name(g, i, buf, sizeof(buf));

			if (n)
				fprintf(f, "%s\t%s\t%llu\n", group_name[g], n,
					(unsigned long long)__atomic_load_n(&counts[base(g) + i],
									    __ATOMIC_RELAXED));
		}
	}
	if (fclose(f))
		return sim_error(-EIO, "HCASIM_COVERAGE_DIR: cannot write '%s'", path);
	return 0;
}

static void dump_at_exit(void)
{
	if (hm_fcov_dump())
		fprintf(stderr, "hcasim: %s\n", sim_last_error());
}

void hm_fcov_start(const char *dir)
{
	static bool hooked;

	snprintf(dump_dir, sizeof(dump_dir), "%s", dir);
	hm_fcov_on = true;
	if (!hooked && !atexit(dump_at_exit))
		hooked = true;
}
