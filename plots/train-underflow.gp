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
desc = system(sprintf("sed -n 's/^# device: //p' \"$(ls '%s'/train_*_steps.csv | head -1)\" | cut -d, -f1 | sed 's/_/\\\\_/g'", dir))
file(g, m) = sprintf('%s/train_%s_%s_steps.csv', dir, g, m)
have(g, m) = system(sprintf("test -f '%s' && echo 1 || echo 0", file(g, m))) eq "1"
last(g) = real(system(sprintf("awk -F, '/^#/ || /^mode,/ { next } { n = $2 } END { print n + 0 }' '%s'", file(g, 'fp32'))))
what(g) = g eq 'tiny' ? "tiny GPT, sorting, AdamW" : g eq 'gpt2-converge' ? "GPT-2 124M shape, sorting" : \
          g eq 'absorb' ? "demonstration: SGD, lr 0.001" : g eq 'underflow' ? "demonstration: SGD, init x 0.05, 4096 tokens" : g
pct(c) = strcol(c) eq '' ? NaN : column(c) > 0 ? 100 * column(c) : NaN

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
set datafile missing ''

do for [out=1:2] {
  if (out == 1) {
    set terminal pngcairo size 560 * ng + 140, 1100 enhanced font 'Sans,11'
    set output dir.'/train-underflow.png'
  } else {
    set terminal svg size 560 * ng + 140, 1100 enhanced font 'Sans,11' background rgb 'white'
    set output dir.'/train-underflow.svg'
  }
  set multiplot title sprintf("What fp16 loses, step by step: gradients below its range, and updates below half an ulp of the weight\n{/*0.85 %s}", desc)
  pw = 0.92 / ng
  set border 3
  set xtics nomirror
  set ytics nomirror
  set grid back lc rgb '#dddddd'
  set xlabel 'step'
  do for [row=1:2] {
    do for [gi=1:ng] {
      g = word(groups, gi)
      set xrange [0:last(g)]
      set lmargin at screen 0.06 + (gi - 1) * pw + (gi > 1 ? 0.02 : 0)
      set rmargin at screen 0.06 + gi * pw - 0.01
      set tmargin at screen (row == 1 ? 0.88 : 0.42)
      set bmargin at screen (row == 1 ? 0.63 : 0.17)
      if (gi == 1) {
        set key at screen 0.5, screen (row == 1 ? 0.525 : 0.065) center vertical maxrows 2 width 2 samplen 2 font ',10'
      } else {
        unset key
      }
      if (row == 1) {
        set title sprintf("%s\n{/*0.85 gradient elements below fp16's normal range (log scale)}", what(g))
        set ylabel gi == 1 ? 'share of gradient elements (%)' : ''
        set logscale y
        set yrange [1e-4:100]
        set format y '10^{%L}'
        cmd = sprintf("'%s' using 'step':(pct('fp16_underflow_frac')) with lines lw 1.5 dt 2 lc rgb '#000000' title 'fp32: zero or subnormal in fp16'", file(g, 'fp32'))
        cmd = cmd.sprintf(", '%s' using 'step':(pct('fp16_zero_frac')) with lines lw 1.5 lc rgb '#000000' title 'fp32: flushed to zero in fp16'", file(g, 'fp32'))
        if (have(g, 'amp-fp16')) {
          cmd = cmd.sprintf(", '%s' using 'step':(pct('fp16_underflow_scaled_frac')) with lines lw 1.5 lc rgb '#0072B2' title 'amp-fp16: zero or subnormal after scaling'", file(g, 'amp-fp16'))
        }
        if (have(g, 'fp16-noscale')) {
          cmd = cmd.sprintf(", '%s' using 'step':(pct('grad_zero_frac')) with lines lw 1.5 lc rgb '#E69F00' title 'fp16-noscale: lost (exactly zero)'", file(g, 'fp16-noscale'))
        }
      } else {
        set title "updates absorbed: non-zero, the stored weight unchanged"
        set ylabel gi == 1 ? 'share of non-zero updates (%)' : ''
        unset logscale y
        set format y '%g'
        set yrange [0:100]
        cmd = sprintf("'%s' using 'step':(pct('fp16_absorbed_frac')) with lines lw 1.5 dt 2 lc rgb '#000000' title 'fp32: what fp16 weights would absorb'", file(g, 'fp32'))
        if (have(g, 'fp16-pure')) {
          cmd = cmd.sprintf(", '%s' using 'step':(pct('absorbed_frac')) with lines lw 1.5 lc rgb '#D55E00' title 'fp16-pure: absorbed by its fp16 weights'", file(g, 'fp16-pure'))
        }
        if (have(g, 'fp16-master')) {
          cmd = cmd.sprintf(", '%s' using 'step':(pct('absorbed_frac')) with lines lw 1.5 lc rgb '#CC79A7' title 'fp16-master: absorbed by the fp16 model, kept by the fp32 master'", file(g, 'fp16-master'))
        }
      }
      eval('plot '.cmd)
    }
  }
  unset multiplot
}
unset output
