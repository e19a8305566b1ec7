/* optim.h — SGD and AdamW over a list of parameters, as torch.optim does
 * them, with optional fp32 master weights for fp16/bf16 parameters.
 *
 *   hl_sgd_opts o = hl_sgd_defaults();
 *   o.lr = 0.1; o.momentum = 0.9;
 *   hl_optim *opt = hl_sgd_new(params, n, o);
 *   ... hl_backward(loss) ...
 *   hl_optim_step(opt, NULL);       // or hl_scaler_step(scaler, opt, ...)
 *   hl_optim_zero_grad(opt);        // gradients set to none
 *
 * Parameters: leaf float tensors that require grad, contiguous, on one
 * device, each at most once. Their gradients (hl_tensor_grad) are read at
 * step time; a parameter without a gradient is left alone (PyTorch's
 * `if p.grad is None: continue`), and its state does not advance.
 *
 * Precision. Every update is computed in f32 and rounded once into each
 * stored value (as PyTorch's fused kernels do); the formulas are in
 * kernels/optim_math.h.
 *   - f32 parameters: state in f32.
 *   - fp16/bf16 parameters without master weights ("pure" fp16/bf16): the
 *     state has the parameter's dtype, like torch.zeros_like(p), and the
 *     weight is rounded back to fp16/bf16 after every step, so small
 *     updates are lost (absorbed).
 *   - fp16/bf16 parameters with master_weights ("O2"): the optimizer keeps
 *     an f32 master copy and f32 master gradients. The model's fp16
 *     gradients are copied into the master gradients (by the scaler's
 *     unscale, fused with it, or at step time), the master weights are
 *     updated in f32 and rounded into the fp16 model.
 *
 * State (momentum buffers, AdamW moments, masters) is allocated when the
 * optimizer is made, on the parameters' device, through the accounting
 * allocator.
 */
#ifndef HL_OPTIM_H
#define HL_OPTIM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hl_optim hl_optim;

typedef enum { HL_OPTIM_SGD = 0, HL_OPTIM_ADAMW = 1 } hl_optim_kind;

const char *hl_optim_kind_name(hl_optim_kind k); /* "sgd", "adamw" */
/* State tensors the optimizer keeps per parameter: SGD 0 (1 with
 * momentum), AdamW 2 (its two moments); for memory accounting. */
int hl_optim_moments(hl_optim_kind k, bool momentum);

/* torch.optim.SGD's arguments; defaults: lr 1e-3, the rest 0 / false. */
typedef struct {
  double lr;
  double momentum;
  double dampening;
  double weight_decay; /* L2: added to the gradient */
  bool nesterov;       /* needs momentum > 0 and dampening 0 */
  bool master_weights; /* f32 masters for fp16/bf16 parameters */
} hl_sgd_opts;

/* torch.optim.AdamW's arguments; defaults: lr 1e-3, betas (0.9, 0.999),
 * eps 1e-8, weight_decay 1e-2 (decoupled). */
typedef struct {
  double lr;
  double beta1, beta2;
  double eps;
  double weight_decay;
  bool master_weights;
} hl_adamw_opts;

hl_sgd_opts hl_sgd_defaults(void);
hl_adamw_opts hl_adamw_defaults(void);

/* NULL with hl_error() on an invalid argument (negative lr, beta outside
 * [0, 1), nesterov without momentum, ...) or unusable parameters. The
 * optimizer keeps a reference to each parameter. */
hl_optim *hl_sgd_new(hl_tensor *const *params, int n, hl_sgd_opts opts);
hl_optim *hl_adamw_new(hl_tensor *const *params, int n, hl_adamw_opts opts);
void hl_optim_free(hl_optim *o); /* NULL-safe */

/* One update of every parameter that has a gradient. absorbed (optional):
 * receives the number of elements whose update was non-zero but left the
 * stored weight unchanged (for master weights: the fp16/bf16 model weight;
 * the master kept the update). Asking for it costs a count in the kernel and
 * one device read; NULL costs nothing. false with hl_error() when a gradient
 * has the wrong dtype, shape or device. */
bool hl_optim_step(hl_optim *o, int64_t *absorbed);

/* Gradients of the parameters (and master gradients) set to none. */
void hl_optim_zero_grad(hl_optim *o);

const char *hl_optim_name(const hl_optim *o); /* "sgd", "adamw" */
int hl_optim_size(const hl_optim *o);        /* number of parameters */
hl_tensor *hl_optim_param(const hl_optim *o, int i);  /* borrowed */
/* The f32 master weight of parameter i (borrowed), NULL when it has none. */
hl_tensor *hl_optim_master(const hl_optim *o, int i);
bool hl_optim_has_masters(const hl_optim *o);
hl_device_kind hl_optim_device(const hl_optim *o);
/* Steps parameter i has taken (PyTorch keeps a count per parameter). */
int64_t hl_optim_param_steps(const hl_optim *o, int i);

/* A CRC-32 of the optimizer's state: every parameter's step count, its
 * moments (SGD's momentum, AdamW's exp_avg and exp_avg_sq) and its f32
 * master weight, each read as f32 in parameter order. Replicas of a
 * data-parallel run compare it. false with hl_error() on a failed read. */
bool hl_optim_state_crc(const hl_optim *o, uint32_t *crc);

double hl_optim_get_lr(const hl_optim *o);
bool hl_optim_set_lr(hl_optim *o, double lr); /* for schedules; lr >= 0 */

/* The gradients the next step will use, copied into the f32 master
 * gradients for master-weight parameters (a no-op otherwise, and when the
 * scaler's unscale did it already). Clipping calls this; so does step. */
bool hl_optim_prepare_grads(hl_optim *o);
/* The gradient parameter i will be stepped with (borrowed): the f32 master
 * gradient for a master-weight parameter once prepared, else the
 * parameter's own gradient; NULL when it has none. */
hl_tensor *hl_optim_grad(const hl_optim *o, int i);

/* p.grad = g, as a test or a custom loop assigns it (g retained; NULL sets
 * it to none). g must match p's shape, dtype and device. */
bool hl_set_grad(hl_tensor *p, hl_tensor *g);

#ifdef __cplusplus
}
#endif

#endif
