#!/usr/bin/env bash
# bench/reader.sh: issue 47's COPY reader alone.  A private Postgres 15
# cluster COPYs a CSV file (or its text-format twin) into tcopy tables on
# the null: transport with workers 0 (rows read, converted, encoded and
# batched in the backend, then dropped: no tserver), alternating
# tcopy.fast_reader on (tcopy's reader) and off (Postgres' reader), and
# beside them Postgres' own COPY of the same file into an unlogged heap
# table.  The measure is the backend's CPU time (utime + stime from
# /proc/PID/stat before and after the COPY), per row; medians of ROUNDS.
#
#   bench/reader.sh [--rows N] [--rounds R] [--datasets "accounts mixed"]
#                   [--formats "csv text"] [--out FILE.md]
#
# Datasets: bench/gen_data.awk's accounts (4 columns, ~100 bytes a row) and
# mixed (9 columns of int, varchar, text with quoting, numeric,
# timestamptz, float8, bool, NULLs; ~160 bytes a row).  The text format is
# the same rows written by COPY ... TO (FORMAT text) from the heap table.
# READER_SIMD=sse2 or scalar caps tcopy's reader's vector kernels
# (tcopy.simd).  The extension must be installed (make install); run as
# root (the cluster runs as postgres) or as a user who can run Postgres.
set -euo pipefail
rows=2000000
rounds=5
datasets="accounts mixed"
formats="csv text"
out=
while [ $# -gt 0 ]; do
	case $1 in
	--rows) rows=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--datasets) datasets=$2; shift 2 ;;
	--formats) formats=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "usage: $0 [--rows N] [--rounds R] [--datasets LIST] [--formats LIST] [--out FILE]" >&2; exit 2 ;;
	esac
done
bench_src=$(cd "$(dirname "$0")" && pwd)
bindir=$(pg_config --bindir)
dir=$(mktemp -d /var/tmp/tcopy-reader.XXXXXX)
port=${READER_PORT:-54377}
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
	chown postgres "$dir"
	as_pg=(runuser -u postgres --)
fi
cleanup() { "${as_pg[@]}" "$bindir/pg_ctl" -D "$dir/pg" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT

"${as_pg[@]}" "$bindir/initdb" -D "$dir/pg" -U postgres -A trust -E UTF8 --locale=C >/dev/null
cat >>"$dir/pg/postgresql.conf" <<EOC
port = $port
listen_addresses = ''
unix_socket_directories = '$dir'
shared_preload_libraries = 'tcopy'
shared_buffers = 1GB
max_wal_size = 8GB
jit = off
EOC
"${as_pg[@]}" "$bindir/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w start >/dev/null
psql_run() { "${as_pg[@]}" "$bindir/psql" -h "$dir" -p "$port" -U postgres -qXAt -v ON_ERROR_STOP=1 "$@" postgres; }

declare -A cols=(
	[accounts]="aid int NOT NULL, bid int, abalance int, filler char(84)"
	[mixed]="id bigint NOT NULL, account int, kind varchar(16), name text, amount numeric(14,2), created timestamptz, score float8, active boolean, note text"
)
declare -A keys=([accounts]=aid [mixed]=id)
psql_run -c "CREATE EXTENSION tcopy" \
	-c "CREATE SERVER nul FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:')" \
	-c "CREATE USER MAPPING FOR PUBLIC SERVER nul"
for ds in $datasets; do
	awk -v kind="$ds" -v rows="$rows" -v seed=1 -f "$bench_src/gen_data.awk" >"$dir/$ds.csv"
	psql_run -c "CREATE FOREIGN TABLE n_$ds (${cols[$ds]}) SERVER nul OPTIONS (key '${keys[$ds]}')" \
		-c "CREATE UNLOGGED TABLE h_$ds (${cols[$ds]})" \
		-c "COPY h_$ds FROM '$dir/$ds.csv' (FORMAT csv)" \
		-c "COPY h_$ds TO '$dir/$ds.txt' (FORMAT text)"
	chmod 644 "$dir/$ds.csv" "$dir/$ds.txt"
done

# one COPY's backend CPU in seconds (clock ticks read around it)
cpu_of()
{
	local table=$1 file=$2 format=$3 setup=$4 tick opts
	tick=$(getconf CLK_TCK)
	opts="FORMAT $format"
	case $table in n_*) opts="$opts, workers 0" ;; esac
	psql_run <<EOS
$setup
SELECT pg_backend_pid() AS pid \gset
\setenv BACKEND_PID :pid
\! awk '{ printf "%d ", \$14 + \$15 }' /proc/\$BACKEND_PID/stat > $dir/ticks
COPY $table FROM '$file' ($opts);
\! awk '{ printf "%d\n", \$14 + \$15 }' /proc/\$BACKEND_PID/stat >> $dir/ticks
EOS
	awk -v hz="$tick" '{ printf "%.3f\n", ($2 - $1) / hz }' "$dir/ticks"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

results=$dir/results.tsv
: >"$results"
for ds in $datasets; do
	for fmt in $formats; do
		file=$dir/$ds.csv
		[ "$fmt" = text ] && file=$dir/$ds.txt
		for r in $(seq "$rounds"); do
			for side in fast pg heap; do
				case $side in
				fast) s=$(cpu_of "n_$ds" "$file" "$fmt" "SET tcopy.fast_reader = on; SET tcopy.simd = ${READER_SIMD:-auto};") ;;
				pg) s=$(cpu_of "n_$ds" "$file" "$fmt" "SET tcopy.fast_reader = off;") ;;
				heap) s=$(cpu_of "h_$ds" "$file" "$fmt" "TRUNCATE h_$ds; CHECKPOINT;") ;;
				esac
				printf '%s\t%s\t%s\t%d\t%s\n' "$ds" "$fmt" "$side" "$r" "$s" >>"$results"
			done
		done
	done
done

report()
{
	echo "Backend CPU per COPY of $rows rows, median of $rounds rounds (alternating); tcopy on null:, workers 0"
	echo
	echo "| dataset | format | tcopy's reader | Postgres' reader | Postgres COPY, unlogged heap | µs a row (tcopy's reader) | tcopy's / Postgres' reader | tcopy's reader / heap |"
	echo "|---|---|---|---|---|---|---|---|"
	for ds in $datasets; do
		for fmt in $formats; do
			f=$(awk -F'\t' -v d="$ds" -v f="$fmt" '$1 == d && $2 == f && $3 == "fast" { print $5 }' "$results" | median)
			p=$(awk -F'\t' -v d="$ds" -v f="$fmt" '$1 == d && $2 == f && $3 == "pg" { print $5 }' "$results" | median)
			h=$(awk -F'\t' -v d="$ds" -v f="$fmt" '$1 == d && $2 == f && $3 == "heap" { print $5 }' "$results" | median)
			awk -v ds="$ds" -v fmt="$fmt" -v f="$f" -v p="$p" -v h="$h" -v n="$rows" 'BEGIN {
				printf "| %s | %s | %.2f s | %.2f s | %.2f s | %.3f | %.2f | %.2f |\n", ds, fmt, f, p, h, f * 1e6 / n, f / p, f / h }'
		done
	done
	echo
	echo "Every measurement (dataset, format, side, round, CPU seconds):"
	echo
	echo '```'
	cat "$results"
	echo '```'
}
if [ -n "$out" ]; then
	report | tee "$out"
else
	report
fi
