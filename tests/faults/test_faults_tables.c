/* test_faults_tables.c — suite faults: values a hostile user gives, and the
 * shared train_summary.csv as another system or a hand may leave it.
 *   hostile  an --out folder and a --text file whose names hold a comma, a
 *            quote, LF, CR, a byte order mark and invalid UTF-8, and an
 *            environment value (OMP_WAIT_POLICY) holding them too: every CSV
 *            the run writes reads back under a strict RFC 4180 reader
 *            (csv_strict.py) with its header's cells in every row and no
 *            bare metadata line; a run name that is not a plain word is
 *            refused (exit 2) before anything is written.
 *   summary  train_summary.csv holding two runs' rows, disturbed one way
 *            per case (CRLF, a BOM, blank lines, lines moved, comments, a
 *            metadata line split by a line break, the header twice), then a
 *            third run: every earlier row is kept, cell for cell. A table
 *            that cannot be understood (no header, a row of another width, a
 *            quote never closed) is left byte for byte as it was, the run
 *            still exits 0, and its row is in the side table stderr names.
 *   readers  a committed train_summary.csv with CRLF line ends and a BOM
 *            reads back as the same table in the C reader (the tests'),
 *            tools/same_results.py and halflab-train itself (which keeps
 *            every row when it adds its own); the charts and the report:
 *            tests/plots/as_written.sh. A run resumed from a checkpoint
 *            whose log was saved with CRLF and a BOM continues its rows.
 * argv[1]: csv_strict.py; argv[2]: the source root. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/csv_text.h"
#include "tests/support/hltest.h"

#define SMALL "--device cpu --batch 16 --eval-samples 32 --eval-every 5 --steps 1"

static const char *strict_reader, *source_root;
static int tried, held;

static const char *train(void) { return hl_test_prog("halflab-train"); }

static void test_hostile_values(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  static const char hostile[] = "o,u\"t\nx\r\xEF\xBB\xBF\xFF";
  char out[512], text[512];
  snprintf(out, sizeof out, "%s/%s", dir, hostile);
  assert_int_equal(mkdir(out, 0777), 0);
  snprintf(text, sizeof text, "%s/in %s.txt", dir, hostile);
  static const char words[] = "the quick brown fox jumps over the lazy dog, again and again. ";
  char book[4096] = "";
  for (int i = 0; i < 60; i++) strcat(book, words);
  hl_write_file(text, book, strlen(book));
  setenv("HOSTILE_OUT", out, 1);
  setenv("HOSTILE_TEXT", text, 1);
  hl_run_result r = hl_run_ok("OMP_WAIT_POLICY=\"$HOSTILE_OUT\" %s " SMALL " --task text --text \"$HOSTILE_TEXT\" "
                              "--seq 16 --out \"$HOSTILE_OUT\"", train());
  hl_run_free(&r);
  tried++;
  r = hl_run("python3 '%s' '%s'", strict_reader, dir);
  if (r.status != 0) fail_msg("a CSV does not read back strictly:\n%s%s", r.out, r.err);
  hl_run_free(&r);
  /* the cell holding the environment's value reads back as that value made one line */
  hl_table *t = hl_table_read(hl_path(out, "train_summary.csv"));
  assert_non_null(t);
  char want[256];
  hl_text_one_line(out, want, sizeof want);
  assert_string_equal(hl_table_get(t, 0, "omp_wait_policy"), want);
  hl_table_free(t);
  held++;
  /* a name in the file names is one plain word: refused up front */
  tried++;
  hl_expect_refused(dir, 2, "--name", "%s " SMALL " --name 'a,b' --out %s", train(), dir);
  hl_expect_refused(dir, 2, "--name", "%s " SMALL " --name \"$(printf 'a\\nb')\" --out %s", train(), dir);
  held++;
  unsetenv("HOSTILE_OUT");
  unsetenv("HOSTILE_TEXT");
  hl_rmtree(dir);
  free(dir);
}

/* ------------------------------------------------------- disturbances -- */

/* Each takes the table's text and returns the disturbed text (malloc'd). */
typedef char *(*disturb_fn)(const char *text);

static char *replace_all(const char *text, const char *from, const char *to) {
  size_t n = 0;
  for (const char *p = strstr(text, from); p; p = strstr(p + strlen(from), from)) n++;
  char *out = malloc(strlen(text) + n * strlen(to) + 1), *at = out;
  for (const char *p = text;;) {
    const char *hit = strstr(p, from);
    if (!hit) {
      strcpy(at, p);
      break;
    }
    memcpy(at, p, (size_t)(hit - p));
    at += hit - p;
    strcpy(at, to);
    at += strlen(to);
    p = hit + strlen(from);
  }
  return out;
}

/* The line starting with `prefix` taken out of text (into *line, malloc'd). */
static char *cut_line(const char *text, const char *prefix, char **line) {
  const char *at = strstr(text, prefix);
  assert_non_null(at);
  const char *eol = strchr(at, '\n') + 1;
  *line = strndup(at, (size_t)(eol - at));
  char *out = malloc(strlen(text) + 1);
  memcpy(out, text, (size_t)(at - text));
  strcpy(out + (at - text), eol);
  return out;
}

/* Inserts `add` before the line starting with `prefix`. */
static char *insert_before(const char *text, const char *prefix, const char *add) {
  const char *at = strstr(text, prefix);
  assert_non_null(at);
  char *out = malloc(strlen(text) + strlen(add) + 1);
  memcpy(out, text, (size_t)(at - text));
  strcpy(out + (at - text), add);
  strcat(out, at);
  return out;
}

static char *crlf(const char *t) { return replace_all(t, "\n", "\r\n"); }
static char *bom(const char *t) {
  char *out = malloc(strlen(t) + 4);
  return strcat(strcpy(out, "\xEF\xBB\xBF"), t);
}
static char *bom_crlf(const char *t) {
  char *c = crlf(t), *out = bom(c);
  free(c);
  return out;
}
static char *blank_lines(const char *t) {
  char *a = replace_all(t, "\n", "\n\n"), *out = malloc(strlen(a) + 3);
  strcat(strcpy(out, "\n"), a);
  free(a);
  return out;
}
static char *meta_moved_below(const char *t) {
  /* a line every run shares: the table keeps only those ("# date:" goes when two runs' seconds differ) */
  char *line, *rest = cut_line(t, "# schema: ", &line);
  char *out = malloc(strlen(t) + 1);
  strcat(strcpy(out, rest), line);
  free(line);
  free(rest);
  return out;
}
static char *row_moved_above(const char *t) {
  char *row, *rest = cut_line(t, "a,fp32,", &row), *out = insert_before(rest, "# halflab ", row);
  free(row);
  free(rest);
  return out;
}
static char *stray_comment(const char *t) { return insert_before(t, "b,fp32,", "# checked by hand, all fine\n"); }
static char *split_meta(const char *t) { return replace_all(t, "# schema: 2\n", "# schema: 2\nrest of a line\n"); }
static char *lone_cr(const char *t) { return replace_all(t, "# schema: 2\n", "# schema: 2\rx\n"); }
static char *header_twice(const char *t) {
  char *line, *rest = cut_line(t, "name,mode,", &line), *out = malloc(strlen(t) + strlen(line) + 1);
  free(rest);
  strcat(strcpy(out, t), line);
  free(line);
  return out;
}
/* not understood */
static char *no_header(const char *t) { return replace_all(t, "name,mode,", "label,kind,"); }
static char *wider_row(const char *t) { return replace_all(t, "\na,fp32,", "\na,fp32,extra,"); }
static char *open_quote(const char *t) { return replace_all(t, "\na,fp32,", "\n\"a,fp32,"); }

/* The earlier rows, each split into cells (the header first). */
static int rows_of(const char *text, char *rows[64][128], int *n_cells) {
  char *copy = strdup(text);
  int n = 0;
  for (char *line = strtok(copy, "\n"); line && n < 64; line = strtok(NULL, "\n")) {
    if (line[0] == '#') continue;
    char *cells[128], *own = strdup(line);
    *n_cells = hl_csv_split(own, cells, 128);
    for (int k = 0; k < *n_cells; k++) rows[n][k] = cells[k];
    n++;
  }
  return n;
}

/* Whether the table at path holds each row of `before` (by name and mode), cell for cell. */
static bool keeps_rows(const char *path, const char *before, char *why, size_t len) {
  char *rows[64][128];
  int n_cells = 0;
  const int n = rows_of(before, rows, &n_cells);
  hl_table *t = hl_table_read(path);
  if (!t) return snprintf(why, len, "it does not read back"), false;
  for (int i = 1; i < n; i++) {
    const int at = hl_table_find(t, "name", rows[i][0], "mode", rows[i][1], NULL);
    if (at < 0) return snprintf(why, len, "the row of %s is gone", rows[i][0]), hl_table_free(t), false;
    for (int k = 0; k < n_cells; k++)
      if (strcmp(hl_table_get(t, at, rows[0][k]), rows[i][k]))
        return snprintf(why, len, "%s's %s is %s, was %s", rows[i][0], rows[0][k], hl_table_get(t, at, rows[0][k]),
                        rows[i][k]),
               hl_table_free(t), false;
  }
  const bool has_c = hl_table_find(t, "name", "c", NULL) >= 0;
  hl_table_free(t);
  if (!has_c) return snprintf(why, len, "the new run's row is missing"), false;
  return true;
}

static void test_summary_disturbed(void **state) {
  (void)state;
  char *base = hl_tmpdir();
  hl_run_result r = hl_run_ok("%s " SMALL " --name a --out %s && %s " SMALL " --name b --out %s", train(), base,
                              train(), base);
  hl_run_free(&r);
  char *table = hl_read_file(hl_path(base, "train_summary.csv"), NULL);
  static const struct {
    const char *what;
    disturb_fn fn;
    bool understood;
  } cases[] = {
      {"CRLF line ends", crlf, true},
      {"a byte order mark", bom, true},
      {"a byte order mark and CRLF", bom_crlf, true},
      {"blank lines everywhere", blank_lines, true},
      {"a metadata line moved below the rows", meta_moved_below, true},
      {"a row moved above the metadata", row_moved_above, true},
      {"a comment among the rows", stray_comment, true},
      {"a metadata line split by a line break", split_meta, true},
      {"a lone CR in a metadata line", lone_cr, true},
      {"the header twice", header_twice, true},
      {"no header", no_header, false},
      {"a row of another width", wider_row, false},
      {"a quote never closed", open_quote, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tried++;
    char *dir = hl_tmpdir(), *disturbed = cases[i].fn(table);
    hl_write_file(hl_path(dir, "train_summary.csv"), disturbed, strlen(disturbed));
    r = hl_run("%s " SMALL " --name c --out %s", train(), dir);
    char why[512] = "";
    char *after = hl_read_file(hl_path(dir, "train_summary.csv"), NULL);
    if (r.status != 0) snprintf(why, sizeof why, "exit %d: %s", r.status, r.err);
    else if (cases[i].understood) keeps_rows(hl_path(dir, "train_summary.csv"), table, why, sizeof why);
    else if (strcmp(after, disturbed)) snprintf(why, sizeof why, "the table it could not understand was rewritten");
    else if (!hl_has_line(r.err, "is left as it is", "train_summary_unmerged_c_fp32.csv"))
      snprintf(why, sizeof why, "stderr does not name the side table: %s", r.err);
    else {
      hl_table *side = hl_table_read(hl_path(dir, "train_summary_unmerged_c_fp32.csv"));
      if (!side || side->nrows != 1 || strcmp(hl_table_get(side, 0, "name"), "c"))
        snprintf(why, sizeof why, "the side table does not hold the run's row");
      hl_table_free(side);
    }
    if (why[0]) print_message("faults: tables: %s: %s\n", cases[i].what, why);
    else held++;
    hl_run_free(&r);
    free(after);
    free(disturbed);
    hl_rmtree(dir);
    free(dir);
  }
  free(table);
  hl_rmtree(base);
  free(base);
}

static void test_readers_take_crlf_and_bom(void **state) {
  (void)state;
  char *dir = hl_tmpdir(), committed[1024];
  snprintf(committed, sizeof committed, "%s/results/cpu-amd-epyc-family-25-model-17/train_summary.csv", source_root);
  /* (the tests' reader wants this halflab's schema line; the committed table's rows are older) */
  hl_run_result r = hl_run_ok("mkdir '%s/lf' '%s/crlf' && sed 's/^# schema: 1$/# schema: 2/' '%s' > '%s/lf/train_summary.csv' && "
                              "{ printf '\\357\\273\\277'; sed 's/$/\\r/' '%s/lf/train_summary.csv'; } > "
                              "'%s/crlf/train_summary.csv'",
                              dir, dir, committed, dir, dir, dir);
  hl_run_free(&r);
  char lf[600], crlf_dir[600];
  snprintf(lf, sizeof lf, "%s/lf", dir);
  snprintf(crlf_dir, sizeof crlf_dir, "%s/crlf", dir);
  tried++;
  hl_table *a = hl_table_read(hl_path(lf, "train_summary.csv")), *b = hl_table_read(hl_path(crlf_dir, "train_summary.csv"));
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal(a->nrows, b->nrows);
  assert_int_equal(a->ncols, b->ncols);
  for (int i = 0; i < a->nrows; i++)
    for (int k = 0; k < a->ncols; k++) assert_string_equal(a->cells[i][k], b->cells[i][k]);
  hl_table_free(a);
  hl_table_free(b);
  r = hl_run("python3 '%s/tools/same_results.py' --dirs '%s' '%s'", source_root, lf, crlf_dir);
  if (r.status != 0) fail_msg("same_results.py: %s%s", r.out, r.err);
  hl_run_free(&r);
  /* halflab-train keeps every committed row when it adds its own */
  char *before = hl_read_file(hl_path(lf, "train_summary.csv"), NULL);
  r = hl_run_ok("%s " SMALL " --name c --out %s", train(), crlf_dir);
  hl_run_free(&r);
  char why[512] = "";
  if (!keeps_rows(hl_path(crlf_dir, "train_summary.csv"), before, why, sizeof why)) fail_msg("%s", why);
  free(before);
  held++;
  hl_rmtree(dir);
  free(dir);
}

/* A resumed run continues a log another system saved (CRLF, a BOM): its rows kept, the log one halflab
 * writes again. */
static void test_resume_takes_crlf_log(void **state) {
  (void)state;
  char *dir = hl_tmpdir();
  tried++;
  hl_run_result r = hl_run_ok("cd %s && %s --device cpu --batch 16 --eval-samples 32 --eval-every 5 --steps 4 --stop-after 2 "
                              "--checkpoint ck.bin --out . && f=train_tiny_fp32_steps.csv.interrupted && "
                              "{ printf '\\357\\273\\277'; sed 's/$/\\r/' $f; } > $f.new && mv $f.new $f && "
                              "%s --resume ck.bin --out .", dir, train(), train());
  hl_run_free(&r);
  hl_table *t = hl_table_read(hl_path(dir, "train_tiny_fp32_steps.csv"));
  assert_non_null(t);
  assert_int_equal(t->nrows, 4);
  for (int i = 0; i < 4; i++) assert_true(hl_table_num(t, i, "step") == i + 1);
  hl_table_free(t);
  char *log = hl_read_file(hl_path(dir, "train_tiny_fp32_steps.csv"), NULL);
  assert_null(strchr(log, '\r'));
  assert_null(strstr(log, "\xEF\xBB\xBF"));
  free(log);
  held++;
  hl_rmtree(dir);
  free(dir);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_faults_tables CSV_STRICT_PY SOURCE_ROOT\n");
    return 2;
  }
  strict_reader = argv[1];
  source_root = argv[2];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hostile_values),
      cmocka_unit_test(test_summary_disturbed),
      cmocka_unit_test(test_readers_take_crlf_and_bom),
      cmocka_unit_test(test_resume_takes_crlf_log),
  };
  const int failed = cmocka_run_group_tests(tests, NULL, NULL);
  printf("faults: tables: %d cases tried, %d held\n", tried, held);
  return failed || tried != held;
}
