/* half_arrays.h — fp16/bf16 <-> fp32 conversion of whole arrays on the CPU,
 * for the loops that stream through memory (tensor copies and element-wise
 * blocks, GEMM operand widening, kernels/convert.h's CPU twin). Bit for bit
 * what formats/half.h's per-element functions give, on every path: those
 * are the reference, and the vector paths correct the instructions where
 * they differ (kernels/cpu/half_simd.h). Serial: callers split the work among
 * their threads.
 *
 * A path is one way of converting, per type:
 *
 *   path      fp16 (both ways)            bf16 -> fp32      fp32 -> bf16
 *   portable  half.h, element by element  half.h            half.h
 *   avx2      F16C on 8 lanes             AVX2 shift        AVX2 integer RNE
 *   avx512    (none: F16C is faster)      AVX-512 shift     vcvtneps2bf16 + subnormal fix-up, 16 lanes
 *
 * The kernels use the fastest path the CPU has that hl_cpu_units_get()
 * allows (fp16's avx2 path needs the f16c unit, bf16's avx512 path the
 * avx512_bf16 unit), chosen once, on the first call;
 * HALFLAB_CPU_UNITS=portable gives the portable path for both types. */
#ifndef HL_CPU_HALF_ARRAYS_H
#define HL_CPU_HALF_ARRAYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/dtype.h"
#include "formats/round.h"
#include "kernels/host.h"

/* The conversions the kernels call, the chosen path's: hl_cpu_widen_f16,
 * hl_cpu_narrow_f16, the bf16 pair, and hl_cpu_widen / hl_cpu_narrow by
 * dtype. Public (programs convert arrays with them too): kernels/host.h. */
/* hl_cpu_widen for values that are computed on at once and rounded back
 * (GEMM operands, element-wise blocks, sums): a signalling NaN may come out
 * quiet, as the arithmetic leaves it anyway, so the results keep their
 * bits. fp16's F16C path then skips the fix-up that keeps a signalling
 * NaN's bits (half_simd.h): with it, widening took 1.8x as long in cache
 * on the Zen 4 development machine. Other values: widen's
 * bits. */
void hl_cpu_widen_operand(hl_dtype t, const uint16_t *src, float *dst, size_t n);

/* dst[i] = hl_round_bits(spec, src[i], word first_index + i of spec's
 * Philox stream), i < n, as codes of hl_format_code_bytes(spec->format)
 * bytes: through hl_cpu_narrow (F16C, AVX512-BF16 or AVX2 where the CPU has
 * them) when the spec is fp16's or bf16's IEEE default (nearest even, IEEE
 * overflow, subnormals kept), which those paths implement; element by
 * element otherwise (hl_round_bits: half.h's conversion or the generic
 * rounding). A spec that is not hl_round_spec_valid is fatal. */
void hl_cpu_round_array(const hl_round_spec *spec, const float *src, void *dst, size_t n, uint64_t first_index);
/* Whether hl_cpu_round_array takes hl_cpu_narrow's path for spec. */
bool hl_cpu_round_array_vectorised(const hl_round_spec *spec);

typedef enum {
  HL_HALF_PATH_PORTABLE = 0, /* formats/half.h, one element at a time */
  HL_HALF_PATH_AVX2,         /* 8 lanes (AVX2; F16C for fp16) */
  HL_HALF_PATH_AVX512,       /* 16 lanes (AVX-512 F/BW/VL/DQ/CD and AVX512-BF16); bf16 only */
  HL_HALF_PATH_COUNT
} hl_cpu_half_path;

/* "portable", "avx2", "avx512" */
const char *hl_cpu_half_path_name(hl_cpu_half_path p);
/* What path p needs for t (HL_F16 or HL_BF16), in words: "AVX2 and F16C" */
const char *hl_cpu_half_path_needs(hl_dtype t, hl_cpu_half_path p);
/* Whether this CPU (and its OS) can run path p for t, whatever
 * HALFLAB_CPU_UNITS says: the tests run every path that is present. */
bool hl_cpu_half_path_present(hl_dtype t, hl_cpu_half_path p);
/* The path the kernels use for t (the array conversions above and the
 * stream kernels): the fastest present one that hl_cpu_units_get() allows. */
hl_cpu_half_path hl_cpu_half_path_chosen(hl_dtype t);

/* One path's array conversions, the functions the ones above dispatch to
 * (for tests; only where hl_cpu_half_path_present). */
typedef void (*hl_cpu_widen_fn)(const uint16_t *src, float *dst, size_t n);
typedef void (*hl_cpu_narrow_fn)(const float *src, uint16_t *dst, size_t n);
hl_cpu_widen_fn hl_cpu_half_path_widen(hl_dtype t, hl_cpu_half_path p);
hl_cpu_narrow_fn hl_cpu_half_path_narrow(hl_dtype t, hl_cpu_half_path p);
hl_cpu_widen_fn hl_cpu_half_path_widen_operand(hl_dtype t, hl_cpu_half_path p);

#endif
