/* convert_math.h — the per-element bodies of kernels/convert.h, shared by
 * the CPU loop and the CUDA kernel (on the device, half.h's functions and
 * round.h's fast paths are the hardware's instructions). */
#ifndef HL_CONVERT_MATH_H
#define HL_CONVERT_MATH_H

#include "formats/half.h"
#include "formats/round.h"
#include "kernels/convert.h"

/* out[i] = the code of the fp32 value with these bits, rounded by spec;
 * element `index` of the spec's Philox stream decides a stochastic rounding */
HL_HD static inline void hl_convert_one(const hl_round_spec *spec, uint32_t bits, uint64_t index, void *out,
                                        size_t i) {
  const uint32_t random = spec->rounding == HL_ROUNDING_STOCHASTIC ? hl_round_random(spec, index) : 0u;
  const uint32_t code = hl_round_bits(spec, hl_f32_from_bits(bits), random);
  switch (hl_format_code_bytes(spec->format)) {
    case 1: ((uint8_t *)out)[i] = (uint8_t)code; break;
    case 2: ((uint16_t *)out)[i] = (uint16_t)code; break;
    default: ((uint32_t *)out)[i] = code; break;
  }
}

HL_HD static inline uint32_t hl_decode_one(hl_dtype format, uint32_t code) {
  switch (format) {
    case HL_F16: return hl_f32_bits(hl_f16_to_f32((hl_f16)code));
    case HL_BF16: return hl_f32_bits(hl_bf16_to_f32((hl_bf16)code));
    case HL_E4M3: return hl_f32_bits(hl_fp8_to_f32((hl_fp8)code, HL_FP8_E4M3));
    case HL_E5M2: return hl_f32_bits(hl_fp8_to_f32((hl_fp8)code, HL_FP8_E5M2));
    default: return hl_f32_bits(hl_round_decode(format, code));
  }
}

HL_HD static inline uint16_t hl_binop_one(hl_dtype type, char op, uint16_t a, uint16_t b) {
  if (type == HL_F16) {
    switch (op) {
      case '+': return hl_f16_add(a, b);
      case '-': return hl_f16_sub(a, b);
      case '*': return hl_f16_mul(a, b);
      default: return hl_f16_div(a, b);
    }
  }
  switch (op) {
    case '+': return hl_bf16_add(a, b);
    case '-': return hl_bf16_sub(a, b);
    case '*': return hl_bf16_mul(a, b);
    default: return hl_bf16_div(a, b);
  }
}

#endif
