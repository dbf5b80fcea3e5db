#!/usr/bin/env bash
# bench/threads.sh: where one COPY's CPU goes, thread by thread (issue 27),
# with the installed extension and tserver.
#
#   bench/threads.sh [--rows N] [--workers "0 8"] [--datasets "accounts shuffled"]
#
# A throwaway cluster (tcopy in shared_preload_libraries, up to 8 parallel
# workers) and a tserver; a tcopy table of pgbench_accounts' columns keyed
# by aid.  For each dataset (accounts: N sorted rows, default 2,000,000;
# shuffled: the same rows in a seeded random order; both as bench/run.sh
# makes and caches them) and each worker count (default 0 and 8), the
# table is truncated, then COPY ... (FORMAT csv, workers W) runs while
# bench/threadprof.pl samples every thread of the user's processes (the
# backend, its parallel workers, every tserver thread).  Prints, per load:
# the COPY's wall time (psql's, connection included), the CPU of the
# backend (the leader), of its workers
# together, of the tserver, the busiest thread (its name and CPU), and the
# busiest thread's CPU over the CPU the workers-0 backend used for the same
# dataset: the issue's scaling target is at most 0.15 with workers 8 (no
# serial stage caps the pipeline).  Each load's per-thread figures are in
# THREADS_DIR/threads_DATASET_wW.tsv.
#
# Environment: PG_CONFIG, THREADS_DIR (default /var/tmp/tcopy-threads),
# THREADS_PORT (default 54380), THREADS_USER (the user Postgres runs as when
# run as root, default postgres), DATA_DIR (the cached datasets, default
# /var/tmp/tcopy-bench/data).
set -euo pipefail

rows=2000000
workers="0 8"
datasets="accounts shuffled"
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--workers) workers=${2:?}; shift 2 ;;
		--datasets) datasets=${2:?}; shift 2 ;;
		*) sed -n '5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done

bench_src=$(cd "$(dirname "$0")" && pwd)
bindir=$("${PG_CONFIG:-pg_config}" --bindir)
dir=${THREADS_DIR:-/var/tmp/tcopy-threads}
port=${THREADS_PORT:-54380}
user=${THREADS_USER:-postgres}
data_dir=${DATA_DIR:-/var/tmp/tcopy-bench/data}
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi; }
psql_pg() { as_pg "$bindir/psql" -h "$dir" -p "$port" -U postgres -qXAt -v ON_ERROR_STOP=1 "$@" postgres; }

# the datasets, made as bench/run.sh makes them
mkdir -p "$data_dir"
accounts=$data_dir/accounts_$rows.csv
shuffled=$data_dir/accounts_${rows}_shuffled.csv
if [ ! -e "$accounts.done" ]; then
	awk -v kind=accounts -v rows="$rows" -f "$bench_src/gen_data.awk" >"$accounts.tmp"
	mv "$accounts.tmp" "$accounts"
	touch "$accounts.done"
fi
if [[ " $datasets " == *" shuffled "* ]] && [ ! -e "$shuffled.done" ]; then
	awk 'BEGIN { srand(42) } { printf "%09d\t%s\n", int(rand() * 1000000000), $0 }' "$accounts" |
		LC_ALL=C sort -S 25% -t "$(printf '\t')" -k1,1 -T "$data_dir" | cut -f2- >"$shuffled.tmp"
	mv "$shuffled.tmp" "$shuffled"
	touch "$shuffled.done"
fi
chmod a+r "$accounts" "$shuffled" 2>/dev/null || true

rm -rf "$dir"
mkdir -p "$dir"
[ "$(id -u)" -eq 0 ] && chown "$user" "$dir"
ts_pid=""
cleanup()
{
	as_pg "$bindir/pg_ctl" -D "$dir/pg" -m immediate stop >/dev/null 2>&1 || true
	pkill -TERM -f -- "--listen unix:$dir/ts.sock" 2>/dev/null || true
	[ -n "$ts_pid" ] && wait "$ts_pid" 2>/dev/null || true
}
trap cleanup EXIT

as_pg "$bindir/tserver" --data "$dir/ts" --listen "unix:$dir/ts.sock" --allow-uid "$user" \
	2>"$dir/tserver.log" &
ts_pid=$!
for _ in $(seq 100); do grep -q "tserver ready" "$dir/tserver.log" && break; sleep 0.1; done
grep -q "tserver ready" "$dir/tserver.log" || { cat "$dir/tserver.log" >&2; exit 1; }

as_pg "$bindir/initdb" -D "$dir/pg" -U postgres -A trust --no-sync >/dev/null
cat >>"$dir/pg/postgresql.conf" <<EOF
port = $port
unix_socket_directories = '$dir'
shared_preload_libraries = 'tcopy'
max_connections = 20
max_worker_processes = 16
max_parallel_workers = 8
autovacuum = off
tcopy.recovery_interval = 0
EOF
as_pg "$bindir/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w start >/dev/null
psql_pg <<EOF >/dev/null
CREATE EXTENSION tcopy;
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$dir/ts.sock');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE FOREIGN TABLE accounts (aid int NOT NULL, bid int, abalance int, filler char(84))
	SERVER ts OPTIONS (key 'aid');
EOF

printf '| dataset | workers | wall (s) | backend CPU (s) | workers CPU (s) | tserver CPU (s) | busiest thread | its CPU (s) | busiest / workers-0 backend |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for ds in $datasets; do
	csv=$accounts
	[ "$ds" = shuffled ] && csv=$shuffled
	base=""
	for w in $workers; do
		psql_pg -c "TRUNCATE accounts" >/dev/null
		stop=$dir/stop
		tsv=$dir/threads_${ds}_w$w.tsv
		rm -f "$stop"
		perl "$bench_src/threadprof.pl" "$user" "$stop" --tsv "$tsv" >"$dir/threads_${ds}_w$w.txt" &
		prof=$!
		sleep 0.3
		t0=$(date +%s.%N)
		psql_pg -c "SET tcopy.copy_parallel_threshold = 0" \
			-c "COPY accounts FROM '$csv' (FORMAT csv, workers $w)" >/dev/null
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
