# plots/bandwidth.gp RESULTS_DIR — memory bandwidth of BabelStream's kernels
# against the array size: one panel per kernel (copy, scale, add, triad,
# dot), one line per element type in its family's colour, and in every
# panel the copy reference the report's tables use (ref_gb_per_s of the same
# rows: on a CPU the faster of memcpy and memcpy-omp at that size, on a GPU
# cudaMemcpy D2D, both from the same run). The sixth panel shows the
# references themselves (and the datasheet figure where known).
# Reads bandwidth.csv; writes bandwidth.png and .svg.
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = dir.'/bandwidth.csv'
if (!file_exists(in)) {
  print sprintf("bandwidth.gp: %s not found: no chart (run halflab-bench bandwidth)", in)
  exit
}
desc = device_of(in)
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

W = 1600
H = 1000
g_cols = 3
g_rows = 2
g_L = 0.07
g_R = 0.98
g_B = 0.08
g_T = 0.77
g_hs = 0.07
g_vs = 0.14
do for [out=1:2] {
  if (out == 1) { eval png(W, H); set output dir.'/bandwidth.png' } else { eval svg(W, H); set output dir.'/bandwidth.svg' }
  set multiplot title sprintf("Memory bandwidth by kernel and element type (BabelStream's bytes, median of the timed runs)\n%s\ndashed grey: the same-run copy of the same size that the report's tables use as reference", desc)
  set border 3
  set xtics nomirror
  set ytics nomirror
  set grid back lc rgb '#dddddd'
  set logscale x 2
  set xtics 4
  set xlabel 'array size (MiB, each array)'
  set ylabel 'GB/s (10^9 bytes/s)'
  set yrange [0:gb_per_s_max]
  set xrange [*:*]
  unset key
  do for [p=1:6] {
    eval cell((p - 1) % 3 + 1, (p - 1) / 3 + 1)
    cmd = ''
    if (p <= 5) {
      set title kern_what[p]
      do for [t=1:3] {
        if (has(dt[t])) {
          cmd = cmd.sprintf("%s rows('$c[\"dtype\"] == \"%s\" && $c[\"kernel\"] == \"%s\"') using (mib(column('array_bytes'))):(column('gb_per_s')) with linespoints pt %d ps 1 lw 2.5 lc rgb '%s' notitle", \
                            cmd eq '' ? '' : ',', dt[t], kern[p], dt_pt[t], fcolor(dt[t]))
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
          cmd = cmd.sprintf("%s rows('$c[\"kernel\"] == \"%s\"') using (mib(column('array_bytes'))):(column('gb_per_s')) with linespoints pt %d lw 2.5 dt %d lc rgb '%s' title '%s'", \
                            cmd eq '' ? '' : ',', r, 6 + i, i, cat_color(i + 2), \
                            r eq 'memcpy-d2d' ? 'cudaMemcpy D2D' : r)
        }
      }
      if (cmd eq '') {
        set label 1 "no reference copies in this run" at graph 0.5, graph 0.5 center
        plot 1/0 notitle
        unset label 1
      } else {
        set key inside top right samplen 2 noopaque nobox
        eval('plot '.cmd)
        unset key
      }
    }
  }
  # one legend for the panels, under the title
  do for [t=1:3] {
    if (has(dt[t])) { ls_ = sprintf("with linespoints pt %d ps 1 lw 2.5 lc rgb '%s'", dt_pt[t], fcolor(dt[t])); lt_ = dt[t]; eval legend_add }
  }
  ls_ = "with lines dt 2 lw 3 lc rgb c_ref"; lt_ = reflabel; eval legend_add
  if (sheet > 0) { ls_ = "with lines dt 3 lw 2 lc rgb '#882255'"; lt_ = sprintf("datasheet %.0f GB/s", sheet); eval legend_add }
  eval legend_strip(0.845)
  unset multiplot
}
unset output
