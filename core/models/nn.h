/* nn.h — layers and models on the AMP core, with named parameters: what the
 * training runs (halflab-train) and the footprint benchmark (halflab-bench
 * footprint) share.
 *
 *   hl_gpt *m = hl_gpt_new(&HL_GPT2_124M, HL_WEIGHTS_FP32, HL_DEVICE_CPU, seed);
 *   for (int i = 0; i < m->params.n; i++)              // optimizers, checkpoints, listings
 *     printf("%s %s\n", m->params.items[i].name, hl_desc(m->params.items[i].tensor));
 *   HL_AUTOCAST(HL_DEVICE_CPU, HL_BF16, true) {
 *     loss = hl_gpt_loss(m, idx, targets, NULL);       // mean cross-entropy over B*T tokens
 *   }
 *   hl_backward(loss, NULL, false);
 *   hl_gpt_free(m);
 *
 * Models:
 *   - MLP classifier: fc1 .. fcN (Linear + bias), ReLU or GELU between them.
 *   - GPT in GPT-2's layout, with HuggingFace GPT-2's parameter names:
 *     transformer.wte.weight, transformer.wpe.weight, then per block i
 *     transformer.h.i.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc,
 *     mlp.c_proj}.{weight, bias}, and transformer.ln_f.{weight, bias}; the
 *     output head is tied to transformer.wte.weight (no lm_head entry, as in
 *     HF's named_parameters()). Projection weights are [out, in] (nn.Linear,
 *     and HF's int8 model; HF's fp32 Conv1D stores the transpose).
 *
 * Weight dtype policies (storage of the parameters): fp32, fp16, bf16 and
 * int8 — LLM.int8-style loading (docs/models.md): the projection weights of
 * every block int8 with one fp32 scale per output row, their biases fp16,
 * layer norms fp32, embeddings fp16. int8 is storage for inference: its
 * parameters do not require grad, and the forward dequantises on the fly
 * (the int8 values, exact in fp16/bf16, go through the matrix product in
 * the autocast dtype; the product is then scaled per output by the row
 * scales). An fp16 model with fp32 master weights is the fp16 policy; the
 * master copy belongs to the optimizer.
 *
 * The forward passes are made of the core's differentiable ops and work
 * with or without autocast (the ops pick the dtypes); an int8 model needs
 * an enabled autocast region (its dtypes are mixed by design).
 *
 * Errors: NULL / false with hl_error() naming the model, parameter or file.
 */
#ifndef HL_NN_H
#define HL_NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/engine/tensor.h"
#include "core/models/training_modes.h"
#include "core/models/weight_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------- parameters -- */

typedef enum { HL_INIT_NORMAL = 0, HL_INIT_UNIFORM, HL_INIT_CONST } hl_init_kind;

/* How init draws a parameter: normal(a, b) with b the std, uniform [a, b),
 * or the constant a. */
typedef struct {
  hl_init_kind kind;
  double a, b;
} hl_init_spec;

typedef struct {
  char *name;         /* "transformer.h.0.attn.c_attn.weight" */
  hl_tensor *tensor;  /* the parameter (owned); its dtype follows the policy */
  hl_tensor *scale;   /* int8 weights: fp32 [rows], one scale per output row (owned); else NULL */
  hl_param_role role;
  int block;          /* transformer block, -1 outside the blocks */
  hl_init_spec init;
} hl_param;

/* The parameters of a model in a fixed order (the order of HF's
 * named_parameters() for the GPT). The Philox stream of parameter i is i. */
typedef struct {
  hl_param *items;
  int n, cap;
  hl_weight_policy policy;
  hl_device_kind device;
} hl_param_list;

hl_param *hl_params_find(const hl_param_list *l, const char *name); /* NULL when absent */
/* Elements of the named parameters (int8 scales not counted). */
int64_t hl_params_numel(const hl_param_list *l);
/* Storage bytes: every parameter plus the int8 row scales. */
uint64_t hl_params_bytes(const hl_param_list *l);
uint64_t hl_param_bytes(const hl_param *p); /* this one's tensor + scale */

/* Draws every parameter again from its init spec under `seed`: values are
 * generated in fp32 by Philox4x32-10 (stream = parameter index) and
 * rounded once to the storage dtype, so the fp16 / bf16 weights are the
 * fp32 weights rounded, and the int8 weights their row-wise quantisation. */
bool hl_params_init(hl_param_list *l, uint64_t seed);

/* Sets every gradient to none (the next backward stores a fresh one). */
void hl_params_zero_grad(hl_param_list *l);

/* The parameters that require grad, in order, into out (room for l->n;
 * borrowed): what hl_sgd_new / hl_adamw_new (core/training/optim.h) take. Returns
 * how many (0 for an int8 model). */
int hl_params_trainable(const hl_param_list *l, hl_tensor **out);

/* Weight files (docs/models.md), all little-endian:
 *   "HLWTS001"                      8 bytes magic and format version
 *   u32 count                       number of tensors
 *   count times:
 *     u32 name_len, name bytes      UTF-8, no terminator
 *     u32 ndim, ndim x i64 dims
 *     numel x f32                   row-major values
 *   u32 crc32 of everything before it (zlib's CRC-32)
 * Saving writes every parameter as f32 (int8 weights dequantised: q x scale)
 * to PATH.tmp, then renames. Loading needs exactly the model's names and
 * shapes (any order), converts to the storage dtype (rounded once; int8
 * requantised per row) and refuses a truncated, corrupt, extra or missing
 * entry before changing any parameter. */
bool hl_params_save(const hl_param_list *l, const char *path);
bool hl_params_load(hl_param_list *l, const char *path);

/* int8 row-wise quantisation (LLM.int8's vector-wise form, absmax):
 * scale_r = max_j |w_rj| / 127, q_rj = round-half-even(w_rj / scale_r) in
 * [-127, 127]; a zero row has scale 0. Dequantised: q_rj * scale_r. */
void hl_quantize_rows_int8(const float *w, int64_t rows, int64_t cols, int8_t *q, float *scale);

/* -------------------------------------------------------------- layers -- */
/* Layers borrow their tensors from the model's parameter list. */

typedef struct {
  hl_tensor *weight; /* [out, in] */
  hl_tensor *bias;   /* [out] or NULL */
  hl_tensor *scale;  /* int8 weights: [out] fp32; else NULL */
} hl_linear_layer;

typedef struct {
  hl_tensor *weight, *bias; /* [C] */
  double eps;
} hl_layer_norm_layer;

/* x [..., in] -> [..., out]. int8 weights: needs autocast (see above). */
hl_tensor *hl_linear_forward(const hl_linear_layer *l, hl_tensor *x);
hl_tensor *hl_layer_norm_forward(const hl_layer_norm_layer *l, hl_tensor *x);

/* ----------------------------------------------------------------- MLP -- */

#define HL_MLP_MAX_HIDDEN 8

typedef enum { HL_ACT_RELU = 0, HL_ACT_GELU } hl_activation;

typedef struct {
  int n_in, n_out;
  int n_hidden;                   /* hidden layers, 0 .. HL_MLP_MAX_HIDDEN */
  int hidden[HL_MLP_MAX_HIDDEN];  /* their widths */
  hl_activation act;
  /* init: PyTorch's nn.Linear default, uniform(+-gain/sqrt(fan_in)) for
   * weights and biases; gain 1 unless set (0 means 1) */
  double init_gain;
} hl_mlp_config;

typedef struct {
  hl_mlp_config cfg;
  hl_param_list params; /* fc1.weight, fc1.bias, ..., fcN.bias */
  int n_layers;         /* n_hidden + 1 */
  hl_linear_layer fc[HL_MLP_MAX_HIDDEN + 1];
} hl_mlp;

bool hl_mlp_config_check(const hl_mlp_config *c, char *why, size_t len);
int64_t hl_mlp_param_count(const hl_mlp_config *c);
hl_mlp *hl_mlp_new(const hl_mlp_config *c, hl_weight_policy policy, hl_device_kind device, uint64_t seed);
void hl_mlp_free(hl_mlp *m);
/* x [N, n_in] -> logits [N, n_out] */
hl_tensor *hl_mlp_forward(hl_mlp *m, hl_tensor *x);
/* mean cross-entropy against i32 targets [N]; *logits (if asked) gets them */
hl_tensor *hl_mlp_loss(hl_mlp *m, hl_tensor *x, hl_tensor *targets, hl_tensor **logits);

/* ----------------------------------------------------------------- GPT -- */

typedef struct {
  int n_layer, n_head, n_embd, vocab_size, block_size;
  double init_std; /* normal(0, init_std) for weights and embeddings; 0 means 0.02 */
  double ln_eps;   /* 0 means 1e-5 */
} hl_gpt_config;

/* GPT-2 small: 124,439,808 parameters with the tied head. */
#define HL_GPT2_124M ((hl_gpt_config){.n_layer = 12, .n_head = 12, .n_embd = 768, .vocab_size = 50257, .block_size = 1024})

typedef struct {
  hl_layer_norm_layer ln_1;
  hl_linear_layer c_attn;    /* attn.c_attn: fused q, k, v: [3C, C] */
  hl_linear_layer attn_proj; /* attn.c_proj: [C, C], a residual projection */
  hl_layer_norm_layer ln_2;
  hl_linear_layer c_fc;     /* mlp.c_fc: [4C, C] */
  hl_linear_layer mlp_proj; /* mlp.c_proj: [C, 4C], a residual projection */
} hl_gpt_block;

/* Called by the forward with the input of each linear layer (borrowed: retain
 * it to keep it) and its name: the layer's parameter prefix and ".input",
 * e.g. "transformer.h.0.attn.c_attn.input"; the tied head's is
 * "lm_head.input". What halflab-train --dump-activations records. */
typedef void (*hl_activation_tap)(void *ctx, const char *name, hl_tensor *x);

typedef struct {
  hl_gpt_config cfg;
  hl_param_list params;
  hl_tensor *wte; /* [vocab, C], also the output head */
  hl_tensor *wpe; /* [block, C] */
  hl_gpt_block *h;
  hl_layer_norm_layer ln_f;
  hl_activation_tap tap; /* NULL (hl_gpt_new's) unless someone records the linear inputs */
  void *tap_ctx;
} hl_gpt;

/* false with a reason: non-positive sizes, heads not dividing the width */
bool hl_gpt_config_check(const hl_gpt_config *c, char *why, size_t len);

/* A parameter as the model declares it, before anything is allocated. */
typedef struct {
  char name[64];
  hl_shape shape;
  hl_param_role role;
  int block;
  hl_init_spec init;
} hl_param_spec;

/* The GPT's parameters in order (what hl_gpt_new builds): fills out (may
 * be NULL) and returns the count, 2 + 12 n_layer + 2. A listing needs no
 * allocation: each one's dtype is hl_weight_policy_dtype(policy, role). */
int hl_gpt_layout(const hl_gpt_config *c, hl_param_spec *out);
/* Storage bytes of one parameter under a policy (int8 weights: + fp32 row scales). */
uint64_t hl_param_spec_bytes(const hl_param_spec *p, hl_weight_policy policy);
int64_t hl_gpt_param_count(const hl_gpt_config *c);
/* GPT-2 init: normal(0, std) for embeddings and projection weights, std /
 * sqrt(2 n_layer) for the residual projections (attn.c_proj, mlp.c_proj),
 * zero biases, layer norms weight 1 and bias 0. */
hl_gpt *hl_gpt_new(const hl_gpt_config *c, hl_weight_policy policy, hl_device_kind device, uint64_t seed);
void hl_gpt_free(hl_gpt *m);
/* idx [B, T] i32 tokens, T <= block_size -> logits [B, T, vocab]. */
hl_tensor *hl_gpt_forward(hl_gpt *m, hl_tensor *idx);
/* Mean cross-entropy over the B*T next-token targets [B, T]. */
hl_tensor *hl_gpt_loss(hl_gpt *m, hl_tensor *idx, hl_tensor *targets, hl_tensor **logits);

/* ---------------------------------------------------- memory accounting -- */
/* Analytic bytes, checked against the accounting allocator by the tests. */

/* Parameter storage under a policy, without building the model. */
uint64_t hl_gpt_param_bytes(const hl_gpt_config *c, hl_weight_policy policy);
uint64_t hl_mlp_param_bytes(const hl_mlp_config *c, hl_weight_policy policy);

/* The bytes of one training step's state, for an optimizer that keeps
 * `moments` state tensors per parameter, each shaped as the parameter (the
 * caller's count: core/training/optim.h's hl_optim_moments gives it for
 * halflab's optimizers; the models need nothing of training to count
 * bytes). Activations are what the
 * forward and the loss leave saved for backward (B x T tokens); the peak
 * adds what backward holds at its fullest moment on top. */
typedef struct {
  uint64_t weights;      /* the model's parameters */
  uint64_t master;       /* fp32 master weights (fp16-master) */
  uint64_t gradients;    /* parameter gradients (+ fp32 master gradients) */
  uint64_t moments;      /* optimizer state: fp32 with master or fp32 weights, else the weights' dtype */
  uint64_t weight_casts; /* autocast's cached low-precision copies of the fp32 weights */
  uint64_t activations;  /* saved for backward at the end of forward + loss */
  uint64_t backward_peak; /* what forward, loss and backward add to weights, master and moments
                             at their fullest moment: casts, activations, gradients, transients */
  uint64_t peak;         /* the step's estimated allocator peak: weights, the optimizer's state
                            (moments; masters and master gradients) and backward_peak */
} hl_train_bytes;

hl_train_bytes hl_gpt_train_bytes(const hl_gpt_config *c, const hl_train_setup *s, int moments,
                                  int64_t batch, int64_t T);
hl_train_bytes hl_mlp_train_bytes(const hl_mlp_config *c, const hl_train_setup *s, int moments,
                                  int64_t batch);
/* Activations alone (the field above), for a step at batch x T. */
uint64_t hl_gpt_activation_bytes(const hl_gpt_config *c, const hl_train_setup *s, int64_t batch, int64_t T);
/* The largest batch (of T tokens each) whose estimated peak fits in
 * `memory` bytes; 0 when not even one sequence fits. */
int64_t hl_gpt_max_batch(const hl_gpt_config *c, const hl_train_setup *s, int moments, int64_t T,
                         uint64_t memory);

#ifdef __cplusplus
}
#endif

#endif /* HL_NN_H */
