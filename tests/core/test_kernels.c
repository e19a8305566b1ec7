/* test_kernels.c — suite unit: the shared element-wise math
 * (kernels/tensor_math.h) against double references, and the CPU tensor
 * kernels called directly: one rounding for f16/bf16, broadcasting,
 * reductions that do not depend on the thread count, fused rows. These are
 * the references the CUDA twins are compared with in the gpu suite. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "formats/format.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/backend.h"
#include "kernels/gemm.h" /* hl_gemm_store */
#include "kernels/tensor_kernels.h"
#include "kernels/tensor_math.h"
#include "tests/support/hltest.h"

static const struct hl_tensor_kernels *K(void) { return hl_backend_cpu.tensor; }

/* distance in ulps of float a from the double reference r */
static double ulps(float a, double r) {
  if (isnan(r)) return isnan(a) ? 0 : INFINITY;
  if (isinf(r) || fabs(r) > 3.4028234663852886e38) return (isinf(a) && (a > 0) == (r > 0)) ? 0 : INFINITY;
  double ulp = fabs(r) < 0x1p-126 ? 0x1p-149 : ldexp(1.0, ilogb(r) - 23);
  return fabs((double)a - r) / ulp;
}

static void test_exp_accuracy(void **state) {
  (void)state;
  double worst = 0;
  float at = 0;
  for (int i = 0; i <= 2000000; i++) {
    float x = -104.0f + 193.0f * (float)i / 2000000.0f;
    double u = ulps(hl_exp_f32(x), exp((double)x));
    if (u > worst) worst = u, at = x;
  }
  /* around 0 densely, and the subnormal range */
  for (int i = -100000; i <= 100000; i++) {
    float x = (float)i * 1e-5f;
    double u = ulps(hl_exp_f32(x), exp((double)x));
    if (u > worst) worst = u, at = x;
  }
  print_message("hl_exp_f32: worst %.3f ulp at x = %.9g\n", worst, at);
  assert_true(worst <= 2.0);
  assert_true(hl_exp_f32(0.0f) == 1.0f);
  assert_true(isinf(hl_exp_f32(INFINITY)) && hl_exp_f32(-INFINITY) == 0.0f);
  assert_true(isnan(hl_exp_f32(NAN)));
  assert_true(isinf(hl_exp_f32(88.8f)) && hl_exp_f32(88.7f) < INFINITY);
  assert_true(hl_exp_f32(-103.9f) > 0.0f && hl_exp_f32(-103.9f) < 0x1p-140f); /* subnormal, not flushed */
}

/* the tanh form in long double: 1 + tanh(u) cancels for negative x, and
 * the extra bits keep the reference ahead of the f64 code under test */
static double gelu_ref(double x) {
  long double u = 0.7978845608028654L * ((long double)x + 0.044715L * x * x * x);
  return (double)(0.5L * x * (1.0L + tanhl(u)));
}

static void test_gelu_math(void **state) {
  (void)state;
  for (int i = -6000; i <= 6000; i++) {
    double x = i * 1e-3;
    double r = gelu_ref(x);
    /* float: the error is that of u = c (x + a x^3) rounded in float (a few
     * ulps of u), amplified by |2u| in the far negative tail where
     * gelu ~ x e^(2u): relative (8 + 8|u|) 2^-24 */
    float xf = (float)x;
    double rf = gelu_ref(xf), u = 0.7978845608028654 * (xf + 0.044715 * xf * xf * xf);
    assert_true(fabs((double)hl_gelu_f32(xf) - rf) <= (8 + 8 * fabs(u)) * 0x1p-24 * fabs(rf) + 1e-38);
    assert_true(fabs(hl_gelu_f64(x) - r) <= 1e-13 * fmax(fabs(r), 1e-3));
    /* derivatives by central differences in double */
    double h = 1e-5;
    double d1 = (gelu_ref(x + h) - gelu_ref(x - h)) / (2 * h);
    double d2 = (gelu_ref(x + h) - 2 * r + gelu_ref(x - h)) / (h * h);
    assert_true(fabs(hl_gelu_grad_f64(x) - d1) <= 1e-8);
    assert_true(fabs(hl_gelu_grad2_f64(x) - d2) <= 1e-4);
  }
  /* far tails: exact limits, no NaN from x^3 overflow */
  assert_true(hl_gelu_f32(1e30f) == 1e30f && hl_gelu_f32(-1e30f) == 0.0f);
  assert_true(hl_gelu_grad_f32(1e30f) == 1.0f && hl_gelu_grad_f32(-1e30f) == 0.0f);
  assert_true(hl_gelu_grad2_f32(1e30f) == 0.0f && !isnan(hl_gelu_grad2_f32(-1e30f)));
}

static void test_f64_to_half_rounds_once(void **state) {
  (void)state;
  for (uint64_t i = 0; i < 200000; i++) {
    /* values around fp16/bf16 rounding boundaries, including exact midpoints plus tiny offsets */
    double base = ldexp(1.0 + (double)(hl_philox_u32(3, 0, i) & 0x3ff) / 1024.0, (int)(hl_philox_u32(3, 1, i) % 40) - 24);
    double x = base + ldexp(1.0, -11 + (int)floor(log2(base))) * (1 + (double)(hl_philox_u32(3, 2, i) % 5) * 1e-9 - 2e-9);
    if (i & 1) x = -x;
    assert_true(hl_f16_to_f32(hl_f64_to_f16(x)) == (float)hl_format_round(HL_F16, x, HL_OVERFLOW_IEEE));
    assert_true(hl_bf16_to_f32(hl_f64_to_bf16(x)) == (float)hl_format_round(HL_BF16, x, HL_OVERFLOW_IEEE));
  }
}

/* element-wise f16/bf16: one rounding of the f32 result, i.e. half.h's ops */
static void test_binary_rounds_once(void **state) {
  (void)state;
  enum { N = 4096 };
  uint16_t a[N], b[N], o[N];
  for (int i = 0; i < N; i++) {
    a[i] = (uint16_t)hl_philox_u32(1, 0, (uint64_t)i);
    b[i] = (uint16_t)hl_philox_u32(1, 1, (uint64_t)i);
  }
  int64_t size[4] = {1, 1, 1, N};
  for (int t = HL_F16; t <= HL_BF16; t++)
    for (int op = 0; op < HL_BINARY_OPS; op++) {
      hl_kview vo = {o, (hl_dtype)t, {0, 0, 0, 1}}, va = {a, (hl_dtype)t, {0, 0, 0, 1}}, vb = {b, (hl_dtype)t, {0, 0, 0, 1}};
      K()->binary((hl_binary_op)op, &vo, &va, &vb, size);
      for (int i = 0; i < N; i++) {
        uint16_t want;
        if (t == HL_F16) {
          hl_f16 (*f[])(hl_f16, hl_f16) = {hl_f16_add, hl_f16_sub, hl_f16_mul, hl_f16_div};
          want = f[op](a[i], b[i]);
          if (hl_f16_isnan(want)) { assert_true(hl_f16_isnan(o[i])); continue; }
        } else {
          hl_bf16 (*f[])(hl_bf16, hl_bf16) = {hl_bf16_add, hl_bf16_sub, hl_bf16_mul, hl_bf16_div};
          want = f[op](a[i], b[i]);
          if (hl_bf16_isnan(want)) { assert_true(hl_bf16_isnan(o[i])); continue; }
        }
        assert_int_equal(o[i], want);
      }
    }
}

static void test_binary_broadcast_and_inplace(void **state) {
  (void)state;
  float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, o[6];
  int64_t size[4] = {1, 1, 2, 3};
  hl_kview vo = {o, HL_F32, {0, 0, 3, 1}}, va = {a, HL_F32, {0, 0, 3, 1}}, vb = {b, HL_F32, {0, 0, 0, 1}};
  K()->binary(HL_BIN_ADD, &vo, &va, &vb, size);
  const float want[6] = {11, 22, 33, 14, 25, 36};
  assert_memory_equal(o, want, sizeof want);
  /* column broadcast, strided a (a transposed view) */
  float col[2] = {100, 200};
  hl_kview vt = {a, HL_F32, {0, 0, 1, 2}}, vc = {col, HL_F32, {0, 0, 1, 0}};
  int64_t size2[4] = {1, 1, 2, 3};
  K()->binary(HL_BIN_MUL, &vo, &vt, &vc, size2);
  const float want2[6] = {100, 300, 500, 400, 800, 1200};
  assert_memory_equal(o, want2, sizeof want2);
  /* in place: out is a */
  K()->binary(HL_BIN_SUB, &va, &va, &vb, size);
  const float want3[6] = {-9, -18, -27, -6, -15, -24};
  assert_memory_equal(a, want3, sizeof want3);
}

static void test_unary_ops(void **state) {
  (void)state;
  enum { N = 1000 };
  float x[N], o[N];
  for (int i = 0; i < N; i++) x[i] = (float)(i - 500) / 50.0f;
  K()->unary(HL_UN_RELU, HL_F32, N, o, x, 0);
  for (int i = 0; i < N; i++) assert_true(o[i] == (x[i] > 0 ? x[i] : 0.0f));
  K()->unary(HL_UN_POW, HL_F32, N, o, x, 2.0);
  for (int i = 0; i < N; i++) assert_true(o[i] == x[i] * x[i]);
  K()->unary(HL_UN_RDIV_SCALAR, HL_F32, N, o, x, 3.0);
  for (int i = 0; i < N; i++) assert_true(o[i] == 3.0f / x[i]);
  float nan_in = NAN, nan_out;
  K()->unary(HL_UN_RELU, HL_F32, 1, &nan_out, &nan_in, 0);
  assert_true(isnan(nan_out)); /* relu propagates NaN */
  /* f16: compute in float, round once */
  uint16_t h[N], ho[N];
  for (int i = 0; i < N; i++) h[i] = hl_f32_to_f16(x[i]);
  K()->unary(HL_UN_GELU, HL_F16, N, ho, h, 0);
  for (int i = 0; i < N; i++) assert_int_equal(ho[i], hl_f32_to_f16(hl_gelu_f32(hl_f16_to_f32(h[i]))));
  K()->unary(HL_UN_EXP, HL_BF16, N, ho, h, 0); /* reads h as bf16 bit patterns: any bits do */
  for (int i = 0; i < N; i++) {
    uint16_t want = hl_f32_to_bf16(hl_exp_f32(hl_bf16_to_f32(h[i])));
    if (hl_bf16_isnan(want)) assert_true(hl_bf16_isnan(ho[i]));
    else assert_int_equal(ho[i], want);
  }
  K()->unary_grad(HL_GRAD_GELU, HL_F32, N, o, x, x);
  for (int i = 0; i < N; i++) assert_true(o[i] == x[i] * hl_gelu_grad_f32(x[i]));
}

static void test_sum_is_deterministic(void **state) {
  (void)state;
  const int64_t n = 3000001;
  float *x = malloc(sizeof(float) * (size_t)n);
  assert_non_null(x);
  double exact = 0;
  for (int64_t i = 0; i < n; i++) {
    x[i] = hl_u32_to_unit_float(hl_philox_u32(5, 0, (uint64_t)i)) - 0.25f;
    exact += x[i];
  }
  float s1, s2;
  int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  K()->sum(HL_F32, &s1, x, 1, n, 1, 1.0);
  omp_set_num_threads(threads > 1 ? threads : 2);
  K()->sum(HL_F32, &s2, x, 1, n, 1, 1.0);
  omp_set_num_threads(threads);
  assert_memory_equal(&s1, &s2, sizeof s1); /* same bits for any thread count */
  assert_true(fabs(s1 - exact) <= 1e-6 * fabs(exact) + 1e-3);
  /* column sums: [outer 2, r 1000, inner 700] */
  float *cols = malloc(sizeof(float) * 1400);
  K()->sum(HL_F32, cols, x, 2, 1000, 700, 0.5);
  for (int o = 0; o < 2; o++)
    for (int i = 0; i < 700; i += 37) {
      double ref = 0;
      for (int j = 0; j < 1000; j++) ref += x[(o * 1000 + j) * 700 + i];
      assert_true(fabs(cols[o * 700 + i] - 0.5 * ref) <= 1e-4);
    }
  free(cols);
  /* f16 output of an f32-accumulated sum: 4096 x 16 = 65536 overflows only at the end */
  uint16_t h[4096], hs;
  for (int i = 0; i < 4096; i++) h[i] = hl_f32_to_f16(16.0f);
  K()->sum(HL_F16, &hs, h, 1, 4096, 1, 1.0);
  assert_true(hl_f16_isinf(hs));
  K()->sum(HL_F16, &hs, h, 1, 4096, 1, 1.0 / 4096);
  assert_true(hl_f16_to_f32(hs) == 16.0f); /* mean: 65536 / 4096, finite in f32 first */
  free(x);
}

/* fp16/bf16 column sums (a bias gradient in the amp modes): f32
 * accumulation in blocks of 128 rows folded into a running total per
 * column (kernels/cpu/tensor_cpu_reduce.c), rounded once; the same bits
 * as that order written out here, for any thread count */
/* One rounding to / exact widening from f16 or bf16 (t) */
static uint16_t round_to(int t, float v) { return t == HL_F16 ? hl_f32_to_f16(v) : hl_f32_to_bf16(v); }
static float widen_from(int t, uint16_t v) { return t == HL_F16 ? hl_f16_to_f32(v) : hl_bf16_to_f32(v); }

/* Column sums (a bias gradient) of f32, f16 and bf16: the order of additions
 * fixed (blocks of 128 rows, then their totals), so bit for bit a scalar
 * loop in that order, the same on 1 and 2 threads */
static void test_column_sums(void **state) {
  (void)state;
  /* the second shape crosses the kernel's 2048-column tasks, with one row
   * beyond a 128-row block */
  static const int64_t shapes[][3] = {{2, 300, 600}, {1, 129, 2100}};
  static const hl_dtype types[] = {HL_F32, HL_F16, HL_BF16};
  for (int si = 0; si < 2; si++) {
    const int64_t OUTER = shapes[si][0], R = shapes[si][1], INNER = shapes[si][2], N = OUTER * R * INNER;
    float *x = malloc(sizeof(float) * N), *got = malloc(sizeof(float) * OUTER * INNER);
    float *again = malloc(sizeof(float) * OUTER * INNER), *wide = malloc(sizeof(float) * N);
    assert_true(x && got && again && wide);
    for (int ti = 0; ti < 3; ti++) {
      const hl_dtype t = types[ti];
      const size_t es = hl_dtype_size(t);
      /* values exact in t, stored in t's bits in x's first bytes */
      uint16_t *h = (uint16_t *)x;
      for (int64_t i = 0; i < N; i++) {
        const float v = ldexpf(hl_u32_to_unit_float(hl_philox_u32(9, 1 + ti, (uint64_t)i)) * 2.0f - 1.0f, (int)(i % 9) - 4);
        if (t == HL_F32) wide[i] = v;
        else wide[i] = widen_from(t, h[i] = round_to(t, v));
      }
      if (t == HL_F32) memcpy(x, wide, sizeof(float) * N);
      const int threads = omp_get_max_threads();
      omp_set_num_threads(1);
      K()->sum(t, got, x, OUTER, R, INNER, 0.5);
      omp_set_num_threads(threads > 1 ? threads : 2);
      K()->sum(t, again, x, OUTER, R, INNER, 0.5);
      omp_set_num_threads(threads);
      assert_memory_equal(got, again, es * OUTER * INNER);
      for (int64_t o = 0; o < OUTER; o++)
        for (int64_t c = 0; c < INNER; c++) {
          float total = 0;
          for (int64_t j0 = 0; j0 < R; j0 += 128) {
            float block = 0;
            for (int64_t j = j0; j < R && j < j0 + 128; j++) block += wide[(o * R + j) * INNER + c];
            total += block;
          }
          const float want = 0.5f * total;
          const bool same = t == HL_F32 ? !memcmp(&got[o * INNER + c], &want, sizeof want)
                                        : ((uint16_t *)got)[o * INNER + c] == round_to(t, want);
          if (!same)
            fail_msg("%s column sum [%lld][%lld] of %lldx%lldx%lld differs from the scalar loop", hl_dtype_name(t),
                     (long long)o, (long long)c, (long long)OUTER, (long long)R, (long long)INNER);
        }
    }
    free(x), free(got), free(again), free(wide);
  }
}

static void test_softmax_layer_norm_rows(void **state) {
  (void)state;
  enum { R = 7, C = 37 };
  float x[R * C], y[R * C], mean[R], rstd[R];
  for (int i = 0; i < R * C; i++) x[i] = 3.0f * sinf(0.37f * (float)i);
  K()->softmax(HL_F32, y, x, R, C, false);
  for (int r = 0; r < R; r++) {
    double s = 0, m = -INFINITY;
    for (int c = 0; c < C; c++) m = fmax(m, x[r * C + c]);
    for (int c = 0; c < C; c++) s += exp(x[r * C + c] - m);
    for (int c = 0; c < C; c++) assert_true(fabs(y[r * C + c] - exp(x[r * C + c] - m) / s) <= 1e-6 * exp(x[r * C + c] - m) / s);
  }
  K()->softmax(HL_F32, y, x, R, C, true);
  for (int r = 0; r < R; r++) {
    double s = 0, m = -INFINITY;
    for (int c = 0; c < C; c++) m = fmax(m, x[r * C + c]);
    for (int c = 0; c < C; c++) s += exp(x[r * C + c] - m);
    for (int c = 0; c < C; c++) assert_true(fabs(y[r * C + c] - (x[r * C + c] - m - log(s))) <= 1e-5);
  }
  K()->layer_norm(HL_F32, y, mean, rstd, x, NULL, NULL, R, C, 1e-5);
  for (int r = 0; r < R; r++) {
    double m = 0, v = 0;
    for (int c = 0; c < C; c++) m += y[r * C + c];
    m /= C;
    for (int c = 0; c < C; c++) v += (y[r * C + c] - m) * (y[r * C + c] - m);
    assert_true(fabs(m) < 1e-6 && fabs(v / C - 1) < 1e-3);
  }
}

/* layer_norm_backward with weight, bias and dx all wanted runs one fused
 * pass per row (kernels/cpu/tensor_cpu_reduce.c); asked for dx alone, or
 * for dw and db alone, it takes the separate loops. Both must give the same
 * bits, in every dtype, at row lengths around the 16 lanes and row counts
 * around the 32-row blocks of the weight partials. */
static void test_layer_norm_backward_fused_is_unfused(void **state) {
  (void)state;
  static const hl_dtype types[] = {HL_F64, HL_F32, HL_F16, HL_BF16};
  static const int64_t shapes[][2] = {{1, 1}, {5, 7}, {33, 16}, {70, 17}, {65, 384}};
  for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
      const hl_dtype t = types[ti];
      const int64_t rows = shapes[si][0], cols = shapes[si][1], n = rows * cols;
      const size_t es = hl_dtype_size(t), ms = t == HL_F64 ? 8 : 4;
      char *x = malloc(n * es), *dy = malloc(n * es), *y = malloc(n * es), *w = malloc(cols * es), *b = malloc(cols * es);
      char *dx = malloc(n * es), *dx2 = malloc(n * es), *dw = malloc(cols * es), *dw2 = malloc(cols * es);
      char *db = malloc(cols * es), *db2 = malloc(cols * es), *mean = malloc(rows * ms), *rstd = malloc(rows * ms);
      assert_true(x && dy && y && w && b && dx && dx2 && dw && dw2 && db && db2 && mean && rstd);
      for (int64_t i = 0; i < n; i++) {
        hl_gemm_store(x, t, i, 2.0 * sin(0.37 * (double)i) + 0.25 * (double)(i % 5));
        hl_gemm_store(dy, t, i, cos(0.53 * (double)i + 1.0));
      }
      for (int64_t c = 0; c < cols; c++) {
        hl_gemm_store(w, t, c, 1.0 + 0.01 * (double)c);
        hl_gemm_store(b, t, c, 0.1 * sin((double)c));
      }
      K()->layer_norm(t, y, mean, rstd, x, w, b, rows, cols, 1e-5);
      K()->layer_norm_backward(t, dx, dw, db, dy, x, w, mean, rstd, rows, cols);   /* fused */
      K()->layer_norm_backward(t, dx2, NULL, NULL, dy, x, w, mean, rstd, rows, cols); /* dx alone */
      K()->layer_norm_backward(t, NULL, dw2, db2, dy, x, w, mean, rstd, rows, cols);  /* partials alone */
      if (memcmp(dx, dx2, n * es) || memcmp(dw, dw2, cols * es) || memcmp(db, db2, cols * es))
        fail_msg("layer_norm_backward %s %lldx%lld: the fused pass differs from the separate ones (dx %s, dw %s, db %s)",
                 hl_dtype_name(t), (long long)rows, (long long)cols, memcmp(dx, dx2, n * es) ? "differs" : "same",
                 memcmp(dw, dw2, cols * es) ? "differs" : "same", memcmp(db, db2, cols * es) ? "differs" : "same");
      free(x), free(dy), free(y), free(w), free(b), free(dx), free(dx2), free(dw), free(dw2), free(db), free(db2);
      free(mean), free(rstd);
    }
}

static void test_cross_entropy_kernel(void **state) {
  (void)state;
  enum { R = 5, C = 11 };
  float x[R * C], loss, row_loss[R], lse[R], dx[R * C], one = 1.0f;
  int32_t t[R] = {0, 10, 3, 3, 7}, bad = -1;
  for (int i = 0; i < R * C; i++) x[i] = 2.0f * cosf(0.91f * (float)i);
  K()->cross_entropy(HL_F32, &loss, row_loss, lse, x, t, R, C, &bad);
  assert_int_equal(bad, 0);
  double ref = 0;
  for (int r = 0; r < R; r++) {
    double s = 0;
    for (int c = 0; c < C; c++) s += exp(x[r * C + c]);
    ref += log(s) - x[r * C + t[r]];
  }
  assert_true(fabs(loss - ref / R) <= 1e-6);
  K()->cross_entropy_backward(HL_F32, dx, x, t, lse, &one, R, C);
  for (int r = 0; r < R; r++) {
    double rowsum = 0;
    for (int c = 0; c < C; c++) rowsum += dx[r * C + c];
    assert_true(fabs(rowsum) < 1e-6); /* softmax - onehot sums to 0 */
  }
  t[2] = 11;
  t[4] = -1;
  K()->cross_entropy(HL_F32, &loss, row_loss, lse, x, t, R, C, &bad);
  assert_int_equal(bad, 2);
  assert_true(isnan(loss));
}

static void test_copy_and_masks(void **state) {
  (void)state;
  /* transposed f32 [3,2] view -> contiguous bf16 */
  float a[6] = {1, 2, 3, 4, 5, 6};
  uint16_t o[6];
  int64_t size[4] = {1, 1, 3, 2};
  hl_kview d = {o, HL_BF16, {0, 0, 2, 1}}, s = {a, HL_F32, {0, 0, 1, 3}};
  K()->copy(&d, &s, size);
  const float want[6] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; i++) assert_true(hl_bf16_to_f32(o[i]) == want[i]);
  /* causal mask, square and with more keys than queries */
  float x[2 * 3 * 4], m[2 * 3 * 4];
  for (int i = 0; i < 24; i++) x[i] = 1.0f;
  K()->causal_mask(HL_F32, m, x, 2, 3, 4, -INFINITY);
  for (int b = 0; b < 2; b++)
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 4; c++) assert_true((c <= r + 1) == (m[(b * 3 + r) * 4 + c] == 1.0f));
  /* embedding: bad indices counted, rows zeroed */
  float w[4 * 2] = {0, 1, 2, 3, 4, 5, 6, 7}, e[3 * 2];
  int32_t idx[3] = {3, 4, 0}, bad = -1;
  K()->embedding(HL_F32, e, w, idx, 3, 2, 4, &bad);
  assert_int_equal(bad, 1);
  assert_true(e[0] == 6 && e[1] == 7 && e[2] == 0 && e[3] == 0 && e[4] == 0 && e[5] == 1);
}

/* fp16/bf16 rows run through the f32 loops a block at a time (widened on the
 * CPU's conversion path, rounded once on the way back): bit for bit what
 * element-by-element rounding of tensor_math.h's f32 result gives, for every
 * unary op, both activation gradients, broadcast and strided binary ops and contiguous
 * conversions, on random bit patterns (NaN, inf, subnormals, zeros) and a
 * length that is no multiple of the vector width or the block. */
static bool half_isnan(int t, uint16_t v) { return t == HL_F16 ? hl_f16_isnan(v) : hl_bf16_isnan(v); }

static void assert_half_equal(int t, uint16_t got, uint16_t want, const char *what, int i) {
  if (half_isnan(t, want) ? half_isnan(t, got) : got == want) return;
  fail_msg("%s %s element %d: 0x%04x, want 0x%04x", t == HL_F16 ? "f16" : "bf16", what, i, got, want);
}

static void test_half_rows_bit_for_bit(void **state) {
  (void)state;
  enum { N = 1037 };
  uint16_t x[N], y[N], o[N];
  float f[N];
  for (int i = 0; i < N; i++) {
    x[i] = (uint16_t)hl_philox_u32(9, 0, (uint64_t)i);
    y[i] = (uint16_t)hl_philox_u32(9, 1, (uint64_t)i);
  }
  x[0] = 0x0000, x[1] = 0x8000, x[2] = 0x0001, x[3] = 0x7c00, x[4] = 0xfc00, x[5] = 0x7e01; /* fp16 specials */
  const float params[] = {0.0f, 2.0f, 0.5f, -1.5f};
  for (int t = HL_F16; t <= HL_BF16; t++) {
    for (int op = 0; op < HL_UNARY_OPS; op++)
      for (int k = 0; k < (op == HL_UN_POW ? 4 : 1); k++) {
        const float p = op == HL_UN_POW ? params[k] : 1.25f;
        K()->unary((hl_unary_op)op, (hl_dtype)t, N, o, x, p);
        for (int i = 0; i < N; i++) {
          const float v = widen_from(t, x[i]);
          const float r = op == HL_UN_POW && p == 2.0f ? v * v : hl_unary_f32((hl_unary_op)op, v, p);
          assert_half_equal(t, o[i], round_to(t, r), "unary", i);
        }
      }
    for (int op = 0; op < HL_UNARY_GRAD_OPS; op++) {
      K()->unary_grad((hl_unary_grad_op)op, (hl_dtype)t, N, o, y, x);
      for (int i = 0; i < N; i++)
        assert_half_equal(t, o[i], round_to(t, hl_unary_grad_f32((hl_unary_grad_op)op, widen_from(t, y[i]), widen_from(t, x[i]))),
                          "unary_grad", i);
    }
    /* b broadcast along the row, then a */
    int64_t size[4] = {1, 1, 1, N};
    for (int op = 0; op < HL_BINARY_OPS; op++)
      for (int side = 0; side < 2; side++) {
        hl_kview vo = {o, (hl_dtype)t, {0, 0, 0, 1}};
        hl_kview va = {side ? x + 3 : x, (hl_dtype)t, {0, 0, 0, side ? 0 : 1}};
        hl_kview vb = {side ? y : y + 7, (hl_dtype)t, {0, 0, 0, side ? 1 : 0}};
        K()->binary((hl_binary_op)op, &vo, &va, &vb, size);
        for (int i = 0; i < N; i++) {
          const float a = widen_from(t, side ? x[3] : x[i]), b = widen_from(t, side ? y[i] : y[7]);
          assert_half_equal(t, o[i], round_to(t, hl_binary_f32((hl_binary_op)op, a, b)), "binary", i);
        }
      }
    /* a strided operand (a transposed gradient added into a slice): b, then
     * a, every 3rd element of a longer array */
    enum { S = 3 };
    static uint16_t xs[N * S], ys[N * S];
    for (int i = 0; i < N * S; i++) xs[i] = x[i % N], ys[i] = y[(i * 7) % N];
    for (int op = 0; op < HL_BINARY_OPS; op++)
      for (int side = 0; side < 2; side++) {
        hl_kview vo = {o, (hl_dtype)t, {0, 0, 0, 1}};
        hl_kview va = {side ? xs : x, (hl_dtype)t, {0, 0, 0, side ? S : 1}};
        hl_kview vb = {side ? y : ys, (hl_dtype)t, {0, 0, 0, side ? 1 : S}};
        K()->binary((hl_binary_op)op, &vo, &va, &vb, size);
        for (int i = 0; i < N; i++) {
          const float a = widen_from(t, side ? xs[i * S] : x[i]), b = widen_from(t, side ? y[i] : ys[i * S]);
          assert_half_equal(t, o[i], round_to(t, hl_binary_f32((hl_binary_op)op, a, b)), "strided binary", i);
        }
      }
    /* contiguous conversions both ways */
    int64_t csize[4] = {1, 1, 1, N};
    hl_kview wide = {f, HL_F32, {0, 0, 0, 1}}, half = {x, (hl_dtype)t, {0, 0, 0, 1}}, back = {o, (hl_dtype)t, {0, 0, 0, 1}};
    K()->copy(&wide, &half, csize);
    for (int i = 0; i < N; i++) {
      const float w = widen_from(t, x[i]);
      if (isnan(w)) assert_true(isnan(f[i]));
      else assert_true(memcmp(&f[i], &w, 4) == 0);
    }
    for (int i = 0; i < N; i++) f[i] = ldexpf((float)((int32_t)hl_philox_u32(9, 2, (uint64_t)i)), -30 + i % 60);
    K()->copy(&back, &wide, csize);
    for (int i = 0; i < N; i++) assert_half_equal(t, o[i], round_to(t, f[i]), "copy", i);
  }
}

/* causal_mask for every dtype it can be given, square and not (more keys
 * than queries and fewer), in place and out of place, small and large
 * enough to be split among threads: kept columns bit for bit the input,
 * masked ones the fill value stored once in the dtype. */
static void test_causal_mask_every_dtype(void **state) {
  (void)state;
  const int64_t shapes[][3] = {{3, 5, 5}, {2, 4, 9}, {2, 9, 4}, {1, 1, 1}, {2, 70, 600}, {1, 3, 1}};
  const hl_dtype types[] = {HL_F64, HL_F32, HL_F16, HL_BF16, HL_I32, HL_I8};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
      for (int in_place = 0; in_place < 2; in_place++) {
        const hl_dtype t = types[k];
        const size_t es = hl_dtype_size(t);
        const int64_t B = shapes[si][0], R = shapes[si][1], C = shapes[si][2], n = B * R * C;
        const double value = hl_dtype_is_float(t) ? -INFINITY : -7;
        unsigned char *x = malloc((size_t)n * es), *copy = malloc((size_t)n * es), *o = malloc((size_t)n * es);
        unsigned char fill[8];
        assert_true(x && copy && o);
        for (size_t i = 0; i < (size_t)n * es; i++) x[i] = (unsigned char)hl_philox_u32(61, 0, i);
        memcpy(copy, x, (size_t)n * es);
        hl_store_from_f64(fill, t, 0, value);
        unsigned char *out = in_place ? x : o;
        K()->causal_mask(t, out, x, B, R, C, value);
        for (int64_t b = 0; b < B; b++)
          for (int64_t r = 0; r < R; r++)
            for (int64_t c = 0; c < C; c++) {
              const size_t at = (size_t)((b * R + r) * C + c) * es;
              const unsigned char *want = c <= r + (C - R) ? copy + at : fill;
              if (memcmp(out + at, want, es))
                fail_msg("causal_mask %s [%lld,%lld,%lld]%s: element (%lld,%lld,%lld) wrong", hl_dtype_name(t),
                         (long long)B, (long long)R, (long long)C, in_place ? " in place" : "", (long long)b,
                         (long long)r, (long long)c);
            }
        free(x);
        free(copy);
        free(o);
      }
}

/* distance of v from the double reference r in ulps of dtype t at r */
static double ulp_of(hl_dtype t, double r) {
  const int p = t == HL_F16 ? 11 : t == HL_BF16 ? 8 : 24;
  const int emin = t == HL_F16 ? -14 : -126;
  const int e = r == 0 ? emin : (ilogb(r) < emin ? emin : ilogb(r));
  return ldexp(1.0, e - (p - 1));
}

/* gelu as x / (1 + e^(-2u)) in long double: gelu_ref's 1 + tanh(u)
 * cancels to 0 below x = -6.5 even in long double */
static double gelu_sigmoid_ref(double x) {
  const long double xl = x, u = 0.7978845608028654L * (xl + 0.044715L * xl * xl * xl);
  return (double)(xl / (1 + expl(-2 * u)));
}

/* d/dx of 0.5 x (1 + tanh u) in long double */
static double gelu_grad_ref(double x) {
  const long double c = 0.7978845608028654L, a = 0.044715L, xl = x;
  const long double u = c * (xl + a * xl * xl * xl), th = tanhl(u);
  return (double)(0.5L * (1 + th) + 0.5L * xl * (1 - th * th) * c * (1 + 3 * a * xl * xl));
}

/* GELU and its gradient through the kernels (the vectorised clones the
 * loader picks), f32 / f16 / bf16 inputs each rounded once from a grid on
 * [-12, 12]: bit for bit tensor_math.h's scalar functions, which the CUDA
 * kernels call too, and within the stated bounds of the fp64 reference.
 * f32 forward: relative (8 + 8|u|) 2^-24, u's rounding amplified in the
 * negative tail (test_gelu_math); f32 gradient: absolute
 * 4 (1 + |x| u'(x)) 2^-24 (measured: at most 2.6 (1 + |x| u') 2^-24), the
 * roundings of s and u amplified by 2 x u' in s + 2 x s (1 - s) u'; below x = -10.07 (|gelu| < 4e-38) e^(-2u)
 * overflows and the forward is -0, hence an absolute 1e-37 on top. f16 / bf16: one
 * rounding on top, at most one ulp of the type at the reference, plus the
 * f32 bound. */
static void test_gelu_kernels_against_reference(void **state) {
  (void)state;
  enum { N = 24001 };
  float *xf = malloc(sizeof(float) * N), *of = malloc(sizeof(float) * N), *gf = malloc(sizeof(float) * N);
  float *ones = malloc(sizeof(float) * N);
  uint16_t *xh = malloc(2 * N), *oh = malloc(2 * N), *gh = malloc(2 * N), *oneh = malloc(2 * N);
  assert_true(xf && of && gf && ones && xh && oh && gh && oneh);
  const hl_dtype types[] = {HL_F32, HL_F16, HL_BF16};
  for (size_t k = 0; k < 3; k++) {
    const hl_dtype t = types[k];
    double worst_f = 0, worst_g = 0;
    for (int i = 0; i < N; i++) {
      const double v = -12.0 + 24.0 * i / (N - 1);
      xf[i] = t == HL_F32 ? (float)v : widen_from(t, t == HL_F16 ? hl_f64_to_f16(v) : hl_f64_to_bf16(v));
      if (t != HL_F32) xh[i] = round_to(t, xf[i]); /* exact: xf[i] is a value of t */
      ones[i] = 1.0f;
      oneh[i] = round_to(t == HL_F32 ? HL_BF16 : t, 1.0f);
    }
    if (t == HL_F32) {
      K()->unary(HL_UN_GELU, t, N, of, xf, 0);
      K()->unary_grad(HL_GRAD_GELU, t, N, gf, ones, xf);
    } else {
      K()->unary(HL_UN_GELU, t, N, oh, xh, 0);
      K()->unary_grad(HL_GRAD_GELU, t, N, gh, oneh, xh);
      for (int i = 0; i < N; i++) of[i] = widen_from(t, oh[i]), gf[i] = widen_from(t, gh[i]);
    }
    for (int i = 0; i < N; i++) {
      const float x = xf[i];
      /* the scalar functions, rounded once */
      const float want_f = t == HL_F32 ? hl_gelu_f32(x) : widen_from(t, round_to(t, hl_gelu_f32(x)));
      const float want_g = t == HL_F32 ? hl_gelu_grad_f32(x) : widen_from(t, round_to(t, hl_gelu_grad_f32(x)));
      if (of[i] != want_f || gf[i] != want_g)
        fail_msg("gelu %s at x = %.9g: kernel %.9g / %.9g, scalar %.9g / %.9g", hl_dtype_name(t), x, of[i], gf[i],
                 want_f, want_g);
      const double u = 0.7978845608028654 * (x + 0.044715 * (double)x * x * x);
      const double du = 0.7978845608028654 * (1 + 3 * 0.044715 * (double)x * x);
      const double rf = gelu_sigmoid_ref(x), rg = gelu_grad_ref(x);
      const double bound_f = (8 + 8 * fabs(u)) * 0x1p-24 * fabs(rf) + 1e-37 + (t == HL_F32 ? 0 : ulp_of(t, rf));
      const double bound_g = 4 * (1 + fabs(x) * du) * 0x1p-24 + (t == HL_F32 ? 0 : ulp_of(t, rg));
      const double ef = fabs(of[i] - rf), eg = fabs(gf[i] - rg);
      if (ef > bound_f || eg > bound_g)
        fail_msg("gelu %s at x = %.9g: error %.3g / %.3g over the bound %.3g / %.3g", hl_dtype_name(t), x, ef, eg,
                 bound_f, bound_g);
      if (ef / bound_f > worst_f) worst_f = ef / bound_f;
      if (eg / bound_g > worst_g) worst_g = eg / bound_g;
    }
    print_message("gelu %s: worst error %.2f of the bound (forward), %.2f (gradient)\n", hl_dtype_name(t), worst_f,
                  worst_g);
  }
  free(xf), free(of), free(gf), free(ones), free(xh), free(oh), free(gh), free(oneh);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exp_accuracy),          cmocka_unit_test(test_gelu_math),
      cmocka_unit_test(test_f64_to_half_rounds_once), cmocka_unit_test(test_binary_rounds_once),
      cmocka_unit_test(test_binary_broadcast_and_inplace), cmocka_unit_test(test_unary_ops),
      cmocka_unit_test(test_sum_is_deterministic), cmocka_unit_test(test_column_sums), cmocka_unit_test(test_softmax_layer_norm_rows),
      cmocka_unit_test(test_layer_norm_backward_fused_is_unfused),
      cmocka_unit_test(test_cross_entropy_kernel),  cmocka_unit_test(test_copy_and_masks),
      cmocka_unit_test(test_half_rows_bit_for_bit), cmocka_unit_test(test_causal_mask_every_dtype),
      cmocka_unit_test(test_gelu_kernels_against_reference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
