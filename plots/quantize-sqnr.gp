# plots/quantize-sqnr.gp RESULTS_DIR — the quantization error of the GPT's
# real tensors: SQNR (dB) per element format and scale rule, one point per
# tensor and a bar at the median over the tensors; per-tensor scales (none,
# Transformer Engine's max / amax) against per-block ones (1x128 fp32, MX
# FLOOR and RCEIL 1x32, NVFP4 1x16). One row per model, one column per
# kind (weights, activations, gradients); the 3.5-in print rendering, the
# largest model alone. Reads quantize_error.csv
# (halflab-bench quantize-error); writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/quantize_error.csv')
if (!file_exists(in)) {
  print sprintf("quantize-sqnr.gp: %s not found: no chart (run halflab-bench quantize-error)", in)
  exit
}
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
models = system(awk_cols('')."{ if (!($c[\"model\"] in s)) { s[$c[\"model\"]] = 1; printf \"%s \", $c[\"model\"] } }' '".in."'")
n_models = words(models)
kinds_present = system(awk_cols('')."{ s[$c[\"kind\"]] = 1 } END { n = split(\"weight activation gradient\", K, \" \"); " . \
  "for (i = 1; i <= n; i++) if (K[i] in s) printf \"%s \", K[i] }' '".in."'")
n_kinds = words(kinds_present)
array fmt[5] = ['e4m3', 'e5m2', 'e2m3', 'e3m2', 'e2m1']
array fmt_label[5] = ["fp8\ne4m3", "fp8\ne5m2", "fp6\ne2m3", "fp6\ne3m2", "fp4\ne2m1"]
array rule[6] = ['none', 'tensor', 'block-fp32', 'mx-floor', 'mx-rceil', 'nvfp4']
array rule_title[6] = ['no scale', 'per tensor: max/amax (TE)', 'block 1x128, fp32 scale (DeepSeek-V3)', 'MX 1x32, E8M0 FLOOR', \
                       'MX 1x32, E8M0 RCEIL', 'NVFP4 1x16, E4M3 scale + fp32']
array rule_short[6] = ['none', 'tensor', '1x128', 'MX FLOOR', 'MX RCEIL', 'NVFP4']
array rule_pt[6] = [1, 6, 4, 8, 10, 12]
array rule_color[6] = [cat[3], '#000000', cat[7], cat[4], cat[6], cat[1]]
pscale = preset eq 'slides' ? 1.5 : 1.0   # points beside the slides' larger text
xpos(fi, r) = fi + (r - 3.5) * 0.14
# one row per tensor of model m, kind k and rule r: its format's index and its SQNR; with med=1 the
# median over the tensors per format instead
rows(m, k, r, med) = sprintf("< %s$c[\"model\"] == m && $c[\"kind\"] == k && $c[\"rule\"] == r && $c[\"sqnr_db\"] != \"\" { " . \
  "i = index(\"e4m3 e5m2 e2m3 e3m2 e2m1\", $c[\"format\"]); fi = (i + 4) / 5; if (!med) print fi, $c[\"sqnr_db\"]; else v[fi, ++n[fi]] = $c[\"sqnr_db\"] + 0 } " . \
  "END { if (!med) exit; for (f = 1; f <= 5; f++) { if (!n[f]) continue; for (a = 1; a <= n[f]; a++) for (b = a + 1; b <= n[f]; b++) " . \
  "if (v[f, b] < v[f, a]) { t = v[f, a]; v[f, a] = v[f, b]; v[f, b] = t }; " . \
  "print f, n[f] %% 2 ? v[f, (n[f] + 1) / 2] : (v[f, n[f] / 2] + v[f, n[f] / 2 + 1]) / 2 } }' '%s'", \
  awk_cols(sprintf('-v m=%s -v k=%s -v r=%s -v med=%d', m, k, r, med)), in)
# the claim: the largest model's activations (else the first kind), e2m1: per-tensor against NVFP4 medians
claim_m = word(models, n_models)
claim_k = strstrt(kinds_present, 'activation') > 0 ? 'activation' : word(kinds_present, 1)
median_of(r, f) = real(system(sprintf("%s | awk '$1 == %d { print $2 }'", rows(claim_m, claim_k, r, 1)[3:], f)))
claim = sprintf("%s GPT's %ss in fp4 e2m1: median SQNR %.1f dB with one scale per tensor, %.1f dB with NVFP4's blocks", \
                claim_m, claim_k, median_of('tensor', 5), median_of('nvfp4', 5))

set datafile separator whitespace
footer = footer_of(in)
narrow_aspect = 1.6
do for [out_i=1:out_n] {
  unset label
  unset arrow
  eval out_open(dir, 'quantize-sqnr', 1600, 1000, out_i)
  do for [r=1:6] { ls_ = sprintf("with points pt %d ps %.2f lw 1.5 lc rgb '%s'", rule_pt[r], 1.4 * pscale, rule_color[r]); lt_ = narrow ? rule_short[r] : rule_title[r]; eval legend_add }
  ls_ = "with lines lw 4 lc rgb '#000000'"; lt_ = 'median over the tensors'; eval legend_add
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  first_model = narrow ? n_models : 1   # a column holds the largest model's panels alone
  g_cols = narrow ? 1 : n_kinds
  g_rows = narrow ? n_kinds : n_models
  g_T = 1 - text_h(preset eq 'screen' ? 5.0 : 3.6)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(3.4)
  g_L = narrow ? 0.16 : 6.5 * cur_pt / cur_w
  g_R = 0.98
  g_hs = 0.05
  g_vs = text_h(5.0)
  set multiplot title title_of("Quantization error of the GPT's tensors: SQNR = 10 log_{10}(sum x^2 / sum (q - x)^2), higher is better\none point per tensor; per-tensor scales against per-block ones; software quantization on the CPU (emulated)", claim)
  unset key
  set xrange [0.4:5.6]
  set yrange [-2:*]
  set xtics () nomirror
  do for [i=1:5] { set xtics add (fmt_label[i] i) }
  eval 'set grid ytics '.grid_opts
  do for [mi=first_model:n_models] {
    m = word(models, mi)
    do for [ki=1:n_kinds] {
      k = word(kinds_present, ki)
      eval narrow ? cell(1, ki) : cell(ki, mi)
      set title sprintf("%s GPT: %ss", m, k)
      set ylabel (narrow || ki == 1) ? 'SQNR, dB' : ''
      plot for [r=1:6] rows(m, k, rule[r], 0) using (xpos($1, r)):2 with points pt rule_pt[r] ps 1.1 * pscale lw 1.5 lc rgb rule_color[r] notitle, \
           for [r=1:6] rows(m, k, rule[r], 1) using (xpos($1, r)):2:(0.07) with xerrorbars pt -1 lw 4 lc rgb rule_color[r] notitle
      unset label 9999
    }
  }
  unset title
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
