/* optim_kernels.h — the kernels behind the GradScaler, the optimizers and
 * gradient clipping (backend->optim). core/training/scaler.c, core/training/optim.c and
 * core/training/clip.c decide what to run; these entry points only compute.
 *
 * Every entry is a multi-tensor apply: it takes a host array of tensor
 * descriptors (pointers, sizes, dtypes) and walks all of them in one pass
 * over the data, with no host round trip per tensor. The CUDA twin passes
 * the descriptors to its kernels by value (kernel parameters), up to a few
 * dozen tensors per launch, so one call is one launch for a small model and
 * a handful for a large one; results that must stay on the device (the
 * scale, found_inf, the norm) are read and written there.
 *
 * Conventions:
 *   - Pointers are device pointers of the backend (host memory on the CPU).
 *   - f32, f16 and bf16 values are computed in f32 (each +, -, *, /, sqrt
 *     rounded once, never contracted into an FMA) and rounded once to the
 *     storage type on store; f64 gradients in f64. The formulas are the
 *     HL_HD bodies of kernels/optim_math.h, which the CUDA kernels call
 *     unchanged.
 *   - n == 0 tensors, or tensors of 0 elements, are allowed and do nothing.
 *   - Calls are asynchronous on the GPU (the backend's stream); the host
 *     arrays may be freed as soon as the call returns.
 *
 * What the gpu suite holds the CUDA twin to (CPU result = reference):
 *   bit-exact: unscale (values and found_inf), reciprocal, update_scale,
 *     sgd, adamw (every dtype, master weights, absorbed counts),
 *     scale_grads, clamp_grads;
 *   grad_norm: the sums are accumulated in f64 in a different order (CPU:
 *     fixed chunks in sequence; GPU: a tree per block), so the f32 norm may
 *     differ by 1 ulp (relative 1e-6 stated), and the clip coefficient with
 *     it; max-norm (inf) is exact.
 */
#ifndef HL_OPTIM_KERNELS_H
#define HL_OPTIM_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/tensor_kernels.h" /* hl_dtype, HL_MAX_DIMS */

#ifdef __cplusplus
extern "C" {
#endif

/* A gradient as the unscale, norm, scale and clamp passes see it.
 * dst is written, src is read: the same memory for an in-place pass, or
 * (master weights) the fp16/bf16 model gradient read into the fp32 master
 * gradient. dense: element i lives at offset i of both (a contiguous
 * tensor, or a permutation of one such as a transpose: an element-wise
 * pass may visit elements in any order); otherwise element i of the
 * row-major index space `size` lives at sum_d index_d * stride[d]. */
typedef struct {
  void *dst;
  const void *src;
  int32_t dst_dtype, src_dtype; /* hl_dtype: f64, f32, f16, bf16 */
  int64_t numel;
  int32_t dense;
  int32_t pad_;
  int64_t size[HL_MAX_DIMS];
  int64_t dst_stride[HL_MAX_DIMS];
  int64_t src_stride[HL_MAX_DIMS];
} hl_grad_view;

/* One parameter for an optimizer step (all arrays contiguous, numel long).
 * param and grad share param_dtype (f32, f16 or bf16); buf1/buf2 (SGD's
 * momentum buffer; AdamW's exp_avg and exp_avg_sq) have param_dtype too,
 * and may be NULL where unused. model, when not NULL, is the fp16/bf16
 * model weight of an f32 master `param`: it receives param rounded after
 * the update ("O2" master weights). */
typedef struct {
  void *param;
  const void *grad;
  void *buf1, *buf2;
  void *model;
  int64_t numel;
  /* AdamW, per parameter (each counts its own steps as PyTorch does):
   * lr / (1 - beta1^t) and sqrt(1 - beta2^t). */
  float step_size, bias_correction2_sqrt;
  int32_t param_dtype, model_dtype;
  /* SGD: this parameter's first step (its momentum buffer starts as the
   * gradient, undamped, as in PyTorch) */
  int32_t first;
  int32_t pad_;
} hl_optim_entry;

typedef struct {
  float lr;
  float momentum;            /* 0: no buffer */
  float one_minus_dampening; /* 1 - dampening */
  float weight_decay;        /* L2, added to the gradient */
  int32_t nesterov;
} hl_sgd_args;

typedef struct {
  float decay;               /* 1 - lr * weight_decay (decoupled decay), rounded once from f64 */
  float one_minus_beta1;     /* exp_avg.lerp_(grad, 1 - beta1) */
  float beta2, one_minus_beta2;
  float eps;
  int32_t decoupled_decay;   /* weight_decay != 0 */
} hl_adamw_args;

/* norm types of grad_norm */
#define HL_NORM_L1 1
#define HL_NORM_L2 2
#define HL_NORM_INF 0

/* Every entry of the table, once: X(P, return type, name, (parameters)).
 * The table's members below and every backend's table come from this list:
 * a backend defines its functions (static ones will do: P##name) and fills
 * its table with HL_OPTIM_KERNEL_TABLE(prefix), in this order. */
#define HL_OPTIM_KERNEL_ENTRIES(X, P)                                                                          \
  /* ------------------------------------------------------------ scaler -- */                                 \
  /* torch._amp_foreach_non_finite_check_and_unscale_ over all n gradients:                                    \
   * dst = src * (*inv_scale) (src itself when *inv_scale == 1), after the                                     \
   * finiteness test of src; any inf/NaN sets *found_inf = 1.0f (it is not                                     \
   * cleared here: the caller zeroes it first). */                                                             \
  X(P, void, unscale, (const hl_grad_view *grads, int n, const float *inv_scale, float *found_inf))            \
  /* *inv = 1 / *scale, computed in f64 and rounded once to f32. */                                            \
  X(P, void, reciprocal, (float *inv, const float *scale))                                                     \
  /* torch._amp_update_scale_: found = sum of found_inf[i] over the bits i                                     \
   * of mask; found != 0: scale *= backoff, tracker = 0; else tracker += 1                                     \
   * and at growth_interval: scale *= growth if the result is finite,                                          \
   * tracker = 0. Products in f64, rounded once to f32. */                                                     \
  X(P, void, update_scale, (float *scale, int32_t *growth_tracker, const float *found_inf, uint64_t mask,      \
         double growth_factor, double backoff_factor, int32_t growth_interval))                                \
  /* -------------------------------------------------------- optimizers -- */                                 \
  /* absorbed (a device uint64, may be NULL) is incremented by the number of                                   \
   * elements whose update was non-zero but left the stored weight (the                                        \
   * model weight in master mode) bit-identical: fp16/bf16 absorption. */                                      \
  X(P, void, sgd, (const hl_optim_entry *params, int n, const hl_sgd_args *args, uint64_t *absorbed))          \
  X(P, void, adamw, (const hl_optim_entry *params, int n, const hl_adamw_args *args, uint64_t *absorbed))      \
  /* ---------------------------------------------------------- clipping -- */                                 \
  /* Bytes of scratch grad_norm needs for these gradients (device memory                                       \
   * the caller allocates). */                                                                                 \
  X(P, size_t, grad_norm_scratch, (const hl_grad_view *grads, int n))                                          \
  /* out[0] = the total norm of all src values (norm_type HL_NORM_L1/L2/INF,                                   \
   * accumulated in f64, rounded once to f32; NaN when any value is NaN),                                      \
   * out[1] = the clip coefficient min(max_norm / (out[0] + 1e-6), 1) in                                       \
   * f32 as torch.nn.utils.clip_grad_norm_ computes it (NaN propagates).                                       \
   * out is device memory; dst is not touched. */                                                              \
  X(P, void, grad_norm, (const hl_grad_view *grads, int n, int norm_type, double max_norm, void *scratch,      \
         float *out))                                                                                          \
  /* dst = src * (*coef), coef read on the device. */                                                          \
  X(P, void, scale_grads, (const hl_grad_view *grads, int n, const float *coef))                               \
  /* dst = clamp(src, -limit, limit); NaN stays NaN. */                                                        \
  X(P, void, clamp_grads, (const hl_grad_view *grads, int n, double limit))

#define HL_OPTIM_KERNEL_MEMBER_(P, ret, name, params) ret(*name) params;
#define HL_OPTIM_KERNEL_INIT_(P, ret, name, params) P##name,
#define HL_OPTIM_KERNEL_TABLE(prefix) {HL_OPTIM_KERNEL_ENTRIES(HL_OPTIM_KERNEL_INIT_, prefix)}

struct hl_optim_kernels {
  HL_OPTIM_KERNEL_ENTRIES(HL_OPTIM_KERNEL_MEMBER_, unused)
};

#ifdef __cplusplus
}
#endif

#endif /* HL_OPTIM_KERNELS_H */
