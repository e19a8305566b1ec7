/* test_kernels_gpu.c — suite gpu: every entry of the CUDA tensor-kernel
 * table (kernels/cuda/tensor_cuda*.cu) against the CPU table on the same
 * Philox inputs, at the tolerances kernels/tensor_kernels.h states:
 *
 *   bit for bit   fill, copy (all 36 dtype pairs, contiguous, misaligned,
 *                 strided, broadcast), binary ops (contiguous, broadcast,
 *                 strided out, in place), unary ops made of single +,-,*,/
 *                 or comparisons (neg, relu, step, the scalar ops, pow with
 *                 p in {0, 1, 2, 3, -1}), relu backward, causal mask,
 *                 one_hot, embedding (and its bad count), uniform random;
 *   4 ulps of the compute type (1 ulp of f16/bf16 after the last rounding):
 *                 exp, log, sqrt, gelu and its two derivatives, gelu
 *                 backward, pow with other exponents, normal random
 *                 (device log/cos/pow vs glibc; the CUDA kernels are built
 *                 with -fmad=false, so exp, gelu and sqrt are expected to
 *                 agree exactly in f32/f16/bf16: the worst distance is
 *                 printed);
 *   relative 1e-5 (f64: 1e-12) of the scale of the terms summed: sum,
 *                 softmax, log_softmax, softmax backward, layer norm (+
 *                 backward), cross-entropy (+ backward), embedding backward.
 * Shapes reach every launch path: warp rows (<= 1024 elements) and block
 * rows, 16-byte vectors and the scalar path (odd lengths, misaligned
 * pointers), chunked row and column sums. Exits 77 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/half.h"
#include "tests/core-gpu/twin.h"

static const hl_dtype floats[] = {HL_F64, HL_F32, HL_F16, HL_BF16};
#define NFLOAT 4
#define KC (twin_cpu->tensor)
#define KG (twin_gpu->tensor)

static size_t es(hl_dtype t) { return hl_dtype_size(t); }

/* ---------------------------------------------------- data movement -- */

static void test_fill(void **state) {
  (void)state;
  const double values[] = {0.0, -0.0, 1.0, -2.5, 0.1, 65520.0, 1e40, NAN, -INFINITY, 2147483647.6, -128.5, 2.5};
  const int64_t ns[] = {1, 7, 8, 33, 1000, 100003};
  for (int t = 0; t < HL_TENSOR_DTYPES; t++)
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++)
      for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        for (int off = 0; off < 2; off++) { /* aligned, and one element in */
          const int64_t n = ns[k];
          twin_buf b = twin_alloc((size_t)(n + 1) * es((hl_dtype)t));
          char *got = malloc(b.bytes);
          KC->fill(b.host + off * es((hl_dtype)t), (hl_dtype)t, n, values[v]);
          KG->fill(b.dev + off * es((hl_dtype)t), (hl_dtype)t, n, values[v]);
          twin_download(&b, got);
          char what[96];
          snprintf(what, sizeof what, "fill %g n=%lld off=%d", values[v], (long long)n, off);
          twin_expect_exact(what, (hl_dtype)t, b.host, got, n + 1); /* the element outside stays 0 */
          free(got);
          twin_free(&b);
        }
}

/* copy of a [d0, d1] index space between two layouts, every dtype pair */
typedef struct {
  const char *name;
  int64_t size[4];
  int64_t dst_stride[4], src_stride[4];
  int64_t dst_elems, src_elems; /* storage each side needs */
  int off;                      /* elements of misalignment on both sides */
} copy_case;

static void run_copy(const copy_case *c, hl_dtype dt, hl_dtype st) {
  twin_buf s = twin_alloc((size_t)(c->src_elems + 1) * es(st)), d = twin_alloc((size_t)(c->dst_elems + 1) * es(dt));
  /* wide values: saturation of integers, overflow of f16/bf16, rounding ties */
  const bool ints = !hl_dtype_is_float(st);
  twin_values(s.host + c->off * es(st), st, c->src_elems, 11, ints ? -3000 : -70000.0, ints ? 3000 : 70000.0, !ints);
  twin_upload(&s);
  hl_kview kd = {d.host + c->off * es(dt), dt, {0}}, ks = {s.host + c->off * es(st), st, {0}};
  memcpy(kd.stride, c->dst_stride, sizeof kd.stride);
  memcpy(ks.stride, c->src_stride, sizeof ks.stride);
  KC->copy(&kd, &ks, c->size);
  kd.data = d.dev + c->off * es(dt);
  ks.data = s.dev + c->off * es(st);
  KG->copy(&kd, &ks, c->size);
  char *got = malloc(d.bytes);
  twin_download(&d, got);
  char what[128];
  snprintf(what, sizeof what, "copy %s %s -> %s", c->name, hl_dtype_name(st), hl_dtype_name(dt));
  twin_expect_exact(what, dt, d.host, got, c->dst_elems + 1);
  free(got);
  twin_free(&s);
  twin_free(&d);
}

static void test_copy(void **state) {
  (void)state;
  const copy_case cases[] = {
      {"contiguous", {1, 1, 1, 1001}, {0, 0, 0, 1}, {0, 0, 0, 1}, 1001, 1001, 0},
      {"contiguous misaligned", {1, 1, 1, 1001}, {0, 0, 0, 1}, {0, 0, 0, 1}, 1001, 1001, 1},
      {"transposed [37,29]", {1, 1, 37, 29}, {0, 0, 29, 1}, {0, 0, 1, 37}, 37 * 29, 37 * 29, 0},
      {"broadcast row [40,24]", {1, 1, 40, 24}, {0, 0, 24, 1}, {0, 0, 0, 1}, 40 * 24, 24, 0},
      {"4-d permuted [2,3,5,16]", {2, 3, 5, 16}, {240, 80, 16, 1}, {16, 160, 32, 1}, 480, 480, 0},
      {"strided destination", {1, 1, 9, 13}, {0, 0, 1, 9}, {0, 0, 13, 1}, 117, 117, 1},
      {"one element", {1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 0, 0}, 1, 1, 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int dt = 0; dt < HL_TENSOR_DTYPES; dt++)
      for (int st = 0; st < HL_TENSOR_DTYPES; st++) run_copy(&cases[c], (hl_dtype)dt, (hl_dtype)st);
  /* the same view onto itself: nothing changes */
  twin_buf b = twin_alloc(64 * 4);
  twin_values(b.host, HL_F32, 64, 3, -1, 1, false);
  twin_upload(&b);
  hl_kview v = {b.dev, HL_F32, {0, 0, 0, 1}};
  const int64_t size[4] = {1, 1, 1, 64};
  KG->copy(&v, &v, size);
  char got[256];
  twin_download(&b, got);
  twin_expect_exact("copy onto itself", HL_F32, b.host, got, 64);
  twin_free(&b);
}

static void test_random(void **state) {
  (void)state;
  const int64_t n = 100001;
  for (int k = 0; k < NFLOAT; k++) {
    const hl_dtype t = floats[k];
    for (int kind = 0; kind < 2; kind++) {
      twin_buf b = twin_alloc((size_t)n * es(t));
      char *got = malloc(b.bytes);
      /* seeds and streams above 2^32 use both counter and key words */
      const uint64_t seed = 0x123456789ull + (uint64_t)k, stream = 0x2000000007ull;
      if (kind == 0) {
        KC->random(b.host, t, n, HL_RANDOM_UNIFORM, -3.0, 5.0, seed, stream);
        KG->random(b.dev, t, n, HL_RANDOM_UNIFORM, -3.0, 5.0, seed, stream);
      } else {
        /* mean 0: an ulp bound on a + b z is then an ulp bound on z */
        KC->random(b.host, t, n, HL_RANDOM_NORMAL, 0.0, 2.0, seed, stream);
        KG->random(b.dev, t, n, HL_RANDOM_NORMAL, 0.0, 2.0, seed, stream);
      }
      twin_download(&b, got);
      if (kind == 0) {
        twin_expect_exact("random uniform [-3, 5)", t, b.host, got, n);
      } else {
        double w = twin_expect_ulps("random normal (0, 2)", t, b.host, got, n, t == HL_F16 || t == HL_BF16 ? 1 : 4);
        print_message("random normal %s: worst %.0f ulp\n", hl_dtype_name(t), w);
      }
      free(got);
      twin_free(&b);
    }
  }
}

/* ------------------------------------------------------ element-wise -- */

typedef struct {
  const char *name;
  int64_t size[4];
  int64_t o[4], a[4], b[4];
  int64_t on, an, bn; /* elements each operand's storage holds */
  int off;
  bool in_place; /* out is a itself */
} binary_case;

static void run_binary(const binary_case *c, hl_dtype t, hl_binary_op op) {
  twin_buf a = twin_alloc((size_t)(c->an + 1) * es(t)), b = twin_alloc((size_t)(c->bn + 1) * es(t));
  twin_buf o = twin_alloc((size_t)(c->on + 1) * es(t));
  twin_values(a.host + c->off * es(t), t, c->an, 21, -4, 4, true);
  /* divisors away from 0 except the specials */
  twin_values(b.host + c->off * es(t), t, c->bn, 22, 0.25, 3, true);
  twin_upload(&a);
  twin_upload(&b);
  twin_buf *out = c->in_place ? &a : &o;
  char *ref = malloc(out->bytes), *got = malloc(out->bytes);
  hl_kview ko = {out->host + c->off * es(t), t, {0}}, ka = {a.host + c->off * es(t), t, {0}},
           kb = {b.host + c->off * es(t), t, {0}};
  memcpy(ko.stride, c->in_place ? c->a : c->o, sizeof ko.stride);
  memcpy(ka.stride, c->a, sizeof ka.stride);
  memcpy(kb.stride, c->b, sizeof kb.stride);
  KC->binary(op, &ko, &ka, &kb, c->size);
  memcpy(ref, out->host, out->bytes);
  ko.data = out->dev + c->off * es(t);
  ka.data = a.dev + c->off * es(t);
  kb.data = b.dev + c->off * es(t);
  KG->binary(op, &ko, &ka, &kb, c->size);
  twin_download(out, got);
  static const char *ops[] = {"add", "sub", "mul", "div"};
  char what[128];
  snprintf(what, sizeof what, "binary %s %s", ops[op], c->name);
  twin_expect_exact(what, t, ref, got, (int64_t)(out->bytes / es(t)));
  free(ref);
  free(got);
  twin_free(&a);
  twin_free(&b);
  twin_free(&o);
}

static void test_binary(void **state) {
  (void)state;
  const binary_case cases[] = {
      {"contiguous", {1, 1, 1, 1037}, {0, 0, 0, 1}, {0, 0, 0, 1}, {0, 0, 0, 1}, 1037, 1037, 1037, 0, false},
      {"contiguous misaligned", {1, 1, 1, 1037}, {0, 0, 0, 1}, {0, 0, 0, 1}, {0, 0, 0, 1}, 1037, 1037, 1037, 1, false},
      {"b scalar", {1, 1, 1, 1037}, {0, 0, 0, 1}, {0, 0, 0, 1}, {0, 0, 0, 0}, 1037, 1037, 1, 0, false},
      {"a scalar", {1, 1, 1, 1037}, {0, 0, 0, 1}, {0, 0, 0, 0}, {0, 0, 0, 1}, 1037, 1, 1037, 0, false},
      {"row broadcast [33,48]+[48]", {1, 1, 33, 48}, {0, 0, 48, 1}, {0, 0, 48, 1}, {0, 0, 0, 1}, 33 * 48, 33 * 48, 48,
       0, false},
      {"column broadcast [33,48]+[33,1]", {1, 1, 33, 48}, {0, 0, 48, 1}, {0, 0, 48, 1}, {0, 0, 1, 0}, 33 * 48, 33 * 48,
       33, 0, false},
      {"4-d broadcast [2,3,4,5]+[3,1,5]", {2, 3, 4, 5}, {60, 20, 5, 1}, {60, 20, 5, 1}, {0, 5, 0, 1}, 120, 120, 15, 0,
       false},
      {"transposed operands, strided out", {1, 1, 17, 23}, {0, 0, 1, 17}, {0, 0, 1, 17}, {0, 0, 23, 1}, 391, 391, 391,
       1, false},
      {"in place", {1, 1, 1, 1037}, {0, 0, 0, 1}, {0, 0, 0, 1}, {0, 0, 0, 1}, 1037, 1037, 1037, 0, true},
      {"in place, b broadcast", {1, 1, 33, 48}, {0, 0, 48, 1}, {0, 0, 48, 1}, {0, 0, 0, 1}, 33 * 48, 33 * 48, 48, 0,
       true},
      {"one element", {1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, 1, 1, 1, 0, false},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int k = 0; k < NFLOAT; k++)
      for (int op = 0; op < HL_BINARY_OPS; op++) run_binary(&cases[c], floats[k], (hl_binary_op)op);
}

typedef enum { EXACT, ULP4 } ulp_class;

/* magnitude of the terms of gelu' and gelu'' at x (clamped at 20 as the
 * formulas are): their absolute error is a few ulps of this */
static double gelu_terms(double x) {
  const double a = fabs(x) > 20 ? 20 : fabs(x);
  return isnan(x) ? 1.0 : (1 + a) * (1 + a) * (1 + a);
}

/* n elements from `off` on; out is x itself when in_place */
static void run_unary(hl_unary_op op, const char *name, hl_dtype t, double p, double lo, double hi, int64_t n, int off,
                      bool in_place, ulp_class cls) {
  twin_buf x = twin_alloc((size_t)(n + 1) * es(t)), o = twin_alloc((size_t)(n + 1) * es(t));
  twin_values(x.host + off * es(t), t, n, 31 + (uint64_t)op, lo, hi, true);
  twin_upload(&x);
  twin_buf *out = in_place ? &x : &o;
  char *ref = malloc(out->bytes), *got = malloc(out->bytes);
  KC->unary(op, t, n, out->host + off * es(t), x.host + off * es(t), p);
  memcpy(ref, out->host, out->bytes);
  KG->unary(op, t, n, out->dev + off * es(t), x.dev + off * es(t), p);
  twin_download(out, got);
  char what[128];
  snprintf(what, sizeof what, "unary %s (p=%g) n=%lld off=%d%s", name, p, (long long)n, off, in_place ? " in place" : "");
  if (cls == EXACT) {
    twin_expect_exact(what, t, ref, got, n + 1);
  } else if (t == HL_F64 && (op == HL_UN_GELU_GRAD || op == HL_UN_GELU_GRAD2)) {
    /* f64 uses the device's exp: one ulp there moves s = sigmoid(2u) by an
     * ulp, and 1 - s cancels, so near the derivatives' zeros the ulp
     * distance is unbounded; the error is bounded by the terms instead */
    double *scale = malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n + 1; i++) scale[i] = gelu_terms(twin_get(x.host, t, i));
    twin_expect_rel(what, t, ref, got, n + 1, scale, 0x1p-45);
    free(scale);
  } else {
    const double w = twin_expect_ulps(what, t, ref, got, n + 1, t == HL_F16 || t == HL_BF16 ? 1 : 4);
    if (off == 0 && !in_place) print_message("%s %s: worst %.0f ulp\n", name, hl_dtype_name(t), w);
  }
  free(ref);
  free(got);
  twin_free(&x);
  twin_free(&o);
}

static void test_unary(void **state) {
  (void)state;
  typedef struct {
    hl_unary_op op;
    const char *name;
    double p, lo, hi;
    ulp_class cls;
  } spec;
  const spec specs[] = {
      {HL_UN_NEG, "neg", 0, -10, 10, EXACT},
      {HL_UN_RELU, "relu", 0, -10, 10, EXACT},
      {HL_UN_STEP, "step", 0, -10, 10, EXACT},
      {HL_UN_ADD_SCALAR, "add_scalar", 0.3, -10, 10, EXACT},
      {HL_UN_MUL_SCALAR, "mul_scalar", -1.7, -10, 10, EXACT},
      {HL_UN_DIV_SCALAR, "div_scalar", 3.1, -10, 10, EXACT},
      {HL_UN_RDIV_SCALAR, "rdiv_scalar", 2.3, 0.1, 10, EXACT},
      {HL_UN_RSUB_SCALAR, "rsub_scalar", 1.25, -10, 10, EXACT},
      {HL_UN_POW, "pow", 0, -3, 3, EXACT},
      {HL_UN_POW, "pow", 1, -3, 3, EXACT},
      {HL_UN_POW, "pow", 2, -3, 3, EXACT},
      {HL_UN_POW, "pow", 3, -3, 3, EXACT},
      {HL_UN_POW, "pow", -1, 0.1, 3, EXACT},
      {HL_UN_POW, "pow", 0.5, 0, 50, ULP4},
      {HL_UN_POW, "pow", 2.5, 0, 20, ULP4},
      {HL_UN_POW, "pow", -0.75, 0.01, 20, ULP4},
      {HL_UN_EXP, "exp", 0, -90, 90, ULP4},
      {HL_UN_LOG, "log", 0, 1e-3, 1e4, ULP4},
      {HL_UN_SQRT, "sqrt", 0, 0, 1e4, ULP4},
      {HL_UN_GELU, "gelu", 0, -12, 12, ULP4},
      {HL_UN_GELU_GRAD, "gelu_grad", 0, -12, 12, ULP4},
      {HL_UN_GELU_GRAD2, "gelu_grad2", 0, -12, 12, ULP4},
  };
  const int64_t ns[] = {1, 999, 4096};
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++)
    for (int k = 0; k < NFLOAT; k++)
      for (size_t j = 0; j < 3; j++)
        for (int off = 0; off < 2; off++)
          run_unary(specs[s].op, specs[s].name, floats[k], specs[s].p, specs[s].lo, specs[s].hi, ns[j], off, false,
                    specs[s].cls);
  /* in place, vector path and tail */
  for (int k = 0; k < NFLOAT; k++) {
    run_unary(HL_UN_MUL_SCALAR, "mul_scalar", floats[k], 0.5, -10, 10, 1037, 0, true, EXACT);
    run_unary(HL_UN_GELU, "gelu", floats[k], 0, -6, 6, 1037, 0, true, ULP4);
  }
}

static void test_unary_grad(void **state) {
  (void)state;
  const int64_t ns[] = {1, 1037, 8192};
  for (int k = 0; k < NFLOAT; k++)
    for (int op = 0; op < HL_UNARY_GRAD_OPS; op++)
      for (size_t j = 0; j < 3; j++)
        for (int off = 0; off < 2; off++) {
          const hl_dtype t = floats[k];
          const int64_t n = ns[j];
          twin_buf dy = twin_alloc((size_t)(n + 1) * es(t)), x = twin_alloc((size_t)(n + 1) * es(t)),
                   dx = twin_alloc((size_t)(n + 1) * es(t));
          twin_values(dy.host + off * es(t), t, n, 41, -3, 3, false);
          twin_values(x.host + off * es(t), t, n, 42, -8, 8, true);
          twin_upload(&dy);
          twin_upload(&x);
          KC->unary_grad((hl_unary_grad_op)op, t, n, dx.host + off * es(t), dy.host + off * es(t), x.host + off * es(t));
          KG->unary_grad((hl_unary_grad_op)op, t, n, dx.dev + off * es(t), dy.dev + off * es(t), x.dev + off * es(t));
          char *got = malloc(dx.bytes);
          twin_download(&dx, got);
          if (op == HL_GRAD_RELU) {
            twin_expect_exact("relu backward", t, dx.host, got, n + 1);
          } else if (t == HL_F64) { /* see run_unary: the device's exp, bounded by the terms */
            double *scale = malloc(sizeof(double) * (size_t)(n + 1));
            for (int64_t i = 0; i < n + 1; i++)
              scale[i] = fabs(twin_get(dy.host, t, i)) * gelu_terms(twin_get(x.host, t, i));
            twin_expect_rel("gelu backward", t, dx.host, got, n + 1, scale, 0x1p-45);
            free(scale);
          } else {
            double w = twin_expect_ulps("gelu backward", t, dx.host, got, n + 1, t == HL_F16 || t == HL_BF16 ? 1 : 4);
            if (j == 2 && off == 0) print_message("gelu backward %s: worst %.0f ulp\n", hl_dtype_name(t), w);
          }
          free(got);
          twin_free(&dy);
          twin_free(&x);
          twin_free(&dx);
        }
}

static void test_causal_mask(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{3, 17, 17}, {2, 5, 40}, {2, 40, 5}, {1, 1, 1}, {4, 64, 1030}};
  const hl_dtype types[] = {HL_F64, HL_F32, HL_F16, HL_BF16, HL_I32};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t k = 0; k < 5; k++)
      for (int in_place = 0; in_place < 2; in_place++) {
        const hl_dtype t = types[k];
        const int64_t B = shapes[s][0], R = shapes[s][1], C = shapes[s][2], n = B * R * C;
        const double value = hl_dtype_is_float(t) ? -INFINITY : -7;
        twin_buf x = twin_alloc((size_t)n * es(t)), o = twin_alloc((size_t)n * es(t));
        twin_values(x.host, t, n, 51, -5, 5, false);
        twin_upload(&x);
        twin_buf *out = in_place ? &x : &o;
        char *ref = malloc(out->bytes), *got = malloc(out->bytes);
        KC->causal_mask(t, out->host, x.host, B, R, C, value);
        memcpy(ref, out->host, out->bytes);
        KG->causal_mask(t, out->dev, x.dev, B, R, C, value);
        twin_download(out, got);
        twin_expect_exact(in_place ? "causal_mask in place" : "causal_mask", t, ref, got, n);
        free(ref);
        free(got);
        twin_free(&x);
        twin_free(&o);
      }
}

/* -------------------------------------------------------- reductions -- */

static void test_sum(void **state) {
  (void)state;
  /* [outer, r, inner]: rows (warps, chunked long rows), columns (chunked), empty r */
  const int64_t shapes[][3] = {{1, 1000003, 1}, {1000, 37, 1}, {3, 50000, 1}, {1, 4000, 768}, {4, 7, 33},
                               {2, 0, 5},       {5, 1, 1},     {2, 0, 1},     {1, 100000, 3}, {64, 512, 64}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int k = 0; k < NFLOAT; k++)
      for (int mean = 0; mean < 2; mean++) {
        const hl_dtype t = floats[k];
        const int64_t O = shapes[s][0], R = shapes[s][1], I = shapes[s][2], nout = O * I;
        const double alpha = mean ? (R ? 1.0 / (double)R : NAN) : 1.0;
        twin_buf x = twin_alloc((size_t)(O * R * I) * es(t)), o = twin_alloc((size_t)nout * es(t));
        twin_values(x.host, t, O * R * I, 61 + (uint64_t)s, -1, 1, false);
        twin_upload(&x);
        KC->sum(t, o.host, x.host, O, R, I, alpha);
        KG->sum(t, o.dev, x.dev, O, R, I, alpha);
        char *got = malloc(o.bytes);
        twin_download(&o, got);
        /* scale: |alpha| sum |x| over each output's terms */
        double *scale = calloc((size_t)(nout ? nout : 1), sizeof(double));
        for (int64_t a = 0; a < O; a++)
          for (int64_t j = 0; j < R; j++)
            for (int64_t i = 0; i < I; i++) scale[a * I + i] += fabs(twin_get(x.host, t, (a * R + j) * I + i));
        for (int64_t e = 0; e < nout; e++) scale[e] *= isnan(alpha) ? 1.0 : fabs(alpha);
        char what[96];
        snprintf(what, sizeof what, "%s [%lld,%lld,%lld]", mean ? "mean" : "sum", (long long)O, (long long)R, (long long)I);
        double w = twin_expect_rel(what, t, o.host, got, nout, scale, twin_rel_tol(t));
        if (k == 1) print_message("%s f32: worst %.3f of the tolerance\n", what, w);
        free(scale);
        free(got);
        twin_free(&x);
        twin_free(&o);
      }
}

/* row shapes: warp rows with and without vectors, block rows with and without */
static const int64_t row_shapes[][2] = {{7, 10}, {64, 1024}, {33, 1000}, {5, 5000}, {3, 50257}, {1, 1}, {300, 768}};
#define NROW_SHAPES (sizeof row_shapes / sizeof row_shapes[0])

static void test_softmax(void **state) {
  (void)state;
  for (size_t s = 0; s < NROW_SHAPES; s++)
    for (int k = 0; k < NFLOAT; k++)
      for (int log = 0; log < 2; log++) {
        const hl_dtype t = floats[k];
        const int64_t R = row_shapes[s][0], C = row_shapes[s][1], n = R * C;
        twin_buf x = twin_alloc((size_t)n * es(t)), y = twin_alloc((size_t)n * es(t));
        twin_values(x.host, t, n, 71, -8, 8, false);
        /* masked scores: -inf above the diagonal of the first rows, and one row all -inf (NaN on both) */
        double ninf = -INFINITY;
        for (int64_t r = 0; r < R && r < 4; r++)
          for (int64_t c = r + 1; c < C; c++) {
            hl_kview d = {x.host + (size_t)(r * C + c) * es(t), t, {0, 0, 0, 1}}, sv = {&ninf, HL_F64, {0, 0, 0, 1}};
            const int64_t one[4] = {1, 1, 1, 1};
            KC->copy(&d, &sv, one);
          }
        if (R > 5) KC->fill(x.host + (size_t)(5 * C) * es(t), t, C, -INFINITY);
        twin_upload(&x);
        KC->softmax(t, y.host, x.host, R, C, log);
        KG->softmax(t, y.dev, x.dev, R, C, log);
        char *got = malloc(y.bytes);
        twin_download(&y, got);
        /* softmax: relative to the row's largest output; log_softmax: to max(1, its largest |output|) */
        double *scale = malloc(sizeof(double) * (size_t)n);
        for (int64_t r = 0; r < R; r++) {
          double m = log ? 1.0 : 0.0;
          for (int64_t c = 0; c < C; c++) {
            double v = fabs(twin_get(y.host, t, r * C + c));
            if (!isnan(v) && !isinf(v) && v > m) m = v;
          }
          for (int64_t c = 0; c < C; c++) scale[r * C + c] = m;
        }
        char what[96];
        snprintf(what, sizeof what, "%s [%lld,%lld]", log ? "log_softmax" : "softmax", (long long)R, (long long)C);
        double w = twin_expect_rel(what, t, y.host, got, n, scale, twin_rel_tol(t));
        if (k == 1) print_message("%s f32: worst %.3f of the tolerance\n", what, w);
        free(scale);
        free(got);
        twin_free(&x);
        twin_free(&y);
      }
}

static void test_softmax_backward(void **state) {
  (void)state;
  for (size_t s = 0; s < NROW_SHAPES; s++)
    for (int k = 0; k < NFLOAT; k++)
      for (int log = 0; log < 2; log++) {
        const hl_dtype t = floats[k];
        const int64_t R = row_shapes[s][0], C = row_shapes[s][1], n = R * C;
        twin_buf x = twin_alloc((size_t)n * es(t)), y = twin_alloc((size_t)n * es(t)), dy = twin_alloc((size_t)n * es(t)),
                 dx = twin_alloc((size_t)n * es(t));
        twin_values(x.host, t, n, 81, -4, 4, false);
        KC->softmax(t, y.host, x.host, R, C, log); /* the saved output, the same on both sides */
        twin_values(dy.host, t, n, 82, -1, 1, false);
        twin_upload(&y);
        twin_upload(&dy);
        KC->softmax_backward(t, dx.host, dy.host, y.host, R, C, log);
        KG->softmax_backward(t, dx.dev, dy.dev, y.dev, R, C, log);
        char *got = malloc(dx.bytes);
        twin_download(&dx, got);
        double *scale = malloc(sizeof(double) * (size_t)n);
        for (int64_t r = 0; r < R; r++) {
          /* the row sum's terms are dy*y (softmax) or dy (log); it enters every dx times y or exp(y) */
          double terms = 0, gmax = 0, ymax = 0;
          for (int64_t c = 0; c < C; c++) {
            const double g = twin_get(dy.host, t, r * C + c), yv = twin_get(y.host, t, r * C + c);
            terms += log ? fabs(g) : fabs(g * yv);
            gmax = fmax(gmax, fabs(g));
            ymax = fmax(ymax, log ? exp(yv) : fabs(yv));
          }
          for (int64_t c = 0; c < C; c++) scale[r * C + c] = ymax * (gmax + terms) + gmax;
        }
        char what[96];
        snprintf(what, sizeof what, "%s backward [%lld,%lld]", log ? "log_softmax" : "softmax", (long long)R, (long long)C);
        twin_expect_rel(what, t, dx.host, got, n, scale, twin_rel_tol(t));
        free(scale);
        free(got);
        twin_free(&x);
        twin_free(&y);
        twin_free(&dy);
        twin_free(&dx);
      }
}

static void test_layer_norm(void **state) {
  (void)state;
  const int64_t shapes[][2] = {{5, 768}, {33, 100}, {4, 3000}, {1, 1}, {257, 64}, {2, 4097}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int k = 0; k < NFLOAT; k++)
      for (int affine = 0; affine < 3; affine++) { /* 0 none, 1 weight, 2 weight and bias */
        const hl_dtype t = floats[k], acc = hl_acc_dtype(t);
        const int64_t R = shapes[s][0], C = shapes[s][1], n = R * C;
        twin_buf x = twin_alloc((size_t)n * es(t)), y = twin_alloc((size_t)n * es(t)), w = twin_alloc((size_t)C * es(t)),
                 b = twin_alloc((size_t)C * es(t)), mean = twin_alloc((size_t)R * es(acc)),
                 rstd = twin_alloc((size_t)R * es(acc));
        twin_values(x.host, t, n, 91, -3, 5, false);
        twin_values(w.host, t, C, 92, 0.5, 1.5, false);
        twin_values(b.host, t, C, 93, -1, 1, false);
        twin_upload(&x);
        twin_upload(&w);
        twin_upload(&b);
        const double eps = 1e-5;
        KC->layer_norm(t, y.host, mean.host, rstd.host, x.host, affine ? w.host : NULL, affine == 2 ? b.host : NULL, R, C,
                       eps);
        KG->layer_norm(t, y.dev, mean.dev, rstd.dev, x.dev, affine ? w.dev : NULL, affine == 2 ? b.dev : NULL, R, C, eps);
        char *gy = malloc(y.bytes), *gm = malloc(mean.bytes), *gr = malloc(rstd.bytes);
        twin_download(&y, gy);
        twin_download(&mean, gm);
        twin_download(&rstd, gr);
        double *sy = malloc(sizeof(double) * (size_t)n), *sm = malloc(sizeof(double) * (size_t)R),
               *sr = malloc(sizeof(double) * (size_t)R);
        for (int64_t r = 0; r < R; r++) {
          double xmax = 0, wmax = affine ? 0 : 1, bmax = 0;
          const double mu = twin_get(mean.host, acc, r), rs = twin_get(rstd.host, acc, r);
          for (int64_t c = 0; c < C; c++) xmax = fmax(xmax, fabs(twin_get(x.host, t, r * C + c)));
          for (int64_t c = 0; affine && c < C; c++) wmax = fmax(wmax, fabs(twin_get(w.host, t, c)));
          for (int64_t c = 0; affine == 2 && c < C; c++) bmax = fmax(bmax, fabs(twin_get(b.host, t, c)));
          sm[r] = xmax;
          sr[r] = fabs(rs);
          for (int64_t c = 0; c < C; c++) sy[r * C + c] = (xmax + fabs(mu)) * fabs(rs) * wmax + bmax;
        }
        char what[96];
        snprintf(what, sizeof what, "layer_norm [%lld,%lld] affine %d", (long long)R, (long long)C, affine);
        twin_expect_rel(what, t, y.host, gy, n, sy, twin_rel_tol(t));
        twin_expect_rel("layer_norm mean", acc, mean.host, gm, R, sm, twin_rel_tol(t));
        twin_expect_rel("layer_norm rstd", acc, rstd.host, gr, R, sr, twin_rel_tol(t));
        free(sy), free(sm), free(sr), free(gy), free(gm), free(gr);
        twin_free(&x), twin_free(&y), twin_free(&w), twin_free(&b), twin_free(&mean), twin_free(&rstd);
      }
}

static void test_layer_norm_backward(void **state) {
  (void)state;
  const int64_t shapes[][2] = {{5, 768}, {33, 100}, {4, 3000}, {1, 1}, {4000, 64}, {0, 16}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int k = 0; k < NFLOAT; k++)
      for (int variant = 0; variant < 3; variant++) { /* 0: all with weight, 1: no weight, 2: dx only */
        const hl_dtype t = floats[k], acc = hl_acc_dtype(t);
        const int64_t R = shapes[s][0], C = shapes[s][1], n = R * C;
        twin_buf x = twin_alloc((size_t)n * es(t)), y = twin_alloc((size_t)n * es(t)), w = twin_alloc((size_t)C * es(t)),
                 dy = twin_alloc((size_t)n * es(t)), dx = twin_alloc((size_t)n * es(t)),
                 dw = twin_alloc((size_t)C * es(t)), db = twin_alloc((size_t)C * es(t)),
                 mean = twin_alloc((size_t)R * es(acc)), rstd = twin_alloc((size_t)R * es(acc));
        twin_values(x.host, t, n, 101, -3, 5, false);
        twin_values(w.host, t, C, 102, 0.5, 1.5, false);
        twin_values(dy.host, t, n, 103, -1, 1, false);
        /* the saved statistics come from the CPU forward, the same on both sides */
        KC->layer_norm(t, y.host, mean.host, rstd.host, x.host, w.host, NULL, R, C, 1e-5);
        twin_upload(&x), twin_upload(&w), twin_upload(&dy), twin_upload(&mean), twin_upload(&rstd);
        const bool use_w = variant != 1, want_wb = variant != 2;
        KC->layer_norm_backward(t, dx.host, want_wb ? dw.host : NULL, want_wb ? db.host : NULL, dy.host, x.host,
                                use_w ? w.host : NULL, mean.host, rstd.host, R, C);
        KG->layer_norm_backward(t, dx.dev, want_wb ? dw.dev : NULL, want_wb ? db.dev : NULL, dy.dev, x.dev,
                                use_w ? w.dev : NULL, mean.dev, rstd.dev, R, C);
        char *gdx = malloc(dx.bytes), *gdw = malloc(dw.bytes), *gdb = malloc(db.bytes);
        twin_download(&dx, gdx);
        twin_download(&dw, gdw);
        twin_download(&db, gdb);
        double *sx = malloc(sizeof(double) * (size_t)(n ? n : 1)), *sw = calloc((size_t)C, sizeof(double)),
               *sb = calloc((size_t)C, sizeof(double));
        for (int64_t r = 0; r < R; r++) {
          const double mu = twin_get(mean.host, acc, r), rs = twin_get(rstd.host, acc, r);
          double gmax = 0, sg = 0, sgx = 0;
          for (int64_t c = 0; c < C; c++) {
            const double g = twin_get(dy.host, t, r * C + c) * (use_w ? twin_get(w.host, t, c) : 1.0);
            const double xhat = (twin_get(x.host, t, r * C + c) - mu) * rs;
            gmax = fmax(gmax, fabs(g));
            sg += fabs(g);
            sgx += fabs(g * xhat);
            sw[c] += fabs(twin_get(dy.host, t, r * C + c) * xhat);
            sb[c] += fabs(twin_get(dy.host, t, r * C + c));
          }
          for (int64_t c = 0; c < C; c++) {
            const double xhat = (twin_get(x.host, t, r * C + c) - mu) * rs;
            sx[r * C + c] = fabs(rs) * (gmax + (sg + fabs(xhat) * sgx) / (double)C);
          }
        }
        char what[96];
        snprintf(what, sizeof what, "layer_norm backward [%lld,%lld] variant %d", (long long)R, (long long)C, variant);
        twin_expect_rel(what, t, dx.host, gdx, n, sx, twin_rel_tol(t));
        if (want_wb) {
          twin_expect_rel("layer_norm backward dw", t, dw.host, gdw, C, sw, twin_rel_tol(t));
          twin_expect_rel("layer_norm backward db", t, db.host, gdb, C, sb, twin_rel_tol(t));
        }
        free(sx), free(sw), free(sb), free(gdx), free(gdw), free(gdb);
        twin_free(&x), twin_free(&y), twin_free(&w), twin_free(&dy), twin_free(&dx), twin_free(&dw), twin_free(&db);
        twin_free(&mean), twin_free(&rstd);
      }
}

static void test_cross_entropy(void **state) {
  (void)state;
  for (size_t s = 0; s < NROW_SHAPES; s++)
    for (int k = 0; k < NFLOAT; k++)
      for (int bad = 0; bad < 2; bad++) {
        const hl_dtype t = floats[k], acc = hl_acc_dtype(t);
        const int64_t R = row_shapes[s][0], C = row_shapes[s][1], n = R * C;
        twin_buf x = twin_alloc((size_t)n * es(t)), tg = twin_alloc((size_t)R * 4), loss = twin_alloc(es(t)),
                 rl = twin_alloc((size_t)R * es(acc)), lse = twin_alloc((size_t)R * es(acc)), nb = twin_alloc(4);
        twin_values(x.host, t, n, 111, -6, 6, false);
        int32_t *tv = (int32_t *)tg.host;
        for (int64_t r = 0; r < R; r++) tv[r] = (int32_t)((r * 7 + 3) % C);
        if (bad) tv[R / 2] = (int32_t)C, tv[0] = -1;
        twin_upload(&x);
        twin_upload(&tg);
        /* garbage in the count: the entry sets it */
        const int32_t junk = 12345;
        twin_gpu->copy_from_host(nb.dev, &junk, 4);
        memcpy(nb.host, &junk, 4);
        KC->cross_entropy(t, loss.host, rl.host, lse.host, x.host, tv, R, C, (int32_t *)nb.host);
        KG->cross_entropy(t, loss.dev, rl.dev, lse.dev, x.dev, (const int32_t *)tg.dev, R, C, (int32_t *)nb.dev);
        char *gl = malloc(loss.bytes), *grl = malloc(rl.bytes), *glse = malloc(lse.bytes);
        int32_t gnb;
        twin_download(&loss, gl);
        twin_download(&rl, grl);
        twin_download(&lse, glse);
        twin_download(&nb, &gnb);
        assert_int_equal(gnb, *(int32_t *)nb.host);
        assert_int_equal(gnb, bad ? (R > 1 ? 2 : 1) : 0);
        double *sl = malloc(sizeof(double) * (size_t)R), *sr = malloc(sizeof(double) * (size_t)R), mean_scale = 0;
        for (int64_t r = 0; r < R; r++) {
          const double l = twin_get(lse.host, acc, r);
          double xt = 0;
          if (tv[r] >= 0 && tv[r] < C) xt = twin_get(x.host, t, r * C + tv[r]);
          sl[r] = fmax(1.0, fabs(l));
          sr[r] = fabs(l) + fabs(xt) + 1.0;
          mean_scale += sr[r] / (double)R;
        }
        char what[96];
        snprintf(what, sizeof what, "cross_entropy [%lld,%lld]%s", (long long)R, (long long)C, bad ? " bad targets" : "");
        twin_expect_rel(what, acc, lse.host, glse, R, sl, twin_rel_tol(t));
        twin_expect_rel("cross_entropy row losses", acc, rl.host, grl, R, sr, twin_rel_tol(t));
        twin_expect_rel("cross_entropy mean loss", t, loss.host, gl, 1, &mean_scale, twin_rel_tol(t));
        free(sl), free(sr), free(gl), free(grl), free(glse);
        twin_free(&x), twin_free(&tg), twin_free(&loss), twin_free(&rl), twin_free(&lse), twin_free(&nb);
      }
}

static void test_cross_entropy_backward(void **state) {
  (void)state;
  for (size_t s = 0; s < NROW_SHAPES; s++)
    for (int k = 0; k < NFLOAT; k++) {
      const hl_dtype t = floats[k], acc = hl_acc_dtype(t);
      const int64_t R = row_shapes[s][0], C = row_shapes[s][1], n = R * C;
      twin_buf x = twin_alloc((size_t)n * es(t)), tg = twin_alloc((size_t)R * 4), lse = twin_alloc((size_t)R * es(acc)),
               rl = twin_alloc((size_t)R * es(acc)), loss = twin_alloc(es(t)), dl = twin_alloc(es(t)),
               dx = twin_alloc((size_t)n * es(t));
      twin_values(x.host, t, n, 121, -6, 6, false);
      int32_t *tv = (int32_t *)tg.host, nbad;
      for (int64_t r = 0; r < R; r++) tv[r] = (int32_t)((r * 5 + 1) % C);
      KC->cross_entropy(t, loss.host, rl.host, lse.host, x.host, tv, R, C, &nbad); /* lse: the same on both sides */
      KC->fill(dl.host, t, 1, 0.75);
      twin_upload(&x), twin_upload(&tg), twin_upload(&lse), twin_upload(&dl);
      KC->cross_entropy_backward(t, dx.host, x.host, tv, lse.host, dl.host, R, C);
      KG->cross_entropy_backward(t, dx.dev, x.dev, (const int32_t *)tg.dev, lse.dev, dl.dev, R, C);
      char *got = malloc(dx.bytes);
      twin_download(&dx, got);
      double *sc = malloc(sizeof(double) * (size_t)n);
      for (int64_t i = 0; i < n; i++) sc[i] = 0.75 / (double)R;
      char what[96];
      snprintf(what, sizeof what, "cross_entropy backward [%lld,%lld]", (long long)R, (long long)C);
      double w = twin_expect_rel(what, t, dx.host, got, n, sc, twin_rel_tol(t));
      if (k == 1) print_message("%s f32: worst %.3f of the tolerance\n", what, w);
      free(sc), free(got);
      twin_free(&x), twin_free(&tg), twin_free(&lse), twin_free(&rl), twin_free(&loss), twin_free(&dl), twin_free(&dx);
    }
}

static void test_one_hot(void **state) {
  (void)state;
  const hl_dtype types[] = {HL_F64, HL_F32, HL_F16, HL_BF16, HL_I32, HL_I8};
  for (size_t k = 0; k < 6; k++) {
    const hl_dtype t = types[k];
    const int64_t R = 300, C = 17;
    twin_buf tg = twin_alloc((size_t)R * 4), o = twin_alloc((size_t)(R * C) * es(t));
    int32_t *tv = (int32_t *)tg.host;
    for (int64_t r = 0; r < R; r++) tv[r] = (int32_t)((r * 11) % (C + 3)) - 1; /* some outside [0, C): zero rows */
    twin_upload(&tg);
    KC->one_hot(t, o.host, tv, R, C);
    KG->one_hot(t, o.dev, (const int32_t *)tg.dev, R, C);
    char *got = malloc(o.bytes);
    twin_download(&o, got);
    twin_expect_exact("one_hot", t, o.host, got, R * C);
    free(got);
    twin_free(&tg), twin_free(&o);
  }
}

/* ---------------------------------------------------------- indexing -- */

static void test_embedding(void **state) {
  (void)state;
  const int64_t dims[] = {768, 13, 1, 64};
  for (int k = 0; k < NFLOAT; k++)
    for (size_t d = 0; d < 4; d++)
      for (int off = 0; off < 2; off++) {
        const hl_dtype t = floats[k];
        const int64_t V = 50, D = dims[d], N = 1000;
        twin_buf w = twin_alloc((size_t)(V * D + 1) * es(t)), idx = twin_alloc((size_t)N * 4),
                 o = twin_alloc((size_t)(N * D + 1) * es(t)), nb = twin_alloc(4);
        twin_values(w.host + off * es(t), t, V * D, 131, -1, 1, false);
        int32_t *iv = (int32_t *)idx.host;
        for (int64_t i = 0; i < N; i++) iv[i] = (int32_t)((i * 37) % (V + 2)) - 1; /* -1 and V are bad */
        twin_upload(&w), twin_upload(&idx);
        int32_t cb = 99, gb = 99;
        twin_gpu->copy_from_host(nb.dev, &gb, 4);
        KC->embedding(t, o.host + off * es(t), w.host + off * es(t), iv, N, D, V, &cb);
        KG->embedding(t, o.dev + off * es(t), w.dev + off * es(t), (const int32_t *)idx.dev, N, D, V, (int32_t *)nb.dev);
        char *got = malloc(o.bytes);
        twin_download(&o, got);
        twin_download(&nb, &gb);
        twin_expect_exact("embedding", t, o.host, got, N * D + 1);
        assert_int_equal(gb, cb);
        assert_true(cb > 0);
        free(got);
        twin_free(&w), twin_free(&idx), twin_free(&o), twin_free(&nb);
      }
}

static void test_embedding_backward(void **state) {
  (void)state;
  const int64_t cases[][3] = {{50, 768, 1000}, {7, 13, 5000}, {1000, 64, 1}, {5, 3, 0}, {50257, 32, 4096}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (int k = 0; k < NFLOAT; k++) {
      const hl_dtype t = floats[k];
      const int64_t V = cases[c][0], D = cases[c][1], N = cases[c][2];
      twin_buf dy = twin_alloc((size_t)(N * D) * es(t)), idx = twin_alloc((size_t)N * 4),
               dw = twin_alloc((size_t)(V * D) * es(t));
      twin_values(dy.host, t, N * D, 141, -1, 1, false);
      int32_t *iv = (int32_t *)idx.host;
      /* many repeats of a few rows, some out of range (skipped) */
      for (int64_t i = 0; i < N; i++) iv[i] = (int32_t)((i * i * 31 + 7) % (V + 1)) - (i % 97 == 0 ? V + 5 : 0);
      twin_upload(&dy), twin_upload(&idx);
      /* garbage in the output: the entry writes every row */
      twin_gpu->copy_from_host(dw.dev, dy.host, (size_t)((V < N ? V : N) * D) * es(t));
      KC->embedding_backward(t, dw.host, dy.host, iv, N, D, V);
      KG->embedding_backward(t, dw.dev, dy.dev, (const int32_t *)idx.dev, N, D, V);
      char *got = malloc(dw.bytes);
      twin_download(&dw, got);
      double *sc = calloc((size_t)(V * D), sizeof(double));
      for (int64_t i = 0; i < N; i++)
        if (iv[i] >= 0 && iv[i] < V)
          for (int64_t d = 0; d < D; d++) sc[iv[i] * D + d] += fabs(twin_get(dy.host, t, i * D + d));
      char what[96];
      snprintf(what, sizeof what, "embedding backward vocab %lld dim %lld n %lld", (long long)V, (long long)D, (long long)N);
      double w = twin_expect_rel(what, t, dw.host, got, V * D, sc, twin_rel_tol(t));
      if (k == 1) print_message("%s f32: worst %.3f of the tolerance (same order of additions: 0 expected)\n", what, w);
      free(sc), free(got);
      twin_free(&dy), twin_free(&idx), twin_free(&dw);
    }
}

int main(void) {
  twin_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fill),           cmocka_unit_test(test_copy),
      cmocka_unit_test(test_random),         cmocka_unit_test(test_binary),
      cmocka_unit_test(test_unary),          cmocka_unit_test(test_unary_grad),
      cmocka_unit_test(test_causal_mask),    cmocka_unit_test(test_sum),
      cmocka_unit_test(test_softmax),        cmocka_unit_test(test_softmax_backward),
      cmocka_unit_test(test_layer_norm),     cmocka_unit_test(test_layer_norm_backward),
      cmocka_unit_test(test_cross_entropy),  cmocka_unit_test(test_cross_entropy_backward),
      cmocka_unit_test(test_one_hot),        cmocka_unit_test(test_embedding),
      cmocka_unit_test(test_embedding_backward),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
