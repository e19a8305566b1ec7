/* dispatch.h — what every op does before and after its own work (internal
 * to core/engine/): check its inputs, apply autocast and type promotion, consult
 * the registry, find the kernels, and trace.
 *
 *   hl_op_call c;
 *   if (!hl_op_begin(&c, HL_OP_MM, (hl_tensor *[]){a, b}, (uint8_t[]){HL_ARG_DATA, HL_ARG_DATA}, 2))
 *     return NULL;
 *   ... shape checks and the computation on c.in[0], c.in[1] in dtype c.dtype ...
 *   return hl_op_end(&c, out);
 *
 * hl_op_begin fails (NULL input, inputs on different devices, mixed float
 * dtypes where the op does not promote, dtype or backend the registry does
 * not list) with a message naming the op and the tensors; NULL inputs keep
 * the earlier message. On success c.in[] are the inputs after autocast and
 * promotion casts (differentiable `to` ops, owned by c) and c.k the kernels.
 */
#ifndef HL_DISPATCH_H
#define HL_DISPATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/node.h"
#include "core/engine/op_profile.h"
#include "core/engine/op_trace.h"
#include "core/engine/registry.h"
#include "core/engine/tensor_internal.h"

enum {
  HL_ARG_DATA = 1,     /* takes part in autocast and dtype agreement */
  HL_ARG_INDEX = 2,    /* must be i32 (targets, token ids); passes through */
  HL_ARG_OPTIONAL = 4, /* may be NULL (bias) */
};

typedef struct {
  const hl_op_desc *op;
  int n;
  hl_tensor *in[HL_NODE_MAX_INPUTS];
  bool owned[HL_NODE_MAX_INPUTS];
  hl_dtype given[HL_NODE_MAX_INPUTS]; /* dtypes before casts, for the trace */
  hl_dtype dtype;                     /* the op's compute dtype (of its DATA inputs) */
  hl_device_kind device;
  const struct hl_tensor_kernels *k; /* NULL for no-kernel ops */
  const hl_backend *backend;
  hl_autocast_policy applied; /* the policy autocast applied, HL_POLICY_NONE if it was off */
  hl_dtype autocast_dtype;
  bool profiled;   /* the profile was recording when the op began: its span ends with the op */
  hl_op_span span; /* from hl_op_begin's entry, the autocast casts included */
} hl_op_call;

bool hl_op_begin(hl_op_call *c, hl_op_id op, hl_tensor *const *inputs, const uint8_t *roles, int n);
/* Traces, releases the casts, ends the op's profile span, returns out
 * (NULL stays NULL). */
hl_tensor *hl_op_end(hl_op_call *c, hl_tensor *out);
/* Releases the casts after a failure; returns NULL. */
hl_tensor *hl_op_abort(hl_op_call *c);
/* The same after the output was made: releases it too; returns NULL. */
hl_tensor *hl_op_abort_output(hl_op_call *c, hl_tensor *out);

/* Autocast's cast of one input (core/engine/autocast.c): cached for weights. */
hl_tensor *hl_autocast_cast(hl_tensor *t, hl_dtype to);

/* Trace annotations: per-thread state between the engine's own calls,
 * read only where the dispatcher writes an op's trace line (hl_op_end); they
 * change no result. hl_dispatch_set_backward(true) marks every op that ends
 * on this thread as "(backward)" until it is set false again (autograd.c,
 * around a backward pass). hl_dispatch_set_note marks every op that ends
 * until NULL clears it (autocast.c, around its cast's hl_to_dtype:
 * "(autocast cast)"); the text must outlive that span (a literal). */
void hl_dispatch_set_backward(bool in_backward);
void hl_dispatch_set_note(const char *note); /* NULL clears */

#endif
