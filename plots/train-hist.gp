# plots/train-hist.gp RESULTS_DIR — gradient histograms of halflab-train
# against fp16's zones, the chart of Micikevicius et al., "Mixed Precision
# Training" (ICLR 2018), from our own runs: the share of weight-gradient
# elements per power of two of |g| (log2 bins; exact zeros in their own bar
# on the left), at the middle histogram step of each run group.
#   grey   fp32: the gradients as they are (what fp16 would do to them)
#   blue   amp-fp16: the same gradients times the loss scale, as its fp16
#          backward carries them
#   orange fp16-noscale: its gradients as computed in fp16 without scaling
# Shaded: flushed to zero (below 2^-25), subnormal (2^-24 .. 2^-14),
# overflow (65520 and above). Reads train_NAME_MODE_hist.csv; writes
# train-hist.png and .svg.
dir = ARG1
groups = ''
do for [g in 'tiny gpt2-converge underflow absorb'] {
  if (system(sprintf("test -f '%s/train_%s_fp32_hist.csv' && echo 1 || echo 0", dir, g)) eq "1") {
    groups = groups.' '.g
  }
}
if (words(groups) == 0) {
  print sprintf("train-hist.gp: no train_*_fp32_hist.csv in %s: no chart (run scripts/train-all.sh)", dir)
  exit
}
ng = words(groups)
desc = system(sprintf("sed -n 's/^# device: //p' \"$(ls '%s'/train_*_hist.csv | head -1)\" | cut -d, -f1 | sed 's/_/\\\\_/g'", dir))
file(g, m) = sprintf('%s/train_%s_%s_hist.csv', dir, g, m)
have(g, m) = system(sprintf("test -f '%s' && echo 1 || echo 0", file(g, m))) eq "1"
# the steps with histograms in fp32's file; the middle one
midstep(g) = system(sprintf("awk -F, '/^#/ || /^mode,/ { next } { print $2 }' '%s' | sort -un | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'", file(g, 'fp32')))
# rows of one step and one kind of gradients: (log2_lo + 0.5, percent); the exact zeros at x = zx
rows(g, m, step, kind) = sprintf("< awk -F, -v OFS=, -v s=%s -v k=%s -v zx=%d '/^#/ || /^mode,/ { next } $2 == s && $3 == k && $8 !~ /nonfinite/ { print (length($5) ? $5 + 0.5 : zx), 100 * $7 }' '%s'", step, kind, zx, file(g, m))
scaleof(g, m, step) = system(sprintf("awk -F, -v s=%s '/^#/ || /^mode,/ { next } $2 == s && $3 ~ /^scaled/ { print $4; exit }' '%s'", step, file(g, m)))
what(g) = g eq 'tiny' ? "tiny GPT, AdamW" : g eq 'gpt2-converge' ? "GPT-2 124M shape" : \
          g eq 'underflow' ? "demonstration: SGD, init x 0.05, 4096 tokens" : g eq 'absorb' ? "demonstration: SGD, lr 0.001" : g

# the x range: from below the smallest bin of any chart's file (a multiple of 8) to 2^24
lo = int(system(sprintf("cat %s 2>/dev/null | awk -F, '/^#/ || /^mode,/ || !length($5) { next } $5 < m { m = $5 } END { print m + 0 }'", \
                        system(sprintf("ls '%s'/train_*_hist.csv | tr '\\n' ' '", dir)))))
xmin = lo < -56 ? -8 * int((-lo + 11) / 8) : -64
xmax = 24
zx = xmin + 2

set datafile separator ','
set datafile commentschars '#'

do for [out=1:2] {
  if (out == 1) {
    set terminal pngcairo size 700 * ng + 100, 680 enhanced font 'Sans,11'
    set output dir.'/train-hist.png'
  } else {
    set terminal svg size 700 * ng + 100, 680 enhanced font 'Sans,11' background rgb 'white'
    set output dir.'/train-hist.svg'
  }
  set multiplot layout 1, ng title sprintf("Weight gradients against fp16's range: share of elements per power of two of |g|\n{/*0.85 %s}", desc) \
      margins 0.06, 0.98, 0.25, 0.85 spacing 0.05, 0.1
  set border 3
  set xtics nomirror
  set ytics nomirror
  set xrange [xmin:xmax]
  set logscale y
  set yrange [1e-5:100]
  set format y '10^{%L}'
  set xtics ("exact 0" zx) rotate by -30
  do for [e=-16:-128:-16] { if (e > xmin + 6 && e != -16) { set xtics add (sprintf('2^{%d}', e) e) } }
  set xtics add ('2^{-24}' -24, '2^{-14}' -14, '2^{0}' 0, '2^{16}' 16)
  set grid ytics back lc rgb '#eeeeee'
  set style fill transparent solid 0.45 noborder
  set boxwidth 1.0
  set obj 1 rect from zx + 1.5, graph 0 to -25, graph 1 fc rgb '#d9d9d9' fs solid 0.5 noborder behind
  set obj 2 rect from -25, graph 0 to -14, graph 1 fc rgb '#fde0b2' fs solid 0.6 noborder behind
  set obj 3 rect from 16, graph 0 to xmax, graph 1 fc rgb '#f4b6a8' fs solid 0.6 noborder behind
  set label 1 "fp16: 0" at -44, graph 0.96 center font ',10' tc rgb '#555555' front
  set label 2 "subnormal" at -19.5, graph 0.96 center font ',10' tc rgb '#a0522d' front
  set label 3 "normal" at 1, graph 0.96 center font ',10' tc rgb '#555555' front
  set label 4 "inf" at 20, graph 0.96 center font ',10' tc rgb '#b22222' front
  set xlabel 'log_2 |g|'
  do for [gi=1:ng] {
    g = word(groups, gi)
    st = midstep(g)
    set title sprintf("%s, step %s", what(g), st)
    set ylabel gi == 1 ? 'share of gradient elements (%)' : ''
    set key below font ',10' samplen 2 maxrows 3
    cmd = sprintf("\"%s\" using 1:2 with boxes lc rgb '#555555' title 'fp32: gradients as computed'", rows(g, 'fp32', st, 'unscaled'))
    if (have(g, 'amp-fp16')) {
      cmd = cmd.sprintf(", \"%s\" using 1:2 with boxes lc rgb '#0072B2' title 'amp-fp16: x scale %s, as its backward carries them'", rows(g, 'amp-fp16', st, 'scaled'), scaleof(g, 'amp-fp16', st))
    }
    if (have(g, 'fp16-noscale')) {
      cmd = cmd.sprintf(", \"%s\" using 1:2 with boxes lc rgb '#E69F00' lw 2 fs empty border lc rgb '#E69F00' title 'fp16-noscale: as computed in fp16'", rows(g, 'fp16-noscale', st, 'unscaled'))
    }
    eval('plot '.cmd)
  }
  unset multiplot
  unset obj
  unset label
}
unset output
