# plots/gemm-align.gp RESULTS_DIR — the alignment study: TFLOP/s of each
# variant for n x n x n around 4096, n = 4088 ... 4104. Filled points are
# multiples of 8 (16-byte rows for fp16, what tensor cores want), open ones
# are not. Reads gemm.csv; writes gemm-align.png and .svg.
dir = ARG1
in = dir.'/gemm.csv'
if (system(sprintf("test -f '%s' && echo 1 || echo 0", in)) eq "0") {
  print sprintf("gemm-align.gp: %s not found: no chart (run halflab-bench gemm)", in)
  exit
}
present = system(sprintf("awk -F, '/^#/ || !h++ { next } $2 == \"align\" { print $4 }' '%s' | sort -u | tr '\\n' ' '", in))
if (present eq "") {
  print "gemm-align.gp: no alignment study in ".in.": no chart (halflab-bench gemm --studies align)"
  exit
}
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", in))  # '_' would start a subscript

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[8] = ["fp32", "tf32", "fp16", "fp16-acc16", "bf16", "fp8", "openblas", "onednn-bf16"]
array color[8] = ['#000000', '#999999', '#D55E00', '#E69F00', '#0072B2', '#009E73', '#CC79A7', '#56B4E9']
has(v) = strstrt(' '.present, ' '.v.' ') > 0

set terminal pngcairo size 1280,800 enhanced font 'Sans,12'
set output dir.'/gemm-align.png'
set title sprintf("Alignment: n x n x n around 4096 (filled: n a multiple of 8, open: not)\n{/*0.8 %s}", desc)
set xlabel 'matrix size n'
set ylabel 'TFLOP/s (median)'
set xtics 4088, 2, 4104
set mxtics 2
set logscale y 10
set format y '%g'
set grid back lc rgb '#dddddd'
set border 3
set xtics nomirror
set ytics nomirror
set key outside right top box opaque spacing 1.2 width 1

# the header and the rows where an awk condition holds (columns by name: $c["variant"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
m8(n) = int(n) % 8 == 0
cmd = ''
do for [i=1:8] {
  if (has(id[i])) {
    sel = sprintf('rows(''$c["study"] == "align" && $c["variant"] == "%s"'')', id[i])
    cmd = cmd.sprintf("%s %s using (column('m')):(column('tflops')) with lines lw 1.5 lc rgb '%s' title '%s'", \
                      cmd eq '' ? '' : ',', sel, color[i], id[i])
    cmd = cmd.sprintf(", %s using (column('m')):(m8(column('m')) ? column('tflops') : 1/0) with points pt 7 ps 1.3 lc rgb '%s' notitle", sel, color[i])
    cmd = cmd.sprintf(", %s using (column('m')):(!m8(column('m')) ? column('tflops') : 1/0) with points pt 6 ps 1.3 lw 1.5 lc rgb '%s' notitle", sel, color[i])
  }
}
eval('plot '.cmd)

set terminal svg size 1280,800 enhanced font 'Sans,12' background rgb 'white'
set output dir.'/gemm-align.svg'
replot
unset output
