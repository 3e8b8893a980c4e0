/* Fuzz target `scenario`: scenario file text into the scenario parser and checker of
 * hcasim-scenario (sim/apps/scenario/parse.c), which must refuse with FILE:LINE or accept.
 * The seeds are the shipped scenarios (sim/scenarios/). */
#include "sim/apps/scenario/scenario.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct scn s;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/hcasim-fuzz-scenario.%d.ini", (int)getpid());
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f))
		abort();
	memset(&s, 0, sizeof(s));
	scn_parse(&s, path);
	unlink(path);
	return 0;
}
