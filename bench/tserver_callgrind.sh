#!/usr/bin/env bash
# Instructions a tserver spends on one load, by callgrind (deterministic,
# where the shared machine's timings are not): bench/tserver_load.sh with
# the tserver under valgrind, then the inclusive instruction counts of the
# write path, the spills and the commit (the load's read-back scan is left
# out; the merge in one thread, so that the commit holds it all).  Cache
# misses are not counted: a lever that saves waiting for memory shows in
# timings only.  (issue 17)
#
#   bench/tserver_callgrind.sh TSERVER_BINARY OUT_PREFIX [tserver_load.sh options]
set -euo pipefail
bin=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
wrap=$(mktemp "${TMPDIR:-/tmp}/tserver_callgrind.XXXXXX")
cat >"$wrap" <<WRAP
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file=$out.callgrind -- $bin "\$@" --merge-threads 1
WRAP
chmod +x "$wrap"
TSERVER=$wrap "$here/tserver_load.sh" "$@" >"$out.load" 2>&1 || { cat "$out.load"; exit 1; }
rm -f "$wrap"
callgrind_annotate --inclusive=yes "$out.callgrind" 2>/dev/null >"$out.annotate"
awk '
	/ts_session_write[ (]/ && !w { w = $1 }
	/ts_session_commit[ (]/ && !c { c = $1 }
	/spill_job_main[ (]/ && !s { s = $1 }
	/merge_part_main[ (]/ && !m { m = $1 }
	function num(x) { gsub(",", "", x); return x + 0 }
	END { printf "write %.0f M, spills %.0f M, commit %.0f M (merge parts %.0f M): total %.0f M instructions\n",
		num(w) / 1e6, num(s) / 1e6, num(c) / 1e6, num(m) / 1e6, (num(w) + num(s) + num(c)) / 1e6 }
' "$out.annotate"
