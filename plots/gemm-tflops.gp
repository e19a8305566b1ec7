# plots/gemm-tflops.gp RESULTS_DIR — matrix-product throughput against size:
# TFLOP/s (median) of every variant over the square sweep n x n x n, log
# axes, each variant's dense peak as a dashed line of its colour (a GPU's
# datasheet figure; on a CPU the FLOP/cycle of the unit its products run on
# x cores x clock; absent where the peak is unknown). Reads gemm.csv; writes
# gemm-tflops.png and .svg.
dir = ARG1
in = dir.'/gemm.csv'
if (system(sprintf("test -f '%s' && echo 1 || echo 0", in)) eq "0") {
  print sprintf("gemm-tflops.gp: %s not found: no chart (run halflab-bench gemm)", in)
  exit
}
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", in))  # '_' would start a subscript
# the variants present in the square study, in the order of the table below
# the peaks: drawn where the device is in a built-in table
peaks = system(sprintf("awk -F, '/^#/ || !h++ { next } $25 != \"\" { n++ } END { print n + 0 }' '%s'", in))
peak_note = peaks eq "0" ? "no peak lines: peak unknown for this device (see the CSV's peak\\_source line)" : (desc[1:3] eq "cpu" ? "dashed: the peak of the unit each precision's products run on" : "dashed: the datasheet's dense peak for that precision")
present = system(sprintf("awk -F, '/^#/ || !h++ { next } $2 == \"square\" { print $4 }' '%s' | sort -u | tr '\\n' ' '", in))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[9] = ["fp32", "tf32", "fp16", "fp16-acc16", "bf16", "fp8", "openblas", "onednn-bf16", "bf16-widened"]
array label[9] = ["fp32 (SIMT / sgemm)", "tf32 (tensor cores)", "fp16, fp32 accumulate", "fp16, fp16 accumulate", \
                  "bf16, fp32 accumulate", "fp8 e4m3, fp32 accumulate", "OpenBLAS sgemm called directly", \
                  "oneDNN bf16 matmul called directly", "bf16 on the CPU fallback (widened to fp32)"]
array color[9] = ['#000000', '#999999', '#D55E00', '#E69F00', '#0072B2', '#009E73', '#CC79A7', '#56B4E9', '#7F7F00']
has(v) = strstrt(' '.present, ' '.v.' ') > 0

set terminal pngcairo size 1280,800 enhanced font 'Sans,12'
set output dir.'/gemm-tflops.png'
set title sprintf("GEMM throughput by precision, n x n x n (FLOPs = 2n^3, median of timed launches)\n{/*0.8 %s; %s}", desc, peak_note)
set xlabel 'matrix size n'
set ylabel 'TFLOP/s'
set logscale x 2
set logscale y 10
set format y '%g'
set grid back lc rgb '#dddddd'
set grid mytics
set border 3
set xtics nomirror
set ytics nomirror
set key bottom right box opaque spacing 1.2 width 1

# the header and the rows where an awk condition holds (columns by name: $c["variant"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
# one line (and its peak) per variant present: the plot command is built as a string
cmd = ''
do for [i=1:|id|] {
  if (has(id[i])) {
    sel = sprintf('$c["study"] == "square" && $c["variant"] == "%s"', id[i])
    cmd = cmd.sprintf("%s rows('%s') using (column('m')):(column('tflops')) with linespoints pt 7 ps 0.8 lw 2 lc rgb '%s' title '%s'", \
                      cmd eq '' ? '' : ',', sel, color[i], label[i])
    if (peaks ne "0") { cmd = cmd.sprintf(", rows('%s && $c[\"peak_tflops\"] != \"\"') using (column('m')):(column('peak_tflops')) with lines dt 2 lw 1.5 lc rgb '%s' notitle", \
                      sel, color[i]) }
  }
}
eval('plot '.cmd)

set terminal svg size 1280,800 enhanced font 'Sans,12' background rgb 'white'
set output dir.'/gemm-tflops.svg'
replot
unset output
