# plots/overflow.gp RESULTS_DIR — the running sum of N copies of V (the
# classic 4096 x 16) after each element, for the seven ways of summing that
# halflab-numerics overflow measures, with fp16's largest value marked.
# Reads overflow_trajectory.csv; writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/overflow_trajectory.csv'
if (!file_exists(in)) {
  print sprintf("overflow.gp: %s not found: no chart (run halflab-numerics overflow)", in)
  exit
}
# the GPU's rows when the file has them (they equal the CPU's; the gpu suite checks)
# awk over a halflab CSV's rows (VARS: its -v options), c["name"] the index of each column
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
dev = system(sprintf("%s$c[\"device\"] == \"cuda\" { g = 1 } END { print g ? \"cuda\" : \"cpu\" }' '%s'", awk_cols(''), in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))
count = system(sprintf("%s$c[\"device\"] == d { print $c[\"count\"]; exit }' '%s'", awk_cols('-v d='.dev), in))
value = system(sprintf("%s$c[\"device\"] == d { print $c[\"value\"]; exit }' '%s'", awk_cols('-v d='.dev), in))

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
array color[7]
do for [i=1:7] { color[i] = fcolor(id[i]) }
array dash[7] = [1, 2, 4, 5, 2, 1, 1]
array width[7] = [3, 3, 3, 3, 3, 3, 3]
array point[7] = [7, 9, 5, 11, 9, 7, 7]
# a strategy whose every finite running sum is exact (adds x value) lies on the
# one diagonal: drawn once, with the list of them, rather than as five lines on top of each other
exact_on_diag(s) = system(sprintf("%s$c[\"device\"] == d && $c[\"strategy\"] == s && $c[\"running_sum\"] !~ /(inf|nan)/ && $c[\"running_sum\"] + 0 != $c[\"adds\"] * $c[\"value\"] { bad = 1 } END { print bad ? 0 : 1 }' '%s'", awk_cols(sprintf('-v d=%s -v s=%s', dev, s)), in)) eq "1"
array exact[7]
diag_names = ''
do for [i=1:7] { exact[i] = exact_on_diag(id[i]); if (exact[i]) { diag_names = diag_names."\n  ".name[i] } }
# the element where a strategy's sum first became inf, and first NaN (0: never)
first_of(s, what) = int(real(system(sprintf("%s$c[\"device\"] == d && $c[\"strategy\"] == s && $c[\"running_sum\"] ~ /%s/ && !f { f = $c[\"adds\"] } END { print f + 0 }' '%s'", awk_cols(sprintf('-v d=%s -v s=%s', dev, s)), what, in))))

# one row above the curves for each strategy that reaches inf or NaN
count_rows(s, what) = int(system(sprintf("%s$c[\"device\"] == d && $c[\"strategy\"] == s && $c[\"running_sum\"] ~ /^-?%s$/ { n++ } END { print n + 0 }' '%s'", awk_cols(sprintf('-v d=%s -v s=%s', dev, s)), what, in)))
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
    fi = first_of(id[i], 'inf')
    fn = first_of(id[i], 'nan')
    event[i] = ninf > 0 ? (nnan > 0 ? sprintf("inf at element %d, NaN from %d", fi, fn) : sprintf("inf from element %d", fi)) : sprintf("NaN from element %d", fn)
  }
}
band = top * 1.06
step = top * 0.055
row_y(i) = band + (row[i] - 0.5) * step
ytop = nrow > 0 ? band + nrow * step + top * 0.02 : top * 1.08

footer = desc
eval out_open(dir, 'overflow', 1280, 800, 1)
set title title_of(sprintf("Summing %s copies of %s: the running sum after each element, seven ways\nfp16 holds at most 65504 and rounds to inf from 65520", count, value), \
                   sprintf("%s x %s overflows fp16 (max 65504); fp32 does not", count, value))
set xlabel 'elements added'
set ylabel negative ? 'running sum (magnitude)' : 'running sum'
set xrange [0:count + 0]
set yrange [0:ytop]
set format y '%.0f'
tic = 10**floor(log10(top / 5.0))
tic = tic * (top / 5.0 / tic >= 5 ? 5 : top / 5.0 / tic >= 2 ? 2 : 1)
set ytics 0, tic, top   # none in the rows for inf and NaN

unset key   # each line is labelled where it runs
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

# the exact diagonal, labelled with the strategies on it: those that stay finite, and those until their inf
fin_names = ''
inf_names = ''
comma = ', '
do for [i=1:7] {
  if (exact[i] && row[i] == 0) {
    fin_names = fin_names.(fin_names eq '' ? '' : comma).name[i]
  }
  if (exact[i] && row[i] > 0) {
    inf_names = inf_names.(inf_names eq '' ? '' : comma).name[i]
  }
}
if (fin_names.inf_names ne '') {
  set label 20 sprintf("on the black line, the exact sum (adds x %s):%s%s", value, fin_names eq '' ? '' : "\n  ".fin_names, \
      inf_names eq '' ? '' : "\n  until their inf: ".inf_names) at graph 0.02, graph 0.72 left tc rgb c_fp32
}
# where a sequential sum gets stuck (from overflow.csv, when present)
summary = dir.'/overflow.csv'
# (an empty first_lost_add, or 0 in files written before empty cells, means none was lost)
stuck(s, col) = system(sprintf("test -f '%s' && %s$c[\"device\"] == d && $c[\"count\"] == n && $c[\"value\"] == v && $c[\"strategy\"] == s { print $c[\"%s\"]; exit }' '%s'", \
                               summary, awk_cols(sprintf('-v d=%s -v n=%s -v v=%s -v s=%s', dev, count, value, s)), col, summary))
# labels above each stuck sum, at the right; stacked when the two sums sit close together
array stuck_y[7]
do for [i=6:7] {
  at = stuck(id[i], 'first_lost_add')
  stuck_y[i] = (at ne "" && at ne "0") ? abs(real(stuck(id[i], 'total_at_lost'))) : -1
}
close = stuck_y[6] >= 0 && stuck_y[7] >= 0 && abs(stuck_y[6] - stuck_y[7]) < 0.06 * top
do for [i=6:7] {
  if (stuck_y[i] >= 0) {
    lift = close ? (stuck_y[i] >= stuck_y[13 - i] ? 3.0 : 1.6) : 0.8
    set label 30 + i sprintf("%s stuck at %s from element %s on", name[i], stuck(id[i], 'total_at_lost'), stuck(id[i], 'first_lost_add')) \
        at graph 0.99, first stuck_y[i] offset 0, lift right tc rgb color[i]
  }
}

is(s) = strcol("device") eq dev && strcol("strategy") eq s
finite(s) = is(s) && strcol("running_sum") ne "inf" && strcol("running_sum") ne "-inf" \
            && strcol("running_sum") ne "nan" && strcol("running_sum") ne "-nan"
nonfinite(s) = is(s) && !finite(s)
is_nan(s) = is(s) && (strcol("running_sum") eq "nan" || strcol("running_sum") eq "-nan")

# the diagonal once; the strategies off it as lines; one marker per strategy where its sum first left the finite range
first_bad(s) = is(s) && !finite(s) && column("adds") == (first_of(s, 'inf') > 0 ? first_of(s, 'inf') : first_of(s, 'nan'))
array first_bad_at[7]
do for [i=1:7] { first_bad_at[i] = first_of(id[i], 'inf') > 0 ? first_of(id[i], 'inf') : first_of(id[i], 'nan') }
plot in using (column("adds")):(finite(id[1]) ? abs(column("running_sum")) : 1/0) with lines lw 3 lc rgb c_fp32 \
       notitle, \
     for [i=2:7] in using (column("adds")):(!exact[i] && finite(id[i]) ? abs(column("running_sum")) : 1/0) \
       with lines lw width[i] dt dash[i] lc rgb color[i] notitle, \
     for [i=1:7] in using (column("adds")):(first_bad_at[i] > 0 && is(id[i]) && column("adds") == first_bad_at[i] ? row_y(i) : 1/0) \
       with points pt point[i] ps 2.5 lw 2 lc rgb color[i] notitle

eval out_open(dir, 'overflow', 1280, 800, 2)
replot
unset output
