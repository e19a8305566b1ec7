/* gemm_reference.h — the CPU GEMMs that halflab's own GEMM path is held to,
 * for the benchmarks and examples: the BLAS's sgemm and dgemm called
 * directly, oneDNN's bf16 matmul called directly, the CPU backend's
 * widening path on its own, and what oneDNN makes of a GEMM. Programs reach
 * these here, never through the backend folder (kernels/cpu/ is private to
 * kernels/: tools/check_layers.py). Defined in kernels/cpu/ (blas.c,
 * gemm_cpu.c, onednn_gemm.c or onednn_absent.c).
 *
 * The direct calls are the libraries' own functions: a benchmark that times
 * them times no halflab code. */
#ifndef HL_GEMM_REFERENCE_H
#define HL_GEMM_REFERENCE_H

#include <cblas.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernels/gemm.h"

#ifdef HL_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#endif

/* ------------------------------------------------------------ the BLAS -- */
/* Every call into the BLAS goes through hl_blas(): the GEMM kernels and the
 * benchmarks' direct reference calls alike, so both sides of a comparison
 * run the same library with the same kernels (kernels/cpu/blas.h: how the
 * kernel set is chosen; host.h: hl_blas_info_get says which). */
typedef struct {
  __typeof__(cblas_sgemm) *sgemm;
  __typeof__(cblas_dgemm) *dgemm;
} hl_blas_api;

/* The BLAS's entry points, loading the library on the first call. A library
 * that cannot be opened, or lacks sgemm/dgemm, ends the process with
 * file:line and dlerror()'s text (exit status 1). */
const hl_blas_api *hl_blas(void);

/* ------------------------------------------- the CPU's widening path -- */
/* The CPU's GEMM without oneDNN (gemm_cpu.c): fp32 and fp64 on the BLAS, half
 * operands widened to fp32 for sgemm and rounded once. The backend's gemm()
 * hands it whatever oneDNN does not take; benchmarks time it on its own. */
void hl_cpu_gemm_blas(const hl_gemm_desc *d);

/* ------------------------------------------------------------- oneDNN -- */
/* The CPU backend's gemm() runs bf16 A and B on oneDNN's matmul where it is
 * built in and the CPU's bf16 units are allowed (kernels/cpu/onednn_gemm.h).
 *
 * What the backend's gemm() does with d: true and "onednn 2.6.3
 * brg:avx512_core_bf16" (engine, version, the implementation and ISA oneDNN
 * chose), or false and why the widening path runs it. No commas (CSV). */
bool hl_onednn_gemm_describe(const hl_gemm_desc *d, char *out, size_t len);

/* Can oneDNN's matmul itself run d, whatever HALFLAB_CPU_UNITS says (for
 * the benchmark's direct reference)? Same wording as above. */
bool hl_onednn_matmul_check(const hl_gemm_desc *d, char *out, size_t len);

#ifdef HL_HAVE_ONEDNN
/* oneDNN's bf16 matmul with nothing of halflab's around it, for
 * halflab-bench gemm's `onednn-bf16` reference variant (the bf16 path is
 * held to it as the fp32 path is held to cblas_sgemm). The primitive, its
 * stream and memory objects are made here, before any time is taken; the
 * timed call is the library's own dnnl_memory_set_data_handle,
 * dnnl_primitive_execute and dnnl_stream_wait. The primitive is made as the
 * GEMM path makes its own (onednn_gemm.c), so both run the same
 * implementation. Only in builds with oneDNN (HL_HAVE_ONEDNN). */
typedef struct {
  dnnl_primitive_t primitive;
  dnnl_stream_t stream;
  dnnl_memory_t a, b, c, scratchpad;
  dnnl_exec_arg_t args[4]; /* SRC a, WEIGHTS b, DST c, SCRATCHPAD */
  int nargs;
  void *scratchpad_data;
  char what[160]; /* "onednn 2.6.3 brg:avx512_core_bf16" */
} hl_onednn_direct;

/* The primitive for d's shape, layout, alpha and beta, its memory objects
 * on d's operands; false and why (r untouched) where oneDNN cannot run d. */
bool hl_onednn_direct_make(hl_onednn_direct *r, const hl_gemm_desc *d, char *why, size_t len);
void hl_onednn_direct_free(hl_onednn_direct *r);
#endif

#endif /* HL_GEMM_REFERENCE_H */
