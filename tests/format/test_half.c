/* test_half.c — suite unit: the format facts of docs/numerics.md, value by
 * value, for half.h's conversions and arithmetic, format.h's table and bit
 * views, and the Philox generator's published answers. */
#include <math.h>
#include <string.h>

#include "formats/format.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "tests/support/hltest.h"

static float f16r(float x) { return hl_f16_to_f32(hl_f32_to_f16(x)); }
static float bf16r(float x) { return hl_bf16_to_f32(hl_f32_to_bf16(x)); }

static void test_fp16_range_edges(void **state) {
  (void)state;
  assert_int_equal(hl_f32_to_f16(65504.0f), 0x7bff);
  assert_int_equal(hl_f32_to_f16(65519.996f), 0x7bff); /* below the midpoint */
  assert_int_equal(hl_f32_to_f16(65520.0f), 0x7c00);   /* the midpoint rounds to inf */
  assert_int_equal(hl_f32_to_f16(-65520.0f), 0xfc00);
  assert_int_equal(hl_f32_to_f16(INFINITY), 0x7c00);
  assert_true(hl_f16_isnan(hl_f32_to_f16(NAN)));
  assert_int_equal(hl_f32_to_f16(-0.0f), 0x8000);
  /* integers are exact up to 2048; 2049 is a tie and goes to even 2048 */
  for (int i = 0; i <= 2048; i++) assert_true(f16r((float)i) == (float)i);
  assert_true(f16r(2049.0f) == 2048.0f);
  assert_true(f16r(2051.0f) == 2052.0f);
}

static void test_fp16_subnormals(void **state) {
  (void)state;
  assert_int_equal(hl_f32_to_f16(0x1p-24f), 0x0001);
  assert_int_equal(hl_f32_to_f16(0x1p-25f), 0x0000);        /* tie to even: 0 */
  assert_int_equal(hl_f32_to_f16(0x1.000002p-25f), 0x0001); /* just above the tie */
  assert_int_equal(hl_f32_to_f16(3 * 0x1p-26f), 0x0001);    /* 0.75 ulp -> 2^-24 */
  assert_int_equal(hl_f32_to_f16(3 * 0x1p-25f), 0x0002);    /* 1.5 ulp, tie -> 2^-23 */
  assert_int_equal(hl_f32_to_f16(0x1p-14f), 0x0400);        /* smallest normal */
  assert_int_equal(hl_f32_to_f16(0x1.ff8p-15f), 0x03ff);    /* largest subnormal */
  assert_int_equal(hl_f32_to_f16(0x1.ffcp-15f), 0x0400);    /* its tie with 2^-14: to even */
  assert_true(hl_f16_to_f32(0x0001) == 0x1p-24f);
  assert_true(hl_f16_to_f32(0x8001) == -0x1p-24f);
  assert_true(hl_f16_to_f32(0x03ff) == 0x1.ff8p-15f);
}

static void test_absorption_facts(void **state) {
  (void)state;
  hl_f16 u = hl_f32_to_f16(0.0001f);
  assert_int_equal(u, 0x068e);
  assert_float_equal(hl_f16_to_f32(u), 1.00016594e-4f, 1e-12f);
  hl_f16 one = hl_f32_to_f16(1.0f);
  assert_int_equal(hl_f16_add(one, u), one);                    /* 1 + 0.0001 = 1 in fp16 */
  assert_true(bf16r(1.0f + bf16r(0.0001f)) == 1.0f);            /* and in bf16 */
  assert_true(1.0f + 0.0001f == 1.00010001659393310546875f);    /* fp32 keeps it */
  assert_int_equal(hl_f16_add(one, hl_f32_to_f16(0x1p-11f)), one); /* tie -> even */
  hl_f16 smallest = 0x1001;                                      /* 2^-11 (1 + 2^-10) */
  assert_float_equal(hl_f16_to_f32(smallest), 4.88758e-4f, 1e-9f);
  assert_int_equal(hl_f16_add(one, smallest), 0x3c01);          /* 1 + 2^-10 */
  assert_int_equal(hl_f16_add(one, (hl_f16)(smallest - 1)), one);
  /* double rounding: 1 + x rounded to fp32 first, then to fp16, loses it */
  float x = 0x1p-11f + 0x1p-34f;
  assert_true(1.0f + x == 1.0f + 0x1p-11f); /* fp32 sum is the exact tie */
  assert_int_equal(hl_f32_to_f16(1.0f + x), one);
  assert_true(hl_format_round(HL_F16, 1.0 + (double)x, HL_OVERFLOW_IEEE) == 1.0009765625);
  /* w = 1.9, u = w/2100 still moves w by 2^-10 */
  hl_f16 w = hl_f32_to_f16(1.9f), du = hl_f32_to_f16(1.9f / 2100.0f);
  assert_true(hl_f16_to_f32(hl_f16_add(w, du)) - hl_f16_to_f32(w) == 0x1p-10f);
}

static void test_bf16(void **state) {
  (void)state;
  assert_int_equal(hl_f32_to_bf16(3.4028235e38f), 0x7f80); /* FLT_MAX rounds to inf */
  assert_int_equal(hl_f32_to_bf16(1.0f), 0x3f80);
  assert_int_equal(hl_f32_to_bf16(1.00390625f), 0x3f80); /* 1 + 2^-8: tie to even */
  assert_int_equal(hl_f32_to_bf16(1.01171875f), 0x3f82); /* 1 + 3*2^-8: tie to even, up */
  assert_true(hl_bf16_isnan(hl_f32_to_bf16(NAN)));
  assert_true(bf16r(256.0f + 1.0f) == 256.0f);
}

static void test_arith_correctly_rounded(void **state) {
  (void)state;
  hl_f16 a = hl_f32_to_f16(1.0f), b = hl_f32_to_f16(3.0f);
  assert_int_equal(hl_f16_div(a, b), hl_f32_to_f16(1.0f / 3.0f));
  assert_int_equal(hl_f16_mul(hl_f32_to_f16(256.0f), hl_f32_to_f16(256.0f)), 0x7c00); /* 65536 -> inf */
  assert_int_equal(hl_f16_sub(a, a), 0x0000);
  hl_f16 big = hl_f32_to_f16(32768.0f), sixteen = hl_f32_to_f16(16.0f);
  assert_int_equal(hl_f16_add(big, sixteen), big); /* the overflow probe's stall */
  assert_int_equal(hl_f16_add(big, big), 0x7c00);
  /* against a double-precision reference on a grid of operands */
  for (int i = 1; i < 4000; i += 7)
    for (int j = 1; j < 4000; j += 13) {
      hl_f16 x = (hl_f16)(0x3000 + i), y = (hl_f16)(0x1000 + j);
      double dx = hl_f16_to_f32(x), dy = hl_f16_to_f32(y);
      assert_true(hl_f16_to_f32(hl_f16_add(x, y)) == hl_format_round(HL_F16, dx + dy, HL_OVERFLOW_IEEE));
      assert_true(hl_f16_to_f32(hl_f16_mul(x, y)) == hl_format_round(HL_F16, dx * dy, HL_OVERFLOW_IEEE));
      assert_true(hl_f16_to_f32(hl_f16_div(x, y)) == hl_format_round(HL_F16, dx / dy, HL_OVERFLOW_IEEE));
      assert_true(hl_f16_to_f32(hl_f16_sub(x, y)) == hl_format_round(HL_F16, dx - dy, HL_OVERFLOW_IEEE));
    }
}

static void test_fp8_edges(void **state) {
  (void)state;
  /* e4m3: max 448 (0x7e); 464 is the tie between 448 and the NaN code -> 448 */
  assert_int_equal(hl_f32_to_fp8(448.0f, HL_FP8_E4M3, 0), 0x7e);
  assert_int_equal(hl_f32_to_fp8(464.0f, HL_FP8_E4M3, 0), 0x7e);
  assert_int_equal(hl_f32_to_fp8(465.0f, HL_FP8_E4M3, 0), 0x7f); /* overflow: NaN */
  assert_int_equal(hl_f32_to_fp8(465.0f, HL_FP8_E4M3, 1), 0x7e); /* satfinite: 448 */
  assert_int_equal(hl_f32_to_fp8(-INFINITY, HL_FP8_E4M3, 1), 0xfe);
  assert_int_equal(hl_f32_to_fp8(0x1p-9f, HL_FP8_E4M3, 0), 0x01);
  assert_int_equal(hl_f32_to_fp8(0x1p-10f, HL_FP8_E4M3, 0), 0x00); /* tie to even */
  /* e5m2: max 57344; 61440 is the midpoint to 65536 and rounds to inf */
  assert_int_equal(hl_f32_to_fp8(57344.0f, HL_FP8_E5M2, 0), 0x7b);
  assert_int_equal(hl_f32_to_fp8(61440.0f, HL_FP8_E5M2, 0), 0x7c);
  assert_int_equal(hl_f32_to_fp8(61440.0f, HL_FP8_E5M2, 1), 0x7b);
  assert_int_equal(hl_f32_to_fp8(INFINITY, HL_FP8_E5M2, 0), 0x7c);
  assert_int_equal(hl_f32_to_fp8(0x1p-16f, HL_FP8_E5M2, 0), 0x01);
  assert_true(isnan(hl_fp8_to_f32(0x7f, HL_FP8_E4M3)));
  assert_true(hl_fp8_to_f32(0x7e, HL_FP8_E4M3) == 448.0f);
  assert_true(isinf(hl_fp8_to_f32(0x7c, HL_FP8_E5M2)));
}

static void test_tf32(void **state) {
  (void)state;
  float tie = 1.0f + 0x1p-11f; /* halfway between 1 and 1 + 2^-10 */
  assert_true(hl_f32_round_tf32_rne(tie) == 1.0f);
  assert_true(hl_f32_round_tf32_rna(tie) == 1.0f + 0x1p-10f);
  float tie_odd = 1.0f + 3 * 0x1p-11f;
  assert_true(hl_f32_round_tf32_rne(tie_odd) == 1.0f + 0x1p-9f);
  assert_true(hl_f32_round_tf32_rna(-tie) == -(1.0f + 0x1p-10f));
  /* NaNs stay NaNs of their sign, quieted, with the top of their payload (low 13 bits zero) */
  const uint32_t nan[][2] = {{0x7f800001u, 0x7fc00000u}, {0xff801fffu, 0xffc00000u}, {0x7f802001u, 0x7fc02000u},
                             {0x7fffffffu, 0x7fffe000u}, {0xffc00000u, 0xffc00000u}};
  for (int i = 0; i < 5; i++) {
    assert_int_equal(hl_f32_bits(hl_f32_round_tf32_rne(hl_f32_from_bits(nan[i][0]))), nan[i][1]);
    assert_int_equal(hl_f32_bits(hl_f32_round_tf32_rna(hl_f32_from_bits(nan[i][0]))), nan[i][1]);
  }
  assert_int_equal(hl_f32_bits(hl_f32_round_tf32_rna(-INFINITY)), 0xff800000u);
  assert_int_equal(hl_f32_bits(hl_f32_round_tf32_rna(0x1.fffffep127f)), 0x7f800000u); /* ties away past max: inf */
}

static void test_format_table(void **state) {
  (void)state;
  const hl_format_info *fp16 = hl_format_get(HL_F16);
  assert_true(fp16->max == 65504.0 && fp16->min_normal == ldexp(1, -14) && fp16->min_subnormal == ldexp(1, -24));
  assert_true(fp16->epsilon == ldexp(1, -10) && fp16->unit_roundoff == ldexp(1, -11));
  const hl_format_info *bf16 = hl_format_get(HL_BF16);
  assert_float_equal(bf16->max, 3.3895e38, 1e34);
  assert_true(bf16->min_subnormal == ldexp(1, -133) && bf16->epsilon == ldexp(1, -7));
  assert_true(hl_format_get(HL_TF32)->min_subnormal == ldexp(1, -136));
  assert_true(hl_format_get(HL_F32)->max == (double)3.4028235e38f);
  assert_true(hl_format_get(HL_E4M3)->max == 448 && !hl_format_get(HL_E4M3)->has_inf);
  assert_true(hl_format_get(HL_E5M2)->max == 57344 && hl_format_get(HL_E5M2)->min_subnormal == ldexp(1, -16));
  assert_ptr_equal(hl_format_by_name("fp8-e4m3"), hl_format_get(HL_E4M3));
  assert_ptr_equal(hl_format_by_name("fp4_e2m1"), hl_format_get(HL_E2M1));
  assert_true(hl_format_get(HL_E2M3)->max == 7.5 && hl_format_get(HL_E3M2)->max == 28 && hl_format_get(HL_E2M1)->max == 6);
  assert_true(hl_format_get(HL_E8M0)->max == ldexp(1, 127) && hl_format_get(HL_E8M0)->min_normal == ldexp(1, -127));
  assert_null(hl_format_by_name("fp12"));
  /* each table entry agrees with what the bit-level decoder says */
  for (int i = 0; i < HL_FORMATS; i++) {
    const hl_dtype f = hl_formats[i];
    const hl_format_info *fi = hl_format_get(f);
    /* the largest finite: below +inf, below e8m0's NaN, or (e4m3, fp6, fp4) the last code up the top binade */
    uint32_t b = fi->man_bits ? ((1u << fi->exp_bits) - 1u) << fi->man_bits : 0u, next;
    if (hl_format_classify(f, b) == HL_CLASS_INF) assert_true(hl_format_next_down(f, b, &b));
    else
      while (hl_format_next_up(f, b, &next)) b = next;
    assert_true(hl_format_decode(f, b) == fi->max);
    /* e8m0 has neither zero nor subnormals: its code 0 is its smallest value */
    const uint32_t smallest_normal = fi->man_bits ? 1u << fi->man_bits : 0u;
    assert_true(hl_format_decode(f, fi->man_bits ? 1u : 0u) == fi->min_subnormal);
    assert_true(hl_format_decode(f, smallest_normal) == fi->min_normal);
    assert_true(fi->epsilon == ldexp(1, -fi->man_bits) && fi->unit_roundoff == fi->epsilon / 2);
  }
}

static void test_bitstring_and_neighbours(void **state) {
  (void)state;
  char buf[64];
  uint32_t b = hl_format_encode(HL_F32, 0.4f, HL_OVERFLOW_IEEE);
  assert_string_equal(hl_format_bitstring(HL_F32, b, buf, sizeof buf), "0 01111101 10011001100110011001101");
  assert_string_equal(hl_format_bitstring(HL_F16, 0x3c00, buf, sizeof buf), "0 01111 0000000000");
  assert_string_equal(hl_format_bitstring(HL_E4M3, 0x7e, buf, sizeof buf), "0 1111 110");
  uint32_t n;
  assert_true(hl_format_next_up(HL_F16, 0x7bff, &n) && n == 0x7c00);
  assert_false(hl_format_next_up(HL_F16, 0x7c00, &n));
  assert_false(hl_format_next_up(HL_E4M3, 0x7e, &n)); /* no inf above 448 */
  assert_true(hl_format_next_down(HL_F16, 0x0000, &n) && n == 0x8001);
  assert_true(hl_format_next_up(HL_F16, 0x8001, &n) && n == 0x8000);
  assert_true(hl_format_next_down(HL_F16, 0x3c00, &n) && hl_format_decode(HL_F16, n) == 1.0 - ldexp(1, -11));
  assert_int_equal(hl_format_classify(HL_F16, 0x0001), HL_CLASS_SUBNORMAL);
  assert_int_equal(hl_format_classify(HL_E4M3, 0x78), HL_CLASS_NORMAL); /* 256: top exponent, finite */
  assert_int_equal(hl_format_classify(HL_E4M3, 0x7f), HL_CLASS_NAN);
  assert_int_equal(hl_format_encode(HL_F16, 1e6f, HL_OVERFLOW_SATURATE), 0x7bff);
  assert_int_equal(hl_format_encode(HL_TF32, 1.0f, HL_OVERFLOW_IEEE), 0x3f800000u >> 13);
  /* fp6, fp4: every code a number; e8m0: no sign field, code 0 is 2^-127, 0xff its NaN */
  assert_string_equal(hl_format_bitstring(HL_E2M1, 0xd, buf, sizeof buf), "1 10 1");
  assert_string_equal(hl_format_bitstring(HL_E2M3, 0x1f, buf, sizeof buf), "0 11 111");
  assert_string_equal(hl_format_bitstring(HL_E3M2, 0x21, buf, sizeof buf), "1 000 01");
  assert_string_equal(hl_format_bitstring(HL_E8M0, 0x7f, buf, sizeof buf), "01111111");
  assert_false(hl_format_next_up(HL_E2M1, 0x7, &n)); /* 6: nothing above */
  assert_true(hl_format_next_down(HL_E2M1, 0x7, &n) && hl_format_decode(HL_E2M1, n) == 4);
  assert_true(hl_format_next_down(HL_E2M1, 0x0, &n) && n == 0x9); /* 0 -> -0.5 */
  assert_true(hl_format_next_up(HL_E8M0, 0x7f, &n) && n == 0x80);
  assert_false(hl_format_next_up(HL_E8M0, 0xfe, &n)); /* 2^127: nothing above, 0xff is NaN */
  assert_false(hl_format_next_down(HL_E8M0, 0x00, &n)); /* 2^-127: nothing below, no zero */
  assert_false(hl_format_next_up(HL_E8M0, 0xff, &n));
  assert_int_equal(hl_format_classify(HL_E2M1, 0x8), HL_CLASS_ZERO);
  assert_int_equal(hl_format_classify(HL_E2M1, 0x1), HL_CLASS_SUBNORMAL);
  assert_int_equal(hl_format_classify(HL_E2M3, 0x3f), HL_CLASS_NORMAL); /* -7.5: no NaN in fp6 */
  assert_int_equal(hl_format_classify(HL_E8M0, 0x00), HL_CLASS_NORMAL);
  assert_int_equal(hl_format_classify(HL_E8M0, 0xff), HL_CLASS_NAN);
  assert_true(hl_format_decode(HL_E8M0, 0x00) == ldexp(1, -127) && hl_format_decode(HL_E8M0, 0xfe) == ldexp(1, 127));
  assert_true(hl_format_decode(HL_E3M2, 0x21) == -0.0625);
}

static void test_generic_round(void **state) {
  (void)state;
  assert_true(hl_format_round(HL_F16, 65519.99, HL_OVERFLOW_IEEE) == 65504);
  assert_true(isinf(hl_format_round(HL_F16, 65520, HL_OVERFLOW_IEEE)));
  assert_true(hl_format_round(HL_F16, 65520, HL_OVERFLOW_SATURATE) == 65504);
  assert_true(hl_format_round(HL_F16, ldexp(3, -26), HL_OVERFLOW_IEEE) == ldexp(1, -24));
  assert_true(isnan(hl_format_round(HL_E4M3, 500, HL_OVERFLOW_IEEE)));
  assert_true(hl_format_round(HL_E4M3, 464, HL_OVERFLOW_IEEE) == 448);
  assert_true(signbit(hl_format_round(HL_BF16, -1e-300, HL_OVERFLOW_IEEE)));
  /* fp6, fp4: no inf, no NaN: always +-max; e8m0: powers of two, ties to the even code */
  assert_true(hl_format_round(HL_E2M1, 7, HL_OVERFLOW_IEEE) == 6 && hl_format_round(HL_E2M1, 5, HL_OVERFLOW_IEEE) == 4);
  assert_true(hl_format_round(HL_E2M1, -NAN, HL_OVERFLOW_IEEE) == -6);
  assert_true(hl_format_round(HL_E2M3, 7.75, HL_OVERFLOW_IEEE) == 7.5 && hl_format_round(HL_E3M2, 30, HL_OVERFLOW_IEEE) == 28);
  assert_true(hl_format_round(HL_E8M0, 3, HL_OVERFLOW_IEEE) == 2 && hl_format_round(HL_E8M0, 6, HL_OVERFLOW_IEEE) == 8);
  assert_true(hl_format_round(HL_E8M0, 1e-300, HL_OVERFLOW_IEEE) == ldexp(1, -127));
  assert_true(isnan(hl_format_round(HL_E8M0, 0, HL_OVERFLOW_SATURATE)));
  assert_true(isnan(hl_format_round(HL_E8M0, -2, HL_OVERFLOW_SATURATE)));
  assert_true(hl_format_round(HL_E8M0, ldexp(3, 126), HL_OVERFLOW_IEEE) == ldexp(1, 127)); /* the tie: even 254 */
  assert_true(isnan(hl_format_round(HL_E8M0, ldexp(3.1, 126), HL_OVERFLOW_IEEE)));
  assert_true(hl_format_round(HL_E8M0, ldexp(3.1, 126), HL_OVERFLOW_SATURATE) == ldexp(1, 127));
}

/* format.c's double-based rounding and round.h's on bits agree for fp6, fp4
 * and e8m0 (nearest even, both overflow rules) on random fp32 encodings and
 * the values near each code; all 2^32 inputs: suite numerics, against ml_dtypes */
static void test_generic_round_agrees_with_round_h(void **state) {
  (void)state;
  static const hl_dtype mx[] = {HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
  for (size_t k = 0; k < sizeof mx / sizeof mx[0]; k++)
    for (int ov = 0; ov < 2; ov++)
      for (uint32_t i = 0; i < (1u << 18); i++) {
        /* random encodings, and encodings within 2^8 ulps of each code's value and of the
         * midpoint (the tie) between it and the next code */
        const uint32_t code = i >> 10 & 0xff;
        uint32_t up;
        double base = hl_format_decode(mx[k], code);
        if (i & 2 && hl_format_next_up(mx[k], code, &up)) base = (base + hl_format_decode(mx[k], up)) / 2;
        const uint32_t near = hl_f32_bits((float)base) + (i >> 2 & 0xff) - 0x80;
        const float x = hl_f32_from_bits(i & 1 ? hl_philox_u32(8, k, i) : near);
        const double want = hl_format_round(mx[k], x, (hl_overflow)ov);
        const double got = hl_format_decode(mx[k], hl_format_encode(mx[k], x, (hl_overflow)ov));
        if (!(got == want || (isnan(got) && isnan(want))))
          fail_msg("%s, overflow %d: fp32 0x%08x: format.c %a, round.h %a", hl_dtype_format_name(mx[k]), ov,
                   hl_f32_bits(x), want, got);
      }
}

/* Known-answer vectors published with Random123 (kat_vectors), Philox4x32-10 */
static void test_philox_known_answers(void **state) {
  (void)state;
  uint32_t out[4];
  const uint32_t c0[4] = {0, 0, 0, 0}, k0[2] = {0, 0};
  hl_philox4x32_10(c0, k0, out);
  assert_int_equal(out[0], 0x6627e8d5u);
  assert_int_equal(out[1], 0xe169c58du);
  assert_int_equal(out[2], 0xbc57ac4cu);
  assert_int_equal(out[3], 0x9b00dbd8u);
  const uint32_t c1[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, k1[2] = {0xffffffffu, 0xffffffffu};
  hl_philox4x32_10(c1, k1, out);
  assert_int_equal(out[0], 0x408f276du);
  assert_int_equal(out[1], 0x41c83b0eu);
  assert_int_equal(out[2], 0xa20bc7c6u);
  assert_int_equal(out[3], 0x6d5451fdu);
  const uint32_t c2[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, k2[2] = {0xa4093822u, 0x299f31d0u};
  hl_philox4x32_10(c2, k2, out);
  assert_int_equal(out[0], 0xd16cfe09u);
  assert_int_equal(out[1], 0x94fdccebu);
  assert_int_equal(out[2], 0x5001e420u);
  assert_int_equal(out[3], 0x24126ea1u);
  /* stream layout: word i of a stream is word i%4 of block i/4 */
  assert_int_equal(hl_philox_u32(0, 0, 2), 0xbc57ac4cu);
  assert_true(hl_u32_to_unit_float(0xffffffffu) < 1.0f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fp16_range_edges),      cmocka_unit_test(test_fp16_subnormals),
      cmocka_unit_test(test_absorption_facts),      cmocka_unit_test(test_bf16),
      cmocka_unit_test(test_arith_correctly_rounded), cmocka_unit_test(test_fp8_edges),
      cmocka_unit_test(test_tf32),                  cmocka_unit_test(test_format_table),
      cmocka_unit_test(test_bitstring_and_neighbours), cmocka_unit_test(test_generic_round),
      cmocka_unit_test(test_philox_known_answers), cmocka_unit_test(test_generic_round_agrees_with_round_h),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
