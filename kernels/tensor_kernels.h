/* tensor_kernels.h — the kernels behind the AMP core's tensor ops
 * (backend->tensor). core/engine/ops_*.c decide shapes, dtypes, autocast and autograd;
 * these entry points only move and compute numbers.
 *
 * A backend fills in every entry or leaves backend->tensor NULL; the core
 * then refuses ops on that device with "op X: no CUDA kernels in this build
 * yet". The CPU backend's table is kernels/cpu/tensor_cpu*.c; the CUDA twin
 * is kernels/cuda/tensor_cuda*.cu and must give the same results as stated
 * per entry. The entries are listed once, in HL_TENSOR_KERNEL_ENTRIES below.
 *
 * Conventions (all entries):
 *   - Pointers are device pointers of the backend (host memory on the CPU)
 *     and point at the first element (the caller has applied view offsets).
 *   - Float dtypes are f64, f32, f16, bf16. Arithmetic on f32, f16 and bf16
 *     is done in f32 and rounded once to the storage type on store; f64 in
 *     f64. The per-element formulas are the HL_HD functions of
 *     kernels/tensor_math.h, which a CUDA kernel calls unchanged.
 *   - "acc" arrays (mean, rstd, lse, row losses) hold the accumulation type:
 *     double for f64, float otherwise (hl_acc_dtype).
 *   - Scalar parameters arrive as double and are rounded once to the compute
 *     type (float for f32/f16/bf16).
 *   - Calls are asynchronous on the GPU (the backend's stream) and may run
 *     OpenMP threads on the CPU; inputs stay valid until the next
 *     synchronising call. Outputs never alias inputs unless an entry says so.
 *   - Sizes fit int64_t; n == 0 is allowed and does nothing.
 *   - Nothing here allocates tensor memory: the core allocates outputs,
 *     saved statistics and scratch through core/base/mem.h and passes them in.
 *
 * A backend's table (docs/core.md, "Adding a backend"; the CUDA twin,
 * kernels/cuda/tensor_cuda.cu, is one):
 *   1. define every entry, hl_<backend>_NAME, declared with
 *      HL_TENSOR_KERNEL_PROTOTYPES(hl_<backend>_) (the CUDA twin launches on
 *      hl_cuda_stream(), checks every call with kernels/cuda/check.h, takes
 *      its element math from tensor_math.h with the op as a template
 *      argument and its conversions from formats/half.h);
 *   2. fill the table with HL_TENSOR_KERNEL_TABLE(hl_<backend>_) and point
 *      the backend's `tensor` at it; the op registry's dtypes then hold on
 *      it and the dispatcher routes its tensors;
 *   3. a test comparing every entry with the CPU table on the same inputs,
 *      at the tolerances below (plus the GEMMs of backend->gemm, which
 *      mm/bmm/matmul/linear need): the gpu suite for CUDA.
 *
 * Tolerances the gpu suite holds the CUDA twin to (CPU result = reference):
 *   bit-exact: fill, copy (every dtype pair), binary ops, unary ops made of
 *     single +,-,*,/ or comparisons (neg, relu, add/mul/div/rdiv/rsub_scalar,
 *     pow with p in {0, 1, 2, -1}), relu backward, causal_mask, embedding,
 *     one_hot, random uniform;
 *   4 ulp of the compute type (then at most 1 ulp of f16/bf16 after the
 *     final rounding): exp, gelu and its derivatives, unary_grad gelu (the
 *     GPU contracts a*b+c into FMAs), sqrt/log/pow (device libm vs glibc),
 *     pow with other exponents, random normal;
 *   relative 1e-5 of the largest |term| (f32 accumulation; 1e-12 for f64),
 *     because the summation order differs: sum, softmax and log_softmax
 *     (their row sums), softmax_backward, layer_norm (+ backward),
 *     cross_entropy (+ backward), embedding_backward.
 */
#ifndef HL_TENSOR_KERNELS_H
#define HL_TENSOR_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/dtype.h" /* hl_dtype */

#ifdef __cplusplus
extern "C" {
#endif

#define HL_MAX_DIMS 4

/* The type sums, means and statistics are accumulated in. */
static inline hl_dtype hl_acc_dtype(hl_dtype t) { return t == HL_F64 ? HL_F64 : HL_F32; }

/* A strided operand: data at the first element, element strides of 4 dims
 * (unused leading dims have size 1; a stride of 0 broadcasts). */
typedef struct {
  void *data;
  hl_dtype dtype;
  int64_t stride[HL_MAX_DIMS];
} hl_kview;

typedef enum {
  HL_BIN_ADD = 0,
  HL_BIN_SUB,
  HL_BIN_MUL,
  HL_BIN_DIV,
  HL_BINARY_OPS
} hl_binary_op;

/* x is the input, p the scalar parameter. */
typedef enum {
  HL_UN_NEG = 0,     /* -x */
  HL_UN_EXP,         /* e^x (tensor_math.h hl_exp_f32: <= 2 ulp, vectorisable) */
  HL_UN_LOG,         /* ln x */
  HL_UN_SQRT,        /* sqrt x (correctly rounded) */
  HL_UN_RELU,        /* x > 0 ? x : 0 (NaN propagates) */
  HL_UN_GELU,        /* tanh-form GELU, computed as x * sigmoid(2u), no cancellation */
  HL_UN_GELU_GRAD,   /* d gelu / dx */
  HL_UN_GELU_GRAD2,  /* d2 gelu / dx2 (the gradient penalty's second order) */
  HL_UN_POW,         /* x^p; p in {0,1,2,3,-1} exact special cases (0.5 goes to pow()), else pow() */
  HL_UN_ADD_SCALAR,  /* x + p */
  HL_UN_MUL_SCALAR,  /* x * p */
  HL_UN_DIV_SCALAR,  /* x / p */
  HL_UN_RDIV_SCALAR, /* p / x */
  HL_UN_RSUB_SCALAR, /* p - x */
  HL_UN_STEP,        /* x > 0 ? 1 : 0 (relu's derivative) */
  HL_UNARY_OPS
} hl_unary_op;

/* Fused backward of an activation: dx = dy * f'(x). */
typedef enum {
  HL_GRAD_RELU = 0, /* x > 0 ? dy : 0 */
  HL_GRAD_GELU,     /* dy * gelu'(x) */
  HL_UNARY_GRAD_OPS
} hl_unary_grad_op;

typedef enum { HL_RANDOM_UNIFORM = 0, HL_RANDOM_NORMAL } hl_random_kind;

/* Every entry of the table, once: X(P, name, (parameters)), each entry
 * returning void. The table's members below and every backend's entry
 * points come from this list: a backend declares its functions with
 * HL_TENSOR_KERNEL_PROTOTYPES(prefix) (hl_cpu_fill, hl_cuda_fill, ...) and
 * fills its table with HL_TENSOR_KERNEL_TABLE(prefix), in this order; an
 * entry added here is then a compile error in each backend until it
 * defines the function. */
#define HL_TENSOR_KERNEL_ENTRIES(X, P)                                                                         \
  /* ---------------------------------------------------- data movement -- */                                  \
  /* dst[0..n) = value rounded once to t (integers: round to nearest even,                                     \
   * saturated to the type's range, NaN -> 0). Any dtype. */                                                   \
  X(P, fill, (void *dst, hl_dtype t, int64_t n, double value))                                                 \
  /* dst[i] = convert(src[i]) over the index space `size`, both strided, any                                   \
   * dtype pair. Float -> narrower float: RNE (half.h). Float -> integer:                                      \
   * RNE, saturated, NaN -> 0. Integer -> float: exact or RNE. dst must not                                    \
   * overlap src unless they are the same view with the same dtype. */                                         \
  X(P, copy, (const hl_kview *dst, const hl_kview *src, const int64_t size[HL_MAX_DIMS]))                      \
  /* Philox4x32-10 (formats/philox.h) under (seed, stream). Uniform: element i                                 \
   * = a + (b - a) * u, u from word i (hl_u32_to_unit_float). Normal: element                                  \
   * i = a + b * z, z by Box-Muller from words 2i and 2i+1 (tensor_math.h                                      \
   * hl_normal_from_words). Float dtypes. */                                                                   \
  X(P, random, (void *dst, hl_dtype t, int64_t n, hl_random_kind kind, double a, double b, uint64_t seed,      \
         uint64_t stream))                                                                                     \
  /* ------------------------------------------------------ element-wise -- */                                 \
  /* out = a op b over `size`; out, a and b share one float dtype; a and b                                     \
   * may broadcast (stride 0). out may be exactly a (same data and strides:                                    \
   * in-place accumulation). */                                                                                \
  X(P, binary, (hl_binary_op op, const hl_kview *out, const hl_kview *a, const hl_kview *b,                    \
         const int64_t size[HL_MAX_DIMS]))                                                                     \
  /* out[i] = f(x[i], p), contiguous, out may equal x. */                                                      \
  X(P, unary, (hl_unary_op op, hl_dtype t, int64_t n, void *out, const void *x, double p))                     \
  /* dx[i] = dy[i] * f'(x[i]), contiguous. */                                                                  \
  X(P, unary_grad, (hl_unary_grad_op op, hl_dtype t, int64_t n, void *dx, const void *dy, const void *x))      \
  /* x viewed as [batch, rows, cols] contiguous: out = x where                                                 \
   * col <= row + (cols - rows), else value (the causal mask of attention,                                     \
   * aligned to the bottom-right as for a query block at the end of the                                        \
   * keys). out may equal x. */                                                                                \
  X(P, causal_mask, (hl_dtype t, void *out, const void *x, int64_t batch, int64_t rows, int64_t cols,          \
         double value))                                                                                        \
  /* ------------------------------------------------------- reductions -- */                                  \
  /* x contiguous [outer, r, inner]: out[o, i] = alpha * sum_j x[o, j, i],                                     \
   * accumulated in hl_acc_dtype(t), rounded once to t. r == 0 gives 0. */                                     \
  X(P, sum, (hl_dtype t, void *out, const void *x, int64_t outer, int64_t r, int64_t inner, double alpha))     \
  /* Row-wise over the last dim of contiguous [rows, cols]:                                                    \
   * softmax y = exp(x - max) / sum; log: y = x - max - log(sum). */                                           \
  X(P, softmax, (hl_dtype t, void *y, const void *x, int64_t rows, int64_t cols, bool log))                    \
  /* softmax: dx = y * (dy - sum(dy * y)); log: dx = dy - exp(y) * sum(dy). */                                 \
  X(P, softmax_backward, (hl_dtype t, void *dx, const void *dy, const void *y, int64_t rows, int64_t cols,     \
         bool log))                                                                                            \
  /* y = (x - mean) * rstd * w + b per row of [rows, cols]; w and b [cols]                                     \
   * may be NULL (1 and 0). Writes mean and rstd (acc, [rows]);                                                \
   * rstd = 1 / sqrt(var + eps), var the biased variance (two-pass). */                                        \
  X(P, layer_norm, (hl_dtype t, void *y, void *mean, void *rstd, const void *x, const void *w,                 \
         const void *b, int64_t rows, int64_t cols, double eps))                                               \
  /* Writes (not accumulates) dx [rows, cols], dw and db [cols]; any of the                                    \
   * three may be NULL when not wanted. */                                                                     \
  X(P, layer_norm_backward, (hl_dtype t, void *dx, void *dw, void *db, const void *dy, const void *x,          \
         const void *w, const void *mean, const void *rstd, int64_t rows, int64_t cols))                       \
  /* Mean cross-entropy of logits x [rows, cols] against i32 targets [rows]:                                   \
   * row_loss[r] = lse_r - x[r, t_r] with lse_r = logsumexp of row r (acc,                                     \
   * both written), *loss = (sum_r row_loss[r]) / rows rounded to t.                                           \
   * Targets outside [0, cols) are counted into *bad (an i32 on the device,                                    \
   * set, not added to) and give row_loss NaN. */                                                              \
  X(P, cross_entropy, (hl_dtype t, void *loss, void *row_loss, void *lse, const void *x,                       \
         const int32_t *targets, int64_t rows, int64_t cols, int32_t *bad))                                    \
  /* dx = (exp(x - lse) - onehot(t)) * (*dloss) / rows, dloss a t scalar on                                    \
   * the device (the upstream gradient: read there, no host round trip). */                                    \
  X(P, cross_entropy_backward, (hl_dtype t, void *dx, const void *x, const int32_t *targets,                   \
         const void *lse, const void *dloss, int64_t rows, int64_t cols))                                      \
  /* dst [rows, cols] = 1 at (r, targets[r]), 0 elsewhere (targets checked                                     \
   * by the caller). */                                                                                        \
  X(P, one_hot, (hl_dtype t, void *dst, const int32_t *targets, int64_t rows, int64_t cols))                   \
  /* ---------------------------------------------------------- indexing -- */                                 \
  /* out [n, dim] = weight [vocab, dim] rows idx[0..n); out-of-range indices                                   \
   * are counted into *bad (set) and give zero rows. */                                                        \
  X(P, embedding, (hl_dtype t, void *out, const void *weight, const int32_t *idx, int64_t n, int64_t dim,      \
         int64_t vocab, int32_t *bad))                                                                         \
  /* dweight [vocab, dim] = sum over i of dy[i] into row idx[i] (written                                       \
   * whole: rows no index hits are 0). Accumulated in acc; the GPU twin may                                    \
   * use atomics (order-dependent rounding: reduction tolerance). */                                           \
  X(P, embedding_backward, (hl_dtype t, void *dweight, const void *dy, const int32_t *idx, int64_t n,          \
         int64_t dim, int64_t vocab))

#define HL_TENSOR_KERNEL_MEMBER_(P, name, params) void(*name) params;
#define HL_TENSOR_KERNEL_PROTOTYPE_(P, name, params) void P##name params;
#define HL_TENSOR_KERNEL_INIT_(P, name, params) P##name,
#define HL_TENSOR_KERNEL_PROTOTYPES(prefix) HL_TENSOR_KERNEL_ENTRIES(HL_TENSOR_KERNEL_PROTOTYPE_, prefix)
#define HL_TENSOR_KERNEL_TABLE(prefix) {HL_TENSOR_KERNEL_ENTRIES(HL_TENSOR_KERNEL_INIT_, prefix)}

struct hl_tensor_kernels {
  HL_TENSOR_KERNEL_ENTRIES(HL_TENSOR_KERNEL_MEMBER_, unused)
};

#ifdef __cplusplus
}
#endif

#endif /* HL_TENSOR_KERNELS_H */
