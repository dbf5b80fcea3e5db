# TcopyTls.pm
#	Throwaway certificates for the TLS tests, made with the openssl
#	command: a CA, a server certificate for localhost and 127.0.0.1, a
#	client certificate, and a second CA with a client certificate of its
#	own (for the refusals); Keys are mode 0600, as tserver and the client
#	demand.
package TcopyTls;

use strict;
use warnings;

use Exporter 'import';
our @EXPORT_OK = qw(have_openssl make_certs make_group_certs);

# Whether the openssl command is there (scripts/install-deps.sh installs it).
sub have_openssl
{
	return system('openssl version >/dev/null 2>&1') == 0;
}

# Run openssl with its chatter in $log; die with it on failure.
sub run_openssl
{
	my ($log, @args) = @_;
	open(my $saved, '>&', \*STDERR) or die "dup: $!";
	open(STDERR, '>>', $log) or die "$log: $!";
	my $rc = system('openssl', @args);
	open(STDERR, '>&', $saved) or die "dup: $!";
	return if $rc == 0;
	open(my $fh, '<', $log);
	local $/;
	my $text = <$fh> // '';
	die "openssl @args: exit $rc\n$text";
}

# A key and a certificate signed by $ca (a hash of crt, key) or self-signed
# when $ca is undef; $san: subjectAltName, or undef; $ec: an EC P-256 key
# (quick to make) rather than RSA 2048.  Returns { crt, key }.
sub make_cert
{
	my ($dir, $name, $cn, $ca, $san, $ec) = @_;
	my ($key, $crt, $csr, $ext) = map { "$dir/$name.$_" } qw(key crt csr ext);
	open(my $fh, '>', $ext) or die "$ext: $!";
	print $fh "basicConstraints=" . ($ca ? "CA:FALSE" : "critical,CA:TRUE") . "\n";
	print $fh "subjectAltName=$san\n" if defined $san;
	close $fh;
	my $log = "$dir/openssl.log";
	my @newkey = $ec ? ('-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1')
	  : ('-newkey', 'rsa:2048');
	run_openssl($log, 'req', '-new', @newkey, '-nodes', '-keyout', $key,
		'-out', $csr, '-subj', "/CN=$cn", '-batch');
	if ($ca)
	{
		run_openssl($log, 'x509', '-req', '-in', $csr, '-CA', $ca->{crt}, '-CAkey', $ca->{key},
			'-CAcreateserial', '-out', $crt, '-days', '2', '-extfile', $ext);
	}
	else
	{
		run_openssl($log, 'x509', '-req', '-in', $csr, '-signkey', $key, '-out', $crt,
			'-days', '2', '-extfile', $ext);
	}
	chmod(0600, $key) or die "chmod $key: $!";
	return { crt => $crt, key => $key };
}

# Make every certificate in $dir (which must exist); returns a hash:
# ca, server, client (signed by ca), other_ca, other_client (by other_ca),
# each { crt, key }.
sub make_certs
{
	my ($dir) = @_;
	my %c;
	$c{ca} = make_cert($dir, 'ca', 'tcopy test CA', undef, undef);
	$c{server} = make_cert($dir, 'server', 'localhost', $c{ca}, 'DNS:localhost,IP:127.0.0.1');
	$c{client} = make_cert($dir, 'client', 'tcopy client', $c{ca}, undef);
	$c{other_ca} = make_cert($dir, 'other_ca', 'another CA', undef, undef);
	$c{other_client} = make_cert($dir, 'other_client', 'tcopy client', $c{other_ca}, undef);
	return \%c;
}

# A replica group's certificates in $dir (which must exist), as
# docs/security.md#the-raft-port has an operator make them: the group's CA
# and a certificate of it for each member 1 to $n; and another CA with a
# member certificate of its own (for the refusals).  Returns { ca,
# members => [ undef, member 1, ... ], other_ca, other_member }.
sub make_group_certs
{
	my ($dir, $n) = @_;
	my %c;
	$c{ca} = make_cert($dir, 'group_ca', 'tcopy group CA', undef, undef, 1);
	$c{members} = [ undef,
		map { make_cert($dir, "member$_", "tcopy member $_", $c{ca}, undef, 1) } 1 .. $n ];
	$c{other_ca} = make_cert($dir, 'other_group_ca', 'another group CA', undef, undef, 1);
	$c{other_member} = make_cert($dir, 'other_member', 'tcopy member 3', $c{other_ca}, undef, 1);
	return \%c;
}

1;
