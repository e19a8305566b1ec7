/* weight_file.c — reading a weight file whole (weight_file.h); the format
 * is nn.h's, written by hl_params_save. */
#include "core/models/weight_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/crc32.h"
#include "core/base/error.h"

typedef struct {
  FILE *f;
  const char *path;
  uint32_t crc;
  bool ok;
} reader;

static bool get(reader *r, void *data, size_t n) {
  if (!r->ok) return false;
  if (fread(data, 1, n, r->f) != n) {
    r->ok = false;
    if (ferror(r->f)) return hl_fail_errno(errno ? errno : EIO, "read %s: %s", r->path, strerror(errno ? errno : EIO));
    return hl_fail_bool("read %s: file is truncated", r->path);
  }
  r->crc = hl_crc32_update(r->crc, data, n);
  return true;
}

/* One entry's header and values; a name of 1..4096 bytes, 0..HL_MAX_DIMS
 * dims, each >= 0, and no more values than the file has bytes left. */
static bool read_entry(reader *r, long file_bytes, hl_weight_entry *e) {
  uint32_t len = 0, ndim = 0;
  if (!get(r, &len, 4)) return false;
  if (len == 0 || len > 4096) return r->ok = false, hl_fail_bool("read %s: a name of %u bytes (corrupt file?)", r->path, len);
  e->name = malloc(len + 1u);
  if (!e->name) return r->ok = false, hl_fail_bool("read %s: out of host memory", r->path);
  if (!get(r, e->name, len)) return false;
  e->name[len] = '\0';
  if (!get(r, &ndim, 4)) return false;
  if (ndim > HL_MAX_DIMS) return r->ok = false, hl_fail_bool("read %s: %s has %u dims (corrupt file?)", r->path, e->name, ndim);
  e->ndim = (int)ndim;
  if (!get(r, e->dims, sizeof(int64_t) * ndim)) return false;
  int64_t numel = 1;
  const long left = file_bytes - ftell(r->f);
  for (uint32_t d = 0; d < ndim; d++) {
    if (e->dims[d] < 0 || (e->dims[d] > 0 && numel > (left / 4) / e->dims[d]))
      return r->ok = false, hl_fail_bool("read %s: %s's shape does not fit in the file (corrupt file?)", r->path, e->name);
    numel *= e->dims[d];
  }
  e->numel = numel;
  e->values = malloc(sizeof(float) * (size_t)numel + 1);
  if (!e->values) return r->ok = false, hl_fail_bool("read %s: out of host memory for %s", r->path, e->name);
  return get(r, e->values, sizeof(float) * (size_t)numel);
}

bool hl_weight_file_read(const char *path, hl_weight_file *f) {
  f->items = NULL, f->n = 0;
  reader r = {fopen(path, "rb"), path, 0, true};
  if (!r.f) return hl_fail_errno(errno, "read: cannot open %s: %s", path, strerror(errno));
  long file_bytes = -1;
  if (fseek(r.f, 0, SEEK_END) == 0) file_bytes = ftell(r.f);
  rewind(r.f);
  char magic[8];
  uint32_t count = 0;
  bool ok = get(&r, magic, 8);
  if (ok && memcmp(magic, "HLWTS001", 8)) ok = hl_fail_bool("read %s: not a halflab weight file (magic is not HLWTS001)", path);
  ok = ok && get(&r, &count, 4);
  if (ok && (uint64_t)count * 20u > (uint64_t)file_bytes) ok = hl_fail_bool("read %s: %u entries cannot fit (corrupt file?)", path, count);
  if (ok && !(f->items = calloc((size_t)count + 1, sizeof *f->items))) ok = hl_fail_bool("read %s: out of host memory", path);
  /* n counts a half-read entry too, so that it is freed */
  for (uint32_t e = 0; ok && e < count; e++, f->n++) ok = read_entry(&r, file_bytes, &f->items[e]);
  const uint32_t crc_here = r.crc;
  uint32_t crc_file = 0;
  if (ok && (ok = get(&r, &crc_file, 4)) && crc_file != crc_here)
    ok = hl_fail_bool("read %s: checksum mismatch (file says %08x, contents give %08x): corrupt file", path, crc_file, crc_here);
  if (ok && fgetc(r.f) != EOF) ok = hl_fail_bool("read %s: bytes after the checksum (corrupt file?)", path);
  fclose(r.f);
  if (!ok) hl_weight_file_free(f);
  return ok;
}

void hl_weight_file_free(hl_weight_file *f) {
  for (int i = 0; f->items && i < f->n; i++) free(f->items[i].name), free(f->items[i].values);
  free(f->items);
  f->items = NULL, f->n = 0;
}
