# gen_data.awk: the benchmark's CSV datasets, deterministic for a given awk.
#
#   awk -v kind=accounts -v rows=N -f gen_data.awk        pgbench_accounts rows
#   awk -v kind=mixed -v rows=N -v seed=S -f gen_data.awk wide rows, mixed types
#
# accounts: aid 1..N, bid = 1 + (aid-1)/100000 as pgbench -i makes them,
# abalance 0, filler 84 characters (pgbench pads it with blanks; here it
# carries text, so that nothing downstream can shrink it to nothing), about
# 100 bytes a row.
#
# mixed (table events): id bigint (1..N, the key), account int, kind
# varchar(16), name text (3-80 characters, 2% with CSV quoting, commas and
# doubled quotes), amount numeric(14,2) (5% NULL, some negative), created
# timestamptz (microseconds, offsets +00..+05), score float8 (10% NULL),
# active boolean (3% NULL), note text (50% NULL, else 10-200 characters),
# about 160 bytes a row.  NULL is CSV's unquoted empty field.
BEGIN {
	if (kind == "accounts") {
		base = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		base = base base
		for (i = 0; i < 16; i++)
			fill[i] = substr(base, i + 1, 84)
		for (i = 1; i <= rows; i++)
			printf "%d,%d,0,%s\n", i, int((i - 1) / 100000) + 1, fill[i % 16]
		exit
	}
	if (kind != "mixed") {
		print "gen_data.awk: kind must be accounts or mixed" > "/dev/stderr"
		exit 2
	}
	srand(seed ? seed : 20240611)
	pool = "Lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod " \
		"tempor incididunt ut labore et dolore magna aliqua Ut enim ad minim veniam " \
		"quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo " \
		"consequat Duis aute irure dolor in reprehenderit in voluptate velit esse " \
		"cillum dolore eu fugiat nulla pariatur Excepteur sint occaecat cupidatat " \
		"non proident sunt in culpa qui officia deserunt mollit anim id est laborum "
	plen = length(pool)
	nkinds = split("deposit withdrawal transfer fee interest refund adjustment chargeback", kinds, " ")
	for (i = 1; i <= rows; i++) {
		account = 1 + int(rand() * 1000000)
		k = kinds[1 + int(rand() * nkinds)]
		len = 3 + int(rand() * 78)
		name = substr(pool, 1 + int(rand() * (plen - len)), len)
		if (rand() < 0.02)
			name = "\"" name ", \"\"" k "\"\"\""
		if (rand() < 0.05)
			amount = ""
		else
			amount = sprintf("%s%d.%02d", rand() < 0.2 ? "-" : "", int(rand() * 100000000), int(rand() * 100))
		created = sprintf("%04d-%02d-%02d %02d:%02d:%02d.%06d+%02d",
						  2019 + int(rand() * 6), 1 + int(rand() * 12), 1 + int(rand() * 28),
						  int(rand() * 24), int(rand() * 60), int(rand() * 60),
						  int(rand() * 1000000), int(rand() * 6))
		score = rand() < 0.1 ? "" : sprintf("%.15g", rand() * 2000 - 1000)
		r = rand()
		active = r < 0.03 ? "" : (r < 0.6 ? "t" : "f")
		if (rand() < 0.5)
			note = ""
		else {
			len = 10 + int(rand() * 191)
			note = substr(pool, 1 + int(rand() * (plen - len)), len)
		}
		printf "%d,%d,%s,%s,%s,%s,%s,%s,%s\n", i, account, k, name, amount, created, score, active, note
	}
}
