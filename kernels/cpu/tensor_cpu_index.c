/* tensor_cpu_index.c — embedding lookup and its backward (scatter-add) on
 * the CPU. The backward splits the columns among threads, never the
 * indices, so no two threads add into one element and the order of the
 * additions is the index order whatever the thread count. */
#include <stdlib.h>

#include "kernels/cpu/tensor_cpu.h"

#define EMB_COL_CHUNK 64

void hl_cpu_embedding(hl_dtype t, void *out, const void *weight, const int32_t *idx, int64_t n, int64_t dim,
                      int64_t vocab, int32_t *bad) {
  const size_t row = (size_t)dim * hl_dtype_size(t);
  int32_t nbad = 0;
#pragma omp parallel for schedule(static) reduction(+ : nbad) if (n * dim >= HL_PAR_MIN)
  for (int64_t i = 0; i < n; i++) {
    char *o = (char *)out + (size_t)i * row;
    if (idx[i] < 0 || idx[i] >= vocab) {
      nbad++;
      memset(o, 0, row);
    } else {
      memcpy(o, (const char *)weight + (size_t)idx[i] * row, row);
    }
  }
  *bad = nbad;
}

#define EMBEDDING_BACKWARD(SUF, T, CT, CS)                                                                  \
  static void embedding_backward_##SUF(T *dw, const T *dy, const int32_t *idx, int64_t n, int64_t dim,       \
                                       int64_t vocab) {                                                     \
    /* accumulate in CT: in place for f32/f64, in a wider copy for f16/bf16 */                              \
    const bool direct = sizeof(T) == sizeof(CT);                                                            \
    CT *acc = direct ? (CT *)(void *)dw : calloc((size_t)(vocab * dim), sizeof(CT));                        \
    HL_CHECK_ALLOC(acc, sizeof(CT) * (size_t)(vocab * dim), "embedding_backward's wide accumulator");       \
    if (direct) memset(acc, 0, sizeof(CT) * (size_t)(vocab * dim));                                         \
    const int64_t chunks = (dim + EMB_COL_CHUNK - 1) / EMB_COL_CHUNK;                                       \
    _Pragma("omp parallel for schedule(static) if (n * dim >= HL_PAR_MIN)")                                 \
    for (int64_t c = 0; c < chunks; c++) {                                                                  \
      int64_t c0 = c * EMB_COL_CHUNK, w = hl_min64(EMB_COL_CHUNK, dim - c0);                                \
      for (int64_t i = 0; i < n; i++) {                                                                     \
        if (idx[i] < 0 || idx[i] >= vocab) continue;                                                        \
        CT *dst = acc + (int64_t)idx[i] * dim + c0;                                                         \
        const T *src = dy + i * dim + c0;                                                                   \
        for (int64_t k = 0; k < w; k++) dst[k] += (CT)HL_LD_##SUF(src[k]);                                  \
      }                                                                                                     \
    }                                                                                                       \
    if (!direct) {                                                                                          \
      for (int64_t k = 0; k < vocab * dim; k++) dw[k] = HL_ST_##SUF(acc[k]);                                \
      free(acc);                                                                                            \
    }                                                                                                       \
  }

HL_FOR_FLOAT_TYPES(EMBEDDING_BACKWARD)

void hl_cpu_embedding_backward(hl_dtype t, void *dweight, const void *dy, const int32_t *idx, int64_t n,
                               int64_t dim, int64_t vocab) {
  switch (t) {
    case HL_F64: embedding_backward_F64(dweight, dy, idx, n, dim, vocab); break;
    case HL_F32: embedding_backward_F32(dweight, dy, idx, n, dim, vocab); break;
    case HL_F16: embedding_backward_F16(dweight, dy, idx, n, dim, vocab); break;
    case HL_BF16: embedding_backward_BF16(dweight, dy, idx, n, dim, vocab); break;
    default: break;
  }
}
