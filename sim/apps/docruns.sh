#!/bin/sh
# The recipes of the quoted runs in README.md and docs/ (docs/writing-docs.md). hcasim-docrun
# runs `sh sim/apps/docruns.sh NAME ARG...` for a region marked <!-- run: NAME ARG... -->, in a
# scratch directory ($HCASIM_DOC_WORK) shared by every region of one invocation, and writes
# what it prints into the region (make docs) or compares (suite docs). A recipe prints the
# output of a real run, or a figure taken from one; it never prints a number of its own. The
# runs are cached in the scratch directory, so a program quoted in ten regions runs once.
# Exit status 77: this build cannot make the run (hcasim-sc without SystemC); the region is
# left as it is and reported as skipped.
set -eu
S=$HCASIM_DOC_SRC
B=$HCASIM_DOC_BUILD
W=$HCASIM_DOC_WORK

# The docs quote the defaults: nothing in the caller's environment changes a run (make test
# IMPL=rtl, a trace or a capture left on in the shell).
unset HCASIM_CONFIG HCASIM_TRACE HCASIM_TRACE_FILE HCASIM_PCAP HCASIM_IMPL HCASIM_VERBOSE \
	HCASIM_WAVES_DIR WAVES WAVES_DIR HCASIM_COUNTERS_DIR HCASIM_RTL_BUG HCASIM_GOLDEN_UPDATE \
	VERBS_LOG_LEVEL VERBS_LOG_FILE SYSFS_PATH
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
# A sanitized build (make test SAN=1): programs compiled here are sanitized too, and Debian's
# binaries preload the ASan runtime, as the test suites do. Leaks are the suites' business: the
# guide's short programs end without freeing everything, and hcasim-run's exit on a lost
# completion leaks; LeakSanitizer would fail them and exit before stdio is flushed.
SANCC=""
SANENV=""
if grep -q fsanitize "$B/.flags" 2>/dev/null; then
	SANCC="-fsanitize=address,undefined"
	SANENV="LD_PRELOAD=$(gcc -print-file-name=libasan.so)"
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
fi
# clean CMD...: CMD in an environment of PATH (and ASAN_OPTIONS) only. Inside a Criterion test
# (suite docs) the variables of Criterion's runner would make hcasim-tests act as a worker.
clean() { env -i PATH="$PATH" ${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"} "$@"; }

die() {
	echo "docruns: $*" >&2
	exit 1
}

# once NAME CMD...: CMD's stdout (its stderr in $W/NAME.err, its exit status in $W/NAME.rc),
# run in $W the first time only. A status other than 0 fails unless NAME.ok-status says it.
once() {
	_on=$1
	shift
	if [ ! -f "$W/$_on.out" ]; then
		_orc=0
		(cd "$W" && "$@") >"$W/$_on.tmp" 2>"$W/$_on.err" || _orc=$?
		echo $_orc >"$W/$_on.rc"
		mv "$W/$_on.tmp" "$W/$_on.out"
	fi
	cat "$W/$_on.out"
}

# status NAME: the exit status of the run NAME (after once).
status() { cat "$W/$1.rc"; }

# ok NAME [STATUS]: fail (with its stderr) unless the run NAME exited with STATUS (0).
ok() {
	[ "$(status "$1")" = "${2:-0}" ] || {
		cat "$W/$1.err" >&2
		die "$1 exited with status $(status "$1"), expected ${2:-0}"
	}
}

# docprog DOC MATCH NAME: compile the ```c block of DOC whose first line contains MATCH into
# $W/NAME, with the build line the docs give (plus -I SRC for hcasimdv.h).
docprog() {
	[ -x "$W/$3" ] && return 0
	awk -v m="$2" '
		/^```c$/ { inb = 1; first = 1; next }
		inb && /^```$/ { inb = 0; if (hit) exit; next }
		inb && first { first = 0; hit = index($0, m) > 0 }
		inb && hit { print }' "$S/$1" >"$W/$3.c"
	[ -s "$W/$3.c" ] || die "$1: no \`\`\`c block starting with '$2'"
	# shellcheck disable=SC2086
	gcc -Wall -o "$W/$3" "$W/$3.c" -I "$B/include" -I "$S" -L "$B/lib" -libverbs -lhcasim \
		-Wl,-rpath,"$B/lib" $SANCC >&2 || die "$1: '$2' does not compile"
}

# pick [-e] [-a] [-w W] RE...: the first line of stdin that matches RE1, then the first after
# it that matches RE2, and so on (awk EREs, \t for a tab). Skipped lines become one "..."
# indented as the less indented of the lines around them; -e adds a "..." when lines follow
# the last one. -a prints every line instead (the REs only place the notes). "RE # note"
# writes "# note" after the line, padded to W columns (72).
pick() {
	tail_dots=0 all=0 width=72
	while :; do
		case $1 in
		-e) tail_dots=1 ;;
		-a) all=1 ;;
		-w) width=$2; shift ;;
		*) break ;;
		esac
		shift
	done
	res=""
	for r in "$@"; do res="$res$r
"; done
	RES=$res awk -v tail_dots=$tail_dots -v all=$all -v width="$width" '
		BEGIN { n = split(ENVIRON["RES"], re, "\n") - 1; k = 1; last = 0 }
		{ line = $0; hit = 0 }
		k <= n {
			r = re[k]; note = ""
			if ((p = index(r, " # "))) { note = substr(r, p + 1); r = substr(r, 1, p - 1) }
			gsub(/\\t/, "\t", r)
			if ($0 ~ r) {
				hit = 1; k++
				if (note != "")
					line = length($0) < width ? sprintf("%-" width "s%s", $0, note) \
								   : $0 "  " note
			}
		}
		all { print line; last = NR; next }
		hit {
			ind = $0; sub(/[^ \t].*/, "", ind)
			if (last && NR > last + 1)
				print (length(ind) < length(lastind) ? ind : lastind) "..."
			print line; last = NR; lastind = ind
			next
		}
		{ more = 1 }
		END {
			if (k <= n) { print "pick: no line matches " re[k] > "/dev/stderr"; exit 1 }
			if (tail_dots && more) print lastind "..."
		}'
}

# para RE: from the first line that matches RE up to the next empty line.
para() { awk -v r="$1" '$0 ~ r { on = 1 } on && $0 == "" { exit } on { print }'; }

# us PS: picoseconds as microseconds with three decimals.
us() { awk -v p="$1" 'BEGIN { printf "%.3f\n", p / 1e6 }'; }

# ---- hcasim-run (user-guide §3, timing.md), as make run runs it
run() {
	mkdir -p "$W/build"
	once run "$B/bin/hcasim-run" build/run
	ok run
}

r_boot_us() { us "$(run | sed -n 's/^== .* booted at t=\([0-9]*\) ps ==$/\1/p')"; }
r_run_devices() {
	run | pick '^== ' '^$' '^hca_id:\thcasim0' '^\tfw_ver:' '^\tnode_guid:' '^\t\tport:\t1' \
		'^\t\t\tstate:' '^\t\t\tport_lid:'
}
r_run_connect() { run | pick -e '^== connecting' 'hcasim0 qp .* -> INIT' '-> RTR' '-> RTS'; }
r_run_queried() { run | grep '^hcasim0 qp .*state='; }
r_run_cmdlog() {
	run | pick '^hcasim0:$' ' QUERY_HCA_CAP ' ' INIT_HCA ' ' CREATE_EQ ' ' QUERY_HCA_CAP ' \
		' MODIFY_QP '
}
r_run_first_cmd() { run | grep -m1 ' QUERY_HCA_CAP '; }
# run_wait CMD N: the host wait of hcasim0's Nth command CMD
r_run_wait() {
	run | awk -v c="$1" -v n="$2" '/^hcasim1:/ { exit } $4 == c && ++k == n { print $(NF - 1); exit }'
}
r_run_workload() { run | para '^== RC workload =='; }
r_run_completions() { run | para '^== RC workload ==' | grep '^t='; }
r_run_end() { run | sed -n '/^== per-QP counters ==$/,$p'; }

# trace CATS: the trace of the default run with HCASIM_TRACE=CATS (user-guide §9)
trace() {
	t=trace_$(echo "$1" | tr -c 'a-z0-9\n' _)
	once "$t" env HCASIM_TRACE="$1" HCASIM_TRACE_FILE="$t.txt" "$B/bin/hcasim-run" "$t" >/dev/null
	ok "$t"
	cat "$W/$t.txt"
}
# The start of HCASIM_TRACE='*', with notes
r_trace_boot() {
	trace '*' | pick 'kernel.boot' 'iommu.map id=1 # command page' \
		'mmio_wr off=0x10 # CMDQ_ADDR_LO' 'mmio_wr off=0x14 # CMDQ_ADDR_HI' \
		'mmio_wr off=0x18 # CMD_DOORBELL, token 1' 'cmd.doorbell' \
		'dma_rd .*len=64 # entry fetch' 'cmd.exec' 'dma_rd # input mailbox' \
		'dma_wr # output mailbox' 'dma_wr_cpl # status + own landed' 'cmd.done' \
		'iommu.map # QP context store' 'mmio_wr off=0x18 # next doorbell: INIT_HCA' \
		'fw.eq_create # CREATE_EQ' 'port.state # link trained' 'eq.eqe' \
		'port.state # SM sweep' 'eq.eqe' 'port.state' 'eq.eqe' 'port.sm '
}
# One QP's life in the firmware: HCASIM_TRACE=qp,fw, device 0's QP lines
r_trace_qp() { trace qp,fw | grep 'dev=0.*qp'; }
# The 8 KiB SEND of the workload: the first 20 lines of the data path's categories, with notes
r_trace_datapath() {
	trace db,req,resp,comp,cqe,pkt | head -20 | pick -a -w 83 \
		'db.rq # hcasim1: receive posted' 'resp.prefetch # its WQE read at once' \
		'req.bf # hcasim0: SEND, WQE in the doorbell' 'req.pkt # SEND First' \
		'req.pkt # SEND Last' 'req.bf # the WRITE'
}

# The default run with faults: sim.seed 7, 2 % of the frames dropped (user-guide §6). It stops
# with "no completion within 1 ms" (exit status 1), as the guide says.
faulty() {
	printf '[sim]\nseed = 7\n[fault]\ndrop_ppm = 20000\n' >"$W/faulty.ini"
	mkdir -p "$W/faulty"
	once faulty env HCASIM_CONFIG="$W/faulty.ini" HCASIM_TRACE=link \
		HCASIM_TRACE_FILE="$W/faulty.trace" "$B/bin/hcasim-run" faulty/run
	ok faulty 1
}
# ---- hcasim-run through the switch (blocks/switch.md)
switched() {
	printf '[sim]\ntopology = switch\n' >"$W/switched.ini"
	mkdir -p "$W/switched"
	once switched env HCASIM_CONFIG="$W/switched.ini" HCASIM_TRACE=sw,link \
		HCASIM_TRACE_FILE="$W/switched.trace" "$B/bin/hcasim-run" switched/run
	ok switched
}
r_switched_completions() { switched | para '^== RC workload ==' | grep '^t='; }
r_switched_first() {
	switched >/dev/null &&
		pick 'link.tx link=sw.port1 side=0' 'sw.fwd in=1 out=2' 'link.tx link=sw.port2 side=1' \
			<"$W/switched.trace"
}
r_switched_pcapcheck() {
	switched >/dev/null && "$B/bin/hcasim-pcapcheck" "$W/switched/run.link1.pcap" | tail -1
}
r_faulty_drops() { faulty >/dev/null && grep 'link.fault_drop' "$W/faulty.trace"; }
r_faulty_stop() { faulty >/dev/null && sed 's/^hcasim-run: //' "$W/faulty.err" | tail -1; }
r_faulty_send_ps() { faulty | awk '/ SEND completed/ { sub(/^t=/, "", $1); print $1 }'; }
r_faulty_send_later_us() {
	a=$(faulty | awk '/ SEND completed/ { sub(/^t=/, "", $1); print $1 }')
	b=$(run | awk '/ SEND completed/ { sub(/^t=/, "", $1); print $1 }')
	us $((a - b))
}

# ---- Debian's ibv_devinfo (README)
r_devinfo() {
	# shellcheck disable=SC2086
	once devinfo env $SANENV LD_LIBRARY_PATH="$B/lib" ibv_devinfo -v >/dev/null
	ok devinfo
	pick '^hca_id:' '^\ttransport:' '^\tfw_ver:' '^\tnode_guid:' '^\tsys_image_guid:' \
		'^\tvendor_id:' '^\tvendor_part_id:' '^\thw_ver:' '^\tboard_id:' '^\tphys_port_cnt:' \
		'^\tdevice_cap_flags:' 'AUTO_PATH_MIG' 'CURR_QP_STATE_MOD' 'SYS_IMAGE_GUID' \
		'^\thca_core_clock:' '^\t\tport:\t1' '^\t\t\tstate:' '^\t\t\tmax_mtu:' \
		'^\t\t\tactive_mtu:' '^\t\t\tsm_lid:' '^\t\t\tport_lid:' '^\t\t\tactive_width:' \
		'^\t\t\tactive_speed:' '^\t\t\tphys_state:' '^\t\t\tGID\[  0\]:' <"$W/devinfo.out"
}

# ---- a boot that fails under an unmodified program: its stderr and exit status (config.md)
r_env_devinfo() {
	# shellcheck disable=SC2086
	once env_devinfo clean $SANENV LD_LIBRARY_PATH="$B/lib" HCASIM_IMPL=sched=fast ibv_devinfo
	ok env_devinfo 255
	cat "$W/env_devinfo.err"
	echo "exit status $(status env_devinfo)"
}

# ---- the README's program
r_readme_hello() {
	docprog README.md '/* readme-example */' hello
	once hello ./hello
	ok hello
}

# ---- user-guide §4, §5, §6 programs
r_connect() {
	docprog docs/user-guide.md '/* Two RC QPs, one on each simulated HCA' connect
	once connect ./connect >/dev/null
	ok connect
	sed -n '1,/^hcasim1/p' "$W/connect.out"
	echo "  ..."
	tail -1 "$W/connect.out"
}

twohost() {
	docprog docs/user-guide.md '/* twohost.c:' twohost
	once twohost ./twohost
	ok twohost
}
r_twohost() { twohost; }
# twohost_us OP: how long after its post OP completed
r_twohost_us() { twohost | awk -v op="$1" '$1 == op { print $(NF - 4) }'; }
# twohost_qp tx_pkts|tx_bytes|rx_pkts|rx_bytes: hcasim0's QP counters at the end of twohost
r_twohost_qp() {
	twohost | awk -v k="$1" '/^hcasim0 qp / {
		v["tx_pkts"] = $5; v["tx_bytes"] = $7; v["rx_pkts"] = $10; v["rx_bytes"] = $12
		print v[k] }'
}
r_twohost_tshark() {
	twohost >/dev/null
	(cd "$W" && tshark -r twohost.link0.pcap 2>/dev/null)
}
r_twohost_fields() {
	twohost >/dev/null
	(cd "$W" && tshark -r twohost.link0.pcap -T fields -e frame.number -e frame.time_relative \
		-e frame.len -e infiniband.bth.opcode -e infiniband.bth.psn -e infiniband.bth.a \
		-e infiniband.reth.dmalen -e infiniband.aeth.msn 2>/dev/null | head -6)
}
r_twohost_pcapcheck() {
	twohost >/dev/null
	once twohost_check "$B/bin/hcasim-pcapcheck" twohost.link0.pcap
	ok twohost_check
}
# One bit of frame 1's payload flipped in a copy: the first bytes of twohost's pattern
# (byte i is i * 7 + 1), found in the file whatever its format, get bit 0 of their 9th byte
# flipped.
r_twohost_flipped() {
	twohost >/dev/null
	if [ ! -f "$W/flipped.pcap" ]; then
		off=$(LC_ALL=C grep -obUaP '\x01\x08\x0f\x16\x1d\x24\x2b\x32' "$W/twohost.link0.pcap" |
			head -1 | cut -d: -f1)
		[ -n "$off" ] || die "twohost.link0.pcap: the payload pattern is not there"
		off=$((off + 8))
		byte=$(od -An -tu1 -j "$off" -N1 "$W/twohost.link0.pcap" | tr -d ' ')
		cp "$W/twohost.link0.pcap" "$W/flipped.pcap"
		# shellcheck disable=SC2059
		printf "$(printf '\\%03o' $((byte ^ 1)))" |
			dd of="$W/flipped.pcap" bs=1 seek="$off" conv=notrunc 2>/dev/null
	fi
	once flipped "$B/bin/hcasim-pcapcheck" flipped.pcap
	ok flipped 1
}

loopback() {
	docprog docs/user-guide.md '/* loopback.c:' loopback
	once loopback env HCASIM_TRACE=port,pkt HCASIM_TRACE_FILE=trace.txt ./loopback
	ok loopback
}
r_loopback() { loopback; }
r_loopback_trace() { loopback >/dev/null && grep -v 'port.state\|port.sm' "$W/trace.txt"; }
r_loopback_first() { loopback >/dev/null && grep -m1 'port.loopback' "$W/trace.txt"; }
r_loopback_tshark() {
	loopback >/dev/null
	(cd "$W" && tshark -r loopback.hca0.loopback.pcap 2>/dev/null)
}
r_loopback_pcapcheck() {
	loopback >/dev/null
	once loopback_check "$B/bin/hcasim-pcapcheck" loopback.hca0.loopback.pcap
	ok loopback_check
}

r_clock() {
	docprog docs/user-guide.md '/* clock.c:' clock
	once clock ./clock
	ok clock
}

r_dvsend() {
	docprog docs/user-guide.md '/* A SEND built by hand through hcasimdv' dvsend
	once dvsend ./dvsend
	ok dvsend
}

# ---- scenarios (user-guide §14, scenarios.md), run from the top of the source tree
scenario() {
	[ -e "$W/sim" ] || ln -s "$S/sim" "$W/sim"
	once "scn_$1" "$B/bin/hcasim-scenario" "sim/scenarios/$1.ini"
	ok "scn_$1"
}
# The lost-ACK excerpt of the user guide: QP a's timeline, the header cut short.
r_scn_lost_ack_guide() {
	scenario lost_ack | sed -n '/^qp a:/,/^  totals/p' | grep -v '^  totals' |
		grep -v ' state ' | sed 's/^\(qp a: .*timeout [0-9]* ([0-9.]* us)\), .*/\1, .../'
	echo ...
	scenario lost_ack | tail -1
}
# The report of scenarios.md: everything up to the fifth expectation, then the result.
r_scn_report() {
	scenario "$1" | awk '/^  (PASS|FAIL) / { if (++n > 5) { if (!dots) print "  ..."; dots = 1; next } }
		dots && /^result:/ { print ""; print; next } !dots { print }'
}
# scn_time SCENARIO QP RE [N]: the time (us, three decimals) of the Nth (1) line of QP's
# timeline that matches RE.
r_scn_time() {
	scenario "$1" | awk -v qp="$2" -v r="$3" -v n="${4:-1}" '
		/^qp / { on = ($2 == qp ":") } on && $0 ~ r && ++k == n { printf "%.3f\n", $1; exit }'
}
# rnr_extra SCENARIO: how much longer than its RNR timer code's delay (IBA table 45) each wait
# from an RNR NAK to the resend is, for every QP: "0.542" when they are all the same, else
# "0.540 to 0.556".
r_rnr_extra() {
	scenario "$1" | awk '
		BEGIN { split("10 20 30 40 60 80 120 160 240 320 480 640 960 1280 1920 2560 3840 " \
			"5120 7680 10240 15360 20480 30720 40960 61440 81920 122880 163840 245760 " \
			"327680 491520", d, " "); d[0] = 655360 }
		/^qp / { nak = -1 }
		/ nak-rx .*RNR NAK \(timer code [0-9]+\)/ {
			nak = $1; code = $NF; sub(/\)/, "", code); next }
		nak >= 0 && / tx / {
			x = $1 - nak - d[code + 0]; nak = -1
			if (!n++ || x < lo) lo = x
			if (n == 1 || x > hi) hi = x
		}
		END {
			if (!n) { print "rnr_extra: no RNR wait" > "/dev/stderr"; exit 1 }
			if (hi - lo < 0.0005) printf "%.3f\n", lo; else printf "%.3f to %.3f\n", lo, hi
		}'
}
# te WHAT: timeout_exhaustion.ini, QP a: "total", from the first packet's last bit to the
# completion; "resend", what each of the retry_cnt resends adds to retry_cnt + 1 timeouts.
r_te() {
	scenario timeout_exhaustion | awk -v what="$1" '
		/^qp / { on = ($2 == "a:") }
		on && /^qp a:/ { t = $0; sub(/.*timeout [0-9]+ \(/, "", t); sub(/ us.*/, "", t)
			r = $0; sub(/.*retry_cnt /, "", r); sub(/,.*/, "", r) }
		on && / tx / && first == "" && match($0, /last bit [0-9.]+/) {
			first = substr($0, RSTART + 9, RLENGTH - 9) }
		on && / cqe / { done = $1 }
		END {
			total = done - first
			if (what == "total") printf "%.3f\n", total
			else printf "%.3f\n", (total - (r + 1) * t) / r
		}'
}
# scn_since SCENARIO QP RE1 RE2: from the first line of QP's timeline that matches RE1 to the
# first that matches RE2 (us, three decimals).
r_scn_since() {
	a=$(r_scn_time "$1" "$2" "$3")
	b=$(r_scn_time "$1" "$2" "$4")
	awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f\n", b - a }'
}
# scn_count SCENARIO QP RE: how many lines of QP's timeline match RE.
r_scn_count() {
	scenario "$1" | awk -v qp="$2" -v r="$3" '
		/^qp / { on = ($2 == qp ":") } on && $0 ~ r { k++ } END { print k + 0 }'
}
# scn_count_before SCENARIO QP RE US: how many lines of QP's timeline match RE before US.
r_scn_count_before() {
	scenario "$1" | awk -v qp="$2" -v r="$3" -v t="$4" '
		/^qp / { on = ($2 == qp ":") } on && $0 ~ r && $1 < t + 0 { k++ } END { print k + 0 }'
}
# scn_expect SCENARIO: "N of N" of its result line.
r_scn_expect() { scenario "$1" | sed -n 's/^result: PASS (\([0-9]* of [0-9]*\) .*/\1/p'; }

# ---- hcasim-perf (user-guide §15, performance.md)
perf() { # ARG...: hcasim-perf ARG..., once per set of arguments
	_pk=perf_$(echo "$*" | tr -c 'a-zA-Z0-9\n' _)
	once "$_pk" "$B/bin/hcasim-perf" "$@"
	ok "$_pk"
}
r_perf_rows() { perf "$@" | grep -A1 '^ #bytes'; }
r_perf_write_bw_gbits() { perf write_bw --report_gbits | awk 'f { print $4; exit } /^ #bytes/ { f = 1 }'; }
# perf_msgrate_l16: the 64 B message rate with 16 WRs per post (M/s, the nearest whole)
r_perf_msgrate_l16() {
	perf write_bw -s 64 -q 16 -n 1000 -l 16 |
		awk 'f { printf "%.0f\n", $5; exit } /^ #bytes/ { f = 1 }'
}
r_perf_send_lat_typical() { perf send_lat | awk 'f { print $5; exit } /^ #bytes/ { f = 1 }'; }

# ---- timing.md: the report of the default soak run. About 6 s of CPU, so suite docs does not
# run it (hcasim-docrun -c sets HCASIM_DOC_CHECK): suite soak checks its own report against
# the page instead.
r_soak_report() {
	[ -z "${HCASIM_DOC_CHECK:-}" ] || {
		echo "checked by suite soak, which makes the report" >&2
		exit 77
	}
	once soak clean "$B/test/hcasim-tests" --color=never --jobs 1 \
		--filter 'soak/*' >/dev/null
	ok soak
	grep '^soak: ' "$W/soak.out"
}

# ---- multicast.md: the trace of suite mcast's first test, from the first attach to the first
# datagram's delivery on both hosts
r_mcast_trace() {
	once mcast clean HCASIM_TRACE=fw,port,pkt HCASIM_TRACE_FILE=mcast.txt \
		"$B/test/hcasim-tests" --color=never \
		--filter 'mcast/one_send_reaches_four_qps_on_two_hosts_including_the_senders_hca' \
		>/dev/null
	ok mcast
	awk '/port.sm_mcast/ { on = 1 } on { print } / pkt.mcast / && ++n == 2 { exit }' "$W/mcast.txt"
}

# ---- device-interface.md: messages of refused commands, as HCASIM_VERBOSE=1 prints them in the
# suites that provoke them. verbose NAME FILTER: run the suites once; message RE...: for each RE,
# the first message of those runs that matches it.
verbose() {
	once "verbose_$1" clean HCASIM_VERBOSE=1 "$B/test/hcasim-tests" \
		--color=never --jobs 1 --filter "$2" >/dev/null
	ok "verbose_$1"
	cat "$W/verbose_$1.err"
}
message() {
	for re in "$@"; do
		grep -m1 -- "^hcasim: .*$re" "$W/all_messages" | sed 's/^hcasim: //' | grep . ||
			die "no message matches '$re'"
	done
}
messages() {
	{
		verbose modify_qp 'modify_qp/*'
		verbose pd 'verbs_errors/*alloc_pd*'
	} >"$W/all_messages"
}
r_guide_messages() {
	messages
	message 'MODIFY_QP: required attribute IBV_QP_ACCESS_FLAGS' 'field attr.pkey_index' \
		'DEALLOC_PD: still in use'
}
r_cmd_messages() {
	messages
	message 'MODIFY_QP: required attribute IBV_QP_ACCESS_FLAGS' \
		'MODIFY_QP: attribute IBV_QP_QKEY is not' 'transition RESET -> ERR' \
		'field attr.av.sl' 'needs a device capability' 'RoCE port needs a GRH' \
		'DEALLOC_PD: still in use' 'ALLOC_PD: device limit'
}

# ---- performance.md: one timing key changed at a time from the defaults. Each row: its label
# and its keys (section.key=value,...); the four figures of hcasim-perf with them.
calib_row() {
	label=$1 keys=$2 cn=$3
	: >"$W/calib$cn.ini"
	for kv in $(echo "$keys" | tr , ' '); do
		k=${kv%%=*}
		printf '[%s]\n%s = %s\n' "${k%%.*}" "${k#*.}" "${kv#*=}" >>"$W/calib$cn.ini"
	done
	set -- "send_lat" "write_lat" "write_bw -s 64 -q 16 -n 1000" "read_bw -s 1024 -n 2000 -R"
	row="| $label |"
	i=0
	for t in "$@"; do
		i=$((i + 1))
		# shellcheck disable=SC2086
		once "calib${cn}_$i" env HCASIM_CONFIG="$W/calib$cn.ini" "$B/bin/hcasim-perf" $t >/dev/null
		ok "calib${cn}_$i"
		v=$(awk -v i=$i 'f { if (i <= 2) print $5 " µs"; else if (i == 3) printf "%.2f M/s\n", $5;
			else printf "%.1f Gb/s\n", $4; exit } /^ #bytes/ { f = 1 }' "$W/calib${cn}_$i.out")
		row="$row $v |"
	done
	echo "$row"
}
r_calib_table() {
	echo "| change | send_lat | write_lat | 64 B msg rate | READ 1 KiB |"
	echo "|---|---|---|---|---|"
	calib_row defaults "" 0
	calib_row '`pcie.dma_read_ns` 500 → 250' pcie.dma_read_ns=250 1
	calib_row '`hca.wqe_prefetch` 4 → 16' hca.wqe_prefetch=16 2
	calib_row '`pcie.mmio_write_ns` 150 → 75' pcie.mmio_write_ns=75 3
	calib_row '`link.latency_ns` 100 → 50' link.latency_ns=50 4
	calib_row '`host.verb_ns` 50 → 25, `host.poll_ns` 20 → 10' host.verb_ns=25,host.poll_ns=10 5
	calib_row '`clock.core_mhz` 500 → 1000' clock.core_mhz=1000 6
}

# ---- hcasim-sc (systemc.md): its own lines, on stderr
r_systemc() {
	[ -x "$B/bin/hcasim-sc" ] || {
		echo "no $B/bin/hcasim-sc: this build has no SystemC top (docs/systemc.md)" >&2
		exit 77
	}
	once systemc "$B/bin/hcasim-sc" >/dev/null
	ok systemc
	grep '^hcasim-sc:' "$W/systemc.err"
}

# ---- the test suites, counted without running them
tests_list() {
	once tests_list clean "$B/test/hcasim-tests" --list
	ok tests_list
	grep -q '^[^ ].*: [0-9]* tests\?$' "$W/tests_list.out" || die "hcasim-tests --list: no suite"
}
# tests [SUITE...]: how many tests (in those suites; a SUITE may end in *)
r_tests() {
	tests_list | awk -v want="$*" '
		BEGIN { n = split(want, w, " ") }
		/^[^ ].*: [0-9]+ tests?$/ {
			s = $1; sub(/:$/, "", s)
			if (!n) { t += $2; next }
			for (i = 1; i <= n; i++) {
				p = w[i]
				if (p == s || (p ~ /\*$/ && index(s, substr(p, 1, length(p) - 1)) == 1)) { t += $2; break }
			}
		}
		END { print t + 0 }'
}
# modes_runs: the runs of suite modes, every shipped scenario and hcasim-run in four modes
r_modes_runs() { echo $((($(ls "$S"/sim/scenarios/*.ini | wc -l) + 1) * 4)); }
# suites: how many suites
r_suites() { tests_list | grep -c '^[^ ].*: [0-9]* tests\?$'; }

# commands: how many firmware commands the device interface has (hcasim-gendoc regmap, from
# model/hw/cmd.def)
r_commands() {
	"$B/bin/hcasim-gendoc" regmap | awk '/^## Commands/ { on = 1; next } /^## / { on = 0 }
		on && /^\| 0x/ { n++ } END { if (!n) exit 1; print n }'
}

# ---- the architecture page: the engines' step tables and the QP context image, from the
# code (hcasim-gendoc steps, from REQ_STEPS/RESP_STEPS/COMP_STEPS; format, from formats.def)
r_engine_steps() { "$B/bin/hcasim-gendoc" steps; }
r_qpc_layout() { "$B/bin/hcasim-gendoc" format hca_qpc; }

# ---- the configuration table (hcasim-gendoc config, from sim/config.def)
# and_list: stdin's lines as "a, b and c"
and_list() {
	awk '{ k[++n] = $0 } END { for (i = 1; i <= n; i++)
		printf "%s%s", k[i], i == n ? "\n" : i == n - 1 ? " and " : ", " }'
}
# text_keys: the keys whose value is text
r_text_keys() {
	"$B/bin/hcasim-gendoc" config | sed -n 's/^| \(`[a-z_.]*`\) | [^|]* | text | .*/\1/p' |
		and_list
}
# choice_keys: the keys whose value is one word of a list, with the list
r_choice_keys() {
	"$B/bin/hcasim-gendoc" config |
		sed -n 's/^| \(`[a-z_.]*`\) | [^|]* | \(`[a-z0-9|]*`\) | .*/\1 (\2)/p' | and_list
}

# ---- make waves (waves.md), as in a fresh clone at /tmp/clone: the script and the layouts
# of this tree, the build's programs, a waves directory of its own.
r_make_waves() {
	c=$W/clone
	if [ ! -d "$c" ]; then
		mkdir -p "$c/waves" "$c/build/waves"
		cp "$S"/waves/*.sh "$S"/waves/*.gtkw "$c/waves/"
		ln -s "$B/bin" "$c/build/bin"
		ln -s "$B/test" "$c/build/test"
		ln -s "$S/sim" "$c/sim"
	fi
	once make_waves sh -c "cd '$c' && BUILD='$c/build' sh waves/make-waves.sh sim/scenarios/lost_ack.ini" \
		>/dev/null
	ok make_waves
	sed -n '/^ok: /,$p' "$W/make_waves.out" | sed "s|$c|/tmp/clone|g" | sed '${/^$/d}'
}

# ---- connection-manager programs on the drop-in library (abi.md): what each prints, and its
# exit status, as a shell transcript
cm() { # NAME CMD...: run CMD on the drop-in library (stdout and stderr together)
	n=$1
	shift
	# shellcheck disable=SC2086
	once "cm_$n" sh -c 'exec "$@" 2>&1' sh env $SANENV LD_LIBRARY_PATH="$B/lib" timeout 60 "$@"
}
r_cm_transcript() {
	for c in "rping -s" ucmatose "ib_write_bw -R localhost"; do
		echo "\$ $c"
		# shellcheck disable=SC2086
		cm "${c%% *}" $c
		echo "\$ echo \$?"
		status "cm_${c%% *}"
	done
}
# cm_status NAME: the exit status of the transcript's run of NAME (rping, ucmatose, ...)
r_cm_status() { r_cm_transcript >/dev/null && status "cm_$1"; }

# ---- Debian's rdma binaries (README, abi.md): the ELF files dpkg lists for each package
elves() {
	n=0
	for f in $(dpkg -L "$1"); do
		[ -f "$f" ] && [ "$(head -c4 "$f" | tail -c3)" = ELF ] && n=$((n + 1))
	done
	echo $n
}
r_debian_elves() {
	a=$(elves ibverbs-utils) b=$(elves perftest) c=$(elves rdmacm-utils)
	if [ "${1:-}" = split ]; then
		echo "$((a + b + c)) binaries ($a + $b + $c)"
	else
		echo $((a + b + c))
	fi
}

# ---- hcasim-exec (fabric.md): build/test/exec-probe, a program that prints what it sees of the
# clocks, the TSC, its pid and /proc/cpuinfo, run as host 1 of a fabric of its own
exec_probe() {
	mkdir -p "$W/exec"
	clean $SANENV "$B/bin/hcasim-exec" --fabric "$W/exec/fab-$1" --host 1 "$B/test/exec-probe" "$1"
}
# (the addresses are left out: the stack's depends on the length of the scratch directory's name)
r_exec_probe() { once "exec_$1" exec_probe "$1" | grep -v '^aslr' && ok "exec_$1"; }
# exec_refused ARG...: what hcasim-exec says to ARG... and its exit status
r_exec_refused() {
	_er=0
	clean "$B/bin/hcasim-exec" "$@" 2>&1 | sed "s|$W/||g" || true
	clean "$B/bin/hcasim-exec" "$@" >/dev/null 2>&1 || _er=$?
	echo "exit status $_er"
}

name=${1:?usage: docruns.sh NAME [ARG...]}
shift
command -v "r_$name" >/dev/null 2>&1 || die "no recipe '$name'"
"r_$name" "$@"
