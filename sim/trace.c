/* Trace output: the declared events, category selection and line formatting. */
#include "sim/trace.h"
#include "sim/error.h"
#include "sim/hcasim.h"
#include "sim/kernel.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_TRACE_MAX_DEVS 64

uint64_t sim_trace_mask;   /* file_mask | observer_mask | internal_mask: what emitters test */
static uint64_t file_mask; /* categories written to the trace file */
static uint64_t observer_mask;          /* categories handed to the observer */
static hcasim_trace_observer observer; /* NULL: none */
static void *observer_arg;
static uint64_t internal_mask;          /* categories handed to the simulator's own sink */
static sim_trace_sink internal;         /* NULL: none (sim/waves via model/waves.c) */
static void *internal_arg;
static FILE *trace_out;
static uint64_t dev_period_ps[SIM_TRACE_MAX_DEVS];

static const char *const cat_names[] = {
#define TRACE_CAT(c, doc) #c,
#define TRACE_EV(c, n, doc, params, args, fmt)
#include "sim/trace.def"
#undef TRACE_CAT
#undef TRACE_EV
};

static const uint8_t ev_cats[] = {
#define TRACE_CAT(c, doc)
#define TRACE_EV(c, n, doc, params, args, fmt) SIM_TCAT_##c,
#include "sim/trace.def"
#undef TRACE_CAT
#undef TRACE_EV
};

static const char *const ev_names[] = {
#define TRACE_CAT(c, doc)
#define TRACE_EV(c, n, doc, params, args, fmt) #c "." #n,
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

/* Parse a comma list of categories ("*" or "all" = every one, "" = none) into a mask. */
static int parse_cats(const char *cats, uint64_t *out)
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
	*out = mask;
	return 0;
}

int sim_trace_select(const char *cats)
{
	uint64_t mask;
	int rc = parse_cats(cats, &mask);

	if (rc)
		return rc;
	file_mask = mask;
	sim_trace_mask = file_mask | observer_mask | internal_mask;
	return 0;
}

int hcasim_trace_observe(const char *categories, hcasim_trace_observer fn, void *arg)
{
	uint64_t mask = 0;

	if (fn) {
		int rc = parse_cats(categories, &mask);

		if (rc)
			return rc;
	}
	observer = fn;
	observer_arg = fn ? arg : NULL;
	observer_mask = mask;
	sim_trace_mask = file_mask | observer_mask | internal_mask;
	return 0;
}

/* Where key's value starts in key=value text, or NULL. */
static const char *field_value(const char *fields, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = fields; (p = strstr(p, key)); p += kl)
		if ((p == fields || p[-1] == ' ') && p[kl] == '=')
			return p + kl + 1;
	return NULL;
}

int hcasim_trace_field(const char *fields, const char *key, uint64_t *v)
{
	const char *p = field_value(fields, key);
	char *end;

	if (!p)
		return 0;
	*v = strtoull(p, &end, 0);
	return end != p;
}

int hcasim_trace_field_str(const char *fields, const char *key, char *buf, size_t len)
{
	const char *p = field_value(fields, key);
	size_t n;

	if (!p || !len)
		return 0;
	n = strcspn(p, " ");
	if (n >= len)
		n = len - 1;
	memcpy(buf, p, n);
	buf[n] = 0;
	return 1;
}

int sim_trace_internal(const char *categories, sim_trace_sink fn, void *arg)
{
	uint64_t mask = 0;

	if (fn) {
		int rc = parse_cats(categories, &mask);

		if (rc)
			return rc;
	}
	internal = fn;
	internal_arg = fn ? arg : NULL;
	internal_mask = mask;
	sim_trace_mask = file_mask | observer_mask | internal_mask;
	return 0;
}

static char *trace_path; /* the file trace_out writes, for the message if writing fails */

int sim_trace_open(const char *path)
{
	FILE *f = stderr;
	char *name = NULL;

	if (path && *path) {
		f = fopen(path, "w");
		if (!f)
			return sim_error(-errno, "trace file '%s': %s", path, strerror(errno));
		name = strdup(path);
	}
	sim_trace_close();
	trace_out = f;
	trace_path = name;
	return 0;
}

void sim_trace_close(void)
{
	/* A file that could be opened but not written (a full disk, /dev/full) must not lose
	 * the trace unnoticed: closing cannot fail, so it says so on stderr. */
	if (trace_out && trace_out != stderr && (ferror(trace_out) | fclose(trace_out)))
		fprintf(stderr, "hcasim: trace file '%s': writing failed: %s\n",
			trace_path ? trace_path : "?", strerror(errno));
	else if (trace_out == stderr)
		fflush(trace_out);
	trace_out = NULL;
	free(trace_path);
	trace_path = NULL;
}

void sim_trace_set_dev_clock(int dev, uint64_t period_ps)
{
	if (dev >= 0 && dev < SIM_TRACE_MAX_DEVS)
		dev_period_ps[dev] = period_ps;
}

/* Format the key=value text of one event into buf (truncated at len - 1 bytes). */
static void format_fields(char *buf, size_t len, const char *fmt, va_list ap)
{
	buf[0] = 0;
	if (fmt && *fmt)
		vsnprintf(buf, len, fmt, ap);
}

void sim_trace_emit(int ev, int dev, const char *fmt, ...)
{
	struct sim_kernel *k = sim_kernel();
	unsigned long long t = k ? (unsigned long long)sim_now(k) : 0;
	uint64_t bit = 1ull << ev_cats[ev];
	char fields[2048];
	va_list ap;

	va_start(ap, fmt);
	format_fields(fields, sizeof(fields), fmt, ap);
	va_end(ap);
	if (file_mask & bit) {
		FILE *f = trace_out ? trace_out : stderr;

		if (dev >= 0 && dev < SIM_TRACE_MAX_DEVS && dev_period_ps[dev])
			fprintf(f, "t=%llu dev=%d cyc=%llu %s", t, dev, t / dev_period_ps[dev],
				ev_names[ev]);
		else if (dev >= 0)
			fprintf(f, "t=%llu dev=%d %s", t, dev, ev_names[ev]);
		else
			fprintf(f, "t=%llu %s", t, ev_names[ev]);
		if (fields[0])
			fprintf(f, " %s", fields);
		fputc('\n', f);
	}
	if ((observer_mask & bit) && observer)
		observer(observer_arg, t, dev, ev_names[ev], fields);
	if ((internal_mask & bit) && internal)
		internal(internal_arg, t, dev, ev, fields);
}
