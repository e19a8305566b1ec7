# plots/train-hist.gp RESULTS_DIR — gradient histograms of halflab-train
# against fp16's zones, the chart of Micikevicius et al., "Mixed Precision
# Training" (ICLR 2018), from our own runs: the share of weight-gradient
# elements per power of two of |g| (log2 bins; exact zeros in their own bar
# on the left), at the middle histogram step of each run group.
#   grey bars           fp32: the gradients as they are (what fp16 would do to them)
#   vermillion dashed   amp-fp16: the same gradients times the loss scale, as its
#                       fp16 backward carries them
#   vermillion dotted   fp16-noscale: its gradients as computed in fp16 without scaling
# Only fp32's bars are filled: outlines over them do not blend into a third colour.
# Shaded: flushed to zero (below 2^-25), subnormal (2^-24 .. 2^-14),
# overflow (65520 and above). A slide shows the first group alone, its
# title the share of the gradients below fp16's normal range with and
# without the scale; the 3.5-in print file stacks the groups. Reads
# train_NAME_MODE_hist.csv; writes the preset's files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
groups = ''
do for [g in 'tiny gpt2-converge absorb underflow'] {   # the order of train-loss and train-underflow
  if (system(sprintf("test -f '%s/train_%s_fp32_hist.csv' && echo 1 || echo 0", dir, g)) eq "1") {
    groups = groups.' '.g
  }
}
if (words(groups) == 0) {
  print sprintf("train-hist.gp: no train_*_fp32_hist.csv in %s: no chart (run scripts/train-all.sh)", dir)
  exit
}
ng = words(groups)
file(g, m) = as_written(sprintf('%s/train_%s_%s_hist.csv', dir, g, m))
have(g, m) = system(sprintf("test -f '%s' && echo 1 || echo 0", file(g, m))) eq "1"
# the steps with histograms in fp32's file; the middle one
midstep(g) = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c[\"step\"] }' '%s' | sort -un | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'", file(g, 'fp32')))
# rows of one step and one kind of gradients: (log2_lo + 0.5, percent); the exact zeros at x = zx (the
# columns by name, given to awk as variables: the command sits inside the plot command's double quotes)
rows(g, m, step, kind) = sprintf("< awk -F, -v OFS=, -v cs=step -v cg=grads -v cz=fp16_zone -v cl=log2_lo -v cf=frac -v s=%s -v k=%s -v zx=%d '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[cs] == s && $c[cg] == k && $c[cz] !~ /nonfinite/ { print (length($c[cl]) ? $c[cl] + 0.5 : zx), 100 * $c[cf] }' '%s'", step, kind, zx, file(g, m))
# the same as an outline: the tops of the bins joined, down to the floor where a run of bins ends
# (a filled bar would blend with fp32's, an outline per bin would hatch it)
outline(g, m, step, kind) = sprintf("< awk -F, -v OFS=, -v cs=step -v cg=grads -v cz=fp16_zone -v cl=log2_lo -v cf=frac -v s=%s -v k=%s -v zx=%d '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[cs] == s && $c[cg] == k && $c[cz] !~ /nonfinite/ { b = length($c[cl]) ? $c[cl] + 0 : zx - 0.5; p[b] = 100 * $c[cf]; if (n == 0 || b < lo) lo = b; if (n == 0 || b > hi) hi = b; n++ } END { if (!n) exit; for (b = lo; b <= hi + 0.5; b += 0.5) { if (!(b in p)) continue; if (started && b != prev + 1) { print prev + 1, 1e-6; print blank } if (!started || b != prev + 1) print b, 1e-6; print b, p[b]; print b + 1, p[b]; prev = b; started = 1 } print prev + 1, 1e-6 }' '%s'", step, kind, zx, file(g, m))
scaleof(g, m, step) = system(sprintf("awk -F, -v s=%s '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"step\"] == s && $c[\"grads\"] ~ /^scaled/ { print $c[\"scale\"]; exit }' '%s'", step, file(g, m)))
what(g) = group_title(g)
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | cut -d, -f1", file(word(groups, 1), 'fp32')))

# the x range: from below the smallest bin of any chart's file (a multiple of 8) to 2^24
lo = int(system(sprintf("cat %s 2>/dev/null | awk -F, '/^#/ { hdr = 1; next } hdr { hdr = 0; for (i = 1; i <= NF; i++) c[$i] = i; next } !length($c[\"log2_lo\"]) { next } $c[\"log2_lo\"] < m { m = $c[\"log2_lo\"] } END { print m + 0 }'", \
                        system(sprintf("ls '%s'/train_*_hist.csv | tr '\\n' ' '", dir)))))
xmin = lo < -56 ? -8 * int((-lo + 11) / 8) : -64
xmax = 24
zx = xmin + 2

# the share of a run's gradient elements of one kind (unscaled, scaled) at one step that fp16 holds
# below its normal range (zero or subnormal), and the scale they carry
below_normal(g, m, step, kind) = real(system(sprintf("awk -F, -v s=%s -v k=%s '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"step\"] == s && $c[\"grads\"] == k && ($c[\"fp16_zone\"] == \"zero\" || $c[\"fp16_zone\"] == \"subnormal\") { f += $c[\"frac\"] } END { print f + 0 }' '%s'", step, kind, file(g, m))))
# a share as a short percentage: 42%, 3.1%, 0.0029%
share(f) = 100 * f >= 10 ? sprintf("%.0f%%", 100 * f) : sprintf("%.2g%%", 100 * f)
# the claim, from the first group at its middle step: fp32's gradients against amp-fp16's scaled ones
g1 = word(groups, 1)
st1 = midstep(g1)
u1 = share(below_normal(g1, 'fp32', st1, 'unscaled'))
have_scaled = have(g1, 'amp-fp16')
sc1 = have_scaled ? scaleof(g1, 'amp-fp16', st1) : ''
s1 = have_scaled ? share(below_normal(g1, 'amp-fp16', st1, 'scaled')) : ''
lg_sc1 = sc1 ne '' ? sprintf("2^{%d}", int(floor(log(real(sc1)) / log(2) + 0.5))) : ''
claim = have_scaled ? sprintf("%s of the gradients lie below fp16's normal range; x%s leaves %s", u1, lg_sc1, s1) : \
        sprintf("%s of the gradients lie below fp16's normal range (%s, step %s)", u1, g1, st1)
claim_narrow = have_scaled ? sprintf("Under fp16's normal range: %s; scaled x%s: %s", u1, lg_sc1, s1) : claim

set datafile separator ','
set datafile commentschars '#'

W = 700 * ng + 100 < 1280 ? 1280 : 700 * ng + 100   # the title needs 1280 px
H = 900
narrow_aspect = 0.62 * ng + 0.35
have_amp = 0
have_noscale = 0
do for [gi=1:ng] { if (have(word(groups, gi), 'amp-fp16')) { have_amp = 1 }; if (have(word(groups, gi), 'fp16-noscale')) { have_noscale = 1 } }
# (lw 2 where panels are small: a dash pattern scales with the width, and a bin's riser must hold a dash)
amp_style(w) = sprintf("with lines lw %g dt %s lc rgb c_fp16", w, mode_dash('amp-fp16'))
noscale_style(w) = sprintf("with lines lw %g dt %s lc rgb c_fp16", w, mode_dash('fp16-noscale'))
bar_style = "with boxes fs solid 1 noborder lc rgb '#AAAAAA'"
footer = desc
do for [out_i=1:out_n] {
  eval out_open(dir, 'train-hist', W, H, out_i)
  set autoscale   # the last output's legend strip fixed the ranges
  np = preset eq 'slides' ? 1 : ng     # a slide: the first group's panel, its claim the title
  olw = np == 1 ? 3 : 2
  ls_ = bar_style; lt_ = preset eq 'screen' ? 'fp32: gradients as computed' : 'fp32'; eval legend_add
  if (have_amp) { ls_ = amp_style(olw); lt_ = preset eq 'screen' ? 'amp-fp16: times its loss scale, as its backward carries them' : 'amp-fp16, times its loss scale'; eval legend_add }
  if (have_noscale && np > 1) {   # a slide keeps to one comparison: fp32's gradients and amp-fp16's scaled ones
    ls_ = noscale_style(olw); lt_ = preset eq 'screen' ? 'fp16-noscale: as computed in fp16' : 'fp16-noscale'; eval legend_add }
  eval legend_count
  g_cols = narrow ? 1 : np
  g_rows = narrow ? np : 1
  ptitle = preset eq 'screen' ? 2 : preset eq 'slides' ? 0 : 1
  g_T = 1 - text_h((preset eq 'screen' ? 1 : 1) + (narrow ? 2 : 1.6) + ptitle)
  g_B = text_h(leg_rows + 4.2 + (footer_text(0) ne '' ? 1 : 0))
  g_vs = text_h(ptitle + 5)
  g_L = narrow ? 0.19 : np == 1 ? 0.09 : 0.07
  g_R = narrow ? 0.96 : 0.98
  g_hs = preset eq 'screen' ? 0.05 : 0.06
  set multiplot title title_of("Weight gradients against fp16's range: share of elements per power of two of |g|", narrow ? claim_narrow : claim)
  set border 3
  set xtics nomirror
  set ytics nomirror
  set xrange [xmin:xmax]
  set logscale y
  set yrange [1e-5:1000]   # the zones' names above the tallest bar
  set format y '10^{%L}'
  set ytics 1e-5, narrow ? 100 : 10, 100
  set xtics ("exact 0" zx) rotate by -30
  # powers of two 16 apart, except where they would crowd 2^{-24}
  do for [e=-16:-128:-16] { if (e > xmin + 12 && e < -36) { set xtics add (sprintf('2^{%d}', e) e) } }
  set xtics add ('2^{-24}' -24, '2^{-14}' -14, '2^{0}' 0, '2^{16}' 16)
  eval 'set grid ytics '.grid_opts
  set boxwidth 1.0
  set obj 1 rect from zx + 1.5, graph 0 to -25, graph 1 fc rgb '#eeeeee' fs solid 1 noborder behind
  set obj 2 rect from -25, graph 0 to -14, graph 1 fc rgb '#fdeccc' fs solid 1 noborder behind
  set obj 3 rect from 16, graph 0 to xmax, graph 1 fc rgb '#f6cfc6' fs solid 1 noborder behind
  # the zones' names, short where a panel is narrow
  set label 1 preset eq 'print' ? "0" : "fp16: 0" at (zx + 1.5 - 25) / 2, graph 0.95 center tc rgb c_note front
  set label 2 preset eq 'print' ? "sub." : preset eq 'screen' ? "sub-\nnormal" : "subnormal" at -19.5, graph 0.93 center tc rgb '#8a4b14' front
  set label 3 "normal" at 1, graph 0.95 center tc rgb c_note front
  set label 4 "inf" at 20, graph 0.95 center tc rgb '#b22222' front
  set xlabel (preset eq 'screen' ? '|g|, one bin per power of two' : '|g| (bins of a power of two)')
  unset key
  do for [gi=1:np] {
    eval narrow ? cell(1, gi) : cell(gi, 1)
    g = word(groups, gi)
    st = midstep(g)
    set title ptitle == 0 ? '' : preset eq 'screen' ? sprintf("%s\nstep %s", what(g), st) : sprintf("%s, step %s", g, st)
    set ylabel (gi == 1 || narrow) ? (preset eq 'screen' ? 'share of gradient elements (%)' : 'share of elements (%)') : ''
    cmd = sprintf("\"%s\" using 1:2 %s notitle", rows(g, 'fp32', st, 'unscaled'), bar_style)
    if (have(g, 'amp-fp16')) {
      cmd = cmd.sprintf(", \"%s\" using 1:2 %s notitle", outline(g, 'amp-fp16', st, 'scaled'), amp_style(olw))
    }
    if (have(g, 'fp16-noscale') && np > 1) {
      cmd = cmd.sprintf(", \"%s\" using 1:2 %s notitle", outline(g, 'fp16-noscale', st, 'unscaled'), noscale_style(olw))
    }
    eval('plot '.cmd)
    unset label 9999   # the footer, once
  }
  unset obj
  eval legend_strip(text_h(leg_rows - 0.3 + (footer_text(0) ne '' ? 1 : 0)))
  unset multiplot
}
unset output
