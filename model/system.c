/* The simulated system: configuration, boot (kernel, subnet manager, one HCA per host) and
 * the libhcasim control API of sim/hcasim.h. */
#include "model/hca.h"
#include "sim/error.h"
#include "sim/hcasim.h"
#include "sim/sm.h"
#include "sim/trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVS 16

static struct {
	bool cfg_ready;          /* defaults and HCASIM_CONFIG applied */
	struct sim_config cfg;   /* configuration for the next boot */
	bool booted;             /* system exists */
	struct sim_kernel *k;    /* its kernel */
	struct hm_dev *devs[MAX_DEVS];
	int ndevs;
} sys;

static int cfg_prepare(void)
{
	const char *path;
	int rc;

	if (sys.cfg_ready)
		return 0;
	sim_config_defaults(&sys.cfg);
	path = getenv("HCASIM_CONFIG");
	if (path && *path) {
		rc = sim_config_load(&sys.cfg, path);
		if (rc)
			return rc;
	}
	sys.cfg_ready = true;
	return 0;
}

int hcasim_config_set(const char *key, const char *value)
{
	int rc = cfg_prepare();

	if (rc)
		return rc;
	if (sys.booted)
		return sim_error(-EBUSY, "config key '%s': the system is already booted "
				 "(hcasim_shutdown() first)", key ? key : "(null)");
	return sim_config_set(&sys.cfg, key, value);
}

int hcasim_config_get(const char *key, char *buf, size_t len)
{
	int rc = cfg_prepare();

	return rc ? rc : sim_config_get(&sys.cfg, key, buf, len);
}

int hcasim_config_load(const char *path)
{
	int rc = cfg_prepare();

	if (rc)
		return rc;
	if (sys.booted)
		return sim_error(-EBUSY, "config file '%s': the system is already booted",
				 path ? path : "(null)");
	return sim_config_load(&sys.cfg, path);
}

int hcasim_boot(void)
{
	const char *cats = getenv("HCASIM_TRACE"), *tfile = getenv("HCASIM_TRACE_FILE");
	int rc;

	if (sys.booted)
		return 0;
	rc = cfg_prepare();
	if (rc)
		return rc;
	if (cats) {
		rc = sim_trace_select(cats);
		if (rc)
			return rc;
	}
	if (tfile && *tfile) {
		rc = sim_trace_open(tfile);
		if (rc)
			return rc;
	}
	sys.k = sim_kernel_create();
	if (!sys.k)
		return sim_error(-ENOMEM, "boot: out of memory");
	sim_kernel_set_current(sys.k);
	sim_sm_reset(sys.cfg.sm_delay_ns * SIM_PS_PER_NS);
	sys.ndevs = (int)sys.cfg.hosts;
	for (int i = 0; i < sys.ndevs; i++)
		sys.devs[i] = hm_dev_create(&sys.cfg, i, i);
	sys.booted = true;
	SIM_TRACE(kernel, boot, -1, "hosts=%llu ports=%llu link_layer=%s seed=%llu",
		  (unsigned long long)sys.cfg.hosts, (unsigned long long)sys.cfg.ports,
		  sys.cfg.link_layer == SIM_LL_ROCE ? "roce" : "ib",
		  (unsigned long long)sys.cfg.seed);
	return 0;
}

int hcasim_booted(void)
{
	return sys.booted;
}

void hcasim_shutdown(void)
{
	if (!sys.booted)
		return;
	SIM_TRACE(kernel, shutdown, -1, "events=%llu",
		  (unsigned long long)sim_events_executed(sys.k));
	for (int i = 0; i < sys.ndevs; i++)
		hm_dev_destroy(sys.devs[i]);
	sys.ndevs = 0;
	sim_kernel_destroy(sys.k);
	sys.k = NULL;
	sys.booted = false;
	sys.cfg_ready = false;
	sim_trace_close();
}

const char *hcasim_last_error(void)
{
	return sim_last_error();
}

uint64_t hcasim_now_ps(void)
{
	return sys.k ? sim_now(sys.k) : 0;
}

void hcasim_run_for_ps(uint64_t ps)
{
	if (sys.k)
		sim_run_until(sys.k, sim_now(sys.k) + ps);
}

uint64_t hcasim_events_executed(void)
{
	return sys.k ? sim_events_executed(sys.k) : 0;
}

int hcasim_trace(const char *categories, const char *path)
{
	int rc = sim_trace_select(categories);

	return rc ? rc : sim_trace_open(path);
}

int hcasim_num_devices(void)
{
	return sys.ndevs;
}

uint64_t hcasim_dma_faults(int dev)
{
	return dev >= 0 && dev < sys.ndevs ? sim_pcie_fault_count(sys.devs[dev]->fn) : 0;
}
