/* registry.h — every op of the AMP core in one table: name, autocast
 * policy, type promotion, which dtypes each backend has kernels for, and
 * how often it can be differentiated.
 *
 * The dispatcher (core/engine/dispatch.c) refuses what the table does not list,
 * and docs/ops.md is generated from it (hl_ops_write_markdown; the unit
 * test ops-doc fails when the file is out of date), so what is supported
 * is never guessed. A backend fills every entry of the tensor table
 * (kernels/tensor_kernels.h) or none, so one dtype mask per op holds for
 * every backend that has the table; the docs show it under each backend of
 * kernels/meson.build's list (regenerate them when the list changes:
 * ninja -C build ops-doc).
 */
#ifndef HL_REGISTRY_H
#define HL_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/backend.h"
#include "kernels/tensor_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an enabled autocast region does to an op's eligible inputs (float,
 * not f64, on the region's device); docs/core.md, Autocast, lists the ops. */
typedef enum {
  HL_POLICY_NONE = 0, /* unlisted: runs in its input types (ordinary promotion where the op promotes) */
  HL_POLICY_LOWER,    /* cast to the region's lower-precision dtype (fp16 / bf16) */
  HL_POLICY_FP32,     /* cast to f32; the result is f32 */
  HL_POLICY_PROMOTE,  /* cast to the widest float input type */
} hl_autocast_policy;

/* How many times an op can be differentiated (its backward is made of ops
 * that are themselves differentiable, or not). */
typedef enum {
  HL_DIFF_NONE = 0, /* no backward (integer results, internal fused backward kernels) */
  HL_DIFF_ONCE,     /* backward exists; differentiating that backward is refused */
  HL_DIFF_TWICE,    /* backward is differentiable again (create_graph, gradient penalties) */
} hl_diff;

typedef enum {
  /* conversions and views */
  HL_OP_TO_DTYPE = 0,
  HL_OP_TO_DEVICE,
  HL_OP_CONTIGUOUS,
  HL_OP_RESHAPE,
  HL_OP_TRANSPOSE,
  HL_OP_PERMUTE,
  HL_OP_SLICE,
  HL_OP_SLICE_BACKWARD,
  HL_OP_EXPAND,
  HL_OP_CAT,
  /* element-wise */
  HL_OP_ADD,
  HL_OP_SUB,
  HL_OP_MUL,
  HL_OP_DIV,
  HL_OP_NEG,
  HL_OP_ADD_SCALAR,
  HL_OP_MUL_SCALAR,
  HL_OP_DIV_SCALAR,
  HL_OP_RSUB_SCALAR,
  HL_OP_RDIV_SCALAR,
  HL_OP_RELU,
  HL_OP_RELU_BACKWARD,
  HL_OP_GELU,
  HL_OP_GELU_BACKWARD,
  HL_OP_GELU_GRAD2,
  HL_OP_EXP,
  HL_OP_LOG,
  HL_OP_POW,
  HL_OP_SQRT,
  HL_OP_CAUSAL_MASK,
  /* reductions */
  HL_OP_SUM,
  HL_OP_MEAN,
  HL_OP_SUM_TO,
  /* matrix products */
  HL_OP_MM,
  HL_OP_BMM,
  HL_OP_MATMUL,
  HL_OP_LINEAR,
  /* neural-network ops */
  HL_OP_SOFTMAX,
  HL_OP_SOFTMAX_BACKWARD,
  HL_OP_LOG_SOFTMAX,
  HL_OP_LOG_SOFTMAX_BACKWARD,
  HL_OP_CROSS_ENTROPY,
  HL_OP_CROSS_ENTROPY_BACKWARD,
  HL_OP_ONE_HOT,
  HL_OP_MSE_LOSS,
  HL_OP_LAYER_NORM,
  HL_OP_LAYER_NORM_BACKWARD,
  HL_OP_EMBEDDING,
  HL_OP_EMBEDDING_BACKWARD,
  /* user-defined (custom_op.h) */
  HL_OP_CUSTOM,
  HL_OPS
} hl_op_id;

/* Bit masks of dtypes. */
#define HL_DT(t) (1u << (t))
#define HL_DT_FLOAT (HL_DT(HL_F64) | HL_DT(HL_F32) | HL_DT(HL_F16) | HL_DT(HL_BF16))
#define HL_DT_ALL (HL_DT_FLOAT | HL_DT(HL_I32) | HL_DT(HL_I8))

typedef struct hl_op_desc {
  hl_op_id id;
  const char *name;
  const char *group;    /* docs section */
  hl_autocast_policy policy;
  bool promotes;        /* f16 + f32 -> f32 outside autocast (else mixed float dtypes are refused) */
  bool no_kernels;      /* runs no tensor kernel (views, device copies): every dtype, every backend */
  bool internal;        /* made by backward functions, not called by programs */
  hl_diff diff;
  uint32_t dtypes;      /* compute dtypes with kernels, on every backend that has a tensor table */
  const char *summary;  /* one line for the docs */
} hl_op_desc;

const hl_op_desc *hl_op_get(hl_op_id id);
/* NULL if no op has that name. */
const hl_op_desc *hl_op_find(const char *name);

const char *hl_policy_name(hl_autocast_policy p);

/* Can `op` run in dtype t on device? If not, why (one line). Checks the
 * table and that the backend has a tensor-kernel table at all. t ==
 * HL_DTYPE_NONE checks only the backend (ops without float inputs). */
bool hl_op_supported(const hl_op_desc *op, hl_device_kind device, hl_dtype t, char *why, size_t len);

/* docs/ops.md, byte for byte. */
void hl_ops_write_markdown(FILE *out);

#ifdef __cplusplus
}
#endif

#endif
