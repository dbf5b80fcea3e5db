# 026_metrics.pl
#	The metrics endpoint (tserver --metrics tcp:HOST:PORT; issue 29), as
#	Prometheus scrapes it:
#	- GET /metrics answers 200 in the text format: every line a comment or
#	  "name{labels} value", each name with its TYPE; the counters follow
#	  what happened (rows committed after loads, sessions, tables);
#	- the histograms of merge and publish times: buckets cumulative, +Inf's
#	  equal to _count, a publish counted per committed load, a merge per
#	  load that spilled (--session-memory-mb 4, rows shuffled);
#	- refusals and evictions at accept are counted by reason;
#	- another path is 404, another method 405, a request that never ends
#	  400 (within 2 s), a flood of garbage leaves the tserver serving;
#	- --metrics with a unix: address is refused at start.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use IO::Socket::INET;
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest qw(:all);
use TcopyGroup;

my $port = (free_tcp_ports(1))[0];
my $ts = TcopyTest->new;
$ts->start('--metrics', "tcp:127.0.0.1:$port", '--max-connections', 4, '--session-memory-mb', 4)
  or BAIL_OUT('tserver did not start');
like($ts->log_contents, qr/metrics on tcp:127\.0\.0\.1:$port \(GET \/metrics\)/, 'the endpoint is logged');

# One HTTP exchange: (status code, body).
sub http
{
	my ($request) = @_;
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp',
		Timeout => 5) or return (undef, "connect: $!");
	print $s $request;
	local $/;
	my $answer = <$s> // '';
	close $s;
	my ($code) = $answer =~ m{^HTTP/1\.0 (\d+) };
	my (undef, $body) = split /\r\n\r\n/, $answer, 2;
	return ($code, $body // '');
}

# The samples of a scrape: { "name{labels}" => value }, checking its form.
sub scrape
{
	my ($code, $body) = http("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
	is($code, 200, 'GET /metrics: 200');
	my (%samples, %typed, @bad);
	for my $line (split /\n/, $body)
	{
		if ($line =~ /^# TYPE (\w+) (counter|gauge|histogram)$/) { $typed{$1} = $2; next }
		next if $line =~ /^# HELP \w+ .+$/;
		if (my ($name, $labels, $value) = $line =~ /^(\w+)(\{[^}]*\})? (-?[\d.]+(?:e[+-]?\d+)?)$/)
		{
			# a histogram's series: its name and a suffix
			my ($base, $suffix) = $name =~ /^(\w+)_(bucket|sum|count)$/;
			$labels //= '';
			push @bad, "untyped $name"
			  unless $typed{$name} || ($base && ($typed{$base} // '') eq 'histogram');
			push @bad, "$name without le" if ($suffix // '') eq 'bucket' && $labels !~ /^\{le="[^"]+"\}$/;
			$samples{ $name . $labels } = $value;
			next;
		}
		push @bad, $line;
	}
	is("@bad", '', 'every line is a comment or a typed sample');
	return \%samples;
}

# A histogram of a scrape, checked: { buckets => [[le, count], ...] in
# increasing le with +Inf last, sum, count }.
sub histogram
{
	my ($m, $name) = @_;
	my @buckets;
	for my $key (keys %$m)
	{
		push @buckets, [ $1, $m->{$key} ] if $key =~ /^\Q${name}\E_bucket\{le="([^"]+)"\}$/;
	}
	@buckets = sort { ($a->[0] eq '+Inf' ? 9e99 : $a->[0]) <=> ($b->[0] eq '+Inf' ? 9e99 : $b->[0]) }
	  @buckets;
	my $h = { buckets => \@buckets, sum => $m->{"${name}_sum"}, count => $m->{"${name}_count"} };
	ok(@buckets > 1 && $buckets[-1][0] eq '+Inf' && defined $h->{sum} && defined $h->{count},
		"$name: buckets up to +Inf, _sum and _count");
	my @down = grep { $buckets[$_][1] < $buckets[ $_ - 1 ][1] } 1 .. $#buckets;
	is("@down", '', "$name: the buckets are cumulative");
	is($buckets[-1][1], $h->{count}, "$name: +Inf's bucket is _count") if @buckets;
	return $h;
}

my $m = scrape();
is($m->{tcopy_rows_committed_total}, 0, 'no row committed yet');
my $h = histogram($m, 'tcopy_publish_seconds');
is($h->{count}, 0, 'no publish yet');
is($h->{sum}, 0, '... nor its time');
is(histogram($m, 'tcopy_merge_seconds')->{count}, 0, 'no merge yet');
ok($m->{tcopy_uptime_seconds} > 0, 'an uptime');
$ts->cli_ok('a load', 'load', 'a', '--rows', 5000);
$ts->cli_ok('another', 'load', 'b', '--rows', 3000);
$m = scrape();
is($m->{tcopy_rows_committed_total}, 8000, 'the rows committed are counted');
is($m->{tcopy_tables}, 2, 'the tables');
ok($m->{'tcopy_sessions_ended_total{outcome="committed"}'} >= 2, 'the sessions committed');
is($m->{'tcopy_sessions{state="open"}'}, 0, 'no session open');
ok($m->{tcopy_received_bytes_total} > 0, 'the bytes received');
ok($m->{tcopy_peak_rss_bytes} > 1e6, 'the peak memory, in bytes');
ok(!exists $m->{tcopy_group_leader}, 'no group, no group metric');
ok($m->{tcopy_disk_free_bytes} > 0, 'the room left on the disk');
is($m->{'tcopy_build_info{version="0.1.0"}'}, 1, 'the version, as build_info');
ok(exists $m->{tcopy_rocksdb_l0_files} && exists $m->{tcopy_sst_bytes}, 'the L0 files and SST bytes');
$h = histogram($m, 'tcopy_publish_seconds');
cmp_ok($h->{count}, '>=', 2, 'a publish per committed load');
cmp_ok($h->{sum}, '>', 0, '... and their time');
is(histogram($m, 'tcopy_merge_seconds')->{count}, 0, 'small loads merge nothing');

# a load that spills runs (shuffled, past --session-memory-mb) merges them at commit
$ts->cli_ok('a spilled load', 'load', 'big', '--rows', 150_000, '--shuffle', '--seed', 7);
$m = scrape();
is($m->{tcopy_rows_committed_total}, 158_000, 'its rows are committed');
$h = histogram($m, 'tcopy_merge_seconds');
cmp_ok($h->{count}, '>=', 1, 'its merge is counted');
cmp_ok($h->{sum}, '>', 0, '... with its time');
$h = histogram($m, 'tcopy_publish_seconds');
cmp_ok($h->{count}, '>=', 3, 'and its publish');

# refusals at --max-connections (4)
my @held = map { $ts->connect_ready } 1 .. 4;
ok(!grep({ !defined } @held), 'four connections hold every place');
my $r = $ts->cli('ping');
isnt($r->{rc}, 0, 'a fifth is refused');
$m = scrape();
is($m->{'tcopy_connections_refused_total{reason="max_connections"}'}, 1,
	'the refusal is counted by its reason');
close $_ for @held;

# bad requests
my ($code) = http("GET /other HTTP/1.0\r\n\r\n");
is($code, 404, 'another path: 404');
($code) = http("POST /metrics HTTP/1.0\r\n\r\n");
is($code, 405, 'another method: 405');
my $t0 = time();
($code) = http("GET /metrics HTTP/1.0\r\n");
is($code, 400, 'a request whose head never ends: 400');
cmp_ok(time() - $t0, '<', 5, '... within its deadline');
($code) = http('x' x 20000);
is($code, 400, 'a request too long: 400');
for (1 .. 50)
{
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp');
	print $s join('', map { chr(int(rand(256))) } 1 .. 200) if $s;
	close $s if $s;
}
$m = scrape();
is($m->{tcopy_rows_committed_total}, 158_000, 'after garbage, the endpoint still answers');
$ts->cli_ok('and the tserver serves', 'ping');
$ts->stop;

# a unix: address is refused
my $bad = TcopyTest->new;
ok(!$bad->start('--metrics', 'unix:/tmp/metrics.sock'), '--metrics unix:... is refused');
like($bad->log_contents, qr/--metrics takes tcp:HOST:PORT/, '... saying why');
done_testing();
