# plots/tour_fp8.gp RESULTS_DIR — what a scale does (the tour's sixth
# demonstration): a 32-element tensor, |x| = 1000 x 2^(-i/4), stored five
# ways, each value over x against |x|: in e4m3 without a scale (values from
# 464 up are NaN: drawn on the top row), clamped to 448, after the per-tensor
# scale 448 / amax, and as one MXFP4 block (e2m1 elements, an E8M0 scale)
# under OCP's FLOOR rule and the RCEIL rule; values stored as 0 lie on the
# bottom. Reads tour_fp8.csv; writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/tour_fp8.csv')
if (!file_exists(in)) {
  print sprintf("tour_fp8.gp: %s not found: no chart (run halflab-numerics tour)", in)
  exit
}
# awk over a halflab CSV's rows (VARS: its -v options), c["name"] the index of each column
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
dev = system(sprintf("%s$c[\"device\"] == \"cuda\" { g = 1 } END { print g ? \"cuda\" : \"cpu\" }' '%s'", awk_cols(''), in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))
run_of(f) = system(sprintf("sed -n 's/^# \\(halflab .*\\)/\\1/p; s/^# date: \\(.\\{10\\}\\).*/\\1/p' '%s' | paste -sd, - | sed 's/,/, /g'", f))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

# per way: the NaN count, the worst relative error of the finite values, the decoded scale
way_stat(w, expr) = system(sprintf("%s$c[\"device\"] == d && $c[\"way\"] == w { %s } END { printf \"%%.17g\\n\", m + 0 }' '%s'", \
                           awk_cols(sprintf('-v d=%s -v w=%s', dev, w)), expr, in))
nans(w) = int(real(way_stat(w, 'm += ($c["stored"] ~ /nan/)')))
worst(w) = real(way_stat(w, 'if ($c["stored"] !~ /nan/ && $c["rel_error"] + 0 > m) m = $c["rel_error"] + 0'))
decode_scale(w) = real(way_stat(w, 'm = $c["scale"] + 0'))
count = int(real(way_stat('e4m3', 'm++')))
pct = sprintf("%.1f", 100 * worst('e4m3-tensor-scale')).'%'   # (gnuplot's sprintf has no %%)
claim_wide = sprintf("Without a scale %d of %d values are NaN in e4m3; scaled by 448/amax all fit, worst error %s", \
                     nans('e4m3'), count, pct)
claim_narrow = sprintf("e4m3: %d of %d NaN unscaled; scaled, worst error %s", nans('e4m3'), count, pct)

array way[5] = ['e4m3', 'e4m3-saturated', 'e4m3-tensor-scale', 'mxfp4-floor', 'mxfp4-rceil']
array way_fmt[5] = ['e4m3', 'e5m2', 'e2m3', 'e2m1', 'e3m2']   # whose dash each way borrows
array way_pt[5] = [6, 4, 7, 9, 11]
array way_col[5] = [c_fp8, c_fp8, c_fp8, c_fp4, c_fp4]
array way_long[5] = ['e4m3, no scale (NaN from 464)', 'e4m3, no scale, clamped to 448', 'e4m3, per-tensor scale 448 / amax', \
                     '', '']
array way_short[5] = ['e4m3, no scale', 'e4m3, clamped', 'e4m3, tensor scale', 'MXFP4, FLOOR', 'MXFP4, RCEIL']
way_long[4] = sprintf("MXFP4 block, FLOOR: E8M0 scale %g", decode_scale('mxfp4-floor'))
way_long[5] = sprintf("MXFP4 block, RCEIL: E8M0 scale %g", decode_scale('mxfp4-rceil'))
nan_row = 2.3
is(w) = strcol("device") eq dev && strcol("way") eq w
ratio(w) = !is(w) ? 1/0 : strcol("stored") eq 'nan' || strcol("stored") eq '-nan' ? nan_row : column("stored") / column("x")

footer = desc.'; '.run_of(in)
narrow_aspect = 1.5
do for [out_i=1:out_n] {
  unset label
  unset arrow
  eval out_open(dir, 'tour_fp8', 1280, 800, out_i)
  lh = 1.6 * cur_pt / cur_h
  do for [i=1:5] {
    ls_ = sprintf("with linespoints lw 2 dt %s pt %d ps 1.2 lc rgb '%s'", format_dash(way_fmt[i]), way_pt[i], way_col[i])
    lt_ = narrow ? way_short[i] : way_long[i]
    eval legend_add
  }
  eval legend_count
  foot = preset eq 'screen' ? 1.2 * lh : 0
  set multiplot
  set bmargin at screen foot + (leg_rows + 3.3) * lh
  set title title_of("What a scale does: a tensor with amax 1000, |x| = 1000 x 2^{-i/4}, stored five ways\nthe value stored over x (1: exact); NaN on the top row, values stored as 0 at the bottom", \
                     narrow ? claim_narrow : claim_wide)
  set xlabel '|x|'
  set ylabel 'stored / x'
  set logscale x 2
  set format x '2^{%L}'
  set border 3
  set xtics nomirror 4, 2
  set ytics nomirror ('0' 0, '0.5' 0.5, '1' 1, '1.5' 1.5, '2' 2, 'NaN' nan_row)
  set xrange [4:1100]
  set yrange [-0.15:2.45]
  eval 'set grid xtics ytics '.grid_opts
  unset key
  set arrow 1 from 448, graph 0 to 448, graph 1 nohead dt 3 lw 1.5 lc rgb c_ref back
  set label 1 "448, e4m3's largest" at 448, graph 0.25 rotate by 90 offset -0.8, 0 center tc rgb c_note
  set arrow 2 from 464, graph 0 to 464, graph 1 nohead dt 3 lw 1 lc rgb c_fp8 back
  cmd = 'plot 1 with lines dt 3 lw 2 lc rgb c_ref notitle'
  do for [i=1:5] {
    cmd = cmd.sprintf(", in using (abs(column('x'))):(ratio(way[%d])) with linespoints lw 2 dt %s pt %d ps 1.2 lc rgb '%s' notitle", \
                      i, format_dash(way_fmt[i]), way_pt[i], way_col[i])
  }
  eval cmd
  eval legend_strip(foot + (leg_rows - 0.5) * leg_row_h(0) + 0.3 * lh)
  unset multiplot
}
unset output
