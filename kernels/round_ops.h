/* round_ops.h — single fp32/fp64 operations, each rounded once on both
 * backends: on the device through the _rn intrinsics, which nvcc never
 * contracts into an FMA, on the host as plain C (the build targets SSE2
 * without FMA and does not contract a*b+c). Element-wise math that must
 * agree bit for bit between the CPU loops and the CUDA kernels (optimizer
 * steps, the stream kernels) is written with these. */
#ifndef HL_ROUND_OPS_H
#define HL_ROUND_OPS_H

#include "formats/half.h"

#ifdef __cplusplus
extern "C" {
#endif

HL_HD static inline float hl_mul_rn(float a, float b) {
#if HL_DEVICE_CODE
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
HL_HD static inline float hl_add_rn(float a, float b) {
#if HL_DEVICE_CODE
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
HL_HD static inline float hl_sub_rn(float a, float b) {
#if HL_DEVICE_CODE
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
/* hl_div_rn is in formats/half.h, whose fp16/bf16 division is built on it */
HL_HD static inline float hl_sqrt_rn(float a) {
#if HL_DEVICE_CODE
  return __fsqrt_rn(a);
#else
  return __builtin_sqrtf(a);
#endif
}
HL_HD static inline double hl_dmul_rn(double a, double b) {
#if HL_DEVICE_CODE
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
HL_HD static inline double hl_dadd_rn(double a, double b) {
#if HL_DEVICE_CODE
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

#ifdef __cplusplus
}
#endif

#endif /* HL_ROUND_OPS_H */
