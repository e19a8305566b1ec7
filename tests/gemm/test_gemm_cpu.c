/* test_gemm_cpu.c — suite unit: the CPU backend of kernels/gemm.h against a
 * double-precision reference computed here, element by element.
 *
 * Covered: every transpose combination, padded leading dimensions, strided
 * batches (on one thread and shared among two), outer batches (attention's
 * heads: bit for bit one call per group), alpha and beta != 0, fp16/bf16 storage (widened, fp32 sgemm,
 * rounded once), mixed operand types, fp64, empty shapes, the size of the
 * working copies where A's whole copy is not needed, and the reasons
 * supports() gives for what the CPU cannot run.
 *
 * Tolerances (stated, not tuned): an fp32-accumulated result may differ
 * from the exact one by (k + 2) u32 (|alpha| sum_j |a_ij b_jl| + |beta c_il|),
 * u32 = 2^-24 (Higham's bound for a dot product of length k, plus the
 * alpha/beta steps); an fp16/bf16 output adds one rounding to the output
 * format, u = 2^-11 / 2^-8 of the magnitude. */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/gemm.h"
#include "tests/support/hltest.h"

static const struct hl_gemm_kernels *K(void) { return hl_backend_cpu.gemm; }

/* Random values in [-1, 1) that are exact in every storage type used (multiples of 2^-7 with 8 bits) */
static double draw(uint64_t stream, uint64_t i) {
  uint32_t u = hl_philox_u32(1234, stream, i);
  return (double)((int)(u >> 24) - 128) / 128.0;
}

/* Buffer of `count` elements of type t, filled from stream `s` */
static void *filled(hl_dtype t, int64_t count, uint64_t s) {
  void *p = malloc(hl_dtype_size(t) * (size_t)(count ? count : 1));
  assert_non_null(p);
  for (int64_t i = 0; i < count; i++) hl_gemm_store(p, t, i, draw(s, (uint64_t)i));
  return p;
}

typedef struct {
  bool ta, tb;
  int64_t m, n, k, batch;
  int64_t pad_a, pad_b, pad_c;  /* extra elements per stored row */
  int64_t gap;                  /* extra elements between batch entries */
  bool shared_b;                /* one B for every batch entry (batch stride 0) */
  hl_dtype at, bt, ct;
  hl_gemm_compute compute;
  float alpha, beta;
  bool bias;                    /* a row bias of bias_t (with beta = 0) */
  hl_dtype bias_t;
} gemm_case;

/* Runs one case and checks every element of C, and that the padding
 * around C was not touched. */
static void check_case_on(const gemm_case *g);

/* A batch runs one of two ways (kernels/cpu/gemm_cpu.c): entries shared out
 * among the OpenMP threads one per thread, or, on one thread, entry after
 * entry with OpenBLAS sharing each product. Both are checked, whatever the
 * machine's core count. */
static void check_case(const gemm_case *g) {
  if (g->batch < 2) {
    check_case_on(g);
    return;
  }
  const int threads = omp_get_max_threads();
  for (int t = 1; t <= 2; t++) {
    omp_set_num_threads(t);
    check_case_on(g);
  }
  omp_set_num_threads(threads);
}

static void check_case_on(const gemm_case *g) {
  const int64_t a_rows = g->ta ? g->k : g->m, a_cols = g->ta ? g->m : g->k;
  const int64_t b_rows = g->tb ? g->n : g->k, b_cols = g->tb ? g->k : g->n;
  const int64_t lda = a_cols + g->pad_a, ldb = b_cols + g->pad_b, ldc = g->n + g->pad_c;
  const int64_t sa = a_rows * lda + g->gap, sb = g->shared_b ? 0 : b_rows * ldb + g->gap, sc = g->m * ldc + g->gap;
  void *a = filled(g->at, sa * g->batch, 1);
  void *b = filled(g->bt, g->shared_b ? b_rows * ldb : sb * g->batch, 2);
  void *c = filled(g->ct, sc * g->batch, 3);
  void *c0 = malloc(hl_dtype_size(g->ct) * (size_t)(sc * g->batch > 0 ? sc * g->batch : 1));
  assert_non_null(c0);
  void *bias = g->bias ? filled(g->bias_t, g->n, 4) : NULL;
  memcpy(c0, c, hl_dtype_size(g->ct) * (size_t)(sc * g->batch));

  hl_gemm_desc d = {
      .trans_a = g->ta, .trans_b = g->tb, .m = g->m, .n = g->n, .k = g->k, .batch = g->batch,
      .a_type = g->at, .b_type = g->bt, .c_type = g->ct, .compute = g->compute,
      .alpha = g->alpha, .beta = g->beta,
      .a = a, .lda = lda, .stride_a = sa, .b = b, .ldb = ldb, .stride_b = sb,
      .c = c, .ldc = ldc, .stride_c = sc, .bias = bias, .bias_type = g->bias_t};
  char why[256] = "";
  assert_true(K()->supports(&d, why, sizeof why));
  K()->gemm(&d);

  const double u_acc = g->compute == HL_COMPUTE_F64 ? 0x1p-53 : 0x1p-24;
  const double u_out = g->ct == HL_F16 ? 0x1p-11 : g->ct == HL_BF16 ? 0x1p-8 : g->ct == HL_F32 ? 0x1p-24 : 0x1p-53;
  for (int64_t bi = 0; bi < g->batch; bi++) {
    for (int64_t i = 0; i < g->m; i++) {
      for (int64_t j = 0; j < g->n; j++) {
        double exact = 0, mag = 0;
        for (int64_t p = 0; p < g->k; p++) {
          double x = hl_gemm_load(a, g->at, bi * sa + (g->ta ? p * lda + i : i * lda + p));
          double y = hl_gemm_load(b, g->bt, bi * sb + (g->tb ? j * ldb + p : p * ldb + j));
          exact += x * y;
          mag += fabs(x * y);
        }
        double cin = hl_gemm_load(c0, g->ct, bi * sc + i * ldc + j);
        const double row_bias = bias ? hl_gemm_load(bias, g->bias_t, j) : 0.0;
        double want = g->alpha * exact + g->beta * cin + row_bias;
        double bound = (double)(g->k + 2) * u_acc * (fabs(g->alpha) * mag + fabs(g->beta * cin) + fabs(row_bias)) +
                       u_out * fabs(want) + 1e-300;
        /* fp16 outputs below 2^-14 are subnormal: absolute spacing 2^-24 */
        if (g->ct == HL_F16) bound += 0x1p-25;
        double got = hl_gemm_load(c, g->ct, bi * sc + i * ldc + j);
        if (!(fabs(got - want) <= bound))
          fail_msg("batch %lld C[%lld][%lld] = %.9g, want %.9g (bound %.3g) ta=%d tb=%d %s/%s/%s",
                   (long long)bi, (long long)i, (long long)j, got, want, bound, g->ta, g->tb,
                   hl_dtype_name(g->at), hl_dtype_name(g->bt), hl_dtype_name(g->ct));
      }
      for (int64_t j = g->n; j < ldc; j++) /* padding of C untouched */
        assert_true(hl_gemm_load(c, g->ct, bi * sc + i * ldc + j) == hl_gemm_load(c0, g->ct, bi * sc + i * ldc + j));
    }
    for (int64_t e = g->m * ldc; e < sc; e++) /* gap between batch entries untouched */
      assert_true(hl_gemm_load(c, g->ct, bi * sc + e) == hl_gemm_load(c0, g->ct, bi * sc + e));
  }
  free(a);
  free(b);
  free(c);
  free(c0);
  free(bias);
}

static const hl_dtype storage[] = {HL_F32, HL_F16, HL_BF16};

static void test_transposes_and_padding(void **state) {
  (void)state;
  for (int s = 0; s < 3; s++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        gemm_case g = {.ta = ta, .tb = tb, .m = 7, .n = 5, .k = 9, .batch = 1, .pad_a = 3, .pad_b = 1,
                       .pad_c = 2, .at = storage[s], .bt = storage[s], .ct = storage[s],
                       .compute = HL_COMPUTE_F32, .alpha = 1.0f, .beta = 0.0f};
        check_case(&g);
      }
}

static void test_alpha_beta(void **state) {
  (void)state;
  for (int s = 0; s < 3; s++) {
    gemm_case g = {.ta = false, .tb = true, .m = 6, .n = 11, .k = 13, .batch = 1, .pad_c = 3,
                   .at = storage[s], .bt = storage[s], .ct = storage[s], .compute = HL_COMPUTE_F32,
                   .alpha = -0.75f, .beta = 0.5f};
    check_case(&g);
    g.beta = 1.0f;
    g.alpha = 2.0f;
    check_case(&g);
  }
}

static void test_strided_batches(void **state) {
  (void)state;
  for (int s = 0; s < 3; s++)
    for (int t = 0; t < 4; t++) {
      gemm_case g = {.ta = t & 1, .tb = t >> 1, .m = 5, .n = 4, .k = 6, .batch = 3, .pad_a = 1, .pad_b = 2,
                     .pad_c = 1, .gap = 5, .at = storage[s], .bt = storage[s], .ct = storage[s],
                     .compute = HL_COMPUTE_F32, .alpha = 1.0f, .beta = 0.25f};
      check_case(&g);
    }
}

/* Half operands stored end to end (each batch's rows one run), a B every
 * entry shares, and a batch whose fp32 copies exceed what one conversion
 * pass holds (32 MiB: 9 entries of a 1024 x 1024 C go in two groups) */
static void test_dense_batches_and_groups(void **state) {
  (void)state;
  for (int s = 1; s < 3; s++)
    for (int t = 0; t < 4; t++) {
      gemm_case g = {.ta = t & 1, .tb = t >> 1, .m = 33, .n = 17, .k = 40, .batch = 5, .at = storage[s], .bt = storage[s],
                     .ct = storage[s], .compute = HL_COMPUTE_F32, .alpha = 1.0f, .beta = 0.5f};
      check_case(&g);
      g.shared_b = true;
      check_case(&g);
    }
  gemm_case big = {.ta = false, .tb = true, .m = 1024, .n = 1024, .k = 16, .batch = 9, .at = HL_F16, .bt = HL_F16,
                   .ct = HL_F16, .compute = HL_COMPUTE_F32, .alpha = 1.0f, .beta = 0.5f};
  check_case(&big);
  big.shared_b = true, big.at = big.bt = big.ct = HL_BF16;
  check_case(&big);
}

/* An outer batch (batch_outer): attention's layout, where A is the
 * [B0, B1, m, k] view of a [B0, m, B1 * k] projection (the two batch dims
 * do not merge into one stride), B transposed and shared along the outer
 * dim or not, C dense. Every element within the reference bound, and bit
 * for bit what one call per outer group gives; on 1 and 2 threads, and
 * with entries large enough that each group is shared among the threads. */
static void outer_batch_case(hl_dtype t, int64_t m, int64_t n, int64_t k, bool shared_b_outer) {
  enum { B0 = 3, B1 = 4 };
  const int64_t lda = B1 * k, sa = k, oa = m * B1 * k; /* A[i][j] = base + i oa + j sa, rows lda */
  const int64_t ldb = k, sb = n * k, ob = shared_b_outer ? 0 : B1 * n * k; /* B^T stored [n, k] */
  const int64_t ldc = n, sc = m * n, oc = B1 * m * n;
  void *a = filled(t, B0 * oa, 11), *b = filled(t, shared_b_outer ? B1 * sb : B0 * ob, 12);
  const size_t c_bytes = hl_dtype_size(t) * (size_t)(B0 * oc);
  void *c = calloc(1, c_bytes), *c_groups = calloc(1, c_bytes);
  assert_non_null(c), assert_non_null(c_groups);
  hl_gemm_desc d = {.trans_a = false, .trans_b = true, .m = m, .n = n, .k = k, .batch = B1,
                    .a_type = t, .b_type = t, .c_type = t, .compute = HL_COMPUTE_F32, .alpha = 1.0f, .beta = 0.0f,
                    .a = a, .lda = lda, .stride_a = sa, .b = b, .ldb = ldb, .stride_b = sb,
                    .c = c, .ldc = ldc, .stride_c = sc,
                    .batch_outer = B0, .outer_stride_a = oa, .outer_stride_b = ob, .outer_stride_c = oc};
  assert_true(K()->outer_batch);
  { /* the same library as its groups (bf16: oneDNN, a fourth dimension) */
    hl_gemm_desc g = d;
    g.batch_outer = 1;
    char whole[256], group[256];
    K()->describe(&d, whole, sizeof whole);
    K()->describe(&g, group, sizeof group);
    if ((strstr(whole, "onednn") != NULL) != (strstr(group, "onednn") != NULL))
      fail_msg("%s outer batch: \"%s\", its groups: \"%s\"", hl_dtype_name(t), whole, group);
  }
  const int threads = omp_get_max_threads();
  for (int th = 1; th <= 2; th++) {
    omp_set_num_threads(th);
    memset(c, 0xff, c_bytes);
    K()->gemm(&d);
    for (int64_t i = 0; i < B0; i++) { /* one call per group */
      hl_gemm_desc g = d;
      g.batch_outer = 1, g.outer_stride_a = g.outer_stride_b = g.outer_stride_c = 0;
      g.a = (const char *)a + (size_t)(i * oa) * hl_dtype_size(t);
      g.b = (const char *)b + (size_t)(i * ob) * hl_dtype_size(t);
      g.c = (char *)c_groups + (size_t)(i * oc) * hl_dtype_size(t);
      K()->gemm(&g);
    }
    if (memcmp(c, c_groups, c_bytes))
      fail_msg("%s %lldx%lldx%lld, %d threads: the outer batch differs from one call per group", hl_dtype_name(t),
               (long long)m, (long long)n, (long long)k, th);
    const double u_out = t == HL_F16 ? 0x1p-11 : t == HL_BF16 ? 0x1p-8 : 0x1p-24;
    for (int64_t i = 0; i < B0; i++)
      for (int64_t j = 0; j < B1; j++)
        for (int64_t r = 0; r < m; r++)
          for (int64_t col = 0; col < n; col++) {
            double exact = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
              const double x = hl_gemm_load(a, t, i * oa + j * sa + r * lda + p);
              const double y = hl_gemm_load(b, t, i * ob + j * sb + col * ldb + p);
              exact += x * y, mag += fabs(x * y);
            }
            const double got = hl_gemm_load(c, t, i * oc + j * sc + r * ldc + col);
            const double bound = (double)(k + 2) * 0x1p-24 * mag + u_out * fabs(exact) + 0x1p-25;
            if (!(fabs(got - exact) <= bound))
              fail_msg("%s outer %lld entry %lld C[%lld][%lld] = %.9g, want %.9g", hl_dtype_name(t), (long long)i,
                       (long long)j, (long long)r, (long long)col, got, exact);
          }
  }
  omp_set_num_threads(threads);
  free(a), free(b), free(c), free(c_groups);
}

static void test_outer_batch(void **state) {
  (void)state;
  for (int s = 0; s < 3; s++) {
    outer_batch_case(storage[s], 9, 7, 16, false);
    outer_batch_case(storage[s], 9, 7, 16, true);
    outer_batch_case(storage[s], 300, 200, 300, false); /* entries OpenBLAS shares: one call per group */
  }
}

/* a_as_before: the widening path keeps the fp32 copy of A for the next call
 * that promises the same stored A, plain or transposed (a linear's dX and
 * dW products). Seen by breaking the promise: A changed in between, the
 * promised call still multiplies the old copy; a call without the promise,
 * or with another A, converts afresh. */
static void a_as_before_case(int64_t AM, int64_t AK) {
  enum { AN = 16 };
  const hl_dtype t = HL_F16;
  uint16_t *a = filled(t, AM * AK, 21), *a2 = filled(t, AM * AK, 23);
  void *b = filled(t, AK * AN, 22), *bt = filled(t, AM * AN, 24);
  uint16_t *c_first = calloc((size_t)(AM * AN), 2), *c = calloc((size_t)(AM * AN), 2);
  uint16_t *ct_old = calloc((size_t)(AK * AN), 2), *ct_new = calloc((size_t)(AK * AN), 2);
  assert_true(c_first && c && ct_old && ct_new);
  hl_gemm_desc d = {.m = AM, .n = AN, .k = AK, .batch = 1, .a_type = t, .b_type = t, .c_type = t,
                    .compute = HL_COMPUTE_F32, .alpha = 1.0f, .a = a, .lda = AK, .b = b, .ldb = AN, .c = c_first, .ldc = AN};
  /* the transposed use of the same stored A: [K, M] x [M, N] */
  hl_gemm_desc dt = {.trans_a = true, .m = AK, .n = AN, .k = AM, .batch = 1, .a_type = t, .b_type = t, .c_type = t,
                     .compute = HL_COMPUTE_F32, .alpha = 1.0f, .a = a, .lda = AK, .b = bt, .ldb = AN, .c = ct_new, .ldc = AN};
  K()->gemm(&d);
  /* the same plain product promised, A changed behind the promise: the copy again */
  for (int64_t i = 0; i < AM * AK; i++) a[i] ^= 0x8000;
  d.c = c, d.a_as_before = true;
  K()->gemm(&d);
  assert_memory_equal(c, c_first, 2 * (size_t)(AM * AN));
  for (int64_t i = 0; i < AM * AK; i++) a[i] ^= 0x8000;
  d.c = c_first, d.a_as_before = false;
  dt.a_as_before = false;
  K()->gemm(&dt);
  memcpy(ct_old, ct_new, 2 * (size_t)(AK * AN));
  for (int64_t i = 0; i < AM * AK; i++) a[i] ^= 0x8000; /* every sign flipped behind the promise */
  K()->gemm(&d); /* no promise: slot 3 now holds the flipped A */
  for (int64_t i = 0; i < AM * AK; i++) a[i] ^= 0x8000; /* back to the true A */
  dt.a_as_before = true;
  K()->gemm(&dt); /* promised: the copy of the flipped A, transposed */
  for (int64_t i = 0; i < AK * AN; i++)
    if (ct_new[i] != (ct_old[i] ^ 0x8000) && ct_old[i] != 0)
      fail_msg("the promised call did not reuse the copy: element %lld 0x%04x, old 0x%04x", (long long)i, ct_new[i],
               ct_old[i]);
  dt.a_as_before = false;
  K()->gemm(&dt); /* no promise: the true A again */
  assert_memory_equal(ct_new, ct_old, 2 * (size_t)(AK * AN));
  /* a promise with another A is not taken for the old one */
  d.c = c;
  d.a = a2, d.a_as_before = true;
  K()->gemm(&d);
  hl_gemm_desc plain = d;
  plain.a_as_before = false, plain.c = c_first;
  K()->gemm(&plain);
  assert_memory_equal(c, c_first, 2 * (size_t)(AM * AN));
  free(a), free(a2), free(b), free(bt), free(c_first), free(c), free(ct_old), free(ct_new);
}

/* A of 40 x 24: each product whole; 600 x 24 on 2 threads: the plain
 * product in parallel blocks of rows, A's copy made block by block; 600 x
 * 200: the transposed one too, from the ready copy */
static void test_a_as_before(void **state) {
  (void)state;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  a_as_before_case(40, 24);
  a_as_before_case(600, 24);
  a_as_before_case(600, 200);
  omp_set_num_threads(threads);
}

/* A product whose A and C copies alone exceed 32 MiB (GPT-2's logits) runs in
 * blocks of C's rows, B widened once: 4100 x 2100 rows go in two blocks of
 * unequal size, A plain and transposed, C read (beta) and padded */
static void test_row_blocks(void **state) {
  (void)state;
  for (int s = 1; s < 3; s++)
    for (int ta = 0; ta < 2; ta++) {
      gemm_case g = {.ta = ta, .tb = s == 2, .m = 4100, .n = 2100, .k = 24, .batch = 1, .pad_a = 3, .pad_c = 5,
                     .at = storage[s], .bt = storage[s], .ct = storage[s], .compute = HL_COMPUTE_F32,
                     .alpha = 1.0f, .beta = 0.5f};
      check_case(&g);
    }
  /* fp32 C, half A: only A's copy is blocked */
  gemm_case g = {.ta = false, .tb = false, .m = 9000, .n = 40, .k = 1000, .batch = 1, .at = HL_F16, .bt = HL_F16,
                 .ct = HL_F32, .compute = HL_COMPUTE_F32, .alpha = 2.0f, .beta = 0.0f};
  check_case(&g);
}

/* One product with a half A or C and m of at least 64 rows per thread runs
 * in blocks of C's rows shared among the threads (kernels/cpu/gemm_cpu.c,
 * parallel_block_rows): an uneven last block, B plain and transposed,
 * padded rows, C read (beta), a bias, an fp32 C; each checked against fp64
 * on 2 threads, and the same bits as on 1 thread (the path not taken, one
 * sgemm over all the rows: blocks of rows do not change any element's sum) */
static void parallel_rows_case(const gemm_case *g) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  check_case_on(g);
  const int64_t b_rows = g->tb ? g->n : g->k, b_cols = g->tb ? g->k : g->n;
  void *a = filled(g->at, g->m * (g->k + g->pad_a), 31), *b = filled(g->bt, b_rows * b_cols, 32);
  void *bias = g->bias ? filled(g->bias_t, g->n, 33) : NULL;
  const size_t c_bytes = hl_dtype_size(g->ct) * (size_t)(g->m * (g->n + g->pad_c));
  void *c[2] = {filled(g->ct, g->m * (g->n + g->pad_c), 34), malloc(c_bytes)};
  assert_non_null(c[1]);
  memcpy(c[1], c[0], c_bytes);
  for (int run = 0; run < 2; run++) {
    omp_set_num_threads(2 - run);
    hl_gemm_desc d = {.trans_b = g->tb, .m = g->m, .n = g->n, .k = g->k, .batch = 1, .a_type = g->at,
                      .b_type = g->bt, .c_type = g->ct, .compute = HL_COMPUTE_F32, .alpha = g->alpha,
                      .beta = g->beta, .a = a, .lda = g->k + g->pad_a, .b = b, .ldb = b_cols, .c = c[run],
                      .ldc = g->n + g->pad_c, .bias = bias, .bias_type = g->bias_t};
    K()->gemm(&d);
  }
  assert_memory_equal(c[0], c[1], c_bytes);
  omp_set_num_threads(threads);
  free(a), free(b), free(bias), free(c[0]), free(c[1]);
}

static void test_parallel_row_blocks(void **state) {
  (void)state;
  for (int s = 1; s < 3; s++)
    for (int tb = 0; tb < 2; tb++) {
      gemm_case g = {.tb = tb, .m = 701, .n = 45, .k = 70, .batch = 1, .pad_a = 3, .pad_c = 2, .at = storage[s],
                     .bt = storage[s], .ct = storage[s], .compute = HL_COMPUTE_F32, .alpha = 0.5f, .beta = 0.75f};
      parallel_rows_case(&g);
      g.beta = 0.0f, g.bias = true, g.bias_t = storage[s];
      parallel_rows_case(&g);
      g.bias = false, g.ct = HL_F32, g.bt = HL_F32, g.beta = 1.0f; /* only A half */
      parallel_rows_case(&g);
      g.at = HL_F32, g.bt = storage[s], g.ct = storage[s], g.m = 130; /* only C half, two blocks of 65 */
      parallel_rows_case(&g);
    }
}

/* A product that does not need A's whole fp32 copy does not allocate one
 * (kernels/cpu/gemm_cpu.c: GPT-2's logits gradient would ask for 2.5 GB):
 * a half A of 3000 x 4000 (48 MB in fp32) times a 4-column B runs in row
 * blocks on one thread and in parallel blocks on two; either way the calling
 * thread's copies stay within the 32 MiB of A and C blocks the file states
 * plus B's copy. A whole copy of A would take them past 80 MB. */
static void test_working_copies_bounded(void **state) {
  (void)state;
  const int threads = omp_get_max_threads();
  const gemm_case g = {.m = 3000, .n = 4, .k = 4000, .batch = 1, .at = HL_F16, .bt = HL_F16, .ct = HL_F16,
                       .compute = HL_COMPUTE_F32, .alpha = 1.0f, .beta = 0.0f};
  const size_t bound = (32u << 20) + sizeof(float) * (size_t)(g.k * g.n);
  for (int t = 1; t <= 2; t++) {
    omp_set_num_threads(t);
    hl_cpu_gemm_release_working();
    check_case_on(&g);
    const size_t bytes = hl_cpu_gemm_working_bytes();
    if (bytes == 0 || bytes > bound)
      fail_msg("%d thread(s): %zu bytes of working copies, want 1 to %zu", t, bytes, bound);
  }
  omp_set_num_threads(threads);
  hl_cpu_gemm_release_working();
}

/* A row bias (hl_gemm_desc.bias) on every path: one entry, a batch of small
 * entries, row blocks, k = 0; bias in C's type and in fp32 */
static void test_row_bias(void **state) {
  (void)state;
  for (int s = 0; s < 3; s++)
    for (int bt = 0; bt < 2; bt++) {
      const hl_dtype bias_t = bt ? HL_F32 : storage[s];
      gemm_case g = {.ta = false, .tb = true, .m = 37, .n = 29, .k = 41, .batch = 1, .pad_c = 2, .at = storage[s],
                     .bt = storage[s], .ct = storage[s], .compute = HL_COMPUTE_F32, .alpha = 1.0f, .beta = 0.0f,
                     .bias = true, .bias_t = bias_t};
      check_case(&g);
      g.batch = 6, g.gap = 3;
      check_case(&g);
      g.batch = 1, g.gap = 0, g.k = 0;
      check_case(&g);
    }
  gemm_case big = {.ta = true, .tb = false, .m = 4100, .n = 2100, .k = 16, .batch = 1, .at = HL_F16, .bt = HL_F16,
                   .ct = HL_F16, .compute = HL_COMPUTE_F32, .alpha = 1.0f, .beta = 0.0f, .bias = true,
                   .bias_t = HL_F16};
  check_case(&big);
}

/* The bias carried in the widening path's fp32 copy of C gives the bits that
 * writing it into a half C first and accumulating onto it (beta = 1) gives:
 * one rounding either way */
static void test_row_bias_same_bits(void **state) {
  (void)state;
  for (int s = 1; s < 3; s++) {
    const int64_t m = 300, n = 70, k = 90;
    void *a = filled(storage[s], m * k, 5), *b = filled(storage[s], k * n, 6), *bias = filled(storage[s], n, 7);
    uint16_t *c1 = calloc((size_t)(m * n), 2), *c2 = calloc((size_t)(m * n), 2);
    assert_true(c1 && c2);
    hl_gemm_desc d = {.m = m, .n = n, .k = k, .batch = 1, .a_type = storage[s], .b_type = storage[s],
                      .c_type = storage[s], .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 0, .a = a, .lda = k,
                      .b = b, .ldb = n, .c = c1, .ldc = n, .bias = bias, .bias_type = storage[s]};
    K()->gemm(&d);
    for (int64_t r = 0; r < m; r++) memcpy(c2 + r * n, bias, 2 * (size_t)n);
    d.c = c2, d.bias = NULL, d.beta = 1;
    K()->gemm(&d);
    assert_memory_equal(c1, c2, 2 * (size_t)(m * n));
    free(a), free(b), free(bias), free(c1), free(c2);
  }
}

static void test_mixed_types(void **state) {
  (void)state;
  /* half inputs, fp32 output (the AMP core's "matmul in fp16, keep fp32") */
  gemm_case g = {.ta = false, .tb = false, .m = 9, .n = 7, .k = 33, .batch = 2, .gap = 1,
                 .at = HL_F16, .bt = HL_F16, .ct = HL_F32, .compute = HL_COMPUTE_F32,
                 .alpha = 1.0f, .beta = 1.0f};
  check_case(&g);
  g.at = HL_BF16, g.bt = HL_F32, g.ct = HL_BF16, g.ta = true;
  check_case(&g);
  g.at = HL_F32, g.bt = HL_F16, g.ct = HL_F16, g.tb = true;
  check_case(&g);
}

static void test_fp64(void **state) {
  (void)state;
  for (int t = 0; t < 4; t++) {
    gemm_case g = {.ta = t & 1, .tb = t >> 1, .m = 8, .n = 6, .k = 10, .batch = 2, .pad_a = 2, .pad_c = 1, .gap = 3,
                   .at = HL_F64, .bt = HL_F64, .ct = HL_F64, .compute = HL_COMPUTE_F64,
                   .alpha = 1.5f, .beta = -1.0f};
    check_case(&g);
  }
}

/* Large enough for the parallel widening/rounding loops (> 65536 elements) */
static void test_large_half(void **state) {
  (void)state;
  gemm_case g = {.ta = false, .tb = true, .m = 300, .n = 260, .k = 280, .batch = 1, .pad_a = 8, .pad_c = 4,
                 .at = HL_F16, .bt = HL_F16, .ct = HL_F16, .compute = HL_COMPUTE_F32,
                 .alpha = 0.125f, .beta = 0.5f};
  check_case(&g);
  g.at = g.bt = g.ct = HL_BF16;
  check_case(&g);
}

/* The output is rounded ONCE from the fp32 accumulation: a product whose
 * exact value needs more than fp16's 11 bits but whose terms are exact
 * must come out as the correctly rounded fp16 of the exact sum. */
static void test_rounded_once(void **state) {
  (void)state;
  /* 1 + 2^-11 + 2^-12: rounding to fp16 once gives 1 + 2^-10; rounding the
   * partial sum 1 + 2^-11 to fp16 first (a tie, to even: 1.0) would give 1. */
  uint16_t a[3] = {hl_f32_to_f16(1.0f), hl_f32_to_f16(0x1p-11f), hl_f32_to_f16(0x1p-12f)};
  uint16_t b[3] = {hl_f32_to_f16(1.0f), hl_f32_to_f16(1.0f), hl_f32_to_f16(1.0f)};
  uint16_t c[1] = {0};
  hl_gemm_desc d = {.m = 1, .n = 1, .k = 3, .batch = 1, .a_type = HL_F16, .b_type = HL_F16,
                    .c_type = HL_F16, .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 0,
                    .a = a, .lda = 3, .b = b, .ldb = 1, .c = c, .ldc = 1};
  K()->gemm(&d);
  assert_int_equal(c[0], hl_f32_to_f16(1.0f + 0x1p-10f));
}

static void test_empty_shapes(void **state) {
  (void)state;
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4}, c[4] = {5, 6, 7, 8};
  hl_gemm_desc d = {.m = 2, .n = 2, .k = 0, .batch = 1, .a_type = HL_F32, .b_type = HL_F32,
                    .c_type = HL_F32, .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 0.5f,
                    .a = a, .lda = 1, .b = b, .ldb = 2, .c = c, .ldc = 2};
  K()->gemm(&d); /* k = 0: C = beta C */
  assert_true(c[0] == 2.5f && c[1] == 3.0f && c[2] == 3.5f && c[3] == 4.0f);
  d.k = 2, d.m = 0, d.lda = 2;
  K()->gemm(&d); /* m = 0: nothing to do, nothing touched */
  d.m = 2, d.n = 0, d.ldb = 1, d.ldc = 1;
  K()->gemm(&d);
  assert_true(c[0] == 2.5f && c[3] == 4.0f);
  /* k == 0 with the leading dimensions of empty operands (lda = 0) and beta
   * == 0: zeros, C not read (it holds NaN here), in every output type */
  float cn[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
  hl_gemm_desc z = {.m = 2, .n = 3, .k = 0, .batch = 1, .a_type = HL_F32, .b_type = HL_F32,
                    .c_type = HL_F32, .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 0,
                    .a = a, .lda = 0, .b = b, .ldb = 3, .c = cn, .ldc = 3};
  K()->gemm(&z);
  for (int i = 0; i < 6; i++) assert_true(cn[i] == 0.0f && !signbit(cn[i]));
  uint16_t hn[6] = {0x7e00, 0x7e00, 0x7e00, 0x7e00, 0x7e00, 0x7e00};
  z.a_type = z.b_type = z.c_type = HL_F16, z.c = hn, z.batch = 2, z.m = 1, z.stride_c = 3;
  K()->gemm(&z);
  for (int i = 0; i < 6; i++) assert_int_equal(hn[i], 0x0000);
  double dn[2] = {3.0, 5.0};
  hl_gemm_desc zd = {.m = 1, .n = 2, .k = 0, .batch = 1, .a_type = HL_F64, .b_type = HL_F64,
                     .c_type = HL_F64, .compute = HL_COMPUTE_F64, .alpha = 1, .beta = -2,
                     .a = a, .lda = 0, .b = b, .ldb = 2, .c = dn, .ldc = 2};
  K()->gemm(&zd);
  assert_true(dn[0] == -6.0 && dn[1] == -10.0);
  uint16_t h[4] = {0x3c00, 0x3c00, 0x3c00, 0x3c00};
  hl_gemm_desc e = {.m = 2, .n = 2, .k = 0, .batch = 1, .a_type = HL_F16, .b_type = HL_F16,
                    .c_type = HL_F16, .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 2,
                    .a = h, .lda = 1, .b = h, .ldb = 2, .c = h, .ldc = 2};
  K()->gemm(&e);
  for (int i = 0; i < 4; i++) assert_int_equal(h[i], 0x4000); /* 2.0 */
}

/* beta == 0 never reads C: a C full of NaN comes out as the plain product */
static void test_beta_zero_ignores_c(void **state) {
  (void)state;
  for (int s = 0; s < 3; s++) {
    const hl_dtype t = storage[s];
    void *a = filled(t, 4 * 5, 1), *b = filled(t, 5 * 3, 2), *c = filled(t, 4 * 3, 3);
    for (int i = 0; i < 12; i++) hl_gemm_store(c, t, i, NAN);
    hl_gemm_desc d = {.m = 4, .n = 3, .k = 5, .batch = 1, .a_type = t, .b_type = t, .c_type = t,
                      .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 0, .a = a, .lda = 5, .b = b, .ldb = 3,
                      .c = c, .ldc = 3};
    K()->gemm(&d);
    for (int i = 0; i < 12; i++) assert_false(isnan(hl_gemm_load(c, t, i)));
    free(a), free(b), free(c);
  }
}

static void test_supports_reasons(void **state) {
  (void)state;
  char why[256];
  hl_gemm_desc d = {.m = 4, .n = 4, .k = 4, .batch = 1, .a_type = HL_F32, .b_type = HL_F32,
                    .c_type = HL_F32, .compute = HL_COMPUTE_F32_FAST_TF32};
  assert_false(K()->supports(&d, why, sizeof why));
  assert_non_null(strstr(why, "tf32"));
  d.a_type = d.b_type = d.c_type = HL_F16, d.compute = HL_COMPUTE_F16;
  assert_false(K()->supports(&d, why, sizeof why));
  assert_non_null(strstr(why, "fp16 accumulation"));
  d.a_type = d.b_type = HL_E4M3, d.compute = HL_COMPUTE_F32;
  assert_false(K()->supports(&d, why, sizeof why));
  assert_non_null(strstr(why, "fp8"));
  d.a_type = d.b_type = HL_E2M1, d.block_scaling = HL_GEMM_SCALE_NVFP4_E4M3_16;
  assert_false(K()->supports(&d, why, sizeof why));
  assert_non_null(strstr(why, "sm_100"));
  d.block_scaling = HL_GEMM_SCALE_PER_TENSOR;
  d.a_type = d.b_type = d.c_type = HL_F32, d.compute = HL_COMPUTE_F64;
  assert_false(K()->supports(&d, why, sizeof why));
  d.a_type = d.b_type = d.c_type = HL_F16, d.compute = HL_COMPUTE_F32;
  why[0] = 'x';
  assert_true(K()->supports(&d, why, sizeof why));
  d.a_type = d.b_type = d.c_type = HL_BF16;
  assert_true(K()->supports(&d, why, sizeof why));
}

/* Each calling thread keeps its own fp32 working copies: concurrent calls
 * from several threads give the same bits as one call alone (and, under
 * AddressSanitizer, the copies of exited threads are freed). */
typedef struct {
  hl_gemm_desc d;
} thread_job;

static void *run_job(void *p) {
  thread_job *j = p;
  for (int r = 0; r < 3; r++) K()->gemm(&j->d);
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  enum { M = 70, N = 90, KK = 110, THREADS = 3 };
  void *a = filled(HL_F16, M * KK, 1), *b = filled(HL_F16, KK * N, 2);
  uint16_t *want = calloc(M * N, 2);
  assert_non_null(want);
  hl_gemm_desc d = {.m = M, .n = N, .k = KK, .batch = 1, .a_type = HL_F16, .b_type = HL_F16,
                    .c_type = HL_F16, .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 0,
                    .a = a, .lda = KK, .b = b, .ldb = N, .c = want, .ldc = N};
  K()->gemm(&d);
  pthread_t th[THREADS];
  thread_job jobs[THREADS];
  for (int t = 0; t < THREADS; t++) {
    jobs[t].d = d;
    jobs[t].d.c = calloc(M * N, 2);
    assert_non_null(jobs[t].d.c);
    assert_int_equal(pthread_create(&th[t], NULL, run_job, &jobs[t]), 0);
  }
  for (int t = 0; t < THREADS; t++) {
    assert_int_equal(pthread_join(th[t], NULL), 0);
    assert_memory_equal(jobs[t].d.c, want, M * N * 2);
    free(jobs[t].d.c);
  }
  free(a), free(b), free(want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transposes_and_padding),
      cmocka_unit_test(test_alpha_beta),
      cmocka_unit_test(test_strided_batches), cmocka_unit_test(test_dense_batches_and_groups),
      cmocka_unit_test(test_row_blocks), cmocka_unit_test(test_parallel_row_blocks), cmocka_unit_test(test_outer_batch), cmocka_unit_test(test_a_as_before),
      cmocka_unit_test(test_working_copies_bounded),
      cmocka_unit_test(test_row_bias), cmocka_unit_test(test_row_bias_same_bits),
      cmocka_unit_test(test_mixed_types),
      cmocka_unit_test(test_fp64),
      cmocka_unit_test(test_large_half),
      cmocka_unit_test(test_rounded_once),
      cmocka_unit_test(test_empty_shapes),
      cmocka_unit_test(test_supports_reasons),
      cmocka_unit_test(test_beta_zero_ignores_c),
      cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
