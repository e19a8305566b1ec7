/* test_tensor.c — suite unit: tensor creation, views, conversions, read
 * back, reference counting and byte accounting, names, in-place rules. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/format.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "tests/core/core_test.h"

static void test_create_and_read(void **state) {
  (void)state;
  uint64_t before = hl_cpu_live_bytes();
  hl_tensor *z = hl_zeros(HL_SHAPE(2, 3), HL_F32, HL_DEVICE_CPU);
  hl_tensor *o = hl_ones(HL_SHAPE(4), HL_F16, HL_DEVICE_CPU);
  hl_tensor *f = hl_full(HL_SHAPE(2, 2), 65520.0, HL_F16, HL_DEVICE_CPU); /* the midpoint rounds to inf */
  hl_tensor *s = hl_scalar(-2.5, HL_BF16, HL_DEVICE_CPU);
  OK(z && o && f && s);
  assert_int_equal(hl_cpu_live_bytes() - before, 2 * 3 * 4 + 4 * 2 + 4 * 2 + 2);
  assert_string_equal(hl_desc(z), "f32[2,3]");
  assert_string_equal(hl_desc(s), "bf16[]");
  float v[6];
  OK(hl_read_f32(z, v));
  for (int i = 0; i < 6; i++) assert_true(v[i] == 0.0f);
  OK(hl_read_f32(o, v));
  for (int i = 0; i < 4; i++) assert_true(v[i] == 1.0f);
  OK(hl_read_f32(f, v));
  assert_true(isinf(v[0]) && v[0] > 0);
  assert_true(hl_item(s) == -2.5);
  hl_release(z);
  hl_release(o);
  hl_release(f);
  hl_release(s);
  assert_int_equal(hl_cpu_live_bytes(), before);
}

static void test_from_host_rounds_once(void **state) {
  (void)state;
  /* double -> f16 directly: 1 + 2^-11 + 2^-40 is just above a tie and must
   * round up, which a double -> float -> half path would miss */
  double d[3] = {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-11, 65519.0};
  hl_tensor *t = hl_from_f64(HL_SHAPE(3), d, HL_F16, HL_DEVICE_CPU);
  OK(t);
  const uint16_t *h = hl_tensor_data(t);
  assert_int_equal(h[0], 0x3c01);
  assert_int_equal(h[1], 0x3c00); /* the tie itself goes to even */
  assert_int_equal(h[2], 0x7bff);
  for (int i = 0; i < 3; i++)
    assert_true(hl_f16_to_f32(h[i]) == (float)hl_format_round(HL_F16, d[i], HL_OVERFLOW_IEEE));
  hl_release(t);
  /* integers: nearest even, saturated, NaN -> 0 */
  float f[5] = {2.5f, -3.5f, 300.0f, NAN, -1e10f};
  hl_tensor *i8 = hl_from_f32(HL_SHAPE(5), f, HL_I8, HL_DEVICE_CPU);
  OK(i8);
  const int8_t *q = hl_tensor_data(i8);
  assert_int_equal(q[0], 2);
  assert_int_equal(q[1], -4);
  assert_int_equal(q[2], 127);
  assert_int_equal(q[3], 0);
  assert_int_equal(q[4], -128);
  hl_release(i8);
}

static void test_random_streams(void **state) {
  (void)state;
  hl_tensor *a = hl_randn(HL_SHAPE(1000), 0, 1, 7, 0, HL_F32, HL_DEVICE_CPU);
  hl_tensor *b = hl_randn(HL_SHAPE(1000), 0, 1, 7, 0, HL_F32, HL_DEVICE_CPU);
  hl_tensor *c = hl_randn(HL_SHAPE(1000), 0, 1, 7, 1, HL_F32, HL_DEVICE_CPU);
  hl_tensor *u = hl_rand(HL_SHAPE(1000), -2, 3, 7, 0, HL_F32, HL_DEVICE_CPU);
  OK(a && b && c && u);
  assert_memory_equal(hl_tensor_data(a), hl_tensor_data(b), 4000);
  assert_memory_not_equal(hl_tensor_data(a), hl_tensor_data(c), 4000);
  const float *x = hl_tensor_data(a), *y = hl_tensor_data(u);
  double mean = 0, var = 0;
  for (int i = 0; i < 1000; i++) mean += x[i];
  mean /= 1000;
  for (int i = 0; i < 1000; i++) var += (x[i] - mean) * (x[i] - mean);
  var /= 999;
  assert_true(fabs(mean) < 0.15 && fabs(var - 1) < 0.15); /* 1000 draws: ~5 sigma bounds */
  for (int i = 0; i < 1000; i++) {
    assert_true(y[i] >= -2.0f && y[i] < 3.0f);
    /* element i is a pure function of (seed, stream, i) */
    assert_true(y[i] == -2.0f + 5.0f * hl_u32_to_unit_float(hl_philox_u32(7, 0, (uint64_t)i)));
  }
  hl_release(a);
  hl_release(b);
  hl_release(c);
  hl_release(u);
}

static void test_views_share_storage(void **state) {
  (void)state;
  float v[12];
  for (int i = 0; i < 12; i++) v[i] = (float)i;
  hl_tensor *x = hl_from_f32(HL_SHAPE(3, 4), v, HL_F32, HL_DEVICE_CPU);
  uint64_t before = hl_cpu_live_bytes();
  hl_tensor *t = hl_transpose(x, 0, 1);
  hl_tensor *s = hl_slice(t, 0, 1, 3);      /* rows 1..2 of x^T: columns 1, 2 of x */
  hl_tensor *r = hl_reshape(x, HL_SHAPE(2, -1)); /* a view: x is contiguous */
  OK(t && s && r);
  assert_int_equal(hl_cpu_live_bytes(), before);    /* no bytes for views */
  assert_false(hl_is_contiguous(t));
  assert_string_equal(hl_desc(s), "f32[2,3]");
  float out[6];
  OK(hl_read_f32(s, out));
  const float want[6] = {1, 5, 9, 2, 6, 10};
  assert_memory_equal(out, want, sizeof want);
  /* reshape of a non-contiguous view copies */
  hl_tensor *rc = hl_reshape(t, HL_SHAPE(12));
  OK(rc);
  assert_int_equal(hl_cpu_live_bytes() - before, 48);
  OK(hl_read_f32(rc, v));
  assert_true(v[1] == 4.0f && v[3] == 1.0f);
  /* the views keep the storage alive after x is released */
  hl_release(x);
  OK(hl_read_f32(s, out));
  assert_memory_equal(out, want, sizeof want);
  hl_release(t);
  hl_release(s);
  hl_release(r);
  hl_release(rc);
  assert_int_equal(hl_cpu_live_bytes(), before - 48);
}

static void test_split_heads_layout(void **state) {
  (void)state;
  /* qkv [B=1, T=2, 3C=12] -> q, k, v [1,2,4] -> heads [1,2,2,2] without copies */
  float v[24];
  for (int i = 0; i < 24; i++) v[i] = (float)i;
  hl_tensor *qkv = hl_from_f32(HL_SHAPE(1, 2, 12), v, HL_F32, HL_DEVICE_CPU);
  hl_tensor *parts[3];
  OK(hl_split(qkv, -1, 3, parts));
  uint64_t before = hl_cpu_live_bytes();
  hl_tensor *k = hl_split_heads(parts[1], 2);
  OK(k);
  assert_int_equal(hl_cpu_live_bytes(), before);
  assert_string_equal(hl_desc(k), "f32[1,2,2,2]");
  float out[8];
  OK(hl_read_f32(k, out));
  /* head 0: t0 (4,5), t1 (16,17); head 1: t0 (6,7), t1 (18,19) */
  const float want[8] = {4, 5, 16, 17, 6, 7, 18, 19};
  assert_memory_equal(out, want, sizeof want);
  hl_tensor *m = hl_merge_heads(k);
  OK(m);
  OK(hl_read_f32(m, out));
  const float merged[8] = {4, 5, 6, 7, 16, 17, 18, 19};
  assert_memory_equal(out, merged, sizeof merged);
  for (int i = 0; i < 3; i++) hl_release(parts[i]);
  hl_release(k);
  hl_release(m);
  hl_release(qkv);
}

static void test_conversions(void **state) {
  (void)state;
  float v[4] = {1.0f + 0x1p-11f, 65504.0f, 1e-8f, -0.0f};
  hl_tensor *x = hl_from_f32(HL_SHAPE(4), v, HL_F32, HL_DEVICE_CPU);
  hl_tensor *h = hl_to_dtype(x, HL_F16), *b = hl_to_dtype(x, HL_BF16), *back = hl_to_f32(h);
  OK(h && b && back);
  const uint16_t *hv = hl_tensor_data(h), *bv = hl_tensor_data(b);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(hv[i], hl_f32_to_f16(v[i]));
    assert_int_equal(bv[i], hl_f32_to_bf16(v[i]));
  }
  hl_tensor *same = hl_to_dtype(x, HL_F32);
  assert_true(same == x); /* same dtype: the tensor itself */
  hl_release(same);
  hl_release(x);
  hl_release(h);
  hl_release(b);
  hl_release(back);
  /* to(cpu) of a cpu tensor is itself too */
  hl_tensor *y = hl_zeros(HL_SHAPE(2), HL_F32, HL_DEVICE_CPU);
  hl_tensor *y2 = hl_to_device(y, HL_DEVICE_CPU);
  assert_true(y2 == y);
  hl_release(y2);
  hl_release(y);
}

static void test_names_and_grad_flags(void **state) {
  (void)state;
  hl_tensor *w = hl_zeros(HL_SHAPE(2, 2), HL_F32, HL_DEVICE_CPU);
  assert_string_equal(hl_tensor_name(w), "");
  hl_tensor_set_name(w, "fc1.weight");
  assert_string_equal(hl_tensor_name(w), "fc1.weight");
  OK(hl_set_requires_grad(w, true));
  assert_true(hl_is_leaf(w) && hl_requires_grad(w));
  hl_tensor *y = hl_mul_scalar(w, 2.0);
  assert_false(hl_is_leaf(y));
  assert_true(hl_requires_grad(y));
  /* non-leaves and integer tensors cannot be made to require grad */
  assert_false(hl_set_requires_grad(y, false));
  assert_non_null(strstr(hl_error(), "not a leaf"));
  hl_tensor *i = hl_zeros(HL_SHAPE(2), HL_I32, HL_DEVICE_CPU);
  assert_false(hl_set_requires_grad(i, true));
  assert_non_null(strstr(hl_error(), "only float tensors"));
  hl_tensor *d = hl_detach(y);
  assert_true(hl_is_leaf(d) && !hl_requires_grad(d));
  hl_release(d);
  hl_release(i);
  hl_release(y);
  hl_release(w);
}

static void test_in_place_rules(void **state) {
  (void)state;
  hl_tensor *w = hl_ones(HL_SHAPE(3), HL_F32, HL_DEVICE_CPU), *g = hl_full(HL_SHAPE(3), 0.5, HL_F32, HL_DEVICE_CPU);
  OK(hl_set_requires_grad(w, true));
  /* a leaf that requires grad is updated under no-grad only */
  assert_false(hl_add_(w, g));
  assert_non_null(strstr(hl_error(), "HL_NO_GRAD"));
  HL_NO_GRAD {
    OK(hl_add_(w, g));
    OK(hl_scale_(w, 2.0));
  }
  assert_true(hl_grad_enabled());
  float v[3];
  OK(hl_read_f32(w, v));
  assert_true(v[0] == 3.0f);
  /* tensors made by ops are refused */
  hl_tensor *y = hl_mul_scalar(w, 1.0);
  assert_false(hl_fill_(y, 0.0));
  assert_non_null(strstr(hl_error(), "mul_scalar"));
  /* copy_ converts */
  hl_tensor *h = hl_zeros(HL_SHAPE(3), HL_F16, HL_DEVICE_CPU);
  OK(hl_copy_(h, g));
  hl_pool_push();
  assert_true(hl_item(hl_tmp(hl_sum(hl_tmp(hl_to_f32(h))))) == 1.5);
  hl_pool_pop();
  hl_release(h);
  hl_release(y);
  hl_release(w);
  hl_release(g);
}

static void test_pools(void **state) {
  (void)state;
  uint64_t before = hl_cpu_live_bytes();
  hl_pool_push();
  hl_tensor *x = hl_tmp(hl_ones(HL_SHAPE(8), HL_F32, HL_DEVICE_CPU));
  hl_tensor *y = hl_relu(hl_tmp(hl_mul_scalar(x, -1.0)));
  assert_true(hl_cpu_live_bytes() > before);
  hl_pool_pop();
  /* y was not pooled: it outlives the pool */
  hl_tensor *s = hl_sum(y);
  assert_true(hl_item(s) == 0.0);
  hl_release(s);
  hl_release(y);
  assert_int_equal(hl_cpu_live_bytes(), before);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_and_read),   cmocka_unit_test(test_from_host_rounds_once),
      cmocka_unit_test(test_random_streams),    cmocka_unit_test(test_views_share_storage),
      cmocka_unit_test(test_split_heads_layout), cmocka_unit_test(test_conversions),
      cmocka_unit_test(test_names_and_grad_flags), cmocka_unit_test(test_in_place_rules),
      cmocka_unit_test(test_pools),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
