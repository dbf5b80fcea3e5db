#!/usr/bin/env bash
# bench/reload.sh: what a reload costs the tserver after its COPY (issue 27):
# the bytes RocksDB compacts per byte loaded over TRUNCATE + COPY cycles, as
# `pgbench -i` and every benchmark round do, with the installed extension
# and tserver.
#
#   bench/reload.sh [--rows N] [--cycles K] [--settle S]
#
# A throwaway cluster (tcopy in shared_preload_libraries) and a tserver
# started with --statistics (RocksDB's statistics: the bytes compactions
# read and wrote, and flushes wrote); a tcopy table of pgbench_accounts'
# columns keyed by aid.  Cycle 0 is a COPY of N sorted accounts rows
# (default 2,000,000; bench/gen_data.awk's, cached as bench/run.sh caches
# them) into the new table; cycles 1..K (default 4) are BEGIN; TRUNCATE;
# COPY; COMMIT of the same rows.  After each cycle the tserver is left
# alone until its compactions stop (the counters unchanged for 2 s, at most
# S seconds, default 60), and the cycle's compaction bytes are read from
# `tserver-cli stats`.  Prints a markdown table: per cycle, the COPY's
# wall time, the bytes flushed, compacted (read, written) and their ratio to
# the bytes the tserver holds after it (the table's SST files); then the
# mean of cycles 1..K.
#
# Environment: PG_CONFIG, TSERVER (default `pg_config --bindir`/tserver;
# its tserver-cli beside it), RELOAD_DIR (default /var/tmp/tcopy-reload),
# RELOAD_PORT (default 54370), RELOAD_USER (the user Postgres runs as when
# run as root, default postgres), DATA_DIR (the cached datasets, default
# /var/tmp/tcopy-bench/data).
set -euo pipefail

rows=2000000
cycles=4
settle=60
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--cycles) cycles=${2:?}; shift 2 ;;
		--settle) settle=${2:?}; shift 2 ;;
		*) sed -n '6p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done

bench_src=$(cd "$(dirname "$0")" && pwd)
bindir=$("${PG_CONFIG:-pg_config}" --bindir)
dir=${RELOAD_DIR:-/var/tmp/tcopy-reload}
port=${RELOAD_PORT:-54370}
user=${RELOAD_USER:-postgres}
data_dir=${DATA_DIR:-/var/tmp/tcopy-bench/data}
tserver=${TSERVER:-$bindir/tserver}
. "$bench_src/lib_accounts.sh"
stat_of() { as_pg "$(dirname "$tserver")/tserver-cli" --address "unix:$dir/ts.sock" stats | awk -v k="$1:" '$1 == k { print $2 }'; }

csv=$(accounts_csv "$rows")
accounts_start --statistics

# wait until the compaction counters stay put for 2 s (at most $settle s)
settle_down()
{
	local last="" now i
	for ((i = 0; i < settle * 2; i++)); do
		now="$(stat_of compaction_write_bytes) $(stat_of flush_write_bytes)"
		[ "$now" = "$last" ] && [ $i -ge 4 ] && return
		last=$now
		sleep 1
	done
}

printf '| cycle | COPY wall (s) | flushed (MB) | compaction read (MB) | compaction written (MB) | SST bytes held (MB) | compaction written / held |\n'
printf '|---|---|---|---|---|---|---|\n'
sum_ratio=0
for ((c = 0; c <= cycles; c++)); do
	r0=$(stat_of compaction_read_bytes); w0=$(stat_of compaction_write_bytes); f0=$(stat_of flush_write_bytes)
	if [ "$c" -eq 0 ]; then
		sql="COPY accounts FROM '$csv' (FORMAT csv);"
	else
		sql="BEGIN; TRUNCATE accounts; COPY accounts FROM '$csv' (FORMAT csv); COMMIT;"
	fi
	t0=$(date +%s.%N)
	psql_pg -c "$sql" >/dev/null
	t1=$(date +%s.%N)
	settle_down
	r1=$(stat_of compaction_read_bytes); w1=$(stat_of compaction_write_bytes); f1=$(stat_of flush_write_bytes)
	held=$(du -sb --apparent-size "$dir"/ts/*.sst 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
	awk -v c="$c" -v t="$(echo "$t1 - $t0" | bc)" -v f=$((f1 - f0)) -v r=$((r1 - r0)) -v w=$((w1 - w0)) -v h="$held" \
		'BEGIN { printf "| %d | %.2f | %.1f | %.1f | %.1f | %.1f | %.2f |\n", c, t, f / 1048576, r / 1048576, w / 1048576, h / 1048576, (h > 0 ? w / h : 0) }'
	if [ "$c" -gt 0 ]; then
		sum_ratio=$(awk -v s="$sum_ratio" -v w=$((w1 - w0)) -v h="$held" 'BEGIN { print s + (h > 0 ? w / h : 0) }')
	fi
done
count=$(psql_pg -c "SELECT count(*) FROM accounts")
[ "$count" = "$rows" ] || { echo "the table holds $count rows, not $rows" >&2; exit 1; }
awk -v s="$sum_ratio" -v k="$cycles" 'BEGIN { printf "\nmean of cycles 1..%d: compaction written / bytes held = %.2f\n", k, s / k }'
