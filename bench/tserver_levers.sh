#!/usr/bin/env bash
# Compare tserver binaries (or settings) on bench/tserver_load.sh, side by
# side: the variants run alternately, round after round, and the medians
# of each figure are printed per variant, with every run's figures in a TSV
# (issue 17: each lever against the same baseline).
#
#   bench/tserver_levers.sh [--runs R] [--out FILE] NAME=BINARY[,LOAD-OPTIONS] ...
#
# LOAD-OPTIONS (commas for spaces) go to tserver_load.sh, after --rows 10M
# --shuffle unless $LOAD_ARGS says otherwise, e.g.
#   bench/tserver_levers.sh base=/tmp/base new=build/tserver \
#       big=build/tserver,--session-memory-mb,128
set -euo pipefail

runs=3
out=""
while [ $# -gt 0 ]; do
	case "$1" in
		--runs) runs=$2; shift 2 ;;
		--out) out=$2; shift 2 ;;
		*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--runs R] [--out FILE] NAME=BINARY[,OPTS] ..." >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
load_args=${LOAD_ARGS:---rows 10000000 --shuffle}
out=${out:-$(mktemp "${TMPDIR:-/tmp}/tserver_levers.XXXXXX.tsv")}
printf 'variant\trun\twall_s\tuser_s\tsys_s\tcpu_s\trss_mb\twrote_mb\truns\tprepare_ms\tpublish_ms\n' >"$out"

for r in $(seq "$runs"); do
	for v in "$@"; do
		name=${v%%=*}
		spec=${v#*=}
		bin=${spec%%,*}
		opts=""
		[ "$bin" = "$spec" ] || opts=${spec#*,}
		# shellcheck disable=SC2086
		res=$(TSERVER=$bin "$here/tserver_load.sh" $load_args ${opts//,/ })
		echo "$res" | awk -v name="$name" -v run="$r" '
			/wall/ { wall = $2 }
			/tserver CPU/ { user = $4; sys = $7 }
			/peak RSS/ { rss = $4 }
			/wrote/ { wrote = $3 }
			/^  commit/ { runs = $2; prep = $5; pub = $8 }
			END { printf "%s\t%d\t%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\n", name, run, wall, user,
				sys, user + sys, rss, wrote, runs, prep, pub }' >>"$out"
		tail -1 "$out"
	done
done

echo "medians of $runs runs ($out):"
awk -F'\t' 'NR > 1 { for (c = 3; c <= 11; c++) v[$1, c, ++n[$1, c]] = $c; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
function median(name, c,   m, i, j, t, a) {
	m = n[name, c]
	for (i = 1; i <= m; i++) a[i] = v[name, c, i] + 0
	for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j] < a[j - 1]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
END {
	printf "%-12s %7s %7s %7s %7s %7s %8s %5s %8s\n", "variant", "wall", "user", "sys", "cpu", "rss_mb", "wrote_mb", "runs", "prep_ms"
	for (i = 1; i <= k; i++) {
		nm = order[i]
		printf "%-12s %7.2f %7.2f %7.2f %7.2f %7.1f %8.1f %5d %8d\n", nm, median(nm, 3), median(nm, 4),
			median(nm, 5), median(nm, 6), median(nm, 7), median(nm, 8), median(nm, 9), median(nm, 10)
	}
}' "$out"
