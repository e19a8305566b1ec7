/* ops_nn.c — softmax, log_softmax, cross-entropy, mse, layer norm and
 * embedding. The forward kernels are fused (one pass per row). Backward
 * uses fused kernels too when it is not itself being recorded; under
 * create_graph, softmax and cross-entropy build their backward from ops
 * so that it can be differentiated again (gradient penalties). */
#include <math.h>
#include <string.h>

#include "core/engine/ops_internal.h"

static int64_t last_dim(const hl_tensor *x) { return x->ndim ? x->shape[x->ndim - 1] : 1; }

/* ------------------------------------------------------------- softmax -- */

static bool softmax_backward_fn(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  const bool log = n->params.softmax.log;
  hl_tensor *y = hl_tmp(hl_node_saved(n, 0));
  if (!y) return false;
  if (!hl_grad_enabled()) {
    gin[0] = hl_softmax_backward(g, y, log);
    return gin[0] != NULL;
  }
  /* create_graph: the same formulas from differentiable ops */
  if (log) { /* dx = g - exp(y) * sum(g) */
    hl_tensor *s = hl_tmp(hl_sum_dim(g, -1, true));
    gin[0] = hl_sub(g, hl_tmp(hl_mul(hl_tmp(hl_exp(y)), s)));
  } else { /* dx = y * (g - sum(g * y)) */
    hl_tensor *s = hl_tmp(hl_sum_dim(hl_tmp(hl_mul(g, y)), -1, true));
    gin[0] = hl_mul(y, hl_tmp(hl_sub(g, s)));
  }
  return gin[0] != NULL;
}

static hl_tensor *softmax_op(hl_op_id id, hl_tensor *x, bool log) {
  hl_op_call c;
  if (!hl_op_begin(&c, id, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  if (!hl_op_contiguous_input(&c, 0)) return hl_op_abort(&c);
  x = c.in[0];
  hl_tensor *out = hl_op_output(&c, x->ndim, x->shape, c.dtype);
  if (!out) return hl_op_abort(&c);
  int64_t cols = last_dim(x), rows = cols ? hl_numel(x) / cols : 0;
  c.k->softmax(c.dtype, hl_tensor_data(out), hl_tensor_data(x), rows, cols, log);
  hl_node *node;
  if (!hl_record(&c, out, softmax_backward_fn, &node)) return hl_op_abort_output(&c, out);
  if (node) {
    node->params.softmax.log = log;
    if (hl_node_save_output(node, out) < 0) return hl_op_abort_output(&c, out);
  }
  return hl_op_end(&c, out);
}

hl_tensor *hl_softmax(hl_tensor *x) { return softmax_op(HL_OP_SOFTMAX, x, false); }
hl_tensor *hl_log_softmax(hl_tensor *x) { return softmax_op(HL_OP_LOG_SOFTMAX, x, true); }

hl_tensor *hl_softmax_backward(hl_tensor *dy, hl_tensor *y, bool log) {
  hl_op_call c;
  hl_op_id id = log ? HL_OP_LOG_SOFTMAX_BACKWARD : HL_OP_SOFTMAX_BACKWARD;
  if (!hl_op_begin(&c, id, HL_INPUTS(dy, y), HL_ROLES(HL_ARG_DATA, HL_ARG_DATA), 2)) return NULL;
  if (!hl_op_same_shape(&c) || !hl_op_contiguous_input(&c, 0) || !hl_op_contiguous_input(&c, 1))
    return hl_op_abort(&c);
  hl_tensor *out = hl_op_output(&c, c.in[0]->ndim, c.in[0]->shape, c.dtype);
  if (!out) return hl_op_abort(&c);
  int64_t cols = last_dim(out), rows = cols ? hl_numel(out) / cols : 0;
  c.k->softmax_backward(c.dtype, hl_tensor_data(out), hl_tensor_data(c.in[0]), hl_tensor_data(c.in[1]), rows, cols,
                        log);
  if (!hl_record_refusal(&c, out)) return hl_op_abort_output(&c, out);
  return hl_op_end(&c, out);
}

/* ------------------------------------------------------- cross-entropy -- */

/* Reads the device's count of bad indices (one small copy: a sync on the
 * GPU, once per loss or embedding call). */
static int32_t read_count(const hl_op_call *c, const int32_t *dev_count) {
  int32_t n = 0;
  c->backend->copy_to_host(&n, dev_count, sizeof n);
  return n;
}

hl_tensor *hl_one_hot(hl_tensor *targets, int64_t classes, hl_dtype dtype) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_ONE_HOT, HL_INPUTS(targets), HL_ROLES(HL_ARG_INDEX), 1)) return NULL;
  char why[256];
  if (!hl_op_supported(c.op, c.device, dtype, why, sizeof why) || targets->ndim != 1) {
    if (targets->ndim != 1) hl_fail("one_hot: targets %s must be 1-D", hl_desc(targets));
    else hl_fail("%s", why);
    return hl_op_abort(&c);
  }
  if (!hl_op_contiguous_input(&c, 0)) return hl_op_abort(&c);
  hl_tensor *out = hl_op_output(&c, 2, (int64_t[]){targets->shape[0], classes}, dtype);
  if (!out) return hl_op_abort(&c);
  c.k->one_hot(dtype, hl_tensor_data(out), hl_tensor_data(c.in[0]), targets->shape[0], classes);
  return hl_op_end(&c, out);
}

/* slots: 0 logits, 1 targets, 2 lse */
static bool cross_entropy_backward_fn(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  hl_tensor *x = hl_tmp(hl_node_saved(n, 0)), *t = hl_tmp(hl_node_saved(n, 1));
  if (!x || !t) return false;
  const int64_t rows = x->shape[0], cols = x->shape[1];
  if (hl_grad_enabled()) {
    /* create_graph: (softmax(x) - onehot(t)) / rows * g, from ops */
    hl_tensor *p = hl_tmp(hl_softmax(x));
    hl_tensor *d = hl_tmp(hl_sub(p, hl_tmp(hl_one_hot(t, cols, x->dtype))));
    gin[0] = hl_mul(hl_tmp(hl_mul_scalar(d, 1.0 / (double)rows)), g);
    return gin[0] != NULL;
  }
  hl_tensor *lse = hl_tmp(hl_node_saved(n, 2));
  hl_op_call c;
  if (!lse ||
      !hl_op_begin(&c, HL_OP_CROSS_ENTROPY_BACKWARD, HL_INPUTS(g, x, t),
                   HL_ROLES(HL_ARG_DATA, HL_ARG_DATA, HL_ARG_INDEX), 3))
    return false;
  if (!hl_op_contiguous_input(&c, 0)) return hl_op_abort(&c), false;
  hl_tensor *dx = hl_op_output(&c, 2, x->shape, x->dtype);
  if (!dx) return hl_op_abort(&c), false;
  c.k->cross_entropy_backward(x->dtype, hl_tensor_data(dx), hl_tensor_data(x), hl_tensor_data(t),
                              hl_tensor_data(lse), hl_tensor_data(c.in[0]), rows, cols);
  gin[0] = hl_op_end(&c, dx);
  return true;
}

hl_tensor *hl_cross_entropy(hl_tensor *logits, hl_tensor *targets) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_CROSS_ENTROPY, HL_INPUTS(logits, targets), HL_ROLES(HL_ARG_DATA, HL_ARG_INDEX), 2))
    return NULL;
  hl_tensor *x = c.in[0], *t = c.in[1];
  if (x->ndim != 2 || t->ndim != 1 || t->shape[0] != x->shape[0] || x->shape[0] == 0) {
    hl_fail("cross_entropy: logits %s and targets %s (need logits [N, C] and i32 targets [N], N > 0)", hl_desc(x),
            hl_desc(t));
    return hl_op_abort(&c);
  }
  if (!hl_op_contiguous_input(&c, 0) || !hl_op_contiguous_input(&c, 1)) return hl_op_abort(&c);
  x = c.in[0];
  t = c.in[1];
  const int64_t rows = x->shape[0], cols = x->shape[1];
  const hl_dtype acc = hl_acc_dtype(c.dtype);
  hl_tensor *out = hl_op_output(&c, 0, NULL, c.dtype);
  hl_tensor *lse = hl_op_output(&c, 1, &rows, acc);
  hl_tensor *row_loss = hl_op_output(&c, 1, &rows, acc);
  hl_tensor *bad = hl_op_output(&c, 0, NULL, HL_I32);
  if (!out || !lse || !row_loss || !bad) goto fail;
  c.k->cross_entropy(c.dtype, hl_tensor_data(out), hl_tensor_data(row_loss), hl_tensor_data(lse),
                     hl_tensor_data(x), hl_tensor_data(t), rows, cols, hl_tensor_data(bad));
  int32_t nbad = read_count(&c, hl_tensor_data(bad));
  if (nbad) {
    hl_fail("cross_entropy: %d of %lld targets are outside [0, %lld) (logits %s)", nbad, (long long)rows,
            (long long)cols, hl_desc(x));
    goto fail;
  }
  hl_node *node;
  if (!hl_record(&c, out, cross_entropy_backward_fn, &node)) goto fail;
  if (node && (hl_node_save(node, x) < 0 || hl_node_save(node, t) < 0 || hl_node_save(node, lse) < 0)) goto fail;
  hl_release(lse);
  hl_release(row_loss);
  hl_release(bad);
  return hl_op_end(&c, out);
fail:
  hl_release(out);
  hl_release(lse);
  hl_release(row_loss);
  hl_release(bad);
  return hl_op_abort(&c);
}

/* ------------------------------------------------------------------ mse -- */

/* Made of ops (sub, mul, mean): its backward and second derivative come
 * from theirs. Registered for its autocast policy (fp32) and shape check. */
hl_tensor *hl_mse_loss(hl_tensor *a, hl_tensor *b) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_MSE_LOSS, HL_INPUTS(a, b), HL_ROLES(HL_ARG_DATA, HL_ARG_DATA), 2)) return NULL;
  if (!hl_op_same_shape(&c)) return hl_op_abort(&c);
  hl_tensor *d = hl_sub(c.in[0], c.in[1]);
  hl_tensor *sq = hl_mul(d, d);
  hl_tensor *out = hl_mean(sq);
  hl_release(d);
  hl_release(sq);
  return out ? hl_op_end(&c, out) : hl_op_abort(&c);
}

/* ----------------------------------------------------------- layer norm -- */

static bool layer_norm_backward_fn(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  const int weight_slot = n->params.layer_norm.weight_slot;
  hl_tensor *x = hl_tmp(hl_node_saved(n, 0));
  hl_tensor *w = weight_slot >= 0 ? hl_tmp(hl_node_saved(n, weight_slot)) : NULL;
  hl_tensor *mean = hl_tmp(hl_node_saved(n, n->params.layer_norm.mean_slot));
  hl_tensor *rstd = hl_tmp(hl_node_saved(n, n->params.layer_norm.rstd_slot));
  if (!x || !mean || !rstd || (weight_slot >= 0 && !w)) return false;
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_LAYER_NORM_BACKWARD, HL_INPUTS(g, x, w),
                   HL_ROLES(HL_ARG_DATA, HL_ARG_DATA, HL_ARG_DATA | HL_ARG_OPTIONAL), 3))
    return false;
  if (!hl_op_contiguous_input(&c, 0)) return hl_op_abort(&c), false;
  const int64_t cols = last_dim(x), rows = cols ? hl_numel(x) / cols : 0;
  hl_tensor *dx = hl_node_wants(n, 0) ? hl_op_output(&c, x->ndim, x->shape, x->dtype) : NULL;
  hl_tensor *dw = hl_node_wants(n, 1) ? hl_op_output(&c, 1, &cols, x->dtype) : NULL;
  hl_tensor *db = hl_node_wants(n, 2) ? hl_op_output(&c, 1, &cols, x->dtype) : NULL;
  if ((hl_node_wants(n, 0) && !dx) || (hl_node_wants(n, 1) && !dw) || (hl_node_wants(n, 2) && !db)) goto fail;
  c.k->layer_norm_backward(x->dtype, dx ? hl_tensor_data(dx) : NULL, dw ? hl_tensor_data(dw) : NULL,
                           db ? hl_tensor_data(db) : NULL, hl_tensor_data(c.in[0]), hl_tensor_data(x),
                           w ? hl_tensor_data(w) : NULL, hl_tensor_data(mean), hl_tensor_data(rstd), rows, cols);
  /* no second derivative: should these gradients be differentiated again,
   * the refusing nodes say so */
  if ((dx && !hl_record_refusal(&c, dx)) || (dw && !hl_record_refusal(&c, dw)) || (db && !hl_record_refusal(&c, db)))
    goto fail;
  gin[0] = dx;
  gin[1] = dw;
  gin[2] = db;
  hl_op_end(&c, dx ? dx : dw ? dw : db);
  return true;
fail:
  hl_release(dx);
  hl_release(dw);
  hl_release(db);
  return hl_op_abort(&c), false;
}

hl_tensor *hl_layer_norm(hl_tensor *x, hl_tensor *weight, hl_tensor *bias, double eps) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_LAYER_NORM, HL_INPUTS(x, weight, bias),
                   HL_ROLES(HL_ARG_DATA, HL_ARG_DATA | HL_ARG_OPTIONAL, HL_ARG_DATA | HL_ARG_OPTIONAL), 3))
    return NULL;
  x = c.in[0];
  weight = c.in[1];
  bias = c.in[2];
  const int64_t cols = x->ndim ? last_dim(x) : 0;
  bool ok = x->ndim >= 1 && cols > 0 && (!weight || (weight->ndim == 1 && weight->shape[0] == cols)) &&
            (!bias || (bias->ndim == 1 && bias->shape[0] == cols));
  if (!ok || !(eps >= 0)) {
    hl_fail("layer_norm: x %s, weight %s, bias %s, eps %g (need x [..., C], weight and bias [C], eps >= 0)",
            hl_desc(x), weight ? hl_desc(weight) : "none", bias ? hl_desc(bias) : "none", eps);
    return hl_op_abort(&c);
  }
  for (int i = 0; i < 3; i++)
    if (c.in[i] && !hl_op_contiguous_input(&c, i)) return hl_op_abort(&c);
  x = c.in[0];
  weight = c.in[1];
  bias = c.in[2];
  const int64_t rows = hl_numel(x) / cols;
  const hl_dtype acc = hl_acc_dtype(c.dtype);
  hl_tensor *out = hl_op_output(&c, x->ndim, x->shape, c.dtype);
  hl_tensor *mean = hl_op_output(&c, 1, &rows, acc), *rstd = hl_op_output(&c, 1, &rows, acc);
  hl_node *node = NULL;
  if (!out || !mean || !rstd) goto fail;
  c.k->layer_norm(c.dtype, hl_tensor_data(out), hl_tensor_data(mean), hl_tensor_data(rstd), hl_tensor_data(x),
                  weight ? hl_tensor_data(weight) : NULL, bias ? hl_tensor_data(bias) : NULL, rows, cols, eps);
  if (!hl_record(&c, out, layer_norm_backward_fn, &node)) goto fail;
  if (node) {
    node->params.layer_norm.weight_slot = -1;
    if (hl_node_save(node, x) < 0) goto fail;
    if (weight && (node->params.layer_norm.weight_slot = hl_node_save(node, weight)) < 0) goto fail;
    if ((node->params.layer_norm.mean_slot = hl_node_save(node, mean)) < 0 ||
        (node->params.layer_norm.rstd_slot = hl_node_save(node, rstd)) < 0)
      goto fail;
  }
  hl_release(mean);
  hl_release(rstd);
  return hl_op_end(&c, out);
fail:
  hl_release(out);
  hl_release(mean);
  hl_release(rstd);
  return hl_op_abort(&c);
}

/* ------------------------------------------------------------ embedding -- */

static bool embedding_backward_fn(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  if (!hl_node_wants(n, 0)) return true;
  hl_tensor *idx = hl_tmp(hl_node_saved(n, 0));
  gin[0] = hl_embedding_backward(g, idx, n->in_meta[0].shape[0]);
  return gin[0] != NULL;
}

hl_tensor *hl_embedding(hl_tensor *weight, hl_tensor *indices) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_EMBEDDING, HL_INPUTS(weight, indices), HL_ROLES(HL_ARG_DATA, HL_ARG_INDEX), 2))
    return NULL;
  hl_tensor *w = c.in[0], *idx = c.in[1];
  if (w->ndim != 2 || idx->ndim >= HL_MAX_DIMS) {
    hl_fail("embedding: weight %s must be [vocab, dim] and indices %s at most %d-D", hl_desc(w), hl_desc(idx),
            HL_MAX_DIMS - 1);
    return hl_op_abort(&c);
  }
  if (!hl_op_contiguous_input(&c, 0) || !hl_op_contiguous_input(&c, 1)) return hl_op_abort(&c);
  w = c.in[0];
  idx = c.in[1];
  int64_t shape[HL_MAX_DIMS];
  memcpy(shape, idx->shape, sizeof(int64_t) * (size_t)idx->ndim);
  shape[idx->ndim] = w->shape[1];
  hl_tensor *out = hl_op_output(&c, idx->ndim + 1, shape, c.dtype);
  hl_tensor *bad = hl_op_output(&c, 0, NULL, HL_I32);
  hl_node *node = NULL;
  if (!out || !bad) goto fail;
  c.k->embedding(c.dtype, hl_tensor_data(out), hl_tensor_data(w), hl_tensor_data(idx), hl_numel(idx), w->shape[1],
                 w->shape[0], hl_tensor_data(bad));
  int32_t nbad = read_count(&c, hl_tensor_data(bad));
  if (nbad) {
    hl_fail("embedding: %d of %lld indices are outside [0, %lld) (weight %s)", nbad, (long long)hl_numel(idx),
            (long long)w->shape[0], hl_desc(w));
    goto fail;
  }
  if (!hl_record(&c, out, embedding_backward_fn, &node)) goto fail;
  if (node && hl_node_save(node, idx) < 0) goto fail;
  hl_release(bad);
  return hl_op_end(&c, out);
fail:
  hl_release(out);
  hl_release(bad);
  return hl_op_abort(&c);
}

/* the scatter-add is linear in dy: its derivative is the lookup again */
static bool embedding_backward_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  if (!hl_node_wants(n, 0)) return true;
  hl_tensor *idx = hl_tmp(hl_node_saved(n, 0));
  gin[0] = hl_embedding(g, idx);
  return gin[0] != NULL;
}

hl_tensor *hl_embedding_backward(hl_tensor *dy, hl_tensor *indices, int64_t vocab) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_EMBEDDING_BACKWARD, HL_INPUTS(dy, indices), HL_ROLES(HL_ARG_DATA, HL_ARG_INDEX), 2))
    return NULL;
  if (!hl_op_contiguous_input(&c, 0) || !hl_op_contiguous_input(&c, 1)) return hl_op_abort(&c);
  hl_tensor *g = c.in[0], *idx = c.in[1];
  const int64_t dim = last_dim(g), n = hl_numel(idx);
  if (g->ndim != idx->ndim + 1 || n * dim != hl_numel(g)) {
    hl_fail("embedding_backward: gradient %s does not match indices %s", hl_desc(g), hl_desc(idx));
    return hl_op_abort(&c);
  }
  hl_tensor *out = hl_op_output(&c, 2, (int64_t[]){vocab, dim}, c.dtype);
  if (!out) return hl_op_abort(&c);
  c.k->embedding_backward(c.dtype, hl_tensor_data(out), hl_tensor_data(g), hl_tensor_data(idx), n, dim, vocab);
  hl_node *node;
  if (!hl_record(&c, out, embedding_backward_backward, &node) || (node && hl_node_save(node, idx) < 0)) {
    return hl_op_abort_output(&c, out);
  }
  return hl_op_end(&c, out);
}
