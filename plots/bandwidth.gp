# plots/bandwidth.gp RESULTS_DIR — memory bandwidth of BabelStream's kernels
# against the array size: one panel per kernel (copy, scale, add, triad,
# dot), one line per element type in its family's colour, and in every
# panel the copy reference the report's tables use (ref_gb_per_s of the same
# rows: on a CPU the faster of memcpy and memcpy-omp at that size, on a GPU
# cudaMemcpy D2D, both from the same run). The sixth panel shows the
# references themselves (and the datasheet figure where known). A dotted
# vertical line in each panel marks the array size at which the kernel's
# arrays together fill the last-level cache the run recorded (llc_bytes on a
# CPU, l2_bytes on a GPU; none where the CSV has neither). Reads
# bandwidth.csv; writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/bandwidth.csv')
if (!file_exists(in)) {
  print sprintf("bandwidth.gp: %s not found: no chart (run halflab-bench bandwidth)", in)
  exit
}
col(name) = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) if ($i == \"%s\") print i; exit }' '%s'", name, in))
maxof(name) = real(system(sprintf("awk -F, -v c=%s '/^#/ || !h++ { next } $c + 0 > m { m = $c + 0 } END { print m + 0 }' '%s'", col(name), in)))
sheet = maxof("datasheet_gb_per_s")
gb_per_s_max = (maxof("gb_per_s") > sheet ? maxof("gb_per_s") : sheet) * 1.08
refs = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"dtype\"] == \"bytes\" { print $c[\"kernel\"] }' '%s' | awk '!s[$0]++' | tr '\\n' ' '", in))
dtypes = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"dtype\"] != \"bytes\" { print $c[\"dtype\"] }' '%s' | sort -u | tr '\\n' ' '", in))
# the reference the tables name (ref_kernel of the kernels' rows); "memcpy-omp" can name a per-size choice
refname = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"ref_kernel\"] != \"\" { print $c[\"ref_kernel\"]; exit }' '%s'", in))
reflabel = refname eq '' ? "copy reference" : sprintf("copy reference (%s)", refname)

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array dt[3] = ["fp32", "fp16", "bf16"]
array dt_pt[3] = [7, 5, 9]
array kern[5] = ["copy", "scale", "add", "triad", "dot"]
array kern_what[5] = ["copy: a = b", "scale: a = s b", "add: a = b + c", "triad: a = b + s c", "dot: sum a b"]
has(v) = strstrt(' '.dtypes, ' '.v.' ') > 0
hasref(v) = strstrt(' '.refs, ' '.v.' ') > 0
# the header and the rows where an awk condition holds (columns by name: $c["kernel"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
mib(b) = b / 1048576.0
first_dtype = has('fp32') ? 'fp32' : word(dtypes, 1)

# the last-level cache the run recorded (bytes; 0: not recorded, no mark)
llc = cache_bytes(in)
llc_name = system(sprintf("grep -q '^# llc_bytes: ' '%s' && echo 'last-level cache' || echo 'L2 cache'", in))
# the arrays each kernel touches (the CSV's arrays column)
arrays_of(k) = int(system("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"kernel\"] == \"".k."\" { n = $c[\"arrays\"]; exit } END { print n + 0 }' '".in."'"))
size_text(b) = b >= 1048576 ? sprintf("%g MiB", b / 1048576.0) : sprintf("%g KiB", b / 1024.0)
# the claim: triad per type at the largest size
claims = system(("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"kernel\"] == \"triad\" { b = $c[\"array_bytes\"] + 0; if (b > top) { top = b; s = \"\" } if (b == top) s = s sprintf(\"%s%s %.0f\", s == \"\" ? \"\" : \", \", $c[\"dtype\"], $c[\"gb_per_s\"]) } END { if (s != \"\") printf \"Triad at %d MiB per array%s: %s GB/s|Triad, %d MiB: %s GB/s\", top / 1048576, (llc > 0 && 3 * top > 2 * llc) ? sprintf(\" (past the %d MiB cache)\", llc / 1048576) : \"\", s, top / 1048576, s }' llc=".sprintf("%.0f", llc)." '".in."'"))
claim = claims eq '' ? 'Memory bandwidth by kernel and type' : claims[1:strstrt(claims, '|') - 1]
claim_n = claims eq '' ? claim : claims[strstrt(claims, '|') + 1:]

footer = footer_of(in)
narrow_aspect = 1.35
do for [out_i=1:out_n] {
  unset label
  unset arrow
  set border 3
  set xtics nomirror
  set ytics nomirror
  set autoscale xy
  eval out_open(dir, 'bandwidth', 1600, 1000, out_i)
  # one legend for the panels
  do for [t=1:3] {
    if (has(dt[t])) { ls_ = sprintf("with linespoints pt %d ps 1 lw 2.5 dt %d lc rgb '%s'", dt_pt[t], variant_dash(dt[t]), fcolor(dt[t])); lt_ = dt[t]; eval legend_add }
  }
  ls_ = "with lines dt 2 lw 3 lc rgb c_ref"; lt_ = narrow ? 'copy reference' : reflabel; eval legend_add
  i = 0
  do for [r in "memcpy-d2d memcpy memcpy-omp"] {
    if (hasref(r)) { i = i + 1; ls_ = sprintf("with linespoints pt %d lw 2.5 dt %d lc rgb '%s'", 6 + i, i, cat_color(i + 2)); lt_ = r eq 'memcpy-d2d' ? 'cudaMemcpy D2D' : r; eval legend_add }
  }
  if (sheet > 0) { ls_ = "with lines dt 3 lw 2 lc rgb '#882255'"; lt_ = sprintf("datasheet %.0f GB/s", sheet); eval legend_add }
  if (llc > 0) { ls_ = "with lines dt 3 lw 2 lc rgb c_note"; lt_ = narrow ? sprintf("%s cache full", size_text(llc)) : sprintf("the kernel's arrays fill the %s %s", size_text(llc), llc_name); eval legend_add }
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  g_cols = narrow ? 2 : 3
  g_rows = narrow ? 3 : 2
  g_T = 1 - text_h(preset eq 'screen' ? 5.0 : 4.0)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(3.0)
  g_L = narrow ? 0.16 : 7.0 * cur_pt / cur_w   # room for the y label and ticks
  g_R = 0.98
  g_hs = narrow ? 0.09 : 0.07
  g_vs = text_h(narrow ? 3.3 : 3.7)
  set multiplot title title_of("Memory bandwidth by kernel and element type (BabelStream's bytes, median of the timed runs)\ndashed grey: the same-run copy of the same size that the report's tables use as reference", \
                               narrow ? claim_n : claim)
  eval 'set grid xtics ytics '.grid_opts
  set logscale x 2
  set xtics narrow ? 16 : 4
  set yrange [0:gb_per_s_max]
  set xrange [*:*]
  unset key
  do for [p=1:6] {
    eval cell((p - 1) % g_cols + 1, (p - 1) / g_cols + 1)
    # axis labels on the outer panels only: the bottom row, the first column
    set xlabel (p > 6 - g_cols) ? (narrow ? 'MiB per array' : 'array size (MiB, each array)') : ''
    set ylabel ((p - 1) % g_cols == 0) ? (narrow ? 'GB/s' : 'GB/s (10^9 bytes/s)') : ''
    unset arrow
    unset label 1
    unset label 2
    na = arrays_of(p <= 5 ? kern[p] : 'memcpy')
    if (llc > 0 && na > 0) {
      set arrow 2 from first mib(llc) / na, graph 0 to first mib(llc) / na, graph 1 nohead dt 3 lw 2 lc rgb c_note back
      set label 2 narrow ? 'cache' : sprintf("%d arrays = %s", na, size_text(llc)) at first mib(llc) / na, graph 0.95 offset 0.4, 0 left tc rgb c_note
    }
    cmd = ''
    if (p <= 5) {
      set title kern_what[p]
      do for [t=1:3] {
        if (has(dt[t])) {
          cmd = cmd.sprintf("%s rows('$c[\"dtype\"] == \"%s\" && $c[\"kernel\"] == \"%s\"') using (mib(column('array_bytes'))):(column('gb_per_s')) with linespoints pt %d ps 1 lw 2.5 dt %d lc rgb '%s' notitle", \
                            cmd eq '' ? '' : ',', dt[t], kern[p], dt_pt[t], variant_dash(dt[t]), fcolor(dt[t]))
        }
      }
      # the tables' reference at each size, from the same rows
      cmd = cmd.sprintf(", rows('$c[\"dtype\"] == \"%s\" && $c[\"kernel\"] == \"%s\" && $c[\"ref_gb_per_s\"] != \"\"') using (mib(column('array_bytes'))):(column('ref_gb_per_s')) with lines dt 2 lw 3 lc rgb c_ref notitle", \
                        first_dtype, kern[p])
      if (sheet > 0) { cmd = cmd.sprintf(", %g with lines dt 3 lw 2 lc rgb '#882255' notitle", sheet) }
      eval('plot '.cmd)
    } else {
      set title "the reference copies"
      i = 0
      do for [r in "memcpy-d2d memcpy memcpy-omp"] {
        if (hasref(r)) {
          i = i + 1
          cmd = cmd.sprintf("%s rows('$c[\"kernel\"] == \"%s\"') using (mib(column('array_bytes'))):(column('gb_per_s')) with linespoints pt %d lw 2.5 dt %d lc rgb '%s' notitle", \
                            cmd eq '' ? '' : ',', r, 6 + i, i, cat_color(i + 2))
        }
      }
      if (cmd eq '') {
        set label 1 "no reference copies in this run" at graph 0.5, graph 0.5 center
        plot 1/0 notitle
      } else {
        eval('plot '.cmd)
      }
    }
    unset label 9999
  }
  unset title
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
