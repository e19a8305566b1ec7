/* test_schema.c — suite unit: cli/schema.h. A row is written only when
 * every column is set once with its type; headers, unit lines and the docs
 * come from the same table; values are written one way. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/csv.h"
#include "cli/csv_text.h"
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

/* A text cell from a user (a name, a path, the environment) never adds a cell or a line: it is made one
 * visible line of valid UTF-8 and quoted as RFC 4180 says, and only when it must be. */
static void test_hostile_text_cells(void **state) {
  (void)state;
  static const struct {
    const char *value, *cell;
  } cases[] = {
      {"fp16", "fp16"},                                       /* plain text as it is */
      {"a b", "a b"},                                         /* spaces are text */
      {"a,b", "\"a,b\""},                                     /* a comma: quoted */
      {"say \"hi\"", "\"say \"\"hi\"\"\""},                   /* quotes doubled */
      {"x\ny", "x\\ny"},                                      /* a line break: visible, one line */
      {"c\r\n,d", "\"c\\r\\n,d\""},                           /* both */
      {"t\tu\x01\x7f", "t\\tu\\x01\\x7F"},                    /* other controls */
      {"\xEF\xBB\xBFname", "\\xEF\\xBB\\xBFname"},            /* a byte order mark */
      {"bad\xff\xc3(", "bad\\xFF\\xC3("},                      /* invalid UTF-8 */
      {"caf\xC3\xA9 \xE2\x84\xA2", "caf\xC3\xA9 \xE2\x84\xA2"}, /* valid UTF-8 as it is */
      {"\xC2\x85next", "\\xC2\\x85next"},                     /* a C1 line break */
      {"back\\slash", "back\\slash"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    hl_row r;
    hl_row_begin(&r, &demo);
    hl_row_int(&r, "m", 1);
    hl_row_int(&r, "flop", 2);
    hl_row_real(&r, "time_ms", 3);
    hl_row_text(&r, "dtype", cases[i].value);
    char want[256];
    snprintf(want, sizeof want, "1,2,3.0000,%s", cases[i].cell);
    if (strcmp(hl_row_line(&r), want)) fail_msg("case %zu: row \"%s\", wanted \"%s\"", i, hl_row_line(&r), want);
    /* and it reads back as 4 cells, the cell as written before quoting */
    char line[512], *cells[8];
    snprintf(line, sizeof line, "%s\r\n", hl_row_line(&r));
    assert_int_equal(hl_csv_split(line, cells, 8), 4);
    char one_line[256];
    hl_text_one_line(cases[i].value, one_line, sizeof one_line);
    assert_string_equal(cells[3], one_line);
  }
  /* a cell cut to fit stays one valid quoted cell, cut at a whole character */
  char cell[8];
  assert_false(hl_csv_cell("a,\xC3\xA9\xC3\xA9\xC3\xA9", cell, sizeof cell));
  assert_string_equal(cell, "\"a,\xC3\xA9\"");
  assert_false(hl_text_one_line("\n\n\n\n", cell, sizeof cell));
  assert_string_equal(cell, "\\n\\n\\n");
}

/* A reader of halflab's files takes CRLF, a byte order mark and quoted cells, and refuses broken quoting. */
static void test_split_records(void **state) {
  (void)state;
  char a[] = "x,\"a,\"\"b\"\"\",,z\r\n", *cells[8];
  assert_int_equal(hl_csv_split(a, cells, 8), 4);
  assert_string_equal(cells[1], "a,\"b\"");
  assert_string_equal(cells[2], "");
  assert_string_equal(cells[3], "z");
  char b[] = "\"open,x", c[] = "\"a\"b,c", d[] = "1,2,3";
  assert_int_equal(hl_csv_split(b, cells, 8), -1);
  assert_int_equal(hl_csv_split(c, cells, 8), -1);
  assert_int_equal(hl_csv_split(d, cells, 2), -1);
  assert_string_equal(hl_csv_skip_bom("\xEF\xBB\xBF# halflab"), "# halflab");
  assert_true(hl_csv_open_quote("a,\"b\nc"));
  assert_false(hl_csv_open_quote("a,\"b\"\"c\""));
}

/* Every metadata value stays on its "# " line, whatever the command line or a key's value holds. */
static void test_metadata_one_line(void **state) {
  (void)state;
  char *argv[] = {"/bin/prog", "--out", "dir,with\"quote\nand line", "\r\xEF\xBB\xBF\xff"};
  hl_meta_init(4, argv);
  hl_meta_set("why", "first\nsecond\r\n# forged: line");
  const char *text = hl_meta_text();
  for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
    if (strncmp(line, "# ", 2)) fail_msg("a bare metadata line: \"%.60s\"", line);
    for (const char *c = line; *c != '\n'; c++)
      if ((unsigned char)*c < 0x20) fail_msg("a control character in \"%.60s\"", line);
  }
  assert_non_null(strstr(text, "# command: prog --out dir,with\"quote\\nand line \\r\\xEF\\xBB\\xBF\\xFF\n"));
  assert_non_null(strstr(text, "# why: first\\nsecond\\r\\n# forged: line\n"));
  assert_null(strstr(text, "\n# forged"));
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
      cmocka_unit_test(test_hostile_text_cells),
      cmocka_unit_test(test_split_records),
      cmocka_unit_test(test_metadata_one_line),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
