/* tensor_cuda.cuh — what the CUDA tensor kernels (tensor_cuda*.cu) share:
 * per-dtype load/store, the element math of kernels/tensor_math.h by compute
 * type, 16-byte vectors, warp and block reductions, dtype dispatch, the
 * launch shape, and the scratch workspace.
 *
 * These files are compiled with -fmad=false (kernels/cuda/meson.build): nvcc
 * would otherwise contract a*b+c into FMAs, and the element formulas shared
 * with the CPU (exp, GELU, the uniform random transform, layer norm's affine
 * step) would round differently from the CPU loops, which do not contract.
 * With it, every element formula made of +, -, *, / and sqrt gives the CPU's
 * bits; only the device's libm (log, pow, cos) and summation order differ.
 *
 * Everything here is internal to the tensor kernels. */
#ifndef HL_TENSOR_CUDA_CUH
#define HL_TENSOR_CUDA_CUH

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "formats/half.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/tensor_cuda_plan.h"
#include "kernels/tensor_kernels.h"
#include "kernels/tensor_math.h"

namespace hl_tc {

/* Threads per block of every tensor kernel: 8 warps. */
constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
/* Rows up to this many elements are handled by one warp, longer rows by a
 * whole block. */
constexpr int64_t kWarpRowMax = 1024;

/* ------------------------------------------------------- element types -- */
/* S: storage type; C: compute type (float for f32/f16/bf16, double for f64). */
template <hl_dtype T>
struct elt;
template <>
struct elt<HL_F64> {
  typedef double S;
  typedef double C;
  __device__ static C ld(S v) { return v; }
  __device__ static S st(C v) { return v; }
};
template <>
struct elt<HL_F32> {
  typedef float S;
  typedef float C;
  __device__ static C ld(S v) { return v; }
  __device__ static S st(C v) { return v; }
};
template <>
struct elt<HL_F16> {
  typedef uint16_t S;
  typedef float C;
  __device__ static C ld(S v) { return hl_f16_to_f32(v); }
  __device__ static S st(C v) { return hl_f32_to_f16(v); }
};
template <>
struct elt<HL_BF16> {
  typedef uint16_t S;
  typedef float C;
  __device__ static C ld(S v) { return hl_bf16_to_f32(v); }
  __device__ static S st(C v) { return hl_f32_to_bf16(v); }
};

/* ---------------------------------------------- math by compute type -- */

__device__ inline float math_binary(hl_binary_op op, float a, float b) { return hl_binary_f32(op, a, b); }
__device__ inline double math_binary(hl_binary_op op, double a, double b) { return hl_binary_f64(op, a, b); }
__device__ inline float math_unary(hl_unary_op op, float x, float p) { return hl_unary_f32(op, x, p); }
__device__ inline double math_unary(hl_unary_op op, double x, double p) { return hl_unary_f64(op, x, p); }
__device__ inline float math_unary_grad(hl_unary_grad_op op, float dy, float x) { return hl_unary_grad_f32(op, dy, x); }
__device__ inline double math_unary_grad(hl_unary_grad_op op, double dy, double x) {
  return hl_unary_grad_f64(op, dy, x);
}
__device__ inline float math_exp(float x) { return hl_exp_f32(x); }
__device__ inline double math_exp(double x) { return hl_exp_f64(x); }
__device__ inline float math_log(float x) { return hl_log_f32(x); }
__device__ inline double math_log(double x) { return hl_log_f64(x); }
__device__ inline float math_sqrt(float x) { return hl_sqrt_f32(x); }
__device__ inline double math_sqrt(double x) { return hl_sqrt_f64(x); }
/* max that ignores NaN, as the CPU's `v > m ? v : m` lane maxima do */
__device__ inline float math_max(float a, float b) { return fmaxf(a, b); }
__device__ inline double math_max(double a, double b) { return fmax(a, b); }

/* ------------------------------------------------------------ vectors -- */
/* VW elements of storage type S in one 16-byte load or store. */
template <typename S>
struct vec16 {
  static constexpr int n = 16 / (int)sizeof(S);
  union U {
    uint4 raw;
    S v[16 / sizeof(S)];
  };
};


/* Kernels that walk an hl_cuda_geom take it as a `const __grid_constant__`
 * parameter: hl_cuda_geom_offset reads it through a pointer, and without the
 * qualifier taking a parameter's address copies it to local memory in every
 * thread (CUDA 11.7+, sm_70+). */

/* ------------------------------------------------------- thread index -- */

__device__ inline int64_t first_index() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return (int64_t)gridDim.x * blockDim.x; }

/* --------------------------------------------------------- reductions -- */
/* Butterfly (xor) reductions: every lane ends with the same bits, since
 * each step combines a value with its partner's by a commutative operation.
 * All 32 lanes of the warp must call them. */
template <typename C>
__device__ inline C warp_sum(C v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename C>
__device__ inline C warp_max(C v) {
  for (int o = 16; o > 0; o >>= 1) v = math_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/* Online softmax statistics: running max m and sum s of exp(x - m). */
template <typename C>
struct max_sum {
  C m, s;
};
/* Adds element x. An empty state has m = -inf, s = 0. -inf elements add
 * exp(-inf - m) = 0 and are skipped (a thread that saw only masked -inf
 * scores must not turn exp(-inf - (-inf)) = NaN into the row's sum); a NaN
 * element makes the sum NaN and is ignored by the max, as on the CPU. Rows
 * whose max is infinite are settled by max_sum_finish. */
template <typename C>
__device__ inline void max_sum_add(max_sum<C> &a, C x) {
  if (x > a.m) {
    a.s = (a.s == (C)0 ? (C)0 : a.s * math_exp(a.m - x)) + (C)1;
    a.m = x;
  } else if (x != -(C)INFINITY) {
    a.s = a.s + math_exp(x - a.m);
  }
}
/* The CPU sums exp(x - m) over the row: with m = +inf or m = -inf (every
 * element -inf) some term is exp(NaN), so its sum is NaN; n > 0 elements. */
template <typename C>
__device__ inline max_sum<C> max_sum_finish(max_sum<C> a, int64_t n) {
  if (n > 0 && (a.m == (C)INFINITY || a.m == -(C)INFINITY)) a.s = (C)NAN;
  return a;
}
/* Commutative merge: the terms are formed the same way in either order. */
template <typename C>
__device__ inline max_sum<C> max_sum_merge(max_sum<C> a, max_sum<C> b) {
  max_sum<C> r;
  r.m = math_max(a.m, b.m);
  const C ta = a.m == r.m ? a.s : (a.s == (C)0 ? (C)0 : a.s * math_exp(a.m - r.m));
  const C tb = b.m == r.m ? b.s : (b.s == (C)0 ? (C)0 : b.s * math_exp(b.m - r.m));
  r.s = ta + tb;
  return r;
}
template <typename C>
__device__ inline max_sum<C> warp_max_sum(max_sum<C> v) {
  for (int o = 16; o > 0; o >>= 1) {
    max_sum<C> p;
    p.m = __shfl_xor_sync(0xffffffffu, v.m, o);
    p.s = __shfl_xor_sync(0xffffffffu, v.s, o);
    v = max_sum_merge(v, p);
  }
  return v;
}

/* Block-wide versions: every thread of the block must call them and gets
 * the same result. `sh` is shared memory of at least kWarps entries; the
 * first barrier keeps a previous call's readers from seeing new writes. */
template <typename C>
__device__ inline C block_sum(C v, C *sh) {
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  return warp_sum(lane < (int)(blockDim.x >> 5) ? sh[lane] : (C)0);
}
template <typename C>
__device__ inline max_sum<C> block_max_sum(max_sum<C> v, max_sum<C> *sh) {
  v = warp_max_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  max_sum<C> e;
  e.m = -(C)INFINITY;
  e.s = (C)0;
  return warp_max_sum(lane < (int)(blockDim.x >> 5) ? sh[lane] : e);
}

/* Which threads work on one row: a warp (rows up to kWarpRowMax) or the
 * whole block. `tid`/`nthreads` index the thread inside its row group. */
template <bool WARP>
struct row_group {
  __device__ static int tid() { return WARP ? (int)(threadIdx.x & 31) : (int)threadIdx.x; }
  __device__ static int nthreads() { return WARP ? 32 : (int)blockDim.x; }
  /* the first row of this group and the step between its rows */
  __device__ static int64_t first_row() {
    return WARP ? (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5) : (int64_t)blockIdx.x;
  }
  __device__ static int64_t row_step() { return WARP ? (int64_t)gridDim.x * kWarps : (int64_t)gridDim.x; }
  /* (the block forms hold barriers: compiled only for block groups) */
  template <typename C>
  __device__ static C sum(C v, C *sh) {
    if constexpr (WARP) return warp_sum(v);
    else return block_sum(v, sh);
  }
  template <typename C>
  __device__ static max_sum<C> max_sum_all(max_sum<C> v, max_sum<C> *sh) {
    if constexpr (WARP) return warp_max_sum(v);
    else return block_max_sum(v, sh);
  }
};

/* Vector or scalar access to row elements: V = 1 or the 16-byte width.
 * load_row reads elements [c, c + V) widened to C; store_row writes them. */
template <hl_dtype T, int V>
__device__ inline void load_row(const typename elt<T>::S *row, int64_t c, typename elt<T>::C out[V]) {
  typedef typename elt<T>::S S;
  if (V == 1) {
    out[0] = elt<T>::ld(row[c]);
  } else {
    typename vec16<S>::U u;
    u.raw = *(const uint4 *)(row + c);
#pragma unroll
    for (int j = 0; j < V; j++) out[j] = elt<T>::ld(u.v[j]);
  }
}
template <hl_dtype T, int V>
__device__ inline void store_row(typename elt<T>::S *row, int64_t c, const typename elt<T>::C in[V]) {
  typedef typename elt<T>::S S;
  if (V == 1) {
    row[c] = elt<T>::st(in[0]);
  } else {
    typename vec16<S>::U u;
#pragma unroll
    for (int j = 0; j < V; j++) u.v[j] = elt<T>::st(in[j]);
    *(uint4 *)(row + c) = u.raw;
  }
}

/* ------------------------------------------------------------- launch -- */

/* Blocks for `work` items of `per_block` items each, capped (grid-stride
 * loops cover the rest); at least 1. */
inline unsigned grid_for(int64_t work, int64_t per_block) {
  return hl_cuda_grid(work > 0 ? (size_t)work : 0, (unsigned)per_block);
}

/* A device scratch buffer of at least `bytes`, valid until the next call
 * (stream-ordered: kernels of one call may use it; the next call may reuse
 * or replace it after them). Grows, never shrinks; not counted by the
 * accounting allocator, like cuBLAS's workspace. */
void *workspace(size_t bytes);

/* ----------------------------------------------------------- dispatch -- */
/* Calls f(std::integral_constant<hl_dtype, T>()) for the float dtype t. */
template <typename F>
inline void with_float_dtype(hl_dtype t, F &&f) {
  switch (t) {
    case HL_F64: f(std::integral_constant<hl_dtype, HL_F64>()); break;
    case HL_F32: f(std::integral_constant<hl_dtype, HL_F32>()); break;
    case HL_F16: f(std::integral_constant<hl_dtype, HL_F16>()); break;
    case HL_BF16: f(std::integral_constant<hl_dtype, HL_BF16>()); break;
    default: break;
  }
}

}  // namespace hl_tc

/* The entry points each file contributes to the table (tensor_cuda.cu),
 * hl_cuda_fill ... hl_cuda_embedding_backward: declared from the one list of
 * kernels/tensor_kernels.h. */
HL_TENSOR_KERNEL_PROTOTYPES(hl_cuda_)

#endif /* HL_TENSOR_CUDA_CUH */
