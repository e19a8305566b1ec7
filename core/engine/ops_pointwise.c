/* ops_pointwise.c — element-wise ops: binary with broadcasting, scalar
 * ops, activations and their backward ops, exp/log/pow/sqrt, causal mask.
 * Backward formulas are written with ops, so they are differentiable
 * again under create_graph (second derivatives for gradient penalties). */
#include <math.h>

#include "core/engine/ops_internal.h"

/* ---------------------------------------------------------- binary ops -- */

/* the saved operand in `slot`, or NULL when it was not saved (slot -1) */
static hl_tensor *saved_or_null(hl_node *n, int slot) { return slot >= 0 ? hl_tmp(hl_node_saved(n, slot)) : NULL; }

static hl_shape in_shape(const hl_node *n, int i) { return hl_shape_of(n->in_meta[i].ndim, n->in_meta[i].shape); }

/* the gradient of input i: g reduced to the input's shape */
static bool reduce_to_input(hl_node *n, int i, hl_tensor *g, hl_tensor **gin) {
  if (!g) return false;
  gin[i] = hl_sum_to(g, in_shape(n, i));
  return gin[i] != NULL;
}

static bool add_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  if (hl_node_wants(n, 0) && !reduce_to_input(n, 0, g, gin)) return false;
  if (hl_node_wants(n, 1) && !reduce_to_input(n, 1, g, gin)) return false;
  return true;
}

static bool sub_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  if (hl_node_wants(n, 0) && !reduce_to_input(n, 0, g, gin)) return false;
  if (hl_node_wants(n, 1) && !reduce_to_input(n, 1, hl_tmp(hl_neg(g)), gin)) return false;
  return true;
}

static bool mul_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  const int a_slot = n->params.binary.a_slot, b_slot = n->params.binary.b_slot;
  if (hl_node_wants(n, 0) && !reduce_to_input(n, 0, hl_tmp(hl_mul(g, saved_or_null(n, b_slot))), gin)) return false;
  if (hl_node_wants(n, 1) && !reduce_to_input(n, 1, hl_tmp(hl_mul(g, saved_or_null(n, a_slot))), gin)) return false;
  return true;
}

static bool div_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  hl_tensor *b = saved_or_null(n, n->params.binary.b_slot);
  if (hl_node_wants(n, 0) && !reduce_to_input(n, 0, hl_tmp(hl_div(g, b)), gin)) return false;
  if (hl_node_wants(n, 1)) {
    /* d(a/b)/db = -a / b^2 */
    hl_tensor *a = saved_or_null(n, n->params.binary.a_slot);
    hl_tensor *num = hl_tmp(hl_mul(g, a)), *den = hl_tmp(hl_mul(b, b));
    if (!reduce_to_input(n, 1, hl_tmp(hl_neg(hl_tmp(hl_div(num, den)))), gin)) return false;
  }
  return true;
}

static hl_tensor *binary(hl_op_id id, hl_binary_op kop, hl_backward_fn backward, hl_tensor *a, hl_tensor *b) {
  hl_op_call c;
  if (!hl_op_begin(&c, id, HL_INPUTS(a, b), HL_ROLES(HL_ARG_DATA, HL_ARG_DATA), 2)) return NULL;
  a = c.in[0];
  b = c.in[1];
  int ndim;
  int64_t shape[HL_MAX_DIMS];
  if (!hl_broadcast_shape(a, b, &ndim, shape)) {
    hl_fail("%s: shapes %s and %s do not broadcast", c.op->name, hl_desc(a), hl_desc(b));
    return hl_op_abort(&c);
  }
  hl_tensor *out = hl_op_output(&c, ndim, shape, c.dtype);
  if (!out) return hl_op_abort(&c);
  int64_t size4[HL_MAX_DIMS];
  hl_size4(ndim, shape, size4);
  hl_kview o = hl_kview_of(out, ndim, shape), ka = hl_kview_of(a, ndim, shape), kb = hl_kview_of(b, ndim, shape);
  c.k->binary(kop, &o, &ka, &kb, size4);
  hl_node *node;
  if (!hl_record(&c, out, backward, &node)) return hl_op_abort_output(&c, out);
  if (node) {
    /* save only what the formulas need: mul needs the other operand,
     * div needs b always and a for b's gradient */
    node->params.binary.a_slot = node->params.binary.b_slot = -1;
    bool need_a = (id == HL_OP_MUL && b->requires_grad) || (id == HL_OP_DIV && b->requires_grad);
    bool need_b = (id == HL_OP_MUL && a->requires_grad) || id == HL_OP_DIV;
    if (need_a) node->params.binary.a_slot = hl_node_save(node, a);
    if (need_b) node->params.binary.b_slot = hl_node_save(node, b);
    if ((need_a && node->params.binary.a_slot < 0) || (need_b && node->params.binary.b_slot < 0))
      return hl_op_abort_output(&c, out);
  }
  return hl_op_end(&c, out);
}

hl_tensor *hl_add(hl_tensor *a, hl_tensor *b) { return binary(HL_OP_ADD, HL_BIN_ADD, add_backward, a, b); }
hl_tensor *hl_sub(hl_tensor *a, hl_tensor *b) { return binary(HL_OP_SUB, HL_BIN_SUB, sub_backward, a, b); }
hl_tensor *hl_mul(hl_tensor *a, hl_tensor *b) { return binary(HL_OP_MUL, HL_BIN_MUL, mul_backward, a, b); }
hl_tensor *hl_div(hl_tensor *a, hl_tensor *b) { return binary(HL_OP_DIV, HL_BIN_DIV, div_backward, a, b); }

/* ------------------------------------------------------- unary kernels -- */

/* Runs a unary kernel on x (made contiguous) into a new tensor and records
 * `backward` with parameter p; saves x or the output as asked. */
typedef enum { SAVE_NOTHING, SAVE_INPUT, SAVE_OUTPUT } save_what;

static hl_tensor *unary(hl_op_id id, hl_unary_op kop, double p, hl_backward_fn backward, save_what save,
                        hl_tensor *x) {
  hl_op_call c;
  if (!hl_op_begin(&c, id, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  if (!hl_op_contiguous_input(&c, 0)) return hl_op_abort(&c);
  x = c.in[0];
  hl_tensor *out = hl_op_output(&c, x->ndim, x->shape, c.dtype);
  if (!out) return hl_op_abort(&c);
  c.k->unary(kop, c.dtype, hl_numel(x), hl_tensor_data(out), hl_tensor_data(x), p);
  hl_node *node;
  if (!hl_record(&c, out, backward, &node)) return hl_op_abort_output(&c, out);
  if (node) {
    node->params.unary.scalar = p;
    int slot = save == SAVE_INPUT ? hl_node_save(node, x) : save == SAVE_OUTPUT ? hl_node_save_output(node, out) : 0;
    if (slot < 0) return hl_op_abort_output(&c, out);
  }
  return hl_op_end(&c, out);
}

static bool neg_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  (void)n;
  gin[0] = hl_neg(g);
  return gin[0] != NULL;
}
static bool pass_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  (void)n;
  gin[0] = hl_retain(g);
  return true;
}
static bool mul_scalar_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_mul_scalar(g, n->params.unary.scalar);
  return gin[0] != NULL;
}
static bool div_scalar_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_div_scalar(g, n->params.unary.scalar);
  return gin[0] != NULL;
}
static bool rdiv_scalar_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  /* d(s/x)/dx = -s / x^2 */
  hl_tensor *x = hl_tmp(hl_node_saved(n, 0));
  gin[0] = hl_mul_scalar(hl_tmp(hl_div(g, hl_tmp(hl_mul(x, x)))), -n->params.unary.scalar);
  return gin[0] != NULL;
}

hl_tensor *hl_neg(hl_tensor *x) { return unary(HL_OP_NEG, HL_UN_NEG, 0, neg_backward, SAVE_NOTHING, x); }
hl_tensor *hl_add_scalar(hl_tensor *x, double s) {
  return unary(HL_OP_ADD_SCALAR, HL_UN_ADD_SCALAR, s, pass_backward, SAVE_NOTHING, x);
}
hl_tensor *hl_sub_scalar(hl_tensor *x, double s) { return hl_add_scalar(x, -s); }
hl_tensor *hl_mul_scalar(hl_tensor *x, double s) {
  return unary(HL_OP_MUL_SCALAR, HL_UN_MUL_SCALAR, s, mul_scalar_backward, SAVE_NOTHING, x);
}
hl_tensor *hl_div_scalar(hl_tensor *x, double s) {
  return unary(HL_OP_DIV_SCALAR, HL_UN_DIV_SCALAR, s, div_scalar_backward, SAVE_NOTHING, x);
}
hl_tensor *hl_rsub_scalar(hl_tensor *x, double s) {
  return unary(HL_OP_RSUB_SCALAR, HL_UN_RSUB_SCALAR, s, neg_backward, SAVE_NOTHING, x);
}
hl_tensor *hl_rdiv_scalar(hl_tensor *x, double s) {
  return unary(HL_OP_RDIV_SCALAR, HL_UN_RDIV_SCALAR, s, rdiv_scalar_backward, SAVE_INPUT, x);
}

/* ---------------------------------------------------------- activations -- */

/* relu saves its output, not its input (y > 0 exactly where x > 0): the
 * input of a relu that follows a linear can then be freed, as in PyTorch. */
static bool relu_backward_fn(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_relu_backward(g, hl_tmp(hl_node_saved(n, 0)));
  return gin[0] != NULL;
}
hl_tensor *hl_relu(hl_tensor *x) { return unary(HL_OP_RELU, HL_UN_RELU, 0, relu_backward_fn, SAVE_OUTPUT, x); }

static bool gelu_backward_fn(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_gelu_backward(g, hl_tmp(hl_node_saved(n, 0)));
  return gin[0] != NULL;
}
hl_tensor *hl_gelu(hl_tensor *x) { return unary(HL_OP_GELU, HL_UN_GELU, 0, gelu_backward_fn, SAVE_INPUT, x); }

static bool exp_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_mul(g, hl_tmp(hl_node_saved(n, 0)));
  return gin[0] != NULL;
}
hl_tensor *hl_exp(hl_tensor *x) { return unary(HL_OP_EXP, HL_UN_EXP, 0, exp_backward, SAVE_OUTPUT, x); }

static bool log_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_div(g, hl_tmp(hl_node_saved(n, 0)));
  return gin[0] != NULL;
}
hl_tensor *hl_log(hl_tensor *x) { return unary(HL_OP_LOG, HL_UN_LOG, 0, log_backward, SAVE_INPUT, x); }

static bool sqrt_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  /* d sqrt(x) = 1 / (2 sqrt(x)) */
  hl_tensor *y = hl_tmp(hl_node_saved(n, 0));
  gin[0] = hl_div(g, hl_tmp(hl_mul_scalar(y, 2.0)));
  return gin[0] != NULL;
}
hl_tensor *hl_sqrt(hl_tensor *x) { return unary(HL_OP_SQRT, HL_UN_SQRT, 0, sqrt_backward, SAVE_OUTPUT, x); }

static bool pow_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  const double p = n->params.unary.scalar;
  hl_tensor *x = hl_tmp(hl_node_saved(n, 0));
  hl_tensor *dpow; /* p x^(p-1) */
  if (p == 0.0) dpow = hl_tmp(hl_mul_scalar(x, 0.0));
  else if (p == 1.0) return (gin[0] = hl_retain(g)) != NULL;
  else if (p == 2.0) dpow = hl_tmp(hl_mul_scalar(x, 2.0));
  else dpow = hl_tmp(hl_mul_scalar(hl_tmp(hl_pow(x, p - 1.0)), p));
  gin[0] = hl_mul(g, dpow);
  return gin[0] != NULL;
}
hl_tensor *hl_pow(hl_tensor *x, double p) { return unary(HL_OP_POW, HL_UN_POW, p, pow_backward, SAVE_INPUT, x); }

/* ----------------------------------------- activation backward ops -- */

/* Fused dx = dy * f'(x) for relu and gelu, as ops of their own so that
 * their derivatives exist: relu_backward is linear in dy with zero
 * derivative in y; gelu_backward's derivative in x needs gelu''. */

static bool relu_backward_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  if (!hl_node_wants(n, 0)) return true; /* nothing flows to y: the mask is piecewise constant */
  gin[0] = hl_relu_backward(g, hl_tmp(hl_node_saved(n, 0)));
  return gin[0] != NULL;
}

static bool gelu_backward_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  hl_tensor *x = hl_tmp(hl_node_saved(n, 1));
  if (hl_node_wants(n, 0)) {
    gin[0] = hl_gelu_backward(g, x);
    if (!gin[0]) return false;
  }
  if (hl_node_wants(n, 1)) {
    hl_tensor *dy = hl_tmp(hl_node_saved(n, 0));
    gin[1] = hl_mul(hl_tmp(hl_mul(g, dy)), hl_tmp(hl_gelu_grad2(x)));
    if (!gin[1]) return false;
  }
  return true;
}

static hl_tensor *activation_backward(hl_op_id id, hl_unary_grad_op kop, hl_backward_fn backward, hl_tensor *dy,
                                      hl_tensor *x) {
  hl_op_call c;
  if (!hl_op_begin(&c, id, HL_INPUTS(dy, x), HL_ROLES(HL_ARG_DATA, HL_ARG_DATA), 2)) return NULL;
  if (!hl_op_same_shape(&c) || !hl_op_contiguous_input(&c, 0) || !hl_op_contiguous_input(&c, 1))
    return hl_op_abort(&c);
  hl_tensor *out = hl_op_output(&c, c.in[0]->ndim, c.in[0]->shape, c.dtype);
  if (!out) return hl_op_abort(&c);
  c.k->unary_grad(kop, c.dtype, hl_numel(out), hl_tensor_data(out), hl_tensor_data(c.in[0]), hl_tensor_data(c.in[1]));
  hl_node *node;
  if (!hl_record(&c, out, backward, &node)) return hl_op_abort_output(&c, out);
  if (node) {
    bool ok = id == HL_OP_RELU_BACKWARD ? hl_node_save(node, c.in[1]) >= 0
                                        : hl_node_save(node, c.in[0]) >= 0 && hl_node_save(node, c.in[1]) >= 0;
    if (!ok) return hl_op_abort_output(&c, out);
  }
  return hl_op_end(&c, out);
}

hl_tensor *hl_relu_backward(hl_tensor *dy, hl_tensor *y) {
  return activation_backward(HL_OP_RELU_BACKWARD, HL_GRAD_RELU, relu_backward_backward, dy, y);
}

hl_tensor *hl_gelu_backward(hl_tensor *dy, hl_tensor *x) {
  return activation_backward(HL_OP_GELU_BACKWARD, HL_GRAD_GELU, gelu_backward_backward, dy, x);
}

/* gelu'' has no derivative here (third order): its node refuses */
hl_tensor *hl_gelu_grad2(hl_tensor *x) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_GELU_GRAD2, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  if (!hl_op_contiguous_input(&c, 0)) return hl_op_abort(&c);
  hl_tensor *out = hl_op_output(&c, c.in[0]->ndim, c.in[0]->shape, c.dtype);
  if (!out) return hl_op_abort(&c);
  c.k->unary(HL_UN_GELU_GRAD2, c.dtype, hl_numel(out), hl_tensor_data(out), hl_tensor_data(c.in[0]), 0);
  if (!hl_record_refusal(&c, out)) return hl_op_abort_output(&c, out);
  return hl_op_end(&c, out);
}

/* ----------------------------------------------------------- causal mask -- */

static bool causal_mask_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  (void)n;
  gin[0] = hl_causal_mask(g, 0.0);
  return gin[0] != NULL;
}

hl_tensor *hl_causal_mask(hl_tensor *x, double value) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_CAUSAL_MASK, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  if (x->ndim < 2) {
    hl_fail("causal_mask: %s needs at least 2 dims [..., T, S]", hl_desc(x));
    return hl_op_abort(&c);
  }
  if (!hl_op_contiguous_input(&c, 0)) return hl_op_abort(&c);
  x = c.in[0];
  hl_tensor *out = hl_op_output(&c, x->ndim, x->shape, c.dtype);
  if (!out) return hl_op_abort(&c);
  int64_t rows = x->shape[x->ndim - 2], cols = x->shape[x->ndim - 1];
  int64_t batch = rows > 0 && cols > 0 ? hl_numel(x) / (rows * cols) : 0;
  c.k->causal_mask(c.dtype, hl_tensor_data(out), hl_tensor_data(x), batch, rows, cols, value);
  hl_node *node;
  if (!hl_record(&c, out, causal_mask_backward, &node)) return hl_op_abort_output(&c, out);
  return hl_op_end(&c, out);
}
