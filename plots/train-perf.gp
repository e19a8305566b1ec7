# plots/train-perf.gp RESULTS_DIR — halflab-train's speed and memory per
# precision mode: the throughput at the median step (after the warm-up),
# labelled with the speed-up over fp32 (fp32's step time / the mode's: above
# 1 faster, the report's one measure of speed), and the accounting
# allocator's peak with its ratio to fp32's; for the gpt2 preset (GPU) when
# present, else the tiny preset. On the CPU a third panel (not on a slide):
# the tiny fp32 step with 1 and 2 threads, OpenMP's passive wait policy
# against libgomp's default, with the machine's load average. Reads
# train_summary.csv; writes the preset's files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/train_summary.csv')
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
desc = system(sprintf("sed -n 's/^# device: //p' '%s' '%s'/train_*_summary.csv 2>/dev/null | head -1 | cut -d, -f1", in, dir))
r32 = ref('tokens_per_s')
m32 = ref('mem_peak_bytes')
np = nthreads > 0 ? 3 : 2
MiB = 1048576.0

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
ok(st) = st eq 'completed'
# the ratio labels sit in two rows above the tallest bar, neighbours in different rows, so that they never
# meet; a run that stopped early is named, not measured: its few timed steps (the first ones included) are
# no measure of the mode
ratio_label(v, ref, st) = ok(st) ? sprintf('%.2fx', v / ref) : st
# the claim: the amp modes' speed-up over fp32 (tokens per second: batches may differ)
speedup_of(m) = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } %s && $c[\"mode\"] == \"%s\" && $c[\"status\"] == \"completed\" { print $c[\"tokens_per_s\"] / %.17g; exit }' '%s'", sel, m, r32, in)))
claim = ''
do for [m in 'amp-bf16 amp-fp16'] {
  if (count(sel.sprintf(' && $c["mode"] == "%s" && $c["status"] == "completed"', m)) > 0) {
    claim = claim.sprintf("%s %s %.2fx", claim eq '' ? '' : ',', m, speedup_of(m))
  }
}
claim_narrow = claim eq '' ? sprintf("speed per precision mode (%s)", group) : sprintf("Speed-up (%s):%s", group, claim)
claim = claim eq '' ? sprintf("speed and memory per precision mode (%s)", group) : sprintf("Speed-up over fp32 (%s):%s", group, claim)
# one panel of bars per mode: VALUE (a using expression), the reference its labels divide by; eval it
bars(value, ref) = sprintf("stats rows(sel) using (%s) name 'B_' nooutput; set yrange [0:B_max * 1.32]; \
  plot rows(sel) using 0:(ok(strcol('status')) ? %s : 1/0):(0.7):(fcolor_int(strcol('mode'))):xtic(strcol('mode')) with boxes lc rgb variable fs solid 0.9 noborder, \
  '' using 0:(ok(strcol('status')) ? 1/0 : %s):(0.7):(fcolor_int(strcol('mode'))) with boxes lc rgb variable lw 2 fs solid 0.25 border lc rgb variable, \
  '' using 0:(B_max * (int($0) %% 2 ? 1.1 : 1.22)):(ratio_label(%s, %.17g, strcol('status'))) with labels", value, value, value, value, ref)

W = 1600
H = np > 2 ? 1300 : 760
narrow_aspect = np * 0.62 + 0.2
footer = desc
do for [out_i=1:out_n] {
  eval out_open(dir, 'train-perf', W, H, out_i)
  set autoscale   # the last output's panels fixed the ranges
  # speed and memory side by side, the threads under them (not on a slide); a column stacks them
  npan = preset eq 'slides' ? 2 : np
  long = preset eq 'screen'
  g_cols = narrow ? 1 : 2
  g_rows = narrow ? npan : (npan > 2 ? 2 : 1)
  g_T = 1 - text_h((long ? 2 : 1) + (narrow ? 2 : 1.6) + 1)
  g_B = text_h(6.0 + (long ? 1 : 0))     # the mode names, slanted
  g_vs = text_h(1 + 7)
  g_L = narrow ? 0.17 : long ? 0.07 : 0.08
  g_R = narrow ? 0.93 : 0.97
  g_hs = long ? 0.08 : 0.09
  set multiplot title title_of(sprintf("halflab-train, %s preset: speed and memory per precision mode (median step after the warm-up)\ncolour: the mode's precision family; pale: a run that did not complete, not measured", group), narrow ? claim_narrow : claim)
  set border 3
  set xtics nomirror rotate by -40 left
  set ytics nomirror
  eval 'set grid ytics '.grid_opts
  set boxwidth 0.7
  set offsets 0.5, 0.5, 0, 0
  unset key
  set xlabel ''

  eval cell(1, 1)
  set title long ? "throughput; labels: speed-up over fp32 (fp32's step time / the mode's)" : 'speed-up over fp32'
  set ylabel narrow ? 'tokens/s' : 'tokens per second'
  set format y '%.0s%c'   # 250k: room for the axis label
  eval bars("column('tokens_per_s')", r32)
  set format y '%g'
  unset label 9999   # the footer, once

  eval narrow ? cell(1, 2) : cell(2, 1)
  set title long ? "peak memory (accounting allocator); labels: the mode's / fp32's" : "peak memory vs fp32"
  set ylabel 'MiB'
  eval bars("column('mem_peak_bytes') / MiB", m32 / MiB)

  if (npan > 2) {
    eval narrow ? cell(1, 3) : cell(1, 2)
    # a linear axis from 0: the bars' heights are the comparison
    set title long ? "the tiny fp32 step: threads and OpenMP wait policy" : "fp32 step: threads, wait policy"
    set ylabel narrow ? 'ms per step' : 'ms per step (median)'
    set yrange [0:*]
    set offsets 0.5, 0.5, graph 0.2, 0
    plot trows using 0:'step_time_ms_median':xtic(sprintf('%s thr., %s', strcol('threads'), strcol('omp_wait_policy'))) with boxes fs solid 0.9 noborder lc rgb c_fp32, \
         '' using 0:'step_time_ms_median':(sprintf("%.1f ms\nload %.1f", column('step_time_ms_median'), column('load_start'))) with labels offset 0, 1.6
  }
  unset multiplot
}
unset output
