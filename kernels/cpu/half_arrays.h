/* half_arrays.h — fp16/bf16 <-> fp32 conversion of whole arrays on the CPU,
 * for the loops that stream through memory (bandwidth kernels, GEMM operand
 * widening). Bit for bit what formats/half.h's per-element functions give (RNE;
 * NaN stays NaN), eight at a time with AVX2 + F16C where the CPU has them
 * (kernels/cpu/half_simd.h), element by element elsewhere. Serial: callers
 * split the work among their threads. */
#ifndef HL_CPU_HALF_ARRAYS_H
#define HL_CPU_HALF_ARRAYS_H

#include <stddef.h>
#include <stdint.h>

void hl_cpu_widen_f16(const uint16_t *src, float *dst, size_t n);
void hl_cpu_narrow_f16(const float *src, uint16_t *dst, size_t n);
void hl_cpu_widen_bf16(const uint16_t *src, float *dst, size_t n);
void hl_cpu_narrow_bf16(const float *src, uint16_t *dst, size_t n);

#endif
