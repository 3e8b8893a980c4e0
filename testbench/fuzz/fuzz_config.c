/* Fuzz target `config`: configuration file text into hcasim_config_load, as HCASIM_CONFIG
 * names it (sim/textfile.c, sim/config.c). Every input is refused with a message or applied;
 * nothing else may happen. The seeds are the configuration examples of docs/config.md. */
#include "sim/hcasim.h"
#include "testbench/fuzz/fuzz.h"

#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];

	fz_write_temp("config", data, size, path, sizeof(path));
	hcasim_config_load(path);
	unlink(path);
	return 0;
}
