#!/usr/bin/env bash
# bench/commit_tps.sh: transactions per second of small COPYs into a tcopy
# table, with the installed extension and tserver: what one commit costs.
#
#   bench/commit_tps.sh [--rows R] [--seconds S] [--clients "1 4"]
#
# A throwaway cluster (tcopy in shared_preload_libraries) and tserver; a
# keyed tcopy table; pgbench runs, for each client count, S seconds of
# transactions that each COPY the same R rows (default 1000) from a CSV
# file (so every transaction overwrites the same keys: the table stays
# small and the measure is the commit, not the growth).  Prints one line
# per client count: clients, tps, average latency in ms.
#
# Environment: PG_CONFIG, TPS_DIR (default /var/tmp/tcopy-tps), TPS_PORT
# (default 54350), TPS_USER (the user Postgres runs as when run as root,
# default postgres).
set -euo pipefail

rows=1000
seconds=15
clients="1 4"
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--seconds) seconds=${2:?}; shift 2 ;;
		--clients) clients=${2:?}; shift 2 ;;
		*) sed -n '5p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done

bindir=$("${PG_CONFIG:-pg_config}" --bindir)
dir=${TPS_DIR:-/var/tmp/tcopy-tps}
port=${TPS_PORT:-54350}
user=${TPS_USER:-postgres}
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi; }

rm -rf "$dir"
mkdir -p "$dir"
[ "$(id -u)" -eq 0 ] && chown "$user" "$dir"
ts_pid=""
cleanup()
{
	as_pg "$bindir/pg_ctl" -D "$dir/pg" -m immediate stop >/dev/null 2>&1 || true
	# as root, $ts_pid is runuser's: signal the tserver itself
	pkill -TERM -f -- "--listen unix:$dir/ts.sock" 2>/dev/null || true
	[ -n "$ts_pid" ] && wait "$ts_pid" 2>/dev/null || true
}
trap cleanup EXIT

# the Postgres cluster runs as the same user: admitted by its uid
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
EOF
as_pg "$bindir/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w start >/dev/null

awk -v n="$rows" 'BEGIN { for (i = 1; i <= n; i++) printf "%d,%d,row %d of a small transaction\n", i, i % 97, i }' \
	>"$dir/rows.csv"
as_pg "$bindir/psql" -h "$dir" -p "$port" -U postgres -qX -v ON_ERROR_STOP=1 postgres <<EOF >/dev/null
CREATE EXTENSION tcopy;
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$dir/ts.sock');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
CREATE FOREIGN TABLE t (id int NOT NULL, n int, payload text) SERVER ts OPTIONS (key 'id', on_conflict 'replace');
COPY t FROM '$dir/rows.csv' (FORMAT csv);
EOF
echo "COPY t FROM '$dir/rows.csv' (FORMAT csv);" >"$dir/copy.sql"

for c in $clients; do
	out=$(as_pg "$bindir/pgbench" -h "$dir" -p "$port" -U postgres -n -c "$c" -j "$c" \
		-T "$seconds" -f "$dir/copy.sql" postgres 2>&1) || { echo "$out" >&2; exit 1; }
	tps=$(awk '/^tps = / { print $3; exit }' <<<"$out")
	lat=$(awk '/^latency average/ { print $4; exit }' <<<"$out")
	printf 'clients=%s tps=%s latency_ms=%s\n' "$c" "$tps" "$lat"
done
count=$(as_pg "$bindir/psql" -h "$dir" -p "$port" -U postgres -qXAt -c "SELECT count(*) FROM t" postgres)
[ "$count" = "$rows" ] || { echo "the table holds $count rows, not $rows" >&2; exit 1; }
