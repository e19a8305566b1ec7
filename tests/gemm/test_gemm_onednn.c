/* test_gemm_onednn.c — suite unit: bf16 GEMM through oneDNN's matmul
 * (kernels/cpu/onednn_gemm.h) behind the CPU backend's GEMM entry point.
 *
 * meson runs it twice: as the machine allows (test gemm-onednn: oneDNN runs
 * bf16 wherever it is built in and the CPU has AVX512-BF16 or AMX-BF16; the
 * oneDNN-only checks skip elsewhere) and with HALFLAB_CPU_UNITS=portable
 * (gemm-onednn-portable: the widening path, saying so). Checked: every
 * operand layout the core passes against an fp64 product of the stored
 * inputs; the path that ran, in the what-ran text; agreement with the
 * widening path; the primitive cache over many shapes, from several threads;
 * fp16 never running as bf16; layouts oneDNN is not given.
 *
 * Tolerance (stated, not tuned). bf16 inputs have 8 significant bits, so
 * every product is exact in fp32; what remains is fp32 accumulation of k
 * products, alpha's and beta's steps, and one rounding to the output:
 *   |c - exact| <= (k + 2) u32 (|alpha| sum_p |a_ip b_pj| + |beta c_in|) + u_out |exact|
 * with u32 = 2^-24 (Higham's bound for a recursive dot product of length k,
 * whatever the order of summation) and u_out = 2^-8 for a bf16 output,
 * 2^-24 for fp32. The data are uniform in [-1, 1) rounded to bf16 (no
 * subnormals: the bf16 instructions flush them). Two correct results lie
 * within twice that bound of each other. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/gemm.h"
#include "tests/support/hltest.h"

static const struct hl_gemm_kernels *K(void) { return hl_backend_cpu.gemm; }

/* The run meson asked for (HALFLAB_CPU_UNITS=portable), and whether this
 * build and CPU then send bf16 GEMMs to oneDNN */
static bool portable_run(void) {
  const char *v = getenv("HALFLAB_CPU_UNITS");
  return v && !strcmp(v, "portable");
}

static bool onednn_expected(void) {
#ifdef HL_HAVE_ONEDNN
  const hl_cpu_units *u = hl_cpu_units_get();
  return !portable_run() && (u->avx512_bf16 || u->amx_bf16);
#else
  return false;
#endif
}

/* uniform in [-1, 1) as stored in t; `grid`: multiples of 2^-7 instead,
 * whose products and sums of up to 2^10 terms are exact in fp32 */
static void *filled(hl_dtype t, int64_t count, uint64_t stream, bool grid) {
  void *p = malloc(hl_dtype_size(t) * (size_t)(count > 0 ? count : 1));
  assert_non_null(p);
  for (int64_t i = 0; i < count; i++) {
    const uint32_t u = hl_philox_u32(77, stream, (uint64_t)i);
    const double x = grid ? (double)((int)(u >> 24) - 128) / 128.0 : 2.0 * hl_u32_to_unit_float(u) - 1.0;
    hl_gemm_store(p, t, i, x);
  }
  return p;
}

typedef struct {
  bool ta, tb;
  int64_t m, n, k, batch;
  int64_t pad_a, pad_b, pad_c; /* extra elements per stored row */
  int64_t gap;                 /* extra elements between batch entries */
  bool shared_a, shared_b;     /* batch stride 0: one matrix for every entry */
  hl_dtype ct;                 /* bf16 or f32 */
  float alpha, beta;
} layout;

/* The operands of a layout, with C's start copied to c0 */
typedef struct {
  hl_gemm_desc d;
  void *a, *b, *c, *c0;
  int64_t c_elems;
} problem;

static problem make_problem(const layout *g, hl_dtype in, bool grid, uint64_t seed) {
  const int64_t a_rows = g->ta ? g->k : g->m, a_cols = g->ta ? g->m : g->k;
  const int64_t b_rows = g->tb ? g->n : g->k, b_cols = g->tb ? g->k : g->n;
  const int64_t lda = a_cols + g->pad_a, ldb = b_cols + g->pad_b, ldc = g->n + g->pad_c;
  const int64_t sa = g->shared_a ? 0 : a_rows * lda + g->gap, sb = g->shared_b ? 0 : b_rows * ldb + g->gap;
  const int64_t sc = g->m * ldc + g->gap;
  const int64_t batch = g->batch > 1 ? g->batch : 1;
  problem p;
  p.a = filled(in, g->shared_a ? a_rows * lda : sa * batch, 3 * seed + 1, grid);
  p.b = filled(in, g->shared_b ? b_rows * ldb : sb * batch, 3 * seed + 2, grid);
  p.c_elems = sc * batch;
  p.c = filled(g->ct, p.c_elems, 3 * seed + 3, grid);
  p.c0 = malloc(hl_dtype_size(g->ct) * (size_t)p.c_elems);
  assert_non_null(p.c0);
  memcpy(p.c0, p.c, hl_dtype_size(g->ct) * (size_t)p.c_elems);
  hl_gemm_desc d = {.trans_a = g->ta, .trans_b = g->tb, .m = g->m, .n = g->n, .k = g->k, .batch = batch,
                    .a_type = in, .b_type = in, .c_type = g->ct, .compute = HL_COMPUTE_F32,
                    .alpha = g->alpha, .beta = g->beta,
                    .a = p.a, .lda = lda, .stride_a = sa, .b = p.b, .ldb = ldb, .stride_b = sb,
                    .c = p.c, .ldc = ldc, .stride_c = sc};
  p.d = d;
  return p;
}

static void free_problem(problem *p) { free(p->a), free(p->b), free(p->c), free(p->c0); }

/* The exact result at C[bi][i][j] from the stored inputs, and the bound above */
static double exact_at(const problem *p, int64_t bi, int64_t i, int64_t j, double *bound) {
  const hl_gemm_desc *d = &p->d;
  double sum = 0, mag = 0;
  for (int64_t q = 0; q < d->k; q++) {
    const double x = hl_gemm_load(d->a, d->a_type, bi * d->stride_a + (d->trans_a ? q * d->lda + i : i * d->lda + q));
    const double y = hl_gemm_load(d->b, d->b_type, bi * d->stride_b + (d->trans_b ? j * d->ldb + q : q * d->ldb + j));
    sum += x * y;
    mag += fabs(x * y);
  }
  const double cin = d->beta == 0.0f ? 0.0 : hl_gemm_load(p->c0, d->c_type, bi * d->stride_c + i * d->ldc + j);
  const double want = d->alpha * sum + d->beta * cin;
  const double u_out = d->c_type == HL_BF16 ? 0x1p-8 : 0x1p-24;
  *bound = (double)(d->k + 2) * 0x1p-24 * (fabs(d->alpha) * mag + fabs(d->beta * cin)) + u_out * fabs(want);
  return want;
}

/* Every entry of C within the bound of the exact product; C's row padding
 * and the gaps between batch entries untouched */
static void check_against_fp64(const problem *p) {
  const hl_gemm_desc *d = &p->d;
  for (int64_t bi = 0; bi < d->batch; bi++)
    for (int64_t i = 0; i < d->m; i++)
      for (int64_t j = 0; j < d->ldc; j++) {
        const int64_t at = bi * d->stride_c + i * d->ldc + j;
        const double got = hl_gemm_load(d->c, d->c_type, at);
        if (j >= d->n) {
          assert_true(got == hl_gemm_load(p->c0, d->c_type, at));
          continue;
        }
        double bound;
        const double want = exact_at(p, bi, i, j, &bound);
        if (!(fabs(got - want) <= bound))
          fail_msg("%lldx%lldx%lld batch %lld ta=%d tb=%d -> %s, alpha %g beta %g: C[%lld][%lld][%lld] = %.9g, "
                   "exact %.9g, bound %.3g",
                   (long long)d->m, (long long)d->n, (long long)d->k, (long long)d->batch, d->trans_a, d->trans_b,
                   hl_dtype_name(d->c_type), d->alpha, d->beta, (long long)bi, (long long)i, (long long)j, got, want,
                   bound);
      }
  for (int64_t bi = 0; bi < d->batch; bi++)
    for (int64_t e = d->m * d->ldc; e < d->stride_c && bi * d->stride_c + e < p->c_elems; e++)
      assert_true(hl_gemm_load(d->c, d->c_type, bi * d->stride_c + e) == hl_gemm_load(p->c0, d->c_type, bi * d->stride_c + e));
}

static uint64_t cache_lookups(void) {
  const hl_onednn_cache_stats s = hl_onednn_cache_stats_get();
  return s.hits + s.created;
}

/* The what-ran text names oneDNN exactly when this run expects it */
static void check_path(const hl_gemm_desc *d) {
  char what[256];
  K()->describe(d, what, sizeof what);
  if (onednn_expected()) {
    if (strncmp(what, "onednn 2.", 9)) fail_msg("expected oneDNN, the path says: %s", what);
  } else {
    assert_non_null(strstr(what, "fp32-widened"));
#ifdef HL_HAVE_ONEDNN
    if (portable_run()) assert_non_null(strstr(what, "HALFLAB_CPU_UNITS=portable"));
#else
    assert_non_null(strstr(what, "not built in"));
#endif
  }
  assert_null(strchr(what, ','));
}

/* Runs d, checking that it went where the what-ran text says: one lookup
 * of oneDNN's primitive cache when oneDNN runs it, none otherwise */
static void run_checked(const hl_gemm_desc *d) {
  check_path(d);
  const uint64_t before = cache_lookups();
  K()->gemm(d);
  assert_true(cache_lookups() - before == (onednn_expected() ? 1u : 0u));
}

static void run_layout(const layout *g) {
  problem p = make_problem(g, HL_BF16, false, 1);
  run_checked(&p.d);
  check_against_fp64(&p);
  free_problem(&p);
}

static void test_every_layout(void **state) {
  (void)state;
  static const hl_dtype outs[] = {HL_BF16, HL_F32};
  for (int o = 0; o < 2; o++)
    for (int t = 0; t < 4; t++) {
      const bool ta = t & 1, tb = t >> 1;
      /* odd sizes, plain and padded leading dimensions */
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 7, .n = 5, .k = 9, .batch = 1, .ct = outs[o], .alpha = 1});
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 13, .n = 11, .k = 17, .batch = 1, .pad_a = 3, .pad_b = 1,
                           .pad_c = 2, .ct = outs[o], .alpha = 1});
      /* beta != 0 (the core's linear layer adds into its bias: beta 1), alpha != 1 */
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 6, .n = 12, .k = 33, .batch = 1, .pad_c = 3, .ct = outs[o],
                           .alpha = -0.75f, .beta = 0.5f});
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 16, .n = 16, .k = 64, .batch = 1, .ct = outs[o], .alpha = 1,
                           .beta = 1});
      /* vectors: m = 1, n = 1, both; k = 1 */
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 1, .n = 37, .k = 19, .batch = 1, .ct = outs[o], .alpha = 1});
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 29, .n = 1, .k = 19, .batch = 1, .pad_a = 2, .ct = outs[o],
                           .alpha = 1, .beta = 0.25f});
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 1, .n = 1, .k = 40, .batch = 1, .ct = outs[o], .alpha = 2});
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 9, .n = 10, .k = 1, .batch = 1, .ct = outs[o], .alpha = 1});
      /* strided batches: packed, with gaps and padding, one operand shared by every entry */
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 5, .n = 4, .k = 6, .batch = 3, .ct = outs[o], .alpha = 1});
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 5, .n = 4, .k = 6, .batch = 3, .pad_a = 1, .pad_b = 2,
                           .pad_c = 1, .gap = 5, .ct = outs[o], .alpha = 1, .beta = 0.25f});
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 8, .n = 6, .k = 10, .batch = 4, .shared_b = true,
                           .ct = outs[o], .alpha = 1});
      run_layout(&(layout){.ta = ta, .tb = tb, .m = 8, .n = 6, .k = 10, .batch = 4, .shared_a = true,
                           .ct = outs[o], .alpha = 1, .beta = 1});
    }
  /* large enough for oneDNN's blocked kernels and its threads */
  run_layout(&(layout){.tb = true, .m = 300, .n = 260, .k = 280, .batch = 1, .pad_a = 8, .pad_c = 4, .ct = HL_BF16,
                       .alpha = 0.125f, .beta = 0.5f});
  run_layout(&(layout){.m = 256, .n = 192, .k = 320, .batch = 2, .ct = HL_F32, .alpha = 1});
}

/* beta == 0 never reads C: a C full of NaN comes out as the plain product */
static void test_beta_zero_ignores_c(void **state) {
  (void)state;
  static const hl_dtype outs[] = {HL_BF16, HL_F32};
  for (int o = 0; o < 2; o++) {
    problem p = make_problem(&(layout){.m = 24, .n = 20, .k = 16, .batch = 2, .ct = outs[o], .alpha = 1}, HL_BF16,
                             false, 2);
    for (int64_t i = 0; i < p.c_elems; i++) hl_gemm_store(p.c, outs[o], i, NAN);
    memcpy(p.c0, p.c, hl_dtype_size(outs[o]) * (size_t)p.c_elems);
    run_checked(&p.d);
    check_against_fp64(&p); /* would fail on NaN */
    free_problem(&p);
  }
}

/* k == 0: C = beta C, with no product to run and oneDNN not asked */
static void test_k_zero(void **state) {
  (void)state;
  uint16_t c[6];
  for (int i = 0; i < 6; i++) c[i] = hl_f32_to_bf16(1.5f);
  const uint16_t a = 0, b = 0;
  hl_gemm_desc d = {.m = 2, .n = 3, .k = 0, .batch = 1, .a_type = HL_BF16, .b_type = HL_BF16, .c_type = HL_BF16,
                    .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 2, .a = &a, .lda = 0, .b = &b, .ldb = 3,
                    .c = c, .ldc = 3};
  const hl_onednn_cache_stats before = hl_onednn_cache_stats_get();
  K()->gemm(&d);
  for (int i = 0; i < 6; i++) assert_int_equal(c[i], hl_f32_to_bf16(3.0f));
  assert_true(hl_onednn_cache_stats_get().created == before.created);
}

/* Grid data: every product and partial sum is exact in fp32, so oneDNN and
 * the widening path must both give the exact result rounded once: the same
 * bits. On fine data they may round differently, within twice the bound. */
static void test_agrees_with_widening(void **state) {
  (void)state;
  const layout shapes[] = {
      {.tb = true, .m = 64, .n = 48, .k = 512, .batch = 1, .ct = HL_BF16, .alpha = 1},
      {.ta = true, .m = 33, .n = 65, .k = 1000, .batch = 1, .pad_b = 3, .ct = HL_F32, .alpha = 1, .beta = 1},
      {.m = 40, .n = 24, .k = 128, .batch = 3, .gap = 7, .ct = HL_BF16, .alpha = 0.5f, .beta = 0.25f},
  };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int grid = 1; grid >= 0; grid--) {
      problem p = make_problem(&shapes[s], HL_BF16, grid, 10 + s);
      problem w = make_problem(&shapes[s], HL_BF16, grid, 10 + s);
      run_checked(&p.d);
      hl_cpu_gemm_blas(&w.d);
      check_against_fp64(&p);
      check_against_fp64(&w);
      const size_t bytes = hl_dtype_size(p.d.c_type) * (size_t)p.c_elems;
      if (grid) {
        assert_memory_equal(p.c, w.c, bytes);
      } else {
        for (int64_t bi = 0; bi < p.d.batch; bi++)
          for (int64_t i = 0; i < p.d.m; i++)
            for (int64_t j = 0; j < p.d.n; j++) {
              double bound;
              exact_at(&p, bi, i, j, &bound);
              const int64_t at = bi * p.d.stride_c + i * p.d.ldc + j;
              assert_true(fabs(hl_gemm_load(p.c, p.d.c_type, at) - hl_gemm_load(w.c, w.d.c_type, at)) <= 2 * bound);
            }
      }
      free_problem(&p), free_problem(&w);
    }
}

/* Shape number s of a family of distinct small shapes */
static layout nth_shape(int s) {
  layout g = {.ta = s & 1, .tb = (s >> 1) & 1, .m = 3 + s % 17, .n = 2 + (s * 7) % 23, .k = 5 + (s * 5) % 29,
              .batch = 1 + s % 3, .ct = (s & 4) ? HL_F32 : HL_BF16, .alpha = 1, .beta = (s & 8) ? 1.0f : 0.0f};
  return g;
}

static void test_cache_across_shapes(void **state) {
  (void)state;
  if (!onednn_expected()) skip();
  const int capacity = hl_onednn_cache_stats_get().capacity;
  assert_true(capacity > 10);
  /* 10 shapes, 5 times over: 10 primitives made, then only hits */
  hl_onednn_cache_stats s0 = hl_onednn_cache_stats_get();
  for (int round = 0; round < 5; round++)
    for (int s = 0; s < 10; s++) {
      layout g = nth_shape(1000 + s);
      problem p = make_problem(&g, HL_BF16, false, (uint64_t)s);
      K()->gemm(&p.d);
      check_against_fp64(&p);
      free_problem(&p);
    }
  hl_onednn_cache_stats s1 = hl_onednn_cache_stats_get();
  assert_true(s1.created - s0.created == 10);
  assert_true(s1.hits - s0.hits >= 40);
  /* more distinct shapes than the cache holds, twice: right results, at
   * most `capacity` entries kept */
  const int many = capacity + 16;
  for (int round = 0; round < 2; round++)
    for (int s = 0; s < many; s++) {
      layout g = nth_shape(s);
      problem p = make_problem(&g, HL_BF16, false, (uint64_t)s);
      K()->gemm(&p.d);
      check_against_fp64(&p);
      free_problem(&p);
      const hl_onednn_cache_stats now = hl_onednn_cache_stats_get();
      assert_true(now.entries <= now.capacity);
    }
  hl_onednn_cache_stats s2 = hl_onednn_cache_stats_get();
  assert_int_equal(s2.entries, capacity);
  assert_true(s2.created - s1.created >= (uint64_t)many);
}

/* Threads sharing the cache while it evicts: each result equals, bit for
 * bit, the same product run alone */
typedef struct {
  problem p[24];
  void *want[24];
} thread_job;

static void *run_job(void *arg) {
  thread_job *j = arg;
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < 24; i++) K()->gemm(&j->p[i].d);
  return NULL;
}

static void test_threads_share_the_cache(void **state) {
  (void)state;
  if (!onednn_expected()) skip();
  enum { THREADS = 3, EACH = 24 };
  const int capacity = hl_onednn_cache_stats_get().capacity;
  thread_job jobs[THREADS];
  for (int t = 0; t < THREADS; t++) {
    const int first = t * (capacity / 2); /* overlapping sets of shapes, more in all than the cache holds */
    for (int i = 0; i < EACH; i++) {
      layout g = nth_shape(2000 + first + i);
      jobs[t].p[i] = make_problem(&g, HL_BF16, false, (uint64_t)i);
      if (g.beta != 0.0f) jobs[t].p[i].d.beta = 0; /* repeated calls must give the same C */
      problem alone = make_problem(&g, HL_BF16, false, (uint64_t)i);
      alone.d.beta = jobs[t].p[i].d.beta;
      K()->gemm(&alone.d);
      const size_t bytes = hl_dtype_size(g.ct) * (size_t)alone.c_elems;
      jobs[t].want[i] = malloc(bytes);
      assert_non_null(jobs[t].want[i]);
      memcpy(jobs[t].want[i], alone.c, bytes);
      free_problem(&alone);
    }
  }
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) assert_int_equal(pthread_create(&th[t], NULL, run_job, &jobs[t]), 0);
  for (int t = 0; t < THREADS; t++) {
    assert_int_equal(pthread_join(th[t], NULL), 0);
    for (int i = 0; i < EACH; i++) {
      assert_memory_equal(jobs[t].p[i].c, jobs[t].want[i], hl_dtype_size(jobs[t].p[i].d.c_type) * (size_t)jobs[t].p[i].c_elems);
      free_problem(&jobs[t].p[i]);
      free(jobs[t].want[i]);
    }
  }
  const hl_onednn_cache_stats s = hl_onednn_cache_stats_get();
  assert_true(s.entries <= s.capacity);
}

/* fp16 operands never go to oneDNN, and never run as bf16: 1 + 2^-10 has
 * 11 significant bits, which bf16 would round to 1 */
static void test_fp16_stays_fp16(void **state) {
  (void)state;
  const hl_onednn_cache_stats before = hl_onednn_cache_stats_get();
  uint16_t a[4], b[4];
  float c[1] = {0};
  for (int i = 0; i < 4; i++) a[i] = hl_f32_to_f16(1.0f + 0x1p-10f), b[i] = hl_f32_to_f16(1.0f);
  hl_gemm_desc d = {.m = 1, .n = 1, .k = 4, .batch = 1, .a_type = HL_F16, .b_type = HL_F16, .c_type = HL_F32,
                    .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 0, .a = a, .lda = 4, .b = b, .ldb = 1,
                    .c = c, .ldc = 1};
  K()->gemm(&d);
  assert_true(c[0] == 4.0f + 0x1p-8f);
  char what[256];
  K()->describe(&d, what, sizeof what);
  assert_non_null(strstr(what, "fp32-widened"));
  assert_non_null(strstr(what, "no CPU fp16 matmul"));
  /* mixed bf16 and fp16 operands too */
  d.b_type = HL_BF16;
  for (int i = 0; i < 4; i++) b[i] = hl_f32_to_bf16(1.0f);
  K()->gemm(&d);
  assert_true(c[0] == 4.0f + 0x1p-8f);
  assert_true(hl_onednn_cache_stats_get().created == before.created);
}

/* Layouts oneDNN is not given take the widening path, as before, and say why */
static void test_layouts_not_given(void **state) {
  (void)state;
  char what[256];
  hl_gemm_desc d = {.m = 4, .n = 4, .k = 4, .batch = 1, .a_type = HL_BF16, .b_type = HL_BF16, .c_type = HL_BF16,
                    .compute = HL_COMPUTE_F32, .alpha = 1, .lda = 2, .ldb = 4, .ldc = 4};
  K()->describe(&d, what, sizeof what); /* rows of A overlap */
  assert_non_null(strstr(what, "fp32-widened"));
  if (onednn_expected()) assert_non_null(strstr(what, "leading dimension"));
  d.lda = 4, d.batch = 2, d.stride_a = d.stride_b = 16, d.stride_c = 8; /* batch entries of C overlap */
  K()->describe(&d, what, sizeof what);
  assert_non_null(strstr(what, "fp32-widened"));
  if (onednn_expected()) assert_non_null(strstr(what, "overlap"));
  d.batch = 1, d.c_type = HL_F16; /* an output oneDNN's bf16 matmul does not write */
  K()->describe(&d, what, sizeof what);
  assert_non_null(strstr(what, "fp32-widened"));
}

/* The CSV metadata says what bf16 GEMMs run on */
static void test_metadata_line(void **state) {
  (void)state;
  char line[512];
  hl_onednn_line(line, sizeof line);
#ifdef HL_HAVE_ONEDNN
  assert_non_null(strstr(line, "oneDNN 2."));
  if (onednn_expected()) assert_non_null(strstr(line, "bf16 GEMMs on its matmul"));
  else assert_non_null(strstr(line, "not used"));
  if (portable_run()) assert_non_null(strstr(line, "HALFLAB_CPU_UNITS=portable"));
#else
  assert_non_null(strstr(line, "not built in"));
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_layout),
      cmocka_unit_test(test_beta_zero_ignores_c),
      cmocka_unit_test(test_k_zero),
      cmocka_unit_test(test_agrees_with_widening),
      cmocka_unit_test(test_cache_across_shapes),
      cmocka_unit_test(test_threads_share_the_cache),
      cmocka_unit_test(test_fp16_stays_fp16),
      cmocka_unit_test(test_layouts_not_given),
      cmocka_unit_test(test_metadata_line),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
