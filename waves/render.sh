#!/bin/sh
# waves/render.sh DUMP LAYOUT PNG [TIME_PS]: open LAYOUT on DUMP in gtkwave on a virtual display
# (xvfb-run), from the clone root (the layouts name their translate filters, waves/filters/,
# from there), zoom to the whole run, put the marker at TIME_PS if given (the Signals pane then
# shows each value at that time, by name for the coded signals) and grab the window to PNG.
# docs/waves-qp-lifecycle.png was made with:
#   make waves T=sim/scenarios/timeout_exhaustion.ini
#   sh waves/render.sh build/waves/model.vcd waves/qp_lifecycle.gtkw docs/waves-qp-lifecycle.png 5000000000
set -eu
[ $# -eq 3 ] || [ $# -eq 4 ] || { echo "usage: waves/render.sh DUMP LAYOUT PNG [TIME_PS]" >&2; exit 2; }
for f in "$1" "$2"; do [ -f "$f" ] || { echo "waves/render.sh: no file $f" >&2; exit 1; }; done
command -v xvfb-run >/dev/null && command -v gtkwave >/dev/null ||
	{ echo "waves/render.sh: needs xvfb-run and gtkwave (make deps)" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
abs() { (cd "$(dirname "$1")" && printf '%s/%s' "$(pwd)" "$(basename "$1")"); }
dump=$(abs "$1")
layout=$(abs "$2")
png=$(abs "$3")
tcl=$(mktemp /tmp/hcasim-render-XXXXXX.tcl)
trap 'rm -f "$tcl"' EXIT
{
	echo "gtkwave::/Time/Zoom/Zoom_Full"
	[ $# -eq 4 ] && echo "gtkwave::setMarker $4"
	echo "gtkwave::/File/Grab_To_File $png"
	echo "gtkwave::/File/Quit"
} > "$tcl"
rm -f "$png"
(cd "$root" && timeout 60 xvfb-run -a -s "-screen 0 1500x1500x24" gtkwave -S "$tcl" "$dump" "$layout") \
	>/dev/null 2>&1 || true
[ -s "$png" ] || { echo "waves/render.sh: gtkwave wrote no $png" >&2; exit 1; }
echo "$png"
