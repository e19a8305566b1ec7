/* test_optim.c — suite unit: SGD and AdamW against hand-computed
 * references (f64 formulas of torch.optim's documented updates, to 1e-6
 * relative; exact where the numbers are exact in binary), master weights
 * and their rounding into fp16/bf16, pure fp16 updates and the absorbed
 * count, per-parameter state, invalid arguments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/half.h"
#include "core/engine/ops.h"
#include "core/training/optim.h"
#include "tests/scaler/scaler_test.h"

static const hl_device_kind cpu = HL_DEVICE_CPU;

/* |got - want| within rel of the larger of |want| and `scale` (the size of
 * the weights: a weight that an update nearly cancels is judged against
 * the numbers that were added, not against its own tiny value) */
static void close_to_scaled(double got, double want, double rel, double scale, const char *what, int step, int i) {
  double tol = rel * fmax(fabs(want), scale);
  if (!(fabs(got - want) <= tol)) fail_msg("%s step %d [%d]: %.9g, reference %.9g", what, step, i, got, want);
}

static void close_to(double got, double want, double rel, const char *what, int step, int i) {
  close_to_scaled(got, want, rel, 1e-30, what, step, i);
}

static void set_grad_values(hl_tensor *p, const float *g) {
  hl_tensor *t = tensor_of(hl_tensor_shape(p), g, 0, p->dtype, p->device);
  OK(hl_set_grad(p, t));
  hl_release(t);
}

/* ---------------------------------------------------------------- SGD -- */

static void test_sgd_plain_exact(void **state) {
  (void)state;
  hl_tensor *w = param_of("w", HL_SHAPE(2), (const float[]){1.0f, -2.0f}, 0, HL_F32, cpu);
  hl_sgd_opts o = hl_sgd_defaults();
  o.lr = 0.25;
  hl_optim *opt = hl_sgd_new(&w, 1, o);
  OK(opt);
  set_grad_values(w, (const float[]){0.5f, 4.0f});
  OK(hl_optim_step(opt, NULL));
  assert_true(value_at(w, 0) == 0.875f && value_at(w, 1) == -3.0f);
  assert_int_equal(hl_optim_param_steps(opt, 0), 1);
  hl_optim_free(opt);
  hl_release(w);
}

/* torch.optim.SGD, documented algorithm, in f64 */
static void sgd_reference(double *p, double *b, double g, const hl_sgd_opts *o, int first) {
  double d = g + o->weight_decay * *p;
  if (o->momentum != 0) {
    *b = first ? d : o->momentum * *b + (1 - o->dampening) * d;
    d = o->nesterov ? d + o->momentum * *b : *b;
  }
  *p -= o->lr * d;
}

static void run_sgd_case(hl_sgd_opts o, const char *what) {
  enum { N = 5, STEPS = 4 };
  const float p0[N] = {0.5f, -1.25f, 3.0f, 0.01f, -7.5f};
  hl_tensor *w = param_of("w", HL_SHAPE(N), p0, 0, HL_F32, cpu);
  hl_optim *opt = hl_sgd_new(&w, 1, o);
  OK(opt);
  double p[N], b[N] = {0};
  for (int i = 0; i < N; i++) p[i] = p0[i];
  for (int step = 0; step < STEPS; step++) {
    float g[N];
    for (int i = 0; i < N; i++) g[i] = (float)(0.3 * (i + 1) * (step % 2 ? -1 : 1) + 0.05 * step);
    set_grad_values(w, g);
    OK(hl_optim_step(opt, NULL));
    for (int i = 0; i < N; i++) {
      sgd_reference(&p[i], &b[i], g[i], &o, step == 0);
      close_to_scaled(value_at(w, i), p[i], 1e-6, fabs(p0[i]), what, step, i);
    }
  }
  hl_optim_free(opt);
  hl_release(w);
}

static void test_sgd_momentum_weight_decay(void **state) {
  (void)state;
  hl_sgd_opts o = hl_sgd_defaults();
  o.lr = 0.1;
  o.momentum = 0.9;
  run_sgd_case(o, "momentum");
  o.dampening = 0.25;
  run_sgd_case(o, "momentum+dampening");
  o.dampening = 0;
  o.weight_decay = 0.01;
  run_sgd_case(o, "momentum+weight_decay");
  o.nesterov = true;
  run_sgd_case(o, "nesterov+weight_decay");
  o = hl_sgd_defaults();
  o.lr = 0.05;
  o.weight_decay = 0.1;
  run_sgd_case(o, "weight_decay");
}

/* The first step's momentum buffer is the gradient itself (no dampening),
 * per parameter: a parameter whose first gradient comes at step 2 starts
 * its buffer then. */
static void test_sgd_first_step_per_parameter(void **state) {
  (void)state;
  hl_tensor *a = param_of("a", HL_SHAPE(1), NULL, 1.0f, HL_F32, cpu);
  hl_tensor *b = param_of("b", HL_SHAPE(1), NULL, 1.0f, HL_F32, cpu);
  hl_sgd_opts o = hl_sgd_defaults();
  o.lr = 0.5;
  o.momentum = 0.5;
  o.dampening = 0.5;
  hl_optim *opt = hl_sgd_new((hl_tensor *[]){a, b}, 2, o);
  OK(opt);
  set_grad_values(a, (const float[]){1.0f});
  OK(hl_optim_step(opt, NULL)); /* b has no gradient: untouched, no step counted */
  assert_true(value_at(a, 0) == 0.5f);   /* buf = 1 */
  assert_true(value_at(b, 0) == 1.0f);
  assert_int_equal(hl_optim_param_steps(opt, 0), 1);
  assert_int_equal(hl_optim_param_steps(opt, 1), 0);
  set_grad_values(b, (const float[]){1.0f});
  OK(hl_optim_step(opt, NULL));
  assert_true(value_at(a, 0) == 0.0f);   /* buf = 0.5 * 1 + (1 - 0.5) * 1 = 1; 0.5 - 0.5 * 1 */
  assert_true(value_at(b, 0) == 0.5f);   /* b's first step: buf = g, undamped */
  hl_optim_free(opt);
  hl_release(a);
  hl_release(b);
}

/* -------------------------------------------------------------- AdamW -- */

static void test_adamw_reference(void **state) {
  (void)state;
  enum { N = 6, STEPS = 5 };
  const float p0[N] = {0.5f, -1.25f, 3.0f, 0.01f, -7.5f, 2.0f};
  hl_adamw_opts o = hl_adamw_defaults();
  assert_true(o.lr == 1e-3 && o.beta1 == 0.9 && o.beta2 == 0.999 && o.eps == 1e-8 && o.weight_decay == 1e-2);
  o.lr = 0.01;
  o.weight_decay = 0.1;
  hl_tensor *w = param_of("w", HL_SHAPE(2, 3), p0, 0, HL_F32, cpu);
  hl_optim *opt = hl_adamw_new(&w, 1, o);
  OK(opt);
  double p[N], m[N] = {0}, v[N] = {0};
  for (int i = 0; i < N; i++) p[i] = p0[i];
  for (int step = 1; step <= STEPS; step++) {
    float g[N];
    for (int i = 0; i < N; i++) g[i] = (float)((i - 2.5) * 0.2 + (step % 3) * 0.05);
    set_grad_values(w, g);
    OK(hl_optim_step(opt, NULL));
    for (int i = 0; i < N; i++) {
      /* PyTorch's form: denom = sqrt(v) / sqrt(bc2) + eps */
      p[i] *= 1 - o.lr * o.weight_decay;
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * (double)g[i] * g[i];
      double bc1 = 1 - pow(o.beta1, step), bc2 = 1 - pow(o.beta2, step);
      p[i] -= o.lr / bc1 * m[i] / (sqrt(v[i]) / sqrt(bc2) + o.eps);
      close_to_scaled(value_at(w, i), p[i], 1e-6, fabs(p0[i]), "adamw", step, i);
    }
  }
  hl_optim_free(opt);
  hl_release(w);
}

/* Bias correction: the first step moves every weight by lr * sign(g) (for
 * |g| >> eps), whatever the gradient's size; decoupled decay shrinks the
 * weight by lr * wd * p even with a zero gradient. */
static void test_adamw_bias_correction_and_decay(void **state) {
  (void)state;
  hl_adamw_opts o = hl_adamw_defaults();
  o.lr = 0.125;
  o.weight_decay = 0;
  hl_tensor *w = param_of("w", HL_SHAPE(3), (const float[]){1, 1, 1}, 0, HL_F32, cpu);
  hl_optim *opt = hl_adamw_new(&w, 1, o);
  OK(opt);
  set_grad_values(w, (const float[]){0.25f, -50.0f, 7.0f});
  OK(hl_optim_step(opt, NULL));
  close_to(value_at(w, 0), 1 - 0.125, 1e-6, "bias correction", 1, 0);
  close_to(value_at(w, 1), 1 + 0.125, 1e-6, "bias correction", 1, 1);
  close_to(value_at(w, 2), 1 - 0.125, 1e-6, "bias correction", 1, 2);
  hl_optim_free(opt);
  hl_release(w);

  o = hl_adamw_defaults();
  o.lr = 0.5;
  o.weight_decay = 0.25;
  w = param_of("w", HL_SHAPE(2), (const float[]){2, -4}, 0, HL_F32, cpu);
  opt = hl_adamw_new(&w, 1, o);
  OK(opt);
  set_grad_values(w, (const float[]){0, 0});
  OK(hl_optim_step(opt, NULL));
  /* m = v = 0: only the decay, p * (1 - 0.5 * 0.25), exactly */
  assert_true(value_at(w, 0) == 1.75f && value_at(w, 1) == -3.5f);
  hl_optim_free(opt);
  hl_release(w);
}

/* ------------------------------------------------ master weights, fp16 -- */

/* The model holds the master rounded to nearest even: pick masters at and
 * around fp16 ties by setting the update to land there. */
static void test_master_rounding(void **state) {
  (void)state;
  const hl_dtype dtypes[2] = {HL_F16, HL_BF16};
  for (int d = 0; d < 2; d++) {
    hl_tensor *w = param_of("w", HL_SHAPE(4), (const float[]){1, 1, 1, 1}, 0, dtypes[d], cpu);
    hl_sgd_opts o = hl_sgd_defaults();
    o.lr = 1;
    o.master_weights = true;
    hl_optim *opt = hl_sgd_new(&w, 1, o);
    OK(opt);
    /* ulp at 1: 2^-10 (fp16), 2^-7 (bf16). Updates of 1/2 ulp (a tie: to
     * even, stays 1), 3/4 ulp (up), 1/4 ulp (stays), 3/2 ulp (a tie between
     * 1+ulp and 1+2ulp: to even, 1+2ulp). Gradients are negative: w grows. */
    const float ulp = dtypes[d] == HL_F16 ? 0x1p-10f : 0x1p-7f;
    const float update[4] = {ulp / 2, ulp * 3 / 4, ulp / 4, ulp * 3 / 2};
    set_grad_values(w, (const float[]){-update[0], -update[1], -update[2], -update[3]});
    int64_t absorbed = -1;
    OK(hl_optim_step(opt, &absorbed));
    hl_tensor *master = hl_optim_master(opt, 0);
    const float want_model[4] = {1, 1 + ulp, 1, 1 + 2 * ulp};
    for (int i = 0; i < 4; i++) {
      assert_true(value_at(master, i) == 1 + update[i]); /* exact in f32 */
      if (value_at(w, i) != want_model[i])
        fail_msg("%s [%d]: model %g, want %g", hl_dtype_name(dtypes[d]), i, value_at(w, i), want_model[i]);
    }
    assert_int_equal(absorbed, 2); /* elements 0 and 2 kept their fp16 value */
    /* the master's gradient is an f32 copy of the model's */
    assert_int_equal(hl_optim_grad(opt, 0)->dtype, HL_F32);
    hl_optim_free(opt);
    hl_release(w);
  }
}

/* Pure fp16 (no masters): an update below half an ulp is lost every step;
 * with masters it accumulates and eventually moves the model. */
static void test_pure_fp16_absorbs(void **state) {
  (void)state;
  for (int masters = 0; masters < 2; masters++) {
    hl_tensor *w = param_of("w", HL_SHAPE(8), NULL, 1.0f, HL_F16, cpu);
    hl_sgd_opts o = hl_sgd_defaults();
    o.lr = 1e-4; /* 1e-4 < 2^-11 / 2: absorbed at 1.0 going down or up */
    o.master_weights = masters;
    hl_optim *opt = hl_sgd_new(&w, 1, o);
    OK(opt);
    int64_t total_absorbed = 0;
    for (int step = 0; step < 10; step++) {
      set_grad_values(w, (const float[]){-1, -1, -1, -1, -1, -1, -1, -1});
      int64_t absorbed = -1;
      OK(hl_optim_step(opt, &absorbed));
      total_absorbed += absorbed;
    }
    if (!masters) {
      assert_true(value_at(w, 0) == 1.0f); /* ten updates of 1e-4, all lost */
      assert_int_equal(total_absorbed, 80);
      assert_null(hl_optim_master(opt, 0));
    } else {
      /* master 1.001: the model moved to the fp16 value nearest 1.001 */
      assert_true(value_at(w, 0) == hl_f16_to_f32(hl_f32_to_f16(value_at(hl_optim_master(opt, 0), 0))));
      assert_true(value_at(w, 0) > 1.0f);
      assert_true(total_absorbed < 80 && total_absorbed > 0);
    }
    hl_optim_free(opt);
    hl_release(w);
  }
  /* the count is for fp16/bf16 weights; f32 weights here move every step */
  hl_tensor *w32 = param_of("w", HL_SHAPE(4), NULL, 1.0f, HL_F32, cpu);
  hl_sgd_opts o = hl_sgd_defaults();
  o.lr = 1e-4;
  hl_optim *opt = hl_sgd_new(&w32, 1, o);
  set_grad_values(w32, (const float[]){1, 1, 1, 1});
  int64_t absorbed = -1;
  OK(hl_optim_step(opt, &absorbed));
  assert_int_equal(absorbed, 0);
  /* zero gradients are no update: not counted as absorbed */
  set_grad_values(w32, (const float[]){0, 0, 0, 0});
  OK(hl_optim_step(opt, &absorbed));
  assert_int_equal(absorbed, 0);
  hl_optim_free(opt);
  hl_release(w32);
}

/* AdamW in pure fp16 keeps its moments in fp16 (as zeros_like(p) would),
 * in master mode in f32; both compute in f32 and round once. */
static void test_adamw_pure_and_master(void **state) {
  (void)state;
  for (int masters = 0; masters < 2; masters++) {
    hl_tensor *w = param_of("w", HL_SHAPE(2), (const float[]){1, -1}, 0, HL_F16, cpu);
    hl_adamw_opts o = hl_adamw_defaults();
    o.lr = 0.0625;
    o.weight_decay = 0;
    o.master_weights = masters;
    hl_optim *opt = hl_adamw_new(&w, 1, o);
    OK(opt);
    set_grad_values(w, (const float[]){0.5f, -2.0f});
    OK(hl_optim_step(opt, NULL));
    /* first step: +- lr exactly representable */
    close_to(value_at(w, 0), 1 - 0.0625, 1e-3, "adamw fp16", 1, 0);
    close_to(value_at(w, 1), -1 + 0.0625, 1e-3, "adamw fp16", 1, 1);
    hl_optim_free(opt);
    hl_release(w);
  }
}

/* --------------------------------------------------------- bookkeeping -- */

static void test_zero_grad_and_set_grad(void **state) {
  (void)state;
  hl_tensor *w = param_of("w", HL_SHAPE(2), NULL, 1, HL_F32, cpu);
  hl_optim *opt = hl_sgd_new(&w, 1, hl_sgd_defaults());
  OK(opt);
  set_grad_values(w, (const float[]){1, 2});
  assert_non_null(hl_tensor_grad(w));
  hl_optim_zero_grad(opt);
  assert_null(hl_tensor_grad(w));
  OK(hl_optim_step(opt, NULL)); /* nothing to do */
  assert_true(value_at(w, 0) == 1.0f);
  hl_tensor *bad = tensor_of(HL_SHAPE(3), NULL, 0, HL_F32, cpu);
  REFUSED(hl_set_grad(w, bad), "set_grad", "does not match");
  hl_release(bad);
  bad = tensor_of(HL_SHAPE(2), NULL, 0, HL_F16, cpu);
  REFUSED(hl_set_grad(w, bad), "set_grad");
  hl_release(bad);
  assert_string_equal(hl_optim_name(opt), "sgd");
  assert_int_equal(hl_optim_size(opt), 1);
  assert_ptr_equal(hl_optim_param(opt, 0), w);
  OK(hl_optim_set_lr(opt, 0.5));
  assert_true(hl_optim_get_lr(opt) == 0.5);
  REFUSED(hl_optim_set_lr(opt, -1), "learning rate");
  hl_optim_free(opt);
  hl_release(w);
}

/* a strided gradient (a transposed view) steps like its contiguous copy */
static void test_strided_gradient(void **state) {
  (void)state;
  hl_tensor *w = param_of("w", HL_SHAPE(3, 2), (const float[]){1, 2, 3, 4, 5, 6}, 0, HL_F32, cpu);
  hl_sgd_opts o = hl_sgd_defaults();
  o.lr = 0.5;
  hl_optim *opt = hl_sgd_new(&w, 1, o);
  hl_tensor *base = tensor_of(HL_SHAPE(2, 3), (const float[]){1, 2, 3, 4, 5, 6}, 0, HL_F32, cpu);
  hl_tensor *gt = hl_transpose(base, 0, 1); /* [[1,4],[2,5],[3,6]] */
  OK(opt && gt);
  OK(hl_set_grad(w, gt));
  OK(hl_optim_step(opt, NULL));
  const float want[6] = {0.5f, 0, 2, 1.5f, 3.5f, 3};
  for (int i = 0; i < 6; i++) assert_true(value_at(w, i) == want[i]);
  hl_release(gt);
  hl_release(base);
  hl_optim_free(opt);
  hl_release(w);
}

static void test_invalid_arguments(void **state) {
  (void)state;
  hl_tensor *w = param_of("w", HL_SHAPE(2), NULL, 1, HL_F32, cpu);
  hl_sgd_opts s = hl_sgd_defaults();
  s.lr = -1;
  REFUSED(hl_sgd_new(&w, 1, s), "sgd: invalid learning rate");
  s = hl_sgd_defaults(), s.momentum = -0.5;
  REFUSED(hl_sgd_new(&w, 1, s), "invalid momentum");
  s = hl_sgd_defaults(), s.weight_decay = -1;
  REFUSED(hl_sgd_new(&w, 1, s), "invalid weight_decay");
  s = hl_sgd_defaults(), s.nesterov = true;
  REFUSED(hl_sgd_new(&w, 1, s), "nesterov momentum requires a momentum and zero dampening");
  s.momentum = 0.9, s.dampening = 0.1;
  REFUSED(hl_sgd_new(&w, 1, s), "nesterov");
  hl_adamw_opts a = hl_adamw_defaults();
  a.beta1 = 1.0;
  REFUSED(hl_adamw_new(&w, 1, a), "invalid beta1");
  a = hl_adamw_defaults(), a.beta2 = -0.1;
  REFUSED(hl_adamw_new(&w, 1, a), "invalid beta2");
  a = hl_adamw_defaults(), a.eps = -1;
  REFUSED(hl_adamw_new(&w, 1, a), "invalid epsilon");
  REFUSED(hl_sgd_new(&w, 0, hl_sgd_defaults()), "empty parameter list");
  REFUSED(hl_sgd_new((hl_tensor *[]){w, w}, 2, hl_sgd_defaults()), "appears twice");
  hl_tensor *no_grad = tensor_of(HL_SHAPE(2), NULL, 1, HL_F32, cpu);
  REFUSED(hl_sgd_new(&no_grad, 1, hl_sgd_defaults()), "not a leaf that requires grad");
  hl_tensor *f64 = param_of("d", HL_SHAPE(2), NULL, 1, HL_F64, cpu);
  REFUSED(hl_adamw_new(&f64, 1, hl_adamw_defaults()), "f32, f16 and bf16");
  hl_release(no_grad);
  hl_release(f64);
  hl_release(w);
}

/* The state checksum replicas compare: equal for equal histories, and
 * different where only the moments differ. AdamW's first step moves each
 * weight by lr x g / (|g| + eps), about lr whatever the gradient's size,
 * so gradients 1 and 2 leave equal f32 weights but different moments. */
static void adamw_once(const float *g, hl_tensor **w, hl_optim **opt) {
  hl_adamw_opts o = hl_adamw_defaults();
  o.lr = 0.125;
  *w = param_of("w", HL_SHAPE(3), (const float[]){0.5f, -1.0f, 2.0f}, 0, HL_F32, cpu);
  *opt = hl_adamw_new(w, 1, o);
  OK(*opt);
  set_grad_values(*w, g);
  OK(hl_optim_step(*opt, NULL));
}

static void test_state_crc(void **state) {
  (void)state;
  hl_tensor *w[3];
  hl_optim *opt[3];
  adamw_once((const float[]){1, 1, 1}, &w[0], &opt[0]);
  adamw_once((const float[]){1, 1, 1}, &w[1], &opt[1]);
  adamw_once((const float[]){2, 2, 2}, &w[2], &opt[2]);
  uint32_t crc[3];
  for (int k = 0; k < 3; k++) OK(hl_optim_state_crc(opt[k], &crc[k]));
  assert_true(crc[0] == crc[1]);
  for (int i = 0; i < 3; i++) assert_true(value_at(w[0], i) == value_at(w[2], i)); /* the weights agree ... */
  assert_true(crc[0] != crc[2]);                                                    /* ... the moments do not */
  for (int k = 0; k < 3; k++) hl_optim_free(opt[k]), hl_release(w[k]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sgd_plain_exact),
      cmocka_unit_test(test_state_crc),
      cmocka_unit_test(test_sgd_momentum_weight_decay),
      cmocka_unit_test(test_sgd_first_step_per_parameter),
      cmocka_unit_test(test_adamw_reference),
      cmocka_unit_test(test_adamw_bias_correction_and_decay),
      cmocka_unit_test(test_master_rounding),
      cmocka_unit_test(test_pure_fp16_absorbs),
      cmocka_unit_test(test_adamw_pure_and_master),
      cmocka_unit_test(test_zero_grad_and_set_grad),
      cmocka_unit_test(test_strided_gradient),
      cmocka_unit_test(test_invalid_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
