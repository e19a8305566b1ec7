/* onednn_direct.h — oneDNN's bf16 matmul with nothing of halflab's around
 * it, for halflab-bench gemm's `onednn-bf16` reference variant (the bf16
 * path is held to it as the fp32 path is held to cblas_sgemm). The
 * primitive, its stream and memory objects are made here, before any time is
 * taken; the timed call is the library's own dnnl_memory_set_data_handle,
 * dnnl_primitive_execute and dnnl_stream_wait (bench/gemm.c). The primitive
 * is made as the GEMM path makes its own (onednn_gemm.c), so both run the
 * same implementation. Only in builds with oneDNN (HL_HAVE_ONEDNN). */
#ifndef HL_CPU_ONEDNN_DIRECT_H
#define HL_CPU_ONEDNN_DIRECT_H

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernels/gemm.h"

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
