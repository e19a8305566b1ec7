/* format.c — format descriptions, generic rounding, bit-level views. */
#include "formats/format.h"

#include <math.h>
#include <string.h>
#include <strings.h>

/* Figures from IEEE 754-2019, OCP 8-bit FP v1.0, OCP MX v1.0 and NVIDIA's
 * tf32 (docs/numerics.md, "The formats"). */
const hl_dtype hl_formats[HL_FORMATS] = {HL_F32, HL_TF32, HL_F16, HL_BF16, HL_E4M3,
                                         HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};

#define SIGNED_FORMAT(ID, NAME, BITS, E, M, BIAS, EMIN, EMAX, MAX, MIN_NORMAL, MIN_SUB, INF, NAN_, IEEE_MAX) \
  [ID] = {.id = ID, .long_name = NAME, .bits = BITS, .sign_bits = 1, .exp_bits = E, .man_bits = M, .bias = BIAS,  \
          .emin = EMIN, .emax = EMAX, .max = MAX, .min_normal = MIN_NORMAL, .min_subnormal = MIN_SUB,          \
          .epsilon = 0x1p-##M, .unit_roundoff = 0x1p-##M / 2, .has_inf = INF, .has_nan = NAN_, .ieee_max = IEEE_MAX}

static const hl_format_info formats[HL_DTYPES] = {
    SIGNED_FORMAT(HL_F32, "IEEE 754 binary32", 32, 8, 23, 127, -126, 127, 0x1.fffffep127, 0x1p-126, 0x1p-149, true,
                  true, true),
    SIGNED_FORMAT(HL_TF32, "NVIDIA TensorFloat-32", 19, 8, 10, 127, -126, 127, 0x1.ffcp127, 0x1p-126, 0x1p-136, true,
                  true, true),
    SIGNED_FORMAT(HL_F16, "IEEE 754 binary16", 16, 5, 10, 15, -14, 15, 65504.0, 0x1p-14, 0x1p-24, true, true, true),
    SIGNED_FORMAT(HL_BF16, "bfloat16", 16, 8, 7, 127, -126, 127, 0x1.fep127, 0x1p-126, 0x1p-133, true, true, true),
    SIGNED_FORMAT(HL_E4M3, "OCP fp8 E4M3", 8, 4, 3, 7, -6, 8, 448.0, 0x1p-6, 0x1p-9, false, true, false),
    SIGNED_FORMAT(HL_E5M2, "OCP fp8 E5M2", 8, 5, 2, 15, -14, 15, 57344.0, 0x1p-14, 0x1p-16, true, true, true),
    SIGNED_FORMAT(HL_E2M3, "OCP MX fp6 E2M3", 6, 2, 3, 1, 0, 2, 7.5, 1.0, 0.125, false, false, false),
    SIGNED_FORMAT(HL_E3M2, "OCP MX fp6 E3M2", 6, 3, 2, 3, -2, 4, 28.0, 0.25, 0.0625, false, false, false),
    SIGNED_FORMAT(HL_E2M1, "OCP MX fp4 E2M1", 4, 2, 1, 1, 0, 2, 6.0, 1.0, 0.5, false, false, false),
    /* unsigned powers of two 2^-127 .. 2^127; 0xff is NaN; no zero, no subnormals. Between 2^e and
     * 2^(e+1) the gap is 2^e: epsilon 1; rounding to nearest is off by at most a third of the value
     * (at 1.5 2^e), but the unit roundoff is the usual half of epsilon. */
    [HL_E8M0] = {.id = HL_E8M0, .long_name = "OCP MX scale E8M0", .bits = 8, .sign_bits = 0, .exp_bits = 8,
                 .man_bits = 0, .bias = 127, .emin = -127, .emax = 127, .max = 0x1p127, .min_normal = 0x1p-127,
                 .min_subnormal = 0x1p-127, .epsilon = 1.0, .unit_roundoff = 0.5, .has_inf = false, .has_nan = true,
                 .ieee_max = false},
};

const hl_format_info *hl_format_get(hl_dtype f) {
  return (unsigned)f < HL_DTYPES && formats[f].bits ? &formats[f] : NULL;
}

const hl_format_info *hl_format_by_name(const char *name) {
  if (!name) return NULL;
  if ((!strncasecmp(name, "fp8", 3) || !strncasecmp(name, "fp6", 3) || !strncasecmp(name, "fp4", 3)) &&
      (name[3] == '-' || name[3] == '_'))
    name += 4;
  for (int i = 0; i < HL_FORMATS; i++)
    if (!strcasecmp(name, hl_dtype_format_name(hl_formats[i]))) return &formats[hl_formats[i]];
  return NULL;
}

/* Exponent of a finite non-zero double, read from its encoding (normal
 * doubles only, which covers every value rounded here). */
static int exponent_of(double ax) {
  uint64_t u;
  memcpy(&u, &ax, sizeof u);
  return (int)((u >> 52) & 0x7ff) - 1023;
}

static double pow2(int e) {
  uint64_t u = (uint64_t)(e + 1023) << 52;
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

double hl_format_stored(hl_dtype f, float x) { return hl_format_decode(f, hl_format_encode(f, x, HL_OVERFLOW_IEEE)); }

/* e8m0: 2^k nearest x > 0, ties (1.5 2^k) to the even code, as the generic
 * rounding on bits does; below 2^-127 only 2^-127 is near. Zero, negative
 * values and NaN have no code: NaN. */
static double e8m0_round(const hl_format_info *fi, double x, hl_overflow ov) {
  if (!(x > 0.0)) return NAN;
  if (isinf(x)) return ov == HL_OVERFLOW_SATURATE ? fi->max : NAN;
  int e = exponent_of(x);
  if (e < fi->emin) return fi->min_normal;
  const double q = x / pow2(e); /* in [1, 2) */
  if (q > 1.5 || (q == 1.5 && ((e + fi->bias) & 1))) e++;
  if (e > fi->emax) return ov == HL_OVERFLOW_SATURATE ? fi->max : NAN;
  return pow2(e);
}

double hl_format_round(hl_dtype f, double x, hl_overflow ov) {
  const hl_format_info *fi = &formats[f];
  if (f == HL_E8M0) return e8m0_round(fi, x, ov);
  if (isnan(x)) return fi->has_nan ? x : copysign(fi->max, x);
  /* a format without inf saturates when it has no NaN to give either */
  if (!fi->has_nan) ov = HL_OVERFLOW_SATURATE;
  if (isinf(x)) {
    if (ov == HL_OVERFLOW_SATURATE) return copysign(fi->max, x);
    return fi->has_inf ? x : NAN;
  }
  double ax = fabs(x);
  if (ax == 0.0) return x;
  /* Spacing of the format around ax: 2^(e - man_bits), where e is ax's
   * exponent clamped to emin (below it the spacing stays that of the
   * subnormals). ax / quantum is exact, a power-of-two scaling. */
  int e = exponent_of(ax);
  if (e < fi->emin) e = fi->emin;
  double quantum = pow2(e - fi->man_bits);
  double q = ax / quantum; /* < 2^(man_bits + 2) */
  /* Round to an integer, ties to even: adding and subtracting 2^52 leaves
   * no fraction bits in a double, so the hardware's RNE does the rounding. */
  double r = ((q + 0x1p52) - 0x1p52) * quantum;
  if (r > fi->max) {
    if (ov == HL_OVERFLOW_SATURATE) return copysign(fi->max, x);
    return fi->has_inf ? copysign(INFINITY, x) : NAN;
  }
  return copysign(r, x);
}

/* ---------------------------------------------------------- bit layouts -- */

/* 0 for e8m0, which has no sign */
static uint32_t sign_mask(const hl_format_info *fi) { return fi->sign_bits ? 1u << (fi->bits - 1) : 0u; }
static uint32_t exp_all_ones(const hl_format_info *fi) { return (1u << fi->exp_bits) - 1u; }
static uint32_t man_mask(const hl_format_info *fi) { return (1u << fi->man_bits) - 1u; }

void hl_format_fields(hl_dtype f, uint32_t bits, uint32_t *sign, uint32_t *exp, uint32_t *man) {
  const hl_format_info *fi = &formats[f];
  *sign = fi->sign_bits ? (bits >> (fi->bits - 1)) & 1u : 0u;
  *exp = (bits >> fi->man_bits) & exp_all_ones(fi);
  *man = bits & man_mask(fi);
}

hl_fclass hl_format_classify(hl_dtype f, uint32_t bits) {
  const hl_format_info *fi = &formats[f];
  uint32_t s, e, m;
  hl_format_fields(f, bits, &s, &e, &m);
  if (e == exp_all_ones(fi)) {
    if (fi->ieee_max) return m == 0 ? HL_CLASS_INF : HL_CLASS_NAN;
    return fi->has_nan && m == man_mask(fi) ? HL_CLASS_NAN : HL_CLASS_NORMAL;
  }
  if (fi->man_bits == 0) return HL_CLASS_NORMAL; /* e8m0: exponent 0 is 2^-127 */
  if (e == 0) return m == 0 ? HL_CLASS_ZERO : HL_CLASS_SUBNORMAL;
  return HL_CLASS_NORMAL;
}

const char *hl_fclass_name(hl_fclass c) {
  static const char *names[] = {"zero", "subnormal", "normal", "inf", "nan"};
  return (unsigned)c <= HL_CLASS_NAN ? names[c] : "?";
}

double hl_format_decode(hl_dtype f, uint32_t bits) {
  const hl_format_info *fi = &formats[f];
  uint32_t s, e, m;
  hl_format_fields(f, bits, &s, &e, &m);
  double v;
  switch (hl_format_classify(f, bits)) {
    case HL_CLASS_NAN: return s ? -NAN : NAN;
    case HL_CLASS_INF: v = INFINITY; break;
    case HL_CLASS_ZERO: v = 0.0; break;
    case HL_CLASS_SUBNORMAL: v = ldexp((double)m, fi->emin - fi->man_bits); break;
    default: v = ldexp(1.0 + ldexp((double)m, -fi->man_bits), (int)e - fi->bias); break;
  }
  return s ? -v : v;
}

uint32_t hl_format_encode(hl_dtype f, float x, hl_overflow ov) {
  const hl_round_spec spec = hl_round_spec_make(f, HL_ROUNDING_NEAREST_EVEN, ov, false);
  return hl_round_bits(&spec, x, 0);
}

char *hl_format_bitstring(hl_dtype f, uint32_t bits, char *buf, size_t len) {
  const hl_format_info *fi = &formats[f];
  size_t k = 0;
  for (int i = fi->bits - 1; i >= 0 && k + 2 < len; i--) {
    buf[k++] = (bits >> i) & 1u ? '1' : '0';
    if (((i == fi->bits - 1 && fi->sign_bits) || i == fi->man_bits) && i != 0 && k + 2 < len) buf[k++] = ' ';
  }
  buf[k] = '\0';
  return buf;
}

/* Largest finite magnitude code: below inf, below the one NaN code, or all ones. */
static uint32_t max_code(const hl_format_info *fi) {
  const uint32_t top = exp_all_ones(fi) << fi->man_bits;
  return fi->ieee_max ? top - 1u : fi->has_nan ? (top | man_mask(fi)) - 1u : top | man_mask(fi);
}

bool hl_format_next_up(hl_dtype f, uint32_t bits, uint32_t *out) {
  const hl_format_info *fi = &formats[f];
  hl_fclass c = hl_format_classify(f, bits);
  uint32_t sm = sign_mask(fi), mag = sm ? bits & (sm - 1u) : bits;
  if (c == HL_CLASS_NAN) return false;
  if (!sm) { /* e8m0: unsigned, no zero */
    if (mag >= max_code(fi)) return false;
    *out = mag + 1u;
    return true;
  }
  if (!(bits & sm)) { /* positive (or +0) */
    if (c == HL_CLASS_INF) return false;
    if (mag == max_code(fi)) {
      if (!fi->has_inf) return false;
      *out = exp_all_ones(fi) << fi->man_bits;
      return true;
    }
    *out = mag + 1u;
    return true;
  }
  /* negative: towards zero; -0 -> +min subnormal */
  if (mag == 0) {
    *out = 1u;
    return true;
  }
  if (c == HL_CLASS_INF) {
    *out = sm | max_code(fi);
    return true;
  }
  *out = sm | (mag - 1u);
  return true;
}

bool hl_format_next_down(hl_dtype f, uint32_t bits, uint32_t *out) {
  const hl_format_info *fi = &formats[f];
  uint32_t sm = sign_mask(fi);
  uint32_t up;
  if (!sm) { /* e8m0 */
    if (hl_format_classify(f, bits) == HL_CLASS_NAN || bits == 0) return false;
    *out = bits - 1u;
    return true;
  }
  if (!hl_format_next_up(f, bits ^ sm, &up)) return false;
  *out = up ^ sm;
  return true;
}
