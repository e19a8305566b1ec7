# plots/train-perf.gp RESULTS_DIR — halflab-train's cost per precision mode:
# the median step time (after the warm-up), the throughput at that time and
# the accounting allocator's peak, one bar per mode with its ratio to fp32;
# for the gpt2 preset (GPU) when present, else the tiny preset. On the CPU a
# fourth panel: the tiny fp32 step with 1 and 2 threads, OpenMP's passive
# wait policy against libgomp's default, with the machine's load average.
# Reads train_summary.csv; writes train-perf.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/train_summary.csv'
if (!file_exists(in)) {
  print sprintf("train-perf.gp: %s not found: no chart (run scripts/train-all.sh)", in)
  exit
}
count(cond) = int(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } %s { n++ } END { print n + 0 }' '%s'", cond, in)))
group = count('$c["name"] == "gpt2"') > 0 ? 'gpt2' : 'tiny'
sel = sprintf('$c["name"] == "%s"', group)
if (count(sel) == 0) {
  print sprintf("train-perf.gp: no tiny or gpt2 rows in %s: no chart", in)
  exit
}
nthreads = count('$c["name"] ~ /^threads-/')
# the header and the rows where cond holds, modes in the order of the modes table
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s { r[$c[\"mode\"]] = $0 } END { split(\"fp32 amp-fp16 amp-bf16 fp16-noscale fp16-static fp16-master fp16-pure\", m, \" \"); for (k = 1; k <= 7; k++) if (m[k] in r) print r[m[k]] }' '%s'", cond, in)
trows = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } $c[\"name\"] ~ /^threads-/' '%s'", in)
ref(col) = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } %s && $c[\"mode\"] == \"fp32\" { print $c[\"%s\"] }' '%s'", sel, col, in)))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' '%s'/train_*_summary.csv 2>/dev/null | head -1 | cut -d, -f1 | sed 's/_/\\\\_/g'", in, dir))
t32 = ref('step_time_ms_median')
r32 = ref(group eq 'gpt2' ? 'tokens_per_s' : 'tokens_per_s')
m32 = ref('mem_peak_bytes')
np = nthreads > 0 ? 4 : 3
MiB = 1048576.0

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
ok(st) = st eq 'completed'
# a run that stopped early: its few timed steps (the first ones included) are no measure of the mode
flag(st) = ok(st) ? '' : sprintf("\n(%s)", st)
# the ratio labels of every other bar sit higher (offset 3.0 against 1.4 lines), so that the labels
# of neighbouring bars of like height never meet

# two panels a row: the ratio labels need the width of a bar each
W = 1600
H = np > 2 ? 1300 : 760
g_cols = 2
g_rows = np > 2 ? 2 : 1
g_L = 0.08
g_R = 0.98
g_B = np > 2 ? 0.11 : 0.2
g_T = np > 2 ? 0.86 : 0.74
g_hs = 0.1
g_vs = 0.17
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/train-perf.png' } else { eval svg(W, H); set output dir.'/train-perf.svg' }
  set multiplot title sprintf("halflab-train, %s preset: cost per precision mode (median step after the warm-up; labels: ratio to fp32)\n%s; colour: the mode's precision family; hatched: a run that did not complete, its timings from the steps it ran", group, desc)
  set border 3
  set xtics nomirror rotate by -40 left
  set ytics nomirror
  set grid ytics back lc rgb '#dddddd'
  set boxwidth 0.7
  set yrange [0:*]
  set offsets 0.5, 0.5, graph 0.16, 0
  unset key
  set xlabel ''

  eval cell(1, 1)
  set title 'step time'
  set ylabel 'ms per step (median)'
  plot rows(sel) using 0:(ok(strcol('status')) ? column('step_time_ms_median') : 1/0):(0.7):(fcolor_int(strcol('mode'))):xtic(strcol('mode')) with boxes lc rgb variable fs solid 0.9 noborder, \
       '' using 0:(ok(strcol('status')) ? 1/0 : column('step_time_ms_median')):(0.7):(fcolor_int(strcol('mode'))) with boxes lc rgb variable fs pattern 4, \
       '' using 0:(int($0) % 2 ? 1/0 : column('step_time_ms_median')):(sprintf('%.2fx%s', column('step_time_ms_median') / t32, flag(strcol('status')))) with labels offset 0, 1.4, \
       '' using 0:(int($0) % 2 ? column('step_time_ms_median') : 1/0):(sprintf('%.2fx%s', column('step_time_ms_median') / t32, flag(strcol('status')))) with labels offset 0, 3.0

  eval cell(2, 1)
  set title 'throughput'
  set ylabel 'tokens per second'
  set format y '%.0f'
  plot rows(sel) using 0:(ok(strcol('status')) ? column('tokens_per_s') : 1/0):(0.7):(fcolor_int(strcol('mode'))):xtic(strcol('mode')) with boxes lc rgb variable fs solid 0.9 noborder, \
       '' using 0:(ok(strcol('status')) ? 1/0 : column('tokens_per_s')):(0.7):(fcolor_int(strcol('mode'))) with boxes lc rgb variable fs pattern 4, \
       '' using 0:(int($0) % 2 ? 1/0 : column('tokens_per_s')):(sprintf('%.2fx%s', column('tokens_per_s') / r32, flag(strcol('status')))) with labels offset 0, 1.4, \
       '' using 0:(int($0) % 2 ? column('tokens_per_s') : 1/0):(sprintf('%.2fx%s', column('tokens_per_s') / r32, flag(strcol('status')))) with labels offset 0, 3.0
  set format y '%g'

  eval cell(1, 2)
  set title "peak memory (accounting allocator)"
  set ylabel 'MiB'
  plot rows(sel) using 0:(ok(strcol('status')) ? column('mem_peak_bytes') / MiB : 1/0):(0.7):(fcolor_int(strcol('mode'))):xtic(strcol('mode')) with boxes lc rgb variable fs solid 0.9 noborder, \
       '' using 0:(ok(strcol('status')) ? 1/0 : column('mem_peak_bytes') / MiB):(0.7):(fcolor_int(strcol('mode'))) with boxes lc rgb variable fs pattern 4, \
       '' using 0:(int($0) % 2 ? 1/0 : (column('mem_peak_bytes') / MiB)):(sprintf('%.2fx%s', column('mem_peak_bytes') / m32, flag(strcol('status')))) with labels offset 0, 1.4, \
       '' using 0:(int($0) % 2 ? (column('mem_peak_bytes') / MiB) : 1/0):(sprintf('%.2fx%s', column('mem_peak_bytes') / m32, flag(strcol('status')))) with labels offset 0, 3.0

  if (nthreads > 0) {
    eval cell(2, 2)
    # a linear axis from 0: the bars' heights are the comparison
    set title "the tiny fp32 step: threads and OpenMP wait policy"
    set ylabel 'ms per step (median)'
    plot trows using 0:'step_time_ms_median':xtic(sprintf('%s thr., %s', strcol('threads'), strcol('omp_wait_policy'))) with boxes fs solid 0.9 noborder lc rgb c_fp32, \
         '' using 0:'step_time_ms_median':(sprintf("%.1f ms\nload %.1f", column('step_time_ms_median'), column('load_start'))) with labels offset 0, 1.6
  }
  unset multiplot
}
unset output
