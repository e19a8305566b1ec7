/* test_narrow_accumulator.c — suite unit: kernels/narrow_accumulator.h, the
 * model of Hopper's FP8 accumulator (14 significant bits, truncation, groups
 * of 32 aligned to the largest exponent) and of DeepSeek-V3's promotion to
 * fp32 every 128 products, on sums worked out by hand. */
#include <math.h>
#include <string.h>

#include "kernels/narrow_accumulator.h"
#include "tests/support/hltest.h"

static void test_truncation_by_hand(void **state) {
  (void)state;
  /* 14 significant bits: 8193 = 2^13 + 1 is held; 8193.5 is cut to 8193 (truncation, not to nearest) */
  assert_true(hl_truncate_significand(8193.0, 14) == 8193.0);
  assert_true(hl_truncate_significand(8193.5, 14) == 8193.0);
  assert_true(hl_truncate_significand(-8193.75, 14) == -8193.0); /* toward zero on both sides */
  assert_true(hl_truncate_significand(16383.0, 14) == 16383.0);
  assert_true(hl_truncate_significand(16385.0, 14) == 16384.0); /* 2^14 + 1 needs 15 bits */
  assert_true(hl_truncate_significand(0.0, 14) == 0.0);
  assert_int_equal(hl_leading_exponent(1.0), 0);
  assert_int_equal(hl_leading_exponent(0.75), -1);
  assert_int_equal(hl_leading_exponent(-6.0), 2);
}

/* A group aligns to its largest addend: an addend below that grid's spacing is cut before the add */
static void test_group_alignment(void **state) {
  (void)state;
  const double group[3] = {8192.0, 1.5, 0.75};
  /* grid 2^(13 - 13) = 1: 1.5 -> 1, 0.75 -> 0; fp32 would give 8194.25 */
  assert_true(hl_narrow_acc_add_group(0.0, group, 3, 14) == 8193.0);
  /* the running sum takes part in the alignment */
  const double small[2] = {0.25, 0.25};
  assert_true(hl_narrow_acc_add_group(16384.0, small, 2, 14) == 16384.0);
  assert_true(hl_narrow_acc_add_group(64.0, small, 2, 14) == 64.5);
  assert_true(hl_narrow_acc_add_group(0.0, small, 0, 14) == 0.0);
}

/* A small addend lost against a large running sum, kept when the sum is promoted every 128 */
static void test_promotion_keeps_the_small_addends(void **state) {
  (void)state;
  enum { K = 256 };
  float a[K], b[K], one[2] = {1.0f, 1.0f};
  for (int p = 0; p < K; p++) a[p] = p < 128 ? 0.0f : 0.25f, b[p] = 1.0f;
  a[0] = 16384.0f; /* 2^14: the narrow sum's spacing is 2 from here on */
  const double exact = 16384.0 + 128 * 0.25;
  /* one narrow sum: every 0.25 falls below the spacing of 2 and is truncated away */
  assert_true(hl_narrow_acc_dot(a, b, K, 14) == 16384.0);
  assert_true(hl_narrow_acc_promoted_dot(a, b, one, K, K, 14) == 16384.0f);
  /* promoted: the second 128 start from zero, 32 exactly, then join 16384 in fp32 */
  assert_true(hl_narrow_acc_promoted_dot(a, b, one, K, 128, 14) == (float)exact);
  /* the fp32 accumulator, for the record, has it exactly too */
  float fp32 = 0.0f;
  for (int p = 0; p < K; p++) fp32 += a[p] * b[p];
  assert_true(fp32 == (float)exact);
}

/* Each chunk's partial sum is multiplied by its own scale before it joins the fp32 sum */
static void test_chunk_scales(void **state) {
  (void)state;
  enum { K = 300 };
  float a[K], b[K];
  for (int p = 0; p < K; p++) a[p] = 1.0f, b[p] = 0.5f;
  const float scales[3] = {2.0f, 4.0f, 8.0f}; /* chunks of 128, 128, 44 */
  assert_true(hl_narrow_acc_promoted_dot(a, b, scales, K, 128, 14) == 64.0f * 2 + 64.0f * 4 + 22.0f * 8);
}

/* Against a sum of positive terms large enough to lose bits: the model must lose about k u / 4
 * relative (truncation of each addend), never gain, and wider accumulators must lose less */
static void test_positive_sum_loses_what_truncation_predicts(void **state) {
  (void)state;
  enum { K = 4096 };
  static float a[K], b[K];
  double exact = 0.0;
  for (int p = 0; p < K; p++) {
    a[p] = 1.0f + (float)(p % 7) / 8.0f; /* e4m3 values in [1, 1.75] */
    b[p] = 1.0f + (float)(p % 5) / 8.0f;
    exact += (double)a[p] * b[p];
  }
  const double got14 = hl_narrow_acc_dot(a, b, K, 14), got16 = hl_narrow_acc_dot(a, b, K, 16);
  const double err14 = (exact - got14) / exact, err16 = (exact - got16) / exact;
  assert_true(err14 > 0.0 && err16 > 0.0); /* truncation only ever lowers a positive sum */
  assert_true(err14 > 3.0 * err16);        /* 2 fewer bits: about 4 times the loss */
  /* each group of 32 addends loses up to one spacing 2^(e - 13) per addend, e the sum's exponent */
  assert_true(err14 < K * 0x1p-13);
  const double promoted = hl_narrow_acc_promoted_dot(a, b, (const float[32]){[0 ... 31] = 1.0f}, K, 128, 14);
  assert_true((exact - promoted) / exact < err14 / 8.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_truncation_by_hand),
      cmocka_unit_test(test_group_alignment),
      cmocka_unit_test(test_promotion_keeps_the_small_addends),
      cmocka_unit_test(test_chunk_scales),
      cmocka_unit_test(test_positive_sum_loses_what_truncation_predicts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
