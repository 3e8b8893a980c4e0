/* Waves of the Verilated blocks: WAVES=1 turns them on; each block's FST goes where the
 * model's VCD goes, HCASIM_WAVES_DIR (WAVES_DIR, the older name, if that is not set; default
 * build/waves), so that make waves finds both (docs/rtl.md, docs/waves.md). */
#include "sim/vl/vl.h"

#include <cerrno>

std::string vl_waves_dir()
{
	const char *on = getenv("WAVES"), *dir = getenv("HCASIM_WAVES_DIR");

	if (!dir || !*dir)
		dir = getenv("WAVES_DIR");
	std::string d = dir && *dir ? dir : "build/waves";

	if (!on || std::string(on) != "1")
		return "";
	/* mkdir -p */
	for (size_t i = 1; i <= d.size(); i++)
		if (i == d.size() || d[i] == '/') {
			std::string part = d.substr(0, i);

			SIM_ASSERT(mkdir(part.c_str(), 0777) == 0 || errno == EEXIST,
				   "HCASIM_WAVES_DIR: cannot create %s", part.c_str());
		}
	return d;
}
