# plots/lost_update.gp RESULTS_DIR — the lost-update experiment: a weight of
# 1 receives 10000 updates of 0.0001, held five ways; the weight after each
# step against the exact sum of the updates. Reads lost_update.csv; writes
# lost_update.png and lost_update.svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/lost_update.csv'
if (!file_exists(in)) {
  print sprintf("lost_update.gp: %s not found: no chart (run halflab-numerics absorption)", in)
  exit
}
# awk over a halflab CSV's rows (VARS: its -v options), c["name"] the index of each column
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
dev = system(sprintf("%s$c[\"device\"] == \"cuda\" { g = 1 } END { print g ? \"cuda\" : \"cpu\" }' '%s'", awk_cols(''), in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))
seed = system(sprintf("sed -n 's/^# seed: //p' '%s'", in))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[5] = ["fp32_master", "fp16_kahan", "fp16_stochastic", "fp16", "bf16"]
array name[5] = ["fp32 master weight (fp16 updates)", "fp16 weight + Kahan compensation", \
                 sprintf("fp16 weight, stochastic rounding (seed %s)", seed), "fp16 weight", "bf16 weight"]
array color[5] = [c_fp32, c_fp16, c_fp16, c_fp16, c_bf16]
array dash[5] = [1, 2, 4, 1, 2]
array width[5] = [2.5, 3, 2, 4, 2.5]

is(s) = strcol("device") eq dev && strcol("strategy") eq s
# the largest distance from the exact sum of a strategy, for the label
maxdev(s) = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"device\"] == \"%s\" && $c[\"strategy\"] == \"%s\" { d = $c[\"weight\"] - $c[\"exact_weight\"]; if (d < 0) d = -d; if (d > m) m = d } END { print m + 0 }' '%s'", dev, s, in)))
dev_sr = maxdev('fp16_stochastic')
dev_kahan = maxdev('fp16_kahan')

do for [pass=1:2] {   # the same multiplot drawn twice: PNG, then SVG
  if (pass == 1) {
    eval png(1280, 900)
    set output dir.'/lost_update.png'
  } else {
    eval svg(1280, 900)
    set output dir.'/lost_update.svg'
  }
  set multiplot
  set lmargin at screen 0.08
  set rmargin at screen 0.97

  # top: the weight
  set tmargin at screen 0.88
  set bmargin at screen 0.40
  set title sprintf("The lost update: w = 1, then 10000 updates of 0.0001, the weight held five ways\n{%s; fp16 and bf16 weights never move: 0.0001 is below half their spacing at 1}", desc)
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
  set key top left nobox noopaque spacing 1.1 width 1
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
  set label 1 'fp16 and bf16 fall off this scale: they miss every update' at graph 0.08, graph 0.08 left tc rgb c_fp16
  set label 2 sprintf("fp16 spacing at 1 ... 2: 0.00098; largest |weight - exact|: stochastic rounding %.2g, Kahan %.2g (%s half a spacing)", \
      dev_sr, dev_kahan, dev_kahan <= 0.00049 ? "within" : "beyond") \
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
