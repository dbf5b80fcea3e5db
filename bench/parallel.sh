#!/usr/bin/env bash
# bench/parallel.sh: parallel COPY (issue 17): the accounts rows, sorted and
# shuffled, and the mixed rows loaded into a tcopy table with 0 (serial), 1,
# 2 and 4 parallel workers, beside Postgres' COPY into an unlogged heap and
# into a logged heap with a primary key, in one alternating run.
#
#   bench/parallel.sh [--rows N] [--mixed-rows M] [--runs R] [--heap-runs H]
#                     [--configs LIST] [--datasets LIST] [--keep] [--report TSV]
#
# Configs (--configs, comma-separated; default all):
#   heap    Postgres COPY into a LOGGED heap table with the key as primary key
#           (pgbench_accounts' aid; the mixed rows' id)
#   heapu   Postgres COPY into an UNLOGGED heap table, no index
#   w0      tcopy: COPY ... (FORMAT csv, workers 0): the backend alone (serial)
#   w1, w2, w4
#           tcopy: COPY ... (FORMAT csv, workers N): the backend (the leader)
#           reads and cuts the input, N Postgres parallel workers parse it
#           and send the rows to the tserver themselves (streams)
#   w4r     4 workers whose batches the leader relays (tcopy.copy_streams off)
# Datasets (--datasets; default all): accounts (bench/gen_data.awk's rows,
# sorted by aid), shuffled (the same rows in a seeded random order), mixed
# (wider rows of mixed types, --mixed-rows, by default rows/2), made as
# bench/run.sh makes them and shared with its cache.
#
# Every dataset x config runs R times (default 3; heap only in the first H
# rounds, --heap-runs, default R: it is slow and only context), round-robin
# (round 1: A B C ..., round 2: A B C ...) so that drift on a shared machine
# hits all alike; each run starts a fresh tserver on an empty data directory
# (tcopy configs) and a fresh database.  Per run, read by psql's \! in the
# COPY's own session before and after: wall time (psql \timing of COPY +
# COMMIT); the leader's (backend's) CPU (utime + stime); the parallel
# workers' CPU, which is what the postmaster reaped of its children over the
# run (cutime + cstime: autovacuum and tcopy's recovery rounds are off in
# this cluster, so nothing else of the postmaster's exits; a sampler checks
# that no other child came and went); the tserver's CPU, in all and during
# the COPY alone (a probe between COPY and COMMIT), its busiest thread's
# during the COPY, and its VmHWM; the peak RssAnon of the leader and of each
# worker (the postmaster's children titled "parallel worker for PID
# <leader>"), sampled every 50 ms.  Prints markdown tables of medians, the
# goals, and what the per-row CPU costs give for a 16-core host; raw figures
# in $BENCH_DIR/runs.tsv (and bench/results/parallel_runs.tsv); --report TSV
# prints the tables of such a file again.
#
# Environment: ROWS, RUNS (as --rows, --runs), BENCH_DIR (default
# /var/tmp/tcopyb-parallel), DATA_DIR (the datasets; default run.sh's,
# /var/tmp/tcopy-bench/data), PG_CONFIG, TSERVER (default
# `pg_config --bindir`/tserver, as make install puts it), BENCH_USER
# (Postgres' user when run as root; default postgres), BENCH_PORT (default
# 54490).
set -euo pipefail

args_given="$*"
rows=${ROWS:-10000000}
runs=${RUNS:-3}
heap_runs=""
mixed_rows=""
configs="heap,heapu,w0,w1,w2,w4"
datasets="accounts,shuffled,mixed"
keep=0
report_only=""
while [ $# -gt 0 ]; do
	case "$1" in
		--rows) rows=${2:?}; shift 2 ;;
		--mixed-rows) mixed_rows=${2:?}; shift 2 ;;
		--runs) runs=${2:?}; shift 2 ;;
		--heap-runs) heap_runs=${2:?}; shift 2 ;;
		--configs) configs=${2:?}; shift 2 ;;
		--datasets) datasets=${2:?}; shift 2 ;;
		--keep) keep=1; shift ;;
		--report) report_only=${2:?}; shift 2 ;;
		*) sed -n '7,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
mixed_rows=${mixed_rows:-$((rows / 2))}
heap_runs=${heap_runs:-$runs}
case "$rows$runs$mixed_rows$heap_runs" in
	*[!0-9]*) echo "parallel.sh: --rows, --runs, --mixed-rows and --heap-runs take positive integers" >&2; exit 2 ;;
esac
for c in ${configs//,/ }; do
	case "$c" in heap|heapu|w0|w1|w2|w4|w4r) ;; *) echo "parallel.sh: unknown config $c" >&2; exit 2 ;; esac
done
for d in ${datasets//,/ }; do
	case "$d" in accounts|shuffled|mixed) ;; *) echo "parallel.sh: unknown dataset $d" >&2; exit 2 ;; esac
done

# report TSV: markdown tables of the medians in TSV (this script's raw
# figures), the goals, and the 16-core estimate
report()
{
	awk -F'\t' '
function commas(x,    s) { s = sprintf("%d", x); while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]($|,)/, ",&", s); return s }
function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function minmax(list,    n, a, i, lo, hi) {
	n = split(list, a, " "); lo = hi = a[1]
	for (i = 2; i <= n; i++) { if (a[i] + 0 < lo + 0) lo = a[i]; if (a[i] + 0 > hi + 0) hi = a[i] }
	return sprintf("%.2f–%.2f", lo, hi)
}
function mb(kb) { return sprintf("%.1f", kb / 1024) }
function us(s, r) { return s * 1e6 / r }
$1 == "#about" { print $2; print ""; next }
$1 == "#gucs" { gucs = $2; next }
$1 == "#dataset" { dsdesc[$2] = $3; next }
$1 == "#cores" { cores = $2; next }
$1 == "round" { next }
{
	k = $2; split(k, p, ":"); ds = p[1]; cf = p[2]
	if (!(ds in dseen)) { dseen[ds] = 1; dsorder[++nds] = ds }
	have[k] = 1; rows[ds] = $4
}
$3 != "ok" { failed[k]++; next }
{
	wall[k] = wall[k] " " $7; commit[k] = commit[k] " " $8; lcpu[k] = lcpu[k] " " $9; wcpu[k] = wcpu[k] " " $10
	wsam[k] = wsam[k] " " $11; tcpu[k] = tcpu[k] " " ($12 == "-" ? 0 : $12); tload[k] = tload[k] " " ($13 == "-" ? 0 : $13)
	tthr[k] = tthr[k] " " ($14 == "-" ? 0 : $14); thrname[k] = $15; thwm[k] = thwm[k] " " ($16 == "-" ? 0 : $16)
	lrss[k] = lrss[k] " " $17; wrss[k] = wrss[k] " " $18; nw[k] = nw[k] " " $20; cnt[k]++
	if ($21 > 0) others[k] += $21
	# the goal on memory: the worst run, not the median
	if (cf ~ /^w/) {
		if ($17 > maxl) { maxl = $17; maxlk = k }
		if ($18 > maxw) { maxw = $18; maxwk = k }
	}
}
END {
	ncf = split("heap heapu w0 w1 w2 w4 w4r", cfs, " ")
	label["heap"] = "Postgres COPY, logged heap + PK"
	label["heapu"] = "Postgres COPY, unlogged heap"
	label["w0"] = "tcopy, workers 0 (serial)"
	label["w1"] = "tcopy, 1 worker"
	label["w2"] = "tcopy, 2 workers"
	label["w4"] = "tcopy, 4 workers"
	label["w4r"] = "tcopy, 4 workers, relayed by the leader"
	for (d = 1; d <= nds; d++) {
		ds = dsorder[d]; r = rows[ds]
		print "### " ds ": " commas(r) " rows" (dsdesc[ds] != "" ? ", " dsdesc[ds] : "")
		print ""
		hk = ds ":heapu"; hu = (hk in cnt) ? median(wall[hk]) : 0
		print "| config | wall s: median (min–max) | of which COMMIT s | rows/s | × heapu | leader CPU s | workers CPU s | tserver CPU s: all (in the COPY; its busiest thread) | µs/row: leader / workers / tserver | cores busy | peak RssAnon MB: leader / worker | tserver VmHWM MB | workers seen | runs |"
		print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
		best[ds] = ""
		for (c = 1; c <= ncf; c++) {
			cf = cfs[c]; k = ds ":" cf
			if (!(k in have)) continue
			if (!(k in cnt)) { printf "| %s | – | | | | | | | | | | | | 0 (%d failed) |\n", label[cf], failed[k]; continue }
			w = median(wall[k]); l = median(lcpu[k]); wc = median(wcpu[k]); t = median(tcpu[k])
			istc = cf ~ /^w/
			printf "| %s | %.2f (%s) | %s | %s | %s | %.2f | %s | %s | %.2f / %s / %s | %.2f | %s / %s | %s | %s | %d%s%s |\n",
				label[cf], w, minmax(wall[k]), istc ? sprintf("%.2f", median(commit[k])) : "–", commas(r / w),
				hu ? sprintf("%.2f", w / hu) : "–", l, (wc > 0 || istc) ? sprintf("%.2f", wc) : "–",
				istc ? sprintf("%.2f (%.2f; %.2f)", t, median(tload[k]), median(tthr[k])) : "–",
				us(l, r), (wc > 0 || istc) ? sprintf("%.2f", us(wc, r)) : "–", istc ? sprintf("%.2f", us(t, r)) : "–",
				(l + wc + t) / w, mb(median(lrss[k])), (median(nw[k]) > 0) ? mb(median(wrss[k])) : "–",
				istc ? sprintf("%.0f", median(thwm[k]) / 1024) : "–", median(nw[k]),
				cnt[k], failed[k] ? " (" failed[k] " failed)" : "", others[k] ? " (" others[k] " other exits!)" : ""
			if (istc && (best[ds] == "" || w < bestw[ds])) { best[ds] = cf; bestw[ds] = w }
			if (istc) { tcw[ds, cf] = w }
			# the model below on this host, with this config'"'"'s own costs
			if (cf ~ /^w[1-9]/ && cores) {
				kk = substr(cf, 2) + 0; b = us(l, r); x = us(wc, r) / kk; if (x > b) b = x
				x = us(median(tthr[k]), r); if (x > b) b = x; x = us(median(tload[k]) - median(tthr[k]), r); if (x > b) b = x
				x = us(l + wc + median(tload[k]), r) / cores; if (x > b) b = x
				model[ds, cf] = b * r / 1e6 + median(commit[k])
			}
			# the threads of streams end before the probe sees them (their CPU
			# is in T, not T1): the per-thread model is of the relayed configs,
			# and the per-thread figures of streams are bench/threads.sh
			if (cf ~ /^w[1-9][0-9]*r$/) {
				# the least contended per-row costs of the parallel configs
				if (!((ds, "L") in est) || us(l, r) < est[ds, "L"]) est[ds, "L"] = us(l, r)
				if (!((ds, "W") in est) || us(wc, r) < est[ds, "W"]) est[ds, "W"] = us(wc, r)
				x = us(median(tload[k]), r); if (!((ds, "T") in est) || x < est[ds, "T"]) est[ds, "T"] = x
				if (!((ds, "T1") in est) || us(median(tthr[k]), r) < est[ds, "T1"]) { est[ds, "T1"] = us(median(tthr[k]), r); est[ds, "T1n"] = thrname[k] }
				x = us(median(tload[k]) - median(tthr[k]), r); if (x < 0) x = 0
				if (!((ds, "T2") in est) || x < est[ds, "T2"]) est[ds, "T2"] = x
				if (!((ds, "C") in est) || median(commit[k]) < est[ds, "C"]) est[ds, "C"] = median(commit[k])
			}
		}
		heapu[ds] = hu
		print ""
	}
	# goals
	print "| goal | dataset | best tcopy config (median wall s) | × heapu | met |"
	print "|---|---|---|---|---|"
	for (d = 1; d <= nds; d++) {
		ds = dsorder[d]
		goal = ds == "accounts" ? 0.33 : ds == "shuffled" ? 0.5 : 0
		if (best[ds] == "") continue
		ratio = heapu[ds] ? bestw[ds] / heapu[ds] : 0
		printf "| %s | %s | %s (%.2f; serial w0: %s) | %s | %s |\n",
			goal ? sprintf("wall ≤ %.2f × unlogged heap", goal) : "(no goal: for the record)", ds, best[ds], bestw[ds],
			((ds, "w0") in tcw) ? sprintf("%.2f, %.2f× faster", tcw[ds, "w0"], tcw[ds, "w0"] / bestw[ds]) : "–",
			ratio ? sprintf("%.2f", ratio) : "–", (goal && ratio) ? ((ratio <= goal) ? "yes" : "**no**") : "–"
	}
	if (maxlk != "")
		printf "| peak RssAnon ≤ 32 MB per process (worst run of any tcopy config) | all | leader %s MB (%s), worker %s MB (%s) | – | %s |\n",
			mb(maxl), maxlk, maxwk != "" ? mb(maxw) : "–", maxwk != "" ? maxwk : "no worker seen", (maxl <= 32768 && maxw <= 32768) ? "yes" : "**no**"
	print ""
	# the 16-core estimate
	any = 0
	for (d = 1; d <= nds; d++) if ((dsorder[d], "L") in est) any = 1
	if (!any) exit
	print "Expected time on a 16-core host with k workers relayed by the leader (w4r: with streams, w1/w2/w4, the connection threads of the workers end before the probe after the COPY sees them, so their CPU cannot be told from that of a serial thread here; bench/threads.sh samples them), from the per-row CPU costs above (for each, the smallest median among the relayed configs: this 2-core host, oversubscribed by leader + workers + tserver, inflates them): t ≈ rows × max(L, W/k, T1, T2, (L + W + T)/16) + COMMIT, where L is the leader (reads every byte, cuts chunks, forwards every batch: serial), W all workers together (parse, encode: divided among k), T1 the busiest tserver thread during the COPY (one session'"'"'s batches are received by one connection thread), T2 the rest of the tserver during the COPY (mostly the session'"'"'s background spills of its staging buffer, one spill thread at a time), T the tserver in all during the COPY (its commit is in COMMIT), and COMMIT the wall time of the COMMIT (the tserver'"'"'s publish; for unsorted input its merge of the runs), serial after the load. The bound is the largest term; \"+ COMMIT\" when the COMMIT adds more than a tenth. The model counts CPU only: the last column puts it beside this host'"'"'s measured wall (its cores, the best parallel config'"'"'s own costs); what the measured wall has above the model is waiting (other load on the host, the window of batches in flight, fsync), which the 16-core figures leave out."
	print ""
	print "| dataset | rows | L µs/row | W µs/row | T µs/row | T1 µs/row | T2 µs/row | COMMIT s | k = 4: s (bound) | k = 8 | k = 15 | unlogged heap here, s | this host: model vs measured, s |"
	print "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for (d = 1; d <= nds; d++) {
		ds = dsorder[d]; if (!((ds, "L") in est)) continue
		L = est[ds, "L"]; W = est[ds, "W"]; T = est[ds, "T"]; T1 = est[ds, "T1"]; T2 = est[ds, "T2"]; C = est[ds, "C"]; r = rows[ds]
		line = sprintf("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |", ds, commas(r), L, W, T, T1, T2, C)
		nk = split("4 8 15", ks, " ")
		for (i = 1; i <= nk; i++) {
			kk = ks[i]; b = L; bn = "leader"
			if (W / kk > b) { b = W / kk; bn = "workers" }
			if (T1 > b) { b = T1; bn = "tserver connection thread" }
			if (T2 > b) { b = T2; bn = "tserver spill thread" }
			if ((L + W + T) / 16 > b) { b = (L + W + T) / 16; bn = "16 cores" }
			line = line sprintf(" %.2f (%s%s) |", b * r / 1e6 + C, bn, (C > 0.1 * b * r / 1e6) ? " + COMMIT" : "")
		}
		bw = ""
		for (c = 1; c <= ncf; c++) if ((ds, cfs[c]) in model && (bw == "" || tcw[ds, cfs[c]] < tcw[ds, bw])) bw = cfs[c]
		print line sprintf(" %s | %s |", heapu[ds] ? sprintf("%.2f", heapu[ds]) : "–",
			bw != "" ? sprintf("%.2f vs %.2f (%s, %d cores)", model[ds, bw], tcw[ds, bw], bw, cores) : "–")
	}
	print ""
	if (gucs != "") { print "Settings: " gucs "."; print "" }
}' "$1"
}
[ -z "$report_only" ] || { report "$report_only"; exit; }

top=$(cd "$(dirname "$0")/.." && pwd)
bindir=$("${PG_CONFIG:-pg_config}" --bindir)
tserver_bin=${TSERVER:-$bindir/tserver}
work=${BENCH_DIR:-/var/tmp/tcopyb-parallel}
data=${DATA_DIR:-/var/tmp/tcopy-bench/data}
port=${BENCH_PORT:-54490}
say() { echo "[$(date +%H:%M:%S)] $*" >&2; }
die() { say "error: $*"; exit 1; }
[ -x "$tserver_bin" ] || die "no tserver at $tserver_bin (make install, or set TSERVER)"
command -v perl >/dev/null || die "perl is needed (the probe and sampler)"

if [ "$(id -u)" -eq 0 ]; then
	pg_user=${BENCH_USER:-postgres}
	as_pg() { runuser -u "$pg_user" -- "$@"; }
else
	pg_user=$(id -un)
	as_pg() { "$@"; }
fi

# items: round-robin order within a round, dataset by dataset
items=()
for d in ${datasets//,/ }; do
	for c in ${configs//,/ }; do items+=("$d:$c"); done
done
[ ${#items[@]} -gt 0 ] || die "nothing to run"

# ---------------------------------------------------------------- datasets
# as bench/run.sh makes them (ds_file, generate), in the same cache
ds_file()
{
	case "$1" in
		accounts) echo "$data/accounts_$rows.csv" ;;
		shuffled) echo "$data/accounts_${rows}_shuffled.csv" ;;
		mixed) echo "$data/mixed_$mixed_rows.csv" ;;
	esac
}
ds_rows() { if [ "$1" = mixed ]; then echo "$mixed_rows"; else echo "$rows"; fi; }
ds_desc()
{
	case "$1" in
		accounts) echo "pgbench_accounts rows sorted by aid" ;;
		shuffled) echo "the same rows in a seeded random order" ;;
		mixed) echo "wide rows of mixed types (bigint key in order, text, numeric, timestamptz, float8, boolean; ~160 bytes)" ;;
	esac
}
generate()
{
	local name=$1 file
	file=$(ds_file "$name")
	[ -f "$file.done" ] && [ -f "$file" ] && return 0
	say "generating $name dataset ($(ds_rows "$name") rows): $file"
	mkdir -p "$data"
	rm -f "$file" "$file.done"
	case "$name" in
		accounts)
			awk -v kind=accounts -v rows="$rows" -f "$top/bench/gen_data.awk" >"$file.tmp" ;;
		shuffled)
			generate accounts
			# a seeded random sort key: the same order on every machine with this awk
			awk 'BEGIN { srand(42) } { printf "%09d\t%s\n", int(rand() * 1000000000), $0 }' \
				"$(ds_file accounts)" |
				LC_ALL=C sort -S 25% -t "$(printf '\t')" -k1,1 -T "$data" |
				cut -f2- >"$file.tmp" ;;
		mixed)
			awk -v kind=mixed -v rows="$mixed_rows" -v seed=20240611 -f "$top/bench/gen_data.awk" >"$file.tmp" ;;
	esac
	mv "$file.tmp" "$file"
	chmod 644 "$file"
	touch "$file.done"
}
for d in ${datasets//,/ }; do
	generate "$d"
	as_pg test -r "$(ds_file "$d")" || die "$(ds_file "$d") is not readable by $pg_user"
done

# ds_table DATASET: "key columns" of the dataset's rows (bench/run.sh's tables)
ds_table()
{
	if [ "$1" = mixed ]; then
		echo "id id bigint NOT NULL, account int NOT NULL, kind varchar(16), name text, amount numeric(14,2), created timestamptz NOT NULL, score float8, active boolean, note text"
	else
		echo "aid aid int NOT NULL, bid int, abalance int, filler char(84)"
	fi
}

# ---------------------------------------------------------------- cluster
tserver_pid=""
stop_tserver()
{
	[ -n "$tserver_pid" ] || return 0
	kill "$tserver_pid" 2>/dev/null || true
	for _ in $(seq 600); do [ -e "/proc/$tserver_pid" ] || break; sleep 0.05; done
	[ -e "/proc/$tserver_pid" ] && { say "tserver $tserver_pid did not stop within 30 s: killed"; kill -KILL "$tserver_pid" 2>/dev/null || true; }
	tserver_pid=""
	rm -rf "$work/ts"
}
cleanup()
{
	stop_tserver
	if [ -f "$work/sampler.pid" ]; then
		p=$(cat "$work/sampler.pid")
		grep -q probe.pl "/proc/$p/cmdline" 2>/dev/null && kill "$p" 2>/dev/null || true
	fi
	[ -f "$work/pg/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$work/pg" -m fast stop >/dev/null 2>&1
	[ "$keep" = 1 ] || rm -rf "$work/pg"
}
# a previous run's cluster (its tserver died with its data directory's removal below)
[ -f "$work/pg/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1
rm -rf "$work"
mkdir -p "$work"
[ "$(id -u)" -eq 0 ] && chown "$pg_user" "$work"
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting the cluster in $work/pg"
as_pg "$bindir/initdb" -D "$work/pg" -U postgres -E UTF8 --locale=C --no-sync -A trust >"$work/initdb.log" 2>&1 ||
	{ cat "$work/initdb.log" >&2; die "initdb failed"; }
# bench/run.sh's settings; no autovacuum and no tcopy recovery rounds, so
# that the only children the postmaster reaps during a COPY are its workers
as_pg tee -a "$work/pg/postgresql.conf" >/dev/null <<EOF
listen_addresses = ''
port = $port
unix_socket_directories = '$work'
shared_preload_libraries = 'tcopy'
shared_buffers = 1GB
max_wal_size = 16GB
min_wal_size = 1GB
checkpoint_timeout = 60min
wal_buffers = 16MB
autovacuum = off
jit = off
max_connections = 20
max_worker_processes = 16
max_parallel_workers = 8
fsync = on
synchronous_commit = on
full_page_writes = on
log_min_messages = warning
tcopy.recovery_interval = 0
EOF
as_pg "$bindir/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w start >/dev/null || die "the cluster did not start"
pm_pid=$(head -1 "$work/pg/postmaster.pid")
psql_c() { as_pg "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U postgres "$@"; }
psql_c -d postgres >/dev/null <<EOF
CREATE DATABASE tmpl;
\c tmpl
CREATE EXTENSION tcopy;
CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$work/ts.sock');
CREATE USER MAPPING FOR PUBLIC SERVER ts;
EOF
gucs=$(psql_c -d tmpl -c "SELECT string_agg(name || ' = ' || setting || coalesce(unit, ''), '; ' ORDER BY name) FROM pg_settings WHERE name IN ('tcopy.batch_rows', 'tcopy.batch_size', 'tcopy.batches_in_flight', 'tcopy.copy_batch_memory', 'tcopy.copy_workers', 'tcopy.copy_parallel_threshold', 'tcopy.copy_chunk_bytes', 'max_worker_processes', 'max_parallel_workers')")

# probe.pl before|mid|after: run by psql's \! in the COPY's session
cat >"$work/probe.pl" <<'EOF'
#!/usr/bin/perl
# probe.pl before|mid|after, run by psql's \! in the COPY's session.  before:
# the leader's ($BPID) CPU ticks, the postmaster's ($PM_PID) reaped
# children's ticks (cutime + cstime), the tserver's ($TS_PID) ticks and
# each of its threads', then a sampler in the background that reads, every
# 50 ms, the leader's RssAnon and that of every child of the postmaster
# whose title is "parallel worker for PID $BPID".  mid (between COPY and
# COMMIT): the tserver's ticks and its threads'.  after: stops the
# sampler, which waits for the workers to be reaped, then prints the
# deltas as key=value to $PROBE_DIR/probe.out.
use strict;
use warnings;
use POSIX qw(setsid);
use Time::HiRes qw(time sleep);

my ($what) = @ARGV;
my ($bpid, $pm, $ts, $dir) = ($ENV{BPID}, $ENV{PM_PID}, $ENV{TS_PID} // '', $ENV{PROBE_DIR});

sub slurp
{
	my ($f) = @_;
	open(my $h, '<', $f) or return undef;
	local $/;
	my $s = <$h>;
	close $h;
	return $s;
}
# stat fields from 3 (state) on: [11] utime, [12] stime, [13] cutime, [14] cstime
sub stat_of
{
	my $s = slurp("/proc/$_[0]/stat") // return ();
	$s =~ s/^.*\) //s;
	return split ' ', $s;
}
sub ticks { my @f = stat_of($_[0]); return @f ? $f[11] + $f[12] : 0 }
sub reaped { my @f = stat_of($_[0]); return @f ? $f[13] + $f[14] : 0 }
sub status_kb
{
	my ($pid, $key) = @_;
	my $s = slurp("/proc/$pid/status") // return 0;
	return $s =~ /^$key:\s+(\d+)/m ? $1 : 0;
}
# the tserver's threads: "tid ticks comm" lines
sub threads
{
	my @out;
	return @out unless $ts;
	for my $t (glob "/proc/$ts/task/*") {
		my $tid = (split m{/}, $t)[-1];
		my $comm = slurp("/proc/$ts/task/$tid/comm") // next;
		chomp $comm;
		$comm =~ s/\s+/_/g;
		my @f = stat_of("$ts/task/$tid");
		push @out, "$tid " . ($f[11] + $f[12]) . " $comm" if @f;
	}
	return @out;
}
sub children { return split ' ', (slurp("/proc/$pm/task/$pm/children") // '') }

if ($what eq 'before') {
	open(my $o, '>', "$dir/before") or die "$dir/before: $!";
	print $o "leader " . ticks($bpid) . "\n";
	print $o "reaped " . reaped($pm) . "\n";
	print $o "ts " . ($ts ? ticks($ts) : 0) . "\n";
	print $o "thread $_\n" for threads();
	close $o;
	unlink "$dir/sample.out", "$dir/sample.tmp";
	my $pid = fork() // die "fork: $!";
	if ($pid) {
		open(my $p, '>', "$dir/sampler.pid") or die;
		print $p "$pid\n";
		close $p;
		exit 0;
	}
	setsid();
	open(STDIN, '<', '/dev/null');
	open(STDOUT, '>', '/dev/null');
	open(STDERR, '>', "$dir/sampler.err");
	my %initial = map { $_ => 1 } children();
	my (%wrss, %wticks, %whwm, %other, $lrss, $stop, $n);
	$lrss = 0;
	$n = 0;
	$SIG{TERM} = sub { $stop = 1 };
	my $sample = sub {
		my $r = status_kb($bpid, 'RssAnon');
		$lrss = $r if $r > $lrss;
		for my $c (children()) {
			next if $initial{$c};
			my $cmd = slurp("/proc/$c/cmdline") // next;
			if (defined $wrss{$c} || $cmd =~ /parallel worker for PID $bpid\b/) {
				my $rss = status_kb($c, 'RssAnon');
				$wrss{$c} = $rss if !defined $wrss{$c} || $rss > $wrss{$c};
				my $hwm = status_kb($c, 'VmHWM');
				$whwm{$c} = $hwm if $hwm;
				my $t = ticks($c);
				$wticks{$c} = $t if $t;
			}
			else {
				$cmd =~ s/\0/ /g;
				$other{$c} = $cmd;
			}
		}
		$n++;
	};
	while (!$stop) {
		$sample->();
		sleep 0.05;
	}
	$sample->();
	# the workers reaped by the postmaster: their CPU is in its cutime
	for (1 .. 1000) {
		last unless grep { -e "/proc/$_" } keys %wrss;
		sleep 0.01;
	}
	my @w = sort { $a <=> $b } keys %wrss;
	my @others = grep { !exists $wrss{$_} && !-e "/proc/$_" } keys %other;
	open(my $so, ">", "$dir/sample.tmp") or die;
	print $so "samples=$n\n";
	print $so "l_rss_kb=$lrss\n";
	print $so "nworkers=" . scalar(@w) . "\n";
	print $so "w_rss_each=" . (@w ? join(',', map { $wrss{$_} } @w) : '-') . "\n";
	print $so "w_hwm_each=" . (@w ? join(',', map { $whwm{$_} // 0 } @w) : '-') . "\n";
	my $wt = 0;
	$wt += $wticks{$_} // 0 for @w;
	print $so "w_ticks_sampled=$wt\n";
	print $so "w_still_running=" . scalar(grep { -e "/proc/$_" } @w) . "\n";
	print $so "others=" . scalar(@others) . "\n";
	print $so "others_cmd=" . join(' | ', map { $other{$_} } @others) . "\n";
	close $so;
	rename "$dir/sample.tmp", "$dir/sample.out";
	exit 0;
}

if ($what eq 'mid') {
	# between COPY and COMMIT: the tserver's load, apart from its commit
	open(my $o, '>', "$dir/mid") or die "$dir/mid: $!";
	print $o "ts " . ($ts ? ticks($ts) : 0) . "\n";
	print $o "thread $_\n" for threads();
	close $o;
	exit 0;
}

if ($what eq 'after') {
	my $sp = slurp("$dir/sampler.pid") // die "no sampler";
	chomp $sp;
	kill 'TERM', $sp;
	for (1 .. 1500) {
		last if -e "$dir/sample.out";
		sleep 0.01;
	}
	my (%b, %bthr, %m, %mthr);
	for (split /\n/, slurp("$dir/before") // '') {
		my @f = split ' ';
		if ($f[0] eq 'thread') { $bthr{$f[1]} = $f[2] } else { $b{$f[0]} = $f[1] }
	}
	for (split /\n/, slurp("$dir/mid") // '') {
		my @f = split ' ';
		if ($f[0] eq 'thread') { $mthr{$f[1]} = [$f[2], $f[3]] } else { $m{$f[0]} = $f[1] }
	}
	my $clk = $ENV{CLK_TCK} || 100;
	my %out;
	$out{clk} = $clk;
	$out{l_cpu_s} = sprintf '%.2f', (ticks($bpid) - $b{leader}) / $clk;
	$out{w_cpu_s} = sprintf '%.2f', (reaped($pm) - $b{reaped}) / $clk;
	$out{ts_cpu_s} = $ts ? sprintf('%.2f', (ticks($ts) - $b{ts}) / $clk) : '-';
	$out{ts_hwm_kb} = $ts ? status_kb($ts, 'VmHWM') : '-';
	# the load (before -> mid): the tserver's CPU and its busiest thread's
	# (one connection thread receives the session's batches)
	my ($best, $bname) = (-1, '-');
	for my $tid (keys %mthr) {
		my ($t, $comm) = @{$mthr{$tid}};
		my $d = $t - ($bthr{$tid} // 0);
		($best, $bname) = ($d, $tid == $ts ? 'main' : $comm) if $d > $best;
	}
	$out{ts_load_cpu_s} = $ts && %m ? sprintf('%.2f', ($m{ts} - $b{ts}) / $clk) : '-';
	$out{ts_thr_cpu_s} = $ts && %m ? sprintf('%.2f', $best / $clk) : '-';
	$out{ts_thr} = $ts && %m ? $bname : '-';
	open(my $o, '>', "$dir/probe.out") or die;
	print $o "$_=$out{$_}\n" for sort keys %out;
	my $s = slurp("$dir/sample.out");
	print $o $s // "sampler=none\n";
	close $o;
	exit 0;
}
die "probe.pl before|mid|after\n";
EOF
chmod 755 "$work/probe.pl"

# ---------------------------------------------------------------- one run
start_tserver()
{
	local log="$work/ts.log"
	rm -rf "$work/ts" "$work/ts.sock" "$log" "$work/ts.pid"
	as_pg bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$work/ts.pid" "$tserver_bin" --data "$work/ts" \
		--listen "unix:$work/ts.sock" --session-memory-mb 64 --allow-uid "$pg_user" >/dev/null 2>"$log" &
	for _ in $(seq 600); do grep -q "tserver ready" "$log" 2>/dev/null && break; sleep 0.05; done
	grep -q "tserver ready" "$log" || { cat "$log" >&2; return 1; }
	tserver_pid=$(cat "$work/ts.pid")
}

# ddl ITEM: the target table t
ddl()
{
	local ds=${1%%:*} cf=${1#*:} key cols
	read -r key cols < <(ds_table "$ds")
	case "$cf" in
		heap) echo "CREATE TABLE t ($cols, PRIMARY KEY ($key));" ;;
		heapu) echo "CREATE UNLOGGED TABLE t ($cols);" ;;
		w*) echo "CREATE FOREIGN TABLE t ($cols) SERVER ts OPTIONS (key '$key');" ;;
	esac
}

tsv="$work/runs.tsv"
printf 'round\titem\tstatus\trows\tcopied\tcount\twall_s\tcommit_s\tl_cpu_s\tw_cpu_s\tw_cpu_sampled_s\tts_cpu_s\tts_load_cpu_s\tts_thr_load_cpu_s\tts_thr\tts_hwm_kb\tl_rss_kb\tw_rss_kb\tw_rss_each_kb\tnworkers\tothers\n' >"$tsv"
clk=$(getconf CLK_TCK)
failures=0

run_item()
{
	local round=$1 item=$2 ds=${2%%:*} cf=${2#*:} status=ok out="$work/run.out" opt="" file n streams=on
	file=$(ds_file "$ds")
	n=$(ds_rows "$ds")
	case "$cf" in w*r) opt=", workers ${cf:1:-1}"; streams=off ;; w*) opt=", workers ${cf#w}" ;; esac
	say "round $round: $item"
	[[ $cf == w* ]] && { start_tserver || status=FAIL; }
	psql_c -d postgres -c "CREATE DATABASE run TEMPLATE tmpl" && ddl "$item" | psql_c -d run >/dev/null && psql_c -d run -c CHECKPOINT ||
		status=FAIL
	sync
	rm -f "$work/probe.out" "$work/before" "$work/sample.out" "$work/sampler.pid"
	if [ "$status" = ok ]; then
		as_pg env PROBE_DIR="$work" PM_PID="$pm_pid" TS_PID="$tserver_pid" CLK_TCK="$clk" \
			"$bindir/psql" -X -At -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U postgres -d run >"$out" 2>"$work/run.err" <<-EOF || status=FAIL
			SELECT pg_backend_pid() AS bpid \gset
			\setenv BPID :bpid
			\! perl $work/probe.pl before
			SET tcopy.copy_streams = $streams;
			\timing on
			BEGIN;
			COPY t FROM '$file' (FORMAT csv$opt);
			\! perl $work/probe.pl mid
			COMMIT;
			\timing off
			\! perl $work/probe.pl after
			SELECT 'count=' || count(*) FROM t;
		EOF
	fi
	stop_tserver
	psql_c -d postgres -c "DROP DATABASE IF EXISTS run WITH (FORCE)" || true
	[ -s "$work/probe.out" ] || status=FAIL
	awk -v round="$round" -v item="$item" -v status="$status" -v rows="$n" -v out="$out" -F= '
		{ v[$1] = substr($0, length($1) + 2) }
		END {
			while ((getline l < out) > 0) {
				if (l ~ /^COPY [0-9]+$/) { split(l, w, " "); copied = w[2]; want = "copy" }
				else if (l ~ /^COMMIT$/) want = "commit"
				else if (l ~ /^Time: / && want != "") { split(l, w, " "); t[want] = w[2] / 1000; want = "" }
				else if (l ~ /^count=/) count = substr(l, 7)
			}
			if (copied != rows || count != rows || !("commit" in t) || v["w_still_running"] > 0) status = "FAIL"
			n = split(v["w_rss_each"], a, ","); m = 0
			for (i = 1; i <= n; i++) if (a[i] + 0 > m) m = a[i] + 0
			printf "%s\t%s\t%s\t%s\t%s\t%s\t%.3f\t%.3f\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", round, item, status, rows,
				copied, count, t["copy"] + t["commit"], t["commit"], v["l_cpu_s"], v["w_cpu_s"], v["w_ticks_sampled"] / v["clk"],
				v["ts_cpu_s"], v["ts_load_cpu_s"], v["ts_thr_cpu_s"], v["ts_thr"], v["ts_hwm_kb"], v["l_rss_kb"], m, v["w_rss_each"],
				v["nworkers"] + 0, v["others"] + 0
		}' "$work/probe.out" >>"$tsv" 2>/dev/null || printf '%s\t%s\tFAIL\t%s\n' "$round" "$item" "$n" >>"$tsv"
	grep -q '^others=[1-9]' "$work/probe.out" 2>/dev/null && say "other children of the postmaster exited during the COPY: $(grep ^others_cmd= "$work/probe.out")"
	[ "$(tail -1 "$tsv" | cut -f3)" = ok ] || { failures=$((failures + 1)); say "FAILED: $(head -3 "$work/run.err" 2>/dev/null)"; }
	tail -1 "$tsv" | awk -F'\t' '{ printf "    %s: wall %s s, leader %s s, workers %s s (%s seen), tserver %s s; RssAnon leader %.1f MB, worker %.1f MB\n", $3, $7, $9, $10, $20, $12, $17 / 1024, $18 / 1024 }' >&2
}

t0=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$runs"); do
	for item in "${items[@]}"; do
		[ "${item#*:}" = heap ] && [ "$round" -gt "$heap_runs" ] && continue
		run_item "$round" "$item"
	done
done

# ---------------------------------------------------------------- report
{
	printf '#about\tbench/parallel.sh%s: %s round(s) (heap: %s) in %s min; %s cores, load %s -> %s; git %s\n' \
		"${args_given:+ $args_given}" "$runs" "$heap_runs" "$(( ($(date +%s) - t0) / 60 ))" "$(nproc)" \
		"$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(git -C "$top" rev-parse --short HEAD)"
	printf '#gucs\t%s\n' "$gucs"
	printf '#cores\t%s\n' "$(nproc)"
	for d in ${datasets//,/ }; do
		printf '#dataset\t%s\t%s, %s MB\n' "$d" "$(ds_desc "$d")" "$(( $(stat -c %s "$(ds_file "$d")") / 1048576 ))"
	done
	cat "$tsv"
} >"$tsv.new"
mv "$tsv.new" "$tsv"
report "$tsv"
mkdir -p "$top/bench/results"
cp "$tsv" "$top/bench/results/parallel_runs.tsv"
[ "$failures" = 0 ] || { say "$failures run(s) failed"; exit 1; }
