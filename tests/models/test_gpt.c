/* test_gpt.c — the GPT's wiring against a straightforward double-precision
 * reference (models_test.c): loss, every parameter's gradient by central
 * differences of the reference, the tied head's gradient as the sum of its
 * two uses, causal masking, and the forward under autocast, with an fp16
 * model and with int8 weights. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/models/models_test.h"

static const hl_gpt_config tiny = {.n_layer = 2, .n_head = 2, .n_embd = 8, .vocab_size = 11, .block_size = 8};
enum { B = 2, T = 5 };

/* A tiny GPT whose every parameter (norms and biases too) is random, so no
 * gradient is trivially zero or one. */
static hl_gpt *random_gpt(hl_weight_policy policy) {
  hl_gpt *m = hl_gpt_new(&tiny, policy, HL_DEVICE_CPU, 5);
  OK(m);
  for (int i = 0; i < m->params.n; i++) {
    hl_param *p = &m->params.items[i];
    double mean = p->role == HL_ROLE_NORM && strstr(p->name, ".weight") ? 1.0 : 0.0;
    p->init = (hl_init_spec){HL_INIT_NORMAL, mean, 0.3};
  }
  OK(hl_params_init(&m->params, 77));
  return m;
}

static int32_t *host_ints(const hl_tensor *t) {
  int32_t *v = malloc(sizeof(int32_t) * (size_t)hl_numel(t));
  assert_non_null(v);
  OK(hl_read_i32(t, v));
  return v;
}

static double fd(ref_gpt *r, double *x, const int32_t *idx, const int32_t *tg) {
  const double h = 1e-5, saved = *x;
  *x = saved + h;
  double up = ref_gpt_loss(r, idx, tg, B, T, NULL);
  *x = saved - h;
  double down = ref_gpt_loss(r, idx, tg, B, T, NULL);
  *x = saved;
  return (up - down) / (2 * h);
}

static void test_matches_reference(void **state) {
  (void)state;
  hl_gpt *m = random_gpt(HL_WEIGHTS_FP32);
  hl_tensor *idx = tokens(B, T, tiny.vocab_size, 1), *tg = tokens(B, T, tiny.vocab_size, 2);
  hl_tensor *logits = NULL;
  hl_tensor *loss = hl_gpt_loss(m, idx, tg, &logits);
  OK(loss);
  assert_int_equal(logits->ndim, 3);
  assert_int_equal(logits->shape[0], B);
  assert_int_equal(logits->shape[1], T);
  assert_int_equal(logits->shape[2], tiny.vocab_size);
  assert_int_equal(logits->dtype, HL_F32);

  ref_gpt *r = ref_gpt_from(m);
  int32_t *ih = host_ints(idx), *th = host_ints(tg);
  double *ref_logits = malloc(sizeof(double) * B * T * tiny.vocab_size);
  double ref = ref_gpt_loss(r, ih, th, B, T, ref_logits);
  double got = hl_item(loss);
  assert_true(fabs(got - ref) <= 1e-5 * fabs(ref));
  double *lv = hl_tensor_values(logits);
  for (int i = 0; i < B * T * tiny.vocab_size; i++)
    if (fabs(lv[i] - ref_logits[i]) > 1e-4 * (1 + fabs(ref_logits[i])))
      fail_msg("logit %d: %.9g, reference %.9g", i, lv[i], ref_logits[i]);

  OK(hl_backward(loss, NULL, false));
  int checked = 0;
  for (int i = 0; i < m->params.n; i++) {
    const hl_param *p = &m->params.items[i];
    hl_tensor *g = hl_tensor_grad(p->tensor);
    if (!g) fail_msg("%s has no gradient", p->name);
    assert_int_equal(g->dtype, HL_F32);
    double *gv = hl_tensor_values(g);
    int64_t n = r->numel[i];
    int64_t picks[5] = {0, n / 2, n - 1, (n * 7) / 11, (n * 3) / 5};
    for (int k = 0; k < 5; k++) {
      double want = fd(r, &r->w[i][picks[k]], ih, th);
      if (fabs(gv[picks[k]] - want) > 2e-3 * fabs(want) + 2e-6)
        fail_msg("%s[%lld]: autograd %.9g, central difference of the reference %.9g", p->name, (long long)picks[k],
                 gv[picks[k]], want);
      checked++;
    }
    free(gv);
  }
  assert_int_equal(checked, 5 * (2 + 12 * tiny.n_layer + 2));
  free(lv);
  free(ref_logits);
  free(ih);
  free(th);
  ref_gpt_free(r);
  hl_release(logits);
  hl_release(loss);
  hl_release(idx);
  hl_release(tg);
  hl_gpt_free(m);
}

/* wte is used twice, as the token embedding and as the output head: its
 * gradient is the sum of the two uses (reference untied: a separate head
 * table with the same values, each differentiated on its own). */
static void test_tied_head_gradient(void **state) {
  (void)state;
  hl_gpt *m = random_gpt(HL_WEIGHTS_FP32);
  hl_tensor *idx = tokens(B, T, tiny.vocab_size, 1), *tg = tokens(B, T, tiny.vocab_size, 2);
  hl_tensor *loss = hl_gpt_loss(m, idx, tg, NULL);
  OK(loss);
  OK(hl_backward(loss, NULL, false));
  double *g = hl_tensor_values(hl_tensor_grad(m->wte));
  ref_gpt *r = ref_gpt_from(m);
  const int64_t n = r->numel[0];
  r->head = malloc(sizeof(double) * (size_t)n);
  memcpy(r->head, r->w[0], sizeof(double) * (size_t)n);
  int32_t *ih = host_ints(idx), *th = host_ints(tg);
  const int C = tiny.n_embd;
  bool used[64] = {false};
  for (int i = 0; i < B * T; i++) used[ih[i]] = true;
  int both = 0, head_only = 0;
  for (int v = 0; v < tiny.vocab_size; v++)
    for (int c = 0; c < C; c += 3) {
      double emb = fd(r, &r->w[0][v * C + c], ih, th), head = fd(r, &r->head[v * C + c], ih, th);
      double got = g[v * C + c];
      if (fabs(got - (emb + head)) > 2e-3 * (fabs(emb) + fabs(head)) + 2e-6)
        fail_msg("wte[%d,%d]: gradient %.9g, embedding use %.9g + head use %.9g", v, c, got, emb, head);
      if (used[v]) {
        /* both uses matter here: neither alone would pass */
        assert_true(fabs(emb) > 1e-4 && fabs(head) > 1e-4);
        both++;
      } else {
        assert_true(emb == 0.0);
        head_only++;
      }
    }
  assert_true(both > 0 && head_only > 0);
  free(g);
  free(ih);
  free(th);
  ref_gpt_free(r);
  hl_release(loss);
  hl_release(idx);
  hl_release(tg);
  hl_gpt_free(m);
}

/* Logits at position t depend on tokens 0..t only: changing the tokens
 * after t leaves them bit for bit the same, and changes position t+1. */
static void check_causal(hl_gpt *m, hl_dtype autocast) {
  const int V = tiny.vocab_size, Tc = 6;
  int32_t a[2 * 6], b[2 * 6];
  for (int i = 0; i < 2 * Tc; i++) a[i] = b[i] = (i * 5 + 3) % V;
  for (int t0 = 0; t0 + 1 < Tc; t0++) {
    for (int i = 0; i < 2; i++)
      for (int t = 0; t < Tc; t++) b[i * Tc + t] = t <= t0 ? a[i * Tc + t] : (a[i * Tc + t] + 1 + t) % V;
    hl_tensor *ia = hl_from_i32(HL_SHAPE(2, Tc), a, HL_I32, HL_DEVICE_CPU);
    hl_tensor *ib = hl_from_i32(HL_SHAPE(2, Tc), b, HL_I32, HL_DEVICE_CPU);
    hl_tensor *la = NULL, *lb = NULL;
    HL_NO_GRAD {
      HL_AUTOCAST(HL_DEVICE_CPU, autocast == HL_DTYPE_NONE ? HL_BF16 : autocast, autocast != HL_DTYPE_NONE) {
        la = hl_gpt_forward(m, ia);
        lb = hl_gpt_forward(m, ib);
      }
    }
    OK(la);
    OK(lb);
    double *va = hl_tensor_values(la), *vb = hl_tensor_values(lb);
    for (int i = 0; i < 2; i++) {
      for (int t = 0; t <= t0; t++)
        for (int v = 0; v < V; v++)
          if (va[(i * Tc + t) * V + v] != vb[(i * Tc + t) * V + v])
            fail_msg("position %d changed when only tokens after %d did (%s)", t, t0, hl_dtype_name(la->dtype));
      bool differs = false;
      for (int v = 0; v < V; v++) differs |= va[(i * Tc + t0 + 1) * V + v] != vb[(i * Tc + t0 + 1) * V + v];
      assert_true(differs);
    }
    free(va);
    free(vb);
    hl_release(la);
    hl_release(lb);
    hl_release(ia);
    hl_release(ib);
  }
}

static void test_causal(void **state) {
  (void)state;
  hl_gpt *m = random_gpt(HL_WEIGHTS_FP32);
  check_causal(m, HL_DTYPE_NONE);
  check_causal(m, HL_BF16);
  check_causal(m, HL_F16);
  hl_gpt_free(m);
}

/* Loss and logits of one model forward under `autocast` (HL_DTYPE_NONE: none). */
static double run_loss(hl_gpt *m, hl_dtype autocast, hl_dtype *logits_dtype, double **logits_values) {
  hl_tensor *idx = tokens(B, T, tiny.vocab_size, 1), *tg = tokens(B, T, tiny.vocab_size, 2);
  hl_tensor *loss = NULL, *logits = NULL;
  HL_AUTOCAST(HL_DEVICE_CPU, autocast == HL_DTYPE_NONE ? HL_BF16 : autocast, autocast != HL_DTYPE_NONE) {
    loss = hl_gpt_loss(m, idx, tg, &logits);
  }
  OK(loss);
  *logits_dtype = logits->dtype;
  if (logits_values) *logits_values = hl_tensor_values(logits);
  if (m->params.policy != HL_WEIGHTS_INT8) OK(hl_backward(loss, NULL, false));
  double v = hl_item(loss);
  hl_release(loss);
  hl_release(logits);
  hl_release(idx);
  hl_release(tg);
  return v;
}

static void test_autocast_and_half_models(void **state) {
  (void)state;
  hl_gpt *m = random_gpt(HL_WEIGHTS_FP32);
  hl_dtype dt;
  double *ref_logits;
  const double ref = run_loss(m, HL_DTYPE_NONE, &dt, &ref_logits);
  hl_params_zero_grad(&m->params);
  /* autocast: the head is a product, so logits come in the lower dtype;
   * gradients reach the fp32 weights as fp32 */
  const hl_dtype lower[2] = {HL_F16, HL_BF16};
  for (int k = 0; k < 2; k++) {
    double l = run_loss(m, lower[k], &dt, NULL);
    assert_int_equal(dt, lower[k]);
    assert_true(fabs(l - ref) < 2e-2 * fabs(ref));
    for (int i = 0; i < m->params.n; i++) {
      hl_tensor *g = hl_tensor_grad(m->params.items[i].tensor);
      assert_non_null(g);
      assert_int_equal(g->dtype, HL_F32);
    }
    hl_params_zero_grad(&m->params);
  }
  hl_gpt_free(m);

  /* fp16 / bf16 models: the same weights rounded; without autocast every op
   * runs in the model's dtype, gradients too */
  const hl_weight_policy half[2] = {HL_WEIGHTS_FP16, HL_WEIGHTS_BF16};
  for (int k = 0; k < 2; k++) {
    hl_gpt *h = random_gpt(half[k]);
    double l = run_loss(h, HL_DTYPE_NONE, &dt, NULL);
    assert_int_equal(dt, lower[k]);
    assert_true(fabs(l - ref) < 5e-2 * fabs(ref));
    for (int i = 0; i < h->params.n; i++) assert_int_equal(hl_tensor_grad(h->params.items[i].tensor)->dtype, lower[k]);
    hl_gpt_free(h);
  }

  /* int8: refused outside autocast; inside, close to the fp32 model */
  hl_gpt *q = random_gpt(HL_WEIGHTS_INT8);
  hl_tensor *idx = tokens(B, T, tiny.vocab_size, 1);
  hl_error_clear();
  assert_null(hl_gpt_forward(q, idx));
  assert_non_null(strstr(hl_error(), "autocast"));
  hl_release(idx);
  double *ql;
  double l = run_loss(q, HL_F16, &dt, &ql);
  assert_int_equal(dt, HL_F16); /* the head is the fp16 embedding, used in the autocast dtype */
  assert_true(fabs(l - ref) < 2e-2 * fabs(ref));
  double worst = 0, range = 0;
  for (int i = 0; i < B * T * tiny.vocab_size; i++) {
    worst = fmax(worst, fabs(ql[i] - ref_logits[i]));
    range = fmax(range, fabs(ref_logits[i]));
  }
  assert_true(worst < 0.05 * range);
  for (int i = 0; i < q->params.n; i++) assert_false(hl_requires_grad(q->params.items[i].tensor));
  free(ql);
  free(ref_logits);
  hl_gpt_free(q);
}

static void test_bad_input(void **state) {
  (void)state;
  hl_gpt *m = random_gpt(HL_WEIGHTS_FP32);
  hl_tensor *long_idx = tokens(1, tiny.block_size + 1, tiny.vocab_size, 1);
  assert_null(hl_gpt_forward(m, long_idx));
  assert_non_null(strstr(hl_error(), "block size"));
  hl_tensor *f = hl_zeros(HL_SHAPE(1, 3), HL_F32, HL_DEVICE_CPU);
  assert_null(hl_gpt_forward(m, f));
  int32_t bad[3] = {0, 99, 1};
  hl_tensor *oob = hl_from_i32(HL_SHAPE(1, 3), bad, HL_I32, HL_DEVICE_CPU);
  assert_null(hl_gpt_forward(m, oob));
  assert_non_null(strstr(hl_error(), "outside"));
  hl_gpt_config c = tiny;
  c.n_head = 3;
  char why[160];
  assert_false(hl_gpt_config_check(&c, why, sizeof why));
  assert_non_null(strstr(why, "do not divide"));
  assert_null(hl_gpt_new(&c, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 1));
  c = tiny;
  c.n_layer = 0;
  assert_null(hl_gpt_new(&c, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 1));
  hl_release(long_idx);
  hl_release(f);
  hl_release(oob);
  hl_gpt_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matches_reference), cmocka_unit_test(test_tied_head_gradient),
      cmocka_unit_test(test_causal),            cmocka_unit_test(test_autocast_and_half_models),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
