/* hltest.h — what halflab's cmocka tests share: running the programs and
 * reading their CSV back (e2e), scratch folders, and the gpu suite's skip. */
#ifndef HL_TEST_H
#define HL_TEST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h> /* cmocka needs these before cmocka.h */
#include <stdint.h>
#include <cmocka.h>

/* ---------------------------------------------------------- programs -- */

typedef struct {
  int status; /* exit status; 128+signal when killed */
  char *out;  /* captured stdout (NUL-terminated) */
  char *err;  /* captured stderr */
} hl_run_result;

/* Path of a built program, from the environment variable meson sets for the
 * test (halflab-numerics -> $HALFLAB_NUMERICS). Fails the test if unset. */
const char *hl_test_prog(const char *name);

/* Runs `sh -c CMD` (printf-style) and captures its output. */
hl_run_result hl_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hl_run_free(hl_run_result *r);

/* A fresh empty folder under $TMPDIR (removed by hl_rmtree). */
char *hl_tmpdir(void);
void hl_rmtree(const char *dir);
/* Number of entries in a folder (-1 if it cannot be read). */
int hl_count_files(const char *dir);
bool hl_file_exists(const char *path);

/* ---------------------------------------------------- CSV read-back -- */

typedef struct {
  int ncols, nrows;
  char **cols;    /* header names */
  char ***cells;  /* cells[row][col] */
  char *meta;     /* the "# " lines, joined with '\n' */
} hl_table;

/* Reads a halflab CSV; NULL if the file is missing or malformed (a row with
 * the wrong number of cells, no header). Fails the test on a missing
 * "# halflab" first line or "# schema: 1" line. */
hl_table *hl_table_read(const char *path);
void hl_table_free(hl_table *t);
int hl_table_col(const hl_table *t, const char *name);          /* -1 if absent */
const char *hl_table_get(const hl_table *t, int row, const char *col);  /* fails the test if col absent */
double hl_table_num(const hl_table *t, int row, const char *col);       /* strtod of the cell */
/* First row whose cells equal the given values: pairs of (column, value),
 * NULL-terminated. -1 if none. */
int hl_table_find(const hl_table *t, ...);

/* ------------------------------------------------------------- gpu -- */

/* Exits 77 (meson: skipped) with the reason when no usable GPU is present. */
void hl_require_gpu(void);

#endif
