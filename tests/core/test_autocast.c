/* test_autocast.c — suite unit: autocast regions and the policy table of
 * docs/core.md (Autocast), pass-through of f64 and integer tensors, the cast
 * cache, backward in the forward's dtypes, custom ops, the decorator form,
 * per-thread state and the op trace. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/custom_op.h"
#include "formats/half.h"
#include "core/engine/op_trace.h"
#include "core/engine/registry.h"
#include "tests/core/core_test.h"

static hl_tensor *t32(hl_shape s, uint64_t stream) {
  hl_tensor *t = hl_randn(s, 0, 1, 11, stream, HL_F32, HL_DEVICE_CPU);
  OK(t);
  return hl_tmp(t);
}

#define CPU HL_DEVICE_CPU

static void test_regions(void **state) {
  (void)state;
  assert_false(hl_autocast_enabled(CPU));
  assert_int_equal(hl_autocast_default_dtype(CPU), HL_BF16);
  assert_int_equal(hl_autocast_default_dtype(HL_DEVICE_CUDA), HL_F16);
  OK(hl_autocast_enter(CPU, HL_AUTOCAST_DEFAULT, true));
  assert_true(hl_autocast_enabled(CPU));
  assert_false(hl_autocast_enabled(HL_DEVICE_CUDA)); /* regions are per device kind */
  assert_int_equal(hl_autocast_dtype(CPU), HL_BF16);
  OK(hl_autocast_enter(CPU, HL_F16, false));
  assert_false(hl_autocast_enabled(CPU));
  assert_int_equal(hl_autocast_depth(), 2);
  OK(hl_autocast_exit());
  OK(hl_autocast_exit());
  assert_false(hl_autocast_exit());
  assert_non_null(strstr(hl_error(), "without a matching enter"));
  assert_false(hl_autocast_enter(CPU, HL_F32, true));
  assert_non_null(strstr(hl_error(), "f16 or bf16"));
  /* the scoped form skips its block when the region cannot be entered */
  bool ran = false;
  HL_AUTOCAST(CPU, HL_I32, true) { ran = true; }
  assert_false(ran);
  /* and closes the region however the block is left */
  for (int i = 0; i < 2; i++) HL_AUTOCAST(CPU, HL_F16, true) {
      if (i == 0) break;
    }
  assert_int_equal(hl_autocast_depth(), 0);
}

/* The policy table, op by op, inside an fp16 and a bf16 region. */
static void test_policies(void **state) {
  (void)state;
  hl_dtype lowers[2] = {HL_F16, HL_BF16};
  for (int l = 0; l < 2; l++) {
    hl_dtype low = lowers[l];
    hl_pool_push();
    hl_tensor *a = t32(HL_SHAPE(4, 4), 1), *b = t32(HL_SHAPE(4, 4), 2);
    hl_tensor *a3 = t32(HL_SHAPE(2, 4, 4), 3), *v = t32(HL_SHAPE(4), 4);
    hl_tensor *pos = hl_tmp(hl_add_scalar(hl_tmp(hl_mul(a, a)), 1.0));
    hl_tensor *idx = hl_tmp(hl_from_i32(HL_SHAPE(4), (int32_t[]){0, 3, 1, 1}, HL_I32, CPU));
    hl_tensor *low_t = hl_tmp(hl_to_dtype(a, low));
    HL_AUTOCAST(CPU, low, true) {
      /* lower precision */
      assert_int_equal(hl_tmp(hl_mm(a, b))->dtype, low);
      assert_int_equal(hl_tmp(hl_matmul(a3, b))->dtype, low);
      assert_int_equal(hl_tmp(hl_bmm(a3, a3))->dtype, low);
      assert_int_equal(hl_tmp(hl_linear(a, b, v))->dtype, low);
      assert_int_equal(hl_tmp(hl_mm(a, low_t))->dtype, low); /* mixed inputs: both cast */
      /* fp32, also from lower-precision inputs */
      assert_int_equal(hl_tmp(hl_exp(low_t))->dtype, HL_F32);
      assert_int_equal(hl_tmp(hl_log(hl_tmp(hl_to_dtype(pos, low))))->dtype, HL_F32);
      assert_int_equal(hl_tmp(hl_pow(low_t, 2.0))->dtype, HL_F32);
      assert_int_equal(hl_tmp(hl_sum(low_t))->dtype, HL_F32);
      assert_int_equal(hl_tmp(hl_softmax(low_t))->dtype, HL_F32);
      assert_int_equal(hl_tmp(hl_log_softmax(low_t))->dtype, HL_F32);
      assert_int_equal(hl_tmp(hl_layer_norm(low_t, v, v, 1e-5))->dtype, HL_F32);
      assert_int_equal(hl_tmp(hl_mse_loss(low_t, a))->dtype, HL_F32);
      assert_int_equal(hl_tmp(hl_cross_entropy(low_t, idx))->dtype, HL_F32);
      /* promote: the widest input */
      assert_int_equal(hl_tmp(hl_cat((hl_tensor *[]){low_t, a}, 2, 0))->dtype, HL_F32);
      assert_int_equal(hl_tmp(hl_cat((hl_tensor *[]){low_t, low_t}, 2, 0))->dtype, low);
      /* unlisted: input types, ordinary promotion */
      assert_int_equal(hl_tmp(hl_relu(low_t))->dtype, low);
      assert_int_equal(hl_tmp(hl_gelu(a))->dtype, HL_F32);
      assert_int_equal(hl_tmp(hl_mean(low_t))->dtype, low); /* mean is not on the fp32 list */
      assert_int_equal(hl_tmp(hl_add(low_t, a))->dtype, HL_F32);
      assert_int_equal(hl_tmp(hl_mul(low_t, low_t))->dtype, low);
      assert_int_equal(hl_tmp(hl_sqrt(pos))->dtype, HL_F32);
      /* integer tensors pass through */
      assert_int_equal(hl_tmp(hl_embedding(a, idx))->dtype, HL_F32);
      /* f64 is never cast: mm of f64 stays f64, mixed with a cast f32 it is refused */
      hl_tensor *d = hl_tmp(hl_to_dtype(a, HL_F64));
      assert_int_equal(hl_tmp(hl_mm(d, d))->dtype, HL_F64);
      assert_null(hl_mm(d, a));
      assert_non_null(strstr(hl_error(), "dtype mismatch: f64[4,4] and"));
    }
    hl_pool_pop();
  }
}

/* The nested example: disabled inside, fp16 again when re-entered. */
static void test_nested_disable(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *a = t32(HL_SHAPE(8, 8), 1), *b = t32(HL_SHAPE(8, 8), 2), *c = t32(HL_SHAPE(8, 8), 3);
  HL_AUTOCAST(CPU, HL_F16, true) {
    hl_tensor *e = hl_tmp(hl_mm(a, b));
    assert_int_equal(e->dtype, HL_F16);
    HL_AUTOCAST(CPU, HL_F16, false) {
      assert_null(hl_mm(c, e)); /* no autocast here: the inputs must agree */
      hl_tensor *f = hl_tmp(hl_mm(c, hl_tmp(hl_to_f32(e))));
      assert_int_equal(f->dtype, HL_F32);
      HL_AUTOCAST(CPU, HL_F16, true) { assert_int_equal(hl_tmp(hl_mm(c, f))->dtype, HL_F16); }
    }
    assert_int_equal(hl_tmp(hl_mm(c, e))->dtype, HL_F16);
  }
  hl_pool_pop();
}

static void test_cast_cache(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *w = t32(HL_SHAPE(8, 8), 1), *x = t32(HL_SHAPE(4, 8), 2);
  OK(hl_set_requires_grad(w, true));
  uint64_t conv0 = hl_autocast_conversions(), misses0 = hl_autocast_cache_misses(), hits0 = hl_autocast_cache_hits();
  HL_AUTOCAST(CPU, HL_F16, true) {
    for (int i = 0; i < 3; i++) OK(hl_tmp(hl_mm(x, w)));
    /* the weight once, the activation (no grad) every time */
    assert_int_equal(hl_autocast_conversions() - conv0, 1 + 3);
    assert_int_equal(hl_autocast_cache_misses() - misses0, 1);
    assert_int_equal(hl_autocast_cache_hits() - hits0, 2);
    assert_int_equal(hl_autocast_cache_size(), 1);
    HL_AUTOCAST(CPU, HL_F16, true) { OK(hl_tmp(hl_mm(x, w))); }
    assert_int_equal(hl_autocast_cache_size(), 1); /* an inner exit keeps it */
    /* casts made without grad mode have no history: never cached */
    HL_NO_GRAD {
      uint64_t c = hl_autocast_conversions();
      OK(hl_tmp(hl_mm(x, w)));
      assert_int_equal(hl_autocast_conversions() - c, 2);
    }
    /* f32 -> fp32 ops: not lower precision, not cached */
    OK(hl_tmp(hl_exp(hl_tmp(hl_to_dtype(w, HL_F16)))));
    assert_int_equal(hl_autocast_cache_size(), 1);
  }
  assert_int_equal(hl_autocast_cache_size(), 0); /* cleared at the outermost exit */
  HL_AUTOCAST(CPU, HL_F16, true) {
    uint64_t c = hl_autocast_conversions();
    OK(hl_tmp(hl_mm(x, w)));
    assert_int_equal(hl_autocast_conversions() - c, 2); /* converted again in a new region */
  }
  hl_pool_pop();
}

/* autocast's three counters, read together */
typedef struct {
  uint64_t casts, misses, hits;
} cast_counts;

static cast_counts counts_now(void) {
  return (cast_counts){hl_autocast_conversions(), hl_autocast_cache_misses(), hl_autocast_cache_hits()};
}

/* a macro, so that a failure names the caller's line */
#define assert_counts_since(before, want_casts, want_misses, want_hits) \
  do {                                                                 \
    const cast_counts now_ = counts_now();                             \
    assert_int_equal(now_.casts - (before).casts, (want_casts));       \
    assert_int_equal(now_.misses - (before).misses, (want_misses));    \
    assert_int_equal(now_.hits - (before).hits, (want_hits));          \
  } while (0)

/* A small known model: fc1, then fc2 applied REPEATS times with the same
 * weights (an unrolled recurrence), then fc3, each followed by a relu but
 * the last, and the mean cross-entropy. */
enum { REPEATS = 3, SHARED_LAYERS = 3 };

typedef struct {
  hl_tensor *w[SHARED_LAYERS], *b[SHARED_LAYERS];
} shared_mlp;

static hl_tensor *shared_mlp_loss(const shared_mlp *m, hl_tensor *x, hl_tensor *targets) {
  hl_tensor *h = hl_tmp(hl_relu(hl_tmp(hl_linear(x, m->w[0], m->b[0]))));
  for (int r = 0; r < REPEATS; r++) h = hl_tmp(hl_relu(hl_tmp(hl_linear(h, m->w[1], m->b[1]))));
  return hl_tmp(hl_cross_entropy(hl_tmp(hl_linear(h, m->w[2], m->b[2])), targets));
}

/* What the counters say for that model, step by step, under bf16 autocast.
 * One forward asks for a cast of each weight and bias at each use: the first
 * use of each of the 6 is a miss (cast, then cached), the REPEATS - 1 later
 * uses of fc2's two a hit each; the other casts are never cached: the input
 * x (no grad) to bf16, and the bf16 logits to f32 for cross_entropy (fp32
 * policy); the hidden activations are bf16 already. Backward casts nothing
 * through autocast (it runs with autocast off; the saved bf16 weights are
 * the graph's). */
static void test_cast_cache_counts_of_a_model(void **state) {
  (void)state;
  hl_pool_push();
  const int64_t width[SHARED_LAYERS + 1] = {8, 16, 16, 4};
  shared_mlp m;
  for (int l = 0; l < SHARED_LAYERS; l++) {
    const int64_t in = width[l], out = width[l == 1 ? 1 : l + 1];
    m.w[l] = t32(HL_SHAPE(out, in), 10 + (uint64_t)l);
    m.b[l] = t32(HL_SHAPE(out), 20 + (uint64_t)l);
    OK(hl_set_requires_grad(m.w[l], true));
    OK(hl_set_requires_grad(m.b[l], true));
  }
  hl_tensor *x = t32(HL_SHAPE(5, 8), 30);
  hl_tensor *targets = hl_tmp(hl_from_i32(HL_SHAPE(5), (int32_t[]){0, 1, 2, 3, 0}, HL_I32, CPU));
  OK(targets);
  const uint64_t weights = 2 * SHARED_LAYERS, reuses = 2 * (REPEATS - 1), others = 2;

  /* a training step: forward in a region, then backward */
  cast_counts c0 = counts_now();
  hl_tensor *loss = NULL;
  HL_AUTOCAST(CPU, HL_BF16, true) {
    loss = shared_mlp_loss(&m, x, targets);
    assert_int_equal(hl_autocast_cache_size(), weights);
  }
  OK(loss);
  assert_counts_since(c0, weights + others, weights, reuses);
  const cast_counts after_forward = counts_now();
  OK(hl_backward(loss, NULL, false));
  assert_counts_since(after_forward, 0, 0, 0);
  for (int l = 0; l < SHARED_LAYERS; l++) {
    assert_int_equal(hl_tensor_grad(m.w[l])->dtype, HL_F32);
    hl_zero_grad(m.w[l]);
    hl_zero_grad(m.b[l]);
  }

  /* the next step's region starts with an empty cache: every weight is cast again */
  c0 = counts_now();
  HL_AUTOCAST(CPU, HL_BF16, true) { OK(shared_mlp_loss(&m, x, targets)); }
  assert_counts_since(c0, weights + others, weights, reuses);

  /* two forwards in one region (micro-batches accumulated inside it): the second finds every weight */
  c0 = counts_now();
  HL_AUTOCAST(CPU, HL_BF16, true) {
    OK(shared_mlp_loss(&m, x, targets));
    OK(shared_mlp_loss(&m, x, targets));
  }
  assert_counts_since(c0, weights + 2 * others, weights, reuses + (weights + reuses));

  /* under no-grad (an evaluation) nothing is cached: every use of a weight is converted */
  c0 = counts_now();
  HL_NO_GRAD {
    HL_AUTOCAST(CPU, HL_BF16, true) { OK(shared_mlp_loss(&m, x, targets)); }
  }
  assert_counts_since(c0, weights + reuses + others, 0, 0);
  hl_pool_pop();
}

/* Backward runs in the forward's dtypes: an f32 weight used by an fp16 mm
 * gets its gradient computed in fp16 and converted back to f32 by the
 * cast's backward. A tiny upstream gradient underflows there. */
static char *trace_of(void (*fn)(void *), void *arg) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  hl_op_trace_to(f);
  fn(arg);
  hl_op_trace_to(NULL);
  fclose(f);
  return buf;
}

typedef struct {
  hl_tensor *w, *x;
  double scale;
} bw_case;

static void fp16_step(void *p) {
  bw_case *c = p;
  hl_pool_push();
  hl_tensor *y = NULL;
  HL_AUTOCAST(CPU, HL_F16, true) { y = hl_tmp(hl_mm(c->x, c->w)); }
  hl_tensor *loss = hl_tmp(hl_mul_scalar(hl_tmp(hl_sum(hl_tmp(hl_to_f32(y)))), c->scale));
  OK(hl_backward(loss, NULL, false));
  hl_pool_pop();
}

static void test_backward_dtype(void **state) {
  (void)state;
  hl_pool_push();
  bw_case c = {t32(HL_SHAPE(8, 8), 1), t32(HL_SHAPE(4, 8), 2), 1.0};
  OK(hl_set_requires_grad(c.w, true));
  char *trace = trace_of(fp16_step, &c);
  /* the backward mm ran in f16, and the cast back to f32 followed */
  bool saw_f16_mm = false;
  for (char *line = strtok(trace, "\n"); line; line = strtok(NULL, "\n"))
    if (strstr(line, "mm ") && strstr(line, "(backward)") && strstr(line, "-> f16[8,8]")) saw_f16_mm = true;
  free(trace);
  assert_true(saw_f16_mm);
  assert_int_equal(hl_tensor_grad(c.w)->dtype, HL_F32);
  /* its value is x16^T 1 rounded to f16: exact small integers sums here */
  float g[64], x[32];
  OK(hl_read_f32(hl_tensor_grad(c.w), g));
  OK(hl_read_f32(hl_tmp(hl_to_f32(hl_tmp(hl_to_dtype(c.x, HL_F16)))), x));
  for (int i = 0; i < 8; i++) {
    float s = 0;
    for (int r = 0; r < 4; r++) s += x[r * 8 + i];
    assert_true(g[i * 8] == hl_f16_to_f32(hl_f32_to_f16(s)));
  }
  /* an upstream gradient of 1e-8 is below fp16's smallest subnormal
   * (6e-8): the fp16 backward loses it, the fp32 one keeps it */
  hl_zero_grad(c.w);
  c.scale = 1e-8;
  fp16_step(&c);
  OK(hl_read_f32(hl_tensor_grad(c.w), g));
  for (int i = 0; i < 64; i++) assert_true(g[i] == 0.0f);
  hl_zero_grad(c.w);
  hl_tensor *loss = hl_tmp(hl_mul_scalar(hl_tmp(hl_sum(hl_tmp(hl_mm(c.x, c.w)))), 1e-8));
  OK(hl_backward(loss, NULL, false));
  OK(hl_read_f32(hl_tensor_grad(c.w), g));
  assert_true(g[0] != 0.0f);
  hl_pool_pop();
}

/* ------------------------------------------------------- custom ops -- */

typedef struct {
  bool fwd_enabled, bwd_enabled;
  hl_dtype fwd_in, fwd_out;
} seen_t;
static seen_t seen;

static hl_tensor *my_mm_forward(hl_custom_ctx *ctx, hl_tensor *const *in, int n) {
  seen.fwd_enabled = hl_autocast_enabled(CPU);
  seen.fwd_in = in[0]->dtype;
  hl_custom_save(ctx, in[0]);
  hl_custom_save(ctx, in[1]);
  hl_tensor *y = hl_mm(in[0], in[1]);
  if (y) seen.fwd_out = y->dtype;
  return y;
}

static bool my_mm_backward(hl_custom_ctx *ctx, hl_tensor *g, hl_tensor **gin, int n) {
  seen.bwd_enabled = hl_autocast_enabled(CPU);
  hl_tensor *a = hl_custom_saved(ctx, 0), *b = hl_custom_saved(ctx, 1);
  gin[0] = hl_mm(g, hl_tmp(hl_transpose(b, 0, 1)));
  gin[1] = hl_mm(hl_tmp(hl_transpose(a, 0, 1)), g);
  return gin[0] && gin[1];
}

static void test_custom_ops(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *a = t32(HL_SHAPE(4, 8), 1), *b = t32(HL_SHAPE(8, 2), 2);
  OK(hl_set_requires_grad(b, true));
  /* cast_inputs = f32: inside an fp16 region, forward sees f32 and runs with autocast off */
  const hl_custom_op fp32_mm = {"fp32_mm", my_mm_forward, my_mm_backward, true, HL_F32};
  hl_tensor *h16 = hl_tmp(hl_to_dtype(a, HL_F16));
  hl_tensor *y = NULL;
  HL_AUTOCAST(CPU, HL_F16, true) { y = hl_tmp(hl_custom_apply(&fp32_mm, (hl_tensor *[]){h16, b}, 2)); }
  OK(y);
  assert_false(seen.fwd_enabled);
  assert_int_equal(seen.fwd_in, HL_F32);
  assert_int_equal(y->dtype, HL_F32);
  OK(hl_backward(hl_tmp(hl_sum(y)), NULL, false));
  assert_false(seen.bwd_enabled); /* backward: the forward's state (off) */
  assert_int_equal(hl_tensor_grad(b)->dtype, HL_F32);
  /* without cast_inputs: forward and backward both see the region on,
   * although the engine runs backward with autocast suspended */
  const hl_custom_op plain_mm = {"plain_mm", my_mm_forward, my_mm_backward, false, HL_F32};
  hl_zero_grad(b);
  HL_AUTOCAST(CPU, HL_F16, true) { y = hl_tmp(hl_custom_apply(&plain_mm, (hl_tensor *[]){a, b}, 2)); }
  assert_true(seen.fwd_enabled);
  assert_int_equal(seen.fwd_out, HL_F16);
  OK(hl_backward(hl_tmp(hl_sum(hl_tmp(hl_to_f32(y)))), NULL, false));
  assert_true(seen.bwd_enabled);
  /* outside any region cast_inputs does nothing */
  y = hl_tmp(hl_custom_apply(&fp32_mm, (hl_tensor *[]){a, b}, 2));
  assert_true(!seen.fwd_enabled && seen.fwd_in == HL_F32);
  hl_pool_pop();
}

/* -------------------------------------------- decorator and threads -- */

static hl_tensor *forward_plain(hl_tensor *x, hl_tensor *w) { return hl_relu(hl_tmp(hl_mm(x, w))); }
HL_AUTOCAST_FN(hl_tensor *, forward_autocast, (hl_tensor * x, hl_tensor *w), (x, w), forward_plain, HL_DEVICE_CPU,
               HL_F16)

static void *thread_sees(void *p) {
  *(bool *)p = hl_autocast_enabled(CPU);
  return NULL;
}

static void test_decorator_and_threads(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *x = t32(HL_SHAPE(2, 4), 1), *w = t32(HL_SHAPE(4, 3), 2);
  hl_tensor *y = hl_tmp(forward_autocast(x, w));
  OK(y);
  assert_int_equal(y->dtype, HL_F16);
  assert_int_equal(hl_autocast_depth(), 0);
  assert_int_equal(hl_tmp(forward_plain(x, w))->dtype, HL_F32);
  HL_AUTOCAST(CPU, HL_F16, true) {
    bool other = true;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, thread_sees, &other), 0);
    pthread_join(t, NULL);
    assert_false(other); /* a new thread starts outside any region */
  }
  hl_pool_pop();
}

static void test_policy_table_matches_spec(void **state) {
  (void)state;
  const char *lower[] = {"mm", "bmm", "matmul", "linear"};
  const char *fp32[] = {"exp", "log", "pow", "sum", "softmax", "log_softmax", "layer_norm", "mse_loss", "cross_entropy"};
  const char *none[] = {"add", "mul", "relu", "gelu", "mean", "transpose", "sqrt", "embedding"};
  for (size_t i = 0; i < sizeof lower / sizeof *lower; i++) assert_int_equal(hl_op_find(lower[i])->policy, HL_POLICY_LOWER);
  for (size_t i = 0; i < sizeof fp32 / sizeof *fp32; i++) assert_int_equal(hl_op_find(fp32[i])->policy, HL_POLICY_FP32);
  for (size_t i = 0; i < sizeof none / sizeof *none; i++) assert_int_equal(hl_op_find(none[i])->policy, HL_POLICY_NONE);
  assert_int_equal(hl_op_find("cat")->policy, HL_POLICY_PROMOTE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_regions),         cmocka_unit_test(test_policies),
      cmocka_unit_test(test_nested_disable),  cmocka_unit_test(test_cast_cache),
      cmocka_unit_test(test_cast_cache_counts_of_a_model),
      cmocka_unit_test(test_backward_dtype),  cmocka_unit_test(test_custom_ops),
      cmocka_unit_test(test_decorator_and_threads), cmocka_unit_test(test_policy_table_matches_spec),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
