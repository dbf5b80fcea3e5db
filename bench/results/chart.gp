set terminal pngcairo size 1400,900 font 'sans,10'
set output '/work/main/bench/results.png'
set datafile missing '?'
set multiplot title 'tcopy COPY benchmark: 10,000,000 rows, 3 run(s), 2 CPUs, 2026-11-30 00:57:55 UTC'
set style fill solid 0.85 border -1
set grid ytics
set key inside top right vertical opaque
set bmargin 3.5
set origin 0, 0.48
set size 1, 0.47
set xrange [-0.6:12.6]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set xtics nomirror ("1\nheap+PK" 0, "2\nheap unlogged" 1, "3\ntcopy" 2, "3f\nfields off" 3, "3p\nprotobuf" 4, "4\npb malloc" 5, "5\nhook off" 6, "6\nnull:" 7, "6f\nnull: f.off" 8, "6p\nnull: pb" 9, "7a\ntcopy tcm" 10, "7b\nmalloc tcm" 11, "8\nreader" 12)
set ylabel 'thousand rows/s'
set title 'Throughput: median; error bars from min to max over the runs'
set boxwidth 0.266666666666667
plot '/work/main/bench/results/chart_throughput.dat' using ($1 == 0 ? $2 : NaN):3 with boxes lc rgb '#4477aa' title 'accounts', \
     '/work/main/bench/results/chart_throughput.dat' using ($1 == 0 ? $2 : NaN):3:4:5 with yerrorbars lc rgb 'black' pt 0 notitle, \
     '/work/main/bench/results/chart_throughput.dat' using ($1 == 1 ? $2 : NaN):3 with boxes lc rgb '#ee6677' title 'shuffled', \
     '/work/main/bench/results/chart_throughput.dat' using ($1 == 1 ? $2 : NaN):3:4:5 with yerrorbars lc rgb 'black' pt 0 notitle, \
     '/work/main/bench/results/chart_throughput.dat' using ($1 == 2 ? $2 : NaN):3 with boxes lc rgb '#228833' title 'mixed', \
     '/work/main/bench/results/chart_throughput.dat' using ($1 == 2 ? $2 : NaN):3:4:5 with yerrorbars lc rgb 'black' pt 0 notitle
set origin 0, 0
set size 1, 0.47
set key inside top left vertical opaque
set offsets 0, 0, graph 0.1, 0
set title 'Peak memory during the COPY (accounts dataset; the first dataset a case ran on)'
set ylabel 'MB'
set boxwidth 0.4
plot '/work/main/bench/results/chart_memory.dat' using 1:2 with boxes lc rgb '#4477aa' title 'backend peak RssAnon (sampled)', \
     '' using 1:2:(sprintf('%.0f', $2)) with labels offset 0,0.7 notitle, \
     '' using 3:4 with boxes lc rgb '#ccbb44' title 'tserver peak RSS (VmHWM)', \
     '' using 3:4:(sprintf('%.0f', $4)) with labels offset 0,0.7 notitle
unset multiplot
