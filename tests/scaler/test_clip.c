/* test_clip.c — suite unit: clip_grad_norm (the norm returned for L2, L1
 * and inf; the coefficient as PyTorch computes it; gradients below the
 * limit untouched; inf/NaN norms reported, error_if_nonfinite leaving the
 * gradients alone; many tensors and many chunks against an f64 reference;
 * strided gradients; the optimizer form with master weights) and
 * clip_grad_value. */
#include <math.h>
#include <stdlib.h>

#include "core/training/clip.h"
#include "core/training/fault.h"
#include "core/engine/ops.h"
#include "formats/philox.h"
#include "tests/scaler/scaler_test.h"

static const hl_device_kind cpu = HL_DEVICE_CPU;

static hl_tensor *with_grad(const char *name, hl_shape s, const float *g, hl_dtype dtype) {
  hl_tensor *p = param_of(name, s, NULL, 0, dtype, cpu);
  hl_tensor *t = tensor_of(s, g, 0, dtype, cpu);
  OK(hl_set_grad(p, t));
  hl_release(t);
  return p;
}

static void test_norm_and_coefficient(void **state) {
  (void)state;
  /* |(3, 4, 12)| = 13 */
  hl_tensor *p[3] = {with_grad("a", HL_SHAPE(2), (const float[]){3, 4}, HL_F32),
                     with_grad("b", HL_SHAPE(1), (const float[]){-12}, HL_F32), param_of("no_grad", HL_SHAPE(2), NULL, 0, HL_F32, cpu)};
  double norm = -1;
  OK(hl_clip_grad_norm(p, 3, 6.5, 2.0, false, &norm));
  assert_true(norm == 13.0);
  const float coef = 6.5f / (13.0f + 1e-6f);
  assert_true(value_at(hl_tensor_grad(p[0]), 0) == 3 * coef);
  assert_true(value_at(hl_tensor_grad(p[0]), 1) == 4 * coef);
  assert_true(value_at(hl_tensor_grad(p[1]), 0) == -12 * coef);
  assert_null(hl_tensor_grad(p[2]));
  /* now below the limit: coefficient clamped to 1, nothing changes */
  float before = value_at(hl_tensor_grad(p[0]), 0);
  OK(hl_clip_grad_norm(p, 3, 100, 2.0, false, &norm));
  assert_true(fabs(norm - 6.5) < 1e-5);
  assert_true(value_at(hl_tensor_grad(p[0]), 0) == before);
  /* inf-norm: the largest magnitude; L1: the sum of magnitudes */
  hl_tensor *q = with_grad("q", HL_SHAPE(3), (const float[]){-5, 2, 1}, HL_F32);
  OK(hl_clip_grad_norm(&q, 1, 1e9, INFINITY, false, &norm));
  assert_true(norm == 5.0);
  OK(hl_clip_grad_norm(&q, 1, 4, 1.0, false, &norm));
  assert_true(norm == 8.0);
  assert_true(value_at(hl_tensor_grad(q), 0) == -5 * (4.0f / (8.0f + 1e-6f)));
  REFUSED(hl_clip_grad_norm(&q, 1, 4, 3.0, false, &norm), "norm_type 3 is not supported");
  /* the norm alone: the same number, nothing scaled */
  float *qv = values_of(hl_tensor_grad(q));
  OK(hl_grad_norm(&q, 1, 2.0, &norm));
  assert_true(fabs(norm - sqrt((double)qv[0] * qv[0] + (double)qv[1] * qv[1] + (double)qv[2] * qv[2])) < 1e-6 * norm);
  float *qa = values_of(hl_tensor_grad(q));
  assert_memory_equal(qv, qa, 3 * sizeof(float));
  free(qv);
  free(qa);
  REFUSED(hl_clip_grad_norm(&q, 1, -1, 2.0, false, &norm), "max_norm");
  /* no gradients at all: norm 0 */
  OK(hl_clip_grad_norm(&p[2], 1, 1, 2.0, false, &norm));
  assert_true(norm == 0.0);
  for (int i = 0; i < 3; i++) hl_release(p[i]);
  hl_release(q);
}

static void test_nonfinite_norm(void **state) {
  (void)state;
  for (int kind = 0; kind < 2; kind++) {
    hl_tensor *p[2] = {with_grad("a", HL_SHAPE(4), (const float[]){1, 2, 3, 4}, HL_F32),
                       with_grad("b", HL_SHAPE(2), (const float[]){5, 6}, HL_BF16)};
    OK(hl_fault_poison(hl_tensor_grad(p[1]), 1, kind ? HL_FAULT_NAN : HL_FAULT_INF));
    double norm = 0;
    /* error_if_nonfinite: refused, gradients untouched */
    REFUSED(hl_clip_grad_norm(p, 2, 1, 2.0, true, &norm), kind ? "is nan" : "is inf", "left as they were");
    assert_true(kind ? isnan(norm) : isinf(norm));
    assert_true(value_at(hl_tensor_grad(p[0]), 3) == 4.0f);
    /* by default: reported, and the gradients become NaN/0 as PyTorch's
     * would (the scaler skips such a step anyway) */
    OK(hl_clip_grad_norm(p, 2, 1, 2.0, false, &norm));
    assert_false(isfinite(norm));
    float g = value_at(hl_tensor_grad(p[0]), 3);
    assert_true(kind ? isnan(g) : g == 0.0f);
    /* the inf-norm sees a NaN too */
    if (kind) {
      OK(hl_clip_grad_norm(&p[1], 1, 1, INFINITY, false, &norm));
      assert_true(isnan(norm));
    }
    hl_release(p[0]);
    hl_release(p[1]);
  }
}

/* 40 tensors of assorted sizes (two of them several chunks long), f32 and
 * bf16: the L2 norm against an f64 sum of the exact squares. */
static void test_many_tensors(void **state) {
  (void)state;
  enum { T = 40 };
  hl_tensor *p[T];
  double sum = 0, l1 = 0, mx = 0;
  for (int t = 0; t < T; t++) {
    int64_t n = t == 7 ? 70001 : t == 30 ? 40000 : 1 + (t * 37) % 300;
    float *g = malloc((size_t)n * sizeof *g);
    for (int64_t i = 0; i < n; i++) g[i] = (hl_u32_to_unit_float(hl_philox_u32(3, (uint64_t)t, (uint64_t)i)) - 0.5f) * (1 + t % 5);
    hl_dtype dt = t % 3 == 0 ? HL_BF16 : HL_F32;
    p[t] = with_grad("p", HL_SHAPE(n), g, dt);
    float *stored = values_of(hl_tensor_grad(p[t]));
    for (int64_t i = 0; i < n; i++) {
      sum += (double)stored[i] * stored[i];
      l1 += fabs(stored[i]);
      mx = fmax(mx, fabs(stored[i]));
    }
    free(stored);
    free(g);
  }
  double norm;
  OK(hl_clip_grad_norm(p, T, 1e30, 2.0, false, &norm));
  assert_true(fabs(norm - sqrt(sum)) <= 1e-6 * sqrt(sum));
  OK(hl_clip_grad_norm(p, T, 1e30, 1.0, false, &norm));
  assert_true(fabs(norm - l1) <= 1e-6 * l1);
  OK(hl_clip_grad_norm(p, T, 1e30, INFINITY, false, &norm));
  assert_true(norm == mx);
  for (int t = 0; t < T; t++) hl_release(p[t]);
}

/* a transposed gradient (the layout a grad can have after create_graph) */
static void test_strided_gradient(void **state) {
  (void)state;
  hl_tensor *p = param_of("p", HL_SHAPE(3, 2), NULL, 0, HL_F32, cpu);
  hl_tensor *base = tensor_of(HL_SHAPE(2, 3), (const float[]){1, 2, 3, 4, 5, 6}, 0, HL_F32, cpu);
  hl_tensor *gt = hl_transpose(base, 0, 1);
  OK(hl_set_grad(p, gt));
  double norm;
  OK(hl_clip_grad_value(&p, 1, 2.5));
  float *v = values_of(base);
  const float want[6] = {1, 2, 2.5f, 2.5f, 2.5f, 2.5f};
  for (int i = 0; i < 6; i++) assert_true(v[i] == want[i]);
  free(v);
  OK(hl_clip_grad_norm(&p, 1, 1, 2.0, false, &norm));
  assert_true(fabs(norm - sqrt(1 + 4 + 4 * 6.25)) < 1e-6);
  hl_release(gt);
  hl_release(base);
  hl_release(p);
}

static void test_clip_value(void **state) {
  (void)state;
  hl_tensor *p = with_grad("p", HL_SHAPE(5), (const float[]){-3, -0.5f, 0.25f, 9, 0}, HL_F16);
  OK(hl_fault_poison(hl_tensor_grad(p), 4, HL_FAULT_NAN));
  OK(hl_clip_grad_value(&p, 1, 1.0));
  float *v = values_of(hl_tensor_grad(p));
  assert_true(v[0] == -1 && v[1] == -0.5f && v[2] == 0.25f && v[3] == 1);
  assert_true(isnan(v[4])); /* NaN stays NaN */
  free(v);
  REFUSED(hl_clip_grad_value(&p, 1, -1), "clip_value");
  hl_release(p);
}

/* The optimizer form clips what the optimizer steps with: the f32 master
 * gradients of fp16 parameters. */
static void test_clip_optim_masters(void **state) {
  (void)state;
  hl_tensor *w = param_of("w", HL_SHAPE(2), NULL, 1, HL_F16, cpu);
  hl_tensor *g = tensor_of(HL_SHAPE(2), (const float[]){30, 40}, 0, HL_F16, cpu);
  OK(hl_set_grad(w, g));
  hl_sgd_opts o = hl_sgd_defaults();
  o.lr = 0.01;
  o.master_weights = true;
  hl_optim *opt = hl_sgd_new(&w, 1, o);
  OK(opt);
  double norm;
  OK(hl_grad_norm_optim(opt, 2.0, &norm));
  assert_true(norm == 50.0);
  OK(hl_clip_grad_norm_optim(opt, 5, 2.0, false, &norm));
  assert_true(norm == 50.0);
  hl_tensor *mg = hl_optim_grad(opt, 0);
  assert_int_equal(mg->dtype, HL_F32);
  const float coef = 5.0f / (50.0f + 1e-6f);
  assert_true(value_at(mg, 0) == 30 * coef && value_at(mg, 1) == 40 * coef);
  assert_true(value_at(hl_tensor_grad(w), 0) == 30.0f); /* the model's gradient stays */
  OK(hl_optim_step(opt, NULL)); /* steps with the clipped master gradient */
  assert_true(value_at(hl_optim_master(opt, 0), 0) == 1.0f - 0.01f * (30 * coef));
  OK(hl_clip_grad_value_optim(opt, 0.5)); /* prepares fresh master gradients first */
  assert_true(value_at(hl_optim_grad(opt, 0), 0) == 0.5f);
  hl_optim_free(opt);
  hl_release(g);
  hl_release(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_norm_and_coefficient), cmocka_unit_test(test_nonfinite_norm),
      cmocka_unit_test(test_many_tensors),         cmocka_unit_test(test_strided_gradient),
      cmocka_unit_test(test_clip_value),           cmocka_unit_test(test_clip_optim_masters),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
