/* test_probe_kernels.c — suite unit: the CPU probe kernels (the HL_HD bodies
 * of kernels/probe_math.h that the GPU runs too) against the values of
 * docs/numerics.md and against independent references written here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/format.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "kernels/backend.h"
#include "kernels/probe.h"
#include "kernels/probe_math.h"
#include "tests/support/hltest.h"

static const hl_probe_kernels *cpu(void) {
  assert_non_null(hl_backend_cpu.probe);
  return hl_backend_cpu.probe;
}

static double dec(hl_dtype f, uint32_t bits) { return hl_format_decode(f, bits); }

/* ------------------------------------------------------------- sums -- */

typedef struct {
  hl_sum_outcome out[HL_SUM_STRATEGIES];
  double *traj;
  uint64_t *at;
  int ns;
} sum_run;

/* Sum with a trajectory point at every element. */
static sum_run run_sum(float value, uint64_t count) {
  sum_run r;
  r.ns = (int)count + 1;
  r.at = malloc(sizeof(uint64_t) * (size_t)r.ns);
  r.traj = malloc(sizeof(double) * (size_t)r.ns * HL_SUM_STRATEGIES);
  for (int i = 0; i < r.ns; i++) r.at[i] = (uint64_t)i;
  cpu()->sum(value, count, r.at, r.ns, r.out, r.traj);
  return r;
}
static void free_sum(sum_run *r) {
  free(r->traj);
  free(r->at);
}
static double traj(const sum_run *r, hl_sum_strategy s, uint64_t k) { return r->traj[(size_t)s * (size_t)r->ns + k]; }

static void test_sum_4096_x_16(void **state) {
  (void)state;
  sum_run r = run_sum(16.0f, 4096);
  const hl_sum_outcome *o = r.out;
  /* spec table: 32768, inf, NaN, inf, 65536, 4096, 65536 */
  assert_int_equal(o[HL_SUM_FP16_SEQUENTIAL].result_bits, 0x7800);
  assert_int_equal(o[HL_SUM_FP16_PAIRWISE].result_bits, 0x7c00);
  assert_true(hl_f16_isnan((hl_f16)o[HL_SUM_FP16_KAHAN].result_bits));
  assert_int_equal(o[HL_SUM_FP32_TO_FP16].result_bits, 0x7c00);
  assert_int_equal(o[HL_SUM_FP32].result_bits, 0x47800000); /* 65536 */
  assert_int_equal(o[HL_SUM_BF16_SEQUENTIAL].result_bits, 0x4580); /* 4096 */
  assert_int_equal(o[HL_SUM_BF16_PAIRWISE].result_bits, 0x4780);   /* 65536 */

  /* sequential fp16: add #2049 meets 32768, a tie (spacing 32), and is lost */
  assert_int_equal(o[HL_SUM_FP16_SEQUENTIAL].first_lost, 2049);
  assert_true(o[HL_SUM_FP16_SEQUENTIAL].total_at_lost == 32768.0);
  assert_int_equal(o[HL_SUM_FP16_SEQUENTIAL].first_overflow, 0);
  /* bf16 sequential stalls after 256 adds */
  assert_int_equal(o[HL_SUM_BF16_SEQUENTIAL].first_lost, 257);
  assert_true(o[HL_SUM_BF16_SEQUENTIAL].total_at_lost == 4096.0);
  /* pairwise: exact partials until the last merge, 32768 + 32768 -> inf */
  assert_int_equal(o[HL_SUM_FP16_PAIRWISE].first_lost, 0);
  assert_int_equal(o[HL_SUM_FP16_PAIRWISE].first_overflow, 4096);
  assert_true(o[HL_SUM_FP16_PAIRWISE].total_before_overflow == 65520.0);
  assert_int_equal(o[HL_SUM_FP16_PAIRWISE].first_nan, 0);
  /* Kahan: 65504 + 16 = 65520 rounds to inf at 4095; then inf - inf */
  assert_int_equal(o[HL_SUM_FP16_KAHAN].first_lost, 0);
  assert_int_equal(o[HL_SUM_FP16_KAHAN].first_overflow, 4095);
  assert_true(o[HL_SUM_FP16_KAHAN].total_before_overflow == 65504.0);
  assert_int_equal(o[HL_SUM_FP16_KAHAN].first_nan, 4096);
  /* fp32 then cast: only the final cast overflows */
  assert_int_equal(o[HL_SUM_FP32_TO_FP16].first_overflow, 4096);
  assert_true(o[HL_SUM_FP32_TO_FP16].total_before_overflow == 65520.0);
  for (int s = 0; s < HL_SUM_STRATEGIES; s++)
    if (s == HL_SUM_FP32 || s == HL_SUM_BF16_PAIRWISE) {
      assert_int_equal(o[s].first_lost, 0);
      assert_int_equal(o[s].first_overflow, 0);
    }

  /* trajectories */
  assert_true(traj(&r, HL_SUM_FP16_SEQUENTIAL, 0) == 0.0);
  assert_true(traj(&r, HL_SUM_FP16_SEQUENTIAL, 2048) == 32768.0);
  assert_true(traj(&r, HL_SUM_FP16_SEQUENTIAL, 4096) == 32768.0);
  assert_true(traj(&r, HL_SUM_FP16_KAHAN, 2049) == 32784.0); /* s = 32768, c = -16 */
  assert_true(isinf(traj(&r, HL_SUM_FP16_KAHAN, 4095)));
  assert_true(isnan(traj(&r, HL_SUM_FP16_KAHAN, 4096)));
  assert_true(traj(&r, HL_SUM_FP16_PAIRWISE, 4095) == 65520.0);
  assert_true(isinf(traj(&r, HL_SUM_FP16_PAIRWISE, 4096)));
  assert_true(traj(&r, HL_SUM_FP32_TO_FP16, 4095) == 65520.0);
  assert_true(isinf(traj(&r, HL_SUM_FP32_TO_FP16, 4096)));
  for (uint64_t k = 0; k <= 4096; k++) assert_true(traj(&r, HL_SUM_FP32, k) == 16.0 * (double)k);
  free_sum(&r);
}

static void test_sum_contrasts(void **state) {
  (void)state;
  sum_run r = run_sum(16.0f, 4000);
  assert_true(dec(HL_F16, r.out[HL_SUM_FP16_SEQUENTIAL].result_bits) == 32768.0);
  assert_true(dec(HL_F16, r.out[HL_SUM_FP16_PAIRWISE].result_bits) == 64000.0);
  assert_true(dec(HL_F16, r.out[HL_SUM_FP16_KAHAN].result_bits) == 64000.0);
  assert_true(dec(HL_F16, r.out[HL_SUM_FP32_TO_FP16].result_bits) == 64000.0);
  assert_true(dec(HL_F32, r.out[HL_SUM_FP32].result_bits) == 64000.0);
  assert_int_equal(r.out[HL_SUM_FP16_KAHAN].first_overflow, 0);
  free_sum(&r);

  r = run_sum(1.0f, 4096);
  assert_true(dec(HL_F16, r.out[HL_SUM_FP16_SEQUENTIAL].result_bits) == 2048.0);
  assert_int_equal(r.out[HL_SUM_FP16_SEQUENTIAL].first_lost, 2049);
  assert_true(dec(HL_BF16, r.out[HL_SUM_BF16_SEQUENTIAL].result_bits) == 256.0);
  assert_int_equal(r.out[HL_SUM_BF16_SEQUENTIAL].first_lost, 257);
  assert_true(dec(HL_F16, r.out[HL_SUM_FP16_PAIRWISE].result_bits) == 4096.0);
  assert_true(dec(HL_BF16, r.out[HL_SUM_BF16_PAIRWISE].result_bits) == 4096.0);
  assert_true(dec(HL_F32, r.out[HL_SUM_FP32].result_bits) == 4096.0);
  free_sum(&r);

  /* one element: nothing to lose; the result is the element */
  r = run_sum(0.1f, 1);
  for (int s = 0; s < HL_SUM_STRATEGIES; s++) {
    hl_dtype f = hl_sum_format((hl_sum_strategy)s);
    assert_int_equal(r.out[s].result_bits, hl_format_encode(f, 0.1f, HL_OVERFLOW_IEEE));
    assert_int_equal(r.out[s].first_lost, 0);
  }
  free_sum(&r);
}

/* Past 2^24 an fp32 accumulator of ones is stuck (a fixed point); the kernel
 * skips the repeats but must still report every later point and the final
 * cast of the last element. (The strategies are run one by one here, through
 * the body the backends share, to leave out the slow pairwise ones.) */
static void test_sum_past_a_fixed_point(void **state) {
  (void)state;
  const uint64_t n = 20000000;
  uint64_t at[] = {0, 16777215, 16777216, 16777217, 16777218, n - 1, n};
  const int ns = 7;
  double fp32[7], cast[7], seq[7];
  hl_sum_outcome o32, ocast, oseq;
  hl_sum_run(HL_SUM_FP32, 1.0f, n, at, ns, &o32, fp32);
  hl_sum_run(HL_SUM_FP32_TO_FP16, 1.0f, n, at, ns, &ocast, cast);
  hl_sum_run(HL_SUM_FP16_SEQUENTIAL, 1.0f, n, at, ns, &oseq, seq);
  assert_int_equal(o32.first_lost, 16777217);
  assert_true(fp32[1] == 16777215.0 && fp32[2] == 16777216.0 && fp32[3] == 16777216.0 && fp32[5] == 16777216.0);
  assert_true(fp32[6] == 16777216.0);
  assert_int_equal(o32.result_bits, 0x4b800000); /* 2^24 */
  assert_true(cast[5] == 16777216.0 && isinf(cast[6])); /* the cast happens at the last element */
  assert_int_equal(ocast.first_overflow, n);
  assert_int_equal(ocast.result_bits, 0x7c00);
  assert_int_equal(oseq.first_lost, 2049);
  for (int i = 1; i < ns; i++) assert_true(seq[i] == 2048.0);
}

/* The tree, level by level, on an array: the reference for the streamed one. */
static uint32_t pairwise_levels(hl_dtype f, const uint32_t *x, size_t n) {
  uint32_t *a = malloc(sizeof *a * n);
  memcpy(a, x, sizeof *a * n);
  while (n > 1) {
    size_t m = 0;
    for (size_t i = 0; i + 1 < n; i += 2) a[m++] = hl_probe_native_op(HL_ARITH_ADD, f, a[i], a[i + 1]);
    if (n & 1) a[m++] = a[n - 1]; /* the odd one moves up unchanged */
    n = m;
  }
  uint32_t r = a[0];
  free(a);
  return r;
}

static void test_pairwise_is_the_level_tree(void **state) {
  (void)state;
  const hl_dtype fmts[] = {HL_F16, HL_BF16};
  uint32_t x[1100], stack[64];
  for (int fi = 0; fi < 2; fi++) {
    hl_dtype f = fmts[fi];
    for (size_t n = 1; n <= 1100; n += (n < 70 ? 1 : 37)) {
      /* values of mixed signs and magnitudes, so that order matters */
      for (size_t i = 0; i < n; i++) {
        uint32_t u = hl_philox_u32(7, 1, i + 1000 * n);
        float v = ldexpf((float)(u & 0xffff) / 65536.0f + 0.5f, (int)((u >> 16) % 24) - 12);
        x[i] = hl_probe_encode(f, (u >> 31) ? -v : v, 0);
      }
      int depth = 0;
      for (size_t k = 1; k <= n; k++) hl_pairwise_push(f, stack, &depth, k, x[k - 1]);
      assert_int_equal(hl_pairwise_fold(f, stack, depth), pairwise_levels(f, x, n));
    }
  }
}

/* ----------------------------------------------------- double rounding -- */

static void test_encode_f64_is_rounded_once(void **state) {
  (void)state;
  const hl_dtype fmts[] = {HL_F32, HL_TF32, HL_F16, HL_BF16, HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
  for (int fi = 0; fi < (int)(sizeof fmts / sizeof fmts[0]); fi++) {
    hl_dtype f = fmts[fi];
    const hl_format_info *info = hl_format_get(f);
    for (uint64_t i = 0; i < 200000; i++) {
      uint32_t a = hl_philox_u32(11, fi, 2 * i), b = hl_philox_u32(11, fi, 2 * i + 1);
      /* a representable value of f, nudged to or near a midpoint above it */
      double base = hl_format_decode(f, hl_format_encode(f, hl_f32_from_bits(a), HL_OVERFLOW_IEEE));
      if (!isfinite(base) || base == 0) continue;
      int e = ilogb(base);
      if (e < info->emin) e = info->emin;
      double half_ulp = ldexp(1.0, e - info->man_bits - 1);
      double nudge = (b & 3) == 0 ? 0 : (b & 3) == 1 ? ldexp(1.0, -60 + e) : -ldexp(1.0, -60 + e);
      if ((b & 4) && f == HL_F32) nudge = ldexp((double)(b >> 8), e - 50); /* anywhere in the ulp */
      double d = base + half_ulp + nudge;
      double want = hl_format_round(f, d, HL_OVERFLOW_IEEE);
      double got = hl_format_decode(f, hl_probe_encode_f64(f, d));
      if (isnan(want)) assert_true(isnan(got));
      else if (got != want) fail_msg("%s: %a rounds to %a, not %a", hl_dtype_format_name(info->id), d, got, want);
    }
  }
  /* the double-rounding trap: 1 + (2^-11 + 2^-34) */
  assert_int_equal(hl_probe_encode_f64(HL_F16, 1.0 + 0x1p-11 + 0x1p-34), 0x3c01);
  assert_int_equal(hl_probe_encode_f64(HL_TF32, 1.0 + 0x1p-11 + 0x1p-40), 0x1fc01); /* tf32: 1 + 2^-10 */
  /* a NaN stays a NaN in tf32's 19 bits, whichever fp32 payload bits it had */
  const uint32_t nans[] = {0x7f800001u, 0xff801fffu, 0x7fc00000u, 0x7f802000u};
  for (int i = 0; i < 4; i++) {
    const float x = hl_f32_from_bits(nans[i]);
    const uint32_t code = hl_probe_encode(HL_TF32, x, 0), code_sat = hl_probe_encode(HL_TF32, x, 1);
    if ((code & 0x3ffffu) <= 0x3fc00u || code != code_sat || (code >> 18) != nans[i] >> 31)
      fail_msg("fp32 NaN 0x%08x encodes as tf32 0x%05x (saturating 0x%05x): not a NaN of its sign", nans[i], code,
               code_sat);
    assert_int_equal(hl_probe_encode_f64(HL_TF32, (double)x) & 0x3fc00u, 0x3fc00u);
  }
}

static void test_arith_modes(void **state) {
  (void)state;
  const float one = 1.0f, tiny = 0.0001f, trap = 0x1p-11f + 0x1p-34f;
  uint32_t r;
  cpu()->arith(HL_ARITH_ADD, HL_ROUND_NATIVE, HL_F16, &one, &tiny, &r, 1);
  assert_int_equal(r, 0x3c00); /* 1 + 0.0001 = 1 in fp16 */
  cpu()->arith(HL_ARITH_ADD, HL_ROUND_NATIVE, HL_BF16, &one, &tiny, &r, 1);
  assert_int_equal(r, 0x3f80);
  cpu()->arith(HL_ARITH_ADD, HL_ROUND_NATIVE, HL_F32, &one, &tiny, &r, 1);
  assert_true(hl_f32_from_bits(r) == 1.00010001659393310546875f);
  cpu()->arith(HL_ARITH_ADD, HL_ROUND_VIA_FP32, HL_F16, &one, &trap, &r, 1);
  assert_int_equal(r, 0x3c00); /* fp32 first: 1 + 2^-11, a tie, then to even */
  cpu()->arith(HL_ARITH_ADD, HL_ROUND_ONCE, HL_F16, &one, &trap, &r, 1);
  assert_int_equal(r, 0x3c01); /* 1.0009765625 */
  const float w = 1.9f, u = 1.9f / 2100.0f;
  cpu()->arith(HL_ARITH_ADD, HL_ROUND_NATIVE, HL_F16, &w, &u, &r, 1);
  assert_true(dec(HL_F16, r) - dec(HL_F16, hl_f32_to_f16(w)) == 0x1p-10);
  /* native fp16 ops are half.h's */
  for (uint32_t i = 0; i < 20000; i++) {
    float a = hl_f16_to_f32((hl_f16)hl_philox_u32(3, 0, i)), b = hl_f16_to_f32((hl_f16)(hl_philox_u32(3, 1, i)));
    uint32_t got;
    cpu()->arith(HL_ARITH_MUL, HL_ROUND_NATIVE, HL_F16, &a, &b, &got, 1);
    hl_f16 want = hl_f16_mul(hl_f32_to_f16(a), hl_f32_to_f16(b));
    if (hl_f16_isnan(want)) assert_true(hl_f16_isnan((hl_f16)got));
    else assert_int_equal(got, want);
  }
}

/* The narrow formats' "native" operation (their values in fp32, one rounding)
 * is the exact result rounded once: every pair of codes, every operation,
 * against format.c's rounding of the double result. */
static void test_narrow_native_ops_round_once(void **state) {
  (void)state;
  const hl_dtype fmts[] = {HL_E4M3, HL_E5M2, HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
  for (int fi = 0; fi < (int)(sizeof fmts / sizeof fmts[0]); fi++) {
    const hl_dtype f = fmts[fi];
    const uint32_t codes = 1u << hl_format_code_width(f), n = codes * codes;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    uint32_t *out = malloc(sizeof(uint32_t) * n);
    assert_non_null(a), assert_non_null(b), assert_non_null(out);
    for (uint32_t i = 0; i < n; i++) a[i] = (float)dec(f, i / codes), b[i] = (float)dec(f, i % codes);
    for (int op = HL_ARITH_ADD; op <= HL_ARITH_DIV; op++) {
      cpu()->arith((hl_arith_op)op, HL_ROUND_NATIVE, f, a, b, out, n);
      for (uint32_t i = 0; i < n; i++) {
        const double x = a[i], y = b[i];
        const double exact = op == HL_ARITH_ADD ? x + y : op == HL_ARITH_SUB ? x - y : op == HL_ARITH_MUL ? x * y : x / y;
        const double want = hl_format_round(f, exact, HL_OVERFLOW_IEEE), got = dec(f, out[i]);
        if (isnan(want) ? !isnan(got) : got != want || signbit(got) != signbit(want))
          fail_msg("%s: %g op%d %g gives %g, not %g", hl_dtype_format_name(f), x, op, y, got, want);
      }
    }
    free(a), free(b), free(out);
  }
}

static void test_convert_subnormal_facts(void **state) {
  (void)state;
  const float x[] = {0x1p-24f, 0x1p-25f, 3 * 0x1p-26f, 3 * 0x1p-25f, 0x1p-14f, 65504.0f, 65519.996f, 65520.0f, 1e6f};
  const uint32_t fp16[] = {0x0001, 0x0000, 0x0001, 0x0002, 0x0400, 0x7bff, 0x7bff, 0x7c00, 0x7c00};
  uint32_t out[9];
  cpu()->convert(HL_F16, HL_OVERFLOW_IEEE, x, out, 9);
  for (int i = 0; i < 9; i++) assert_int_equal(out[i], fp16[i]);
  cpu()->convert(HL_F16, HL_OVERFLOW_SATURATE, x, out, 9);
  assert_int_equal(out[8], 0x7bff);
  cpu()->convert(HL_E4M3, HL_OVERFLOW_SATURATE, x, out, 9);
  assert_int_equal(out[8], 0x7e); /* 448 */
  cpu()->convert(HL_E4M3, HL_OVERFLOW_IEEE, x, out, 9);
  assert_int_equal(out[8], 0x7f); /* NaN: e4m3 has no inf */
  cpu()->convert(HL_BF16, HL_OVERFLOW_IEEE, x, out, 9);
  assert_int_equal(out[1], 0x3300); /* 2^-25 is a normal bf16 */
}

/* ------------------------------------------------ stochastic rounding -- */

static void test_stochastic_rounding(void **state) {
  (void)state;
  /* representable values never move, whatever the draw */
  for (uint32_t h = 0; h < 0x7c00; h += 7) {
    float x = hl_f16_to_f32((hl_f16)h);
    assert_int_equal(hl_f32_to_f16_stochastic(x, 0), h);
    assert_int_equal(hl_f32_to_f16_stochastic(x, 0xffffffffu), h);
    assert_int_equal(hl_f32_to_f16_stochastic(-x, 0x12345678u), h | 0x8000u);
  }
  /* up with probability (x - down) / spacing, in the normal and the subnormal range */
  const struct { float x; hl_f16 down; double p; } cases[] = {
      {1.0f + 0.25f * 0x1p-10f, 0x3c00, 0.25},
      {1.0f + 0.75f * 0x1p-10f, 0x3c00, 0.75},
      {0.3f * 0x1p-24f, 0x0000, 0.3f * 1.0},
      {(5.0f + 0.5f) * 0x1p-24f, 0x0005, 0.5},
      {65504.0f - 4.0f, 0x7bfe, 0.875}, /* spacing 32 below 65504 */
  };
  const int n = 200000;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    double p = (double)cases[c].p;
    if (c == 2) p = (double)(0.3f * 0x1p-24f) / 0x1p-24;
    int up = 0;
    for (int i = 0; i < n; i++) {
      hl_f16 r = hl_f32_to_f16_stochastic(cases[c].x, hl_philox_u32(5, c, (uint64_t)i));
      assert_true(r == cases[c].down || r == cases[c].down + 1);
      up += r != cases[c].down;
    }
    double sigma = sqrt(p * (1 - p) / n);
    if (fabs((double)up / n - p) > 5 * sigma) fail_msg("case %zu: up %.5f of the time, expected %.5f", c, (double)up / n, p);
  }
  /* beyond 65504 the nearest-even rule: 65520 and up overflow */
  assert_int_equal(hl_f32_to_f16_stochastic(65519.0f, 0), 0x7bff);
  assert_int_equal(hl_f32_to_f16_stochastic(65520.0f, 0xffffffffu), 0x7c00);
}

/* ---------------------------------------------------- lost update -- */

static void test_lost_update(void **state) {
  (void)state;
  hl_update_params p = {.weight = 1.0f, .update = 1e-4f, .steps = 10000, .sample_every = 100, .seed = 1};
  uint32_t fin[HL_UPDATE_STRATEGIES];
  double *tr = malloc(sizeof(double) * HL_UPDATE_STRATEGIES * hl_update_samples(&p));
  cpu()->update(&p, fin, tr);
  const double ideal = 1.0 + 10000.0 * hl_f16_to_f32(hl_f32_to_f16(1e-4f)); /* 2.00016594 */
  assert_int_equal(fin[HL_UPDATE_FP16], 0x3c00); /* stays 1.0 */
  assert_int_equal(fin[HL_UPDATE_BF16], 0x3f80);
  assert_true(fabs(dec(HL_F32, fin[HL_UPDATE_FP32_MASTER]) - ideal) < 1e-3);
  assert_true(fabs(dec(HL_F16, fin[HL_UPDATE_FP16_KAHAN]) - ideal) <= 0x1p-9);
  /* stochastic rounding is unbiased: sd of the final weight about 0.04 */
  assert_true(fabs(dec(HL_F16, fin[HL_UPDATE_FP16_STOCHASTIC]) - ideal) < 0.25);
  assert_true(tr[0] == 1.0 && tr[100] == 1.0); /* fp16 row, step 0 and 10000 */
  double mean = 0;
  for (uint64_t seed = 1; seed <= 16; seed++) {
    p.seed = seed;
    cpu()->update(&p, fin, tr);
    mean += dec(HL_F16, fin[HL_UPDATE_FP16_STOCHASTIC]) / 16;
  }
  assert_true(fabs(mean - ideal) < 0.06); /* 16 runs: sd of the mean about 0.01 */
  free(tr);
}

/* ------------------------------------------------------- harmonic -- */

static void test_harmonic_stalls(void **state) {
  (void)state;
  hl_harmonic_outcome o;
  cpu()->harmonic(HL_F16, 100000, &o);
  assert_int_equal(o.stall_n, 513);
  assert_true(dec(HL_F16, o.sum_bits) == 7.0859375);
  cpu()->harmonic(HL_BF16, 100000, &o);
  assert_int_equal(o.stall_n, 65);
  assert_true(dec(HL_BF16, o.sum_bits) == 5.0625);
  cpu()->harmonic(HL_F16, 100, &o);
  assert_int_equal(o.stall_n, 0);
  assert_int_equal(o.terms, 100);
}

/* ---------------------------------------------------- subnormals -- */

static void test_subnormal_cases(void **state) {
  (void)state;
  const hl_subnormal_case c[] = {
      {HL_F32, HL_ARITH_MUL, 0x20000000u /* 2^-63 */, 0x1f800000u /* 2^-64 */},
      {HL_F32, HL_ARITH_SUB, 0x00c00000u /* 1.5 * 2^-126 */, 0x00800000u /* 2^-126 */},
      {HL_F16, HL_ARITH_MUL, 0x0400u /* 2^-14 */, 0x1400u /* 2^-10 */},
  };
  uint32_t out[3];
  assert_true(cpu()->subnormals(0, c, out, 3));
  assert_int_equal(out[0], 0x00400000u); /* 2^-127, subnormal */
  assert_int_equal(out[1], 0x00400000u);
  assert_int_equal(out[2], 0x0001u); /* 2^-24 */
#if defined(__x86_64__)
  assert_true(cpu()->subnormals(1, c, out, 3));
  assert_int_equal(out[0], 0); /* flushed */
  assert_int_equal(out[1], 0); /* a != b, yet a - b == 0 */
  assert_int_equal(out[2], 0x0001u); /* fp16 keeps its subnormals */
#endif
  assert_false(cpu()->subnormals(2, c, out, 3));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sum_4096_x_16),
      cmocka_unit_test(test_sum_contrasts),
      cmocka_unit_test(test_sum_past_a_fixed_point),
      cmocka_unit_test(test_pairwise_is_the_level_tree),
      cmocka_unit_test(test_encode_f64_is_rounded_once),
      cmocka_unit_test(test_arith_modes),
      cmocka_unit_test(test_narrow_native_ops_round_once), cmocka_unit_test(test_convert_subnormal_facts),
      cmocka_unit_test(test_stochastic_rounding),
      cmocka_unit_test(test_lost_update),
      cmocka_unit_test(test_harmonic_stalls),
      cmocka_unit_test(test_subnormal_cases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
