/* test_grad_fd.c — suite unit: every op's backward against central finite
 * differences in f64, and second derivatives (Hessian-vector products by
 * double backward) for the ops gradient penalties go through. */
#include <math.h>
#include <stdlib.h>

#include "tests/core/core_test.h"

/* ------------------------------------------------ op compositions -- */

#define WS(expr) weighted_sum(hl_tmp(expr))

static hl_tensor *f_add(hl_tensor **in, int n, void *c) { return WS(hl_add(in[0], in[1])); }
static hl_tensor *f_sub(hl_tensor **in, int n, void *c) { return WS(hl_sub(in[0], in[1])); }
static hl_tensor *f_mul(hl_tensor **in, int n, void *c) { return WS(hl_mul(in[0], in[1])); }
static hl_tensor *f_div(hl_tensor **in, int n, void *c) { return WS(hl_div(in[0], in[1])); }
static hl_tensor *f_neg(hl_tensor **in, int n, void *c) { return WS(hl_neg(in[0])); }
static hl_tensor *f_scalars(hl_tensor **in, int n, void *c) {
  /* ((x + 2.5) * -1.5 / 4 - 1 subtracted from 1, then 2 / that) */
  hl_tensor *a = hl_tmp(hl_add_scalar(in[0], 2.5)), *b = hl_tmp(hl_mul_scalar(a, -1.5));
  hl_tensor *d = hl_tmp(hl_div_scalar(b, 4.0)), *e = hl_tmp(hl_sub_scalar(d, 1.0));
  hl_tensor *r = hl_tmp(hl_rsub_scalar(e, 1.0));
  return WS(hl_rdiv_scalar(r, 2.0));
}
static hl_tensor *f_relu(hl_tensor **in, int n, void *c) { return WS(hl_relu(in[0])); }
static hl_tensor *f_gelu(hl_tensor **in, int n, void *c) { return WS(hl_gelu(in[0])); }
static hl_tensor *f_exp(hl_tensor **in, int n, void *c) { return WS(hl_exp(in[0])); }
static hl_tensor *f_log(hl_tensor **in, int n, void *c) { return WS(hl_log(in[0])); }
static hl_tensor *f_sqrt(hl_tensor **in, int n, void *c) { return WS(hl_sqrt(in[0])); }
static hl_tensor *f_pow(hl_tensor **in, int n, void *c) { return WS(hl_pow(in[0], *(double *)c)); }
static hl_tensor *f_mask(hl_tensor **in, int n, void *c) { return WS(hl_causal_mask(in[0], -5.0)); }
static hl_tensor *f_sum(hl_tensor **in, int n, void *c) { return hl_sum(hl_tmp(hl_mul(in[0], in[0]))); }
static hl_tensor *f_sum_dim(hl_tensor **in, int n, void *c) { return WS(hl_sum_dim(in[0], 1, false)); }
static hl_tensor *f_sum_keep(hl_tensor **in, int n, void *c) { return WS(hl_sum_dim(in[0], -1, true)); }
static hl_tensor *f_mean(hl_tensor **in, int n, void *c) { return hl_mean(hl_tmp(hl_mul(in[0], in[0]))); }
static hl_tensor *f_mean_dim(hl_tensor **in, int n, void *c) { return WS(hl_mean_dim(in[0], 0, false)); }
static hl_tensor *f_sum_to(hl_tensor **in, int n, void *c) { return WS(hl_sum_to(in[0], HL_SHAPE(3, 1))); }
static hl_tensor *f_mm(hl_tensor **in, int n, void *c) { return WS(hl_mm(in[0], in[1])); }
static hl_tensor *f_mm_t(hl_tensor **in, int n, void *c) {
  /* transposed views go to the GEMM as flags */
  return WS(hl_mm(hl_tmp(hl_transpose(in[0], 0, 1)), hl_tmp(hl_transpose(in[1], 0, 1))));
}
static hl_tensor *f_bmm(hl_tensor **in, int n, void *c) { return WS(hl_bmm(in[0], in[1])); }
static hl_tensor *f_matmul(hl_tensor **in, int n, void *c) { return WS(hl_matmul(in[0], in[1])); }
static hl_tensor *f_linear(hl_tensor **in, int n, void *c) { return WS(hl_linear(in[0], in[1], n > 2 ? in[2] : NULL)); }
static hl_tensor *f_softmax(hl_tensor **in, int n, void *c) { return WS(hl_softmax(in[0])); }
static hl_tensor *f_log_softmax(hl_tensor **in, int n, void *c) { return WS(hl_log_softmax(in[0])); }
static hl_tensor *f_ce(hl_tensor **in, int n, void *c) { return hl_cross_entropy(in[0], in[1]); }
static hl_tensor *f_mse(hl_tensor **in, int n, void *c) { return hl_mse_loss(in[0], in[1]); }
static hl_tensor *f_layer_norm(hl_tensor **in, int n, void *c) {
  return WS(hl_layer_norm(in[0], n > 1 ? in[1] : NULL, n > 2 ? in[2] : NULL, 1e-5));
}
static hl_tensor *f_embedding(hl_tensor **in, int n, void *c) { return WS(hl_embedding(in[0], in[1])); }
static hl_tensor *f_cat(hl_tensor **in, int n, void *c) { return WS(hl_cat(in, 2, *(int *)c)); }
static hl_tensor *f_views(hl_tensor **in, int n, void *c) {
  /* [2,6] -> [3,4] -> transpose -> permute back -> slice -> expand */
  hl_tensor *r = hl_tmp(hl_reshape(in[0], HL_SHAPE(3, 4)));
  hl_tensor *t = hl_tmp(hl_transpose(r, 0, 1));
  hl_tensor *p = hl_tmp(hl_permute(t, (int[]){1, 0}));
  hl_tensor *s = hl_tmp(hl_slice(p, 1, 1, 3));
  hl_tensor *e = hl_tmp(hl_expand(hl_tmp(hl_reshape(s, HL_SHAPE(3, 1, 2))), HL_SHAPE(3, 4, 2)));
  return WS(hl_contiguous(e));
}
static hl_tensor *f_heads(hl_tensor **in, int n, void *c) {
  hl_tensor *h = hl_tmp(hl_split_heads(in[0], 2));
  return WS(hl_merge_heads(hl_tmp(hl_mul(h, h))));
}
static hl_tensor *f_split(hl_tensor **in, int n, void *c) {
  hl_tensor *parts[3];
  OK(hl_split(in[0], 1, 3, parts));
  for (int i = 0; i < 3; i++) hl_tmp(parts[i]);
  return WS(hl_mul(parts[0], hl_tmp(hl_add(parts[1], parts[2]))));
}

/* a small network: x [4,3] -> linear(5) -> relu/gelu -> linear(2) -> loss */
typedef struct {
  hl_tensor *x, *targets;
  bool gelu, mse;
} net_ctx;

static hl_tensor *f_net(hl_tensor **in, int n, void *p) {
  net_ctx *c = p;
  hl_tensor *h = hl_tmp(hl_linear(c->x, in[0], in[1]));
  h = hl_tmp(c->gelu ? hl_gelu(h) : hl_relu(h));
  hl_tensor *o = hl_tmp(hl_linear(h, in[2], in[3]));
  if (c->mse) return hl_mse_loss(o, c->targets);
  return hl_cross_entropy(o, c->targets);
}

/* ---------------------------------------------------------- helpers -- */

static void run1(const char *what, scalar_fn f, hl_tensor *a, void *ctx, bool hvp) {
  hl_tensor *in[1] = {a};
  check_grad(what, f, in, 1, ctx);
  if (hvp) check_hvp(what, f, in, 1, ctx);
  hl_release(a);
}

static void run2(const char *what, scalar_fn f, hl_tensor *a, hl_tensor *b, void *ctx, bool hvp) {
  hl_tensor *in[2] = {a, b};
  check_grad(what, f, in, 2, ctx);
  if (hvp) check_hvp(what, f, in, 2, ctx);
  hl_release(a);
  hl_release(b);
}

static hl_tensor *targets(const int32_t *v, int64_t n) {
  hl_tensor *t = hl_from_i32(HL_SHAPE(n), v, HL_I32, HL_DEVICE_CPU);
  OK(t);
  return t;
}

/* ------------------------------------------------------------ tests -- */

static void test_elementwise(void **state) {
  (void)state;
  run2("add (broadcast)", f_add, leaf64(HL_SHAPE(3, 4), 1, 0), leaf64(HL_SHAPE(4), 2, 0), NULL, true);
  run2("sub (broadcast)", f_sub, leaf64(HL_SHAPE(3, 4), 3, 0), leaf64(HL_SHAPE(3, 1), 4, 0), NULL, false);
  run2("mul (broadcast)", f_mul, leaf64(HL_SHAPE(2, 3, 4), 5, 0), leaf64(HL_SHAPE(3, 4), 6, 0), NULL, true);
  run2("div", f_div, leaf64(HL_SHAPE(3, 4), 7, 0), leaf64(HL_SHAPE(4), 8, 3.0), NULL, true);
  run1("neg", f_neg, leaf64(HL_SHAPE(5), 9, 0), NULL, false);
  run1("scalar ops", f_scalars, leaf64(HL_SHAPE(2, 3), 10, 0), NULL, true);
  run1("relu", f_relu, leaf64(HL_SHAPE(4, 5), 11, 0), NULL, false);
  run1("gelu", f_gelu, leaf64(HL_SHAPE(4, 5), 12, 0), NULL, true);
  run1("exp", f_exp, leaf64(HL_SHAPE(3, 4), 13, 0), NULL, true);
  run1("log", f_log, leaf64(HL_SHAPE(3, 4), 14, 5.0), NULL, true);
  run1("sqrt", f_sqrt, leaf64(HL_SHAPE(3, 4), 15, 5.0), NULL, true);
  double p2 = 2, p3 = 3, ph = 0.5, pn = -1.5;
  run1("pow 2", f_pow, leaf64(HL_SHAPE(3, 4), 16, 0), &p2, true);
  run1("pow 3", f_pow, leaf64(HL_SHAPE(3, 4), 17, 0), &p3, true);
  run1("pow 0.5", f_pow, leaf64(HL_SHAPE(3, 4), 18, 5.0), &ph, true);
  run1("pow -1.5", f_pow, leaf64(HL_SHAPE(3, 4), 19, 5.0), &pn, false);
  run1("causal_mask square", f_mask, leaf64(HL_SHAPE(2, 3, 3), 20, 0), NULL, false);
  run1("causal_mask wide", f_mask, leaf64(HL_SHAPE(2, 3, 5), 21, 0), NULL, false);
}

static void test_reductions(void **state) {
  (void)state;
  run1("sum", f_sum, leaf64(HL_SHAPE(3, 4), 30, 0), NULL, true);
  run1("sum_dim", f_sum_dim, leaf64(HL_SHAPE(2, 3, 4), 31, 0), NULL, false);
  run1("sum_dim keepdim", f_sum_keep, leaf64(HL_SHAPE(2, 3, 4), 32, 0), NULL, false);
  run1("mean", f_mean, leaf64(HL_SHAPE(3, 4), 33, 0), NULL, true);
  run1("mean_dim", f_mean_dim, leaf64(HL_SHAPE(3, 4), 34, 0), NULL, false);
  run1("sum_to", f_sum_to, leaf64(HL_SHAPE(2, 3, 4), 35, 0), NULL, false);
}

static void test_products(void **state) {
  (void)state;
  run2("mm", f_mm, leaf64(HL_SHAPE(3, 4), 40, 0), leaf64(HL_SHAPE(4, 5), 41, 0), NULL, true);
  run2("mm of transposed views", f_mm_t, leaf64(HL_SHAPE(4, 3), 42, 0), leaf64(HL_SHAPE(5, 4), 43, 0), NULL, true);
  run2("bmm", f_bmm, leaf64(HL_SHAPE(2, 3, 4), 44, 0), leaf64(HL_SHAPE(2, 4, 5), 45, 0), NULL, false);
  run2("matmul 4-D", f_matmul, leaf64(HL_SHAPE(2, 2, 3, 4), 46, 0), leaf64(HL_SHAPE(2, 2, 4, 3), 47, 0), NULL, false);
  run2("matmul 3-D x 2-D", f_matmul, leaf64(HL_SHAPE(2, 3, 4), 48, 0), leaf64(HL_SHAPE(4, 5), 49, 0), NULL, true);
  hl_tensor *in[3] = {leaf64(HL_SHAPE(2, 3, 4), 50, 0), leaf64(HL_SHAPE(5, 4), 51, 0), leaf64(HL_SHAPE(5), 52, 0)};
  check_grad("linear", f_linear, in, 3, NULL);
  check_hvp("linear", f_linear, in, 3, NULL);
  check_grad("linear without bias", f_linear, in, 2, NULL);
  hl_tensor *in1[3] = {leaf64(HL_SHAPE(4), 53, 0), in[1], in[2]};
  check_grad("linear of a vector", f_linear, in1, 3, NULL);
  check_hvp("linear of a vector", f_linear, in1, 3, NULL);
  hl_release(in1[0]);
  for (int i = 0; i < 3; i++) hl_release(in[i]);
}

static void test_network_ops(void **state) {
  (void)state;
  run1("softmax", f_softmax, leaf64(HL_SHAPE(3, 5), 60, 0), NULL, true);
  run1("log_softmax", f_log_softmax, leaf64(HL_SHAPE(3, 5), 61, 0), NULL, true);
  run2("cross_entropy", f_ce, leaf64(HL_SHAPE(4, 5), 62, 0), targets((int32_t[]){0, 4, 2, 2}, 4), NULL, true);
  run2("mse_loss", f_mse, leaf64(HL_SHAPE(3, 4), 63, 0), leaf64(HL_SHAPE(3, 4), 64, 0), NULL, true);
  hl_tensor *in[3] = {leaf64(HL_SHAPE(3, 6), 65, 0), leaf64(HL_SHAPE(6), 66, 1.0), leaf64(HL_SHAPE(6), 67, 0)};
  check_grad("layer_norm", f_layer_norm, in, 3, NULL);
  check_grad("layer_norm without affine", f_layer_norm, in, 1, NULL);
  for (int i = 0; i < 3; i++) hl_release(in[i]);
  hl_tensor *idx = hl_from_i32(HL_SHAPE(2, 4), (int32_t[]){1, 5, 1, 0, 3, 3, 3, 2}, HL_I32, HL_DEVICE_CPU);
  run2("embedding (repeated indices)", f_embedding, leaf64(HL_SHAPE(6, 3), 68, 0), idx, NULL, true);
}

static void test_views_and_joins(void **state) {
  (void)state;
  int d1 = 1, d0 = 0;
  run2("cat dim 1", f_cat, leaf64(HL_SHAPE(2, 3), 70, 0), leaf64(HL_SHAPE(2, 2), 71, 0), &d1, false);
  run2("cat dim 0", f_cat, leaf64(HL_SHAPE(2, 3), 72, 0), leaf64(HL_SHAPE(1, 3), 73, 0), &d0, false);
  run1("reshape, transpose, permute, slice, expand", f_views, leaf64(HL_SHAPE(2, 6), 74, 0), NULL, false);
  run1("split/merge heads", f_heads, leaf64(HL_SHAPE(2, 3, 4), 75, 0), NULL, false);
  run1("split", f_split, leaf64(HL_SHAPE(2, 6), 76, 0), NULL, true);
}

static void test_networks_second_order(void **state) {
  (void)state;
  double xv[12];
  for (int i = 0; i < 12; i++) xv[i] = sin(1.3 * i + 0.2);
  net_ctx c = {hl_from_f64(HL_SHAPE(4, 3), xv, HL_F64, HL_DEVICE_CPU), NULL, false, false};
  OK(c.x);
  hl_tensor *in[4] = {leaf64(HL_SHAPE(5, 3), 80, 0), leaf64(HL_SHAPE(5), 81, 0), leaf64(HL_SHAPE(2, 5), 82, 0),
                      leaf64(HL_SHAPE(2), 83, 0)};
  c.targets = targets((int32_t[]){1, 0, 0, 1}, 4);
  check_grad("relu net + cross_entropy", f_net, in, 4, &c);
  check_hvp("relu net + cross_entropy", f_net, in, 4, &c);
  c.gelu = true;
  check_hvp("gelu net + cross_entropy", f_net, in, 4, &c);
  hl_release(c.targets);
  c.mse = true;
  c.targets = hl_randn(HL_SHAPE(4, 2), 0, 1, 5, 5, HL_F64, HL_DEVICE_CPU);
  check_grad("gelu net + mse", f_net, in, 4, &c);
  check_hvp("gelu net + mse", f_net, in, 4, &c);
  hl_release(c.targets);
  hl_release(c.x);
  for (int i = 0; i < 4; i++) hl_release(in[i]);
}

/* The gradient-penalty recipe: grads of the loss with create_graph,
 * penalty = sqrt(sum of their squares), backward of loss + penalty. The
 * parameters' .grad must equal the finite differences of that total. */
static hl_tensor *f_penalized(hl_tensor **in, int n, void *p) {
  net_ctx *c = p;
  hl_tensor *loss = hl_tmp(f_net(in, n, c));
  hl_tensor *g[4];
  if (!hl_autograd_grad(&loss, 1, NULL, in, 4, g, (hl_grad_opts){.create_graph = true, .retain_graph = true}))
    return NULL;
  hl_tensor *norm = NULL;
  for (int i = 0; i < 4; i++) {
    hl_tensor *s = hl_tmp(hl_sum(hl_tmp(hl_pow(hl_tmp(g[i]), 2.0))));
    norm = norm ? hl_tmp(hl_add(norm, s)) : s;
  }
  return hl_add(loss, hl_tmp(hl_sqrt(norm)));
}

static void test_gradient_penalty(void **state) {
  (void)state;
  double xv[12];
  for (int i = 0; i < 12; i++) xv[i] = cos(0.7 * i);
  net_ctx c = {hl_from_f64(HL_SHAPE(4, 3), xv, HL_F64, HL_DEVICE_CPU), NULL, true, false};
  c.targets = targets((int32_t[]){1, 0, 1, 1}, 4);
  hl_tensor *in[4] = {leaf64(HL_SHAPE(5, 3), 90, 0), leaf64(HL_SHAPE(5), 91, 0), leaf64(HL_SHAPE(2, 5), 92, 0),
                      leaf64(HL_SHAPE(2), 93, 0)};
  uint64_t before = hl_cpu_live_bytes();
  hl_pool_push();
  hl_tensor *total = hl_tmp(f_penalized(in, 4, &c));
  OK(total);
  OK(hl_backward(total, NULL, false));
  hl_pool_pop();
  /* finite differences of the total, evaluated with grad mode on (it needs autograd inside) */
  for (int i = 0; i < 4; i++) {
    double *a = hl_tensor_values(hl_tensor_grad(in[i]));
    double *x = hl_tensor_data(in[i]);
    for (int64_t k = 0; k < hl_numel(in[i]); k++) {
      double saved = x[k], v[2];
      for (int s = 0; s < 2; s++) {
        x[k] = saved + (s ? -1e-6 : 1e-6);
        hl_pool_push();
        hl_tensor *t = hl_tmp(f_penalized(in, 4, &c));
        OK(t);
        v[s] = hl_item(t);
        hl_pool_pop();
      }
      x[k] = saved;
      double numeric = (v[0] - v[1]) / 2e-6;
      if (!(fabs(a[k] - numeric) <= 1e-6 * (1 + fabs(numeric))))
        fail_msg("gradient penalty: param %d element %lld: backward %.12g, finite differences %.12g", i, (long long)k,
                 a[k], numeric);
    }
    free(a);
    hl_zero_grad(in[i]);
  }
  assert_int_equal(hl_cpu_live_bytes(), before);
  for (int i = 0; i < 4; i++) hl_release(in[i]);
  hl_release(c.x);
  hl_release(c.targets);
}

/* The gradient through a dtype cast is converted back. */
static void test_cast_gradient(void **state) {
  (void)state;
  hl_tensor *x = leaf64(HL_SHAPE(3), 95, 0);
  hl_pool_push();
  hl_tensor *x32 = hl_to_dtype(x, HL_F32), *y = hl_sum(hl_tmp(hl_mul_scalar(x32, 3.0)));
  hl_pool_pop();
  OK(hl_backward(y, NULL, false));
  assert_int_equal(hl_tensor_grad(x)->dtype, HL_F64);
  double *g = hl_tensor_values(hl_tensor_grad(x));
  for (int i = 0; i < 3; i++) assert_true(g[i] == 3.0);
  free(g);
  hl_release(x32);
  hl_release(y);
  hl_release(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_elementwise),       cmocka_unit_test(test_reductions),
      cmocka_unit_test(test_products),          cmocka_unit_test(test_network_ops),
      cmocka_unit_test(test_views_and_joins),   cmocka_unit_test(test_networks_second_order),
      cmocka_unit_test(test_gradient_penalty),  cmocka_unit_test(test_cast_gradient),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
