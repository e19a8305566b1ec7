/* core_test.c — finite-difference machinery for the AMP-core tests. */
#include "tests/core/core_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hl_tensor *leaf64(hl_shape s, uint64_t stream, double offset) {
  hl_tensor *t = hl_randn(s, offset, 1.0, 1234, stream, HL_F64, HL_DEVICE_CPU);
  OK(t);
  OK(hl_set_requires_grad(t, true));
  return t;
}


hl_tensor *weighted_sum(hl_tensor *t) {
  if (!t) return NULL;
  hl_tensor *r = hl_randn(hl_tensor_shape(t), 0.5, 1.0, 99, 7, t->dtype, t->device);
  hl_tensor *p = hl_mul(t, r);
  hl_tensor *s = hl_sum(p);
  hl_release(r);
  hl_release(p);
  return s;
}

static double eval(scalar_fn f, hl_tensor **in, int n, void *ctx) {
  double v = NAN;
  HL_NO_GRAD {
    hl_pool_push();
    hl_tensor *y = f(in, n, ctx);
    hl_pool_pop();
    OK(y);
    v = hl_item(y);
    hl_release(y);
  }
  return v;
}

/* Central difference of g along element k of in[i]. The element is
 * changed in the tensor's own storage (f64, contiguous leaves). */
static double central(double (*g)(scalar_fn, hl_tensor **, int, void *), scalar_fn f, hl_tensor **in, int n,
                      void *ctx, int i, int64_t k, double eps) {
  double *x = (double *)hl_tensor_data(in[i]);
  double saved = x[k];
  x[k] = saved + eps;
  double up = g(f, in, n, ctx);
  x[k] = saved - eps;
  double down = g(f, in, n, ctx);
  x[k] = saved;
  return (up - down) / (2 * eps);
}

static void compare(const char *what, const char *kind, int i, int64_t k, double analytic, double numeric) {
  double tol = 1e-6 * (1.0 + fabs(numeric));
  if (!(fabs(analytic - numeric) <= tol))
    fail_msg("%s: %s of input %d element %lld: autograd %.12g, finite differences %.12g", what, kind, i, (long long)k,
             analytic, numeric);
}

void check_grad(const char *what, scalar_fn f, hl_tensor **in, int n, void *ctx) {
  uint64_t before = hl_cpu_live_bytes();
  hl_pool_push();
  hl_tensor *y = f(in, n, ctx);
  hl_pool_pop();
  OK(y);
  hl_tensor *g[16] = {NULL};
  hl_tensor *req[16];
  int idx[16], m = 0;
  for (int i = 0; i < n; i++)
    if (in[i] && in[i]->requires_grad) idx[m] = i, req[m++] = in[i];
  OK(hl_autograd_grad(&y, 1, NULL, req, m, g, (hl_grad_opts){0}));
  hl_release(y);
  for (int j = 0; j < m; j++) {
    int i = idx[j];
    assert_int_equal(g[j]->dtype, HL_F64);
    assert_true(hl_shape_equal(hl_tensor_shape(g[j]), hl_tensor_shape(in[i])));
    double *a = hl_tensor_values(g[j]);
    for (int64_t k = 0; k < hl_numel(in[i]); k++) compare(what, "gradient", i, k, a[k], central(eval, f, in, n, ctx, i, k, 1e-6));
    free(a);
    hl_release(g[j]);
  }
  /* the graph and the gradients are gone: no bytes left behind */
  assert_int_equal(hl_cpu_live_bytes(), before);
}

/* h(x) = sum_j <df/dx_j, V_j> with first-order autograd; V in ctx2 */
typedef struct {
  scalar_fn f;
  void *ctx;
  hl_tensor **v;
} hvp_ctx;

static double eval_h(scalar_fn unused, hl_tensor **in, int n, void *p) {
  (void)unused;
  hvp_ctx *h = p;
  hl_pool_push();
  hl_tensor *y = h->f(in, n, h->ctx);
  hl_pool_pop();
  OK(y);
  hl_tensor *g[16] = {NULL}, *req[16];
  int idx[16], m = 0;
  for (int i = 0; i < n; i++)
    if (in[i] && in[i]->requires_grad) idx[m] = i, req[m++] = in[i];
  OK(hl_autograd_grad(&y, 1, NULL, req, m, g, (hl_grad_opts){0}));
  hl_release(y);
  double total = 0;
  for (int j = 0; j < m; j++) {
    double *a = hl_tensor_values(g[j]), *v = hl_tensor_values(h->v[idx[j]]);
    for (int64_t k = 0; k < hl_numel(g[j]); k++) total += a[k] * v[k];
    free(a);
    free(v);
    hl_release(g[j]);
  }
  return total;
}

void check_hvp(const char *what, scalar_fn f, hl_tensor **in, int n, void *ctx) {
  uint64_t before = hl_cpu_live_bytes();
  hl_tensor *v[16] = {NULL};
  for (int i = 0; i < n; i++)
    if (in[i] && in[i]->requires_grad) {
      v[i] = hl_randn(hl_tensor_shape(in[i]), 0, 1, 4321, 100 + (uint64_t)i, HL_F64, HL_DEVICE_CPU);
      OK(v[i]);
    }
  /* analytic: gradient of h by double backward */
  hl_pool_push();
  hl_tensor *y = f(in, n, ctx);
  hl_pool_pop();
  OK(y);
  hl_tensor *g[16] = {NULL}, *req[16];
  int idx[16], m = 0;
  for (int i = 0; i < n; i++)
    if (in[i] && in[i]->requires_grad) idx[m] = i, req[m++] = in[i];
  OK(hl_autograd_grad(&y, 1, NULL, req, m, g, (hl_grad_opts){.create_graph = true, .retain_graph = true}));
  hl_tensor *h = NULL;
  for (int j = 0; j < m; j++) {
    hl_tensor *prod = hl_mul(g[j], v[idx[j]]);
    hl_tensor *s = hl_sum(prod);
    hl_tensor *acc = h ? hl_add(h, s) : hl_retain(s);
    OK(acc);
    hl_release(prod);
    hl_release(s);
    hl_release(h);
    h = acc;
  }
  hl_tensor *hg[16] = {NULL};
  /* a gradient without a graph is constant (f linear in x): the HVP is 0 */
  if (hl_requires_grad(h)) OK(hl_autograd_grad(&h, 1, NULL, req, m, hg, (hl_grad_opts){.allow_unused = true}));
  hvp_ctx hc = {f, ctx, v};
  for (int j = 0; j < m; j++) {
    int i = idx[j];
    double *a = hg[j] ? hl_tensor_values(hg[j]) : NULL;
    for (int64_t k = 0; k < hl_numel(in[i]); k++)
      compare(what, "Hessian-vector product", i, k, a ? a[k] : 0.0, central(eval_h, f, in, n, &hc, i, k, 1e-5));
    free(a);
    hl_release(hg[j]);
    hl_release(g[j]);
  }
  hl_release(h);
  hl_release(y);
  for (int i = 0; i < n; i++) hl_release(v[i]);
  assert_int_equal(hl_cpu_live_bytes(), before);
}
