# plots/bandwidth.gp RESULTS_DIR — memory bandwidth of BabelStream's kernels
# against the array size, one column per element type: GB/s on top (the same
# bytes per second whatever the type), Gelem/s below (twice the elements per
# second at half the width). Dashed black: the platform's own copy of the
# same size in the same run (cudaMemcpy D2D; on a CPU memcpy, grey: one per
# thread); dotted red: the datasheet figure where known.
# Reads bandwidth.csv; writes bandwidth.png and .svg.
dir = ARG1
in = dir.'/bandwidth.csv'
if (system(sprintf("test -f '%s' && echo 1 || echo 0", in)) eq "0") {
  print sprintf("bandwidth.gp: %s not found: no chart (run halflab-bench bandwidth)", in)
  exit
}
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", in))  # '_' would start a subscript
col(name) = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) if ($i == \"%s\") print i; exit }' '%s'", name, in))
maxof(name) = real(system(sprintf("awk -F, -v c=%s '/^#/ || !h++ { next } $c + 0 > m { m = $c + 0 } END { print m + 0 }' '%s'", col(name), in)))
gbps_max = maxof("gbps") * 1.25
gel_max = maxof("gelems") * 1.25
sheet = maxof("datasheet_gbps")
refs = system(sprintf("awk -F, '/^#/ || !h++ { next } $3 == \"bytes\" { print $2 }' '%s' | sort -u | tr '\\n' ' '", in))
dtypes = system(sprintf("awk -F, '/^#/ || !h++ { next } $3 != \"bytes\" { print $3 }' '%s' | sort -u | tr '\\n' ' '", in))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array dt[3] = ["fp32", "fp16", "bf16"]
array kern[5] = ["copy", "scale", "add", "triad", "dot"]
array color[5] = ['#0072B2', '#009E73', '#E69F00', '#D55E00', '#CC79A7']
has(v) = strstrt(' '.dtypes, ' '.v.' ') > 0
# the header and the rows where an awk condition holds (columns by name: $c["kernel"]);
# plotting only those keeps each line unbroken
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
hasref(v) = strstrt(' '.refs, ' '.v.' ') > 0
mib(b) = b / 1048576.0

do for [out=1:2] {
  if (out == 1) {
    set terminal pngcairo size 1500,900 enhanced font 'Sans,11'
    set output dir.'/bandwidth.png'
  } else {
    set terminal svg size 1500,900 enhanced font 'Sans,11' background rgb 'white'
    set output dir.'/bandwidth.svg'
  }
  set multiplot layout 2,3 title sprintf("Memory bandwidth by kernel and element type (BabelStream bytes, median of timed runs)\n{/*0.85 %s; dashed: the platform's copy of the same size in the same run%s}", \
      desc, sheet > 0 ? sprintf("; dotted: datasheet %.0f GB/s", sheet) : "") \
      margins 0.06, 0.98, 0.07, 0.85 spacing 0.07, 0.13
  set logscale x 2
  set xlabel 'array size (MiB, each of the arrays)'
  set grid back lc rgb '#dddddd'
  set border 3
  set xtics nomirror
  set ytics nomirror
  do for [row=1:2] {
    do for [p=1:3] {
      set title dt[p]
      if (row == 1) { set ylabel 'GB/s (10^9 bytes/s)'; set yrange [0:gbps_max] } else { set ylabel 'Gelem/s'; set yrange [0:gel_max] }
      unset key
      # one legend for all six panels, as coloured labels under the title, drawn with the first panel only
      if (p == 1 && row == 1) {
        do for [k=1:5] {
          set label 100 + k sprintf("━━ %s", kern[k]) at screen 0.10 + 0.08 * k, screen 0.915 center tc rgb color[k] front
        }
        set label 106 "╍╍ copy of the same size (same run)" at screen 0.66, screen 0.915 center tc rgb '#000000' front
        if (hasref('memcpy-omp')) {
          set label 107 "╍╍ the same copy, one part per thread" at screen 0.86, screen 0.915 center tc rgb '#888888' front
        }
      } else {
        do for [k=101:107] { unset label k }
      }
      ycol = row == 1 ? 'gbps' : 'gelems'
      cmd = ''
      if (has(dt[p])) {
        do for [k=1:5] {
          cmd = cmd.sprintf("%s rows('$c[\"dtype\"] == \"%s\" && $c[\"kernel\"] == \"%s\"') using (mib(column('array_bytes'))):(column('%s')) with linespoints pt 7 ps 0.6 lw 2 lc rgb '%s' title '%s'", \
                            cmd eq '' ? '' : ',', dt[p], kern[k], ycol, color[k], kern[k])
        }
        if (row == 1) {
          do for [r in "memcpy-d2d memcpy memcpy-omp"] {
            if (hasref(r)) {
              cmd = cmd.sprintf(", rows('$c[\"kernel\"] == \"%s\"') using (mib(column('array_bytes'))):(column('gbps')) with lines dt 2 lw 2 lc rgb '%s' title '%s'", \
                                r, r eq 'memcpy-omp' ? '#888888' : '#000000', r)
            }
          }
          if (sheet > 0) { cmd = cmd.sprintf(", %g with lines dt 3 lw 2 lc rgb '#CC0000' title 'datasheet'", sheet) }
        } else {
          # the copy reference in elements of this type: bytes / width
          w = p == 1 ? 4 : 2
          do for [r in "memcpy-d2d memcpy memcpy-omp"] {
            if (hasref(r)) {
              cmd = cmd.sprintf(", rows('$c[\"kernel\"] == \"%s\"') using (mib(column('array_bytes'))):(column('gbps') / %d) with lines dt 2 lw 2 lc rgb '%s' notitle", \
                                r, w, r eq 'memcpy-omp' ? '#888888' : '#000000')
            }
          }
        }
        eval('plot '.cmd)
      } else {
        set label 1 sprintf("%s not in this run", dt[p]) at graph 0.5, graph 0.5 center
        plot 1/0 notitle
        unset label 1
      }
    }
  }
  unset multiplot
  unset label
}
unset output
