/* csv.h — the one CSV schema every halflab file follows:
 *   "# " metadata lines (program and version, schema, command, device, host,
 *   CUDA versions when used, date, and any extra key the program adds),
 *   then a header row and tidy rows with units in the column names.
 * Tables are written to NAME.tmp and renamed when complete, so a crash never
 * leaves half a file. Logs (per-step training rows) are written a whole line
 * per write(2), and a write that fails or falls short is cut back to the
 * last complete line, so an interrupted run or a full disk leaves only
 * complete lines. Every failure names the file and the system's message for
 * the errno of the call that failed. */
#ifndef HL_CSV_H
#define HL_CSV_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/schema.h"
#include "kernels/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HL_CSV_SCHEMA 2

/* Run metadata shared by every file a program writes. */
void hl_meta_init(int argc, char **argv);
/* Devices whose results the files hold ("device" line; "cuda" line when CUDA is one). */
void hl_meta_set_devices(const hl_device_kind *kinds, int n);
/* Extra "# key: value" line; a later call with the same key replaces it. */
void hl_meta_set(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* All metadata lines, each starting with "# " and ending in '\n'. */
const char *hl_meta_text(void);
/* Two of them, for a table that gathers the rows of many runs (train_summary.csv) and so carries
 * them as columns: the version as the "# halflab" line gives it ("0.1.0 (GIT-DESCRIBE)", -dirty
 * when built from a tree with uncommitted changes) and the run's start as the "# date:" line. */
const char *hl_meta_version(void);
const char *hl_meta_date(void);

typedef enum {
  HL_CSV_TABLE,      /* NAME.tmp, renamed to NAME on close */
  HL_CSV_LOG,        /* NAME, truncated, one write(2) per row */
  HL_CSV_LOG_APPEND  /* NAME, appended (a resumed run); header written only if new */
} hl_csv_mode;

typedef struct hl_csv hl_csv;

/* The file a schema describes (name NULL: the schema's file; a name for a
 * file named per run from the schema's pattern): the metadata, a "# units:"
 * line and the schema's header. Every file is opened this way, so none is
 * written without its column table. NULL with a message in err (the path and
 * strerror) on failure. */
hl_csv *hl_csv_open_schema(const char *dir, const char *name, const hl_schema *s, hl_csv_mode mode, char *err,
                           size_t errlen);
/* A complete row (hl_row_line: fatal when a column is unset); as hl_csv_row. */
bool hl_csv_put(hl_csv *c, hl_row *r);
/* One row; the newline is added. false once the file has failed: a log's
 * row is then not written (the file keeps its complete lines) and
 * hl_csv_failure says why; a table's error may show only at hl_csv_close. */
bool hl_csv_row(hl_csv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "write to PATH failed: No space left on device" after a failed row; "" before. */
const char *hl_csv_failure(const hl_csv *c);
/* Tables: flush, sync, close and rename into place. Logs: sync and close.
 * false with a message (the call, the file, strerror) on any I/O error,
 * an earlier failed row's included. */
bool hl_csv_close(hl_csv *c, char *err, size_t errlen);
/* Closes without a check or a sync (a log keeps what it has; a table's
 * NAME.tmp is removed): for a run that is failing already. */
void hl_csv_abandon(hl_csv *c);

/* Result rows held in memory until a run is complete, then written as one
 * table: a run that fails before leaves no CSV behind. A row that cannot be
 * kept (out of memory) makes hl_csv_rows_write fail. */
typedef struct {
  char **rows;
  int n, cap;
  bool failed;
} hl_csv_rows;
/* A row kept as text: one read back from an earlier file of the same
 * table (train_summary.csv's other runs), already in the table's layout. */
void hl_csv_rows_add(hl_csv_rows *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A complete row, kept (hl_row_line: fatal when a column is unset). */
void hl_csv_rows_put(hl_csv_rows *rows, hl_row *r);
/* DIR/NAME (NULL: the schema's file) as a table (HL_CSV_TABLE) with the
 * schema's units line and header, then every row. false with a message in
 * err; a row that could not be kept fails it before any file is made. */
bool hl_csv_rows_write_schema(const hl_csv_rows *r, const char *dir, const char *name, const hl_schema *s, char *err,
                              size_t errlen);
/* The same under the metadata lines `meta` (each "# ...\n") in place of hl_meta_text(): a
 * table of many runs' rows, whose lines are those every row's run shares. */
bool hl_csv_rows_write_schema_meta(const hl_csv_rows *r, const char *dir, const char *name, const hl_schema *s,
                                   const char *meta, char *err, size_t errlen);
void hl_csv_rows_free(hl_csv_rows *r);

#ifdef __cplusplus
}
#endif

#endif
