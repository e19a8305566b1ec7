# plots/compare-gemm.gp RESULTS_ROOT — GEMM throughput across machines: for
# every results/<machine>/gemm.csv, fp16 (fp32 accumulate, solid) and fp32
# (dashed) TFLOP/s over the square sweep, one colour per machine, log axes.
# Writes RESULTS_ROOT/compare-gemm.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
root = ARG1
machines = system(sprintf("for d in '%s'/*/; do [ -f \"$d/gemm.csv\" ] && basename \"$d\"; done | tr '\\n' ' '", root))
if (words(machines) < 2) {
  print sprintf("compare-gemm.gp: fewer than two machines with gemm.csv under %s: no chart", root)
  exit
}
rows(file, cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, file)
array color[8]
do for [i=1:8] { color[i] = cat_color(i) }

set datafile separator ','
set datafile columnheaders
eval png(1280, 800)
set output root.'/compare-gemm.png'
set title "GEMM throughput across machines, n x n x n (median TFLOP/s)\n{solid: fp16 with fp32 accumulation; dashed: fp32}"
set xlabel 'matrix size n'
set ylabel 'TFLOP/s'
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
  f = root.'/'.word(machines, i).'/gemm.csv'
  c = color[(i - 1) % 8 + 1]
  cmd = cmd.sprintf("%s rows('%s', '$c[\"study\"] == \"square\" && $c[\"variant\"] == \"fp16\"') using (column('m')):(column('tflop_per_s')) with linespoints pt 7 ps 0.7 lw 2 lc rgb '%s' title '%s fp16'", \
                    cmd eq '' ? '' : ',', f, c, word(machines, i))
  cmd = cmd.sprintf(", rows('%s', '$c[\"study\"] == \"square\" && $c[\"variant\"] == \"fp32\"') using (column('m')):(column('tflop_per_s')) with linespoints dt 2 pt 6 ps 0.7 lw 1.5 lc rgb '%s' title '%s fp32'", \
                    f, c, word(machines, i))
}
eval('plot '.cmd)
eval svg(1280, 800)
set output root.'/compare-gemm.svg'
replot
unset output
