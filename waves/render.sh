#!/bin/sh
# waves/render.sh DUMP LAYOUT PNG: open LAYOUT on DUMP in gtkwave on a virtual display
# (xvfb-run), zoom to the whole run and grab the window to PNG (toolchain-facts.md §4).
# docs/waves-qp-lifecycle.png was made with:
#   make waves T=sim/scenarios/timeout_exhaustion.ini
#   sh waves/render.sh build/waves/model.vcd waves/qp_lifecycle.gtkw docs/waves-qp-lifecycle.png
set -eu
[ $# -eq 3 ] || { echo "usage: waves/render.sh DUMP LAYOUT PNG" >&2; exit 2; }
for f in "$1" "$2"; do [ -f "$f" ] || { echo "waves/render.sh: no file $f" >&2; exit 1; }; done
command -v xvfb-run >/dev/null && command -v gtkwave >/dev/null ||
	{ echo "waves/render.sh: needs xvfb-run and gtkwave (make deps)" >&2; exit 1; }
png=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
tcl=$(mktemp /tmp/hcasim-render-XXXXXX.tcl)
trap 'rm -f "$tcl"' EXIT
printf 'gtkwave::/Time/Zoom/Zoom_Full\ngtkwave::/File/Grab_To_File %s\ngtkwave::/File/Quit\n' \
	"$png" > "$tcl"
rm -f "$png"
timeout 60 xvfb-run -a -s "-screen 0 1500x1500x24" gtkwave -S "$tcl" "$1" "$2" >/dev/null 2>&1 || true
[ -s "$png" ] || { echo "waves/render.sh: gtkwave wrote no $png" >&2; exit 1; }
echo "$png"
