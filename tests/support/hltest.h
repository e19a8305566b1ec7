/* hltest.h — what halflab's cmocka tests share: running the programs, their
 * refusal of bad input, and reading their CSV back (e2e), scratch folders
 * and files, and the gpu suite's skip. */
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
/* hl_run that fails the test unless CMD exits 0 (the message shows the
 * command, its status and both streams). */
hl_run_result hl_run_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hl_run_free(hl_run_result *r);

/* Bad input: runs CMD (printf-style) and fails the test, naming the command,
 * unless it exits with `status`, writes nothing on stdout and exactly one
 * line on stderr, that line contains `words` (NULL: any), and the folder
 * `dir` (NULL: none) holds as many entries afterwards as before: nothing
 * created. */
void hl_expect_refused(const char *dir, int status, const char *words, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Runs fn in a forked child whose program name (formats/fatal.h) is
 * `program`, its stderr captured into err (NUL-terminated); returns the
 * child's exit status, HL_CHILD_RETURNED when fn returned, 128 + the signal
 * when one ended it. For the paths that must stop the program. */
enum { HL_CHILD_RETURNED = 99 };
int hl_child_stderr(void (*fn)(void), const char *program, char *err, size_t len);

/* Number of '\n' in s. */
int hl_count_lines(const char *s);
/* Whether a line of text contains both a and b (b NULL: a alone). */
bool hl_has_line(const char *text, const char *a, const char *b);

/* A fresh empty folder under $TMPDIR (removed by hl_rmtree). */
char *hl_tmpdir(void);
void hl_rmtree(const char *dir);
/* Number of entries in a folder (-1 if it cannot be read). */
int hl_count_files(const char *dir);
bool hl_file_exists(const char *path);
/* Whether process PID waits for an fcntl lock now (a "->" line of
 * /proc/locks naming it). */
bool hl_waits_for_a_lock(long pid);
/* "DIR/NAME" in one of 8 static buffers used in turn: valid until the
 * eighth call after, for passing a path straight on. */
char *hl_path(const char *dir, const char *name);
/* The whole file, NUL-terminated (free it); its size in *len when len is
 * not NULL. NULL when it cannot be opened. */
char *hl_read_file(const char *path, size_t *len);
/* Writes len bytes to path, replacing it; fails the test on error. */
void hl_write_file(const char *path, const void *data, size_t len);
/* zlib's CRC-32, bit by bit: independent of the table-driven one in core/base/
 * that halflab's files carry, so a test can check those files. */
uint32_t hl_test_crc32(const void *data, size_t len);

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

/* Exits 77 (meson: skipped) with the reason when no usable GPU is present;
 * with HALFLAB_REQUIRE_GPU=1 (scripts/gpu-check.sh sets it) exits 1 instead,
 * saying why the GPU could not be used. */
void hl_require_gpu(void);

/* Runs program PROG (hl_test_prog) with --device cpu ARGS, failing unless
 * it exits 0; its stdout (malloc'd). */
char *hl_run_cpu_ok(const char *prog, const char *args);

/* ----------------------------------------------------- the core's calls -- */

struct hl_tensor;

/* Fails the test, at the caller's file:line with hl_error(), when p is
 * NULL / false. */
#define OK(p) hl_ok_or_fail((p) != 0, #p, __FILE__, __LINE__)
void hl_ok_or_fail(int ok, const char *what, const char *file, int line);
/* expr must fail (NULL / false) with a message containing every fragment. */
#define REFUSED(expr, ...) \
  hl_refused_or_fail((expr) != 0, #expr, (const char *[]){__VA_ARGS__, NULL}, __FILE__, __LINE__)
void hl_refused_or_fail(int got, const char *what, const char **fragments, const char *file, int line);
/* All of a tensor's values as doubles (malloc'd). */
double *hl_tensor_values(const struct hl_tensor *t);
/* Bytes the accounting allocator holds on the CPU now: tests compare before
 * and after to find leaked tensors or graphs. */
uint64_t hl_cpu_live_bytes(void);

#endif
