/* ops_reduce.c — sum and mean (all elements or one dim) and sum_to, the
 * backward of broadcasting. All run the one `sum` kernel on a contiguous
 * [outer, r, inner] view, accumulating in f32 (f64 for f64). */
#include <math.h>
#include <string.h>

#include "core/engine/ops_internal.h"

static hl_shape meta_shape(const hl_node *n, int i) { return hl_shape_of(n->in_meta[i].ndim, n->in_meta[i].shape); }

/* g broadcast back over the input's shape (g already has the input's rank
 * with 1s at the reduced dims, or is a scalar), times `scale`. A plain sum
 * passes the broadcast view on (stride 0, no copy): ops and the engine
 * take strided gradients. */
static hl_tensor *spread(hl_node *n, hl_tensor *g, double scale) {
  if (scale == 1.0) return hl_expand(g, meta_shape(n, 0));
  return hl_mul_scalar(hl_tmp(hl_expand(g, meta_shape(n, 0))), scale);
}

static bool sum_all_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = spread(n, g, n->params.reduce.scale);
  return gin[0] != NULL;
}

static bool sum_dim_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  /* put the reduced dim back as size 1 when keepdim dropped it */
  hl_shape keep = meta_shape(n, 0);
  keep.d[n->params.reduce.dim] = 1;
  hl_tensor *k = hl_tmp(hl_reshape(g, keep));
  gin[0] = k ? spread(n, k, n->params.reduce.scale) : NULL;
  return gin[0] != NULL;
}

/* sum or mean (alpha = 1/r) over dim (-1: all) of x */
static hl_tensor *reduce(hl_op_id id, hl_tensor *x, int dim, bool keepdim, bool mean) {
  hl_op_call c;
  if (!hl_op_begin(&c, id, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  if (!hl_op_contiguous_input(&c, 0)) return hl_op_abort(&c);
  x = c.in[0];
  int64_t outer = 1, r = hl_numel(x), inner = 1;
  int ndim = 0;
  int64_t shape[HL_MAX_DIMS];
  int d = -1;
  if (dim != INT32_MIN) {
    d = hl_dim(dim, x->ndim);
    if (d < 0) {
      hl_fail("%s: dim %d out of range for %s", c.op->name, dim, hl_desc(x));
      return hl_op_abort(&c);
    }
    outer = 1;
    inner = 1;
    for (int i = 0; i < d; i++) outer *= x->shape[i];
    for (int i = d + 1; i < x->ndim; i++) inner *= x->shape[i];
    r = x->shape[d];
    for (int i = 0; i < x->ndim; i++) {
      if (i == d && !keepdim) continue;
      shape[ndim++] = i == d ? 1 : x->shape[i];
    }
  }
  double alpha = mean ? (r ? 1.0 / (double)r : NAN) : 1.0;
  hl_tensor *out = hl_op_output(&c, ndim, shape, c.dtype);
  if (!out) return hl_op_abort(&c);
  c.k->sum(c.dtype, hl_tensor_data(out), hl_tensor_data(x), outer, r, inner, alpha);
  hl_node *node;
  if (!hl_record(&c, out, d < 0 ? sum_all_backward : sum_dim_backward, &node)) return hl_op_abort_output(&c, out);
  if (node) {
    node->params.reduce.scale = alpha;
    node->params.reduce.dim = d;
  }
  return hl_op_end(&c, out);
}

hl_tensor *hl_sum(hl_tensor *x) { return reduce(HL_OP_SUM, x, INT32_MIN, false, false); }
hl_tensor *hl_mean(hl_tensor *x) { return reduce(HL_OP_MEAN, x, INT32_MIN, false, true); }
hl_tensor *hl_sum_dim(hl_tensor *x, int dim, bool keepdim) { return reduce(HL_OP_SUM, x, dim, keepdim, false); }
hl_tensor *hl_mean_dim(hl_tensor *x, int dim, bool keepdim) { return reduce(HL_OP_MEAN, x, dim, keepdim, true); }

/* ---------------------------------------------------------------- sum_to -- */

static bool sum_to_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_expand(g, meta_shape(n, 0));
  return gin[0] != NULL;
}

hl_tensor *hl_sum_to(hl_tensor *x, hl_shape shape) {
  if (x && hl_shape_equal(hl_tensor_shape(x), shape)) return hl_retain(x);
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_SUM_TO, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  /* the target right-aligned against x: dims where it is 1 (or absent) and x is not are summed */
  bool reduced[HL_MAX_DIMS] = {false};
  bool ok = shape.ndim <= x->ndim;
  for (int d = 0; ok && d < x->ndim; d++) {
    int sd = d - (x->ndim - shape.ndim);
    int64_t t = sd >= 0 ? shape.d[sd] : 1;
    if (t == x->shape[d]) continue;
    if (t == 1) reduced[d] = true;
    else ok = false;
  }
  if (!ok) {
    hl_fail("sum_to: %s does not reduce to %s by broadcasting", hl_desc(x), hl_shape_desc(shape));
    return hl_op_abort(&c);
  }
  if (!hl_op_contiguous_input(&c, 0)) return hl_op_abort(&c);
  /* one kernel call per run of adjacent reduced dims, innermost run first;
   * the reduced dims become 1 and the result is viewed as `shape` */
  hl_tensor *cur = hl_retain(c.in[0]);
  int64_t cur_shape[HL_MAX_DIMS];
  memcpy(cur_shape, x->shape, sizeof cur_shape);
  for (int end = x->ndim - 1; end >= 0; end--) {
    if (!reduced[end]) continue;
    int begin = end;
    while (begin > 0 && reduced[begin - 1]) begin--;
    int64_t outer = 1, r = 1, inner = 1;
    for (int i = 0; i < begin; i++) outer *= cur_shape[i];
    for (int i = begin; i <= end; i++) r *= cur_shape[i];
    for (int i = end + 1; i < x->ndim; i++) inner *= cur_shape[i];
    for (int i = begin; i <= end; i++) cur_shape[i] = 1;
    hl_tensor *next = hl_op_output(&c, x->ndim, cur_shape, c.dtype);
    if (!next) {
      hl_release(cur);
      return hl_op_abort(&c);
    }
    c.k->sum(c.dtype, hl_tensor_data(next), hl_tensor_data(cur), outer, r, inner, 1.0);
    hl_release(cur);
    cur = next;
    end = begin;
  }
  int64_t stride[HL_MAX_DIMS];
  hl_contiguous_strides(shape.ndim, shape.d, stride);
  /* cur is the input itself when no dim was summed (only 1s dropped): keep its offset */
  hl_tensor *out = hl_tensor_view_of(cur, shape.ndim, shape.d, stride, cur->offset);
  hl_release(cur);
  if (!out) return hl_op_abort(&c);
  hl_node *node;
  if (!hl_record(&c, out, sum_to_backward, &node)) return hl_op_abort_output(&c, out);
  return hl_op_end(&c, out);
}
