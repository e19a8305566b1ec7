/* weight_policy.h — how a model stores its parameters: every parameter in
 * fp32, fp16 or bf16, or LLM.int8-style (int8 projection weights with one
 * fp32 scale per output row, fp16 embeddings and biases, fp32 norms). */
#ifndef HL_WEIGHT_POLICY_H
#define HL_WEIGHT_POLICY_H

#include <stdbool.h>

#include "formats/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  HL_ROLE_EMBEDDING = 0, /* token / position embedding tables */
  HL_ROLE_WEIGHT,        /* a projection weight: attention, MLP, a Linear layer */
  HL_ROLE_BIAS,          /* a projection's bias */
  HL_ROLE_NORM,          /* layer-norm weight or bias */
  HL_ROLES
} hl_param_role;

typedef enum { HL_WEIGHTS_FP32 = 0, HL_WEIGHTS_FP16, HL_WEIGHTS_BF16, HL_WEIGHTS_INT8, HL_WEIGHT_POLICIES } hl_weight_policy;

const char *hl_weight_policy_name(hl_weight_policy policy); /* "fp32", "fp16", "bf16", "int8" */
/* false when s names no policy */
bool hl_weight_policy_parse(const char *s, hl_weight_policy *out);
/* The storage dtype of a parameter with this role under the policy (int8:
 * HL_I8 for weights, HL_F16 for biases and embeddings, HL_F32 for norms). */
hl_dtype hl_weight_policy_dtype(hl_weight_policy policy, hl_param_role role);

#ifdef __cplusplus
}
#endif

#endif
