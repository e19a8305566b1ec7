# plots/loss_scale.gp RESULTS_DIR — loss scaling: a sample of gradient
# magnitudes spread over 2^-40 ... 2^-8, multiplied by S = 2^s and stored in
# fp16; the share that becomes zero, subnormal, normal or inf for each S
# (colours of the second set: these are outcomes, not precisions; all four
# are fp16's, so all dashed or dotted). Reads loss_scale_distribution.csv;
# writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/loss_scale_distribution.csv')
if (!file_exists(in)) {
  print sprintf("loss_scale.gp: %s not found: no chart (run halflab-numerics subnormal)", in)
  exit
}
# awk over a halflab CSV's rows (VARS: its -v options), c["name"] the index of each column
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
dev = system(sprintf("%s$c[\"device\"] == \"cuda\" { g = 1 } END { print g ? \"cuda\" : \"cpu\" }' '%s'", awk_cols(''), in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))
# the run's build and date, for the screen footer
run_of(f) = system(sprintf("sed -n 's/^# \\(halflab .*\\)/\\1/p; s/^# date: \\(.\\{10\\}\\).*/\\1/p' '%s' | paste -sd, - | sed 's/,/, /g'", f))
n = system(sprintf("%s$c[\"device\"] == d { print $c[\"gradients\"]; exit }' '%s'", awk_cols('-v d='.dev), in))
# the largest scale at which nothing overflows
best = int(system(sprintf("%s$c[\"device\"] == d && $c[\"frac_overflow\"] == 0 { s = $c[\"scale_log2\"] } END { print s + 0 }' '%s'", awk_cols('-v d='.dev), in)))
smax = int(system(sprintf("%s$c[\"device\"] == d { s = $c[\"scale_log2\"] } END { print s + 0 }' '%s'", awk_cols('-v d='.dev), in)))
# the share stored as normal numbers at scale 2^s
normal_at(s) = real(system(sprintf("%s$c[\"device\"] == d && $c[\"scale_log2\"] == s { print $c[\"frac_normal\"]; exit }' '%s'", awk_cols(sprintf('-v d=%s -v s=%d', dev, s)), in)))
claim_wide = sprintf("Loss scale 2^{%d}: %.0f%% of the gradients normal in fp16, against %.0f%% unscaled", best, 100 * normal_at(best), 100 * normal_at(0))
claim_narrow = sprintf("S = 2^{%d}: %.0f%% normal in fp16, not %.0f%%", best, 100 * normal_at(best), 100 * normal_at(0))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array col[4] = ["frac_normal", "frac_subnormal", "frac_zero", "frac_overflow"]
array what[4] = ['normal (full precision)', 'subnormal (precision lost)', 'zero (gradient lost)', 'inf (the step is skipped)']
array what_short[4] = ['normal', 'subnormal', 'zero', 'inf']
array color[4] = [cat_color(6), cat_color(1), cat_color(3), cat_color(4)]
array dash[4] = [2, 4, 5, 3]
pk(x) = preset eq 'print' ? 0.5 : 0.8   # point size
is(x) = strcol("device") eq dev

# leg_rows: the rows the legend strip will take (legend_strip's wrapping, repeated)
count_leg_rows = "t_ = 0; do for [k_=1:leg_n] { t_ = t_ + leg_w(k_) }; leg_rows = 1; x_ = t_ < 0.96 ? 0.5 - t_ / 2 : 0.02; do for [k_=1:leg_n] { if (x_ + leg_w(k_) > 0.99) { x_ = 0.02; leg_rows = leg_rows + 1 }; x_ = x_ + leg_w(k_) }"

footer = desc.'; '.run_of(in)
narrow_aspect = 0.95
do for [out_i=1:out_n] {
  unset label
  unset arrow
  eval out_open(dir, 'loss_scale', 1280, 800, out_i)
  lh = 1.6 * cur_pt / cur_h   # a line of text, as a fraction of the height
  do for [i=1:4] {
    ls_ = sprintf("with linespoints pt 7 ps %g lw 3 dt %d lc rgb '%s'", pk(0), dash[i], color[i]); lt_ = narrow ? what_short[i] : what[i]; eval legend_add
  }
  eval count_leg_rows
  foot = preset eq 'screen' ? 1.2 * lh : 0   # the footer's line
  set multiplot
  set bmargin at screen foot + (leg_rows + 3.4) * lh
  set title title_of(sprintf("Loss scaling: %s gradients spread evenly in log_2 over 2^{-40} ... 2^{-8}, multiplied by S and stored in fp16\nno S fits their 32 octaves into fp16's 30 (2^{-14} ... 65504)", n), \
                     narrow ? claim_narrow : claim_wide)
  set xlabel 'loss scale S'
  set ylabel 'share of the gradients (%)'
  set xrange [0:smax]
  set yrange [0:105]
  set border 3   # (legend_strip unset the axes)
  set xtics nomirror 0, (narrow ? 8 : 4), smax
  set format x '2^{%.0f}'
  set ytics nomirror 0, 20, 100
  eval 'set grid xtics ytics '.grid_opts
  unset key

  set arrow 1 from first 16, graph 0 to first 16, graph 1 nohead dt 3 lw 1.5 lc rgb '#666666' back
  set label 1 narrow ? "GradScaler\nstarts at 2^{16}" : "PyTorch GradScaler's\ninitial scale 2^{16}" at first 16, graph 0.93 center tc rgb c_note
  set arrow 2 from first best, graph 0 to first best, graph 1 nohead dt 2 lw 1.5 lc rgb cat_color(6) back
  set label 2 sprintf(narrow ? "no overflow\nup to 2^{%d}" : "largest S without\noverflow: 2^{%d}", best) at first best, graph 0.50 right offset -0.8, 0 tc rgb cat_color(6)

  plot for [i=1:4] in using (column("scale_log2")):(is(0) ? 100 * column(col[i]) : 1/0) \
         with linespoints pt 7 ps pk(0) lw 3 dt dash[i] lc rgb color[i] notitle
  eval legend_strip(foot + (leg_rows - 0.5) * leg_row_h(0) + 0.3 * lh)
  unset multiplot
}
unset output
