# plots/gemm-align.gp RESULTS_DIR — the alignment study: TFLOP/s of each
# variant for n x n x n around 4096, n = 4088 ... 4104, as the percentage
# above or below the variant's own median over the sweep (a linear axis: the
# differences are a few per cent, which a log axis of TFLOP/s flattens), one
# panel per variant on one y axis. The band around each median is the
# point's min-max over its timed launches (TFLOP/s at the longest and the
# shortest time), so that a difference can be read against the machine's
# own noise. Filled points are multiples of 8 (16-byte rows for fp16), open
# ones are not. Reads gemm.csv; writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/gemm.csv')
if (!file_exists(in)) {
  print sprintf("gemm-align.gp: %s not found: no chart (run halflab-bench gemm)", in)
  exit
}
# awk over gemm.csv's alignment rows, c["name"] the index of each column
awk_align(prog) = "awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"study\"] != \"align\" { next } ".prog."' '".in."'"
present = system(awk_align('{ print $c["variant"] }')." | sort -u | tr '\\n' ' '")
if (present eq "") {
  print "gemm-align.gp: no alignment study in ".in.": no chart (halflab-bench gemm --studies align)"
  exit
}

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

array id[8] = ["fp32", "openblas", "tf32", "fp16", "fp16-acc16", "bf16", "onednn-bf16", "fp8"]
array name[8] = ["fp32", "OpenBLAS called directly", "tf32", "fp16", "fp16, fp16 accumulate", "bf16", "oneDNN bf16 called directly", "fp8"]
array short[8] = ["fp32", "OpenBLAS", "tf32", "fp16", "fp16 acc16", "bf16", "oneDNN bf16", "fp8"]
# a column's panel titles
tiny(i) = id[i] eq 'onednn-bf16' ? 'oneDNN' : short[i]
has(v) = strstrt(' '.present, ' '.v.' ') > 0
nv = 0
do for [i=1:8] { if (has(id[i])) { nv = nv + 1 } }
# each variant's median TFLOP/s over the sweep
med(v) = real(system(awk_align(sprintf('$c["variant"] == "%s" { print $c["tflop_per_s"] }', v))." | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'"))
array median[8]
do for [i=1:8] { median[i] = has(id[i]) ? med(id[i]) : 0 }
gpu = on_gpu(in)
# the range the bands need, in per cent of each variant's median: the slowest
# launch (TFLOP/s x median time / longest time) to the fastest (tflop_per_s_best)
band_lo(i) = sprintf("(100 * (column('tflop_per_s') * column('time_ms_median') / column('time_ms_max') / %.9g - 1))", median[i])
band_hi(i) = sprintf("(100 * (column('tflop_per_s_best') / %.9g - 1))", median[i])
lo = 0
hi = 0
do for [i=1:8] {
  if (has(id[i])) {
    r = system(awk_align(sprintf('$c["variant"] == "%s" { a = 100 * ($c["tflop_per_s"] * $c["time_ms_median"] / $c["time_ms_max"] / %.9g - 1); b = 100 * ($c["tflop_per_s_best"] / %.9g - 1); if (a < l) l = a; if (b > u) u = b } END { print l + 0, u + 0 }', id[i], median[i], median[i])))
    lo = real(word(r, 1)) < lo ? real(word(r, 1)) : lo
    hi = real(word(r, 2)) > hi ? real(word(r, 2)) : hi
  }
}
# the claim: the largest gain of the multiples of 8 over the rest, against the
# typical (median) min-max range of a point
claims = system(awk_align('{ v = $c["variant"]; x = $c["tflop_per_s"] + 0; if ($c["m"] % 8 == 0) { a8[v] += x; n8[v]++ } else { a1[v] += x; n1[v]++ } w[++n] = 100 * ($c["tflop_per_s_best"] - $c["tflop_per_s"] * $c["time_ms_median"] / $c["time_ms_max"]) / x } END { for (i = 2; i <= n; i++) { x = w[i]; for (j = i - 1; j >= 1 && w[j] > x; j--) w[j + 1] = w[j]; w[j + 1] = x } s = n % 2 ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2; for (v in n8) if (n1[v]) { d = 100 * (a8[v] / n8[v]) / (a1[v] / n1[v]) - 100; if (b == "" || d > g) { g = d; b = v } } if (b == "") exit; if (g > s) printf "Multiples of 8 gain up to %+.1f%% (%s), more than the %.1f%% launch spread|%s %+.1f%% at multiples of 8; launches spread %.1f%%", g, b, s, b, g, s; else printf "Alignment to 8 gains at most %+.1f%% (%s): inside the %.1f%% launch spread|Multiples of 8: %+.1f%% at most, spread %.1f%%", g, b, s, g, s }'))
claim = claims[1:strstrt(claims, '|') - 1]
claim_n = claims[strstrt(claims, '|') + 1:]
rows(cond) = sprintf("< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; print; next } %s' '%s'", cond, in)
m8(n) = int(n) % 8 == 0
# the filled and the open form of a variant's point
pt_filled(v) = variant_pt(v) == 6 ? 7 : variant_pt(v) == 4 ? 5 : variant_pt(v) == 8 ? 9 : variant_pt(v) == 12 ? 13 : variant_pt(v)
pt_open(v) = pt_filled(v) - 1

footer = footer_of(in)
narrow_aspect = 1.25
do for [out_i=1:out_n] {
  unset label
  unset arrow
  set border 3
  set xtics nomirror autofreq
  set ytics nomirror autofreq
  set autoscale xy
  eval out_open(dir, 'gemm-align', 1400, 900, out_i)
  ls_ = sprintf("with linespoints lw 2 pt 7 ps 1.5 lc rgb '%s'", c_ref); lt_ = narrow ? "n a multiple of 8" : "median TFLOP/s, n a multiple of 8"; eval legend_add
  ls_ = sprintf("with points lw 2 pt 6 ps 1.5 lc rgb '%s'", c_ref); lt_ = narrow ? "other n" : "n not a multiple of 8"; eval legend_add
  ls_ = sprintf("with boxes fs transparent solid 0.25 noborder lc rgb '%s'", c_ref); lt_ = narrow ? "min to max" : "min to max over the timed launches"; eval legend_add
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  g_cols = narrow ? 2 : (nv <= 3 ? nv : 3)
  g_rows = int((nv + g_cols - 1) / g_cols)
  g_T = 1 - text_h(preset eq 'screen' ? 5.0 : 3.8)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(3.0)
  g_L = narrow ? 0.15 : 7.5 * cur_pt / cur_w   # room for the y label and ticks
  g_R = 0.98
  g_hs = narrow ? 0.05 : 0.04
  g_vs = text_h(3.4)
  set multiplot title title_of(sprintf("Alignment: n x n x n around 4096, against each variant's median over the sweep\nbands: min to max of the timed launches (the machine's noise); filled: n a multiple of 8%s, open: not", \
                                       gpu ? " (16-byte rows of fp16: what tensor cores want)" : ""), narrow ? claim_n : claim)
  set xrange [4086:4106]
  set xtics 4088, 8, 4104
  set mxtics 4
  set yrange [lo * 1.1 - 0.5:hi * 1.1 + 0.5]
  set format y '%+g%%'
  eval 'set grid xtics ytics '.grid_opts
  unset key
  k = 0
  do for [i=1:8] {
    if (has(id[i])) {
      k = k + 1
      eval cell((k - 1) % g_cols + 1, (k - 1) / g_cols + 1)
      set title narrow ? sprintf("%s: %.3g TFLOP/s", tiny(i), median[i]) : sprintf("%s: median %.3g TFLOP/s", preset eq 'screen' ? name[i] : short[i], median[i]) tc rgb fcolor(id[i])
      # x tick labels on the bottom panel of each column only, the y axis's on the first column
      if (k + g_cols <= nv) { set format x '' } else { set format x '%g' }
      set xlabel (k + g_cols > nv) ? 'matrix size n' : ''
      if ((k - 1) % g_cols == 0) { set format y '%+g%%'; set ylabel narrow ? 'vs median' : 'TFLOP/s vs median' } else { set format y ''; set ylabel '' }
      sel = sprintf('rows(''$c["study"] == "align" && $c["variant"] == "%s"'')', id[i])
      y = sprintf("(100 * (column('tflop_per_s') / %.9g - 1))", median[i])
      cmd = sprintf("%s using (column('m')):%s:%s with filledcurves fs transparent solid 0.25 noborder lc rgb '%s' notitle", sel, band_lo(i), band_hi(i), fcolor(id[i]))
      cmd = cmd.sprintf(", %s using (column('m')):%s with lines lw 2.5 dt %d lc rgb '%s' notitle", sel, y, variant_dash(id[i]), fcolor(id[i]))
      cmd = cmd.sprintf(", %s using (column('m')):(m8(column('m')) ? %s : 1/0) with points pt %d ps 1.5 lc rgb '%s' notitle", sel, y, pt_filled(id[i]), fcolor(id[i]))
      cmd = cmd.sprintf(", %s using (column('m')):(!m8(column('m')) ? %s : 1/0) with points pt %d ps 1.5 lw 2 lc rgb '%s' notitle", sel, y, pt_open(id[i]), fcolor(id[i]))
      eval('plot '.cmd.", 0 with lines lw 1 lc rgb c_ref notitle")
      unset label 9999
    }
  }
  set title '' tc rgb c_note
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
