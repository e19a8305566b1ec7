/* convert.h — format conversions and single half-precision operations as
 * kernels, so that the gpu suite can compare the device's conversions (its
 * own instructions where a rounding spec has one, formats/round.h's generic
 * rounding otherwise) and half arithmetic with the CPU's, input for input
 * (bit-exact is the requirement). */
#ifndef HL_CONVERT_H
#define HL_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "formats/dtype.h"
#include "formats/round.h"

#ifdef __cplusplus
extern "C" {
#endif

struct hl_convert_kernels {
  /* out[i] = hl_round_bits(spec, the fp32 value whose bits are first + i,
   * word first + i of spec's Philox stream), i < n. out is backend memory
   * holding n codes of hl_format_code_bytes(spec->format) bytes. */
  void (*encode_range)(const hl_round_spec *spec, uint32_t first, size_t n, void *out);
  /* out[i] = fp32 bits of code first + i of format decoded (any format of formats/round.h: fp16, bf16,
   * fp8, fp6, fp4, e8m0; a NaN code gives a NaN). */
  void (*decode_range)(hl_dtype format, uint32_t first, size_t n, uint32_t *out);
  /* out[i] = a[i] op b[i] in type (HL_F16 or HL_BF16), op one of + - * /,
   * each correctly rounded (device: the half intrinsics). */
  void (*binop)(hl_dtype type, char op, const uint16_t *a, const uint16_t *b, uint16_t *out, size_t n);
};

#ifdef __cplusplus
}
#endif

#endif
