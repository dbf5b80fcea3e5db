#!/usr/bin/env bash
# bench/leader_cpu.sh: the CPU one COPY costs its backend (with workers, the
# parallel COPY's leader), exactly: utime and stime of /proc/self/stat read
# by the backend itself before and after the COPY, in the same session
# (bench/threads.sh samples every thread, and its figures for the backend
# move by 0.03 s between runs on a busy machine).
#
#   bench/leader_cpu.sh [--rows N] [--runs R] [--workers "0 8"]
#
# The installed extension and tserver, bench/threads.sh's throwaway cluster
# and tcopy table of pgbench_accounts' columns (bench/lib_accounts.sh), the
# sorted accounts dataset of N rows (default 4,000,000); R rounds (default
# 3) of COPY accounts FROM the file (FORMAT csv, workers W) for each W,
# tcopy.copy_parallel_threshold = 0.  Prints each COPY's backend CPU (user,
# sys), then per W the medians.  Environment: as bench/threads.sh's
# (PG_CONFIG, THREADS_DIR, THREADS_PORT, THREADS_USER, DATA_DIR).
set -euo pipefail

rows=4000000
runs=3
workers="0 8"
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
		--workers) workers=${2:?}; shift 2 ;;
		*) sed -n '8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done

bench_src=$(cd "$(dirname "$0")" && pwd)
bindir=$("${PG_CONFIG:-pg_config}" --bindir)
dir=${THREADS_DIR:-/var/tmp/tcopy-threads}
port=${THREADS_PORT:-54380}
user=${THREADS_USER:-postgres}
data_dir=${DATA_DIR:-/var/tmp/tcopy-bench/data}
tserver=$bindir/tserver
. "$bench_src/lib_accounts.sh"

accounts_start
csv=$(accounts_csv "$rows" sorted)
stat="SELECT array_to_string((string_to_array(pg_read_file('/proc/self/stat'), ' '))[14:15], ' ')"
results=$dir/leader_cpu.tsv
: >"$results"
for r in $(seq "$runs"); do
	for w in $workers; do
		psql_pg -c "TRUNCATE accounts" >/dev/null
		psql_pg -c "SET tcopy.copy_parallel_threshold = 0" -c "$stat" \
			-c "COPY accounts FROM '$csv' (FORMAT csv, workers $w)" -c "$stat" |
			awk -v w="$w" -v r="$r" 'NR == 1 { u = $1; s = $2 }
				NR == 2 { printf "%s\t%s\t%.2f\t%.2f\t%.2f\n", w, r, ($1 - u + $2 - s) / 100, ($1 - u) / 100, ($2 - s) / 100 }' |
			tee -a "$results" | awk -F'\t' '{ printf "workers %s, round %s: backend CPU %s s (user %s, sys %s)\n", $1, $2, $3, $4, $5 }'
	done
done
for w in $workers; do
	awk -F'\t' -v w="$w" '$1 == w { print $3 }' "$results" | sort -n |
		awk -v w="$w" '{ v[NR] = $1 } END { printf "workers %s: median backend CPU %.2f s of %d\n", w, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, NR }'
done
