/* test_params.c — parameter lists: GPT-2's counts and bytes per weight
 * policy (worked out by hand here), HuggingFace's names, the dtypes of the
 * int8 policy, seeded init (deterministic, the same weights in every
 * policy, GPT-2's statistics), int8 quantisation, the weight file, and the
 * MLP. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/half.h"
#include "tests/models/models_test.h"


/* ------------------------------------------------------------ GPT-2 124M -- */

static void test_gpt2_counts_and_bytes(void **state) {
  (void)state;
  const hl_gpt_config g = HL_GPT2_124M;
  /* wte 50257x768 + wpe 1024x768 + 12 blocks x (ln_1 1536 + c_attn 768x2304+2304 + attn.c_proj 768x768+768
   * + ln_2 1536 + c_fc 768x3072+3072 + mlp.c_proj 3072x768+768) + ln_f 1536 */
  const int64_t block = 1536 + (768 * 2304 + 2304) + (768 * 768 + 768) + 1536 + (768 * 3072 + 3072) + (3072 * 768 + 768);
  assert_int_equal(block, 7087872);
  assert_int_equal(50257 * 768 + 1024 * 768 + 12 * block + 1536, 124439808);
  assert_int_equal(hl_gpt_param_count(&g), 124439808);
  assert_int_equal(hl_gpt_param_bytes(&g, HL_WEIGHTS_FP32), 497759232);
  assert_int_equal(hl_gpt_param_bytes(&g, HL_WEIGHTS_FP16), 248879616);
  assert_int_equal(hl_gpt_param_bytes(&g, HL_WEIGHTS_BF16), 248879616);
  /* int8 (docs/models.md, Weight dtype policies), by hand:
   *   projection weights int8: 12 x (768x2304 + 768x768 + 768x3072 + 3072x768) = 84,934,656 bytes
   *   one fp32 scale per output row: 12 x (2304 + 768 + 3072 + 768) x 4 = 331,776
   *   their biases fp16: 12 x (2304 + 768 + 3072 + 768) x 2 = 165,888
   *   layer norms fp32: (12 x 4 x 768 + 2 x 768) x 4 = 153,600
   *   embeddings fp16: (50257 + 1024) x 768 x 2 = 78,767,616 */
  assert_int_equal(12 * (768 * 2304 + 768 * 768 + 768 * 3072 + 3072 * 768), 84934656);
  assert_int_equal(84934656 + 331776 + 165888 + 153600 + 78767616, 164353536);
  assert_int_equal(hl_gpt_param_bytes(&g, HL_WEIGHTS_INT8), 164353536);
}

/* The real thing, once: 148 named parameters, 248,879,616 bytes in fp16,
 * and exactly that much more in the accounting allocator. */
static void test_gpt2_built(void **state) {
  (void)state;
  const hl_gpt_config g = HL_GPT2_124M;
  uint64_t before = hl_cpu_live_bytes();
  hl_gpt *m = hl_gpt_new(&g, HL_WEIGHTS_FP16, HL_DEVICE_CPU, 1);
  OK(m);
  assert_int_equal(hl_cpu_live_bytes() - before, 248879616);
  assert_int_equal(m->params.n, 148);
  assert_int_equal(hl_params_numel(&m->params), 124439808);
  assert_int_equal(hl_params_bytes(&m->params), 248879616);
  assert_string_equal(m->params.items[0].name, "transformer.wte.weight");
  assert_string_equal(m->params.items[4].name, "transformer.h.0.attn.c_attn.weight");
  assert_string_equal(m->params.items[145].name, "transformer.h.11.mlp.c_proj.bias");
  assert_string_equal(m->params.items[147].name, "transformer.ln_f.bias");
  hl_param *p = hl_params_find(&m->params, "transformer.h.11.mlp.c_fc.weight");
  assert_non_null(p);
  assert_int_equal(p->tensor->shape[0], 3072);
  assert_int_equal(p->tensor->shape[1], 768);
  hl_gpt_free(m);
  assert_int_equal(hl_cpu_live_bytes(), before);
}

static const hl_gpt_config small = {.n_layer = 2, .n_head = 4, .n_embd = 32, .vocab_size = 50, .block_size = 16};

static void test_names_in_hf_order(void **state) {
  (void)state;
  hl_gpt_config c = small;
  c.n_layer = 1;
  hl_gpt *m = hl_gpt_new(&c, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 1);
  OK(m);
  const char *want[] = {"transformer.wte.weight",          "transformer.wpe.weight",
                        "transformer.h.0.ln_1.weight",     "transformer.h.0.ln_1.bias",
                        "transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_attn.bias",
                        "transformer.h.0.attn.c_proj.weight", "transformer.h.0.attn.c_proj.bias",
                        "transformer.h.0.ln_2.weight",     "transformer.h.0.ln_2.bias",
                        "transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_fc.bias",
                        "transformer.h.0.mlp.c_proj.weight", "transformer.h.0.mlp.c_proj.bias",
                        "transformer.ln_f.weight",         "transformer.ln_f.bias"};
  const hl_param_role roles[] = {HL_ROLE_EMBEDDING, HL_ROLE_EMBEDDING, HL_ROLE_NORM,   HL_ROLE_NORM,
                                 HL_ROLE_WEIGHT,    HL_ROLE_BIAS,      HL_ROLE_WEIGHT, HL_ROLE_BIAS,
                                 HL_ROLE_NORM,      HL_ROLE_NORM,      HL_ROLE_WEIGHT, HL_ROLE_BIAS,
                                 HL_ROLE_WEIGHT,    HL_ROLE_BIAS,      HL_ROLE_NORM,   HL_ROLE_NORM};
  assert_int_equal(m->params.n, 16);
  for (int i = 0; i < 16; i++) {
    assert_string_equal(m->params.items[i].name, want[i]);
    assert_int_equal(m->params.items[i].role, roles[i]);
    assert_string_equal(hl_tensor_name(m->params.items[i].tensor), want[i]);
  }
  assert_int_equal(m->params.items[4].tensor->shape[0], 96); /* [3C, C]: [out, in] */
  assert_int_equal(m->params.items[4].tensor->shape[1], 32);
  assert_int_equal(m->params.items[12].tensor->shape[0], 32); /* mlp.c_proj [C, 4C] */
  assert_int_equal(m->params.items[12].tensor->shape[1], 128);
  hl_gpt_free(m);
}

/* Every policy: the dtypes per role, bytes = the analytic figure = what
 * the allocator handed out. */
static void test_policies(void **state) {
  (void)state;
  for (int p = 0; p < HL_WEIGHT_POLICIES; p++) {
    uint64_t before = hl_cpu_live_bytes();
    hl_gpt *m = hl_gpt_new(&small, (hl_weight_policy)p, HL_DEVICE_CPU, 3);
    OK(m);
    uint64_t used = hl_cpu_live_bytes() - before;
    assert_int_equal(used, hl_gpt_param_bytes(&small, (hl_weight_policy)p));
    assert_int_equal(hl_params_bytes(&m->params), used);
    assert_int_equal(hl_params_numel(&m->params), hl_gpt_param_count(&small));
    for (int i = 0; i < m->params.n; i++) {
      const hl_param *q = &m->params.items[i];
      assert_int_equal(q->tensor->dtype, hl_weight_policy_dtype((hl_weight_policy)p, q->role));
      assert_int_equal(q->scale != NULL, p == HL_WEIGHTS_INT8 && q->role == HL_ROLE_WEIGHT);
      assert_int_equal(hl_requires_grad(q->tensor), p != HL_WEIGHTS_INT8);
      if (q->scale) {
        assert_int_equal(q->scale->dtype, HL_F32);
        assert_int_equal(q->scale->ndim, 1);
        assert_int_equal(q->scale->shape[0], q->tensor->shape[0]);
      }
    }
    hl_tensor *trainable[64];
    assert_int_equal(hl_params_trainable(&m->params, trainable), p == HL_WEIGHTS_INT8 ? 0 : m->params.n);
    if (p != HL_WEIGHTS_INT8) assert_ptr_equal(trainable[5], m->params.items[5].tensor);
    /* the layout (what listings print, without allocating) is what was built */
    hl_param_spec specs[64];
    assert_int_equal(hl_gpt_layout(&small, NULL), m->params.n);
    assert_int_equal(hl_gpt_layout(&small, specs), m->params.n);
    uint64_t listed = 0;
    for (int i = 0; i < m->params.n; i++) {
      assert_string_equal(specs[i].name, m->params.items[i].name);
      assert_true(hl_shape_equal(specs[i].shape, hl_tensor_shape(m->params.items[i].tensor)));
      assert_int_equal(hl_param_spec_bytes(&specs[i], (hl_weight_policy)p), hl_param_bytes(&m->params.items[i]));
      listed += hl_param_spec_bytes(&specs[i], (hl_weight_policy)p);
    }
    assert_int_equal(listed, used);
    hl_gpt_free(m);
  }
  /* the int8 policy's dtypes */
  assert_int_equal(hl_weight_policy_dtype(HL_WEIGHTS_INT8, HL_ROLE_WEIGHT), HL_I8);
  assert_int_equal(hl_weight_policy_dtype(HL_WEIGHTS_INT8, HL_ROLE_BIAS), HL_F16);
  assert_int_equal(hl_weight_policy_dtype(HL_WEIGHTS_INT8, HL_ROLE_NORM), HL_F32);
  assert_int_equal(hl_weight_policy_dtype(HL_WEIGHTS_INT8, HL_ROLE_EMBEDDING), HL_F16);
  /* small's int8 bytes by hand: C = 32, 2 blocks, vocab 50, block 16 */
  const int64_t C = 32, L = 2;
  uint64_t want = (uint64_t)(L * 12 * C * C) * 1 + (uint64_t)(L * 9 * C) * 4 + (uint64_t)(L * 9 * C) * 2 +
                  (uint64_t)(L * 4 * C + 2 * C) * 4 + (uint64_t)((50 + 16) * C) * 2;
  assert_int_equal(hl_gpt_param_bytes(&small, HL_WEIGHTS_INT8), want);
  hl_weight_policy got;
  assert_true(hl_weight_policy_parse("int8", &got) && got == HL_WEIGHTS_INT8);
  assert_false(hl_weight_policy_parse("int4", &got));
}

/* ------------------------------------------------------------------ init -- */

static void test_init_deterministic_and_same_across_policies(void **state) {
  (void)state;
  hl_gpt *a = hl_gpt_new(&small, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 42);
  hl_gpt *b = hl_gpt_new(&small, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 42);
  hl_gpt *c = hl_gpt_new(&small, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 43);
  hl_gpt *h = hl_gpt_new(&small, HL_WEIGHTS_FP16, HL_DEVICE_CPU, 42);
  hl_gpt *bf = hl_gpt_new(&small, HL_WEIGHTS_BF16, HL_DEVICE_CPU, 42);
  hl_gpt *q = hl_gpt_new(&small, HL_WEIGHTS_INT8, HL_DEVICE_CPU, 42);
  OK(a && b && c && h && bf && q);
  for (int i = 0; i < a->params.n; i++) {
    const hl_param *pa = &a->params.items[i];
    const int64_t n = hl_numel(pa->tensor);
    float *va = malloc(sizeof(float) * (size_t)n), *vb = malloc(sizeof(float) * (size_t)n);
    float *vc = malloc(sizeof(float) * (size_t)n);
    OK(hl_read_f32(pa->tensor, va));
    OK(hl_read_f32(b->params.items[i].tensor, vb));
    OK(hl_read_f32(c->params.items[i].tensor, vc));
    assert_memory_equal(va, vb, sizeof(float) * (size_t)n);
    if (pa->init.kind == HL_INIT_NORMAL) assert_memory_not_equal(va, vc, sizeof(float) * (size_t)n);
    /* fp16 / bf16: the fp32 weights rounded once */
    uint16_t *vh = malloc(2 * (size_t)n), *vbf = malloc(2 * (size_t)n);
    memcpy(vh, hl_tensor_data(h->params.items[i].tensor), 2 * (size_t)n);
    memcpy(vbf, hl_tensor_data(bf->params.items[i].tensor), 2 * (size_t)n);
    for (int64_t k = 0; k < n; k++) {
      assert_int_equal(vh[k], hl_f32_to_f16(va[k]));
      assert_int_equal(vbf[k], hl_f32_to_bf16(va[k]));
    }
    /* int8: weights quantised row-wise from the same fp32 values */
    const hl_param *pq = &q->params.items[i];
    if (pq->scale) {
      int64_t rows = pq->tensor->shape[0], cols = pq->tensor->shape[1];
      int8_t *want_q = malloc((size_t)n);
      float *want_s = malloc(sizeof(float) * (size_t)rows);
      hl_quantize_rows_int8(va, rows, cols, want_q, want_s);
      assert_memory_equal(hl_tensor_data(pq->tensor), want_q, (size_t)n);
      assert_memory_equal(hl_tensor_data(pq->scale), want_s, sizeof(float) * (size_t)rows);
      free(want_q);
      free(want_s);
    } else if (pq->tensor->dtype == HL_F16) {
      for (int64_t k = 0; k < n; k++) assert_int_equal(((uint16_t *)hl_tensor_data(pq->tensor))[k], hl_f32_to_f16(va[k]));
    } else {
      assert_memory_equal(hl_tensor_data(pq->tensor), va, sizeof(float) * (size_t)n);
    }
    free(va);
    free(vb);
    free(vc);
    free(vh);
    free(vbf);
  }
  hl_gpt_free(a);
  hl_gpt_free(b);
  hl_gpt_free(c);
  hl_gpt_free(h);
  hl_gpt_free(bf);
  hl_gpt_free(q);
}

static void moments(const hl_tensor *t, double *mean, double *std, double *lo, double *hi) {
  double *v = hl_tensor_values(t);
  int64_t n = hl_numel(t);
  double s = 0, s2 = 0;
  *lo = INFINITY;
  *hi = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    s += v[i];
    s2 += v[i] * v[i];
    *lo = fmin(*lo, v[i]);
    *hi = fmax(*hi, v[i]);
  }
  *mean = s / n;
  *std = sqrt(s2 / n - *mean * *mean);
  free(v);
}

static void test_init_statistics(void **state) {
  (void)state;
  const hl_gpt_config c = {.n_layer = 4, .n_head = 4, .n_embd = 128, .vocab_size = 300, .block_size = 64};
  hl_gpt *m = hl_gpt_new(&c, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 9);
  OK(m);
  for (int i = 0; i < m->params.n; i++) {
    const hl_param *p = &m->params.items[i];
    double mean, std, lo, hi;
    moments(p->tensor, &mean, &std, &lo, &hi);
    if (p->role == HL_ROLE_BIAS || (p->role == HL_ROLE_NORM && strstr(p->name, ".bias"))) {
      assert_true(lo == 0.0 && hi == 0.0);
    } else if (p->role == HL_ROLE_NORM) {
      assert_true(lo == 1.0 && hi == 1.0);
    } else {
      double want = strstr(p->name, "c_proj.weight") ? 0.02 / sqrt(2.0 * c.n_layer) : 0.02;
      if (fabs(std - want) > 0.05 * want) fail_msg("%s: std %.5g, GPT-2's init gives %.5g", p->name, std, want);
      assert_true(fabs(mean) < 0.05 * want);
    }
  }
  hl_gpt_free(m);
}

static void test_quantize_by_hand(void **state) {
  (void)state;
  const float w[2 * 4] = {0.5f, -1.27f, 0.01f, 0.015f, 0, 0, 0, 0};
  int8_t q[8];
  float s[2];
  hl_quantize_rows_int8(w, 2, 4, q, s);
  assert_true(s[0] == 1.27f / 127.0f);
  /* 0.5 / 0.01 = 50, -127, 1, 1.5 -> 2 (half to even) */
  const int8_t want[8] = {50, -127, 1, 2, 0, 0, 0, 0};
  assert_memory_equal(q, want, 8);
  assert_true(s[1] == 0.0f);
}

/* ------------------------------------------------------------ weight file -- */

static bool same_values(const hl_gpt *a, const hl_gpt *b) {
  for (int i = 0; i < a->params.n; i++) {
    double *va = param_values(&a->params.items[i]), *vb = param_values(&b->params.items[i]);
    bool same = !memcmp(va, vb, sizeof(double) * (size_t)hl_numel(a->params.items[i].tensor));
    free(va);
    free(vb);
    if (!same) return false;
  }
  return true;
}

/* Loading `path` into m fails with a message containing `words`, and
 * leaves every parameter as it was. */
static void expect_refused(hl_gpt *m, const char *path, const char *words) {
  double **before = calloc((size_t)m->params.n, sizeof *before);
  for (int i = 0; i < m->params.n; i++) before[i] = param_values(&m->params.items[i]);
  hl_error_clear();
  assert_false(hl_params_load(&m->params, path));
  if (!strstr(hl_error(), words)) fail_msg("load error \"%s\" does not say \"%s\"", hl_error(), words);
  for (int i = 0; i < m->params.n; i++) {
    double *now = param_values(&m->params.items[i]);
    assert_memory_equal(now, before[i], sizeof(double) * (size_t)hl_numel(m->params.items[i].tensor));
    free(now);
    free(before[i]);
  }
  free(before);
}

/* A weight file whose values hold an inf or a NaN (checksum intact) is
 * refused, naming the file, the tensor and the index, before any
 * parameter changes. */
static void test_load_refuses_nonfinite(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), path[512], bad[512];
  snprintf(path, sizeof path, "%s/w.bin", dir);
  snprintf(bad, sizeof bad, "%s/bad.bin", dir);
  hl_gpt *a = hl_gpt_new(&small, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 1), *b = hl_gpt_new(&small, HL_WEIGHTS_FP16, HL_DEVICE_CPU, 2);
  OK(a && b);
  OK(hl_params_save(&a->params, path));
  const struct {
    int param;
    int64_t index;
    float value;
    const char *word;
  } cases[] = {{0, 0, NAN, "nan"}, {1, 5, INFINITY, "inf"}, {2, -1, -INFINITY, "-inf"}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t n;
    unsigned char *f = (unsigned char *)hl_read_file(path, &n);
    size_t at = 8 + 4;
    for (int i = 0;; i++) { /* the data of parameter cases[c].param */
      const hl_param *p = &a->params.items[i];
      at += 4 + strlen(p->name) + 4 + 8 * (size_t)p->tensor->ndim;
      if (i == cases[c].param) break;
      at += 4 * (size_t)hl_numel(p->tensor);
    }
    const hl_param *p = &a->params.items[cases[c].param];
    const int64_t index = cases[c].index >= 0 ? cases[c].index : hl_numel(p->tensor) - 1;
    memcpy(f + at + 4 * (size_t)index, &cases[c].value, 4);
    const uint32_t crc = hl_test_crc32(f, n - 4);
    memcpy(f + n - 4, &crc, 4);
    hl_write_file(bad, f, n);
    free(f);
    char words[1024];
    snprintf(words, sizeof words, "%s: %s[%lld] is %s: a weight file holds finite values only", bad, p->name,
             (long long)index, cases[c].word);
    expect_refused(b, bad, words);
  }
  hl_gpt_free(a);
  hl_gpt_free(b);
  hl_rmtree(dir);
  free(dir);
}

static void test_save_load(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), path[512], bad[512];
  snprintf(path, sizeof path, "%s/w.bin", dir);
  snprintf(bad, sizeof bad, "%s/bad.bin", dir);
  hl_gpt *a = hl_gpt_new(&small, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 1);
  hl_gpt *b = hl_gpt_new(&small, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 2);
  OK(a && b);
  OK(hl_params_save(&a->params, path));
  assert_false(same_values(a, b));
  OK(hl_params_load(&b->params, path));
  assert_true(same_values(a, b));

  /* the layout of docs/models.md: magic, count, entries, CRC-32 of all before it */
  size_t n;
  unsigned char *f = (unsigned char *)hl_read_file(path, &n);
  assert_non_null(f);
  assert_memory_equal(f, "HLWTS001", 8);
  uint32_t count, name_len, crc;
  memcpy(&count, f + 8, 4);
  memcpy(&name_len, f + 12, 4);
  assert_int_equal(count, (uint32_t)a->params.n);
  assert_int_equal(name_len, strlen("transformer.wte.weight"));
  assert_memory_equal(f + 16, "transformer.wte.weight", name_len);
  size_t expect = 8 + 4 + 4;
  for (int i = 0; i < a->params.n; i++)
    expect += 4 + strlen(a->params.items[i].name) + 4 + 8 * (size_t)a->params.items[i].tensor->ndim +
              4 * (size_t)hl_numel(a->params.items[i].tensor);
  assert_int_equal(n, expect);
  memcpy(&crc, f + n - 4, 4);
  assert_int_equal(hl_test_crc32("123456789", 9), 0xCBF43926u);
  assert_int_equal(crc, hl_test_crc32(f, n - 4));

  /* into other policies: rounded once / requantised, like the init */
  hl_gpt *h = hl_gpt_new(&small, HL_WEIGHTS_FP16, HL_DEVICE_CPU, 7), *h2 = hl_gpt_new(&small, HL_WEIGHTS_FP16, HL_DEVICE_CPU, 1);
  hl_gpt *q = hl_gpt_new(&small, HL_WEIGHTS_INT8, HL_DEVICE_CPU, 7), *q2 = hl_gpt_new(&small, HL_WEIGHTS_INT8, HL_DEVICE_CPU, 1);
  OK(h && h2 && q && q2);
  OK(hl_params_load(&h->params, path));
  OK(hl_params_load(&q->params, path));
  assert_true(same_values(h, h2));
  assert_true(same_values(q, q2));
  /* an int8 model saves its dequantised weights */
  char qpath[512];
  snprintf(qpath, sizeof qpath, "%s/q.bin", dir);
  OK(hl_params_save(&q->params, qpath));
  hl_gpt *back = hl_gpt_new(&small, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 5);
  OK(back);
  OK(hl_params_load(&back->params, qpath));
  for (int i = 0; i < back->params.n; i++) {
    double *vq = param_values(&q->params.items[i]), *vb = param_values(&back->params.items[i]);
    for (int64_t k = 0; k < hl_numel(back->params.items[i].tensor); k++)
      assert_true(fabs(vq[k] - vb[k]) <= 1e-6 * fabs(vq[k]));
    free(vq);
    free(vb);
  }

  /* refused, and the model left as it was */
  hl_gpt *keep = hl_gpt_new(&small, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 2);
  OK(keep);
  f[n / 2] ^= 0x40;
  hl_write_file(bad, f, n);
  expect_refused(keep, bad, "checksum");
  f[n / 2] ^= 0x40;
  hl_write_file(bad, f, n - 9);
  expect_refused(keep, bad, "truncated");
  hl_write_file(bad, f, n / 3);
  expect_refused(keep, bad, "truncated");
  memcpy(f, "NOTMINE!", 8);
  hl_write_file(bad, f, n);
  expect_refused(keep, bad, "not a halflab weight file");
  hl_gpt *fresh = hl_gpt_new(&small, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 2);
  assert_true(same_values(keep, fresh));
  /* other shapes and names */
  hl_gpt_config wide = small, deep = small;
  wide.n_embd = 64;
  deep.n_layer = 3;
  hl_gpt *w = hl_gpt_new(&wide, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 1), *d = hl_gpt_new(&deep, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 1);
  OK(w && d);
  expect_refused(w, path, "shape");
  expect_refused(d, path, "missing");
  char dpath[512];
  snprintf(dpath, sizeof dpath, "%s/deep.bin", dir);
  OK(hl_params_save(&d->params, dpath));
  expect_refused(keep, dpath, "not a parameter of this model");
  expect_refused(keep, "/nonexistent/w.bin", "cannot open");
  /* an unwritable place: nothing left behind */
  hl_error_clear();
  assert_false(hl_params_save(&a->params, "/nonexistent/dir/w.bin"));
  assert_non_null(strstr(hl_error(), "cannot create"));

  free(f);
  hl_gpt_free(a);
  hl_gpt_free(b);
  hl_gpt_free(h);
  hl_gpt_free(h2);
  hl_gpt_free(q);
  hl_gpt_free(q2);
  hl_gpt_free(back);
  hl_gpt_free(keep);
  hl_gpt_free(fresh);
  hl_gpt_free(w);
  hl_gpt_free(d);
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------------------ MLP -- */

/* The 6-5-4-3 GELU MLP of test_mlp in plain loops: mean cross-entropy. */
static double ref_mlp_loss(double *const *w, const double *x, const int32_t *t, int N) {
  const int width[4] = {6, 5, 4, 3};
  double total = 0;
  for (int r = 0; r < N; r++) {
    double a[8], b[8];
    for (int k = 0; k < 6; k++) a[k] = x[r * 6 + k];
    for (int l = 0; l < 3; l++) {
      for (int o = 0; o < width[l + 1]; o++) {
        double s = w[2 * l + 1][o];
        for (int k = 0; k < width[l]; k++) s += w[2 * l][o * width[l] + k] * a[k];
        b[o] = l < 2 ? 0.5 * s * (1 + tanh(sqrt(2 / M_PI) * (s + 0.044715 * s * s * s))) : s;
      }
      memcpy(a, b, sizeof b);
    }
    double mx = fmax(fmax(a[0], a[1]), a[2]), se = exp(a[0] - mx) + exp(a[1] - mx) + exp(a[2] - mx);
    total += mx + log(se) - a[t[r]];
  }
  return total / N;
}

static void test_mlp(void **state) {
  (void)state;
  hl_mlp_config c = {.n_in = 6, .n_out = 3, .n_hidden = 2, .hidden = {5, 4}, .act = HL_ACT_GELU};
  assert_int_equal(hl_mlp_param_count(&c), 5 * 7 + 4 * 6 + 3 * 5);
  for (int p = 0; p < HL_WEIGHT_POLICIES; p++) {
    uint64_t before = hl_cpu_live_bytes();
    hl_mlp *m = hl_mlp_new(&c, (hl_weight_policy)p, HL_DEVICE_CPU, 1);
    OK(m);
    assert_int_equal(hl_cpu_live_bytes() - before, hl_mlp_param_bytes(&c, (hl_weight_policy)p));
    hl_mlp_free(m);
  }
  hl_mlp *m = hl_mlp_new(&c, HL_WEIGHTS_FP32, HL_DEVICE_CPU, 1);
  OK(m);
  const char *names[6] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"};
  assert_int_equal(m->params.n, 6);
  for (int i = 0; i < 6; i++) assert_string_equal(m->params.items[i].name, names[i]);
  /* PyTorch's Linear init: uniform within 1/sqrt(fan_in) */
  double mean, std, lo, hi;
  moments(m->fc[0].weight, &mean, &std, &lo, &hi);
  assert_true(lo >= -1 / sqrt(6.0) && hi <= 1 / sqrt(6.0) && hi - lo > 1.0 / sqrt(6.0));

  /* forward against plain loops, and gradients by central differences of them */
  const int N = 4;
  hl_tensor *x = hl_randn(HL_SHAPE(N, 6), 0, 1, 3, 0, HL_F32, HL_DEVICE_CPU);
  int32_t tv[4] = {0, 2, 1, 2};
  hl_tensor *t = hl_from_i32(HL_SHAPE(N), tv, HL_I32, HL_DEVICE_CPU);
  hl_tensor *logits = NULL;
  hl_tensor *loss = hl_mlp_loss(m, x, t, &logits);
  OK(loss);
  assert_int_equal(logits->shape[0], N);
  assert_int_equal(logits->shape[1], 3);
  double *xv = hl_tensor_values(x), *w[6];
  for (int i = 0; i < 6; i++) w[i] = param_values(&m->params.items[i]);
  assert_true(fabs(hl_item(loss) - ref_mlp_loss(w, xv, tv, N)) <= 1e-5 * hl_item(loss));
  OK(hl_backward(loss, NULL, false));
  for (int i = 0; i < 6; i++) {
    double *g = hl_tensor_values(hl_tensor_grad(m->params.items[i].tensor));
    int64_t n = hl_numel(m->params.items[i].tensor);
    for (int64_t k = 0; k < n; k += 3) {
      double saved = w[i][k];
      w[i][k] = saved + 1e-6;
      double up = ref_mlp_loss(w, xv, tv, N);
      w[i][k] = saved - 1e-6;
      double down = ref_mlp_loss(w, xv, tv, N);
      w[i][k] = saved;
      double want = (up - down) / 2e-6;
      if (fabs(g[k] - want) > 1e-3 * fabs(want) + 1e-6)
        fail_msg("%s[%lld]: autograd %.9g, central difference %.9g", m->params.items[i].name, (long long)k, g[k], want);
    }
    free(g);
  }
  for (int i = 0; i < 6; i++) free(w[i]);
  free(xv);
  hl_release(logits);
  hl_release(loss);
  hl_release(x);
  hl_release(t);
  hl_mlp_free(m);
  char why[128];
  c.n_hidden = 9;
  assert_false(hl_mlp_config_check(&c, why, sizeof why));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpt2_counts_and_bytes),
      cmocka_unit_test(test_gpt2_built),
      cmocka_unit_test(test_names_in_hf_order),
      cmocka_unit_test(test_policies),
      cmocka_unit_test(test_init_deterministic_and_same_across_policies),
      cmocka_unit_test(test_init_statistics),
      cmocka_unit_test(test_quantize_by_hand),
      cmocka_unit_test(test_save_load),
      cmocka_unit_test(test_load_refuses_nonfinite),
      cmocka_unit_test(test_mlp),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
