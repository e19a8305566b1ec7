# plots/gemm-accuracy.gp RESULTS_DIR — why accumulation stays in fp32: the
# normwise relative error of C = A B against fp64 as k grows, per input and
# accumulation format. Left: data of mixed signs; right: positive data
# (partial sums grow like k, so a narrow accumulator stops adding). Solid:
# simulated on the CPU (sequential sum, rounded after every addition);
# dashed with open circles: the GPU's own GEMM where one was used; dotted
# with squares: the CPU's bf16 GEMM on oneDNN's matmul where it ran. tf32
# and fp16 inputs share an 11-bit significand, so their lines coincide:
# tf32 is drawn dashed with points on top of fp16's solid line.
# Reads gemm_accuracy.csv; writes gemm-accuracy.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/gemm_accuracy.csv'
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
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", in))  # '_' would start a subscript

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[7] = ["fp32", "tf32", "fp16", "fp16-acc16", "bf16", "bf16-accbf16", "fp8"]
array label[7] = ["fp32 in, fp32 acc", "tf32 in, fp32 acc", "fp16 in, fp32 acc", "fp16 in, fp16 acc", \
                  "bf16 in, fp32 acc", "bf16 in, bf16 acc", "fp8 e4m3 in, fp32 acc"]
array dataset[2] = ["signed", "positive"]
array dtitle[2] = ["data uniform in [-1, 1): partial sums grow like sqrt(k)", "data uniform in [0, 1): partial sums grow like k/4"]
has(v) = strstrt(' '.present, ' '.v.' ') > 0

array acc_dash[7] = [1, 2, 1, 4, 1, 4, 1]
array acc_pt[7] = [-1, 9, -1, -1, -1, -1, -1]
# the header and the rows where an awk condition holds (columns by name: $c["variant"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
sel(v, m, d) = sprintf('rows(''$c["variant"] == "%s" && $c["method"] == "%s" && $c["data"] == "%s"'')', v, m, d)
style(i) = acc_pt[i] > 0 ? sprintf("with linespoints pt %d ps 1.6 lw 2.5 dt %d lc rgb '%s'", acc_pt[i], acc_dash[i], fcolor(id[i])) : \
                           sprintf("with lines lw 2.5 dt %d lc rgb '%s'", acc_dash[i], fcolor(id[i]))
W = 1600
H = 900
g_cols = 2
g_L = 0.08
g_R = 0.98
g_B = 0.22
g_T = 0.8
g_hs = 0.08
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/gemm-accuracy.png' } else { eval svg(W, H); set output dir.'/gemm-accuracy.svg' }
  set multiplot title sprintf("GEMM error against fp64 as k grows: ||C - C_{fp64}||_F / ||C_{fp64}||_F\nlines: simulated on the CPU (sequential sum rounded after each addition)%s%s", \
      (gpu eq "1" ? sprintf("; open circles: the GPU's GEMM (%s)", desc) : ""), \
      (cpuvars ne "" ? "; squares, dotted: oneDNN's bf16 matmul on the CPU" : ""))
  set xlabel 'k (inner dimension)'
  set ylabel 'relative error (Frobenius)'
  set logscale x 2
  set logscale y 10
  set format x '2^{%L}'
  set format y '10^{%L}'
  set xtics 1, 2  # every power of two from the first k (2^6) on
  set ytics 1e-9, 10, 10
  set yrange [1e-9:3]
  set grid xtics ytics back lc rgb '#dddddd'
  unset key
  do for [p=1:2] {
    eval cell(p, 1)
    set title dtitle[p]
    cmd = ''
    do for [i=1:7] {
      if (has(id[i])) {
        cmd = cmd.sprintf("%s %s using (column('k')):(column('rel_err')) %s notitle", cmd eq '' ? '' : ',', sel(id[i], 'simulated', dataset[p]), style(i))
        if (ongpu(id[i])) {
          cmd = cmd.sprintf(", %s using (column('k')):(column('rel_err')) with linespoints dt 2 pt 6 ps 1.6 lw 2 lc rgb '%s' notitle", sel(id[i], 'cublas', dataset[p]), fcolor(id[i]))
        }
        if (ononednn(id[i])) {
          cmd = cmd.sprintf(", %s using (column('k')):(column('rel_err')) with linespoints dt 3 pt 4 ps 1.6 lw 2 lc rgb '%s' notitle", sel(id[i], 'onednn', dataset[p]), fcolor(id[i]))
        }
        if (p == 1) { ls_ = style(i); lt_ = label[i]; eval legend_add }
      }
    }
    eval('plot '.cmd)
  }
  if (gpu eq "1") { ls_ = "with points pt 6 ps 1.6 lw 2 lc rgb c_ref"; lt_ = "the GPU's GEMM"; eval legend_add }
  if (cpuvars ne "") { ls_ = "with linespoints dt 3 pt 4 ps 1.6 lw 2 lc rgb c_bf16"; lt_ = "oneDNN bf16 matmul"; eval legend_add }
  eval legend_strip(0.1)
  unset multiplot
}
unset output
