/* test_bench_quantize.c — suite e2e: halflab-bench quantize at a tiny size
 * on the CPU, its CSVs read back against their column tables and the bytes
 * and rates recomputed from the cells; bad input refused with nothing
 * written. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bench/schema_check.h"
#include "tests/support/hltest.h"

static const char *bench(void) { return hl_test_prog("halflab-bench"); }

enum { RECIPES = 16 };

static void test_quantize_tiny(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s quantize --device cpu --size 2MiB --reps 3 --out %s", bench(), dir);
  hl_table *t = hl_table_read(hl_path(dir, "quantize.csv"));
  assert_non_null(t);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "quantize.csv"), &bench_quantize_schema), t->nrows);
  const int copies = hl_table_find(t, "kernel", "copy-loop-nt", NULL) >= 0 ? 4 : 3;
  assert_int_equal(t->nrows, copies + 1 + RECIPES);
  assert_non_null(strstr(t->meta, "# codes: computed in software on the CPU"));
  const double n = 2.0 * 1048576 / 4; /* 128 x 4096 */
  double ref = 0;
  for (int i = 0; i < t->nrows; i++)
    if (!strcmp(hl_table_get(t, i, "unit"), "copy")) {
      assert_true(hl_table_num(t, i, "bytes_read") == 4 * n && hl_table_num(t, i, "bytes_written") == 4 * n);
      ref = fmax(ref, hl_table_num(t, i, "gb_per_s"));
    }
  int quantizers = 0;
  for (int i = 0; i < t->nrows; i++) {
    if (!strcmp(hl_table_get(t, i, "unit"), "copy")) continue;
    /* every quantizer's row says the CPU computed its codes in software */
    assert_non_null(strstr(hl_table_get(t, i, "unit"), "software codes"));
    assert_true(hl_table_num(t, i, "rows") == 128 && hl_table_num(t, i, "cols") == 4096);
    const double moved = hl_table_num(t, i, "bytes_read") + hl_table_num(t, i, "bytes_written");
    const double gb_per_s = hl_table_num(t, i, "gb_per_s");
    assert_true(fabs(gb_per_s - moved / (hl_table_num(t, i, "time_ms_median") * 1e-3) / 1e9) < 1e-3 * gb_per_s);
    assert_true(fabs(hl_table_num(t, i, "ref_gb_per_s") - ref) < 1e-3 * ref);
    assert_true(fabs(hl_table_num(t, i, "ref_ratio") - gb_per_s / ref) < 1e-3 * gb_per_s / ref);
    if (!strcmp(hl_table_get(t, i, "kernel"), "amax")) {
      assert_true(hl_table_num(t, i, "bytes_read") == 4 * n && hl_table_num(t, i, "bytes_written") == 0);
      continue;
    }
    quantizers++;
    /* codes one a byte, 4 bytes per block scale, 1 more per E8M0 or E4M3 code */
    const char *rule = hl_table_get(t, i, "rule"), *block = hl_table_get(t, i, "block");
    unsigned br = 0, bc = 0;
    const double blocks = !strcmp(block, "tensor") ? 1 : (sscanf(block, "%ux%u", &br, &bc), n / (br * bc));
    const bool coded = !strncmp(rule, "mx-", 3) || !strcmp(rule, "nvfp4");
    assert_true(hl_table_num(t, i, "bytes_read") == 4 * n);
    assert_true(hl_table_num(t, i, "bytes_written") == n + blocks * (coded ? 5 : 4));
    const bool amax_first = !strcmp(rule, "tensor") || !strcmp(rule, "nvfp4");
    assert_string_equal(hl_table_get(t, i, "amax_first"), amax_first ? "yes" : "no");
  }
  assert_int_equal(quantizers, RECIPES);
  assert_non_null(hl_table_find(t, "format", "mxfp4", "block", "32x1", NULL) >= 0 ? "" : NULL);
  /* 2 MiB is inside the caches: every expectation skipped, the amax pass reported */
  hl_table *e = hl_table_read(hl_path(dir, "quantize_expectations.csv"));
  assert_non_null(e);
  assert_int_equal(expect_csv_follows_schema(hl_path(dir, "quantize_expectations.csv"),
                                             &bench_quantize_expectations_schema), RECIPES + 1);
  for (int i = 0; i < RECIPES; i++) assert_string_equal(hl_table_get(e, i, "status"), "SKIP");
  assert_string_equal(hl_table_get(e, RECIPES, "status"), "INFO");
  hl_table_free(t), hl_table_free(e);
  hl_run_free(&r);
  hl_rmtree(dir);
  free(dir);
}

static void expect_refused(const char *args, const char *needle) {
  char *dir = hl_tmpdir();
  hl_expect_refused(dir, 2, needle, "%s quantize --device cpu --out %s %s", bench(), dir, args);
  hl_rmtree(dir);
  free(dir);
}

static void test_bad_input(void **state) {
  (void)state;
  expect_refused("--size 3MiB", "multiple of 2 MiB");
  expect_refused("--size 1KiB", "--size");
  expect_refused("--size lots", "not a size");
  expect_refused("--size 1TiB", "needs");
  expect_refused("--reps 0", "--reps");
  expect_refused("--bogus", "unknown option");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_quantize_tiny), cmocka_unit_test(test_bad_input)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
