/* csv.c — metadata and atomic CSV files. */
#include "cli/csv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "core/base/atomic_file.h"
#include "core/base/device.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/onednn_gemm.h"
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

const char *hl_meta_text(void) {
  struct utsname u;
  char host[512] = "unknown";
  if (uname(&u) == 0) snprintf(host, sizeof host, "%s, %s %s %s", u.nodename, u.sysname, u.release, u.machine);
  int k = snprintf(text_, sizeof text_,
                   "# halflab %s (%s)\n# schema: %d\n# command: %s\n# device: %s\n# host: %s\n",
                   HL_VERSION, HL_GIT_DESCRIBE, HL_CSV_SCHEMA, command_[0] ? command_ : "unknown",
                   device_[0] ? device_ : "unknown", host);
  if (cuda_[0] && k >= 0 && (size_t)k < sizeof text_) k += snprintf(text_ + k, sizeof text_ - (size_t)k, "# cuda: %s\n", cuda_);
  if (k >= 0 && (size_t)k < sizeof text_) k += snprintf(text_ + k, sizeof text_ - (size_t)k, "# date: %s\n", date_[0] ? date_ : "unknown");
  /* Whatever device ran, the CPU's units, BLAS and oneDNN are part of the
   * record: they decide every CPU figure, and a generic BLAS kernel set is
   * flagged. */
  char features[512];
  hl_cpu_features_line(hl_cpu_features_get(), features, sizeof features);
  char units[256];
  hl_cpu_units_line(units, sizeof units);
  const hl_blas_info *blas = hl_blas_info_get();
  if (k >= 0 && (size_t)k < sizeof text_)
    k += snprintf(text_ + k, sizeof text_ - (size_t)k, "# cpu-features: %s\n# cpu-units: %s\n# blas: %s, kernels %s (chosen by %s); library %s%s%s\n",
                  features, units, blas->version, blas->kernels, blas->chosen_by, blas->library,
                  blas->config[0] ? "; config: " : "", blas->config);
  char onednn[512];
  hl_onednn_line(onednn, sizeof onednn);
  if (k >= 0 && (size_t)k < sizeof text_) k += snprintf(text_ + k, sizeof text_ - (size_t)k, "# onednn: %s\n", onednn);
  if (blas->warning[0] && k >= 0 && (size_t)k < sizeof text_)
    k += snprintf(text_ + k, sizeof text_ - (size_t)k, "# blas-warning: %s\n", blas->warning);
  for (int i = 0; i < nkeys_ && k >= 0 && (size_t)k < sizeof text_; i++)
    k += snprintf(text_ + k, sizeof text_ - (size_t)k, "# %s: %s\n", keys_[i], values_[i]);
  return text_;
}

struct hl_csv {
  FILE *f;
  hl_csv_mode mode;
  char path[4096];
  hl_atomic_file table; /* HL_CSV_TABLE: written as PATH.tmp, renamed when closed */
  bool failed;
  int saved_errno;
};

hl_csv *hl_csv_open(const char *dir, const char *name, const char *header, hl_csv_mode mode, char *err,
                    size_t errlen) {
  hl_csv *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  c->mode = mode;
  snprintf(c->path, sizeof c->path, "%s/%s", dir, name);
  bool fresh = true;
  if (mode == HL_CSV_LOG_APPEND) {
    struct stat st;
    fresh = !(stat(c->path, &st) == 0 && st.st_size > 0);
  }
  if (mode == HL_CSV_TABLE) c->f = hl_atomic_open(&c->table, c->path) ? c->table.f : NULL;
  else c->f = fopen(c->path, mode == HL_CSV_LOG_APPEND ? "a" : "w");
  if (!c->f) {
    snprintf(err, errlen, "cannot write %s: %s", mode == HL_CSV_TABLE ? c->table.tmp : c->path, strerror(errno));
    free(c);
    return NULL;
  }
  if (fresh) {
    fputs(hl_meta_text(), c->f);
    fputs(header, c->f);
    fputc('\n', c->f);
    if (mode != HL_CSV_TABLE) fflush(c->f);
  }
  return c;
}

void hl_csv_row(hl_csv *c, const char *fmt, ...) {
  char line[8192];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof line - 1) {
    c->failed = true;
    c->saved_errno = EOVERFLOW;
    return;
  }
  line[n] = '\n';
  /* one write per line: an interrupted log never holds half a row */
  if (fwrite(line, 1, (size_t)n + 1, c->f) != (size_t)n + 1 && !c->failed) {
    c->failed = true;
    c->saved_errno = errno;
  }
  if (c->mode != HL_CSV_TABLE) fflush(c->f);
}

bool hl_csv_close(hl_csv *c, char *err, size_t errlen) {
  if (!c) return false;
  bool ok = !c->failed;
  int e = c->saved_errno;
  if (c->mode == HL_CSV_TABLE) {
    if (!ok) hl_atomic_discard(&c->table);
    else if (!hl_atomic_commit(&c->table)) ok = false, e = errno;
  } else {
    if (fflush(c->f) != 0 && ok) ok = false, e = errno;
    if (fclose(c->f) != 0 && ok) ok = false, e = errno;
  }
  if (!ok) snprintf(err, errlen, "writing %s failed: %s", c->mode == HL_CSV_TABLE ? c->table.tmp : c->path, strerror(e));
  free(c);
  return ok;
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

bool hl_csv_rows_write(const hl_csv_rows *r, const char *dir, const char *name, const char *header, const char *prefix,
                       char *err, size_t errlen) {
  if (r->failed) {
    snprintf(err, errlen, "out of memory keeping the rows of %s/%s", dir, name);
    return false;
  }
  hl_csv *c = hl_csv_open(dir, name, header, HL_CSV_TABLE, err, errlen);
  if (!c) return false;
  for (int i = 0; i < r->n; i++) {
    if (prefix) hl_csv_row(c, "%s,%s", prefix, r->rows[i]);
    else hl_csv_row(c, "%s", r->rows[i]);
  }
  return hl_csv_close(c, err, errlen);
}

void hl_csv_rows_free(hl_csv_rows *r) {
  for (int i = 0; i < r->n; i++) free(r->rows[i]);
  free(r->rows);
  r->rows = NULL;
  r->n = r->cap = 0;
  r->failed = false;
}
