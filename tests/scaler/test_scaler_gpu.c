/* test_scaler_gpu.c — suite gpu: the CUDA optimizer kernels against their
 * CPU twins on the same inputs, and the test vectors on CUDA.
 * Exits 77 (skipped) without a GPU.
 *
 * Held to (kernels/optim_kernels.h):
 *   bit for bit: unscale (values, found_inf), reciprocal, update_scale,
 *     sgd and adamw (f32, pure fp16/bf16, f32 masters rounded into
 *     fp16/bf16 models; weights, state, absorbed counts), scale_grads,
 *     clamp_grads — every f32 operation is one correctly rounded +,-,*,/,
 *     sqrt on both (no FMA contraction); NaN compared as "both NaN";
 *   grad_norm: L2 and L1 within relative 1e-6 of the CPU's (f64 sums in
 *     another order, rounded to f32), inf-norm exact, NaN for NaN.
 * Inputs mix ordinary values, values near fp16's limits, subnormal-range
 * values, inf and NaN; tensors are many and of odd sizes (several launch
 * batches, tails), dense, transposed and strided.
 *
 * Test vectors 1 and 2 need only these kernels and always run; 3 to 7 train
 * on CUDA tensors and need the CUDA tensor kernels of the AMP core: while
 * those are not built they are reported as skipped.
 *
 * Built with -DHL_TWIN_HARNESS_ON_CPU (unit test scaler-gpu-harness) the
 * "device" side is the CPU backend itself: that checks the harness (buffers,
 * views, comparisons) and the vectors' code paths where there is no GPU,
 * nothing about CUDA. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/device.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/optim_kernels.h"
#include "tests/scaler/scaler_test.h"

static const hl_backend *gpu, *cpu;
static hl_device_kind dev_under_test = HL_DEVICE_CUDA;
static const struct hl_optim_kernels *kg, *kc;

/* ----------------------------------------------------------- buffers -- */
/* A host array (the CPU twin works on it in place) and a device copy. */
typedef struct {
  void *host, *dev;
  size_t bytes;
} twin;

static twin twin_new(const void *init, size_t bytes) {
  twin t = {malloc(bytes ? bytes : 1), gpu->alloc(bytes ? bytes : 1), bytes};
  assert_true(t.host && t.dev);
  if (init) memcpy(t.host, init, bytes);
  else memset(t.host, 0, bytes);
  gpu->copy_from_host(t.dev, t.host, bytes ? bytes : 1);
  return t;
}

static void twin_free(twin *t) {
  free(t->host);
  gpu->free(t->dev);
}

/* Device bytes equal host bytes, element by element of `dtype` (NaN: both NaN). */
static void twin_check(const twin *t, hl_dtype dtype, const char *what) {
  unsigned char *back = malloc(t->bytes ? t->bytes : 1);
  assert_non_null(back);
  gpu->copy_to_host(back, t->dev, t->bytes);
  size_t es = hl_dtype_size(dtype), n = t->bytes / es;
  for (size_t i = 0; i < n; i++) {
    const unsigned char *a = (const unsigned char *)t->host + i * es, *b = back + i * es;
    if (!memcmp(a, b, es)) continue;
    double x, y;
    if (dtype == HL_I32) {
      int32_t ix, iy;
      memcpy(&ix, a, 4), memcpy(&iy, b, 4);
      fail_msg("%s: element %zu: cpu %d, cuda %d", what, i, ix, iy);
    }
    if (dtype == HL_F64) memcpy(&x, a, 8), memcpy(&y, b, 8);
    else if (dtype == HL_F32) {
      float fx, fy;
      memcpy(&fx, a, 4), memcpy(&fy, b, 4);
      x = fx, y = fy;
    } else {
      uint16_t hx, hy;
      memcpy(&hx, a, 2), memcpy(&hy, b, 2);
      x = dtype == HL_F16 ? hl_f16_to_f32(hx) : hl_bf16_to_f32(hx);
      y = dtype == HL_F16 ? hl_f16_to_f32(hy) : hl_bf16_to_f32(hy);
    }
    if (isnan(x) && isnan(y)) continue;
    fail_msg("%s: element %zu: cpu %.9g, cuda %.9g", what, i, x, y);
  }
  free(back);
}

/* values of every kind: ordinary (times scale), large but within fp16,
 * tiny (fp16 subnormal range), zero, and inf and NaN unless finite */
static float draw(uint64_t stream, uint64_t i, bool finite, float scale) {
  uint32_t u = hl_philox_u32(11, stream, i), k = hl_philox_u32(12, stream, i);
  float x = hl_u32_to_unit_float(u) * 2.0f - 1.0f;
  switch (k % 32) {
    case 0: return x * 60000.0f;
    case 1: return x * 1e-6f;
    case 2: return x * 3e-8f;
    case 3: return finite ? x : INFINITY;
    case 4: return finite ? -x : NAN;
    case 5: return 0.0f;
    default: return x * scale;
  }
}

static void *host_values(hl_dtype dtype, size_t n, uint64_t stream, bool finite, float scale) {
  void *p = malloc((n ? n : 1) * hl_dtype_size(dtype));
  assert_non_null(p);
  for (size_t i = 0; i < n; i++) {
    float v = draw(stream, i, finite, scale);
    switch (dtype) {
      case HL_F64: ((double *)p)[i] = (double)v * (1.0 + 1e-12 * (double)(i % 7)); break;
      case HL_F32: ((float *)p)[i] = v; break;
      case HL_F16: ((uint16_t *)p)[i] = hl_f32_to_f16(v); break;
      default: ((uint16_t *)p)[i] = hl_f32_to_bf16(v); break;
    }
  }
  return p;
}

static twin twin_values(hl_dtype dtype, size_t n, uint64_t stream, bool finite, float scale) {
  void *h = host_values(dtype, n, stream, finite, scale);
  twin t = twin_new(h, n * hl_dtype_size(dtype));
  free(h);
  return t;
}

/* ------------------------------------------------- gradient-view lists -- */

enum { NVIEWS = 70 }; /* more than one launch batch (up to 26 views per launch) */

typedef struct {
  twin dst, src; /* src.bytes == 0: in place */
  hl_grad_view cpu_view, gpu_view;
  hl_dtype dst_dtype, src_dtype;
} view_twin;

/* View i: sizes from 1 to ~70000 elements; kinds: dense f32 / bf16 / f64
 * in place, a transposed f32 and a strided slice (the strided path), an
 * fp16 -> f32 master copy. */
static void make_views(view_twin *v, int n, uint64_t seed, bool finite) {
  for (int i = 0; i < n; i++) {
    view_twin *x = &v[i];
    memset(x, 0, sizeof *x);
    int kind = i % 6;
    int64_t rows = 1 + (i * 7) % 13, cols = 1 + (i * 131) % 97;
    if (i == 5) rows = 300, cols = 233; /* 69900 elements: several chunks and blocks */
    int64_t numel = rows * cols;
    hl_grad_view g = {0};
    g.numel = numel;
    g.dense = 1;
    for (int d = 0; d < 4; d++) g.size[d] = 1;
    g.size[3] = numel;
    g.dst_stride[3] = g.src_stride[3] = 1;
    switch (kind) {
      case 0: x->dst_dtype = x->src_dtype = HL_F32; break;
      case 1: x->dst_dtype = x->src_dtype = HL_BF16; break;
      case 2: x->dst_dtype = x->src_dtype = HL_F64; break;
      case 3: /* a transposed view walked through its strides: [rows, cols] over a [cols, rows] buffer */
        x->dst_dtype = x->src_dtype = HL_F32;
        g.dense = 0;
        g.size[2] = rows, g.size[3] = cols;
        g.dst_stride[2] = g.src_stride[2] = 1;
        g.dst_stride[3] = g.src_stride[3] = rows;
        break;
      case 4: /* columns [1, cols+1) of a [rows, cols+2] buffer */
        x->dst_dtype = x->src_dtype = HL_F32;
        g.dense = 0;
        g.size[2] = rows, g.size[3] = cols;
        g.dst_stride[2] = g.src_stride[2] = cols + 2;
        g.dst_stride[3] = g.src_stride[3] = 1;
        numel = rows * (cols + 2);
        break;
      default: /* master: fp16 model gradient -> f32 master gradient */
        x->dst_dtype = HL_F32, x->src_dtype = HL_F16;
        break;
    }
    g.dst_dtype = x->dst_dtype, g.src_dtype = x->src_dtype;
    x->dst = twin_values(x->dst_dtype, (size_t)numel, seed * 1000 + (uint64_t)i, finite, 4.0f);
    int64_t offset = kind == 4 ? 1 : 0;
    if (x->src_dtype != x->dst_dtype) {
      x->src = twin_values(x->src_dtype, (size_t)numel, seed * 1000 + 500 + (uint64_t)i, finite, 4.0f);
      g.src = NULL;
    }
    x->cpu_view = g, x->gpu_view = g;
    size_t es = hl_dtype_size(x->dst_dtype);
    x->cpu_view.dst = (char *)x->dst.host + offset * (int64_t)es;
    x->gpu_view.dst = (char *)x->dst.dev + offset * (int64_t)es;
    x->cpu_view.src = x->src.bytes ? x->src.host : x->cpu_view.dst;
    x->gpu_view.src = x->src.bytes ? x->src.dev : x->gpu_view.dst;
  }
}

static void free_views(view_twin *v, int n) {
  for (int i = 0; i < n; i++) {
    twin_free(&v[i].dst);
    if (v[i].src.bytes) twin_free(&v[i].src);
  }
}

static void check_views(view_twin *v, int n, const char *what) {
  char label[128];
  for (int i = 0; i < n; i++) {
    snprintf(label, sizeof label, "%s view %d (%s <- %s)", what, i, hl_dtype_name(v[i].dst_dtype), hl_dtype_name(v[i].src_dtype));
    twin_check(&v[i].dst, v[i].dst_dtype, label);
  }
}

static void run_views(view_twin *v, int n, void (*f)(const struct hl_optim_kernels *, const hl_grad_view *, int, void *,
                                                     bool), void *arg_cpu, void *arg_gpu) {
  hl_grad_view *c = malloc((size_t)n * sizeof *c), *g = malloc((size_t)n * sizeof *g);
  assert_true(c && g);
  for (int i = 0; i < n; i++) c[i] = v[i].cpu_view, g[i] = v[i].gpu_view;
  f(kc, c, n, arg_cpu, false);
  f(kg, g, n, arg_gpu, true);
  gpu->synchronize();
  free(c);
  free(g);
}

/* --------------------------------------------------------------- tests -- */

static void unscale_fn(const struct hl_optim_kernels *k, const hl_grad_view *v, int n, void *arg, bool on_gpu) {
  float *p = arg; /* [0] inv_scale, [1] found_inf */
  (void)on_gpu;
  k->unscale(v, n, p, p + 1);
}

static void test_unscale(void **state) {
  (void)state;
  const float invs[3] = {0.25f, 1.0f, (float)(1.0 / 3.0)};
  for (int finite = 0; finite < 2; finite++)
    for (int j = 0; j < 3; j++) {
      view_twin v[NVIEWS];
      make_views(v, NVIEWS, 1 + (uint64_t)j, finite);
      float init[2] = {invs[j], 0.0f};
      twin flags = twin_new(init, sizeof init);
      run_views(v, NVIEWS, unscale_fn, flags.host, flags.dev);
      check_views(v, NVIEWS, "unscale");
      twin_check(&flags, HL_F32, "unscale found_inf");
      assert_true(((float *)flags.host)[1] == (finite ? 0.0f : 1.0f));
      twin_free(&flags);
      free_views(v, NVIEWS);
    }
}

static void test_reciprocal_and_update(void **state) {
  (void)state;
  const float scales[] = {1.0f, 3.0f, 65536.0f, 1e38f, 0x1p-149f, 0.1f, 3.4028235e38f};
  for (unsigned i = 0; i < sizeof scales / sizeof scales[0]; i++) {
    twin s = twin_new(&scales[i], 4), inv = twin_new(NULL, 4);
    kc->reciprocal(inv.host, s.host);
    kg->reciprocal(inv.dev, s.dev);
    twin_check(&inv, HL_F32, "reciprocal");
    twin_free(&s);
    twin_free(&inv);
  }
  /* sequences of found_inf over two optimizer slots, with the vectors'
   * factors: every state bit for bit */
  const struct {
    float scale;
    double growth, backoff;
    int32_t interval;
  } cfg[] = {{4, 2, 0.25, 2}, {1e38f, 16, 0.5, 1}, {128, 2, 0.5, 1}, {65536, 2, 0.5, 3}, {0x1p-140f, 2, 0.5, 1}};
  for (unsigned c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
    const float scale0 = cfg[c].scale;
    const int32_t tracker0 = 0;
    twin s = twin_new(&scale0, 4), t = twin_new(&tracker0, 4), f = twin_new(NULL, 64 * 4);
    for (int step = 0; step < 40; step++) {
      float found[64] = {0};
      found[0] = (step % 7 == 3) ? 1.0f : 0.0f;
      found[1] = (step % 11 == 5) ? 1.0f : 0.0f;
      memcpy(f.host, found, sizeof found);
      gpu->copy_from_host(f.dev, found, sizeof found);
      uint64_t mask = step % 2 ? 3 : 1;
      kc->update_scale(s.host, t.host, f.host, mask, cfg[c].growth, cfg[c].backoff, cfg[c].interval);
      kg->update_scale(s.dev, t.dev, f.dev, mask, cfg[c].growth, cfg[c].backoff, cfg[c].interval);
      twin_check(&s, HL_F32, "update_scale scale");
      twin_check(&t, HL_I32, "update_scale tracker");
    }
    twin_free(&s);
    twin_free(&t);
    twin_free(&f);
  }
}

/* ----------------------------------------------------------- optimizers -- */

enum { NPARAMS = 60 };

typedef struct {
  twin param, grad, buf1, buf2, model;
  hl_optim_entry cpu_entry, gpu_entry;
  hl_dtype param_dtype, model_dtype;
} param_twin;

/* kinds: f32, pure f16, pure bf16, f32 master of an f16 model, of a bf16 model */
static void make_params(param_twin *p, int n, uint64_t seed, bool momentum) {
  for (int i = 0; i < n; i++) {
    param_twin *x = &p[i];
    memset(x, 0, sizeof *x);
    int kind = i % 5;
    size_t numel = i == 3 ? 50000 : 1 + (size_t)(i * 97) % 1500;
    x->param_dtype = kind == 1 ? HL_F16 : kind == 2 ? HL_BF16 : HL_F32;
    x->model_dtype = kind == 3 ? HL_F16 : kind == 4 ? HL_BF16 : HL_F32;
    x->param = twin_values(x->param_dtype, numel, seed * 100 + (uint64_t)i, true, 1.0f);
    x->grad = twin_values(x->param_dtype, numel, seed * 100 + 50 + (uint64_t)i, true, 0.01f);
    if (momentum) x->buf1 = twin_values(x->param_dtype, numel, seed * 100 + 70 + (uint64_t)i, true, 0.01f);
    x->buf2 = twin_values(x->param_dtype, numel, seed * 100 + 80 + (uint64_t)i, true, 1e-4f);
    /* second moments are non-negative */
    for (size_t j = 0; j < numel; j++) {
      if (x->param_dtype == HL_F32) ((float *)x->buf2.host)[j] = fabsf(((float *)x->buf2.host)[j]);
      else ((uint16_t *)x->buf2.host)[j] &= 0x7fffu;
    }
    gpu->copy_from_host(x->buf2.dev, x->buf2.host, x->buf2.bytes);
    if (kind >= 3) {
      /* the model holds the master rounded */
      void *m = malloc(numel * 2);
      for (size_t j = 0; j < numel; j++) {
        float v = ((float *)x->param.host)[j];
        ((uint16_t *)m)[j] = kind == 3 ? hl_f32_to_f16(v) : hl_f32_to_bf16(v);
      }
      x->model = twin_new(m, numel * 2);
      free(m);
    }
    hl_optim_entry e = {0};
    e.numel = (int64_t)numel;
    e.param_dtype = x->param_dtype;
    e.model_dtype = x->model_dtype;
    e.first = i % 7 == 0;
    e.step_size = (float)(0.01 / (1 - pow(0.9, 1 + i % 4)));
    e.bias_correction2_sqrt = (float)sqrt(1 - pow(0.999, 1 + i % 4));
    x->cpu_entry = e, x->gpu_entry = e;
    x->cpu_entry.param = x->param.host, x->gpu_entry.param = x->param.dev;
    x->cpu_entry.grad = x->grad.host, x->gpu_entry.grad = x->grad.dev;
    x->cpu_entry.buf1 = momentum ? x->buf1.host : NULL, x->gpu_entry.buf1 = momentum ? x->buf1.dev : NULL;
    x->cpu_entry.buf2 = x->buf2.host, x->gpu_entry.buf2 = x->buf2.dev;
    x->cpu_entry.model = kind >= 3 ? x->model.host : NULL, x->gpu_entry.model = kind >= 3 ? x->model.dev : NULL;
  }
}

static void check_params(param_twin *p, int n, bool momentum, bool adam, const char *what) {
  char label[128];
  for (int i = 0; i < n; i++) {
    snprintf(label, sizeof label, "%s param %d (%s)", what, i, hl_dtype_name(p[i].param_dtype));
    twin_check(&p[i].param, p[i].param_dtype, label);
    if (momentum || adam) twin_check(&p[i].buf1, p[i].param_dtype, label);
    if (adam) twin_check(&p[i].buf2, p[i].param_dtype, label);
    if (p[i].model.bytes) twin_check(&p[i].model, p[i].model_dtype, label);
  }
}

static void free_params(param_twin *p, int n) {
  for (int i = 0; i < n; i++) {
    twin_free(&p[i].param);
    twin_free(&p[i].grad);
    if (p[i].buf1.bytes) twin_free(&p[i].buf1);
    twin_free(&p[i].buf2);
    if (p[i].model.bytes) twin_free(&p[i].model);
  }
}

static void step_both(param_twin *p, int n, bool adam, const hl_sgd_args *sa, const hl_adamw_args *aa) {
  hl_optim_entry *c = malloc((size_t)n * sizeof *c), *g = malloc((size_t)n * sizeof *g);
  assert_true(c && g);
  for (int i = 0; i < n; i++) c[i] = p[i].cpu_entry, g[i] = p[i].gpu_entry;
  uint64_t zero = 0, absorbed_cpu = 0, absorbed_gpu = 0;
  twin counter = twin_new(&zero, sizeof zero);
  if (adam) {
    kc->adamw(c, n, aa, &absorbed_cpu);
    kg->adamw(g, n, aa, counter.dev);
  } else {
    kc->sgd(c, n, sa, &absorbed_cpu);
    kg->sgd(g, n, sa, counter.dev);
  }
  gpu->copy_to_host(&absorbed_gpu, counter.dev, sizeof absorbed_gpu);
  if (absorbed_cpu != absorbed_gpu) fail_msg("absorbed: cpu %llu, cuda %llu", (unsigned long long)absorbed_cpu, (unsigned long long)absorbed_gpu);
  assert_true(absorbed_cpu > 0); /* the pure fp16/bf16 weights absorb some of these small updates */
  twin_free(&counter);
  free(c);
  free(g);
}

static void test_sgd(void **state) {
  (void)state;
  const hl_sgd_args cases[] = {
      {0.1f, 0.0f, 1.0f, 0.0f, 0},   {0.05f, 0.9f, 1.0f, 1e-3f, 0}, {0.05f, 0.9f, 0.75f, 0.0f, 0},
      {0.02f, 0.9f, 1.0f, 1e-2f, 1},
  };
  for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    bool momentum = cases[c].momentum != 0;
    param_twin p[NPARAMS];
    make_params(p, NPARAMS, 10 + c, momentum);
    for (int step = 0; step < 3; step++) {
      step_both(p, NPARAMS, false, &cases[c], NULL);
      for (int i = 0; i < NPARAMS; i++) p[i].cpu_entry.first = p[i].gpu_entry.first = 0;
    }
    check_params(p, NPARAMS, momentum, false, "sgd");
    free_params(p, NPARAMS);
  }
}

static void test_adamw(void **state) {
  (void)state;
  const hl_adamw_args cases[] = {
      {1.0f, 0.1f, 0.999f, 0.001f, 1e-8f, 0},
      {(float)(1.0 - 0.01 * 0.1), 0.1f, 0.999f, 0.001f, 1e-8f, 1},
      {(float)(1.0 - 1e-3 * 1e-2), 0.6f, 0.95f, 0.05f, 1e-6f, 1}, /* beta1 0.4: lerp's other branch */
  };
  for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    param_twin p[NPARAMS];
    make_params(p, NPARAMS, 20 + c, true);
    for (int step = 0; step < 3; step++) step_both(p, NPARAMS, true, NULL, &cases[c]);
    check_params(p, NPARAMS, true, true, "adamw");
    free_params(p, NPARAMS);
  }
}

/* ------------------------------------------------------------- clipping -- */

typedef struct {
  int type;
  float *out; /* [norm, coefficient], host or device */
} norm_arg;

static void norm_fn(const struct hl_optim_kernels *k, const hl_grad_view *v, int n, void *arg, bool on_gpu) {
  const norm_arg *a = arg;
  size_t bytes = k->grad_norm_scratch(v, n);
  void *scratch = on_gpu ? gpu->alloc(bytes) : malloc(bytes);
  assert_non_null(scratch);
  k->grad_norm(v, n, a->type, 1.5, scratch, a->out);
  if (on_gpu) {
    gpu->synchronize();
    gpu->free(scratch);
  } else {
    free(scratch);
  }
}

static void test_grad_norm(void **state) {
  (void)state;
  const int types[3] = {HL_NORM_L2, HL_NORM_L1, HL_NORM_INF};
  for (int finite = 1; finite >= 0; finite--)
    for (int t = 0; t < 3; t++) {
      view_twin v[NVIEWS];
      make_views(v, NVIEWS, 40 + (uint64_t)t, finite);
      twin out = twin_new(NULL, 8);
      norm_arg ac = {types[t], out.host}, ag = {types[t], out.dev};
      run_views(v, NVIEWS, norm_fn, &ac, &ag);
      float got[2];
      gpu->copy_to_host(got, out.dev, sizeof got);
      const float *want = out.host;
      if (!finite) {
        /* NaN among the values: NaN for every norm type */
        assert_true(isnan(want[0]) && isnan(got[0]));
      } else if (types[t] == HL_NORM_INF) {
        assert_true(want[0] == got[0] && want[1] == got[1]);
      } else {
        if (!(fabsf(want[0] - got[0]) <= 1e-6f * want[0])) fail_msg("norm type %d: cpu %.9g, cuda %.9g", types[t], want[0], got[0]);
        if (!(fabsf(want[1] - got[1]) <= 1e-6f * want[1])) fail_msg("coefficient: cpu %.9g, cuda %.9g", want[1], got[1]);
      }
      twin_free(&out);
      free_views(v, NVIEWS);
    }
}

static void scale_fn(const struct hl_optim_kernels *k, const hl_grad_view *v, int n, void *arg, bool on_gpu) {
  (void)on_gpu;
  k->scale_grads(v, n, arg);
}

static void clamp_fn(const struct hl_optim_kernels *k, const hl_grad_view *v, int n, void *arg, bool on_gpu) {
  (void)on_gpu;
  k->clamp_grads(v, n, *(double *)arg);
}

static void test_scale_and_clamp(void **state) {
  (void)state;
  view_twin v[NVIEWS];
  make_views(v, NVIEWS, 60, false);
  const float coef = 0.3f;
  twin c = twin_new(&coef, 4);
  run_views(v, NVIEWS, scale_fn, c.host, c.dev);
  check_views(v, NVIEWS, "scale_grads");
  twin_free(&c);
  free_views(v, NVIEWS);
  make_views(v, NVIEWS, 61, false);
  double limit = 0.7;
  run_views(v, NVIEWS, clamp_fn, &limit, &limit);
  check_views(v, NVIEWS, "clamp_grads");
  free_views(v, NVIEWS);
}

/* ------------------------------------------------------------- vectors -- */

static void need_tensor_ops(void) {
  if (!device_has_tensor_ops(dev_under_test)) {
    printf("skipped: the AMP core has no CUDA tensor kernels in this build (vectors 3-7 train on CUDA tensors)\n");
    skip();
  }
}

static void test_vector1(void **state) {
  (void)state;
  vector1_update_scale(dev_under_test);
  need_tensor_ops();
  vector1_scaler(dev_under_test);
}
static void test_vector2(void **state) {
  (void)state;
  vector2_unscale_views(dev_under_test);
}
static void test_vector3(void **state) {
  (void)state;
  need_tensor_ops();
  vector3_scale(dev_under_test);
}
static void test_vector4(void **state) {
  (void)state;
  need_tensor_ops();
  vector4_state(dev_under_test);
}
static void test_vector5(void **state) {
  (void)state;
  need_tensor_ops();
  vector5_skip_and_backoff(dev_under_test);
}
static void test_vector6(void **state) {
  (void)state;
  need_tensor_ops();
  vector6_no_overflow(dev_under_test);
}
static void test_vector7(void **state) {
  (void)state;
  need_tensor_ops();
  vector7_accumulation(dev_under_test);
}

int main(void) {
#ifdef HL_TWIN_HARNESS_ON_CPU
  dev_under_test = HL_DEVICE_CPU;
#else
  hl_require_gpu();
#endif
  gpu = hl_backend_for(dev_under_test);
  cpu = hl_backend_for(HL_DEVICE_CPU);
  if (!gpu || !gpu->optim) {
    printf("skipped: this build has no optimizer kernels for the device\n");
    return 77;
  }
  kg = gpu->optim;
  kc = cpu->optim;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unscale),  cmocka_unit_test(test_reciprocal_and_update),
      cmocka_unit_test(test_sgd),      cmocka_unit_test(test_adamw),
      cmocka_unit_test(test_grad_norm), cmocka_unit_test(test_scale_and_clamp),
      cmocka_unit_test(test_vector1),  cmocka_unit_test(test_vector2),
      cmocka_unit_test(test_vector3),  cmocka_unit_test(test_vector4),
      cmocka_unit_test(test_vector5),  cmocka_unit_test(test_vector6),
      cmocka_unit_test(test_vector7),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
