/* test_fp8_accumulation_gpu.c — suite gpu: cuBLASLt's fp8 GEMM on per-tensor
 * scaled e4m3 inputs (Transformer Engine's rule, quantized on the host by the
 * CPU's kernels/quantize.h), with and without CUBLASLT_MATMUL_DESC_FAST_ACCUM,
 * beside its CPU twins: the same codes and scales dequantized and summed in
 * fp64, and summed in kernels/narrow_accumulator.h's model of Hopper's fp8
 * accumulator. Skips without a GPU (exit 77), and the comparison on a GPU
 * without fp8 tensor cores (below sm_89).
 *
 * Bounds (stated, not tuned), normwise over the 64 x 64 outputs, data
 * uniform in [0, 1) (positive: a narrow accumulator's loss grows with k):
 *   - fast accumulation off: hl_gemm_error_bound's fp8 term (2^-14 u_acc
 *     times max(16, 4 sqrt k)) relative to sum |ab|, plus one fp32 output
 *     rounding, relative to the product (positive data: sum |ab| is the
 *     product itself): the hardware promotes to fp32 as it goes;
 *   - fast accumulation on: its error against the exact product lies within
 *     a factor 4 of the model's (the model's alignment groups and order are
 *     the published description, not the hardware's exact schedule), and is
 *     at least 10 times the error with fast accumulation off at k = 4096. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/device.h"
#include "formats/philox.h"
#include "formats/round.h"
#include "kernels/gemm.h"
#include "kernels/narrow_accumulator.h"
#include "kernels/quantize.h"
#include "tests/support/hltest.h"

static const hl_backend *gpu;

enum { M = 64, N = 64 };

/* x (rows x k, uniform in [0, 1)) quantized per tensor to e4m3 on the host: codes, the element
 * values before the scale, and the decode scale */
typedef struct {
  uint8_t *codes;
  float *element;
  float decode;
} fp8_operand;

static fp8_operand quantized(int64_t rows, int64_t k, uint64_t stream) {
  const size_t n = (size_t)(rows * k);
  float *x = malloc(sizeof(float) * n);
  fp8_operand q = {malloc(n), malloc(sizeof(float) * n), 1.0f};
  float block_scale = 0.0f;
  assert_true(x && q.codes && q.element);
  for (size_t i = 0; i < n; i++) x[i] = hl_u32_to_unit_float(hl_philox_u32(7, stream, i));
  const hl_quant_spec spec = hl_quant_spec_make(HL_E4M3, HL_SCALE_TENSOR);
  hl_quantized made = {q.codes, &block_scale, NULL, 1.0f, 1.0f};
  hl_backend_cpu.quantize->quantize(&spec, x, (size_t)rows, (size_t)k, &made, NULL);
  for (size_t i = 0; i < n; i++) q.element[i] = hl_round_decode(HL_E4M3, q.codes[i]);
  q.decode = block_scale;
  free(x);
  return q;
}

/* cuBLASLt's product of the codes, fp32 out */
static void on_gpu(const fp8_operand *a, const fp8_operand *b, int64_t k, bool fast, float *c) {
  const size_t in = (size_t)(M * k);
  void *da = gpu->alloc(in), *db = gpu->alloc(in), *dc = gpu->alloc(sizeof(float) * M * N);
  assert_true(da && db && dc);
  gpu->copy_from_host(da, a->codes, in);
  gpu->copy_from_host(db, b->codes, in);
  hl_gemm_desc g = {.trans_b = true, .m = M, .n = N, .k = k, .batch = 1, .a_type = HL_E4M3, .b_type = HL_E4M3,
                    .c_type = HL_F32, .compute = HL_COMPUTE_F32, .alpha = 1, .beta = 0, .a = da, .lda = k, .b = db,
                    .ldb = k, .c = dc, .ldc = N, .a_scale = a->decode, .b_scale = b->decode, .fp8_fast_accum = fast};
  gpu->gemm->gemm(&g);
  gpu->synchronize();
  gpu->copy_to_host(c, dc, sizeof(float) * M * N);
  gpu->free(da), gpu->free(db), gpu->free(dc);
}

static double normwise(const float *got, const double *exact) {
  double num = 0, den = 0;
  for (int i = 0; i < M * N; i++) num += (got[i] - exact[i]) * (got[i] - exact[i]), den += exact[i] * exact[i];
  return sqrt(num / den);
}

static void test_fast_accumulation_against_its_twin(void **state) {
  (void)state;
  const int64_t k = 4096;
  hl_gemm_desc probe = {.trans_b = true, .m = M, .n = N, .k = k, .batch = 1, .a_type = HL_E4M3, .b_type = HL_E4M3,
                        .c_type = HL_F32, .compute = HL_COMPUTE_F32, .lda = k, .ldb = k, .ldc = N};
  char why[256] = "";
  if (!gpu->gemm->supports(&probe, why, sizeof why)) {
    printf("cuBLASLt fp8 with and without fast accumulation: needs sm_89 (%s)\n", why);
    skip();
  }
  fp8_operand a = quantized(M, k, 1), b = quantized(N, k, 2);
  double *exact = malloc(sizeof(double) * M * N);
  float *twin = malloc(sizeof(float) * M * N), *plain = malloc(sizeof(float) * M * N),
        *fast = malloc(sizeof(float) * M * N);
  assert_true(exact && twin && plain && fast);
  const float scale = a.decode * b.decode;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double e = 0;
      for (int64_t p = 0; p < k; p++) e += (double)a.element[i * k + p] * b.element[j * k + p];
      exact[i * N + j] = e * a.decode * b.decode;
      twin[i * N + j] = hl_narrow_acc_promoted_dot(a.element + i * k, b.element + j * k, &scale, k, k, HL_NARROW_ACC_BITS);
    }
  on_gpu(&a, &b, k, false, plain);
  on_gpu(&a, &b, k, true, fast);
  const double err_plain = normwise(plain, exact), err_fast = normwise(fast, exact), err_twin = normwise(twin, exact);
  printf("k = %lld: fast accumulation off %.3g, on %.3g, the model %.3g\n", (long long)k, err_plain, err_fast,
         err_twin);
  const double bound_plain = 0x1p-14 * 4.0 * sqrt((double)k) + 0x1p-24;
  assert_true(err_plain <= bound_plain);
  assert_true(err_fast >= err_twin / 4 && err_fast <= err_twin * 4);
  assert_true(err_fast >= 10 * err_plain);
  free(a.codes), free(a.element), free(b.codes), free(b.element);
  free(exact), free(twin), free(plain), free(fast);
}

int main(void) {
  hl_require_gpu();
  gpu = hl_backend_for(HL_DEVICE_CUDA);
  if (!gpu || !gpu->gemm) {
    printf("the CUDA backend has no GEMM table\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fast_accumulation_against_its_twin),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
