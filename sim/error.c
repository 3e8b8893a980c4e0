/* Last-error message buffer (one per thread). When HCASIM_VERBOSE is set, every message is
 * also printed on stderr so that a user sees why a verb failed. */
#include "sim/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static _Thread_local char last_msg[512];

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
	if (verbose < 0) {
		const char *v = getenv("HCASIM_VERBOSE");

		verbose = v && *v && *v != '0';
	}
	if (verbose)
		fprintf(stderr, "hcasim: %s\n", last_msg);
	return err;
}

const char *sim_last_error(void)
{
	return last_msg;
}

void sim_clear_error(void)
{
	last_msg[0] = 0;
}
