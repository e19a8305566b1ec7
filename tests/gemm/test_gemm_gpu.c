/* test_gemm_gpu.c — suite gpu: every GEMM variant of the CUDA backend
 * against the exact (fp64) product of the same stored inputs, and against the
 * CPU twin where the CPU runs the variant. Exits 77 (skipped) without a GPU.
 *
 * Tolerance: hl_gemm_error_bound() of kernels/gemm.h, the one the benchmark
 * validates with — one rounding of the output, tf32 input rounding, and the
 * accumulation (tensor cores: u_acc max(16, 4 sqrt k); fp32 SIMT: 16 u). The
 * fp32 variant's bound (16 x 2^-24 of sum|ab|) is about 30x tighter than what
 * tf32 inputs give at these k, so an fp32 GEMM that quietly ran in tf32 fails. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/device.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/gemm.h"
#include "tests/support/hltest.h"

static const hl_backend *gpu, *cpu;

/* uniform in [-1, 1) with full fp32 precision, rounded to the storage type */
static void *host_filled(hl_dtype t, int64_t count, uint64_t s) {
  void *p = malloc(hl_dtype_size(t) * (size_t)count);
  assert_non_null(p);
  for (int64_t i = 0; i < count; i++)
    hl_gemm_store(p, t, i, hl_u32_to_unit_float(hl_philox_u32(42, s, (uint64_t)i)) * 2.0 - 1.0);
  return p;
}

static void *to_device(const void *h, size_t bytes) {
  void *d = gpu->alloc(bytes);
  assert_non_null(d);
  gpu->copy_from_host(d, h, bytes);
  return d;
}

typedef struct {
  const char *name;
  hl_dtype in, out;
  hl_gemm_compute compute;
} variant;

static const variant variants[] = {
    {"fp32", HL_F32, HL_F32, HL_COMPUTE_F32},
    {"tf32", HL_F32, HL_F32, HL_COMPUTE_F32_FAST_TF32},
    {"fp16 (fp32 acc)", HL_F16, HL_F16, HL_COMPUTE_F32},
    {"fp16 -> fp32 out", HL_F16, HL_F32, HL_COMPUTE_F32},
    {"fp16 (fp16 acc)", HL_F16, HL_F16, HL_COMPUTE_F16},
    {"bf16 (fp32 acc)", HL_BF16, HL_BF16, HL_COMPUTE_F32},
    {"bf16 -> fp32 out", HL_BF16, HL_F32, HL_COMPUTE_F32},
    {"fp8 e4m3 -> bf16", HL_E4M3, HL_BF16, HL_COMPUTE_F32},
    {"fp64", HL_F64, HL_F64, HL_COMPUTE_F64},
};

typedef struct {
  bool ta, tb;
  int64_t m, n, k, batch, pad;
  float alpha, beta;
} shape;

/* Runs v on shape g on the GPU (and the CPU where it can), checks every entry. */
static void check(const variant *v, const shape *g) {
  const bool fp8 = v->in == HL_E4M3;
  const int64_t a_rows = g->ta ? g->k : g->m, a_cols = g->ta ? g->m : g->k;
  const int64_t b_rows = g->tb ? g->n : g->k, b_cols = g->tb ? g->k : g->n;
  const int64_t lda = a_cols + g->pad, ldb = b_cols + g->pad, ldc = g->n + g->pad;
  const int64_t sa = a_rows * lda, sb = b_rows * ldb, sc = g->m * ldc;
  const size_t ina = hl_dtype_size(v->in), outs = hl_dtype_size(v->out);
  void *a = host_filled(v->in, sa * g->batch, 1), *b = host_filled(v->in, sb * g->batch, 2);
  void *c0 = host_filled(v->out, sc * g->batch, 3), *c_gpu = malloc(outs * (size_t)(sc * g->batch));
  void *c_cpu = malloc(outs * (size_t)(sc * g->batch));
  assert_true(c_gpu && c_cpu);
  memcpy(c_cpu, c0, outs * (size_t)(sc * g->batch));
  void *da = to_device(a, ina * (size_t)(sa * g->batch)), *db = to_device(b, ina * (size_t)(sb * g->batch));
  void *dc = to_device(c0, outs * (size_t)(sc * g->batch));
  hl_gemm_desc d = {.trans_a = g->ta, .trans_b = g->tb, .m = g->m, .n = g->n, .k = g->k, .batch = g->batch,
                    .a_type = v->in, .b_type = v->in, .c_type = v->out, .compute = v->compute,
                    .alpha = g->alpha, .beta = g->beta, .a = da, .lda = lda, .stride_a = sa, .b = db, .ldb = ldb,
                    .stride_b = sb, .c = dc, .ldc = ldc, .stride_c = sc,
                    .a_scale = fp8 ? 0.5f : 1.0f, .b_scale = fp8 ? 4.0f : 1.0f};
  char why[256] = "";
  if (!gpu->gemm->supports(&d, why, sizeof why)) fail_msg("%s should run on this GPU: %s", v->name, why);
  gpu->gemm->gemm(&d);
  gpu->synchronize();
  gpu->copy_to_host(c_gpu, dc, outs * (size_t)(sc * g->batch));
  hl_gemm_desc dh = d;
  dh.a = a, dh.b = b, dh.c = c_cpu;
  const bool on_cpu = cpu->gemm->supports(&dh, NULL, 0);
  if (on_cpu) cpu->gemm->gemm(&dh);

  /* tensor cores for every variant but fp32 (SIMT) and fp64: fp32 gets the tight bound */
  const bool tc = (v->in != HL_F32 || v->compute == HL_COMPUTE_F32_FAST_TF32) && v->in != HL_F64;
  const hl_gemm_bound gb = hl_gemm_error_bound(&d, tc), cb = hl_gemm_error_bound(&d, false);
  const double scale = (double)d.a_scale * d.b_scale;
  double worst = 0; /* largest |err| / bound */
  for (int64_t bi = 0; bi < g->batch; bi++)
    for (int64_t i = 0; i < g->m; i++) {
      for (int64_t j = 0; j < g->n; j++) {
        double exact = 0, mag = 0;
        for (int64_t p = 0; p < g->k; p++) {
          double x = hl_gemm_load(a, v->in, bi * sa + (g->ta ? p * lda + i : i * lda + p));
          double y = hl_gemm_load(b, v->in, bi * sb + (g->tb ? j * ldb + p : p * ldb + j));
          exact += x * y;
          mag += fabs(x * y);
        }
        const int64_t at = bi * sc + i * ldc + j;
        const double cin = hl_gemm_load(c0, v->out, at);
        const double want = g->alpha * scale * exact + g->beta * cin;
        const double terms = fabs(g->alpha) * scale * mag + fabs(g->beta * cin);
        const double got = hl_gemm_load(c_gpu, v->out, at);
        const double err = fabs(got - want), bound = gb.out * fabs(want) + gb.term * terms + gb.abs;
        if (!(err <= bound))
          fail_msg("%s ta=%d tb=%d %lldx%lldx%lld batch %lld: C[%lld][%lld] = %.9g, exact %.9g, |err| %.3g > bound %.3g",
                   v->name, g->ta, g->tb, (long long)g->m, (long long)g->n, (long long)g->k, (long long)bi,
                   (long long)i, (long long)j, got, want, err, bound);
        if (err / bound > worst) worst = err / bound;
        if (on_cpu) {
          const double cerr = fabs(hl_gemm_load(c_cpu, v->out, at) - want);
          if (!(cerr <= cb.out * fabs(want) + cb.term * terms + cb.abs))
            fail_msg("%s: the CPU twin is off at C[%lld][%lld]", v->name, (long long)i, (long long)j);
        }
      }
      for (int64_t j = g->n; j < ldc; j++) /* padding untouched */
        assert_true(memcmp((char *)c_gpu + (size_t)(bi * sc + i * ldc + j) * outs,
                           (char *)c0 + (size_t)(bi * sc + i * ldc + j) * outs, outs) == 0);
    }
  print_message("  %-18s ta=%d tb=%d %4lldx%4lldx%4lld batch %lld: max |err| / bound %.3f%s\n", v->name, g->ta, g->tb,
                (long long)g->m, (long long)g->n, (long long)g->k, (long long)g->batch, worst,
                on_cpu ? ", CPU twin within its bound" : "");
  gpu->free(da), gpu->free(db), gpu->free(dc);
  free(a), free(b), free(c0), free(c_gpu), free(c_cpu);
}

static void test_every_variant(void **state) {
  (void)state;
  for (size_t vi = 0; vi < sizeof variants / sizeof variants[0]; vi++) {
    const variant *v = &variants[vi];
    hl_gemm_desc probe = {.trans_b = true, .m = 32, .n = 32, .k = 32, .batch = 1, .a_type = v->in, .b_type = v->in,
                          .c_type = v->out, .compute = v->compute, .lda = 32, .ldb = 32, .ldc = 32};
    char why[256] = "";
    if (!gpu->gemm->supports(&probe, why, sizeof why)) {
      /* only the architecture may rule a variant out, and it must say so */
      assert_true(strstr(why, "sm_") != NULL);
      print_message("  %-18s not on this GPU: %s\n", v->name, why);
      continue;
    }
    if (v->in == HL_E4M3) { /* TN and multiples of 16 only */
      shape s1 = {false, true, 48, 32, 64, 1, 16, 1.0f, 0.0f};
      shape s2 = {false, true, 64, 96, 512, 3, 0, 0.5f, 0.25f};
      check(v, &s1);
      check(v, &s2);
      continue;
    }
    for (int t = 0; t < 4; t++) {
      shape s = {t & 1, t >> 1, 37, 29, 61, 1, 3, 1.5f, 0.5f};
      check(v, &s);
    }
    shape batched = {false, true, 33, 40, 48, 4, 2, 1.0f, 0.25f};
    check(v, &batched);
    shape large = {false, true, 256, 192, 512, 1, 0, 1.0f, 0.0f};
    check(v, &large);
  }
}

/* fp8 needs TN and multiples of 16: supports() must refuse the rest, saying why */
static void test_fp8_layout_rules(void **state) {
  (void)state;
  hl_gemm_desc d = {.trans_b = true, .m = 32, .n = 32, .k = 32, .batch = 1, .a_type = HL_E4M3,
                    .b_type = HL_E4M3, .c_type = HL_BF16, .compute = HL_COMPUTE_F32,
                    .lda = 32, .ldb = 32, .ldc = 32};
  char why[256] = "";
  if (!gpu->gemm->supports(&d, why, sizeof why)) {
    assert_non_null(strstr(why, "sm_89"));
    skip();
  }
  d.trans_b = false;
  assert_false(gpu->gemm->supports(&d, why, sizeof why));
  assert_non_null(strstr(why, "TN"));
  d.trans_b = true, d.k = 24, d.lda = d.ldb = 24;
  assert_false(gpu->gemm->supports(&d, why, sizeof why));
  assert_non_null(strstr(why, "16"));
}

/* k == 0 (an empty sum) with the leading dimension an empty operand may
 * carry (lda = 0): C = beta C as on the CPU, zeros for beta == 0 without
 * reading C (NaN here) */
static void test_empty_k(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    const hl_dtype ty = t ? HL_F16 : HL_F32;
    const size_t es = hl_dtype_size(ty);
    unsigned char host[6 * 4], back[6 * 4];
    for (int i = 0; i < 6; i++) hl_gemm_store(host, ty, i, i < 3 ? NAN : 2.0 + i);
    void *dc = to_device(host, 6 * es), *dummy = gpu->alloc(64);
    assert_non_null(dummy);
    hl_gemm_desc d = {.m = 1, .n = 3, .k = 0, .batch = 1, .a_type = ty, .b_type = ty, .c_type = ty,
                      .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 0, .a = dummy, .lda = 0, .b = dummy, .ldb = 3,
                      .c = dc, .ldc = 3};
    gpu->gemm->gemm(&d); /* first row: NaN -> 0 */
    d.c = (char *)dc + 3 * es, d.beta = -2;
    gpu->gemm->gemm(&d); /* second row: 5, 6, 7 -> -10, -12, -14 */
    gpu->synchronize();
    gpu->copy_to_host(back, dc, 6 * es);
    for (int i = 0; i < 3; i++) assert_true(hl_gemm_load(back, ty, i) == 0.0);
    for (int i = 3; i < 6; i++) assert_true(hl_gemm_load(back, ty, i) == -2.0 * (2.0 + i));
    gpu->free(dc), gpu->free(dummy);
  }
}

int main(void) {
  hl_require_gpu();
  gpu = hl_backend_for(HL_DEVICE_CUDA);
  cpu = hl_backend_for(HL_DEVICE_CPU);
  if (!gpu || !gpu->gemm) {
    printf("the CUDA backend has no GEMM table\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_variant),
      cmocka_unit_test(test_fp8_layout_rules),
      cmocka_unit_test(test_empty_k),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
