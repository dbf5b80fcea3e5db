#!/usr/bin/perl
# test/isolation/from_postgres.pl SPEC...
#	Turn Postgres' own isolation specs (src/test/isolation/specs of
#	Postgres 15) into specs of this directory: the one table each creates
#	becomes a heap table or a tcopy table keyed on its primary key, as the
#	setting tcopy_test.kind says (test/pg_tests.sh runs every spec with
#	each), and nothing else changes.  Their expected output is Postgres'
#	own, copied unchanged into expected/: a tcopy table must give what a
#	heap table gives.  Writes specs/pg-NAME.spec; refuses a spec whose
#	setup it cannot read (more than one table, no primary key column).
use strict;
use warnings;
use File::Basename;

my $dir = dirname(__FILE__);
for my $path (@ARGV)
{
	open(my $in, '<', $path) or die "$path: $!";
	local $/;
	my $spec = <$in>;
	close($in);
	my $name = basename($path, '.spec');

	my @tables = ($spec =~ /CREATE TABLE (\w+)/g);
	die "$name: one table expected, found @tables\n" unless @tables == 1;
	my $table = $tables[0];
	$spec =~ /(CREATE TABLE $table\s*\((.*?)\);)/s or die "$name: no column list\n";
	my ($create, $cols) = ($1, $2);
	my ($key, @tcopy_cols);
	for my $col (split /,/, $cols)
	{
		$col =~ s/^\s+|\s+$//g;
		if ($col =~ s/\s+primary key//i)
		{
			($key) = $col =~ /^(\w+)/;
			$col .= ' NOT NULL' unless $col =~ /not null/i;
		}
		push @tcopy_cols, $col;
	}
	die "$name: no primary key column\n" unless defined $key;
	my $tcopy = "CREATE FOREIGN TABLE $table (" . join(', ', @tcopy_cols)
	  . ") SERVER ts OPTIONS (key '$key')";
	(my $heap = $create) =~ s/;$//;
	$heap =~ s/\s+/ /g;
	my $setup = <<"SQL";
  CREATE EXTENSION IF NOT EXISTS tcopy;
  DO \$\$
  BEGIN
	IF NOT EXISTS (SELECT FROM pg_foreign_server WHERE srvname = 'ts') THEN
	  EXECUTE format('CREATE SERVER ts FOREIGN DATA WRAPPER tcopy OPTIONS (address %L)',
					 current_setting('tcopy_test.address'));
	  CREATE USER MAPPING FOR PUBLIC SERVER ts;
	END IF;
	IF current_setting('tcopy_test.kind') = 'tcopy' THEN
	  $tcopy;
	ELSE
	  $heap;
	END IF;
  END \$\$;
SQL
	my $drop = <<"SQL";
  DO \$\$
  BEGIN
	IF current_setting('tcopy_test.kind') = 'tcopy' THEN
	  DROP FOREIGN TABLE $table;
	ELSE
	  DROP TABLE $table;
	END IF;
  END \$\$;
SQL
	$spec =~ s/^\s*DROP TABLE IF EXISTS $table;\n//m;
	$spec =~ s/\Q$create\E\n?/$setup/;
	$spec =~ s/^\s*DROP TABLE $table;\n/$drop/m or die "$name: no DROP TABLE in teardown\n";
	my $header = "# Postgres 15's src/test/isolation/specs/$name.spec, its table a heap\n"
	  . "# table or a tcopy table as tcopy_test.kind says (from_postgres.pl);\n"
	  . "# expected/pg-$name.out is Postgres' own.\n\n";
	open(my $out, '>', "$dir/specs/pg-$name.spec") or die $!;
	print $out $header, $spec;
	close($out);
}
