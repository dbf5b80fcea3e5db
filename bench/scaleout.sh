#!/usr/bin/env bash
# bench/scaleout.sh: the accounts rows loaded into 1, 2 and 4 tservers through
# a hash-partitioned table, beside a single tcopy table and Postgres' COPY
# into heap tables partitioned the same way; then the partitioned load over
# tcp: through a relay adding round-trip latency (issue 16).
#
#   bench/scaleout.sh [--rows N] [--runs R] [--configs LIST] [--latency LIST]
#                     [--latency-tservers N] [--keep]
#
# Configs (--configs, comma-separated; default all):
#   heap    Postgres COPY into a LOGGED heap table PARTITION BY HASH (aid), 4
#           partitions, with pgbench_accounts' primary key
#   heapu   the same with UNLOGGED partitions and no index
#   single  tcopy: one foreign table on 1 tserver (the COPY hook)
#   g3      tcopy: the same table on a replica group of 3 tservers
#           (docs/replication.md), all on this machine: the group's leader
#           ships every batch and file to the two others through its log,
#           over its raft port in TLS (a group CA and a certificate each,
#           made with openssl)
#   g3c     the same group with --raft-insecure-cleartext: no TLS
#   p1, p2, p4
#           tcopy: a table PARTITION BY HASH (aid) whose 4 partitions are
#           foreign tables on 1, 2 or 4 tservers (partition i on tserver
#           i mod n); each tserver its own process and data directory
# Latency (--latency, space-separated DELAY:WINDOW; "" for none; default
# "direct:4 0:4 100:4 500:4 5000:1 5000:4 5000:16 5000:64"): config p2 (or
# p<--latency-tservers>) over tcp:127.0.0.1, each tserver behind its own
# delay_relay adding DELAY microseconds each way (a round trip 2 x DELAY
# longer; "direct": no relay), with tcopy.batches_in_flight = WINDOW.
#
# Every item runs R times (default 3), round-robin (round 1: A B C ..., round
# 2: A B C ...) so that drift on a shared machine hits all alike; each run
# starts fresh tservers on empty data directories and a fresh database.
# Input: bench/gen_data.awk's accounts rows (sorted by aid), shared with
# bench/run.sh's dataset cache.  Per run: wall time (psql \timing of COPY +
# COMMIT), the backend's CPU (utime + stime) and VmHWM, each tserver's and
# relay's CPU and VmHWM, the bytes the backend wrote (wchar: for tcopy, what
# it sent to the tservers), read by \! in the COPY's own session before and
# after.  Prints markdown tables of medians; raw figures in $BENCH_DIR/runs.tsv.
#
# Environment: ROWS, RUNS (as --rows, --runs), TSERVER (the tserver binary;
# default the one installed beside Postgres), TSERVER_B (the binary of the
# items whose name ends in +b, such as g3+b: two builds side by side in one
# run), RESULTS_NAME (the raw figures go to bench/results/NAME_runs.tsv;
# default scaleout), BENCH_DIR (default
# /var/tmp/tcopyb-scaleout), DATA_DIR (the datasets; default run.sh's,
# /var/tmp/tcopy-bench/data), PG_CONFIG, BENCH_USER (Postgres' user when run
# as root; default postgres), BENCH_PORT (default 54470; tserver tcp:
# listeners take the next 4 ports, relays the 4 from +11), DELAY_RELAY (the
# relay binary; default build/delay_relay, built by make -C test relay).
set -euo pipefail

args_given="$*"
rows=${ROWS:-10000000}
runs=${RUNS:-3}
configs="heap,heapu,single,p1,p2,p4"
latency="direct:4 0:4 100:4 500:4 5000:1 5000:4 5000:16 5000:64"
lat_n=2
keep=0
report_only=""
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
		--configs) configs=${2?}; shift 2 ;;
		--latency) latency=${2?}; shift 2 ;;
		--latency-tservers) lat_n=${2:?}; shift 2 ;;
		--keep) keep=1; shift ;;
		--report) report_only=${2:?}; shift 2 ;;
		*) sed -n '7,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done

# report TSV: markdown tables of the medians in TSV (this script's raw figures)
report()
{
	awk -F'\t' '
function commas(x,    s) { s = sprintf("%d", x); while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]($|,)/, ",&", s); return s }
function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function minmax(list,    n, a, i, lo, hi) {
	n = split(list, a, " "); lo = hi = a[1]
	for (i = 2; i <= n; i++) { if (a[i] + 0 < lo + 0) lo = a[i]; if (a[i] + 0 > hi + 0) hi = a[i] }
	return sprintf("%.2f–%.2f", lo, hi)
}
# per-process medians of a comma list column
function permed(key, col,    k, n, s, out) {
	n = nproc[key, col]; out = ""
	for (k = 1; k <= n; k++) out = out (k > 1 ? " / " : "") sprintf(col == "hwm" || col == "disk" ? "%.0f" : "%.2f", median(vals[key, col, k]) / (col == "hwm" ? 1024 : 1))
	return n ? out : "–"
}
function summed(key, col,    k, s) { s = 0; for (k = 1; k <= nproc[key, col]; k++) s += median(vals[key, col, k]); return s }
function maxmed(key, col,    k, s, m) { m = 0; for (k = 1; k <= nproc[key, col]; k++) { s = median(vals[key, col, k]); if (s > m) m = s }; return m }
function addlist(key, col, s,    a, n, k) {
	if (s == "-") return
	n = split(s, a, ","); nproc[key, col] = n
	for (k = 1; k <= n; k++) vals[key, col, k] = vals[key, col, k] " " a[k]
}
$1 == "#about" { print $2; print ""; next }
$1 == "#gucs" { gucs = $2; next }
$1 == "round" { next }
{ rows = $4 }
$3 != "ok" { failed[$2]++; next }
{
	k = $2
	if (!(k in seen)) { seen[k] = 1; order[++n] = k }
	wall[k] = wall[k] " " $7; bcpu[k] = bcpu[k] " " $9; bhwm[k] = bhwm[k] " " $10; wch[k] = wch[k] " " $11; cnt[k]++
	commit[k] = commit[k] " " $8
	addlist(k, "cpu", $12); addlist(k, "hwm", $13); addlist(k, "relay", $14); if (NF >= 15) addlist(k, "disk", $15)
}
END {
	label["heap"] = "Postgres COPY, logged heap, 4 hash partitions + PK"
	label["heapu"] = "Postgres COPY, unlogged heap, 4 hash partitions, no index"
	label["single"] = "tcopy, one table, 1 tserver"
	label["p1"] = "tcopy, 4 hash partitions, 1 tserver"
	label["p2"] = "tcopy, 4 hash partitions, 2 tservers"
	label["p4"] = "tcopy, 4 hash partitions, 4 tservers"
	hw = ("heap" in seen) ? median(wall["heap"]) : 0
	sw = ("single" in seen) ? median(wall["single"]) : 0
	print "| config | wall s: median (min–max) | of which COMMIT s | rows/s | × heap logged | × single | backend CPU s | backend VmHWM MB | tserver CPU s, each | tserver VmHWM MB, each | tserver disk writes MB, each | CPU s total / wall (cores busy) | runs |"
	print "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= n; i++) {
		k = order[i]; if (k ~ /^tcp:/) continue
		w = median(wall[k]); b = median(bcpu[k]); t = summed(k, "cpu")
		printf "| %s | %.2f (%s) | %.2f | %s | %s | %s | %.2f | %.0f | %s | %s | %s | %.2f | %d%s |\n", label[k] ? label[k] : k, w, minmax(wall[k]),
			median(commit[k]), commas(rows / w), hw ? sprintf("%.2f", hw / w) : "–", sw ? sprintf("%.2f", sw / w) : "–", b, median(bhwm[k]) / 1024,
			permed(k, "cpu"), permed(k, "hwm"), permed(k, "disk"), (b + t) / w, cnt[k], failed[k] ? " (" failed[k] " failed)" : ""
	}
	lat = 0; for (i = 1; i <= n; i++) if (order[i] ~ /^tcp:/) lat = 1
	if (!lat) exit
	split(gucs, g, "; "); for (x in g) { split(g[x], kv, " = "); guc[kv[1]] = kv[2] }
	br = guc["tcopy.batch_rows"]
	print ""
	print "| added RTT ms | window (batches in flight per tserver) | wall s: median (min–max) | rows/s | × direct tcp | backend CPU s | tserver CPU s, each | relay CPU s, each | bytes sent per row | window × batch per tserver, KB | needed per tserver for direct tcp rows/s: rate × RTT, KB | cap of the window: tservers × window × batch_rows / RTT, rows/s | runs |"
	print "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= n; i++) if (order[i] ~ /^tcp:direct:/) dw = median(wall[order[i]])
	for (i = 1; i <= n; i++) {
		k = order[i]; if (k !~ /^tcp:/) continue
		split(k, p, ":"); w = median(wall[k])
		bpr = median(wch[k]) / rows
		rtt = p[2] == "direct" ? 0 : 2 * p[2] / 1000
		nts = nproc[k, "cpu"]
		printf "| %s | %d | %.2f (%s) | %s | %s | %.2f | %s | %s | %.1f | %.0f | %s | %s | %d%s |\n", p[2] == "direct" ? "0 (no relay)" : rtt, p[3], w,
			minmax(wall[k]), commas(rows / w), dw ? sprintf("%.2f", dw / w) : "–", median(bcpu[k]), permed(k, "cpu"), permed(k, "relay"),
			bpr, p[3] * br * bpr / 1024, rtt && dw ? sprintf("%.0f", rows / dw / nts * bpr * rtt / 1000 / 1024) : "–",
			rtt ? commas(nts * p[3] * br / (rtt / 1000)) : "–", cnt[k], failed[k] ? " (" failed[k] " failed)" : ""
	}
}' "$1"
}
[ -z "$report_only" ] || { report "$report_only"; exit; }

top=$(cd "$(dirname "$0")/.." && pwd)
bindir=$("${PG_CONFIG:-pg_config}" --bindir)
work=${BENCH_DIR:-/var/tmp/tcopyb-scaleout}
data=${DATA_DIR:-/var/tmp/tcopy-bench/data}
port=${BENCH_PORT:-54470}
parts=4
say() { echo "[$(date +%H:%M:%S)] $*" >&2; }
die() { say "error: $*"; exit 1; }

if [ "$(id -u)" -eq 0 ]; then
	pg_user=${BENCH_USER:-postgres}
	as_pg() { runuser -u "$pg_user" -- "$@"; }
else
	pg_user=$(id -un)
	as_pg() { "$@"; }
fi

items=()
for c in ${configs//,/ }; do items+=("$c"); done
for l in $latency; do items+=("tcp:$l"); done
[ ${#items[@]} -gt 0 ] || die "nothing to run"
relay=""
if [ -n "$latency" ]; then
	relay=${DELAY_RELAY:-$top/build/delay_relay}
	if [ ! -x "$relay" ] && [ -f "$top/test/tools/delay_relay.c" ]; then
		make -C "$top/test" relay >/dev/null || die "make -C test relay failed"
	fi
	[ -x "$relay" ] || die "no delay_relay ($relay; set DELAY_RELAY, or --latency '')"
fi

# ---------------------------------------------------------------- dataset
# the accounts rows as bench/run.sh makes them, in the same cache
file="$data/accounts_$rows.csv"
if ! [ -f "$file.done" ]; then
	say "generating $file"
	mkdir -p "$data"
	awk -v kind=accounts -v rows="$rows" -f "$top/bench/gen_data.awk" >"$file.tmp.$$"
	chmod 644 "$file.tmp.$$"
	mv "$file.tmp.$$" "$file"
	touch "$file.done"
fi
cat "$file" >/dev/null

# ---------------------------------------------------------------- cluster
tserver_pids=()
relay_pids=()
stop_servers()
{
	local p
	for p in "${relay_pids[@]}" "${tserver_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${relay_pids[@]}" "${tserver_pids[@]}"; do
		for _ in $(seq 600); do [ -e "/proc/$p" ] || break; sleep 0.05; done
	done
	tserver_pids=()
	relay_pids=()
	rm -rf "$work"/ts_?
}
cleanup()
{
	stop_servers
	[ -f "$work/pg/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$work/pg" -m fast stop >/dev/null 2>&1
	[ "$keep" = 1 ] || rm -rf "$work/pg"
}
# a previous run's cluster (its tservers died with their data directories' removal below)
[ -f "$work/pg/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1
rm -rf "$work"
mkdir -p "$work"
[ "$(id -u)" -eq 0 ] && chown "$pg_user" "$work"
trap cleanup EXIT
trap 'exit 130' INT TERM

token=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
(umask 077 && echo "$token" >"$work/token")
[ "$(id -u)" -eq 0 ] && chown "$pg_user" "$work/token"

say "starting the cluster in $work/pg"
as_pg "$bindir/initdb" -D "$work/pg" -U postgres -E UTF8 --locale=C --no-sync -A trust >"$work/initdb.log" 2>&1 ||
	{ cat "$work/initdb.log" >&2; die "initdb failed"; }
# bench/run.sh's settings
as_pg tee -a "$work/pg/postgresql.conf" >/dev/null <<EOF
listen_addresses = ''
port = $port
unix_socket_directories = '$work'
shared_preload_libraries = 'tcopy'
shared_buffers = 1GB
max_wal_size = 16GB
min_wal_size = 1GB
checkpoint_timeout = 60min
wal_buffers = 16MB
autovacuum = off
jit = off
max_connections = 20
fsync = on
synchronous_commit = on
full_page_writes = on
log_min_messages = warning
EOF
as_pg "$bindir/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w start >/dev/null || die "the cluster did not start"
psql_c() { as_pg "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U postgres "$@"; }
# a template with the servers: ts_i (unix:), tt_i (tcp: through relay i),
# td_i (tcp: straight to tserver i)
{
	echo "CREATE DATABASE tmpl;"
	echo '\c tmpl'
	echo "CREATE EXTENSION tcopy;"
	echo "CREATE SERVER tg FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$work/ts_0.sock,unix:$work/ts_1.sock,unix:$work/ts_2.sock');"
	echo "CREATE USER MAPPING FOR PUBLIC SERVER tg;"
	for i in $(seq 0 $((parts - 1))); do
		echo "CREATE SERVER ts_$i FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$work/ts_$i.sock');"
		echo "CREATE USER MAPPING FOR PUBLIC SERVER ts_$i;"
		echo "CREATE SERVER tt_$i FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:127.0.0.1:$((port + 11 + i))', sslmode 'disable');"
		echo "CREATE USER MAPPING FOR PUBLIC SERVER tt_$i OPTIONS (token '$token');"
		echo "CREATE SERVER td_$i FOREIGN DATA WRAPPER tcopy OPTIONS (address 'tcp:127.0.0.1:$((port + 1 + i))', sslmode 'disable');"
		echo "CREATE USER MAPPING FOR PUBLIC SERVER td_$i OPTIONS (token '$token');"
	done
} | psql_c -d postgres >/dev/null
gucs=$(psql_c -d tmpl -c "SELECT string_agg(name || ' = ' || setting || coalesce(unit, ''), '; ' ORDER BY name) FROM pg_settings WHERE name IN ('tcopy.batch_rows', 'tcopy.batch_size', 'tcopy.batches_in_flight', 'tcopy.copy_batch_memory')")

# probe.sh TAG: run by psql's \! in the COPY's session: a line of clock,
# then pid:cpu_ticks:VmHWM_kB:wchar:write_bytes for the backend ($BPID) and
# $WATCH_PIDS (the relays' /proc/PID/io, root's, reads as 0)
cat >"$work/probe.sh" <<'EOF'
line="$1 $(date +%s.%N)"
for p in $BPID $WATCH_PIDS; do
	s=$(cat /proc/$p/stat); s=${s##*) }; set -- $s
	line="$line $p:$((${12} + ${13})):$(awk '/^VmHWM/ { print $2 }' /proc/$p/status):$(awk '/^wchar/ { w = $2 } /^write_bytes/ { b = $2 } END { print w + 0 ":" b + 0 }' /proc/$p/io 2>/dev/null || echo 0:0)"
done
# bytes the backend's tcp: connections to $SS_PORTS sent (tcp_info; wchar does not count send(2))
if [ -n "$SS_PORTS" ]; then
	f=""; for p in $SS_PORTS; do f="$f${f:+ or }dport = :$p"; done
	line="$line sent:$(ss -Htin state established "( $f )" | tr ' ' '\n' | awk -F: '$1 == "bytes_sent" { s += $2 } END { print s + 0 }')"
fi
echo "$line" >>"$PROBE_OUT"
EOF
chmod 755 "$work/probe.sh"

# ---------------------------------------------------------------- one run
# start_tservers N TCP DELAY GROUP BIN: N fresh tservers of BIN (with tcp: listeners
# when TCP is 1), and a relay in front of each when DELAY is a number; with
# GROUP 1 (c: in the clear), the N are one replica group (raft ports from
# port + 21, in TLS)
start_tservers()
{
	local n=$1 tcp=$2 delay=$3 group=${4:-0} bin=$5 i log args boot=""
	if [ "$group" != 0 ]; then
		openssl rand -hex 32 >"$work/raft.secret"
		chown "$pg_user" "$work/raft.secret" 2>/dev/null || true
		chmod 600 "$work/raft.secret"
		# the group's CA and a certificate of it for each member (README)
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
			-subj "/CN=bench group CA" -keyout "$work/raft_ca.key" -out "$work/raft_ca.crt" 2>/dev/null
		for i in $(seq 0 $((n - 1))); do
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
				-subj "/CN=member $((i + 1))" -keyout "$work/raft_$i.key" -out "$work/raft_$i.csr" 2>/dev/null
			openssl x509 -req -in "$work/raft_$i.csr" -CA "$work/raft_ca.crt" -CAkey "$work/raft_ca.key" \
				-CAcreateserial -days 2 -out "$work/raft_$i.crt" 2>/dev/null
			chown "$pg_user" "$work/raft_$i.key" 2>/dev/null || true
			chmod 600 "$work/raft_$i.key"
		done
		for i in $(seq 0 $((n - 1))); do boot="$boot${boot:+,}$((i + 1))@127.0.0.1:$((port + 21 + i))"; done
	fi
	for i in $(seq 0 $((n - 1))); do
		log="$work/ts_$i.log"
		args=(--data "$work/ts_$i" --listen "unix:$work/ts_$i.sock" --session-memory-mb 64 --allow-uid "$pg_user")
		[ "$tcp" = 1 ] && args+=(--listen "tcp:127.0.0.1:$((port + 1 + i))" --token-file "$work/token")
		[ "$group" != 0 ] && args+=(--raft-id $((i + 1)) --raft-listen "127.0.0.1:$((port + 21 + i))"
			--raft-secret-file "$work/raft.secret" --raft-bootstrap "$boot")
		[ "$group" = 1 ] && args+=(--raft-tls-cert "$work/raft_$i.crt" --raft-tls-key "$work/raft_$i.key"
			--raft-tls-ca "$work/raft_ca.crt")
		[ "$group" = c ] && args+=(--raft-insecure-cleartext)
		rm -rf "$work/ts_$i" "$log" "$work/ts_$i.pid"
		as_pg bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$work/ts_$i.pid" "$bin" "${args[@]}" \
			>/dev/null 2>"$log" &
		for _ in $(seq 600); do grep -q "tserver ready" "$log" 2>/dev/null && break; sleep 0.05; done
		grep -q "tserver ready" "$log" || { cat "$log" >&2; return 1; }
		tserver_pids+=("$(cat "$work/ts_$i.pid")")
		if [ "$tcp" = 1 ] && [ "$delay" != direct ]; then
			"$relay" --listen "127.0.0.1:$((port + 11 + i))" --upstream "127.0.0.1:$((port + 1 + i))" \
				--delay-us "$delay" >"$work/relay_$i.log" 2>&1 &
			relay_pids+=($!)
			for _ in $(seq 100); do grep -q "relay ready" "$work/relay_$i.log" && break; sleep 0.05; done
			grep -q "relay ready" "$work/relay_$i.log" || { cat "$work/relay_$i.log" >&2; return 1; }
		fi
	done
}

cols="aid int NOT NULL, bid int, abalance int, filler char(84)"
# ddl ITEM: the target table acc
ddl()
{
	local i n srv
	case "$1" in
		heap|heapu)
			echo "CREATE TABLE acc ($cols$([ "$1" = heap ] && echo ", PRIMARY KEY (aid)")) PARTITION BY HASH (aid);"
			for i in $(seq 0 $((parts - 1))); do
				echo "CREATE $([ "$1" = heapu ] && echo UNLOGGED) TABLE acc_$i PARTITION OF acc FOR VALUES WITH (MODULUS $parts, REMAINDER $i);"
			done ;;
		single) echo "CREATE FOREIGN TABLE acc ($cols) SERVER ts_0 OPTIONS (key 'aid');" ;;
		g3|g3c) echo "CREATE FOREIGN TABLE acc ($cols) SERVER tg OPTIONS (key 'aid');" ;;
		p*|tcp:*)
			if [[ $1 == tcp:direct:* ]]; then n=$lat_n srv=td; elif [[ $1 == tcp:* ]]; then n=$lat_n srv=tt; else n=${1#p} srv=ts; fi
			echo "CREATE TABLE acc ($cols) PARTITION BY HASH (aid);"
			for i in $(seq 0 $((parts - 1))); do
				echo "CREATE FOREIGN TABLE acc_$i PARTITION OF acc FOR VALUES WITH (MODULUS $parts, REMAINDER $i) SERVER ${srv}_$((i % n)) OPTIONS (key 'aid');"
			done ;;
	esac
}

tsv="$work/runs.tsv"
printf 'round\titem\tstatus\trows\tcopied\tcount\twall_s\tcommit_s\tb_cpu_s\tb_hwm_kb\tb_sent_bytes\tts_cpu_s\tts_hwm_kb\trelay_cpu_s\tts_disk_write_mb\n' >"$tsv"
clk=$(getconf CLK_TCK)
failures=0

run_item()
{
	local round=$1 item=$2 n=0 tcp=0 delay="" settings="" status=ok out="$work/run.out" group=0
	local base=${item%+b} bin=${TSERVER:-$bindir/tserver}
	[ "$base" != "$item" ] && bin=${TSERVER_B:?an item ending in +b runs TSERVER_B, unset}
	case "$base" in
		single|p1) n=1 ;; p2) n=2 ;; p4) n=4 ;; g3) n=3 group=1 ;; g3c) n=3 group=c ;;
		tcp:*) n=$lat_n tcp=1 delay=$(cut -d: -f2 <<<"$base")
			settings="SET tcopy.batches_in_flight = $(cut -d: -f3 <<<"$base");" ;;
	esac
	say "round $round: $item"
	[ "$n" -gt 0 ] && { start_tservers "$n" "$tcp" "$delay" "$group" "$bin" || status=FAIL; }
	psql_c -d postgres -c "CREATE DATABASE run TEMPLATE tmpl" && ddl "$base" | psql_c -d run >/dev/null && psql_c -d run -c CHECKPOINT ||
		status=FAIL
	sync
	rm -f "$work/probe.out"
	if [ "$status" = ok ]; then
		ss_ports=""
		if [ "$tcp" = 1 ]; then
			off=11
			[ "$delay" = direct ] && off=1
			for i in $(seq 0 $((n - 1))); do ss_ports="$ss_ports $((port + off + i))"; done
		fi
		as_pg env PROBE_OUT="$work/probe.out" WATCH_PIDS="${tserver_pids[*]} ${relay_pids[*]}" SS_PORTS="$ss_ports" \
			"$bindir/psql" -X -At -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U postgres -d run >"$out" 2>"$work/run.err" <<-EOF || status=FAIL
			$settings
			SELECT pg_backend_pid() AS bpid \gset
			\setenv BPID :bpid
			\! sh $work/probe.sh before
			\timing on
			BEGIN;
			COPY acc FROM '$file' (FORMAT csv);
			COMMIT;
			\timing off
			\! sh $work/probe.sh after
			SELECT 'count=' || count(*) FROM acc;
		EOF
	fi
	local nts=${#tserver_pids[@]}
	stop_servers
	psql_c -d postgres -c "DROP DATABASE IF EXISTS run WITH (FORCE)" || true
	[ "$status" = ok ] || { failures=$((failures + 1)); say "FAILED: $(head -3 "$work/run.err" 2>/dev/null)"; }
	# pid:ticks:hwm:wchar fields 3.. of probe.out's two lines: backend first,
	# then the tservers, then the relays
	awk -v round="$round" -v item="$item" -v status="$status" -v rows="$rows" -v clk="$clk" \
		-v nts="$nts" -v out="$out" '
		function f(s, k,   a) { split(s, a, ":"); return a[k] }
		$NF ~ /^sent:/ { sent[$1] = substr($NF, 6); NF-- }
		$1 == "before" { for (i = 3; i <= NF; i++) b[i] = $i; nb = NF }
		$1 == "after" { for (i = 3; i <= NF; i++) a[i] = $i; na = NF }
		END {
			while ((getline l < out) > 0) {
				if (l ~ /^COPY [0-9]+$/) { split(l, w, " "); copied = w[2]; want = "copy" }
				else if (l ~ /^COMMIT$/) want = "commit"
				else if (l ~ /^Time: / && want != "") { split(l, w, " "); t[want] = w[2] / 1000; want = "" }
				else if (l ~ /^count=/) count = substr(l, 7)
			}
			if (copied != rows || count != rows || !("commit" in t)) status = "FAIL"
			ts = ""; th = ""; rl = ""
			for (i = 4; i <= na; i++) {
				cpu = sprintf("%.2f", (f(a[i], 2) - f(b[i], 2)) / clk)
				if (i - 3 <= nts) {
					ts = ts (ts == "" ? "" : ",") cpu; th = th (th == "" ? "" : ",") f(a[i], 3)
					tw = tw (tw == "" ? "" : ",") sprintf("%.0f", (f(a[i], 5) - f(b[i], 5)) / 1048576)
				}
				else rl = rl (rl == "" ? "" : ",") cpu
			}
			printf "%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%.3f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\n", round, item, status, rows,
				copied, count, t["copy"] + t["commit"], t["commit"], (f(a[3], 2) - f(b[3], 2)) / clk,
				f(a[3], 3), ("after" in sent) ? sent["after"] - sent["before"] : f(a[3], 4) - f(b[3], 4), ts == "" ? "-" : ts, th == "" ? "-" : th, rl == "" ? "-" : rl, tw == "" ? "-" : tw
		}' "$work/probe.out" >>"$tsv" 2>/dev/null || printf '%s\t%s\tFAIL\n' "$round" "$item" >>"$tsv"
	tail -1 "$tsv" | cut -f3,7,9,12 | sed 's/^/    status, wall, backend cpu, tserver cpu: /' >&2
}

t0=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$runs"); do
	for item in "${items[@]}"; do run_item "$round" "$item"; done
done

# ---------------------------------------------------------------- report
{
	printf '#about\tbench/scaleout.sh%s: %s accounts rows (sorted by aid, %s bytes), %s round(s) in %s min; %s cores, load %s -> %s; git %s\n' \
		"${args_given:+ $args_given}" "$rows" "$(stat -c %s "$file")" "$runs" "$(( ($(date +%s) - t0) / 60 ))" "$(nproc)" \
		"$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(git -C "$top" rev-parse --short HEAD)"
	printf '#gucs\t%s\n' "$gucs"
	cat "$tsv"
} >"$tsv.new"
mv "$tsv.new" "$tsv"
report "$tsv"
mkdir -p "$top/bench/results"
cp "$tsv" "$top/bench/results/${RESULTS_NAME:-scaleout}_runs.tsv"
[ "$failures" = 0 ] || { say "$failures run(s) failed"; exit 1; }
