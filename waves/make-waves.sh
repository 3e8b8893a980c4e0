#!/bin/sh
# make waves [T=...]: run something with WAVES=1, check the dumps, print the gtkwave commands.
#   T empty             the default simulation (build/bin/hcasim-run)  -> build/waves/
#   T=path/to/x.ini     that scenario (build/bin/hcasim-scenario)       -> build/waves/
#   T=<filter>          every Criterion test matching it ("suite/test", globs as in --filter),
#                       one run each                                    -> build/waves/<suite>.<test>/
# Each directory gets model.vcd (model.<n>.vcd for a process's n-th boot) and, from blocks run
# in rtl or lockstep mode, the RTL's hca<dev>.<block>.fst. The commands open the layouts from
# the clone root, since gtkwave takes their translate filters (waves/filters/) from the current
# directory. docs/waves.md.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
T=${1:-}
WAVES_ROOT=$BUILD/waves
BIN=$BUILD/bin
fail() { echo "make waves: $*" >&2; exit 1; }

mkdir -p "$WAVES_ROOT" || fail "cannot create $WAVES_ROOT"
dirs=""
failed=""

run_in() { # dir, command...: run with WAVES=1 into dir (emptied of old dumps first)
	d=$1; shift
	mkdir -p "$d" && rm -f "$d"/model*.vcd "$d"/hca*.fst || fail "cannot prepare $d"
	echo "make waves: WAVES=1 HCASIM_WAVES_DIR=$d $*"
	if ! WAVES=1 HCASIM_WAVES_DIR="$d" "$@" > "$d/run.log" 2>&1; then
		# A failing run is what one most wants to look at: its dumps are still shown.
		tail -20 "$d/run.log" >&2
		echo "make waves: the run failed (its output: $d/run.log)" >&2
		failed="$failed $d"
	fi
	dirs="$dirs $d"
}

case "$T" in
"")
	[ -x "$BIN/hcasim-run" ] || fail "no $BIN/hcasim-run: run make first"
	run_in "$WAVES_ROOT" "$BIN/hcasim-run" "$WAVES_ROOT/hcasim-run"
	;;
*.ini)
	[ -f "$T" ] || fail "T=$T: no such scenario file"
	run_in "$WAVES_ROOT" "$BIN/hcasim-scenario" "$T"
	;;
*)
	TESTS=$BUILD/test/hcasim-tests
	[ -x "$TESTS" ] || fail "no $TESTS: run make $TESTS first"
	# --list ignores --filter: list everything and match "suite/test" against T here.
	matched=$("$TESTS" --list 2>&1 | awk '
		/^[^ ].*: [0-9]+ tests?$/ { sub(/: [0-9]+ tests?$/, ""); suite = $0; next }
		{ sub(/^[^a-zA-Z0-9_]*/, ""); if ($0 != "") print suite "/" $0 }')
	n=0
	for t in $matched; do
		# shellcheck disable=SC2254
		case "$t" in
		$T)
			n=$((n + 1))
			run_in "$WAVES_ROOT/$(echo "$t" | tr / .)" "$TESTS" --filter "$t" --jobs 1 \
				--color=never
			;;
		esac
	done
	[ "$n" -gt 0 ] || fail "T=$T: no test matches (suite/test, e.g. T='scenario/lost_ack*')"
	;;
esac

echo
for d in $dirs; do
	found=0
	for v in "$d"/model*.vcd; do
		[ -f "$v" ] || continue
		found=1
		"$BIN/hcasim-vcdcheck" "$v" || fail "$v is not a valid VCD"
	done
	if [ $found = 0 ]; then
		echo "make waves: $d: no dump (the run never booted the simulator)"
		continue
	fi
	v=$d/model.vcd
	[ -f "$v" ] || v=$(ls "$d"/model*.vcd | head -1)
	echo "QP lifecycle (QP 0x2 and CQ 1 of each host):"
	echo "  cd $ROOT && gtkwave $v waves/qp_lifecycle.gtkw"
	echo "The model's transactions of the blocks with an RTL twin:"
	# every block's layout (waves/<block>.gtkw, one per block of model/twin.def)
	for l in "$ROOT"/waves/*.gtkw; do
		b=$(basename "$l" .gtkw)
		[ "$b" = qp_lifecycle ] || echo "  cd $ROOT && gtkwave $v waves/$b.gtkw"
	done
	echo "The RTL blocks' pins:"
	rtl=0
	for f in "$d"/hca*.fst; do
		[ -f "$f" ] || continue
		rtl=1
		b=$(basename "$f" .fst); b=${b#*.}
		[ -f "$ROOT/waves/$b.gtkw" ] && echo "  cd $ROOT && gtkwave $f waves/$b.gtkw" ||
			echo "  gtkwave $f    (no waves/$b.gtkw layout)"
	done
	[ $rtl = 1 ] || echo "  (no RTL dumps: no block ran in rtl or lockstep mode; HCASIM_IMPL=all=lockstep)"
	echo
done
[ -z "$failed" ] || fail "these runs failed (their dumps are above):$failed"
