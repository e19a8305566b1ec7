/* custom_op.h — user-defined differentiable ops (torch.autograd.Function
 * with torch.amp.custom_fwd / custom_bwd):
 *
 *   static hl_tensor *fwd(hl_custom_ctx *ctx, hl_tensor *const *in, int n) {
 *     hl_custom_save(ctx, in[0]);  hl_custom_save(ctx, in[1]);
 *     return hl_mm(in[0], in[1]);
 *   }
 *   static bool bwd(hl_custom_ctx *ctx, hl_tensor *g, hl_tensor **gin, int n) { ... }
 *   static const hl_custom_op my_mm = {"my_mm", fwd, bwd, true, HL_F32};
 *   hl_tensor *y = hl_custom_apply(&my_mm, (hl_tensor *[]){a, b}, 2);
 *
 * forward runs with grad mode off (the custom op records one node for
 * itself) and returns a new reference. With cast_inputs, inside an enabled
 * autocast region for the inputs' device, every float input is cast to
 * cast_to first (recorded casts, so gradients convert back) and forward
 * runs with autocast disabled; outside a region cast_inputs does nothing.
 * backward runs under the same autocast state as forward did, with grad
 * mode = create_graph; it sets grad_in[i] (new references, the inputs'
 * shapes and dtypes — after the casts) or leaves them NULL.
 */
#ifndef HL_CUSTOM_OP_H
#define HL_CUSTOM_OP_H

#include <stdbool.h>

#include "core/engine/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hl_custom_ctx hl_custom_ctx;

typedef struct hl_custom_op {
  const char *name;
  hl_tensor *(*forward)(hl_custom_ctx *ctx, hl_tensor *const *inputs, int n);
  bool (*backward)(hl_custom_ctx *ctx, hl_tensor *grad_out, hl_tensor **grad_in, int n);
  bool cast_inputs; /* custom_fwd(cast_inputs=cast_to) */
  hl_dtype cast_to;
} hl_custom_op;

#define HL_CUSTOM_MAX_SAVED 8

/* Keep t for backward (retained; at most HL_CUSTOM_MAX_SAVED). */
bool hl_custom_save(hl_custom_ctx *ctx, hl_tensor *t);
hl_tensor *hl_custom_saved(hl_custom_ctx *ctx, int i); /* borrowed */

hl_tensor *hl_custom_apply(const hl_custom_op *op, hl_tensor *const *inputs, int n);

#ifdef __cplusplus
}
#endif

#endif
