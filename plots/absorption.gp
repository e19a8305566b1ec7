# plots/absorption.gp RESULTS_DIR — what is left of an update u added to 1:
# the effective update fl(1 + u) - 1 against the intended u, on log-log axes,
# for every format in the sweep (fp32, fp16, bf16 and the fp8, fp6, fp4 and
# e8m0 formats; colour and dash from style.gp's format_color / format_dash).
# Updates that vanish entirely are drawn on the rows at the bottom, one per
# format; a dotted line marks the largest u each format loses (named beside
# it for fp32, fp16 and bf16, in the legend for the rest), and a grey one
# u = 0.0001 (the classic 1 + 0.0001, from absorption.csv). Reads
# absorption_sweep.csv (and absorption.csv); writes the preset's two files
# (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/absorption_sweep.csv')
if (!file_exists(in)) {
  print sprintf("absorption.gp: %s not found: no chart (run halflab-numerics absorption)", in)
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

# the formats in the sweep, in style.gp's order
fmts = system(sprintf("%s$c[\"device\"] == d && !seen[$c[\"format\"]]++ { s = s \" \" $c[\"format\"] } END { print s }' '%s'", \
                      awk_cols('-v d='.dev), in))
nf = 0
array id[9]
do for [k=1:words(format_list)] {
  if (strstrt(' '.fmts.' ', ' '.word(format_list, k).' ') > 0) { nf = nf + 1; id[nf] = word(format_list, k) }
}
array lost_row[9]
do for [i=1:nf] { lost_row[i] = 2**(-33.4 - 0.65 * (i - 1)) }
row_floor = 2**(-33.4 - 0.65 * nf)
named_beside(i) = id[i] eq 'fp32' || id[i] eq 'fp16' || id[i] eq 'bf16'
# the largest update each format loses entirely (0: none in the sweep)
array lost_max[9]
do for [i=1:nf] {
  lost_max[i] = real(system(awk_cols(sprintf('-v d=%s -v f=%s', dev, id[i])). \
      "$c[\"device\"] == d && $c[\"format\"] == f && $c[\"effective_update\"] == 0 && $c[\"update\"] + 0 > m { m = $c[\"update\"] + 0 } END { printf \"%.17g\\n\", m + 0 }' '".in."'"))
}
# a power of two as 2^{e}, anything else as %.2g
pow2_text(x) = abs(log(x) / log(2) - floor(log(x) / log(2) + 0.5)) < 1e-9 ? sprintf("2^{%d}", floor(log(x) / log(2) + 0.5)) : sprintf("%.2g", x)
idx(f) = sum [i=1:nf] (id[i] eq f ? i : 0)

# The claim: 1 + 0.0001 per format (absorption.csv), else the sweep's thresholds
cases = as_written(dir.'/absorption.csv')
case_u = file_exists(cases) ? system(sprintf("%s$c[\"device\"] == d && $c[\"case\"] == \"1+0.0001\" { print $c[\"b\"]; exit }' '%s'", awk_cols('-v d='.dev), cases)) : ''
# the formats in which 1 + 0.0001 stayed 1, and those it moved
case_list(lost) = system(sprintf("%s$c[\"device\"] == d && $c[\"case\"] == \"1+0.0001\" && (($c[\"result\"] == 1) == l) { s = s (s == \"\" ? \"\" : \" and \") $c[\"format\"] } END { print s }' '%s'", \
                                 awk_cols(sprintf('-v d=%s -v l=%d', dev, lost)), cases))
# the same among the 8-, 6- and 4-bit formats and e8m0: "" when none was computed
narrow_list(lost) = system(sprintf("%s$c[\"device\"] == d && $c[\"case\"] == \"1+0.0001\" && $c[\"format\"] ~ /^e/ { n++; k += (($c[\"result\"] == 1) == l) } END { print n ? (k == n ? \"all\" : k ? \"some\" : \"none\") : \"\" }' '%s'", \
                                   awk_cols(sprintf('-v d=%s -v l=%d', dev, lost)), cases))
if (case_u ne '') {
  stayed = case_list(1)
  moved = case_list(0)
  # the wide formats by name; the narrow ones, when all of them lose it, in a word
  all_narrow_lost = narrow_list(1) eq 'all'
  wide_only(list) = system(sprintf("echo '%s' | sed 's/ and /\\n/g' | grep -v '^e' | paste -sd '|' - | sed 's/|/ and /g'", list))
  stayed_wide = all_narrow_lost ? wide_only(stayed) : stayed
  and_narrow = all_narrow_lost ? ' (and every 8-, 6- and 4-bit format)' : ''
  claim_wide = stayed eq '' ? "1 + 0.0001 moves 1 in every format" : \
               sprintf("1 + 0.0001 = 1 in %s%s: the update is lost%s", stayed_wide, and_narrow, moved eq '' ? '' : sprintf("; %s keeps it", moved))
  claim_narrow = stayed eq '' ? "1 + 0.0001 moves 1 in every format" : sprintf("1 + 0.0001 = 1 in %s", stayed_wide)
} else {
  claim_wide = sprintf("1 + u = 1 for u up to %s in fp16, %s in bf16, %s in fp32", \
                       pow2_text(lost_max[idx('fp16')]), pow2_text(lost_max[idx('bf16')]), pow2_text(lost_max[idx('fp32')]))
  claim_narrow = sprintf("1 + u = 1 for u up to %s in fp16", pow2_text(lost_max[idx('fp16')]))
}

is(s) = strcol("device") eq dev && strcol("format") eq s
# leg_rows: the rows the legend strip will take (legend_strip's wrapping, repeated)
count_leg_rows = "t_ = 0; do for [k_=1:leg_n] { t_ = t_ + leg_w(k_) }; leg_rows = 1; x_ = t_ < 0.96 ? 0.5 - t_ / 2 : 0.02; do for [k_=1:leg_n] { if (x_ + leg_w(k_) > 0.99) { x_ = 0.02; leg_rows = leg_rows + 1 }; x_ = x_ + leg_w(k_) }"

footer = desc.'; '.run_of(in)
narrow_aspect = 1.45
do for [out_i=1:out_n] {
  unset label
  unset arrow
  eval out_open(dir, 'absorption', 1280, 800, out_i)
  lh = 1.6 * cur_pt / cur_h   # a line of text, as a fraction of the height
  ls_ = "with lines dt 3 lw 2 lc rgb c_ref"; lt_ = 'nothing lost (effective = intended)'; eval legend_add
  # (on a narrow page the thresholds are named here, not beside their lines)
  do for [i=1:nf] {
    ls_ = sprintf("with lines lw 2.5 dt %s lc rgb '%s'", format_dash(id[i]), format_color(id[i]))
    lt_ = (narrow || !named_beside(i)) && lost_max[i] > 0 ? sprintf("%s: u ≤ %s lost", id[i], pow2_text(lost_max[i])) : id[i]
    eval legend_add
  }
  eval count_leg_rows
  set multiplot
  foot = preset eq 'screen' ? 1.2 * lh : 0   # the footer's line
  set bmargin at screen foot + (leg_rows + 3.3) * lh
  set title title_of("1 + u in each format: the update that survives, fl(1 + u) - 1, against the intended u\nu from 2^{-30} to 1; the bottom rows mark updates lost entirely", \
                     narrow ? claim_narrow : claim_wide)
  set xlabel 'intended update u'
  set ylabel 'effective update fl(1 + u) - 1'
  set logscale xy 2
  set format x '2^{%L}'
  set format y '2^{%L}'
  set border 3   # (legend_strip unset the axes)
  set xtics nomirror 2**-30, 2**(narrow ? 6 : 2)
  set ytics nomirror 2**-32, 2**(narrow ? 8 : preset eq "slides" ? 4 : 2), 2   # none in the rows of lost updates
  set xrange [2**-30:1]
  set yrange [row_floor:2]
  eval 'set grid xtics ytics '.grid_opts
  unset key

  set arrow 1 from graph 0, first 2**-32.8 to graph 1, first 2**-32.8 nohead lw 1 lc rgb '#bbbbbb' back
  # between the two leftmost thresholds, where no line crosses
  lm32 = lost_max[idx('fp32')]
  lm16 = lost_max[idx('fp16')]
  set label 1 'lost: fl(1 + u) = 1' at first sqrt((lm32 > 0 ? lm32 : 2**-30) * (lm16 > 0 ? lm16 : 1)), \
      first 2**-32.8 offset 0, 0.7 center tc rgb c_note
  do for [i=1:nf] {
    if (lost_max[i] > 0) {
      set arrow 10 + i from first lost_max[i], graph 0 to first lost_max[i], graph 1 nohead dt 3 lw 1.5 lc rgb format_color(id[i]) back
      if (!narrow && named_beside(i)) {
        set label 10 + i sprintf("%s: u ≤ %s lost", id[i], pow2_text(lost_max[i])) \
            at first lost_max[i], graph 0.55 rotate by 90 offset -0.8, 0 center tc rgb format_color(id[i])
      }
    }
  }
  if (case_u ne '') {
    set arrow 20 from first real(case_u), graph 0.3 to first real(case_u), graph 0.95 nohead dt 1 lw 1 lc rgb c_ref back
    set label 20 'u = 0.0001' at first real(case_u), graph 0.95 offset 0.6, -0.6 left tc rgb c_note
  }

  # one plot command built as text: a dash pattern is a list, which only the command line takes
  cmd = 'plot x with lines dt 3 lw 2 lc rgb c_ref notitle'
  do for [i=1:nf] {
    st = sprintf("with lines lw 2.5 dt %s lc rgb '%s' notitle", format_dash(id[i]), format_color(id[i]))
    cmd = cmd.sprintf(", in using (column('update')):(is(id[%d]) && column('effective_update') > 0 ? column('effective_update') : 1/0) %s", i, st)
    cmd = cmd.sprintf(", in using (column('update')):(is(id[%d]) && column('effective_update') == 0 ? lost_row[%d] : 1/0) %s", i, i, st)
  }
  eval cmd
  # the narrow formats crowd the top right: a zoom on u = 2^-6 ... 1 where the
  # main panel is empty (above the fp32 line, right of its label); not on a
  # 3.5-in column, too small there
  if (!narrow && nf > 3) {
    unset arrow
    unset label
    set lmargin at screen 0.31
    set rmargin at screen 0.51
    set tmargin at screen 0.86
    set bmargin at screen 0.66
    set title 'zoom: u = 2^{-6} ... 1' offset 0, -0.6
    unset xlabel
    unset ylabel
    set xrange [2**-6:1]
    set yrange [2**-6:1.4]
    set xtics nomirror 2**-6, 4
    set ytics nomirror 2**-6, 4
    set object 1 rect from graph 0, graph 0 to graph 1, graph 1 fc rgb 'white' fs solid 1.0 border lc rgb '#bbbbbb' behind
    cmd = 'plot x with lines dt 3 lw 2 lc rgb c_ref notitle'
    do for [i=1:nf] {
      if (!named_beside(i)) {
        cmd = cmd.sprintf(", in using (column('update')):(is(id[%d]) && column('effective_update') > 0 ? column('effective_update') : 1/0) with lines lw 2.5 dt %s lc rgb '%s' notitle", \
                          i, format_dash(id[i]), format_color(id[i]))
      }
    }
    eval cmd
    unset object 1
  }
  eval legend_strip(foot + (leg_rows - 0.5) * leg_row_h(0) + 0.3 * lh)
  unset multiplot
}
unset output
