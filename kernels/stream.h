/* stream.h — the bandwidth kernels of BabelStream (copy, scale, add, triad,
 * dot) over fp32, fp16 and bf16 arrays, one table per backend.
 *
 *   copy   c[i] = a[i]              2 arrays moved
 *   scale  b[i] = s * c[i]          2
 *   add    c[i] = a[i] + b[i]       3
 *   triad  a[i] = b[i] + s * c[i]   3
 *   dot    sum a[i] * b[i]          2
 *
 * Bytes moved = arrays x sizeof(element) x n (BabelStream's accounting: what
 * the kernel must read and write, not what the caches add on top).
 *
 * Arithmetic is done in fp32 on the widened values and rounded once to the
 * storage type; the bodies are shared by both backends (kernels/stream_ops.h),
 * so CPU and GPU produce the same bits for the element-wise kernels. dot
 * accumulates fp32 products in fp32 partial sums (at most a few thousand
 * terms each, see the backends) that are added in fp64.
 *
 * All entry points run on the backend's stream/threads; on the GPU they are
 * asynchronous except dot, which waits for its result. */
#ifndef HL_STREAM_H
#define HL_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The element types the kernels move: f32, f16 and bf16, adjacent in
 * hl_dtype (formats/dtype.h), so that a loop over them runs from HL_F32 to
 * HL_BF16 and a table of them is indexed by hl_stream_slot(t), 0 .. 2. */
#define HL_STREAM_DTYPES 3
static inline bool hl_stream_dtype_ok(hl_dtype t) { return t >= HL_F32 && t <= HL_BF16; }
static inline int hl_stream_slot(hl_dtype t) { return (int)t - HL_F32; }

struct hl_stream_kernels {
  /* a[i] = va, b[i] = vb, c[i] = vc (each rounded to t). On the CPU the
   * pages are first touched by the threads that later run the kernels. */
  void (*init)(hl_dtype t, void *a, void *b, void *c, size_t n, float va, float vb, float vc);
  void (*copy)(hl_dtype t, const void *a, void *c, size_t n);
  void (*scale)(hl_dtype t, void *b, const void *c, float s, size_t n);
  void (*add)(hl_dtype t, const void *a, const void *b, void *c, size_t n);
  void (*triad)(hl_dtype t, void *a, const void *b, const void *c, float s, size_t n);
  double (*dot)(hl_dtype t, const void *a, const void *b, size_t n);

  /* The reference copies, measured beside the kernels: the bandwidth
   * reference at a size is the fastest of them (halflab-bench bandwidth).
   * Several ways of copying `bytes`, because no single one is the fastest
   * everywhere: regular stores win while the arrays fit in cache, streaming
   * (non-temporal) stores beyond it, where a regular store first reads the
   * line it writes. copy_ref_name(i) names copy i, or is NULL past the last
   * one this device runs (0 is always there); copy_ref(i, ...) runs it on the
   * kernels' threads (GPU: asynchronously). */
  const char *(*copy_ref_name)(int which);
  void (*copy_ref)(int which, void *dst, const void *src, size_t bytes);

  /* Page-locked host memory for the host<->device table; NULL on the CPU. */
  void *(*host_alloc_pinned)(size_t bytes);
  void (*host_free_pinned)(void *p);
};


#ifdef __cplusplus
}
#endif

#endif
