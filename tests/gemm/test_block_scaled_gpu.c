/* test_block_scaled_gpu.c — suite gpu: cuBLASLt's block-scaled MXFP8
 * (VEC32_UE8M0) and NVFP4 (VEC16_UE4M3) GEMMs on codes and scales quantized
 * on the host by the CPU's kernels/quantize.h and packed by
 * kernels/gemm_block_scaled.h, against their CPU twin: the same codes
 * dequantized and multiplied in fp64 (what gemm --accuracy's emulated rows
 * sum). Skips without a GPU (exit 77), and the comparison below sm_100.
 *
 * Bound (stated, not tuned), normwise over the 128 x 128 outputs, data
 * uniform in [0, 1) so that sum |ab| is the product itself: the products of
 * the dequantized values are exact in the tensor cores, so only the
 * accumulation differs: at most hl_gemm_error_bound's fp8 term, 2^-14 times
 * max(16, 4 sqrt k), plus one fp32 output rounding. A wrong scale layout or
 * nibble order misplaces whole blocks: errors of order 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/device.h"
#include "formats/philox.h"
#include "kernels/gemm.h"
#include "kernels/gemm_block_scaled.h"
#include "kernels/quantize.h"
#include "tests/support/hltest.h"

static const hl_backend *gpu;

enum { M = 128, N = 128, K = 1024 };

typedef struct {
  void *elements, *scales; /* device */
  double *values;          /* host: the dequantized operand, rows x K */
  float tensor_scale;
} operand;

static operand prepared(const hl_quant_spec *spec, int64_t rows, uint64_t stream) {
  const size_t n = (size_t)(rows * K), blocks = K / spec->block_cols;
  float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *block_scales = malloc(sizeof(float) * rows * blocks);
  uint8_t *codes = malloc(n), *scale_codes = malloc(rows * blocks), *packed = malloc(n);
  const size_t scale_bytes = hl_gemm_block_scales_bytes(rows, (int64_t)blocks);
  uint8_t *tiled = malloc(scale_bytes);
  operand o = {NULL, NULL, malloc(sizeof(double) * n), 1.0f};
  assert_true(x && y && block_scales && codes && scale_codes && packed && tiled && o.values);
  for (size_t i = 0; i < n; i++) x[i] = hl_u32_to_unit_float(hl_philox_u32(11, stream, i));
  hl_quantized q = {codes, block_scales, scale_codes, 1.0f, 1.0f};
  hl_backend_cpu.quantize->quantize(spec, x, (size_t)rows, K, &q, NULL);
  hl_backend_cpu.quantize->dequantize(spec, &q, (size_t)rows, K, y);
  for (size_t i = 0; i < n; i++) o.values[i] = y[i];
  o.tensor_scale = q.tensor_scale;
  const bool fp4 = spec->element == HL_E2M1;
  if (fp4) hl_gemm_pack_e2m1(codes, (int64_t)n, packed);
  else memcpy(packed, codes, n);
  hl_gemm_block_scales_tile(scale_codes, rows, (int64_t)blocks, tiled);
  const size_t element_bytes = fp4 ? n / 2 : n;
  o.elements = gpu->alloc(element_bytes), o.scales = gpu->alloc(scale_bytes);
  assert_true(o.elements && o.scales);
  gpu->copy_from_host(o.elements, packed, element_bytes);
  gpu->copy_from_host(o.scales, tiled, scale_bytes);
  free(x), free(y), free(block_scales), free(codes), free(scale_codes), free(packed), free(tiled);
  return o;
}

static void check(hl_dtype element, hl_scale_rule rule, hl_gemm_block_scaling scaling, const char *name) {
  hl_gemm_desc g = {.trans_b = true, .m = M, .n = N, .k = K, .batch = 1, .a_type = element, .b_type = element,
                    .c_type = HL_F32, .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 0, .lda = K, .ldb = K, .ldc = N,
                    .block_scaling = scaling};
  char why[256] = "";
  if (!gpu->gemm->supports(&g, why, sizeof why)) {
    assert_non_null(strstr(why, "sm_100"));
    printf("%s through cuBLASLt: needs sm_100 (%s)\n", name, why);
    return;
  }
  const hl_quant_spec spec = hl_quant_spec_make(element, rule);
  operand a = prepared(&spec, M, 1), b = prepared(&spec, N, 2);
  float *c = malloc(sizeof(float) * M * N);
  void *dc = gpu->alloc(sizeof(float) * M * N);
  assert_true(c && dc);
  g.alpha = a.tensor_scale * b.tensor_scale;
  g.a = a.elements, g.b = b.elements, g.c = dc, g.a_block_scales = a.scales, g.b_block_scales = b.scales;
  gpu->gemm->gemm(&g);
  gpu->synchronize();
  gpu->copy_to_host(c, dc, sizeof(float) * M * N);
  double num = 0, den = 0;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double e = 0;
      for (int p = 0; p < K; p++) e += a.values[i * K + p] * b.values[j * K + p];
      num += (c[i * N + j] - e) * (c[i * N + j] - e), den += e * e;
    }
  const double err = sqrt(num / den), bound = 0x1p-14 * fmax(16.0, 4.0 * sqrt((double)K)) + 0x1p-24;
  printf("%s: error against the CPU twin %.3g (bound %.3g)\n", name, err, bound);
  assert_true(err <= bound);
  gpu->free(a.elements), gpu->free(a.scales), gpu->free(b.elements), gpu->free(b.scales), gpu->free(dc);
  free(a.values), free(b.values), free(c);
}

static void test_mxfp8(void **state) {
  (void)state;
  check(HL_E4M3, HL_SCALE_MX_RCEIL, HL_GEMM_SCALE_MX_E8M0_32, "MXFP8");
}

static void test_nvfp4(void **state) {
  (void)state;
  check(HL_E2M1, HL_SCALE_NVFP4, HL_GEMM_SCALE_NVFP4_E4M3_16, "NVFP4");
}

int main(void) {
  hl_require_gpu();
  gpu = hl_backend_for(HL_DEVICE_CUDA);
  if (!gpu || !gpu->gemm) {
    printf("the CUDA backend has no GEMM table\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mxfp8),
      cmocka_unit_test(test_nvfp4),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
