# plots/bandwidth-gelems.gp RESULTS_DIR — the point of half precision for
# memory-bound work, measured: triad's elements per second by type, with
# twice fp32's rate drawn as a grey dashed reference (what half the bytes
# per element would give at fp32's bytes per second) and the array size at
# which the three arrays fill the recorded last-level cache marked. Whether
# a type reaches the reference is the data's to say (in cache, converting
# the halves can cost more than the bytes saved). Reads bandwidth.csv;
# writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/bandwidth.csv')
if (!file_exists(in)) {
  print sprintf("bandwidth-gelems.gp: %s not found: no chart (run halflab-bench bandwidth)", in)
  exit
}
if (system(sprintf("grep -q ',triad,' '%s' && echo 1 || echo 0", in)) eq "0") {
  print "bandwidth-gelems.gp: no triad rows in ".in.": no chart"
  exit
}
# the last-level cache the run recorded (bytes; 0: not recorded, no mark)
llc = cache_bytes(in)
size_text(b) = b >= 1048576 ? sprintf("%g MiB", b / 1048576.0) : sprintf("%g KiB", b / 1024.0)
# the claim: each half type's elements per second over fp32's, the median over
# the sizes where the three arrays take at least 4x the cache (the largest size
# where no cache size was recorded)
claims = system(("awk -F, -v llc=".sprintf("%.0f", llc)." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"kernel\"] == \"triad\" { b = $c[\"array_bytes\"] + 0; g[b, $c[\"dtype\"]] = $c[\"gelem_per_s\"]; if (b > top) top = b; if (!(b in seen)) { seen[b] = 1; sz[++ns] = b } } END { from = llc > 0 ? 4 * llc / 3 : top; for (t = 1; t <= 2; t++) { x = t == 1 ? \"fp16\" : \"bf16\"; n = 0; lo = 0; for (i = 1; i <= ns; i++) { b = sz[i]; if (b < from || !((b, x) in g) || !((b, \"fp32\") in g) || g[b, \"fp32\"] <= 0) continue; r = g[b, x] / g[b, \"fp32\"]; for (j = n; j >= 1 && w[j] > r; j--) w[j + 1] = w[j]; w[j + 1] = r; n++; if (!lo || b < lo) lo = b } if (!n) continue; m = n % 2 ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2; s = s sprintf(\"%s%s %.2fx\", s == \"\" ? \"\" : \", \", x, m); if (!from_mib || lo < from_mib * 1048576) from_mib = lo / 1048576 } if (s == \"\") exit; printf \"%s MiB per array: %s fp32\\047s elements per second%s|From %s MiB: %s fp32\\047s elem/s\", (from == top ? \"At \" : \"From \") sprintf(\"%d\", from_mib), s, from == top ? \"\" : \" (median)\", sprintf(\"%d\", from_mib), s }' '".in."'"))
claim = claims eq '' ? 'Triad: elements per second by type' : claims[1:strstrt(claims, '|') - 1]
claim_n = claims eq '' ? claim : claims[strstrt(claims, '|') + 1:]

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
mib(b) = b / 1048576.0
# the header and the rows where an awk condition holds (columns by name: $c["variant"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
tri(t) = rows(sprintf('$c["kernel"] == "triad" && $c["dtype"] == "%s"', t))
array dt[3] = ["fp32", "fp16", "bf16"]
array dt_pt[3] = [7, 5, 9]

footer = footer_of(in)
narrow_aspect = 0.9
do for [out_i=1:out_n] {
  unset label
  unset arrow
  set border 3
  set xtics nomirror autofreq
  set ytics nomirror autofreq
  set autoscale xy
  eval out_open(dir, 'bandwidth-gelems', 1280, 800, out_i)
  do for [t=1:3] { ls_ = sprintf("with linespoints pt %d lw 2.5 dt %d lc rgb '%s'", dt_pt[t], variant_dash(dt[t]), fcolor(dt[t])); lt_ = dt[t]; eval legend_add }
  ls_ = "with lines ls 100"; lt_ = narrow ? "2 x fp32" : "2 x fp32 (half the bytes at fp32's bytes/s)"; eval legend_add
  if (llc > 0) { ls_ = "with lines dt 3 lw 2 lc rgb c_note"; lt_ = narrow ? sprintf("%s cache full", size_text(llc)) : sprintf("the three arrays fill the %s cache", size_text(llc)); eval legend_add }
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  g_T = 1 - text_h(preset eq 'screen' ? 3.0 : 1.8)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(3.0)
  set multiplot title title_of("Triad a = b + s c: elements per second by type\ngrey dashes: twice fp32's rate, where half the bytes per element would put a type at fp32's bytes per second", \
                               narrow ? claim_n : claim)
  set tmargin at screen g_T
  set bmargin at screen g_B
  set xlabel narrow ? 'MiB per array' : 'array size (MiB, each of the three arrays)'
  set ylabel narrow ? 'Gelem/s' : 'Gelem/s (elements moved per second / 10^9)'
  set logscale x 2
  set xtics narrow ? 16 : 4
  eval 'set grid xtics ytics '.grid_opts
  set yrange [0:*]
  unset key
  if (llc > 0) {
    set arrow 2 from first mib(llc) / 3, graph 0 to first mib(llc) / 3, graph 1 nohead dt 3 lw 2 lc rgb c_note back
    set label 2 narrow ? 'cache' : sprintf("3 arrays = %s", size_text(llc)) at first mib(llc) / 3, graph 0.95 offset 0.4, 0 left tc rgb c_note
  }
  cmd = ''
  do for [t=1:3] {
    cmd = cmd.sprintf("%s tri('%s') using (mib(column('array_bytes'))):(column('gelem_per_s')) with linespoints pt %d lw 2.5 dt %d lc rgb '%s' notitle", \
                      cmd eq '' ? '' : ',', dt[t], dt_pt[t], variant_dash(dt[t]), fcolor(dt[t]))
  }
  eval('plot '.cmd.", tri('fp32') using (mib(column('array_bytes'))):(2 * column('gelem_per_s')) with lines ls 100 notitle")
  unset label 9999
  unset arrow
  unset label
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
