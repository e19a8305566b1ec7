# plots/train-scale.gp RESULTS_DIR — the loss scale of halflab-train's modes
# with a GradScaler, step by step, skipped steps (inf/NaN gradients: no
# update, the scale halves) marked. One panel per run group with a scaled
# mode (scale: amp-fp16 with the scale doubling every 25 clean steps; tiny;
# gpt2 and its convergence run on a GPU); slides show the first group only,
# the 3.5-in print file stacks them. Reads train_NAME_MODE_steps.csv; writes
# the preset's files (style.gp).
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

modes = 'amp-fp16 fp16-static fp16-master'

file(g, m) = as_written(sprintf('%s/train_%s_%s_steps.csv', dir, g, m))
group_files(g) = sprintf("'%s' '%s' '%s'", file(g, 'amp-fp16'), file(g, 'fp16-static'), file(g, 'fp16-master'))
# the device of the first group's runs, for the screen footer
desc = system(sprintf("sed -n 's/^# device: //p' \"$(ls %s 2>/dev/null | head -1)\" | head -1 | cut -d, -f1", group_files(word(groups, 1))))
have(g, m) = system(sprintf("test -f '%s' && echo 1 || echo 0", file(g, m))) eq "1"
skips(g, m) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } $c[k] == 1' k=skipped '%s'", file(g, m))
nskips(g, m) = int(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[k] == 1 { n++ } END { print n + 0 }' k=skipped '%s'", file(g, m))))
interval(g) = system(sprintf("sed -n 's/^# command: .*--growth-interval \\([0-9]*\\).*/\\1/p' '%s' | head -1", file(g, 'amp-fp16')))
what(g) = g eq 'scale' ? sprintf("scale: tiny GPT, amp-fp16, x2 after %s clean steps", interval(g)) : \
          g eq 'tiny' ? "tiny: growth interval 2000" : \
          g eq 'gpt2' ? "GPT-2 124M shape" : g eq 'gpt2-converge' ? "GPT-2 124M shape, convergence run" : \
          g eq 'absorb' ? "demonstration: SGD, lr 0.001" : g eq 'underflow' ? "demonstration: SGD, init x 0.05" : g

# the line of each mode: amp-fp16 wide, drawn first, and light where another mode's line may run on top
# of it (shared: the panel has more than one mode), so that it stays visible
scale_line(k, m, shared) = sprintf("lw %g dt %s lc rgb '%s'", k == 1 ? 3.5 : 2.5, mode_dash(m), k == 1 && shared ? '#F0A878' : fcolor(m))
shared_of(g) = have(g, 'fp16-static') || have(g, 'fp16-master')
skipped_style = "with points pt 2 ps 2 lw 2.5 lc rgb c_ref"
# the skipped steps of each mode of a group, for its panel's title
skip_list(g) = (sl_ = '', sl_sep = '', sl_n = sum [k = 1:words(modes)] (have(g, word(modes, k)) ? \
  (sl_ = sl_.sl_sep.word(modes, k).' '.nskips(g, word(modes, k)), sl_sep = ', ', 1) : 0), sl_)
# the claim, from the first group's amp-fp16 run
g1 = word(groups, 1)
claim = have(g1, 'amp-fp16') ? (interval(g1) ne '' ? \
          sprintf("Scale x2 after %s clean steps; x0.5 at %d overflows", interval(g1), nskips(g1, 'amp-fp16')) : \
          sprintf("amp-fp16's loss scale: x0.5 at %d overflows (%s)", nskips(g1, 'amp-fp16'), g1)) : \
        sprintf("the loss scale per step (%s)", g1)

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

W = 620 * ng + 120 < 1280 ? 1280 : 620 * ng + 120   # the title needs 1280 px
H = 800
narrow_aspect = 0.55 * ng + 0.3
array seen[3]
do for [k=1:3] { seen[k] = 0; do for [gi=1:ng] { if (have(word(groups, gi), word(modes, k))) { seen[k] = 1 } } }
footer = desc
do for [out_i=1:out_n] {
  eval out_open(dir, 'train-scale', W, H, out_i)
  set autoscale   # the last output's legend strip fixed the ranges
  np = preset eq 'slides' ? 1 : ng     # a slide: the first group's panel
  do for [k=1:3] {
    if (seen[k] && (np == ng || have(g1, word(modes, k)))) { m = word(modes, k); ls_ = 'with lines '.scale_line(k, m, np == 1 ? shared_of(g1) : 1); lt_ = m; eval legend_add }
  }
  ls_ = skipped_style; lt_ = 'skipped step (inf/NaN gradients)'; eval legend_add
  eval legend_count
  g_cols = narrow ? 1 : np
  g_rows = narrow ? np : 1
  ptitle = preset eq 'slides' ? 0 : 2   # a slide's one panel: the claim is its title
  g_T = 1 - text_h((preset eq 'screen' ? 2 : 1) + (narrow ? 2 : 1.6) + ptitle)
  g_B = text_h(leg_rows + 3.2 + (preset eq 'screen' ? 1 : 0))
  g_vs = text_h(2 + 3.4)
  g_L = narrow ? 0.2 : np == 1 ? 0.09 : 0.08
  g_R = narrow ? 0.95 : 0.98
  g_hs = 0.07
  set multiplot title title_of("Loss scale per step (GradScaler: x2 after the growth interval of clean steps, x0.5 and the step skipped on inf/NaN)\nfp16-static keeps its scale and only skips", claim)
  set border 3
  set xtics nomirror
  set ytics nomirror
  eval 'set grid xtics ytics '.grid_opts
  set logscale y 2
  set format y '2^{%L}'
  unset key
  do for [gi=1:np] {
    eval narrow ? cell(1, gi) : cell(gi, 1)
    g = word(groups, gi)
    set xlabel (narrow && gi < np) ? '' : 'step'
    # the skipped steps in the title: a label inside the axes would sit on a line
    set title ptitle == 0 ? '' : sprintf("%s\nskipped: %s", preset eq 'screen' ? what(g) : g, skip_list(g))
    set ylabel (gi == 1 || narrow) ? 'loss scale' : ''
    cmd = ''
    do for [k=1:3] {
      m = word(modes, k)
      if (have(g, m)) {
        cmd = cmd.sprintf("%s '%s' using 'step':'scale' with steps %s notitle", cmd eq '' ? '' : ',', file(g, m), scale_line(k, m, np == 1 ? shared_of(g) : 1))
        if (nskips(g, m) > 0) {
          cmd = cmd.sprintf(", \"%s\" using 'step':'scale' %s notitle", skips(g, m), skipped_style)
        }
      }
    }
    # the range by hand: a flat scale would be an empty autoscaled range
    sc_lo = real(system(sprintf("cat %s 2>/dev/null | awk -F, '/^#/ { hdr = 1; next } hdr { hdr = 0; for (i = 1; i <= NF; i++) c[$i] = i; next } c[\"scale\"] && $c[\"scale\"] != \"\" && (m == \"\" || $c[\"scale\"] + 0 < m) { m = $c[\"scale\"] + 0 } END { print m + 0 }'", group_files(g))))
    sc_hi = real(system(sprintf("cat %s 2>/dev/null | awk -F, '/^#/ { hdr = 1; next } hdr { hdr = 0; for (i = 1; i <= NF; i++) c[$i] = i; next } c[\"scale\"] && $c[\"scale\"] + 0 > m { m = $c[\"scale\"] + 0 } END { print m + 0 }'", group_files(g))))
    y_lo = (sc_lo > 0 ? sc_lo : 1) / 2
    y_hi = (sc_hi > 0 ? sc_hi : 1) * 2
    set yrange [y_lo:y_hi]
    # a power of two per tick, fewer where the range is wide or the panel short
    set ytics 2 ** ceil((log(y_hi / y_lo) / log(2)) / (narrow ? 4 : 6))
    eval('plot '.cmd)
    unset label 9999   # the footer, once
  }
  eval legend_strip(text_h(leg_rows - 0.3 + (preset eq 'screen' ? 1 : 0)))
  unset multiplot
}
unset output
