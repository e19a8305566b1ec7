/* schema.c — headers, unit lines, rows and docs from one column table. */
#include "cli/schema.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "cli/csv_text.h"
#include "formats/fatal.h"

static bool name_ok(const char *n) {
  if (!n || !*n) return false;
  for (const char *p = n; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return false;
  return true;
}

bool hl_schema_valid(const hl_schema *s, char *why, size_t len) {
  if (!s->file || !s->program || !s->written_by || !s->about || !s->columns) {
    snprintf(why, len, "%s: file, program, written_by, about and columns must all be given",
             s->file ? s->file : "(no file)");
    return false;
  }
  if (s->n_columns < 1 || s->n_columns > HL_SCHEMA_MAX_COLUMNS) {
    snprintf(why, len, "%s: %d columns (1 to %d allowed)", s->file, s->n_columns, HL_SCHEMA_MAX_COLUMNS);
    return false;
  }
  for (int i = 0; i < s->n_columns; i++) {
    const hl_column *c = &s->columns[i];
    if (!name_ok(c->name)) {
      snprintf(why, len, "%s: column %d has the name \"%s\" (only a-z, 0-9 and _ allowed)", s->file, i + 1,
               c->name ? c->name : "");
      return false;
    }
    if (!c->unit || !c->meaning || !*c->meaning || !c->filled_by || !*c->filled_by) {
      snprintf(why, len, "%s: column %s lacks its unit, meaning or filled_by", s->file, c->name);
      return false;
    }
    if ((c->type == HL_COL_TEXT) != (c->unit[0] == '\0')) {
      snprintf(why, len, "%s: column %s: text columns have no unit and numbers have one (\"1\" for a plain number)",
               s->file, c->name);
      return false;
    }
    for (int j = 0; j < i; j++)
      if (!strcmp(s->columns[j].name, c->name)) {
        snprintf(why, len, "%s: column %s appears twice (columns %d and %d)", s->file, c->name, j + 1, i + 1);
        return false;
      }
  }
  return true;
}

static void check_schema(const hl_schema *s) {
  char why[512];
  if (!hl_schema_valid(s, why, sizeof why)) hl_fatal("schema of %s", why);
}

void hl_schema_header(const hl_schema *s, char *out, size_t len) {
  check_schema(s);
  size_t k = 0;
  for (int i = 0; i < s->n_columns; i++) {
    const int n = snprintf(out + k, len - k, "%s%s", i ? "," : "", s->columns[i].name);
    if (n < 0 || (size_t)n >= len - k) hl_fatal("%s: the header does not fit in %zu bytes", s->file, len);
    k += (size_t)n;
  }
}

void hl_schema_units(const hl_schema *s, char *out, size_t len) {
  size_t k = 0;
  out[0] = '\0';
  for (int i = 0; i < s->n_columns; i++) {
    const hl_column *c = &s->columns[i];
    if (!c->unit[0]) continue;
    const int n = snprintf(out + k, len - k, "%s%s=%s", k ? "," : "", c->name, c->unit);
    if (n < 0 || (size_t)n >= len - k) hl_fatal("%s: the units line does not fit in %zu bytes", s->file, len);
    k += (size_t)n;
  }
}

int hl_schema_find(const hl_schema *s, const char *name) {
  for (int i = 0; i < s->n_columns; i++)
    if (!strcmp(s->columns[i].name, name)) return i;
  return -1;
}

static const char *type_word(const hl_column *c) {
  switch (c->type) {
  case HL_COL_INT: return "integer";
  case HL_COL_REAL: return c->format ? c->format : "%.9g";
  case HL_COL_TEXT: return "text";
  }
  return "?";
}

static const char *kind_word(hl_column_type t) {
  return t == HL_COL_INT ? "integer" : t == HL_COL_REAL ? "real" : "text";
}

/* Markdown table cells may not hold a bare '|'. */
static void md_cell(FILE *out, const char *text) {
  for (const char *p = text; *p; p++) {
    if (*p == '|') fputc('\\', out);
    fputc(*p, out);
  }
}

void hl_schema_markdown(const hl_schema *s, FILE *out) {
  check_schema(s);
  fprintf(out, "## %s\n\n", s->file);
  fprintf(out, "Written by `%s` in `%s`. ", s->program, s->written_by);
  md_cell(out, s->about);
  fprintf(out, "\n\n| column | unit | type | meaning | computed in |\n|---|---|---|---|---|\n");
  for (int i = 0; i < s->n_columns; i++) {
    const hl_column *c = &s->columns[i];
    fprintf(out, "| `%s` | %s | %s%s%s | ", c->name, c->unit[0] ? c->unit : "-", c->type == HL_COL_REAL ? "real `" : "",
            type_word(c), c->type == HL_COL_REAL ? "`" : "");
    md_cell(out, c->meaning);
    fprintf(out, " | `%s` |\n", c->filled_by);
  }
  fputc('\n', out);
}

void hl_row_begin(hl_row *r, const hl_schema *s) {
  check_schema(s);
  r->schema = s;
  r->n_set = 0;
  r->used = 0;
  memset(r->set, 0, sizeof r->set);
}

/* The column's index, after checking the row may take a value of this type. */
static int column_for(hl_row *r, const char *column, hl_column_type type) {
  if (!r->schema) hl_fatal("a row filled before hl_row_begin (column %s)", column);
  const int i = hl_schema_find(r->schema, column);
  if (i < 0) hl_fatal("%s: the row sets column %s, which the schema lacks", r->schema->file, column);
  if (r->set[i]) hl_fatal("%s: the row sets column %s twice", r->schema->file, column);
  if (r->schema->columns[i].type != type)
    hl_fatal("%s: column %s is %s, and the row gives it %s", r->schema->file, column,
             kind_word(r->schema->columns[i].type), type == HL_COL_INT ? "an integer" : type == HL_COL_REAL ? "a real" : "text");
  return i;
}

static void put(hl_row *r, int i, const char *text) {
  const size_t n = strlen(text);
  if (r->used + n > sizeof r->cells)
    hl_fatal("%s: a row longer than %zu characters", r->schema->file, sizeof r->cells);
  memcpy(r->cells + r->used, text, n);
  r->start[i] = (unsigned short)r->used;
  r->length[i] = (unsigned short)n;
  r->used += n;
  r->set[i] = true;
  r->n_set++;
}

void hl_row_int(hl_row *r, const char *column, int64_t value) {
  const int i = column_for(r, column, HL_COL_INT);
  char text[24];
  snprintf(text, sizeof text, "%" PRId64, value);
  put(r, i, text);
}

void hl_row_bool(hl_row *r, const char *column, bool value) { hl_row_int(r, column, value ? 1 : 0); }

void hl_row_real(hl_row *r, const char *column, double value) {
  const int i = column_for(r, column, HL_COL_REAL);
  char text[64];
  if (isnan(value)) snprintf(text, sizeof text, "nan");
  else if (isinf(value)) snprintf(text, sizeof text, value > 0 ? "inf" : "-inf");
  else {
    const char *fmt = r->schema->columns[i].format ? r->schema->columns[i].format : "%.9g";
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(text, sizeof text, fmt, value);
#pragma GCC diagnostic pop
  }
  put(r, i, text);
}

void hl_row_real_long(hl_row *r, const char *column, long double value) {
  if (isnan(value) || isinf(value)) { /* nan, inf and -inf: written as for a double */
    hl_row_real(r, column, (double)value);
    return;
  }
  const int i = column_for(r, column, HL_COL_REAL);
  /* the column's format with the L length modifier: "%.17g" -> "%.17Lg" */
  const char *fmt = r->schema->columns[i].format ? r->schema->columns[i].format : "%.9g";
  char long_fmt[32], text[64];
  const size_t n = strlen(fmt);
  if (n < 2 || n + 2 > sizeof long_fmt || !strchr("aAeEfFgG", fmt[n - 1]))
    hl_fatal("%s: column %s: format \"%s\" does not end in a conversion of reals", r->schema->file, column, fmt);
  snprintf(long_fmt, sizeof long_fmt, "%.*sL%c", (int)(n - 1), fmt, fmt[n - 1]);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  snprintf(text, sizeof text, long_fmt, value);
#pragma GCC diagnostic pop
  put(r, i, text);
}

void hl_row_text(hl_row *r, const char *column, const char *value) {
  const int i = column_for(r, column, HL_COL_TEXT);
  if (!value) hl_fatal("%s: column %s given no text (hl_row_missing says a cell is empty)", r->schema->file, column);
  /* the value may come from a user (a name, a path, the environment): escaped to one line, quoted when needed */
  char cell[HL_ROW_MAX_CHARS];
  hl_csv_cell(value, cell, sizeof cell); /* cut to a row's room; put() stops a row that outgrows it */
  put(r, i, cell);
}

void hl_row_textf(hl_row *r, const char *column, const char *fmt, ...) {
  char text[HL_ROW_MAX_CHARS];
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof text) hl_fatal("%s: column %s: text longer than %zu", r->schema->file, column, sizeof text);
  hl_row_text(r, column, text);
}

void hl_row_missing(hl_row *r, const char *column) {
  if (!r->schema) hl_fatal("a row filled before hl_row_begin (column %s)", column);
  const int i = hl_schema_find(r->schema, column);
  if (i < 0) hl_fatal("%s: the row sets column %s, which the schema lacks", r->schema->file, column);
  if (r->set[i]) hl_fatal("%s: the row sets column %s twice", r->schema->file, column);
  put(r, i, "");
}

const char *hl_row_line(hl_row *r) {
  const hl_schema *s = r->schema;
  if (!s) hl_fatal("hl_row_line before hl_row_begin");
  if (r->n_set != s->n_columns)
    for (int i = 0; i < s->n_columns; i++)
      if (!r->set[i])
        hl_fatal("%s: the row leaves column %s unset (%d of %d set)", s->file, s->columns[i].name, r->n_set,
                 s->n_columns);
  size_t k = 0;
  for (int i = 0; i < s->n_columns; i++) {
    if (i) r->line[k++] = ',';
    memcpy(r->line + k, r->cells + r->start[i], r->length[i]);
    k += r->length[i];
  }
  r->line[k] = '\0';
  return r->line;
}
