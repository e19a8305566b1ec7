/* quantize_math.h — the arithmetic of kernels/quantize.h's rules, written
 * once: the CPU loops (kernels/cpu/quantize_cpu.c) and the CUDA kernels
 * (kernels/cuda/quantize_cuda.cu) call these HL_HD functions, so the gpu
 * suite can ask for the same codes and scales bit for bit.
 *
 * Every fp32 operation here is one correctly rounded operation
 * (kernels/round_ops.h), so neither compiler can contract or reorder it.
 * Power-of-two scales are applied by multiplying by their exact reciprocal,
 * which gives the same result as dividing. */
#ifndef HL_QUANTIZE_MATH_H
#define HL_QUANTIZE_MATH_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/half.h"
#include "formats/round.h"
#include "kernels/quantize.h"
#include "kernels/round_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The element format's largest finite value and its exponent (the largest
 * power of two it holds): e4m3 448 (2^8), e5m2 57344 (2^15), e2m3 7.5 (2^2),
 * e3m2 28 (2^4), e2m1 6 (2^2); 0 for a type that is no element format. */
HL_HD static inline float hl_quant_element_max(hl_dtype e) {
  switch (e) {
    case HL_E4M3: return 448.0f;
    case HL_E5M2: return 57344.0f;
    case HL_E2M3: return 7.5f;
    case HL_E3M2: return 28.0f;
    case HL_E2M1: return 6.0f;
    default: return 0.0f;
  }
}

HL_HD static inline int hl_quant_element_emax(hl_dtype e) {
  switch (e) {
    case HL_E4M3: return 8;
    case HL_E5M2: return 15;
    case HL_E2M3: return 2;
    case HL_E3M2: return 4;
    case HL_E2M1: return 2;
    default: return 0;
  }
}

/* 2^k exactly, for -149 <= k <= 127 (subnormal below -126). */
HL_HD static inline float hl_pow2f(int k) {
  return hl_f32_from_bits(k >= -126 ? (uint32_t)(k + 127) << 23 : UINT32_C(1) << (k + 149));
}

/* floor(log2 a) of a finite a > 0, exactly (fp32 subnormals included). */
HL_HD static inline int hl_floor_log2f(float a) {
  const uint32_t b = hl_f32_bits(a) & 0x7fffffffu;
  if (b >> 23) return (int)(b >> 23) - 127;
  int k = -127; /* a subnormal: m 2^-149, the top set bit of m decides */
  for (uint32_t m = b; !(m & 0x00400000u); m <<= 1) k--;
  return k;
}

/* ceil(log2 d) of a finite d > 0, exactly: floor, plus one unless d is a power of two. */
HL_HD static inline int hl_ceil_log2f(float d) {
  const uint32_t b = hl_f32_bits(d) & 0x7fffffffu;
  const int k = hl_floor_log2f(d);
  const bool power_of_two = b >> 23 ? !(b & 0x007fffffu) : !(b & (b - 1u));
  return power_of_two ? k : k + 1;
}

HL_HD static inline bool hl_quant_finite(float x) { return (hl_f32_bits(x) & 0x7fffffffu) < 0x7f800000u; }

/* A block's scale: `decode` multiplies an element's value back (with the
 * tensor scale), `code` is its E8M0 or E4M3 code (mx, nvfp4), and an
 * element's scaled value is x * encode_factor, or x / encode_factor where
 * `divide` (block-fp32: DeepSeek-V3 divides by its fp32 scale). */
typedef struct {
  float decode;
  float encode_factor;
  bool divide;
  uint8_t code;
} hl_block_scale;

/* The E8M0 code of 2^k, k clamped to E8M0's -127..127. */
HL_HD static inline uint8_t hl_e8m0_code_of_exponent(int k) {
  return (uint8_t)((k < -127 ? -127 : k > 127 ? 127 : k) + 127);
}

/* MX: from the block's amax (NaN: the scale is E8M0's NaN, 0xff; 0 and
 * fp32 subnormals below every scale: code 0). FLOOR (OCP MX v1.0, 6.3):
 * 2^(floor(log2 amax) - emax); RCEIL: 2^ceil(log2(amax / max)), amax / max
 * rounded once in fp32 (as cuBLAS and Transformer Engine compute it). */
HL_HD static inline hl_block_scale hl_quant_mx_scale(const hl_quant_spec *s, float amax) {
  hl_block_scale bs;
  bs.divide = false;
  if (!(amax == amax)) {
    bs.code = 0xffu;
    bs.decode = bs.encode_factor = hl_f32_from_bits(0x7fc00000u);
    return bs;
  }
  int k;
  if (s->rule == HL_SCALE_MX_FLOOR) {
    k = amax > 0.0f && hl_quant_finite(amax) ? hl_floor_log2f(amax) - hl_quant_element_emax(s->element)
        : amax > 0.0f                        ? 128 - hl_quant_element_emax(s->element) /* inf: exponent field 255 */
                                             : -127;
  } else {
    const float descale = hl_div_rn(amax, hl_quant_element_max(s->element));
    k = descale > 0.0f && hl_quant_finite(descale) ? hl_ceil_log2f(descale) : descale > 0.0f ? 127 : -127;
  }
  bs.code = hl_e8m0_code_of_exponent(k);
  bs.decode = hl_pow2f((int)bs.code - 127);
  bs.encode_factor = hl_pow2f(127 - (int)bs.code);
  return bs;
}

/* NVFP4's per-tensor decode scale: amax_tensor / (448 * 6), so that the
 * largest block scale lands at E4M3's 448; 1 where that is not a positive
 * normal fp32 number (an all-zero, infinite or NaN tensor). */
HL_HD static inline float hl_quant_nvfp4_tensor_scale(float amax_tensor) {
  const float t = hl_div_rn(amax_tensor, 2688.0f);
  return hl_quant_finite(t) && t >= 0x1p-126f ? t : 1.0f;
}

/* NVFP4's block scale: amax / 6 / tensor_scale, clamped to E4M3's normal
 * range [2^-6, 448] and rounded to nearest even in E4M3; elements are scaled
 * by (1 / tensor_scale) / that (NVIDIA's two-level scaling, as torchao
 * computes it). */
HL_HD static inline hl_block_scale hl_quant_nvfp4_scale(float amax, float tensor_scale) {
  hl_block_scale bs;
  bs.divide = false;
  float t = hl_div_rn(hl_div_rn(amax, 6.0f), tensor_scale);
  if (t == t) t = t < 0x1p-6f ? 0x1p-6f : t > 448.0f ? 448.0f : t;
  const hl_round_spec e4m3 = hl_round_spec_make(HL_E4M3, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_SATURATE, false);
  bs.code = (uint8_t)hl_round_bits_generic(&e4m3, t, 0);
  bs.decode = hl_round_decode(HL_E4M3, bs.code);
  bs.encode_factor = hl_div_rn(hl_div_rn(1.0f, tensor_scale), bs.decode);
  return bs;
}

/* The amax the tensor rule scales by: the spec's given one (delayed
 * scaling's history; NaN included, which keeps the previous scale), or the
 * tensor's own where the spec's is negative. */
HL_HD static inline float hl_quant_tensor_amax_used(const hl_quant_spec *s, float own_amax) {
  return s->tensor_amax < 0.0f ? own_amax : s->tensor_amax;
}

/* Transformer Engine's per-tensor scale: (max / amax) / 2^margin, or the
 * previous scale where amax is 0, inf or NaN; a scale that overflows fp32
 * (a tiny amax) is fp32's largest, as Transformer Engine clamps it (an
 * infinite scale would make 0 * inf = NaN of the tensor's zeros). */
HL_HD static inline float hl_quant_tensor_encode_scale(const hl_quant_spec *s, float amax) {
  if (!(amax > 0.0f) || !hl_quant_finite(amax)) return s->previous_scale;
  const float scale = hl_div_rn(hl_div_rn(hl_quant_element_max(s->element), amax), hl_pow2f(s->margin));
  return hl_quant_finite(scale) ? scale : 0x1.fffffep127f;
}

/* The scale of one block of the rules with per-block scales (block-fp32,
 * block-pow2, mx-floor, mx-rceil, nvfp4), from its amax. */
HL_HD static inline hl_block_scale hl_quant_block_scale(const hl_quant_spec *s, float amax, float tensor_scale) {
  hl_block_scale bs;
  bs.code = 0;
  bs.divide = false;
  switch (s->rule) {
    case HL_SCALE_MX_FLOOR:
    case HL_SCALE_MX_RCEIL: return hl_quant_mx_scale(s, amax);
    case HL_SCALE_NVFP4: return hl_quant_nvfp4_scale(amax, tensor_scale);
    case HL_SCALE_BLOCK_POW2: {
      const float descale = hl_div_rn(amax, hl_quant_element_max(s->element));
      int k = descale > 0.0f && hl_quant_finite(descale) ? hl_ceil_log2f(descale) : 0;
      k = k < -126 ? -126 : k > 127 ? 127 : k;
      bs.decode = hl_pow2f(k);
      bs.encode_factor = hl_pow2f(-k);
      if (!(amax == amax)) bs.decode = bs.encode_factor = amax;
      return bs;
    }
    default: { /* block-fp32: amax / max; 1 where that is 0 (a block of zeros,
                  or an amax too small: 0 / 0 would be NaN) or inf (inf / inf
                  would be NaN), as block-pow2; NaN stays NaN */
      const float descale = hl_div_rn(amax, hl_quant_element_max(s->element));
      const bool usable = (descale > 0.0f && hl_quant_finite(descale)) || descale != descale;
      bs.decode = bs.encode_factor = usable ? descale : 1.0f;
      bs.divide = true;
      return bs;
    }
  }
}

/* The element code of x under block scale bs (saturating; stochastic specs
 * use `random`), and whether |x| scaled passed the element's max. A NaN x
 * keeps its own NaN (its sign is the code's) even where the scale is a NaN
 * too: which NaN a product of two returns depends on the order the compiler
 * gives its operands on x86, and the GPU returns its canonical one. */
HL_HD static inline uint8_t hl_quant_element_code(const hl_quant_spec *s, hl_block_scale bs, float x, uint32_t random,
                                                  bool *clipped) {
  const float scaled = x != x       ? x
                       : bs.divide ? hl_div_rn(x, bs.encode_factor)
                                   : hl_mul_rn(x, bs.encode_factor);
  const float magnitude = hl_f32_from_bits(hl_f32_bits(scaled) & 0x7fffffffu);
  *clipped = magnitude > hl_quant_element_max(s->element);
  hl_round_spec r = hl_round_spec_make(s->element, s->rounding, HL_OVERFLOW_SATURATE, false);
  r.random_bits = s->random_bits;
  return (uint8_t)hl_round_bits_generic(&r, scaled, random);
}

/* The value an element code holds: decode(code) * block scale * tensor scale. */
HL_HD static inline float hl_quant_dequantize_one(hl_dtype element, uint8_t code, float block_scale,
                                                  float tensor_scale) {
  return hl_mul_rn(hl_mul_rn(hl_round_decode(element, code), block_scale), tensor_scale);
}

/* Whether an element code is a zero, or subnormal, in its format. */
HL_HD static inline bool hl_quant_code_is_zero(hl_dtype element, uint8_t code) {
  const hl_format_layout L = hl_format_layout_of(element);
  return !(code & ((1u << (L.exp_bits + L.man_bits)) - 1u));
}

HL_HD static inline bool hl_quant_code_is_subnormal(hl_dtype element, uint8_t code) {
  const hl_format_layout L = hl_format_layout_of(element);
  const uint32_t magnitude = code & ((1u << (L.exp_bits + L.man_bits)) - 1u);
  return magnitude && !(magnitude >> L.man_bits);
}

#ifdef __cplusplus
}
#endif

#endif /* HL_QUANTIZE_MATH_H */
