/* convert.h — format conversions and single half-precision operations as
 * kernels, so that the gpu suite can compare the device's own conversion
 * instructions and half arithmetic with the portable host code of
 * formats/half.h, input for input (bit-exact is the requirement). */
#ifndef HL_CONVERT_H
#define HL_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  HL_CONV_F16 = 0, /* fp32 -> fp16, RNE */
  HL_CONV_BF16,    /* fp32 -> bf16, RNE */
  HL_CONV_E4M3,    /* fp32 -> fp8 e4m3, RNE, overflow -> NaN */
  HL_CONV_E4M3_SAT,/* ... satfinite */
  HL_CONV_E5M2,    /* fp32 -> fp8 e5m2, RNE, overflow -> inf */
  HL_CONV_E5M2_SAT,/* ... satfinite */
  HL_CONV_TF32_RNA,/* fp32 -> tf32, nearest ties away (the GPU's cvt.rna) */
  HL_CONV_COUNT
} hl_conversion;

/* Bytes per converted element: 2 (fp16, bf16), 1 (fp8), 4 (tf32 in an fp32 container). */
static inline size_t hl_conversion_size(hl_conversion c) {
  return c <= HL_CONV_BF16 ? 2 : c == HL_CONV_TF32_RNA ? 4 : 1;
}

struct hl_convert_kernels {
  /* out[i] = convert(the fp32 value whose bits are first + i), i < n.
   * out is backend memory holding n elements of hl_conversion_size(c) bytes. */
  void (*encode_range)(hl_conversion c, uint32_t first, size_t n, void *out);
  /* out[i] = fp32 bits of decode(code first + i) for the narrow format of c
   * (fp16, bf16, e4m3, e5m2). */
  void (*decode_range)(hl_conversion c, uint32_t first, size_t n, uint32_t *out);
  /* out[i] = a[i] op b[i] in fp16 (c = HL_CONV_F16) or bf16, op one of + - * /,
   * each correctly rounded (device: the half intrinsics). */
  void (*binop)(hl_conversion c, char op, const uint16_t *a, const uint16_t *b, uint16_t *out, size_t n);
};

#ifdef __cplusplus
}
#endif

#endif
