#!/bin/bash
# One speed step measured side by side with the commit before it (issue 16, step 5): the two
# builds run alternately in one go, so that the machine's load weighs on both, and the figure
# is a ratio of medians, not an absolute.
#   testbench/bench/sidebyside.sh REF [RUNS] [SCENARIO...]
# Builds commit REF (git archive, pure C: VERILATOR= SYSTEMC=) in a scratch directory and this
# tree the same way in build/sbs (build itself is left as it is), then runs `hcasim-bench run S`
# of each (pkts4k and msgs64 unless named) RUNS times (15) alternately, REF first. Prints per
# scenario the medians of the scenario's .per_wall_s figure and the ratio this tree / REF
# (> 1: faster), and, with perf(1), the medians of the CPU time of each process (task-clock,
# which the other sessions' load disturbs less than wall time) and their ratio REF / this tree.
set -euo pipefail

ref=${1:?usage: sidebyside.sh REF [RUNS] [SCENARIO...]}
runs=${2:-15}
shift $(($# > 1 ? 2 : 1))
scen=("$@")
[ ${#scen[@]} -gt 0 ] || scen=(pkts4k msgs64)
src=$(git rev-parse --show-toplevel)
sha=$(git -C "$src" rev-parse --short "$ref")
work=${TMPDIR:-/tmp}/hcasim-sidebyside-$sha
pc=""
command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1 && pc=1

if [ ! -x "$work/build/bin/hcasim-bench" ]; then
	rm -rf "$work"
	mkdir -p "$work"
	git -C "$src" archive "$sha" | tar -x -C "$work"
	make -C "$work" -j2 VERILATOR= SYSTEMC= build/bin/hcasim-bench >/dev/null
fi
make -C "$src" -j2 BUILD=build/sbs VERILATOR= SYSTEMC= build/sbs/bin/hcasim-bench >/dev/null

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# One run: "FIGURE [CPU_MS]".
one() {
	local out fig ms=""
	if [ -n "$pc" ]; then
		out=$(perf stat -x, -e task-clock "$1" run "$2" 2>&1)
		ms=$(awk -F, '/task-clock/ { print $1 }' <<<"$out")
	else
		out=$("$1" run "$2")
	fi
	fig=$(awk -v k="$2.per_wall_s" '$1 == "FIG" && $2 == k { print $3 }' <<<"$out")
	[ -n "$fig" ] || { echo "sidebyside: no $2.per_wall_s from $1" >&2; exit 1; }
	echo "$fig $ms"
}

echo "sidebyside: $sha against this tree ($(git -C "$src" rev-parse --short HEAD)$(
	git -C "$src" diff --quiet HEAD || echo ', with changes')), $runs runs each"
for s in "${scen[@]}"; do
	a=() b=()
	for ((i = 0; i < runs; i++)); do
		a+=("$(one "$work/build/bin/hcasim-bench" "$s")")
		b+=("$(one "$src/build/sbs/bin/hcasim-bench" "$s")")
	done
	fa=$(printf '%s\n' "${a[@]}" | cut -d' ' -f1 | median)
	fb=$(printf '%s\n' "${b[@]}" | cut -d' ' -f1 | median)
	line=$(awk -v a="$fa" -v b="$fb" -v s="$s" \
		'BEGIN { printf "%-8s per wall s %.4g -> %.4g (%.3fx)", s, a, b, b / a }')
	if [ -n "$pc" ]; then
		ca=$(printf '%s\n' "${a[@]}" | cut -d' ' -f2 | median)
		cb=$(printf '%s\n' "${b[@]}" | cut -d' ' -f2 | median)
		line+=$(awk -v a="$ca" -v b="$cb" \
			'BEGIN { printf "; CPU %.2f -> %.2f ms (%.3fx)", a, b, a / b }')
	fi
	echo "$line"
done
