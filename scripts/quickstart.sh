#!/usr/bin/env bash
# The README's first command: install packages, build, install, then the
# main job: a real bulk load of pgbench_accounts rows (10M by default, about
# 1 GB of CSV) into a tcopy table on a throwaway Postgres cluster and
# tserver, beside Postgres' own COPY into an unlogged heap table, with its
# figures.  Options go to bench/run.sh (e.g. --rows 1000000).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
make
make install

out=$(mktemp -d "${TMPDIR:-/tmp}/tcopy-quickstart.XXXXXX")
BENCH_OUT="$out" bench/run.sh --no-build --cases 2,3,3w,6 --datasets accounts \
	--runs 1 --no-profile --no-concurrency "$@"
echo
sed -n '/^## accounts/,/^## /p' "$out/RESULTS.md" | sed '$d'
echo "full report: $out/RESULTS.md"
