/* tensor_math.h — the per-element arithmetic of the tensor kernels, shared
 * by the CPU loops (kernels/cpu/tensor_cpu*.c) and the CUDA kernels: a CUDA
 * kernel loads its element, calls the same HL_HD function and stores, so the
 * CPU unit tests cover the arithmetic the GPU runs.
 *
 * f32, f16 and bf16 compute in float (the caller widens on load and rounds
 * once on store, as a GPU kernel loading half and computing in float does);
 * f64 computes in double. Nothing here calls a function pointer, and the
 * float paths are branch-free selects so that the CPU loops vectorise.
 *
 * exp in float is our own (Cody-Waite reduction, degree-7 polynomial,
 * exact power-of-two scaling in two steps so that subnormal results round
 * once): at most 2 ulp from the correctly rounded value (tests/core checks
 * it against double exp), identical on every x86 ISA since the build does
 * not contract a*b+c. It vectorises where glibc's expf does not, which
 * is what makes softmax, cross-entropy and GELU cheap on the CPU.
 */
#ifndef HL_TENSOR_MATH_H
#define HL_TENSOR_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "formats/half.h"
#include "kernels/tensor_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------------------- clamp -- */

/* x < lo ? lo : (x > hi ? hi : x), NaN passed through, as a bitwise select.
 * Written with ?: GCC threads the constant arm into the arithmetic that
 * follows, and under -ftrapping-math (the default) it will not if-convert
 * that branchy float arithmetic: every loop calling exp or GELU stayed
 * scalar (GCC 12: "control flow in loop"). The same value either way. */
HL_HD static inline float hl_select_f32(bool take_a, float a, float b) {
  const uint32_t m = 0u - (uint32_t)take_a;
  return hl_f32_from_bits((hl_f32_bits(a) & m) | (hl_f32_bits(b) & ~m));
}

HL_HD static inline float hl_clamp_f32(float x, float lo, float hi) {
  float c = hl_select_f32(x < lo, lo, x);
  return hl_select_f32(c > hi, hi, c);
}

HL_HD static inline double hl_clamp_f64(double x, double lo, double hi) {
  double c = x < lo ? lo : x;
  return c > hi ? hi : c;
}

/* ------------------------------------------------------------------ exp -- */

HL_HD static inline float hl_exp_f32(float x) {
  /* e^89 overflows and e^-104 rounds to 0; clamping there keeps k small
   * (NaN fails both comparisons and stays NaN). Below -104 the result is
   * the +0 that e^-104 rounds to, selected at the end: those lanes compute
   * e^0 instead, since scaling into the subnormal range costs the vector a
   * microcode assist (softmax's masked -inf scores: 40% of its time). */
  const bool zero = x < -104.0f;
  const float xc = hl_select_f32(zero, 0.0f, hl_select_f32(x > 89.0f, 89.0f, x));
  /* k = rint(x / ln2) by the 1.5*2^23 trick: the sum's low bits hold k */
  const float magic = 12582912.0f;
  float shifted = xc * 1.44269504088896341f + magic;
  int32_t k = (int32_t)(hl_f32_bits(shifted) - hl_f32_bits(magic));
  float kf = shifted - magic;
  /* r = x - k ln2 with ln2 split so that k * ln2_hi is exact */
  float r = xc - kf * 0.693145751953125f;
  r = r - kf * 1.428606765330187045e-06f;
  /* e^r on |r| <= 0.347: Taylor to degree 7, truncation < 0.05 ulp */
  float p = 1.9841269841e-4f;
  p = p * r + 1.3888888889e-3f;
  p = p * r + 8.3333333333e-3f;
  p = p * r + 4.1666666667e-2f;
  p = p * r + 1.6666666667e-1f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  /* 2^k as 2^k1 * 2^k2, both normal for k in [-151, 129]: the first
   * product is exact, the second rounds once (also into subnormals) */
  int32_t k1 = k / 2;
  int32_t k2 = k - k1;
  float s1 = hl_f32_from_bits((uint32_t)(k1 + 127) << 23);
  float s2 = hl_f32_from_bits((uint32_t)(k2 + 127) << 23);
  return hl_select_f32(zero, 0.0f, p * s1 * s2);
}

HL_HD static inline double hl_exp_f64(double x) { return exp(x); }

/* The library's own log and sqrt, named by compute type for the templates. */
HL_HD static inline float hl_log_f32(float x) { return logf(x); }
HL_HD static inline double hl_log_f64(double x) { return log(x); }
HL_HD static inline float hl_sqrt_f32(float x) { return sqrtf(x); }
HL_HD static inline double hl_sqrt_f64(double x) { return sqrt(x); }

/* ----------------------------------------------------------------- GELU -- */
/* gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), written
 * as x * s with s = sigmoid(2u) = 1 / (1 + e^(-2u)): the same function
 * without the cancellation of 1 + tanh(u) for negative x.
 *   gelu'  = s + 2 x s (1-s) u'
 *   gelu'' = s (1-s) (4 u' + 4 x u'^2 (1 - 2s) + 2 x u'')
 * with u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2), u'' = sqrt(2/pi) 6 * 0.044715 x.
 * Beyond |x| = 20 the derivatives are exactly 1 or 0 in float and double
 * terms would overflow (x^3, 0 * inf), so x is clamped there first. */

#define HL_GELU_DEFINE(T, SUF, EXP, CLAMP)                                                        \
  HL_HD static inline T hl_gelu_##SUF(T x) {                                               \
    const T c = (T)0.7978845608028654, a = (T)0.044715;                                    \
    T u = c * (x + a * x * x * x);                                                         \
    return x / ((T)1 + EXP((T)-2 * u));                                                    \
  }                                                                                        \
  HL_HD static inline T hl_gelu_grad_##SUF(T x) {                                          \
    const T c = (T)0.7978845608028654, a = (T)0.044715;                                    \
    const T xc = CLAMP(x, (T)-20, (T)20);                                                  \
    T u = c * (xc + a * xc * xc * xc);                                                     \
    T du = c * ((T)1 + (T)3 * a * xc * xc);                                                \
    T s = (T)1 / ((T)1 + EXP((T)-2 * u));                                                  \
    return s + (T)2 * xc * s * ((T)1 - s) * du;                                            \
  }                                                                                        \
  HL_HD static inline T hl_gelu_grad2_##SUF(T x) {                                         \
    const T c = (T)0.7978845608028654, a = (T)0.044715;                                    \
    const T xc = CLAMP(x, (T)-20, (T)20);                                                  \
    T u = c * (xc + a * xc * xc * xc);                                                     \
    T du = c * ((T)1 + (T)3 * a * xc * xc);                                                \
    T ddu = c * (T)6 * a * xc;                                                             \
    T s = (T)1 / ((T)1 + EXP((T)-2 * u));                                                  \
    return s * ((T)1 - s) * ((T)4 * du + (T)4 * xc * du * du * ((T)1 - (T)2 * s) + (T)2 * xc * ddu); \
  }

HL_GELU_DEFINE(float, f32, hl_exp_f32, hl_clamp_f32)
HL_GELU_DEFINE(double, f64, hl_exp_f64, hl_clamp_f64)
#undef HL_GELU_DEFINE

/* ---------------------------------------------------------------- pow -- */
/* Small integer exponents by multiplication: exact for p = 0, 1, 2, -1
 * (one rounding) and the same on every backend; others through the math
 * library (device pow: a few ulp from glibc's). */
HL_HD static inline float hl_pow_f32(float x, float p) {
  if (p == 2.0f) return x * x;
  if (p == 1.0f) return x;
  if (p == 0.0f) return 1.0f;
  if (p == -1.0f) return 1.0f / x;
  if (p == 3.0f) return x * x * x;
  return powf(x, p);
}

HL_HD static inline double hl_pow_f64(double x, double p) {
  if (p == 2.0) return x * x;
  if (p == 1.0) return x;
  if (p == 0.0) return 1.0;
  if (p == -1.0) return 1.0 / x;
  if (p == 3.0) return x * x * x;
  return pow(x, p);
}

/* ------------------------------------------- element-wise op tables -- */
/* `op` is a compile-time constant at every call site (a case of a switch
 * around the loop on the CPU, a template argument on the GPU), so the
 * switch folds away after inlining. */

#define HL_ELEMENTWISE_DEFINE(T, SUF, SQRT, LOG)                                         \
  HL_HD static inline T hl_binary_##SUF(hl_binary_op op, T a, T b) {                     \
    switch (op) {                                                                        \
      case HL_BIN_ADD: return a + b;                                                     \
      case HL_BIN_SUB: return a - b;                                                     \
      case HL_BIN_MUL: return a * b;                                                     \
      default: return a / b;                                                             \
    }                                                                                    \
  }                                                                                      \
  HL_HD static inline T hl_unary_##SUF(hl_unary_op op, T x, T p) {                       \
    switch (op) {                                                                        \
      case HL_UN_NEG: return -x;                                                         \
      case HL_UN_EXP: return hl_exp_##SUF(x);                                            \
      case HL_UN_LOG: return LOG(x);                                                     \
      case HL_UN_SQRT: return SQRT(x);                                                   \
      case HL_UN_RELU: return x > (T)0 ? x : (x != x ? x : (T)0);                        \
      case HL_UN_GELU: return hl_gelu_##SUF(x);                                          \
      case HL_UN_GELU_GRAD: return hl_gelu_grad_##SUF(x);                                \
      case HL_UN_GELU_GRAD2: return hl_gelu_grad2_##SUF(x);                              \
      case HL_UN_POW: return hl_pow_##SUF(x, p);                                         \
      case HL_UN_ADD_SCALAR: return x + p;                                               \
      case HL_UN_MUL_SCALAR: return x * p;                                               \
      case HL_UN_DIV_SCALAR: return x / p;                                               \
      case HL_UN_RDIV_SCALAR: return p / x;                                              \
      case HL_UN_RSUB_SCALAR: return p - x;                                              \
      default: return x > (T)0 ? (T)1 : (T)0; /* HL_UN_STEP */                           \
    }                                                                                    \
  }                                                                                      \
  HL_HD static inline T hl_unary_grad_##SUF(hl_unary_grad_op op, T dy, T x) {            \
    if (op == HL_GRAD_RELU) return x > (T)0 ? dy : (T)0;                                 \
    return dy * hl_gelu_grad_##SUF(x);                                                   \
  }

HL_ELEMENTWISE_DEFINE(float, f32, sqrtf, logf)
HL_ELEMENTWISE_DEFINE(double, f64, sqrt, log)
#undef HL_ELEMENTWISE_DEFINE

/* --------------------------------------------------------- conversions -- */

/* double -> binary16 / bfloat16 rounded once. A plain (float) cast first
 * could round twice; rounding to float "to odd" (truncate, then set the
 * last bit when inexact) keeps enough information for the second rounding
 * to be correct, since float has more than p + 2 bits for both. */
HL_HD static inline float hl_f64_to_f32_odd(double x) {
  float t = (float)x;
  if ((double)t == x || x != x) return t;
  if (fabs((double)t) > fabs(x)) t = hl_f32_from_bits(hl_f32_bits(t) - 1u); /* truncate toward 0 */
  return hl_f32_from_bits(hl_f32_bits(t) | 1u);
}

HL_HD static inline hl_f16 hl_f64_to_f16(double x) {
#if HL_DEVICE_CODE
  return __half_as_ushort(__double2half(x));
#else
  return hl_f32_to_f16(hl_f64_to_f32_odd(x));
#endif
}

HL_HD static inline hl_bf16 hl_f64_to_bf16(double x) {
#if HL_DEVICE_CODE
  return __bfloat16_as_ushort(__double2bfloat16(x));
#else
  return hl_f32_to_bf16(hl_f64_to_f32_odd(x));
#endif
}

/* Float -> integer: nearest, ties to even, saturated; NaN -> 0. */
HL_HD static inline int32_t hl_f64_to_i32_sat(double x) {
  if (x != x) return 0;
  if (x >= 2147483647.0) return INT32_MAX;
  if (x <= -2147483648.0) return INT32_MIN;
  return (int32_t)rint(x);
}

HL_HD static inline int8_t hl_f64_to_i8_sat(double x) {
  if (x != x) return 0;
  if (x >= 127.0) return 127;
  if (x <= -128.0) return -128;
  return (int8_t)rint(x);
}

/* ------------------------------------------------ any dtype via double -- */
/* The pairs of dtypes without a loop of their own (those with an integer
 * type) are copied through double: element i of any dtype widened exactly,
 * then stored rounded once (integers: nearest even, saturated, NaN -> 0).
 * An f32 source widened to double rounds to f16 exactly as f32 -> f16
 * would (the value is the same). */
HL_HD static inline double hl_load_as_f64(const void *p, hl_dtype t, int64_t i) {
  switch (t) {
    case HL_F64: return ((const double *)p)[i];
    case HL_F32: return ((const float *)p)[i];
    case HL_F16: return hl_f16_to_f32(((const uint16_t *)p)[i]);
    case HL_BF16: return hl_bf16_to_f32(((const uint16_t *)p)[i]);
    case HL_I32: return ((const int32_t *)p)[i];
    default: return ((const int8_t *)p)[i];
  }
}

HL_HD static inline void hl_store_from_f64(void *p, hl_dtype t, int64_t i, double v) {
  switch (t) {
    case HL_F64: ((double *)p)[i] = v; break;
    case HL_F32: ((float *)p)[i] = (float)v; break;
    case HL_F16: ((uint16_t *)p)[i] = hl_f64_to_f16(v); break;
    case HL_BF16: ((uint16_t *)p)[i] = hl_f64_to_bf16(v); break;
    case HL_I32: ((int32_t *)p)[i] = hl_f64_to_i32_sat(v); break;
    default: ((int8_t *)p)[i] = hl_f64_to_i8_sat(v); break;
  }
}

/* ------------------------------------------------------------- random -- */

/* Standard normal by Box-Muller from two Philox words: u1 in (0, 1] so the
 * log is finite, u2 in [0, 1). */
HL_HD static inline float hl_normal_from_words_f32(uint32_t w0, uint32_t w1) {
  float u1 = (float)((w0 >> 8) + 1u) * 0x1p-24f;
  float u2 = (float)(w1 >> 8) * 0x1p-24f;
  return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958648f * u2);
}

HL_HD static inline double hl_normal_from_words_f64(uint32_t w0, uint32_t w1) {
  double u1 = (double)((w0 >> 8) + 1u) * 0x1p-24;
  double u2 = (double)(w1 >> 8) * 0x1p-24;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586477 * u2);
}

#ifdef __cplusplus
}
#endif

#endif /* HL_TENSOR_MATH_H */
