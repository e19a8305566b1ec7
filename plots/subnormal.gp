# plots/subnormal.gp RESULTS_DIR — the subnormal ladder. Left (top on a
# column): relative error of storing x = 2^-k, 1.5 x 2^-k and (4/3) x 2^-k
# (k = 10 ... 26) in fp16 and bf16, over fp16's normal, subnormal and zero
# zones (read from the ladder's class column), with the worst case of each
# format. Right (below), where the CSV has the fp8, fp6 and fp4 formats: the
# (4/3) x 2^-k rungs of every format with subnormals against the octaves below
# its own smallest normal (read from the class column too), so that their
# ladders line up: one bit lost per step, as many steps as mantissa bits, then
# zero. e8m0 has no ladder (no subnormals, no zero): the panel says so. Reads
# subnormal_ladder.csv; writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/subnormal_ladder.csv')
if (!file_exists(in)) {
  print sprintf("subnormal.gp: %s not found: no chart (run halflab-numerics subnormal)", in)
  exit
}
# awk over a halflab CSV's rows (VARS: its -v options), c["name"] the index of each column
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
dev = system(sprintf("%s$c[\"device\"] == \"cuda\" { g = 1 } END { print g ? \"cuda\" : \"cpu\" }' '%s'", awk_cols(''), in))
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | tr ';' '\\n' | sed 's/^ *//' | grep '^%s:' | cut -d, -f1", in, dev))
# the run's build and date, for the screen footer
run_of(f) = system(sprintf("sed -n 's/^# \\(halflab .*\\)/\\1/p; s/^# date: \\(.\\{10\\}\\).*/\\1/p' '%s' | paste -sd, - | sed 's/,/, /g'", f))

set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders

# AWK-CONDITION, EXPRESSION: the largest value of EXPRESSION over this device's rows where CONDITION holds
ladder_max(cond, expr) = real(system(awk_cols('-v d='.dev)."$c[\"device\"] == d && (".cond.") { v = ".expr."; if (!n++ || v > m) m = v } END { printf \"%.17g\\n\", m + 0 }' '".in."'"))
# fp16's zones, from the stored classes: zero up to the largest x stored as 0, normal from the smallest x stored normal
zero_hi = ladder_max('$c["format"] == "fp16" && $c["class"] == "zero"', '$c["x"] + 0')
normal_lo = -ladder_max('$c["format"] == "fp16" && $c["class"] == "normal"', '-$c["x"]')
# the claim: the last power of two fp16 stores, the first it rounds to 0, and bf16 there
k_last = int(ladder_max('$c["format"] == "fp16" && $c["series"] == "2^-k" && $c["stored"] + 0 > 0', '$c["k"] + 0'))
k_zero = k_last + 1
bf16_there = ladder_max(sprintf('$c["format"] == "bf16" && $c["series"] == "2^-k" && $c["k"] == %d', k_zero), '$c["rel_error"] + 0')
fp16_there = ladder_max(sprintf('$c["format"] == "fp16" && $c["series"] == "2^-k" && $c["k"] == %d', k_zero), '$c["stored"] + 0')
claim_wide = fp16_there == 0 ? sprintf("fp16's smallest power of two is 2^{-%d}: 2^{-%d} rounds to 0, bf16 keeps it%s", k_last, k_zero, \
                                       bf16_there == 0 ? " exactly" : sprintf(" (error %.1g)", bf16_there)) : \
                               sprintf("fp16 stores every power of two down to 2^{-%d}", k_last)
claim_narrow = fp16_there == 0 ? sprintf("fp16 ends at 2^{-%d}; bf16 keeps 2^{-%d}", k_last, k_zero) : sprintf("fp16 reaches 2^{-%d}", k_last)

xlo = 2**-27.5
xhi = 2**-9.5
exact_row = 2e-6
# worst cases: half a spacing over x
fp16_worst(x) = x > 2**-14 ? 2**-11 : (x > 2**-25 ? 2**-25 / x : 1)
bf16_worst(x) = 2**-8
is(f, s) = strcol("device") eq dev && strcol("format") eq f && strcol("series") eq s
err(f, s) = is(f, s) && column("rel_error") > 0 ? column("rel_error") : 1/0
exact(f, s) = is(f, s) && column("rel_error") == 0 ? exact_row : 1/0

# leg_rows: the rows the legend strip will take (legend_strip's wrapping, repeated)
count_leg_rows = "t_ = 0; do for [k_=1:leg_n] { t_ = t_ + leg_w(k_) }; leg_rows = 1; x_ = t_ < 0.96 ? 0.5 - t_ / 2 : 0.02; do for [k_=1:leg_n] { if (x_ + leg_w(k_) > 0.99) { x_ = 0.02; leg_rows = leg_rows + 1 }; x_ = x_ + leg_w(k_) }"
# point sizes: pdfcairo draws points larger against the text than pngcairo
pk(x) = preset eq 'print' ? 0.55 : preset eq 'slides' ? 1.4 : 1.0
array leg_style[6] = ["with lines dt 3 lw 2 lc rgb c_fp16", "with lines dt 3 lw 2 lc rgb c_bf16", \
                      "with linespoints dt 2 pt 7 ps 1.3*pk(0) lw 2 lc rgb c_fp16", "with points pt 9 ps 1.5*pk(0) lc rgb c_fp16", \
                      "with points pt 5 ps 1.3*pk(0) lc rgb c_fp16", "with linespoints dt 2 pt 7 ps 1.3*pk(0) lw 2 lc rgb c_bf16"]
array leg_long[6] = ['fp16 worst case (half a spacing / x)', 'bf16 worst case 2^{-8}', 'fp16, x = (4/3) 2^{-k}', \
                     'fp16, x = 1.5 x 2^{-k}', 'fp16, x = 2^{-k}', 'bf16, x = (4/3) 2^{-k}']
array leg_short[6] = ['fp16 worst case', 'bf16 worst case', 'fp16, (4/3) 2^{-k}', 'fp16, 1.5 x 2^{-k}', 'fp16, 2^{-k}', 'bf16, (4/3) 2^{-k}']

# the formats with a ladder of their own beyond fp16 and bf16, in style.gp's order, and the
# exponent k of each one's last normal power of two (from the class column)
fmts = system(sprintf("%s$c[\"device\"] == d && !seen[$c[\"format\"]]++ { s = s \" \" $c[\"format\"] } END { print s }' '%s'", \
                      awk_cols('-v d='.dev), in))
nn = 0
array nid[9]
array last_normal[9]
do for [j=1:words(format_list)] {
  f_ = word(format_list, j)
  if (f_ ne 'fp32' && f_ ne 'bf16' && strstrt(' '.fmts.' ', ' '.f_.' ') > 0) {
    nn = nn + 1
    nid[nn] = f_
    last_normal[nn] = int(ladder_max(sprintf('$c["format"] == "%s" && $c["series"] == "2^-k" && $c["class"] == "normal"', f_), '$c["k"] + 0'))
  }
}
two_panels = nn > 1   # fp16 and at least one narrow format
# point types for the narrow formats' rungs (the dash and colour are style.gp's)
array npt[9] = [7, 5, 9, 13, 11, 4, 6, 8, 10]
steps(f, s) = strcol("device") eq dev && strcol("format") eq f && strcol("series") eq s
footer = desc.'; '.run_of(in)
narrow_aspect = two_panels ? 2.0 : 1.3
set samples 2000
do for [out_i=1:out_n] {
  unset label
  unset object
  eval out_open(dir, 'subnormal', two_panels ? 1600 : 1280, 800, out_i)
  lh = 1.6 * cur_pt / cur_h   # a line of text, as a fraction of the height
  do for [i=1:6] { ls_ = leg_style[i]; lt_ = narrow ? leg_short[i] : leg_long[i]; eval legend_add }
  if (two_panels) {
    do for [j=2:nn] {
      ls_ = sprintf("with linespoints dt %s pt %d ps 1.2*pk(0) lw 2 lc rgb '%s'", format_dash(nid[j]), npt[j], format_color(nid[j]))
      lt_ = sprintf("%s, (4/3) 2^{-k}", nid[j])
      eval legend_add
    }
  }
  eval count_leg_rows
  foot = preset eq 'screen' ? 1.2 * lh : 0   # the footer's line
  set multiplot
  if (two_panels) {
    g_cols = narrow ? 1 : 2
    g_rows = narrow ? 2 : 1
    g_T = 1 - text_h(preset eq 'screen' ? 5.6 : narrow ? 4.2 : 3.6)
    g_B = foot + (leg_rows + 3.4) * lh
    g_L = narrow ? 0.2 : 7.5 * cur_pt / cur_w
    g_R = 0.97
    g_hs = 0.07
    g_vs = text_h(narrow ? 4.6 : 3.4)
    set label 50 title_of("The subnormal ladder: relative error of storing x\neach step down a subnormal range keeps one bit less", \
                          narrow ? claim_narrow : claim_wide) at screen 0.5, screen 1 - text_h(preset eq 'screen' ? 1.4 : 1.0) center
    eval cell(1, 1)
    set title (narrow ? "fp16 and bf16" : "fp16 and bf16, x = 2^{-10} ... 2^{-26}")
  } else {
    set bmargin at screen foot + (leg_rows + 3.4) * lh
    set title title_of("The subnormal ladder: relative error of storing x in fp16 and bf16\neach step down the subnormal range keeps one bit less", \
                       narrow ? claim_narrow : claim_wide)
  }
  set xlabel 'x'
  set ylabel 'relative error |stored - x| / x'
  set logscale x 2
  set logscale y 10
  set format x '2^{%L}'
  set format y '10^{%L}'
  set border 3   # (legend_strip unset the axes)
  if (narrow || two_panels) { set xtics nomirror 2**-26, 2**4 } else { set xtics nomirror 2 }
  set ytics nomirror 1e-5, 10, 1
  set xrange [xlo:xhi]
  set yrange [8e-7:4]
  eval 'set grid xtics ytics '.grid_opts
  unset key

  set object 1 rect from xlo, graph 0 to zero_hi, graph 1 fc rgb '#e8e8e8' fs solid 1.0 noborder behind
  set object 2 rect from zero_hi, graph 0 to normal_lo, graph 1 fc rgb '#fff4c2' fs solid 1.0 noborder behind
  set object 3 rect from normal_lo, graph 0 to xhi, graph 1 fc rgb '#e3f3e0' fs solid 1.0 noborder behind
  # the zone names where no line runs: the zero zone's below bf16's points, the subnormal zone's
  # right of the descending fp16 lines
  if (narrow || two_panels) {   # a narrow panel's zero zone is one tick wide: its name runs up it
    set label 1 "zero" at sqrt(xlo * zero_hi), graph 0.66 center rotate by 90
  } else {
    set label 1 "fp16\nzero\nzone" at sqrt(xlo * zero_hi), graph 0.3 center norotate
  }
  set label 2 (narrow || two_panels) ? "fp16 subnormal" : sprintf("fp16 subnormal zone: spacing stays %s,\nso each halving of x loses a bit", "2^{-24}") \
      at sqrt(zero_hi * normal_lo) * ((narrow || two_panels) ? 1 : 2**1.5), graph 0.92 center
  set label 3 (narrow || two_panels) ? "normal" : "fp16 normal zone\n11 significant bits" at sqrt(normal_lo * xhi), graph 0.92 center
  set label 4 narrow ? 'exact' : 'exact (error 0)' at graph 0.01, first exact_row offset 0, 0.9 left tc rgb c_note

  plot fp16_worst(x) with lines dt 3 lw 2 lc rgb c_fp16 notitle, \
       bf16_worst(x) with lines dt 3 lw 2 lc rgb c_bf16 notitle, \
       in using (column("x")):(err("fp16", "4/3*2^-k")) with linespoints dt 2 pt 7 ps 1.3*pk(0) lw 2 lc rgb c_fp16 notitle, \
       in using (column("x")):(err("fp16", "1.5*2^-k")) with points pt 9 ps 1.5*pk(0) lc rgb c_fp16 notitle, \
       in using (column("x")):(err("fp16", "2^-k")) with points pt 5 ps 1.3*pk(0) lc rgb c_fp16 notitle, \
       in using (column("x")):(err("bf16", "4/3*2^-k")) with linespoints dt 2 pt 7 ps 1.3*pk(0) lw 2 lc rgb c_bf16 notitle, \
       in using (column("x")):(exact("fp16", "1.5*2^-k")) with points pt 9 ps 1.5*pk(0) lc rgb c_fp16 notitle, \
       in using (column("x")):(exact("fp16", "2^-k")) with points pt 5 ps 1.3*pk(0) lc rgb c_fp16 notitle
  if (two_panels) {
    unset object
    unset label
    eval cell(narrow ? 1 : 2, narrow ? 2 : 1)
    set title (narrow ? "every format, aligned" : preset eq 'screen' ? "every format with subnormals: x = (4/3) 2^{-k}, aligned at its smallest normal" : \
               "x = (4/3) 2^{-k}, aligned at each smallest normal")
    set xlabel 'octaves below the smallest normal (k minus the last normal k)'
    if (narrow) { set xlabel 'octaves below the smallest normal' }
    unset logscale x
    set format x '%g'
    set xtics nomirror 1
    set xrange [-4.5:12.5]
    set ytics nomirror 1e-4, 10, 1
    set yrange [5e-5:3]
    set object 4 rect from -4.5, graph 0 to 0.5, graph 1 fc rgb '#e3f3e0' fs solid 1.0 noborder behind
    set label 5 'normal' at -2, graph 0.95 center
    set label 6 preset ne 'screen' ? 'e8m0: no subnormals, no zero' : 'e8m0 has no ladder: no subnormals, no zero (smallest 2^{-127})' \
        at graph 0.03, graph 0.04 left tc rgb c_note
    # formats with as many mantissa bits share their points (e4m3 and e2m3, e5m2 and e3m2):
    # each format's points sit a little to one side of the whole step so that both show
    cmd = ''
    do for [j=1:nn] {
      cmd = cmd.sprintf("%s in using (column('k') - %d + %.3f):(steps('%s', '4/3*2^-k') ? column('rel_error') : 1/0) with linespoints dt %s pt %d ps 1.2*pk(0) lw 2 lc rgb '%s' notitle", \
                        cmd eq '' ? '' : ',', last_normal[j], 0.09 * (j - (nn + 1) / 2.0), nid[j], format_dash(nid[j]), npt[j], format_color(nid[j]))
    }
    eval 'plot '.cmd
  }
  unset title
  eval legend_strip(foot + (leg_rows - 0.5) * leg_row_h(0) + 0.3 * lh)
  unset multiplot
}
unset output
