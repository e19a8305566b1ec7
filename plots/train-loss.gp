# plots/train-loss.gp RESULTS_DIR — halflab-train's loss and accuracy per
# precision mode. One column per run group found (tiny, gpt2-converge,
# absorb, underflow, in that order): on top the training loss of every step
# (thin) and the held-out loss at the evaluations (points), below the
# held-out accuracy. Every mode starts from the same weights and sees the
# same batches. slides and the 3.5-in print file draw the loss row only
# (side by side on a slide, stacked for a column). Reads
# train_NAME_MODE_steps.csv (and the summaries for the runs' status and
# final losses); writes the preset's files (style.gp).
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

modes = 'fp32 amp-fp16 amp-bf16 fp16-noscale fp16-static fp16-master fp16-pure'
# colour: the mode's family; dash and point: the mode (style.gp)
faint(m) = '#C0'.fcolor(m)[2:7]
file(g, m) = as_written(sprintf('%s/train_%s_%s_steps.csv', dir, g, m))
# the header and the rows whose column `col` is not empty (evaluation steps)
evals(g, m, col) = sprintf("< awk -F, -v k=%s '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } length($c[k])' '%s'", col, file(g, m))
have(g, m) = system(sprintf("test -f '%s' && echo 1 || echo 0", file(g, m))) eq "1"
# status and last step from the summary: "diverged at step 5", or ''
note(g, m) = system("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"status\"] != \"completed\" { printf \" (%s at step %s)\", $c[\"status\"], $c[\"steps_done\"] }' '".as_written(dir."/train_".g."_".m."_summary.csv")."' 2>/dev/null")
# the run's length (the steps asked, over the group's summaries)
last(g) = real(system(sprintf("cat '%s'/train_%s_*_summary.csv 2>/dev/null | LC_ALL=C sed 's/^\\xef\\xbb\\xbf//; s/\\r$//' | awk -F, '/^#/ { hdr = 1; next } hdr { hdr = 0; for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"steps\"] > n { n = $c[\"steps\"] } END { print n + 0 }'", dir, g)))
sumval(g, m, col) = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c[\"%s\"]; exit }' '%s' 2>/dev/null", col, as_written(sprintf('%s/train_%s_%s_summary.csv', dir, g, m))))
nevals(g, m) = int(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } length($c[\"eval_acc\"]) { n++ } END { print n + 0 }' '%s'", file(g, m))))
what(g) = group_title(g)
# the device of the first group's runs (its first mode's file), for the screen footer
desc = system(sprintf("sed -n 's/^# device: //p' \"$(ls '%s'/train_%s_*_steps.csv | head -1)\" | head -1 | cut -d, -f1", dir, word(groups, 1)))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
set datafile missing ''

# the claim: how far the amp modes' final held-out loss lies from fp32's, in the first group
g1 = word(groups, 1)
l32 = sumval(g1, 'fp32', 'eval_loss')
worst = ''
worst_d = 0
do for [m in 'amp-bf16 amp-fp16'] {
  lm = sumval(g1, m, 'eval_loss')
  if (l32 ne '' && lm ne '' && sumval(g1, m, 'status') eq 'completed') {
    d = real(lm) / real(l32) - 1
    if (worst eq '' || abs(d) > abs(worst_d)) { worst = m; worst_d = d }
  }
}
claim = worst eq '' ? sprintf("%s: held-out loss per precision mode", g1) : \
        abs(worst_d) < 0.02 ? sprintf("amp-bf16 and amp-fp16 end within %.2g%% of fp32's loss", 100 * abs(worst_d)) : \
        sprintf("%s ends %+.1f%% from fp32's held-out loss (%s)", worst, 100 * worst_d, g1)
# a tick step of 1, 2 or 5 times a power of ten, about x
nice_tic(x) = (x / 10**floor(log10(x)) >= 5 ? 5 : x / 10**floor(log10(x)) >= 2 ? 2 : 1) * 10**floor(log10(x))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
set datafile missing ''

W = 620 * ng + 120 < 1280 ? 1280 : 620 * ng + 120   # the title needs 1280 px
H = 1150
narrow_aspect = 0.62 * ng + 0.35   # the loss panels stacked, the legend under them
array seen[7]
do for [k=1:7] { seen[k] = 0; do for [gi=1:ng] { if (have(word(groups, gi), word(modes, k))) { seen[k] = 1 } } }
footer = desc
do for [out_i=1:out_n] {
  eval out_open(dir, 'train-loss', W, H, out_i)
  set autoscale   # the last output's legend strip fixed the ranges
  do for [k=1:7] {
    if (seen[k]) {
      m = word(modes, k)
      ls_ = sprintf("with linespoints pt %d ps 1.5 %s", mode_pt(m), mode_line(m)); lt_ = m; eval legend_add
    }
  }
  eval legend_count
  # screen: loss over accuracy, a column per group; slides: the loss row; a column: the loss panels stacked
  rows = preset eq 'screen' ? 2 : 1
  g_cols = narrow ? 1 : ng
  g_rows = narrow ? ng : rows
  ptitle = preset eq 'screen' ? 2 : 1                       # lines of each panel's title
  g_T = 1 - text_h((preset eq 'screen' ? 2 : 1) + (narrow ? 2 : 1.6) + ptitle)
  g_B = text_h(leg_rows + 3.2 + (preset eq 'screen' ? 1 : 0))
  g_vs = text_h(ptitle + 3.4)
  g_L = narrow ? 0.19 : (preset eq 'screen' ? 0.07 : 0.075)
  g_R = narrow ? 0.95 : 0.98
  g_hs = preset eq 'screen' ? 0.05 : 0.06
  set multiplot title title_of("halflab-train: loss and held-out accuracy per precision mode (same weights, same batches)\nthin: the training loss of each step, points: the evaluations", claim)
  set border 3
  set xtics nomirror
  set ytics nomirror
  eval 'set grid xtics ytics '.grid_opts
  unset key
  do for [row=1:rows] {
    do for [gi=1:ng] {
      eval narrow ? cell(1, gi) : cell(gi, row)
      g = word(groups, gi)
      set xlabel (narrow && gi < ng) ? '' : 'step'
      set xrange [0:last(g)]
      set xtics autofreq
      if (preset ne 'screen') { set xtics nice_tic(last(g) / 4) }
      if (row == 1) {
        set title preset eq 'screen' ? sprintf("%s\nheld-out and training loss", what(g)) : g
        set ylabel (gi == 1 || narrow) ? (preset eq 'screen' ? 'cross-entropy (nats per token)' : narrow ? 'loss (nats)' : 'loss (nats/token)') : ''
        set autoscale yfix
        set yrange [*:*]
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
          pstyle = sprintf("with linespoints pt %d ps 1.5 %s notitle", mode_pt(m), mode_line(m))
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
      # runs that stopped early, named in their accuracy panel (screen) or under the loss panel's title
      do for [k=1:7] { unset label k }
      ny = 0.35
      do for [k=1:7] {
        m = word(modes, k)
        if (have(g, m) && note(g, m) ne '' && (row == 2 || rows == 1)) {
          if (rows == 1) {
            set label k sprintf("%s %s (step %s)", m, sumval(g, m, 'status'), sumval(g, m, 'steps_done')) at graph 0.98, graph ny + 0.6 right tc rgb fcolor(m) front
            ny = ny - 0.08
          } else {
            set label k sprintf("%s%s", m, note(g, m)) at graph 0.97, graph ny right tc rgb fcolor(m)
            ny = ny - 0.08
          }
        }
      }
      eval('plot '.cmd)
      unset label 9999   # the footer, once
    }
  }
  eval legend_strip(text_h(leg_rows - 0.3 + (preset eq 'screen' ? 1 : 0)))
  unset multiplot
}
unset output
