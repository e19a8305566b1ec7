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
main = gpt2.' && $c["measured"] == "no"'
meas = gpt2.' && $c["measured"] == "yes"'
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
array part_color[6] = ['#0072B2', '#56B4E9', '#E69F00', '#009E73', '#CC79A7', '#D55E00']

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

do for [out=1:2] {
  if (out == 1) {
    set terminal pngcairo size 1800,760 enhanced font 'Sans,11'
    set output dir.'/footprint.png'
  } else {
    set terminal svg size 1800,760 enhanced font 'Sans,11' background rgb 'white'
    set output dir.'/footprint.svg'
  }
  set multiplot layout 1,3 title sprintf("Memory footprint of GPT-2 124M (124,439,808 parameters, tied head)\n{/*0.85 %s}", desc) \
      margins 0.05, 0.99, 0.24, 0.86 spacing 0.06, 0.1
  set border 3
  set xtics nomirror
  set ytics nomirror
  set grid ytics back lc rgb '#dddddd'
  set style fill solid 0.85 border lc rgb '#333333'
  set boxwidth 0.8

  # ---- parameters per policy
  set title "Parameter bytes per weight policy"
  set ylabel 'MiB'
  set yrange [0:*]
  set style data histograms
  set style histogram clustered gap 1
  set key top right
  plot rows(pin, gpt2) using (column('analytic_bytes') / MiB):xtic(strcol('policy')) lc rgb '#0072B2' title 'analytic', \
       '' using (column('allocator_bytes') / MiB) lc rgb '#56B4E9' title 'accounting allocator', \
       '' using (column('independent_bytes') / MiB) lc rgb '#E69F00' title ind_name, \
       '' using ($0 - 0.27):(column('analytic_bytes') / MiB):(sprintf('%.1f', column('analytic_bytes') / MiB)) \
          with labels offset 0, 0.7 font ',10' notitle

  # ---- training state per mode (analytic), and the measured step
  set style histogram rowstacked
  set ylabel 'GiB'
  set xtics rotate by -30
  do for [panel=1:2] {
    cond = panel == 1 ? main : meas
    if (panel == 1) {
      set title sprintf("Training state per mode, batch %s x %s tokens, %s\n{/*0.85 dash: estimated step peak; red: %.1f GiB of memory; above: the largest batch that fits}", \
                        batch, seq, opt, memory / GiB)
      # one legend for both state panels, under them
      set key at screen 0.68, screen 0.07 center horizontal maxrows 2 reverse Left width 1 font ',10' samplen 2
    } else {
      set title sprintf("The measured step, batch %s x %s tokens (allocator)\n{/*0.85 bars and dash: analytic; diamond: the allocator's measured peak}", mbatch, mseq)
      unset key
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
        cmd = cmd.sprintf("%s rows(tin, '%s') using (column('%s') / GiB)%s lc rgb '%s' title '%s'", \
                          k == 1 ? '' : ',', cond, part[k], k == 1 ? ":xtic(strcol('mode'))" : '', part_color[k], part_name[k])
      }
      cmd = cmd.sprintf(", rows(tin, '%s') using ($0 - 0.45):(column('peak_bytes') / GiB):(0.9):(0) with vectors nohead lw 3 lc rgb '#000000' title 'estimated peak'", cond)
      if (panel == 1) {
        cmd = cmd.sprintf(", rows(tin, '%s') using 0:(column('peak_bytes') / GiB):(sprintf('batch %%d', column('max_batch'))) with labels offset 0, 0.8 font ',10' notitle", cond)
        cmd = cmd.sprintf(", %g with lines lw 2 lc rgb '#CC0000' title sprintf('memory %%.1f GiB', %g)", memory / GiB, memory / GiB)
      } else {
        cmd = cmd.sprintf(", rows(tin, '%s') using 0:(column('alloc_peak_bytes') / GiB) with points pt 13 ps 2 lc rgb '#CC0000' title 'allocator peak (measured)'", cond)
        cmd = cmd.sprintf(", rows(tin, '%s') using 0:(column('alloc_peak_bytes') / GiB):(sprintf('%%.2f', column('alloc_peak_bytes') / GiB)) with labels offset 0, 1.2 font ',10' tc rgb '#CC0000' notitle", cond)
      }
      set yrange [0:*]
      eval('plot '.cmd)
    }
  }
  unset multiplot
  unset label
  unset arrow
}
unset output
