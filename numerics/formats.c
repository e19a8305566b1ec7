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

static const hl_dtype table_order[] = {HL_F32, HL_TF32, HL_F16, HL_BF16, HL_E4M3, HL_E5M2};

static const char *pow2_and_decimal(double v, char *buf, size_t len) {
  char p[32];
  snprintf(buf, len, "%s = %.5g", nx_pow2(v, p, sizeof p), v);
  return buf;
}

static void write_format_table(const nx_ctx *c) {
  hl_csv *f = nx_csv_open(c, "formats.csv",
                          "format,long_name,bits,sign_bits,exponent_bits,mantissa_bits,bias,emin,emax,"
                          "max_finite,min_normal,min_subnormal,epsilon,unit_roundoff,has_inf");
  for (size_t i = 0; i < sizeof table_order / sizeof table_order[0]; i++) {
    const hl_format_info *fi = hl_format_get(table_order[i]);
    hl_csv_row(f, "%s,%s,%d,1,%d,%d,%d,%d,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%d", hl_dtype_format_name(fi->id), fi->long_name,
               fi->bits, fi->exp_bits, fi->man_bits, fi->bias, fi->emin, fi->emax, fi->max, fi->min_normal,
               fi->min_subnormal, fi->epsilon, fi->unit_roundoff, fi->has_inf);
  }
  nx_csv_close(f);
}

static void print_format_table(void) {
  nx_heading("formats: fields, range and precision");
  printf("  %-5s %-22s %-8s %4s  %-14s %-21s %-21s %-21s %s\n", "name", "", "s/e/m", "bias", "largest finite",
         "smallest normal", "smallest subnormal", "epsilon", "unit roundoff");
  for (size_t i = 0; i < sizeof table_order / sizeof table_order[0]; i++) {
    const hl_format_info *fi = hl_format_get(table_order[i]);
    char sem[16], mx[32], mn[40], sub[40], eps[40], u[16];
    snprintf(sem, sizeof sem, "1/%d/%d", fi->exp_bits, fi->man_bits);
    snprintf(mx, sizeof mx, "%.8g%s", fi->max, fi->has_inf ? "" : " (no inf)");
    printf("  %-5s %-22s %-8s %4d  %-14s %-21s %-21s %-21s %s\n", hl_dtype_format_name(fi->id), fi->long_name, sem, fi->bias, mx,
           pow2_and_decimal(fi->min_normal, mn, sizeof mn), pow2_and_decimal(fi->min_subnormal, sub, sizeof sub),
           pow2_and_decimal(fi->epsilon, eps, sizeof eps), nx_pow2(fi->unit_roundoff, u, sizeof u));
  }
  printf("\n  epsilon: the gap between 1 and the next number; unit roundoff (epsilon / 2): the largest\n"
         "  relative error of rounding to nearest. Below the smallest normal the gap stays that of the\n"
         "  subnormals, so relative precision fades until the smallest subnormal; half of it rounds to 0.\n"
         "  fp16 rounds to inf from 65520, the midpoint between 65504 and 2^16. tf32 is fp32's range with\n"
         "  fp16's precision, held in 32 bits (19 significant). fp8 formats are OCP's; e4m3 has no inf.\n");
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
    if (isnan(rounded) && signbit(x) && hl_format_classify(r->f, v.bits) == HL_CLASS_NAN)
      v.bits |= 1u << (hl_format_get(r->f)->bits - 1); /* keep the NaN's sign */
  }
  v.value = hl_format_decode(r->f, v.bits);
  v.cls = hl_format_classify(r->f, v.bits);
  uint32_t n;
  if ((v.has_below = hl_format_next_down(r->f, v.bits, &n))) v.below = hl_format_decode(r->f, n);
  if ((v.has_above = hl_format_next_up(r->f, v.bits, &n))) v.above = hl_format_decode(r->f, n);
  return v;
}

/* stored - x, absolute and relative; "-" where x is NaN (no error to speak of). */
static void error_text(double value, double x, char *abs_s, size_t alen, char *rel_s, size_t rlen) {
  if (isnan(x)) {
    snprintf(abs_s, alen, "-");
    snprintf(rel_s, rlen, "-");
  } else if (isnan(value)) { /* overflow where the format has no inf */
    snprintf(abs_s, alen, "nan");
    snprintf(rel_s, rlen, "nan");
  } else if (isinf(value) || isinf(x)) {
    snprintf(abs_s, alen, "%s", value == x ? "0" : value > x ? "inf" : "-inf");
    snprintf(rel_s, rlen, "%s", value == x ? "0" : value > x ? "inf" : "-inf");
  } else {
    double e = value - x;
    snprintf(abs_s, alen, "%.3g", e);
    if (x != 0) snprintf(rel_s, rlen, "%.3g", e / fabs(x));
    else snprintf(rel_s, rlen, "0");
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
         "  value it has (ties to even). error = stored - x; the stored value lies between its neighbours.\n");

  hl_csv *f = nx_csv_open(c, "formats_value.csv",
                          "input,format,rounding,bits_hex,sign,exponent,mantissa,value,class,next_below,next_above,"
                          "abs_error,rel_error");
  for (size_t i = 0; i < NROWS; i++) {
    char bits[64], hex[16], ea[32], er[32];
    hl_format_bitstring(rows[i].f, views[i].bits, bits, sizeof bits);
    char *sign = strtok(bits, " "), *exp = strtok(NULL, " "), *man = strtok(NULL, " ");
    error_text(views[i].value, x, ea, sizeof ea, er, sizeof er);
    char below[40] = "", above[40] = "";
    if (views[i].has_below) snprintf(below, sizeof below, "%.17g", views[i].below);
    if (views[i].has_above) snprintf(above, sizeof above, "%.17g", views[i].above);
    hl_csv_row(f, "%.17g,%s,%s,%s,%s,%s,%s,%.17g,%s,%s,%s,%s,%s", x, hl_dtype_format_name(rows[i].f), rows[i].rounding,
               nx_hex(rows[i].f, views[i].bits, hex, sizeof hex), sign, exp, man ? man : "", views[i].value,
               hl_fclass_name(views[i].cls), below, above, ea, er);
  }
  nx_csv_close(f);
}

int nx_formats(const nx_ctx *c, const double *value) {
  write_format_table(c);
  if (value) show_value(c, *value);
  else print_format_table();
  return 0;
}
