#!/usr/bin/env bash
# bench/conflict_instructions.sh: what on_conflict costs the tserver, in
# instructions (valgrind --tool=callgrind: repeatable on a shared, noisy
# machine, unlike seconds).  For each load and policy, a fresh
# build/tserver runs under callgrind and build/tserver-cli loads ROWS rows
# into it; the tserver's whole instruction count is printed (start-up and
# shutdown included, the same for every policy):
#   sorted-empty     ROWS rows in key order into an empty table
#   sorted-disjoint  ROWS rows in key order above ROWS stored rows
# each with the session in memory (default --session-memory-mb) and
# spilled (--session-memory-mb 4: direct SST files, checked as written).
#
#   bench/conflict_instructions.sh [ROWS]      (default 200000)
#
# BUILD (default build/) names the tserver and tserver-cli to run;
# POLICIES (default "replace error") the policies, "none" for a load
# without --on-conflict (as a tserver-cli from before the option loads).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
rows=${1:-200000}
policies=${POLICIES:-replace error}
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }

# run LOAD POLICY MEMORY_ARGS...: the tserver's instruction count
run()
{
	local load=$1 policy=$2
	shift 2
	local dir pid
	dir=$(mktemp -d /var/tmp/tcopy-conflict-ir.XXXXXX)
	valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
		"$build/tserver" --data "$dir/data" --listen "unix:$dir/ts.sock" \
		--allow-uid "$(id -u)" "$@" >"$dir/log" 2>&1 &
	pid=$!
	for _ in $(seq 600); do [ -S "$dir/ts.sock" ] && break; sleep 0.1; done
	cli() { "$build/tserver-cli" --address "unix:$dir/ts.sock" "$@" >/dev/null; }
	local flags=()
	[ "$policy" != none ] && flags=(--on-conflict "$policy")
	if [ "$load" = sorted-disjoint ]; then
		cli load t --rows "$rows"
		cli load t --rows "$rows" --start $((rows + 1)) "${flags[@]}"
	else
		cli load t --rows "$rows" "${flags[@]}"
	fi
	kill -TERM "$pid"
	wait "$pid" || true
	sed -n 's/^summary: *//p' "$dir/cg.out"
	rm -rf "$dir"
}

printf '%-16s %-8s %-8s %15s\n' load session policy instructions
for load in sorted-empty sorted-disjoint; do
	for session in memory spilled; do
		args=()
		[ "$session" = spilled ] && args=(--session-memory-mb 4)
		for policy in $policies; do
			printf '%-16s %-8s %-8s %15s\n' "$load" "$session" "$policy" \
				"$(run "$load" "$policy" "${args[@]}")"
		done
	done
done
