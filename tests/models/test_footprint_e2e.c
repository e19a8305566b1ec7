/* test_footprint_e2e.c — suite e2e: halflab-bench footprint on the CPU,
 * its CSV read back: GPT-2 124M's 124,439,808 parameters and their bytes
 * per policy (analytic = allocator to the byte; the process RSS within 1%
 * + 4 MiB of the analytic figure), the training state of every mode, the
 * measured step against the analytic one; both CSVs as their column tables
 * (bench/schemas.c) say, the unmeasured cells empty; the --list output; and bad
 * input refused with one line, exit status 2 and no file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bench/schema_check.h"
#include "tests/support/hltest.h"

static const char *bench(void) { return hl_test_prog("halflab-bench"); }


static void test_cpu_run(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s footprint --device cpu --quick --out %s", bench(), dir);
  hl_table *p = hl_table_read(hl_path(dir, "footprint_params.csv"));
  assert_non_null(p);
  assert_int_equal(p->nrows, 4);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "footprint_params.csv"), &bench_footprint_params_schema), 4);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "footprint_training.csv"), &bench_footprint_training_schema), 10);
  const char *policy[4] = {"fp32", "fp16", "bf16", "int8"};
  /* docs/models.md's figures; int8 worked out in tests/models/test_params.c */
  const double bytes[4] = {497759232, 248879616, 248879616, 164353536};
  for (int i = 0; i < 4; i++) {
    int row = hl_table_find(p, "model", "gpt2-124m", "policy", policy[i], NULL);
    assert_true(row >= 0);
    assert_true(hl_table_num(p, row, "params") == 124439808);
    assert_true(hl_table_num(p, row, "analytic_bytes") == bytes[i]);
    assert_true(hl_table_num(p, row, "allocator_bytes") == bytes[i]);
    assert_string_equal(hl_table_get(p, row, "independent_method"), "rss");
    const double rss = hl_table_num(p, row, "independent_bytes");
    if (fabs(rss - bytes[i]) > 0.01 * bytes[i] + 4.0 * 1048576)
      fail_msg("%s: resident bytes grew by %.0f, the parameters are %.0f bytes", policy[i], rss, bytes[i]);
    assert_true(hl_table_num(p, row, "tensors") == (i == 3 ? 148 + 48 : 148)); /* int8: + the 48 row-scale tensors */
  }
  assert_non_null(strstr(p->meta, "# independent: rss"));
  hl_table_free(p);

  hl_table *t = hl_table_read(hl_path(dir, "footprint_training.csv"));
  assert_non_null(t);
  const char *modes[5] = {"fp32", "amp-fp16", "amp-bf16", "fp16-master", "fp16-pure"};
  assert_int_equal(t->nrows, 10); /* 5 modes at 8 x 1024 (analytic) and at the measured 1 x 16 */
  for (int m = 0; m < 5; m++) {
    int a = hl_table_find(t, "mode", modes[m], "measured", "0", NULL);
    int s = hl_table_find(t, "mode", modes[m], "measured", "1", NULL);
    assert_true(a >= 0 && s >= 0);
    assert_string_equal(hl_table_get(t, a, "alloc_peak_bytes"), ""); /* not measured: empty, never 0 */
    assert_true(hl_table_num(t, a, "batch") == 8 && hl_table_num(t, a, "seq") == 1024);
    assert_true(hl_table_num(t, s, "batch") == 1 && hl_table_num(t, s, "seq") == 16);
    const bool half = m >= 3, master = m == 3;
    assert_true(hl_table_num(t, a, "weights_bytes") == (half ? 248879616 : 497759232));
    assert_true(hl_table_num(t, a, "master_bytes") == (master ? 497759232 : 0));
    assert_true(hl_table_num(t, a, "moments_bytes") == (m == 4 ? 2 * 248879616.0 : 2 * 497759232.0)); /* AdamW */
    assert_true(hl_table_num(t, a, "max_batch") >= 0);
    assert_true(hl_table_num(t, a, "peak_bytes") > hl_table_num(t, a, "activations_bytes"));
    /* the measured step: weights, masters and gradients to the byte; the optimizer's moments within 1 KiB
     * (core/training/optim.h also keeps a few counters on the device); the bytes forward left for backward within 1%
     * and the step's peak within 5% of the analytic figures */
    const char *exact[4][2] = {{"weights_bytes", "alloc_weights_bytes"}, {"master_bytes", "alloc_master_bytes"},
                               {"gradients_bytes", "alloc_gradients_bytes"}, {"moments_bytes", "alloc_moments_bytes"}};
    for (int k = 0; k < 4; k++)
      if (fabs(hl_table_num(t, s, exact[k][0]) - hl_table_num(t, s, exact[k][1])) > (k == 3 ? 1024 : 0))
        fail_msg("%s: %s %.0f, measured %.0f", modes[m], exact[k][0], hl_table_num(t, s, exact[k][0]), hl_table_num(t, s, exact[k][1]));
    const double saved = hl_table_num(t, s, "weight_casts_bytes") + hl_table_num(t, s, "activations_bytes");
    assert_true(fabs(hl_table_num(t, s, "alloc_saved_bytes") - saved) <= 0.01 * saved);
    assert_true(fabs(hl_table_num(t, s, "alloc_peak_bytes") - hl_table_num(t, s, "peak_bytes")) <= 0.05 * hl_table_num(t, s, "peak_bytes"));
    assert_string_equal(hl_table_get(t, a, "alloc_peak_bytes"), "");
  }
  hl_table_free(t);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

/* A shape of one's own beside GPT-2, a memory given, and one optimizer. */
static void test_custom_shape(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s footprint --device cpu --layers 2 --heads 4 --embd 64 --vocab 500 --block 32 "
                              "--policies fp32,int8 --modes fp32,fp16-pure --optimizer sgd-momentum --batch 4 "
                              "--memory 16GiB --measure-batch 2 --measure-seq 32 --out %s",
                              bench(), dir);
  hl_table *p = hl_table_read(hl_path(dir, "footprint_params.csv"));
  assert_non_null(p);
  assert_int_equal(p->nrows, 4);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "footprint_params.csv"), &bench_footprint_params_schema), 4);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "footprint_training.csv"), &bench_footprint_training_schema), 8);
  int row = hl_table_find(p, "model", "custom", "policy", "fp32", NULL);
  assert_true(row >= 0);
  /* 500x64 + 32x64 + 2 x (12x64x64 + 13x64) + 2x64 */
  const double params = 500 * 64 + 32 * 64 + 2 * (12 * 64 * 64 + 13 * 64) + 2 * 64;
  assert_true(hl_table_num(p, row, "params") == params);
  assert_true(hl_table_num(p, row, "analytic_bytes") == 4 * params);
  hl_table_free(p);
  hl_table *t = hl_table_read(hl_path(dir, "footprint_training.csv"));
  assert_non_null(t);
  assert_int_equal(t->nrows, 8); /* 2 models x 2 modes x (analytic, measured) */
  int a = hl_table_find(t, "model", "custom", "mode", "fp16-pure", "measured", "0", NULL);
  assert_true(a >= 0);
  assert_true(hl_table_num(t, a, "seq") == 32 && hl_table_num(t, a, "batch") == 4);
  assert_true(hl_table_num(t, a, "memory_bytes") == 16.0 * 1073741824);
  assert_true(hl_table_num(t, a, "moments_bytes") == 2 * params); /* one fp16 momentum buffer */
  assert_string_equal(hl_table_get(t, a, "optimizer"), "sgd-momentum");
  hl_table_free(t);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

static void test_list(void **state) {
  (void)state;
  hl_run_result r = hl_run_ok("%s footprint --list --policies int8", bench());
  /* the usual int8 listing: embeddings fp16, layer norms fp32, projections int8, their biases fp16 */
  const char *lines[] = {"f16   transformer.wte.weight", "f16   transformer.wpe.weight",
                         "f32   transformer.h.0.ln_1.weight", "f32   transformer.h.0.ln_1.bias",
                         "i8    transformer.h.0.attn.c_attn.weight", "f16   transformer.h.0.attn.c_attn.bias",
                         "i8    transformer.h.11.mlp.c_proj.weight", "f32   transformer.ln_f.bias", NULL};
  for (int i = 0; lines[i]; i++)
    if (!strstr(r.out, lines[i])) fail_msg("--list lacks \"%s\"", lines[i]);
  assert_non_null(strstr(r.out, "148 parameters, 124,439,808 elements, 164,353,536 bytes"));
  assert_non_null(strstr(r.out, "[2304,768]"));
  assert_non_null(strstr(r.out, "+ f32 row scales [2304]: 9,216"));
  int n = 0;
  for (const char *s = r.out; (s = strstr(s, " transformer.")); s++) n++;
  assert_int_equal(n, 148);
  hl_run_free(&r);
  r = hl_run("%s footprint --list", bench());
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "497,759,232 bytes"));
  assert_non_null(strstr(r.out, "248,879,616 bytes"));
  hl_run_free(&r);
}

/* Bad input: one line on stderr naming the problem, exit 2, nothing written. */
static void expect_bad(const char *args, const char *words) {
  char *dir = hl_tmpdir();
  hl_expect_refused(dir, 2, words, "%s footprint --device cpu --out %s/out %s", bench(), dir, args);
  hl_rmtree(dir);
  free(dir);
}

static void test_bad_input(void **state) {
  (void)state;
  expect_bad("--layers 0", "--layers");
  expect_bad("--layers -3", "--layers");
  expect_bad("--heads 5", "5 heads do not divide the width 768");
  expect_bad("--embd abc", "--embd");
  expect_bad("--vocab 0", "--vocab");
  expect_bad("--block 1x", "--block");
  expect_bad("--batch 0", "--batch");
  expect_bad("--seq 2048", "longer than gpt2-124m's block size 1024");
  expect_bad("--measure-seq 4096", "--measure-seq");
  expect_bad("--memory 0", "--memory");
  expect_bad("--memory 12XB", "--memory");
  expect_bad("--policies fp8", "fp8");
  expect_bad("--policies ,", "--policies");
  expect_bad("--modes fp64", "fp64");
  expect_bad("--optimizer lamb", "lamb");
  expect_bad("--reps 3", "--reps");
  expect_bad("--frobnicate", "frobnicate");
  expect_bad("--layers", "needs a value");
  expect_bad("stray", "stray");
  /* too large for this machine, refused before allocating */
  expect_bad("--layers 96 --heads 96 --embd 12288", "needs");
  expect_bad("--measure-batch 100000 --measure-seq 1024", "needs");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_list),
      cmocka_unit_test(test_custom_shape),
      cmocka_unit_test(test_cpu_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
