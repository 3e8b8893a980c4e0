#!/bin/sh
# make coverage (docs/rtl.md#coverage): merge what every process of a suite run wrote under
# RAW — the Verilated blocks' counts (vl-<pid>-<n>.dat, sim/vl/vl.h) and the functional points
# (fcov-<pid>.txt, model/fcov.c) — and report: per file of rtl/, the line (statements and
# branches) and toggle points hit; the functional points by group, each one never hit named.
# Usage: coverage.sh RAW OUT   writes OUT/merged.dat, OUT/fcov.txt and OUT/report.md (printed)
#        coverage.sh --splice DOC REPORT COMMIT RESULT   puts REPORT into DOC between the lines
#        <!-- coverage: make coverage writes from here --> and <!-- coverage: to here -->, headed
#        by the date, COMMIT and the suite's RESULT (make coverage)
set -eu
if [ "${1:-}" = --splice ]; then
	doc=$2 rep=$3
	grep -q '^<!-- coverage: make coverage writes from here -->$' "$doc" &&
		grep -q '^<!-- coverage: to here -->$' "$doc" ||
		{ echo "coverage: $doc has no coverage markers" >&2; exit 1; }
	{
		echo "Measured by \`make coverage\` on $(date -u +%Y-%m-%d), commit $4; the suite in rtl"
		echo "mode: $5."
		echo
		cat "$rep"
	} >"$doc.cov"
	awk -v rep="$doc.cov" '
		/^<!-- coverage: to here -->$/ { skip = 0 }
		!skip { print }
		/^<!-- coverage: make coverage writes from here -->$/ {
			while ((getline l < rep) > 0) print l
			skip = 1
		}' "$doc" >"$doc.new"
	rm -f "$doc.cov"
	mv "$doc.new" "$doc"
	echo "coverage: report written into $doc"
	exit 0
fi
raw=${1:?usage: coverage.sh RAW OUT}
out=${2:?usage: coverage.sh RAW OUT}
mkdir -p "$out"
ls "$raw"/vl-*.dat >/dev/null 2>&1 || { echo "coverage: no vl-*.dat under $raw" >&2; exit 1; }
ls "$raw"/fcov-*.txt >/dev/null 2>&1 || { echo "coverage: no fcov-*.txt under $raw" >&2; exit 1; }

# verilator_coverage merges in batches (one call for thousands of files is too long a line).
rm -f "$out/merged.dat"
find "$raw" -name 'vl-*.dat' | sort | xargs -n 200 sh -c '
	m=$0; shift
	if [ -f "$m" ]; then set -- "$m" "$@"; fi
	verilator_coverage --write "$m.new" "$@" >/dev/null && mv "$m.new" "$m"' "$out/merged.dat"

# A point of merged.dat: C '<\001key\002value ...>' count. Keys: f file, l line, page
# v_line/..., v_branch/..., v_toggle/..., v_user/...; o the point (a toggle's bit). A point in
# several instances or models (sram in every block, a block and its bug variant) counts as hit
# if any hit it.
report_vl() {
	awk '
	/^C / {
		n = $NF; s = $0; sub(/^C \047/, "", s); sub(/\047 [0-9]+$/, "", s)
		k = split(s, kv, "\001"); f = ""; l = ""; page = ""; o = ""; c = ""; h = ""
		for (i = 1; i <= k; i++) {
			split(kv[i], p, "\002")
			if (p[1] == "f") f = p[2]; else if (p[1] == "l") l = p[2]
			else if (p[1] == "page") page = p[2]; else if (p[1] == "o") o = p[2]
			else if (p[1] == "n") c = p[2]
		}
		if (f !~ /^rtl\//) next
		split(page, pg, "/"); t = pg[1] == "v_toggle" ? "toggle" : pg[1] == "v_user" ? "user" : "line"
		key = t SUBSEP f SUBSEP l SUBSEP c SUBSEP o SUBSEP pg[2]
		if (!(key in hit)) {
			total[t, f]++; files[f] = 1; hit[key] = 0
			if (t == "line") { nl++; lkey[nl] = key; lname[nl] = "`" f ":" l "` (" o ")" }
		}
		if (n > 0 && !hit[key]) { hit[key] = 1; got[t, f]++ }
	}
	function pct(a, b) { return b ? sprintf("%.1f %%", 100 * a / b) : "—" }
	END {
		print "| file | line | toggle |"
		print "|---|---|---|"
		nf = 0; for (f in files) list[++nf] = f
		for (i = 2; i <= nf; i++) for (j = i; j > 1 && list[j - 1] > list[j]; j--) {
			x = list[j]; list[j] = list[j - 1]; list[j - 1] = x }
		for (i = 1; i <= nf; i++) {
			f = list[i]
			printf "| `%s` | %d / %d (%s) | %d / %d (%s) |\n", f, got["line", f],
			       total["line", f], pct(got["line", f], total["line", f]),
			       got["toggle", f], total["toggle", f],
			       pct(got["toggle", f], total["toggle", f])
			gl += got["line", f]; tl += total["line", f]
			gt += got["toggle", f]; tt += total["toggle", f]
		}
		printf "| **all of rtl/** | **%d / %d (%s)** | **%d / %d (%s)** |\n", gl, tl,
		       pct(gl, tl), gt, tt, pct(gt, tt)
		miss = ""
		for (i = 1; i <= nl; i++)
			if (!hit[lkey[i]]) miss = miss (miss == "" ? "" : ", ") lname[i]
		print ""
		print "Line points not hit: " (miss == "" ? "none." : miss ".")
	}' "$out/merged.dat"
}

# The functional points: every process listed every point with its count; summed by name.
cat "$raw"/fcov-*.txt | awk -F '\t' '
	!(($1, $2) in n) { order[++k] = $1 "\t" $2 }
	{ n[$1, $2] += $3 }
	END { for (i = 1; i <= k; i++) { split(order[i], p, "\t"); print p[1] "\t" p[2] "\t" n[p[1], p[2]] } }
' >"$out/fcov.txt"

report_fcov() {
	awk -F '\t' '
	!($1 in pts) { g[++ng] = $1 }
	{ pts[$1]++; if ($3 > 0) hit[$1]++; else miss[$1] = miss[$1] (miss[$1] == "" ? "" : ", ") "`" $2 "`" }
	END {
		print "| group | points hit | not hit |"
		print "|---|---|---|"
		for (i = 1; i <= ng; i++) {
			x = g[i]; th += hit[x]; tp += pts[x]
			printf "| `%s` | %d / %d | %s |\n", x, hit[x], pts[x], miss[x] == "" ? "—" : miss[x]
		}
		printf "| **all** | **%d / %d (%.1f %%)** | |\n", th, tp, 100 * th / tp
	}' "$out/fcov.txt"
}

{
	echo "RTL coverage over $(ls "$raw"/vl-*.dat | wc -l) block instances, functional points over"
	echo "$(ls "$raw"/fcov-*.txt | wc -l) simulator processes:"
	echo
	report_vl
	echo
	report_fcov
} >"$out/report.md"
cat "$out/report.md"
