# plots/peers.gp RESULTS_DIR — halflab against the PyTorch peer
# (bench/peers/), from one comparison run on the same weights and batches.
# Left: the median training step time per mode (and OpenMP wait policy on
# the CPU), halflab beside PyTorch, whiskers from the fastest to the slowest
# timed step, on a log scale (PyTorch's CPU amp-fp16 can be 20x its other
# steps), the ratio PyTorch / halflab above each pair (above 1: halflab
# faster; none where one side did not run that mode and policy). Middle: the training loss per step of both, overlaid, per mode.
# Right: their relative difference |loss_halflab - loss_torch| / loss_halflab
# per step (log scale): how far the two implementations drift apart.
# Reads peer_step_times.csv and the per-step CSVs under peers/; writes
# peers.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
tin = dir.'/peer_step_times.csv'
if (!file_exists(tin)) {
  print sprintf("peers.gp: %s not found: no chart (run bench/peers/compare_cpu.sh or, on a GPU, bench/peers/gpu_compare.sh)", tin)
  exit
}
# both implementations' device descriptions, folded to the title's width
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g' | fold -s -w 100", tin))
# the run's note, folded to the title's width
note = system(sprintf("sed -n 's/^# note: //p' '%s' | head -1 | sed 's/_/\\\\_/g' | fold -s -w 100", tin))
load = system(sprintf("sed -n 's/^# load: //p' '%s' | head -1", tin))

# One line per (device, mode, policy): label, halflab median/min/max, PyTorch median/min/max, ratio.
pairs = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { k = $c[\"mode\"] \",\" ($c[\"omp_wait_policy\"] == \"-\" ? $c[\"device\"] : $c[\"omp_wait_policy\"]); if (!(k in seen)) { seen[k] = 1; key[++n] = k } v[k, $c[\"impl\"]] = $c[\"step_time_ms_median\"] \",\" $c[\"step_time_ms_min\"] \",\" $c[\"step_time_ms_max\"] } END { print \"mode,where,h,hmin,hmax,p,pmin,pmax\"; for (i = 1; i <= n; i++) { k = key[i]; a = ((k, \"halflab\") in v) ? v[k, \"halflab\"] : \"NaN,NaN,NaN\"; b = ((k, \"pytorch\") in v) ? v[k, \"pytorch\"] : \"NaN,NaN,NaN\"; print k \",\" a \",\" b } }' '%s'", tin)

# The loss runs: for each mode, the first comparison run (peers-NAME) that both sides wrote.
array mode[3] = ['fp32', 'amp-bf16', 'amp-fp16']
array mcolor[3] = [c_fp32, c_bf16, c_fp16]
array mpt[3] = [7, 5, 9]
run_of(m) = system(sprintf("for f in '%s'/peers/train_peers-*_%s_steps.csv; do [ -f \"$f\" ] || continue; r=${f##*/train_}; r=${r%%_%s_steps.csv}; [ -f '%s'/peers/peer_${r}_%s_steps.csv ] && { echo $r; break; }; done", dir, m, m, dir, m))
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

W = 1900
H = 920
g_cols = 3
g_rows = 1
g_L = 0.08
g_R = 0.985
g_B = 0.27
g_T = 0.68
g_hs = 0.065
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/peers.png' } else { eval svg(W, H); set output dir.'/peers.svg' }
  set multiplot title sprintf("halflab vs PyTorch: the same GPT, weights and batches\n%s\n%s%s", \
      desc, note, load eq '' ? '' : '; load average '.load)
  set border 3
  set xtics nomirror
  set ytics nomirror
  set grid ytics back lc rgb '#dddddd'
  unset key

  # ---- step time per mode
  eval cell(1, 1)
  set title "Step time per mode and wait policy\nwhiskers: fastest to slowest step; number: PyTorch / halflab"
  set ylabel 'ms per step (log scale)'
  set xlabel ''
  unset logscale
  set logscale y
  set xrange [*:*]
  set style data histograms
  set style histogram errorbars gap 1.5 lw 1.5
  set style fill solid 0.9 border lc rgb '#333333'
  set boxwidth 0.9
  set datafile columnheaders
  # whiskers and labels inside the axes: the range spans them with room for the labels
  set yrange [bottom / 1.5:top * 4]
  log_lo = bottom / 1.5
  log_hi = top * 4
  eval log125_ytics
  # the ratio only where both sides ran (NaN != NaN marks a missing one), every other one
  # higher so that neighbouring labels never meet
  set xtics rotate by -35 left
  plot pairs using (column('h')):(column('hmin')):(column('hmax')):xtic(strcol('mode')." ".strcol('where')) lc rgb '#7F7F7F' title 'halflab', \
       '' using (column('p')):(column('pmin')):(column('pmax')) fs pattern 2 lc rgb '#333333' title 'PyTorch', \
       '' using ($0):(column('p') == column('p') && column('h') == column('h') ? (column('pmax') > column('hmax') ? column('pmax') : column('hmax')) * (int($0) % 2 ? 2.3 : 1.45) : 1/0):(sprintf('%.2fx', column('p') / column('h'))) \
          with labels notitle
  unset logscale y
  set ytics autofreq
  set xtics norotate
  unset style data
  set style data lines
  set style fill solid 1 noborder

  # ---- loss curves
  eval cell(2, 1)
  set title "Training loss per step\nhalflab solid, PyTorch dashed"
  set ylabel 'loss (mean cross-entropy)'
  set xlabel 'step'
  set yrange [*:*]
  set autoscale x
  if (nloss > 0) {
    cmd = ''
    do for [i=1:3] {
      if (run[i] ne '') {
        cmd = cmd.sprintf("%s'%s' using 'step':'loss' with linespoints pt %d ps 1.2 lw 2.5 lc rgb '%s' notitle, '%s' using 'step':'loss' with linespoints pt %d ps 2 lw 2.5 dt 2 lc rgb '%s' notitle", \
            cmd eq '' ? '' : ', ', hfile(i), mpt[i], mcolor[i], pfile(i), mpt[i] - 1, mcolor[i])
      }
    }
    eval('plot '.cmd)

    # ---- relative difference
    eval cell(3, 1)
    set title "|halflab - PyTorch| / halflab, per step\nequal losses on the bottom row"
    set ylabel 'relative difference'
    set logscale y
    set yrange [3e-11:1]
    set ytics 1e-10, 100, 1
    set format y '10^{%T}'
    set label 1 'equal' at graph 0.01, first 1e-10 offset 0, 0.7 left tc rgb c_note
    set label 2 'fp32 unit roundoff 2^{-24}' at graph 0.99, first 2**-24 offset 0, -0.8 right tc rgb c_fp32  # below its line: the fp32 points sit on and above it
    set label 3 'fp16 unit roundoff 2^{-11}' at graph 0.99, first 2**-11 offset 0, 0.7 right tc rgb c_fp16
    set label 4 'bf16 unit roundoff 2^{-8}' at graph 0.99, first 2**-8 offset 0, 0.7 right tc rgb c_bf16
    cmd = ''
    do for [i=1:3] {
      if (run[i] ne '') {
        dsrc[i] = diff(i)
        cmd = cmd.sprintf("%sdsrc[%d] using (column('step')):(column('difference')) with points pt %d ps 1.6 lc rgb '%s' notitle", cmd eq '' ? '' : ', ', i, mpt[i], mcolor[i])
      }
    }
    eval('plot '.cmd.", 2**-24 with lines dt 3 lw 2 lc rgb c_fp32 notitle, 2**-11 with lines dt 3 lw 2 lc rgb c_fp16 notitle, 2**-8 with lines dt 3 lw 2 lc rgb c_bf16 notitle")
    unset label
    unset logscale y
    set format y '%g'
  } else {
    set title 'No per-step loss of both implementations in peers/'
    plot 1/0 notitle
    eval cell(3, 1)
    plot 1/0 notitle
  }
  # one legend for the three panels
  ls_ = "with boxes lc rgb '#7F7F7F' fs solid 0.9 border lc rgb '#333333'"; lt_ = 'halflab (left)'; eval legend_add
  ls_ = "with boxes lc rgb '#333333' fs pattern 2"; lt_ = 'PyTorch (left)'; eval legend_add
  do for [i=1:3] {
    if (run[i] ne '') {
      ls_ = sprintf("with linespoints pt %d ps 1.2 lw 2.5 lc rgb '%s'", mpt[i], mcolor[i]); lt_ = 'halflab '.mode[i]; eval legend_add
      ls_ = sprintf("with linespoints pt %d ps 2 lw 2.5 dt 2 lc rgb '%s'", mpt[i] - 1, mcolor[i]); lt_ = 'PyTorch '.mode[i]; eval legend_add
    }
  }
  eval legend_strip(0.07)
  unset multiplot
}
