/* Fuzz target `scenario`: scenario file text into the scenario parser and checker of
 * hcasim-scenario (sim/apps/scenario/parse.c), which must refuse with FILE:LINE or accept.
 * The seeds are the shipped scenarios (sim/scenarios/). */
#include "sim/apps/scenario/scenario.h"
#include "testbench/fuzz/fuzz.h"

#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct scn s;
	char path[64];

	fz_write_temp("scenario", data, size, path, sizeof(path));
	memset(&s, 0, sizeof(s));
	scn_parse(&s, path);
	unlink(path);
	return 0;
}
