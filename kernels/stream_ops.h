/* stream_ops.h — the element-wise arithmetic of kernels/stream.h, shared by
 * the CPU loops and the CUDA kernels so that the CPU tests cover what the
 * GPU computes.
 *
 * Values are widened to fp32, combined in fp32 and rounded once to the
 * storage type. The product and the sum of triad are rounded separately on
 * both backends: nvcc would otherwise contract b + s*c into one FMA (one
 * rounding) while the CPU build without FMA rounds twice, and the two
 * backends would no longer agree bit for bit. */
#ifndef HL_STREAM_OPS_H
#define HL_STREAM_OPS_H

#include "formats/half.h"
#include "kernels/round_ops.h"
#include "kernels/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

HL_HD static inline float hl_stream_scale_op(float s, float c) { return hl_mul_rn(s, c); }
HL_HD static inline float hl_stream_add_op(float a, float b) { return hl_add_rn(a, b); }
HL_HD static inline float hl_stream_triad_op(float b, float s, float c) {
  return hl_add_rn(b, hl_mul_rn(s, c));
}
/* exact for fp16 and bf16 inputs (11 + 11 and 8 + 8 significant bits fit fp32's 24) */
HL_HD static inline float hl_stream_dot_term(float a, float b) { return hl_mul_rn(a, b); }

/* storage <-> fp32 */

/* A value as the storage type holds it (the benchmark's expected results) */
HL_HD static inline float hl_stream_round(hl_dtype t, float v) {
  return t == HL_F16 ? hl_f16_to_f32(hl_f32_to_f16(v)) : t == HL_BF16 ? hl_bf16_to_f32(hl_f32_to_bf16(v)) : v;
}

#ifdef __cplusplus
}
#endif

#endif
