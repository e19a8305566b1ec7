/* tensor.h — tensors of the AMP core: dtype, device, shape and strides over
 * a reference-counted storage whose bytes come from the accounting
 * allocator (core/base/mem.h), so current and peak bytes per device are exact.
 *
 *   hl_tensor *w = hl_randn(HL_SHAPE(1024, 784), 0.0, 0.02, seed, 0, HL_F32, HL_DEVICE_CPU);
 *   hl_tensor_set_name(w, "fc1.weight");
 *   hl_set_requires_grad(w, true);
 *   ...
 *   hl_release(w);
 *
 * Ownership: every function returning hl_tensor * gives the caller one
 * reference (release it with hl_release), except those documented as
 * "borrowed". Views (transpose, reshape, slice: ops.h) share storage and
 * keep it alive. Autograd graphs hold what backward needs, so intermediate
 * tensors may be released as soon as the caller is done with them.
 *
 * The struct is visible so that the rest of the core can read shapes
 * cheaply; outside core/engine/ treat every field as read-only and use the
 * functions below to change anything.
 */
#ifndef HL_TENSOR_H
#define HL_TENSOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/backend.h"
#include "kernels/tensor_kernels.h" /* hl_dtype, HL_MAX_DIMS */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hl_node hl_node;     /* autograd: the op that produced a tensor */
typedef struct hl_tensor hl_tensor;

typedef struct {
  int ndim; /* 0 (a scalar) to HL_MAX_DIMS */
  int64_t d[HL_MAX_DIMS];
} hl_shape;

/* HL_SHAPE(256, 784): a shape of 1 to 4 dims; HL_SCALAR_SHAPE: 0 dims. */
#define HL_SHAPE(...) hl_shape_of(HL_NARGS_(__VA_ARGS__), (const int64_t[]){__VA_ARGS__})
#define HL_NARGS_(...) HL_NARGS_PICK_(__VA_ARGS__, 4, 3, 2, 1, 0)
#define HL_NARGS_PICK_(a, b, c, d, n, ...) n
#define HL_SCALAR_SHAPE ((hl_shape){0, {0}})
hl_shape hl_shape_of(int ndim, const int64_t *dims);

typedef struct hl_storage {
  void *data;
  size_t bytes;
  hl_device_kind device;
  atomic_int refs;
  /* Bumped by every in-place write: backward refuses saved tensors whose
   * storage changed after they were saved (instead of using stale data). */
  atomic_uint version;
} hl_storage;

struct hl_tensor {
  hl_dtype dtype;
  hl_device_kind device;
  int ndim;
  int64_t shape[HL_MAX_DIMS];
  int64_t stride[HL_MAX_DIMS]; /* elements */
  int64_t offset;              /* elements from storage->data */
  hl_storage *storage;
  bool requires_grad;
  hl_tensor *grad;  /* accumulated gradient (leaves); owned */
  hl_node *grad_fn; /* op that made it; NULL for leaves */
  char *name;
  atomic_int refs;
};

/* ------------------------------------------------------------ creation -- */
/* NULL (with hl_error) on a bad shape, unknown dtype, unusable device or
 * out of memory. Random tensors use Philox4x32-10 (formats/philox.h):
 * element i depends only on (seed, stream, i), so CPU and GPU agree and
 * each parameter can take its own stream. */

hl_tensor *hl_empty(hl_shape shape, hl_dtype dtype, hl_device_kind device);
hl_tensor *hl_zeros(hl_shape shape, hl_dtype dtype, hl_device_kind device);
hl_tensor *hl_ones(hl_shape shape, hl_dtype dtype, hl_device_kind device);
hl_tensor *hl_full(hl_shape shape, double value, hl_dtype dtype, hl_device_kind device);
hl_tensor *hl_scalar(double value, hl_dtype dtype, hl_device_kind device);
/* From host arrays of numel values (row-major), converted to dtype
 * (rounded once, integers saturated). */
hl_tensor *hl_from_f32(hl_shape shape, const float *data, hl_dtype dtype, hl_device_kind device);
hl_tensor *hl_from_f64(hl_shape shape, const double *data, hl_dtype dtype, hl_device_kind device);
hl_tensor *hl_from_i32(hl_shape shape, const int32_t *data, hl_dtype dtype, hl_device_kind device);
/* Normal(mean, std) and uniform [lo, hi). */
hl_tensor *hl_randn(hl_shape shape, double mean, double std, uint64_t seed, uint64_t stream, hl_dtype dtype,
                    hl_device_kind device);
hl_tensor *hl_rand(hl_shape shape, double lo, double hi, uint64_t seed, uint64_t stream, hl_dtype dtype,
                   hl_device_kind device);

/* ----------------------------------------------------------- ownership -- */

hl_tensor *hl_retain(hl_tensor *t); /* returns t; NULL-safe */
void hl_release(hl_tensor *t);      /* NULL-safe */

/* Temporaries: hl_tmp(t) hands t to the innermost pool, which releases it
 * at hl_pool_pop(); handy for chains such as
 *   hl_tensor *y = hl_relu(hl_tmp(hl_linear(x, w, b)));
 * The autograd engine opens a pool around each backward function. */
void hl_pool_push(void);
void hl_pool_pop(void);
/* Returns t. Outside any pool it does nothing (the caller keeps the
 * reference), so open a pool wherever hl_tmp is used. */
hl_tensor *hl_tmp(hl_tensor *t);

/* ----------------------------------------------------------- read back -- */
/* numel values in row-major order of the (possibly strided) tensor, from
 * any dtype and device. false with hl_error on failure. */
bool hl_read_f32(const hl_tensor *t, float *out);
bool hl_read_f64(const hl_tensor *t, double *out);
bool hl_read_i32(const hl_tensor *t, int32_t *out);
/* The value of a one-element tensor; NaN with hl_error otherwise. */
double hl_item(const hl_tensor *t);

/* -------------------------------------------------------- description -- */

int64_t hl_numel(const hl_tensor *t);
bool hl_is_contiguous(const hl_tensor *t);
hl_shape hl_tensor_shape(const hl_tensor *t);
bool hl_shape_equal(hl_shape a, hl_shape b);
/* "f32[256,784]" ("f32[]" for a scalar, "NULL"); the text lives in a
 * small per-thread ring, valid for the next few calls. */
const char *hl_desc(const hl_tensor *t);
const char *hl_shape_desc(hl_shape s);

/* Names: parameters are listed by name later (optimizers, checkpoints). */
void hl_tensor_set_name(hl_tensor *t, const char *name);
const char *hl_tensor_name(const hl_tensor *t); /* "" when unnamed */

/* Device pointer to the first element. Writers outside the core must call
 * hl_tensor_mark_modified afterwards (see hl_storage.version). */
void *hl_tensor_data(const hl_tensor *t);
void hl_tensor_mark_modified(hl_tensor *t);
size_t hl_tensor_nbytes(const hl_tensor *t); /* numel * element size */

/* ------------------------------------------------------------ autograd -- */

/* Only leaves (tensors no op produced) take requires_grad; float dtypes only. */
bool hl_set_requires_grad(hl_tensor *t, bool requires_grad);
bool hl_requires_grad(const hl_tensor *t);
bool hl_is_leaf(const hl_tensor *t);
/* The accumulated gradient (borrowed; NULL before any backward). */
hl_tensor *hl_tensor_grad(const hl_tensor *t);
/* Drops the gradient ("set to none"; the next backward stores a fresh one
 * instead of adding into the old). */
void hl_zero_grad(hl_tensor *t);
/* A tensor sharing t's storage, without history. */
hl_tensor *hl_detach(hl_tensor *t);

/* ------------------------------------------------------------ in place -- */
/* Not differentiable. Refused on tensors that have a grad_fn, and on leaves
 * that require grad while grad mode is on (do optimizer updates inside
 * HL_NO_GRAD). Each bumps the storage version. */
bool hl_fill_(hl_tensor *t, double value);
bool hl_copy_(hl_tensor *dst, const hl_tensor *src); /* converts dtype; same shape, same device */
bool hl_add_(hl_tensor *dst, const hl_tensor *src);  /* dst += src, same dtype and shape (src may broadcast) */
bool hl_scale_(hl_tensor *t, double factor);          /* t *= factor */

#ifdef __cplusplus
}
#endif

#endif /* HL_TENSOR_H */
