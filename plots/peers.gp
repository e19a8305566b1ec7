# plots/peers.gp RESULTS_DIR — halflab against the PyTorch peer
# (bench/peers/), from one comparison run on the same weights and batches.
# Left: the median training step time per mode (and OpenMP wait policy on
# the CPU), halflab beside PyTorch, whiskers from the fastest to the slowest
# timed step, on a log scale (PyTorch's CPU amp-fp16 can be 20x its other
# steps), the ratio PyTorch / halflab above each pair (above 1: halflab
# faster; none where one side did not run that mode and policy). Middle: the training loss per step of both, overlaid, per mode.
# Right: their relative difference |loss_halflab - loss_torch| / loss_halflab
# per step (log scale): how far the two implementations drift apart.
# A slide draws the left panel alone; slides and print are titled with
# halflab's speed-up over PyTorch (PyTorch's step / halflab's), computed.
# Reads peer_step_times.csv and the per-step CSVs under peers/; writes the
# preset's files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
tin = as_written(dir.'/peer_step_times.csv')
if (!file_exists(tin)) {
  print sprintf("peers.gp: %s not found: no chart (run bench/peers/compare_cpu.sh or, on a GPU, bench/peers/gpu_compare.sh)", tin)
  exit
}
# both implementations' device descriptions: the screen footer (the run's note and load average are
# in the caption in REPORT.md)
# (PyTorch's device said once where it repeats halflab's up to the thread count)
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/; pytorch: [^;]*;/;/'", tin))

# One line per (device, mode, policy): label, halflab median/min/max, PyTorch median/min/max, ratio.
pairs = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { k = $c[\"mode\"] \",\" ($c[\"omp_wait_policy\"] == \"-\" ? $c[\"device\"] : $c[\"omp_wait_policy\"]); if (!(k in seen)) { seen[k] = 1; key[++n] = k } v[k, $c[\"impl\"]] = $c[\"step_time_ms_median\"] \",\" $c[\"step_time_ms_min\"] \",\" $c[\"step_time_ms_max\"] } END { print \"mode,where,h,hmin,hmax,p,pmin,pmax\"; for (i = 1; i <= n; i++) { k = key[i]; a = ((k, \"halflab\") in v) ? v[k, \"halflab\"] : \"NaN,NaN,NaN\"; b = ((k, \"pytorch\") in v) ? v[k, \"pytorch\"] : \"NaN,NaN,NaN\"; print k \",\" a \",\" b } }' '%s'", tin)

# The loss runs: for each mode, the first comparison run (peers-NAME) that both sides wrote.
array mode[3] = ['fp32', 'amp-bf16', 'amp-fp16']
array mcolor[3] = [c_fp32, c_bf16, c_fp16]
array mpt[3] = [7, 5, 9]
run_of(m) = system("for f in '".dir."'/peers/train_peers-*_".m."_steps.csv; do [ -f \"$f\" ] || continue; r=${f##*/train_}; r=${r%_".m."_steps.csv}; [ -f '".dir."'/peers/peer_${r}_".m."_steps.csv ] && { echo $r; break; }; done")
array run[3]
array dsrc[3]
nloss = 0
do for [i=1:3] { run[i] = run_of(mode[i]); if (run[i] ne '') { nloss = nloss + 1 } }
hfile(i) = sprintf("%s/peers/train_%s_%s_steps.csv", dir, run[i], mode[i])
pfile(i) = sprintf("%s/peers/peer_%s_%s_steps.csv", dir, run[i], mode[i])
# step, |difference| / halflab's loss, joined by step
# (a header line first: the data files are read with columnheaders)
diff(i) = sprintf("< awk -F, 'BEGIN { print \"step,difference\" } FNR == 1 { f++ } /^#/ { next } !hdr[f]++ { for (j = 1; j <= NF; j++) c[f, $j] = j; next } f == 1 { l[$c[1, \"step\"]] = $c[1, \"loss\"]; next } ($c[2, \"step\"] in l) { d = l[$c[2, \"step\"]] - $c[2, \"loss\"]; if (d < 0) d = -d; print $c[2, \"step\"] \",\" (d > 0 ? d / l[$c[2, \"step\"]] : 1e-10) }' '%s' '%s'", hfile(i), pfile(i))

set datafile separator ','
set datafile commentschars '#'
top = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"step_time_ms_max\"] > m { m = $c[\"step_time_ms_max\"] } END { print m + 0 }' '%s'", tin)))
bottom = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } m == \"\" || $c[\"step_time_ms_min\"] < m { m = $c[\"step_time_ms_min\"] } END { print m + 0 }' '%s'", tin)))
# The claim: halflab's speed-up over PyTorch (PyTorch's median step / halflab's: above 1 halflab is
# faster), per mode, at the first policy (or device) the file lists, fp32 and amp-bf16
speedups = system("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { w = ($c[\"omp_wait_policy\"] == \"-\" ? $c[\"device\"] : $c[\"omp_wait_policy\"]); if (first == \"\") first = w } w == first { t[$c[\"mode\"], $c[\"impl\"]] = $c[\"step_time_ms_median\"] } END { n = split(\"fp32 amp-bf16\", m, \" \"); for (i = 1; i <= n; i++) if (t[m[i], \"halflab\"] > 0 && t[m[i], \"pytorch\"] > 0) { printf \"%s%s %.2fx\", s, m[i], t[m[i], \"pytorch\"] / t[m[i], \"halflab\"]; s = \", \" } printf \"|%s\", first }' '".tin."'")
sp_list = speedups[1:strstrt(speedups, '|') - 1]
sp_where = speedups[strstrt(speedups, '|') + 1:]
claim = sp_list eq '' ? 'halflab against PyTorch: the same GPT, weights and batches' : sprintf("halflab's speed-up over PyTorch (%s): %s", sp_where, sp_list)
claim_narrow = sp_list eq '' ? claim : sprintf("Speed-up over PyTorch (%s): %s", sp_where, word(sp_list, 1).' '.word(sp_list, 2))
claim_narrow = claim_narrow[strlen(claim_narrow):] eq ',' ? claim_narrow[1:strlen(claim_narrow) - 1] : claim_narrow
# the loss lines: colour the mode's family, dash the mode's (fp32 solid); points: halflab's filled, PyTorch's open
h_pt(i) = mpt[i]
p_pt(i) = mpt[i] - 1
h_bar = "fs solid 0.9 border lc rgb '#333333'"
p_bar = "fs solid 0.25 border lc rgb '#333333'"

W = 1900
H = 920
narrow_aspect = 2.4
footer = desc
do for [out_i=1:out_n] {
  eval out_open(dir, 'peers', W, H, out_i)
  set autoscale   # the last output's legend strip fixed the ranges
  long = preset eq 'screen'
  # a slide: the step times (the claim); a column: the three panels stacked
  np = preset eq 'slides' ? 1 : 3
  ls_ = sprintf("with boxes lc rgb '#7F7F7F' %s", h_bar); lt_ = long ? 'halflab (left)' : 'halflab'; eval legend_add
  ls_ = sprintf("with boxes lc rgb '#7F7F7F' %s", p_bar); lt_ = long ? 'PyTorch (left)' : 'PyTorch'; eval legend_add
  if (np > 1) {
    do for [i=1:3] {
      if (run[i] ne '') {
        ls_ = sprintf("with linespoints pt %d ps 1.2 %s", h_pt(i), mode_line(mode[i])); lt_ = 'halflab '.mode[i]; eval legend_add
        ls_ = sprintf("with linespoints pt %d ps 1.6 %s", p_pt(i), mode_line(mode[i])); lt_ = 'PyTorch '.mode[i]; eval legend_add
      }
    }
  }
  eval legend_count
  g_cols = narrow ? 1 : np
  g_rows = narrow ? np + 1 : 1   # in a column the step times take two rows: their names stand upright under them
  ptitle = long ? 2 : 1
  g_T = 1 - text_h(1 + (narrow ? 2 : 1.6) + ptitle)
  g_B = text_h(leg_rows + (narrow ? 3.2 : preset eq 'print' ? 9 : 6.5) + (long ? 1 : 0))   # the left panel's slanted names (narrow: the last panel's x label)
  g_vs = text_h(ptitle + 3.4)
  g_L = narrow ? 0.2 : np == 1 ? 0.1 : long ? 0.08 : 0.1
  g_R = narrow ? 0.95 : 0.985
  g_hs = long ? 0.065 : 0.085
  set multiplot title title_of("halflab vs PyTorch: the same GPT, weights and batches", narrow ? claim_narrow : claim)
  set border 3
  set xtics nomirror
  set ytics nomirror
  eval 'set grid ytics '.grid_opts
  unset key

  # ---- step time per mode
  eval cell(1, 1)
  if (narrow) { eval sprintf("set bmargin at screen %.4f", g_T - 2 * cell_h(0) - g_vs + text_h(6)) }
  set title long ? "Step time per mode and wait policy; whiskers: fastest\nto slowest step; labels: halflab's speed-up over PyTorch" : \
            "step time; labels: halflab's speed-up"
  set ylabel 'ms per step (log scale)'
  set xlabel ''
  unset logscale
  set logscale y
  set xrange [*:*]
  set style data histograms
  set style histogram errorbars gap 1.5 lw 1.5
  set boxwidth 0.9
  set datafile columnheaders
  # whiskers and labels inside the axes: the range spans them with room for the labels
  set yrange [bottom / 1.5:top * 4]
  log_lo = bottom / 1.5
  log_hi = top * 4
  eval log125_ytics
  # the speed-up only where both sides ran (NaN != NaN marks a missing one), every other one
  # higher so that neighbouring labels never meet
  set xtics rotate by -35 left
  if (preset eq 'print') { set xtics rotate by 90 right }
  set style fill solid 0.9 border lc rgb '#333333'   # (the whiskers take the border's colour only when one is set)
  eval sprintf("plot pairs using (column('h')):(column('hmin')):(column('hmax')):xtic(strcol('mode').' '.strcol('where')) lc rgb '#7F7F7F' %s notitle, \
       '' using (column('p')):(column('pmin')):(column('pmax')) lc rgb '#7F7F7F' %s notitle, \
       '' using ($0):(column('p') == column('p') && column('h') == column('h') ? (column('pmax') > column('hmax') ? column('pmax') : column('hmax')) * (int($0) %% 2 ? 2.3 : 1.45) : 1/0):(sprintf('%%.2fx', column('p') / column('h'))) \
          with labels notitle", h_bar, p_bar)
  unset label 9999   # the footer, once
  unset logscale y
  set ytics autofreq
  set xtics norotate
  unset style data
  set style data lines
  set style fill solid 1 noborder

  if (np > 1) {
    # ---- loss curves
    eval narrow ? cell(1, 3) : cell(2, 1)
    set title long ? "Training loss per step\nhalflab filled points, PyTorch open" : 'training loss'
    set ylabel long ? 'loss (mean cross-entropy)' : 'loss'
    set xlabel (narrow ? '' : 'step')
    set yrange [*:*]
    set autoscale x
    if (nloss > 0) {
      cmd = ''
      do for [i=1:3] {
        if (run[i] ne '') {
          cmd = cmd.sprintf("%s'%s' using 'step':'loss' with linespoints pt %d ps 1.2 %s notitle, '%s' using 'step':'loss' with linespoints pt %d ps 1.6 %s notitle", \
              cmd eq '' ? '' : ', ', hfile(i), h_pt(i), mode_line(mode[i]), pfile(i), p_pt(i), mode_line(mode[i]))
        }
      }
      eval('plot '.cmd)

      # ---- relative difference
      eval narrow ? cell(1, 4) : cell(3, 1)
      set title long ? "|halflab - PyTorch| / halflab, per step\nequal losses on the bottom row" : 'relative loss difference'
      set ylabel long ? 'relative difference' : 'relative diff.'
      set xlabel 'step'
      set logscale y
      set yrange [3e-11:1]
      set ytics 1e-10, narrow ? 1000 : 100, 1
      set format y '10^{%T}'
      set label 1 'equal' at graph 0.01, first 1e-10 offset 0, 0.7 left tc rgb c_note
      # the unit roundoffs: fp32's below its line (its points sit on and above it), the others above theirs
      set label 2 (long ? 'fp32 unit roundoff 2^{-24}' : 'fp32 2^{-24}') at graph 0.99, first 2**-24 offset 0, -0.8 right tc rgb c_fp32
      set label 3 (long ? 'fp16 unit roundoff 2^{-11}' : 'fp16 2^{-11}') at graph 0.99, first 2**-11 offset 0, (long ? 0.7 : -0.8) right tc rgb c_fp16
      set label 4 (long ? 'bf16 unit roundoff 2^{-8}' : 'bf16 2^{-8}') at graph 0.99, first 2**-8 offset 0, 0.7 right tc rgb c_bf16
      cmd = ''
      do for [i=1:3] {
        if (run[i] ne '') {
          dsrc[i] = diff(i)
          cmd = cmd.sprintf("%sdsrc[%d] using (column('step')):(column('difference')) with points pt %d ps 1.6 lc rgb '%s' notitle", cmd eq '' ? '' : ', ', i, h_pt(i), mcolor[i])
        }
      }
      # the roundoff lines thin, each dashed as its type's mode is (fp32 solid)
      eval('plot '.cmd.sprintf(", 2**-24 with lines lw 1 lc rgb c_fp32 notitle, 2**-11 with lines lw 1 dt %s lc rgb c_fp16 notitle, 2**-8 with lines lw 1 dt %s lc rgb c_bf16 notitle", \
           mode_dash('amp-fp16'), mode_dash('amp-bf16')))
      do for [k=1:4] { unset label k }
      unset logscale y
      set format y '%g'
    } else {
      set title 'No per-step loss of both implementations in peers/'
      plot 1/0 notitle
      eval narrow ? cell(1, 4) : cell(3, 1)
      plot 1/0 notitle
    }
  }
  # one legend for the panels
  eval legend_strip(text_h(leg_rows - 0.3 + (long ? 1 : 0)))
  unset multiplot
}
unset output
