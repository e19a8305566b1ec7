# plots/train-hist.gp RESULTS_DIR — gradient histograms of halflab-train
# against fp16's zones, the chart of Micikevicius et al., "Mixed Precision
# Training" (ICLR 2018), from our own runs: the share of weight-gradient
# elements per power of two of |g| (log2 bins; exact zeros in their own bar
# on the left), at the middle histogram step of each run group.
#   grey bars           fp32: the gradients as they are (what fp16 would do to them)
#   vermillion outline  amp-fp16: the same gradients times the loss scale, as its
#                       fp16 backward carries them
#   vermillion dashed   fp16-noscale: its gradients as computed in fp16 without scaling
# Only fp32's bars are filled: outlines over them do not blend into a third colour.
# Shaded: flushed to zero (below 2^-25), subnormal (2^-24 .. 2^-14),
# overflow (65520 and above). Reads train_NAME_MODE_hist.csv; writes
# train-hist.png and .svg.
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
desc = system(sprintf("sed -n 's/^# device: //p' \"$(ls '%s'/train_*_hist.csv 2>/dev/null | head -1)\" | cut -d, -f1 | sed 's/_/\\\\_/g'", dir))
file(g, m) = sprintf('%s/train_%s_%s_hist.csv', dir, g, m)
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

# the x range: from below the smallest bin of any chart's file (a multiple of 8) to 2^24
lo = int(system(sprintf("cat %s 2>/dev/null | awk -F, '/^#/ { hdr = 1; next } hdr { hdr = 0; for (i = 1; i <= NF; i++) c[$i] = i; next } !length($c[\"log2_lo\"]) { next } $c[\"log2_lo\"] < m { m = $c[\"log2_lo\"] } END { print m + 0 }'", \
                        system(sprintf("ls '%s'/train_*_hist.csv | tr '\\n' ' '", dir)))))
xmin = lo < -56 ? -8 * int((-lo + 11) / 8) : -64
xmax = 24
zx = xmin + 2

set datafile separator ','
set datafile commentschars '#'

W = 700 * ng + 100
H = 900
g_cols = ng
g_L = 0.07
g_R = 0.98
g_B = 0.29
g_T = 0.75
g_hs = 0.05
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/train-hist.png' } else { eval svg(W, H); set output dir.'/train-hist.svg' }
  set multiplot title sprintf("Weight gradients against fp16's range: share of elements per power of two of |g|\n%s", desc)
  set border 3
  set xtics nomirror
  set ytics nomirror
  set xrange [xmin:xmax]
  set logscale y
  set yrange [1e-5:300]
  set format y '10^{%L}'
  set ytics 1e-5, 10, 100
  set xtics ("exact 0" zx) rotate by -30
  do for [e=-16:-128:-16] { if (e > xmin + 6 && e != -16) { set xtics add (sprintf('2^{%d}', e) e) } }
  set xtics add ('2^{-24}' -24, '2^{-14}' -14, '2^{0}' 0, '2^{16}' 16)
  set grid ytics back lc rgb '#eeeeee'
  set boxwidth 1.0
  set obj 1 rect from zx + 1.5, graph 0 to -25, graph 1 fc rgb '#eeeeee' fs solid 1 noborder behind
  set obj 2 rect from -25, graph 0 to -14, graph 1 fc rgb '#fdeccc' fs solid 1 noborder behind
  set obj 3 rect from 16, graph 0 to xmax, graph 1 fc rgb '#f6cfc6' fs solid 1 noborder behind
  set label 1 "fp16: 0" at -44, graph 0.95 center tc rgb c_note front
  set label 2 "sub-\nnormal" at -19.5, graph 0.93 center tc rgb '#8a4b14' front
  set label 3 "normal" at 1, graph 0.95 center tc rgb c_note front
  set label 4 "inf" at 20, graph 0.95 center tc rgb '#b22222' front
  set xlabel '|g|, one bin per power of two'
  unset key
  have_amp = 0
  have_noscale = 0
  do for [gi=1:ng] {
    eval cell(gi, 1)
    g = word(groups, gi)
    st = midstep(g)
    set title sprintf("%s\nstep %s", what(g), st)
    set ylabel gi == 1 ? 'share of gradient elements (%)' : ''
    cmd = sprintf("\"%s\" using 1:2 with boxes fs solid 1 noborder lc rgb '#AAAAAA' notitle", rows(g, 'fp32', st, 'unscaled'))
    if (have(g, 'amp-fp16')) {
      have_amp = 1
      amp_scale = scaleof(g, 'amp-fp16', st)
      cmd = cmd.sprintf(", \"%s\" using 1:2 with lines lw 3 lc rgb c_fp16 notitle", outline(g, 'amp-fp16', st, 'scaled'))
    }
    if (have(g, 'fp16-noscale')) {
      have_noscale = 1
      cmd = cmd.sprintf(", \"%s\" using 1:2 with lines lw 3 dt 2 lc rgb '#8a3200' notitle", outline(g, 'fp16-noscale', st, 'unscaled'))
    }
    eval('plot '.cmd)
  }
  unset obj
  ls_ = "with boxes fs solid 1 noborder lc rgb '#AAAAAA'"; lt_ = 'fp32: gradients as computed'; eval legend_add
  if (have_amp) { ls_ = "with lines lw 3 lc rgb c_fp16"; lt_ = 'amp-fp16: times its loss scale, as its backward carries them'; eval legend_add }
  if (have_noscale) { ls_ = "with lines lw 3 dt 2 lc rgb '#8a3200'"; lt_ = 'fp16-noscale: as computed in fp16'; eval legend_add }
  eval legend_strip(0.07)
  unset multiplot
  unset label
}
unset output
