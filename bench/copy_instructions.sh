#!/usr/bin/env bash
# bench/copy_instructions.sh: what a COPY option costs the backend, in
# instructions (valgrind --tool=callgrind counts the same however busy the
# machine is, so a few percent can be told from none).  A Postgres backend
# in single-user mode (postgres --single, under callgrind) runs one COPY
# of the accounts dataset (bench/gen_data.awk, ROWS rows) into a keyed
# tcopy table on the null: transport (rows parsed, encoded and batched,
# then discarded: the backend alone), once per case; the backend's whole
# instruction count is printed (start-up included, the same for every
# case), with each case's ratio to the first.
#
#   bench/copy_instructions.sh [ROWS] [CASE...]
#
# A CASE is the COPY's extra options, after FORMAT csv: '' (none), or e.g.
# "ON_ERROR ignore", "on_conflict 'replace'".  Default: '' "ON_ERROR ignore"
# "on_conflict 'replace'" "on_conflict 'error'".  The extension must be
# installed where PG_CONFIG (default pg_config) points; run as root, the
# backend runs as user postgres.
set -euo pipefail
bench_src=$(cd "$(dirname "$0")" && pwd)
rows=${1:-1000000}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=('' 'ON_ERROR ignore' "on_conflict 'replace'" "on_conflict 'error'")
PG_CONFIG=${PG_CONFIG:-pg_config}
bindir=$("$PG_CONFIG" --bindir)
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }

dir=$(mktemp -d /var/tmp/tcopy-copy-ir.XXXXXX)
trap 'rm -rf "$dir"' EXIT
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
	chown postgres "$dir"
	as_pg=(runuser -u postgres --)
fi
awk -v kind=accounts -v rows="$rows" -f "$bench_src/gen_data.awk" >"$dir/accounts.csv"
"${as_pg[@]}" "$bindir/initdb" -D "$dir/data" --no-locale -E UTF8 >/dev/null 2>&1
echo "shared_preload_libraries = 'tcopy'" >>"$dir/data/postgresql.conf"

# single SQL: run it in a single-user backend; CALLGRIND=file: under callgrind
single()
{
	local out=${CALLGRIND:-}
	if [ -n "$out" ]; then
		"${as_pg[@]}" valgrind --tool=callgrind --callgrind-out-file="$out" \
			"$bindir/postgres" --single -D "$dir/data" -j postgres <<<"$1" >"$dir/out.log" 2>&1
	else
		"${as_pg[@]}" "$bindir/postgres" --single -D "$dir/data" -j postgres <<<"$1" >"$dir/out.log" 2>&1
	fi
	if grep -q "ERROR:" "$dir/out.log"; then
		echo "the backend failed:" >&2
		grep -A3 "ERROR:" "$dir/out.log" >&2
		exit 1
	fi
}

single "CREATE EXTENSION tcopy;
CREATE SERVER nul FOREIGN DATA WRAPPER tcopy OPTIONS (address 'null:');
CREATE USER MAPPING FOR PUBLIC SERVER nul;
CREATE FOREIGN TABLE acc (aid int NOT NULL, bid int, abalance int, filler char(84))
	SERVER nul OPTIONS (key 'aid');"

printf '%-28s %15s %8s\n' case instructions ratio
first=
for c in "${cases[@]}"; do
	opts="FORMAT csv${c:+, $c}"
	CALLGRIND="$dir/cg.out" single "COPY acc FROM '$dir/accounts.csv' ($opts);"
	ir=$(sed -n 's/^summary: *//p' "$dir/cg.out")
	first=${first:-$ir}
	printf '%-28s %15s %8.4f\n' "${c:-(none)}" "$ir" "$(awk -v a="$ir" -v b="$first" 'BEGIN { print a / b }')"
	rm -f "$dir/cg.out"
done
