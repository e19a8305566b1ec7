/* quantize_cuda.cu — the CUDA twin of kernels/quantize.h: one thread block
 * per quantization block (in turn, when there are more blocks than the grid
 * holds) finds the block's amax in shared memory and its scale by
 * kernels/quantize_math.h, as the CPU loops do, then rounds its elements;
 * the counts go to device counters by atomics. The tensor's own amax (the
 * tensor rule's and NVFP4's tensor scale) is found first and read back, so
 * that the host computes those scales by the same functions as the CPU. */
#include "formats/fatal.h"
#include "formats/philox.h"
#include "kernels/backend.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/quantize.h"
#include "kernels/quantize_math.h"

enum { THREADS = 256 };

/* Device counters: the tensor's amax (fp32 bits of a value >= 0 order as
 * integers), whether it held a NaN, and hl_quant_stats' counts. */
typedef struct {
  unsigned amax_bits;
  unsigned nan;
  unsigned long long zero_in, flushed_to_zero, subnormal, clipped, blocks_clipped;
} device_counts;

__global__ void tensor_amax_kernel(const float *x, size_t n, device_counts *counts) {
  float amax = 0.0f;
  bool nan = false;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float a = hl_f32_from_bits(hl_f32_bits(x[i]) & 0x7fffffffu);
    nan |= a != a;
    amax = a > amax ? a : amax;
  }
  atomicMax(&counts->amax_bits, hl_f32_bits(amax));
  if (nan) atomicOr(&counts->nan, 1u);
}

/* The largest |x[i]| (a NaN if one is NaN; 0 for n = 0), with counters dc
 * (device memory) zeroed first and left zero but for the amax. */
static float tensor_amax(const float *x, size_t n, device_counts *dc) {
  cudaStream_t stream = hl_cuda_stream();
  device_counts hc;
  HL_CUDA_CHECK(cudaMemsetAsync(dc, 0, sizeof *dc, stream));
  if (n) {
    tensor_amax_kernel<<<hl_cuda_grid(n, THREADS), THREADS, 0, stream>>>(x, n, dc);
    HL_CUDA_CHECK_LAUNCH();
  }
  HL_CUDA_CHECK(cudaMemcpyAsync(&hc, dc, sizeof hc, cudaMemcpyDeviceToHost, stream));
  HL_CUDA_CHECK(cudaStreamSynchronize(stream));
  HL_CUDA_CHECK(cudaMemsetAsync(dc, 0, sizeof *dc, stream));
  return hc.nan ? hl_f32_from_bits(0x7fc00000u) : hl_f32_from_bits(hc.amax_bits);
}

static float cuda_amax(const float *x, size_t n) {
  cudaStream_t stream = hl_cuda_stream();
  device_counts *dc;
  HL_CUDA_CHECK(cudaMallocAsync((void **)&dc, sizeof *dc, stream));
  const float amax = tensor_amax(x, n, dc);
  HL_CUDA_CHECK(cudaFreeAsync(dc, stream));
  return amax;
}

/* Where the quantization blocks lie: a grid of block_rows x block_cols
 * blocks; the tensor rule's one block is cut into rows here (its scale is
 * given, `fixed`), so that many thread blocks share it. */
typedef struct {
  size_t rows, cols, grid_rows, grid_cols, block_rows, block_cols;
  bool fixed;
  hl_block_scale fixed_scale;
  float tensor_scale;
} block_layout;

/* The largest |x| of one block over the thread block, NaN if one is NaN. */
__device__ static float block_amax(const float *x, const block_layout &L, size_t r0, size_t c0, size_t h, size_t w,
                                   float *shared) {
  float amax = 0.0f;
  bool nan = false;
  for (size_t j = threadIdx.x; j < h * w; j += blockDim.x) {
    const float a = hl_f32_from_bits(hl_f32_bits(x[(r0 + j / w) * L.cols + c0 + j % w]) & 0x7fffffffu);
    nan |= a != a;
    amax = a > amax ? a : amax;
  }
  shared[threadIdx.x] = amax;
  const bool any_nan = __syncthreads_or(nan);
  for (unsigned half = blockDim.x / 2; half; half /= 2) {
    if (threadIdx.x < half && shared[threadIdx.x + half] > shared[threadIdx.x])
      shared[threadIdx.x] = shared[threadIdx.x + half];
    __syncthreads();
  }
  const float result = any_nan ? hl_f32_from_bits(0x7fc00000u) : shared[0];
  __syncthreads(); /* shared[0] read by all before the next block writes it */
  return result;
}

__global__ void quantize_kernel(hl_quant_spec s, const float *x, block_layout L, uint8_t *codes, float *block_scales,
                                uint8_t *scale_codes, device_counts *counts) {
  __shared__ float shared[THREADS];
  unsigned long long zero_in = 0, flushed = 0, subnormal = 0, clipped = 0, blocks_clipped = 0;
  const bool stochastic = s.rounding == HL_ROUNDING_STOCHASTIC;
  for (size_t b = blockIdx.x; b < L.grid_rows * L.grid_cols; b += gridDim.x) {
    const size_t r0 = b / L.grid_cols * L.block_rows, c0 = b % L.grid_cols * L.block_cols;
    const size_t h = r0 + L.block_rows < L.rows ? L.block_rows : L.rows - r0;
    const size_t w = c0 + L.block_cols < L.cols ? L.block_cols : L.cols - c0;
    const hl_block_scale bs =
        L.fixed ? L.fixed_scale : hl_quant_block_scale(&s, block_amax(x, L, r0, c0, h, w, shared), L.tensor_scale);
    if (threadIdx.x == 0 && (!L.fixed || b == 0)) {
      block_scales[L.fixed ? 0 : b] = bs.decode;
      if (scale_codes) scale_codes[L.fixed ? 0 : b] = bs.code;
    }
    bool block_clipped = false;
    for (size_t j = threadIdx.x; j < h * w; j += blockDim.x) {
      const size_t i = (r0 + j / w) * L.cols + c0 + j % w;
      const uint32_t random = stochastic ? hl_philox_u32(s.seed, s.stream, i) : 0u;
      bool element_clipped;
      const uint8_t code = hl_quant_element_code(&s, bs, x[i], random, &element_clipped);
      codes[i] = code;
      const bool zero = x[i] == 0.0f;
      zero_in += zero;
      flushed += !zero && hl_quant_code_is_zero(s.element, code);
      subnormal += hl_quant_code_is_subnormal(s.element, code);
      clipped += element_clipped;
      block_clipped |= element_clipped;
    }
    if (__syncthreads_or(block_clipped) && threadIdx.x == 0) blocks_clipped++;
  }
  if (zero_in) atomicAdd(&counts->zero_in, zero_in);
  if (flushed) atomicAdd(&counts->flushed_to_zero, flushed);
  if (subnormal) atomicAdd(&counts->subnormal, subnormal);
  if (clipped) atomicAdd(&counts->clipped, clipped);
  if (blocks_clipped) atomicAdd(&counts->blocks_clipped, blocks_clipped);
}

static void cuda_quantize(const hl_quant_spec *s, const float *x, size_t rows, size_t cols, hl_quantized *q,
                          hl_quant_stats *stats) {
  if (!hl_quant_spec_valid(s))
    hl_fatal("quantize: not a quantization spec (rule %d, element %s)", (int)s->rule, hl_dtype_format_name(s->element));
  cudaStream_t stream = hl_cuda_stream();
  device_counts *dc, hc;
  HL_CUDA_CHECK(cudaMallocAsync((void **)&dc, sizeof *dc, stream));
  const size_t n = rows * cols;
  const float amax_all = tensor_amax(x, n, dc);

  block_layout L;
  L.rows = rows, L.cols = cols;
  hl_quant_block_grid(s, rows, cols, &L.grid_rows, &L.grid_cols);
  L.block_rows = s->rule == HL_SCALE_TENSOR ? rows : s->block_rows;
  L.block_cols = s->rule == HL_SCALE_TENSOR ? cols : s->block_cols;
  L.fixed = s->rule == HL_SCALE_TENSOR;
  L.fixed_scale.decode = L.fixed_scale.encode_factor = 1.0f, L.fixed_scale.divide = false, L.fixed_scale.code = 0;
  q->tensor_scale = s->rule == HL_SCALE_NVFP4 ? hl_quant_nvfp4_tensor_scale(amax_all) : 1.0f;
  q->encode_scale = 1.0f;
  if (L.fixed) { /* one block, the tensor, cut into its rows */
    q->encode_scale = hl_quant_tensor_encode_scale(s, hl_quant_tensor_amax_used(s, amax_all));
    L.fixed_scale.encode_factor = q->encode_scale;
    L.fixed_scale.decode = hl_div_rn(1.0f, q->encode_scale);
    L.grid_rows = rows, L.grid_cols = 1, L.block_rows = 1;
  }
  L.tensor_scale = q->tensor_scale;
  const size_t blocks = L.grid_rows * L.grid_cols;
  if (blocks && n) {
    quantize_kernel<<<(unsigned)(blocks < 65536 * 16 ? blocks : 65536 * 16), THREADS, 0, stream>>>(
        *s, x, L, q->codes, q->block_scales, q->scale_codes, dc);
    HL_CUDA_CHECK_LAUNCH();
  }
  HL_CUDA_CHECK(cudaMemcpyAsync(&hc, dc, sizeof hc, cudaMemcpyDeviceToHost, stream));
  HL_CUDA_CHECK(cudaFreeAsync(dc, stream));
  HL_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (stats) {
    size_t grid_rows, grid_cols;
    hl_quant_block_grid(s, rows, cols, &grid_rows, &grid_cols);
    stats->elements = (uint64_t)n;
    stats->blocks = (uint64_t)grid_rows * grid_cols;
    stats->zero_in = hc.zero_in;
    stats->flushed_to_zero = hc.flushed_to_zero;
    stats->subnormal = hc.subnormal;
    stats->clipped = hc.clipped;
    /* the tensor rule's one block was counted row by row */
    stats->blocks_clipped = L.fixed ? (hc.clipped > 0) : hc.blocks_clipped;
    stats->amax = amax_all;
  }
}

__global__ void dequantize_kernel(hl_dtype element, const uint8_t *codes, const float *block_scales, float tensor_scale,
                                  size_t rows, size_t cols, size_t block_rows, size_t block_cols, size_t grid_cols,
                                  float *y) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < rows * cols; i += (size_t)gridDim.x * blockDim.x) {
    const size_t r = i / cols, c = i % cols;
    y[i] = hl_quant_dequantize_one(element, codes[i], block_scales[r / block_rows * grid_cols + c / block_cols],
                                   tensor_scale);
  }
}

static void cuda_dequantize(const hl_quant_spec *s, const hl_quantized *q, size_t rows, size_t cols, float *y) {
  if (!hl_quant_spec_valid(s))
    hl_fatal("dequantize: not a quantization spec (rule %d, element %s)", (int)s->rule, hl_dtype_format_name(s->element));
  size_t grid_rows, grid_cols;
  hl_quant_block_grid(s, rows, cols, &grid_rows, &grid_cols);
  const size_t br = s->rule == HL_SCALE_TENSOR ? rows : s->block_rows, bc = s->rule == HL_SCALE_TENSOR ? cols : s->block_cols;
  if (!rows || !cols) return;
  dequantize_kernel<<<hl_cuda_grid(rows * cols, THREADS), THREADS, 0, hl_cuda_stream()>>>(
      s->element, q->codes, q->block_scales, q->tensor_scale, rows, cols, br, bc, grid_cols, y);
  HL_CUDA_CHECK_LAUNCH();
}

extern "C" const struct hl_quantize_kernels hl_cuda_quantize_kernels = {cuda_quantize, cuda_dequantize, cuda_amax};
