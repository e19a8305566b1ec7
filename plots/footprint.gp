# plots/footprint.gp RESULTS_DIR — the memory footprint of GPT-2 124M.
# Left: parameter bytes per weight dtype policy, three ways (analytic, the
# accounting allocator, and the independent reading: process RSS on a CPU,
# cudaMemGetInfo on a GPU). Middle: the training state per mode at the
# run's batch x sequence, stacked (weights, fp32 master weights, gradients,
# optimizer moments, autocast's weight casts, activations saved for
# backward), with the step's estimated peak (black dash), the memory the
# largest batch was fitted to (red line) and that batch above each bar.
# Right: the same for the measured step (a smaller batch), the allocator's
# measured peak as a diamond next to the analytic dash.
# Reads footprint_params.csv and footprint_training.csv; writes
# footprint.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
pin = dir.'/footprint_params.csv'
tin = dir.'/footprint_training.csv'
if (system(sprintf("test -f '%s' && test -f '%s' && echo 1 || echo 0", pin, tin)) eq "0") {
  print sprintf("footprint.gp: %s or %s not found: no chart (run halflab-bench footprint)", pin, tin)
  exit
}
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", pin))
opt = system(sprintf("sed -n 's/^# optimizer: //p' '%s' | head -1", tin))
# the header and the rows where an awk condition holds (columns by name: $c["mode"])
rows(file, cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, file)
# one value of the first row where cond holds
first(file, cond, name) = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } %s { print $c[\"%s\"]; exit }' '%s'", cond, name, file))
count(file, cond) = int(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } %s { n++ } END { print n + 0 }' '%s'", cond, file)))

gpt2 = '$c["model"] == "gpt2-124m"'
main = gpt2.' && $c["measured"] == 0'
meas = gpt2.' && $c["measured"] == 1'
nmeas = count(tin, meas)
ind = first(pin, gpt2, 'independent_method')
ind_name = ind eq 'rss' ? 'process RSS delta' : 'cudaMemGetInfo delta'
batch = first(tin, main, 'batch')
seq = first(tin, main, 'seq')
memory = real(first(tin, main, 'memory_bytes'))
mbatch = nmeas > 0 ? first(tin, meas, 'batch') : ''
mseq = nmeas > 0 ? first(tin, meas, 'seq') : ''

MiB = 1048576.0
GiB = 1073741824.0
array part[6] = ['weights_bytes', 'master_bytes', 'gradients_bytes', 'moments_bytes', 'weight_casts_bytes', 'activations_bytes']
array part_name[6] = ['weights', 'fp32 master weights', 'gradients', 'optimizer moments', 'weight casts (autocast)', 'activations']
# parts of memory are not precisions: the second set of colours (style.gp)
array part_color[6] = ['#56B4E9', '#332288', '#E69F00', '#44AA99', '#882255', '#DDCC77']

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

W = 1900
H = 900
g_cols = 3
g_L = 0.06
g_R = 0.99
g_B = 0.26
g_T = 0.78
g_hs = 0.06
sumparts = "(column('weights_bytes') + column('master_bytes') + column('gradients_bytes') + column('moments_bytes') + column('weight_casts_bytes') + column('activations_bytes'))"
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/footprint.png' } else { eval svg(W, H); set output dir.'/footprint.svg' }
  set multiplot title sprintf("Memory footprint of GPT-2 124M (124,439,808 parameters, tied head); optimizer: %s\n%s", opt, desc)
  set border 3
  set xtics nomirror
  set ytics nomirror
  set grid ytics back lc rgb '#dddddd'
  set style fill solid 1.0 border lc rgb '#333333'
  set boxwidth 0.8
  unset key

  # ---- parameters per policy: three ways of counting, in greys (colour is kept for the parts)
  eval cell(1, 1)
  set title "Parameter bytes per weight policy\ndark to light: analytic, allocator, ".(ind eq 'rss' ? 'RSS' : 'cudaMemGetInfo')
  set ylabel 'MiB'
  set yrange [0:*]
  set offsets 0, 0, graph 0.1, 0
  set style data histograms
  set style histogram clustered gap 1
  plot rows(pin, gpt2) using (column('analytic_bytes') / MiB):xtic(strcol('policy')) lc rgb '#4D4D4D' notitle, \
       '' using (column('allocator_bytes') / MiB) lc rgb '#999999' notitle, \
       '' using (column('independent_bytes') / MiB) lc rgb '#DDDDDD' notitle, \
       '' using ($0):(column('analytic_bytes') / MiB):(sprintf('%.1f', column('analytic_bytes') / MiB)) \
          with labels offset 0, 0.9 notitle

  # ---- training state per mode (analytic), and the measured step
  set style histogram rowstacked
  set ylabel 'GiB'
  set xtics rotate by -30
  do for [panel=1:2] {
    eval cell(panel + 1, 1)
    cond = panel == 1 ? main : meas
    if (panel == 1) {
      set title sprintf("Training state per mode, batch %s x %s\nabove: the largest batch within %.1f GiB (red)", \
                        batch, seq, memory / GiB)
    } else {
      set title sprintf("The measured step, batch %s x %s\nabove: the allocator's peak (GiB)", mbatch, mseq)
    }
    if (panel == 2 && nmeas == 0) {
      set title "The measured step"
      set label 1 "no measured step in this run\n(a GPU without the core's tensor kernels, or --measure-batch 0)" at graph 0.5, graph 0.5 center
      unset xtics
      plot 1/0 notitle
      unset label 1
      set xtics
    } else {
      cmd = ''
      do for [k=1:6] {
        cmd = cmd.sprintf("%s rows(tin, '%s') using (column('%s') / GiB)%s lc rgb '%s' notitle", \
                          k == 1 ? '' : ',', cond, part[k], k == 1 ? ":xtic(strcol('mode'))" : '', part_color[k])
      }
      cmd = cmd.sprintf(", rows(tin, '%s') using ($0 - 0.45):(column('peak_bytes') / GiB):(0.9):(0) with vectors nohead lw 4 lc rgb '#000000' notitle", cond)
      # labels above the bar, its peak dash and (measured) the diamond, whichever is highest
      top = sprintf("(((%s > column('peak_bytes')) ? %s : column('peak_bytes')) / GiB)", sumparts, sumparts)
      if (panel == 1) {
        cmd = cmd.sprintf(", rows(tin, '%s') using 0:%s:(sprintf('%%d', column('max_batch'))) with labels offset 0, 1 notitle", cond, top)
        cmd = cmd.sprintf(", %g with lines lw 2.5 lc rgb '#CC0000' notitle", memory / GiB)
      } else {
        cmd = cmd.sprintf(", rows(tin, '%s') using 0:(column('alloc_peak_bytes') / GiB) with points pt 13 ps 3 lc rgb '#CC0000' notitle", cond)
        cmd = cmd.sprintf(", rows(tin, '%s') using 0:(column('alloc_peak_bytes') > column('peak_bytes') && column('alloc_peak_bytes') > %s ? column('alloc_peak_bytes') / GiB : %s):(sprintf('%%.2f', column('alloc_peak_bytes') / GiB)) with labels offset 0, 1.2 notitle", cond, sumparts, top)
      }
      set yrange [0:*]
      set offsets 0, 0, graph 0.12, 0
      eval('plot '.cmd)
    }
  }
  unset xtics
  # one legend for the state panels
  do for [k=1:6] { ls_ = sprintf("with boxes fs solid 1 border lc rgb '#333333' lc rgb '%s'", part_color[k]); lt_ = part_name[k]; eval legend_add }
  ls_ = "with lines lw 4 lc rgb '#000000'"; lt_ = 'estimated peak of a step'; eval legend_add
  ls_ = "with lines lw 2.5 lc rgb '#CC0000'"; lt_ = sprintf('memory %.1f GiB', memory / GiB); eval legend_add
  if (nmeas > 0) { ls_ = "with points pt 13 ps 3 lc rgb '#CC0000'"; lt_ = "allocator's measured peak"; eval legend_add }
  eval legend_strip(0.09)
  unset multiplot
  unset label
  unset arrow
}
unset output
