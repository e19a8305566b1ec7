/* gemm.h — matrix products, the one GEMM entry point every part of halflab
 * uses (the benchmarks, the tensor ops of the AMP core, the training runs).
 *
 *   C[i] = alpha * op(A[i]) * op(B[i]) + beta * C[i],   i < batch
 *
 * Row-major throughout: A is m x k after op(), B is k x n, C is m x n; lda,
 * ldb, ldc are row strides in elements of the stored (untransposed) matrix.
 * Operand types are storage types; `compute` is the accumulation type, as
 * cuBLAS's cublasComputeType_t names it.
 *
 * CPU backend (OpenBLAS): fp32 and fp64 directly; bf16 A and B through
 * oneDNN's matmul on the CPU's bf16 units where it is built in and the CPU has
 * them (kernels/cpu/onednn_gemm.h); fp16, and bf16 elsewhere, the way a CPU
 * without matrix units does them: widen to fp32, sgemm, round the result once.
 * CUDA backend: cublasGemmEx / cublasGemmStridedBatchedEx, and cuBLASLt for
 * fp8. `supports` says, in words, why a combination cannot run here;
 * `describe` what runs it.
 *
 * On both backends: batch < 1 counts as 1; m == 0 or n == 0 touches
 * nothing; k == 0 gives C = beta C; beta == 0 never reads C (it may hold
 * NaN). How close a correct result lies to the exact product:
 * hl_gemm_error_bound() below (tests/gemm check both backends against it).
 */
#ifndef HL_GEMM_H
#define HL_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/dtype.h"
#include "formats/half.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Operand and output types are hl_dtype (formats/dtype.h): f64, f32, f16,
 * bf16, and e4m3 (OCP fp8, inputs only). */
typedef enum {
  HL_COMPUTE_F64 = 0,
  HL_COMPUTE_F32,           /* fp32 accumulate (SIMT for fp32 inputs, tensor cores for half inputs) */
  HL_COMPUTE_F32_FAST_TF32, /* fp32 in/out, products on tensor cores in tf32 */
  HL_COMPUTE_F16,           /* fp16 accumulate (and fp16 alpha/beta on the GPU) */
} hl_gemm_compute;

/* Block scales along k for narrow operands (kernels/gemm_block_scaled.h
 * packs them): none (the per-tensor a_scale / b_scale), OCP MXFP8 (e4m3
 * elements, one E8M0 scale per 32: cuBLASLt's VEC32_UE8M0) or NVIDIA NVFP4
 * (e2m1 elements packed two per byte, one E4M3 scale per 16: VEC16_UE4M3;
 * its per-tensor scales go into alpha). */
typedef enum {
  HL_GEMM_SCALE_PER_TENSOR = 0,
  HL_GEMM_SCALE_MX_E8M0_32,
  HL_GEMM_SCALE_NVFP4_E4M3_16,
} hl_gemm_block_scaling;

typedef struct {
  bool trans_a, trans_b;
  int64_t m, n, k;
  int64_t batch;               /* >= 1 */
  hl_dtype a_type, b_type, c_type;
  hl_gemm_compute compute;
  float alpha, beta;
  const void *a;
  int64_t lda, stride_a;       /* stride_*: elements between batch entries */
  const void *b;
  int64_t ldb, stride_b;
  void *c;
  int64_t ldc, stride_c;
  /* fp8 only: per-tensor scales (dequantised product = a_scale * b_scale * A*B) */
  float a_scale, b_scale;
  /* fp8 only (false: off): the GPU's fast accumulation, cuBLASLt's
   * CUBLASLT_MATMUL_DESC_FAST_ACCUM: partial sums stay in the tensor cores'
   * narrow accumulator (kernels/narrow_accumulator.h models it) instead of
   * being promoted to fp32. The CPU ignores it. */
  bool fp8_fast_accum;
  /* Optional (HL_GEMM_SCALE_PER_TENSOR: none): block-scaled A and B, TN
   * layout only (A m x k, B stored n x k), a_type == b_type (e4m3 for MX,
   * e2m1 for NVFP4), fp32, fp16 or bf16 out; a/b_block_scales are device
   * memory in cuBLASLt's tiled layout (hl_gemm_block_scales_tile). The GPU
   * runs them from sm_100 on; the CPU refuses them. */
  hl_gemm_block_scaling block_scaling;
  const void *a_block_scales, *b_block_scales;
  /* Optional (NULL: none): n values of bias_type, one per column of C, added
   * to every row of every entry before C is rounded to its type:
   * C = alpha op(A) op(B) + bias. Only with beta == 0, and only where the
   * backend's row_bias says it takes one. */
  const void *bias;
  hl_dtype bias_type;
  /* Optional (<= 1: none): batch_outer groups of `batch` entries each,
   * entry (i, j) of A at a + i * outer_stride_a + j * stride_a (elements;
   * B and C alike): a 4-D product [B0, B1, m, k] whose two batch dims do
   * not merge into one stride (attention's heads, sliced out of one
   * projection), run as one call instead of B0. Not with a bias or k == 0,
   * and only where the backend's outer_batch says it takes one. */
  int64_t batch_outer;
  int64_t outer_stride_a, outer_stride_b, outer_stride_c;
  /* Optional promise (false: none): A's stored matrix (pointer, type, rows,
   * columns, leading dimension) may be the one of this thread's previous
   * call, and then its data is unchanged since that call, so a backend may
   * reuse what it made of it (the CPU's fp32 copy of a half A). The core
   * gives it where it knows: a linear's backward, whose two products both
   * read the output's gradient. A false promise gives a wrong product. */
  bool a_as_before;
} hl_gemm_desc;

struct hl_gemm_kernels {
  /* Can this backend run d? If not, why (one line, for --list and errors). */
  bool (*supports)(const hl_gemm_desc *d, char *why, size_t len);
  /* Runs d on the backend's stream/threads; asynchronous on the GPU. The
   * caller has checked supports(). */
  void (*gemm)(const hl_gemm_desc *d);
  /* What gemm() runs for a supported d, in words without commas (the
   * benchmarks' implementation column): the library, its call and mode. */
  void (*describe)(const hl_gemm_desc *d, char *out, size_t len);
  /* gemm() takes a row bias (d->bias). Where it does not, the caller writes
   * the bias into C and runs the product with beta = 1. */
  bool row_bias;
  /* gemm() takes batch_outer > 1. Where it does not, the caller runs the
   * outer groups one call each. */
  bool outer_batch;
};

static inline const char *hl_gemm_compute_name(hl_gemm_compute c) {
  static const char *names[] = {"f64", "f32", "tf32", "f16"};
  return (unsigned)c <= HL_COMPUTE_F16 ? names[c] : "?";
}

/* Element i of a host array of type t, exactly as double: for filling
 * operands and checking results on the host. */
static inline double hl_gemm_load(const void *p, hl_dtype t, int64_t i) {
  switch (t) {
    case HL_F64: return ((const double *)p)[i];
    case HL_F32: return ((const float *)p)[i];
    case HL_F16: return hl_f16_to_f32(((const uint16_t *)p)[i]);
    case HL_BF16: return hl_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return hl_fp8_to_f32(((const uint8_t *)p)[i], HL_FP8_E4M3);
  }
}

/* Stores v at element i: f64 as is, the others rounded from (float)v
 * (e4m3 saturating at +-448). */
static inline void hl_gemm_store(void *p, hl_dtype t, int64_t i, double v) {
  switch (t) {
    case HL_F64: ((double *)p)[i] = v; break;
    case HL_F32: ((float *)p)[i] = (float)v; break;
    case HL_F16: ((uint16_t *)p)[i] = hl_f32_to_f16((float)v); break;
    case HL_BF16: ((uint16_t *)p)[i] = hl_f32_to_bf16((float)v); break;
    default: ((uint8_t *)p)[i] = hl_f32_to_fp8((float)v, HL_FP8_E4M3, 1); break;
  }
}

/* How far a correct result may lie from the exact product, entry by entry:
 *
 *   |c - exact| <= out * |exact| + term * (sum_p |alpha a_ip b_pj| + |beta c_in|) + abs
 *
 * out: one rounding to the output type (abs: half its subnormal spacing, for
 * results too small for the relative bound). term: rounding of the inputs inside
 * the GEMM (tf32: each input to 10 bits, so 2^-10 per product) plus the
 * accumulation, u_acc x g. For round-to-nearest accumulation with random
 * signs the normwise error stays near u_acc whatever k (the partial sums
 * random-walk), so g = 16 leaves a wide margin; tensor cores truncate while
 * they align addends (Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of
 * NVIDIA tensor cores", 2021), a bias that grows like sqrt(k), so there
 * g = max(16, 4 sqrt(k)); Hopper's fp8 tensor cores keep about 14 bits in
 * the accumulator between promotions to fp32 (DeepSeek-V3 technical report,
 * 2024), so u_acc = 2^-14 there. These are validation bounds for data of
 * mixed signs (benchmarks, tests), not worst-case bounds. */
typedef struct {
  double out, term, abs;
} hl_gemm_bound;

static inline hl_gemm_bound hl_gemm_error_bound(const hl_gemm_desc *d, bool tensor_cores) {
  hl_gemm_bound b;
  b.out = d->c_type == HL_F16 ? 0x1p-11 : d->c_type == HL_BF16 ? 0x1p-8
        : d->c_type == HL_F32 ? 0x1p-24 : 0x1p-53;
  b.abs = d->c_type == HL_F16 ? 0x1p-25 : d->c_type == HL_BF16 ? 0x1p-134
        : d->c_type == HL_F32 ? 0x1p-150 : 0x1p-1074; /* fp64: its smallest subnormal (half of it is not a double) */
  double u_in = d->compute == HL_COMPUTE_F32_FAST_TF32 ? 0x1p-10 : 0.0;
  double u_acc = d->compute == HL_COMPUTE_F16 ? 0x1p-11 : d->compute == HL_COMPUTE_F64 ? 0x1p-53 : 0x1p-24;
  if (tensor_cores && d->a_type == HL_E4M3) u_acc = 0x1p-14;
  double g = 16.0;
  if (tensor_cores) {
    /* 4 sqrt(k) without <math.h>: Newton's iteration from above */
    double k = d->k > 1 ? (double)d->k : 1.0, r = k;
    for (int i = 0; i < 64 && r * r > k * (1.0 + 1e-12); i++) r = 0.5 * (r + k / r);
    if (4.0 * r > g) g = 4.0 * r;
  }
  b.term = u_in + u_acc * g;
  return b;
}

#ifdef __cplusplus
}
#endif

#endif
