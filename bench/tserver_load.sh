#!/usr/bin/env bash
# Load pgbench_accounts-shaped rows into a throwaway tserver through the
# client library (tserver-cli load) and report the tserver's figures:
# rows/s of one committed session, the tserver's peak RSS, its CPU time and
# what it wrote to disk.
#
#   bench/tserver_load.sh [--rows N] [--shuffle] [--batch-rows B] [--window W]
#                         [--session-memory-mb M] [--keep]
#
# The tserver logs at debug level, so that the commit's prepare and publish
# times (its "session N committed" line) are reported too.
#
# Binaries: $TSERVER and $TSERVER_CLI, else build/, else the PATH;
# $TSERVER_ARGS: more tserver arguments (e.g. "--sst-compression zstd").
set -euo pipefail

rows=10000000
shuffle=""
batch_rows=1000
window=4
session_mb=64
keep=0
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=$2; shift 2 ;;
		--shuffle) shuffle="--shuffle"; shift ;;
		--batch-rows) batch_rows=$2; shift 2 ;;
		--window) window=$2; shift 2 ;;
		--session-memory-mb) session_mb=$2; shift 2 ;;
		--keep) keep=1; shift ;;
		*) echo "usage: $0 [--rows N] [--shuffle] [--batch-rows B] [--window W] [--session-memory-mb M] [--keep]" >&2; exit 2 ;;
	esac
done

top=$(cd "$(dirname "$0")/.." && pwd)
pick() { # pick NAME: build/NAME, else NAME on the PATH
	if [ -x "$top/build/$1" ]; then echo "$top/build/$1"; else command -v "$1"; fi
}
tserver=${TSERVER:-$(pick tserver)}
cli=${TSERVER_CLI:-$(pick tserver-cli)}

work=$(mktemp -d "${TMPDIR:-/tmp}/tcopy-bench.XXXXXX")
sock="$work/ts.sock"
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	[ "$keep" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT

# tserver-cli runs as this user: admitted by its uid
"$tserver" --data "$work/data" --listen "unix:$sock" --session-memory-mb "$session_mb" \
	--log-level debug --allow-uid "$(id -u)" ${TSERVER_ARGS:-} 2>"$work/tserver.log" &
pid=$!
for _ in $(seq 300); do
	grep -q "tserver ready" "$work/tserver.log" 2>/dev/null && break
	kill -0 "$pid" 2>/dev/null || { cat "$work/tserver.log"; exit 1; }
	sleep 0.1
done

clk=$(getconf CLK_TCK)
cpu() { awk -v t="$clk" '{ printf "%.2f %.2f", $14 / t, $15 / t }' "/proc/$1/stat"; }
read -r u0 s0 <<<"$(cpu "$pid")"
wb0=$(awk '/^write_bytes/ { print $2 }' "/proc/$pid/io")
start=$(date +%s.%N)
out=$("$cli" --address "unix:$sock" load accounts --rows "$rows" $shuffle \
	--batch-rows "$batch_rows" --window "$window")
end=$(date +%s.%N)
read -r u1 s1 <<<"$(cpu "$pid")"
wb1=$(awk '/^write_bytes/ { print $2 }' "/proc/$pid/io")
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")
scan0=$(date +%s.%N)
count=$("$cli" --address "unix:$sock" scan accounts --format count)
scan1=$(date +%s.%N)
data_mb=$(du -sm "$work/data" | awk '{ print $1 }')
commit=$(sed -n 's/.* committed [0-9]* rows (\([0-9]*\) runs): prepare \([0-9]*\) ms, publish \([0-9]*\) ms.*/\1 \2 \3/p' \
	"$work/tserver.log" | tail -1)
read -r runs prepare_ms publish_ms <<<"${commit:-0 0 0}"

awk -v rows="$rows" -v start="$start" -v end="$end" -v u0="$u0" -v u1="$u1" \
	-v s0="$s0" -v s1="$s1" -v hwm="$hwm" -v wb="$((wb1 - wb0))" \
	-v count="$count" -v order="${shuffle:+shuffled}" -v batch="$batch_rows" -v window="$window" \
	-v session_mb="$session_mb" -v runs="$runs" -v prepare_ms="$prepare_ms" \
	-v publish_ms="$publish_ms" -v scan="$(awk -v a="$scan0" -v b="$scan1" 'BEGIN { print b - a }')" \
	-v data_mb="$data_mb" 'BEGIN {
	wall = end - start
	u = u1 - u0
	s = s1 - s0
	printf "tserver load: %d pgbench_accounts rows (%s keys), batches of %d, window %d, session memory %d MB\n", rows, order ? order : "sorted", batch, window, session_mb
	printf "  wall            %.2f s (load and commit, client included)\n", wall
	printf "  throughput      %.0f rows/s\n", rows / wall
	printf "  tserver CPU     user %.2f s, system %.2f s\n", u, s
	printf "  tserver peak RSS %.1f MB\n", hwm / 1024
	printf "  tserver wrote   %.1f MB to disk\n", wb / 1048576
	printf "  commit          %d runs, prepare %d ms, publish %d ms\n", runs, prepare_ms, publish_ms
	printf "  rows read back  %d, in %.2f s (a full scan)\n", count, scan
	printf "  data directory  %d MB\n", data_mb
	if (count != rows) { print "  MISMATCH: rows read back differ from rows loaded"; exit 1 }
}'
echo "  client: $out"
