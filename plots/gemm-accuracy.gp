# plots/gemm-accuracy.gp RESULTS_DIR — why accumulation stays in fp32: the
# normwise relative error of C = A B against fp64 as k grows, per input and
# accumulation format. Left: data of mixed signs; right: positive data
# (partial sums grow like k, so a narrow accumulator stops adding). Solid:
# simulated on the CPU (sequential sum, rounded after every addition);
# dashed with points: the GPU's own GEMM where one was used; dotted with
# squares: the CPU's bf16 GEMM on oneDNN's matmul where it ran.
# Reads gemm_accuracy.csv; writes gemm-accuracy.png and .svg.
dir = ARG1
in = dir.'/gemm_accuracy.csv'
if (system(sprintf("test -f '%s' && echo 1 || echo 0", in)) eq "0") {
  print sprintf("gemm-accuracy.gp: %s not found: no chart (run halflab-bench gemm --accuracy)", in)
  exit
}
present = system(sprintf("awk -F, '/^#/ || !h++ { next } { print $3 }' '%s' | sort -u | tr '\\n' ' '", in))
gpu = system(sprintf("grep -q ',cublas,' '%s' && echo 1 || echo 0", in))
gpuvars = system(sprintf("awk -F, '/^#/ || !h++ { next } $2 == \"cublas\" { print $3 }' '%s' | sort -u | tr '\\n' ' '", in))
ongpu(v) = strstrt(' '.gpuvars, ' '.v.' ') > 0
cpuvars = system(sprintf("awk -F, '/^#/ || !h++ { next } $2 == \"onednn\" { print $3 }' '%s' | sort -u | tr '\\n' ' '", in))
ononednn(v) = strstrt(' '.cpuvars, ' '.v.' ') > 0
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", in))  # '_' would start a subscript

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[7] = ["fp32", "tf32", "fp16", "fp16-acc16", "bf16", "bf16-accbf16", "fp8"]
array label[7] = ["fp32 in, fp32 acc", "tf32 in, fp32 acc", "fp16 in, fp32 acc", "fp16 in, fp16 acc", \
                  "bf16 in, fp32 acc", "bf16 in, bf16 acc", "fp8 e4m3 in, fp32 acc"]
array color[7] = ['#000000', '#999999', '#D55E00', '#E69F00', '#0072B2', '#56B4E9', '#009E73']
array dataset[2] = ["signed", "positive"]
array dtitle[2] = ["data uniform in [-1, 1): partial sums grow like sqrt(k)", "data uniform in [0, 1): partial sums grow like k/4"]
array dash[7] = [1, 4, 1, 1, 1, 1, 1]   # tf32 and fp16 inputs have the same 11-bit significand: tf32 dash-dotted
has(v) = strstrt(' '.present, ' '.v.' ') > 0

set terminal pngcairo size 1400,760 enhanced font 'Sans,12'
set output dir.'/gemm-accuracy.png'
set multiplot layout 1,2 title sprintf("GEMM error against fp64 as k grows: ||C - C_{fp64}||_F / ||C_{fp64}||_F\n{/*0.8 solid: simulated on the CPU (sequential sum rounded after each addition)%s}", \
    (gpu eq "1" ? sprintf("; dashed with points: the GPU's GEMM (%s)", desc) : "; no GPU in this run"). \
    (cpuvars ne "" ? "; dotted with squares: oneDNN's bf16 matmul on the CPU" : ""))
set xlabel 'k (inner dimension)'
set ylabel 'relative error (Frobenius)'
set logscale xy
set format x '2^{%L}'
set format y '10^{%L}'
set logscale x 2
set grid back lc rgb '#dddddd'
set border 3
set xtics nomirror
set ytics nomirror
set yrange [1e-9:3]
set key bottom right box opaque spacing 1.1 width 1 font ',10'
# the header and the rows where an awk condition holds (columns by name: $c["variant"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
sel(v, m, d) = sprintf('rows(''$c["variant"] == "%s" && $c["method"] == "%s" && $c["data"] == "%s"'')', v, m, d)
do for [p=1:2] {
  set title dtitle[p]
  if (p == 1) { unset key } else { set key }
  cmd = ''
  do for [i=1:7] {
    if (has(id[i])) {
      cmd = cmd.sprintf("%s %s using (column('k')):(column('rel_err')) with lines lw 2 dt %d lc rgb '%s' title '%s'", \
                        cmd eq '' ? '' : ',', sel(id[i], 'simulated', dataset[p]), dash[i], color[i], label[i])
      if (ongpu(id[i])) {
        cmd = cmd.sprintf(", %s using (column('k')):(column('rel_err')) with linespoints dt 2 pt 7 ps 0.6 lw 1.5 lc rgb '%s' notitle", \
                          sel(id[i], 'cublas', dataset[p]), color[i])
      }
      if (ononednn(id[i])) {
        cmd = cmd.sprintf(", %s using (column('k')):(column('rel_err')) with linespoints dt 3 pt 4 ps 0.8 lw 1.5 lc rgb '%s' notitle", \
                          sel(id[i], 'onednn', dataset[p]), color[i])
      }
    }
  }
  eval('plot '.cmd)
}
unset multiplot

set terminal svg size 1400,760 enhanced font 'Sans,12' background rgb 'white'
set output dir.'/gemm-accuracy.svg'
set multiplot layout 1,2 title "GEMM error against fp64 as k grows (solid: simulated; dashed: GPU; dotted: oneDNN on the CPU)"
do for [p=1:2] {
  set title dtitle[p]
  if (p == 1) { unset key } else { set key }
  cmd = ''
  do for [i=1:7] {
    if (has(id[i])) {
      cmd = cmd.sprintf("%s %s using (column('k')):(column('rel_err')) with lines lw 2 dt %d lc rgb '%s' title '%s'", \
                        cmd eq '' ? '' : ',', sel(id[i], 'simulated', dataset[p]), dash[i], color[i], label[i])
      if (ongpu(id[i])) {
        cmd = cmd.sprintf(", %s using (column('k')):(column('rel_err')) with linespoints dt 2 pt 7 ps 0.6 lw 1.5 lc rgb '%s' notitle", \
                          sel(id[i], 'cublas', dataset[p]), color[i])
      }
      if (ononednn(id[i])) {
        cmd = cmd.sprintf(", %s using (column('k')):(column('rel_err')) with linespoints dt 3 pt 4 ps 0.8 lw 1.5 lc rgb '%s' notitle", \
                          sel(id[i], 'onednn', dataset[p]), color[i])
      }
    }
  }
  eval('plot '.cmd)
}
unset multiplot
unset output
