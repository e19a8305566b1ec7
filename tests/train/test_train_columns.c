/* test_train_columns.c — suite e2e: every CSV halflab-train writes follows
 * the columns it documents. `halflab-train --columns-md` (the text of
 * docs/columns.md) is read back as the schemas; then short runs write every
 * kind of file (a GPT run with histograms and --profile, an MLP run, a run
 * that diverges to a NaN loss, a stopped one, a train_summary.csv holding an
 * older halflab's rows), and each file must have its schema's header, its
 * "# units:" line, every row as wide as the header, integers in the integer
 * columns, and a missing value only ever as an empty cell. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/hltest.h"

static const char *train(void) { return hl_test_prog("halflab-train"); }

#define MAX_SCHEMAS 8
#define MAX_COLUMNS 96

/* One file's section of --columns-md. */
typedef struct {
  char file[128]; /* "train_summary.csv" or a pattern: "train_RUN_MODE_steps.csv" */
  int n;
  char name[MAX_COLUMNS][160], unit[MAX_COLUMNS][160];
  bool integer[MAX_COLUMNS];
} doc_schema;

/* The cells of a Markdown table row "| a | b |", trimmed, backquotes off. */
static int md_cells(const char *line, char cells[][160], int max) {
  int n = 0;
  const char *p = strchr(line, '|');
  while (p && n < max) {
    const char *q = strchr(p + 1, '|');
    while (q && q[-1] == '\\') q = strchr(q + 1, '|');
    if (!q) break;
    const char *a = p + 1, *b = q;
    while (a < b && (*a == ' ' || *a == '`')) a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '`')) b--;
    snprintf(cells[n++], 160, "%.*s", (int)(b - a), a);
    p = q;
  }
  return n;
}

/* --columns-md's sections; their count. */
static int read_schemas(doc_schema *s) {
  hl_run_result r = hl_run_ok("%s --columns-md", train());
  int n = -1;
  for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
    if (!strncmp(line, "## ", 3)) {
      assert_true(++n < MAX_SCHEMAS);
      snprintf(s[n].file, sizeof s[n].file, "%s", line + 3);
      s[n].n = 0;
      continue;
    }
    char cells[5][160];
    if (n < 0 || line[0] != '|' || md_cells(line, cells, 5) != 5 || !strcmp(cells[0], "column") ||
        !strncmp(cells[0], "---", 3))
      continue;
    doc_schema *d = &s[n];
    assert_true(d->n < MAX_COLUMNS);
    snprintf(d->name[d->n], sizeof d->name[0], "%s", cells[0]);
    snprintf(d->unit[d->n], sizeof d->unit[0], "%s", strcmp(cells[1], "-") ? cells[1] : "");
    d->integer[d->n] = !strcmp(cells[2], "integer");
    d->n++;
  }
  hl_run_free(&r);
  return n + 1;
}

/* The schema of a file, by its name without a state suffix (.interrupted,
 * .failed): train_summary.csv itself, or the pattern's ending after MODE. */
static const doc_schema *schema_of(const doc_schema *s, int n, const char *file) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s[i].file, file)) return &s[i];
  for (int i = 0; i < n; i++) {
    const char *tail = strstr(s[i].file, "_MODE_");
    if (tail && strstr(file, tail + strlen("_MODE")) && !strncmp(file, "train_", 6)) return &s[i];
  }
  return NULL;
}

static bool is_integer(const char *c) {
  if (*c == '-') c++;
  if (!*c) return false;
  for (; *c; c++)
    if (!isdigit((unsigned char)*c)) return false;
  return true;
}

/* The file against its schema; fails the test naming the file, the row and
 * the column. */
static void check_file(const char *path, const char *file, const doc_schema *d) {
  char *text = hl_read_file(path, NULL);
  assert_non_null(text);
  char want[8192] = "", units[8192] = "";
  for (int i = 0; i < d->n; i++) {
    snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? "," : "", d->name[i]);
    if (d->unit[i][0])
      snprintf(units + strlen(units), sizeof units - strlen(units), "%s%s=%s", units[0] ? "," : "", d->name[i],
               d->unit[i]);
  }
  bool header = false, units_seen = false;
  int row = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (!header && line[0] == '#') {
      if (!strncmp(line, "# units: ", 9)) {
        units_seen = true;
        if (strcmp(line + 9, units)) fail_msg("%s: units line\n  %s\nnot its schema's\n  %s", file, line + 9, units);
      }
      continue;
    }
    if (!header) {
      header = true;
      if (strcmp(line, want)) fail_msg("%s: header\n  %s\nnot its schema's\n  %s", file, line, want);
      continue;
    }
    row++;
    int col = 0;
    for (char *cell = line, *end;; cell = end + 1, col++) {
      end = strchr(cell, ',');
      if (end) *end = '\0';
      if (col >= d->n) fail_msg("%s: row %d has more cells than its %d columns", file, row, d->n);
      if (!strcmp(cell, "-nan") || !strcmp(cell, "-"))
        fail_msg("%s: row %d, %s: '%s' (a missing value is an empty cell)", file, row, d->name[col], cell);
      if (d->integer[col] && cell[0] && !is_integer(cell))
        fail_msg("%s: row %d, %s: '%s' is not an integer", file, row, d->name[col], cell);
      if (!end) break;
    }
    if (col + 1 != d->n) fail_msg("%s: row %d has %d cells, its header %d", file, row, col + 1, d->n);
  }
  if (!header || !units_seen) fail_msg("%s: %s", file, header ? "no '# units:' line" : "no header");
  assert_true(row > 0);
  free(text);
}

/* Every CSV in dir (final, .interrupted or .failed) against its schema;
 * the number checked. */
static int check_folder(const char *dir, const doc_schema *s, int n) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int checked = 0;
  for (struct dirent *e; (e = readdir(d));) {
    char file[256];
    snprintf(file, sizeof file, "%s", e->d_name);
    char *csv = strstr(file, ".csv");
    if (!csv) continue;
    csv[4] = '\0'; /* the name without its state's suffix */
    const doc_schema *sc = schema_of(s, n, file);
    if (!sc) fail_msg("%s: no schema in --columns-md describes it", e->d_name);
    check_file(hl_path(dir, e->d_name), e->d_name, sc);
    checked++;
  }
  closedir(d);
  return checked;
}

static void test_columns_md(void **state) {
  (void)state;
  doc_schema s[MAX_SCHEMAS];
  const int n = read_schemas(s);
  assert_int_equal(n, 5);
  const char *files[] = {"train_RUN_MODE_steps.csv", "train_RUN_MODE_hist.csv", "train_RUN_MODE_summary.csv",
                         "train_summary.csv", "train_RUN_MODE_profile.csv"};
  for (int i = 0; i < n; i++) assert_string_equal(s[i].file, files[i]);
  /* the question docs/columns.md answers: where the summary's median step time comes from */
  hl_run_result r = hl_run_ok("%s --columns-md", train());
  assert_true(hl_has_line(r.out, "| `step_time_ms_median` | ms | real `%.9g` |", "`train/loop.c: summarize`"));
  assert_non_null(strstr(r.out, "Written by `halflab-train` in `train/loop.c: write_step_row`."));
  hl_run_free(&r);
  /* it writes nothing, wherever --out points */
  char *dir = hl_tmpdir();
  hl_run_result q = hl_run_ok("cd %s && %s --columns-md --out %s/out", dir, train(), dir);
  hl_run_free(&q);
  assert_int_equal(hl_count_files(dir), 0);
  hl_rmtree(dir);
  free(dir);
}

#define TINY "--device cpu --batch 16 --eval-samples 32 --eval-every 5"

static void test_every_file_follows_its_schema(void **state) {
  (void)state;
  doc_schema s[MAX_SCHEMAS];
  const int n = read_schemas(s);
  char *dir = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s " TINY " --steps 6 --hist-steps 1,6 --profile --mode amp-fp16 --out %s", train(), dir);
  hl_run_free(&r);
  r = hl_run_ok("%s --device cpu --model mlp --steps 4 --mode fp32 --name mlp --out %s", train(), dir);
  hl_run_free(&r);
  r = hl_run_ok("%s " TINY " --steps 8 --stop-after 3 --mode fp32 --name stopped --out %s", train(), dir);
  hl_run_free(&r);
  /* fp16 without a scaler at a learning rate it cannot take: the loss becomes NaN, a result written "nan" */
  r = hl_run_ok("%s --device cpu --mode fp16-noscale --steps 30 --lr 1 --name nan --out %s", train(), dir);
  hl_run_free(&r);
  hl_table *t = hl_table_read(hl_path(dir, "train_nan_fp16-noscale_summary.csv"));
  assert_non_null(t);
  assert_string_equal(hl_table_get(t, 0, "status"), "diverged");
  assert_string_equal(hl_table_get(t, 0, "final_loss"), "nan");
  assert_string_equal(hl_table_get(t, 0, "eval_step"), ""); /* no evaluation: missing, not 0 */
  hl_table_free(t);
  t = hl_table_read(hl_path(dir, "train_mlp_fp32_summary.csv"));
  assert_non_null(t);
  assert_string_equal(hl_table_get(t, 0, "heads"), ""); /* the MLP has none */
  assert_string_equal(hl_table_get(t, 0, "tokens_per_s"), "");
  hl_table_free(t);
  /* steps log, histograms, run summaries, profile, train_summary.csv, and the stopped run's .interrupted files */
  assert_true(check_folder(dir, s, n) >= 13);
  hl_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_columns_md),
      cmocka_unit_test(test_every_file_follows_its_schema),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
