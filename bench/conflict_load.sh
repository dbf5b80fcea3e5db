#!/usr/bin/env bash
# bench/conflict_load.sh: what on_conflict costs the tserver alone
# (build/tserver and build/tserver-cli, no Postgres, no install), policies
# alternating in every round (replace error ignore, R rounds):
#   sorted-empty          N rows in key order into an empty table
#   shuffled-empty        N rows shuffled into an empty table
#   sorted-disjoint       N rows in key order above the N rows a table holds
#   shuffled-overlapping  N rows shuffled, half over the N rows it holds
# Prints "round policy load seconds" (the load's commit time as tserver-cli
# reports it) and the medians per policy and load.
#
#   bench/conflict_load.sh [ROWS] [ROUNDS]      (default 2000000 3)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rows=${1:-2000000}
rounds=${2:-3}
dir=$(mktemp -d /var/tmp/tcopy-conflict-load.XXXXXX)
"$top/build/tserver" --data "$dir/data" --listen "unix:$dir/ts.sock" \
	--allow-uid "$(id -u)" >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do [ -S "$dir/ts.sock" ] && break; sleep 0.1; done
cli() { "$top/build/tserver-cli" --address "unix:$dir/ts.sock" "$@"; }
secs() { sed -n 's/^committed .* in \([0-9.]*\) s.*/\1/p'; }
out=$dir/figures.tsv
for round in $(seq "$rounds"); do
	for policy in replace error ignore; do
		t="t${round}_$policy"
		echo "$round	$policy	sorted-empty	$(cli load "${t}_se" --rows "$rows" --on-conflict "$policy" | secs)"
		echo "$round	$policy	shuffled-empty	$(cli load "${t}_sh" --rows "$rows" --shuffle --seed 3 --on-conflict "$policy" | secs)"
		cli load "${t}_p" --rows "$rows" >/dev/null
		echo "$round	$policy	sorted-disjoint	$(cli load "${t}_p" --rows "$rows" --start $((rows + 1)) --on-conflict "$policy" | secs)"
		echo "$round	$policy	shuffled-overlapping	$(cli load "${t}_p" --rows "$rows" --start $((rows / 2)) --shuffle --seed 3 --on-conflict "$policy" | secs)"
	done
done | tee "$out"
echo "medians:"
for load in sorted-empty shuffled-empty sorted-disjoint shuffled-overlapping; do
	for policy in replace error ignore; do
		awk -F'\t' -v l="$load" -v p="$policy" '$2 == p && $3 == l { print $4 }' "$out" | sort -n |
			awk -v l="$load" -v p="$policy" '{ v[NR] = $1 } END { printf "%-22s %-8s %.3f\n", l, p, v[int((NR + 1) / 2)] }'
	done
done
