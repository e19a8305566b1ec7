/* test_exhaustive.c — suite numerics: conversions checked on every input.
 *
 *   test_exhaustive fp16-roundtrip  all 65536 fp16 encodings -> fp32 -> fp16 is the identity
 *   test_exhaustive fp16-f16c       all 2^32 fp32 encodings -> fp16 equal the CPU's F16C (vcvtps2ph)
 *   test_exhaustive bf16            all 2^32 fp32 -> bf16 equal the generic double-based rounding
 *   test_exhaustive e4m3 | e5m2     all 2^32 fp32 -> fp8, saturating and not, likewise
 *   test_exhaustive tf32            all 2^32 fp32 -> tf32 (RNE) likewise
 *   test_exhaustive fp8-decode      all 256 codes of each fp8 format decode to the OCP value
 *
 * The reference (format.c: scale to an integer significand, round with the
 * FPU's own ties-to-even, scale back) shares no code with half.h's bit
 * manipulation. One argument per meson test, so that the 2^32 sweeps run in
 * parallel. */
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/format.h"
#include "formats/half.h"
#include "tests/support/hltest.h"

#define ALL_F32 (UINT64_C(1) << 32)
#define MAX_REPORTS 5

/* Same value, or both NaN (NaN payloads are not compared; the sign of a NaN
 * is checked separately where a test wants it: F16C). Zeros compare by
 * sign. */
static int same_value(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return a == b && signbit(a) == signbit(b);
}

static void test_fp16_roundtrip(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    hl_f16 back = hl_f32_to_f16(hl_f16_to_f32((hl_f16)h));
    if (hl_f16_isnan((hl_f16)h)) {
      assert_true(hl_f16_isnan(back));
      assert_int_equal(back & 0x8000, h & 0x8000);
    } else if (back != h) {
      fail_msg("fp16 0x%04x -> %a -> 0x%04x", h, (double)hl_f16_to_f32((hl_f16)h), back);
    }
  }
}

__attribute__((target("avx,f16c"))) static void f16c_convert8(const uint32_t *in, uint16_t *out) {
  __m256 v = _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)in));
  _mm_storeu_si128((__m128i *)out, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

static void test_fp16_f16c(void **state) {
  (void)state;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("f16c") || !__builtin_cpu_supports("avx")) {
    printf("skipped: this CPU has no F16C instructions to compare against\n");
    exit(77); /* meson: skipped */
  }
  uint64_t bad = 0;
  uint32_t in[8];
  uint16_t ref[8];
  for (uint64_t base = 0; base < ALL_F32; base += 8) {
    for (int j = 0; j < 8; j++) in[j] = (uint32_t)(base + (uint64_t)j);
    f16c_convert8(in, ref);
    for (int j = 0; j < 8; j++) {
      hl_f16 ours = hl_f32_to_f16_soft(hl_f32_from_bits(in[j]));
      int ok = hl_f16_isnan(ref[j]) ? hl_f16_isnan(ours) && (ours & 0x8000) == (ref[j] & 0x8000) : ours == ref[j];
      if (!ok && bad++ < MAX_REPORTS)
        print_error("fp32 0x%08x (%a): ours 0x%04x, F16C 0x%04x\n", in[j], (double)hl_f32_from_bits(in[j]), ours,
                    ref[j]);
    }
  }
  if (bad) fail_msg("%llu of 2^32 fp32 inputs convert differently from F16C", (unsigned long long)bad);
}

static void test_bf16(void **state) {
  (void)state;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < ALL_F32; i++) {
    float x = hl_f32_from_bits((uint32_t)i);
    double ours = hl_bf16_to_f32_soft(hl_f32_to_bf16_soft(x));
    double ref = hl_format_round(HL_BF16, (double)x, HL_OVERFLOW_IEEE);
    if (!same_value(ours, ref) && bad++ < MAX_REPORTS)
      print_error("fp32 0x%08x (%a): ours %a, reference %a\n", (uint32_t)i, (double)x, ours, ref);
  }
  if (bad) fail_msg("%llu of 2^32 fp32 inputs round differently to bf16", (unsigned long long)bad);
}

static void test_tf32(void **state) {
  (void)state;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < ALL_F32; i++) {
    float x = hl_f32_from_bits((uint32_t)i);
    double ours = hl_f32_round_tf32_rne(x);
    double ref = hl_format_round(HL_TF32, (double)x, HL_OVERFLOW_IEEE);
    if (!same_value(ours, ref) && bad++ < MAX_REPORTS)
      print_error("fp32 0x%08x (%a): ours %a, reference %a\n", (uint32_t)i, (double)x, ours, ref);
  }
  if (bad) fail_msg("%llu of 2^32 fp32 inputs round differently to tf32", (unsigned long long)bad);
}

static void check_fp8(hl_dtype fmt, hl_fp8_kind kind) {
  double decode[256];
  for (int c = 0; c < 256; c++) decode[c] = hl_format_decode(fmt, (uint32_t)c);
  const double max = hl_format_get(fmt)->max;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < ALL_F32; i++) {
    float x = hl_f32_from_bits((uint32_t)i);
    double ref = hl_format_round(fmt, (double)x, HL_OVERFLOW_IEEE);
    /* satfinite: whatever overflowed (to inf or NaN) from a non-NaN input is +-max */
    double ref_sat = (!isnan(x) && (isinf(ref) || isnan(ref))) ? copysign(max, (double)x) : ref;
    double ours = decode[hl_f32_to_fp8_soft(x, kind, 0)];
    double ours_sat = decode[hl_f32_to_fp8_soft(x, kind, 1)];
    if ((!same_value(ours, ref) || !same_value(ours_sat, ref_sat)) && bad++ < MAX_REPORTS)
      print_error("fp32 0x%08x (%a): ours %a / sat %a, reference %a / sat %a\n", (uint32_t)i, (double)x, ours,
                  ours_sat, ref, ref_sat);
  }
  if (bad) fail_msg("%llu of 2^32 fp32 inputs convert differently to %s", (unsigned long long)bad,
                    hl_dtype_format_name(fmt));
}

static void test_e4m3(void **state) {
  (void)state;
  check_fp8(HL_E4M3, HL_FP8_E4M3);
}

static void test_e5m2(void **state) {
  (void)state;
  check_fp8(HL_E5M2, HL_FP8_E5M2);
}

/* Every code against the OCP definition written out: (-1)^s 2^(e-bias) (1 + m/2^M),
 * subnormal 2^(1-bias) (m/2^M), with the specials of each format. */
static void test_fp8_decode(void **state) {
  (void)state;
  for (int kind = 0; kind < 2; kind++) {
    const int M = kind == HL_FP8_E4M3 ? 3 : 2, E = 7 - M, bias = kind == HL_FP8_E4M3 ? 7 : 15;
    const hl_dtype fmt = kind == HL_FP8_E4M3 ? HL_E4M3 : HL_E5M2;
    for (int c = 0; c < 256; c++) {
      int s = c >> 7, e = (c >> M) & ((1 << E) - 1), m = c & ((1 << M) - 1);
      double want;
      if (kind == HL_FP8_E4M3 && e == 15 && m == 7) want = NAN;
      else if (kind == HL_FP8_E5M2 && e == 31) want = m ? NAN : INFINITY;
      else if (e == 0) want = pow(2.0, 1 - bias) * (m / pow(2.0, M));
      else want = pow(2.0, e - bias) * (1.0 + m / pow(2.0, M));
      if (s) want = -want;
      double soft = hl_fp8_to_f32_soft((hl_fp8)c, (hl_fp8_kind)kind);
      double generic = hl_format_decode(fmt, (uint32_t)c);
      if (!same_value(soft, want) || !same_value(generic, want))
        fail_msg("%s code 0x%02x: half.h %a, format.c %a, definition %a", hl_dtype_format_name(fmt), c, soft,
                 generic, want);
      /* and encoding the decoded value gives the code back (NaN: a NaN code) */
      if (!isnan(want)) assert_int_equal(hl_f32_to_fp8_soft((float)want, (hl_fp8_kind)kind, 0), c);
    }
  }
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    struct CMUnitTest test;
  } all[] = {
      {"fp16-roundtrip", cmocka_unit_test(test_fp16_roundtrip)},
      {"fp16-f16c", cmocka_unit_test(test_fp16_f16c)},
      {"bf16", cmocka_unit_test(test_bf16)},
      {"tf32", cmocka_unit_test(test_tf32)},
      {"e4m3", cmocka_unit_test(test_e4m3)},
      {"e5m2", cmocka_unit_test(test_e5m2)},
      {"fp8-decode", cmocka_unit_test(test_fp8_decode)},
  };
  struct CMUnitTest chosen[sizeof all / sizeof all[0]];
  size_t n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    for (int a = 1; a < argc; a++)
      if (!strcmp(argv[a], all[i].name)) chosen[n++] = all[i].test;
  if (argc < 2) {
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) chosen[n++] = all[i].test;
  } else if (n == 0) {
    fprintf(stderr, "test_exhaustive: unknown check '%s'\n", argv[1]);
    return 2;
  }
  return _cmocka_run_group_tests("exhaustive", chosen, n, NULL, NULL);
}
