/* gemm_cuda.cu — kernels/gemm.h on the GPU: cuBLAS for fp32/tf32/fp16/bf16/
 * fp64, cuBLASLt for fp8 e4m3. One cuBLAS and one cuBLASLt handle per
 * process, both on hl_cuda_stream(); every call checked (kernels/cuda/check.h).
 *
 * Row-major is cuBLAS's column-major seen transposed: C^T = op(B)^T op(A)^T,
 * so a row-major call passes B as cuBLAS's A and A as its B, with m and n
 * swapped and the same leading dimensions.
 *
 * What each combination runs (the labels halflab-bench writes):
 *   fp32 in/out, compute f32   cublasGemmEx CUBLAS_COMPUTE_32F, default math:
 *                              SIMT FFMA, never tf32 (that needs the FAST_TF32
 *                              compute type or the tf32 math mode)
 *   fp32 in/out, compute tf32  CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores)
 *   fp16/bf16 in, compute f32  CUBLAS_COMPUTE_32F on tensor cores, with
 *                              CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION
 *                              so split-k partial sums stay fp32 too
 *   fp16 in/out, compute f16   CUBLAS_COMPUTE_16F, alpha/beta in fp16
 *   e4m3 in, compute f32       cublasLtMatmul, heuristic algorithm, 32 MiB
 *                              workspace, per-tensor A/B scales, fp8 fast
 *                              accumulation off (the default) or on
 *                              (fp8_fast_accum: CUBLASLT_MATMUL_DESC_FAST_ACCUM)
 *   MXFP8 / NVFP4 (sm_100+)    cublasLtMatmul on e4m3 / packed e2m1 with
 *                              CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 /
 *                              VEC16_UE4M3 block scales (block_scaling)
 *   batch > 1                  the strided-batched forms of the same calls
 */
#include <cuda_fp16.h>
#include <stdio.h>
#include <string.h>

#include <mutex>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/gemm.h"

namespace {

/* Threads of one process share the handles: handle_lock_ makes their
 * creation, the per-call math mode and the call that uses it one step (the
 * mode is a property of the handle, so another thread's call between the
 * two would run in this call's mode), as well as the fp8 scales and plans.
 * The GPU runs the products in queue order on the one stream either way. */
std::mutex handle_lock_;
cublasHandle_t blas_;
cublasLtHandle_t lt_;
void *lt_workspace_;
const size_t lt_workspace_bytes_ = 32u << 20;
float *scales_dev_;          /* a_scale, b_scale on the device (cuBLASLt reads them there) */
float scales_host_[2] = {0, 0};

void ensure_handles() {
  if (blas_) return;
  HL_CUBLAS_CHECK(cublasCreate(&blas_));
  HL_CUBLAS_CHECK(cublasSetStream(blas_, hl_cuda_stream()));
  HL_CUBLAS_CHECK(cublasLtCreate(&lt_));
  HL_CUDA_CHECK(cudaMalloc(&lt_workspace_, lt_workspace_bytes_));
  HL_CUDA_CHECK(cudaMalloc(&scales_dev_, 2 * sizeof(float)));
}

/* compute capability of the current device; false without one */
bool device_cc(int *major, int *minor) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return true;
}

cudaDataType cuda_type(hl_dtype t) {
  switch (t) {
    case HL_F64: return CUDA_R_64F;
    case HL_F32: return CUDA_R_32F;
    case HL_F16: return CUDA_R_16F;
    case HL_BF16: return CUDA_R_16BF;
    case HL_E2M1: return CUDA_R_4F_E2M1; /* two per byte */
    default: return CUDA_R_8F_E4M3;
  }
}

bool fits_int(int64_t v) { return v >= 0 && v <= 2147483647; }

/* MXFP8 and NVFP4 through cuBLASLt's block scales */
const char *why_not_block_scaled(const hl_gemm_desc *d, int cc) {
  const bool mx = d->block_scaling == HL_GEMM_SCALE_MX_E8M0_32;
  if (cc < 100) return mx ? "block-scaled MXFP8 (VEC32_UE8M0 scales) needs sm_100 or newer"
                          : "block-scaled NVFP4 (VEC16_UE4M3 scales) needs sm_100 or newer";
  if (d->a_type != d->b_type || d->a_type != (mx ? HL_E4M3 : HL_E2M1))
    return mx ? "MXFP8 takes e4m3 A and B" : "NVFP4 takes e2m1 A and B";
  if (d->compute != HL_COMPUTE_F32) return "block-scaled GEMMs accumulate in fp32";
  if (d->c_type != HL_F32 && d->c_type != HL_F16 && d->c_type != HL_BF16) return "block-scaled GEMMs write fp32, fp16 or bf16";
  if (d->trans_a || !d->trans_b) return "block-scaled GEMMs need the TN layout: A not transposed, B transposed (n x k)";
  if (d->batch > 1 || d->beta != 0.0f) return "block-scaled GEMMs here take one product and beta = 0";
  if (d->m % 16 || d->n % 16 || d->k % 32 || d->lda != d->k || d->ldb != d->k || d->ldc % 16)
    return "block-scaled GEMMs need m and n multiples of 16, k a multiple of 32 and packed rows (lda = ldb = k)";
  return NULL;
}

const char *why_not(const hl_gemm_desc *d) {
  int major = 0, minor = 0;
  if (!device_cc(&major, &minor)) return "no usable CUDA device";
  const int cc = major * 10 + minor;
  const hl_dtype a = d->a_type, b = d->b_type, c = d->c_type;
  if (!fits_int(d->m) || !fits_int(d->n) || !fits_int(d->k) || !fits_int(d->lda) || !fits_int(d->ldb) ||
      !fits_int(d->ldc) || !fits_int(d->batch))
    return "a dimension or leading dimension is beyond cuBLAS's 32-bit int";
  if (d->block_scaling != HL_GEMM_SCALE_PER_TENSOR) return why_not_block_scaled(d, cc);
  if (a == HL_E4M3 || b == HL_E4M3) {
    if (cc < 89) return "fp8 (e4m3) tensor cores need sm_89 or newer";
    if (a != b) return "fp8 GEMM here takes e4m3 for both A and B";
    if (d->compute != HL_COMPUTE_F32) return "fp8 GEMM accumulates in fp32 only";
    if (c != HL_F32 && c != HL_F16 && c != HL_BF16) return "fp8 GEMM writes fp32, fp16 or bf16";
    if (d->trans_a || !d->trans_b)
      return "cuBLASLt's fp8 kernels need the TN layout: row-major A not transposed, B transposed (n x k)";
    if (d->k == 0) return "fp8 GEMM needs k > 0";
    if (d->m % 16 || d->n % 16 || d->k % 16 || d->lda % 16 || d->ldb % 16 || d->ldc % 16)
      return "cuBLASLt's fp8 kernels need m, n, k and the leading dimensions to be multiples of 16";
    return NULL;
  }
  if (c == HL_E4M3) return "fp8 output is not supported";
  if (a != b) return "A and B must have the same type (cublasGemmEx)";
  switch (d->compute) {
    case HL_COMPUTE_F64:
      if (a != HL_F64 || c != HL_F64) return "fp64 compute needs fp64 operands";
      return NULL;
    case HL_COMPUTE_F32_FAST_TF32:
      if (a != HL_F32 || c != HL_F32) return "tf32 takes fp32 operands";
      if (cc < 80) return "tf32 tensor cores need sm_80 (Ampere) or newer";
      return NULL;
    case HL_COMPUTE_F16:
      if (a != HL_F16 || c != HL_F16) return "fp16 accumulation takes fp16 operands and output";
      return NULL;
    case HL_COMPUTE_F32:
      if (a == HL_F64) return "fp64 operands need fp64 compute";
      if (a == HL_BF16 && cc < 80) return "bf16 tensor cores need sm_80 (Ampere) or newer";
      if (c != a && c != HL_F32) return "the output must have the input type or be fp32";
      return NULL;
  }
  return "unknown compute type";
}

bool cuda_gemm_supports(const hl_gemm_desc *d, char *why, size_t len) {
  const char *no = why_not(d);
  if (no && why && len) {
    strncpy(why, no, len - 1);
    why[len - 1] = '\0';
  }
  return no == NULL;
}

/* ---- cuBLASLt fp8: descriptors and the chosen algorithm, cached per shape */
struct lt_plan {
  bool used;
  int64_t m, n, k, batch, lda, ldb, ldc, sa, sb, sc;
  hl_dtype c_type, ab_type;
  bool fast_accum;
  hl_gemm_block_scaling block_scaling;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
};
lt_plan plans_[16];
int next_plan_;

bool same_shape(const lt_plan &p, const hl_gemm_desc *d) {
  return p.used && p.m == d->m && p.n == d->n && p.k == d->k && p.batch == d->batch && p.lda == d->lda &&
         p.ldb == d->ldb && p.ldc == d->ldc && p.sa == d->stride_a && p.sb == d->stride_b && p.sc == d->stride_c &&
         p.c_type == d->c_type && p.fast_accum == d->fp8_fast_accum &&
         p.ab_type == d->a_type && p.block_scaling == d->block_scaling;
}

cublasLtMatrixLayout_t layout(cudaDataType t, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l;
  HL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, t, (uint64_t)rows, (uint64_t)cols, ld));
  if (batch > 1) {
    int32_t count = (int32_t)batch;
    HL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    HL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                     sizeof stride));
  }
  return l;
}

lt_plan &plan_for(const hl_gemm_desc *d) {
  for (lt_plan &p : plans_)
    if (same_shape(p, d)) return p;
  lt_plan &p = plans_[next_plan_];
  next_plan_ = (next_plan_ + 1) % 16;
  if (p.used) {
    HL_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p.la));
    HL_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p.lb));
    HL_CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(p.lc));
    HL_CUBLAS_CHECK(cublasLtMatmulDescDestroy(p.op));
  }
  p.used = true;
  p.m = d->m, p.n = d->n, p.k = d->k, p.batch = d->batch, p.lda = d->lda, p.ldb = d->ldb, p.ldc = d->ldc;
  p.sa = d->stride_a, p.sb = d->stride_b, p.sc = d->stride_c, p.c_type = d->c_type;
  p.fast_accum = d->fp8_fast_accum;
  p.ab_type = d->a_type, p.block_scaling = d->block_scaling;
  HL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const int8_t fast_accum = d->fp8_fast_accum ? 1 : 0;
  HL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum, sizeof fast_accum));
  if (d->block_scaling != HL_GEMM_SCALE_PER_TENSOR) {
    const int32_t mode = d->block_scaling == HL_GEMM_SCALE_MX_E8M0_32 ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0
                                                                      : CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
    HL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode));
    HL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode));
    /* cuBLAS's A is our B: its scales first; set again before each call (the pointers change) */
    HL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &d->b_block_scales,
                                                   sizeof d->b_block_scales));
    HL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &d->a_block_scales,
                                                   sizeof d->a_block_scales));
  }
  const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  HL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  HL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n));
  /* cuBLAS's A is our B (stored n x k row-major = k x n column-major), its B our A (k x m column-major) */
  const float *scale_a_lt = scales_dev_ + 1, *scale_b_lt = scales_dev_;
  if (d->block_scaling == HL_GEMM_SCALE_PER_TENSOR) {
    HL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a_lt,
                                                   sizeof scale_a_lt));
    HL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b_lt,
                                                   sizeof scale_b_lt));
  }
  p.la = layout(cuda_type(d->b_type), d->k, d->n, d->ldb, d->batch, d->stride_b);
  p.lb = layout(cuda_type(d->a_type), d->k, d->m, d->lda, d->batch, d->stride_a);
  p.lc = layout(cuda_type(d->c_type), d->n, d->m, d->ldc, d->batch, d->stride_c);
  cublasLtMatmulPreference_t pref;
  HL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  HL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &lt_workspace_bytes_, sizeof lt_workspace_bytes_));
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  HL_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt_, p.op, p.la, p.lb, p.lc, p.lc, pref, 1, &result, &found));
  HL_CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  if (found == 0)
    hl_fatal("cuBLASLt: cublasLtMatmulAlgoGetHeuristic found no algorithm for this fp8, MXFP8 or NVFP4 problem "
             "(m, n, k, layout or output type unsupported on this GPU)");
  p.algo = result.algo;
  return p;
}

void run_fp8(const hl_gemm_desc *d) {
  if (scales_host_[0] != d->a_scale || scales_host_[1] != d->b_scale) {
    scales_host_[0] = d->a_scale, scales_host_[1] = d->b_scale;
    /* pageable source: staged before the call returns, so scales_host_ may change afterwards */
    HL_CUDA_CHECK(cudaMemcpyAsync(scales_dev_, scales_host_, sizeof scales_host_, cudaMemcpyHostToDevice,
                                  hl_cuda_stream()));
  }
  lt_plan &p = plan_for(d);
  if (d->block_scaling != HL_GEMM_SCALE_PER_TENSOR) {
    HL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &d->b_block_scales,
                                                   sizeof d->b_block_scales));
    HL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &d->a_block_scales,
                                                   sizeof d->a_block_scales));
  }
  HL_CUBLAS_CHECK(cublasLtMatmul(lt_, p.op, &d->alpha, d->b, p.la, d->a, p.lb, &d->beta, d->c, p.lc, d->c, p.lc,
                                 &p.algo, lt_workspace_, lt_workspace_bytes_, hl_cuda_stream()));
}

void cuda_gemm(const hl_gemm_desc *d) {
  if (d->m <= 0 || d->n <= 0) return;
  std::lock_guard<std::mutex> guard(handle_lock_);
  ensure_handles();
  if (d->a_type == HL_E4M3 || d->block_scaling != HL_GEMM_SCALE_PER_TENSOR) {
    run_fp8(d);
    return;
  }
  const cublasOperation_t op_b = d->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLAS's A */
  const cublasOperation_t op_a = d->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLAS's B */
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  const void *alpha = &d->alpha, *beta = &d->beta;
  __half alpha_h, beta_h;
  double alpha_d = d->alpha, beta_d = d->beta;
  switch (d->compute) {
    case HL_COMPUTE_F64:
      compute = CUBLAS_COMPUTE_64F, alpha = &alpha_d, beta = &beta_d;
      break;
    case HL_COMPUTE_F32_FAST_TF32:
      compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      break;
    case HL_COMPUTE_F16:
      compute = CUBLAS_COMPUTE_16F;
      alpha_h = __float2half_rn(d->alpha), beta_h = __float2half_rn(d->beta);
      alpha = &alpha_h, beta = &beta_h;
      break;
    case HL_COMPUTE_F32:
      if (d->a_type != HL_F32) math = (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
      break;
  }
  HL_CUBLAS_CHECK(cublasSetMathMode(blas_, math));
  const int m = (int)d->n, n = (int)d->m, k = (int)d->k; /* cuBLAS's view */
  const cudaDataType at = cuda_type(d->a_type), ct = cuda_type(d->c_type);
  /* cuBLAS checks leading dimensions even of empty operands (k == 0, where
   * it computes C = beta C): raise them to its minimum, which valid row-major
   * strides already meet */
  int64_t lda = d->lda, ldb = d->ldb;
  const int64_t min_ldb = d->trans_b ? d->k : d->n, min_lda = d->trans_a ? d->m : d->k;
  if (ldb < (min_ldb > 1 ? min_ldb : 1)) ldb = min_ldb > 1 ? min_ldb : 1;
  if (lda < (min_lda > 1 ? min_lda : 1)) lda = min_lda > 1 ? min_lda : 1;
  if (d->batch <= 1) {
    HL_CUBLAS_CHECK(cublasGemmEx(blas_, op_b, op_a, m, n, k, alpha, d->b, at, (int)ldb, d->a, at, (int)lda, beta,
                                 d->c, ct, (int)d->ldc, compute, CUBLAS_GEMM_DEFAULT));
  } else {
    HL_CUBLAS_CHECK(cublasGemmStridedBatchedEx(blas_, op_b, op_a, m, n, k, alpha, d->b, at, (int)ldb, d->stride_b,
                                               d->a, at, (int)lda, d->stride_a, beta, d->c, ct, (int)d->ldc,
                                               d->stride_c, (int)d->batch, compute, CUBLAS_GEMM_DEFAULT));
  }
}

void cuda_gemm_describe(const hl_gemm_desc *d, char *out, size_t len) {
  const bool batched = d->batch > 1;
  if (d->block_scaling != HL_GEMM_SCALE_PER_TENSOR) {
    const bool mx = d->block_scaling == HL_GEMM_SCALE_MX_E8M0_32;
    snprintf(out, len, "cublasLtMatmul %s -> %s; %s block scales; heuristic algorithm; 32 MiB workspace",
             mx ? "MXFP8 (e4m3 x e4m3)" : "NVFP4 (packed e2m1 x e2m1)", hl_dtype_name(d->c_type),
             mx ? "CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0" : "CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3");
    return;
  }
  if (d->a_type == HL_E4M3) {
    snprintf(out, len, "cublasLtMatmul e4m3 x e4m3 -> %s%s; heuristic algorithm; 32 MiB workspace; fast accumulation %s",
             hl_dtype_name(d->c_type), batched ? " strided-batched" : "", d->fp8_fast_accum ? "on" : "off");
    return;
  }
  const char *call = batched ? "cublasGemmStridedBatchedEx" : "cublasGemmEx";
  const char *how = d->compute == HL_COMPUTE_F64           ? "CUBLAS_COMPUTE_64F"
                    : d->compute == HL_COMPUTE_F32_FAST_TF32 ? "CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores)"
                    : d->compute == HL_COMPUTE_F16           ? "CUBLAS_COMPUTE_16F (tensor cores; fp16 alpha/beta)"
                    : d->a_type == HL_F32                    ? "CUBLAS_COMPUTE_32F default math (SIMT; no tf32)"
                                                             : "CUBLAS_COMPUTE_32F (tensor cores; fp32 split-k reductions)";
  snprintf(out, len, "%s %s", call, how);
}

}  // namespace

/* row_bias false: the core writes a linear's bias into C and runs beta = 1
 * (cuBLASLt's bias epilogue is not used yet); outer_batch false: the core
 * launches one strided-batched call per outer group (launches are cheap) */
extern "C" const struct hl_gemm_kernels hl_cuda_gemm_kernels = {cuda_gemm_supports, cuda_gemm, cuda_gemm_describe,
                                                                false, false};
