/* blas.h — the CPU's BLAS, opened by halflab itself at first use.
 *
 * OpenBLAS built with DYNAMIC_ARCH picks its kernel set once, while the
 * library initialises, from its own table of CPU models, or from
 * OPENBLAS_CORETYPE when that is set. Debian 12's OpenBLAS 0.3.21 does not
 * know recent CPUs (Intel family 6 model 207, for one) and falls back to its
 * generic Prescott (SSE3) kernels, 4-10x slower than the AVX-512 ones it also
 * ships. A library linked at build time initialises before main() runs, so
 * no program could choose for it. halflab therefore does not link the BLAS:
 * it opens it here, after choosing a kernel set from the CPU's own features
 * (kernels/cpu/cpu_features.h), and restores the environment afterwards. A
 * user's own OPENBLAS_CORETYPE always wins.
 *
 * Every call into the BLAS goes through hl_blas() (kernels/gemm_reference.h):
 * the GEMM kernels and the benchmarks' direct reference calls alike, so both
 * sides of a comparison run the same library with the same kernels; what
 * was loaded is hl_blas_info_get() (kernels/host.h). */
#ifndef HL_CPU_BLAS_H
#define HL_CPU_BLAS_H

#include <stdbool.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/gemm_reference.h" /* hl_blas_api, hl_blas() */
#include "kernels/host.h"           /* hl_blas_info, hl_blas_info_get() */

/* The kernel set halflab asks OpenBLAS for on a CPU with these features
 * when OPENBLAS_CORETYPE is unset, or NULL to leave the choice to the library:
 * Cooperlake (AVX-512 with BF16), SkylakeX (AVX-512), Haswell / Zen (AVX2 and
 * FMA, by vendor), Sandybridge (AVX). These are the names newer OpenBLAS
 * releases choose for the same features. */
const char *hl_blas_pick_kernels(const hl_cpu_features *f);

/* The widest instruction set a named OpenBLAS kernel set uses: "avx512",
 * "avx2", "avx", "sse" (the generic sets), or NULL for a name not known here. */
const char *hl_blas_kernels_isa(const char *kernels);

#endif
