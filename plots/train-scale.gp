# plots/train-scale.gp RESULTS_DIR — the loss scale of halflab-train's modes
# with a GradScaler, step by step, skipped steps (inf/NaN gradients: no
# update, the scale halves) marked. One panel per run group with a scaled
# mode (scale: amp-fp16 with the scale doubling every 25 clean steps; tiny;
# gpt2 and its convergence run on a GPU). Reads train_NAME_MODE_steps.csv; writes
# train-scale.png and .svg.
dir = ARG1
groups = ''
do for [g in 'scale tiny gpt2 gpt2-converge'] {
  if (system(sprintf("ls '%s'/train_%s_amp-fp16_steps.csv '%s'/train_%s_fp16-static_steps.csv '%s'/train_%s_fp16-master_steps.csv 2>/dev/null | head -1", dir, g, dir, g, dir, g)) ne "") {
    groups = groups.' '.g
  }
}
if (words(groups) == 0) {
  print sprintf("train-scale.gp: no train_*_steps.csv of a mode with a loss scaler in %s: no chart (run scripts/train-all.sh)", dir)
  exit
}
ng = words(groups)
desc = system(sprintf("sed -n 's/^# device: //p' \"$(ls '%s'/train_*_steps.csv | head -1)\" | cut -d, -f1 | sed 's/_/\\\\_/g'", dir))

modes = 'amp-fp16 fp16-static fp16-master'
array color[3] = ['#0072B2', '#009E73', '#CC79A7']
array point[3] = [7, 5, 9]
file(g, m) = sprintf('%s/train_%s_%s_steps.csv', dir, g, m)
have(g, m) = system(sprintf("test -f '%s' && echo 1 || echo 0", file(g, m))) eq "1"
skips(g, m) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } $c[k] == 1' k=skipped '%s'", file(g, m))
nskips(g, m) = int(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[k] == 1 { n++ } END { print n + 0 }' k=skipped '%s'", file(g, m))))
interval(g) = system(sprintf("sed -n 's/^# command: .*--growth-interval \\([0-9]*\\).*/\\1/p' '%s' | head -1", file(g, 'amp-fp16')))
what(g) = g eq 'scale' ? sprintf("amp-fp16, scale x2 after %s clean steps (tiny GPT)", interval(g)) : \
          g eq 'tiny' ? "tiny GPT (growth interval 2000)" : \
          g eq 'gpt2' ? "GPT-2 124M shape" : g eq 'gpt2-converge' ? "GPT-2 124M shape, convergence run" : \
          g eq 'absorb' ? "demonstration: SGD, lr 0.001" : g eq 'underflow' ? "demonstration: SGD, init x 0.05" : g

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

do for [out=1:2] {
  if (out == 1) {
    set terminal pngcairo size 520 * ng + 120, 560 enhanced font 'Sans,11'
    set output dir.'/train-scale.png'
  } else {
    set terminal svg size 520 * ng + 120, 560 enhanced font 'Sans,11' background rgb 'white'
    set output dir.'/train-scale.svg'
  }
  set multiplot layout 1, ng title sprintf("Loss scale per step (GradScaler: x2 after the growth interval of clean steps, x0.5 and the step skipped on inf/NaN)\n{/*0.85 %s; fp16-static keeps its scale and only skips}", desc) \
      margins 0.07, 0.98, 0.13, 0.82 spacing 0.06, 0.1
  set border 3
  set xtics nomirror
  set ytics nomirror
  set grid back lc rgb '#dddddd'
  set logscale y 2
  set format y '2^{%L}'
  set xlabel 'step'
  do for [gi=1:ng] {
    g = word(groups, gi)
    set title what(g)
    set ylabel gi == 1 ? 'loss scale' : ''
    set key center right font ',10' opaque samplen 2
    cmd = ''
    do for [k=1:3] {
      m = word(modes, k)
      if (have(g, m)) {
        n = nskips(g, m)
        cmd = cmd.sprintf("%s '%s' using 'step':'scale' with steps lw 2 lc rgb '%s' title '%s (%d skipped)'", cmd eq '' ? '' : ',', file(g, m), color[k], m, n)
        if (n > 0) {
          cmd = cmd.sprintf(", \"%s\" using 'step':'scale' with points pt 2 ps 1.6 lw 2 lc rgb '#D55E00' notitle", skips(g, m))
        }
      }
    }
    cmd = cmd.", NaN with points pt 2 ps 1.6 lw 2 lc rgb '#D55E00' title 'skipped step'"
    set autoscale y
    set offsets 0, 0, graph 0.08, graph 0.08
    eval('plot '.cmd)
  }
  unset multiplot
}
unset output
