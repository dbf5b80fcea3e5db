#!/bin/bash
# run_tests.sh
#	The tserver's tests, in order, stopping at the first failure:
#	  1. C unit tests (test/unit), normal build; the layers of the
#	     extension and the tserver (test/tools/check_layers.pl: no include
#	     or call goes up)
#	  2. C unit tests, AddressSanitizer + UBSan build
#	  3. the tserver's TAP tests (test/tserver) against the normal build,
#	     the tserver on a full disk among them (disk_full.pl: mounts a 64 MB
#	     tmpfs of its own, so it needs root, and skips otherwise)
#	  4. the TAP tests that do not measure memory or time against the
#	     sanitizer build, failing on any sanitizer report in the tserver's log
#	  (3 and 4 run TSERVER_TAP_JOBS, default 2, tests at a time: each test
#	  starts tservers of its own in a directory of its own, and the memory
#	  each measures is its own tserver's peak)
#	  4b. the libFuzzer harnesses (test/fuzz) of the tserver's frame
#	     handling and of its WriteBatch decoder (differential, against
#	     protobuf-c), both at once, each for FUZZ_SECONDS from its seed corpus, failing on
#	     any crash, disagreement or sanitizer report
#	  5. the extension's tests (test/pg_tests.sh): pg_regress (sql/,
#	     expected/) and the PostgreSQL TAP tests (test/ext)
#
# With --fast, a subset for the inner loop (below).
#
# It runs as root (a user with sudo without a password is taken there; any
# other is told so in one line): from a copy of the tree when the users the
# tests run as cannot reach it (test/tools/reachable_tree.sh).
#
# Environment: TCOPY_BIG_ROWS (rows of 004_big_session.pl and
# 103_copy_memory.pl, default 5M), TCOPY_TAP_ROWS (rows of the extension's
# load tests, default 1M),
# FUZZ_SECONDS (the fuzzing run, default 30),
# JOBS (make's parallelism, default: the number of CPUs), TSERVER_TAP_JOBS
# (how many of the tserver's TAP tests run at a time, default 2).
set -euo pipefail

cd "$(dirname "$0")/.."
TOP=$(pwd)

# Root is needed: the tests install the extension into Postgres'
# directories and run Postgres as the postgres user, a client as nobody.
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		echo "tests: not root: running them as root through sudo (they install the extension and run Postgres as the postgres user)"
		exec sudo -E bash "$TOP/test/run_tests.sh" "$@"
	fi
	echo "tests: make check needs root, or sudo without a password: it installs the extension into $(pg_config --pkglibdir 2>/dev/null || echo "Postgres' directories") and runs Postgres as the postgres user (run: sudo make check)" >&2
	exit 1
fi
# A tree the test users cannot reach (a clone in /root), or another user's,
# runs from a copy (test/tools/reachable_tree.sh), before anything is built.
. "$TOP/test/tools/reachable_tree.sh"
tcopy_run_from_copy "$TOP" test/run_tests.sh "$@" || true
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
TAP_JOBS=${TSERVER_TAP_JOBS:-2}

step()
{
	echo
	echo "==== $* ($(date +%H:%M:%S))"
}

# The unit tests of the normal build, then the layers of the extension and
# the tserver (test/tools/check_layers.pl: no include or call goes up).
unit_tests_and_layers()
{
	step "unit tests (build/)"
	make -j"$JOBS" tserver
	make -C test -j"$JOBS" all
	make -C test check-unit

	step "the layers (test/tools/check_layers.pl)"
	make -j"$JOBS" >/dev/null
	test/tools/check_layers.pl
}

# --fast (make check-fast): the inner loop, a few minutes: the above, the
# tserver's basic, session, malformed-input and authentication tests, the
# first pg_regress pass, and the extension's TAP tests of a load (100000
# rows), the two-phase commit's serialization failure, roles, the
# extension's own SQL and pgbench.
if [ "${1:-}" = --fast ]; then
	unit_tests_and_layers
	step "tserver TAP tests (a few)"
	TSERVER_BIN="$TOP/build/tserver" TSERVER_CLI="$TOP/build/tserver-cli" \
		prove test/tserver/001_basic.pl test/tserver/002_sessions.pl \
		test/tserver/005_malformed.pl test/tserver/006_auth.pl
	step "extension tests (pg_regress once, a few TAP tests)"
	TCOPY_PG_TESTS="regress-serial tap" TCOPY_TAP="101* 121* 141* 144* 161*" \
		TCOPY_TAP_ROWS=${TCOPY_TAP_ROWS:-100000} test/pg_tests.sh
	step "the fast tests passed (make check runs them all)"
	exit 0
fi

unit_tests_and_layers

step "unit tests (build-asan/, AddressSanitizer + UBSan)"
make -C src/tserver SANITIZE=1 -j"$JOBS" all
make -C test SANITIZE=1 -j"$JOBS" all
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	make -C test SANITIZE=1 check-unit

# tserver_tap_order TESTS...: the tests, the longest (measured: 10 s and
# more each) first, so that the last one running is not a long one beside
# an idle slot
tserver_tap_order()
{
	local t
	for t in "$@"; do
		case "${t##*/}" in
			019_* | 020_* | 021_* | 008_*) echo "$t" ;;
		esac
	done
	for t in "$@"; do
		case "${t##*/}" in
			019_* | 020_* | 021_* | 008_*) ;;
			*) echo "$t" ;;
		esac
	done
}

step "tserver TAP tests (test/tserver) against build/tserver"
TSERVER_BIN="$TOP/build/tserver" TSERVER_CLI="$TOP/build/tserver-cli" \
	prove --timer -j"$TAP_JOBS" $(tserver_tap_order test/tserver/*.pl)

step "TAP tests against build-asan/tserver"
logdir=$(mktemp -d /tmp/tcopy-asan-logs.XXXXXX)
trap 'rm -rf "$logdir"' EXIT
TSERVER_BIN="$TOP/build-asan/tserver" TSERVER_CLI="$TOP/build/tserver-cli" \
TCOPY_TEST_LOG_DIR="$logdir" \
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	prove --timer -j"$TAP_JOBS" $(tserver_tap_order test/tserver/001_basic.pl \
	test/tserver/002_sessions.pl test/tserver/005_malformed.pl test/tserver/006_auth.pl \
	test/tserver/008_prepared.pl test/tserver/009_limits.pl test/tserver/010_scoped.pl \
	test/tserver/012_schemas.pl test/tserver/013_load_labels.pl \
	test/tserver/014_on_conflict.pl test/tserver/015_update_delete.pl \
	test/tserver/017_streams.pl test/tserver/018_synced.pl test/tserver/020_backup.pl \
	test/tserver/021_replica_group.pl test/tserver/022_group_membership.pl \
	test/tserver/024_group_catchup.pl test/tserver/025_group_restore.pl \
	test/tserver/026_metrics.pl test/tserver/027_config.pl test/tserver/032_raft_tls.pl)

# the tests check each log as they stop a server; check them all once more,
# in case a report came where no test looked
if ! ls "$logdir"/*.log >/dev/null 2>&1; then
	echo "no tserver logs were collected from the sanitizer run" >&2
	exit 1
fi
if grep -l -E "ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:" "$logdir"/*.log; then
	echo "sanitizer reports in the tserver logs above:" >&2
	grep -h -A30 -E "ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:" "$logdir"/*.log >&2
	exit 1
fi

# fuzz NAME CORPUS [MAKE_CORPUS_ARGS...]: the committed seeds must be what
# their generator makes; then FUZZ_SECONDS of build-fuzz/NAME from them
fuzz()
{
	local name=$1 corpus=$2 fuzzdir
	shift 2
	fuzzdir=$(mktemp -d /tmp/tcopy-fuzz.XXXXXX)
	test/fuzz/make_corpus.pl "$@" "$fuzzdir/seeds" >/dev/null
	diff -r "$corpus" "$fuzzdir/seeds"
	mkdir "$fuzzdir/corpus"
	# TMPDIR: the harness's store goes there, and so away with the rest
	if ! (cd "$fuzzdir" && TMPDIR="$fuzzdir" "$TOP/build-fuzz/$name" -max_total_time="${FUZZ_SECONDS:-30}" \
		-print_final_stats=1 -artifact_prefix="$fuzzdir/" corpus "$TOP/$corpus" \
		>"$fuzzdir/fuzz.log" 2>&1); then
		tail -n 80 "$fuzzdir/fuzz.log" >&2
		echo "the fuzzer $name failed: its log and the input that failed are in $fuzzdir" >&2
		exit 1
	fi
	grep -E "^Done |number_of_executed_units|new_units_added" "$fuzzdir/fuzz.log"
	rm -rf "$fuzzdir"
}

make -C test -j"$JOBS" fuzz
# the two harnesses at once: each is one thread
step "fuzzing the tserver's frame handling (build-fuzz/fuzz_frames) and ts_batch_decode against protobuf-c (build-fuzz/fuzz_batch_decode), ${FUZZ_SECONDS:-30} s"
fuzz fuzz_frames test/fuzz/corpus &
frames=$!
fuzz fuzz_batch_decode test/fuzz/corpus_batch --batch &
batch=$!
fuzz_rc=0
wait "$frames" || fuzz_rc=1
wait "$batch" || fuzz_rc=1
[ $fuzz_rc -eq 0 ] || exit 1

step "all tserver tests passed"

step "extension tests (pg_regress, PostgreSQL TAP)"
test/pg_tests.sh

# not a measurement: proves that the benchmark harness runs end to end
# (pg_tests.sh installed the build); its report goes to a scratch directory
step "benchmark harness (bench/run.sh --rows 10000 --quick)"
benchout=$(mktemp -d /tmp/tcopy-bench-check.XXXXXX)
BENCH_OUT="$benchout" bench/run.sh --rows 10000 --runs 1 --quick --no-build
rm -rf "$benchout"

step "all tests passed"
