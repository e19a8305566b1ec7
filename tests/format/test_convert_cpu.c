/* test_convert_cpu.c — suite unit: the CPU twin of kernels/convert.h is the
 * portable half.h code (what the gpu suite compares the device against). */
#include "core/base/device.h"
#include "formats/half.h"
#include "kernels/convert.h"
#include "tests/support/hltest.h"

static void test_encode_matches_half_h(void **state) {
  (void)state;
  const hl_backend *cpu = hl_backend_for(HL_DEVICE_CPU);
  enum { N = 1 << 16 };
  static uint16_t h[N];
  static uint8_t e4[N];
  static uint32_t t[N];
  const uint32_t first = 0x3f000000u; /* 0.5 and up */
  cpu->convert->encode_range(HL_CONV_F16, first, N, h);
  cpu->convert->encode_range(HL_CONV_E4M3_SAT, first, N, e4);
  cpu->convert->encode_range(HL_CONV_TF32_RNA, first, N, t);
  for (uint32_t i = 0; i < N; i++) {
    float x = hl_f32_from_bits(first + i);
    assert_int_equal(h[i], hl_f32_to_f16_soft(x));
    assert_int_equal(e4[i], hl_f32_to_fp8_soft(x, HL_FP8_E4M3, 1));
    assert_int_equal(t[i], hl_f32_bits(hl_f32_round_tf32_rna(x)));
  }
  uint32_t dec[256];
  cpu->convert->decode_range(HL_CONV_E5M2, 0, 256, dec);
  assert_int_equal(dec[0x7b], hl_f32_bits(57344.0f));
  uint16_t a[2] = {0x3c00, 0x7800}, b[2] = {0x068e, 0x7800}, out[2];
  cpu->convert->binop(HL_CONV_F16, '+', a, b, out, 2);
  assert_int_equal(out[0], 0x3c00); /* 1 + 0.0001 */
  assert_int_equal(out[1], 0x7c00); /* 32768 + 32768 */
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_encode_matches_half_h)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
