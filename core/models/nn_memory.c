/* nn_memory.c — analytic bytes of the models: parameters per weight policy,
 * and the state of a training step per mode (weights, master copy,
 * gradients, optimizer moments, autocast's weight casts, activations saved
 * for backward, and the step's peak).
 *
 * The activation count follows hl_gpt_forward op by op with the dtype
 * rules of autocast (docs/core.md, Autocast) and what each op of the core saves:
 * linear saves its input (in the product's dtype), matmul both operands,
 * layer_norm its input (fp32 under autocast) and two fp32 statistics per
 * row, softmax its output (fp32 under autocast), gelu its input,
 * cross_entropy its (fp32 under autocast) logits and one fp32 log-sum-exp
 * per row. Views share storage: q, k and v are counted once, as qkv.
 * Tests compare these numbers with the accounting allocator. */
#include <string.h>

#include "core/models/nn.h"

/* ------------------------------------------------------------- helpers -- */

static uint64_t sz(hl_dtype t) { return hl_dtype_size(t); }

/* ---------------------------------------------------------- parameters -- */

/* Element counts of a GPT by role: weights also count their output rows
 * (one int8 scale each). */
typedef struct {
  int64_t embedding, weight, weight_rows, bias, norm;
} role_counts;

static role_counts gpt_counts(const hl_gpt_config *c) {
  const int64_t C = c->n_embd, L = c->n_layer;
  role_counts n = {
      .embedding = ((int64_t)c->vocab_size + c->block_size) * C,
      .weight = L * (3 * C * C + C * C + 4 * C * C + 4 * C * C),
      .weight_rows = L * (3 * C + C + 4 * C + C),
      .bias = L * (3 * C + C + 4 * C + C),
      .norm = L * 4 * C + 2 * C,
  };
  return n;
}

static role_counts mlp_counts(const hl_mlp_config *c) {
  role_counts n = {0};
  for (int i = 0; i <= c->n_hidden; i++) {
    int64_t in = i == 0 ? c->n_in : c->hidden[i - 1], out = i == c->n_hidden ? c->n_out : c->hidden[i];
    n.weight += in * out;
    n.weight_rows += out;
    n.bias += out;
  }
  return n;
}

static uint64_t counts_bytes(role_counts n, hl_weight_policy p) {
  uint64_t b = (uint64_t)n.embedding * sz(hl_weight_policy_dtype(p, HL_ROLE_EMBEDDING)) +
               (uint64_t)n.weight * sz(hl_weight_policy_dtype(p, HL_ROLE_WEIGHT)) +
               (uint64_t)n.bias * sz(hl_weight_policy_dtype(p, HL_ROLE_BIAS)) +
               (uint64_t)n.norm * sz(hl_weight_policy_dtype(p, HL_ROLE_NORM));
  if (p == HL_WEIGHTS_INT8) b += (uint64_t)n.weight_rows * sizeof(float); /* the row scales */
  return b;
}

uint64_t hl_gpt_param_bytes(const hl_gpt_config *c, hl_weight_policy p) { return counts_bytes(gpt_counts(c), p); }
uint64_t hl_mlp_param_bytes(const hl_mlp_config *c, hl_weight_policy p) { return counts_bytes(mlp_counts(c), p); }

/* ---------------------------------------------------- per-step dtypes -- */

typedef struct {
  bool ac;      /* autocast on */
  hl_dtype w;   /* weights (and their gradients) */
  hl_dtype lin; /* products: linear, matmul */
  hl_dtype res; /* the residual stream after the first block */
  hl_dtype ce;  /* the logits cross_entropy saves */
} step_dtypes;

static step_dtypes dtypes_of(const hl_train_setup *s) {
  step_dtypes d;
  d.ac = s->autocast != HL_DTYPE_NONE;
  d.w = hl_weight_policy_dtype(s->weights, HL_ROLE_WEIGHT);
  d.lin = d.ac ? s->autocast : d.w;
  d.res = hl_promote(d.w, d.lin);
  d.ce = d.ac ? HL_F32 : d.lin;
  return d;
}

/* Bytes one layer_norm over N rows of C keeps for backward when its input
 * has dtype x: the input (its fp32 cast under autocast), the weight's fp32
 * cast when autocast had to make one, mean and rstd. */
static uint64_t ln_saved(const step_dtypes *d, hl_dtype x, int64_t N, int64_t C) {
  uint64_t b = (uint64_t)N * C * (d->ac ? 4 : sz(x)) + (uint64_t)N * 8;
  if (d->ac && d->w != HL_F32) b += (uint64_t)C * 4;
  return b;
}

/* The activations of a GPT step, in parts the peak estimate needs. */
typedef struct {
  uint64_t embed;  /* position indices */
  uint64_t layer0; /* block 0 (its input is the embeddings' sum) */
  uint64_t layer;  /* each later block */
  uint64_t head;   /* ln_f and the head's input */
  uint64_t loss;   /* cross_entropy's saved logits and lse, and the loss */
  uint64_t total;
} gpt_acts;

static gpt_acts gpt_activations(const hl_gpt_config *c, const step_dtypes *d, int64_t B, int64_t T) {
  const int64_t N = B * T, C = c->n_embd, H = c->n_head, V = c->vocab_size;
  const uint64_t lin = sz(d->lin);
  /* attention and MLP of one block, without its two layer norms:
   * ln_1 out (as c_attn's input), qkv, softmax out (+ its cast for p @ v),
   * merged heads (c_proj's input), ln_2 out (c_fc's input), c_fc out
   * (gelu's input), gelu out (mlp.c_proj's input) */
  const uint64_t probs = (uint64_t)B * H * T * T * (d->ac ? 4 + lin : lin);
  const uint64_t body = (uint64_t)N * C * lin * (1 + 3 + 1 + 1 + 4 + 4) + probs;
  gpt_acts a;
  a.embed = (uint64_t)T * 4;
  a.layer0 = body + ln_saved(d, d->w, N, C) + ln_saved(d, d->res, N, C);
  a.layer = body + 2 * ln_saved(d, d->res, N, C);
  a.head = ln_saved(d, d->res, N, C) + (uint64_t)N * C * lin;
  a.loss = (uint64_t)N * V * sz(d->ce) + (uint64_t)N * 4 + sz(d->ce);
  a.total = a.embed + a.layer0 + (uint64_t)(c->n_layer - 1) * a.layer + a.head + a.loss;
  return a;
}

uint64_t hl_gpt_activation_bytes(const hl_gpt_config *c, const hl_train_setup *s, int64_t batch, int64_t T) {
  step_dtypes d = dtypes_of(s);
  return gpt_activations(c, &d, batch, T).total;
}

static uint64_t max2(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* What a step adds to the persistent state (weights, master, moments) at
 * its fullest moment. Backward frees each node's saved tensors as it runs
 * and makes the gradients, so the candidates are:
 *   (1) cross_entropy's backward: its logits gradient beside everything
 *       the forward saved;
 *   (2) the head's backward: the logits gradient in the product dtype, the
 *       wte gradient (product dtype, then converted to the weight's);
 *   (3) a block's MLP backward: gelu's input and its gradient, and the
 *       gradient of gelu's output;
 *   (4) a block's attention backward: the gradients of the probabilities
 *       and of the scores beside the saved probabilities;
 *   (5) the end of backward: all gradients and the embedding's
 *       scatter-add gradient of wte.
 * (3) and (4) are taken in every block, as the saved activations give way
 * to gradients. Checked against the allocator's peak by tests/models. */
static uint64_t gpt_backward_peak(const hl_gpt_config *c, const step_dtypes *d, const gpt_acts *a,
                                  const hl_train_bytes *r, int64_t B, int64_t T) {
  const uint64_t C = (uint64_t)c->n_embd, V = (uint64_t)c->vocab_size, N = (uint64_t)(B * T), NC = N * C;
  const uint64_t probs = (uint64_t)B * c->n_head * T * T;
  const uint64_t lin = sz(d->lin), wsz = sz(d->w), soft = d->ac ? 4 : lin;
  const bool casting = d->ac && d->w != d->lin;
  const uint64_t block_casts = casting ? 12 * C * C * lin : 0; /* held by the block's linear nodes */
  const uint64_t block_grads = (12 * C * C + 13 * C) * wsz;
  const uint64_t head_grads = (V * C + 2 * C) * wsz;
  /* (1) and (2) */
  uint64_t peak = r->weight_casts + a->total + N * V * sz(d->ce);
  const uint64_t wte_grad = V * C * (lin + (casting ? wsz : 0));
  peak = max2(peak, r->weight_casts + (a->total - a->loss) + N * V * lin + wte_grad + NC * lin);
  /* (3) and (4) for every block l from the top: blocks 0..l still hold
   * their activations and casts, the blocks above them their gradients,
   * and the residual's gradient flows down */
  for (int l = c->n_layer - 1; l >= 0; l--) {
    const uint64_t acts = a->embed + a->layer0 + (uint64_t)l * a->layer;
    const uint64_t below = acts + head_grads + (uint64_t)(c->n_layer - 1 - l) * block_grads + NC * sz(d->res) +
                           (uint64_t)(l + 1) * block_casts;
    /* gelu: its output (mlp.c_proj's input) freed, its input, the output's
     * and the input's gradients alive; mlp.c_proj's gradient made */
    const uint64_t mlp = below - (casting ? 4 * C * C * lin : 0) + 4 * NC * lin + (4 * C * C + C) * wsz;
    /* softmax: the block's MLP and ln_2 activations, c_proj's input and
     * the probabilities' cast freed; dv and the probabilities' two
     * gradients alive; the MLP, ln_2 and c_proj gradients made */
    const uint64_t freed = ln_saved(d, d->res, (int64_t)N, (int64_t)C) + NC * lin * 10 + (d->ac ? probs * lin : 0) +
                           (casting ? 9 * C * C * lin : 0);
    const uint64_t attn = below - freed + 2 * probs * soft + NC * lin + (9 * C * C + 8 * C) * wsz;
    peak = max2(peak, max2(mlp, attn));
  }
  /* (5): the embedding's wte gradient is added into the head's in place */
  return max2(peak, r->weights + V * C * wsz);
}

/* What lives through the whole step: the weights and the optimizer's
 * state, which core/training/optim.h allocates when it is made — moments, and for
 * master weights the fp32 masters and their fp32 gradients. */
static uint64_t persistent_bytes(const hl_train_bytes *r) { return r->weights + 2 * r->master + r->moments; }

/* The parts every model shares: weights, master, gradients, moments. */
static void state_bytes(hl_train_bytes *r, role_counts n, int64_t P, const hl_train_setup *s, int moments) {
  r->weights = counts_bytes(n, s->weights);
  r->master = s->master ? (uint64_t)P * 4 : 0;
  /* gradients have their parameter's dtype; with a master copy the fp16
   * gradients are copied into fp32 master gradients */
  r->gradients = r->weights + r->master;
  /* the moments follow the master (fp32) when there is one, else the
   * parameter's dtype (as PyTorch's zeros_like(param) state does) */
  r->moments = (uint64_t)moments * (s->master ? r->master : r->weights);
}

hl_train_bytes hl_gpt_train_bytes(const hl_gpt_config *c, const hl_train_setup *s, int moments,
                                  int64_t batch, int64_t T) {
  hl_train_bytes r;
  memset(&r, 0, sizeof r);
  const role_counts n = gpt_counts(c);
  const int64_t P = hl_gpt_param_count(c), C = c->n_embd, V = c->vocab_size;
  state_bytes(&r, n, P, s, moments);
  const step_dtypes d = dtypes_of(s);
  /* autocast converts every fp32 weight a product uses once per forward;
   * the linear nodes keep the weights' casts (projections, and the token
   * embedding as the head) until their backward. The biases' casts go
   * with the cast cache when the region closes. */
  if (d.ac && d.w != d.lin) r.weight_casts = (uint64_t)(n.weight + (int64_t)V * C) * sz(d.lin);
  const gpt_acts a = gpt_activations(c, &d, batch, T);
  r.activations = a.total;

  r.backward_peak = gpt_backward_peak(c, &d, &a, &r, batch, T);
  r.peak = persistent_bytes(&r) + r.backward_peak;
  return r;
}

hl_train_bytes hl_mlp_train_bytes(const hl_mlp_config *c, const hl_train_setup *s, int moments,
                                  int64_t batch) {
  hl_train_bytes r;
  memset(&r, 0, sizeof r);
  const role_counts n = mlp_counts(c);
  state_bytes(&r, n, hl_mlp_param_count(c), s, moments);
  const step_dtypes d = dtypes_of(s);
  const bool casting = d.ac && d.w != d.lin, gelu = c->act == HL_ACT_GELU;
  const uint64_t N = (uint64_t)batch, lin = sz(d.lin), wsz = sz(d.w);
  const int L = c->n_hidden + 1;
  uint64_t width[HL_MLP_MAX_HIDDEN + 2] = {0};
  for (int i = 0; i <= L; i++) width[i] = (uint64_t)(i == 0 ? c->n_in : i == L ? c->n_out : c->hidden[i - 1]);
  /* the first layer's input (data) needs no gradient, so its linear node
   * does not keep the weight's cast */
  if (casting) r.weight_casts = (uint64_t)(n.weight - (int64_t)(width[0] * width[1])) * lin;
  /* saved by layer i: its linear's input (for the first, only autocast's
   * copy: the caller's x is not the step's) and, after a hidden layer,
   * gelu's input (relu saves its output, which is the next linear's input) */
  uint64_t in_bytes[HL_MLP_MAX_HIDDEN + 1], act_bytes[HL_MLP_MAX_HIDDEN + 1];
  for (int i = 0; i < L; i++) {
    in_bytes[i] = i > 0 || casting ? N * width[i] * lin : 0;
    act_bytes[i] = gelu && i + 1 < L ? N * width[i + 1] * lin : 0;
  }
  uint64_t acts = 0;
  for (int i = 0; i < L; i++) acts += in_bytes[i] + act_bytes[i];
  const uint64_t loss = N * width[L] * sz(d.ce) + N * 4 + sz(d.ce); /* logits, lse, the loss */
  r.activations = acts + loss;
  /* the peak: cross_entropy's backward, then each layer's backward (its
   * input's and weight's gradients beside what the layers below saved and
   * the gradients above), then each activation's backward */
  uint64_t peak = r.weight_casts + r.activations + N * width[L] * sz(d.ce);
  uint64_t below = acts, casts = r.weight_casts, grads = 0;
  for (int l = L - 1; l >= 0; l--) {
    const uint64_t wbytes = width[l + 1] * width[l];
    const uint64_t dx = l > 0 ? N * width[l] * lin : 0;
    below -= act_bytes[l]; /* the activation after layer l went backward first */
    /* the linear's backward: its output's gradient, its input's and
     * weight's gradients beside what it saved */
    peak = max2(peak, casts + below + grads + N * width[l + 1] * lin + dx + wbytes * lin);
    below -= in_bytes[l];
    casts -= casting && l > 0 ? wbytes * lin : 0;
    /* then autocast's cast node turns the weight's gradient into fp32 */
    if (casting) peak = max2(peak, casts + below + grads + dx + wbytes * (lin + wsz));
    grads += (wbytes + width[l + 1]) * wsz;
    /* the activation before layer l: gelu keeps its input (in `below`),
     * relu its output (layer l's input) until its backward */
    if (l > 0) peak = max2(peak, casts + below + (gelu ? 0 : in_bytes[l]) + grads + 2 * dx);
  }
  r.backward_peak = max2(peak, r.weights);
  r.peak = persistent_bytes(&r) + r.backward_peak;
  return r;
}

int64_t hl_gpt_max_batch(const hl_gpt_config *c, const hl_train_setup *s, int moments, int64_t T,
                         uint64_t memory) {
  if (hl_gpt_train_bytes(c, s, moments, 1, T).peak > memory) return 0;
  int64_t lo = 1, hi = 2;
  while (hi < ((int64_t)1 << 40) && hl_gpt_train_bytes(c, s, moments, hi, T).peak <= memory) lo = hi, hi *= 2;
  while (hi - lo > 1) { /* peak(lo) fits, peak(hi) does not */
    int64_t mid = lo + (hi - lo) / 2;
    if (hl_gpt_train_bytes(c, s, moments, mid, T).peak <= memory) lo = mid;
    else hi = mid;
  }
  return lo;
}
