/* models_test.c — the reference GPT (double precision, plain loops) the
 * model tests compare against. Written from the GPT-2 layout, not from
 * the code under test: pre-norm blocks, fused qkv, causal softmax
 * attention, tanh GELU, final layer norm, head tied to wte. */
#include "tests/models/models_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double *param_values(const hl_param *p) {
  double *v = hl_tensor_values(p->tensor);
  if (p->scale) {
    double *s = hl_tensor_values(p->scale);
    int64_t rows = p->tensor->shape[0], cols = p->tensor->shape[1];
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < cols; j++) v[r * cols + j] *= s[r];
    free(s);
  }
  return v;
}

hl_tensor *tokens(int64_t B, int64_t T, int vocab, uint32_t salt) {
  int32_t *v = malloc(sizeof(int32_t) * (size_t)(B * T));
  assert_non_null(v);
  for (int64_t i = 0; i < B * T; i++) v[i] = (int32_t)((i * 2654435761u + salt * 40503u + 7u) % (uint32_t)vocab);
  hl_tensor *t = hl_from_i32(HL_SHAPE(B, T), v, HL_I32, HL_DEVICE_CPU);
  free(v);
  OK(t);
  return t;
}

ref_gpt *ref_gpt_from(const hl_gpt *m) {
  ref_gpt *r = calloc(1, sizeof *r);
  assert_non_null(r);
  r->cfg = m->cfg;
  r->n = m->params.n;
  r->w = calloc((size_t)r->n, sizeof *r->w);
  r->numel = calloc((size_t)r->n, sizeof *r->numel);
  for (int i = 0; i < r->n; i++) {
    r->w[i] = param_values(&m->params.items[i]);
    r->numel[i] = hl_numel(m->params.items[i].tensor);
  }
  return r;
}

void ref_gpt_free(ref_gpt *r) {
  for (int i = 0; i < r->n; i++) free(r->w[i]);
  free(r->w);
  free(r->numel);
  free(r->head);
  free(r);
}

static void layer_norm(const double *x, const double *w, const double *b, double eps, int C, double *y) {
  double mean = 0, var = 0;
  for (int c = 0; c < C; c++) mean += x[c];
  mean /= C;
  for (int c = 0; c < C; c++) var += (x[c] - mean) * (x[c] - mean);
  var /= C;
  double rstd = 1.0 / sqrt(var + eps);
  for (int c = 0; c < C; c++) y[c] = (x[c] - mean) * rstd * w[c] + b[c];
}

/* y[out] = W[out, in] x[in] + b */
static void affine(const double *W, const double *b, const double *x, int in, int out, double *y) {
  for (int o = 0; o < out; o++) {
    double s = b ? b[o] : 0;
    for (int i = 0; i < in; i++) s += W[(int64_t)o * in + i] * x[i];
    y[o] = s;
  }
}

static double gelu(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

double ref_gpt_loss(const ref_gpt *r, const int32_t *idx, const int32_t *targets, int B, int T, double *logits_out) {
  const int C = r->cfg.n_embd, H = r->cfg.n_head, D = C / H, V = r->cfg.vocab_size, L = r->cfg.n_layer;
  const double eps = r->cfg.ln_eps > 0 ? r->cfg.ln_eps : 1e-5;
  /* parameter order: wte, wpe, per block 12 (ln_1 w b, c_attn w b, attn.c_proj w b, ln_2 w b, c_fc w b,
   * mlp.c_proj w b), ln_f w b */
  double *const *w = r->w;
  const double *wte = w[0], *wpe = w[1], *head = r->head ? r->head : wte;
  double *x = calloc((size_t)T * C, sizeof *x), *h = calloc((size_t)T * C, sizeof *h);
  double *qkv = calloc((size_t)T * 3 * C, sizeof *qkv), *y = calloc((size_t)T * C, sizeof *y);
  double *tmp = calloc((size_t)4 * C, sizeof *tmp), *f = calloc((size_t)4 * C, sizeof *f);
  double *att = calloc((size_t)T, sizeof *att), *logits = calloc((size_t)V, sizeof *logits);
  double loss = 0;
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++)
      for (int c = 0; c < C; c++) x[t * C + c] = wte[(int64_t)idx[b * T + t] * C + c] + wpe[t * C + c];
    for (int l = 0; l < L; l++) {
      double *const *p = w + 2 + 12 * l;
      for (int t = 0; t < T; t++) {
        layer_norm(x + t * C, p[0], p[1], eps, C, h + t * C);
        affine(p[2], p[3], h + t * C, C, 3 * C, qkv + t * 3 * C);
      }
      for (int t = 0; t < T; t++)
        for (int hh = 0; hh < H; hh++) {
          const double *q = qkv + t * 3 * C + hh * D;
          double mx = -INFINITY, sum = 0;
          for (int s = 0; s <= t; s++) { /* causal: keys up to t */
            const double *k = qkv + s * 3 * C + C + hh * D;
            double d = 0;
            for (int e = 0; e < D; e++) d += q[e] * k[e];
            att[s] = d / sqrt((double)D);
            mx = fmax(mx, att[s]);
          }
          for (int s = 0; s <= t; s++) sum += att[s] = exp(att[s] - mx);
          for (int e = 0; e < D; e++) {
            double acc = 0;
            for (int s = 0; s <= t; s++) acc += att[s] / sum * qkv[s * 3 * C + 2 * C + hh * D + e];
            y[t * C + hh * D + e] = acc;
          }
        }
      for (int t = 0; t < T; t++) {
        affine(p[4], p[5], y + t * C, C, C, tmp);
        for (int c = 0; c < C; c++) x[t * C + c] += tmp[c];
        layer_norm(x + t * C, p[6], p[7], eps, C, h + t * C);
        affine(p[8], p[9], h + t * C, C, 4 * C, f);
        for (int c = 0; c < 4 * C; c++) f[c] = gelu(f[c]);
        affine(p[10], p[11], f, 4 * C, C, tmp);
        for (int c = 0; c < C; c++) x[t * C + c] += tmp[c];
      }
    }
    for (int t = 0; t < T; t++) {
      layer_norm(x + t * C, w[2 + 12 * L], w[3 + 12 * L], eps, C, h + t * C);
      affine(head, NULL, h + t * C, C, V, logits);
      double mx = -INFINITY, sum = 0;
      for (int v = 0; v < V; v++) mx = fmax(mx, logits[v]);
      for (int v = 0; v < V; v++) sum += exp(logits[v] - mx);
      loss += mx + log(sum) - logits[targets[b * T + t]];
      if (logits_out) memcpy(logits_out + ((int64_t)b * T + t) * V, logits, sizeof(double) * (size_t)V);
    }
  }
  free(x);
  free(h);
  free(qkv);
  free(y);
  free(tmp);
  free(f);
  free(att);
  free(logits);
  return loss / (B * T);
}
