# plots/lost_update.gp RESULTS_DIR — the lost-update experiment: a weight of
# 1 receives 10000 updates of 0.0001, held five ways; the weight after each
# step against the exact sum of the updates. Reads lost_update.csv; writes
# lost_update.png and lost_update.svg.
dir = ARG1
in = dir.'/lost_update.csv'
if (system(sprintf("test -f '%s' && echo 1 || echo 0", in)) eq "0") {
  print sprintf("lost_update.gp: %s not found: no chart (run halflab-numerics absorption)", in)
  exit
}
dev = system(sprintf("grep -q '^cuda,' '%s' && echo cuda || echo cpu", in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))
seed = system(sprintf("sed -n 's/^# seed: //p' '%s'", in))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[5] = ["fp32_master", "fp16_kahan", "fp16_stochastic", "fp16", "bf16"]
array name[5] = ["fp32 master weight (fp16 updates)", "fp16 weight + Kahan compensation", \
                 sprintf("fp16 weight, stochastic rounding (seed %s)", seed), "fp16 weight", "bf16 weight"]
array color[5] = ['#000000', '#009E73', '#CC79A7', '#D55E00', '#0072B2']
array dash[5] = [1, 1, 1, 1, 2]
array width[5] = [2.5, 2.5, 2, 4, 2.5]

is(s) = strcol("device") eq dev && strcol("strategy") eq s

do for [pass=1:2] {   # the same multiplot drawn twice: PNG, then SVG
  if (pass == 1) {
    set terminal pngcairo size 1280,900 enhanced font 'Sans,12'
    set output dir.'/lost_update.png'
  } else {
    set terminal svg size 1280,900 enhanced font 'Sans,12' background rgb 'white'
    set output dir.'/lost_update.svg'
  }
  set multiplot
  set lmargin at screen 0.08
  set rmargin at screen 0.97

  # top: the weight
  set tmargin at screen 0.88
  set bmargin at screen 0.40
  set title sprintf("The lost update: w = 1, then 10000 updates of 0.0001, the weight held five ways\n{/*0.8 %s; fp16 and bf16 weights never move: 0.0001 is below half their spacing at 1}", desc)
  set xlabel ''
  set format x ''
  set ylabel 'weight'
  set xrange [0:10000]
  set yrange [0.9:2.2]
  set ytics 0.2
  set format y '%.1f'
  set border 3
  set xtics nomirror
  set ytics nomirror
  set grid back lc rgb '#dddddd'
  set key top left box opaque spacing 1.1 width 1
  plot in using (column("step")):(is("fp16") ? column("exact_weight") : 1/0) \
         with lines dt 2 lw 6 lc rgb '#bbbbbb' title 'exact: 1 + step x 0.000100016594 (0.0001 in fp16)', \
       for [i=1:5] in using (column("step")):(is(id[i]) ? column("weight") : 1/0) \
         with lines lw width[i] dt dash[i] lc rgb color[i] title name[i]

  # bottom: the error, where the good strategies differ
  set tmargin at screen 0.36
  set bmargin at screen 0.08
  unset title
  set xlabel 'update step'
  set format x '%.0f'
  set ylabel 'weight - exact'
  set yrange [-0.06:0.06]
  set ytics 0.02
  set format y '%+.2f'
  unset key
  set label 1 'fp16 and bf16 fall off this scale: they miss every update' at graph 0.08, graph 0.08 left tc rgb '#D55E00'
  set label 2 'fp16 spacing at 1 ... 2: 0.00098; stochastic rounding wanders by about 0.04, Kahan stays within half a spacing' \
      at graph 0.02, graph 0.92 left tc rgb '#444444'
  plot 0 with lines lw 1 lc rgb '#bbbbbb' notitle, \
       for [i=1:5] in using (column("step")):(is(id[i]) ? column("weight") - column("exact_weight") : 1/0) \
         with lines lw width[i] dt dash[i] lc rgb color[i] notitle
  unset label 1
  unset label 2
  set key
  unset multiplot
  unset output
}
