/* scaler.h — the gradient scaler, with torch.amp.GradScaler's semantics
 * (docs/scaler.md). PyTorch's typical loop:
 *
 *   hl_scaler *scaler = hl_scaler_new(hl_scaler_defaults());
 *   for each batch:
 *     hl_optim_zero_grad(opt);
 *     HL_AUTOCAST(dev, HL_F16, true) { loss = loss_fn(model(x), y); }
 *     hl_backward(hl_tmp(hl_scaler_scale(scaler, loss)), NULL, false); // scaled gradients
 *     hl_scaler_step(scaler, opt, &skipped, NULL);  // unscale, skip on inf/NaN, else step
 *     hl_scaler_update(scaler);                     // back off or grow the scale
 *
 * State: the scale (an f32 scalar tensor, created at the first
 * hl_scaler_scale on the loss's device), the growth tracker (i32, same
 * device), and per optimizer a stage READY / UNSCALED / STEPPED and its
 * found_inf flag (f32 on the device: nothing is read back until step needs
 * to know whether to skip). One scaler serves one device.
 *
 * Errors leave a message in hl_error() and return false (NULL), and change
 * nothing: unscale twice before update ("already unscaled since the last
 * update"), unscale after step, step twice, step of an optimizer none of
 * whose parameters has a gradient, update with no inf checks recorded,
 * fp16 gradients (they belong to f32 parameters or to master weights: see
 * core/training/optim.h), any of them before the first scale(), loading an empty
 * state. A disabled scaler does nothing: scale returns the loss, step is
 * the optimizer's step, get_scale is 1.
 */
#ifndef HL_SCALER_H
#define HL_SCALER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/training/optim.h"
#include "core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hl_scaler hl_scaler;

typedef struct {
  double init_scale;       /* 65536 = 2^16; finite, > 0 and within f32 */
  double growth_factor;    /* 2.0; > 1 */
  double backoff_factor;   /* 0.5; in (0, 1) */
  int64_t growth_interval; /* 2000; 1 .. 2^31-1 */
  bool enabled;            /* true */
  /* Static loss scaling (an halflab addition, for the fp16-static mode):
   * update() keeps the scale and tracker as they are; steps whose
   * gradients hold inf/NaN are still skipped. */
  bool fixed_scale;
  /* Unscale fp16 gradients in place instead of refusing them (PyTorch's
   * internal allow_fp16, which its sharded scaler uses): for the pure-fp16
   * teaching mode, where the unscaled fp16 gradients may underflow. */
  bool allow_fp16_gradients;
} hl_scaler_opts;

hl_scaler_opts hl_scaler_defaults(void);
/* NULL with hl_error() on invalid factors (checked only when enabled, as
 * PyTorch does). */
hl_scaler *hl_scaler_new(hl_scaler_opts opts);
void hl_scaler_free(hl_scaler *s); /* NULL-safe */

/* loss * scale (a new reference; differentiable, so backward gives scaled
 * gradients). Disabled: loss itself, retained. The first call creates the
 * scale and the tracker on the loss's device. */
hl_tensor *hl_scaler_scale(hl_scaler *s, hl_tensor *loss);

/* Divides the gradients the optimizer will step with by the scale, in
 * place, in one pass over all of them that also records whether any was
 * inf/NaN (found_inf, kept on the device). inv = 1/scale in f64, rounded
 * to f32. For master-weight parameters the model's fp16/bf16 gradients are
 * copied into the f32 master gradients by the same pass. */
bool hl_scaler_unscale(hl_scaler *s, hl_optim *o);

/* Unscales first unless unscale ran this iteration; then skips the step
 * when found_inf (reading that one flag from the device), else steps.
 * skipped and absorbed (see hl_optim_step) are optional outputs. */
bool hl_scaler_step(hl_scaler *s, hl_optim *o, bool *skipped, int64_t *absorbed);

/* The scale update on the device from the found_inf of every optimizer
 * unscaled this iteration, then every optimizer back to READY. */
bool hl_scaler_update(hl_scaler *s);
/* Sets the scale (finite, > 0); the tracker is left as it is. */
bool hl_scaler_update_to(hl_scaler *s, double new_scale);

/* The scale (a device read); 1 when disabled, init_scale before first use. */
double hl_scaler_get_scale(const hl_scaler *s);
bool hl_scaler_is_enabled(const hl_scaler *s);
int64_t hl_scaler_get_growth_tracker(const hl_scaler *s); /* device read */
double hl_scaler_get_growth_factor(const hl_scaler *s);
double hl_scaler_get_backoff_factor(const hl_scaler *s);
int64_t hl_scaler_get_growth_interval(const hl_scaler *s);
bool hl_scaler_set_growth_factor(hl_scaler *s, double f);
bool hl_scaler_set_backoff_factor(hl_scaler *s, double f);
bool hl_scaler_set_growth_interval(hl_scaler *s, int64_t n);
/* The scale tensor (borrowed; NULL before the first scale() or when
 * disabled): an f32 scalar on the device, for code that multiplies by it
 * without a device read. */
hl_tensor *hl_scaler_scale_tensor(const hl_scaler *s);

/* Did the last unscale of o (this iteration) find inf/NaN? false with
 * hl_error() when o was not unscaled since the last update. Reads the
 * flag from the device unless step already did. */
bool hl_scaler_found_inf(hl_scaler *s, const hl_optim *o, bool *found);
/* Replaces that flag (on the device, and as step will read it): for
 * data-parallel training, where every rank must skip when any rank found
 * inf/NaN (core/training/dist.h). Same errors as hl_scaler_found_inf. */
bool hl_scaler_set_found_inf(hl_scaler *s, const hl_optim *o, bool found);

/* state_dict / load_state_dict. A disabled scaler saves an empty state
 * (present = false), and loading an empty state into an enabled scaler is
 * an error; a disabled scaler ignores what it is given. Loading sets the
 * scale and the tracker (on the device once they exist, else for when they
 * are created). */
typedef struct {
  bool present;
  double scale;
  double growth_factor;
  double backoff_factor;
  int64_t growth_interval;
  int64_t growth_tracker;
} hl_scaler_state;

hl_scaler_state hl_scaler_state_dict(const hl_scaler *s);
bool hl_scaler_load_state(hl_scaler *s, const hl_scaler_state *state);

/* ---------------------------------------------------- building blocks -- */
/* The two device functions GradScaler is built from, exposed as PyTorch
 * exposes them (torch._amp_foreach_non_finite_check_and_unscale_ and
 * torch._amp_update_scale_), for tests and custom loops. All tensors on
 * one device; found_inf, inv_scale and scale are f32 scalars, the tracker
 * an i32 scalar. */

/* grads[i] *= inv_scale in place (f32, bf16 or f64; any strides), after
 * testing each value: found_inf = 1 if any was inf/NaN (not cleared). */
bool hl_amp_unscale_check(hl_tensor *const *grads, int n, hl_tensor *found_inf, const hl_tensor *inv_scale);
bool hl_amp_update_scale(hl_tensor *scale, hl_tensor *growth_tracker, const hl_tensor *found_inf,
                         double growth_factor, double backoff_factor, int64_t growth_interval);

#ifdef __cplusplus
}
#endif

#endif
