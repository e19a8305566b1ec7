/* half_simd.h — fp16 and bf16 to and from fp32 in vector registers, for the
 * CPU loops that stream half-precision arrays (kernels/cpu/half_arrays.c,
 * stream_cpu.c). Every function gives, lane for lane, the bits of
 * formats/half.h's portable conversions (RNE; NaN: half.h's rule), which
 * are authoritative; where an instruction differs, the function corrects it:
 *
 *   fp16 -> fp32  vcvtph2ps; it sets the quiet bit of a signalling NaN,
 *                 half.h keeps the NaN's bits: the bit is put back (except
 *                 in hl_avx2_widen8_f16_quieting, for values about to be
 *                 computed on).
 *   fp32 -> fp16  vcvtps2ph with round-to-nearest: IEEE's conversion, the
 *                 same bits as half.h for every input (NaN included).
 *   bf16 -> fp32  a 16-bit shift: exact.
 *   fp32 -> bf16  8 lanes: half.h's integer rounding written for AVX2.
 *                 16 lanes: vcvtneps2bf16, which rounds to nearest even but
 *                 reads fp32 subnormals as zero (0x00400000 gives 0x0000
 *                 where RNE gives 0x0040); lanes with a zero exponent field
 *                 are lifted by 2^-126 first (see hl_avx512_narrow16_bf16).
 *                 Its NaN rule, the top 16 bits with the quiet bit set, is
 *                 half.h's: infinities and NaNs need nothing.
 *
 * Neither instruction reads MXCSR's rounding mode or DAZ/FTZ bits here
 * (vcvtps2ph takes its rounding from the immediate, vcvtneps2bf16 always
 * rounds to nearest even), so a thread that changed MXCSR gets the same bits.
 *
 * Each function carries the target attribute of its instruction set; a
 * caller must carry at least that attribute (so the function inlines) and
 * run only where kernels/cpu/half_arrays.h's hl_cpu_half_path_present() says
 * the set is there. Where the compiler does not target x86-64,
 * HL_HAVE_HALF_SIMD is 0 and only the portable loops exist. */
#ifndef HL_CPU_HALF_SIMD_H
#define HL_CPU_HALF_SIMD_H

#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define HL_HAVE_HALF_SIMD 1
#include <immintrin.h>

/* ------------------------------------------- 8 lanes: AVX2 and F16C -- */

#define HL_AVX2_TARGET __attribute__((target("avx2,f16c")))

/* F16C's widening as it is: a signalling NaN comes out quiet. For values
 * that only feed arithmetic, which returns a NaN operand quieted anyway, so
 * the results keep half.h's bits; the fix-up below would halve the stream
 * kernels' rate in cache on the development machine. */
HL_AVX2_TARGET static inline __m256 hl_avx2_widen8_f16_quieting(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

HL_AVX2_TARGET static inline __m256 hl_avx2_widen8_f16(const uint16_t *p) {
  const __m128i h = _mm_loadu_si128((const __m128i *)p);
  const __m256 v = _mm256_cvtph_ps(h);
  /* NaN lanes whose input had the quiet bit (bit 9) clear: clear bit 22 again */
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i quiet_in = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 13);
  const __m256i flip = _mm256_andnot_si256(quiet_in, _mm256_and_si256(nan, _mm256_set1_epi32(0x00400000)));
  return _mm256_castsi256_ps(_mm256_xor_si256(_mm256_castps_si256(v), flip));
}

HL_AVX2_TARGET static inline __m128i hl_avx2_narrow8_f16(__m256 v) {
  return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

HL_AVX2_TARGET static inline __m256 hl_avx2_widen8_bf16(const uint16_t *p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* half.h's bf16 rounding on eight lanes (AVX2 has no bf16 instruction) */
HL_AVX2_TARGET static inline __m128i hl_avx2_narrow8_bf16(__m256 v) {
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

/* ---------------------------------- 16 lanes: AVX-512 and AVX512-BF16 -- */
/* F, BW, VL, DQ and CD: hl_cpu_has_avx512(). fp16 has no 16-lane functions:
 * on the development machine (Zen 4, which splits a ZMM operation in two)
 * F16C's conversions ran faster on 8 lanes than AVX-512F's on 16. */

#define HL_AVX512_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512cd,avx512bf16")))

HL_AVX512_BF16_TARGET static inline __m512 hl_avx512_widen16_bf16(const uint16_t *p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

/* vcvtneps2bf16 with its zero-exponent lanes (zeros and subnormals, which
 * it flushes) lifted into the normal range: adding 0x00800000 to the bits of
 * such a lane adds 2^-126 exactly and leaves the low 23 bits, so the
 * instruction's rounding of the lifted value is the RNE rounding of the
 * subnormal plus 0x0080 (2^-126 in bf16), which a 16-bit subtraction takes
 * away again. Three instructions for any lane, no branch. */
HL_AVX512_BF16_TARGET static inline __m256i hl_avx512_narrow16_bf16(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __mmask16 zero_exponent = _mm512_testn_epi32_mask(x, _mm512_set1_epi32(0x7f800000));
  const __m512i lifted = _mm512_mask_add_epi32(x, zero_exponent, x, _mm512_set1_epi32(0x00800000));
  const __m256i r = (__m256i)_mm512_cvtneps_pbh(_mm512_castsi512_ps(lifted));
  return _mm256_mask_sub_epi16(r, zero_exponent, r, _mm256_set1_epi16(0x0080));
}

#else
#define HL_HAVE_HALF_SIMD 0
#endif

#endif
