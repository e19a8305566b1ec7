/* nn_models.c — Linear, LayerNorm, the MLP classifier and the GPT, built
 * from the core's differentiable ops. Intermediate tensors are released as
 * soon as the next op has them, so what stays alive after a forward is
 * exactly what autograd saved for backward (the memory accounting of
 * nn_memory.c counts that). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/autocast.h"
#include "core/base/error.h"
#include "core/models/nn_internal.h"
#include "core/engine/ops.h"

/* -------------------------------------------------------------- layers -- */

/* int8 weights: the integers (exact in fp16 and bf16) through the product
 * in the autocast dtype, then each output column scaled by its row's
 * scale, then the bias: y = (x q^T) * s + b. */
static hl_tensor *linear_int8(const hl_linear_layer *l, hl_tensor *x) {
  hl_device_kind dev = l->weight->device;
  if (!hl_autocast_enabled(dev))
    return hl_fail("linear: %s is int8 (storage for inference): run the forward inside an enabled autocast region",
                   hl_tensor_name(l->weight));
  hl_tensor *w = hl_to_dtype(l->weight, hl_autocast_dtype(dev));
  hl_tensor *y = hl_linear(x, w, NULL);
  hl_release(w);
  hl_tensor *ys = hl_mul(y, l->scale);
  hl_release(y);
  if (!l->bias) return ys;
  hl_tensor *out = hl_add(ys, l->bias);
  hl_release(ys);
  return out;
}

hl_tensor *hl_linear_forward(const hl_linear_layer *l, hl_tensor *x) {
  if (l->weight && l->weight->dtype == HL_I8) return linear_int8(l, x);
  return hl_linear(x, l->weight, l->bias);
}

hl_tensor *hl_layer_norm_forward(const hl_layer_norm_layer *l, hl_tensor *x) {
  return hl_layer_norm(x, l->weight, l->bias, l->eps);
}

static hl_linear_layer linear_of(const hl_param_list *l, const char *prefix) {
  char name[160];
  hl_linear_layer layer = {0};
  snprintf(name, sizeof name, "%s.weight", prefix);
  hl_param *w = hl_params_find(l, name);
  snprintf(name, sizeof name, "%s.bias", prefix);
  hl_param *b = hl_params_find(l, name);
  layer.weight = w ? w->tensor : NULL;
  layer.scale = w ? w->scale : NULL;
  layer.bias = b ? b->tensor : NULL;
  return layer;
}

static hl_layer_norm_layer layer_norm_of(const hl_param_list *l, const char *prefix, double eps) {
  char name[160];
  hl_layer_norm_layer layer = {.eps = eps};
  snprintf(name, sizeof name, "%s.weight", prefix);
  hl_param *w = hl_params_find(l, name);
  snprintf(name, sizeof name, "%s.bias", prefix);
  hl_param *b = hl_params_find(l, name);
  layer.weight = w ? w->tensor : NULL;
  layer.bias = b ? b->tensor : NULL;
  return layer;
}

static bool add_linear(hl_param_list *l, const char *prefix, int64_t in, int64_t out, int block, hl_init_spec w_init,
                       hl_init_spec b_init) {
  char name[160];
  snprintf(name, sizeof name, "%s.weight", prefix);
  if (!hl_params_add(l, name, HL_SHAPE(out, in), HL_ROLE_WEIGHT, block, w_init)) return false;
  snprintf(name, sizeof name, "%s.bias", prefix);
  return hl_params_add(l, name, HL_SHAPE(out), HL_ROLE_BIAS, block, b_init);
}

static bool policy_ok(const char *what, hl_weight_policy policy, hl_device_kind device) {
  if ((unsigned)policy >= HL_WEIGHT_POLICIES) return hl_fail_bool("%s: unknown weight policy %d", what, (int)policy);
  if ((unsigned)device >= HL_DEVICE_KINDS) return hl_fail_bool("%s: unknown device %d", what, (int)device);
  return true;
}

/* ----------------------------------------------------------------- MLP -- */

bool hl_mlp_config_check(const hl_mlp_config *c, char *why, size_t len) {
  const char *bad = NULL;
  if (c->n_in <= 0 || c->n_out <= 0) bad = "input and output widths must be positive";
  else if (c->n_hidden < 0 || c->n_hidden > HL_MLP_MAX_HIDDEN) bad = "between 0 and 8 hidden layers";
  else if (c->act != HL_ACT_RELU && c->act != HL_ACT_GELU) bad = "activation must be relu or gelu";
  else if (!(c->init_gain >= 0) || !isfinite(c->init_gain)) bad = "init gain must be finite and >= 0";
  for (int i = 0; !bad && i < c->n_hidden; i++)
    if (c->hidden[i] <= 0) bad = "hidden widths must be positive";
  if (bad && why) snprintf(why, len, "%s", bad);
  return !bad;
}

static int64_t mlp_width(const hl_mlp_config *c, int i) { /* width i of n_hidden + 2 */
  return i == 0 ? c->n_in : i == c->n_hidden + 1 ? c->n_out : c->hidden[i - 1];
}

int64_t hl_mlp_param_count(const hl_mlp_config *c) {
  int64_t n = 0;
  for (int i = 0; i <= c->n_hidden; i++) n += mlp_width(c, i + 1) * (mlp_width(c, i) + 1);
  return n;
}

hl_mlp *hl_mlp_new(const hl_mlp_config *c, hl_weight_policy policy, hl_device_kind device, uint64_t seed) {
  char why[128];
  if (!hl_mlp_config_check(c, why, sizeof why)) return hl_fail("mlp: %s", why);
  if (!policy_ok("mlp", policy, device)) return NULL;
  hl_mlp *m = calloc(1, sizeof *m);
  if (!m) return hl_fail("mlp: out of host memory");
  m->cfg = *c;
  m->params.policy = policy;
  m->params.device = device;
  m->n_layers = c->n_hidden + 1;
  const double gain = c->init_gain > 0 ? c->init_gain : 1.0;
  bool ok = true;
  for (int i = 0; ok && i < m->n_layers; i++) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "fc%d", i + 1);
    double bound = gain / sqrt((double)mlp_width(c, i));
    hl_init_spec u = {HL_INIT_UNIFORM, -bound, bound};
    ok = add_linear(&m->params, prefix, mlp_width(c, i), mlp_width(c, i + 1), -1, u, u);
    if (ok) m->fc[i] = linear_of(&m->params, prefix);
  }
  if (!ok || !hl_params_init(&m->params, seed)) {
    hl_mlp_free(m);
    return NULL;
  }
  return m;
}

void hl_mlp_free(hl_mlp *m) {
  if (!m) return;
  hl_params_clear(&m->params);
  free(m);
}

hl_tensor *hl_mlp_forward(hl_mlp *m, hl_tensor *x) {
  if (!x) return hl_has_error() ? NULL : hl_fail("mlp: input is NULL");
  if (x->ndim != 2 || x->shape[1] != m->cfg.n_in)
    return hl_fail("mlp: input %s is not [N, %d]", hl_desc(x), m->cfg.n_in);
  hl_tensor *h = hl_retain(x);
  for (int i = 0; i < m->n_layers; i++) {
    hl_tensor *y = hl_linear_forward(&m->fc[i], h);
    hl_release(h);
    h = y;
    if (i + 1 < m->n_layers) {
      y = m->cfg.act == HL_ACT_GELU ? hl_gelu(h) : hl_relu(h);
      hl_release(h);
      h = y;
    }
  }
  return h;
}

hl_tensor *hl_mlp_loss(hl_mlp *m, hl_tensor *x, hl_tensor *targets, hl_tensor **logits) {
  hl_tensor *out = hl_mlp_forward(m, x);
  hl_tensor *loss = hl_cross_entropy(out, targets);
  if (logits) *logits = out;
  else hl_release(out);
  return loss;
}

/* ----------------------------------------------------------------- GPT -- */

static double gpt_std(const hl_gpt_config *c) { return c->init_std > 0 ? c->init_std : 0.02; }
static double gpt_eps(const hl_gpt_config *c) { return c->ln_eps > 0 ? c->ln_eps : 1e-5; }

bool hl_gpt_config_check(const hl_gpt_config *c, char *why, size_t len) {
  char b[160] = "";
  if (c->n_layer <= 0 || c->n_head <= 0 || c->n_embd <= 0 || c->vocab_size <= 0 || c->block_size <= 0)
    snprintf(b, sizeof b, "layers, heads, width, vocabulary and block size must all be positive");
  else if (c->n_embd % c->n_head)
    snprintf(b, sizeof b, "%d heads do not divide the width %d", c->n_head, c->n_embd);
  else if (!(c->init_std >= 0) || !isfinite(c->init_std) || !(c->ln_eps >= 0) || !isfinite(c->ln_eps))
    snprintf(b, sizeof b, "init std and layer-norm eps must be finite and >= 0");
  else if ((int64_t)c->vocab_size * c->n_embd > ((int64_t)1 << 40) || (int64_t)c->n_embd * 4 > INT32_MAX)
    snprintf(b, sizeof b, "vocabulary x width too large");
  if (b[0] && why) snprintf(why, len, "%s", b);
  return !b[0];
}

int64_t hl_gpt_param_count(const hl_gpt_config *c) {
  const int64_t C = c->n_embd;
  const int64_t block = 2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (4 * C * C + 4 * C) + (4 * C * C + C);
  return (int64_t)c->vocab_size * C + (int64_t)c->block_size * C + c->n_layer * block + 2 * C;
}

int hl_gpt_layout(const hl_gpt_config *c, hl_param_spec *out) {
  const int64_t C = c->n_embd;
  const double std = gpt_std(c);
  const hl_init_spec normal = {HL_INIT_NORMAL, 0.0, std}, zero = {HL_INIT_CONST, 0.0, 0}, one = {HL_INIT_CONST, 1.0, 0};
  const hl_init_spec residual = {HL_INIT_NORMAL, 0.0, std / sqrt(2.0 * c->n_layer)};
  int n = 0;
#define SPEC(shape_, role_, block_, init_, ...)                                 \
  do {                                                                         \
    if (out) {                                                                 \
      snprintf(out[n].name, sizeof out[n].name, __VA_ARGS__);                  \
      out[n].shape = shape_;                                                   \
      out[n].role = role_;                                                     \
      out[n].block = block_;                                                   \
      out[n].init = init_;                                                     \
    }                                                                          \
    n++;                                                                       \
  } while (0)
  SPEC(HL_SHAPE(c->vocab_size, C), HL_ROLE_EMBEDDING, -1, normal, "transformer.wte.weight");
  SPEC(HL_SHAPE(c->block_size, C), HL_ROLE_EMBEDDING, -1, normal, "transformer.wpe.weight");
  for (int i = 0; i < c->n_layer; i++) {
    SPEC(HL_SHAPE(C), HL_ROLE_NORM, i, one, "transformer.h.%d.ln_1.weight", i);
    SPEC(HL_SHAPE(C), HL_ROLE_NORM, i, zero, "transformer.h.%d.ln_1.bias", i);
    SPEC(HL_SHAPE(3 * C, C), HL_ROLE_WEIGHT, i, normal, "transformer.h.%d.attn.c_attn.weight", i);
    SPEC(HL_SHAPE(3 * C), HL_ROLE_BIAS, i, zero, "transformer.h.%d.attn.c_attn.bias", i);
    SPEC(HL_SHAPE(C, C), HL_ROLE_WEIGHT, i, residual, "transformer.h.%d.attn.c_proj.weight", i);
    SPEC(HL_SHAPE(C), HL_ROLE_BIAS, i, zero, "transformer.h.%d.attn.c_proj.bias", i);
    SPEC(HL_SHAPE(C), HL_ROLE_NORM, i, one, "transformer.h.%d.ln_2.weight", i);
    SPEC(HL_SHAPE(C), HL_ROLE_NORM, i, zero, "transformer.h.%d.ln_2.bias", i);
    SPEC(HL_SHAPE(4 * C, C), HL_ROLE_WEIGHT, i, normal, "transformer.h.%d.mlp.c_fc.weight", i);
    SPEC(HL_SHAPE(4 * C), HL_ROLE_BIAS, i, zero, "transformer.h.%d.mlp.c_fc.bias", i);
    SPEC(HL_SHAPE(C, 4 * C), HL_ROLE_WEIGHT, i, residual, "transformer.h.%d.mlp.c_proj.weight", i);
    SPEC(HL_SHAPE(C), HL_ROLE_BIAS, i, zero, "transformer.h.%d.mlp.c_proj.bias", i);
  }
  SPEC(HL_SHAPE(C), HL_ROLE_NORM, -1, one, "transformer.ln_f.weight");
  SPEC(HL_SHAPE(C), HL_ROLE_NORM, -1, zero, "transformer.ln_f.bias");
#undef SPEC
  return n;
}

uint64_t hl_param_spec_bytes(const hl_param_spec *p, hl_weight_policy policy) {
  int64_t n = 1;
  for (int i = 0; i < p->shape.ndim; i++) n *= p->shape.d[i];
  hl_dtype t = hl_weight_policy_dtype(policy, p->role);
  return (uint64_t)n * hl_dtype_size(t) + (t == HL_I8 ? (uint64_t)p->shape.d[0] * sizeof(float) : 0);
}

hl_gpt *hl_gpt_new(const hl_gpt_config *c, hl_weight_policy policy, hl_device_kind device, uint64_t seed) {
  char why[160];
  if (!hl_gpt_config_check(c, why, sizeof why)) return hl_fail("gpt: %s", why);
  if (!policy_ok("gpt", policy, device)) return NULL;
  const int n = hl_gpt_layout(c, NULL);
  hl_param_spec *specs = malloc(sizeof *specs * (size_t)n);
  hl_gpt *m = calloc(1, sizeof *m);
  if (m) m->h = calloc((size_t)c->n_layer, sizeof *m->h);
  if (!specs || !m || !m->h) {
    free(specs);
    if (m) free(m->h);
    free(m);
    return hl_fail("gpt: out of host memory");
  }
  hl_gpt_layout(c, specs);
  m->cfg = *c;
  m->params.policy = policy;
  m->params.device = device;
  hl_param_list *l = &m->params;
  bool ok = true;
  for (int i = 0; ok && i < n; i++)
    ok = hl_params_add(l, specs[i].name, specs[i].shape, specs[i].role, specs[i].block, specs[i].init);
  free(specs);
  const double eps = gpt_eps(c);
  for (int i = 0; ok && i < c->n_layer; i++) {
    char p[64];
    hl_gpt_block *b = &m->h[i];
    snprintf(p, sizeof p, "transformer.h.%d.ln_1", i);
    b->ln_1 = layer_norm_of(l, p, eps);
    snprintf(p, sizeof p, "transformer.h.%d.attn.c_attn", i);
    b->c_attn = linear_of(l, p);
    snprintf(p, sizeof p, "transformer.h.%d.attn.c_proj", i);
    b->attn_proj = linear_of(l, p);
    snprintf(p, sizeof p, "transformer.h.%d.ln_2", i);
    b->ln_2 = layer_norm_of(l, p, eps);
    snprintf(p, sizeof p, "transformer.h.%d.mlp.c_fc", i);
    b->c_fc = linear_of(l, p);
    snprintf(p, sizeof p, "transformer.h.%d.mlp.c_proj", i);
    b->mlp_proj = linear_of(l, p);
  }
  if (ok) {
    m->wte = hl_params_find(l, "transformer.wte.weight")->tensor;
    m->wpe = hl_params_find(l, "transformer.wpe.weight")->tensor;
    m->ln_f = layer_norm_of(l, "transformer.ln_f", eps);
  }
  if (!ok || !hl_params_init(l, seed)) {
    hl_gpt_free(m);
    return NULL;
  }
  return m;
}

void hl_gpt_free(hl_gpt *m) {
  if (!m) return;
  hl_params_clear(&m->params);
  free(m->h);
  free(m);
}

/* hl_activation_tap: the linear layer `layer` of block i (i < 0: the head) is about to read x */
static void tap(const hl_gpt *m, int i, const char *layer, hl_tensor *x) {
  if (!m->tap || !x) return;
  char name[96];
  if (i < 0) snprintf(name, sizeof name, "%s.input", layer);
  else snprintf(name, sizeof name, "transformer.h.%d.%s.input", i, layer);
  m->tap(m->tap_ctx, name, x);
}

/* x [B, T, C] (borrowed) -> x + attn(ln_1(x)), then + mlp(ln_2(.)); block i of the model. */
static hl_tensor *block_forward(const hl_gpt *m, int i, hl_tensor *x) {
  const hl_gpt_block *b = &m->h[i];
  const int H = m->cfg.n_head;
  const double scale = 1.0 / sqrt((double)(m->cfg.n_embd / H));

  /* causal self-attention: q, k and v are views of one fused projection */
  hl_tensor *h = hl_layer_norm_forward(&b->ln_1, x);
  tap(m, i, "attn.c_attn", h);
  hl_tensor *qkv = hl_linear_forward(&b->c_attn, h);
  hl_release(h);
  hl_tensor *part[3];
  hl_split(qkv, 2, 3, part);
  hl_release(qkv);
  hl_tensor *q = hl_split_heads(part[0], H), *k = hl_split_heads(part[1], H), *v = hl_split_heads(part[2], H);
  for (int i = 0; i < 3; i++) hl_release(part[i]);
  hl_tensor *kt = hl_transpose(k, -1, -2); /* a view: the GEMM reads it transposed */
  hl_release(k);
  hl_tensor *att = hl_matmul(q, kt); /* [B, H, T, T] */
  hl_release(q);
  hl_release(kt);
  hl_tensor *t = hl_mul_scalar(att, scale);
  hl_release(att);
  att = hl_causal_mask(t, -INFINITY);
  hl_release(t);
  hl_tensor *p = hl_softmax(att);
  hl_release(att);
  hl_tensor *y = hl_matmul(p, v); /* [B, H, T, D] */
  hl_release(p);
  hl_release(v);
  hl_tensor *ym = hl_merge_heads(y); /* [B, T, C] */
  hl_release(y);
  tap(m, i, "attn.c_proj", ym);
  hl_tensor *a = hl_linear_forward(&b->attn_proj, ym);
  hl_release(ym);
  hl_tensor *x1 = hl_add(x, a);
  hl_release(a);

  /* MLP */
  h = hl_layer_norm_forward(&b->ln_2, x1);
  tap(m, i, "mlp.c_fc", h);
  hl_tensor *f = hl_linear_forward(&b->c_fc, h);
  hl_release(h);
  hl_tensor *g = hl_gelu(f);
  hl_release(f);
  tap(m, i, "mlp.c_proj", g);
  hl_tensor *mo = hl_linear_forward(&b->mlp_proj, g);
  hl_release(g);
  hl_tensor *x2 = hl_add(x1, mo);
  hl_release(x1);
  hl_release(mo);
  return x2;
}

hl_tensor *hl_gpt_forward(hl_gpt *m, hl_tensor *idx) {
  if (!idx) return hl_has_error() ? NULL : hl_fail("gpt: token indices are NULL");
  const hl_gpt_config *c = &m->cfg;
  if (idx->ndim != 2 || idx->dtype != HL_I32 || idx->shape[0] <= 0 || idx->shape[1] <= 0 ||
      idx->shape[1] > c->block_size)
    return hl_fail("gpt: tokens %s must be i32 [B, T] with 0 < T <= block size %d", hl_desc(idx), c->block_size);
  if (m->params.policy == HL_WEIGHTS_INT8 && !hl_autocast_enabled(m->params.device))
    return hl_fail("gpt: an int8 model (storage for inference) runs inside an enabled autocast region");
  const int64_t T = idx->shape[1];
  int32_t *pos_host = malloc(sizeof(int32_t) * (size_t)T);
  if (!pos_host) return hl_fail("gpt: out of host memory");
  for (int64_t t = 0; t < T; t++) pos_host[t] = (int32_t)t;
  hl_tensor *pos = hl_from_i32(HL_SHAPE(T), pos_host, HL_I32, m->params.device);
  free(pos_host);

  hl_tensor *tok = hl_embedding(m->wte, idx); /* [B, T, C] */
  hl_tensor *pe = hl_embedding(m->wpe, pos);  /* [T, C], broadcast over B */
  hl_release(pos);
  hl_tensor *x = hl_add(tok, pe);
  hl_release(tok);
  hl_release(pe);
  for (int i = 0; i < c->n_layer && x; i++) {
    hl_tensor *next = block_forward(m, i, x);
    hl_release(x);
    x = next;
  }
  hl_tensor *h = hl_layer_norm_forward(&m->ln_f, x);
  hl_release(x);
  tap(m, -1, "lm_head", h);
  hl_tensor *logits = hl_linear(h, m->wte, NULL); /* the head, tied to the token embedding */
  hl_release(h);
  return logits;
}

hl_tensor *hl_gpt_loss(hl_gpt *m, hl_tensor *idx, hl_tensor *targets, hl_tensor **logits) {
  if (logits) *logits = NULL;
  if (!targets) return hl_has_error() ? NULL : hl_fail("gpt: targets are NULL");
  if (idx && (targets->ndim != 2 || targets->shape[0] != idx->shape[0] || targets->shape[1] != idx->shape[1]))
    return hl_fail("gpt: targets %s must have the tokens' shape %s", hl_desc(targets), hl_desc(idx));
  hl_tensor *out = hl_gpt_forward(m, idx);
  if (!out) return NULL;
  const int64_t rows = out->shape[0] * out->shape[1];
  hl_tensor *flat = hl_reshape(out, HL_SHAPE(rows, m->cfg.vocab_size));
  hl_tensor *tflat = hl_reshape(targets, HL_SHAPE(rows));
  hl_tensor *loss = hl_cross_entropy(flat, tflat);
  hl_release(flat);
  hl_release(tflat);
  if (logits) *logits = out;
  else hl_release(out);
  return loss;
}
