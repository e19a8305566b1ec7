/* weights.c — see weights.h. */
#include "tests/peers/weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/hltest.h"

void wfile_free(wfile *w) {
  if (!w) return;
  for (int i = 0; i < w->n; i++) free(w->t[i].values);
  free(w->t);
  free(w->bytes);
  free(w);
}

#define BAD(...) do { snprintf(why, len, __VA_ARGS__); wfile_free(w); return NULL; } while (0)

wfile *wfile_read(const char *path, char *why, size_t len) {
  wfile *w = calloc(1, sizeof *w);
  if (!w) BAD("out of memory");
  w->bytes = (unsigned char *)hl_read_file(path, &w->len);
  if (!w->bytes) BAD("%s: cannot read", path);
  if (w->len < 16 || memcmp(w->bytes, "HLWTS001", 8) != 0) BAD("%s: not a HLWTS001 file", path);
  uint32_t crc;
  memcpy(&crc, w->bytes + w->len - 4, 4);
  if (crc != hl_test_crc32(w->bytes, w->len - 4)) BAD("%s: CRC-32 mismatch", path);
  const size_t end = w->len - 4;
  size_t at = 8;
  uint32_t count;
  memcpy(&count, w->bytes + at, 4);
  at += 4;
  w->t = calloc(count ? count : 1, sizeof *w->t);
  if (!w->t) BAD("out of memory");
  for (uint32_t i = 0; i < count; i++) {
    wtensor *t = &w->t[w->n++];
    uint32_t nl, nd;
    if (at + 4 > end) BAD("%s: truncated", path);
    memcpy(&nl, w->bytes + at, 4);
    at += 4;
    if (nl >= sizeof t->name || at + nl + 4 > end) BAD("%s: bad name length %u", path, nl);
    memcpy(t->name, w->bytes + at, nl);
    t->name[nl] = '\0';
    at += nl;
    memcpy(&nd, w->bytes + at, 4);
    at += 4;
    if (nd > 8 || at + 8 * nd > end) BAD("%s: %s: bad rank %u", path, t->name, nd);
    t->ndim = (int)nd;
    t->numel = 1;
    for (uint32_t d = 0; d < nd; d++) {
      memcpy(&t->dims[d], w->bytes + at, 8);
      at += 8;
      t->numel *= t->dims[d];
    }
    if (t->numel < 0 || at + 4 * (size_t)t->numel > end) BAD("%s: %s: truncated values", path, t->name);
    t->offset = at;
    t->values = malloc(4 * (size_t)t->numel + 1);
    if (!t->values) BAD("out of memory");
    memcpy(t->values, w->bytes + at, 4 * (size_t)t->numel);
    at += 4 * (size_t)t->numel;
  }
  if (at != end) BAD("%s: %zu stray bytes", path, end - at);
  return w;
}

const wtensor *wfile_find(const wfile *w, const char *name) {
  for (int i = 0; i < w->n; i++)
    if (!strcmp(w->t[i].name, name)) return &w->t[i];
  return NULL;
}

bool wfile_perturb(const char *path, const char *name, int64_t i, float delta) {
  char why[256];
  wfile *w = wfile_read(path, why, sizeof why);
  if (!w) return false;
  const wtensor *t = wfile_find(w, name);
  bool ok = t && i >= 0 && i < t->numel;
  if (ok) {
    float v;
    memcpy(&v, w->bytes + t->offset + 4 * (size_t)i, 4);
    v += delta;
    memcpy(w->bytes + t->offset + 4 * (size_t)i, &v, 4);
    const uint32_t crc = hl_test_crc32(w->bytes, w->len - 4);
    memcpy(w->bytes + w->len - 4, &crc, 4);
    FILE *f = fopen(path, "wb");
    ok = f && fwrite(w->bytes, 1, w->len, f) == w->len;
    if (f && fclose(f) != 0) ok = false;
  }
  wfile_free(w);
  return ok;
}

bool wtensor_diff(const wtensor *a, const wtensor *b, double *max_diff, double *max_abs) {
  if (a->ndim != b->ndim) return false;
  for (int d = 0; d < a->ndim; d++)
    if (a->dims[d] != b->dims[d]) return false;
  double md = 0, ma = 0;
  for (int64_t i = 0; i < a->numel; i++) {
    const double x = a->values[i], y = b->values[i];
    const double d = fabs(x - y);
    if (isnan(d)) md = INFINITY; /* a NaN on one side is the largest difference */
    else if (d > md) md = d;
    if (fabs(x) > ma) ma = fabs(x);
    if (fabs(y) > ma) ma = fabs(y);
  }
  *max_diff = md;
  *max_abs = ma;
  return true;
}

double wfile_worst_diff(const wfile *a, const wfile *b, char *worst, size_t len) {
  double worst_ratio = 0;
  snprintf(worst, len, "no tensor");
  if (a->n != b->n) {
    snprintf(worst, len, "%d tensors against %d", a->n, b->n);
    return INFINITY;
  }
  for (int i = 0; i < a->n; i++) {
    const wtensor *y = wfile_find(b, a->t[i].name);
    double d, m;
    if (!y) {
      snprintf(worst, len, "%s is missing on one side", a->t[i].name);
      return INFINITY;
    }
    if (!wtensor_diff(&a->t[i], y, &d, &m)) {
      snprintf(worst, len, "%s: the shapes differ", a->t[i].name);
      return INFINITY;
    }
    const double r = m > 0 ? d / m : d;
    if (!(r <= worst_ratio)) {
      worst_ratio = r;
      snprintf(worst, len, "%s (max |diff| %.3g, max |g| %.3g)", a->t[i].name, d, m);
    }
  }
  return worst_ratio;
}

wfile *wfile_subset(const wfile *w, const char *prefix) {
  wfile *s = calloc(1, sizeof *s);
  if (!s || !(s->t = calloc(w->n ? (size_t)w->n : 1, sizeof *s->t))) {
    free(s);
    return NULL;
  }
  const size_t skip = strlen(prefix);
  for (int i = 0; i < w->n; i++) {
    if (strncmp(w->t[i].name, prefix, skip) != 0) continue;
    wtensor *t = &s->t[s->n];
    *t = w->t[i];
    memmove(t->name, t->name + skip, strlen(t->name + skip) + 1);
    t->offset = 0;
    t->values = malloc(4 * (size_t)t->numel + 1);
    if (!t->values) {
      wfile_free(s);
      return NULL;
    }
    memcpy(t->values, w->t[i].values, 4 * (size_t)t->numel);
    s->n++;
  }
  return s;
}

double wfile_relative_l2(const wfile *a, const wfile *b) {
  double diff = 0, norm = 0;
  for (int i = 0; i < a->n; i++) {
    const wtensor *y = wfile_find(b, a->t[i].name);
    if (!y || y->numel != a->t[i].numel) return INFINITY;
    for (int64_t k = 0; k < y->numel; k++) {
      const double d = (double)a->t[i].values[k] - y->values[k];
      diff += d * d;
      norm += (double)y->values[k] * y->values[k];
    }
  }
  if (a->n != b->n || isnan(diff)) return INFINITY;
  return norm > 0 ? sqrt(diff / norm) : sqrt(diff);
}
