/* hcasim-run [PCAP_PREFIX]: the default simulation (`make run`), sim/apps/run_workload.c. The
 * link is captured to PCAP_PREFIX.link0.pcap (default prefix: hcasim-run). */
#include "sim/apps/run_workload.h"

#include <stddef.h>

int main(int argc, char **argv)
{
	return hcasim_run_default(argc > 1 ? argv[1] : "hcasim-run", NULL, NULL) ? 1 : 0;
}
