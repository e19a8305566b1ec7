/* half_simd.h — eight fp16 or bf16 values to and from an AVX vector of
 * fp32, for the CPU loops that stream half-precision arrays. Rounding is
 * formats/half.h's (RNE, NaN stays NaN): F16C's vcvtps2ph with round-to-nearest
 * is IEEE's conversion, and the bf16 path is half.h's integer rounding
 * written for eight lanes.
 *
 * Functions here carry HL_SIMD_TARGET; a caller must carry it too (so they
 * inline) and must only run when hl_simd_available() says so. Where the
 * compiler does not target x86-64, HL_HAVE_HALF_SIMD is 0 and callers keep
 * their portable loops. */
#ifndef HL_CPU_HALF_SIMD_H
#define HL_CPU_HALF_SIMD_H

#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define HL_HAVE_HALF_SIMD 1
#include <immintrin.h>

#define HL_SIMD_TARGET __attribute__((target("avx2,f16c")))

/* a load and a test once the CPU model has been read */
static inline int hl_simd_available(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

HL_SIMD_TARGET static inline __m256 hl_load8_f16(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* eight fp32 -> eight fp16 (RNE) in a 16-byte vector */
HL_SIMD_TARGET static inline __m128i hl_pack8_f16(__m256 v) {
  return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

HL_SIMD_TARGET static inline void hl_store8_f16(uint16_t *p, __m256 v) { _mm_storeu_si128((__m128i *)p, hl_pack8_f16(v)); }

HL_SIMD_TARGET static inline __m256 hl_load8_bf16(const uint16_t *p) {
  __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* eight fp32 -> eight bf16 (RNE, NaN stays NaN) in a 16-byte vector */
HL_SIMD_TARGET static inline __m128i hl_pack8_bf16(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i top = _mm256_srli_epi32(x, 16);
  /* x + 0x7fff + lsb, top half: round to nearest, ties to even */
  const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(top, _mm256_set1_epi32(1)));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
  /* NaN -> quiet NaN keeping the top of the payload (an unordered compare finds NaNs in one instruction) */
  const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i quiet = _mm256_or_si256(top, _mm256_set1_epi32(0x0040));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, is_nan);
  /* eight values < 2^16 in 32-bit lanes -> eight 16-bit values */
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

HL_SIMD_TARGET static inline void hl_store8_bf16(uint16_t *p, __m256 v) { _mm_storeu_si128((__m128i *)p, hl_pack8_bf16(v)); }

#else
#define HL_HAVE_HALF_SIMD 0
static inline int hl_simd_available(void) { return 0; }
#endif

#endif
