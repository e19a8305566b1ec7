/* test_convert_cpu.c — suite unit: the CPU twin of kernels/convert.h (what
 * the gpu suite compares the device against) gives half.h's portable
 * results: fp16 and bf16 through the CPU's conversion path, the other
 * formats through half.h itself. */
#include "core/base/device.h"
#include "formats/half.h"
#include "kernels/convert.h"
#include "tests/support/hltest.h"

static void test_encode_matches_half_h(void **state) {
  (void)state;
  const hl_backend *cpu = hl_backend_for(HL_DEVICE_CPU);
  enum { N = (1 << 16) + 3 };
  static uint16_t h[N], b[N];
  static uint8_t e4[N];
  static uint32_t t[N];
  /* 0.5 and up; zeros and fp32 subnormals; the largest finite values, inf and NaNs */
  static const uint32_t firsts[] = {0x3f000000u, 0x00000000u, 0x7f7f8000u, 0xff7f8000u};
  for (size_t f = 0; f < sizeof firsts / sizeof firsts[0]; f++) {
    const uint32_t first = firsts[f];
    cpu->convert->encode_range(HL_CONV_F16, first, N, h);
    cpu->convert->encode_range(HL_CONV_BF16, first, N, b);
    cpu->convert->encode_range(HL_CONV_E4M3_SAT, first, N, e4);
    cpu->convert->encode_range(HL_CONV_TF32_RNA, first, N, t);
    for (uint32_t i = 0; i < N; i++) {
      float x = hl_f32_from_bits(first + i);
      assert_int_equal(h[i], hl_f32_to_f16_soft(x));
      assert_int_equal(b[i], hl_f32_to_bf16_soft(x));
      assert_int_equal(e4[i], hl_f32_to_fp8_soft(x, HL_FP8_E4M3, 1));
      assert_int_equal(t[i], hl_f32_bits(hl_f32_round_tf32_rna(x)));
    }
  }
  uint32_t dec[256];
  cpu->convert->decode_range(HL_CONV_E5M2, 0, 256, dec);
  assert_int_equal(dec[0x7b], hl_f32_bits(57344.0f));
  uint16_t a[2] = {0x3c00, 0x7800}, c[2] = {0x068e, 0x7800}, out[2];
  cpu->convert->binop(HL_CONV_F16, '+', a, c, out, 2);
  assert_int_equal(out[0], 0x3c00); /* 1 + 0.0001 */
  assert_int_equal(out[1], 0x7c00); /* 32768 + 32768 */
}

/* every fp16 and bf16 encoding, NaN payloads included */
static void test_decode_matches_half_h(void **state) {
  (void)state;
  const hl_backend *cpu = hl_backend_for(HL_DEVICE_CPU);
  enum { N = 1 << 16 };
  static uint32_t f16[N], bf16[N];
  cpu->convert->decode_range(HL_CONV_F16, 0, N, f16);
  cpu->convert->decode_range(HL_CONV_BF16, 0, N, bf16);
  for (uint32_t code = 0; code < N; code++) {
    assert_int_equal(f16[code], hl_f32_bits(hl_f16_to_f32_soft((hl_f16)code)));
    assert_int_equal(bf16[code], hl_f32_bits(hl_bf16_to_f32_soft((hl_bf16)code)));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode_matches_half_h),
      cmocka_unit_test(test_decode_matches_half_h),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
