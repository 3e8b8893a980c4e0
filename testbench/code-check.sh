#!/bin/sh
# Code-shape checks over the product's C (docs/architecture.md#code-shape), run by suite arch:
#  - no function body longer than 80 lines (table initialisers are not functions);
#  - no run of 10 or more lines repeated, within or across model/, firmware/, driver/ and sim/
#    with its tools (comments, blank lines and lone braces do not count; whitespace is
#    normalised).
# Usage: code-check.sh [FILE...] (default: the *.c and *.h of model/, firmware/, driver/, sim/,
# sim/apps/ and sim/apps/scenario/). Prints one line per finding and exits 1 if there is any.
set -u
[ $# -gt 0 ] || set -- model/*.c model/*.h firmware/*.c firmware/*.h driver/*.c driver/*.h \
	sim/*.c sim/*.h sim/apps/*.c sim/apps/*.h sim/apps/scenario/*.c sim/apps/scenario/*.h
awk -v maxlen=80 -v win=10 '
	FNR == 1 { incmt = 0; fn = ""; }
	# a function: a signature at column 0, its body from a "{" alone at column 0 to "}"
	/^[A-Za-z_]/ { sig = FILENAME ":" FNR " " $0 }
	/^\{[[:space:]]*$/ && sig != "" { fn = sig; start = FNR }
	/^\}[[:space:]]*$/ && fn != "" {
		if (FNR - start - 1 > maxlen) {
			printf "code-check: %s: %d lines, more than %d\n", fn, FNR - start - 1, maxlen
			bad = 1
		}
		fn = ""; sig = ""
	}
	{
		# the line without comments, whitespace normalised
		s = $0; t = ""
		while (s != "") {
			if (incmt) {
				i = index(s, "*/")
				if (!i) { s = ""; break }
				s = substr(s, i + 2); incmt = 0
			} else {
				i = index(s, "/*"); j = index(s, "//")
				if (j && (!i || j < i)) { t = t substr(s, 1, j - 1); s = ""; break }
				if (!i) { t = t s; s = ""; break }
				t = t substr(s, 1, i - 1); s = substr(s, i + 2); incmt = 1
			}
		}
		gsub(/[[:space:]]+/, " ", t); sub(/^ /, "", t); sub(/ $/, "", t)
		if (t == "" || t ~ /^(\{|\}|\};|else|\} else \{|break;|return;)$/) next
		n++; text[n] = t; where[n] = FILENAME ":" FNR; file[n] = FILENAME
	}
	END {
		for (k = 1; k + win - 1 <= n; k++) {
			if (file[k] != file[k + win - 1]) continue
			key = text[k]
			for (m = 1; m < win; m++) key = key "\n" text[k + m]
			if (key in first) {
				if (!(first[key] in said)) {
					printf "code-check: %s repeats %s (%d lines)\n", where[k], where[first[key]], win
					said[first[key]] = 1
				}
				bad = 1
			} else first[key] = k
		}
		exit bad
	}' "$@" && echo "code-check: $# files: no function over 80 lines, no 10-line run repeated"
