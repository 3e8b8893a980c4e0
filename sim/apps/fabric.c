/* hcasim-fabric: start a fabric explicitly (docs/fabric.md#starting-a-fabric).
 *   hcasim-fabric DIR
 * creates DIR and DIR/fabric.ini from the configuration (the defaults, then the file named by
 * HCASIM_CONFIG), holding no host; the processes that join later (HCASIM_FABRIC=DIR) compare
 * their configuration with it and are refused naming the first key that differs. A fabric.ini
 * already there is compared instead. Exit 0 (written or agreeing), 1 (it differs), 2 (usage or
 * a file that cannot be written). */
#include "sim/config.h"
#include "sim/env.h"
#include "sim/error.h"
#include "sim/fabric.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *cfg = sim_env("HCASIM_CONFIG");
	struct sim_config c;
	int rc;

	if (argc != 2 || !argv[1][0] || argv[1][0] == '-') {
		fprintf(stderr, "usage: hcasim-fabric DIR (the configuration: HCASIM_CONFIG)\n");
		return 2;
	}
	sim_config_defaults(&c);
	if (cfg && *cfg && (rc = sim_config_load(&c, cfg))) {
		fprintf(stderr, "hcasim-fabric: HCASIM_CONFIG: %s\n", sim_last_error());
		return 2;
	}
	rc = sim_fabric_create(argv[1], &c);
	if (rc < 0) {
		fprintf(stderr, "hcasim-fabric: %s\n", sim_last_error());
		return rc == -EINVAL ? 1 : 2;
	}
	printf("hcasim-fabric: %s/fabric.ini %s (%u hosts, link latency %llu ns)\n", argv[1],
	       rc ? "is there and agrees" : "written", (unsigned)c.hosts,
	       (unsigned long long)c.link_latency_ns);
	return 0;
}
