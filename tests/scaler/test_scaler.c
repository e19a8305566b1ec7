/* test_scaler.c — suite unit: the GradScaler on the CPU. The seven test
 * vectors of docs/scaler.md; every stage error (and that an error changes
 * nothing); construction, disabled scalers, update(new_scale), static
 * scaling, found_inf access; master weights through the scaler. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/autograd.h"
#include "core/training/fault.h"
#include "formats/half.h"
#include "core/engine/ops.h"
#include "tests/scaler/scaler_test.h"

static const hl_device_kind cpu = HL_DEVICE_CPU;

static void test_vector1(void **state) {
  (void)state;
  vector1_update_scale(cpu);
  vector1_scaler(cpu);
}
static void test_vector2(void **state) {
  (void)state;
  vector2_unscale_views(cpu);
}
static void test_vector3(void **state) {
  (void)state;
  vector3_scale(cpu);
}
static void test_vector4(void **state) {
  (void)state;
  vector4_state(cpu);
}
static void test_vector5(void **state) {
  (void)state;
  vector5_skip_and_backoff(cpu);
}
static void test_vector6(void **state) {
  (void)state;
  vector6_no_overflow(cpu);
}
static void test_vector7(void **state) {
  (void)state;
  vector7_accumulation(cpu);
}

/* ------------------------------------------------------------- helpers -- */

typedef struct {
  hl_scaler *s;
  hl_tensor *w;
  hl_optim *opt;
} rig;

static rig rig_new(double init_scale) {
  rig r;
  hl_scaler_opts o = hl_scaler_defaults();
  o.init_scale = init_scale;
  r.s = hl_scaler_new(o);
  OK(r.s);
  r.w = param_of("w", HL_SHAPE(3), (const float[]){1, 2, 3}, 0, HL_F32, cpu);
  hl_sgd_opts so = hl_sgd_defaults();
  so.lr = 0.25;
  r.opt = hl_sgd_new(&r.w, 1, so);
  OK(r.opt);
  return r;
}

static void rig_free(rig *r) {
  hl_optim_free(r->opt);
  hl_release(r->w);
  hl_scaler_free(r->s);
}

/* loss = sum(w * x) scaled, backward: w.grad = x * scale */
static void backward(rig *r, const float *x) {
  hl_pool_push();
  hl_tensor *xt = hl_tmp(tensor_of(HL_SHAPE(3), x, 0, HL_F32, cpu));
  hl_tensor *loss = hl_tmp(hl_sum(hl_tmp(hl_mul(r->w, xt))));
  OK(hl_backward(hl_tmp(hl_scaler_scale(r->s, loss)), NULL, false));
  hl_pool_pop();
}

static const float X[3] = {1, -2, 4};

/* ------------------------------------------------------- construction -- */

static void test_construction(void **state) {
  (void)state;
  hl_scaler_opts d = hl_scaler_defaults();
  assert_true(d.init_scale == 65536.0 && d.growth_factor == 2.0 && d.backoff_factor == 0.5);
  assert_int_equal(d.growth_interval, 2000);
  assert_true(d.enabled);
  hl_scaler *s = hl_scaler_new(d);
  OK(s);
  assert_true(hl_scaler_is_enabled(s));
  assert_true(hl_scaler_get_scale(s) == 65536.0); /* before first use: init_scale */
  assert_int_equal(hl_scaler_get_growth_tracker(s), 0);
  assert_null(hl_scaler_scale_tensor(s));
  hl_scaler_free(s);

  hl_scaler_opts bad = d;
  bad.growth_factor = 1.0;
  REFUSED(hl_scaler_new(bad), "growth factor must be > 1.0");
  bad = d, bad.growth_factor = NAN;
  REFUSED(hl_scaler_new(bad), "growth factor");
  bad = d, bad.backoff_factor = 1.0;
  REFUSED(hl_scaler_new(bad), "backoff factor must be in (0, 1)");
  bad = d, bad.backoff_factor = 0.0;
  REFUSED(hl_scaler_new(bad), "backoff factor");
  bad = d, bad.growth_interval = 0;
  REFUSED(hl_scaler_new(bad), "growth interval");
  bad = d, bad.init_scale = 0;
  REFUSED(hl_scaler_new(bad), "init_scale");
  bad = d, bad.init_scale = INFINITY;
  REFUSED(hl_scaler_new(bad), "init_scale");
  bad = d, bad.init_scale = 1e39; /* beyond f32 */
  REFUSED(hl_scaler_new(bad), "init_scale");
  /* a disabled scaler does not check its factors (as PyTorch) */
  bad = d, bad.growth_factor = 0.5, bad.enabled = false;
  s = hl_scaler_new(bad);
  OK(s);
  hl_scaler_free(s);
  /* setters check too */
  s = hl_scaler_new(d);
  REFUSED(hl_scaler_set_growth_factor(s, 0.9), "growth factor");
  REFUSED(hl_scaler_set_backoff_factor(s, 1.5), "backoff factor");
  REFUSED(hl_scaler_set_growth_interval(s, -1), "growth interval");
  OK(hl_scaler_set_growth_factor(s, 4));
  OK(hl_scaler_set_backoff_factor(s, 0.25));
  OK(hl_scaler_set_growth_interval(s, 7));
  assert_true(hl_scaler_get_growth_factor(s) == 4 && hl_scaler_get_backoff_factor(s) == 0.25);
  assert_int_equal(hl_scaler_get_growth_interval(s), 7);
  hl_scaler_free(s);
}

/* --------------------------------------------------------- stage errors -- */

static void test_before_scale(void **state) {
  (void)state;
  rig r = rig_new(8);
  REFUSED(hl_scaler_unscale(r.s, r.opt), "unscale", "call hl_scaler_scale(loss) earlier");
  REFUSED(hl_scaler_step(r.s, r.opt, NULL, NULL), "step", "scale has not been created");
  REFUSED(hl_scaler_update(r.s), "update", "scale has not been created");
  REFUSED(hl_scaler_update_to(r.s, 4), "update", "scale has not been created");
  rig_free(&r);
}

static void test_unscale_twice(void **state) {
  (void)state;
  rig r = rig_new(8);
  backward(&r, X);
  OK(hl_scaler_unscale(r.s, r.opt));
  float *g = values_of(hl_tensor_grad(r.w));
  for (int i = 0; i < 3; i++) assert_true(g[i] == X[i]); /* 8 x / 8 */
  free(g);
  REFUSED(hl_scaler_unscale(r.s, r.opt), "already unscaled", "since the last update");
  /* the refused call changed nothing: not unscaled twice, step still works */
  g = values_of(hl_tensor_grad(r.w));
  for (int i = 0; i < 3; i++) assert_true(g[i] == X[i]);
  free(g);
  bool skipped = true;
  OK(hl_scaler_step(r.s, r.opt, &skipped, NULL)); /* does not unscale again */
  assert_false(skipped);
  assert_true(value_at(r.w, 0) == 1.0f - 0.25f * X[0]);
  OK(hl_scaler_update(r.s));
  rig_free(&r);
}

static void test_unscale_after_step(void **state) {
  (void)state;
  rig r = rig_new(8);
  backward(&r, X);
  OK(hl_scaler_step(r.s, r.opt, NULL, NULL));
  REFUSED(hl_scaler_unscale(r.s, r.opt), "unscale", "after step");
  REFUSED(hl_scaler_step(r.s, r.opt, NULL, NULL), "step", "already called", "since the last update");
  OK(hl_scaler_update(r.s));
  /* back to READY after update */
  hl_optim_zero_grad(r.opt);
  backward(&r, X);
  OK(hl_scaler_unscale(r.s, r.opt));
  OK(hl_scaler_step(r.s, r.opt, NULL, NULL));
  OK(hl_scaler_update(r.s));
  rig_free(&r);
}

static void test_step_without_gradients(void **state) {
  (void)state;
  rig r = rig_new(8);
  /* the scale exists, but nothing was backpropagated into w */
  hl_tensor *other = tensor_of(HL_SCALAR_SHAPE, NULL, 1, HL_F32, cpu);
  hl_release(hl_scaler_scale(r.s, other));
  hl_release(other);
  REFUSED(hl_scaler_step(r.s, r.opt, NULL, NULL), "no inf checks were recorded for this optimizer");
  assert_true(value_at(r.w, 0) == 1.0f);
  REFUSED(hl_scaler_update(r.s), "no inf checks were recorded prior to update");
  rig_free(&r);
}

static void test_update_without_checks(void **state) {
  (void)state;
  rig r = rig_new(8);
  backward(&r, X);
  REFUSED(hl_scaler_update(r.s), "no inf checks were recorded prior to update");
  assert_true(hl_scaler_get_scale(r.s) == 8.0);
  /* update(new_scale) needs no checks */
  OK(hl_scaler_update_to(r.s, 32));
  assert_true(hl_scaler_get_scale(r.s) == 32.0);
  REFUSED(hl_scaler_update_to(r.s, 0), "new scale");
  REFUSED(hl_scaler_update_to(r.s, NAN), "new scale");
  rig_free(&r);
}

static void test_fp16_gradients(void **state) {
  (void)state;
  hl_scaler *s = hl_scaler_new(hl_scaler_defaults());
  hl_tensor *w = param_of("w16", HL_SHAPE(3), (const float[]){1, 2, 3}, 0, HL_F16, cpu);
  hl_optim *opt = hl_sgd_new(&w, 1, hl_sgd_defaults()); /* pure fp16: no master weights */
  OK(s && opt);
  hl_pool_push();
  hl_tensor *x = hl_tmp(tensor_of(HL_SHAPE(3), X, 0, HL_F16, cpu));
  OK(hl_backward(hl_tmp(hl_scaler_scale(s, hl_tmp(hl_sum(hl_tmp(hl_mul(w, x)))))), NULL, false));
  hl_pool_pop();
  assert_int_equal(hl_tensor_grad(w)->dtype, HL_F16);
  float before = value_at(hl_tensor_grad(w), 0);
  REFUSED(hl_scaler_unscale(s, opt), "attempting to unscale FP16 gradients", "master");
  REFUSED(hl_scaler_step(s, opt, NULL, NULL), "FP16 gradients");
  assert_true(value_at(hl_tensor_grad(w), 0) == before); /* untouched */
  assert_true(value_at(w, 0) == 1.0f);
  hl_scaler_free(s);
  /* allowed on request (pure fp16): unscaled in place, in fp16 */
  hl_scaler_opts o = hl_scaler_defaults();
  o.allow_fp16_gradients = true;
  o.init_scale = 1024; /* 2^16 * 4 would overflow fp16 */
  s = hl_scaler_new(o);
  hl_pool_push();
  hl_optim_zero_grad(opt);
  hl_tensor *x16 = hl_tmp(tensor_of(HL_SHAPE(3), X, 0, HL_F16, cpu));
  OK(hl_backward(hl_tmp(hl_scaler_scale(s, hl_tmp(hl_sum(hl_tmp(hl_mul(w, x16)))))), NULL, false));
  hl_pool_pop();
  OK(hl_scaler_unscale(s, opt));
  assert_int_equal(hl_tensor_grad(w)->dtype, HL_F16);
  for (int i = 0; i < 3; i++) assert_true(value_at(hl_tensor_grad(w), i) == X[i]);
  OK(hl_scaler_step(s, opt, NULL, NULL));
  OK(hl_scaler_update(s));
  hl_optim_free(opt);
  hl_release(w);
  hl_scaler_free(s);
}

static void test_load_empty_state(void **state) {
  (void)state;
  hl_scaler_opts off = hl_scaler_defaults();
  off.enabled = false;
  hl_scaler *disabled = hl_scaler_new(off), *enabled = hl_scaler_new(hl_scaler_defaults());
  OK(disabled && enabled);
  hl_scaler_state st = hl_scaler_state_dict(disabled);
  assert_false(st.present);
  REFUSED(hl_scaler_load_state(enabled, &st), "empty", "disabled GradScaler");
  assert_true(hl_scaler_get_scale(enabled) == 65536.0);
  /* a disabled scaler ignores any state */
  OK(hl_scaler_load_state(disabled, &st));
  hl_scaler_state real = hl_scaler_state_dict(enabled);
  OK(hl_scaler_load_state(disabled, &real));
  assert_true(hl_scaler_get_scale(disabled) == 1.0);
  /* invalid values are refused and change nothing */
  hl_scaler_state badst = real;
  badst.growth_factor = 0.5;
  REFUSED(hl_scaler_load_state(enabled, &badst), "growth factor");
  badst = real, badst.scale = -1;
  REFUSED(hl_scaler_load_state(enabled, &badst), "scale");
  badst = real, badst.growth_tracker = -3;
  REFUSED(hl_scaler_load_state(enabled, &badst), "tracker");
  assert_true(hl_scaler_get_growth_factor(enabled) == 2.0);
  hl_scaler_free(disabled);
  hl_scaler_free(enabled);
}

/* ------------------------------------------------------------ behaviour -- */

static void test_disabled(void **state) {
  (void)state;
  hl_scaler_opts o = hl_scaler_defaults();
  o.enabled = false;
  hl_scaler *s = hl_scaler_new(o);
  hl_tensor *w = param_of("w", HL_SHAPE(3), (const float[]){1, 2, 3}, 0, HL_F32, cpu);
  hl_sgd_opts so = hl_sgd_defaults();
  so.lr = 0.5;
  hl_optim *opt = hl_sgd_new(&w, 1, so);
  OK(s && opt);
  assert_false(hl_scaler_is_enabled(s));
  assert_true(hl_scaler_get_scale(s) == 1.0);
  hl_pool_push();
  hl_tensor *x = hl_tmp(tensor_of(HL_SHAPE(3), X, 0, HL_F32, cpu));
  hl_tensor *loss = hl_tmp(hl_sum(hl_tmp(hl_mul(w, x))));
  hl_tensor *scaled = hl_tmp(hl_scaler_scale(s, loss));
  assert_ptr_equal(scaled, loss); /* the loss itself */
  OK(hl_backward(scaled, NULL, false));
  hl_pool_pop();
  OK(hl_scaler_unscale(s, opt)); /* nothing */
  assert_true(value_at(hl_tensor_grad(w), 2) == X[2]);
  OK(hl_scaler_unscale(s, opt)); /* no stages either */
  bool skipped = true;
  OK(hl_scaler_step(s, opt, &skipped, NULL));
  assert_false(skipped);
  assert_true(value_at(w, 0) == 1.0f - 0.5f * X[0]);
  OK(hl_scaler_update(s));
  OK(hl_scaler_update_to(s, 5));
  assert_true(hl_scaler_get_scale(s) == 1.0);
  assert_int_equal(hl_scaler_get_growth_tracker(s), 0);
  hl_optim_free(opt);
  hl_release(w);
  hl_scaler_free(s);
}

static void test_update_to_keeps_tracker(void **state) {
  (void)state;
  rig r = rig_new(8);
  for (int i = 0; i < 3; i++) {
    hl_optim_zero_grad(r.opt);
    backward(&r, X);
    OK(hl_scaler_step(r.s, r.opt, NULL, NULL));
    OK(hl_scaler_update(r.s));
  }
  assert_int_equal(hl_scaler_get_growth_tracker(r.s), 3);
  OK(hl_scaler_update_to(r.s, 1024));
  assert_true(hl_scaler_get_scale(r.s) == 1024.0);
  assert_int_equal(hl_scaler_get_growth_tracker(r.s), 3);
  rig_free(&r);
}

static void test_fixed_scale(void **state) {
  (void)state;
  hl_scaler_opts o = hl_scaler_defaults();
  o.init_scale = 1024;
  o.growth_interval = 1;
  o.fixed_scale = true;
  hl_scaler *s = hl_scaler_new(o);
  hl_tensor *w = param_of("w", HL_SHAPE(3), (const float[]){1, 2, 3}, 0, HL_F32, cpu);
  hl_optim *opt = hl_sgd_new(&w, 1, hl_sgd_defaults());
  OK(s && opt);
  for (int step = 1; step <= 4; step++) {
    hl_optim_zero_grad(opt);
    hl_pool_push();
    hl_tensor *x = hl_tmp(tensor_of(HL_SHAPE(3), X, 0, HL_F32, cpu));
    OK(hl_backward(hl_tmp(hl_scaler_scale(s, hl_tmp(hl_sum(hl_tmp(hl_mul(w, x)))))), NULL, false));
    hl_pool_pop();
    if (step == 2) OK(hl_fault_poison(hl_tensor_grad(w), 1, HL_FAULT_NAN));
    bool skipped;
    OK(hl_scaler_step(s, opt, &skipped, NULL));
    assert_true(skipped == (step == 2)); /* still skipped */
    OK(hl_scaler_update(s));
    assert_true(hl_scaler_get_scale(s) == 1024.0); /* never grows, never backs off */
    assert_int_equal(hl_scaler_get_growth_tracker(s), 0);
  }
  hl_optim_free(opt);
  hl_release(w);
  hl_scaler_free(s);
}

static void test_found_inf_access(void **state) {
  (void)state;
  rig r = rig_new(8);
  bool found = true;
  REFUSED(hl_scaler_found_inf(r.s, r.opt, &found), "not unscaled since the last update");
  backward(&r, X);
  OK(hl_scaler_unscale(r.s, r.opt));
  OK(hl_scaler_found_inf(r.s, r.opt, &found));
  assert_false(found);
  OK(hl_scaler_step(r.s, r.opt, NULL, NULL));
  OK(hl_scaler_update(r.s));
  hl_optim_zero_grad(r.opt);
  backward(&r, X);
  OK(hl_fault_poison(hl_tensor_grad(r.w), 0, HL_FAULT_NEG_INF));
  bool skipped = false;
  OK(hl_scaler_step(r.s, r.opt, &skipped, NULL));
  OK(hl_scaler_found_inf(r.s, r.opt, &found));
  assert_true(found && skipped);
  OK(hl_scaler_update(r.s));
  assert_true(hl_scaler_get_scale(r.s) == 4.0);
  REFUSED(hl_scaler_found_inf(r.s, r.opt, &found), "not unscaled");
  rig_free(&r);
}

/* Data-parallel training's verdict from the other ranks: a finite step
 * told that another rank found inf is skipped and backs off; one told the
 * opposite of its own inf steps (core/training/dist.h's all-reduce). */
static void test_set_found_inf(void **state) {
  (void)state;
  rig r = rig_new(8);
  REFUSED(hl_scaler_set_found_inf(r.s, r.opt, true), "not unscaled since the last update");
  backward(&r, X);
  OK(hl_scaler_unscale(r.s, r.opt));
  const float w0 = value_at(r.w, 0);
  OK(hl_scaler_set_found_inf(r.s, r.opt, true));
  bool found = false, skipped = false;
  OK(hl_scaler_found_inf(r.s, r.opt, &found));
  assert_true(found);
  OK(hl_scaler_step(r.s, r.opt, &skipped, NULL));
  assert_true(skipped && value_at(r.w, 0) == w0);
  OK(hl_scaler_update(r.s));
  assert_true(hl_scaler_get_scale(r.s) == 4.0); /* the device flag, not only the host's copy */
  hl_optim_zero_grad(r.opt);
  backward(&r, X);
  OK(hl_fault_poison(hl_tensor_grad(r.w), 0, HL_FAULT_INF));
  OK(hl_scaler_unscale(r.s, r.opt));
  OK(hl_scaler_set_found_inf(r.s, r.opt, false));
  OK(hl_scaler_step(r.s, r.opt, &skipped, NULL));
  assert_false(skipped);
  OK(hl_scaler_update(r.s));
  assert_true(hl_scaler_get_scale(r.s) == 4.0 && hl_scaler_get_growth_tracker(r.s) == 1);
  rig_free(&r);
}

/* The scale is an f32 tensor on the device; inv_scale is 1/scale in f64
 * rounded to f32: for scale 3, 1/3 rounded once (not 1/3f twice). */
static void test_inv_scale_rounding(void **state) {
  (void)state;
  rig r = rig_new(3);
  backward(&r, (const float[]){1, 1, 1});
  OK(hl_scaler_unscale(r.s, r.opt));
  const float inv = (float)(1.0 / 3.0);
  assert_true(value_at(hl_tensor_grad(r.w), 0) == 3.0f * inv);
  hl_tensor *scale = hl_scaler_scale_tensor(r.s);
  assert_non_null(scale);
  assert_int_equal(scale->dtype, HL_F32);
  assert_int_equal(hl_numel(scale), 1);
  rig_free(&r);
}

/* Master weights through the scaler: the fp16 model gradients are copied
 * into the f32 master gradients by the unscale pass (exactly: x * scale in
 * fp16, times inv), the f32 master is stepped and rounded into the model. */
static void test_master_weights(void **state) {
  (void)state;
  hl_scaler_opts so = hl_scaler_defaults();
  so.init_scale = 1024;
  hl_scaler *s = hl_scaler_new(so);
  hl_tensor *w = param_of("w16", HL_SHAPE(3), (const float[]){1, 2, 3}, 0, HL_F16, cpu);
  hl_sgd_opts o = hl_sgd_defaults();
  o.lr = 1e-4; /* lr * x is far below fp16's half ulp at 1..3 */
  o.master_weights = true;
  hl_optim *opt = hl_sgd_new(&w, 1, o);
  OK(s && opt);
  assert_true(hl_optim_has_masters(opt));
  hl_tensor *master = hl_optim_master(opt, 0);
  assert_non_null(master);
  assert_int_equal(master->dtype, HL_F32);
  for (int step = 1; step <= 3; step++) {
    hl_optim_zero_grad(opt);
    hl_pool_push();
    hl_tensor *x = hl_tmp(tensor_of(HL_SHAPE(3), X, 0, HL_F16, cpu));
    OK(hl_backward(hl_tmp(hl_scaler_scale(s, hl_tmp(hl_sum(hl_tmp(hl_mul(w, x)))))), NULL, false));
    hl_pool_pop();
    assert_int_equal(hl_tensor_grad(w)->dtype, HL_F16);
    assert_true(value_at(hl_tensor_grad(w), 2) == 4096.0f); /* scaled, in fp16 */
    OK(hl_scaler_unscale(s, opt));
    hl_tensor *mg = hl_optim_grad(opt, 0);
    assert_non_null(mg);
    assert_int_equal(mg->dtype, HL_F32);
    for (int i = 0; i < 3; i++) assert_true(value_at(mg, i) == X[i]);
    assert_true(value_at(hl_tensor_grad(w), 2) == 4096.0f); /* the model's gradient is not touched */
    float *m_before = values_of(master), *model_before = values_of(w);
    int64_t absorbed = -1;
    bool skipped;
    OK(hl_scaler_step(s, opt, &skipped, &absorbed));
    assert_false(skipped);
    float *m_after = values_of(master), *model = values_of(w);
    int64_t unchanged = 0;
    for (int i = 0; i < 3; i++) {
      assert_true(m_after[i] == m_before[i] - (float)1e-4 * X[i]);
      /* the model holds the master rounded to fp16 */
      assert_true(model[i] == hl_f16_to_f32(hl_f32_to_f16(m_after[i])));
      unchanged += model[i] == model_before[i];
    }
    /* updates below half an fp16 ulp are absorbed in the model and kept by
     * the master: none moves at the first step, two do by the third */
    assert_int_equal(absorbed, unchanged);
    if (step == 1) assert_int_equal(absorbed, 3);
    if (step == 3) assert_int_equal(absorbed, 1);
    free(m_before);
    free(model_before);
    free(m_after);
    free(model);
    OK(hl_scaler_update(s));
  }
  hl_optim_free(opt);
  hl_release(w);
  hl_scaler_free(s);
}

/* One scaler, two optimizers on disjoint parameters, one unscaled
 * explicitly: both stepped, one update. */
static void test_one_unscaled_explicitly(void **state) {
  (void)state;
  hl_scaler *s = hl_scaler_new((hl_scaler_opts){.init_scale = 16, .growth_factor = 2, .backoff_factor = 0.5, .growth_interval = 1, .enabled = true});
  hl_tensor *a = param_of("a", HL_SHAPE(3), NULL, 1, HL_F32, cpu), *b = param_of("b", HL_SHAPE(3), NULL, 2, HL_F32, cpu);
  hl_optim *oa = hl_sgd_new(&a, 1, hl_sgd_defaults()), *ob = hl_sgd_new(&b, 1, hl_sgd_defaults());
  OK(s && oa && ob);
  hl_pool_push();
  hl_tensor *x = hl_tmp(tensor_of(HL_SHAPE(3), X, 0, HL_F32, cpu));
  hl_tensor *l0 = hl_tmp(hl_sum(hl_tmp(hl_mul(hl_tmp(hl_add(a, b)), x))));
  hl_tensor *l1 = hl_tmp(hl_sum(hl_tmp(hl_mul(hl_tmp(hl_sub(a, b)), x))));
  OK(hl_backward(hl_tmp(hl_scaler_scale(s, l0)), NULL, true));
  OK(hl_backward(hl_tmp(hl_scaler_scale(s, l1)), NULL, false));
  hl_pool_pop();
  OK(hl_scaler_unscale(s, oa));
  for (int i = 0; i < 3; i++) assert_true(value_at(hl_tensor_grad(a), i) == 2 * X[i]);
  assert_true(value_at(hl_tensor_grad(b), 0) == 0.0f); /* x - x */
  OK(hl_scaler_step(s, oa, NULL, NULL));
  OK(hl_scaler_step(s, ob, NULL, NULL));
  OK(hl_scaler_update(s));
  assert_true(hl_scaler_get_scale(s) == 32.0);
  hl_optim_free(oa);
  hl_optim_free(ob);
  hl_release(a);
  hl_release(b);
  hl_scaler_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vector1),
      cmocka_unit_test(test_vector2),
      cmocka_unit_test(test_vector3),
      cmocka_unit_test(test_vector4),
      cmocka_unit_test(test_vector5),
      cmocka_unit_test(test_vector6),
      cmocka_unit_test(test_vector7),
      cmocka_unit_test(test_construction),
      cmocka_unit_test(test_before_scale),
      cmocka_unit_test(test_unscale_twice),
      cmocka_unit_test(test_unscale_after_step),
      cmocka_unit_test(test_step_without_gradients),
      cmocka_unit_test(test_update_without_checks),
      cmocka_unit_test(test_fp16_gradients),
      cmocka_unit_test(test_load_empty_state),
      cmocka_unit_test(test_disabled),
      cmocka_unit_test(test_update_to_keeps_tracker),
      cmocka_unit_test(test_fixed_scale),
      cmocka_unit_test(test_found_inf_access),
      cmocka_unit_test(test_set_found_inf),
      cmocka_unit_test(test_inv_scale_rounding),
      cmocka_unit_test(test_master_weights),
      cmocka_unit_test(test_one_unscaled_explicitly),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
