# plots/value_bits.gp RESULTS_DIR — one number X (the classic 0.4) as fp32,
# fp16 and bf16 store it: each format's bits in a row of boxes (sign,
# exponent and mantissa fields in their own colours, the rows aligned at the
# sign, so that bf16 reads as fp32's upper half), the value each keeps and
# its error. Reads formats_value.csv (halflab-numerics formats --value X);
# writes the preset's two files (style.gp).
here = system(sprintf("dirname '%s'", ARG0))
load here.'/style.gp'
dir = ARG1
in = as_written(dir.'/formats_value.csv')
if (!file_exists(in)) {
  print sprintf("value_bits.gp: %s not found: no chart (run halflab-numerics formats --value 0.4)", in)
  exit
}
# awk over a halflab CSV's rows (VARS: its -v options), c["name"] the index of each column
awk_cols(vars) = "awk -F, ".vars." '/^#/ { next } !h++ { for (i = 1; i <= NF; i++) c[$i] = i; next } "
desc = system(sprintf("sed -n 's/^# device: //p' '%s' | head -1 | cut -d, -f1", in))
# the run's build and date, for the screen footer
run_of(f) = system(sprintf("sed -n 's/^# \\(halflab .*\\)/\\1/p; s/^# date: \\(.\\{10\\}\\).*/\\1/p' '%s' | paste -sd, - | sed 's/,/, /g'", f))
# a CSV number for real(): gnuplot reads "1e-08" as 1 and stray text, so give the mantissa a point
num(s) = real(strstrt(s, 'e') > 0 && strstrt(s, '.') == 0 ? s[1:strstrt(s, 'e') - 1].'.0'.s[strstrt(s, 'e'):] : s)
# COLUMN of FORMAT's first row (its nearest-even rounding)
field(f, col) = system(sprintf("%s$c[\"format\"] == f { print $c[col]; exit }' '%s'", awk_cols(sprintf('-v f=%s -v col=%s', f, col)), in))

array id[3] = ["fp32", "fp16", "bf16"]
array sign[3]
array expo[3]
array mant[3]
array hex[3]
array stored[3]
array abs_err[3]
array rel_err[3]
nf = 0
do for [i=1:3] {
  sign[i] = field(id[i], 'sign')
  expo[i] = field(id[i], 'exponent')
  mant[i] = field(id[i], 'mantissa')
  hex[i] = field(id[i], 'bits_hex')
  stored[i] = field(id[i], 'value')
  abs_err[i] = field(id[i], 'abs_error')
  rel_err[i] = field(id[i], 'rel_error')
  nf = nf + (sign[i] ne '')
}
if (nf < 3) {
  print sprintf("value_bits.gp: %s lacks fp32, fp16 or bf16: no chart", in)
  exit
}
x_text = sprintf("%.15g", num(field('fp32', 'input')))
nbits(i) = strlen(sign[i].expo[i].mant[i])
maxbits = nbits(1) > nbits(2) ? (nbits(1) > nbits(3) ? nbits(1) : nbits(3)) : (nbits(2) > nbits(3) ? nbits(2) : nbits(3))
# the bit at position b (1 = the sign) and its field (1 sign, 2 exponent, 3 mantissa)
bit_of(i, b) = (sign[i].expo[i].mant[i])[b:b]
field_of(i, b) = b <= strlen(sign[i]) ? 1 : b <= strlen(sign[i].expo[i]) ? 2 : 3
array field_name[3] = ['sign', 'exponent', 'mantissa']
array field_color[3] = [cat_color(4), cat_color(7), cat_color(5)]
array field_alpha[3] = [0.35, 0.45, 0.6]
stored_text(i) = sprintf("%.12g", num(stored[i]))
error_text(i) = abs_err[i] eq '' ? 'no error: X is NaN' : num(abs_err[i]) == 0 ? 'exact' : sprintf("error %+.3g\nrelative %.2g", num(abs_err[i]), abs(num(rel_err[i])))

# the claim: which formats keep X exactly, and how far the others are off
inexact = 0
unknown = 0   # errors of a NaN: none
do for [i=1:3] { unknown = unknown + (abs_err[i] eq ''); inexact = inexact + (abs_err[i] ne '' && num(abs_err[i]) != 0) }
# |error| to one digit, as 6e-9 (0 as 0)
exp10_(x) = floor(log10(x) + (x / 10**floor(log10(x)) >= 9.5 ? 1 : 0))
one_digit(x) = x == 0 ? '0' : sprintf("%.0fe%d", x / 10**exp10_(x), exp10_(x))
off(i) = one_digit(abs(num(abs_err[i])))
claim_wide = unknown > 0 ? sprintf("%s in fp32, fp16 and bf16: %s, %s, %s", x_text, hex[1], hex[2], hex[3]) : inexact == 0 ? sprintf("%s is exact in fp32, fp16 and bf16", x_text) : \
             sprintf("%s is not stored exactly: off by %s in fp32, %s in fp16, %s in bf16", x_text, off(1), off(2), off(3))
claim_narrow = unknown > 0 ? claim_wide : inexact == 0 ? sprintf("%s is exact in all three", x_text) : \
               sprintf("%s: off by %s (fp32), %s (fp16), %s (bf16)", x_text, off(1), off(2), off(3))

# leg_rows: the rows the legend strip will take (legend_strip's wrapping, repeated)
count_leg_rows = "t_ = 0; do for [k_=1:leg_n] { t_ = t_ + leg_w(k_) }; leg_rows = 1; x_ = t_ < 0.96 ? 0.5 - t_ / 2 : 0.02; do for [k_=1:leg_n] { if (x_ + leg_w(k_) > 0.99) { x_ = 0.02; leg_rows = leg_rows + 1 }; x_ = x_ + leg_w(k_) }"

footer = desc.'; '.run_of(in)
narrow_aspect = 0.72
do for [out_i=1:out_n] {
  unset label
  unset object
  eval out_open(dir, 'value_bits', 1280, 640, out_i)
  lh = 1.6 * cur_pt / cur_h   # a line of text, as a fraction of the height
  cw = 0.75 * cur_pt / cur_w  # a character (a wide one), as a fraction of the width
  do for [k=1:3] {
    ls_ = sprintf("with boxes fs transparent solid %g border lc rgb '#666666' lc rgb '%s'", field_alpha[k], field_color[k]); lt_ = field_name[k]; eval legend_add
  }
  eval count_leg_rows
  foot = preset eq 'screen' ? 1.2 * lh : 0   # the footer's line
  # rows of bits between the title and the legend; on a narrow page each row's text sits above its bits,
  # elsewhere the name left of them and the value right of them
  y_top = 1 - (preset eq 'screen' ? 3.8 : 3.0) * lh
  y_bot = foot + (leg_rows + 1.2) * lh
  pitch = (y_top - y_bot) / 3.0
  box_h = narrow ? 1.5 * lh : (pitch * 0.5 < 2.2 * lh ? pitch * 0.5 : 2.2 * lh)
  bx0 = narrow ? 0.02 : 0.02 + 12.5 * cw
  bx1 = narrow ? 0.98 : 0.98 - 22 * cw
  bw = (bx1 - bx0) / maxbits
  set multiplot
  set lmargin at screen 0.02
  set rmargin at screen 0.98
  set bmargin at screen y_bot
  set tmargin at screen y_top + 0.2 * lh
  set title title_of(sprintf("%s stored in fp32, fp16 and bf16: the bits, the value each keeps and its error", x_text), \
                     narrow ? claim_narrow : claim_wide)
  unset border
  unset tics
  unset key
  unset grid
  set xrange [0:1]
  set yrange [0:1]
  do for [i=1:3] {
    yc = y_top - (i - 0.5) * pitch + (narrow ? -0.6 * lh : 0)   # the middle of row i's boxes
    do for [b=1:nbits(i)] {
      k = field_of(i, b)
      set object 100 * i + b rect from screen bx0 + (b - 1) * bw, screen yc - box_h / 2 to screen bx0 + b * bw, screen yc + box_h / 2 \
          fc rgb field_color[k] fs transparent solid field_alpha[k] border lc rgb '#666666' lw 1 front
      set label 100 * i + b bit_of(i, b) at screen bx0 + (b - 0.5) * bw, screen yc center front
    }
    if (narrow) {
      set label 10 * i sprintf("%s %s: %s, %s", id[i], hex[i], stored_text(i), abs_err[i] eq '' ? 'no error' : num(abs_err[i]) == 0 ? 'exact' : sprintf("error %+.2g", num(abs_err[i]))) \
          at screen bx0, screen yc + box_h / 2 + 0.7 * lh left tc rgb fcolor(id[i]) front
    } else {
      set label 10 * i sprintf("%s\n%s", id[i], hex[i]) at screen 0.02, screen yc left tc rgb fcolor(id[i]) front
      set label 10 * i + 1 sprintf("stores %s\n%s", stored_text(i), error_text(i)) at screen bx1 + 1.5 * cw, screen yc left tc rgb fcolor(id[i]) front
    }
  }
  plot NaN notitle
  unset label 9999   # the footer: drawn once
  eval legend_strip(foot + (leg_rows - 0.5) * leg_row_h(0) + 0.3 * lh)
  unset multiplot
}
unset output
