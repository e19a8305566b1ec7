/* round.h — one value that says how an fp32 number is stored in a narrower
 * format (hl_round_spec): the format, the rounding, what happens past the
 * format's largest finite value, whether subnormals survive, and, for
 * stochastic rounding, how many random bits decide and which Philox stream
 * they come from. CPFloat's options structure has the same shape: one value,
 * one call.
 *
 * hl_round_bits_generic rounds by any spec, written from the format's
 * parameters alone (hl_format_layout: field widths, bias, which special
 * values the format has), so a new format is a new row of
 * hl_format_layout_of and nothing else. hl_round_bits picks formats/half.h's
 * conversion where one implements the spec exactly (on the device the
 * hardware's instruction: __float2half_rn, __float2bfloat16_rn,
 * cvt.rna.tf32.f32, the fp8 cvt) and the generic function otherwise; the
 * numerics suite checks both on all 2^32 inputs, the gpu suite the device's.
 *
 * The rules (docs/rounding.md):
 *   - Rounding acts on the magnitude of the exact fp32 value at the
 *     format's spacing there (subnormal spacing below its smallest normal).
 *     Toward +inf and toward -inf look at the sign; the others do not.
 *   - Stochastic: with `random_bits` = k, the top k bits of the random word,
 *     read as an integer r, round the magnitude up when r < floor(d 2^k),
 *     d being the distance to the value below in units of the spacing; so
 *     P(up) is d truncated to k bits, and E[result] = x to within
 *     2^-k of a spacing. Magnitudes whose value below is already the largest
 *     finite one have nothing above to round to: they round to nearest even
 *     (so fp16's 65520 and up still become inf under IEEE overflow).
 *   - Overflow (a rounded magnitude past the largest finite value, or an
 *     infinite input): HL_OVERFLOW_IEEE follows the format's own rules as
 *     IEEE 754 does: +-inf, or NaN where the format has no inf (e4m3), except
 *     that a rounding toward zero (toward zero; toward -inf for positive
 *     values; toward +inf for negative ones) stops at +-max; an infinite
 *     input stays infinite (NaN in e4m3). HL_OVERFLOW_SATURATE gives +-max
 *     for both ("satfinite"). A format without inf and NaN (fp6, fp4) always
 *     saturates.
 *   - NaN: a NaN in gives a NaN out, whatever the spec, where the format has
 *     one. fp16, bf16 and tf32 keep its sign and the top of its payload and
 *     set the quiet bit (half.h's rule, as F16C and the GPU do); fp8 gives
 *     its sign and the format's NaN code; fp32 to fp32 passes a NaN unchanged
 *     (nothing is dropped). fp6 and fp4, which have none, give +-max of its
 *     sign; e8m0 gives its NaN code 0xff (hl_round_bits_e8m0, which also
 *     says what becomes of zero and negative values).
 *   - flush_subnormals: fp32 subnormal inputs are read as zero and results
 *     that come out subnormal in the format (rounded as if subnormals were
 *     kept) become zero; both keep the sign, as CUDA's .ftz does.
 *
 * Codes are right-aligned in a uint32_t: fp16 and bf16 in 16 bits, fp8 and
 * e8m0 in 8, fp6 in 6, fp4 in 4, tf32 in 19 (its fp32 container's bits >> 13),
 * fp32 in 32. */
#ifndef HL_ROUND_H
#define HL_ROUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/dtype.h"
#include "formats/half.h"
#include "formats/hd.h"
#include "formats/philox.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- formats -- */

typedef enum {
  HL_SPECIALS_IEEE = 0, /* the top exponent holds inf (fraction 0) and NaNs: fp32, tf32, fp16, bf16, e5m2 */
  HL_SPECIALS_NAN_ONLY, /* no inf; only the all-ones magnitude is NaN, the rest of the top exponent is
                           finite: e4m3 ("FN") */
  HL_SPECIALS_NONE      /* every code finite, no inf or NaN (OCP's fp6 and fp4): NaN in gives +-max */
} hl_specials;

/* What the generic rounding needs to know of a format. Either a signed
 * format with exp_bits >= 1 and man_bits >= 1 whose exponent field 0 holds
 * zero and the subnormals (fp32 to fp16, and all of OCP's fp8, fp6 and fp4),
 * or an unsigned, exponent-only one (sign_bits 0, man_bits 0: OCP MX's E8M0
 * block scale, 2^(code - bias), no zero, code 0xff NaN). */
typedef struct {
  uint8_t sign_bits; /* 1, or 0 for E8M0 */
  uint8_t exp_bits, man_bits;
  int16_t bias;
  uint8_t specials;          /* hl_specials */
  uint8_t nan_keeps_payload; /* 1: a NaN keeps sign and top payload, quiet bit set; 0: sign | the NaN code */
} hl_format_layout;

/* The layout of f (zeros for a type that is no floating-point format). The
 * same figures as format.c's table, which test_round checks. */
HL_HD static inline hl_format_layout hl_format_layout_of(hl_dtype f) {
  hl_format_layout l = {1, 0, 0, 0, HL_SPECIALS_IEEE, 1};
  switch (f) {
    case HL_F32: l.exp_bits = 8, l.man_bits = 23, l.bias = 127; break;
    case HL_TF32: l.exp_bits = 8, l.man_bits = 10, l.bias = 127; break;
    case HL_F16: l.exp_bits = 5, l.man_bits = 10, l.bias = 15; break;
    case HL_BF16: l.exp_bits = 8, l.man_bits = 7, l.bias = 127; break;
    case HL_E4M3: l.exp_bits = 4, l.man_bits = 3, l.bias = 7, l.specials = HL_SPECIALS_NAN_ONLY, l.nan_keeps_payload = 0; break;
    case HL_E5M2: l.exp_bits = 5, l.man_bits = 2, l.bias = 15, l.nan_keeps_payload = 0; break;
    case HL_E2M3: l.exp_bits = 2, l.man_bits = 3, l.bias = 1, l.specials = HL_SPECIALS_NONE, l.nan_keeps_payload = 0; break;
    case HL_E3M2: l.exp_bits = 3, l.man_bits = 2, l.bias = 3, l.specials = HL_SPECIALS_NONE, l.nan_keeps_payload = 0; break;
    case HL_E2M1: l.exp_bits = 2, l.man_bits = 1, l.bias = 1, l.specials = HL_SPECIALS_NONE, l.nan_keeps_payload = 0; break;
    case HL_E8M0:
      l.sign_bits = 0, l.exp_bits = 8, l.man_bits = 0, l.bias = 127, l.specials = HL_SPECIALS_NAN_ONLY;
      l.nan_keeps_payload = 0;
      break;
    default: break;
  }
  return l;
}

/* Stored bits of one code: sign_bits + exp_bits + man_bits (0 for no format). */
HL_HD static inline unsigned hl_format_code_width(hl_dtype f) {
  const hl_format_layout l = hl_format_layout_of(f);
  return l.exp_bits ? (unsigned)l.sign_bits + l.exp_bits + l.man_bits : 0u;
}

/* Bytes an array element of codes takes: 1, 2 or 4 (tf32 in its fp32 container's
 * low 19 bits: 4). */
HL_HD static inline size_t hl_format_code_bytes(hl_dtype f) {
  const unsigned w = hl_format_code_width(f);
  return w <= 8 ? 1 : w <= 16 ? 2 : 4;
}

/* --------------------------------------------------------------- specs -- */

typedef enum {
  HL_ROUNDING_NEAREST_EVEN = 0, /* IEEE's default */
  HL_ROUNDING_NEAREST_AWAY,     /* ties away from zero (the GPU's cvt.rna.tf32) */
  HL_ROUNDING_TOWARD_ZERO,
  HL_ROUNDING_TOWARD_POSITIVE,
  HL_ROUNDING_TOWARD_NEGATIVE,
  HL_ROUNDING_STOCHASTIC,       /* up with probability the distance from below */
  HL_ROUNDINGS
} hl_rounding;

/* "nearest-even", "nearest-away", "toward-zero", "toward-positive", "toward-negative", "stochastic" */
static inline const char *hl_rounding_name(hl_rounding r) {
  static const char *const names[HL_ROUNDINGS] = {"nearest-even",    "nearest-away",    "toward-zero",
                                                  "toward-positive", "toward-negative", "stochastic"};
  return (unsigned)r < HL_ROUNDINGS ? names[r] : "?";
}

/* What happens to a value beyond the largest finite one (see the top). */
typedef enum {
  HL_OVERFLOW_IEEE = 0, /* the format's rule: inf, or NaN where it has no inf (e4m3); toward zero stops at max */
  HL_OVERFLOW_SATURATE  /* clamp to +-max (fp8 "satfinite"); inf -> +-max too */
} hl_overflow;

typedef struct {
  hl_dtype format;       /* the target: fp32, tf32, fp16, bf16, e4m3, e5m2, e2m3, e3m2, e2m1, e8m0 */
  hl_rounding rounding;
  hl_overflow overflow;
  bool flush_subnormals; /* subnormal inputs and results -> zero of their sign */
  uint8_t random_bits;   /* stochastic: how many top bits of each random word decide, 1 to 32 */
  uint64_t seed;         /* stochastic: element i of an array takes word i of */
  uint64_t stream;       /*   Philox stream `stream` under `seed` (hl_round_random) */
} hl_round_spec;

HL_HD static inline hl_round_spec hl_round_spec_make(hl_dtype format, hl_rounding rounding, hl_overflow overflow,
                                                     bool flush_subnormals) {
  hl_round_spec s;
  s.format = format;
  s.rounding = rounding;
  s.overflow = overflow;
  s.flush_subnormals = flush_subnormals;
  s.random_bits = 32;
  s.seed = 0;
  s.stream = 0;
  return s;
}

/* The IEEE default: nearest even, IEEE overflow, subnormals kept. */
HL_HD static inline hl_round_spec hl_round_nearest(hl_dtype format) {
  return hl_round_spec_make(format, HL_ROUNDING_NEAREST_EVEN, HL_OVERFLOW_IEEE, false);
}

HL_HD static inline hl_round_spec hl_round_stochastic(hl_dtype format, unsigned random_bits, uint64_t seed,
                                                      uint64_t stream) {
  hl_round_spec s = hl_round_spec_make(format, HL_ROUNDING_STOCHASTIC, HL_OVERFLOW_IEEE, false);
  s.random_bits = (uint8_t)random_bits;
  s.seed = seed;
  s.stream = stream;
  return s;
}

/* Whether s describes a rounding: a format with a layout, a rounding and an
 * overflow rule of the lists, and for stochastic rounding 1 to 32 random
 * bits. The array conversions refuse any other spec (hl_fatal). */
HL_HD static inline bool hl_round_spec_valid(const hl_round_spec *s) {
  return hl_format_code_width(s->format) != 0 && (unsigned)s->rounding < HL_ROUNDINGS &&
         (s->overflow == HL_OVERFLOW_IEEE || s->overflow == HL_OVERFLOW_SATURATE) &&
         (s->rounding != HL_ROUNDING_STOCHASTIC || (s->random_bits >= 1 && s->random_bits <= 32));
}

/* The random word element `index` takes under s (stochastic specs). */
HL_HD static inline uint32_t hl_round_random(const hl_round_spec *s, uint64_t index) {
  return hl_philox_u32(s->seed, s->stream, index);
}

/* ------------------------------------------------------------- generic -- */

/* Whether a magnitude rounds up to the next code under `mode`, given the
 * `drop` bits below the kept ones (their value `rem`), the parity of the code
 * below and, for stochastic rounding, the top `random_bits` of `random`. */
HL_HD static inline uint32_t hl_round_goes_up(hl_rounding mode, bool negative, uint32_t below_odd, uint64_t rem,
                                              int drop, int random_bits, uint32_t random) {
  const uint64_t half = drop ? UINT64_C(1) << (drop - 1) : 0;
  switch (mode) {
    case HL_ROUNDING_NEAREST_EVEN: return rem > half || (rem == half && rem && below_odd);
    case HL_ROUNDING_NEAREST_AWAY: return rem && rem >= half;
    case HL_ROUNDING_TOWARD_ZERO: return 0;
    case HL_ROUNDING_TOWARD_POSITIVE: return rem && !negative;
    case HL_ROUNDING_TOWARD_NEGATIVE: return rem && negative;
    default: {
      const int k = random_bits;
      const uint64_t frac = drop >= k ? rem >> (drop - k) : rem << (k - drop); /* floor(d 2^k) */
      return (uint64_t)(random >> (32 - k)) < frac;
    }
  }
}

/* e8m0 (exponent only, unsigned): x > 0 between 2^(c - 127) and the next
 * power of two rounds as the signed formats do, "even" meaning an even code.
 * Below 2^-127, the smallest value, every rounding gives 2^-127 (there is no
 * zero to round to); zero, negative values and NaN give the NaN code 0xff;
 * past 2^127 the overflow rule gives 0xff (IEEE: no inf) or 0xfe (saturate;
 * toward zero and toward -inf). */
HL_HD static inline uint32_t hl_round_bits_e8m0(const hl_round_spec *s, float x, uint32_t random) {
  const uint32_t nan_code = 0xffu, max_code = 0xfeu;
  uint32_t a = hl_f32_bits(x);
  if (s->flush_subnormals && a < 0x00800000u) a = 0;
  if (a > 0x7f800000u || a == 0) return nan_code; /* NaN, negative (sign bit set), zero */
  const bool saturate = s->overflow == HL_OVERFLOW_SATURATE;
  const hl_rounding mode = s->rounding;
  const bool toward_zero = mode == HL_ROUNDING_TOWARD_ZERO || mode == HL_ROUNDING_TOWARD_NEGATIVE;
  if (a == 0x7f800000u) return saturate ? max_code : nan_code;
  if (a < 0x00400000u) return 0; /* below 2^-127 */
  /* the code below x and what lies beyond it: 23 dropped bits for fp32
   * normals (code = fp32's biased exponent), 22 for 2^-127 <= x < 2^-126 */
  const uint32_t code = a >> 23;
  const int drop = code ? 23 : 22;
  const uint64_t rem = code ? a & 0x007fffffu : a - 0x00400000u;
  const hl_rounding m = mode == HL_ROUNDING_STOCHASTIC && code >= max_code ? HL_ROUNDING_NEAREST_EVEN : mode;
  const uint32_t rounded = code + hl_round_goes_up(m, false, code & 1u, rem, drop, s->random_bits, random);
  if (rounded > max_code) return saturate || toward_zero ? max_code : nan_code;
  return rounded;
}

/* x rounded by s (hl_round_spec_valid), from the format's layout alone;
 * `random` is used by stochastic specs only. */
HL_HD static inline uint32_t hl_round_bits_generic(const hl_round_spec *s, float x, uint32_t random) {
  if (s->format == HL_E8M0) return hl_round_bits_e8m0(s, x, random);
  const hl_format_layout L = hl_format_layout_of(s->format);
  const unsigned m = L.man_bits;
  const uint32_t in = hl_f32_bits(x), sign = (in >> 31) << (L.exp_bits + m);
  const uint32_t man_mask = (1u << m) - 1u, top = ((1u << L.exp_bits) - 1u) << m;
  const uint32_t max_code = L.specials == HL_SPECIALS_IEEE       ? top - 1u
                            : L.specials == HL_SPECIALS_NAN_ONLY ? (top | man_mask) - 1u
                                                                 : top | man_mask;
  /* a quiet NaN with no payload, or the format's one NaN code (all ones) */
  const uint32_t nan_code = L.nan_keeps_payload ? top | (1u << (m - 1u)) : top | man_mask;
  const bool saturate = s->overflow == HL_OVERFLOW_SATURATE || L.specials == HL_SPECIALS_NONE;
  const uint32_t overflow_code = L.specials == HL_SPECIALS_IEEE ? top : nan_code;
  uint32_t a = in & 0x7fffffffu;
  if (a > 0x7f800000u) {
    if (m == 23) return in; /* fp32 to itself: nothing dropped */
    if (L.specials == HL_SPECIALS_NONE) return sign | max_code;
    return sign | nan_code | (L.nan_keeps_payload ? (a >> (23u - m)) & man_mask : 0u);
  }
  if (a == 0x7f800000u) return sign | (saturate ? max_code : overflow_code);
  if (s->flush_subnormals && a < 0x00800000u) a = 0;

  /* |x| = sig 2^(e - 150), sig with its implicit bit; te: the format's biased
   * exponent for it, below 1 in the format's subnormal range, where the
   * spacing stays that of exponent 1 and more bits drop. */
  const int e = a >> 23 ? (int)(a >> 23) : 1;
  const uint64_t sig = (a & 0x007fffffu) | (a >> 23 ? 0x00800000u : 0u);
  const int te = e - 127 + L.bias;
  int drop = 23 - (int)m + (te < 1 ? 1 - te : 0);
  if (drop > 63) drop = 63; /* every bit dropped either way */
  const uint64_t q = sig >> drop, rem = sig & ((UINT64_C(1) << drop) - 1u);
  /* the code of the value below: the exponent field plus q, whose implicit
   * bit (when present) adds 1 to it; a carry out of q moves to the next binade */
  uint32_t code = (te > 1 ? (uint32_t)(te - 1) << m : 0u) + (uint32_t)q;

  const bool negative = in >> 31;
  hl_rounding mode = s->rounding;
  if (mode == HL_ROUNDING_STOCHASTIC && code >= max_code) mode = HL_ROUNDING_NEAREST_EVEN;
  code += hl_round_goes_up(mode, negative, (uint32_t)q & 1u, rem, drop, s->random_bits, random);
  if (code > max_code) {
    const bool toward_zero = mode == HL_ROUNDING_TOWARD_ZERO || (mode == HL_ROUNDING_TOWARD_POSITIVE && negative) ||
                             (mode == HL_ROUNDING_TOWARD_NEGATIVE && !negative);
    return sign | (saturate || toward_zero ? max_code : overflow_code);
  }
  if (s->flush_subnormals && code <= man_mask) code = 0;
  return sign | code;
}

/* The fp32 value of a code of format f (exact: every format here fits in
 * fp32). NaN codes give a NaN of the code's sign: fp16, bf16 and tf32 keep
 * the payload, fp8 gives the quiet NaN; e8m0's 0xff the positive quiet NaN. */
HL_HD static inline float hl_round_decode(hl_dtype f, uint32_t code) {
  if (f == HL_E8M0) /* 2^(code - 127): fp32's exponent field, or 2^-127, fp32's subnormal 0x00400000 */
    return hl_f32_from_bits(code == 0xffu ? 0x7fc00000u : code ? code << 23 : 0x00400000u);
  const hl_format_layout L = hl_format_layout_of(f);
  const unsigned m = L.man_bits;
  const uint32_t sign = ((code >> (L.exp_bits + m)) & 1u) << 31, man_mask = (1u << m) - 1u;
  const uint32_t ones = (1u << L.exp_bits) - 1u, exp = (code >> m) & ones, man = code & man_mask;
  if (L.specials == HL_SPECIALS_IEEE && exp == ones) {
    const uint32_t nan_part = !man ? 0u : L.nan_keeps_payload ? man << (23u - m) : 0x00400000u;
    return hl_f32_from_bits(sign | 0x7f800000u | nan_part);
  }
  if (L.specials == HL_SPECIALS_NAN_ONLY && exp == ones && man == man_mask) return hl_f32_from_bits(sign | 0x7fc00000u);
  if (exp) return hl_f32_from_bits(sign | (uint32_t)((int)exp - L.bias + 127) << 23 | man << (23u - m));
  /* zero or subnormal: man 2^(1 - bias - m); normalise while fp32 stays normal */
  uint32_t fe = (uint32_t)(128 - L.bias), mm = man;
  if (!mm) return hl_f32_from_bits(sign);
  while (!(mm >> m) && fe > 1u) mm <<= 1, fe--;
  return hl_f32_from_bits(sign | (mm >> m ? fe << 23 | (mm & man_mask) << (23u - m) : mm << (23u - m)));
}

/* ---------------------------------------------------------- fast paths -- */

/* tf32, nearest with ties away, as bits of its fp32 container. On the
 * device (sm_80 and later) the GPU's cvt.rna.tf32.f32, which clears a NaN's
 * low 13 bits and nothing else, so a payload only there would become inf:
 * half.h's NaN rule goes first. The mask keeps the container's low bits zero
 * whatever ptxas emits. */
HL_HD static inline uint32_t hl_tf32_rna_bits(float x) {
#if HL_DEVICE_CODE && __CUDA_ARCH__ >= 800
  const uint32_t bits = hl_f32_bits(x);
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return (bits & 0x7fffffffu) > 0x7f800000u ? hl_tf32_nan_bits(bits) : r & 0xffffe000u;
#else
  return hl_f32_bits(hl_f32_round_tf32_rna(x));
#endif
}

/* half.h's conversion for s where one gives exactly the generic bits (NaN
 * payloads aside on the device: the gpu suite compares NaNs as NaNs):
 * fp16 and bf16 nearest even; tf32 nearest even and ties away; fp8 nearest
 * even, either overflow rule; all with subnormals kept and, but for fp8,
 * IEEE overflow. Returns false for any other spec. */
HL_HD static inline bool hl_round_bits_fast(const hl_round_spec *s, float x, uint32_t *out) {
  if (s->flush_subnormals) return false;
  const bool nearest_even = s->rounding == HL_ROUNDING_NEAREST_EVEN, ieee = s->overflow == HL_OVERFLOW_IEEE;
  switch (s->format) {
    case HL_F16:
      if (!nearest_even || !ieee) return false;
      *out = hl_f32_to_f16(x);
      return true;
    case HL_BF16:
      if (!nearest_even || !ieee) return false;
      *out = hl_f32_to_bf16(x);
      return true;
    case HL_TF32:
      if (!ieee || !(nearest_even || s->rounding == HL_ROUNDING_NEAREST_AWAY)) return false;
      *out = (nearest_even ? hl_f32_bits(hl_f32_round_tf32_rne(x)) : hl_tf32_rna_bits(x)) >> 13;
      return true;
    case HL_E4M3:
    case HL_E5M2:
      if (!nearest_even) return false;
      *out = hl_f32_to_fp8(x, s->format == HL_E4M3 ? HL_FP8_E4M3 : HL_FP8_E5M2, !ieee);
      return true;
    default: return false;
  }
}

/* x rounded by s: half.h's conversion where hl_round_bits_fast has one,
 * the generic rounding otherwise. `random`: stochastic specs only. */
HL_HD static inline uint32_t hl_round_bits(const hl_round_spec *s, float x, uint32_t random) {
  uint32_t out;
  return hl_round_bits_fast(s, x, &out) ? out : hl_round_bits_generic(s, x, random);
}

#ifdef __cplusplus
}
#endif

#endif /* HL_ROUND_H */
