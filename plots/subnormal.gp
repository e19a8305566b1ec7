# plots/subnormal.gp RESULTS_DIR — the subnormal ladder: relative error of
# storing x = 2^-k, 1.5 x 2^-k and (4/3) x 2^-k (k = 10 ... 26) in fp16 and
# bf16, over fp16's normal, subnormal and zero zones, with the worst case of
# each format. Reads subnormal_ladder.csv; writes subnormal.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/subnormal_ladder.csv'
if (!file_exists(in)) {
  print sprintf("subnormal.gp: %s not found: no chart (run halflab-numerics subnormal)", in)
  exit
}
# awk over a halflab CSV's rows (VARS: its -v options), c["name"] the index of each column
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
dev = system(sprintf("%s$c[\"device\"] == \"cuda\" { g = 1 } END { print g ? \"cuda\" : \"cpu\" }' '%s'", awk_cols(''), in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

xlo = 2**-27.5
xhi = 2**-9.5
exact_row = 2e-6

eval png(1280, 800)
set output dir.'/subnormal.png'
set title sprintf("The subnormal ladder: relative error of storing x in fp16 and bf16\n{%s; each step down the subnormal range keeps one bit less}", desc)
set xlabel 'x'
set ylabel 'relative error |stored - x| / x'
set logscale x 2
set logscale y 10
set format x '2^{%L}'
set format y '10^{%L}'
set xtics 2
set ytics 1e-5, 10, 1
set xrange [xlo:xhi]
set yrange [8e-7:4]
set border 3
set xtics nomirror
set ytics nomirror
set grid back lc rgb '#dddddd'
set key at graph 0.99, graph 0.33 right top nobox noopaque spacing 1.1

# fp16's zones: x <= 2^-25 rounds to 0 (2^-25 itself is a tie, to even)
set object 1 rect from xlo, graph 0 to 2**-25, graph 1 fc rgb '#e8e8e8' fs solid 1.0 noborder behind
set object 2 rect from 2**-25, graph 0 to 2**-14, graph 1 fc rgb '#fff4c2' fs solid 1.0 noborder behind
set object 3 rect from 2**-14, graph 0 to xhi, graph 1 fc rgb '#e3f3e0' fs solid 1.0 noborder behind
set label 1 "fp16 zero\nzone:\nrounds\nto 0" at 2**-26.3, graph 0.55 center
set label 2 "fp16 subnormal zone: spacing stays 2^{-24}, so each halving of x loses a bit" at 2**-19.5, graph 0.96 center
set label 3 "fp16 normal zone\n11 significant bits" at 2**-11.8, graph 0.93 center
set label 4 'exact (error 0)' at graph 0.01, first exact_row offset 0, 0.9 left tc rgb '#444444'

# worst cases: half a spacing over x
fp16_worst(x) = x > 2**-14 ? 2**-11 : (x > 2**-25 ? 2**-25 / x : 1)
bf16_worst(x) = 2**-8

is(f, s) = strcol("device") eq dev && strcol("format") eq f && strcol("series") eq s
err(f, s) = is(f, s) && column("rel_error") > 0 ? column("rel_error") : 1/0
exact(f, s) = is(f, s) && column("rel_error") == 0 ? exact_row : 1/0

set samples 2000
plot fp16_worst(x) with lines dt 2 lw 2 lc rgb c_fp16 title 'fp16 worst case (half a spacing / x)', \
     bf16_worst(x) with lines dt 2 lw 2 lc rgb c_bf16 title 'bf16 worst case 2^{-8}', \
     in using (column("x")):(err("fp16", "4/3*2^-k")) with linespoints pt 7 ps 1.3 lw 2 lc rgb c_fp16 title 'fp16, x = (4/3) 2^{-k}', \
     in using (column("x")):(err("fp16", "1.5*2^-k")) with points pt 9 ps 1.5 lc rgb c_fp16 title 'fp16, x = 1.5 x 2^{-k}', \
     in using (column("x")):(err("fp16", "2^-k")) with points pt 5 ps 1.3 lc rgb c_fp16 title 'fp16, x = 2^{-k}', \
     in using (column("x")):(err("bf16", "4/3*2^-k")) with linespoints pt 7 ps 1.3 lw 2 lc rgb c_bf16 title 'bf16, x = (4/3) 2^{-k}', \
     in using (column("x")):(exact("fp16", "1.5*2^-k")) with points pt 9 ps 1.5 lc rgb c_fp16 notitle, \
     in using (column("x")):(exact("fp16", "2^-k")) with points pt 5 ps 1.3 lc rgb c_fp16 notitle

eval svg(1280, 800)
set output dir.'/subnormal.svg'
replot
unset output
