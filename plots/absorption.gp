# plots/absorption.gp RESULTS_DIR — what is left of an update u added to 1:
# the effective update fl(1 + u) - 1 against the intended u, on log-log axes,
# for fp32, fp16 and bf16. Updates that vanish entirely are drawn on the rows
# at the bottom; a dotted line marks the largest u each format loses, and a
# grey one u = 0.0001 (the classic 1 + 0.0001, from absorption.csv). Reads
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

array id[3] = ["fp32", "fp16", "bf16"]
array color[3] = [c_fp32, c_fp16, c_bf16]
array dash[3] = [1, 2, 5]
array lost_row[3] = [2**-33.5, 2**-34.5, 2**-35.5]
# the largest update each format loses entirely (0: none in the sweep)
array lost_max[3]
do for [i=1:3] {
  lost_max[i] = real(system(awk_cols(sprintf('-v d=%s -v f=%s', dev, id[i])). \
      "$c[\"device\"] == d && $c[\"format\"] == f && $c[\"effective_update\"] == 0 && $c[\"update\"] + 0 > m { m = $c[\"update\"] + 0 } END { printf \"%.17g\\n\", m + 0 }' '".in."'"))
}
# a power of two as 2^{e}, anything else as %.2g
pow2_text(x) = abs(log(x) / log(2) - floor(log(x) / log(2) + 0.5)) < 1e-9 ? sprintf("2^{%d}", floor(log(x) / log(2) + 0.5)) : sprintf("%.2g", x)

# The claim: 1 + 0.0001 per format (absorption.csv), else the sweep's thresholds
cases = as_written(dir.'/absorption.csv')
case_u = file_exists(cases) ? system(sprintf("%s$c[\"device\"] == d && $c[\"case\"] == \"1+0.0001\" { print $c[\"b\"]; exit }' '%s'", awk_cols('-v d='.dev), cases)) : ''
# the formats in which 1 + 0.0001 stayed 1, and those it moved
case_list(lost) = system(sprintf("%s$c[\"device\"] == d && $c[\"case\"] == \"1+0.0001\" && (($c[\"result\"] == 1) == l) { s = s (s == \"\" ? \"\" : \" and \") $c[\"format\"] } END { print s }' '%s'", \
                                 awk_cols(sprintf('-v d=%s -v l=%d', dev, lost)), cases))
if (case_u ne '') {
  stayed = case_list(1)
  moved = case_list(0)
  claim_wide = stayed eq '' ? "1 + 0.0001 moves 1 in every format" : \
               sprintf("1 + 0.0001 = 1 in %s: the update is lost%s", stayed, moved eq '' ? '' : sprintf("; %s keeps it", moved))
  claim_narrow = stayed eq '' ? "1 + 0.0001 moves 1 in every format" : sprintf("1 + 0.0001 = 1 in %s", stayed)
} else {
  claim_wide = sprintf("1 + u = 1 for u up to %s in fp16, %s in bf16, %s in fp32", \
                       pow2_text(lost_max[2]), pow2_text(lost_max[3]), pow2_text(lost_max[1]))
  claim_narrow = sprintf("1 + u = 1 for u up to %s in fp16", pow2_text(lost_max[2]))
}

is(s) = strcol("device") eq dev && strcol("format") eq s
# leg_rows: the rows the legend strip will take (legend_strip's wrapping, repeated)
count_leg_rows = "t_ = 0; do for [k_=1:leg_n] { t_ = t_ + leg_w(k_) }; leg_rows = 1; x_ = t_ < 0.96 ? 0.5 - t_ / 2 : 0.02; do for [k_=1:leg_n] { if (x_ + leg_w(k_) > 0.99) { x_ = 0.02; leg_rows = leg_rows + 1 }; x_ = x_ + leg_w(k_) }"

footer = desc.'; '.run_of(in)
narrow_aspect = 0.95
do for [out_i=1:out_n] {
  unset label
  unset arrow
  eval out_open(dir, 'absorption', 1280, 800, out_i)
  lh = 1.6 * cur_pt / cur_h   # a line of text, as a fraction of the height
  ls_ = "with lines dt 3 lw 2 lc rgb c_ref"; lt_ = 'nothing lost (effective = intended)'; eval legend_add
  # (on a narrow page the thresholds are named here, not beside their lines)
  do for [i=1:3] {
    ls_ = sprintf("with lines lw 2.5 dt %d lc rgb '%s'", dash[i], color[i])
    lt_ = narrow && lost_max[i] > 0 ? sprintf("%s: u ≤ %s lost", id[i], pow2_text(lost_max[i])) : id[i]
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
  set yrange [2**-36.3:2]
  eval 'set grid xtics ytics '.grid_opts
  unset key

  set arrow 1 from graph 0, first 2**-32.8 to graph 1, first 2**-32.8 nohead lw 1 lc rgb '#bbbbbb' back
  # between the two leftmost thresholds, where no line crosses
  set label 1 'lost: fl(1 + u) = 1' at first sqrt((lost_max[1] > 0 ? lost_max[1] : 2**-30) * (lost_max[2] > 0 ? lost_max[2] : 1)), \
      first 2**-32.8 offset 0, 0.7 center tc rgb c_note
  do for [i=1:3] {
    if (lost_max[i] > 0) {
      set arrow 10 + i from first lost_max[i], graph 0 to first lost_max[i], graph 1 nohead dt 3 lw 1.5 lc rgb color[i] back
      if (!narrow) {
        set label 10 + i sprintf("%s: u ≤ %s lost", id[i], pow2_text(lost_max[i])) \
            at first lost_max[i], graph 0.55 rotate by 90 offset -0.8, 0 center tc rgb color[i]
      }
    }
  }
  if (case_u ne '') {
    set arrow 20 from first real(case_u), graph 0.3 to first real(case_u), graph 0.95 nohead dt 1 lw 1 lc rgb c_ref back
    set label 20 'u = 0.0001' at first real(case_u), graph 0.95 offset 0.6, -0.6 left tc rgb c_note
  }

  plot x with lines dt 3 lw 2 lc rgb c_ref notitle, \
       for [i=1:3] in using (column("update")):(is(id[i]) && column("effective_update") > 0 ? column("effective_update") : 1/0) \
         with lines lw 2.5 dt dash[i] lc rgb color[i] notitle, \
       for [i=1:3] in using (column("update")):(is(id[i]) && column("effective_update") == 0 ? lost_row[i] : 1/0) \
         with lines lw 2.5 dt dash[i] lc rgb color[i] notitle
  eval legend_strip(foot + (leg_rows - 0.5) * leg_row_h(0) + 0.3 * lh)
  unset multiplot
}
unset output
