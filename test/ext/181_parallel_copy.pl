# 181_parallel_copy.pl
#	A parallel COPY FROM into a tcopy table (issue 17: the leader cuts the
#	input into chunks, workers parse them) gives exactly what a serial one
#	gives.  Differential: every input is loaded by a serial COPY (workers
#	0), by parallel ones (1, 2, 3 and 4 workers, from the GUC
#	tcopy.copy_workers and from the COPY option workers, chunks of 1, 7,
#	64, 100 bytes and 1MB, tcopy.copy_parallel_threshold 0) and, where no
#	tcopy option is involved, into a heap table of the same name in schema
#	h; each run's command tag, its messages (ERROR, DETAIL, HINT, CONTEXT,
#	NOTICE, with SQLSTATEs; not DEBUG nor LOCATION) and the table's rows
#	afterwards must equal the serial run's, and a parallel run must say
#	(DEBUG1, "tcopy: COPY ... parallel") that it ran parallel, a serial one
#	or one that must not go parallel that it ran alone, and leave no
#	parallel worker behind.
#
#	Inputs: text, csv and binary, from a server file, a PROGRAM, COPY FROM
#	STDIN fed by psql's standard input, \copy from a file and \copy from
#	pstdin; backslash escapes (an escaped newline, a value ending in a
#	backslash), quoted newlines, delimiters and quotes, ESCAPE other than
#	QUOTE (an escaped quote before a quoted newline), CRLF, DELIMITER,
#	NULL, QUOTE, ESCAPE, FORCE_NULL, FORCE_NOT_NULL, ENCODING (LATIN1
#	parallel, SJIS alone), HEADER, HEADER MATCH and a mismatching header,
#	column lists with defaults, WHERE (and an error in it), FREEZE,
#	on_conflict error / ignore / replace with equal keys in different
#	chunks, load_id run twice, \. in the middle, a quoted value of
#	thousands of lines; errors (bad int, missing and extra columns, a bad
#	encoding byte, a carriage return, an unterminated quote, binary field
#	count, field length, truncation, data after the trailer) on the first
#	row, in the middle and on the last row; the cases that must run alone
#	(workers 0, input below the threshold, no worker launched, ON_ERROR,
#	a volatile WHERE or default, SJIS, \r line ends); a partitioned target
#	routed by the workers, a partition target's constraint checked there;
#	and a 400k-row load compared by checksum.
#
#	Without parallel COPY (no GUC tcopy.copy_workers) every run is serial:
#	the comparisons then check the test itself, and only the assertions
#	about the way a COPY went (and the first one, that the GUC exists)
#	fail.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use File::Copy qw(copy);
use IPC::Run;
use TcopyTest;
use TcopyPgTest qw(setup_node write_accounts_csv accounts_ddl table_checksum
  psql_cmds pg_messages copy_ways parallel_copy_available);

my $T0 = time();
my $BIG_ROWS = $ENV{TCOPY_PAR_ROWS} // 400_000;

# every psql speaks UTF8, whatever the locale
$ENV{PGCLIENTENCODING} = 'UTF8';

my ($node, $ts) = setup_node(conf => "max_worker_processes = 16\nmax_parallel_workers = 16\n");
my $dir = $node->basedir;
my $address = $ts->address;
my $DB = 'u';
$node->safe_psql('postgres',
	q{CREATE DATABASE u TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'});
$node->safe_psql($DB, qq{
	CREATE EXTENSION tcopy;
	CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address '$address');
	CREATE USER MAPPING FOR PUBLIC SERVER ts;
	CREATE FOREIGN TABLE tk (id int NOT NULL, n int, s text, d date DEFAULT '1999-12-31', f float8)
		SERVER ts OPTIONS (key 'id');
	CREATE SEQUENCE sq;
	CREATE FOREIGN TABLE tv (id int NOT NULL, n bigint DEFAULT nextval('sq'), s text)
		SERVER ts OPTIONS (key 'id');
	CREATE TABLE tp (id int NOT NULL, n int, s text, d date, f float8) PARTITION BY RANGE (id);
	CREATE FOREIGN TABLE tp1 PARTITION OF tp FOR VALUES FROM (MINVALUE) TO (20)
		SERVER ts OPTIONS (key 'id');
	CREATE FOREIGN TABLE tp2 PARTITION OF tp FOR VALUES FROM (20) TO (MAXVALUE)
		SERVER ts OPTIONS (key 'id');
	CREATE SCHEMA h;
	CREATE TABLE h.tk (id int NOT NULL PRIMARY KEY, n int, s text, d date DEFAULT '1999-12-31', f float8);
});

my $HAVE = parallel_copy_available($node, $DB);
ok($HAVE, 'the GUC tcopy.copy_workers exists (parallel COPY is there)')
  or diag('no parallel COPY: every run below is serial, the comparisons check the test itself');

# The ways of running a COPY: workers and chunk size; opt: workers from
# the COPY option (the GUC then says 0).
my %V = (
	serial => { w => 0 },
	w1c1 => { w => 1, chunk => '1' },
	w2c7 => { w => 2, chunk => '7' },
	w4c64 => { w => 4, chunk => '64' },
	o2c100 => { w => 2, chunk => '100', opt => 1 },
	o3c1M => { w => 3, chunk => '1MB', opt => 1 },
);
my @PAR = qw(w1c1 w2c7 w4c64 o2c100 o3c1M);
my @SOURCES = qw(file program stdin copy pstdin);

my $ncase = 0;

# ---- inputs ----

sub date_of { my ($i) = @_; return sprintf('%04d-%02d-%02d', 2000 + $i % 30, 1 + $i % 12, 1 + $i % 28); }
sub n_of { my ($i) = @_; return ($i * 7) % 23; }

# values of s in text format, as written (escapes and all)
my @TEXT_S = (
	'plain',
	'tab\\there',					# \t: a tab
	'\\N',							# NULL
	"multi\\\nline",				# an escaped newline: part of the value
	'back\\\\slash',				# one backslash
	'\\101\\x42\\u',				# octal, hex, \u: "ABu"
	"\xc3\xbcn\xc3\xaf",			# UTF-8
	'ends with a backslash\\\\',	# the newline after it ends the row
	'',
	'a,b;c "q" \'s\'',
	'x' x 70,
	'\\r\\n\\b\\f\\v',
);

sub text_row
{
	my ($i, %o) = @_;
	my $s = $o{s} // $TEXT_S[ $i % @TEXT_S ];
	my $d = $o{d} // "\t";
	return join($d, $i, $o{n} // n_of($i), $s, $i % 9 == 4 ? $o{null} // '\\N' : date_of($i), $i / 8)
	  . ($o{eol} // "\n");
}

# values of s in csv format
my @CSV_S = (
	'plain',
	'"quoted, with a comma"',
	qq{"line one\nline two\nline three"},
	'"say ""hi"""',
	'""',							# an empty string, not NULL
	'',								# NULL
	'"\\."',						# data, not the end marker
	qq{"crlf\r\ninside"},
	"\xc3\xbcn\xc3\xaf",
	'"' . ("long\n" x 12) . '"',
	qq{"\n"},
	'back\\slash',
);

sub csv_row
{
	my ($i, %o) = @_;
	my $s = $o{s} // $CSV_S[ $i % @CSV_S ];
	my $d = $o{d} // ',';
	return join($d, $i, $o{n} // n_of($i), $s, $i % 9 == 4 ? $o{null} // '' : date_of($i), $i / 8)
	  . ($o{eol} // "\n");
}

# binary format
sub bin_header { my ($ext) = @_; $ext //= ''; return "PGCOPY\n\377\r\n\0" . pack('NN', 0, length $ext) . $ext; }
sub bin_field { my ($v) = @_; return defined $v ? pack('N', length $v) . $v : pack('l>', -1); }
sub bin_trailer { return pack('s>', -1); }

sub bin_row
{
	my ($i, %o) = @_;
	my @f = (
		pack('l>', $i),
		$i % 6 == 3 ? undef : pack('l>', n_of($i) - 11),
		$i % 5 == 0 ? undef : "bin row $i\nwith a newline,\r\t\"quotes\", \\ and \xc3\xbc" . ('z' x ($i % 13)),
		pack('l>', ($i * 37) % 5000 - 1000),
		pack('d>', $i / 8));
	@f = @{ $o{fields} } if $o{fields};
	return pack('s>', scalar @f) . join('', map { bin_field($_) } @f);
}

sub rows { my ($f, $from, $to, %o) = @_; return join('', map { $f->($_, %o) } $from .. $to); }

# ---- running a case ----

# Split psql's output at the lines "@@name" into { name => text }.
sub sections
{
	my ($text) = @_;
	my %lines;
	my $name = 'setup';
	for my $line (split /\n/, $text)
	{
		if ($line =~ /^@@(\w+)$/)
		{
			$name = $1;
			next;
		}
		push @{ $lines{$name} }, $line;
	}
	return { map { $_ => join("\n", @{ $lines{$_} // [] }) } qw(setup copy dump workers) };
}

# The COPY statement of case c with options opts.
sub copy_stmt
{
	my ($c, $opts) = @_;
	my $target = $c->{table} . ($c->{cols} ? " ($c->{cols})" : '');
	my $where = $c->{where} ? " WHERE $c->{where}" : '';
	my $with = "WITH ($opts)$where";
	my $src = $c->{src};
	return "COPY $target FROM '$c->{path}' $with" if $src eq 'file';
	return "COPY $target FROM PROGRAM 'cat $c->{path}' $with" if $src eq 'program';
	return "COPY $target FROM STDIN $with" if $src eq 'stdin';
	return "\\copy $target FROM '$c->{path}' $with" if $src eq 'copy';
	return "\\copy $target FROM pstdin $with" if $src eq 'pstdin';
	die "source $src";
}

# Run case c one way (a key of %V, or 'heap'): { rc, out, err (the COPY's
# messages), way, dump, workers, setup (errors before the COPY), raw }.
sub run_way
{
	my ($c, $way) = @_;
	my $heap = $way eq 'heap';
	my $v = $V{$way} // {};
	my @cmds = ('\set VERBOSITY verbose');
	push @cmds, 'SET search_path = h, public' if $heap;
	push @cmds, @{ $c->{pre} // ["TRUNCATE $c->{table}"] };
	if (!$heap && $HAVE)
	{
		push @cmds, 'SET tcopy.copy_workers = ' . ($v->{opt} ? 0 : $v->{w}),
		  'SET tcopy.copy_parallel_threshold = ' . ($c->{threshold} // 0),
		  "SET tcopy.copy_chunk_bytes = '" . ($v->{chunk} // '1MB') . "'";
	}
	my $opts = join(', ', grep { defined && $_ ne '' } "FORMAT $c->{fmt}", $c->{opts},
		$heap ? () : $c->{topts}, !$heap && $HAVE && $v->{opt} ? "workers $v->{w}" : ());
	my $copy = copy_stmt($c, $opts);
	push @cmds, 'SET client_min_messages = debug1', '\warn @@copy', '\echo @@copy',
	  map({ $_ eq 'COPY' ? $copy : $_ } @{ $c->{copy} // ['COPY'] }),
	  '\warn @@dump', '\echo @@dump',
	  "SELECT x::text FROM $c->{table} x ORDER BY x::text COLLATE \"C\"",
	  '\echo @@workers',
	  q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker'};
	my %opts = (timeout => 120);
	$opts{stdin_file} = $c->{path} if $c->{src} eq 'stdin' || $c->{src} eq 'pstdin';
	my ($rc, $out, $err) = psql_cmds($node, $c->{db} // $DB, \@cmds, %opts);
	my $o = sections($out);
	my $e = sections($err);
	return {
		rc => $rc,
		out => $o->{copy},
		err => pg_messages($e->{copy}),
		way => copy_ways($e->{copy}),
		dump => $o->{dump},
		workers => $o->{workers},
		setup => pg_messages($e->{setup}) . pg_messages($e->{dump}),
		raw => $err,
	};
}

sub short
{
	my ($text) = @_;
	return length($text) > 1500 ? substr($text, 0, 1500) . '...' : $text;
}

# The first line where a and b differ, for diag.
sub first_diff
{
	my ($a, $b) = @_;
	my @a = split /\n/, $a, -1;
	my @b = split /\n/, $b, -1;
	for my $i (0 .. ($#a > $#b ? $#a : $#b))
	{
		my ($x, $y) = ($a[$i] // '(none)', $b[$i] // '(none)');
		return "line " . ($i + 1) . ":\n  serial:   $x\n  this run: $y" if $x ne $y;
	}
	return 'no difference';
}

# Compare run r with the serial run ref: command tag, messages, rows.
sub same_as
{
	my ($name, $ref, $r) = @_;
	my @bad;
	push @bad, "tag: serial '$ref->{out}', this run '$r->{out}'" if $r->{out} ne $ref->{out};
	push @bad, "messages differ:\n--- serial:\n$ref->{err}\n--- this run:\n$r->{err}" if $r->{err} ne $ref->{err};
	push @bad, "rows differ at " . first_diff($ref->{dump}, $r->{dump}) if $r->{dump} ne $ref->{dump};
	push @bad, "setup or dump failed: $r->{setup}" if $r->{setup} ne '';
	ok(!@bad, $name) or diag(short(join("\n", @bad)));
}

# Write case c's input, run it serially (its expectations: error => regex
# of the messages, or tag => regex of the command tag, default "COPY n";
# messages => regex, else none), into the heap table (heap => 1), then
# every parallel way of ways (default @PAR); way => 'alone' for a case
# that must not go parallel.
sub check_case
{
	my (%c) = @_;
	my $c = \%c;
	$ncase++;
	$c->{src} //= $SOURCES[ $ncase % @SOURCES ];
	$c->{path} = "$dir/case$ncase.dat";
	open(my $fh, '>:raw', $c->{path}) or die "$c->{path}: $!";
	print $fh $c->{data};
	close($fh) or die "$c->{path}: $!";
	my $name = "$c->{name} ($c->{fmt}, $c->{src})";

	my $ref = run_way($c, 'serial');
	if ($c->{error})
	{
		like($ref->{err}, $c->{error}, "$name: serial: the error") or diag($ref->{raw});
		is($ref->{dump}, '', "$name: serial: nothing loaded");
	}
	else
	{
		like($ref->{out}, $c->{tag} // qr/^COPY \d+$/, "$name: serial: $ref->{out}") or diag($ref->{raw});
		if ($c->{messages})
		{
			like($ref->{err}, $c->{messages}, "$name: serial: the messages");
		}
		else
		{
			is($ref->{err}, '', "$name: serial: no message");
		}
	}
	like($ref->{way}, qr/^alone(?: |\z)/, "$name: serial: parsed alone")
	  if $HAVE && ($c->{way} // '') ne 'any';
	if ($c->{heap})
	{
		my $h = run_way($c, 'heap');
		same_as("$name: heap table: as serial", $ref, $h);
	}
	my $want = $c->{way} // 'parallel';
	my @other;
	for my $way (@{ $c->{ways} // \@PAR })
	{
		my $r = run_way($c, $way);
		same_as("$name: $way: as serial", $ref, $r);
		is($r->{workers}, '0', "$name: $way: no parallel worker left");
		push @other, "$way: " . ($r->{way} || 'no DEBUG1 line') . "\n"
		  . join("\n", grep { /DEBUG/ } split /\n/, $r->{raw})
		  unless $r->{way} =~ /^$want(?: |\z)/;
	}
	# one assertion per case: the error cases fail it together
	ok(!@other, "$name: every parallel way ran $want") or diag(short(join("\n", @other)))
	  unless $want eq 'any';
	return $ref;
}

# ---- text ----

my $N = 40;
my $text = rows(\&text_row, 1, $N);
for my $src (@SOURCES)
{
	check_case(name => 'text, escapes', fmt => 'text', table => 'tk', data => $text, src => $src, heap => 1);
}
check_case(name => 'text, DELIMITER and NULL', fmt => 'text', table => 'tk', heap => 1,
	opts => q{DELIMITER '|', NULL 'NUL'},
	data => join('', map { text_row($_, d => '|', null => 'NUL', s => $_ % 3 ? "p\\|ipe $_" : 'NUL') } 1 .. $N));
check_case(name => 'text, CRLF', fmt => 'text', table => 'tk', heap => 1,
	data => rows(\&text_row, 1, $N, eol => "\r\n"));
check_case(name => 'text, ENCODING LATIN1', fmt => 'text', table => 'tk', heap => 1,
	opts => q{ENCODING 'LATIN1'},
	data => join('', map { text_row($_, s => "caf\xe9 \xfc\xdf $_") } 1 .. $N));
check_case(name => 'text, HEADER', fmt => 'text', table => 'tk', heap => 1, opts => 'HEADER',
	data => "whatever\there\n$text");
check_case(name => 'text, HEADER MATCH', fmt => 'text', table => 'tk', heap => 1, opts => 'HEADER MATCH',
	data => "id\tn\ts\td\tf\n$text");
check_case(name => 'text, HEADER MATCH mismatch', fmt => 'text', table => 'tk', heap => 1,
	opts => 'HEADER MATCH', data => "id\tn\tx\td\tf\n$text",
	error => qr/^ERROR:  22P04: column name mismatch in header line field 3: got "x", expected "s"$/m);
check_case(name => 'text, column list and defaults', fmt => 'text', table => 'tk', heap => 1,
	cols => 'f, id, s',
	data => join('', map { "$_.5\t$_\tcol $_\n" } 1 .. $N));
check_case(name => 'text, WHERE', fmt => 'text', table => 'tk', heap => 1,
	where => 'n % 3 <> 0 AND s IS NOT NULL', data => $text);
check_case(name => 'text, WHERE dividing by zero', fmt => 'text', table => 'tk', heap => 1,
	where => '10 / (n - 5) <> 0', data => $text,
	error => qr/^ERROR:  22012: division by zero\nCONTEXT:  COPY tk, line 4: "4\t/m);
check_case(name => 'text, FREEZE', fmt => 'text', table => 'tk', heap => 1, opts => 'FREEZE',
	src => 'file', pre => [], copy => [ 'BEGIN', 'TRUNCATE tk', 'COPY', 'COMMIT' ], data => $text,
	tag => qr/^BEGIN\nTRUNCATE TABLE\nCOPY $N\nCOMMIT$/);
check_case(name => 'text, \. in the middle', fmt => 'text', table => 'tk', heap => 1,
	data => rows(\&text_row, 1, 10) . "\\.\n" . rows(\&text_row, 11, 20), tag => qr/^COPY 10$/);
check_case(name => 'text, \. first', fmt => 'text', table => 'tk', heap => 1,
	data => "\\.\n" . rows(\&text_row, 11, 20), tag => qr/^COPY 0$/);
check_case(name => 'text, \. at the end', fmt => 'text', table => 'tk', heap => 1,
	data => "$text\\.\n", tag => qr/^COPY $N$/);

# errors on the first row, in the middle (at some chunk's boundary for
# chunks of 1, 7, 64 and 100 bytes) and on the last row
my %TEXT_ERRORS = (
	'bad int' => [ sub { text_row($_[0], n => 'x1') },
		qr/^ERROR:  22P02: invalid input syntax for type integer: "x1"\nCONTEXT:  COPY tk, line \d+, column n: "x1"$/m ],
	'missing column' => [ sub { "$_[0]\t1\tshort\n" },
		qr/^ERROR:  22P04: missing data for column "d"\nCONTEXT:  COPY tk, line \d+: /m ],
	'extra column' => [ sub { text_row($_[0], eol => "\textra\n") },
		qr/^ERROR:  22P04: extra data after last expected column\nCONTEXT:  COPY tk, line \d+: /m ],
	'bad encoding byte' => [ sub { text_row($_[0], s => "bad \xff byte") },
		qr/^ERROR:  22021: invalid byte sequence for encoding "UTF8": 0xff\nCONTEXT:  COPY tk, line \d+$/m ],
	# on the first row, the carriage return makes \r the line end: the
	# row misses columns
	'carriage return' => [ sub { text_row($_[0], s => "cr\rhere") },
		qr/^ERROR:  22P04: (?:literal (?:carriage return|newline) found in data\nHINT:  Use "\\[rn]" to represent (?:carriage return|newline).\nCONTEXT:  COPY tk, line \d+$|missing data for column "d")/m ],
	'end marker corrupt' => [ sub { "\\.x\n" },
		qr/^ERROR:  22P04: end-of-copy marker corrupt\nCONTEXT:  COPY tk, line \d+$/m ],
);
for my $kind (sort keys %TEXT_ERRORS)
{
	my ($bad, $re) = @{ $TEXT_ERRORS{$kind} };
	for my $at ($kind eq 'bad int' ? (1, 2, 6, 19, $N) : (1, 6, $N))
	{
		check_case(name => "text, $kind at row $at", fmt => 'text', table => 'tk', heap => 1,
			way => $kind eq 'carriage return' && $at == 1 ? 'any' : undef,
			data => rows(\&text_row, 1, $at - 1) . $bad->($at) . rows(\&text_row, $at + 1, $N),
			error => $re);
	}
}

# ---- the cases that must run alone ----

check_case(name => 'alone: input below the threshold', fmt => 'text', table => 'tk',
	threshold => "'4MB'", data => $text, way => 'alone');
check_case(name => 'alone: no worker launched', fmt => 'text', table => 'tk', heap => 1,
	pre => [ 'TRUNCATE tk', 'SET max_parallel_workers = 0' ], data => $text, way => 'alone');
check_case(name => 'partitioned target, routed by the workers', fmt => 'text', table => 'tp',
	data => $text);
check_case(name => 'a partition as target, its constraint checked by the workers', fmt => 'text',
	table => 'tp1', data => $text, error => qr/violates partition constraint/);
check_case(name => 'alone: ON_ERROR ignore', fmt => 'text', table => 'tk',
	topts => 'ON_ERROR ignore, LOG_VERBOSITY verbose', way => 'alone',
	data => rows(\&text_row, 1, 5) . text_row(6, n => 'bad') . rows(\&text_row, 7, 30)
	  . text_row(31, n => '99999999999') . rows(\&text_row, 32, $N),
	messages => qr/NOTICE:  .*skipping row due to data type incompatibility at line 6 for column "?n"?: "bad"/);
check_case(name => 'alone: volatile WHERE', fmt => 'text', table => 'tk', heap => 1,
	where => 'random() >= 0 AND n <> 3', data => $text, way => 'alone');
check_case(name => 'alone: volatile default', fmt => 'text', table => 'tv', cols => 'id, s',
	pre => [ 'TRUNCATE tv', 'ALTER SEQUENCE sq RESTART' ], way => 'alone',
	data => join('', map { "$_\tv $_\n" } 1 .. $N));
check_case(name => 'alone: ENCODING SJIS', fmt => 'text', table => 'tk', heap => 1,
	opts => q{ENCODING 'SJIS'}, way => 'alone',
	# 0x83 0x5c is a katakana whose second byte is a backslash
	data => join('', map { text_row($_, s => "\x83\x5c\x95\x5c $_\\\\") } 1 .. $N));
check_case(name => 'alone: \r line ends', fmt => 'text', table => 'tk', heap => 1,
	data => rows(\&text_row, 1, $N, eol => "\r"), way => 'alone');

# ---- csv ----

my $csv = rows(\&csv_row, 1, $N);
for my $src (qw(file stdin pstdin))
{
	check_case(name => 'csv, quoted newlines, delimiters and quotes', fmt => 'csv', table => 'tk',
		data => $csv, src => $src, heap => 1);
}
check_case(name => 'csv, CRLF', fmt => 'csv', table => 'tk', heap => 1,
	data => rows(\&csv_row, 1, $N, eol => "\r\n"));
{
	# DELIMITER ';', QUOTE ', ESCAPE \, NULL N/A; s: FORCE_NOT_NULL and
	# FORCE_NULL; the 4th value has an escaped quote before a quoted newline
	my @s = ('plain', q{'semi;colon'}, qq{'line1\nline2'}, q{'it\\'s'}, qq{'he said \\'hi;\nthere\\''},
		'N/A', q{'N/A'}, '', q{'back\\\\slash'}, q{''}, qq{'\\'\n\\''});
	check_case(name => 'csv, DELIMITER QUOTE ESCAPE NULL FORCE_NULL FORCE_NOT_NULL', fmt => 'csv',
		table => 'tk', heap => 1,
		opts => q{DELIMITER ';', QUOTE '''', ESCAPE '\\', NULL 'N/A', FORCE_NOT_NULL (s), FORCE_NULL (s, f)},
		data => join('', map { csv_row($_, d => ';', null => 'N/A', s => $s[ $_ % @s ], n => $_ % 4 ? n_of($_) : 'N/A') } 1 .. $N));
}
check_case(name => 'csv, HEADER', fmt => 'csv', table => 'tk', heap => 1, opts => 'HEADER',
	data => qq{"a header, with a comma",x\n$csv});
check_case(name => 'csv, HEADER MATCH', fmt => 'csv', table => 'tk', heap => 1, opts => 'HEADER MATCH',
	data => "id,n,\"s\",d,f\n$csv");
check_case(name => 'csv, HEADER MATCH column list', fmt => 'csv', table => 'tk', heap => 1,
	opts => 'HEADER MATCH', cols => 's, id',
	data => "s,id\n" . join('', map { qq{"v\n$_",$_\n} } 1 .. $N));
check_case(name => 'csv, HEADER MATCH mismatch', fmt => 'csv', table => 'tk', heap => 1,
	opts => 'HEADER MATCH', data => "id,n,s,d\n$csv",
	error => qr/^ERROR:  22P04: wrong number of fields in header line: got 4, expected 5\nCONTEXT:  COPY tk, line 1: "id,n,s,d"$/m);
check_case(name => 'csv, \. in the middle', fmt => 'csv', table => 'tk', heap => 1,
	data => rows(\&csv_row, 1, 10) . "\\.\n" . rows(\&csv_row, 11, 20), tag => qr/^COPY 10$/);
check_case(name => 'csv, \. in the middle, CRLF', fmt => 'csv', table => 'tk', heap => 1,
	data => rows(\&csv_row, 1, 13, eol => "\r\n") . "\\.\r\n" . rows(\&csv_row, 14, 20, eol => "\r\n"),
	tag => qr/^COPY 13$/);
check_case(name => 'csv, a value of 3000 lines', fmt => 'csv', table => 'tk', heap => 1,
	data => rows(\&csv_row, 1, 5) . csv_row(6, s => '"' . join("\n", map { "$_,\"\"x\"\"," } 1 .. 3000) . '"')
	  . rows(\&csv_row, 7, $N));
check_case(name => 'csv, a quote opened at row 5 and closed two lines later', fmt => 'csv', table => 'tk',
	heap => 1, src => 'file',
	data => rows(\&csv_row, 1, 4) . qq{5,5,"opens\n6,6,x,2001-01-01,1\n7,7,closes",2001-01-01,1.5\n}
	  . rows(\&csv_row, 8, $N));

# the smallest: a quoted newline in the first row, a bad int in the second
check_case(name => 'csv, quoted newline in row 1, bad int in row 2', fmt => 'csv', table => 'tk', heap => 1,
	src => 'file', data => qq{1,1,"a\nb",2001-01-01,1\n2,x,c,2001-01-01,1\n},
	error => qr/^ERROR:  22P02: invalid input syntax for type integer: "x"\nCONTEXT:  COPY tk, line 2, column n: "x"$/m);

my %CSV_ERRORS = (
	'bad int after a quoted newline' => [ sub { csv_row($_[0], n => 'x1', s => qq{"a\nb\nc"}) },
		qr/^ERROR:  22P02: invalid input syntax for type integer: "x1"\nCONTEXT:  COPY tk, line \d+, column n: "x1"$/m ],
	'missing column' => [ sub { qq{$_[0],1,"short\nrow"\n} },
		qr/^ERROR:  22P04: missing data for column "d"\nCONTEXT:  COPY tk, line \d+: /m ],
	'extra column' => [ sub { csv_row($_[0], eol => qq{,"extra\n"\n}) },
		qr/^ERROR:  22P04: extra data after last expected column\nCONTEXT:  COPY tk, line \d+: /m ],
	'bad encoding byte' => [ sub { csv_row($_[0], s => qq{"bad\n\xff byte"}) },
		qr/^ERROR:  22021: invalid byte sequence for encoding "UTF8": 0xff\nCONTEXT:  COPY tk, line \d+$/m ],
	# on the last row: unterminated; before, the quote closes at a later
	# row's quote, and the row goes wrong there
	'unterminated quote' => [ sub { csv_row($_[0], s => qq{"never closed}) },
		qr/^ERROR:  22P0\d: /m ],
);
for my $kind (sort keys %CSV_ERRORS)
{
	my ($bad, $re) = @{ $CSV_ERRORS{$kind} };
	for my $at ($kind =~ /bad int/ ? (1, 2, 6, 19, $N) : (1, 6, $N))
	{
		check_case(name => "csv, $kind at row $at", fmt => 'csv', table => 'tk', heap => 1,
			data => rows(\&csv_row, 1, $at - 1) . $bad->($at) . rows(\&csv_row, $at + 1, $N),
			error => $re);
	}
}

# ---- binary ----

my $bin = bin_header() . rows(\&bin_row, 1, $N) . bin_trailer();
for my $src (qw(file stdin copy))
{
	check_case(name => 'binary', fmt => 'binary', table => 'tk', data => $bin, src => $src, heap => 1);
}
check_case(name => 'binary, header extension, no trailer', fmt => 'binary', table => 'tk', heap => 1,
	data => bin_header("ext\0") . rows(\&bin_row, 1, $N));
check_case(name => 'binary, column list', fmt => 'binary', table => 'tk', heap => 1, cols => 's, id',
	data => bin_header() . join('', map { bin_row($_, fields => [ "s\n$_", pack('l>', $_) ]) } 1 .. $N)
	  . bin_trailer());
my %BIN_ERRORS = (
	'field count' => [ sub { bin_row($_[0], fields => [ pack('l>', $_[0]), pack('l>', 1), 'four', pack('l>', 0) ]) },
		qr/^ERROR:  22P04: row field count is 4, expected 5\nCONTEXT:  COPY tk, line \d+$/m ],
	'field length' => [ sub { bin_row($_[0], fields => [ pack('l>', $_[0]), 'xyzuvw', 's', pack('l>', 0), pack('d>', 1) ]) },
		qr/^ERROR:  22P03: incorrect binary data format\nCONTEXT:  COPY tk, line \d+, column n$/m ],
);
for my $kind (sort keys %BIN_ERRORS)
{
	my ($bad, $re) = @{ $BIN_ERRORS{$kind} };
	for my $at (1, 6, $N)
	{
		check_case(name => "binary, $kind at row $at", fmt => 'binary', table => 'tk', heap => 1,
			data => bin_header() . rows(\&bin_row, 1, $at - 1) . $bad->($at) . rows(\&bin_row, $at + 1, $N)
			  . bin_trailer(),
			error => $re);
	}
}
check_case(name => 'binary, truncated in the last row', fmt => 'binary', table => 'tk', heap => 1,
	data => substr(bin_header() . rows(\&bin_row, 1, $N), 0, -5),
	error => qr/^ERROR:  22P04: unexpected EOF in COPY data\nCONTEXT:  COPY tk, line $N, column f$/m);
check_case(name => 'binary, data after the trailer', fmt => 'binary', table => 'tk', heap => 1,
	data => $bin . bin_row($N + 1),
	error => qr/^ERROR:  22P04: received copy data after EOF marker\nCONTEXT:  COPY tk, line \d+$/m);
check_case(name => 'binary, bad signature', fmt => 'binary', table => 'tk', heap => 1, way => 'any',
	data => "PGCOPY\n\377\r\n\1" . rows(\&bin_row, 1, $N),
	error => qr/^ERROR:  22P04: COPY file signature not recognized/m);

# ---- equal keys: on_conflict, in input order ----

# id 7 at rows 7 and 30 (far apart: other chunks, other workers), id 12 at
# rows 12 and 13 (adjacent: a chunk of its own each with chunks of 1 byte)
my @ids = (1 .. $N);
$ids[29] = 7;
$ids[12] = 12;
my $dups = join('', map { text_row($ids[$_ - 1], s => "row $_") } 1 .. $N);
my $ref = check_case(name => 'duplicates, on_conflict error (the table\'s)', fmt => 'text', table => 'tk', data => $dups,
	error => qr/^ERROR:  23505: duplicate key value violates unique constraint "tk_key"\nDETAIL:  Key \(id\)=\(12\) already exists.\nCONTEXT:  COPY tk, line 13$/m);
check_case(name => 'duplicates far apart, on_conflict error', fmt => 'text', table => 'tk',
	data => join('', map { text_row($_ == 30 ? 7 : $_, s => "row $_") } 1 .. $N),
	error => qr/^ERROR:  23505: duplicate key value violates unique constraint "tk_key"\nDETAIL:  Key \(id\)=\(7\) already exists.\nCONTEXT:  COPY tk, line 30$/m);
check_case(name => 'duplicate on the last row, on_conflict error', fmt => 'csv', table => 'tk',
	data => join('', map { csv_row($_ == $N ? 1 : $_, s => qq{"row\n$_"}) } 1 .. $N),
	error => qr/^ERROR:  23505: duplicate key value violates unique constraint "tk_key"\nDETAIL:  Key \(id\)=\(1\) already exists.\nCONTEXT:  COPY tk, line \d+$/m);
my %KEPT = (ignore => [ 7, 12 ], replace => [ 30, 13 ]);
for my $policy ('ignore', 'replace')
{
	$ref = check_case(name => "duplicates, on_conflict $policy", fmt => 'text', table => 'tk', data => $dups,
		topts => "on_conflict '$policy'");
	my ($r7, $r12) = @{ $KEPT{$policy} };
	like($ref->{dump}, qr/^\(7,\d+,"row $r7",/m, "duplicates, on_conflict $policy: serial keeps row $r7 of id 7");
	like($ref->{dump}, qr/^\(12,\d+,"row $r12",/m, "duplicates, on_conflict $policy: serial keeps row $r12 of id 12");
	check_case(name => "duplicates, on_conflict $policy, binary", fmt => 'binary', table => 'tk',
		topts => "on_conflict '$policy'",
		data => bin_header() . join('', map { bin_row($ids[$_ - 1], fields => [ pack('l>', $ids[$_ - 1]), pack('l>', $_) ]) } 1 .. $N)
		  . bin_trailer(), cols => 'id, n');
}
# ---- load_id twice ----

check_case(name => 'load_id run twice', fmt => 'csv', table => 'tk', data => $csv, src => 'file',
	topts => "load_id 'L1'", copy => [ 'COPY', 'COPY' ],
	tag => qr/^COPY $N\nCOPY 0$/,
	messages => qr/^NOTICE:  00000: load "L1" of foreign table "tk" was already published; nothing loaded$/m);

# ---- a large load, by checksum ----

$node->safe_psql('postgres', accounts_ddl(heap => ['acc_heap'], tcopy => ['acc']));
my $big = "$dir/big.csv";
my $expect = write_accounts_csv($big, 1, $BIG_ROWS);
my $t = time();
my ($rc, $out, $err) = psql_cmds($node, 'postgres', ["COPY acc_heap FROM '$big' (FORMAT csv)"]);
is($out, "COPY $BIG_ROWS", "large: heap load") or diag($err);
my $heap_sum = table_checksum($node, 'acc_heap');
for my $way ([ 'serial', 0, '1MB' ], [ 'workers 2, chunks of 1MB', 2, '1MB' ], [ 'workers 4, chunks of 64kB', 4, '64kB' ],
	[ 'workers 2, chunks of 1000 bytes', 2, '1000' ])
{
	my ($name, $w, $chunk) = @$way;
	my $t1 = time();
	($rc, $out, $err) = psql_cmds($node, 'postgres', [
		'TRUNCATE acc',
		# threshold 0: parallel however slowly cat's first bytes come on a
		# busy machine (the default waits 50 ms for 1MB, then goes alone)
		$HAVE ? ("SET tcopy.copy_workers = $w", "SET tcopy.copy_chunk_bytes = '$chunk'",
			'SET tcopy.copy_parallel_threshold = 0') : (),
		'SET client_min_messages = debug1',
		"COPY acc FROM PROGRAM 'cat $big' (FORMAT csv)" ]);
	is($out, "TRUNCATE TABLE\n" . ($HAVE ? "SET\nSET\nSET\n" : '') . "SET\nCOPY $BIG_ROWS", "large, $name: COPY $BIG_ROWS")
	  or diag(short($err));
	is(copy_ways($err), $w ? 'parallel' : 'alone', "large, $name: ran " . ($w ? 'parallel' : 'alone'));
	is(table_checksum($node, 'acc'), $heap_sum, "large, $name: the heap table's checksum");
	note(sprintf('large, %s: %.1f s', $name, time() - $t1));
}

# ---- a file the workers read themselves (tcopy.copy_map_files) ----

# The leader maps a regular file to find the row ends and each worker
# pread()s its chunks; off, the leader reads it into the input ring.  Both
# load the same rows, and say which way they went.
for my $map ('on', 'off')
{
	($rc, $out, $err) = psql_cmds($node, 'postgres', [
		'TRUNCATE acc',
		$HAVE ? ('SET tcopy.copy_workers = 2', "SET tcopy.copy_chunk_bytes = '64kB'",
			'SET tcopy.copy_parallel_threshold = 0', "SET tcopy.copy_map_files = $map") : (),
		'SET client_min_messages = debug1',
		"COPY acc FROM '$big' (FORMAT csv)" ]);
	like($out, qr/COPY $BIG_ROWS$/, "large, file, copy_map_files $map: COPY $BIG_ROWS") or diag(short($err));
	is(table_checksum($node, 'acc'), $heap_sum, "large, file, copy_map_files $map: the heap table's checksum");
	is(($err =~ /parallel workers, which read the file themselves/) ? 'workers' : 'leader',
		$map eq 'on' ? 'workers' : 'leader', "large, file, copy_map_files $map: who reads the file");
}

# A /proc file says its size is 0: it is read, not mapped (the rows a
# heap's COPY gets from it).
$node->safe_psql('postgres', qq{
	CREATE TABLE proc_heap (s text);
	CREATE FOREIGN TABLE proc_t (s text) SERVER ts;
	COPY proc_heap FROM '/proc/sys/kernel/ostype';
});
($rc, $out, $err) = psql_cmds($node, 'postgres', [
	$HAVE ? ('SET tcopy.copy_workers = 2', 'SET tcopy.copy_parallel_threshold = 0') : (),
	'SET client_min_messages = debug1',
	"COPY proc_t FROM '/proc/sys/kernel/ostype'",
	'SELECT (SELECT string_agg(s, \',\') FROM proc_t) = (SELECT string_agg(s, \',\') FROM proc_heap)' ]);
like($out, qr/COPY 1\nt$/, 'a /proc file: the heap\'s rows') or diag(short($err));
unlike($err, qr/which read the file themselves/, 'a /proc file: not mapped');

# A file truncated while the COPY reads it: the rows before its new end, or
# an error that says so, never a backend killed by SIGBUS (the leader's
# mapping past the end) nor a row read from beyond it.  When the truncation
# comes is up to the machine; every outcome is checked.
# The cut is at the end of row 10,000.
my $cut_at = 0;
{
	open(my $fh, '<', $big) or die "open $big: $!";
	$cut_at += length(scalar <$fh>) for 1 .. 10_000;
	close $fh;
}
for my $delay (0.05, 0.15, 0.3)
{
	my $cut = "$dir/cut.csv";
	copy($big, $cut) or die "copy: $!";
	chmod 0644, $cut;
	my $h = IPC::Run::start(
		[ $node->installed_command('psql'), '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		  '-c', 'TRUNCATE acc', '-c', 'SET tcopy.copy_workers = 4', '-c', "SET tcopy.copy_chunk_bytes = '64kB'",
		  '-c', 'SET tcopy.copy_parallel_threshold = 0', '-c', "COPY acc FROM '$cut' (FORMAT csv)" ],
		'>', \my $cut_out, '2>', \my $cut_err);
	Time::HiRes::sleep($delay);
	truncate($cut, $cut_at) or die "truncate: $!";
	$h->finish;
	my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM acc');
	if (($cut_err // '') =~ /ERROR/)
	{
		like($cut_err, qr/ERROR:  COPY file ".*cut.csv" was truncated while it was read/,
			"truncated after ${delay}s: the error says so");
		is($rows, 0, "truncated after ${delay}s: nothing loaded");
	}
	else
	{
		# cut before the leader got there (10,000), after the workers read it
		# all, or, as a read() that meets the new end, after the leader's
		# last window was read whole by the workers: whole rows, never more
		# than the file held
		ok($rows >= 10_000 && $rows <= $BIG_ROWS,
			"truncated after ${delay}s: the rows before its end, or all ($rows)");
	}
	is($node->safe_psql('postgres', 'SELECT 1'), '1', "truncated after ${delay}s: the server is up");
}

# A file renamed over or removed while the COPY reads it: Postgres' COPY
# reads on the file it opened, and so do the workers (they open it through
# the leader's descriptor, not by its name, which they once did: "was
# replaced" or "could not open" when the rename or removal came between the
# leader's open and theirs).  A rename or removal before the leader opened
# it: the other file's 10 rows, or the leader's own "could not open".
my $other = "$dir/other.csv";
write_accounts_csv($other, 1, 10);
for my $how ('mv', 'rm')
{
	for my $delay (0.01, 0.02, 0.03, 0.05, 0.08)
	{
		my $moved = "$dir/moved.csv";
		copy($big, $moved) or die "copy: $!";
		copy($other, "$moved.new") or die "copy: $!";
		chmod 0644, $moved, "$moved.new";
		my $h = IPC::Run::start(
			[ $node->installed_command('psql'), '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
			  '-c', 'TRUNCATE acc', '-c', 'SET tcopy.copy_workers = 4', '-c', "SET tcopy.copy_chunk_bytes = '64kB'",
			  '-c', 'SET tcopy.copy_parallel_threshold = 0', '-c', "COPY acc FROM '$moved' (FORMAT csv)" ],
			'>', \my $mv_out, '2>', \my $mv_err);
		Time::HiRes::sleep($delay);
		if ($how eq 'mv') { rename("$moved.new", $moved) or die "rename: $!"; }
		else { unlink($moved) or die "unlink: $!"; }
		$h->finish;
		my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM acc');
		if ($how eq 'rm' && ($mv_err // '') =~ /ERROR/)
		{
			like($mv_err, qr/ERROR:  could not open file ".*moved.csv" for reading: No such file(?!.*parallel worker)/s,
				"$how after ${delay}s: removed before the COPY opened it");
		}
		else
		{
			is($mv_err // '', '', "$how after ${delay}s: no error");
			like($rows, $how eq 'mv' ? qr/^(?:10|$BIG_ROWS)$/ : qr/^$BIG_ROWS$/,
				"$how after ${delay}s: the rows of the file the COPY opened");
		}
		unlink($moved, "$moved.new");
	}
}
unlike(slurp_file($node->logfile), qr/terminated by signal/, 'no backend was killed by a signal');

# The leader catches SIGBUS only while it maps the file: after the COPY,
# failed or not, the backend's SIGBUS is as before (it was left caught
# after an error).  SigCgt in /proc/self/status: SIGBUS is bit 7 - 1.
{
	my $bad = "$dir/bad_at_end.csv";
	copy($big, $bad) or die "copy: $!";
	open(my $fh, '>>', $bad) or die "open $bad: $!";
	print $fh "x,1,2,\n";
	close $fh;
	chmod 0644, $bad;
	my $sigbus = q{SELECT (('x' || substring(pg_read_file('/proc/self/status') from 'SigCgt:\s*([0-9a-f]+)'))::bit(64) & (1::bit(64) << 6)) <> 0::bit(64)};
	($rc, $out, $err) = psql_cmds($node, 'postgres', [
		$sigbus, 'TRUNCATE acc', 'SET tcopy.copy_workers = 2', "SET tcopy.copy_chunk_bytes = '64kB'",
		'SET tcopy.copy_parallel_threshold = 0', 'SET client_min_messages = debug1',
		"COPY acc FROM '$big' (FORMAT csv)", 'SET client_min_messages = notice', $sigbus,
		"COPY acc FROM '$bad' (FORMAT csv)", $sigbus ]);
	like($err, qr/which read the file themselves.*ERROR:  invalid input syntax for type integer: "x"/s,
		'SIGBUS: the COPYs mapped the file, the second failed') or diag(short($err));
	is($out, "f\nTRUNCATE TABLE\nSET\nSET\nSET\nSET\nCOPY $BIG_ROWS\nSET\nf\nf",
		"SIGBUS: not caught before the COPYs, nor after one that loaded, nor after one that failed");
}

note(sprintf('%d cases, %.0f s', $ncase, time() - $T0));
$node->stop;
$ts->stop;
done_testing();
