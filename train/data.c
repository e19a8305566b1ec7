/* data.c — the data of the training runs, generated (no download) or read
 * from a text file, and the batch file peers read.
 *
 * Every batch is a pure function of (seed, split, step, micro-batch, row)
 * through Philox4x32-10, so all modes see the same data in the same order,
 * and a resumed run sees what the uninterrupted run would have.
 *
 * sort (GPT, default): a problem is n numbers from an alphabet of K digits,
 *   a separator, then the same numbers sorted:   3 1 2 | 1 2 3
 *   Problems are packed back to back into sequences of T tokens, and the
 *   target of every position is the next token (the plain language-model
 *   loss). The problem's own numbers are random: predicting them costs
 *   ln K nats each at best, so the loss has a floor ((n - 1) ln K / T per
 *   token for one problem per sequence: 1.007 for n = 8, K = 10, T = 16).
 *   Accuracy counts the sorted numbers only (teacher forcing: each predicted
 *   from the true prefix).
 *   Held out: the problems whose numbers hash to 0 mod 8 (FNV-1a) are the
 *   evaluation set's only, and never trained on; training draws again.
 * text (GPT, --text FILE, or without a file the generated English-like
 *   text of text_gen.c under --seed: the small preset's data): bytes
 *   (vocabulary 256); the tail (--eval-frac) is held out. Training rows are
 *   windows at random offsets of the head; evaluation rows consecutive
 *   windows of the tail. Accuracy: the next byte, every position.
 * classify (MLP): x ~ N(0, 1)^n_in, the label the argmax of a fixed random
 *   teacher (tanh(A x) then B: 64 hidden units); evaluation samples come
 *   from a stream of their own.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/atomic_file.h"
#include "cli/cli.h"
#include "core/base/crc32.h"
#include "formats/philox.h"
#include "train/train.h"

enum { SPLIT_TRAIN = 1, SPLIT_EVAL = 2, TEACHER_HIDDEN = 64 };

struct train_data {
  task_kind task;
  uint64_t seed;
  int64_t batch, T;
  int accum;
  int vocab;
  /* sort */
  int n, digits;
  /* text */
  uint8_t *text;
  int64_t text_len, train_len; /* the head [0, train_len) trains, the tail evaluates */
  /* classify */
  int n_in, classes;
  float *teacher_a, *teacher_b; /* [64, n_in], [classes, 64] */
  int64_t eval_rows;
  char describe[512];
};

/* ------------------------------------------------------------- streams -- */

static uint64_t mix64(uint64_t x) { /* splitmix64's finaliser */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* One Philox stream per (split, step, micro-batch, row). */
static uint64_t row_stream(int split, int64_t step, int micro, int64_t row) {
  return mix64((uint64_t)split ^ mix64((uint64_t)step ^ mix64((uint64_t)micro ^ mix64((uint64_t)row))));
}

static uint32_t below(uint64_t seed, uint64_t stream, uint64_t index, uint32_t n) {
  return (uint32_t)(((uint64_t)hl_philox_u32(seed, stream, index) * n) >> 32); /* Lemire's multiply-shift */
}

/* Normal(0, 1) from two uniforms (Box-Muller). */
static float normal_at(uint64_t seed, uint64_t stream, uint64_t index) {
  const double u1 = ((double)hl_philox_u32(seed, stream, 2 * index) + 1.0) / 4294967296.0; /* (0, 1] */
  const double u2 = (double)hl_philox_u32(seed, stream, 2 * index + 1) / 4294967296.0;
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* ----------------------------------------------------------------- sort -- */

int sort_sep_token(int digits) { return digits; }

bool sort_problem_held_out(const int32_t *x, int n) {
  uint32_t h = 2166136261u; /* FNV-1a over the numbers */
  for (int i = 0; i < n; i++) {
    h ^= (uint32_t)x[i];
    h *= 16777619u;
  }
  return h % 8u == 0;
}

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

void sort_sequence(uint64_t seed, uint64_t stream, int n, int digits, bool held_out, int64_t T, int32_t *idx,
                   int32_t *tgt, uint8_t *scored) {
  const int len = 2 * n + 1; /* x1..xn SEP y1..yn */
  const int sep = sort_sep_token(digits);
  int32_t x[256], y[256];
  /* the stream s of T + 1 tokens: idx = s[0, T), tgt = s[1, T] */
  for (int64_t start = 0, problem = 0; start < T + 1; start += len, problem++) {
    for (uint64_t attempt = 0;; attempt++) {
      for (int k = 0; k < n; k++)
        x[k] = (int32_t)below(seed, stream, ((uint64_t)problem << 40) | (attempt << 8) | (uint64_t)k, (uint32_t)digits);
      if (sort_problem_held_out(x, n) == held_out) break;
    }
    memcpy(y, x, sizeof(int32_t) * (size_t)n);
    qsort(y, (size_t)n, sizeof *y, cmp_i32);
    for (int j = 0; j < len; j++) {
      const int64_t p = start + j; /* position in s */
      if (p > T) break;
      const int32_t tok = j < n ? x[j] : j == n ? sep : y[j - n - 1];
      if (p < T) idx[p] = tok;
      if (p >= 1) { /* the target of position p - 1 */
        tgt[p - 1] = tok;
        scored[p - 1] = j > n; /* the sorted numbers */
      }
    }
  }
}

/* ----------------------------------------------------------------- text -- */

static bool read_text(train_data *d, const char *path, char *err, size_t len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, len, "--text: cannot read '%s': %s", path, strerror(errno));
    return false;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, len, "--text: '%s' is not a regular file", path);
    fclose(f);
    return false;
  }
  if (st.st_size == 0) {
    snprintf(err, len, "--text: '%s' is empty", path);
    fclose(f);
    return false;
  }
  d->text = malloc((size_t)st.st_size);
  if (!d->text) {
    snprintf(err, len, "--text: '%s' (%lld bytes) does not fit in host memory", path, (long long)st.st_size);
    fclose(f);
    return false;
  }
  errno = 0;
  d->text_len = (int64_t)fread(d->text, 1, (size_t)st.st_size, f);
  if (ferror(f)) /* the file is fine, the system failed to read it: a runtime failure */
    hl_fatal("--text: reading '%s' failed after %lld of %lld bytes: %s", path, (long long)d->text_len,
             (long long)st.st_size, strerror(errno ? errno : EIO));
  const bool bad = d->text_len != (int64_t)st.st_size;
  fclose(f);
  if (bad) { /* shorter than it was a moment ago */
    snprintf(err, len, "--text: reading '%s' failed after %lld of %lld bytes", path, (long long)d->text_len,
             (long long)st.st_size);
    return false;
  }
  return true;
}

static void text_window(const train_data *d, int64_t at, int32_t *idx, int32_t *tgt, uint8_t *scored) {
  for (int64_t t = 0; t < d->T; t++) {
    idx[t] = d->text[at + t];
    tgt[t] = d->text[at + t + 1];
    scored[t] = 1;
  }
}

/* ------------------------------------------------------------- classify -- */

static void teacher_label(const train_data *d, const float *x, int32_t *y) {
  float h[TEACHER_HIDDEN];
  for (int j = 0; j < TEACHER_HIDDEN; j++) {
    double s = 0;
    for (int i = 0; i < d->n_in; i++) s += (double)d->teacher_a[j * d->n_in + i] * x[i];
    h[j] = (float)tanh(s);
  }
  int best = 0;
  double best_v = -INFINITY;
  for (int c = 0; c < d->classes; c++) {
    double s = 0;
    for (int j = 0; j < TEACHER_HIDDEN; j++) s += (double)d->teacher_b[c * TEACHER_HIDDEN + j] * h[j];
    if (s > best_v) best_v = s, best = c;
  }
  *y = best;
}

static void sample_row(const train_data *d, uint64_t stream, float *x, int32_t *y) {
  for (int i = 0; i < d->n_in; i++) x[i] = normal_at(d->seed, stream, (uint64_t)i);
  teacher_label(d, x, y);
}

/* ------------------------------------------------------------------ api -- */

train_data *data_new(const train_opts *o, char *err, size_t len) {
  train_data *d = calloc(1, sizeof *d);
  if (!d) {
    snprintf(err, len, "out of host memory");
    return NULL;
  }
  d->task = o->task;
  d->seed = o->seed;
  d->batch = o->batch;
  d->T = o->seq;
  d->accum = o->accum;
  d->eval_rows = o->eval_samples;
  switch (o->task) {
    case TASK_SORT:
      d->n = o->sort_len;
      d->digits = o->sort_digits;
      d->vocab = o->sort_digits + 1;
      snprintf(d->describe, sizeof d->describe,
               "sort: %d numbers of %d digits per problem, %d tokens per problem packed into sequences of %lld; "
               "held out: problems whose FNV-1a hash is 0 mod 8 (never trained on); %lld evaluation sequences",
               d->n, d->digits, 2 * d->n + 1, (long long)d->T, (long long)d->eval_rows);
      break;
    case TASK_TEXT: {
      char source[300];
      if (o->text_path) {
        if (!read_text(d, o->text_path, err, len)) {
          data_free(d);
          return NULL;
        }
        snprintf(source, sizeof source, "%s", o->text_path);
      } else {
        d->text_len = TEXT_GENERATED_BYTES;
        d->text = malloc((size_t)d->text_len);
        if (!d->text) {
          snprintf(err, len, "out of host memory for the generated text (%lld bytes)", (long long)d->text_len);
          data_free(d);
          return NULL;
        }
        text_generate(d->seed, d->text, d->text_len);
        snprintf(source, sizeof source, "generated English-like sentences (train/text_gen.c, seed %llu)",
                 (unsigned long long)d->seed);
      }
      d->vocab = 256;
      const int64_t need = 2 * (d->T + 1);
      if (d->text_len < need) {
        if (o->text_path)
          snprintf(err, len,
                   "--text: '%s' has %lld bytes; sequences of %lld tokens need at least %lld (train and held-out)",
                   source, (long long)d->text_len, (long long)d->T, (long long)need);
        else
          snprintf(err, len,
                   "--seq %lld: the generated text has %lld bytes, sequences of that length need at least %lld "
                   "(train and held-out); give a longer --text FILE",
                   (long long)d->T, (long long)d->text_len, (long long)need);
        data_free(d);
        return NULL;
      }
      int64_t eval_len = (int64_t)floor((double)d->text_len * o->eval_frac);
      if (eval_len < d->T + 1) eval_len = d->T + 1;
      if (d->text_len - eval_len < d->T + 1) eval_len = d->text_len - (d->T + 1);
      d->train_len = d->text_len - eval_len;
      const int64_t windows = eval_len / (d->T + 1);
      if (d->eval_rows > windows) d->eval_rows = windows;
      snprintf(d->describe, sizeof d->describe,
               "text: %s, %lld bytes; the first %lld train (random windows), the last %lld are held out (%lld "
               "consecutive windows of %lld tokens evaluated)",
               source, (long long)d->text_len, (long long)d->train_len, (long long)eval_len,
               (long long)d->eval_rows, (long long)d->T);
      break;
    }
    case TASK_CLASSIFY: {
      d->n_in = o->mlp.n_in;
      d->classes = o->classes;
      d->teacher_a = malloc(sizeof(float) * TEACHER_HIDDEN * (size_t)d->n_in);
      d->teacher_b = malloc(sizeof(float) * TEACHER_HIDDEN * (size_t)d->classes);
      if (!d->teacher_a || !d->teacher_b) {
        snprintf(err, len, "out of host memory");
        data_free(d);
        return NULL;
      }
      const uint64_t teacher = mix64(o->seed ^ 0x7eac4e2ull);
      for (int i = 0; i < TEACHER_HIDDEN * d->n_in; i++)
        d->teacher_a[i] = normal_at(teacher, 1, (uint64_t)i) * (float)(2.0 / sqrt((double)d->n_in));
      for (int i = 0; i < TEACHER_HIDDEN * d->classes; i++)
        d->teacher_b[i] = normal_at(teacher, 2, (uint64_t)i) * (float)(1.0 / sqrt((double)TEACHER_HIDDEN));
      snprintf(d->describe, sizeof d->describe,
               "classify: x ~ N(0,1)^%d, label = argmax of a fixed random teacher (tanh, %d hidden units) over %d "
               "classes; %lld held-out samples from a stream of their own",
               d->n_in, TEACHER_HIDDEN, d->classes, (long long)d->eval_rows);
      break;
    }
  }
  return d;
}

void data_free(train_data *d) {
  if (!d) return;
  free(d->text);
  free(d->teacher_a);
  free(d->teacher_b);
  free(d);
}

int data_vocab(const train_data *d) { return d->vocab; }
int64_t data_eval_rows(const train_data *d) { return d->eval_rows; }
const char *data_describe(const train_data *d) { return d->describe; }

token_batch token_batch_new(int64_t rows, int64_t T) {
  token_batch b = {rows, T, malloc(sizeof(int32_t) * (size_t)(rows * T)), malloc(sizeof(int32_t) * (size_t)(rows * T)),
                   malloc((size_t)(rows * T))};
  if (!b.idx || !b.tgt || !b.scored) {
    hl_fatal("out of host memory for a batch of %lld x %lld tokens", (long long)rows, (long long)T);
  }
  return b;
}

void token_batch_free(token_batch *b) {
  free(b->idx);
  free(b->tgt);
  free(b->scored);
  memset(b, 0, sizeof *b);
}

sample_batch sample_batch_new(int64_t rows, int64_t n_in) {
  sample_batch b = {rows, n_in, malloc(sizeof(float) * (size_t)(rows * n_in)), malloc(sizeof(int32_t) * (size_t)rows)};
  if (!b.x || !b.y) {
    hl_fatal("out of host memory for a batch of %lld samples", (long long)rows);
  }
  return b;
}

void sample_batch_free(sample_batch *b) {
  free(b->x);
  free(b->y);
  memset(b, 0, sizeof *b);
}

void data_train_tokens(const train_data *d, int64_t step, int micro, token_batch *b) {
  for (int64_t r = 0; r < b->rows; r++) {
    const uint64_t stream = row_stream(SPLIT_TRAIN, step, micro, r);
    int32_t *idx = b->idx + r * b->T, *tgt = b->tgt + r * b->T;
    uint8_t *sc = b->scored + r * b->T;
    if (d->task == TASK_SORT) sort_sequence(d->seed, stream, d->n, d->digits, false, b->T, idx, tgt, sc);
    else {
      const uint64_t wide = (uint64_t)hl_philox_u32(d->seed, stream, 0) << 32 | hl_philox_u32(d->seed, stream, 1);
      text_window(d, (int64_t)(wide % (uint64_t)(d->train_len - d->T)), idx, tgt, sc);
    }
  }
}

void data_eval_tokens(const train_data *d, int64_t first, token_batch *b) {
  for (int64_t r = 0; r < b->rows; r++) {
    int32_t *idx = b->idx + r * b->T, *tgt = b->tgt + r * b->T;
    uint8_t *sc = b->scored + r * b->T;
    const int64_t row = first + r;
    if (d->task == TASK_SORT)
      sort_sequence(d->seed, row_stream(SPLIT_EVAL, 0, 0, row), d->n, d->digits, true, b->T, idx, tgt, sc);
    else text_window(d, d->train_len + row * (d->T + 1), idx, tgt, sc);
  }
}

void data_train_samples(const train_data *d, int64_t step, int micro, sample_batch *b) {
  for (int64_t r = 0; r < b->rows; r++)
    sample_row(d, row_stream(SPLIT_TRAIN, step, micro, r), b->x + r * b->n_in, b->y + r);
}

void data_eval_samples(const train_data *d, int64_t first, sample_batch *b) {
  for (int64_t r = 0; r < b->rows; r++)
    sample_row(d, row_stream(SPLIT_EVAL, 0, 0, first + r), b->x + r * b->n_in, b->y + r);
}

/* ---------------------------------------------------------- batch file -- */

/* Layout (little-endian; docs/train.md):
 *   "HLBAT001"
 *   u32 rows (sequences per micro-batch), u32 T, u32 vocab (tokens the task
 *   uses), u32 model_vocab, u32 micro_batches (steps x accum, in step order),
 *   u32 accum, u32 eval_rows
 *   per micro-batch: i32 inputs [rows x T], i32 targets [rows x T], u8 scored [rows x T]
 *   the held-out set: i32 inputs [eval_rows x T], i32 targets, u8 scored
 *   u32 CRC-32 (zlib's) of everything before it */
uint64_t data_export_bytes(const train_data *d, const train_opts *o) {
  const double micro = (double)o->export_steps * (double)o->accum;
  const double bytes = 8.0 + 7 * 4 + micro * (double)d->batch * (double)d->T * 9 + (double)d->eval_rows * (double)d->T * 9 + 4;
  return bytes < 1.8e19 ? (uint64_t)bytes : UINT64_MAX;
}

bool data_export_fits(const train_data *d, const train_opts *o, const char *path, char *err, size_t len) {
  const uint64_t bytes = data_export_bytes(d, o);
  char need[32], have[32], folder[4096];
  hl_format_bytes(bytes, need, sizeof need);
  if (bytes > DATA_EXPORT_MAX_BYTES) {
    hl_format_bytes(DATA_EXPORT_MAX_BYTES, have, sizeof have);
    snprintf(err, len, "--export-batches: %s would take %s, more than the %s this file format is for (lower --export-steps)",
             path, need, have);
    return false;
  }
  snprintf(folder, sizeof folder, "%s", path);
  char *slash = strrchr(folder, '/');
  if (!slash) snprintf(folder, sizeof folder, ".");
  else if (slash == folder) folder[1] = '\0';
  else *slash = '\0';
  struct statvfs fs;
  if (statvfs(folder, &fs) != 0) return true; /* the probe of the path says what is wrong with it */
  const uint64_t free_bytes = (uint64_t)fs.f_bavail * (uint64_t)fs.f_frsize;
  if (bytes > free_bytes) {
    hl_format_bytes(free_bytes, have, sizeof have);
    snprintf(err, len, "--export-batches: %s would take %s, and its file system has %s free", path, need, have);
    return false;
  }
  return true;
}

bool data_export_batches(const train_data *d, const train_opts *o, const char *path, char *err, size_t len) {
  hl_atomic_file a;
  if (!hl_atomic_open(&a, path)) {
    snprintf(err, len, "--export-batches: cannot write '%s': %s", a.tmp, strerror(errno));
    return false;
  }
  hl_crc_writer w = hl_crc_writer_on(a.f);
  hl_crc_put(&w, "HLBAT001", 8);
  const int64_t micro = o->export_steps * o->accum;
  hl_crc_put_u32(&w, (uint32_t)d->batch);
  hl_crc_put_u32(&w, (uint32_t)d->T);
  hl_crc_put_u32(&w, (uint32_t)d->vocab);
  hl_crc_put_u32(&w, (uint32_t)o->gpt.vocab_size);
  hl_crc_put_u32(&w, (uint32_t)micro);
  hl_crc_put_u32(&w, (uint32_t)o->accum);
  hl_crc_put_u32(&w, (uint32_t)d->eval_rows);
  token_batch b = token_batch_new(d->batch, d->T);
  const size_t n = (size_t)(d->batch * d->T);
  for (int64_t step = 1; step <= o->export_steps && w.ok; step++) /* the first failed write ends it */
    for (int m = 0; m < o->accum && w.ok; m++) {
      data_train_tokens(d, step, m, &b);
      hl_crc_put(&w, b.idx, n * 4);
      hl_crc_put(&w, b.tgt, n * 4);
      hl_crc_put(&w, b.scored, n);
    }
  token_batch_free(&b);
  token_batch e = token_batch_new(1, d->T);
  for (int part = 0; part < 3 && w.ok; part++)
    for (int64_t r = 0; r < d->eval_rows && w.ok; r++) {
      data_eval_tokens(d, r, &e);
      if (part == 0) hl_crc_put(&w, e.idx, (size_t)d->T * 4);
      else if (part == 1) hl_crc_put(&w, e.tgt, (size_t)d->T * 4);
      else hl_crc_put(&w, e.scored, (size_t)d->T);
    }
  token_batch_free(&e);
  hl_crc_put_trailer(&w);
  if (!hl_atomic_commit(&a)) {
    char why[9000];
    snprintf(err, len, "--export-batches: %s", hl_atomic_describe(&a, errno, why, sizeof why));
    return false;
  }
  return true;
}
