# plots/footprint.gp RESULTS_DIR — the memory footprint of GPT-2 124M.
# Left: parameter bytes per weight dtype policy, three ways (analytic, the
# accounting allocator, and the independent reading: process RSS on a CPU,
# cudaMemGetInfo on a GPU). Middle: the training state per mode at the
# run's batch x sequence, stacked (weights, fp32 master weights, gradients,
# optimizer moments, autocast's weight casts, activations saved for
# backward), with the step's estimated peak (black dash, its GiB above the
# bar) and the memory the largest batch was fitted to (red line); each
# mode's largest batch is in its tick label. Right: the same for the
# measured step (a smaller batch), the allocator's measured peak as a
# diamond (its GiB above the bar) next to the analytic dash.
# Reads footprint_params.csv and footprint_training.csv; writes the
# preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
pin = as_written(dir.'/footprint_params.csv')
tin = as_written(dir.'/footprint_training.csv')
if (system(sprintf("test -f '%s' && test -f '%s' && echo 1 || echo 0", pin, tin)) eq "0") {
  print sprintf("footprint.gp: %s or %s not found: no chart (run halflab-bench footprint)", pin, tin)
  exit
}
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

commas(n) = n < 1000 ? sprintf("%d", n) : commas(int(n / 1000)).sprintf(",%03d", int(n) % 1000)
params = commas(real(first(pin, gpt2, 'params')))
# the claim: the step's estimated peak of fp32, the first autocast mode and the smallest, at the run's batch
claims = system(("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } ".main." { m = $c[\"mode\"]; p[m] = $c[\"peak_bytes\"] / 1073741824; o[++n] = m; if (lo == \"\" || p[m] < p[lo]) lo = m; if (amp == \"\" && m ~ /^amp/) amp = m; b = $c[\"batch\"] \" x \" $c[\"seq\"] } END { if (!n) exit; s = (\"fp32\" in p) ? sprintf(\"fp32 %.1f\", p[\"fp32\"]) : \"\"; if (amp != \"\") s = s (s == \"\" ? \"\" : \", \") sprintf(\"%s %.1f\", amp, p[amp]); if (lo != \"fp32\" && lo != amp) s = s (s == \"\" ? \"\" : \", \") sprintf(\"%s %.1f\", lo, p[lo]); printf \"GPT-2 124M training step, batch %s: %s GiB at peak|Peak: %s GiB\", b, s, s }' '".tin."'"))
claim = claims eq '' ? 'Memory footprint of GPT-2 124M' : claims[1:strstrt(claims, '|') - 1]
claim_n = claims eq '' ? claim : claims[strstrt(claims, '|') + 1:]

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

sumparts = "(column('weights_bytes') + column('master_bytes') + column('gradients_bytes') + column('moments_bytes') + column('weight_casts_bytes') + column('activations_bytes'))"
# above the bar: its peak dash or (measured) the diamond, whichever is highest
top = sprintf("(((%s > column('peak_bytes')) ? %s : column('peak_bytes')) / GiB)", sumparts, sumparts)
footer = footer_of(pin)
narrow_aspect = 2.0
do for [out_i=1:out_n] {
  unset label
  unset arrow
  set border 3
  set xtics nomirror
  set ytics nomirror
  set autoscale xy
  eval out_open(dir, 'footprint', 1900, 1000, out_i)
  # one legend for the state panels
  do for [k=1:6] { ls_ = sprintf("with boxes fs solid 1 border lc rgb '#333333' lc rgb '%s'", part_color[k]); lt_ = narrow ? part_name[k][1:strstrt(part_name[k].' (', ' (') - 1] : part_name[k]; eval legend_add }
  ls_ = "with lines lw 4 lc rgb '#000000'"; lt_ = narrow ? 'estimated peak' : 'estimated peak of a step (GiB above)'; eval legend_add
  ls_ = "with lines lw 2.5 lc rgb '#CC0000'"; lt_ = sprintf('memory %.1f GiB', memory / GiB); eval legend_add
  if (nmeas > 0) { ls_ = "with points pt 13 ps 3 lc rgb '#CC0000'"; lt_ = narrow ? "allocator's peak" : "allocator's measured peak"; eval legend_add }
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  g_cols = narrow ? 1 : 3
  g_rows = narrow ? 3 : 1
  g_T = 1 - text_h(preset eq 'screen' ? 6.0 : 4.8)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(narrow ? 4.0 : 5.0)
  # room for the y axis's label and three-digit ticks
  g_L = 7.0 * cur_pt / cur_w
  g_R = 0.99
  g_hs = 7.0 * cur_pt / cur_w
  g_vs = text_h(7.6)
  set multiplot title title_of(sprintf("Memory footprint of GPT-2 124M (%s parameters, tied head); optimizer: %s", params, opt), narrow ? claim_n : claim)
  eval 'set grid ytics '.grid_opts
  set style fill solid 1.0 border lc rgb '#333333'
  set boxwidth 0.8
  unset key

  # ---- parameters per policy: three ways of counting, in greys (colour is kept for the parts)
  eval cell(1, 1)
  set title sprintf(preset eq 'screen' ? "Parameter bytes per weight policy\ndark to light: analytic, allocator, %s" : "Parameter bytes per policy\nanalytic, allocator, %s", ind eq 'rss' ? 'RSS' : 'cudaMemGetInfo')
  set ylabel 'MiB'
  set xlabel ''
  set yrange [0:*]
  set offsets 0, 0, graph 0.12, 0
  set style data histograms
  set style histogram clustered gap 1
  plot rows(pin, gpt2) using (column('analytic_bytes') / MiB):xtic(strcol('policy')) lc rgb '#4D4D4D' notitle, \
       '' using (column('allocator_bytes') / MiB) lc rgb '#999999' notitle, \
       '' using (column('independent_bytes') / MiB) lc rgb '#DDDDDD' notitle, \
       '' using ($0):(column('analytic_bytes') / MiB):(sprintf('%.0f', column('analytic_bytes') / MiB)) \
          with labels offset 0, 0.9 notitle
  unset label 9999

  # ---- training state per mode (analytic), and the measured step
  set style histogram rowstacked
  set ylabel 'GiB'
  set xtics rotate by 30 right
  do for [panel=1:2] {
    eval cell(narrow ? 1 : panel + 1, narrow ? panel + 1 : 1)
    cond = panel == 1 ? main : meas
    if (panel == 1) {
      set title preset ne 'screen' ? sprintf("Training state, batch %s x %s\nabove: peak GiB; (n): largest batch", batch, seq) : \
                sprintf("Training state per mode, batch %s x %s\nabove: the step's peak (GiB); (n): largest batch in %.1f GiB", batch, seq, memory / GiB)
    } else {
      set title sprintf(preset eq 'screen' ? "The measured step, batch %s x %s\nabove: the allocator's peak (GiB)" : "Measured step, batch %s x %s\nabove: allocator's peak (GiB)", mbatch, mseq)
    }
    if (panel == 2 && nmeas == 0) {
      set title "The measured step"
      set label 1 "no measured step in this run\n(a GPU without the core's\ntensor kernels, or\n--measure-batch 0)" at graph 0.5, graph 0.5 center
      unset xtics
      unset ytics
      unset border
      set ylabel ''
      set xrange [0:1]
      set yrange [0:1]
      plot 1/0 notitle
      unset label 1
      set xtics
      set ytics
      set border 3
      set autoscale x
    } else {
      # the tick: the mode, and in the estimate's panel its largest batch
      tick = panel == 1 ? "xtic(strcol('mode').' ('.strcol('max_batch').')')" : "xtic(strcol('mode'))"
      cmd = ''
      do for [k=1:6] {
        cmd = cmd.sprintf("%s rows(tin, '%s') using (column('%s') / GiB)%s lc rgb '%s' notitle", \
                          k == 1 ? '' : ',', cond, part[k], k == 1 ? ':'.tick : '', part_color[k])
      }
      cmd = cmd.sprintf(", rows(tin, '%s') using ($0 - 0.45):(column('peak_bytes') / GiB):(0.9):(0) with vectors nohead lw 4 lc rgb '#000000' notitle", cond)
      if (panel == 1) {
        cmd = cmd.", rows(tin, '".cond."') using 0:".top.":(sprintf('%.1f', column('peak_bytes') / GiB)) with labels offset 0, 0.9 notitle"
        cmd = cmd.sprintf(", %g with lines lw 2.5 lc rgb '#CC0000' notitle", memory / GiB)
      } else {
        cmd = cmd.sprintf(", rows(tin, '%s') using 0:(column('alloc_peak_bytes') / GiB) with points pt 13 ps 3 lc rgb '#CC0000' notitle", cond)
        cmd = cmd.", rows(tin, '".cond."') using 0:(column('alloc_peak_bytes') > column('peak_bytes') && column('alloc_peak_bytes') > ".sumparts." ? column('alloc_peak_bytes') / GiB : ".top."):(sprintf('%.2f', column('alloc_peak_bytes') / GiB)) with labels offset 0, 1.2 notitle"
      }
      set yrange [0:*]
      set offsets 0, 0, graph 0.12, 0
      eval('plot '.cmd)
    }
  }
  unset xtics
  unset title
  set xtics norotate
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
  set style data points
  set xtics norotate
}
unset output
