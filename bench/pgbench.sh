#!/usr/bin/env bash
# bench/pgbench.sh: pgbench on tcopy tables beside heap tables, with the
# installed extension and tserver (issues 15 and 46).
#
#   bench/pgbench.sh [--scale S] [--seconds T] [--runs R] [--clients "1 4"] [--modes "simple prepared"] [--keep] [--report TSV]
#
# A throwaway cluster (tcopy in shared_preload_libraries, logged tables,
# fsync and synchronous_commit on, shared_buffers 1GB) and tserver (with
# --statistics, for its wal_syncs counter, and --block-cache-mb 1024, the
# heap's shared_buffers), and two databases:
#   tcopy  the four tables made by tcopy.create_pgbench_tables('ts'),
#          initialized with `pgbench -i -I g` (client-side: TRUNCATE,
#          INSERTs, COPY ... FREEZE) and `-I G` (server-side: INSERT ...
#          SELECT), then ANALYZE;
#   heap   the tables as pgbench makes them, logged, with its primary keys:
#          `-I dtgp` and `-I dtGp` (drop, create, generate, primary keys:
#          pgbench's default minus the vacuum), then `-I v` (VACUUM ANALYZE).
# Each run (R, default 3) does, for each side in turn (the side that goes
# first alternates between runs, so that drift on a shared machine hits
# both alike): init with g (timed), init with G (timed: the tables the
# runs use), ANALYZE (not timed), select-only at each client count in each
# query mode (-M simple, -M prepared), then the TPC-B-like script at each
# client count in each query mode, T seconds each (default 30), all with
# -n (no VACUUM, which foreign tables do not have) and -j min(clients, 2).
# The init times are pgbench's own ("done in X s").
# After each TPC-B-like run pgbench's invariant is checked (the balances'
# sums equal the history's, one history row per transaction processed).
# Each TPC-B-like run also writes pgbench's per-transaction log (--log: one
# file per thread, the latency in microseconds, "failed" for a transaction
# that failed), from which the p50, p95 and p99 latency of the committed
# transactions of the run are taken (nearest rank, all threads' files
# together); on tcopy, the tserver's counters (`tserver-cli stats`:
# wal_syncs, RocksDB's rocksdb.wal.synced, and sessions_committed) are read
# just before and after the run, for the syncs per committed tserver
# session and per pgbench transaction.
# Prints markdown tables of medians over the runs (min-max): tps per
# (script, clients, mode) and tcopy/heap ratios; latency percentiles of
# TPC-B-like beside the heap's; the tserver's syncs.  Every figure is kept
# in $PGB_DIR/runs.tsv (--report TSV prints the tables of such a file
# again).  Exit status 1 when a pgbench failed or an invariant did not hold
# (the tables are printed either way).
#
# Environment: PG_CONFIG, PGB_DIR (default /var/tmp/tcopy-pgbench), PGB_PORT
# (default 54360), PGB_USER (the user Postgres runs as when run as root,
# default postgres), PGB_TSERVER and PGB_TSERVER_CLI (default the installed
# $bindir/tserver and $bindir/tserver-cli).
set -euo pipefail

scale=10
seconds=30
runs=3
clients="1 4"
modes="simple prepared"
keep=0
report_only=""
while [ $# -gt 0 ]; do
	case "$1" in
		--scale) scale=${2:?}; shift 2 ;;
		--seconds) seconds=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
		--clients) clients=${2:?}; shift 2 ;;
		--modes) modes=${2:?}; shift 2 ;;
		--keep) keep=1; shift ;;
		--report) report_only=${2:?}; shift 2 ;;
		*) sed -n '5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
for m in $modes; do
	case "$m" in
		simple|extended|prepared) ;;
		*) echo "pgbench.sh: unknown query mode \"$m\" (simple, extended or prepared)" >&2; exit 2 ;;
	esac
done

# ---- the report: medians (min-max) of runs.tsv's figures ----

# summary TSV SIDE MEASURE: "MEDIAN MIN MAX FAILS" of the runs' values of
# MEASURE on SIDE ("- - - FAILS" when there is none)
summary()
{
	awk -F'\t' -v side="$2" -v m="$3" '
		NR > 1 && $2 == side && $3 == m { if ($4 == "failed" || $4 == "") f++; else a[++n] = $4 + 0 }
		END {
			if (!n) { print "-", "-", "-", f + 0; exit }
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			print (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2), a[1], a[n], f + 0
		}' "$1"
}

# cell TSV SIDE MEASURE FORMAT UNIT: "median UNIT (min-max)" and the failures
cell()
{
	local med lo hi fails out
	read -r med lo hi fails < <(summary "$1" "$2" "$3")
	if [ "$med" = - ]; then
		[ "$fails" -gt 0 ] && echo failed || echo -
		return
	fi
	# shellcheck disable=SC2059
	out="$(printf "$4" "$med")$5 ($(printf "$4" "$lo")-$(printf "$4" "$hi"))"
	[ "$fails" -gt 0 ] && out="$out, $fails failed"
	echo "$out"
}

# ratio TSV MEASURE FORMAT: the tcopy median over the heap median, or "-"
ratio()
{
	local t h
	t=$(summary "$1" tcopy "$2" | cut -d' ' -f1)
	h=$(summary "$1" heap "$2" | cut -d' ' -f1)
	awk -v t="$t" -v h="$h" -v f="$3" 'BEGIN { if (t == "-" || h == "-" || h + 0 <= 0) print "-"; else printf f "\n", t / h }'
}

# report TSV: the tables
report()
{
	local tsv=$1 c m label t h pt ph r
	echo "| measure | tcopy: median (min-max) | heap: median (min-max) | tcopy / heap |"
	echo "|---|---|---|---|"
	for m in "init g" "init G"; do
		label="\`pgbench -i\`, client-side (g), time"
		[ "$m" = "init G" ] && label="\`pgbench -i\`, server-side (G), time"
		echo "| $label | $(cell "$tsv" tcopy "$m" %.2f " s") | $(cell "$tsv" heap "$m" %.2f " s") | $(ratio "$tsv" "$m" %.2f) |"
	done
	for script in tpcb select; do
		for c in $clients; do
			for mode in $modes; do
				m="$script c$c $mode"
				label="TPC-B-like"
				[ "$script" = select ] && label="select-only"
				echo "| $label, clients: $c, -M $mode | $(cell "$tsv" tcopy "$m" %.0f " tps") | $(cell "$tsv" heap "$m" %.0f " tps") | $(ratio "$tsv" "$m" %.2f) |"
			done
		done
	done
	echo
	echo "(init: tcopy/heap < 1 is faster; tps: tcopy/heap > 1 is faster.)"
	echo
	echo "Latency of the committed TPC-B-like transactions, ms, from pgbench --log: medians of the runs' percentiles"
	echo
	echo "| TPC-B-like | tcopy p50 / p95 / p99 | heap p50 / p95 / p99 | tcopy / heap |"
	echo "|---|---|---|---|"
	for c in $clients; do
		for mode in $modes; do
			pt=""; ph=""; r=""
			for p in p50 p95 p99; do
				m="latency $p tpcb c$c $mode"
				t=$(summary "$tsv" tcopy "$m" | cut -d' ' -f1)
				h=$(summary "$tsv" heap "$m" | cut -d' ' -f1)
				[ "$t" = - ] || t=$(printf %.2f "$t")
				[ "$h" = - ] || h=$(printf %.2f "$h")
				pt="$pt${pt:+ / }$t"; ph="$ph${ph:+ / }$h"
				r="$r${r:+ / }$(ratio "$tsv" "$m" %.1f)"
			done
			echo "| clients: $c, -M $mode | $pt | $ph | $r |"
		done
	done
	echo
	echo "The tserver during tcopy's TPC-B-like runs (its counters before and after each run): medians (min-max)"
	echo
	echo "| TPC-B-like | wal_syncs / session committed | wal_syncs / pgbench transaction | sessions committed / pgbench transaction |"
	echo "|---|---|---|---|"
	for c in $clients; do
		for mode in $modes; do
			echo "| clients: $c, -M $mode | $(cell "$tsv" tcopy "syncs/session tpcb c$c $mode" %.2f "") | $(cell "$tsv" tcopy "syncs/xact tpcb c$c $mode" %.2f "") | $(cell "$tsv" tcopy "sessions/xact tpcb c$c $mode" %.2f "") |"
		done
	done
}

if [ -n "$report_only" ]; then
	report "$report_only"
	exit 0
fi

# ---- the run ----

bindir=$("${PG_CONFIG:-pg_config}" --bindir)
dir=${PGB_DIR:-/var/tmp/tcopy-pgbench}
port=${PGB_PORT:-54360}
user=${PGB_USER:-postgres}
tserver=${PGB_TSERVER:-$bindir/tserver}
tserver_cli=${PGB_TSERVER_CLI:-$bindir/tserver-cli}
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi; }
psql_db() { local db=$1; shift; as_pg "$bindir/psql" -h "$dir" -p "$port" -U postgres -qXAt -v ON_ERROR_STOP=1 "$@" "$db"; }
pgbench_db() { local db=$1; shift; as_pg "$bindir/pgbench" -h "$dir" -p "$port" -U postgres "$@" "$db"; }

# what ran: the installed files, and whether they are this tree's build
top=$(cd "$(dirname "$0")/.." && pwd)
pkglibdir=$("${PG_CONFIG:-pg_config}" --pkglibdir)
md5() { md5sum <"$1" 2>/dev/null | cut -c1-12; }
installed() { echo "tcopy.so $(md5 "$pkglibdir/tcopy.so"), tserver $(md5 "$tserver")"; }
build_id=$(installed)
if [ "$build_id" = "tcopy.so $(md5 "$top/tcopy.so"), tserver $(md5 "$top/build/tserver")" ]; then
	build_id="$build_id: this tree's build"
else
	build_id="$build_id: not this tree's build"
fi

rm -rf "$dir"
mkdir -p "$dir/log"
[ "$(id -u)" -eq 0 ] && chown -R "$user" "$dir"
ts_pid=""
cleanup()
{
	as_pg "$bindir/pg_ctl" -D "$dir/pg" -m fast stop >/dev/null 2>&1 || true
	# the tserver's own pid: it was exec'd by the shell that wrote it
	[ -n "$ts_pid" ] && kill -TERM "$ts_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	[ "$keep" = 1 ] || rm -rf "$dir/pg" "$dir/ts" "$dir/log"
}
trap cleanup EXIT

# the Postgres cluster runs as the same user: admitted by its uid; the
# heap's shared_buffers as the tserver's block cache, where it has the
# option (a tserver older than issue 46 has a fixed 64 MB)
cache=()
"$tserver" --help 2>&1 | grep -q -- --block-cache-mb && cache=(--block-cache-mb 1024)
as_pg bash -c 'd=$1 u=$2; shift 2; echo $$ >"$d/ts.pid"; exec "$0" --data "$d/ts" --listen "unix:$d/ts.sock" --allow-uid "$u" --statistics "$@" 2>"$d/tserver.log"' \
	"$tserver" "$dir" "$user" "${cache[@]}" &
for _ in $(seq 100); do grep -q "tserver ready" "$dir/tserver.log" 2>/dev/null && break; sleep 0.1; done
grep -q "tserver ready" "$dir/tserver.log" || { cat "$dir/tserver.log" >&2; exit 1; }
ts_pid=$(cat "$dir/ts.pid")

as_pg "$bindir/initdb" -D "$dir/pg" -U postgres -A trust -E UTF8 --locale=C >/dev/null
cat >>"$dir/pg/postgresql.conf" <<CONF
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
shared_preload_libraries = 'tcopy'
max_connections = 20
shared_buffers = 1GB
max_wal_size = 8GB
checkpoint_timeout = 30min
jit = off
CONF
as_pg "$bindir/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w start >/dev/null

psql_db postgres -c "CREATE DATABASE tcopy" -c "CREATE DATABASE heap"
psql_db tcopy <<SQL
CREATE EXTENSION tcopy;
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$dir/ts.sock');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
SELECT tcopy.create_pgbench_tables('ts');
SQL
# the postmaster has loaded the library and the tserver runs its binary:
# another install since the start would make the build above uncertain
[ "$(installed)" = "${build_id%%:*}" ] || build_id="$build_id (WARNING: the installed files changed during the start, now $(installed))"

status=0
tsv="$dir/runs.tsv"
printf 'run\tside\tmeasure\tvalue\tprocessed\tfailed\n' >"$tsv"

# record RUN SIDE MEASURE VALUE [PROCESSED FAILED]
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" "${6:-}" >>"$tsv"; }

# init RUN SIDE STEP: pgbench -i with generation step g or G; records the time
init()
{
	local run=$1 side=$2 step=$3 steps out secs
	if [ "$side" = tcopy ]; then steps=$step; else steps="dt${step}p"; fi
	if ! out=$(pgbench_db "$side" -i -I "$steps" -s "$scale" 2>&1); then
		echo "run $run, $side: pgbench -i -I $steps failed:" >&2
		echo "$out" >&2
		record "$run" "$side" "init $step" failed
		status=1
		return
	fi
	secs=$(sed -n 's/^done in \([0-9.]*\) s.*/\1/p' <<<"$out")
	record "$run" "$side" "init $step" "$secs"
	echo "run $run, $side: -I $steps: $secs s" >&2
}

# The invariant of pgbench's TPC-B-like script on SIDE: "ok", or what differs.
invariant()
{
	psql_db "$1" -c "
		SELECT CASE WHEN a = d AND b = d AND t = d THEN 'ok'
			ELSE format('abalance %s, bbalance %s, tbalance %s, delta %s', a, b, t, d) END
		FROM (SELECT (SELECT sum(abalance) FROM pgbench_accounts) a,
			(SELECT sum(bbalance) FROM pgbench_branches) b,
			(SELECT sum(tbalance) FROM pgbench_tellers) t,
			(SELECT coalesce(sum(delta), 0) FROM pgbench_history) d) s"
}

# tserver_counters: "WAL_SYNCS SESSIONS_COMMITTED" from the tserver's
# stats, or nothing when they could not be read (tserver-cli runs as the
# user the tserver admits by uid)
tserver_counters()
{
	as_pg "$tserver_cli" --address "unix:$dir/ts.sock" stats 2>/dev/null |
		awk -F': ' '$1 == "wal_syncs" { s = $2 } $1 == "sessions_committed" { c = $2 }
			END { if (s != "" && c != "") print s, c }' || true
}

# latencies PREFIX: "N P50 P95 P99" (ms) of the committed transactions in
# pgbench's --log files PREFIX.* (one per thread; the third field is the
# latency in microseconds, or "failed"), by nearest rank; nothing if none
latencies()
{
	cat "$1".* 2>/dev/null | awk '$3 ~ /^[0-9]+$/ { print $3 }' | sort -n |
		awk 'function at(p,   i) { i = int(p * NR); if (i < p * NR) i++; if (i < 1) i = 1; return a[i] / 1000 }
			{ a[NR] = $1 }
			END { if (NR) printf "%d %.3f %.3f %.3f\n", NR, at(0.50), at(0.95), at(0.99) }' || true
}

# ratio_of A B: A / B to 4 decimals, or "failed" when B is not above 0
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.4f\n", a / b; else print "failed" }'; }

# bench RUN SIDE SCRIPT CLIENTS MODE: one pgbench run (SCRIPT tpcb or
# select, MODE the query mode); records tps, and for tpcb the latency
# percentiles and, on tcopy, the tserver's syncs
bench()
{
	local run=$1 side=$2 script=$3 c=$4 mode=$5 out tps processed failed threads=$(( $4 < 2 ? $4 : 2 ))
	local key="$script c$c $mode" prefix="$dir/log/r$1-$2-$3-c$4-$5"
	local args=(-n -c "$c" -j "$threads" -T "$seconds" -M "$mode")
	[ "$script" = select ] && args+=(-S)
	[ "$script" = tpcb ] && args+=(--log --log-prefix="$prefix")
	local history_before counters_before="" counters_after=""
	history_before=$(psql_db "$side" -c "SELECT count(*) FROM pgbench_history")
	[ "$script" = tpcb ] && [ "$side" = tcopy ] && counters_before=$(tserver_counters)
	local ok=1
	if ! out=$(pgbench_db "$side" "${args[@]}" 2>&1); then
		echo "run $run, $side: pgbench ${args[*]} failed:" >&2
		grep -E 'error|aborted' <<<"$out" | sed 's/client [0-9]*/client N/' | sort | uniq -c | head -5 >&2
		status=1
		ok=0
	fi
	[ "$script" = tpcb ] && [ "$side" = tcopy ] && counters_after=$(tserver_counters)
	tps=$(awk '/^tps = / { print $3; exit }' <<<"$out")
	[ "$ok" = 1 ] || tps=failed
	processed=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
	failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out")
	[ -n "$failed" ] && [ "$failed" != 0 ] && status=1
	record "$run" "$side" "$key" "${tps:-failed}" "$processed" "$failed"
	echo "run $run, $side: ${args[*]%%--log-prefix=*}: tps ${tps:-?}, $processed processed, ${failed:-?} failed" >&2
	[ "$script" = tpcb ] || return 0

	local n p50 p95 p99
	read -r n p50 p95 p99 < <(latencies "$prefix"; echo)
	if [ -n "$n" ]; then
		record "$run" "$side" "latency p50 $key" "$p50" "$n"
		record "$run" "$side" "latency p95 $key" "$p95" "$n"
		record "$run" "$side" "latency p99 $key" "$p99" "$n"
		echo "run $run, $side: latency of $n committed: p50 $p50 ms, p95 $p95 ms, p99 $p99 ms" >&2
	else
		echo "run $run, $side: no latencies in $prefix.*" >&2
	fi
	[ "$keep" = 1 ] || rm -f "$prefix".*

	if [ "$side" = tcopy ]; then
		local s0 c0 s1 c1
		read -r s0 c0 <<<"$counters_before"
		read -r s1 c1 <<<"$counters_after"
		if [ -n "$s0" ] && [ -n "$s1" ]; then
			record "$run" tcopy "wal_syncs $key" $((s1 - s0)) "$processed"
			record "$run" tcopy "sessions_committed $key" $((c1 - c0)) "$processed"
			record "$run" tcopy "syncs/session $key" "$(ratio_of $((s1 - s0)) $((c1 - c0)))"
			record "$run" tcopy "syncs/xact $key" "$(ratio_of $((s1 - s0)) "${processed:-0}")"
			record "$run" tcopy "sessions/xact $key" "$(ratio_of $((c1 - c0)) "${processed:-0}")"
			echo "run $run, tcopy: tserver: $((s1 - s0)) wal_syncs, $((c1 - c0)) sessions committed" >&2
		else
			echo "run $run, tcopy: could not read the tserver's counters ($tserver_cli stats)" >&2
		fi
	fi

	local check history
	[ -n "$processed" ] || return 0
	check=$(invariant "$side")
	history=$(psql_db "$side" -c "SELECT count(*) FROM pgbench_history")
	if [ "$check" != ok ] || [ "$history" != $((history_before + processed)) ]; then
		echo "run $run, $side: after TPC-B-like, $check; history $history rows, want $((history_before + processed))" >&2
		record "$run" "$side" "invariant c$c $mode" failed
		status=1
	fi
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for run in $(seq "$runs"); do
	if [ $((run % 2)) = 1 ]; then sides="tcopy heap"; else sides="heap tcopy"; fi
	for side in $sides; do
		init "$run" "$side" g
		init "$run" "$side" G
		if [ "$side" = tcopy ]; then
			psql_db tcopy -c "ANALYZE pgbench_accounts, pgbench_branches, pgbench_tellers, pgbench_history"
		else
			pgbench_db heap -i -I v >/dev/null 2>&1
		fi
		for c in $clients; do for mode in $modes; do bench "$run" "$side" select "$c" "$mode"; done; done
		for c in $clients; do for mode in $modes; do bench "$run" "$side" tpcb "$c" "$mode"; done; done
	done
done

echo
echo "pgbench, scale $scale, $runs run(s), -T $seconds, modes: $modes; started $started, ended $(date -u '+%H:%M UTC');" \
	"load average $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; the script from git $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?');" \
	"$build_id"
echo
report "$tsv"
echo
echo "(Every figure: $tsv)"
exit $status
