/* convert_cpu.c — the CPU twin of kernels/convert.h: fp32 to any format by
 * a rounding spec through hl_cpu_round_array (the CPU's instructions where
 * they implement the spec and hl_cpu_units_get() allows them, bit for bit
 * formats/round.h's; the generic rounding otherwise), fp16 and bf16 decoded
 * through the array conversions the other CPU kernels use, everything else
 * with half.h's portable code. */
#include <string.h>

#include "kernels/convert_math.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/half_arrays.h"

/* elements per block: a few pages on the stack */
enum { BLOCK = 1024 };

static void cpu_encode_range(const hl_round_spec *spec, uint32_t first, size_t n, void *out) {
  const size_t bytes = hl_format_code_bytes(spec->format);
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < n; k += BLOCK) {
    const size_t m = n - k < BLOCK ? n - k : BLOCK;
    float in[BLOCK];
    for (size_t i = 0; i < m; i++) in[i] = hl_f32_from_bits(first + (uint32_t)(k + i));
    hl_cpu_round_array(spec, in, (char *)out + k * bytes, m, (uint64_t)first + k);
  }
}

static void cpu_decode_range(hl_dtype format, uint32_t first, size_t n, uint32_t *out) {
  if (format == HL_F16 || format == HL_BF16) {
#pragma omp parallel for schedule(static)
    for (size_t k = 0; k < n; k += BLOCK) {
      const size_t m = n - k < BLOCK ? n - k : BLOCK;
      uint16_t code[BLOCK];
      float wide[BLOCK];
      for (size_t i = 0; i < m; i++) code[i] = (uint16_t)(first + (uint32_t)(k + i));
      hl_cpu_widen(format, code, wide, m);
      memcpy(out + k, wide, m * sizeof *wide);
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) out[i] = hl_decode_one(format, first + (uint32_t)i);
}

static void cpu_binop(hl_dtype type, char op, const uint16_t *a, const uint16_t *b, uint16_t *out, size_t n) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) out[i] = hl_binop_one(type, op, a[i], b[i]);
}

const struct hl_convert_kernels hl_cpu_convert_kernels = {
    .encode_range = cpu_encode_range,
    .decode_range = cpu_decode_range,
    .binop = cpu_binop,
};
