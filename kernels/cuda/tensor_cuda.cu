/* tensor_cuda.cu — the CUDA table of tensor kernels (kernels/tensor_kernels.h)
 * and its data-movement entries: fill, strided copy with dtype conversion,
 * Philox random fill; plus the scratch workspace and the SM count the other
 * files use. The CPU twin is kernels/cpu/tensor_cpu.c.
 *
 *   fill    16-byte pattern stores over the array (cudaMemsetAsync for zero
 *           bits and one-byte types), one element at a time where the array
 *           is not 16-byte aligned; grid-stride, 256 threads.
 *   copy    same dtype: cudaMemcpyAsync when contiguous, else the bits moved
 *           one element per thread step. Float pairs, contiguous: 8
 *           elements per thread step through 16-byte vectors. Other strided
 *           pairs: one element per thread step over the coalesced
 *           index space (multiply-high division when it has < 2^31
 *           elements). Pairs with an integer type go through double, as on
 *           the CPU. Bits equal the CPU's except for NaN payloads.
 *   random  one element per thread step; element i from Philox words i
 *           (uniform) or 2i, 2i+1 (normal), as the CPU draws them.
 * Everything is launched on hl_cuda_stream() and checked. */
#include <mutex>

#include "formats/philox.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/tensor_cuda.cuh"

namespace hl_tc {

/* ------------------------------------------------------ shared state -- */

namespace {
std::mutex workspace_lock;
void *workspace_ptr;
size_t workspace_bytes;
}  // namespace

void *workspace(size_t bytes) {
  std::lock_guard<std::mutex> guard(workspace_lock);
  if (workspace_ptr && bytes <= workspace_bytes) return workspace_ptr;
  size_t want = workspace_bytes * 2;
  if (want < bytes) want = bytes;
  if (want < ((size_t)1 << 20)) want = (size_t)1 << 20;
  if (workspace_ptr) {
    /* earlier kernels may still read the old buffer: let them finish (growth
     * happens a few times per process, at the first calls of a shape) */
    HL_CUDA_CHECK(cudaStreamSynchronize(hl_cuda_stream()));
    HL_CUDA_CHECK(cudaFree(workspace_ptr));
    workspace_ptr = NULL;
    workspace_bytes = 0;
  }
  HL_CUDA_CHECK(cudaMalloc(&workspace_ptr, want));
  workspace_bytes = want;
  return workspace_ptr;
}

namespace {

/* ---------------------------------------------------------------- fill -- */

/* nvec 16-byte patterns, then elements nvec*16/sizeof(U) .. n-1 one by one */
template <typename U>
__global__ void fill_kernel(void *dst, uint4 pattern, U value, int64_t nvec, int64_t n) {
  uint4 *v = (uint4 *)dst;
  for (int64_t i = first_index(); i < nvec; i += grid_stride()) v[i] = pattern;
  U *e = (U *)dst;
  for (int64_t i = nvec * (int64_t)(16 / sizeof(U)) + first_index(); i < n; i += grid_stride()) e[i] = value;
}

template <typename U>
void launch_fill(void *dst, uint64_t bits, int64_t n) {
  uint32_t w[4];
  hl_cuda_fill_pattern(bits, sizeof(U), w);
  const uint4 pattern = make_uint4(w[0], w[1], w[2], w[3]);
  const int64_t per = 16 / (int64_t)sizeof(U);
  const int64_t nvec = hl_cuda_aligned16(dst) ? n / per : 0;
  const int64_t work = nvec > n - nvec * per ? nvec : n - nvec * per;
  fill_kernel<U><<<grid_for(work, kBlock), kBlock, 0, hl_cuda_stream()>>>(dst, pattern, (U)bits, nvec, n);
  HL_CUDA_CHECK_LAUNCH();
}

/* ---------------------------------------------------------------- copy -- */

/* Float to float, rounded once: a double source rounds from double (as the
 * CPU's f64 -> f16/bf16 rounds once), others widen exactly to float first. */
template <hl_dtype SD, hl_dtype DD>
__device__ inline typename elt<DD>::S convert_float(typename elt<SD>::S v) {
  if constexpr (SD == HL_F64) {
    const double x = v;
    if constexpr (DD == HL_F64) return x;
    else if constexpr (DD == HL_F32) return (float)x;
    else if constexpr (DD == HL_F16) return hl_f64_to_f16(x);
    else return hl_f64_to_bf16(x);
  } else {
    const float x = elt<SD>::ld(v);
    if constexpr (DD == HL_F64) return (double)x;
    else return elt<DD>::st(x);
  }
}

/* contiguous, n elements: 8 per thread step through 16-byte vectors when
 * `vec` (both arrays 16-byte aligned), the rest one by one */
template <hl_dtype SD, hl_dtype DD>
__global__ void copy_convert_kernel(void *dst, const void *src, int64_t n, bool vec) {
  typedef typename elt<SD>::S SS;
  typedef typename elt<DD>::S DS;
  constexpr int kS = 8 * (int)sizeof(SS) / 16, kD = 8 * (int)sizeof(DS) / 16;
  const int64_t nv = vec ? n / 8 : 0;
  for (int64_t v = first_index(); v < nv; v += grid_stride()) {
    union {
      uint4 raw[kS];
      SS e[8];
    } in;
    union {
      uint4 raw[kD];
      DS e[8];
    } out;
#pragma unroll
    for (int k = 0; k < kS; k++) in.raw[k] = ((const uint4 *)src)[v * kS + k];
#pragma unroll
    for (int j = 0; j < 8; j++) out.e[j] = convert_float<SD, DD>(in.e[j]);
#pragma unroll
    for (int k = 0; k < kD; k++) ((uint4 *)dst)[v * kD + k] = out.raw[k];
  }
  for (int64_t i = nv * 8 + first_index(); i < n; i += grid_stride())
    ((DS *)dst)[i] = convert_float<SD, DD>(((const SS *)src)[i]);
}

/* strided float pair: operand 0 of g is dst, 1 is src */
template <hl_dtype SD, hl_dtype DD>
__global__ void copy_strided_kernel(const __grid_constant__ hl_cuda_geom g, void *dst, const void *src) {
  typedef typename elt<SD>::S SS;
  typedef typename elt<DD>::S DS;
  for (int64_t i = first_index(); i < g.total; i += grid_stride())
    ((DS *)dst)[hl_cuda_geom_offset(&g, 0, i)] = convert_float<SD, DD>(((const SS *)src)[hl_cuda_geom_offset(&g, 1, i)]);
}

/* same dtype, strided: the bits move unchanged (U: an unsigned type of the element's size) */
template <typename U>
__global__ void copy_bits_strided_kernel(const __grid_constant__ hl_cuda_geom g, U *dst, const U *src) {
  for (int64_t i = first_index(); i < g.total; i += grid_stride())
    dst[hl_cuda_geom_offset(&g, 0, i)] = src[hl_cuda_geom_offset(&g, 1, i)];
}

/* Any pair with an integer type: through double with tensor_math.h's
 * hl_load_as_f64/hl_store_from_f64, as the CPU does. */
__global__ void copy_generic_kernel(const __grid_constant__ hl_cuda_geom g, void *dst, hl_dtype dt, const void *src, hl_dtype st) {
  for (int64_t i = first_index(); i < g.total; i += grid_stride())
    hl_store_from_f64(dst, dt, hl_cuda_geom_offset(&g, 0, i), hl_load_as_f64(src, st, hl_cuda_geom_offset(&g, 1, i)));
}

/* -------------------------------------------------------------- random -- */

template <hl_dtype T>
__global__ void random_kernel(typename elt<T>::S *dst, int64_t n, bool uniform, double a, double b, float fa, float fb,
                              uint64_t seed, uint64_t stream) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const uint64_t k = (uint64_t)i;
    if constexpr (T == HL_F64) {
      dst[i] = uniform ? a + (b - a) * (double)hl_u32_to_unit_float(hl_philox_u32(seed, stream, k))
                       : a + b * hl_normal_from_words_f64(hl_philox_u32(seed, stream, 2 * k),
                                                          hl_philox_u32(seed, stream, 2 * k + 1));
    } else {
      const float v = uniform ? fa + (fb - fa) * hl_u32_to_unit_float(hl_philox_u32(seed, stream, k))
                              : fa + fb * hl_normal_from_words_f32(hl_philox_u32(seed, stream, 2 * k),
                                                                   hl_philox_u32(seed, stream, 2 * k + 1));
      dst[i] = elt<T>::st(v);
    }
  }
}

}  // namespace
}  // namespace hl_tc

using namespace hl_tc;

void hl_cuda_fill(void *dst, hl_dtype t, int64_t n, double value) {
  if (n <= 0 || (unsigned)t >= HL_TENSOR_DTYPES) return;
  const size_t es = hl_dtype_size(t);
  const uint64_t bits = hl_cuda_fill_bits(t, value);
  if (bits == 0 || es == 1) {
    HL_CUDA_CHECK(cudaMemsetAsync(dst, (int)(bits & 0xffu), (size_t)n * es, hl_cuda_stream()));
    return;
  }
  switch (es) {
    case 2: launch_fill<uint16_t>(dst, bits, n); break;
    case 4: launch_fill<uint32_t>(dst, bits, n); break;
    default: launch_fill<unsigned long long>(dst, bits, n); break;
  }
}

void hl_cuda_copy(const hl_kview *dst, const hl_kview *src, const int64_t size[HL_MAX_DIMS]) {
  const int64_t *strides[2] = {dst->stride, src->stride};
  const hl_cuda_geom g = hl_cuda_geom_make(size, strides, 2);
  if (g.total <= 0) return;
  const hl_dtype dt = dst->dtype, st = src->dtype;
  if (dt == st && dst->data == src->data && !memcmp(dst->stride, src->stride, sizeof dst->stride))
    return; /* the same view: nothing to move */
  const bool contiguous = hl_cuda_geom_contiguous(&g, 2);
  cudaStream_t s = hl_cuda_stream();
  if (contiguous && dt == st) {
    HL_CUDA_CHECK(cudaMemcpyAsync(dst->data, src->data, (size_t)g.total * hl_dtype_size(dt), cudaMemcpyDeviceToDevice, s));
    return;
  }
  if (dt == st) {
    const unsigned grid = grid_for(g.total, kBlock);
    switch (hl_dtype_size(dt)) {
      case 1: copy_bits_strided_kernel<uint8_t><<<grid, kBlock, 0, s>>>(g, (uint8_t *)dst->data, (const uint8_t *)src->data); break;
      case 2: copy_bits_strided_kernel<uint16_t><<<grid, kBlock, 0, s>>>(g, (uint16_t *)dst->data, (const uint16_t *)src->data); break;
      case 4: copy_bits_strided_kernel<uint32_t><<<grid, kBlock, 0, s>>>(g, (uint32_t *)dst->data, (const uint32_t *)src->data); break;
      default:
        copy_bits_strided_kernel<unsigned long long><<<grid, kBlock, 0, s>>>(g, (unsigned long long *)dst->data,
                                                                             (const unsigned long long *)src->data);
        break;
    }
    HL_CUDA_CHECK_LAUNCH();
    return;
  }
  if (hl_dtype_is_float(dt) && hl_dtype_is_float(st)) {
    with_float_dtype(st, [&](auto stag) {
      constexpr hl_dtype SD = decltype(stag)::value;
      with_float_dtype(dt, [&](auto dtag) {
        constexpr hl_dtype DD = decltype(dtag)::value;
        if (contiguous) {
          const bool vec = hl_cuda_aligned16(dst->data) && hl_cuda_aligned16(src->data);
          copy_convert_kernel<SD, DD><<<grid_for(vec ? g.total / 8 + 8 : g.total, kBlock), kBlock, 0, s>>>(
              dst->data, src->data, g.total, vec);
        } else {
          copy_strided_kernel<SD, DD><<<grid_for(g.total, kBlock), kBlock, 0, s>>>(g, dst->data, src->data);
        }
        HL_CUDA_CHECK_LAUNCH();
      });
    });
    return;
  }
  copy_generic_kernel<<<grid_for(g.total, kBlock), kBlock, 0, s>>>(g, dst->data, dt, src->data, st);
  HL_CUDA_CHECK_LAUNCH();
}

void hl_cuda_random(void *dst, hl_dtype t, int64_t n, hl_random_kind kind, double a, double b, uint64_t seed,
                    uint64_t stream) {
  if (n <= 0) return;
  with_float_dtype(t, [&](auto tag) {
    constexpr hl_dtype T = decltype(tag)::value;
    random_kernel<T><<<grid_for(n, kBlock), kBlock, 0, hl_cuda_stream()>>>(
        (typename elt<T>::S *)dst, n, kind == HL_RANDOM_UNIFORM, a, b, (float)a, (float)b, seed, stream);
    HL_CUDA_CHECK_LAUNCH();
  });
}

extern "C" const struct hl_tensor_kernels hl_cuda_tensor_kernels = HL_TENSOR_KERNEL_TABLE(hl_cuda_);
