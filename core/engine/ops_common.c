/* ops_common.c — helpers every op file uses (see ops_internal.h). */
#include "core/engine/ops_internal.h"

bool hl_record(const hl_op_call *c, hl_tensor *out, hl_backward_fn backward, hl_node **node) {
  *node = NULL;
  if (!hl_should_record(c->in, c->n)) return true;
  *node = hl_node_new(c->op->id, backward, c->in, c->n);
  if (!*node) return false;
  hl_node_attach(*node, out);
  return true;
}

static bool refuse_backward(hl_node *node, hl_tensor *g, hl_tensor **gin) {
  (void)g;
  (void)gin;
  return hl_fail_bool("%s has no derivative of its own: this is a derivative of order higher than the forward op "
                      "supports (see the grad column of docs/ops.md)",
                      node->op->name);
}

bool hl_record_refusal(const hl_op_call *c, hl_tensor *out) {
  hl_node *node;
  return hl_record(c, out, refuse_backward, &node);
}

bool hl_op_same_shape(const hl_op_call *c) {
  if (hl_shape_equal(hl_tensor_shape(c->in[0]), hl_tensor_shape(c->in[1]))) return true;
  return hl_fail_bool("%s: shape mismatch: %s and %s", c->op->name, hl_desc(c->in[0]), hl_desc(c->in[1]));
}

bool hl_op_contiguous_input(hl_op_call *c, int i) {
  if (hl_is_contiguous(c->in[i])) return true;
  hl_tensor *t = hl_contiguous(c->in[i]);
  if (!t) return false;
  if (c->owned[i]) hl_release(c->in[i]);
  c->in[i] = t;
  c->owned[i] = true;
  return true;
}

bool hl_broadcast_shape(const hl_tensor *a, const hl_tensor *b, int *ndim, int64_t *shape) {
  int n = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int d = 0; d < n; d++) {
    int ad = d - (n - a->ndim), bd = d - (n - b->ndim);
    int64_t as = ad >= 0 ? a->shape[ad] : 1, bs = bd >= 0 ? b->shape[bd] : 1;
    if (as != bs && as != 1 && bs != 1) return false;
    shape[d] = as == 1 ? bs : as;
  }
  *ndim = n;
  return true;
}
