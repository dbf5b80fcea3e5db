#!/usr/bin/perl
# check_layers.pl
#	The extension's layers (docs/architecture.md), checked two ways:
#	- includes: a file of src/ext/LAYER/ includes no "tcopy/X.h" of a layer
#	  above LAYER, and a layer's header (src/ext/include/tcopy/LAYER.h) only
#	  those of the layers below it; src/ext/tcopy.c, the module's entry
#	  point, may include all;
#	- calls, when the objects are built (make): no object of a layer
#	  refers to a symbol (function or variable) defined by an object of a
#	  layer above it (nm), in the extension and in the tserver (storage ->
#	  replication -> staging -> registry -> session -> server, one folder
#	  each under src/tserver/, whose files also include no header of a
#	  layer above theirs);
#	- no circle: the objects of src/common, of the extension and of the
#	  tserver, each set alone, call each other in no circle (a file calls
#	  another of its layer, which never calls it back, however far round).
#	Prints each violation and exits 1 if there is any; 0 and a count
#	otherwise.
#
# Usage: test/tools/check_layers.pl [TOP]   (TOP: the repository, default .)
use strict;
use warnings;

my $top = shift // '.';
my @layers = qw(catalog codec connection transaction fdw copy commands);
my %rank;
@rank{@layers} = (0 .. $#layers);
my $ext = "$top/src/ext";
my @bad;
my $checked = 0;

sub includes_of
{
	my ($file) = @_;
	open(my $fh, '<', $file) or die "$file: $!";
	my @inc;
	while (<$fh>)
	{
		push @inc, $1 if /^\s*#\s*include\s+"tcopy\/(\w+)\.h"/;
		push @bad, "$file: includes \"$1\", an umbrella header" if /^\s*#\s*include\s+"(tcopy\.h)"/;
	}
	return @inc;
}

# includes of the layers' files and headers
for my $layer (@layers)
{
	for my $file (glob("$ext/$layer/*.[ch]"), "$ext/include/tcopy/$layer.h")
	{
		next unless -e $file;
		$checked++;
		my $is_layer_header = $file =~ m{/include/tcopy/\w+\.h$};
		for my $inc (includes_of($file))
		{
			if (!exists $rank{$inc})
			{
				push @bad, "$file: includes \"tcopy/$inc.h\", of no layer";
			}
			elsif ($rank{$inc} > $rank{$layer} || ($is_layer_header && $inc eq $layer))
			{
				push @bad, "$file: includes \"tcopy/$inc.h\" (layer $inc), above its layer $layer";
			}
		}
	}
}
for my $file (glob("$ext/*.c"))
{
	next if $file =~ m{/tcopy\.c$};
	push @bad, "$file: a source file outside the layers' folders";
}
for my $file (glob("$ext/include/tcopy/*.h"))
{
	(my $name = $file) =~ s{.*/(\w+)\.h$}{$1};
	push @bad, "$file: a header of no layer" unless exists $rank{$name};
}

# The symbols each object defines and refers to, by nm; {} without objects.
sub symbols
{
	my (@objs) = @_;
	my (%def, %use);
	for my $obj (@objs)
	{
		for (`nm $obj`)
		{
			if (/^\S+\s+[TDBRC]\s+(\S+)$/)
			{
				$def{$1} = $obj;
			}
			elsif (/^\s+U\s+(\S+)$/)
			{
				push @{ $use{$obj} }, $1;
			}
		}
	}
	return (\%def, \%use);
}

# Objects of layers calling upwards: for each object (layer_of: object path
# -> layer; rank: layer -> height), every symbol it refers to that an
# object of a higher layer defines.
sub check_calls
{
	my ($layer_of, $rank) = @_;
	my @objs = sort keys %$layer_of;
	return unless @objs;
	my ($def, $use) = symbols(@objs);
	for my $obj (@objs)
	{
		my $layer = $layer_of->{$obj};
		for my $sym (@{ $use->{$obj} // [] })
		{
			my $to = $def->{$sym} or next;
			my $to_layer = $layer_of->{$to};
			push @bad, "$obj ($layer) refers to $sym of $to (layer $to_layer, above it)"
			  if $rank->{$to_layer} > $rank->{$layer};
		}
	}
	$checked += @objs;
}

# calls between the extension's layers: an object's layer is its folder
my %ext_layer_of;
for my $layer (@layers)
{
	$ext_layer_of{$_} = $layer for glob("$ext/$layer/*.o");
}
check_calls(\%ext_layer_of, \%rank);

# calls between the tserver's layers: an object's layer is its source's
# folder (the generated ts_store.pb-c is storage's; ts_main.c is on top)
my @ts_layers = qw(storage replication staging registry session server);
my %ts_rank;
@ts_rank{@ts_layers} = (0 .. $#ts_layers);
my %ts_layer_of = ('ts_store.pb-c' => 'storage');
for my $layer (@ts_layers)
{
	for my $src (glob("$top/src/tserver/$layer/*.c"))
	{
		(my $name = $src) =~ s{.*/(\w+)\.c$}{$1};
		$ts_layer_of{$name} = $layer;
	}
}
# the tserver's includes: a file includes no ts_*.h of a layer above its own
my %ts_header_layer = ('ts_store.pb-c.h' => 'storage');
for my $layer (@ts_layers)
{
	for my $h (glob("$top/src/tserver/$layer/*.h"))
	{
		(my $name = $h) =~ s{.*/}{};
		$ts_header_layer{$name} = $layer;
	}
}
for my $layer (@ts_layers)
{
	for my $file (glob("$top/src/tserver/$layer/*.[ch]"))
	{
		open(my $fh, '<', $file) or die "$file: $!";
		while (<$fh>)
		{
			next unless /^\s*#\s*include\s+"(ts_[\w.-]+\.h)"/;
			my $inc = $1;
			my $to = $ts_header_layer{$inc};
			if (!defined $to)
			{
				push @bad, "$file: includes \"$inc\", of no layer";
			}
			elsif ($ts_rank{$to} > $ts_rank{$layer})
			{
				push @bad, "$file: includes \"$inc\" (layer $to), above its layer $layer";
			}
		}
		close($fh);
		$checked++;
	}
}
for my $src (glob("$top/src/tserver/*.c"))
{
	(my $name = $src) =~ s{.*/(\w+)\.c$}{$1};
	push @bad, "$src: a tserver source file outside the layers' folders" unless $name eq 'ts_main';
}
my %ts_obj_layer;
for my $obj (glob("$top/build/obj/tserver/*.o"))
{
	my ($name) = $obj =~ m{/([\w.-]+)\.o$};
	$ts_obj_layer{$obj} = $ts_layer_of{$name} if exists $ts_layer_of{$name};
}
check_calls(\%ts_obj_layer, \%ts_rank);

# No circle of calls between the objects of a program or library: within a
# layer, one file calls another, never back (src/common, the extension, the
# tserver; each checked alone)
sub check_circles
{
	my ($what, @objs) = @_;
	return unless @objs;
	my ($def, $use) = symbols(@objs);
	my %edge;
	for my $obj (@objs)
	{
		for my $sym (@{ $use->{$obj} // [] })
		{
			my $to = $def->{$sym};
			$edge{$obj}{$to} = $sym if $to && $to ne $obj;
		}
	}
	# depth-first search for a back edge
	my %state;
	my $visit;
	$visit = sub {
		my ($node, @path) = @_;
		$state{$node} = 1;
		for my $next (sort keys %{ $edge{$node} // {} })
		{
			if (($state{$next} // 0) == 1)
			{
				my @circle = (@path, $node, $next);
				s{.*/}{} for @circle;
				# from where it closes
				shift @circle while @circle && $circle[0] ne ($next =~ s{.*/}{}r);
				push @bad, "$what calls in a circle: " . join(' -> ', @circle);
			}
			elsif (!$state{$next})
			{
				$visit->($next, @path, $node);
			}
		}
		$state{$node} = 2;
	};
	$visit->($_) for grep { !$state{$_} } sort @objs;
	$checked += @objs;
}
check_circles('src/common', glob("$top/build/obj/common/*.o"));
check_circles('the extension', sort keys %ext_layer_of);
check_circles('the tserver', sort keys %ts_obj_layer);

if (@bad)
{
	print "$_\n" for @bad;
	print scalar(@bad) . " layer violations\n";
	exit 1;
}
print "layers: $checked files and objects checked, no call or include goes up\n";
exit 0;
