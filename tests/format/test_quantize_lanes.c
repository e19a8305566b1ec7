/* test_quantize_lanes.c — suite numerics: kernels/cpu/quantize_lanes.h, the
 * block quantizers' nearest-even saturating element conversion (one at a
 * time and on eight AVX2 lanes, where the CPU has AVX2), bit for bit against
 * formats/round.h's hl_round_bits_generic for e4m3, e5m2, e2m3, e3m2, e2m1.
 *
 * Which inputs: all 2^32 cost about 100 s here, so
 *   - every positive fp32 whose exponent field lies from one binade below
 *     the format's smallest subnormal to one above its largest power of two
 *     (all 2^23 mantissas of each): where the codes other than 0 and the
 *     largest are made, with every tie and every carry into the next binade;
 *   - every exponent field (0 to 255: zeros, fp32 subnormals, far below and
 *     far above the window, inf and the NaNs) with the mantissas 0, 1, the
 *     half, the half +- 1, all ones and 4096 random ones, both signs;
 *   - 2^22 random fp32 bit patterns, and the window's inputs negated for
 *     one mantissa in 61.
 * Outside the window every input gives the sign with 0 (below) or the
 * largest code (above), or the format's NaN code; the sample checks it. */
#include <stdio.h>

#include "formats/philox.h"
#include "formats/round.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/quantize_lanes.h"
#include "kernels/quantize_math.h"
#include "tests/support/hltest.h"

typedef struct {
  hl_round_spec spec;
  hl_quant_lanes lanes;
  bool avx2;
  uint64_t checked, mismatches;
} lanes_check;

static lanes_check check_make(hl_dtype e) {
  lanes_check k = {hl_round_spec_make(e, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_SATURATE, false), hl_quant_lanes_of(e),
                   HL_HAVE_QUANTIZE_LANES_AVX2 && hl_cpu_features_get()->avx2, 0, 0};
  return k;
}

static void report(lanes_check *k, uint32_t bits, const char *path, uint32_t got, uint32_t want) {
  if (k->mismatches++ < 5)
    fprintf(stderr, "%s: %s code of 0x%08x (%.9g) is 0x%02x, the generic rounding gives 0x%02x\n",
            hl_dtype_format_name(k->spec.format), path, bits, (double)hl_f32_from_bits(bits), got, want);
}

#if HL_HAVE_QUANTIZE_LANES_AVX2
HL_QUANT_AVX2_TARGET static void lanes8(const hl_quant_lanes *p, const uint32_t *in, uint32_t *out) {
  _mm256_storeu_si256((__m256i *)out,
                      hl_quant_lanes_code8(p, _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)in))));
}
#endif

/* the eight inputs in[0..7] on every path */
static void check8(lanes_check *k, const uint32_t *in) {
  uint32_t vec[8] = {0};
#if HL_HAVE_QUANTIZE_LANES_AVX2
  if (k->avx2) lanes8(&k->lanes, in, vec);
#endif
  for (int i = 0; i < 8; i++) {
    const float y = hl_f32_from_bits(in[i]);
    const uint32_t want = hl_round_bits_generic(&k->spec, y, 0), one = hl_quant_lanes_code(&k->lanes, y);
    if (one != want) report(k, in[i], "one-at-a-time", one, want);
    if (k->avx2 && vec[i] != want) report(k, in[i], "avx2", vec[i], want);
  }
  k->checked += 8;
}

/* every mantissa of the exponent fields lo..hi, positive; negated for some;
 * the fields shared among the OpenMP threads */
static void check_window(lanes_check *k, uint32_t lo, uint32_t hi) {
  uint64_t checked = 0, mismatches = 0;
#pragma omp parallel for schedule(dynamic) reduction(+ : checked, mismatches)
  for (uint32_t field = lo; field <= hi; field++) {
    lanes_check mine = *k;
    mine.checked = mine.mismatches = 0;
    uint32_t in[8];
    for (uint32_t m = 0; m < (1u << 23); m += 8) {
      for (uint32_t i = 0; i < 8; i++) in[i] = field << 23 | (m + i);
      check8(&mine, in);
      if (m % (61 * 8) == 0) {
        for (int i = 0; i < 8; i++) in[i] |= 0x80000000u;
        check8(&mine, in);
      }
    }
    checked += mine.checked, mismatches += mine.mismatches;
  }
  k->checked += checked, k->mismatches += mismatches;
}

static void check_sample(lanes_check *k, uint64_t seed) {
  uint32_t in[8];
  for (uint32_t field = 0; field < 256; field++) {
    const uint32_t edges[8] = {0, 1, 0x3fffff, 0x400000, 0x400001, 0x7fffff, 0x200000, 0x600000};
    for (int sign = 0; sign < 2; sign++) {
      for (int i = 0; i < 8; i++) in[i] = (uint32_t)sign << 31 | field << 23 | edges[i];
      check8(k, in);
      for (uint32_t j = 0; j < 4096; j += 8) {
        for (uint32_t i = 0; i < 8; i++)
          in[i] = (uint32_t)sign << 31 | field << 23 | (hl_philox_u32(seed, field, j + i) & 0x7fffffu);
        check8(k, in);
      }
    }
  }
  for (uint32_t j = 0; j < (1u << 22); j += 8) {
    for (uint32_t i = 0; i < 8; i++) in[i] = hl_philox_u32(seed, 256, j + i);
    check8(k, in);
  }
}

static void test_element(void **state, hl_dtype e) {
  (void)state;
  lanes_check k = check_make(e);
  const hl_format_layout L = hl_format_layout_of(e);
  const int smallest_subnormal = 1 - L.bias - (int)L.man_bits, largest = hl_quant_element_emax(e);
  check_window(&k, (uint32_t)(127 + smallest_subnormal - 1), (uint32_t)(127 + largest + 1));
  check_sample(&k, 0x5eed0000u + (uint64_t)e);
  printf("%s: %llu inputs, %s path%s\n", hl_dtype_format_name(e), (unsigned long long)k.checked,
         k.avx2 ? "one-at-a-time and avx2" : "one-at-a-time", k.avx2 ? "s" : " (the CPU has no AVX2)");
  assert_int_equal(k.mismatches, 0);
}

static void test_e4m3(void **s) { test_element(s, HL_E4M3); }
static void test_e5m2(void **s) { test_element(s, HL_E5M2); }
static void test_e2m3(void **s) { test_element(s, HL_E2M3); }
static void test_e3m2(void **s) { test_element(s, HL_E3M2); }
static void test_e2m1(void **s) { test_element(s, HL_E2M1); }

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_e4m3), cmocka_unit_test(test_e5m2),
                                     cmocka_unit_test(test_e2m3), cmocka_unit_test(test_e3m2),
                                     cmocka_unit_test(test_e2m1)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
