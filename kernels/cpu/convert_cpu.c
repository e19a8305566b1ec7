/* convert_cpu.c — the CPU twin of kernels/convert.h: fp32 <-> fp16 and bf16
 * through the array conversions the other CPU kernels use
 * (kernels/cpu/half_arrays.h: the CPU's instructions where
 * hl_cpu_units_get() allows them, bit for bit half.h's), everything else
 * with half.h's portable code. */
#include <string.h>

#include "kernels/convert_math.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/half_arrays.h"

/* elements per block of the fp16/bf16 conversions: a few pages on the stack */
enum { BLOCK = 1024 };

static void cpu_encode_range(hl_conversion c, uint32_t first, size_t n, void *out) {
  if (c == HL_CONV_F16 || c == HL_CONV_BF16) {
    void (*narrow)(const float *, uint16_t *, size_t) = c == HL_CONV_F16 ? hl_cpu_narrow_f16 : hl_cpu_narrow_bf16;
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < n; k += BLOCK) {
      const size_t m = n - k < BLOCK ? n - k : BLOCK;
      float in[BLOCK];
      for (size_t i = 0; i < m; i++) in[i] = hl_f32_from_bits(first + (uint32_t)(k + i));
      narrow(in, (uint16_t *)out + k, m);
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) hl_convert_one(c, first + (uint32_t)i, out, i);
}

static void cpu_decode_range(hl_conversion c, uint32_t first, size_t n, uint32_t *out) {
  if (c == HL_CONV_F16 || c == HL_CONV_BF16) {
    void (*widen)(const uint16_t *, float *, size_t) = c == HL_CONV_F16 ? hl_cpu_widen_f16 : hl_cpu_widen_bf16;
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < n; k += BLOCK) {
      const size_t m = n - k < BLOCK ? n - k : BLOCK;
      uint16_t code[BLOCK];
      float wide[BLOCK];
      for (size_t i = 0; i < m; i++) code[i] = (uint16_t)(first + (uint32_t)(k + i));
      widen(code, wide, m);
      memcpy(out + k, wide, m * sizeof *wide);
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) out[i] = hl_decode_one(c, first + (uint32_t)i);
}

static void cpu_binop(hl_conversion c, char op, const uint16_t *a, const uint16_t *b, uint16_t *out, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) out[i] = hl_binop_one(c, op, a[i], b[i]);
}

const struct hl_convert_kernels hl_cpu_convert_kernels = {
    .encode_range = cpu_encode_range,
    .decode_range = cpu_decode_range,
    .binop = cpu_binop,
};
