#!/bin/sh
# Check that model/'s blocks form the DAG model/blocks.dag declares (docs/architecture.md
# #the-block-graph): every call from one model file to a function of another (read from the
# object files' symbol tables, so no call hides in a macro) and every #include of a block's
# header goes to a block on a later line, and every part of a QP's state is written by its
# owner only. Usage: dag-check.sh OBJDIR [DAGFILE]
# Prints one line per violation, naming caller, callee and symbol or header; exits 1 if any.
set -u
obj=${1:?usage: dag-check.sh OBJDIR [DAGFILE]}
dag=${2:-model/blocks.dag}
[ -f "$dag" ] || { echo "dag-check: $dag: no such file" >&2; exit 2; }
ranks=$(mktemp) syms=$(mktemp) calls=$(mktemp)
trap 'rm -f "$ranks" "$syms" "$calls"' EXIT
# block rank, in file order; peers share a rank
awk '/^#/ || NF == 0 || $1 ~ /:$/ { next } { for (i = 1; i <= NF; i++) print $i, NR }' "$dag" > "$ranks"
shared=$(awk '$1 == "shared:" { for (i = 2; i <= NF; i++) printf " %s ", $i }' "$dag")
bad=0
for src in model/*.c; do
	b=$(basename "$src" .c)
	if ! grep -q "^$b " "$ranks"; then
		echo "dag-check: model/$b.c is not a block of $dag"
		bad=1
		continue
	fi
	o="$obj/model/$b.o"
	[ -f "$o" ] || { echo "dag-check: $o: not built" >&2; exit 2; }
	nm --defined-only -g "$o" | awk -v b="$b" 'NF == 3 { print $3, b }' >> "$syms"
	nm -u "$o" | awk -v b="$b" '{ print b, $NF }' >> "$calls"
	grep -o '#include "model/[a-z_]*\.h"' "$src" "model/$b.h" 2>/dev/null |
		sed 's/.*model\/\([a-z_]*\)\.h"/\1/' | sort -u | awk -v b="$b" '{ print b, "header:" $1 }' >> "$calls"
done
# calls: caller symbol -> the defining block; headers: includer -> the block of that name
awk -v dagf="$dag" -v shared="$shared" '
	FILENAME == ARGV[1] { rank[$1] = $2; next }
	FILENAME == ARGV[2] { def[$1] = $2; next }
	{
		from = $1; what = $2
		if (what ~ /^header:/) {
			to = substr(what, 8)
			if (!(to in rank) || index(shared, " " to " ")) next
		}
		else { if (!(what in def)) next; to = def[what] }
		if (to == from) next
		if (rank[to] > rank[from]) next
		printf "dag-check: %s -> %s (%s) goes against %s\n", from, to, what, dagf
		bad = 1
	}
	END { exit bad }' "$ranks" "$syms" "$calls" || bad=1
# A process-wide instance (only: lines) is reached only by the blocks listed with it; every
# other block goes through the device (the kernel: d->k).
while read -r kw sym users; do
	[ "$kw" = "only:" ] || continue
	for src in model/*.c; do
		b=$(basename "$src" .c)
		case " $users " in *" $b "*) continue ;; esac
		if nm -u "$obj/model/$b.o" | awk '{ print $NF }' | grep -qx "$sym"; then
			echo "dag-check: $b calls $sym, which only $users may call (model/blocks.dag)"
			bad=1
		fi
	done
done < "$dag"

# Each part of struct hm_qp is written by its owner only (owner: lines): an assignment,
# increment or memset through `->part.` or `.part.` in any other model file is a violation.
# The image block (image: line) decodes whole contexts from their image, so it is excepted.
image=$(awk '$1 == "image:" { print $2 }' "$dag")
parts=$(awk '$1 == "owner:" { for (i = 2; i <= NF; i++) print $i }' "$dag")
nparts=0
for po in $parts; do
	part=${po%%=*} owner=${po#*=}
	nparts=$((nparts + 1))
	for src in model/*.c; do
		b=$(basename "$src" .c)
		[ "$b" = "$owner" ] || [ "$b" = "$image" ] && continue
		grep -nE "(->|\.)$part\.[a-z_]+(\[[^]]*\])*(\.[a-z_]+)?[[:space:]]*(=[^=]|\+\+|--|\+=|-=|\|=|&=)|(\+\+|--)[[:space:]]*[a-z_>.-]*(->|\.)$part\.|memset\([[:space:]]*&?[a-z_>.-]*(->|\.)$part\." "$src" |
			while IFS=: read -r line text; do
				echo "dag-check: $src:$line writes the $part part of a QP, which $owner owns:$text"
			done | grep . && bad=1
	done
done
[ $bad = 0 ] && echo "dag-check: $(grep -c . "$ranks") blocks, no call or include against $dag; $nparts QP parts, each written by its owner only"
exit $bad
