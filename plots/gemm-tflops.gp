# plots/gemm-tflops.gp RESULTS_DIR — matrix-product throughput against size:
# TFLOP/s (median) of every variant over the square sweep n x n x n, log
# axes, each variant's dense peak as a dashed line of its colour (a GPU's
# datasheet figure; on a CPU the FLOP/cycle of the unit its products run on
# x cores x clock; absent where the peak is unknown). Reads gemm.csv; writes
# gemm-tflops.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/gemm.csv'
if (!file_exists(in)) {
  print sprintf("gemm-tflops.gp: %s not found: no chart (run halflab-bench gemm)", in)
  exit
}
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", in))  # '_' would start a subscript
# the variants present in the square study, in the order of the table below
# the peaks: drawn where the device is in a built-in table
peaks = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"peak_tflop_per_s\"] != \"\" { n++ } END { print n + 0 }' '%s'", in))
peak_note = peaks eq "0" ? "no peak lines: peak unknown for this device (see the CSV's peak\\_source line)" : (desc[1:3] eq "cpu" ? "dotted: the peak of the unit each precision's products run on" : "dotted: the datasheet's dense peak for that precision")
# the peaks at the largest square size, one line per value: "value|names"
peak_rows = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"study\"] == \"square\" && $c[\"peak_tflop_per_s\"] != \"\" && $c[\"variant\"] !~ /^(openblas|onednn-bf16|bf16-widened)$/ && !($c[\"variant\"] in p) { p[$c[\"variant\"]] = $c[\"peak_tflop_per_s\"]; o[++nv] = $c[\"variant\"] } END { for (i = 1; i <= nv; i++) { v = o[i]; k = sprintf(\"%%.3g\", p[v]); if (k in n) n[k] = n[k] \"/\" v; else { n[k] = v; ko[++nk] = k } } for (i = 1; i <= nk; i++) print ko[i] \"|\" n[ko[i]] }' '%s'", in))
# the data's range, for the axis and its ticks
stats_lo = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"study\"] == \"square\" && (m == \"\" || $c[\"tflop_per_s\"] + 0 < m) { m = $c[\"tflop_per_s\"] + 0 } END { print m + 0 }' '%s'", in)))
stats_hi = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"study\"] == \"square\" { if ($c[\"tflop_per_s\"] + 0 > m) m = $c[\"tflop_per_s\"] + 0; if ($c[\"peak_tflop_per_s\"] + 0 > m) m = $c[\"peak_tflop_per_s\"] + 0 } END { print m + 0 }' '%s'", in)))
present = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"study\"] == \"square\" { print $c[\"variant\"] }' '%s' | sort -u | tr '\\n' ' '", in))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[9] = ["fp32", "tf32", "fp16", "fp16-acc16", "bf16", "fp8", "openblas", "onednn-bf16", "bf16-widened"]
array label[9] = [on_gpu(in) ? "fp32 (SIMT)" : "fp32 (sgemm)", "tf32 (tensor cores)", "fp16, fp32 accumulate", "fp16, fp16 accumulate", \
                  "bf16, fp32 accumulate", "fp8 e4m3, fp32 accumulate", "OpenBLAS sgemm called directly", \
                  "oneDNN bf16 matmul called directly", "bf16 on the CPU fallback (widened to fp32)"]
has(v) = strstrt(' '.present, ' '.v.' ') > 0

W = 1400
H = 900
g_L = 0.09
g_R = 0.82
g_B = 0.17
g_T = 0.84
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/gemm-tflops.png' } else { eval svg(W, H); set output dir.'/gemm-tflops.svg' }
  set multiplot title sprintf("GEMM throughput by precision, n x n x n (FLOPs = 2n^3, median of the timed launches)\n%s\n%s", desc, peak_note)
  eval cell(1, 1)
  set xlabel 'matrix size n'
  set ylabel 'TFLOP/s'
  set logscale x 2
  set logscale y 10
  set yrange [stats_lo / 1.25:stats_hi * 1.25]
  log_lo = stats_lo / 1.25
  log_hi = stats_hi * 1.25
  eval log125_ytics
  set grid xtics ytics back lc rgb '#dddddd'
  unset key
  # the header and the rows where an awk condition holds (columns by name: $c["variant"]);
  # plotting only those keeps each line unbroken
  rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
  # the peaks: dotted lines labelled at the right, one per value
  unset arrow
  unset label
  do for [k=1:words(peak_rows)] {
    pr = word(peak_rows, k)
    pv = real(pr[1:strstrt(pr, '|') - 1])
    pn = pr[strstrt(pr, '|') + 1:]
    set arrow k from graph 0, first pv to graph 1, first pv nohead dt 3 lw 2 lc rgb fcolor(pn[1:strstrt(pn.'/', '/') - 1]) back
    set label k sprintf("%s peak %.3g", pn, pv) at graph 1, first pv offset 0.8, 0 left tc rgb fcolor(pn[1:strstrt(pn.'/', '/') - 1])
  }
  cmd = ''
  do for [i=1:|id|] {
    if (has(id[i])) {
      sel = sprintf('$c["study"] == "square" && $c["variant"] == "%s"', id[i])
      cmd = cmd.sprintf("%s rows('%s') using (column('m')):(column('tflop_per_s')) with linespoints pt %d ps 1.3 lw 2.5 dt %d lc rgb '%s' notitle", \
                        cmd eq '' ? '' : ',', sel, variant_pt(id[i]), variant_dash(id[i]), fcolor(id[i]))
      ls_ = sprintf("with linespoints pt %d ps 1.3 lw 2.5 dt %d lc rgb '%s'", variant_pt(id[i]), variant_dash(id[i]), fcolor(id[i])); lt_ = label[i]; eval legend_add
    }
  }
  eval('plot '.cmd)
  unset arrow
  unset label
  eval legend_strip(0.06)
  unset multiplot
}
unset output
