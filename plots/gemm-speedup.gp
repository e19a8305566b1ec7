# plots/gemm-speedup.gp RESULTS_DIR — what a narrower precision buys: each
# variant's TFLOP/s divided by fp32's at the same square size n (1 = no
# gain). On a CPU fp16 widens to fp32 and cannot gain, bf16 gains where
# oneDNN runs it on the CPU's bf16 units; the OpenBLAS and oneDNN lines
# there are the references the fp32 and bf16 paths are held to.
# Reads gemm.csv; writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/gemm.csv')
if (!file_exists(in)) {
  print sprintf("gemm-speedup.gp: %s not found: no chart (run halflab-bench gemm)", in)
  exit
}
# n, variant, TFLOP/s over fp32's at that n (square study), by column name
# concatenated, not sprintf'd: gnuplot's sprintf garbles a format this long once
# a long path lengthens the result (awk then sees its printf doubled)
join = "< awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"study\"] == \"square\" { t[$c[\"m\"], $c[\"variant\"]] = $c[\"tflop_per_s\"]; u[$c[\"m\"], $c[\"variant\"]] = ($c[\"time_ms_median\"] > 1.25 * $c[\"time_ms_min\"]); if (!($c[\"m\"] in seen)) { seen[$c[\"m\"]] = 1; ns[++n] = $c[\"m\"] } v[$c[\"variant\"]] = 1 } END { print \"n,variant,speedup,disturbed\"; for (x in v) for (i = 1; i <= n; i++) if ((ns[i], \"fp32\") in t && (ns[i], x) in t && x != \"fp32\") printf \"%s,%s,%.6g,%d\\n\", ns[i], x, t[ns[i], x] / t[ns[i], \"fp32\"], u[ns[i], x] || u[ns[i], \"fp32\"] }' '".in."'"
present = system(sprintf("awk -F, '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } $c[\"study\"] == \"square\" { print $c[\"variant\"] }' '%s' | sort -u | tr '\\n' ' '", in))

set datafile separator ','
set datafile columnheaders

array id[8] = ["tf32", "fp16", "fp16-acc16", "bf16", "fp8", "openblas", "onednn-bf16", "bf16-widened"]
array label[8] = ["tf32 / fp32", "fp16 (fp32 acc) / fp32", "fp16 (fp16 acc) / fp32", "bf16 / fp32", "fp8 / fp32", \
                  "OpenBLAS direct / fp32 path", "oneDNN bf16 direct / fp32 path", "bf16 fallback (widened) / fp32 path"]
has(v) = strstrt(' '.present, ' '.v.' ') > 0

# the joined table in a scratch file (removed at the end): read three times below
joinfile = system("mktemp /tmp/halflab-gemm-speedup.XXXXXX")
dummy = system(sprintf("%s > '%s'", join[3:], joinfile))
join = joinfile
# the range of the ratios the axis must show (points still disturbed by other work left out)
rng(f) = real(system(sprintf("awk -F, 'NR > 1 && !$4 { v = $3 + 0; if (m == \"\" || %s) m = v } END { print m + 0 }' %s", f, "'".joinfile."'")))
lo = rng('v < m')
hi = rng('v > m')
lo = (lo <= 0 || lo > 1) ? 1 : lo
hi = hi < 1 ? 1 : hi
ndist = int(system(sprintf("awk -F, 'NR > 1 && $4 { n++ } END { print n + 0 }' %s", "'".joinfile."'")))
array ratio_tics[17] = [0.1, 0.125, 0.25, 0.33, 0.5, 0.67, 0.8, 1, 1.25, 1.5, 2, 3, 4, 6, 8, 16, 32]
# the claim for slides and print: each narrower type's ratio at the largest size
claims = system(("awk -F, 'NR > 1 { n = $1 + 0; if (n > top) top = n; r[n, $2] = $3 } END { for (i = 1; i <= 5; i++) { v = i == 1 ? \"bf16\" : i == 2 ? \"fp16\" : i == 3 ? \"tf32\" : i == 4 ? \"fp8\" : \"fp16-acc16\"; if ((top, v) in r) { l = l sprintf(\"%s%s %.2fx\", l == \"\" ? \"\" : \", \", v, r[top, v]) } } if (l != \"\") printf \"Against fp32 at n = %d: %s|n = %d: %s fp32\", top, l, top, l }' '".joinfile."'"))
claim = claims[1:strstrt(claims, '|') - 1]
claim_n = claims[strstrt(claims, '|') + 1:]
array short[8] = ["tf32", "fp16", "fp16 acc16", "bf16", "fp8", "OpenBLAS direct", "oneDNN bf16 direct", "bf16 widened"]
footer = footer_of(in)
narrow_aspect = 0.95
do for [out_i=1:out_n] {
  # the axes as style.gp sets them (the legend strip of the file before unset them)
  unset label
  unset arrow
  set border 3
  set xtics nomirror autofreq
  set ytics nomirror autofreq
  set autoscale xy
  eval out_open(dir, 'gemm-speedup', 1400, 900, out_i)
  cmd = ''
  do for [i=1:|id|] {
    if (has(id[i])) {
      cmd = cmd.sprintf("%s join using (column('n')):(strcol('variant') eq '%s' ? column('speedup') : 1/0) with linespoints pt %d ps 1.3 lw 2.5 dt %d lc rgb '%s' notitle", \
                        cmd eq '' ? '' : ',', id[i], variant_pt(id[i]), variant_dash(id[i]), fcolor(id[i]))
      cmd = cmd.sprintf(", join using (column('n')):(strcol('variant') eq '%s' && column('disturbed') > 0 ? column('speedup') : 1/0) with points pt 6 ps 3 lw 2 lc rgb '#999999' notitle", id[i])
      ls_ = sprintf("with linespoints pt %d ps 1.3 lw 2.5 dt %d lc rgb '%s'", variant_pt(id[i]), variant_dash(id[i]), fcolor(id[i])); lt_ = narrow ? short[i] : label[i]; eval legend_add
    }
  }
  if (cmd eq '') { print "gemm-speedup.gp: no variant beside fp32 in the square study: no chart"; dummy = system("rm -f '".joinfile."'"); exit }
  ls_ = "with lines lw 1.5 lc rgb c_fp32"; lt_ = narrow ? "fp32 (= 1)" : "fp32 itself (= 1)"; eval legend_add
  if (ndist > 0) { ls_ = "with points pt 6 ps 3 lw 2 lc rgb '#999999'"; lt_ = narrow ? "disturbed" : "still disturbed (median > 1.25x min)"; eval legend_add }
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  g_T = 1 - text_h(preset eq 'screen' ? 3.6 : 1.8)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(3.0)
  set multiplot title title_of(sprintf("Speed-up over fp32 at the same size n x n x n (ratio of median TFLOP/s)%s", \
      ndist > 0 ? sprintf("\ngrey rings: %d point%s still disturbed by other work (median > 1.25x its minimum), kept out of the axis range", ndist, ndist == 1 ? "" : "s") : ""), \
      narrow ? claim_n : claim)
  set tmargin at screen g_T
  set bmargin at screen g_B
  set xlabel 'matrix size n'
  set ylabel narrow ? 'TFLOP/s over fp32' : 'TFLOP/s relative to fp32 (1 = same speed)'
  set logscale x 2
  set logscale y 2
  set yrange [lo / 1.15:hi * 1.15]
  set ytics ()
  do for [i=1:17] { if (ratio_tics[i] >= lo / 1.15 && ratio_tics[i] <= hi * 1.15) { set ytics add (sprintf('%g', ratio_tics[i]) ratio_tics[i]) } }
  eval 'set grid xtics ytics '.grid_opts
  unset key
  eval('plot '.cmd.", 1 with lines lw 1.5 lc rgb c_fp32 notitle")
  unset label 9999
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
dummy = system("rm -f '".joinfile."'")
