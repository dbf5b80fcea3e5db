#!/usr/bin/env bash
# bench/alter_rewrite.sh: ALTER COLUMN TYPE of a loaded table, tcopy's
# rewrite into new storage against a heap twin's (issue 48).
#
#   bench/alter_rewrite.sh [--rows N] [--runs R] [--install]
#
# With the installed extension and tserver (--install: `make install` of
# this tree first), a throwaway cluster and tserver (bench/lib_accounts.sh)
# and two tables of N pgbench_accounts rows (default 1,000,000):
# accounts (tcopy, keyed by aid, loaded by COPY) and accounts_heap (COPY,
# PRIMARY KEY (aid)).  Each run times, on both sides, the side that goes
# first alternating, `ALTER ... ALTER COLUMN abalance TYPE bigint` and
# then back to int (each a rewrite of every row), in a session of its own,
# by psql's \timing.  The backend's peak RssAnon during the tcopy ALTERs
# is sampled every 10 ms (the rows pass through a tuplestore bounded by
# work_mem).  Prints the medians, their ratio, and the peak; writes
# bench/results/issue48_alter_N.md.
#
# Environment: as bench/scan.sh (PG_CONFIG, TSERVER, DATA_DIR) with
# ALTER_DIR (default /var/tmp/tcopy-alter) and ALTER_PORT (default 54391).
set -euo pipefail

rows=1000000
runs=3
install=0
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
		--install) install=1; shift ;;
		*) sed -n '5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
case "$rows$runs" in
	*[!0-9]*) echo "alter_rewrite.sh: --rows and --runs take positive integers" >&2; exit 2 ;;
esac

bench_src=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$bench_src")
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
bindir=$("${PG_CONFIG:-pg_config}" --bindir)
dir=${ALTER_DIR:-/var/tmp/tcopy-alter}
port=${ALTER_PORT:-54391}
user=${SCAN_USER:-postgres}
data_dir=${DATA_DIR:-/var/tmp/tcopy-bench/data}
tserver=${TSERVER:-$bindir/tserver}
. "$bench_src/lib_accounts.sh"
say() { echo "[$(date +%H:%M:%S)] $*" >&2; }

csv=$(accounts_csv "$rows")
[ "$install" = 1 ] && make -s -C "$top" install >/dev/null
accounts_start
trap 'accounts_cleanup; rm -rf "$dir"' EXIT
psql_pg >/dev/null <<EOF
CREATE TABLE accounts_heap (aid int NOT NULL, bid int, abalance int, filler char(84));
COPY accounts FROM '$csv' (FORMAT csv);
COPY accounts_heap FROM '$csv' (FORMAT csv);
ALTER TABLE accounts_heap ADD PRIMARY KEY (aid);
VACUUM ANALYZE accounts_heap;
CHECKPOINT;
EOF
say "loaded $rows rows into accounts and accounts_heap"

# alter TABLE TYPE: the ALTER's milliseconds; the tcopy side samples the
# backend's RssAnon (kB) into $dir/peak
alter()
{
	local t=$1 type=$2 kind=TABLE
	[ "$t" = accounts ] && kind="FOREIGN TABLE"
	as_pg "$bindir/psql" -h "$dir" -p "$port" -U postgres -qXAt -v ON_ERROR_STOP=1 postgres \
		-c "SELECT pg_backend_pid()" -c '\timing on' \
		-c "ALTER $kind $t ALTER COLUMN abalance TYPE $type" >"$dir/out" &
	local psql=$! pid="" peak=0
	while kill -0 "$psql" 2>/dev/null; do
		[ -z "$pid" ] && pid=$(head -1 "$dir/out" 2>/dev/null | grep -E '^[0-9]+$' || true)
		if [ -n "$pid" ]; then
			local r
			r=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
			[ "${r:-0}" -gt "$peak" ] && peak=$r
		fi
		sleep 0.01
	done
	wait "$psql"
	[ "$t" = accounts ] && [ "$peak" -gt "$(cat "$dir/peak" 2>/dev/null || echo 0)" ] && echo "$peak" >"$dir/peak"
	sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' "$dir/out"
}

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
: >"$dir/heap"; : >"$dir/tcopy"
for r in $(seq "$runs"); do
	for type in bigint int; do
		if [ $((r % 2)) = 1 ]; then order="accounts accounts_heap"; else order="accounts_heap accounts"; fi
		for t in $order; do
			ms=$(alter "$t" "$type")
			if [ "$t" = accounts ]; then echo "$ms" >>"$dir/tcopy"; else echo "$ms" >>"$dir/heap"; fi
			say "run $r, $t to $type: $ms ms"
		done
	done
done
for t in accounts accounts_heap; do
	n=$(psql_pg -c "SELECT count(*), sum(abalance) FROM $t")
	echo "$t: $n" >&2
done
[ "$(psql_pg -c 'SELECT count(*), sum(abalance) FROM accounts')" = \
	"$(psql_pg -c 'SELECT count(*), sum(abalance) FROM accounts_heap')" ] || { say "the tables differ"; exit 1; }
h=$(median <"$dir/heap"); t=$(median <"$dir/tcopy")
ratio=$(awk -v a="$t" -v b="$h" 'BEGIN { printf "%.2f", a / b }')
out="$bench_src/results/issue48_alter_$rows.md"
{
	echo "# ALTER COLUMN abalance TYPE bigint/int, $rows rows ($commit, $(date -u '+%Y-%m-%d %H:%M UTC'))"
	echo
	echo "\`bench/alter_rewrite.sh --rows $rows --runs $runs\`: $((runs * 2)) ALTERs a side, alternating."
	echo
	echo "| side | median ms | all (ms) |"
	echo "|---|---|---|"
	echo "| heap (rewrite, PK rebuilt) | $h | $(tr '\n' ' ' <"$dir/heap")|"
	echo "| tcopy (rewrite into a new tserver table) | $t | $(tr '\n' ' ' <"$dir/tcopy")|"
	echo
	echo "tcopy / heap: **$ratio**.  Peak RssAnon of the tcopy ALTER's backend: $(cat "$dir/peak") kB."
} | tee "$out"
