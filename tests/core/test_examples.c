/* test_examples.c — suite e2e: the examples run, check themselves (exit 0)
 * and print the dtypes the recipes promise; halflab-bench mlp-step
 * runs at a small size and writes its CSV; bad input is refused with
 * exit 2 and no file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/hltest.h"

/* runs the program with args on the CPU; asserts exit 0 and returns stdout */
static void has_line(const char *out, const char *a, const char *b) {
  if (!hl_has_line(out, a, b)) fail_msg("no line with \"%s\" and \"%s\" in:\n%s", a, b, out);
}

static void test_autocast_matrix(void **state) {
  (void)state;
  char *out = hl_run_cpu_ok("autocast-matrix", "");
  has_line(out, "in autocast:  e = mm(a_f32, b_f32)", "f16 cpu");
  has_line(out, "in autocast:  f = mm(d_f32, e_f16)", "f16 cpu");
  has_line(out, "out autocast: mm(d_f32, f_f16)", "refused: mm: dtype mismatch: f32[8,8] and f16[8,8]");
  has_line(out, "out autocast: g = mm(d_f32, to_f32(f_f16))", "f32 cpu");
  has_line(out, "default (cpu)", "bf16 cpu");
  free(out);
  /* --trace-ops shows the casts and the policy on stderr */
  hl_run_result r = hl_run("'%s' --device cpu --trace-ops", hl_test_prog("autocast-matrix"));
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.err, "trace: mm"));
  assert_non_null(strstr(r.err, "autocast cpu f16: lower precision"));
  assert_non_null(strstr(r.err, "(autocast cast)"));
  hl_run_free(&r);
}

static void test_autocast_nested(void **state) {
  (void)state;
  char *out = hl_run_cpu_ok("autocast-nested", "--seed 7");
  has_line(out, "enabled:       e = mm(a_f32, b_f32)", "f16 cpu");
  has_line(out, "disabled:      mm(c_f32, e_f16)", "refused");
  has_line(out, "disabled:      f = mm(c_f32, to_f32(e_f16))", "f32 cpu");
  has_line(out, "enabled again: g = mm(d_f32, f_f32)", "f16 cpu");
  free(out);
}

static void test_autocast_model(void **state) {
  (void)state;
  char *out = hl_run_cpu_ok("autocast-model", "");
  has_line(out, "decorated forward: logits", "bf16 cpu");
  has_line(out, "gradient of the fp32 weight w1", "f32 cpu");
  has_line(out, "loss over 40 SGD steps", "->");
  free(out);
}

static void test_custom_op(void **state) {
  (void)state;
  char *out = hl_run_cpu_ok("custom-op", "");
  has_line(out, "my_mm(a_f32, b_f16), cast_inputs f32", "f32 cpu");
  has_line(out, "autocast seen inside my_mm's forward", "off");
  has_line(out, "autocast seen inside my_mm's backward", "off");
  has_line(out, "gradient of b (f16 input, through the cast)", "f16 cpu");
  has_line(out, "gradient of a", "matches the fp32 reference");
  free(out);
}

static void test_examples_bad_input(void **state) {
  (void)state;
  const char *progs[] = {"autocast-matrix", "autocast-nested", "autocast-model", "custom-op"};
  for (int i = 0; i < 4; i++) {
    hl_expect_refused(NULL, 2, "--bogus", "'%s' --bogus", hl_test_prog(progs[i]));
    hl_expect_refused(NULL, 2, NULL, "'%s' --device tpu", hl_test_prog(progs[i]));
    hl_run_result r = hl_run("'%s' --help", hl_test_prog(progs[i]));
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "--trace-ops"));
    hl_run_free(&r);
  }
}

/* mlp_step.csv's four rows (direct and core, fp32 and bf16) and the two
 * expectations. The bf16 rows are measured exactly where the run's `# onednn:`
 * line says the core's bf16 products run on oneDNN's matmul, else not run
 * with a reason containing `reason` (NULL: any). */
static void check_mlp_step(const char *dir, const char *out, const char *reason) {
  hl_table *t = hl_table_read(hl_path(dir, "mlp_step.csv"));
  assert_non_null(t);
  assert_int_equal(t->nrows, 4);
  const bool onednn = strstr(t->meta, "bf16 GEMMs on its matmul primitive") != NULL;
  const bool bf16_runs = onednn && !reason;
  for (int i = 0; i < 4; i++) assert_true(hl_table_num(t, i, "batch") == 16);
  const char *impls[2] = {"direct", "core"};
  for (int k = 0; k < 2; k++) {
    const int f = hl_table_find(t, "impl", impls[k], "precision", "fp32", NULL);
    const int b = hl_table_find(t, "impl", impls[k], "precision", "bf16", NULL);
    assert_true(f >= 0 && b >= 0);
    assert_true(hl_table_num(t, f, "time_ms_median") > 0 && hl_table_num(t, f, "ratio_to_direct") > 0);
    assert_string_equal(hl_table_get(t, f, "note"), "");
    if (bf16_runs) {
      assert_true(hl_table_num(t, b, "time_ms_median") > 0 && hl_table_num(t, b, "ratio_to_direct") > 0);
      assert_string_equal(hl_table_get(t, b, "note"), "");
    } else {
      /* not faked: no numbers, and why */
      assert_string_equal(hl_table_get(t, b, "time_ms_median"), "");
      assert_string_equal(hl_table_get(t, b, "ratio_to_direct"), "");
      const char *note = hl_table_get(t, b, "note");
      if (strncmp(note, "not run: ", 9) || (reason && !strstr(note, reason)))
        fail_msg("the bf16 row's note should say why it did not run%s%s: '%s'", reason ? ": " : "",
                 reason ? reason : "", note);
    }
  }
  hl_table_free(t);
  if (bf16_runs) assert_non_null(strstr(out, "(bf16 autocast; median step times)"));
  else assert_non_null(strstr(out, "bf16 step not run: "));
  hl_table *g = hl_table_read(hl_path(dir, "mlp_step_expectations.csv"));
  assert_non_null(g);
  assert_int_equal(g->nrows, 2);
  const char *bf16_status = hl_table_get(g, 1, "status");
  assert_non_null(strstr(hl_table_get(g, 1, "expectation"), "bf16"));
  if (bf16_runs) assert_true(!strcmp(bf16_status, "PASS") || !strcmp(bf16_status, "MISS"));
  else assert_string_equal(bf16_status, "SKIP");
  hl_table_free(g);
}

static void test_mlp_step(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("'%s' mlp-step --batch 16 --reps 2 --quick --out '%s'", hl_test_prog("halflab-bench"), dir);
  assert_non_null(strstr(r.out, "core / direct:"));
  check_mlp_step(dir, r.out, NULL);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
  /* without the CPU's bf16 units the core's bf16 products widen to sgemm: no bf16 pair to compare */
  dir = hl_tmpdir();
  r = hl_run_ok("HALFLAB_CPU_UNITS=portable '%s' mlp-step --batch 16 --reps 2 --quick --out '%s'",
                hl_test_prog("halflab-bench"), dir);
  check_mlp_step(dir, r.out, "HALFLAB_CPU_UNITS=portable");
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
  /* bad input: exit 2, one line, nothing written */
  dir = hl_tmpdir();
  const char *bad[] = {"--batch 0", "--batch x", "--device tpu", "--frobnicate"};
  for (int i = 0; i < 4; i++)
    hl_expect_refused(dir, 2, NULL, "'%s' mlp-step %s --out '%s'", hl_test_prog("halflab-bench"), bad[i], dir);
  /* --device cuda where no GPU is usable: a runtime failure (exit 1), one line, nothing written
   * (with a GPU, suite gpu runs mlp-step on it) */
  r = hl_run("'%s' mlp-step --device cuda --batch 16 --reps 2 --quick --out '%s'", hl_test_prog("halflab-bench"), dir);
  if (r.status != 0) {
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "--device cuda"));
    assert_int_equal(hl_count_files(dir), 0);
  }
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

/* The DataParallel lesson: threads that do not enter autocast run
 * in fp32 (no cast at all), threads that do give the lower precision, and
 * their gathered outputs are the single-thread forward's. Also with shards
 * of uneven and of single rows, and on the widening path, where the shards
 * are compared within a tolerance instead of bit for bit. */
static void test_dp_threads(void **state) {
  (void)state;
  char *out = hl_run_cpu_ok("dp-threads", "");
  has_line(out, "2 threads, 64 rows", "autocast dtype: bf16");
  has_line(out, "main thread, all 64 rows: output", "bf16 cpu");
  has_line(out, "thread 0 sees autocast", "off, 0 casts made");
  has_line(out, "thread 1 sees autocast", "off, 0 casts made");
  has_line(out, "thread 0, rows 0-31: output", "f32 cpu");
  has_line(out, "thread 1, rows 32-63: output", "f32 cpu");
  has_line(out, "thread 0 sees autocast", "on (bf16), 5 casts made");
  has_line(out, "thread 0, rows 0-31: output", "bf16 cpu");
  has_line(out, "thread 1, rows 32-63: output", "bf16 cpu");
  has_line(out, "gathered outputs", "bf16 cpu");
  /* bit for bit where the products run on oneDNN (a CPU with bf16 units) */
  if (hl_has_line(out, "products", "on oneDNN's matmul"))
    has_line(out, "gathered vs the main thread's autocast forward", "bit for bit equal (1024 elements)");
  has_line(out, "gradient of fc1.weight", "f32 cpu");
  has_line(out, "fc2.bias: threaded vs single-thread step", "(bound 0.0156)");
  free(out);
  /* 5 threads: shards of 12 and 13 rows; 64: a row each */
  out = hl_run_cpu_ok("dp-threads", "--threads 5 --seed 3");
  has_line(out, "thread 4 sees autocast", "off, 0 casts made");
  has_line(out, "thread 4, rows 51-63: output", "f32 cpu");
  has_line(out, "thread 4, rows 51-63: output", "bf16 cpu");
  free(out);
  out = hl_run_cpu_ok("dp-threads", "--threads 64");
  has_line(out, "thread 63, rows 63-63: output", "bf16 cpu");
  free(out);
  /* the widening path: shards within the stated tolerance */
  hl_run_result r = hl_run_ok("HALFLAB_CPU_UNITS=portable '%s' --device cpu --threads 3", hl_test_prog("dp-threads"));
  has_line(r.out, "products", "not all on oneDNN's matmul: a stated tolerance");
  has_line(r.out, "thread 2, rows 42-63: output", "bf16 cpu");
  hl_run_free(&r);
}

static void test_dp_threads_bad_input(void **state) {
  (void)state;
  const char *prog = hl_test_prog("dp-threads");
  hl_expect_refused(NULL, 2, "--threads: 0 is out of range (1 to 64)", "'%s' --threads 0", prog);
  hl_expect_refused(NULL, 2, "--threads: 65 is out of range (1 to 64)", "'%s' --threads 65", prog);
  hl_expect_refused(NULL, 2, "--threads: '-1': no sign", "'%s' --threads -1", prog);
  hl_expect_refused(NULL, 2, "--threads: '2x' is not an integer", "'%s' --threads 2x", prog);
  hl_expect_refused(NULL, 2, "--threads: empty value", "'%s' --threads ''", prog);
  hl_expect_refused(NULL, 2, "option '--threads' needs a value", "'%s' --threads", prog);
  hl_expect_refused(NULL, 2, "--bogus", "'%s' --bogus", prog);
  hl_expect_refused(NULL, 2, NULL, "'%s' --device tpu", prog);
  hl_expect_refused(NULL, 2, "unexpected argument 'extra'", "'%s' extra", prog);
  hl_run_result r = hl_run("'%s' --help", prog);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "--threads N"));
  assert_non_null(strstr(r.out, "--trace-ops"));
  hl_run_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_autocast_matrix), cmocka_unit_test(test_autocast_nested),
      cmocka_unit_test(test_autocast_model),  cmocka_unit_test(test_custom_op),
      cmocka_unit_test(test_examples_bad_input), cmocka_unit_test(test_mlp_step),
      cmocka_unit_test(test_dp_threads),      cmocka_unit_test(test_dp_threads_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
