/* gemm_cpu.c — GEMM on the CPU through OpenBLAS (opened by kernels/cpu/blas.c)
 * and, for bf16, oneDNN.
 *
 * fp32 and fp64 go straight to sgemm/dgemm. bf16 A and B go to oneDNN's
 * matmul on the CPU's bf16 units when it takes them (onednn_gemm.h says
 * when). fp16 operands, and bf16 ones oneDNN does not take, get what a CPU
 * without half-precision matrix units actually does with them: widen to
 * fp32 (exact), sgemm (fp32 accumulation), round the result to the output
 * type once (RNE). The widening is O(mk + kn) against the product's O(mnk);
 * it runs on the CPU's conversion instructions (kernels/cpu/half_arrays.h) into fp32
 * working copies that each calling thread keeps between calls, so a call
 * pays neither malloc nor page faults for them. Those copies stay allocated
 * (at the size of the largest operands seen) until the thread exits.
 *
 * The conversions run in the calling thread, deliberately not in an OpenMP
 * region: this OpenBLAS runs its own pthreads, which spin a while after each
 * call, and OpenMP's workers spin after each region; interleaved on a
 * machine with few cores they steal each other's time slices. Measured on 2
 * cores at n = 1024: fp16 path 82% of sgemm's GFLOP/s with serial
 * conversions, 48-64% with OpenMP ones (bench/gemm.c reports the ratio).
 *
 * Semantics the callers rely on, on either path (tests/gemm/test_gemm_cpu.c,
 * test_gemm_onednn.c):
 *   - row-major, op() per trans flag, lda/ldb/ldc row strides of the stored
 *     matrices, stride_* between batch entries (batch < 1 counts as 1);
 *   - beta != 0 reads C (a half C is widened first); beta == 0 ignores C;
 *   - m == 0 or n == 0 touches nothing; k == 0 gives C = beta C (zeros for
 *     beta == 0, C not read), whatever lda and ldb say;
 *   - operand types may differ (e.g. fp16 A and B, fp32 C).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/fatal.h"
#include "formats/half.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/half_arrays.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/gemm.h"

static bool cpu_gemm_supports(const hl_gemm_desc *d, char *why, size_t len) {
  const char *no = NULL;
  if (d->compute == HL_COMPUTE_F32_FAST_TF32)
    no = "tf32 is a tensor-core mode; this CPU backend has no tf32 arithmetic";
  else if (d->compute == HL_COMPUTE_F16)
    no = "fp16 accumulation is a GPU mode; the CPU backend accumulates half inputs in fp32";
  else if (d->a_type == HL_E4M3 || d->b_type == HL_E4M3 || d->c_type == HL_E4M3)
    no = "fp8 GEMM needs tensor cores of sm_89 or newer";
  else if (d->compute == HL_COMPUTE_F64 &&
           (d->a_type != HL_F64 || d->b_type != HL_F64 || d->c_type != HL_F64))
    no = "fp64 compute needs fp64 operands";
  else if (d->compute != HL_COMPUTE_F64 &&
           (d->a_type == HL_F64 || d->b_type == HL_F64 || d->c_type == HL_F64))
    no = "fp64 operands need fp64 compute";
  if (no && why && len) {
    strncpy(why, no, len - 1);
    why[len - 1] = '\0';
  }
  return no == NULL;
}

/* ---- per-thread fp32 working copies (A, B, C), grown as needed */
typedef struct {
  float *p[3];
  size_t cap[3];
} workspace;

static _Thread_local workspace ws_;
static pthread_key_t ws_key_;
static pthread_once_t ws_once_ = PTHREAD_ONCE_INIT;

static void ws_release(void *w) {
  workspace *ws = w;
  for (int i = 0; i < 3; i++) free(ws->p[i]), ws->p[i] = NULL, ws->cap[i] = 0;
}
static void ws_make_key(void) { pthread_key_create(&ws_key_, ws_release); }

static float *ws_get(int slot, size_t elems) {
  if (ws_.cap[slot] < elems) {
    pthread_once(&ws_once_, ws_make_key);
    pthread_setspecific(ws_key_, &ws_); /* frees the copies when this thread exits */
    free(ws_.p[slot]);
    ws_.p[slot] = HL_CHECK_ALLOC(malloc(sizeof(float) * elems), sizeof(float) * elems, "a GEMM's fp32 working copies");
    ws_.cap[slot] = elems;
  }
  return ws_.p[slot];
}

/* rows x cols (row stride ld) of a stored half operand -> packed fp32 */
static void widen(const uint16_t *src, hl_dtype t, int64_t rows, int64_t cols, int64_t ld, float *dst) {
  for (int64_t r = 0; r < rows; r++) {
    if (t == HL_F16) hl_cpu_widen_f16(src + r * ld, dst + r * cols, (size_t)cols);
    else hl_cpu_widen_bf16(src + r * ld, dst + r * cols, (size_t)cols);
  }
}

static void narrow(const float *src, hl_dtype t, int64_t rows, int64_t cols, int64_t ld, uint16_t *dst) {
  for (int64_t r = 0; r < rows; r++) {
    if (t == HL_F16) hl_cpu_narrow_f16(src + r * cols, dst + r * ld, (size_t)cols);
    else hl_cpu_narrow_bf16(src + r * cols, dst + r * ld, (size_t)cols);
  }
}

/* k == 0: C = beta C without BLAS, which would refuse the leading
 * dimensions an empty operand may carry (lda = 0). beta == 0 writes zeros
 * without reading C, as BLAS does (C may hold NaN). */
static void scale_only(const hl_gemm_desc *d, int64_t batch) {
  for (int64_t i = 0; i < batch; i++)
    for (int64_t r = 0; r < d->m; r++)
      for (int64_t col = 0; col < d->n; col++) {
        const int64_t at = i * d->stride_c + r * d->ldc + col;
        switch (d->c_type) {
          case HL_F64: {
            double *c = (double *)d->c + at;
            *c = d->beta == 0.0f ? 0.0 : (double)d->beta * *c;
            break;
          }
          case HL_F32: {
            float *c = (float *)d->c + at;
            *c = d->beta == 0.0f ? 0.0f : d->beta * *c;
            break;
          }
          default: {
            uint16_t *c = (uint16_t *)d->c + at;
            const bool f16 = d->c_type == HL_F16;
            const float v = d->beta == 0.0f ? 0.0f : d->beta * (f16 ? hl_f16_to_f32(*c) : hl_bf16_to_f32(*c));
            *c = f16 ? hl_f32_to_f16(v) : hl_f32_to_bf16(v);
            break;
          }
        }
      }
}

void hl_cpu_gemm_blas(const hl_gemm_desc *d) {
  if (d->m <= 0 || d->n <= 0) return;
  if (d->k <= 0) {
    scale_only(d, d->batch > 0 ? d->batch : 1);
    return;
  }
  const CBLAS_TRANSPOSE ta = d->trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = d->trans_b ? CblasTrans : CblasNoTrans;
  const int64_t batch = d->batch > 0 ? d->batch : 1;
  const int64_t a_rows = d->trans_a ? d->k : d->m, a_cols = d->trans_a ? d->m : d->k;
  const int64_t b_rows = d->trans_b ? d->n : d->k, b_cols = d->trans_b ? d->k : d->n;
  for (int64_t i = 0; i < batch; i++) {
    if (d->compute == HL_COMPUTE_F64) {
      hl_blas()->dgemm(CblasRowMajor, ta, tb, (int)d->m, (int)d->n, (int)d->k, d->alpha,
                  (const double *)d->a + i * d->stride_a, (int)d->lda, (const double *)d->b + i * d->stride_b,
                  (int)d->ldb, d->beta, (double *)d->c + i * d->stride_c, (int)d->ldc);
      continue;
    }
    /* fp32 views of the operands: the data itself, or a widened copy */
    const float *a = (const float *)d->a + i * d->stride_a;
    const float *b = (const float *)d->b + i * d->stride_b;
    float *c = (float *)d->c + i * d->stride_c;
    int lda = (int)d->lda, ldb = (int)d->ldb, ldc = (int)d->ldc;
    if (d->a_type != HL_F32) {
      float *wa = ws_get(0, (size_t)(a_rows * a_cols));
      widen((const uint16_t *)d->a + i * d->stride_a, d->a_type, a_rows, a_cols, d->lda, wa);
      a = wa;
      lda = (int)(a_cols > 0 ? a_cols : 1);
    }
    if (d->b_type != HL_F32) {
      float *wb = ws_get(1, (size_t)(b_rows * b_cols));
      widen((const uint16_t *)d->b + i * d->stride_b, d->b_type, b_rows, b_cols, d->ldb, wb);
      b = wb;
      ldb = (int)(b_cols > 0 ? b_cols : 1);
    }
    uint16_t *c_half = NULL;
    if (d->c_type != HL_F32) {
      c_half = (uint16_t *)d->c + i * d->stride_c;
      c = ws_get(2, (size_t)(d->m * d->n));
      /* beta == 0: sgemm does not read C, so neither do we */
      if (d->beta != 0.0f) widen(c_half, d->c_type, d->m, d->n, d->ldc, c);
      ldc = (int)d->n;
    }
    hl_blas()->sgemm(CblasRowMajor, ta, tb, (int)d->m, (int)d->n, (int)d->k, d->alpha, a, lda, b, ldb, d->beta, c, ldc);
    if (c_half) narrow(c, d->c_type, d->m, d->n, d->ldc, c_half);
  }
}

static void cpu_gemm(const hl_gemm_desc *d) {
  if (d->m > 0 && d->n > 0 && d->k > 0 && hl_onednn_gemm(d)) return;
  hl_cpu_gemm_blas(d);
}

static void cpu_gemm_describe(const hl_gemm_desc *d, char *out, size_t len) {
  const bool wide = d->a_type != HL_F32 || d->b_type != HL_F32 || d->c_type != HL_F32;
  if (d->compute == HL_COMPUTE_F64) {
    snprintf(out, len, "openblas dgemm through hl_gemm");
  } else if (d->m > 0 && d->n > 0 && d->k <= 0) {
    snprintf(out, len, "no product (k = 0): C = beta C in plain C");
  } else if (!wide) {
    snprintf(out, len, "openblas sgemm through hl_gemm");
  } else {
    char why[192];
    const bool f16 = d->a_type == HL_F16 || d->b_type == HL_F16;
    if (f16) snprintf(why, sizeof why, "oneDNN 2.6 has no CPU fp16 matmul");
    else if (hl_onednn_gemm_describe(d, out, len)) return;
    else snprintf(why, sizeof why, "%s", out);
    const char *narrow = f16 && (d->a_type == HL_BF16 || d->b_type == HL_BF16) ? "f16 or bf16" : f16 ? "f16" : "bf16";
    char output[48];
    if (d->c_type == HL_F32) snprintf(output, sizeof output, "f32 output");
    else snprintf(output, sizeof output, "output rounded to %s once", hl_dtype_name(d->c_type));
    snprintf(out, len, "openblas sgemm on fp32-widened inputs; %s (no %s arithmetic: %s)", output, narrow, why);
  }
}

const struct hl_gemm_kernels hl_cpu_gemm_kernels = {
    .supports = cpu_gemm_supports,
    .gemm = cpu_gemm,
    .describe = cpu_gemm_describe,
};
