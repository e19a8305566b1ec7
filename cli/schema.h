/* schema.h — each CSV a program writes is described once, as a table of
 * columns. The same table writes the header, the "# units:" metadata line,
 * every row, and the section of docs/columns.md that explains the file.
 *
 * A row is filled by column name and written only when every column is set
 * exactly once with a value of the column's type: a writer that forgets a
 * column, sets one twice, names one the table lacks or gives it the wrong
 * type stops with a message naming the file and the column (a test then
 * fails), instead of shifting every later cell.
 *
 * One way of writing each kind of value, for every file:
 *   integers   exactly, in decimal ("17179869184", never "1.71799e+10");
 *   reals      the column's printf format; NaN as "nan", infinities as
 *              "inf" and "-inf" (results, not gaps);
 *   missing    an empty cell: the quantity does not apply or was not
 *              measured in this row (hl_row_missing);
 *   text       as given when it is one line of plain text without a comma
 *              or a double quote; else made one visible line (control
 *              characters and invalid UTF-8 as escapes) and quoted as RFC
 *              4180 says (cli/csv_text.h): a value from a user never adds a
 *              cell or a line.
 */
#ifndef HL_SCHEMA_H
#define HL_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HL_SCHEMA_MAX_COLUMNS 96
#define HL_ROW_MAX_CHARS 8192

typedef enum {
  HL_COL_INT,  /* int64_t, printed exactly */
  HL_COL_REAL, /* double, printed with the column's format */
  HL_COL_TEXT  /* a word or phrase; quoted when it holds a comma or a quote */
} hl_column_type;

typedef struct hl_column {
  const char *name;      /* one name per quantity, units in it: "step_time_ms_median" */
  const char *unit;      /* "ms", "bytes", "flop/s", "1" (a plain number), "" (text) */
  hl_column_type type;
  const char *format;    /* reals: "%.9g"; NULL: "%.9g". Ignored for ints and text */
  const char *meaning;   /* one sentence for docs/columns.md */
  const char *filled_by; /* the function that computes the value: "train/loop.c: step_timing" */
} hl_column;

typedef struct hl_schema {
  const char *file;       /* "gemm.csv", or a pattern: "train_RUN_MODE_steps.csv" */
  const char *program;    /* "halflab-bench gemm" */
  const char *written_by; /* the function that writes the rows: "bench/gemm.c: gemm_write_rows" */
  const char *about;      /* what one row is, for docs/columns.md */
  const hl_column *columns;
  int n_columns;
} hl_schema;

/* A schema from a static column array. */
#define HL_SCHEMA_COLUMNS(array) (array), ((int)(sizeof(array) / sizeof((array)[0])))

/* Checks a schema once: names unique, non-empty, [a-z0-9_]; every field
 * filled; at most HL_SCHEMA_MAX_COLUMNS. false with the reason in why. */
bool hl_schema_valid(const hl_schema *s, char *why, size_t len);
/* "a,b,c" (no newline). Fatal when it does not fit. */
void hl_schema_header(const hl_schema *s, char *out, size_t len);
/* "name=unit,name=unit" for every column with a unit (the value of the
 * "# units:" metadata line). */
void hl_schema_units(const hl_schema *s, char *out, size_t len);
/* The index of a column, -1 when the schema has none of that name. */
int hl_schema_find(const hl_schema *s, const char *name);
/* The file's section of docs/columns.md: a heading, the program and the
 * writer, and a table of every column. */
void hl_schema_markdown(const hl_schema *s, FILE *out);

/* One row being filled. Lives on the stack; hl_row_begin resets it. */
typedef struct hl_row {
  const hl_schema *schema;
  int n_set;
  bool set[HL_SCHEMA_MAX_COLUMNS];
  unsigned short start[HL_SCHEMA_MAX_COLUMNS], length[HL_SCHEMA_MAX_COLUMNS];
  size_t used;
  char cells[HL_ROW_MAX_CHARS];
  char line[HL_ROW_MAX_CHARS + HL_SCHEMA_MAX_COLUMNS];
} hl_row;

void hl_row_begin(hl_row *r, const hl_schema *s);
void hl_row_int(hl_row *r, const char *column, int64_t value);
void hl_row_real(hl_row *r, const char *column, double value);
/* A REAL column's value held in a long double (a product exact in 64 bits of
 * mantissa but not in a double's 53), printed with the column's format. */
void hl_row_real_long(hl_row *r, const char *column, long double value);
void hl_row_text(hl_row *r, const char *column, const char *value);
/* printf-formatted text, written as hl_row_text writes it. */
void hl_row_textf(hl_row *r, const char *column, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void hl_row_bool(hl_row *r, const char *column, bool value); /* an INT column: 1 or 0 */
/* The quantity does not apply to this row: an empty cell. */
void hl_row_missing(hl_row *r, const char *column);
/* The finished line, without a newline. Fatal when a column is unset. */
const char *hl_row_line(hl_row *r);

#ifdef __cplusplus
}
#endif

#endif /* HL_SCHEMA_H */
