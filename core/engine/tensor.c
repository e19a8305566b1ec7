/* tensor.c — tensor lifetime, creation, read back, in-place writes. */
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/autograd.h"
#include "formats/fatal.h"
#include "core/base/device.h"
#include "core/base/mem.h"
#include "core/engine/node.h"
#include "core/engine/tensor_internal.h"

/* -------------------------------------------------------------- shapes -- */

hl_shape hl_shape_of(int ndim, const int64_t *dims) {
  hl_shape s = {ndim, {0}};
  for (int i = 0; i < ndim && i < HL_MAX_DIMS; i++) s.d[i] = dims[i];
  return s;
}

bool hl_shape_equal(hl_shape a, hl_shape b) {
  if (a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; i++)
    if (a.d[i] != b.d[i]) return false;
  return true;
}

hl_shape hl_tensor_shape(const hl_tensor *t) { return hl_shape_of(t->ndim, t->shape); }

void hl_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    stride[d] = s;
    s *= shape[d] > 0 ? shape[d] : 1;
  }
}

void hl_size4(int ndim, const int64_t *shape, int64_t size4[HL_MAX_DIMS]) {
  for (int d = 0; d < HL_MAX_DIMS; d++) {
    int src = d - (HL_MAX_DIMS - ndim);
    size4[d] = src >= 0 ? shape[src] : 1;
  }
}

hl_kview hl_kview_of(const hl_tensor *t, int ndim_out, const int64_t *out_shape) {
  hl_kview v;
  v.data = hl_tensor_data(t);
  v.dtype = t->dtype;
  for (int d = 0; d < HL_MAX_DIMS; d++) {
    int od = d - (HL_MAX_DIMS - ndim_out); /* dim of the output */
    int td = od - (ndim_out - t->ndim);    /* dim of t, right-aligned */
    v.stride[d] = (od >= 0 && td >= 0 && t->shape[td] == out_shape[od] && t->shape[td] != 1) ? t->stride[td] : 0;
  }
  return v;
}

int64_t hl_numel(const hl_tensor *t) {
  if (!t) return 0;
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
  return n;
}

bool hl_is_contiguous(const hl_tensor *t) {
  int64_t s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->shape[d] != 1 && t->stride[d] != s) return false;
    s *= t->shape[d];
  }
  return true;
}

static const char *shape_text(int ndim, const int64_t *d, const char *prefix) {
  static _Thread_local char ring[8][96];
  static _Thread_local int next;
  char *buf = ring[next++ & 7];
  int k = snprintf(buf, 96, "%s[", prefix);
  for (int i = 0; i < ndim && k < 90; i++) k += snprintf(buf + k, 96 - (size_t)k, i ? ",%lld" : "%lld", (long long)d[i]);
  snprintf(buf + k, 96 - (size_t)k, "]");
  return buf;
}

const char *hl_desc(const hl_tensor *t) {
  if (!t) return "NULL";
  return shape_text(t->ndim, t->shape, hl_dtype_name(t->dtype));
}

const char *hl_shape_desc(hl_shape s) { return shape_text(s.ndim, s.d, ""); }

/* ----------------------------------------------------- kernels, device -- */

const struct hl_tensor_kernels *hl_kernels_for(hl_device_kind device, const char *what) {
  const hl_backend *b = hl_backend_for(device);
  if (!b) return hl_fail("%s: this build has no %s backend", what, hl_device_kind_name(device));
  if (!b->tensor)
    return hl_fail("op %s: no %s kernels in this build yet", what, hl_device_kind_label(device));
  return b->tensor;
}

/* ------------------------------------------------------------ lifetime -- */

/* Training allocates and frees the same tensor sizes every step. glibc's
 * defaults hand blocks above 128 KiB to mmap and trim the heap's top back to
 * the OS, so every step faults its activations and gradients in again
 * (measured: page faults were ~15% of an MLP step on the CPU). Keeping
 * blocks up to 32 MiB (glibc's largest mmap threshold) on the heap, and the
 * heap untrimmed, lets freed tensors' pages serve the next step. Process-
 * wide, set once, only for programs that make CPU tensors. */
static void tune_host_allocator(void) {
#ifdef M_MMAP_THRESHOLD
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

static hl_storage *storage_new(const char *what, size_t bytes, hl_device_kind device) {
  if (!hl_backend_for(device)) return hl_fail("%s: this build has no %s backend", what, hl_device_kind_name(device));
  static pthread_once_t tuned = PTHREAD_ONCE_INIT;
  if (device == HL_DEVICE_CPU) pthread_once(&tuned, tune_host_allocator);
  hl_storage *s = calloc(1, sizeof *s);
  if (!s) return hl_fail("%s: out of host memory for a tensor header", what);
  s->data = hl_mem_alloc(device, bytes);
  if (!s->data) {
    free(s);
    char b[32];
    return hl_fail("%s: out of %s memory allocating %s", what, hl_device_kind_name(device),
                   hl_format_bytes(bytes, b, sizeof b));
  }
  s->bytes = bytes;
  s->device = device;
  atomic_init(&s->refs, 1);
  atomic_init(&s->version, 0);
  return s;
}

static void storage_release(hl_storage *s) {
  if (s && atomic_fetch_sub(&s->refs, 1) == 1) {
    hl_mem_free(s->device, s->data, s->bytes);
    free(s);
  }
}

hl_tensor *hl_tensor_new(const char *what, int ndim, const int64_t *shape, hl_dtype dtype, hl_device_kind device) {
  if (ndim < 0 || ndim > HL_MAX_DIMS)
    return hl_fail("%s: %d dims; tensors have 0 to %d", what, ndim, HL_MAX_DIMS);
  if ((unsigned)dtype >= HL_TENSOR_DTYPES) return hl_fail("%s: unknown dtype %d", what, (int)dtype);
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return hl_fail("%s: negative size %lld in %s", what, (long long)shape[i], shape_text(ndim, shape, ""));
    if (shape[i] > 0 && n > INT64_MAX / 16 / shape[i])
      return hl_fail("%s: shape %s is too large", what, shape_text(ndim, shape, ""));
    n *= shape[i];
  }
  hl_tensor *t = calloc(1, sizeof *t);
  if (!t) return hl_fail("%s: out of host memory for a tensor header", what);
  t->storage = storage_new(what, (size_t)n * hl_dtype_size(dtype), device);
  if (!t->storage) {
    free(t);
    return NULL;
  }
  t->dtype = dtype;
  t->device = device;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
  hl_contiguous_strides(ndim, shape, t->stride);
  atomic_init(&t->refs, 1);
  return t;
}

hl_tensor *hl_tensor_view_of(const hl_tensor *base, int ndim, const int64_t *shape, const int64_t *stride,
                             int64_t offset) {
  hl_tensor *t = calloc(1, sizeof *t);
  if (!t) return hl_fail("view: out of host memory for a tensor header");
  t->dtype = base->dtype;
  t->device = base->device;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    t->shape[i] = shape[i];
    t->stride[i] = stride[i];
  }
  t->offset = offset;
  t->storage = base->storage;
  atomic_fetch_add(&t->storage->refs, 1);
  atomic_init(&t->refs, 1);
  return t;
}

hl_tensor *hl_retain(hl_tensor *t) {
  if (t) atomic_fetch_add(&t->refs, 1);
  return t;
}

void hl_release(hl_tensor *t) {
  if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
  storage_release(t->storage);
  hl_release(t->grad);
  hl_node_release(t->grad_fn);
  free(t->name);
  free(t);
}

void *hl_tensor_data(const hl_tensor *t) {
  return (char *)t->storage->data + t->offset * (int64_t)hl_dtype_size(t->dtype);
}

size_t hl_tensor_nbytes(const hl_tensor *t) { return (size_t)hl_numel(t) * hl_dtype_size(t->dtype); }

void hl_tensor_mark_modified(hl_tensor *t) {
  if (t) atomic_fetch_add(&t->storage->version, 1);
}

void hl_tensor_span(const hl_tensor *t, int64_t *lo, int64_t *hi) {
  int64_t last = t->offset;
  for (int d = 0; d < t->ndim; d++) last += (t->shape[d] - 1) * t->stride[d];
  *lo = t->offset;
  *hi = hl_numel(t) ? last + 1 : t->offset;
}

void hl_tensor_set_name(hl_tensor *t, const char *name) {
  if (!t) return;
  free(t->name);
  t->name = name ? strdup(name) : NULL;
}

const char *hl_tensor_name(const hl_tensor *t) { return t && t->name ? t->name : ""; }

/* --------------------------------------------------------------- pools -- */

typedef struct {
  hl_tensor **items;
  int n, cap;
} pool;

static _Thread_local pool *pools_;
static _Thread_local int pool_depth_, pool_cap_;

void hl_pool_push(void) {
  if (pool_depth_ == pool_cap_) {
    int cap = pool_cap_ ? pool_cap_ * 2 : 8;
    pool *p = HL_CHECK_ALLOC(realloc(pools_, sizeof *p * (size_t)cap), sizeof *p * (size_t)cap, "hl_pool_push's pool stack");
    pools_ = p;
    for (int i = pool_cap_; i < cap; i++) pools_[i] = (pool){0};
    pool_cap_ = cap;
  }
  pools_[pool_depth_++].n = 0;
}

void hl_pool_pop(void) {
  if (pool_depth_ == 0) return;
  pool *p = &pools_[--pool_depth_];
  for (int i = p->n - 1; i >= 0; i--) hl_release(p->items[i]);
  p->n = 0;
  if (pool_depth_ == 0) {
    for (int i = 0; i < pool_cap_; i++) free(pools_[i].items);
    free(pools_);
    pools_ = NULL;
    pool_cap_ = 0;
  }
}

hl_tensor *hl_tmp(hl_tensor *t) {
  if (!t || pool_depth_ == 0) return t;
  pool *p = &pools_[pool_depth_ - 1];
  if (p->n == p->cap) {
    int cap = p->cap ? p->cap * 2 : 32;
    hl_tensor **items =
        HL_CHECK_ALLOC(realloc(p->items, sizeof *items * (size_t)cap), sizeof *items * (size_t)cap, "hl_tmp's pool");
    p->items = items;
    p->cap = cap;
  }
  p->items[p->n++] = t;
  return t;
}

/* ------------------------------------------------------------ creation -- */

hl_tensor *hl_empty(hl_shape s, hl_dtype dtype, hl_device_kind device) {
  return hl_tensor_new("empty", s.ndim, s.d, dtype, device);
}

hl_tensor *hl_zeros(hl_shape s, hl_dtype dtype, hl_device_kind device) {
  hl_tensor *t = hl_tensor_new("zeros", s.ndim, s.d, dtype, device);
  if (t) hl_backend_for(device)->zero(t->storage->data, t->storage->bytes);
  return t;
}

/* Fills a contiguous tensor: with the device's kernels when it has them,
 * else on the host and copied over (so creation works on every backend). */
typedef void (*fill_fn)(const struct hl_tensor_kernels *k, void *data, hl_dtype t, int64_t n, const double *args);

static hl_tensor *make_filled(const char *what, hl_shape s, hl_dtype dtype, hl_device_kind device, fill_fn fill,
                              const double *args) {
  hl_tensor *t = hl_tensor_new(what, s.ndim, s.d, dtype, device);
  if (!t) return NULL;
  const hl_backend *b = hl_backend_for(device);
  if (b->tensor) {
    fill(b->tensor, t->storage->data, dtype, hl_numel(t), args);
    return t;
  }
  void *host = malloc(t->storage->bytes ? t->storage->bytes : 1);
  if (!host) {
    hl_release(t);
    return hl_fail("%s: out of host memory staging %s", what, hl_desc(t));
  }
  fill(hl_backend_cpu.tensor, host, dtype, hl_numel(t), args);
  b->copy_from_host(t->storage->data, host, t->storage->bytes);
  free(host);
  return t;
}

static void fill_value(const struct hl_tensor_kernels *k, void *d, hl_dtype t, int64_t n, const double *a) {
  k->fill(d, t, n, a[0]);
}

static void fill_random(const struct hl_tensor_kernels *k, void *d, hl_dtype t, int64_t n, const double *a) {
  k->random(d, t, n, (hl_random_kind)a[0], a[1], a[2], (uint64_t)a[3], (uint64_t)a[4]);
}

hl_tensor *hl_full(hl_shape s, double value, hl_dtype dtype, hl_device_kind device) {
  return make_filled("full", s, dtype, device, fill_value, &value);
}

hl_tensor *hl_ones(hl_shape s, hl_dtype dtype, hl_device_kind device) { return hl_full(s, 1.0, dtype, device); }

hl_tensor *hl_scalar(double value, hl_dtype dtype, hl_device_kind device) {
  return hl_full(HL_SCALAR_SHAPE, value, dtype, device);
}

static hl_tensor *random_tensor(const char *what, hl_shape s, hl_random_kind kind, double a, double b, uint64_t seed,
                                uint64_t stream, hl_dtype dtype, hl_device_kind device) {
  if (!hl_dtype_is_float(dtype)) return hl_fail("%s: random values need a float dtype, not %s", what, hl_dtype_name(dtype));
  if (seed > (1ull << 53) || stream > (1ull << 53))
    return hl_fail("%s: seed and stream must be below 2^53 (they pass through a double)", what);
  double args[5] = {(double)kind, a, b, (double)seed, (double)stream};
  return make_filled(what, s, dtype, device, fill_random, args);
}

hl_tensor *hl_randn(hl_shape s, double mean, double std, uint64_t seed, uint64_t stream, hl_dtype dtype,
                    hl_device_kind device) {
  return random_tensor("randn", s, HL_RANDOM_NORMAL, mean, std, seed, stream, dtype, device);
}

hl_tensor *hl_rand(hl_shape s, double lo, double hi, uint64_t seed, uint64_t stream, hl_dtype dtype,
                   hl_device_kind device) {
  return random_tensor("rand", s, HL_RANDOM_UNIFORM, lo, hi, seed, stream, dtype, device);
}

/* Host array of numel values of host_type -> new tensor (converted on the
 * host by the CPU kernels, then copied to the device). */
static hl_tensor *from_host(const char *what, hl_shape s, const void *data, hl_dtype host_type, hl_dtype dtype,
                            hl_device_kind device) {
  if (!data) return hl_fail("%s: data is NULL", what);
  hl_tensor *t = hl_tensor_new(what, s.ndim, s.d, dtype, device);
  if (!t) return NULL;
  int64_t size4[HL_MAX_DIMS];
  int64_t n = hl_numel(t);
  hl_size4(1, &n, size4);
  void *host = device == HL_DEVICE_CPU ? t->storage->data : malloc(t->storage->bytes ? t->storage->bytes : 1);
  if (!host) {
    hl_release(t);
    return hl_fail("%s: out of host memory staging %s", what, hl_desc(t));
  }
  hl_kview dst = {host, dtype, {0, 0, 0, 1}}, src = {(void *)data, host_type, {0, 0, 0, 1}};
  hl_backend_cpu.tensor->copy(&dst, &src, size4);
  if (device != HL_DEVICE_CPU) {
    hl_backend_for(device)->copy_from_host(t->storage->data, host, t->storage->bytes);
    free(host);
  }
  return t;
}

hl_tensor *hl_from_f32(hl_shape s, const float *d, hl_dtype t, hl_device_kind dev) {
  return from_host("from_f32", s, d, HL_F32, t, dev);
}
hl_tensor *hl_from_f64(hl_shape s, const double *d, hl_dtype t, hl_device_kind dev) {
  return from_host("from_f64", s, d, HL_F64, t, dev);
}
hl_tensor *hl_from_i32(hl_shape s, const int32_t *d, hl_dtype t, hl_device_kind dev) {
  return from_host("from_i32", s, d, HL_I32, t, dev);
}

/* ----------------------------------------------------------- read back -- */

/* Any view on any device -> numel values of host_type: the bytes the view
 * spans are brought to the host, then the CPU copy kernel walks the
 * strides and converts. */
static bool read_host(const char *what, const hl_tensor *t, hl_dtype host_type, void *out) {
  if (!t) return hl_has_error() ? false : hl_fail_bool("%s: tensor is NULL", what);
  if (!out) return hl_fail_bool("%s: output buffer is NULL", what);
  int64_t lo, hi;
  hl_tensor_span(t, &lo, &hi);
  const size_t es = hl_dtype_size(t->dtype);
  const char *base = (const char *)t->storage->data + lo * (int64_t)es;
  void *staged = NULL;
  if (t->device != HL_DEVICE_CPU) {
    staged = malloc((size_t)(hi - lo) * es + 1);
    if (!staged) return hl_fail_bool("%s: out of host memory reading %s", what, hl_desc(t));
    hl_backend_for(t->device)->copy_to_host(staged, base, (size_t)(hi - lo) * es);
    base = staged;
  }
  int64_t size4[HL_MAX_DIMS];
  hl_size4(t->ndim, t->shape, size4);
  hl_kview src = {(void *)base, t->dtype, {0}}, dst = {out, host_type, {0}};
  int64_t ostride[HL_MAX_DIMS];
  hl_contiguous_strides(HL_MAX_DIMS, size4, ostride);
  for (int d = 0; d < HL_MAX_DIMS; d++) {
    int td = d - (HL_MAX_DIMS - t->ndim);
    src.stride[d] = td >= 0 ? t->stride[td] : 0;
    dst.stride[d] = ostride[d];
  }
  hl_backend_cpu.tensor->copy(&dst, &src, size4);
  free(staged);
  return true;
}

bool hl_read_f32(const hl_tensor *t, float *out) { return read_host("read_f32", t, HL_F32, out); }
bool hl_read_f64(const hl_tensor *t, double *out) { return read_host("read_f64", t, HL_F64, out); }
bool hl_read_i32(const hl_tensor *t, int32_t *out) { return read_host("read_i32", t, HL_I32, out); }

double hl_item(const hl_tensor *t) {
  if (!t) {
    if (!hl_has_error()) hl_fail("item: tensor is NULL");
    return NAN;
  }
  if (hl_numel(t) != 1) {
    hl_fail("item: %s has %lld elements, item needs exactly one", hl_desc(t), (long long)hl_numel(t));
    return NAN;
  }
  double v;
  return read_host("item", t, HL_F64, &v) ? v : NAN;
}

/* ------------------------------------------------------------ autograd -- */

bool hl_set_requires_grad(hl_tensor *t, bool on) {
  if (!t) return hl_has_error() ? false : hl_fail_bool("set_requires_grad: tensor is NULL");
  if (t->grad_fn)
    return hl_fail_bool("set_requires_grad: %s %s is not a leaf (an op made it); detach it first", hl_desc(t),
                        hl_tensor_name(t));
  if (on && !hl_dtype_is_float(t->dtype))
    return hl_fail_bool("set_requires_grad: only float tensors can require grad, not %s", hl_desc(t));
  t->requires_grad = on;
  return true;
}

bool hl_requires_grad(const hl_tensor *t) { return t && t->requires_grad; }
bool hl_is_leaf(const hl_tensor *t) { return t && !t->grad_fn; }
hl_tensor *hl_tensor_grad(const hl_tensor *t) { return t ? t->grad : NULL; }

void hl_zero_grad(hl_tensor *t) {
  if (!t) return;
  hl_release(t->grad);
  t->grad = NULL;
}

hl_tensor *hl_detach(hl_tensor *t) {
  if (!t) return hl_has_error() ? NULL : hl_fail("detach: tensor is NULL");
  return hl_tensor_view_of(t, t->ndim, t->shape, t->stride, t->offset);
}

/* ------------------------------------------------------------ in place -- */

bool hl_check_inplace(const char *what, const hl_tensor *t) {
  if (!t) return hl_has_error() ? false : hl_fail_bool("%s: tensor is NULL", what);
  if (t->grad_fn)
    return hl_fail_bool("%s: %s was made by %s and is part of a graph; in-place writes would corrupt its backward",
                        what, hl_desc(t), hl_node_name(t->grad_fn));
  if (t->requires_grad && hl_grad_enabled())
    return hl_fail_bool("%s: %s %s is a leaf that requires grad; update it inside HL_NO_GRAD", what, hl_desc(t),
                        hl_tensor_name(t));
  return true;
}

bool hl_fill_(hl_tensor *t, double value) {
  if (!hl_check_inplace("fill_", t)) return false;
  const struct hl_tensor_kernels *k = hl_kernels_for(t->device, "fill_");
  if (!k) return false;
  if (!hl_is_contiguous(t)) return hl_fail_bool("fill_: %s is not contiguous", hl_desc(t));
  k->fill(hl_tensor_data(t), t->dtype, hl_numel(t), value);
  hl_tensor_mark_modified(t);
  return true;
}

bool hl_copy_(hl_tensor *dst, const hl_tensor *src) {
  if (!hl_check_inplace("copy_", dst)) return false;
  if (!src) return hl_has_error() ? false : hl_fail_bool("copy_: source is NULL");
  if (!hl_shape_equal(hl_tensor_shape(dst), hl_tensor_shape(src)))
    return hl_fail_bool("copy_: shape mismatch: %s and %s", hl_desc(dst), hl_desc(src));
  if (dst->device != src->device)
    return hl_fail_bool("copy_: %s is on %s and %s on %s", hl_desc(dst), hl_device_kind_name(dst->device),
                        hl_desc(src), hl_device_kind_name(src->device));
  const struct hl_tensor_kernels *k = hl_kernels_for(dst->device, "copy_");
  if (!k) return false;
  int64_t size4[HL_MAX_DIMS];
  hl_size4(dst->ndim, dst->shape, size4);
  hl_kview d = hl_kview_of(dst, dst->ndim, dst->shape), s = hl_kview_of(src, dst->ndim, dst->shape);
  k->copy(&d, &s, size4);
  hl_tensor_mark_modified(dst);
  return true;
}

bool hl_add_(hl_tensor *dst, const hl_tensor *src) {
  if (!hl_check_inplace("add_", dst)) return false;
  if (!src) return hl_has_error() ? false : hl_fail_bool("add_: source is NULL");
  if (dst->dtype != src->dtype || !hl_dtype_is_float(dst->dtype))
    return hl_fail_bool("add_: dtype mismatch: %s += %s (same float dtype needed)", hl_desc(dst), hl_desc(src));
  if (dst->device != src->device) return hl_fail_bool("add_: %s and %s are on different devices", hl_desc(dst), hl_desc(src));
  /* src must broadcast to dst's shape */
  for (int i = 0; i < src->ndim; i++) {
    int di = i + dst->ndim - src->ndim;
    if (di < 0 || (src->shape[i] != 1 && src->shape[i] != dst->shape[di]))
      return hl_fail_bool("add_: %s does not broadcast to %s", hl_desc(src), hl_desc(dst));
  }
  const struct hl_tensor_kernels *k = hl_kernels_for(dst->device, "add_");
  if (!k) return false;
  int64_t size4[HL_MAX_DIMS];
  hl_size4(dst->ndim, dst->shape, size4);
  hl_kview o = hl_kview_of(dst, dst->ndim, dst->shape), b = hl_kview_of(src, dst->ndim, dst->shape);
  k->binary(HL_BIN_ADD, &o, &o, &b, size4);
  hl_tensor_mark_modified(dst);
  return true;
}

bool hl_scale_(hl_tensor *t, double factor) {
  if (!hl_check_inplace("scale_", t)) return false;
  if (!hl_dtype_is_float(t->dtype)) return hl_fail_bool("scale_: %s is not a float tensor", hl_desc(t));
  const struct hl_tensor_kernels *k = hl_kernels_for(t->device, "scale_");
  if (!k) return false;
  if (!hl_is_contiguous(t)) return hl_fail_bool("scale_: %s is not contiguous", hl_desc(t));
  k->unary(HL_UN_MUL_SCALAR, t->dtype, hl_numel(t), hl_tensor_data(t), hl_tensor_data(t), factor);
  hl_tensor_mark_modified(t);
  return true;
}
