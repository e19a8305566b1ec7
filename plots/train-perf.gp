# plots/train-perf.gp RESULTS_DIR — halflab-train's cost per precision mode:
# the median step time (after the warm-up), the throughput at that time and
# the accounting allocator's peak, one bar per mode with its ratio to fp32;
# for the gpt2 preset (GPU) when present, else the tiny preset. On the CPU a
# fourth panel: the tiny fp32 step with 1 and 2 threads, OpenMP's passive
# wait policy against libgomp's default, with the machine's load average.
# Reads train_summary.csv; writes train-perf.png and .svg.
dir = ARG1
in = dir.'/train_summary.csv'
if (system(sprintf("test -f '%s' && echo 1 || echo 0", in)) eq "0") {
  print sprintf("train-perf.gp: %s not found: no chart (run scripts/train-all.sh)", in)
  exit
}
count(cond) = int(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } %s { n++ } END { print n + 0 }' '%s'", cond, in)))
group = count('$1 == "gpt2"') > 0 ? 'gpt2' : 'tiny'
sel = sprintf('$1 == "%s"', group)
if (count(sel) == 0) {
  print sprintf("train-perf.gp: no tiny or gpt2 rows in %s: no chart", in)
  exit
}
nthreads = count('$1 ~ /^threads-/')
# the header and the rows where cond holds, modes in the order of the modes table
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s { r[$2] = $0 } END { split(\"fp32 amp-fp16 amp-bf16 fp16-noscale fp16-static fp16-master fp16-pure\", m, \" \"); for (k = 1; k <= 7; k++) if (m[k] in r) print r[m[k]] }' '%s'", cond, in)
trows = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } $1 ~ /^threads-/' '%s'", in)
ref(col) = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } %s && $2 == \"fp32\" { print $c[\"%s\"] }' '%s'", sel, col, in)))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | cut -d, -f1 | sed 's/_/\\\\_/g'", in))
t32 = ref('step_time_ms_median')
r32 = ref(group eq 'gpt2' ? 'tokens_per_s' : 'tokens_per_s')
m32 = ref('mem_peak_bytes')
np = nthreads > 0 ? 4 : 3
MiB = 1048576.0

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
array color[7] = ['#000000', '#0072B2', '#56B4E9', '#E69F00', '#009E73', '#CC79A7', '#D55E00']
modecolor(m) = m eq 'fp32' ? 0x000000 : m eq 'amp-fp16' ? 0x0072B2 : m eq 'amp-bf16' ? 0x56B4E9 : m eq 'fp16-noscale' ? 0xE69F00 : \
               m eq 'fp16-static' ? 0x009E73 : m eq 'fp16-master' ? 0xCC79A7 : 0xD55E00

do for [out=1:2] {
  if (out == 1) {
    set terminal pngcairo size 480 * np + 80, 620 enhanced font 'Sans,11'
    set output dir.'/train-perf.png'
  } else {
    set terminal svg size 480 * np + 80, 620 enhanced font 'Sans,11' background rgb 'white'
    set output dir.'/train-perf.svg'
  }
  set multiplot layout 1, np title sprintf("halflab-train, %s preset: cost per precision mode (median step after the warm-up; labels: ratio to fp32)\n{/*0.85 %s}", group, desc) \
      margins 0.05, 0.99, 0.2, 0.82 spacing 0.06, 0.1
  set border 3
  set xtics nomirror rotate by -35
  set ytics nomirror
  set grid ytics back lc rgb '#dddddd'
  set style fill solid 0.85 noborder
  set boxwidth 0.7
  set yrange [0:*]
  set offsets 0, 0, graph 0.12, 0
  unset key

  set title 'step time'
  set ylabel 'ms per step (median)'
  plot rows(sel) using 0:'step_time_ms_median':(modecolor(strcol('mode'))):xtic(strcol('mode')) with boxes lc rgb variable, \
       '' using 0:'step_time_ms_median':(sprintf('%.2fx', column('step_time_ms_median') / t32)) with labels offset 0, 0.7 font ',10'

  set title 'throughput'
  set ylabel 'tokens per second'
  plot rows(sel) using 0:'tokens_per_s':(modecolor(strcol('mode'))):xtic(strcol('mode')) with boxes lc rgb variable, \
       '' using 0:'tokens_per_s':(sprintf('%.2fx', column('tokens_per_s') / r32)) with labels offset 0, 0.7 font ',10'

  set title "peak memory\n{/*0.85 the accounting allocator: weights, optimizer state, activations, gradients}"
  set ylabel 'MiB'
  plot rows(sel) using 0:(column('mem_peak_bytes') / MiB):(modecolor(strcol('mode'))):xtic(strcol('mode')) with boxes lc rgb variable, \
       '' using 0:(column('mem_peak_bytes') / MiB):(sprintf('%.2fx', column('mem_peak_bytes') / m32)) with labels offset 0, 0.7 font ',10'

  if (nthreads > 0) {
    set title "the tiny fp32 step: threads and OpenMP's wait policy\n{/*0.85 labels: ms; the 1-minute load average at the start}"
    set ylabel 'ms per step (median, log scale)'
    set logscale y
    set yrange [*:*]
    set offsets 0, 0, 0, 0
    plot trows using 0:'step_time_ms_median':xtic(substr(strcol('name'), 9, 99)) with boxes lc rgb '#0072B2', \
         '' using 0:'step_time_ms_median':(sprintf('%.1f ms\nload %.1f', column('step_time_ms_median'), column('load_start'))) with labels offset 0, 1.2 font ',10'
    unset logscale y
  }
  unset multiplot
}
unset output
