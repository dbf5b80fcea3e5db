# reachable_tree.sh
#	Sourced by test/run_tests.sh and test/pg_tests.sh: as root, the tests
#	run programs as other users (Postgres as TCOPY_TEST_USER, default
#	postgres; 006_auth.pl's refused client as nobody), and those users must
#	reach the source tree and the build.  A clone in /root (mode 0700 on
#	Debian) or in a directory made by `mktemp -d` is out of their reach; the
#	modes of the user's directories are not ours to loosen.  So such a tree
#	is copied, build outputs included (their times kept, so that make
#	rebuilds nothing), into a directory of our own that every user can
#	traverse, and the tests run there.  Root never writes into a tree that
#	another user owns either: that is copied too.
#
#	tcopy_tree_users: the users that must reach the tree
#	tcopy_tree_unreachable TOP: the first of them that cannot, or nothing
#	tcopy_run_from_copy TOP SCRIPT ARGS...: runs TOP's SCRIPT from a copy
#	    when root must not or cannot run it in place (else returns 1); the
#	    copy is removed after a success and kept, its path said, after a
#	    failure; exits with the script's status

tcopy_tree_users()
{
	echo "${TCOPY_TEST_USER:-postgres}"
	id nobody >/dev/null 2>&1 && echo nobody
	return 0
}

tcopy_tree_unreachable()
{
	local top=$1 u
	for u in $(tcopy_tree_users); do
		id "$u" >/dev/null 2>&1 || continue
		# every directory above must be searchable, the files readable
		if ! runuser -u "$u" -- test -r "$top/Makefile" -a -x "$top/test" 2>/dev/null; then
			echo "$u"
			return 0
		fi
	done
}

tcopy_run_from_copy()
{
	local top=$1 script=$2 who owner copy rc
	shift 2
	[ "$(id -u)" -eq 0 ] || return 1
	[ -z "${TCOPY_TREE_COPY:-}" ] || return 1	# this is the copy
	who=$(tcopy_tree_unreachable "$top")
	owner=$(stat -c %u "$top")
	[ -n "$who" ] || [ "$owner" -ne 0 ] || return 1

	# called where `set -e` does not hold (`|| true`): each step checked
	copy=$(mktemp -d "${TCOPY_COPY_DIR:-/tmp}/tcopy-check.XXXXXX") && chmod 755 "$copy" || {
		echo "tests: cannot make a directory for a copy of $top in ${TCOPY_COPY_DIR:-/tmp}: set TCOPY_COPY_DIR to a directory every user can traverse" >&2
		exit 1
	}
	if [ -n "$who" ]; then
		echo "tests: user $who cannot reach $top (a directory above it is closed to other users): running from a copy in $copy/tcopy"
	else
		echo "tests: $top belongs to uid $owner, so root does not build there: running from a copy in $copy/tcopy"
	fi
	cp -a "$top" "$copy/tcopy" && chown -R 0:0 "$copy/tcopy" || {
		echo "tests: copying $top to $copy/tcopy failed" >&2
		rm -rf "$copy"
		exit 1
	}
	who=$(tcopy_tree_unreachable "$copy/tcopy")
	if [ -n "$who" ]; then
		echo "tests: user $who cannot reach the copy in $copy either: set TCOPY_COPY_DIR to a directory every user can traverse (now ${TCOPY_COPY_DIR:-/tmp})" >&2
		rm -rf "$copy"
		exit 1
	fi
	rc=0
	TCOPY_TREE_COPY="$top" bash "$copy/tcopy/$script" "$@" || rc=$?
	if [ $rc -eq 0 ]; then
		rm -rf "$copy"
	else
		echo "tests: the copy the tests ran from is kept: $copy/tcopy"
	fi
	exit $rc
}
