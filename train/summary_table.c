/* summary_table.c — train_summary.csv, the table of every completed run of
 * a folder (docs/train.md, "Summary"): a run's end rewrites it whole with
 * the earlier table's rows of other runs and its own. The rows come from
 * many runs, so each carries its run's provenance in columns (version, date,
 * cpu_units, blas_kernels), and the file's metadata lines are only those
 * every row's run shares. output.c stages the file under its lock and
 * renames it into place with the run's files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/csv.h"
#include "formats/fatal.h"
#include "train/train.h"

/* Splits a line (without its newline) at its commas, in place; the number
 * of cells, at most max (the rest stay in the last one). */
static int split_cells(char *line, char **cells, int max) {
  int n = 0;
  cells[n++] = line;
  for (char *c = line; *c && n < max; c++)
    if (*c == ',') {
      *c = '\0';
      cells[n++] = c + 1;
    }
  return n;
}

/* Where each column of train_summary_schema is in an earlier table's
 * header, by name (-1: the table has no such column, its rows get an empty
 * cell). Columns the schema does not have are listed in `dropped`. false
 * when the table has no name or mode column: not this program's. */
static bool map_columns(char *header, int *from, int *n_old, char *dropped, size_t len) {
  char *names[HL_SCHEMA_MAX_COLUMNS * 2];
  *n_old = split_cells(header, names, HL_SCHEMA_MAX_COLUMNS * 2);
  const hl_schema *s = &train_summary_schema;
  for (int i = 0; i < s->n_columns; i++) {
    from[i] = -1;
    for (int k = 0; k < *n_old; k++)
      if (!strcmp(names[k], s->columns[i].name)) from[i] = k;
  }
  dropped[0] = '\0';
  for (int k = 0; k < *n_old; k++)
    if (hl_schema_find(s, names[k]) < 0)
      snprintf(dropped + strlen(dropped), len - strlen(dropped), "%s%s", dropped[0] ? ", " : "", names[k]);
  return from[hl_schema_find(s, "name")] >= 0 && from[hl_schema_find(s, "mode")] >= 0;
}

/* What an earlier table holds besides its rows. */
typedef struct {
  char *meta;       /* its "# " lines, after a '\n' (so that "\n" LINE finds a whole line); malloc'd */
  size_t len;
  bool provenance;  /* it has the version column: its lines are those all its rows share */
} earlier_table;

static void add_meta_line(earlier_table *t, const char *line, size_t n) {
  char *grown = realloc(t->meta, t->len + n + 2);
  if (!grown) hl_fatal("out of host memory");
  t->meta = grown;
  if (t->len == 0) t->meta[t->len++] = '\n';
  memcpy(t->meta + t->len, line, n);
  t->len += n;
  t->meta[t->len] = '\0';
}

/* The rows of an earlier train_summary.csv at `path` but the run (name,
 * mode)'s, in this schema's columns, and its metadata lines: columns are
 * matched by name, so that a table of an older halflab (fewer columns) keeps
 * its rows with empty cells for the newer columns. A table without name and
 * mode columns is not kept, and a column this halflab does not know loses
 * its cells: each said on stderr. */
static void keep_other_runs(const char *path, const char *name, const char *mode, hl_csv_rows *rows,
                            earlier_table *earlier) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  const hl_schema *s = &train_summary_schema;
  const int name_at = hl_schema_find(s, "name"), mode_at = hl_schema_find(s, "mode");
  char *line = NULL, dropped[1024];
  size_t cap = 0;
  ssize_t n;
  bool header = false;
  int from[HL_SCHEMA_MAX_COLUMNS], n_old = 0;
  while ((n = getline(&line, &cap, f)) > 0) {
    if (line[0] == '#') {
      if (!header && line[n - 1] == '\n') add_meta_line(earlier, line, (size_t)n);
      continue;
    }
    if (line[n - 1] == '\n') line[--n] = '\0';
    if (!header) {
      header = true;
      if (!map_columns(line, from, &n_old, dropped, sizeof dropped)) {
        fprintf(stderr, "%s: %s has no name and mode columns (not halflab-train's?): its rows are dropped\n", TRAIN_PROG,
                path);
        break;
      }
      earlier->provenance = from[hl_schema_find(s, "version")] >= 0;
      if (dropped[0])
        fprintf(stderr, "%s: %s: columns this halflab-train does not write are dropped: %s\n", TRAIN_PROG, path, dropped);
      continue;
    }
    char *cells[HL_SCHEMA_MAX_COLUMNS * 2];
    const int n_cells = split_cells(line, cells, HL_SCHEMA_MAX_COLUMNS * 2);
    if (n_cells != n_old) {
      fprintf(stderr, "%s: %s: a row of %s,%s without its header's %d cells is dropped\n", TRAIN_PROG, path, cells[0],
              n_cells > 1 ? cells[1] : "", n_old);
      continue;
    }
    if (!strcmp(cells[from[name_at]], name) && !strcmp(cells[from[mode_at]], mode)) continue;
    char kept[HL_ROW_MAX_CHARS + HL_SCHEMA_MAX_COLUMNS];
    size_t k = 0;
    for (int i = 0; i < s->n_columns; i++)
      k += (size_t)snprintf(kept + k, sizeof kept - k, "%s%s", i ? "," : "", from[i] >= 0 ? cells[from[i]] : "");
    hl_csv_rows_add(rows, "%s", kept);
  }
  free(line);
  fclose(f);
}

/* A line about the file rather than a run: kept whatever the rows. */
static bool file_line(const char *line) {
  return !strncmp(line, "# halflab ", 10) || !strncmp(line, "# schema: ", 10) || !strncmp(line, "# rows: ", 8);
}

/* The table's metadata lines (malloc'd): this run's when its row is the
 * only one; else those every row's run shares: this run's lines that the
 * earlier table has too, where that table's lines were kept so (an older
 * halflab's described its last run only: none of them is known to hold for
 * every row), and the lines about the file. */
static char *shared_meta(const earlier_table *earlier, bool other_rows) {
  const char *mine = hl_meta_text();
  char *out = malloc(strlen(mine) + 1), *at = out;
  if (!out) hl_fatal("out of host memory");
  for (const char *line = mine; *line;) {
    const char *eol = strchr(line, '\n');
    const size_t n = eol ? (size_t)(eol - line) + 1 : strlen(line);
    bool keep = !other_rows || file_line(line);
    if (!keep && earlier->provenance && earlier->meta) {
      char whole[4096 + 2];
      if (n + 1 < sizeof whole) {
        snprintf(whole, sizeof whole, "\n%.*s", (int)n, line);
        keep = strstr(earlier->meta, whole) != NULL;
      }
    }
    if (keep) {
      memcpy(at, line, n);
      at += n;
    }
    line += n;
  }
  *at = '\0';
  return out;
}

bool summary_table_stage(const char *dir, const char *name, const char *mode, const char *row, char *err, size_t len) {
  char path[4400];
  snprintf(path, sizeof path, "%s/train_summary.csv", dir);
  hl_csv_rows rows = {0};
  earlier_table earlier = {0};
  keep_other_runs(path, name, mode, &rows, &earlier);
  const bool other_rows = rows.n > 0;
  hl_csv_rows_add(&rows, "%s", row);
  hl_meta_set("rows", "one per run (name, mode), each with its run's version, date, cpu_units and blas_kernels; "
                      "these lines hold only what every row's run shares (the first: the halflab that wrote the "
                      "file); each run's own are in its train_NAME_MODE_summary.csv");
  char *meta = shared_meta(&earlier, other_rows);
  const bool ok = hl_csv_rows_write_schema_meta(&rows, dir, "train_summary.csv.inprogress", &train_summary_schema,
                                                meta, err, len);
  hl_meta_set("rows", "this run");
  free(meta);
  free(earlier.meta);
  hl_csv_rows_free(&rows);
  return ok;
}
