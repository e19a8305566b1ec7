/* half.h — binary16, bfloat16, fp8 (e4m3, e5m2) and tf32 next to binary32.
 *
 * Values of the narrow formats are carried as their bit patterns (uint16_t,
 * uint8_t) so that no compiler arithmetic can touch them: GCC evaluates
 * _Float16 expressions in excess precision, which would hide exactly the
 * rounding this project exists to show.
 *
 * Rules, on both host and device:
 *   - every conversion from fp32 rounds to nearest, ties to even (RNE);
 *   - +, -, *, / compute in fp32 and round once to the narrow format. For fp16
 *     (p = 11) and bf16 (p = 8) this equals the correctly rounded result,
 *     because fp32's p = 24 >= 2p + 2 makes double rounding innocuous for these
 *     four operations (Figueroa, "When is double rounding innocuous?", 1995).
 *
 * The header is plain C that nvcc compiles too (HL_HD). In device code the
 * conversions and fp16/bf16 arithmetic use the cuda_fp16 / cuda_bf16 / cuda_fp8
 * intrinsics, i.e. what the hardware does; the gpu test suite checks they give
 * the same bits as the portable host code below.
 */
#ifndef HL_HALF_H
#define HL_HALF_H

#include <stdint.h>
#include <string.h>

#include "formats/hd.h" /* HL_HD, HL_DEVICE_CODE */

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t hl_f16;  /* IEEE binary16 bits */
typedef uint16_t hl_bf16; /* bfloat16 bits */
typedef uint8_t hl_fp8;   /* OCP fp8 bits, e4m3 or e5m2 */

/* ------------------------------------------------------------ bit views -- */

HL_HD static inline uint32_t hl_f32_bits(float f) {
#if HL_DEVICE_CODE
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

HL_HD static inline float hl_f32_from_bits(uint32_t u) {
#if HL_DEVICE_CODE
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/* -------------------------------------------------- portable conversions -- */
/* These are the reference semantics; host code always uses them. */

/* Round the magnitude m * 2^-shift (m an integer, 1 <= shift <= 31) to an
 * integer, ties to even. Used for results that land in a subnormal range. */
HL_HD static inline uint32_t hl_shift_right_rne(uint32_t m, unsigned shift) {
  if (shift >= 32) return 0;
  uint32_t q = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) q += 1u;
  return q;
}

HL_HD static inline hl_f16 hl_f32_to_f16_soft(float f) {
  uint32_t x = hl_f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {                       /* inf or NaN */
    if (ax == 0x7f800000u) return (hl_f16)(sign | 0x7c00u);
    /* quiet NaN keeping the top of the payload, as F16C and PTX do */
    return (hl_f16)(sign | 0x7e00u | ((ax >> 13) & 0x03ffu));
  }
  if (ax >= 0x477ff000u) return (hl_f16)(sign | 0x7c00u); /* >= 65520: rounds to inf */
  if (ax >= 0x38800000u) {                       /* >= 2^-14: normal fp16 */
    uint32_t odd = (ax >> 13) & 1u;
    ax += 0x0fffu + odd;                         /* RNE on the 13 dropped bits */
    return (hl_f16)(sign | ((ax - 0x38000000u) >> 13)); /* rebias 127 -> 15 */
  }
  if (ax < 0x33000000u) return sign;             /* < 2^-25: rounds to zero */
  /* subnormal fp16: value = m * 2^(e-150); the result counts units of 2^-24 */
  uint32_t e = ax >> 23;
  uint32_t m = (ax & 0x007fffffu) | 0x00800000u;
  return (hl_f16)(sign | hl_shift_right_rne(m, 126u - e));
}

HL_HD static inline float hl_f16_to_f32_soft(hl_f16 h) {
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  uint32_t exp = ((uint32_t)h >> 10) & 0x1fu;
  uint32_t man = (uint32_t)h & 0x03ffu;
  if (exp == 0x1fu) return hl_f32_from_bits(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    /* zero or subnormal: man * 2^-24 is exact in fp32 */
    float v = (float)man * 0x1p-24f;
    return hl_f32_from_bits(sign | hl_f32_bits(v));
  }
  return hl_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

HL_HD static inline hl_bf16 hl_f32_to_bf16_soft(float f) {
  uint32_t x = hl_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (hl_bf16)((x >> 16) | 0x0040u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u); /* RNE; carries into the exponent, FLT_MAX -> inf */
  return (hl_bf16)(x >> 16);
}

HL_HD static inline float hl_bf16_to_f32_soft(hl_bf16 b) {
  return hl_f32_from_bits((uint32_t)b << 16);
}

/* fp8, OCP 8-bit floating point (v1.0):
 *   e4m3: bias 7, max 448, no infinities, NaN = S.1111.111
 *   e5m2: bias 15, max 57344, inf = S.11111.00, NaN = S.11111.{01,10,11}
 * saturate != 0 is the "satfinite" mode cuBLASLt uses: finite overflow and
 * infinities become +-max, NaN stays NaN. Otherwise overflow gives NaN (e4m3)
 * or inf (e5m2), as IEEE-style rounding would. */
typedef enum { HL_FP8_E4M3 = 0, HL_FP8_E5M2 = 1 } hl_fp8_kind;

HL_HD static inline hl_fp8 hl_f32_to_fp8_soft(float f, hl_fp8_kind kind, int saturate) {
  const unsigned man_bits = kind == HL_FP8_E4M3 ? 3u : 2u;
  const int bias = kind == HL_FP8_E4M3 ? 7 : 15;
  const uint32_t max_bits = kind == HL_FP8_E4M3 ? 0x43e00000u /* 448 */ : 0x47600000u /* 57344 */;
  const uint8_t max_code = kind == HL_FP8_E4M3 ? 0x7eu : 0x7bu;
  const uint8_t nan_code = 0x7fu;
  const uint8_t overflow_code = saturate ? max_code : (kind == HL_FP8_E4M3 ? nan_code : 0x7cu);

  uint32_t x = hl_f32_bits(f);
  uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (uint8_t)(sign | nan_code);
  if (ax == 0x7f800000u) return (uint8_t)(sign | overflow_code);

  const unsigned drop = 23u - man_bits;
  const uint32_t min_normal_bits = (uint32_t)(127 + 1 - bias) << 23;
  if (ax >= min_normal_bits) {
    uint32_t r = ax + ((1u << (drop - 1u)) - 1u) + ((ax >> drop) & 1u); /* RNE */
    r &= ~((1u << drop) - 1u);
    if (r > max_bits) return (uint8_t)(sign | overflow_code);
    uint32_t e = (r >> 23) - 127u + (uint32_t)bias;
    uint32_t m = (r >> drop) & ((1u << man_bits) - 1u);
    return (uint8_t)(sign | (e << man_bits) | m);
  }
  /* below the smallest normal: count units of the smallest subnormal,
   * 2^(1 - bias - man_bits); the count may round up to the smallest normal,
   * whose code (1 << man_bits) follows on naturally. */
  uint32_t e = ax >> 23;
  if (e == 0) return sign; /* fp32 subnormals are far below half an fp8 quantum */
  uint32_t m = (ax & 0x007fffffu) | 0x00800000u;
  /* value = m * 2^(e - 150); units = value / 2^(1 - bias - man_bits) */
  int shift = 150 - (int)e + 1 - bias - (int)man_bits;
  return (uint8_t)(sign | hl_shift_right_rne(m, (unsigned)shift));
}

HL_HD static inline float hl_fp8_to_f32_soft(hl_fp8 v, hl_fp8_kind kind) {
  const unsigned man_bits = kind == HL_FP8_E4M3 ? 3u : 2u;
  const unsigned exp_bits = 7u - man_bits;
  const int bias = kind == HL_FP8_E4M3 ? 7 : 15;
  uint32_t sign = ((uint32_t)v & 0x80u) << 24;
  uint32_t exp = ((uint32_t)v >> man_bits) & ((1u << exp_bits) - 1u);
  uint32_t man = (uint32_t)v & ((1u << man_bits) - 1u);
  if (kind == HL_FP8_E4M3 && exp == 15u && man == 7u) return hl_f32_from_bits(sign | 0x7fc00000u);
  if (kind == HL_FP8_E5M2 && exp == 31u)
    return hl_f32_from_bits(sign | (man ? 0x7fc00000u : 0x7f800000u));
  if (exp == 0) {
    float unit = hl_f32_from_bits((uint32_t)(127 + 1 - bias - (int)man_bits) << 23);
    return hl_f32_from_bits(sign | hl_f32_bits((float)man * unit));
  }
  return hl_f32_from_bits(sign | ((exp - (uint32_t)bias + 127u) << 23) | (man << (23u - man_bits)));
}

/* tf32: fp32's range with 10 mantissa bits, stored in an fp32 container
 * whose low 13 bits are zero.
 *
 * A NaN stays a NaN: its sign and the top of its payload (the bits tf32
 * keeps) are kept and the quiet bit is set, as fp16's and bf16's conversions
 * do. Clearing the low 13 bits alone, which is what the GPU's cvt.rna.tf32.f32
 * does (ptxas 13, sm_80 and sm_90: "add 0x1000 unless |x| >= inf, then AND
 * 0xffffe000"), turns the 2 x 8191 NaNs whose payload lies only in those bits
 * into infinities; formats/round.h (hl_tf32_rna_bits) applies this rule on the device
 * before the instruction. */
HL_HD static inline uint32_t hl_tf32_nan_bits(uint32_t nan) { return (nan & 0xffffe000u) | 0x00400000u; }

HL_HD static inline float hl_f32_round_tf32_rne(float f) {
  uint32_t x = hl_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return hl_f32_from_bits(hl_tf32_nan_bits(x));
  if ((x & 0x7fffffffu) == 0x7f800000u) return f;
  x += 0x0fffu + ((x >> 13) & 1u);
  return hl_f32_from_bits(x & 0xffffe000u);
}

/* Nearest, ties away from zero: the rounding of the GPU's cvt.rna.tf32.f32. */
HL_HD static inline float hl_f32_round_tf32_rna(float f) {
  uint32_t x = hl_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return hl_f32_from_bits(hl_tf32_nan_bits(x));
  if ((x & 0x7fffffffu) == 0x7f800000u) return f;
  x += 0x1000u;
  return hl_f32_from_bits(x & 0xffffe000u);
}

/* ------------------------------------------- conversions used by kernels -- */
/* On the device these are the hardware's instructions; on the host the
 * portable code above. */

HL_HD static inline hl_f16 hl_f32_to_f16(float f) {
#if HL_DEVICE_CODE
  return __half_as_ushort(__float2half_rn(f));
#else
  return hl_f32_to_f16_soft(f);
#endif
}

HL_HD static inline float hl_f16_to_f32(hl_f16 h) {
#if HL_DEVICE_CODE
  return __half2float(__ushort_as_half(h));
#else
  return hl_f16_to_f32_soft(h);
#endif
}

HL_HD static inline hl_bf16 hl_f32_to_bf16(float f) {
#if HL_DEVICE_CODE
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
  return hl_f32_to_bf16_soft(f);
#endif
}

HL_HD static inline float hl_bf16_to_f32(hl_bf16 b) {
#if HL_DEVICE_CODE
  return __bfloat162float(__ushort_as_bfloat16(b));
#else
  return hl_bf16_to_f32_soft(b);
#endif
}

HL_HD static inline hl_fp8 hl_f32_to_fp8(float f, hl_fp8_kind kind, int saturate) {
#if HL_DEVICE_CODE
  return (hl_fp8)__nv_cvt_float_to_fp8(f, saturate ? __NV_SATFINITE : __NV_NOSAT,
                                       kind == HL_FP8_E4M3 ? __NV_E4M3 : __NV_E5M2);
#else
  return hl_f32_to_fp8_soft(f, kind, saturate);
#endif
}

HL_HD static inline float hl_fp8_to_f32(hl_fp8 v, hl_fp8_kind kind) {
#if HL_DEVICE_CODE
  __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)v,
                                         kind == HL_FP8_E4M3 ? __NV_E4M3 : __NV_E5M2);
  return __half2float(__half(h));
#else
  return hl_fp8_to_f32_soft(v, kind);
#endif
}

/* ------------------------------------------------------------ arithmetic -- */
/* Correctly rounded single operations. On the device +, -, * are the half
 * intrinsics (one hardware instruction each, rounded once). Division is not:
 * fp16's __hdiv is rcp.approx (within 1 ulp) times a, corrected only below
 * 143 x 2^-24, and a reciprocal 1 ulp off misrounds 128,744 of the 2^32
 * fp16 quotients (numerics test fp16-div-approx); bf16's is div.approx. So
 * both backends divide in fp32 with IEEE division (on the device __fdiv_rn)
 * and round once, which the rule above makes the correctly rounded
 * quotient; the CPU runs exactly what the GPU runs. */

#if HL_DEVICE_CODE
#define HL_F16_BINOP(name, intrinsic, op)                                        \
  HL_HD static inline hl_f16 name(hl_f16 a, hl_f16 b) {                        \
    return __half_as_ushort(intrinsic(__ushort_as_half(a), __ushort_as_half(b))); \
  }
#define HL_BF16_BINOP(name, intrinsic, op)                                                   \
  HL_HD static inline hl_bf16 name(hl_bf16 a, hl_bf16 b) {                                 \
    return __bfloat16_as_ushort(intrinsic(__ushort_as_bfloat16(a), __ushort_as_bfloat16(b))); \
  }
#else
#define HL_F16_BINOP(name, intrinsic, op)                      \
  HL_HD static inline hl_f16 name(hl_f16 a, hl_f16 b) {      \
    return hl_f32_to_f16(hl_f16_to_f32(a) op hl_f16_to_f32(b)); \
  }
#define HL_BF16_BINOP(name, intrinsic, op)                        \
  HL_HD static inline hl_bf16 name(hl_bf16 a, hl_bf16 b) {      \
    return hl_f32_to_bf16(hl_bf16_to_f32(a) op hl_bf16_to_f32(b)); \
  }
#endif

HL_F16_BINOP(hl_f16_add, __hadd, +)
HL_F16_BINOP(hl_f16_sub, __hsub, -)
HL_F16_BINOP(hl_f16_mul, __hmul, *)
HL_BF16_BINOP(hl_bf16_add, __hadd, +)
HL_BF16_BINOP(hl_bf16_sub, __hsub, -)
HL_BF16_BINOP(hl_bf16_mul, __hmul, *)

#undef HL_F16_BINOP
#undef HL_BF16_BINOP

/* IEEE fp32 division, rounded to nearest even, on both backends. nvcc's
 * -prec-div=false leaves __fdiv_rn as div.rn.f32; -ftz=true (and
 * --use_fast_math) makes it div.rn.ftz.f32, which flushes fp32 subnormals:
 * fp16 quotients never reach them in fp32 (|a/b| lies in [2^-40, 2^40]),
 * bf16 ones can. */
HL_HD static inline float hl_div_rn(float a, float b) {
#if HL_DEVICE_CODE
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

HL_HD static inline hl_f16 hl_f16_div(hl_f16 a, hl_f16 b) {
  return hl_f32_to_f16(hl_div_rn(hl_f16_to_f32(a), hl_f16_to_f32(b)));
}

HL_HD static inline hl_bf16 hl_bf16_div(hl_bf16 a, hl_bf16 b) {
  return hl_f32_to_bf16(hl_div_rn(hl_bf16_to_f32(a), hl_bf16_to_f32(b)));
}

/* ----------------------------------------------------------- predicates -- */

HL_HD static inline int hl_f16_isnan(hl_f16 h) { return (h & 0x7fffu) > 0x7c00u; }
HL_HD static inline int hl_f16_isinf(hl_f16 h) { return (h & 0x7fffu) == 0x7c00u; }
HL_HD static inline int hl_f16_isfinite(hl_f16 h) { return (h & 0x7c00u) != 0x7c00u; }
HL_HD static inline int hl_bf16_isnan(hl_bf16 b) { return (b & 0x7fffu) > 0x7f80u; }
HL_HD static inline int hl_bf16_isfinite(hl_bf16 b) { return (b & 0x7f80u) != 0x7f80u; }

#ifdef __cplusplus
}
#endif

#endif /* HL_HALF_H */
