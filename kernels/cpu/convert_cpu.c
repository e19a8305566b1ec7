/* convert_cpu.c — the CPU twin of kernels/convert.h (portable half.h code). */
#include "kernels/convert_math.h"
#include "kernels/cpu/cpu_kernels.h"

static void cpu_encode_range(hl_conversion c, uint32_t first, size_t n, void *out) {
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) hl_convert_one(c, first + (uint32_t)i, out, i);
}

static void cpu_decode_range(hl_conversion c, uint32_t first, size_t n, uint32_t *out) {
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
