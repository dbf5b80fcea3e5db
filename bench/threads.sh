#!/usr/bin/env bash
# bench/threads.sh: where one COPY's CPU goes, thread by thread (issue 27),
# with the installed extension and tserver.
#
#   bench/threads.sh [--rows N] [--workers "0 8r 8"] [--datasets "accounts shuffled"]
#                    [--tserver-args "--merge-threads 8"] [--partitions P --tservers N]
#
# A throwaway cluster (tcopy in shared_preload_libraries, up to 8 parallel
# workers) and a tserver; a tcopy table of pgbench_accounts' columns keyed
# by aid.  For each dataset (accounts: N sorted rows, default 2,000,000;
# shuffled: the same rows in a seeded random order; both as bench/run.sh
# makes and caches them) and each worker count (default 0, 8 relayed and
# 8; "8r": 8 workers whose batches the leader relays, tcopy.copy_streams
# off; "8": the workers send them on streams of the session), the
# table is truncated, then COPY ... (FORMAT csv, workers W) runs while
# bench/threadprof.pl samples every thread of this cluster's processes and
# its tservers' (the backend, its parallel workers, every tserver thread).
# Prints, per load: the COPY's wall time (psql's, connection included), the
# CPU of the backend (the leader), of its workers together, of the tserver, the busiest thread (its name and CPU), and the
# busiest thread's CPU over the CPU the workers-0 backend used for the same
# dataset: the issue's scaling target is at most 0.15 with workers 8 (no
# serial stage caps the pipeline).  Each load's per-thread figures are in
# THREADS_DIR/threads_DATASET_wW.tsv.
#
# --tserver-args: more arguments for the tserver (--merge-threads 8: the
# commit's merge in 8 parts, as a host of 8 cores would by default; this
# one's default is its 2 cores).  --partitions P --tservers N: the table is
# PARTITION BY HASH (aid) with P tcopy partitions, partition i on tserver
# i mod N (the issue's "4 partitions over 4 tservers"); the tserver CPU is
# then all tservers'.
#
# Environment: PG_CONFIG, TSERVER (default `pg_config --bindir`/tserver),
# THREADS_DIR (default /var/tmp/tcopy-threads),
# THREADS_PORT (default 54380), THREADS_USER (the user Postgres runs as when
# run as root, default postgres), DATA_DIR (the cached datasets, default
# /var/tmp/tcopy-bench/data).
set -euo pipefail

rows=2000000
workers="0 8r 8"
datasets="accounts shuffled"
tserver_args=""
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--workers) workers=${2:?}; shift 2 ;;
		--datasets) datasets=${2:?}; shift 2 ;;
		--tserver-args) tserver_args=${2:?}; shift 2 ;;
		--partitions) ACCOUNTS_PARTITIONS=${2:?}; shift 2 ;;
		--tservers) ACCOUNTS_TSERVERS=${2:?}; shift 2 ;;
		*) sed -n '5,6p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done

export ACCOUNTS_PARTITIONS ACCOUNTS_TSERVERS
bench_src=$(cd "$(dirname "$0")" && pwd)
bindir=$("${PG_CONFIG:-pg_config}" --bindir)
dir=${THREADS_DIR:-/var/tmp/tcopy-threads}
port=${THREADS_PORT:-54380}
user=${THREADS_USER:-postgres}
data_dir=${DATA_DIR:-/var/tmp/tcopy-bench/data}
tserver=${TSERVER:-$bindir/tserver}
. "$bench_src/lib_accounts.sh"

# shellcheck disable=SC2086 # the tserver's arguments, split as given
accounts_start $tserver_args

printf '| dataset | workers | wall (s) | backend CPU (s) | workers CPU (s) | tserver CPU (s) | busiest thread | its CPU (s) | busiest / workers-0 backend |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for ds in $datasets; do
	csv=$(accounts_csv "$rows" "$([ "$ds" = shuffled ] && echo shuffled || echo sorted)")
	base=""
	for w in $workers; do
		psql_pg -c "TRUNCATE accounts" >/dev/null
		stop=$dir/stop
		tsv=$dir/threads_${ds}_w$w.tsv
		rm -f "$stop"
		# this cluster's and these tservers' threads only, not another's
		perl "$bench_src/threadprof.pl" "$user" "$stop" --tsv "$tsv" \
			--roots "$(head -1 "$dir/pg/postmaster.pid") $accounts_ts_pids" \
			>"$dir/threads_${ds}_w$w.txt" &
		prof=$!
		sleep 0.3
		t0=$(date +%s.%N)
		streams=on
		case "$w" in *r) streams=off ;; esac
		psql_pg -c "SET tcopy.copy_parallel_threshold = 0" -c "SET tcopy.copy_streams = $streams" \
			-c "COPY accounts FROM '$csv' (FORMAT csv, workers ${w%r})" >/dev/null
		t1=$(date +%s.%N)
		touch "$stop"
		wait "$prof"
		wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
		# the backend: the process titled "... [local] COPY"; its workers:
		# "parallel worker for PID"; the tserver: its command line
		perl -F'\t' -lane '
			next if $. == 1;
			if ($F[4] =~ /\[local\]/) { $be += $F[0] }
			elsif ($F[4] =~ /parallel worker/) { $wk += $F[0] }
			elsif ($F[4] =~ /tserver/) { $ts += $F[0] }
			if (!defined $top || $F[0] > $top) { $top = $F[0]; $who = ($F[4] =~ /tserver/ ? "tserver" : $F[4] =~ /parallel worker/ ? "worker" : $F[4] =~ /\[local\]/ ? "backend" : "other") . " [$F[5]]" }
			END { printf "%.2f %.2f %.2f %.2f %s\n", $be, $wk, $ts, $top, $who }' "$tsv" >"$dir/sum"
		read -r be wk ts top who <"$dir/sum"
		[ -z "$base" ] && [ "$w" = 0 ] && base=$be
		ratio=$(awk -v t="$top" -v b="${base:-0}" 'BEGIN { if (b > 0) printf "%.2f", t / b; else print "-" }')
		count=$(psql_pg -c "SELECT count(*) FROM accounts")
		[ "$count" = "$rows" ] || { echo "the table holds $count rows, not $rows" >&2; exit 1; }
		printf '| %s | %s | %.2f | %s | %s | %s | %s | %s | %s |\n' "$ds" "$w" "$wall" "$be" "$wk" "$ts" "$who" "$top" "$ratio"
	done
done
