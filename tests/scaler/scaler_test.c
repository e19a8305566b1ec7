/* scaler_test.c — shared helpers and the seven test vectors of
 * docs/scaler.md. */
#include "tests/scaler/scaler_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/autograd.h"
#include "core/training/fault.h"
#include "core/engine/ops.h"
#include "core/engine/registry.h"

hl_tensor *tensor_of(hl_shape s, const float *v, float fill, hl_dtype dtype, hl_device_kind dev) {
  int64_t n = 1;
  for (int d = 0; d < s.ndim; d++) n *= s.d[d];
  float *host = malloc((size_t)(n ? n : 1) * sizeof *host);
  assert_non_null(host);
  for (int64_t i = 0; i < n; i++) host[i] = v ? v[i] : fill;
  hl_tensor *t = hl_from_f32(s, host, dtype, dev);
  free(host);
  OK(t);
  return t;
}

hl_tensor *param_of(const char *name, hl_shape s, const float *v, float fill, hl_dtype dtype, hl_device_kind dev) {
  hl_tensor *t = tensor_of(s, v, fill, dtype, dev);
  hl_tensor_set_name(t, name);
  OK(hl_set_requires_grad(t, true));
  return t;
}

float *values_of(const hl_tensor *t) {
  assert_non_null(t);
  float *v = malloc((size_t)(hl_numel(t) ? hl_numel(t) : 1) * sizeof *v);
  assert_non_null(v);
  OK(hl_read_f32(t, v));
  return v;
}

float value_at(const hl_tensor *t, int64_t i) {
  float *v = values_of(t);
  float x = v[i];
  free(v);
  return x;
}

bool same_bits(const hl_tensor *a, const hl_tensor *b) {
  if (!a || !b || a->dtype != b->dtype || hl_numel(a) != hl_numel(b)) return false;
  int64_t n = hl_numel(a);
  double *x = malloc((size_t)(n ? n : 1) * sizeof *x), *y = malloc((size_t)(n ? n : 1) * sizeof *y);
  assert_true(x && y);
  OK(hl_read_f64(a, x));
  OK(hl_read_f64(b, y));
  /* f64 holds every f32/f16/bf16 value exactly: equal bits of the widened
   * values mean equal bits of the originals (NaN payloads aside) */
  bool same = !memcmp(x, y, (size_t)n * sizeof *x);
  free(x);
  free(y);
  return same;
}

bool device_has_tensor_ops(hl_device_kind dev) {
  char why[256];
  return hl_op_supported(hl_op_get(HL_OP_MUL), dev, HL_F32, why, sizeof why) &&
         hl_op_supported(hl_op_get(HL_OP_SUM), dev, HL_F32, why, sizeof why);
}

/* ------------------------------------------------------------ vector 1 -- */
/* growth 2.0, backoff 0.25, interval 2, scale 4, tracker 0:
 * no inf -> (4, 1); no inf -> (8, 0); inf -> (2, 0). */

void vector1_update_scale(hl_device_kind dev) {
  hl_tensor *scale = tensor_of(HL_SCALAR_SHAPE, NULL, 4.0f, HL_F32, dev);
  int32_t zero = 0;
  hl_tensor *tracker = hl_from_i32(HL_SCALAR_SHAPE, &zero, HL_I32, dev);
  hl_tensor *found = tensor_of(HL_SCALAR_SHAPE, NULL, 0.0f, HL_F32, dev);
  hl_tensor *inf = tensor_of(HL_SCALAR_SHAPE, NULL, 1.0f, HL_F32, dev);
  OK(tracker);
  const double want_scale[3] = {4, 8, 2};
  const double want_tracker[3] = {1, 0, 0};
  for (int i = 0; i < 3; i++) {
    OK(hl_amp_update_scale(scale, tracker, i == 2 ? inf : found, 2.0, 0.25, 2));
    assert_true(hl_item(scale) == want_scale[i]);
    assert_true(hl_item(tracker) == want_tracker[i]);
  }
  hl_release(scale);
  hl_release(tracker);
  hl_release(found);
  hl_release(inf);
}

/* one iteration of a one-parameter loop: loss = sum(w * x), scaled */
static void scaled_backward(hl_scaler *s, hl_tensor *w, const float *x, float loss_factor) {
  hl_pool_push();
  hl_tensor *xt = hl_tmp(tensor_of(hl_tensor_shape(w), x, 0, HL_F32, w->device));
  hl_tensor *loss = hl_tmp(hl_mul_scalar(hl_tmp(hl_sum(hl_tmp(hl_mul(w, xt)))), loss_factor));
  OK(hl_backward(hl_tmp(hl_scaler_scale(s, loss)), NULL, false));
  hl_pool_pop();
}

void vector1_scaler(hl_device_kind dev) {
  hl_scaler_opts o = hl_scaler_defaults();
  o.init_scale = 4;
  o.growth_factor = 2;
  o.backoff_factor = 0.25;
  o.growth_interval = 2;
  hl_scaler *s = hl_scaler_new(o);
  OK(s);
  hl_tensor *w = param_of("w", HL_SHAPE(2), NULL, 1.0f, HL_F32, dev);
  hl_sgd_opts so = hl_sgd_defaults();
  hl_optim *opt = hl_sgd_new(&w, 1, so);
  OK(opt);
  const double want_scale[3] = {4, 8, 2};
  const int64_t want_tracker[3] = {1, 0, 0};
  for (int i = 0; i < 3; i++) {
    hl_optim_zero_grad(opt);
    scaled_backward(s, w, (const float[]){1, 2}, 1);
    if (i == 2) OK(hl_fault_poison(hl_tensor_grad(w), 0, HL_FAULT_INF));
    bool skipped;
    OK(hl_scaler_step(s, opt, &skipped, NULL));
    assert_true(skipped == (i == 2));
    OK(hl_scaler_update(s));
    assert_true(hl_scaler_get_scale(s) == want_scale[i]);
    assert_int_equal(hl_scaler_get_growth_tracker(s), want_tracker[i]);
  }
  hl_optim_free(opt);
  hl_release(w);
  hl_scaler_free(s);
}

/* ------------------------------------------------------------ vector 2 -- */
/* gradients all 4.0, inv_scale 0.25 -> all 1.0, found_inf 0; inf or NaN at
 * one element -> found_inf 1; contiguous, transposed and sliced views. */

typedef struct {
  hl_tensor *base; /* owns the storage; elements outside the view stay 4 */
  hl_tensor *view;
} grad_case;

static grad_case make_case(int kind, hl_dtype dtype, hl_device_kind dev) {
  grad_case c = {0};
  switch (kind) {
    case 0: /* contiguous [3,5] */
      c.base = tensor_of(HL_SHAPE(3, 5), NULL, 4.0f, dtype, dev);
      c.view = hl_retain(c.base);
      break;
    case 1: /* transposed: [5,3] seen as [3,5] */
      c.base = tensor_of(HL_SHAPE(5, 3), NULL, 4.0f, dtype, dev);
      c.view = hl_transpose(c.base, 0, 1);
      break;
    default: /* sliced columns 1..3 of [6,5]: strided, not dense */
      c.base = tensor_of(HL_SHAPE(6, 5), NULL, 4.0f, dtype, dev);
      c.view = hl_slice(c.base, 1, 1, 4);
      break;
  }
  OK(c.view);
  return c;
}

static void free_case(grad_case *c) {
  hl_release(c->view);
  hl_release(c->base);
}

/* the view's elements are all `inside`, the rest of the base still 4 */
static void check_case(const grad_case *c, int kind, float inside, int64_t poisoned) {
  float *v = values_of(c->view);
  for (int64_t i = 0; i < hl_numel(c->view); i++) {
    if (i == poisoned) continue;
    if (v[i] != inside) fail_msg("view kind %d element %lld: %g, expected %g", kind, (long long)i, v[i], inside);
  }
  free(v);
  if (kind == 2) { /* columns 0 and 4 of the base are outside the slice */
    float *b = values_of(c->base);
    for (int r = 0; r < 6; r++)
      if (b[r * 5] != 4.0f || b[r * 5 + 4] != 4.0f) fail_msg("the slice's unscale wrote outside it (row %d)", r);
    free(b);
  }
}

void vector2_unscale_views(hl_device_kind dev) {
  hl_tensor *inv = tensor_of(HL_SCALAR_SHAPE, NULL, 0.25f, HL_F32, dev);
  const hl_dtype dtypes[3] = {HL_F32, HL_BF16, HL_F64};
  /* all views of every dtype in one list: one pass, nothing non-finite */
  grad_case cases[9];
  hl_tensor *views[9];
  for (int d = 0; d < 3; d++)
    for (int k = 0; k < 3; k++) {
      cases[d * 3 + k] = make_case(k, dtypes[d], dev);
      views[d * 3 + k] = cases[d * 3 + k].view;
    }
  hl_tensor *found = tensor_of(HL_SCALAR_SHAPE, NULL, 0.0f, HL_F32, dev);
  OK(hl_amp_unscale_check(views, 9, found, inv));
  assert_true(hl_item(found) == 0.0);
  for (int c = 0; c < 9; c++) {
    check_case(&cases[c], c % 3, 1.0f, -1);
    free_case(&cases[c]);
  }
  hl_release(found);
  /* one inf or NaN at one element of one view: found_inf 1, the other
   * elements unscaled all the same */
  for (int d = 0; d < 3; d++)
    for (int k = 0; k < 3; k++)
      for (int fault = 0; fault < 2; fault++) {
        grad_case c = make_case(k, dtypes[d], dev);
        grad_case clean = make_case(0, HL_F32, dev);
        const int64_t at = 7;
        OK(hl_fault_poison(c.view, at, fault ? HL_FAULT_NAN : HL_FAULT_INF));
        hl_tensor *f = tensor_of(HL_SCALAR_SHAPE, NULL, 0.0f, HL_F32, dev);
        OK(hl_amp_unscale_check((hl_tensor *[]){clean.view, c.view}, 2, f, inv));
        if (hl_item(f) != 1.0) fail_msg("dtype %s view %d %s: found_inf %g", hl_dtype_name(dtypes[d]), k, fault ? "nan" : "inf", hl_item(f));
        check_case(&c, k, 1.0f, at);
        check_case(&clean, 0, 1.0f, -1);
        float poisoned = value_at(c.view, at);
        assert_true(fault ? isnan(poisoned) : isinf(poisoned));
        hl_release(f);
        free_case(&c);
        free_case(&clean);
      }
  hl_release(inv);
}

/* ------------------------------------------------------------ vector 3 -- */

void vector3_scale(hl_device_kind dev) {
  hl_scaler_opts o = hl_scaler_defaults();
  o.init_scale = 2;
  hl_scaler *s = hl_scaler_new(o);
  OK(s);
  hl_tensor *t = tensor_of(HL_SHAPE(3), NULL, 4.0f, HL_F32, dev);
  hl_tensor *scaled = hl_scaler_scale(s, t);
  OK(scaled);
  assert_int_equal(scaled->dtype, HL_F32);
  assert_int_equal(scaled->device, dev);
  for (int i = 0; i < 3; i++) assert_true(value_at(scaled, i) == 8.0f);
  assert_true(hl_scaler_get_scale(s) == 2.0);
  hl_release(scaled);
  hl_release(t);
  hl_scaler_free(s);
}

/* ------------------------------------------------------------ vector 4 -- */
/* save (scale 3, growth 4, backoff 0.5, interval 2), load into a scaler
 * built with (6, 7, 0.8, 1) and tracker 7 -> 3, 4, 0.5, 2, tracker 0; with
 * the receiving scaler's tensors created (lazy init done) or not. */

void vector4_state(hl_device_kind dev) {
  for (int lazy_init = 0; lazy_init < 2; lazy_init++) {
    hl_scaler *a = hl_scaler_new((hl_scaler_opts){.init_scale = 3, .growth_factor = 4, .backoff_factor = 0.5, .growth_interval = 2, .enabled = true});
    hl_scaler *b = hl_scaler_new((hl_scaler_opts){.init_scale = 6, .growth_factor = 7, .backoff_factor = 0.8, .growth_interval = 1, .enabled = true});
    OK(a && b);
    /* tracker 7: through a state load, the public way to set it */
    OK(hl_scaler_load_state(b, &(hl_scaler_state){true, 6, 7, 0.8, 1, 7}));
    assert_int_equal(hl_scaler_get_growth_tracker(b), 7);
    if (lazy_init) {
      hl_tensor *t = tensor_of(HL_SHAPE(1), NULL, 4.0f, HL_F32, dev);
      hl_tensor *scaled = hl_scaler_scale(b, t); /* creates the scale and the tracker */
      OK(scaled);
      hl_release(scaled);
      hl_release(t);
      assert_int_equal(hl_scaler_get_growth_tracker(b), 7);
    }
    hl_scaler_state st = hl_scaler_state_dict(a);
    assert_true(st.present);
    OK(hl_scaler_load_state(b, &st));
    assert_true(hl_scaler_get_scale(b) == 3.0);
    assert_true(hl_scaler_get_growth_factor(b) == 4.0);
    assert_true(hl_scaler_get_backoff_factor(b) == 0.5);
    assert_int_equal(hl_scaler_get_growth_interval(b), 2);
    assert_int_equal(hl_scaler_get_growth_tracker(b), 0);
    if (!lazy_init) { /* the loaded values are what the tensors start with */
      hl_tensor *t = tensor_of(HL_SHAPE(1), NULL, 4.0f, HL_F32, dev);
      hl_tensor *s3 = hl_scaler_scale(b, t);
      OK(s3);
      assert_true(value_at(s3, 0) == 12.0f);
      hl_release(s3);
      hl_release(t);
      assert_int_equal(hl_scaler_get_growth_tracker(b), 0);
    }
    hl_scaler_free(a);
    hl_scaler_free(b);
  }
}

/* ------------------------------------------------------------ vector 5 -- */
/* init 128, growth 2, interval 1, four iterations, a non-finite gradient
 * injected at the third (through the fault-injection API): scales 256,
 * 512, 256, 512, the third step skipped. With two optimizers where only the
 * second sees the inf: the same scales, the first steps every time, the
 * second skips the third. */

static void run_vector5(hl_device_kind dev, bool two) {
  hl_scaler *s = hl_scaler_new((hl_scaler_opts){.init_scale = 128, .growth_factor = 2, .backoff_factor = 0.5, .growth_interval = 1, .enabled = true});
  OK(s);
  hl_tensor *w[2] = {param_of("w0", HL_SHAPE(4), (const float[]){0.5f, -0.25f, 1, 2}, 0, HL_F32, dev),
                     param_of("w1", HL_SHAPE(4), (const float[]){1, 2, 3, 4}, 0, HL_F32, dev)};
  hl_sgd_opts so = hl_sgd_defaults();
  so.lr = 0.125;
  hl_optim *opt[2] = {hl_sgd_new(&w[0], 1, so), hl_sgd_new(&w[1], 1, so)};
  OK(opt[0] && opt[1]);
  hl_step_set faults;
  OK(hl_step_set_parse("3", &faults));
  const double want[4] = {256, 512, 256, 512};
  const float x[4] = {1, 2, 3, 4};
  for (int step = 1; step <= 4; step++) {
    for (int k = 0; k < 2; k++) hl_optim_zero_grad(opt[k]);
    scaled_backward(s, w[0], x, 1);
    if (two) scaled_backward(s, w[1], x, 1);
    hl_tensor *victim = w[two ? 1 : 0];
    if (hl_step_set_has(&faults, step)) OK(hl_fault_poison(hl_tensor_grad(victim), 2, HL_FAULT_INF));
    float *before[2] = {values_of(w[0]), values_of(w[1])};
    bool skipped[2] = {false, false};
    for (int k = 0; k < (two ? 2 : 1); k++) OK(hl_scaler_step(s, opt[k], &skipped[k], NULL));
    OK(hl_scaler_update(s));
    if (hl_scaler_get_scale(s) != want[step - 1])
      fail_msg("%s: scale after step %d is %g, expected %g", two ? "two optimizers" : "one optimizer", step,
               hl_scaler_get_scale(s), want[step - 1]);
    for (int k = 0; k < (two ? 2 : 1); k++) {
      bool expect_skip = step == 3 && w[k] == victim;
      if (skipped[k] != expect_skip) fail_msg("step %d optimizer %d: skipped %d", step, k, skipped[k]);
      float *after = values_of(w[k]);
      for (int i = 0; i < 4; i++) {
        /* unscaled gradient = x exactly; w -= lr * x exactly in f32 */
        float expect = expect_skip ? before[k][i] : before[k][i] - 0.125f * x[i];
        if (after[i] != expect) fail_msg("step %d optimizer %d w[%d] = %g, expected %g", step, k, i, after[i], expect);
      }
      free(after);
    }
    free(before[0]);
    free(before[1]);
  }
  hl_optim_free(opt[0]);
  hl_optim_free(opt[1]);
  hl_release(w[0]);
  hl_release(w[1]);
  hl_scaler_free(s);
}

void vector5_skip_and_backoff(hl_device_kind dev) {
  run_vector5(dev, false);
  run_vector5(dev, true);
}

/* ------------------------------------------------------------ vector 6 -- */
/* init 1e38, growth 16, interval 1: after one clean step the scale is
 * still finite (1e38 * 16 overflows f32 and is not taken). */

void vector6_no_overflow(hl_device_kind dev) {
  hl_scaler *s = hl_scaler_new((hl_scaler_opts){.init_scale = 1e38, .growth_factor = 16, .backoff_factor = 0.5, .growth_interval = 1, .enabled = true});
  OK(s);
  hl_tensor *w = param_of("w", HL_SHAPE(2), NULL, 1.0f, HL_F32, dev);
  hl_optim *opt = hl_sgd_new(&w, 1, hl_sgd_defaults());
  OK(opt);
  scaled_backward(s, w, (const float[]){1e-3f, 2e-3f}, 1);
  bool skipped = true;
  OK(hl_scaler_step(s, opt, &skipped, NULL));
  assert_false(skipped);
  OK(hl_scaler_update(s));
  double scale = hl_scaler_get_scale(s);
  assert_true(isfinite(scale));
  assert_true(scale == (double)1e38f);
  assert_int_equal(hl_scaler_get_growth_tracker(s), 0);
  hl_optim_free(opt);
  hl_release(w);
  hl_scaler_free(s);
}

/* ------------------------------------------------------------ vector 7 -- */
/* gradient accumulation over 2 micro-batches, 2 steps, no infs, init 128,
 * interval 1 -> 512; the update is the mean of the micro-batch gradients. */

void vector7_accumulation(hl_device_kind dev) {
  hl_scaler *s = hl_scaler_new((hl_scaler_opts){.init_scale = 128, .growth_factor = 2, .backoff_factor = 0.5, .growth_interval = 1, .enabled = true});
  OK(s);
  hl_tensor *w = param_of("w", HL_SHAPE(3), (const float[]){1, 2, 3}, 0, HL_F32, dev);
  hl_sgd_opts so = hl_sgd_defaults();
  so.lr = 0.5;
  hl_optim *opt = hl_sgd_new(&w, 1, so);
  OK(opt);
  const float x[2][3] = {{1, 2, 4}, {3, 2, 0}};
  const int accumulate = 2;
  int updates = 0;
  for (int i = 0; i < 4; i++) {
    double scale_before = hl_scaler_get_scale(s);
    scaled_backward(s, w, x[i % 2], 1.0f / accumulate);
    assert_true(hl_scaler_get_scale(s) == scale_before); /* unchanged within the effective batch */
    if ((i + 1) % accumulate == 0) {
      float *before = values_of(w);
      bool skipped;
      OK(hl_scaler_step(s, opt, &skipped, NULL));
      assert_false(skipped);
      OK(hl_scaler_update(s));
      updates++;
      float *after = values_of(w);
      for (int j = 0; j < 3; j++) {
        float mean = (x[0][j] + x[1][j]) / 2; /* exact: small integers, powers of two */
        assert_true(after[j] == before[j] - 0.5f * mean);
      }
      free(before);
      free(after);
      hl_optim_zero_grad(opt);
    }
  }
  assert_int_equal(updates, 2);
  assert_true(hl_scaler_get_scale(s) == 512.0);
  hl_optim_free(opt);
  hl_release(w);
  hl_scaler_free(s);
}
