# plots/gemm-accuracy.gp RESULTS_DIR — why accumulation stays in fp32: the
# normwise relative error of C = A B against fp64 as k grows, per input and
# accumulation format. Left: data of mixed signs; right: positive data
# (partial sums grow like k, so a narrow accumulator stops adding). Colour is
# the input's family, the dash the type (solid fp32, dashed a narrower
# input, dash-dotted a narrow accumulator); lines: simulated on the CPU
# (sequential sum, rounded after every addition); open circles: the GPU's
# own GEMM where one was used; open squares: the CPU's bf16 GEMM on oneDNN's
# matmul where it ran. tf32 and fp16 inputs share an 11-bit significand, so
# their lines coincide: tf32 is drawn dotted with points on top of fp16's
# dashed line. Where the file has emulated rows (block-scaled fp8, MXFP8/6/4,
# NVFP4 inputs and the model of Hopper's narrow fp8 accumulator, all computed
# on the CPU), a second row of panels shows them beside the fp32 line; their
# colour is the element width (green fp8, orange fp6, purple fp4), the dash
# the accumulator (dashed fp32, dash-dotted the narrow one, dotted the narrow
# one promoted every 128), the point the scale rule.
# Reads gemm_accuracy.csv; writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/gemm_accuracy.csv')
if (!file_exists(in)) {
  print sprintf("gemm-accuracy.gp: %s not found: no chart (run halflab-bench gemm --accuracy)", in)
  exit
}
present = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c[\"variant\"] }' '%s' | sort -u | tr '\\n' ' '", in))
gpu = system(sprintf("grep -q ',cublas,' '%s' && echo 1 || echo 0", in))
gpuvars = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"method\"] == \"cublas\" { print $c[\"variant\"] }' '%s' | sort -u | tr '\\n' ' '", in))
ongpu(v) = strstrt(' '.gpuvars, ' '.v.' ') > 0
cpuvars = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"method\"] == \"onednn\" { print $c[\"variant\"] }' '%s' | sort -u | tr '\\n' ' '", in))
ononednn(v) = strstrt(' '.cpuvars, ' '.v.' ') > 0

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

NV = 18
array id[NV] = ["fp32", "tf32", "fp16", "fp16-acc16", "bf16", "bf16-accbf16", "fp8", \
                "fp8-tensor", "fp8-tensor-acc14", "fp8-tensor-acc14-p128", "fp8-block", "fp8-block-acc14-p128", \
                "mxfp8", "mxfp8-e5m2", "mxfp6", "mxfp6-e3m2", "mxfp4", "nvfp4"]
array label[NV] = ["fp32 in, fp32 acc", "tf32 in, fp32 acc", "fp16 in, fp32 acc", "fp16 in, fp16 acc", \
                  "bf16 in, fp32 acc", "bf16 in, bf16 acc", "fp8 e4m3 in, fp32 acc", \
                  "fp8 per-tensor, fp32 acc", "fp8 per-tensor, 14-bit acc", "fp8 per-tensor, 14-bit acc, fp32 every 128", \
                  "fp8 1x128/128x128, fp32 acc", "fp8 1x128/128x128, 14-bit acc, fp32 every 128 (DeepSeek-V3)", \
                  "MXFP8 e4m3", "MXFP8 e5m2", "MXFP6 e2m3", "MXFP6 e3m2", "MXFP4 e2m1", "NVFP4 e2m1"]
# the CSV's method of each line, and the row of panels it is drawn in (2: emulated inputs)
array meth[NV] = ["simulated", "simulated", "simulated", "simulated", "simulated", "simulated", "simulated", \
                  "emulated", "emulated", "emulated", "emulated", "emulated", "emulated", "emulated", "emulated", "emulated", \
                  "emulated", "emulated"]
array prow[NV] = [1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]
emulated = system(sprintf("grep -q ',emulated,' '%s' && echo 1 || echo 0", in)) eq "1"
c_fp6 = '#E69F00'
c_fp4 = '#882255'
array ecolor[NV] = ['', '', '', '', '', '', '', c_fp8, c_fp8, c_fp8, c_fp8, c_fp8, c_fp8, c_fp8, c_fp6, c_fp6, c_fp4, c_fp4]
lcolor(i) = i <= 7 ? fcolor(id[i]) : ecolor[i]
array dataset[2] = ["signed", "positive"]
array dtitle[2] = ["data uniform in [-1, 1): partial sums grow like sqrt(k)", "data uniform in [0, 1): partial sums grow like k/4"]
has(v) = strstrt(' '.present, ' '.v.' ') > 0

array label_n[NV] = ["fp32", "tf32", "fp16", "fp16, acc16", "bf16", "bf16, acc bf16", "fp8", \
                    "fp8 tensor", "fp8 tensor, acc14", "fp8 tensor, acc14/128", "fp8 block", "fp8 block, acc14/128", \
                    "MXFP8", "MXFP8 e5m2", "MXFP6", "MXFP6 e3m2", "MXFP4", "NVFP4"]
array dtitle_n[2] = ["mixed signs, [-1, 1)", "positive, [0, 1)"]
array acc_dash[NV] = [1, 3, 2, 4, 2, 4, 2, 2, 4, 3, 2, 3, 2, 4, 2, 4, 2, 2]
array acc_pt[NV] = [-1, 9, -1, -1, -1, -1, -1, 5, 5, 5, 7, 7, 9, 8, 11, 10, 13, 4]
# the header and the rows where an awk condition holds (columns by name: $c["variant"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
sel(v, m, d) = sprintf('rows(''$c["variant"] == "%s" && $c["method"] == "%s" && $c["data"] == "%s"'')', v, m, d)
style(i) = acc_pt[i] > 0 ? sprintf("with linespoints pt %d ps 1.6 lw 2.5 dt %d lc rgb '%s'", acc_pt[i], acc_dash[i], lcolor(i)) : \
                           sprintf("with lines lw 2.5 dt %d lc rgb '%s'", acc_dash[i], lcolor(i))
# the claim: on positive data at the largest k, a narrow accumulator against fp32 accumulation of the same input
claims = system("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"method\"] == \"simulated\" && $c[\"data\"] == \"positive\" { k = $c[\"k\"] + 0; if (k > top) top = k; e[k, $c[\"variant\"]] = $c[\"rel_err\"] } END { for (i = 1; i <= 2; i++) { n = i == 1 ? \"fp16\" : \"bf16\"; if ((top, n \"-acc16\") in e) a = n \"-acc16\"; else if ((top, n \"-acc\" n) in e) a = n \"-acc\" n; else continue; if (!((top, n) in e)) continue; printf \"k = %d, positive data: %s accumulator error %.2g, fp32 accumulator %.2g|k = %d: %s acc. error %.2g, fp32 acc. %.2g\", top, n, e[top, a], e[top, n], top, n, e[top, a], e[top, n]; exit } }' '".in."'")
claim = claims eq '' ? 'GEMM error against fp64 as k grows' : claims[1:strstrt(claims, '|') - 1]
claim_n = claims eq '' ? claim : claims[strstrt(claims, '|') + 1:]
footer = footer_of(in)
narrow_aspect = emulated ? 2.6 : 1.45
do for [out_i=1:out_n] {
  unset label
  unset arrow
  set border 3
  set xtics nomirror
  set ytics nomirror
  set autoscale xy
  eval out_open(dir, 'gemm-accuracy', 1600, emulated ? 1600 : 900, out_i)
  do for [i=1:NV] {
    if (has(id[i])) { ls_ = style(i); lt_ = narrow ? label_n[i] : label[i]; eval legend_add }
  }
  if (gpu eq "1") { ls_ = "with points pt 6 ps 1.6 lw 2 lc rgb c_ref"; lt_ = "the GPU's GEMM"; eval legend_add }
  if (cpuvars ne "") { ls_ = "with linespoints dt 2 pt 4 ps 1.6 lw 2 lc rgb c_bf16"; lt_ = narrow ? "oneDNN bf16" : "oneDNN bf16 matmul"; eval legend_add }
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  g_cols = narrow ? 1 : 2
  g_rows = (narrow ? 2 : 1) * (emulated ? 2 : 1)
  g_T = 1 - text_h(preset eq 'screen' ? (emulated ? 6.2 : 5.0) : 3.8)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(3.0)
  g_L = narrow ? 0.17 : 7.5 * cur_pt / cur_w   # room for the y label and ticks
  g_R = 0.97
  g_hs = emulated && preset eq 'slides' ? 0.11 : 0.08  # room for the right column's y label
  g_vs = text_h(4.6)
  set multiplot title title_of(sprintf("GEMM error against fp64 as k grows: ||C - C_{fp64}||_F / ||C_{fp64}||_F\nlines: simulated on the CPU (sequential sum rounded after each addition)%s%s%s", \
      (emulated ? "\nlower panels: emulated on the CPU (quantized and dequantized; fp32 or a 14-bit accumulator model), never a hardware speed" : ""), \
      (gpu eq "1" ? "; open circles: the GPU's GEMM" : ""), \
      (cpuvars ne "" ? "; open squares: oneDNN's bf16 matmul on the CPU" : "")), narrow ? claim_n : claim)
  set xlabel 'k (inner dimension)'
  set ylabel narrow ? 'relative error' : 'relative error (Frobenius)'
  set logscale x 2
  set logscale y 10
  set format x '2^{%L}'
  set format y '10^{%L}'
  set xtics 1, narrow ? 4 : 2  # every (second) power of two from the first k (2^6) on
  set ytics 1e-9, (narrow || (emulated && preset eq 'slides')) ? 100 : 10, 10  # short panels: every second decade
  set yrange [1e-9:3]
  eval 'set grid xtics ytics '.grid_opts
  unset key
  do for [panel=1:(emulated ? 4 : 2)] {
    p = (panel - 1) % 2 + 1
    r = (panel - 1) / 2 + 1
    eval cell(narrow ? 1 : p, narrow ? (r - 1) * 2 + p : r)
    set title (r == 2 ? (narrow ? "emulated, " : "block-scaled inputs, emulated on the CPU: ").dtitle_n[p] : (narrow ? dtitle_n[p] : dtitle[p]))
    set xlabel (narrow && p == 1) ? '' : 'k (inner dimension)'
    cmd = ''
    do for [i=1:NV] {
      if (has(id[i]) && (prow[i] == r || i == 1)) {
        cmd = cmd.sprintf("%s %s using (column('k')):(column('rel_err')) %s notitle", cmd eq '' ? '' : ',', sel(id[i], meth[i], dataset[p]), style(i))
        if (ongpu(id[i])) {
          cmd = cmd.sprintf(", %s using (column('k')):(column('rel_err')) with linespoints dt %d pt 6 ps 1.6 lw 2 lc rgb '%s' notitle", sel(id[i], 'cublas', dataset[p]), acc_dash[i], lcolor(i))
        }
        if (ononednn(id[i])) {
          cmd = cmd.sprintf(", %s using (column('k')):(column('rel_err')) with linespoints dt %d pt 4 ps 1.6 lw 2 lc rgb '%s' notitle", sel(id[i], 'onednn', dataset[p]), acc_dash[i], lcolor(i))
        }
      }
    }
    eval('plot '.cmd)
    unset label 9999
  }
  unset title
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
