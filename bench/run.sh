#!/usr/bin/env bash
# bench/run.sh: tcopy's COPY benchmark, side by side with Postgres' own COPY.
#
#   bench/run.sh [--rows N] [--runs R] [--quick] [--no-build] [--no-profile]
#                [--no-concurrency] [--clients LIST] [--cases LIST]
#                [--datasets LIST] [--mixed-rows M] [--keep]
#
# One entry point: installs what it lacks from Debian's packages (gnuplot-nox,
# pgbench, tcmalloc, linux-perf), builds and installs tcopy (make && make
# install at the top, unless --no-build), generates the CSV datasets once
# (reused by later runs), starts throwaway Postgres clusters (one with glibc
# malloc, one with tcmalloc preloaded into the postmaster) and a fresh
# tserver per run, runs every case R times alternating them (A B C A B C,
# so that drift on a shared machine hits all alike), then a pgbench-style
# concurrent load and a perf profile, and writes bench/RESULTS.md,
# bench/results.png and the raw figures (bench/results/*.tsv).
#
# --quick is for CI: no profile, and the concurrent load only for tcopy with
# 2 clients.  --clients "1 8" sets the concurrent load's client counts
# (default 1 2 4; each divides the 8 chunks), and --cases limits its cases
# too.  --keep keeps the clusters and tserver data in BENCH_DIR/run.
#
# Exit status: 0 when every case ran and every loaded table held the rows
# it should; 1 otherwise (the report is written either way); 2 for usage.
#
# Cases (ids for --cases):
#   1   Postgres COPY into a logged heap table with a primary key
#   2   Postgres COPY into an unlogged heap table without indexes
#   3   tcopy COPY parsed by the backend alone (tcopy.copy_workers = 0; as
#       every tcopy case but 3w: the single backend's client side), wire
#       encoder, raw fields
#   3w  tcopy COPY, default settings: parsed by 2 parallel workers
#   3f  tcopy, tcopy.raw_fields = off (every field through its input function)
#   3p  tcopy, tcopy.encoder = protobuf (protobuf-c messages from an arena)
#   3e  case 3 with COPY ... (ON_ERROR ignore) and no bad row: what reading
#       each row under PG_TRY costs (issue 14: within 3% of case 3)
#   4   tcopy, encoder = protobuf and alloc_mode = malloc (the naive client)
#   5   tcopy, tcopy.copy_hook = off (Postgres' COPY through the FDW insert path)
#   6   tcopy to the null: transport (the client side alone), defaults
#   6f  null:, raw_fields = off
#   6e  null:, ON_ERROR ignore and no bad row (3e without the tserver's noise)
#   6p  null:, encoder = protobuf (arena)
#   7a  case 3 in a backend running tcmalloc (LD_PRELOAD into the postmaster)
#   7b  case 4 in a backend running tcmalloc
#   8   Postgres' COPY reader alone: count() of every column of a file_fdw
#       table over the same CSV (every field read and converted by its input
#       function, nothing stored)
#   9   case 3 over tcp:127.0.0.1 in plain text (sslmode disable)
#   9t  case 3 over tcp:127.0.0.1 with TLS (tserver --tls-cert, sslmode
#       verify-full; certificates made with openssl under BENCH_DIR/run)
# Datasets (--datasets): accounts (sorted keys), shuffled (the same rows in
# shuffled key order), mixed (wider rows of mixed types, --mixed-rows, by
# default rows/2).
#
# Environment: BENCH_DIR (default /var/tmp/tcopy-bench: datasets, clusters,
# tserver data; must be writable by the user Postgres runs as), BENCH_USER
# (that user when run as root, default postgres), PG_CONFIG, BENCH_PORT
# (default 54330; the tcmalloc cluster takes the next port, the tserver's
# tcp: listener of cases 9 and 9t the one after), BENCH_OUT (where
# RESULTS.md, results.png and results/ go; default bench/).
set -euo pipefail

usage()
{
	sed -n '3,6p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

args_given="$*"
failures=0
fail_notes=()
rows=10000000
runs=3
quick=0
build=1
profile=1
concurrency=1
keep=0
only_cases=""
only_datasets=""
mixed_rows=""
only_clients=""
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
		--quick) quick=1; shift ;;
		--no-build) build=0; shift ;;
		--no-profile) profile=0; shift ;;
		--no-concurrency) concurrency=0; shift ;;
		--clients) only_clients=${2:?}; shift 2 ;;
		--cases) only_cases=${2:?}; shift 2 ;;
		--datasets) only_datasets=${2:?}; shift 2 ;;
		--mixed-rows) mixed_rows=${2:?}; shift 2 ;;
		--keep) keep=1; shift ;;
		-h|--help) usage ;;
		*) echo "run.sh: unknown argument $1" >&2; usage ;;
	esac
done
case "$rows$runs${mixed_rows:-1}" in
	*[!0-9]*) echo "run.sh: --rows, --runs and --mixed-rows take positive integers" >&2; exit 2 ;;
esac
[ "$rows" -ge 100 ] && [ "$runs" -ge 1 ] || { echo "run.sh: --rows >= 100, --runs >= 1" >&2; exit 2; }
mixed_rows=${mixed_rows:-$((rows / 2))}
[ "$quick" = 1 ] && profile=0

command_line="bench/run.sh${args_given:+ $args_given}"
top=$(cd "$(dirname "$0")/.." && pwd)
bench_src="$top/bench"
BENCH_DIR=${BENCH_DIR:-/var/tmp/tcopy-bench}
PG_CONFIG=${PG_CONFIG:-pg_config}
port=${BENCH_PORT:-54330}
port_tc=$((port + 1))
port_ts_tcp=$((port + 2))
load_start=$(cut -d" " -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
t_begin=$(date +%s)

say()
{
	echo "[$(date +%H:%M:%S)] $*" >&2
}

die()
{
	say "error: $*"
	exit 1
}

# ---------------------------------------------------------------- packages

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null && sudo="sudo"
fi

# apt_install PKG...: install the packages that are not installed yet
apt_install()
{
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ] && [ -z "$sudo" ]; then
		say "cannot install ${missing[*]}: not root and no sudo"
		return 1
	fi
	say "installing ${missing[*]}"
	$sudo apt-get update -qq || true
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

if [ "$build" = 1 ] && [ -x "$top/scripts/install-deps.sh" ]; then
	"$top/scripts/install-deps.sh" || die "scripts/install-deps.sh failed"
fi
command -v gnuplot >/dev/null || apt_install gnuplot-nox || die "gnuplot is needed for the chart"
command -v "$PG_CONFIG" >/dev/null || apt_install postgresql-server-dev-15 || die "no pg_config"
bindir=$("$PG_CONFIG" --bindir)
[ -x "$bindir/pgbench" ] || apt_install postgresql-client-15 postgresql-15 || die "no pgbench"
# file_fdw (case 8) is in contrib, which Debian ships in the server package
[ -e "$("$PG_CONFIG" --sharedir)/extension/file_fdw.control" ] || apt_install postgresql-15 ||
	die "no file_fdw (contrib)"
tcmalloc_lib=""
for d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib; do
	[ -e "$d/libtcmalloc.so.4" ] && { tcmalloc_lib="$d/libtcmalloc.so.4"; break; }
done
if [ -z "$tcmalloc_lib" ]; then
	apt_install libgoogle-perftools4 || true
	tcmalloc_lib=$(ls /usr/lib/*/libtcmalloc.so.4 2>/dev/null | head -1 || true)
fi

# perf: hardware counters where the machine has them, else the cpu-clock
# software event (virtual machines often have no PMU); off when neither
perf_event=""
perf_note=""
if [ "$profile" = 1 ]; then
	command -v perf >/dev/null || apt_install linux-perf || true
	if command -v perf >/dev/null; then
		if ! pstat=$(perf stat -e instructions true 2>&1); then
			perf_note="perf stat -e instructions true failed: $(echo "$pstat" | head -1)"
		elif echo "$pstat" | grep -q "not supported"; then
			if perf record -e cpu-clock -o /dev/null -- true >/dev/null 2>&1; then
				perf_event="cpu-clock"
				perf_note="perf works, but hardware events are not supported here (instructions: <not supported>): sampled on the cpu-clock software event"
			else
				perf_note="perf stat runs but hardware events are not supported and perf record fails"
			fi
		else
			perf_event="cycles"
			perf_note="perf with hardware cycles"
		fi
	else
		perf_note="perf is not installed and could not be installed"
	fi
	[ -n "$perf_event" ] || say "no profile: $perf_note"
fi

# ---------------------------------------------------------------- build

mkdir -p "$BENCH_DIR"
if [ "$build" = 1 ]; then
	say "building and installing (make && make install)"
	(cd "$top" && make >"$BENCH_DIR/build.log" 2>&1 && $sudo make install >>"$BENCH_DIR/build.log" 2>&1) ||
		{ tail -30 "$BENCH_DIR/build.log" >&2; die "build failed (log: $BENCH_DIR/build.log)"; }
fi
tserver_bin="$bindir/tserver"
[ -x "$tserver_bin" ] || die "$tserver_bin not installed (make install)"
[ -e "$("$PG_CONFIG" --sharedir)/extension/tcopy.control" ] || die "the tcopy extension is not installed"

# ---------------------------------------------------------------- user, dirs

if [ "$(id -u)" -eq 0 ]; then
	pg_user=${BENCH_USER:-postgres}
	id "$pg_user" >/dev/null 2>&1 || die "user $pg_user does not exist (Postgres will not run as root); set BENCH_USER"
	as_pg() { runuser -u "$pg_user" -- "$@"; }
else
	pg_user=$(id -un)
	as_pg() { "$@"; }
fi

data="$BENCH_DIR/data"
work="$BENCH_DIR/run"
# BENCH_OUT: where the report goes (default bench/, for the committed results)
out=${BENCH_OUT:-$bench_src}
mkdir -p "$out"
results="$out/results"
mkdir -p "$data" "$results"
# a new run directory per invocation: clusters, tserver data, sessions
if [ -d "$work" ]; then
	# a previous run may have left servers behind: stop what its pid files name
	for d in "$work"/pg "$work"/pgtc; do
		[ -f "$d/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1 || true
	done
	if [ -f "$work/tserver.pid" ]; then
		old=$(cat "$work/tserver.pid")
		grep -q tserver "/proc/$old/cmdline" 2>/dev/null && kill "$old" 2>/dev/null || true
	fi
	rm -rf "$work"
fi
mkdir -p "$work"
if [ "$(id -u)" -eq 0 ]; then
	chown "$pg_user" "$BENCH_DIR" "$data" "$work"
fi
chmod 755 "$BENCH_DIR" "$data"
as_pg test -w "$work" -a -r "$data" ||
	die "$BENCH_DIR is not usable by $pg_user (every directory above it must be searchable): set BENCH_DIR"

# ---------------------------------------------------------------- datasets

# dataset NAME: its file, generated when missing (a .done marker proves a
# complete file); prints the path
ds_file()
{
	case "$1" in
		accounts) echo "$data/accounts_$rows.csv" ;;
		shuffled) echo "$data/accounts_${rows}_shuffled.csv" ;;
		mixed) echo "$data/mixed_$mixed_rows.csv" ;;
	esac
}

ds_rows()
{
	case "$1" in
		mixed) echo "$mixed_rows" ;;
		*) echo "$rows" ;;
	esac
}

generate()
{
	local name=$1 file
	file=$(ds_file "$name")
	[ -f "$file.done" ] && [ -f "$file" ] && return 0
	say "generating $name dataset ($(ds_rows "$name") rows): $file"
	rm -f "$file" "$file.done"
	case "$name" in
		accounts)
			awk -v kind=accounts -v rows="$rows" -f "$bench_src/gen_data.awk" >"$file.tmp" ;;
		shuffled)
			generate accounts
			# a seeded random sort key: the same order on every machine with this awk
			awk 'BEGIN { srand(42) } { printf "%09d\t%s\n", int(rand() * 1000000000), $0 }' \
				"$(ds_file accounts)" |
				LC_ALL=C sort -S 25% -t "$(printf '\t')" -k1,1 -T "$data" |
				cut -f2- >"$file.tmp" ;;
		mixed)
			awk -v kind=mixed -v rows="$mixed_rows" -v seed=20240611 -f "$bench_src/gen_data.awk" >"$file.tmp" ;;
	esac
	mv "$file.tmp" "$file"
	chmod 644 "$file"
	touch "$file.done"
}

# chunks of the accounts file for the concurrent loads: chunk_0 .. chunk_K-1
nchunks=8
chunk_dir="$data/accounts_${rows}_chunks$nchunks"
generate_chunks()
{
	[ -f "$chunk_dir/.done" ] && return 0
	generate accounts
	say "splitting the accounts dataset into $nchunks chunks"
	rm -rf "$chunk_dir"
	mkdir -p "$chunk_dir"
	awk -v n="$rows" -v k="$nchunks" -v dir="$chunk_dir" '{
		c = int((NR - 1) * k / n)
		print > (dir "/chunk_" c ".csv")
	}' "$(ds_file accounts)"
	chmod 755 "$chunk_dir"
	chmod 644 "$chunk_dir"/*.csv
	touch "$chunk_dir/.done"
}

# ---------------------------------------------------------------- the plan

# case id -> label, cluster, kind, target, settings
case_label()
{
	case "$1" in
		1) echo "Postgres COPY, logged heap + PK" ;;
		2) echo "Postgres COPY, unlogged heap" ;;
		3) echo "tcopy, one backend (workers 0: wire encoder, raw fields)" ;;
		3w) echo "tcopy (defaults: 2 parallel workers)" ;;
		3f) echo "tcopy, raw_fields=off" ;;
		3p) echo "tcopy, encoder=protobuf (arena)" ;;
		3e) echo "tcopy, ON_ERROR ignore (no bad rows)" ;;
		4) echo "tcopy, encoder=protobuf, alloc_mode=malloc" ;;
		5) echo "tcopy, copy_hook=off (FDW insert path)" ;;
		6) echo "tcopy to null: (client side)" ;;
		6f) echo "tcopy to null:, raw_fields=off" ;;
		6e) echo "tcopy to null:, ON_ERROR ignore (no bad rows)" ;;
		6p) echo "tcopy to null:, encoder=protobuf" ;;
		7a) echo "tcopy, backend on tcmalloc" ;;
		7b) echo "tcopy protobuf malloc, backend on tcmalloc" ;;
		8) echo "Postgres' COPY reader alone (file_fdw)" ;;
		9) echo "tcopy over tcp:, plain text" ;;
		9t) echo "tcopy over tcp:, TLS (verify-full)" ;;
	esac
}
case_settings()
{
	# every tcopy case but 3w measures one backend's client side
	local serial="SET tcopy.copy_workers = 0;"
	case "$1" in
		3f|6f) echo "$serial SET tcopy.raw_fields = off;" ;;
		3p|6p) echo "$serial SET tcopy.encoder = protobuf;" ;;
		4|7b) echo "$serial SET tcopy.encoder = protobuf; SET tcopy.alloc_mode = malloc;" ;;
		5) echo "SET tcopy.copy_hook = off;" ;;
		3|3e|6|6e|7a|9|9t) echo "$serial" ;;
		*) echo "" ;;
	esac
}
case_cluster() { case "$1" in 7a|7b) echo pgtc ;; *) echo pg ;; esac; }
case_uses_tserver() { case "$1" in 3|3w|3e|3f|3p|4|5|7a|7b|9|9t) return 0 ;; *) return 1 ;; esac; }
# whether count(*) of the target is checked after the load (null: keeps
# nothing; the reader's own count is its check)
case_counts() { case "$1" in 6|6e|6f|6p|8) return 1 ;; *) return 0 ;; esac; }

# The case x dataset matrix.  The default 10M run must stay under about an
# hour on a 2-core machine: every case on the sorted accounts; on the
# shuffled file the cases the issue asks for (2, 3, 6) and 1 (a primary key
# fed random keys); on the mixed rows, where type conversions (input and
# send functions) matter most, also the field paths (3f), the encoders (3p,
# 4), the hook (5) and the reader alone (8), but not the tcmalloc cluster.
plan=(
	accounts:1 accounts:2 accounts:3 accounts:3w accounts:3e accounts:3f accounts:3p accounts:4 accounts:5
	accounts:6 accounts:6e accounts:6f accounts:6p accounts:7a accounts:7b accounts:8 accounts:9 accounts:9t
	shuffled:1 shuffled:2 shuffled:3 shuffled:3w shuffled:6
	mixed:1 mixed:2 mixed:3 mixed:3w mixed:3e mixed:3f mixed:3p mixed:4 mixed:5 mixed:6 mixed:6e mixed:8
)
selected=()
for item in "${plan[@]}"; do
	ds=${item%%:*}
	c=${item#*:}
	if [ -n "$only_cases" ] && ! [[ ",$only_cases," == *",$c,"* ]]; then continue; fi
	if [ -n "$only_datasets" ] && ! [[ ",$only_datasets," == *",$ds,"* ]]; then continue; fi
	if [[ $c == 7? ]] && [ -z "$tcmalloc_lib" ]; then
		say "skipping case $c: libtcmalloc.so.4 not found"
		continue
	fi
	selected+=("$item")
done
[ ${#selected[@]} -gt 0 ] || die "nothing selected"

# ---------------------------------------------------------------- clusters

pg_conf_settings="shared_preload_libraries = 'tcopy'
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
full_page_writes = on"

init_cluster()
{
	local name=$1 p=$2 dir="$work/$1"
	as_pg "$bindir/initdb" -D "$dir" -U postgres -E UTF8 --locale=C --no-sync -A trust >"$work/$name.initdb.log" 2>&1 ||
		{ cat "$work/$name.initdb.log" >&2; die "initdb $name failed"; }
	{
		echo "listen_addresses = ''"
		echo "port = $p"
		echo "unix_socket_directories = '$work'"
		echo "$pg_conf_settings"
		echo "log_min_messages = warning"
	} | as_pg tee -a "$dir/postgresql.conf" >/dev/null
}

start_cluster()
{
	local name=$1 preload=${2:-}
	if [ -n "$preload" ]; then
		as_pg env LD_PRELOAD="$preload" "$bindir/pg_ctl" -D "$work/$name" -l "$work/$name.log" -w start >/dev/null
	else
		as_pg "$bindir/pg_ctl" -D "$work/$name" -l "$work/$name.log" -w start >/dev/null
	fi || { tail -20 "$work/$name.log" >&2; die "cluster $name did not start"; }
}

stop_all()
{
	local d
	if [ -n "${tserver_pid:-}" ]; then
		kill "$tserver_pid" 2>/dev/null || true
		tserver_pid=""
	fi
	for d in pg pgtc; do
		[ -f "$work/$d/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$work/$d" -m fast stop >/dev/null 2>&1 || true
	done
	if [ "$keep" = 0 ]; then
		rm -rf "$work/pg" "$work/pgtc" "$work/ts"
	fi
}
trap stop_all EXIT
trap 'exit 130' INT TERM

cluster_port() { case "$1" in pgtc) echo "$port_tc" ;; *) echo "$port" ;; esac; }

psql_c()
{
	local cl=$1
	shift
	as_pg "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$work" -p "$(cluster_port "$cl")" -d bench "$@"
}

need_tc=0
for item in "${selected[@]}"; do [[ ${item#*:} == 7? ]] && need_tc=1; done
clusters=(pg)
[ "$need_tc" = 1 ] && clusters+=(pgtc)

ts_sock="$work/ts.sock"
# cases 9 and 9t reach the tserver over tcp:, where no uid admits a client:
# they prove a token, kept owner-only by the user the tserver runs as
ts_token=$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')
ts_token_file="$work/ts.token"
(umask 077 && echo "$ts_token" >"$ts_token_file")
[ "$(id -u)" -eq 0 ] && chown "$pg_user" "$ts_token_file"
for cl in "${clusters[@]}"; do
	say "starting cluster $cl"
	init_cluster "$cl" "$(cluster_port "$cl")"
	if [ "$cl" = pgtc ]; then start_cluster pgtc "$tcmalloc_lib"; else start_cluster pg; fi
	as_pg "$bindir/createdb" -h "$work" -p "$(cluster_port "$cl")" -U postgres bench
	psql_c "$cl" <<-SQL
		CREATE EXTENSION tcopy;
		CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$ts_sock');
		CREATE SERVER tsnull FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:');
		CREATE USER MAPPING FOR PUBLIC SERVER ts;
		CREATE USER MAPPING FOR PUBLIC SERVER tsnull;
		CREATE EXTENSION file_fdw;
		CREATE SERVER csvfile FOREIGN DATA WRAPPER file_fdw;
		CREATE SERVER tstcp FOREIGN DATA WRAPPER tcopy
			OPTIONS (address 'tcp:127.0.0.1:$port_ts_tcp', sslmode 'disable');
		CREATE SERVER tstls FOREIGN DATA WRAPPER tcopy
			OPTIONS (address 'tcp:127.0.0.1:$port_ts_tcp', sslmode 'verify-full', sslrootcert '$work/tls/ca.crt');
		CREATE USER MAPPING FOR PUBLIC SERVER tstcp OPTIONS (token '$ts_token');
		CREATE USER MAPPING FOR PUBLIC SERVER tstls OPTIONS (token '$ts_token');
	SQL
done

# cases 9t: a CA and a tserver certificate for 127.0.0.1, owned by the user
# the tserver runs as (its key must be owner-only)
need_tls=0
for item in "${selected[@]}"; do [ "${item#*:}" = 9t ] && need_tls=1; done
if [ "$need_tls" = 1 ]; then
	command -v openssl >/dev/null || apt_install openssl || die "no openssl command"
	rm -rf "$work/tls"
	mkdir -p "$work/tls"
	(
		cd "$work/tls"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
			-subj "/CN=tcopy bench CA" -batch
		openssl req -new -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
			-subj "/CN=127.0.0.1" -batch
		echo "subjectAltName=IP:127.0.0.1" >server.ext
		openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out server.crt -days 2 -extfile server.ext
		chmod 600 server.key ca.key
	) >"$work/tls/openssl.log" 2>&1 || { cat "$work/tls/openssl.log" >&2; die "openssl failed"; }
	[ "$(id -u)" -eq 0 ] && chown -R "$pg_user" "$work/tls"
fi
tcopy_gucs=$(psql_c pg -c "SELECT string_agg(name || ' = ' || setting || coalesce(unit, ''), '; ' ORDER BY name) FROM pg_settings WHERE name LIKE 'tcopy.%'")
if [ "$need_tc" = 1 ]; then
	pm=$(head -1 "$work/pgtc/postmaster.pid")
	grep -q libtcmalloc "/proc/$pm/maps" || die "tcmalloc is not mapped into the pgtc postmaster"
fi

# ---------------------------------------------------------------- tserver

tserver_session_mb=64
tserver_pid=""
# start_tserver [CASE]: a tserver on a fresh data directory, also on a tcp:
# listener for cases 9 (plain) and 9t (TLS); sets tserver_pid
start_tserver()
{
	local log="$work/tserver.log" pidfile="$work/tserver.pid" launcher i tcp_args=()
	case "${1:-}" in
		9) tcp_args=(--listen "tcp:127.0.0.1:$port_ts_tcp" --token-file "$ts_token_file") ;;
		9t) tcp_args=(--listen "tcp:127.0.0.1:$port_ts_tcp" --token-file "$ts_token_file"
			--tls-cert "$work/tls/server.crt" --tls-key "$work/tls/server.key") ;;
	esac
	# no stale log or pid file: this tserver's alone prove it started
	rm -rf "$work/ts" "$ts_sock" "$log" "$pidfile"
	# stdout to /dev/null: the daemon must not hold our caller's pipes; the
	# Postgres cluster runs as the same user, admitted by its uid
	as_pg bash -c 'echo $$ > "$1"; f=$2; shift 2; exec "$f" "$@"' \
		_ "$pidfile" "$tserver_bin" --data "$work/ts" --listen "unix:$ts_sock" \
		--session-memory-mb "$tserver_session_mb" --allow-uid "$pg_user" "${tcp_args[@]}" \
		>/dev/null 2>"$log" &
	launcher=$!
	for i in $(seq 600); do
		[ -s "$pidfile" ] && grep -q "tserver ready" "$log" 2>/dev/null && break
		kill -0 "$launcher" 2>/dev/null || break
		sleep 0.05
	done
	if ! [ -s "$pidfile" ] || ! grep -q "tserver ready" "$log" 2>/dev/null; then
		cat "$log" >&2 2>/dev/null
		[ -s "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
		return 1
	fi
	tserver_pid=$(cat "$pidfile")
}

stop_tserver()
{
	[ -n "$tserver_pid" ] || return 0
	kill "$tserver_pid" 2>/dev/null || true
	# wait for it (it is not our child: runuser is)
	for _ in $(seq 600); do
		[ -e "/proc/$tserver_pid" ] || break
		sleep 0.05
	done
	if [ -e "/proc/$tserver_pid" ]; then
		say "tserver $tserver_pid did not stop within 30 s of SIGTERM: killed"
		failures=$((failures + 1))
		fail_notes+=("tserver $tserver_pid did not stop within 30 s of SIGTERM")
		kill -KILL "$tserver_pid" 2>/dev/null || true
	fi
	tserver_pid=""
	[ "$keep" = 1 ] || rm -rf "$work/ts"
}

# ---------------------------------------------------------------- targets

# ds_table DATASET: "table key columns" of the dataset's rows
ds_table()
{
	if [ "$1" = mixed ]; then
		echo "events id id bigint NOT NULL, account int NOT NULL, kind varchar(16), name text, amount numeric(14,2), created timestamptz NOT NULL, score float8, active boolean, note text"
	else
		echo "accounts aid aid int NOT NULL, bid int, abalance int, filler char(84)"
	fi
}

ddl_for()
{
	local c=$1 ds=$2 cols key tbl
	read -r tbl key cols < <(ds_table "$ds")
	case "$c" in
		1) echo "DROP TABLE IF EXISTS h_$tbl; CREATE TABLE h_$tbl ($cols, PRIMARY KEY ($key)); CHECKPOINT;" ;;
		2) echo "DROP TABLE IF EXISTS h_$tbl; CREATE UNLOGGED TABLE h_$tbl ($cols); CHECKPOINT;" ;;
		# a table of its own: dropping a table of server ts needs its tserver,
		# which does not run in the null: cases
		6|6e|6f|6p) echo "DROP FOREIGN TABLE IF EXISTS n_$tbl; CREATE FOREIGN TABLE n_$tbl ($cols) SERVER tsnull OPTIONS (key '$key', table_name '$tbl'); CHECKPOINT;" ;;
		8) echo "DROP FOREIGN TABLE IF EXISTS r_$tbl; CREATE FOREIGN TABLE r_$tbl ($cols) SERVER csvfile OPTIONS (filename '$(ds_file "$ds")', format 'csv'); CHECKPOINT;" ;;
		# tables of their own: a DROP reaches the tserver with its server's
		# sslmode, which must be the one the tserver of the run speaks
		9) echo "DROP FOREIGN TABLE IF EXISTS p_$tbl; CREATE FOREIGN TABLE p_$tbl ($cols) SERVER tstcp OPTIONS (key '$key', table_name '$tbl'); CHECKPOINT;" ;;
		9t) echo "DROP FOREIGN TABLE IF EXISTS s_$tbl; CREATE FOREIGN TABLE s_$tbl ($cols) SERVER tstls OPTIONS (key '$key', table_name '$tbl'); CHECKPOINT;" ;;
		*) echo "DROP FOREIGN TABLE IF EXISTS f_$tbl; CREATE FOREIGN TABLE f_$tbl ($cols) SERVER ts OPTIONS (key '$key', table_name '$tbl'); CHECKPOINT;" ;;
	esac
}
target_for()
{
	local c=$1 ds=$2 tbl
	read -r tbl _ < <(ds_table "$ds")
	case "$c" in 1|2) echo "h_$tbl" ;; 6|6e|6f|6p) echo "n_$tbl" ;; 8) echo "r_$tbl" ;; 9) echo "p_$tbl" ;; 9t) echo "s_$tbl" ;; *) echo "f_$tbl" ;; esac
}

# load_statement CASE DATASET: the measured statement.  Case 8 reads the
# file through file_fdw with count() of every column, so that every field
# goes through its input function (file_fdw converts only the columns a
# query needs); its first count (the key, never NULL) is tagged "read=".
load_statement()
{
	local c=$1 ds=$2 cols counts
	if [ "$c" = 8 ]; then
		read -r _ _ cols < <(ds_table "$ds")
		# column names: drop type modifiers such as (14,2), then the first word of each
		counts=$(echo "$cols" | sed 's/([^)]*)//g' | tr ',' '\n' | awk '{ printf "%scount(%s)", n++ ? ", " : "", $1 }')
		echo "SELECT 'read=' || $counts FROM $(target_for "$c" "$ds");"
	else
		echo "COPY $(target_for "$c" "$ds") FROM '$(ds_file "$ds")' (FORMAT csv$(case "$c" in 3e|6e) echo ", ON_ERROR ignore" ;; esac));"
	fi
}

# ---------------------------------------------------------------- measuring

clk=$(getconf CLK_TCK)
page_kb=$(($(getconf PAGESIZE) / 1024))

# proc_stat PID: "utime_ticks stime_ticks minflt" (fields 14, 15, 10; the
# command name in field 2 may hold spaces, so count from its closing paren)
proc_stat()
{
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || { echo "0 0 0"; return; }
	s=${s##*) }
	# now field 3 of stat is word 1
	set -- $s
	echo "${12} ${13} ${8}"
}
proc_write_bytes()
{
	awk '/^write_bytes/ { print $2 }' "/proc/$1/io" 2>/dev/null || echo 0
}
proc_status_kb()
{
	awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0
}

# sample_rss PID OUT: peak RssAnon (kB) of PID every ~50 ms until OUT.stop
# appears; the peak goes to OUT
sample_rss()
{
	local pid=$1 out=$2 max=0 k v rest
	while [ ! -e "$out.stop" ]; do
		while read -r k v rest; do
			if [ "$k" = "RssAnon:" ]; then
				[ "$v" -gt "$max" ] && max=$v
				break
			fi
		done <"/proc/$pid/status" 2>/dev/null || break
		sleep 0.05
	done
	echo "$max" >"$out"
}

# A psql session driven line by line through a fifo; \! writes to a second
# fifo let us wait for each step without polling.  sess_* set by sess_open.
sess_open()
{
	local cl=$1
	sess="$work/sess"
	rm -rf "$sess"
	mkdir -p "$sess"
	mkfifo "$sess/in" "$sess/sync"
	[ "$(id -u)" -eq 0 ] && chown -R "$pg_user" "$sess"
	# read-write opens never block, whatever the other end does
	exec 3<>"$sess/in" 4<>"$sess/sync"
	as_pg "$bindir/psql" -X -At -v ON_ERROR_STOP=1 -h "$work" -p "$(cluster_port "$cl")" -d bench \
		-f "$sess/in" >"$sess/out" 2>"$sess/err" &
	sess_psql=$!
}
sess_send() { printf '%s\n' "$@" >&3; }
# sess_wait TIMEOUT_S: the next line psql writes to the sync fifo, in REPLY
sess_wait()
{
	local deadline=$(($(date +%s) + $1))
	while :; do
		if read -r -t 1 -u 4 REPLY; then return 0; fi
		kill -0 "$sess_psql" 2>/dev/null || return 1
		[ "$(date +%s)" -lt "$deadline" ] || return 2
	done
}
sess_close()
{
	sess_send '\q'
	exec 3>&- 4>&-
	# psql ends at \q, or at end of input; one stuck on a server is ended
	for _ in $(seq 600); do
		kill -0 "$sess_psql" 2>/dev/null || break
		sleep 0.05
	done
	kill "$sess_psql" 2>/dev/null || true
	wait "$sess_psql" 2>/dev/null || true
}

results_tsv="$results/runs.tsv"
printf 'round\tcase\tdataset\tstatus\trows\tcount\tfile_bytes\twall_s\tcommit_s\tb_user_s\tb_sys_s\tb_minflt\tb_rssanon_kb\tb_rssanon_before_kb\tb_write_bytes\tts_user_s\tts_sys_s\tts_hwm_kb\tts_write_bytes\tallocator\n' >"$results_tsv"

# run_case ROUND CASE DATASET: one measured COPY; appends a line to runs.tsv
run_case()
{
	local round=$1 c=$2 ds=$3
	local cl file nrows target ddl settings status="ok" note=""
	local bpid b0 b1 t0 t1 wb0 wb1 bw0 bw1 rss_before wall count="" copied allocator="glibc"
	local ts_hwm=0 peak=0 commit_s=""
	cl=$(case_cluster "$c")
	file=$(ds_file "$ds")
	nrows=$(ds_rows "$ds")
	target=$(target_for "$c" "$ds")
	ddl=$(ddl_for "$c" "$ds")
	settings=$(case_settings "$c")
	say "round $round: case $c ($(case_label "$c")) on $ds"

	tserver_pid=""
	if case_uses_tserver "$c"; then
		start_tserver "$c" || { note="tserver did not start"; status="FAIL"; }
	fi
	if [ "$status" = ok ] && ! psql_c "$cl" -c "$ddl" >"$work/ddl.log" 2>&1; then
		status="FAIL"; note="setup: $(head -1 "$work/ddl.log")"
	fi
	sync
	if [ "$status" = ok ]; then
		sess_open "$cl"
		# tcopy is preloaded (its COPY hook is installed when it loads: README)
		sess_send "$settings" \
			"SELECT pg_backend_pid() AS bpid \\gset" '\setenv BPID :bpid' \
			"\\! echo \$BPID > $sess/sync"
		if sess_wait 60; then
			bpid=$REPLY
		else
			status="FAIL"; note="session: $(head -2 "$sess/err" | tr '\n' ' ')"
			sess_close
		fi
	fi
	if [ "$status" = ok ]; then
		grep -q libtcmalloc "/proc/$bpid/maps" 2>/dev/null && allocator="tcmalloc"
		rss_before=$(proc_status_kb "$bpid" RssAnon)
		rm -f "$sess/rss.stop"
		sample_rss "$bpid" "$sess/rss" &
		local sampler=$!
		b0=$(proc_stat "$bpid")
		bw0=$(proc_write_bytes "$bpid")
		if [ -n "$tserver_pid" ]; then
			t0=$(proc_stat "$tserver_pid")
			wb0=$(proc_write_bytes "$tserver_pid")
		fi
		# an explicit transaction, to time the commit (the tserver's) apart
		sess_send '\timing on' 'BEGIN;' "$(load_statement "$c" "$ds")" 'COMMIT;' '\timing off' \
			"\\! echo copied > $sess/sync"
		local rc=0
		sess_wait $((300 + nrows / 2000)) || rc=$?
		b1=$(proc_stat "$bpid")
		bw1=$(proc_write_bytes "$bpid")
		if [ -n "$tserver_pid" ]; then
			t1=$(proc_stat "$tserver_pid")
			wb1=$(proc_write_bytes "$tserver_pid")
			ts_hwm=$(proc_status_kb "$tserver_pid" VmHWM)
		fi
		touch "$sess/rss.stop"
		wait "$sampler" || true
		peak=$(cat "$sess/rss" 2>/dev/null || echo 0)
		if [ $rc -ne 0 ]; then
			status="FAIL"
			[ $rc -eq 2 ] && note="timed out" || note="COPY: $(grep -m1 ERROR "$sess/err" || head -1 "$sess/err")"
			if [ $rc -eq 2 ]; then
				psql_c "$cl" -c "SELECT pg_cancel_backend($bpid)" >/dev/null 2>&1 || true
				kill "$sess_psql" 2>/dev/null || true
			fi
		elif case_counts "$c"; then
			sess_send "SELECT 'count=' || count(*) FROM $target;" "\\! echo counted > $sess/sync"
			if sess_wait $((300 + nrows / 2000)); then
				count=$(sed -n 's/^count=//p' "$sess/out")
			else
				status="FAIL"; note="count(*): $(grep -m1 ERROR "$sess/err" || echo failed)"
			fi
		fi
		sess_close
	fi
	if [ "$status" = ok ]; then
		# psql prints each statement's tag (or the reader's counts), then its "Time: N ms"
		read -r wall commit_s < <(awk '
			/^COPY [0-9]+$/ || /^read=[0-9]+/ { want = "copy" }
			/^COMMIT$/ { want = "commit" }
			/^Time: / && want != "" { t[want] = $2 / 1000; want = "" }
			END { if ("copy" in t && "commit" in t) printf "%.3f %.3f\n", t["copy"] + t["commit"], t["commit"] }' "$sess/out")|| true
		copied=$(sed -n -e 's/^COPY \([0-9]*\)$/\1/p' -e 's/^read=\([0-9]*\).*$/\1/p' "$sess/out")
		[ "$c" = 8 ] && count=$copied
		if [ -z "$wall" ]; then
			status="FAIL"; note="no timing in psql output"
		elif [ "$copied" != "$nrows" ]; then
			status="FAIL"; note="$([ "$c" = 8 ] && echo "the reader counted" || echo "COPY reported") '$copied' rows, expected $nrows"
		elif case_counts "$c" && [ "$count" != "$nrows" ]; then
			status="FAIL"; note="count(*) = '$count', expected $nrows"
		fi
	fi
	# a loaded heap table would leave dirty buffers for the next case to write
	case "$c" in 1|2) psql_c "$cl" -c "DROP TABLE IF EXISTS $target" >/dev/null 2>&1 || true ;; esac
	stop_tserver
	if [ "$status" != ok ]; then
		failures=$((failures + 1))
		fail_notes+=("round $round, case $c, $ds: $note")
		say "FAILED: $note"
		[ -f "$sess/err" ] && sed 's/^/    /' "$sess/err" | head -5 >&2
	fi
	# numbers for the record (zeros where a failure left none)
	set -- ${b0:-0 0 0}
	local bu0=$1 bs0=$2 bf0=$3
	set -- ${b1:-0 0 0}
	local bu1=$1 bs1=$2 bf1=$3
	local tu=0 ts=0
	if [ -n "${t0:-}" ] && [ -n "${t1:-}" ]; then
		set -- $t0; local tu0=$1 ts0=$2
		set -- $t1; tu=$(( $1 - tu0 )); ts=$(( $2 - ts0 ))
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		"$round" "$c" "$ds" "$status" "$nrows" "${count:--}" "$(stat -c %s "$file")" "${wall:-0}" "${commit_s:-0}" \
		"$(awk -v a="$bu0" -v b="$bu1" -v t="$clk" 'BEGIN { printf "%.2f", (b - a) / t }')" \
		"$(awk -v a="$bs0" -v b="$bs1" -v t="$clk" 'BEGIN { printf "%.2f", (b - a) / t }')" \
		"$((bf1 - bf0))" "$peak" "${rss_before:-0}" \
		"$(( ${bw1:-0} - ${bw0:-0} ))" \
		"$(awk -v a="$tu" -v t="$clk" 'BEGIN { printf "%.2f", a / t }')" \
		"$(awk -v a="$ts" -v t="$clk" 'BEGIN { printf "%.2f", a / t }')" \
		"${ts_hwm:-0}" "$(( ${wb1:-0} - ${wb0:-0} ))" "$allocator" >>"$results_tsv"
	[ "$status" = ok ]
}

# ---------------------------------------------------------------- go

datasets_used=()
for item in "${selected[@]}"; do
	ds=${item%%:*}
	[[ " ${datasets_used[*]} " == *" $ds "* ]] || datasets_used+=("$ds")
done
for ds in "${datasets_used[@]}"; do
	generate "$ds"
done
# read every file once so that the first case does not pay for the disk
for ds in "${datasets_used[@]}"; do
	cat "$(ds_file "$ds")" >/dev/null
done

say "plan: ${#selected[@]} case x dataset combinations x $runs runs, alternating"
for round in $(seq "$runs"); do
	for item in "${selected[@]}"; do
		run_case "$round" "${item#*:}" "${item%%:*}" || true
	done
done

# ---------------------------------------------------------------- concurrency

conc_tsv="$results/concurrency.tsv"
printf 'case\tclients\tstatus\trows\tcount\twall_s\ttps\tlat_avg_ms\tlat_stddev_ms\tlat_max_ms\tts_user_s\tts_sys_s\tts_hwm_kb\n' >"$conc_tsv"
if [ "$quick" = 1 ]; then
	conc_cases=(3)
	conc_clients=(2)
else
	conc_cases=(1 2 3)
	conc_clients=(1 2 4)
fi
if [ -n "$only_cases" ]; then
	kept=()
	for c in "${conc_cases[@]}"; do [[ ",$only_cases," == *",$c,"* ]] && kept+=("$c"); done
	conc_cases=("${kept[@]}")
fi
if [ -n "$only_clients" ]; then
	read -r -a conc_clients <<<"$only_clients"
	for n in "${conc_clients[@]}"; do
		case "$n" in 1|2|4|8) ;; *) echo "run.sh: --clients: each of 1 2 4 8 (they divide the 8 chunks)" >&2; exit 2 ;; esac
	done
fi

# run_pgbench CASE CLIENTS: the accounts rows in $nchunks chunks, loaded by
# CLIENTS pgbench clients at once, each transaction one chunk's COPY
run_pgbench()
{
	local c=$1 n=$2 status=ok note="" target ddl script out wall count="" t0 t1
	local tps lat sd lmax tu=0 ts=0 hwm=0
	say "concurrency: case $c ($(case_label "$c")), $n clients"
	target=$(target_for "$c" accounts)
	ddl=$(ddl_for "$c" accounts)
	tserver_pid=""
	if case_uses_tserver "$c"; then
		start_tserver "$c" || { status=FAIL; note="tserver did not start"; }
	fi
	script="$work/pgbench_$c.sql"
	printf '%s\n' "SELECT nextval('bench_chunk') AS chunk \\gset" \
		"COPY $target FROM '$chunk_dir/chunk_:chunk.csv' (FORMAT csv);" >"$script"
	chmod 644 "$script"
	if [ "$status" = ok ] && ! psql_c pg -c "$ddl" \
		-c "DROP SEQUENCE IF EXISTS bench_chunk; CREATE SEQUENCE bench_chunk MINVALUE 0 START 0;" \
		>"$work/ddl.log" 2>&1; then
		status=FAIL; note="setup: $(head -1 "$work/ddl.log")"
	fi
	sync
	out="$work/pgbench_${c}_$n.out"
	if [ "$status" = ok ]; then
		[ -n "$tserver_pid" ] && t0=$(proc_stat "$tserver_pid")
		local s0 s1
		s0=$(date +%s.%N)
		if ! as_pg "$bindir/pgbench" -n -h "$work" -p "$port" -c "$n" -j "$n" -t $((nchunks / n)) \
			-l --log-prefix="$work/pgbench_log_${c}_$n" -f "$script" bench >"$out" 2>&1; then
			status=FAIL; note="pgbench: $(grep -m1 -i error "$out")"
		fi
		s1=$(date +%s.%N)
		wall=$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.3f", b - a }')
		if [ -n "$tserver_pid" ]; then
			t1=$(proc_stat "$tserver_pid")
			hwm=$(proc_status_kb "$tserver_pid" VmHWM)
			set -- $t0; local u0=$1 y0=$2
			set -- $t1; tu=$(($1 - u0)); ts=$(($2 - y0))
		fi
		grep -q "^number of transactions actually processed: $nchunks/$nchunks" "$out" ||
			{ [ "$status" = ok ] && { status=FAIL; note="pgbench: not every transaction ran"; }; }
		count=$(psql_c pg -c "SELECT count(*) FROM $target" 2>/dev/null || echo "?")
		[ "$status" = ok ] && [ "$count" != "$rows" ] && { status=FAIL; note="count(*) = $count, expected $rows"; }
	fi
	stop_tserver
	tps=$(awk '/^tps = / { print $3; exit }' "$out" 2>/dev/null)
	# per-transaction latencies from pgbench's log (field 3, microseconds)
	read -r lat sd lmax < <(cat "$work/pgbench_log_${c}_$n".* 2>/dev/null | awk '
		{ n++; s += $3; q += $3 * $3; if ($3 > m) m = $3 }
		END { if (!n) { print "0 0 0"; exit } a = s / n; v = q / n - a * a; if (v < 0) v = 0
			printf "%.1f %.1f %.1f\n", a / 1000, sqrt(v) / 1000, m / 1000 }')
	rm -f "$work/pgbench_log_${c}_$n".*
	if [ "$status" != ok ]; then
		failures=$((failures + 1))
		fail_notes+=("concurrency, case $c, $n clients: $note")
		say "FAILED: $note"
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$n" "$status" "$rows" "${count:--}" \
		"${wall:-0}" "${tps:-0}" "${lat:-0}" "${sd:-0}" "${lmax:-0}" \
		"$(awk -v a="$tu" -v t="$clk" 'BEGIN { printf "%.2f", a / t }')" \
		"$(awk -v a="$ts" -v t="$clk" 'BEGIN { printf "%.2f", a / t }')" "$hwm" >>"$conc_tsv"
}

if [ "$concurrency" = 1 ]; then
	generate_chunks
	cat "$chunk_dir"/*.csv >/dev/null
	for c in "${conc_cases[@]}"; do
		for n in "${conc_clients[@]}"; do
			run_pgbench "$c" "$n" || true
		done
	done
fi

# ---------------------------------------------------------------- profile

prof_dir="$results/profile"
rm -rf "$prof_dir"
if [ "$profile" = 1 ] && [ -n "$perf_event" ]; then
	mkdir -p "$prof_dir"
	generate accounts
	# the backend with the defaults (3) and as the naive protobuf-c client
	# (4); the tserver in case 3
	for c in 3 4; do
		say "profiling case $c ($(case_label "$c")) with perf ($perf_event)"
		start_tserver || { say "tserver did not start"; continue; }
		psql_c pg -c "$(ddl_for "$c" accounts)" >/dev/null 2>&1
		sess_open pg
		sess_send "$(case_settings "$c")" \
			"SELECT pg_backend_pid() AS bpid \\gset" '\setenv BPID :bpid' \
			"\\! echo \$BPID > $sess/sync"
		if ! sess_wait 60; then
			sess_close; stop_tserver; continue
		fi
		bpid=$REPLY
		perf record -e "$perf_event" -F 999 -g -o "$prof_dir/backend_$c.data" -p "$bpid" \
			>"$prof_dir/backend_$c.record.log" 2>&1 &
		perf_b=$!
		perf_t=""
		if [ "$c" = 3 ]; then
			perf record -e "$perf_event" -F 999 -g -o "$prof_dir/tserver_$c.data" -p "$tserver_pid" \
				>"$prof_dir/tserver_$c.record.log" 2>&1 &
			perf_t=$!
		fi
		sleep 1
		sess_send "$(load_statement "$c" accounts)" \
			"\\! echo copied > $sess/sync"
		sess_wait $((300 + rows / 2000)) || say "profiled COPY failed"
		kill -INT "$perf_b" ${perf_t:+"$perf_t"} 2>/dev/null || true
		wait "$perf_b" ${perf_t:+"$perf_t"} 2>/dev/null || true
		sess_close
		stop_tserver
		for who in backend tserver; do
			f="$prof_dir/${who}_$c.data"
			[ -s "$f" ] || continue
			# self time per symbol, and per object file for what has no symbol
			perf report -i "$f" --no-children --sort dso,symbol --stdio -g none --percent-limit 0 \
				2>/dev/null | grep -v '^$' >"$prof_dir/${who}_$c.txt" || true
			rm -f "$f"
		done
	done
fi

# ---------------------------------------------------------------- report

t_end=$(date +%s)
meta="$results/meta.txt"
{
	echo "started	$started"
	echo "command	$command_line"
	echo "elapsed_s	$((t_end - t_begin))"
	echo "rows	$rows"
	echo "mixed_rows	$mixed_rows"
	echo "runs	$runs"
	echo "quick	$quick"
	echo "nproc	$(nproc)"
	echo "mem	$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "cpu	$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "kernel	$(uname -sr)"
	echo "os	$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
	echo "loadavg_start	${load_start:-}"
	echo "loadavg_end	$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "pg_version	$("$bindir/postgres" --version)"
	echo "git	$(cd "$top" && git rev-parse --short HEAD 2>/dev/null)$(cd "$top" && [ -n "$(git status --porcelain -- src proto Makefile 2>/dev/null)" ] && echo ' (+ uncommitted changes in src/)')"
	echo "tcmalloc	${tcmalloc_lib:-none}"
	echo "tserver	--data DIR --listen unix:PATH --session-memory-mb $tserver_session_mb (a fresh tserver and data directory per run, on $(df -P "$BENCH_DIR" | awk 'NR == 2 { print $1 }'))"
	echo "bench_dir	$BENCH_DIR"
	echo "tcopy_gucs	$tcopy_gucs"
	echo "perf	${perf_note:-not attempted (--quick or --no-profile)}"
	echo "nchunks	$nchunks"
	echo "plan	${selected[*]}"
	for c in $(printf '%s\n' "${selected[@]}" | sed 's/^[^:]*://' | sort -u); do
		echo "settings_$c	$(case_settings "$c")"
	done
	for ds in "${datasets_used[@]}"; do
		echo "dataset_$ds	$(ds_rows "$ds") rows, $(stat -c %s "$(ds_file "$ds")") bytes"
	done
	printf 'pg_settings\t%s\n' "$(echo "$pg_conf_settings" | paste -sd ';' | sed 's/;/; /g')"
	for f in "${fail_notes[@]}"; do echo "failure	$f"; done
} >"$meta"

perl "$bench_src/report.pl" "$results" "$out/RESULTS.md" "$out/results.png" ||
	die "report failed"
say "wrote $out/RESULTS.md and $out/results.png (raw figures in $results/)"
if [ "$failures" -gt 0 ]; then
	say "$failures failure(s):"
	printf '  %s\n' "${fail_notes[@]}" >&2
	exit 1
fi
