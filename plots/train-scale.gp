# plots/train-scale.gp RESULTS_DIR — the loss scale of halflab-train's modes
# with a GradScaler, step by step, skipped steps (inf/NaN gradients: no
# update, the scale halves) marked. One panel per run group with a scaled
# mode (scale: amp-fp16 with the scale doubling every 25 clean steps; tiny;
# gpt2 and its convergence run on a GPU). Reads train_NAME_MODE_steps.csv; writes
# train-scale.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
groups = ''
do for [g in 'scale tiny gpt2 gpt2-converge'] {
  if (system(sprintf("ls '%s'/train_%s_amp-fp16_steps.csv '%s'/train_%s_fp16-static_steps.csv '%s'/train_%s_fp16-master_steps.csv 2>/dev/null | head -1", dir, g, dir, g, dir, g)) ne "") {
    groups = groups.' '.g
  }
}
if (words(groups) == 0) {
  print sprintf("train-scale.gp: no train_*_steps.csv of a mode with a loss scaler in %s: no chart (run scripts/train-all.sh)", dir)
  exit
}
ng = words(groups)
desc = system(sprintf("sed -n 's/^# device: //p' \"$(ls '%s'/train_*_steps.csv 2>/dev/null | head -1)\" | cut -d, -f1 | sed 's/_/\\\\_/g'", dir))

modes = 'amp-fp16 fp16-static fp16-master'

file(g, m) = sprintf('%s/train_%s_%s_steps.csv', dir, g, m)
group_files(g) = sprintf("'%s' '%s' '%s'", file(g, 'amp-fp16'), file(g, 'fp16-static'), file(g, 'fp16-master'))
have(g, m) = system(sprintf("test -f '%s' && echo 1 || echo 0", file(g, m))) eq "1"
skips(g, m) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } $c[k] == 1' k=skipped '%s'", file(g, m))
nskips(g, m) = int(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[k] == 1 { n++ } END { print n + 0 }' k=skipped '%s'", file(g, m))))
interval(g) = system(sprintf("sed -n 's/^# command: .*--growth-interval \\([0-9]*\\).*/\\1/p' '%s' | head -1", file(g, 'amp-fp16')))
what(g) = g eq 'scale' ? sprintf("scale: tiny GPT, amp-fp16, x2 after %s clean steps", interval(g)) : \
          g eq 'tiny' ? "tiny: growth interval 2000" : \
          g eq 'gpt2' ? "GPT-2 124M shape" : g eq 'gpt2-converge' ? "GPT-2 124M shape, convergence run" : \
          g eq 'absorb' ? "demonstration: SGD, lr 0.001" : g eq 'underflow' ? "demonstration: SGD, init x 0.05" : g

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

W = 620 * ng + 120
H = 800
g_cols = ng
g_L = 0.08
g_R = 0.98
g_B = 0.25
g_T = 0.77
g_hs = 0.07
array seen[3]
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/train-scale.png' } else { eval svg(W, H); set output dir.'/train-scale.svg' }
  set multiplot title sprintf("Loss scale per step (GradScaler: x2 after the growth interval of clean steps, x0.5 and the step skipped on inf/NaN)\n%s; fp16-static keeps its scale and only skips", desc)
  set border 3
  set xtics nomirror
  set ytics nomirror
  set grid back lc rgb '#dddddd'
  set logscale y 2
  set format y '2^{%L}'
  set ytics 2
  set xlabel 'step'
  unset key
  do for [k=1:3] { seen[k] = 0 }
  do for [gi=1:ng] {
    eval cell(gi, 1)
    g = word(groups, gi)
    set title what(g)
    set ylabel gi == 1 ? 'loss scale' : ''
    cmd = ''
    # drawn in this order, amp-fp16 widest: a line that runs on top of another leaves it visible
    do for [k=1:3] {
      m = word(modes, k)
      if (have(g, m)) {
        seen[k] = 1
        n = nskips(g, m)
        cmd = cmd.sprintf("%s '%s' using 'step':'scale' with steps lw %g dt %d lc rgb '%s' notitle", cmd eq '' ? '' : ',', file(g, m), k == 1 ? 5 : 2.5, mode_dash(m), k == 1 ? '#F0A878' : fcolor(m))
        if (n > 0) {
          cmd = cmd.sprintf(", \"%s\" using 'step':'scale' with points pt 2 ps 2 lw 2.5 lc rgb c_fp32 notitle", skips(g, m))
        }
        set label 10 + k sprintf("%s: %d skipped", m, n) at graph 0.98, graph 0.05 + 0.08 * (k - 1) right
      }
    }
    # the range by hand: a flat scale would be an empty autoscaled range
    sc_lo = real(system(sprintf("cat %s 2>/dev/null | awk -F, '/^#/ { hdr = 1; next } hdr { hdr = 0; for (i = 1; i <= NF; i++) c[$i] = i; next } c[\"scale\"] && $c[\"scale\"] != \"\" && (m == \"\" || $c[\"scale\"] + 0 < m) { m = $c[\"scale\"] + 0 } END { print m + 0 }'", group_files(g))))
    sc_hi = real(system(sprintf("cat %s 2>/dev/null | awk -F, '/^#/ { hdr = 1; next } hdr { hdr = 0; for (i = 1; i <= NF; i++) c[$i] = i; next } c[\"scale\"] && $c[\"scale\"] + 0 > m { m = $c[\"scale\"] + 0 } END { print m + 0 }'", group_files(g))))
    set yrange [(sc_lo > 0 ? sc_lo : 1) / 2:(sc_hi > 0 ? sc_hi : 1) * 8]
    eval('plot '.cmd)
    unset label
  }
  do for [k=1:3] {
    if (seen[k]) { m = word(modes, k); ls_ = sprintf("with lines lw %g dt %d lc rgb '%s'", k == 1 ? 5 : 2.5, mode_dash(m), k == 1 ? '#F0A878' : fcolor(m)); lt_ = m; eval legend_add }
  }
  ls_ = "with points pt 2 ps 2 lw 2.5 lc rgb c_fp32"; lt_ = 'skipped step (inf/NaN gradients)'; eval legend_add
  eval legend_strip(0.07)
  unset multiplot
}
unset output
