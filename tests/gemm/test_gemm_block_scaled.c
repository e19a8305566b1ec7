/* test_gemm_block_scaled.c — suite unit: kernels/gemm_block_scaled.h, the
 * host-side packing of a block-scaled GEMM's operands for cuBLASLt: the
 * 128 x 4 tiled layout of the scales and the two-per-byte e2m1 elements. */
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm_block_scaled.h"
#include "tests/support/hltest.h"

/* Offsets worked out from the layout's rule: (r % 32) * 16 + (r / 32) * 4 + c in a 512-byte tile */
static void test_offsets_by_hand(void **state) {
  (void)state;
  assert_int_equal(hl_gemm_block_scale_offset(0, 0, 8), 0);
  assert_int_equal(hl_gemm_block_scale_offset(0, 3, 8), 3);
  assert_int_equal(hl_gemm_block_scale_offset(1, 0, 8), 16);
  assert_int_equal(hl_gemm_block_scale_offset(31, 0, 8), 31 * 16);
  assert_int_equal(hl_gemm_block_scale_offset(32, 0, 8), 4);
  assert_int_equal(hl_gemm_block_scale_offset(127, 3, 8), 31 * 16 + 3 * 4 + 3);
  assert_int_equal(hl_gemm_block_scale_offset(0, 4, 8), 512);     /* the next tile along k */
  assert_int_equal(hl_gemm_block_scale_offset(128, 0, 8), 2 * 512); /* the next row of tiles, after 2 along k */
  assert_int_equal(hl_gemm_block_scales_bytes(1, 1), 512);
  assert_int_equal(hl_gemm_block_scales_bytes(129, 5), 4 * 512);
}

/* Every scale lands on its own byte, inside the buffer: the layout is a bijection onto the padded tiles */
static void test_tiling_is_one_to_one(void **state) {
  (void)state;
  const int64_t rows = 200, blocks = 9;
  const size_t bytes = hl_gemm_block_scales_bytes(rows, blocks);
  unsigned char *seen = calloc(bytes, 1);
  assert_non_null(seen);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < blocks; c++) {
      const size_t o = hl_gemm_block_scale_offset(r, c, blocks);
      assert_true(o < bytes);
      assert_int_equal(seen[o], 0);
      seen[o] = 1;
    }
  free(seen);
  uint8_t codes[2 * 5], tiled[2 * 512]; /* 5 blocks: two tiles along k */
  assert_int_equal(hl_gemm_block_scales_bytes(2, 5), sizeof tiled);
  for (int i = 0; i < 10; i++) codes[i] = (uint8_t)(100 + i);
  hl_gemm_block_scales_tile(codes, 2, 5, tiled);
  assert_int_equal(tiled[0], 100);
  assert_int_equal(tiled[16 + 2], 107);  /* row 1, block 2 */
  assert_int_equal(tiled[512 + 16], 109); /* row 1, block 4: the second tile */
  assert_int_equal(tiled[3], 103);
  assert_int_equal(tiled[512 + 1], 0); /* row 0, block 5: padding */
}

static void test_e2m1_packing(void **state) {
  (void)state;
  const uint8_t codes[4] = {0x1, 0xf, 0x7, 0x8};
  uint8_t packed[2];
  hl_gemm_pack_e2m1(codes, 4, packed);
  assert_int_equal(packed[0], 0xf1); /* element 0 in the low nibble */
  assert_int_equal(packed[1], 0x87);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_offsets_by_hand),
      cmocka_unit_test(test_tiling_is_one_to_one),
      cmocka_unit_test(test_e2m1_packing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
