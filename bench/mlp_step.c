/* mlp_step.c — halflab-bench mlp-step: what the AMP core costs on top of
 * the arithmetic it runs. One training step of an MLP 784-1024-1024-10
 * (ReLU, mean cross-entropy, batch 256, fp32) through the core — ops,
 * autograd tape, backward engine — against the same arithmetic written by
 * hand, measured in the same run. Expected (CPU): the core costs at
 * most 1.25x the hand-written step.
 *
 *   CPU   the hand-written step is direct sgemm calls and plain loops, on
 *         the same threads; wall-clock timing.
 *   CUDA  the hand-written step is the same cuBLAS calls through
 *         backend->gemm and the same tensor kernels (bias rows, ReLU and
 *         its backward, fused cross-entropy, column sums) called directly
 *         on device buffers: what the core adds is dispatch, allocation,
 *         the tape and the backward engine. Timed with CUDA events; both
 *         sides read the loss back to the host once per step (the core also
 *         reads its bad-target count), so both end on a synchronisation.
 *         The ratio is reported (INFO), the 1.25x expectation being the CPU's.
 *
 * A step is forward, loss, backward (every weight and bias gradient) and a
 * plain SGD update; the update is the same code on both sides (the
 * optimizers are timed elsewhere). Before anything is timed, one step of
 * each from the same weights is compared: loss and every gradient must
 * agree to 1e-4 relative, else the run stops with exit status 1 and no CSV.
 *
 * bf16 (CPU, where the core's bf16 products run on oneDNN's matmul): the
 * same MLP through the core under bf16 autocast, against the arithmetic
 * autocast gives it written by hand. Per step, as the core does it: the f32
 * weights, biases and input cast to bf16 (the library's conversion,
 * kernels/host.h); each linear a bf16 output holding the bias
 * rows, onto which oneDNN's bf16 matmul accumulates (fp32 sums, one
 * rounding to bf16, as the core's GEMM with beta 1); ReLU on the bf16
 * values; the bf16 logits widened to f32 for the cross-entropy (fp32
 * policy); its f32 gradient rounded to bf16 (the cast's backward); the
 * backward's products bf16 x bf16 -> bf16 on oneDNN, the bias gradients
 * summed in f32 and rounded to bf16; every gradient widened to f32 (the
 * weights' casts' backward) for the same f32 SGD update. The direct side's
 * matmul primitives are made before timing and called through oneDNN's own
 * dnnl_primitive_execute (kernels/gemm_reference.h, as halflab-bench
 * gemm's onednn-bf16 reference). Before timing, one forward and backward of
 * each from the same weights: the loss within 2^-8 relative (bf16's unit
 * roundoff) and every gradient within 2^-6 of its tensor's max |g| (4 bf16
 * roundings: the two sides' f32 cross-entropy and bias sums differ in their
 * last bits, which can move a bf16 rounding by one ulp), else exit 1.
 * Where the core's bf16 products do not run on oneDNN (oneDNN not built in,
 * HALFLAB_CPU_UNITS=portable, no AVX512-BF16 / AMX-BF16, or a GPU run) the
 * bf16 rows are written as not run, with the reason.
 */
#include <getopt.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "cli/cli.h"
#include "cli/csv.h"
#include "core/base/error.h"
#include "core/engine/ops.h"
#include "core/engine/tensor.h"
#include "bench/bench.h"
#include "formats/half.h"
#include "kernels/gemm.h"
#include "kernels/gemm_reference.h"
#include "kernels/host.h"
#include "kernels/tensor_kernels.h"

static const char usage[] =
    "Usage: halflab-bench mlp-step [OPTIONS]\n"
    "\n"
    "One training step (forward, cross-entropy, backward, SGD) of an MLP 784-1024-1024-10, batch 256,\n"
    "fp32: the AMP core against the same arithmetic as direct sgemm calls (CPU) or direct cuBLAS and\n"
    "kernel calls (CUDA), in the same run; and on the CPU under bf16 autocast: the core against the same\n"
    "arithmetic as direct oneDNN bf16 matmuls and plain loops (where oneDNN runs the core's bf16\n"
    "products). Writes mlp_step.csv and mlp_step_expectations.csv (expected on the CPU: core / direct\n"
    "at most 1.25, fp32 and bf16; on a GPU the fp32 ratio is reported).\n"
    "\n"
    "Options:\n"
    "  --batch N       batch size (default 256)\n"
    "  --reps N        timed samples per side (default: adaptive)\n"
    "  --device D      auto (the GPU when there is one), cpu or cuda\n"
    "  --out DIR       output folder (default results/<machine>/)\n"
    "  --quick         shorter timing\n"
    "  --seed N        weight and data seed (default 1)\n"
    "  --help, --version\n";

enum { IN = 784, H1 = 1024, H2 = 1024, OUT = 10, LAYERS = 3 };
static const int fan_in[LAYERS] = {IN, H1, H2}, fan_out[LAYERS] = {H1, H2, OUT};
static const float lr = 0.01f;

/* -------------------------------------------------- the shared update -- */

static void sgd(float *p, const float *g, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 32768)
  for (int64_t i = 0; i < n; i++) p[i] -= lr * g[i];
}

/* The same update on a GPU, by the tensor kernels: g *= lr, then p -= g
 * (g is a gradient about to be dropped). */
static void sgd_device(const struct hl_tensor_kernels *k, float *p, float *g, int64_t n) {
  const int64_t size[HL_MAX_DIMS] = {1, 1, 1, n};
  hl_kview pv = {p, HL_F32, {0, 0, 0, 1}}, gv = {g, HL_F32, {0, 0, 0, 1}};
  k->unary(HL_UN_MUL_SCALAR, HL_F32, n, g, g, lr);
  k->binary(HL_BIN_SUB, &pv, &pv, &gv, size);
}

/* ----------------------------------------------------------- the core -- */

typedef struct {
  int batch;
  const hl_backend *be; /* NULL on the CPU */
  bool bf16_autocast;   /* the forward under bf16 autocast; else fp32, no region */
  hl_tensor *x, *t, *w[LAYERS], *b[LAYERS];
  double loss;
} core_mlp;

static hl_tensor *core_loss(const core_mlp *m) {
  hl_tensor *h = m->x;
  for (int l = 0; l < LAYERS; l++) {
    h = hl_tmp(hl_linear(h, m->w[l], m->b[l]));
    if (l < LAYERS - 1) h = hl_tmp(hl_relu(h));
  }
  return hl_tmp(hl_cross_entropy(h, m->t));
}

/* forward, loss and backward: the gradients in each parameter's .grad */
static void core_forward_backward(core_mlp *m) {
  hl_pool_push();
  hl_tensor *loss = NULL;
  if (!m->bf16_autocast) loss = core_loss(m);
  else HL_AUTOCAST(HL_DEVICE_CPU, HL_BF16, true) { loss = core_loss(m); }
  if (!loss || !hl_backward(loss, NULL, false)) hl_fatal("mlp-step: core step failed: %s", hl_error());
  m->loss = hl_item(loss);
  hl_pool_pop();
}

static void core_update(core_mlp *m) {
  /* the update, then "zero_grad" as set-to-none: the next backward stores fresh gradients */
  for (int l = 0; l < LAYERS; l++) {
    hl_tensor *params[2] = {m->w[l], m->b[l]};
    for (int k = 0; k < 2; k++) {
      if (m->be) sgd_device(m->be->tensor, hl_tensor_data(params[k]), hl_tensor_data(hl_tensor_grad(params[k])),
                            hl_numel(params[k]));
      else sgd(hl_tensor_data(params[k]), hl_tensor_data(hl_tensor_grad(params[k])), hl_numel(params[k]));
      hl_tensor_mark_modified(params[k]);
      hl_zero_grad(params[k]);
    }
  }
}

static void core_step(void *p, long it) {
  (void)it;
  core_forward_backward(p);
  core_update(p);
}

/* ------------------------------------------------- the direct version -- */

typedef struct {
  int batch;
  const hl_backend *be; /* NULL on the CPU; else every array below is device memory */
  float *x;
  int32_t *t;
  float *w[LAYERS], *b[LAYERS], *dw[LAYERS], *db[LAYERS];
  float *a[LAYERS + 1]; /* a[0] = x, a[1], a[2] relu outputs, a[3] logits */
  float *d[LAYERS + 1]; /* gradients of the same */
  float *g[LAYERS + 1]; /* CUDA: gradients through the ReLUs */
  float *loss_dev, *row_loss, *lse, *one; /* CUDA: cross-entropy's outputs and dloss = 1 */
  int32_t *bad;
  double loss;
} direct_mlp;

static void direct_step(void *p, long it) {
  (void)it;
  direct_mlp *m = p;
  const int B = m->batch;
  /* forward: a[l+1] = act(a[l] W^T + b) */
  for (int l = 0; l < LAYERS; l++) {
    const int k = fan_in[l], n = fan_out[l];
    float *y = m->a[l + 1];
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B; r++) memcpy(y + (size_t)r * n, m->b[l], sizeof(float) * (size_t)n);
    hl_blas()->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, n, k, 1.0f, m->a[l], k, m->w[l], k, 1.0f, y, n);
    if (l < LAYERS - 1) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < (int64_t)B * n; i++) y[i] = y[i] > 0 ? y[i] : 0;
    }
  }
  /* loss and d logits = (softmax - onehot) / B */
  double loss = 0;
  float *logits = m->a[LAYERS], *dl = m->d[LAYERS];
  for (int r = 0; r < B; r++) {
    const float *z = logits + r * OUT;
    float mx = z[0], s = 0;
    for (int c = 1; c < OUT; c++) mx = z[c] > mx ? z[c] : mx;
    for (int c = 0; c < OUT; c++) s += expf(z[c] - mx);
    float lse = mx + logf(s);
    loss += lse - z[m->t[r]];
    for (int c = 0; c < OUT; c++) dl[r * OUT + c] = (expf(z[c] - lse) - (c == m->t[r])) / (float)B;
  }
  m->loss = loss / B;
  /* backward */
  for (int l = LAYERS - 1; l >= 0; l--) {
    const int k = fan_in[l], n = fan_out[l];
    float *dy = m->d[l + 1];
    if (l < LAYERS - 1) {
      const float *y = m->a[l + 1];
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < (int64_t)B * n; i++) dy[i] = y[i] > 0 ? dy[i] : 0;
    }
    hl_blas()->sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, k, B, 1.0f, dy, n, m->a[l], k, 0.0f, m->dw[l], k);
    /* bias gradient: column sums, rows streamed through a block of accumulators */
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < n; c0 += 256) {
      const int w = n - c0 < 256 ? n - c0 : 256;
      float acc[256] = {0};
      for (int r = 0; r < B; r++)
        for (int c = 0; c < w; c++) acc[c] += dy[(size_t)r * n + c0 + c];
      memcpy(m->db[l] + c0, acc, sizeof(float) * (size_t)w);
    }
    if (l > 0)
      hl_blas()->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, k, n, 1.0f, dy, n, m->w[l], k, 0.0f, m->d[l], k);
  }
  for (int l = 0; l < LAYERS; l++) {
    sgd(m->w[l], m->dw[l], (int64_t)fan_out[l] * fan_in[l]);
    sgd(m->b[l], m->db[l], fan_out[l]);
  }
}

/* The same step on a GPU: cuBLAS through backend->gemm (row-major
 * descriptors of the CPU's cblas calls, fp32 accumulation without tf32, as
 * the core's mm/linear ask), the rest by the tensor kernels. */
/* One product of a step as the core's mm/linear describe it to the GEMM
 * (row-major; W^T and dY^T as transpose flags), A, B and C of type t with
 * fp32 accumulation: the fp32 step's on cuBLAS, the bf16 step's on oneDNN */
static hl_gemm_desc product_desc(hl_dtype t, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *a,
                                 int64_t lda, const void *b, int64_t ldb, float beta, void *c, int64_t ldc) {
  hl_gemm_desc d;
  memset(&d, 0, sizeof d);
  d.trans_a = ta, d.trans_b = tb;
  d.m = m, d.n = n, d.k = k, d.batch = 1;
  d.a_type = d.b_type = d.c_type = t;
  d.compute = HL_COMPUTE_F32;
  d.alpha = 1.0f, d.beta = beta;
  d.a = a, d.lda = lda, d.b = b, d.ldb = ldb, d.c = c, d.ldc = ldc;
  d.a_scale = d.b_scale = 1.0f;
  return d;
}

static void gemm(const direct_mlp *m, bool ta, bool tb, int64_t rows, int64_t cols, int64_t inner, const float *a,
                 int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  const hl_gemm_desc d = product_desc(HL_F32, ta, tb, rows, cols, inner, a, lda, b, ldb, beta, c, ldc);
  m->be->gemm->gemm(&d);
}

static void direct_step_device(void *p, long it) {
  (void)it;
  direct_mlp *m = p;
  const struct hl_tensor_kernels *k = m->be->tensor;
  const int B = m->batch;
  for (int l = 0; l < LAYERS; l++) {
    const int in = fan_in[l], n = fan_out[l];
    float *y = m->a[l + 1];
    const int64_t rows[HL_MAX_DIMS] = {1, 1, B, n};
    hl_kview yv = {y, HL_F32, {0, 0, n, 1}}, bv = {m->b[l], HL_F32, {0, 0, 0, 1}};
    k->copy(&yv, &bv, rows);
    gemm(m, false, true, B, n, in, m->a[l], in, m->w[l], in, 1.0f, y, n);
    if (l < LAYERS - 1) k->unary(HL_UN_RELU, HL_F32, (int64_t)B * n, y, y, 0);
  }
  float *logits = m->a[LAYERS];
  k->cross_entropy(HL_F32, m->loss_dev, m->row_loss, m->lse, logits, m->t, B, OUT, m->bad);
  k->cross_entropy_backward(HL_F32, m->d[LAYERS], logits, m->t, m->lse, m->one, B, OUT);
  for (int l = LAYERS - 1; l >= 0; l--) {
    const int in = fan_in[l], n = fan_out[l];
    float *dy = m->d[l + 1];
    if (l < LAYERS - 1) {
      k->unary_grad(HL_GRAD_RELU, HL_F32, (int64_t)B * n, m->g[l + 1], dy, m->a[l + 1]);
      dy = m->g[l + 1];
    }
    gemm(m, true, false, n, in, B, dy, n, m->a[l], in, 0.0f, m->dw[l], in);
    k->sum(HL_F32, m->db[l], dy, 1, B, n, 1.0);
    if (l > 0) gemm(m, false, false, B, in, n, dy, n, m->w[l], in, 0.0f, m->d[l], in);
  }
  for (int l = 0; l < LAYERS; l++) {
    sgd_device(k, m->w[l], m->dw[l], (int64_t)fan_out[l] * fan_in[l]);
    sgd_device(k, m->b[l], m->db[l], fan_out[l]);
  }
  float loss;
  m->be->copy_to_host(&loss, m->loss_dev, sizeof loss); /* as the core's hl_item */
  m->loss = loss;
}

/* --------------------------------------------- the direct bf16 version -- */


/* forward: y = x W^T + y (y holds the bias rows) */
static hl_gemm_desc forward_product(int l, int B, const void *x, const void *w, void *y) {
  return product_desc(HL_BF16, false, true, B, fan_out[l], fan_in[l], x, fan_in[l], w, fan_in[l], 1.0f, y, fan_out[l]);
}
/* dW = dY^T x */
static hl_gemm_desc weight_grad_product(int l, int B, const void *dy, const void *x, void *dw) {
  return product_desc(HL_BF16, true, false, fan_out[l], fan_in[l], B, dy, fan_out[l], x, fan_in[l], 0.0f, dw, fan_in[l]);
}
/* dX = dY W */
static hl_gemm_desc input_grad_product(int l, int B, const void *dy, const void *w, void *dx) {
  return product_desc(HL_BF16, false, false, B, fan_in[l], fan_out[l], dy, fan_out[l], w, fan_in[l], 0.0f, dx, fan_in[l]);
}

/* Whether the core's bf16 step runs its products on oneDNN here, which the
 * direct side calls; false and why not (oneDNN not built in,
 * HALFLAB_CPU_UNITS=portable, no bf16 unit, a layout it lacks). */
static bool bf16_step_runs(int B, char *why, size_t len) {
  for (int l = 0; l < LAYERS; l++) {
    hl_gemm_desc d[3] = {forward_product(l, B, NULL, NULL, NULL), weight_grad_product(l, B, NULL, NULL, NULL),
                         input_grad_product(l, B, NULL, NULL, NULL)};
    for (int k = 0; k < (l > 0 ? 3 : 2); k++) {
      char what[200];
      if (!hl_onednn_gemm_describe(&d[k], what, sizeof what)) {
        snprintf(why, len, "the core's bf16 products do not run on oneDNN here: %s", what);
        return false;
      }
    }
  }
  return true;
}

#ifdef HL_HAVE_ONEDNN
/* The library's f32 <-> bf16 array conversions, split among the threads as the core's copies are */
enum { CONVERT_CHUNK = 16384 };

static void narrow_bf16(const float *src, hl_bf16 *dst, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= 32768)
  for (int64_t lo = 0; lo < n; lo += CONVERT_CHUNK)
    hl_cpu_narrow_bf16(src + lo, dst + lo, (size_t)(n - lo < CONVERT_CHUNK ? n - lo : CONVERT_CHUNK));
}

static void widen_bf16(const hl_bf16 *src, float *dst, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= 32768)
  for (int64_t lo = 0; lo < n; lo += CONVERT_CHUNK)
    hl_cpu_widen_bf16(src + lo, dst + lo, (size_t)(n - lo < CONVERT_CHUNK ? n - lo : CONVERT_CHUNK));
}

typedef struct {
  int batch;
  int32_t *t;
  float *x, *w[LAYERS], *b[LAYERS], *dw[LAYERS], *db[LAYERS]; /* f32: input, weights, their gradients */
  hl_bf16 *xb, *wb[LAYERS], *bb[LAYERS];                      /* their bf16 casts, made every step */
  hl_bf16 *a[LAYERS + 1];  /* a[0] = xb, a[1], a[2] the ReLUs' outputs, a[3] the logits */
  hl_bf16 *d[LAYERS + 1];  /* the gradients of the same (d[0] unused: x needs none) */
  hl_bf16 *dwb[LAYERS], *dbb[LAYERS]; /* the weight and bias gradients as the products and sums give them */
  float *logits, *dlogits;            /* f32: the cross-entropy's input and gradient */
  hl_onednn_direct fwd[LAYERS], dweight[LAYERS], dinput[LAYERS]; /* dinput[0] unused */
  double loss;
} direct_bf16_mlp;

/* oneDNN's own calls only: the primitive on the buffers it was made for */
static void run_product(hl_onednn_direct *r) {
  dnnl_status_t st = dnnl_primitive_execute(r->primitive, r->stream, r->nargs, r->args);
  if (st == dnnl_success) st = dnnl_stream_wait(r->stream);
  if (st != dnnl_success)
    hl_fatal("mlp-step: oneDNN matmul of the direct bf16 step (%s): %s", r->what, dnnl_status2str(st));
}

/* tensor_math.h's ReLU and its gradient on bf16 values (exact: nothing to round) */
static inline hl_bf16 relu_bf16(hl_bf16 y) {
  const float f = hl_bf16_to_f32(y);
  return f > 0 || f != f ? y : 0;
}

static void direct_bf16_forward_backward(direct_bf16_mlp *m) {
  const int B = m->batch;
  /* autocast's casts: the input and every weight and bias to bf16 */
  narrow_bf16(m->x, m->xb, (int64_t)B * IN);
  for (int l = 0; l < LAYERS; l++) {
    narrow_bf16(m->w[l], m->wb[l], (int64_t)fan_out[l] * fan_in[l]);
    narrow_bf16(m->b[l], m->bb[l], fan_out[l]);
  }
  for (int l = 0; l < LAYERS; l++) {
    const int n = fan_out[l];
    hl_bf16 *y = m->a[l + 1];
#pragma omp parallel for schedule(static)
    for (int r = 0; r < B; r++) memcpy(y + (size_t)r * n, m->bb[l], sizeof(hl_bf16) * (size_t)n);
    run_product(&m->fwd[l]);
    if (l < LAYERS - 1) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < (int64_t)B * n; i++) y[i] = relu_bf16(y[i]);
    }
  }
  /* the cross-entropy in f32 on the widened logits (fp32 policy), its gradient rounded to bf16 (the cast's backward) */
  widen_bf16(m->a[LAYERS], m->logits, (int64_t)B * OUT);
  double loss = 0;
  for (int r = 0; r < B; r++) {
    const float *z = m->logits + r * OUT;
    float mx = z[0], s = 0;
    for (int c = 1; c < OUT; c++) mx = z[c] > mx ? z[c] : mx;
    for (int c = 0; c < OUT; c++) s += expf(z[c] - mx);
    const float lse = mx + logf(s);
    loss += lse - z[m->t[r]];
    for (int c = 0; c < OUT; c++) m->dlogits[r * OUT + c] = (expf(z[c] - lse) - (c == m->t[r])) / (float)B;
  }
  m->loss = loss / B;
  narrow_bf16(m->dlogits, m->d[LAYERS], (int64_t)B * OUT);
  for (int l = LAYERS - 1; l >= 0; l--) {
    const int n = fan_out[l];
    hl_bf16 *dy = m->d[l + 1];
    if (l < LAYERS - 1) {
      const hl_bf16 *y = m->a[l + 1];
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < (int64_t)B * n; i++) dy[i] = hl_bf16_to_f32(y[i]) > 0 ? dy[i] : 0;
    }
    run_product(&m->dweight[l]);
    /* bias gradient: column sums in f32, rounded to bf16 once */
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < n; c0 += 256) {
      const int w = n - c0 < 256 ? n - c0 : 256;
      float acc[256] = {0};
      for (int r = 0; r < B; r++)
        for (int c = 0; c < w; c++) acc[c] += hl_bf16_to_f32(dy[(size_t)r * n + c0 + c]);
      for (int c = 0; c < w; c++) m->dbb[l][c0 + c] = hl_f32_to_bf16(acc[c]);
    }
    if (l > 0) run_product(&m->dinput[l]);
  }
  /* the weights' casts' backward: the gradients in f32 */
  for (int l = 0; l < LAYERS; l++) {
    widen_bf16(m->dwb[l], m->dw[l], (int64_t)fan_out[l] * fan_in[l]);
    widen_bf16(m->dbb[l], m->db[l], fan_out[l]);
  }
}

static void direct_bf16_update(direct_bf16_mlp *m) {
  for (int l = 0; l < LAYERS; l++) {
    sgd(m->w[l], m->dw[l], (int64_t)fan_out[l] * fan_in[l]);
    sgd(m->b[l], m->db[l], fan_out[l]);
  }
}

static void direct_bf16_step(void *p, long it) {
  (void)it;
  direct_bf16_forward_backward(p);
  direct_bf16_update(p);
}
#endif

/* ---------------------------------------------------------- set-up -- */

static float *host_copy(const hl_tensor *t) {
  float *p = bench_host_alloc(sizeof(float) * (size_t)hl_numel(t), "mlp-step weights");
  if (!hl_read_f32(t, p)) hl_fatal("mlp-step: %s", hl_error());
  return p;
}

/* n floats (or bytes of anything): host memory on the CPU, device memory on a GPU */
static void *buffer(const bench_device *dev, size_t bytes, const char *what) {
  return dev->kind == HL_DEVICE_CPU ? bench_host_alloc(bytes, what) : bench_alloc(dev, bytes, what);
}

static void buffer_free(const bench_device *dev, void *p) {
  if (dev->kind == HL_DEVICE_CPU) free(p);
  else if (p) bench_free(dev, p);
}

/* the direct side's copy of a core tensor, on the same device */
static float *copy_of(const bench_device *dev, const hl_tensor *t) {
  if (dev->kind == HL_DEVICE_CPU) return host_copy(t);
  const size_t bytes = hl_tensor_nbytes(t);
  float *p = bench_alloc(dev, bytes, "mlp-step weights");
  dev->be->copy(p, hl_tensor_data(t), bytes);
  return p;
}

/* The core's side: input, targets (also as a new host array), weights and
 * biases (PyTorch's default Linear init), the same for every seed on every
 * device (Philox). */
static int32_t *core_setup(core_mlp *c, hl_device_kind where, int batch, uint64_t seed) {
  c->batch = batch;
  c->x = hl_randn(HL_SHAPE(batch, IN), 0, 1, seed, 1000, HL_F32, where);
  int32_t *t = bench_host_alloc(sizeof(int32_t) * (size_t)batch, "targets");
  for (int r = 0; r < batch; r++) t[r] = (int32_t)((r * 7 + (int)seed) % OUT);
  c->t = hl_from_i32(HL_SHAPE(batch), t, HL_I32, where);
  if (!c->x || !c->t) hl_fatal("mlp-step: %s", hl_error());
  for (int l = 0; l < LAYERS; l++) {
    double bound = 1.0 / sqrt((double)fan_in[l]); /* PyTorch's default Linear init range */
    c->w[l] = hl_rand(HL_SHAPE(fan_out[l], fan_in[l]), -bound, bound, seed, 2 * (uint64_t)l, HL_F32, where);
    c->b[l] = hl_rand(HL_SHAPE(fan_out[l]), -bound, bound, seed, 2 * (uint64_t)l + 1, HL_F32, where);
    if (!c->w[l] || !c->b[l] || !hl_set_requires_grad(c->w[l], true) || !hl_set_requires_grad(c->b[l], true))
      hl_fatal("mlp-step: %s", hl_error());
  }
  return t;
}

static void core_free(core_mlp *c) {
  for (int l = 0; l < LAYERS; l++) {
    hl_release(c->w[l]);
    hl_release(c->b[l]);
  }
  hl_release(c->x);
  hl_release(c->t);
}

static void setup(const bench_device *dev, core_mlp *c, direct_mlp *d, int batch, uint64_t seed) {
  const hl_device_kind where = dev->kind;
  d->batch = batch;
  c->be = d->be = where == HL_DEVICE_CPU ? NULL : dev->be;
  int32_t *t = core_setup(c, where, batch, seed);
  if (where == HL_DEVICE_CPU) {
    d->t = t;
  } else {
    d->t = bench_alloc(dev, sizeof(int32_t) * (size_t)batch, "targets");
    dev->be->copy_from_host(d->t, t, sizeof(int32_t) * (size_t)batch);
    free(t);
    d->loss_dev = bench_alloc(dev, sizeof(float), "loss");
    d->row_loss = bench_alloc(dev, sizeof(float) * (size_t)batch, "row losses");
    d->lse = bench_alloc(dev, sizeof(float) * (size_t)batch, "row logsumexp");
    d->bad = bench_alloc(dev, sizeof(int32_t), "bad-target count");
    d->one = bench_alloc(dev, sizeof(float), "dloss");
    dev->be->tensor->fill(d->one, HL_F32, 1, 1.0);
  }
  d->x = copy_of(dev, c->x);
  d->a[0] = d->x;
  for (int l = 0; l < LAYERS; l++) {
    d->w[l] = copy_of(dev, c->w[l]);
    d->b[l] = copy_of(dev, c->b[l]);
    d->dw[l] = buffer(dev, sizeof(float) * (size_t)fan_out[l] * fan_in[l], "gradients");
    d->db[l] = buffer(dev, sizeof(float) * (size_t)fan_out[l], "gradients");
    d->a[l + 1] = buffer(dev, sizeof(float) * (size_t)batch * fan_out[l], "activations");
    d->d[l + 1] = buffer(dev, sizeof(float) * (size_t)batch * fan_out[l], "activations");
    d->g[l + 1] = where == HL_DEVICE_CPU ? NULL : buffer(dev, sizeof(float) * (size_t)batch * fan_out[l], "activations");
  }
  d->d[0] = NULL;
}

/* the direct side's weights (device or host) as a fresh host array */
static float *direct_values(const direct_mlp *d, const float *p, size_t n) {
  float *h = bench_host_alloc(sizeof(float) * n, "mlp-step validation");
  if (d->be) d->be->copy_to_host(h, p, sizeof(float) * n);
  else memcpy(h, p, sizeof(float) * n);
  return h;
}

/* One step of each from the same weights: losses and updated weights agree. */
static void validate(core_mlp *c, direct_mlp *d, bench_launch direct) {
  core_step(c, 0);
  direct(d, 0);
  if (!(fabs(c->loss - d->loss) <= 1e-5 * fabs(d->loss)))
    hl_fatal("mlp-step: validation failed: loss %.9g (core) vs %.9g (direct)", c->loss, d->loss);
  for (int l = 0; l < LAYERS; l++) {
    const hl_tensor *ct[2] = {c->w[l], c->b[l]};
    const float *dp[2] = {d->w[l], d->b[l]};
    for (int k = 0; k < 2; k++) {
      float *v = host_copy(ct[k]), *dt = direct_values(d, dp[k], (size_t)hl_numel(ct[k]));
      double worst = 0, scale = 0;
      for (int64_t i = 0; i < hl_numel(ct[k]); i++) {
        worst = fmax(worst, fabs(v[i] - dt[i]));
        scale = fmax(scale, fabs(dt[i]));
      }
      free(v);
      free(dt);
      /* the updates are lr * gradient: compare against the weights' scale */
      if (!(worst <= 1e-4 * scale))
        hl_fatal("mlp-step: validation failed: layer %d %s differs by %.3g after one step", l, k ? "bias" : "weight",
                 worst);
    }
  }
}

#ifdef HL_HAVE_ONEDNN
static hl_bf16 *bf16_buffer(int64_t n, const char *what) {
  return bench_host_alloc(sizeof(hl_bf16) * (size_t)n, what);
}

/* One oneDNN primitive of the direct bf16 step, made on its buffers before timing */
static void make_product(hl_onednn_direct *r, hl_gemm_desc d) {
  char why[256];
  if (!hl_onednn_direct_make(r, &d, why, sizeof why))
    hl_fatal("mlp-step: the direct bf16 step's matmul (%lld x %lld x %lld): %s", (long long)d.m, (long long)d.n,
             (long long)d.k, why);
}

/* The bf16 pair: the core (under bf16 autocast) and the direct side from
 * the same weights as the fp32 pair, in copies of their own. CPU only. */
static void setup_bf16(core_mlp *c, direct_bf16_mlp *d, int batch, uint64_t seed) {
  c->bf16_autocast = true;
  d->batch = batch;
  d->t = core_setup(c, HL_DEVICE_CPU, batch, seed);
  d->x = host_copy(c->x);
  d->xb = d->a[0] = bf16_buffer((int64_t)batch * IN, "mlp-step bf16 input");
  for (int l = 0; l < LAYERS; l++) {
    const int64_t nw = (int64_t)fan_out[l] * fan_in[l], nb = fan_out[l], na = (int64_t)batch * fan_out[l];
    d->w[l] = host_copy(c->w[l]);
    d->b[l] = host_copy(c->b[l]);
    d->dw[l] = bench_host_alloc(sizeof(float) * (size_t)nw, "gradients");
    d->db[l] = bench_host_alloc(sizeof(float) * (size_t)nb, "gradients");
    d->wb[l] = bf16_buffer(nw, "bf16 weights");
    d->bb[l] = bf16_buffer(nb, "bf16 weights");
    d->dwb[l] = bf16_buffer(nw, "bf16 gradients");
    d->dbb[l] = bf16_buffer(nb, "bf16 gradients");
    d->a[l + 1] = bf16_buffer(na, "bf16 activations");
    d->d[l + 1] = bf16_buffer(na, "bf16 activations");
  }
  d->d[0] = NULL;
  d->logits = bench_host_alloc(sizeof(float) * (size_t)batch * OUT, "logits");
  d->dlogits = bench_host_alloc(sizeof(float) * (size_t)batch * OUT, "logits");
  for (int l = 0; l < LAYERS; l++) {
    make_product(&d->fwd[l], forward_product(l, batch, d->a[l], d->wb[l], d->a[l + 1]));
    make_product(&d->dweight[l], weight_grad_product(l, batch, d->d[l + 1], d->a[l], d->dwb[l]));
    if (l > 0) make_product(&d->dinput[l], input_grad_product(l, batch, d->d[l + 1], d->wb[l], d->d[l]));
  }
}

static void free_bf16(core_mlp *c, direct_bf16_mlp *d) {
  core_free(c);
  for (int l = 0; l < LAYERS; l++) {
    hl_onednn_direct_free(&d->fwd[l]);
    hl_onednn_direct_free(&d->dweight[l]);
    if (l > 0) hl_onednn_direct_free(&d->dinput[l]);
    void *arrays[] = {d->w[l],  d->b[l],   d->dw[l],  d->db[l],     d->wb[l],
                      d->bb[l], d->dwb[l], d->dbb[l], d->a[l + 1], d->d[l + 1]};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(arrays[i]);
  }
  free(d->x);
  free(d->xb);
  free(d->t);
  free(d->logits);
  free(d->dlogits);
}

/* One forward and backward of each from the same weights (then the same
 * update): the loss within 2^-8 relative and every gradient within 2^-6 of
 * its tensor's max |g| (the tolerances in the header), else exit 1. The
 * worst differences found go to *loss_rel and *grad_rel. */
static void validate_bf16(core_mlp *c, direct_bf16_mlp *d, double *loss_rel, double *grad_rel) {
  const double loss_tol = ldexp(1.0, -8), grad_tol = ldexp(1.0, -6);
  core_forward_backward(c);
  direct_bf16_forward_backward(d);
  *loss_rel = fabs(c->loss - d->loss) / fabs(d->loss);
  if (!(*loss_rel <= loss_tol))
    hl_fatal("mlp-step: bf16 validation failed: loss %.9g (core) vs %.9g (direct), %.3g relative (tolerance %.3g)",
             c->loss, d->loss, *loss_rel, loss_tol);
  *grad_rel = 0;
  for (int l = 0; l < LAYERS; l++) {
    const hl_tensor *params[2] = {c->w[l], c->b[l]};
    const float *direct_grads[2] = {d->dw[l], d->db[l]};
    for (int k = 0; k < 2; k++) {
      const hl_tensor *g = hl_tensor_grad(params[k]);
      if (!g) hl_fatal("mlp-step: bf16 validation: the core gave layer %d's %s no gradient", l, k ? "bias" : "weight");
      float *v = host_copy(g);
      double worst = 0, scale = 0;
      for (int64_t i = 0; i < hl_numel(g); i++) {
        worst = fmax(worst, fabs(v[i] - direct_grads[k][i]));
        scale = fmax(scale, fabs(direct_grads[k][i]));
      }
      free(v);
      const double r = scale > 0 ? worst / scale : worst;
      if (!(r <= grad_tol))
        hl_fatal("mlp-step: bf16 validation failed: layer %d %s gradient differs by %.3g of its max |g| "
                 "(tolerance %.3g)",
                 l, k ? "bias" : "weight", r, grad_tol);
      *grad_rel = fmax(*grad_rel, r);
    }
  }
  core_update(c);
  direct_bf16_update(d);
}
#endif

/* ------------------------------------------------------------- main -- */

/* One run's state between its steps */
typedef struct {
  bench_device dev;
  bool gpu;
  long long batch;
  const char *dir;
  char dirbuf[4096];
  core_mlp c;
  direct_mlp d;
  bench_launch direct;
  bool bf16;          /* the bf16 step runs here; else bf16_why says why */
  char bf16_why[320];
#ifdef HL_HAVE_ONEDNN
  core_mlp cb;
  direct_bf16_mlp db;
  double bf16_loss_rel, bf16_grad_rel;
#endif
  bench_method m;
  bench_timing td, tc, tdb, tcb; /* direct and core, fp32 then bf16 */
  double ratio, ratio_bf16;      /* core / direct median step times */
  hl_csv_rows rows;              /* mlp_step.csv, written once the metadata is complete */
} mlp_run;

static void parse_options(int argc, char **argv, bench_common *common, long long *batch) {
  static const struct option longopts[] = {{"batch", required_argument, NULL, 'b'}, BENCH_COMMON_LONGOPTS, {0}};
  int opt;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
    if (bench_common_option(common, opt, argv)) continue;
    if (opt == 'b') *batch = hl_parse_int("--batch", optarg, 1, 65536);
    else bench_bad_option(opt, argv, longopts);
  }
  if (optind < argc) hl_usage_error("mlp-step: unexpected argument '%s'", argv[optind]);
}

/* bf16: where the core's bf16 products run on oneDNN, which the direct side
 * calls; set up and validated, or bf16_why says why not */
static void bf16_plan(mlp_run *r, uint64_t seed) {
  const long long batch = r->batch;
  if (r->gpu)
    snprintf(r->bf16_why, sizeof r->bf16_why, "the bf16 step is measured on the CPU (its direct side is oneDNN's matmul)");
  else r->bf16 = bf16_step_runs((int)batch, r->bf16_why, sizeof r->bf16_why);
  for (char *ch = r->bf16_why; *ch; ch++)
    if (*ch == ',') *ch = ';'; /* one CSV cell */
#ifdef HL_HAVE_ONEDNN
  r->bf16_loss_rel = r->bf16_grad_rel = NAN;
  if (r->bf16) {
    setup_bf16(&r->cb, &r->db, (int)batch, seed);
    validate_bf16(&r->cb, &r->db, &r->bf16_loss_rel, &r->bf16_grad_rel);
  }
#else
  (void)seed;
#endif
}

static void time_steps(mlp_run *r, int reps, bool quick) {
  r->m = bench_method_for(&r->dev, reps, quick);
  bench_progress("mlp-step: timing the direct %s step", r->gpu ? "cuBLAS" : "sgemm");
  r->td = bench_time(&r->dev, &r->m, r->direct, &r->d);
  bench_progress("mlp-step: timing the core's step");
  r->tc = bench_time(&r->dev, &r->m, core_step, &r->c);
  r->ratio = r->tc.ms.median / r->td.ms.median;
#ifdef HL_HAVE_ONEDNN
  if (r->bf16) {
    bench_progress("mlp-step: timing the direct oneDNN bf16 step");
    r->tdb = bench_time(&r->dev, &r->m, direct_bf16_step, &r->db);
    bench_progress("mlp-step: timing the core's bf16 step");
    r->tcb = bench_time(&r->dev, &r->m, core_step, &r->cb);
  }
#endif
  r->ratio_bf16 = r->bf16 ? r->tcb.ms.median / r->tdb.ms.median : NAN;
}

/* The table on stdout and the rows of mlp_step.csv: direct and core, fp32 then bf16 */
static void keep_rows(mlp_run *r) {
  const bench_device *dev = &r->dev;
  const long long batch = r->batch;
  const double flop = 3.0 * 2.0 * (double)batch * ((double)IN * H1 + (double)H1 * H2 + (double)H2 * OUT);
  if (r->gpu) printf("mlp-step: MLP %d-%d-%d-%d, batch %lld, %s\n", IN, H1, H2, OUT, batch, dev->facts->name);
  else printf("mlp-step: MLP %d-%d-%d-%d, batch %lld, %d threads\n", IN, H1, H2, OUT, batch, omp_get_max_threads());
  printf("%-8s %-9s %11s %14s %11s %11s\n", "impl", "precision", "time_ms_min", "time_ms_median", "time_ms_max",
         "gflop_per_s");
  const bench_timing *tt[4] = {&r->td, &r->tc, &r->tdb, &r->tcb};
  const char *names[4] = {"direct", "core", "direct", "core"};
  hl_csv_rows *rows = &r->rows;
  for (int i = 0; i < 4; i++) {
    const bool is_bf16 = i >= 2;
    hl_row row;
    hl_row_begin(&row, &bench_mlp_step_schema);
    hl_row_text(&row, "impl", names[i]);
    hl_row_text(&row, "device", dev->name);
    hl_row_int(&row, "batch", batch);
    hl_row_int(&row, "threads", omp_get_max_threads());
    hl_row_text(&row, "precision", is_bf16 ? "bf16" : "fp32");
    static const char *const measured[] = {"time_ms_min", "time_ms_median", "time_ms_max", "samples", "gflop_per_s",
                                           "ratio_to_direct"};
    if (is_bf16 && !r->bf16) { /* not run: the row says why, with no numbers */
      for (size_t k = 0; k < sizeof measured / sizeof measured[0]; k++) hl_row_missing(&row, measured[k]);
      hl_row_textf(&row, "note", "not run: %s", r->bf16_why);
      hl_csv_rows_put(rows, &row);
      continue;
    }
    const double ref = is_bf16 ? r->tdb.ms.median : r->td.ms.median, gflop_per_s = flop / (tt[i]->ms.median * 1e6);
    printf("%-8s %-9s %11.3f %14.3f %11.3f %11.1f\n", names[i], is_bf16 ? "bf16" : "fp32", tt[i]->ms.min,
           tt[i]->ms.median, tt[i]->ms.max, gflop_per_s);
    hl_row_real(&row, "time_ms_min", tt[i]->ms.min);
    hl_row_real(&row, "time_ms_median", tt[i]->ms.median);
    hl_row_real(&row, "time_ms_max", tt[i]->ms.max);
    hl_row_int(&row, "samples", tt[i]->ms.n);
    hl_row_real(&row, "gflop_per_s", gflop_per_s);
    hl_row_real(&row, "ratio_to_direct", tt[i]->ms.median / ref);
    hl_row_missing(&row, "note");
    hl_csv_rows_put(rows, &row);
  }
  printf("core / direct: %.3f (fp32; median step times)\n", r->ratio);
  if (r->bf16) printf("core / direct: %.3f (bf16 autocast; median step times)\n", r->ratio_bf16);
  else printf("bf16 step not run: %s\n", r->bf16_why);
}

static void record_metadata(const mlp_run *r) {
  const bool gpu = r->gpu;
  const long long batch = r->batch;
  /* the wait policy decides how idle OpenMP workers share the cores (docs/core.md, "Threads") */
  const char *wait = getenv("OMP_WAIT_POLICY");
  hl_meta_set("omp_wait_policy", "%s", wait ? wait : "unset (libgomp spins after each parallel region)");
  hl_meta_set("method", "%s", bench_method_text(&r->dev, &r->m));
  hl_meta_set("model", "MLP %d-%d-%d-%d relu, mean cross-entropy, SGD lr %g; fp32, and bf16 autocast (f32 weights)",
              IN, H1, H2, OUT, lr);
  hl_meta_set("direct", "%s", gpu ? "cuBLAS through backend->gemm (fp32 compute, no tf32) and the tensor kernels called directly"
                                  : "cblas_sgemm (OpenBLAS) and plain loops");
#ifdef HL_HAVE_ONEDNN
  if (r->bf16) {
    char core_gemm[200];
    hl_gemm_desc probe = forward_product(0, (int)batch, NULL, NULL, NULL);
    hl_onednn_gemm_describe(&probe, core_gemm, sizeof core_gemm);
    hl_meta_set("direct_bf16",
                "the casts by kernels/host.h's conversions; dnnl_primitive_execute called directly (%s; "
                "bf16 x bf16 -> bf16 with fp32 sums; the bias as a sum post-op) and plain loops; the core's bf16 "
                "products: %s",
                r->db.fwd[0].what, core_gemm);
    hl_meta_set("bf16_validation",
                "one forward and backward from the same weights: loss %.3g relative (tolerance 2^-8); gradients %.3g "
                "of max |g| at worst (tolerance 2^-6)",
                r->bf16_loss_rel, r->bf16_grad_rel);
  }
#else
  (void)batch;
#endif
  if (!r->bf16) hl_meta_set("direct_bf16", "not run: %s", r->bf16_why);
}

/* The CPU's expectation (core / direct at most 1.25, fp32 and bf16); on a GPU the fp32 ratio, reported */
static const char reason_core[] =
    "the core runs the same products on the same library as the direct step: what it adds (the graph; the casts and "
    "bookkeeping of autocast) should cost at most a quarter of the step at this size";

static void report_expectations(const mlp_run *r) {
  const bench_device *dev = &r->dev;
  const bench_timing *td = &r->td, *tc = &r->tc, *tdb = &r->tdb, *tcb = &r->tcb;
  bench_expectations expectations = {.schema = &bench_mlp_step_expectations_schema};
  char detail[512];
  if (r->gpu) {
    /* the expectation is the CPU's; on a GPU the same ratio is reported */
    snprintf(detail, sizeof detail, "core step %.3f ms vs direct cuBLAS %.3f ms: %.3fx", tc->ms.median, td->ms.median,
             r->ratio);
    bench_expect_info(&expectations, dev, "MLP step through the AMP core against the same step on cuBLAS directly",
                      r->ratio, detail, reason_core);
  } else {
    snprintf(detail, sizeof detail, "core step %.3f ms vs direct sgemm %.3f ms: %.3fx", tc->ms.median, td->ms.median,
             r->ratio);
    bench_expect(&expectations, dev, "MLP step through the AMP core at most 1.25x the same step on sgemm directly",
                 tc->ms.median / td->ms.median, NAN, 1.25, detail, reason_core);
  }
  const char *bf16_name =
      "MLP bf16-autocast step through the AMP core at most 1.25x the same arithmetic on oneDNN directly";
  if (r->bf16) {
    snprintf(detail, sizeof detail, "core bf16 step %.3f ms vs direct oneDNN bf16 %.3f ms: %.3fx", tcb->ms.median,
             tdb->ms.median, r->ratio_bf16);
    bench_expect(&expectations, dev, bf16_name, tcb->ms.median / tdb->ms.median, NAN, 1.25, detail, reason_core);
  } else {
    bench_expect_skip(&expectations, dev, bf16_name, r->bf16_why, reason_core);
  }
  bench_expectations_write(&expectations, r->dir);
}

static void free_run(mlp_run *r) {
#ifdef HL_HAVE_ONEDNN
  if (r->bf16) free_bf16(&r->cb, &r->db);
#endif
  core_free(&r->c);
  direct_mlp *d = &r->d;
  for (int l = 0; l < LAYERS; l++) {
    float *arrays[] = {d->w[l], d->b[l], d->dw[l], d->db[l], d->a[l + 1], d->d[l + 1], d->g[l + 1]};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) buffer_free(&r->dev, arrays[i]);
  }
  buffer_free(&r->dev, d->x);
  buffer_free(&r->dev, d->t);
  void *scalars[] = {d->loss_dev, d->row_loss, d->lse, d->bad, d->one};
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) buffer_free(&r->dev, scalars[i]);
}

int bench_mlp_step_main(int argc, char **argv) {
  bench_common common = {.cli = hl_cli_common_defaults(usage)};
  static mlp_run r; /* large (the models' buffers); one per process */
  r.batch = 256;
  parse_options(argc, argv, &common, &r.batch);
  const int reps = bench_parse_reps(common.reps);
  bench_device_open(&r.dev, common.cli.device);
  r.gpu = r.dev.kind != HL_DEVICE_CPU;
  if (r.gpu && (!r.dev.be->tensor || !r.dev.be->gemm))
    hl_fatal("mlp-step: the %s backend of this build lacks tensor or GEMM kernels", r.dev.name);
  r.dir = bench_outdir(common.cli.out, r.dev.kind, BENCH_TABLES("mlp_step.csv", "mlp_step_expectations.csv"), r.dirbuf,
                       sizeof r.dirbuf);
  setup(&r.dev, &r.c, &r.d, (int)r.batch, common.cli.seed);
  r.direct = r.gpu ? direct_step_device : direct_step;
  validate(&r.c, &r.d, r.direct);
  bf16_plan(&r, common.cli.seed);
  time_steps(&r, reps, common.cli.quick);
  keep_rows(&r);
  record_metadata(&r);
  bench_rows_write(&r.rows, r.dir, &bench_mlp_step_schema);
  hl_csv_rows_free(&r.rows);
  report_expectations(&r);
  free_run(&r);
  return 0;
}
