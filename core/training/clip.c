/* clip.c — clip_grad_norm and clip_grad_value (core/training/clip.h). */
#include "core/training/clip.h"

#include <math.h>
#include <stdlib.h>

#include "core/base/device.h"
#include "core/base/error.h"
#include "core/base/mem.h"
#include "core/engine/op_profile.h"
#include "core/training/optim_internal.h"

/* The non-NULL gradients among grads[0..n) as in-place views, checked to
 * be float tensors on one device. Returns how many (0 is fine), -1 on error. */
static int gather(hl_tensor *const *grads, int n, const char *what, hl_grad_view *v, hl_device_kind *device) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    const hl_tensor *g = grads[i];
    if (!g) continue;
    if (!hl_dtype_is_float(g->dtype)) {
      hl_fail_bool("%s: gradient %d is %s, not a float tensor", what, i, hl_desc(g));
      return -1;
    }
    if (k > 0 && g->device != *device) {
      hl_fail_bool("%s: gradients on two devices (%s and %s)", what, hl_device_kind_name(*device),
                   hl_device_kind_name(g->device));
      return -1;
    }
    *device = g->device;
    hl_grad_view_of(g, g, &v[k++]);
  }
  return k;
}

static void mark_all(hl_tensor *const *grads, int n) {
  for (int i = 0; i < n; i++)
    if (grads[i]) hl_tensor_mark_modified(grads[i]);
}

/* The norm of grads into *total_norm; with `clip`, the gradients scaled by
 * the clip coefficient too. */
static bool clip_norm(hl_tensor *const *grads, int n, double max_norm, double norm_type, bool error_if_nonfinite,
                      double *total_norm, bool clip) {
  const char *what = clip ? "clip_grad_norm" : "grad_norm";
  if (total_norm) *total_norm = 0.0;
  int type;
  if (norm_type == 2.0) type = HL_NORM_L2;
  else if (norm_type == 1.0) type = HL_NORM_L1;
  else if (isinf(norm_type) && norm_type > 0) type = HL_NORM_INF;
  else return hl_fail_bool("%s: norm_type %g is not supported (1, 2 or inf)", what, norm_type);
  if (!(isfinite(max_norm) && max_norm >= 0)) return hl_fail_bool("%s: max_norm %g must be finite and >= 0", what, max_norm);
  if (n < 0 || (n > 0 && !grads)) return hl_fail_bool("%s: bad parameter list", what);
  hl_grad_view *v = calloc((size_t)(n ? n : 1), sizeof *v);
  if (!v) return hl_fail_bool("%s: out of host memory", what);
  hl_device_kind dev = HL_DEVICE_CPU;
  int k = gather(grads, n, what, v, &dev);
  if (k <= 0) {
    free(v);
    return k == 0; /* no gradients: norm 0, nothing to clip (as PyTorch) */
  }
  const struct hl_optim_kernels *kern = hl_optim_kernels_for(dev, what);
  size_t scratch_bytes = kern ? kern->grad_norm_scratch(v, k) : 0;
  void *scratch = kern ? hl_mem_alloc(dev, scratch_bytes) : NULL;
  float *out = kern ? hl_mem_alloc(dev, 2 * sizeof(float)) : NULL;
  bool ok = kern && scratch && out;
  if (kern && !ok) hl_fail_bool("%s: out of %s memory for the norm's partial sums", what, hl_device_kind_name(dev));
  if (ok) {
    hl_op_span span;
    bool timed = hl_op_span_begin(&span);
    kern->grad_norm(v, k, type, max_norm, scratch, out);
    float norm = 0.0f;
    if (total_norm || error_if_nonfinite) hl_backend_for(dev)->copy_to_host(&norm, out, sizeof norm);
    uint64_t read = 0;
    for (int i = 0; i < k; i++) read += (uint64_t)v[i].numel * hl_dtype_size(v[i].src_dtype);
    if (timed) hl_op_span_end(&span, "clip.grad_norm", read);
    if (total_norm) *total_norm = norm;
    if (error_if_nonfinite && !isfinite(norm)) {
      ok = hl_fail_bool("%s: the total %s-norm of the gradients is %s; the gradients are left as they were "
                        "(error_if_nonfinite)", what, type == HL_NORM_INF ? "inf" : type == HL_NORM_L1 ? "1" : "2",
                        isnan(norm) ? "nan" : "inf");
    } else if (clip) {
      timed = hl_op_span_begin(&span);
      kern->scale_grads(v, k, out + 1);
      if (timed) hl_op_span_end(&span, "clip.scale_grads", hl_grad_views_bytes(v, k));
    }
  }
  if (scratch) hl_mem_free(dev, scratch, scratch_bytes);
  if (out) hl_mem_free(dev, out, 2 * sizeof(float));
  free(v);
  if (ok && clip) mark_all(grads, n);
  return ok;
}

bool hl_clip_grad_norm(hl_tensor *const *params, int n, double max_norm, double norm_type, bool error_if_nonfinite,
                       double *total_norm) {
  if (n < 0 || (n > 0 && !params)) return hl_fail_bool("clip_grad_norm: bad parameter list");
  hl_tensor **g = calloc((size_t)(n ? n : 1), sizeof *g);
  if (!g) return hl_fail_bool("clip_grad_norm: out of host memory");
  for (int i = 0; i < n; i++) g[i] = params[i] ? hl_tensor_grad(params[i]) : NULL;
  bool ok = clip_norm(g, n, max_norm, norm_type, error_if_nonfinite, total_norm, true);
  free(g);
  return ok;
}

bool hl_grad_norm(hl_tensor *const *params, int n, double norm_type, double *total_norm) {
  if (n < 0 || (n > 0 && !params)) return hl_fail_bool("grad_norm: bad parameter list");
  if (!total_norm) return hl_fail_bool("grad_norm: total_norm is NULL");
  hl_tensor **g = calloc((size_t)(n ? n : 1), sizeof *g);
  if (!g) return hl_fail_bool("grad_norm: out of host memory");
  for (int i = 0; i < n; i++) g[i] = params[i] ? hl_tensor_grad(params[i]) : NULL;
  bool ok = clip_norm(g, n, 1.0, norm_type, false, total_norm, false);
  free(g);
  return ok;
}

static hl_tensor **optim_grads(hl_optim *o, const char *what) {
  if (!o) return hl_fail("%s: optimizer is NULL", what);
  if (!hl_optim_prepare_grads(o)) return NULL;
  hl_tensor **g = calloc((size_t)o->n, sizeof *g);
  if (!g) return hl_fail("%s: out of host memory", what);
  for (int i = 0; i < o->n; i++) g[i] = hl_optim_grad(o, i);
  return g;
}

bool hl_clip_grad_norm_optim(hl_optim *o, double max_norm, double norm_type, bool error_if_nonfinite,
                             double *total_norm) {
  hl_tensor **g = optim_grads(o, "clip_grad_norm");
  if (!g) return false;
  bool ok = clip_norm(g, o->n, max_norm, norm_type, error_if_nonfinite, total_norm, true);
  free(g);
  return ok;
}

bool hl_grad_norm_optim(hl_optim *o, double norm_type, double *total_norm) {
  if (!total_norm) return hl_fail_bool("grad_norm: total_norm is NULL");
  hl_tensor **g = optim_grads(o, "grad_norm");
  if (!g) return false;
  bool ok = clip_norm(g, o->n, 1.0, norm_type, false, total_norm, false);
  free(g);
  return ok;
}

static bool clip_value(hl_tensor *const *grads, int n, double clip_value) {
  const char *what = "clip_grad_value";
  if (!(clip_value >= 0)) return hl_fail_bool("%s: clip_value %g must be >= 0", what, clip_value);
  hl_grad_view *v = calloc((size_t)(n ? n : 1), sizeof *v);
  if (!v) return hl_fail_bool("%s: out of host memory", what);
  hl_device_kind dev = HL_DEVICE_CPU;
  int k = gather(grads, n, what, v, &dev);
  bool ok = k >= 0;
  if (k > 0) {
    const struct hl_optim_kernels *kern = hl_optim_kernels_for(dev, what);
    ok = kern != NULL;
    if (ok) kern->clamp_grads(v, k, clip_value);
  }
  free(v);
  if (ok) mark_all(grads, n);
  return ok;
}

bool hl_clip_grad_value(hl_tensor *const *params, int n, double value) {
  if (n < 0 || (n > 0 && !params)) return hl_fail_bool("clip_grad_value: bad parameter list");
  hl_tensor **g = calloc((size_t)(n ? n : 1), sizeof *g);
  if (!g) return hl_fail_bool("clip_grad_value: out of host memory");
  for (int i = 0; i < n; i++) g[i] = params[i] ? hl_tensor_grad(params[i]) : NULL;
  bool ok = clip_value(g, n, value);
  free(g);
  return ok;
}

bool hl_clip_grad_value_optim(hl_optim *o, double value) {
  hl_tensor **g = optim_grads(o, "clip_grad_value");
  if (!g) return false;
  bool ok = clip_value(g, o->n, value);
  free(g);
  return ok;
}
