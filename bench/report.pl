#!/usr/bin/perl
# report.pl RESULTS_DIR RESULTS.md CHART.png
#
# Turns bench/run.sh's raw figures (RESULTS_DIR/runs.tsv, concurrency.tsv,
# meta.txt, profile/*.txt) into the Markdown report and the gnuplot chart.
# Medians are over the runs that succeeded; min and max beside them.
use strict;
use warnings;

my ($dir, $md_path, $png_path) = @ARGV;
die "usage: report.pl RESULTS_DIR RESULTS.md CHART.png\n" unless defined $png_path;

my @case_order = qw(1 2 3 3w 3e 3f 3p 4 5 6 6e 6f 6p 7a 7b 8 9 9t);
my %case_label = (
	'1'  => 'Postgres COPY, logged heap + primary key',
	'2'  => 'Postgres COPY, unlogged heap, no index',
	'3'  => 'tcopy, one backend (workers 0; wire encoder, raw fields)',
	'3w' => 'tcopy, defaults: 2 parallel workers',
	'3e' => 'tcopy, ON_ERROR ignore, no bad rows',
	'3f' => 'tcopy, raw_fields = off (input functions)',
	'3p' => 'tcopy, encoder = protobuf (arena)',
	'4'  => 'tcopy, encoder = protobuf, alloc_mode = malloc',
	'5'  => 'tcopy, copy_hook = off (FDW insert path)',
	'6'  => 'tcopy to null: (client side alone)',
	'6e' => 'tcopy to null:, ON_ERROR ignore, no bad rows',
	'6f' => 'tcopy to null:, raw_fields = off',
	'6p' => 'tcopy to null:, encoder = protobuf (arena)',
	'7a' => 'tcopy defaults, backend on tcmalloc',
	'7b' => 'tcopy protobuf malloc, backend on tcmalloc',
	'8'  => "Postgres' COPY reader alone (file_fdw, count of every column)",
	'9'  => 'tcopy defaults over tcp:127.0.0.1, plain text (sslmode disable)',
	'9t' => 'tcopy defaults over tcp:127.0.0.1, TLS (sslmode verify-full)',
);
my %case_short = (
	'1' => 'heap+PK', '2' => 'heap unlogged', '3' => 'tcopy', '3w' => 'tcopy 2w', '3e' => 'on_error', '3f' => 'fields off', '3p' => 'protobuf',
	'4' => 'pb malloc', '5' => 'hook off', '6' => 'null:', '6e' => 'null: on_error', '6f' => 'null: f.off', '6p' => 'null: pb',
	'7a' => 'tcopy tcm', '7b' => 'malloc tcm', '8' => 'reader', '9' => 'tcp plain', '9t' => 'tcp TLS',
);
# the cases that load into a tserver (the others have no tserver figures)
my %case_tserver = map { $_ => 1 } qw(3 3w 3e 3f 3p 4 5 7a 7b 9 9t);
my @ds_order = qw(accounts shuffled mixed);
my %ds_label = (
	accounts => 'accounts (pgbench_accounts rows, sorted keys)',
	shuffled => 'shuffled (the same rows, shuffled key order)',
	mixed    => 'mixed (wide rows: text, numeric, timestamptz, float8, bool, NULLs)',
);

# ---------------------------------------------------------------- input

sub read_tsv
{
	my ($path) = @_;
	my @rows;
	open(my $fh, '<', $path) or return ();
	my $head = <$fh>;
	return () unless defined $head;
	chomp $head;
	my @cols = split /\t/, $head;
	while (my $line = <$fh>)
	{
		chomp $line;
		next if $line eq '';
		my @v = split /\t/, $line, -1;
		my %r;
		@r{@cols} = @v;
		push @rows, \%r;
	}
	return @rows;
}

my %meta;
my @failures;
if (open(my $fh, '<', "$dir/meta.txt"))
{
	while (<$fh>)
	{
		chomp;
		my ($k, $v) = split /\t/, $_, 2;
		next unless defined $v;
		if ($k eq 'failure') { push @failures, $v; }
		else { $meta{$k} = $v; }
	}
}
my @runs = read_tsv("$dir/runs.tsv");
my @conc = read_tsv("$dir/concurrency.tsv");

sub median
{
	my @v = sort { $a <=> $b } @_;
	return undef unless @v;
	my $n = @v;
	return $n % 2 ? $v[($n - 1) / 2] : ($v[$n / 2 - 1] + $v[$n / 2]) / 2;
}

sub minmax
{
	my @v = sort { $a <=> $b } @_;
	return ($v[0], $v[-1]);
}

# stats{ds}{case}{metric} = [values of ok runs]
my %stats;
my %nruns;
my %nfail;
for my $r (@runs)
{
	my ($ds, $c) = ($r->{dataset}, $r->{case});
	if ($r->{status} ne 'ok') { $nfail{$ds}{$c}++; next; }
	$nruns{$ds}{$c}++;
	my $wall = $r->{wall_s};
	next unless $wall > 0;
	my %m = (
		wall     => $wall,
		commit   => $r->{commit_s},
		rps      => $r->{rows} / $wall,
		mbps     => $r->{file_bytes} / 1e6 / $wall,
		b_user   => $r->{b_user_s},
		b_sys    => $r->{b_sys_s},
		b_cpu    => $r->{b_user_s} + $r->{b_sys_s},
		b_rss    => $r->{b_rssanon_kb} / 1024,
		b_rss0   => $r->{b_rssanon_before_kb} / 1024,
		b_flt    => $r->{b_minflt},
		b_wr     => $r->{b_write_bytes} / 1e6,
		ts_user  => $r->{ts_user_s},
		ts_sys   => $r->{ts_sys_s},
		ts_hwm   => $r->{ts_hwm_kb} / 1024,
		ts_wr    => $r->{ts_write_bytes} / 1e6,
		rows     => $r->{rows},
		bytes    => $r->{file_bytes},
		alloc    => $r->{allocator},
	);
	for my $k (keys %m)
	{
		push @{ $stats{$ds}{$c}{$k} }, $m{$k};
	}
}

# whether case c ran successfully on dataset ds (no autovivification)
sub has { my ($ds, $c) = @_; return exists $stats{$ds} && exists $stats{$ds}{$c}; }

sub med
{
	my ($ds, $c, $k) = @_;
	return undef unless has($ds, $c) && $stats{$ds}{$c}{$k};
	return median(@{ $stats{$ds}{$c}{$k} });
}

sub fmt
{
	my ($v, $fmt) = @_;
	return '–' unless defined $v;
	return sprintf($fmt, $v);
}

# secs(S): seconds with two decimals, three below a second (--quick runs)
sub secs
{
	my ($v) = @_;
	return '–' unless defined $v;
	return sprintf($v < 1 ? '%.3f s' : '%.2f s', $v);
}

sub fmt_int
{
	my ($v) = @_;
	return '–' unless defined $v;
	my $s = sprintf('%.0f', $v);
	1 while $s =~ s/^(\d+)(\d{3})/$1,$2/;
	return $s;
}

# ---------------------------------------------------------------- profiles, read

# The allocator: malloc and free in the C library, tcmalloc or libstdc++'s
# operator new/delete (matched in those objects only, so that a kernel
# "get_page_from_freelist" or tcopy's own functions do not count), and the
# kernel's page-fault path.  Postgres' memory contexts are counted apart.
my $alloc_user_re = qr/malloc|free|unlink_chunk|sysmalloc|tcache|realloc|calloc|memalign|^tc_|tcmalloc|operator new|operator delete/;
my $alloc_dso_re = qr/^libc\.so|libtcmalloc|libstdc\+\+/;
my $fault_re = qr/^\[k\] (?:asm_exc_page_fault|clear_page|exc_page_fault|handle_mm_fault|__handle_mm_fault|do_anonymous_page|do_user_addr_fault)/;
my $pgmem_re = qr/^(?:AllocSet|palloc|pfree|repalloc|MemoryContext|GenerationAlloc|SlabAlloc)/;

sub is_alloc
{
	my ($sym, $dso) = @_;
	return 1 if $sym =~ $fault_re;
	return $dso =~ $alloc_dso_re && $sym !~ /^\[k\]/ && $sym =~ $alloc_user_re;
}

sub read_profile
{
	my ($path) = @_;
	open(my $fh, '<', $path) or return ();
	my (%by_sym, $total);
	my $samples = 0;
	while (<$fh>)
	{
		$samples = $1 if /^# Samples: (\S+)/;
		next unless /^\s*([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(.*?)\s*$/;
		my ($p, $dso, $kind, $sym) = ($1, $2, $3, $4);
		$sym =~ s/\s+-\s+-$//;
		$sym = "($dso: unresolved local functions)" if $sym =~ /^0x[0-9a-f]+$/;
		$sym = "[k] $sym" if $kind eq 'k';
		$by_sym{$sym}{pct} += $p;
		$by_sym{$sym}{dso} = $dso;
		$total += $p;
	}
	return (\%by_sym, $total, $samples);
}

# profile{who}{case}: a profile's symbols and shares, from profile/WHO_CASE.txt
my %profile;
for my $path (sort glob("$dir/profile/*.txt"))
{
	my ($who, $c) = $path =~ m{/(\w+?)_(\w+)\.txt$};
	next unless defined $c;
	my ($by, $total, $samples) = read_profile($path);
	next unless $by && $total;
	my @syms = sort { $by->{$b}{pct} <=> $by->{$a}{pct} } keys %$by;
	my %p = (by => $by, samples => $samples, syms => \@syms);
	$p{alloc} = [ grep { is_alloc($_, $by->{$_}{dso}) } @syms ];
	$p{alloc_pct} = 0;
	$p{alloc_pct} += $by->{$_}{pct} for @{ $p{alloc} };
	$p{arena_pct} = 0;
	$p{arena_pct} += $by->{$_}{pct} for grep { /^tc_arena_|tcopy_batch_alloc/ } @syms;
	$p{pgmem_pct} = 0;
	$p{pgmem_pct} += $by->{$_}{pct} for grep { /$pgmem_re/ } @syms;
	$profile{$who}{$c} = \%p;
}

# ---------------------------------------------------------------- report

my @md;
sub out { push @md, @_; }

my $is_quick = ($meta{quick} // 0) == 1;
out "# tcopy COPY benchmark: results", "";
out "Produced by `$meta{command}` on $meta{started}, in "
  . sprintf('%.1f', ($meta{elapsed_s} // 0) / 60) . " minutes"
  . ($is_quick ? " (a **--quick** run: it proves the harness works, its figures mean little)" : "") . ".", "";
if (@failures)
{
	out "**Failures (" . scalar(@failures) . "):**", "";
	out map { "- $_" } @failures;
	out "";
}

# ---------------------------------------------------------------- issue 5 targets

# Each row: figure, target, measured, met (1, 0, or undef when not measured
# or not a target).  Ratios and differences come from this run's medians;
# the memory ceilings from the peaks of every run.
my @targets;
my $not_run = '– (not run)';

sub ns_text
{
	my ($ns) = @_;
	return $ns < 0 ? sprintf('%.0f ns (faster than the reader)', $ns) : sprintf('%.0f ns', $ns);
}

for my $t (['accounts', 0.33], ['shuffled', 0.5])
{
	my ($ds, $limit) = @$t;
	# the defaults (3w: parallel workers), else one backend (3)
	my $c = has($ds, '3w') ? '3w' : '3';
	my ($w3, $w2) = (med($ds, $c, 'wall'), med($ds, '2', 'wall'));
	my $ratio = (defined $w3 && $w2) ? $w3 / $w2 : undef;
	push @targets, ["tcopy ($c) wall / unlogged heap (2) wall, $ds", "≤ $limit",
		defined $ratio ? sprintf('%.2f (%s / %s)', $ratio, secs($w3), secs($w2)) : $not_run,
		defined $ratio ? ($ratio <= $limit ? 1 : 0) : undef];
}
for my $ds (qw(accounts mixed))
{
	for my $t (['3', 'wire (3)'], ['3p', 'protobuf-c arena (3p)'])
	{
		my ($c, $what) = @$t;
		my ($w, $w4) = (med($ds, $c, 'wall'), med($ds, '4', 'wall'));
		my $less = (defined $w && $w4) ? 100 * ($w4 - $w) / $w4 : undef;
		push @targets, ["allocation: wall time of $what against protobuf-c malloc (4), $ds", '≥ 13.5% less wall time',
			defined $less
			? sprintf('%.1f%% %s (%s vs %s)', abs($less), $less >= 0 ? 'less' : 'more', secs($w), secs($w4))
			: $not_run,
			defined $less ? ($less >= 13.5 ? 1 : 0) : undef];
	}
}
{
	my $backend = $profile{backend} // {};
	my ($p3, $p4) = ($backend->{'3'}, $backend->{'4'});
	push @targets, ['malloc + free + page-fault share of backend samples, case 3 (accounts)', '≤ 2%',
		$p3
		? sprintf('%.1f%% (case 4: %s)', $p3->{alloc_pct}, $p4 ? sprintf('%.1f%%', $p4->{alloc_pct}) : 'no profile')
		: '– (no profile' . ($is_quick ? ': --quick' : '') . ')',
		$p3 ? ($p3->{alloc_pct} <= 2 ? 1 : 0) : undef];
}
# the client side beyond Postgres' COPY reader: null: (6, 6f, 6p) minus the
# reader alone (8), per row; only case 6 (the defaults) has a target
for my $ds (qw(accounts mixed))
{
	for my $c (qw(6 6f 6p))
	{
		next unless has($ds, $c) || $c eq '6';
		for my $t (['wall', 'wall'], ['b_cpu', 'backend CPU (user+sys)'])
		{
			my ($k, $what) = @$t;
			my ($v, $v8, $n) = (med($ds, $c, $k), med($ds, '8', $k), med($ds, $c, 'rows'));
			my $ns = (defined $v && defined $v8 && $n) ? 1e9 * ($v - $v8) / $n : undef;
			my $is_target = $c eq '6';
			push @targets, ["client-side cost per row beyond Postgres' COPY reader, $what: ($c − 8) / rows, $ds",
				$is_target ? '≤ 50 ns' : '– (comparison)',
				defined $ns ? ns_text($ns) . sprintf(' (%s vs %s)', secs($v), secs($v8)) : $not_run,
				($is_target && defined $ns) ? ($ns <= 50 ? 1 : 0) : undef];
		}
	}
}
{
	my ($max, $n) = (undef, 0);
	my @where;
	for my $ds (@ds_order)
	{
		next unless has($ds, '3');
		push @where, $ds;
		for my $v (@{ $stats{$ds}{'3'}{b_rss} })
		{
			$n++;
			$max = $v if !defined $max || $v > $max;
		}
	}
	push @targets, ['backend peak RssAnon, case 3 (the highest of its ' . $n . ' run(s): ' . join(', ', @where)
		  . '; at ' . fmt_int($meta{rows}) . ' rows: test/ext/103_copy_memory.pl covers its growth across sizes)', '≤ 32 MB',
		defined $max ? sprintf('%.1f MB', $max) : $not_run,
		defined $max ? ($max <= 32 ? 1 : 0) : undef];
}
{
	my ($max, $n) = (undef, 0);
	for my $ds (@ds_order)
	{
		next unless has($ds, '3');
		for my $v (@{ $stats{$ds}{'3'}{ts_hwm} })
		{
			$n++;
			$max = $v if !defined $max || $v > $max;
		}
	}
	my @c3 = grep { $_->{case} eq '3' && $_->{status} eq 'ok' } @conc;
	for my $r (@c3)
	{
		my $v = $r->{ts_hwm_kb} / 1024;
		$max = $v if !defined $max || $v > $max;
	}
	push @targets, ["tserver peak RSS (VmHWM), the highest over case 3's $n run(s) and its "
		  . scalar(@c3) . ' concurrent load(s)' . (@c3 ? ' (' . join(', ', map { "$_->{clients} clients" } @c3) . ')' : ''),
		'≤ 1 GB',
		defined $max ? sprintf('%.1f MB', $max) : $not_run,
		defined $max ? ($max <= 1024 ? 1 : 0) : undef];
}

out "## Issue 5 targets", "";
out "From this run's medians (at " . fmt_int($meta{rows}) . " rows; mixed: " . fmt_int($meta{mixed_rows})
  . "); the memory ceilings from the highest peak of any run. \"–\" in \"met?\": not measured in this run, or a row shown for comparison only.", "";
out "| figure | target | measured | met? |", "|---|---|---|---|";
for my $t (@targets)
{
	my ($figure, $target, $measured, $met) = @$t;
	out "| $figure | $target | $measured | " . (defined $met ? ($met ? 'yes' : '**no**') : '–') . " |";
}
out "";

out "## Machine and settings", "";
out "| | |", "|---|---|";
out "| CPU | $meta{nproc} × $meta{cpu} |";
out "| memory | $meta{mem} |";
out "| OS, kernel | $meta{os}, $meta{kernel} |";
out "| load average (1, 5, 15 min) | at start $meta{loadavg_start}; at end $meta{loadavg_end} |";
out "| PostgreSQL | $meta{pg_version} |";
out "| tcopy | git $meta{git} |";
out "| Postgres clusters | throwaway, `initdb -E UTF8 --locale=C`, unix socket only; "
  . join('; ', map { "`$_`" } split /; /, $meta{pg_settings}) . " |";
out "| tcmalloc cluster (case 7) | the same settings, postmaster started with `LD_PRELOAD=$meta{tcmalloc}` (checked in its and each backend's `/proc/PID/maps`) |";
out "| tserver | `$meta{tserver}` |";
out "| tcopy GUCs | " . join('; ', map { "`$_`" } split /; /, ($meta{tcopy_gucs} // '')) . " (defaults, but for the case's own setting) |";
out "| data | $meta{bench_dir}; CSVs generated once and reused, read once before the first case (page cache) |";
out "";

out "### Datasets", "";
for my $ds (@ds_order)
{
	next unless $meta{"dataset_$ds"};
	my ($n, $b) = $meta{"dataset_$ds"} =~ /(\d+) rows, (\d+) bytes/;
	out sprintf("- **%s**: %s rows, %.1f MB (%.0f bytes a row)", $ds_label{$ds}, fmt_int($n), $b / 1e6, $b / $n);
}
out "";

out "### Cases", "";
out "| case | what | settings in its session |", "|---|---|---|";
for my $c (grep { exists $meta{"settings_$_"} } @case_order)
{
	my $set = $meta{"settings_$c"};
	out "| $c | $case_label{$c} | " . ($set ne '' ? "`$set`" : ($c eq '1' || $c eq '2' || $c eq '8' ? '–' : 'none (defaults)'))
	  . ($c =~ /^7/ ? ', on the tcmalloc cluster' : '') . " |";
}
out "";

out "### Method", "";
out "- Every case × dataset combination runs **$meta{runs}** time(s), the combinations alternating "
  . "(round 1: A B C …, round 2: A B C …) so that drift on a shared machine hits all alike; "
  . "figures are medians over the runs, with min–max. Combinations run: "
  . join(', ', map { my ($d, $c) = split /:/; "$d:$c" } split / /, $meta{plan}) . ".";
out "- Each run starts from an empty target: heap tables are dropped and recreated (then `CHECKPOINT`), "
  . "tcopy foreign tables are recreated and a **fresh tserver on an empty data directory** is started "
  . "(so its VmHWM, CPU and disk writes are that run's alone).";
out "- Both clusters have `shared_preload_libraries = 'tcopy'`, as the README asks: tcopy's COPY hook is installed "
  . "when tcopy.so is loaded, and without the preload a fresh session's first COPY goes through Postgres' COPY and "
  . "the FDW insert path (case 5). The COPY runs in a psql session that first does the case's `SET`, if any, then "
  . "`SELECT pg_backend_pid()`. "
  . "The wall time is psql's `\\timing` of `BEGIN; COPY … FROM 'file' (FORMAT csv); COMMIT;`: the COPY's time plus the "
  . "COMMIT's (for tcopy the tserver's commit: merge of spilled runs, SST ingestion, fsync), the latter shown apart. CPU (utime, stime) and minor faults (field 10) come from `/proc/PID/stat` of the backend "
  . "and of the tserver before and after; backend peak RssAnon is sampled from `/proc/PID/status` every ~50 ms; "
  . "tserver peak RSS is its VmHWM; disk writes are `write_bytes` deltas of `/proc/PID/io`.";
out "- Case 8 measures Postgres' COPY reader alone, for the targets' \"client side beyond the reader\": a file_fdw "
  . "foreign table over the same CSV, timed like the loads (`BEGIN; SELECT count(c1), count(c2), … FROM it; COMMIT;`) "
  . "with count() of every column, so that file_fdw's `NextCopyFrom` reads every line and converts every field by its "
  . "input function (file_fdw converts only the columns a query uses); nothing is stored. Its cost beyond COPY's own "
  . "reading is the executor's scan and the count() aggregates, so the differences against it slightly understate the client side's cost.";
out "- Checked after every load but null: (6, 6f, 6p): the COPY's reported row count and `count(*)` of the target "
  . "(through the FDW for tcopy tables); for case 8, the reader's count of the key column. Background work of Postgres (WAL writer, checkpointer) is not in the backend's CPU.";
out "- MB/s is CSV bytes (10^6) per second of wall time; \"× vs 1\" and \"× vs 2\" are rows/s relative to "
  . "case 1 and case 2 on the same dataset (above 1 = faster).";
out "";

my %ds_present = map { $_->{dataset} => 1 } @runs;
for my $ds (@ds_order)
{
	next unless $ds_present{$ds};
	out "## $ds_label{$ds}", "";
	out "| case | wall s: median (min–max) | of which commit s | rows/s | MB/s | × vs 1 | × vs 2 | backend user s | backend sys s | tserver user s | tserver sys s | backend peak RssAnon MB | tserver peak RSS MB | backend minor faults | tserver disk writes MB | runs |";
	out "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";
	my $r1 = med($ds, '1', 'rps');
	my $r2 = med($ds, '2', 'rps');
	for my $c (@case_order)
	{
		next unless $nruns{$ds}{$c} || $nfail{$ds}{$c};
		my $n_ok = $nruns{$ds}{$c} // 0;
		my $n_f = $nfail{$ds}{$c} // 0;
		my $runs_s = $n_ok . ($n_f ? " (**$n_f failed**)" : '');
		if (!has($ds, $c))
		{
			out "| $c $case_label{$c} | FAILED | | | | | | | | | | | | | | $runs_s |";
			next;
		}
		my ($lo, $hi) = minmax(@{ $stats{$ds}{$c}{wall} });
		my $rps = med($ds, $c, 'rps');
		my $ts = $case_tserver{$c};
		out join(' | ',
			"| $c $case_label{$c}",
			sprintf('%.2f (%.2f–%.2f)', med($ds, $c, 'wall'), $lo, $hi),
			fmt(med($ds, $c, 'commit'), '%.2f'),
			fmt_int($rps),
			fmt(med($ds, $c, 'mbps'), '%.1f'),
			$r1 ? sprintf('%.2f', $rps / $r1) : '–',
			$r2 ? sprintf('%.2f', $rps / $r2) : '–',
			fmt(med($ds, $c, 'b_user'), '%.2f'),
			fmt(med($ds, $c, 'b_sys'), '%.2f'),
			$ts ? fmt(med($ds, $c, 'ts_user'), '%.2f') : '–',
			$ts ? fmt(med($ds, $c, 'ts_sys'), '%.2f') : '–',
			fmt(med($ds, $c, 'b_rss'), '%.1f'),
			$ts ? fmt(med($ds, $c, 'ts_hwm'), '%.1f') : '–',
			fmt_int(med($ds, $c, 'b_flt')),
			$ts ? fmt(med($ds, $c, 'ts_wr'), '%.1f') : '–',
			"$runs_s |");
	}
	out "";
	out "Backend RssAnon before the COPY (median): "
	  . join(', ', map { "$_: " . fmt(med($ds, $_, 'b_rss0'), '%.1f') . ' MB' } grep { has($ds, $_) } @case_order)
	  . ". Backend disk writes (heap cases: WAL and evicted buffers): "
	  . join(', ', map { "$_: " . fmt(med($ds, $_, 'b_wr'), '%.0f') . ' MB' } grep { has($ds, $_) } qw(1 2))
	  . ".";
	out "";
}

# ---------------------------------------------------------------- comparisons

sub pct
{
	my ($ds, $a, $b) = @_;    # wall time of a relative to b, in %
	my ($wa, $wb) = (med($ds, $a, 'wall'), med($ds, $b, 'wall'));
	return undef unless defined $wa && defined $wb && $wb > 0;
	return 100 * ($wa - $wb) / $wb;
}

my @cmp;
for my $ds (@ds_order)
{
	next unless $ds_present{$ds};
	my @l;
	my $add = sub {
		my ($a, $b, $what) = @_;
		my $p = pct($ds, $a, $b);
		return unless defined $p;
		my ($ca, $cb) = (med($ds, $a, 'b_cpu'), med($ds, $b, 'b_cpu'));
		push @l, sprintf('%s: wall %+.1f%% (%s vs %s), backend CPU %.2f s vs %.2f s, backend peak RssAnon %.1f vs %.1f MB, minor faults %s vs %s',
			$what, $p, secs(med($ds, $a, 'wall')), secs(med($ds, $b, 'wall')), $ca, $cb,
			med($ds, $a, 'b_rss'), med($ds, $b, 'b_rss'), fmt_int(med($ds, $a, 'b_flt')), fmt_int(med($ds, $b, 'b_flt')));
	};
	$add->('3e', '3', 'ON_ERROR ignore, no bad rows (3e) vs none (3)');
	$add->('6e', '6', 'null:, ON_ERROR ignore, no bad rows (6e) vs none (6)');
	$add->('3', '3f', 'raw fields (3) vs input functions (3f)');
	$add->('6', '6f', 'null:, raw fields (6) vs input functions (6f)');
	$add->('3', '3p', 'wire encoder (3) vs protobuf-c arena (3p)');
	$add->('6', '6p', 'null:, wire encoder (6) vs protobuf-c arena (6p)');
	$add->('3', '4', 'wire encoder (3) vs protobuf-c malloc (4)');
	$add->('3p', '4', 'protobuf-c: arena (3p) vs malloc (4)');
	$add->('7a', '3', 'defaults: tcmalloc (7a) vs glibc (3)');
	$add->('7b', '4', 'protobuf-c malloc: tcmalloc (7b) vs glibc (4)');
	$add->('7a', '7b', 'under tcmalloc: defaults (7a) vs protobuf-c malloc (7b)');
	$add->('5', '3', 'hook off (5) vs hook (3)');
	$add->('9t', '9', 'tcp:, TLS (9t) vs plain text (9)');
	$add->('9', '3', 'tcp: plain text (9) vs unix: (3)');
	$add->('3w', '3', '2 parallel workers (3w) vs one backend (3)');
	$add->('3w', '2', 'tcopy, defaults (3w) vs unlogged heap (2)');
	$add->('3', '2', 'tcopy (3) vs unlogged heap (2)');
	$add->('3', '1', 'tcopy (3) vs logged heap + PK (1)');
	$add->('6', '8', "null: (6) vs Postgres' COPY reader alone (8)");
	if (defined med($ds, '6', 'wall') && defined med($ds, '3', 'wall'))
	{
		my ($w6, $w3, $c6, $c3) = (med($ds, '6', 'wall'), med($ds, '3', 'wall'), med($ds, '6', 'b_cpu'), med($ds, '3', 'b_cpu'));
		push @l, sprintf('client side alone (6) takes %.0f%% of tcopy\'s wall time (3)%s', 100 * $w6 / $w3,
			$c3 > 0 ? sprintf(' and %.0f%% of its backend CPU', 100 * $c6 / $c3) : '')
		  if $w3 > 0;
	}
	next unless @l;
	push @cmp, "- **$ds**:", map { "  - $_" } @l;
}
if (@cmp)
{
	out "## Comparisons (medians; wall % = first relative to second, negative = faster)", "";
	out @cmp;
	out "";
}

# ---------------------------------------------------------------- concurrency

if (@conc)
{
	out "## Concurrent loads (pgbench)", "";
	out "The accounts rows split into $meta{nchunks} files of equal size; `pgbench -n -c N -j N -t $meta{nchunks}/N` "
	  . "with a script of `SELECT nextval('bench_chunk') AS chunk \\gset; COPY target FROM '…/chunk_:chunk.csv' (FORMAT csv)`, "
	  . "so every run loads all rows once, each transaction one file. Wall time is pgbench's whole run (connections included); "
	  . "latency is per transaction (one file's COPY, from pgbench's `-l` log); tps is pgbench's, without connection time. One run each; row count checked after.", "";
	out "| case | clients | wall s | rows/s | tps (files/s) | latency avg ms | latency stddev ms | latency max ms | tserver user s | tserver sys s | tserver peak RSS MB | status |";
	out "|---|---|---|---|---|---|---|---|---|---|---|---|";
	for my $r (@conc)
	{
		my $ts = $case_tserver{ $r->{case} };
		out join(' | ',
			"| $r->{case} $case_label{$r->{case}}", $r->{clients},
			sprintf('%.2f', $r->{wall_s}),
			$r->{wall_s} > 0 ? fmt_int($r->{rows} / $r->{wall_s}) : '–',
			sprintf('%.3f', $r->{tps}), sprintf('%.0f', $r->{lat_avg_ms}), sprintf('%.0f', $r->{lat_stddev_ms}), sprintf('%.0f', $r->{lat_max_ms}),
			$ts ? $r->{ts_user_s} : '–', $ts ? $r->{ts_sys_s} : '–',
			$ts ? sprintf('%.1f', $r->{ts_hwm_kb} / 1024) : '–',
			($r->{status} eq 'ok' ? 'ok' : "**$r->{status}**") . ' |');
	}
	out "";
}

# ---------------------------------------------------------------- profile

out "## Profiles", "";
if (!%profile)
{
	out "No profile: " . ($meta{perf} // 'not run') . ".", "";
}
else
{
	out "$meta{perf}. `perf record -g -F 999 -p PID` over the whole COPY of the accounts dataset "
	  . "(separate, unmeasured runs with the case's settings), then `perf report --no-children --sort dso,symbol`: self time. "
	  . "Allocator share: symbols of libc, libtcmalloc or libstdc++ matching `malloc|free|unlink_chunk|sysmalloc|tcache|realloc|calloc|memalign|tc_|tcmalloc|operator new|operator delete` (glibc's `_int_malloc`, `_int_free`, `cfree`, `malloc_consolidate` among them), plus the kernel's page-fault path (`asm_exc_page_fault|exc_page_fault|do_user_addr_fault|handle_mm_fault|do_anonymous_page|clear_page*`); Postgres' memory contexts (`AllocSet*|palloc|pfree|MemoryContext*`) apart "
	  . "(tcopy's own `tc_arena_*` are shown apart). Postgres' binary keeps only its exported symbols, so its static "
	  . "functions (CopyReadLineText, CopyReadAttributesCSV, …) are summed as \"unresolved local functions\".", "";
	for my $who (sort keys %profile)
	{
		for my $c (grep { $profile{$who}{$_} } @case_order)
		{
			my $p = $profile{$who}{$c};
			my ($by, @syms, @alloc) = ($p->{by});
			@syms = @{ $p->{syms} };
			@alloc = @{ $p->{alloc} };
			out "### $who, case $c ($case_label{$c}): $p->{samples} samples", "";
			out sprintf('Allocator and page-fault share: **%.1f%%** of samples (%s). tcopy arena functions: %.1f%%. Postgres memory contexts: %.1f%%.',
				$p->{alloc_pct},
				@alloc ? join(', ', map { sprintf('%s %.1f%%', $_, $by->{$_}{pct}) } @alloc[0 .. ($#alloc < 7 ? $#alloc : 7)]) : 'none',
				$p->{arena_pct}, $p->{pgmem_pct}), "";
			out "| self % | symbol | object |", "|---|---|---|";
			for my $s (@syms[0 .. ($#syms < 14 ? $#syms : 14)])
			{
				out sprintf('| %.1f | %s | %s |', $by->{$s}{pct}, $s, $by->{$s}{dso});
			}
			out "";
		}
	}
}

out "## Chart", "", "![throughput and peak memory per case](results.png)", "";
out "Raw per-run figures: `bench/results/runs.tsv`, `bench/results/concurrency.tsv`, `bench/results/meta.txt`.", "";

open(my $md, '>', $md_path) or die "cannot write $md_path: $!\n";
print $md join("\n", @md), "\n";
close $md;

# ---------------------------------------------------------------- chart

# Bars drawn as boxes at explicit x positions (case i at x = i, datasets
# side by side around it), so that error bars and value labels sit on them.
my @chart_cases = grep { my $c = $_; grep { has($_, $c) } @ds_order } @case_order;
my @chart_ds = grep { $ds_present{$_} } @ds_order;
my $nds = @chart_ds || 1;
my $bw = 0.8 / $nds;
open(my $tp, '>', "$dir/chart_throughput.dat") or die;
open(my $mem, '>', "$dir/chart_memory.dat") or die;
for my $i (0 .. $#chart_cases)
{
	my $c = $chart_cases[$i];
	for my $j (0 .. $#chart_ds)
	{
		my $ds = $chart_ds[$j];
		next unless has($ds, $c);
		my @r = map { $_ / 1000 } @{ $stats{$ds}{$c}{rps} };
		my ($lo, $hi) = minmax(@r);
		printf $tp "%d %.3f %.1f %.1f %.1f\n", $j, $i - 0.4 + $bw * ($j + 0.5), median(@r), $lo, $hi;
	}
	# memory: the first dataset that has this case
	my ($ds) = grep { has($_, $c) } @chart_ds;
	my $ts = $case_tserver{$c};
	printf $mem "%.3f %.1f %.3f %s\n", $i - 0.2, med($ds, $c, 'b_rss'), $i + 0.2,
		$ts ? sprintf('%.1f', med($ds, $c, 'ts_hwm')) : '?';
}
close $tp;
close $mem;

my $rows_note = $meta{rows} ? fmt_int($meta{rows}) . ' rows' : '';
my @colors = ('#4477aa', '#ee6677', '#228833');
my @plots;
for my $j (0 .. $#chart_ds)
{
	push @plots,
		sprintf("'%s' using (\$1 == %d ? \$2 : NaN):3 with boxes lc rgb '%s' title '%s'",
			"$dir/chart_throughput.dat", $j, $colors[$j], $chart_ds[$j]),
		sprintf("'%s' using (\$1 == %d ? \$2 : NaN):3:4:5 with yerrorbars lc rgb 'black' pt 0 notitle",
			"$dir/chart_throughput.dat", $j);
}
my $xmax = $#chart_cases + 0.6;
my $tic_list = join(', ', map {
	my $c = $chart_cases[$_];
	sprintf('"%s\\n%s" %d', $c, $case_short{$c}, $_)
} 0 .. $#chart_cases);
my $mem_ds = $chart_ds[0] // 'accounts';
open(my $gp, '>', "$dir/chart.gp") or die;
if (!@chart_cases)
{
	# nothing succeeded: a chart that says so, rather than none
	print $gp "set terminal pngcairo size 1100,300 font 'sans,12'\nset output '$png_path'\n"
	  . "unset border\nunset tics\nset label 'tcopy COPY benchmark: no case succeeded (see RESULTS.md)' at screen 0.5, 0.5 center\n"
	  . "plot [0:1][0:1] NaN notitle\n";
	close $gp;
	system('gnuplot', "$dir/chart.gp") == 0 or die "gnuplot failed\n";
	exit 0;
}
print $gp <<"GP";
set terminal pngcairo size 1400,900 font 'sans,10'
set output '$png_path'
set datafile missing '?'
set multiplot title 'tcopy COPY benchmark: $rows_note, $meta{runs} run(s), $meta{nproc} CPUs, $meta{started}'
set style fill solid 0.85 border -1
set grid ytics
set key inside top right vertical opaque
set bmargin 3.5
set origin 0, 0.48
set size 1, 0.47
set xrange [-0.6:$xmax]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set xtics nomirror ($tic_list)
set ylabel 'thousand rows/s'
set title 'Throughput: median; error bars from min to max over the runs'
set boxwidth $bw
plot @{[ join(", \\\n     ", @plots) ]}
set origin 0, 0
set size 1, 0.47
set key inside top left vertical opaque
set offsets 0, 0, graph 0.1, 0
set title 'Peak memory during the COPY ($mem_ds dataset; the first dataset a case ran on)'
set ylabel 'MB'
set boxwidth 0.4
plot '$dir/chart_memory.dat' using 1:2 with boxes lc rgb '#4477aa' title 'backend peak RssAnon (sampled)', \\
     '' using 1:2:(sprintf('%.0f', \$2)) with labels offset 0,0.7 notitle, \\
     '' using 3:4 with boxes lc rgb '#ccbb44' title 'tserver peak RSS (VmHWM)', \\
     '' using 3:4:(sprintf('%.0f', \$4)) with labels offset 0,0.7 notitle
unset multiplot
GP
close $gp;
system('gnuplot', "$dir/chart.gp") == 0 or die "gnuplot failed\n";
