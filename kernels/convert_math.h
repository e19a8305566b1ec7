/* convert_math.h — the per-element bodies of kernels/convert.h, shared by
 * the CPU loop and the CUDA kernel (on the device, half.h's functions are the
 * hardware's instructions). */
#ifndef HL_CONVERT_MATH_H
#define HL_CONVERT_MATH_H

#include "formats/half.h"
#include "kernels/convert.h"

HL_HD static inline void hl_convert_one(hl_conversion c, uint32_t bits, void *out, size_t i) {
  float x = hl_f32_from_bits(bits);
  switch (c) {
    case HL_CONV_F16: ((uint16_t *)out)[i] = hl_f32_to_f16(x); break;
    case HL_CONV_BF16: ((uint16_t *)out)[i] = hl_f32_to_bf16(x); break;
    case HL_CONV_E4M3: ((uint8_t *)out)[i] = hl_f32_to_fp8(x, HL_FP8_E4M3, 0); break;
    case HL_CONV_E4M3_SAT: ((uint8_t *)out)[i] = hl_f32_to_fp8(x, HL_FP8_E4M3, 1); break;
    case HL_CONV_E5M2: ((uint8_t *)out)[i] = hl_f32_to_fp8(x, HL_FP8_E5M2, 0); break;
    case HL_CONV_E5M2_SAT: ((uint8_t *)out)[i] = hl_f32_to_fp8(x, HL_FP8_E5M2, 1); break;
    default: {
#if HL_DEVICE_CODE && __CUDA_ARCH__ >= 800
      /* the instruction clears a NaN's low 13 bits and nothing else, so a
       * payload only there becomes inf: half.h's NaN rule goes first. The
       * mask keeps the container's low bits zero whatever ptxas emits. */
      uint32_t r;
      asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
      ((uint32_t *)out)[i] = (bits & 0x7fffffffu) > 0x7f800000u ? hl_tf32_nan_bits(bits) : r & 0xffffe000u;
#else
      ((uint32_t *)out)[i] = hl_f32_bits(hl_f32_round_tf32_rna(x));
#endif
      break;
    }
  }
}

HL_HD static inline uint32_t hl_decode_one(hl_conversion c, uint32_t code) {
  switch (c) {
    case HL_CONV_F16: return hl_f32_bits(hl_f16_to_f32((hl_f16)code));
    case HL_CONV_BF16: return hl_f32_bits(hl_bf16_to_f32((hl_bf16)code));
    case HL_CONV_E4M3:
    case HL_CONV_E4M3_SAT: return hl_f32_bits(hl_fp8_to_f32((hl_fp8)code, HL_FP8_E4M3));
    case HL_CONV_E5M2:
    case HL_CONV_E5M2_SAT: return hl_f32_bits(hl_fp8_to_f32((hl_fp8)code, HL_FP8_E5M2));
    default: return code;
  }
}

HL_HD static inline uint16_t hl_binop_one(hl_conversion c, char op, uint16_t a, uint16_t b) {
  if (c == HL_CONV_F16) {
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
