/* scaler.c — GradScaler (core/training/scaler.h) over the optimizer kernels. */
#include "core/training/scaler.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/device.h"
#include "core/base/error.h"
#include "core/engine/op_profile.h"
#include "core/engine/ops.h"
#include "core/training/optim_internal.h"

/* found_inf has one slot per optimizer; update() sums the slots of a mask */
#define MAX_OPTIMIZERS 64

typedef enum { READY = 0, UNSCALED, STEPPED } stage;

typedef struct {
  const hl_optim *opt;
  stage stage;
  bool checked;   /* unscale ran this iteration: its found_inf slot is valid */
  int grads;      /* gradients that unscale saw */
  int found_host; /* -1: not read yet; else the flag step read */
} opt_state;

struct hl_scaler {
  hl_scaler_opts opts; /* current factors and interval */
  double init_scale;   /* the scale the lazily created tensor starts with */
  int64_t init_tracker;
  hl_device_kind device;
  hl_tensor *scale;     /* f32 [] */
  hl_tensor *tracker;   /* i32 [] */
  hl_tensor *inv_scale; /* f32 [] */
  hl_tensor *found_inf; /* f32 [MAX_OPTIMIZERS] */
  opt_state opt[MAX_OPTIMIZERS];
  int n_opt;
};

hl_scaler_opts hl_scaler_defaults(void) {
  return (hl_scaler_opts){
      .init_scale = 65536.0, .growth_factor = 2.0, .backoff_factor = 0.5, .growth_interval = 2000, .enabled = true};
}

/* ---------------------------------------------------------- validation -- */

static bool check_scale_value(const char *what, const char *name, double v) {
  if (!(isfinite(v) && v > 0 && v <= 3.4028234663852886e38))
    return hl_fail_bool("%s: %s %g must be finite, > 0 and within f32's range", what, name, v);
  return true;
}
static bool check_growth(const char *what, double f) {
  if (!(isfinite(f) && f > 1.0)) return hl_fail_bool("%s: the growth factor must be > 1.0, got %g", what, f);
  return true;
}
static bool check_backoff(const char *what, double f) {
  if (!(f > 0.0 && f < 1.0)) return hl_fail_bool("%s: the backoff factor must be in (0, 1), got %g", what, f);
  return true;
}
static bool check_interval(const char *what, int64_t n) {
  if (n < 1 || n > INT32_MAX) return hl_fail_bool("%s: the growth interval must be in [1, 2^31-1], got %lld", what, (long long)n);
  return true;
}

hl_scaler *hl_scaler_new(hl_scaler_opts o) {
  const char *what = "GradScaler";
  if (o.enabled && (!check_scale_value(what, "init_scale", o.init_scale) || !check_growth(what, o.growth_factor) ||
                    !check_backoff(what, o.backoff_factor) || !check_interval(what, o.growth_interval)))
    return NULL;
  hl_scaler *s = calloc(1, sizeof *s);
  if (!s) return hl_fail("%s: out of host memory", what);
  s->opts = o;
  s->init_scale = o.init_scale;
  return s;
}

void hl_scaler_free(hl_scaler *s) {
  if (!s) return;
  hl_release(s->scale);
  hl_release(s->tracker);
  hl_release(s->inv_scale);
  hl_release(s->found_inf);
  free(s);
}

/* --------------------------------------------------------------- state -- */

static bool lazy_init(hl_scaler *s, hl_device_kind device) {
  if (s->scale) return true;
  if (!hl_optim_kernels_for(device, "scale")) return false;
  float scale = (float)s->init_scale, inv = 0.0f, found[MAX_OPTIMIZERS] = {0};
  int32_t tracker = (int32_t)s->init_tracker;
  hl_tensor *t_scale = hl_from_f32(HL_SCALAR_SHAPE, &scale, HL_F32, device);
  hl_tensor *t_tracker = hl_from_i32(HL_SCALAR_SHAPE, &tracker, HL_I32, device);
  hl_tensor *t_inv = hl_from_f32(HL_SCALAR_SHAPE, &inv, HL_F32, device);
  hl_tensor *t_found = hl_from_f32(HL_SHAPE(MAX_OPTIMIZERS), found, HL_F32, device);
  if (!t_scale || !t_tracker || !t_inv || !t_found) {
    hl_release(t_scale);
    hl_release(t_tracker);
    hl_release(t_inv);
    hl_release(t_found);
    return false;
  }
  hl_tensor_set_name(t_scale, "scaler.scale");
  s->scale = t_scale;
  s->tracker = t_tracker;
  s->inv_scale = t_inv;
  s->found_inf = t_found;
  s->device = device;
  return true;
}

/* "Attempted X but the scale is None" in PyTorch's words */
static bool require_scale(const hl_scaler *s, const char *what) {
  if (s->scale) return true;
  return hl_fail_bool("%s: the scale has not been created: call hl_scaler_scale(loss) earlier in the iteration", what);
}

static opt_state *state_of(hl_scaler *s, const hl_optim *o, bool create, const char *what) {
  for (int i = 0; i < s->n_opt; i++)
    if (s->opt[i].opt == o) return &s->opt[i];
  if (!create) return NULL;
  if (s->n_opt == MAX_OPTIMIZERS) return hl_fail("%s: one scaler serves at most %d optimizers", what, MAX_OPTIMIZERS);
  opt_state *st = &s->opt[s->n_opt++];
  *st = (opt_state){.opt = o, .stage = READY, .found_host = -1};
  return st;
}

static void reset_stages(hl_scaler *s) {
  for (int i = 0; i < s->n_opt; i++) {
    s->opt[i].stage = READY;
    s->opt[i].checked = false;
    s->opt[i].grads = 0;
    s->opt[i].found_host = -1;
  }
}

static float *found_slot(const hl_scaler *s, const opt_state *st) {
  return (float *)hl_tensor_data(s->found_inf) + (st - s->opt);
}

static void write_scalar(hl_tensor *t, const void *value, size_t bytes) {
  hl_backend_for(t->device)->copy_from_host(hl_tensor_data(t), value, bytes);
  hl_tensor_mark_modified(t);
}

/* --------------------------------------------------------------- scale -- */

hl_tensor *hl_scaler_scale(hl_scaler *s, hl_tensor *loss) {
  if (!s) return hl_fail("scale: scaler is NULL");
  if (!loss) return hl_has_error() ? NULL : hl_fail("scale: loss is NULL");
  if (!s->opts.enabled) return hl_retain(loss);
  if (!lazy_init(s, loss->device)) return NULL;
  if (loss->device != s->device)
    return hl_fail("scale: the loss is on %s, the scale on %s; one scaler serves one device",
                   hl_device_kind_name(loss->device), hl_device_kind_name(s->device));
  return hl_mul(loss, s->scale);
}

/* ------------------------------------------------------------- unscale -- */

bool hl_scaler_unscale(hl_scaler *s, hl_optim *o) {
  const char *what = "unscale";
  if (!s || !o) return hl_fail_bool("%s: scaler or optimizer is NULL", what);
  if (!s->opts.enabled) return true;
  if (!require_scale(s, what)) return false;
  opt_state *st = state_of(s, o, true, what);
  if (!st) return false;
  if (st->stage == UNSCALED)
    return hl_fail_bool("unscale: already unscaled for this optimizer since the last update() "
                        "(unscale once per optimizer per iteration, after all gradients are accumulated)");
  if (st->stage == STEPPED) return hl_fail_bool("unscale: called after step() for this optimizer; update() first");

  /* every check before anything is written */
  hl_grad_view *v = calloc((size_t)o->n, sizeof *v);
  bool *set = calloc((size_t)o->n, sizeof *set);
  if (!v || !set) {
    free(v);
    free(set);
    return hl_fail_bool("%s: out of host memory", what);
  }
  int k = 0;
  bool ok = true;
  for (int i = 0; i < o->n && ok; i++) {
    hl_tensor *p = o->params[i], *g = hl_tensor_grad(p);
    if (!g) continue;
    if (!hl_optim_check_grad_(o, i, g, what)) {
      ok = false;
    } else if (g->device != s->device) {
      ok = hl_fail_bool("%s: parameter %d (%s) has its gradient on %s, the scale is on %s; one scaler serves one device",
                        what, i, hl_tensor_name(p), hl_device_kind_name(g->device), hl_device_kind_name(s->device));
    } else if (o->master[i]) {
      hl_grad_view_of(o->master_grad[i], g, &v[k++]); /* fp16 model gradient -> f32 master gradient */
      set[i] = true;
    } else if (g->dtype == HL_F16 && !s->opts.allow_fp16_gradients) {
      ok = hl_fail_bool("unscale: attempting to unscale FP16 gradients (parameter %d %s, %s): keep the parameters "
                        "in f32 under autocast, or give the optimizer master weights (.master_weights = true)",
                        i, hl_tensor_name(p), hl_desc(g));
    } else {
      hl_grad_view_of(g, g, &v[k++]);
    }
  }
  if (ok) {
    hl_op_span span;
    const bool timed = hl_op_span_begin(&span);
    const struct hl_optim_kernels *kern = hl_backend_for(s->device)->optim;
    float *found = found_slot(s, st);
    kern->reciprocal(hl_tensor_data(s->inv_scale), hl_tensor_data(s->scale));
    hl_backend_for(s->device)->zero(found, sizeof *found);
    kern->unscale(v, k, hl_tensor_data(s->inv_scale), found);
    if (timed) hl_op_span_end(&span, "scaler.unscale", hl_grad_views_bytes(v, k));
    for (int i = 0; i < o->n; i++) {
      hl_tensor *g = hl_tensor_grad(o->params[i]);
      if (set[i]) hl_tensor_mark_modified(o->master_grad[i]);
      else if (g) hl_tensor_mark_modified(g);
    }
    if (hl_optim_has_masters(o)) hl_optim_master_grads_filled_(o, set);
    hl_tensor_mark_modified(s->inv_scale);
    st->stage = UNSCALED;
    st->checked = true;
    st->grads = k;
    st->found_host = -1;
  }
  free(v);
  free(set);
  return ok;
}

/* ---------------------------------------------------------------- step -- */

static int read_found(const hl_scaler *s, opt_state *st) {
  if (st->found_host < 0) {
    hl_op_span span; /* on a GPU the step waits here for the unscale */
    const bool timed = hl_op_span_begin(&span);
    float f = 0.0f;
    hl_backend_for(s->device)->copy_to_host(&f, found_slot(s, st), sizeof f);
    st->found_host = f != 0.0f;
    if (timed) hl_op_span_end(&span, "scaler.read_found_inf", sizeof f);
  }
  return st->found_host;
}

bool hl_scaler_step(hl_scaler *s, hl_optim *o, bool *skipped, int64_t *absorbed) {
  const char *what = "step";
  if (skipped) *skipped = false;
  if (absorbed) *absorbed = 0;
  if (!s || !o) return hl_fail_bool("%s: scaler or optimizer is NULL", what);
  if (!s->opts.enabled) return hl_optim_step(o, absorbed);
  if (!require_scale(s, what)) return false;
  opt_state *st = state_of(s, o, true, what);
  if (!st) return false;
  if (st->stage == STEPPED)
    return hl_fail_bool("step: already called for this optimizer since the last update()");
  if (st->stage == READY && !hl_scaler_unscale(s, o)) return false;
  if (st->grads == 0)
    return hl_fail_bool("step: no inf checks were recorded for this optimizer: none of its %d parameters has a "
                        "gradient (did backward run on the scaled loss?)", o->n);
  bool ok = true;
  if (read_found(s, st)) {
    if (skipped) *skipped = true;
    hl_optim_master_grads_consumed_(o);
  } else {
    ok = hl_optim_step(o, absorbed);
  }
  if (ok) st->stage = STEPPED;
  return ok;
}

/* -------------------------------------------------------------- update -- */

bool hl_scaler_update(hl_scaler *s) {
  if (!s) return hl_fail_bool("update: scaler is NULL");
  if (!s->opts.enabled) return true;
  if (!require_scale(s, "update")) return false;
  uint64_t mask = 0;
  for (int i = 0; i < s->n_opt; i++)
    if (s->opt[i].checked && s->opt[i].grads > 0) mask |= (uint64_t)1 << i;
  if (!mask)
    return hl_fail_bool("update: no inf checks were recorded prior to update() (no optimizer with gradients was "
                        "unscaled or stepped since the last update)");
  if (!s->opts.fixed_scale) {
    hl_op_span span;
    const bool timed = hl_op_span_begin(&span);
    hl_backend_for(s->device)->optim->update_scale(hl_tensor_data(s->scale), hl_tensor_data(s->tracker),
                                                   hl_tensor_data(s->found_inf), mask, s->opts.growth_factor,
                                                   s->opts.backoff_factor, (int32_t)s->opts.growth_interval);
    hl_tensor_mark_modified(s->scale);
    hl_tensor_mark_modified(s->tracker);
    if (timed) hl_op_span_end(&span, "scaler.update", 2 * (sizeof(float) + sizeof(int32_t)) + sizeof(float) * (unsigned)s->n_opt);
  }
  reset_stages(s);
  return true;
}

bool hl_scaler_update_to(hl_scaler *s, double new_scale) {
  if (!s) return hl_fail_bool("update: scaler is NULL");
  if (!s->opts.enabled) return true;
  if (!require_scale(s, "update")) return false;
  if (!check_scale_value("update", "the new scale", new_scale)) return false;
  float v = (float)new_scale;
  write_scalar(s->scale, &v, sizeof v);
  reset_stages(s);
  return true;
}

/* ------------------------------------------------------------- getters -- */

double hl_scaler_get_scale(const hl_scaler *s) {
  if (!s || !s->opts.enabled) return 1.0;
  return s->scale ? hl_item(s->scale) : (double)(float)s->init_scale;
}

bool hl_scaler_is_enabled(const hl_scaler *s) { return s && s->opts.enabled; }

int64_t hl_scaler_get_growth_tracker(const hl_scaler *s) {
  if (!s || !s->opts.enabled) return 0;
  return s->tracker ? (int64_t)hl_item(s->tracker) : s->init_tracker;
}

double hl_scaler_get_growth_factor(const hl_scaler *s) { return s->opts.growth_factor; }
double hl_scaler_get_backoff_factor(const hl_scaler *s) { return s->opts.backoff_factor; }
int64_t hl_scaler_get_growth_interval(const hl_scaler *s) { return s->opts.growth_interval; }
hl_tensor *hl_scaler_scale_tensor(const hl_scaler *s) { return s && s->opts.enabled ? s->scale : NULL; }

bool hl_scaler_set_growth_factor(hl_scaler *s, double f) {
  if (!check_growth("set_growth_factor", f)) return false;
  s->opts.growth_factor = f;
  return true;
}
bool hl_scaler_set_backoff_factor(hl_scaler *s, double f) {
  if (!check_backoff("set_backoff_factor", f)) return false;
  s->opts.backoff_factor = f;
  return true;
}
bool hl_scaler_set_growth_interval(hl_scaler *s, int64_t n) {
  if (!check_interval("set_growth_interval", n)) return false;
  s->opts.growth_interval = n;
  return true;
}

bool hl_scaler_found_inf(hl_scaler *s, const hl_optim *o, bool *found) {
  if (!s || !o || !found) return hl_fail_bool("found_inf: NULL argument");
  opt_state *st = s->opts.enabled ? state_of(s, o, false, "found_inf") : NULL;
  if (!st || !st->checked)
    return hl_fail_bool("found_inf: this optimizer was not unscaled since the last update()");
  *found = st->grads > 0 && read_found(s, st);
  return true;
}

bool hl_scaler_set_found_inf(hl_scaler *s, const hl_optim *o, bool found) {
  if (!s || !o) return hl_fail_bool("set_found_inf: NULL argument");
  opt_state *st = s->opts.enabled ? state_of(s, o, false, "set_found_inf") : NULL;
  if (!st || !st->checked)
    return hl_fail_bool("set_found_inf: this optimizer was not unscaled since the last update()");
  const float f = found ? 1.0f : 0.0f;
  hl_backend_for(s->device)->copy_from_host(found_slot(s, st), &f, sizeof f);
  hl_tensor_mark_modified(s->found_inf);
  st->found_host = found;
  return true;
}

/* --------------------------------------------------------- state dict -- */

hl_scaler_state hl_scaler_state_dict(const hl_scaler *s) {
  hl_scaler_state st = {0};
  if (!s || !s->opts.enabled) return st;
  st.present = true;
  st.scale = hl_scaler_get_scale(s);
  st.growth_factor = s->opts.growth_factor;
  st.backoff_factor = s->opts.backoff_factor;
  st.growth_interval = s->opts.growth_interval;
  st.growth_tracker = hl_scaler_get_growth_tracker(s);
  return st;
}

bool hl_scaler_load_state(hl_scaler *s, const hl_scaler_state *st) {
  const char *what = "load_state";
  if (!s || !st) return hl_fail_bool("%s: NULL argument", what);
  if (!s->opts.enabled) return true;
  if (!st->present)
    return hl_fail_bool("load_state: the state is empty, possibly because it was saved from a disabled GradScaler");
  if (!check_scale_value(what, "scale", st->scale) || !check_growth(what, st->growth_factor) ||
      !check_backoff(what, st->backoff_factor) || !check_interval(what, st->growth_interval))
    return false;
  if (st->growth_tracker < 0 || st->growth_tracker > INT32_MAX)
    return hl_fail_bool("%s: growth tracker %lld out of range", what, (long long)st->growth_tracker);
  s->init_scale = st->scale;
  s->opts.growth_factor = st->growth_factor;
  s->opts.backoff_factor = st->backoff_factor;
  s->opts.growth_interval = st->growth_interval;
  s->init_tracker = st->growth_tracker;
  if (s->scale) {
    float v = (float)st->scale;
    write_scalar(s->scale, &v, sizeof v);
  }
  if (s->tracker) {
    int32_t t = (int32_t)st->growth_tracker;
    write_scalar(s->tracker, &t, sizeof t);
  }
  return true;
}

/* ---------------------------------------------------- building blocks -- */

static bool scalar_f32_on(const hl_tensor *t, hl_device_kind device, const char *what, const char *name) {
  if (!t) return hl_fail_bool("%s: %s is NULL", what, name);
  if (t->dtype != HL_F32 || hl_numel(t) != 1 || t->device != device)
    return hl_fail_bool("%s: %s must be a one-element f32 tensor on %s, got %s on %s", what, name,
                        hl_device_kind_name(device), hl_desc(t), hl_device_kind_name(t->device));
  return true;
}

bool hl_amp_unscale_check(hl_tensor *const *grads, int n, hl_tensor *found_inf, const hl_tensor *inv_scale) {
  const char *what = "amp_unscale_check";
  if (!found_inf) return hl_fail_bool("%s: found_inf is NULL", what);
  const hl_device_kind dev = found_inf->device;
  if (!scalar_f32_on(found_inf, dev, what, "found_inf") || !scalar_f32_on(inv_scale, dev, what, "inv_scale"))
    return false;
  if (n < 0 || (n > 0 && !grads)) return hl_fail_bool("%s: bad gradient list", what);
  for (int i = 0; i < n; i++) {
    if (!grads[i]) return hl_fail_bool("%s: gradient %d is NULL", what, i);
    if (!hl_dtype_is_float(grads[i]->dtype) || grads[i]->device != dev)
      return hl_fail_bool("%s: gradient %d (%s on %s) must be a float tensor on %s", what, i, hl_desc(grads[i]),
                          hl_device_kind_name(grads[i]->device), hl_device_kind_name(dev));
  }
  const struct hl_optim_kernels *k = hl_optim_kernels_for(dev, what);
  if (!k) return false;
  hl_grad_view *v = calloc((size_t)(n ? n : 1), sizeof *v);
  if (!v) return hl_fail_bool("%s: out of host memory", what);
  for (int i = 0; i < n; i++) hl_grad_view_of(grads[i], grads[i], &v[i]);
  k->unscale(v, n, hl_tensor_data(inv_scale), hl_tensor_data(found_inf));
  free(v);
  for (int i = 0; i < n; i++) hl_tensor_mark_modified(grads[i]);
  hl_tensor_mark_modified(found_inf);
  return true;
}

bool hl_amp_update_scale(hl_tensor *scale, hl_tensor *growth_tracker, const hl_tensor *found_inf, double growth_factor,
                         double backoff_factor, int64_t growth_interval) {
  const char *what = "amp_update_scale";
  if (!scale) return hl_fail_bool("%s: scale is NULL", what);
  const hl_device_kind dev = scale->device;
  if (!scalar_f32_on(scale, dev, what, "scale") || !scalar_f32_on(found_inf, dev, what, "found_inf")) return false;
  if (!growth_tracker || growth_tracker->dtype != HL_I32 || hl_numel(growth_tracker) != 1 || growth_tracker->device != dev)
    return hl_fail_bool("%s: growth_tracker must be a one-element i32 tensor on %s", what, hl_device_kind_name(dev));
  if (!check_interval(what, growth_interval)) return false;
  const struct hl_optim_kernels *k = hl_optim_kernels_for(dev, what);
  if (!k) return false;
  k->update_scale(hl_tensor_data(scale), hl_tensor_data(growth_tracker), hl_tensor_data(found_inf), 1, growth_factor,
                  backoff_factor, (int32_t)growth_interval);
  hl_tensor_mark_modified(scale);
  hl_tensor_mark_modified(growth_tracker);
  return true;
}
