/* ops_shape.c — views (reshape, transpose, permute, slice, expand), split,
 * cat, and the attention head layout. Views share storage and cost no
 * kernel; their backward is the inverse view (or a sum / a scatter). */
#include <string.h>

#include "core/engine/ops_internal.h"

/* Records out as a view op's result; releases out on failure. */
static hl_tensor *finish_view(hl_op_call *c, hl_tensor *out, hl_backward_fn backward, hl_node **node) {
  if (!out) return hl_op_abort(c);
  if (!hl_record(c, out, backward, node)) return hl_op_abort_output(c, out);
  return out;
}

/* ------------------------------------------------------------- reshape -- */

/* Strides for viewing (shape, stride) as new_shape without copying, if
 * possible: the old dims fall into runs that are contiguous among
 * themselves; each run must map onto whole dims of the new shape. */
static bool view_strides(int ndim, const int64_t *shape, const int64_t *stride, int nnew, const int64_t *nshape,
                         int64_t *nstride) {
  int64_t numel = 1;
  for (int i = 0; i < ndim; i++) numel *= shape[i];
  if (numel == 0) {
    hl_contiguous_strides(nnew, nshape, nstride);
    return true;
  }
  int v = nnew - 1;
  int64_t base = ndim ? stride[ndim - 1] : 1, run = 1, vrun = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    run *= shape[d];
    bool run_ends = d == 0 || (shape[d - 1] != 1 && stride[d - 1] != run * base);
    if (!run_ends) continue;
    while (v >= 0 && (vrun < run || nshape[v] == 1)) {
      nstride[v] = vrun * base;
      vrun *= nshape[v];
      v--;
    }
    if (vrun != run) return false;
    if (d > 0) {
      base = stride[d - 1];
      run = vrun = 1;
    }
  }
  /* leftover new dims can only be 1s */
  while (v >= 0) {
    if (nshape[v] != 1) return false;
    nstride[v--] = 1;
  }
  return true;
}

static bool reshape_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_reshape(g, hl_shape_of(n->in_meta[0].ndim, n->in_meta[0].shape));
  return gin[0] != NULL;
}

hl_tensor *hl_reshape(hl_tensor *x, hl_shape shape) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_RESHAPE, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  if (shape.ndim < 0 || shape.ndim > HL_MAX_DIMS) {
    hl_fail("reshape: %d dims; tensors have 0 to %d", shape.ndim, HL_MAX_DIMS);
    return hl_op_abort(&c);
  }
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < shape.ndim; i++) {
    if (shape.d[i] == -1 && infer < 0) infer = i;
    else if (shape.d[i] < 0) {
      hl_fail("reshape: bad size %lld in %s", (long long)shape.d[i], hl_shape_desc(shape));
      return hl_op_abort(&c);
    } else known *= shape.d[i];
  }
  int64_t numel = hl_numel(x);
  if (infer >= 0) {
    if (known == 0 || numel % known) {
      hl_fail("reshape: cannot view %s as %s", hl_desc(x), hl_shape_desc(shape));
      return hl_op_abort(&c);
    }
    shape.d[infer] = numel / known;
    known = numel;
  }
  if (known != numel) {
    hl_fail("reshape: %s has %lld elements, %s has %lld", hl_desc(x), (long long)numel, hl_shape_desc(shape),
            (long long)known);
    return hl_op_abort(&c);
  }
  int64_t stride[HL_MAX_DIMS];
  if (!view_strides(x->ndim, x->shape, x->stride, shape.ndim, shape.d, stride)) {
    /* the strides do not allow a view: copy first (a contiguous op in the graph) */
    hl_tensor *packed = hl_contiguous(x);
    hl_tensor *r = packed ? hl_reshape(packed, shape) : NULL;
    hl_release(packed);
    hl_op_abort(&c);
    return r;
  }
  hl_node *node;
  hl_tensor *out = finish_view(&c, hl_tensor_view_of(x, shape.ndim, shape.d, stride, x->offset), reshape_backward,
                               &node);
  return out ? hl_op_end(&c, out) : NULL;
}

/* ----------------------------------------------------- transpose, permute -- */

static bool permute_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  int inverse[HL_MAX_DIMS];
  for (int i = 0; i < n->in_meta[0].ndim; i++) inverse[n->params.permute.dims[i]] = i;
  gin[0] = hl_permute(g, inverse);
  return gin[0] != NULL;
}

static hl_tensor *permute_op(hl_op_id id, hl_tensor *x, const int *dims) {
  hl_op_call c;
  if (!hl_op_begin(&c, id, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  int64_t shape[HL_MAX_DIMS], stride[HL_MAX_DIMS];
  bool seen[HL_MAX_DIMS] = {false};
  int norm[HL_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) {
    int d = hl_dim(dims[i], x->ndim);
    if (d < 0 || seen[d]) {
      hl_fail("%s: dims of %s are not a permutation (dim %d)", c.op->name, hl_desc(x), dims[i]);
      return hl_op_abort(&c);
    }
    seen[d] = true;
    norm[i] = d;
    shape[i] = x->shape[d];
    stride[i] = x->stride[d];
  }
  hl_node *node;
  hl_tensor *out = finish_view(&c, hl_tensor_view_of(x, x->ndim, shape, stride, x->offset), permute_backward, &node);
  if (!out) return NULL;
  if (node)
    for (int i = 0; i < x->ndim; i++) node->params.permute.dims[i] = norm[i];
  return hl_op_end(&c, out);
}

hl_tensor *hl_permute(hl_tensor *x, const int *dims) {
  if (!dims && x) return hl_fail("permute: dims is NULL");
  return permute_op(HL_OP_PERMUTE, x, dims);
}

hl_tensor *hl_transpose(hl_tensor *x, int dim0, int dim1) {
  if (!x) return permute_op(HL_OP_TRANSPOSE, x, NULL);
  int d0 = hl_dim(dim0, x->ndim), d1 = hl_dim(dim1, x->ndim);
  if (d0 < 0 || d1 < 0) return hl_fail("transpose: dims %d, %d out of range for %s", dim0, dim1, hl_desc(x));
  int dims[HL_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) dims[i] = i;
  dims[d0] = d1;
  dims[d1] = d0;
  return permute_op(HL_OP_TRANSPOSE, x, dims);
}

/* ----------------------------------------------------------------- slice -- */

static bool slice_backward_fn(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_slice_backward(g, hl_shape_of(n->in_meta[0].ndim, n->in_meta[0].shape), n->params.slice.dim,
                             n->params.slice.start);
  return gin[0] != NULL;
}

hl_tensor *hl_slice(hl_tensor *x, int dim, int64_t start, int64_t end) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_SLICE, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  int d = hl_dim(dim, x->ndim);
  if (d < 0 || start < 0 || end > x->shape[d < 0 ? 0 : d] || start > end) {
    hl_fail("slice: [%lld, %lld) along dim %d is outside %s", (long long)start, (long long)end, dim, hl_desc(x));
    return hl_op_abort(&c);
  }
  int64_t shape[HL_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  shape[d] = end - start;
  hl_node *node;
  hl_tensor *out = finish_view(&c, hl_tensor_view_of(x, x->ndim, shape, x->stride, x->offset + start * x->stride[d]),
                               slice_backward_fn, &node);
  if (!out) return NULL;
  if (node) {
    node->params.slice.dim = d;
    node->params.slice.start = start;
  }
  return hl_op_end(&c, out);
}

bool hl_split(hl_tensor *x, int dim, int parts, hl_tensor **out) {
  if (!out) return hl_fail_bool("split: out is NULL");
  for (int i = 0; i < parts; i++) out[i] = NULL;
  if (!x) return hl_has_error() ? false : hl_fail_bool("split: input is NULL");
  int d = hl_dim(dim, x->ndim);
  if (d < 0 || parts <= 0 || x->shape[d] % parts)
    return hl_fail_bool("split: %s along dim %d does not split into %d equal parts", hl_desc(x), dim, parts);
  int64_t len = x->shape[d] / parts;
  for (int i = 0; i < parts; i++) {
    out[i] = hl_slice(x, d, i * len, (i + 1) * len);
    if (!out[i]) {
      for (int j = 0; j < i; j++) hl_release(out[j]), out[j] = NULL;
      return false;
    }
  }
  return true;
}

/* zeros of the input's shape with g placed at the slice */
static bool slice_backward_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  const int d = n->params.slice.dim;
  const int64_t start = n->params.slice.start;
  gin[0] = hl_slice(g, d, start, start + n->in_meta[0].shape[d]);
  return gin[0] != NULL;
}

hl_tensor *hl_slice_backward(hl_tensor *g, hl_shape input_shape, int dim, int64_t start) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_SLICE_BACKWARD, HL_INPUTS(g), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  hl_tensor *out = hl_op_output(&c, input_shape.ndim, input_shape.d, g->dtype);
  if (!out) return hl_op_abort(&c);
  c.backend->zero(hl_tensor_data(out), hl_tensor_nbytes(out));
  int64_t size4[HL_MAX_DIMS];
  hl_size4(g->ndim, g->shape, size4);
  hl_kview dst = hl_kview_of(out, out->ndim, out->shape), src = hl_kview_of(g, g->ndim, g->shape);
  /* the destination is the slice of out: offset along dim, out's strides */
  dst.data = (char *)dst.data + start * out->stride[dim] * (int64_t)hl_dtype_size(out->dtype);
  for (int k = 0; k < HL_MAX_DIMS; k++) {
    int od = k - (HL_MAX_DIMS - out->ndim);
    dst.stride[k] = od >= 0 && g->shape[od] != 1 ? out->stride[od] : 0;
  }
  c.k->copy(&dst, &src, size4);
  hl_node *node;
  if (!hl_record(&c, out, slice_backward_backward, &node)) return hl_op_abort_output(&c, out);
  if (node) {
    node->params.slice.dim = dim;
    node->params.slice.start = start;
  }
  return hl_op_end(&c, out);
}

/* ---------------------------------------------------------------- expand -- */

static bool expand_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  gin[0] = hl_sum_to(g, hl_shape_of(n->in_meta[0].ndim, n->in_meta[0].shape));
  return gin[0] != NULL;
}

hl_tensor *hl_expand(hl_tensor *x, hl_shape shape) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_EXPAND, HL_INPUTS(x), HL_ROLES(HL_ARG_DATA), 1)) return NULL;
  if (shape.ndim < x->ndim || shape.ndim > HL_MAX_DIMS) {
    hl_fail("expand: cannot expand %s to %s", hl_desc(x), hl_shape_desc(shape));
    return hl_op_abort(&c);
  }
  int64_t stride[HL_MAX_DIMS];
  for (int d = 0; d < shape.ndim; d++) {
    int xd = d - (shape.ndim - x->ndim);
    if (xd < 0 || (x->shape[xd] == 1 && shape.d[d] != 1)) {
      stride[d] = 0;
    } else if (x->shape[xd] == shape.d[d]) {
      stride[d] = x->stride[xd];
    } else {
      hl_fail("expand: cannot expand %s to %s", hl_desc(x), hl_shape_desc(shape));
      return hl_op_abort(&c);
    }
  }
  hl_node *node;
  hl_tensor *out = finish_view(&c, hl_tensor_view_of(x, shape.ndim, shape.d, stride, x->offset), expand_backward, &node);
  return out ? hl_op_end(&c, out) : NULL;
}

/* ------------------------------------------------------------------- cat -- */

static bool cat_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  const int d = n->params.cat.dim;
  int64_t start = 0;
  for (int i = 0; i < n->n_in; i++) {
    int64_t len = n->in_meta[i].shape[d];
    if (hl_node_wants(n, i)) {
      gin[i] = hl_slice(g, d, start, start + len);
      if (!gin[i]) return false;
    }
    start += len;
  }
  return true;
}

hl_tensor *hl_cat(hl_tensor *const *xs, int n, int dim) {
  if (!xs || n <= 0) return hl_fail("cat: no tensors given");
  if (n > HL_NODE_MAX_INPUTS) return hl_fail("cat: more than %d tensors", HL_NODE_MAX_INPUTS);
  uint8_t roles[HL_NODE_MAX_INPUTS];
  memset(roles, HL_ARG_DATA, sizeof roles);
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_CAT, xs, roles, n)) return NULL;
  const hl_tensor *x0 = c.in[0];
  int d = hl_dim(dim, x0->ndim);
  if (d < 0) {
    hl_fail("cat: dim %d out of range for %s", dim, hl_desc(x0));
    return hl_op_abort(&c);
  }
  int64_t shape[HL_MAX_DIMS];
  memcpy(shape, x0->shape, sizeof shape);
  shape[d] = 0;
  for (int i = 0; i < n; i++) {
    const hl_tensor *x = c.in[i];
    bool ok = x->ndim == x0->ndim;
    for (int k = 0; ok && k < x->ndim; k++) ok = k == d || x->shape[k] == x0->shape[k];
    if (!ok) {
      hl_fail("cat: %s and %s differ outside dim %d", hl_desc(x0), hl_desc(x), dim);
      return hl_op_abort(&c);
    }
    shape[d] += x->shape[d];
  }
  hl_tensor *out = hl_op_output(&c, x0->ndim, shape, c.dtype);
  if (!out) return hl_op_abort(&c);
  int64_t start = 0;
  for (int i = 0; i < n; i++) {
    const hl_tensor *x = c.in[i];
    int64_t size4[HL_MAX_DIMS];
    hl_size4(x->ndim, x->shape, size4);
    hl_kview src = hl_kview_of(x, x->ndim, x->shape), dst = hl_kview_of(out, out->ndim, out->shape);
    dst.data = (char *)dst.data + start * out->stride[d] * (int64_t)hl_dtype_size(out->dtype);
    for (int k = 0; k < HL_MAX_DIMS; k++) {
      int od = k - (HL_MAX_DIMS - out->ndim);
      dst.stride[k] = od >= 0 && x->shape[od] != 1 ? out->stride[od] : 0;
    }
    c.k->copy(&dst, &src, size4);
    start += x->shape[d];
  }
  hl_node *node;
  if (!hl_record(&c, out, cat_backward, &node)) return hl_op_abort_output(&c, out);
  if (node) node->params.cat.dim = d;
  return hl_op_end(&c, out);
}

/* ------------------------------------------------------- attention heads -- */

hl_tensor *hl_split_heads(hl_tensor *x, int heads) {
  if (!x) return hl_has_error() ? NULL : hl_fail("split_heads: input is NULL");
  if (x->ndim != 3 || heads <= 0 || x->shape[2] % heads)
    return hl_fail("split_heads: %s is not [B,T,C] with C divisible by %d heads", hl_desc(x), heads);
  hl_tensor *r = hl_reshape(x, HL_SHAPE(x->shape[0], x->shape[1], heads, x->shape[2] / heads));
  hl_tensor *t = hl_transpose(r, 1, 2);
  hl_release(r);
  return t;
}

hl_tensor *hl_merge_heads(hl_tensor *x) {
  if (!x) return hl_has_error() ? NULL : hl_fail("merge_heads: input is NULL");
  if (x->ndim != 4) return hl_fail("merge_heads: %s is not [B,H,T,D]", hl_desc(x));
  hl_tensor *t = hl_transpose(x, 1, 2);
  hl_tensor *r = hl_reshape(t, HL_SHAPE(x->shape[0], x->shape[2], x->shape[1] * x->shape[3]));
  hl_release(t);
  return r;
}
