# plots/quantize-floor-rceil.gp RESULTS_DIR — MX's two E8M0 scale rules on
# the GPT's tensors, per element format (MXFP8 e4m3 and e5m2, MXFP6 e2m3
# and e3m2, MXFP4 e2m1): top, the share of 1x32 blocks whose maximum is
# clipped under FLOOR (bars: every tensor's blocks pooled; points: weights,
# activations and gradients apart) and under RCEIL, with the share a
# log-uniform mantissa of the block maximum would give FLOOR (Benford's
# law); bottom, what FLOOR's clipping costs: SQNR under RCEIL minus SQNR
# under FLOOR, the mean over the tensors (and per kind). One column per
# model (the 3.5-in print rendering: the largest alone). Reads quantize_error.csv (halflab-bench quantize-error); writes the
# preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/quantize_error.csv')
if (!file_exists(in)) {
  print sprintf("quantize-floor-rceil.gp: %s not found: no chart (run halflab-bench quantize-error)", in)
  exit
}
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
models = system(awk_cols('')."{ if (!($c[\"model\"] in s)) { s[$c[\"model\"]] = 1; printf \"%s \", $c[\"model\"] } }' '".in."'")
n_models = words(models)
array fmt[5] = ['e4m3', 'e5m2', 'e2m3', 'e3m2', 'e2m1']
array fmt_label[5] = ["MXFP8\ne4m3", "MXFP8\ne5m2", "MXFP6\ne2m3", "MXFP6\ne3m2", "MXFP4\ne2m1"]
array fmt_short[5] = ['e4m3', 'e5m2', 'e2m3', 'e3m2', 'e2m1']
# FLOOR clips a block whose maximum's significand f passes max / 2^emax: 1.75 (e4m3, e5m2, e3m2), 1.875
# (e2m3), 1.5 (e2m1); a log-uniform f (Benford) gives log2(2 / that)
array benford[5] = [log(2 / 1.75) / log(2), log(2 / 1.75) / log(2), log(2 / 1.875) / log(2), log(2 / 1.75) / log(2), \
                    log(2 / 1.5) / log(2)]
array kinds[3] = ['weight', 'activation', 'gradient']
array kind_pt[3] = [7, 5, 9]
array kind_color[3] = [cat[6], cat[1], cat[4]]
c_floor = cat[3]
c_rceil = '#000000'

# per model and format: blocks clipped pooled over the tensors, FLOOR and RCEIL; per kind FLOOR's;
# the mean SQNR gain of RCEIL over FLOOR in dB, over all tensors and per kind. Columns:
# 1 format index, 2 floor, 3 rceil, 4-6 floor per kind, 7 gain, 8-10 gain per kind
table(m) = "< ".awk_cols("-v m=".m)."$c[\"model\"] == m && ($c[\"rule\"] == \"mx-floor\" || $c[\"rule\"] == \"mx-rceil\") { " . \
  "f = $c[\"format\"]; k = $c[\"kind\"]; r = $c[\"rule\"]; b = $c[\"blocks\"] * $c[\"blocks_clipped_share\"]; " . \
  "clip[f, r] += b; blocks[f, r] += $c[\"blocks\"]; kclip[f, r, k] += b; kblocks[f, r, k] += $c[\"blocks\"]; " . \
  "key = f SUBSEP k SUBSEP $c[\"tensor\"]; q[key, r] = $c[\"sqnr_db\"]; seen[key] = 1 } " . \
  "END { for (key in seen) { split(key, p, SUBSEP); if (q[key, \"mx-floor\"] == \"\" || q[key, \"mx-rceil\"] == \"\") continue; " . \
  "g = q[key, \"mx-rceil\"] - q[key, \"mx-floor\"]; gs[p[1]] += g; gn[p[1]]++; kg[p[1], p[2]] += g; kn[p[1], p[2]]++ } " . \
  "n = split(\"e4m3 e5m2 e2m3 e3m2 e2m1\", F, \" \"); split(\"weight activation gradient\", K, \" \"); " . \
  "for (i = 1; i <= n; i++) { f = F[i]; if (!blocks[f, \"mx-floor\"]) continue; " . \
  "printf \"%d %.6g %.6g\", i, clip[f, \"mx-floor\"] / blocks[f, \"mx-floor\"], clip[f, \"mx-rceil\"] / blocks[f, \"mx-rceil\"]; " . \
  "for (j = 1; j <= 3; j++) printf \" %s\", kblocks[f, \"mx-floor\", K[j]] ? sprintf(\"%.6g\", kclip[f, \"mx-floor\", K[j]] / kblocks[f, \"mx-floor\", K[j]]) : \"NaN\"; " . \
  "printf \" %s\", gn[f] ? sprintf(\"%.6g\", gs[f] / gn[f]) : \"NaN\"; " . \
  "for (j = 1; j <= 3; j++) printf \" %s\", kn[f, K[j]] ? sprintf(\"%.6g\", kg[f, K[j]] / kn[f, K[j]]) : \"NaN\"; print \"\" } }' '".in."'"

# the claim: FLOOR's MXFP4 share (every model's blocks pooled) and RCEIL's largest share
claims = system(awk_cols('')."($c[\"rule\"] == \"mx-floor\" || $c[\"rule\"] == \"mx-rceil\") { b = $c[\"blocks\"] * $c[\"blocks_clipped_share\"]; " . \
  "if ($c[\"format\"] == \"e2m1\") { clip[$c[\"rule\"]] += b; n[$c[\"rule\"]] += $c[\"blocks\"] } " . \
  "if ($c[\"rule\"] == \"mx-rceil\" && $c[\"blocks_clipped_share\"] + 0 > rmax) rmax = $c[\"blocks_clipped_share\"] + 0 } " . \
  "END { if (!n[\"mx-floor\"]) exit; printf \"FLOOR clips the maximum of %.1f%% of MXFP4 blocks, RCEIL %s\", " . \
  "100 * clip[\"mx-floor\"] / n[\"mx-floor\"], (rmax > 0 ? sprintf(\"at most %.2g%% of the blocks of any tensor\", 100 * rmax) : \"none\") }' '".in."'")
claim = claims eq '' ? 'MX FLOOR against RCEIL' : claims
claim_n = claims eq '' ? claim : 'MX FLOOR against RCEIL: blocks clipped' 

set datafile separator whitespace
footer = footer_of(in)
narrow_aspect = 1.6
set style fill solid 1.0 border rgb '#000000'
do for [out_i=1:out_n] {
  unset label
  unset arrow
  eval out_open(dir, 'quantize-floor-rceil', 1600, 1000, out_i)
  ls_ = sprintf("with boxes lc rgb '%s'", c_floor); lt_ = 'FLOOR (OCP MX): every tensor'; eval legend_add
  ls_ = sprintf("with boxes fs solid 1.0 border rgb '%s' lc rgb '#ffffff'", c_rceil); lt_ = 'RCEIL (rounded up)'; eval legend_add
  do for [k=1:3] { ls_ = sprintf("with points pt %d ps 1.8 lc rgb '%s'", kind_pt[k], kind_color[k]); lt_ = kinds[k].'s'; eval legend_add }
  ls_ = "with lines dt 2 lw 3 lc rgb c_ref"; lt_ = narrow ? 'Benford' : 'FLOOR if the maximum''s significand were log-uniform'; eval legend_add
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  first_model = narrow ? n_models : 1   # a column holds the largest model's panels alone
  g_cols = narrow ? 1 : n_models
  g_rows = 2
  g_T = 1 - text_h(preset eq 'screen' ? 5.0 : 3.6)
  g_B = pad + leg_rows * leg_row_h(0) + text_h(narrow ? 2.6 : 3.4)
  g_L = narrow ? 0.2 : 8.0 * cur_pt / cur_w
  g_R = 0.98
  g_hs = 0.07
  g_vs = text_h(narrow ? 3.4 : 4.4)
  set multiplot title title_of("MX block scales on the GPT's tensors: FLOOR (OCP MX v1.0) against RCEIL\nsoftware quantization on the CPU (emulated), 1x32 blocks along each tensor's last dimension", narrow ? claim_n : claim)
  set xrange [0.4:5.6]
  unset key
  set boxwidth 0.36
  do for [mi=first_model:n_models] {
    m = word(models, mi)
    eval cell(narrow ? 1 : mi, 1)
    set title sprintf(narrow ? "%s: blocks clipped" : "%s GPT: blocks whose maximum clips", m)
    set ylabel mi == first_model ? 'share of blocks' : ''
    set yrange [0:*]
    set format y '%.0f%%'
    set xtics () nomirror
    do for [i=1:5] { set xtics add (narrow ? fmt_short[i] : fmt_label[i] i) }
    eval 'set grid ytics '.grid_opts
    plot table(m) using ($1 - 0.19):($2 * 100) with boxes lc rgb c_floor notitle, \
         '' using ($1 + 0.19):($3 * 100) with boxes fs solid 1.0 border rgb c_rceil lc rgb '#ffffff' notitle, \
         '' using ($1 + 0.19):($3 * 100):(sprintf('%.2g%%', $3 * 100)) with labels offset 0, 0.8 tc rgb c_rceil notitle, \
         for [k=1:3] '' using ($1 - 0.19 + (k - 2) * 0.09):(column(3 + k) * 100) with points pt kind_pt[k] ps 1.8 lc rgb kind_color[k] notitle, \
         '' using ($1 - 0.19):(100 * benford[int($1)]):(0.19) with xerrorbars pt -1 lw 3 dt 2 lc rgb c_ref notitle
    unset label 9999
    eval cell(narrow ? 1 : mi, 2)
    set title sprintf(narrow ? "%s: RCEIL's gain" : "%s GPT: what FLOOR's clipping costs", m)
    set ylabel mi == first_model ? (narrow ? 'dB' : 'SQNR(RCEIL) - SQNR(FLOOR), dB') : ''
    set yrange [*:*]
    set format y '%g'
    set xzeroaxis lt 1 lc rgb c_ref
    plot table(m) using 1:7 with boxes lc rgb c_floor notitle, \
         for [k=1:3] '' using ($1 + (k - 2) * 0.09):(column(7 + k)) with points pt kind_pt[k] ps 1.8 lc rgb kind_color[k] notitle
    unset xzeroaxis
  }
  unset title
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
