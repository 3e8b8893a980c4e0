/* Trace output: the declared events, category selection and line formatting. */
#include "sim/trace.h"
#include "sim/error.h"
#include "sim/kernel.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SIM_TRACE_MAX_DEVS 64

uint64_t sim_trace_mask;
static FILE *trace_out;
static uint64_t dev_period_ps[SIM_TRACE_MAX_DEVS];

static const char *const cat_names[] = {
#define TRACE_CAT(c, doc) #c,
#define TRACE_EV(c, n, doc)
#include "sim/trace.def"
#undef TRACE_CAT
#undef TRACE_EV
};

static const char *const ev_names[] = {
#define TRACE_CAT(c, doc)
#define TRACE_EV(c, n, doc) #c "." #n,
#include "sim/trace.def"
#undef TRACE_CAT
#undef TRACE_EV
};

const char *sim_trace_cat_name(int cat)
{
	return cat >= 0 && cat < SIM_TCAT_COUNT ? cat_names[cat] : "?";
}

const char *sim_trace_ev_name(int ev)
{
	return ev >= 0 && ev < SIM_TEV_COUNT ? ev_names[ev] : "?";
}

int sim_trace_select(const char *cats)
{
	uint64_t mask = 0;
	char buf[512], *save = NULL, *tok;

	if (!cats)
		cats = "";
	if (strlen(cats) >= sizeof(buf))
		return sim_error(-EINVAL, "trace categories: list too long (%zu bytes)", strlen(cats));
	strcpy(buf, cats);
	for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		int c;

		if (!strcmp(tok, "*") || !strcmp(tok, "all")) {
			mask = (1ull << SIM_TCAT_COUNT) - 1;
			continue;
		}
		for (c = 0; c < SIM_TCAT_COUNT; c++)
			if (!strcmp(tok, cat_names[c]))
				break;
		if (c == SIM_TCAT_COUNT)
			return sim_error(-EINVAL, "trace categories: unknown category '%s'", tok);
		mask |= 1ull << c;
	}
	sim_trace_mask = mask;
	return 0;
}

int sim_trace_open(const char *path)
{
	FILE *f = stderr;

	if (path && *path) {
		f = fopen(path, "w");
		if (!f)
			return sim_error(-errno, "trace file '%s': %s", path, strerror(errno));
	}
	sim_trace_close();
	trace_out = f;
	return 0;
}

void sim_trace_close(void)
{
	if (trace_out && trace_out != stderr)
		fclose(trace_out);
	else if (trace_out)
		fflush(trace_out);
	trace_out = NULL;
}

void sim_trace_set_dev_clock(int dev, uint64_t period_ps)
{
	if (dev >= 0 && dev < SIM_TRACE_MAX_DEVS)
		dev_period_ps[dev] = period_ps;
}

void sim_trace_emit(int ev, int dev, const char *fmt, ...)
{
	struct sim_kernel *k = sim_kernel();
	unsigned long long t = k ? (unsigned long long)sim_now(k) : 0;
	FILE *f = trace_out ? trace_out : stderr;
	va_list ap;

	if (dev >= 0 && dev < SIM_TRACE_MAX_DEVS && dev_period_ps[dev])
		fprintf(f, "t=%llu dev=%d cyc=%llu %s", t, dev, t / dev_period_ps[dev],
			ev_names[ev]);
	else if (dev >= 0)
		fprintf(f, "t=%llu dev=%d %s", t, dev, ev_names[ev]);
	else
		fprintf(f, "t=%llu %s", t, ev_names[ev]);
	if (fmt && *fmt) {
		fputc(' ', f);
		va_start(ap, fmt);
		vfprintf(f, fmt, ap);
		va_end(ap);
	}
	fputc('\n', f);
}
