#!/usr/bin/env bash
# bench/scan.sh: reading loaded rows back, tcopy against a heap twin (issue 45).
#
#   bench/scan.sh [--rows N] [--runs R] [--label L] [--install] [--keep]
#
# With the installed extension and tserver (--install: `make install` of
# this tree first), a throwaway cluster and tserver (bench/lib_accounts.sh)
# and four tables of N pgbench_accounts rows (default 10,000,000;
# bench/gen_data.awk's, cached as bench/run.sh caches them):
#   accounts       tcopy, (aid, bid, abalance, filler char(84)) keyed by aid,
#                  loaded by COPY, then ANALYZE;
#   accounts_heap  its heap twin: COPY, PRIMARY KEY (aid), VACUUM ANALYZE;
#   narrow         tcopy, the same rows without filler (COPY FROM PROGRAM
#                  cut), then ANALYZE;
#   narrow_heap    its heap twin, as accounts_heap.
# The queries, on each pair (B = max(1, N / 200000), the middle branch;
# X = N / 2, a range of 100,000 aids in the middle):
#   count_sum  SELECT count(*), sum(abalance) FROM t
#   filter     SELECT count(*) FROM t WHERE bid = B
#   range      SELECT sum(abalance) FROM t WHERE aid BETWEEN X AND X + 99999
#   group      SELECT bid, sum(abalance) FROM t GROUP BY bid
#   full       SELECT count(*) FROM t WHERE octet_length(filler) + aid + bid
#              + abalance <> 0 (narrow: aid + bid + abalance <> 0): every
#              column fetched and nothing that a pushdown of comparisons
#              can ship (arithmetic and functions stay in Postgres); the
#              EXPLAIN saved beside the figures shows the columns fetched
#   last10     SELECT aid, abalance FROM t ORDER BY aid DESC LIMIT 10 (the
#              heap's backward index scan; tcopy's scan read backward)
#   max        SELECT max(aid) FROM t
# Each run (R, default 3) times every query on both tables of its pair,
# back to back, the side that goes first alternating between queries and
# runs, each in a psql session of its own after a warm-up statement on the
# same table (SELECT 1 FROM t LIMIT 1: the connection to the tserver and
# the caches), timed by psql's \timing (wall time as the client sees it,
# planning included).  Then one more run of each query on each side
# measures the backend's memory: its RssAnon (private anonymous memory:
# palloc'd and malloc'd, not shared buffers nor mapped files) read from
# /proc/PID/status before the query (idle, after the warm-up) and every
# 5 ms while it runs; the figures are the peak and the peak less the idle
# base ("what the scan added"; the issue's target is <= 16 MB).  That
# run has jit off: LLVM's JIT compiler takes some 10 MB of its own in any
# query costly enough, heap or tcopy, which is not the scan's.  Parallel
# workers, if any, are not counted: the leader only.
#
# Writes, under bench/results/ (SCAN_OUT): issue45_scan_L.tsv (one line per
# query: medians, min, max, tcopy / heap, memory), issue45_scan_L_runs.tsv
# (every timing) and issue45_scan_L.md (the summary, the settings, and the
# EXPLAIN (VERBOSE, COSTS OFF) of each query on both sides).  L defaults
# to the short commit and N.  Exit status 1 when a query failed or the two
# sides of a query gave different results.
#
# Environment: PG_CONFIG, TSERVER (default `pg_config --bindir`/tserver),
# SCAN_DIR (default /var/tmp/tcopy-scan), SCAN_PORT (default 54390),
# SCAN_USER (the user Postgres runs as when run as root, default
# postgres), DATA_DIR (the cached datasets, default
# /var/tmp/tcopy-bench/data), SCAN_LOCK (a file held with flock from
# before --install's `make install` until the cluster has loaded the
# extension and the tserver runs, so that another install under the same
# lock cannot swap the build measured).
set -euo pipefail

rows=10000000
runs=3
label=""
install=0
keep=0
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
		--label) label=${2:?}; shift 2 ;;
		--install) install=1; shift ;;
		--keep) keep=1; shift ;;
		*) sed -n '4p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
case "$rows$runs" in
	*[!0-9]*) echo "scan.sh: --rows and --runs take positive integers" >&2; exit 2 ;;
esac
[ "$rows" -ge 1000 ] && [ "$runs" -ge 1 ] || { echo "scan.sh: --rows >= 1000, --runs >= 1" >&2; exit 2; }
case "$label" in
	*[!A-Za-z0-9_.-]*) echo "scan.sh: --label takes letters, digits, '_', '.', '-'" >&2; exit 2 ;;
esac

bench_src=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$bench_src")
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
label=${label:-${commit}_${rows}}
bindir=$("${PG_CONFIG:-pg_config}" --bindir)
pkglibdir=$("${PG_CONFIG:-pg_config}" --pkglibdir)
dir=${SCAN_DIR:-/var/tmp/tcopy-scan}
port=${SCAN_PORT:-54390}
user=${SCAN_USER:-postgres}
data_dir=${DATA_DIR:-/var/tmp/tcopy-bench/data}
tserver=${TSERVER:-$bindir/tserver}
out_dir=${SCAN_OUT:-$bench_src/results}
. "$bench_src/lib_accounts.sh"

say() { echo "[$(date +%H:%M:%S)] $*" >&2; }
started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(cut -d" " -f1-3 /proc/loadavg)

csv=$(accounts_csv "$rows")

# ---- the build, the cluster, the tables ----
if [ -n "${SCAN_LOCK:-}" ]; then
	exec 8>"$SCAN_LOCK"
	say "waiting for $SCAN_LOCK"
	flock 8
fi
if [ "$install" = 1 ]; then
	say "make install ($top, $commit)"
	make -s -C "$top" install >/dev/null
fi
build_id="tcopy.so $(md5sum <"$pkglibdir/tcopy.so" | cut -c1-12), tserver $(md5sum <"$tserver" | cut -c1-12)"
if [ "$install" = 1 ]; then
	build_id="the build of this tree ($commit), installed: $build_id"
else
	build_id="the installed build ($pkglibdir; not necessarily this tree's): $build_id"
fi
accounts_start
if [ -n "${SCAN_LOCK:-}" ]; then
	# the postmaster holds the loaded library and the tserver its binary;
	# unlocking the open file description releases the lock for the
	# children that inherited it too
	flock -u 8
	exec 8>&-
fi
if [ "$keep" = 0 ]; then
	trap 'accounts_cleanup; rm -rf "$dir"' EXIT
fi
psql_pg >/dev/null <<EOF
CREATE FOREIGN TABLE narrow (aid int NOT NULL, bid int, abalance int) SERVER ts OPTIONS (key 'aid');
CREATE TABLE accounts_heap (aid int NOT NULL, bid int, abalance int, filler char(84));
CREATE TABLE narrow_heap (aid int NOT NULL, bid int, abalance int);
EOF

# timed STEP SQL...: run the statements in one session; prints the seconds
timed()
{
	local t0 t1
	t0=$(date +%s.%N)
	psql_pg "$@" >/dev/null
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}

narrow_src="PROGRAM 'cut -d, -f1-3 $csv'"
declare -A load
say "loading $rows rows into accounts (tcopy)"
load[accounts]=$(timed -c "COPY accounts FROM '$csv' (FORMAT csv)")
load[accounts_an]=$(timed -c "ANALYZE accounts")
say "loading accounts_heap"
load[accounts_heap]=$(timed -c "COPY accounts_heap FROM '$csv' (FORMAT csv)")
load[accounts_heap_an]=$(timed -c "ALTER TABLE accounts_heap ADD PRIMARY KEY (aid)" -c "VACUUM ANALYZE accounts_heap")
say "loading narrow (tcopy) and narrow_heap"
load[narrow]=$(timed -c "COPY narrow FROM $narrow_src (FORMAT csv)")
load[narrow_an]=$(timed -c "ANALYZE narrow")
load[narrow_heap]=$(timed -c "COPY narrow_heap FROM $narrow_src (FORMAT csv)")
load[narrow_heap_an]=$(timed -c "ALTER TABLE narrow_heap ADD PRIMARY KEY (aid)" -c "VACUUM ANALYZE narrow_heap")
psql_pg -c "CHECKPOINT" >/dev/null
for t in accounts accounts_heap narrow narrow_heap; do
	n=$(psql_pg -c "SELECT count(*) FROM $t")
	[ "$n" = "$rows" ] || { say "$t holds $n rows, not $rows"; exit 1; }
done

# ---- the queries: id, pair, SQL with @ for the table ----
bid=$((rows / 200000)); [ "$bid" -ge 1 ] || bid=1
x=$((rows / 2))
queries=(
	"count_sum|accounts|SELECT count(*), sum(abalance) FROM @"
	"filter|accounts|SELECT count(*) FROM @ WHERE bid = $bid"
	"range|accounts|SELECT sum(abalance) FROM @ WHERE aid BETWEEN $x AND $((x + 99999))"
	"group|accounts|SELECT bid, sum(abalance) FROM @ GROUP BY bid"
	"full|accounts|SELECT count(*) FROM @ WHERE octet_length(filler) + aid + bid + abalance <> 0"
	"last10|accounts|SELECT aid, abalance FROM @ ORDER BY aid DESC LIMIT 10"
	"max|accounts|SELECT max(aid) FROM @"
	"count_sum|narrow|SELECT count(*), sum(abalance) FROM @"
	"filter|narrow|SELECT count(*) FROM @ WHERE bid = $bid"
	"range|narrow|SELECT sum(abalance) FROM @ WHERE aid BETWEEN $x AND $((x + 99999))"
	"group|narrow|SELECT bid, sum(abalance) FROM @ GROUP BY bid"
	"full|narrow|SELECT count(*) FROM @ WHERE aid + bid + abalance <> 0"
)
# table PAIR SIDE: the table's name
table() { if [ "$2" = tcopy ]; then echo "$1"; else echo "${1}_heap"; fi; }

status=0
runs_tsv=$dir/runs.tsv
printf 'run\tquery\tpair\tside\tms\n' >"$runs_tsv"
mem_tsv=$dir/mem.tsv
printf 'query\tpair\tside\tbase_kb\tpeak_kb\n' >"$mem_tsv"
declare -A result

# measure RUN ID PAIR SIDE SQL: one timed run in a session of its own
measure()
{
	local run=$1 id=$2 pair=$3 side=$4 sql=$5 t out ms res
	t=$(table "$pair" "$side")
	sql=${sql//@/$t}
	if ! out=$(psql_pg -c "SELECT 1 FROM $t LIMIT 1" -c '\timing on' -c "$sql" 2>&1); then
		say "run $run, $id on $t failed: $out"
		printf '%s\t%s\t%s\t%s\tfailed\n' "$run" "$id" "$pair" "$side" >>"$runs_tsv"
		status=1
		return
	fi
	ms=$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$out" | tail -1)
	res=$(grep -v "^Time: " <<<"$out" | sed 1d | sort | md5sum | cut -c1-12)
	if [ -n "${result[$id.$pair]:-}" ] && [ "${result[$id.$pair]}" != "$res" ]; then
		say "run $run, $id on $t: its result differs from the other side's"
		status=1
	fi
	result[$id.$pair]=$res
	printf '%s\t%s\t%s\t%s\t%s\n' "$run" "$id" "$pair" "$side" "$ms" >>"$runs_tsv"
	say "run $run: $id on $t: $ms ms"
}

for run in $(seq "$runs"); do
	i=0
	for q in "${queries[@]}"; do
		IFS='|' read -r id pair sql <<<"$q"
		if [ $(((run + i) % 2)) = 1 ]; then sides="tcopy heap"; else sides="heap tcopy"; fi
		for side in $sides; do measure "$run" "$id" "$pair" "$side" "$sql"; done
		i=$((i + 1))
	done
done

# mem_run ID PAIR SIDE SQL: the backend's RssAnon, idle and at its peak
# while SQL runs (sampled every 5 ms by a perl loop running as this user)
mem_run()
{
	local id=$1 pair=$2 side=$3 sql=$4 t pidf=$dir/mem.pid stopf=$dir/mem.stop sampler out
	t=$(table "$pair" "$side")
	sql=${sql//@/$t}
	rm -f "$pidf" "$stopf"
	perl -e '
		use Time::HiRes qw(sleep time);
		my ($pidf, $stopf) = @ARGV;
		sub anon { open(my $f, "<", "/proc/$_[0]/status") or return undef;
			while (<$f>) { return $1 if /^RssAnon:\s+(\d+)/ } undef }
		my $deadline = time + 60;
		sleep 0.005 until (-s $pidf || time > $deadline);
		open(my $p, "<", $pidf) or die "no pid\n";
		my ($pid) = <$p> =~ /(\d+)/;
		sleep 0.2;				# the session sleeps 0.5 s before the query
		my $base = anon($pid) // die "no backend $pid\n";
		my $peak = $base;
		while (!-e $stopf) {
			my $a = anon($pid) // last;
			$peak = $a if $a > $peak;
			sleep 0.005;
		}
		print "$base\t$peak\n";' "$pidf" "$stopf" >"$dir/mem.out" &
	sampler=$!
	if ! out=$(psql_pg -o /dev/null 2>&1 <<EOF
SET jit = off;
SELECT 1 FROM $t LIMIT 1;
SELECT pg_backend_pid() \g $pidf
SELECT pg_sleep(0.5);
$sql;
EOF
	); then
		say "memory run of $id on $t failed: $out"
		status=1
	fi
	touch "$stopf"
	wait "$sampler" || true
	printf '%s\t%s\t%s\t%s\n' "$id" "$pair" "$side" "$(cat "$dir/mem.out")" >>"$mem_tsv"
	say "memory: $id on $t: base, peak kB: $(tr '\t' ' ' <"$dir/mem.out")"
}
for q in "${queries[@]}"; do
	IFS='|' read -r id pair sql <<<"$q"
	for side in tcopy heap; do mem_run "$id" "$pair" "$side" "$sql"; done
done

# ---- the summary ----
mkdir -p "$out_dir"
tsv=$out_dir/issue45_scan_$label.tsv
md=$out_dir/issue45_scan_$label.md
cp "$runs_tsv" "$out_dir/issue45_scan_${label}_runs.tsv"
# one line per query: medians (min, max) in seconds, tcopy / heap, memory
awk -F'\t' -v OFS='\t' '
	function median(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	FNR == 1 { file++; next }
	file == 1 { base[$1 "|" $2 "|" $3] = $4; peak[$1 "|" $2 "|" $3] = $5; next }
	file == 2 { sql[$1 "|" $2] = $3; order[++nq] = $1 "|" $2; next }
	$5 != "failed" { k = $2 "|" $3 "|" $4; v[k, ++n[k]] = $5 / 1000 }
	END {
		print "query", "pair", "sql", "heap_s", "heap_min_s", "heap_max_s", "tcopy_s", "tcopy_min_s", "tcopy_max_s",
			"tcopy_over_heap", "tcopy_rss_anon_peak_kb", "tcopy_rss_anon_added_kb", "heap_rss_anon_peak_kb", "heap_rss_anon_added_kb"
		for (q = 1; q <= nq; q++) {
			split(order[q], p, "|")
			for (s = 0; s < 2; s++) {
				side = s ? "tcopy" : "heap"; k = order[q] "|" side
				delete a; for (i = 1; i <= n[k]; i++) a[i] = v[k, i]
				for (i = 2; i <= n[k]; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
				med[side] = n[k] ? median(a, n[k]) : ""
				lo[side] = n[k] ? a[1] : ""; hi[side] = n[k] ? a[n[k]] : ""
			}
			ratio = (med["heap"] > 0 && med["tcopy"] != "") ? sprintf("%.2f", med["tcopy"] / med["heap"]) : "-"
			kt = order[q] "|tcopy"; kh = order[q] "|heap"
			print p[1], p[2], sql[order[q]], sprintf("%.3f", med["heap"]), sprintf("%.3f", lo["heap"]), sprintf("%.3f", hi["heap"]),
				sprintf("%.3f", med["tcopy"]), sprintf("%.3f", lo["tcopy"]), sprintf("%.3f", hi["tcopy"]), ratio,
				peak[kt], peak[kt] - base[kt], peak[kh], peak[kh] - base[kh]
		}
	}' "$mem_tsv" <(printf 'query\tpair\tsql\n'; for q in "${queries[@]}"; do tr '|' '\t' <<<"${q//@/t}"; done) \
	"$runs_tsv" >"$tsv"

settings=$(psql_pg -F' ' -c "SELECT name, setting FROM pg_settings WHERE name IN
	('jit', 'max_parallel_workers_per_gather', 'shared_buffers', 'work_mem') ORDER BY name" | paste -sd, - | sed 's/,/, /g')
{
	echo "# Issue 45: scans of $rows rows, tcopy against a heap twin ($label)"
	echo
	echo "\`bench/scan.sh --rows $rows --runs $runs --label $label$([ "$install" = 1 ] && echo " --install")\`; $started, the script from git $commit;"
	echo "$build_id; $(nproc) cores, load average at the start $load_start; Postgres $("$bindir/postgres" --version | awk '{print $3}'), $settings."
	echo "Loads (s): accounts tcopy COPY ${load[accounts]} + ANALYZE ${load[accounts_an]}, heap COPY ${load[accounts_heap]} +"
	echo "PRIMARY KEY and VACUUM ANALYZE ${load[accounts_heap_an]}; narrow tcopy ${load[narrow]} + ${load[narrow_an]}, heap ${load[narrow_heap]} + ${load[narrow_heap_an]}."
	echo
	echo "Medians of $runs runs (min-max), wall time seen by psql (\\timing), the side that goes first alternating;"
	echo "memory: the backend's RssAnon at its peak during the query, and in brackets what the query added to the idle backend's"
	echo "(one more run of each query, with jit off: LLVM takes some 10 MB of its own; the leader only, without parallel workers)."
	echo "B = $bid, X = $x; t is accounts / accounts_heap (with the 84-byte filler) or narrow / narrow_heap."
	echo
	echo "| query | table | heap (s) | tcopy (s) | tcopy / heap | tcopy memory, MB | heap memory, MB |"
	echo "|---|---|---|---|---|---|---|"
	awk -F'\t' 'NR > 1 {
		printf "| `%s` | %s | %s (%s-%s) | %s (%s-%s) | %s | %.1f (+%.1f) | %.1f (+%.1f) |\n", $3, $2, $4, $5, $6, $7, $8, $9, $10,
			$11 / 1024, $12 / 1024, $13 / 1024, $14 / 1024 }' "$tsv"
	echo
	echo "Targets (issue 45): every query <= 1.0 x the heap; count/sum and GROUP BY pushed down <= 0.5 x;"
	echo "the full scan of every column, nothing pushed down, <= 1.5 x; a scan's backend memory <= 16 MB."
	echo "Every timing: issue45_scan_${label}_runs.tsv; one line per query: issue45_scan_$label.tsv."
	echo
	echo "## Plans: EXPLAIN (VERBOSE, COSTS OFF)"
	for q in "${queries[@]}"; do
		IFS='|' read -r id pair sql <<<"$q"
		for side in tcopy heap; do
			t=$(table "$pair" "$side")
			echo
			echo "$id, $side: \`${sql//@/$t}\`"
			echo '```'
			psql_pg -c "EXPLAIN (VERBOSE, COSTS OFF) ${sql//@/$t}"
			echo '```'
		done
	done
} >"$md"
say "wrote $tsv, $md"
sed -n '/^| query/,/^$/p' "$md"
exit $status
