/* test_round.c — suite unit: formats/round.h value by value.
 *   - each format's layout says what format.c's table says; which specs are valid;
 *   - every code decodes as half.h (fp16, bf16, fp8), the tf32 container or
 *     format.c's decoder (fp6, fp4, e8m0) does, and rounds back to itself
 *     under every deterministic spec;
 *   - facts worked out by hand: ties, directed roundings of both signs,
 *     overflow by each rule and rounding, flushing, NaNs, the fp8, fp6, fp4
 *     and e8m0 edges;
 *   - hl_round_bits and hl_cpu_round_array give the generic rounding's bits
 *     for every spec (so neither picks a fast path for a spec it does not
 *     implement), on edges, binade ends and random encodings;
 *   - stochastic rounding: against a reference in doubles (up exactly when
 *     the top k random bits, as an integer, lie below the distance from the
 *     value below times 2^k), unbiased over 2^20 samples, rounding up as
 *     often as the distance says, always to one of the two neighbours,
 *     reproducible from its Philox stream, and deciding on k bits only.
 * All 2^32 inputs: suite numerics (test_round_sweep.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/format.h"
#include "formats/philox.h"
#include "formats/round.h"
#include "kernels/cpu/half_arrays.h"
#include "tests/support/hltest.h"

static const hl_dtype formats[] = {HL_F32, HL_TF32, HL_F16, HL_BF16, HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
enum { FORMATS = sizeof formats / sizeof formats[0] };

static uint32_t round_by(hl_dtype f, hl_rounding r, hl_overflow ov, bool flush, float x) {
  const hl_round_spec s = hl_round_spec_make(f, r, ov, flush);
  return hl_round_bits_generic(&s, x, 0);
}

/* ---------------------------------------------------------- layouts -- */

static void test_layouts_match_format_table(void **state) {
  (void)state;
  for (int k = 0; k < FORMATS; k++) {
    const hl_format_info *fi = hl_format_get(formats[k]);
    const hl_format_layout l = hl_format_layout_of(formats[k]);
    assert_int_equal(l.exp_bits, fi->exp_bits);
    assert_int_equal(l.man_bits, fi->man_bits);
    assert_int_equal(l.bias, fi->bias);
    assert_int_equal(l.sign_bits, fi->sign_bits);
    assert_int_equal(l.specials == HL_SPECIALS_IEEE, fi->has_inf);
    assert_int_equal(l.specials == HL_SPECIALS_IEEE, fi->ieee_max);
    assert_int_equal(l.specials != HL_SPECIALS_NONE, fi->has_nan);
    assert_int_equal(hl_format_code_width(formats[k]), fi->bits);
    /* the largest finite value and the smallest subnormal (e8m0: its smallest value, code 0),
     * as the generic rounding finds them */
    const uint32_t max = round_by(formats[k], HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_SATURATE, false, INFINITY);
    assert_true(hl_round_decode(formats[k], max) == fi->max);
    assert_true(hl_round_decode(formats[k], fi->man_bits ? 1 : 0) == fi->min_subnormal);
  }
  assert_int_equal(hl_format_code_bytes(HL_E2M1), 1);
  assert_int_equal(hl_format_code_bytes(HL_E8M0), 1);
  assert_int_equal(hl_format_code_bytes(HL_E4M3), 1);
  assert_int_equal(hl_format_code_bytes(HL_BF16), 2);
  assert_int_equal(hl_format_code_bytes(HL_TF32), 4);
}

static void test_spec_validity(void **state) {
  (void)state;
  for (int k = 0; k < FORMATS; k++) {
    hl_round_spec s = hl_round_nearest(formats[k]);
    assert_true(hl_round_spec_valid(&s));
    s = hl_round_stochastic(formats[k], 1, 0, 0);
    assert_true(hl_round_spec_valid(&s));
    s.random_bits = 0; /* no random bits */
    assert_false(hl_round_spec_valid(&s));
    s.random_bits = 33;
    assert_false(hl_round_spec_valid(&s));
    s.rounding = HL_ROUNDINGS;
    assert_false(hl_round_spec_valid(&s));
    s = hl_round_nearest(formats[k]);
    s.overflow = (hl_overflow)2;
    assert_false(hl_round_spec_valid(&s));
  }
  const hl_round_spec not_a_format = hl_round_nearest(HL_I32);
  assert_false(hl_round_spec_valid(&not_a_format));
}

/* --------------------------------------------------------- decoding -- */

static float reference_decode(hl_dtype f, uint32_t c) {
  switch (f) {
    case HL_F16: return hl_f16_to_f32_soft((hl_f16)c);
    case HL_BF16: return hl_bf16_to_f32_soft((hl_bf16)c);
    case HL_E4M3: return hl_fp8_to_f32_soft((hl_fp8)c, HL_FP8_E4M3);
    case HL_E5M2: return hl_fp8_to_f32_soft((hl_fp8)c, HL_FP8_E5M2);
    case HL_TF32: return hl_f32_from_bits(c << 13); /* its container */
    default: return (float)hl_format_decode(f, c); /* fp6, fp4, e8m0: exact in fp32 */
  }
}

/* every code of each narrow format: its value's bits (NaNs included), and
 * rounded back, the same code under every deterministic spec */
static void test_every_code_decodes_and_rounds_back(void **state) {
  (void)state;
  for (int k = 1; k < FORMATS; k++) {
    const hl_dtype f = formats[k];
    const uint32_t codes = 1u << hl_format_code_width(f);
    for (uint32_t c = 0; c < codes; c++) {
      const float v = hl_round_decode(f, c);
      if (hl_f32_bits(v) != hl_f32_bits(reference_decode(f, c)))
        fail_msg("%s code 0x%x decodes to 0x%08x, want 0x%08x", hl_dtype_format_name(f), c, hl_f32_bits(v),
                 hl_f32_bits(reference_decode(f, c)));
      if (isnan(v)) continue;
      for (int r = 0; r < HL_ROUNDING_STOCHASTIC; r++)
        for (int ov = 0; ov < 2; ov++) {
          if (isinf(v) && ov == HL_OVERFLOW_SATURATE) continue; /* +-max: the saturation facts below */
          const uint32_t back = round_by(f, (hl_rounding)r, (hl_overflow)ov, false, v);
          if (back != c)
            fail_msg("%s code 0x%x (%a) rounds %s to 0x%x", hl_dtype_format_name(f), c, (double)v,
                     hl_rounding_name((hl_rounding)r), back);
        }
    }
  }
}

/* ------------------------------------------------------------ facts -- */

#define RNE HL_ROUNDING_NEAREST_EVEN
#define RUP HL_ROUNDING_TOWARD_POSITIVE
#define IEEE HL_OVERFLOW_IEEE
#define SAT HL_OVERFLOW_SATURATE

typedef struct {
  hl_dtype f;
  float x;
  uint32_t want[5]; /* RNE, RNA, RTZ, toward +inf, toward -inf */
} mode_fact;

static void test_roundings_by_hand(void **state) {
  (void)state;
  const mode_fact facts[] = {
      {HL_F16, 1.0f + 0x1p-11f, {0x3c00, 0x3c01, 0x3c00, 0x3c01, 0x3c00}},      /* tie, even below */
      {HL_F16, -(1.0f + 0x1p-11f), {0xbc00, 0xbc01, 0xbc00, 0xbc00, 0xbc01}},   /* ... negative */
      {HL_F16, 1.0f + 0x3p-11f, {0x3c02, 0x3c02, 0x3c01, 0x3c02, 0x3c01}},      /* tie, odd below */
      {HL_F16, 1.0f + 0x1p-12f, {0x3c00, 0x3c00, 0x3c00, 0x3c01, 0x3c00}},      /* a quarter */
      {HL_F16, -(1.0f + 0x3p-12f), {0xbc01, 0xbc01, 0xbc00, 0xbc00, 0xbc01}},   /* three quarters */
      {HL_F16, 0x1p-26f, {0x0000, 0x0000, 0x0000, 0x0001, 0x0000}},            /* below half the smallest subnormal */
      {HL_F16, -0x1p-26f, {0x8000, 0x8000, 0x8000, 0x8000, 0x8001}},
      {HL_F16, 0x3p-25f, {0x0002, 0x0002, 0x0001, 0x0002, 0x0001}},            /* subnormal tie, odd below */
      {HL_F16, 0x1p-14f - 0x1p-25f, {0x0400, 0x0400, 0x03ff, 0x0400, 0x03ff}}, /* to the smallest normal */
      {HL_F16, 65519.0f, {0x7bff, 0x7bff, 0x7bff, 0x7c00, 0x7bff}},            /* below the tie to inf */
      {HL_F16, 65520.0f, {0x7c00, 0x7c00, 0x7bff, 0x7c00, 0x7bff}},            /* the tie */
      {HL_F16, -70000.0f, {0xfc00, 0xfc00, 0xfbff, 0xfbff, 0xfc00}},           /* overflow stops at max toward zero */
      {HL_F16, INFINITY, {0x7c00, 0x7c00, 0x7c00, 0x7c00, 0x7c00}},            /* inf is exact */
      {HL_BF16, 1.0f + 0x1p-8f, {0x3f80, 0x3f81, 0x3f80, 0x3f81, 0x3f80}},
      {HL_BF16, hl_f32_from_bits(0x00400000u), {0x0040, 0x0040, 0x0040, 0x0040, 0x0040}}, /* fp32 subnormal, exact */
      {HL_BF16, hl_f32_from_bits(0x80008000u), {0x8000, 0x8001, 0x8000, 0x8000, 0x8001}}, /* subnormal tie */
      {HL_BF16, 0x1.ffp127f, {0x7f80, 0x7f80, 0x7f7f, 0x7f80, 0x7f7f}},        /* rounds past max */
      {HL_TF32, 1.0f + 0x1p-11f, {0x3f800000u >> 13, 0x3f802000u >> 13, 0x3f800000u >> 13, 0x3f802000u >> 13,
                                  0x3f800000u >> 13}},
      {HL_TF32, -0x1.fffffep127f, {0x7fc00, 0x7fc00, 0x7fbff, 0x7fbff, 0x7fc00}}, /* sign at bit 18 */
      {HL_E4M3, 464.0f, {0x7e, 0x7f, 0x7e, 0x7f, 0x7e}},   /* the tie past 448: NaN, e4m3 has no inf */
      {HL_E4M3, 480.0f, {0x7f, 0x7f, 0x7e, 0x7f, 0x7e}},
      {HL_E4M3, -0.0009f, {0x80, 0x80, 0x80, 0x80, 0x81}}, /* below half of 2^-9 */
      {HL_E4M3, INFINITY, {0x7f, 0x7f, 0x7f, 0x7f, 0x7f}}, /* no inf: NaN */
      {HL_E5M2, 1.125f, {0x3c, 0x3d, 0x3c, 0x3d, 0x3c}},
      {HL_E5M2, 61440.0f, {0x7c, 0x7c, 0x7b, 0x7c, 0x7b}}, /* the tie to inf */
      {HL_F32, hl_f32_from_bits(0x00000001u), {1, 1, 1, 1, 1}},
      /* e2m1: 0, 0.5, 1, 1.5, 2, 3, 4, 6; the ties 0.25, 0.75, 1.25, 2.5, 5 and past 6 */
      {HL_E2M1, 0.25f, {0x0, 0x1, 0x0, 0x1, 0x0}},   /* subnormal tie to zero (even) */
      {HL_E2M1, -0.25f, {0x8, 0x9, 0x8, 0x8, 0x9}},
      {HL_E2M1, 0.75f, {0x2, 0x2, 0x1, 0x2, 0x1}},   /* 0.5 | 1: 1 is even */
      {HL_E2M1, 1.25f, {0x2, 0x3, 0x2, 0x3, 0x2}},
      {HL_E2M1, 2.5f, {0x4, 0x5, 0x4, 0x5, 0x4}},
      {HL_E2M1, 5.0f, {0x6, 0x7, 0x6, 0x7, 0x6}},    /* 4 | 6: 4 is even */
      {HL_E2M1, -5.0f, {0xe, 0xf, 0xe, 0xe, 0xf}},
      {HL_E2M1, 6.5f, {0x7, 0x7, 0x7, 0x7, 0x7}},    /* past 6: no inf, saturates whatever the rule */
      {HL_E2M1, 7.0f, {0x7, 0x7, 0x7, 0x7, 0x7}},
      {HL_E2M1, -1e30f, {0xf, 0xf, 0xf, 0xf, 0xf}},
      {HL_E2M1, INFINITY, {0x7, 0x7, 0x7, 0x7, 0x7}},
      /* e2m3: steps of 0.125 to 2, 0.25 to 4, 0.5 to 7.5 */
      {HL_E2M3, 7.25f, {0x1e, 0x1f, 0x1e, 0x1f, 0x1e}}, /* 7 | 7.5 */
      {HL_E2M3, 7.75f, {0x1f, 0x1f, 0x1f, 0x1f, 0x1f}}, /* 7.5 | (8): saturates */
      {HL_E2M3, 0.0625f, {0x00, 0x01, 0x00, 0x01, 0x00}},
      {HL_E2M3, -0.1875f, {0x22, 0x22, 0x21, 0x21, 0x22}}, /* 0.125 | 0.25, odd below */
      /* e3m2: 16, 20, 24, 28 in its top binade; 0.0625 its smallest subnormal */
      {HL_E3M2, 26.0f, {0x1e, 0x1f, 0x1e, 0x1f, 0x1e}},
      {HL_E3M2, 30.0f, {0x1f, 0x1f, 0x1f, 0x1f, 0x1f}},
      {HL_E3M2, 0.03125f, {0x00, 0x01, 0x00, 0x01, 0x00}},
      {HL_E3M2, 0.09375f, {0x02, 0x02, 0x01, 0x02, 0x01}},
      /* e8m0: code c is 2^(c - 127); ties between powers of two to the even code */
      {HL_E8M0, 3.0f, {128, 129, 128, 129, 128}},  /* 2 | 4 */
      {HL_E8M0, 6.0f, {130, 130, 129, 130, 129}},  /* 4 | 8 */
      {HL_E8M0, 5.0f, {129, 129, 129, 130, 129}},
      {HL_E8M0, 1.0f, {127, 127, 127, 127, 127}},
      {HL_E8M0, 0x1.8p-127f, {0, 1, 0, 1, 0}},     /* 2^-127 | 2^-126: an fp32 subnormal */
      {HL_E8M0, 0x1p-127f, {0, 0, 0, 0, 0}},
      {HL_E8M0, 0x1p-128f, {0, 0, 0, 0, 0}},       /* below the smallest: no zero to round to */
      {HL_E8M0, 0x1p-149f, {0, 0, 0, 0, 0}},
      {HL_E8M0, 0x1p127f, {254, 254, 254, 254, 254}},
      {HL_E8M0, 0x1.8p127f, {254, 0xff, 254, 0xff, 254}}, /* 2^127 | (2^128): past it NaN, no inf */
      {HL_E8M0, 0.0f, {0xff, 0xff, 0xff, 0xff, 0xff}},    /* no zero: NaN */
      {HL_E8M0, -0.0f, {0xff, 0xff, 0xff, 0xff, 0xff}},
      {HL_E8M0, -1.0f, {0xff, 0xff, 0xff, 0xff, 0xff}},   /* unsigned: NaN */
      {HL_E8M0, INFINITY, {0xff, 0xff, 0xff, 0xff, 0xff}},
  };
  for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++)
    for (int r = 0; r < 5; r++) {
      const uint32_t got = round_by(facts[i].f, (hl_rounding)r, IEEE, false, facts[i].x);
      if (got != facts[i].want[r])
        fail_msg("%s %a %s: 0x%x, want 0x%x", hl_dtype_format_name(facts[i].f), (double)facts[i].x,
                 hl_rounding_name((hl_rounding)r), got, facts[i].want[r]);
    }
}

static void test_overflow_flush_and_nan_by_hand(void **state) {
  (void)state;
  /* saturation: +-max whatever the rounding, infinities too */
  for (int r = 0; r < 5; r++) {
    assert_int_equal(round_by(HL_F16, (hl_rounding)r, SAT, false, 70000.0f), 0x7bff);
    assert_int_equal(round_by(HL_F16, (hl_rounding)r, SAT, false, -INFINITY), 0xfbff);
    assert_int_equal(round_by(HL_BF16, (hl_rounding)r, SAT, false, INFINITY), 0x7f7f);
    assert_int_equal(round_by(HL_E4M3, (hl_rounding)r, SAT, false, -1e6f), 0xfe);
    assert_int_equal(round_by(HL_E5M2, (hl_rounding)r, SAT, false, INFINITY), 0x7b);
    assert_int_equal(round_by(HL_F32, (hl_rounding)r, SAT, false, -INFINITY), 0xff7fffffu);
  }
  assert_int_equal(round_by(HL_F16, RNE, SAT, false, 65504.0f), 0x7bff);
  assert_int_equal(round_by(HL_F16, RNE, SAT, false, 1.0f), 0x3c00);
  /* fp6, fp4: the same under either rule (they have no inf); e8m0: 2^127 for what would be NaN
   * past it, and inf; zero, negative values and NaN stay NaN (nothing to saturate to) */
  for (int r = 0; r < 5; r++)
    for (int ov = 0; ov < 2; ov++) {
      assert_int_equal(round_by(HL_E2M1, (hl_rounding)r, (hl_overflow)ov, false, 7.0f), 0x7);
      assert_int_equal(round_by(HL_E2M1, (hl_rounding)r, (hl_overflow)ov, false, -INFINITY), 0xf);
      assert_int_equal(round_by(HL_E2M3, (hl_rounding)r, (hl_overflow)ov, false, 1e6f), 0x1f);
      assert_int_equal(round_by(HL_E3M2, (hl_rounding)r, (hl_overflow)ov, false, -30.0f), 0x3f);
    }
  for (int r = 0; r < 5; r++) {
    assert_int_equal(round_by(HL_E8M0, (hl_rounding)r, SAT, false, 0x1.8p127f), 0xfe);
    assert_int_equal(round_by(HL_E8M0, (hl_rounding)r, SAT, false, 0x1.fffffep127f), 0xfe);
    assert_int_equal(round_by(HL_E8M0, (hl_rounding)r, SAT, false, INFINITY), 0xfe);
    assert_int_equal(round_by(HL_E8M0, (hl_rounding)r, SAT, false, 3.0f), r == 1 || r == 3 ? 129 : 128);
    assert_int_equal(round_by(HL_E8M0, (hl_rounding)r, SAT, false, 0x1p-128f), 0);
    assert_int_equal(round_by(HL_E8M0, (hl_rounding)r, SAT, false, 0.0f), 0xff);
    assert_int_equal(round_by(HL_E8M0, (hl_rounding)r, SAT, false, -1.0f), 0xff);
    assert_int_equal(round_by(HL_E8M0, (hl_rounding)r, SAT, false, -INFINITY), 0xff);
  }
  /* flushing: subnormal results become zero of their sign, rounded as if kept first */
  assert_int_equal(round_by(HL_F16, RNE, IEEE, true, 0x1p-15f), 0x0000);
  assert_int_equal(round_by(HL_F16, RNE, IEEE, true, -0x1p-15f), 0x8000);
  assert_int_equal(round_by(HL_F16, RUP, IEEE, true, 0x1p-30f), 0x0000);
  assert_int_equal(round_by(HL_F16, RNE, IEEE, true, 0x1p-14f - 0x1p-25f), 0x0400);
  assert_int_equal(round_by(HL_F16, RNE, IEEE, true, 0x1p-14f), 0x0400);
  /* ... and fp32 subnormal inputs read as zero */
  assert_int_equal(round_by(HL_BF16, RNE, IEEE, true, hl_f32_from_bits(0x007fffffu)), 0x0000);
  assert_int_equal(round_by(HL_BF16, RNE, IEEE, false, hl_f32_from_bits(0x007fffffu)), 0x0080);
  assert_int_equal(round_by(HL_F32, RNE, IEEE, true, hl_f32_from_bits(0x80000001u)), 0x80000000u);
  assert_int_equal(round_by(HL_F32, RNE, IEEE, true, 0x1p-126f), 0x00800000u);
  assert_int_equal(round_by(HL_E2M1, RUP, IEEE, true, 0.25f), 0x0);   /* 0.5 is subnormal in e2m1 */
  assert_int_equal(round_by(HL_E2M1, RNE, IEEE, true, -0.75f), 0xa);  /* -1 is normal */
  assert_int_equal(round_by(HL_E3M2, RNE, IEEE, true, 0.1875f), 0x0);
  /* e8m0: a flushed fp32 subnormal is zero, which e8m0 has not: NaN; its own values are all normal */
  assert_int_equal(round_by(HL_E8M0, RNE, IEEE, true, 0x1p-127f), 0xff);
  assert_int_equal(round_by(HL_E8M0, RNE, IEEE, true, 0x1p-126f), 1);
  /* NaNs: sign, quiet bit and top payload (fp16, bf16, tf32); the NaN code (fp8); fp32 unchanged */
  for (int r = 0; r < HL_ROUNDINGS; r++)
    for (int ov = 0; ov < 2; ov++) {
      assert_int_equal(round_by(HL_F16, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0x7f802000u)), 0x7e01);
      assert_int_equal(round_by(HL_BF16, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0xff800001u)), 0xffc0);
      assert_int_equal(round_by(HL_TF32, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0x7f800001u)),
                       0x00400000u >> 13 | 0x7f800000u >> 13);
      assert_int_equal(round_by(HL_E4M3, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0xffc00000u)), 0xff);
      assert_int_equal(round_by(HL_E5M2, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0x7fc00000u)), 0x7f);
      assert_int_equal(round_by(HL_F32, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0x7f800001u)),
                       0x7f800001u);
      /* fp6 and fp4 have no NaN: +-max of the NaN's sign; e8m0 its NaN code whatever the sign */
      assert_int_equal(round_by(HL_E2M3, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0x7fc00000u)), 0x1f);
      assert_int_equal(round_by(HL_E3M2, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0xff800001u)), 0x3f);
      assert_int_equal(round_by(HL_E2M1, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0xffc00000u)), 0xf);
      assert_int_equal(round_by(HL_E2M1, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0x7f800001u)), 0x7);
      assert_int_equal(round_by(HL_E8M0, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0x7fc00000u)), 0xff);
      assert_int_equal(round_by(HL_E8M0, (hl_rounding)r, (hl_overflow)ov, r & 1, hl_f32_from_bits(0xffc00000u)), 0xff);
    }
}

/* ------------------------------------------------ fast path choice -- */

/* edges of every format, both ends of each fp32 binade, random encodings */
static size_t some_inputs(float **out) {
  enum { RANDOM = 1 << 17 };
  float *f = malloc((512 * 8 + RANDOM) * sizeof *f);
  assert_non_null(f);
  size_t k = 0;
  for (uint32_t se = 0; se < 512; se++)
    for (uint32_t m = 0; m < 4; m++) {
      f[k++] = hl_f32_from_bits(se << 23 | m << 12 | m);
      f[k++] = hl_f32_from_bits(se << 23 | (0x7fffffu - (m << 12)));
    }
  for (uint32_t i = 0; i < RANDOM; i++) f[k++] = hl_f32_from_bits(hl_philox_u32(31, 0, i));
  *out = f;
  return k;
}

static void test_every_spec_gives_the_generic_bits(void **state) {
  (void)state;
  float *in;
  const size_t n = some_inputs(&in);
  uint32_t *out = malloc(n * sizeof *out);
  assert_non_null(out);
  for (int k = 0; k < FORMATS; k++)
    for (int r = 0; r < HL_ROUNDINGS; r++)
      for (int ov = 0; ov < 2; ov++)
        for (int flush = 0; flush < 2; flush++) {
          hl_round_spec s = hl_round_spec_make(formats[k], (hl_rounding)r, (hl_overflow)ov, flush);
          s.seed = 5, s.stream = 9, s.random_bits = (uint8_t)(1 + 31 * (k & 1));
          hl_cpu_round_array(&s, in, out, n, 1000);
          const size_t bytes = hl_format_code_bytes(s.format);
          for (size_t i = 0; i < n; i++) {
            const uint32_t random = hl_round_random(&s, 1000 + i);
            const uint32_t want = hl_round_bits_generic(&s, in[i], random);
            const uint32_t picked = hl_round_bits(&s, in[i], random);
            const uint32_t array = bytes == 1 ? ((uint8_t *)out)[i] : bytes == 2 ? ((uint16_t *)out)[i] : out[i];
            if (picked != want || array != want)
              fail_msg("%s %s overflow %d flush %d: fp32 0x%08x: generic 0x%x, hl_round_bits 0x%x, array 0x%x",
                       hl_dtype_format_name(s.format), hl_rounding_name(s.rounding), ov, flush, hl_f32_bits(in[i]),
                       want, picked, array);
          }
          const bool plain = r == RNE && ov == IEEE && !flush;
          assert_int_equal(hl_cpu_round_array_vectorised(&s), plain && (formats[k] == HL_F16 || formats[k] == HL_BF16));
        }
  free(out);
  free(in);
}

/* -------------------------------------------------------- stochastic -- */

/* The value below |x| in f, the spacing there, and the distance d from below in spacings */
typedef struct {
  double below, spacing, distance;
} bracket;

static bracket bracket_of(hl_dtype f, float x) {
  const hl_format_info *fi = hl_format_get(f);
  const double a = fabs((double)x);
  int e = a == 0 ? fi->emin : ilogb(a);
  if (e < fi->emin) e = fi->emin;
  bracket b;
  b.spacing = ldexp(1.0, e - fi->man_bits);
  const double t = a / b.spacing;
  b.below = floor(t) * b.spacing;
  b.distance = t - floor(t);
  return b;
}

/* stochastic rounding against doubles: up exactly when the top k bits of the word lie below floor(d 2^k) */
static void test_stochastic_against_reference(void **state) {
  (void)state;
  static const hl_dtype sr_formats[] = {HL_TF32, HL_F16, HL_BF16, HL_E4M3, HL_E5M2,
                                        HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
  static const unsigned bits[] = {1, 3, 8, 16, 23, 32};
  for (size_t k = 0; k < sizeof sr_formats / sizeof sr_formats[0]; k++)
    for (size_t b = 0; b < sizeof bits / sizeof bits[0]; b++) {
      const hl_dtype f = sr_formats[k];
      const hl_round_spec s = hl_round_stochastic(f, bits[b], 77, k);
      const double max = hl_format_get(f)->max;
      for (uint32_t i = 0; i < (1u << 16); i++) {
        /* random encodings scaled into the format's finite range, below max (past it: the facts below) */
        float x = hl_f32_from_bits(hl_philox_u32(3, k * 64 + b, i) & 0xbfffffffu);
        x = (float)(x * (max / 2.0));
        if (!(fabs((double)x) < max)) continue;
        if (f == HL_E8M0) { /* positive, from its smallest value 2^-127 on (below: always 2^-127, the facts) */
          x = fabsf(x);
          if (x < 0x1p-127f) continue;
        }
        const uint32_t word = hl_philox_u32(4, k * 64 + b, i);
        const bracket br = bracket_of(f, x);
        const double threshold = floor(br.distance * ldexp(1.0, (int)bits[b]));
        const double top = (double)(word >> (32 - bits[b]));
        const double want = copysign(top < threshold ? br.below + br.spacing : br.below, x);
        const float got = hl_round_decode(f, hl_round_bits(&s, x, word));
        if ((double)got != want)
          fail_msg("%s, %u bits: %a with word 0x%08x gives %a, want %a", hl_dtype_format_name(f), bits[b], (double)x,
                   word, (double)got, want);
      }
    }
  /* nothing above max to round to: nearest even */
  const hl_round_spec s = hl_round_stochastic(HL_F16, 32, 0, 0);
  assert_int_equal(hl_round_bits(&s, 65519.0f, 0), 0x7bff);
  assert_int_equal(hl_round_bits(&s, 65519.0f, 0xffffffffu), 0x7bff);
  assert_int_equal(hl_round_bits(&s, 65520.0f, 0xffffffffu), 0x7c00);
  assert_int_equal(hl_round_bits(&s, -INFINITY, 0), 0xfc00);
}

typedef struct {
  hl_dtype f;
  float x;
} sr_case;

/* 2^20 samples of each value: the mean within 5 standard errors of x, the
 * share rounded up within 5 of d, every result one of the two neighbours */
static void test_stochastic_is_unbiased(void **state) {
  (void)state;
  static const sr_case cases[] = {
      {HL_F16, 1.0f + 0x1.3p-12f}, {HL_F16, -0.333333333f}, {HL_F16, 2.718281828f}, {HL_F16, 0x1.234p-20f},
      {HL_F16, 60000.7f},          {HL_BF16, 1.001f},       {HL_BF16, -3.14159265f}, {HL_BF16, 1e-40f},
      {HL_TF32, 1.0f + 0x1.7p-12f}, {HL_E4M3, 0.3f},        {HL_E5M2, -100.0f},
      {HL_E2M3, 0.3f},             {HL_E2M3, -5.3f},        {HL_E3M2, 0.01f},        {HL_E3M2, -21.0f},
      {HL_E2M1, 2.6f},             {HL_E2M1, -0.3f},        {HL_E2M1, 5.9f},         {HL_E8M0, 3.0f},
      {HL_E8M0, 0x1.4p-100f},      {HL_E8M0, 0x1.8p-127f},  {HL_E8M0, 0x1.fp126f},
  };
  enum { N = 1 << 20 };
  static float x[N];
  static uint32_t codes[N];
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const hl_dtype f = cases[c].f;
    const bracket br = bracket_of(f, cases[c].x);
    const double lo = copysign(br.below, cases[c].x), hi = copysign(br.below + br.spacing, cases[c].x);
    const hl_round_spec s = hl_round_stochastic(f, 32, 2026, c);
    for (size_t i = 0; i < N; i++) x[i] = cases[c].x;
    hl_cpu_round_array(&s, x, codes, N, 0);
    double sum = 0.0;
    uint64_t ups = 0;
    const size_t bytes = hl_format_code_bytes(f);
    for (size_t i = 0; i < N; i++) {
      const uint32_t code = bytes == 1 ? ((uint8_t *)codes)[i] : bytes == 2 ? ((uint16_t *)codes)[i] : codes[i];
      const double v = hl_round_decode(f, code);
      if (v != lo && v != hi)
        fail_msg("%s %a: sample %zu is %a, not %a or %a", hl_dtype_format_name(f), (double)cases[c].x, i, v, lo, hi);
      sum += v;
      ups += v == hi && hi != lo;
    }
    const double d = br.distance, p = (double)ups / N;
    const double se_p = sqrt(d * (1 - d) / N), se_mean = br.spacing * se_p;
    const double mean = sum / N;
    printf("%s %a: d = %.6f, up %.6f of the time; mean - x = %.3g (standard error %.3g)\n", hl_dtype_format_name(f),
           (double)cases[c].x, d, p, mean - cases[c].x, se_mean);
    assert_true(d > 0.0); /* each case lies between two values */
    if (fabs(p - d) > 5 * se_p) fail_msg("%s %a: up %.6f of the time, want %.6f", hl_dtype_format_name(f), (double)cases[c].x, p, d);
    if (fabs(mean - cases[c].x) > 5 * se_mean + br.spacing * 0x1p-32)
      fail_msg("%s %a: mean %a, %.2f standard errors off", hl_dtype_format_name(f), (double)cases[c].x, mean,
               fabs(mean - cases[c].x) / se_mean);
  }
}

static void test_stochastic_is_reproducible(void **state) {
  (void)state;
  enum { N = 4096 };
  static float x[N];
  static uint16_t a[N], b[N], other[N];
  for (size_t i = 0; i < N; i++) x[i] = 1.0f + (float)i * 0x1p-20f;
  const hl_round_spec s = hl_round_stochastic(HL_BF16, 32, 42, 7), t = hl_round_stochastic(HL_BF16, 32, 42, 8);
  hl_cpu_round_array(&s, x, a, N, 100);
  hl_cpu_round_array(&s, x, b, N, 100);
  assert_memory_equal(a, b, sizeof a);
  /* element i takes word first_index + i: a split array gives the same */
  hl_cpu_round_array(&s, x, b, N / 2, 100);
  hl_cpu_round_array(&s, x + N / 2, b + N / 2, N / 2, 100 + N / 2);
  assert_memory_equal(a, b, sizeof a);
  hl_cpu_round_array(&t, x, other, N, 100);
  assert_memory_not_equal(a, other, sizeof a);
  /* the one-byte formats the same way, on values between their codes */
  static const hl_dtype narrow[] = {HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
  static uint8_t c[N], d[N], other8[N];
  for (size_t k = 0; k < sizeof narrow / sizeof narrow[0]; k++) {
    for (size_t i = 0; i < N; i++) x[i] = 0.3f + (float)i * 0x1p-10f; /* 0.3 to 4.3 */
    const hl_round_spec u = hl_round_stochastic(narrow[k], 32, 42, 7), v = hl_round_stochastic(narrow[k], 32, 43, 7);
    hl_cpu_round_array(&u, x, c, N, 100);
    hl_cpu_round_array(&u, x, d, N, 100);
    assert_memory_equal(c, d, sizeof c);
    hl_cpu_round_array(&u, x, d, N / 2, 100);
    hl_cpu_round_array(&u, x + N / 2, d + N / 2, N / 2, 100 + N / 2);
    assert_memory_equal(c, d, sizeof c);
    hl_cpu_round_array(&v, x, other8, N, 100); /* another seed */
    assert_memory_not_equal(c, other8, sizeof c);
  }
}

/* With k bits, the low 32 - k bits of the word change nothing, and of the 2^k
 * values of the top bits exactly floor(d 2^k) round up. */
static void test_stochastic_uses_k_bits(void **state) {
  (void)state;
  static const unsigned bits[] = {1, 2, 4, 7, 12};
  const float x = 1.0f + 0x1.6a09e6p-11f; /* fp16: d = 0x1.6a09e6p-1 (0.707...) */
  const double d = bracket_of(HL_F16, x).distance;
  for (size_t b = 0; b < sizeof bits / sizeof bits[0]; b++) {
    const unsigned k = bits[b];
    const hl_round_spec s = hl_round_stochastic(HL_F16, k, 0, 0);
    uint32_t ups = 0;
    for (uint32_t top = 0; top < (1u << k); top++) {
      const uint32_t first = hl_round_bits(&s, x, top << (32 - k));
      for (uint32_t i = 0; i < 64; i++) {
        const uint32_t low = k < 32 ? hl_philox_u32(1, top, i) & ((1u << (32 - k)) - 1u) : 0u;
        if (hl_round_bits(&s, x, top << (32 - k) | low) != first)
          fail_msg("%u bits: the word's low bits 0x%x changed the result", k, low);
      }
      ups += first != 0x3c00u;
    }
    assert_int_equal(ups, (uint32_t)floor(d * ldexp(1.0, (int)k)));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layouts_match_format_table),
      cmocka_unit_test(test_spec_validity),
      cmocka_unit_test(test_every_code_decodes_and_rounds_back),
      cmocka_unit_test(test_roundings_by_hand),
      cmocka_unit_test(test_overflow_flush_and_nan_by_hand),
      cmocka_unit_test(test_every_spec_gives_the_generic_bits),
      cmocka_unit_test(test_stochastic_against_reference),
      cmocka_unit_test(test_stochastic_is_unbiased),
      cmocka_unit_test(test_stochastic_is_reproducible),
      cmocka_unit_test(test_stochastic_uses_k_bits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
