#!/usr/bin/env bash
# bench/ssi_pgbench.sh: pgbench's TPC-B-like script at SERIALIZABLE on a
# heap database and a tcopy database of one running cluster, alternating,
# and the share of transactions that fail with 40001 (issue 48: SSI at the
# granularity of a key's part of a tcopy table).
#
#   PGHOST=... PGPORT=... bench/ssi_pgbench.sh [SECONDS] [CLIENTS] [RUNS]
#
# The databases: "heap", made by `pgbench -i -s S`, and "tcopy", with
# CREATE EXTENSION tcopy, a server ts, SELECT tcopy.create_pgbench_tables('ts')
# and `pgbench -i -I g -s S` (bench/pgbench.sh makes the same two).  Each
# run is pgbench -n -c CLIENTS -T SECONDS --max-tries=1 --failures-detailed
# with default_transaction_isolation = serializable; a failed transaction
# is not retried, so "failures" is the share of attempts that failed.
set -euo pipefail
secs=${1:-20}; clients=${2:-4}; runs=${3:-2}
for r in $(seq "$runs"); do
	for db in heap tcopy; do
		out=$(PGOPTIONS='-c default_transaction_isolation=serializable' \
			pgbench -n -c "$clients" -j 2 -T "$secs" --max-tries=1 --failures-detailed "$db" 2>&1)
		tps=$(awk '/^tps = / { print $3; exit }' <<<"$out")
		done_=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
		ser=$(sed -n 's/^number of serialization failures: \([0-9]*\) (\(.*\))/\1 (\2)/p' <<<"$out")
		echo "run $r $db: committed tps $tps, committed $done_, serialization failures ${ser:-0}"
	done
done
