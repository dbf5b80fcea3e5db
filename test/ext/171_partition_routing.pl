# 171_partition_routing.pl
#	COPY into partitioned tables whose leaves are tcopy tables on two
#	tservers (issue 16), checked against a heap twin: an identical
#	partitioned table of heap leaves, loaded by the same statements.  The
#	oracle holds whichever path takes the COPY (Postgres' COPY through the
#	FDW's insert path, or tcopy's COPY hook routing rows itself).
#
#	One Postgres node (UTF8, C locale), tservers ts1 and ts2.  Columns
#	(aid int NOT NULL, bid int, abalance int DEFAULT -1, filler text); the
#	input is 20000 generated rows in shuffled aid order (1 .. 20000) with
#	NULLs in bid, abalance and filler, quotes, commas, tabs, backslashes,
#	newlines, empty strings and non-ASCII text.  "Equal to the heap twin"
#	means: the same command tags; the same leaves; per leaf, the same
#	count and md5 of its rows (ROW(aid, bid, abalance, filler)::text,
#	ordered by aid, then the row text); the same for the parent; and,
#	for errors, the same psql stderr under VERBOSITY verbose (message,
#	SQLSTATE, DETAIL, CONTEXT with the line, schema and table fields) once
#	the tc_/h_ table prefix and psql's script line are taken out
#	(LOCATION lines are not compared).
#
#	1. Each scheme, loaded by COPY FROM a server file (text format) of the
#	   20000 rows, is equal to its heap twin; every tcopy leaf got rows,
#	   and tserver-cli counts on the leaf's own tserver equal the heap
#	   leaf's count:
#	   hash  - HASH (aid), 4 leaves alternating ts1/ts2, key 'aid';
#	   range - RANGE (aid), 3 ranges and a DEFAULT, keyless;
#	   list  - LIST (bid), (1,2,3), (4,5,6), (NULL,7) and a DEFAULT;
#	   sub   - RANGE (aid) of two HASH (aid) sub-partitioned tables, 5
#	           tcopy leaves on both tservers, key 'aid';
#	   reord - RANGE (aid) whose parent has a dropped column and one leaf
#	           created alone with its columns in another order and a
#	           dropped column, then ATTACHed (columns map by name), and
#	           afterwards a column-list COPY (the parent's default);
#	   expr  - LIST ((aid % 3)), a partition key expression;
#	   and the fallbacks of 6.  Then on list a column-list COPY without the key column bid: all
#	   rows to the (NULL, 7) leaf, with the default abalance.
#	2. On range: COPY with a column list (filler, aid) (bid NULL, abalance
#	   the default), with WHERE, FORMAT csv with HEADER (quoted newlines),
#	   FORMAT binary (written by COPY (SELECT * FROM h_hash) TO), ENCODING
#	   'LATIN1' (a file in LATIN1 bytes), and COPY FROM STDIN through
#	   psql: each equal to the heap twin afterwards.
#	3. Errors, each equal to the heap twin, and asserted by itself too:
#	   - a row no partition takes (range gap: aid 11000 at line 5555 of
#	     18001 rows; list without a DEFAULT: bid 99 at line 4321 of 6250):
#	     SQLSTATE 23514, `no partition of relation "..." found for row`,
#	     DETAIL `Partition key of the failing row contains (...) =
#	     (...).`, CONTEXT `COPY <parent>, line N`; afterwards every leaf
#	     is empty, read through Postgres and through tserver-cli on its
#	     own tserver, and both tservers hold no session;
#	   - NULL in aid (NOT NULL) at line 2500 of a COPY into listnd: 23502
#	     naming the leaf; a bad bid (its partition key) at line 3000:
#	     22P02 with line and column; every leaf empty afterwards, as above;
#	   - a bad integer in abalance at line 3777 of a COPY into hash:
#	     22P02, `invalid input syntax for type integer`, CONTEXT with line
#	     and column; nothing of that COPY loaded;
#	   - COPY straight into leaf range_1 of a row outside its bound (line
#	     3): 23514 `new row for relation "..." violates partition
#	     constraint`; nothing of it loaded;
#	   - COPY straight into sub_lo (a partitioned partition) of a row
#	     outside its range (line 2): the same 23514 error; nothing loaded;
#	   - COPY (FREEZE) into hash refused (0A000, cannot perform COPY FREEZE
#	     on a partitioned table), also into a partitioned table created in
#	     the transaction; a COPY of no rows: COPY 0;
#	   - BEGIN; COPY into hash; a failing COPY; ROLLBACK: nothing of either;
#	     BEGIN; COPY; SAVEPOINT; a failing COPY; ROLLBACK TO; COPY; a
#	     SELECT of the parent (its own 4000 rows in 4 leaves); COMMIT: the
#	     first and last COPY's rows, on all 4 leaves (both tservers).
#	4. DETACH of leaf hash_2: a COPY into the parent of 100 new rows fails
#	   at the first row hashing to remainder 2 (no partition error) and
#	   loads nothing; the detached table alone has its rows; ATTACH back
#	   FOR VALUES WITH (MODULUS 4, REMAINDER 2): the parent has every row
#	   again, and the same 100 rows then load.
#	5. Pruning: EXPLAIN (COSTS OFF) of aid = 42 on hash shows exactly one
#	   Foreign Scan, on the leaf the heap twin holds aid 42 in; aid
#	   BETWEEN 6000 AND 6100 on range exactly one, on range_2; the rows
#	   equal the heap twin's.
#	6. Fallbacks, loaded and compared as in 1: mixed (one heap leaf, two
#	   tcopy leaves); trig (BEFORE INSERT FOR EACH ROW trigger on the parent that
#	   changes abalance and filler, and it fired for every row); trigleaf
#	   (the same trigger on one of its two leaves only: it changed exactly
#	   that leaf's rows).
#	7. Memory: a HASH (aid) table of 64 tcopy leaves (alternating ts1/ts2,
#	   key 'aid'), with tcopy.batch_rows 100000 and tcopy.batch_size 512kB
#	   (batches close at their size: see $MEM_SETTINGS), loaded by COPY
#	   FROM a server file of TCOPY_TAP_ROWS (default 500000, to keep the
#	   test near a minute on 2 busy cores) pgbench_accounts rows, in a
#	   fresh backend, its RssAnon sampled as in 103_copy_memory.pl; then
#	   TRUNCATE and 2N rows in another fresh backend.  After each: the count, and rows in all
#	   64 leaves.  Both peaks stay under 160 MB (the 64 MB default of
#	   tcopy.copy_batch_memory plus 96 MB); the 2N peak is at most 16 MB
#	   above the N peak.  When the GUC tcopy.copy_batch_memory exists (only
#	   with the COPY hook that routes partitioned tables itself), N rows
#	   with it set to 8MB peak lower than with the default; without it that
#	   one assertion is skipped with a note.
# pg_tests: alone (it compares memory peaks)
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest;
use TcopyPgTest qw(write_accounts_csv rss_anon_kb table_name_of wait_tserver_idle);

my $t_start = time();
my $ROWS = 20_000;
my $MEM_ROWS = $ENV{TCOPY_TAP_ROWS} // 500_000;	# 1M: the test takes 15 s more
my $MEM_BOUND_KB = (64 + 96) * 1024;	# the batch cap's default + slack
my $MEM_FLAT_KB = 16 * 1024;			# 2N rows may take this much more than N
# Batches of the memory test close at their size, not at 1000 rows (which
# is ~100 kB of these rows): so the batches' memory is what the partitions'
# shares of tcopy.copy_batch_memory make it (64 x 512 kB under the 64 MB
# default, 64 x 128 kB under 8 MB), and 500000 rows (~780 kB a partition)
# already fill every partition's batch.  The COPY is serial: a parallel
# COPY's batches are made in its workers, and the backend measured here
# would hold none of them (the peaks then differed by 4 kB, either way).
my $MEM_SETTINGS = "SET tcopy.batch_rows = 100000; SET tcopy.batch_size = '512kB';"
  . " SET tcopy.copy_workers = 0;";
# The 8 MB cap takes the batches from 64 x 512 kB to 64 x 128 kB: its peak
# must be at least this much under the default's (24 MB less, by the shares).
my $MEM_CAP_GAP_KB = 12 * 1024;
my $COLS = '(aid int NOT NULL, bid int, abalance int DEFAULT -1, filler text)';
my $ROW = 'ROW(aid, bid, abalance, filler)::text';

my $ts1 = TcopyTest->new;
my $ts2 = TcopyTest->new;
$ts1->start or BAIL_OUT('tserver 1 did not start');
$ts2->start or BAIL_OUT('tserver 2 did not start');
my %tserver = (ts1 => $ts1, ts2 => $ts2);
my $node = PostgreSQL::Test::Cluster->new('part');
$node->init(extra => [ '--encoding=UTF8', '--locale=C' ]);
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'tcopy'\nmax_wal_size = 4GB\n");
$node->start;
$node->safe_psql('postgres', "
	CREATE EXTENSION tcopy;
	CREATE SERVER ts1 FOREIGN DATA WRAPPER tcopy OPTIONS (address '" . $ts1->address . "');
	CREATE SERVER ts2 FOREIGN DATA WRAPPER tcopy OPTIONS (address '" . $ts2->address . "');
	CREATE USER MAPPING FOR PUBLIC SERVER ts1;
	CREATE USER MAPPING FOR PUBLIC SERVER ts2;
");

sub sql { return $node->safe_psql('postgres', $_[0]) }

# ---- input ----

# Filler of row i: NULLs, quotes, commas, tabs, backslashes, newlines,
# empty strings, non-ASCII (UTF-8 bytes), plain text of varying length.
sub filler
{
	my ($i, $aid) = @_;
	return undef if $i % 7 == 0;
	return qq{he said "hi, there", row $aid} if $i % 11 == 0;
	return "Grüße, ñandú – 日本語 ✓ $aid" if $i % 13 == 0;
	return "tab\there, back\\slash $aid" if $i % 17 == 0;
	return '' if $i % 19 == 0;
	return "two\nlines $aid" if $i % 23 == 0;
	return "'single' quotes; semi $aid" if $i % 29 == 0;
	return "filler-$aid " . ('x' x ($i % 50));
}

# count rows [aid, bid, abalance, filler] with aids base + 1 .. base +
# count in a shuffled order (count must be prime to 7919): bid 1 .. 10 or
# NULL, abalance NULL at times, negative too.
sub gen_rows
{
	my ($base, $count) = @_;
	my @rows;
	for my $i (1 .. $count)
	{
		my $aid = $base + ($i * 7919) % $count + 1;
		push @rows, [ $aid, $i % 97 == 0 ? undef : $aid % 10 + 1,
			$i % 53 == 0 ? undef : ($aid * 31) % 20001 - 10000, filler($i, $aid) ];
	}
	return \@rows;
}

sub text_field
{
	my ($v) = @_;
	return '\N' unless defined $v;
	$v =~ s/\\/\\\\/g;
	$v =~ s/\t/\\t/g;
	$v =~ s/\n/\\n/g;
	$v =~ s/\r/\\r/g;
	return $v;
}

sub csv_field
{
	my ($v) = @_;
	return '' unless defined $v;
	return $v if $v ne '' && $v !~ /[",\n\r]/;
	$v =~ s/"/""/g;
	return qq{"$v"};
}

# COPY's text format of rows (columns: all, or the indexes given)
sub text_lines
{
	my ($rows, @cols) = @_;
	@cols = (0 .. 3) unless @cols;
	return join('', map { my $r = $_; join("\t", map { text_field($r->[$_]) } @cols) . "\n" } @$rows);
}

sub csv_lines
{
	my ($rows) = @_;
	return join('', map { join(',', map { csv_field($_) } @$_) . "\n" } @$rows);
}

# write content to a file in the node's directory, readable by the server
sub input_file
{
	my ($name, $content) = @_;
	my $path = $node->basedir . "/$name";
	open(my $fh, '>:raw', $path) or die "$path: $!";
	print $fh $content or die "$path: $!";
	close($fh) or die "$path: $!";
	return $path;
}

my $main = gen_rows(0, $ROWS);
my $main_file = input_file('main.txt', text_lines($main));
my $cols_file = input_file('cols.txt', text_lines($main, 3, 0));	# (filler, aid)
my $csv_file = input_file('main.csv', "aid,bid,abalance,filler\n" . csv_lines($main));
my $stdin_data = text_lines([ @$main[ 0 .. 1999 ] ]);
my $bin_file = $node->basedir . '/hash.bin';

# ---- the twins ----

# DDL of a leaf: a heap partition for prefix h_, a tcopy one otherwise
sub leaf_sql
{
	my ($p, $leaf, $parent, $bound, $server, $opts) = @_;
	return "CREATE TABLE $p$leaf PARTITION OF $p$parent $bound;" if $p eq 'h_';
	return "CREATE FOREIGN TABLE $p$leaf PARTITION OF $p$parent $bound SERVER $server"
	  . ($opts ? " OPTIONS ($opts)" : '') . ';';
}

my $KEY = "key 'aid'";
my %schemes = (
	hash => sub {
		my ($p) = @_;
		return join("\n", "CREATE TABLE ${p}hash $COLS PARTITION BY HASH (aid);",
			map { leaf_sql($p, "hash_$_", 'hash', "FOR VALUES WITH (MODULUS 4, REMAINDER $_)",
					'ts' . ($_ % 2 + 1), $KEY) } 0 .. 3);
	},
	range => sub {
		my ($p) = @_;
		return join("\n", "CREATE TABLE ${p}range $COLS PARTITION BY RANGE (aid);",
			leaf_sql($p, 'range_1', 'range', 'FOR VALUES FROM (MINVALUE) TO (5001)', 'ts1'),
			leaf_sql($p, 'range_2', 'range', 'FOR VALUES FROM (5001) TO (10001)', 'ts2'),
			leaf_sql($p, 'range_3', 'range', 'FOR VALUES FROM (10001) TO (15001)', 'ts1'),
			leaf_sql($p, 'range_d', 'range', 'DEFAULT', 'ts2'));
	},
	list => sub {
		my ($p) = @_;
		return join("\n", "CREATE TABLE ${p}list $COLS PARTITION BY LIST (bid);",
			leaf_sql($p, 'list_a', 'list', 'FOR VALUES IN (1, 2, 3)', 'ts1'),
			leaf_sql($p, 'list_b', 'list', 'FOR VALUES IN (4, 5, 6)', 'ts2'),
			leaf_sql($p, 'list_n', 'list', 'FOR VALUES IN (NULL, 7)', 'ts1'),
			leaf_sql($p, 'list_d', 'list', 'DEFAULT', 'ts2'));
	},
	sub => sub {
		my ($p) = @_;
		return join("\n", "CREATE TABLE ${p}sub $COLS PARTITION BY RANGE (aid);",
			"CREATE TABLE ${p}sub_lo PARTITION OF ${p}sub FOR VALUES FROM (MINVALUE) TO (10001)"
			  . " PARTITION BY HASH (aid);",
			"CREATE TABLE ${p}sub_hi PARTITION OF ${p}sub FOR VALUES FROM (10001) TO (MAXVALUE)"
			  . " PARTITION BY HASH (aid);",
			(map { leaf_sql($p, "sub_lo_$_", 'sub_lo', "FOR VALUES WITH (MODULUS 2, REMAINDER $_)",
					'ts' . ($_ % 2 + 1), $KEY) } 0 .. 1),
			(map { leaf_sql($p, "sub_hi_$_", 'sub_hi', "FOR VALUES WITH (MODULUS 3, REMAINDER $_)",
					'ts' . (($_ + 1) % 2 + 1), $KEY) } 0 .. 2));
	},
	reord => sub {
		my ($p) = @_;
		my $alone = '(filler text, x int, abalance int, bid int, aid int NOT NULL)';
		return join("\n",
			"CREATE TABLE ${p}reord (aid int NOT NULL, junk int, bid int, abalance int DEFAULT -1,"
			  . " filler text) PARTITION BY RANGE (aid);",
			"ALTER TABLE ${p}reord DROP COLUMN junk;",
			($p eq 'h_' ? "CREATE TABLE ${p}reord_a $alone;" : "CREATE FOREIGN TABLE ${p}reord_a $alone SERVER ts1;"),
			"ALTER TABLE ${p}reord_a DROP COLUMN x;",
			"ALTER TABLE ${p}reord ATTACH PARTITION ${p}reord_a FOR VALUES FROM (MINVALUE) TO (10001);",
			leaf_sql($p, 'reord_b', 'reord', 'FOR VALUES FROM (10001) TO (MAXVALUE)', 'ts2'));
	},
	gap => sub {
		my ($p) = @_;
		return join("\n", "CREATE TABLE ${p}gap $COLS PARTITION BY RANGE (aid);",
			leaf_sql($p, 'gap_lo', 'gap', 'FOR VALUES FROM (1) TO (10001)', 'ts1'),
			leaf_sql($p, 'gap_hi', 'gap', 'FOR VALUES FROM (12001) TO (MAXVALUE)', 'ts2'));
	},
	listnd => sub {
		my ($p) = @_;
		return join("\n", "CREATE TABLE ${p}listnd $COLS PARTITION BY LIST (bid);",
			leaf_sql($p, 'listnd_a', 'listnd', 'FOR VALUES IN (1, 2, 3, 4, 5)', 'ts1'),
			leaf_sql($p, 'listnd_b', 'listnd', 'FOR VALUES IN (6, 7, 8, 9, 10)', 'ts2'));
	},
	mixed => sub {
		my ($p) = @_;
		return join("\n", "CREATE TABLE ${p}mixed $COLS PARTITION BY RANGE (aid);",
			"CREATE TABLE ${p}mixed_1 PARTITION OF ${p}mixed FOR VALUES FROM (MINVALUE) TO (7001);",
			leaf_sql($p, 'mixed_2', 'mixed', 'FOR VALUES FROM (7001) TO (14001)', 'ts1'),
			leaf_sql($p, 'mixed_3', 'mixed', 'FOR VALUES FROM (14001) TO (MAXVALUE)', 'ts2'));
	},
	expr => sub {
		my ($p) = @_;
		return join("\n", "CREATE TABLE ${p}expr $COLS PARTITION BY LIST ((aid % 3));",
			map { leaf_sql($p, "expr_$_", 'expr', "FOR VALUES IN ($_)", 'ts' . ($_ % 2 + 1), $KEY) } 0 .. 2);
	},
	trigleaf => sub {
		my ($p) = @_;
		return join("\n", "CREATE TABLE ${p}trigleaf $COLS PARTITION BY HASH (aid);",
			(map { leaf_sql($p, "trigleaf_$_", 'trigleaf', "FOR VALUES WITH (MODULUS 2, REMAINDER $_)",
					"ts" . ($_ + 1), $KEY) } 0 .. 1),
			"CREATE TRIGGER trig_set BEFORE INSERT ON ${p}trigleaf_1 FOR EACH ROW EXECUTE FUNCTION trig_set();");
	},
	trig => sub {
		my ($p) = @_;
		return join("\n", "CREATE TABLE ${p}trig $COLS PARTITION BY HASH (aid);",
			(map { leaf_sql($p, "trig_$_", 'trig', "FOR VALUES WITH (MODULUS 2, REMAINDER $_)",
					"ts" . ($_ + 1), $KEY) } 0 .. 1),
			"CREATE TRIGGER trig_set BEFORE INSERT ON ${p}trig FOR EACH ROW EXECUTE FUNCTION trig_set();");
	});

sql(q{
	CREATE FUNCTION trig_set() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		NEW.abalance := coalesce(NEW.abalance, 0) + 1000000;
		NEW.filler := 'T:' || coalesce(NEW.filler, '~');
		RETURN NEW;
	END $$;
});
for my $scheme (sort keys %schemes)
{
	sql($schemes{$scheme}->($_)) for 'h_', 'tc_';
}

# leaves of a partitioned table: [name, relkind] in name order
sub leaves
{
	my ($parent) = @_;
	return [ map { [ split /\|/ ] } split /\n/, sql(qq{
		SELECT t.relid::regclass::text, c.relkind FROM pg_partition_tree('$parent') t
		JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf ORDER BY 1}) ];
}

# "count md5" of a relation's rows (ordered by aid, then the row text)
sub rel_sum
{
	my ($rel, $where) = @_;
	$where = $where ? "WHERE $where" : '';
	return sql(qq{
		SELECT count(*) || ' ' || md5(coalesce(string_agg($ROW, E'\\n'
			ORDER BY aid, $ROW COLLATE "C"), '')) FROM $rel $where});
}

# up to 10 rows in one relation and not the other, for diag
sub row_diff
{
	my ($tc, $h, $where) = @_;
	$where = $where ? "WHERE $where" : '';
	return sql(qq{
		(SELECT 'tcopy only: ' || r FROM (SELECT $ROW r FROM $tc $where EXCEPT ALL SELECT $ROW FROM $h $where) x LIMIT 5)
		UNION ALL
		(SELECT 'heap only: ' || r FROM (SELECT $ROW r FROM $h $where EXCEPT ALL SELECT $ROW FROM $tc $where) x LIMIT 5)});
}

# The server (ts1, ts2) of a tcopy foreign table
sub server_of
{
	my ($rel) = @_;
	return sql(qq{SELECT s.srvname FROM pg_foreign_table f JOIN pg_foreign_server s ON s.oid = f.ftserver
		WHERE f.ftrelid = '$rel'::regclass});
}

# Rows of a tcopy foreign table counted by tserver-cli on its own tserver
# (0 for a tserver table never written); a string saying why otherwise.
sub tserver_rows
{
	my ($rel) = @_;
	my $ts = $tserver{ server_of($rel) } or return "no tserver for $rel";
	my $r = $ts->cli('scan', table_name_of($node, $rel), '--format', 'count');
	return 0 if $r->{rc} != 0 && $r->{err} =~ /does not exist/;
	return $r->{rc} == 0 && $r->{out} =~ /^(\d+)\n\z/ ? $1 : "tserver-cli: $r->{out} $r->{err}";
}

# "count md5" (as rel_sum) of each relation, in one query: { rel => sum }
sub rel_sums
{
	my (@rels) = @_;
	my %sums = map { split /\|/ } split /\n/, sql(join("\nUNION ALL\n", map { qq{
		SELECT '$_', count(*) || ' ' || md5(coalesce(string_agg($ROW, E'\\n'
			ORDER BY aid, $ROW COLLATE "C"), '')) FROM $_} } @rels));
	return \%sums;
}

# Assert scheme tc_<s> equal to h_<s> (see the header); options rows
# (the parent's expected count), filled (every leaf has rows), tserver
# (compare tserver-cli's count of each tcopy leaf with the heap leaf's).
sub compare_twins
{
	my ($name, $scheme, %o) = @_;
	my ($h, $tc) = ("h_$scheme", "tc_$scheme");
	my $hl = leaves($h);
	my $tl = leaves($tc);
	is(join(' ', map { $_->[0] =~ s/^tc_/h_/r } @$tl), join(' ', map { $_->[0] } @$hl),
		"$name: $tc has the leaves of $h");
	my $sums = rel_sums($h, $tc, map { ($_->[0], $_->[0] =~ s/^tc_/h_/r) } @$tl);
	for my $leaf (@$tl)
	{
		my ($tleaf, $kind) = @$leaf;
		my $hleaf = $tleaf =~ s/^tc_/h_/r;
		is($sums->{$tleaf}, $sums->{$hleaf}, "$name: leaf $tleaf: count and md5 as ${hleaf}'s")
		  or diag(row_diff($tleaf, $hleaf));
		cmp_ok((split / /, $sums->{$tleaf})[0], '>', 0, "$name: leaf $tleaf has rows") if $o{filled};
		if ($o{tserver} && $kind eq 'f')
		{
			is(tserver_rows($tleaf), (split / /, $sums->{$hleaf})[0],
				"$name: tserver-cli on " . server_of($tleaf) . " counts the rows of $hleaf in $tleaf");
		}
	}
	is($sums->{$tc}, $sums->{$h}, "$name: parent $tc: count and md5 of its ordered rows as ${h}'s")
	  or diag(row_diff($tc, $h));
	like($sums->{$tc}, qr/^$o{rows} /, "$name: $tc has $o{rows} rows") if defined $o{rows};
}

# psql's stderr of a statement, comparable across the twins
sub norm_err
{
	my ($err) = @_;
	my @lines = grep { !/^LOCATION:/ } split /\n/, $err;
	s/^psql:[^:]*:\d+: // for @lines;
	s/\btc_/h_/g for @lines;
	return join("\n", @lines);
}

my $s = TcopyPgTest::Session->new($node, timeout => 300);
$s->run_ok('\set VERBOSITY verbose');

# Run sql ({p} standing for the prefix; or a sub making it of the prefix)
# on the heap twin, then on the tcopy one; assert the same command tags
# (unless tags => 0) and the same errors.  Returns { out, err } of the
# tcopy run and of the heap run.
sub twin_run
{
	my ($name, $sql, %o) = @_;
	my %r;
	for my $p ('h_', 'tc_')
	{
		my $q = ref $sql ? $sql->($p) : $sql =~ s/\{p\}/$p/gr;
		my ($out, $err) = $s->run($q);
		$r{$p} = { out => $out, err => $err };
	}
	is($r{tc_}{out}, $r{h_}{out}, "$name: the command tags of the heap twin") if $o{tags} // 1;
	is(norm_err($r{tc_}{err}), norm_err($r{h_}{err}), "$name: the errors of the heap twin");
	return ($r{tc_}, $r{h_});
}

# ---- 1. each scheme loaded ----
for my $scheme (qw(hash range list sub reord expr mixed trig trigleaf))
{
	my ($tc) = twin_run("$scheme: COPY of $ROWS rows", "COPY {p}$scheme FROM '$main_file';");
	is($tc->{out}, "COPY $ROWS", "$scheme: COPY $ROWS") or diag($tc->{err});
	compare_twins("$scheme: loaded", $scheme, rows => $ROWS, filled => 1, tserver => 1);
}
is(sql("SELECT count(*) FROM tc_trig WHERE filler LIKE 'T:%' AND abalance >= 990000"), $ROWS,
	'trig: the trigger set filler and abalance of every row');
is(sql("SELECT count(*) FILTER (WHERE filler LIKE 'T:%' AND abalance >= 990000) || ' '"
	  . " || count(*) FILTER (WHERE filler LIKE 'T:%' AND abalance >= 990000"
	  . " AND tableoid = 'tc_trigleaf_1'::regclass) FROM tc_trigleaf"),
	sql("SELECT count(*) || ' ' || count(*) FROM tc_trigleaf_1"),
	'trigleaf: the trigger of leaf tc_trigleaf_1 alone changed its rows, and every one of them');
is(sql(q{SELECT relkind FROM pg_class WHERE relname = 'tc_mixed_1'}), 'r', 'mixed: tc_mixed_1 is a heap leaf');
my ($tc) = twin_run('list: COPY (filler, aid), bid (the key) NULL', "COPY {p}list (filler, aid) FROM '$cols_file';");
is($tc->{out}, "COPY $ROWS", 'list: column-list COPY of all rows') or diag($tc->{err});
compare_twins('list: after the column-list COPY', 'list', rows => 2 * $ROWS);
is(sql('SELECT count(*) FROM tc_list_n WHERE bid IS NULL AND abalance = -1'), $ROWS,
	'list: the rows without bid went to the NULL leaf, with the default abalance');
($tc) = twin_run('reord: COPY (filler, aid)', "COPY {p}reord (filler, aid) FROM '$cols_file';");
is($tc->{out}, "COPY $ROWS", 'reord: column-list COPY of all rows') or diag($tc->{err});
compare_twins('reord: after the column-list COPY', 'reord', rows => 2 * $ROWS);
cmp_ok(sql('SELECT count(*) FROM tc_reord WHERE bid IS NULL AND abalance = -1'), '>=', $ROWS,
	'reord: the column-list rows got bid NULL and the parent\'s default abalance');

# ---- 2. COPY variants into range ----
my $range_rows = $ROWS;
($tc) = twin_run('range: COPY (filler, aid)', "COPY {p}range (filler, aid) FROM '$cols_file';");
is($tc->{out}, "COPY $ROWS", 'range: column-list COPY') or diag($tc->{err});
$range_rows += $ROWS;
compare_twins('range: after the column-list COPY', 'range', rows => $range_rows);

my $where = 'bid IS NOT NULL AND abalance > 0';
my $where_rows = grep { defined $_->[1] && defined $_->[2] && $_->[2] > 0 } @$main;
($tc) = twin_run('range: COPY WHERE', "COPY {p}range FROM '$main_file' WHERE $where;");
is($tc->{out}, "COPY $where_rows", "range: COPY WHERE loads $where_rows rows") or diag($tc->{err});
$range_rows += $where_rows;
compare_twins('range: after COPY WHERE', 'range', rows => $range_rows);

($tc) = twin_run('range: COPY csv HEADER', "COPY {p}range FROM '$csv_file' (FORMAT csv, HEADER);");
is($tc->{out}, "COPY $ROWS", 'range: csv COPY') or diag($tc->{err});
$range_rows += $ROWS;
compare_twins('range: after the csv COPY', 'range', rows => $range_rows);

sql("COPY (SELECT * FROM h_hash) TO '$bin_file' (FORMAT binary)");
($tc) = twin_run('range: COPY binary', "COPY {p}range FROM '$bin_file' (FORMAT binary);");
is($tc->{out}, "COPY $ROWS", 'range: binary COPY') or diag($tc->{err});
$range_rows += $ROWS;
compare_twins('range: after the binary COPY', 'range', rows => $range_rows);

{
	# Latin-1 input: the non-ASCII fillers of the first 3000 rows become
	# "Grüße naïve" in LATIN1 bytes
	my @lat = map { my @r = @$_; $r[3] = "Gr\xfc\xdfe na\xefve $r[0]" if defined $r[3] && $r[3] =~ /[\x80-\xff]/; \@r }
	  @$main[ 0 .. 2999 ];
	my $lat_file = input_file('latin1.txt', text_lines(\@lat));
	($tc) = twin_run('range: COPY ENCODING LATIN1', "COPY {p}range FROM '$lat_file' (ENCODING 'LATIN1');");
	is($tc->{out}, 'COPY 3000', 'range: LATIN1 COPY') or diag($tc->{err});
	$range_rows += 3000;
	compare_twins('range: after the LATIN1 COPY', 'range', rows => $range_rows);
	cmp_ok(sql("SELECT count(*) FROM tc_range WHERE filler LIKE 'Grüße naïve %'"), '>', 0,
		'range: the LATIN1 text reads back in UTF8');
}

($tc) = twin_run('range: COPY FROM STDIN', "COPY {p}range FROM STDIN;\n$stdin_data\\.");
is($tc->{out}, 'COPY 2000', 'range: COPY FROM STDIN') or diag($tc->{err});
$range_rows += 2000;
compare_twins('range: after COPY FROM STDIN', 'range', rows => $range_rows, filled => 1, tserver => 1);

# ---- 3. errors ----

# Assert that every leaf of tc_<scheme> is empty, through Postgres and on
# its tserver, and that neither tserver holds a session.
sub assert_empty
{
	my ($name, $scheme) = @_;
	for my $leaf (map { $_->[0] } @{ leaves("tc_$scheme") })
	{
		is(sql("SELECT count(*) FROM $leaf"), '0', "$name: $leaf is empty");
		is(tserver_rows($leaf), 0, "$name: $leaf is empty on " . server_of($leaf));
	}
	for my $t (sort keys %tserver)
	{
		my ($idle, $stats) = wait_tserver_idle($tserver{$t}, 10);
		ok($idle, "$name: $t holds no session") or diag(explain($stats));
	}
}

# the no-partition error of the tcopy run: SQLSTATE, message, DETAIL, CONTEXT
sub assert_no_partition
{
	my ($name, $err, $parent, $key, $value, $line) = @_;
	like($err, qr/ERROR:  23514: no partition of relation "\Q$parent\E" found for row\n/,
		"$name: 23514 no partition of relation \"$parent\"");
	like($err, qr/^DETAIL:  Partition key of the failing row contains \(\Q$key\E\) = \(\Q$value\E\)\.$/m,
		"$name: DETAIL ($key) = ($value)");
	like($err, qr/^CONTEXT:  COPY \Q$parent\E, line $line(?:[:,]|$)/m, "$name: CONTEXT COPY $parent, line $line");
}

{
	my $name = 'gap: aid 11000 (in no range) at line 5555';
	my @rows = grep { $_->[0] <= 10000 || $_->[0] > 12000 } @$main;
	splice(@rows, 5554, 0, [ 11000, 3, 42, 'in the gap' ]);
	my $file = input_file('gap.txt', text_lines(\@rows));
	($tc) = twin_run($name, "COPY {p}gap FROM '$file';");
	assert_no_partition($name, $tc->{err}, 'tc_gap', 'aid', 11000, 5555);
	compare_twins($name, 'gap', rows => 0);
	assert_empty($name, 'gap');
}

{
	my $name = 'listnd: bid 99 at line 4321';
	my $rows = gen_rows(0, 6250);
	$_->[1] //= 1 for @$rows;
	$rows->[4320][1] = 99;
	my $file = input_file('listnd.txt', text_lines($rows));
	($tc) = twin_run($name, "COPY {p}listnd FROM '$file';");
	assert_no_partition($name, $tc->{err}, 'tc_listnd', 'bid', 99, 4321);
	compare_twins($name, 'listnd', rows => 0);
	assert_empty($name, 'listnd');

	$name = 'listnd: aid NULL at line 2500';
	my @nn = map { [@$_] } @$rows;
	$nn[4320][1] = 1;
	$nn[2499][0] = undef;
	$file = input_file('listnd_null.txt', text_lines(\@nn));
	my $leaf = $nn[2499][1] <= 5 ? 'tc_listnd_a' : 'tc_listnd_b';
	($tc) = twin_run($name, "COPY {p}listnd FROM '$file';");
	like($tc->{err}, qr/ERROR:  23502: null value in column "aid" of relation "$leaf" violates not-null constraint\n/,
		"$name: 23502 naming the leaf $leaf");
	like($tc->{err}, qr/^CONTEXT:  COPY tc_listnd, line 2500(?:[:,]|$)/m, "$name: CONTEXT line 2500");
	assert_empty($name, 'listnd');

	$name = 'listnd: a bad bid (the partition key) at line 3000';
	$nn[2499][0] = 1;
	$nn[2999][1] = '7x';
	$file = input_file('listnd_key.txt', text_lines(\@nn));
	($tc) = twin_run($name, "COPY {p}listnd FROM '$file';");
	like($tc->{err}, qr/ERROR:  22P02: invalid input syntax for type integer: "7x"\n/, "$name: 22P02");
	like($tc->{err}, qr/^CONTEXT:  COPY tc_listnd, line 3000, column bid: "7x"$/m, "$name: CONTEXT line 3000, column bid");
	assert_empty($name, 'listnd');
}

my $hash_rows = $ROWS;
{
	my $name = 'hash: a bad abalance at line 3777';
	my $rows = gen_rows(100_000, 5000);
	$rows->[3776][2] = 'x';
	my $file = input_file('bad_value.txt', text_lines($rows));
	my $before = rel_sum('tc_hash');
	($tc) = twin_run($name, "COPY {p}hash FROM '$file';");
	like($tc->{err}, qr/ERROR:  22P02: invalid input syntax for type integer: "x"\n/, "$name: 22P02");
	like($tc->{err}, qr/^CONTEXT:  COPY tc_hash, line 3777, column abalance: "x"$/m,
		"$name: CONTEXT COPY tc_hash, line 3777, column abalance");
	is(rel_sum('tc_hash'), $before, "$name: tc_hash unchanged");
	compare_twins($name, 'hash', rows => $hash_rows, tserver => 1);
}

{
	my $name = 'range_1: a row outside the leaf at line 3';
	my $before = rel_sum('tc_range_1');
	($tc) = twin_run($name, "COPY {p}range_1 FROM STDIN;\n101\t1\t1\tok\n102\t2\t2\tok\n7000\t3\t3\tnot here\n\\.");
	like($tc->{err}, qr/ERROR:  23514: new row for relation "tc_range_1" violates partition constraint\n/,
		"$name: 23514 violates partition constraint");
	like($tc->{err}, qr/^DETAIL:  Failing row contains \(7000, 3, 3, not here\)\.$/m, "$name: DETAIL");
	like($tc->{err}, qr/^CONTEXT:  COPY tc_range_1, line 3(?:[:,]|$)/m, "$name: CONTEXT line 3");
	is(rel_sum('tc_range_1'), $before, "$name: tc_range_1 unchanged");
	compare_twins($name, 'range', rows => $range_rows);
}

{
	my $name = 'sub_lo: a row outside the intermediate table at line 2';
	my $before = rel_sum('tc_sub');
	($tc) = twin_run($name, "COPY {p}sub_lo FROM STDIN;\n5\t1\t1\tok\n15000\t2\t2\tnot here\n7\t3\t3\tok\n\\.");
	like($tc->{err}, qr/ERROR:  23514: new row for relation "tc_sub_lo" violates partition constraint\n/,
		"$name: 23514 violates partition constraint");
	like($tc->{err}, qr/^CONTEXT:  COPY tc_sub_lo, line 2(?:[:,]|$)/m, "$name: CONTEXT line 2");
	is(rel_sum('tc_sub'), $before, "$name: tc_sub unchanged");
	compare_twins($name, 'sub', rows => $ROWS);

	$name = 'hash: COPY FREEZE';
	($tc) = twin_run($name, "COPY {p}hash FROM '$main_file' (FREEZE);");
	like($tc->{err}, qr/ERROR:  0A000: cannot perform COPY FREEZE on a partitioned table\n/, "$name: refused (0A000)");

	$name = 'fz: COPY FREEZE into a partitioned table created in the transaction';
	($tc) = twin_run($name, sub {
		my ($p) = @_;
		return join("\n", 'BEGIN;', "CREATE TABLE ${p}fz $COLS PARTITION BY HASH (aid);",
			(map { leaf_sql($p, "fz_$_", 'fz', "FOR VALUES WITH (MODULUS 2, REMAINDER $_)", 'ts' . ($_ + 1)) } 0 .. 1),
			"COPY ${p}fz FROM STDIN (FREEZE);\n1\t1\t1\tx\n2\t2\t2\ty\n\\.", 'ROLLBACK;');
	}, tags => 0);
	like($tc->{err}, qr/ERROR:  0A000: cannot perform COPY FREEZE on a partitioned table\n/, "$name: refused (0A000)");
	unlike($tc->{out}, qr/^COPY/m, "$name: no COPY tag");

	$name = 'hash: COPY of no rows';
	($tc) = twin_run($name, "COPY {p}hash FROM STDIN;\n\\.");
	is($tc->{out}, 'COPY 0', "$name: COPY 0");
	compare_twins($name, 'hash', rows => $hash_rows);
}

{
	my $name = 'hash: a failed COPY in a transaction rolled back';
	my $a = input_file('txn_a.txt', text_lines(gen_rows(200_000, 2000)));
	my $brows = gen_rows(202_000, 2000);
	$brows->[1499][2] = 'oops';
	my $b = input_file('txn_b.txt', text_lines($brows));
	my $c = input_file('txn_c.txt', text_lines(gen_rows(204_000, 2000)));
	($tc) = twin_run($name, "BEGIN;\nCOPY {p}hash FROM '$a';\nCOPY {p}hash FROM '$b';\nROLLBACK;");
	is($tc->{out}, "BEGIN\nCOPY 2000\nROLLBACK", "$name: the first COPY loads, the second fails");
	like($tc->{err}, qr/^CONTEXT:  COPY tc_hash, line 1500, column abalance: "oops"$/m, "$name: at line 1500");
	is(sql('SELECT count(*) FROM tc_hash WHERE aid > 200000'), '0', "$name: nothing of either COPY");
	compare_twins($name, 'hash', rows => $hash_rows, tserver => 1);

	$name = 'hash: COPY, a failed COPY rolled back to a savepoint, COPY, COMMIT';
	($tc) = twin_run($name, "BEGIN;\nCOPY {p}hash FROM '$a';\nSAVEPOINT s;\nCOPY {p}hash FROM '$b';\n"
		  . "ROLLBACK TO SAVEPOINT s;\nCOPY {p}hash FROM '$c';\n"
		  . "SELECT count(*) || ' ' || count(DISTINCT tableoid) FROM {p}hash WHERE aid > 200000;\nCOMMIT;");
	is($tc->{out}, "BEGIN\nCOPY 2000\nSAVEPOINT\nROLLBACK\nCOPY 2000\n4000 4\nCOMMIT",
		"$name: committed, and before COMMIT the transaction read its 4000 rows in 4 leaves");
	is(sql('SELECT count(*) || \' \' || count(DISTINCT tableoid) FROM tc_hash WHERE aid > 200000'),
		'4000 4', "$name: the 4000 rows of the first and last COPY, in all 4 leaves");
	is(sql('SELECT count(*) FROM tc_hash WHERE aid BETWEEN 202001 AND 204000'), '0',
		"$name: nothing of the failed COPY");
	$hash_rows += 4000;
	compare_twins($name, 'hash', rows => $hash_rows, tserver => 1);
}

# ---- 4. DETACH and ATTACH ----
{
	my $name = 'hash: hash_2 detached';
	my $rows = gen_rows(300_000, 100);
	my $file = input_file('detach.txt', text_lines($rows));
	my $in_2 = sql("SELECT string_agg(satisfies_hash_partition('h_hash'::regclass, 4, 2, a)::text, ',' ORDER BY o)"
		  . " FROM unnest(ARRAY[" . join(',', map { $_->[0] } @$rows) . "]) WITH ORDINALITY u(a, o)");
	my @in_2 = split /,/, $in_2;
	my ($line) = grep { $in_2[ $_ - 1 ] eq 'true' } 1 .. 100;
	ok($line, "$name: a row of the input hashes to remainder 2 (line " . ($line // '?') . ')');
	my $sum_2 = rel_sum('tc_hash_2');
	sql("ALTER TABLE ${_}hash DETACH PARTITION ${_}hash_2") for 'h_', 'tc_';
	($tc) = twin_run($name, "COPY {p}hash FROM '$file';");
	assert_no_partition($name, $tc->{err}, 'tc_hash', 'aid', $rows->[ $line - 1 ][0], $line) if $line;
	compare_twins($name, 'hash', rows => $hash_rows - (split / /, $sum_2)[0]);
	is(sql('SELECT count(*) FROM tc_hash WHERE aid > 300000'), '0', "$name: nothing of the failed COPY");
	is(rel_sum('tc_hash_2'), $sum_2, "$name: the detached tc_hash_2 alone has its rows");
	is(rel_sum('tc_hash_2'), rel_sum('h_hash_2'), "$name: ... as h_hash_2");

	$name = 'hash: hash_2 attached again';
	sql("ALTER TABLE ${_}hash ATTACH PARTITION ${_}hash_2 FOR VALUES WITH (MODULUS 4, REMAINDER 2)")
	  for 'h_', 'tc_';
	compare_twins($name, 'hash', rows => $hash_rows);
	($tc) = twin_run($name, "COPY {p}hash FROM '$file';");
	is($tc->{out}, 'COPY 100', "$name: the 100 rows load");
	$hash_rows += 100;
	compare_twins($name, 'hash', rows => $hash_rows, filled => 1, tserver => 1);
}

# ---- 5. pruning ----
sub foreign_scans
{
	my ($query) = @_;
	my $plan = sql("EXPLAIN (COSTS OFF) $query");
	return ([ $plan =~ /Foreign Scan on (\w+)/g ], $plan);
}
{
	my $name = 'pruning: hash, aid = 42';
	my ($scans, $plan) = foreign_scans('SELECT * FROM tc_hash WHERE aid = 42');
	my $leaf = sql('SELECT tableoid::regclass FROM h_hash WHERE aid = 42') =~ s/^h_/tc_/r;
	is(join(' ', @$scans), $leaf, "$name: one Foreign Scan, on $leaf") or diag($plan);
	is(rel_sum('tc_hash', 'aid = 42'), rel_sum('h_hash', 'aid = 42'), "$name: the row of the heap twin");
	like(rel_sum('tc_hash', 'aid = 42'), qr/^1 /, "$name: one row");

	$name = 'pruning: range, aid BETWEEN 6000 AND 6100';
	($scans, $plan) = foreign_scans('SELECT * FROM tc_range WHERE aid BETWEEN 6000 AND 6100');
	is(join(' ', @$scans), 'tc_range_2', "$name: one Foreign Scan, on tc_range_2") or diag($plan);
	my $w = 'aid BETWEEN 6000 AND 6100';
	is(rel_sum('tc_range', $w), rel_sum('h_range', $w), "$name: the rows of the heap twin");
	unlike(rel_sum('tc_range', $w), qr/^0 /, "$name: some rows");
}

# ---- 7. memory ----
{
	my $n = $MEM_ROWS;
	my $file_n = $node->basedir . '/mem_n.csv';
	my $file_2n = $node->basedir . '/mem_2n.csv';
	my $expect_n = write_accounts_csv($file_n, 1, $n);
	my $expect_2n = write_accounts_csv($file_2n, 1, 2 * $n);
	sql(join("\n", "CREATE TABLE mem (aid int NOT NULL, bid int, abalance int, filler char(84))"
		  . " PARTITION BY HASH (aid);",
		map { "CREATE FOREIGN TABLE mem_$_ PARTITION OF mem FOR VALUES WITH (MODULUS 64, REMAINDER $_)"
			  . " SERVER ts" . ($_ % 2 + 1) . " OPTIONS (key 'aid');" } 0 .. 63));
	my $has_guc = sql(q{SELECT count(*) FROM pg_settings WHERE name = 'tcopy.copy_batch_memory'});

	# COPY file into mem in a fresh backend (after setting, if any),
	# sampling its RssAnon; the peak in kB.  Asserts the COPY's tag, the
	# rows (count, sums) and that all 64 leaves got rows; then truncates.
	my $load = sub {
		my ($name, $file, $expect, $setting) = @_;
		my $m = TcopyPgTest::Session->new($node, timeout => 600);
		my $pid = $m->backend_pid;
		$m->run_ok($MEM_SETTINGS);
		$m->run_ok($setting) if $setting;
		my $before = rss_anon_kb($pid) // 0;
		my ($max, $samples) = (0, 0);
		my $t0 = time();
		$m->send("COPY mem FROM '$file' (FORMAT csv);");
		until ($m->done)
		{
			my $kb = rss_anon_kb($pid);
			last unless defined $kb;
			$max = $kb if $kb > $max;
			$samples++;
			sleep(0.02);
		}
		my ($out, $err) = $m->result;
		my $secs = time() - $t0;
		$m->quit;
		is($out, "COPY $expect->{rows}", "$name: COPY $expect->{rows}") or diag($err);
		cmp_ok($samples, '>=', 1, "$name: RssAnon sampled ($samples samples)");
		note(sprintf('%s: %d rows in %.1f s, RssAnon %d kB before, peak %d kB',
			$name, $expect->{rows}, $secs, $before, $max));
		is(sql('SELECT count(*) || \' \' || sum(aid) || \' \' || sum(abalance) || \' \' || count(DISTINCT tableoid) FROM mem'),
			"$expect->{rows} $expect->{aid_sum} $expect->{abalance_sum} 64", "$name: every row, in all 64 leaves");
		cmp_ok($max, '<', $MEM_BOUND_KB, "$name: peak RssAnon $max kB under " . ($MEM_BOUND_KB / 1024) . ' MB');
		sql('TRUNCATE mem');
		return $max;
	};
	my $peak_n = $load->("memory: $n rows", $file_n, $expect_n);
	my $peak_2n = $load->('memory: ' . 2 * $n . ' rows', $file_2n, $expect_2n);
	cmp_ok($peak_2n, '<=', $peak_n + $MEM_FLAT_KB,
		"memory: the peak for 2N rows ($peak_2n kB) is at most 16 MB above the one for N ($peak_n kB)");
  SKIP:
	{
		if (!$has_guc)
		{
			note('tcopy.copy_batch_memory does not exist: the COPY hook does not route partitioned tables'
				  . ' yet; the 8MB cap is not checked');
			skip('no GUC tcopy.copy_batch_memory', 1);
		}
		my $peak_8 = $load->("memory: $n rows, copy_batch_memory 8MB", $file_n, $expect_n,
			"SET tcopy.copy_batch_memory = '8MB';");
		cmp_ok($peak_8, '<', $peak_n - $MEM_CAP_GAP_KB,
			"memory: with an 8MB cap the peak ($peak_8 kB) is at least "
			  . ($MEM_CAP_GAP_KB / 1024) . " MB under the default's ($peak_n kB)");
	}
	unlink($file_n, $file_2n);
}

$s->quit;
note(sprintf('171_partition_routing: %.0f s', time() - $t_start));
$node->stop;
$ts1->stop;
$ts2->stop;
done_testing();
