# plots/bandwidth-host.gp RESULTS_DIR — host<->device copies on a GPU
# machine: GB/s against size, host to device and back, from pageable
# (malloc) and from page-locked (cudaMallocHost) host memory.
# Reads bandwidth_host.csv (GPU runs only); writes bandwidth-host.png/.svg.
dir = ARG1
in = dir.'/bandwidth_host.csv'
if (system(sprintf("test -f '%s' && echo 1 || echo 0", in)) eq "0") {
  print sprintf("bandwidth-host.gp: %s not found: no chart (written by halflab-bench bandwidth on a GPU)", in)
  exit
}
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", in))  # '_' would start a subscript

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

set terminal pngcairo size 1280,800 enhanced font 'Sans,12'
set output dir.'/bandwidth-host.png'
set title sprintf("Host <-> device copies: pageable against page-locked host memory\n{/*0.8 %s}", desc)
set xlabel 'copy size (MiB)'
set ylabel 'GB/s (10^9 bytes/s, one direction)'
set logscale x 2
set grid back lc rgb '#dddddd'
set border 3
set xtics nomirror
set ytics nomirror
set yrange [0:*]
set key top left box opaque spacing 1.2
mib(b) = b / 1048576.0
# the header and the rows where an awk condition holds (columns by name: $c["variant"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
is(d, m) = rows(sprintf('$c["direction"] == "%s" && $c["memory"] == "%s"', d, m))
plot is('h2d', 'pinned') using (mib(column('bytes'))):(column('gbps')) with linespoints pt 7 lw 2 lc rgb '#D55E00' title 'host to device, pinned', \
     is('h2d', 'pageable') using (mib(column('bytes'))):(column('gbps')) with linespoints pt 6 dt 2 lw 2 lc rgb '#D55E00' title 'host to device, pageable', \
     is('d2h', 'pinned') using (mib(column('bytes'))):(column('gbps')) with linespoints pt 7 lw 2 lc rgb '#0072B2' title 'device to host, pinned', \
     is('d2h', 'pageable') using (mib(column('bytes'))):(column('gbps')) with linespoints pt 6 dt 2 lw 2 lc rgb '#0072B2' title 'device to host, pageable'

set terminal svg size 1280,800 enhanced font 'Sans,12' background rgb 'white'
set output dir.'/bandwidth-host.svg'
replot
unset output
