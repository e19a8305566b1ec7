/* optim_internal.h — what optim.c, scaler.c, clip.c and checkpoint.c share
 * about optimizers and gradient views; not for programs. */
#ifndef HL_OPTIM_INTERNAL_H
#define HL_OPTIM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/training/optim.h"
#include "core/engine/tensor.h"
#include "kernels/optim_kernels.h"

struct hl_optim {
  hl_optim_kind kind;
  hl_sgd_opts sgd;
  hl_adamw_opts adamw;
  int n;
  hl_device_kind device;
  hl_tensor **params;      /* retained */
  hl_tensor **master;      /* f32 masters of fp16/bf16 parameters; NULL entries otherwise */
  hl_tensor **master_grad; /* f32, allocated with the masters */
  bool *master_grad_set;   /* master_grad[i] holds parameter i's current gradient */
  bool master_grads_ready; /* the master gradients were filled since the last step / zero_grad */
  hl_tensor **buf1, **buf2; /* SGD momentum (when momentum != 0); AdamW exp_avg, exp_avg_sq */
  int64_t *steps;          /* per parameter */
  hl_tensor *consts;       /* f32[2] on the device: 1.0 (a unit inv_scale) and a scratch flag */
  uint64_t *absorbed;      /* device counter */
};

/* The optimizer kernels of a device, or NULL with a message naming `what`. */
const struct hl_optim_kernels *hl_optim_kernels_for(hl_device_kind device, const char *what);

/* The view of one gradient for the unscale / norm / scale / clamp passes:
 * dst written, src read (the same tensor for in-place passes). */
void hl_grad_view_of(const hl_tensor *dst, const hl_tensor *src, hl_grad_view *out);
/* For the profile: the bytes a pass over views reads (src) plus writes (dst). */
uint64_t hl_grad_views_bytes(const hl_grad_view *v, int n);

/* g can be parameter i's gradient: same shape, dtype and device (false
 * with a message naming `what` otherwise). */
bool hl_optim_check_grad_(const hl_optim *o, int i, const hl_tensor *g, const char *what);

/* Master gradients now hold the unscaled gradients of the model (the
 * scaler's fused copy): step must not copy them again. */
void hl_optim_master_grads_filled_(hl_optim *o, const bool *set);
/* The scaler skipped a step: the master gradients are stale from now on. */
void hl_optim_master_grads_consumed_(hl_optim *o);

#endif
