# plots/quantize.gp RESULTS_DIR — the block quantizers' speed against the
# same-run copy of their input: per recipe (fp8 per tensor and per block,
# MXFP8 by RCEIL and FLOOR, MXFP6, MXFP4, NVFP4) the bytes read and written
# per second over the copy reference's (ref_ratio), blocks along rows and
# down columns side by side, and the amax pass alone (what the tensor rule
# and nvfp4 read first). Grey dashes: the copy (1); dotted: the 0.7 the
# expectation asks past the caches on the CPU. The unit that computed the
# codes (software on a CPU) is in the title. Reads quantize.csv; writes the
# preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/quantize.csv')
if (!file_exists(in)) {
  print sprintf("quantize.gp: %s not found: no chart (run halflab-bench quantize)", in)
  exit
}
# one line per recipe group, in the CSV's order: label, rows (or both) ratio, columns ratio ("-" where none)
groups = "< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"unit\"] != \"copy\" { " . \
  "f = $c[\"format\"]; r = $c[\"rule\"]; b = $c[\"block\"]; " . \
  "g = $c[\"kernel\"] == \"amax\" ? \"amax pass\" : f == \"fp8\" ? (r == \"tensor\" ? \"fp8 tensor\" : b == \"128x128\" ? \"fp8 128x128\" : \"fp8 1x128\") : " . \
  "f == \"nvfp4\" ? \"nvfp4\" : f \" \" (f == \"mxfp6\" ? $c[\"element\"] \" \" : \"\") (r == \"mx-floor\" ? \"floor\" : \"rceil\"); " . \
  "if (!(g in seen)) { seen[g] = 1; order[++n] = g; rw[g] = \"-\"; cl[g] = \"-\" } " . \
  "if ($c[\"direction\"] == \"columns\") cl[g] = $c[\"ref_ratio\"]; else rw[g] = $c[\"ref_ratio\"] } " . \
  "END { print \"group,rows,columns\"; for (i = 1; i <= n; i++) print \"\\\"\" order[i] \"\\\",\" rw[order[i]] \",\" cl[order[i]] }' '".in."'"
unit = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"kernel\"] == \"quantize\" { print $c[\"unit\"]; exit }' '%s'", in))
ref = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"ref_kernel\"] != \"\" { printf \"%%s %%.1f GB/s\", $c[\"ref_kernel\"], $c[\"ref_gb_per_s\"]; exit }' '%s'", in))
mib = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { printf \"%%d\", $c[\"rows\"] * $c[\"cols\"] * 4 / 1048576; exit }' '%s'", in))
# the claim: the range of the quantizers' ratios, and the amax pass's
claims = system(("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"kernel\"] == \"quantize\" { x = $c[\"ref_ratio\"] + 0; if (!n++ || x < lo) lo = x; if (x > hi) hi = x } $c[\"kernel\"] == \"amax\" { a = $c[\"ref_ratio\"] } END { if (!n) exit; printf \"Quantizing ".mib." MiB of fp32: %.2fx to %.2fx the bytes per second of the copy%s|%.2fx to %.2fx the copy\", lo, hi, a == \"\" ? \"\" : sprintf(\"; the amax pass alone %.2fx\", a), lo, hi }' '".in."'"))
claim = claims eq '' ? 'Block quantizers against the copy reference' : claims[1:strstrt(claims, '|') - 1]
claim_n = claims eq '' ? claim : claims[strstrt(claims, '|') + 1:]

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
set datafile missing '-'

footer = footer_of(in)
narrow_aspect = 0.9
do for [out_i=1:out_n] {
  unset label
  unset arrow
  set border 3
  set xtics nomirror
  set ytics nomirror
  set autoscale xy
  eval out_open(dir, 'quantize', 1400, 850, out_i)
  ls_ = sprintf("with boxes fs solid 1 border lc rgb '#333333' lc rgb '%s'", c_fp8); lt_ = narrow ? 'rows' : 'blocks along rows (and square or whole)'; eval legend_add
  ls_ = sprintf("with boxes fs pattern 4 border lc rgb '%s' lc rgb '%s'", c_fp8, c_fp8); lt_ = narrow ? 'columns' : 'blocks down columns'; eval legend_add
  ls_ = "with lines ls 100"; lt_ = narrow ? 'copy' : sprintf('the copy reference (%s)', ref); eval legend_add
  ls_ = sprintf("with lines dt 3 lw 2 lc rgb '%s'", c_note); lt_ = narrow ? '0.7' : '0.7: the expectation past the caches'; eval legend_add
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  g_T = 1 - text_h(preset eq 'screen' ? 4.0 : 2.6)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(narrow ? 6.0 : 5.0)
  g_L = narrow ? 0.16 : 7.0 * cur_pt / cur_w
  g_R = 0.98
  set multiplot title title_of(sprintf("Block quantizers: bytes read and written per second over the same-run copy of the input\ncodes by %s", unit), \
                               narrow ? claim_n : claim)
  set lmargin at screen g_L
  set rmargin at screen g_R
  set tmargin at screen g_T
  set bmargin at screen g_B
  eval 'set grid ytics '.grid_opts
  set style data histograms
  set style histogram clustered gap 1
  set boxwidth 0.9
  set xtics rotate by 30 right
  set ylabel narrow ? 'x copy' : 'GB/s over the copy reference'
  set yrange [0:*]
  unset key
  plot groups using (column('rows')):xtic(strcol('group')) fs solid 1 border lc rgb '#333333' lc rgb c_fp8 notitle, \
       '' using (column('columns')) fs pattern 4 border lc rgb c_fp8 lc rgb c_fp8 notitle, \
       1 with lines ls 100 notitle, \
       0.7 with lines dt 3 lw 2 lc rgb c_note notitle
  unset label 9999
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
