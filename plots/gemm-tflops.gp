# plots/gemm-tflops.gp RESULTS_DIR — matrix-product throughput against size:
# TFLOP/s (median) of every variant over the square sweep n x n x n, log
# axes, colour by precision family and dash by type (style.gp), each
# variant's dense peak as a dotted line of its colour (a GPU's datasheet
# figure; on a CPU the FLOP/cycle of the unit its products run on x cores x
# clock; absent where the peak is unknown). Reads gemm.csv; writes the
# preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/gemm.csv')
if (!file_exists(in)) {
  print sprintf("gemm-tflops.gp: %s not found: no chart (run halflab-bench gemm)", in)
  exit
}
# awk over gemm.csv's rows, c["name"] the index of each column
awk_rows(prog) = "awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } ".prog."' '".in."'"
gpu = on_gpu(in)
peaks = system(awk_rows('$c["peak_tflop_per_s"] != "" { n++ } END { print n + 0 }'))
peak_note = peaks eq "0" ? "no peak lines: peak unknown for this device (see the CSV's peak\\_source line)" : \
            (gpu ? "dotted: the datasheet's dense peak for that precision" : "dotted: the peak of the unit each precision's products run on")
# the peaks at the largest square size, one line per value: "value|names"
peak_rows = system(awk_rows('$c["study"] == "square" && $c["peak_tflop_per_s"] != "" && $c["variant"] !~ /^(openblas|onednn-bf16|bf16-widened)$/ && !($c["variant"] in p) { p[$c["variant"]] = $c["peak_tflop_per_s"]; o[++nv] = $c["variant"] } END { for (i = 1; i <= nv; i++) { v = o[i]; k = sprintf("%.3g", p[v]); if (k in n) n[k] = n[k] "/" v; else { n[k] = v; ko[++nk] = k } } for (i = 1; i <= nk; i++) print ko[i] "|" n[ko[i]] }'))
# the data's range, for the axis and its ticks
stats_lo = real(system(awk_rows('$c["study"] == "square" && (m == "" || $c["tflop_per_s"] + 0 < m) { m = $c["tflop_per_s"] + 0 } END { print m + 0 }')))
stats_hi = real(system(awk_rows('$c["study"] == "square" { if ($c["tflop_per_s"] + 0 > m) m = $c["tflop_per_s"] + 0; if ($c["peak_tflop_per_s"] + 0 > m) m = $c["peak_tflop_per_s"] + 0 } END { print m + 0 }')))
present = system(awk_rows('$c["study"] == "square" { print $c["variant"] }')." | sort -u | tr '\\n' ' '")
# the claim for slides and print: the fastest type at the largest size
# against fp32 there, long (slides, a page) and short (a column): "long|short"
claims = system(awk_rows('$c["study"] == "square" { n = $c["m"] + 0; if (n > top) top = n; t[n, $c["variant"]] = $c["tflop_per_s"] } END { for (x in t) { split(x, k, SUBSEP); if (k[1] == top && k[2] !~ /^(openblas|onednn-bf16|bf16-widened)$/ && (b == "" || t[x] > t[top, b])) b = k[2] } if (b == "") exit; if (b == "fp32" || !((top, "fp32") in t)) printf "GEMM at n = %d: %s fastest, %.3g TFLOP/s|%s fastest at n = %d: %.3g TFLOP/s", top, b, t[top, b], b, top, t[top, b]; else printf "GEMM at n = %d: %s runs %.2fx fp32 (%.3g against %.3g TFLOP/s)|%s %.2fx fp32 at n = %d (%.3g TFLOP/s)", top, b, t[top, b] / t[top, "fp32"], t[top, b], t[top, "fp32"], b, t[top, b] / t[top, "fp32"], top, t[top, b] }'))
claim = claims[1:strstrt(claims, '|') - 1]
claim_n = claims[strstrt(claims, '|') + 1:]

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[9] = ["fp32", "tf32", "fp16", "fp16-acc16", "bf16", "fp8", "openblas", "onednn-bf16", "bf16-widened"]
array label[9] = [gpu ? "fp32 (SIMT)" : "fp32 (sgemm)", "tf32 (tensor cores)", "fp16, fp32 accumulate", "fp16, fp16 accumulate", \
                  "bf16, fp32 accumulate", "fp8 e4m3, fp32 accumulate", "OpenBLAS sgemm called directly", \
                  "oneDNN bf16 matmul called directly", "bf16 on the CPU fallback (widened to fp32)"]
array short[9] = ["fp32", "tf32", "fp16", "fp16 acc16", "bf16", "fp8", "OpenBLAS", "oneDNN bf16", "bf16 widened"]
has(v) = strstrt(' '.present, ' '.v.' ') > 0
# the header and the rows where an awk condition holds (columns by name: $c["variant"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)

footer = footer_of(in)
narrow_aspect = 0.95
do for [out_i=1:out_n] {
  # the axes as style.gp sets them (the legend strip of the file before unset them)
  unset label
  unset arrow
  set border 3
  set xtics nomirror autofreq
  set ytics nomirror autofreq
  set autoscale xy
  eval out_open(dir, 'gemm-tflops', 1400, 900, out_i)
  do for [i=1:|id|] {
    if (has(id[i])) {
      ls_ = sprintf("with linespoints pt %d ps 1.3 lw 2.5 dt %d lc rgb '%s'", variant_pt(id[i]), variant_dash(id[i]), fcolor(id[i]))
      lt_ = narrow ? short[i] : label[i]; eval legend_add
    }
  }
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  g_T = 1 - text_h(preset eq 'screen' ? 3.6 : 1.8)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(3.0)
  set multiplot title title_of(sprintf("GEMM throughput by precision, n x n x n (FLOPs = 2n^3, median of the timed launches)\n%s", peak_note), narrow ? claim_n : claim)
  set tmargin at screen g_T
  set bmargin at screen g_B
  set xlabel 'matrix size n'
  set ylabel 'TFLOP/s'
  set logscale x 2
  set logscale y 10
  set yrange [stats_lo / 1.25:stats_hi * 1.3]
  log_lo = stats_lo / 1.25
  log_hi = stats_hi * 1.3
  eval log125_ytics
  eval 'set grid xtics ytics '.grid_opts
  unset key
  # the peaks: dotted lines, labelled above their left end, one per value
  do for [k=1:words(peak_rows)] {
    pr = word(peak_rows, k)
    pv = real(pr[1:strstrt(pr, '|') - 1])
    pn = pr[strstrt(pr, '|') + 1:]
    set arrow k from graph 0, first pv to graph 1, first pv nohead dt 3 lw 2 lc rgb fcolor(pn[1:strstrt(pn.'/', '/') - 1]) back
    set label k sprintf("%s peak %.3g", pn, pv) at graph 0.01, first pv offset 0, 0.6 left tc rgb fcolor(pn[1:strstrt(pn.'/', '/') - 1])
  }
  cmd = ''
  do for [i=1:|id|] {
    if (has(id[i])) {
      sel = sprintf('$c["study"] == "square" && $c["variant"] == "%s"', id[i])
      cmd = cmd.sprintf("%s rows('%s') using (column('m')):(column('tflop_per_s')) with linespoints pt %d ps 1.3 lw 2.5 dt %d lc rgb '%s' notitle", \
                        cmd eq '' ? '' : ',', sel, variant_pt(id[i]), variant_dash(id[i]), fcolor(id[i]))
    }
  }
  eval('plot '.cmd)
  unset label 9999
  unset arrow
  unset label
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
