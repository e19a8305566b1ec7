/* test_probe_gpu.c — suite gpu: every probe kernel on the GPU (its own fp16,
 * bf16 and fp8 instructions) against the CPU on the same inputs, bit for bit,
 * stochastic rounding included (both draw from Philox4x32-10). A NaN matches
 * any NaN: x86 makes its default NaN negative, the GPU a positive 0x7fff.
 * Exits 77 (skipped) without a usable GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/format.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/backend.h"
#include "kernels/probe.h"
#include "tests/support/hltest.h"

static const hl_probe_kernels *cpu, *gpu;

static bool same(hl_dtype f, uint32_t a, uint32_t b) {
  return a == b || (hl_format_classify(f, a) == HL_CLASS_NAN && hl_format_classify(f, b) == HL_CLASS_NAN);
}
static bool same_double(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

static void test_sums(void **state) {
  (void)state;
  static const struct { float value; uint64_t count; } cases[] = {
      {16.0f, 4096}, {16.0f, 4000}, {1.0f, 4096}, {0.1f, 100000}, {-3.7f, 5000}, {1e-8f, 10},
      {70000.0f, 3}, {3e38f, 3},    {0x1p-24f, 3000}, {1.0f / 3.0f, 70001}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int ns = 513;
    uint64_t at[513];
    for (int i = 0; i < ns; i++) at[i] = (uint64_t)i * cases[c].count / (ns - 1);
    hl_sum_outcome a[HL_SUM_STRATEGIES], b[HL_SUM_STRATEGIES];
    double *ta = malloc(sizeof(double) * HL_SUM_STRATEGIES * ns), *tb = malloc(sizeof(double) * HL_SUM_STRATEGIES * ns);
    cpu->sum(cases[c].value, cases[c].count, at, ns, a, ta);
    gpu->sum(cases[c].value, cases[c].count, at, ns, b, tb);
    for (int s = 0; s < HL_SUM_STRATEGIES; s++) {
      if (!same(hl_sum_format((hl_sum_strategy)s), a[s].result_bits, b[s].result_bits) ||
          a[s].first_lost != b[s].first_lost || a[s].first_overflow != b[s].first_overflow ||
          a[s].first_nan != b[s].first_nan || !same_double(a[s].total_at_lost, b[s].total_at_lost) ||
          !same_double(a[s].total_before_overflow, b[s].total_before_overflow))
        fail_msg("%llu x %g, strategy %d: cpu %#x (lost %llu, overflow %llu) vs gpu %#x (lost %llu, overflow %llu)",
                 (unsigned long long)cases[c].count, cases[c].value, s, a[s].result_bits,
                 (unsigned long long)a[s].first_lost, (unsigned long long)a[s].first_overflow, b[s].result_bits,
                 (unsigned long long)b[s].first_lost, (unsigned long long)b[s].first_overflow);
      for (int i = 0; i < ns; i++)
        if (!same_double(ta[s * ns + i], tb[s * ns + i]))
          fail_msg("%llu x %g, strategy %d, after %llu: cpu %a, gpu %a", (unsigned long long)cases[c].count,
                   cases[c].value, s, (unsigned long long)at[i], ta[s * ns + i], tb[s * ns + i]);
    }
    free(ta), free(tb);
  }
}

/* Random fp32 operands: half of them arbitrary bit patterns (NaN, inf,
 * subnormals included), half near each other so that sums and differences
 * land on narrow-format ties and subnormals. */
static void operands(size_t n, float *a, float *b) {
  for (size_t i = 0; i < n; i++) {
    uint32_t x = hl_philox_u32(42, 1, i), y = hl_philox_u32(42, 2, i);
    a[i] = hl_f32_from_bits(x);
    b[i] = (i & 1) ? hl_f32_from_bits(y) : hl_f32_from_bits((x & 0xff800000u) ^ (y & 0x807fffffu) ^ ((y >> 8) & 0x03800000u));
  }
}

static void test_arith_and_convert(void **state) {
  (void)state;
  const size_t n = 1u << 20;
  float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
  uint32_t *ra = malloc(sizeof(uint32_t) * n), *rb = malloc(sizeof(uint32_t) * n);
  operands(n, a, b);
  const hl_dtype all[] = {HL_F32, HL_F16, HL_BF16, HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
  const int nall = (int)(sizeof all / sizeof all[0]);
  for (int op = HL_ARITH_ADD; op <= HL_ARITH_DIV; op++)
    for (int mode = HL_ROUND_NATIVE; mode <= HL_ROUND_ONCE; mode++)
      for (int fi = 0; fi < nall; fi++) {
        hl_dtype f = all[fi];
        cpu->arith((hl_arith_op)op, (hl_arith_mode)mode, f, a, b, ra, n);
        gpu->arith((hl_arith_op)op, (hl_arith_mode)mode, f, a, b, rb, n);
        for (size_t i = 0; i < n; i++)
          if (!same(f, ra[i], rb[i]))
            fail_msg("op %d mode %d %s: %a, %a -> cpu %#x, gpu %#x", op, mode, hl_dtype_format_name(f), a[i], b[i],
                     ra[i], rb[i]);
      }
  for (int fi = 0; fi < nall; fi++)
    for (int ov = 0; ov < 2; ov++) {
      cpu->convert(all[fi], (hl_overflow)ov, a, ra, n);
      gpu->convert(all[fi], (hl_overflow)ov, a, rb, n);
      for (size_t i = 0; i < n; i++)
        if (!same(all[fi], ra[i], rb[i]))
          fail_msg("convert %s (%s): %a -> cpu %#x, gpu %#x", hl_dtype_format_name(all[fi]), ov ? "saturating" : "ieee",
                   a[i], ra[i], rb[i]);
    }
  free(a), free(b), free(ra), free(rb);
}

static void test_lost_update_with_stochastic_rounding(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 4; seed++) {
    hl_update_params p = {.weight = 1.0f, .update = 1e-4f, .steps = 10000, .sample_every = 1, .seed = seed};
    const size_t ns = hl_update_samples(&p);
    uint32_t fa[HL_UPDATE_STRATEGIES], fb[HL_UPDATE_STRATEGIES];
    double *ta = malloc(sizeof(double) * HL_UPDATE_STRATEGIES * ns), *tb = malloc(sizeof(double) * HL_UPDATE_STRATEGIES * ns);
    cpu->update(&p, fa, ta);
    gpu->update(&p, fb, tb);
    for (int s = 0; s < HL_UPDATE_STRATEGIES; s++) {
      assert_int_equal(fa[s], fb[s]);
      for (size_t i = 0; i < ns; i++)
        if (ta[s * ns + i] != tb[s * ns + i])
          fail_msg("seed %llu, strategy %d, step %zu: cpu %a, gpu %a", (unsigned long long)seed, s, i, ta[s * ns + i],
                   tb[s * ns + i]);
    }
    free(ta), free(tb);
  }
}

static void test_harmonic(void **state) {
  (void)state;
  const hl_dtype f[] = {HL_F16, HL_BF16, HL_F32};
  const uint64_t max[] = {1u << 20, 1u << 20, 1u << 24};
  for (int i = 0; i < 3; i++) {
    hl_harmonic_outcome a, b;
    cpu->harmonic(f[i], max[i], &a);
    gpu->harmonic(f[i], max[i], &b);
    assert_int_equal(a.stall_n, b.stall_n);
    assert_int_equal(a.terms, b.terms);
    assert_int_equal(a.sum_bits, b.sum_bits);
  }
}

/* The default build computes subnormals exactly, as the CPU does; the kernel
 * compiled with -ftz=true flushes fp32 subnormal inputs and results to zero
 * and leaves fp16 alone. */
static void test_subnormals_and_ftz(void **state) {
  (void)state;
  const hl_subnormal_case c[] = {
      {HL_F32, HL_ARITH_MUL, 0x20000000u, 0x1f800000u}, /* 2^-63 * 2^-64 = 2^-127 */
      {HL_F32, HL_ARITH_SUB, 0x00c00000u, 0x00800000u}, /* 1.5*2^-126 - 2^-126 */
      {HL_F32, HL_ARITH_MUL, 0x00020000u, 0x3f800000u}, /* 2^-130 * 1: subnormal input */
      {HL_F32, HL_ARITH_DIV, 0x00800000u, 0x40000000u}, /* 2^-126 / 2 */
      {HL_F16, HL_ARITH_MUL, 0x0400u, 0x1400u},         /* 2^-14 * 2^-10 = 2^-24 */
      {HL_F16, HL_ARITH_SUB, 0x0600u, 0x0400u},         /* 1.5*2^-14 - 2^-14 = 2^-15 */
      {HL_F16, HL_ARITH_MUL, 0x0001u, 0x3c00u},         /* 2^-24 * 1 */
  };
  const int n = (int)(sizeof c / sizeof c[0]);
  uint32_t a[8], b[8], z[8];
  assert_true(cpu->subnormals(0, c, a, n));
  assert_true(gpu->subnormals(0, c, b, n));
  for (int i = 0; i < n; i++) assert_int_equal(a[i], b[i]);
  assert_true(gpu->subnormals(1, c, z, n));
  for (int i = 0; i < n; i++) {
    if (c[i].format == HL_F32) assert_int_equal(z[i] & 0x7fffffffu, 0); /* flushed */
    else assert_int_equal(z[i], a[i]);                                        /* fp16 keeps them */
  }
}

int main(void) {
  hl_require_gpu();
  cpu = hl_backend_cpu.probe;
#ifdef HL_HAVE_CUDA
  gpu = hl_backend_cuda.probe;
#endif
  if (!cpu || !gpu) {
    fprintf(stderr, "a backend has no probe kernels\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sums),
      cmocka_unit_test(test_arith_and_convert),
      cmocka_unit_test(test_lost_update_with_stochastic_rounding),
      cmocka_unit_test(test_harmonic),
      cmocka_unit_test(test_subnormals_and_ftz),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
