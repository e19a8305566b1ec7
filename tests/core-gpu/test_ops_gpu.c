/* test_ops_gpu.c — suite gpu: the AMP core's ops on CUDA tensors against the
 * same ops on CPU tensors, forward and backward, in f64, f32, f16 and bf16,
 * outside and inside autocast regions (fp16 and bf16 on both devices, so
 * the policies pick the same dtypes), plus what only the core shows: the
 * GEMM path through cuBLAS (transposed views, strided and broadcast
 * batches, k = 0, empty batches), second derivatives (gradient penalty), a
 * GPT block, CUDA autocast's fp16 default, the errors (mixed dtypes, bad
 * targets and indices), and the examples run with --device cuda.
 *
 * Inputs are made on the CPU and copied, so both sides start from the same
 * bits. Results must have the same dtype and shape and agree within a
 * tolerance relative to the largest |value| of the CPU's tensor: f64 1e-9,
 * f32 1e-4, f16 1e-2, bf16 5e-2 — a few roundings of the result type
 * through short chains whose reductions and GEMMs sum in another order
 * (the kernels themselves are held to their own, tighter classes in
 * test_kernels_gpu.c). Exits 77 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "core/base/device.h"
#include "core/base/error.h"
#include "core/engine/ops.h"
#include "core/engine/tensor.h"
#include "tests/core-gpu/twin.h"
#include "tests/core/core_test.h"

static const hl_dtype floats[] = {HL_F64, HL_F32, HL_F16, HL_BF16};

static double tol_for(hl_dtype t) {
  switch (t) {
    case HL_F64: return 1e-9;
    case HL_F32: return 1e-4;
    case HL_F16: return 1e-2;
    default: return 5e-2;
  }
}

/* ref (CPU) and got (device): same dtype and shape, values within tol of max|ref| */
static void expect_close(const char *what, const hl_tensor *ref, const hl_tensor *got, double tol) {
  if (!ref || !got) fail_msg("%s: %s", what, hl_error());
  if (ref->dtype != got->dtype || !hl_shape_equal(hl_tensor_shape(ref), hl_tensor_shape(got)))
    fail_msg("%s: CPU gives %s, device %s", what, hl_desc(ref), hl_desc(got));
  const int64_t n = hl_numel(ref);
  double *a = malloc(sizeof(double) * (size_t)(n ? n : 1)), *b = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!hl_read_f64(ref, a) || !hl_read_f64(got, b)) fail_msg("%s: read back: %s", what, hl_error());
  double scale = 0, worst = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(a[i])) scale = fmax(scale, fabs(a[i]));
  for (int64_t i = 0; i < n; i++) {
    if (isnan(a[i]) && isnan(b[i])) continue;
    if (a[i] == b[i]) continue;
    const double d = fabs(a[i] - b[i]);
    if (!(d <= worst)) worst = d, at = i;
  }
  if (at >= 0 && !(worst <= tol * scale))
    fail_msg("%s (%s): element %lld: CPU %.9g, device %.9g (|diff| %.3g > %g x max|ref| %.3g)", what, hl_desc(ref),
             (long long)at, a[at], b[at], worst, tol, scale);
  free(a);
  free(b);
}

/* ----------------------------------------------------------- inputs -- */

typedef struct {
  hl_tensor *cpu, *dev;
} pair;

/* uniform [lo, hi) on the CPU in f64, rounded once to t, copied to the
 * device; both leaves require grad when asked */
static pair leaf(hl_shape s, hl_dtype t, double lo, double hi, uint64_t stream, bool grad) {
  pair p;
  hl_tensor *x64 = hl_tmp(hl_rand(s, lo, hi, 2024, stream, HL_F64, HL_DEVICE_CPU));
  p.cpu = hl_tmp(hl_detach(hl_tmp(hl_to_dtype(x64, t))));
  p.dev = hl_tmp(hl_detach(hl_tmp(hl_to_device(p.cpu, twin_device))));
  if (!p.cpu || !p.dev) fail_msg("inputs: %s", hl_error());
  if (grad && (!hl_set_requires_grad(p.cpu, true) || !hl_set_requires_grad(p.dev, true)))
    fail_msg("requires_grad: %s", hl_error());
  return p;
}

static pair indices(hl_shape s, int32_t modulo, uint64_t salt) {
  int64_t n = 1;
  for (int i = 0; i < s.ndim; i++) n *= s.d[i];
  int32_t *v = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = (int32_t)(((uint64_t)i * 7919u + salt) % (uint64_t)modulo);
  pair p = {hl_tmp(hl_from_i32(s, v, HL_I32, HL_DEVICE_CPU)), hl_tmp(hl_from_i32(s, v, HL_I32, twin_device))};
  free(v);
  if (!p.cpu || !p.dev) fail_msg("indices: %s", hl_error());
  return p;
}

/* ------------------------------------------------------ op-level cases -- */

typedef hl_tensor *(*case_fn)(hl_tensor **in);

typedef struct {
  const char *name;
  case_fn f;
  int n;
  hl_shape shape[4];
  double lo[4], hi[4];
  int32_t index_modulo[4]; /* > 0: an i32 index input with values below it */
} op_case;

static hl_tensor *f_add(hl_tensor **x) { return hl_add(x[0], x[1]); }
static hl_tensor *f_sub(hl_tensor **x) { return hl_sub(x[0], x[1]); }
static hl_tensor *f_mul(hl_tensor **x) { return hl_mul(x[0], x[1]); }
static hl_tensor *f_div(hl_tensor **x) { return hl_div(x[0], x[1]); }
static hl_tensor *f_scalars(hl_tensor **x) {
  hl_tensor *a = hl_tmp(hl_add_scalar(hl_tmp(hl_neg(x[0])), 0.5));
  hl_tensor *b = hl_tmp(hl_div_scalar(hl_tmp(hl_mul_scalar(a, -1.5)), 3.0));
  return hl_add(hl_tmp(hl_rsub_scalar(b, 2.0)), hl_tmp(hl_rdiv_scalar(x[1], 2.0)));
}
static hl_tensor *f_relu(hl_tensor **x) { return hl_relu(x[0]); }
static hl_tensor *f_gelu(hl_tensor **x) { return hl_gelu(x[0]); }
static hl_tensor *f_exp(hl_tensor **x) { return hl_exp(x[0]); }
static hl_tensor *f_log(hl_tensor **x) { return hl_log(x[0]); }
static hl_tensor *f_sqrt(hl_tensor **x) { return hl_sqrt(x[0]); }
static hl_tensor *f_pow(hl_tensor **x) {
  return hl_add(hl_tmp(hl_add(hl_tmp(hl_pow(x[0], 2)), hl_tmp(hl_pow(x[0], 3)))), hl_tmp(hl_pow(x[0], 0.5)));
}
static hl_tensor *f_softmax(hl_tensor **x) { return hl_softmax(x[0]); }
static hl_tensor *f_log_softmax(hl_tensor **x) { return hl_log_softmax(x[0]); }
static hl_tensor *f_masked_softmax(hl_tensor **x) { return hl_softmax(hl_tmp(hl_causal_mask(x[0], -INFINITY))); }
static hl_tensor *f_sums(hl_tensor **x) {
  hl_tensor *a = hl_tmp(hl_sum_dim(x[0], 1, true)), *b = hl_tmp(hl_mean_dim(x[0], -1, false));
  return hl_add(hl_tmp(hl_add(hl_tmp(hl_sum(a)), hl_tmp(hl_mean(b)))), hl_tmp(hl_sum(x[0])));
}
static hl_tensor *f_mm(hl_tensor **x) { return hl_mm(x[0], x[1]); }
static hl_tensor *f_mm_tt(hl_tensor **x) {
  return hl_mm(hl_tmp(hl_transpose(x[0], 0, 1)), hl_tmp(hl_transpose(x[1], 0, 1)));
}
static hl_tensor *f_bmm(hl_tensor **x) { return hl_bmm(x[0], x[1]); }
static hl_tensor *f_matmul(hl_tensor **x) { return hl_matmul(x[0], x[1]); }
static hl_tensor *f_linear(hl_tensor **x) { return hl_linear(x[0], x[1], x[2]); }
static hl_tensor *f_linear_nobias(hl_tensor **x) { return hl_linear(x[0], x[1], NULL); }
static hl_tensor *f_cross_entropy(hl_tensor **x) { return hl_cross_entropy(x[0], x[1]); }
static hl_tensor *f_mse(hl_tensor **x) { return hl_mse_loss(x[0], x[1]); }
static hl_tensor *f_layer_norm(hl_tensor **x) { return hl_layer_norm(x[0], x[1], x[2], 1e-5); }
static hl_tensor *f_embedding(hl_tensor **x) { return hl_embedding(x[0], x[1]); }
static hl_tensor *f_views(hl_tensor **x) {
  const int perm[3] = {2, 0, 1};
  hl_tensor *p = hl_tmp(hl_permute(x[0], perm));                     /* [6,4,5] */
  hl_tensor *s = hl_tmp(hl_slice(p, 1, 1, 3));                       /* [6,2,5] */
  hl_tensor *r = hl_tmp(hl_reshape(hl_tmp(hl_contiguous(s)), HL_SHAPE(12, 5)));
  hl_tensor *parts[2] = {r, hl_tmp(hl_mul_scalar(r, 2.0))};
  return hl_cat(parts, 2, 1); /* [12,10] */
}
static hl_tensor *f_to_dtype(hl_tensor **x) {
  /* there and back through another float type: the gradient converts back */
  const hl_dtype other = x[0]->dtype == HL_F32 ? HL_F16 : HL_F32;
  return hl_to_dtype(hl_tmp(hl_mul_scalar(hl_tmp(hl_to_dtype(x[0], other)), 3.0)), x[0]->dtype);
}

/* a shape literal (HL_SHAPE is a call, not a constant) */
#define S(...) {HL_NARGS_(__VA_ARGS__), {__VA_ARGS__}}
static const op_case cases[] = {
    {"add broadcast", f_add, 2, {S(4, 5, 6), S(5, 1)}, {-2, -2}, {2, 2}, {0}},
    {"sub broadcast", f_sub, 2, {S(4, 5, 6), S(6)}, {-2, -2}, {2, 2}, {0}},
    {"mul broadcast", f_mul, 2, {S(4, 5, 6), S(4, 1, 6)}, {-2, -2}, {2, 2}, {0}},
    {"div broadcast", f_div, 2, {S(7, 9), S(9)}, {-2, 0.5}, {2, 2}, {0}},
    {"scalar ops", f_scalars, 2, {S(33, 17), S(33, 17)}, {-2, 0.5}, {2, 2}, {0}},
    {"relu", f_relu, 1, {S(1000)}, {-2}, {2}, {0}},
    {"gelu", f_gelu, 1, {S(31, 33)}, {-5}, {5}, {0}},
    {"exp", f_exp, 1, {S(31, 33)}, {-4}, {4}, {0}},
    {"log", f_log, 1, {S(31, 33)}, {0.1}, {4}, {0}},
    {"sqrt", f_sqrt, 1, {S(31, 33)}, {0.1}, {4}, {0}},
    {"pow 2, 3, 0.5", f_pow, 1, {S(31, 33)}, {0.1}, {2}, {0}},
    {"softmax", f_softmax, 1, {S(6, 33)}, {-3}, {3}, {0}},
    {"softmax long rows", f_softmax, 1, {S(3, 2000)}, {-3}, {3}, {0}},
    {"log_softmax", f_log_softmax, 1, {S(6, 33)}, {-3}, {3}, {0}},
    {"causal mask + softmax", f_masked_softmax, 1, {S(2, 3, 8, 8)}, {-3}, {3}, {0}},
    {"sum, mean, keepdim", f_sums, 1, {S(3, 40, 7)}, {-1}, {1}, {0}},
    {"mm", f_mm, 2, {S(17, 33), S(33, 9)}, {-1, -1}, {1, 1}, {0}},
    {"mm of transposed views", f_mm_tt, 2, {S(33, 17), S(9, 33)}, {-1, -1}, {1, 1}, {0}},
    {"bmm", f_bmm, 2, {S(3, 7, 5), S(3, 5, 4)}, {-1, -1}, {1, 1}, {0}},
    {"matmul 4-d x 2-d", f_matmul, 2, {S(2, 3, 7, 5), S(5, 4)}, {-1, -1}, {1, 1}, {0}},
    {"matmul 4-d x 4-d", f_matmul, 2, {S(2, 3, 7, 5), S(2, 3, 5, 4)}, {-1, -1}, {1, 1}, {0}},
    {"linear + bias, 3-d x", f_linear, 3, {S(4, 6, 16), S(8, 16), S(8)}, {-1, -1, -1}, {1, 1, 1}, {0}},
    {"linear, 1-d x", f_linear_nobias, 2, {S(16), S(8, 16)}, {-1, -1}, {1, 1}, {0}},
    {"cross_entropy", f_cross_entropy, 2, {S(12, 10), S(12)}, {-3, 0}, {3, 0}, {0, 10}},
    {"mse_loss", f_mse, 2, {S(5, 7), S(5, 7)}, {-1, -1}, {1, 1}, {0}},
    {"layer_norm", f_layer_norm, 3, {S(6, 40), S(40), S(40)}, {-2, 0.5, -1}, {3, 1.5, 1}, {0}},
    {"layer_norm long rows", f_layer_norm, 3, {S(2, 3, 1500), S(1500), S(1500)}, {-2, 0.5, -1}, {3, 1.5, 1}, {0}},
    {"embedding", f_embedding, 2, {S(20, 12), S(3, 7)}, {-1, 0}, {1, 0}, {0, 20}},
    {"permute, slice, reshape, cat", f_views, 1, {S(4, 5, 6)}, {-1}, {1}, {0}},
    {"to dtype and back", f_to_dtype, 1, {S(9, 11)}, {-1}, {1}, {0}},
};
#define NCASES (sizeof cases / sizeof cases[0])

/* runs case c in dtype t on both devices, inside an autocast region of
 * `lower` (HL_DTYPE_NONE: none): outputs, then the gradients of a weighted sum */
static void run_case(const op_case *c, hl_dtype t, hl_dtype lower) {
  hl_pool_push();
  pair in[4];
  hl_tensor *xc[4], *xd[4];
  for (int i = 0; i < c->n; i++) {
    in[i] = c->index_modulo[i] ? indices(c->shape[i], c->index_modulo[i], (uint64_t)i)
                               : leaf(c->shape[i], t, c->lo[i], c->hi[i], (uint64_t)(10 * i + 1), true);
    xc[i] = in[i].cpu;
    xd[i] = in[i].dev;
  }
  hl_tensor *yc = NULL, *yd = NULL, *lc = NULL, *ld = NULL;
  if (lower == HL_DTYPE_NONE) {
    yc = hl_tmp(c->f(xc));
    yd = hl_tmp(c->f(xd));
  } else {
    HL_AUTOCAST(HL_DEVICE_CPU, lower, true) { yc = hl_tmp(c->f(xc)); }
    HL_AUTOCAST(twin_device, lower, true) { yd = hl_tmp(c->f(xd)); }
  }
  char what[160];
  snprintf(what, sizeof what, "%s, %s%s%s", c->name, hl_dtype_name(t), lower == HL_DTYPE_NONE ? "" : ", autocast ",
           lower == HL_DTYPE_NONE ? "" : hl_dtype_name(lower));
  const double tol = tol_for(lower == HL_DTYPE_NONE ? t : (t == HL_F64 ? HL_F64 : lower));
  expect_close(what, yc, yd, tol);
  lc = hl_tmp(weighted_sum(yc));
  ld = hl_tmp(weighted_sum(yd));
  if (!lc || !ld || !hl_backward(lc, NULL, false) || !hl_backward(ld, NULL, false))
    fail_msg("%s: backward: %s", what, hl_error());
  for (int i = 0; i < c->n; i++) {
    if (c->index_modulo[i]) continue;
    char gw[200];
    snprintf(gw, sizeof gw, "%s: gradient of input %d", what, i);
    expect_close(gw, hl_tensor_grad(xc[i]), hl_tensor_grad(xd[i]), tol);
  }
  hl_pool_pop();
}

static void test_ops_by_dtype(void **state) {
  (void)state;
  for (size_t c = 0; c < NCASES; c++)
    for (int k = 0; k < 4; k++) run_case(&cases[c], floats[k], HL_DTYPE_NONE);
}

static void test_ops_in_autocast(void **state) {
  (void)state;
  for (size_t c = 0; c < NCASES; c++) {
    run_case(&cases[c], HL_F32, HL_F16);
    run_case(&cases[c], HL_F32, HL_BF16);
    run_case(&cases[c], HL_F64, HL_F16); /* f64 passes through */
  }
}

/* ------------------------------------------------- autocast on CUDA -- */

static void test_autocast_policy_on_device(void **state) {
  (void)state;
  hl_pool_push();
  pair a = leaf(HL_SHAPE(8, 8), HL_F32, -1, 1, 1, true), b = leaf(HL_SHAPE(8, 8), HL_F32, -1, 1, 2, true);
  pair t = indices(HL_SHAPE(8), 8, 3);
  const hl_dtype def = hl_autocast_default_dtype(twin_device);
  if (twin_device == HL_DEVICE_CUDA) assert_int_equal(def, HL_F16); /* CUDA's default lower precision */
  HL_AUTOCAST(twin_device, HL_AUTOCAST_DEFAULT, true) {
    hl_tensor *e = hl_tmp(hl_mm(a.dev, b.dev));
    assert_non_null(e);
    assert_int_equal(e->dtype, def);
    assert_int_equal(e->device, twin_device);
    hl_tensor *f = hl_tmp(hl_mm(a.dev, e)); /* f32 x f16 inside: lower precision */
    assert_non_null(f);
    assert_int_equal(f->dtype, def);
    hl_tensor *s = hl_tmp(hl_softmax(e)); /* fp32 policy */
    assert_non_null(s);
    assert_int_equal(s->dtype, HL_F32);
    hl_tensor *loss = hl_tmp(hl_cross_entropy(f, t.dev));
    assert_non_null(loss);
    assert_int_equal(loss->dtype, HL_F32);
    HL_AUTOCAST(twin_device, HL_AUTOCAST_DEFAULT, false) {
      hl_tensor *g = hl_mm(a.dev, e); /* disabled inside: mixed dtypes are refused */
      assert_null(g);
      assert_non_null(strstr(hl_error(), "f32"));
      assert_non_null(strstr(hl_error(), hl_dtype_name(def)));
    }
    assert_true(hl_backward(loss, NULL, false));
  }
  /* backward ran in the dtype autocast chose; the f32 leaves get f32 gradients */
  assert_non_null(hl_tensor_grad(a.dev));
  assert_int_equal(hl_tensor_grad(a.dev)->dtype, HL_F32);
  assert_int_equal(hl_tensor_grad(a.dev)->device, twin_device);
  /* outside any region: mm(f32, f16) is refused naming both dtypes */
  hl_tensor *h = hl_tmp(hl_detach(hl_tmp(hl_to_dtype(b.dev, HL_F16))));
  assert_null(hl_mm(a.dev, h));
  assert_non_null(strstr(hl_error(), "f32"));
  assert_non_null(strstr(hl_error(), "f16"));
  hl_pool_pop();
}

/* ---------------------------------------------------------- errors -- */

static void test_bad_input_on_device(void **state) {
  (void)state;
  hl_pool_push();
  pair x = leaf(HL_SHAPE(4, 10), HL_F32, -1, 1, 5, false);
  int32_t tv[4] = {1, 2, 10, -1};
  hl_tensor *t = hl_tmp(hl_from_i32(HL_SHAPE(4), tv, HL_I32, twin_device));
  assert_null(hl_cross_entropy(x.dev, t));
  assert_non_null(strstr(hl_error(), "2 of 4 targets are outside [0, 10)"));
  int32_t iv[3] = {0, 20, 3};
  hl_tensor *idx = hl_tmp(hl_from_i32(HL_SHAPE(3), iv, HL_I32, twin_device));
  pair w = leaf(HL_SHAPE(20, 5), HL_F32, -1, 1, 6, false);
  assert_null(hl_embedding(w.dev, idx));
  assert_non_null(strstr(hl_error(), "1 of 3 indices are outside [0, 20)"));
  /* and a good call afterwards works (the counts are set per call, not added) */
  int32_t ok[3] = {0, 19, 3};
  hl_tensor *idx2 = hl_tmp(hl_from_i32(HL_SHAPE(3), ok, HL_I32, twin_device));
  assert_non_null(hl_tmp(hl_embedding(w.dev, idx2)));
  int32_t tv2[4] = {1, 2, 9, 0};
  assert_non_null(hl_tmp(hl_cross_entropy(x.dev, hl_tmp(hl_from_i32(HL_SHAPE(4), tv2, HL_I32, twin_device)))));
  hl_pool_pop();
}

/* ------------------------------------------------------------ GEMMs -- */

static void test_gemm_edges(void **state) {
  (void)state;
  hl_pool_push();
  for (int k = 0; k < 4; k++) {
    const hl_dtype t = floats[k];
    /* k = 0: zeros, or the bias */
    pair x0 = leaf(HL_SHAPE(3, 0), t, -1, 1, 7, false), w0 = leaf(HL_SHAPE(4, 0), t, -1, 1, 8, false);
    pair b = leaf(HL_SHAPE(4), t, -1, 1, 9, false);
    expect_close("mm with k = 0", hl_tmp(hl_mm(x0.cpu, hl_tmp(hl_transpose(w0.cpu, 0, 1)))),
                 hl_tmp(hl_mm(x0.dev, hl_tmp(hl_transpose(w0.dev, 0, 1)))), 0);
    expect_close("linear with k = 0", hl_tmp(hl_linear(x0.cpu, w0.cpu, b.cpu)), hl_tmp(hl_linear(x0.dev, w0.dev, b.dev)),
                 0);
    /* an empty batch of non-empty matrices */
    pair e1 = leaf(HL_SHAPE(0, 3, 5), t, -1, 1, 10, false), e2 = leaf(HL_SHAPE(0, 5, 4), t, -1, 1, 11, false);
    hl_tensor *eb = hl_tmp(hl_bmm(e1.dev, e2.dev));
    assert_non_null(eb);
    assert_int_equal(hl_numel(eb), 0);
    /* a sliced (padded rows) operand and a bigger product, f16/bf16 on tensor cores */
    pair big = leaf(HL_SHAPE(130, 300), t, -1, 1, 12, false), w = leaf(HL_SHAPE(257, 200), t, -1, 1, 13, false);
    hl_tensor *ac = hl_tmp(hl_slice(big.cpu, 1, 50, 250)), *ad = hl_tmp(hl_slice(big.dev, 1, 50, 250));
    expect_close("mm of a sliced operand and a transposed weight",
                 hl_tmp(hl_mm(ac, hl_tmp(hl_transpose(w.cpu, 0, 1)))), hl_tmp(hl_mm(ad, hl_tmp(hl_transpose(w.dev, 0, 1)))),
                 tol_for(t));
  }
  hl_pool_pop();
}

/* ------------------------------------------------- second derivatives -- */

static hl_tensor *penalty_loss(hl_tensor *x, hl_tensor *w1, hl_tensor *w2, hl_tensor *tg) {
  hl_tensor *h = hl_tmp(hl_gelu(hl_tmp(hl_linear(x, w1, NULL))));
  hl_tensor *loss = hl_tmp(hl_cross_entropy(hl_tmp(hl_linear(h, w2, NULL)), tg));
  hl_tensor *params[2] = {w1, w2}, *g[2] = {NULL, NULL};
  if (!hl_autograd_grad(&loss, 1, NULL, params, 2, g, (hl_grad_opts){.retain_graph = true, .create_graph = true}))
    return NULL;
  hl_tmp(g[0]);
  hl_tmp(g[1]);
  hl_tensor *pen = hl_tmp(hl_add(hl_tmp(hl_sum(hl_tmp(hl_pow(g[0], 2)))), hl_tmp(hl_sum(hl_tmp(hl_pow(g[1], 2))))));
  return hl_add(loss, pen);
}

static void test_gradient_penalty(void **state) {
  (void)state;
  for (int k = 0; k < 2; k++) {
    const hl_dtype t = floats[k];
    hl_pool_push();
    pair x = leaf(HL_SHAPE(8, 6), t, -1, 1, 21, false), w1 = leaf(HL_SHAPE(12, 6), t, -0.5, 0.5, 22, true),
         w2 = leaf(HL_SHAPE(5, 12), t, -0.5, 0.5, 23, true);
    pair tg = indices(HL_SHAPE(8), 5, 24);
    hl_tensor *lc = hl_tmp(penalty_loss(x.cpu, w1.cpu, w2.cpu, tg.cpu));
    hl_tensor *ld = hl_tmp(penalty_loss(x.dev, w1.dev, w2.dev, tg.dev));
    expect_close("gradient penalty: loss", lc, ld, tol_for(t));
    assert_true(hl_backward(lc, NULL, false) && hl_backward(ld, NULL, false));
    expect_close("gradient penalty: d/dw1", hl_tensor_grad(w1.cpu), hl_tensor_grad(w1.dev), tol_for(t));
    expect_close("gradient penalty: d/dw2", hl_tensor_grad(w2.cpu), hl_tensor_grad(w2.dev), tol_for(t));
    hl_pool_pop();
  }
}

/* ------------------------------------------------------- a GPT block -- */

typedef struct {
  hl_tensor *wte, *wpe, *ln_w, *ln_b, *qkv_w, *qkv_b, *proj_w, *fc_w, *fc_b, *out_w;
} block;

enum { B = 2, T = 16, C = 32, H = 4, V = 50 };

static hl_tensor *block_loss(const block *m, hl_tensor *tok, hl_tensor *pos, hl_tensor *tg) {
  hl_tensor *x = hl_tmp(hl_add(hl_tmp(hl_embedding(m->wte, tok)), hl_tmp(hl_embedding(m->wpe, pos)))); /* [B,T,C] */
  hl_tensor *h = hl_tmp(hl_layer_norm(x, m->ln_w, m->ln_b, 1e-5));
  hl_tensor *qkv = hl_tmp(hl_linear(h, m->qkv_w, m->qkv_b)); /* [B,T,3C] */
  hl_tensor *parts[3];
  if (!hl_split(qkv, 2, 3, parts)) return NULL;
  for (int i = 0; i < 3; i++) hl_tmp(parts[i]);
  hl_tensor *q = hl_tmp(hl_split_heads(parts[0], H)), *k = hl_tmp(hl_split_heads(parts[1], H)),
            *v = hl_tmp(hl_split_heads(parts[2], H)); /* [B,H,T,C/H] */
  hl_tensor *att = hl_tmp(hl_mul_scalar(hl_tmp(hl_matmul(q, hl_tmp(hl_transpose(k, -1, -2)))), 1.0 / sqrt(C / H)));
  att = hl_tmp(hl_softmax(hl_tmp(hl_causal_mask(att, -INFINITY))));
  hl_tensor *y = hl_tmp(hl_merge_heads(hl_tmp(hl_matmul(att, v))));
  x = hl_tmp(hl_add(x, hl_tmp(hl_linear(y, m->proj_w, NULL))));
  hl_tensor *f = hl_tmp(hl_gelu(hl_tmp(hl_linear(hl_tmp(hl_layer_norm(x, NULL, NULL, 1e-5)), m->fc_w, m->fc_b))));
  hl_tensor *logits = hl_tmp(hl_linear(f, m->out_w, NULL)); /* [B,T,V] */
  return hl_cross_entropy(hl_tmp(hl_reshape(logits, HL_SHAPE(B * T, V))), tg);
}

static void test_gpt_block(void **state) {
  (void)state;
  for (int variant = 0; variant < 3; variant++) { /* f32, autocast f16, autocast bf16 */
    hl_pool_push();
    const hl_dtype lower = variant == 0 ? HL_DTYPE_NONE : variant == 1 ? HL_F16 : HL_BF16;
    const hl_shape shapes[10] = {S(V, C), S(T, C), S(C), S(C), S(3 * C, C), S(3 * C), S(C, C), S(4 * C, C), S(4 * C),
                                 S(V, 4 * C)};
    pair p[10];
    for (int i = 0; i < 10; i++) p[i] = leaf(shapes[i], HL_F32, -0.3, 0.3, 30 + (uint64_t)i, true);
    block mc = {p[0].cpu, p[1].cpu, p[2].cpu, p[3].cpu, p[4].cpu, p[5].cpu, p[6].cpu, p[7].cpu, p[8].cpu, p[9].cpu};
    block md = {p[0].dev, p[1].dev, p[2].dev, p[3].dev, p[4].dev, p[5].dev, p[6].dev, p[7].dev, p[8].dev, p[9].dev};
    pair tok = indices(HL_SHAPE(B, T), V, 41), tg = indices(HL_SHAPE(B * T), V, 42);
    int32_t pv[B * T];
    for (int i = 0; i < B * T; i++) pv[i] = i % T;
    pair pos = {hl_tmp(hl_from_i32(HL_SHAPE(B, T), pv, HL_I32, HL_DEVICE_CPU)),
                hl_tmp(hl_from_i32(HL_SHAPE(B, T), pv, HL_I32, twin_device))};
    hl_tensor *lc = NULL, *ld = NULL;
    if (lower == HL_DTYPE_NONE) {
      lc = hl_tmp(block_loss(&mc, tok.cpu, pos.cpu, tg.cpu));
      ld = hl_tmp(block_loss(&md, tok.dev, pos.dev, tg.dev));
    } else {
      HL_AUTOCAST(HL_DEVICE_CPU, lower, true) { lc = hl_tmp(block_loss(&mc, tok.cpu, pos.cpu, tg.cpu)); }
      HL_AUTOCAST(twin_device, lower, true) { ld = hl_tmp(block_loss(&md, tok.dev, pos.dev, tg.dev)); }
    }
    const double tol = tol_for(lower == HL_DTYPE_NONE ? HL_F32 : lower);
    expect_close("GPT block: loss", lc, ld, tol);
    assert_true(hl_backward(lc, NULL, false) && hl_backward(ld, NULL, false));
    for (int i = 0; i < 10; i++) {
      char what[64];
      snprintf(what, sizeof what, "GPT block (%s): gradient of parameter %d",
               lower == HL_DTYPE_NONE ? "f32" : hl_dtype_name(lower), i);
      expect_close(what, hl_tensor_grad(p[i].cpu), hl_tensor_grad(p[i].dev), tol);
    }
    hl_pool_pop();
  }
}

/* ---------------------------------------------------------- examples -- */

static void run_example(const char *prog, const char *expect_a, const char *expect_b) {
  const char *dev = hl_device_kind_name(twin_device);
  hl_run_result r = hl_run_ok("'%s' --device %s", hl_test_prog(prog), dev);
  if (!hl_has_line(r.out, expect_a, expect_b))
    fail_msg("%s --device %s: no line with \"%s\" and \"%s\"", prog, dev, expect_a, expect_b);
  hl_run_free(&r);
}

static void test_examples_on_device(void **state) {
  (void)state;
  char f16[32], f32[32], def[32];
  const char *dev = hl_device_kind_name(twin_device);
  snprintf(f16, sizeof f16, "f16 %s", dev);
  snprintf(f32, sizeof f32, "f32 %s", dev);
  snprintf(def, sizeof def, "%s %s", hl_dtype_name(hl_autocast_default_dtype(twin_device)), dev);
  run_example("autocast-matrix", "in autocast:  f = mm(d_f32, e_f16)", f16);
  run_example("autocast-matrix", "out autocast: g = mm(d_f32, to_f32(f_f16))", f32);
  run_example("autocast-matrix", twin_device == HL_DEVICE_CUDA ? "default (cuda)" : "default (cpu)", def);
  run_example("autocast-nested", "enabled again: g = mm(d_f32, f_f32)", f16);
  run_example("autocast-model", "decorated forward: logits", def);
  run_example("autocast-model", "gradient of the fp32 weight w1", f32);
  run_example("custom-op", "gradient of a", "matches the fp32 reference");
  /* threads of one process on the device: autocast only where a thread enters it */
  run_example("dp-threads", "main thread, all 64 rows: output", def);
  run_example("dp-threads", "thread 1, rows 32-63: output", f32);
  run_example("dp-threads", "thread 1, rows 32-63: output", def);
  run_example("dp-threads", "fc1.weight: threaded vs single-thread step", "of its largest |element|");
}

/* halflab-bench mlp-step on the device: validated against the direct
 * cuBLAS step (else exit 1), a CSV row per side, the ratio as INFO */
static void test_mlp_step_on_device(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  const char *dev = hl_device_kind_name(twin_device);
  hl_run_result r = hl_run_ok("'%s' mlp-step --device %s --batch 64 --reps 3 --quick --out '%s'",
                              hl_test_prog("halflab-bench"), dev, dir);
  assert_non_null(strstr(r.out, "core / direct:"));
  hl_run_free(&r);
  hl_table *t = hl_table_read(hl_path(dir, "mlp_step.csv"));
  assert_non_null(t);
  assert_int_equal(t->nrows, 4); /* direct and core, fp32 and bf16 (bf16 measured on the CPU only) */
  for (int i = 0; i < 4; i++) {
    assert_string_equal(hl_table_get(t, i, "device"), dev);
    if (!strcmp(hl_table_get(t, i, "precision"), "fp32")) assert_true(hl_table_num(t, i, "time_ms_median") > 0);
  }
  hl_table_free(t);
  assert_true(hl_file_exists(hl_path(dir, "mlp_step_expectations.csv")));
  hl_rmtree(dir);
  free(dir);
}

int main(void) {
  twin_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ops_by_dtype),
      cmocka_unit_test(test_ops_in_autocast),
      cmocka_unit_test(test_autocast_policy_on_device),
      cmocka_unit_test(test_bad_input_on_device),
      cmocka_unit_test(test_gemm_edges),
      cmocka_unit_test(test_gradient_penalty),
      cmocka_unit_test(test_gpt_block),
      cmocka_unit_test(test_examples_on_device),
      cmocka_unit_test(test_mlp_step_on_device),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
