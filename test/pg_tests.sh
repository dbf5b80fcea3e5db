#!/bin/bash
# pg_tests.sh
#	The extension's tests against the PostgreSQL that pg_config names:
#	  1. pg_regress (sql/*.sql against expected/*.out, in name order) on a
#	     temporary instance, with one tserver shared by every test, whose
#	     address the tests read from $TCOPY_ADDRESS; twice, the second time
#	     with every COPY parsed by parallel workers (tcopy.copy_workers);
#	  1b. Postgres' isolation tester (test/isolation/specs/*.spec against
#	     test/isolation/expected/*.out) twice, each spec's table a heap
#	     table, then a tcopy table (the setting tcopy_test.kind, which the
#	     specs' setup reads), against one expected output: the isolation
#	     levels give a tcopy table what they give a heap table;
#	  2. the TAP tests test/ext/*.pl (PostgreSQL::Test::Cluster plus tservers
#	     of their own, see TcopyPgTest.pm): first, one at a time, those
#	     that measure memory or time (a line "# pg_tests: alone" says so),
#	     then the others TCOPY_TAP_JOBS (default 2) at a time.
#
#	PostgreSQL refuses to run as root.  Run as root (as in CI), the script
#	first installs the extension and tserver into pg_config's directories
#	(make install; TCOPY_SKIP_INSTALL=1 skips that), then runs itself again
#	as $TCOPY_TEST_USER (default postgres) in a work directory owned by that
#	user, from a copy of the tree if that user cannot reach this one
#	(test/tools/reachable_tree.sh).  Run as anyone else, it expects `make install` to have been done.
#
#	Run as root with the TAP tests to run, and `ip netns` working, it also
#	sets up three network namespaces standing for other machines
#	(test/tools/netns.sh, in the work directory's netns/, removed again on
#	exit) and builds test/tools/delay_relay; TCOPY_NETNS_DIR tells the
#	tests that use them (test/ext/173_netns_tcp.pl) where they are.  Their
#	names and addresses are fixed, so one run at a time holds them (a lock
#	on /var/tmp/tcopy-netns.lock): in a run started while another holds
#	them, those tests skip, and say why.
#
#	The work directory (pg_regress output, TAP tmp_check, tserver log) is
#	removed after a successful run and kept, with its path printed, after a
#	failure; TCOPY_TEST_KEEP=1 keeps it always.
#
# Environment: PG_CONFIG (default pg_config), TSERVER_BIN / TSERVER_CLI (by
# default the installed tserver and tserver-cli, else build/'s),
# TCOPY_BIG_ROWS (rows of the memory test, default 5M), TCOPY_TAP_ROWS
# (rows of the load tests, default 1M), TCOPY_PG_TESTS (which parts to run:
# default "regress isolation tap"; "regress-serial" runs the first regress pass
# alone), TCOPY_REGRESS (the regress tests to run, default
# all), TCOPY_TAP (globs of the TAP files to run, default all),
# TCOPY_TAP_JOBS (how many of the TAP tests that share the machine run at
# once, default 2),
# TCOPY_NETNS_DELAY_US (one-way delay of the namespaces' links, default 500).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
BINDIR=$("$PG_CONFIG" --bindir)
# pg_config --pgxs is .../lib/pgxs/src/makefiles/pgxs.mk
PGXS_SRC=$(cd "$(dirname "$("$PG_CONFIG" --pgxs)")/.." && pwd)
PG_REGRESS="$PGXS_SRC/test/regress/pg_regress"
PG_PERL="$PGXS_SRC/test/perl"

say()
{
	echo "pg_tests: $*"
}

if [ "$(id -u)" -eq 0 ]; then
	test_user=${TCOPY_TEST_USER:-postgres}
	if ! id "$test_user" >/dev/null 2>&1; then
		say "user $test_user does not exist (PostgreSQL cannot run as root); set TCOPY_TEST_USER" >&2
		exit 1
	fi
	# the test user runs this script and reads sql/, test/: a tree it
	# cannot reach runs from a copy (test/tools/reachable_tree.sh)
	. "$TOP/test/tools/reachable_tree.sh"
	tcopy_run_from_copy "$TOP" test/pg_tests.sh "$@" || true
	if [ "${TCOPY_SKIP_INSTALL:-}" != 1 ]; then
		say "installing the extension and tserver (make install)"
		make -C "$TOP" install >/dev/null
	fi
	work=$(mktemp -d /tmp/tcopy-pg.XXXXXX)
	chown "$test_user" "$work"
	chmod 700 "$work"
	netns=()
	if [[ " ${TCOPY_PG_TESTS:-regress tap} " == *" tap "* ]] && ! ip netns list >/dev/null 2>&1; then
		say "no \`ip netns\` (iproute2): the tests that need network namespaces skip" >&2
	elif [[ " ${TCOPY_PG_TESTS:-regress tap} " == *" tap "* ]] &&
		! { exec 9>/var/tmp/tcopy-netns.lock && flock -n 9; }; then
		# the namespaces' names and addresses are fixed: one run at a time
		say "another test run holds the network namespaces: the tests that need them skip" >&2
	elif [[ " ${TCOPY_PG_TESTS:-regress tap} " == *" tap "* ]]; then
		# down on any exit; a signal exits (bash runs no EXIT trap on SIGTERM)
		trap 'bash "$TOP/test/tools/netns.sh" down "$work/netns"' EXIT
		trap 'exit 1' INT TERM
		# one-way delay of the links, by netem or else by delay_relay; the
		# runners it starts must not hold the lock (fd 9)
		if make -C "$TOP/test" relay >/dev/null &&
			TCOPY_TEST_USER="$test_user" DELAY_US=${TCOPY_NETNS_DELAY_US:-500} \
			bash "$TOP/test/tools/netns.sh" up 3 "$work/netns" 9>&-; then
			netns=(TCOPY_NETNS_DIR="$work/netns")
		else
			say "no network namespaces: the tests that need them skip" >&2
		fi
	fi
	# the power-loss tests' preload layer (test/ext/191_power_loss.pl, 205)
	if [[ " ${TCOPY_PG_TESTS:-regress tap} " == *" tap "* ]]; then
		make -C "$TOP/test" powerloss >/dev/null
	fi
	rc=0
	# runuser keeps the environment but for HOME, SHELL, USER and LOGNAME
	runuser -u "$test_user" -- env TCOPY_PG_WORKDIR="$work" PG_CONFIG="$PG_CONFIG" \
		TCOPY_PG_TESTS="${TCOPY_PG_TESTS:-regress isolation tap}" "${netns[@]}" \
		bash "$TOP/test/pg_tests.sh" || rc=$?
	if [ ${#netns[@]} -gt 0 ]; then
		bash "$TOP/test/tools/netns.sh" down "$work/netns"
	fi
	if [ $rc -eq 0 ] && [ "${TCOPY_TEST_KEEP:-}" != 1 ]; then
		rm -rf "$work"
	else
		say "work directory kept: $work"
	fi
	exit $rc
fi

# ---- as the test user ----

for f in "$PG_REGRESS" "$PG_PERL/PostgreSQL/Test/Cluster.pm"; do
	if [ ! -e "$f" ]; then
		say "$f not found: install postgresql-server-dev-15" >&2
		exit 1
	fi
done
if [ ! -e "$("$PG_CONFIG" --sharedir)/extension/tcopy.control" ]; then
	say "the tcopy extension is not installed: run make install (as root)" >&2
	exit 1
fi

if [ -n "${TCOPY_PG_WORKDIR:-}" ]; then
	work=$TCOPY_PG_WORKDIR
	own_work=0
else
	work=$(mktemp -d /tmp/tcopy-pg.XXXXXX)
	own_work=1
fi
cd "$work"

pick_binary()
{
	local name=$1
	if [ -x "$BINDIR/$name" ]; then
		echo "$BINDIR/$name"
	else
		echo "$TOP/build/$name"
	fi
}
TSERVER_BIN=${TSERVER_BIN:-$(pick_binary tserver)}
TSERVER_CLI=${TSERVER_CLI:-$(pick_binary tserver-cli)}
export TSERVER_BIN TSERVER_CLI

# one tserver for the regression tests; the socket path must fit sun_path
tserver_pid=
tserver_log="$work/tserver.log"
stop_tserver()
{
	if [ -n "$tserver_pid" ]; then
		kill -TERM "$tserver_pid" 2>/dev/null || true
		wait "$tserver_pid" 2>/dev/null || true
		tserver_pid=
	fi
}
trap stop_tserver EXIT

# start_tserver DIR: a tserver on an empty data directory DIR
start_tserver()
{
	tserver_log="$(dirname "$1")/tserver.log"
	say "tserver: $TSERVER_BIN ($1)"
	# the regression cluster runs as this user too: admitted by its uid
	"$TSERVER_BIN" --data "$1" --listen "unix:$work/ts.sock" \
		--allow-uid "$(id -u)" >"$tserver_log" 2>&1 &
	tserver_pid=$!
	for _ in $(seq 1 300); do
		grep -q "tserver ready" "$tserver_log" 2>/dev/null && break
		if ! kill -0 "$tserver_pid" 2>/dev/null; then
			say "tserver exited at start:" >&2
			cat "$tserver_log" >&2
			exit 1
		fi
		sleep 0.1
	done
	if ! grep -q "tserver ready" "$tserver_log"; then
		say "tserver not ready after 30 s:" >&2
		cat "$tserver_log" >&2
		exit 1
	fi
}
export TCOPY_ADDRESS="unix:$work/ts.sock"

# pg_regress: sql/*.sql in name order.  --no-locale and UTF8: outputs
# (sort order, unicode, encoding errors) must not depend on the machine.
# run_regress NAME [PGOPTIONS]: the pass's output in $work/NAME, its
# sessions' settings PGOPTIONS; each pass has a tserver of its own.
run_regress()
{
	local tests out="$work/$1"
	# TCOPY_REGRESS: names of the tests to run instead of all (e.g. tcopy_conflict)
	tests=${TCOPY_REGRESS:-$(cd "$TOP/sql" && ls -- *.sql | sed 's/\.sql$//')}
	say "pg_regress ($1${2:+: $2}):" $tests
	mkdir -p "$out"
	start_tserver "$out/tserver-data"
	# shellcheck disable=SC2086
	if ! PGOPTIONS="${2:-}" "$PG_REGRESS" \
		--temp-instance="$out/tmp_instance" \
		--temp-config="$TOP/test/regress.conf" \
		--bindir="$BINDIR" \
		--inputdir="$TOP" \
		--outputdir="$out" \
		--encoding=UTF8 --no-locale \
		--dbname=contrib_regression \
		$tests 2>&1 | tee "$out/regress.out"; then
		if [ -s "$out/regression.diffs" ]; then
			say "regression.diffs:"
			cat "$out/regression.diffs"
		fi
		failures+=("pg_regress ($1): $(grep -E '\.\.\. FAILED' "$out/regress.out" |
			awk '{print $2}' | tr '\n' ' ')")
		stop_tserver
		return 1
	fi
	if ! kill -0 "$tserver_pid" 2>/dev/null; then
		say "the tserver died during pg_regress; its log:" >&2
		tail -50 "$tserver_log" >&2
		return 1
	fi
	stop_tserver
}

# tap_prove PROVE_ARGS... TESTS...: prove from the work directory, so that
# tmp_check lands there; the output is appended to $work/tap.out
tap_prove()
{
	(cd "$work/tap" &&
		PERL5LIB="$PG_PERL:$TOP/test/lib${PERL5LIB:+:$PERL5LIB}" \
		PATH="$BINDIR:$PATH" \
		PG_REGRESS="$PG_REGRESS" \
		TESTDIR="$work/tap" \
		prove --timer "$@" 2>&1 | tee -a "$work/tap.out")
}

# Postgres' isolation tester: every spec once with heap tables and once
# with tcopy tables (run_isolation KIND), against the same expected output.
run_isolation()
{
	local out="$work/isolation-$1" specs
	specs=$(cd "$TOP/test/isolation/specs" && ls -- *.spec | sed 's/\.spec$//')
	say "isolation ($1):" $specs
	mkdir -p "$out"
	start_tserver "$out/tserver-data"
	# shellcheck disable=SC2086
	if ! PGOPTIONS="-c tcopy_test.kind=$1 -c tcopy_test.address=$TCOPY_ADDRESS" \
		"$PGXS_SRC/test/isolation/pg_isolation_regress" \
		--temp-instance="$out/tmp_instance" \
		--temp-config="$TOP/test/regress.conf" \
		--bindir="$BINDIR" \
		--inputdir="$TOP/test/isolation" \
		--outputdir="$out" \
		--encoding=UTF8 --no-locale \
		$specs 2>&1 | tee "$out/isolation.out"; then
		if [ -s "$out/regression.diffs" ]; then
			say "regression.diffs:"
			cat "$out/regression.diffs"
		fi
		failures+=("isolation ($1): $(grep -E 'FAILED' "$out/isolation.out" |
			awk '{print $2}' | tr '\n' ' ')")
		stop_tserver
		return 1
	fi
	stop_tserver
}

# The TAP tests.
run_tap()
{
	# TCOPY_TAP: globs of TAP files to run instead of all, separated by
	# spaces (e.g. '11[12]* 144*'), or a path under the top directory
	# (bench/scan_text_cost.pl, a measurement that runs in this harness)
	local tests=() globs glob
	case "${TCOPY_TAP:-}" in
		*/*) tests=("$TOP/$TCOPY_TAP") ;;
		*)
			# split on spaces without expanding here: each glob is
			# expanded under test/ext/ below
			read -r -a globs <<<"${TCOPY_TAP:-*}"
			for glob in "${globs[@]}"; do
				tests+=("$TOP"/test/ext/$glob.pl)
			done
			;;
	esac

	# a test that measures memory or time says so in a line
	# "# pg_tests: alone": it runs first, by itself; the others then run
	# TCOPY_TAP_JOBS at a time (each with a cluster and tservers of its own)
	local alone=() shared=() t rc=0
	for t in "${tests[@]}"; do
		if grep -q '^# pg_tests: alone' "$t" 2>/dev/null; then
			alone+=("$t")
		else
			shared+=("$t")
		fi
	done
	say "TAP tests, alone:" "${alone[@]##*/}"
	say "TAP tests, ${TCOPY_TAP_JOBS:-2} at a time:" "${shared[@]##*/}"
	mkdir -p "$work/tap"
	: >"$work/tap.out"
	if [ ${#alone[@]} -gt 0 ]; then
		tap_prove -v "${alone[@]}" || rc=1
	fi
	if [ ${#shared[@]} -gt 0 ]; then
		# -v only when one at a time: the lines of two would interleave
		if [ "${TCOPY_TAP_JOBS:-2}" -gt 1 ]; then
			tap_prove -j"${TCOPY_TAP_JOBS:-2}" "${shared[@]}" || rc=1
		else
			tap_prove -v "${shared[@]}" || rc=1
		fi
	fi
	if [ $rc -ne 0 ]; then
		local failed_files
		failed_files=$(grep -E '^(t/|/)?[^ ]*\.pl +\(Wstat' "$work/tap.out" |
			awk '{print $1}' | tr '\n' ' ')
		failures+=("TAP: ${failed_files:-(no file named: see above)}")
		failures+=("$(grep -E '^not ok' "$work/tap.out" | head -10)")
		# the failed files' logs (all of them when none is named)
		for log in "$work"/tap/tmp_check/log/*; do
			[ -f "$log" ] || continue
			if [ -n "$failed_files" ]; then
				local name=${log##*/regress_log_}
				[[ " $failed_files" == *"/$name.pl "* ]] || continue
			fi
			say "---- $log (last 60 lines)"
			tail -60 "$log"
		done
		return 1
	fi
}

failed=0
failures=()
parts=" ${TCOPY_PG_TESTS:-regress isolation tap} "
if [[ $parts == *" regress "* || $parts == *" regress-serial "* ]]; then
	run_regress serial || failed=1
fi
if [[ $parts == *" regress "* ]]; then
	# the same tests, every COPY parsed by parallel workers (chunks of a row
	# or two): the same output, errors and their CONTEXT lines included
	run_regress parallel "-c tcopy.copy_workers=3 -c tcopy.copy_parallel_threshold=0 -c tcopy.copy_chunk_bytes=7" ||
		failed=1
fi
if [[ $parts == *" isolation "* ]]; then
	run_isolation heap || failed=1
	run_isolation tcopy || failed=1
fi
if [[ $parts == *" tap "* ]]; then
	run_tap || failed=1
fi

if [ $failed -ne 0 ]; then
	# the end of the output is what a CI log shows: name what failed
	for f in "${failures[@]}"; do
		say "failed: $f"
	done
	say "FAILED; output in $work"
	exit 1
fi
say "all PostgreSQL tests passed"
if [ $own_work -eq 1 ] && [ "${TCOPY_TEST_KEEP:-}" != 1 ]; then
	cd /
	rm -rf "$work"
fi
