/* test_examples.c — suite e2e: the examples run, check themselves (exit 0)
 * and print the dtypes the seed's recipes promise; halflab-bench mlp-step
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

static void test_mlp_step(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("'%s' mlp-step --batch 16 --reps 2 --quick --out '%s'", hl_test_prog("halflab-bench"), dir);
  assert_non_null(strstr(r.out, "core / direct:"));
  hl_run_free(&r);
  hl_table *t = hl_table_read(hl_path(dir, "mlp_step.csv"));
  assert_non_null(t);
  assert_int_equal(t->nrows, 2);
  for (int i = 0; i < 2; i++) {
    assert_true(hl_table_num(t, i, "time_ms_median") > 0);
    assert_true(hl_table_num(t, i, "batch") == 16);
  }
  assert_true(hl_table_find(t, "impl", "core", NULL) >= 0 && hl_table_find(t, "impl", "direct", NULL) >= 0);
  hl_table_free(t);
  assert_true(hl_file_exists(hl_path(dir, "mlp_step_targets.csv")));
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_autocast_matrix), cmocka_unit_test(test_autocast_nested),
      cmocka_unit_test(test_autocast_model),  cmocka_unit_test(test_custom_op),
      cmocka_unit_test(test_examples_bad_input), cmocka_unit_test(test_mlp_step),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
