/* custom_op.c — user-defined ops: the autocast handling of custom_fwd /
 * custom_bwd around a user's forward and backward. */
#include "core/engine/custom_op.h"

#include <stdlib.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "core/base/device.h"
#include "core/engine/dispatch.h"
#include "core/engine/node.h"
#include "core/engine/ops.h"

struct hl_custom_ctx {
  const hl_custom_op *op;
  int n_inputs;
  hl_tensor *saved[HL_CUSTOM_MAX_SAVED];
  int n_saved;
};

bool hl_custom_save(hl_custom_ctx *ctx, hl_tensor *t) {
  if (!t) return hl_has_error() ? false : hl_fail_bool("%s: saving a NULL tensor", ctx->op->name);
  if (ctx->n_saved == HL_CUSTOM_MAX_SAVED)
    return hl_fail_bool("%s: more than %d saved tensors", ctx->op->name, HL_CUSTOM_MAX_SAVED);
  ctx->saved[ctx->n_saved++] = hl_retain(t);
  return true;
}

hl_tensor *hl_custom_saved(hl_custom_ctx *ctx, int i) { return i >= 0 && i < ctx->n_saved ? ctx->saved[i] : NULL; }

static void ctx_free(void *p) {
  hl_custom_ctx *ctx = p;
  if (!ctx) return;
  for (int i = 0; i < ctx->n_saved; i++) hl_release(ctx->saved[i]);
  free(ctx);
}

static bool custom_backward(hl_node *node, hl_tensor *g, hl_tensor **gin) {
  hl_custom_ctx *ctx = node->ctx;
  if (!ctx->op->backward) return hl_fail_bool("%s: custom op has no backward", ctx->op->name);
  return ctx->op->backward(ctx, g, gin, ctx->n_inputs);
}

hl_tensor *hl_custom_apply(const hl_custom_op *op, hl_tensor *const *inputs, int n) {
  if (!op || !op->forward || !op->name) return hl_fail("custom op: op, its name and its forward must be given");
  if (n <= 0 || n > HL_NODE_MAX_INPUTS) return hl_fail("%s: %d inputs (1 to %d)", op->name, n, HL_NODE_MAX_INPUTS);
  for (int i = 0; i < n; i++) {
    if (!inputs[i]) return hl_has_error() ? NULL : hl_fail("%s: input %d is NULL", op->name, i);
    if (inputs[i]->device != inputs[0]->device)
      return hl_fail("%s: inputs on different devices: %s and %s", op->name, hl_desc(inputs[0]), hl_desc(inputs[i]));
  }
  hl_custom_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return hl_fail("%s: out of host memory", op->name);
  ctx->op = op;
  ctx->n_inputs = n;
  const hl_device_kind dev = inputs[0]->device;

  /* custom_fwd(cast_inputs): only inside an enabled region for this device */
  hl_tensor *in[HL_NODE_MAX_INPUTS];
  const bool cast = op->cast_inputs && hl_autocast_enabled(dev);
  for (int i = 0; i < n; i++) {
    in[i] = cast && hl_dtype_is_float(inputs[i]->dtype) ? hl_to_dtype(inputs[i], op->cast_to) : hl_retain(inputs[i]);
    if (!in[i]) {
      for (int j = 0; j < i; j++) hl_release(in[j]);
      ctx_free(ctx);
      return NULL;
    }
  }
  hl_autocast_state state = hl_autocast_get_state();
  if (cast) state.enabled[dev] = false;

  hl_autocast_push_state(&state);
  bool prev = hl_set_grad_enabled(false);
  hl_tensor *out = op->forward(ctx, in, n);
  hl_set_grad_enabled(prev);
  hl_autocast_pop_state();

  hl_tensor *result = NULL;
  if (out) {
    /* a fresh tensor for the node, whatever forward returned (maybe an input) */
    result = hl_detach(out);
    hl_release(out);
  } else if (!hl_has_error()) {
    hl_fail("%s: forward returned NULL", op->name);
  }
  if (result && hl_should_record(in, n)) {
    hl_node *node = hl_node_new(HL_OP_CUSTOM, custom_backward, in, n);
    if (!node) {
      hl_release(result);
      result = NULL;
    } else {
      node->ctx = ctx;
      node->ctx_free = ctx_free;
      node->has_autocast = true;
      node->autocast = state; /* custom_bwd: backward under the forward's autocast state */
      hl_node_attach(node, result);
      ctx = NULL;
    }
  }
  if (result && hl_op_tracing()) {
    char ins[200];
    size_t k = 0;
    ins[0] = '\0';
    for (int i = 0; i < n && k < sizeof ins - 40; i++) k += (size_t)snprintf(ins + k, sizeof ins - k, "%s%s", k ? " " : "", hl_desc(in[i]));
    hl_op_trace_line("%-12s in %s -> %s%s", op->name, ins, hl_desc(result),
                     cast ? "  custom op: inputs cast, autocast off inside" : "  custom op");
  }
  ctx_free(ctx);
  for (int i = 0; i < n; i++) hl_release(in[i]);
  return result;
}
