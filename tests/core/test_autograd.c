/* test_autograd.c — suite unit: what the backward engine promises beyond
 * the per-op derivatives: accumulation, retain_graph, grad() leaving
 * .grad alone, pruning, non-leaf inputs, no-grad mode, in-place
 * detection, graph lifetimes (no leaks, no deep recursion). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/op_profile.h"
#include "tests/core/core_test.h"

static hl_tensor *w_(void) {
  hl_tensor *w = hl_from_f32(HL_SHAPE(2, 2), (float[]){1, 2, 3, 4}, HL_F32, HL_DEVICE_CPU);
  OK(hl_set_requires_grad(w, true));
  return w;
}

static void grad_values(const hl_tensor *t, float *out) { OK(hl_read_f32(hl_tensor_grad(t), out)); }

static void test_backward_accumulates(void **state) {
  (void)state;
  hl_tensor *w = w_();
  hl_pool_push();
  for (int step = 0; step < 2; step++) {
    hl_tensor *loss = hl_tmp(hl_sum(hl_tmp(hl_mul(w, w)))); /* d/dw = 2w */
    OK(hl_backward(loss, NULL, false));
  }
  hl_pool_pop();
  float g[4];
  grad_values(w, g);
  for (int i = 0; i < 4; i++) assert_true(g[i] == 4.0f * (float)(i + 1)); /* two backwards: 2 x 2w */
  assert_int_equal(hl_tensor_grad(w)->dtype, HL_F32);
  hl_zero_grad(w);
  assert_null(hl_tensor_grad(w));
  hl_release(w);
}

static void test_retain_graph(void **state) {
  (void)state;
  hl_tensor *w = w_();
  hl_pool_push();
  hl_tensor *loss = hl_sum(hl_tmp(hl_mm(w, w)));
  hl_pool_pop();
  OK(hl_backward(loss, NULL, true));
  OK(hl_backward(loss, NULL, false)); /* the graph was kept: a second pass works and adds */
  float g[4];
  grad_values(w, g);
  /* d sum(W W) / dW = 1 W^T + W^T 1 ... doubled */
  const float want[4] = {2 * (1 + 2 + 1 + 3), 2 * (3 + 4 + 1 + 3), 2 * (1 + 2 + 2 + 4), 2 * (3 + 4 + 2 + 4)};
  assert_memory_equal(g, want, sizeof want);
  /* now freed: a third pass is refused, naming the op and the remedy */
  assert_false(hl_backward(loss, NULL, false));
  assert_non_null(strstr(hl_error(), "mm"));
  assert_non_null(strstr(hl_error(), "retain_graph"));
  hl_release(loss);
  hl_release(w);
}

static void test_two_losses_share_a_graph(void **state) {
  (void)state;
  /* the two-loss example: without retain_graph the shared part is
   * freed by the first backward and the second is refused */
  hl_tensor *w = w_();
  hl_pool_push();
  hl_tensor *h = hl_tmp(hl_exp(w));
  hl_tensor *l0 = hl_tmp(hl_sum(hl_tmp(hl_mul_scalar(h, 2.0))));
  hl_tensor *l1 = hl_tmp(hl_sum(hl_tmp(hl_mul_scalar(h, 3.0))));
  OK(hl_backward(l0, NULL, false));
  assert_false(hl_backward(l1, NULL, false));
  assert_non_null(strstr(hl_error(), "exp"));
  /* with retain_graph on the first, both work */
  hl_zero_grad(w);
  h = hl_tmp(hl_exp(w));
  l0 = hl_tmp(hl_sum(hl_tmp(hl_mul_scalar(h, 2.0))));
  l1 = hl_tmp(hl_sum(hl_tmp(hl_mul_scalar(h, 3.0))));
  OK(hl_backward(l0, NULL, true));
  OK(hl_backward(l1, NULL, false));
  hl_pool_pop();
  float g[4];
  grad_values(w, g);
  for (int i = 0; i < 4; i++) assert_true(fabsf(g[i] - 5.0f * expf((float)(i + 1))) <= 1e-5f * g[i]);
  hl_release(w);
}

static void test_grad_leaves_dot_grad_alone(void **state) {
  (void)state;
  hl_tensor *w = w_(), *b = hl_ones(HL_SHAPE(2), HL_F32, HL_DEVICE_CPU);
  OK(hl_set_requires_grad(b, true));
  hl_pool_push();
  hl_tensor *h = hl_tmp(hl_add(hl_tmp(hl_mul(w, w)), b)); /* non-leaf input */
  hl_tensor *loss = hl_tmp(hl_sum(hl_tmp(hl_mul_scalar(h, 3.0))));
  hl_tensor *in[3] = {w, h, w}, *g[3];
  OK(hl_autograd_grad(&loss, 1, NULL, in, 3, g, (hl_grad_opts){.retain_graph = true}));
  assert_null(hl_tensor_grad(w));
  assert_null(hl_tensor_grad(b)); /* b was not asked for: pruned, not accumulated */
  float v[4];
  OK(hl_read_f32(g[1], v));
  for (int i = 0; i < 4; i++) assert_true(v[i] == 3.0f);
  OK(hl_read_f32(g[0], v));
  for (int i = 0; i < 4; i++) assert_true(v[i] == 6.0f * (float)(i + 1));
  assert_true(g[2] == g[0]); /* asked twice: the same gradient */
  for (int i = 0; i < 3; i++) hl_release(g[i]);
  /* an input the outputs do not use */
  hl_tensor *unused = hl_ones(HL_SHAPE(1), HL_F32, HL_DEVICE_CPU);
  OK(hl_set_requires_grad(unused, true));
  hl_tensor *in2[2] = {w, unused}, *g2[2];
  assert_false(hl_autograd_grad(&loss, 1, NULL, in2, 2, g2, (hl_grad_opts){.retain_graph = true}));
  assert_non_null(strstr(hl_error(), "not used"));
  OK(hl_autograd_grad(&loss, 1, NULL, in2, 2, g2, (hl_grad_opts){.allow_unused = true}));
  assert_non_null(g2[0]);
  assert_null(g2[1]);
  hl_release(g2[0]);
  hl_pool_pop();
  hl_release(unused);
  hl_release(w);
  hl_release(b);
}

static void test_no_grad(void **state) {
  (void)state;
  hl_tensor *w = w_();
  hl_tensor *y = NULL;
  HL_NO_GRAD {
    assert_false(hl_grad_enabled());
    y = hl_mul(w, w);
  }
  assert_true(hl_grad_enabled());
  assert_false(hl_requires_grad(y));
  assert_true(hl_is_leaf(y));
  hl_release(y);
  /* leaving the block early restores the mode too */
  for (int i = 0; i < 3; i++) HL_NO_GRAD {
      if (i == 1) break;
    }
  assert_true(hl_grad_enabled());
  assert_false(hl_set_grad_enabled(true) == false);
  hl_release(w);
}

static void test_in_place_after_save_is_detected(void **state) {
  (void)state;
  hl_tensor *w = w_(), *x = hl_ones(HL_SHAPE(2, 2), HL_F32, HL_DEVICE_CPU);
  hl_pool_push();
  hl_tensor *loss = hl_sum(hl_tmp(hl_mm(x, w))); /* mm saved x for w's gradient */
  hl_pool_pop();
  HL_NO_GRAD { OK(hl_scale_(x, 2.0)); }
  assert_false(hl_backward(loss, NULL, false));
  assert_non_null(strstr(hl_error(), "modified in place"));
  hl_release(loss);
  hl_release(x);
  hl_release(w);
}

static void test_long_chain_frees_iteratively(void **state) {
  (void)state;
  /* a loss accumulated over many steps: backward and release must not
   * recurse once per node */
  uint64_t before = hl_cpu_live_bytes();
  hl_tensor *w = hl_ones(HL_SHAPE(1), HL_F32, HL_DEVICE_CPU);
  OK(hl_set_requires_grad(w, true));
  hl_tensor *acc = hl_mul_scalar(w, 1.0);
  for (int i = 0; i < 200000; i++) {
    hl_tensor *next = hl_add(acc, w);
    hl_release(acc);
    acc = next;
  }
  OK(hl_backward(acc, NULL, false));
  assert_true(hl_item(hl_tensor_grad(w)) == 200001.0);
  hl_release(acc);
  hl_release(w);
  assert_int_equal(hl_cpu_live_bytes(), before);
}

static void test_higher_order_limits(void **state) {
  (void)state;
  /* gelu is twice differentiable; a third derivative is refused by name */
  hl_tensor *x = hl_from_f64(HL_SHAPE(3), (double[]){-1, 0.5, 2}, HL_F64, HL_DEVICE_CPU);
  OK(hl_set_requires_grad(x, true));
  hl_pool_push();
  hl_tensor *y = hl_tmp(hl_sum(hl_tmp(hl_gelu(x))));
  hl_tensor *g1, *g2, *g3;
  hl_grad_opts keep = {.create_graph = true, .retain_graph = true};
  OK(hl_autograd_grad(&y, 1, NULL, &x, 1, &g1, keep));
  hl_tensor *s1 = hl_tmp(hl_sum(hl_tmp(g1)));
  OK(hl_autograd_grad(&s1, 1, NULL, &x, 1, &g2, keep));
  hl_tensor *s2 = hl_tmp(hl_sum(hl_tmp(g2)));
  assert_false(hl_autograd_grad(&s2, 1, NULL, &x, 1, &g3, keep));
  assert_non_null(strstr(hl_error(), "gelu_grad2"));
  /* layer_norm: first order only; differentiating its gradient is refused */
  hl_tensor *m = hl_from_f64(HL_SHAPE(2, 3), (double[]){1, 2, 4, -1, 0, 3}, HL_F64, HL_DEVICE_CPU);
  OK(hl_set_requires_grad(m, true));
  hl_tensor *ln = hl_tmp(hl_sum(hl_tmp(hl_mul(hl_tmp(hl_layer_norm(m, NULL, NULL, 1e-5)), m))));
  hl_tensor *gm;
  OK(hl_autograd_grad(&ln, 1, NULL, &m, 1, &gm, keep));
  hl_tmp(gm);
  hl_tensor *sg = hl_tmp(hl_sum(hl_tmp(hl_mul(gm, gm))));
  assert_false(hl_backward(sg, NULL, false));
  assert_non_null(strstr(hl_error(), "layer_norm_backward"));
  hl_pool_pop();
  hl_release(m);
  hl_release(x);
}

static void test_create_graph_leaf_grad(void **state) {
  (void)state;
  /* backward with create_graph (through hl_autograd_grad results) keeps
   * history; plain backward leaves .grad without it */
  hl_tensor *w = w_();
  hl_pool_push();
  hl_tensor *loss = hl_tmp(hl_sum(hl_tmp(hl_pow(w, 3.0))));
  OK(hl_backward(loss, NULL, false));
  assert_false(hl_requires_grad(hl_tensor_grad(w)));
  hl_pool_pop();
  hl_release(w);
}

/* The q/k/v split's backward: where the split tensor already holds a
 * gradient, the engine adds each slice's gradient into that one's slice
 * (autograd.accumulate_slice) instead of slice_backward's zeros-and-copy
 * summed whole. Against the unfused composition — the same graph through
 * hl_autograd_grad with create_graph, which takes slice_backward and
 * recorded adds — the gradients are the same bits, per dtype, along the
 * last dim and an inner one, with the split tensor also used whole (its
 * gradient is there before any slice's) or not (the first slice's
 * slice_backward makes it). */
static hl_tensor *split_loss(hl_tensor *x, int dim, bool whole_too) {
  hl_pool_push();
  hl_tensor *qkv = hl_tmp(hl_mul_scalar(x, 1.5)); /* not a leaf, as a projection's output */
  hl_tensor *part[3];
  OK(hl_split(qkv, dim, 3, part));
  hl_tensor *loss = NULL;
  for (int i = 0; i < 3; i++) {
    hl_tmp(part[i]);
    hl_tensor *w = hl_tmp(hl_randn(hl_shape_of(part[i]->ndim, part[i]->shape), 0, 1, 90 + (uint64_t)i, 0,
                                   x->dtype, HL_DEVICE_CPU));
    hl_tensor *term = hl_tmp(hl_sum(hl_tmp(hl_mul(part[i], w))));
    loss = loss ? hl_tmp(hl_add(loss, term)) : term;
  }
  if (whole_too) {
    hl_tensor *w = hl_tmp(hl_randn(hl_shape_of(qkv->ndim, qkv->shape), 0, 1, 99, 0, x->dtype, HL_DEVICE_CPU));
    loss = hl_tmp(hl_add(loss, hl_tmp(hl_sum(hl_tmp(hl_mul(qkv, w))))));
  }
  hl_retain(loss);
  hl_pool_pop();
  return loss;
}

static uint64_t profiled_calls(const char *op) {
  hl_op_profile_entry e[64];
  const int n = hl_op_profile_entries(e, 64);
  uint64_t calls = 0;
  for (int i = 0; i < n && i < 64; i++)
    if (!strcmp(e[i].op, op)) calls += e[i].calls;
  return calls;
}

static void test_split_backward_matches_unfused(void **state) {
  (void)state;
  const hl_dtype types[] = {HL_F32, HL_BF16, HL_F64};
  for (int k = 0; k < 3; k++)
    for (int dim = 1; dim <= 2; dim++)
      for (int whole_too = 0; whole_too < 2; whole_too++) {
        const hl_dtype t = types[k];
        hl_tensor *x = hl_randn(HL_SHAPE(2, 6, 9), 0, 1, 77, 0, t, HL_DEVICE_CPU);
        OK(hl_set_requires_grad(x, true));
        const int64_t n = hl_numel(x);
        double *fused = malloc(sizeof(double) * (size_t)n), *unfused = malloc(sizeof(double) * (size_t)n);
        assert_true(fused && unfused);
        /* fused: backward into x.grad, profiled to see the path taken */
        hl_tensor *loss = split_loss(x, dim, whole_too);
        hl_op_profile_reset();
        hl_op_profile_resume(HL_PROFILE_BACKWARD, HL_DEVICE_CPU);
        OK(hl_backward(loss, NULL, false));
        hl_op_profile_pause();
        assert_int_equal(profiled_calls("autograd.accumulate_slice"), whole_too ? 3 : 2);
        assert_int_equal(profiled_calls("slice_backward"), whole_too ? 0 : 1);
        hl_op_profile_reset();
        hl_release(loss);
        OK(hl_read_f64(hl_tensor_grad(x), fused));
        hl_zero_grad(x);
        /* unfused: the same graph, its gradient recorded */
        loss = split_loss(x, dim, whole_too);
        hl_tensor *g = NULL;
        OK(hl_autograd_grad(&loss, 1, NULL, &x, 1, &g, (hl_grad_opts){.create_graph = true}));
        OK(hl_read_f64(g, unfused));
        hl_release(g);
        hl_release(loss);
        for (int64_t i = 0; i < n; i++)
          if (memcmp(&fused[i], &unfused[i], sizeof(double)))
            fail_msg("%s split along dim %d%s: element %lld %.17g, unfused %.17g", hl_dtype_name(t), dim,
                     whole_too ? " (also used whole)" : "", (long long)i, fused[i], unfused[i]);
        free(fused);
        free(unfused);
        hl_release(x);
      }
}

/* The gradient-ready hook: each leaf once, when its .grad is final. */
typedef struct {
  const hl_tensor *leaf[8];
  float first[8]; /* the leaf's gradient's first value when the hook ran */
  int with_grad[8]; /* how many of `watched` had a .grad then */
  const hl_tensor *watched[4];
  int n;
} ready_log;

static void log_ready(hl_tensor *leaf, void *user) {
  ready_log *log = user;
  assert_true(log->n < 8);
  float v[4];
  OK(hl_read_f32(hl_tensor_grad(leaf), v));
  log->with_grad[log->n] = 0;
  for (int k = 0; k < 4; k++) log->with_grad[log->n] += log->watched[k] && hl_tensor_grad(log->watched[k]);
  log->leaf[log->n] = leaf;
  log->first[log->n++] = v[0];
}

static hl_tensor *leaf_of(float v) {
  hl_tensor *t = hl_full(HL_SHAPE(2, 2), v, HL_F32, HL_DEVICE_CPU);
  OK(hl_set_requires_grad(t, true));
  return t;
}

static void test_ready_hook(void **state) {
  (void)state;
  /* a chain x -> x*w1 -> (..)*w2, with `tied` used at both ends (as a tied
   * embedding is) and `unused` not at all: w2 is final first, w1 next, tied
   * only after the last node that feeds it */
  hl_tensor *x = hl_full(HL_SHAPE(2, 2), 2.0, HL_F32, HL_DEVICE_CPU);
  hl_tensor *w1 = leaf_of(3), *w2 = leaf_of(5), *tied = leaf_of(7), *unused = leaf_of(1);
  for (int pass = 0; pass < 2; pass++) { /* the second pass accumulates onto the first's .grad */
    ready_log log = {.watched = {w1, w2, tied}};
    hl_pool_push();
    hl_tensor *h0 = hl_tmp(hl_mul(x, tied));
    hl_tensor *h1 = hl_tmp(hl_mul(h0, w1));
    hl_tensor *h2 = hl_tmp(hl_mul(h1, w2));
    hl_tensor *loss = hl_tmp(hl_sum(hl_tmp(hl_mul(h2, tied))));
    OK(hl_backward_with_ready_hook(loss, NULL, false, log_ready, &log));
    hl_pool_pop();
    assert_int_equal(log.n, 3); /* not `unused`, which no node feeds */
    assert_ptr_equal(log.leaf[0], w2);
    assert_ptr_equal(log.leaf[1], w1);
    assert_ptr_equal(log.leaf[2], tied);
    /* what the hook saw is the final gradient: d/dw2 = x tied w1 tied = 294,
     * d/dw1 = 490, d/dtied = 2 x w1 w2 tied = 420, each times the pass */
    const hl_tensor *order[3] = {w2, w1, tied};
    const float want[3] = {294, 490, 420};
    for (int k = 0; k < 3; k++) {
      float g[4];
      grad_values(order[k], g);
      assert_true(g[0] == log.first[k]);
      assert_true(g[0] == want[k] * (float)(pass + 1));
    }
    assert_null(hl_tensor_grad(unused));
    if (pass == 0) { /* called during the backward, not after it: w2 first, when w1 had no gradient yet */
      assert_int_equal(log.with_grad[0], 2); /* w2 and tied (fed by the last node, which runs first) */
      assert_int_equal(log.with_grad[1], 3);
    }
  }
  /* without a hook it is hl_backward */
  hl_pool_push();
  OK(hl_backward_with_ready_hook(hl_tmp(hl_sum(hl_tmp(hl_mul(x, w1)))), NULL, false, NULL, NULL));
  hl_pool_pop();
  float g[4];
  grad_values(w1, g);
  assert_true(g[0] == 2 * 490.0f + 2.0f);
  hl_release(x), hl_release(w1), hl_release(w2), hl_release(tied), hl_release(unused);
}

/* sum_to where no dim is summed (only a leading 1 dropped) returns a view
 * of its input, which must keep the input's offset: the gradient of a
 * 1-row shard's bias, concatenated with other shards, is such a view of the
 * concatenation's gradient, at that shard's row (it once read row 0). */
static void test_sum_to_keeps_a_views_offset(void **state) {
  (void)state;
  hl_pool_push();
  hl_tensor *t = hl_tmp(hl_from_f32(HL_SHAPE(3, 2), (float[]){1, 2, 3, 4, 5, 6}, HL_F32, HL_DEVICE_CPU));
  float row[2];
  OK(hl_read_f32(hl_tmp(hl_sum_to(hl_tmp(hl_slice(t, 0, 2, 3)), HL_SHAPE(2))), row));
  assert_true(row[0] == 5 && row[1] == 6);

  enum { ROWS = 3, IN = 4, OUT = 2 };
  const hl_dtype types[] = {HL_F32, HL_BF16};
  for (int k = 0; k < 2; k++) {
    hl_tensor *x = hl_tmp(hl_randn(HL_SHAPE(ROWS, IN), 0, 1, 5, 0, types[k], HL_DEVICE_CPU));
    hl_tensor *w = hl_tmp(hl_randn(HL_SHAPE(OUT, IN), 0, 1, 5, 1, types[k], HL_DEVICE_CPU));
    hl_tensor *b = hl_tmp(hl_zeros(HL_SHAPE(OUT), types[k], HL_DEVICE_CPU));
    OK(hl_set_requires_grad(b, true));
    hl_tensor *shards[ROWS];
    for (int r = 0; r < ROWS; r++) shards[r] = hl_tmp(hl_linear(hl_tmp(hl_slice(x, 0, r, r + 1)), w, b));
    hl_tensor *y = hl_tmp(hl_cat(shards, ROWS, 0));
    /* d sum(y * c) / db = the column sums of c, with c's rows all different */
    hl_tensor *c = hl_tmp(hl_from_f32(HL_SHAPE(ROWS, OUT), (float[]){1, 2, 4, 8, 16, 32}, types[k], HL_DEVICE_CPU));
    OK(hl_backward(hl_tmp(hl_sum(hl_tmp(hl_to_f32(hl_tmp(hl_mul(y, c)))))), NULL, false));
    float g[OUT];
    grad_values(b, g);
    if (g[0] != 21 || g[1] != 42)
      fail_msg("%s: bias gradient %g %g, expected 21 42", hl_dtype_name(types[k]), g[0], g[1]);
  }
  hl_pool_pop();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backward_accumulates),
      cmocka_unit_test(test_ready_hook),
      cmocka_unit_test(test_retain_graph),
      cmocka_unit_test(test_two_losses_share_a_graph),
      cmocka_unit_test(test_grad_leaves_dot_grad_alone),
      cmocka_unit_test(test_no_grad),
      cmocka_unit_test(test_in_place_after_save_is_detected),
      cmocka_unit_test(test_long_chain_frees_iteratively),
      cmocka_unit_test(test_higher_order_limits),
      cmocka_unit_test(test_create_graph_leaf_grad),
      cmocka_unit_test(test_split_backward_matches_unfused),
      cmocka_unit_test(test_sum_to_keeps_a_views_offset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
