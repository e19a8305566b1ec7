# plots/compare-bandwidth.gp RESULTS_ROOT — memory bandwidth across
# machines: triad GB/s against the array size for every
# RESULTS_ROOT/<machine>/bandwidth.csv, linear axis from 0. Colour is the
# machine (style.gp's second set: no precision hue), named by
# plots/cpu_name.sh; the dash is the type by the line convention: solid
# fp32, dashed bf16, dotted fp16 (bytes per second: where the memory is the
# limit the lines of one machine lie together). A dotted vertical line marks
# where the three arrays fill each recorded last-level cache. Writes the
# preset's two files in RESULTS_ROOT.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
root = ARG1
machines = system(sprintf("for d in '%s'/*/; do [ -f \"$d/bandwidth.csv\" ] && basename \"$d\"; done | tr '\\n' ' '", root))
nm = words(machines)
if (nm < 2) {
  print sprintf("compare-bandwidth.gp: fewer than two machines with bandwidth.csv under %s: no chart", root)
  exit
}
csv(i) = as_written(root.'/'.word(machines, i).'/bandwidth.csv')
rows(file, cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, file)
# machine colours: the second set, darkest and most distinct first
array cat_order[8] = [4, 7, 1, 6, 2, 3, 5, 8]
mcolor(i) = cat_color(cat_order[(i - 1) % 8 + 1])
array name[nm]
array label[nm]
array llc[nm]
do for [i=1:nm] {
  name[i] = system(sprintf("'%s/cpu_name.sh' --folder '%s/%s' bandwidth.csv", here, root, word(machines, i)))
  threads = system(sprintf("sed -n 's/^# device: .* \\([0-9][0-9]*\\) OpenMP threads.*/\\1/p' '%s' | head -1", csv(i)))
  label[i] = name[i].(threads eq '' ? '' : sprintf(", %s thread%s", threads, threads eq '1' ? '' : 's'))
  llc[i] = cache_bytes(csv(i))
}
# two machines of one name: the folder tells them apart
do for [i=1:nm] { do for [j=1:nm] { if (i != j && name[i] eq name[j]) { label[i] = label[i].' ('.word(machines, i).')' } } }
array vid[3] = ['fp32', 'bf16', 'fp16']
array vdash[3] = [1, 2, 3]
array vpt[3] = [7, 5, 9]
size_text(b) = b >= 1048576 ? sprintf("%g MiB", b / 1048576.0) : sprintf("%g KiB", b / 1024.0)
# the claim: each machine's fp32 triad, the median over the sizes where the
# three arrays take at least 4x its cache (its largest size where none was recorded)
array past[nm]
do for [i=1:nm] {
  past[i] = real(system(("awk -F, -v llc=".sprintf("%.0f", llc[i])." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"kernel\"] == \"triad\" && $c[\"dtype\"] == \"fp32\" { b = $c[\"array_bytes\"] + 0; g[b] = $c[\"gb_per_s\"] + 0; if (b > top) top = b } END { from = llc > 0 ? 4 * llc / 3 : top; for (b in g) if (b + 0 >= from) { r = g[b]; for (j = n; j >= 1 && w[j] > r; j--) w[j + 1] = w[j]; w[j + 1] = r; n++ } if (!n) { print 0; exit } print n % 2 ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2 }' '".csv(i)."'")))
}
hi_i = 1
lo_i = 1
do for [i=1:nm] { hi_i = past[i] > past[hi_i] ? i : hi_i; lo_i = past[i] < past[lo_i] ? i : lo_i }
bare(s) = strstrt(s, 'AMD ') == 1 ? s[5:] : strstrt(s, 'Intel ') == 1 ? s[7:] : s
if (nm == 2) {
  claim = sprintf("fp32 triad past the cache: %s %.0f GB/s, %s %.0f GB/s (median)", name[hi_i], past[hi_i], name[lo_i], past[lo_i])
  claim_n = sprintf("fp32 triad past the cache: %s %.0f, %s %.0f GB/s", bare(name[hi_i]), past[hi_i], bare(name[lo_i]), past[lo_i])
} else {
  claim = sprintf("fp32 triad past the cache: %s fastest (%.0f GB/s), %s slowest (%.0f)", name[hi_i], past[hi_i], name[lo_i], past[lo_i])
  claim_n = sprintf("fp32 triad past the cache: %.0f to %.0f GB/s", past[lo_i], past[hi_i])
}
ymax = 0
do for [i=1:nm] { m = real(system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"kernel\"] == \"triad\" && $c[\"gb_per_s\"] + 0 > m { m = $c[\"gb_per_s\"] + 0 } END { print m + 0 }' '%s'", csv(i)))); ymax = m > ymax ? m : ymax }
footer = ''
do for [i=1:nm] {
  run = system("awk '/^# halflab / && v == \"\" { v = substr($0, 3) } /^# date: / && t == \"\" { t = substr($0, 9, 10) } !/^#/ { exit } END { printf \"%s, %s\", v, t }' '".csv(i)."'")
  footer = footer.(i == 1 ? '' : '; ').name[i].': '.run
}

set datafile separator ','
set datafile columnheaders
mib(b) = b / 1048576.0
narrow_aspect = 0.95
do for [out_i=1:out_n] {
  unset label
  unset arrow
  set border 3
  set xtics nomirror autofreq
  set ytics nomirror autofreq
  set autoscale xy
  eval out_open(root, 'compare-bandwidth', 1280, 800, out_i)
  do for [i=1:nm] { ls_ = sprintf("with lines lw 4 lc rgb '%s'", mcolor(i)); lt_ = narrow ? name[i] : label[i]; eval legend_add }
  do for [k=1:3] { ls_ = sprintf("with linespoints lw 2.5 dt %d pt %d lc rgb c_note", vdash[k], vpt[k]); lt_ = vid[k]; eval legend_add }
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  g_T = 1 - text_h(preset eq 'screen' ? 2.2 : 1.8)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(3.0)
  set multiplot title title_of("Triad bandwidth across machines (BabelStream bytes, median GB/s)", narrow ? claim_n : claim)
  set tmargin at screen g_T
  set bmargin at screen g_B
  set xlabel narrow ? 'MiB per array' : 'array size (MiB, each of the three arrays)'
  set ylabel narrow ? 'GB/s' : 'GB/s (10^9 bytes/s)'
  set logscale x 2
  set xtics narrow ? 16 : 4
  set yrange [0:ymax * 1.1]
  eval 'set grid xtics ytics '.grid_opts
  unset key
  # each distinct cache size once, labelled with the machines that have it where they differ
  nl = 0
  do for [i=1:nm] {
    seen = 0
    do for [j=1:i-1] { if (llc[j] == llc[i]) { seen = 1 } }
    if (llc[i] > 0 && !seen) {
      nl = nl + 1
      who = ''
      do for [j=1:nm] { if (llc[j] == llc[i]) { who = who.(who eq '' ? '' : ', ').bare(name[j]) } }
      same = 1
      do for [j=1:nm] { if (llc[j] != llc[i]) { same = 0 } }
      set arrow nl from first mib(llc[i]) / 3, graph 0 to first mib(llc[i]) / 3, graph 1 nohead dt 3 lw 2 lc rgb c_note back
      ltext = (narrow ? sprintf("%s cache", size_text(llc[i])) : sprintf("3 arrays = %s cache", size_text(llc[i]))).(same ? '' : ' ('.who.')')
      set label nl ltext at first mib(llc[i]) / 3, graph 0.97 - 0.05 * (nl - 1) offset 0.4, 0 left tc rgb c_note
    }
  }
  cmd = ''
  do for [i=1:nm] {
    do for [k=1:3] {
      cmd = cmd.sprintf("%s rows('%s', '$c[\"kernel\"] == \"triad\" && $c[\"dtype\"] == \"%s\"') using (mib(column('array_bytes'))):(column('gb_per_s')) with linespoints lw 2.5 dt %d pt %d lc rgb '%s' notitle", \
                        cmd eq '' ? '' : ',', csv(i), vid[k], vdash[k], vpt[k], mcolor(i))
    }
  }
  eval('plot '.cmd)
  unset label 9999
  unset label
  unset arrow
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
