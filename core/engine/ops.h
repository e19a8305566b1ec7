/* ops.h — the differentiable ops of the AMP core: enough for an MLP and a
 * GPT block, for clipping and for gradient penalties.
 *
 * Every op:
 *   - returns a new tensor (one reference for the caller) or NULL with
 *     hl_error() naming the op, the shapes and the dtypes;
 *   - returns NULL for a NULL input, keeping the earlier message;
 *   - applies its autocast policy inside an enabled region (autocast.h);
 *   - outside autocast refuses mixed float dtypes, except the ops that
 *     promote (add, sub, mul, div, cat: f16 + f32 -> f32);
 *   - records itself for autograd when grad mode is on and an input
 *     requires grad;
 *   - runs where core/engine/registry.c says it has kernels (docs/ops.md), else
 *     fails with "op X: no CUDA kernels in this build yet".
 * Dims may be negative (counted from the end). Element-wise ops broadcast
 * NumPy-style. Views share storage with their input.
 */
#ifndef HL_OPS_H
#define HL_OPS_H

#include <stdbool.h>

#include "core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------- conversions -- */

/* Rounded once (float -> int: nearest even, saturated, NaN -> 0). Float to
 * float is differentiable: the gradient is converted back. Returns x itself
 * (retained) when it already has the dtype. */
hl_tensor *hl_to_dtype(hl_tensor *x, hl_dtype dtype);
hl_tensor *hl_to_f32(hl_tensor *x); /* PyTorch's x.float() */
hl_tensor *hl_to_device(hl_tensor *x, hl_device_kind device);
hl_tensor *hl_contiguous(hl_tensor *x);

/* ---------------------------------------------------------- views -- */

/* One entry of shape may be -1 (inferred). A view when the strides allow,
 * else a copy. */
hl_tensor *hl_reshape(hl_tensor *x, hl_shape shape);
hl_tensor *hl_transpose(hl_tensor *x, int dim0, int dim1);
hl_tensor *hl_permute(hl_tensor *x, const int *dims); /* x->ndim entries */
hl_tensor *hl_slice(hl_tensor *x, int dim, int64_t start, int64_t end); /* [start, end) */
hl_tensor *hl_expand(hl_tensor *x, hl_shape shape);  /* broadcast view */
/* `parts` equal views along dim into out[0..parts). */
bool hl_split(hl_tensor *x, int dim, int parts, hl_tensor **out);
hl_tensor *hl_cat(hl_tensor *const *xs, int n, int dim);
/* Attention layout: [B,T,C] -> [B,H,T,C/H] (a view) and back (a copy). */
hl_tensor *hl_split_heads(hl_tensor *x, int heads);
hl_tensor *hl_merge_heads(hl_tensor *x);

/* ---------------------------------------------------- element-wise -- */

hl_tensor *hl_add(hl_tensor *a, hl_tensor *b);
hl_tensor *hl_sub(hl_tensor *a, hl_tensor *b);
hl_tensor *hl_mul(hl_tensor *a, hl_tensor *b);
hl_tensor *hl_div(hl_tensor *a, hl_tensor *b);
hl_tensor *hl_neg(hl_tensor *x);
hl_tensor *hl_add_scalar(hl_tensor *x, double s);
hl_tensor *hl_sub_scalar(hl_tensor *x, double s);
hl_tensor *hl_mul_scalar(hl_tensor *x, double s);
hl_tensor *hl_div_scalar(hl_tensor *x, double s);
hl_tensor *hl_rsub_scalar(hl_tensor *x, double s); /* s - x */
hl_tensor *hl_rdiv_scalar(hl_tensor *x, double s); /* s / x */
hl_tensor *hl_relu(hl_tensor *x);
hl_tensor *hl_gelu(hl_tensor *x); /* tanh form */
hl_tensor *hl_exp(hl_tensor *x);
hl_tensor *hl_log(hl_tensor *x);
hl_tensor *hl_pow(hl_tensor *x, double p);
hl_tensor *hl_sqrt(hl_tensor *x);
/* x [..., T, S]: entries with col > row + (S - T) set to value (-INFINITY
 * before a softmax); the diagonal and below are kept. */
hl_tensor *hl_causal_mask(hl_tensor *x, double value);

/* ------------------------------------------------------ reductions -- */

hl_tensor *hl_sum(hl_tensor *x); /* all elements -> scalar */
hl_tensor *hl_sum_dim(hl_tensor *x, int dim, bool keepdim);
hl_tensor *hl_mean(hl_tensor *x);
hl_tensor *hl_mean_dim(hl_tensor *x, int dim, bool keepdim);
/* Sum over the dims in which x was broadcast from `shape` (the backward of
 * broadcasting): x [B,T,C] to [C] sums over B and T. */
hl_tensor *hl_sum_to(hl_tensor *x, hl_shape shape);

/* ------------------------------------------------ matrix products -- */
/* fp16 / bf16 operands accumulate in f32 (kernels/gemm.h). */

hl_tensor *hl_mm(hl_tensor *a, hl_tensor *b);     /* [m,k] x [k,n] */
hl_tensor *hl_bmm(hl_tensor *a, hl_tensor *b);    /* [B,m,k] x [B,k,n] */
hl_tensor *hl_matmul(hl_tensor *a, hl_tensor *b); /* [...,m,k] x [...,k,n] (equal batch dims) or x [k,n] */
/* x [..., in] W^T + bias: W [out, in], bias [out] or NULL. */
hl_tensor *hl_linear(hl_tensor *x, hl_tensor *w, hl_tensor *bias);

/* --------------------------------------------------- network ops -- */

hl_tensor *hl_softmax(hl_tensor *x);     /* over the last dim */
hl_tensor *hl_log_softmax(hl_tensor *x); /* over the last dim */
/* Mean cross-entropy of logits [N, C] with i32 targets [N] in [0, C). */
hl_tensor *hl_cross_entropy(hl_tensor *logits, hl_tensor *targets);
/* Mean of (a - b)^2, a and b of one shape. */
hl_tensor *hl_mse_loss(hl_tensor *a, hl_tensor *b);
/* Over the last dim; weight and bias [C] or NULL. */
hl_tensor *hl_layer_norm(hl_tensor *x, hl_tensor *weight, hl_tensor *bias, double eps);
/* weight [vocab, dim], indices i32 of any shape -> [..., dim]. */
hl_tensor *hl_embedding(hl_tensor *weight, hl_tensor *indices);

#ifdef __cplusplus
}
#endif

#endif
