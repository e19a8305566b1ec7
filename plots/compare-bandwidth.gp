# plots/compare-bandwidth.gp RESULTS_ROOT — memory bandwidth across
# machines: triad GB/s against the array size for every
# results/<machine>/bandwidth.csv, fp32 solid and fp16 dashed (the same bytes
# per second: the lines of one machine should lie together), one colour per
# machine. Writes RESULTS_ROOT/compare-bandwidth.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
root = ARG1
machines = system(sprintf("for d in '%s'/*/; do [ -f \"$d/bandwidth.csv\" ] && basename \"$d\"; done | tr '\\n' ' '", root))
if (words(machines) < 2) {
  print sprintf("compare-bandwidth.gp: fewer than two machines with bandwidth.csv under %s: no chart", root)
  exit
}
rows(file, cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, file)
array color[8]
do for [i=1:8] { color[i] = cat_color(i) }

set datafile separator ','
set datafile columnheaders
eval png(1280, 800)
set output root.'/compare-bandwidth.png'
set title "Triad bandwidth across machines (BabelStream bytes, median GB/s)\n{solid: fp32; dashed: fp16}"
set xlabel 'array size (MiB, each of the three arrays)'
set ylabel 'GB/s (10^9 bytes/s)'
set logscale x 2
set logscale y 10
set format y '%g'
set grid back lc rgb '#dddddd'
set border 3
set xtics nomirror
set ytics nomirror
set key outside bottom center horizontal nobox noopaque samplen 3
cmd = ''
do for [i=1:words(machines)] {
  f = root.'/'.word(machines, i).'/bandwidth.csv'
  c = color[(i - 1) % 8 + 1]
  cmd = cmd.sprintf("%s rows('%s', '$c[\"kernel\"] == \"triad\" && $c[\"dtype\"] == \"fp32\"') using (column('array_bytes') / 1048576.0):(column('gb_per_s')) with linespoints pt 7 ps 0.7 lw 2 lc rgb '%s' title '%s fp32'", \
                    cmd eq '' ? '' : ',', f, c, word(machines, i))
  cmd = cmd.sprintf(", rows('%s', '$c[\"kernel\"] == \"triad\" && $c[\"dtype\"] == \"fp16\"') using (column('array_bytes') / 1048576.0):(column('gb_per_s')) with linespoints dt 2 pt 6 ps 0.7 lw 1.5 lc rgb '%s' title '%s fp16'", \
                    f, c, word(machines, i))
}
eval('plot '.cmd)
eval svg(1280, 800)
set output root.'/compare-bandwidth.svg'
replot
unset output
