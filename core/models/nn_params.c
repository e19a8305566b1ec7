/* nn_params.c — named parameter lists: dtype policies, seeded init, int8
 * row-wise quantisation, and the weight file (save / load). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/atomic_file.h"
#include "core/engine/autograd.h"
#include "core/base/crc32.h"
#include "core/base/device.h"
#include "core/base/error.h"
#include "core/models/nn_internal.h"
#include "kernels/tensor_kernels.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the weight file is little-endian and is read and written with plain fread/fwrite"
#endif

/* ------------------------------------------------------------ policies -- */

const char *hl_weight_policy_name(hl_weight_policy p) {
  static const char *names[HL_WEIGHT_POLICIES] = {"fp32", "fp16", "bf16", "int8"};
  return (unsigned)p < HL_WEIGHT_POLICIES ? names[p] : "?";
}

bool hl_weight_policy_parse(const char *s, hl_weight_policy *out) {
  for (int p = 0; s && p < HL_WEIGHT_POLICIES; p++)
    if (!strcmp(s, hl_weight_policy_name((hl_weight_policy)p))) {
      *out = (hl_weight_policy)p;
      return true;
    }
  return false;
}

hl_dtype hl_weight_policy_dtype(hl_weight_policy policy, hl_param_role role) {
  switch (policy) {
    case HL_WEIGHTS_FP32: return HL_F32;
    case HL_WEIGHTS_FP16: return HL_F16;
    case HL_WEIGHTS_BF16: return HL_BF16;
    case HL_WEIGHTS_INT8:
      switch (role) {
        case HL_ROLE_WEIGHT: return HL_I8;
        case HL_ROLE_NORM: return HL_F32;
        default: return HL_F16; /* embeddings and biases */
      }
    default: return HL_DTYPE_NONE;
  }
}

/* ---------------------------------------------------------------- list -- */

hl_param *hl_params_find(const hl_param_list *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->items[i].name, name)) return &l->items[i];
  return NULL;
}

int64_t hl_params_numel(const hl_param_list *l) {
  int64_t n = 0;
  for (int i = 0; i < l->n; i++) n += hl_numel(l->items[i].tensor);
  return n;
}

uint64_t hl_param_bytes(const hl_param *p) {
  return hl_tensor_nbytes(p->tensor) + (p->scale ? hl_tensor_nbytes(p->scale) : 0);
}

uint64_t hl_params_bytes(const hl_param_list *l) {
  uint64_t b = 0;
  for (int i = 0; i < l->n; i++) b += hl_param_bytes(&l->items[i]);
  return b;
}

bool hl_params_add(hl_param_list *l, const char *name, hl_shape shape, hl_param_role role, int block,
                   hl_init_spec init) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 32;
    hl_param *items = realloc(l->items, sizeof *items * (size_t)cap);
    if (!items) return hl_fail_bool("parameters: out of host memory listing %s", name);
    l->items = items;
    l->cap = cap;
  }
  hl_dtype dtype = hl_weight_policy_dtype(l->policy, role);
  hl_param p = {.role = role, .block = block, .init = init};
  p.name = strdup(name);
  p.tensor = hl_empty(shape, dtype, l->device);
  if (p.tensor && dtype == HL_I8) {
    if (shape.ndim != 2) {
      hl_release(p.tensor);
      free(p.name);
      return hl_fail_bool("parameters: int8 weight %s must be 2-D, not %s", name, hl_shape_desc(shape));
    }
    p.scale = hl_empty(HL_SHAPE(shape.d[0]), HL_F32, l->device);
    if (!p.scale) hl_release(p.tensor), p.tensor = NULL;
  }
  if (!p.name || !p.tensor) {
    free(p.name);
    hl_release(p.tensor);
    return hl_has_error() ? false : hl_fail_bool("parameters: out of host memory for %s", name);
  }
  hl_tensor_set_name(p.tensor, name);
  if (l->policy != HL_WEIGHTS_INT8) hl_set_requires_grad(p.tensor, true); /* int8: inference storage */
  l->items[l->n++] = p;
  return true;
}

void hl_params_clear(hl_param_list *l) {
  for (int i = 0; i < l->n; i++) {
    hl_release(l->items[i].tensor);
    hl_release(l->items[i].scale);
    free(l->items[i].name);
  }
  free(l->items);
  l->items = NULL;
  l->n = l->cap = 0;
}

void hl_params_zero_grad(hl_param_list *l) {
  for (int i = 0; i < l->n; i++) hl_zero_grad(l->items[i].tensor);
}

int hl_params_trainable(const hl_param_list *l, hl_tensor **out) {
  int n = 0;
  for (int i = 0; i < l->n; i++)
    if (hl_requires_grad(l->items[i].tensor)) out[n++] = l->items[i].tensor;
  return n;
}

/* ---------------------------------------------------------- quantising -- */

void hl_quantize_rows_int8(const float *w, int64_t rows, int64_t cols, int8_t *q, float *scale) {
#pragma omp parallel for schedule(static) if (rows * cols >= 65536)
  for (int64_t r = 0; r < rows; r++) {
    const float *row = w + r * cols;
    float amax = 0.0f;
    for (int64_t j = 0; j < cols; j++) amax = fmaxf(amax, fabsf(row[j]));
    float s = amax / 127.0f;
    scale[r] = s;
    for (int64_t j = 0; j < cols; j++) {
      float v = s > 0.0f ? nearbyintf(row[j] / s) : 0.0f; /* the default rounding mode: half to even */
      q[r * cols + j] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
    }
  }
}

/* -------------------------------------------------------- storing data -- */

/* Bytes already in t's dtype, from the host into t's (contiguous) storage. */
static void put_bytes(hl_tensor *t, const void *src) {
  const hl_backend *b = hl_backend_for(t->device);
  if (t->device == HL_DEVICE_CPU) memcpy(hl_tensor_data(t), src, hl_tensor_nbytes(t));
  else b->copy_from_host(hl_tensor_data(t), src, hl_tensor_nbytes(t));
  hl_tensor_mark_modified(t);
}

/* Host f32 values into a float tensor: rounded once to its dtype (on the
 * CPU, straight into the storage; elsewhere through a staging buffer). */
static bool put_f32(hl_tensor *t, const float *v) {
  int64_t n = hl_numel(t), size4[HL_MAX_DIMS] = {1, 1, 1, n};
  void *dst = t->device == HL_DEVICE_CPU ? hl_tensor_data(t) : malloc(hl_tensor_nbytes(t) + 1);
  if (!dst) return hl_fail_bool("parameters: out of host memory staging %s", hl_tensor_name(t));
  hl_kview d = {dst, t->dtype, {0, 0, 0, 1}}, s = {(void *)v, HL_F32, {0, 0, 0, 1}};
  hl_backend_cpu.tensor->copy(&d, &s, size4);
  if (t->device != HL_DEVICE_CPU) {
    hl_backend_for(t->device)->copy_from_host(hl_tensor_data(t), dst, hl_tensor_nbytes(t));
    free(dst);
  }
  hl_tensor_mark_modified(t);
  return true;
}

/* f32 values of a whole parameter into its storage (int8: quantised). */
static bool put_param_f32(hl_param *p, const float *v) {
  if (p->tensor->dtype != HL_I8) return put_f32(p->tensor, v);
  int64_t rows = p->tensor->shape[0], cols = p->tensor->shape[1];
  int8_t *q = malloc((size_t)(rows * cols) + 1);
  float *s = malloc(sizeof(float) * (size_t)rows + 1);
  if (!q || !s) {
    free(q);
    free(s);
    return hl_fail_bool("parameters: out of host memory quantising %s", p->name);
  }
  hl_quantize_rows_int8(v, rows, cols, q, s);
  put_bytes(p->tensor, q);
  put_bytes(p->scale, s);
  free(q);
  free(s);
  return true;
}

/* ---------------------------------------------------------------- init -- */

static void draw(const struct hl_tensor_kernels *k, void *dst, hl_dtype t, int64_t n, hl_init_spec in,
                 uint64_t seed, uint64_t stream) {
  switch (in.kind) {
    case HL_INIT_CONST: k->fill(dst, t, n, in.a); break;
    case HL_INIT_UNIFORM: k->random(dst, t, n, HL_RANDOM_UNIFORM, in.a, in.b, seed, stream); break;
    default: k->random(dst, t, n, HL_RANDOM_NORMAL, in.a, in.b, seed, stream); break;
  }
}

static bool init_param(hl_param *p, uint64_t seed, uint64_t stream) {
  hl_tensor *t = p->tensor;
  const int64_t n = hl_numel(t);
  if (t->dtype == HL_I8) {
    /* fp32 values as for the other policies, then quantised */
    float *v = malloc(sizeof(float) * (size_t)n + 1);
    if (!v) return hl_fail_bool("parameters: out of host memory initialising %s", p->name);
    draw(hl_backend_cpu.tensor, v, HL_F32, n, p->init, seed, stream);
    bool ok = put_param_f32(p, v);
    free(v);
    return ok;
  }
  /* the kernels compute each value in f32 and round it once to the dtype */
  const hl_backend *b = hl_backend_for(t->device);
  if (b->tensor) {
    draw(b->tensor, hl_tensor_data(t), t->dtype, n, p->init, seed, stream);
  } else {
    void *host = malloc(hl_tensor_nbytes(t) + 1);
    if (!host) return hl_fail_bool("parameters: out of host memory initialising %s", p->name);
    draw(hl_backend_cpu.tensor, host, t->dtype, n, p->init, seed, stream);
    b->copy_from_host(hl_tensor_data(t), host, hl_tensor_nbytes(t));
    free(host);
  }
  hl_tensor_mark_modified(t);
  return true;
}

bool hl_params_init(hl_param_list *l, uint64_t seed) {
  for (int i = 0; i < l->n; i++)
    if (!init_param(&l->items[i], seed, (uint64_t)i)) return false;
  return true;
}

/* ---------------------------------------------------------------- save -- */

static const char magic[8] = {'H', 'L', 'W', 'T', 'S', '0', '0', '1'};

/* A parameter's values as f32 (int8: dequantised). */
static float *param_values(const hl_param *p) {
  const int64_t n = hl_numel(p->tensor);
  float *v = malloc(sizeof(float) * (size_t)n + 1);
  if (!v) return hl_fail("save: out of host memory reading %s", p->name);
  if (!hl_read_f32(p->tensor, v)) return free(v), NULL;
  if (p->scale) {
    const int64_t rows = p->tensor->shape[0], cols = p->tensor->shape[1];
    float *s = malloc(sizeof(float) * (size_t)rows + 1);
    if (!s || !hl_read_f32(p->scale, s)) {
      free(s);
      free(v);
      return hl_has_error() ? NULL : hl_fail("save: out of host memory reading %s", p->name);
    }
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < cols; j++) v[r * cols + j] *= s[r];
    free(s);
  }
  return v;
}

bool hl_params_save(const hl_param_list *l, const char *path) {
  hl_atomic_file a;
  if (!hl_atomic_open(&a, path)) return hl_fail_bool("save: cannot create %s: %s", a.tmp, strerror(errno));
  hl_crc_writer w = hl_crc_writer_on(a.f);
  hl_crc_put(&w, magic, sizeof magic);
  uint32_t count = (uint32_t)l->n;
  hl_crc_put(&w, &count, 4);
  for (int i = 0; i < l->n && w.ok; i++) {
    const hl_param *p = &l->items[i];
    uint32_t name_len = (uint32_t)strlen(p->name), ndim = (uint32_t)p->tensor->ndim;
    hl_crc_put(&w, &name_len, 4);
    hl_crc_put(&w, p->name, name_len);
    hl_crc_put(&w, &ndim, 4);
    hl_crc_put(&w, p->tensor->shape, sizeof(int64_t) * ndim);
    float *v = param_values(p);
    if (!v) { /* the reason is in hl_error() */
      hl_atomic_discard(&a);
      return false;
    }
    hl_crc_put(&w, v, sizeof(float) * (size_t)hl_numel(p->tensor));
    free(v);
  }
  hl_crc_put_trailer(&w);
  if (!hl_atomic_commit(&a)) {
    char why[9000];
    return hl_fail_bool("save: %s", hl_atomic_describe(&a, errno, why, sizeof why));
  }
  return true;
}

/* ---------------------------------------------------------------- load -- */

typedef struct {
  FILE *f;
  const char *path;
  uint32_t crc;
  bool ok;
} reader;

static bool get(reader *r, void *data, size_t n) {
  if (!r->ok) return false;
  if (fread(data, 1, n, r->f) != n) {
    r->ok = false;
    if (ferror(r->f)) return hl_fail_errno(errno ? errno : EIO, "load %s: read: %s", r->path, strerror(errno ? errno : EIO));
    return hl_fail_bool("load %s: file is truncated", r->path);
  }
  r->crc = hl_crc32_update(r->crc, data, n);
  return true;
}

/* Reads and checksums a tensor's n f32 values it does not keep; the index
 * of the first that is not finite goes to *nonfinite (UINT64_MAX: none). */
static bool skip_values(reader *r, uint64_t n, uint64_t *nonfinite, float *value) {
  static __thread float buf[1 << 14];
  *nonfinite = UINT64_MAX;
  for (uint64_t at = 0; at < n && r->ok;) {
    const size_t k = n - at < sizeof buf / sizeof buf[0] ? (size_t)(n - at) : sizeof buf / sizeof buf[0];
    if (!get(r, buf, k * sizeof(float))) return false;
    for (size_t i = 0; i < k && *nonfinite == UINT64_MAX; i++)
      if (!isfinite(buf[i])) *nonfinite = at + i, *value = buf[i];
    at += k;
  }
  return r->ok;
}

typedef struct {
  long offset; /* of the data */
  bool seen;
} load_entry;

bool hl_params_load(hl_param_list *l, const char *path) {
  reader r = {fopen(path, "rb"), path, 0, true};
  if (!r.f) return hl_fail_errno(errno, "load: cannot open %s: %s", path, strerror(errno));
  load_entry *entries = calloc((size_t)l->n + 1, sizeof *entries);
  char *name = malloc(4097);
  bool ok = entries && name;
  if (!ok) hl_fail("load %s: out of host memory", path);
  struct {
    char name[4097];
    uint64_t index;
    float value;
  } bad = {.name = ""}; /* the first value that is not finite */
  /* pass 1: the whole file's structure and checksum, before any parameter changes */
  char m[8];
  uint32_t count = 0;
  if (ok && (!get(&r, m, 8) || memcmp(m, magic, 8)))
    ok = r.ok ? hl_fail_bool("load %s: not a halflab weight file (magic is not HLWTS001)", path) : false;
  if (ok && !get(&r, &count, 4)) ok = false;
  for (uint32_t e = 0; ok && e < count; e++) {
    uint32_t len = 0, ndim = 0;
    int64_t dims[HL_MAX_DIMS];
    if (!get(&r, &len, 4)) break;
    if (len == 0 || len > 4096) {
      ok = hl_fail_bool("load %s: entry %u has a name of %u bytes (corrupt file?)", path, e, len);
      break;
    }
    if (!get(&r, name, len)) break;
    name[len] = '\0';
    if (!get(&r, &ndim, 4)) break;
    if (ndim > HL_MAX_DIMS) {
      ok = hl_fail_bool("load %s: %s has %u dims (corrupt file?)", path, name, ndim);
      break;
    }
    if (!get(&r, dims, sizeof(int64_t) * ndim)) break;
    hl_param *p = hl_params_find(l, name);
    if (!p) {
      ok = hl_fail_bool("load %s: %s is not a parameter of this model", path, name);
      break;
    }
    load_entry *en = &entries[p - l->items];
    if (en->seen) {
      ok = hl_fail_bool("load %s: %s appears twice", path, name);
      break;
    }
    hl_shape want = hl_tensor_shape(p->tensor), got = hl_shape_of((int)ndim, dims);
    if (!hl_shape_equal(want, got)) {
      ok = hl_fail_bool("load %s: %s has shape %s in the file, the model's is %s", path, name, hl_shape_desc(got),
                        hl_shape_desc(want));
      break;
    }
    en->seen = true;
    en->offset = ftell(r.f);
    uint64_t nonfinite;
    float value;
    if (!skip_values(&r, (uint64_t)hl_numel(p->tensor), &nonfinite, &value)) break;
    if (nonfinite != UINT64_MAX && !bad.name[0]) /* refused once the checksum says the file is intact */
      snprintf(bad.name, sizeof bad.name, "%s", name), bad.index = nonfinite, bad.value = value;
  }
  uint32_t crc_file = 0, crc_here = r.crc;
  if (ok && r.ok && get(&r, &crc_file, 4)) {
    if (crc_file != crc_here)
      ok = hl_fail_bool("load %s: checksum mismatch (file says %08x, contents give %08x): corrupt file", path,
                        crc_file, crc_here);
    else if (fgetc(r.f) != EOF)
      ok = hl_fail_bool("load %s: bytes after the checksum (corrupt file?)", path);
  }
  ok = ok && r.ok;
  if (ok && bad.name[0]) /* a weight file holds weights: an inf or NaN one would make every loss NaN */
    ok = hl_fail_bool("load %s: %s[%llu] is %s: a weight file holds finite values only", path, bad.name,
                      (unsigned long long)bad.index, isnan(bad.value) ? "nan" : bad.value > 0 ? "inf" : "-inf");
  for (int i = 0; ok && i < l->n; i++)
    if (!entries[i].seen) ok = hl_fail_bool("load %s: %s is missing from the file", path, l->items[i].name);
  /* pass 2: the values, converted to each parameter's dtype */
  for (int i = 0; ok && i < l->n; i++) {
    hl_param *p = &l->items[i];
    size_t n = (size_t)hl_numel(p->tensor);
    float *v = malloc(sizeof(float) * n + 1);
    if (!v) {
      ok = hl_fail_bool("load %s: out of host memory reading %s", path, p->name);
      break;
    }
    if (fseek(r.f, entries[i].offset, SEEK_SET) != 0 || fread(v, sizeof(float), n, r.f) != n)
      ok = hl_fail_errno(errno ? errno : EIO, "load %s: reading %s failed: %s", path, p->name, strerror(errno ? errno : EIO));
    else
      ok = put_param_f32(p, v);
    free(v);
  }
  fclose(r.f);
  free(entries);
  free(name);
  return ok;
}
