/* summary_table.c — train_summary.csv, the table of every completed run of
 * a folder (docs/train.md, "Summary"): a run's end rewrites it whole with
 * the earlier table's rows of other runs and its own. The rows come from
 * many runs, so each carries its run's provenance in columns (version, date,
 * cpu_units, blas_kernels), and the file's metadata lines are only those
 * every row's run shares. output.c stages the file under its lock and
 * renames it into place with the run's files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/csv.h"
#include "cli/csv_text.h"
#include "formats/fatal.h"
#include "train/train.h"

/* Where each column of train_summary_schema is in an earlier table's
 * header, by name (-1: the table has no such column, its rows get an empty
 * cell). Columns the schema does not have are listed in `dropped`. */
static void map_columns(char **names, int n_old, int *from, char *dropped, size_t len) {
  const hl_schema *s = &train_summary_schema;
  for (int i = 0; i < s->n_columns; i++) {
    from[i] = -1;
    for (int k = 0; k < n_old; k++)
      if (!strcmp(names[k], s->columns[i].name)) from[i] = k;
  }
  dropped[0] = '\0';
  for (int k = 0; k < n_old; k++)
    if (hl_schema_find(s, names[k]) < 0)
      snprintf(dropped + strlen(dropped), len - strlen(dropped), "%s%s", dropped[0] ? ", " : "", names[k]);
}

/* A header is known by its content, wherever it is: a record with name and mode cells. */
static bool is_header(char **cells, int n) {
  bool name = false, mode = false;
  for (int k = 0; k < n; k++) {
    name |= !strcmp(cells[k], "name");
    mode |= !strcmp(cells[k], "mode");
  }
  return name && mode;
}

/* What an earlier table holds besides its rows. */
typedef struct {
  char *meta;       /* its "# " lines, after a '\n' (so that "\n" LINE finds a whole line); malloc'd */
  size_t len;
  bool provenance;  /* it has the version column: its lines are those all its rows share */
  char why[256];    /* why it was not understood ("" when it was) */
} earlier_table;

static void add_meta_line(earlier_table *t, const char *line) {
  const size_t n = strlen(line);
  char *grown = realloc(t->meta, t->len + n + 3);
  if (!grown) hl_fatal("out of host memory");
  t->meta = grown;
  if (t->len == 0) t->meta[t->len++] = '\n';
  memcpy(t->meta + t->len, line, n);
  t->len += n;
  t->meta[t->len++] = '\n';
  t->meta[t->len] = '\0';
}

/* The records of a file's text (its BOM skipped; a quoted cell may span
 * lines), each without its line end; blank lines are left out. Each a
 * malloc'd string in *records, with its first line's number. */
typedef struct {
  char **text;
  int *line;
  int n;
} records;

static void records_read(FILE *f, records *r) {
  char *line = NULL, *record = NULL;
  size_t cap = 0, used = 0;
  ssize_t n;
  int lineno = 0, first = 0;
  memset(r, 0, sizeof *r);
  while ((n = getline(&line, &cap, f)) > 0) {
    lineno++;
    const char *text = lineno == 1 ? hl_csv_skip_bom(line) : line;
    const size_t k = strlen(text);
    char *grown = realloc(record, used + k + 1);
    if (!grown) hl_fatal("out of host memory");
    record = grown;
    if (!used) first = lineno;
    memcpy(record + used, text, k + 1);
    used += k;
    if (hl_csv_open_quote(record) && !feof(f)) continue; /* the quoted cell goes on */
    while (used && (record[used - 1] == '\n' || record[used - 1] == '\r')) record[--used] = '\0';
    if (record[strspn(record, " \t\f\v")] == '\0') { /* a blank line */
      used = 0;
      continue;
    }
    r->text = realloc(r->text, sizeof *r->text * (size_t)(r->n + 1));
    r->line = realloc(r->line, sizeof *r->line * (size_t)(r->n + 1));
    if (!r->text || !r->line) hl_fatal("out of host memory");
    r->text[r->n] = record;
    r->line[r->n++] = first;
    record = NULL;
    used = 0;
  }
  if (used) { /* a quoted cell never closed: kept as a record, which then fails to split */
    r->text = realloc(r->text, sizeof *r->text * (size_t)(r->n + 1));
    r->line = realloc(r->line, sizeof *r->line * (size_t)(r->n + 1));
    if (!r->text || !r->line) hl_fatal("out of host memory");
    r->text[r->n] = record;
    r->line[r->n++] = first;
  } else free(record);
  free(line);
}

static void records_free(records *r) {
  for (int i = 0; i < r->n; i++) free(r->text[i]);
  free(r->text);
  free(r->line);
}

/* The index of the header among the records (-1: none), its cells split
 * into names/n_old. */
static int find_header(const records *r, char **names, int *n_old) {
  for (int i = 0; i < r->n; i++) {
    if (r->text[i][0] == '#') continue;
    char *copy = strdup(r->text[i]);
    if (!copy) hl_fatal("out of host memory");
    const int n = hl_csv_split(copy, names, HL_SCHEMA_MAX_COLUMNS * 2);
    if (n > 0 && is_header(names, n)) {
      *n_old = n;
      return i; /* names point into copy, freed by the caller through names[0] */
    }
    free(copy);
  }
  return -1;
}

/* One earlier row in this schema's columns, each cell written as this
 * halflab writes it (quoted when it must be), kept unless it is the run (name, mode)'s. */
static void keep_row(char **cells, const int *from, const char *name, const char *mode, hl_csv_rows *rows) {
  const hl_schema *s = &train_summary_schema;
  const int name_at = hl_schema_find(s, "name"), mode_at = hl_schema_find(s, "mode");
  if (!strcmp(cells[from[name_at]], name) && !strcmp(cells[from[mode_at]], mode)) return;
  char kept[HL_ROW_MAX_CHARS + HL_SCHEMA_MAX_COLUMNS], cell[HL_ROW_MAX_CHARS];
  size_t k = 0;
  for (int i = 0; i < s->n_columns && k < sizeof kept; i++) {
    hl_csv_cell(from[i] >= 0 ? cells[from[i]] : "", cell, sizeof cell);
    k += (size_t)snprintf(kept + k, sizeof kept - k, "%s%s", i ? "," : "", cell);
  }
  hl_csv_rows_add(rows, "%s", kept);
}

/* The rows of an earlier train_summary.csv at `path` but the run (name,
 * mode)'s, in this schema's columns, and its metadata lines. Read as
 * another system may have left it: CRLF, a BOM, blank lines, "#" lines and
 * rows anywhere; the header is found by its content. Columns are matched by
 * name, so that a table of an older halflab (fewer columns) keeps its rows
 * with empty cells for the newer columns; a column this halflab does not
 * know loses its cells, said on stderr. A line before the header that is
 * not a row (the rest of a metadata line a line break split) is left out.
 * false, with earlier->why, when a row cannot be read (no header, a row of
 * another width, a broken quote): the file must then be left as it is. */
static bool keep_other_runs(const char *path, const char *name, const char *mode, hl_csv_rows *rows,
                            earlier_table *earlier) {
  FILE *f = fopen(path, "r");
  if (!f) {
    if (errno == ENOENT) return true;
    snprintf(earlier->why, sizeof earlier->why, "it cannot be read: %s", strerror(errno));
    return false;
  }
  records r;
  records_read(f, &r);
  const bool read_failed = ferror(f);
  fclose(f);
  if (read_failed) {
    snprintf(earlier->why, sizeof earlier->why, "reading it failed");
    records_free(&r);
    return false;
  }
  char *names[HL_SCHEMA_MAX_COLUMNS * 2];
  int n_old = 0;
  const int header = find_header(&r, names, &n_old);
  bool ok = true;
  int from[HL_SCHEMA_MAX_COLUMNS];
  char dropped[1024];
  if (header >= 0) {
    map_columns(names, n_old, from, dropped, sizeof dropped);
    earlier->provenance = from[hl_schema_find(&train_summary_schema, "version")] >= 0;
  }
  for (int i = 0; i < r.n && ok; i++) {
    if (r.text[i][0] == '#') {
      if (i < header) add_meta_line(earlier, r.text[i]);
      continue; /* a comment among the rows is no row */
    }
    if (i == header) continue;
    char *cells[HL_SCHEMA_MAX_COLUMNS * 2];
    const int n = hl_csv_split(r.text[i], cells, HL_SCHEMA_MAX_COLUMNS * 2);
    if (header < 0) {
      snprintf(earlier->why, sizeof earlier->why, "it has no header with name and mode columns (line %d is not one)",
               r.line[i]);
      ok = false;
    } else if (n == n_old && is_header(cells, n)) {
      continue; /* the header again (two tables joined) */
    } else if (n == n_old) {
      keep_row(cells, from, name, mode, rows);
    } else if (i < header && n == 1) {
      fprintf(stderr, "%s: %s: line %d, before the header, is not a row: left out\n", TRAIN_PROG, path, r.line[i]);
    } else {
      snprintf(earlier->why, sizeof earlier->why, "line %d is not a row of its header's %d cells", r.line[i], n_old);
      ok = false;
    }
  }
  if (ok && header >= 0 && dropped[0])
    fprintf(stderr, "%s: %s: columns this halflab-train does not write are dropped: %s\n", TRAIN_PROG, path, dropped);
  if (header >= 0) free(names[0]);
  records_free(&r);
  return ok;
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

/* Copies src to dst byte for byte (a table left as it is, staged to be renamed back into place). */
static bool copy_file(const char *src, const char *dst, char *err, size_t len) {
  FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
  bool ok = in && out;
  char buf[65536];
  size_t n;
  while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
  ok = ok && !ferror(in);
  if (out && fclose(out) != 0) ok = false;
  if (in) fclose(in);
  if (!ok) snprintf(err, len, "copying %s to %s failed: %s", src, dst, strerror(errno));
  return ok;
}

/* A table this halflab cannot understand is never rewritten (it may hold
 * rows of other runs): it is staged unchanged, and this run's row goes to
 * a table of its own beside it, named on stderr. */
static bool leave_as_it_is(const char *dir, const char *path, const char *name, const char *mode, const char *row,
                           const char *why, char *err, size_t len) {
  char staged[4500], side[512];
  snprintf(staged, sizeof staged, "%s.inprogress", path);
  if (!copy_file(path, staged, err, len)) return false;
  snprintf(side, sizeof side, "train_summary_unmerged_%s_%s.csv", name, mode);
  hl_csv_rows rows = {0};
  hl_csv_rows_add(&rows, "%s", row);
  hl_meta_set("rows", "this run, whose row %s/train_summary.csv could not take (%s)", dir, why);
  const bool ok = hl_csv_rows_write_schema(&rows, dir, side, &train_summary_schema, err, len);
  hl_meta_set("rows", "this run");
  hl_csv_rows_free(&rows);
  if (ok)
    fprintf(stderr, "%s: %s is left as it is (%s): this run's row is in %s/%s\n", TRAIN_PROG, path, why, dir, side);
  return ok;
}

bool summary_table_stage(const char *dir, const char *name, const char *mode, const char *row, char *err, size_t len) {
  char path[4400];
  snprintf(path, sizeof path, "%s/train_summary.csv", dir);
  hl_csv_rows rows = {0};
  earlier_table earlier = {0};
  if (!keep_other_runs(path, name, mode, &rows, &earlier)) {
    hl_csv_rows_free(&rows);
    free(earlier.meta);
    return leave_as_it_is(dir, path, name, mode, row, earlier.why, err, len);
  }
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
