# 210_reader_diff.pl
#	The differential fuzzer of tcopy's COPY reader (issue 47,
#	src/ext/copy/copy_reader.c): random tables, random COPY options and
#	adversarial input, each input loaded twice into the same tcopy table,
#	with tcopy.fast_reader on (tcopy's reader) and off (Postgres' own
#	reader, the oracle), each in a transaction that reads the rows back and
#	rolls back.  What psql prints must be the same, byte for byte: the
#	rows (a count and an md5 of them in key order) or the error (its
#	SQLSTATE, message, DETAIL, HINT and CONTEXT, "COPY t, line N, column c"
#	included; VERBOSITY verbose, without LOCATION).  Postgres' own COPY
#	of the input into a heap twin must give the same rows too, when both
#	loaded it and no key came twice (the tcopy table keeps the last).
#
#	- tables: a key k int8 and one to five columns of int2, int4, int8,
#	  float4, float8, numeric, numeric(8,3), bool, date, timestamp, timestamptz, text,
#	  varchar(5), char(4) and uuid;
#	- options: FORMAT text or csv, DELIMITER, NULL, HEADER (false, true,
#	  match), QUOTE, ESCAPE, FORCE_NULL, FORCE_NOT_NULL, now and then an
#	  ENCODING that needs conversion; on_conflict 'replace', so that a
#	  mutated key's duplicate does not race a later parse error;
#	- input: rows of valid and invalid values, quoted and escaped as the
#	  format wants, then mutated: quotes, escapes, backslashes, "\r",
#	  "\n", "\r\n" line ends, the delimiter, "\.", "\N", NUL bytes,
#	  invalid UTF-8, a field of 100 kB, a missing or an extra field, a
#	  header line, the last line end dropped;
#	- how: a server file (COPY FROM 'file') or the client (COPY FROM
#	  STDIN), and with parallel workers on chunks of a few hundred bytes
#	  (tcopy.copy_parallel_threshold 0) for one case in three; the reader's
#	  vector kernels capped at SSE2 or scalar code (tcopy.simd) for half.
#
#	TCOPY_READER_FUZZ_SECONDS bounds it (default 40); TCOPY_READER_SEED
#	repeats a run (the seed is printed).  A difference fails the test, and
#	the input and both outputs are kept in the test's directory.  It also
#	fails when tcopy's reader declined too much of what it read (it must
#	read most rows of most inputs itself, or the test would prove little).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use TcopyTest;
use TcopyPgTest qw(setup_node psql_cmds pg_messages);

my $seconds = $ENV{TCOPY_READER_FUZZ_SECONDS} // 40;
my $seed = $ENV{TCOPY_READER_SEED} // (time() * 1000 % 1000000007);
srand($seed);
note("seed $seed (TCOPY_READER_SEED repeats the run)");

my ($node, $ts) = setup_node(conf => "max_worker_processes = 16\nmax_parallel_workers = 8\n");
my $dir = "$PostgreSQL::Test::Utils::tmp_check/reader_diff";
mkdir $dir;
chmod 0755, $dir;

my @types = ('int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'numeric(8,3)', 'bool', 'date',
	'timestamp', 'timestamptz', 'text', 'varchar(5)', 'char(4)', 'uuid');

sub pick { return $_[int(rand(@_))]; }

# A value of type $t: mostly valid, now and then one its input refuses.
my $bad_rate;	# of the values of one input that their input function refuses

sub value_of
{
	my ($t) = @_;
	return pick('', ' ', 'x', '1e999', '--', '99999999999999999999', 'nan', "\x{e9}", '0x1F', '1_000',
		'1.5e39', '2023-02-29', '2024-13-01 00:00', 'maybe', 'not-a-uuid', 'abcdefghijkl') if rand() < $bad_rate;
	return pick(int(rand(65536)) - 32768, '-32768', '32767', ' 12 ', '+7') if $t eq 'int2';
	return pick(int(rand(2**31)) - 2**30, '-2147483648', '2147483647', '007') if $t eq 'int4';
	return pick(int(rand(2**40)) - 2**39, '-9223372036854775808', '9223372036854775807') if $t eq 'int8';
	return pick(rand(1000) - 500, sprintf('%.4f', rand(1000) - 500), sprintf('%.7g', rand(100)), '16777217',
		'-0', '.25', 'NaN', 'Infinity', '-Infinity', '1e-40', '3.4e38') if $t eq 'float4';
	return pick(rand(1e6) - 5e5, sprintf('%.15g', rand(1e4)), sprintf('%.17g', rand()), '-0', '.5', '5.', 'NaN',
		'-inf', '1e308', '4.9e-324', '0.000000000000000000001') if $t eq 'float8';
	return pick(sprintf('%.3f', rand(1e4)), sprintf('%.2f', rand(2e4) - 1e4), sprintf('%.1f', rand(1e6)), '-0.00',
		'000.5', 'NaN', '-0.0001', '1e3', '-.5', '5.', rand() < 0.2 ? '12345678901234567890.5' : '1.5')
	  if $t =~ /^numeric/;
	return pick('t', 'f', 'true', 'false', 'FALSE', 'yes', 'off', '1', ' on ', 'tru') if $t eq 'bool';
	my $date = sprintf('%04d-%02d-%02d', pick(1, 1999, 2000, 2024, 2100, 9999), 1 + int(rand(12)), 1 + int(rand(28)));
	my $time = sprintf('%02d:%02d:%02d', int(rand(24)), int(rand(60)), int(rand(60)))
	  . pick('', '', '.5', '.123456', '.000001', '.1234567', '.');
	return pick('2023-02-29', '2024-04-31', '0000-01-01') if $t eq 'date' && rand() < 0.05;
	return pick($date, $date, '2024-02-29', '1999-12-31', 'epoch', 'infinity', '0001-01-01 BC', '20240101',
		'2024-1-2') if $t eq 'date';
	return pick("$date $time", "$date $time", '2024-01-01 24:00:00', '2024-06-30 23:59:60', 'epoch',
		'2000-01-01T00:00:00', "$date  $time", "$date $time+02") if $t eq 'timestamp';
	return pick("$date $time", "$date $time" . pick('+00', '+05', '-14', '+14', '+15', '+05:30', '-03:45', '+0530', ' UTC', 'Z'),
		'2024-06-30 23:59:60+00', 'infinity') if $t eq 'timestamptz';
	my $uuid = sprintf('%08x-%04x-%04x-%04x-%012x', rand(2**32), rand(65536), rand(65536), rand(65536), rand(2**40));
	return pick($uuid, $uuid, uc $uuid, "{$uuid}", join('', split /-/, $uuid), substr($uuid, 0, 35) . 'g')
	  if $t eq 'uuid';
	# text, varchar(5), char(4): with the bytes a reader must get right
	my $len = $t eq 'text' ? pick(0, 1, 3, 12, 40) : pick(0, 1, 3, 4);
	my $alphabet = "abcXYZ 09,;|\t\"'\\\n\r.\x{e9}\x{263a}";
	return join('', map { substr($alphabet, int(rand(length $alphabet)), 1) } 1 .. $len);
}

# One field as the format writes it (the caller's options).
sub encode_field
{
	my ($o, $v, $type) = @_;
	return $o->{null} unless defined $v;
	if ($o->{format} eq 'text')
	{
		$v =~ s/\\/\\\\/g;
		$v =~ s/\n/\\n/g;
		$v =~ s/\r/\\r/g;
		$v =~ s/\t/\\t/g if $o->{delim} eq "\t";
		my $d = quotemeta $o->{delim};
		$v =~ s/($d)/\\$1/g if $o->{delim} ne "\t";
		return "\\x41\\101\\b\\v\\303\\251$v" if ($type // '') eq 'text' && rand() < 0.1;
		# char(n)'s blanks count characters: an escaped one of two bytes
		return "\\303\\251" . substr($v, 0, 2) if ($type // '') =~ /char/ && rand() < 0.15;
		return $v;
	}
	my ($q, $e) = ($o->{quote}, $o->{escape});
	my $needs = $v eq $o->{null} || index($v, $o->{delim}) >= 0 || $v =~ /[\r\n]/
	  || index($v, $q) >= 0 || rand() < 0.2;
	return $v unless $needs;
	my $qe = quotemeta $q;
	if ($e eq $q)
	{
		$v =~ s/$qe/$q$q/g;
	}
	else
	{
		my $ee = quotemeta $e;
		$v =~ s/($ee|$qe)/$e$1/g;
	}
	return "$q$v$q";
}

# Adversarial edits of the input's bytes.
sub mutate
{
	my ($o, $data) = @_;
	my @bits = ('"', "'", '\\', "\r", "\n", "\r\n", $o->{delim}, "\\.", "\\.\n", "\\N", "\0",
		"\xff", "\xc3", "\xc3\xa9", "\xe2\x82", '\\377', '\\x', 'x' x 100_000, $o->{quote} // '"');
	my $edits = rand() < 0.4 ? 0 : 1 + int(rand(3));
	for (1 .. $edits)
	{
		my $at = int(rand(length($data) + 1));
		my $what = rand();
		if ($what < 0.6)
		{
			substr($data, $at, 0) = pick(@bits);
		}
		elsif ($what < 0.8)
		{
			substr($data, $at, 1 + int(rand(3))) = '' if $at < length $data;
		}
		else
		{
			# a line twice, or a field more or less
			my @lines = split /\n/, $data, -1;
			next unless @lines;
			my $l = int(rand(@lines));
			if (rand() < 0.5) { splice(@lines, $l, 0, $lines[$l]); }
			elsif (rand() < 0.5) { $lines[$l] .= $o->{delim} . 'extra'; }
			else { $lines[$l] =~ s/\Q$o->{delim}\E[^\Q$o->{delim}\E]*$//; }
			$data = join("\n", @lines);
		}
	}
	$data =~ s/\n/\r\n/g if rand() < 0.1;
	chop $data if rand() < 0.1;
	return $data;
}

sub sql_literal { my ($s) = @_; $s =~ s/'/''/g; return "E'" . join('', map { $_ eq '\\' ? '\\\\' : $_ } split //, $s) . "'"; }

my %count = (cases => 0, same_rows => 0, same_error => 0, fast_whole => 0, parallel => 0, heap_checked => 0);
my %errors;	# the first line of each error, counted
my $start = time();
my $case = 0;
my $failed = 0;
while (time() - $start < $seconds && !$failed)
{
	$case++;
	my @cols = map { pick(@types) } 1 .. 1 + int(rand(5));
	my $table = "rd_$case";
	my $ddl = "CREATE FOREIGN TABLE $table (k int8"
	  . join('', map { ", c$_ $cols[$_ - 1]" } 1 .. @cols) . ") SERVER ts OPTIONS (key 'k')";
	$node->safe_psql('postgres', $ddl);
	(my $heap_ddl = $ddl) =~ s/CREATE FOREIGN TABLE $table/CREATE TABLE hd_$case/;
	$heap_ddl =~ s/ SERVER ts OPTIONS .*$//;
	$node->safe_psql('postgres', $heap_ddl);

	my %o = (format => rand() < 0.5 ? 'text' : 'csv');
	if ($o{format} eq 'text')
	{
		$o{delim} = pick("\t", "\t", ',', '|', 'A');	# A: a hex digit "\x4A" takes
		$o{null} = pick('\N', '\N', 'NULL', '');
	}
	else
	{
		$o{delim} = pick(',', ',', ';', '|', "\t");
		$o{null} = pick('', '', 'NULL', '\N');
		$o{quote} = pick('"', '"', "'");
		$o{escape} = pick($o{quote}, $o{quote}, '\\');
	}
	$o{header} = pick('false', 'false', 'false', 'true', 'match');
	my @opts = ("FORMAT $o{format}", 'DELIMITER ' . sql_literal($o{delim}), 'NULL ' . sql_literal($o{null}),
		"HEADER $o{header}", "on_conflict 'replace'");
	if ($o{format} eq 'csv')
	{
		push @opts, 'QUOTE ' . sql_literal($o{quote}), 'ESCAPE ' . sql_literal($o{escape});
		push @opts, 'FORCE_NULL (c1)' if rand() < 0.1;
		push @opts, 'FORCE_NOT_NULL (c1)' if rand() < 0.1;
	}
	push @opts, "ENCODING 'LATIN1'" if rand() < 0.03;

	$bad_rate = rand() < 0.6 ? 0 : 0.03;
	my $rows = rand() < 0.15 ? 500 + int(rand(2000)) : int(rand(20));
	my $data = '';
	if ($o{header} ne 'false')
	{
		my @names = ('k', map { "c$_" } 1 .. @cols);
		@names = reverse @names if rand() < 0.2;
		$data .= join($o{delim}, map { encode_field(\%o, $_) } @names) . "\n";
	}
	for my $r (1 .. $rows)
	{
		my @f = ($r, map { rand() < 0.1 ? undef : value_of($_) } @cols);
		$data .= join($o{delim}, map { encode_field(\%o, $f[$_], $_ ? $cols[$_ - 1] : 'int8') } 0 .. $#f) . "\n";
	}
	utf8::encode($data);
	$data = mutate(\%o, $data);
	$data = '' if rand() < 0.03;	# an empty input (HEADER MATCH refuses it)
	my $file = "$dir/in_$case";
	open(my $fh, '>:raw', $file) or die "$file: $!";
	print $fh $data;
	close $fh;
	chmod 0644, $file;

	my $stdin = rand() < 0.3;
	my $parallel = rand() < 0.33;
	my $from = $stdin ? 'STDIN' : "'$file'";
	# every kernel of copy_simd.c, whatever this CPU has
	my $simd = pick('auto', 'auto', 'sse2', 'scalar');
	my @settings = ('SET client_min_messages = debug1', "SET tcopy.simd = $simd");
	push @settings, $parallel
	  ? ('SET tcopy.copy_workers = 2', 'SET tcopy.copy_parallel_threshold = 0',
		'SET tcopy.copy_chunk_bytes = ' . (64 + int(rand(2000))))
	  : ('SET tcopy.copy_workers = 0');
	my %result;
	for my $fast ('on', 'off')
	{
		my ($rc, $out, $err) = psql_cmds($node, 'postgres',
			[ @settings, "SET tcopy.fast_reader = $fast", '\set VERBOSITY verbose', 'BEGIN',
			  "COPY $table FROM $from (" . join(', ', @opts) . ')',
			  "SELECT count(*), md5(coalesce(string_agg($table\::text, '|' ORDER BY k), '')) FROM $table",
			  'ROLLBACK' ],
			$stdin ? (stdin_file => $file) : ());
		$result{$fast} = { out => $out, err => pg_messages($err), raw => $err };
	}
	# Postgres' own COPY into a heap twin: the same rows, when both loaded
	# them and no key came twice (the tcopy table keeps the last)
	my @heap_opts = grep { !/on_conflict/ } @opts;
	my (undef, $heap_out) = psql_cmds($node, 'postgres',
		[ 'BEGIN', "COPY hd_$case FROM $from (" . join(', ', @heap_opts) . ')',
		  "SELECT count(*), md5(coalesce(string_agg(ROW(hd_$case.*)::text, '|' ORDER BY k), '')) FROM hd_$case",
		  'ROLLBACK' ],
		$stdin ? (stdin_file => $file) : ());
	my ($fast_rows) = $result{on}{out} =~ /^(\d+\|\w+)$/m;
	my ($heap_rows) = $heap_out =~ /^(\d+\|\w+)$/m;
	if (defined $fast_rows && defined $heap_rows && (split /\|/, $fast_rows)[0] == (split /\|/, $heap_rows)[0])
	{
		$count{heap_checked}++;
		if ($fast_rows ne $heap_rows)
		{
			$result{off}{out} .= "\n(Postgres' COPY into a heap twin: $heap_rows)";
			$result{on}{out} .= "\n(tcopy: $fast_rows)";
		}
	}
	$count{cases}++;
	$count{parallel}++ if $parallel && $result{on}{raw} =~ /parallel workers/;
	my $same = $result{on}{out} eq $result{off}{out} && $result{on}{err} eq $result{off}{err};
	if (!$same)
	{
		$failed = 1;
		open(my $kf, '>', "$dir/case_$case.txt");
		print $kf "$ddl\nCOPY $table FROM $from (" . join(', ', @opts) . ")\n";
		print $kf "--- fast on\n$result{on}{out}\n$result{on}{raw}\n--- fast off\n$result{off}{out}\n$result{off}{raw}\n";
		close $kf;
		diag("case $case differs (seed $seed), kept in $dir/case_$case.txt and $file:\n"
			  . "$ddl\nCOPY ... (" . join(', ', @opts) . ")\n--- tcopy's reader:\n$result{on}{out}\n$result{on}{err}\n"
			  . "--- Postgres' reader:\n$result{off}{out}\n$result{off}{err}");
		last;
	}
	if ($result{on}{err} eq '' || $result{on}{err} !~ /ERROR/)
	{
		$count{same_rows}++;
	}
	else
	{
		$count{same_error}++;
		my ($first) = $result{on}{err} =~ /^ERROR:  (.*)$/m;
		$first //= '?';
		$first =~ s/"[^"]*"/"..."/g;
		$first =~ s/\d+/N/g;
		$errors{$first}++;
	}
	$count{fast_whole}++ if $result{on}{raw} =~ /read by tcopy's reader/
	  && $result{on}{raw} !~ /read by PostgreSQL's reader/;
	$node->safe_psql('postgres', "DROP FOREIGN TABLE $table; DROP TABLE hd_$case");
	unlink $file;
}

ok(!$failed, "tcopy's reader and Postgres' give the same rows and errors: $count{cases} inputs "
	  . "($count{same_rows} loaded, $count{same_error} refused with the same error; "
	  . "$count{fast_whole} read by tcopy's reader alone, $count{parallel} by parallel workers; "
	  . "$count{heap_checked} also the same rows as Postgres' COPY into a heap twin), seed $seed");
cmp_ok($count{cases}, '>=', 50, 'the fuzzer ran at least 50 inputs in its time');
cmp_ok($count{fast_whole}, '>=', $count{cases} * 0.3,
	"tcopy's reader read at least 3 in 10 inputs whole ($count{fast_whole} of $count{cases})");
cmp_ok($count{parallel}, '>=', 1, 'some inputs went through parallel workers');
cmp_ok($count{heap_checked}, '>=', $count{cases} * 0.1,
	"at least 1 in 10 inputs also compared with Postgres' COPY into a heap twin ($count{heap_checked})");
note("$errors{$_} x $_") for (sort { $errors{$b} <=> $errors{$a} } keys %errors)[0 .. 11];
note(sprintf('%.1f inputs a second', $count{cases} / (time() - $start)));

$node->stop;
$ts->stop;
done_testing();
