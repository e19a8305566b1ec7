# plots/style.gp — the look every chart shares; each plots/*.gp loads it
# first (load dir_of_script.'/style.gp'). What it fixes:
#   colour   stands for the precision family: fp32 black, tf32 purple, fp16
#            vermillion, bf16 blue, fp8 green (Okabe and Ito's palette, which
#            colour-blind readers can tell apart); categories that are not
#            precisions (memory parts, kernels of one type, number zones) take
#            the second set, cat_color(i), so that no hue means two things
#   dash and point   stand for the mode, kernel or strategy within a family
#   text     12 pt at 1280 px wide, scaled with the canvas: a chart twice as
#            wide is shown at half the scale on a page, so its text is twice
#            the size; no text is drawn smaller than the base size
#   notices  `print` goes to stdout: anything gnuplot writes to stderr is a
#            warning or an error, and the chart test fails on it

set print '-'
set encoding utf8

# ---------------------------------------------------------------- colours
c_fp32 = '#000000'
c_tf32 = '#CC79A7'
c_fp16 = '#D55E00'
c_bf16 = '#0072B2'
c_fp8  = '#009E73'
c_ref  = '#555555'   # references: copies, bounds, exact values
c_note = '#444444'   # annotation text
# The family of a variant, mode or strategy name: the first family it names
# (amp-bf16 and onednn-bf16 are bf16, fp16-master and fp16_kahan fp16,
# openblas and bf16-widened's fp32 reference aside: see the scripts).
family(v) = strstrt(v, 'bf16') > 0 ? 'bf16' : strstrt(v, 'fp16') > 0 ? 'fp16' : strstrt(v, 'tf32') > 0 ? 'tf32' : \
            strstrt(v, 'fp8') > 0 ? 'fp8' : 'fp32'
fcolor(v) = family(v) eq 'bf16' ? c_bf16 : family(v) eq 'fp16' ? c_fp16 : family(v) eq 'tf32' ? c_tf32 : \
            family(v) eq 'fp8' ? c_fp8 : c_fp32
fcolor_int(v) = family(v) eq 'bf16' ? 0x0072B2 : family(v) eq 'fp16' ? 0xD55E00 : family(v) eq 'tf32' ? 0xCC79A7 : \
                family(v) eq 'fp8' ? 0x009E73 : 0x000000
# categories that are not precisions: pale or dark tones none of the families use
array cat[8] = ['#E69F00', '#56B4E9', '#999999', '#882255', '#DDCC77', '#332288', '#44AA99', '#F0E442']
cat_color(i) = cat[(int(i) - 1) % 8 + 1]

# ---------------------------------------------------------------- training modes
# one dash and one point per mode; the colour is the mode's family
mode_list = 'fp32 amp-fp16 amp-bf16 fp16-noscale fp16-static fp16-master fp16-pure'
mode_index(m) = (strstrt(' '.mode_list.' ', ' '.m.' ') > 0) ? \
    words(substr(mode_list, 1, strstrt(' '.mode_list.' ', ' '.m.' ') - 1)) + 1 : 1
array mode_dash_of[7] = [1, 1, 1, 2, 4, 5, 3]
array mode_pt_of[7] = [7, 5, 9, 11, 13, 4, 6]
array mode_lw_of[7] = [2.5, 2.5, 2.5, 2, 2, 2, 2]
mode_dash(m) = mode_dash_of[mode_index(m)]
mode_pt(m) = mode_pt_of[mode_index(m)]
mode_lw(m) = mode_lw_of[mode_index(m)]

# the run groups' panel titles, with the names the report uses
group_title(g) = g eq 'tiny' ? "tiny: GPT, sorting, AdamW (cosine)" : \
                 g eq 'gpt2-converge' ? "gpt2-converge: GPT-2 124M shape, sorting" : \
                 g eq 'gpt2' ? "gpt2: GPT-2 124M shape" : \
                 g eq 'absorb' ? "absorb: SGD, lr 0.001" : \
                 g eq 'underflow' ? "underflow: SGD, init x 0.05, 4096 tokens" : g

# ---------------------------------------------------------------- GEMM variants
# the library called directly: dashed, open points; the fallback: dotted;
# a narrow accumulator: dash-dotted
variant_dash(v) = (v eq 'openblas' || v eq 'onednn-bf16') ? 2 : v eq 'bf16-widened' ? 3 : \
                  (v eq 'fp16-acc16' || v eq 'bf16-accbf16') ? 4 : 1
variant_pt(v) = v eq 'openblas' ? 6 : v eq 'onednn-bf16' ? 4 : v eq 'bf16-widened' ? 12 : v eq 'fp16-acc16' ? 8 : \
                v eq 'bf16-accbf16' ? 10 : v eq 'tf32' ? 9 : v eq 'fp8' ? 13 : v eq 'fp16' ? 5 : 7

# ---------------------------------------------------------------- terminals
base_pt = 12.0
scale_of(w) = w > 1280 ? w / 1280.0 : 1.0
font_pt(w) = base_pt * scale_of(w)
cur_w = 1280
cur_h = 800
cur_pt = base_pt
png(w, h) = (cur_w = w, cur_h = h, cur_pt = font_pt(w), sprintf("set terminal pngcairo size %d,%d enhanced font 'Sans,%.1f' linewidth %.2f", \
                    w, h, font_pt(w), scale_of(w)))
svg(w, h) = (cur_w = w, cur_h = h, cur_pt = font_pt(w), sprintf("set terminal svg size %d,%d enhanced font 'Sans,%.1f' linewidth %.2f background rgb 'white'", \
                    w, h, font_pt(w), scale_of(w)))

# ---------------------------------------------------------------- axes and grid
set border 3
set xtics nomirror
set ytics nomirror
set grid back lc rgb '#dddddd'
set key noopaque nobox
set style line 100 lc rgb c_ref dt 2 lw 2       # same-run references

# helpers the scripts share
file_exists(f) = system(sprintf("test -f '%s' && echo 1 || echo 0", f)) eq "1"
# the device line of a CSV, '_' escaped (it would start a subscript)
device_of(f) = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | sed 's/_/\\\\_/g'", f))
on_gpu(f) = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | grep -q '^cuda' && echo 1 || echo 0", f)) eq "1"

# ---------------------------------------------------------------- panels and legends
# Multi-panel charts place their panels with cell(col, row) on a grid of
# g_cols x g_rows between g_L..g_R and g_B..g_T (screen fractions, gaps
# g_hs and g_vs), and draw one legend for all of them with strip(bottom, top):
# a plot of its own across the canvas, so that no legend sits on data.
g_L = 0.07
g_R = 0.98
g_B = 0.08
g_T = 0.85
g_hs = 0.06
g_vs = 0.12
g_cols = 1
g_rows = 1
cell_w(x) = (g_R - g_L - (g_cols - 1) * g_hs) / g_cols
cell_h(x) = (g_T - g_B - (g_rows - 1) * g_vs) / g_rows
cell(col, row) = sprintf("set lmargin at screen %.4f; set rmargin at screen %.4f; set tmargin at screen %.4f; set bmargin at screen %.4f", \
    g_L + (col - 1) * (cell_w(0) + g_hs), g_L + (col - 1) * (cell_w(0) + g_hs) + cell_w(0), \
    g_T - (row - 1) * (cell_h(0) + g_vs), g_T - (row - 1) * (cell_h(0) + g_vs) - cell_h(0))
# The legend strip: entries in leg_spec[] ("with lines lw 2 lc rgb '#000000'")
# and leg_title[], leg_n of them; eval legend_strip(y) last (it unsets the
# axes) draws them in a row centred at screen height y, each with its own
# key, so that every entry takes only its own width (a horizontal key gives
# every entry the width of the longest), wrapping onto further rows.
array leg_spec[32]
array leg_title[32]
leg_n = 0
leg_w(i) = (strlen(leg_title[i]) * 0.62 + 10.0) * cur_pt / cur_w
leg_row_h(x) = 1.6 * cur_pt / cur_h
legend_strip(y) = sprintf("unset border; unset xtics; unset ytics; unset mxtics; unset mytics; unset x2tics; unset y2tics; unset xlabel; unset ylabel; unset title; unset grid; unset logscale; unset label; unset arrow; unset object; unset offsets; set xrange [0:1]; set yrange [0:1]; tot_ = 0; do for [i_=1:leg_n] { tot_ = tot_ + leg_w(i_) }; x_ = tot_ < 0.96 ? 0.5 - tot_ / 2 : 0.02; y_ = %g; do for [i_=1:leg_n] { if (x_ + leg_w(i_) > 0.99) { x_ = 0.02; y_ = y_ - leg_row_h(0) }; set key at screen x_, screen y_ left center reverse Left samplen 2.5 noopaque nobox; eval 'plot NaN '.leg_spec[i_].' title \"'.leg_title[i_].'\"'; x_ = x_ + leg_w(i_) }; leg_n = 0", y)
legend_add = "leg_n = leg_n + 1; leg_spec[leg_n] = ls_; leg_title[leg_n] = lt_"

# ticks on a log10 axis at 1, 2 and 5 of every decade between lo and hi (for
# data that span too little for decade ticks alone): set log_lo and log_hi, then
# eval log125_ytics (or log125_xtics)
log125(axis) = sprintf("s_ = ''; do for [e_=int(floor(log10(log_lo))):int(ceil(log10(log_hi)))] { do for [i_=1:3] { v_ = (i_ == 1 ? 1 : i_ == 2 ? 2 : 5) * 10.0**e_; if (v_ >= log_lo * 0.999 && v_ <= log_hi * 1.001) { s_ = s_.(s_ eq '' ? '' : ', ').sprintf('\"%%g\" %%g', v_, v_) } } }; eval 'set %stics nomirror ('.s_.')'", axis)
log125_ytics = log125('y')
log125_xtics = log125('x')
