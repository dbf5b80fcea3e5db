#!/usr/bin/env bash
# bench/sst_options.sh: what building and reading the tserver's SST files
# costs under each compression and block size (issue 47), measured with
# bench/tserver_load.sh (tserver-cli loads pgbench_accounts rows into a
# throwaway tserver: the tserver alone, no Postgres), the settings
# alternating round by round; medians of the tserver's CPU (user + system)
# for the load and its commit, the load's wall, the bytes written to disk,
# the data directory's size and a full scan's wall.
#
#   bench/sst_options.sh [--rows N] [--rounds R] [--shuffle] [SETTING...]
#
# A SETTING is "COMPRESSION/BLOCK_KB"; default: lz4/16 (the tserver's
# default) none/16 zstd/16 lz4/4 lz4/64.
set -euo pipefail
rows=5000000
rounds=3
shuffle=
while [ $# -gt 0 ]; do
	case $1 in
	--rows) rows=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--shuffle) shuffle=--shuffle; shift ;;
	--*) echo "usage: $0 [--rows N] [--rounds R] [--shuffle] [COMPRESSION/BLOCK_KB...]" >&2; exit 2 ;;
	*) break ;;
	esac
done
settings=("$@")
[ ${#settings[@]} -gt 0 ] || settings=(lz4/16 none/16 zstd/16 lz4/4 lz4/64)
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq "$rounds"); do
	for s in "${settings[@]}"; do
		c=${s%/*}
		b=${s#*/}
		TSERVER_ARGS="--sst-compression $c --sst-block-kb $b" "$here/tserver_load.sh" --rows "$rows" $shuffle |
			awk -v s="$s" -v r="$r" '
				/^  wall/ { wall = $2 }
				/tserver CPU/ { cpu = $4 + $7 }
				/tserver wrote/ { wrote = $3 }
				/rows read back/ { scan = $6 }
				/data directory/ { data = $3 }
				END { printf "%s\t%d\t%.2f\t%.2f\t%.1f\t%d\t%.2f\n", s, r, cpu, wall, wrote, data, scan }' >>"$out"
	done
done
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "tserver_load.sh, $rows pgbench_accounts rows (${shuffle:+shuffled}${shuffle:-sorted}), medians of $rounds rounds"
echo
echo "| compression / block KB | tserver CPU s | load wall s | written MB | data MB | full scan s |"
echo "|---|---|---|---|---|---|"
for s in "${settings[@]}"; do
	row="| $s"
	for col in 3 4 5 6 7; do
		row="$row | $(awk -F'\t' -v s="$s" -v c="$col" '$1 == s { print $c }' "$out" | median)"
	done
	echo "$row |"
done
echo
echo "Every run (setting, round, CPU s, wall s, written MB, data MB, scan s):"
echo '```'
cat "$out"
echo '```'
