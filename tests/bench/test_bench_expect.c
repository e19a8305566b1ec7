/* test_bench_expect.c — suite unit: an expectation (bench/bench.h
 * bench_expect) passes exactly between its bounds, on both sides, a missing
 * bound bounding nothing and a NaN value never passing; the rows written
 * follow the expectations' column table, with empty bounds where there are
 * none and the reason of each. */
#include <math.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "tests/support/hltest.h"

static const bench_device cpu = {.kind = HL_DEVICE_CPU, .name = "cpu"};

static void test_bounds_on_both_sides(void **state) {
  (void)state;
  bench_expectations e = {.schema = &bench_bandwidth_expectations_schema};
  /* value, low, high: PASS? */
  static const struct {
    double value, low, high;
    bool pass;
  } cases[] = {
      {1.95, 1.8, 2.1, true},  {2.1, 1.8, 2.1, true},  {1.8, 1.8, 2.1, true}, {2.3, 1.8, 2.1, false},
      {1.7, 1.8, 2.1, false},  {1.15, NAN, 1.10, false}, {1.05, NAN, 1.10, true}, {-5, NAN, 1.10, true},
      {0.5, 0.8, NAN, false},  {90, 0.8, NAN, true},    {NAN, 0.8, 1.1, false}, {NAN, NAN, NAN, false},
  };
  const int n = (int)(sizeof cases / sizeof cases[0]);
  int passes = 0;
  for (int i = 0; i < n; i++) {
    bench_expect(&e, &cpu, "a ratio", cases[i].value, cases[i].low, cases[i].high, "detail", "the reason");
    passes += cases[i].pass;
  }
  assert_int_equal(e.pass, passes);
  assert_int_equal(e.miss, n - passes);
  bench_expect_info(&e, &cpu, "beside", 3.0, "detail", "why it is shown");
  bench_expect_skip(&e, &cpu, "skipped", "not run", "why it would apply");
  assert_int_equal(e.skip, 1);

  char *dir = hl_tmpdir();
  bench_expectations_write(&e, dir);
  hl_table *t = hl_table_read(hl_path(dir, "bandwidth_expectations.csv"));
  assert_non_null(t);
  assert_int_equal(t->nrows, n + 2);
  for (int i = 0; i < n; i++) {
    assert_string_equal(hl_table_get(t, i, "status"), cases[i].pass ? "PASS" : "MISS");
    assert_int_equal(hl_table_get(t, i, "low")[0] == '\0', isnan(cases[i].low));
    assert_int_equal(hl_table_get(t, i, "high")[0] == '\0', isnan(cases[i].high));
    assert_string_equal(hl_table_get(t, i, "reason"), "the reason");
  }
  assert_string_equal(hl_table_get(t, n, "status"), "INFO");
  assert_string_equal(hl_table_get(t, n, "low"), "");
  assert_string_equal(hl_table_get(t, n + 1, "status"), "SKIP");
  assert_string_equal(hl_table_get(t, n + 1, "value"), "");
  assert_string_equal(hl_table_get(t, n + 1, "reason"), "why it would apply");
  hl_table_free(t);
  hl_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bounds_on_both_sides),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
