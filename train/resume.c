/* resume.c — what halflab-train's checkpoint records of the run beside the
 * training state (core/training/checkpoint.h), so that --resume continues
 * the run the checkpoint was taken of and nothing else:
 *
 *   train/definition  the options that decide what the run computes, as
 *                     "option value" lines (docs/train.md, "Checkpoints and
 *                     resume"): a resumed run takes them where the command
 *                     line does not give them, and refuses one it gives
 *                     otherwise, but for the overrides (--steps,
 *                     --stats-every, --hist-steps);
 *   train/totals      the summary's running totals (skipped steps, the
 *                     statistics' sums and counts, the last evaluation, the
 *                     step times the median takes, ...), exact;
 *   train/hist-rows   the histogram rows written so far (output.c);
 *   train/run_id      the run's identity (run_id_compute), which its per-step
 *                     log carries too: a resume continues only that log.
 *
 * Where the run's files are, and how often it saves, is not part of the
 * run: --out, --device, --checkpoint, --checkpoint-every, --stop-after and
 * the per-invocation flags are taken from the command line as given. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/base/crc32.h"
#include "core/base/error.h"
#include "core/training/checkpoint.h"
#include "train/train.h"

/* ---------------------------------------------------------- the text -- */

typedef struct {
  char *s;
  size_t len, cap;
  bool failed;
} text_buf;

static void add(text_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text_buf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->failed = true;
      return;
    }
    if (b->s && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap : 1024;
    while (cap <= b->len + (size_t)n) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->failed = true;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
}

static char *finish(text_buf *b) {
  if (b->failed || !b->s) {
    free(b->s);
    return NULL;
  }
  return b->s;
}

/* The shortest %g that reads back as v: "0.003", not "0.0030000000000000001". */
static const char *exact_real(double v, char *buf, size_t len) {
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(buf, len, "%.*g", digits, v);
    if (strtod(buf, NULL) == v) break;
  }
  return buf;
}

/* ------------------------------------------------------- definition -- */

/* --text FILE's contents: its size and CRC-32, read once per process. */
static void text_contents(const char *path, char *out, size_t len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(out, len, "unreadable");
    return;
  }
  unsigned char chunk[65536];
  uint32_t crc = 0;
  uint64_t size = 0;
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    crc = hl_crc32_update(crc, chunk, n);
    size += n;
  }
  const bool failed = ferror(f);
  fclose(f);
  if (failed) snprintf(out, len, "unreadable");
  else snprintf(out, len, "%" PRIu64 " bytes, crc32 %08" PRIx32, size, crc);
}

char *run_definition_format(const train_opts *o) {
  text_buf b = {0};
  char r[40];
  const bool gpt = o->model == MODEL_GPT;
  add(&b, "model %s\n", gpt ? "gpt" : "mlp");
  add(&b, "preset %s\n", o->preset);
  if (gpt) {
    add(&b, "layers %d\nheads %d\nembd %d\nvocab %d\nseq %lld\n", o->gpt.n_layer, o->gpt.n_head, o->gpt.n_embd,
        o->gpt.vocab_size, (long long)o->seq);
  } else {
    add(&b, "inputs %d\nhidden ", o->mlp.n_in);
    for (int i = 0; i < o->mlp.n_hidden; i++) add(&b, "%s%d", i ? "," : "", o->mlp.hidden[i]);
    add(&b, "\nclasses %d\n", o->classes);
  }
  add(&b, "init-gain %s\n", exact_real(o->init_gain, r, sizeof r));
  add(&b, "task %s\n", train_task_name(o->task));
  if (o->text_path) {
    char contents[96];
    text_contents(o->text_path, contents, sizeof contents);
    add(&b, "text %s\ntext-contents %s\n", o->text_path, contents);
  }
  if (o->task == TASK_SORT) add(&b, "sort-len %d\ndigits %d\n", o->sort_len, o->sort_digits);
  add(&b, "batch %lld\neval-samples %lld\neval-every %d\n", (long long)o->batch, (long long)o->eval_samples,
      o->eval_every);
  if (o->task == TASK_TEXT) add(&b, "eval-frac %s\n", exact_real(o->eval_frac, r, sizeof r));
  add(&b, "mode %s\n", o->mode->name);
  add(&b, "optimizer %s\n", hl_optim_kind_name(o->optimizer));
  add(&b, "schedule %s\n", o->cosine ? "cosine" : "constant");
  add(&b, "lr %s\n", exact_real(o->lr, r, sizeof r));
  if (o->optimizer == HL_OPTIM_SGD) add(&b, "momentum %s\n", exact_real(o->momentum, r, sizeof r));
  add(&b, "weight-decay %s\n", exact_real(o->weight_decay, r, sizeof r));
  if (o->clip_norm > 0) add(&b, "clip-norm %s\n", exact_real(o->clip_norm, r, sizeof r));
  add(&b, "accum %d\n", o->accum);
  if (o->grad_penalty > 0) add(&b, "grad-penalty %s\n", exact_real(o->grad_penalty, r, sizeof r));
  if (o->mode->scaling != HL_LOSS_SCALE_NONE) add(&b, "init-scale %s\n", exact_real(o->init_scale, r, sizeof r));
  if (o->mode->scaling == HL_LOSS_SCALE_DYNAMIC) add(&b, "growth-interval %lld\n", (long long)o->growth_interval);
  char inject[1024];
  add(&b, "inject-nonfinite %s", hl_step_set_count(&o->inject) ? hl_step_set_format(&o->inject, inject, sizeof inject) : "none");
  if (o->inject_rank >= 0) add(&b, "@%d", o->inject_rank); /* a data-parallel run's one rank */
  add(&b, "\n");
  if (o->allreduce_dtype != HL_F32) add(&b, "allreduce-dtype %s\n", train_wire_name(o->allreduce_dtype));
  add(&b, "steps %lld\nwarmup %lld\nseed %llu\n", (long long)o->steps, (long long)o->warmup,
      (unsigned long long)o->seed);
  add(&b, "stats-every %d\n", o->stats_every);
  if (o->n_hist > 0) {
    add(&b, "hist-steps ");
    for (int i = 0; i < o->n_hist; i++) add(&b, "%s%lld", i ? "," : "", (long long)o->hist_steps[i]);
    add(&b, "\n");
  }
  add(&b, "name %s\n", o->name);
  return finish(&b);
}

bool run_definition_parse(const char *text, size_t len, run_definition *d) {
  memset(d, 0, sizeof *d);
  d->text = malloc(len + 1);
  if (!d->text) return false;
  memcpy(d->text, text, len);
  d->text[len] = '\0';
  if (memchr(d->text, '\0', len)) return false; /* not text */
  char *p = d->text;
  while (*p) {
    char *eol = strchr(p, '\n'), *space = strchr(p, ' ');
    if (!eol || !space || space > eol || space == p || d->n == RUN_DEFINITION_MAX) return false;
    *space = *eol = '\0';
    d->key[d->n] = p;
    d->value[d->n++] = space + 1;
    p = eol + 1;
  }
  return true;
}

const char *run_definition_get(const run_definition *d, const char *key) {
  for (int i = 0; i < d->n; i++)
    if (!strcmp(d->key[i], key)) return d->value[i];
  return NULL;
}

void run_definition_free(run_definition *d) {
  free(d->text);
  memset(d, 0, sizeof *d);
}

bool run_definition_key(const char *key) {
  static const char *const keys[] = {
      "model",        "preset", "layers",   "heads",     "embd",         "vocab",      "seq",         "inputs",
      "hidden",       "classes", "init-gain", "task",     "text",         "sort-len",   "digits",      "batch",
      "eval-samples", "eval-every", "eval-frac", "mode",  "optimizer",    "schedule",   "lr",          "momentum",
      "weight-decay", "clip-norm", "accum",   "grad-penalty", "init-scale", "growth-interval", "inject-nonfinite",
      "allreduce-dtype", "steps",        "warmup", "stats-every", "hist-steps", "name"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!strcmp(key, keys[i])) return true;
  return false;
}

bool run_definition_overridable(const char *key) {
  return !strcmp(key, "steps") || !strcmp(key, "stats-every") || !strcmp(key, "hist-steps");
}

/* ----------------------------------------------------------- identity -- */

static uint64_t fnv1a(uint64_t h, const char *s) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  return h;
}

void run_id_compute(const train_opts *o, char out[RUN_ID_LEN + 1]) {
  char *definition = run_definition_format(o);
  if (!definition) hl_fatal("out of host memory");
  uint64_t h = fnv1a(0xcbf29ce484222325ULL, definition);
  free(definition);
  if (o->init_weights) {
    char contents[96];
    text_contents(o->init_weights, contents, sizeof contents);
    h = fnv1a(fnv1a(h, "init-weights-contents "), contents);
  }
  snprintf(out, RUN_ID_LEN + 1, "%016" PRIx64, h);
}

/* ------------------------------------------------------------ resume -- */

hl_checkpoint *resume_open(const char *path, run_definition *saved, char run_id[RUN_ID_LEN + 1]) {
  hl_checkpoint *c = hl_checkpoint_open(path);
  if (!c && hl_error_is_system()) hl_fatal("--resume: %s", hl_error()); /* the system failed to read it: exit 1 */
  if (!c) hl_usage_error("--resume: %s", hl_error());
  size_t len = 0;
  const char *def = hl_checkpoint_get_field(c, RESUME_FIELD_DEFINITION, &len);
  if (!def) hl_usage_error("--resume %s: the checkpoint holds no halflab-train run (written by another program?)", path);
  if (!run_definition_parse(def, len, saved))
    hl_usage_error("--resume %s: the checkpoint's run definition cannot be read", path);
  if (hl_checkpoint_step(c) < 0) hl_usage_error("--resume %s: the checkpoint has no step counter", path);
  const char *id = hl_checkpoint_get_field(c, RESUME_FIELD_RUN_ID, &len);
  if (!id || len != RUN_ID_LEN || strspn(id, "0123456789abcdef") < RUN_ID_LEN)
    hl_usage_error("--resume %s: the checkpoint does not name its run (an earlier halflab-train wrote it), so its "
                   "per-step log cannot be told from another run's: resume it with that halflab-train, or start afresh",
                   path);
  memcpy(run_id, id, RUN_ID_LEN);
  run_id[RUN_ID_LEN] = '\0';
  return c;
}

void resume_check(train_opts *o, const run_definition *saved) {
  char *text = run_definition_format(o);
  run_definition now;
  if (!text || !run_definition_parse(text, strlen(text), &now)) hl_fatal("out of host memory");
  free(text);
  char overrides[sizeof o->resume_overrides] = "";
  size_t at = 0;
  /* in the checkpoint's order, then what only the command line has, so that
   * a command line with several differences is refused for the same one */
  for (int pass = 0; pass < 2; pass++) {
    const run_definition *a = pass ? &now : saved, *b = pass ? saved : &now;
    for (int i = 0; i < a->n; i++) {
      const char *key = a->key[i];
      const char *was = pass ? run_definition_get(saved, key) : a->value[i];
      const char *is = pass ? a->value[i] : run_definition_get(&now, key);
      if (pass && run_definition_get(b, key)) continue; /* compared in the first pass */
      if (was && is && !strcmp(was, is)) continue;
      if (is && !strcmp(key, "text-contents") && !strcmp(is, "unreadable")) continue; /* data.c says why */
      if (!run_definition_overridable(key))
        hl_usage_error("--resume %s: %s is %s in the checkpoint, %s on the command line", o->resume, key,
                       was ? was : "not set", is ? is : "not set");
      if (at < sizeof overrides)
        at += (size_t)snprintf(overrides + at, sizeof overrides - at, "%s--%s %s (checkpoint: %s)", at ? ", " : "",
                               key, is ? is : "not set", was ? was : "not set");
    }
  }
  run_definition_free(&now);
  snprintf(o->resume_overrides, sizeof o->resume_overrides, "%s", at ? overrides : "none");
  const int64_t step = o->resumed_step;
  if (step > o->steps)
    hl_usage_error("--resume %s: the checkpoint is at step %lld, past --steps %lld", o->resume, (long long)step,
                   (long long)o->steps);
  if (o->stop_after && step >= o->stop_after)
    hl_usage_error("--resume %s: the checkpoint is at step %lld, not before --stop-after %lld", o->resume,
                   (long long)step, (long long)o->stop_after);
}

/* ------------------------------------------------------------ totals -- */

char *run_totals_format(const run_totals *t) {
  text_buf b = {0};
  add(&b, "steps %lld\nskipped %lld\nconsecutive_skips %lld\n", (long long)t->steps, (long long)t->skipped,
      (long long)t->consecutive_skips);
  add(&b, "last_loss %a\neval_loss %a\neval_acc %a\neval_step %lld\n", t->final_loss, t->eval_loss, t->eval_acc,
      (long long)t->eval_step);
  add(&b, "stats_n %lld\nstats_sum", (long long)t->stats_n);
  for (int k = 0; k < RUN_STAT_COLUMNS; k++) add(&b, " %a", t->stats_sum[k]);
  add(&b, "\nstats_cnt");
  for (int k = 0; k < RUN_STAT_COLUMNS; k++) add(&b, " %lld", (long long)t->stats_cnt[k]);
  add(&b, "\nmem_peak %llu\nautocast %llu %llu %llu\nstep_ms", (unsigned long long)t->mem_peak_bytes,
      (unsigned long long)t->autocast_casts, (unsigned long long)t->autocast_cache_misses,
      (unsigned long long)t->autocast_cache_hits);
  for (int64_t i = 0; i < t->steps; i++) add(&b, " %a", t->step_time_ms[i]);
  add(&b, "\n");
  return finish(&b);
}

/* strtod / strtoll over "KEY v v v" lines, in the order written */
typedef struct {
  char *p;
  bool ok;
} reader;

static void expect_key(reader *r, const char *key) {
  const size_t n = strlen(key);
  if (!r->ok) return;
  while (*r->p == '\n') r->p++;
  if (strncmp(r->p, key, n) || (r->p[n] != ' ' && r->p[n] != '\n')) r->ok = false;
  else r->p += n;
}
static double next_real(reader *r) {
  if (!r->ok) return NAN;
  char *end;
  const double v = strtod(r->p, &end);
  if (end == r->p || (*end != ' ' && *end != '\n')) r->ok = false;
  r->p = end;
  return v;
}
static long long next_int(reader *r) {
  if (!r->ok) return 0;
  char *end;
  const long long v = strtoll(r->p, &end, 10);
  if (end == r->p || (*end != ' ' && *end != '\n') || v < 0) r->ok = false;
  r->p = end;
  return v;
}

bool run_totals_parse(const char *text, size_t len, int64_t capacity, run_totals *t) {
  memset(t, 0, sizeof *t);
  char *copy = malloc(len + 1);
  if (!copy) return false;
  memcpy(copy, text, len);
  copy[len] = '\0';
  reader r = {copy, !memchr(copy, '\0', len)};
  expect_key(&r, "steps"), t->steps = next_int(&r);
  expect_key(&r, "skipped"), t->skipped = next_int(&r);
  expect_key(&r, "consecutive_skips"), t->consecutive_skips = next_int(&r);
  expect_key(&r, "last_loss"), t->final_loss = next_real(&r);
  expect_key(&r, "eval_loss"), t->eval_loss = next_real(&r);
  expect_key(&r, "eval_acc"), t->eval_acc = next_real(&r);
  expect_key(&r, "eval_step"), t->eval_step = next_int(&r);
  expect_key(&r, "stats_n"), t->stats_n = next_int(&r);
  expect_key(&r, "stats_sum");
  for (int k = 0; k < RUN_STAT_COLUMNS; k++) t->stats_sum[k] = next_real(&r);
  expect_key(&r, "stats_cnt");
  for (int k = 0; k < RUN_STAT_COLUMNS; k++) t->stats_cnt[k] = next_int(&r);
  expect_key(&r, "mem_peak"), t->mem_peak_bytes = (uint64_t)next_int(&r);
  expect_key(&r, "autocast");
  t->autocast_casts = (uint64_t)next_int(&r);
  t->autocast_cache_misses = (uint64_t)next_int(&r);
  t->autocast_cache_hits = (uint64_t)next_int(&r);
  expect_key(&r, "step_ms");
  if (r.ok && t->steps > capacity) r.ok = false;
  if (r.ok) {
    t->step_time_ms = malloc(sizeof(double) * (size_t)(capacity > 0 ? capacity : 1));
    if (!t->step_time_ms) r.ok = false;
  }
  for (int64_t i = 0; r.ok && i < t->steps; i++) t->step_time_ms[i] = next_real(&r);
  if (r.ok && strcmp(r.p, "\n")) r.ok = false;
  free(copy);
  if (!r.ok) {
    free(t->step_time_ms);
    t->step_time_ms = NULL;
  }
  return r.ok;
}
