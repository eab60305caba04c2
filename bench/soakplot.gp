# Plots a soak's samples (bench/gatewayload TestSoak, SWITCHBOARD_SOAK_CSV)
# as a PNG:  gnuplot -e "in='soak.csv'; out='soak.png'" bench/soakplot.gp
# Top: RSS and live heap after GC (MiB), goroutines on the right axis.
# Bottom: the database's size (it grows with the transcripts kept).
if (!exists("in")) in = 'soak.csv'
if (!exists("out")) out = 'soak.png'
set datafile separator ','
set terminal pngcairo size 900,600 font 'sans,10'
set output out
set multiplot layout 2,1 title 'switchboard under a constant mixed load (text, tools, asks decided later, new conversations that go idle)'
set xlabel 'minutes'
set grid
set key outside bottom center horizontal
set ylabel 'MiB'
set y2label 'goroutines (floor)'
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
plot in using ($1/60):2 skip 1 with lines lw 2 title 'RSS', \
     in using ($1/60):3 skip 1 with lines lw 2 title 'live heap after GC', \
     in using ($1/60):5 skip 1 axes x1y2 with lines lw 1 title 'goroutines'
unset y2label
unset y2tics
set ytics mirror
set ylabel 'database, MiB'
plot in using ($1/60):9 skip 1 with lines lw 1 dt 2 title 'database'
unset multiplot
