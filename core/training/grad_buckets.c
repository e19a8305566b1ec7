/* grad_buckets.c — bucketed gradient all-reduce overlapping the backward
 * (grad_buckets.h). */
#include "core/training/grad_buckets.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/error.h"
#include "core/engine/autograd.h"
#include "core/engine/op_profile.h"
#include "core/training/dist.h"

struct hl_grad_buckets {
  hl_tensor *const *params;
  int n;
  int64_t *numel;        /* per parameter */
  int64_t bucket_values; /* a bucket's capacity in f32 values */
  hl_dtype wire;
  float *buf;

  /* the layout: parameters in bucket order, each at offset[p] of buf */
  int64_t *offset;
  int *bucket_of;
  int nb;
  int64_t *bucket_start, *bucket_count;
  int *bucket_params; /* how many parameters each bucket holds */

  /* this step */
  bool armed;
  bool *filled;  /* per parameter: copied into its bucket */
  int *pending;  /* per bucket: parameters not yet copied */
  bool failed;   /* a gradient could not be read (hl_error() has why) */
  int *seen;     /* parameters in the order they became final (the first step's, for the rebuild) */
  int n_seen;
  bool rebuilt;

  /* the communication thread: all-reduces buckets [done, launched) in order */
  bool threaded;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int launched, done;
  bool quit;
  double busy_s;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void reduce_bucket(hl_grad_buckets *b, int k) {
  hl_dist_allreduce_mean(b->buf + b->bucket_start[k], b->bucket_count[k], b->wire);
}

static void *communicate(void *arg) {
  hl_grad_buckets *b = arg;
  hl_op_profile_thread_beside();
  /* SIGINT / SIGTERM are the training loop's: delivered to this thread, the
   * handler would interrupt the collective it waits in */
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, NULL);
  pthread_mutex_lock(&b->mu);
  for (;;) {
    while (b->done == b->launched && !b->quit) pthread_cond_wait(&b->cv, &b->mu);
    if (b->done == b->launched) break; /* quit, nothing left */
    const int k = b->done;
    pthread_mutex_unlock(&b->mu);
    const double t0 = now_s();
    reduce_bucket(b, k); /* a failed collective ends the job (dist.h) */
    const double t = now_s() - t0;
    pthread_mutex_lock(&b->mu);
    b->busy_s += t;
    b->done++;
    pthread_cond_broadcast(&b->cv);
  }
  pthread_mutex_unlock(&b->mu);
  return NULL;
}

/* Buckets in `order`: a new one whenever the next parameter would overflow
 * the current one (a parameter larger than the capacity gets its own). */
static void lay_out(hl_grad_buckets *b, const int *order) {
  int64_t at = 0, in_bucket = 0;
  b->nb = 0;
  for (int i = 0; i < b->n; i++) {
    const int p = order[i];
    if (in_bucket > 0 && in_bucket + b->numel[p] > b->bucket_values) {
      b->nb++;
      in_bucket = 0;
    }
    if (in_bucket == 0) {
      b->bucket_start[b->nb] = at;
      b->bucket_count[b->nb] = 0;
      b->bucket_params[b->nb] = 0;
    }
    b->offset[p] = at;
    b->bucket_of[p] = b->nb;
    b->bucket_count[b->nb] += b->numel[p];
    b->bucket_params[b->nb]++;
    in_bucket += b->numel[p];
    at += b->numel[p];
  }
  if (b->n > 0) b->nb++;
}

hl_grad_buckets *hl_grad_buckets_new(hl_tensor *const *params, int n, int64_t bucket_bytes, hl_dtype wire, float *tmp,
                                     int64_t tmp_numel) {
  hl_grad_buckets *b = calloc(1, sizeof *b);
  const size_t np = (size_t)(n > 0 ? n : 1);
  if (!b) return hl_fail("gradient buckets: out of host memory");
  b->params = params;
  b->n = n;
  b->wire = wire;
  b->buf = tmp;
  /* 0: one bucket; else at least one value a bucket */
  const int64_t values = bucket_bytes / (int64_t)sizeof(float);
  b->bucket_values = bucket_bytes <= 0 ? INT64_MAX : values > 0 ? values : 1;
  b->numel = malloc(sizeof *b->numel * np);
  b->offset = malloc(sizeof *b->offset * np);
  b->bucket_of = malloc(sizeof *b->bucket_of * np);
  b->bucket_start = malloc(sizeof *b->bucket_start * np);
  b->bucket_count = malloc(sizeof *b->bucket_count * np);
  b->bucket_params = malloc(sizeof *b->bucket_params * np);
  b->filled = malloc(sizeof *b->filled * np);
  b->pending = malloc(sizeof *b->pending * np);
  b->seen = malloc(sizeof *b->seen * np);
  int *order = malloc(sizeof *order * np);
  if (!b->numel || !b->offset || !b->bucket_of || !b->bucket_start || !b->bucket_count || !b->bucket_params ||
      !b->filled || !b->pending || !b->seen || !order) {
    free(order);
    hl_grad_buckets_free(b);
    return hl_fail("gradient buckets: out of host memory");
  }
  int64_t total = 0;
  for (int p = 0; p < n; p++) total += b->numel[p] = hl_numel(params[p]);
  if (total > tmp_numel) {
    free(order);
    hl_grad_buckets_free(b);
    return hl_fail("gradient buckets: the parameters hold %lld values, the buffer %lld", (long long)total,
                   (long long)tmp_numel);
  }
  for (int i = 0; i < n; i++) order[i] = n - 1 - i; /* the backward reaches the last layers first */
  lay_out(b, order);
  free(order);
  b->threaded = bucket_bytes > 0 && hl_dist_size() > 1 && hl_dist_threads_serialized();
  if (b->threaded) {
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    const int rc = pthread_create(&b->thread, NULL, communicate, b);
    if (rc) {
      pthread_mutex_destroy(&b->mu);
      pthread_cond_destroy(&b->cv);
      b->threaded = false;
      hl_grad_buckets_free(b);
      return hl_fail("gradient buckets: starting the communication thread: %s", strerror(rc));
    }
  }
  return b;
}

void hl_grad_buckets_free(hl_grad_buckets *b) {
  if (!b) return;
  if (b->threaded) {
    pthread_mutex_lock(&b->mu);
    b->quit = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
  }
  free(b->numel);
  free(b->offset);
  free(b->bucket_of);
  free(b->bucket_start);
  free(b->bucket_count);
  free(b->bucket_params);
  free(b->filled);
  free(b->pending);
  free(b->seen);
  free(b);
}

bool hl_grad_buckets_overlaps(const hl_grad_buckets *b) { return b->threaded; }
int hl_grad_buckets_count(const hl_grad_buckets *b) { return b->nb; }
int hl_grad_buckets_bucket_of(const hl_grad_buckets *b, int i) { return i >= 0 && i < b->n ? b->bucket_of[i] : -1; }

void hl_grad_buckets_arm(hl_grad_buckets *b) {
  for (int p = 0; p < b->n; p++) b->filled[p] = false;
  for (int k = 0; k < b->nb; k++) b->pending[k] = b->bucket_params[k];
  b->n_seen = 0;
  b->failed = false;
  b->busy_s = 0;
  b->launched = b->done = 0;
  b->armed = true;
}

/* Hands the communication thread every bucket that is full, in order: a
 * later bucket that fills first waits for the earlier ones, so that every
 * rank issues the same collectives in the same order. */
static void launch_full(hl_grad_buckets *b) {
  pthread_mutex_lock(&b->mu);
  const int before = b->launched;
  while (b->launched < b->nb && b->pending[b->launched] == 0) b->launched++;
  if (b->launched != before) pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

/* The gradient of parameter p (zeros without one) into its bucket. */
static void fill(hl_grad_buckets *b, int p) {
  const hl_tensor *g = hl_tensor_grad(b->params[p]);
  float *dst = b->buf + b->offset[p];
  if (!g) memset(dst, 0, sizeof *dst * (size_t)b->numel[p]);
  else if (!b->failed && !hl_read_f32(g, dst)) b->failed = true;
  b->filled[p] = true;
  b->pending[b->bucket_of[p]]--;
}

void hl_grad_buckets_ready(hl_tensor *leaf, void *buckets) {
  hl_grad_buckets *b = buckets;
  if (!b->armed) return;
  int p = 0;
  while (p < b->n && b->params[p] != leaf) p++;
  if (p == b->n || b->filled[p]) return;
  fill(b, p);
  b->seen[b->n_seen++] = p;
  if (b->threaded && b->pending[b->bucket_of[p]] == 0) launch_full(b);
}

/* Once, after the first step: buckets in the order the gradients became
 * final (then the parameters that never did, in reverse), so that each
 * bucket fills in one stretch of the backward. */
static void rebuild(hl_grad_buckets *b) {
  b->rebuilt = true;
  int *order = malloc(sizeof *order * (size_t)(b->n > 0 ? b->n : 1));
  if (!order) return; /* the first layout stays: slower, not wrong */
  int m = 0;
  for (int i = 0; i < b->n_seen; i++) order[m++] = b->seen[i];
  for (int p = b->n - 1; p >= 0; p--) {
    bool seen = false;
    for (int i = 0; i < b->n_seen && !seen; i++) seen = b->seen[i] == p;
    if (!seen) order[m++] = p;
  }
  lay_out(b, order);
  free(order);
}

bool hl_grad_buckets_finish(hl_grad_buckets *b, hl_grad_buckets_stats *stats) {
  if (!b->armed) return hl_fail_bool("gradient buckets: finish without arm");
  b->armed = false;
  const double t0 = now_s();
  for (int p = b->n - 1; p >= 0; p--)
    if (!b->filled[p]) fill(b, p);
  if (b->threaded) {
    hl_op_span span; /* the wait: what the backward did not hide */
    const bool timed = hl_op_span_begin(&span);
    launch_full(b);
    pthread_mutex_lock(&b->mu);
    while (b->done < b->nb) pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    if (timed) hl_op_span_end(&span, "dist.allreduce_wait", 0);
  } else {
    for (int k = 0; k < b->nb; k++) {
      const double started = now_s();
      reduce_bucket(b, k);
      b->busy_s += now_s() - started;
    }
  }
  if (b->failed) return false;
  bool ok = true;
  HL_NO_GRAD {
    for (int p = 0; p < b->n && ok; p++) {
      hl_tensor *g = hl_tensor_grad(b->params[p]);
      if (!g) continue;
      hl_tensor *mean = hl_from_f32(hl_tensor_shape(g), b->buf + b->offset[p], g->dtype, g->device);
      ok = mean && hl_copy_(g, mean);
      hl_release(mean);
    }
  }
  if (stats) {
    int64_t values = 0;
    for (int k = 0; k < b->nb; k++) values += b->bucket_count[k];
    stats->buckets = b->nb;
    stats->bytes = (uint64_t)values * hl_dtype_size(b->wire);
    stats->busy_s = b->busy_s;
    stats->exposed_s = now_s() - t0;
  }
  if (ok && !b->rebuilt && b->threaded) rebuild(b);
  return ok;
}
