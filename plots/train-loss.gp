# plots/train-loss.gp RESULTS_DIR — halflab-train's loss and accuracy per
# precision mode. One column per run group found (tiny, gpt2-converge,
# absorb, underflow, in that order): on top the training loss of every step
# (thin) and the held-out loss at the evaluations (points), below the
# held-out accuracy. Every mode starts from the same weights and sees the
# same batches. Reads train_NAME_MODE_steps.csv (and the summaries for the
# runs' status); writes train-loss.png and .svg.
dir = ARG1
groups = ''
do for [g in 'tiny gpt2-converge absorb underflow'] {
  if (system(sprintf("ls '%s'/train_%s_*_steps.csv >/dev/null 2>&1 && echo 1 || echo 0", dir, g)) eq "1") {
    groups = groups.' '.g
  }
}
if (words(groups) == 0) {
  print sprintf("train-loss.gp: no train_*_steps.csv of the tiny, gpt2-converge, absorb or underflow runs in %s: no chart (run scripts/train-all.sh)", dir)
  exit
}
ng = words(groups)
desc = system(sprintf("sed -n 's/^# device: //p' \"$(ls '%s'/train_*_steps.csv | head -1)\" | cut -d, -f1 | sed 's/_/\\\\_/g'", dir))

modes = 'fp32 amp-fp16 amp-bf16 fp16-noscale fp16-static fp16-master fp16-pure'
array color[7] = ['#000000', '#0072B2', '#56B4E9', '#E69F00', '#009E73', '#CC79A7', '#D55E00']
array faint[7] = ['#B0000000', '#B00072B2', '#B056B4E9', '#B0E69F00', '#B0009E73', '#B0CC79A7', '#B0D55E00']
file(g, m) = sprintf('%s/train_%s_%s_steps.csv', dir, g, m)
# the header and the rows whose column `col` is not empty (evaluation steps)
evals(g, m, col) = sprintf("< awk -F, -v k=%s '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } length($c[k])' '%s'", col, file(g, m))
have(g, m) = system(sprintf("test -f '%s' && echo 1 || echo 0", file(g, m))) eq "1"
# status and last step from the summary: "diverged at step 5", or ''
note(g, m) = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"status\"] != \"completed\" { printf \" (%%s at step %%s)\", $c[\"status\"], $c[\"steps_done\"] }' '%s/train_%s_%s_summary.csv' 2>/dev/null", dir, g, m))
# the run's length (the steps asked, over the group's summaries)
last(g) = real(system(sprintf("cat '%s'/train_%s_*_summary.csv 2>/dev/null | awk -F, '/^#/ { next } $1 == \"name\" { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"steps\"] > n { n = $c[\"steps\"] } END { print n + 0 }'", dir, g)))
nevals(g, m) = int(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } length($c[\"eval_acc\"]) { n++ } END { print n + 0 }' '%s'", file(g, m))))
what(g) = g eq 'tiny' ? "tiny GPT, sorting, AdamW (cosine)" : \
          g eq 'gpt2-converge' ? "GPT-2 124M shape, sorting" : \
          g eq 'absorb' ? "demonstration: SGD, lr 0.001" : \
          g eq 'underflow' ? "demonstration: SGD, init x 0.05, 4096 tokens" : g

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
set datafile missing ''

do for [out=1:2] {
  if (out == 1) {
    set terminal pngcairo size 560 * ng + 120, 900 enhanced font 'Sans,11'
    set output dir.'/train-loss.png'
  } else {
    set terminal svg size 560 * ng + 120, 900 enhanced font 'Sans,11' background rgb 'white'
    set output dir.'/train-loss.svg'
  }
  set multiplot layout 2, ng title sprintf("halflab-train: loss and held-out accuracy per precision mode (same weights, same batches)\n{/*0.85 %s}", desc) \
      margins 0.06, 0.98, 0.07, 0.88 spacing 0.05, 0.1
  set border 3
  set xtics nomirror
  set ytics nomirror
  set grid back lc rgb '#dddddd'
  do for [row=1:2] {
    do for [gi=1:ng] {
      g = word(groups, gi)
      set xlabel 'step'
      set xrange [0:last(g)]
      if (row == 1) {
        set title sprintf("%s\n{/*0.85 line: training loss of each step; points: held-out loss}", what(g))
        set ylabel gi == 1 ? 'cross-entropy (nats per token)' : ''
        set autoscale yfix
        set offsets 0, 0, graph 0.05, graph 0.05
      } else {
        set title 'held-out accuracy (sorted numbers / labels, teacher forcing)'
        set ylabel gi == 1 ? 'accuracy (%)' : ''
        set offsets 0, 0, 0, 0
        set yrange [0:102]
      }
      if (row == 2) {
        set key bottom right font ',9' samplen 2 spacing 0.9 opaque
      } else {
        unset key
      }
      cmd = ''
      do for [k=1:7] {
        m = word(modes, k)
        if (have(g, m)) {
          if (row == 1) {
            cmd = cmd.sprintf("%s '%s' using 'step':'loss' with lines lw 1 lc rgb '%s' notitle", cmd eq '' ? '' : ',', file(g, m), faint[k])
            if (nevals(g, m) > 0) {
              cmd = cmd.sprintf(", \"%s\" using 'step':'eval_loss' with linespoints pt 7 ps 0.7 lw 2 lc rgb '%s' notitle", evals(g, m, 'eval_loss'), color[k])
            }
          } else { if (nevals(g, m) == 0) {
            cmd = cmd.sprintf("%s NaN with linespoints pt 7 ps 0.7 lw 2 lc rgb '%s' title '%s%s'", cmd eq '' ? '' : ',', color[k], m, note(g, m))
          } else {
            cmd = cmd.sprintf("%s \"%s\" using 'step':(100 * column('eval_acc')) with linespoints pt 7 ps 0.7 lw 2 lc rgb '%s' title '%s%s'", \
                              cmd eq '' ? '' : ',', evals(g, m, 'eval_acc'), color[k], m, note(g, m))
          } }
        }
      }
      eval('plot '.cmd)
    }
  }
  unset multiplot
}
unset output
