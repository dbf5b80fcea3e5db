#!/usr/bin/perl
# powerloss_rebuild.pl LOG OUTDIR [BASEDIR]
#	Rebuild the directory tree a power loss leaves, from the log
#	test/tools/powerloss.c wrote of a process's changes under its root:
#	a file's contents as of its last sync, a directory's entries as of its
#	last sync, nothing else.  A file whose entry is durable but whose data
#	was never synced is there, empty.  OUTDIR (which must not exist yet)
#	becomes the root.  Prints one line: "changes N syncs M cut 0|1".
#	BASEDIR is a copy of the tree as it was when the process started (the
#	log's E records name its entries): the durable state the log starts
#	from; without it the tree must have been empty.
#
#	Objects are numbered as the log makes them, not by inode: an inode
#	freed and used again for a new file is a new object, while a durable
#	entry may still name the old one.
use strict;
use warnings;

@ARGV == 2 || @ARGV == 3 or die "usage: $0 LOG OUTDIR [BASEDIR]\n";
my ($log, $out, $base) = @ARGV;
die "$out exists\n" if -e $out;

my %obj_of_ino;			# inode -> the object it is now
my %is_dir;				# object -> 1 for a directory
my %data;				# object -> its contents now (files)
my %synced;				# object -> its contents at its last sync
my %entries;			# object -> { name -> object } now (directories)
my %durable;			# object -> { name -> object } at its last sync
my %path_of;			# object -> its path under BASEDIR (E records)
my $next = 1;
my ($changes, $syncs, $cut) = (0, 0, 0);

# object 0 is the root: a directory made durable before the log began
$is_dir{0} = 1;
$entries{0} = {};
$durable{0} = {};
$path_of{0} = '';

open(my $fh, '<:raw', $log) or die "$log: $!\n";

sub obj
{
	my ($ino) = @_;
	return $obj_of_ino{$ino};
}

sub dir_obj
{
	my ($ino) = @_;
	my $o = $obj_of_ino{$ino};
	return defined $o && $is_dir{$o} ? $o : undef;
}

sub slurp
{
	my ($path) = @_;
	open(my $in, '<:raw', $path) or die "$path: $!\n";
	local $/;
	my $bytes = <$in> // '';
	close $in;
	return $bytes;
}

while (my $line = <$fh>)
{
	chomp $line;
	my ($op, @a) = split / /, $line;
	if ($op eq 'K')
	{
		$cut = 1;
		last;
	}
	if ($op eq 'B')
	{
		$obj_of_ino{ $a[0] } = 0;
		next;
	}
	if ($op eq 'E')
	{
		my ($parent, $name, $ino, $kind) = @a;
		my $p = dir_obj($parent);
		die "an E record outside the tree: $line\n" unless defined $p;
		my $o = $next++;
		$obj_of_ino{$ino} = $o;
		$path_of{$o} = "$path_of{$p}/$name";
		if ($kind eq 'd')
		{
			$is_dir{$o} = 1;
			$entries{$o} = {};
			$durable{$o} = {};
		}
		else
		{
			die "E records but no BASEDIR\n" unless defined $base;
			$data{$o} = $synced{$o} = slurp("$base$path_of{$o}");
		}
		$entries{$p}{$name} = $o;
		$durable{$p}{$name} = $o;
		next;
	}
	$changes++;
	if ($op eq 'W')
	{
		my ($ino, $off, $len) = @a;
		my $bytes = '';
		my $got = read($fh, $bytes, $len);
		die "log ends inside a write\n" unless defined $got && $got == $len;
		my $o = obj($ino);
		next unless defined $o;
		my $d = \$data{$o};
		$$d .= "\0" x ($off - length($$d)) if length($$d) < $off;
		substr($$d, $off, $len) = $bytes;
	}
	elsif ($op eq 'T')
	{
		my ($ino, $size) = @a;
		my $o = obj($ino);
		next unless defined $o;
		my $d = \$data{$o};
		if (length($$d) > $size) { substr($$d, $size) = ''; }
		else { $$d .= "\0" x ($size - length($$d)); }
	}
	elsif ($op eq 'S')
	{
		$syncs++;
		my $o = obj($a[0]);
		$synced{$o} = $data{$o} if defined $o;
	}
	elsif ($op eq 'D')
	{
		$syncs++;
		my $o = dir_obj($a[0]);
		$durable{$o} = { %{ $entries{$o} } } if defined $o && $is_dir{$o};
	}
	elsif ($op eq 'C')
	{
		my ($parent, $name, $ino, $kind) = @a;
		my $p = dir_obj($parent);
		my $o = $next++;
		$obj_of_ino{$ino} = $o;
		if ($kind eq 'd')
		{
			$is_dir{$o} = 1;
			$entries{$o} = {};
			$durable{$o} = {};
		}
		else
		{
			$data{$o} = '';
		}
		$entries{$p}{$name} = $o if defined $p;
	}
	elsif ($op eq 'L')
	{
		my ($ino, $parent, $name) = @a;
		my $p = dir_obj($parent);
		my $o = obj($ino);
		if (defined $p)
		{
			if (defined $o) { $entries{$p}{$name} = $o; }
			else { delete $entries{$p}{$name}; }
		}
	}
	elsif ($op eq 'R')
	{
		my ($fp, $fname, $tp, $tname) = @a;
		my ($f, $t) = (dir_obj($fp), dir_obj($tp));
		my $o = defined $f ? delete $entries{$f}{$fname} : undef;
		if (defined $t)
		{
			if (defined $o) { $entries{$t}{$tname} = $o; }
			else { delete $entries{$t}{$tname}; }
		}
	}
	elsif ($op eq 'U')
	{
		my ($parent, $name) = @a;
		my $p = dir_obj($parent);
		delete $entries{$p}{$name} if defined $p;
	}
	else
	{
		die "unknown log record \"$line\"\n";
	}
}
close $fh;

# Write the durable tree: a directory's durable entries, each file with its
# synced contents (none: empty).
sub build
{
	my ($o, $path, $seen) = @_;
	mkdir($path, 0700) or die "mkdir $path: $!\n";
	# a directory reached twice (renamed, its old entry durable too) is made
	# again: its entries are what its own syncs made them
	for my $name (sort keys %{ $durable{$o} })
	{
		my $c = $durable{$o}{$name};
		if ($is_dir{$c})
		{
			build($c, "$path/$name", $seen);
			next;
		}
		open(my $w, '>:raw', "$path/$name") or die "$path/$name: $!\n";
		print $w ($synced{$c} // '');
		close($w) or die "$path/$name: $!\n";
		chmod(0600, "$path/$name") or die "chmod $path/$name: $!\n";
	}
}
build(0, $out, {});
print "changes $changes syncs $syncs cut $cut\n";
