#!/bin/sh
# Run each fuzz target (make fuzz; docs/security.md): BUILD TARGETS SECONDS [RUNS]. Each target
# starts from its committed seeds (testbench/fuzz/corpus/<target>/) and keeps what it finds in
# BUILD/corpus/<target>/; it runs SECONDS, or RUNS inputs if given. A crash, a sanitizer report,
# a halted simulation or a broken bystander stops the target, leaves the input in
# BUILD/crashes/ and fails the run. One line per target: inputs run, coverage, corpus size.
# Leaks are not checked per input: the simulator keeps its state between inputs by design
# (LeakSanitizer runs in the test suites instead); ASan's quarantine is kept at 64 MiB so a
# long run's memory stays flat. cmd's grows by about 1.6 KiB an input all the same (the objects
# of hcasim2's driver that an input left undestroyable stay with it at each reboot), hence
# a 4 GiB RSS limit rather than libFuzzer's 2 GiB.
set -u
b=${1:?usage: run.sh BUILD TARGETS SECONDS [RUNS]}
targets=${2:?}
secs=${3:?}
runs=${4:-}
bad=0
total=0
mkdir -p "$b/crashes"
for t in $targets; do
	mkdir -p "$b/corpus/$t"
	log="$b/fuzz-$t.log"
	limit="-max_total_time=$secs"
	[ -n "$runs" ] && limit="-runs=$runs"
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:quarantine_size_mb=64 UBSAN_OPTIONS=print_stacktrace=1 \
		"$b/bin/fuzz-$t" $limit -print_final_stats=1 -print_coverage=1 -close_fd_mask=1 -max_len=4096 -rss_limit_mb=4096 \
		-artifact_prefix="$b/crashes/$t-" "$b/corpus/$t" "testbench/fuzz/corpus/$t" \
		>"$log" 2>&1
	rc=$?
	n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	corp=$(ls "$b/corpus/$t" | wc -l)
	total=$((total + ${n:-0}))
	if [ $rc -ne 0 ]; then
		echo "fuzz: $t FAILED (exit $rc) after ${n:-?} inputs; see $log and $b/crashes/"
		grep -m5 -e '^==[0-9]*==ERROR' -e '^fuzz: ' -e 'runtime error' "$log"
		bad=1
	else
		echo "fuzz: $t: ${n:-?} inputs, ${cov:-?} coverage edges, corpus $corp"
	fi
done
echo "fuzz: $total inputs in all"
exit $bad
