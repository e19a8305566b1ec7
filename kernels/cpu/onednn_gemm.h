/* onednn_gemm.h — bf16 GEMM on the CPU's bf16 units (AVX512-BF16, AMX-BF16)
 * through oneDNN's matmul primitive, behind the CPU backend's GEMM entry
 * point (gemm_cpu.c), so the benchmarks and the AMP core's matmuls reach it
 * alike.
 *
 * It takes a GEMM when oneDNN is built in (libdnnl-dev at configure time),
 * hl_cpu_units_get() allows avx512_bf16 or amx_bf16 (not with
 * HALFLAB_CPU_UNITS=portable), A and B are both bf16, the accumulation is
 * fp32 and C is bf16 or fp32, and oneDNN has an optimised implementation for
 * the layout. Everything else stays on the widening path (fp32 copies,
 * sgemm, one rounding): fp16 above all, since oneDNN 2.6 has no CPU fp16
 * matmul, and fp16 operands never run as bf16.
 *
 * The products are exact in fp32 (8-bit significands) and the sums are fp32,
 * as on the widening path; the bf16 instructions treat subnormal inputs and
 * results as zero (DAZ/FTZ), so values below 2^-126 may differ.
 *
 * Primitives are cached per shape and layout (onednn_gemm.c: a bounded,
 * thread-safe cache); what oneDNN cannot run is cached too, as the reason.
 * A oneDNN failure other than "cannot run this" stops the program through
 * hl_fatal, naming the primitive and oneDNN's status (exit status 1). */
#ifndef HL_CPU_ONEDNN_GEMM_H
#define HL_CPU_ONEDNN_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/gemm.h"
#include "kernels/gemm_reference.h"
#include "kernels/host.h"

/* Runs d through oneDNN if it qualifies (see above): true when it ran,
 * false when the caller must take the widening path. d has m, n, k > 0. */
bool hl_onednn_gemm(const hl_gemm_desc *d);

/* hl_onednn_gemm_describe and hl_onednn_matmul_check (what the GEMM path
 * and oneDNN itself make of d) are public: kernels/gemm_reference.h;
 * hl_onednn_line (the CSV metadata's line): kernels/host.h. */

/* The primitive cache, for tests and notes. */
typedef struct {
  int entries, capacity; /* entries <= capacity, always */
  uint64_t hits;         /* calls that found their primitive */
  uint64_t created;      /* entries made (primitives, or a reason oneDNN cannot) */
} hl_onednn_cache_stats;

hl_onednn_cache_stats hl_onednn_cache_stats_get(void);

#endif
