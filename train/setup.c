/* setup.c — a training mode's pieces: the model in the mode's weight dtype,
 * the optimizer (fp32 master weights for fp16-master), the GradScaler
 * (dynamic, fixed or disabled), and what they cost in memory.
 *
 *   mode          weights  forward            scaler            optimizer
 *   fp32          fp32     fp32               -                 fp32 state
 *   amp-fp16      fp32     fp16 autocast      dynamic           fp32 state
 *   amp-bf16      fp32     bf16 autocast      -                 fp32 state
 *   fp16-noscale  fp32     fp16 autocast      -                 fp32 state
 *   fp16-static   fp32     fp16 autocast      fixed scale       fp32 state
 *   fp16-master   fp16     fp16 autocast      dynamic           fp32 masters + state
 *   fp16-pure     fp16     fp16, no autocast  -                 fp16 state
 *
 * fp16-master runs its fp16 model under fp16 autocast, as core/models/nn.h's
 * accounting assumes: the products are fp16 either way, and autocast's fp32
 * list keeps layer norm, softmax and the loss in fp32 (apex's O2 with
 * keep_batchnorm_fp32, the paper's fp32 reductions); only fp16-pure runs
 * those in fp16. */
#include <stdlib.h>
#include <string.h>

#include "core/engine/autocast.h"
#include "core/engine/autograd.h"
#include "cli/cli.h"
#include "core/base/error.h"
#include "core/engine/ops.h"
#include "train/train.h"

/* optimizer state tensors per parameter, for the memory accounting */
static int accounting_moments(const train_opts *o) {
  return hl_optim_moments(o->optimizer, o->momentum > 0);
}

bool setup_model(const train_opts *o, const train_data *d, hl_device_kind dev, train_model *m) {
  (void)d;
  memset(m, 0, sizeof *m);
  m->kind = o->model;
  if (o->model == MODEL_GPT) {
    m->gpt = hl_gpt_new(&o->gpt, o->mode->weights, dev, o->seed);
    if (!m->gpt) return false;
    m->params = &m->gpt->params;
  } else {
    m->mlp = hl_mlp_new(&o->mlp, o->mode->weights, dev, o->seed);
    if (!m->mlp) return false;
    m->params = &m->mlp->params;
  }
  if (o->init_weights && !hl_params_load(m->params, o->init_weights)) {
    setup_model_free(m);
    return false;
  }
  m->trainable = malloc(sizeof *m->trainable * (size_t)m->params->n);
  if (!m->trainable) {
    setup_model_free(m);
    return hl_fail_bool("out of host memory");
  }
  m->n_trainable = hl_params_trainable(m->params, m->trainable);
  for (int i = 0; i < m->n_trainable; i++) m->numel += hl_numel(m->trainable[i]);
  return true;
}

void setup_model_free(train_model *m) {
  hl_gpt_free(m->gpt);
  hl_mlp_free(m->mlp);
  free(m->trainable);
  memset(m, 0, sizeof *m);
}

bool setup_mode(const train_opts *o, train_model *m, train_mode *t) {
  memset(t, 0, sizeof *t);
  t->setup = o->mode;
  t->autocast = o->mode->autocast;
  const bool is_static = o->mode->scaling == HL_LOSS_SCALE_FIXED;
  t->scaled = o->mode->scaling != HL_LOSS_SCALE_NONE;
  if (o->optimizer == HL_OPTIM_ADAMW) {
    hl_adamw_opts a = hl_adamw_defaults();
    a.lr = o->lr;
    a.weight_decay = o->weight_decay;
    a.master_weights = o->mode->master;
    t->opt = hl_adamw_new(m->trainable, m->n_trainable, a);
  } else {
    hl_sgd_opts s = hl_sgd_defaults();
    s.lr = o->lr;
    s.momentum = o->momentum;
    s.weight_decay = o->weight_decay;
    s.master_weights = o->mode->master;
    t->opt = hl_sgd_new(m->trainable, m->n_trainable, s);
  }
  if (!t->opt) return false;
  hl_scaler_opts so = hl_scaler_defaults();
  so.enabled = t->scaled;
  so.init_scale = o->init_scale;
  so.growth_interval = o->growth_interval;
  so.fixed_scale = is_static;
  t->scaler = hl_scaler_new(so);
  if (!t->scaler) {
    setup_mode_free(t);
    return false;
  }
  return true;
}

void setup_mode_free(train_mode *t) {
  hl_scaler_free(t->scaler);
  hl_optim_free(t->opt);
  memset(t, 0, sizeof *t);
}

/* ----------------------------------------------------------- accounting -- */

void setup_step_bytes(const train_opts *o, const train_data *d, uint64_t *device, uint64_t *host) {
  (void)d;
  const int moments = accounting_moments(o);
  hl_train_bytes b;
  uint64_t numel;
  if (o->model == MODEL_GPT) {
    b = hl_gpt_train_bytes(&o->gpt, o->mode, moments, o->batch, o->seq);
    numel = (uint64_t)hl_gpt_param_count(&o->gpt);
  } else {
    b = hl_mlp_train_bytes(&o->mlp, o->mode, moments, o->batch);
    numel = (uint64_t)hl_mlp_param_count(&o->mlp);
  }
  *device = b.peak;
  if (o->grad_penalty > 0) *device += b.backward_peak; /* the double backward keeps a second graph */
  /* on the host: the evaluation's logits (one chunk), and the statistics'
   * copies of the gradients and of the weights before and after a step */
  *host = (uint64_t)setup_eval_chunk(o) * (uint64_t)o->seq * (uint64_t)setup_classes(o) * 4 +
          (o->stats_every > 0 || o->n_hist > 0 ? 3 * 4 * numel : 0);
}

int64_t setup_classes(const train_opts *o) { return o->model == MODEL_GPT ? o->gpt.vocab_size : o->classes; }

int64_t setup_eval_chunk(const train_opts *o) {
  /* rows per evaluation forward: a batch, fewer when their logits would
   * pass 256 MiB on the host (GPT-2's vocabulary: one sequence of 1024) */
  const int64_t per_row = o->seq * setup_classes(o) * 4;
  int64_t rows = ((int64_t)256 << 20) / (per_row > 0 ? per_row : 1);
  if (rows > o->batch) rows = o->batch;
  if (rows > o->eval_samples) rows = o->eval_samples;
  return rows < 1 ? 1 : rows;
}

/* ------------------------------------------------------------- listing -- */

typedef struct {
  char name[64];
  hl_shape shape;
  hl_param_role role;
} listed_param;

static int layout(const train_opts *o, listed_param **out) {
  if (o->model == MODEL_GPT) {
    const int n = hl_gpt_layout(&o->gpt, NULL);
    hl_param_spec *s = malloc(sizeof *s * (size_t)n);
    *out = malloc(sizeof **out * (size_t)n);
    if (!s || !*out) hl_fatal("out of host memory listing the parameters");
    hl_gpt_layout(&o->gpt, s);
    for (int i = 0; i < n; i++) {
      memcpy((*out)[i].name, s[i].name, sizeof s[i].name);
      (*out)[i].shape = s[i].shape;
      (*out)[i].role = s[i].role;
    }
    free(s);
    return n;
  }
  const hl_mlp_config *c = &o->mlp;
  const int layers = c->n_hidden + 1;
  *out = malloc(sizeof **out * (size_t)(2 * layers));
  if (!*out) hl_fatal("out of host memory listing the parameters");
  for (int i = 0; i < layers; i++) {
    const int64_t in = i == 0 ? c->n_in : c->hidden[i - 1], outw = i == c->n_hidden ? c->n_out : c->hidden[i];
    listed_param *w = &(*out)[2 * i], *b = &(*out)[2 * i + 1];
    snprintf(w->name, sizeof w->name, "fc%d.weight", i + 1);
    w->shape = HL_SHAPE(outw, in);
    w->role = HL_ROLE_WEIGHT;
    snprintf(b->name, sizeof b->name, "fc%d.bias", i + 1);
    b->shape = HL_SHAPE(outw);
    b->role = HL_ROLE_BIAS;
  }
  return 2 * layers;
}

void setup_list_params(const train_opts *o, const train_data *d, FILE *f) {
  (void)d;
  listed_param *p = NULL;
  const int n = layout(o, &p);
  const hl_train_setup *s = o->mode;
  uint64_t total = 0, numel = 0;
  for (int i = 0; i < n; i++) {
    int64_t e = 1;
    for (int k = 0; k < p[i].shape.ndim; k++) e *= p[i].shape.d[k];
    numel += (uint64_t)e;
    total += (uint64_t)e * hl_dtype_size(hl_weight_policy_dtype(s->weights, p[i].role));
  }
  char b1[40], b2[40], b3[40];
  if (o->model == MODEL_GPT)
    fprintf(f, "# GPT: %d layers, %d heads, width %d, vocabulary %d, block %d; ", o->gpt.n_layer, o->gpt.n_head,
            o->gpt.n_embd, o->gpt.vocab_size, o->gpt.block_size);
  else fprintf(f, "# MLP classifier: %d inputs, %d hidden layers, %d classes; ", o->mlp.n_in, o->mlp.n_hidden, o->classes);
  fprintf(f, "mode %s (%s): %d parameters, %s elements, %s bytes\n", s->name, s->what, n, hl_format_thousands(numel, b1, sizeof b1),
          hl_format_thousands(total, b2, sizeof b2));
  fprintf(f, "%-5s %-40s %-14s %15s\n", "dtype", "name", "shape", "bytes");
  for (int i = 0; i < n; i++) {
    const hl_dtype t = hl_weight_policy_dtype(s->weights, p[i].role);
    int64_t e = 1;
    for (int k = 0; k < p[i].shape.ndim; k++) e *= p[i].shape.d[k];
    fprintf(f, "%-5s %-40s %-14s %15s", hl_dtype_name(t), p[i].name, hl_shape_desc(p[i].shape),
            hl_format_thousands((uint64_t)e * hl_dtype_size(t), b1, sizeof b1));
    if (s->master) fprintf(f, "  + f32 master %s", hl_format_thousands((uint64_t)e * 4, b3, sizeof b3));
    fputc('\n', f);
  }
  if (s->master)
    fprintf(f, "# the optimizer keeps an f32 master copy of every weight (%s bytes) and f32 master gradients\n",
            hl_format_thousands(numel * 4, b1, sizeof b1));
  if (s->autocast != HL_DTYPE_NONE && s->weights == HL_WEIGHTS_FP32)
    fprintf(f, "# under %s autocast each product converts its f32 weight to %s once per forward (cast cache)\n",
            hl_dtype_name(s->autocast), hl_dtype_name(s->autocast));
  free(p);
}

/* ------------------------------------------------------- device check -- */

bool setup_device_runs(const train_opts *o, hl_device_kind dev, char *why, size_t len) {
  train_opts small = *o;
  small.init_weights = NULL;
  small.gpt = (hl_gpt_config){.n_layer = 1, .n_head = 1, .n_embd = 8, .vocab_size = 8, .block_size = 4};
  small.mlp = (hl_mlp_config){.n_in = 4, .n_out = 3, .n_hidden = 1, .hidden = {8}, .act = o->mlp.act};
  train_model m;
  train_mode t;
  hl_tensor *a = NULL, *b = NULL, *loss = NULL;
  bool ok = setup_model(&small, NULL, dev, &m);
  if (ok) ok = setup_mode(&small, &m, &t);
  else goto out;
  if (!ok) goto free_model;
  if (o->model == MODEL_GPT) {
    const int32_t tok[8] = {1, 2, 3, 4, 5, 6, 7, 0};
    a = hl_from_i32(HL_SHAPE(2, 4), tok, HL_I32, dev);
    b = hl_from_i32(HL_SHAPE(2, 4), tok, HL_I32, dev);
  } else {
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const int32_t y[2] = {0, 2};
    const hl_dtype xt = t.autocast == HL_DTYPE_NONE ? hl_weight_policy_dtype(o->mode->weights, HL_ROLE_WEIGHT) : HL_F32;
    a = hl_from_f32(HL_SHAPE(2, 4), x, xt, dev);
    b = hl_from_i32(HL_SHAPE(2), y, HL_I32, dev);
  }
  HL_AUTOCAST(dev, t.autocast, t.autocast != HL_DTYPE_NONE) {
    loss = m.kind == MODEL_GPT ? hl_gpt_loss(m.gpt, a, b, NULL) : hl_mlp_loss(m.mlp, a, b, NULL);
  }
  hl_tensor *scaled = loss ? hl_scaler_scale(t.scaler, loss) : NULL;
  bool skipped;
  ok = scaled && hl_backward(scaled, NULL, false) && hl_scaler_step(t.scaler, t.opt, &skipped, NULL) &&
       (!t.scaled || hl_scaler_update(t.scaler));
  hl_release(scaled);
  hl_release(loss);
  hl_release(a);
  hl_release(b);
  hl_optim_zero_grad(t.opt);
  setup_mode_free(&t);
free_model:
  setup_model_free(&m);
out:
  if (!ok) snprintf(why, len, "%s", hl_error());
  hl_error_clear();
  return ok;
}
