/* stream_cuda.cu — the bandwidth kernels of kernels/stream.h on the GPU.
 *
 * Each thread moves 16-byte vectors (four fp32 or eight fp16/bf16 values:
 * the widest load a thread can issue), widens them to fp32, applies the
 * bodies of kernels/stream_ops.h (the CPU backend's arithmetic, with the
 * product and the sum of triad rounded separately on both) and rounds back.
 * The grid covers the array once (BabelStream's one element per thread, here
 * one vector), a grid-stride loop taking over past 2^19 blocks. Arrays that
 * are not 16-byte aligned take the same kernels one element at a time.
 *
 * dot: SM count x 8 blocks of 256 threads stride through the array, each
 * thread summing fp32 products in an fp32 partial (at most a few thousand
 * terms for a 1 GiB array), each block reducing its threads' partials; the
 * per-block partials are summed in fp64 on the host, as BabelStream does. */
#include <stdint.h>
#include <string.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/stream.h"
#include "kernels/stream_ops.h"

namespace {

const unsigned kBlock = 256;

/* ------------------------------------------------ element access -- */
/* T is an hl_dtype; LANES values per 16-byte vector */
template <int T>
struct elem {
  static constexpr int lanes = T == HL_F32 ? 4 : 8;
  __device__ static float load(const void *p, size_t i) {
    if (T == HL_F32) return ((const float *)p)[i];
    uint16_t v = ((const uint16_t *)p)[i];
    return T == HL_F16 ? hl_f16_to_f32(v) : hl_bf16_to_f32(v);
  }
  __device__ static void store(void *p, size_t i, float x) {
    if (T == HL_F32) ((float *)p)[i] = x;
    else ((uint16_t *)p)[i] = T == HL_F16 ? hl_f32_to_f16(x) : hl_f32_to_bf16(x);
  }
  __device__ static void unpack(const uint4 &v, float *x) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    if (T == HL_F32) {
      for (int j = 0; j < 4; j++) x[j] = __uint_as_float(w[j]);
    } else {
      for (int j = 0; j < 4; j++) {
        const uint16_t lo = (uint16_t)(w[j] & 0xffffu), hi = (uint16_t)(w[j] >> 16);
        x[2 * j] = T == HL_F16 ? hl_f16_to_f32(lo) : hl_bf16_to_f32(lo);
        x[2 * j + 1] = T == HL_F16 ? hl_f16_to_f32(hi) : hl_bf16_to_f32(hi);
      }
    }
  }
  __device__ static uint4 pack(const float *x) {
    uint32_t w[4];
    if (T == HL_F32) {
      for (int j = 0; j < 4; j++) w[j] = __float_as_uint(x[j]);
    } else {
      for (int j = 0; j < 4; j++) {
        const uint32_t lo = T == HL_F16 ? hl_f32_to_f16(x[2 * j]) : hl_f32_to_bf16(x[2 * j]);
        const uint32_t hi = T == HL_F16 ? hl_f32_to_f16(x[2 * j + 1]) : hl_f32_to_bf16(x[2 * j + 1]);
        w[j] = lo | (hi << 16);
      }
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
};

__device__ inline size_t first_index() { return (size_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ inline size_t grid_stride() { return (size_t)gridDim.x * blockDim.x; }

/* ------------------------------------------------- vector kernels -- */
/* nvec whole vectors, then the n - nvec*lanes leftover elements */

template <int T>
__global__ void scale_vec(void *b, const void *c, float s, size_t n) {
  typedef elem<T> E;
  const size_t nvec = n / E::lanes;
  for (size_t v = first_index(); v < nvec; v += grid_stride()) {
    float x[8], o[8];
    E::unpack(((const uint4 *)c)[v], x);
    for (int j = 0; j < E::lanes; j++) o[j] = hl_stream_scale_op(s, x[j]);
    ((uint4 *)b)[v] = E::pack(o);
  }
  for (size_t i = nvec * E::lanes + first_index(); i < n; i += grid_stride()) E::store(b, i, hl_stream_scale_op(s, E::load(c, i)));
}

template <int T>
__global__ void add_vec(const void *a, const void *b, void *c, size_t n) {
  typedef elem<T> E;
  const size_t nvec = n / E::lanes;
  for (size_t v = first_index(); v < nvec; v += grid_stride()) {
    float x[8], y[8], o[8];
    E::unpack(((const uint4 *)a)[v], x);
    E::unpack(((const uint4 *)b)[v], y);
    for (int j = 0; j < E::lanes; j++) o[j] = hl_stream_add_op(x[j], y[j]);
    ((uint4 *)c)[v] = E::pack(o);
  }
  for (size_t i = nvec * E::lanes + first_index(); i < n; i += grid_stride())
    E::store(c, i, hl_stream_add_op(E::load(a, i), E::load(b, i)));
}

template <int T>
__global__ void triad_vec(void *a, const void *b, const void *c, float s, size_t n) {
  typedef elem<T> E;
  const size_t nvec = n / E::lanes;
  for (size_t v = first_index(); v < nvec; v += grid_stride()) {
    float x[8], y[8], o[8];
    E::unpack(((const uint4 *)b)[v], x);
    E::unpack(((const uint4 *)c)[v], y);
    for (int j = 0; j < E::lanes; j++) o[j] = hl_stream_triad_op(x[j], s, y[j]);
    ((uint4 *)a)[v] = E::pack(o);
  }
  for (size_t i = nvec * E::lanes + first_index(); i < n; i += grid_stride())
    E::store(a, i, hl_stream_triad_op(E::load(b, i), s, E::load(c, i)));
}

/* copy moves bits: 16-byte vectors for every type */
__global__ void copy_vec(const void *a, void *c, size_t bytes) {
  const size_t nvec = bytes / 16;
  for (size_t v = first_index(); v < nvec; v += grid_stride()) ((uint4 *)c)[v] = ((const uint4 *)a)[v];
  for (size_t i = nvec * 16 + first_index(); i < bytes; i += grid_stride()) ((uint8_t *)c)[i] = ((const uint8_t *)a)[i];
}

/* one element at a time, for arrays that are not 16-byte aligned */
template <int T>
__global__ void scale_one(void *b, const void *c, float s, size_t n) {
  for (size_t i = first_index(); i < n; i += grid_stride()) elem<T>::store(b, i, hl_stream_scale_op(s, elem<T>::load(c, i)));
}
template <int T>
__global__ void add_one(const void *a, const void *b, void *c, size_t n) {
  for (size_t i = first_index(); i < n; i += grid_stride())
    elem<T>::store(c, i, hl_stream_add_op(elem<T>::load(a, i), elem<T>::load(b, i)));
}
template <int T>
__global__ void triad_one(void *a, const void *b, const void *c, float s, size_t n) {
  for (size_t i = first_index(); i < n; i += grid_stride())
    elem<T>::store(a, i, hl_stream_triad_op(elem<T>::load(b, i), s, elem<T>::load(c, i)));
}
__global__ void copy_one(const void *a, void *c, size_t bytes) {
  for (size_t i = first_index(); i < bytes; i += grid_stride()) ((uint8_t *)c)[i] = ((const uint8_t *)a)[i];
}

template <int T>
__global__ void fill(void *p, size_t n, float v) {
  for (size_t i = first_index(); i < n; i += grid_stride()) elem<T>::store(p, i, v);
}

/* dot: per-thread fp32 partials, one fp32 sum per block into partial[blockIdx] */
template <int T, bool VEC>
__global__ void dot_kernel(const void *a, const void *b, size_t n, float *partial) {
  typedef elem<T> E;
  float sum = 0;
  size_t start = 0;
  if (VEC) {
    const size_t nvec = n / E::lanes;
    for (size_t v = first_index(); v < nvec; v += grid_stride()) {
      float x[8], y[8];
      E::unpack(((const uint4 *)a)[v], x);
      E::unpack(((const uint4 *)b)[v], y);
      for (int j = 0; j < E::lanes; j++) sum += hl_stream_dot_term(x[j], y[j]);
    }
    start = nvec * E::lanes;
  }
  for (size_t i = start + first_index(); i < n; i += grid_stride()) sum += hl_stream_dot_term(E::load(a, i), E::load(b, i));
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
  __shared__ float warp_sum[kBlock / 32];
  if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0;
    for (unsigned w = 0; w < kBlock / 32; w++) s += warp_sum[w];
    partial[blockIdx.x] = s;
  }
}

/* ------------------------------------------------------- launchers -- */

unsigned grid_for(size_t items) { return hl_cuda_grid(items, kBlock); }

/* dispatch on the runtime type to the template instance */
#define HL_BY_TYPE(t, KERNEL, GRID, ...)                                                    \
  do {                                                                                      \
    cudaStream_t s_ = hl_cuda_stream();                                                     \
    if ((t) == HL_F32) KERNEL<HL_F32><<<(GRID), kBlock, 0, s_>>>(__VA_ARGS__); \
    else if ((t) == HL_F16) KERNEL<HL_F16><<<(GRID), kBlock, 0, s_>>>(__VA_ARGS__); \
    else KERNEL<HL_BF16><<<(GRID), kBlock, 0, s_>>>(__VA_ARGS__);                    \
    HL_CUDA_CHECK_LAUNCH();                                                                 \
  } while (0)

size_t lanes(hl_dtype t) { return t == HL_F32 ? 4 : 8; }

void cuda_init(hl_dtype t, void *a, void *b, void *c, size_t n, float va, float vb, float vc) {
  if (n == 0) return;
  HL_BY_TYPE(t, fill, grid_for(n), a, n, va);
  HL_BY_TYPE(t, fill, grid_for(n), b, n, vb);
  HL_BY_TYPE(t, fill, grid_for(n), c, n, vc);
}

void cuda_copy(hl_dtype t, const void *a, void *c, size_t n) {
  const size_t bytes = n * hl_dtype_size(t);
  if (bytes == 0) return;
  if (hl_cuda_aligned16(a) && hl_cuda_aligned16(c)) copy_vec<<<grid_for((bytes + 15) / 16), kBlock, 0, hl_cuda_stream()>>>(a, c, bytes);
  else copy_one<<<grid_for(bytes), kBlock, 0, hl_cuda_stream()>>>(a, c, bytes);
  HL_CUDA_CHECK_LAUNCH();
}

void cuda_scale(hl_dtype t, void *b, const void *c, float s, size_t n) {
  if (n == 0) return;
  if (hl_cuda_aligned16(b) && hl_cuda_aligned16(c)) HL_BY_TYPE(t, scale_vec, grid_for((n + lanes(t) - 1) / lanes(t)), b, c, s, n);
  else HL_BY_TYPE(t, scale_one, grid_for(n), b, c, s, n);
}

void cuda_add(hl_dtype t, const void *a, const void *b, void *c, size_t n) {
  if (n == 0) return;
  if (hl_cuda_aligned16(a) && hl_cuda_aligned16(b) && hl_cuda_aligned16(c)) HL_BY_TYPE(t, add_vec, grid_for((n + lanes(t) - 1) / lanes(t)), a, b, c, n);
  else HL_BY_TYPE(t, add_one, grid_for(n), a, b, c, n);
}

void cuda_triad(hl_dtype t, void *a, const void *b, const void *c, float s, size_t n) {
  if (n == 0) return;
  if (hl_cuda_aligned16(a) && hl_cuda_aligned16(b) && hl_cuda_aligned16(c))
    HL_BY_TYPE(t, triad_vec, grid_for((n + lanes(t) - 1) / lanes(t)), a, b, c, s, n);
  else HL_BY_TYPE(t, triad_one, grid_for(n), a, b, c, s, n);
}

float *partial_dev_, *partial_host_;
unsigned partial_cap_;

double cuda_dot(hl_dtype t, const void *a, const void *b, size_t n) {
  if (n == 0) return 0.0;
  unsigned grid = (unsigned)hl_cuda_sm_count() * 8u;
  const unsigned needed = grid_for((n + lanes(t) - 1) / lanes(t));
  if (needed < grid) grid = needed;
  if (grid > partial_cap_) {
    if (partial_dev_) HL_CUDA_CHECK(cudaFree(partial_dev_));
    if (partial_host_) HL_CUDA_CHECK(cudaFreeHost(partial_host_));
    HL_CUDA_CHECK(cudaMalloc(&partial_dev_, grid * sizeof(float)));
    HL_CUDA_CHECK(cudaMallocHost(&partial_host_, grid * sizeof(float)));
    partial_cap_ = grid;
  }
  cudaStream_t s = hl_cuda_stream();
  const bool vec = hl_cuda_aligned16(a) && hl_cuda_aligned16(b);
#define HL_DOT(TY)                                                                                     \
  (vec ? dot_kernel<TY, true><<<grid, kBlock, 0, s>>>(a, b, n, partial_dev_)                          \
       : dot_kernel<TY, false><<<grid, kBlock, 0, s>>>(a, b, n, partial_dev_))
  if (t == HL_F32) HL_DOT(HL_F32);
  else if (t == HL_F16) HL_DOT(HL_F16);
  else HL_DOT(HL_BF16);
#undef HL_DOT
  HL_CUDA_CHECK_LAUNCH();
  HL_CUDA_CHECK(cudaMemcpyAsync(partial_host_, partial_dev_, grid * sizeof(float), cudaMemcpyDeviceToHost, s));
  HL_CUDA_CHECK(cudaStreamSynchronize(s));
  double sum = 0;
  for (unsigned i = 0; i < grid; i++) sum += partial_host_[i];
  return sum;
}

/* The reference copies: the driver's device-to-device copy, and a kernel of
 * 16-byte vector loads and stores (the copy kernel's code, for every type) */
const char *cuda_copy_ref_name(int which) {
  static const char *const names[2] = {"memcpy-d2d", "copy-kernel"};
  return which >= 0 && which < 2 ? names[which] : NULL;
}

void cuda_copy_ref(int which, void *dst, const void *src, size_t bytes) {
  if (which == 0) HL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, hl_cuda_stream()));
  else cuda_copy(HL_I8, src, dst, bytes); /* one-byte elements: bytes of them */
}

void *cuda_host_alloc_pinned(size_t bytes) {
  void *p = NULL;
  cudaError_t e = cudaMallocHost(&p, bytes ? bytes : 1);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return NULL;
  }
  HL_CUDA_CHECK(e);
  return p;
}

void cuda_host_free_pinned(void *p) {
  if (p) HL_CUDA_CHECK(cudaFreeHost(p));
}

}  // namespace

extern "C" const struct hl_stream_kernels hl_cuda_stream_kernels = {
    cuda_init, cuda_copy, cuda_scale, cuda_add, cuda_triad, cuda_dot, cuda_copy_ref_name, cuda_copy_ref, cuda_host_alloc_pinned,
    cuda_host_free_pinned,
};
