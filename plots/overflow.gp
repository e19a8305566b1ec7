# plots/overflow.gp RESULTS_DIR — the running sum of N copies of V (the
# seed's 4096 x 16) after each element, for the seven ways of summing that
# halflab-numerics overflow measures, with fp16's largest value marked.
# Reads overflow_trajectory.csv; writes overflow.png and overflow.svg.
dir = ARG1
in = dir.'/overflow_trajectory.csv'
if (system(sprintf("test -f '%s' && echo 1 || echo 0", in)) eq "0") {
  print sprintf("overflow.gp: %s not found: no chart (run halflab-numerics overflow)", in)
  exit
}
# the GPU's rows when the file has them (they equal the CPU's; the gpu suite checks)
dev = system(sprintf("grep -q '^cuda,' '%s' && echo cuda || echo cpu", in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))
count = system(sprintf("grep -m1 '^%s,' '%s' | cut -d, -f2", dev, in))
value = system(sprintf("grep -m1 '^%s,' '%s' | cut -d, -f3", dev, in))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

# largest finite running sum, to place the rows for inf and NaN above it
stats in using (strcol("device") eq dev && strcol("running_sum") ne "inf" && strcol("running_sum") ne "-inf" \
                && strcol("running_sum") ne "nan" && strcol("running_sum") ne "-nan" ? abs(column("running_sum")) : 1/0) \
      name "S" nooutput
fp16max = 65504.0
top = S_max
if (fp16max < 2.5 * S_max && fp16max > top) top = fp16max
negative = value[1:1] eq "-"

array id[7] = ["fp32", "fp16_pairwise", "fp32_acc_fp16_result", "fp16_kahan", "bf16_pairwise", "fp16_sequential", "bf16_sequential"]
array name[7] = ["fp32 accumulator", "fp16 pairwise (tree)", "fp16 data, fp32 accumulator, fp16 result", \
                 "fp16 Kahan-compensated", "bf16 pairwise (tree)", "fp16 sequential", "bf16 sequential"]
array color[7] = ['#000000', '#0072B2', '#CC79A7', '#009E73', '#56B4E9', '#D55E00', '#E69F00']
array dash[7] = [1, 2, 4, 5, 3, 1, 1]
array width[7] = [6, 3, 3, 3, 2, 3, 3]

# one row above the curves for each strategy that reaches inf or NaN
count_rows(s, what) = int(system(sprintf("grep -c '^%s,[^,]*,[^,]*,%s,[^,]*,-\\?%s$' '%s'", dev, s, what, in)))
array row[7]
array event[7]
nrow = 0
do for [i=1:7] {
  ninf = count_rows(id[i], "inf")
  nnan = count_rows(id[i], "nan")
  row[i] = 0
  if (ninf + nnan > 0) {
    nrow = nrow + 1
    row[i] = nrow
    event[i] = ninf > 0 ? (nnan > 0 ? "inf, then NaN" : "inf") : "NaN"
  }
}
band = top * 1.06
step = top * 0.055
row_y(i) = band + (row[i] - 0.5) * step
ytop = nrow > 0 ? band + nrow * step + top * 0.02 : top * 1.08

set terminal pngcairo size 1280,800 enhanced font 'Sans,12'
set output dir.'/overflow.png'
set title sprintf("Summing %s copies of %s: the running sum after each element, seven ways\n{/*0.8 %s; fp16 holds at most 65504 and rounds to inf from 65520}", count, value, desc)
set xlabel 'elements added'
set ylabel negative ? 'running sum (magnitude)' : 'running sum'
set xrange [0:count + 0]
set yrange [0:ytop]
set format y '%.0f'
tic = 10**floor(log10(top / 5.0))
tic = tic * (top / 5.0 / tic >= 5 ? 5 : top / 5.0 / tic >= 2 ? 2 : 1)
set ytics 0, tic, top   # none in the rows for inf and NaN
set grid back lc rgb '#dddddd'
set key at graph 0.98, graph 0.36 right top box opaque spacing 1.2 width 1 samplen 5
set border 3
set xtics nomirror
set ytics nomirror

if (fp16max < top * 1.02) {
  set arrow 1 from graph 0, first fp16max to graph 1, first fp16max nohead dt 2 lw 2 lc rgb '#888888' back
  set label 1 'fp16 max 65504' at graph 0.01, first fp16max offset 0, -0.8 left tc rgb '#666666'
}
if (nrow > 0) {
  set arrow 2 from graph 0, first band to graph 1, first band nohead lw 1 lc rgb '#bbbbbb' back
  do for [i=1:7] {
    if (row[i] > 0) {
      set label 10 + i sprintf("%s: %s", name[i], event[i]) at graph 0.01, first row_y(i) left tc rgb color[i]
    }
  }
}

# where a sequential sum gets stuck (from overflow.csv, when present)
summary = dir.'/overflow.csv'
stuck(s, col) = system(sprintf("test -f '%s' && grep -m1 '^%s,%s,%s,%s,' '%s' | cut -d, -f%d", \
                               summary, dev, count, value, s, summary, col))
# labels above each stuck sum, at the right; stacked when the two sums sit close together
array stuck_y[7]
do for [i=6:7] {
  at = stuck(id[i], 10)
  stuck_y[i] = (at ne "" && at ne "0") ? abs(real(stuck(id[i], 11))) : -1
}
close = stuck_y[6] >= 0 && stuck_y[7] >= 0 && abs(stuck_y[6] - stuck_y[7]) < 0.06 * top
do for [i=6:7] {
  if (stuck_y[i] >= 0) {
    lift = close ? (stuck_y[i] >= stuck_y[13 - i] ? 3.0 : 1.6) : 0.8
    set label 30 + i sprintf("%s stuck at %s from element %s on", name[i], stuck(id[i], 11), stuck(id[i], 10)) \
        at graph 0.99, first stuck_y[i] offset 0, lift right tc rgb color[i]
  }
}

is(s) = strcol("device") eq dev && strcol("strategy") eq s
finite(s) = is(s) && strcol("running_sum") ne "inf" && strcol("running_sum") ne "-inf" \
            && strcol("running_sum") ne "nan" && strcol("running_sum") ne "-nan"
nonfinite(s) = is(s) && !finite(s)
is_nan(s) = is(s) && (strcol("running_sum") eq "nan" || strcol("running_sum") eq "-nan")

plot for [i=1:7] in using (column("adds")):(finite(id[i]) ? abs(column("running_sum")) : 1/0) \
       with lines lw width[i] dt dash[i] lc rgb color[i] title name[i], \
     for [i=1:7] in using (column("adds")):(nonfinite(id[i]) ? row_y(i) : 1/0):(is_nan(id[i]) ? 2 : 9) \
       with points pt variable ps 2 lw 2 lc rgb color[i] notitle

set terminal svg size 1280,800 enhanced font 'Sans,12' background rgb 'white'
set output dir.'/overflow.svg'
replot
unset output
