#!/bin/bash
# The hcasim-perf sweeps of `make bench` and their gnuplot plots (docs/performance.md).
#   testbench/bench/sweep.sh BUILD_DIR PLOT_DIR [RESULTS_MD]
# Runs build/bin/hcasim-perf, one process per point, writes the data under BUILD_DIR/bench/,
# the plots as PLOT_DIR/*.png, and appends a "Plots" section to RESULTS_MD if given. Bandwidth,
# latency and message rate are simulated time; the simulator-speed plot is wall clock.
set -euo pipefail

build=${1:?build dir}
plots=${2:?plot dir}
md=${3:-}
perf="$build/bin/hcasim-perf"
data="$build/bench"
mkdir -p "$data" "$plots"

# A field of the first JSON row of hcasim-perf --json (rows are one line each).
field() { sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p" | head -1; }
clamp() { local v=$1; ((v < $2)) && v=$2; ((v > $3)) && v=$3; echo "$v"; }
sizes() { local s; for ((s = 2; s <= 8388608; s *= 2)); do echo "$s"; done; }
# targets.md: goodput limit of an RDMA WRITE of m bytes, path MTU p, per-packet overhead h.
limit() { awk -v r="$1" -v m="$2" -v p="$3" -v h="$4" \
	'BEGIN { n = int((m + p - 1) / p); printf "%.6f", r * m / (m + n * h + 16) }'; }

t0=$(date +%s)
# 1. WRITE bandwidth against the wire limit: IB and RoCEv2, MTU 1024 and 4096. perftest's
# flags; the iterations shrink with the size so that each point moves about 16 MiB.
for link in ib roce; do
	h=26; [ "$link" = roce ] && h=82
	for mtu in 1024 4096; do
		f="$data/bw_${link}_${mtu}.dat"
		echo "# bytes iterations bw_avg_gbps bw_peak_gbps wire_limit_gbps msg_rate_mpps" >"$f"
		for s in $(sizes); do
			n=$(clamp $((16777216 / s)) 5 5000)
			out=$("$perf" write_bw -s "$s" -n "$n" -m "$mtu" --link "$link" -R --json)
			rate=$(field link_gbps <<<"$out")
			echo "$s $n $(field bw_average <<<"$out") $(field bw_peak <<<"$out")" \
			     "$(limit "$rate" "$s" "$mtu" "$h") $(field msg_rate_mpps <<<"$out")" >>"$f"
		done
	done
done
t1=$(date +%s)

# 2. Latency against size (typical = median; half round trip for send and write).
for t in send_lat write_lat read_lat; do
	f="$data/lat_$t.dat"
	echo "# bytes iterations t_typical_us t_min_us t_p99_us" >"$f"
	for s in $(sizes); do
		n=$(clamp $((4194304 / s)) 5 1000)
		out=$("$perf" "$t" -s "$s" -n "$n" --json)
		echo "$s $n $(field t_typical_us <<<"$out") $(field t_min_us <<<"$out")" \
		     "$(field t_p99_us <<<"$out")" >>"$f"
	done
done
atomic=$("$perf" atomic_lat --json | field t_typical_us)
echo "# bytes t_typical_us" >"$data/lat_atomic_lat.dat"
echo "8 $atomic" >"$data/lat_atomic_lat.dat"
t2=$(date +%s)

# 3. and 4. 64 B WRITE message rate (simulated) and simulator speed (wall clock) against the
# number of QPs; about 32 K messages per point (perftest's -n is per QP, 5 at least).
for link in ib roce; do
	f="$data/qps_$link.dat"
	echo "# qps iterations msg_rate_mpps wall_s tx_pkts sim_ps" >"$f"
	for ((q = 1; q <= 16384; q *= 4)); do
		n=$(clamp $((32768 / q)) 5 5000)
		out=$("$perf" write_bw -s 64 -q "$q" -n "$n" --link "$link" --json)
		echo "$q $n $(field msg_rate_mpps <<<"$out") $(field wall_s <<<"$out")" \
		     "$(field tx_pkts <<<"$out") $(field sim_ps <<<"$out")" >>"$f"
	done
done
f="$data/qps_ib_4k.dat"
echo "# qps iterations msg_rate_mpps wall_s tx_pkts sim_ps" >"$f"
for ((q = 1; q <= 4096; q *= 4)); do
	n=$(clamp $((8192 / q)) 5 5000)
	out=$("$perf" write_bw -s 4096 -q "$q" -n "$n" --json)
	echo "$q $n $(field msg_rate_mpps <<<"$out") $(field wall_s <<<"$out")" \
	     "$(field tx_pkts <<<"$out") $(field sim_ps <<<"$out")" >>"$f"
done
t3=$(date +%s)

gnuplot <<EOF
set terminal pngcairo size 900,560 font ",10"
set grid
set key left top
set logscale x 2
set format x "2^{%L}"
set xlabel "message size (bytes)"

set output "$plots/bw_ib.png"
set title "RC RDMA WRITE bandwidth, InfiniBand (hcasim-perf write_bw, simulated time)" noenhanced
set ylabel "Gb/s"
plot "$data/bw_ib_4096.dat" u 1:3 w lp pt 7 ps 0.6 t "measured, MTU 4096", \
     "$data/bw_ib_4096.dat" u 1:5 w l dt 2 lw 2 t "wire limit, MTU 4096", \
     "$data/bw_ib_1024.dat" u 1:3 w lp pt 5 ps 0.6 t "measured, MTU 1024", \
     "$data/bw_ib_1024.dat" u 1:5 w l dt 3 lw 2 t "wire limit, MTU 1024"

set output "$plots/bw_roce.png"
set title "RC RDMA WRITE bandwidth, RoCEv2 (hcasim-perf write_bw --link roce, simulated time)" noenhanced
plot "$data/bw_roce_4096.dat" u 1:3 w lp pt 7 ps 0.6 t "measured, MTU 4096", \
     "$data/bw_roce_4096.dat" u 1:5 w l dt 2 lw 2 t "wire limit, MTU 4096", \
     "$data/bw_roce_1024.dat" u 1:3 w lp pt 5 ps 0.6 t "measured, MTU 1024", \
     "$data/bw_roce_1024.dat" u 1:5 w l dt 3 lw 2 t "wire limit, MTU 1024"

set output "$plots/lat_size.png"
set title "Latency against size, IB, MTU 4096 (t_typical; send/write: half round trip; read, atomic: full)" noenhanced
set ylabel "microseconds (simulated)"
set logscale y 10
plot "$data/lat_send_lat.dat" u 1:3 w lp pt 7 ps 0.6 t "send_lat" noenhanced, \
     "$data/lat_write_lat.dat" u 1:3 w lp pt 5 ps 0.6 t "write_lat" noenhanced, \
     "$data/lat_read_lat.dat" u 1:3 w lp pt 9 ps 0.6 t "read_lat" noenhanced, \
     "$data/lat_atomic_lat.dat" u 1:2 w p pt 11 ps 1.5 t "atomic_lat (8 B)" noenhanced

set xlabel "QPs (hcasim-perf -q)"
set format x "%g"
set logscale x 4
set output "$plots/msgrate_qps.png"
set title "64 B RDMA WRITE message rate against QPs (write_bw -s 64, simulated time)" noenhanced
set ylabel "million messages per second"
unset logscale y
set yrange [0:*]
plot "$data/qps_ib.dat" u 1:3 w lp pt 7 t "InfiniBand", \
     "$data/qps_roce.dat" u 1:3 w lp pt 5 t "RoCEv2"

set output "$plots/simspeed_qps.png"
set title "Simulator speed against QPs (wall clock, this machine)"
set ylabel "simulated request packets per wall second"
set logscale y 10
set yrange [*:*]
plot "$data/qps_ib.dat" u 1:(\$5/\$4) w lp pt 7 t "64 B WRITEs (1 packet each), IB", \
     "$data/qps_roce.dat" u 1:(\$5/\$4) w lp pt 5 t "64 B WRITEs, RoCEv2", \
     "$data/qps_ib_4k.dat" u 1:(\$5/\$4) w lp pt 9 t "4 KiB WRITEs (1 packet each), IB"
EOF
t4=$(date +%s)
echo "sweep: bandwidth $((t1 - t0)) s, latency $((t2 - t1)) s, QPs $((t3 - t2)) s, plots $((t4 - t3)) s" >&2

[ -n "$md" ] || exit 0
# The figures next to their limit at 64 KiB, and where each plot's points come from.
row64k() { awk '$1 == 65536 { printf "%.3f Gb/s against the wire limit %.3f (%.3f %%)", $3, $5, 100 * $3 / $5 }' "$1"; }
q() { awk -v q="$2" '$1 == q { printf "%.3f", $3 }' "$1"; }
spd() { awk -v q="$2" '$1 == q { printf "%.0f", $5 / $4 }' "$1"; }
{
	echo
	echo "## Plots (hcasim-perf sweeps)"
	echo
	echo "Made by \`testbench/bench/sweep.sh\` (run by \`make bench\`) with [gnuplot](http://www.gnuplot.info/)"
	echo "from \`build/bin/hcasim-perf ... --json\`, one process per point; the data files are in"
	echo "\`build/bench/\`. Bandwidth, latency and message rate are simulated time, the simulator speed is"
	echo "wall clock on this machine. How to read and reproduce them: [../performance.md](../performance.md)."
	echo
	echo "| plot | what | command of one point |"
	echo "|---|---|---|"
	echo "| [bw_ib.png](bw_ib.png) | RC WRITE bandwidth (average) against size, 2 B to 8 MiB, IB, MTU 1024 and 4096, with the wire limit of targets.md. 64 KiB, MTU 4096: $(row64k "$data/bw_ib_4096.dat"); MTU 1024: $(row64k "$data/bw_ib_1024.dat") | \`hcasim-perf write_bw -s 65536 -n 256 -m 4096 -R\` |"
	echo "| [bw_roce.png](bw_roce.png) | the same on RoCEv2. 64 KiB, MTU 4096: $(row64k "$data/bw_roce_4096.dat"); MTU 1024: $(row64k "$data/bw_roce_1024.dat") | \`hcasim-perf write_bw -s 65536 -n 256 -m 1024 --link roce -R\` |"
	echo "| [lat_size.png](lat_size.png) | t_typical of send_lat, write_lat, read_lat against size (2 B: $(awk '$1 == 2 { printf "%s", $3 }' "$data/lat_send_lat.dat"), $(awk '$1 == 2 { printf "%s", $3 }' "$data/lat_write_lat.dat"), $(awk '$1 == 2 { printf "%s", $3 }' "$data/lat_read_lat.dat") us), atomic_lat at 8 B ($atomic us) | \`hcasim-perf send_lat -s 2 -n 1000\` |"
	echo "| [msgrate_qps.png](msgrate_qps.png) | 64 B WRITE message rate against QPs, 1 to 16 384: IB $(q "$data/qps_ib.dat" 1) M/s with 1 QP, $(q "$data/qps_ib.dat" 16) with 16, $(q "$data/qps_ib.dat" 16384) with 16 384 (QP context cache: 256 entries) | \`hcasim-perf write_bw -s 64 -q 16 -n 2048\` |"
	echo "| [simspeed_qps.png](simspeed_qps.png) | simulated packets per wall second against QPs: 64 B WRITEs $(spd "$data/qps_ib.dat" 1) /s with 1 QP, $(spd "$data/qps_ib.dat" 16384) /s with 16 384; 4 KiB WRITEs $(spd "$data/qps_ib_4k.dat" 1) /s with 1 QP (includes the busy-polling program) | \`hcasim-perf write_bw -s 64 -q 16384 -n 5 --json\` (wall_s, tx_pkts) |"
	echo
	echo "Sweep time: bandwidth $((t1 - t0)) s, latency $((t2 - t1)) s, QPs $((t3 - t2)) s."
} >>"$md"
