#!/usr/bin/env bash
# bench/pgbench.sh: pgbench on tcopy tables beside heap tables, with the
# installed extension and tserver (issue 15).
#
#   bench/pgbench.sh [--scale S] [--seconds T] [--runs R] [--clients "1 4"] [--keep]
#
# A throwaway cluster (tcopy in shared_preload_libraries, logged tables,
# fsync and synchronous_commit on) and tserver, and two databases:
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
# runs use), ANALYZE (not timed), select-only at each client count, then
# the TPC-B-like script at each client count, T seconds each (default
# 30), all with -n (no VACUUM, which foreign tables do not have) and -j
# min(clients, 2).  The init times are pgbench's own ("done in X s").
# After each TPC-B-like run pgbench's invariant is checked (the balances'
# sums equal the history's, one history row per transaction processed).
# Prints a markdown table of medians (min-max) and tcopy/heap ratios, and
# keeps every figure in $PGB_DIR/runs.tsv.  Exit status 1 when a pgbench
# failed or an invariant did not hold (the table is printed either way).
#
# Environment: PG_CONFIG, PGB_DIR (default /var/tmp/tcopy-pgbench), PGB_PORT
# (default 54360), PGB_USER (the user Postgres runs as when run as root,
# default postgres).
set -euo pipefail

scale=10
seconds=30
runs=3
clients="1 4"
keep=0
while [ $# -gt 0 ]; do
	case "$1" in
		--scale) scale=${2:?}; shift 2 ;;
		--seconds) seconds=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
		--clients) clients=${2:?}; shift 2 ;;
		--keep) keep=1; shift ;;
		*) sed -n '5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done

bindir=$("${PG_CONFIG:-pg_config}" --bindir)
dir=${PGB_DIR:-/var/tmp/tcopy-pgbench}
port=${PGB_PORT:-54360}
user=${PGB_USER:-postgres}
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi; }
psql_db() { local db=$1; shift; as_pg "$bindir/psql" -h "$dir" -p "$port" -U postgres -qXAt -v ON_ERROR_STOP=1 "$@" "$db"; }
pgbench_db() { local db=$1; shift; as_pg "$bindir/pgbench" -h "$dir" -p "$port" -U postgres "$@" "$db"; }

rm -rf "$dir"
mkdir -p "$dir"
[ "$(id -u)" -eq 0 ] && chown "$user" "$dir"
ts_pid=""
cleanup()
{
	as_pg "$bindir/pg_ctl" -D "$dir/pg" -m fast stop >/dev/null 2>&1 || true
	# the tserver's own pid: it was exec'd by the shell that wrote it
	[ -n "$ts_pid" ] && kill -TERM "$ts_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	[ "$keep" = 1 ] || rm -rf "$dir/pg" "$dir/ts"
}
trap cleanup EXIT

# the Postgres cluster runs as the same user: admitted by its uid
as_pg bash -c 'echo $$ >"$1/ts.pid"; exec "$2/tserver" --data "$1/ts" --listen "unix:$1/ts.sock" --allow-uid "$3" 2>"$1/tserver.log"' \
	tserver "$dir" "$bindir" "$user" &
for _ in $(seq 100); do grep -q "tserver ready" "$dir/tserver.log" 2>/dev/null && break; sleep 0.1; done
grep -q "tserver ready" "$dir/tserver.log" || { cat "$dir/tserver.log" >&2; exit 1; }
ts_pid=$(cat "$dir/ts.pid")

as_pg "$bindir/initdb" -D "$dir/pg" -U postgres -A trust -E UTF8 --locale=C >/dev/null
cat >>"$dir/pg/postgresql.conf" <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
shared_preload_libraries = 'tcopy'
max_connections = 20
shared_buffers = 1GB
max_wal_size = 8GB
checkpoint_timeout = 30min
jit = off
EOF
as_pg "$bindir/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w start >/dev/null

psql_db postgres -c "CREATE DATABASE tcopy" -c "CREATE DATABASE heap"
psql_db tcopy <<EOF
CREATE EXTENSION tcopy;
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$dir/ts.sock');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
SELECT tcopy.create_pgbench_tables('ts');
EOF

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

# bench RUN SIDE MODE CLIENTS: one pgbench run (MODE tpcb or select); records tps
bench()
{
	local run=$1 side=$2 mode=$3 c=$4 out tps processed failed threads=$(( $4 < 2 ? $4 : 2 ))
	local args=(-n -c "$c" -j "$threads" -T "$seconds")
	[ "$mode" = select ] && args+=(-S)
	local history_before
	history_before=$(psql_db "$side" -c "SELECT count(*) FROM pgbench_history")
	local ok=1
	if ! out=$(pgbench_db "$side" "${args[@]}" 2>&1); then
		echo "run $run, $side: pgbench ${args[*]} failed:" >&2
		grep -E 'error|aborted' <<<"$out" | sed 's/client [0-9]*/client N/' | sort | uniq -c | head -5 >&2
		status=1
		ok=0
	fi
	tps=$(awk '/^tps = / { print $3; exit }' <<<"$out")
	[ "$ok" = 1 ] || tps=failed
	processed=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
	failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out")
	[ -n "$failed" ] && [ "$failed" != 0 ] && status=1
	record "$run" "$side" "$mode c$c" "${tps:-failed}" "$processed" "$failed"
	echo "run $run, $side: ${args[*]}: tps ${tps:-?}, $processed processed, ${failed:-?} failed" >&2
	if [ "$mode" = tpcb ] && [ -n "$processed" ]; then
		local check history
		check=$(invariant "$side")
		history=$(psql_db "$side" -c "SELECT count(*) FROM pgbench_history")
		if [ "$check" != ok ] || [ "$history" != $((history_before + processed)) ]; then
			echo "run $run, $side: after TPC-B-like, $check; history $history rows, want $((history_before + processed))" >&2
			record "$run" "$side" "invariant c$c" failed
			status=1
		fi
	fi
}

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
		for c in $clients; do bench "$run" "$side" select "$c"; done
		for c in $clients; do bench "$run" "$side" tpcb "$c"; done
	done
done

# ---- the table: medians (min-max), tcopy / heap ----
measures="init g|init G"
for c in $clients; do measures="$measures|tpcb c$c"; done
for c in $clients; do measures="$measures|select c$c"; done
echo
echo "pgbench, scale $scale, $runs run(s), -T $seconds; $(date -u '+%Y-%m-%d %H:%M UTC'), git $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo
echo "| measure | tcopy: median (min-max) | heap: median (min-max) | tcopy / heap |"
echo "|---|---|---|---|"
IFS='|' read -ra list <<<"$measures"
for m in "${list[@]}"; do
	awk -F'\t' -v m="$m" '
		function median(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		function cell(side,   a, n, i, fails) {
			n = 0; fails = 0
			for (i = 1; i <= rows; i++) if (sd[i] == side) { if (v[i] == "failed") fails++; else a[++n] = v[i] + 0 }
			med[side] = n ? median(a, n) : ""
			if (!n) return fails ? "failed" : "-"
			return sprintf("%s %s (%s-%s)%s", num(med[side]), m ~ /^init/ ? "s" : "tps", num(a[1]), num(a[n]),
				fails ? ", " fails " failed" : "")
		}
		function num(x) { return m ~ /^init/ ? sprintf("%.2f", x) : sprintf("%.0f", x) }
		NR > 1 && $3 == m { rows++; sd[rows] = $2; v[rows] = $4 }
		END {
			label = m
			sub(/^init g$/, "`pgbench -i`, client-side (g), time", label)
			sub(/^init G$/, "`pgbench -i`, server-side (G), time", label)
			sub(/^tpcb c/, "TPC-B-like, clients: ", label)
			sub(/^select c/, "select-only, clients: ", label)
			t = cell("tcopy"); h = cell("heap")
			ratio = (med["tcopy"] != "" && med["heap"] != "" && med["heap"] > 0) ? sprintf("%.2f", med["tcopy"] / med["heap"]) : "-"
			printf "| %s | %s | %s | %s |\n", label, t, h, ratio
		}' "$tsv"
done
echo
echo "(init: tcopy/heap < 1 is faster; tps: tcopy/heap > 1 is faster.  Every figure: $tsv)"
exit $status
