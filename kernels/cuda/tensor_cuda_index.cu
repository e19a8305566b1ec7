/* tensor_cuda_index.cu — embedding lookup and its backward on the GPU. The
 * CPU twin is kernels/cpu/tensor_cpu_index.c.
 *
 *   embedding           one warp per index, the weight row moved as 16-byte
 *                       (or narrower, by alignment) units; an index outside
 *                       [0, vocab) gives a zero row and counts into *bad
 *                       (zeroed first, then one atomic add per bad index:
 *                       the entry sets the count).
 *   embedding_backward  deterministic, no floating-point atomics: the keys
 *                       (index << bits(n)) | position are sorted (CUB radix
 *                       sort), so equal indices lie together in position
 *                       order; one warp per run of equal indices sums the
 *                       gradient rows of its positions in that order, in the
 *                       accumulation type, and writes the weight row once.
 *                       That is the CPU's order of additions, so the result
 *                       has the CPU's bits. Rows no index hits are zero.
 * Sort keys and CUB's temporary storage live in the workspace. */
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/tensor_cuda.cuh"

namespace hl_tc {
namespace {

/* ----------------------------------------------------------- embedding -- */

template <typename U>
__global__ void embedding_kernel(U *out, const U *w, const int32_t *idx, int64_t n, int64_t units, int64_t vocab,
                                 int32_t *bad) {
  const int lane = threadIdx.x & 31;
  for (int64_t i = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5); i < n; i += (int64_t)gridDim.x * kWarps) {
    const int64_t v = idx[i];
    U *o = out + i * units;
    if (v < 0 || v >= vocab) {
      const U zero = U();
      for (int64_t u = lane; u < units; u += 32) o[u] = zero;
      if (lane == 0) atomicAdd(bad, 1);
    } else {
      const U *s = w + v * units;
      for (int64_t u = lane; u < units; u += 32) o[u] = s[u];
    }
  }
}

template <typename U>
void launch_embedding(void *out, const void *w, const int32_t *idx, int64_t n, int64_t row_bytes, int64_t vocab,
                      int32_t *bad) {
  embedding_kernel<U><<<grid_for(n, kWarps), kBlock, 0, hl_cuda_stream()>>>(
      (U *)out, (const U *)w, idx, n, row_bytes / (int64_t)sizeof(U), vocab, bad);
  HL_CUDA_CHECK_LAUNCH();
}

/* ------------------------------------------------- embedding backward -- */

int bits_for(uint64_t v) { /* bits to hold 0 .. v */
  int b = 0;
  while (b < 64 && (v >> b)) b++;
  return b;
}

/* key[i] = (index or vocab when out of range) << pos_bits | i */
__global__ void embedding_keys_kernel(uint64_t *keys, const int32_t *idx, int64_t n, int64_t vocab, int pos_bits) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t v = idx[i];
    const uint64_t row = (v < 0 || v >= vocab) ? (uint64_t)vocab : (uint64_t)v;
    keys[i] = row << pos_bits | (uint64_t)i;
  }
}

/* one warp per sorted position j that starts a run of equal rows: the run's
 * gradient rows summed in position order, written to the row once */
template <hl_dtype T>
__global__ void embedding_backward_kernel(typename elt<T>::S *dw, const typename elt<T>::S *dy, const uint64_t *keys,
                                          int64_t n, int64_t dim, int64_t vocab, int pos_bits) {
  typedef typename elt<T>::C C;
  const int lane = threadIdx.x & 31;
  const uint64_t pos_mask = pos_bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << pos_bits) - 1);
  for (int64_t j = (int64_t)blockIdx.x * kWarps + (threadIdx.x >> 5); j < n; j += (int64_t)gridDim.x * kWarps) {
    const uint64_t row = keys[j] >> pos_bits;
    if (row >= (uint64_t)vocab) continue;                  /* out-of-range indices sort last */
    if (j > 0 && (keys[j - 1] >> pos_bits) == row) continue; /* not the start of the run */
    typename elt<T>::S *dst = dw + (int64_t)row * dim;
    for (int64_t c = lane; c < dim; c += 32) {
      C acc = 0;
      for (int64_t e = j; e < n && (keys[e] >> pos_bits) == row; e++)
        acc += elt<T>::ld(dy[(int64_t)(keys[e] & pos_mask) * dim + c]);
      dst[c] = elt<T>::st(acc);
    }
  }
}

size_t align256(size_t b) { return (b + 255) & ~(size_t)255; }

}  // namespace
}  // namespace hl_tc

using namespace hl_tc;

void hl_cuda_embedding(hl_dtype t, void *out, const void *weight, const int32_t *idx, int64_t n, int64_t dim,
                       int64_t vocab, int32_t *bad) {
  cudaStream_t s = hl_cuda_stream();
  HL_CUDA_CHECK(cudaMemsetAsync(bad, 0, sizeof(int32_t), s));
  if (n <= 0 || dim <= 0) return;
  const int64_t row = dim * (int64_t)hl_dtype_size(t);
  const uintptr_t a = (uintptr_t)out | (uintptr_t)weight;
  if (row % 16 == 0 && a % 16 == 0) launch_embedding<uint4>(out, weight, idx, n, row, vocab, bad);
  else if (row % 8 == 0 && a % 8 == 0) launch_embedding<uint2>(out, weight, idx, n, row, vocab, bad);
  else if (row % 4 == 0 && a % 4 == 0) launch_embedding<uint32_t>(out, weight, idx, n, row, vocab, bad);
  else if (row % 2 == 0 && a % 2 == 0) launch_embedding<uint16_t>(out, weight, idx, n, row, vocab, bad);
  else launch_embedding<uint8_t>(out, weight, idx, n, row, vocab, bad);
}

void hl_cuda_embedding_backward(hl_dtype t, void *dweight, const void *dy, const int32_t *idx, int64_t n,
                                int64_t dim, int64_t vocab) {
  if (vocab <= 0 || dim <= 0) return;
  cudaStream_t s = hl_cuda_stream();
  HL_CUDA_CHECK(cudaMemsetAsync(dweight, 0, (size_t)(vocab * dim) * hl_dtype_size(t), s));
  if (n <= 0) return;
  const int pos_bits = bits_for((uint64_t)(n - 1)), row_bits = bits_for((uint64_t)vocab);
  if (n > 0x7fffffffll || pos_bits + row_bits > 64)
    hl_fatal("embedding_backward: more than 2^31 indices, or indices and vocabulary too large for 64-bit sort keys");
  /* workspace: keys in, keys out, CUB's temporary storage */
  size_t temp_bytes = 0;
  HL_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(NULL, temp_bytes, (const uint64_t *)NULL, (uint64_t *)NULL, (int)n, 0,
                                               pos_bits + row_bits, s));
  const size_t key_bytes = align256(sizeof(uint64_t) * (size_t)n);
  char *ws = (char *)workspace(2 * key_bytes + temp_bytes);
  uint64_t *keys_in = (uint64_t *)ws, *keys_out = (uint64_t *)(ws + key_bytes);
  void *temp = ws + 2 * key_bytes;
  embedding_keys_kernel<<<grid_for(n, kBlock), kBlock, 0, s>>>(keys_in, idx, n, vocab, pos_bits);
  HL_CUDA_CHECK_LAUNCH();
  HL_CUDA_CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, (const uint64_t *)keys_in, keys_out, (int)n, 0,
                                               pos_bits + row_bits, s));
  with_float_dtype(t, [&](auto tag) {
    constexpr hl_dtype T = decltype(tag)::value;
    typedef typename elt<T>::S S;
    embedding_backward_kernel<T><<<grid_for(n, kWarps), kBlock, 0, s>>>((S *)dweight, (const S *)dy, keys_out, n, dim,
                                                                        vocab, pos_bits);
    HL_CUDA_CHECK_LAUNCH();
  });
}
