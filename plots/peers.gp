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
dir = ARG1
tin = dir.'/peer_step_times.csv'
if (system(sprintf("test -f '%s' && echo 1 || echo 0", tin)) eq "0") {
  print sprintf("peers.gp: %s not found: no chart (run bench/peers/compare_cpu.sh or, on a GPU, bench/peers/gpu_compare.sh)", tin)
  exit
}
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", tin))
note = system(sprintf("sed -n 's/^# note: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", tin))
load = system(sprintf("sed -n 's/^# load: //p' '%s' | head -1", tin))

# One line per (device, mode, policy): label, halflab median/min/max, PyTorch median/min/max, ratio.
pairs = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { k = $c[\"mode\"] \",\" ($c[\"omp_wait_policy\"] == \"-\" ? $c[\"device\"] : $c[\"omp_wait_policy\"]); if (!(k in seen)) { seen[k] = 1; key[++n] = k } v[k, $c[\"impl\"]] = $c[\"step_ms_median\"] \",\" $c[\"step_ms_min\"] \",\" $c[\"step_ms_max\"] } END { print \"mode,where,h,hmin,hmax,p,pmin,pmax\"; for (i = 1; i <= n; i++) { k = key[i]; a = ((k, \"halflab\") in v) ? v[k, \"halflab\"] : \"NaN,NaN,NaN\"; b = ((k, \"pytorch\") in v) ? v[k, \"pytorch\"] : \"NaN,NaN,NaN\"; print k \",\" a \",\" b } }' '%s'", tin)

# The loss runs: for each mode, the first comparison run (peers-NAME) that both sides wrote.
array mode[3] = ['fp32', 'amp-bf16', 'amp-fp16']
array mcolor[3] = ['#0072B2', '#009E73', '#D55E00']
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
top = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"step_ms_max\"] > m { m = $c[\"step_ms_max\"] } END { print m + 0 }' '%s'", tin)))
bottom = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } m == \"\" || $c[\"step_ms_min\"] < m { m = $c[\"step_ms_min\"] } END { print m + 0 }' '%s'", tin)))

do for [out=1:2] {
  if (out == 1) {
    set terminal pngcairo size 1800,680 enhanced font 'Sans,11'
    set output dir.'/peers.png'
  } else {
    set terminal svg size 1800,680 enhanced font 'Sans,11' background rgb 'white'
    set output dir.'/peers.svg'
  }
  set multiplot layout 1,3 title sprintf("halflab vs PyTorch: the same GPT, weights and batches\n{/*0.8 %s}\n{/*0.8 %s%s}", \
      desc, note, load eq '' ? '' : '; load average '.load) margins 0.06, 0.99, 0.17, 0.80 spacing 0.06, 0.1
  set border 3
  set xtics nomirror
  set ytics nomirror
  set grid ytics back lc rgb '#dddddd'

  # ---- step time per mode
  set title "Training step time: median; whiskers fastest to slowest step\n{/*0.85 number: PyTorch / halflab, above 1 = halflab faster}"
  set ylabel 'ms per step (log)'
  set xlabel ''
  unset logscale
  set logscale y
  set xrange [*:*]
  set style data histograms
  set style histogram errorbars gap 1.5 lw 1.2
  set style fill solid 0.85 border lc rgb '#333333'
  set boxwidth 0.9
  set key top left
  set datafile columnheaders
  set yrange [bottom / 2:top * 6]
  set xtics font ',9'  # six or more mode / policy pairs side by side
  # the ratio only where both sides ran (NaN != NaN marks a missing one)
  plot pairs using 3:4:5:xtic(strcol(1)."\n".strcol(2)) lc rgb '#0072B2' title 'halflab', \
       '' using 6:7:8 lc rgb '#E69F00' title 'PyTorch', \
       '' using ($0):(column(6) == column(6) && column(3) == column(3) ? (column(8) > column(5) ? column(8) : column(5)) * 1.6 : 1/0):(sprintf('%.2fx', column(6) / column(3))) \
          with labels font ',10' notitle
  unset logscale y
  set xtics font ''
  unset style data
  set style data lines

  # ---- loss curves
  set title 'Training loss per step (same batches; halflab solid, PyTorch dashed)'
  set ylabel 'loss (mean cross-entropy)'
  set xlabel 'step'
  set yrange [*:*]
  set autoscale x
  set key top right
  if (nloss > 0) {
    cmd = ''
    do for [i=1:3] {
      if (run[i] ne '') {
        cmd = cmd.sprintf("%s'%s' using 'step':'loss' with lines lw 2 lc rgb '%s' title 'halflab %s', '%s' using 'step':'loss' with lines lw 2 dt 2 lc rgb '#000000' title 'PyTorch %s'", \
            cmd eq '' ? '' : ', ', hfile(i), mcolor[i], mode[i], pfile(i), mode[i])
      }
    }
    eval('plot '.cmd)

    # ---- relative difference
    set title "Relative loss difference |halflab - PyTorch| / halflab\n{/*0.85 (equal losses drawn at 10^{-10})}"
    set ylabel 'relative difference (log)'
    set logscale y
    set yrange [1e-10:1]
    set format y '10^{%T}'
    cmd = ''
    do for [i=1:3] {
      if (run[i] ne '') {
        dsrc[i] = diff(i)
        cmd = cmd.sprintf("%sdsrc[%d] using 1:2 with points pt 7 ps 0.5 lc rgb '%s' title '%s'", cmd eq '' ? '' : ', ', i, mcolor[i], mode[i])
      }
    }
    eval('plot '.cmd.", 2**-24 with lines dt 3 lc rgb '#666666' title 'fp32 unit roundoff 2^{-24}', 2**-11 with lines dt 2 lc rgb '#bbbbbb' title 'fp16 unit roundoff 2^{-11}', 2**-8 with lines dt 3 lc rgb '#999999' title 'bf16 unit roundoff 2^{-8}'")
    unset logscale y
    set format y '%g'
  } else {
    set title 'No per-step loss of both implementations in peers/'
    unset key
    plot 1/0 notitle
    plot 1/0 notitle
  }
  unset multiplot
}
