# plots/bandwidth-gelems.gp RESULTS_DIR — the point of half precision for
# memory-bound work: triad moves the same bytes per second in every type, so
# fp16 and bf16 stream about twice the elements per second of fp32 (dashed:
# exactly twice fp32). Reads bandwidth.csv; writes bandwidth-gelems.png/.svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/bandwidth.csv'
if (!file_exists(in)) {
  print sprintf("bandwidth-gelems.gp: %s not found: no chart (run halflab-bench bandwidth)", in)
  exit
}
if (system(sprintf("grep -q ',triad,' '%s' && echo 1 || echo 0", in)) eq "0") {
  print "bandwidth-gelems.gp: no triad rows in ".in.": no chart"
  exit
}
desc = device_of(in)

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

eval png(1280, 800)
set output dir.'/bandwidth-gelems.png'
set title sprintf("Triad a = b + s c: elements per second by type (same bytes/s, half the width, twice the elements)\n{%s}", desc)
set xlabel 'array size (MiB, each of the three arrays)'
set ylabel 'Gelem/s (elements moved per second / 10^9)'
set logscale x 2
set grid back lc rgb '#dddddd'
set border 3
set xtics nomirror
set ytics nomirror
set yrange [0:*]
set key outside bottom center horizontal nobox noopaque samplen 3
set bmargin 7
mib(b) = b / 1048576.0
# the header and the rows where an awk condition holds (columns by name: $c["variant"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
tri(t) = rows(sprintf('$c["kernel"] == "triad" && $c["dtype"] == "%s"', t))
plot tri('fp32') using (mib(column('array_bytes'))):(column('gelem_per_s')) with linespoints pt 7 lw 2 lc rgb c_fp32 title 'fp32', \
     tri('fp16') using (mib(column('array_bytes'))):(column('gelem_per_s')) with linespoints pt 5 lw 2 lc rgb c_fp16 title 'fp16', \
     tri('bf16') using (mib(column('array_bytes'))):(column('gelem_per_s')) with linespoints pt 9 lw 2 lc rgb c_bf16 title 'bf16', \
     tri('fp32') using (mib(column('array_bytes'))):(2 * column('gelem_per_s')) with lines dt 2 lw 1.5 lc rgb '#000000' title '2 x fp32'

eval svg(1280, 800)
set output dir.'/bandwidth-gelems.svg'
replot
unset output
