/* optim.c — SGD and AdamW (core/training/optim.h) over the optimizer kernels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/crc32.h"
#include "core/engine/autograd.h"
#include "core/base/device.h"
#include "core/base/error.h"
#include "core/base/mem.h"
#include "core/engine/op_profile.h"
#include "core/training/optim_internal.h"
#include "core/engine/ops.h"
#include "core/engine/tensor.h"

const struct hl_optim_kernels *hl_optim_kernels_for(hl_device_kind device, const char *what) {
  const hl_backend *b = hl_backend_for(device);
  if (!b) return hl_fail("%s: this build has no %s backend", what, hl_device_kind_name(device));
  if (!b->optim) return hl_fail("%s: no optimizer kernels for %s in this build", what, hl_device_kind_name(device));
  return b->optim;
}

/* --------------------------------------------------------- grad views -- */

/* Is t dense: its elements fill [offset, offset + numel) of the storage in
 * some order of dims (contiguous, or a permutation of it: a transpose)? */
static bool dense_layout(const hl_tensor *t) {
  int order[HL_MAX_DIMS], k = 0;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] != 1) order[k++] = d;
  /* sort the non-trivial dims by stride, largest first */
  for (int i = 1; i < k; i++)
    for (int j = i; j > 0 && t->stride[order[j]] > t->stride[order[j - 1]]; j--) {
      int s = order[j];
      order[j] = order[j - 1];
      order[j - 1] = s;
    }
  int64_t expect = 1;
  for (int i = k - 1; i >= 0; i--) {
    if (t->stride[order[i]] != expect) return false;
    expect *= t->shape[order[i]];
  }
  return true;
}

void hl_grad_view_of(const hl_tensor *dst, const hl_tensor *src, hl_grad_view *v) {
  memset(v, 0, sizeof *v);
  v->dst = hl_tensor_data(dst);
  v->src = hl_tensor_data(src);
  v->dst_dtype = dst->dtype;
  v->src_dtype = src->dtype;
  v->numel = hl_numel(dst);
  const bool same_view = dst->storage == src->storage && dst->offset == src->offset &&
                         !memcmp(dst->stride, src->stride, sizeof dst->stride) && dst->dtype == src->dtype;
  v->dense = same_view ? dense_layout(dst) : hl_is_contiguous(dst) && hl_is_contiguous(src);
  const int pad = HL_MAX_DIMS - dst->ndim;
  for (int d = 0; d < HL_MAX_DIMS; d++) {
    int td = d - pad;
    v->size[d] = td >= 0 ? dst->shape[td] : 1;
    v->dst_stride[d] = td >= 0 ? dst->stride[td] : 0;
    v->src_stride[d] = td >= 0 && td < src->ndim ? src->stride[td] : 0;
  }
}

uint64_t hl_grad_views_bytes(const hl_grad_view *v, int n) {
  uint64_t bytes = 0;
  for (int i = 0; i < n; i++)
    bytes += (uint64_t)v[i].numel * (hl_dtype_size(v[i].src_dtype) + hl_dtype_size(v[i].dst_dtype));
  return bytes;
}

/* ------------------------------------------------------ construction -- */

hl_sgd_opts hl_sgd_defaults(void) { return (hl_sgd_opts){.lr = 1e-3}; }

hl_adamw_opts hl_adamw_defaults(void) {
  return (hl_adamw_opts){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 1e-2};
}

static bool finite_nonneg(double x) { return isfinite(x) && x >= 0; }

static hl_tensor *zeros_like_on(const hl_tensor *p, hl_dtype dtype, const char *what) {
  hl_tensor *t = hl_empty(hl_tensor_shape(p), dtype, p->device);
  if (!t) return hl_fail("%s: %s", what, hl_error());
  hl_backend_for(p->device)->zero(hl_tensor_data(t), hl_tensor_nbytes(t));
  return t;
}

static hl_optim *optim_new(hl_optim_kind kind, const char *what, hl_tensor *const *params, int n, bool masters) {
  if (n <= 0 || !params) return hl_fail("%s: got an empty parameter list", what);
  for (int i = 0; i < n; i++) {
    const hl_tensor *p = params[i];
    if (!p) return hl_fail("%s: parameter %d is NULL", what, i);
    if (!hl_is_leaf(p) || !hl_requires_grad(p))
      return hl_fail("%s: parameter %d (%s %s) is not a leaf that requires grad", what, i, hl_tensor_name(p), hl_desc(p));
    if (p->dtype != HL_F32 && p->dtype != HL_F16 && p->dtype != HL_BF16)
      return hl_fail("%s: parameter %d (%s %s): optimizers update f32, f16 and bf16 parameters", what, i,
                     hl_tensor_name(p), hl_desc(p));
    if (!hl_is_contiguous(p))
      return hl_fail("%s: parameter %d (%s %s) is not contiguous", what, i, hl_tensor_name(p), hl_desc(p));
    if (p->device != params[0]->device)
      return hl_fail("%s: parameters on two devices (%s and %s); use one optimizer per device", what,
                     hl_device_kind_name(params[0]->device), hl_device_kind_name(p->device));
    for (int j = 0; j < i; j++)
      if (params[j]->storage == p->storage && params[j]->offset == p->offset)
        return hl_fail("%s: parameter %d (%s) appears twice", what, i, hl_tensor_name(p));
  }
  if (!hl_optim_kernels_for(params[0]->device, what)) return NULL;
  hl_optim *o = calloc(1, sizeof *o);
  if (!o) return hl_fail("%s: out of host memory", what);
  o->kind = kind;
  o->n = n;
  o->device = params[0]->device;
  o->params = calloc((size_t)n, sizeof *o->params);
  o->master = calloc((size_t)n, sizeof *o->master);
  o->master_grad = calloc((size_t)n, sizeof *o->master_grad);
  o->master_grad_set = calloc((size_t)n, sizeof *o->master_grad_set);
  o->buf1 = calloc((size_t)n, sizeof *o->buf1);
  o->buf2 = calloc((size_t)n, sizeof *o->buf2);
  o->steps = calloc((size_t)n, sizeof *o->steps);
  o->consts = hl_from_f32(HL_SHAPE(2), (const float[]){1.0f, 0.0f}, HL_F32, o->device);
  o->absorbed = hl_mem_alloc(o->device, sizeof *o->absorbed);
  if (!o->params || !o->master || !o->master_grad || !o->master_grad_set || !o->buf1 || !o->buf2 || !o->steps ||
      !o->consts || !o->absorbed) {
    hl_optim_free(o);
    return hl_fail("%s: out of memory for the optimizer's bookkeeping", what);
  }
  for (int i = 0; i < n; i++) {
    o->params[i] = hl_retain(params[i]);
    if (masters && params[i]->dtype != HL_F32) {
      /* the master starts as the model weight, exactly (f16/bf16 -> f32) */
      int64_t m = hl_numel(params[i]);
      float *host = malloc((size_t)(m ? m : 1) * sizeof *host);
      if (!host || !hl_read_f32(params[i], host)) {
        free(host);
        hl_optim_free(o);
        return hl_fail("%s: cannot read parameter %d for its master copy", what, i);
      }
      o->master[i] = hl_from_f32(hl_tensor_shape(params[i]), host, HL_F32, o->device);
      free(host);
      o->master_grad[i] = hl_empty(hl_tensor_shape(params[i]), HL_F32, o->device);
      if (!o->master[i] || !o->master_grad[i]) {
        hl_optim_free(o);
        return hl_fail("%s: out of memory for the master weights", what);
      }
      char name[256];
      snprintf(name, sizeof name, "%s.master", hl_tensor_name(params[i]));
      hl_tensor_set_name(o->master[i], name);
    }
  }
  return o;
}

static bool alloc_state(hl_optim *o, const char *what, bool two, bool one) {
  for (int i = 0; i < o->n; i++) {
    const hl_tensor *like = o->master[i] ? o->master[i] : o->params[i];
    if (one && !(o->buf1[i] = zeros_like_on(like, like->dtype, what))) return false;
    if (two && !(o->buf2[i] = zeros_like_on(like, like->dtype, what))) return false;
  }
  return true;
}

hl_optim *hl_sgd_new(hl_tensor *const *params, int n, hl_sgd_opts opts) {
  const char *what = "sgd";
  if (!finite_nonneg(opts.lr)) return hl_fail("sgd: invalid learning rate %g (must be >= 0)", opts.lr);
  if (!finite_nonneg(opts.momentum)) return hl_fail("sgd: invalid momentum %g (must be >= 0)", opts.momentum);
  if (!isfinite(opts.dampening)) return hl_fail("sgd: invalid dampening %g", opts.dampening);
  if (!finite_nonneg(opts.weight_decay)) return hl_fail("sgd: invalid weight_decay %g (must be >= 0)", opts.weight_decay);
  if (opts.nesterov && (opts.momentum <= 0 || opts.dampening != 0))
    return hl_fail("sgd: nesterov momentum requires a momentum and zero dampening");
  hl_optim *o = optim_new(HL_OPTIM_SGD, what, params, n, opts.master_weights);
  if (!o) return NULL;
  o->sgd = opts;
  if (!alloc_state(o, what, false, opts.momentum != 0)) {
    hl_optim_free(o);
    return NULL;
  }
  return o;
}

hl_optim *hl_adamw_new(hl_tensor *const *params, int n, hl_adamw_opts opts) {
  const char *what = "adamw";
  if (!finite_nonneg(opts.lr)) return hl_fail("adamw: invalid learning rate %g (must be >= 0)", opts.lr);
  if (!finite_nonneg(opts.eps)) return hl_fail("adamw: invalid epsilon %g (must be >= 0)", opts.eps);
  if (!(opts.beta1 >= 0 && opts.beta1 < 1)) return hl_fail("adamw: invalid beta1 %g (must be in [0, 1))", opts.beta1);
  if (!(opts.beta2 >= 0 && opts.beta2 < 1)) return hl_fail("adamw: invalid beta2 %g (must be in [0, 1))", opts.beta2);
  if (!finite_nonneg(opts.weight_decay)) return hl_fail("adamw: invalid weight_decay %g (must be >= 0)", opts.weight_decay);
  hl_optim *o = optim_new(HL_OPTIM_ADAMW, what, params, n, opts.master_weights);
  if (!o) return NULL;
  o->adamw = opts;
  if (!alloc_state(o, what, true, true)) {
    hl_optim_free(o);
    return NULL;
  }
  return o;
}

void hl_optim_free(hl_optim *o) {
  if (!o) return;
  for (int i = 0; o->params && i < o->n; i++) {
    hl_release(o->params[i]);
    if (o->master) hl_release(o->master[i]);
    if (o->master_grad) hl_release(o->master_grad[i]);
    if (o->buf1) hl_release(o->buf1[i]);
    if (o->buf2) hl_release(o->buf2[i]);
  }
  free(o->params);
  free(o->master);
  free(o->master_grad);
  free(o->master_grad_set);
  free(o->buf1);
  free(o->buf2);
  free(o->steps);
  hl_release(o->consts);
  if (o->absorbed) hl_mem_free(o->device, o->absorbed, sizeof *o->absorbed);
  free(o);
}

/* ------------------------------------------------------------- access -- */

const char *hl_optim_kind_name(hl_optim_kind k) { return k == HL_OPTIM_SGD ? "sgd" : "adamw"; }

int hl_optim_moments(hl_optim_kind k, bool momentum) { return k == HL_OPTIM_ADAMW ? 2 : momentum ? 1 : 0; }

const char *hl_optim_name(const hl_optim *o) { return hl_optim_kind_name(o->kind); }
int hl_optim_size(const hl_optim *o) { return o ? o->n : 0; }
hl_tensor *hl_optim_param(const hl_optim *o, int i) { return o && i >= 0 && i < o->n ? o->params[i] : NULL; }
hl_tensor *hl_optim_master(const hl_optim *o, int i) { return o && i >= 0 && i < o->n ? o->master[i] : NULL; }
hl_device_kind hl_optim_device(const hl_optim *o) { return o->device; }
int64_t hl_optim_param_steps(const hl_optim *o, int i) { return o && i >= 0 && i < o->n ? o->steps[i] : -1; }

bool hl_optim_has_masters(const hl_optim *o) {
  for (int i = 0; o && i < o->n; i++)
    if (o->master[i]) return true;
  return false;
}

double hl_optim_get_lr(const hl_optim *o) { return o->kind == HL_OPTIM_SGD ? o->sgd.lr : o->adamw.lr; }

bool hl_optim_set_lr(hl_optim *o, double lr) {
  if (!o) return hl_fail_bool("set_lr: optimizer is NULL");
  if (!finite_nonneg(lr)) return hl_fail_bool("set_lr: invalid learning rate %g (must be >= 0)", lr);
  if (o->kind == HL_OPTIM_SGD) o->sgd.lr = lr;
  else o->adamw.lr = lr;
  return true;
}

hl_tensor *hl_optim_grad(const hl_optim *o, int i) {
  if (!o || i < 0 || i >= o->n) return NULL;
  if (o->master[i]) return o->master_grad_set[i] ? o->master_grad[i] : NULL;
  return hl_tensor_grad(o->params[i]);
}

bool hl_set_grad(hl_tensor *p, hl_tensor *g) {
  if (!p) return hl_fail_bool("set_grad: parameter is NULL");
  if (g && (!hl_shape_equal(hl_tensor_shape(p), hl_tensor_shape(g)) || g->dtype != p->dtype || g->device != p->device))
    return hl_fail_bool("set_grad: gradient %s does not match parameter %s %s (same shape, dtype and device needed)",
                        hl_desc(g), hl_tensor_name(p), hl_desc(p));
  hl_retain(g);
  hl_release(p->grad);
  p->grad = g;
  return true;
}

void hl_optim_zero_grad(hl_optim *o) {
  if (!o) return;
  for (int i = 0; i < o->n; i++) {
    hl_zero_grad(o->params[i]);
    o->master_grad_set[i] = false;
  }
  o->master_grads_ready = false;
}

void hl_optim_master_grads_filled_(hl_optim *o, const bool *set) {
  for (int i = 0; i < o->n; i++) o->master_grad_set[i] = o->master[i] && set[i];
  o->master_grads_ready = true;
}

void hl_optim_master_grads_consumed_(hl_optim *o) { o->master_grads_ready = false; }

/* ---------------------------------------------------------------- step -- */

/* A model gradient usable for parameter i: same shape, dtype and device. */
bool hl_optim_check_grad_(const hl_optim *o, int i, const hl_tensor *g, const char *what) {
  const hl_tensor *p = o->params[i];
  if (!hl_shape_equal(hl_tensor_shape(p), hl_tensor_shape(g)) || g->dtype != p->dtype || g->device != p->device)
    return hl_fail_bool("%s: the gradient %s of parameter %d (%s %s) does not match it", what, hl_desc(g), i,
                        hl_tensor_name(p), hl_desc(p));
  return true;
}

bool hl_optim_prepare_grads(hl_optim *o) {
  if (!o) return hl_fail_bool("optimizer is NULL");
  if (o->master_grads_ready || !hl_optim_has_masters(o)) return true;
  hl_grad_view *v = calloc((size_t)o->n, sizeof *v);
  if (!v) return hl_fail_bool("%s: out of host memory", hl_optim_name(o));
  int k = 0;
  for (int i = 0; i < o->n; i++) {
    o->master_grad_set[i] = false;
    const hl_tensor *g = o->master[i] ? hl_tensor_grad(o->params[i]) : NULL;
    if (!g) continue;
    if (!hl_optim_check_grad_(o, i, g, hl_optim_name(o))) {
      free(v);
      return false;
    }
    hl_grad_view_of(o->master_grad[i], g, &v[k++]);
    o->master_grad_set[i] = true;
  }
  /* copy = unscale by exactly 1 (the kernel then writes the value as read) */
  hl_op_span span;
  const bool timed = hl_op_span_begin(&span);
  const float *one = hl_tensor_data(o->consts);
  hl_backend_for(o->device)->optim->unscale(v, k, one, (float *)one + 1);
  if (timed) hl_op_span_end(&span, "optim.master_grads", hl_grad_views_bytes(v, k));
  free(v);
  for (int i = 0; i < o->n; i++)
    if (o->master_grad_set[i]) hl_tensor_mark_modified(o->master_grad[i]);
  o->master_grads_ready = true;
  return true;
}

static uint64_t nbytes_or_0(const hl_tensor *t) { return t ? hl_tensor_nbytes(t) : 0; }

/* For the profile: what the step reads (gradient, weight, moments) plus
 * what it writes (weight, moments, and the model's copy of a master weight). */
static uint64_t step_bytes(const hl_optim *o, const int *which, int k) {
  uint64_t bytes = 0;
  for (int j = 0; j < k; j++) {
    const int i = which[j];
    const hl_tensor *weight = o->master[i] ? o->master[i] : o->params[i];
    bytes += nbytes_or_0(hl_optim_grad(o, i)) + 2 * (hl_tensor_nbytes(weight) + nbytes_or_0(o->buf1[i]) +
                                                     nbytes_or_0(o->buf2[i]));
    if (o->master[i]) bytes += hl_tensor_nbytes(o->params[i]);
  }
  return bytes;
}

bool hl_optim_step(hl_optim *o, int64_t *absorbed) {
  if (!o) return hl_fail_bool("step: optimizer is NULL");
  const char *what = hl_optim_name(o);
  if (!hl_optim_prepare_grads(o)) return false;
  hl_optim_entry *e = calloc((size_t)o->n, sizeof *e);
  int *which = calloc((size_t)o->n, sizeof *which);
  hl_tensor **contig = calloc((size_t)o->n, sizeof *contig); /* contiguous copies of strided gradients */
  if (!e || !which || !contig) {
    free(e);
    free(which);
    free(contig);
    return hl_fail_bool("%s: out of host memory", what);
  }
  bool ok = true;
  int k = 0;
  for (int i = 0; i < o->n && ok; i++) {
    hl_tensor *p = o->params[i];
    hl_tensor *g = hl_optim_grad(o, i);
    if (!g) continue;
    hl_optim_entry *x = &e[k];
    if (o->master[i]) {
      x->param = hl_tensor_data(o->master[i]);
      x->param_dtype = HL_F32;
      x->model = hl_tensor_data(p);
      x->model_dtype = p->dtype;
    } else {
      if (!hl_optim_check_grad_(o, i, g, what)) {
        ok = false;
        break;
      }
      if (!hl_is_contiguous(g)) {
        HL_NO_GRAD { contig[i] = hl_contiguous(g); } /* a copy for the kernel, outside any graph */
        if (!contig[i]) {
          ok = false;
          break;
        }
        g = contig[i];
      }
      x->param = hl_tensor_data(p);
      x->param_dtype = p->dtype;
    }
    x->grad = hl_tensor_data(g);
    x->buf1 = o->buf1[i] ? hl_tensor_data(o->buf1[i]) : NULL;
    x->buf2 = o->buf2[i] ? hl_tensor_data(o->buf2[i]) : NULL;
    x->numel = hl_numel(p);
    x->first = o->steps[i] == 0;
    if (o->kind == HL_OPTIM_ADAMW) {
      double t = (double)(o->steps[i] + 1);
      double bc1 = 1.0 - pow(o->adamw.beta1, t), bc2 = 1.0 - pow(o->adamw.beta2, t);
      x->step_size = (float)(o->adamw.lr / bc1);
      x->bias_correction2_sqrt = (float)sqrt(bc2);
    }
    which[k++] = i;
  }
  if (ok && k > 0) {
    hl_op_span span;
    const bool timed = hl_op_span_begin(&span);
    const struct hl_optim_kernels *kern = hl_backend_for(o->device)->optim;
    uint64_t *counter = NULL;
    if (absorbed) {
      hl_backend_for(o->device)->zero(o->absorbed, sizeof *o->absorbed);
      counter = o->absorbed;
    }
    if (o->kind == HL_OPTIM_SGD) {
      hl_sgd_args a = {(float)o->sgd.lr, (float)o->sgd.momentum, (float)(1.0 - o->sgd.dampening),
                       (float)o->sgd.weight_decay, o->sgd.nesterov};
      kern->sgd(e, k, &a, counter);
    } else {
      hl_adamw_args a = {(float)(1.0 - o->adamw.lr * o->adamw.weight_decay), (float)(1.0 - o->adamw.beta1),
                         (float)o->adamw.beta2, (float)(1.0 - o->adamw.beta2), (float)o->adamw.eps,
                         o->adamw.weight_decay != 0};
      kern->adamw(e, k, &a, counter);
    }
    for (int j = 0; j < k; j++) {
      int i = which[j];
      o->steps[i]++;
      hl_tensor_mark_modified(o->params[i]);
      if (o->master[i]) hl_tensor_mark_modified(o->master[i]);
    }
    if (absorbed) {
      uint64_t count = 0;
      hl_backend_for(o->device)->copy_to_host(&count, o->absorbed, sizeof count);
      *absorbed = (int64_t)count;
    }
    if (timed) hl_op_span_end(&span, o->kind == HL_OPTIM_SGD ? "optim.sgd" : "optim.adamw", step_bytes(o, which, k));
  } else if (ok && absorbed) {
    *absorbed = 0;
  }
  for (int i = 0; i < o->n; i++) hl_release(contig[i]);
  free(contig);
  free(which);
  free(e);
  o->master_grads_ready = false;
  return ok;
}

static bool crc_of_tensor(const hl_tensor *t, uint32_t *crc) {
  if (!t) return true;
  float *v = malloc(sizeof *v * (size_t)(hl_numel(t) > 0 ? hl_numel(t) : 1));
  if (!v) return hl_fail_bool("optimizer state checksum: out of host memory");
  const bool ok = hl_read_f32(t, v);
  if (ok) *crc = hl_crc32_update(*crc, v, sizeof *v * (size_t)hl_numel(t));
  free(v);
  return ok;
}

bool hl_optim_state_crc(const hl_optim *o, uint32_t *crc) {
  uint32_t c = 0;
  for (int i = 0; i < o->n; i++) {
    const int64_t steps = o->steps[i];
    c = hl_crc32_update(c, &steps, sizeof steps);
    if (!crc_of_tensor(o->buf1 ? o->buf1[i] : NULL, &c) || !crc_of_tensor(o->buf2 ? o->buf2[i] : NULL, &c) ||
        !crc_of_tensor(o->master ? o->master[i] : NULL, &c))
      return false;
  }
  *crc = c;
  return true;
}
