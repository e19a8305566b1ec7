/* quantize.h — block-scaled quantizers: an fp32 matrix to codes of a narrow
 * element format (fp8, fp6, fp4) and one scale per block, the way the
 * low-precision recipes store a GEMM's operands:
 *
 *   rule            element      block           scale                         source
 *   tensor          e4m3, e5m2   whole tensor    fp32: (max / amax) / 2^margin Transformer Engine
 *   block-fp32      e4m3         1x128, 128x128  fp32: amax / max              DeepSeek-V3
 *   block-pow2      e4m3         1x128, 128x128  2^ceil(log2(amax / max))      DeepSeek-V3's power-of-two option
 *   mx-floor        any          1x32            E8M0 2^(floor(log2 amax) - emax)  OCP MX v1.0
 *   mx-rceil        any          1x32            E8M0 2^ceil(log2(amax / max))     cuBLAS, Transformer Engine
 *   nvfp4           e2m1         1x16            E4M3 of amax / 6 / tensor scale, NVIDIA NVFP4
 *                                                and an fp32 tensor scale amax_tensor / (448 * 6)
 *
 * (max: the element format's largest finite value; emax: its exponent.)
 * A block is block_rows x block_cols of a row-major rows x cols matrix: 1x32
 * runs along a row (a GEMM's A operand, reduced over its columns), 32x1 down a
 * column (B, reduced over its rows). Blocks at the matrix's right and bottom
 * edges hold what is left. The exact arithmetic of each rule, written once
 * for both backends, is kernels/quantize_math.h; docs/numerics.md gives its
 * sources.
 *
 * Every pointer is the backend's memory but the stats, which are host memory. */
#ifndef HL_QUANTIZE_H
#define HL_QUANTIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/dtype.h"
#include "formats/round.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  HL_SCALE_TENSOR = 0, /* one fp32 scale for the tensor */
  HL_SCALE_BLOCK_FP32, /* one fp32 scale per block */
  HL_SCALE_BLOCK_POW2, /* one power-of-two fp32 scale per block */
  HL_SCALE_MX_FLOOR,   /* E8M0 per block, OCP's rule: the block maximum may clip */
  HL_SCALE_MX_RCEIL,   /* E8M0 per block, rounded up: nothing clips */
  HL_SCALE_NVFP4,      /* E4M3 per block and an fp32 per tensor */
  HL_SCALE_RULES
} hl_scale_rule;

/* "tensor", "block-fp32", "block-pow2", "mx-floor", "mx-rceil", "nvfp4" */
static inline const char *hl_scale_rule_name(hl_scale_rule r) {
  static const char *const names[HL_SCALE_RULES] = {"tensor",   "block-fp32", "block-pow2",
                                                    "mx-floor", "mx-rceil",   "nvfp4"};
  return (unsigned)r < HL_SCALE_RULES ? names[r] : "?";
}

typedef struct {
  hl_dtype element;    /* e4m3, e5m2, e2m3, e3m2 or e2m1 */
  hl_scale_rule rule;
  uint32_t block_rows; /* tensor rule: ignored (the whole matrix) */
  uint32_t block_cols;
  /* the elements' rounding: nearest-even or stochastic, always saturating
   * (a recipe clips, it never makes inf or NaN of a finite value); element i
   * of the row-major matrix takes word i of Philox stream `stream` under `seed` */
  hl_rounding rounding;
  uint8_t random_bits;
  uint64_t seed, stream;
  /* tensor rule only: TE's margin, and the amax to scale by: < 0, the
   * tensor's own (current scaling); otherwise a given one (delayed scaling's
   * history). An amax of 0, inf or NaN keeps `previous_scale` (TE: the last
   * step's); a scale past fp32's range is fp32's largest. */
  int margin;
  float tensor_amax;
  float previous_scale;
} hl_quant_spec;

/* A spec with the rule's usual block (tensor: whole; block-fp32/pow2: 1x128;
 * mx: 1x32; nvfp4: 1x16), nearest-even elements, margin 0, the tensor's own
 * amax and a previous scale of 1. */
static inline hl_quant_spec hl_quant_spec_make(hl_dtype element, hl_scale_rule rule) {
  hl_quant_spec s;
  s.element = element;
  s.rule = rule;
  s.block_rows = 1;
  s.block_cols = rule == HL_SCALE_TENSOR ? 0 : rule == HL_SCALE_NVFP4 ? 16 : rule <= HL_SCALE_BLOCK_POW2 ? 128 : 32;
  s.rounding = HL_ROUNDING_NEAREST_EVEN;
  s.random_bits = 32;
  s.seed = 0;
  s.stream = 0;
  s.margin = 0;
  s.tensor_amax = -1.0f;
  s.previous_scale = 1.0f;
  return s;
}

/* Whether s is a quantization this header defines: an element format
 * (nvfp4: e2m1 only), blocks of at least one element, nearest-even or
 * stochastic elements (1 to 32 random bits), a margin of -126..126. The
 * kernels refuse any other spec (hl_fatal). */
static inline bool hl_quant_spec_valid(const hl_quant_spec *s) {
  const bool element = s->element == HL_E4M3 || s->element == HL_E5M2 || s->element == HL_E2M3 ||
                       s->element == HL_E3M2 || s->element == HL_E2M1;
  const bool blocks = s->rule == HL_SCALE_TENSOR || (s->block_rows >= 1 && s->block_cols >= 1);
  const bool rounding = s->rounding == HL_ROUNDING_NEAREST_EVEN ||
                        (s->rounding == HL_ROUNDING_STOCHASTIC && s->random_bits >= 1 && s->random_bits <= 32);
  return element && (unsigned)s->rule < HL_SCALE_RULES && blocks && rounding &&
         (s->rule != HL_SCALE_NVFP4 || s->element == HL_E2M1) && s->margin >= -126 && s->margin <= 126;
}

/* The spec's blocks along rows and columns of a rows x cols matrix (1 x 1 for the tensor rule). */
static inline void hl_quant_block_grid(const hl_quant_spec *s, size_t rows, size_t cols, size_t *block_grid_rows,
                                       size_t *block_grid_cols) {
  const size_t br = s->rule == HL_SCALE_TENSOR || !s->block_rows ? rows : s->block_rows;
  const size_t bc = s->rule == HL_SCALE_TENSOR || !s->block_cols ? cols : s->block_cols;
  *block_grid_rows = br ? (rows + br - 1) / br : 0;
  *block_grid_cols = bc ? (cols + bc - 1) / bc : 0;
}

/* What a quantization made. codes: rows x cols element codes, row-major,
 * one per byte (fp6 and fp4 unpacked, right-aligned). block_scales: per
 * block, row-major over the block grid, the fp32 value a code is multiplied
 * by (with tensor_scale) to decode it. scale_codes (may be NULL): the
 * E8M0 (mx) or E4M3 (nvfp4) code of each block scale; the other rules have
 * none. tensor_scale (out): nvfp4's per-tensor decode scale, 1 for the other
 * rules. encode_scale (out): the tensor rule's scale (TE's `scale`; the codes
 * are x * scale rounded, its block scale is 1 / scale), which the next
 * step keeps when its amax is 0, inf or NaN; 1 for the other rules. */
typedef struct {
  uint8_t *codes;
  float *block_scales;
  uint8_t *scale_codes;
  float tensor_scale;
  float encode_scale;
} hl_quantized;

/* What the quantization did to the tensor, counted over its elements and blocks. */
typedef struct {
  uint64_t elements, blocks;
  uint64_t zero_in;           /* elements that were +-0 */
  uint64_t flushed_to_zero;   /* non-zero elements whose code is a zero */
  uint64_t subnormal;         /* elements whose code is subnormal in the element format */
  uint64_t clipped;           /* elements whose |x| / scale exceeded the element's max (saturated) */
  uint64_t blocks_clipped;    /* blocks whose maximum was clipped */
  float amax;                 /* the tensor's largest |x| (NaN if it held one) */
} hl_quant_stats;

struct hl_quantize_kernels {
  /* x (rows x cols fp32) quantized by spec into q's buffers (sized by
   * hl_quant_block_grid); stats (host, may be NULL) filled. */
  void (*quantize)(const hl_quant_spec *spec, const float *x, size_t rows, size_t cols, hl_quantized *q,
                   hl_quant_stats *stats);
  /* y = the values q holds: decode(code) * block scale * tensor scale. */
  void (*dequantize)(const hl_quant_spec *spec, const hl_quantized *q, size_t rows, size_t cols, float *y);
  /* The largest |x[i]|, i < n (a NaN if one is NaN; 0 for n = 0): the pass
   * over the whole tensor that the tensor rule (with its own amax) and
   * nvfp4 make before their codes. May be NULL (not built). */
  float (*amax)(const float *x, size_t n);
};

#ifdef __cplusplus
}
#endif

#endif /* HL_QUANTIZE_H */
