/* Fuzz target `config`: configuration file text into hcasim_config_load, as HCASIM_CONFIG
 * names it (sim/textfile.c, sim/config.c). Every input is refused with a message or applied;
 * nothing else may happen. The seeds are the configuration examples of docs/config.md. */
#include "sim/hcasim.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/hcasim-fuzz-config.%d.ini", (int)getpid());
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f))
		abort();
	hcasim_config_load(path);
	unlink(path);
	return 0;
}
