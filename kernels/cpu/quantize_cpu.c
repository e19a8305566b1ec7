/* quantize_cpu.c — the CPU twin of kernels/quantize.h: a block's amax, its
 * scale and its elements' codes by kernels/quantize_math.h, blocks shared
 * among the OpenMP threads. A block's values are read twice (amax, then
 * codes) while they are still in the cache. */
#include <stddef.h>
#include <stdint.h>

#include "formats/fatal.h"
#include "formats/philox.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/quantize.h"
#include "kernels/quantize_math.h"

/* The largest |x| of rows r0..r1 x cols c0..c1, NaN if one is NaN. */
static float block_amax(const float *x, size_t cols, size_t r0, size_t r1, size_t c0, size_t c1) {
  float amax = 0.0f;
  bool nan = false;
  for (size_t r = r0; r < r1; r++)
    for (size_t c = c0; c < c1; c++) {
      const float a = hl_f32_from_bits(hl_f32_bits(x[r * cols + c]) & 0x7fffffffu);
      nan |= a != a;
      amax = a > amax ? a : amax;
    }
  return nan ? hl_f32_from_bits(0x7fc00000u) : amax;
}

static float tensor_amax(const float *x, size_t n) {
  float amax = 0.0f;
  int nan = 0;
#pragma omp parallel for schedule(static) reduction(max : amax) reduction(| : nan)
  for (size_t i = 0; i < n; i++) {
    const float a = hl_f32_from_bits(hl_f32_bits(x[i]) & 0x7fffffffu);
    nan |= a != a;
    amax = a > amax ? a : amax;
  }
  return nan ? hl_f32_from_bits(0x7fc00000u) : amax;
}

/* Counts over one block, added to the totals by the caller. */
typedef struct {
  uint64_t zero_in, flushed_to_zero, subnormal, clipped;
  bool block_clipped;
} block_counts;

static block_counts quantize_block(const hl_quant_spec *s, hl_block_scale bs, const float *x, uint8_t *codes,
                                   size_t cols, size_t r0, size_t r1, size_t c0, size_t c1) {
  block_counts n = {0, 0, 0, 0, false};
  const bool stochastic = s->rounding == HL_ROUNDING_STOCHASTIC;
  for (size_t r = r0; r < r1; r++)
    for (size_t c = c0; c < c1; c++) {
      const size_t i = r * cols + c;
      const uint32_t random = stochastic ? hl_philox_u32(s->seed, s->stream, i) : 0u;
      bool clipped;
      const uint8_t code = hl_quant_element_code(s, bs, x[i], random, &clipped);
      codes[i] = code;
      const bool zero_in = x[i] == 0.0f;
      n.zero_in += zero_in;
      n.flushed_to_zero += !zero_in && hl_quant_code_is_zero(s->element, code);
      n.subnormal += hl_quant_code_is_subnormal(s->element, code);
      n.clipped += clipped;
      n.block_clipped |= clipped;
    }
  return n;
}

static void cpu_quantize(const hl_quant_spec *s, const float *x, size_t rows, size_t cols, hl_quantized *q,
                         hl_quant_stats *stats) {
  if (!hl_quant_spec_valid(s)) hl_fatal("quantize: not a quantization spec (rule %d, element %s)", (int)s->rule,
                                        hl_dtype_format_name(s->element));
  size_t grid_rows, grid_cols;
  hl_quant_block_grid(s, rows, cols, &grid_rows, &grid_cols);
  const size_t br = s->rule == HL_SCALE_TENSOR ? rows : s->block_rows, bc = s->rule == HL_SCALE_TENSOR ? cols : s->block_cols;
  const float amax_all = tensor_amax(x, rows * cols);
  q->tensor_scale = 1.0f;
  q->encode_scale = 1.0f;
  if (s->rule == HL_SCALE_NVFP4) q->tensor_scale = hl_quant_nvfp4_tensor_scale(amax_all);
  hl_block_scale tensor_bs = {1.0f, 1.0f, false, 0};
  if (s->rule == HL_SCALE_TENSOR) {
    q->encode_scale = hl_quant_tensor_encode_scale(s, hl_quant_tensor_amax_used(s, amax_all));
    tensor_bs.encode_factor = q->encode_scale;
    tensor_bs.decode = hl_div_rn(1.0f, q->encode_scale);
  }
  uint64_t zero_in = 0, flushed = 0, subnormal = 0, clipped = 0, blocks_clipped = 0;
  const float tensor_scale = q->tensor_scale;
#pragma omp parallel for schedule(static) reduction(+ : zero_in, flushed, subnormal, clipped, blocks_clipped)
  for (size_t b = 0; b < grid_rows * grid_cols; b++) {
    const size_t r0 = b / grid_cols * br, c0 = b % grid_cols * bc;
    const size_t r1 = r0 + br < rows ? r0 + br : rows, c1 = c0 + bc < cols ? c0 + bc : cols;
    const hl_block_scale bs = s->rule == HL_SCALE_TENSOR
                                  ? tensor_bs
                                  : hl_quant_block_scale(s, block_amax(x, cols, r0, r1, c0, c1), tensor_scale);
    q->block_scales[b] = bs.decode;
    if (q->scale_codes) q->scale_codes[b] = bs.code;
    const block_counts n = quantize_block(s, bs, x, q->codes, cols, r0, r1, c0, c1);
    zero_in += n.zero_in, flushed += n.flushed_to_zero, subnormal += n.subnormal, clipped += n.clipped;
    blocks_clipped += n.block_clipped;
  }
  if (stats) {
    stats->elements = (uint64_t)rows * cols;
    stats->blocks = (uint64_t)grid_rows * grid_cols;
    stats->zero_in = zero_in;
    stats->flushed_to_zero = flushed;
    stats->subnormal = subnormal;
    stats->clipped = clipped;
    stats->blocks_clipped = blocks_clipped;
    stats->amax = amax_all;
  }
}

static void cpu_dequantize(const hl_quant_spec *s, const hl_quantized *q, size_t rows, size_t cols, float *y) {
  if (!hl_quant_spec_valid(s)) hl_fatal("dequantize: not a quantization spec (rule %d, element %s)", (int)s->rule,
                                        hl_dtype_format_name(s->element));
  size_t grid_rows, grid_cols;
  hl_quant_block_grid(s, rows, cols, &grid_rows, &grid_cols);
  const size_t br = s->rule == HL_SCALE_TENSOR ? rows : s->block_rows, bc = s->rule == HL_SCALE_TENSOR ? cols : s->block_cols;
#pragma omp parallel for schedule(static)
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) {
      const float block_scale = q->block_scales[r / br * grid_cols + c / bc];
      y[r * cols + c] = hl_quant_dequantize_one(s->element, q->codes[r * cols + c], block_scale, q->tensor_scale);
    }
}

const struct hl_quantize_kernels hl_cpu_quantize_kernels = {cpu_quantize, cpu_dequantize};
