# plots/loss_scale.gp RESULTS_DIR — loss scaling: a sample of gradient
# magnitudes spread over 2^-40 ... 2^-8, multiplied by S = 2^s and stored in
# fp16; the share that becomes zero, subnormal, normal or inf for each S.
# Reads loss_scale_distribution.csv; writes loss_scale.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/loss_scale_distribution.csv'
if (!file_exists(in)) {
  print sprintf("loss_scale.gp: %s not found: no chart (run halflab-numerics subnormal)", in)
  exit
}
# awk over a halflab CSV's rows (VARS: its -v options), c["name"] the index of each column
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
dev = system(sprintf("%s$c[\"device\"] == \"cuda\" { g = 1 } END { print g ? \"cuda\" : \"cpu\" }' '%s'", awk_cols(''), in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))
n = system(sprintf("%s$c[\"device\"] == d { print $c[\"gradients\"]; exit }' '%s'", awk_cols('-v d='.dev), in))
# the largest scale at which nothing overflows
best = int(system(sprintf("%s$c[\"device\"] == d && $c[\"frac_overflow\"] == 0 { s = $c[\"scale_log2\"] } END { print s + 0 }' '%s'", awk_cols('-v d='.dev), in)))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

eval png(1280, 800)
set output dir.'/loss_scale.png'
set title sprintf("Loss scaling: %s gradients spread evenly in log_2 over 2^{-40} ... 2^{-8}, multiplied by S and stored in fp16\n{%s; no S fits their 32 octaves into fp16's 30 (2^{-14} ... 65504)}", n, desc)
set xlabel 'loss scale S'
set ylabel 'share of the gradients (%)'
set xrange [0:32]
set yrange [0:105]
set xtics 0, 4, 32
set format x '2^{%.0f}'
set ytics 0, 20, 100
set border 3
set xtics nomirror
set ytics nomirror
set grid back lc rgb '#dddddd'
set key top left nobox noopaque spacing 1.2 width 1

set arrow 1 from first 16, graph 0 to first 16, graph 1 nohead dt 3 lw 1.5 lc rgb '#666666' back
set label 1 "PyTorch GradScaler's\ninitial scale 2^{16}" at first 16, graph 0.93 center offset 0, 0 tc rgb '#444444'
set arrow 2 from first best, graph 0 to first best, graph 1 nohead dt 2 lw 1.5 lc rgb cat_color(6) back
set label 2 sprintf("largest S without\noverflow: 2^{%d}", best) at first best, graph 0.50 right offset -0.8, 0 tc rgb cat_color(6)

is(x) = strcol("device") eq dev
plot in using (column("scale_log2")):(is(0) ? 100 * column("frac_normal") : 1/0) with linespoints pt 7 ps 0.8 lw 3 lc rgb cat_color(6) title 'normal (full precision)', \
     in using (column("scale_log2")):(is(0) ? 100 * column("frac_subnormal") : 1/0) with linespoints pt 7 ps 0.8 lw 3 lc rgb cat_color(1) title 'subnormal (precision lost)', \
     in using (column("scale_log2")):(is(0) ? 100 * column("frac_zero") : 1/0) with linespoints pt 7 ps 0.8 lw 3 lc rgb cat_color(3) title 'zero (gradient lost)', \
     in using (column("scale_log2")):(is(0) ? 100 * column("frac_overflow") : 1/0) with linespoints pt 7 ps 0.8 lw 3 lc rgb cat_color(4) title 'inf (the step is skipped)'

eval svg(1280, 800)
set output dir.'/loss_scale.svg'
replot
unset output
