/* ops_linalg.c — mm, bmm, matmul and linear, all through the backend's
 * GEMM (kernels/gemm.h: OpenBLAS on the CPU, cuBLAS on the GPU; fp16/bf16
 * operands accumulate in f32). Transposed views go to the GEMM as
 * transpose flags, so backward's A^T and B^T cost no copy. */
#include <limits.h>
#include <string.h>

#include "core/base/device.h" /* hl_device_kind_label */
#include "core/engine/ops_internal.h"
#include "kernels/gemm.h"

/* A matrix as a row-major GEMM operand: the [rows, cols] matrix with
 * element (i, j) at data[i * rs + j * cs], as stored data + transpose flag
 * + leading dimension, if one of the two storage orders fits. */
typedef struct {
  bool trans;
  int64_t ld;
} mat_layout;

static bool matrix_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, mat_layout *m) {
  const int64_t r1 = rows > 1 ? rows : 1, c1 = cols > 1 ? cols : 1;
  if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= c1)) {
    m->trans = false;
    m->ld = rows <= 1 ? c1 : rs;
    return true;
  }
  if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= r1)) {
    m->trans = true;
    m->ld = cols <= 1 ? r1 : cs;
    return true;
  }
  return false;
}

static bool last2_layout(const hl_tensor *t, mat_layout *m) {
  return matrix_layout(t->shape[t->ndim - 2], t->shape[t->ndim - 1], t->stride[t->ndim - 2], t->stride[t->ndim - 1],
                       m);
}

/* Makes input i of the call usable as GEMM operand (its last two dims). */
static bool gemm_ready(hl_op_call *c, int i) {
  mat_layout m;
  if (last2_layout(c->in[i], &m)) return true;
  return hl_op_contiguous_input(c, i);
}

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* out [B0, B1, m, n] (leading dims optional) = a @ b (+ beta out).
 * a and b are [.., m, k] / [.., k, n] with the out's batch dims or none
 * (shared by every batch entry: stride 0). Batch dims of any strides: the
 * inner one is the GEMM's strided batch, the outer one its outer batch
 * where the backend takes one (the CPU), else a loop of calls.
 * a_as_before: a is the A of this thread's previous GEMM, untouched since
 * (kernels/gemm.h, hl_gemm_desc.a_as_before); only linear's backward knows
 * it, and says so. */
static bool gemm_run(const hl_op_call *c, const hl_tensor *a, const hl_tensor *b, hl_tensor *out, float beta,
                     const hl_tensor *bias, bool a_as_before) {
  const struct hl_gemm_kernels *gk = c->backend->gemm;
  if (!gk)
    return hl_fail_bool("%s: the %s backend has no GEMM kernels in this build yet", c->op->name,
                        hl_device_kind_label(c->device));
  const int nb = out->ndim - 2;
  const int64_t m = out->shape[nb], n = out->shape[nb + 1], k = a->shape[a->ndim - 1];
  if (!fits_int(m) || !fits_int(n) || !fits_int(k))
    return hl_fail_bool("%s: %s x %s exceeds the GEMM's 32-bit sizes", c->op->name, hl_desc(a), hl_desc(b));
  mat_layout la, lb;
  if (!last2_layout(a, &la) || !last2_layout(b, &lb))
    return hl_fail_bool("%s: internal: operand is not a matrix view", c->op->name);
  int64_t B0 = nb >= 2 ? out->shape[0] : 1, B1 = nb >= 1 ? out->shape[nb - 1] : 1;
  int64_t a0 = 0, a1 = 0, b0 = 0, b1 = 0, o0 = 0, o1 = 0;
  if (a->ndim > 2) {
    a1 = a->stride[a->ndim - 3];
    a0 = a->ndim > 3 ? a->stride[0] : 0;
  }
  if (b->ndim > 2) {
    b1 = b->stride[b->ndim - 3];
    b0 = b->ndim > 3 ? b->stride[0] : 0;
  }
  if (nb >= 1) o1 = out->stride[nb - 1];
  if (nb >= 2) o0 = out->stride[0];
  hl_gemm_desc d;
  memset(&d, 0, sizeof d);
  d.trans_a = la.trans;
  d.trans_b = lb.trans;
  d.m = m;
  d.n = n;
  d.k = k;
  d.batch = B1;
  d.a_type = d.b_type = d.c_type = out->dtype; /* mm takes float tensors only */
  d.compute = out->dtype == HL_F64 ? HL_COMPUTE_F64 : HL_COMPUTE_F32;
  d.alpha = 1.0f;
  d.beta = beta;
  d.lda = la.ld;
  d.ldb = lb.ld;
  d.ldc = n > 0 ? n : 1;
  d.stride_a = a1;
  d.stride_b = b1;
  d.stride_c = o1;
  d.a_scale = d.b_scale = 1.0f;
  d.a_as_before = a_as_before;
  if (bias) {
    d.bias = hl_tensor_data(bias);
    d.bias_type = bias->dtype;
  }
  char why[256];
  if (!gk->supports(&d, why, sizeof why)) return hl_fail_bool("%s: GEMM %s x %s not supported: %s", c->op->name,
                                                              hl_desc(a), hl_desc(b), why);
  /* nothing to compute for an empty output: an empty batch with non-empty
   * matrices must not reach the GEMM, which would write into the output's
   * zero bytes (both backends count batch < 1 as 1) */
  if (m == 0 || n == 0 || B0 == 0 || B1 == 0) return true;
  if (k == 0) {
    /* an empty sum: C = beta C, without relying on the libraries' k = 0
     * handling. out is contiguous here (a fresh output or a view of one). */
    if (beta == 0.0f && !bias) c->k->fill(hl_tensor_data(out), out->dtype, hl_numel(out), 0.0);
    /* with a bias, C = the bias in every row: the backend's k = 0 case */
    for (int64_t i = 0; bias && i < B0; i++) {
      d.c = (char *)hl_tensor_data(out) + i * o0 * (int64_t)hl_dtype_size(out->dtype);
      gk->gemm(&d);
    }
    return true;
  }
  const int64_t es = (int64_t)hl_dtype_size(out->dtype);
  if (B0 > 1 && gk->outer_batch && !bias) {
    /* the outer dim too in one call, where the backend takes it */
    d.batch_outer = B0;
    d.outer_stride_a = a0, d.outer_stride_b = b0, d.outer_stride_c = o0;
    d.a = hl_tensor_data(a), d.b = hl_tensor_data(b), d.c = hl_tensor_data(out);
    gk->gemm(&d);
    return true;
  }
  for (int64_t i = 0; i < B0; i++) {
    d.a = (const char *)hl_tensor_data(a) + i * a0 * es;
    d.b = (const char *)hl_tensor_data(b) + i * b0 * es;
    d.c = (char *)hl_tensor_data(out) + i * o0 * es;
    gk->gemm(&d);
  }
  return true;
}

/* ------------------------------------------------------------ backward -- */

static hl_tensor *t_last2(hl_tensor *x) { return hl_tmp(hl_transpose(x, -1, -2)); }

/* The forward's own op again (mm's backward runs mm: the trace reads as
 * PyTorch's AMP notes explain it). */
static hl_tensor *same_product(const hl_node *n, hl_tensor *a, hl_tensor *b) {
  switch (n->op->id) {
    case HL_OP_MM: return hl_mm(a, b);
    case HL_OP_BMM: return hl_bmm(a, b);
    default: return hl_matmul(a, b);
  }
}

/* mm, bmm and matmul with equal batch dims: dA = g B^T, dB = A^T g */
static bool matmul_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  if (hl_node_wants(n, 0)) {
    hl_tensor *b = hl_tmp(hl_node_saved(n, n->params.matmul.b_slot));
    gin[0] = same_product(n, g, t_last2(b));
    if (!gin[0]) return false;
  }
  if (hl_node_wants(n, 1)) {
    hl_tensor *a = hl_tmp(hl_node_saved(n, n->params.matmul.a_slot));
    if (n->params.matmul.b_shared && a) {
      /* b was used by every batch entry: its gradient sums over them */
      int64_t k = a->shape[a->ndim - 1], cols = g->shape[g->ndim - 1];
      hl_tensor *af = hl_tmp(hl_reshape(a, HL_SHAPE(-1, k))), *gf = hl_tmp(hl_reshape(g, HL_SHAPE(-1, cols)));
      gin[1] = hl_mm(t_last2(af), gf);
    } else {
      gin[1] = same_product(n, t_last2(a), g);
    }
    if (!gin[1]) return false;
  }
  return true;
}

/* ------------------------------------------------------- mm, bmm, matmul -- */

/* a_as_before: see gemm_run (false from every public entry) */
static hl_tensor *product(hl_op_id id, hl_tensor *a, hl_tensor *b, bool a_as_before) {
  hl_op_call c;
  if (!hl_op_begin(&c, id, HL_INPUTS(a, b), HL_ROLES(HL_ARG_DATA, HL_ARG_DATA), 2)) return NULL;
  a = c.in[0];
  b = c.in[1];
  const char *name = c.op->name;
  bool ok;
  switch (id) {
    case HL_OP_MM: ok = a->ndim == 2 && b->ndim == 2; break;
    case HL_OP_BMM: ok = a->ndim == 3 && b->ndim == 3 && a->shape[0] == b->shape[0]; break;
    default: /* matmul */
      ok = a->ndim >= 2 && b->ndim >= 2 && (b->ndim == 2 || b->ndim == a->ndim);
      for (int i = 0; ok && b->ndim > 2 && i < a->ndim - 2; i++) ok = a->shape[i] == b->shape[i];
      break;
  }
  if (!ok || a->shape[a->ndim - 1] != b->shape[b->ndim - 2]) {
    hl_fail("%s: shape mismatch: %s x %s", name, hl_desc(a), hl_desc(b));
    return hl_op_abort(&c);
  }
  if (!gemm_ready(&c, 0) || !gemm_ready(&c, 1)) return hl_op_abort(&c);
  a = c.in[0];
  b = c.in[1];
  int64_t shape[HL_MAX_DIMS];
  memcpy(shape, a->shape, sizeof shape);
  shape[a->ndim - 1] = b->shape[b->ndim - 1];
  hl_tensor *out = hl_op_output(&c, a->ndim, shape, c.dtype);
  if (!out) return hl_op_abort(&c);
  if (!gemm_run(&c, a, b, out, 0.0f, NULL, a_as_before)) return hl_op_abort_output(&c, out);
  hl_node *node;
  if (!hl_record(&c, out, matmul_backward, &node)) return hl_op_abort_output(&c, out);
  if (node) {
    node->params.matmul.a_slot = node->params.matmul.b_slot = -1;
    node->params.matmul.b_shared = b->ndim == 2 && a->ndim > 2;
    if (b->requires_grad) node->params.matmul.a_slot = hl_node_save(node, a);
    if (a->requires_grad) node->params.matmul.b_slot = hl_node_save(node, b);
    if ((b->requires_grad && node->params.matmul.a_slot < 0) || (a->requires_grad && node->params.matmul.b_slot < 0)) {
      return hl_op_abort_output(&c, out);
    }
  }
  return hl_op_end(&c, out);
}

hl_tensor *hl_mm(hl_tensor *a, hl_tensor *b) { return product(HL_OP_MM, a, b, false); }
hl_tensor *hl_bmm(hl_tensor *a, hl_tensor *b) { return product(HL_OP_BMM, a, b, false); }
hl_tensor *hl_matmul(hl_tensor *a, hl_tensor *b) { return product(HL_OP_MATMUL, a, b, false); }

/* ---------------------------------------------------------------- linear -- */

static bool linear_backward(hl_node *n, hl_tensor *g, hl_tensor **gin) {
  if (hl_node_wants(n, 0)) {
    /* [M, out] x [out, in], viewed back as x's shape (x may be 1-D) */
    hl_tensor *w = hl_tmp(hl_node_saved(n, n->params.linear.weight_slot));
    hl_tensor *gf = hl_tmp(hl_reshape(g, HL_SHAPE(-1, n->in_meta[1].shape[0])));
    gin[0] = hl_reshape(hl_tmp(hl_mm(gf, w)), hl_shape_of(n->in_meta[0].ndim, n->in_meta[0].shape));
    if (!gin[0]) return false;
  }
  if (hl_node_wants(n, 1)) {
    hl_tensor *x = hl_tmp(hl_node_saved(n, n->params.linear.x_slot));
    int64_t in = n->in_meta[1].shape[1], out = n->in_meta[1].shape[0];
    hl_tensor *gf = hl_tmp(hl_reshape(g, HL_SHAPE(-1, out))), *xf = hl_tmp(hl_reshape(x, HL_SHAPE(-1, in)));
    hl_tensor *gt = t_last2(gf);
    /* the same stored gradient as dX's product just before: a CPU widening
     * half operands keeps its fp32 copy (the kernel checks pointer and layout) */
    gin[1] = product(HL_OP_MM, gt, xf, gin[0] != NULL && gt != NULL); /* [out, M] x [M, in]: hl_mm */
    if (!gin[1]) return false;
  }
  if (hl_node_wants(n, 2)) {
    gin[2] = hl_sum_to(g, hl_shape_of(1, n->in_meta[2].shape));
    if (!gin[2]) return false;
  }
  return true;
}

hl_tensor *hl_linear(hl_tensor *x, hl_tensor *w, hl_tensor *bias) {
  hl_op_call c;
  if (!hl_op_begin(&c, HL_OP_LINEAR, HL_INPUTS(x, w, bias),
                   HL_ROLES(HL_ARG_DATA, HL_ARG_DATA, HL_ARG_DATA | HL_ARG_OPTIONAL), 3))
    return NULL;
  x = c.in[0];
  w = c.in[1];
  bias = c.in[2];
  if (x->ndim < 1 || w->ndim != 2 || x->shape[x->ndim - 1] != w->shape[1] ||
      (bias && (bias->ndim != 1 || bias->shape[0] != w->shape[0]))) {
    hl_fail("linear: shape mismatch: x %s, weight %s, bias %s (need x [..., in], weight [out, in], bias [out])",
            hl_desc(x), hl_desc(w), bias ? hl_desc(bias) : "none");
    return hl_op_abort(&c);
  }
  /* x is flattened to [M, in]: its leading dims must merge */
  if (!hl_op_contiguous_input(&c, 0) || !gemm_ready(&c, 1)) return hl_op_abort(&c);
  x = c.in[0];
  w = c.in[1];
  /* rows: the product of x's leading dims (not numel / in, which is 0 / 0 when in == 0) */
  int64_t rows = 1;
  for (int i = 0; i < x->ndim - 1; i++) rows *= x->shape[i];
  const int64_t in = w->shape[1], nout = w->shape[0];
  int64_t shape[HL_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  shape[x->ndim - 1] = nout;
  hl_tensor *out = hl_op_output(&c, x->ndim, shape, c.dtype);
  if (!out) return hl_op_abort(&c);
  /* A backend that takes a row bias gets it with the product (the CPU's
   * widening path then adds it in its fp32 copy of C); otherwise out = bias
   * in every row, and the GEMM accumulates onto it */
  const bool bias_in_gemm = bias && c.backend->gemm && c.backend->gemm->row_bias && bias->stride[0] == 1;
  if (bias && !bias_in_gemm) {
    int64_t size4[HL_MAX_DIMS] = {1, 1, rows, nout};
    hl_kview d = {hl_tensor_data(out), out->dtype, {0, 0, nout, 1}};
    hl_kview s = {hl_tensor_data(bias), bias->dtype, {0, 0, 0, bias->stride[0]}};
    c.k->copy(&d, &s, size4);
  }
  /* 2-D views of x [rows, in], W^T [in, out] and out [rows, out] */
  hl_tensor *x2 = hl_tensor_view_of(x, 2, (int64_t[]){rows, in}, (int64_t[]){in > 0 ? in : 1, 1}, x->offset);
  hl_tensor *wt = hl_tensor_view_of(w, 2, (int64_t[]){in, nout}, (int64_t[]){w->stride[1], w->stride[0]}, w->offset);
  hl_tensor *o2 = hl_tensor_view_of(out, 2, (int64_t[]){rows, nout}, (int64_t[]){nout, 1}, 0);
  bool ran = x2 && wt && o2 &&
             gemm_run(&c, x2, wt, o2, bias && !bias_in_gemm ? 1.0f : 0.0f, bias_in_gemm ? bias : NULL, false);
  hl_release(x2);
  hl_release(wt);
  hl_release(o2);
  hl_node *node = NULL;
  if (!ran || !hl_record(&c, out, linear_backward, &node)) return hl_op_abort_output(&c, out);
  if (node) {
    node->params.linear.x_slot = node->params.linear.weight_slot = -1;
    if (w->requires_grad) node->params.linear.x_slot = hl_node_save(node, x);
    if (x->requires_grad) node->params.linear.weight_slot = hl_node_save(node, w);
    if ((w->requires_grad && node->params.linear.x_slot < 0) ||
        (x->requires_grad && node->params.linear.weight_slot < 0)) {
      return hl_op_abort_output(&c, out);
    }
  }
  return hl_op_end(&c, out);
}
