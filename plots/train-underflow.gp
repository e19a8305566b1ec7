# plots/train-underflow.gp RESULTS_DIR — what fp16 loses, step by step, in
# halflab-train's runs. Top: gradient underflow — of the fp32 run's
# gradients, the share that fp16 would make subnormal or zero, and the share
# it would flush to zero; of amp-fp16's, the share still zero or subnormal
# after the loss scale; of fp16-noscale's, the share actually lost (exactly
# zero). Bottom: absorbed updates — the share of non-zero updates that
# leave the stored weight unchanged: fp16-pure's weights, fp16-master's
# fp16 model (its fp32 master keeps them), and what fp16 storage would have
# absorbed of the fp32 run's updates. One column per run group (tiny,
# gpt2-converge, absorb, underflow); on a slide and in the 3.5-in print file
# the first group's two panels alone, one legend under both. Reads
# train_NAME_MODE_steps.csv and the runs' summaries; writes the preset's
# files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
groups = ''
do for [g in 'tiny gpt2-converge absorb underflow'] {
  if (system(sprintf("test -f '%s/train_%s_fp32_steps.csv' && echo 1 || echo 0", dir, g)) eq "1") {
    groups = groups.' '.g
  }
}
if (words(groups) == 0) {
  print sprintf("train-underflow.gp: no train_*_fp32_steps.csv of the tiny, gpt2-converge, absorb or underflow runs in %s: no chart (run scripts/train-all.sh)", dir)
  exit
}
ng = words(groups)
file(g, m) = as_written(sprintf('%s/train_%s_%s_steps.csv', dir, g, m))
have(g, m) = system(sprintf("test -f '%s' && echo 1 || echo 0", file(g, m))) eq "1"
last(g) = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { n = $c[\"step\"] } END { print n + 0 }' '%s'", file(g, 'fp32'))))
what(g) = group_title(g)
# the device of the first group's fp32 run, for the screen footer
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | cut -d, -f1", file(word(groups, 1), 'fp32')))
pct(c) = strcol(c) eq '' ? NaN : column(c) > 0 ? 100 * column(c) : NaN

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
set datafile missing ''

# the run's state and schedule, from its summary (fp32's for the schedule)
summary(g, m) = as_written(sprintf('%s/train_%s_%s_summary.csv', dir, g, m))
sumval(g, m, col) = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c[\"%s\"]; exit }' '%s' 2>/dev/null", col, summary(g, m)))
# a share as a short percentage: 34%, 3.1%, 0.02%
share(f) = f eq '' ? '-' : 100 * real(f) >= 10 ? sprintf("%.0f%%", 100 * real(f)) : sprintf("%.2g%%", 100 * real(f))
# the claim, from the first group's means: fp32's gradients that fp16 would take below its normal range,
# amp-fp16's after the scale, and fp32's updates that fp16 weights would absorb
g1 = word(groups, 1)
u1 = share(sumval(g1, 'fp32', 'fp16_underflow_frac'))
s1 = share(sumval(g1, 'amp-fp16', 'fp16_underflow_scaled_frac'))
a1 = share(sumval(g1, 'fp32', 'fp16_absorbed_frac'))
claim = sprintf("%s: fp16 underflows %s of gradients (%s scaled), absorbs %s of updates", g1, u1, s1, a1)
claim_narrow = sprintf("%s: underflow %s (%s scaled), absorbed %s", g1, u1, s1, a1)
# the lines: fp32's solid (its flushed share thin, with points), every other mode's its own dash (style.gp)
fp32_line = "lw 2 lc rgb c_fp32"
array row_title[2] = ["%s\ngradient elements below fp16's normal range", "%s: non-zero updates that left\nthe stored weight unchanged"]
# the legend: each entry's row of panels, style, and name on screen and elsewhere
array leg_row[7] = [1, 1, 1, 1, 2, 2, 2]
array leg_style[7] = ['with lines '.fp32_line, "with linespoints lw 1 lc rgb c_fp32 pt 7 ps 0.8", 'with lines '.mode_line('amp-fp16'), \
                     'with lines '.mode_line('fp16-noscale'), 'with lines '.fp32_line, 'with lines '.mode_line('fp16-pure'), \
                     'with lines '.mode_line('fp16-master')]
array leg_long[7] = ['fp32: zero or subnormal in fp16', 'fp32: flushed to zero in fp16', 'amp-fp16: zero or subnormal after scaling', \
                    'fp16-noscale: lost (exactly zero)', 'fp32: what fp16 weights would absorb', 'fp16-pure: absorbed by its fp16 weights', \
                    'fp16-master: absorbed by its fp16 model, kept by the fp32 master']
array leg_short[7] = ['fp32: underflow in fp16', 'fp32: flushed', 'amp-fp16, scaled', 'fp16-noscale: lost', 'fp32: absorbed as fp16', \
                     'fp16-pure', 'fp16-master (fp16 model)']
# eval add_legend with leg_r set (0: both rows) and long (the screen's names)
add_legend = "do for [k_=1:7] { if (leg_r == 0 || leg_row[k_] == leg_r) { ls_ = leg_style[k_]; lt_ = long ? leg_long[k_] : leg_short[k_]; eval legend_add } }"

W = 620 * ng + 140 < 1280 ? 1280 : 620 * ng + 140   # the title needs 1280 px
H = 1350
narrow_aspect = 1.45
footer = desc
do for [out_i=1:out_n] {
  eval out_open(dir, 'train-underflow', W, H, out_i)
  set autoscale   # the last output's legend strip fixed the ranges
  # one group on a slide or in a column: its two panels side by side (slide) or stacked (column), one legend
  one = preset eq 'slides' || narrow
  np = one ? 1 : ng
  long = preset eq 'screen'
  ptitle = long ? 2 : 1
  if (one) {
    leg_r = 0; eval add_legend; eval legend_count; lr1 = 0; lr2 = leg_rows; leg_n = 0
  } else {
    leg_r = 2; eval add_legend; eval legend_count; lr2 = leg_rows; leg_n = 0
    leg_r = 1; eval add_legend; eval legend_count; lr1 = leg_rows; leg_n = 0
  }
  top = 1 - text_h((preset eq 'screen' ? 1 : 1) + (narrow ? 2 : 1.6))
  bottom = text_h(preset eq 'screen' ? 1 : 0)
  axis = text_h(3.2)    # tick labels and the x label under a panel
  stacked = !one || narrow
  nrow_ = stacked ? 2 : 1
  gap = stacked ? text_h(1.2) : 0   # between the first row's legend and the second row's titles
  panel_h = (top - bottom - nrow_ * (text_h(ptitle) + axis) - text_h(lr1 + lr2) - gap) / nrow_
  g_L = narrow ? 0.18 : one ? 0.08 : long ? 0.07 : 0.09
  g_R = narrow ? 0.95 : 0.98
  g_hs = one ? 0.1 : 0.05
  g_cols = one ? (narrow ? 1 : 2) : ng
  g_rows = 1
  set multiplot title title_of("What fp16 loses, step by step: gradients below its range, and updates below half an ulp of the weight", narrow ? claim_narrow : claim)
  do for [row=1:2] {
    # each row: its panels, then its legend strip under them (one strip under both where one group is drawn)
    g_T = stacked ? top - text_h(ptitle) - (row - 1) * (text_h(ptitle + lr1) + axis + panel_h + gap) : top - text_h(ptitle)
    g_B = g_T - panel_h
    set border 3
    set xtics nomirror
    set ytics nomirror
    eval 'set grid xtics ytics '.grid_opts
    set xlabel (narrow && row == 1) ? '' : 'step'
    unset key
    do for [gi=1:np] {
      g = word(groups, gi)
      eval one ? (narrow ? cell(1, 1) : cell(row, 1)) : cell(gi, 1)
      set xrange [0:last(g)]
      unset label 1
      unset label 2
      set title long ? sprintf(row_title[row], row == 1 ? what(g) : g) : one ? (row == 1 ? "gradients below fp16's normal range" : 'updates absorbed') : g
      if (row == 1) {
        set ylabel (gi == 1) ? (long ? 'share of gradient elements (%)' : 'gradient elements (%)') : ''
        set logscale y
        set yrange [1e-4:100]
        set ytics 1e-4, narrow ? 100 : 10, 100
        set format y '10^{%L}'
        pi_ = int(last(g) / 12) > 0 ? int(last(g) / 12) : 1
        cmd = sprintf("'%s' using 'step':(pct('fp16_underflow_frac')) with lines %s notitle", file(g, 'fp32'), fp32_line)
        cmd = cmd.sprintf(", '%s' using 'step':(pct('fp16_zero_frac')) with linespoints lw 1 lc rgb c_fp32 pt 7 ps 0.8 pi %d notitle", file(g, 'fp32'), pi_)
        if (have(g, 'amp-fp16')) {
          cmd = cmd.sprintf(", '%s' using 'step':(pct('fp16_underflow_scaled_frac')) with lines %s notitle", file(g, 'amp-fp16'), mode_line('amp-fp16'))
        }
        if (have(g, 'fp16-noscale')) {
          cmd = cmd.sprintf(", '%s' using 'step':(pct('grad_zero_frac')) with lines %s notitle", file(g, 'fp16-noscale'), mode_line('fp16-noscale'))
        }
      } else {
        set ylabel (gi == 1) ? (long ? 'share of non-zero updates (%)' : 'updates (%)') : ''
        unset logscale y
        set format y '%g'
        set ytics 0, narrow ? 50 : 20, 100
        set yrange [0:100]
        cmd = sprintf("'%s' using 'step':(pct('fp16_absorbed_frac')) with lines %s notitle", file(g, 'fp32'), fp32_line)
        note_y = 0.93
        if (have(g, 'fp16-pure')) {
          st = sumval(g, 'fp16-pure', 'status')
          if (st ne 'completed' && st ne '') {
            set label 1 sprintf(long ? "fp16-pure %s at step %s: no line" : "fp16-pure %s\nat step %s", st, sumval(g, 'fp16-pure', 'steps_done')) at graph 0.03, graph note_y left tc rgb c_fp16
            note_y = note_y - (long ? 0.09 : 0.2)
          }
          cmd = cmd.sprintf(", '%s' using 'step':(pct('absorbed_frac')) with lines %s notitle", file(g, 'fp16-pure'), mode_line('fp16-pure'))
        }
        if (have(g, 'fp16-master')) {
          cmd = cmd.sprintf(", '%s' using 'step':(pct('absorbed_frac')) with lines %s notitle", file(g, 'fp16-master'), mode_line('fp16-master'))
        }
        # a cosine schedule takes the learning rate to 0: at the end every update is below half an ulp
        if (sumval(g, 'fp32', 'schedule') eq 'cosine') {
          set label 2 long ? "cosine schedule: lr falls to 0,\nso the updates shrink below\nhalf an ulp of their weights" : "cosine schedule:\nlr falls to 0" at graph 0.03, graph note_y left tc rgb c_note
        }
      }
      eval('plot '.cmd)
      unset label 9999   # the footer, once
    }
    if (!one) {
      leg_r = row; eval add_legend
      eval legend_strip(g_B - axis - text_h(0.3))
    }
  }
  if (one) {
    leg_r = 0; eval add_legend
    eval legend_strip(bottom + text_h(lr2 - 0.3))
  }
  unset multiplot
}
unset output
