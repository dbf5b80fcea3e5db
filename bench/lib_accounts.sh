# bench/lib_accounts.sh: what bench/reload.sh and bench/threads.sh share,
# sourced after they set bench_src, bindir, dir, port, user, data_dir (and
# tserver, the binary to run): the accounts datasets, and a throwaway
# tserver and cluster with a tcopy table "accounts" of pgbench_accounts'
# columns keyed by aid.
#   accounts_csv ROWS [shuffled]   print the cached dataset's path, made if missing
#   accounts_start [TSERVER_ARG...] start both (stopped at exit) and make the table;
#                                  with ACCOUNTS_TSERVERS=N (default 1) and
#                                  ACCOUNTS_PARTITIONS=P (default 0: a plain
#                                  table), N tservers and a table PARTITION BY
#                                  HASH (aid) of P partitions, partition i on
#                                  tserver i mod N
#   as_pg, psql_pg                 run as Postgres' user; psql on the cluster

as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi; }
psql_pg() { as_pg "$bindir/psql" -h "$dir" -p "$port" -U postgres -qXAt -v ON_ERROR_STOP=1 "$@" postgres; }

# N sorted accounts rows (bench/gen_data.awk's), or the same rows in the
# seeded random order bench/run.sh gives them: made once, cached
accounts_csv()
{
	local rows=$1 kind=${2:-sorted} sorted file
	mkdir -p "$data_dir"
	sorted=$data_dir/accounts_$rows.csv
	if [ ! -e "$sorted.done" ]; then
		awk -v kind=accounts -v rows="$rows" -f "$bench_src/gen_data.awk" >"$sorted.tmp"
		mv "$sorted.tmp" "$sorted"
		touch "$sorted.done"
	fi
	file=$sorted
	if [ "$kind" = shuffled ]; then
		file=$data_dir/accounts_${rows}_shuffled.csv
		if [ ! -e "$file.done" ]; then
			awk 'BEGIN { srand(42) } { printf "%09d\t%s\n", int(rand() * 1000000000), $0 }' "$sorted" |
				LC_ALL=C sort -S 25% -t "$(printf '\t')" -k1,1 -T "$data_dir" | cut -f2- >"$file.tmp"
			mv "$file.tmp" "$file"
			touch "$file.done"
		fi
	fi
	chmod a+r "$file"
	echo "$file"
}

accounts_ts_pids=""
accounts_cleanup()
{
	as_pg "$bindir/pg_ctl" -D "$dir/pg" -m immediate stop >/dev/null 2>&1 || true
	# as root, the pid is runuser's: signal the tservers themselves
	pkill -TERM -f -- "--listen unix:$dir/ts" 2>/dev/null || true
	for pid in $accounts_ts_pids; do wait "$pid" 2>/dev/null || true; done
}

# tserver i (1, 2, ...): its socket's name
accounts_ts_name() { if [ "$1" -eq 1 ]; then echo ts; else echo "ts$1"; fi; }

accounts_start()
{
	rm -rf "$dir"
	mkdir -p "$dir"
	[ "$(id -u)" -eq 0 ] && chown "$user" "$dir"
	trap accounts_cleanup EXIT
	local n=${ACCOUNTS_TSERVERS:-1} parts=${ACCOUNTS_PARTITIONS:-0} i name
	for i in $(seq "$n"); do
		name=$(accounts_ts_name "$i")
		as_pg "$tserver" --data "$dir/$name" --listen "unix:$dir/$name.sock" --allow-uid "$user" "$@" \
			2>"$dir/$name.log" &
		accounts_ts_pids="$accounts_ts_pids $!"
	done
	for i in $(seq "$n"); do
		name=$(accounts_ts_name "$i")
		for _ in $(seq 100); do grep -q "tserver ready" "$dir/$name.log" && break; sleep 0.1; done
		grep -q "tserver ready" "$dir/$name.log" || { cat "$dir/$name.log" >&2; exit 1; }
	done

	as_pg "$bindir/initdb" -D "$dir/pg" -U postgres -A trust --no-sync >/dev/null
	cat >>"$dir/pg/postgresql.conf" <<EOF
port = $port
unix_socket_directories = '$dir'
shared_preload_libraries = 'tcopy'
max_connections = 20
max_worker_processes = 16
max_parallel_workers = 8
autovacuum = off
tcopy.recovery_interval = 0
EOF
	as_pg "$bindir/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w start >/dev/null
	{
		echo "CREATE EXTENSION tcopy;"
		for i in $(seq "$n"); do
			name=$(accounts_ts_name "$i")
			echo "CREATE SERVER $name FOREIGN DATA WRAPPER tcopy OPTIONS (address 'unix:$dir/$name.sock');"
			echo "CREATE USER MAPPING FOR PUBLIC SERVER $name;"
		done
		if [ "$parts" -eq 0 ]; then
			echo "CREATE FOREIGN TABLE accounts (aid int NOT NULL, bid int, abalance int, filler char(84))"
			echo "	SERVER ts OPTIONS (key 'aid');"
		else
			echo "CREATE TABLE accounts (aid int NOT NULL, bid int, abalance int, filler char(84))"
			echo "	PARTITION BY HASH (aid);"
			for i in $(seq 0 $((parts - 1))); do
				echo "CREATE FOREIGN TABLE accounts_$i PARTITION OF accounts"
				echo "	FOR VALUES WITH (MODULUS $parts, REMAINDER $i)"
				echo "	SERVER $(accounts_ts_name $((i % n + 1))) OPTIONS (key 'aid');"
			done
		fi
	} | psql_pg >/dev/null
}
