# plots/quantize-gemm.gp RESULTS_DIR — the GPT's linear layers as GEMMs
# with both operands quantized: ||Y - Y_fp64||_F / ||Y_fp64||_F per element
# format and scale rule side by side (e4m3 and e5m2 per tensor, e4m3 in
# 1x128 / 128x128 blocks, MXFP8/6/4 RCEIL, MXFP4 FLOOR, NVFP4), one point
# per layer (its shape: which linear layer) and a bar at the median over
# the layers; one panel per model (the 3.5-in print rendering: the largest
# model alone). The colour is the element format's (style.gp). The
# unquantized fp32 product, near 1e-7, is in the title line only, so that
# the axis resolves the formats. Reads quantize_gemm.csv (halflab-bench
# quantize-error); writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/quantize_gemm.csv')
if (!file_exists(in)) {
  print sprintf("quantize-gemm.gp: %s not found: no chart (halflab-bench quantize-error with weights and activations)", in)
  exit
}
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
models = system(awk_cols('')."{ if (!($c[\"model\"] in s)) { s[$c[\"model\"]] = 1; printf \"%s \", $c[\"model\"] } }' '".in."'")
n_models = words(models)
n_rec = 11
array rec_fmt[11] = ['fp32', 'e4m3', 'e5m2', 'e4m3', 'e4m3', 'e5m2', 'e2m3', 'e3m2', 'e2m1', 'e2m1', 'e2m1']
array rec_rule[11] = ['none', 'tensor', 'tensor', 'block-fp32', 'mx-rceil', 'mx-rceil', 'mx-rceil', 'mx-rceil', \
                      'mx-rceil', 'mx-floor', 'nvfp4']
array rec_label[11] = ["fp32\nas is", "e4m3\ntensor", "e5m2\ntensor", "e4m3\n1x128\n128x128", "MX\ne4m3", \
                       "MX\ne5m2", "MX\ne2m3", "MX\ne3m2", "MX\ne2m1", "MX\ne2m1\nFLOOR", "NVFP4\ne2m1"]
array rec_short[11] = ['fp32', 'e4m3 tensor', 'e5m2 tensor', 'e4m3 1x128', 'MXFP8 e4m3', 'MXFP8 e5m2', 'MXFP6 e2m3', \
                      'MXFP6 e3m2', 'MXFP4 RCEIL', 'MXFP4 FLOOR', 'NVFP4']
# the layer kinds (the name without its block), each a point shape
array lay[5] = ['attn.c_attn', 'attn.c_proj', 'mlp.c_fc', 'mlp.c_proj', 'lm_head']
array lay_title[5] = ['attention in (q, k, v)', 'attention out', 'MLP up', 'MLP down', 'head (tied to the embedding)']
array lay_pt[5] = [6, 4, 8, 10, 12]
# the element format's colour (style.gp's c_fp32, c_fp8, c_fp6, c_fp4) of recipe ri, as an integer
rec_color_int(ri) = ri == 1 ? 0x000000 : ri <= 6 ? 0x009E73 : ri <= 8 ? 0x8C510A : 0x7B3294
pscale = preset eq 'slides' ? 1.5 : 1.0
xpos(ri, li) = ri + (li - 3) * 0.13
# per recipe (its index) the rel_err of model m's layers of kind l; med=1: the median over every layer per recipe
rec_index = "i = 0; for (r = 1; r <= nr; r++) if (F[r] == $c[\"format\"] && R[r] == $c[\"rule\"]) i = r; if (!i) next; "
rec_arrays = sprintf("BEGIN { nr = split(\"%s\", F, \" \"); split(\"%s\", R, \" \") } ", \
  'fp32 e4m3 e5m2 e4m3 e4m3 e5m2 e2m3 e3m2 e2m1 e2m1 e2m1', \
  'none tensor tensor block-fp32 mx-rceil mx-rceil mx-rceil mx-rceil mx-rceil mx-floor nvfp4')
rows(m, l, med) = sprintf("< %s%s$c[\"model\"] == m { %s kind = $c[\"layer\"]; sub(/^transformer\\.h\\.[0-9]+\\./, \"\", kind); " . \
  "if (!med && kind == l) print i, $c[\"rel_err\"]; if (med) v[i, ++n[i]] = $c[\"rel_err\"] + 0 } " . \
  "END { if (!med) exit; for (f = 1; f <= nr; f++) { if (!n[f]) continue; for (a = 1; a <= n[f]; a++) for (b = a + 1; b <= n[f]; b++) " . \
  "if (v[f, b] < v[f, a]) { t = v[f, a]; v[f, a] = v[f, b]; v[f, b] = t }; " . \
  "print f, n[f] %% 2 ? v[f, (n[f] + 1) / 2] : (v[f, n[f] / 2] + v[f, n[f] / 2 + 1]) / 2 } }' '%s'", \
  awk_cols(sprintf('-v m=%s -v l=%s -v med=%d', m, l, med)), rec_arrays, rec_index, in)
# the claim: the largest model's medians, per-tensor e4m3 against MXFP4 and NVFP4
claim_m = word(models, n_models)
median_of(ri) = real(system(sprintf("%s | awk '$1 == %d { print $2 }'", rows(claim_m, 'x', 1)[3:], ri)))
claim = sprintf("%s GPT medians: e4m3 %.2g%%, MXFP4 %.2g%%, NVFP4 %.2g%%", claim_m, 100 * median_of(2), 100 * median_of(9), \
                100 * median_of(11))
fp32_note = sprintf("fp32 operands as given: %.0e (off the axis)", median_of(1))

set datafile separator whitespace
footer = footer_of(in)
narrow_aspect = 1.5
do for [out_i=1:out_n] {
  unset label
  unset arrow
  eval out_open(dir, 'quantize-gemm', 1600, 1000, out_i)
  do for [li=1:5] { ls_ = sprintf("with points pt %d ps %.2f lw 1.5 lc rgb '%s'", lay_pt[li], 1.4 * pscale, c_note); lt_ = lay_title[li]; eval legend_add }
  ls_ = "with lines lw 2.5 lc rgb '#000000'"; lt_ = 'median over the layers'; eval legend_add
  eval legend_count
  pad = preset eq 'screen' ? text_h(1.2) : text_h(0.4)
  first_model = narrow ? n_models : 1
  g_cols = narrow ? 1 : n_models
  g_rows = 1
  g_T = 1 - text_h(preset eq 'screen' ? 6.2 : 3.6)
  g_B = pad + leg_rows * leg_row_h(0) + (narrow ? text_h(7.5) : text_h(5.0))
  g_L = narrow ? 0.18 : 6.5 * cur_pt / cur_w
  g_R = 0.98
  g_hs = 0.05
  g_vs = text_h(5.0)
  set multiplot title title_of("GPT linear layers Y = X W^T with X and W quantized: ||Y - Y_{fp64}||_F / ||Y_{fp64}||_F, lower is better\nblocks along k for both operands, decoded and summed in fp32; MX: 1x32 blocks, E8M0 scales rounded up (RCEIL) unless FLOOR\n".fp32_note."; software quantization on the CPU (emulated)", claim)
  unset key
  set xrange [1.4:n_rec + 0.6]   # fp32 (recipe 1, about 1e-7) in the claim, not on the axis
  set logscale y
  set yrange [*:*]
  set autoscale yfix
  set offsets 0, 0, graph 0.08, graph 0.08
  set ytics ('0.5%%' 0.005, '1%%' 0.01, '2%%' 0.02, '5%%' 0.05, '10%%' 0.1, '20%%' 0.2, '50%%' 0.5, '100%%' 1)
  set xtics () nomirror
  do for [i=2:n_rec] { if (narrow) { set xtics add (rec_short[i] i) } else { set xtics add (rec_label[i] i) } }
  if (narrow) { set xtics rotate by 90 right } else { set xtics norotate }
  eval 'set grid ytics '.grid_opts
  do for [mi=first_model:n_models] {
    m = word(models, mi)
    eval cell(mi - first_model + 1, 1)
    set title sprintf("%s GPT", m)
    set ylabel (narrow || mi == 1) ? 'error of Y (relative)' : ''
    plot for [li=1:5] rows(m, lay[li], 0) using (xpos($1, li)):2:(rec_color_int($1)) with points pt lay_pt[li] ps 1.5 * pscale lw 1.5 lc rgb variable notitle, \
         rows(m, 'x', 1) using 1:2:(0.3) with xerrorbars pt -1 lw 2.5 lc rgb '#000000' notitle
  }
  unset title
  eval legend_strip(pad + (leg_rows - 0.5) * leg_row_h(0))
  unset multiplot
}
unset output
