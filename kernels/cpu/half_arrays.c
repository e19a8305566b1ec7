/* half_arrays.c — see half_arrays.h. */
#include "kernels/cpu/half_arrays.h"

#include "formats/half.h"
#include "kernels/cpu/half_simd.h"

#if HL_HAVE_HALF_SIMD
/* LOAD8/STORE8 over the whole array, the tail element by element */
#define SIMD_WIDEN(NAME, LOAD8, ONE)                                                        \
  HL_SIMD_TARGET static void NAME(const uint16_t *src, float *dst, size_t n) {            \
    size_t i = 0;                                                                         \
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, LOAD8(src + i));                 \
    for (; i < n; i++) dst[i] = ONE(src[i]);                                              \
  }
#define SIMD_NARROW(NAME, STORE8, ONE)                                                      \
  HL_SIMD_TARGET static void NAME(const float *src, uint16_t *dst, size_t n) {            \
    size_t i = 0;                                                                         \
    for (; i + 8 <= n; i += 8) STORE8(dst + i, _mm256_loadu_ps(src + i));                 \
    for (; i < n; i++) dst[i] = ONE(src[i]);                                              \
  }
SIMD_WIDEN(widen_f16_simd, hl_load8_f16, hl_f16_to_f32)
SIMD_WIDEN(widen_bf16_simd, hl_load8_bf16, hl_bf16_to_f32)
SIMD_NARROW(narrow_f16_simd, hl_store8_f16, hl_f32_to_f16)
SIMD_NARROW(narrow_bf16_simd, hl_store8_bf16, hl_f32_to_bf16)
#define DISPATCH(simd_fn, src, dst, n) \
  if (hl_simd_available()) {           \
    simd_fn(src, dst, n);              \
    return;                            \
  }
#else
#define DISPATCH(simd_fn, src, dst, n)
#endif

void hl_cpu_widen_f16(const uint16_t *src, float *dst, size_t n) {
  DISPATCH(widen_f16_simd, src, dst, n)
  for (size_t i = 0; i < n; i++) dst[i] = hl_f16_to_f32(src[i]);
}

void hl_cpu_narrow_f16(const float *src, uint16_t *dst, size_t n) {
  DISPATCH(narrow_f16_simd, src, dst, n)
  for (size_t i = 0; i < n; i++) dst[i] = hl_f32_to_f16(src[i]);
}

void hl_cpu_widen_bf16(const uint16_t *src, float *dst, size_t n) {
  DISPATCH(widen_bf16_simd, src, dst, n)
  for (size_t i = 0; i < n; i++) dst[i] = hl_bf16_to_f32(src[i]);
}

void hl_cpu_narrow_bf16(const float *src, uint16_t *dst, size_t n) {
  DISPATCH(narrow_bf16_simd, src, dst, n)
  for (size_t i = 0; i < n; i++) dst[i] = hl_f32_to_bf16(src[i]);
}
