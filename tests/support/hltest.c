/* hltest.c — test support: processes, folders, CSV. */
#include "tests/support/hltest.h"

#include "core/base/error.h"
#include "core/base/mem.h"
#include "core/engine/tensor.h"
#include "cli/csv.h"
#include "cli/csv_text.h"
#include "formats/fatal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/base/device.h"

const char *hl_test_prog(const char *name) {
  char var[128];
  size_t k = 0;
  for (const char *p = name; *p && k + 1 < sizeof var; p++) var[k++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
  var[k] = '\0';
  const char *v = getenv(var);
  if (!v || !*v) fail_msg("environment variable %s (path of %s) is not set: run through meson test", var, name);
  return v;
}

static char *slurp(FILE *f) {
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  assert_non_null(buf);
  size_t got;
  rewind(f);
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (cap - n - 1 == 0) {
      cap *= 2;
      buf = realloc(buf, cap);
      assert_non_null(buf);
    }
  }
  buf[n] = '\0';
  return buf;
}

/* char NAME[] = the printf-style arguments of the enclosing function, formatted */
#define FORMAT_COMMAND(name, fmt)           \
  char name[8192];                          \
  do {                                      \
    va_list ap_;                            \
    va_start(ap_, fmt);                     \
    vsnprintf(name, sizeof name, fmt, ap_); \
    va_end(ap_);                            \
  } while (0)

static hl_run_result run_command(const char *cmd) {
  FILE *out = tmpfile(), *err = tmpfile();
  assert_non_null(out);
  assert_non_null(err);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fileno(out), 1);
    dup2(fileno(err), 2);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  hl_run_result r;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = slurp(out);
  r.err = slurp(err);
  fclose(out);
  fclose(err);
  return r;
}

hl_run_result hl_run(const char *fmt, ...) {
  FORMAT_COMMAND(cmd, fmt);
  return run_command(cmd);
}

hl_run_result hl_run_ok(const char *fmt, ...) {
  FORMAT_COMMAND(cmd, fmt);
  hl_run_result r = run_command(cmd);
  if (r.status != 0) fail_msg("%s: exit %d\nstdout:\n%s\nstderr:\n%s", cmd, r.status, r.out, r.err);
  return r;
}

void hl_run_free(hl_run_result *r) {
  free(r->out);
  free(r->err);
  r->out = r->err = NULL;
}

int hl_count_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

bool hl_has_line(const char *text, const char *a, const char *b) {
  for (const char *p = text; p && *p;) {
    const char *end = strchr(p, '\n');
    char *line = strndup(p, end ? (size_t)(end - p) : strlen(p));
    assert_non_null(line);
    const bool both = strstr(line, a) && (!b || strstr(line, b));
    free(line);
    if (both) return true;
    p = end ? end + 1 : NULL;
  }
  return false;
}

void hl_expect_refused(const char *dir, int status, const char *words, const char *fmt, ...) {
  FORMAT_COMMAND(cmd, fmt);
  const int before = dir ? hl_count_files(dir) : 0;
  hl_run_result r = run_command(cmd);
  if (r.status != status) fail_msg("%s: exit %d (want %d); stderr: %s", cmd, r.status, status, r.err);
  if (hl_count_lines(r.err) != 1 || (words && !strstr(r.err, words)))
    fail_msg("%s: stderr \"%s\" (want one line with \"%s\")", cmd, r.err, words ? words : "");
  if (*r.out) fail_msg("%s: stdout \"%s\" (want nothing)", cmd, r.out);
  if (dir && hl_count_files(dir) != before)
    fail_msg("%s: %s held %d entries before, %d after (want nothing created)", cmd, dir, before, hl_count_files(dir));
  hl_run_free(&r);
}

char *hl_tmpdir(void) {
  const char *base = getenv("TMPDIR");
  char tmpl[4096];
  snprintf(tmpl, sizeof tmpl, "%s/halflab-test-XXXXXX", base && *base ? base : "/tmp");
  char *d = mkdtemp(tmpl);
  assert_non_null(d);
  return strdup(d);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

void hl_rmtree(const char *dir) {
  if (dir) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

bool hl_waits_for_a_lock(long pid) {
  FILE *f = fopen("/proc/locks", "r");
  if (!f) return false;
  char line[512];
  bool waiting = false;
  while (fgets(line, sizeof line, f)) {
    const char *arrow = strstr(line, "->");
    char kind[16], advisory[16], rw[16];
    long who;
    if (arrow && sscanf(arrow + 2, "%15s %15s %15s %ld", kind, advisory, rw, &who) == 4 && who == pid) waiting = true;
  }
  fclose(f);
  return waiting;
}

int hl_count_files(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

bool hl_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

char *hl_path(const char *dir, const char *name) {
  static char buf[8][8192];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

char *hl_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  const long n = ftell(f);
  rewind(f);
  char *b = malloc((size_t)n + 1);
  assert_non_null(b);
  if (fread(b, 1, (size_t)n, f) != (size_t)n) fail_msg("reading %s failed", path);
  fclose(f);
  b[n] = '\0';
  if (len) *len = (size_t)n;
  return b;
}

void hl_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) fail_msg("cannot write %s", path);
  if (fwrite(data, 1, len, f) != len) fail_msg("writing %s failed", path);
  fclose(f);
}

uint32_t hl_test_crc32(const void *data, size_t len) {
  const unsigned char *p = data;
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < len; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

/* Split a CSV record in place (cli/csv_text.h: RFC 4180 quoting, CRLF); -1 when it is not one. */
static int split(char *line, char ***cells) {
  int n = 1;
  for (char *p = line; *p; p++) n += *p == ',';
  *cells = malloc(sizeof(char *) * (size_t)n);
  return hl_csv_split(line, *cells, n);
}

hl_table *hl_table_read(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  hl_table *t = calloc(1, sizeof *t);
  size_t metacap = 1, metalen = 0;
  t->meta = calloc(1, 1);
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int lineno = 0;
  bool ok = true;
  while ((len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
    if (lineno == 1 && !strncmp(line, "\xEF\xBB\xBF", 3)) { /* a byte order mark another system added */
      memmove(line, line + 3, (size_t)len - 2);
      len -= 3;
    }
    if (lineno == 1 && strncmp(line, "# halflab ", 10) != 0)
      fail_msg("%s: first line is not '# halflab <version>': %s", path, line);
    if (!strncmp(line, "# ", 2) && t->cols == NULL) {
      metacap = metalen + (size_t)len + 2;
      t->meta = realloc(t->meta, metacap);
      memcpy(t->meta + metalen, line, (size_t)len);
      metalen += (size_t)len;
      t->meta[metalen++] = '\n';
      t->meta[metalen] = '\0';
      continue;
    }
    if (len == 0) continue;
    char *copy = strdup(line);
    char **cells;
    int n = split(copy, &cells);
    if (!t->cols) {
      t->cols = cells;
      t->ncols = n;
      continue;
    }
    if (n != t->ncols) {
      ok = false;
      free(cells);
      free(copy);
      break;
    }
    t->cells = realloc(t->cells, sizeof(char **) * (size_t)(t->nrows + 1));
    t->cells[t->nrows++] = cells;
  }
  free(line);
  fclose(f);
  char schema_line[32];
  snprintf(schema_line, sizeof schema_line, "# schema: %d\n", HL_CSV_SCHEMA);
  if (!strstr(t->meta, schema_line)) fail_msg("%s: no '# schema: %d' line", path, HL_CSV_SCHEMA);
  if (!ok || !t->cols) {
    hl_table_free(t);
    return NULL;
  }
  return t;
}

void hl_table_free(hl_table *t) {
  if (!t) return;
  for (int r = 0; r < t->nrows; r++) {
    free(t->cells[r][0]);
    free(t->cells[r]);
  }
  if (t->cols) {
    free(t->cols[0]);
    free(t->cols);
  }
  free(t->cells);
  free(t->meta);
  free(t);
}

int hl_table_col(const hl_table *t, const char *name) {
  for (int c = 0; c < t->ncols; c++)
    if (!strcmp(t->cols[c], name)) return c;
  return -1;
}

const char *hl_table_get(const hl_table *t, int row, const char *col) {
  int c = hl_table_col(t, col);
  if (c < 0) fail_msg("no column '%s' in table", col);
  if (row < 0 || row >= t->nrows) fail_msg("row %d out of range (%d rows)", row, t->nrows);
  return t->cells[row][c];
}

double hl_table_num(const hl_table *t, int row, const char *col) {
  return strtod(hl_table_get(t, row, col), NULL);
}

int hl_table_find(const hl_table *t, ...) {
  for (int r = 0; r < t->nrows; r++) {
    va_list ap;
    va_start(ap, t);
    bool match = true;
    const char *col;
    while ((col = va_arg(ap, const char *))) {
      const char *want = va_arg(ap, const char *);
      int c = hl_table_col(t, col);
      if (c < 0 || strcmp(t->cells[r][c], want) != 0) match = false;
    }
    va_end(ap);
    if (match) return r;
  }
  return -1;
}

void hl_require_gpu(void) {
  char why[256];
  if (!hl_device_available(HL_DEVICE_CUDA, why, sizeof why)) {
    const char *require = getenv("HALFLAB_REQUIRE_GPU");
    if (require && !strcmp(require, "1")) { /* scripts/gpu-check.sh: a GPU machine without a usable GPU is a fault */
      printf("FAILED: HALFLAB_REQUIRE_GPU=1 and the GPU could not be used: %s\n", why);
      exit(1);
    }
    printf("skipped: no usable GPU: %s\n", why);
    exit(77);
  }
}

char *hl_run_cpu_ok(const char *prog, const char *args) {
  hl_run_result r = hl_run_ok("'%s' --device cpu %s", hl_test_prog(prog), args);
  free(r.err);
  return r.out;
}

/* ----------------------------------------------------- the core's calls -- */

void hl_ok_or_fail(int ok, const char *what, const char *file, int line) {
  if (!ok) fail_msg("%s:%d: %s failed: %s", file, line, what, hl_error());
}

void hl_refused_or_fail(int got, const char *what, const char **fragments, const char *file, int line) {
  if (got) fail_msg("%s:%d: %s was accepted", file, line, what);
  for (int i = 0; fragments[i]; i++)
    if (!strstr(hl_error(), fragments[i]))
      fail_msg("%s:%d: %s: message \"%s\" lacks \"%s\"", file, line, what, hl_error(), fragments[i]);
}

double *hl_tensor_values(const hl_tensor *t) {
  double *v = malloc(sizeof(double) * (size_t)(hl_numel(t) + 1));
  assert_non_null(v);
  OK(hl_read_f64(t, v));
  return v;
}

uint64_t hl_cpu_live_bytes(void) { return hl_mem_get_stats(HL_DEVICE_CPU).current; }

int hl_child_stderr(void (*fn)(void), const char *program, char *err, size_t len) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    hl_fatal_set_program(program);
    fn();
    _exit(HL_CHILD_RETURNED);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t got;
  while (n + 1 < len && (got = read(fds[0], err + n, len - 1 - n)) > 0) n += (size_t)got;
  err[n] = '\0';
  close(fds[0]);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
