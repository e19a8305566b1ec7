/* schema_check.h — a CSV halflab-bench wrote, held against its column table
 * (bench/schemas.c, compiled into the test): the "# units:" line and the
 * header the table writes, one cell per column in every row, integer
 * columns exact integers, real columns numbers, "nan", "inf" or empty. */
#ifndef HL_TESTS_BENCH_SCHEMA_CHECK_H
#define HL_TESTS_BENCH_SCHEMA_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "tests/support/hltest.h"

/* The cell, of column c, is what its type allows ("" when it is) */
static const char *schema_cell_wrong(const hl_column *c, const char *cell) {
  if (!*cell || c->type == HL_COL_TEXT) return "";
  char *end = NULL;
  if (c->type == HL_COL_INT) {
    const char *p = cell + (*cell == '-');
    if (!*p || strspn(p, "0123456789") != strlen(p)) return "an integer column holds a non-integer";
    return "";
  }
  if (!strcmp(cell, "-nan")) return "NaN written as -nan";
  strtod(cell, &end);
  return *end ? "a real column holds a non-number" : "";
}

/* Every row of path (written from s) checked; returns the number of rows */
static int expect_csv_follows_schema(const char *path, const hl_schema *s) {
  char *text = hl_read_file(path, NULL);
  if (!text) fail_msg("%s: not written", path);
  char header[4096], units[4096], want_units[4200];
  hl_schema_header(s, header, sizeof header);
  hl_schema_units(s, units, sizeof units);
  snprintf(want_units, sizeof want_units, "# units: %s", units);
  bool units_seen = false, header_seen = false;
  int rows = 0;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (line[0] == '#') {
      if (!strncmp(line, "# units: ", 9)) {
        if (strcmp(line, want_units)) fail_msg("%s: '%s', the schema says '%s'", path, line, want_units);
        units_seen = true;
      }
      continue;
    }
    if (!header_seen) {
      if (strcmp(line, header)) fail_msg("%s: header '%s', the schema's is '%s'", path, line, header);
      header_seen = true;
      continue;
    }
    rows++;
    int col = 0;
    for (char *cell = line;; col++) {
      char *comma = strchr(cell, ',');
      if (comma) *comma = '\0';
      if (col >= s->n_columns) fail_msg("%s: row %d has more than %d cells", path, rows, s->n_columns);
      const char *wrong = schema_cell_wrong(&s->columns[col], cell);
      if (*wrong) fail_msg("%s: row %d, column %s: '%s': %s", path, rows, s->columns[col].name, cell, wrong);
      if (!comma) break;
      cell = comma + 1;
    }
    if (col + 1 != s->n_columns) fail_msg("%s: row %d has %d cells, the schema %d columns", path, rows, col + 1, s->n_columns);
  }
  if (!units_seen) fail_msg("%s: no '# units:' line", path);
  if (!header_seen) fail_msg("%s: no header", path);
  free(text);
  return rows;
}

#endif
