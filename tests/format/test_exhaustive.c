/* test_exhaustive.c — suite numerics: conversions checked on every input.
 *
 *   test_exhaustive fp16-roundtrip  all 65536 fp16 encodings -> fp32 -> fp16 is the identity
 *   test_exhaustive fp16-PATH       all 2^32 fp32 encodings -> fp16 through the array conversion the
 *   test_exhaustive bf16-PATH       kernels dispatch to (kernels/cpu/half_arrays.h), one path each:
 *                                   portable against the generic double-based rounding and half.h's
 *                                   NaN rule; avx2 and avx512 (the CPU's instructions) against the
 *                                   portable conversion, bit for bit. PATH: portable, avx2 (both),
 *                                   avx512 (bf16); a path this CPU lacks is skipped, saying so.
 *   test_exhaustive e4m3 | e5m2     all 2^32 fp32 -> fp8, saturating and not, against the generic rounding
 *   test_exhaustive tf32            all 2^32 fp32 -> tf32 (RNE) likewise
 *   test_exhaustive fp8-decode      all 256 codes of each fp8 format decode to the OCP value
 *
 * The reference (format.c: scale to an integer significand, round with the
 * FPU's own ties-to-even, scale back) shares no code with half.h's bit
 * manipulation. One argument per meson test, so that the 2^32 sweeps run in
 * parallel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/format.h"
#include "formats/half.h"
#include "kernels/cpu/half_arrays.h"
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

/* ------------------------------------------ fp32 -> fp16, bf16 by path -- */

static int skipped_; /* checks skipped because the CPU lacks their path */

/* formats/half.h's NaN rule written out: the sign, the quiet bit set, the top of the payload */
static uint16_t nan_rule(hl_dtype t, uint32_t x) {
  if (t == HL_F16) return (uint16_t)(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x03ffu));
  return (uint16_t)((x >> 16) | 0x0040u);
}

/* Whether code is fp32 x converted to t. The portable path against format.c
 * (and the NaN rule); the others against the portable conversion. */
static int converts_right(hl_dtype t, hl_cpu_half_path p, uint32_t x, uint16_t code) {
  const float f = hl_f32_from_bits(x);
  if (p != HL_HALF_PATH_PORTABLE) return code == (t == HL_F16 ? hl_f32_to_f16_soft(f) : hl_f32_to_bf16_soft(f));
  if (isnan(f)) return code == nan_rule(t, x);
  return same_value(hl_format_decode(t, code), hl_format_round(t, (double)f, HL_OVERFLOW_IEEE));
}

typedef struct {
  hl_dtype type;
  hl_cpu_half_path path;
} half_check;

/* All 2^32 inputs, a block at a time, through the path's array conversion */
static void test_narrow_path(void **state) {
  const half_check *c = *state;
  const char *type = hl_dtype_format_name(c->type), *path = hl_cpu_half_path_name(c->path);
  if (!hl_cpu_half_path_present(c->type, c->path)) {
    printf("skipped: %s path %s needs %s, which this CPU does not have\n", type, path,
           hl_cpu_half_path_needs(c->type, c->path));
    skipped_++;
    skip();
  }
  const hl_cpu_narrow_fn narrow = hl_cpu_half_path_narrow(c->type, c->path);
  enum { BLOCK = 1 << 16 };
  static float in[BLOCK];
  static uint16_t out[BLOCK];
  uint64_t bad = 0;
  for (uint64_t base = 0; base < ALL_F32; base += BLOCK) {
    for (uint32_t j = 0; j < BLOCK; j++) in[j] = hl_f32_from_bits((uint32_t)base + j);
    narrow(in, out, BLOCK);
    for (uint32_t j = 0; j < BLOCK; j++) {
      const uint32_t x = (uint32_t)base + j;
      if (!converts_right(c->type, c->path, x, out[j]) && bad++ < MAX_REPORTS)
        print_error("fp32 0x%08x (%a): %s path %s gives 0x%04x, portable 0x%04x\n", x, (double)in[j], type, path,
                    out[j], c->type == HL_F16 ? hl_f32_to_f16_soft(in[j]) : hl_f32_to_bf16_soft(in[j]));
    }
  }
  if (bad)
    fail_msg("%llu of 2^32 fp32 inputs convert wrongly to %s on path %s", (unsigned long long)bad, type, path);
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
  static const half_check checks[] = {
      {HL_F16, HL_HALF_PATH_PORTABLE},  {HL_F16, HL_HALF_PATH_AVX2},
      {HL_BF16, HL_HALF_PATH_PORTABLE}, {HL_BF16, HL_HALF_PATH_AVX2}, {HL_BF16, HL_HALF_PATH_AVX512},
  };
/* a sweep named as its meson test, so that cmocka's report names it too */
#define PATH_CHECK(NAME, I) {NAME, {NAME, test_narrow_path, NULL, NULL, (void *)&checks[I]}}
  static const struct {
    const char *name;
    struct CMUnitTest test;
  } all[] = {
      {"fp16-roundtrip", cmocka_unit_test(test_fp16_roundtrip)},
      PATH_CHECK("fp16-portable", 0),
      PATH_CHECK("fp16-avx2", 1),
      PATH_CHECK("bf16-portable", 2),
      PATH_CHECK("bf16-avx2", 3),
      PATH_CHECK("bf16-avx512", 4),
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
  const int failed = _cmocka_run_group_tests("exhaustive", chosen, n, NULL, NULL);
  /* meson: skipped, when every chosen check was (cmocka alone would count them as passed) */
  return failed == 0 && skipped_ == (int)n ? 77 : failed;
}
