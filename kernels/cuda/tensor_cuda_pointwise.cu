/* tensor_cuda_pointwise.cu — element-wise tensor kernels on the GPU: binary
 * ops with broadcasting, unary ops, fused activation backward, causal mask.
 * The CPU twin is kernels/cpu/tensor_cpu_pointwise.c; the per-element
 * formulas are the same functions of kernels/tensor_math.h, with the op a
 * template argument so that the switch inside them folds away.
 *
 *   binary       contiguous operands (a or b may be one broadcast element):
 *                one 16-byte vector per thread step when every array is
 *                16-byte aligned, else one element; broadcasting and strides:
 *                one element per thread step over the coalesced index space.
 *   unary,       contiguous: 16-byte vectors when aligned, else elements;
 *   unary_grad   out may be x (each element is read and written by the
 *                same thread).
 *   causal_mask  one block per row of the [batch*rows, cols] matrix (grid-
 *                stride over rows), threads over the columns; moves bits.
 * All grid-stride, 256 threads per block, on hl_cuda_stream(). */
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/tensor_cuda.cuh"

namespace hl_tc {
namespace {

/* -------------------------------------------------------------- binary -- */

/* o[i] = a[i*sa] op b[i*sb], sa and sb in {0, 1} (0: one broadcast element).
 * With `vec`, whole 16-byte vectors first (a broadcast operand is the same
 * value in every lane), then the tail. */
template <hl_dtype T, hl_binary_op OP>
__global__ void binary_flat_kernel(typename elt<T>::S *o, const typename elt<T>::S *a, int sa,
                                   const typename elt<T>::S *b, int sb, int64_t n, bool vec) {
  typedef typename elt<T>::S S;
  typedef typename elt<T>::C C;
  constexpr int V = vec16<S>::n;
  const int64_t nv = vec ? n / V : 0;
  const C a0 = elt<T>::ld(a[0]), b0 = elt<T>::ld(b[0]);
  for (int64_t v = first_index(); v < nv; v += grid_stride()) {
    typename vec16<S>::U ua, ub, uo;
    if (sa) ua.raw = ((const uint4 *)a)[v];
    if (sb) ub.raw = ((const uint4 *)b)[v];
#pragma unroll
    for (int j = 0; j < V; j++)
      uo.v[j] = elt<T>::st(math_binary(OP, sa ? elt<T>::ld(ua.v[j]) : a0, sb ? elt<T>::ld(ub.v[j]) : b0));
    ((uint4 *)o)[v] = uo.raw;
  }
  for (int64_t i = nv * V + first_index(); i < n; i += grid_stride())
    o[i] = elt<T>::st(math_binary(OP, elt<T>::ld(a[i * sa]), elt<T>::ld(b[i * sb])));
}

/* any strides (operands 0 out, 1 a, 2 b of g) */
template <hl_dtype T, hl_binary_op OP>
__global__ void binary_strided_kernel(const __grid_constant__ hl_cuda_geom g, typename elt<T>::S *o, const typename elt<T>::S *a,
                                      const typename elt<T>::S *b) {
  for (int64_t i = first_index(); i < g.total; i += grid_stride()) {
    const typename elt<T>::C x = elt<T>::ld(a[hl_cuda_geom_offset(&g, 1, i)]);
    const typename elt<T>::C y = elt<T>::ld(b[hl_cuda_geom_offset(&g, 2, i)]);
    o[hl_cuda_geom_offset(&g, 0, i)] = elt<T>::st(math_binary(OP, x, y));
  }
}

template <hl_dtype T, hl_binary_op OP>
void launch_binary(const hl_cuda_geom &g, void *o, const void *a, const void *b) {
  typedef typename elt<T>::S S;
  cudaStream_t s = hl_cuda_stream();
  /* one run (size[3] elements, the outer dims 1) whose operands step by 1 or 0 */
  const bool flat = g.size[0] == 1 && g.size[1] == 1 && g.size[2] == 1 && g.stride[0][3] == 1 &&
                    (g.stride[1][3] == 0 || g.stride[1][3] == 1) && (g.stride[2][3] == 0 || g.stride[2][3] == 1);
  if (flat || g.total == 1) {
    const int sa = g.total > 1 ? (int)g.stride[1][3] : 0, sb = g.total > 1 ? (int)g.stride[2][3] : 0;
    const bool vec = hl_cuda_aligned16(o) && (sa == 0 || hl_cuda_aligned16(a)) && (sb == 0 || hl_cuda_aligned16(b));
    const int64_t work = vec ? g.total / vec16<S>::n + vec16<S>::n : g.total;
    binary_flat_kernel<T, OP><<<grid_for(work, kBlock), kBlock, 0, s>>>((S *)o, (const S *)a, sa, (const S *)b, sb,
                                                                        g.total, vec);
  } else {
    binary_strided_kernel<T, OP><<<grid_for(g.total, kBlock), kBlock, 0, s>>>(g, (S *)o, (const S *)a, (const S *)b);
  }
  HL_CUDA_CHECK_LAUNCH();
}

/* --------------------------------------------------------------- unary -- */

template <hl_dtype T, hl_unary_op OP>
__global__ void unary_kernel(typename elt<T>::S *o, const typename elt<T>::S *x, int64_t n, typename elt<T>::C p,
                             bool vec) {
  typedef typename elt<T>::S S;
  constexpr int V = vec16<S>::n;
  const int64_t nv = vec ? n / V : 0;
  for (int64_t v = first_index(); v < nv; v += grid_stride()) {
    typename vec16<S>::U u;
    u.raw = ((const uint4 *)x)[v];
#pragma unroll
    for (int j = 0; j < V; j++) u.v[j] = elt<T>::st(math_unary(OP, elt<T>::ld(u.v[j]), p));
    ((uint4 *)o)[v] = u.raw;
  }
  for (int64_t i = nv * V + first_index(); i < n; i += grid_stride()) o[i] = elt<T>::st(math_unary(OP, elt<T>::ld(x[i]), p));
}

template <hl_dtype T, hl_unary_op OP>
void launch_unary(void *o, const void *x, int64_t n, double p) {
  typedef typename elt<T>::S S;
  typedef typename elt<T>::C C;
  const bool vec = hl_cuda_aligned16(o) && hl_cuda_aligned16(x);
  const int64_t work = vec ? n / vec16<S>::n + vec16<S>::n : n;
  /* the parameter rounded once to the compute type, as on the CPU */
  unary_kernel<T, OP><<<grid_for(work, kBlock), kBlock, 0, hl_cuda_stream()>>>((S *)o, (const S *)x, n, (C)p, vec);
  HL_CUDA_CHECK_LAUNCH();
}

/* ---------------------------------------------------------- unary_grad -- */

template <hl_dtype T, hl_unary_grad_op OP>
__global__ void unary_grad_kernel(typename elt<T>::S *dx, const typename elt<T>::S *dy, const typename elt<T>::S *x,
                                  int64_t n, bool vec) {
  typedef typename elt<T>::S S;
  constexpr int V = vec16<S>::n;
  const int64_t nv = vec ? n / V : 0;
  for (int64_t v = first_index(); v < nv; v += grid_stride()) {
    typename vec16<S>::U ug, ux, uo;
    ug.raw = ((const uint4 *)dy)[v];
    ux.raw = ((const uint4 *)x)[v];
#pragma unroll
    for (int j = 0; j < V; j++) uo.v[j] = elt<T>::st(math_unary_grad(OP, elt<T>::ld(ug.v[j]), elt<T>::ld(ux.v[j])));
    ((uint4 *)dx)[v] = uo.raw;
  }
  for (int64_t i = nv * V + first_index(); i < n; i += grid_stride())
    dx[i] = elt<T>::st(math_unary_grad(OP, elt<T>::ld(dy[i]), elt<T>::ld(x[i])));
}

/* --------------------------------------------------------- causal mask -- */

/* rows of [nrows = batch*rows, cols]: columns c <= r + (cols - rows) of row
 * r = br % rows are kept, the others get the fill bits */
template <typename U>
__global__ void causal_mask_kernel(U *out, const U *x, int64_t nrows, int64_t rows, int64_t cols, U fill,
                                   bool in_place) {
  for (int64_t br = blockIdx.x; br < nrows; br += gridDim.x) {
    const int64_t r = br % rows;
    int64_t keep = r + (cols - rows) + 1;
    keep = keep < 0 ? 0 : (keep > cols ? cols : keep);
    U *o = out + br * cols;
    const U *s = x + br * cols;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      if (c >= keep) o[c] = fill;
      else if (!in_place) o[c] = s[c];
    }
  }
}

template <typename U>
void launch_causal_mask(void *out, const void *x, int64_t nrows, int64_t rows, int64_t cols, uint64_t bits) {
  causal_mask_kernel<U><<<grid_for(nrows, 1), kBlock, 0, hl_cuda_stream()>>>((U *)out, (const U *)x, nrows, rows, cols,
                                                                             (U)bits, out == x);
  HL_CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace hl_tc

using namespace hl_tc;

void hl_cuda_binary(hl_binary_op op, const hl_kview *out, const hl_kview *a, const hl_kview *b,
                    const int64_t size[HL_MAX_DIMS]) {
  const int64_t *strides[3] = {out->stride, a->stride, b->stride};
  const hl_cuda_geom g = hl_cuda_geom_make(size, strides, 3);
  if (g.total <= 0) return;
  with_float_dtype(out->dtype, [&](auto tag) {
    constexpr hl_dtype T = decltype(tag)::value;
    switch (op) {
      case HL_BIN_ADD: launch_binary<T, HL_BIN_ADD>(g, out->data, a->data, b->data); break;
      case HL_BIN_SUB: launch_binary<T, HL_BIN_SUB>(g, out->data, a->data, b->data); break;
      case HL_BIN_MUL: launch_binary<T, HL_BIN_MUL>(g, out->data, a->data, b->data); break;
      case HL_BIN_DIV: launch_binary<T, HL_BIN_DIV>(g, out->data, a->data, b->data); break;
      default: break;
    }
  });
}

void hl_cuda_unary(hl_unary_op op, hl_dtype t, int64_t n, void *out, const void *x, double p) {
  if (n <= 0) return;
  with_float_dtype(t, [&](auto tag) {
    constexpr hl_dtype T = decltype(tag)::value;
    switch (op) {
#define HL_UNARY_CASE(OP) \
  case OP: launch_unary<T, OP>(out, x, n, p); break;
      HL_UNARY_CASE(HL_UN_NEG)
      HL_UNARY_CASE(HL_UN_EXP)
      HL_UNARY_CASE(HL_UN_LOG)
      HL_UNARY_CASE(HL_UN_SQRT)
      HL_UNARY_CASE(HL_UN_RELU)
      HL_UNARY_CASE(HL_UN_GELU)
      HL_UNARY_CASE(HL_UN_GELU_GRAD)
      HL_UNARY_CASE(HL_UN_GELU_GRAD2)
      HL_UNARY_CASE(HL_UN_POW)
      HL_UNARY_CASE(HL_UN_ADD_SCALAR)
      HL_UNARY_CASE(HL_UN_MUL_SCALAR)
      HL_UNARY_CASE(HL_UN_DIV_SCALAR)
      HL_UNARY_CASE(HL_UN_RDIV_SCALAR)
      HL_UNARY_CASE(HL_UN_RSUB_SCALAR)
      HL_UNARY_CASE(HL_UN_STEP)
#undef HL_UNARY_CASE
      default: break;
    }
  });
}

void hl_cuda_unary_grad(hl_unary_grad_op op, hl_dtype t, int64_t n, void *dx, const void *dy, const void *x) {
  if (n <= 0) return;
  with_float_dtype(t, [&](auto tag) {
    constexpr hl_dtype T = decltype(tag)::value;
    typedef typename elt<T>::S S;
    const bool vec = hl_cuda_aligned16(dx) && hl_cuda_aligned16(dy) && hl_cuda_aligned16(x);
    const int64_t work = vec ? n / vec16<S>::n + vec16<S>::n : n;
    const unsigned grid = grid_for(work, kBlock);
    if (op == HL_GRAD_RELU)
      unary_grad_kernel<T, HL_GRAD_RELU><<<grid, kBlock, 0, hl_cuda_stream()>>>((S *)dx, (const S *)dy, (const S *)x, n, vec);
    else
      unary_grad_kernel<T, HL_GRAD_GELU><<<grid, kBlock, 0, hl_cuda_stream()>>>((S *)dx, (const S *)dy, (const S *)x, n, vec);
    HL_CUDA_CHECK_LAUNCH();
  });
}

void hl_cuda_causal_mask(hl_dtype t, void *out, const void *x, int64_t batch, int64_t rows, int64_t cols,
                         double value) {
  const int64_t nrows = batch * rows;
  if (nrows <= 0 || cols <= 0) return;
  const uint64_t bits = hl_cuda_fill_bits(t, value);
  switch (hl_dtype_size(t)) {
    case 1: launch_causal_mask<uint8_t>(out, x, nrows, rows, cols, bits); break;
    case 2: launch_causal_mask<uint16_t>(out, x, nrows, rows, cols, bits); break;
    case 4: launch_causal_mask<uint32_t>(out, x, nrows, rows, cols, bits); break;
    default: launch_causal_mask<unsigned long long>(out, x, nrows, rows, cols, bits); break;
  }
}
