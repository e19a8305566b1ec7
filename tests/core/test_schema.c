/* test_schema.c — suite unit: cli/schema.h. A row is written only when
 * every column is set once with its type; headers, unit lines and the docs
 * come from the same table; values are written one way. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/csv.h"
#include "cli/schema.h"
#include "tests/support/hltest.h"

static const hl_column demo_columns[] = {
    {"m", "1", HL_COL_INT, NULL, "rows of A", "tests: demo"},
    {"flop", "flop", HL_COL_INT, NULL, "floating-point operations", "tests: demo"},
    {"time_ms", "ms", HL_COL_REAL, "%.4f", "time of one product", "tests: demo"},
    {"dtype", "", HL_COL_TEXT, NULL, "the storage type", "tests: demo"},
};
static const hl_schema demo = {"demo.csv", "test", "tests: demo", "One product per row.",
                               HL_SCHEMA_COLUMNS(demo_columns)};

static void test_header_units_row(void **state) {
  (void)state;
  char header[256], units[256];
  hl_schema_header(&demo, header, sizeof header);
  assert_string_equal(header, "m,flop,time_ms,dtype");
  hl_schema_units(&demo, units, sizeof units);
  assert_string_equal(units, "m=1,flop=flop,time_ms=ms");
  hl_row r;
  hl_row_begin(&r, &demo);
  hl_row_text(&r, "dtype", "bf16"); /* any order */
  hl_row_int(&r, "m", 4096);
  hl_row_int(&r, "flop", INT64_C(17179869184)); /* exactly, never 1.71799e+10 */
  hl_row_real(&r, "time_ms", 1.5);
  assert_string_equal(hl_row_line(&r), "4096,17179869184,1.5000,bf16");
  /* one way for each kind of non-number and for a gap */
  hl_row_begin(&r, &demo);
  hl_row_int(&r, "m", -1);
  hl_row_missing(&r, "flop");
  hl_row_real(&r, "time_ms", NAN);
  hl_row_text(&r, "dtype", "fp32");
  assert_string_equal(hl_row_line(&r), "-1,,nan,fp32");
  hl_row_begin(&r, &demo);
  hl_row_int(&r, "m", 0);
  hl_row_int(&r, "flop", 0);
  hl_row_real(&r, "time_ms", -INFINITY);
  hl_row_textf(&r, "dtype", "%s%d", "fp", 16);
  assert_string_equal(hl_row_line(&r), "0,0,-inf,fp16");
  /* a long double keeps a product a double cannot (2^31 - 1 times fp32's 0.1: 55 bits) */
  static const hl_column exact_columns[] = {{"exact_sum", "1", HL_COL_REAL, "%.17g", "count x addend", "tests"}};
  static const hl_schema exact = {"exact.csv", "test", "tests", "One sum.", HL_SCHEMA_COLUMNS(exact_columns)};
  hl_row_begin(&r, &exact);
  hl_row_real_long(&r, "exact_sum", 2147483647.0L * (double)0.1f);
  assert_string_equal(hl_row_line(&r), "214748367.9");
  hl_row_begin(&r, &exact);
  hl_row_real_long(&r, "exact_sum", -(long double)INFINITY);
  assert_string_equal(hl_row_line(&r), "-inf");
}

/* Each writer bug stops the program with the file and the column named. */
static hl_row bad;
static void unset_column(void) {
  hl_row_begin(&bad, &demo);
  hl_row_int(&bad, "m", 1);
  hl_row_int(&bad, "flop", 2);
  hl_row_text(&bad, "dtype", "x");
  hl_row_line(&bad);
}
static void set_twice(void) {
  hl_row_begin(&bad, &demo);
  hl_row_int(&bad, "m", 1);
  hl_row_int(&bad, "m", 1);
}
static void unknown_column(void) {
  hl_row_begin(&bad, &demo);
  hl_row_int(&bad, "n", 1);
}
static void wrong_type(void) {
  hl_row_begin(&bad, &demo);
  hl_row_real(&bad, "m", 1.0);
}
static void comma_in_text(void) {
  hl_row_begin(&bad, &demo);
  hl_row_text(&bad, "dtype", "a,b");
}
static const hl_column twice_columns[] = {
    {"a", "1", HL_COL_INT, NULL, "a", "tests"},
    {"a", "1", HL_COL_INT, NULL, "a again", "tests"},
};
static const hl_schema twice = {"twice.csv", "test", "tests", "x", HL_SCHEMA_COLUMNS(twice_columns)};
static void duplicate_name(void) { hl_row_begin(&bad, &twice); }
static const hl_column unitless_columns[] = {{"a", "", HL_COL_REAL, NULL, "a", "tests"}};
static const hl_schema unitless = {"unitless.csv", "test", "tests", "x", HL_SCHEMA_COLUMNS(unitless_columns)};
static void number_without_unit(void) { hl_row_begin(&bad, &unitless); }

static void test_writer_bugs_stop(void **state) {
  (void)state;
  static const struct {
    void (*fn)(void);
    const char *words;
  } cases[] = {
      {unset_column, "demo.csv: the row leaves column time_ms unset"},
      {set_twice, "demo.csv: the row sets column m twice"},
      {unknown_column, "demo.csv: the row sets column n, which the schema lacks"},
      {wrong_type, "demo.csv: column m is integer, and the row gives it a real"},
      {comma_in_text, "holds a comma"},
      {duplicate_name, "twice.csv: column a appears twice"},
      {number_without_unit, "unitless.csv: column a"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char err[1024];
    const int status = hl_child_stderr(cases[i].fn, "test", err, sizeof err);
    if (status != 1 || !strstr(err, cases[i].words))
      fail_msg("case %zu: status %d, stderr \"%s\", wanted \"%s\"", i, status, err, cases[i].words);
  }
}

/* The file carries the units line after the metadata, then the header. */
static void test_file_from_schema(void **state) {
  (void)state;
  char dir[] = "/tmp/hl_schema_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char err[512];
  hl_csv *c = hl_csv_open_schema(dir, NULL, &demo, HL_CSV_TABLE, err, sizeof err);
  assert_non_null(c);
  hl_row r;
  hl_row_begin(&r, &demo);
  hl_row_int(&r, "m", 8);
  hl_row_int(&r, "flop", 1024);
  hl_row_real(&r, "time_ms", 0.25);
  hl_row_text(&r, "dtype", "fp16");
  assert_true(hl_csv_put(c, &r));
  assert_true(hl_csv_close(c, err, sizeof err));
  char path[600];
  snprintf(path, sizeof path, "%s/demo.csv", dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char text[16384];
  const size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  assert_non_null(strstr(text, "\n# units: m=1,flop=flop,time_ms=ms\nm,flop,time_ms,dtype\n8,1024,0.2500,fp16\n"));
  hl_table *t = hl_table_read(path);
  assert_non_null(t);
  assert_int_equal(hl_table_col(t, "time_ms"), 2);
  hl_table_free(t);
  hl_rmtree(dir);
}

static void test_markdown(void **state) {
  (void)state;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  hl_schema_markdown(&demo, f);
  fclose(f);
  assert_non_null(strstr(text, "## demo.csv\n"));
  assert_non_null(strstr(text, "| `time_ms` | ms | real `%.4f` | time of one product | `tests: demo` |\n"));
  assert_non_null(strstr(text, "| `dtype` | - | text | the storage type | `tests: demo` |\n"));
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_units_row),
      cmocka_unit_test(test_writer_bugs_stop),
      cmocka_unit_test(test_file_from_schema),
      cmocka_unit_test(test_markdown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
