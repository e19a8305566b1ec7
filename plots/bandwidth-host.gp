# plots/bandwidth-host.gp RESULTS_DIR — host<->device copies on a GPU
# machine: GB/s against size, host to device and back, from pageable
# (malloc) and from page-locked (cudaMallocHost) host memory.
# Reads bandwidth_host.csv (GPU runs only); writes bandwidth-host.png/.svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/bandwidth_host.csv'
if (!file_exists(in)) {
  print sprintf("bandwidth-host.gp: %s not found: no chart (written by halflab-bench bandwidth on a GPU)", in)
  exit
}
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", in))  # '_' would start a subscript

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

eval png(1280, 800)
set output dir.'/bandwidth-host.png'
set title sprintf("Host <-> device copies: pageable against page-locked host memory\n{%s}", desc)
set xlabel 'copy size (MiB)'
set ylabel 'GB/s (10^9 bytes/s, one direction)'
set logscale x 2
set grid back lc rgb '#dddddd'
set border 3
set xtics nomirror
set ytics nomirror
set yrange [0:*]
set key outside bottom center horizontal nobox noopaque samplen 3 maxrows 2
mib(b) = b / 1048576.0
# the header and the rows where an awk condition holds (columns by name: $c["variant"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
is(d, m) = rows(sprintf('$c["direction"] == "%s" && $c["memory"] == "%s"', d, m))
plot is('h2d', 'pinned') using (mib(column('bytes'))):(column('gb_per_s')) with linespoints pt 7 lw 2 lc rgb cat_color(1) title 'host to device, pinned', \
     is('h2d', 'pageable') using (mib(column('bytes'))):(column('gb_per_s')) with linespoints pt 6 dt 2 lw 2 lc rgb cat_color(1) title 'host to device, pageable', \
     is('d2h', 'pinned') using (mib(column('bytes'))):(column('gb_per_s')) with linespoints pt 7 lw 2 lc rgb cat_color(6) title 'device to host, pinned', \
     is('d2h', 'pageable') using (mib(column('bytes'))):(column('gb_per_s')) with linespoints pt 6 dt 2 lw 2 lc rgb cat_color(6) title 'device to host, pageable'

eval svg(1280, 800)
set output dir.'/bandwidth-host.svg'
replot
unset output
