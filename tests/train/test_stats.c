/* test_stats.c — suite unit: the training runs' counters (train/gradient_stats.h)
 * against cases worked out by hand: fp16's zero / subnormal / overflow
 * boundaries (ties to even at 2^-25 and 65520), before and after a loss
 * scale; log2 histogram bins and their fp16 zones; absorbed updates (the
 * classic 1 + 0.0001 in fp16, a half-ulp tie, the optimizer's own count). */
#include <float.h>
#include <math.h>

#include "tests/support/hltest.h"
#include "train/gradient_stats.h"

static void test_census_boundaries(void **state) {
  (void)state;
  const float g[] = {0.0f,
                     1e-8f,                    /* below 2^-25: flushes to zero */
                     3e-8f,                    /* above 2^-25: rounds up to 2^-24, a subnormal */
                     1e-5f,                    /* subnormal */
                     1e-4f,                    /* normal */
                     70000.0f,                 /* overflow */
                     INFINITY,                 /* not classified */
                     -0x1p-14f,                /* the smallest normal */
                     0x1p-25f,                 /* the tie: rounds to even, zero */
                     nextafterf(0x1p-25f, 1),  /* just above: 2^-24 */
                     65519.0f,                 /* rounds down to 65504 */
                     65520.0f};                /* the tie: rounds to even, inf */
  grad_census c = {0};
  census_add(&c, g, 12, 1.0f);
  assert_int_equal(c.n, 12);
  assert_int_equal(c.nonfinite, 1);
  assert_int_equal(c.exact_zero, 1);
  assert_int_equal(c.fp16_zero, 3);
  assert_int_equal(c.fp16_subnormal, 3);
  assert_int_equal(c.fp16_overflow, 2);
  assert_true(census_underflow_frac(&c) == 6.0 / 11.0);
  assert_true(census_zero_frac(&c) == 3.0 / 11.0);
  assert_true(census_exact_zero_frac(&c) == 1.0 / 11.0);
}

static void test_census_scaled(void **state) {
  (void)state;
  const float g[] = {1e-8f, 1e-5f, 1e-4f, 0.0f, 2.0f};
  grad_census c = {0};
  census_add(&c, g, 5, 1024.0f); /* 1.024e-5 subnormal, 1.024e-2 and 0.1024 normal, 0 stays 0, 2048 normal */
  assert_int_equal(c.fp16_zero, 1);
  assert_int_equal(c.fp16_subnormal, 1);
  assert_int_equal(c.fp16_overflow, 0);
  grad_census big = {0};
  census_add(&big, g, 5, 65536.0f); /* 2 x 65536 overflows; 1e-8 x 65536 = 6.6e-4 is normal */
  assert_int_equal(big.fp16_overflow, 1);
  assert_int_equal(big.fp16_subnormal, 0);
  assert_int_equal(big.fp16_zero, 1);
  /* a finite gradient whose scaled value overflows even f32: an overflow, as in an fp16 backward */
  const float huge = 1e38f;
  grad_census h = {0};
  census_add(&h, &huge, 1, 65536.0f);
  assert_int_equal(h.fp16_overflow, 1);
  grad_census none = {0};
  assert_true(isnan(census_underflow_frac(&none)));
}

static void test_hist_bins(void **state) {
  (void)state;
  assert_int_equal(hist_log2_floor(1.0f), 0);
  assert_int_equal(hist_log2_floor(0.75f), -1);
  assert_int_equal(hist_log2_floor(-0.5f), -1);
  assert_int_equal(hist_log2_floor(3.0f), 1);
  assert_int_equal(hist_log2_floor(0x1p-149f), -149);
  assert_int_equal(hist_log2_floor(0x1.fffffcp-127f), -127); /* the largest subnormal */
  assert_int_equal(hist_log2_floor(FLT_MAX), 127);
  assert_int_equal(hist_log2_floor(nextafterf(0x1p-14f, 0)), -15);
  const float g[] = {0.0f, 1.0f, 3.0f, -0.5f, INFINITY, 0x1p-149f, 1.5f};
  grad_hist h = {0};
  hist_add(&h, g, 7, 1.0f);
  assert_int_equal(h.zero, 1);
  assert_int_equal(h.nonfinite, 1);
  assert_int_equal(h.bin[0 - HIST_MIN_LOG2], 2);
  assert_int_equal(h.bin[1 - HIST_MIN_LOG2], 1);
  assert_int_equal(h.bin[-1 - HIST_MIN_LOG2], 1);
  assert_int_equal(h.bin[-149 - HIST_MIN_LOG2], 1);
  assert_int_equal(hist_total(&h), 7);
  grad_hist s = {0};
  hist_add(&s, g, 7, 2.0f); /* every bin moves up by one */
  assert_int_equal(s.bin[1 - HIST_MIN_LOG2], 2);
  assert_int_equal(s.bin[-148 - HIST_MIN_LOG2], 1);
  assert_string_equal(hist_fp16_zone(-26), "zero");
  assert_string_equal(hist_fp16_zone(-25), "subnormal");
  assert_string_equal(hist_fp16_zone(-15), "subnormal");
  assert_string_equal(hist_fp16_zone(-14), "normal");
  assert_string_equal(hist_fp16_zone(15), "normal");
  assert_string_equal(hist_fp16_zone(16), "overflow");
}

static void test_absorb_fp32_weights(void **state) {
  (void)state;
  const float before[] = {1.0f, 1.0f, 0.5f, 2.0f, 3.0f, 1.0f};
  const float after[] = {1.0001f,          /* 1 + 0.0001: lost in fp16 (half an ulp is 2^-11) */
                         1.0f,             /* no update (or one absorbed in f32 itself: the optimizer counts it) */
                         0.5f + 0x1p-11f,  /* one fp16 ulp at 0.5: kept */
                         2.01f,            /* more than half an ulp (2^-10) at 2: kept */
                         3.0f,
                         1.0f + 0x1p-11f}; /* exactly half an ulp: the tie rounds to even, 1.0: lost */
  absorb_count a = {0};
  absorb_compare(&a, before, after, 6, true);
  assert_int_equal(a.changed, 4);
  assert_int_equal(a.updated, 4);
  assert_int_equal(a.absorbed, 0);
  assert_int_equal(a.fp16_absorbed, 2);
  absorb_add_optimizer(&a, 1);
  assert_int_equal(a.updated, 5);
  assert_true(absorb_frac(&a) == 1.0 / 5.0);
  assert_true(absorb_fp16_frac(&a) == 3.0 / 5.0);
}

static void test_absorb_fp16_weights(void **state) {
  (void)state;
  /* fp16 weights as f32 values: one changed; the optimizer saw three
   * non-zero updates that left their weight as it was */
  const float before[] = {1.0f, 2.0f, 0.25f};
  const float after[] = {1.0f, 2.0f + 0x1p-9f, 0.25f};
  absorb_count a = {0};
  absorb_compare(&a, before, after, 3, false);
  absorb_add_optimizer(&a, 3);
  assert_int_equal(a.changed, 1);
  assert_int_equal(a.updated, 4);
  assert_int_equal(a.absorbed, 3);
  assert_int_equal(a.fp16_absorbed, 3);
  assert_true(absorb_frac(&a) == 0.75);
  absorb_count none = {0};
  assert_true(isnan(absorb_frac(&none)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_census_boundaries), cmocka_unit_test(test_census_scaled),
      cmocka_unit_test(test_hist_bins),         cmocka_unit_test(test_absorb_fp32_weights),
      cmocka_unit_test(test_absorb_fp16_weights),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
