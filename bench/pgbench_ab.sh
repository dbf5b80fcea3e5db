#!/usr/bin/env bash
# bench/pgbench_ab.sh: pgbench on tcopy tables with two builds of tcopy,
# installed in turn, alternating (A B A B ...), so that drift on a shared
# machine hits both alike; each round is one bench/pgbench.sh run (its
# heap tables beside, its own cluster and tserver).
#
#   bench/pgbench_ab.sh [--rounds R] OLD_TREE NEW_TREE [pgbench.sh options]
#
# OLD_TREE and NEW_TREE are built work trees of tcopy (make); each is
# installed (make install, so root, under /var/tmp/tcopy-install.lock,
# released before the run) before its runs.  The pgbench.sh options go to
# every run (e.g. --scale 10 --seconds 10 --clients "1 4").  Prints, per
# measure, each tree's tps of every round, the medians and NEW/OLD, and
# each tree's tcopy/heap ratio of medians; every run's runs.tsv is kept in
# $PGB_AB_DIR (default /var/tmp/tcopy-pgbench-ab).
set -euo pipefail

rounds=3
if [ "${1:-}" = --rounds ]; then rounds=${2:?}; shift 2; fi
old=${1:?OLD_TREE}
new=${2:?NEW_TREE}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
out=${PGB_AB_DIR:-/var/tmp/tcopy-pgbench-ab}
mkdir -p "$out"
rm -f "$out"/*.tsv

for round in $(seq "$rounds"); do
	for side in old new; do
		tree=$old
		[ $side = new ] && tree=$new
		flock /var/tmp/tcopy-install.lock make -C "$tree" install >/dev/null
		echo "round $round, $side ($tree)" >&2
		PGB_DIR="$out/run" "$here/pgbench.sh" --runs 1 "$@" >"$out/$side-$round.md" 2>"$out/$side-$round.log" ||
			echo "round $round, $side: pgbench.sh exited $? (see $out/$side-$round.log)" >&2
		cp "$out/run/runs.tsv" "$out/$side-$round.tsv"
	done
done

echo "pgbench, $rounds rounds of each build alternating; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "old: $old ($(git -C "$old" rev-parse --short HEAD)), new: $new ($(git -C "$new" rev-parse --short HEAD))"
echo
echo "| measure | old tcopy tps | new tcopy tps | new / old | old tcopy / heap | new tcopy / heap |"
echo "|---|---|---|---|---|---|"
awk -F'\t' '
	function median(list,   a, n, i, j, t) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	FNR == 1 { split(FILENAME, p, "/"); side = p[length(p)]; sub(/-.*/, "", side); next }
	$3 ~ /^(tpcb|select) c/ && $4 != "failed" {
		key = $3
		if (!(key in seen)) { seen[key] = 1; order[++n] = key }
		v[side, $2, key] = v[side, $2, key] " " $4
	}
	END {
		for (i = 1; i <= n; i++) {
			k = order[i]
			ot = median(v["old", "tcopy", k]); nt = median(v["new", "tcopy", k])
			oh = median(v["old", "heap", k]); nh = median(v["new", "heap", k])
			printf "| %s | %s (**%.0f**) | %s (**%.0f**) | %.2f | %.2f | %.2f |\n", k,
				v["old", "tcopy", k], ot, v["new", "tcopy", k], nt, ot ? nt / ot : 0, oh ? ot / oh : 0, nh ? nt / nh : 0
		}
	}' "$out"/old-*.tsv "$out"/new-*.tsv
