/* hcasim-sc [--devs N] [PCAP_PREFIX]: the default simulation of hcasim-run in a SystemC top
 * (docs/systemc.md). The C model of the HCAs runs behind an sc_module (hcasim_sc::model): its
 * SC_THREAD runs the default workload (sim/apps/run_workload.c) and keeps SystemC time equal
 * to hcasim time through hcasim_time_hook, each forward step of the hcasim kernel being a
 * wait() of the same length in that thread. The RTL blocks (sched, cqe, psn, mkey) are Verilated
 * SystemC modules (sc_blocks.h) and run with HCASIM_IMPL=all=rtl unless HCASIM_IMPL is set
 * (all=lockstep compares them with the C twins). The workload's report is on stdout, exactly
 * as hcasim-run prints it; the top's own lines are on stderr. N: the devices to elaborate RTL
 * blocks for (default: sim.hosts of the configuration). */
#include "sim/systemc/sc_blocks.h"

#include "sim/apps/run_workload.h"
#include "sim/hcasim.h"

#include <systemc>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hcasim_sc {

/* The C model as a SystemC module: one thread that runs the workload. */
class model : public sc_core::sc_module {
public:
	SC_HAS_PROCESS(model);
	model(sc_core::sc_module_name name, std::string pcap) : sc_module(name), pcap_(pcap)
	{
		SC_THREAD(run);
		/* The model, the driver and Verilator's eval() run on this thread's stack. */
		set_stack_size(64u << 20);
	}

	int rc = -1;          /* the workload's exit status */
	uint64_t last_ps = 0; /* hcasim time after its last forward step */
	uint64_t steps = 0;   /* forward steps of the hcasim kernel */
	uint64_t report_sc_ps = 0, report_hcasim_ps = 0; /* both times at "simulated time: ..." */

private:
	/* hcasim_time_hook: hcasim time is about to move from `from` to `to`. */
	static void advance(void *arg, uint64_t from_ps, uint64_t to_ps)
	{
		model *m = static_cast<model *>(arg);
		uint64_t now = sc_core::sc_time_stamp().value();

		if (now != from_ps) {
			std::fprintf(stderr,
				     "hcasim-sc: out of step: hcasim at %" PRIu64
				     " ps, SystemC at %" PRIu64 " ps\n",
				     from_ps, now);
			std::abort();
		}
		sc_core::wait(sc_core::sc_time::from_value(to_ps - from_ps));
		m->last_ps = to_ps;
		m->steps++;
	}

	static void reported(void *arg)
	{
		model *m = static_cast<model *>(arg);

		m->report_sc_ps = sc_core::sc_time_stamp().value();
		m->report_hcasim_ps = hcasim_now_ps();
	}

	void run()
	{
		hcasim_time_hook(advance, this);
		rc = hcasim_run_default(pcap_.c_str(), reported, this);
		hcasim_time_hook(nullptr, nullptr);
		std::fflush(stdout);
		sc_core::sc_stop();
	}

	std::string pcap_;
};

} // namespace hcasim_sc

static int usage()
{
	std::fprintf(stderr, "usage: hcasim-sc [--devs N] [PCAP_PREFIX]\n");
	return 2;
}

int sc_main(int argc, char **argv)
{
	const char *pcap = "hcasim-sc";
	int ndevs = 0;

	for (int i = 1; i < argc; i++) {
		if (!std::strcmp(argv[i], "--devs") && i + 1 < argc) {
			ndevs = std::atoi(argv[++i]);
			if (ndevs < 1)
				return usage();
		} else if (argv[i][0] == '-') {
			return usage();
		} else {
			pcap = argv[i];
		}
	}
	if (!ndevs) {
		char buf[32];

		if (hcasim_config_get("sim.hosts", buf, sizeof(buf))) {
			std::fprintf(stderr, "hcasim-sc: sim.hosts: %s\n", hcasim_last_error());
			return 1;
		}
		ndevs = std::atoi(buf);
	}
	/* The Verilated SystemC blocks have no variant built with a test bug (docs/systemc.md):
	 * refused here, before a block is made. */
	const char *bug = getenv("HCASIM_RTL_BUG");

	if (bug && *bug && std::strcmp(bug, "none")) {
		std::fprintf(stderr, "hcasim-sc: HCASIM_RTL_BUG: '%.40s': hcasim-sc has no RTL built "
			     "with a test bug (none is the only value)\n", bug);
		return 1;
	}
	setenv("HCASIM_IMPL", "all=rtl", 0);
	sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
	/* stdout is the workload's report, as hcasim-run prints it: no "stopped by user" there. */
	sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
						sc_core::SC_DO_NOTHING);

	hcasim_sc::sc_rtl_blocks rtl("rtl", ndevs);
	hcasim_sc::model hca("hcasim", pcap);

	hcasim_sc::sc_rtl_register(&rtl);
	sc_core::sc_start();
	if (!sc_core::sc_end_of_simulation_invoked())
		sc_core::sc_stop();

	uint64_t sc_ps = sc_core::sc_time_stamp().value();

	std::fprintf(stderr,
		     "hcasim-sc: at the report: sc_time_stamp %" PRIu64 " ps, hcasim time %" PRIu64
		     " ps\n"
		     "hcasim-sc: at the end: sc_time_stamp %" PRIu64 " ps, hcasim time %" PRIu64
		     " ps\n"
		     "hcasim-sc: HCASIM_IMPL=%s, %" PRIu64 " time steps, %" PRIu64
		     " RTL transactions in %" PRIu64 " delta cycles, exit %d\n",
		     hca.report_sc_ps, hca.report_hcasim_ps, sc_ps, hca.last_ps,
		     getenv("HCASIM_IMPL"), hca.steps, hcasim_sc::sc_rtl_transactions(),
		     hcasim_sc::sc_rtl_deltas(), hca.rc);
	if (sc_ps != hca.last_ps || hca.report_sc_ps != hca.report_hcasim_ps) {
		std::fprintf(stderr, "hcasim-sc: SystemC time and hcasim time differ\n");
		return 1;
	}
	return hca.rc;
}
