# plots/compare-gemm.gp RESULTS_ROOT — GEMM throughput across machines: for
# every RESULTS_ROOT/<machine>/gemm.csv, median TFLOP/s over the square
# sweep, linear axis from 0. Colour is the machine (style.gp's second set:
# no precision hue), named by plots/cpu_name.sh; the dash is the type by the
# line convention: solid fp32, dashed bf16, dotted fp16 where fp16 runs on
# units of its own (where it is fp32's sgemm on widened inputs, as on CPUs
# without AVX512-FP16 or AMX-FP16, its line would lie on fp32's and is left
# out, the title says so). Writes the preset's two files in RESULTS_ROOT.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
root = ARG1
machines = system(sprintf("for d in '%s'/*/; do [ -f \"$d/gemm.csv\" ] && basename \"$d\"; done | tr '\\n' ' '", root))
nm = words(machines)
if (nm < 2) {
  print sprintf("compare-gemm.gp: fewer than two machines with gemm.csv under %s: no chart", root)
  exit
}
csv(i) = as_written(root.'/'.word(machines, i).'/gemm.csv')
# awk over a machine's rows, c["name"] the index of each column
awk_rows(i, prog) = "awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } ".prog."' '".csv(i)."'"
rows(file, cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, file)
# machine colours: the second set, darkest and most distinct first
array cat_order[8] = [4, 7, 1, 6, 2, 3, 5, 8]
mcolor(i) = cat_color(cat_order[(i - 1) % 8 + 1])
array name[nm]
array label[nm]
do for [i=1:nm] {
  name[i] = system(sprintf("'%s/cpu_name.sh' --folder '%s/%s' gemm.csv", here, root, word(machines, i)))
  threads = system(sprintf("sed -n 's/^# device: .* \\([0-9][0-9]*\\) OpenMP threads.*/\\1/p' '%s' | head -1", csv(i)))
  label[i] = name[i].(threads eq '' ? '' : sprintf(", %s thread%s", threads, threads eq '1' ? '' : 's'))
}
# two machines of one name: the folder tells them apart
do for [i=1:nm] { do for [j=1:nm] { if (i != j && name[i] eq name[j]) { label[i] = label[i].' ('.word(machines, i).')' } } }
# the types drawn: fp32, bf16, and fp16 where some machine runs it on units of its own
has(i, v) = system(awk_rows(i, sprintf('$c["study"] == "square" && $c["variant"] == "%s" { f = 1 } END { print f + 0 }', v))) eq "1"
fp16_own(i) = system(awk_rows(i, '$c["study"] == "square" && $c["variant"] == "fp16" && $c["implementation"] !~ /widened/ { f = 1 } END { print f + 0 }')) eq "1"
fp16_any = 0
fp16_widened = 0
do for [i=1:nm] { if (fp16_own(i)) { fp16_any = 1 } else { if (has(i, 'fp16')) { fp16_widened = fp16_widened + 1 } } }
array vid[3] = ['fp32', 'bf16', 'fp16']
array vdash[3] = [1, 2, 3]
array vpt[3] = [7, 5, 9]
array vname[3] = ['fp32', 'bf16, fp32 accumulate', 'fp16, fp32 accumulate']
drawn(i, k) = k == 1 || (k == 2 && has(i, 'bf16')) || (k == 3 && fp16_own(i))
# the claim: each machine's TFLOP/s at the largest size they all measured, bf16 where all have it
all_bf16 = 1
do for [i=1:nm] { if (!has(i, 'bf16')) { all_bf16 = 0 } }
cv = all_bf16 ? 'bf16' : 'fp32'
top = 0
do for [i=1:nm] {
  t = int(system(awk_rows(i, sprintf('$c["study"] == "square" && $c["variant"] == "%s" && $c["m"] + 0 > m { m = $c["m"] + 0 } END { print m + 0 }', cv))))
  top = (i == 1 || t < top) ? t : top
}
array at_top[nm]
do for [i=1:nm] { at_top[i] = real(system(awk_rows(i, sprintf('$c["study"] == "square" && $c["variant"] == "%s" && $c["m"] == %d { print $c["tflop_per_s"]; exit }', cv, top)))) }
hi_i = 1
lo_i = 1
do for [i=1:nm] { hi_i = at_top[i] > at_top[hi_i] ? i : hi_i; lo_i = at_top[i] < at_top[lo_i] ? i : lo_i }
bare(s) = strstrt(s, 'AMD ') == 1 ? s[5:] : strstrt(s, 'Intel ') == 1 ? s[7:] : s
if (nm == 2) {
  claim = sprintf("%s GEMM at n = %d: %s %.2f, %s %.2f TFLOP/s", cv, top, name[hi_i], at_top[hi_i], name[lo_i], at_top[lo_i])
  claim_n = sprintf("%s, n = %d: %s %.2f, %s %.2f TFLOP/s", cv, top, bare(name[hi_i]), at_top[hi_i], bare(name[lo_i]), at_top[lo_i])
} else {
  claim = sprintf("%s GEMM at n = %d: %s fastest (%.2f TFLOP/s), %s slowest (%.2f)", cv, top, name[hi_i], at_top[hi_i], name[lo_i], at_top[lo_i])
  claim_n = sprintf("%s, n = %d: %.2f to %.2f TFLOP/s", cv, top, at_top[lo_i], at_top[hi_i])
}
ymax = 0
do for [i=1:nm] { m = real(system(awk_rows(i, '$c["study"] == "square" && $c["variant"] ~ /^(fp32|bf16|fp16)$/ && $c["tflop_per_s"] + 0 > m { m = $c["tflop_per_s"] + 0 } END { print m + 0 }'))); ymax = m > ymax ? m : ymax }
note = fp16_widened > 0 ? sprintf("fp16 not drawn where it runs fp32's sgemm on widened inputs (%d of %d machines): its line would lie on fp32's", fp16_widened, nm) : ""
footer = ''
do for [i=1:nm] {
  run = system("awk '/^# halflab / && v == \"\" { v = substr($0, 3) } /^# date: / && t == \"\" { t = substr($0, 9, 10) } !/^#/ { exit } END { printf \"%s, %s\", v, t }' '".csv(i)."'")
  footer = footer.(i == 1 ? '' : '; ').name[i].': '.run
}

set datafile separator ','
set datafile columnheaders
narrow_aspect = 0.95
do for [out_i=1:out_n] {
  unset label
  unset arrow
  set border 3
  set xtics nomirror autofreq
  set ytics nomirror autofreq
  set autoscale xy
  eval out_open(root, 'compare-gemm', 1280, 800, out_i)
  do for [i=1:nm] { ls_ = sprintf("with lines lw 4 lc rgb '%s'", mcolor(i)); lt_ = narrow ? name[i] : label[i]; eval legend_add }
  do for [k=1:3] { if (k < 3 || fp16_any) { ls_ = sprintf("with linespoints lw 2.5 dt %d pt %d lc rgb c_note", vdash[k], vpt[k]); lt_ = narrow ? vid[k] : vname[k]; eval legend_add } }
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  g_T = 1 - text_h(preset eq 'screen' ? (note eq '' ? 2.2 : 3.0) : 1.8)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(3.0)
  set multiplot title title_of("GEMM throughput across machines, n x n x n (median TFLOP/s)".(note eq '' ? '' : "\n".note), narrow ? claim_n : claim)
  set tmargin at screen g_T
  set bmargin at screen g_B
  set xlabel 'matrix size n'
  set ylabel 'TFLOP/s'
  set logscale x 2
  set yrange [0:ymax * 1.08]
  eval 'set grid xtics ytics '.grid_opts
  unset key
  cmd = ''
  do for [i=1:nm] {
    do for [k=1:3] {
      if (drawn(i, k)) {
        cmd = cmd.sprintf("%s rows('%s', '$c[\"study\"] == \"square\" && $c[\"variant\"] == \"%s\"') using (column('m')):(column('tflop_per_s')) with linespoints lw 2.5 dt %d pt %d lc rgb '%s' notitle", \
                          cmd eq '' ? '' : ',', csv(i), vid[k], vdash[k], vpt[k], mcolor(i))
      }
    }
  }
  eval('plot '.cmd)
  unset label 9999
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
