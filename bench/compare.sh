#!/usr/bin/env bash
# bench/compare.sh: a before/after measurement of two revisions of tcopy, run
# alternately in one go (A B A B ...) so that drift on a shared machine hits
# both alike.
#
#   bench/compare.sh [--rows N] [--runs R] [--no-copy] [--tps] [--cases LIST]
#                    [--datasets LIST] [--no-tserver-load] BASE [NEW]
#
# BASE and NEW are git revisions (NEW by default: the work tree as it is,
# uncommitted changes included).  Each revision other than the work tree is
# checked out into a worktree under $COMPARE_DIR and built there.  Per round
# and revision:
#   - unless --no-tserver-load: bench/tserver_load.sh, sorted and --shuffle
#     (the tserver and the client library alone);
#   - unless --no-copy: that revision is installed (make install, so root)
#     and bench/run.sh runs case 3 (tcopy, defaults; --cases: others, e.g.
#     3,6) on the accounts dataset (--datasets: others, e.g. mixed) once (a
#     fresh cluster and tserver each time): wall time, the backend's CPU
#     time (user + sys) and the tserver's;
#   - with --tps: bench/commit_tps.sh, pgbench running 1,000-row COPY
#     transactions with 1 and 4 clients (that revision installed): tps
#     and average latency, so commits' cost is compared.
# Then it prints, per measurement, every run, the medians and NEW/BASE.
#
# Environment: COMPARE_DIR (default /var/tmp/tcopy-compare), and what
# bench/run.sh reads (BENCH_DIR ...).
set -euo pipefail

rows=10000000
runs=3
copy=1
tps=0
cases=3
datasets=accounts
tserver_load=1
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
		--no-copy) copy=0; shift ;;
		--tps) tps=1; shift ;;
		--cases) cases=${2:?}; shift 2 ;;
		--datasets) datasets=${2:?}; shift 2 ;;
		--no-tserver-load) tserver_load=0; shift ;;
		-*) sed -n '6p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
		*) break ;;
	esac
done
[ $# -ge 1 ] && [ $# -le 2 ] || { sed -n '6p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

top=$(cd "$(dirname "$0")/.." && pwd)
dir=${COMPARE_DIR:-/var/tmp/tcopy-compare}
mkdir -p "$dir"
results="$dir/results.tsv"
: >"$results"

say() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# tree REV: the directory holding REV, built
tree()
{
	local rev=$1 path
	if [ "$rev" = "." ]; then
		echo "$top"
		return
	fi
	path="$dir/tree-$(git -C "$top" rev-parse --short "$rev")"
	if [ ! -d "$path" ]; then
		git -C "$top" worktree add -q --detach "$path" "$rev" >&2
	fi
	echo "$path"
}

base_tree=$(tree "$1")
new_tree=$(tree "${2:-.}")
for t in "$base_tree" "$new_tree"; do
	say "building $t"
	make -C "$t" -j"$(nproc)" >/dev/null
done

# measure LABEL TREE ROUND
measure()
{
	local label=$1 t=$2 round=$3 out wall order flag
	for order in sorted shuffled; do
		[ "$tserver_load" = 1 ] || break
		flag=()
		[ "$order" = shuffled ] && flag=(--shuffle)
		out=$(TSERVER="$t/build/tserver" TSERVER_CLI="$t/build/tserver-cli" \
			"$top/bench/tserver_load.sh" --rows "$rows" "${flag[@]}")
		wall=$(awk '/^  wall/ { print $2 }' <<<"$out")
		printf '%s\t%s\ttserver_load %s\t%s\n' "$round" "$label" "$order" "$wall" >>"$results"
		say "round $round $label tserver_load $order: $wall s"
	done
	if [ "$copy" = 1 ]; then
		make -C "$t" install >/dev/null
		BENCH_OUT="$dir/out-$label-$round" "$top/bench/run.sh" --rows "$rows" --runs 1 \
			--no-build --no-profile --no-concurrency --cases "$cases" --datasets "$datasets" >/dev/null
		# per case and dataset: wall seconds, backend and tserver CPU seconds (user + sys)
		awk -F'\t' -v round="$round" -v label="$label" 'NR > 1 {
			printf "%s\t%s\tCOPY %s (case %s), wall\t%s\n", round, label, $3, $2, $8
			printf "%s\t%s\tCOPY %s (case %s), backend cpu\t%.2f\n", round, label, $3, $2, $10 + $11
			if ($16 != "")
				printf "%s\t%s\tCOPY %s (case %s), tserver cpu\t%.2f\n", round, label, $3, $2, $16 + $17
		}' "$dir/out-$label-$round/results/runs.tsv" >>"$results"
		say "round $round $label COPY cases $cases on $datasets done"
	fi
	if [ "$tps" = 1 ]; then
		make -C "$t" install >/dev/null
		while read -r c tps_v lat; do
			printf '%s\t%s\tpgbench COPY 1000 rows, %s (tps)\t%s\n' "$round" "$label" "${c#clients=}c" "${tps_v#tps=}" >>"$results"
			printf '%s\t%s\tpgbench COPY 1000 rows, %s (ms)\t%s\n' "$round" "$label" "${c#clients=}c" "${lat#latency_ms=}" >>"$results"
			say "round $round $label pgbench COPY $c: $tps_v $lat"
		done < <("$top/bench/commit_tps.sh")
	fi
}

for round in $(seq "$runs"); do
	measure base "$base_tree" "$round"
	measure new "$new_tree" "$round"
done

echo "base: $1 ($base_tree)"
echo "new:  ${2:-work tree} ($new_tree)"
echo "$rows rows, $runs alternating rounds; seconds, except (tps) and (ms)"
awk -F'\t' '
function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ runs[$3, $2] = runs[$3, $2] " " $4; if (!($3 in seen)) { seen[$3] = 1; order[++n] = $3 } }
END {
	printf "%-42s %-24s %-24s %8s %8s %9s\n", "measurement", "base runs", "new runs", "base med", "new med", "new/base"
	for (i = 1; i <= n; i++) {
		m = order[i]
		b = median(runs[m, "base"]); w = median(runs[m, "new"])
		printf "%-42s %-24s %-24s %8.2f %8.2f %9.3f\n", m, runs[m, "base"], runs[m, "new"], b, w, w / b
	}
}' "$results"
