/* registry.c — the op table (see registry.h) and docs/ops.md from it. */
#include "core/engine/registry.h"

#include <stdio.h>
#include <string.h>

#include "core/base/device.h"

/* The dtypes each op has kernels for, on every backend with a tensor table
 * (registry.h: a backend fills every entry) */
#define FLOATS HL_DT_FLOAT
#define ALL_TYPES HL_DT_ALL
#define EVERYWHERE HL_DT_ALL

#define OP(ID, NAME, GROUP, POLICY, PROMOTES, NOKERNELS, INTERNAL, DIFF, DTYPES, SUMMARY) \
  [ID] = {ID, NAME, GROUP, POLICY, PROMOTES, NOKERNELS, INTERNAL, DIFF, DTYPES, SUMMARY}

static const char G_VIEW[] = "Conversions, views and joins";
static const char G_EW[] = "Element-wise";
static const char G_RED[] = "Reductions";
static const char G_MM[] = "Matrix products";
static const char G_NN[] = "Neural-network ops and losses";
static const char G_INT[] = "Internal ops (made by backward functions)";

static const hl_op_desc ops_[HL_OPS] = {
    OP(HL_OP_TO_DTYPE, "to", G_VIEW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, ALL_TYPES,
       "dtype conversion, rounded once (float to int: nearest even, saturated); autocast's casts are this op"),
    OP(HL_OP_TO_DEVICE, "to_device", G_VIEW, HL_POLICY_NONE, false, true, false, HL_DIFF_TWICE, EVERYWHERE,
       "copy to another device (through the host)"),
    OP(HL_OP_CONTIGUOUS, "contiguous", G_VIEW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, ALL_TYPES,
       "row-major copy of a strided view"),
    OP(HL_OP_RESHAPE, "reshape", G_VIEW, HL_POLICY_NONE, false, true, false, HL_DIFF_TWICE, EVERYWHERE,
       "view with a new shape (copies through contiguous when the strides do not allow a view)"),
    OP(HL_OP_TRANSPOSE, "transpose", G_VIEW, HL_POLICY_NONE, false, true, false, HL_DIFF_TWICE, EVERYWHERE,
       "view with two dims swapped"),
    OP(HL_OP_PERMUTE, "permute", G_VIEW, HL_POLICY_NONE, false, true, false, HL_DIFF_TWICE, EVERYWHERE,
       "view with dims reordered"),
    OP(HL_OP_SLICE, "slice", G_VIEW, HL_POLICY_NONE, false, true, false, HL_DIFF_TWICE, EVERYWHERE,
       "view of [start, end) along one dim (split heads, split qkv)"),
    OP(HL_OP_EXPAND, "expand", G_VIEW, HL_POLICY_NONE, false, true, false, HL_DIFF_TWICE, EVERYWHERE,
       "broadcast view (stride 0)"),
    OP(HL_OP_CAT, "cat", G_VIEW, HL_POLICY_PROMOTE, true, false, false, HL_DIFF_TWICE, ALL_TYPES,
       "concatenation along one dim"),
    OP(HL_OP_ADD, "add", G_EW, HL_POLICY_NONE, true, false, false, HL_DIFF_TWICE, FLOATS, "a + b, broadcasting"),
    OP(HL_OP_SUB, "sub", G_EW, HL_POLICY_NONE, true, false, false, HL_DIFF_TWICE, FLOATS, "a - b, broadcasting"),
    OP(HL_OP_MUL, "mul", G_EW, HL_POLICY_NONE, true, false, false, HL_DIFF_TWICE, FLOATS, "a * b, broadcasting"),
    OP(HL_OP_DIV, "div", G_EW, HL_POLICY_NONE, true, false, false, HL_DIFF_TWICE, FLOATS, "a / b, broadcasting"),
    OP(HL_OP_NEG, "neg", G_EW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS, "-x"),
    OP(HL_OP_ADD_SCALAR, "add_scalar", G_EW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS,
       "x + s (sub_scalar is x + (-s))"),
    OP(HL_OP_MUL_SCALAR, "mul_scalar", G_EW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS, "x * s"),
    OP(HL_OP_DIV_SCALAR, "div_scalar", G_EW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS, "x / s"),
    OP(HL_OP_RSUB_SCALAR, "rsub_scalar", G_EW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS, "s - x"),
    OP(HL_OP_RDIV_SCALAR, "rdiv_scalar", G_EW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS, "s / x"),
    OP(HL_OP_RELU, "relu", G_EW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS, "max(x, 0)"),
    OP(HL_OP_GELU, "gelu", G_EW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS,
       "GELU, tanh form (computed as x * sigmoid(2u))"),
    OP(HL_OP_EXP, "exp", G_EW, HL_POLICY_FP32, false, false, false, HL_DIFF_TWICE, FLOATS, "e^x"),
    OP(HL_OP_LOG, "log", G_EW, HL_POLICY_FP32, false, false, false, HL_DIFF_TWICE, FLOATS, "ln x"),
    OP(HL_OP_POW, "pow", G_EW, HL_POLICY_FP32, false, false, false, HL_DIFF_TWICE, FLOATS,
       "x^p, scalar exponent"),
    OP(HL_OP_SQRT, "sqrt", G_EW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS, "square root"),
    OP(HL_OP_CAUSAL_MASK, "causal_mask", G_EW, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS,
       "fill above the diagonal of the last two dims (attention scores) with a value"),
    OP(HL_OP_SUM, "sum", G_RED, HL_POLICY_FP32, false, false, false, HL_DIFF_TWICE, FLOATS,
       "sum of all elements or along one dim (accumulated in f32, f64 for f64)"),
    OP(HL_OP_MEAN, "mean", G_RED, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS,
       "mean of all elements or along one dim; input dtype, accumulated in f32"),
    OP(HL_OP_MM, "mm", G_MM, HL_POLICY_LOWER, false, false, false, HL_DIFF_TWICE, FLOATS,
       "[m,k] x [k,n] (fp16/bf16 accumulate in f32)"),
    OP(HL_OP_BMM, "bmm", G_MM, HL_POLICY_LOWER, false, false, false, HL_DIFF_TWICE, FLOATS,
       "[b,m,k] x [b,k,n]"),
    OP(HL_OP_MATMUL, "matmul", G_MM, HL_POLICY_LOWER, false, false, false, HL_DIFF_TWICE, FLOATS,
       "[...,m,k] x [...,k,n] or [k,n]; batch dims equal"),
    OP(HL_OP_LINEAR, "linear", G_MM, HL_POLICY_LOWER, false, false, false, HL_DIFF_TWICE, FLOATS,
       "x W^T + b, x [...,in], W [out,in], b [out] optional"),
    OP(HL_OP_SOFTMAX, "softmax", G_NN, HL_POLICY_FP32, false, false, false, HL_DIFF_TWICE, FLOATS,
       "softmax over the last dim (fused)"),
    OP(HL_OP_LOG_SOFTMAX, "log_softmax", G_NN, HL_POLICY_FP32, false, false, false, HL_DIFF_TWICE, FLOATS,
       "log-softmax over the last dim (fused)"),
    OP(HL_OP_CROSS_ENTROPY, "cross_entropy", G_NN, HL_POLICY_FP32, false, false, false, HL_DIFF_TWICE, FLOATS,
       "mean cross-entropy of logits [n,c] and i32 targets [n] (fused)"),
    OP(HL_OP_MSE_LOSS, "mse_loss", G_NN, HL_POLICY_FP32, false, false, false, HL_DIFF_TWICE, FLOATS,
       "mean squared error (made of sub, mul, mean)"),
    OP(HL_OP_LAYER_NORM, "layer_norm", G_NN, HL_POLICY_FP32, false, false, false, HL_DIFF_ONCE, FLOATS,
       "over the last dim, optional weight and bias (fused)"),
    OP(HL_OP_EMBEDDING, "embedding", G_NN, HL_POLICY_NONE, false, false, false, HL_DIFF_TWICE, FLOATS,
       "rows of a weight [vocab,dim] by i32 indices"),
    OP(HL_OP_SLICE_BACKWARD, "slice_backward", G_INT, HL_POLICY_NONE, false, false, true, HL_DIFF_TWICE, ALL_TYPES,
       "zeros with the gradient of a slice placed in it"),
    OP(HL_OP_SUM_TO, "sum_to", G_INT, HL_POLICY_NONE, false, false, true, HL_DIFF_TWICE, FLOATS,
       "sum over broadcast dims (backward of broadcasting)"),
    OP(HL_OP_RELU_BACKWARD, "relu_backward", G_INT, HL_POLICY_NONE, false, false, true, HL_DIFF_TWICE, FLOATS,
       "dy * (x > 0)"),
    OP(HL_OP_GELU_BACKWARD, "gelu_backward", G_INT, HL_POLICY_NONE, false, false, true, HL_DIFF_ONCE, FLOATS,
       "dy * gelu'(x)"),
    OP(HL_OP_GELU_GRAD2, "gelu_grad2", G_INT, HL_POLICY_NONE, false, false, true, HL_DIFF_NONE, FLOATS,
       "gelu''(x)"),
    OP(HL_OP_SOFTMAX_BACKWARD, "softmax_backward", G_INT, HL_POLICY_NONE, false, false, true, HL_DIFF_NONE,
       FLOATS, "fused y * (dy - sum(dy * y)); under create_graph the backward is built from ops instead"),
    OP(HL_OP_LOG_SOFTMAX_BACKWARD, "log_softmax_backward", G_INT, HL_POLICY_NONE, false, false, true, HL_DIFF_NONE,
       FLOATS, "fused dy - exp(y) * sum(dy); under create_graph built from ops instead"),
    OP(HL_OP_CROSS_ENTROPY_BACKWARD, "cross_entropy_backward", G_INT, HL_POLICY_NONE, false, false, true,
       HL_DIFF_NONE, FLOATS, "fused (softmax - onehot) * g / n; under create_graph built from ops instead"),
    OP(HL_OP_ONE_HOT, "one_hot", G_INT, HL_POLICY_NONE, false, false, true, HL_DIFF_NONE, FLOATS,
       "one-hot rows of i32 targets"),
    OP(HL_OP_LAYER_NORM_BACKWARD, "layer_norm_backward", G_INT, HL_POLICY_NONE, false, false, true, HL_DIFF_NONE,
       FLOATS, "fused dx, dw, db"),
    OP(HL_OP_EMBEDDING_BACKWARD, "embedding_backward", G_INT, HL_POLICY_NONE, false, false, true, HL_DIFF_TWICE,
       FLOATS, "scatter-add of rows into a zero weight gradient"),
    OP(HL_OP_CUSTOM, "custom", G_INT, HL_POLICY_NONE, false, true, true, HL_DIFF_TWICE, EVERYWHERE,
       "a user-defined op (custom_op.h): its own forward and backward, optional input casts"),
};

const hl_op_desc *hl_op_get(hl_op_id id) { return (unsigned)id < HL_OPS ? &ops_[id] : NULL; }

const hl_op_desc *hl_op_find(const char *name) {
  for (int i = 0; i < HL_OPS; i++)
    if (ops_[i].name && !strcmp(ops_[i].name, name)) return &ops_[i];
  return NULL;
}

const char *hl_policy_name(hl_autocast_policy p) {
  switch (p) {
    case HL_POLICY_LOWER: return "lower precision";
    case HL_POLICY_FP32: return "fp32";
    case HL_POLICY_PROMOTE: return "promote";
    default: return "input types";
  }
}

static void mask_text(uint32_t mask, char *buf, size_t len) {
  size_t k = 0;
  buf[0] = '\0';
  for (int t = 0; t < HL_TENSOR_DTYPES; t++)
    if (mask & HL_DT(t)) k += (size_t)snprintf(buf + k, len - k, k ? " %s" : "%s", hl_dtype_name((hl_dtype)t));
  if (!k) snprintf(buf, len, "-");
}

bool hl_op_supported(const hl_op_desc *op, hl_device_kind device, hl_dtype t, char *why, size_t len) {
  const hl_backend *b = hl_backend_for(device);
  const char *dev = hl_device_kind_label(device);
  if (!b) {
    snprintf(why, len, "op %s: this build has no %s backend", op->name, dev);
    return false;
  }
  if (op->no_kernels) return true;
  if (!b->tensor) {
    snprintf(why, len, "op %s: no %s kernels in this build yet", op->name, dev);
    return false;
  }
  uint32_t mask = op->dtypes;
  if (!mask) {
    snprintf(why, len, "op %s: no %s kernel for this op yet", op->name, dev);
    return false;
  }
  if (t != HL_DTYPE_NONE && !(mask & HL_DT(t))) {
    char list[64];
    mask_text(mask, list, sizeof list);
    snprintf(why, len, "%s: dtype %s is not supported on %s (supported: %s)", op->name, hl_dtype_name(t),
             hl_device_kind_name(device), list);
    return false;
  }
  return true;
}

/* ---------------------------------------------------------------- docs -- */

/* One row: the same forward and backward dtypes under every backend in
 * HL_BACKEND_LIST, built here or not (the page is the same for every build). */
static void row(FILE *out, const hl_op_desc *op) {
  char fwd[64], bwd[64];
  uint32_t mask = op->dtypes;
  if (op->no_kernels && mask == HL_DT_ALL) {
    snprintf(fwd, sizeof fwd, "all (no kernel)");
  } else {
    mask_text(mask, fwd, sizeof fwd);
  }
  /* backward exists for the float dtypes of the forward, when the op is differentiable */
  uint32_t bmask = op->diff == HL_DIFF_NONE ? 0 : (mask & HL_DT_FLOAT);
  if (op->no_kernels && bmask == HL_DT_FLOAT) snprintf(bwd, sizeof bwd, "float (no kernel)");
  else mask_text(bmask, bwd, sizeof bwd);
  static const char *diff[] = {"-", "1st", "2nd"};
  fprintf(out, "| `%s` | %s%s |", op->name, hl_policy_name(op->policy), op->promotes ? ", promotes" : "");
  for (int d = 0; d < HL_DEVICE_KINDS; d++) fprintf(out, " %s | %s |", fwd, bwd);
  fprintf(out, " %s | %s |\n", diff[op->diff], op->summary);
}

void hl_ops_write_markdown(FILE *out) {
  fprintf(out,
          "# Ops of the AMP core\n\n"
          "Generated from the op registry (`core/engine/registry.c`) by `ninja -C build ops-doc`; do not edit by hand.\n"
          "The dispatcher consults the same table, so an op runs exactly where this page says it does.\n"
          "The unit test `ops-doc` fails when this file is out of date.\n\n"
          "Columns: the autocast policy inside an enabled region ([docs/core.md, Autocast](core.md#autocast):\n"
          "*lower precision* casts eligible inputs to the region's fp16/bf16, *fp32* to f32, *promote* to the\n"
          "widest input, *input types* leaves them; *promotes* means mixed float inputs are promoted outside\n"
          "autocast instead of refused); the dtypes with forward and backward kernels per backend; and how far\n"
          "the op can be differentiated (`1st`: backward only; `2nd`: its backward is differentiable again, e.g.\n"
          "for gradient penalties).\n");
  const char *groups[] = {"Conversions, views and joins", "Element-wise", "Reductions", "Matrix products",
                          "Neural-network ops and losses", "Internal ops (made by backward functions)"};
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    fprintf(out, "\n## %s\n\n", groups[g]);
    fprintf(out, "| op | autocast |");
    for (int d = 0; d < HL_DEVICE_KINDS; d++) {
      const char *name = hl_device_kind_name((hl_device_kind)d);
      fprintf(out, " %s forward | %s backward |", name, name);
    }
    fprintf(out, " grad | what |\n|---|---|");
    for (int d = 0; d < HL_DEVICE_KINDS; d++) fprintf(out, "---|---|");
    fprintf(out, "---|---|\n");
    for (int i = 0; i < HL_OPS; i++)
      if (!strcmp(ops_[i].group, groups[g])) row(out, &ops_[i]);
  }
}
