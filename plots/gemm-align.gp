# plots/gemm-align.gp RESULTS_DIR — the alignment study: TFLOP/s of each
# variant for n x n x n around 4096, n = 4088 ... 4104, as the percentage
# above or below the variant's own median over the sweep (a linear axis: the
# differences are a few per cent, which a log axis of TFLOP/s flattens).
# Filled points are multiples of 8 (16-byte rows for fp16), open ones are
# not; the legend gives each variant's median TFLOP/s. Reads gemm.csv; writes gemm-align.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/gemm.csv'
if (!file_exists(in)) {
  print sprintf("gemm-align.gp: %s not found: no chart (run halflab-bench gemm)", in)
  exit
}
present = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"study\"] == \"align\" { print $c[\"variant\"] }' '%s' | sort -u | tr '\\n' ' '", in))
if (present eq "") {
  print "gemm-align.gp: no alignment study in ".in.": no chart (halflab-bench gemm --studies align)"
  exit
}
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", in))  # '_' would start a subscript

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[8] = ["fp32", "tf32", "fp16", "fp16-acc16", "bf16", "fp8", "openblas", "onednn-bf16"]
has(v) = strstrt(' '.present, ' '.v.' ') > 0
# each variant's median TFLOP/s over the sweep
med(v) = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"study\"] == \"align\" && $c[\"variant\"] == \"%s\" { print $c[\"tflop_per_s\"] }' '%s' | sort -g | awk '{ v[NR] = $1 } END { print (NR %% 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'", v, in)))
array median[8]
do for [i=1:8] { median[i] = has(id[i]) ? med(id[i]) : 0 }
gpu = on_gpu(in)
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
m8(n) = int(n) % 8 == 0

W = 1400
H = 900
g_L = 0.09
g_R = 0.97
g_B = 0.19
g_T = 0.84
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/gemm-align.png' } else { eval svg(W, H); set output dir.'/gemm-align.svg' }
  set multiplot title sprintf("Alignment: n x n x n around 4096, against each variant's median over the sweep\n%s; filled: n a multiple of 8%s, open: not", desc, gpu ? " (16-byte rows of fp16: what tensor cores want)" : "")
  eval cell(1, 1)
  set xlabel 'matrix size n'
  set ylabel "TFLOP/s against the variant's median (%)"
  set xtics 4088, 2, 4104
  set mxtics 2
  set format y '%+g'
  set grid xtics ytics back lc rgb '#dddddd'
  unset key
  cmd = ''
  do for [i=1:8] {
    if (has(id[i])) {
      sel = sprintf('rows(''$c["study"] == "align" && $c["variant"] == "%s"'')', id[i])
      y = sprintf("(100 * (column('tflop_per_s') / %.9g - 1))", median[i])
      cmd = cmd.sprintf("%s %s using (column('m')):%s with lines lw 2.5 dt %d lc rgb '%s' notitle", cmd eq '' ? '' : ',', sel, y, variant_dash(id[i]), fcolor(id[i]))
      cmd = cmd.sprintf(", %s using (column('m')):(m8(column('m')) ? %s : 1/0) with points pt %d ps 1.8 lc rgb '%s' notitle", sel, y, variant_pt(id[i]) == 6 ? 7 : variant_pt(id[i]) == 4 ? 5 : variant_pt(id[i]), fcolor(id[i]))
      cmd = cmd.sprintf(", %s using (column('m')):(!m8(column('m')) ? %s : 1/0) with points pt %d ps 1.8 lw 2 lc rgb '%s' notitle", sel, y, variant_pt(id[i]) == 7 ? 6 : variant_pt(id[i]) == 5 ? 4 : variant_pt(id[i]) == 9 ? 8 : 6, fcolor(id[i]))
      ls_ = sprintf("with linespoints pt %d ps 1.8 lw 2.5 dt %d lc rgb '%s'", variant_pt(id[i]), variant_dash(id[i]), fcolor(id[i])); lt_ = sprintf("%s (median %.3g TFLOP/s)", id[i], median[i]); eval legend_add
    }
  }
  eval('plot '.cmd.", 0 with lines lw 1.5 lc rgb c_ref notitle")
  eval legend_strip(0.07)
  unset multiplot
}
unset output
