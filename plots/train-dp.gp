# plots/train-dp.gp RESULTS_DIR — data-parallel training (halflab-train under
# mpirun, scripts/train-all.sh's dp-small and dp-wire runs). Top: the small
# preset's median step per mode, one process with 2 threads against 2 ranks
# of 1 thread, the gradients all-reduced in one piece after the backward
# (fp32) or in buckets during it (fp32, bf16, fp16 on the wire); the
# all-reduce's exposed part (what the backward did not hide) stacked on top.
# Middle: the all-reduce per step, its time inside the collectives against
# its exposed part. Bottom: the tiny preset in amp-fp16 on 2 ranks, each
# step's loss with a bf16 or fp16 wire against the fp32 wire's.
# Reads train_summary.csv and train_dp-wire-*_steps.csv; writes
# train-dp.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/train_summary.csv'
if (!file_exists(in)) {
  print sprintf("train-dp.gp: %s not found: no chart (run scripts/train-all.sh)", in)
  exit
}
count(cond) = int(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } %s { n++ } END { print n + 0 }' '%s'", cond, in)))
n_small = count('$c["name"] ~ /^dp-small-/')
wire(w) = sprintf("%s/train_dp-wire-%s_amp-fp16_steps.csv", dir, w)
have_wire = file_exists(wire('fp32')) && (file_exists(wire('bf16')) || file_exists(wire('fp16')))
if (n_small == 0 && !have_wire) {
  print sprintf("train-dp.gp: no dp-small rows in %s and no dp-wire logs: no chart (train-all.sh runs them where MPI is built)", in)
  exit
}

# One row per bar, in a fixed order: x = 6 x mode + configuration, the
# configuration's label and wire family, the step, the all-reduce's time
# and exposed part (ms), its bytes per step and the step's ratio to the
# one-process step of the same mode.
# concatenated, not sprintf'd: gnuplot's sprintf garbles a format this long once
# a long path lengthens the result (awk then sees its printf doubled)
bars = "< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } \
  $c[\"name\"] ~ /^dp-small-/ && $c[\"status\"] == \"completed\" { r[$c[\"name\"] \" \" $c[\"mode\"]] = $0 } \
  END { print \"x,label,family,step,busy,exposed,mib,ratio\"; \
    split(\"fp32 amp-bf16 amp-fp16\", m, \" \"); \
    split(\"dp-small-1x2 dp-small-2x1-whole dp-small-2x1-fp32 dp-small-2x1-bf16 dp-small-2x1-fp16\", g, \" \"); \
    split(\"1x2|whole|fp32|bf16|fp16\", l, \"|\"); \
    split(\"none fp32 fp32 bf16 fp16\", f, \" \"); \
    for (i = 1; i <= 3; i++) { k = g[1] \" \" m[i]; if (!(k in r)) continue; split(r[k], a, \",\"); base = a[c[\"step_time_ms_median\"]]; \
      for (j = 1; j <= 5; j++) { k = g[j] \" \" m[i]; if (!(k in r)) continue; split(r[k], v, \",\"); \
        printf \"%d,%s,%s,%s,%s,%s,%.1f,%.2f\\n\", 6 * (i - 1) + j - 1, l[j], f[j], v[c[\"step_time_ms_median\"]], \
          v[c[\"allreduce_ms_median\"]] == \"\" ? 0 : v[c[\"allreduce_ms_median\"]], \
          v[c[\"allreduce_exposed_ms_median\"]] == \"\" ? 0 : v[c[\"allreduce_exposed_ms_median\"]], \
          v[c[\"allreduce_bytes\"]] / 1048576, v[c[\"step_time_ms_median\"]] / base } } }' '".in."'"
desc = system(sprintf("sed -n 's/^# device: //p' '%s' '%s'/train_*_summary.csv 2>/dev/null | head -1 | cut -d, -f1 | sed 's/_/\\\\_/g'", in, dir))
# the bar's colour: the wire's family; the one-process bar (no all-reduce) a grey no family uses
bar_color(f) = f eq 'none' ? 0x999999 : fcolor_int(f)

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

W = 1600
H = have_wire ? 1500 : 1050
g_cols = 1
g_rows = have_wire ? 3 : 2
g_L = 0.08
g_R = 0.98
g_B = have_wire ? 0.1 : 0.14
g_T = 0.82
g_vs = 0.11
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/train-dp.png' } else { eval svg(W, H); set output dir.'/train-dp.svg' }
  set multiplot title sprintf("Data-parallel halflab-train on the CPU (mpirun, Open MPI): the small preset, batch 16; %s\n1x2: one process of 2 threads (grey: no all-reduce). The others: 2 ranks of 1 thread, 8 rows each;\nwhole: the gradients all-reduced in fp32 in one piece after the backward; fp32, bf16, fp16: in 25 MiB buckets during the backward,\nthat type on the wire (the bar's colour)", desc)
  set border 3
  set ytics nomirror
  set grid ytics back lc rgb '#dddddd'
  set boxwidth 0.8
  unset key
  set xrange [-0.7:16.7]
  set xtics nomirror font ',11'
  set xtics ()
  set x2tics ('fp32' 2, 'amp-bf16' 8, 'amp-fp16' 14) nomirror scale 0 font ',13'
  set xlabel ''

  if (n_small > 0) {
    eval cell(1, 1)
    set title "median step time; hatched top: the all-reduce's exposed part; labels: ratio to one process's step\n\n"
    set ylabel 'ms per step (median)'
    set yrange [0:*]
    set offsets 0, 0, graph 0.14, 0
    plot bars using 'x':(column('step') - column('exposed')):(0.8):(bar_color(strcol('family'))):xtic(strcol('label')) with boxes lc rgb variable fs solid 0.85 noborder, \
         '' using 'x':'step':(column('x') - 0.4):(column('x') + 0.4):(column('step') - column('exposed')):'step':(bar_color(strcol('family'))) with boxxyerror lc rgb variable fs pattern 4, \
         '' using 'x':'step':(sprintf('%.2fx', column('ratio'))) with labels offset 0, 0.8 font ',10'

    eval cell(1, 2)
    set title "the gradient all-reduce per step: time in the collectives (open) and its exposed part (filled: the wait after the backward, the write-back)\nlabels: MiB each rank sends per step\n"
    set ylabel 'ms per step (median)'
    plot bars using (column('x')):(strcol('family') eq 'none' ? 1/0 : column('busy')):(0.8):(bar_color(strcol('family'))):xtic(strcol('label')) with boxes lc rgb variable lw 2 fs empty, \
         '' using 'x':(strcol('family') eq 'none' ? 1/0 : column('exposed')):(0.5):(bar_color(strcol('family'))) with boxes lc rgb variable fs solid 0.85 noborder, \
         '' using 'x':(strcol('family') eq 'none' ? 1/0 : (column('busy') > column('exposed') ? column('busy') : column('exposed'))):(sprintf('%.1f', column('mib'))) with labels offset 0, 0.8 font ',10', \
         '' using 'x':(strcol('family') eq 'none' ? 0 : 1/0):('no all-reduce') with labels offset 0, 0.8 font ',10' tc rgb c_note
  }

  if (have_wire) {
    eval cell(1, g_rows)
    unset x2tics
    set xtics auto rotate by 0 font ''
    set xrange [*:*]
    set offsets 0, 0, 0, 0
    set logscale y
    set format y '10^{%L}'
    set yrange [1e-7:1]
    set title "the tiny preset in amp-fp16 on 2 ranks: each step's training loss with a 16-bit wire against the fp32 wire's (the same weights and batches)"
    set xlabel 'step'
    set ylabel '|loss / fp32 wire - 1|'
    unset key
    # both logs have the same rows: paste them side by side, columns by name
    rel(w) = sprintf("< awk -F, 'FNR == 1 { f++ } /^#/ { next } { if (!h[f]++) { for (i = 1; i <= NF; i++) c[f, $i] = i; if (f == 2) print \"step,rel\"; next } } \
      f == 1 { l[$c[1, \"step\"]] = $c[1, \"loss\"]; next } ($c[2, \"step\"] in l) { d = $c[2, \"loss\"] / l[$c[2, \"step\"]] - 1; if (d < 0) d = -d; print $c[2, \"step\"] \",\" (d > 0 ? d : 1e-8) }' '%s' '%s'", wire('fp32'), wire(w))
    plot (file_exists(wire('bf16')) ? rel('bf16') : NaN) using 'step':'rel' with lines lw 1.5 lc rgb c_bf16 notitle, \
         (file_exists(wire('fp16')) ? rel('fp16') : NaN) using 'step':'rel' with lines lw 1.5 dt 2 lc rgb c_fp16 notitle
    unset logscale y
    set format y '%g'
    ls_ = "with lines lw 2 lc rgb c_bf16"; lt_ = 'bf16 on the wire'; eval legend_add
    ls_ = "with lines lw 2 dt 2 lc rgb c_fp16"; lt_ = 'fp16 on the wire (the loss scale applied)'; eval legend_add
    eval legend_strip(0.025)
  }
  unset multiplot
}
unset output
