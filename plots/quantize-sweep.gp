# plots/quantize-sweep.gp RESULTS_DIR — the scale sweep: what share of a
# real tensor's values each format stores as zero, subnormal, normal or
# clipped, as the per-tensor scale moves over powers of two around
# max / amax (x = 0: the tensor's amax lands on the format's max). One row
# per kind (weights, activations, gradients: per kind the tensor with the
# largest amax / rms), one column per element format, stacked shares. The
# model: the last one the CSV names (the larger, small, where both ran).
# Reads quantize_sweep.csv (halflab-bench quantize-error); writes the
# preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/quantize_sweep.csv')
if (!file_exists(in)) {
  print sprintf("quantize-sweep.gp: %s not found: no chart (run halflab-bench quantize-error)", in)
  exit
}
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
model = system(awk_cols('')."{ m = $c[\"model\"] } END { printf \"%s\", m }' '".in."'")
array fmt[5] = ['e4m3', 'e5m2', 'e2m3', 'e3m2', 'e2m1']
array fmt_title[5] = ['fp8 e4m3 (max 448)', 'fp8 e5m2 (max 57344)', 'fp6 e2m3 (max 7.5)', 'fp6 e3m2 (max 28)', 'fp4 e2m1 (max 6)']
array fmt_short[5] = ['e4m3', 'e5m2', 'e2m3', 'e3m2', 'e2m1']
array kinds[3] = ['weight', 'activation', 'gradient']
kinds_present = system(awk_cols('-v m='.model)."$c[\"model\"] == m && !($c[\"kind\"] in s) { s[$c[\"kind\"]] = 1 } END { " . \
  "n = split(\"weight activation gradient\", K, \" \"); for (i = 1; i <= n; i++) if (K[i] in s) printf \"%s \", K[i] }' '".in."'")
n_kinds = words(kinds_present)
short_name(t) = strstrt(t, 'transformer.') == 1 ? t[13:] : t
tensor_of(k) = system(awk_cols('-v m='.model.' -v k='.k)."$c[\"model\"] == m && $c[\"kind\"] == k { printf \"%s\", $c[\"tensor\"]; exit }' '".in."'")
# the zone colours: dark zero, light subnormal, pale normal, dark clipped: apart in grey print too (no hatching:
# a pattern's lines are thinner than print allows)
c_zero = cat[6]
c_sub = cat[2]
c_normal = cat[5]
c_clip = cat[4]
rows(k, f) = sprintf("< %s$c[\"model\"] == m && $c[\"kind\"] == k && $c[\"format\"] == f { print $c[\"log2_scale_rel\"], $c[\"zero_share\"], $c[\"subnormal_share\"], $c[\"normal_share\"], $c[\"clipped_share\"] }' '%s'", \
                     awk_cols(sprintf('-v m=%s -v k=%s -v f=%s', model, k, f)), in)
# the claim: e2m1's and e4m3's zero share at x = 0 for the gradient (else the first kind)
claim_kind = strstrt(kinds_present, 'gradient') > 0 ? 'gradient' : word(kinds_present, 1)
share_at(k, f, col) = real(system(awk_cols(sprintf('-v m=%s -v k=%s -v f=%s', model, k, f))."$c[\"model\"] == m && $c[\"kind\"] == k && $c[\"format\"] == f && $c[\"log2_scale_rel\"] == 0 { print $c[\"".col."\"] + 0 }' '".in."'"))
zero_e2m1 = 100 * share_at(claim_kind, 'e2m1', 'zero_share')
zero_e4m3 = 100 * share_at(claim_kind, 'e4m3', 'zero_share')
claim = sprintf("%s's %s at scale max/amax: %.0f%% of values zero in fp4 e2m1, %.1f%% in fp8 e4m3", model, claim_kind, zero_e2m1, zero_e4m3)
claim_n = sprintf("%s %ss: %.0f%% zero in e2m1, %.1f%% in e4m3", model, claim_kind, zero_e2m1, zero_e4m3)

set datafile separator whitespace
footer = footer_of(in)
narrow_aspect = 1.4
do for [out_i=1:out_n] {
  unset label
  unset arrow
  eval out_open(dir, 'quantize-sweep', 1600, 1000, out_i)
  ls_ = sprintf("with filledcurves lc rgb '%s' fs solid 1.0", c_zero); lt_ = 'zero'; eval legend_add
  ls_ = sprintf("with filledcurves lc rgb '%s' fs solid 1.0", c_sub); lt_ = 'subnormal'; eval legend_add
  ls_ = sprintf("with filledcurves lc rgb '%s' fs solid 1.0", c_normal); lt_ = 'normal'; eval legend_add
  ls_ = sprintf("with filledcurves lc rgb '%s' fs solid 1.0", c_clip); lt_ = 'clipped (saturated to max)'; eval legend_add
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  # the 3.5-in print rendering: one kind (the claim's), its five formats one above the other
  g_cols = narrow ? 1 : 5
  g_rows = narrow ? 5 : n_kinds
  g_T = 1 - text_h(preset eq 'screen' ? 5.0 : 3.6)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(3.8)
  g_L = narrow ? 0.14 : 7.0 * cur_pt / cur_w
  g_R = 0.98
  g_hs = 0.025
  g_vs = text_h(narrow ? 2.4 : 2.8)
  set multiplot title title_of(sprintf("The scale sweep on the %s GPT's tensors: each value stored as zero, subnormal, normal or clipped\nper-tensor scale (max / amax) x 2^x; software quantization on the CPU (emulated)", model), narrow ? claim_n : claim)
  unset key
  set yrange [0:1]
  set xrange [-32:8]
  set style fill solid 1.0 noborder
  do for [ki=(narrow ? 1 : 1):(narrow ? 1 : n_kinds)] {
    k = narrow ? claim_kind : word(kinds_present, ki)
    t = tensor_of(k)
    do for [fi=1:5] {
      eval narrow ? cell(1, fi) : cell(fi, ki)
      last_row = narrow ? fi == 5 : ki == n_kinds
      set title narrow ? '' : (ki == 1 ? fmt_title[fi] : '')
      if (narrow) { set ylabel fmt_short[fi] } else { set ylabel fi == 1 ? sprintf("%ss\n%s", k, short_name(t)) : '' noenhanced }
      set xlabel last_row && (narrow || fi == 3) ? (narrow ? 'x = log_2(scale / (max/amax))' : 'x = log_2(scale / (max/amax)): above 0 the largest values clip, below it the smallest flush') : ''
      set xtics -24, 8, 8 nomirror
      if (!last_row) { set format x '' } else { set format x '%g' }
      set ytics 0, 0.5, 1 nomirror
      if (fi > 1 && !narrow) { set format y '' } else { set format y '%.1f' }
      set arrow 1 from 0, graph 0 to 0, graph 1 nohead lw 1.5 dt 2 lc rgb '#000000' front
      plot rows(k, fmt[fi]) using 1:(0):2 with filledcurves lc rgb c_zero notitle, \
           '' using 1:2:($2 + $3) with filledcurves lc rgb c_sub notitle, \
           '' using 1:($2 + $3):($2 + $3 + $4) with filledcurves lc rgb c_normal notitle, \
           '' using 1:($2 + $3 + $4):($2 + $3 + $4 + $5) with filledcurves lc rgb c_clip notitle
      unset label 9999
      unset arrow 1
    }
  }
  unset title
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
