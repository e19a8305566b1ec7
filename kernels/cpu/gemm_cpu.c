/* gemm_cpu.c — GEMM on the CPU through OpenBLAS.
 *
 * fp32 and fp64 go straight to sgemm/dgemm. fp16 and bf16 operands are what
 * a CPU without half-precision matrix units actually does with them: widen
 * to fp32 (exact), sgemm (fp32 accumulation), round the result to the output
 * type once. The widening is O(mk + kn) against the product's O(mnk). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp/half.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/gemm.h"

static bool cpu_gemm_supports(const hl_gemm_desc *d, char *why, size_t len) {
  const char *no = NULL;
  if (d->compute == HL_COMPUTE_F32_FAST_TF32)
    no = "tf32 is a tensor-core mode; this CPU backend has no tf32 arithmetic";
  else if (d->compute == HL_COMPUTE_F16)
    no = "fp16 accumulation is a GPU mode; the CPU backend accumulates half inputs in fp32";
  else if (d->a_type == HL_GEMM_E4M3 || d->b_type == HL_GEMM_E4M3 || d->c_type == HL_GEMM_E4M3)
    no = "fp8 GEMM needs tensor cores of sm_89 or newer";
  else if (d->compute == HL_COMPUTE_F64 &&
           (d->a_type != HL_GEMM_F64 || d->b_type != HL_GEMM_F64 || d->c_type != HL_GEMM_F64))
    no = "fp64 compute needs fp64 operands";
  else if (d->compute != HL_COMPUTE_F64 &&
           (d->a_type == HL_GEMM_F64 || d->b_type == HL_GEMM_F64 || d->c_type == HL_GEMM_F64))
    no = "fp64 operands need fp64 compute";
  if (no && why && len) {
    strncpy(why, no, len - 1);
    why[len - 1] = '\0';
  }
  return no == NULL;
}

/* rows x cols (row stride ld) of a stored operand, widened to a packed fp32 matrix */
static float *widen(const void *src, hl_gemm_type t, int64_t rows, int64_t cols, int64_t ld) {
  float *dst = malloc(sizeof(float) * (size_t)(rows * cols));
  if (!dst) return NULL;
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; r++) {
    const uint16_t *s = (const uint16_t *)src + r * ld;
    float *o = dst + r * cols;
    if (t == HL_GEMM_F16)
      for (int64_t c = 0; c < cols; c++) o[c] = hl_f16_to_f32(s[c]);
    else
      for (int64_t c = 0; c < cols; c++) o[c] = hl_bf16_to_f32(s[c]);
  }
  return dst;
}

static void narrow(const float *src, void *dst, hl_gemm_type t, int64_t rows, int64_t cols, int64_t ld) {
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (int64_t r = 0; r < rows; r++) {
    uint16_t *o = (uint16_t *)dst + r * ld;
    const float *s = src + r * cols;
    if (t == HL_GEMM_F16)
      for (int64_t c = 0; c < cols; c++) o[c] = hl_f32_to_f16(s[c]);
    else
      for (int64_t c = 0; c < cols; c++) o[c] = hl_f32_to_bf16(s[c]);
  }
}

static void oom(void) {
  fprintf(stderr, "halflab: out of host memory for a GEMM's fp32 working copies (%s:%d)\n", __FILE__, __LINE__);
  exit(1);
}

static void cpu_gemm(const hl_gemm_desc *d) {
  const CBLAS_TRANSPOSE ta = d->trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = d->trans_b ? CblasTrans : CblasNoTrans;
  const int64_t batch = d->batch > 0 ? d->batch : 1;
  const int64_t a_rows = d->trans_a ? d->k : d->m, a_cols = d->trans_a ? d->m : d->k;
  const int64_t b_rows = d->trans_b ? d->n : d->k, b_cols = d->trans_b ? d->k : d->n;
  for (int64_t i = 0; i < batch; i++) {
    if (d->compute == HL_COMPUTE_F64) {
      cblas_dgemm(CblasRowMajor, ta, tb, (int)d->m, (int)d->n, (int)d->k, d->alpha,
                  (const double *)d->a + i * d->stride_a, (int)d->lda, (const double *)d->b + i * d->stride_b,
                  (int)d->ldb, d->beta, (double *)d->c + i * d->stride_c, (int)d->ldc);
      continue;
    }
    /* fp32 views of the operands: the data itself, or a widened copy */
    const float *a = (const float *)d->a + i * d->stride_a;
    const float *b = (const float *)d->b + i * d->stride_b;
    float *wa = NULL, *wb = NULL, *wc = NULL;
    int lda = (int)d->lda, ldb = (int)d->ldb, ldc = (int)d->ldc;
    if (d->a_type != HL_GEMM_F32) {
      a = wa = widen((const uint16_t *)d->a + i * d->stride_a, d->a_type, a_rows, a_cols, d->lda);
      if (!wa) oom();
      lda = (int)a_cols;
    }
    if (d->b_type != HL_GEMM_F32) {
      b = wb = widen((const uint16_t *)d->b + i * d->stride_b, d->b_type, b_rows, b_cols, d->ldb);
      if (!wb) oom();
      ldb = (int)b_cols;
    }
    float *c = (float *)d->c + i * d->stride_c;
    if (d->c_type != HL_GEMM_F32) {
      void *cdst = (uint16_t *)d->c + i * d->stride_c;
      if (d->beta != 0.0f) wc = widen(cdst, d->c_type, d->m, d->n, d->ldc);
      else wc = malloc(sizeof(float) * (size_t)(d->m * d->n));
      if (!wc) oom();
      c = wc;
      ldc = (int)d->n;
    }
    cblas_sgemm(CblasRowMajor, ta, tb, (int)d->m, (int)d->n, (int)d->k, d->alpha, a, lda, b, ldb, d->beta, c, ldc);
    if (wc) narrow(wc, (uint16_t *)d->c + i * d->stride_c, d->c_type, d->m, d->n, d->ldc);
    free(wa);
    free(wb);
    free(wc);
  }
}

const struct hl_gemm_kernels hl_cpu_gemm_kernels = {
    .supports = cpu_gemm_supports,
    .gemm = cpu_gemm,
};
