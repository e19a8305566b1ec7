/* ops_internal.h — what the op files (ops_*.c) share: argument lists,
 * output allocation, recording, and the internal ops backward functions
 * call. Not for programs. */
#ifndef HL_OPS_INTERNAL_H
#define HL_OPS_INTERNAL_H

#include "core/engine/autograd.h"
#include "core/engine/dispatch.h"
#include "core/engine/node.h"
#include "core/engine/ops.h"

#define HL_INPUTS(...) ((hl_tensor *const[]){__VA_ARGS__})
#define HL_ROLES(...) ((const uint8_t[]){__VA_ARGS__})

/* A contiguous output on the call's device; NULL with an error naming the op. */
static inline hl_tensor *hl_op_output(const hl_op_call *c, int ndim, const int64_t *shape, hl_dtype dtype) {
  return hl_tensor_new(c->op->name, ndim, shape, dtype, c->device);
}

/* Records a node for out when the inputs require grad. *node is NULL when
 * nothing was recorded. false (out released by the caller) on failure. */
bool hl_record(const hl_op_call *c, hl_tensor *out, hl_backward_fn backward, hl_node **node);
/* Records a node whose backward refuses (a fused backward kernel that has
 * no derivative of its own): differentiating through it later fails with
 * a message naming the op instead of silently giving zero. */
bool hl_record_refusal(const hl_op_call *c, hl_tensor *out);

/* Ops on two tensors of one shape (inputs 0 and 1): false with an error
 * naming the op when the shapes differ. */
bool hl_op_same_shape(const hl_op_call *c);

/* Input i of the call made contiguous (a `contiguous` op when needed; the
 * call owns the result). */
bool hl_op_contiguous_input(hl_op_call *c, int i);

/* A dim in [-ndim, ndim) as [0, ndim), or -1. */
static inline int hl_dim(int dim, int ndim) {
  if (dim < -ndim || dim >= ndim) return -1;
  return dim < 0 ? dim + ndim : dim;
}

/* Broadcast shape of a and b (right-aligned); false if they do not. */
bool hl_broadcast_shape(const hl_tensor *a, const hl_tensor *b, int *ndim, int64_t *shape);

/* Internal ops, made by backward functions (registry group "internal"). */
hl_tensor *hl_relu_backward(hl_tensor *dy, hl_tensor *y);
hl_tensor *hl_gelu_backward(hl_tensor *dy, hl_tensor *x);
hl_tensor *hl_gelu_grad2(hl_tensor *x);
hl_tensor *hl_softmax_backward(hl_tensor *dy, hl_tensor *y, bool log);
hl_tensor *hl_slice_backward(hl_tensor *g, hl_shape input_shape, int dim, int64_t start);
hl_tensor *hl_embedding_backward(hl_tensor *dy, hl_tensor *indices, int64_t vocab);
hl_tensor *hl_one_hot(hl_tensor *targets, int64_t classes, hl_dtype dtype);

#endif
