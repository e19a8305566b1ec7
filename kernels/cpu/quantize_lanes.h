/* quantize_lanes.h — the element conversion of the block quantizers'
 * nearest-even case (kernels/quantize_math.h's hl_quant_element_code with
 * nearest-even rounding and saturation), one element at a time and on eight
 * AVX2 lanes, bit for bit what formats/round.h's hl_round_bits_generic gives
 * for that spec (tests/format/test_quantize_lanes.c checks every fp32 input
 * whose magnitude's exponent can give more than zero or the largest code,
 * and a random sample of the rest).
 *
 * One at a time it is the generic rounding with its branches made
 * arithmetic: |y| = sig 2^(e - 150); the bits below the format's spacing,
 * `drop` of them (more below its smallest normal), round to nearest even by
 * adding half a spacing less one, plus the kept part's lowest bit, and
 * shifting; the code is the binade's base plus that. A code past the
 * largest saturates; a NaN gives the format's NaN code (or, where the format
 * has none, the largest). It reads no MXCSR. The eight lanes take a shorter
 * way (hl_quant_lanes_code8), one fp32 addition of which rounds by MXCSR's
 * mode: the default, nearest even, which the kernels' scaling needs too. */
#ifndef HL_CPU_QUANTIZE_LANES_H
#define HL_CPU_QUANTIZE_LANES_H

#include <stdint.h>

#include "formats/half.h"
#include "formats/round.h"

/* One element format's figures, from its layout (hl_format_layout_of). */
typedef struct {
  uint32_t man_bits;
  uint32_t subnormal_edge; /* 128 - bias: fp32 exponent fields below it are subnormal in the format */
  uint32_t max_code;       /* the largest finite magnitude's code */
  uint32_t nan_code;       /* what a NaN's magnitude becomes */
  uint32_t sign_shift;     /* where the code's sign bit sits: exp_bits + man_bits */
  /* the eight-lane form's figures */
  float max_value;         /* the largest finite value */
  float min_normal;        /* 2^emin, the smallest normal */
  float subnormal_magic;   /* 2^(emin - man_bits + 23): its fp32 spacing is the format's subnormal spacing */
  uint32_t exponent_rebias; /* (127 - bias) << man_bits: fp32's exponent field to the format's */
} hl_quant_lanes;

static inline hl_quant_lanes hl_quant_lanes_of(hl_dtype element) {
  const hl_format_layout L = hl_format_layout_of(element);
  const uint32_t m = L.man_bits, man_mask = (1u << m) - 1u, top = ((1u << L.exp_bits) - 1u) << m;
  hl_quant_lanes p;
  p.man_bits = m;
  p.subnormal_edge = (uint32_t)(128 - L.bias);
  p.max_code = L.specials == HL_SPECIALS_IEEE ? top - 1u : L.specials == HL_SPECIALS_NAN_ONLY ? (top | man_mask) - 1u
                                                                                              : top | man_mask;
  /* the element formats' NaNs keep no payload (nan_keeps_payload 0) */
  p.nan_code = L.specials == HL_SPECIALS_NONE ? p.max_code : top | man_mask;
  p.sign_shift = L.exp_bits + m;
  const int emin = 1 - L.bias;
  p.max_value = hl_round_decode(element, p.max_code);
  p.min_normal = hl_f32_from_bits((uint32_t)(emin + 127) << 23);
  p.subnormal_magic = hl_f32_from_bits((uint32_t)(emin - (int)m + 23 + 127) << 23);
  p.exponent_rebias = (uint32_t)(127 - L.bias) << m;
  return p;
}

/* y's code: nearest even, saturating. */
static inline uint32_t hl_quant_lanes_code(const hl_quant_lanes *p, float y) {
  const uint32_t in = hl_f32_bits(y), a = in & 0x7fffffffu, sign = (in >> 31) << p->sign_shift;
  if (a > 0x7f800000u) return sign | p->nan_code;
  const uint32_t field = a >> 23, e = field ? field : 1u;
  const uint32_t sig = (a & 0x007fffffu) | (field ? 0x00800000u : 0u);
  const uint32_t below = e < p->subnormal_edge ? p->subnormal_edge - e : 0u; /* binades under the smallest normal */
  uint32_t drop = 23u - p->man_bits + below;
  drop = drop > 25u ? 25u : drop; /* 25 and more: sig < half a spacing, the code is 0 */
  const uint32_t base = below ? 0u : (e - p->subnormal_edge) << p->man_bits;
  const uint32_t code = base + ((sig + (1u << (drop - 1u)) - 1u + ((sig >> drop) & 1u)) >> drop);
  return sign | (code > p->max_code ? p->max_code : code);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define HL_HAVE_QUANTIZE_LANES_AVX2 1
#include <immintrin.h>

#define HL_QUANT_AVX2_TARGET __attribute__((target("avx2")))

/* hl_quant_lanes_code on eight lanes, codes in the low byte of each 32-bit
 * lane, by fewer instructions: |y| clamped to the largest value first (every
 * larger magnitude saturates to it, as a NaN's lane is replaced below); from
 * the smallest normal up the fp32 bits rounded to man_bits by an integer
 * add, as above; below it one fp32 addition of subnormal_magic, whose
 * spacing is the format's subnormal spacing, rounds to nearest even (the
 * default rounding mode, which the kernels' scaling needs as well; an fp32
 * subnormal read as zero changes nothing, its code is 0 either way) and the
 * sum's low bits are the code. */
HL_QUANT_AVX2_TARGET static inline __m256i hl_quant_lanes_code8(const hl_quant_lanes *p, __m256 y) {
  const __m256i in = _mm256_castps_si256(y);
  const __m256 a = _mm256_and_ps(y, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_castps_si256(a), _mm256_set1_epi32(0x7f800000));
  const __m256 clamped = _mm256_min_ps(a, _mm256_set1_ps(p->max_value));
  const __m256 below = _mm256_cmp_ps(clamped, _mm256_set1_ps(p->min_normal), _CMP_LT_OQ);
  const __m256 magic = _mm256_set1_ps(p->subnormal_magic);
  const __m256i subnormal = _mm256_sub_epi32(_mm256_castps_si256(_mm256_add_ps(clamped, magic)), _mm256_castps_si256(magic));
  const __m128i drop = _mm_cvtsi32_si128(23 - (int)p->man_bits);
  const __m256i bits = _mm256_castps_si256(clamped), one = _mm256_set1_epi32(1);
  const __m256i half_less_one = _mm256_set1_epi32((1 << (22 - (int)p->man_bits)) - 1);
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(bits, half_less_one), _mm256_and_si256(_mm256_srl_epi32(bits, drop), one));
  const __m256i normal = _mm256_sub_epi32(_mm256_srl_epi32(rounded, drop), _mm256_set1_epi32((int)p->exponent_rebias));
  __m256i code = _mm256_blendv_epi8(normal, subnormal, _mm256_castps_si256(below));
  code = _mm256_blendv_epi8(code, _mm256_set1_epi32((int)p->nan_code), nan);
  return _mm256_or_si256(code, _mm256_sll_epi32(_mm256_srli_epi32(in, 31), _mm_cvtsi32_si128((int)p->sign_shift)));
}

/* The low bytes of eight 32-bit lanes to dst[0..7] */
HL_QUANT_AVX2_TARGET static inline void hl_quant_lanes_store8(uint8_t *dst, __m256i codes) {
  const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(codes), _mm256_extracti128_si256(codes, 1));
  _mm_storel_epi64((__m128i *)dst, _mm_packus_epi16(w, w));
}
#else
#define HL_HAVE_QUANTIZE_LANES_AVX2 0
#endif

#endif /* HL_CPU_QUANTIZE_LANES_H */
