# 027_config.pl
#	The tserver as a service (issue 29): its configuration file, SIGHUP,
#	systemd's readiness protocol and unit.
#	- --config FILE sets options ("name = value", comments, an option
#	  without a value as true); the command line's options win;
#	- an unknown option, a bad value, a world-writable file, a file naming
#	  another are refused at start, naming the file and line, in one line
#	  and a pointer to --help (as a usage error on the command line of
#	  tserver or tserver-cli: not the whole --help);
#	- SIGHUP reads the file again: the log level, the limits
#	  (max-unauthenticated) and the tokens (a rotated token file: the old
#	  token refused, the new one accepted, a connection proven before goes
#	  on); a bad value is logged, naming the file and line, and leaves the
#	  option as it was; each setting it does not apply is logged with why
#	  (the command line's wins; session-memory-mb added, statistics
#	  dropped: they need a restart), an unchanged one is not;
#	- with $NOTIFY_SOCKET, READY=1 once it listens, RELOADING=1 and
#	  READY=1 around a reload, STOPPING=1 at SIGTERM;
#	- --sst-compression and --sst-block-kb: a bad value refused, rows
#	  stored under none/4 KB and zstd/64 KB read back;
#	- --log-format json: every line a JSON object (time, level, message),
#	  quotes and backslashes escaped;
#	- packaging/tserver.service passes systemd-analyze verify;
#	- the README names the extension's version, tcopy.control's, and what
#	  the last upgrade script adds;
#	- the README's service steps create no directory: the unit has systemd
#	  make the ones the example configuration uses (/var/lib/tcopy, 0700,
#	  and /run/tcopy, the unit's user's).  systemd is not PID 1 here, so
#	  its steps are done as it does them, under a root of the test's own:
#	  a tserver run as the unit's user with the example configuration
#	  starts on them (and, as the unit did before, fails with "Permission
#	  denied" when nothing makes /var/lib/tcopy).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Temp qw(tempdir);
use IO::Socket::INET;
use JSON::PP;
use POSIX ();
use IO::Socket::UNIX;
use Socket qw(SOCK_DGRAM);
use Test::More;
use Time::HiRes qw(sleep time);
use TcopyTest qw(:all);
use TcopyGroup;

my $dir = tempdir('tcfgXXXXXX', DIR => '/tmp', CLEANUP => !$ENV{TCOPY_TEST_KEEP});
my ($port, $port2) = free_tcp_ports(2);
my $tcp = "tcp:127.0.0.1:$port";

sub write_file
{
	my ($path, $text, $mode) = @_;
	open(my $fh, '>', $path) or die "$path: $!";
	print $fh $text;
	close $fh;
	chmod($mode // 0600, $path);
}

my $token1 = 'a' x 40;
my $token2 = 'b' x 40;
write_file("$dir/token", "$token1\n");
write_file("$dir/token.old", "$token1\n");
write_file("$dir/token.new", "$token2\n");
my $conf = "$dir/tserver.conf";
write_file($conf, <<"EOF", 0640);
# the tserver's configuration
listen = tcp:127.0.0.1:$port2
token-file = $dir/token
log-level = debug
max-unauthenticated = 32
handshake-timeout = 10
statistics
no-sync = false
EOF

# systemd's notification socket, ours
my $notify_path = "$dir/notify.sock";
my $notify = IO::Socket::UNIX->new(Type => SOCK_DGRAM, Local => $notify_path) or die "notify: $!";
local $ENV{NOTIFY_SOCKET} = $notify_path;

sub notes
{
	my ($timeout) = @_;
	my @got;
	my $deadline = time() + ($timeout // 5);
	while (time() < $deadline)
	{
		my $rin = '';
		vec($rin, fileno($notify), 1) = 1;
		last unless select(my $rout = $rin, undef, undef, 0.2) || @got == 0;
		if (defined $notify->recv(my $msg, 4096, 0x40))		# MSG_DONTWAIT
		{
			push @got, $msg if length $msg;
		}
	}
	return join(',', @got);
}

# tcp clients with the token, as tserver-cli
sub wait_until
{
	my ($cond, $timeout) = @_;
	my $deadline = time() + $timeout;
	while (time() < $deadline)
	{
		return 1 if $cond->();
		sleep(0.1);
	}
	return $cond->();
}

sub tcp_ping
{
	my ($ts, $token_file) = @_;
	return $ts->cli('--address', $tcp, '--token-file', $token_file, '--sslmode', 'disable', 'ping');
}

my $ts = TcopyTest->new(extra_args => [ '--config', $conf ]);
ok($ts->start('--listen', $tcp, '--handshake-timeout', 7), 'the tserver starts with --config');
like(notes(), qr/READY=1/, 'it tells systemd it is ready');
is(tcp_ping($ts, "$dir/token")->{rc}, 0, 'the file\'s token-file applies');
like($ts->log_contents, qr/ DEBUG: /, 'the file\'s log-level (debug) applies');
unlike($ts->log_contents, qr/listening on tcp:127\.0\.0\.1:$port2/,
	'the command line\'s listen wins over the file\'s');
is($ts->cli('--address', $tcp, '--token-file', "$dir/token", '--sslmode', 'disable', 'load', 't',
	'--rows', 100)->{rc}, 0, 'a load');
my $r = $ts->cli('--address', $tcp, '--token-file', "$dir/token", '--sslmode', 'disable', 'stats');
my ($syncs) = $r->{out} =~ /^wal_syncs: (\d+)$/m;
ok(($syncs // 0) > 0, "an option without a value (statistics) applies: RocksDB counts WAL syncs ($syncs)");

# SIGHUP: a rotated token, a new log level, a new limit
my $held = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp');
ok($held, 'a connection is open before the reload');
write_file("$dir/token", "$token2\n");
my $c = do { local $/; open(my $fh, '<', $conf) or die; <$fh> };
$c =~ s/max-unauthenticated = 32/max-unauthenticated = 5/;
$c =~ s/handshake-timeout = 10/handshake-timeout = 20/;
$c =~ s/^statistics\n//m;
$c .= "session-memory-mb = 32\n";
write_file($conf, $c, 0640);
kill 'HUP', $ts->pid;
like(notes(), qr/RELOADING=1.*READY=1/, 'around the reload it tells systemd RELOADING=1, then READY=1');
ok(wait_until(sub { $ts->log_contents =~ /reload: tokens read again/ }, 10),
	'the tokens are read again');
ok(wait_until(sub { $ts->log_contents =~ /sets statistics no more/ }, 10),
	'the reload has reported what it left out');
like($ts->log_contents, qr/reload: max-unauthenticated 32 -> 5/, 'the limit is changed');
unlike($ts->log_contents, qr/reload: handshake-timeout \d/, 'one the command line set is not');
like($ts->log_contents,
	qr/WARNING: reload: \Q$conf\E:6: handshake-timeout not applied: the command line's --handshake-timeout \(7\) wins/,
	'... and the log says so, naming the file and line');
like($ts->log_contents,
	qr/WARNING: reload: \Q$conf\E:8: session-memory-mb = 32 not applied: it needs a restart \(the tserver runs with its default\)/,
	'a setting that needs a restart is logged as not applied, with why');
like($ts->log_contents,
	qr/WARNING: reload: \Q$conf\E sets statistics no more: not applied, it needs a restart \(the tserver runs with true\)/,
	'a dropped one too');
unlike($ts->log_contents, qr/reload: .*(no-sync|log-level|token-file).*not applied/,
	'an unchanged one is not news');
isnt(tcp_ping($ts, "$dir/token.old")->{rc}, 0, 'the old token is refused');
is(tcp_ping($ts, "$dir/token.new")->{rc}, 0, 'the new token is accepted');
ok(kill(0, $ts->pid), 'the tserver runs on');

# a bad value: logged, the rest applies
$c =~ s/log-level = debug/log-level = loud/;
$c =~ s/max-unauthenticated = 5/max-unauthenticated = lots/;
write_file($conf, $c, 0640);
kill 'HUP', $ts->pid;
ok(wait_until(sub { $ts->log_contents =~ /max-unauthenticated must be a number/ }, 10),
	'a bad number is logged');
like($ts->log_contents,
	qr/reload: \Q$conf\E:5: max-unauthenticated must be a number from 1 to 1000000, not "lots": kept at 5/,
	'... naming the file and line');
like($ts->log_contents,
	qr/reload: \Q$conf\E:4: log-level must be debug, info, warning or error, not "loud": kept/,
	'a bad log level too');
is(tcp_ping($ts, "$dir/token.new")->{rc}, 0, 'the tserver serves on with what it had');
close $held;
$ts->stop;
like(notes(), qr/STOPPING=1/, 'at SIGTERM it tells systemd STOPPING=1');

# refusals at start
my $bad = TcopyTest->new;
write_file("$dir/bad.conf", "listen = unix:$dir/x.sock\nbogus-option = 1\n");
ok(!$bad->start('--config', "$dir/bad.conf"), 'an unknown option is refused');
like($bad->log_contents, qr{tserver: \Q$dir\E/bad\.conf:2: unknown option "bogus-option"}, '... naming the file and line');
write_file("$dir/num.conf", "# limits\n\nmax-connections = abc\n");
my ($what, $status) = $bad->spawn('--config', "$dir/num.conf");
is("$what " . ($status >> 8), 'exited 2', 'a bad value in the file: a usage error (exit 2)');
is($bad->log_contents,
	qq{tserver: $dir/num.conf:3: max-connections needs an integer from 1 to 1000000, not "abc"\n}
	  . qq{Try "tserver --help" for more information.\n},
	'... naming the file, the line and the option as the file spells it, in one line and a pointer to --help');
($what, $status) = $bad->spawn('--max-connections', 'abc');
like($bad->log_contents, qr/^tserver: --max-connections needs an integer from 1 to 1000000, not "abc"$/m,
	'the same on the command line names the option with its dashes');
for my $args ([ '--bogus-option' ], [ '--data' ], [ '--statistics=yes' ], [ '-x' ])
{
	($what, $status) = $bad->spawn(@$args);
	my $log = $bad->log_contents;
	is("$what " . ($status >> 8), 'exited 2', "tserver ... @$args: a usage error (exit 2)");
	like($log, qr/\Atserver: [^\n]+\nTry "tserver --help" for more information\.\n\z/,
		'... in one line and a pointer to --help') or diag($log);
}
like($bad->log_contents, qr/invalid option "-x"/, 'an unknown short option is named');
($what, $status) = $bad->spawn('--sst-compression', 'gzip');
is("$what " . ($status >> 8), 'exited 2', '--sst-compression gzip: a usage error (exit 2)');
like($bad->log_contents, qr/^tserver: --sst-compression must be none, lz4 or zstd, not "gzip"$/m,
	'... naming the choices');
($what, $status) = $bad->spawn('--sst-block-kb', '0');
is("$what " . ($status >> 8), 'exited 2', '--sst-block-kb 0: a usage error (exit 2)');

# the SST files' compression and block size (issue 47, bench/sst_options.sh):
# rows stored under each are read back
for my $sst ([ 'none', 4 ], [ 'zstd', 64 ])
{
	my $z = TcopyTest->new;
	ok($z->start('--sst-compression', $sst->[0], '--sst-block-kb', $sst->[1]),
		"a tserver starts with --sst-compression $sst->[0] --sst-block-kb $sst->[1]");
	my $r = $z->cli('load', 'accounts', '--rows', 300000);
	is($r->{rc}, 0, '... loads 300000 rows') or diag($r->{err});
	$r = $z->cli('scan', 'accounts', '--format', 'count');
	like($r->{out}, qr/^300000$/m, '... and reads them back') or diag($r->{err});
	$z->stop;
}
for my $args ([ '--bogus-option', 'ping' ], [ 'ping', '--rows', 1 ], [ 'load', 't', '--rows', 'x' ], [])
{
	my $r = $bad->cli(@$args);
	is($r->{rc}, 2, "tserver-cli ... @$args: a usage error (exit 2)");
	like($r->{err}, qr/\Atserver-cli: [^\n]+\nTry "tserver-cli --help" for more information\.\n\z/,
		'... in one line and a pointer to --help') or diag($r->{err});
}
write_file("$dir/open.conf", "log-level = info\n", 0666);
ok(!$bad->start('--config', "$dir/open.conf"), 'a file anyone may write is refused');
like($bad->log_contents, qr/may be written by anyone/, '... saying so');
write_file("$dir/nest.conf", "config = $conf\n");
ok(!$bad->start('--config', "$dir/nest.conf"), 'a file naming another is refused');
write_file("$dir/flag.conf", "no-sync = maybe\n");
ok(!$bad->start('--config', "$dir/flag.conf"), 'a flag that is neither true nor false is refused');
like($bad->log_contents, qr/no-sync takes true or false, not "maybe"/, '... saying so');

# logs a shipper parses: one JSON object a line
my $js = TcopyTest->new;
ok($js->start('--log-format', 'json'), 'a tserver logging JSON starts');
$js->cli_ok('a load', 'load', 'quoted"name\\x', '--rows', 10);
$js->stop;
my ($lines, @unparsed) = (0);
for my $line (split /\n/, $js->log_contents)
{
	my $o = eval { JSON::PP::decode_json($line) };
	$lines++;
	push @unparsed, $line
	  unless ref $o eq 'HASH' && $o->{time} =~ /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
	  && $o->{level} =~ /^(debug|info|warning|error)$/ && defined $o->{message};
}
ok($lines > 3, "it logged ($lines lines)");
is("@unparsed", '', 'every line is a JSON object with time, level and message');
like($js->log_contents, qr/created table \\"quoted\\"name\\\\x\\"/, 'quotes and backslashes escaped');

# the service unit
my $unit = "$FindBin::Bin/../../packaging/tserver.service";
ok(-f $unit, 'the repository has a service unit');
my $out = `systemd-analyze verify '$unit' 2>&1`;
is($?, 0, 'systemd-analyze verify passes it') or diag($out);

# the README's version of the extension: tcopy.control's
my $top = "$FindBin::Bin/../..";
my $readme = do { local $/; open(my $fh, '<', "$top/README.md") or die; <$fh> };
my ($version) = do { local $/; open(my $fh, '<', "$top/tcopy.control") or die; <$fh> }
  =~ /^default_version = '([\d.]+)'/m;
ok(defined $version, "tcopy.control has a default_version ($version)");
like($readme, qr/The extension lives in schema `tcopy` \(version \Q$version\E\b/,
	"the README says the extension is at $version");
my ($last_from) = map { /tcopy--([\d.]+)--\Q$version\E\.sql$/ ? $1 : () }
  glob("$top/src/ext/tcopy--*.sql");
like($readme, qr/from \Q$last_from\E adds/, "... and what the upgrade from $last_from adds")
  if defined $last_from;

# the directories the service needs: systemd's to make, the unit's user's
sub settings
{
	my ($path) = @_;
	my %v;
	open(my $fh, '<', $path) or die "$path: $!";
	while (<$fh>)
	{
		next if /^\s*[#;]/;
		$v{$1} = $2 if /^\s*([\w-]+)\s*=\s*(.*?)\s*$/;
	}
	return \%v;
}
my $u = settings($unit);
my $example_conf = "$FindBin::Bin/../../packaging/tserver.conf";
my $example = settings($example_conf);
is($u->{StateDirectory}, 'tcopy', 'the unit has systemd make its state directory, /var/lib/tcopy');
is($example->{data}, '/var/lib/tcopy', 'the example configuration keeps its data there');
like($u->{StateDirectoryMode} // '', qr/^07[05]0$/,
	'with a mode the tserver accepts for a data directory (0700 or 0750)');
my ($rundir) = ($example->{listen} // '') =~ m{^unix:/run/([^/]+)/};
is($rundir, $u->{RuntimeDirectory}, 'its socket is in the runtime directory systemd makes');
like($u->{ExecStart}, qr{/tserver --config /etc/tcopy/tserver\.conf$},
	'the unit reads the configuration file the README installs');
SKIP:
{
	my ($user, $group) = ($u->{User}, $u->{Group});
	my @pw = getpwnam($user // '');
	my $gid = getgrnam($group // '');
	skip "starting a tserver as the unit's user ($user) needs root and that user", 6
	  unless $> == 0 && @pw && defined $gid;
	my $root = "$dir/root";
	chmod(0755, $dir) or die "chmod: $!";
	for my $d ('', '/var', '/var/lib', '/run', '/etc', '/etc/tcopy')
	{
		mkdir("$root$d", 0755) or die "mkdir $root$d: $!";
	}
	# the README's steps: install -d /etc/tcopy, install -m 640 -g GROUP the example
	my $text = do { local $/; open(my $fh, '<', $example_conf) or die; <$fh> };
	$text =~ s{(=\s*(?:unix:)?)(/var/lib/|/run/)}{$1$root$2}g;
	write_file("$root/etc/tcopy/tserver.conf", $text, 0640);
	chown(0, $gid, "$root/etc/tcopy/tserver.conf") or die "chown: $!";
	# what systemd does at each start, as the unit says
	my $systemd_dirs = sub {
		for my $d ([ "/var/lib/$u->{StateDirectory}", $u->{StateDirectoryMode} ],
			[ "/run/$u->{RuntimeDirectory}", $u->{RuntimeDirectoryMode} ])
		{
			mkdir("$root$d->[0]") unless -d "$root$d->[0]";
			chmod(oct($d->[1]), "$root$d->[0]") or die "chmod: $!";
			chown($pw[2], $gid, "$root$d->[0]") or die "chown: $!";
		}
	};
	my $as_unit = sub {
		my $log = "$dir/unit.log";
		my $pid = fork() // die "fork: $!";
		if ($pid == 0)
		{
			open(STDIN, '<', '/dev/null');
			open(STDOUT, '>', $log) or POSIX::_exit(126);
			open(STDERR, '>&', \*STDOUT) or POSIX::_exit(126);
			delete $ENV{NOTIFY_SOCKET};
			# User= and Group=
			$) = "$gid $gid";
			POSIX::setgid($gid) or POSIX::_exit(125);
			POSIX::setuid($pw[2]) or POSIX::_exit(125);
			exec($TcopyTest::TSERVER, '--config', "$root/etc/tcopy/tserver.conf")
			  or POSIX::_exit(127);
		}
		my $read = sub { open(my $fh, '<', $log) or return ''; local $/; <$fh> // '' };
		my $ready = wait_until(sub { $read->() =~ /tserver ready/ || waitpid($pid, 1) == $pid }, 30);
		my $text = $read->();
		if ($text =~ /tserver ready/)
		{
			kill 'TERM', $pid;
			waitpid($pid, 0);
			return ('ready', $?, $text);
		}
		kill 'KILL', $pid;
		waitpid($pid, 0);
		return ('exited', $?, $text);
	};

	# the unit before: /run/tcopy made, /var/lib/tcopy not
	mkdir("$root/run/tcopy", 0750);
	chown($pw[2], $gid, "$root/run/tcopy");
	my ($what, $status, $log) = $as_unit->();
	is($what, 'exited', 'with nothing making /var/lib/tcopy the tserver does not start');
	like($log, qr/Permission denied/, '... "Permission denied" (what the unit restarted on, forever)');

	$systemd_dirs->();
	($what, $status, $log) = $as_unit->();
	is($what, 'ready', "made as the unit has systemd make them, the tserver starts on them, as $user")
	  or diag($log);
	is($status, 0, '... and stops cleanly at SIGTERM');
	ok(-S "$root/run/tcopy/ts.sock" || $log =~ /listening on unix:\Q$root\E\/run\/tcopy\/ts\.sock/,
		'it listened on the example configuration\'s socket');
	is((stat("$root/var/lib/tcopy/CURRENT"))[4], $pw[2], 'its store is in /var/lib/tcopy, the user\'s');
}
done_testing();
