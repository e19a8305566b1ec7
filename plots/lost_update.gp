# plots/lost_update.gp RESULTS_DIR — the lost-update experiment: a weight of
# 1 receives N small updates (10000 of 0.0001), held five ways; above, the
# weight after each step against the exact sum of the updates; below, its
# distance from that sum. Reads lost_update.csv; writes the preset's two
# files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/lost_update.csv')
if (!file_exists(in)) {
  print sprintf("lost_update.gp: %s not found: no chart (run halflab-numerics absorption)", in)
  exit
}
# awk over a halflab CSV's rows (VARS: its -v options), c["name"] the index of each column
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
dev = system(sprintf("%s$c[\"device\"] == \"cuda\" { g = 1 } END { print g ? \"cuda\" : \"cpu\" }' '%s'", awk_cols(''), in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))
# the run's build and date, for the screen footer
run_of(f) = system(sprintf("sed -n 's/^# \\(halflab .*\\)/\\1/p; s/^# date: \\(.\\{10\\}\\).*/\\1/p' '%s' | paste -sd, - | sed 's/,/, /g'", f))
seed = system(sprintf("sed -n 's/^# seed: //p' '%s'", in))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[5] = ["fp32_master", "fp16_kahan", "fp16_stochastic", "fp16", "bf16"]
array long_name[5] = ["fp32 master weight (fp16 updates)", "fp16 weight + Kahan compensation", \
                      sprintf("fp16 weight, stochastic rounding (seed %s)", seed), "fp16 weight", "bf16 weight"]
array short_name[5] = ["fp32 master", "fp16 + Kahan", "fp16 stochastic", "fp16", "bf16"]
name(i) = narrow ? short_name[i] : long_name[i]
array color[5]
do for [i=1:5] { color[i] = fcolor(id[i]) }
# solid: the fp32 master alone; a dash per way of holding a 16-bit weight
array dash[5] = [1, 2, 4, 3, 2]
array width[5] = [2.5, 3, 2, 4, 2.5]

# a strategy's value of COL at its last step; the steps and the update (fp16's exact sum over them)
last_of(s, col) = system(sprintf("%s$c[\"device\"] == d && $c[\"strategy\"] == s && $c[\"step\"] + 0 >= m { m = $c[\"step\"] + 0; v = $c[col] } END { print v }' '%s'", \
                                 awk_cols(sprintf('-v d=%s -v s=%s -v col=%s', dev, s, col)), in))
steps = last_of('fp16', 'step')
update = (real(last_of('fp16', 'exact_weight')) - 1) / real(steps)
# the largest distance from the exact sum of a strategy, for the label
maxdev(s) = real(system(awk_cols(sprintf('-v d=%s -v s=%s', dev, s)). \
    "$c[\"device\"] == d && $c[\"strategy\"] == s { x = $c[\"weight\"] - $c[\"exact_weight\"]; if (x < 0) x = -x; if (x > m) m = x } END { printf \"%.17g\\n\", m + 0 }' '".in."'"))
dev_sr = maxdev('fp16_stochastic')
dev_kahan = maxdev('fp16_kahan')
# the strategies whose weight never moved, and the fp32 master's final weight
stuck = ''
do for [i=1:5] {
  if (real(last_of(id[i], 'weight')) == 1.0) { stuck = stuck.(stuck eq '' ? '' : ' and ').short_name[i] }
}
master_final = real(last_of('fp32_master', 'weight'))
claim_wide = stuck eq '' ? sprintf("1 + %s x %.2g: every weight moves; an fp32 master reaches %.3g", steps, update, master_final) : \
             sprintf("1 + %s x %.2g: %s weights stay at 1; an fp32 master reaches %.3g", steps, update, stuck, master_final)
claim_narrow = stuck eq '' ? sprintf("every weight moves; fp32 master: %.3g", master_final) : \
               sprintf("%s stay at 1; fp32 master: %.3g", stuck, master_final)
# the lower panel's range: the stochastic walk with room to spare, at least +-0.06
err_max = dev_sr * 1.3 > 0.06 ? dev_sr * 1.3 : 0.06

# leg_rows: the rows the legend strip will take (legend_strip's wrapping, repeated)
count_leg_rows = "t_ = 0; do for [k_=1:leg_n] { t_ = t_ + leg_w(k_) }; leg_rows = 1; x_ = t_ < 0.96 ? 0.5 - t_ / 2 : 0.02; do for [k_=1:leg_n] { if (x_ + leg_w(k_) > 0.99) { x_ = 0.02; leg_rows = leg_rows + 1 }; x_ = x_ + leg_w(k_) }"
is(s) = strcol("device") eq dev && strcol("strategy") eq s

footer = desc.'; '.run_of(in)
narrow_aspect = 1.15
do for [out_i=1:out_n] {
  unset label
  eval out_open(dir, 'lost_update', 1280, 900, out_i)
  lh = 1.6 * cur_pt / cur_h   # a line of text, as a fraction of the height
  ls_ = "with lines lw 6 lc rgb '#bbbbbb'"
  lt_ = narrow ? 'exact sum' : sprintf('exact: 1 + step x %.9g (%.2g in fp16)', update, update); eval legend_add
  do for [i=1:5] { ls_ = sprintf("with lines lw %g dt %d lc rgb '%s'", width[i], dash[i], color[i]); lt_ = name(i); eval legend_add }
  eval count_leg_rows
  foot = preset eq 'screen' ? 1.2 * lh : 0   # the footer's line
  bottom = foot + (leg_rows + 3.6) * lh
  top = 1 - (preset eq 'screen' ? 3.3 : 2.2) * lh
  split = bottom + 0.4 * (top - bottom - 1.2 * lh)
  set lmargin at screen 7.5 * cur_pt / cur_w
  set rmargin at screen narrow ? 0.94 : 0.97
  set multiplot

  # top: the weight
  set tmargin at screen top
  set bmargin at screen split + 1.2 * lh
  set title title_of(sprintf("The lost update: w = 1, then %s updates of %.2g, the weight held five ways\nfp16 and bf16 weights never move: %.2g is below half their spacing at 1", \
                             steps, update, update), narrow ? claim_narrow : claim_wide)
  set border 3
  set xtics nomirror
  if (narrow) { set xtics 5000 }
  set ytics nomirror 0.2
  eval 'set grid xtics ytics '.grid_opts
  unset key
  set xlabel ''
  set format x ''
  set ylabel 'weight'
  set xrange [0:steps + 0]
  set yrange [0.9:2.2]
  set format y '%.1f'
  if (stuck ne '') {
    set label 1 sprintf(narrow ? "%s: stuck at 1" : "%s weights: stuck at 1, every update lost", stuck) at graph 0.99, first 1 offset 0, 1 right tc rgb c_fp16
  }
  plot in using (column("step")):(is("fp16") ? column("exact_weight") : 1/0) with lines lw 6 lc rgb '#bbbbbb' notitle, \
       for [i=1:5] in using (column("step")):(is(id[i]) ? column("weight") : 1/0) \
         with lines lw width[i] dt dash[i] lc rgb color[i] notitle
  unset label 1
  unset label 9999   # the footer: drawn once

  # bottom: the error, where the good strategies differ
  set tmargin at screen split
  set bmargin at screen bottom
  unset title
  set xlabel 'update step'
  set format x '%.0f'
  if (narrow) { set xtics 5000 } else { set xtics autofreq }
  set ylabel 'weight - exact'
  set yrange [-err_max:err_max]
  set ytics err_max > 0.06 ? 0.05 : 0.02
  set format y '%+.2f'
  # beside the lines that fall off (the upper panel names them on a narrow page), and at the
  # lower right, where no line runs
  if (stuck ne '' && !narrow) {
    set label 1 sprintf("%s fall off this scale: they miss every update", stuck) at graph 0.08, graph 0.3 left tc rgb c_fp16
  }
  set label 2 sprintf(narrow ? "largest |w - exact|:\nstochastic %.2g, Kahan %.2g" : \
                      "largest |weight - exact|: stochastic rounding %.2g, Kahan %.2g\n(%s half of fp16's spacing at 1 ... 2, 0.00098)", \
                      dev_sr, dev_kahan, dev_kahan <= 0.00049 ? "within" : "beyond") \
      at graph 0.98, graph 0.2 right tc rgb c_note
  plot 0 with lines lw 1 lc rgb '#bbbbbb' notitle, \
       for [i=1:5] in using (column("step")):(is(id[i]) ? column("weight") - column("exact_weight") : 1/0) \
         with lines lw width[i] dt dash[i] lc rgb color[i] notitle
  unset label 1
  unset label 2
  eval legend_strip(foot + (leg_rows - 0.5) * leg_row_h(0) + 0.3 * lh)
  unset multiplot
}
unset output
