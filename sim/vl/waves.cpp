/* Waves of the Verilated blocks: WAVES=1 turns them on; WAVES_DIR (default build/waves) is
 * where each block's FST goes (docs/rtl.md). */
#include "sim/vl/vl.h"

#include <cerrno>

std::string vl_waves_dir()
{
	const char *on = getenv("WAVES"), *dir = getenv("WAVES_DIR");
	std::string d = dir && *dir ? dir : "build/waves";

	if (!on || std::string(on) != "1")
		return "";
	/* mkdir -p */
	for (size_t i = 1; i <= d.size(); i++)
		if (i == d.size() || d[i] == '/') {
			std::string part = d.substr(0, i);

			SIM_ASSERT(mkdir(part.c_str(), 0777) == 0 || errno == EEXIST,
				   "WAVES_DIR: cannot create %s", part.c_str());
		}
	return d;
}
