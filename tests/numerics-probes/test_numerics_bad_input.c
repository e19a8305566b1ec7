/* test_numerics_bad_input.c — suite e2e: halflab-numerics refuses bad input
 * with one line naming the problem and exit status 2, and writes nothing:
 * neither the default results folder nor the --out folder gains a file, and
 * a CSV already there keeps its bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/hltest.h"

static const char sentinel[] = "an earlier run's overflow.csv\n";

static void expect_sentinel(const char *path) {
  char *text = hl_read_file(path, NULL);
  assert_non_null(text);
  assert_string_equal(text, sentinel);
  free(text);
}

/* ARGS must fail with exit 2 and one stderr line containing `names`, twice:
 * run inside an empty folder with the default output folder (nothing may be
 * created there), and with --out a folder that holds an earlier CSV (it must
 * keep its bytes, and no other file may appear). */
static void refused(const char *args, const char *names) {
  const char *prog = hl_test_prog("halflab-numerics");
  char *cwd = hl_tmpdir(), *out = hl_tmpdir();
  char csv[4200];
  snprintf(csv, sizeof csv, "%s/overflow.csv", out);
  hl_write_file(csv, sentinel, strlen(sentinel));
  for (int with_out = 0; with_out < 2; with_out++) {
    /* cwd stays empty: no results/ folder */
    if (with_out) hl_expect_refused(cwd, 2, names, "cd '%s' && '%s' --out '%s' %s", cwd, prog, out, args);
    else hl_expect_refused(cwd, 2, names, "cd '%s' && '%s' %s", cwd, prog, args);
    assert_int_equal(hl_count_files(out), 1);
    expect_sentinel(csv);
  }
  hl_rmtree(cwd), hl_rmtree(out);
  free(cwd), free(out);
}

static void test_count_negative(void **s) { (void)s, refused("overflow --count -1", "--count: '-1': no sign"); }
static void test_count_zero(void **s) { (void)s, refused("overflow --count 0", "--count: 0"); }
static void test_count_not_a_number(void **s) { (void)s, refused("overflow --count abc", "'abc'"); }
static void test_count_too_large(void **s) { (void)s, refused("overflow --count 2147483648", "2147483648"); }
static void test_value_beyond_double(void **s) { (void)s, refused("overflow --value 1e999", "1e999"); }
static void test_value_nan(void **s) { (void)s, refused("overflow --value nan", "--value: nan"); }
static void test_value_beyond_fp32(void **s) { (void)s, refused("overflow --value 1e39", "1e39"); }
static void test_formats_value_not_a_number(void **s) { (void)s, refused("formats --value xyz", "'xyz'"); }
static void test_unknown_subcommand(void **s) { (void)s, refused("frobnicate", "'frobnicate'"); }
static void test_no_subcommand(void **s) { (void)s, refused("--quick", "no subcommand"); }
static void test_unknown_option(void **s) { (void)s, refused("overflow --bogus", "'--bogus'"); }
static void test_missing_option_value(void **s) { (void)s, refused("overflow --count", "'--count' needs a value"); }
static void test_option_for_another_subcommand(void **s) { (void)s, refused("absorption --count 5", "--count"); }
static void test_unknown_device(void **s) { (void)s, refused("tour --device tpu", "tpu"); }
static void test_bad_seed(void **s) { (void)s, refused("tour --seed -3", "--seed"); }
static void test_columns_md_with_subcommand(void **s) { (void)s, refused("--columns-md all", "--columns-md"); }

/* An --out folder that cannot be made: its parent is a regular file (this
 * holds for root too, for whom permission bits stop nothing). */
static void test_out_under_a_file(void **state) {
  (void)state;
  const char *prog = hl_test_prog("halflab-numerics");
  char *dir = hl_tmpdir();
  char file[4200];
  snprintf(file, sizeof file, "%s/not-a-folder", dir);
  hl_write_file(file, sentinel, strlen(sentinel));
  hl_expect_refused(dir, 2, "not-a-folder/results", "cd '%s' && '%s' overflow --out '%s/results'", dir, prog, file);
  expect_sentinel(file);
  hl_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_count_negative),        cmocka_unit_test(test_count_zero),
      cmocka_unit_test(test_count_not_a_number),    cmocka_unit_test(test_count_too_large),
      cmocka_unit_test(test_value_beyond_double),   cmocka_unit_test(test_value_nan),
      cmocka_unit_test(test_value_beyond_fp32),     cmocka_unit_test(test_formats_value_not_a_number),
      cmocka_unit_test(test_unknown_subcommand),    cmocka_unit_test(test_no_subcommand),
      cmocka_unit_test(test_unknown_option),        cmocka_unit_test(test_missing_option_value),
      cmocka_unit_test(test_option_for_another_subcommand), cmocka_unit_test(test_unknown_device),
      cmocka_unit_test(test_bad_seed),              cmocka_unit_test(test_out_under_a_file),
      cmocka_unit_test(test_columns_md_with_subcommand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
