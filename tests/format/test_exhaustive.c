/* test_exhaustive.c — suite numerics: conversions checked on every input.
 *
 *   test_exhaustive fp16-roundtrip  all 65536 fp16 encodings -> fp32 -> fp16 is the identity
 *   test_exhaustive fp16-PATH       all 2^32 fp32 encodings -> fp16 through the array conversion the
 *   test_exhaustive bf16-PATH       kernels dispatch to (kernels/cpu/half_arrays.h), one path each:
 *                                   portable against the generic double-based rounding and half.h's
 *                                   NaN rule; avx2 and avx512 (the CPU's instructions) against the
 *                                   portable conversion, bit for bit. PATH: portable, avx2 (both),
 *                                   avx512 (bf16); a path this CPU lacks is skipped, saying so.
 *   test_exhaustive e4m3 | e5m2     all 2^32 fp32 -> fp8, saturating and not, against the generic rounding
 *   test_exhaustive tf32            all 2^32 fp32 -> tf32 (RNE) likewise, and half.h's NaN rule
 *   test_exhaustive tf32-rna        all 2^32 fp32 -> tf32, ties away (the GPU's cvt.rna), against
 *                                   C's round(); and the instruction as its SASS reads, which must
 *                                   agree on every input but the NaNs the device's rule takes
 *   test_exhaustive fp16-div        all 2^32 operand pairs a / b in fp16 (bf16) against a quotient
 *   test_exhaustive bf16-div        of the significands in integers, rounded by hand
 *   test_exhaustive fp16-div-approx __hdiv's scheme on all 2^32 pairs: exact with a correctly
 *                                   rounded reciprocal, not with one 1 ulp off (why the GPU
 *                                   divides in fp32 instead)
 *   test_exhaustive fp8-decode      all 256 codes of each fp8 format decode to the OCP value
 *
 * The references (format.c: scale to an integer significand, round with the
 * FPU's own ties-to-even, scale back; the integer division below) share no
 * code with half.h's bit manipulation. One argument per meson test, so that
 * the 2^32 sweeps run in parallel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/format.h"
#include "formats/half.h"
#include "kernels/cpu/half_arrays.h"
#include "tests/support/hltest.h"

#define ALL_F32 (UINT64_C(1) << 32)
#define MAX_REPORTS 5

/* Same value, or both NaN (NaN payloads are not compared; the sign of a NaN
 * is checked separately where a test wants it: F16C). Zeros compare by
 * sign. */
static int same_value(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return a == b && signbit(a) == signbit(b);
}

static void test_fp16_roundtrip(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    hl_f16 back = hl_f32_to_f16(hl_f16_to_f32((hl_f16)h));
    if (hl_f16_isnan((hl_f16)h)) {
      assert_true(hl_f16_isnan(back));
      assert_int_equal(back & 0x8000, h & 0x8000);
    } else if (back != h) {
      fail_msg("fp16 0x%04x -> %a -> 0x%04x", h, (double)hl_f16_to_f32((hl_f16)h), back);
    }
  }
}

/* ------------------------------------------ fp32 -> fp16, bf16 by path -- */

static int skipped_; /* checks skipped because the CPU lacks their path */

/* formats/half.h's NaN rule written out: the sign, the quiet bit set, the top of the payload */
static uint16_t nan_rule(hl_dtype t, uint32_t x) {
  if (t == HL_F16) return (uint16_t)(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x03ffu));
  return (uint16_t)((x >> 16) | 0x0040u);
}

/* Whether code is fp32 x converted to t. The portable path against format.c
 * (and the NaN rule); the others against the portable conversion. */
static int converts_right(hl_dtype t, hl_cpu_half_path p, uint32_t x, uint16_t code) {
  const float f = hl_f32_from_bits(x);
  if (p != HL_HALF_PATH_PORTABLE) return code == (t == HL_F16 ? hl_f32_to_f16_soft(f) : hl_f32_to_bf16_soft(f));
  if (isnan(f)) return code == nan_rule(t, x);
  return same_value(hl_format_decode(t, code), hl_format_round(t, (double)f, HL_OVERFLOW_IEEE));
}

typedef struct {
  hl_dtype type;
  hl_cpu_half_path path;
} half_check;

/* All 2^32 inputs, a block at a time, through the path's array conversion */
static void test_narrow_path(void **state) {
  const half_check *c = *state;
  const char *type = hl_dtype_format_name(c->type), *path = hl_cpu_half_path_name(c->path);
  if (!hl_cpu_half_path_present(c->type, c->path)) {
    printf("skipped: %s path %s needs %s, which this CPU does not have\n", type, path,
           hl_cpu_half_path_needs(c->type, c->path));
    skipped_++;
    skip();
  }
  const hl_cpu_narrow_fn narrow = hl_cpu_half_path_narrow(c->type, c->path);
  enum { BLOCK = 1 << 16 };
  static float in[BLOCK];
  static uint16_t out[BLOCK];
  uint64_t bad = 0;
  for (uint64_t base = 0; base < ALL_F32; base += BLOCK) {
    for (uint32_t j = 0; j < BLOCK; j++) in[j] = hl_f32_from_bits((uint32_t)base + j);
    narrow(in, out, BLOCK);
    for (uint32_t j = 0; j < BLOCK; j++) {
      const uint32_t x = (uint32_t)base + j;
      if (!converts_right(c->type, c->path, x, out[j]) && bad++ < MAX_REPORTS)
        print_error("fp32 0x%08x (%a): %s path %s gives 0x%04x, portable 0x%04x\n", x, (double)in[j], type, path,
                    out[j], c->type == HL_F16 ? hl_f32_to_f16_soft(in[j]) : hl_f32_to_bf16_soft(in[j]));
    }
  }
  if (bad)
    fail_msg("%llu of 2^32 fp32 inputs convert wrongly to %s on path %s", (unsigned long long)bad, type, path);
}

/* half.h's tf32 NaN rule written out: the sign, the top 10 payload bits, the quiet bit */
static uint32_t tf32_nan_rule(uint32_t x) { return (x & 0xffffe000u) | 0x00400000u; }

/* What a tf32 rounding must give beyond its value: a NaN by the rule, and
 * every result a tf32 (its container's low 13 bits zero). */
static int tf32_shape_right(uint32_t x, uint32_t r) {
  if ((x & 0x7fffffffu) > 0x7f800000u) return r == tf32_nan_rule(x);
  return (r & 0x1fffu) == 0;
}

static void test_tf32(void **state) {
  (void)state;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < ALL_F32; i++) {
    float x = hl_f32_from_bits((uint32_t)i);
    float ours = hl_f32_round_tf32_rne(x);
    double ref = hl_format_round(HL_TF32, (double)x, HL_OVERFLOW_IEEE);
    if ((!same_value(ours, ref) || !tf32_shape_right((uint32_t)i, hl_f32_bits(ours))) && bad++ < MAX_REPORTS)
      print_error("fp32 0x%08x (%a): ours 0x%08x (%a), reference %a\n", (uint32_t)i, (double)x, hl_f32_bits(ours),
                  (double)ours, ref);
  }
  if (bad) fail_msg("%llu of 2^32 fp32 inputs round differently to tf32", (unsigned long long)bad);
}

/* tf32 nearest, ties away, in doubles: x / q is exact, C's round() takes ties away */
static double tf32_rna_reference(float x) {
  if (isnan(x) || isinf(x) || x == 0) return x;
  int e = ilogb(x);
  if (e < -126) e = -126; /* subnormals share the smallest normal's quantum */
  const double q = ldexp(1.0, e - 10);
  return (double)(float)(round((double)x / q) * q); /* past FLT_MAX: inf */
}

/* cvt.rna.tf32.f32 as ptxas 13 compiles it for sm_80 and sm_90 (cuobjdump -sass):
 *   FSETP.GEU.AND P0, PT, |R0|, +INF, PT      (true for inf and NaN)
 *   @!P0 IMAD.IADD.U32 R0, R0, 0x1, 0x1000
 *   LOP3.LUT R7, R0, 0xffffe000, RZ, 0xc0, !PT */
static uint32_t cvt_rna_tf32_sass(uint32_t x) {
  if ((x & 0x7fffffffu) < 0x7f800000u) x += 0x1000u;
  return x & 0xffffe000u;
}

static void test_tf32_rna(void **state) {
  (void)state;
  uint64_t bad = 0, nan_to_inf = 0, nan_unquieted = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad, nan_to_inf, nan_unquieted)
  for (uint64_t i = 0; i < ALL_F32; i++) {
    const uint32_t x = (uint32_t)i;
    const float ours = hl_f32_round_tf32_rna(hl_f32_from_bits(x));
    const double ref = tf32_rna_reference(hl_f32_from_bits(x));
    if ((!same_value(ours, ref) || !tf32_shape_right(x, hl_f32_bits(ours))) && bad++ < MAX_REPORTS)
      print_error("fp32 0x%08x: ours 0x%08x, reference %a\n", x, hl_f32_bits(ours), ref);
    /* the device runs the instruction on everything but NaNs (kernels/convert_math.h) */
    const uint32_t instr = cvt_rna_tf32_sass(x);
    if (instr != hl_f32_bits(ours)) {
      if ((x & 0x7fffffffu) <= 0x7f800000u) {
        if (bad++ < MAX_REPORTS) print_error("fp32 0x%08x: the instruction gives 0x%08x, half.h 0x%08x\n", x, instr,
                                             hl_f32_bits(ours));
      } else if ((instr & 0x7fffffffu) == 0x7f800000u) {
        nan_to_inf++;
      } else {
        nan_unquieted++;
      }
    }
  }
  if (bad) fail_msg("%llu of 2^32 fp32 inputs round wrongly to tf32 (ties away)", (unsigned long long)bad);
  /* where the device's NaN branch matters: NaNs with a payload only in the low 13 bits (either
   * sign) come out of the bare instruction as inf; other signalling NaNs stay NaN, unquieted */
  printf("cvt.rna.tf32.f32 alone: %llu NaN inputs become inf, %llu stay signalling NaNs\n",
         (unsigned long long)nan_to_inf, (unsigned long long)nan_unquieted);
  assert_true(nan_to_inf == 2 * 8191);
  assert_true(nan_unquieted == 2 * ((UINT64_C(1) << 22) - 1) - 2 * 8191);
}

/* ---------------------------------------------- division, every operand pair -- */

/* A binary floating-point format by its field widths: 1 sign bit, w exponent
 * bits, p - 1 fraction bits; IEEE's bias, subnormals, inf and NaN. */
typedef struct {
  int w, p;
} bin_format;

/* A code taken apart: its class, and a finite nonzero value as M 2^E with the
 * significand M normalised to exactly p bits (subnormals too). */
typedef struct {
  uint8_t is_nan, is_inf, is_zero, sign;
  int16_t E;
  uint16_t M;
} decoded;

static decoded decode_code(bin_format F, uint32_t code) {
  const int m = F.p - 1, bias = (1 << (F.w - 1)) - 1;
  const uint32_t exp_all = (1u << F.w) - 1u, e = code >> m & exp_all, f = code & ((1u << m) - 1u);
  decoded d = {e == exp_all && f, e == exp_all && !f, !e && !f, (uint8_t)(code >> (F.w + m) & 1u), 0, 0};
  uint32_t M = e ? f | 1u << m : f;
  int E = (e ? (int)e : 1) - bias - m;
  while (M && M < 1u << m) M <<= 1, E--;
  d.M = (uint16_t)M, d.E = (int16_t)E;
  return d;
}

enum { DIV_IS_NAN = -1 };

/* a / b exactly as IEEE 754 defines it, in integers only: the quotient of the
 * two significands to p + 3 or p + 4 bits (a guard bit and more) and a sticky
 * bit for its remainder, rounded to nearest even at the format's quantum
 * (subnormal or not), overflow to inf. Returns the result's code, or
 * DIV_IS_NAN. 32-bit integers suffice for p <= 11. */
static int32_t div_reference(bin_format F, const decoded *a, const decoded *b) {
  const int m = F.p - 1, bias = (1 << (F.w - 1)) - 1, emin = 1 - bias, S = F.p + 3;
  const uint32_t exp_all = (1u << F.w) - 1u, frac_mask = (1u << m) - 1u;
  const uint32_t sign = (uint32_t)(a->sign ^ b->sign) << (F.w + m), inf = exp_all << m;
  if (a->is_nan || b->is_nan || (a->is_zero && b->is_zero) || (a->is_inf && b->is_inf)) return DIV_IS_NAN;
  if (a->is_inf || b->is_zero) return (int32_t)(sign | inf);
  if (a->is_zero || b->is_inf) return (int32_t)sign;
  const uint32_t num = (uint32_t)a->M << S;
  const uint32_t Q = num / b->M, rem = num % b->M; /* a / b = (Q + rem / Mb) 2^E0 */
  const int E0 = a->E - b->E - S;
  const int n = S + (a->M >= b->M);              /* Q's bit length: Q in [2^(S-1), 2^(S+1)) */
  const int e = E0 + n - 1;                      /* floor(log2 |a / b|) */
  int qe = (e > emin ? e : emin) - m;            /* the quantum's exponent */
  const int shift = qe - E0;                     /* bits of Q below the quantum */
  if (shift > n) return (int32_t)sign;           /* below half the quantum */
  uint32_t q = Q >> shift, r = Q & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (r > half || (r == half && (rem || (q & 1u)))) q++;
  if (q == 0) return (int32_t)sign;
  if (q < 1u << m) return (int32_t)(sign | q); /* subnormal */
  if (q == 1u << F.p) q >>= 1, qe++;           /* rounded up to the next binade */
  const int biased = qe + m + bias;
  if (biased >= (int)exp_all) return (int32_t)(sign | inf);
  return (int32_t)(sign | (uint32_t)biased << m | (q & frac_mask));
}

static int wrong_quotient(bin_format F, const decoded *codes, uint32_t a, uint32_t b, uint16_t got, int32_t *want) {
  *want = div_reference(F, &codes[a], &codes[b]);
  if (*want == DIV_IS_NAN) return !decode_code(F, got).is_nan;
  return got != (uint16_t)*want;
}

static void check_division(bin_format F, const char *name, uint16_t (*div)(uint16_t, uint16_t)) {
  static decoded codes[65536];
  for (uint32_t c = 0; c < 65536; c++) codes[c] = decode_code(F, c);
  uint64_t bad = 0;
#pragma omp parallel for schedule(dynamic, 256) reduction(+ : bad)
  for (uint32_t a = 0; a < 65536; a++)
    for (uint32_t b = 0; b < 65536; b++) {
      int32_t want;
      bad += (uint64_t)wrong_quotient(F, codes, a, b, div((uint16_t)a, (uint16_t)b), &want);
    }
  if (!bad) return;
  int shown = 0;
  for (uint32_t a = 0; a < 65536 && shown < MAX_REPORTS; a++)
    for (uint32_t b = 0; b < 65536 && shown < MAX_REPORTS; b++) {
      int32_t want;
      const uint16_t got = div((uint16_t)a, (uint16_t)b);
      if (wrong_quotient(F, codes, a, b, got, &want))
        shown++, want == DIV_IS_NAN
                     ? print_error("%s 0x%04x / 0x%04x: half.h 0x%04x, reference NaN\n", name, a, b, got)
                     : print_error("%s 0x%04x / 0x%04x: half.h 0x%04x, reference 0x%04x\n", name, a, b, got,
                                   (unsigned)want);
    }
  fail_msg("%llu of 2^32 %s divisions are not correctly rounded", (unsigned long long)bad, name);
}

/* Why the GPU does not use __hdiv for fp16: its scheme (CUDA 13's cuda_fp16.hpp) is a reciprocal
 * times a, rounded to fp16, corrected with an FMA only for results below 143 x 2^-24. With a
 * correctly rounded reciprocal it gives the correctly rounded quotient on every pair; its
 * rcp.approx.ftz.f32 is documented to within 1 ulp, and a reciprocal 1 ulp off already misrounds
 * many (one ulp below misrounds as many: a sweep by hand gave the same counts). The counts go to
 * stdout; docs/cuda.md quotes them. */
static uint16_t hdiv_scheme(uint16_t a, uint16_t b, int ulps) {
  const float fa = hl_f16_to_f32(a), fb = hl_f16_to_f32(b);
  float rcp = 1.0f / fb;
  if (ulps) rcp = nextafterf(rcp, ulps > 0 ? INFINITY : -INFINITY);
  float fv = rcp * fa;
  uint16_t v = hl_f32_to_f16(fv);
  if ((v & 0x7fffu) < 0x008fu && (v & 0x7fffu) > 0) {
    fv = fmaf(rcp, fmaf(-fb, fv, fa), fv);
    v = hl_f32_to_f16(fv);
  }
  return v;
}

static void test_fp16_div_approx(void **state) {
  (void)state;
  const bin_format F = {5, 11};
  static decoded codes[65536];
  for (uint32_t c = 0; c < 65536; c++) codes[c] = decode_code(F, c);
  uint64_t wrong[2] = {0, 0}, wrong_normal[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    uint64_t w = 0, wn = 0;
#pragma omp parallel for schedule(dynamic, 256) reduction(+ : w, wn)
    for (uint32_t a = 0; a < 65536; a++)
      for (uint32_t b = 0; b < 65536; b++) {
        int32_t want;
        const uint16_t got = hdiv_scheme((uint16_t)a, (uint16_t)b, k);
        if (wrong_quotient(F, codes, a, b, got, &want)) w++, wn += (got & 0x7c00u) != 0;
      }
    wrong[k] = w, wrong_normal[k] = wn;
  }
  printf("__hdiv's scheme, of 2^32 fp16 pairs: reciprocal correctly rounded: %llu misrounded; 1 ulp up: %llu "
         "(%llu of them normal)\n",
         (unsigned long long)wrong[0], (unsigned long long)wrong[1], (unsigned long long)wrong_normal[1]);
  assert_true(wrong[0] == 0);
  assert_true(wrong[1] > 0);
}

static uint16_t f16_div(uint16_t a, uint16_t b) { return hl_f16_div(a, b); }
static uint16_t bf16_div(uint16_t a, uint16_t b) { return hl_bf16_div(a, b); }

static void test_fp16_div(void **state) {
  (void)state;
  check_division((bin_format){5, 11}, "fp16", f16_div);
}

static void test_bf16_div(void **state) {
  (void)state;
  check_division((bin_format){8, 8}, "bf16", bf16_div);
}

static void check_fp8(hl_dtype fmt, hl_fp8_kind kind) {
  double decode[256];
  for (int c = 0; c < 256; c++) decode[c] = hl_format_decode(fmt, (uint32_t)c);
  const double max = hl_format_get(fmt)->max;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < ALL_F32; i++) {
    float x = hl_f32_from_bits((uint32_t)i);
    double ref = hl_format_round(fmt, (double)x, HL_OVERFLOW_IEEE);
    /* satfinite: whatever overflowed (to inf or NaN) from a non-NaN input is +-max */
    double ref_sat = (!isnan(x) && (isinf(ref) || isnan(ref))) ? copysign(max, (double)x) : ref;
    double ours = decode[hl_f32_to_fp8_soft(x, kind, 0)];
    double ours_sat = decode[hl_f32_to_fp8_soft(x, kind, 1)];
    if ((!same_value(ours, ref) || !same_value(ours_sat, ref_sat)) && bad++ < MAX_REPORTS)
      print_error("fp32 0x%08x (%a): ours %a / sat %a, reference %a / sat %a\n", (uint32_t)i, (double)x, ours,
                  ours_sat, ref, ref_sat);
  }
  if (bad) fail_msg("%llu of 2^32 fp32 inputs convert differently to %s", (unsigned long long)bad,
                    hl_dtype_format_name(fmt));
}

static void test_e4m3(void **state) {
  (void)state;
  check_fp8(HL_E4M3, HL_FP8_E4M3);
}

static void test_e5m2(void **state) {
  (void)state;
  check_fp8(HL_E5M2, HL_FP8_E5M2);
}

/* Every code against the OCP definition written out: (-1)^s 2^(e-bias) (1 + m/2^M),
 * subnormal 2^(1-bias) (m/2^M), with the specials of each format. */
static void test_fp8_decode(void **state) {
  (void)state;
  for (int kind = 0; kind < 2; kind++) {
    const int M = kind == HL_FP8_E4M3 ? 3 : 2, E = 7 - M, bias = kind == HL_FP8_E4M3 ? 7 : 15;
    const hl_dtype fmt = kind == HL_FP8_E4M3 ? HL_E4M3 : HL_E5M2;
    for (int c = 0; c < 256; c++) {
      int s = c >> 7, e = (c >> M) & ((1 << E) - 1), m = c & ((1 << M) - 1);
      double want;
      if (kind == HL_FP8_E4M3 && e == 15 && m == 7) want = NAN;
      else if (kind == HL_FP8_E5M2 && e == 31) want = m ? NAN : INFINITY;
      else if (e == 0) want = pow(2.0, 1 - bias) * (m / pow(2.0, M));
      else want = pow(2.0, e - bias) * (1.0 + m / pow(2.0, M));
      if (s) want = -want;
      double soft = hl_fp8_to_f32_soft((hl_fp8)c, (hl_fp8_kind)kind);
      double generic = hl_format_decode(fmt, (uint32_t)c);
      if (!same_value(soft, want) || !same_value(generic, want))
        fail_msg("%s code 0x%02x: half.h %a, format.c %a, definition %a", hl_dtype_format_name(fmt), c, soft,
                 generic, want);
      /* and encoding the decoded value gives the code back (NaN: a NaN code) */
      if (!isnan(want)) assert_int_equal(hl_f32_to_fp8_soft((float)want, (hl_fp8_kind)kind, 0), c);
    }
  }
}

int main(int argc, char **argv) {
  static const half_check checks[] = {
      {HL_F16, HL_HALF_PATH_PORTABLE},  {HL_F16, HL_HALF_PATH_AVX2},
      {HL_BF16, HL_HALF_PATH_PORTABLE}, {HL_BF16, HL_HALF_PATH_AVX2}, {HL_BF16, HL_HALF_PATH_AVX512},
  };
/* a sweep named as its meson test, so that cmocka's report names it too */
#define PATH_CHECK(NAME, I) {NAME, {NAME, test_narrow_path, NULL, NULL, (void *)&checks[I]}}
  static const struct {
    const char *name;
    struct CMUnitTest test;
  } all[] = {
      {"fp16-roundtrip", cmocka_unit_test(test_fp16_roundtrip)},
      PATH_CHECK("fp16-portable", 0),
      PATH_CHECK("fp16-avx2", 1),
      PATH_CHECK("bf16-portable", 2),
      PATH_CHECK("bf16-avx2", 3),
      PATH_CHECK("bf16-avx512", 4),
      {"tf32", cmocka_unit_test(test_tf32)},
      {"tf32-rna", cmocka_unit_test(test_tf32_rna)},
      {"fp16-div", cmocka_unit_test(test_fp16_div)},
      {"bf16-div", cmocka_unit_test(test_bf16_div)},
      {"fp16-div-approx", cmocka_unit_test(test_fp16_div_approx)},
      {"e4m3", cmocka_unit_test(test_e4m3)},
      {"e5m2", cmocka_unit_test(test_e5m2)},
      {"fp8-decode", cmocka_unit_test(test_fp8_decode)},
  };
  struct CMUnitTest chosen[sizeof all / sizeof all[0]];
  size_t n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    for (int a = 1; a < argc; a++)
      if (!strcmp(argv[a], all[i].name)) chosen[n++] = all[i].test;
  if (argc < 2) {
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) chosen[n++] = all[i].test;
  } else if (n == 0) {
    fprintf(stderr, "test_exhaustive: unknown check '%s'\n", argv[1]);
    return 2;
  }
  const int failed = _cmocka_run_group_tests("exhaustive", chosen, n, NULL, NULL);
  /* meson: skipped, when every chosen check was (cmocka alone would count them as passed) */
  return failed == 0 && skipped_ == (int)n ? 77 : failed;
}
