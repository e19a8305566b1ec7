/* test_memory.c — the analytic memory of a training step (core/models/nn.h)
 * against the accounting allocator, which is the ground truth:
 *   - activations saved for backward (bytes live after forward + loss,
 *     minus autocast's weight casts): within 1%;
 *   - the step's peak above the persistent state (the allocator's peak
 *     during forward, loss and backward): within 5%;
 * for GPT shapes where different terms dominate (vocabulary, attention,
 * MLP, many layers) in every training mode, and for the MLP. Also the
 * state terms of GPT-2 124M and the largest-batch search. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/training/optim.h" /* hl_optim_moments */
#include "tests/models/models_test.h"

static uint64_t cpu_peak(void) { return hl_mem_get_stats(HL_DEVICE_CPU).peak; }

typedef struct {
  uint64_t saved;         /* live after forward + loss (casts included) */
  uint64_t backward_peak; /* allocator peak during the step, above the bytes live before it */
} measured;

static measured gpt_step(hl_gpt *m, const hl_train_setup *s, int64_t B, int64_t T) {
  hl_tensor *idx = tokens(B, T, m->cfg.vocab_size, 3), *tg = tokens(B, T, m->cfg.vocab_size, 4);
  measured r;
  const uint64_t before = hl_cpu_live_bytes();
  hl_mem_reset_peak(HL_DEVICE_CPU);
  hl_tensor *loss = NULL;
  HL_AUTOCAST(HL_DEVICE_CPU, s->autocast == HL_DTYPE_NONE ? HL_BF16 : s->autocast, s->autocast != HL_DTYPE_NONE) {
    loss = hl_gpt_loss(m, idx, tg, NULL);
  }
  OK(loss);
  r.saved = hl_cpu_live_bytes() - before;
  OK(hl_backward(loss, NULL, false));
  hl_release(loss);
  r.backward_peak = cpu_peak() - before;
  hl_params_zero_grad(&m->params);
  assert_int_equal(hl_cpu_live_bytes(), before); /* nothing left behind */
  hl_release(idx);
  hl_release(tg);
  return r;
}

static void check_gpt(const hl_gpt_config *c, int64_t B, int64_t T) {
  const char *modes[] = {"fp32", "amp-fp16", "amp-bf16", "fp16-master", "fp16-pure"};
  for (size_t k = 0; k < sizeof modes / sizeof *modes; k++) {
    const hl_train_setup *s = hl_train_setup_find(modes[k]);
    assert_non_null(s);
    hl_gpt *m = hl_gpt_new(c, s->weights, HL_DEVICE_CPU, 1);
    OK(m);
    const hl_train_bytes e = hl_gpt_train_bytes(c, s, hl_optim_moments(HL_OPTIM_ADAMW, false), B, T);
    assert_int_equal(e.weights, hl_params_bytes(&m->params));
    measured got = gpt_step(m, s, B, T);
    const uint64_t want_saved = e.activations + e.weight_casts;
    const double saved_err = fabs((double)got.saved - (double)want_saved) / (double)got.saved;
    const double peak_err = fabs((double)got.backward_peak - (double)e.backward_peak) / (double)got.backward_peak;
    if (saved_err > 0.01 || peak_err > 0.05)
      fail_msg("gpt L%d H%d C%d V%d, batch %lldx%lld, %s: saved %llu (analytic %llu, %.2f%%), step peak %llu "
               "(analytic %llu, %.2f%%)",
               c->n_layer, c->n_head, c->n_embd, c->vocab_size, (long long)B, (long long)T, s->name,
               (unsigned long long)got.saved, (unsigned long long)want_saved, 100 * saved_err,
               (unsigned long long)got.backward_peak, (unsigned long long)e.backward_peak, 100 * peak_err);
    /* the same step again: the accounting is repeatable */
    if (k == 0) {
      measured again = gpt_step(m, s, B, T);
      assert_int_equal(again.saved, got.saved);
      assert_int_equal(again.backward_peak, got.backward_peak);
    }
    hl_gpt_free(m);
  }
}

static void test_gpt_vocab_dominated(void **state) {
  (void)state;
  check_gpt(&(hl_gpt_config){.n_layer = 2, .n_head = 2, .n_embd = 16, .vocab_size = 30000, .block_size = 8}, 2, 8);
  check_gpt(&(hl_gpt_config){.n_layer = 2, .n_head = 2, .n_embd = 32, .vocab_size = 1000, .block_size = 16}, 16, 16);
}

static void test_gpt_attention_dominated(void **state) {
  (void)state;
  check_gpt(&(hl_gpt_config){.n_layer = 1, .n_head = 8, .n_embd = 32, .vocab_size = 11, .block_size = 128}, 4, 128);
}

static void test_gpt_balanced(void **state) {
  (void)state;
  check_gpt(&(hl_gpt_config){.n_layer = 2, .n_head = 4, .n_embd = 64, .vocab_size = 101, .block_size = 32}, 4, 32);
  check_gpt(&(hl_gpt_config){.n_layer = 4, .n_head = 4, .n_embd = 128, .vocab_size = 512, .block_size = 64}, 4, 64);
}

static void test_gpt_gradient_dominated(void **state) {
  (void)state;
  /* few tokens, wide layers: the peak is late in backward, among gradients */
  check_gpt(&(hl_gpt_config){.n_layer = 3, .n_head = 2, .n_embd = 256, .vocab_size = 50, .block_size = 64}, 2, 64);
  check_gpt(&(hl_gpt_config){.n_layer = 6, .n_head = 4, .n_embd = 128, .vocab_size = 20, .block_size = 32}, 2, 32);
}

static void test_mlp_step(void **state) {
  (void)state;
  const hl_mlp_config c = {.n_in = 64, .n_out = 10, .n_hidden = 2, .hidden = {256, 128}, .act = HL_ACT_RELU};
  const char *modes[] = {"fp32", "amp-fp16", "amp-bf16", "fp16-master", "fp16-pure"};
  for (int act = 0; act < 2; act++)
    for (size_t k = 0; k < sizeof modes / sizeof *modes; k++) {
      hl_mlp_config cc = c;
      cc.act = act ? HL_ACT_GELU : HL_ACT_RELU;
      const hl_train_setup *s = hl_train_setup_find(modes[k]);
      hl_mlp *m = hl_mlp_new(&cc, s->weights, HL_DEVICE_CPU, 1);
      OK(m);
      const int64_t N = 512;
      hl_tensor *x = hl_randn(HL_SHAPE(N, 64), 0, 1, 1, 0, hl_weight_policy_dtype(s->weights, HL_ROLE_WEIGHT),
                              HL_DEVICE_CPU);
      int32_t *tv = malloc(sizeof(int32_t) * N);
      for (int i = 0; i < N; i++) tv[i] = i % 10;
      hl_tensor *t = hl_from_i32(HL_SHAPE(N), tv, HL_I32, HL_DEVICE_CPU);
      free(tv);
      const hl_train_bytes e = hl_mlp_train_bytes(&cc, s, hl_optim_moments(HL_OPTIM_SGD, false), N);
      const uint64_t before = hl_cpu_live_bytes();
      hl_mem_reset_peak(HL_DEVICE_CPU);
      hl_tensor *loss = NULL;
      HL_AUTOCAST(HL_DEVICE_CPU, s->autocast == HL_DTYPE_NONE ? HL_BF16 : s->autocast, s->autocast != HL_DTYPE_NONE) {
        loss = hl_mlp_loss(m, x, t, NULL);
      }
      OK(loss);
      const uint64_t saved = hl_cpu_live_bytes() - before;
      OK(hl_backward(loss, NULL, false));
      hl_release(loss);
      const uint64_t peak = cpu_peak() - before;
      const double saved_err = fabs((double)saved - (double)(e.activations + e.weight_casts)) / (double)saved;
      const double peak_err = fabs((double)peak - (double)e.backward_peak) / (double)peak;
      if (saved_err > 0.01 || peak_err > 0.05)
        fail_msg("mlp %s %s: saved %llu (analytic %llu), step peak %llu (analytic %llu)", act ? "gelu" : "relu",
                 s->name, (unsigned long long)saved, (unsigned long long)(e.activations + e.weight_casts),
                 (unsigned long long)peak, (unsigned long long)e.backward_peak);
      hl_release(x);
      hl_release(t);
      hl_mlp_free(m);
    }
}

static void test_gpt2_state_and_max_batch(void **state) {
  (void)state;
  const hl_gpt_config g = HL_GPT2_124M;
  const uint64_t P = 124439808;
  hl_train_bytes f = hl_gpt_train_bytes(&g, hl_train_setup_find("fp32"), hl_optim_moments(HL_OPTIM_ADAMW, false), 8, 1024);
  assert_int_equal(f.weights, 4 * P);
  assert_int_equal(f.master, 0);
  assert_int_equal(f.gradients, 4 * P);
  assert_int_equal(f.moments, 8 * P);
  assert_int_equal(f.weight_casts, 0);
  hl_train_bytes a = hl_gpt_train_bytes(&g, hl_train_setup_find("amp-fp16"), hl_optim_moments(HL_OPTIM_ADAMW, false), 8, 1024);
  assert_int_equal(a.weights, 4 * P);
  assert_int_equal(a.moments, 8 * P);
  /* the projection weights and wte, cast to fp16 once */
  assert_int_equal(a.weight_casts, 2 * (12 * 12 * 768 * 768 + 50257 * 768));
  /* autocast stores the attention probabilities twice (softmax's fp32
   * output and the fp16 copy p @ v uses): at 1024 tokens that outweighs
   * the halved linear activations; at 128 it does not */
  assert_true(a.activations > f.activations);
  assert_true(hl_gpt_train_bytes(&g, hl_train_setup_find("amp-fp16"), hl_optim_moments(HL_OPTIM_ADAMW, false), 8, 128).activations <
              hl_gpt_train_bytes(&g, hl_train_setup_find("fp32"), hl_optim_moments(HL_OPTIM_ADAMW, false), 8, 128).activations);
  hl_train_bytes o = hl_gpt_train_bytes(&g, hl_train_setup_find("fp16-master"), hl_optim_moments(HL_OPTIM_ADAMW, false), 8, 1024);
  assert_int_equal(o.weights, 2 * P);
  assert_int_equal(o.master, 4 * P);
  assert_int_equal(o.gradients, 2 * P + 4 * P);
  assert_int_equal(o.moments, 8 * P);
  hl_train_bytes p = hl_gpt_train_bytes(&g, hl_train_setup_find("fp16-pure"), hl_optim_moments(HL_OPTIM_SGD, true), 8, 1024);
  assert_int_equal(p.weights, 2 * P);
  assert_int_equal(p.gradients, 2 * P);
  assert_int_equal(p.moments, 2 * P);
  /* activations grow linearly with the batch (the position indices and the loss are once per step) */
  const hl_train_setup *s = hl_train_setup_find("amp-bf16");
  assert_int_equal(hl_gpt_activation_bytes(&g, s, 4, 1024), 4 * hl_gpt_activation_bytes(&g, s, 1, 1024) - 3 * (1024 * 4 + 4));
  /* the largest batch that fits: its peak fits, one more does not */
  const uint64_t mem[3] = {16ull << 30, 80ull << 30, 139ull << 30};
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < hl_train_setup_count; k++) {
      const hl_train_setup *m = &hl_train_setups[k];
      int64_t b = hl_gpt_max_batch(&g, m, hl_optim_moments(HL_OPTIM_ADAMW, false), 1024, mem[i]);
      assert_true(b >= 1);
      assert_true(hl_gpt_train_bytes(&g, m, hl_optim_moments(HL_OPTIM_ADAMW, false), b, 1024).peak <= mem[i]);
      assert_true(hl_gpt_train_bytes(&g, m, hl_optim_moments(HL_OPTIM_ADAMW, false), b + 1, 1024).peak > mem[i]);
    }
  assert_int_equal(hl_gpt_max_batch(&g, hl_train_setup_find("fp32"), hl_optim_moments(HL_OPTIM_ADAMW, false), 1024, 1ull << 30), 0);
  assert_null(hl_train_setup_find("fp8"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpt_vocab_dominated),    cmocka_unit_test(test_gpt_attention_dominated),
      cmocka_unit_test(test_gpt_balanced),           cmocka_unit_test(test_gpt_gradient_dominated),
      cmocka_unit_test(test_mlp_step),               cmocka_unit_test(test_gpt2_state_and_max_batch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
