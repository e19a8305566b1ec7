# plots/bandwidth-host.gp RESULTS_DIR — host<->device copies on a GPU
# machine: GB/s against size, host to device and back, from pageable
# (malloc) and from page-locked (cudaMallocHost) host memory; colour is the
# direction (not a precision: style.gp's second set), solid page-locked and
# dashed pageable. Reads bandwidth_host.csv (GPU runs only); writes the
# preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/bandwidth_host.csv')
if (!file_exists(in)) {
  print sprintf("bandwidth-host.gp: %s not found: no chart (written by halflab-bench bandwidth on a GPU)", in)
  exit
}
# the claim: pinned against pageable at the largest size, host to device
claims = system("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"direction\"] == \"h2d\" { b = $c[\"bytes\"] + 0; if (b > top) top = b; g[b, $c[\"memory\"]] = $c[\"gb_per_s\"] } END { if (!((top, \"pinned\") in g) || !((top, \"pageable\") in g) || g[top, \"pageable\"] <= 0) exit; printf \"Host to device at %g MiB: page-locked %.1f GB/s, %.1fx pageable (%.1f)|H2D, %g MiB: pinned %.1fx pageable\", top / 1048576, g[top, \"pinned\"], g[top, \"pinned\"] / g[top, \"pageable\"], g[top, \"pageable\"], top / 1048576, g[top, \"pinned\"] / g[top, \"pageable\"] }' '".in."'")
claim = claims eq '' ? 'Host <-> device copies' : claims[1:strstrt(claims, '|') - 1]
claim_n = claims eq '' ? claim : claims[strstrt(claims, '|') + 1:]

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
mib(b) = b / 1048576.0
# the header and the rows where an awk condition holds (columns by name: $c["variant"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
is(d, m) = rows(sprintf('$c["direction"] == "%s" && $c["memory"] == "%s"', d, m))
array dir_of[4] = ['h2d', 'h2d', 'd2h', 'd2h']
array mem_of[4] = ['pinned', 'pageable', 'pinned', 'pageable']
array what[4] = ['host to device, page-locked', 'host to device, pageable', 'device to host, page-locked', 'device to host, pageable']
array what_n[4] = ['H2D pinned', 'H2D pageable', 'D2H pinned', 'D2H pageable']
spec(i) = sprintf("with linespoints pt %d dt %d lw 2.5 lc rgb '%s'", i % 2 ? 7 : 6, i % 2 ? 1 : 2, cat_color(i <= 2 ? 1 : 6))

footer = footer_of(in)
narrow_aspect = 0.9
do for [out_i=1:out_n] {
  unset label
  unset arrow
  set border 3
  set xtics nomirror autofreq
  set ytics nomirror autofreq
  set autoscale xy
  eval out_open(dir, 'bandwidth-host', 1280, 800, out_i)
  do for [i=1:4] { ls_ = spec(i); lt_ = narrow ? what_n[i] : what[i]; eval legend_add }
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  g_T = 1 - text_h(preset eq 'screen' ? 2.2 : 1.8)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(3.0)
  set multiplot title title_of("Host <-> device copies: pageable against page-locked host memory", narrow ? claim_n : claim)
  set tmargin at screen g_T
  set bmargin at screen g_B
  set xlabel 'copy size (MiB)'
  set ylabel narrow ? 'GB/s, one direction' : 'GB/s (10^9 bytes/s, one direction)'
  set logscale x 2
  eval 'set grid xtics ytics '.grid_opts
  set yrange [0:*]
  unset key
  cmd = ''
  do for [i=1:4] { cmd = cmd.sprintf("%s is('%s', '%s') using (mib(column('bytes'))):(column('gb_per_s')) %s notitle", cmd eq '' ? '' : ',', dir_of[i], mem_of[i], spec(i)) }
  eval('plot '.cmd)
  unset label 9999
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
