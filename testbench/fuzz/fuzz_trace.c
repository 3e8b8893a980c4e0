/* Fuzz target `trace`: trace category filters (HCASIM_TRACE, hcasim_trace and
 * hcasim_trace_observe), which must be refused naming the category or applied. */
#include "sim/hcasim.h"

#include <stdlib.h>
#include <string.h>

static void observer(void *arg, uint64_t t, int dev, const char *ev, const char *fields)
{
	(void)arg, (void)t, (void)dev, (void)ev, (void)fields;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = 0;
	hcasim_trace(s, "/dev/null");
	hcasim_trace_observe(s, observer, NULL);
	hcasim_trace("", NULL);
	hcasim_trace_observe("", NULL, NULL);
	free(s);
	return 0;
}
