/* csv.c — metadata, atomic CSV tables and logs written a whole line at a time. */
#include "cli/csv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cli/csv_text.h"
#include "core/base/atomic_file.h"
#include "core/base/device.h"
#include "kernels/host.h"
#include "version.h"

#define META_MAX 32

static char command_[2048];
static char date_[32];
static char device_[1024];
static char cuda_[256];
static char keys_[META_MAX][48];
static char values_[META_MAX][512];
static int nkeys_;
static char text_[16384];

void hl_meta_init(int argc, char **argv) {
  size_t k = 0;
  command_[0] = '\0';
  for (int i = 0; i < argc && k < sizeof command_ - 1; i++) {
    const char *a = argv[i];
    if (i == 0) { /* program name without its directory */
      const char *slash = strrchr(a, '/');
      if (slash) a = slash + 1;
    }
    int n = snprintf(command_ + k, sizeof command_ - k, "%s%s", i ? " " : "", a);
    if (n < 0) break;
    k += (size_t)n;
  }
  if (k >= sizeof command_) k = sizeof command_ - 1;
  command_[k] = '\0';
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(date_, sizeof date_, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void hl_meta_set_devices(const hl_device_kind *kinds, int n) {
  size_t k = 0;
  device_[0] = cuda_[0] = '\0';
  for (int i = 0; i < n; i++) {
    int w = snprintf(device_ + k, sizeof device_ - k, "%s%s", i ? "; " : "", hl_device_describe(kinds[i]));
    if (w > 0) k += (size_t)w;
    if (k >= sizeof device_) break;
    if (kinds[i] == HL_DEVICE_CUDA) snprintf(cuda_, sizeof cuda_, "%s", hl_device_facts_get(kinds[i])->versions);
  }
}

void hl_meta_set(const char *key, const char *fmt, ...) {
  int i;
  for (i = 0; i < nkeys_; i++)
    if (!strcmp(keys_[i], key)) break;
  if (i == nkeys_) {
    if (nkeys_ == META_MAX) return;
    nkeys_++;
    snprintf(keys_[i], sizeof keys_[i], "%s", key);
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(values_[i], sizeof values_[i], fmt, ap);
  va_end(ap);
}

const char *hl_meta_version(void) {
  static char version[256];
  snprintf(version, sizeof version, "%s (%s)", HL_VERSION, HL_GIT_DESCRIBE);
  return version;
}

const char *hl_meta_date(void) { return date_[0] ? date_ : "unknown"; }

/* Appends "# " PREFIX VALUE "\n" to text_ at *k, the value made one visible
 * line (csv_text.h): whatever an option, the environment or the system gave
 * it, a metadata line never splits. A line that does not fit is cut, never
 * left without its newline. */
static void meta_line(size_t *k, const char *prefix, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void meta_line(size_t *k, const char *prefix, const char *fmt, ...) {
  char value[4096], line[4 * sizeof value];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(value, sizeof value, fmt, ap);
  va_end(ap);
  hl_text_one_line(value, line, sizeof line);
  const size_t room = sizeof text_ - *k;
  if (room < strlen(prefix) + 4) return;
  const int n = snprintf(text_ + *k, room - 1, "# %s%s", prefix, line);
  *k += n < 0 ? 0 : (size_t)n >= room - 1 ? room - 2 : (size_t)n;
  text_[(*k)++] = '\n';
  text_[*k] = '\0';
}

const char *hl_meta_text(void) {
  struct utsname u;
  char host[512] = "unknown";
  if (uname(&u) == 0) snprintf(host, sizeof host, "%s, %s %s %s", u.nodename, u.sysname, u.release, u.machine);
  size_t k = 0;
  text_[0] = '\0';
  meta_line(&k, "halflab ", "%s", hl_meta_version());
  meta_line(&k, "schema: ", "%d", HL_CSV_SCHEMA);
  meta_line(&k, "command: ", "%s", command_[0] ? command_ : "unknown");
  meta_line(&k, "device: ", "%s", device_[0] ? device_ : "unknown");
  meta_line(&k, "host: ", "%s", host);
  if (cuda_[0]) meta_line(&k, "cuda: ", "%s", cuda_);
  meta_line(&k, "date: ", "%s", hl_meta_date());
  /* Whatever device ran, the CPU's units, BLAS and oneDNN are part of the
   * record: they decide every CPU figure, and a generic BLAS kernel set is
   * flagged. */
  char features[512];
  hl_cpu_features_line(hl_cpu_features_get(), features, sizeof features);
  char units[256];
  hl_cpu_units_line(units, sizeof units);
  const hl_blas_info *blas = hl_blas_info_get();
  meta_line(&k, "cpu-features: ", "%s", features);
  meta_line(&k, "cpu-units: ", "%s", units);
  if (!blas->opened) meta_line(&k, "blas: ", "%s", blas->version);
  else
    meta_line(&k, "blas: ", "%s, kernels %s (chosen by %s); library %s%s%s", blas->version, blas->kernels,
              blas->chosen_by, blas->library, blas->config[0] ? "; config: " : "", blas->config);
  char onednn[512];
  hl_onednn_line(onednn, sizeof onednn);
  meta_line(&k, "onednn: ", "%s", onednn);
  if (blas->warning[0]) meta_line(&k, "blas-warning: ", "%s", blas->warning);
  for (int i = 0; i < nkeys_; i++) {
    char prefix[sizeof keys_[i] + 2];
    snprintf(prefix, sizeof prefix, "%.47s: ", keys_[i]);
    meta_line(&k, prefix, "%s", values_[i]);
  }
  return text_;
}

struct hl_csv {
  hl_csv_mode mode;
  char path[4096];
  hl_atomic_file table; /* HL_CSV_TABLE: written as PATH.tmp, renamed when closed */
  int fd;               /* logs: written a whole line per write(2) */
  long long size;       /* logs: bytes of complete lines in the file */
  bool failed;
  int saved_errno;
  char failure[4400];   /* what failed, for hl_csv_failure */
};

/* A log's line (or its metadata and header) as one write; after a failed or
 * short write the file is cut back to its last complete line. */
static bool log_write(hl_csv *c, const char *text, size_t len) {
  if (c->failed) return false;
  if (hl_write_all(c->fd, text, len)) {
    c->size += (long long)len;
    return true;
  }
  c->failed = true;
  c->saved_errno = errno;
  snprintf(c->failure, sizeof c->failure, "write to %s failed: %s", c->path, strerror(c->saved_errno));
  if (ftruncate(c->fd, (off_t)c->size) != 0) { /* the half line stays: say so */
    const size_t k = strlen(c->failure);
    snprintf(c->failure + k, sizeof c->failure - k, " (and cutting it back to its last complete line: %s)",
             strerror(errno));
  }
  return false;
}

/* units: the value of the "# units:" line after the metadata lines `meta` (NULL: hl_meta_text()). */
static hl_csv *csv_open(const char *dir, const char *name, const char *meta, const char *header, const char *units,
                        hl_csv_mode mode, char *err, size_t errlen) {
  hl_csv *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  c->mode = mode;
  c->fd = -1;
  snprintf(c->path, sizeof c->path, "%s/%s", dir, name);
  bool fresh = true;
  if (mode == HL_CSV_TABLE) {
    if (!hl_atomic_open(&c->table, c->path)) {
      hl_atomic_describe(&c->table, errno, err, errlen);
      free(c);
      return NULL;
    }
  } else {
    const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode == HL_CSV_LOG_APPEND ? O_APPEND : O_TRUNC);
    c->fd = open(c->path, flags, 0666);
    struct stat st;
    if (c->fd >= 0 && fstat(c->fd, &st) != 0) close(c->fd), c->fd = -1;
    if (c->fd < 0) {
      snprintf(err, errlen, "open of %s failed: %s", c->path, strerror(errno));
      free(c);
      return NULL;
    }
    c->size = (long long)st.st_size;
    fresh = st.st_size == 0;
  }
  if (fresh) {
    if (!meta) meta = hl_meta_text();
    const size_t nm = strlen(meta), nh = strlen(header), nu = strlen(units) + sizeof "# units: \n" - 1;
    char *text = malloc(nm + nu + nh + 2);
    if (!text) {
      snprintf(err, errlen, "out of memory");
      if (c->fd >= 0) close(c->fd);
      else hl_atomic_discard(&c->table);
      free(c);
      return NULL;
    }
    memcpy(text, meta, nm);
    snprintf(text + nm, nu + 1, "# units: %s\n", units);
    memcpy(text + nm + nu, header, nh);
    text[nm + nu + nh] = '\n';
    bool ok = true;
    if (mode == HL_CSV_TABLE) fwrite(text, 1, nm + nu + nh + 1, c->table.f); /* errors are kept by the stream */
    else ok = log_write(c, text, nm + nu + nh + 1);
    free(text);
    if (!ok) {
      snprintf(err, errlen, "%s", c->failure);
      close(c->fd);
      if (mode == HL_CSV_LOG) unlink(c->path); /* nothing of it was written: no empty file left */
      free(c);
      return NULL;
    }
  }
  return c;
}

static hl_csv *open_schema(const char *dir, const char *name, const hl_schema *s, const char *meta, hl_csv_mode mode,
                           char *err, size_t errlen) {
  char header[4096], units[4096];
  hl_schema_header(s, header, sizeof header);
  hl_schema_units(s, units, sizeof units);
  return csv_open(dir, name ? name : s->file, meta, header, units, mode, err, errlen);
}

hl_csv *hl_csv_open_schema(const char *dir, const char *name, const hl_schema *s, hl_csv_mode mode, char *err,
                           size_t errlen) {
  return open_schema(dir, name, s, NULL, mode, err, errlen);
}

bool hl_csv_put(hl_csv *c, hl_row *r) { return hl_csv_row(c, "%s", hl_row_line(r)); }

bool hl_csv_row(hl_csv *c, const char *fmt, ...) {
  if (c->failed) return false;
  char line[8192];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof line - 1) {
    c->failed = true;
    c->saved_errno = EOVERFLOW;
    snprintf(c->failure, sizeof c->failure, "a row of %s is too long for its line buffer", c->path);
    return false;
  }
  line[n] = '\n';
  if (c->mode != HL_CSV_TABLE) return log_write(c, line, (size_t)n + 1); /* one write per line: never half a row */
  fwrite(line, 1, (size_t)n + 1, c->table.f);
  return !ferror(c->table.f); /* the stream keeps the error; hl_csv_close reports it */
}

const char *hl_csv_failure(const hl_csv *c) { return c->failed ? c->failure : ""; }

bool hl_csv_close(hl_csv *c, char *err, size_t errlen) {
  if (!c) return false;
  bool ok = !c->failed;
  if (!ok) snprintf(err, errlen, "%s", c->failure);
  if (c->mode == HL_CSV_TABLE) {
    if (!ok) hl_atomic_discard(&c->table);
    else if (!hl_atomic_commit(&c->table)) {
      ok = false;
      hl_atomic_describe(&c->table, errno, err, errlen);
    }
  } else {
    /* a log ends on disk: a completed run renames it to its final name next */
    if (ok && fsync(c->fd) != 0) {
      ok = false;
      snprintf(err, errlen, "fsync of %s failed: %s", c->path, strerror(errno));
    }
    if (close(c->fd) != 0 && ok) {
      ok = false;
      snprintf(err, errlen, "close of %s failed: %s", c->path, strerror(errno));
    }
  }
  free(c);
  return ok;
}

void hl_csv_abandon(hl_csv *c) {
  if (!c) return;
  if (c->mode == HL_CSV_TABLE) hl_atomic_discard(&c->table);
  else close(c->fd);
  free(c);
}

/* ---------------------------------------------------- rows held in memory -- */

void hl_csv_rows_add(hl_csv_rows *r, const char *fmt, ...) {
  if (r->failed) return;
  va_list ap;
  va_start(ap, fmt);
  char *row = NULL;
  const int n = vasprintf(&row, fmt, ap);
  va_end(ap);
  if (n < 0) {
    r->failed = true;
    return;
  }
  if (r->n == r->cap) {
    const int cap = r->cap ? 2 * r->cap : 64;
    char **rows = realloc(r->rows, sizeof *rows * (size_t)cap);
    if (!rows) {
      free(row);
      r->failed = true;
      return;
    }
    r->rows = rows;
    r->cap = cap;
  }
  r->rows[r->n++] = row;
}

void hl_csv_rows_put(hl_csv_rows *rows, hl_row *r) { hl_csv_rows_add(rows, "%s", hl_row_line(r)); }

bool hl_csv_rows_write_schema(const hl_csv_rows *r, const char *dir, const char *name, const hl_schema *s, char *err,
                              size_t errlen) {
  return hl_csv_rows_write_schema_meta(r, dir, name, s, NULL, err, errlen);
}

bool hl_csv_rows_write_schema_meta(const hl_csv_rows *r, const char *dir, const char *name, const hl_schema *s,
                                   const char *meta, char *err, size_t errlen) {
  if (!name) name = s->file;
  if (r->failed) {
    snprintf(err, errlen, "out of memory keeping the rows of %s/%s", dir, name);
    return false;
  }
  hl_csv *c = open_schema(dir, name, s, meta, HL_CSV_TABLE, err, errlen);
  if (!c) return false;
  for (int i = 0; i < r->n; i++) hl_csv_row(c, "%s", r->rows[i]);
  return hl_csv_close(c, err, errlen);
}

void hl_csv_rows_free(hl_csv_rows *r) {
  for (int i = 0; i < r->n; i++) free(r->rows[i]);
  free(r->rows);
  r->rows = NULL;
  r->n = r->cap = 0;
  r->failed = false;
}
