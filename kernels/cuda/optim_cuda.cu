/* optim_cuda.cu — kernels/optim_kernels.h on the GPU.
 *
 * Multi-tensor apply as PyTorch does it: the tensor descriptors travel to
 * the kernel by value as kernel parameters (a batch of up to kBatch tensors
 * in the 4 KiB parameter space), so a call costs one launch per batch and no
 * copy of metadata, no host round trip. Every thread walks every tensor of
 * its batch with a grid-stride loop and applies the element bodies of
 * kernels/optim_math.h (the CPU backend's arithmetic, each f32 operation a
 * single rounding).
 *
 * Results that must stay on the device stay there: found_inf is set by any
 * block that saw a non-finite value, the scale update and the reciprocal run
 * as one-thread kernels, the absorbed count is one atomic add per block, and
 * the gradient norm is a block tree per batch into f64 partials, reduced by a
 * one-block kernel that also writes the clip coefficient. */
#include <stdint.h>
#include <string.h>

#include "kernels/backend.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/optim_kernels.h"
#include "kernels/optim_math.h"

namespace {

const unsigned kBlock = 256;
const unsigned kMaxGrid = 2048;

/* descriptors per launch: a batch must fit the 4 KiB of kernel parameters */
template <typename T>
struct batch_size {
  static const int value = (3584 / (int)sizeof(T)) < 64 ? (3584 / (int)sizeof(T)) : 64;
};

template <typename T>
struct batch {
  T item[batch_size<T>::value];
  int n;
};
static_assert(sizeof(batch<hl_grad_view>) + 64 <= 4096, "unscale batch exceeds the kernel parameter space");
static_assert(sizeof(batch<hl_optim_entry>) + 64 <= 4096, "optimizer batch exceeds the kernel parameter space");

__device__ inline int64_t first_index() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return (int64_t)gridDim.x * blockDim.x; }

/* grid for a batch of `elements` elements: enough blocks for 4 elements per
 * thread, at most kMaxGrid */
unsigned grid_for(int64_t elements) {
  int64_t g = (elements + kBlock * 4 - 1) / (kBlock * 4);
  if (g > kMaxGrid) g = kMaxGrid;
  return g < 1 ? 1u : (unsigned)g;
}

/* Calls launch(batch, elements) for consecutive batches of the n items. */
template <typename T, typename F>
void for_batches(const T *items, int n, int64_t (*numel)(const T &), F launch) {
  for (int first = 0; first < n; first += batch_size<T>::value) {
    batch<T> b;
    memset(&b, 0, sizeof b);
    b.n = n - first < batch_size<T>::value ? n - first : batch_size<T>::value;
    int64_t elements = 0;
    for (int i = 0; i < b.n; i++) {
      b.item[i] = items[first + i];
      elements += numel(b.item[i]);
    }
    if (elements > 0) launch(b, elements);
  }
}

int64_t view_numel(const hl_grad_view &v) { return v.numel; }
int64_t entry_numel(const hl_optim_entry &e) { return e.numel; }

/* ------------------------------------------------------------- scaler -- */

__global__ void unscale_kernel(batch<hl_grad_view> b, const float *inv_scale, float *found_inf) {
  const float inv = *inv_scale;
  int nonfinite = 0;
  for (int t = 0; t < b.n; t++) {
    const hl_grad_view v = b.item[t];
    for (int64_t i = first_index(); i < v.numel; i += grid_stride()) nonfinite |= hl_om_unscale_at(&v, i, inv);
  }
  if (__syncthreads_or(nonfinite) && threadIdx.x == 0) *found_inf = 1.0f;
}

__global__ void reciprocal_kernel(float *inv, const float *scale) { *inv = hl_om_reciprocal(*scale); }

__global__ void update_scale_kernel(float *scale, int32_t *tracker, const float *found_inf, uint64_t mask,
                                    double growth, double backoff, int32_t interval) {
  hl_om_update_scale(scale, tracker, hl_om_found_sum(found_inf, mask), growth, backoff, interval);
}

void cuda_unscale(const hl_grad_view *g, int n, const float *inv_scale, float *found_inf) {
  for_batches(g, n, view_numel, [&](const batch<hl_grad_view> &b, int64_t elements) {
    unscale_kernel<<<grid_for(elements), kBlock, 0, hl_cuda_stream()>>>(b, inv_scale, found_inf);
    HL_CUDA_CHECK_LAUNCH();
  });
}

void cuda_reciprocal(float *inv, const float *scale) {
  reciprocal_kernel<<<1, 1, 0, hl_cuda_stream()>>>(inv, scale);
  HL_CUDA_CHECK_LAUNCH();
}

void cuda_update_scale(float *scale, int32_t *tracker, const float *found_inf, uint64_t mask, double growth,
                       double backoff, int32_t interval) {
  update_scale_kernel<<<1, 1, 0, hl_cuda_stream()>>>(scale, tracker, found_inf, mask, growth, backoff, interval);
  HL_CUDA_CHECK_LAUNCH();
}

/* --------------------------------------------------------- optimizers -- */

/* the block's sum of per-thread counts, added once to *total */
__device__ void add_block_count(unsigned long long mine, uint64_t *total) {
  __shared__ unsigned long long part[kBlock / 32];
  for (int off = 16; off > 0; off >>= 1) mine += __shfl_down_sync(0xffffffffu, mine, off);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = mine;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long s = 0;
    for (unsigned w = 0; w < kBlock / 32; w++) s += part[w];
    if (s) atomicAdd((unsigned long long *)total, s);
  }
}

__global__ void sgd_kernel(batch<hl_optim_entry> b, hl_sgd_args a, uint64_t *absorbed) {
  unsigned long long still = 0;
  for (int t = 0; t < b.n; t++) {
    const hl_optim_entry e = b.item[t];
    for (int64_t i = first_index(); i < e.numel; i += grid_stride()) still += hl_om_sgd_at(&e, i, &a);
  }
  if (absorbed) add_block_count(still, absorbed);
}

__global__ void adamw_kernel(batch<hl_optim_entry> b, hl_adamw_args a, uint64_t *absorbed) {
  unsigned long long still = 0;
  for (int t = 0; t < b.n; t++) {
    const hl_optim_entry e = b.item[t];
    for (int64_t i = first_index(); i < e.numel; i += grid_stride()) still += hl_om_adamw_at(&e, i, &a);
  }
  if (absorbed) add_block_count(still, absorbed);
}

void cuda_sgd(const hl_optim_entry *e, int n, const hl_sgd_args *a, uint64_t *absorbed) {
  const hl_sgd_args args = *a;
  for_batches(e, n, entry_numel, [&](const batch<hl_optim_entry> &b, int64_t elements) {
    sgd_kernel<<<grid_for(elements), kBlock, 0, hl_cuda_stream()>>>(b, args, absorbed);
    HL_CUDA_CHECK_LAUNCH();
  });
}

void cuda_adamw(const hl_optim_entry *e, int n, const hl_adamw_args *a, uint64_t *absorbed) {
  const hl_adamw_args args = *a;
  for_batches(e, n, entry_numel, [&](const batch<hl_optim_entry> &b, int64_t elements) {
    adamw_kernel<<<grid_for(elements), kBlock, 0, hl_cuda_stream()>>>(b, args, absorbed);
    HL_CUDA_CHECK_LAUNCH();
  });
}

/* ----------------------------------------------------------- clipping -- */

/* combine the block's per-thread partials in a fixed tree */
__device__ double block_combine(double mine, int norm_type) {
  __shared__ double part[kBlock];
  part[threadIdx.x] = mine;
  __syncthreads();
  for (unsigned half = kBlock / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) part[threadIdx.x] = hl_om_norm_combine(part[threadIdx.x], part[threadIdx.x + half], norm_type);
    __syncthreads();
  }
  return part[0];
}

__global__ void norm_partial_kernel(batch<hl_grad_view> b, int norm_type, double *partial) {
  double acc = 0.0;
  for (int t = 0; t < b.n; t++) {
    const hl_grad_view v = b.item[t];
    for (int64_t i = first_index(); i < v.numel; i += grid_stride())
      acc = hl_om_norm_combine(acc, hl_om_norm_term(hl_om_src_value(&v, i), norm_type), norm_type);
  }
  double total = block_combine(acc, norm_type);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

__global__ void norm_finish_kernel(const double *partial, int64_t count, int norm_type, double max_norm, float *out) {
  double acc = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) acc = hl_om_norm_combine(acc, partial[k], norm_type);
  double total = block_combine(acc, norm_type);
  if (threadIdx.x == 0) hl_om_norm_finish(total, norm_type, max_norm, out);
}

size_t cuda_grad_norm_scratch(const hl_grad_view *g, int n) {
  size_t partials = 0;
  for_batches(g, n, view_numel, [&](const batch<hl_grad_view> &, int64_t elements) { partials += grid_for(elements); });
  return (partials ? partials : 1) * sizeof(double);
}

void cuda_grad_norm(const hl_grad_view *g, int n, int norm_type, double max_norm, void *scratch, float *out) {
  double *partial = (double *)scratch;
  int64_t count = 0;
  for_batches(g, n, view_numel, [&](const batch<hl_grad_view> &b, int64_t elements) {
    unsigned grid = grid_for(elements);
    norm_partial_kernel<<<grid, kBlock, 0, hl_cuda_stream()>>>(b, norm_type, partial + count);
    HL_CUDA_CHECK_LAUNCH();
    count += grid;
  });
  norm_finish_kernel<<<1, kBlock, 0, hl_cuda_stream()>>>(partial, count, norm_type, max_norm, out);
  HL_CUDA_CHECK_LAUNCH();
}

__global__ void scale_kernel(batch<hl_grad_view> b, const float *coef_p) {
  const float coef = *coef_p;
  for (int t = 0; t < b.n; t++) {
    const hl_grad_view v = b.item[t];
    for (int64_t i = first_index(); i < v.numel; i += grid_stride()) hl_om_scale_at(&v, i, coef);
  }
}

__global__ void clamp_kernel(batch<hl_grad_view> b, double limit) {
  for (int t = 0; t < b.n; t++) {
    const hl_grad_view v = b.item[t];
    for (int64_t i = first_index(); i < v.numel; i += grid_stride()) hl_om_clamp_at(&v, i, limit);
  }
}

void cuda_scale_grads(const hl_grad_view *g, int n, const float *coef) {
  for_batches(g, n, view_numel, [&](const batch<hl_grad_view> &b, int64_t elements) {
    scale_kernel<<<grid_for(elements), kBlock, 0, hl_cuda_stream()>>>(b, coef);
    HL_CUDA_CHECK_LAUNCH();
  });
}

void cuda_clamp_grads(const hl_grad_view *g, int n, double limit) {
  for_batches(g, n, view_numel, [&](const batch<hl_grad_view> &b, int64_t elements) {
    clamp_kernel<<<grid_for(elements), kBlock, 0, hl_cuda_stream()>>>(b, limit);
    HL_CUDA_CHECK_LAUNCH();
  });
}

} // namespace

extern "C" const struct hl_optim_kernels hl_cuda_optim_kernels = HL_OPTIM_KERNEL_TABLE(cuda_);
