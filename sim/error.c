/* Last-error message buffer (one per thread). When HCASIM_VERBOSE=1, every message is also
 * printed on stderr so that a user sees why a verb failed. */
#include "sim/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_msg[512];

/* HCASIM_VERBOSE: 0 or 1 (unset or empty: 0). Anything else is ignored with a warning, once:
 * a misspelt value must not silently turn printing on or off. */
static int verbose_from_env(void)
{
	const char *v = getenv("HCASIM_VERBOSE");

	if (!v || !*v || !strcmp(v, "0"))
		return 0;
	if (!strcmp(v, "1"))
		return 1;
	fprintf(stderr, "hcasim: HCASIM_VERBOSE: '%.40s%s' is not 0 or 1: ignored (not verbose)\n",
		v, strlen(v) > 40 ? "..." : "");
	return 0;
}

int sim_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = sim_verror(err, fmt, ap);
	va_end(ap);
	return err;
}

int sim_verror(int err, const char *fmt, va_list ap)
{
	static int verbose = -1;

	vsnprintf(last_msg, sizeof(last_msg), fmt, ap);
	if (verbose < 0)
		verbose = verbose_from_env();
	if (verbose)
		fprintf(stderr, "hcasim: %s\n", last_msg);
	return err;
}

int sim_error_quiet(int err, const char *fmt, ...)
{
	char msg[sizeof(last_msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap); /* fmt's arguments may be last_msg itself */
	va_end(ap);
	memcpy(last_msg, msg, sizeof(msg));
	return err;
}

int sim_error_prefix(int err, const char *prefix)
{
	return sim_error_quiet(err, "%s: %s", prefix, last_msg);
}

const char *sim_last_error(void)
{
	return last_msg;
}

void sim_clear_error(void)
{
	last_msg[0] = 0;
}
