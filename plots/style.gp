# plots/style.gp — the look every chart shares; each plots/*.gp loads it
# first (load dir_of_script.'/style.gp'). What it fixes:
#   colour   stands for the precision family: fp32 black, tf32 purple, fp16
#            vermillion, bf16 blue, fp8 green (Okabe and Ito's palette, which
#            colour-blind readers can tell apart), fp6 brown, fp4 violet, the
#            e8m0 scale ochre (format_color and format_dash below);
#            categories that are not precisions (memory parts, kernels of one
#            type, number zones) take the second set, cat_color(i), so that no hue means two things
#   dash     solid is the fp32 baseline (or, within one family, the kernel
#            the others are measured against); the narrower types and the
#            variants are dashed or dotted, each its own pattern; points tell
#            kernels and strategies within a family apart (line_convention
#            below is the sentence captions quote)
#   presets  every chart in three renderings, chosen by `preset` (gnuplot
#            -e "preset='slides'"; scripts/plots.sh passes it):
#              screen  W x H PNG and SVG, as the script asks, run metadata
#                      in a small footer
#              slides  16:9, 1920x1080 PNG and a 13.33 x 7.5 in PDF page, text
#                      at least 1/40 of the height, a one-line title, no
#                      metadata on the canvas
#              print   PDF 3.5 in (a column) and 7 in (a page) wide, text
#                      8.5 pt, no line thinner than 0.75 pt, a one-line title
#   sizes    this file owns every font size and line-width scale: no chart
#            script names a font (a test checks)
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
c_fp6  = '#8C510A'   # OCP MX's 6-bit elements (e2m3, e3m2): brown
c_fp4  = '#7B3294'   # 4-bit (e2m1): violet, darker than tf32's
c_e8m0 = '#B8860B'   # the MX block scale (exponent only): ochre
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
# The element formats one by one (probes that show every format side by
# side): the colour is the family's (fp8, fp6, fp4 by their width), and
# within a family the dash tells the formats apart, so that a grey print
# keeps all nine distinct: fp32 solid, fp16 and bf16 gnuplot's dashes 2 and 5,
# the narrow ones patterns of their own (a dt spliced into a plot command).
format_list = 'fp32 fp16 bf16 e4m3 e5m2 e2m3 e3m2 e2m1 e8m0'
format_index(f) = (strstrt(' '.format_list.' ', ' '.f.' ') > 0) ? \
    words(substr(format_list, 1, strstrt(' '.format_list.' ', ' '.f.' ') - 1)) + 1 : 1
array format_color_of[9] = [c_fp32, c_fp16, c_bf16, c_fp8, c_fp8, c_fp6, c_fp6, c_fp4, c_e8m0]
array format_dash_of[9] = ['1', '2', '5', '(14,5)', '(4,4)', '(14,4,3,4)', '(5,3,2,3,2,3)', '(24,7)', '(2,7)']
format_color(f) = format_color_of[format_index(f)]
format_dash(f) = format_dash_of[format_index(f)]
# categories that are not precisions: pale or dark tones none of the families use
array cat[8] = ['#E69F00', '#56B4E9', '#999999', '#882255', '#DDCC77', '#332288', '#44AA99', '#F0E442']
cat_color(i) = cat[(int(i) - 1) % 8 + 1]

# ---------------------------------------------------------------- training modes
# one dash and one point per mode; the colour is the mode's family. fp32 is
# the one solid line (the baseline); every other mode has a dash pattern of
# its own (gnuplot's dt: a number or a (dash, gap, ...) list, spliced into
# the plot command); mode_line(m) is the three together
mode_list = 'fp32 amp-fp16 amp-bf16 fp16-noscale fp16-static fp16-master fp16-pure'
mode_index(m) = (strstrt(' '.mode_list.' ', ' '.m.' ') > 0) ? \
    words(substr(mode_list, 1, strstrt(' '.mode_list.' ', ' '.m.' ') - 1)) + 1 : 1
array mode_dash_of[7] = ['1', '2', '(12,5)', '3', '4', '5', '(22,7)']
array mode_pt_of[7] = [7, 5, 9, 11, 13, 4, 6]
array mode_lw_of[7] = [2.5, 2.5, 2.5, 2, 2, 2, 2]
mode_dash(m) = mode_dash_of[mode_index(m)]
mode_pt(m) = mode_pt_of[mode_index(m)]
mode_lw(m) = mode_lw_of[mode_index(m)]
mode_line(m) = sprintf("lw %g dt %s lc rgb '%s'", mode_lw(m), mode_dash(m), fcolor(m))

# the run groups' panel titles, with the names the report uses
group_title(g) = g eq 'tiny' ? "tiny: GPT, sorting, AdamW (cosine)" : \
                 g eq 'gpt2-converge' ? "gpt2-converge: GPT-2 124M shape, sorting" : \
                 g eq 'gpt2' ? "gpt2: GPT-2 124M shape" : \
                 g eq 'absorb' ? "absorb: SGD, lr 0.001" : \
                 g eq 'underflow' ? "underflow: SGD, init x 0.05, 4096 tokens" : g

# ---------------------------------------------------------------- GEMM variants
# the dash follows the type: solid fp32 (halflab's path and OpenBLAS called
# directly), dashed the narrower types (oneDNN called directly too), dotted
# the widened fallback, dash-dotted a narrow accumulator; open points: a
# library called directly
variant_dash(v) = v eq 'bf16-widened' ? 3 : (v eq 'fp16-acc16' || v eq 'bf16-accbf16') ? 4 : \
                  family(v) eq 'fp32' ? 1 : 2
variant_pt(v) = v eq 'openblas' ? 6 : v eq 'onednn-bf16' ? 4 : v eq 'bf16-widened' ? 12 : v eq 'fp16-acc16' ? 8 : \
                v eq 'bf16-accbf16' ? 10 : v eq 'tf32' ? 9 : v eq 'fp8' ? 13 : v eq 'fp16' ? 5 : 7

# ---------------------------------------------------------------- presets and terminals
if (!exists("preset")) preset = 'screen'
if (preset ne 'screen' && preset ne 'slides' && preset ne 'print') {
  print sprintf("style.gp: unknown preset '%s' (screen, slides or print)", preset)
  exit status 2
}
line_convention = "solid: the fp32 baseline; dashed or dotted: the narrower types and variants"
# Cairo's font sizes are not the page's: pngcairo draws an N-point font N x 4/3
# pixels high (em), pdfcairo N x 2/3 points. Sizes below are in gnuplot's
# points, and cur_w / cur_h give the canvas in units where one gnuplot point
# of font is 4/3 of a unit in every terminal (pixels for PNG and SVG, 2 per
# PDF point), so that the legend strip can measure text the same way.
base_pt = 12.0            # screen: 16 px em on a 1280-px canvas
slides_pt = 21.0          # 28 px em on 1080 px: 1/38.6 of the height
print_pt = 12.75          # 8.5 pt on paper
slides_lw = 1.5
print_lw = 1.5            # lw 1 is 0.5 pt in pdfcairo: 0.75 pt
print_ps = 0.5            # pdfcairo's points grow with the line width: back to screen's size beside the text
small_pt(pt) = pt * 0.85  # the screen footer
heading_pt(pt) = pt * 2.0 # a deck's title page: the one heading drawn larger than the text
scale_of(w) = w > 1280 ? w / 1280.0 : 1.0
font_pt(w) = base_pt * scale_of(w)
cur_w = 1280
cur_h = 800
cur_pt = base_pt
narrow = 0                # the 3.5-in print rendering: scripts may lay out for it
png(w, h) = (cur_w = w, cur_h = h, cur_pt = font_pt(w), sprintf("set terminal pngcairo size %d,%d enhanced font 'Sans,%.1f' linewidth %.2f", \
                    w, h, font_pt(w), scale_of(w)))
svg(w, h) = (cur_w = w, cur_h = h, cur_pt = font_pt(w), sprintf("set terminal svg size %d,%d enhanced font 'Sans,%.1f' linewidth %.2f background rgb 'white'", \
                    w, h, font_pt(w), scale_of(w)))
slides_png(x) = (cur_w = 1920, cur_h = 1080, cur_pt = slides_pt, \
                 sprintf("set terminal pngcairo size 1920,1080 enhanced font 'Sans,%.2f' linewidth %.2f", slides_pt, slides_lw))
slides_pdf(x) = (cur_w = 1920, cur_h = 1080, cur_pt = slides_pt, \
                 sprintf("set terminal pdfcairo size 13.333in,7.5in enhanced font 'Sans,%.2f' linewidth %.2f", slides_pt, slides_lw))
print_pdf(win, hin) = (cur_w = win * 144, cur_h = hin * 144, cur_pt = print_pt, \
                 sprintf("set terminal pdfcairo size %.3fin,%.3fin enhanced font 'Sans,%.2f' linewidth %.2f pointscale %.2f", win, hin, print_pt, print_lw, print_ps))
# The height of the 3.5-in print rendering over its width: the script's own
# aspect, or narrow_aspect where the script sets one (a column needs taller
# panels than a page).
print_h(win, w, h) = win * (win < 5 && exists("narrow_aspect") ? narrow_aspect : (win < 5 && h / real(w) < 0.75 ? 0.75 : h / real(w)))
# Every chart writes out_n files; a script draws once per output:
#   do for [out_i = 1:out_n] { eval out_open(dir, 'NAME', W, H, out_i); ...plot...; }
#   unset output
# (single plots may `replot` for out_i = 2). The files:
#   screen  DIR/NAME.png, DIR/NAME.svg (W x H)
#   slides  DIR/slides/NAME.png, DIR/slides/NAME.pdf
#   print   DIR/print/NAME-3.5in.pdf, DIR/print/NAME-7in.pdf
out_n = 2
out_path(dir, name, i) = preset eq 'screen' ? sprintf("%s/%s.%s", dir, name, i == 1 ? 'png' : 'svg') : \
                         preset eq 'slides' ? sprintf("%s/slides/%s.%s", dir, name, i == 1 ? 'png' : 'pdf') : \
                         sprintf("%s/print/%s-%s.pdf", dir, name, i == 1 ? '3.5in' : '7in')
out_term(w, h, i) = preset eq 'screen' ? (i == 1 ? png(w, h) : svg(w, h)) : \
                    preset eq 'slides' ? (i == 1 ? slides_png(0) : slides_pdf(0)) : \
                    (i == 1 ? print_pdf(3.5, print_h(3.5, w, h)) : print_pdf(7.0, print_h(7.0, w, h)))
out_open(dir, name, w, h, i) = (narrow = (preset eq 'print' && i == 1), \
    sprintf("%s; set output '%s'; %s", out_term(w, h, i), out_path(dir, name, i), footer_cmd))
# Titles: screen shows the script's full title; slides and print a one-line one.
title_of(long, short) = preset eq 'screen' ? long : short
# Run metadata (device, build, settings) goes in a small footer in screen
# only; set `footer` before out_open. Elsewhere it belongs in the caption.
# The one exception: `slide_note` (given with gnuplot -e by scripts/slides.sh)
# takes the footer's place on a slide, to say where a slide's data came from.
footer = ''
footer_text(x) = preset eq 'screen' ? footer : (preset eq 'slides' && exists("slide_note") ? slide_note : '')
footer_cmd = "if (footer_text(0) ne '') { set label 9999 footer_text(0) at screen 0.005, screen 0.012 left front font sprintf('Sans,%.1f', small_pt(cur_pt)) tc rgb c_note noenhanced } else { unset label 9999 }"

# ---------------------------------------------------------------- axes and grid
set border 3
set xtics nomirror
set ytics nomirror
grid_opts = "back lt 1 lc rgb '#dddddd' lw 1 dt 1"   # solid hairlines (lw 1 is 0.75 pt in print): eval 'set grid xtics '.grid_opts
eval 'set grid '.grid_opts
set key noopaque nobox
set style line 100 lc rgb c_ref dt 2 lw 2       # same-run references

# helpers the scripts share
file_exists(f) = system(sprintf("test -f '%s' && echo 1 || echo 0", f)) eq "1"
# A CSV as halflab wrote it, for every reader below: gnuplot takes CRLF line ends but reads a UTF-8
# byte order mark before the first '#' line as part of a column header, and awk takes neither. A file
# another system saved so is read through a copy without them, under $TMPDIR (rewritten at each use);
# any other file (and a missing one) is read in place, checked once per script (as_written_clean).
as_written_clean = "\n"
as_written(f) = strstrt(as_written_clean, "\n".f."\n") > 0 ? f : \
  (as_written_got = as_written_check(f), as_written_got eq f ? (as_written_clean = as_written_clean.f."\n", f) : as_written_got)
as_written_check(f) = system("f='".f."'; b=$(printf '\\357\\273\\277'); r=$(printf '\\r'); " . \
  "if [ -f \"$f\" ] && { [ \"$(head -c3 \"$f\")\" = \"$b\" ] || LC_ALL=C grep -q \"$r\\$\" \"$f\"; }; then " . \
  "d=${TMPDIR:-/tmp}/halflab-as-written-$(id -u); mkdir -p \"$d\" && " . \
  "o=\"$d/$(printf %s \"$f\" | cksum | cut -d' ' -f1)-${f##*/}\" && " . \
  "LC_ALL=C sed \"1s/^$b//; s/$r\\$//\" \"$f\" > \"$o\" && printf %s \"$o\"; else printf %s \"$f\"; fi")
# the last-level cache a CSV's run recorded, in bytes (llc_bytes on a CPU,
# l2_bytes on a GPU; 0 where it names neither)
cache_bytes(f) = real(system("awk '/^# (llc|l2)_bytes: / { v = $3 + 0; exit } !/^#/ { exit } END { print v + 0 }' '".f."'"))
# the screen footer's run line of a CSV: its device, halflab's version and the date
footer_of(f) = system("awk '/^# device: / && d == \"\" { d = substr($0, 11) } /^# halflab / && v == \"\" { v = substr($0, 3) } /^# date: / && t == \"\" { t = substr($0, 9) } !/^#/ { exit } END { printf \"%s%s%s\", d, v == \"\" ? \"\" : \"; \" v, t == \"\" ? \"\" : \", \" t }' '".f."'")
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
# N lines of body text, as a fraction of the canvas's height (margins that
# hold titles, tick labels and legends in every preset)
text_h(n) = n * 1.6 * cur_pt / cur_h
legend_strip(y) = sprintf("unset border; unset xtics; unset ytics; unset mxtics; unset mytics; unset x2tics; unset y2tics; unset xlabel; unset ylabel; unset title; unset grid; unset logscale; unset label; unset arrow; unset object; unset offsets; set xrange [0:1]; set yrange [0:1]; tot_ = 0; do for [i_=1:leg_n] { tot_ = tot_ + leg_w(i_) }; x_ = tot_ < 0.96 ? 0.5 - tot_ / 2 : 0.02; y_ = %g; do for [i_=1:leg_n] { if (x_ + leg_w(i_) > 0.99) { x_ = 0.02; y_ = y_ - leg_row_h(0) }; set key at screen x_, screen y_ left center reverse Left samplen 2.5 noopaque nobox; eval 'plot NaN '.leg_spec[i_].' title \"'.leg_title[i_].'\"'; x_ = x_ + leg_w(i_) }; leg_n = 0", y)
legend_add = "leg_n = leg_n + 1; leg_spec[leg_n] = ls_; leg_title[leg_n] = lt_"
# eval legend_count (after the entries are added, after out_open): leg_rows,
# the rows legend_strip will take, for the margin below the panels
legend_count = "tot_ = 0; do for [i_=1:leg_n] { tot_ = tot_ + leg_w(i_) }; leg_rows = leg_n > 0 ? 1 : 0; x_ = 0.02; if (tot_ >= 0.96) { do for [i_=1:leg_n] { if (x_ + leg_w(i_) > 0.99) { x_ = 0.02; leg_rows = leg_rows + 1 }; x_ = x_ + leg_w(i_) } }"

# ticks on a log10 axis at 1, 2 and 5 of every decade between lo and hi (for
# data that span too little for decade ticks alone): set log_lo and log_hi, then
# eval log125_ytics (or log125_xtics)
log125(axis) = sprintf("s_ = ''; do for [e_=int(floor(log10(log_lo))):int(ceil(log10(log_hi)))] { do for [i_=1:3] { v_ = (i_ == 1 ? 1 : i_ == 2 ? 2 : 5) * 10.0**e_; if (v_ >= log_lo * 0.999 && v_ <= log_hi * 1.001) { s_ = s_.(s_ eq '' ? '' : ', ').sprintf('\"%%g\" %%g', v_, v_) } } }; eval 'set %stics nomirror ('.s_.')'", axis)
log125_ytics = log125('y')
log125_xtics = log125('x')
