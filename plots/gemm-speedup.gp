# plots/gemm-speedup.gp RESULTS_DIR — what a narrower precision buys: each
# variant's TFLOP/s divided by fp32's at the same square size n (1 = no
# gain). On a CPU fp16 widens to fp32 and cannot gain, bf16 gains where
# oneDNN runs it on the CPU's bf16 units; the OpenBLAS and oneDNN lines
# there are the references the fp32 and bf16 paths are held to.
# Reads gemm.csv; writes gemm-speedup.png and .svg.
dir = ARG1
in = dir.'/gemm.csv'
if (system(sprintf("test -f '%s' && echo 1 || echo 0", in)) eq "0") {
  print sprintf("gemm-speedup.gp: %s not found: no chart (run halflab-bench gemm)", in)
  exit
}
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", in))  # '_' would start a subscript
# n, variant, TFLOP/s over fp32's at that n (square study), by column name
join = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"study\"] == \"square\" { t[$c[\"m\"], $c[\"variant\"]] = $c[\"tflops\"]; if (!($c[\"m\"] in seen)) { seen[$c[\"m\"]] = 1; ns[++n] = $c[\"m\"] } v[$c[\"variant\"]] = 1 } END { print \"n,variant,speedup\"; for (x in v) for (i = 1; i <= n; i++) if ((ns[i], \"fp32\") in t && (ns[i], x) in t && x != \"fp32\") printf \"%%s,%%s,%%.6g\\n\", ns[i], x, t[ns[i], x] / t[ns[i], \"fp32\"] }' '%s'", in)
present = system(sprintf("awk -F, '/^#/ || !h++ { next } $2 == \"square\" { print $4 }' '%s' | sort -u | tr '\\n' ' '", in))

set datafile separator ','
set datafile columnheaders

array id[8] = ["tf32", "fp16", "fp16-acc16", "bf16", "fp8", "openblas", "onednn-bf16", "bf16-widened"]
array label[8] = ["tf32 / fp32", "fp16 (fp32 acc) / fp32", "fp16 (fp16 acc) / fp32", "bf16 / fp32", "fp8 / fp32", \
                  "OpenBLAS direct / fp32 path", "oneDNN bf16 direct / fp32 path", "bf16 CPU fallback / fp32 path"]
array color[8] = ['#999999', '#D55E00', '#E69F00', '#0072B2', '#009E73', '#CC79A7', '#56B4E9', '#7F7F00']
has(v) = strstrt(' '.present, ' '.v.' ') > 0

set terminal pngcairo size 1280,800 enhanced font 'Sans,12'
set output dir.'/gemm-speedup.png'
set title sprintf("Speed-up over fp32 at the same size n x n x n (ratio of median TFLOP/s)\n{/*0.8 %s}", desc)
set xlabel 'matrix size n'
set ylabel 'TFLOP/s relative to fp32 (1 = same speed)'
set logscale x 2
set logscale y 2
set format y '%g'
set grid back lc rgb '#dddddd'
set border 3
set xtics nomirror
set ytics nomirror
set key top left box opaque spacing 1.2 width 1

cmd = ''
do for [i=1:|id|] {
  if (has(id[i])) {
    cmd = cmd.sprintf("%s join using (column('n')):(strcol('variant') eq '%s' ? column('speedup') : 1/0) with linespoints pt 7 ps 0.8 lw 2 lc rgb '%s' title '%s'", \
                      cmd eq '' ? '' : ',', id[i], color[i], label[i])
  }
}
if (cmd eq '') { print "gemm-speedup.gp: no variant beside fp32 in the square study: no chart"; exit }
eval('plot '.cmd.", 1 with lines lw 1.5 lc rgb '#000000' title 'fp32 itself (= 1)'")

set terminal svg size 1280,800 enhanced font 'Sans,12' background rgb 'white'
set output dir.'/gemm-speedup.svg'
replot
unset output
