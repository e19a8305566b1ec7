/* test_grad_buckets.c — suite unit: the bucketed gradient all-reduce
 * (core/training/grad_buckets.h) in one process, where the all-reduce of
 * a bucket is the identity: the layout (buckets in reverse parameter
 * order, a new one where the next parameter would overflow, one piece for
 * bucket_bytes 0), the gradients written back unchanged in their dtype, a
 * parameter without a gradient left without one, and the hook filling
 * buckets during a backward. Two ranks: tests/train/test_train_mpi.c. */
#include <string.h>

#include "core/training/grad_buckets.h"
#include "tests/core/core_test.h"

static hl_tensor *param(int64_t n, hl_dtype dtype) {
  hl_tensor *t = hl_zeros(HL_SHAPE(n), dtype, HL_DEVICE_CPU);
  OK(t);
  OK(hl_set_requires_grad(t, true));
  return t;
}

static void test_layout(void **state) {
  (void)state;
  hl_tensor *p[4] = {param(10, HL_F32), param(20, HL_F32), param(30, HL_F32), param(5, HL_F32)};
  float tmp[65];
  /* 35 values a bucket, from the last parameter: {5, 30}, {20, 10} */
  hl_grad_buckets *b = hl_grad_buckets_new(p, 4, 35 * 4, HL_F32, tmp, 65);
  assert_non_null(b);
  assert_int_equal(hl_grad_buckets_count(b), 2);
  const int want[4] = {1, 1, 0, 0};
  for (int i = 0; i < 4; i++) assert_int_equal(hl_grad_buckets_bucket_of(b, i), want[i]);
  assert_false(hl_grad_buckets_overlaps(b)); /* one process: no communication thread */
  hl_grad_buckets_free(b);
  /* a parameter larger than a bucket gets one of its own */
  b = hl_grad_buckets_new(p, 4, 8 * 4, HL_F32, tmp, 65);
  assert_int_equal(hl_grad_buckets_count(b), 4);
  for (int i = 0; i < 4; i++) assert_int_equal(hl_grad_buckets_bucket_of(b, i), 3 - i);
  hl_grad_buckets_free(b);
  b = hl_grad_buckets_new(p, 4, 0, HL_F32, tmp, 65);
  assert_int_equal(hl_grad_buckets_count(b), 1);
  hl_grad_buckets_free(b);
  /* a buffer too small is refused, naming both sizes */
  assert_null(hl_grad_buckets_new(p, 4, 0, HL_F32, tmp, 64));
  assert_non_null(strstr(hl_error(), "65 values, the buffer 64"));
  hl_error_clear();
  for (int i = 0; i < 4; i++) hl_release(p[i]);
}

static void test_backward_round_trip(void **state) {
  (void)state;
  /* loss = sum(w1 * x) + sum(w2 * x) in f32 and bf16 leaves, `unused` unused */
  hl_tensor *w1 = param(7, HL_F32), *w2 = param(7, HL_BF16), *unused = param(3, HL_F32);
  hl_tensor *x = hl_from_f32(HL_SHAPE(7), (float[]){1, 2, 3, 4, 5, 6, 7}, HL_F32, HL_DEVICE_CPU);
  OK(x);
  hl_tensor *p[3] = {w1, w2, unused};
  float tmp[17];
  hl_grad_buckets *b = hl_grad_buckets_new(p, 3, 4 * 4, HL_F32, tmp, 17);
  assert_non_null(b);
  for (int step = 0; step < 2; step++) { /* the second after the rebuild */
    hl_zero_grad(w1), hl_zero_grad(w2);
    hl_grad_buckets_arm(b);
    hl_pool_push();
    hl_tensor *x2 = hl_tmp(hl_to_dtype(x, HL_BF16));
    hl_tensor *loss = hl_tmp(hl_add(hl_tmp(hl_sum(hl_tmp(hl_mul(w1, x)))),
                                    hl_tmp(hl_to_dtype(hl_tmp(hl_sum(hl_tmp(hl_mul(w2, x2)))), HL_F32))));
    OK(hl_backward_with_ready_hook(loss, NULL, false, hl_grad_buckets_ready, b));
    hl_pool_pop();
    hl_grad_buckets_stats st;
    OK(hl_grad_buckets_finish(b, &st));
    assert_int_equal(st.bytes, 17 * 4);
    assert_true(st.busy_s >= 0 && st.exposed_s >= 0);
    float g1[7], g2[7];
    OK(hl_read_f32(hl_tensor_grad(w1), g1));
    OK(hl_read_f32(hl_tensor_grad(w2), g2));
    for (int i = 0; i < 7; i++) assert_true(g1[i] == (float)(i + 1) && g2[i] == (float)(i + 1));
    assert_int_equal(hl_tensor_grad(w2)->dtype, HL_BF16);
    assert_null(hl_tensor_grad(unused));
  }
  assert_false(hl_grad_buckets_finish(b, NULL)); /* not armed */
  hl_error_clear();
  hl_grad_buckets_free(b);
  hl_release(x), hl_release(w1), hl_release(w2), hl_release(unused);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout),
      cmocka_unit_test(test_backward_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
