/* checkpoint.c — the checkpoint file (core/training/checkpoint.h).
 *
 * Layout (host byte order, marked in the header):
 *   0   8 bytes  magic "HLCKPT\0\n"
 *   8   u32      format version
 *   12  u32      byte-order mark 0x01020304
 *   16  u64      payload bytes P
 *   24  u64      record count
 *   32  P bytes  records: u32 type, u32 name length, name, body
 *                  tensor: u32 dtype, u32 ndim, i64 dims[ndim], u64 bytes, data
 *                  int:    i64        real: f64        text: u64 length, bytes
 *                the caller's fields are text records named "field/NAME"
 *   32+P u32     CRC-32 (IEEE) of bytes [0, 32 + P)
 *   36+P 8 bytes end marker "HLCKEND\n"
 */
#include "core/training/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/atomic_file.h"
#include "core/base/crc32.h"
#include "core/base/device.h"
#include "core/base/error.h"
#include "core/training/optim_internal.h"

static const char kMagic[8] = {'H', 'L', 'C', 'K', 'P', 'T', '\0', '\n'};
static const char kEnd[8] = {'H', 'L', 'C', 'K', 'E', 'N', 'D', '\n'};
static const uint32_t kByteOrder = 0x01020304u;
enum { kHeader = 32, kTrailer = 12 };
enum { REC_TENSOR = 1, REC_INT = 2, REC_REAL = 3, REC_TEXT = 4 };

/* ------------------------------------------------------------- writing -- */

typedef struct {
  unsigned char *data;
  size_t len, cap;
  uint64_t records;
  bool failed;
} buffer;

static void put(buffer *b, const void *p, size_t n) {
  if (b->failed) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    unsigned char *d = realloc(b->data, cap);
    if (!d) {
      b->failed = true;
      return;
    }
    b->data = d;
    b->cap = cap;
  }
  if (p) memcpy(b->data + b->len, p, n);
  b->len += n;
}
static void put_u32(buffer *b, uint32_t v) { put(b, &v, sizeof v); }
static void put_u64(buffer *b, uint64_t v) { put(b, &v, sizeof v); }

static void record_head(buffer *b, uint32_t type, const char *name) {
  put_u32(b, type);
  put_u32(b, (uint32_t)strlen(name));
  put(b, name, strlen(name));
  b->records++;
}
static void put_int(buffer *b, const char *name, int64_t v) {
  record_head(b, REC_INT, name);
  put(b, &v, sizeof v);
}
static void put_real(buffer *b, const char *name, double v) {
  record_head(b, REC_REAL, name);
  put(b, &v, sizeof v);
}
static void put_bytes(buffer *b, const char *name, const void *data, size_t len) {
  record_head(b, REC_TEXT, name);
  put_u64(b, len);
  put(b, data, len);
}
static void put_text(buffer *b, const char *name, const char *text) { put_bytes(b, name, text, strlen(text)); }
/* the tensor's bits, from any device (contiguous tensors only) */
static void put_tensor(buffer *b, const char *name, const hl_tensor *t) {
  record_head(b, REC_TENSOR, name);
  put_u32(b, (uint32_t)t->dtype);
  put_u32(b, (uint32_t)t->ndim);
  for (int d = 0; d < t->ndim; d++) put(b, &t->shape[d], sizeof t->shape[d]);
  const size_t bytes = hl_tensor_nbytes(t);
  put_u64(b, bytes);
  const size_t at = b->len;
  put(b, NULL, bytes); /* room for the data, copied straight from the device */
  if (!b->failed && bytes) hl_backend_for(t->device)->copy_to_host(b->data + at, hl_tensor_data(t), bytes);
}

static bool check_state_shape(const hl_train_state *st, const char *what) {
  if (!st) return hl_fail_bool("%s: state is NULL", what);
  if (st->n_params < 0 || (st->n_params > 0 && !st->params) || st->n_optims < 0 || (st->n_optims > 0 && !st->optims))
    return hl_fail_bool("%s: bad parameter or optimizer list", what);
  for (int i = 0; i < st->n_params; i++) {
    const hl_tensor *p = st->params[i];
    if (!p) return hl_fail_bool("%s: parameter %d is NULL", what, i);
    if (!*hl_tensor_name(p)) return hl_fail_bool("%s: parameter %d (%s) has no name; checkpoints store parameters by name", what, i, hl_desc(p));
    if (!hl_is_contiguous(p)) return hl_fail_bool("%s: parameter %s is not contiguous", what, hl_tensor_name(p));
    for (int j = 0; j < i; j++)
      if (!strcmp(hl_tensor_name(st->params[j]), hl_tensor_name(p)))
        return hl_fail_bool("%s: two parameters are named \"%s\"", what, hl_tensor_name(p));
  }
  for (int k = 0; k < st->n_optims; k++)
    if (!st->optims[k]) return hl_fail_bool("%s: optimizer %d is NULL", what, k);
  if (st->n_fields < 0 || (st->n_fields > 0 && !st->fields)) return hl_fail_bool("%s: bad field list", what);
  for (int i = 0; i < st->n_fields; i++) {
    const hl_checkpoint_field *f = &st->fields[i];
    if (!f->name || !*f->name || (f->len && !f->data)) return hl_fail_bool("%s: field %d has no name or no data", what, i);
    for (int j = 0; j < i; j++)
      if (!strcmp(st->fields[j].name, f->name)) return hl_fail_bool("%s: two fields are named \"%s\"", what, f->name);
  }
  return true;
}

static void put_optim(buffer *b, int k, const hl_optim *o) {
  char name[512];
  snprintf(name, sizeof name, "optim/%d/kind", k);
  put_text(b, name, hl_optim_name(o));
  snprintf(name, sizeof name, "optim/%d/n", k);
  put_int(b, name, o->n);
  const char *keys[6];
  double vals[6];
  int nk = 0;
  if (o->kind == HL_OPTIM_SGD) {
    keys[nk] = "lr", vals[nk++] = o->sgd.lr;
    keys[nk] = "momentum", vals[nk++] = o->sgd.momentum;
    keys[nk] = "dampening", vals[nk++] = o->sgd.dampening;
    keys[nk] = "weight_decay", vals[nk++] = o->sgd.weight_decay;
    keys[nk] = "nesterov", vals[nk++] = o->sgd.nesterov;
  } else {
    keys[nk] = "lr", vals[nk++] = o->adamw.lr;
    keys[nk] = "beta1", vals[nk++] = o->adamw.beta1;
    keys[nk] = "beta2", vals[nk++] = o->adamw.beta2;
    keys[nk] = "eps", vals[nk++] = o->adamw.eps;
    keys[nk] = "weight_decay", vals[nk++] = o->adamw.weight_decay;
  }
  for (int j = 0; j < nk; j++) {
    snprintf(name, sizeof name, "optim/%d/hyper/%s", k, keys[j]);
    put_real(b, name, vals[j]);
  }
  for (int i = 0; i < o->n; i++) {
    snprintf(name, sizeof name, "optim/%d/%d/param", k, i);
    put_text(b, name, hl_tensor_name(o->params[i]));
    snprintf(name, sizeof name, "optim/%d/%d/steps", k, i);
    put_int(b, name, o->steps[i]);
    const hl_tensor *state[3] = {o->buf1[i], o->buf2[i], o->master[i]};
    const char *state_name[3] = {"buf1", "buf2", "master"};
    for (int j = 0; j < 3; j++) {
      if (!state[j]) continue;
      snprintf(name, sizeof name, "optim/%d/%d/%s", k, i, state_name[j]);
      put_tensor(b, name, state[j]);
    }
  }
}

/* path.tmp, flushed, renamed over path (core/base/atomic_file.h) */
static bool write_atomically(const char *path, const unsigned char *data, size_t len) {
  const char *what = "checkpoint_save";
  hl_atomic_file a;
  if (!hl_atomic_open(&a, path))
    return hl_fail_bool("%s: open(\"%s\"): %s; the previous checkpoint (if any) is untouched", what, a.tmp,
                        strerror(errno));
  fwrite(data, 1, len, a.f); /* a short write leaves the stream's error flag, which commit reports */
  if (!hl_atomic_commit(&a)) {
    char why[9000];
    const bool in_place = a.failed_file == a.folder; /* only the folder's sync failed */
    return hl_fail_bool("%s: %s; %s", what, hl_atomic_describe(&a, errno, why, sizeof why),
                        in_place ? "the new checkpoint is in place, whole" : "the previous checkpoint (if any) is untouched");
  }
  return true;
}

bool hl_checkpoint_save(const char *path, const hl_train_state *st) {
  const char *what = "checkpoint_save";
  if (!path || !*path) return hl_fail_bool("%s: no path", what);
  if (!check_state_shape(st, what)) return false;
  buffer b = {0};
  /* header, completed below */
  unsigned char header[kHeader] = {0};
  put(&b, header, sizeof header);
  char name[512];
  for (int i = 0; i < st->n_params; i++) {
    snprintf(name, sizeof name, "model/%s", hl_tensor_name(st->params[i]));
    put_tensor(&b, name, st->params[i]);
  }
  for (int k = 0; k < st->n_optims; k++) put_optim(&b, k, st->optims[k]);
  if (st->scaler) {
    hl_scaler_state s = hl_scaler_state_dict(st->scaler);
    put_int(&b, "scaler/present", s.present);
    if (s.present) {
      put_real(&b, "scaler/scale", s.scale);
      put_real(&b, "scaler/growth_factor", s.growth_factor);
      put_real(&b, "scaler/backoff_factor", s.backoff_factor);
      put_int(&b, "scaler/growth_interval", s.growth_interval);
      put_int(&b, "scaler/growth_tracker", s.growth_tracker);
    }
  }
  put_int(&b, "train/step", st->step);
  put_int(&b, "rng/seed", (int64_t)st->rng_seed);
  put_int(&b, "rng/offset", (int64_t)st->rng_offset);
  for (int i = 0; i < st->n_fields; i++) {
    char *field_name = malloc(strlen(st->fields[i].name) + 7);
    if (!field_name) {
      b.failed = true;
      break;
    }
    sprintf(field_name, "field/%s", st->fields[i].name);
    put_bytes(&b, field_name, st->fields[i].data, st->fields[i].len);
    free(field_name);
  }
  if (b.failed) {
    free(b.data);
    return hl_fail_bool("%s: out of host memory building the checkpoint", what);
  }
  uint64_t payload = b.len - kHeader, records = b.records;
  uint32_t version = HL_CHECKPOINT_VERSION;
  memcpy(b.data, kMagic, 8);
  memcpy(b.data + 8, &version, 4);
  memcpy(b.data + 12, &kByteOrder, 4);
  memcpy(b.data + 16, &payload, 8);
  memcpy(b.data + 24, &records, 8);
  uint32_t crc = hl_crc32_update(0, b.data, b.len);
  put_u32(&b, crc);
  put(&b, kEnd, 8);
  if (b.failed) {
    free(b.data);
    return hl_fail_bool("%s: out of host memory building the checkpoint", what);
  }
  bool ok = write_atomically(path, b.data, b.len);
  free(b.data);
  return ok;
}

/* ------------------------------------------------------------- reading -- */

typedef struct {
  uint32_t type;
  const char *name;
  uint32_t name_len;
  /* tensor */
  uint32_t dtype, ndim;
  int64_t dims[HL_MAX_DIMS];
  const unsigned char *data;
  uint64_t bytes;
  /* int / real / text */
  int64_t i;
  double r;
} record;

struct hl_checkpoint {
  unsigned char *file;
  size_t size;
  record *rec;
  uint64_t n;
  char *path;
};
typedef struct hl_checkpoint parsed;

static void parsed_free(parsed *p) {
  free(p->file);
  free(p->rec);
  free(p->path);
}

static bool take(const unsigned char **p, const unsigned char *end, void *out, size_t n) {
  if ((size_t)(end - *p) < n) return false;
  memcpy(out, *p, n);
  *p += n;
  return true;
}

/* The frame around the records: magic, version, byte order, lengths, end
 * marker and CRC. Gives the payload's size and the record count it claims. */
static bool check_frame(const char *path, const unsigned char *data, size_t size, uint64_t *payload_out,
                        uint64_t *records_out) {
  const char *what = "checkpoint_load";
  if (size < 8 || memcmp(data, kMagic, 8))
    return hl_fail_bool("%s: \"%s\" is not a halflab checkpoint (%s)", what, path,
                        size < 8 ? "file too short for the header" : "no HLCKPT magic at its start");
  if (size < kHeader) return hl_fail_bool("%s: \"%s\" is truncated: %zu bytes, shorter than the header", what, path, size);
  uint32_t version, order;
  uint64_t payload, records;
  memcpy(&version, data + 8, 4);
  memcpy(&order, data + 12, 4);
  memcpy(&payload, data + 16, 8);
  memcpy(&records, data + 24, 8);
  if (order != kByteOrder)
    return hl_fail_bool("%s: \"%s\" was written on a machine of the other byte order", what, path);
  if (version != HL_CHECKPOINT_VERSION)
    return hl_fail_bool("%s: \"%s\": checkpoint format version %u, this halflab reads version %d", what, path, version,
                        HL_CHECKPOINT_VERSION);
  if (payload > SIZE_MAX - kHeader - kTrailer)
    return hl_fail_bool("%s: \"%s\" is corrupted: its header claims %llu payload bytes", what, path,
                        (unsigned long long)payload);
  const size_t want = kHeader + (size_t)payload + kTrailer;
  if (size < want)
    return hl_fail_bool("%s: \"%s\" is truncated: %zu bytes of %zu", what, path, size, want);
  if (size > want)
    return hl_fail_bool("%s: \"%s\" is corrupted: %zu bytes after its end marker", what, path, size - want);
  uint32_t crc;
  memcpy(&crc, data + kHeader + payload, 4);
  if (memcmp(data + kHeader + payload + 4, kEnd, 8))
    return hl_fail_bool("%s: \"%s\" is corrupted: no end marker", what, path);
  if (hl_crc32_update(0, data, kHeader + payload) != crc)
    return hl_fail_bool("%s: \"%s\" is corrupted: checksum mismatch (CRC-32 of the contents differs from the one "
                        "stored)", what, path);
  *payload_out = payload;
  *records_out = records;
  return true;
}

/* One record from *p, not reading past end: false when it does not fit or
 * is malformed. Its name and data point into the file's bytes. */
static bool read_record(const unsigned char **p, const unsigned char *end, record *r) {
  if (!take(p, end, &r->type, 4) || !take(p, end, &r->name_len, 4) || (size_t)(end - *p) < r->name_len) return false;
  r->name = (const char *)*p;
  *p += r->name_len;
  switch (r->type) {
    case REC_INT: return take(p, end, &r->i, 8);
    case REC_REAL: return take(p, end, &r->r, 8);
    case REC_TEXT:
      if (!take(p, end, &r->bytes, 8) || (uint64_t)(end - *p) < r->bytes) return false;
      r->data = *p;
      *p += r->bytes;
      return true;
    case REC_TENSOR: {
      bool ok = take(p, end, &r->dtype, 4) && take(p, end, &r->ndim, 4) && r->ndim <= HL_MAX_DIMS &&
                r->dtype < HL_TENSOR_DTYPES;
      uint64_t numel = 1;
      for (uint32_t d = 0; ok && d < r->ndim; d++) {
        ok = take(p, end, &r->dims[d], 8) && r->dims[d] >= 0 && (r->dims[d] == 0 || numel <= UINT64_MAX / (uint64_t)r->dims[d]);
        if (ok) numel *= (uint64_t)r->dims[d];
      }
      ok = ok && take(p, end, &r->bytes, 8) && (uint64_t)(end - *p) >= r->bytes &&
           numel <= UINT64_MAX / 8 && r->bytes == numel * hl_dtype_size((hl_dtype)r->dtype);
      if (!ok) return false;
      r->data = *p;
      *p += r->bytes;
      return true;
    }
    default: return false;
  }
}

/* The `records` records of the payload [start, start + payload), into
 * out->rec; the payload must hold them and nothing else. */
static bool read_records(const char *path, const unsigned char *start, uint64_t payload, uint64_t records,
                         parsed *out) {
  const char *what = "checkpoint_load";
  /* a record takes at least 8 bytes (type, name length): a count beyond that
   * is a damaged header, not an allocation to attempt */
  if (records > payload / 8 + 1) return hl_fail_bool("%s: \"%s\" is corrupted: %llu records", what, path, (unsigned long long)records);
  out->rec = calloc(records ? records : 1, sizeof *out->rec);
  if (!out->rec) return hl_fail_bool("%s: out of host memory", what);
  const unsigned char *p = start, *end = start + payload;
  for (uint64_t k = 0; k < records; k++)
    if (!read_record(&p, end, &out->rec[k]))
      return hl_fail_bool("%s: \"%s\" is corrupted: record %llu cannot be read", what, path, (unsigned long long)k);
  if (p != end) return hl_fail_bool("%s: \"%s\" is corrupted: bytes after the last record", what, path);
  out->n = records;
  return true;
}

/* The whole file into out->file, then its frame and records checked and
 * indexed. out is filled as far as it got: parsed_free it either way. */
static bool read_file(const char *path, parsed *out) {
  const char *what = "checkpoint_load";
  memset(out, 0, sizeof *out);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return hl_fail_errno(errno, "%s: open(\"%s\"): %s", what, path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return hl_fail_errno(e, "%s: fstat(\"%s\"): %s", what, path, strerror(e));
  }
  size_t size = (size_t)sb.st_size;
  unsigned char *data = malloc(size ? size : 1);
  if (!data) {
    close(fd);
    return hl_fail_bool("%s: out of host memory for \"%s\" (%zu bytes)", what, path, size);
  }
  size_t got = 0;
  int read_errno = 0;
  while (got < size) {
    ssize_t r = read(fd, data + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) read_errno = errno;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (got != size) {
    free(data);
    /* a failed read is the system's (exit 1); a file that shrank while read is a damaged input */
    if (read_errno) return hl_fail_errno(read_errno, "%s: read(\"%s\"): %s", what, path, strerror(read_errno));
    return hl_fail_bool("%s: read(\"%s\"): short read (%zu of %zu bytes)", what, path, got, size);
  }
  out->file = data;
  out->size = size;
  uint64_t payload = 0, records = 0; /* set by check_frame when it passes */
  return check_frame(path, data, size, &payload, &records) &&
         read_records(path, data + kHeader, payload, records, out);
}

static const record *find(const parsed *f, const char *name, uint32_t type) {
  size_t len = strlen(name);
  for (uint64_t k = 0; k < f->n; k++)
    if (f->rec[k].name_len == len && !memcmp(f->rec[k].name, name, len) && f->rec[k].type == type) return &f->rec[k];
  return NULL;
}

static bool text_is(const record *r, const char *text) {
  return r && r->bytes == strlen(text) && !memcmp(r->data, text, r->bytes);
}

/* a stored tensor that can replace t: same dtype and shape */
static bool tensor_fits(const record *r, const hl_tensor *t) {
  if (!r || r->dtype != (uint32_t)t->dtype || r->ndim != (uint32_t)t->ndim) return false;
  for (int d = 0; d < t->ndim; d++)
    if (r->dims[d] != t->shape[d]) return false;
  return true;
}

static void restore_tensor(hl_tensor *t, const record *r) {
  if (r->bytes) hl_backend_for(t->device)->copy_from_host(hl_tensor_data(t), r->data, r->bytes);
  hl_tensor_mark_modified(t);
}

static bool check_tensor(const parsed *f, const char *path, const char *name, const hl_tensor *t) {
  const record *r = find(f, name, REC_TENSOR);
  if (!r) return hl_fail_bool("checkpoint_load: \"%s\" has no %s", path, name);
  if (!tensor_fits(r, t))
    return hl_fail_bool("checkpoint_load: \"%s\": %s is %s%s in the file, %s here", path, name,
                        hl_dtype_name((hl_dtype)r->dtype), hl_shape_desc(hl_shape_of((int)r->ndim, r->dims)), hl_desc(t));
  return true;
}

static bool check_optim(const parsed *f, const char *path, int k, const hl_optim *o) {
  char name[512];
  snprintf(name, sizeof name, "optim/%d/kind", k);
  const record *kind = find(f, name, REC_TEXT);
  if (!text_is(kind, hl_optim_name(o)))
    return hl_fail_bool("checkpoint_load: \"%s\": optimizer %d is %s here but %s in the file", path, k, hl_optim_name(o),
                        kind ? "another kind" : "missing");
  snprintf(name, sizeof name, "optim/%d/n", k);
  const record *n = find(f, name, REC_INT);
  if (!n || n->i != o->n)
    return hl_fail_bool("checkpoint_load: \"%s\": optimizer %d has %d parameters here, %lld in the file", path, k, o->n,
                        n ? (long long)n->i : -1LL);
  const char *keys[] = {"lr", "momentum", "dampening", "weight_decay", "nesterov", "beta1", "beta2", "eps"};
  for (int j = 0; j < 8; j++) {
    bool sgd_key = j < 5, adamw_key = j == 0 || j == 3 || j >= 5;
    if ((o->kind == HL_OPTIM_SGD && !sgd_key) || (o->kind == HL_OPTIM_ADAMW && !adamw_key)) continue;
    snprintf(name, sizeof name, "optim/%d/hyper/%s", k, keys[j]);
    const record *h = find(f, name, REC_REAL);
    if (!h) return hl_fail_bool("checkpoint_load: \"%s\" has no %s", path, name);
    bool valid = isfinite(h->r) && (j == 2 || h->r >= 0) && (j < 5 || j == 7 || h->r < 1);
    if (!valid) return hl_fail_bool("checkpoint_load: \"%s\": %s = %g is not a valid value", path, name, h->r);
  }
  for (int i = 0; i < o->n; i++) {
    snprintf(name, sizeof name, "optim/%d/%d/param", k, i);
    if (!text_is(find(f, name, REC_TEXT), hl_tensor_name(o->params[i])))
      return hl_fail_bool("checkpoint_load: \"%s\": parameter %d of optimizer %d is \"%s\" here, not in the file", path, i,
                          k, hl_tensor_name(o->params[i]));
    snprintf(name, sizeof name, "optim/%d/%d/steps", k, i);
    const record *steps = find(f, name, REC_INT);
    if (!steps || steps->i < 0) return hl_fail_bool("checkpoint_load: \"%s\" has no valid %s", path, name);
    hl_tensor *state[3] = {o->buf1[i], o->buf2[i], o->master[i]};
    const char *sname[3] = {"buf1", "buf2", "master"};
    for (int s = 0; s < 3; s++) {
      snprintf(name, sizeof name, "optim/%d/%d/%s", k, i, sname[s]);
      const record *r = find(f, name, REC_TENSOR);
      if (!state[s] && r)
        return hl_fail_bool("checkpoint_load: \"%s\" holds %s, which this optimizer does not have (another momentum "
                            "or master-weight setting?)", path, name);
      if (state[s] && !check_tensor(f, path, name, state[s])) return false;
    }
  }
  return true;
}

static void apply_optim(const parsed *f, int k, hl_optim *o) {
  char name[512];
#define HYPER(key) (snprintf(name, sizeof name, "optim/%d/hyper/%s", k, key), find(f, name, REC_REAL)->r)
  if (o->kind == HL_OPTIM_SGD) {
    o->sgd.lr = HYPER("lr");
    o->sgd.momentum = HYPER("momentum");
    o->sgd.dampening = HYPER("dampening");
    o->sgd.weight_decay = HYPER("weight_decay");
    o->sgd.nesterov = HYPER("nesterov") != 0;
  } else {
    o->adamw.lr = HYPER("lr");
    o->adamw.beta1 = HYPER("beta1");
    o->adamw.beta2 = HYPER("beta2");
    o->adamw.eps = HYPER("eps");
    o->adamw.weight_decay = HYPER("weight_decay");
  }
#undef HYPER
  for (int i = 0; i < o->n; i++) {
    snprintf(name, sizeof name, "optim/%d/%d/steps", k, i);
    o->steps[i] = find(f, name, REC_INT)->i;
    hl_tensor *state[3] = {o->buf1[i], o->buf2[i], o->master[i]};
    const char *sname[3] = {"buf1", "buf2", "master"};
    for (int s = 0; s < 3; s++) {
      if (!state[s]) continue;
      snprintf(name, sizeof name, "optim/%d/%d/%s", k, i, sname[s]);
      restore_tensor(state[s], find(f, name, REC_TENSOR));
    }
  }
  hl_optim_zero_grad(o);
}

hl_checkpoint *hl_checkpoint_open(const char *path) {
  if (!path || !*path) return hl_fail("checkpoint_load: no path");
  parsed *f = malloc(sizeof *f);
  if (!f) return hl_fail("checkpoint_load: out of host memory");
  bool ok = read_file(path, f); /* sets every member */
  if (ok && !(f->path = malloc(strlen(path) + 1))) ok = hl_fail_bool("checkpoint_load: out of host memory");
  if (!ok) {
    hl_checkpoint_close(f);
    return NULL;
  }
  strcpy(f->path, path);
  return f;
}

void hl_checkpoint_close(hl_checkpoint *c) {
  if (!c) return;
  parsed_free(c);
  free(c);
}

const void *hl_checkpoint_get_field(const hl_checkpoint *c, const char *name, size_t *len) {
  char *full = malloc(strlen(name) + 7);
  if (!full) return NULL;
  sprintf(full, "field/%s", name);
  const record *r = find(c, full, REC_TEXT);
  free(full);
  if (!r) return NULL;
  if (len) *len = (size_t)r->bytes;
  return r->data ? (const void *)r->data : (const void *)""; /* an empty field is there, not missing */
}

int64_t hl_checkpoint_step(const hl_checkpoint *c) {
  const record *r = find(c, "train/step", REC_INT);
  return r ? r->i : -1;
}

bool hl_checkpoint_verify(const char *path) {
  if (!path || !*path) return hl_fail_bool("checkpoint_verify: no path");
  hl_checkpoint *c = hl_checkpoint_open(path);
  hl_checkpoint_close(c);
  return c != NULL;
}

bool hl_checkpoint_load(const char *path, hl_train_state *st) {
  if (!path || !*path) return hl_fail_bool("checkpoint_load: no path");
  if (!check_state_shape(st, "checkpoint_load")) return false;
  hl_checkpoint *c = hl_checkpoint_open(path);
  if (!c) return false;
  const bool ok = hl_checkpoint_apply(c, st);
  hl_checkpoint_close(c);
  return ok;
}

bool hl_checkpoint_apply(const hl_checkpoint *f, hl_train_state *st) {
  const char *what = "checkpoint_load";
  if (!f) return hl_fail_bool("%s: no checkpoint", what);
  if (!check_state_shape(st, what)) return false;
  const char *path = f->path;
  bool ok = true;
  char name[512];
  /* everything checked before anything changes */
  int64_t model_records = 0;
  for (uint64_t k = 0; k < f->n; k++) model_records += f->rec[k].name_len > 6 && !memcmp(f->rec[k].name, "model/", 6);
  if (model_records != st->n_params)
    ok = hl_fail_bool("%s: \"%s\" holds %lld model parameters, the model has %d", what, path, (long long)model_records,
                      st->n_params);
  for (int i = 0; ok && i < st->n_params; i++) {
    snprintf(name, sizeof name, "model/%s", hl_tensor_name(st->params[i]));
    ok = check_tensor(f, path, name, st->params[i]);
  }
  for (int k = 0; ok && k < st->n_optims; k++) ok = check_optim(f, path, k, st->optims[k]);
  const record *step = ok ? find(f, "train/step", REC_INT) : NULL;
  const record *seed = ok ? find(f, "rng/seed", REC_INT) : NULL;
  const record *offset = ok ? find(f, "rng/offset", REC_INT) : NULL;
  if (ok && (!step || !seed || !offset)) ok = hl_fail_bool("%s: \"%s\" has no step counter or random-stream position", what, path);
  hl_scaler_state sst = {0};
  if (ok && st->scaler && hl_scaler_is_enabled(st->scaler)) {
    const record *present = find(f, "scaler/present", REC_INT);
    if (!present) {
      ok = hl_fail_bool("%s: \"%s\" holds no scaler state", what, path);
    } else if (present->i) {
      const record *r[5] = {find(f, "scaler/scale", REC_REAL), find(f, "scaler/growth_factor", REC_REAL),
                            find(f, "scaler/backoff_factor", REC_REAL), find(f, "scaler/growth_interval", REC_INT),
                            find(f, "scaler/growth_tracker", REC_INT)};
      for (int j = 0; j < 5; j++)
        if (!r[j]) ok = false;
      if (!ok) hl_fail_bool("%s: \"%s\" has an incomplete scaler state", what, path);
      else sst = (hl_scaler_state){true, r[0]->r, r[1]->r, r[2]->r, r[3]->i, r[4]->i};
    }
  }
  /* the scaler goes first: its load checks the values and changes nothing
   * when they are refused (an empty state included) */
  if (ok && st->scaler && hl_scaler_is_enabled(st->scaler)) {
    ok = hl_scaler_load_state(st->scaler, &sst);
    if (!ok) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", hl_error());
      hl_fail_bool("%s: \"%s\": %s", what, path, msg);
    }
  }
  if (ok) {
    for (int i = 0; i < st->n_params; i++) {
      snprintf(name, sizeof name, "model/%s", hl_tensor_name(st->params[i]));
      restore_tensor(st->params[i], find(f, name, REC_TENSOR));
    }
    for (int k = 0; k < st->n_optims; k++) apply_optim(f, k, st->optims[k]);
    st->step = step->i;
    st->rng_seed = (uint64_t)seed->i;
    st->rng_offset = (uint64_t)offset->i;
  }
  return ok;
}
