#!/usr/bin/env bash
# bench/backup_lock.sh: how long a tserver backup holds prepares and
# resolves back (its backup_lock), into a directory on the data
# directory's file system and into one on another (a tmpfs of its own),
# for one or more tserver binaries side by side (issue 28).
#
#   bench/backup_lock.sh [--rows N] [--runs R] TSERVER...
#
# Per binary: a tserver on a fresh data directory under BACKUP_LOCK_DIR
# (default /var/tmp/tcopy-backup-lock, which must not be a tmpfs), N rows
# (default 2,000,000) loaded by tserver-cli (TSERVER_CLI, default the one
# beside the first binary), and one session of 10 rows left prepared.  Then R rounds
# (default 3), each binary in turn: a backup into the same file system and
# one into the tmpfs.  Prints, per binary and place, each backup's lock
# time and total time as `tserver-cli backup` reports them, and the
# medians.  Needs root (the mount).
set -euo pipefail

rows=2000000
runs=3
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
		--*) sed -n '7,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
		*) break ;;
	esac
done
[ $# -ge 1 ] || { sed -n '7,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "backup_lock.sh: needs root, to mount a tmpfs" >&2; exit 2; }

work=${BACKUP_LOCK_DIR:-/var/tmp/tcopy-backup-lock}
cli=${TSERVER_CLI:-$(dirname "$1")/tserver-cli}
pids=()
cleanup()
{
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	mountpoint -q "$work/tmpfs" && umount "$work/tmpfs"
	rm -rf "$work"
}
trap cleanup EXIT
rm -rf "$work"
mkdir -p "$work/tmpfs" "$work/same"
mount -t tmpfs -o size=2g,mode=0700 tcopy-backup-lock "$work/tmpfs"

# start and load one tserver per binary: tserver k on $work/ts_k
k=0
for bin in "$@"; do
	k=$((k + 1))
	"$bin" --data "$work/ts_$k" --listen "unix:$work/ts_$k.sock" --allow-uid 0 \
		>"$work/ts_$k.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 200); do grep -q "tserver ready" "$work/ts_$k.log" && break; sleep 0.05; done
	"$cli" --address "unix:$work/ts_$k.sock" load t --rows "$rows" >/dev/null
	"$cli" --address "unix:$work/ts_$k.sock" load p --rows 10 --prepare "bench:$k" >/dev/null
done

printf '| tserver | backup into | round | lock held (ms) | backup (s) |\n|---|---|---|---|---|\n'
for r in $(seq "$runs"); do
	k=0
	for bin in "$@"; do
		k=$((k + 1))
		for place in same tmpfs; do
			out=$("$cli" --address "unix:$work/ts_$k.sock" backup "$work/$place/b-$k-$r")
			# backup into DIR: ..., T s (prepares and resolves waited L ms)
			total=$(sed -n 's/.*, \([0-9.]*\) s (prepares.*/\1/p' <<<"$out" | head -1)
			lock=$(sed -n 's/.*waited \([0-9.]*\) ms).*/\1/p' <<<"$out" | head -1)
			printf '| %s | %s | %d | %s | %s |\n' "$bin" "$place" "$r" "$lock" "$total"
			echo "$bin $place $lock $total" >>"$work/raw"
			rm -rf "$work/$place/b-$k-$r"
		done
	done
done
echo
printf '| tserver | backup into | lock held, median (ms) | backup, median (s) |\n|---|---|---|---|\n'
for bin in "$@"; do
	for place in same tmpfs; do
		lock=$(awk -v b="$bin" -v p="$place" '$1 == b && $2 == p { print $3 }' "$work/raw" | sort -n |
			awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
		total=$(awk -v b="$bin" -v p="$place" '$1 == b && $2 == p { print $4 }' "$work/raw" | sort -n |
			awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
		printf '| %s | %s | %s | %s |\n' "$bin" "$place" "$lock" "$total"
	done
done
