/* tensor_index.h — how the strided kernels of both backends simplify their
 * index space before walking it. Plain C that nvcc also compiles (HL_HD),
 * shared by the CPU loops (kernels/cpu/tensor_cpu*.c) and the CUDA plan
 * (kernels/cuda/tensor_cuda_plan.h), so both backends walk the same index
 * space and the unit suite checks the rule on the CPU. */
#ifndef HL_TENSOR_INDEX_H
#define HL_TENSOR_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/half.h"
#include "kernels/tensor_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most operands one strided kernel walks together (out, a, b). */
#define HL_COALESCE_MAX_OPS 3

/* Merges dims that are contiguous in every operand (stride[d] ==
 * stride[d+1] * size[d+1] for all) and drops size-1 dims; the result keeps
 * HL_MAX_DIMS dims with leading 1s (stride 0). strides[k] for
 * k < nops <= HL_COALESCE_MAX_OPS are rewritten in place. Returns the number
 * of meaningful trailing dims. */
HL_HD static inline int hl_coalesce(int64_t size[HL_MAX_DIMS], int64_t *const strides[], int nops) {
  int64_t s[HL_MAX_DIMS], st[HL_COALESCE_MAX_OPS][HL_MAX_DIMS];
  int n = 0;
  /* walk from the innermost dim outwards, merging where every operand is contiguous across */
  for (int d = HL_MAX_DIMS - 1; d >= 0; d--) {
    if (size[d] == 1) continue;
    if (n > 0) {
      bool merge = true;
      for (int k = 0; k < nops; k++)
        if (strides[k][d] != st[k][n - 1] * s[n - 1]) merge = false;
      if (merge) {
        s[n - 1] *= size[d];
        continue;
      }
    }
    s[n] = size[d];
    for (int k = 0; k < nops; k++) st[k][n] = strides[k][d];
    n++;
  }
  /* s[0] is the innermost: it goes to the last dim, s[1] to the one before, ...; padding dims are size 1 */
  for (int j = 0; j < HL_MAX_DIMS; j++) {
    const int d = HL_MAX_DIMS - 1 - j;
    size[d] = j < n ? s[j] : 1;
    for (int k = 0; k < nops; k++) strides[k][d] = j < n ? st[k][j] : 0;
  }
  return n;
}

#ifdef __cplusplus
}
#endif

#endif /* HL_TENSOR_INDEX_H */
