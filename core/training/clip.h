/* clip.h — gradient clipping, as torch.nn.utils.clip_grad_norm_ and
 * clip_grad_value_ do it, over many gradients in one pass.
 *
 * Under a GradScaler, clip the UNSCALED gradients (PyTorch's recipe):
 *   hl_scaler_unscale(scaler, opt);                 // gradients now true size
 *   hl_clip_grad_norm(params, n, max_norm, 2.0, false, &norm);
 *   hl_scaler_step(scaler, opt, &skipped, NULL);    // does not unscale again
 * When the gradients held inf/NaN the norm is inf/NaN, the clipped
 * gradients are NaN, and the scaler skips the step anyway (found_inf was
 * recorded by unscale); the norm says so (isfinite(norm) is false).
 */
#ifndef HL_CLIP_H
#define HL_CLIP_H

#include <stdbool.h>

#include "core/training/optim.h"
#include "core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scales the gradients of params (those that have one) by
 * min(max_norm / (total + 1e-6), 1), total = the norm_type norm (1, 2 or
 * INFINITY) of all their elements together, accumulated in f64 and rounded
 * to f32. *total_norm (optional: NULL skips the device read) receives it,
 * inf or NaN included. With error_if_nonfinite a non-finite total is an
 * error and the gradients are left as they were. On one device. */
bool hl_clip_grad_norm(hl_tensor *const *params, int n, double max_norm, double norm_type, bool error_if_nonfinite,
                       double *total_norm);

/* The same over the gradients an optimizer will step with: the f32 master
 * gradients of master-weight parameters (copied from the model first if
 * the scaler has not), the parameters' own gradients otherwise. */
bool hl_clip_grad_norm_optim(hl_optim *o, double max_norm, double norm_type, bool error_if_nonfinite,
                             double *total_norm);

/* The total norm alone (nothing is scaled): for logging a gradient norm
 * every step. The same arithmetic as hl_clip_grad_norm; the *total_norm
 * read is the one device synchronisation. */
bool hl_grad_norm(hl_tensor *const *params, int n, double norm_type, double *total_norm);
bool hl_grad_norm_optim(hl_optim *o, double norm_type, double *total_norm);

/* Clamps every gradient element into [-clip_value, clip_value]; NaN stays
 * NaN. clip_value >= 0. */
bool hl_clip_grad_value(hl_tensor *const *params, int n, double clip_value);
bool hl_clip_grad_value_optim(hl_optim *o, double clip_value);

#ifdef __cplusplus
}
#endif

#endif
