# plots/train-dp.gp RESULTS_DIR — data-parallel training (halflab-train under
# mpirun, scripts/train-all.sh's dp-small and dp-wire runs). Top: the small
# preset's median step per mode, one process with 2 threads against 2 ranks
# of 1 thread, the gradients all-reduced in one piece after the backward
# (fp32) or in buckets during it (fp32, bf16, fp16 on the wire); the
# all-reduce's exposed part (what the backward did not hide) stacked on top.
# Middle: the all-reduce per step, its time inside the collectives against
# its exposed part. Bottom: the tiny preset in amp-fp16 on 2 ranks, each
# step's loss with a bf16 or fp16 wire against the fp32 wire's.
# The title on a slide and in print (a slide draws the top panel alone):
# the 2 ranks' speed-up over one process and the fp16 wire's bytes against
# fp32's, computed from the same rows. Reads train_summary.csv and
# train_dp-wire-*_steps.csv; writes the preset's files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/train_summary.csv')
if (!file_exists(in)) {
  print sprintf("train-dp.gp: %s not found: no chart (run scripts/train-all.sh)", in)
  exit
}
count(cond) = int(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } %s { n++ } END { print n + 0 }' '%s'", cond, in)))
n_small = count('$c["name"] ~ /^dp-small-/')
wire(w) = as_written(sprintf("%s/train_dp-wire-%s_amp-fp16_steps.csv", dir, w))
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
# the screen footer: the device and the runs' settings (the caption in REPORT.md says them too)
desc = system(sprintf("sed -n 's/^# device: //p' '%s' '%s'/train_*_summary.csv 2>/dev/null | head -1 | cut -d, -f1", in, dir)).'; mpirun (Open MPI)'. \
       system("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"name\"] == \"dp-small-2x1-fp32\" { printf \"; the small preset, batch %s; buckets of %s MiB\", $c[\"batch\"], $c[\"bucket_mb\"]; exit }' '".in."'")
# the bar's colour: the wire's family; the one-process bar (no all-reduce) a grey no family uses
bar_color(f) = f eq 'none' ? 0x999999 : fcolor_int(f)

# The message, from the same rows as the bars: 2 ranks (fp32 buckets, the default) against one
# process, as a speed-up (one process's step / the ranks': above 1 the ranks are faster), its range
# over the modes; and the bytes a 16-bit wire sends against the fp32 wire's
sp_range = system("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } \
  $c[\"status\"] == \"completed\" { t[$c[\"name\"] \" \" $c[\"mode\"]] = $c[\"step_time_ms_median\"] } \
  END { n = split(\"fp32 amp-bf16 amp-fp16\", m, \" \"); for (i = 1; i <= n; i++) { a = t[\"dp-small-1x2 \" m[i]]; b = t[\"dp-small-2x1-fp32 \" m[i]]; \
    if (a == \"\" || b == \"\") continue; s = a / b; if (!k++ || s < lo) lo = s; if (k == 1 || s > hi) hi = s } \
    if (k) printf (sprintf(\"%.2f\", lo) == sprintf(\"%.2f\", hi)) ? \"%.2fx\" : \"%.2f-%.2fx\", lo, hi }' '".in."'")
wire_bytes = system("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } \
  $c[\"name\"] ~ /^dp-small-2x1-(fp32|fp16)$/ && $c[\"status\"] == \"completed\" && $c[\"allreduce_bytes\"] > 0 { b[$c[\"allreduce_dtype\"]] = $c[\"allreduce_bytes\"] } \
  END { if ((\"fp32\" in b) && (\"fp16\" in b)) printf \"%.2f\", b[\"fp16\"] / b[\"fp32\"] }' '".in."'")
claim = sp_range eq '' ? 'Data-parallel training on this machine' : \
        sprintf("2 ranks (fp32 wire): %s one process's speed%s", sp_range, wire_bytes eq '' ? '' : sprintf("; fp16 wire: %sx the bytes", wire_bytes))
claim_narrow = sp_range eq '' ? claim : sprintf("2 ranks (fp32 wire): %s one process's speed", sp_range)

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

W = 1600
H = have_wire ? 1500 : 1050
narrow_aspect = have_wire ? 2.1 : 1.45
np_all = (n_small > 0 ? 2 : 0) + (have_wire ? 1 : 0)
footer = desc
do for [out_i=1:out_n] {
  eval out_open(dir, 'train-dp', W, H, out_i)
  set autoscale   # the last output's legend strip fixed the ranges
  long = preset eq 'screen'
  # a slide: the step times alone (the message); elsewhere the all-reduce and the wire's losses too
  np = (preset eq 'slides' && n_small > 0) ? 1 : np_all
  if (n_small > 0) {
    ls_ = "with boxes fs solid 0.85 noborder lc rgb '#999999'"; lt_ = 'one process, 2 threads'; eval legend_add
    do for [w in 'fp32 bf16 fp16'] { ls_ = sprintf("with boxes fs solid 0.85 noborder lc rgb '%s'", fcolor(w)); lt_ = sprintf("2 ranks, %s wire", w); eval legend_add }
    ls_ = "with boxes fs solid 0.3 border lc rgb '#444444' lw 2 lc rgb '#888888'"; lt_ = long ? "the all-reduce's exposed part" : 'exposed all-reduce'; eval legend_add
  }
  if (have_wire && np > 1) {
    ls_ = sprintf("with lines lw 2 dt %s lc rgb c_bf16", mode_dash('amp-bf16')); lt_ = long ? 'loss with bf16 on the wire' : 'bf16 wire (loss)'; eval legend_add
    ls_ = sprintf("with lines lw 2 dt %s lc rgb c_fp16", mode_dash('amp-fp16')); lt_ = long ? 'loss with fp16 on the wire (the loss scale applied)' : 'fp16 wire (loss)'; eval legend_add
  }
  eval legend_count
  ptitle = long ? 3 : 2                       # each panel's title lines, the last blank: the modes' names above the bars
  g_cols = 1
  g_rows = np
  g_T = 1 - text_h((long ? 2.5 : 1) + (narrow ? 2 : 1.6) + ptitle + 0.8)
  g_B = text_h(leg_rows + 3.2 + (long ? 1 : 0))
  g_vs = text_h(ptitle + 1.2 + (narrow ? 4.5 : 3.2))
  g_L = narrow ? 0.16 : 0.08
  g_R = narrow ? 0.97 : 0.98
  set multiplot title title_of("Data-parallel halflab-train: one process of 2 threads (1x2) against 2 ranks of 1 thread, the small preset\nwhole: the gradients all-reduced in fp32 in one piece after the backward; fp32, bf16, fp16: in buckets during the backward, that type on the wire", \
                               narrow ? claim_narrow : claim)
  set border 3
  set ytics nomirror
  eval 'set grid ytics '.grid_opts
  set boxwidth 0.8
  unset key
  set xrange [-0.7:16.7]
  set xtics nomirror scale 0 norotate
  if (narrow) { set xtics rotate by 90 right }
  set xtics ()
  set x2tics ('fp32' 2, 'amp-bf16' 8, 'amp-fp16' 14) nomirror scale 0
  set xlabel ''
  lrot = narrow ? 'rotate by 90 left offset 0, 0.5' : 'offset 0, 0.8'   # labels above the bars, upright where bars are narrow
  pi_ = 0

  if (n_small > 0) {
    pi_ = pi_ + 1
    eval cell(1, pi_)
    set title long ? "median step time; pale top: the all-reduce's exposed part\nlabels: speed-up over one process (its step / this step; above 1: faster)\n" : \
              narrow ? "step; labels: speed-up over 1 process\n" : "median step; labels: speed-up over one process (above 1: faster)\n"
    set ylabel narrow ? 'ms per step' : 'ms per step (median)'
    set yrange [0:*]
    set ytics autofreq
    set format y '%g'
    set offsets 0, 0, graph (narrow ? 0.45 : 0.14), 0
    eval "plot bars using 'x':(column('step') - column('exposed')):(0.8):(bar_color(strcol('family'))):xtic(strcol('label')) with boxes lc rgb variable fs solid 0.85 noborder, \
         '' using 'x':'step':(column('x') - 0.4):(column('x') + 0.4):(column('step') - column('exposed')):'step':(bar_color(strcol('family'))) with boxxyerror lc rgb variable fs solid 0.3 noborder, \
         '' using 'x':'step':(sprintf('%.2fx', 1 / column('ratio'))) with labels ".lrot
    unset label 9999   # the footer, once

    if (np > 1) {
      pi_ = pi_ + 1
      eval cell(1, pi_)
      set title long ? "the gradient all-reduce per step: time in the collectives (open) and its exposed part (filled: the wait after the backward, the write-back)\nlabels: MiB each rank sends per step; none: one process, no all-reduce\n" : \
                narrow ? "all-reduce (open), exposed (filled); MiB sent\n" : "all-reduce: in the collectives (open), exposed (filled); labels: MiB sent\n"
      set ylabel narrow ? 'ms per step' : 'ms per step (median)'
      eval "plot bars using (column('x')):(strcol('family') eq 'none' ? 1/0 : column('busy')):(0.8):(bar_color(strcol('family'))):xtic(strcol('label')) with boxes lc rgb variable lw 2 fs empty, \
           '' using 'x':(strcol('family') eq 'none' ? 1/0 : column('exposed')):(0.5):(bar_color(strcol('family'))) with boxes lc rgb variable fs solid 0.85 noborder, \
           '' using 'x':(strcol('family') eq 'none' ? 1/0 : (column('busy') > column('exposed') ? column('busy') : column('exposed'))):(sprintf('%.1f', column('mib'))) with labels ".lrot.", \
           '' using 'x':(strcol('family') eq 'none' ? 0 : 1/0):('none') with labels ".lrot." tc rgb c_note"
    }
  }

  if (have_wire && np > pi_) {
    pi_ = pi_ + 1
    eval cell(1, pi_)
    unset x2tics
    set xtics auto norotate
    set xrange [*:*]
    set autoscale xfix   # the steps run, not a round tick past them
    set offsets 0, 0, 0, 0
    set logscale y
    set format y '10^{%L}'
    set yrange [1e-7:1]
    set ytics 1e-7, narrow ? 100 : 10, 1
    set title long ? "the tiny preset in amp-fp16 on 2 ranks: each step's training loss with a 16-bit wire against the fp32 wire's (the same weights and batches)" : \
              narrow ? "tiny amp-fp16: loss vs the fp32 wire's" : "tiny, amp-fp16: each step's loss against the fp32 wire's"
    set xlabel 'step'
    set ylabel narrow ? '|loss/fp32 - 1|' : '|loss / fp32 wire - 1|'
    # both logs have the same rows: paste them side by side, columns by name
    rel(w) = sprintf("< awk -F, 'FNR == 1 { f++ } /^#/ { next } { if (!h[f]++) { for (i = 1; i <= NF; i++) c[f, $i] = i; if (f == 2) print \"step,rel\"; next } } \
      f == 1 { l[$c[1, \"step\"]] = $c[1, \"loss\"]; next } ($c[2, \"step\"] in l) { d = $c[2, \"loss\"] / l[$c[2, \"step\"]] - 1; if (d < 0) d = -d; print $c[2, \"step\"] \",\" (d > 0 ? d : 1e-8) }' '%s' '%s'", wire('fp32'), wire(w))
    eval sprintf("plot (file_exists(wire('bf16')) ? rel('bf16') : NaN) using 'step':'rel' with lines lw 1.5 dt %s lc rgb c_bf16 notitle, \
         (file_exists(wire('fp16')) ? rel('fp16') : NaN) using 'step':'rel' with lines lw 1.5 dt %s lc rgb c_fp16 notitle", mode_dash('amp-bf16'), mode_dash('amp-fp16'))
    unset logscale y
    set format y '%g'
    unset label 9999
  }
  eval legend_strip(text_h(leg_rows - 0.3 + (long ? 1 : 0)))
  unset multiplot
}
unset output
