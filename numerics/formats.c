/* formats.c — `halflab-numerics formats [--value X]`: what each format is,
 * and any number X as each format stores it, bit by bit. Computed on the host
 * from formats/format.h (the exhaustive tests pin half.h to it and the CPU's
 * conversion instructions to half.h; the gpu suite pins the GPU's to half.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "formats/format.h"
#include "formats/half.h"
#include "numerics/nx.h"

/* ----------------------------------------------------------- the tables -- */

static const hl_column formats_columns[] = {
    {"format", "", HL_COL_TEXT, NULL, "the format's short name: fp32, tf32, fp16, bf16, e4m3, e5m2 (OCP fp8), e2m3, e3m2 (OCP MX fp6), e2m1 "
     "(OCP MX fp4), e8m0 (OCP MX block scale)",
     "numerics/formats.c: write_format_table"},
    {"long_name", "", HL_COL_TEXT, NULL, "the format's full name", "numerics/formats.c: write_format_table"},
    {"bits", "bits", HL_COL_INT, NULL, "the encoding's width", "numerics/formats.c: write_format_table"},
    {"sign_bits", "bits", HL_COL_INT, NULL, "the sign field's width: 1, or 0 for e8m0 (unsigned)", "numerics/formats.c: write_format_table"},
    {"exponent_bits", "bits", HL_COL_INT, NULL, "the exponent field's width", "numerics/formats.c: write_format_table"},
    {"mantissa_bits", "bits", HL_COL_INT, NULL,
     "the mantissa field's width (stored bits, without the leading 1; 0 for e8m0, whose values are powers of two)",
     "numerics/formats.c: write_format_table"},
    {"bias", "1", HL_COL_INT, NULL, "the exponent bias", "numerics/formats.c: write_format_table"},
    {"emin", "1", HL_COL_INT, NULL, "the exponent of the smallest normal number (e8m0: of its smallest value)",
     "numerics/formats.c: write_format_table"},
    {"emax", "1", HL_COL_INT, NULL, "the exponent of the largest finite number", "numerics/formats.c: write_format_table"},
    {"max_finite", "1", HL_COL_REAL, "%.17g", "the largest finite value", "numerics/formats.c: write_format_table"},
    {"min_normal", "1", HL_COL_REAL, "%.17g", "the smallest positive normal value", "numerics/formats.c: write_format_table"},
    {"min_subnormal", "1", HL_COL_REAL, "%.17g",
     "the smallest positive subnormal value (e8m0, which has no subnormals and no zero: its smallest value)",
     "numerics/formats.c: write_format_table"},
    {"epsilon", "1", HL_COL_REAL, "%.17g", "the gap between 1 and the next value", "numerics/formats.c: write_format_table"},
    {"unit_roundoff", "1", HL_COL_REAL, "%.17g", "epsilon / 2: the largest relative error of rounding to nearest",
     "numerics/formats.c: write_format_table"},
    {"has_inf", "1", HL_COL_INT, NULL, "1 when the format has infinities (e4m3, fp6, fp4 and e8m0 have none), else 0",
     "numerics/formats.c: write_format_table"},
    {"has_nan", "1", HL_COL_INT, NULL,
     "1 when the format has a NaN, else 0 (fp6 and fp4: every code is a number; a NaN stored in them becomes "
     "+-max_finite)",
     "numerics/formats.c: write_format_table"},
};
const hl_schema nx_formats_schema = {
    "formats.csv", "halflab-numerics formats", "numerics/formats.c: write_format_table",
    "One row per format: its fields, range and precision.", HL_SCHEMA_COLUMNS(formats_columns)};

static const hl_column value_columns[] = {
    {"input", "1", HL_COL_REAL, "%.17g", "X as given (--value), read as a double", "numerics/formats.c: show_value"},
    {"format", "", HL_COL_TEXT, NULL, "the format X is stored in", "numerics/formats.c: show_value"},
    {"rounding", "", HL_COL_TEXT, NULL,
     "how X is rounded: nearest-even; nearest-even saturating or not (fp8, e8m0: past the largest value, "
     "+-max or the format's inf or NaN); nearest-even saturating (fp6, fp4, which have no inf and no NaN); from fp32 "
     "then ties-away (tf32 as the GPU's cvt.rna makes it)",
     "numerics/formats.c: show_value"},
    {"bits_hex", "", HL_COL_TEXT, NULL, "the encoding in hex, as wide as the format", "numerics/formats.c: view_of"},
    {"sign", "", HL_COL_TEXT, NULL, "the sign bit; empty for e8m0, which has none", "numerics/formats.c: show_value"},
    {"exponent", "", HL_COL_TEXT, NULL, "the exponent field's bits", "numerics/formats.c: show_value"},
    {"mantissa", "", HL_COL_TEXT, NULL, "the mantissa field's bits; empty for e8m0, which has none",
     "numerics/formats.c: show_value"},
    {"value", "1", HL_COL_REAL, "%.17g", "the value stored", "numerics/formats.c: view_of"},
    {"class", "", HL_COL_TEXT, NULL, "the stored value's class: zero, subnormal, normal, inf or nan",
     "numerics/formats.c: view_of"},
    {"next_below", "1", HL_COL_REAL, "%.17g", "the format's next value below the stored one; empty: none",
     "numerics/formats.c: view_of"},
    {"next_above", "1", HL_COL_REAL, "%.17g", "the format's next value above the stored one; empty: none",
     "numerics/formats.c: view_of"},
    {"abs_error", "1", HL_COL_REAL, "%.3g", "value - X; empty where X is NaN", "numerics/formats.c: stored_error"},
    {"rel_error", "1", HL_COL_REAL, "%.3g", "(value - X) / |X| (0 where X is 0); empty where X is NaN",
     "numerics/formats.c: stored_error"},
};
const hl_schema nx_formats_value_schema = {
    "formats_value.csv", "halflab-numerics formats --value X", "numerics/formats.c: show_value",
    "One row per format and rounding: X as that format stores it, bit by bit.", HL_SCHEMA_COLUMNS(value_columns)};

static const char *pow2_and_decimal(double v, char *buf, size_t len) {
  char p[32];
  snprintf(buf, len, "%s = %.5g", nx_pow2(v, p, sizeof p), v);
  return buf;
}

static void write_format_table(const nx_ctx *c) {
  hl_csv *f = nx_csv_open(c, &nx_formats_schema);
  hl_row r;
  for (size_t i = 0; i < HL_FORMATS; i++) {
    const hl_format_info *fi = hl_format_get(hl_formats[i]);
    hl_row_begin(&r, &nx_formats_schema);
    hl_row_text(&r, "format", hl_dtype_format_name(fi->id));
    hl_row_text(&r, "long_name", fi->long_name);
    hl_row_int(&r, "bits", fi->bits);
    hl_row_int(&r, "sign_bits", fi->sign_bits);
    hl_row_int(&r, "exponent_bits", fi->exp_bits);
    hl_row_int(&r, "mantissa_bits", fi->man_bits);
    hl_row_int(&r, "bias", fi->bias);
    hl_row_int(&r, "emin", fi->emin);
    hl_row_int(&r, "emax", fi->emax);
    hl_row_real(&r, "max_finite", fi->max);
    hl_row_real(&r, "min_normal", fi->min_normal);
    hl_row_real(&r, "min_subnormal", fi->min_subnormal);
    hl_row_real(&r, "epsilon", fi->epsilon);
    hl_row_real(&r, "unit_roundoff", fi->unit_roundoff);
    hl_row_bool(&r, "has_inf", fi->has_inf);
    hl_row_bool(&r, "has_nan", fi->has_nan);
    hl_csv_put(f, &r);
  }
  nx_csv_close(f);
}

/* "s eeeee mmmmmmmmmm": one letter per bit, the fields apart */
static const char *layout_of(const hl_format_info *fi, char *buf, size_t len) {
  size_t k = 0;
  for (int i = 0; i < fi->sign_bits && k + 1 < len; i++) buf[k++] = 's';
  if (fi->sign_bits && k + 1 < len) buf[k++] = ' ';
  for (int i = 0; i < fi->exp_bits && k + 1 < len; i++) buf[k++] = 'e';
  if (fi->man_bits && k + 1 < len) buf[k++] = ' ';
  for (int i = 0; i < fi->man_bits && k + 1 < len; i++) buf[k++] = 'm';
  buf[k] = '\0';
  return buf;
}

/* "(no inf)", "(no inf, no NaN)" after the largest finite value */
static const char *specials_note(const hl_format_info *fi) {
  return fi->has_inf ? "" : fi->has_nan ? " (no inf)" : " (no inf, no NaN)";
}

static void print_format_table(void) {
  nx_heading("formats: fields, range and precision");
  printf("  %-5s %-22s %-8s %4s  %-24s %-21s %-21s %-21s %s\n", "name", "", "s/e/m", "bias", "largest finite",
         "smallest normal", "smallest subnormal", "epsilon", "unit roundoff");
  for (size_t i = 0; i < HL_FORMATS; i++) {
    const hl_format_info *fi = hl_format_get(hl_formats[i]);
    char sem[16], mx[48], mn[40], sub[40], eps[40], u[16];
    snprintf(sem, sizeof sem, "%d/%d/%d", fi->sign_bits, fi->exp_bits, fi->man_bits);
    snprintf(mx, sizeof mx, "%.8g%s", fi->max, specials_note(fi));
    printf("  %-5s %-22s %-8s %4d  %-24s %-21s %-21s %-21s %s\n", hl_dtype_format_name(fi->id), fi->long_name, sem,
           fi->bias, mx, pow2_and_decimal(fi->min_normal, mn, sizeof mn),
           fi->man_bits ? pow2_and_decimal(fi->min_subnormal, sub, sizeof sub) : "- (none)",
           pow2_and_decimal(fi->epsilon, eps, sizeof eps), nx_pow2(fi->unit_roundoff, u, sizeof u));
  }
  printf("\n  bit layouts (s sign, e exponent, m mantissa):\n");
  for (size_t i = 0; i < HL_FORMATS; i++) {
    const hl_format_info *fi = hl_format_get(hl_formats[i]);
    char layout[48];
    printf("  %-5s %2d bits  %s\n", hl_dtype_format_name(fi->id), fi->bits, layout_of(fi, layout, sizeof layout));
  }
  printf("\n  epsilon: the gap between 1 and the next number; unit roundoff (epsilon / 2): the largest\n"
         "  relative error of rounding to nearest. Below the smallest normal the gap stays that of the\n"
         "  subnormals, so relative precision fades until the smallest subnormal; half of it rounds to 0.\n"
         "  fp16 rounds to inf from 65520, the midpoint between 65504 and 2^16. tf32 is fp32's range with\n"
         "  fp16's precision, held in 32 bits (19 significant). e4m3 and e5m2 are OCP's fp8: e4m3 has no\n"
         "  inf (past 448: NaN, or 448 saturating). e2m3, e3m2 (fp6) and e2m1 (fp4) are OCP MX's elements:\n"
         "  no inf and no NaN, so whatever lies past their largest value, NaN too, becomes +-max. e8m0 is\n"
         "  OCP MX's block scale: powers of two only, 2^-127 to 2^127, no sign and no zero; its one NaN\n"
         "  (0xff) is what zero, negative numbers and NaN become.\n");
}

/* ------------------------------------------------------------ --value -- */

typedef struct {
  const char *label;    /* terminal */
  const char *rounding; /* CSV */
  hl_dtype f;
  hl_overflow ov;
  bool gpu_rna;         /* tf32 as the GPU makes it: from fp32, ties away */
} value_row;

static const value_row rows[] = {
    {"fp32", "nearest-even", HL_F32, HL_OVERFLOW_IEEE, false},
    {"tf32", "nearest-even", HL_TF32, HL_OVERFLOW_IEEE, false},
    {"tf32 (GPU cvt.rna)", "from fp32 then ties-away (GPU cvt.rna)", HL_TF32, HL_OVERFLOW_IEEE, true},
    {"fp16", "nearest-even", HL_F16, HL_OVERFLOW_IEEE, false},
    {"bf16", "nearest-even", HL_BF16, HL_OVERFLOW_IEEE, false},
    {"e4m3 (satfinite)", "nearest-even saturating", HL_E4M3, HL_OVERFLOW_SATURATE, false},
    {"e4m3 (no sat.)", "nearest-even not saturating", HL_E4M3, HL_OVERFLOW_IEEE, false},
    {"e5m2 (satfinite)", "nearest-even saturating", HL_E5M2, HL_OVERFLOW_SATURATE, false},
    {"e5m2 (no sat.)", "nearest-even not saturating", HL_E5M2, HL_OVERFLOW_IEEE, false},
    /* no inf and no NaN: always saturating */
    {"e2m3", "nearest-even saturating", HL_E2M3, HL_OVERFLOW_SATURATE, false},
    {"e3m2", "nearest-even saturating", HL_E3M2, HL_OVERFLOW_SATURATE, false},
    {"e2m1", "nearest-even saturating", HL_E2M1, HL_OVERFLOW_SATURATE, false},
    {"e8m0 (satfinite)", "nearest-even saturating", HL_E8M0, HL_OVERFLOW_SATURATE, false},
    {"e8m0 (no sat.)", "nearest-even not saturating", HL_E8M0, HL_OVERFLOW_IEEE, false},
};
#define NROWS (sizeof rows / sizeof rows[0])

typedef struct {
  uint32_t bits;
  double value;
  hl_fclass cls;
  bool has_below, has_above;
  double below, above;
} value_view;

static value_view view_of(const value_row *r, double x) {
  value_view v = {0};
  if (r->gpu_rna) {
    v.bits = hl_f32_bits(hl_f32_round_tf32_rna((float)x)) >> 13;
  } else {
    double rounded = hl_format_round(r->f, x, r->ov);
    /* rounded is representable in f, so this float conversion is exact */
    v.bits = hl_format_encode(r->f, (float)rounded, r->ov);
    if (isnan(rounded) && signbit(x) && hl_format_get(r->f)->sign_bits &&
        hl_format_classify(r->f, v.bits) == HL_CLASS_NAN)
      v.bits |= 1u << (hl_format_get(r->f)->bits - 1); /* keep the NaN's sign */
  }
  v.value = hl_format_decode(r->f, v.bits);
  v.cls = hl_format_classify(r->f, v.bits);
  uint32_t n;
  if ((v.has_below = hl_format_next_down(r->f, v.bits, &n))) v.below = hl_format_decode(r->f, n);
  if ((v.has_above = hl_format_next_up(r->f, v.bits, &n))) v.above = hl_format_decode(r->f, n);
  return v;
}

/* value - x, absolute and relative; false where x is NaN (no error to speak of). */
static bool stored_error(double value, double x, double *abs_error, double *rel_error) {
  if (isnan(x)) return false;
  if (isnan(value)) { /* overflow where the format has no inf */
    *abs_error = *rel_error = NAN;
  } else if (isinf(value) || isinf(x)) {
    *abs_error = *rel_error = value == x ? 0 : value > x ? INFINITY : -INFINITY;
  } else {
    *abs_error = value - x;
    *rel_error = x != 0 ? *abs_error / fabs(x) : 0;
  }
  return true;
}

/* The errors for the terminal: "%.3g" as in the CSV, "-" where there is none. */
static void error_text(double value, double x, char *abs_s, size_t alen, char *rel_s, size_t rlen) {
  double abs_error, rel_error;
  if (!stored_error(value, x, &abs_error, &rel_error)) {
    snprintf(abs_s, alen, "-");
    snprintf(rel_s, rlen, "-");
  } else if (isnan(abs_error)) {
    snprintf(abs_s, alen, "nan");
    snprintf(rel_s, rlen, "nan");
  } else {
    snprintf(abs_s, alen, "%.3g", abs_error);
    snprintf(rel_s, rlen, "%.3g", rel_error);
  }
}

static void show_value(const nx_ctx *c, double x) {
  char xs[128], buf[128];
  nx_heading("%s in every format", nx_show(x, xs, sizeof xs));
  if (isfinite(x)) printf("  read as the double %s\n", nx_exact(x, 60, buf, sizeof buf));
  printf("\n  %-19s %-36s %-11s %-10s %s\n", "format", "sign exponent mantissa", "hex", "class", "value stored");
  value_view views[NROWS];
  for (size_t i = 0; i < NROWS; i++) {
    views[i] = view_of(&rows[i], x);
    char bits[64], hex[16], val[128];
    hl_format_bitstring(rows[i].f, views[i].bits, bits, sizeof bits);
    printf("  %-19s %-36s %-11s %-10s %s\n", rows[i].label, bits, nx_hex(rows[i].f, views[i].bits, hex, sizeof hex),
           hl_fclass_name(views[i].cls), nx_exact(views[i].value, 40, val, sizeof val));
  }
  printf("\n  %-19s %-12s %-12s %-16s %s\n", "format", "error", "relative", "next below", "next above");
  for (size_t i = 0; i < NROWS; i++) {
    char ea[32], er[32], lo[64], hi[64];
    error_text(views[i].value, x, ea, sizeof ea, er, sizeof er);
    printf("  %-19s %-12s %-12s %-16s %s\n", rows[i].label, ea, er,
           views[i].has_below ? nx_show(views[i].below, lo, sizeof lo) : "-",
           views[i].has_above ? nx_show(views[i].above, hi, sizeof hi) : "-");
  }
  printf("\n  Each format keeps 1 + (mantissa bits) significant bits and rounds the rest to the nearest\n"
         "  value it has (ties to even). error = stored - x; the stored value lies between its neighbours.\n"
         "  fp6 and fp4 have no inf and no NaN: past their largest value (and for NaN) they keep +-max.\n"
         "  e8m0 holds powers of two (2^-127 to 2^127) and nothing else: a tie such as 3 (between 2 and 4)\n"
         "  goes to the even code (2 = code 128).\n");
  if (!(x > 0))
    printf("  e8m0 has no sign and no zero: %s is stored as its NaN code 0xff.\n", x == 0 ? "zero" : isnan(x) ? "NaN" : "a negative number");

  hl_csv *f = nx_csv_open(c, &nx_formats_value_schema);
  hl_row r;
  for (size_t i = 0; i < NROWS; i++) {
    char bits[64], hex[16];
    hl_format_bitstring(rows[i].f, views[i].bits, bits, sizeof bits);
    /* e8m0's bits are its exponent alone */
    const bool has_sign = hl_format_get(rows[i].f)->sign_bits;
    char *sign = has_sign ? strtok(bits, " ") : NULL, *exp = strtok(has_sign ? NULL : bits, " "),
         *man = strtok(NULL, " ");
    hl_row_begin(&r, &nx_formats_value_schema);
    hl_row_real(&r, "input", x);
    hl_row_text(&r, "format", hl_dtype_format_name(rows[i].f));
    hl_row_text(&r, "rounding", rows[i].rounding);
    hl_row_text(&r, "bits_hex", nx_hex(rows[i].f, views[i].bits, hex, sizeof hex));
    if (sign) hl_row_text(&r, "sign", sign);
    else hl_row_missing(&r, "sign");
    hl_row_text(&r, "exponent", exp);
    if (man) hl_row_text(&r, "mantissa", man);
    else hl_row_missing(&r, "mantissa");
    hl_row_real(&r, "value", views[i].value);
    hl_row_text(&r, "class", hl_fclass_name(views[i].cls));
    if (views[i].has_below) hl_row_real(&r, "next_below", views[i].below);
    else hl_row_missing(&r, "next_below");
    if (views[i].has_above) hl_row_real(&r, "next_above", views[i].above);
    else hl_row_missing(&r, "next_above");
    double abs_error, rel_error;
    if (stored_error(views[i].value, x, &abs_error, &rel_error)) {
      hl_row_real(&r, "abs_error", abs_error);
      hl_row_real(&r, "rel_error", rel_error);
    } else {
      hl_row_missing(&r, "abs_error");
      hl_row_missing(&r, "rel_error");
    }
    hl_csv_put(f, &r);
  }
  nx_csv_close(f);
}

int nx_formats(const nx_ctx *c, const double *value) {
  write_format_table(c);
  if (value) show_value(c, *value);
  else print_format_table();
  return 0;
}
