# plots/train-loss.gp RESULTS_DIR — halflab-train's loss and accuracy per
# precision mode. One column per run group found (tiny, gpt2-converge,
# absorb, underflow, in that order): on top the training loss of every step
# (thin) and the held-out loss at the evaluations (points), below the
# held-out accuracy. Every mode starts from the same weights and sees the
# same batches. Reads train_NAME_MODE_steps.csv (and the summaries for the
# runs' status); writes train-loss.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
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
desc = system(sprintf("sed -n 's/^# device: //p' \"$(ls '%s'/train_*_steps.csv 2>/dev/null | head -1)\" | cut -d, -f1 | sed 's/_/\\\\_/g'", dir))

modes = 'fp32 amp-fp16 amp-bf16 fp16-noscale fp16-static fp16-master fp16-pure'
# colour: the mode's family; dash and point: the mode (style.gp)
faint(m) = '#C0'.fcolor(m)[2:7]
file(g, m) = sprintf('%s/train_%s_%s_steps.csv', dir, g, m)
# the header and the rows whose column `col` is not empty (evaluation steps)
evals(g, m, col) = sprintf("< awk -F, -v k=%s '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } length($c[k])' '%s'", col, file(g, m))
have(g, m) = system(sprintf("test -f '%s' && echo 1 || echo 0", file(g, m))) eq "1"
# status and last step from the summary: "diverged at step 5", or ''
note(g, m) = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"status\"] != \"completed\" { printf \" (%%s at step %%s)\", $c[\"status\"], $c[\"steps_done\"] }' '%s/train_%s_%s_summary.csv' 2>/dev/null", dir, g, m))
# the run's length (the steps asked, over the group's summaries)
last(g) = real(system(sprintf("cat '%s'/train_%s_*_summary.csv 2>/dev/null | awk -F, '/^#/ { hdr = 1; next } hdr { hdr = 0; for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"steps\"] > n { n = $c[\"steps\"] } END { print n + 0 }'", dir, g)))
nevals(g, m) = int(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } length($c[\"eval_acc\"]) { n++ } END { print n + 0 }' '%s'", file(g, m))))
what(g) = group_title(g)

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
set datafile missing ''

W = 620 * ng + 120
H = 1150
g_cols = ng
g_rows = 2
g_L = 0.07
g_R = 0.98
g_B = 0.18
g_T = 0.85
g_hs = 0.05
g_vs = 0.155
array seen[7]
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/train-loss.png' } else { eval svg(W, H); set output dir.'/train-loss.svg' }
  set multiplot title sprintf("halflab-train: loss and held-out accuracy per precision mode (same weights, same batches)\n%s; thin: the training loss of each step, points: the evaluations", desc)
  set border 3
  set xtics nomirror
  set ytics nomirror
  set grid back lc rgb '#dddddd'
  unset key
  do for [k=1:7] { seen[k] = 0 }
  do for [row=1:2] {
    do for [gi=1:ng] {
      eval cell(gi, row)
      g = word(groups, gi)
      set xlabel 'step'
      set xrange [0:last(g)]
      if (row == 1) {
        set title sprintf("%s\nheld-out and training loss", what(g))
        set ylabel gi == 1 ? 'cross-entropy (nats per token)' : ''
        set autoscale yfix
        set offsets 0, 0, graph 0.05, graph 0.05
      } else {
        set title sprintf("%s: held-out accuracy", g)
        set ylabel gi == 1 ? 'accuracy (%, teacher forcing)' : ''
        set offsets 0, 0, 0, 0
        set yrange [0:102]
      }
      cmd = ''
      do for [k=1:7] {
        m = word(modes, k)
        if (have(g, m)) {
          seen[k] = 1
          pstyle = sprintf("with linespoints pt %d ps 1.5 lw %g dt %d lc rgb '%s' notitle", mode_pt(m), mode_lw(m), mode_dash(m), fcolor(m))
          if (row == 1) {
            cmd = cmd.sprintf("%s '%s' using 'step':'loss' with lines lw 1 lc rgb '%s' notitle", cmd eq '' ? '' : ',', file(g, m), faint(m))
            if (nevals(g, m) > 0) {
              cmd = cmd.sprintf(", \"%s\" using 'step':'eval_loss' %s", evals(g, m, 'eval_loss'), pstyle)
            }
          } else { if (nevals(g, m) > 0) {
            cmd = cmd.sprintf("%s \"%s\" using 'step':(100 * column('eval_acc')) %s", cmd eq '' ? '' : ',', evals(g, m, 'eval_acc'), pstyle)
          } }
        }
      }
      if (cmd eq '') { cmd = 'NaN notitle' }
      # runs that stopped early, named in their panel
      unset label
      if (row == 2) {
        ny = 0.35
        do for [k=1:7] {
          m = word(modes, k)
          if (have(g, m) && note(g, m) ne '') {
            set label k sprintf("%s%s", m, note(g, m)) at graph 0.97, graph ny right tc rgb fcolor(m)
            ny = ny - 0.08
          }
        }
      }
      eval('plot '.cmd)
    }
  }
  do for [k=1:7] {
    if (seen[k]) {
      m = word(modes, k)
      ls_ = sprintf("with linespoints pt %d ps 1.5 lw %g dt %d lc rgb '%s'", mode_pt(m), mode_lw(m), mode_dash(m), fcolor(m)); lt_ = m; eval legend_add
    }
  }
  eval legend_strip(0.05)
  unset multiplot
}
unset output
