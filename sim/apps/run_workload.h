/* The default simulation (sim/apps/run_workload.c), shared by hcasim-run and hcasim-sc. */
#ifndef SIM_APPS_RUN_WORKLOAD_H
#define SIM_APPS_RUN_WORKLOAD_H

#ifdef __cplusplus
extern "C" {
#endif

/* Boots the simulated HCAs, runs the default workload, prints its report on stdout (errors on
 * stderr) and shuts the simulation down. The link is captured to PCAP.link0.pcap. If reported
 * is not NULL it is called with arg right after the report's last line ("simulated time: ..."),
 * before the teardown (hcasim-sc compares its own time with the time printed).
 * 0 on success, 1 on failure (the exit status of hcasim-run). */
int hcasim_run_default(const char *pcap, void (*reported)(void *arg), void *arg);

#ifdef __cplusplus
}
#endif

#endif
