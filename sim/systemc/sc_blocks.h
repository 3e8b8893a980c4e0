/* The RTL blocks of hcasim as SystemC modules (sim/systemc/, docs/systemc.md).
 *
 * rtl/sched.sv, cqe.sv, psn.sv, mkey.sv, timers.sv, resp_fe.sv and qpc.sv are Verilated with --sc (prefix Vsc_<block>) and each
 * instance is wrapped in a module that owns its pin signals and a clock signal. The transactor
 * of the wrapper implements the block's port (model/twin.h) with the pin protocol of
 * sim/vl/vl.h and docs/rtl.md, edge for edge, but every evaluation is a delta cycle
 * (settle(): wait(SC_ZERO_TIME)) of the calling SC_THREAD: a transaction costs no SystemC
 * time, the model accounts the block's latency in cycles (out.cycle). It must therefore be
 * called from an SC_THREAD, the one that runs the C model (hcasim_sc::model).
 *
 * SystemC modules cannot be created once the simulation runs, so the instances (one of each
 * block per device) are elaborated up front by sc_rtl_blocks; the port's create(d) takes those
 * of d->devno and resets them. sc_rtl_register() puts their ops tables in place of the
 * --cc transactors of libhcasim (hm_twin_register), so impl.<block> = rtl, lockstep or checked
 * runs them. */
#ifndef SIM_SYSTEMC_SC_BLOCKS_H
#define SIM_SYSTEMC_SC_BLOCKS_H

#include <systemc>

#include <cstdint>
#include <memory>
#include <vector>

namespace hcasim_sc {

struct sched_block;
struct cqe_block;
struct psn_block;
struct mkey_block;
struct timers_block;
struct resp_fe_block;
struct qpc_block;

/* One instance of each block per device, named <name>.hca<dev>.<block>. */
class sc_rtl_blocks : public sc_core::sc_module {
public:
	sc_rtl_blocks(sc_core::sc_module_name name, int ndevs);
	~sc_rtl_blocks() override;

	std::vector<std::unique_ptr<sched_block>> sched;
	std::vector<std::unique_ptr<cqe_block>> cqe;
	std::vector<std::unique_ptr<psn_block>> psn;
	std::vector<std::unique_ptr<mkey_block>> mkey;
	std::vector<std::unique_ptr<timers_block>> timers;
	std::vector<std::unique_ptr<resp_fe_block>> resp_fe;
	std::vector<std::unique_ptr<qpc_block>> qpc;
};

/* Registers the transactors of these instances as the RTL of the ports. */
void sc_rtl_register(sc_rtl_blocks *blocks);

/* Transactions the SC transactors ran (all blocks), and the delta cycles they took. */
uint64_t sc_rtl_transactions();
uint64_t sc_rtl_deltas();

} // namespace hcasim_sc

#endif
