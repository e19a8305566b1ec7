/* test_convert_cpu.c — suite unit: the CPU twin of kernels/convert.h (what
 * the gpu suite compares the device against) gives half.h's portable
 * results for the specs half.h implements (fp16 and bf16 through the CPU's
 * conversion path, the other formats through half.h itself), the generic
 * rounding's for the others, stochastic ones with word first + i; fp6, fp4
 * and e8m0 codes decode as format.c's independent decoder says. */
#include "core/base/device.h"
#include "formats/format.h"
#include "formats/half.h"
#include "formats/philox.h"
#include "formats/round.h"
#include "kernels/convert.h"
#include "tests/support/hltest.h"

static void test_encode_matches_half_h(void **state) {
  (void)state;
  const hl_backend *cpu = hl_backend_for(HL_DEVICE_CPU);
  enum { N = (1 << 16) + 3 };
  static uint16_t h[N], b[N];
  static uint8_t e4[N];
  static uint32_t t[N];
  static uint16_t h_up[N], b_sr[N];
  /* 0.5 and up; zeros and fp32 subnormals; the largest finite values, inf and NaNs */
  static const uint32_t firsts[] = {0x3f000000u, 0x00000000u, 0x7f7f8000u, 0xff7f8000u};
  for (size_t f = 0; f < sizeof firsts / sizeof firsts[0]; f++) {
    const uint32_t first = firsts[f];
    const hl_round_spec f16 = hl_round_nearest(HL_F16), bf16 = hl_round_nearest(HL_BF16);
    const hl_round_spec e4m3_sat = hl_round_spec_make(HL_E4M3, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_SATURATE, false);
    const hl_round_spec tf32_rna = hl_round_spec_make(HL_TF32, HL_ROUNDING_NEAREST_AWAY, HL_OVERFLOW_IEEE, false);
    const hl_round_spec f16_up = hl_round_spec_make(HL_F16, HL_ROUNDING_TOWARD_POSITIVE, HL_OVERFLOW_IEEE, true);
    const hl_round_spec bf16_sr = hl_round_stochastic(HL_BF16, 8, 3, 4);
    cpu->convert->encode_range(&f16, first, N, h);
    cpu->convert->encode_range(&bf16, first, N, b);
    cpu->convert->encode_range(&e4m3_sat, first, N, e4);
    cpu->convert->encode_range(&tf32_rna, first, N, t);
    cpu->convert->encode_range(&f16_up, first, N, h_up);
    cpu->convert->encode_range(&bf16_sr, first, N, b_sr);
    for (uint32_t i = 0; i < N; i++) {
      float x = hl_f32_from_bits(first + i);
      assert_int_equal(h[i], hl_f32_to_f16_soft(x));
      assert_int_equal(b[i], hl_f32_to_bf16_soft(x));
      assert_int_equal(e4[i], hl_f32_to_fp8_soft(x, HL_FP8_E4M3, 1));
      assert_int_equal(t[i], hl_f32_bits(hl_f32_round_tf32_rna(x)) >> 13);
      assert_int_equal(h_up[i], hl_round_bits_generic(&f16_up, x, 0));
      assert_int_equal(b_sr[i], hl_round_bits_generic(&bf16_sr, x, hl_philox_u32(3, 4, (uint64_t)first + i)));
    }
  }
  uint32_t dec[256];
  cpu->convert->decode_range(HL_E5M2, 0, 256, dec);
  assert_int_equal(dec[0x7b], hl_f32_bits(57344.0f));
  uint16_t a[2] = {0x3c00, 0x7800}, c[2] = {0x068e, 0x7800}, out[2];
  cpu->convert->binop(HL_F16, '+', a, c, out, 2);
  assert_int_equal(out[0], 0x3c00); /* 1 + 0.0001 */
  assert_int_equal(out[1], 0x7c00); /* 32768 + 32768 */
}

/* every fp16 and bf16 encoding, NaN payloads included */
static void test_decode_matches_half_h(void **state) {
  (void)state;
  const hl_backend *cpu = hl_backend_for(HL_DEVICE_CPU);
  enum { N = 1 << 16 };
  static uint32_t f16[N], bf16[N];
  cpu->convert->decode_range(HL_F16, 0, N, f16);
  cpu->convert->decode_range(HL_BF16, 0, N, bf16);
  for (uint32_t code = 0; code < N; code++) {
    assert_int_equal(f16[code], hl_f32_bits(hl_f16_to_f32_soft((hl_f16)code)));
    assert_int_equal(bf16[code], hl_f32_bits(hl_bf16_to_f32_soft((hl_bf16)code)));
  }
}

/* fp6, fp4 and e8m0: every code decodes as format.c's decoder says; their
 * encodings are the generic rounding's (stochastic ones with word first + i) */
static void test_ocp_mx_formats(void **state) {
  (void)state;
  const hl_backend *cpu = hl_backend_for(HL_DEVICE_CPU);
  static const hl_dtype mx[] = {HL_E2M3, HL_E3M2, HL_E2M1, HL_E8M0};
  enum { N = (1 << 16) + 3 };
  static uint8_t codes[N];
  uint32_t dec[256];
  for (size_t k = 0; k < sizeof mx / sizeof mx[0]; k++) {
    const uint32_t count = 1u << hl_format_code_width(mx[k]);
    cpu->convert->decode_range(mx[k], 0, count, dec);
    for (uint32_t c = 0; c < count; c++) {
      const float want = (float)hl_format_decode(mx[k], c);
      if (want != want) assert_true((dec[c] & 0x7fffffffu) > 0x7f800000u); /* e8m0's 0xff */
      else assert_int_equal(dec[c], hl_f32_bits(want));
    }
    const hl_round_spec specs[] = {hl_round_nearest(mx[k]),
                                   hl_round_spec_make(mx[k], HL_ROUNDING_TOWARD_NEGATIVE, HL_OVERFLOW_SATURATE, true),
                                   hl_round_stochastic(mx[k], 8, 5, 6)};
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
      const uint32_t first = 0x3e000000u; /* 0.125 and up */
      cpu->convert->encode_range(&specs[s], first, N, codes);
      for (uint32_t i = 0; i < N; i++) {
        const uint32_t random = specs[s].rounding == HL_ROUNDING_STOCHASTIC ? hl_philox_u32(5, 6, first + i) : 0u;
        assert_int_equal(codes[i], hl_round_bits_generic(&specs[s], hl_f32_from_bits(first + i), random));
      }
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode_matches_half_h),
      cmocka_unit_test(test_decode_matches_half_h),
      cmocka_unit_test(test_ocp_mx_formats),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
