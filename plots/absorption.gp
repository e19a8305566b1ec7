# plots/absorption.gp RESULTS_DIR — what is left of an update u added to 1:
# the effective update fl(1 + u) - 1 against the intended u, on log-log axes,
# for fp32, fp16 and bf16. Updates that vanish entirely are drawn on the row
# at the bottom. Reads absorption_sweep.csv; writes absorption.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/absorption_sweep.csv'
if (!file_exists(in)) {
  print sprintf("absorption.gp: %s not found: no chart (run halflab-numerics absorption)", in)
  exit
}
# awk over a halflab CSV's rows (VARS: its -v options), c["name"] the index of each column
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
dev = system(sprintf("%s$c[\"device\"] == \"cuda\" { g = 1 } END { print g ? \"cuda\" : \"cpu\" }' '%s'", awk_cols(''), in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[3] = ["fp32", "fp16", "bf16"]
array color[3] = [c_fp32, c_fp16, c_bf16]
array half_eps[3] = [2**-24, 2**-11, 2**-8]   # updates up to this are lost at 1 (u = epsilon/2 is a tie, to even)
array lost_row[3] = [2**-33.5, 2**-34.5, 2**-35.5]

eval png(1280, 800)
set output dir.'/absorption.png'
set title sprintf("1 + u in each format: the update that survives, fl(1 + u) - 1, against the intended u\n{%s; u from 2^{-30} to 1; the bottom rows mark updates lost entirely}", desc)
set xlabel 'intended update u'
set ylabel 'effective update fl(1 + u) - 1'
set logscale xy 2
set format x '2^{%L}'
set format y '2^{%L}'
set xtics 4
set ytics 2**-32, 4, 2   # none in the rows of lost updates
set xrange [2**-30:1]
set yrange [2**-36.3:2]
set grid back lc rgb '#dddddd'
set border 3
set xtics nomirror
set ytics nomirror
set key top left nobox noopaque spacing 1.2 width 1

set arrow 1 from graph 0, first 2**-32.8 to graph 1, first 2**-32.8 nohead lw 1 lc rgb '#bbbbbb' back
set label 1 'lost: fl(1 + u) = 1' at graph 0.99, first 2**-32.2 right tc rgb '#444444'
do for [i=1:3] {
  set arrow 10 + i from first half_eps[i], graph 0 to first half_eps[i], graph 1 nohead dt 3 lw 1.5 lc rgb color[i] back
  set label 10 + i sprintf("%s: u ≤ 2^{%d} lost", id[i], int(log(half_eps[i]) / log(2) - 0.5)) \
      at first half_eps[i], graph 0.55 rotate by 90 offset -0.8, 0 center tc rgb color[i]
}

is(s) = strcol("device") eq dev && strcol("format") eq s
plot x with lines dt 2 lw 1.5 lc rgb '#999999' title 'nothing lost (effective = intended)', \
     for [i=1:3] in using (column("update")):(is(id[i]) && column("effective_update") > 0 ? column("effective_update") : 1/0) \
       with linespoints pt 7 ps 0.5 lw 2 lc rgb color[i] title id[i], \
     for [i=1:3] in using (column("update")):(is(id[i]) && column("effective_update") == 0 ? lost_row[i] : 1/0) \
       with points pt 7 ps 0.5 lc rgb color[i] notitle

eval svg(1280, 800)
set output dir.'/absorption.svg'
replot
unset output
