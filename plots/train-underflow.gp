# plots/train-underflow.gp RESULTS_DIR — what fp16 loses, step by step, in
# halflab-train's runs. Top: gradient underflow — of the fp32 run's
# gradients, the share that fp16 would make subnormal or zero, and the share
# it would flush to zero; of amp-fp16's, the share still zero or subnormal
# after the loss scale; of fp16-noscale's, the share actually lost (exactly
# zero). Bottom: absorbed updates — the share of non-zero updates that
# leave the stored weight unchanged: fp16-pure's weights, fp16-master's
# fp16 model (its fp32 master keeps them), and what fp16 storage would have
# absorbed of the fp32 run's updates. One column per run group (tiny,
# gpt2-converge, absorb, underflow). Reads train_NAME_MODE_steps.csv; writes
# train-underflow.png and .svg.
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
desc = system(sprintf("sed -n 's/^# device: //p' \"$(ls '%s'/train_*_steps.csv 2>/dev/null | head -1)\" | cut -d, -f1 | sed 's/_/\\\\_/g'", dir))
file(g, m) = sprintf('%s/train_%s_%s_steps.csv', dir, g, m)
have(g, m) = system(sprintf("test -f '%s' && echo 1 || echo 0", file(g, m))) eq "1"
last(g) = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { n = $c[\"step\"] } END { print n + 0 }' '%s'", file(g, 'fp32'))))
what(g) = group_title(g)
pct(c) = strcol(c) eq '' ? NaN : column(c) > 0 ? 100 * column(c) : NaN

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
set datafile missing ''

# the run's state and schedule, from its summary (fp32's for the schedule)
summary(g, m) = sprintf('%s/train_%s_%s_summary.csv', dir, g, m)
sumval(g, m, col) = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c[\"%s\"]; exit }' '%s' 2>/dev/null", col, summary(g, m)))
W = 620 * ng + 140
H = 1350
g_cols = ng
g_rows = 2
g_L = 0.07
g_R = 0.98
g_hs = 0.05
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/train-underflow.png' } else { eval svg(W, H); set output dir.'/train-underflow.svg' }
  set multiplot title sprintf("What fp16 loses, step by step: gradients below its range, and updates below half an ulp of the weight\n%s", desc)
  do for [row=1:2] {
    # each row: its panels, then its legend strip under them
    g_T = row == 1 ? 0.85 : 0.40
    g_B = row == 1 ? 0.63 : 0.17
    g_rows = 1
    set border 3
    set xtics nomirror
    set ytics nomirror
    set grid back lc rgb '#dddddd'
    set xlabel 'step'
    unset key
    do for [gi=1:ng] {
      g = word(groups, gi)
      eval cell(gi, 1)
      set xrange [0:last(g)]
      unset label
      if (row == 1) {
        set title sprintf("%s\ngradient elements below fp16's normal range", what(g))
        set ylabel gi == 1 ? 'share of gradient elements (%)' : ''
        set logscale y
        set yrange [1e-4:100]
        set ytics 1e-4, 10, 100
        set format y '10^{%L}'
        cmd = sprintf("'%s' using 'step':(pct('fp16_underflow_frac')) with lines lw 2 dt 2 lc rgb c_fp32 notitle", file(g, 'fp32'))
        cmd = cmd.sprintf(", '%s' using 'step':(pct('fp16_zero_frac')) with lines lw 2 lc rgb c_fp32 notitle", file(g, 'fp32'))
        if (have(g, 'amp-fp16')) {
          cmd = cmd.sprintf(", '%s' using 'step':(pct('fp16_underflow_scaled_frac')) with lines lw 2 lc rgb c_fp16 notitle", file(g, 'amp-fp16'))
        }
        if (have(g, 'fp16-noscale')) {
          cmd = cmd.sprintf(", '%s' using 'step':(pct('grad_zero_frac')) with lines lw 2 dt 2 lc rgb '#8a3200' notitle", file(g, 'fp16-noscale'))
        }
      } else {
        set title sprintf("%s: non-zero updates that left\nthe stored weight unchanged", g)
        set ylabel gi == 1 ? 'share of non-zero updates (%)' : ''
        unset logscale y
        set format y '%g'
        set ytics 0, 20, 100
        set yrange [0:100]
        cmd = sprintf("'%s' using 'step':(pct('fp16_absorbed_frac')) with lines lw 2 dt 2 lc rgb c_fp32 notitle", file(g, 'fp32'))
        note_y = 0.93
        if (have(g, 'fp16-pure')) {
          st = sumval(g, 'fp16-pure', 'status')
          if (st ne 'completed' && st ne '') {
            set label 1 sprintf("fp16-pure %s at step %s: no line", st, sumval(g, 'fp16-pure', 'steps_done')) at graph 0.03, graph note_y left tc rgb c_fp16
            note_y = note_y - 0.09
          }
          cmd = cmd.sprintf(", '%s' using 'step':(pct('absorbed_frac')) with lines lw 2.5 lc rgb c_fp16 notitle", file(g, 'fp16-pure'))
        }
        if (have(g, 'fp16-master')) {
          cmd = cmd.sprintf(", '%s' using 'step':(pct('absorbed_frac')) with lines lw 2 dt 4 lc rgb '#8a3200' notitle", file(g, 'fp16-master'))
        }
        # a cosine schedule takes the learning rate to 0: at the end every update is below half an ulp
        if (sumval(g, 'fp32', 'schedule') eq 'cosine') {
          set label 2 "cosine schedule: lr falls to 0,\nso the updates shrink below\nhalf an ulp of their weights" at graph 0.03, graph note_y left tc rgb c_note
        }
      }
      eval('plot '.cmd)
    }
    if (row == 1) {
      ls_ = "with lines lw 2 dt 2 lc rgb c_fp32"; lt_ = 'fp32: zero or subnormal in fp16'; eval legend_add
      ls_ = "with lines lw 2 lc rgb c_fp32"; lt_ = 'fp32: flushed to zero in fp16'; eval legend_add
      ls_ = "with lines lw 2 lc rgb c_fp16"; lt_ = 'amp-fp16: zero or subnormal after scaling'; eval legend_add
      ls_ = "with lines lw 2 dt 2 lc rgb '#8a3200'"; lt_ = 'fp16-noscale: lost (exactly zero)'; eval legend_add
      eval legend_strip(0.535)
    } else {
      ls_ = "with lines lw 2 dt 2 lc rgb c_fp32"; lt_ = 'fp32: what fp16 weights would absorb'; eval legend_add
      ls_ = "with lines lw 2.5 lc rgb c_fp16"; lt_ = 'fp16-pure: absorbed by its fp16 weights'; eval legend_add
      ls_ = "with lines lw 2 dt 4 lc rgb '#8a3200'"; lt_ = 'fp16-master: absorbed by its fp16 model, kept by the fp32 master'; eval legend_add
      eval legend_strip(0.075)
    }
  }
  unset multiplot
}
unset output
