/* Block tests (docs/architecture.md#block-tests): each model block driven alone through its
 * header with recording stub neighbours, built as its own Criterion program
 * build/test/block-<block> from testbench/blocks/. This suite runs each one and fails with its
 * output when it fails, or when it ran no test; block-prim (testbench/blocks/test_prim.cpp) is
 * the RTL primitives' and checkers' block test, with sched's and mkey's pin-level tests
 * (test_sched_pins.cpp, test_mkey_pins.cpp). */
#include "testbench/tb.h"
#include "model/twin.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run_block(const char *block)
{
	char cmd[1024];
	unsigned tested = 0, failing = 1, crashing = 1;
	const char *syn;
	char *out;
	int st;

	/* BXFI_MAP would make the program take itself for one of this runner's sandboxed
	 * workers (Criterion's boxfort) */
	snprintf(cmd, sizeof(cmd), "unset BXFI_MAP; %s/test/block-%s --jobs 1 --color=never 2>&1",
		 HCASIM_BUILD_DIR, block);
	out = tb_run_cmd(cmd, &st);
	syn = strstr(out, "Synthesis: Tested: ");
	cr_assert_not_null(syn, "block-%s printed no Synthesis line:\n%s", block, out);
	sscanf(syn, "Synthesis: Tested: %u | Passing: %*u | Failing: %u | Crashing: %u", &tested,
	       &failing, &crashing);
	cr_assert(st == 0 && tested > 0 && failing == 0 && crashing == 0,
		  "block-%s (exit status %d):\n%s", block, st, out);
	free(out);
}

Test(blocks, req) { run_block("req"); }
Test(blocks, resp) { run_block("resp"); }
Test(blocks, comp) { run_block("comp"); }
Test(blocks, qpc) { run_block("qpc"); }
Test(blocks, wqe_fetch) { run_block("wqe_fetch"); }

/* The RTL primitives and checkers (rtl/prim/), Verilated alone: built only with Verilator. */
Test(blocks, prim)
{
	if (!hm_twin_rtl(0))
		cr_skip_test("this build has no RTL (no Verilator)");
	run_block("prim");
}
