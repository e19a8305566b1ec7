/* tensor_internal.h — what the core's own files (tensor.c, ops_*.c,
 * autograd.c, autocast.c) share about tensors and kernels; not for
 * programs. */
#ifndef HL_TENSOR_INTERNAL_H
#define HL_TENSOR_INTERNAL_H

#include "core/base/error.h"
#include "core/engine/tensor.h"
#include "kernels/backend.h"
#include "kernels/tensor_kernels.h"

/* A new tensor with fresh, uninitialised contiguous storage; NULL with a
 * message naming `what` (an op name) when out of memory. */
hl_tensor *hl_tensor_new(const char *what, int ndim, const int64_t *shape, hl_dtype dtype, hl_device_kind device);
/* A view of base's storage (retained) with the given geometry. */
hl_tensor *hl_tensor_view_of(const hl_tensor *base, int ndim, const int64_t *shape, const int64_t *stride,
                             int64_t offset);

/* Row-major strides of a shape. */
void hl_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride);

/* The kernel operand for t, broadcast to `ndim_out` dims right-aligned
 * against out_shape (size-1 or missing dims get stride 0), padded to 4. */
hl_kview hl_kview_of(const hl_tensor *t, int ndim_out, const int64_t *out_shape);
/* 4-dim index space of a shape (leading 1s). */
void hl_size4(int ndim, const int64_t *shape, int64_t size4[HL_MAX_DIMS]);

/* The tensor kernels of a device, or NULL with "op: no CUDA kernels in
 * this build yet" (naming `what`). */
const struct hl_tensor_kernels *hl_kernels_for(hl_device_kind device, const char *what);

/* The byte range [lo, hi) of storage a view touches. */
void hl_tensor_span(const hl_tensor *t, int64_t *lo_elem, int64_t *hi_elem);

/* In-place writes go through this check (grad_fn / leaf requiring grad). */
bool hl_check_inplace(const char *what, const hl_tensor *t);

#endif
