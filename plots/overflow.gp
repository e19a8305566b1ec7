# plots/overflow.gp RESULTS_DIR — the running sum of N copies of V (the
# classic 4096 x 16) after each element, for the seven ways of summing that
# halflab-numerics overflow measures, with fp16's largest value marked.
# Every line is labelled where it runs (no legend). Reads
# overflow_trajectory.csv (and overflow.csv for where a sum got stuck);
# writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/overflow_trajectory.csv')
if (!file_exists(in)) {
  print sprintf("overflow.gp: %s not found: no chart (run halflab-numerics overflow)", in)
  exit
}
# the GPU's rows when the file has them (they equal the CPU's; the gpu suite checks)
# awk over a halflab CSV's rows (VARS: its -v options), c["name"] the index of each column
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
dev = system(sprintf("%s$c[\"device\"] == \"cuda\" { g = 1 } END { print g ? \"cuda\" : \"cpu\" }' '%s'", awk_cols(''), in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))
# the run's build and date, for the screen footer
run_of(f) = system(sprintf("sed -n 's/^# \\(halflab .*\\)/\\1/p; s/^# date: \\(.\\{10\\}\\).*/\\1/p' '%s' | paste -sd, - | sed 's/,/, /g'", f))
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
array long_name[7] = ["fp32 accumulator", "fp16 pairwise (tree)", "fp16 data, fp32 accumulator, fp16 result", \
                      "fp16 Kahan-compensated", "bf16 pairwise (tree)", "fp16 sequential", "bf16 sequential"]
array short_name[7] = ["fp32", "fp16 tree", "fp32 acc., fp16 result", "fp16 Kahan", "bf16 tree", "fp16 seq.", "bf16 seq."]
name(i) = narrow ? short_name[i] : long_name[i]
array color[7]
do for [i=1:7] { color[i] = fcolor(id[i]) }
# solid: fp32 alone; a dash per way of summing (sequential, tree, fp32 accumulator, Kahan)
array dash[7] = [1, 4, 5, 3, 4, 2, 2]
array point[7] = [7, 9, 5, 11, 9, 7, 7]
# a strategy whose every finite running sum is exact (adds x value) lies on the
# one diagonal: drawn once, with the list of them, rather than as five lines on top of each other
exact_on_diag(s) = system(sprintf("%s$c[\"device\"] == d && $c[\"strategy\"] == s && $c[\"running_sum\"] !~ /(inf|nan)/ && $c[\"running_sum\"] + 0 != $c[\"adds\"] * $c[\"value\"] { bad = 1 } END { print bad ? 0 : 1 }' '%s'", awk_cols(sprintf('-v d=%s -v s=%s', dev, s)), in)) eq "1"
array exact[7]
do for [i=1:7] { exact[i] = exact_on_diag(id[i]) }
# the element where a strategy's sum first became inf, and first NaN (0: never)
first_of(s, what) = int(real(system(sprintf("%s$c[\"device\"] == d && $c[\"strategy\"] == s && $c[\"running_sum\"] ~ /%s/ && !f { f = $c[\"adds\"] } END { print f + 0 }' '%s'", awk_cols(sprintf('-v d=%s -v s=%s', dev, s)), what, in))))

# one row above the curves for each strategy that reaches inf or NaN
count_rows(s, what) = int(system(sprintf("%s$c[\"device\"] == d && $c[\"strategy\"] == s && $c[\"running_sum\"] ~ /^-?%s$/ { n++ } END { print n + 0 }' '%s'", awk_cols(sprintf('-v d=%s -v s=%s', dev, s)), what, in)))
array row[7]
array first_inf[7]
array first_nan[7]
nrow = 0
do for [i=1:7] {
  ninf = count_rows(id[i], "inf")
  nnan = count_rows(id[i], "nan")
  first_inf[i] = ninf > 0 ? first_of(id[i], 'inf') : 0
  first_nan[i] = nnan > 0 ? first_of(id[i], 'nan') : 0
  row[i] = 0
  if (ninf + nnan > 0) {
    nrow = nrow + 1
    row[i] = nrow
  }
}
event(i) = first_inf[i] > 0 ? (first_nan[i] > 0 ? sprintf(narrow ? "inf at %d, NaN %d" : "inf at element %d, NaN from %d", first_inf[i], first_nan[i]) : \
                                                   sprintf(narrow ? "inf from %d" : "inf from element %d", first_inf[i])) : \
                              sprintf(narrow ? "NaN from %d" : "NaN from element %d", first_nan[i])

# The claim (slides and print titles): which families overflowed, from the rows above
f16_over = 0
f16_total = 0
do for [i=1:7] { if (family(id[i]) eq 'fp16') { f16_total = f16_total + 1; f16_over = f16_over + (row[i] > 0) } }
f32_over = row[1] > 0
exact_sum = sprintf("%.9g", real(count) * real(value))
claim_wide = f16_over > 0 ? sprintf("%s x %s = %s: %d of %d fp16 sums overflow, fp32 %s", count, value, exact_sum, \
                                    f16_over, f16_total, f32_over ? "too" : "does not") : \
                            sprintf("%s x %s = %s fits in fp16 (max 65504): no sum overflows", count, value, exact_sum)
claim_narrow = f16_over > 0 ? sprintf("%s x %s: fp16 overflows, fp32 %s", count, value, f32_over ? "too" : "does not") : \
                              sprintf("%s x %s: no fp16 sum overflows", count, value)

# where a sequential sum gets stuck (from overflow.csv, when present)
summary = as_written(dir.'/overflow.csv')
# (an empty first_lost_add, or 0 in files written before empty cells, means none was lost)
stuck(s, col) = system(sprintf("test -f '%s' && %s$c[\"device\"] == d && $c[\"count\"] == n && $c[\"value\"] == v && $c[\"strategy\"] == s { print $c[\"%s\"]; exit }' '%s'", \
                               summary, awk_cols(sprintf('-v d=%s -v n=%s -v v=%s -v s=%s', dev, count, value, s)), col, summary))
array stuck_y[7]
array stuck_at[7]
array stuck_total[7]
do for [i=6:7] {
  stuck_at[i] = stuck(id[i], 'first_lost_add')
  stuck_total[i] = stuck(id[i], 'total_at_lost')
  stuck_y[i] = (stuck_at[i] ne "" && stuck_at[i] ne "0") ? abs(real(stuck_total[i])) : -1
}
close = stuck_y[6] >= 0 && stuck_y[7] >= 0 && abs(stuck_y[6] - stuck_y[7]) < 0.06 * top

is(s) = strcol("device") eq dev && strcol("strategy") eq s
finite(s) = is(s) && strcol("running_sum") ne "inf" && strcol("running_sum") ne "-inf" \
            && strcol("running_sum") ne "nan" && strcol("running_sum") ne "-nan"
array first_bad_at[7]
do for [i=1:7] { first_bad_at[i] = first_inf[i] > 0 ? first_inf[i] : first_nan[i] }

footer = desc.'; '.run_of(in)
narrow_aspect = 1.0
do for [out_i=1:out_n] {
  unset label
  unset arrow
  eval out_open(dir, 'overflow', 1280, 800, out_i)
  # the rows for inf and NaN, 1.45 lines of text apart (the plot takes about 0.75 of the height)
  band = top * 1.06
  row_k = 1.45 * 1.6 * cur_pt / cur_h / 0.75
  ytop = nrow > 0 ? (band + top * 0.02) / (1 - nrow * row_k) : top * 1.08
  step = row_k * ytop
  row_y(i) = band + (row[i] - 0.5) * step
  set title title_of(sprintf("Summing %s copies of %s: the running sum after each element, seven ways\nfp16 holds at most 65504 and rounds to inf from 65520", count, value), \
                     narrow ? claim_narrow : claim_wide)
  set xlabel 'elements added'
  set ylabel negative ? 'running sum (magnitude)' : 'running sum'
  set xrange [0:count + 0]
  set yrange [0:ytop]
  set format y '%.0f'
  tic = 10**floor(log10(top / (narrow ? 3.0 : 5.0)))
  tic = tic * (top / (narrow ? 3.0 : 5.0) / tic >= 5 ? 5 : top / (narrow ? 3.0 : 5.0) / tic >= 2 ? 2 : 1)
  set ytics 0, tic, top   # none in the rows for inf and NaN
  if (narrow) { set xtics 1000 } else { set xtics autofreq }
  unset key   # each line is labelled where it runs
  eval 'set grid xtics ytics '.grid_opts

  if (fp16max < top * 1.02) {
    set arrow 1 from graph 0, first fp16max to graph 1, first fp16max nohead dt 2 lw 2 lc rgb '#888888' back
    set label 1 'fp16 max 65504' at graph 0.01, first fp16max offset 0, -0.8 left tc rgb '#666666'
  }
  if (nrow > 0) {
    set arrow 2 from graph 0, first band to graph 1, first band nohead lw 1 lc rgb '#bbbbbb' back
    do for [i=1:7] {
      if (row[i] > 0) {
        set label 10 + i sprintf("%s: %s", name(i), event(i)) at graph 0.01, first row_y(i) left tc rgb color[i]
      }
    }
  }
  # the exact diagonal's strategies: wrapped into short lines on a narrow page
  names_finite = ''
  names_until_inf = ''
  len_ = 0
  do for [pass_=1:2] {
    do for [i=1:7] {
      if (exact[i] && (pass_ == 1 ? row[i] == 0 : row[i] > 0)) {
        s_ = (pass_ == 1 ? names_finite : names_until_inf)
        brk_ = s_ ne '' && len_ + strlen(name(i)) > (narrow ? 22 : 55)
        s_ = s_.(s_ eq '' ? '' : (brk_ ? ",\n  " : ', ')).name(i)
        len_ = brk_ ? strlen(name(i)) : len_ + strlen(name(i)) + 2
        if (pass_ == 1) { names_finite = s_ } else { names_until_inf = s_ }
      }
    }
    len_ = narrow ? 11 : 17
  }
  if (names_finite.names_until_inf ne '') {
    set label 20 sprintf("%s%s%s", narrow ? "black line: the exact sum" : sprintf("on the black line, the exact sum (adds x %s):", value), \
        names_finite eq '' ? '' : "\n  ".names_finite, names_until_inf eq '' ? '' : (narrow ? "\n  until inf: " : "\n  until their inf: ").names_until_inf) \
        at graph 0.02, first (fp16max < top * 1.02 ? fp16max : top) offset 0, -2.2 left tc rgb c_fp32
  }
  # where a sequential sum gets stuck: a label at the right, below its line where the diagonal leaves
  # room (high up), above it near the floor; stacked when the two sums sit close together
  do for [i=6:7] {
    if (stuck_y[i] >= 0) {
      below = !close && stuck_y[i] > 0.3 * top
      # one line where it ends right of the diagonal (its width estimated from the font), else two
      # (centred on their anchor)
      one_ = sprintf("%s stuck at %s from element %s on", name(i), stuck_total[i], stuck_at[i])
      two_ = !narrow && strlen(one_) * 0.55 * cur_pt * 4 / 3 / (0.85 * cur_w) > 0.93 - stuck_y[i] / (real(count) * abs(real(value)))
      lift = close ? (stuck_y[i] >= stuck_y[13 - i] ? 3.0 : 1.6) * (narrow || two_ ? 1.4 : 1) : \
                     (narrow || two_ ? (below ? -1.8 : 1.8) : (below ? -1.0 : 0.8))
      lab_ = narrow ? sprintf("%s stuck\nat %s from %s", name(i), stuck_total[i], stuck_at[i]) : \
             two_ ? sprintf("%s stuck at %s\nfrom element %s on", name(i), stuck_total[i], stuck_at[i]) : one_
      set label 30 + i lab_ at graph 0.99, first stuck_y[i] offset 0, lift right tc rgb color[i]
    }
  }

  # the diagonal once; the strategies off it as lines; one marker per strategy where its sum first left the finite range
  plot in using (column("adds")):(finite(id[1]) ? abs(column("running_sum")) : 1/0) with lines lw 3 lc rgb c_fp32 \
         notitle, \
       for [i=2:7] in using (column("adds")):(!exact[i] && finite(id[i]) ? abs(column("running_sum")) : 1/0) \
         with lines lw 3 dt dash[i] lc rgb color[i] notitle, \
       for [i=1:7] in using (column("adds")):(first_bad_at[i] > 0 && is(id[i]) && column("adds") == first_bad_at[i] ? row_y(i) : 1/0) \
         with points pt point[i] ps (preset eq 'print' ? 1.2 : preset eq 'slides' ? 3 : 2.5) lw 2 lc rgb color[i] notitle
}
unset output
