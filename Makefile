# hcasim — build, test and run. Everything builds into build/.
#   make            libraries and tools          make test      every Criterion suite
#                                                make test T='suite/*'  one suite (JUnit XML:
#                                                build/test/junit.xml, or JUNIT=path)
#   make run        the default simulation       make deps      install missing packages
#   make docs       generated docs, quoted runs  make test SAN=1  with ASan + UBSan
#   make bench      benchmarks against docs/targets, written to docs/bench/results.md, and
#                   the hcasim-perf plots docs/bench/*.png
#   make waves [T=scenario.ini | T='suite/test*']  dumps for GTKWave (docs/waves.md)
#   make test IMPL=rtl|lockstep|checked   every suite on the RTL twins (docs/rtl.md)
#   make coverage   line and toggle coverage of rtl/ and the functional points over the whole
#                   suite in rtl mode, built in build-cov (docs/rtl.md#coverage)
# See README.md.

BUILD   := build
SAN     ?= 0
CC      ?= gcc
JOBS    ?= 2

DEB_PKGS := gcc clang make pkg-config libc6-dev libcriterion-dev libibverbs-dev ibverbs-utils \
            libinih-dev zlib1g-dev tshark gnuplot-nox gtkwave xvfb xauth verilator libsystemc-dev \
            libibverbs1 ibverbs-providers perftest rdmacm-utils python3-pyverbs binutils

# -fno-semantic-interposition: calls inside libhcasim bind locally (no PLT), so the compiler may
# inline them; nothing interposes the library's own functions. About 5 % on the speed benches.
CFLAGS  := -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -fPIC -fno-semantic-interposition \
           -I. -MMD -MP
LDFLAGS :=
ifeq ($(SAN),1)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif
# FUZZ=1 (make fuzz builds so, with clang, in build/fuzz): libFuzzer's coverage in every object.
FUZZ    ?= 0
ifeq ($(FUZZ),1)
CFLAGS  += -fsanitize=fuzzer-no-link
endif

OBJ := $(BUILD)/obj
LIB := $(BUILD)/lib
BIN := $(BUILD)/bin

SIM_SRCS := $(wildcard sim/*.c) $(wildcard model/*.c) $(wildcard model/hw/*.c) \
            $(wildcard firmware/*.c)
DRV_SRCS := $(wildcard driver/*.c)
APP_SRCS := $(wildcard sim/apps/*.c)
TEST_SRCS := $(wildcard testbench/*.c)
# testbench/bench/: hcasim-bench (the report) and hcasim-perf (perf_*.c) share common.c, stream.c.
BENCH_LIB_SRCS := testbench/bench/common.c testbench/bench/stream.c
PERF_SRCS  := $(wildcard testbench/bench/perf_*.c)
BENCH_SRCS := $(filter-out $(PERF_SRCS),$(wildcard testbench/bench/*.c))

SIM_OBJS  := $(SIM_SRCS:%.c=$(OBJ)/%.o)
DRV_OBJS  := $(DRV_SRCS:%.c=$(OBJ)/%.o)
TEST_OBJS := $(TEST_SRCS:%.c=$(OBJ)/%.o)
BENCH_OBJS := $(BENCH_SRCS:%.c=$(OBJ)/%.o)
PERF_OBJS  := $(PERF_SRCS:%.c=$(OBJ)/%.o) $(BENCH_LIB_SRCS:%.c=$(OBJ)/%.o)

# ---- RTL twins (rtl/*.sv, docs/rtl.md): Verilated into build/vl/<block>/ with the primitives
# and checkers of rtl/prim/ (RTL_PRIM), their transactors
# (sim/vl/*.cpp) linked into libhcasim. Without verilator the library is built without them
# (impl.<block> = rtl is then refused at boot). Verilator reruns only when rtl/*.sv change.
VERILATOR ?= $(shell command -v verilator 2>/dev/null)
SYSTEMC   ?= $(shell pkg-config --exists systemc 2>/dev/null && echo 1)
# 1 if the SystemC top (sim/systemc/, below) is built
HAVE_SC   := $(if $(and $(VERILATOR),$(SYSTEMC)),1,0)
VL        := $(BUILD)/vl
RTL_PRIM  := $(sort $(wildcard rtl/prim/*.sv))
# The blocks with an RTL twin, read from the registry model/twin.def (one TWIN( line each, the
# name first): rtl/<name>.sv, sim/vl/<name>.cpp. VL_FLAGS_<name>: its Verilator parameters.
TWINS     := $(shell sed -n 's/^TWIN.\([a-z0-9_]*\),.*/\1/p' model/twin.def)
# sched's PIPELINE is the C twin's HM_SCHED_PIPELINE (model/twin.h): one number, read here.
SCHED_PIPELINE := $(shell sed -n 's/^\#define HM_SCHED_PIPELINE \([0-9]*\).*/\1/p' model/twin.h)
VL_FLAGS_sched := -GPIPELINE=$(SCHED_PIPELINE)
# VL_SRCS_<name>: the blocks a block instantiates as its stages, Verilated with it (resp_fe:
# psn's PSN stage and mkey's key stage).
VL_SRCS_resp_fe := rtl/psn.sv rtl/mkey.sv
# wqe_fetch's DECODE_CYCLES is HM_WQE_DECODE_CYCLES (model/twin.h), read the same way.
WQE_DECODE := $(shell sed -n 's/^\#define HM_WQE_DECODE_CYCLES \([0-9]*\).*/\1/p' model/twin.h)
VL_FLAGS_wqe_fetch := -GDECODE_CYCLES=$(WQE_DECODE)
# The device side of PCIe (sim/pcie_dev.h) compiles only with HCASIM_DEVICE_SIDE: everywhere but
# driver/, whose files may include only the host half (docs/architecture.md, the layering rule).
DEVICE_SIDE := -DHCASIM_DEVICE_SIDE
# COV=1 (make coverage builds so, in build-cov): every Verilated model counts its line, toggle
# and cover-statement coverage, written by the transactors (sim/vl/vl.h) under
# HCASIM_COVERAGE_DIR; the runtime gets verilated_cov.o.
COV     ?= 0
ifeq ($(COV),1)
VL_COV     := --coverage-line --coverage-toggle --coverage-user
VL_COV_OBJ := verilated_cov.o
endif
ifneq ($(VERILATOR),)
VL_ROOT    := $(shell $(VERILATOR) --getenv VERILATOR_ROOT)
# block name, Verilator prefix, extra flags (: between them): every twin, and <b>_bug for each
# b of VL_BUGS, the block with the test-only HCA_RTL_BUG and HCA_RTL_BUG_<B> (a block's stage,
# Verilated within another's bug model, keeps its own bug out by the second)
VL_BUGS    := cqe sched mkey timers resp_fe qpc wqe_fetch
VL_MODELS  := $(foreach b,$(TWINS),$(b):V$(b):$(VL_FLAGS_$(b))) \
              $(foreach b,$(VL_BUGS),$(b)_bug:V$(b)_bug:-DHCA_RTL_BUG:-DHCA_RTL_BUG_$(shell echo $(b) | tr a-z A-Z):$(VL_FLAGS_$(b)))
VL_ARCH    := $(foreach m,$(VL_MODELS),$(VL)/$(word 1,$(subst :, ,$(m)))/$(word 2,$(subst :, ,$(m)))__ALL.a)
VL_RUNTIME := $(VL)/runtime/libverilated.a
VL_OBJS    := $(patsubst %.cpp,$(OBJ)/%.o,$(wildcard sim/vl/*.cpp))
VL_LIBS    := -lstdc++ -pthread -latomic
# --assert: the handshake checkers (rtl/prim/hs_check.sv, txn_check.sv) and the blocks'
# assertions run in every rtl and lockstep run (docs/rtl.md "Assertions").
VLFLAGS    := --cc --build -j 1 -Wall -O3 --assert --trace-fst -CFLAGS -fPIC -MAKEFLAGS OPT_FAST=-O2 \
              -MAKEFLAGS OPT_GLOBAL=-O2 $(VL_COV)
CXXFLAGS   := -std=gnu++17 -O2 -g -Wall -Wextra -Werror -fPIC -I. -MMD -MP \
              -isystem $(VL_ROOT)/include -isystem $(VL_ROOT)/include/vltstd \
              $(foreach m,$(TWINS) $(VL_BUGS:%=%_bug),-isystem $(VL)/$(m)) -DVM_TRACE=1 \
              -DVM_COVERAGE=$(COV) $(DEVICE_SIDE)
endif

LIBHCASIM  := $(LIB)/libhcasim.so.0
LIBIBVERBS := $(LIB)/libibverbs.so.1
LIBEXEC    := $(LIB)/libhcasim-exec.so
APPS       := $(BIN)/hcasim-run $(BIN)/hcasim-gendoc $(BIN)/hcasim-pcapcheck $(BIN)/hcasim-scenario \
              $(BIN)/hcasim-vcdcheck $(BIN)/hcasim-docrun $(BIN)/hcasim-exec $(BIN)/hcasim-fabric $(LIBEXEC)
# hcasim-scenario is built from sim/apps/scenario.c and the files of sim/apps/scenario/.
SCN_OBJS   := $(patsubst %.c,$(OBJ)/%.o,$(wildcard sim/apps/scenario/*.c))
TESTBIN    := $(BUILD)/test/hcasim-tests
# What a program run by hcasim-exec sees (testbench/exec/probe.c, suite exec).
EXEC_PROBE := $(BUILD)/test/exec-probe
BENCHBIN   := $(BIN)/hcasim-bench
PERFBIN    := $(BIN)/hcasim-perf
# model/hw/ (the register map and formats, included by hcasimdv.h and by a driver written
# against hcasim_bus.h) is installed as build/include/model/hw/.
HW_HEADERS := $(patsubst %,$(BUILD)/include/%,$(wildcard model/hw/*.h model/hw/*.def))
HEADER     := $(BUILD)/include/hcasim.h $(BUILD)/include/hcasim_bus.h $(BUILD)/include/hcasimdv.h \
              $(HW_HEADERS)

.PHONY: all run test bench deps docs clean waves golden fuzz fuzz-bins coverage
all: $(LIBHCASIM) $(LIBIBVERBS) $(APPS) $(HEADER)

# Rebuild everything when the flags change (SAN=0 <-> SAN=1).
FLAGS_STAMP := $(BUILD)/.flags
$(shell mkdir -p $(BUILD); echo '$(CC) $(CFLAGS) $(LDFLAGS)' | cmp -s - $(FLAGS_STAMP) || \
	echo '$(CC) $(CFLAGS) $(LDFLAGS)' > $(FLAGS_STAMP))

$(OBJ)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(TEST_OBJS): Makefile
$(OBJ)/sim/%.o $(OBJ)/model/%.o $(OBJ)/firmware/%.o $(OBJ)/testbench/%.o: CFLAGS += $(DEVICE_SIDE)
# sim/devthread.c's thread-locals, read at every verb, by TLS descriptors (see the file): GCC's
# option (Debian 12's clang, which builds the fuzzers, has none, and keeps the default model).
ifeq ($(shell uname -m),x86_64)
ifeq ($(findstring clang,$(CC)),)
$(OBJ)/sim/devthread.o: CFLAGS += -mtls-dialect=gnu2
endif
endif
# testbench/test_systemc.c runs or skips by HAVE_SC: recompiled when it changes.
SC_STAMP := $(BUILD)/.systemc
$(shell mkdir -p $(BUILD); echo '$(HAVE_SC)' | cmp -s - $(SC_STAMP) || echo '$(HAVE_SC)' > $(SC_STAMP))
$(OBJ)/testbench/test_systemc.o: $(SC_STAMP)
$(OBJ)/testbench/%.o: CFLAGS += -DHCASIM_SRC_DIR='"$(CURDIR)"' -DHCASIM_BUILD_DIR='"$(abspath $(BUILD))"' \
	-DHCASIM_SAN=$(SAN) -DHCASIM_SYSTEMC=$(HAVE_SC)

ifneq ($(VERILATOR),)
# Re-Verilate when the build parameters change (HM_SCHED_PIPELINE in model/twin.h).
VL_STAMP := $(VL)/.params
$(shell mkdir -p $(VL); echo 'PIPELINE=$(SCHED_PIPELINE) DECODE=$(WQE_DECODE) COV=$(COV)' | cmp -s - $(VL_STAMP) || \
	echo 'PIPELINE=$(SCHED_PIPELINE) DECODE=$(WQE_DECODE) COV=$(COV)' > $(VL_STAMP))

# One rule per Verilated model: $(1) block dir, $(2) prefix, $(3) extra flags, $(4) top module.
define vl_model
$(VL)/$(1)/$(2)__ALL.a: rtl/$(4).sv $(VL_SRCS_$(4)) rtl/hca_pkg.sv $(RTL_PRIM) Makefile $(VL_STAMP)
	@mkdir -p $(VL)/$(1)
	+$(VERILATOR) $(VLFLAGS) $(3) --prefix $(2) --top-module $(4) --Mdir $(VL)/$(1) \
		rtl/hca_pkg.sv $(RTL_PRIM) $(VL_SRCS_$(4)) rtl/$(4).sv >$(VL)/$(1)/build.log || \
		{ cat $(VL)/$(1)/build.log; exit 1; }
	@touch $$@ # Verilator keeps the archive's date when nothing changed
endef
$(foreach m,$(VL_MODELS),$(eval $(call vl_model,$(word 1,$(subst :, ,$(m))),$(word 2,$(subst :, ,$(m))),$(wordlist 3,9,$(subst :, ,$(m))),$(patsubst %_bug,%,$(word 1,$(subst :, ,$(m)))))))

# The Verilator runtime (toolchain-facts §6): built once through one model's makefile.
$(VL_RUNTIME): $(VL)/psn/Vpsn__ALL.a $(VL_STAMP)
	@mkdir -p $(@D)
	$(MAKE) -s -C $(VL)/psn -f Vpsn.mk OPT_FAST=-O2 OPT_GLOBAL=-O2 verilated.o verilated_fst_c.o verilated_threads.o \
		$(VL_COV_OBJ) >/dev/null
	rm -f $@
	cd $(VL)/psn && ar rcs $(abspath $@) verilated.o verilated_fst_c.o verilated_threads.o $(VL_COV_OBJ)

# The primitives' block test (testbench/blocks/test_prim.cpp, suite blocks): each of rtl/prim/
# Verilated alone, with test parameters, linked into build/test/block-prim.
PRIM_TOPS  := sram hs_check txn_check
VL_FLAGS_prim_sram := -GWIDTH=24 -GDEPTH=1000
VL_FLAGS_prim_hs_check := -GW=16
VL_FLAGS_prim_txn_check := -GMAX_LATENCY=4 -GDEPTH=2
PRIM_ARCH  := $(foreach t,$(PRIM_TOPS),$(VL)/prim_$(t)/Vprim_$(t)__ALL.a)
define prim_model
$(VL)/prim_$(1)/Vprim_$(1)__ALL.a: rtl/prim/$(1).sv Makefile
	@mkdir -p $$(@D)
	+$(VERILATOR) --cc --build -j 1 -Wall -O3 --assert -CFLAGS -fPIC -MAKEFLAGS OPT_FAST=-O2 \
		$(VL_FLAGS_prim_$(1)) --prefix Vprim_$(1) --top-module $(1) --Mdir $$(@D) $$< \
		>$$(@D)/build.log || { cat $$(@D)/build.log; exit 1; }
	@touch $$@
endef
$(foreach t,$(PRIM_TOPS),$(eval $(call prim_model,$(t))))
# With it, sched's pipeline at pin level (testbench/blocks/test_sched_pins.cpp): sched with 40
# QPNs and PIPELINE 1 and 3.
PIPE_ARCH  := $(VL)/sched_p1/Vsched_p1__ALL.a $(VL)/sched_p3/Vsched_p3__ALL.a
define sched_pipe_model
$(VL)/sched_p$(1)/Vsched_p$(1)__ALL.a: rtl/sched.sv rtl/hca_pkg.sv $(RTL_PRIM) Makefile
	@mkdir -p $$(@D)
	+$(VERILATOR) --cc --build -j 1 -Wall -O3 --assert -CFLAGS -fPIC -MAKEFLAGS OPT_FAST=-O2 \
		-GNQP=40 -GPIPELINE=$(1) --prefix Vsched_p$(1) --top-module sched --Mdir $$(@D) \
		rtl/hca_pkg.sv $(RTL_PRIM) rtl/sched.sv >$$(@D)/build.log || \
		{ cat $$(@D)/build.log; exit 1; }
	@touch $$@
endef
$(foreach p,1 3,$(eval $(call sched_pipe_model,$(p))))
# And mkey at pin level (testbench/blocks/test_mkey_pins.cpp): 48-bit addresses, 24-bit PDNs,
# answers held up to 16 cycles.
PIPE_ARCH  += $(VL)/mkey_pins/Vmkey_pins__ALL.a
$(VL)/mkey_pins/Vmkey_pins__ALL.a: rtl/mkey.sv rtl/hca_pkg.sv $(RTL_PRIM) Makefile
	@mkdir -p $(@D)
	+$(VERILATOR) --cc --build -j 1 -Wall -O3 --assert -CFLAGS -fPIC -MAKEFLAGS OPT_FAST=-O2 \
		-GVA_BITS=48 -GPDN_BITS=24 -GMAX_HOLD=16 --prefix Vmkey_pins --top-module mkey \
		--Mdir $(@D) rtl/hca_pkg.sv $(RTL_PRIM) rtl/mkey.sv >$(@D)/build.log || \
		{ cat $(@D)/build.log; exit 1; }
	@touch $@
# And timers' next-expiry tracking at pin level (testbench/blocks/test_timers_pins.cpp):
# timers with 40 QPNs.
$(VL)/timers_p/Vtimers_p__ALL.a: rtl/timers.sv rtl/hca_pkg.sv $(RTL_PRIM) Makefile
	@mkdir -p $(@D)
	+$(VERILATOR) --cc --build -j 1 -Wall -O3 --assert -CFLAGS -fPIC -MAKEFLAGS OPT_FAST=-O2 \
		-GNQP=40 --prefix Vtimers_p --top-module timers --Mdir $(@D) \
		rtl/hca_pkg.sv $(RTL_PRIM) rtl/timers.sv >$(@D)/build.log || \
		{ cat $(@D)/build.log; exit 1; }
	@touch $@
PIPE_ARCH  += $(VL)/timers_p/Vtimers_p__ALL.a
# And resp_fe with its stages (testbench/blocks/test_resp_fe_pins.cpp): 48-bit addresses, 24-bit
# PDNs, answers held up to 16 cycles.
$(VL)/resp_fe_pins/Vresp_fe_pins__ALL.a: rtl/resp_fe.sv $(VL_SRCS_resp_fe) rtl/hca_pkg.sv $(RTL_PRIM) Makefile
	@mkdir -p $(@D)
	+$(VERILATOR) --cc --build -j 1 -Wall -O3 --assert -CFLAGS -fPIC -MAKEFLAGS OPT_FAST=-O2 \
		-GVA_BITS=48 -GPDN_BITS=24 -GMAX_HOLD=16 --prefix Vresp_fe_pins --top-module resp_fe \
		--Mdir $(@D) rtl/hca_pkg.sv $(RTL_PRIM) $(VL_SRCS_resp_fe) rtl/resp_fe.sv \
		>$(@D)/build.log || { cat $(@D)/build.log; exit 1; }
	@touch $@
PIPE_ARCH  += $(VL)/resp_fe_pins/Vresp_fe_pins__ALL.a
# And qpc's tags, LRU list and DMA requests at pin level (testbench/blocks/test_qpc_pins.cpp):
# qpc with 40 QPNs, answers held up to 16 cycles.
$(VL)/qpc_p/Vqpc_p__ALL.a: rtl/qpc.sv rtl/hca_pkg.sv $(RTL_PRIM) Makefile
	@mkdir -p $(@D)
	+$(VERILATOR) --cc --build -j 1 -Wall -O3 --assert -CFLAGS -fPIC -MAKEFLAGS OPT_FAST=-O2 \
		-GNQP=40 -GMAX_HOLD=16 --prefix Vqpc_p --top-module qpc --Mdir $(@D) \
		rtl/hca_pkg.sv $(RTL_PRIM) rtl/qpc.sv >$(@D)/build.log || \
		{ cat $(@D)/build.log; exit 1; }
	@touch $@
PIPE_ARCH  += $(VL)/qpc_p/Vqpc_p__ALL.a
PRIM_SRCS  := testbench/blocks/test_prim.cpp testbench/blocks/test_sched_pins.cpp \
              testbench/blocks/test_mkey_pins.cpp testbench/blocks/test_timers_pins.cpp \
              testbench/blocks/test_resp_fe_pins.cpp testbench/blocks/test_qpc_pins.cpp
$(BUILD)/test/block-prim: $(PRIM_SRCS) $(PRIM_ARCH) $(PIPE_ARCH) $(VL_RUNTIME) Makefile
	@mkdir -p $(@D)
	$(CXX) $(filter-out -MMD -MP,$(CXXFLAGS)) $(PRIM_TOPS:%=-isystem $(VL)/prim_%) \
		-isystem $(VL)/sched_p1 -isystem $(VL)/sched_p3 -isystem $(VL)/mkey_pins \
		-isystem $(VL)/timers_p -isystem $(VL)/resp_fe_pins -isystem $(VL)/qpc_p -o $@ \
		$(PRIM_SRCS) $(PRIM_ARCH) $(PIPE_ARCH) $(VL_RUNTIME) $$(pkg-config --libs criterion) \
		$(VL_LIBS)
BLOCK_PRIM := $(BUILD)/test/block-prim

$(OBJ)/sim/vl/%.o: sim/vl/%.cpp $(VL_ARCH) Makefile
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -c $< -o $@
endif

# libhcasim.so.0 exports hcasim_* only (sim/libhcasim.map); libibverbs.so.1 the libibverbs ABI
# and hcasimdv_* (driver/libibverbs.map), linked with -z defs: a driver call to anything
# libhcasim does not export is a link error. Tests and tools that use internals link the
# internal image instead: driver and simulator in one libibverbs.so.1 in build/lib/internal/
# that exports everything (the same map without its `local: *`), so that a process holds one
# simulator. They find it through DT_RPATH, which LD_LIBRARY_PATH does not override.
LIBINT     := $(LIB)/internal
LIBINTERNAL := $(LIBINT)/libibverbs.so.1
INTERNAL_LINK := -L$(LIBINT) -libverbs -Wl,--disable-new-dtags -Wl,-rpath,'$$ORIGIN/../lib/internal'

$(LIBHCASIM): $(SIM_OBJS) $(VL_OBJS) $(VL_ARCH) $(VL_RUNTIME) sim/libhcasim.map
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libhcasim.so.0 -Wl,--version-script=sim/libhcasim.map $(LDFLAGS) \
		-o $@ $(SIM_OBJS) $(VL_OBJS) $(VL_ARCH) $(VL_RUNTIME) -linih -lz $(VL_LIBS)
	ln -sf libhcasim.so.0 $(LIB)/libhcasim.so

# The driver carries its own copy of model/hw/'s descriptive tables (names and texts of the
# commands, statuses and attributes: the programming interface, no device state).
DRV_LIB_OBJS := $(DRV_OBJS) $(OBJ)/model/hw/hw_tables.o
$(LIBIBVERBS): $(DRV_LIB_OBJS) $(LIBHCASIM) driver/libibverbs.map
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libibverbs.so.1 -Wl,--version-script=driver/libibverbs.map \
		-Wl,-z,defs $(LDFLAGS) -o $@ $(DRV_LIB_OBJS) -L$(LIB) -lhcasim -Wl,-rpath,'$$ORIGIN'
	ln -sf libibverbs.so.1 $(LIB)/libibverbs.so

$(OBJ)/libibverbs-internal.map: driver/libibverbs.map
	@mkdir -p $(@D)
	sed '/^[[:space:]]*local: \*;/d' $< > $@

$(LIBINTERNAL): $(SIM_OBJS) $(VL_OBJS) $(VL_ARCH) $(VL_RUNTIME) $(DRV_OBJS) $(OBJ)/libibverbs-internal.map
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libibverbs.so.1 -Wl,--version-script=$(OBJ)/libibverbs-internal.map \
		$(LDFLAGS) -o $@ $(DRV_OBJS) $(SIM_OBJS) $(VL_OBJS) $(VL_ARCH) $(VL_RUNTIME) -linih -lz \
		$(VL_LIBS)
	ln -sf libibverbs.so.1 $(LIBINT)/libibverbs.so

# hcasim-run and hcasim-vcdcheck use the public libraries; the tools that use internals
# (gendoc: the tables; pcapcheck: the packet parser; scenario: the text-file reader) the
# internal image.
$(BIN)/hcasim-run: $(OBJ)/sim/apps/run.o $(OBJ)/sim/apps/run_workload.o $(LIBHCASIM) $(LIBIBVERBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(OBJ)/sim/apps/run.o $(OBJ)/sim/apps/run_workload.o -L$(LIB) -libverbs \
		-lhcasim -Wl,-rpath,'$$ORIGIN/../lib'
# hcasim-exec (docs/fabric.md#hcasim-exec) runs a program with libhcasim-exec.so preloaded.
EXEC_LIB_OBJS := $(OBJ)/sim/apps/exec_clock.o $(OBJ)/sim/apps/exec_trap.o $(OBJ)/sim/apps/exec_spawn.o
$(LIBEXEC): $(EXEC_LIB_OBJS) $(LIBHCASIM)
	@mkdir -p $(@D)
	$(CC) -shared $(LDFLAGS) -o $@ $(EXEC_LIB_OBJS) -L$(LIB) -lhcasim -ldl -Wl,-rpath,'$$ORIGIN'
$(BIN)/hcasim-exec: $(OBJ)/sim/apps/exec.o $(LIBHCASIM) $(LIBEXEC)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(OBJ)/sim/apps/exec.o -L$(LIB) -lhcasim -Wl,-rpath,'$$ORIGIN/../lib'
$(BIN)/hcasim-vcdcheck $(BIN)/hcasim-docrun: $(BIN)/hcasim-%: $(OBJ)/sim/apps/%.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $<
$(BIN)/hcasim-gendoc $(BIN)/hcasim-pcapcheck $(BIN)/hcasim-fabric: $(BIN)/hcasim-%: $(OBJ)/sim/apps/%.o $(LIBINTERNAL)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< $(INTERNAL_LINK)
$(BIN)/hcasim-scenario: $(OBJ)/sim/apps/scenario.o $(SCN_OBJS) $(LIBINTERNAL)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(OBJ)/sim/apps/scenario.o $(SCN_OBJS) $(INTERNAL_LINK) -linih

# ---- SystemC top (sim/systemc/, docs/systemc.md): the default simulation in sc_main, the C
# model behind an sc_module and the RTL blocks Verilated with --sc (prefix Vsc_<block>, so that
# they do not clash with the --cc models in libhcasim, whose Verilator runtime they share).
# Built when verilator and SystemC (pkg-config systemc) are both present; else skipped.
SC_BIN    := $(BIN)/hcasim-sc
ifeq ($(HAVE_SC),1)
# wqe_fetch has no SystemC wrapper yet (sim/systemc/sc_blocks.cpp says why): hcasim-sc runs its
# --cc model from the library.
SC_MODELS := $(foreach b,$(filter-out wqe_fetch,$(TWINS)),$(b):$(VL_FLAGS_$(b)))
SC_ARCH   := $(foreach m,$(SC_MODELS),$(VL)/sc_$(word 1,$(subst :, ,$(m)))/Vsc_$(word 1,$(subst :, ,$(m)))__ALL.a)
SC_OBJS   := $(patsubst %.cpp,$(OBJ)/%.o,$(wildcard sim/systemc/*.cpp))
SC_CXXFLAGS = $(CXXFLAGS) $(foreach m,$(TWINS),-isystem $(VL)/sc_$(m)) \
              $(shell pkg-config --cflags systemc)
all: $(SC_BIN)

define sc_model
$(VL)/sc_$(1)/Vsc_$(1)__ALL.a: rtl/$(1).sv $(VL_SRCS_$(1)) rtl/hca_pkg.sv $(RTL_PRIM) Makefile $(VL_STAMP)
	@mkdir -p $(VL)/sc_$(1)
	+$(VERILATOR) --sc --build -j 1 -Wall -O3 --assert -MAKEFLAGS OPT_FAST=-O2 \
		-MAKEFLAGS OPT_GLOBAL=-O2 $(2) --prefix Vsc_$(1) --top-module $(1) --Mdir $(VL)/sc_$(1) \
		rtl/hca_pkg.sv $(RTL_PRIM) $(VL_SRCS_$(1)) rtl/$(1).sv >$(VL)/sc_$(1)/build.log || \
		{ cat $(VL)/sc_$(1)/build.log; exit 1; }
	@touch $$@ # Verilator keeps the archive's date when nothing changed
endef
$(foreach m,$(SC_MODELS),$(eval $(call sc_model,$(word 1,$(subst :, ,$(m))),$(word 2,$(subst :, ,$(m))))))

$(OBJ)/sim/systemc/%.o: sim/systemc/%.cpp $(SC_ARCH) Makefile
	@mkdir -p $(@D)
	$(CXX) $(SC_CXXFLAGS) -c $< -o $@

# The Verilator runtime comes from the internal image (linked into it for the --cc models).
$(SC_BIN): $(SC_OBJS) $(OBJ)/sim/apps/run_workload.o $(SC_ARCH) $(LIBINTERNAL)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $(SC_OBJS) $(OBJ)/sim/apps/run_workload.o $(SC_ARCH) $(INTERNAL_LINK) \
		$$(pkg-config --libs systemc) -pthread -latomic
else
all: sc-skipped
.PHONY: sc-skipped
sc-skipped:
	@echo "make: SystemC top $(SC_BIN) skipped: needs verilator and libsystemc-dev (make deps)"
endif

# The public headers, installed side by side: hcasim.h, the host bus hcasim_bus.h and the
# direct verbs of the driver.
$(BUILD)/include/hcasim.h $(BUILD)/include/hcasim_bus.h: $(BUILD)/include/%: sim/%
	@mkdir -p $(@D)
	cp $< $@

$(BUILD)/include/hcasimdv.h: driver/hcasimdv.h
	@mkdir -p $(@D)
	cp $< $@

$(BUILD)/include/model/hw/%: model/hw/%
	@mkdir -p $(@D)
	cp $< $@

# The suites use internals: the internal image (one simulator per process). They also build
# and run programs against the public libraries, so those are built first.
$(TESTBIN): $(TEST_OBJS) $(LIBINTERNAL) $(LIBHCASIM) $(LIBIBVERBS) $(HEADER)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(TEST_OBJS) $(INTERNAL_LINK) $$(pkg-config --libs criterion) -lz

# Block tests (testbench/blocks/, docs/architecture.md#block-tests): each block's object alone
# with the recording stub neighbours of stubs.c and the sim/ files that need nothing of model/,
# as its own Criterion program build/test/block-<block>. Suite `blocks` of $(TESTBIN) runs each.
BLOCK_TESTS := req resp comp qpc wqe_fetch
BLOCK_BINS  := $(BLOCK_TESTS:%=$(BUILD)/test/block-%)
BLOCK_INFRA := $(addprefix $(OBJ)/,sim/kernel.o sim/trace.o sim/error.o sim/config.o sim/textfile.o \
               model/pkt.o model/crc.o model/fcov.o model/hw/hw_tables.o testbench/blocks/stubs.o)
$(BLOCK_TESTS:%=$(OBJ)/testbench/blocks/test_%.o) $(OBJ)/testbench/blocks/stubs.o: Makefile
$(BUILD)/test/block-%: $(OBJ)/testbench/blocks/test_%.o $(OBJ)/model/%.o $(BLOCK_INFRA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $$(pkg-config --libs criterion) -linih -lz
# the completer's timers are a block of their own (model/timers.c) that it drives
$(BUILD)/test/block-comp: $(OBJ)/model/timers.o
# and the responder its front end (model/resp_fe.c), whose PSN and key stages the stubs answer
$(BUILD)/test/block-resp: $(OBJ)/model/resp_fe.o

$(EXEC_PROBE): $(OBJ)/testbench/exec/probe.o $(LIBHCASIM) $(LIBIBVERBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $< -L$(LIB) -libverbs -lhcasim -pthread -Wl,-rpath,'$$ORIGIN/../lib'

# The benchmarks (testbench/bench/, docs/bench/README.md): not part of `all` or `test`.
$(BENCHBIN): $(BENCH_OBJS) $(LIBHCASIM) $(LIBIBVERBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(BENCH_OBJS) -L$(LIB) -libverbs -lhcasim \
		-Wl,-rpath,'$$ORIGIN/../lib'

# perftest on the simulated hosts (docs/performance.md); built for `make test` (test_perf.c).
$(PERFBIN): $(PERF_OBJS) $(LIBHCASIM) $(LIBIBVERBS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(PERF_OBJS) -L$(LIB) -libverbs -lhcasim -lm \
		-Wl,-rpath,'$$ORIGIN/../lib'

# Run every benchmark (one process per scenario, several runs each) and write the report, then
# the hcasim-perf sweeps: plots in docs/bench/*.png and their section of results.md.
bench: deps all $(BENCHBIN) $(PERFBIN)
	$(BENCHBIN) report docs/bench/results.md
	testbench/bench/sweep.sh $(BUILD) docs/bench docs/bench/results.md

# Run everything the tests need, then every suite. Criterion prints its Synthesis line.
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1
# IMPL=model|rtl|lockstep|checked runs every suite with HCASIM_IMPL=all=$(IMPL) (docs/rtl.md).
IMPL    ?=
ifneq ($(filter-out model rtl lockstep checked,$(IMPL)),)
$(error IMPL=$(IMPL): expected model, rtl, lockstep or checked)
endif
IMPL_ENV := $(if $(IMPL),HCASIM_IMPL=all=$(IMPL))
# T='suite/*' (a Criterion filter) runs a subset; the JUnit XML report goes to JUNIT.
T       ?=
JUNIT   ?= $(BUILD)/test/junit.xml
test: deps all $(PERFBIN) $(TESTBIN) $(BLOCK_BINS) $(BLOCK_PRIM) $(EXEC_PROBE)
	@mkdir -p $(dir $(JUNIT))
	$(ASAN_ENV) $(IMPL_ENV) $(TESTBIN) --jobs $(JOBS) --color=never --xml=$(JUNIT) \
		$(if $(T),--filter '$(T)'); rc=$$?; echo "make test: JUnit report in $(JUNIT)"; \
		exit $$rc

run: deps all
	$(BIN)/hcasim-run $(BUILD)/run

# make coverage (docs/rtl.md#coverage): every suite with HCASIM_IMPL=all=rtl, built with COV=1
# in build-cov (the normal build is untouched), each process writing its Verilator counts and
# functional points under build-cov/coverage/raw (HCASIM_COVERAGE_DIR); then merged by
# testbench/coverage.sh, printed, and written into docs/rtl.md between its coverage markers
# with the suite's result. The report is written even when a test fails (the status says so).
COV_BUILD ?= build-cov
COV_DIR   := $(COV_BUILD)/coverage
coverage: deps
	rm -rf $(COV_DIR)
	@mkdir -p $(COV_DIR)/raw
	$(MAKE) BUILD=$(COV_BUILD) COV=1 all $(COV_BUILD)/test/hcasim-tests
	rc=0; HCASIM_COVERAGE_DIR=$(abspath $(COV_DIR)/raw) $(MAKE) BUILD=$(COV_BUILD) COV=1 \
		IMPL=rtl JUNIT=$(COV_DIR)/junit.xml test || rc=$$?; \
	sh testbench/coverage.sh $(COV_DIR)/raw $(COV_DIR) && \
	sh testbench/coverage.sh --splice docs/rtl.md $(COV_DIR)/report.md \
		"$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD -- . || echo ' + changes')" \
		"$$(grep -o 'tests="[0-9]*" failures="[0-9]*" errors="[0-9]*"' $(COV_DIR)/junit.xml | head -1)" && \
	exit $$rc

# Run T (default: hcasim-run; a scenario .ini; or a Criterion filter) with WAVES=1 into
# build/waves/, check the dumps and print the gtkwave commands that open them.
waves: deps all $(TESTBIN)
	@sh waves/make-waves.sh "$(T)"

# Rewrite testbench/golden/ (suite golden): the trace and captures of hcasim-run and of every
# shipped scenario, written by the suite's own runs (HCASIM_GOLDEN_UPDATE). After an intended
# change only; the commit says why.
golden: all $(TESTBIN)
	HCASIM_GOLDEN_UPDATE=1 $(TESTBIN) --jobs 1 --color=never --filter 'golden/*'

# The generated pages, then every marked region of README.md and docs/ from its run
# (hcasim-docrun and its recipes sim/apps/docruns.sh; docs/writing-docs.md). The runs need
# the whole build, the test binary (hcasim-tests --list), hcasim-perf and exec-probe.
docs: all $(TESTBIN) $(PERFBIN) $(EXEC_PROBE)
	$(BIN)/hcasim-gendoc regmap > docs/regmap.md
	$(BIN)/hcasim-gendoc config > docs/config-keys.md
	$(BIN)/hcasim-gendoc sv > rtl/hca_pkg.sv
	$(BIN)/hcasim-gendoc twins > docs/twins.md
	$(BIN)/hcasim-gendoc trace > docs/trace-events.md
	@mkdir -p waves/filters
	for f in $$($(BIN)/hcasim-gendoc filters); do \
		$(BIN)/hcasim-gendoc filter $$f > waves/filters/$$f.txt || exit 1; done
	$(BIN)/hcasim-docrun

deps:
	@missing=""; for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || \
			missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
		echo "make deps: installing$$missing"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	else \
		echo "make deps: missing packages:$$missing"; \
		echo "  run: sudo apt-get install -y$$missing"; exit 1; \
	fi

# ---- fuzzing (docs/security.md): libFuzzer targets (testbench/fuzz/fuzz_<target>.c), built
# with clang, ASan and UBSan into build/fuzz, run from the seeds of testbench/fuzz/corpus/.
# make fuzz [FUZZ_SECONDS=60] [FUZZ_RUNS=N] [FUZZ_TARGETS='frame mmio ...']
FUZZ_TARGETS ?= frame mmio cmd wqe config scenario trace
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?=
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(BIN)/fuzz-%)
FUZZ_COMMON  := $(OBJ)/testbench/fuzz/common.o
$(BIN)/fuzz-scenario: FUZZ_EXTRA = $(SCN_OBJS) -linih
$(BIN)/fuzz-scenario: $(SCN_OBJS)
$(BIN)/fuzz-%: $(OBJ)/testbench/fuzz/fuzz_%.o $(FUZZ_COMMON) $(LIBINTERNAL)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_COMMON) $(FUZZ_EXTRA) $(INTERNAL_LINK)
fuzz-bins: $(FUZZ_BINS)
fuzz: deps
	$(MAKE) BUILD=build/fuzz CC=clang VERILATOR= SYSTEMC= SAN=1 FUZZ=1 fuzz-bins
	sh testbench/fuzz/run.sh build/fuzz '$(FUZZ_TARGETS)' $(FUZZ_SECONDS) '$(FUZZ_RUNS)'

clean:
	rm -rf $(BUILD)

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
